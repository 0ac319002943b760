/*
 * Rabenseifner's reduction family: binary_tree, recursive_doubling,
 * halving_doubling, binary_blocks, ring.
 *  1. schedule unit tests: halving ranges, removed ranks and partners, the
 *     root swap, the order-keeping reduction tree, binomial gather roles,
 *     binary block decomposition, chunks;
 *  2. the correctness matrix on the simulator (eager limit 0, rendezvous):
 *     sampled p, every root for small p and sampled roots beyond, counts
 *     down to 1 and below p, in place and not, sum and the non-commutative
 *     operator where accepted; the commutative-only ring must refuse it;
 *  3. costs: rounds (alpha=1), volume (beta=1) and reduction work (gamma=1)
 *     equal the paper's formulas on sampled p (the full sweep p = 2..130 is
 *     scripts/sim_sweep.py rabenseifner costs).
 */
#include <math.h>

#include "check.h"
#include "algo/rabenseifner/rabenseifner.h"
#include "test.h"

/* ---- 1. schedules --------------------------------------------------------- */

static void test_ranges(void) {
  CHECK_INT(redcoll__rab_mid(0, 10), 5);
  CHECK_INT(redcoll__rab_mid(0, 7), 4);
  CHECK_INT(redcoll__rab_mid(3, 4), 4);
  CHECK_INT(redcoll__rab_mid(3, 3), 3);
  /* n = 10 in 8 pieces: bit 0 halves first: [0,5) [5,10); bit 1: ... */
  size_t lo, hi;
  redcoll__rab_range(10, 1, 1, &lo, &hi);
  CHECK_INT(lo, 5);
  CHECK_INT(hi, 10);
  redcoll__rab_range(10, 3, 0, &lo, &hi); /* [0,5) -> [0,3) -> [0,2) */
  CHECK_INT(lo, 0);
  CHECK_INT(hi, 2);
  redcoll__rab_range(10, 3, 6, &lo, &hi); /* bits 0,1,1: [0,5) -> [3,5) -> [4,5) */
  CHECK_INT(lo, 4);
  CHECK_INT(hi, 5);
  redcoll__rab_range(10, 3, 7, &lo, &hi); /* [5,10) -> [8,10) -> [9,10) */
  CHECK_INT(lo, 9);
  CHECK_INT(hi, 10);
  /* Every depth partitions [0, n) into pieces that differ by at most one,
   * and a piece of depth t+1 lies in its parent of depth t. */
  static const size_t ns[] = {0, 1, 2, 3, 7, 8, 100, 1001};
  for (size_t a = 0; a < sizeof ns / sizeof ns[0]; a++) {
    size_t n = ns[a];
    for (int depth = 0; depth <= 6; depth++) {
      int k = 1 << depth;
      size_t covered = 0, mn = (size_t)-1, mx = 0;
      for (int i = 0; i < k; i++) {
        /* the piece starting at `covered` must be some rank's piece */
        int found = 0;
        for (int j = 0; j < k; j++) {
          redcoll__rab_range(n, depth, j, &lo, &hi);
          if (lo == covered && hi > lo) {
            found = 1;
            covered = hi;
            break;
          }
        }
        if (!found) break;
      }
      CHECK_MSG(covered == n, "n %zu depth %d covered %zu", n, depth, covered);
      for (int j = 0; j < k; j++) {
        size_t plo, phi;
        redcoll__rab_range(n, depth, j, &lo, &hi);
        if (hi - lo < mn) mn = hi - lo;
        if (hi - lo > mx) mx = hi - lo;
        if (depth > 0) {
          redcoll__rab_range(n, depth - 1, j, &plo, &phi);
          CHECK(plo <= lo && hi <= phi);
        }
      }
      CHECK_MSG(mx - mn <= 1, "n %zu depth %d sizes %zu..%zu", n, depth, mn, mx);
    }
  }
}

static void test_removed_ranks(void) {
  /* p = 13: pp = 8, r = 5; pairs (0,1) .. (8,9); 10, 11, 12 -> 5, 6, 7. */
  static const int newr[13] = {0, -1, 1, -1, 2, -1, 3, -1, 4, -1, 5, 6, 7};
  for (int rank = 0; rank < 13; rank++) {
    CHECK_INT(redcoll__rab_newrank(13, rank, -1), newr[rank]);
    CHECK_INT(redcoll__rab_first_partner(13, rank), rank < 10 ? (rank ^ 1) : -1);
  }
  for (int j = 0; j < 8; j++) {
    int old = redcoll__rab_oldrank(13, j, -1);
    CHECK_INT(newr[old], j);
  }
  /* Powers of two remove nobody. */
  for (int rank = 0; rank < 16; rank++) {
    CHECK_INT(redcoll__rab_newrank(16, rank, -1), rank);
    CHECK_INT(redcoll__rab_oldrank(16, rank, -1), rank);
    CHECK_INT(redcoll__rab_first_partner(16, rank), -1);
  }
  /* p = 3: pair (0,1), rank 2 -> new rank 1. */
  CHECK_INT(redcoll__rab_newrank(3, 2, -1), 1);
  CHECK_INT(redcoll__rab_oldrank(3, 1, -1), 2);
  CHECK_INT(redcoll__rab_first_partner(3, 2), -1);
}

static void test_root_swap(void) {
  /* Reduce on p = 13: an odd root below 2r = 10 swaps with its partner. */
  CHECK_INT(redcoll__rab_swap_pair(13, 7), 3);
  CHECK_INT(redcoll__rab_swap_pair(13, 1), 0);
  CHECK_INT(redcoll__rab_swap_pair(13, 9), 4);
  CHECK_INT(redcoll__rab_swap_pair(13, 6), -1);  /* even: survives anyway */
  CHECK_INT(redcoll__rab_swap_pair(13, 11), -1); /* not in a pair */
  CHECK_INT(redcoll__rab_swap_pair(13, -1), -1); /* allreduce */
  CHECK_INT(redcoll__rab_swap_pair(16, 3), -1);  /* power of two */
  int sw = redcoll__rab_swap_pair(13, 7);
  CHECK_INT(redcoll__rab_newrank(13, 7, sw), 3);
  CHECK_INT(redcoll__rab_newrank(13, 6, sw), -1);
  CHECK_INT(redcoll__rab_oldrank(13, 3, sw), 7);
  CHECK_INT(redcoll__rab_newrank(13, 4, sw), 2); /* other pairs unchanged */
  CHECK_INT(redcoll__rab_oldrank(13, 2, sw), 4);
  /* Every root survives, and the new ranks stay increasing in the old ones
   * (rank order), for every p and root. */
  for (int p = 2; p <= 40; p++) {
    for (int root = 0; root < p; root++) {
      int s = redcoll__rab_swap_pair(p, root), last = -1, count = 0;
      CHECK(redcoll__rab_newrank(p, root, s) >= 0);
      for (int rank = 0; rank < p; rank++) {
        int j = redcoll__rab_newrank(p, rank, s);
        if (j < 0) continue;
        CHECK_INT(j, last + 1);
        CHECK_INT(redcoll__rab_oldrank(p, j, s), rank);
        last = j;
        count++;
      }
      CHECK_INT(count, redcoll__floor_pow2(p));
    }
  }
}

/* The order-keeping reduction tree of binary_tree: schedules spelled out
 * for p = 6, then for every p and root: a tree toward the root, in
 * ceil(lg p) rounds, whose every combine joins two adjacent runs of ranks. */
typedef struct tree_node {
  int done, lo, hi; /* round its partial is complete, the ranks it covers */
} tree_node;

static void tree_eval(int p, int root, int rank, tree_node *nd) {
  int from[32], parent;
  int nr = redcoll__rab_tree(p, root, rank, from, &parent);
  nd[rank].done = 0;
  nd[rank].lo = rank;
  nd[rank].hi = rank + 1;
  for (int i = 0; i < nr; i++) {
    int ch = from[i], cp;
    int cf[32];
    redcoll__rab_tree(p, root, ch, cf, &cp);
    CHECK_MSG(cp == rank, "p %d root %d: child %d of %d has parent %d", p, root, ch, rank, cp);
    tree_eval(p, root, ch, nd);
    /* one receive at a time: after its own earlier receives and the child */
    nd[rank].done = (nd[ch].done > nd[rank].done ? nd[ch].done : nd[rank].done) + 1;
    if (ch < rank) {
      CHECK_MSG(nd[ch].hi == nd[rank].lo, "p %d root %d: %d -> %d not adjacent", p, root, ch,
                rank);
      nd[rank].lo = nd[ch].lo;
    } else {
      CHECK_MSG(nd[rank].hi == nd[ch].lo, "p %d root %d: %d -> %d not adjacent", p, root, ch,
                rank);
      nd[rank].hi = nd[ch].hi;
    }
  }
}

static void test_tree(void) {
  /* {p, root, rank, parent, number of children, children in order} */
  static const int want[][9] = {
      /* p = 6, root 0: the binomial tree 1->0, 3->2, 5->4; 2->0; 4->0 */
      {6, 0, 0, -1, 3, 1, 2, 4},
      {6, 0, 4, 0, 1, 5},
      /* p = 6, root 5: 1->0, 3->2, 4->5; 2->0; 0->5 (lower run on the left) */
      {6, 5, 5, -1, 2, 4, 0},
      {6, 5, 0, 5, 2, 1, 2},
      {6, 5, 4, 5, 0},
      /* p = 13, root 9: 8->9, 10->9 (after 11->10), 12->9 ... [0, 8) from 0 last */
      {13, 9, 9, -1, 4, 8, 10, 12, 0},
  };
  int from[32], parent, nr;
  for (size_t t = 0; t < sizeof want / sizeof want[0]; t++) {
    const int *w = want[t];
    nr = redcoll__rab_tree(w[0], w[1], w[2], from, &parent);
    CHECK_MSG(nr == w[4] && parent == w[3], "p %d root %d rank %d: %d children, parent %d", w[0],
              w[1], w[2], nr, parent);
    for (int i = 0; i < nr && i < w[4]; i++) CHECK_INT(from[i], w[5 + i]);
  }
  tree_node nd[80];
  for (int p = 1; p <= 70; p++) {
    for (int root = 0; root < p; root++) {
      for (int i = 0; i < p; i++) nd[i].done = -1;
      tree_eval(p, root, root, nd);
      CHECK_MSG(nd[root].lo == 0 && nd[root].hi == p, "p %d root %d: root covers [%d, %d)", p,
                root, nd[root].lo, nd[root].hi);
      CHECK_MSG(nd[root].done == redcoll__ceil_log2(p), "p %d root %d: %d rounds", p, root,
                nd[root].done);
      for (int i = 0; i < p; i++) CHECK_MSG(nd[i].done >= 0, "p %d root %d: %d unused", p, root, i);
    }
  }
}

static void test_gather_roles(void) {
  /* pp = 8 toward new rank 5 (101b): distance 4 first. */
  for (int j = 0; j < 8; j++) CHECK_INT(redcoll__rab_gather_role(j, 5, 4), (j & 4) ? 1 : 0);
  /* distance 2: only j with bit 2 set (as 5) take part; receivers have bit 1 clear */
  CHECK_INT(redcoll__rab_gather_role(0, 5, 2), -1);
  CHECK_INT(redcoll__rab_gather_role(4, 5, 2), 1);
  CHECK_INT(redcoll__rab_gather_role(6, 5, 2), 0);
  CHECK_INT(redcoll__rab_gather_role(5, 5, 1), 1);
  CHECK_INT(redcoll__rab_gather_role(4, 5, 1), 0);
  CHECK_INT(redcoll__rab_gather_role(7, 5, 1), -1);
  /* Over all steps every new rank but the root sends exactly once. */
  for (int jr = 0; jr < 16; jr++) {
    for (int j = 0; j < 16; j++) {
      int sends = 0, active = 1;
      for (int d = 8; d >= 1; d >>= 1) {
        int role = redcoll__rab_gather_role(j, jr, d);
        if (!active) {
          CHECK_INT(role, -1);
          continue;
        }
        CHECK(role >= 0);
        if (role == 0) {
          sends++;
          active = 0;
        }
      }
      CHECK_INT(sends, j == jr ? 0 : 1);
    }
  }
}

static void test_blocks(void) {
  int ex[32], st[32];
  CHECK_INT(redcoll__rab_blocks(13, ex, st), 3);
  CHECK_INT(ex[0], 3);
  CHECK_INT(ex[1], 2);
  CHECK_INT(ex[2], 0);
  CHECK_INT(st[0], 0);
  CHECK_INT(st[1], 8);
  CHECK_INT(st[2], 12);
  CHECK_INT(redcoll__rab_blocks(100, ex, st), 3);
  CHECK_INT(ex[0], 6);
  CHECK_INT(ex[1], 5);
  CHECK_INT(ex[2], 2);
  CHECK_INT(st[2], 96);
  CHECK_INT(redcoll__rab_blocks(64, ex, st), 1);
  CHECK_INT(redcoll__rab_block_of(13, 7), 0);
  CHECK_INT(redcoll__rab_block_of(13, 8), 1);
  CHECK_INT(redcoll__rab_block_of(13, 11), 1);
  CHECK_INT(redcoll__rab_block_of(13, 12), 2);
  CHECK_INT(redcoll__rab_block_of(100, 95), 1);
  CHECK_INT(redcoll__rab_block_of(100, 96), 2);
  /* A range of depth e(k) of local rank j is the union of the depth e(k-1)
   * ranges of j + t 2^e(k) (what block k sends to block k-1). */
  size_t lo, hi, a, b;
  redcoll__rab_range(1000, 2, 1, &lo, &hi);
  size_t total = 0;
  for (int jj = 1; jj < 8; jj += 4) {
    redcoll__rab_range(1000, 3, jj, &a, &b);
    CHECK(lo <= a && b <= hi);
    total += b - a;
  }
  CHECK_INT(total, hi - lo);
}

static void test_chunks(void) {
  static const size_t want[5] = {0, 3, 6, 8, 10};
  for (int i = 0; i < 4; i++) {
    size_t lo, hi;
    redcoll__rab_chunk(10, 4, i, &lo, &hi);
    CHECK_INT(lo, want[i]);
    CHECK_INT(hi, want[i + 1]);
  }
  size_t lo, hi;
  redcoll__rab_chunk(2, 5, 4, &lo, &hi); /* count < p: empty chunks at the end */
  CHECK_INT(lo, 2);
  CHECK_INT(hi, 2);
  redcoll__rab_chunk(2, 5, 1, &lo, &hi);
  CHECK_INT(lo, 1);
  CHECK_INT(hi, 2);
}

/* ---- 2. correctness on the simulator -------------------------------------- */

typedef struct algo_case {
  redcoll_coll coll;
  redcoll_algo algo;
  int noncomm; /* accepts non-commutative operators */
} algo_case;

static const algo_case algos[] = {
    {REDCOLL_COLL_ALLREDUCE, REDCOLL_ALGO_BINARY_TREE, 1},
    {REDCOLL_COLL_REDUCE, REDCOLL_ALGO_BINARY_TREE, 1},
    {REDCOLL_COLL_ALLREDUCE, REDCOLL_ALGO_RECURSIVE_DOUBLING, 1},
    {REDCOLL_COLL_ALLREDUCE, REDCOLL_ALGO_HALVING_DOUBLING, 1},
    {REDCOLL_COLL_REDUCE, REDCOLL_ALGO_HALVING_DOUBLING, 1},
    {REDCOLL_COLL_ALLREDUCE, REDCOLL_ALGO_BINARY_BLOCKS, 1},
    {REDCOLL_COLL_REDUCE, REDCOLL_ALGO_BINARY_BLOCKS, 1},
    {REDCOLL_COLL_ALLREDUCE, REDCOLL_ALGO_RING, 0},
    {REDCOLL_COLL_REDUCE, REDCOLL_ALGO_RING, 0},
};
#define NALGOS (sizeof algos / sizeof algos[0])

static int runs;

static void run_case(const algo_case *ac, int p, size_t count, int root, check_op op,
                     int in_place) {
  check_result res;
  check_case tc = check_case_make(ac->coll, ac->algo, p, count, root, op, in_place);
  tc.mock.eager_limit = 0;
  check_run(&tc, &res);
  runs++;
  if (op == CHECK_OP_NONCOMM && !ac->noncomm && count > 0) { /* one rank as many */
    CHECK_MSG(res.status == REDCOLL_ENOTSUP, "%s %s p %d: status %s, want ENOTSUP",
              redcoll_coll_name(ac->coll), redcoll_algo_name(ac->algo), p,
              redcoll_status_name(res.status));
    return;
  }
  CHECK_MSG(res.ok && res.status == REDCOLL_OK,
            "%s %s p %d count %zu root %d op %d in_place %d: %s",
            redcoll_coll_name(ac->coll), redcoll_algo_name(ac->algo), p, count, root, (int)op,
            in_place, res.error);
  if (p > 1 && count > 0)
    CHECK_MSG(res.algo == ac->algo, "ran %s", redcoll_algo_name(res.algo));
}

static void test_matrix(void) {
  static const int ps[] = {1, 2, 3, 4, 5, 6, 7, 8, 11, 13, 16, 24, 33};
  for (size_t a = 0; a < NALGOS; a++) {
    const algo_case *ac = &algos[a];
    CHECK_INT(redcoll_algo_is_supported(ac->coll, ac->algo), 1);
    CHECK_INT(redcoll_algo_is_rank_ordered(ac->coll, ac->algo), ac->noncomm);
    for (size_t i = 0; i < sizeof ps / sizeof ps[0]; i++) {
      int p = ps[i];
      size_t counts[] = {0, 1, 2, (size_t)(p > 1 ? p - 1 : 1), 37, 1000};
      for (size_t ci = 0; ci < sizeof counts / sizeof counts[0]; ci++) {
        size_t count = counts[ci];
        /* every root up to p = 8; beyond, the ends, the middle and an odd
         * root below 2r (the root swap) */
        int roots[16], nr = 0;
        if (ac->coll != REDCOLL_COLL_REDUCE) {
          roots[nr++] = 0;
        } else if (p <= 8) {
          for (int r = 0; r < p; r++) roots[nr++] = r;
        } else {
          roots[nr++] = 0;
          roots[nr++] = 1;
          roots[nr++] = p / 2;
          roots[nr++] = p - 1;
          if (p != redcoll__floor_pow2(p)) roots[nr++] = 2 * (p - redcoll__floor_pow2(p)) - 1;
        }
        for (int ri = 0; ri < nr; ri++) {
          int big = count == 1000;
          run_case(ac, p, count, roots[ri], CHECK_OP_SUM, ri & 1);
          if (!big || ri == 0) run_case(ac, p, count, roots[ri], CHECK_OP_NONCOMM, !(ri & 1));
          if (count == 37 && ri == 0) run_case(ac, p, count, roots[ri], CHECK_OP_SUM_RANDOM, 0);
        }
      }
    }
  }
}

/* ---- 3. costs against the formulas ----------------------------------------- */

typedef struct cost {
  double rounds, volume, reduced;
} cost;

static cost simulate(redcoll_coll coll, redcoll_algo algo, int p, size_t count, int root) {
  cost c;
  double *out[3] = {&c.rounds, &c.volume, &c.reduced};
  for (int w = 0; w < 3; w++) {
    check_result res;
    check_case tc = check_case_make(coll, algo, p, count, root, CHECK_OP_SUM, 0);
    tc.mock.alpha = w == 0;
    tc.mock.beta = w == 1;
    tc.mock.gamma = w == 2;
    check_run(&tc, &res);
    CHECK_MSG(res.ok, "%s %s p %d: %s", redcoll_coll_name(coll), redcoll_algo_name(algo), p,
              res.error);
    *out[w] = res.time;
  }
  return c;
}

static int ilog2(int p) { return redcoll__ceil_log2(p); }

/* The paper's T_all / T_red with f_alpha = f_beta = 1: coefficients of
 * alpha, beta, gamma for n bytes. */
static cost formula(redcoll_coll coll, redcoll_algo algo, int p, double n) {
  int L = ilog2(p), pp = redcoll__floor_pow2(p), pow2 = pp == p;
  cost f = {0, 0, 0};
  switch (algo) {
  case REDCOLL_ALGO_BINARY_TREE:
    if (coll == REDCOLL_COLL_REDUCE) f = (cost){L, L * n, L * n};
    else f = (cost){2 * L, 2 * L * n, L * n};
    break;
  case REDCOLL_ALGO_RECURSIVE_DOUBLING:
    f = pow2 ? (cost){L, L * n, L * n} : (cost){L + 1, (L + 1) * n, L * n};
    break;
  case REDCOLL_ALGO_HALVING_DOUBLING:
    if (pow2) f = (cost){2 * L, 2 * n - 2 * n / p, n - n / p};
    else if (coll == REDCOLL_COLL_ALLREDUCE)
      f = (cost){2 * ilog2(pp) + 3, 4 * n - 2 * n / pp, 1.5 * n - n / pp};
    else
      f = (cost){2 * ilog2(pp) + 2, 3 * n - 2 * n / pp, 1.5 * n - n / pp};
    break;
  case REDCOLL_ALGO_RING:
    f = (cost){2 * (p - 1), 2 * n - 2 * n / p, n - n / p};
    break;
  default:
    break;
  }
  return f;
}

static void check_cost(redcoll_coll coll, redcoll_algo algo, int p, size_t count, int root,
                       cost want) {
  cost got = simulate(coll, algo, p, count, root);
  CHECK_MSG(got.rounds == want.rounds && got.volume == want.volume &&
                got.reduced == want.reduced,
            "%s %s p %d root %d: rounds %g/%g volume %g/%g reduced %g/%g (sim/formula)",
            redcoll_coll_name(coll), redcoll_algo_name(algo), p, root, got.rounds,
            want.rounds, got.volume, want.volume, got.reduced, want.reduced);
}

static size_t big_count(int p) {
  size_t a = (size_t)p, b = 128;
  while (b) {
    size_t t = a % b;
    a = b;
    b = t;
  }
  return (size_t)p * 128 / a * 2; /* divisible by p and by 128 */
}

static void test_costs(void) {
  static const int ps[] = {2, 3, 5, 8, 13, 24, 33, 64};
  for (size_t i = 0; i < sizeof ps / sizeof ps[0]; i++) {
    int p = ps[i];
    size_t count = big_count(p);
    double n = (double)count * 8;
    check_cost(REDCOLL_COLL_ALLREDUCE, REDCOLL_ALGO_RECURSIVE_DOUBLING, p, count, 0,
               formula(REDCOLL_COLL_ALLREDUCE, REDCOLL_ALGO_RECURSIVE_DOUBLING, p, n));
    for (int coll = 0; coll < 2; coll++) {
      redcoll_coll cl = coll ? REDCOLL_COLL_REDUCE : REDCOLL_COLL_ALLREDUCE;
      check_cost(cl, REDCOLL_ALGO_HALVING_DOUBLING, p, count, 0,
                 formula(cl, REDCOLL_ALGO_HALVING_DOUBLING, p, n));
      check_cost(cl, REDCOLL_ALGO_RING, p, count, 0, formula(cl, REDCOLL_ALGO_RING, p, n));
      check_cost(cl, REDCOLL_ALGO_BINARY_TREE, p, count, 0,
                 formula(cl, REDCOLL_ALGO_BINARY_TREE, p, n));
    }
    /* binary_tree reduce: T_red,tree for any root (the tree keeps rank order
     * without a detour through rank 0). */
    for (int root = p / 2; root < p; root += p - p / 2 - 1 > 0 ? p - p / 2 - 1 : 1)
      check_cost(REDCOLL_COLL_REDUCE, REDCOLL_ALGO_BINARY_TREE, p, count, root,
                 formula(REDCOLL_COLL_REDUCE, REDCOLL_ALGO_BINARY_TREE, p, n));
    /* The root swap costs nothing: a removed (odd) root, and the last rank. */
    int r = p - redcoll__floor_pow2(p);
    if (r > 0)
      check_cost(REDCOLL_COLL_REDUCE, REDCOLL_ALGO_HALVING_DOUBLING, p, count, 2 * r - 1,
                 formula(REDCOLL_COLL_REDUCE, REDCOLL_ALGO_HALVING_DOUBLING, p, n));
    check_cost(REDCOLL_COLL_REDUCE, REDCOLL_ALGO_HALVING_DOUBLING, p, count, p - 1,
               formula(REDCOLL_COLL_REDUCE, REDCOLL_ALGO_HALVING_DOUBLING, p, n));
  }
  /* binary_blocks: no formula in the paper.  Power of two: halving_doubling.
   * p = 13 = 8 + 4 + 1 (n = 26624 bytes), the values derived in
   * docs/algorithms/rabenseifner.md: reduce exactly; allreduce below the
   * uniform-start bound (14, 4n, n) by the staggered start of block 0. */
  double n = 26624;
  check_cost(REDCOLL_COLL_ALLREDUCE, REDCOLL_ALGO_BINARY_BLOCKS, 16, big_count(16), 0,
             formula(REDCOLL_COLL_ALLREDUCE, REDCOLL_ALGO_HALVING_DOUBLING, 16,
                     (double)big_count(16) * 8));
  check_cost(REDCOLL_COLL_REDUCE, REDCOLL_ALGO_BINARY_BLOCKS, 13, big_count(13), 0,
             (cost){11, n * 23 / 8, n * 9 / 8});
  check_cost(REDCOLL_COLL_REDUCE, REDCOLL_ALGO_BINARY_BLOCKS, 13, big_count(13), 12,
             (cost){11, n * 23 / 8, n * 9 / 8}); /* rank 0's piece to 12 is off the path */
  check_cost(REDCOLL_COLL_ALLREDUCE, REDCOLL_ALGO_BINARY_BLOCKS, 13, big_count(13), 0,
             (cost){13, n * 30 / 8, n * 9 / 8});
}

TEST_MAIN(TEST(test_ranges), TEST(test_removed_ranks), TEST(test_root_swap), TEST(test_tree),
          TEST(test_gather_roles), TEST(test_blocks), TEST(test_chunks), TEST(test_matrix),
          TEST(test_costs))
