/*
 * The two ring protocols of Table 1 of Rabenseifner-Traeff 2004,
 * allgather_reduce and ring_sequential (src/core/ring_protocols.c):
 *  - the pure schedules, simulated exhaustively for p = 1..130: block ranges,
 *    the dissemination allgather, the binomial gather, the exchange partners;
 *  - correctness on the simulator for allreduce and reduce: p = 1..40 and a
 *    spread up to 130 with the non-commutative operator, every root of
 *    reduce up to p = 12 and first/second/middle/last roots beyond (every p
 *    and root of 1..130 is scripts/sim_sweep.py elimination), counts below, at and above p,
 *    in place and not, float64 SUM, MAX and random float64 (bitwise equal);
 *  - exact costs: rounds, bytes sent, received and reduced, and the time
 *    under beta only, gamma only, and the alpha/beta/gamma of Table 1, equal
 *    to the formulas of section 3.5.
 */
#include <math.h>

#include "check.h"
#include "algo/elimination/table1_rings.h"
#include "internal.h"
#include "test.h"

#define PMAX 130

static const redcoll_algo algos[2] = {REDCOLL_ALGO_ALLGATHER_REDUCE, REDCOLL_ALGO_RING_SEQUENTIAL};
static const redcoll_coll colls[2] = {REDCOLL_COLL_ALLREDUCE, REDCOLL_COLL_REDUCE};

/* ---- pure schedules --------------------------------------------------------- */

static void test_range(void) {
  static unsigned char hit[4 * PMAX + 8];
  for (int p = 1; p <= PMAX; p += (p < 20 ? 1 : 7)) {
    size_t ns[] = {0, 1, (size_t)p - 1, (size_t)p, (size_t)p + 1, 3 * (size_t)p + 2};
    for (size_t ni = 0; ni < sizeof ns / sizeof ns[0]; ni++) {
      size_t n = ns[ni];
      for (int first = 0; first < p; first++) {
        for (int nb = 0; nb <= p; nb++) {
          redcoll__ringp_seg seg[2];
          int k = redcoll__ringp_range(n, p, first, nb, seg);
          memset(hit, 0, n);
          size_t total = 0;
          int bad = k < 0 || k > 2;
          for (int s = 0; s < k && !bad; s++) {
            bad |= seg[s].len == 0 || seg[s].off + seg[s].len > n;
            for (size_t e = seg[s].off; !bad && e < seg[s].off + seg[s].len; e++) hit[e]++;
            total += seg[s].len;
          }
          if (k == 2) bad |= seg[1].off != 0; /* the wrapped part starts the vector */
          /* every element of the blocks in range, once, and nothing else */
          size_t want = 0;
          for (int j = 0; j < nb && !bad; j++) {
            int b = (first + j) % p;
            size_t a = redcoll__block_start(n, (size_t)p, (size_t)b);
            size_t e = redcoll__block_start(n, (size_t)p, (size_t)b + 1);
            for (size_t x = a; x < e; x++) bad |= hit[x] != 1;
            want += e - a;
          }
          CHECK_MSG(!bad && total == want, "range n=%zu p=%d first=%d nb=%d", n, p, first, nb);
          if (bad) return;
        }
      }
    }
  }
}

static void test_bruck(void) {
  static unsigned char has[PMAX][PMAX];
  static unsigned char got[PMAX][PMAX];
  for (int p = 1; p <= PMAX; p++) {
    memset(has, 0, sizeof has);
    for (int i = 0; i < p; i++) has[i][i] = 1;
    int rounds = 0, bad = 0;
    for (int d = 1; d < p; d <<= 1) {
      rounds++;
      int c = redcoll__ringp_bruck_count(p, d);
      bad |= c < 1 || c > d;
      memset(got, 0, sizeof got);
      for (int i = 0; i < p && !bad; i++) {
        int to = (i - d + p) % p;
        for (int j = 0; j < c; j++) {
          int b = (i + j) % p;
          bad |= !has[i][b] || has[to][b]; /* sends only what it has, only news */
          got[to][b] = 1;
        }
      }
      for (int i = 0; i < p; i++)
        for (int b = 0; b < p; b++) has[i][b] |= got[i][b];
    }
    for (int i = 0; i < p; i++)
      for (int b = 0; b < p; b++) bad |= !has[i][b];
    CHECK_MSG(!bad, "bruck p=%d", p);
    CHECK_INT(rounds, redcoll__ceil_log2(p));
  }
}

static void test_gather(void) {
  static int held[PMAX], done[PMAX], sent[PMAX];
  for (int p = 1; p <= PMAX; p++) {
    int bad = 0, steps = 0;
    for (int r = 0; r < p; r++) held[r] = 1, done[r] = 0, sent[r] = 0;
    for (int d = 1; d < p; d <<= 1) {
      steps++;
      for (int r = 0; r < p; r++) {
        int peer, nb;
        int act = redcoll__ringp_gather_step(p, r, d, &peer, &nb);
        if (act == 1) {
          int pp, pn;
          /* the child sends exactly this, to us, now */
          bad |= done[r] || peer != r + d || peer >= p;
          bad |= redcoll__ringp_gather_step(p, peer, d, &pp, &pn) != -1 || pp != r || pn != nb;
          bad |= held[peer] != nb || r + held[r] != peer; /* contiguous, in order */
          held[r] += nb;
        } else if (act == -1) {
          bad |= r == 0 || done[r] || nb != held[r] || nb != redcoll__ringp_subtree(p, r);
          sent[r]++;
        }
      }
      for (int r = 0; r < p; r++) {
        int peer, nb;
        if (redcoll__ringp_gather_step(p, r, d, &peer, &nb) == -1) done[r] = 1;
      }
    }
    bad |= held[0] != p || redcoll__ringp_subtree(p, 0) != p;
    for (int r = 1; r < p; r++) bad |= sent[r] != 1;
    CHECK_MSG(!bad, "gather p=%d", p);
    CHECK_INT(steps, redcoll__ceil_log2(p));
  }
}

static void test_exchange(void) {
  static int from_seen[PMAX];
  for (int p = 2; p <= PMAX; p++) {
    int bad = 0;
    for (int i = 0; i < p; i++) {
      memset(from_seen, 0, sizeof from_seen);
      for (int k = 1; k < p; k++) {
        int to, from, t2, f2;
        redcoll__ringp_exchange_peers(p, i, k, &to, &from);
        redcoll__ringp_exchange_peers(p, to, k, &t2, &f2);
        bad |= f2 != i || to == i || from == i; /* `to` receives from us in round k */
        from_seen[from]++;
      }
      for (int j = 0; j < p; j++) bad |= from_seen[j] != (j != i);
    }
    for (int root = 0; root < p; root++) {
      memset(from_seen, 0, sizeof from_seen);
      for (int i = 0; i < p; i++) from_seen[redcoll__ringp_block_of(p, i, root)]++;
      bad |= redcoll__ringp_block_of(p, root, root) != 0;
      for (int b = 0; b < p; b++) bad |= from_seen[b] != 1;
    }
    CHECK_MSG(!bad, "exchange p=%d", p);
  }
  CHECK_DBL(redcoll__ringp_cost_allgather_reduce(13, 10.0, 1.0, 0.01, 0.001), 4 + 1.2 + 0.12);
  CHECK(fabs(redcoll__ringp_cost_ring_sequential(3, 300.0, 1.0, 0.01, 0.001) - (4 + 4 + 0.2)) <
        1e-12);
}

/* ---- simulator runs ---------------------------------------------------------- */

static int failures_reported;

static int run(check_case *tc, check_result *res) {
  check_run(tc, res);
  if (!res->ok && failures_reported < 10) {
    failures_reported++;
    CHECK_MSG(res->ok, "%s/%s p=%d count=%zu root=%d op=%d in_place=%d: %s",
              redcoll_coll_name(tc->coll), redcoll_algo_name(tc->algo), tc->p, tc->count,
              tc->root, (int)tc->op, tc->in_place, res->error);
  } else {
    CHECK(res->ok);
  }
  return res->ok;
}

static void init(check_case *tc, redcoll_coll coll, redcoll_algo algo, int p, size_t count,
                 int root, check_op op, int in_place) {
  *tc = check_case_make(coll, algo, p, count, root, op, in_place);
  tc->mock.seed = (uint64_t)p * 1000003u + count * 7u + (uint64_t)root;
}

/* p = 1..40 and a spread up to 130, non-commutative, count p + 1 (uneven
 * blocks), both colls.  Every p of 1..130 with every root is the sweep of
 * scripts/sim_sweep.py elimination (--only ok --roots all). */
static const int spread[] = {47, 64, 65, 100, 129, 130};
#define NSPREAD ((int)(sizeof spread / sizeof spread[0]))

static void test_all_p(void) {
  check_case tc;
  check_result res;
  for (int a = 0; a < 2; a++) {
    for (int i = 0; i < 40 + NSPREAD; i++) {
      int p = i < 40 ? i + 1 : spread[i - 40];
      init(&tc, REDCOLL_COLL_ALLREDUCE, algos[a], p, (size_t)p + 1, 0, CHECK_OP_NONCOMM, p & 1);
      run(&tc, &res);
      if (p > 1) CHECK_INT(res.algo, algos[a]); /* p = 1 never reaches an algorithm */
      int root = (p * 37) % p; /* a root that moves around */
      init(&tc, REDCOLL_COLL_REDUCE, algos[a], p, (size_t)p + 1, root, CHECK_OP_NONCOMM,
           (p & 2) != 0);
      run(&tc, &res);
    }
  }
}

/* Every root for small p (first, second, middle and last above 12); count
 * below, at and above p; in place and not (both up to p = 8, then
 * alternating with the root; allreduce alternating with p and the count). */
static void test_roots(void) {
  check_case tc;
  check_result res;
  for (int a = 0; a < 2; a++) {
    for (int p = 1; p <= 24; p++) {
      size_t counts[] = {1, (size_t)p - 1 + (p == 1), 2 * (size_t)p + 3};
      for (size_t ci = 0; ci < 3; ci++) {
        for (int root = 0; root < p; root++) {
          if (p > 12 && root > 1 && root != p / 2 && root != p - 1) continue;
          for (int ip = 0; ip < 2; ip++) {
            if (p > 8 && ip != (root & 1)) continue;
            check_op op = (root + ip + (int)ci) & 1 ? CHECK_OP_NONCOMM : CHECK_OP_SUM;
            init(&tc, REDCOLL_COLL_REDUCE, algos[a], p, counts[ci], root, op, ip);
            run(&tc, &res);
          }
        }
        int ip = (int)(ci + (size_t)p) & 1;
        init(&tc, REDCOLL_COLL_ALLREDUCE, algos[a], p, counts[ci], 0,
             ip ? CHECK_OP_SUM : CHECK_OP_NONCOMM, ip);
        run(&tc, &res);
        init(&tc, REDCOLL_COLL_ALLREDUCE, algos[a], p, counts[ci], 0, CHECK_OP_MAX, !ip);
        run(&tc, &res);
      }
    }
    int big[] = {31, 65};
    for (size_t i = 0; i < sizeof big / sizeof big[0]; i++) {
      int p = big[i];
      int roots[] = {0, 1, p / 2, p - 1};
      for (int r = 0; r < 4; r++) {
        init(&tc, REDCOLL_COLL_REDUCE, algos[a], p, 5, roots[r], CHECK_OP_SUM, r & 1);
        run(&tc, &res);
        init(&tc, REDCOLL_COLL_REDUCE, algos[a], p, (size_t)p + 3, roots[r], CHECK_OP_NONCOMM,
             !(r & 1));
        run(&tc, &res);
      }
    }
  }
}

/* Random float64 SUM: bitwise the same on every rank (and at the root, the
 * checker compares with the rank-ordered sum). */
static void test_random(void) {
  check_case tc;
  check_result res;
  int ps[] = {2, 3, 5, 6, 7, 12, 13, 15, 23, 33, 63};
  for (int a = 0; a < 2; a++) {
    for (int c = 0; c < 2; c++) {
      for (size_t i = 0; i < sizeof ps / sizeof ps[0]; i++) {
        int p = ps[i];
        init(&tc, colls[c], algos[a], p, 3 * (size_t)p + 1, p - 1, CHECK_OP_SUM_RANDOM, 0);
        run(&tc, &res);
      }
    }
  }
}

/* The most blocks any non-root sends up the binomial gather. */
static int max_subtree(int p) {
  int best = 0;
  for (int rr = 1; rr < p; rr++) {
    int s = redcoll__ringp_subtree(p, rr);
    if (s > best) best = s;
  }
  return best;
}

/* Costs: the formulas of section 3.5, exact for p | count. */
static void test_costs(void) {
  check_case tc;
  check_result res;
  int ps[] = {2, 3, 4, 5, 7, 8, 13, 15, 23, 63};
  for (int a = 0; a < 2; a++) {
    for (int c = 0; c < 2; c++) {
      for (size_t i = 0; i < sizeof ps / sizeof ps[0]; i++) {
        int p = ps[i], L = redcoll__ceil_log2(p);
        size_t count = 8 * (size_t)p;
        double m = (double)(count * 8); /* bytes of float64 */
        double f = 1.0 - 1.0 / p;
        int root = c ? p / 2 : 0;
        int ar = c == 0;
        /* rounds and bytes */
        init(&tc, colls[c], algos[a], p, count, root, CHECK_OP_SUM, 0);
        if (!run(&tc, &res)) continue;
        if (a == 0) {
          CHECK_INT(res.rounds, L);
          CHECK_DBL(res.time, L);
          CHECK_DBL((double)res.max_bytes_recv, (p - 1) * m);
          CHECK_DBL((double)res.max_bytes_reduced, (p - 1) * m);
          /* allreduce: every rank sends p-1 vectors; reduce: a rank sends
           * its binomial subtree once */
          CHECK_DBL((double)res.max_bytes_sent, ar ? (p - 1) * m : max_subtree(p) * m);
        } else {
          CHECK_INT(res.rounds, p - 1 + L);
          CHECK_DBL(res.time, p - 1 + L);
          CHECK_DBL((double)res.max_bytes_recv, 2 * f * m);
          CHECK_DBL((double)res.max_bytes_reduced, f * m);
          /* reduce: the exchange, then the blocks of the subtree */
          CHECK_DBL((double)res.max_bytes_sent, ar ? 2 * f * m : f * m + max_subtree(p) * m / p);
        }
        double want_b = a == 0 ? (p - 1) * m : 2 * f * m;
        double want_g = a == 0 ? (p - 1) * m : f * m;
        init(&tc, colls[c], algos[a], p, count, root, CHECK_OP_NONCOMM, 1);
        tc.mock.alpha = 0;
        tc.mock.beta = 1;
        run(&tc, &res);
        CHECK_DBL(res.time, want_b * 2); /* noncomm elements are 16 bytes */
        init(&tc, colls[c], algos[a], p, count, root, CHECK_OP_SUM, 1);
        tc.mock.alpha = 0;
        tc.mock.gamma = 1;
        run(&tc, &res);
        CHECK_DBL(res.time, want_g);
        /* Table 1, size M: beta m = 1.0 alpha, gamma m = 0.1 alpha */
        init(&tc, colls[c], algos[a], p, count, root, CHECK_OP_SUM, 0);
        tc.mock.alpha = 1;
        tc.mock.beta = 1.0 / m;
        tc.mock.gamma = 0.1 / m;
        run(&tc, &res);
        double want = a == 0 ? redcoll__ringp_cost_allgather_reduce(p, m, 1, 1.0 / m, 0.1 / m)
                             : redcoll__ringp_cost_ring_sequential(p, m, 1, 1.0 / m, 0.1 / m);
        CHECK_MSG(fabs(res.time - want) < 1e-9 * want, "%s/%s p=%d time %.17g want %.17g",
                  redcoll_coll_name(colls[c]), redcoll_algo_name(algos[a]), p, res.time, want);
      }
    }
  }
  /* Empty blocks are not sent: with count 1 on p = 13 only block 0 has an
   * element; its owner receives 12 and every other rank 1. */
  init(&tc, REDCOLL_COLL_ALLREDUCE, REDCOLL_ALGO_RING_SEQUENTIAL, 13, 1, 0, CHECK_OP_SUM, 0);
  if (run(&tc, &res)) {
    CHECK_DBL((double)res.max_bytes_reduced, 12 * 8);
    CHECK_DBL((double)res.max_bytes_recv, 12 * 8);
    CHECK_INT(res.msgs, 12 + 12);
  }
}

TEST_MAIN(TEST(test_range), TEST(test_bruck), TEST(test_gather), TEST(test_exchange), TEST(test_costs), TEST(test_random), TEST(test_roots), TEST(test_all_p))
