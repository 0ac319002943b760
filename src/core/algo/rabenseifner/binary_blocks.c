/*
 * Binary blocks ("binary_blocks"), Rabenseifner (2004) section 2.6 and
 * section 3.6 of the extended version.  For long vectors and p that is not a
 * power of two with small gaps between the exponents of its binary form.
 *
 * p = 2^e0 + 2^e1 + ... (e0 > e1 > ...): block k is 2^ek consecutive ranks,
 * the largest block on the lowest ranks.
 *  1. Each block runs its own reduce-scatter by vector halving and distance
 *     doubling (as halving_doubling); local rank j of block k then holds the
 *     range of depth ek of j (a block of one rank holds its whole input).
 *  2. From the smallest block up: each rank j of block k (k >= 1), once it
 *     has reduced what block k+1 sent it, cuts its range into the
 *     2^(e(k-1) - ek) ranges of depth e(k-1) of the ranks j + t 2^ek of block
 *     k-1 and sends each its piece, which that rank reduces into its own
 *     (the larger block's partial is the left operand).  Block 0 then holds
 *     the reduce-scatter of all p inputs.
 *  3. allreduce: from block 0 down, each block runs its allgather by
 *     vector doubling and distance halving; just before its step at distance
 *     2^e(k+1), ranks j and j + 2^e(k+1) hold the two halves of the range
 *     of rank j of block k+1 and send them to it: the smaller block gets
 *     its input "always with pairs of messages" (section 3.6), then runs
 *     its own allgather the same way.
 *     reduce: a binomial gather inside block 0 to the root; a root outside
 *     block 0 first receives rank 0's piece and plays rank 0's part.
 * For p a power of two this is halving_doubling.
 *
 * Cost: the paper gives no closed formula.  With ratios q_k = 2^(e(k-1)-ek),
 * n bytes, n divisible by 2^e0: phase 1 of block k costs ek alpha +
 * (1 - 2^-ek)(n beta + n gamma); the step from block k to k-1 costs the
 * sender q_k alpha + n/2^ek beta and the receiver alpha + n/2^e(k-1) (beta +
 * gamma); phase 3 mirrors phases 1-2 without gamma (allreduce) or is the
 * gather of halving_doubling, plus alpha + n/2^e0 beta for a root outside
 * block 0 (reduce).  The critical path runs through the chain of blocks;
 * docs/algorithms/rabenseifner.md gives the resulting formula and compares.
 *
 * Order: block k's partial covers its ranks in order and is combined as
 * block(k) + (block(k+1) + (...)), lower on the left; inside a block the
 * bracketing is the balanced tree.  Every element gets the same bracketing,
 * so non-commutative operators are fine.
 *
 * Memory: as halving_doubling (recvbuf, or scratch 0 for ranks other than
 * the root of a reduce; incoming pieces outside the live part of the working
 * vector, else scratch 0 / 1 with half a vector at most).
 *
 * Example, p = 13 = 8 + 4 + 1: ranks 0-7 and 8-11 run 3 and 2 halving steps
 * (each of 8-11 then holds a quarter, two eighths); rank 12 sends its four
 * quarters to 8, 9, 10, 11, which reduce them in; then rank 8 sends its two
 * eighths to ranks 0 and 4, rank 9 to 1 and 5, ...; ranks 0-7 reduce.  Rank
 * i of 0-7 sends its eighth to 8 + (i mod 4), ranks 8-11 send their quarter
 * to 12; each block then runs its allgather.
 */
#include "internal.h"
#include "select/cost.h"
#include "algo/rabenseifner/rabenseifner.h"

static int binary_blocks(const redcoll__call *call, int allreduce) {
  redcoll_comm *c = call->comm;
  int p = c->size, rank = c->rank, root = allreduce ? -1 : call->root, rc;
  int ex[32], st[32];
  int nb = redcoll__rab_blocks(p, ex, st);
  int k = redcoll__rab_block_of(p, rank), j = rank - st[k], e = ex[k];
  redcoll__rab_state s = {call, call->recvbuf, call->sendbuf, call->count, call->esize, 0, 0, 0};
  size_t n = s.n, es = s.es, lo, hi;
  if (!allreduce && rank != root) {
    if ((s.w = redcoll__scratch(c, 0, n * es)) == NULL) return REDCOLL_ENOMEM;
    s.tmp_scratch = 1;
  }
  if (call->in_place) s.live_hi = n;

  /* 1. reduce-scatter inside the block. */
  for (int t = 0; t < e; t++) {
    int d = 1 << t, lower = (j & d) == 0;
    redcoll__rab_range(n, t, j, &lo, &hi);
    if ((rc = redcoll__rab_exchange(&s, st[k] + (j ^ d), lower, lower, lo, hi)) != REDCOLL_OK)
      return rc;
  }
  /* 2. take in the smaller blocks' partial, pass it all to the larger block. */
  redcoll__rab_range(n, e, j, &lo, &hi);
  if (k + 1 < nb) {
    int src = st[k + 1] + (j & ((1 << ex[k + 1]) - 1));
    if ((rc = redcoll__rab_reduce_from(&s, src, lo, hi, 1)) != REDCOLL_OK) return rc;
  }
  if (k > 0) {
    for (int jj = j; jj < (1 << ex[k - 1]); jj += 1 << e) {
      size_t plo, phi;
      redcoll__rab_range(n, ex[k - 1], jj, &plo, &phi);
      if ((rc = redcoll__send(c, st[k - 1] + jj, s.cur + plo * es, (phi - plo) * es)) !=
          REDCOLL_OK)
        return rc;
    }
  }

  if (!allreduce) {
    /* 3. binomial gather inside block 0 toward the root, or toward a root
     * outside block 0 that stands in for rank 0. */
    int e0 = ex[0], outside = root >= (1 << e0);
    int jr = outside ? 0 : root, me = j;
    if (outside) {
      size_t zlo, zhi;
      redcoll__rab_range(n, e0, 0, &zlo, &zhi);
      if (rank == 0) return redcoll__send(c, root, s.w + zlo * es, (zhi - zlo) * es);
      if (rank != root) {
        if (k != 0) return REDCOLL_OK;
      } else {
        if ((rc = redcoll__recv(c, 0, s.w + zlo * es, (zhi - zlo) * es)) != REDCOLL_OK) return rc;
        me = 0;
      }
    } else if (k != 0) {
      return REDCOLL_OK;
    }
    for (int t = e0 - 1; t >= 0; t--) {
      int d = 1 << t, role = redcoll__rab_gather_role(me, jr, d), pj = me ^ d;
      int peer = (outside && pj == 0) ? root : pj;
      size_t plo, phi;
      redcoll__rab_range(n, t + 1, me, &lo, &hi);
      redcoll__rab_range(n, t, me, &plo, &phi);
      if (role == 0) return redcoll__send(c, peer, s.w + lo * es, (hi - lo) * es);
      size_t olo = lo == plo ? hi : plo, ohi = lo == plo ? phi : lo;
      if ((rc = redcoll__recv(c, peer, s.w + olo * es, (ohi - olo) * es)) != REDCOLL_OK) return rc;
    }
    return REDCOLL_OK;
  }

  /* 3. allreduce: each block runs its allgather; the two ranks j and
   * j + 2^e(k+1) that hold the halves of what rank j of the next smaller
   * block needs send them to it just before their exchange at that
   * distance. */
  if (k > 0) {
    for (int jj = j; jj < 2 << e; jj += 1 << e) {
      size_t plo, phi;
      redcoll__rab_range(n, e + 1, jj, &plo, &phi);
      if ((rc = redcoll__recv(c, st[k - 1] + jj, s.w + plo * es, (phi - plo) * es)) != REDCOLL_OK)
        return rc;
    }
  }
  int nxt = k + 1 < nb ? ex[k + 1] : -1;
  for (int t = e - 1; t >= 0; t--) {
    size_t plo, phi, mlo, mhi;
    redcoll__rab_range(n, t + 1, j, &mlo, &mhi);
    if (t == nxt && j < 2 << nxt) {
      int dst = st[k + 1] + (j & ((1 << nxt) - 1));
      if ((rc = redcoll__send(c, dst, s.w + mlo * es, (mhi - mlo) * es)) != REDCOLL_OK) return rc;
    }
    redcoll__rab_range(n, t, j, &plo, &phi);
    size_t olo = mlo == plo ? mhi : plo, ohi = mlo == plo ? phi : mlo;
    int peer = st[k] + (j ^ (1 << t));
    rc = redcoll__sendrecv(c, peer, s.w + mlo * es, (mhi - mlo) * es, peer, s.w + olo * es,
                           (ohi - olo) * es);
    if (rc != REDCOLL_OK) return rc;
  }
  return REDCOLL_OK;
}

static int allreduce_binary_blocks(const redcoll__call *call) { return binary_blocks(call, 1); }
static int reduce_binary_blocks(const redcoll__call *call) { return binary_blocks(call, 0); }

/* ---- cost: docs/algorithms/rabenseifner.md, "Derived cost" -------------- */

/* Phase 1 of a block of 2^e ranks: the reduce-scatter of n bytes. */
static double rs_cost(const redcoll__mach *M, int e, double n) {
  return M->a * e + (M->b + M->g) * (n - n / (double)(1u << e));
}

/* One halving step s of phase 3 (no gamma). */
static double step_cost(const redcoll__mach *M, int s, double n) {
  return M->a + M->b * n / (double)(2u << s);
}

/* Phases 1 and 2: the chain from the smallest block up to block 0. */
static double chain_cost(const redcoll__mach *M, const int *ex, int nb, double n) {
  double A = rs_cost(M, ex[nb - 1], n);
  for (int k = nb - 1; k > 0; k--) {
    double q = (double)(1u << (ex[k - 1] - ex[k]));
    double pc = n / (double)(1u << ex[k - 1]);
    double rs = rs_cost(M, ex[k - 1], n);
    A = (A > rs ? A : rs) + q * (M->a + M->b * pc) + M->g * pc;
  }
  return A;
}

/* Phase 3 of allreduce: every block mirrors its phases 1-2 after the
 * result reached it; the latest block to finish ends the collective. */
static double allgather_cost(const redcoll__mach *M, const int *ex, int nb, double n, double B) {
  double end = 0;
  for (int k = 0; k < nb; k++) {
    int e = ex[k];
    double steps_hi = 0, steps_lo = 0;
    int nx = k + 1 < nb ? ex[k + 1] : -1;
    for (int s = 0; s < e; s++) {
      double st = step_cost(M, s, n);
      if (s > nx) steps_hi += st;
      else steps_lo += st;
    }
    if (nx >= 0) {
      double send = 2 * (M->a + M->b * n / (double)(2u << nx));
      double fin = B + steps_hi + send + steps_lo;
      if (fin > end) end = fin;
      B = B + steps_hi + send;
    } else {
      double fin = B + steps_hi + steps_lo;
      if (fin > end) end = fin;
    }
  }
  return end;
}

static double cost_binary_blocks(const redcoll__mach *M, const redcoll__cost_args *a) {
  int ex[32], nb = 0;
  for (int e = 30; e >= 0; e--)
    if ((a->p >> e) & 1) ex[nb++] = e;
  double n = (double)a->count * (double)a->esize;
  double A = chain_cost(M, ex, nb, n);
  if (a->coll != REDCOLL_COLL_REDUCE) return allgather_cost(M, ex, nb, n, A);
  double t = A;
  for (int s = 0; s < ex[0]; s++) t += step_cost(M, s, n);
  return t;
}

/* ---- registry ------------------------------------------------------------ */

const redcoll__algo_entry redcoll__algos_binary_blocks[] = {
    {REDCOLL_COLL_ALLREDUCE, REDCOLL_ALGO_BINARY_BLOCKS, allreduce_binary_blocks,
     cost_binary_blocks, 0},
    {REDCOLL_COLL_REDUCE, REDCOLL_ALGO_BINARY_BLOCKS, reduce_binary_blocks, cost_binary_blocks, 0},
    {REDCOLL_COLL_COUNT, REDCOLL_ALGO_AUTO, NULL, NULL, 0},
};
