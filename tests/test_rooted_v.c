/*
 * gatherv and scatterv against the expected image of the root's recvbuf
 * (gatherv) or every rank's (scatterv), tests/oracle: binary_tree, linear
 * and AUTO, p = 1..33, every root up to p = 12 and three above, counts 0,
 * 1, p+1 and 17 in three layouts (end to end; uneven with zeros, in reverse
 * rank order with gaps; very uneven), in place at the root and not, on the
 * simulator and on threads; the binomial tree's arithmetic; rounds and
 * volumes of docs/algorithms/rooted_v.md; the argument checks.  Also
 * allgatherv_displs (every rank's image, the same layouts, in place or
 * not) and its ring's rounds and volume.
 */
#include "check.h"
#include "redcoll/threads.h"
#include "test.h"
#include "algo/basic/binomial_v.h"

static void matrix(int threads) {
  static const redcoll_coll colls[] = {REDCOLL_COLL_GATHERV, REDCOLL_COLL_SCATTERV};
  static const redcoll_algo algos[] = {REDCOLL_ALGO_AUTO, REDCOLL_ALGO_BINARY_TREE,
                                       REDCOLL_ALGO_LINEAR};
  for (int p = 1; p <= 33; p++) {
    size_t counts[] = {0, 1, (size_t)p + 1, 17};
    for (int root = 0; root < p; root++) {
      if (p > 12 && root != 0 && root != p / 2 && root != p - 1) continue;
      for (int ci = 0; ci < 2; ci++)
        for (int ai = 0; ai < 3; ai++)
          for (size_t k = 0; k < 4; k++)
            for (int x = 0; x < 6; x++) {
              if (threads && x % 3 != (int)k % 3) continue; /* threads: a third */
              check_case tc = check_case_make(colls[ci], algos[ai], p, counts[k], root,
                                              CHECK_OP_SUM, x & 1);
              tc.irregular = x / 2;
              tc.threads = threads;
              tc.dtype = (x & 1) ? REDCOLL_UINT8 : REDCOLL_INT32;
              check_result res;
              CHECK(check_run_report(&tc, &res));
            }
    }
  }
}

static void matrix_sim(void) { matrix(0); }
static void matrix_threads(void) { matrix(1); }

/* Every virtual rank but the root has a parent whose subtree holds its
 * own; the root's children's subtrees tile [1, p). */
static void tree(void) {
  for (int p = 1; p <= 300; p++) {
    CHECK_INT(redcoll__binom_end(p, 0), p);
    for (int v = 1; v < p; v++) {
      int u = redcoll__binom_parent(v);
      CHECK(u < v && redcoll__binom_end(p, u) >= redcoll__binom_end(p, v));
      CHECK_INT(v + (v & -v) >= p ? p : v + (v & -v), redcoll__binom_end(p, v));
    }
    int at = 1, depth = 0;
    for (int m = 1; m < p; m <<= 1, depth++) {
      CHECK_INT(redcoll__binom_end(p, m) - m, (m + m < p ? m : p - m));
      at = redcoll__binom_end(p, m);
    }
    CHECK_INT(at, p > 1 ? p : 1);
    int q = 0;
    while ((1 << q) < p) q++;
    CHECK_INT(depth, q);
  }
}

/* Rounds (alpha = 1): ceil(log2 p); the root receives (sends) all blocks
 * but its own, and nobody more. */
static void costs(void) {
  for (int p = 2; p <= 40; p++) {
    int q = 0;
    while ((1 << q) < p) q++;
    for (int ci = 0; ci < 2; ci++) {
      for (int ir = 0; ir < 3; ir++) {
        int root = p / 3;
        check_case tc = check_case_make(ci ? REDCOLL_COLL_SCATTERV : REDCOLL_COLL_GATHERV,
                                        REDCOLL_ALGO_BINARY_TREE, p, 5, root, CHECK_OP_SUM, 0);
        tc.irregular = ir;
        uint64_t all = 0; /* rank i's block: pair (i, root) or (root, i) */
        for (int i = 0; i < p; i++)
          all += (ci ? check_pair_count(&tc, root, i) : check_pair_count(&tc, i, root)) * 8;
        uint64_t own = check_pair_count(&tc, root, root) * 8;
        check_result res;
        CHECK(check_run_report(&tc, &res));
        if (ir == 0) CHECK_INT(res.rounds, q); /* with empty blocks, fewer */
        CHECK(res.rounds <= (uint64_t)q);
        if (ci) CHECK_INT(res.max_bytes_sent, all - own);
        else CHECK_INT(res.max_bytes_recv, all - own);
      }
    }
  }
}

/* Argument checks every rank answers alike (displs are the root's alone,
 * so a bad displs is checked on one rank). */
static int bad_args(redcoll_comm *c, void *arg) {
  (void)arg;
  int p = redcoll_comm_size(c), bad = 0;
  double s[64] = {0}, r[64] = {0};
  size_t cnt[4] = {2, 2, 2, 2}, dsp[4] = {6, 4, 2, 0}, far[4] = {SIZE_MAX - 1, 0, 0, 0};
  bad |= redcoll_gatherv(c, s, 3, r, cnt, dsp, REDCOLL_FLOAT64, 0) != REDCOLL_EINVAL;
  bad |= redcoll_gatherv(c, s, 2, r, NULL, dsp, REDCOLL_FLOAT64, 0) != REDCOLL_EINVAL;
  bad |= redcoll_scatterv(c, s, cnt, dsp, r, 1, REDCOLL_FLOAT64, 0) != REDCOLL_EINVAL;
  bad |= redcoll_scatterv(c, s, cnt, dsp, r, 2, REDCOLL_FLOAT64, p) != REDCOLL_EINVAL;
  bad |= redcoll_scatterv(c, s, cnt, dsp, (void *)REDCOLL_IN_PLACE, 2, REDCOLL_FLOAT64, -1) !=
         REDCOLL_EINVAL;
  if (p == 1) {
    bad |= redcoll_gatherv(c, s, 2, r, cnt, NULL, REDCOLL_FLOAT64, 0) != REDCOLL_EINVAL;
    bad |= redcoll_scatterv(c, s, cnt, far, r, 2, REDCOLL_FLOAT64, 0) != REDCOLL_EINVAL;
    bad |= redcoll_gatherv(c, r + 6, 2, r, cnt, dsp, REDCOLL_FLOAT64, 0) != REDCOLL_OK; /* in place */
    bad |= redcoll_gatherv(c, r + 5, 2, r, cnt, dsp, REDCOLL_FLOAT64, 0) != REDCOLL_EINVAL;
  }
  /* and the communicator still works */
  bad |= redcoll_gatherv(c, s, 2, r, cnt, dsp, REDCOLL_FLOAT64, p - 1) != REDCOLL_OK;
  return bad ? REDCOLL_EPROTO : REDCOLL_OK;
}

static void args(void) {
  for (int p = 1; p <= 4; p++) CHECK_INT(redcoll_mock_run(p, NULL, bad_args, NULL, NULL), REDCOLL_OK);
}

static void allgatherv_displs(void) {
  for (int threads = 0; threads < 2; threads++)
    for (int p = 1; p <= 33; p++)
      for (int x = 0; x < 6; x++) {
        check_case tc = check_case_make(REDCOLL_COLL_ALLGATHERV_DISPLS, REDCOLL_ALGO_AUTO, p,
                                        x < 4 ? 5 : 0, 0, CHECK_OP_SUM, x & 1);
        tc.irregular = x / 2;
        tc.threads = threads;
        check_result res;
        CHECK(check_run_report(&tc, &res));
        if (threads || x >= 2 || p < 2) continue;
        CHECK_INT(res.rounds, p - 1);
        CHECK_INT(res.max_bytes_sent, (uint64_t)(p - 1) * 5 * 8);
        CHECK_INT(res.max_bytes_recv, (uint64_t)(p - 1) * 5 * 8);
      }
}

TEST_MAIN(TEST(matrix_sim), TEST(matrix_threads), TEST(tree), TEST(costs), TEST(args),
          TEST(allgatherv_displs))
