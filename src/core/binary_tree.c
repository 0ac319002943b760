/*
 * Binomial trees ("binary_tree").
 *
 * reduce: a binomial tree rooted at rank 0.  In step k (mask 2^k) every rank
 * whose lowest set bit is k sends its partial result, which covers the ranks
 * [rank, rank + 2^k), to rank - 2^k, whose own partial covers the ranks just
 * below: the receiver computes acc = acc + incoming, so operands stay in rank
 * order and every element is bracketed the same way.  For a root other than
 * 0, rank 0 then sends the result to the root (one more round): rotating the
 * tree instead would reorder the operands.
 *   cost: ceil(log2 p) (alpha + m beta + m gamma)  [+ alpha + m beta if root != 0]
 * bcast: a binomial tree rooted at the root (ranks rotated; no operands, so
 * order does not matter): ceil(log2 p) (alpha + m beta).
 * allreduce: reduce to rank 0, then bcast from rank 0:
 *   2 ceil(log2 p) alpha + 2 ceil(log2 p) m beta + ceil(log2 p) m gamma.
 *
 * Restrictions: none; non-commutative operators keep rank order.  Scratch:
 * ranks that receive from children need the incoming vector; inner ranks of
 * reduce other than the root also need an accumulator, as they have no
 * receive buffer (two vectors there).
 *
 * Example, reduce on p = 6, root 0: step 1: 1->0, 3->2, 5->4 (0 holds v0+v1,
 * 2 holds v2+v3, 4 holds v4+v5); step 2: 2->0 (0 holds (v0+v1)+(v2+v3));
 * step 3: 4->0: ((v0+v1)+(v2+v3))+(v4+v5).
 */
#include "internal.h"

/* Whether the rank receives from anybody in the reduction tree. */
static int has_children(int rank, int p) { return (rank & 1) == 0 && rank + 1 < p; }

/* The tree reduction to rank 0.  input is this rank's vector; acc is where a
 * rank that receives accumulates (may equal input); tmp receives.  On return
 * rank 0 has the result in acc. */
static int reduce_to_zero(const redcoll__call *call, const void *input, void *acc, void *tmp) {
  redcoll_comm *c = call->comm;
  int rank = c->rank, p = c->size, rc;
  size_t n = call->count, bytes = n * call->esize;
  const void *cur = input;
  for (int mask = 1; mask < p; mask <<= 1) {
    if (rank & mask) return redcoll__send(c, rank - mask, cur, bytes);
    if (rank + mask < p) {
      if ((rc = redcoll__recv(c, rank + mask, tmp, bytes)) != REDCOLL_OK) return rc;
      redcoll__reduce(call, acc, cur, tmp, n);
      cur = acc;
    }
  }
  if (cur != acc) memcpy(acc, cur, bytes);
  return REDCOLL_OK;
}

static int bcast_bytes(redcoll_comm *c, void *buf, size_t bytes, int root) {
  int p = c->size, rc;
  int vr = (c->rank - root + p) % p;
  int mask = 1;
  /* Receive from the parent: the rank with the lowest set bit cleared. */
  while (mask < p) {
    if (vr & mask) {
      int parent = (vr - mask + root) % p;
      if ((rc = redcoll__recv(c, parent, buf, bytes)) != REDCOLL_OK) return rc;
      break;
    }
    mask <<= 1;
  }
  /* Send to the children, farthest first. */
  for (mask >>= 1; mask > 0; mask >>= 1) {
    if (vr + mask < p) {
      if ((rc = redcoll__send(c, (vr + mask + root) % p, buf, bytes)) != REDCOLL_OK) return rc;
    }
  }
  return REDCOLL_OK;
}

static int reduce_binary_tree(const redcoll__call *call) {
  redcoll_comm *c = call->comm;
  int rank = c->rank, root = call->root, rc;
  size_t bytes = call->count * call->esize;
  void *tmp = NULL, *acc;
  if (has_children(rank, c->size) && (tmp = redcoll__scratch(c, 0, bytes)) == NULL)
    return REDCOLL_ENOMEM;
  if (rank == root && root == 0) {
    acc = call->recvbuf;
  } else if (has_children(rank, c->size)) {
    if ((acc = redcoll__scratch(c, 1, bytes)) == NULL) return REDCOLL_ENOMEM;
  } else {
    acc = (void *)call->sendbuf; /* a leaf never writes acc */
  }
  if ((rc = reduce_to_zero(call, call->sendbuf, acc, tmp)) != REDCOLL_OK) return rc;
  if (root == 0) return REDCOLL_OK;
  if (rank == 0) return redcoll__send(c, root, acc, bytes);
  if (rank == root) return redcoll__recv(c, 0, call->recvbuf, bytes);
  return REDCOLL_OK;
}

static int allreduce_binary_tree(const redcoll__call *call) {
  redcoll_comm *c = call->comm;
  size_t bytes = call->count * call->esize;
  void *tmp = NULL;
  if (has_children(c->rank, c->size) && (tmp = redcoll__scratch(c, 0, bytes)) == NULL)
    return REDCOLL_ENOMEM;
  int rc = reduce_to_zero(call, call->sendbuf, call->recvbuf, tmp);
  if (rc != REDCOLL_OK) return rc;
  return bcast_bytes(c, call->recvbuf, bytes, 0);
}

static int bcast_binary_tree(const redcoll__call *call) {
  return bcast_bytes(call->comm, call->recvbuf, call->count * call->esize, call->root);
}

const redcoll__algo_entry redcoll__algos_binary_tree[] = {
    {REDCOLL_COLL_ALLREDUCE, REDCOLL_ALGO_BINARY_TREE, allreduce_binary_tree, 0},
    {REDCOLL_COLL_REDUCE, REDCOLL_ALGO_BINARY_TREE, reduce_binary_tree, 0},
    {REDCOLL_COLL_BCAST, REDCOLL_ALGO_BINARY_TREE, bcast_binary_tree, 0},
    {REDCOLL_COLL_COUNT, REDCOLL_ALGO_AUTO, NULL, 0},
};
