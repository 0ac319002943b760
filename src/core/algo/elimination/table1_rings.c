/*
 * The two ring protocols of Table 1 of Rabenseifner and Traeff (2004),
 * "Ring, latency-optimal" and "Ring, bandwidth-optimal", for allreduce and
 * reduce.  Both keep the canonical rank order with one bracketing,
 * ((v0 + v1) + v2) + ... + v_{p-1}, for every element on every rank, by
 * postponing every reduction until all operands of an element are present
 * at the rank that reduces it.  Non-commutative operators are fine.
 * m is the vector in bytes; alpha, beta, gamma as in the simulator's cost model
 *
 * allgather_reduce ("Ring, latency-optimal"):
 *   allreduce: every rank gathers all p input vectors with the dissemination
 *   (Bruck) allgather, ceil(log2 p) rounds in which rank i sends what it has
 *   to i - d and receives from i + d (d = 1, 2, 4, ...), then reduces the p
 *   vectors locally in rank order.
 *     ceil(log2 p) alpha + (p-1) m beta + (p-1) m gamma.
 *   reduce (root r): the allgather is replaced by a binomial gather to r over
 *   the relative ranks (i - r) mod p, ceil(log2 p) rounds, and r alone
 *   reduces; same cost at the root.  Each rank copies its input into slot
 *   0 of its scratch once, so that what it forwards is contiguous.
 *   Restriction: by its nature this protocol holds all p inputs: its scratch
 *   is p vectors (p m bytes) at every rank for allreduce and at the root of
 *   reduce (a non-root of reduce holds its binomial subtree, at most p/2
 *   vectors; a leaf none).  Only sensible for small m or small p.
 *
 * ring_sequential ("Ring, bandwidth-optimal"):
 *   The vector is cut into p balanced blocks; rank i owns block
 *   (i - r) mod p (r = root, 0 for allreduce).  Reduction phase: p-1 rounds
 *   of a personalised exchange; in round k rank i sends its own piece of the
 *   block owned by i - k to i - k and receives the piece of its own block
 *   from i + k (a "ring" of stride k).  Partial results are never combined on
 *   the way, so the owner ends up with all p pieces of its block and reduces
 *   them sequentially in rank order (the postponed reduction of section 3.4).
 *   Routing phase: allreduce uses the dissemination allgather of the reduced
 *   blocks (ceil(log2 p) rounds, (1 - 1/p) m per rank), reduce a binomial
 *   gather of the blocks to the root (same cost).  For p | m:
 *     (p - 1 + ceil(log2 p)) alpha + 2 (1 - 1/p) m beta + (1 - 1/p) m gamma,
 *   the formula t_ring,bw-opt of section 3.5.  (A stride-1 ring that forwards
 *   pieces without reducing them would move (p-1) m / 2 per rank; the paper's
 *   m/p per round is only possible with direct partners i +- k, which the
 *   one-ported fully connected model allows.)
 *   Scratch: p slots of the own block for its pieces, p ceil(count/p)
 *   elements (one vector when p divides the count, else less than p
 *   elements more), reused by the routing phase: the allgather packs a block
 *   range that wraps around the end of the vector through it (local copies,
 *   outside the cost model), and a non-root of reduce gathers its subtree's
 *   blocks in it (less than one vector).  Empty blocks (count < p) are not
 *   sent.
 *
 * Example, ring_sequential allreduce on p = 3, count 6 (blocks A B C of two
 * elements, owned by ranks 0 1 2; X_j is rank j's piece of block X).
 *   round k = 1, i sends to i - 1:  0 -> 2 C_0,  1 -> 0 A_1,  2 -> 1 B_2
 *   round k = 2, i sends to i - 2:  0 -> 1 B_0,  1 -> 2 C_1,  2 -> 0 A_2
 *   rank 0: A = (A_0 + A_1) + A_2, rank 1: B = (B_0 + B_1) + B_2, rank 2: C.
 *   allgather d = 1, i sends block i to i - 1:  0 -> 2 A, 1 -> 0 B, 2 -> 1 C
 *   allgather d = 2, one block left to send:    0 -> 1 A, 1 -> 2 B, 2 -> 0 C
 * 4 rounds = (3 - 1) + ceil(log2 3); each rank sends and receives 8
 * elements = 2 (1 - 1/3) 6 and reduces 4 = (1 - 1/3) 6.
 * Reduce with root 2: block (i - 2) mod 3, so rank 2 owns A, rank 0 owns B,
 * rank 1 owns C; the same exchange, then the binomial gather over relative
 * ranks: step 1 rank 0 -> 2 (B), step 2 rank 1 -> 2 (C), each range landing
 * contiguously in the root's recvbuf.
 */
#include "algo/elimination/table1_rings.h"

#include "internal.h"
#include "select/cost.h"

/* ---- pure rank arithmetic ------------------------------------------------ */

int redcoll__ringp_range(size_t n, int p, int first, int nblocks, redcoll__ringp_seg seg[2]) {
  int k = 0;
  int end = first + nblocks;
  int stop = end < p ? end : p;
  size_t a = redcoll__block_start(n, (size_t)p, (size_t)first);
  size_t b = redcoll__block_start(n, (size_t)p, (size_t)stop);
  if (b > a) {
    seg[k].off = a;
    seg[k].len = b - a;
    k++;
  }
  if (end > p) {
    size_t e = redcoll__block_start(n, (size_t)p, (size_t)(end - p));
    if (e > 0) {
      seg[k].off = 0;
      seg[k].len = e;
      k++;
    }
  }
  return k;
}

int redcoll__ringp_bruck_count(int p, int d) { return d < p - d ? d : p - d; }

int redcoll__ringp_subtree(int p, int rr) {
  if (rr == 0) return p;
  int low = rr & -rr;
  return low < p - rr ? low : p - rr;
}

int redcoll__ringp_gather_step(int p, int rr, int d, int *peer, int *nblocks) {
  if (rr & (d - 1)) return 0; /* sent at an earlier step */
  if (rr & d) {
    *peer = rr - d;
    *nblocks = redcoll__ringp_subtree(p, rr);
    return -1;
  }
  if (rr + d < p) {
    *peer = rr + d;
    *nblocks = redcoll__ringp_subtree(p, rr + d);
    return 1;
  }
  return 0;
}

void redcoll__ringp_exchange_peers(int p, int rank, int k, int *to, int *from) {
  *to = (rank - k + p) % p;
  *from = (rank + k) % p;
}

int redcoll__ringp_block_of(int p, int rank, int root) { return (rank - root + p) % p; }

double redcoll__ringp_cost_allgather_reduce(int p, double m, double alpha, double beta,
                                            double gamma) {
  return redcoll__ceil_log2(p) * alpha + (p - 1) * m * beta + (p - 1) * m * gamma;
}

double redcoll__ringp_cost_ring_sequential(int p, double m, double alpha, double beta,
                                           double gamma) {
  double f = 1.0 - 1.0 / p;
  return (p - 1 + redcoll__ceil_log2(p)) * alpha + 2.0 * f * m * beta + f * m * gamma;
}

/* ---- communication helpers ----------------------------------------------- */

/* One round: send slen bytes to `to` and receive rlen bytes from `from`, as
 * one full-duplex sendrecv; an empty side is left out (both ends compute the
 * same lengths, so they agree on it). */
static int xfer(redcoll_comm *c, int to, const void *sbuf, size_t slen, int from, void *rbuf,
                size_t rlen) {
  if (slen > 0 && rlen > 0) return redcoll__sendrecv(c, to, sbuf, slen, from, rbuf, rlen);
  if (slen > 0) return redcoll__send(c, to, sbuf, slen);
  if (rlen > 0) return redcoll__recv(c, from, rbuf, rlen);
  return REDCOLL_OK;
}

/* Where the p operands of a local reduction are: operand j (rank j's
 * vector or piece) is own if j == own_idx, else slot (j - rot) mod p of
 * base, slots being stride bytes apart. */
typedef struct operands {
  const char *base;
  size_t stride;
  int rot, own_idx;
  const void *own;
} operands;

static const void *operand(const operands *o, int j, int p) {
  if (j == o->own_idx) return o->own;
  return o->base + (size_t)((j - o->rot + p) % p) * o->stride;
}

/* out = (((v0 + v1) + v2) + ...) + v_{p-1} over p >= 2 operands of n
 * elements.  out may be operand 0 or 1 but no later one. */
static void reduce_in_order(const redcoll__call *call, void *out, const operands *o, int p,
                            size_t n) {
  redcoll__reduce(call, out, operand(o, 0, p), operand(o, 1, p), n);
  for (int j = 2; j < p; j++) redcoll__reduce(call, out, out, operand(o, j, p), n);
}

/* ---- allgather_reduce ------------------------------------------------------ */

static int allreduce_allgather_reduce(const redcoll__call *call) {
  redcoll_comm *c = call->comm;
  int p = c->size, me = c->rank, rc;
  size_t n = call->count, vb = n * call->esize;
  if (vb > SIZE_MAX / (size_t)p) return REDCOLL_ENOMEM;
  char *slots = redcoll__scratch(c, 0, (size_t)p * vb);
  if (slots == NULL) return REDCOLL_ENOMEM;

  /* Slot s holds the vector of rank (me + s) mod p. */
  redcoll__copy(c, slots, call->sendbuf, vb);
  for (int d = 1; d < p; d <<= 1) {
    size_t len = (size_t)redcoll__ringp_bruck_count(p, d) * vb;
    rc = redcoll__sendrecv(c, (me - d + p) % p, slots, len, (me + d) % p, slots + (size_t)d * vb,
                           len);
    if (rc != REDCOLL_OK) return rc;
  }
  operands o = {slots, vb, me, -1, NULL};
  reduce_in_order(call, call->recvbuf, &o, p, n);
  return REDCOLL_OK;
}

static int reduce_allgather_reduce(const redcoll__call *call) {
  redcoll_comm *c = call->comm;
  int p = c->size, me = c->rank, root = call->root, rc;
  int rr = (me - root + p) % p;
  int held = redcoll__ringp_subtree(p, rr);
  size_t n = call->count, vb = n * call->esize;
  char *slots = NULL;
  const void *own = call->sendbuf;

  /* Slot s holds the vector of relative rank rr + s.  A leaf sends its
   * input straight away; an inner rank copies it to slot 0 so that its
   * subtree goes up as one message; the root keeps it in sendbuf unless it
   * is in place and the result would overwrite it before its turn
   * (root > 1). */
  if (rr == 0 || held > 1) {
    if (vb > SIZE_MAX / (size_t)held) return REDCOLL_ENOMEM;
    if ((slots = redcoll__scratch(c, 0, (size_t)held * vb)) == NULL) return REDCOLL_ENOMEM;
    if (rr != 0 || (call->in_place && root > 1)) {
      redcoll__copy(c, slots, call->sendbuf, vb);
      own = slots;
    }
  }
  for (int d = 1; d < p; d <<= 1) {
    int peer, nb;
    int act = redcoll__ringp_gather_step(p, rr, d, &peer, &nb);
    if (act == 1) {
      rc = redcoll__recv(c, (peer + root) % p, slots + (size_t)d * vb, (size_t)nb * vb);
      if (rc != REDCOLL_OK) return rc;
    } else if (act == -1) {
      return redcoll__send(c, (peer + root) % p, own, (size_t)nb * vb);
    }
  }
  operands o = {slots, vb, root, root, own};
  reduce_in_order(call, call->recvbuf, &o, p, n);
  return REDCOLL_OK;
}

/* ---- ring_sequential ------------------------------------------------------- */

/* The reduction phase: rank me ends with its block b = block_of(me) of the
 * result, in rank order, at out (b's elements).  pieces is scratch of p
 * times the block (slot j: the piece from rank j).  root: the block shift. */
static int ring_reduce_phase(const redcoll__call *call, int root, char *pieces, void *out) {
  redcoll_comm *c = call->comm;
  int p = c->size, me = c->rank, rc;
  size_t n = call->count, es = call->esize;
  const char *in = call->sendbuf;
  int b = redcoll__ringp_block_of(p, me, root);
  size_t boff = redcoll__block_start(n, (size_t)p, (size_t)b);
  size_t blen = redcoll__block_start(n, (size_t)p, (size_t)b + 1) - boff;
  size_t bb = blen * es;

  for (int k = 1; k < p; k++) {
    int to, from;
    redcoll__ringp_exchange_peers(p, me, k, &to, &from);
    int tb = redcoll__ringp_block_of(p, to, root);
    size_t toff = redcoll__block_start(n, (size_t)p, (size_t)tb);
    size_t tlen = redcoll__block_start(n, (size_t)p, (size_t)tb + 1) - toff;
    rc = xfer(c, to, in + toff * es, tlen * es, from, pieces + (size_t)from * bb, bb);
    if (rc != REDCOLL_OK) return rc;
  }
  if (blen == 0) return REDCOLL_OK;

  /* The own piece: read from the input, unless the input is the output and
   * would be overwritten before its turn (out may only alias v0 or v1). */
  operands o = {pieces, bb, 0, me, in + boff * es};
  if ((const char *)out == in + boff * es && me > 1) {
    redcoll__copy(c, pieces + (size_t)me * bb, in + boff * es, bb);
    o.own_idx = -1;
  }
  reduce_in_order(call, out, &o, p, blen);
  return REDCOLL_OK;
}

static int allreduce_ring_sequential(const redcoll__call *call) {
  redcoll_comm *c = call->comm;
  int p = c->size, me = c->rank, rc;
  size_t n = call->count, es = call->esize;
  char *vecbuf = call->recvbuf;
  size_t off = redcoll__block_start(n, (size_t)p, (size_t)me);
  size_t blen = redcoll__block_start(n, (size_t)p, (size_t)me + 1) - off;
  size_t need = (size_t)p * blen > n ? (size_t)p * blen : n;
  char *scr = redcoll__scratch(c, 0, need * es);
  if (scr == NULL) return REDCOLL_ENOMEM;

  if ((rc = ring_reduce_phase(call, 0, scr, vecbuf + off * es)) != REDCOLL_OK) return rc;

  /* Dissemination allgather of the blocks in recvbuf.  A block range that
   * wraps around the end of the vector goes through scratch (the send and
   * the receive range of a round are disjoint, so both fit in n). */
  for (int d = 1; d < p; d <<= 1) {
    int cnt = redcoll__ringp_bruck_count(p, d);
    redcoll__ringp_seg ss[2], rs[2];
    int ns = redcoll__ringp_range(n, p, me, cnt, ss);
    int nr = redcoll__ringp_range(n, p, (me + d) % p, cnt, rs);
    size_t slen = 0, rlen = 0;
    for (int i = 0; i < ns; i++) slen += ss[i].len;
    for (int i = 0; i < nr; i++) rlen += rs[i].len;
    const char *sbuf = ns == 1 ? vecbuf + ss[0].off * es : scr;
    char *rbuf = nr == 1 ? vecbuf + rs[0].off * es : scr + slen * es;
    if (ns == 2) {
      redcoll__copy(c, scr, vecbuf + ss[0].off * es, ss[0].len * es);
      redcoll__copy(c, scr + ss[0].len * es, vecbuf + ss[1].off * es, ss[1].len * es);
    }
    rc = xfer(c, (me - d + p) % p, sbuf, slen * es, (me + d) % p, rbuf, rlen * es);
    if (rc != REDCOLL_OK) return rc;
    if (nr == 2) {
      redcoll__copy(c, vecbuf + rs[0].off * es, rbuf, rs[0].len * es);
      redcoll__copy(c, vecbuf + rs[1].off * es, rbuf + rs[0].len * es, rs[1].len * es);
    }
  }
  return REDCOLL_OK;
}

static int reduce_ring_sequential(const redcoll__call *call) {
  redcoll_comm *c = call->comm;
  int p = c->size, me = c->rank, root = call->root, rc;
  size_t n = call->count, es = call->esize;
  int rr = redcoll__ringp_block_of(p, me, root); /* relative rank = own block */
  int held = redcoll__ringp_subtree(p, rr);
  size_t off = redcoll__block_start(n, (size_t)p, (size_t)rr);
  size_t blen = redcoll__block_start(n, (size_t)p, (size_t)rr + 1) - off;
  /* Blocks [rr, rr + held) gather into a buffer laid out like the vector
   * from element off on: the root's recvbuf, or scratch at a non-root, where
   * it starts at slot 0 of the pieces (the first reduction may write over
   * slot 0, which it reads first). */
  size_t span = redcoll__block_start(n, (size_t)p, (size_t)(rr + held)) - off;
  size_t need = (size_t)p * blen > span ? (size_t)p * blen : span;
  char *scr = redcoll__scratch(c, 0, need * es);
  if (scr == NULL) return REDCOLL_ENOMEM;
  char *g = rr == 0 ? (char *)call->recvbuf : scr;

  if ((rc = ring_reduce_phase(call, root, scr, g)) != REDCOLL_OK) return rc;

  for (int d = 1; d < p; d <<= 1) {
    int peer, nb;
    int act = redcoll__ringp_gather_step(p, rr, d, &peer, &nb);
    if (act == 0) continue;
    size_t a = redcoll__block_start(n, (size_t)p, (size_t)(act == 1 ? peer : rr));
    size_t e = redcoll__block_start(n, (size_t)p, (size_t)((act == 1 ? peer : rr) + nb));
    if (e == a) {
      if (act == -1) return REDCOLL_OK;
      continue;
    }
    if (act == 1) {
      rc = redcoll__recv(c, (peer + root) % p, g + (a - off) * es, (e - a) * es);
      if (rc != REDCOLL_OK) return rc;
    } else {
      return redcoll__send(c, (peer + root) % p, g, (e - a) * es);
    }
  }
  return REDCOLL_OK;
}

/* ---- cost (allreduce and reduce alike) ----------------------------------- */

static double cost_allgather_reduce(const redcoll__mach *M, const redcoll__cost_args *a) {
  int p = a->p, q = redcoll__ceil_log2(p);
  double m = (double)a->count * (double)a->esize;
  return q * M->a + (p - 1) * m * (M->b + M->g);
}

static double cost_ring_sequential(const redcoll__mach *M, const redcoll__cost_args *a) {
  int p = a->p, q = redcoll__ceil_log2(p);
  double b = redcoll__cost_blk(a->count, (size_t)p, a->esize);
  return (p - 1 + q) * M->a + 2 * (p - 1) * b * M->b + (p - 1) * b * M->g;
}

/* ---- registry ------------------------------------------------------------ */

const redcoll__algo_entry redcoll__algos_table1_rings[] = {
    {REDCOLL_COLL_ALLREDUCE, REDCOLL_ALGO_ALLGATHER_REDUCE, allreduce_allgather_reduce,
     cost_allgather_reduce, 0},
    {REDCOLL_COLL_REDUCE, REDCOLL_ALGO_ALLGATHER_REDUCE, reduce_allgather_reduce,
     cost_allgather_reduce, 0},
    {REDCOLL_COLL_ALLREDUCE, REDCOLL_ALGO_RING_SEQUENTIAL, allreduce_ring_sequential,
     cost_ring_sequential, 0},
    {REDCOLL_COLL_REDUCE, REDCOLL_ALGO_RING_SEQUENTIAL, reduce_ring_sequential,
     cost_ring_sequential, 0},
    {REDCOLL_COLL_COUNT, REDCOLL_ALGO_AUTO, NULL, NULL, 0},
};
