/*
 * Linear gather and scatter: the baselines of the rooted data-movement
 * collectives.
 *
 * gather (root r): every other rank sends its block of n elements to r,
 * which receives them in rank order straight into their places in recvbuf
 * and copies its own block (unless in place).  scatter: the root sends block
 * i of sendbuf to rank i, in rank order, and copies its own block.
 *   cost at the root: (p-1) alpha + (p-1) n beta (p-1 rounds); no scratch.
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

static int gather_linear(const redcoll__call *call) {
  redcoll_comm *c = call->comm;
  size_t blk = call->count * call->esize;
  int rc;
  if (c->rank != call->root) return redcoll__send(c, call->root, call->sendbuf, blk);
  char *rb = call->recvbuf;
  for (int i = 0; i < c->size; i++) {
    if (i == call->root) {
      if (!call->in_place) memcpy(rb + (size_t)i * blk, call->sendbuf, blk);
      continue;
    }
    if ((rc = redcoll__recv(c, i, rb + (size_t)i * blk, blk)) != REDCOLL_OK) return rc;
  }
  return REDCOLL_OK;
}

static int scatter_linear(const redcoll__call *call) {
  redcoll_comm *c = call->comm;
  size_t blk = call->count * call->esize;
  int rc;
  if (c->rank != call->root) return redcoll__recv(c, call->root, call->recvbuf, blk);
  const char *sb = call->sendbuf;
  for (int i = 0; i < c->size; i++) {
    if (i == call->root) {
      if (!call->in_place) memcpy(call->recvbuf, sb + (size_t)i * blk, blk);
      continue;
    }
    if ((rc = redcoll__send(c, i, sb + (size_t)i * blk, blk)) != REDCOLL_OK) return rc;
  }
  return REDCOLL_OK;
}

/* p-1 rounds at the root, one block each. */
static double cost_rooted(const redcoll__mach *M, const redcoll__cost_args *a) {
  return (a->p - 1) * redcoll__cost_rnd(M, (double)a->count * (double)a->esize, 0);
}

const redcoll__algo_entry redcoll__algos_rooted_linear[] = {
    {REDCOLL_COLL_GATHER, REDCOLL_ALGO_LINEAR, gather_linear, cost_rooted, 0},
    {REDCOLL_COLL_SCATTER, REDCOLL_ALGO_LINEAR, scatter_linear, cost_rooted, 0},
    {REDCOLL_COLL_COUNT, REDCOLL_ALGO_AUTO, NULL, NULL, 0},
};
