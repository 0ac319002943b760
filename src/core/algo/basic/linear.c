/*
 * Linear algorithms: the baselines every other algorithm is checked against.
 *
 * reduce (root r): every rank sends its vector to r, which combines them in
 * rank order, acc = (((v0 + v1) + v2) + ...).  Cost at the root:
 *   (p-1) alpha + (p-1) m beta + (p-1) m gamma   (p-1 rounds).
 * allreduce: linear reduce to rank 0, then linear broadcast from rank 0:
 *   2(p-1) alpha + 2(p-1) m beta + (p-1) m gamma.
 * bcast: the root sends the vector to each rank in turn: (p-1)(alpha + m beta).
 * reduce_scatter(_block): linear reduce of the whole vector to rank 0, then
 *   rank 0 sends every rank its block.
 * allgather(v): every rank sends its block to rank 0, which broadcasts the
 *   gathered vector linearly.
 *
 * The vectors sent to the root go as piped steps (io.c) in the segments of
 * redcoll__root_segment (the application's, else the transport's: TCP's
 * 1 MiB): the root reduces each segment while the next is on its way, and
 * the cost functions price each of its p - 1 receives as such a step
 * (redcoll__cost_piped) instead of alpha + m (beta + gamma).
 *
 * Restrictions: none; every variant keeps rank order, so non-commutative
 * operators are fine.  Scratch: one vector, except the root of an in-place
 * reduce with root > 1 and rank 0 of reduce_scatter, which hold two (the
 * running sum, and the vector arriving next, beside their own input).
 *
 * Example, reduce on p = 3 with root 0, out of place: rank 0 receives v1
 * into scratch A and writes R = v0 + A, then v2 into A and R = R + A; v0
 * is never copied.
 * Example, reduce on p = 4 with root 2, in place: rank 2 receives v0 into
 * scratch A, v1 into scratch B and computes A = A + B; then its own vector
 * R = A + R; then v3 into A and R = R + A.  Result: ((v0 + v1) + v2) + v3.
 */
#include "internal.h"
#include "select/cost.h"

/* Rank src's vector into buf, cut as its piped send cut it. */
static int recv_whole(const redcoll__call *call, int src, void *buf) {
  return redcoll__sendrecv_reduce_seg(call, redcoll__root_segment(call->comm), -1, NULL, 0, src,
                                      buf, call->count * call->esize, NULL, NULL, 0);
}

/* Reduces the p vectors of call->count elements to rank root, in rank order.
 * input is this rank's vector; at the root the result goes to out, which
 * may equal input (in place). */
static int linear_reduce(const redcoll__call *call, const void *input, void *out, int root) {
  redcoll_comm *c = call->comm;
  size_t n = call->count, bytes = n * call->esize;
  int p = c->size, rc;
  size_t seg = redcoll__root_segment(c);
  if (c->rank != root)
    return redcoll__sendrecv_reduce_seg(call, seg, root, input, bytes, -1, NULL, 0, NULL, NULL, 0);

  if (out != input || root == 0) {
    /* The result buffer is free (or already holds v0): accumulate there.
     * acc is the running sum: at root 0 out of place it starts as the
     * input itself, so that the first reduction writes out (v0 + v1 in one
     * pass) instead of copying v0 there first. */
    void *tmp = NULL;
    const void *acc = out;
    if (p > 1 && (tmp = redcoll__scratch(c, 0, bytes)) == NULL) return REDCOLL_ENOMEM;
    for (int i = 0; i < p; i++) {
      if (i == 0) {
        if (root != 0) {
          if ((rc = recv_whole(call, 0, out)) != REDCOLL_OK) return rc;
        } else {
          acc = input;
        }
        continue;
      }
      if (i != root) {
        /* Piped: each segment reduced as soon as it is in. */
        rc = redcoll__sendrecv_reduce_seg(call, seg, -1, NULL, 0, i, tmp, bytes, out, acc, 0);
        if (rc != REDCOLL_OK) return rc;
      } else {
        redcoll__reduce(call, out, acc, input, n);
      }
      acc = out;
    }
    if (acc != out) redcoll__copy(c, out, acc, bytes); /* p = 1 */
    return REDCOLL_OK;
  }

  /* In place at a root > 0: out holds v_root, which must wait for the
   * prefix v0 + ... + v_{root-1}, accumulated in scratch A. */
  void *a = redcoll__scratch(c, 0, bytes);
  void *b = root > 1 ? redcoll__scratch(c, 1, bytes) : NULL;
  if (a == NULL || (root > 1 && b == NULL)) return REDCOLL_ENOMEM;
  if ((rc = recv_whole(call, 0, a)) != REDCOLL_OK) return rc;
  for (int i = 1; i < root; i++) {
    rc = redcoll__sendrecv_reduce_seg(call, seg, -1, NULL, 0, i, b, bytes, a, a, 0);
    if (rc != REDCOLL_OK) return rc;
  }
  redcoll__reduce(call, out, a, out, n);
  for (int i = root + 1; i < p; i++) {
    rc = redcoll__sendrecv_reduce_seg(call, seg, -1, NULL, 0, i, a, bytes, out, out, 0);
    if (rc != REDCOLL_OK) return rc;
  }
  return REDCOLL_OK;
}

int redcoll__bcast_linear(redcoll_comm *c, void *buf, size_t bytes, int root) {
  if (c->rank != root) return redcoll__recv(c, root, buf, bytes);
  for (int i = 0; i < c->size; i++) {
    if (i == root) continue;
    int rc = redcoll__send(c, i, buf, bytes);
    if (rc != REDCOLL_OK) return rc;
  }
  return REDCOLL_OK;
}

static int reduce_linear(const redcoll__call *call) {
  return linear_reduce(call, call->sendbuf, call->recvbuf, call->root);
}

static int allreduce_linear(const redcoll__call *call) {
  int rc = linear_reduce(call, call->sendbuf, call->recvbuf, 0);
  if (rc != REDCOLL_OK) return rc;
  return redcoll__bcast_linear(call->comm, call->recvbuf, call->count * call->esize, 0);
}

static int bcast_linear(const redcoll__call *call) {
  return redcoll__bcast_linear(call->comm, call->recvbuf, call->count * call->esize, call->root);
}

/* Block i of a reduce_scatter: element offset and count. */
static void rs_block(const redcoll__call *call, int i, size_t *off, size_t *n) {
  if (call->counts == NULL) {
    *off = (size_t)i * call->count;
    *n = call->count;
    return;
  }
  size_t o = 0;
  for (int j = 0; j < i; j++) o += call->counts[j];
  *off = o;
  *n = call->counts[i];
}

static int reduce_scatter_linear(const redcoll__call *call) {
  redcoll_comm *c = call->comm;
  int p = c->size, rc;
  size_t total = call->counts ? call->count : call->count * (size_t)p;
  size_t off, n;
  redcoll__call whole = *call;
  whole.count = total;
  whole.counts = NULL;
  if (c->rank != 0) {
    if ((rc = linear_reduce(&whole, call->sendbuf, NULL, 0)) != REDCOLL_OK) return rc;
    rs_block(call, c->rank, &off, &n);
    return redcoll__recv(c, 0, call->recvbuf, n * call->esize);
  }
  /* Rank 0 accumulates the whole vector in scratch 1 (scratch 0 receives). */
  char *acc = redcoll__scratch(c, 1, total * call->esize);
  if (acc == NULL) return REDCOLL_ENOMEM;
  if ((rc = linear_reduce(&whole, call->sendbuf, acc, 0)) != REDCOLL_OK) return rc;
  for (int i = 1; i < p; i++) {
    rs_block(call, i, &off, &n);
    if ((rc = redcoll__send(c, i, acc + off * call->esize, n * call->esize)) != REDCOLL_OK)
      return rc;
  }
  rs_block(call, 0, &off, &n);
  redcoll__copy(c, call->recvbuf, acc, n * call->esize);
  return REDCOLL_OK;
}

static int allgather_linear(const redcoll__call *call) {
  redcoll_comm *c = call->comm;
  int p = c->size, rc;
  size_t total = call->counts ? call->count : call->count * (size_t)p;
  size_t off, n;
  char *rbuf = call->recvbuf;
  rs_block(call, c->rank, &off, &n);
  if (c->rank != 0) {
    if ((rc = redcoll__send(c, 0, call->sendbuf, n * call->esize)) != REDCOLL_OK) return rc;
  } else {
    if (!call->in_place) redcoll__copy(c, rbuf, call->sendbuf, n * call->esize);
    for (int i = 1; i < p; i++) {
      rs_block(call, i, &off, &n);
      if ((rc = redcoll__recv(c, i, rbuf + off * call->esize, n * call->esize)) != REDCOLL_OK)
        return rc;
    }
  }
  return redcoll__bcast_linear(c, rbuf, total * call->esize, 0);
}

/* ---- cost ---------------------------------------------------------------- */

/* Bytes of the vector, or of the block (count as in the call). */
static double bytes_of(const redcoll__cost_args *a) { return (double)a->count * (double)a->esize; }

/* Start-ups per phase of allreduce and reduce: p-1, one per message; with
 * more ranks than CPUs one, since a rank then waits for a CPU more than for
 * its messages and the root drains what came in meanwhile.  Volume and
 * reductions stay serial at the root.  Measured for these two only
 * (docs/tuning.md), so the other collectives keep p-1. */
static double starts(const redcoll__cost_args *a) { return a->ranks_per_cpu > 1 ? 1 : a->p - 1; }

/* Whether the root's receives of v bytes each are priced as piped steps
 * (io.c): when the root's segment cuts them, and the ranks do not
 * outnumber the CPUs (then no CPU is free to move one piece while the root
 * reduces the one before, and the start-ups of allreduce and reduce
 * overlap instead: starts). */
static int piped(const redcoll__cost_args *a, double v) {
  return a->ranks_per_cpu <= 1 && redcoll__cost_cut(v, a->segment, a->esize) > 0;
}

static double cost_allreduce(const redcoll__mach *M, const redcoll__cost_args *a) {
  double p1 = a->p - 1, m = bytes_of(a);
  if (piped(a, m))
    return p1 * redcoll__cost_piped(M, m, a->segment, a->esize) + p1 * (M->a + m * M->b);
  return 2 * starts(a) * M->a + p1 * m * (2 * M->b + M->g);
}

static double cost_reduce(const redcoll__mach *M, const redcoll__cost_args *a) {
  double p1 = a->p - 1, m = bytes_of(a);
  if (piped(a, m)) return p1 * redcoll__cost_piped(M, m, a->segment, a->esize);
  return starts(a) * M->a + p1 * m * (M->b + M->g);
}

static double cost_reduce_scatter(const redcoll__mach *M, const redcoll__cost_args *a) {
  double p1 = a->p - 1, m = bytes_of(a), v = m * a->p;
  double root = piped(a, v) ? redcoll__cost_piped(M, v, a->segment, a->esize)
                            : redcoll__cost_rnd(M, v, v);
  return p1 * root + p1 * redcoll__cost_rnd(M, m, 0);
}

static double cost_allgather(const redcoll__mach *M, const redcoll__cost_args *a) {
  double p1 = a->p - 1, m = bytes_of(a);
  return p1 * redcoll__cost_rnd(M, m, 0) + p1 * redcoll__cost_rnd(M, m * a->p, 0);
}

/* A gather to rank 0 and a broadcast of empty messages.  No linear barrier
 * runs (the dissemination barrier does): the row below only keeps
 * redcoll_cost_predict's answer for it. */
static double cost_barrier(const redcoll__mach *M, const redcoll__cost_args *a) {
  return 2 * (double)(a->p - 1) * M->a;
}

/* ---- registry ------------------------------------------------------------ */

const redcoll__algo_entry redcoll__algos_linear[] = {
    {REDCOLL_COLL_ALLREDUCE, REDCOLL_ALGO_LINEAR, allreduce_linear, cost_allreduce, 0},
    {REDCOLL_COLL_REDUCE, REDCOLL_ALGO_LINEAR, reduce_linear, cost_reduce, 0},
    {REDCOLL_COLL_BCAST, REDCOLL_ALGO_LINEAR, bcast_linear, redcoll__cost_linear_rounds, 0},
    {REDCOLL_COLL_REDUCE_SCATTER_BLOCK, REDCOLL_ALGO_LINEAR, reduce_scatter_linear,
     cost_reduce_scatter, 0},
    {REDCOLL_COLL_REDUCE_SCATTER, REDCOLL_ALGO_LINEAR, reduce_scatter_linear, cost_reduce_scatter,
     0},
    {REDCOLL_COLL_ALLGATHER, REDCOLL_ALGO_LINEAR, allgather_linear, cost_allgather, 0},
    {REDCOLL_COLL_ALLGATHERV, REDCOLL_ALGO_LINEAR, allgather_linear, cost_allgather, 0},
    {REDCOLL_COLL_BARRIER, REDCOLL_ALGO_LINEAR, NULL, cost_barrier, 0}, /* modelled only */
    {REDCOLL_COLL_COUNT, REDCOLL_ALGO_AUTO, NULL, NULL, 0},
};
