/*
 * Binomial trees ("binary_tree"), Rabenseifner (2004) section 2.3.  For short
 * vectors: fewest rounds, whole vectors in every message.
 *
 * reduce: a binomial tree toward the root that keeps rank order
 * (redcoll__rab_tree): with t rounds left, the ranks [lo, hi) of a subtree
 * are split at lo + 2^(t-1); the part without the subtree's root is reduced
 * to its lowest rank, which sends it to the root in round t.  Every partial
 * covers a contiguous run of ranks and the receiver puts the lower run on
 * the left, so operands stay in rank order for every root.  For root 0 it is
 * the classical binomial tree.
 *   cost: ceil(lg p) (alpha + n beta + n gamma), any root (T_red,tree)
 * bcast: a binomial tree rooted at the root (ranks rotated; no operands, so
 * order does not matter): ceil(lg p) (alpha + n beta).
 * allreduce: reduce to rank 0, then bcast from rank 0:
 *   2 ceil(lg p) alpha + 2 ceil(lg p) n beta + ceil(lg p) n gamma
 *   (T_all,tree).
 *
 * Restrictions: none; non-commutative operators keep rank order (one
 * bracketing per root, the same for every element; allreduce uses root 0's,
 * so all ranks get bitwise identical results).  Scratch: a rank that
 * receives needs the incoming vector (scratch 0); in a reduce, one that
 * receives and is not the root also needs an accumulator (scratch 1), as it
 * has no receive buffer: two vectors there.
 *
 * Example, reduce on p = 6, root 5 (3 rounds): round 1: 1->0, 3->2, 4->5
 * (0 holds v0+v1, 2 holds v2+v3, 5 holds v4+v5); round 2: 2->0 (0 holds
 * (v0+v1)+(v2+v3)); round 3: 0->5, which computes
 * ((v0+v1)+(v2+v3))+(v4+v5).  Root 0: 1->0, 3->2, 5->4; 2->0; 4->0.
 */
#include "internal.h"
#include "select/cost.h"
#include "algo/rabenseifner/rabenseifner.h"

/* The reduction toward root along redcoll__rab_tree.  A rank that receives
 * accumulates in acc and receives into tmp; the root ends with the result in
 * acc. */
static int tree_reduce(const redcoll__call *call, int root, const int *from, int nr, int parent,
                       void *acc, void *tmp) {
  redcoll_comm *c = call->comm;
  int rank = c->rank, rc;
  size_t n = call->count, bytes = n * call->esize;
  const void *cur = call->sendbuf;
  for (int i = 0; i < nr; i++) {
    if ((rc = redcoll__recv(c, from[i], tmp, bytes)) != REDCOLL_OK) return rc;
    if (from[i] < rank)
      redcoll__reduce(call, acc, tmp, cur, n);
    else
      redcoll__reduce(call, acc, cur, tmp, n);
    cur = acc;
  }
  if (parent >= 0) return redcoll__send(c, parent, cur, bytes);
  if (rank == root && cur != acc) redcoll__copy(c, acc, cur, bytes);
  return REDCOLL_OK;
}

int redcoll__bcast_binomial(redcoll_comm *c, void *buf, size_t bytes, int root) {
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
  int rank = c->rank, root = call->root, from[32], parent;
  size_t bytes = call->count * call->esize;
  int nr = redcoll__rab_tree(c->size, root, rank, from, &parent);
  void *tmp = NULL, *acc = call->recvbuf;
  if (nr > 0) {
    if ((tmp = redcoll__scratch(c, 0, bytes)) == NULL) return REDCOLL_ENOMEM;
    if (rank != root && (acc = redcoll__scratch(c, 1, bytes)) == NULL) return REDCOLL_ENOMEM;
  }
  return tree_reduce(call, root, from, nr, parent, acc, tmp);
}

static int allreduce_binary_tree(const redcoll__call *call) {
  redcoll_comm *c = call->comm;
  int from[32], parent;
  size_t bytes = call->count * call->esize;
  int nr = redcoll__rab_tree(c->size, 0, c->rank, from, &parent);
  void *tmp = NULL;
  if (nr > 0 && (tmp = redcoll__scratch(c, 0, bytes)) == NULL) return REDCOLL_ENOMEM;
  int rc = tree_reduce(call, 0, from, nr, parent, call->recvbuf, tmp);
  if (rc != REDCOLL_OK) return rc;
  return redcoll__bcast_binomial(c, call->recvbuf, bytes, 0);
}

static int bcast_binary_tree(const redcoll__call *call) {
  return redcoll__bcast_binomial(call->comm, call->recvbuf, call->count * call->esize, call->root);
}

/* ---- cost: ceil(log2 p) rounds per tree pass ---------------------------- */

static double cost_allreduce(const redcoll__mach *M, const redcoll__cost_args *a) {
  int q = redcoll__ceil_log2(a->p);
  double m = (double)a->count * (double)a->esize;
  return q * redcoll__cost_rnd(M, m, m) + q * redcoll__cost_rnd(M, m, 0);
}

/* The tree is rooted at the root: no forwarding. */
static double cost_reduce(const redcoll__mach *M, const redcoll__cost_args *a) {
  double m = (double)a->count * (double)a->esize;
  return redcoll__ceil_log2(a->p) * redcoll__cost_rnd(M, m, m);
}

static double cost_bcast(const redcoll__mach *M, const redcoll__cost_args *a) {
  double m = (double)a->count * (double)a->esize;
  return redcoll__ceil_log2(a->p) * redcoll__cost_rnd(M, m, 0);
}

const redcoll__algo_entry redcoll__algos_binary_tree[] = {
    {REDCOLL_COLL_ALLREDUCE, REDCOLL_ALGO_BINARY_TREE, allreduce_binary_tree, cost_allreduce, 0},
    {REDCOLL_COLL_REDUCE, REDCOLL_ALGO_BINARY_TREE, reduce_binary_tree, cost_reduce, 0},
    {REDCOLL_COLL_BCAST, REDCOLL_ALGO_BINARY_TREE, bcast_binary_tree, cost_bcast, 0},
    {REDCOLL_COLL_COUNT, REDCOLL_ALGO_AUTO, NULL, NULL, 0},
};
