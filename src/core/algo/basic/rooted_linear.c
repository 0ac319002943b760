/*
 * Linear gather and scatter (and gatherv, scatterv): the baselines of the
 * rooted data-movement collectives.
 *
 * gather (root r): every other rank sends its block of n elements to r,
 * which receives them in rank order straight into their places in recvbuf
 * and copies its own block (unless in place).  scatter: the root sends block
 * i of sendbuf to rank i, in rank order, and copies its own block.
 *   cost at the root: (p-1) alpha + (p-1) n beta (p-1 rounds); no scratch.
 *
 * gatherv and scatterv: the same with block i of counts[i] elements at
 * displs[i] at the root; an empty block is no message.  The cost uses the
 * largest block.
 *
 * Restrictions: none (no operator).  In place: gather with the root's block
 * already at recvbuf + root * n (call->sendbuf points there), scatter with the
 * root's block left in sendbuf (call->recvbuf points at it).
 *
 * Example, gather on p = 3 with root 1: rank 1 copies its block to slot 1,
 * receives rank 0's block into slot 0, then rank 2's into slot 2.
 */
#include "internal.h"
#include "select/cost.h"

/* Block i at the root (element offset and count), and the size of rank
 * i's own block: count each for gather and scatter, counts[i] at displs[i]
 * for gatherv and scatterv. */
static void root_block(const redcoll__call *call, int i, size_t *off, size_t *n) {
  int v = call->coll == REDCOLL_COLL_GATHERV || call->coll == REDCOLL_COLL_SCATTERV;
  *n = v ? call->counts[i] : call->count;
  *off = v ? (call->displs != NULL ? call->displs[i] : 0) : (size_t)i * call->count;
}

static int gather_linear(const redcoll__call *call) {
  redcoll_comm *c = call->comm;
  size_t es = call->esize, off, n;
  int rc;
  root_block(call, c->rank, &off, &n);
  if (c->rank != call->root) return n ? redcoll__send(c, call->root, call->sendbuf, n * es) : REDCOLL_OK;
  char *rb = call->recvbuf;
  for (int i = 0; i < c->size; i++) {
    root_block(call, i, &off, &n);
    if (n == 0 || (i == call->root && call->in_place)) continue;
    if (i == call->root) redcoll__copy(c, rb + off * es, call->sendbuf, n * es);
    else if ((rc = redcoll__recv(c, i, rb + off * es, n * es)) != REDCOLL_OK) return rc;
  }
  return REDCOLL_OK;
}

static int scatter_linear(const redcoll__call *call) {
  redcoll_comm *c = call->comm;
  size_t es = call->esize, off, n;
  int rc;
  root_block(call, c->rank, &off, &n);
  if (c->rank != call->root) return n ? redcoll__recv(c, call->root, call->recvbuf, n * es) : REDCOLL_OK;
  const char *sb = call->sendbuf;
  for (int i = 0; i < c->size; i++) {
    root_block(call, i, &off, &n);
    if (n == 0 || (i == call->root && call->in_place)) continue;
    if (i == call->root) redcoll__copy(c, call->recvbuf, sb + off * es, n * es);
    else if ((rc = redcoll__send(c, i, sb + off * es, n * es)) != REDCOLL_OK) return rc;
  }
  return REDCOLL_OK;
}

const redcoll__algo_entry redcoll__algos_rooted_linear[] = {
    {REDCOLL_COLL_GATHER, REDCOLL_ALGO_LINEAR, gather_linear, redcoll__cost_linear_rounds, 0},
    {REDCOLL_COLL_SCATTER, REDCOLL_ALGO_LINEAR, scatter_linear, redcoll__cost_linear_rounds, 0},
    {REDCOLL_COLL_GATHERV, REDCOLL_ALGO_LINEAR, gather_linear, redcoll__cost_linear_rounds, 0},
    {REDCOLL_COLL_SCATTERV, REDCOLL_ALGO_LINEAR, scatter_linear, redcoll__cost_linear_rounds, 0},
    {REDCOLL_COLL_COUNT, REDCOLL_ALGO_AUTO, NULL, NULL, 0},
};
