/*
 * scan, exscan and exscan_total against a sequential prefix in rank order
 * (tests/oracle): every algorithm and AUTO, p = 1..33, counts 0, 1, p-1,
 * p+1 and 100, in place and not, SUM on integer data and the
 * non-commutative matrix product, on the simulator and on threads; random
 * float64 totals bitwise equal on every rank; the round counts and volumes
 * of docs/algorithms/scan.md; AUTO's choice; the argument checks.
 */
#include "check.h"
#include "redcoll/threads.h"
#include "test.h"
#include "algo/scan/scan.h"

static const redcoll_coll colls[] = {REDCOLL_COLL_SCAN, REDCOLL_COLL_EXSCAN,
                                     REDCOLL_COLL_EXSCAN_TOTAL};
static const redcoll_algo algos[] = {REDCOLL_ALGO_AUTO, REDCOLL_ALGO_LINEAR,
                                     REDCOLL_ALGO_HILLIS_STEELE, REDCOLL_ALGO_TRANSPOSE};
#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

static int q_of(int p) {
  int q = 0;
  while ((1 << q) < p) q++;
  return q;
}

static void matrix(int threads, int pmax) {
  for (size_t ci = 0; ci < N_OF(colls); ci++) {
    for (size_t ai = 0; ai < N_OF(algos); ai++) {
      int failed = 0;
      for (int p = 1; p <= pmax && !failed; p++) {
        size_t counts[] = {0, 1, (size_t)p - 1, (size_t)p + 1, 100};
        for (size_t k = 0; k < N_OF(counts) && !failed; k++) {
          for (int op = 0; op < 2 && !failed; op++) {
            for (int ip = 0; ip < 2 && !failed; ip++) {
              check_case tc = check_case_make(colls[ci], algos[ai], p, counts[k], 0,
                                              op ? CHECK_OP_NONCOMM : CHECK_OP_SUM, ip);
              tc.threads = threads;
              tc.mock.seed = (uint64_t)(p * 31 + (int)k);
              check_result res;
              failed = !check_run_report(&tc, &res);
              CHECK(!failed);
            }
          }
        }
      }
    }
  }
}

static void matrix_sim(void) { matrix(0, 33); }
static void matrix_threads(void) { matrix(1, 33); }

/* Random float64: the total is the same bits on every rank (the oracle
 * compares each rank's total with rank 0's), the prefixes close to the
 * sequential ones. */
static void totals_identical(void) {
  for (size_t ai = 0; ai < N_OF(algos); ai++) {
    for (int p = 2; p <= 33; p += 3) {
      check_case tc = check_case_make(REDCOLL_COLL_EXSCAN_TOTAL, algos[ai], p, 67, 0,
                                      CHECK_OP_SUM_RANDOM, p & 1);
      check_result res;
      CHECK(check_run_report(&tc, &res));
    }
  }
}

/* Rounds (alpha = 1) and the largest volume a rank sends or receives, as
 * docs/algorithms/scan.md states them (scripts/sim_sweep.py scan checks
 * p up to 300). */
static void costs(void) {
  for (int p = 2; p <= 40; p++) {
    int q = q_of(p);
    size_t n = 3 * (size_t)p + 1, m = n * 8, b = (n + (size_t)p - 1) / (size_t)p * 8;
    for (size_t ci = 0; ci < N_OF(colls); ci++) {
      int total = colls[ci] == REDCOLL_COLL_EXSCAN_TOTAL;
      check_result res;
      check_case tc = check_case_make(colls[ci], REDCOLL_ALGO_LINEAR, p, n, 0, CHECK_OP_SUM, 0);
      CHECK(check_run_report(&tc, &res));
      CHECK_INT(res.rounds, (total ? 2 : 1) * (p - 1));
      CHECK_INT(res.max_bytes_recv, total && p > 2 ? 2 * m : m); /* prefix and total */
      CHECK_INT(res.max_bytes_sent, total ? (uint64_t)(p - 1) * m : m);

      tc.algo = REDCOLL_ALGO_HILLIS_STEELE;
      CHECK(check_run_report(&tc, &res));
      CHECK_INT(res.rounds, (total ? 2 : 1) * q);
      /* rank p-1 receives q windows; with the total, rank p-2 receives
       * q windows and the total unless p-2 < 2^(q-1), i.e. p-1 is a power
       * of two */
      int pow2 = ((p - 1) & (p - 2)) == 0;
      CHECK_INT(res.max_bytes_recv, (uint64_t)q * m + (total && !pow2 ? m : 0));

      tc.algo = REDCOLL_ALGO_TRANSPOSE;
      CHECK(check_run_report(&tc, &res));
      CHECK_INT(res.rounds, 2 * (p - 1));
      /* rank 0 owns a largest block and sends most: m - b, then its block
       * of the prefix (and of the total) to each of the p-1 others */
      CHECK_INT(res.max_bytes_sent, (m - b) + (size_t)(p - 1) * b * (total ? 2 : 1));
    }
  }
}

/* AUTO: doubling for short vectors, the transposition for long ones (on 3
 * ranks the chain takes as many rounds and reduces less). */
static void auto_choice(void) {
  for (size_t ci = 0; ci < N_OF(colls); ci++) {
    for (int p = 5; p <= 64; p += 7) {
      CHECK_INT(redcoll_cost_choose(colls[ci], p, 1, 8, 8192, 0, 2e-6, 1e-10, 2.5e-11),
                REDCOLL_ALGO_HILLIS_STEELE);
      CHECK_INT(redcoll_cost_choose(colls[ci], p, (size_t)1 << 24, 8, 8192, 0, 2e-6, 1e-10,
                                    2.5e-11),
                REDCOLL_ALGO_TRANSPOSE);
    }
  }
}

/* The schedules' arithmetic: after the doubling round at distance d rank
 * r's window covers ranks max(0, r - 2d + 1) .. r, a window is kept up to
 * date whenever it is sent later, sends and receives pair up, and pairwise
 * exchange meets every ordered pair of ranks once. */
static void schedules(void) {
  static int lo[300], nlo[300], seen[300][300];
  for (int p = 1; p <= 300; p++) {
    for (int r = 0; r < p; r++) lo[r] = r;
    int stale[300] = {0};
    for (int d = 1; d < p; d <<= 1) {
      for (int r = 0; r < p; r++) {
        int dst, src;
        redcoll__hs_peers(p, r, d, &dst, &src);
        if (dst >= 0) {
          int s2, d2;
          redcoll__hs_peers(p, dst, d, &d2, &s2);
          CHECK_INT(s2, r);
          CHECK(!stale[r]); /* a window sent is up to date */
        }
        nlo[r] = src >= 0 ? lo[src] : lo[r];
      }
      for (int r = 0; r < p; r++) {
        lo[r] = nlo[r];
        CHECK_INT(lo[r], r - 2 * d + 1 > 0 ? r - 2 * d + 1 : 0);
        if (r - d >= 0 && !redcoll__hs_window_needed(p, r, d, 1)) stale[r] = 1;
      }
    }
    for (int r = 0; r < p; r++) CHECK_INT(lo[r], 0);
    CHECK(!stale[p - 1]); /* the last window is the total */
    memset(seen, 0, sizeof seen);
    for (int k = 1; k < p; k++)
      for (int r = 0; r < p; r++) {
        int dst, src;
        redcoll__pairwise_peers(p, r, k, &dst, &src);
        seen[r][dst]++;
        int d2, s2;
        redcoll__pairwise_peers(p, dst, k, &d2, &s2);
        CHECK_INT(s2, r);
      }
    for (int r = 0; r < p; r++)
      for (int j = 0; j < p; j++) CHECK_INT(seen[r][j], r != j);
  }
}

/* Argument checks: nothing is sent, every rank returns EINVAL alike. */
static int bad_args(redcoll_comm *c, void *arg) {
  (void)arg;
  double s[8] = {0}, r[8] = {0}, t[8] = {0};
  int bad = 0;
  bad |= redcoll_exscan_total(c, s, r, NULL, 4, REDCOLL_FLOAT64, REDCOLL_SUM) != REDCOLL_EINVAL;
  bad |= redcoll_exscan_total(c, s, r, (void *)REDCOLL_IN_PLACE, 4, REDCOLL_FLOAT64,
                              REDCOLL_SUM) != REDCOLL_EINVAL;
  bad |= redcoll_exscan_total(c, s, r, r + 2, 4, REDCOLL_FLOAT64, REDCOLL_SUM) != REDCOLL_EINVAL;
  bad |= redcoll_exscan_total(c, s, r, s + 3, 4, REDCOLL_FLOAT64, REDCOLL_SUM) != REDCOLL_EINVAL;
  bad |= redcoll_exscan_total(c, REDCOLL_IN_PLACE, r, r + 3, 4, REDCOLL_FLOAT64, REDCOLL_SUM) !=
         REDCOLL_EINVAL;
  bad |= redcoll_scan(c, s, s + 1, 4, REDCOLL_FLOAT64, REDCOLL_SUM) != REDCOLL_EINVAL;
  bad |= redcoll_exscan(c, s, r, 4, REDCOLL_FLOAT64, NULL) != REDCOLL_EINVAL;
  bad |= redcoll_scan(c, s, NULL, 4, REDCOLL_FLOAT64, REDCOLL_SUM) != REDCOLL_EINVAL;
  /* count 0 needs no buffers */
  bad |= redcoll_exscan_total(c, NULL, NULL, NULL, 0, REDCOLL_FLOAT64, REDCOLL_SUM) != REDCOLL_OK;
  /* and the communicator still works */
  bad |= redcoll_exscan_total(c, s, r, t, 8, REDCOLL_FLOAT64, REDCOLL_SUM) != REDCOLL_OK;
  return bad ? REDCOLL_EPROTO : REDCOLL_OK;
}

static void args(void) {
  for (int p = 1; p <= 3; p++) CHECK_INT(redcoll_mock_run(p, NULL, bad_args, NULL, NULL), REDCOLL_OK);
  CHECK_INT(redcoll_threads_run(3, bad_args, NULL), REDCOLL_OK);
}

/* On communicators split from the world (odd and even ranks, in reverse
 * order by key), every algorithm: rank i of the part gets the prefix of its
 * part's ranks before it, and the part's total. */
static int split_rank(redcoll_comm *c, void *arg) {
  (void)arg;
  int me = redcoll_comm_rank(c), bad = 0, rc;
  redcoll_comm *part = NULL;
  if ((rc = redcoll_comm_split(c, me % 2, -me, &part)) != REDCOLL_OK) return rc;
  int n = redcoll_comm_size(part), pr = redcoll_comm_rank(part);
  for (size_t ai = 1; ai < N_OF(algos); ai++) {
    if ((rc = redcoll_comm_set_algorithm(part, REDCOLL_COLL_EXSCAN_TOTAL, algos[ai])) != REDCOLL_OK)
      break;
    int64_t v[5], ex[5] = {-1, -1, -1, -1, -1}, tot[5];
    for (int i = 0; i < 5; i++) v[i] = me * 10 + i;
    if ((rc = redcoll_exscan_total(part, v, ex, tot, 5, REDCOLL_INT64, REDCOLL_SUM)) != REDCOLL_OK) break;
    /* part rank j is world rank: the members of me's parity, largest first */
    int64_t want_ex[5] = {0}, want_tot[5] = {0};
    for (int j = 0; j < n; j++) {
      int world = 0;
      for (int w = redcoll_comm_size(c) - 1, k = 0; w >= 0; w--)
        if (w % 2 == me % 2 && k++ == j) world = w;
      for (int i = 0; i < 5; i++) {
        if (j < pr) want_ex[i] += world * 10 + i;
        want_tot[i] += world * 10 + i;
      }
    }
    for (int i = 0; i < 5; i++) {
      bad |= tot[i] != want_tot[i];
      bad |= pr > 0 ? ex[i] != want_ex[i] : ex[i] != -1;
    }
    bad |= n > 1 && redcoll_comm_last_algorithm(part) != algos[ai];
  }
  redcoll_comm_destroy(part);
  if (rc != REDCOLL_OK) return rc;
  return bad ? REDCOLL_EPROTO : REDCOLL_OK;
}

static void subcomms(void) {
  for (int p = 1; p <= 13; p += 3) {
    CHECK_INT(redcoll_threads_run(p, split_rank, NULL), REDCOLL_OK);
    CHECK_INT(redcoll_mock_run(p, NULL, split_rank, NULL, NULL), REDCOLL_OK);
  }
}

TEST_MAIN(TEST(matrix_sim), TEST(matrix_threads), TEST(totals_identical), TEST(costs),
          TEST(auto_choice), TEST(schedules), TEST(subcomms), TEST(args))
