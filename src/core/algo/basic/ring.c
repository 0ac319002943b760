/*
 * Pairwise-exchange reduce-scatter with a ring allgather ("ring"),
 * Rabenseifner (2004) section 2.7 (after Thakur and Gropp).  For long vectors
 * and few ranks: bandwidth optimal for any p, latency linear in p.
 *
 * The vector is cut into p chunks (the first n % p one element longer);
 * rank k owns chunk k.  Reduce-scatter: in step i = 1..p-1 rank k sends its
 * input's chunk k+i to rank k+i and receives chunk k of rank k-i (mod p),
 * which it reduces into its own chunk.
 *   allreduce: ring allgather, p-1 steps: in step s rank k sends chunk
 *     k-s+1 to k+1 and receives chunk k-s from k-1 (mod p).
 *   reduce: every rank sends its reduced chunk straight to the root.
 *
 * Cost, n bytes, f_alpha = f_beta = 1, n divisible by p (the paper's
 * formulas exactly):
 *   allreduce 2(p-1) alpha + 2 (1 - 1/p) n beta + (1 - 1/p) n gamma
 *   reduce    2(p-1) alpha + 2 (1 - 1/p) n beta + (1 - 1/p) n gamma
 * Otherwise every n/p becomes ceil(n/p).
 *
 * Each reduce-scatter step is piped (io.c, redcoll_comm_set_segment): a
 * chunk of at least two segments arrives in segments, each reduced while
 * the next is on its way, so that on a transport that posts exchanges a
 * step costs about max(beta, gamma) per byte instead of beta + gamma.
 *
 * Restriction: commutative operators only.  Chunk k collects the inputs in
 * the order k, k-1, ..., k+1 (mod p), a different order for every chunk;
 * even keeping rank order with two accumulators would bracket each chunk
 * differently, so it is registered as needing commutativity.
 *
 * Memory: scratch 0 holds one incoming chunk; ranks other than the root of
 * a reduce accumulate their chunk in scratch 1 (one chunk).
 *
 * Example, allreduce p = 3, chunks A B C: step 1: 0 sends B to 1, 1 sends
 * C to 2, 2 sends A to 0; step 2: 0 sends C to 2, 1 sends A to 0, 2 sends B
 * to 1.  Now 0 holds A, 1 B, 2 C reduced; two ring steps give everyone all.
 */
#include "internal.h"
#include "select/cost.h"
#include "algo/rabenseifner/rabenseifner.h"

/* Reduce-scatter into acc (chunk `rank` of the result). */
static int ring_reduce_scatter(const redcoll__call *call, char *acc, char *tmp) {
  redcoll_comm *c = call->comm;
  int p = c->size, rank = c->rank, rc;
  size_t n = call->count, es = call->esize, mlo, mhi;
  const char *in = call->sendbuf;
  redcoll__rab_chunk(n, p, rank, &mlo, &mhi);
  const char *cur = in + mlo * es;
  for (int i = 1; i < p; i++) {
    int dst = (rank + i) % p, src = (rank - i + p) % p;
    size_t lo, hi;
    redcoll__rab_chunk(n, p, dst, &lo, &hi);
    rc = redcoll__sendrecv_reduce(call, dst, in + lo * es, (hi - lo) * es, src, tmp,
                                  (mhi - mlo) * es, acc, cur, 0);
    if (rc != REDCOLL_OK) return rc;
    cur = acc;
  }
  return REDCOLL_OK;
}

static int allreduce_ring(const redcoll__call *call) {
  redcoll_comm *c = call->comm;
  int p = c->size, rank = c->rank, rc;
  size_t n = call->count, es = call->esize, lo, hi;
  char *out = call->recvbuf;
  redcoll__rab_chunk(n, p, rank, &lo, &hi);
  char *tmp = redcoll__scratch(c, 0, (n / (size_t)p + 1) * es);
  if (tmp == NULL) return REDCOLL_ENOMEM;
  if ((rc = ring_reduce_scatter(call, out + lo * es, tmp)) != REDCOLL_OK) return rc;
  int next = (rank + 1) % p, prev = (rank - 1 + p) % p;
  for (int s = 1; s < p; s++) {
    size_t slo, shi, rlo, rhi;
    redcoll__rab_chunk(n, p, (rank - s + 1 + p) % p, &slo, &shi);
    redcoll__rab_chunk(n, p, (rank - s + p) % p, &rlo, &rhi);
    rc = redcoll__sendrecv(c, next, out + slo * es, (shi - slo) * es, prev, out + rlo * es,
                           (rhi - rlo) * es);
    if (rc != REDCOLL_OK) return rc;
  }
  return REDCOLL_OK;
}

static int reduce_ring(const redcoll__call *call) {
  redcoll_comm *c = call->comm;
  int p = c->size, rank = c->rank, root = call->root, rc;
  size_t n = call->count, es = call->esize, lo, hi, big = (n / (size_t)p + 1) * es;
  char *tmp = redcoll__scratch(c, 0, big);
  if (tmp == NULL) return REDCOLL_ENOMEM;
  redcoll__rab_chunk(n, p, rank, &lo, &hi);
  if (rank != root) {
    char *acc = redcoll__scratch(c, 1, big);
    if (acc == NULL) return REDCOLL_ENOMEM;
    if ((rc = ring_reduce_scatter(call, acc, tmp)) != REDCOLL_OK) return rc;
    return redcoll__send(c, root, acc, (hi - lo) * es);
  }
  char *out = call->recvbuf;
  if ((rc = ring_reduce_scatter(call, out + lo * es, tmp)) != REDCOLL_OK) return rc;
  for (int k = 0; k < p; k++) {
    if (k == root) continue;
    redcoll__rab_chunk(n, p, k, &lo, &hi);
    if ((rc = redcoll__recv(c, k, out + lo * es, (hi - lo) * es)) != REDCOLL_OK) return rc;
  }
  return REDCOLL_OK;
}

/* Allreduce and reduce alike: 2(p-1) rounds of a block, p-1 reductions. */
static double cost_ring(const redcoll__mach *M, const redcoll__cost_args *a) {
  int p = a->p;
  double b = redcoll__cost_blk(a->count, (size_t)p, a->esize);
  return 2 * (p - 1) * M->a + 2 * (p - 1) * b * M->b + (p - 1) * b * M->g;
}

const redcoll__algo_entry redcoll__algos_ring[] = {
    {REDCOLL_COLL_ALLREDUCE, REDCOLL_ALGO_RING, allreduce_ring, cost_ring,
     REDCOLL__NEEDS_COMMUTATIVE},
    {REDCOLL_COLL_REDUCE, REDCOLL_ALGO_RING, reduce_ring, cost_ring, REDCOLL__NEEDS_COMMUTATIVE},
    {REDCOLL_COLL_COUNT, REDCOLL_ALGO_AUTO, NULL, NULL, 0},
};
