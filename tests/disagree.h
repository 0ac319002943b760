/*
 * Ranks that disagree where their messages may never meet, for the tests
 * of the transports that catch it (redcoll_transport_tags_conflict):
 *   mode 0: rank 0 allreduce on float32, the others on int32 (AUTO picks
 *           other algorithms on other ranks);
 *   mode 1: rank 0 bcast (root 0), the others allreduce;
 *   mode 2: rank 1 barrier, the others allreduce.
 * disagree_call runs rank r's call; disagree_check asserts what the ranks
 * got: REDCOLL_EMISMATCH on at least one (in the call, or for a bcast root
 * whose sends went out, in the barrier after it); on the others
 * REDCOLL_EABORTED, or REDCOLL_ETRANSPORT when a peer that failed has
 * already left (a bcast root whose sends all went out may return
 * REDCOLL_OK when root_may_pass); and an error from a barrier after it on
 * every rank.  The tests give the wait a bound of a minute, so that
 * a rank that waited for it shows REDCOLL_ETIMEDOUT and fails the check.
 * Include after test.h.
 */
#ifndef REDCOLL_TEST_DISAGREE_H
#define REDCOLL_TEST_DISAGREE_H

#include <stdlib.h>

#include "redcoll/redcoll.h"

#define DISAGREE_MODES 3

__attribute__((unused)) static int disagree_call(redcoll_comm *c, int mode, size_t n) {
  int r = redcoll_comm_rank(c), rc;
  int32_t *in = calloc(n, 4), *out = calloc(n, 4);
  if (in == NULL || out == NULL) {
    free(in);
    free(out);
    return REDCOLL_ENOMEM;
  }
  if (mode == 0)
    rc = redcoll_allreduce(c, in, out, n, r == 0 ? REDCOLL_FLOAT32 : REDCOLL_INT32, REDCOLL_SUM);
  else if (mode == 1 && r == 0)
    rc = redcoll_bcast(c, in, n, REDCOLL_INT32, 0);
  else if (mode == 2 && r == 1)
    rc = redcoll_barrier(c);
  else
    rc = redcoll_allreduce(c, in, out, n, REDCOLL_INT32, REDCOLL_SUM);
  free(in);
  free(out);
  return rc;
}

__attribute__((unused)) static void disagree_check(int p, int mode, size_t n, const int *st,
                                                   const int *next, int root_may_pass) {
  int mism = 0;
  for (int r = 0; r < p; r++) {
    mism += st[r] == REDCOLL_EMISMATCH || next[r] == REDCOLL_EMISMATCH;
    CHECK_MSG(st[r] == REDCOLL_EMISMATCH || st[r] == REDCOLL_EABORTED ||
                  st[r] == REDCOLL_ETRANSPORT ||
                  (st[r] == REDCOLL_OK && root_may_pass && mode == 1 && r == 0),
              "p %d mode %d n %zu rank %d: %s", p, mode, n, r, redcoll_status_name(st[r]));
    CHECK_MSG(next[r] == REDCOLL_EMISMATCH || next[r] == REDCOLL_EABORTED ||
                  next[r] == REDCOLL_ETRANSPORT,
              "p %d mode %d n %zu rank %d, the barrier after: %s", p, mode, n, r,
              redcoll_status_name(next[r]));
  }
  CHECK_MSG(mism >= 1, "p %d mode %d n %zu: no rank saw the mismatch", p, mode, n);
}

#endif /* REDCOLL_TEST_DISAGREE_H */
