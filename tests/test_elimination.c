/*
 * The elimination family: schedule logic (pairs, eliminated ranks, block
 * boundaries, op lists) as pure functions, then the algorithms under the
 * simulator: rounds, volume and work bounds of issue 3, and correctness for
 * non-commutative and float64 operators, every root of reduce, in place,
 * thresholds and eager limits.  The full 1..300 sweep of the bounds is
 * scripts/sim_sweep.py elimination.
 */
#include "check.h"
#include "algo/elimination/elimination.h"
#include "test.h"

static const redcoll_algo algos[] = {REDCOLL_ALGO_ELIMINATION, REDCOLL_ALGO_ELIMINATION_NONOVERLAP,
                                     REDCOLL_ALGO_ELIMINATION_2TO1};
#define NALGOS 3

static int ceil_log2(int p) {
  int k = 0;
  while ((1 << k) < p) k++;
  return k;
}

/* Ranks the plan of algo eliminates, as a bit set in out (p <= 512). */
static int eliminated_set(redcoll_algo algo, int p, unsigned char *out) {
  int n = 0;
  for (int r = 0; r < p; r++) {
    redcoll__elim_event ev[REDCOLL__ELIM_MAX_EVENTS];
    int nev = redcoll__elim_plan(algo, p, r, ev, REDCOLL__ELIM_MAX_EVENTS);
    out[r] = (unsigned char)redcoll__elim_eliminated(ev, nev);
    n += out[r];
  }
  return n;
}

static void test_plans_examples(void) {
  redcoll__elim_event ev[REDCOLL__ELIM_MAX_EVENTS];
  unsigned char el[512];
  /* p = 7 (the example in elimination.c). */
  int nev = redcoll__elim_plan(REDCOLL_ALGO_ELIMINATION, 7, 0, ev, REDCOLL__ELIM_MAX_EVENTS);
  CHECK_INT(nev, 2);
  CHECK_INT(ev[0].kind, REDCOLL__ELIM_PAIR);
  CHECK_INT(ev[0].rank[1], 1);
  CHECK_INT(ev[1].kind, REDCOLL__ELIM_T32);
  CHECK_INT(ev[1].me, 0);
  CHECK_INT(ev[1].rank[1], 2);
  CHECK_INT(ev[1].rank[2], 5);
  CHECK_INT(ev[1].lo[2], 4);
  CHECK_INT(ev[1].hi[2], 7);
  nev = redcoll__elim_plan(REDCOLL_ALGO_ELIMINATION, 7, 1, ev, REDCOLL__ELIM_MAX_EVENTS);
  CHECK_INT(ev[1].rank[1], 3);
  CHECK_INT(ev[1].rank[2], 6);
  nev = redcoll__elim_plan(REDCOLL_ALGO_ELIMINATION, 7, 4, ev, REDCOLL__ELIM_MAX_EVENTS);
  CHECK_INT(nev, 1);
  CHECK_INT(ev[0].kind, REDCOLL__ELIM_T32);
  CHECK_INT(ev[0].me, 0);
  CHECK_INT(ev[0].rank[1], 5);
  CHECK_INT(ev[0].rank[2], 6);
  /* p = 13: 3-2 steps at levels 0 (10, 11, 12) and 2 ([0,4), [4,8), [8,13)). */
  CHECK_INT(eliminated_set(REDCOLL_ALGO_ELIMINATION, 13, el), 5);
  CHECK(el[0] && el[1] && el[2] && el[3] && el[10] && !el[11] && !el[12] && !el[4]);
  nev = redcoll__elim_plan(REDCOLL_ALGO_ELIMINATION, 13, 12, ev, REDCOLL__ELIM_MAX_EVENTS);
  CHECK_INT(nev, 3);
  CHECK_INT(ev[2].kind, REDCOLL__ELIM_T32);
  CHECK_INT(ev[2].me, 2);
  CHECK_INT(ev[2].level, 2);
  /* 12 is member 3 of [8,13) (members 0..3 = 8, 11, 9, 12), paired with 3 and 7. */
  CHECK_INT(ev[2].rank[0], 3);
  CHECK_INT(ev[2].rank[1], 7);
  nev = redcoll__elim_plan(REDCOLL_ALGO_ELIMINATION, 13, 9, ev, REDCOLL__ELIM_MAX_EVENTS);
  CHECK_INT(ev[1].kind, REDCOLL__ELIM_PAIR);
  CHECK_INT(ev[1].rank[0], 9);
  CHECK_INT(ev[1].rank[1], 12);
  /* 2to1, p = 6: 0 -> 1 and 2 -> 3 first. */
  CHECK_INT(eliminated_set(REDCOLL_ALGO_ELIMINATION_2TO1, 6, el), 2);
  CHECK(el[0] && el[2] && !el[1] && !el[3] && !el[4] && !el[5]);
  /* nonoverlap, p = 13: 3-2 step on (0,1,2), 2-1 steps (3,4) -> (5,6) and
   * (7,8) -> (9,10). */
  CHECK_INT(eliminated_set(REDCOLL_ALGO_ELIMINATION_NONOVERLAP, 13, el), 5);
  CHECK(el[0] && el[3] && el[4] && el[7] && el[8] && !el[5] && !el[11]);
  nev = redcoll__elim_plan(REDCOLL_ALGO_ELIMINATION_NONOVERLAP, 13, 4, ev,
                           REDCOLL__ELIM_MAX_EVENTS);
  CHECK_INT(nev, 2);
  CHECK_INT(ev[1].kind, REDCOLL__ELIM_E21);
  CHECK_INT(ev[1].level, 1);
  CHECK_INT(ev[1].rank[1], 6);
  /* nonoverlap, p = 24 = 3 * 8: three butterfly levels, then one 3-2 step. */
  nev = redcoll__elim_plan(REDCOLL_ALGO_ELIMINATION_NONOVERLAP, 24, 9, ev,
                           REDCOLL__ELIM_MAX_EVENTS);
  CHECK_INT(nev, 4);
  CHECK_INT(ev[3].kind, REDCOLL__ELIM_T32);
  CHECK_INT(ev[3].level, 3);
  CHECK_INT(ev[3].me, 1);
  CHECK_INT(ev[3].rank[0], 1);
  CHECK_INT(ev[3].rank[2], 17);
}

/* For every p and rank: the partners' plans hold the same event (same
 * kind, level, units and member ranks), the eliminated count is p - 2^k and
 * survivors end with exactly floor(log2 p) merge levels. */
static void test_plans_consistent(void) {
  redcoll__elim_event ev[REDCOLL__ELIM_MAX_EVENTS], pv[REDCOLL__ELIM_MAX_EVENTS];
  unsigned char el[512];
  int bad = 0;
  for (int a = 0; a < NALGOS; a++) {
    for (int p = 1; p <= 300; p++) {
      int k = redcoll__elim_levels(p);
      if (eliminated_set(algos[a], p, el) != p - (1 << k)) bad++;
      for (int r = 0; r < p; r++) {
        int nev = redcoll__elim_plan(algos[a], p, r, ev, REDCOLL__ELIM_MAX_EVENTS);
        if (nev < 0) {
          bad++;
          continue;
        }
        if (k > 0 && (nev == 0 || (!el[r] && ev[nev - 1].level != k - 1))) bad++;
        for (int i = 0; i < nev; i++) {
          const redcoll__elim_event *e = &ev[i];
          if (e->rank[e->me] != r || r < e->lo[e->me] || r >= e->hi[e->me]) bad++;
          for (int u = 0; u + 1 < e->nunits; u++)
            if (e->hi[u] != e->lo[u + 1]) bad++; /* neighbours in rank order */
          for (int u = 0; u < e->nunits; u++) {
            if (u == e->me) continue;
            int q = e->rank[u], found = 0;
            int qn = redcoll__elim_plan(algos[a], p, q, pv, REDCOLL__ELIM_MAX_EVENTS);
            for (int t = 0; t < qn; t++) {
              const redcoll__elim_event *f = &pv[t];
              if (f->kind == e->kind && f->level == e->level && f->me == u &&
                  memcmp(f->rank, e->rank, sizeof f->rank) == 0 &&
                  memcmp(f->lo, e->lo, sizeof f->lo) == 0)
                found = 1;
            }
            if (!found) bad++;
          }
        }
      }
    }
  }
  CHECK_INT(bad, 0);
}

static void test_pieces(void) {
  size_t off, len;
  static const size_t want10[4][2] = {{0, 3}, {3, 2}, {5, 3}, {8, 2}};
  for (unsigned j = 0; j < 4; j++) {
    redcoll__elim_piece(10, 2, j, &off, &len);
    CHECK_INT(off, want10[j][0]);
    CHECK_INT(len, want10[j][1]);
  }
  /* 7 elements in 8 pieces: the last one is empty. */
  for (unsigned j = 0; j < 8; j++) {
    redcoll__elim_piece(7, 3, j, &off, &len);
    CHECK_INT(off, j < 7 ? j : 7);
    CHECK_INT(len, j < 7 ? 1 : 0);
  }
  /* Pieces tile the vector and differ by at most one element. */
  int bad = 0;
  for (size_t n = 0; n < 70; n++) {
    for (int lv = 0; lv <= 6; lv++) {
      size_t next = 0, mn = (size_t)-1, mx = 0;
      for (unsigned j = 0; j < (1u << lv); j++) {
        redcoll__elim_piece(n, lv, j, &off, &len);
        if (off != next) bad++;
        next = off + len;
        if (len < mn) mn = len;
        if (len > mx) mx = len;
      }
      if (next != n || mx - mn > 1) bad++;
    }
  }
  CHECK_INT(bad, 0);
  CHECK_INT(redcoll__elim_halving(1000, 8, 8192, 5), 0);
  CHECK_INT(redcoll__elim_halving(2048, 8, 8192, 5), 1);
  CHECK_INT(redcoll__elim_halving(2049, 8, 8192, 5), 2);
  CHECK_INT(redcoll__elim_halving(3, 8, 1, 4), 4);
  CHECK_INT(redcoll__elim_halving(1 << 20, 8, 1, 6), 6);
}

static void test_ops(void) {
  redcoll__elim_event ev[REDCOLL__ELIM_MAX_EVENTS];
  redcoll__elim_op ops[REDCOLL__ELIM_MAX_OPS];
  /* p = 3, no halving: rank 0 is A of the 3-2 step. */
  int nev = redcoll__elim_plan(REDCOLL_ALGO_ELIMINATION, 3, 0, ev, REDCOLL__ELIM_MAX_EVENTS);
  int n = redcoll__elim_ops(ev, nev, 0, 5, REDCOLL_COLL_ALLREDUCE, 0, ops, REDCOLL__ELIM_MAX_OPS);
  CHECK_INT(n, 3);
  CHECK_INT(ops[0].send_to, 1);
  CHECK_INT(ops[0].recv_from, 1);
  CHECK_INT(ops[0].combine, REDCOLL__ELIM_RIGHT);
  CHECK_INT(ops[0].recv_len, 5);
  CHECK_INT(ops[1].send_to, 2);
  CHECK_INT(ops[1].recv_from, -1);
  CHECK_INT(ops[2].recv_from, 1);
  CHECK_INT(ops[2].combine, REDCOLL__ELIM_COPY);
  /* Halving (h = 1), 5 elements: A sends [0,3) to B, gets [3,5); passes it
   * to C; later gets [3,5) from C and [0,3) from B. */
  n = redcoll__elim_ops(ev, nev, 1, 5, REDCOLL_COLL_ALLREDUCE, 0, ops, REDCOLL__ELIM_MAX_OPS);
  CHECK_INT(n, 4);
  CHECK_INT(ops[0].send_off, 0);
  CHECK_INT(ops[0].send_len, 3);
  CHECK_INT(ops[0].recv_off, 3);
  CHECK_INT(ops[0].recv_len, 2);
  CHECK_INT(ops[1].send_to, 2);
  CHECK_INT(ops[1].send_off, 3);
  CHECK_INT(ops[2].recv_from, 2);
  CHECK_INT(ops[2].recv_off, 3);
  CHECK_INT(ops[3].send_to, 1);
  CHECK_INT(ops[3].recv_from, 1);
  CHECK_INT(ops[3].recv_off, 0);
  CHECK_INT(ops[3].recv_len, 3);
  /* C (rank 2) with halving: one forward step, then hi to A and lo from B. */
  nev = redcoll__elim_plan(REDCOLL_ALGO_ELIMINATION, 3, 2, ev, REDCOLL__ELIM_MAX_EVENTS);
  n = redcoll__elim_ops(ev, nev, 1, 5, REDCOLL_COLL_ALLREDUCE, 0, ops, REDCOLL__ELIM_MAX_OPS);
  CHECK_INT(n, 2);
  CHECK_INT(ops[0].send_to, 1);
  CHECK_INT(ops[0].recv_from, 0);
  CHECK_INT(ops[0].combine, REDCOLL__ELIM_LEFT);
  CHECK_INT(ops[1].send_to, 0);
  CHECK_INT(ops[1].recv_from, 1);
  /* Reduce to root 0 (the eliminated A): C sends its half and stops. */
  n = redcoll__elim_ops(ev, nev, 1, 5, REDCOLL_COLL_REDUCE, 0, ops, REDCOLL__ELIM_MAX_OPS);
  CHECK_INT(n, 2);
  CHECK_INT(ops[1].send_to, 0);
  CHECK_INT(ops[1].recv_from, -1);
  /* Reduce to root 1 (B) without halving: C only takes part in the 3-2 step. */
  n = redcoll__elim_ops(ev, nev, 0, 5, REDCOLL_COLL_REDUCE, 1, ops, REDCOLL__ELIM_MAX_OPS);
  CHECK_INT(n, 1);
}

static int run_case(redcoll_coll coll, redcoll_algo algo, int p, size_t count, int root,
                    check_op op, size_t threshold, int in_place, size_t eager, uint64_t seed,
                    check_result *res) {
  check_case tc = check_case_make(coll, algo, p, count, root, op, in_place);
  tc.threshold = threshold;
  tc.mock.eager_limit = eager;
  tc.mock.seed = seed;
  return check_run_report(&tc, res);
}

static const int spread[] = {47, 63, 64, 65, 96, 100, 127, 129, 130, 192, 200, 255, 257, 288, 300};
#define NSPREAD ((int)(sizeof spread / sizeof spread[0]))

/* Rounds with m <= b: ceil(log2 p) + 1, log2 p for powers of two. */
static void test_rounds(void) {
  check_result res;
  for (int a = 0; a < NALGOS; a++) {
    for (int i = 0; i < 40 + NSPREAD; i++) {
      int p = i < 40 ? i + 1 : spread[i - 40];
      if (a > 0 && p > 130) continue;
      int want = ceil_log2(p) + ((p & (p - 1)) != 0);
      CHECK(run_case(REDCOLL_COLL_ALLREDUCE, algos[a], p, 1, 0, CHECK_OP_NONCOMM, 0, 0, 0, 1,
                     &res));
      CHECK_MSG((int)res.rounds == want, "%s p=%d rounds %d want %d", redcoll_algo_name(algos[a]),
                p, (int)res.rounds, want);
    }
  }
}

/* Large m, halving everywhere (threshold 1 byte): time under beta = 1 at most
 * (1 + 1/2^(n+1)) 2m, under gamma = 1 at most (1 + 1/2^(n+1)) m, p = q 2^n,
 * plus one block of rounding. */
static void test_volume(void) {
  static const int ps[] = {3, 5, 6, 7, 12, 13, 15, 24, 40, 100, 127};
  check_result res;
  size_t count = 1000;
  for (int a = 0; a < 2; a++) {
    for (size_t i = 0; i < sizeof ps / sizeof ps[0]; i++) {
      int p = ps[i], n = 0;
      while (((p >> n) & 1) == 0) n++;
      double m = (double)count * 8, f = 1.0 + 1.0 / (double)(2 << n);
      double block = 8.0 * (double)((count + (size_t)redcoll__floor_pow2(p) - 1) /
                                    (size_t)redcoll__floor_pow2(p));
      check_case tc;
      check_case_init(&tc);
      tc.algo = algos[a];
      tc.p = p;
      tc.count = count;
      tc.threshold = 1;
      tc.mock.alpha = 0;
      tc.mock.beta = 1;
      CHECK(check_run(&tc, &res) == 0);
      CHECK_MSG(res.time <= f * 2 * m + block, "%s p=%d beta time %g > %g",
                redcoll_algo_name(algos[a]), p, res.time, f * 2 * m + block);
      tc.mock.beta = 0;
      tc.mock.gamma = 1;
      CHECK(check_run(&tc, &res) == 0);
      CHECK_MSG(res.time <= f * m + block, "%s p=%d gamma time %g > %g",
                redcoll_algo_name(algos[a]), p, res.time, f * m + block);
    }
  }
}

/* Correctness: every algorithm, allreduce and reduce with every root, a
 * non-commutative operator and random float64 sums, halving and not. */
static const int mspread[] = {47, 65, 100, 130};
#define NMSPREAD ((int)(sizeof mspread / sizeof mspread[0]))

static void test_matrix(void) {
  static const size_t counts[] = {1, 5, 37};
  static const size_t thresholds[] = {1, 0}; /* 0: the default (no halving here) */
  check_result res;
  int bad = 0;
  for (int a = 0; a < NALGOS; a++) {
    for (int i = 0; i < 40 + NMSPREAD; i++) {
      int p = i < 40 ? i + 1 : mspread[i - 40];
      for (size_t c = 0; c < 3; c++) {
        for (size_t t = 0; t < 2; t++) {
          check_op op = (c + t) % 2 ? CHECK_OP_SUM_RANDOM : CHECK_OP_NONCOMM;
          bad += !run_case(REDCOLL_COLL_ALLREDUCE, algos[a], p, counts[c], 0, op, thresholds[t],
                           (int)c == 1, 0, 1, &res);
        }
      }
      /* Reduce: every root for p <= 16, a spread of roots above. */
      for (int root = 0; root < p; root += p <= 16 ? 1 : p / 5 + 1) {
        size_t c = (size_t)(root % 3);
        bad += !run_case(REDCOLL_COLL_REDUCE, algos[a], p, counts[c], root,
                         root % 2 ? CHECK_OP_SUM_RANDOM : CHECK_OP_NONCOMM, thresholds[root % 2],
                         root % 4 == 3, 0, 1, &res);
      }
      if (p > 1) /* the last rank, often eliminated */
        bad += !run_case(REDCOLL_COLL_REDUCE, algos[a], p, 37, p - 1, CHECK_OP_NONCOMM, 1, 0, 0,
                         1, &res);
    }
  }
  CHECK_INT(bad, 0);
}

/* Mixed halving (some levels halve, some do not), and seeded runs with an
 * eager limit and without. */
static void test_seeds_eager(void) {
  static const int ps[] = {5, 7, 11, 13, 24, 29, 48};
  check_result res;
  int bad = 0;
  for (int a = 0; a < NALGOS; a++) {
    for (size_t i = 0; i < sizeof ps / sizeof ps[0]; i++) {
      for (uint64_t seed = 1; seed <= 3; seed++) {
        size_t eager = seed == 1 ? 0 : seed == 2 ? 64 : 1 << 20;
        /* 300 float64 with b = 600 bytes: levels 0..2 halve, the rest do not. */
        bad += !run_case(REDCOLL_COLL_ALLREDUCE, algos[a], ps[i], 300, 0, CHECK_OP_SUM, 600, 0,
                         eager, seed, &res);
        bad += !run_case(REDCOLL_COLL_REDUCE, algos[a], ps[i], 150, ps[i] / 2, CHECK_OP_NONCOMM,
                         600, (int)seed == 2, eager, seed, &res);
        bad += !run_case(REDCOLL_COLL_REDUCE, algos[a], ps[i], 150, (int)(seed * 3) % ps[i],
                         CHECK_OP_NONCOMM, 1200, 0, eager, seed, &res);
      }
    }
  }
  CHECK_INT(bad, 0);
}

TEST_MAIN(TEST(test_plans_examples), TEST(test_plans_consistent), TEST(test_pieces), TEST(test_ops), TEST(test_rounds), TEST(test_volume), TEST(test_matrix), TEST(test_seeds_eager))
