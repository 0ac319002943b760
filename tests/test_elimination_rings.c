/*
 * elimination_rings (src/core/elimination_rings.c): the stage plan as a pure
 * function, then the algorithm under the simulator: ceil(log2 p) rounds for
 * p = 3 2^n and 9 2^n, never more rounds than elimination, the volume and
 * work of the halving stages, and correctness for non-commutative and
 * random float64 operators, every root of reduce for small p, thresholds
 * that halve everywhere, nowhere and in between, seeds and eager limits.
 * Every p of 1..130 with every root is scripts/sim_sweep.py elimination.
 */
#include "check.h"
#include "algo/elimination/elimination.h"
#include "test.h"

static int ceil_log2(int p) {
  int k = 0;
  while ((1 << k) < p) k++;
  return k;
}

static void test_plan(void) {
  redcoll__rings_plan pl;
  CHECK_INT(redcoll__rings_plan_for(0, &pl), -1);
  CHECK_INT(redcoll__rings_plan_for(1, &pl), 0);
  CHECK_INT(pl.nstages, 0);
  CHECK_INT(pl.q, 1);
  /* 12 = 2 2 3: two butterflies, one ring, no elimination, 4 rounds. */
  CHECK_INT(redcoll__rings_plan_for(12, &pl), 4);
  CHECK_INT(pl.nstages, 3);
  CHECK(pl.radix[0] == 2 && pl.radix[1] == 2 && pl.radix[2] == 3);
  CHECK_INT(pl.unit, 12);
  CHECK_INT(pl.q, 1);
  /* 18 = 2 3 3: 5 rounds. */
  CHECK_INT(redcoll__rings_plan_for(18, &pl), 5);
  CHECK(pl.nstages == 3 && pl.radix[0] == 2 && pl.radix[1] == 3 && pl.radix[2] == 3);
  /* 15: a ring of 3 then the elimination of 5 (6 rounds) loses against the
   * elimination of 15 (5 rounds). */
  CHECK_INT(redcoll__rings_plan_for(15, &pl), 5);
  CHECK_INT(pl.nstages, 0);
  CHECK_INT(pl.q, 15);
  /* 45: one ring, then the elimination of 15: 2 + 5 = 7 (elimination 7,
   * two rings and the elimination of 5: 8). */
  CHECK_INT(redcoll__rings_plan_for(45, &pl), 7);
  CHECK(pl.nstages == 1 && pl.radix[0] == 3 && pl.q == 15);
  /* 27: three rings tie with the elimination (6); rings win ties. */
  CHECK_INT(redcoll__rings_plan_for(27, &pl), 6);
  CHECK(pl.nstages == 3 && pl.q == 1);
  /* 20 = 4 5: two butterflies and the elimination of 5: 2 + 4 = 6. */
  CHECK_INT(redcoll__rings_plan_for(20, &pl), 6);
  CHECK(pl.nstages == 2 && pl.unit == 4 && pl.q == 5);
  /* 3 2^n and 9 2^n: ceil(log2 p); every p: no more than elimination, the
   * stages multiply up to p, the units left are odd. */
  for (int n = 0; n <= 12; n++) {
    CHECK_INT(redcoll__rings_plan_for(3 << n, &pl), ceil_log2(3 << n));
    CHECK_INT(redcoll__rings_plan_for(9 << n, &pl), ceil_log2(9 << n));
  }
  int bad = 0;
  for (int p = 1; p <= 5000; p++) {
    int r = redcoll__rings_plan_for(p, &pl), prod = 1;
    for (int t = 0; t < pl.nstages; t++) {
      bad += pl.radix[t] != 2 && pl.radix[t] != 3;
      bad += t > 0 && pl.radix[t] < pl.radix[t - 1]; /* butterflies first */
      prod *= pl.radix[t];
    }
    bad += prod != pl.unit || pl.unit * pl.q != p || (pl.q & 1) == 0;
    bad += r > redcoll__elim_small_rounds(p) || r < ceil_log2(p);
  }
  CHECK_INT(bad, 0);
  CHECK_INT(redcoll__elim_small_rounds(1), 0);
  CHECK_INT(redcoll__elim_small_rounds(8), 3);
  CHECK_INT(redcoll__elim_small_rounds(9), 5);
}

static int run_case(redcoll_coll coll, int p, size_t count, int root, check_op op,
                    size_t threshold, int in_place, size_t eager, uint64_t seed,
                    check_result *res) {
  check_case tc =
      check_case_make(coll, REDCOLL_ALGO_ELIMINATION_RINGS, p, count, root, op, in_place);
  tc.threshold = threshold;
  tc.mock.eager_limit = eager;
  tc.mock.seed = seed;
  return check_run_report(&tc, res);
}

/* m <= b: the plan's rounds, exactly; ceil(log2 p) for 3 2^n and 9 2^n. */
static void test_rounds(void) {
  static const int ps[] = {3, 6, 12, 24, 48, 96, 9, 18, 36, 72, 144, 288};
  check_result res;
  redcoll__rings_plan pl;
  for (size_t i = 0; i < sizeof ps / sizeof ps[0]; i++) {
    CHECK(run_case(REDCOLL_COLL_ALLREDUCE, ps[i], 1, 0, CHECK_OP_NONCOMM, 0, 0, 0, 1, &res));
    CHECK_MSG((int)res.rounds == ceil_log2(ps[i]), "p=%d rounds %d want %d", ps[i],
              (int)res.rounds, ceil_log2(ps[i]));
  }
  for (int p = 1; p <= 40; p++) {
    CHECK(run_case(REDCOLL_COLL_ALLREDUCE, p, 3, 0, CHECK_OP_NONCOMM, 0, 0, 0, 1, &res));
    CHECK_MSG((int)res.rounds == redcoll__rings_plan_for(p, &pl), "p=%d rounds %d want %d", p,
              (int)res.rounds, pl.rounds);
  }
  /* Reduce to the last rank of 24: the same 5 rounds (the gather is empty
   * without halving). */
  CHECK(run_case(REDCOLL_COLL_REDUCE, 24, 1, 23, CHECK_OP_NONCOMM, 0, 0, 0, 1, &res));
  CHECK_INT((int)res.rounds, 5);
}

/* Halving everywhere (threshold 1 byte), U = 2^n 3^a' the product of the
 * stage radices: time under beta = 1 is 2 (1 - 1/U) m, plus 3 m/U for an
 * elimination stage; under gamma = 1 half that; one block of rounding. */
static void test_volume(void) {
  static const int ps[] = {3, 6, 9, 12, 18, 24, 36, 45, 7, 15, 20};
  check_result res;
  redcoll__rings_plan pl;
  size_t count = 8640;
  for (size_t i = 0; i < sizeof ps / sizeof ps[0]; i++) {
    int p = ps[i];
    redcoll__rings_plan_for(p, &pl);
    double m = (double)count * 8, U = pl.unit;
    double want = 2 * (1 - 1 / U) * m + (pl.q > 1 ? 3 * m / U : 0);
    double block = 8.0 * (double)((count + (size_t)p - 1) / (size_t)p);
    check_case tc;
    check_case_init(&tc);
    tc.algo = REDCOLL_ALGO_ELIMINATION_RINGS;
    tc.p = p;
    tc.count = count;
    tc.threshold = 1;
    tc.mock.alpha = 0;
    tc.mock.beta = 1;
    CHECK(check_run(&tc, &res) == 0 && res.ok);
    CHECK_MSG(res.time <= want + block, "p=%d beta time %g > %g", p, res.time, want + block);
    /* 3 2^n and 9 2^n, where U divides the count: exactly 2 (1 - 1/p) m. */
    if (pl.q == 1) CHECK_DBL(res.time, 2 * (p - 1) * m / p);
    tc.mock.beta = 0;
    tc.mock.gamma = 1;
    CHECK(check_run(&tc, &res) == 0 && res.ok);
    CHECK_MSG(res.time <= want / 2 + block, "p=%d gamma time %g > %g", p, res.time,
              want / 2 + block);
    if (pl.q == 1) CHECK_DBL(res.time, (p - 1) * m / p);
  }
}

/* Correctness: allreduce and reduce, non-commutative and random float64,
 * halving everywhere and nowhere, counts smaller than the ring (empty
 * blocks), in place. */
static const int spread[] = {45, 47, 48, 54, 63, 64, 72, 81, 96, 100, 108, 127, 130};
#define NSPREAD ((int)(sizeof spread / sizeof spread[0]))

static void test_matrix(void) {
  static const size_t counts[] = {1, 5, 37};
  static const size_t thresholds[] = {1, 0}; /* 0: the default (no halving here) */
  check_result res;
  int bad = 0;
  for (int i = 0; i < 40 + NSPREAD; i++) {
    int p = i < 40 ? i + 1 : spread[i - 40];
    for (size_t c = 0; c < 3; c++) {
      for (size_t t = 0; t < 2; t++) {
        check_op op = (c + t) % 2 ? CHECK_OP_SUM_RANDOM : CHECK_OP_NONCOMM;
        bad += !run_case(REDCOLL_COLL_ALLREDUCE, p, counts[c], 0, op, thresholds[t], (int)c == 1,
                         0, 1, &res);
      }
    }
    /* Reduce: every root for p <= 18, a spread of roots above. */
    for (int root = 0; root < p; root += p <= 18 ? 1 : p / 5 + 1) {
      size_t c = (size_t)(root % 3);
      bad += !run_case(REDCOLL_COLL_REDUCE, p, counts[c], root,
                       root % 2 ? CHECK_OP_SUM_RANDOM : CHECK_OP_NONCOMM, thresholds[root % 2],
                       root % 4 == 3, 0, 1, &res);
    }
    if (p > 1)
      bad += !run_case(REDCOLL_COLL_REDUCE, p, 37, p - 1, CHECK_OP_NONCOMM, 1, 0, 0, 1, &res);
  }
  CHECK_INT(bad, 0);
}

/* Mixed halving: 300 float64 with b = 600 bytes halves while the piece is
 * above 75 elements (the butterflies and the first ring of 36 and 72, the
 * first levels of the elimination of 5, 7, 15), then exchanges whole
 * pieces; seeded runs with eager limits 0, 64 bytes and 1 MiB. */
static void test_seeds_eager(void) {
  static const int ps[] = {5, 12, 15, 18, 36, 45, 72};
  check_result res;
  int bad = 0;
  for (size_t i = 0; i < sizeof ps / sizeof ps[0]; i++) {
    for (uint64_t seed = 1; seed <= 3; seed++) {
      size_t eager = seed == 1 ? 0 : seed == 2 ? 64 : 1 << 20;
      bad += !run_case(REDCOLL_COLL_ALLREDUCE, ps[i], 300, 0, CHECK_OP_SUM_RANDOM, 600, 0, eager,
                       seed, &res);
      bad += !run_case(REDCOLL_COLL_REDUCE, ps[i], 150, ps[i] / 2, CHECK_OP_NONCOMM, 600,
                       (int)seed == 2, eager, seed, &res);
      bad += !run_case(REDCOLL_COLL_REDUCE, ps[i], 150, (int)(seed * 7) % ps[i], CHECK_OP_NONCOMM,
                       1200, 0, eager, seed, &res);
    }
  }
  CHECK_INT(bad, 0);
}

TEST_MAIN(TEST(test_plan), TEST(test_rounds), TEST(test_volume), TEST(test_matrix), TEST(test_seeds_eager))
