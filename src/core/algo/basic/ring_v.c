/*
 * Ring allgatherv with displacements ("ring"): every rank's block reaches
 * every other rank along the ring, each block written only where displs
 * puts it.  In round k = 0 .. p-2 rank r sends block (r - k) mod p to rank
 * r + 1 and receives block (r - k - 1) mod p from rank r - 1, straight from
 * and into recvbuf at the blocks' displacements (round 0 sends from
 * sendbuf unless in place); an empty block is no message.
 *   cost: (p-1) (alpha + b beta) for the largest block b; every rank sends
 *   and receives N - n_r elements (all blocks but its own): the least any
 *   algorithm can move.  p-1 rounds: for many ranks and small blocks the
 *   start-ups dominate (redcoll_allgatherv, whose blocks are end to end,
 *   has the ceil(log2 p)-round circulant algorithm).
 *
 * Restrictions: none (no operator).  No scratch, no copies but the own
 * block's.
 *
 * Example, p = 3: round 0: 0 -> 1 block 0, 1 -> 2 block 1, 2 -> 0 block 2;
 * round 1: 0 -> 1 block 2, 1 -> 2 block 0, 2 -> 0 block 1.
 */
#include "internal.h"
#include "select/cost.h"

static int allgatherv_ring(const redcoll__call *call) {
  redcoll_comm *c = call->comm;
  int p = c->size, r = c->rank, rc;
  size_t es = call->esize;
  char *out = call->recvbuf;
  const size_t *n = call->counts, *d = call->displs;
  if (!call->in_place && n[r] > 0) redcoll__copy(c, out + d[r] * es, call->sendbuf, n[r] * es);
  for (int k = 0; k < p - 1; k++) {
    int sb = redcoll__mod(r - k, p), rb = redcoll__mod(r - k - 1, p);
    rc = redcoll__sendrecv(c, n[sb] > 0 ? (r + 1) % p : -1, n[sb] > 0 ? out + d[sb] * es : NULL,
                           n[sb] * es, n[rb] > 0 ? (r - 1 + p) % p : -1,
                           n[rb] > 0 ? out + d[rb] * es : NULL, n[rb] * es);
    if (rc != REDCOLL_OK) return rc;
  }
  return REDCOLL_OK;
}

const redcoll__algo_entry redcoll__algos_ring_v[] = {
    {REDCOLL_COLL_ALLGATHERV_DISPLS, REDCOLL_ALGO_RING, allgatherv_ring,
     redcoll__cost_linear_rounds, 0},
    {REDCOLL_COLL_COUNT, REDCOLL_ALGO_AUTO, NULL, NULL, 0},
};
