/*
 * The correctness matrix of the baseline algorithms on the simulator:
 * p = 1..64, counts 0, 1, p-1, p+1, 1000, in place and not, every root,
 * float64 SUM on integer data compared exactly with a sequential sum, the
 * non-commutative operator compared with the rank-ordered product, random
 * float64 SUM bitwise identical on every rank, and every registered
 * algorithm of every collective run once on a few p.
 */
#include "check.h"
#include "test.h"

static int run_case(check_case *tc) {
  check_result res;
  check_run(tc, &res);
  CHECK_MSG(res.ok, "%s/%s p=%d count=%zu root=%d op=%d in_place=%d: %s",
            redcoll_coll_name(tc->coll), redcoll_algo_name(tc->algo), tc->p, tc->count, tc->root,
            (int)tc->op, tc->in_place, res.error);
  return res.ok;
}

/* Every root for the rooted collectives; both buffer modes; both exact ops. */
static void matrix(redcoll_coll coll, redcoll_algo algo, int pmax) {
  for (int p = 1; p <= pmax; p++) {
    size_t counts[5] = {0, 1, (size_t)p - 1, (size_t)p + 1, 1000};
    for (int ci = 0; ci < 5; ci++) {
      int reduction = coll != REDCOLL_COLL_BCAST;
      for (int op = CHECK_OP_SUM; op <= (reduction ? CHECK_OP_NONCOMM : CHECK_OP_SUM);
           op += CHECK_OP_NONCOMM - CHECK_OP_SUM) {
        for (int ip = 0; ip < 2; ip++) {
          int rooted = coll == REDCOLL_COLL_REDUCE || coll == REDCOLL_COLL_BCAST;
          /* every root for count 1 and p + 1, else the first, middle and last */
          for (int root = 0; root < (rooted ? p : 1); root++) {
            int every = (ci == 1 || ci == 3) && ip == 0;
            if (rooted && !every && root != 0 && root != p - 1 && root != p / 2) continue;
            check_case tc;
            check_case_init(&tc);
            tc.coll = coll;
            tc.algo = algo;
            tc.p = p;
            tc.count = counts[ci];
            tc.root = root;
            tc.op = (check_op)op;
            tc.in_place = ip;
            tc.mock.seed = (uint64_t)(p * 7919 + ci * 31 + root);
            if (!run_case(&tc)) return; /* one report per (coll, algo) is enough */
          }
        }
      }
    }
  }
}

/* Random float64: every rank of an allreduce gets the same bits. */
static void bitwise(redcoll_algo algo) {
  int ps[] = {2, 3, 5, 7, 12, 13, 31, 64};
  for (size_t i = 0; i < sizeof ps / sizeof ps[0]; i++) {
    check_case tc;
    check_case_init(&tc);
    tc.algo = algo;
    tc.p = ps[i];
    tc.count = 257;
    tc.op = CHECK_OP_SUM_RANDOM;
    run_case(&tc);
  }
}

/* Every registered algorithm of every collective, on a few p, with whatever
 * operator it accepts.  Algorithms added later are covered automatically. */
static void every_algorithm(void) {
  static const redcoll_coll colls[] = {
      REDCOLL_COLL_ALLREDUCE,      REDCOLL_COLL_REDUCE,    REDCOLL_COLL_REDUCE_SCATTER_BLOCK,
      REDCOLL_COLL_REDUCE_SCATTER, REDCOLL_COLL_ALLGATHER, REDCOLL_COLL_ALLGATHERV,
      REDCOLL_COLL_BCAST,          REDCOLL_COLL_BARRIER};
  int ps[] = {1, 2, 3, 5, 6, 7, 8, 13};
  for (size_t ci = 0; ci < sizeof colls / sizeof colls[0]; ci++) {
    for (int a = 0; a < REDCOLL_ALGO_COUNT; a++) {
      if (!redcoll_algo_is_supported(colls[ci], (redcoll_algo)a)) continue;
      for (size_t pi = 0; pi < sizeof ps / sizeof ps[0]; pi++) {
        check_case tc;
        check_case_init(&tc);
        tc.coll = colls[ci];
        tc.algo = (redcoll_algo)a;
        tc.p = ps[pi];
        tc.count = 11;
        tc.root = ps[pi] - 1;
        int reduction = colls[ci] <= REDCOLL_COLL_REDUCE_SCATTER;
        tc.op = reduction && redcoll_algo_is_rank_ordered(colls[ci], (redcoll_algo)a)
                    ? CHECK_OP_NONCOMM
                    : CHECK_OP_SUM;
        run_case(&tc);
      }
    }
  }
}

/* A forced algorithm that reorders operands refuses a non-commutative op. */
static void noncomm_refused(void) {
  for (int a = 1; a < REDCOLL_ALGO_COUNT; a++) {
    if (!redcoll_algo_is_supported(REDCOLL_COLL_ALLREDUCE, (redcoll_algo)a)) continue;
    if (redcoll_algo_is_rank_ordered(REDCOLL_COLL_ALLREDUCE, (redcoll_algo)a)) continue;
    check_case tc;
    check_case_init(&tc);
    tc.algo = (redcoll_algo)a;
    tc.p = 5;
    tc.count = 3;
    tc.op = CHECK_OP_NONCOMM;
    check_result res;
    check_run(&tc, &res);
    CHECK_INT(res.status, REDCOLL_ENOTSUP);
  }
}

/* Costs of the baselines in the simulator equal their formulas. */
static void costs(void) {
  for (int p = 2; p <= 40; p++) {
    int L = 0;
    while ((1 << L) < p) L++;
    check_case tc;
    check_case_init(&tc);
    tc.p = p;
    tc.count = 100; /* 800 bytes */
    tc.algo = REDCOLL_ALGO_LINEAR;
    check_result res;
    check_run(&tc, &res);
    CHECK_INT(res.rounds, 2 * (p - 1));
    CHECK_INT(res.max_bytes_recv, 800 * (p - 1));
    CHECK_INT(res.max_bytes_reduced, 800 * (p - 1));
    tc.algo = REDCOLL_ALGO_BINARY_TREE;
    check_run(&tc, &res);
    CHECK_INT(res.rounds, 2 * L);
    CHECK_INT(res.max_bytes_reduced, 800 * L);
    tc.coll = REDCOLL_COLL_REDUCE;
    tc.root = p - 1;
    check_run(&tc, &res);
    CHECK_INT(res.rounds, L); /* the tree is rooted at the root: no forwarding step */
    tc.coll = REDCOLL_COLL_BARRIER;
    tc.algo = REDCOLL_ALGO_DISSEMINATION;
    check_run(&tc, &res);
    CHECK_INT(res.rounds, L);
    CHECK_INT(res.max_bytes_sent, 0);
    /* alpha = 2, beta = 0.5: the binomial bcast takes L (2 + 400) */
    tc.coll = REDCOLL_COLL_BCAST;
    tc.algo = REDCOLL_ALGO_BINARY_TREE;
    tc.root = p / 2;
    tc.mock.alpha = 2;
    tc.mock.beta = 0.5;
    check_run(&tc, &res);
    CHECK_DBL(res.time, L * (2 + 400.0));
  }
}

static void matrix_baselines(void) {
  matrix(REDCOLL_COLL_ALLREDUCE, REDCOLL_ALGO_LINEAR, 64);
  matrix(REDCOLL_COLL_ALLREDUCE, REDCOLL_ALGO_BINARY_TREE, 64);
  matrix(REDCOLL_COLL_REDUCE, REDCOLL_ALGO_LINEAR, 40);
  matrix(REDCOLL_COLL_REDUCE, REDCOLL_ALGO_BINARY_TREE, 64);
  matrix(REDCOLL_COLL_BCAST, REDCOLL_ALGO_BINARY_TREE, 64);
  matrix(REDCOLL_COLL_BCAST, REDCOLL_ALGO_LINEAR, 24);
}

static void bitwise_baselines(void) {
  bitwise(REDCOLL_ALGO_LINEAR);
  bitwise(REDCOLL_ALGO_BINARY_TREE);
}

TEST_MAIN(TEST(matrix_baselines), TEST(bitwise_baselines), TEST(every_algorithm),
          TEST(noncomm_refused), TEST(costs))
