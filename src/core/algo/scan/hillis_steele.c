/*
 * Simultaneous doubling ("hillis_steele"; Hillis and Steele, "Data parallel
 * algorithms", CACM 1986; the scan of Sanders and Traff's comparison of MPI
 * prefix algorithms, EuroPVM/MPI 2006): the prefix for short vectors, in
 * the fewest rounds for every p.
 *
 * In the round at distance d = 1, 2, 4, ... < p, every rank r with r + d < p
 * sends its window W_r to r + d while receiving W_{r-d} from r - d (one
 * full-duplex sendrecv), and puts it on the left: W_r = W_{r-d} (+) W_r.
 * After the round at distance d, W_r = v_{max(0, r-2d+1)} (+) ... (+) v_r,
 * so after q = ceil(log2 p) rounds W_r is the inclusive prefix.  The
 * exclusive prefix E_r gathers the received windows alone (the first one
 * is received straight into recvbuf; rank 0 receives nothing and leaves
 * recvbuf alone).  Every rank does its q rounds at once; no rank waits for
 * another's result, unlike the binomial up- and down-sweep (2q rounds,
 * Blelloch 1990), which sends less but takes twice the start-ups — for
 * short vectors the start-ups are the cost.
 *   scan:   q (alpha + m beta + m gamma)
 *   exscan: q (alpha + m beta) + (2q - 1) m gamma at most (both windows)
 *   exscan_total: rank p-1's window is the total; a binomial broadcast from
 *   rank p-1 hands it to everybody: q more rounds, + q (alpha + m beta).
 *   Rank 0 sends in all q rounds: q m sent; rank p-1 receives q m.  A
 *   window that nobody will receive again is not updated.
 *
 * Restrictions: none; the received window always covers lower ranks and
 * goes on the left, so rank order is kept.  Scratch: the received window
 * (scratch 0); exscan also keeps the inclusive window apart (scratch 1).
 *
 * Example, scan on p = 5 (q = 3): d = 1: W1 = v0+v1, W2 = v1+v2,
 * W3 = v2+v3, W4 = v3+v4; d = 2: W2 = v0+(v1+v2), W3 = (v0+v1)+(v2+v3),
 * W4 = (v1+v2)+(v3+v4); d = 4: W4 = v0+((v1+v2)+(v3+v4)).
 */
#include "algo/scan/scan.h"
#include "select/cost.h"

static int scan_inclusive(const redcoll__call *call, void *tmp) {
  redcoll_comm *c = call->comm;
  int p = c->size, r = c->rank, dst, src, rc;
  size_t n = call->count, bytes = n * call->esize;
  char *w = call->recvbuf;
  if (!call->in_place) redcoll__copy(c, w, call->sendbuf, bytes);
  for (int d = 1; d < p; d <<= 1) {
    redcoll__hs_peers(p, r, d, &dst, &src);
    if ((rc = redcoll__sendrecv(c, dst, w, bytes, src, tmp, bytes)) != REDCOLL_OK) return rc;
    if (src >= 0) redcoll__reduce(call, w, tmp, w, n);
  }
  return REDCOLL_OK;
}

/* The exclusive prefix into recvbuf and, for exscan_total, the inclusive
 * window of rank p-1 into total there. */
static int scan_exclusive(const redcoll__call *call, void *tmp, void *w) {
  redcoll_comm *c = call->comm;
  int p = c->size, r = c->rank, dst, src, rc, have = 0;
  int keep_last = call->total != NULL;
  size_t n = call->count, bytes = n * call->esize;
  char *e = call->recvbuf;
  redcoll__copy(c, w, call->sendbuf, bytes); /* before recvbuf is written: in place they meet */
  for (int d = 1; d < p; d <<= 1) {
    redcoll__hs_peers(p, r, d, &dst, &src);
    void *in = have ? tmp : e;
    if ((rc = redcoll__sendrecv(c, dst, w, bytes, src, in, bytes)) != REDCOLL_OK) return rc;
    if (src < 0) continue;
    if (redcoll__hs_window_needed(p, r, d, keep_last)) redcoll__reduce(call, w, in, w, n);
    if (have) redcoll__reduce(call, e, tmp, e, n);
    have = 1;
  }
  if (keep_last && r == p - 1) redcoll__copy(c, call->total, w, bytes);
  return REDCOLL_OK;
}

static int scan_hillis_steele(const redcoll__call *call) {
  redcoll_comm *c = call->comm;
  size_t bytes = call->count * call->esize;
  void *tmp = redcoll__scratch(c, 0, bytes);
  if (tmp == NULL) return REDCOLL_ENOMEM;
  if (call->coll == REDCOLL_COLL_SCAN) return scan_inclusive(call, tmp);
  void *w = redcoll__scratch(c, 1, bytes);
  if (w == NULL) return REDCOLL_ENOMEM;
  int rc = scan_exclusive(call, tmp, w);
  if (rc != REDCOLL_OK || call->coll != REDCOLL_COLL_EXSCAN_TOTAL) return rc;
  return redcoll__bcast_binomial(c, call->total, bytes, c->size - 1);
}

/* ---- cost ---------------------------------------------------------------- */

static double cost_scan(const redcoll__mach *M, const redcoll__cost_args *a) {
  double m = (double)a->count * (double)a->esize;
  return redcoll__ceil_log2(a->p) * redcoll__cost_rnd(M, m, m);
}

static double cost_exscan(const redcoll__mach *M, const redcoll__cost_args *a) {
  double m = (double)a->count * (double)a->esize;
  int q = redcoll__ceil_log2(a->p);
  return q * redcoll__cost_rnd(M, m, m) + (q - 1) * m * M->g;
}

static double cost_total(const redcoll__mach *M, const redcoll__cost_args *a) {
  double m = (double)a->count * (double)a->esize;
  return cost_exscan(M, a) + redcoll__ceil_log2(a->p) * redcoll__cost_rnd(M, m, 0);
}

const redcoll__algo_entry redcoll__algos_hillis_steele[] = {
    {REDCOLL_COLL_SCAN, REDCOLL_ALGO_HILLIS_STEELE, scan_hillis_steele, cost_scan, 0},
    {REDCOLL_COLL_EXSCAN, REDCOLL_ALGO_HILLIS_STEELE, scan_hillis_steele, cost_exscan, 0},
    {REDCOLL_COLL_EXSCAN_TOTAL, REDCOLL_ALGO_HILLIS_STEELE, scan_hillis_steele, cost_total, 0},
    {REDCOLL_COLL_COUNT, REDCOLL_ALGO_AUTO, NULL, NULL, 0},
};
