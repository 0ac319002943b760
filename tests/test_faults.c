/*
 * Failure semantics on the simulator (docs/reliability.md):
 *
 * - fault injection: rank k dies before its n-th transport call, for every
 *   k and every n of an allreduce on 7 and 13 ranks, under every registered
 *   allreduce algorithm: the dead rank's allreduce returns
 *   REDCOLL_ETRANSPORT, every other rank gets an error from it (or, if its
 *   part was already complete, the right result and an error from the next
 *   collective), none hangs, and a broken communicator fails fast with its
 *   first error;
 * - redcoll_comm_abort before, between and during collectives;
 * - mismatched collectives (count, dtype of the same size, op, root,
 *   collective) reported as REDCOLL_EMISMATCH with both ranks' tags, the
 *   peers aborted;
 * - per-collective deadlines on the virtual clock: a stalled rank, a rank
 *   that never comes, a collective slower than its deadline; the report and
 *   the log name the peer waited for.
 *
 * Memory and leaks are ASan's job (CI runs the suite under it).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "redcoll/mock.h"
#include "redcoll/transport.h"
#include "test.h"

#define MAXP 16

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int is_error(int rc) { return rc < 0; }

/* Default simulator settings with a seed and a report buffer. */
static redcoll_mock_config cfg_seeded(uint64_t seed, char *rep, size_t len) {
  redcoll_mock_config cfg;
  redcoll_mock_config_init(&cfg);
  cfg.seed = seed;
  cfg.report = rep;
  cfg.report_len = len;
  return cfg;
}

/* Captures stderr (the library's log) into a temporary file. */
typedef struct {
  FILE *f;
  int saved;
} capture;

static void capture_start(capture *cap) {
  fflush(stderr);
  cap->f = tmpfile();
  cap->saved = dup(2);
  if (cap->f != NULL && cap->saved >= 0) dup2(fileno(cap->f), 2);
}

static char *capture_end(capture *cap) {
  fflush(stderr);
  if (cap->saved >= 0) {
    dup2(cap->saved, 2);
    close(cap->saved);
  }
  if (cap->f == NULL) return NULL;
  long n = ftell(cap->f);
  char *s = calloc((size_t)(n > 0 ? n : 0) + 1, 1);
  rewind(cap->f);
  if (s != NULL && n > 0 && fread(s, 1, (size_t)n, cap->f) != (size_t)n) s[0] = '\0';
  fclose(cap->f);
  return s;
}

/* ---- the fault matrix --------------------------------------------------- */

typedef struct {
  redcoll_algo algo;
  size_t count;
  int second;           /* run a barrier after the allreduce */
  int rc1[MAXP], rc2[MAXP];
  int wrong[MAXP];      /* the allreduce returned OK with a wrong result */
} fault_ctx;

static int64_t value(int r, size_t i) { return (int64_t)r * 1000003 + (int64_t)i * 7 - 500; }

static int prog_allreduce(redcoll_comm *c, void *arg) {
  fault_ctx *x = arg;
  int r = redcoll_comm_rank(c), p = redcoll_comm_size(c);
  x->rc1[r] = x->rc2[r] = REDCOLL_OK;
  x->wrong[r] = 0;
  int rc = redcoll_comm_set_algorithm(c, REDCOLL_COLL_ALLREDUCE, x->algo);
  if (rc != REDCOLL_OK) return rc;
  int64_t *in = malloc(x->count * sizeof *in), *out = malloc(x->count * sizeof *out);
  if (in == NULL || out == NULL) {
    free(in);
    free(out);
    return REDCOLL_ENOMEM;
  }
  for (size_t i = 0; i < x->count; i++) in[i] = value(r, i);
  rc = x->rc1[r] = redcoll_allreduce(c, in, out, x->count, REDCOLL_INT64, REDCOLL_SUM);
  if (rc == REDCOLL_OK) {
    for (size_t i = 0; i < x->count; i++) {
      int64_t want = 0;
      for (int q = 0; q < p; q++) want += value(q, i);
      if (out[i] != want) x->wrong[r] = 1;
    }
  }
  free(in);
  free(out);
  if (x->second) {
    x->rc2[r] = redcoll_barrier(c);
    if (rc == REDCOLL_OK) rc = x->rc2[r];
  }
  return rc;
}

/* Calls of each rank in a healthy allreduce; 0 if the algorithm refuses
 * this p.  Also checks the healthy run. */
static int healthy_calls(int p, redcoll_algo algo, size_t count, uint64_t *calls) {
  fault_ctx x;
  memset(&x, 0, sizeof x);
  x.algo = algo;
  x.count = count;
  redcoll_mock_stats st[MAXP];
  int rc = redcoll_mock_run(p, NULL, prog_allreduce, &x, st);
  if (rc == REDCOLL_ENOTSUP) return 0;
  CHECK_MSG(rc == REDCOLL_OK, "%s p=%d healthy run: %s", redcoll_algo_name(algo), p,
            redcoll_status_name(rc));
  for (int r = 0; r < p; r++) {
    CHECK_MSG(!x.wrong[r], "%s p=%d healthy run: rank %d wrong", redcoll_algo_name(algo), p, r);
    calls[r] = st[r].calls;
  }
  return rc == REDCOLL_OK;
}

typedef struct {
  unsigned long runs, ok_first, ok_then_failed;
} fault_tally;

/* in_barrier: n is past the allreduce, rank k dies in the barrier. */
static void one_fault(int p, redcoll_algo algo, size_t count, int k, uint64_t n, int in_barrier,
                      fault_tally *t) {
  fault_ctx x;
  memset(&x, 0, sizeof x);
  x.algo = algo;
  x.count = count;
  x.second = 1;
  char rep[2048];
  redcoll_mock_config cfg = cfg_seeded(1 + (uint64_t)k * 131 + n, rep, sizeof rep);
  cfg.fail_rank = k;
  cfg.fail_after = n;
  cfg.eager_limit = (k + n) % 2 ? 96 : 0; /* half the runs with eager messages */
  redcoll_mock_stats st[MAXP];
  /* The error log of thousands of failing runs goes nowhere. */
  capture cap;
  capture_start(&cap);
  int rc = redcoll_mock_run(p, &cfg, prog_allreduce, &x, st);
  free(capture_end(&cap));
  const char *an = redcoll_algo_name(algo);
  t->runs++;
  CHECK_MSG(is_error(rc) && rc != REDCOLL_EDEADLOCK, "%s p=%d k=%d n=%llu: run %s\n%s", an, p, k,
            (unsigned long long)n, redcoll_status_name(rc), rep);
  CHECK_MSG(in_barrier ? x.rc1[k] == REDCOLL_OK && x.rc2[k] == REDCOLL_ETRANSPORT
                       : x.rc1[k] == REDCOLL_ETRANSPORT,
            "%s p=%d k=%d n=%llu: dead rank got %s, %s", an, p, k, (unsigned long long)n,
            redcoll_status_name(x.rc1[k]), redcoll_status_name(x.rc2[k]));
  for (int r = 0; r < p; r++) {
    int a = x.rc1[r], b = x.rc2[r];
    /* Only transport failures and aborts, never a deadlock or a mismatch. */
    CHECK_MSG(a == REDCOLL_OK || a == REDCOLL_ETRANSPORT || a == REDCOLL_EABORTED,
              "%s p=%d k=%d n=%llu: rank %d allreduce %s\n%s", an, p, k, (unsigned long long)n, r,
              redcoll_status_name(a), rep);
    CHECK_MSG(!x.wrong[r], "%s p=%d k=%d n=%llu: rank %d returned OK with a wrong result", an, p,
              k, (unsigned long long)n, r);
    if (a == REDCOLL_OK) {
      /* Its part was done before the failure mattered: the next
       * collective needs the dead rank and must fail. */
      CHECK_MSG(b == REDCOLL_ETRANSPORT || b == REDCOLL_EABORTED,
                "%s p=%d k=%d n=%llu: rank %d barrier %s\n%s", an, p, k, (unsigned long long)n, r,
                redcoll_status_name(b), rep);
      t->ok_first++;
      if (is_error(b)) t->ok_then_failed++;
    } else {
      /* Broken: fails fast with the first error. */
      CHECK_MSG(b == a, "%s p=%d k=%d n=%llu: rank %d barrier %s after %s", an, p, k,
                (unsigned long long)n, r, redcoll_status_name(b), redcoll_status_name(a));
    }
    CHECK(st[r].status == (is_error(a) ? a : b));
  }
  CHECK(strstr(rep, "injected transport failure") != NULL);
}

/* Every k, every n < calls[k] (every n of a healthy allreduce), and n ==
 * calls[k] (dies in the barrier after it).  The budget caps the number of
 * n per rank should an algorithm make very many calls (then n is sampled
 * evenly, first and last always included). */
static void fault_matrix(int p, size_t count, unsigned max_n_per_rank) {
  for (int a = 1; a < REDCOLL_ALGO_COUNT; a++) {
    redcoll_algo algo = (redcoll_algo)a;
    if (!redcoll_algo_is_supported(REDCOLL_COLL_ALLREDUCE, algo)) continue;
    uint64_t calls[MAXP];
    if (!healthy_calls(p, algo, count, calls)) {
      printf("  %-24s p=%2d: not available for this p, skipped\n", redcoll_algo_name(algo), p);
      continue;
    }
    fault_tally t = {0, 0, 0};
    double t0 = now_s();
    for (int k = 0; k < p; k++) {
      uint64_t total = calls[k] + 1, step = 1;
      if (total > max_n_per_rank) step = (total + max_n_per_rank - 1) / max_n_per_rank;
      for (uint64_t n = 0; n < total; n += step)
        one_fault(p, algo, count, k, n, n == calls[k], &t);
      if ((total - 1) % step != 0) one_fault(p, algo, count, k, total - 1, 1, &t);
    }
    printf("  %-24s p=%2d: %4lu runs, %3lu rank-runs with the allreduce done before the failure"
           " (all failed the next collective), %.2f s\n",
           redcoll_algo_name(algo), p, t.runs, t.ok_first, now_s() - t0);
    fflush(stdout);
  }
}

static void test_fault_matrix(void) {
  printf("fault injection, every k and n:\n");
  fflush(stdout);
  fault_matrix(7, 100, 64);
  fault_matrix(13, 100, 64);
}

/* ---- abort ---------------------------------------------------------------- */

typedef struct {
  int aborter;       /* rank that aborts */
  int when;          /* abort before collective number `when` (0, 1, 2) */
  int rc[MAXP][3];
  int arc[MAXP][3];  /* what redcoll_comm_abort returned (first, second call) */
  int err[MAXP];
} abort_ctx;

static int prog_abort(redcoll_comm *c, void *arg) {
  abort_ctx *x = arg;
  int r = redcoll_comm_rank(c);
  int64_t v[10];
  int last = REDCOLL_OK;
  for (int i = 0; i < 3; i++) {
    if (r == x->aborter && i == x->when) {
      x->arc[r][0] = redcoll_comm_abort(c);
      x->arc[r][1] = redcoll_comm_abort(c);
    }
    for (int j = 0; j < 10; j++) v[j] = r + j;
    x->rc[r][i] = redcoll_allreduce(c, REDCOLL_IN_PLACE, v, 10, REDCOLL_INT64, REDCOLL_SUM);
    if (x->rc[r][i] != REDCOLL_OK) last = x->rc[r][i];
  }
  x->err[r] = redcoll_comm_error(c);
  return last;
}

static void test_abort(void) {
  CHECK_INT(redcoll_comm_abort(NULL), REDCOLL_EINVAL);
  for (int when = 0; when < 3; when++) {
    for (uint64_t seed = 1; seed <= 12; seed++) {
      abort_ctx x;
      memset(&x, 0, sizeof x);
      x.aborter = (int)(seed % 5);
      x.when = when;
      char rep[512];
      redcoll_mock_config cfg = cfg_seeded(seed, rep, sizeof rep);
      redcoll_mock_stats st[5];
      CHECK_INT(redcoll_mock_run(5, &cfg, prog_abort, &x, st), REDCOLL_EABORTED);
      CHECK_INT(x.arc[x.aborter][0], REDCOLL_OK);
      CHECK_INT(x.arc[x.aborter][1], REDCOLL_OK);
      for (int r = 0; r < 5; r++) {
        /* Before the abort: the aborter's collectives succeeded; a peer
         * still waiting in one of them when the abort came gets
         * EABORTED there, and from then on. */
        for (int i = 0; i < when; i++) {
          if (r == x.aborter) CHECK_INT(x.rc[r][i], REDCOLL_OK);
          else CHECK(x.rc[r][i] == REDCOLL_OK || x.rc[r][i] == REDCOLL_EABORTED);
          if (i > 0 && x.rc[r][i - 1] != REDCOLL_OK) CHECK_INT(x.rc[r][i], REDCOLL_EABORTED);
        }
        /* Blocked in it (when entered first) or entering it later. */
        for (int i = when; i < 3; i++)
          CHECK_MSG(x.rc[r][i] == REDCOLL_EABORTED, "when=%d seed=%llu rank %d call %d: %s", when,
                    (unsigned long long)seed, r, i, redcoll_status_name(x.rc[r][i]));
        CHECK_INT(x.err[r], REDCOLL_EABORTED);
        CHECK_INT(st[r].status, REDCOLL_EABORTED);
      }
      char want[96];
      snprintf(want, sizeof want,
               "rank %d: aborted the communicator on channel 0 (REDCOLL_EABORTED)", x.aborter);
      CHECK_MSG(strstr(rep, want) != NULL, "report: %s", rep);
    }
  }
}

/* A transport without an abort member: the communicator still breaks. */
static int d_send(void *impl, int dst, uint64_t tag, const void *buf, size_t len) {
  (void)impl, (void)dst, (void)tag, (void)buf, (void)len;
  return REDCOLL_ETRANSPORT;
}
static int d_recv(void *impl, int src, uint64_t tag, void *buf, size_t len) {
  (void)impl, (void)src, (void)tag, (void)buf, (void)len;
  return REDCOLL_ETRANSPORT;
}
static int d_sendrecv(void *impl, int dst, uint64_t stag, const void *sbuf, size_t slen, int src,
                      uint64_t rtag, void *rbuf, size_t rlen) {
  (void)impl, (void)dst, (void)stag, (void)sbuf, (void)slen, (void)src, (void)rtag, (void)rbuf,
      (void)rlen;
  return REDCOLL_ETRANSPORT;
}
static void d_destroy(void *impl) { (void)impl; }

static void test_abort_without_op(void) {
  static const redcoll_transport_ops ops = {
      .version = 2, /* send, recv and sendrecv; no set_timeout */
      .send = d_send,
      .recv = d_recv,
      .sendrecv = d_sendrecv,
      .destroy = d_destroy,
  };
  redcoll_comm *c = NULL;
  CHECK_INT(redcoll_comm_create(&ops, NULL, 0, 2, &c), REDCOLL_OK);
  if (c == NULL) return;
  /* No deadline support in this transport. */
  CHECK_INT(redcoll_comm_set_deadline(c, 10), REDCOLL_ENOTSUP);
  CHECK_INT(redcoll_comm_get_deadline(c), 0);
  CHECK_INT(redcoll_comm_set_deadline(NULL, 10), REDCOLL_EINVAL);
  CHECK_INT(redcoll_comm_abort(c), REDCOLL_ENOTSUP);
  CHECK_INT(redcoll_comm_error(c), REDCOLL_EABORTED);
  int64_t v = 1;
  CHECK_INT(redcoll_allreduce(c, REDCOLL_IN_PLACE, &v, 1, REDCOLL_INT64, REDCOLL_SUM),
            REDCOLL_EABORTED);
  CHECK_INT(redcoll_barrier(c), REDCOLL_EABORTED);
  redcoll_comm_destroy(c);
  /* The first error sticks: a transport failure, then fail-fast. */
  CHECK_INT(redcoll_comm_create(&ops, NULL, 1, 2, &c), REDCOLL_OK);
  if (c == NULL) return;
  CHECK_INT(redcoll_allreduce(c, REDCOLL_IN_PLACE, &v, 1, REDCOLL_INT64, REDCOLL_SUM),
            REDCOLL_ETRANSPORT);
  CHECK_INT(redcoll_comm_abort(c), REDCOLL_OK); /* broken already: nothing more to do */
  CHECK_INT(redcoll_comm_error(c), REDCOLL_ETRANSPORT);
  CHECK_INT(redcoll_barrier(c), REDCOLL_ETRANSPORT);
  redcoll_comm_destroy(c);
}

/* ---- mismatch ------------------------------------------------------------- */

enum { MM_COUNT, MM_DTYPE, MM_OP, MM_ROOT, MM_COLL, MM_KINDS };
static const char *const mm_names[MM_KINDS] = {"count", "dtype", "op", "root", "collective"};

typedef struct {
  int kind, odd;     /* rank odd calls differently */
  redcoll_algo algo; /* for the allreduce */
  int rc[MAXP], rc2[MAXP];
} mm_ctx;

static int prog_mismatch(redcoll_comm *c, void *arg) {
  mm_ctx *x = arg;
  int r = redcoll_comm_rank(c);
  int odd = r == x->odd;
  int64_t in[12], out[12];
  for (int i = 0; i < 12; i++) in[i] = r + i;
  int rc;
  if (redcoll_comm_set_algorithm(c, REDCOLL_COLL_ALLREDUCE, x->algo) != REDCOLL_OK)
    return REDCOLL_ENOTSUP;
  switch (x->kind) {
  case MM_COUNT:
    rc = redcoll_allreduce(c, in, out, odd ? 10 : 12, REDCOLL_INT64, REDCOLL_SUM);
    break;
  case MM_DTYPE: /* same size: only the tag tells */
    rc = redcoll_allreduce(c, in, out, 12, odd ? REDCOLL_UINT64 : REDCOLL_INT64, REDCOLL_SUM);
    break;
  case MM_OP:
    rc = redcoll_allreduce(c, in, out, 12, REDCOLL_INT64, odd ? REDCOLL_MAX : REDCOLL_SUM);
    break;
  case MM_ROOT:
    rc = redcoll_reduce(c, in, out, 12, REDCOLL_INT64, REDCOLL_SUM, odd ? 1 : 0);
    break;
  default:
    rc = odd ? redcoll_reduce(c, in, out, 12, REDCOLL_INT64, REDCOLL_SUM, 0)
             : redcoll_allreduce(c, in, out, 12, REDCOLL_INT64, REDCOLL_SUM);
    break;
  }
  x->rc[r] = rc;
  x->rc2[r] = redcoll_barrier(c);
  return rc;
}

static void test_mismatch(void) {
  unsigned long runs = 0, detected = 0, deadlocks = 0, rendezvous_only = 0;
  for (int kind = 0; kind < MM_KINDS; kind++) {
    for (int a = 1; a < REDCOLL_ALGO_COUNT; a++) {
      redcoll_algo algo = (redcoll_algo)a;
      if (!redcoll_algo_is_supported(REDCOLL_COLL_ALLREDUCE, algo)) continue;
      /* The algorithm only matters for the allreduce kinds. */
      if ((kind == MM_ROOT || kind == MM_COLL) && algo != REDCOLL_ALGO_LINEAR) continue;
      for (int p = 6; p <= 7; p++) {
        for (int odd = 0; odd < p; odd += 3) {
          mm_ctx x;
          memset(&x, 0, sizeof x);
          x.kind = kind;
          x.odd = odd;
          x.algo = algo;
          char rep[4096];
          redcoll_mock_config cfg =
              cfg_seeded((uint64_t)(kind * 100 + a * 10 + odd + 1), rep, sizeof rep);
          redcoll_mock_stats st[MAXP];
          capture cap;
          capture_start(&cap);
          int rc = redcoll_mock_run(p, &cfg, prog_mismatch, &x, st);
          char *log = capture_end(&cap);
          if (rc == REDCOLL_ENOTSUP) {
            free(log);
            continue;
          }
          runs++;
          int mism = 0;
          for (int r = 0; r < p; r++) {
            /* A rank whose part only involved ranks that agree with it may
             * finish; its next collective fails. */
            int got = x.rc[r] == REDCOLL_OK ? x.rc2[r] : x.rc[r];
            CHECK_MSG(got == REDCOLL_EMISMATCH || got == REDCOLL_EABORTED,
                      "%s mismatch, %s p=%d odd=%d: rank %d got %s then %s\n%s", mm_names[kind],
                      redcoll_algo_name(algo), p, odd, r, redcoll_status_name(x.rc[r]),
                      redcoll_status_name(x.rc2[r]), rep);
            if (x.rc[r] != REDCOLL_OK) CHECK_INT(x.rc2[r], x.rc[r]);
            mism += got == REDCOLL_EMISMATCH;
          }
          deadlocks += rc == REDCOLL_EDEADLOCK;
          CHECK_MSG(mism > 0, "%s mismatch, %s p=%d odd=%d: nobody saw it\n%s", mm_names[kind],
                    redcoll_algo_name(algo), p, odd, rep);
          /* Both views in the report: the receiver's expected tag and the
           * tag the sender sent (a message that arrived), or the tags two
           * ranks wait in (rendezvous sends nobody takes). */
          CHECK_MSG((strstr(rep, "but the next message has tag") != NULL &&
                     strstr(rep, "expects collective #0") != NULL &&
                     strstr(rep, "sent #0: same collective number, different") != NULL) ||
                        (strstr(rep, "waits in tag 0x") != NULL &&
                         strstr(rep, "is at collective #") != NULL),
                    "%s: report %s", mm_names[kind], rep);
          rendezvous_only += strstr(rep, "but the next message has tag") == NULL;
          /* Each side logs its own view: the collective's tag and the peer. */
          CHECK_MSG(log != NULL && strstr(log, "REDCOLL_EMISMATCH") != NULL &&
                        strstr(log, "from rank") != NULL && strstr(log, "(tag 0x") != NULL,
                    "log: %.2000s", log ? log : "(none)");
          free(log);
          detected += mism > 0;
        }
      }
    }
  }
  printf("mismatch: %lu runs, detected in %lu (%lu only as crossed rendezvous waits), %lu deadlocks\n",
         runs, detected, rendezvous_only, deadlocks);
  CHECK(runs > 0 && deadlocks == 0);
}

/* Rank 2 skips the allreduce: its bcast is its collective #0, and meets
 * the others' allreduce #0. */
static int prog_skip(redcoll_comm *c, void *arg) {
  int *rcs = arg;
  int r = redcoll_comm_rank(c);
  int64_t v[4] = {1, 2, 3, 4};
  int rc = REDCOLL_OK;
  if (r != 2) rc = redcoll_allreduce(c, REDCOLL_IN_PLACE, v, 4, REDCOLL_INT64, REDCOLL_SUM);
  if (rc == REDCOLL_OK) rc = redcoll_bcast(c, v, 4, REDCOLL_INT64, 0);
  rcs[r] = rc;
  return rc;
}

static void test_sequence_mismatch(void) {
  /* Rank 2 skipped a collective: the tag tells, although count, dtype and
   * root agree. */
  for (uint64_t seed = 1; seed <= 6; seed++) {
    int rcs[4] = {0};
    char rep[2048];
    redcoll_mock_config cfg = cfg_seeded(seed, rep, sizeof rep);
    capture cap;
    capture_start(&cap);
    int rc = redcoll_mock_run(4, &cfg, prog_skip, rcs, NULL);
    char *log = capture_end(&cap);
    CHECK_MSG(log != NULL && strstr(log, "REDCOLL_EMISMATCH") != NULL, "log %s", log ? log : "");
    free(log);
    CHECK_MSG(rc == REDCOLL_EMISMATCH || rc == REDCOLL_EABORTED, "%s\n%s", redcoll_status_name(rc),
              rep);
    int mism = 0;
    for (int r = 0; r < 4; r++) {
      CHECK_MSG(rcs[r] == REDCOLL_EMISMATCH || rcs[r] == REDCOLL_EABORTED, "rank %d %s\n%s", r,
                redcoll_status_name(rcs[r]), rep);
      mism += rcs[r] == REDCOLL_EMISMATCH;
    }
    CHECK(mism > 0);
    CHECK_MSG(strstr(rep, "same collective number, different collective") != NULL, "%s", rep);
  }
}

/* ---- deadlines ------------------------------------------------------------ */

typedef struct {
  uint64_t timeout;
  int absent;        /* this rank never enters the collective (-1: none) */
  size_t count;
  int rc[MAXP];
  int set_rc[MAXP];
} to_ctx;

static int prog_timeout(redcoll_comm *c, void *arg) {
  to_ctx *x = arg;
  int r = redcoll_comm_rank(c);
  x->set_rc[r] = redcoll_comm_set_deadline(c, x->timeout);
  if (redcoll_comm_get_deadline(c) != x->timeout) return REDCOLL_EPROTO;
  if (r == x->absent) return REDCOLL_OK;
  double *v = calloc(x->count, sizeof *v);
  if (v == NULL) return REDCOLL_ENOMEM;
  int rc = REDCOLL_OK;
  /* Two collectives: the deadline is per collective, so with a timeout
   * just above one allreduce's duration both must pass. */
  for (int i = 0; i < 2 && rc == REDCOLL_OK; i++)
    rc = redcoll_allreduce(c, REDCOLL_IN_PLACE, v, x->count, REDCOLL_FLOAT64, REDCOLL_SUM);
  free(v);
  x->rc[r] = rc;
  return rc;
}

static void test_timeout(void) {
  /* p = 7, alpha = 1 (one millisecond per message on the virtual clock). */
  enum { P = 7 };
  redcoll_mock_stats st[P], st0[P];
  char rep[4096];

  /* A deadline nobody reaches changes nothing: same clocks as without. */
  to_ctx x;
  memset(&x, 0, sizeof x);
  x.absent = -1;
  x.count = 64;
  CHECK_INT(redcoll_mock_run(P, NULL, prog_timeout, &x, st0), REDCOLL_OK);
  double one = 0;
  for (int r = 0; r < P; r++) one = st0[r].time > one ? st0[r].time : one;
  x.timeout = (uint64_t)(one / 2) + 1; /* each of the two allreduces fits */
  CHECK_INT(redcoll_mock_run(P, NULL, prog_timeout, &x, st), REDCOLL_OK);
  for (int r = 0; r < P; r++) {
    CHECK_INT(x.set_rc[r], REDCOLL_OK);
    CHECK_DBL(st[r].time, st0[r].time);
  }

  /* A collective slower than its deadline: beta makes each message cost
   * count*8 units; every rank returns an error, at least one times out. */
  for (uint64_t seed = 1; seed <= 4; seed++) {
    redcoll_mock_config cfg = cfg_seeded(seed, rep, sizeof rep);
    cfg.beta = 1.0;
    memset(&x, 0, sizeof x);
    x.absent = -1;
    x.count = 1000;
    x.timeout = 100;
    capture cap;
    capture_start(&cap);
    int rc = redcoll_mock_run(P, &cfg, prog_timeout, &x, st);
    char *log = capture_end(&cap);
    CHECK_MSG(log != NULL && strstr(log, "REDCOLL_ETIMEDOUT") != NULL &&
                  strstr(log, " rank ") != NULL,
              "log %s", log ? log : "(none)");
    free(log);
    CHECK_MSG(rc == REDCOLL_ETIMEDOUT || rc == REDCOLL_EABORTED, "%s", redcoll_status_name(rc));
    int to = 0;
    for (int r = 0; r < P; r++) {
      CHECK_MSG(x.rc[r] == REDCOLL_ETIMEDOUT || x.rc[r] == REDCOLL_EABORTED, "rank %d %s", r,
                redcoll_status_name(x.rc[r]));
      to += x.rc[r] == REDCOLL_ETIMEDOUT;
      /* Nobody's clock runs far past its deadline. */
      CHECK_MSG(st[r].time <= 100.0 + 8000.0 + 1.0, "rank %d time %g", r, st[r].time);
    }
    CHECK(to > 0);
    CHECK_MSG(strstr(rep, "timed out at") != NULL && strstr(rep, "waiting for rank") != NULL,
              "%s", rep);
  }

  /* The simulator's SIGSTOP: rank k stalls for a long time before its
   * n-th call; its peers time out naming it (the report and the log), and
   * the stalled rank finds the communicator aborted when it comes back. */
  for (int k = 0; k < P; k++) {
    for (uint64_t n = 0; n < 3; n++) {
      redcoll_mock_config cfg = cfg_seeded(7 + (uint64_t)k * 3 + n, rep, sizeof rep);
      cfg.stall_rank = k;
      cfg.stall_after = n;
      cfg.stall_time = 1e9;
      memset(&x, 0, sizeof x);
      x.absent = -1;
      x.count = 64;
      x.timeout = 1000;
      capture cap;
      capture_start(&cap);
      int rc = redcoll_mock_run(P, &cfg, prog_timeout, &x, st);
      char *log = capture_end(&cap);
      CHECK_MSG(rc == REDCOLL_ETIMEDOUT || rc == REDCOLL_EABORTED, "k=%d n=%llu: %s", k,
                (unsigned long long)n, redcoll_status_name(rc));
      int to = 0;
      for (int r = 0; r < P; r++) {
        CHECK_MSG(x.rc[r] == (r == k ? REDCOLL_EABORTED : x.rc[r]) &&
                      (x.rc[r] == REDCOLL_ETIMEDOUT || x.rc[r] == REDCOLL_EABORTED),
                  "k=%d n=%llu: rank %d %s\n%s", k, (unsigned long long)n, r,
                  redcoll_status_name(x.rc[r]), rep);
        to += x.rc[r] == REDCOLL_ETIMEDOUT;
        if (r != k) CHECK_MSG(st[r].time < 1e9, "rank %d waited out the stall", r);
      }
      CHECK(to > 0);
      char want[64];
      snprintf(want, sizeof want, "waiting for rank %d", k);
      CHECK_MSG(strstr(rep, want) != NULL, "k=%d n=%llu: %s", k, (unsigned long long)n, rep);
      char want2[64];
      snprintf(want, sizeof want, "to rank %d", k);
      snprintf(want2, sizeof want2, "from rank %d", k);
      CHECK_MSG(log != NULL && strstr(log, "REDCOLL_ETIMEDOUT") != NULL &&
                    (strstr(log, want) != NULL || strstr(log, want2) != NULL),
                "k=%d n=%llu: log %s", k, (unsigned long long)n, log ? log : "(none)");
      free(log);
    }
  }

  /* A rank that never comes: nothing can move, virtual time runs to the
   * earliest deadline; never a deadlock report, never a hang. */
  for (int k = 0; k < P; k++) {
    redcoll_mock_config cfg = cfg_seeded(100 + (uint64_t)k, rep, sizeof rep);
    memset(&x, 0, sizeof x);
    x.absent = k;
    x.count = 64;
    x.timeout = 500;
    capture cap;
    capture_start(&cap);
    int rc = redcoll_mock_run(P, &cfg, prog_timeout, &x, st);
    free(capture_end(&cap));
    CHECK_MSG(rc == REDCOLL_ETIMEDOUT || rc == REDCOLL_EABORTED, "k=%d: %s\n%s", k,
              redcoll_status_name(rc), rep);
    int to = 0;
    for (int r = 0; r < P; r++) {
      if (r == k) continue;
      CHECK_MSG(x.rc[r] == REDCOLL_ETIMEDOUT || x.rc[r] == REDCOLL_EABORTED, "k=%d rank %d %s\n%s",
                k, r, redcoll_status_name(x.rc[r]), rep);
      to += x.rc[r] == REDCOLL_ETIMEDOUT;
    }
    CHECK_INT(to, 1); /* the first to time out aborts the others */
    CHECK(strstr(rep, "deadlock") == NULL && strstr(rep, "timed out at") != NULL);
  }
}

int main(int argc, char **argv) {
  /* The log (stderr) names the peers; tests capture it around some runs. */
  setenv("REDCOLL_LOG_LEVEL", "error", 1);
  static const test_case cases[] = {TEST(test_abort),    TEST(test_abort_without_op),
                                    TEST(test_sequence_mismatch), TEST(test_mismatch),
                                    TEST(test_timeout),  TEST(test_fault_matrix)};
  return test_main(cases, sizeof cases / sizeof cases[0], argc, argv);
}
