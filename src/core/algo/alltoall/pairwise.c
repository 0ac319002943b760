/*
 * Pairwise exchange ("pairwise"): the personalised exchange for large
 * blocks, alltoall and alltoallv.  In round k = 1 .. p-1 rank r sends its
 * block for rank r + k and receives the block of rank r - k (mod p), one
 * full-duplex sendrecv; its own block is a local copy.  Every block travels
 * once, straight from the sender's buffer to its place at the receiver.
 *   alltoall: (p-1) (alpha + B beta), B = count e bytes; each rank sends
 *   and receives (p-1) B, the least possible.
 *   alltoallv: the round's time is that of its larger message; a message of
 *   zero elements is not sent at all (both ends know its size), so a rank
 *   whose counts are all zero sends nothing and waits for nobody, and very
 *   uneven counts cannot deadlock: in every round each rank waits for one
 *   receive at most, from the rank whose send it is paired with.
 *
 * Restrictions: none (no operator).  Scratch: none, except alltoall in
 * place, which first copies recvbuf (one vector) to send from.
 *
 * Example, p = 4, rank 1: round 1 sends to 2, receives from 0; round 2
 * sends to 3, receives from 3; round 3 sends to 0, receives from 2.
 */
#include "algo/alltoall/alltoall.h"
#include "select/cost.h"

/* Element offset and count of block j on the send side (recv = 0) or the
 * receive side (recv = 1). */
static void block_of(const redcoll__call *call, int recv, int j, size_t *off, size_t *n) {
  if (call->coll == REDCOLL_COLL_ALLTOALLV) {
    *off = (recv ? call->rdispls : call->displs)[j];
    *n = (recv ? call->rcounts : call->counts)[j];
  } else {
    *off = (size_t)j * call->count;
    *n = call->count;
  }
}

static int alltoall_pairwise(const redcoll__call *call) {
  redcoll_comm *c = call->comm;
  int p = c->size, r = c->rank, dst, src, rc;
  size_t es = call->esize, so, sn, ro, rn;
  const char *in = call->sendbuf;
  char *out = call->recvbuf;
  if (call->in_place) {
    size_t all = (size_t)p * call->count * es;
    char *copy = redcoll__scratch(c, 0, all);
    if (copy == NULL) return REDCOLL_ENOMEM;
    redcoll__copy(c, copy, out, all);
    in = copy;
  }
  block_of(call, 0, r, &so, &sn);
  block_of(call, 1, r, &ro, &rn);
  if (!call->in_place && sn > 0) redcoll__copy(c, out + ro * es, in + so * es, sn * es);
  /* (alltoall in place: the own block is already there) */
  for (int k = 1; k < p; k++) {
    redcoll__pairwise_peers(p, r, k, &dst, &src);
    block_of(call, 0, dst, &so, &sn);
    block_of(call, 1, src, &ro, &rn);
    /* a block of zero elements is no message (and its place may be NULL) */
    rc = redcoll__sendrecv(c, sn > 0 ? dst : -1, sn > 0 ? in + so * es : NULL, sn * es,
                           rn > 0 ? src : -1, rn > 0 ? out + ro * es : NULL, rn * es);
    if (rc != REDCOLL_OK) return rc;
  }
  return REDCOLL_OK;
}

const redcoll__algo_entry redcoll__algos_pairwise[] = {
    {REDCOLL_COLL_ALLTOALL, REDCOLL_ALGO_PAIRWISE, alltoall_pairwise,
     redcoll__cost_linear_rounds, 0},
    {REDCOLL_COLL_ALLTOALLV, REDCOLL_ALGO_PAIRWISE, alltoall_pairwise,
     redcoll__cost_linear_rounds, 0},
    {REDCOLL_COLL_COUNT, REDCOLL_ALGO_AUTO, NULL, NULL, 0},
};
