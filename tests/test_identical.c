/*
 * The same bits on every rank.  By default (REDCOLL_RESULTS_IDENTICAL)
 * every allreduce gives every rank bitwise identical results, for every
 * floating-point dtype, built-in operator and a commutative user operator,
 * under AUTO and under every algorithm not marked rank-dependent in the
 * registry.  The data are chosen to make rounding visible: random values
 * of mixed magnitudes, and terms that cancel (1e20, 1, -1e20, ...).  With
 * REDCOLL_RESULTS_FAST the one algorithm marked rank-dependent (circulant
 * allreduce) may be chosen, and this test shows that its ranks do differ,
 * so the mark is needed.
 */
#include <stdint.h>
#include <stdlib.h>

#include "internal.h"
#include "redcoll/mock.h"
#include "test.h"

#define MAXP 16
#define COUNT 600

typedef struct job {
  redcoll_algo algo; /* AUTO or forced */
  redcoll_dtype dt;
  const redcoll_op *op;
  int cancel;        /* 1: cancelling terms instead of random ones */
  redcoll_results mode;
  int p;
  unsigned char out[MAXP][COUNT * 8];
  int status[MAXP];
  redcoll_algo ran;
} job;

static uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

/* Element i of rank r as a double: random in +-[2^-20, 2^20], or the
 * cancelling pattern 1e20, 1, -1e20 in turns (scaled for half precision). */
static double value(const job *j, int r, size_t i) {
  uint64_t h = mix((uint64_t)r << 32 ^ i ^ (uint64_t)j->dt << 48);
  if (j->cancel) {
    double big = j->dt == REDCOLL_FLOAT16 ? 1e4 : j->dt == REDCOLL_BFLOAT16 ? 1e30 : 1e20;
    int k = (int)((r + i) % 3);
    return k == 0 ? big : k == 1 ? 1.0 + (double)(h % 7) / 8 : -big;
  }
  double u = (double)(h >> 11) / 9007199254740992.0;
  double scale = (double)((int64_t)1 << (h % 21)) / 1024.0;
  return (h & 1 ? -u : u) * scale;
}

static void store(redcoll_dtype dt, void *dst, double v) {
  switch (dt) {
    case REDCOLL_FLOAT16: { uint16_t h = redcoll__f32_to_f16((float)v); memcpy(dst, &h, 2); break; }
    case REDCOLL_BFLOAT16: { uint16_t h = redcoll__f32_to_bf16((float)v); memcpy(dst, &h, 2); break; }
    case REDCOLL_FLOAT32: { float f = (float)v; memcpy(dst, &f, 4); break; }
    default: memcpy(dst, &v, 8); break;
  }
}

static void user_fsum(void *out, const void *l, const void *r, size_t n, void *ctx) {
  (void)ctx;
  for (size_t i = 0; i < n; i++) {
    double a, b;
    memcpy(&a, (const char *)l + 8 * i, 8);
    memcpy(&b, (const char *)r + 8 * i, 8);
    a += b;
    memcpy((char *)out + 8 * i, &a, 8);
  }
}

static int rank_main(redcoll_comm *c, void *arg) {
  job *j = arg;
  int me = redcoll_comm_rank(c);
  size_t es = j->dt == REDCOLL_CUSTOM ? 8 : redcoll_dtype_size(j->dt);
  unsigned char in[COUNT * 8];
  for (size_t i = 0; i < COUNT; i++)
    store(j->dt == REDCOLL_CUSTOM ? REDCOLL_FLOAT64 : j->dt, in + i * es, value(j, me, i));
  redcoll_comm_set_results(c, j->mode);
  if (j->algo != REDCOLL_ALGO_AUTO) redcoll_comm_set_algorithm(c, REDCOLL_COLL_ALLREDUCE, j->algo);
  j->status[me] = redcoll_allreduce(c, in, j->out[me], COUNT, j->dt, j->op);
  if (me == 0) j->ran = redcoll_comm_last_algorithm(c);
  return REDCOLL_OK;
}

/* Runs the job; returns the number of ranks whose bits differ from rank
 * 0's, or -1 if a call failed. */
static int differing(job *j) {
  redcoll_mock_config cfg;
  redcoll_mock_config_init(&cfg);
  cfg.seed = (uint64_t)j->p * 7 + (uint64_t)j->algo;
  memset(j->out, 0, sizeof j->out);
  if (redcoll_mock_run(j->p, &cfg, rank_main, j, NULL) != REDCOLL_OK) return -1;
  size_t es = j->dt == REDCOLL_CUSTOM ? 8 : redcoll_dtype_size(j->dt);
  int d = 0;
  for (int r = 0; r < j->p; r++) {
    if (j->status[r] != REDCOLL_OK) return -1;
    if (memcmp(j->out[r], j->out[0], COUNT * es) != 0) d++;
  }
  return d;
}

static const redcoll_dtype floats[] = {REDCOLL_FLOAT16, REDCOLL_BFLOAT16, REDCOLL_FLOAT32,
                                       REDCOLL_FLOAT64};

/* AUTO, the default mode: every float dtype and op, p = 2..16, and a
 * commutative user operator.  The simulator's default model (alpha 1)
 * makes AUTO prefer the fewest rounds, where circulant used to win. */
static void auto_identical(const redcoll_op *user) {
  static job j;
  for (int p = 2; p <= MAXP; p++) {
    for (size_t d = 0; d <= sizeof floats / sizeof floats[0]; d++) {
      for (int cancel = 0; cancel <= 1; cancel++) {
        const redcoll_op *ops[] = {REDCOLL_SUM, REDCOLL_MIN, REDCOLL_MAX, REDCOLL_PROD};
        for (int o = 0; o < 4; o++) {
          int custom = d == sizeof floats / sizeof floats[0];
          if (custom && o > 0) break;
          j.algo = REDCOLL_ALGO_AUTO;
          j.dt = custom ? REDCOLL_CUSTOM : floats[d];
          j.op = custom ? user : ops[o];
          j.cancel = cancel;
          j.mode = REDCOLL_RESULTS_IDENTICAL;
          j.p = p;
          int n = differing(&j);
          CHECK_MSG(n == 0, "auto p=%d dtype %s op %d cancel %d: %d ranks differ (ran %s)", p,
                    redcoll_dtype_name(j.dt), o, cancel, n, redcoll_algo_name(j.ran));
          CHECK(j.ran != REDCOLL_ALGO_CIRCULANT);
        }
      }
    }
  }
}

/* Every allreduce algorithm the registry does not mark rank-dependent
 * gives identical bits when forced; the marked one does not (for some p),
 * so the mark is honest. */
static void forced_algorithms(void) {
  static job j;
  for (int a = 1; a < REDCOLL_ALGO_COUNT; a++) {
    const redcoll__algo_entry *e = redcoll__algo_find(REDCOLL_COLL_ALLREDUCE, (redcoll_algo)a);
    if (e == NULL) continue;
    int marked = (e->flags & REDCOLL__RANK_DEPENDENT) != 0, seen = 0;
    CHECK_INT(redcoll_algo_is_rank_identical(REDCOLL_COLL_ALLREDUCE, (redcoll_algo)a), !marked);
    for (int p = 2; p <= MAXP; p++) {
      for (size_t d = 0; d < sizeof floats / sizeof floats[0]; d++) {
        j.algo = (redcoll_algo)a;
        j.dt = floats[d];
        j.op = REDCOLL_SUM;
        j.cancel = 0;
        j.mode = REDCOLL_RESULTS_IDENTICAL;
        j.p = p;
        int n = differing(&j);
        CHECK_MSG(n >= 0, "%s p=%d: a call failed", redcoll_algo_name(j.algo), p);
        if (!marked)
          CHECK_MSG(n == 0, "%s p=%d dtype %s: %d ranks differ", redcoll_algo_name(j.algo), p,
                    redcoll_dtype_name(j.dt), n);
        if (n > 0) seen++;
      }
    }
    if (marked) CHECK_MSG(seen > 0, "%s is marked rank-dependent but never differed",
                          redcoll_algo_name((redcoll_algo)a));
  }
}

/* The case outside testers reported: p = 5, 1000 random doubles under the
 * default mode gave 4 of 5 ranks other bits than rank 0.  Now: identical;
 * with REDCOLL_RESULTS_FAST AUTO may take circulant again and does here. */
static void reported_case(void) {
  static job j;
  j.algo = REDCOLL_ALGO_AUTO;
  j.dt = REDCOLL_FLOAT64;
  j.op = REDCOLL_SUM;
  j.p = 5;
  j.mode = REDCOLL_RESULTS_IDENTICAL;
  CHECK_INT(differing(&j), 0);
  j.mode = REDCOLL_RESULTS_FAST;
  int n = differing(&j);
  CHECK_INT(j.ran, REDCOLL_ALGO_CIRCULANT);
  CHECK(n > 0);
  /* Integers are exact in any order: AUTO keeps circulant for them in the
   * default mode. */
  j.dt = REDCOLL_INT64;
  j.mode = REDCOLL_RESULTS_IDENTICAL;
  CHECK_INT(differing(&j), 0);
  CHECK_INT(j.ran, REDCOLL_ALGO_CIRCULANT);
}

static void auto_every_dtype_and_op(void) {
  redcoll_op *user = NULL;
  CHECK_INT(redcoll_op_create(user_fsum, 8, 1, NULL, &user), REDCOLL_OK);
  auto_identical(user);
  redcoll_op_destroy(user);
}

TEST_MAIN(TEST(auto_every_dtype_and_op), TEST(forced_algorithms), TEST(reported_case))
