/*
 * The threads transport: its own behaviour (worlds for threads the program
 * owns, timeouts, peers that are gone, the runner's status, mismatches that
 * write nothing) and the correctness matrix of every registered algorithm
 * running on it.
 *
 * The matrix: for allreduce, reduce, reduce_scatter_block, allgather and
 * bcast, every algorithm the collective implements (found by asking
 * redcoll_algo_is_supported about every value of the enum, so algorithms added
 * later are covered without touching this file) and AUTO, for p = 1..16;
 * counts 0, 1, p-1, p+1 and 1000; for reduce and bcast every root for
 * p <= 8 and roots 0, 1, p/2, p-1 above (counts 1 and p-1 at roots 0 and p-1
 * only); in place and not; the default butterfly threshold and,
 * for count 1000, a 64-byte one; float64 SUM of integer values (exact in any order) and a
 * non-commutative operator (2x2 matrix product modulo 65521) checked
 * bytewise against a sequential reduction in rank order.  Algorithms that
 * need commutativity must refuse the latter with REDCOLL_ENOTSUP.  Every
 * call also checks that nothing is written past the result and that the
 * send buffer is left alone.
 *
 * Rank programs run on several threads at once and CHECK is not
 * thread-safe: ranks record failures in their own slots, checked by the
 * main thread after each run.
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <time.h>

#include "raw.h"
#include "redcoll/threads.h"
#include "test.h"
#include "disagree.h"

#define MAXP 16

typedef struct rank_log {
  int fails;
  char first[256];
} rank_log;

static void log_fail(rank_log *l, int line, const char *fmt, ...) {
  if (l->fails++ > 0) return;
  int n = snprintf(l->first, sizeof l->first, "line %d: ", line);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(l->first + n, sizeof l->first - (size_t)n, fmt, ap);
  va_end(ap);
}

static double now_sec(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

/* ---- data and references ------------------------------------------------------ */

#define PRIME 65521u

typedef struct mat2 {
  uint32_t a, b, c, d; /* [[a, b], [c, d]] */
} mat2;

static mat2 mat_mul(mat2 x, mat2 y) {
  mat2 r;
  r.a = (uint32_t)(((uint64_t)x.a * y.a + (uint64_t)x.b * y.c) % PRIME);
  r.b = (uint32_t)(((uint64_t)x.a * y.b + (uint64_t)x.b * y.d) % PRIME);
  r.c = (uint32_t)(((uint64_t)x.c * y.a + (uint64_t)x.d * y.c) % PRIME);
  r.d = (uint32_t)(((uint64_t)x.c * y.b + (uint64_t)x.d * y.d) % PRIME);
  return r;
}

static void mat_fn(void *out, const void *left, const void *right, size_t count, void *ctx) {
  (void)ctx;
  for (size_t i = 0; i < count; i++) {
    mat2 x, y;
    memcpy(&x, (const char *)left + i * sizeof x, sizeof x);
    memcpy(&y, (const char *)right + i * sizeof y, sizeof y);
    mat2 r = mat_mul(x, y);
    memcpy((char *)out + i * sizeof r, &r, sizeof r);
  }
}

static redcoll_op *noncomm_op;

static uint64_t mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

enum { KIND_F64, KIND_MAT };

/* Element idx of rank r's input in call `salt`. */
static void elem(int kind, int r, size_t idx, uint64_t salt, void *out) {
  uint64_t h = mix64(salt << 26 ^ (uint64_t)r << 20 ^ idx);
  if (kind == KIND_F64) {
    double v = (double)((int64_t)(h % 2001) - 1000);
    memcpy(out, &v, sizeof v);
  } else {
    mat2 m = {(uint32_t)(h % PRIME), (uint32_t)((h >> 16) % PRIME), (uint32_t)((h >> 32) % PRIME),
              (uint32_t)((h >> 48) % PRIME)};
    memcpy(out, &m, sizeof m);
  }
}

static size_t kind_size(int kind) { return kind == KIND_F64 ? sizeof(double) : sizeof(mat2); }

/* buf = elements [from, from + n) of rank r's input. */
static void gen(void *buf, int kind, int r, size_t from, size_t n, uint64_t salt) {
  size_t es = kind_size(kind);
  for (size_t i = 0; i < n; i++) elem(kind, r, from + i, salt, (char *)buf + i * es);
}

/* out = v_0 (+) v_1 (+) ... (+) v_{p-1} over elements [from, from + n), in
 * rank order, left to right. */
static void reference(void *out, int kind, int p, size_t from, size_t n, uint64_t salt) {
  size_t es = kind_size(kind);
  for (size_t i = 0; i < n; i++) {
    if (kind == KIND_F64) {
      double acc, v;
      elem(kind, 0, from + i, salt, &acc);
      for (int r = 1; r < p; r++) {
        elem(kind, r, from + i, salt, &v);
        acc = acc + v;
      }
      memcpy((char *)out + i * es, &acc, es);
    } else {
      mat2 acc, v;
      elem(kind, 0, from + i, salt, &acc);
      for (int r = 1; r < p; r++) {
        elem(kind, r, from + i, salt, &v);
        acc = mat_mul(acc, v);
      }
      memcpy((char *)out + i * es, &acc, es);
    }
  }
}

/* ---- the matrix ------------------------------------------------------------------ */

#define MAXCOUNT 1000
#define PAD 64 /* bytes of sentinel after every result */
#define SENTINEL 0xEE

typedef struct mx_arg {
  redcoll_coll coll;
  redcoll_algo algo;
  rank_log log[MAXP];
  long calls[MAXP];
} mx_arg;

typedef struct mx_bufs {
  unsigned char *send, *recv, *ref, *orig;
} mx_bufs;

static int untouched(const unsigned char *b, size_t n) {
  for (size_t k = 0; k < n; k++)
    if (b[k] != SENTINEL) return 0;
  return 1;
}

/* One collective call of the matrix on this rank; returns the call's status
 * if it is not the expected one (the run then stops), else REDCOLL_OK. */
static int mx_call(redcoll_comm *c, mx_arg *a, mx_bufs *B, size_t count, int kind, int in_place,
                   int root, uint64_t salt) {
  int me = c->rank, p = c->size;
  rank_log *lg = &a->log[me];
  redcoll_dtype dt = kind == KIND_F64 ? REDCOLL_FLOAT64 : REDCOLL_CUSTOM;
  const redcoll_op *op = kind == KIND_F64 ? REDCOLL_SUM : noncomm_op;
  size_t es = kind_size(kind), n = count * es;
  int refuse = kind == KIND_MAT && !redcoll_algo_is_rank_ordered(a->coll, a->algo);
  size_t in_n = 0, out_n = 0; /* bytes of input, and of result to check */
  const void *sb = NULL;
  void *rb = B->recv;
  int rc = REDCOLL_EINVAL;

  memset(B->recv, SENTINEL, (size_t)p * n + PAD);
  a->calls[me]++;
  switch (a->coll) {
  case REDCOLL_COLL_ALLREDUCE:
  case REDCOLL_COLL_REDUCE:
    in_n = n;
    if (a->coll == REDCOLL_COLL_REDUCE && me != root) {
      /* In place applies to the root only; the others pass no result. */
      gen(B->send, kind, me, 0, count, salt);
      sb = B->send;
      rb = NULL;
    } else {
      gen(in_place ? B->recv : B->send, kind, me, 0, count, salt);
      sb = in_place ? REDCOLL_IN_PLACE : B->send;
      out_n = n;
    }
    memcpy(B->orig, B->send, in_n); /* to check that the call leaves it alone */
    if (a->coll == REDCOLL_COLL_ALLREDUCE) rc = redcoll_allreduce(c, sb, rb, count, dt, op);
    else rc = redcoll_reduce(c, sb, rb, count, dt, op, root);
    if (out_n > 0) reference(B->ref, kind, p, 0, count, salt);
    break;
  case REDCOLL_COLL_REDUCE_SCATTER_BLOCK:
    in_n = (size_t)p * n;
    gen(in_place ? B->recv : B->send, kind, me, 0, (size_t)p * count, salt);
    sb = in_place ? REDCOLL_IN_PLACE : B->send;
    memcpy(B->orig, B->send, in_n);
    rc = redcoll_reduce_scatter_block(c, sb, rb, count, dt, op);
    out_n = n;
    reference(B->ref, kind, p, (size_t)me * count, count, salt);
    break;
  case REDCOLL_COLL_ALLGATHER:
    in_n = n;
    if (in_place) gen(B->recv + (size_t)me * n, kind, me, 0, count, salt);
    else gen(B->send, kind, me, 0, count, salt);
    sb = in_place ? REDCOLL_IN_PLACE : B->send;
    memcpy(B->orig, B->send, in_n);
    rc = redcoll_allgather(c, sb, rb, count, dt);
    out_n = (size_t)p * n;
    for (int r = 0; r < p; r++) gen(B->ref + (size_t)r * n, kind, r, 0, count, salt);
    break;
  case REDCOLL_COLL_BCAST:
    if (me == root) gen(B->recv, kind, me, 0, count, salt);
    rc = redcoll_bcast(c, B->recv, count, dt, root);
    out_n = n;
    gen(B->ref, kind, root, 0, count, salt);
    break;
  default:
    break;
  }

  /* Forcing an algorithm that needs commutativity with the non-commutative
   * operator is refused before anything is sent, on one rank as on many
   * (count = 0 has nothing to reduce and succeeds). */
  if (refuse && count > 0) {
    if (rc != REDCOLL_ENOTSUP) {
      log_fail(lg, __LINE__, "%s count %zu: non-commutative op gave %s, want REDCOLL_ENOTSUP",
               redcoll_algo_name(a->algo), count, redcoll_status_name(rc));
      return rc == REDCOLL_OK ? REDCOLL_EPROTO : rc;
    }
    if (!untouched(B->recv, (size_t)p * n + PAD))
      log_fail(lg, __LINE__, "%s count %zu: refused call wrote its result buffer",
               redcoll_algo_name(a->algo), count);
    return REDCOLL_OK;
  }
  if (rc != REDCOLL_OK) {
    log_fail(lg, __LINE__, "count %zu kind %d in_place %d root %d: %s", count, kind, in_place,
             root, redcoll_status_name(rc));
    return rc;
  }
  if (a->algo != REDCOLL_ALGO_AUTO && p > 1 && count > 0 && redcoll_comm_last_algorithm(c) != a->algo)
    log_fail(lg, __LINE__, "ran %s, forced %s", redcoll_algo_name(redcoll_comm_last_algorithm(c)),
             redcoll_algo_name(a->algo));
  if (out_n > 0 && memcmp(B->recv, B->ref, out_n) != 0) {
    size_t k = 0;
    while (B->recv[k] == B->ref[k]) k++;
    log_fail(lg, __LINE__, "count %zu kind %d in_place %d root %d: wrong result at byte %zu of %zu",
             count, kind, in_place, root, k, out_n);
  }
  /* Nothing past the result (in place: past the input, which may be used
   * as workspace), and nothing at all where no result is due. */
  size_t end = in_place && in_n > out_n ? in_n : out_n;
  if (rb == NULL) end = 0;
  if (!untouched(B->recv + end, PAD))
    log_fail(lg, __LINE__, "count %zu kind %d in_place %d root %d: wrote past %zu bytes", count,
             kind, in_place, root, end);
  if (sb == B->send && in_n > 0) {
    if (memcmp(B->send, B->orig, in_n) != 0)
      log_fail(lg, __LINE__, "count %zu kind %d root %d: send buffer modified", count, kind, root);
  }
  return REDCOLL_OK;
}

/* Buffers of rank r, allocated once for all runs (page faults are what
 * makes sanitized runs slow). */
static mx_bufs rank_bufs[MAXP];
#define BUFSIZE ((size_t)MAXP * MAXCOUNT * sizeof(mat2) + PAD)

static int alloc_bufs(void) {
  for (int r = 0; r < MAXP; r++) {
    mx_bufs *b = &rank_bufs[r];
    b->send = malloc(BUFSIZE);
    b->recv = malloc(BUFSIZE);
    b->ref = malloc(BUFSIZE);
    b->orig = malloc(BUFSIZE);
    if (b->send == NULL || b->recv == NULL || b->ref == NULL || b->orig == NULL) return -1;
  }
  return 0;
}

static void free_bufs(void) {
  for (int r = 0; r < MAXP; r++) {
    free(rank_bufs[r].send);
    free(rank_bufs[r].recv);
    free(rank_bufs[r].ref);
    free(rank_bufs[r].orig);
  }
}

static int mx_rank(redcoll_comm *c, void *vp) {
  mx_arg *a = vp;
  int me = c->rank, p = c->size, rc;
  rank_log *lg = &a->log[me];
  mx_bufs B = rank_bufs[me];
  if ((rc = redcoll_comm_set_algorithm(c, a->coll, a->algo)) != REDCOLL_OK) {
    log_fail(lg, __LINE__, "set_algorithm: %s", redcoll_status_name(rc));
    goto out;
  }
  int rooted = a->coll == REDCOLL_COLL_REDUCE || a->coll == REDCOLL_COLL_BCAST;
  int reduction = a->coll != REDCOLL_COLL_BCAST && a->coll != REDCOLL_COLL_ALLGATHER;
  int roots[MAXP], nroots = 0;
  if (!rooted) {
    roots[nroots++] = 0;
  } else if (p <= 8) {
    for (int r = 0; r < p; r++) roots[nroots++] = r;
  } else {
    roots[nroots++] = 0;
    roots[nroots++] = 1;
    roots[nroots++] = p / 2;
    roots[nroots++] = p - 1;
  }
  const size_t counts[] = {0, 1, (size_t)p - 1, (size_t)p + 1, MAXCOUNT};
  const size_t thresholds[] = {REDCOLL_DEFAULT_THRESHOLD, 64};
  uint64_t salt = 0;
  for (size_t ci = 0; ci < sizeof counts / sizeof counts[0]; ci++) {
    for (int kind = KIND_F64; kind <= (reduction ? KIND_MAT : KIND_F64); kind++) {
      int refuse = kind == KIND_MAT && !redcoll_algo_is_rank_ordered(a->coll, a->algo);
      /* The 64-byte threshold matters only where blocks are larger. */
      size_t nthr = reduction && !refuse && counts[ci] == MAXCOUNT ? 2u : 1u;
      for (size_t ti = 0; ti < nthr; ti++) {
        redcoll_comm_set_threshold(c, thresholds[ti]);
        for (int in_place = 0; in_place <= (a->coll == REDCOLL_COLL_BCAST || refuse ? 0 : 1);
             in_place++) {
          for (int ri = 0; ri < nroots; ri++) {
            /* The smallest counts at the first and last root only. */
            int edge = roots[ri] == 0 || roots[ri] == p - 1;
            if (rooted && counts[ci] > 0 && counts[ci] < (size_t)p && !edge) continue;
            rc = mx_call(c, a, &B, counts[ci], kind, in_place, roots[ri], ++salt);
            if (rc != REDCOLL_OK) goto out;
          }
        }
      }
    }
  }
out:
  return rc;
}

static const redcoll_coll matrix_colls[] = {
    REDCOLL_COLL_ALLREDUCE, REDCOLL_COLL_REDUCE, REDCOLL_COLL_REDUCE_SCATTER_BLOCK,
    REDCOLL_COLL_ALLGATHER, REDCOLL_COLL_BCAST,
};

static void test_matrix(void) {
  for (size_t k = 0; k < sizeof matrix_colls / sizeof matrix_colls[0]; k++) {
    redcoll_coll coll = matrix_colls[k];
    for (int algo = 0; algo < REDCOLL_ALGO_COUNT; algo++) {
      if (!redcoll_algo_is_supported(coll, (redcoll_algo)algo)) continue;
      double t0 = now_sec();
      long calls = 0;
      for (int p = 1; p <= MAXP; p++) {
        mx_arg *a = calloc(1, sizeof *a);
        CHECK(a != NULL);
        if (a == NULL) return;
        a->coll = coll;
        a->algo = (redcoll_algo)algo;
        redcoll_threads_config cfg;
        redcoll_threads_config_init(&cfg);
        cfg.wait_timeout_ms = 60000; /* a bug fails the run instead of hanging the test */
        int rc = redcoll_threads_run_config(p, &cfg, mx_rank, a, NULL);
        CHECK_MSG(rc == REDCOLL_OK, "%s %s p %d: run returned %s", redcoll_coll_name(coll),
                  redcoll_algo_name((redcoll_algo)algo), p, redcoll_status_name(rc));
        for (int r = 0; r < p; r++) {
          CHECK_MSG(a->log[r].fails == 0, "%s %s p %d rank %d: %d failures, first at %s",
                    redcoll_coll_name(coll), redcoll_algo_name((redcoll_algo)algo), p, r,
                    a->log[r].fails, a->log[r].first);
          /* Every rank made the same number of calls. */
          CHECK_INT(a->calls[r], a->calls[0]);
        }
        calls += a->calls[0];
        free(a);
      }
      printf("matrix %-22s %-24s p 1..%d: %5ld calls per rank set, %.2f s\n",
             redcoll_coll_name(coll), redcoll_algo_name((redcoll_algo)algo), MAXP, calls,
             now_sec() - t0);
      fflush(stdout);
    }
  }
}

/* ---- the transport itself --------------------------------------------------------- */

typedef struct own_arg {
  redcoll_comm *comm;
  int status;
  double seconds;
  double value;
  int op; /* 0: allreduce of rank + 1; 1: recv from rank 1; 2: recv with a tag mismatch;
             3: sendrecv to rank 1 from rank 2 */
  unsigned char buf[32];
} own_arg;

static void *own_thread(void *vp) {
  own_arg *o = vp;
  double t0 = now_sec();
  if (o->op == 0) {
    double v = redcoll_comm_rank(o->comm) + 1;
    o->status = redcoll_allreduce(o->comm, &v, &o->value, 1, REDCOLL_FLOAT64, REDCOLL_SUM);
  } else if (o->op == 3) {
    memset(o->buf, 0, sizeof o->buf);
    o->status = raw_exchange(o->comm, 1, 1, o->buf, 16, 2, 1, o->buf + 16, 16);
  } else {
    uint64_t tag = o->op == 2 ? 2 : 1;
    o->status = raw_recv(o->comm, 1, tag, o->buf, 16);
  }
  o->seconds = now_sec() - t0;
  return NULL;
}

/* Worlds for threads the program owns: an allreduce on p = 5, with the
 * communicators destroyed in an arbitrary order by the main thread. */
static void test_world_own_threads(void) {
  enum { P = 5 };
  redcoll_comm *comms[P];
  CHECK_INT(redcoll_threads_world_create(P, NULL, comms), REDCOLL_OK);
  own_arg o[P];
  pthread_t tid[P];
  memset(o, 0, sizeof o);
  for (int i = 0; i < P; i++) {
    CHECK_INT(redcoll_comm_rank(comms[i]), i);
    CHECK_INT(redcoll_comm_size(comms[i]), P);
    o[i].comm = comms[i];
    CHECK_INT(pthread_create(&tid[i], NULL, own_thread, &o[i]), 0);
  }
  for (int i = 0; i < P; i++) {
    pthread_join(tid[i], NULL);
    CHECK_INT(o[i].status, REDCOLL_OK);
    CHECK_DBL(o[i].value, P * (P + 1) / 2);
  }
  const int order[P] = {3, 0, 4, 1, 2};
  for (int i = 0; i < P; i++) redcoll_comm_destroy(comms[order[i]]);

  redcoll_comm *one[1] = {(redcoll_comm *)1};
  CHECK_INT(redcoll_threads_world_create(0, NULL, one), REDCOLL_EINVAL);
  CHECK(one[0] == (redcoll_comm *)1);
  CHECK_INT(redcoll_threads_world_create(2, NULL, NULL), REDCOLL_EINVAL);
  CHECK_INT(redcoll_threads_world_create(65537, NULL, one), REDCOLL_EINVAL);
  /* p = 1: a world of one, collectives are local. */
  CHECK_INT(redcoll_threads_world_create(1, NULL, one), REDCOLL_OK);
  double v = 3, r = 0;
  CHECK_INT(redcoll_allreduce(one[0], &v, &r, 1, REDCOLL_FLOAT64, REDCOLL_SUM), REDCOLL_OK);
  CHECK_DBL(r, 3);
  redcoll_comm_destroy(one[0]);
}

/* An allreduce of the ranks' numbers, checked. */
static int sum_rank(redcoll_comm *c, void *vp) {
  (void)vp;
  int r = redcoll_comm_rank(c), p = redcoll_comm_size(c), s = 0;
  int rc = redcoll_allreduce(c, &r, &s, 1, REDCOLL_INT32, REDCOLL_SUM);
  if (rc == REDCOLL_OK && s != p * (p - 1) / 2) rc = REDCOLL_EINVAL;
  return rc;
}

/* A call that waits longer than the world's timeout returns
 * REDCOLL_ETIMEDOUT, set by the config or by REDCOLL_TIMEOUT_MS. */
static void test_timeout(void) {
  for (int how = 0; how < 2; how++) {
    redcoll_threads_config cfg;
    redcoll_threads_config_init(&cfg);
    if (how == 0) cfg.wait_timeout_ms = 60;
    else setenv("REDCOLL_TIMEOUT_MS", "60", 1);
    redcoll_comm *comms[2];
    CHECK_INT(redcoll_threads_world_create(2, how == 0 ? &cfg : NULL, comms), REDCOLL_OK);
    unsetenv("REDCOLL_TIMEOUT_MS");
    /* Rank 1 exists but never sends. */
    own_arg o;
    memset(&o, 0, sizeof o);
    o.comm = comms[0];
    o.op = 1;
    pthread_t tid;
    CHECK_INT(pthread_create(&tid, NULL, own_thread, &o), 0);
    pthread_join(tid, NULL);
    CHECK_INT(o.status, REDCOLL_ETIMEDOUT);
    CHECK_MSG(o.seconds >= 0.055 && o.seconds < 30, "timed out after %.3f s", o.seconds);
    redcoll_comm_destroy(comms[0]);
    redcoll_comm_destroy(comms[1]);
  }
  setenv("REDCOLL_TIMEOUT_MS", "soon", 1);
  redcoll_comm *comms[2] = {NULL, NULL};
  CHECK_INT(redcoll_threads_world_create(2, NULL, comms), REDCOLL_EINVAL);
  CHECK(comms[0] == NULL && comms[1] == NULL);
  setenv("REDCOLL_TIMEOUT_MS", "-5", 1);
  CHECK_INT(redcoll_threads_world_create(2, NULL, comms), REDCOLL_EINVAL);
  unsetenv("REDCOLL_TIMEOUT_MS");
  /* No bound at all, from the config and from the environment's 0. */
  for (int how = 0; how < 2; how++) {
    redcoll_threads_config cfg;
    redcoll_threads_config_init(&cfg);
    if (how == 0) cfg.wait_timeout_ms = REDCOLL_WAIT_FOREVER;
    else setenv("REDCOLL_TIMEOUT_MS", "0", 1);
    int st[3];
    CHECK_INT(redcoll_threads_run_config(3, &cfg, sum_rank, NULL, st), REDCOLL_OK);
    unsetenv("REDCOLL_TIMEOUT_MS");
  }
}

/* A peer whose communicator is destroyed, before or while it is waited
 * for, fails the wait with REDCOLL_ETRANSPORT. */
static void test_gone(void) {
  for (int late = 0; late < 2; late++) {
    redcoll_comm *comms[2];
    CHECK_INT(redcoll_threads_world_create(2, NULL, comms), REDCOLL_OK);
    if (!late) redcoll_comm_destroy(comms[1]);
    own_arg o;
    memset(&o, 0, sizeof o);
    o.comm = comms[0];
    o.op = 1;
    pthread_t tid;
    CHECK_INT(pthread_create(&tid, NULL, own_thread, &o), 0);
    if (late) {
      sleep_ms(30);
      redcoll_comm_destroy(comms[1]);
    }
    pthread_join(tid, NULL);
    CHECK_INT(o.status, REDCOLL_ETRANSPORT);
    redcoll_comm_destroy(comms[0]);
  }
  /* A sendrecv whose destination is gone fails at once, although its
   * source (alive, silent) could still send. */
  redcoll_threads_config cfg;
  redcoll_threads_config_init(&cfg);
  cfg.wait_timeout_ms = 20000;
  redcoll_comm *comms[3];
  CHECK_INT(redcoll_threads_world_create(3, &cfg, comms), REDCOLL_OK);
  redcoll_comm_destroy(comms[1]);
  own_arg o;
  memset(&o, 0, sizeof o);
  o.comm = comms[0];
  o.op = 3;
  pthread_t tid;
  CHECK_INT(pthread_create(&tid, NULL, own_thread, &o), 0);
  pthread_join(tid, NULL);
  CHECK_INT(o.status, REDCOLL_ETRANSPORT);
  CHECK_MSG(o.seconds < 10, "took %.3f s", o.seconds);
  redcoll_comm_destroy(comms[0]);
  redcoll_comm_destroy(comms[2]);
}

/* A tag mismatch writes nothing at all into the receive buffer. */
static void test_mismatch_writes_nothing(void) {
  redcoll_comm *comms[2];
  CHECK_INT(redcoll_threads_world_create(2, NULL, comms), REDCOLL_OK);
  own_arg o;
  memset(&o, 0, sizeof o);
  memset(o.buf, SENTINEL, sizeof o.buf);
  o.comm = comms[0];
  o.op = 2;
  pthread_t tid;
  CHECK_INT(pthread_create(&tid, NULL, own_thread, &o), 0);
  unsigned char msg[16];
  memset(msg, 0x11, sizeof msg);
  CHECK_INT(raw_send(comms[1], 0, 1, msg, sizeof msg), REDCOLL_EMISMATCH);
  pthread_join(tid, NULL);
  CHECK_INT(o.status, REDCOLL_EMISMATCH);
  CHECK(untouched(o.buf, sizeof o.buf));
  redcoll_comm_destroy(comms[0]);
  redcoll_comm_destroy(comms[1]);
}

/* Rank 2 gives up before communicating; the others wait for it.  The run
 * returns rank 2's status, the others are aborted. */
static int giveup_rank(redcoll_comm *c, void *vp) {
  (void)vp;
  int me = c->rank, p = c->size;
  if (me == 2) return REDCOLL_EPROTO;
  unsigned char b[8] = {0};
  return raw_recv(c, (me + 1) % p, 1, b, sizeof b);
}

/* Ranks that disagree on the count: the first message between them fails
 * with REDCOLL_EMISMATCH, everybody returns promptly. */
static int disagree_rank(redcoll_comm *c, void *vp) {
  (void)vp;
  double in[8] = {0}, out[8];
  redcoll_comm_set_algorithm(c, REDCOLL_COLL_ALLREDUCE, REDCOLL_ALGO_LINEAR);
  size_t count = c->rank == 3 ? 7 : 8;
  return redcoll_allreduce(c, in, out, count, REDCOLL_FLOAT64, REDCOLL_SUM);
}

/* Ranks that disagree where their messages may never meet (disagree.h):
 * a send waiting for a rank that waits in the same collective number with
 * another call ends both with REDCOLL_EMISMATCH, never at the timeout. */
typedef struct disagree_arg {
  int mode;
  size_t n;
  int next[8]; /* the status of a barrier after it, per rank */
} disagree_arg;

static int disagree_call_rank(redcoll_comm *c, void *vp) {
  disagree_arg *a = vp;
  int rc = disagree_call(c, a->mode, a->n);
  a->next[redcoll_comm_rank(c)] = redcoll_barrier(c);
  return rc;
}

static void test_disagree_calls(void) {
  redcoll_threads_config cfg;
  redcoll_threads_config_init(&cfg);
  cfg.wait_timeout_ms = 60000;
  for (int p = 3; p <= 7; p += 2)
    for (int mode = 0; mode < DISAGREE_MODES; mode++)
      for (size_t n = 1; n <= 1000; n *= 1000) {
        disagree_arg a = {mode, n, {0}};
        int st[8];
        redcoll_threads_run_config(p, &cfg, disagree_call_rank, &a, st);
        disagree_check(p, mode, n, st, a.next, 0);
      }
}

static int ok_rank(redcoll_comm *c, void *vp) {
  (void)c;
  (void)vp;
  return REDCOLL_OK;
}

static void test_runner(void) {
  int st[5];
  for (int i = 0; i < 5; i++) st[i] = 12345;
  CHECK_INT(redcoll_threads_run_config(5, NULL, giveup_rank, NULL, st), REDCOLL_EPROTO);
  for (int i = 0; i < 5; i++) CHECK_INT(st[i], i == 2 ? REDCOLL_EPROTO : REDCOLL_EABORTED);

  for (int i = 0; i < 5; i++) st[i] = 12345;
  CHECK_INT(redcoll_threads_run_config(5, NULL, disagree_rank, NULL, st), REDCOLL_EMISMATCH);
  int mism = 0;
  for (int i = 0; i < 5; i++) {
    CHECK(st[i] == REDCOLL_EMISMATCH || st[i] == REDCOLL_EABORTED);
    mism += st[i] == REDCOLL_EMISMATCH;
  }
  CHECK(mism >= 1);

  CHECK_INT(redcoll_threads_run(0, ok_rank, NULL), REDCOLL_EINVAL);
  CHECK_INT(redcoll_threads_run(2, NULL, NULL), REDCOLL_EINVAL);
  CHECK_INT(redcoll_threads_run(1, ok_rank, NULL), REDCOLL_OK);
  redcoll_threads_config cfg;
  redcoll_threads_config_init(&cfg);
  cfg.stack_size = (size_t)1 << 20;
  CHECK_INT(redcoll_threads_run_config(3, &cfg, ok_rank, NULL, NULL), REDCOLL_OK);
}

static void matrix(void) {
  int have_bufs = alloc_bufs() == 0;
  CHECK(have_bufs);
  if (have_bufs) test_matrix();
  free_bufs();
}

int main(int argc, char **argv) {
  CHECK_INT(redcoll_op_create(mat_fn, sizeof(mat2), 0, NULL, &noncomm_op), REDCOLL_OK);
  static const test_case cases[] = {TEST(test_world_own_threads), TEST(test_timeout),
                                    TEST(test_gone), TEST(test_mismatch_writes_nothing),
                                    TEST(test_runner), TEST(test_disagree_calls),
                                    TEST(matrix)};
  int rc = test_main(cases, sizeof cases / sizeof cases[0], argc, argv);
  redcoll_op_destroy(noncomm_op);
  return rc;
}
