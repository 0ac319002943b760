/*
 * Piped steps (io.c, redcoll_comm_set_segment): how a message is cut
 * (counted in the simulator's messages), results checked bitwise against a
 * sequential reduction with tiny segments on the simulator (posted
 * segments), on the threads transport (segments one after the other) and
 * over TCP; the overlap of transfer and reduction on the simulator's
 * clock, exactly; a rank that dies between segments; the setting and its
 * variable.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "redcoll/mock.h"
#include "redcoll/redcoll.h"
#include "redcoll/threads.h"
#include "test.h"
#ifdef REDCOLL_TEST_TCP
#include "tcp_runner.h"
#endif

/* A collective, an algorithm and an operator to run them with. */
typedef struct pipe_case {
  redcoll_coll coll;
  redcoll_algo algo;
  check_op op;
} pipe_case;

/* Segments of 1 KiB for every communicator created from here on. */
static void small_segments(void) { setenv("REDCOLL_SEGMENT_KB", "1", 1); }

/* ---- cuts ------------------------------------------------------------------- */

/* Linear reduce at p = 2: rank 1 sends its vector once, cut into ceil(m /
 * 1 KiB) segments when it holds at least two of them. */
static void cuts(void) {
  small_segments();
  const size_t counts[] = {255, 256, 257, 1024, 1};
  const uint64_t msgs[] = {1, 2, 3, 8, 1};
  for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++) {
    check_case tc = check_case_make(REDCOLL_COLL_REDUCE, REDCOLL_ALGO_LINEAR, 2, counts[i], 0,
                                    CHECK_OP_SUM, 0);
    check_result res;
    CHECK(check_run_report(&tc, &res));
    CHECK_MSG(res.msgs == msgs[i], "count %zu: %llu messages", counts[i],
              (unsigned long long)res.msgs);
  }
  unsetenv("REDCOLL_SEGMENT_KB");
}

/* ---- results ------------------------------------------------------------------ */

/* Every piped collective, p = 2..6, counts around the segment, every root
 * of reduce, in place, the non-commutative operator where the algorithm
 * takes it, on the simulator and on threads. */
static void results(void) {
  small_segments();
  const size_t counts[] = {1, 100, 128, 129, 1000, 4099};
  for (int threads = 0; threads < 2; threads++)
    for (int p = 2; p <= 6; p++)
      for (size_t ci = 0; ci < sizeof counts / sizeof counts[0]; ci++) {
        size_t n = counts[ci];
        const pipe_case cases[] = {
            {REDCOLL_COLL_ALLREDUCE, REDCOLL_ALGO_RING, CHECK_OP_SUM},
            {REDCOLL_COLL_REDUCE, REDCOLL_ALGO_RING, CHECK_OP_MAX},
            {REDCOLL_COLL_ALLREDUCE, REDCOLL_ALGO_LINEAR, CHECK_OP_NONCOMM},
            {REDCOLL_COLL_REDUCE, REDCOLL_ALGO_LINEAR, CHECK_OP_NONCOMM},
            {REDCOLL_COLL_REDUCE_SCATTER_BLOCK, REDCOLL_ALGO_LINEAR, CHECK_OP_NONCOMM},
        };
        for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
          int rooted = cases[k].coll == REDCOLL_COLL_REDUCE;
          for (int root = 0; root < (rooted ? p : 1); root++)
            for (int in_place = 0; in_place < 2; in_place++) {
              size_t cnt = cases[k].coll == REDCOLL_COLL_REDUCE_SCATTER_BLOCK ? n / (size_t)p + 1 : n;
              check_case tc = check_case_make(cases[k].coll, cases[k].algo, p, cnt, root,
                                              cases[k].op, in_place);
              tc.dtype = REDCOLL_FLOAT32;
              tc.threads = threads;
              check_result res;
              CHECK(check_run_report(&tc, &res));
            }
        }
      }
  unsetenv("REDCOLL_SEGMENT_KB");
}

/* A nonblocking collective's pieces go one after the other on its fiber:
 * the same messages as a blocking one's. */
typedef struct {
  size_t n;
  int bad[8];
} nb_arg;

static int nb_rank(redcoll_comm *c, void *arg) {
  nb_arg *a = arg;
  int rank = redcoll_comm_rank(c), p = redcoll_comm_size(c);
  float *in = malloc(a->n * sizeof *in), *out = malloc(a->n * sizeof *out);
  if (in == NULL || out == NULL) return REDCOLL_ENOMEM;
  for (size_t i = 0; i < a->n; i++) in[i] = (float)((size_t)rank * 7 + i % 13);
  redcoll_comm_set_algorithm(c, REDCOLL_COLL_ALLREDUCE, REDCOLL_ALGO_RING);
  redcoll_request *req = NULL;
  int rc = redcoll_iallreduce(c, in, out, a->n, REDCOLL_FLOAT32, REDCOLL_SUM, &req);
  if (rc == REDCOLL_OK) rc = redcoll_wait(req);
  for (size_t i = 0; rc == REDCOLL_OK && i < a->n; i++) {
    float want = (float)(7 * p * (p - 1) / 2) + (float)p * (float)(i % 13);
    if (out[i] != want) a->bad[rank]++;
  }
  /* The blocking one right after, on the same communicator. */
  if (rc == REDCOLL_OK) rc = redcoll_allreduce(c, in, out, a->n, REDCOLL_FLOAT32, REDCOLL_SUM);
  for (size_t i = 0; rc == REDCOLL_OK && i < a->n; i++) {
    float want = (float)(7 * p * (p - 1) / 2) + (float)p * (float)(i % 13);
    if (out[i] != want) a->bad[rank]++;
  }
  free(in);
  free(out);
  return rc;
}

static void nonblocking(void) {
  small_segments();
  redcoll_mock_config cfg;
  redcoll_mock_config_init(&cfg);
  for (int p = 2; p <= 5; p++) {
    nb_arg a = {3000, {0}};
    redcoll_mock_stats st[5];
    CHECK_INT(redcoll_mock_run(p, &cfg, nb_rank, &a, st), REDCOLL_OK);
    for (int r = 0; r < p; r++) {
      CHECK_INT(st[r].status, REDCOLL_OK);
      CHECK_INT(a.bad[r], 0);
    }
  }
  unsetenv("REDCOLL_SEGMENT_KB");
}

/* ---- the overlap on the simulator's clock ---------------------------------------- */

/* A piped step of b bytes in segments of s (0: whole), io.c's formula:
 * the first segment's transfer, then each next one's transfer beside the
 * reduction of the one before, then the last one's reduction:
 *   alpha + s_0 beta + sum_{j>0} max(alpha + s_j beta, s_{j-1} gamma) + s_last gamma. */
static double step_time(double b, double s, double a, double be, double g) {
  if (s == 0 || b < 2 * s) return a + b * (be + g);
  size_t k = (size_t)((b + s - 1) / s);
  double last = b - (double)(k - 1) * s, t = a + s * be;
  for (size_t j = 1; j < k; j++) {
    double sj = j + 1 < k ? s : last, x = a + sj * be, y = s * g;
    t += x > y ? x : y;
  }
  return t + last * g;
}

/* Ring allreduce of m bytes, p ranks: p - 1 piped reduce-scatter steps of
 * b = m/p bytes, then p - 1 allgather steps of alpha + b beta. */
static double ring_time(int p, double m, double s, double a, double be, double g) {
  double b = m / p;
  return (p - 1) * (step_time(b, s, a, be, g) + a + be * b);
}

static void overlap(void) {
  const double a = 1e-5, be = 1e-9, gammas[] = {4e-9, 2.5e-10, 1e-9};
  const size_t segs[] = {0, 256, 100};
  size_t n = (size_t)3 << 19; /* float32: m = 6 MiB, divisible by p = 2, 3, 4 */
  for (size_t gi = 0; gi < sizeof gammas / sizeof gammas[0]; gi++)
    for (size_t si = 0; si < sizeof segs / sizeof segs[0]; si++)
      for (int p = 2; p <= 4; p++) {
        char kb[32];
        snprintf(kb, sizeof kb, "%zu", segs[si]);
        setenv("REDCOLL_SEGMENT_KB", kb, 1);
        check_case tc = check_case_make(REDCOLL_COLL_ALLREDUCE, REDCOLL_ALGO_RING, p, n, 0,
                                        CHECK_OP_SUM, 0);
        tc.dtype = REDCOLL_FLOAT32;
        tc.mock.alpha = a;
        tc.mock.beta = be;
        tc.mock.gamma = gammas[gi];
        check_result res;
        CHECK(check_run_report(&tc, &res));
        double want = ring_time(p, (double)n * 4, (double)segs[si] * 1024, a, be, gammas[gi]);
        CHECK_MSG(res.time > want * (1 - 1e-12) && res.time < want * (1 + 1e-12),
                  "p %d gamma %g segment %zu KiB: %.17g, want %.17g", p, gammas[gi], segs[si],
                  res.time, want);
      }
  /* Linear reduce at p = 2 (one vector of m bytes to the root): one piped
   * step of b = m.  gamma = 4 beta, m = 16 MiB, 1 MiB segments: the
   * reduction is the bottleneck, alpha + 1 MiB beta + 16 MiB gamma =
   * 0.0682 s against alpha + 16 MiB (beta + gamma) = 0.0839 s whole. */
  setenv("REDCOLL_SEGMENT_KB", "1024", 1);
  check_case tc = check_case_make(REDCOLL_COLL_REDUCE, REDCOLL_ALGO_LINEAR, 2, (size_t)4 << 20, 0,
                                  CHECK_OP_SUM, 0);
  tc.dtype = REDCOLL_FLOAT32;
  tc.mock.alpha = a;
  tc.mock.beta = be;
  tc.mock.gamma = 4e-9;
  check_result res;
  CHECK(check_run_report(&tc, &res));
  double m = 16.0 * 1048576, want = a + be * 1048576 + 4e-9 * m;
  CHECK_DBL(step_time(m, 1048576, a, be, 4e-9), want);
  CHECK_MSG(res.time > want * (1 - 1e-12) && res.time < want * (1 + 1e-12), "%.17g, want %.17g",
            res.time, want);
  unsetenv("REDCOLL_SEGMENT_KB");
}

/* ---- the transport's segment ------------------------------------------------------ */

/* A transport that suggests pieces (redcoll_transport_info.segment, here
 * the simulator's mock.segment) cuts the vectors of linear's root when the
 * application sets no segment; an application's segment, 0 included, wins;
 * ring stays whole; and AUTO, which prices the pieces, runs linear reduce
 * at p = 2 where its overlap beats elimination, in the time of io.c's
 * formula to the last digit. */
static void transport_segment(void) {
  unsetenv("REDCOLL_SEGMENT_KB");
  const size_t counts[] = {255, 256, 257, 1024, 1};
  const uint64_t msgs[] = {1, 2, 3, 8, 1};
  for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++)
    for (int coll = 0; coll < 2; coll++) {
      /* allreduce: the same cuts to the root, then one message back */
      check_case tc = check_case_make(coll ? REDCOLL_COLL_ALLREDUCE : REDCOLL_COLL_REDUCE,
                                      REDCOLL_ALGO_LINEAR, 2, counts[i], 0, CHECK_OP_SUM, 0);
      tc.mock.segment = 1024;
      check_result res;
      CHECK(check_run_report(&tc, &res));
      CHECK_MSG(res.msgs == msgs[i] + (uint64_t)coll, "coll %d count %zu: %llu messages", coll,
                counts[i], (unsigned long long)res.msgs);
    }
  check_case tc = check_case_make(REDCOLL_COLL_REDUCE, REDCOLL_ALGO_LINEAR, 3, 1024, 2,
                                  CHECK_OP_NONCOMM, 0);
  tc.mock.segment = 1024;
  check_result res;
  CHECK(check_run_report(&tc, &res));
  /* The non-commutative operator's elements are 16 bytes: 16 KiB, 16
   * pieces from each of ranks 0 and 1 to root 2. */
  CHECK_MSG(res.msgs == 32, "p 3: %llu messages", (unsigned long long)res.msgs);
  setenv("REDCOLL_SEGMENT_KB", "0", 1); /* the application's whole messages */
  CHECK(check_run_report(&tc, &res));
  CHECK_MSG(res.msgs == 2, "segment 0 set: %llu messages", (unsigned long long)res.msgs);
  unsetenv("REDCOLL_SEGMENT_KB");
  tc = check_case_make(REDCOLL_COLL_ALLREDUCE, REDCOLL_ALGO_RING, 2, 1024, 0, CHECK_OP_SUM, 0);
  tc.mock.segment = 1024;
  CHECK(check_run_report(&tc, &res));
  CHECK_MSG(res.msgs == 4, "ring: %llu messages", (unsigned long long)res.msgs);

  /* AUTO at p = 2, 16 MiB of float32, TCP's default model and pieces. */
  const double a = 3e-5, be = 1e-9, g = 2.5e-10, m = 16.0 * 1048576;
  for (int k = 0; k < 2; k++) {
    tc = check_case_make(REDCOLL_COLL_REDUCE, k ? REDCOLL_ALGO_ELIMINATION : REDCOLL_ALGO_AUTO, 2,
                         (size_t)4 << 20, 0, CHECK_OP_SUM, 0);
    tc.dtype = REDCOLL_FLOAT32;
    tc.mock.alpha = a;
    tc.mock.beta = be;
    tc.mock.gamma = g;
    tc.mock.segment = (size_t)1 << 20;
    CHECK(check_run_report(&tc, &res));
    if (k == 0) {
      double want = step_time(m, 1048576, a, be, g);
      CHECK_INT(res.algo, REDCOLL_ALGO_LINEAR);
      CHECK_MSG(res.time > want * (1 - 1e-12) && res.time < want * (1 + 1e-12),
                "AUTO: %.17g, want %.17g", res.time, want);
    } else {
      CHECK_MSG(res.time > step_time(m, 1048576, a, be, g) * 1.05, "elimination: %.17g",
                res.time);
    }
  }
}

/* ---- pieces between simulated hosts ---------------------------------------------------- */

/* On the simulator with hosts, a transfer between hosts is matched at once
 * and timed later; its receive must not take a second message meanwhile
 * (the sender's next piece did, and a ring step then met a piece of the
 * wrong length or deadlocked).  Flat ring, and the two-level phases (views
 * that take the communicator's segment, and the transport's), p = 3..8,
 * hosts of 2 and 3 ranks, the non-commutative operator where the algorithm
 * takes it. */
static void hosts(void) {
  for (int seg = 0; seg < 2; seg++)
    for (int rph = 2; rph <= 3; rph++)
      for (int p = 3; p <= 8; p++) {
        const pipe_case cases[] = {
            {REDCOLL_COLL_ALLREDUCE, REDCOLL_ALGO_RING, CHECK_OP_SUM},
            {REDCOLL_COLL_ALLREDUCE, REDCOLL_ALGO_TWO_LEVEL, CHECK_OP_NONCOMM},
            {REDCOLL_COLL_REDUCE, REDCOLL_ALGO_TWO_LEVEL, CHECK_OP_NONCOMM},
            {REDCOLL_COLL_REDUCE_SCATTER_BLOCK, REDCOLL_ALGO_TWO_LEVEL, CHECK_OP_NONCOMM},
        };
        if (seg) small_segments(); /* the application's: every piped step */
        else unsetenv("REDCOLL_SEGMENT_KB");
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
          check_case tc = check_case_make(cases[i].coll, cases[i].algo, p, 1000, 0, cases[i].op, 0);
          tc.mock.ranks_per_host = (uint32_t)rph;
          tc.mock.alpha = 1e-5;
          tc.mock.beta = 1e-9;
          tc.mock.gamma = 1e-10;
          tc.mock.segment = 1024; /* the transport's: linear's root */
          check_result res;
          CHECK_MSG(check_run_report(&tc, &res), "segment %s, %d per host, p %d, case %zu: %s",
                    seg ? "1 KiB" : "unset", rph, p, i, res.error);
        }
      }
  unsetenv("REDCOLL_SEGMENT_KB");
}

/* ---- failure between segments ------------------------------------------------------ */

/* Rank 1 dies at its 5th transport call, in the middle of its piped send
 * to the root: every rank returns an error, nobody hangs. */
static void dies_midway(void) {
  small_segments();
  for (int p = 2; p <= 4; p++) {
    check_case tc = check_case_make(REDCOLL_COLL_REDUCE, REDCOLL_ALGO_LINEAR, p, 4096, 0,
                                    CHECK_OP_SUM, 0);
    tc.dtype = REDCOLL_FLOAT32;
    tc.mock.fail_rank = 1;
    tc.mock.fail_after = 4;
    check_result res;
    check_run(&tc, &res);
    CHECK_MSG(res.status != REDCOLL_OK, "p %d: %s", p, redcoll_status_name(res.status));
    CHECK(!res.ok);
  }
  unsetenv("REDCOLL_SEGMENT_KB");
}

/* ---- the setting ---------------------------------------------------------------------- */

/* arg: the segment a new communicator must start with. */
static int setting_rank(redcoll_comm *c, void *arg) {
  size_t want = *(const size_t *)arg;
  if (redcoll_comm_get_segment(c) != want) return 100;
  if (redcoll_comm_set_segment(c, 4096) != REDCOLL_OK || redcoll_comm_get_segment(c) != 4096)
    return 101;
  redcoll_comm *d = NULL;
  int rc = redcoll_comm_dup(c, &d);
  if (rc != REDCOLL_OK) return rc;
  /* A new communicator starts from the default (or the variable), not
   * from its parent's setting. */
  rc = redcoll_comm_get_segment(d) == want ? REDCOLL_OK : 102;
  redcoll_comm_destroy(d);
  return rc;
}

static int nothing(redcoll_comm *c, void *arg) {
  (void)c, (void)arg;
  return REDCOLL_OK;
}

static void setting(void) {
  unsetenv("REDCOLL_SEGMENT_KB");
  CHECK_INT(redcoll_comm_set_segment(NULL, 1), REDCOLL_EINVAL);
  CHECK_INT(redcoll_comm_get_segment(NULL), 0);
  size_t want = REDCOLL_DEFAULT_SEGMENT;
  CHECK_INT(redcoll_threads_run(2, setting_rank, &want), REDCOLL_OK);
  setenv("REDCOLL_SEGMENT_KB", "8", 1);
  want = 8192;
  CHECK_INT(redcoll_threads_run(2, setting_rank, &want), REDCOLL_OK);
  const char *bad[] = {"-5", " 5", "5k", "1073741825"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    setenv("REDCOLL_SEGMENT_KB", bad[i], 1);
    CHECK_MSG(redcoll_threads_run(2, nothing, NULL) == REDCOLL_EINVAL, "REDCOLL_SEGMENT_KB='%s'",
              bad[i]);
  }
  setenv("REDCOLL_SEGMENT_KB", "0", 1);
  CHECK_INT(redcoll_threads_run(2, nothing, NULL), REDCOLL_OK);
  unsetenv("REDCOLL_SEGMENT_KB");
}

/* ---- over TCP ----------------------------------------------------------------------------- */

#ifdef REDCOLL_TEST_TCP
/* Ring allreduce and linear reduce with 1 KiB segments over TCP and
 * shared memory (posted segments), values checked exactly. */
static int tcp_rank(redcoll_comm *c, void *arg) {
  (void)arg;
  int rank = redcoll_comm_rank(c), p = redcoll_comm_size(c);
  size_t n = 1000003;
  float *in = malloc(n * sizeof *in), *out = malloc(n * sizeof *out);
  if (in == NULL || out == NULL) return REDCOLL_ENOMEM;
  for (size_t i = 0; i < n; i++) in[i] = (float)((size_t)rank + i % 101);
  int rc = REDCOLL_OK;
  const redcoll_algo algos[] = {REDCOLL_ALGO_RING, REDCOLL_ALGO_LINEAR};
  /* First unset: the transport's pieces (TCP's 1 MiB: four, the last
   * shorter, at linear's root; ring whole).  1 KiB pieces: many small
   * messages; 64 KiB ones: pieces that arrive before their receive are
   * kept in buffers the TCP transport reuses (the last piece shorter than
   * the buffer). */
  if (redcoll_comm_get_segment(c) != 0) rc = 199;
  for (int k = -2; k < 4 && rc == REDCOLL_OK; k++) {
    if (k >= 0) redcoll_comm_set_segment(c, k < 2 ? 1024 : 65536);
    redcoll_comm_set_algorithm(c, REDCOLL_COLL_ALLREDUCE, algos[(k + 2) % 2]);
    redcoll_comm_set_algorithm(c, REDCOLL_COLL_REDUCE, algos[(k + 2) % 2]);
    rc = redcoll_allreduce(c, in, out, n, REDCOLL_FLOAT32, REDCOLL_SUM);
    for (size_t i = 0; rc == REDCOLL_OK && i < n; i++)
      if (out[i] != (float)(p * (p - 1) / 2) + (float)p * (float)(i % 101)) rc = 300 + k;
    memset(out, 0, n * sizeof *out);
    if (rc == REDCOLL_OK) rc = redcoll_reduce(c, in, out, n, REDCOLL_FLOAT32, REDCOLL_SUM, p - 1);
    for (size_t i = 0; rc == REDCOLL_OK && rank == p - 1 && i < n; i++)
      if (out[i] != (float)(p * (p - 1) / 2) + (float)p * (float)(i % 101)) rc = 320 + k;
  }
  free(in);
  free(out);
  return rc;
}

/* Over TCP alone, through shared memory (every rank on this host: its
 * sends finish only once received), and mixed (ranks alternate between
 * two fake hosts: shared memory between some, TCP between the others, so
 * one piped step sends over one path and receives over the other). */
static void tcp(void) {
  static const char *hosts[] = {"pipe-a", "pipe-b"};
  for (int mode = 0; mode < 3; mode++)
    for (int p = 2; p <= 4; p++) {
      tcp_run_opts o;
      memset(&o, 0, sizeof o);
      o.shm = mode > 0;
      for (int r = 0; mode == 2 && r < p; r++) o.shm_hosts[r] = hosts[r % 2];
      CHECK_MSG(tcp_run_opts_run(p, tcp_rank, NULL, &o) == 0, "mode %d, p %d", mode, p);
    }
}
#endif

TEST_MAIN(TEST(cuts), TEST(results), TEST(nonblocking), TEST(overlap), TEST(transport_segment),
          TEST(hosts), TEST(dies_midway), TEST(setting)
#ifdef REDCOLL_TEST_TCP
          , TEST(tcp)
#endif
)
