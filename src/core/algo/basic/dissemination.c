/*
 * Dissemination barrier (Hensgen, Finkel and Manber): in round k every rank
 * sends an empty message to rank + 2^k and receives one from rank - 2^k
 * (mod p).  After round k a rank has heard, directly or not, from the 2^(k+1)
 * ranks before it, so after ceil(log2 p) rounds from everybody.
 *   cost: ceil(log2 p) alpha, no volume.  Any p.
 * Example, p = 5: round 0: i -> i+1; round 1: i -> i+2; round 2: i -> i+4.
 */
#include "internal.h"
#include "select/cost.h"

static int barrier_dissemination(const redcoll__call *call) {
  redcoll_comm *c = call->comm;
  int p = c->size, rank = c->rank;
  for (int d = 1; d < p; d <<= 1) {
    int rc = redcoll__sendrecv(c, (rank + d) % p, NULL, 0, (rank - d + p) % p, NULL, 0);
    if (rc != REDCOLL_OK) return rc;
  }
  return REDCOLL_OK;
}

static double cost_dissemination(const redcoll__mach *M, const redcoll__cost_args *a) {
  return redcoll__ceil_log2(a->p) * M->a;
}

const redcoll__algo_entry redcoll__algos_dissemination[] = {
    {REDCOLL_COLL_BARRIER, REDCOLL_ALGO_DISSEMINATION, barrier_dissemination, cost_dissemination,
     0},
    {REDCOLL_COLL_COUNT, REDCOLL_ALGO_AUTO, NULL, NULL, 0},
};
