/*
 * alltoall and alltoallv against the expected image of every rank's
 * recvbuf (tests/oracle: untouched bytes stay untouched): every algorithm
 * and AUTO, p = 1..33, counts 0, 1, p-1, p+1 and 40, alltoall in place and
 * not, alltoallv with blocks end to end, uneven with zeros and gaps, and
 * very uneven (one large block per rank, zeros and ones elsewhere), on the
 * simulator and on threads; the rounds and volumes of
 * docs/algorithms/alltoall.md; the Bruck schedule's arithmetic; AUTO's
 * choice; the argument checks.
 */
#include "check.h"
#include "redcoll/threads.h"
#include "test.h"
#include "algo/alltoall/alltoall.h"

static void matrix(int threads) {
  static const redcoll_algo a2a[] = {REDCOLL_ALGO_AUTO, REDCOLL_ALGO_BRUCK, REDCOLL_ALGO_PAIRWISE};
  for (int p = 1; p <= 33; p++) {
    size_t counts[] = {0, 1, (size_t)p - 1, (size_t)p + 1, 40};
    for (size_t k = 0; k < 5; k++) {
      for (int v = 0; v < 2; v++) {
        /* alltoall: every algorithm, in place and not; alltoallv: every
         * layout */
        for (int x = 0; x < (v ? 3 : 6); x++) {
          check_case tc = check_case_make(v ? REDCOLL_COLL_ALLTOALLV : REDCOLL_COLL_ALLTOALL,
                                          v ? REDCOLL_ALGO_AUTO : a2a[x / 2], p, counts[k], 0,
                                          CHECK_OP_SUM, v ? 0 : x & 1);
          tc.irregular = v ? x : 0;
          tc.threads = threads;
          tc.dtype = (k & 1) ? REDCOLL_INT16 : REDCOLL_FLOAT64;
          check_result res;
          CHECK(check_run_report(&tc, &res));
        }
      }
    }
  }
}

static void matrix_sim(void) { matrix(0); }
static void matrix_threads(void) { matrix(1); }

/* Bruck: every block reaches its destination (the moves of slot i add up
 * to i) and the counts of moving slots are those of the bits. */
static void bruck_schedule(void) {
  for (int p = 1; p <= 300; p++) {
    int most = 0;
    for (int k = 0; (1 << k) < p; k++) {
      int n = 0;
      for (int i = 0; i < p; i++) n += (i >> k) & 1;
      CHECK_INT(redcoll__bruck_moving(p, k), n);
      if (n > most) most = n;
    }
    CHECK_INT(redcoll__bruck_max_moving(p), most);
    for (int r = 0; r < p; r += 7)
      for (int j = 0; j < p; j++) {
        int s = redcoll__bruck_slot_from(p, r, j);
        CHECK_INT((j + s) % p, r); /* the block from j moved s ranks, to r */
        CHECK_INT(redcoll__bruck_slot_from(p, r, (r - s + p) % p), s);
      }
  }
}

/* Rounds (alpha = 1) and the largest volume a rank sends. */
static void costs(void) {
  for (int p = 2; p <= 40; p++) {
    size_t B = 3 * 8;
    int q = 0;
    uint64_t vol = 0;
    for (; (1 << q) < p; q++) vol += (uint64_t)redcoll__bruck_moving(p, q) * B;
    check_result res;
    check_case tc = check_case_make(REDCOLL_COLL_ALLTOALL, REDCOLL_ALGO_BRUCK, p, 3, 0, CHECK_OP_SUM, 0);
    CHECK(check_run_report(&tc, &res));
    CHECK_INT(res.rounds, q);
    CHECK_INT(res.max_bytes_sent, vol);
    tc.algo = REDCOLL_ALGO_PAIRWISE;
    CHECK(check_run_report(&tc, &res));
    CHECK_INT(res.rounds, p - 1);
    CHECK_INT(res.max_bytes_sent, (uint64_t)(p - 1) * B);
    /* alltoallv with all blocks but one per rank empty: one message each */
    tc.coll = REDCOLL_COLL_ALLTOALLV;
    tc.irregular = 2;
    tc.count = 0; /* the large blocks are 4 count = 0 too: only ones */
    CHECK(check_run_report(&tc, &res));
  }
}

static void auto_choice(void) {
  for (int p = 4; p <= 300; p += 9) {
    CHECK_INT(redcoll_cost_choose(REDCOLL_COLL_ALLTOALL, p, 1, 8, 8192, 0, 2e-6, 1e-10, 2.5e-11),
              REDCOLL_ALGO_BRUCK);
    CHECK_INT(redcoll_cost_choose(REDCOLL_COLL_ALLTOALL, p, 1 << 20, 8, 8192, 0, 2e-6, 1e-10,
                                  2.5e-11),
              REDCOLL_ALGO_PAIRWISE);
  }
}

static int bad_args(redcoll_comm *c, void *arg) {
  (void)arg;
  int p = redcoll_comm_size(c), bad = 0;
  double s[64] = {0}, r[64] = {0};
  size_t cnt[4] = {1, 1, 1, 1}, dsp[4] = {0, 1, 2, 3}, far[4] = {0, 1, 2, SIZE_MAX - 1};
  bad |= redcoll_alltoallv(c, REDCOLL_IN_PLACE, cnt, dsp, r, cnt, dsp, REDCOLL_FLOAT64) != REDCOLL_EINVAL;
  bad |= redcoll_alltoallv(c, s, cnt, dsp, s, cnt, dsp, REDCOLL_FLOAT64) != REDCOLL_EINVAL;
  bad |= redcoll_alltoallv(c, s, NULL, dsp, r, cnt, dsp, REDCOLL_FLOAT64) != REDCOLL_EINVAL;
  size_t two[4] = {2, 2, 2, 2}; /* the own block sent as 1, received as 2 */
  bad |= redcoll_alltoallv(c, s, cnt, dsp, r, two, dsp, REDCOLL_FLOAT64) != REDCOLL_EINVAL;
  bad |= redcoll_alltoallv(c, s, cnt, dsp, r, cnt, NULL, REDCOLL_FLOAT64) != REDCOLL_EINVAL;
  if (p == 4) bad |= redcoll_alltoallv(c, s, cnt, far, r, cnt, dsp, REDCOLL_FLOAT64) != REDCOLL_EINVAL;
  bad |= redcoll_alltoall(c, s, s + 1, 2, REDCOLL_FLOAT64) != REDCOLL_EINVAL;
  bad |= redcoll_alltoall(c, s, NULL, 2, REDCOLL_FLOAT64) != REDCOLL_EINVAL;
  bad |= redcoll_alltoall(c, s, r, 2, REDCOLL_CUSTOM) != REDCOLL_EINVAL;
  /* and the communicator still works */
  bad |= redcoll_alltoallv(c, s, cnt, dsp, r, cnt, dsp, REDCOLL_FLOAT64) != REDCOLL_OK;
  bad |= redcoll_alltoall(c, REDCOLL_IN_PLACE, r, 2, REDCOLL_FLOAT64) != REDCOLL_OK;
  return bad ? REDCOLL_EPROTO : REDCOLL_OK;
}

static void args(void) {
  for (int p = 1; p <= 4; p++) CHECK_INT(redcoll_mock_run(p, NULL, bad_args, NULL, NULL), REDCOLL_OK);
  CHECK_INT(redcoll_threads_run(4, bad_args, NULL), REDCOLL_OK);
}

TEST_MAIN(TEST(matrix_sim), TEST(matrix_threads), TEST(bruck_schedule), TEST(costs),
          TEST(auto_choice), TEST(args))
