/*
 * Linear prefix reductions ("linear"): the baseline, and what Open MPI's
 * scan does.  A chain 0 -> 1 -> ... -> p-1: rank i receives the inclusive
 * prefix P_{i-1} = v_0 (+) ... (+) v_{i-1} from rank i-1, which is its
 * exclusive prefix, combines P_i = P_{i-1} (+) v_i and sends it on.
 *   scan, exscan: p-1 rounds, (p-1) (alpha + m beta + m gamma) on the
 *   critical path (rank p-1); every rank sends and receives at most m.
 *   exscan_total: rank p-1's inclusive prefix is the total, which it then
 *   sends to every rank in turn: 2(p-1) rounds, (p-1) m more sent by rank
 *   p-1.  The total is computed once, so every rank has the same bits.
 *
 * Restrictions: none; rank order is kept (the received prefix is always the
 * left operand).  Scratch: one vector at a rank that forwards an exclusive
 * prefix (the inclusive one it sends) or receives in place.
 *
 * Example, exscan_total on p = 3: rank 0 sends v0 to 1; rank 1 keeps v0,
 * sends v0+v1 to 2; rank 2 keeps v0+v1 and computes the total
 * (v0+v1)+v2, which it sends to 0 and then to 1.
 */
#include "algo/scan/scan.h"
#include "select/cost.h"

static int scan_linear(const redcoll__call *call) {
  redcoll_comm *c = call->comm;
  int p = c->size, r = c->rank, rc;
  redcoll_coll kind = call->coll;
  size_t n = call->count, bytes = n * call->esize;
  const void *v = call->sendbuf;
  char *out = call->recvbuf;
  int last = r == p - 1;
  void *tmp = NULL;
  if (r > 0 && (call->in_place || (kind != REDCOLL_COLL_SCAN && !last)) &&
      (tmp = redcoll__scratch(c, 0, bytes)) == NULL)
    return REDCOLL_ENOMEM;

  if (kind == REDCOLL_COLL_SCAN) {
    if (r == 0) {
      if (!call->in_place) redcoll__copy(c, out, v, bytes);
    } else {
      void *prev = call->in_place ? tmp : out;
      if ((rc = redcoll__recv(c, r - 1, prev, bytes)) != REDCOLL_OK) return rc;
      redcoll__reduce(call, out, prev, v, n);
    }
    return last ? REDCOLL_OK : redcoll__send(c, r + 1, out, bytes);
  }

  /* Exclusive: the received prefix is the result; the one sent on (or, at
   * the last rank of exscan_total, the total) is it combined with v. */
  if (r == 0) {
    if ((rc = redcoll__send(c, 1, v, bytes)) != REDCOLL_OK) return rc;
  } else {
    void *prev = call->in_place ? tmp : out;
    if ((rc = redcoll__recv(c, r - 1, prev, bytes)) != REDCOLL_OK) return rc;
    void *incl = last ? call->total : call->in_place ? out : tmp;
    if (incl != NULL) redcoll__reduce(call, incl, prev, v, n);
    if (!last && (rc = redcoll__send(c, r + 1, incl, bytes)) != REDCOLL_OK) return rc;
    if (call->in_place) redcoll__copy(c, out, tmp, bytes);
  }
  if (kind != REDCOLL_COLL_EXSCAN_TOTAL) return REDCOLL_OK;
  return redcoll__bcast_linear(c, call->total, bytes, p - 1);
}

/* ---- cost ---------------------------------------------------------------- */

static double cost_scan(const redcoll__mach *M, const redcoll__cost_args *a) {
  double m = (double)a->count * (double)a->esize;
  return (a->p - 1) * redcoll__cost_rnd(M, m, m);
}

static double cost_total(const redcoll__mach *M, const redcoll__cost_args *a) {
  double m = (double)a->count * (double)a->esize;
  return cost_scan(M, a) + (a->p - 1) * redcoll__cost_rnd(M, m, 0);
}

const redcoll__algo_entry redcoll__algos_scan_linear[] = {
    {REDCOLL_COLL_SCAN, REDCOLL_ALGO_LINEAR, scan_linear, cost_scan, 0},
    {REDCOLL_COLL_EXSCAN, REDCOLL_ALGO_LINEAR, scan_linear, cost_scan, 0},
    {REDCOLL_COLL_EXSCAN_TOTAL, REDCOLL_ALGO_LINEAR, scan_linear, cost_total, 0},
    {REDCOLL_COLL_COUNT, REDCOLL_ALGO_AUTO, NULL, NULL, 0},
};
