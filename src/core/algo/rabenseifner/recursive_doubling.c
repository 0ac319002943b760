/*
 * Recursive doubling allreduce ("recursive_doubling"), Rabenseifner (2004)
 * section 2.4.  For short vectors: every step exchanges the whole vector.
 *
 * p = pp + r with pp the largest power of two <= p.  If r > 0, each odd rank
 * 2i+1 (i < r) first sends its vector to the even rank 2i, which reduces
 * v_2i + v_2i+1 and goes on with new rank i; ranks >= 2r get new rank
 * rank - r.  Then lg pp steps of distance doubling among the new ranks: the
 * pair (j, j ^ d) swaps whole partial results and both reduce, the lower new
 * rank's part on the left.  At the end each even rank 2i sends the result to
 * its removed partner 2i+1.
 *
 * Cost, n bytes, f_alpha = f_beta = 1 (the paper's T_all,r.d. exactly):
 *   p = 2^k:  lg p (alpha + n beta + n gamma)
 *   else:     ceil(lg p) (alpha + n beta + n gamma) + alpha + n beta
 *
 * Order: a new rank's partial always covers a contiguous run of ranks and
 * the lower run is the left operand, so every element is bracketed as one
 * balanced tree over the new ranks (leaves below r are the pairs
 * v_2i + v_2i+1): non-commutative operators are fine and all ranks get
 * bitwise identical results.
 *
 * Memory: the incoming vector goes to scratch 0 (one vector); the result is
 * accumulated in recvbuf.
 *
 * Example, p = 6 (pp = 4, r = 2): 1->0 and 3->2 (0 holds v0+v1, 2 holds
 * v2+v3); new ranks 0..3 are ranks 0, 2, 4, 5.  Distance 1: 0<->2 and 4<->5
 * ((v0+v1)+(v2+v3) on 0 and 2, v4+v5 on 4 and 5); distance 2: 0<->4, 2<->5
 * (the whole sum everywhere); then 0->1 and 2->3.
 */
#include "internal.h"
#include "select/cost.h"
#include "algo/rabenseifner/rabenseifner.h"

static int allreduce_recursive_doubling(const redcoll__call *call) {
  redcoll_comm *c = call->comm;
  int p = c->size, rank = c->rank, pp = redcoll__floor_pow2(p), r = p - pp, rc;
  size_t n = call->count, bytes = n * call->esize;
  void *acc = call->recvbuf;
  const void *cur = call->sendbuf; /* where this rank's partial is */
  void *tmp = redcoll__scratch(c, 0, bytes);
  if (tmp == NULL) return REDCOLL_ENOMEM;

  if (rank < 2 * r) {
    if (rank & 1) {
      if ((rc = redcoll__send(c, rank - 1, cur, bytes)) != REDCOLL_OK) return rc;
      return redcoll__recv(c, rank - 1, acc, bytes);
    }
    if ((rc = redcoll__recv(c, rank + 1, tmp, bytes)) != REDCOLL_OK) return rc;
    redcoll__reduce(call, acc, cur, tmp, n);
    cur = acc;
  }
  int j = redcoll__rab_newrank(p, rank, -1);
  for (int d = 1; d < pp; d <<= 1) {
    int peer = redcoll__rab_oldrank(p, j ^ d, -1);
    if ((rc = redcoll__sendrecv(c, peer, cur, bytes, peer, tmp, bytes)) != REDCOLL_OK) return rc;
    if (j & d)
      redcoll__reduce(call, acc, tmp, cur, n);
    else
      redcoll__reduce(call, acc, cur, tmp, n);
    cur = acc;
  }
  if (rank < 2 * r) return redcoll__send(c, rank + 1, acc, bytes);
  return REDCOLL_OK;
}

/* k = floor(log2 p) exchanges of the whole vector, and for p not a power
 * of two the pair step before and the result's return after. */
static double cost_recursive_doubling(const redcoll__mach *M, const redcoll__cost_args *a) {
  int p = a->p, k = redcoll__ilog2_floor(p);
  double m = (double)a->count * (double)a->esize;
  double t = k * redcoll__cost_rnd(M, m, m);
  if (p != 1 << k) t += redcoll__cost_rnd(M, m, m) + redcoll__cost_rnd(M, m, 0);
  return t;
}

const redcoll__algo_entry redcoll__algos_recursive_doubling[] = {
    {REDCOLL_COLL_ALLREDUCE, REDCOLL_ALGO_RECURSIVE_DOUBLING, allreduce_recursive_doubling,
     cost_recursive_doubling, 0},
    {REDCOLL_COLL_COUNT, REDCOLL_ALGO_AUTO, NULL, NULL, 0},
};
