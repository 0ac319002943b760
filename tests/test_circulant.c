/*
 * The circulant-graph collectives (src/core/circulant.c).
 *
 * Unit part: skips and correction terms against the paper's Table II and its
 * p = 9 example (edges 1 1 2 4, the sets B_8^k), and the slot facts the
 * algorithms rest on, for every p up to 1024: each input counted exactly
 * once at the root of the reduce tree, subset sums below p, one path head
 * per rank, pathhead() equal to a brute-force search.
 * Simulator part (tests/oracle/check.c): results of every collective for sampled p
 * with SUM and MAX, in place and not, irregular blocks (zeros, one rank
 * holding everything), every root of reduce and bcast for small p; the round
 * count ceil(log2 p) with alpha = 1 and the exact volumes with beta = 1;
 * gather and scatter (circulant and linear) through the public API, every
 * root for small p; reduce as reduce_scatter + gather (circulant_rsag) with
 * its 2q rounds and volume; ENOTSUP for a non-commutative operator.  The
 * full sweeps (p = 2..1024, the guidelines) are in scripts/sim_sweep.py circulant.
 */
#include <stdlib.h>

#include "check.h"
#include "algo/circulant/circulant.h"
#include "internal.h"
#include "redcoll/mock.h"
#include "test.h"

/* ---- pure functions ------------------------------------------------------ */

static void test_skips_table(void) {
  int s[REDCOLL__CIRC_MAXQ + 1];
  static const int t31[] = {1, 2, 4, 8, 16, 31}, t32[] = {1, 2, 4, 8, 16, 32},
                   t33[] = {1, 2, 3, 5, 9, 17, 33};
  CHECK_INT(redcoll__circ_skips(31, s), 5);
  for (int i = 0; i <= 5; i++) CHECK_INT(s[i], t31[i]);
  CHECK_INT(redcoll__circ_skips(32, s), 5);
  for (int i = 0; i <= 5; i++) CHECK_INT(s[i], t32[i]);
  CHECK_INT(redcoll__circ_skips(33, s), 6);
  for (int i = 0; i <= 6; i++) CHECK_INT(s[i], t33[i]);
  CHECK_INT(redcoll__circ_skips(1, s), 0);
  CHECK_INT(s[0], 1);

  /* p = 9: skips 1 2 3 5 9, edges 1 1 2 4; rank 8 sends to 7 7 6 4. */
  static const int d9[] = {1, 1, 2, 4}, e9[] = {0, 1, 1, 1};
  CHECK_INT(redcoll__circ_skips(9, s), 4);
  for (int k = 0; k < 4; k++) {
    CHECK_INT(redcoll__circ_dist(s, k), d9[k]);
    CHECK_INT(redcoll__circ_eps(s, k), e9[k]);
  }
  /* p = 11 (the paper's figures): edges 1 1 3 5. */
  static const int d11[] = {1, 1, 3, 5};
  CHECK_INT(redcoll__circ_skips(11, s), 4);
  for (int k = 0; k < 4; k++) CHECK_INT(redcoll__circ_dist(s, k), d11[k]);
}

static void test_relative_blocks_p9(void) {
  int s[REDCOLL__CIRC_MAXQ + 1], rel[15];
  int q = redcoll__circ_skips(9, s);
  CHECK_INT(redcoll__circ_relative_blocks(q, s, rel), 15);
  /* B_8^0 .. B_8^3 of the paper, as blocks 8 - rel mod 9. */
  static const int want[] = {7, 6, 4, 0, 2, 5, 1, 3, 7, 5, 1, 3, 6, 2, 4};
  for (int j = 0; j < 15; j++) CHECK_INT((8 - rel[j] + 9) % 9, want[j]);
  CHECK_INT(redcoll__circ_seg_start(q, 1), 8);
  CHECK_INT(redcoll__circ_seg_start(q, 2), 12);
  CHECK_INT(redcoll__circ_seg_start(q, 3), 14);
  CHECK_INT(redcoll__circ_seg_start(q, 4), 15);
}

/* For every p: the facts of circulant.h, by enumerating all 2^q subsets. */
static void test_slots(int pmax) {
  int s[REDCOLL__CIRC_MAXQ + 1];
  int *mult = malloc((size_t)pmax * sizeof *mult), *head = malloc((size_t)pmax * sizeof *head);
  int *hicount = malloc((size_t)pmax * sizeof *hicount), *zero = malloc((size_t)pmax * sizeof *zero);
  int *rel = malloc((size_t)2048 * sizeof *rel);
  int bad = 0;
  for (int p = 2; p <= pmax && bad < 5; p++) {
    int q = redcoll__circ_skips(p, s), sum = 0;
    CHECK_INT(q, redcoll__ceil_log2(p));
    CHECK_INT(s[0], 1);
    CHECK_INT(s[1], 2);
    CHECK_INT(redcoll__circ_eps(s, 0), 0);
    for (int k = 0; k < q; k++) {
      int d = redcoll__circ_dist(s, k);
      CHECK_INT(d, s[k + 1] - s[k]);  /* Lemma 1 */
      if (k > 0 && d < sum) bad++;    /* d_k >= d_0 + ... + d_{k-1} */
      sum += d;
    }
    CHECK_INT(sum, p - 1);
    for (int v = 0; v < p; v++) mult[v] = 0, head[v] = -1, hicount[v] = 0, zero[v] = 0;
    for (unsigned a = 0; a < (1u << q); a++) {
      int t = 0, lo = q;
      for (int k = q - 1; k >= 0; k--) {
        if (a & (1u << k)) t += redcoll__circ_dist(s, k), lo = k;
      }
      if (t >= p) { bad++; continue; }
      if (a == 0 || redcoll__circ_eps(s, lo) == 0) mult[t]++;
      if (a != 0 && lo > head[t]) head[t] = lo;
      if (a != 0 && lo >= 1) hicount[t]++;
      if (a != 0 && lo == 0) zero[t]++;
    }
    for (int v = 0; v < p; v++) {
      int ph = redcoll__circ_pathhead(v, q, s);
      if (mult[v] != 1) bad++;
      if (v > 0 && (ph != head[v] || hicount[v] > 1 || zero[v] > 1)) bad++;
      if (v == 0 && ph != q) bad++;
      /* S type <=> a second slot (min 0) carries the own input */
      if (v > 0 && redcoll__circ_sends_s(v, q, s) != (hicount[v] == 1 && zero[v] == 1)) bad++;
      if (bad) {
        fprintf(stderr, "slots p=%d v=%d: mult %d head %d/%d hi %d zero %d\n", p, v, mult[v], ph,
                head[v], hicount[v], zero[v]);
        break;
      }
    }
    /* relative_blocks: the same subsets, grouped by min, 2^(q-1-k) per round */
    if (q <= 11) {
      CHECK_INT(redcoll__circ_relative_blocks(q, s, rel), (1 << q) - 1);
      for (int k = 0; k < q; k++) {
        for (int j = redcoll__circ_seg_start(q, k); j < redcoll__circ_seg_start(q, k + 1); j++) {
          if (rel[j] < redcoll__circ_dist(s, k) || rel[j] >= p) bad++;
        }
        /* the first block of B^k is r - d_k itself */
        if (rel[redcoll__circ_seg_start(q, k)] != redcoll__circ_dist(s, k)) bad++;
      }
    }
  }
  CHECK_INT(bad, 0);
  free(mult);
  free(head);
  free(hicount);
  free(zero);
  free(rel);
}

/* ---- the simulator -------------------------------------------------------- */

static int sim_failures;

static void sim(redcoll_coll coll, redcoll_algo algo, int p, size_t count, const size_t *counts,
                int root, check_op op, int in_place, check_result *res) {
  check_case tc = check_case_make(coll, algo, p, count, root, op, in_place);
  tc.counts = counts;
  tc.mock.seed = (uint64_t)p * 31 + (uint64_t)root;
  check_run(&tc, res);
  if (!res->ok && sim_failures++ < 10)
    fprintf(stderr, "%s/%s p=%d count=%zu root=%d op=%d in_place=%d: %s\n",
            redcoll_coll_name(coll), redcoll_algo_name(algo), p, count, root, (int)op, in_place,
            res->error);
  CHECK(res->ok);
}

static const int sample_p[] = {2, 3, 4, 5, 6, 7, 8, 9, 11, 12, 13, 16, 17, 31, 33, 63, 64, 100, 127};
#define NSAMPLE ((int)(sizeof sample_p / sizeof sample_p[0]))

/* Results: sum and max, in place and not (count 37), and counts 1 and p-1. */
static void test_results(void) {
  static const redcoll_coll colls[] = {REDCOLL_COLL_ALLREDUCE, REDCOLL_COLL_REDUCE_SCATTER_BLOCK,
                                       REDCOLL_COLL_REDUCE_SCATTER, REDCOLL_COLL_ALLGATHER,
                                       REDCOLL_COLL_ALLGATHERV};
  check_result res;
  for (int i = 0; i < NSAMPLE; i++) {
    int p = sample_p[i];
    if (p > 64) continue;
    size_t cs[3] = {37, 1, (size_t)p - 1};
    for (size_t ci = 0; ci < 3; ci++) {
      for (int op = 0; op < 2; op++) {
        for (int ip = 0; ip < 2; ip++) {
          if (ci > 0 && (op != (int)(ci - 1) || ip != op)) continue;
          check_op o = op ? CHECK_OP_MAX : CHECK_OP_SUM;
          for (size_t c = 0; c < sizeof colls / sizeof colls[0]; c++)
            sim(colls[c], REDCOLL_ALGO_CIRCULANT, p, cs[ci], NULL, 0, o, ip, &res);
          sim(REDCOLL_COLL_ALLREDUCE, REDCOLL_ALGO_CIRCULANT_RSAG, p, cs[ci] * 3 + 1, NULL, 0, o,
              ip, &res);
          int root = (int)((ci * 7 + (size_t)op * 3 + (size_t)ip) % (size_t)p);
          sim(REDCOLL_COLL_REDUCE, REDCOLL_ALGO_CIRCULANT, p, cs[ci], NULL, root, o, ip, &res);
          sim(REDCOLL_COLL_BCAST, REDCOLL_ALGO_CIRCULANT, p, cs[ci], NULL, root, o, 0, &res);
        }
      }
    }
  }
  /* every root of reduce and bcast for the small p */
  for (int p = 2; p <= 17; p++) {
    for (int root = 0; root < p; root++) {
      sim(REDCOLL_COLL_REDUCE, REDCOLL_ALGO_CIRCULANT, p, 5, NULL, root, CHECK_OP_SUM, root & 1,
          &res);
      CHECK_INT(res.rounds, redcoll__ceil_log2(p));
      sim(REDCOLL_COLL_BCAST, REDCOLL_ALGO_CIRCULANT, p, 5, NULL, root, CHECK_OP_SUM, 0, &res);
      CHECK_INT(res.rounds, redcoll__ceil_log2(p));
    }
  }
}

/* Irregular blocks: zeros, one rank holding everything, random sizes. */
static void test_irregular(void) {
  static const int ps[] = {2, 3, 5, 7, 9, 11, 16, 23, 40};
  check_result res;
  for (size_t i = 0; i < sizeof ps / sizeof ps[0]; i++) {
    int p = ps[i];
    size_t *cnt = calloc((size_t)p, sizeof *cnt);
    for (int shape = 0; shape < 4 + (p < 6 ? p : 6); shape++) {
      uint64_t h = (uint64_t)shape * 2654435761u + (uint64_t)p;
      for (int r = 0; r < p; r++) {
        if (shape == 0) cnt[r] = (size_t)(r % 3 == 1 ? 0 : r + 1);   /* zeros in between */
        else if (shape == 1) cnt[r] = r == p - 1 ? 50 : 0;          /* last rank all */
        else if (shape == 2) cnt[r] = r == 0 ? 50 : 0;              /* rank 0 all */
        else if (shape == 3) cnt[r] = (size_t)(p - r);               /* decreasing */
        else cnt[r] = r == shape - 4 ? 17 : (size_t)((h >> (r % 32)) % 4); /* mixed */
      }
      for (int op = 0; op < 2; op++) {
        for (int ip = 0; ip < 2; ip++) {
          check_op o = op ? CHECK_OP_MAX : CHECK_OP_SUM;
          sim(REDCOLL_COLL_REDUCE_SCATTER, REDCOLL_ALGO_CIRCULANT, p, 0, cnt, 0, o, ip, &res);
          CHECK_INT(res.rounds, redcoll__ceil_log2(p));
          sim(REDCOLL_COLL_ALLGATHERV, REDCOLL_ALGO_CIRCULANT, p, 0, cnt, 0, o, ip, &res);
          CHECK_INT(res.rounds, redcoll__ceil_log2(p));
        }
      }
    }
    free(cnt);
  }
}

/* Rounds (alpha = 1) and volumes (beta = 1) for sampled p. */
static void test_costs(void) {
  check_result res;
  for (int i = 0; i < NSAMPLE; i++) {
    int p = sample_p[i], q = redcoll__ceil_log2(p);
    size_t n = 4; /* float64 elements per block */
    uint64_t blk = n * 8, m = blk * (uint64_t)p;
    sim(REDCOLL_COLL_ALLREDUCE, REDCOLL_ALGO_CIRCULANT, p, n * (size_t)p, NULL, 0, CHECK_OP_SUM, 0,
        &res);
    CHECK_INT(res.rounds, q);
    CHECK_INT(res.max_bytes_recv, (uint64_t)q * m);
    CHECK_INT(res.max_bytes_sent, (uint64_t)q * m);
    sim(REDCOLL_COLL_REDUCE, REDCOLL_ALGO_CIRCULANT, p, n * (size_t)p, NULL, p / 2, CHECK_OP_SUM,
        0, &res);
    CHECK_INT(res.rounds, q);
    CHECK_INT(res.max_bytes_recv, (uint64_t)q * m);
    CHECK_INT(res.max_bytes_reduced, (uint64_t)q * m);
    sim(REDCOLL_COLL_REDUCE_SCATTER_BLOCK, REDCOLL_ALGO_CIRCULANT, p, n, NULL, 0, CHECK_OP_SUM, 0,
        &res);
    CHECK_INT(res.rounds, q);
    CHECK_INT(res.max_bytes_sent, ((1u << q) - 1) * blk);
    CHECK_INT(res.max_bytes_recv, ((1u << q) - 1) * blk);
    CHECK(res.max_bytes_reduced <= ((1u << q) - 1) * blk);
    sim(REDCOLL_COLL_ALLGATHER, REDCOLL_ALGO_CIRCULANT, p, n, NULL, 0, CHECK_OP_SUM, 0, &res);
    CHECK_INT(res.rounds, q);
    CHECK_INT(res.max_bytes_sent, (uint64_t)(p - 1) * blk);
    CHECK_INT(res.max_bytes_recv, (uint64_t)(p - 1) * blk);
    sim(REDCOLL_COLL_ALLREDUCE, REDCOLL_ALGO_CIRCULANT_RSAG, p, n * (size_t)p, NULL, 0,
        CHECK_OP_SUM, 0, &res);
    CHECK_INT(res.rounds, 2 * q);
    CHECK_INT(res.max_bytes_recv, ((1u << q) - 1) * blk + (uint64_t)(p - 1) * blk);
  }
}

/* The allreduce keeps S only while a later round sends it: q + q' vectors
 * reduced, q' = (last round with odd skips[k+1]) - 1, 0 if there is none. */
static void test_allreduce_work(void) {
  check_result res;
  for (int i = 0; i < NSAMPLE; i++) {
    int p = sample_p[i], s[REDCOLL__CIRC_MAXQ + 1];
    int q = redcoll__circ_skips(p, s), last = -1;
    for (int k = 0; k < q; k++) {
      if (redcoll__circ_eps(s, k)) last = k;
    }
    uint64_t m = 64 * 8;
    sim(REDCOLL_COLL_ALLREDUCE, REDCOLL_ALGO_CIRCULANT, p, 64, NULL, 0, CHECK_OP_SUM, 0, &res);
    CHECK_INT(res.max_bytes_reduced, (uint64_t)(q + (last > 0 ? last - 1 : 0)) * m);
  }
}

/* Non-commutative operators are refused. */
static void test_noncomm(void) {
  check_result res;
  check_case tc;
  static const redcoll_coll colls[] = {REDCOLL_COLL_ALLREDUCE, REDCOLL_COLL_REDUCE,
                                       REDCOLL_COLL_REDUCE_SCATTER_BLOCK, REDCOLL_COLL_ALLREDUCE,
                                       REDCOLL_COLL_REDUCE};
  for (size_t c = 0; c < 5; c++) {
    check_case_init(&tc);
    tc.coll = colls[c];
    tc.algo = c < 3 ? REDCOLL_ALGO_CIRCULANT : REDCOLL_ALGO_CIRCULANT_RSAG;
    tc.p = 5;
    tc.count = 3;
    tc.op = CHECK_OP_NONCOMM;
    check_run(&tc, &res);
    CHECK_INT(res.status, REDCOLL_ENOTSUP);
  }
  CHECK_INT(redcoll_algo_is_rank_ordered(REDCOLL_COLL_ALLREDUCE, REDCOLL_ALGO_CIRCULANT_RSAG), 0);
  CHECK_INT(redcoll_algo_is_rank_ordered(REDCOLL_COLL_ALLGATHER, REDCOLL_ALGO_CIRCULANT), 1);
}

/* ---- gather and scatter, through the public API ------------------------ */

/* Every root for small p, in place at the root and not; for the circulant
 * algorithm q rounds and the p - 1 other blocks through the root. */
static void rooted(redcoll_coll coll, redcoll_algo algo, int p, int root, size_t n, int ip) {
  check_result res;
  sim(coll, algo, p, n, NULL, root, CHECK_OP_SUM, ip, &res);
  if (algo != REDCOLL_ALGO_CIRCULANT || !res.ok) return;
  CHECK_INT(res.rounds, redcoll__ceil_log2(p));
  CHECK_INT(coll == REDCOLL_COLL_GATHER ? res.max_bytes_recv : res.max_bytes_sent,
            (uint64_t)(p - 1) * n * 8);
}

static void test_rooted(void) {
  /* The linear baselines (src/core/rooted_linear.c). */
  CHECK(redcoll_algo_is_supported(REDCOLL_COLL_GATHER, REDCOLL_ALGO_LINEAR));
  CHECK(redcoll_algo_is_supported(REDCOLL_COLL_SCATTER, REDCOLL_ALGO_LINEAR));
  for (int p = 1; p <= 9; p++) {
    for (int root = 0; root < p; root++) {
      rooted(REDCOLL_COLL_GATHER, REDCOLL_ALGO_LINEAR, p, root, 3, root & 1);
      rooted(REDCOLL_COLL_SCATTER, REDCOLL_ALGO_LINEAR, p, root, 3, root & 1);
    }
  }
  for (int p = 2; p <= 20; p++) {
    for (int root = 0; root < p; root++) {
      rooted(REDCOLL_COLL_GATHER, REDCOLL_ALGO_CIRCULANT, p, root, 3, root % 3 == 1);
      rooted(REDCOLL_COLL_SCATTER, REDCOLL_ALGO_CIRCULANT, p, root, 3, root % 3 == 2);
    }
  }
  static const int ps[] = {33, 64, 100, 129};
  for (size_t i = 0; i < sizeof ps / sizeof ps[0]; i++) {
    int p = ps[i];
    for (int root = 0; root < p; root += p / 3) {
      rooted(REDCOLL_COLL_GATHER, REDCOLL_ALGO_CIRCULANT, p, root, 2, 0);
      rooted(REDCOLL_COLL_SCATTER, REDCOLL_ALGO_CIRCULANT, p, root, 2, 1);
    }
  }
  /* count 0 and the automatic choice */
  check_result res;
  sim(REDCOLL_COLL_GATHER, REDCOLL_ALGO_CIRCULANT, 7, 0, NULL, 3, CHECK_OP_SUM, 0, &res);
  CHECK_INT(res.msgs, 0);
  sim(REDCOLL_COLL_SCATTER, REDCOLL_ALGO_AUTO, 7, 4, NULL, 6, CHECK_OP_SUM, 1, &res);
}

/* ---- reduce as reduce_scatter + gather ---------------------------------- */

/* Every root for small p and counts below, at and above p; the cost: 2q
 * rounds, and the root receives (2^q - 1) + (p - 1) balanced blocks. */
static void test_reduce_rsag(void) {
  check_result res;
  for (int p = 2; p <= 13; p++) {
    for (int root = 0; root < p; root++) {
      /* fewer elements than ranks (empty blocks, also around the wrap past
       * rank p - 1), as many, more */
      size_t cs[3] = {(size_t)p - 1, (size_t)p, (size_t)p * 5 + 3};
      sim(REDCOLL_COLL_REDUCE, REDCOLL_ALGO_CIRCULANT_RSAG, p, cs[root % 3], NULL, root,
          root & 1 ? CHECK_OP_MAX : CHECK_OP_SUM, root % 4 == 0, &res);
      CHECK_INT(res.rounds, 2 * redcoll__ceil_log2(p));
    }
  }
  for (int i = 0; i < NSAMPLE; i++) {
    int p = sample_p[i], q = redcoll__ceil_log2(p);
    size_t n = 4;
    uint64_t blk = n * 8;
    sim(REDCOLL_COLL_REDUCE, REDCOLL_ALGO_CIRCULANT_RSAG, p, n * (size_t)p, NULL, p - 1,
        CHECK_OP_SUM, 0, &res);
    CHECK_INT(res.rounds, 2 * q);
    CHECK_INT(res.max_bytes_recv, ((1u << q) - 1) * blk + (uint64_t)(p - 1) * blk);
    CHECK(res.max_bytes_reduced <= ((1u << q) - 1) * blk); /* S-type slots skip the own input */
  }
}

static void test_slots_1024(void) { test_slots(1024); }
TEST_MAIN(TEST(test_skips_table), TEST(test_relative_blocks_p9), TEST(test_slots_1024), TEST(test_results), TEST(test_irregular), TEST(test_costs), TEST(test_allreduce_work), TEST(test_noncomm), TEST(test_rooted), TEST(test_reduce_rsag))
