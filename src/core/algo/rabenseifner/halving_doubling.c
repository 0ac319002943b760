/*
 * Recursive halving and doubling ("halving_doubling"), Rabenseifner (2004)
 * section 2.5.  For long vectors.
 *
 * p = pp + r with pp the largest power of two <= p.  If r > 0, the ranks
 * 2i and 2i+1 (i < r) first exchange halves: the even rank keeps and reduces
 * the lower half, the odd one the upper half, and then sends its reduced
 * half to the even rank, which goes on with new rank i (ranks >= 2r get new
 * rank rank - r).  The pp new ranks run a reduce-scatter by recursive vector
 * halving and distance doubling (distance 1, 2, ..., pp/2), after which each
 * holds 1/pp of the result.
 *   allreduce: allgather by vector doubling and distance halving, then each
 *     survivor of a pair sends the whole result to its removed partner.
 *   reduce: binomial gather of the pieces to the root's new rank.  A root
 *     that is a removed (odd) rank swaps roles with its even partner in the
 *     first step: the even rank sends its reduced lower half instead, at the
 *     same cost.
 *
 * Cost, n bytes, f_alpha = f_beta = 1, pp = p (power of two):
 *   allreduce 2 lg p alpha + 2 (1 - 1/p) n beta + (1 - 1/p) n gamma
 *   reduce    the same
 * p not a power of two:
 *   allreduce (2 lg pp + 3) alpha + (4 - 2/pp) n beta + (3/2 - 1/pp) n gamma
 *   reduce    (2 lg pp + 2) alpha + (3 - 2/pp) n beta + (3/2 - 1/pp) n gamma
 * (the paper's formulas exactly, for n divisible by pp; otherwise pieces
 * differ by one element and the odd element goes to the lower half).
 *
 * Order: every partial result covers a contiguous run of ranks and the lower
 * run is always the left operand; every element is bracketed as the same
 * balanced tree over the new ranks (whose leaves below r are the pairs
 * v_2i + v_2i+1), so non-commutative operators are fine and results are
 * bitwise identical on all ranks.
 *
 * Memory: allreduce works in recvbuf; the incoming half of an exchange lands
 * in the part of recvbuf that holds no live data, so a power-of-two p needs
 * no scratch unless in place; otherwise scratch 0 holds one half vector.
 * Reduce ranks other than the root accumulate in scratch 0 (one vector) and,
 * when that has no free part (first step in place, or after the pair step),
 * take the incoming half from scratch 1 (half a vector).
 *
 * Example, allreduce p = 6 (pp = 4, r = 2), vector ABCD: step 0: 0<->1 and
 * 2<->3 swap halves; 0 holds AB(0-1), 1 holds CD(0-1), 1 sends CD(0-1) to 0,
 * 3 sends CD(2-3) to 2.  New ranks 0,1,2,3 = ranks 0,2,4,5.  Distance 1:
 * 0<->2 (new 0,1) and 4<->5: 0 holds AB(0-3), 2 CD(0-3), 4 AB(4-5), 5
 * CD(4-5); distance 2: 0<->4: 0 holds A(0-5), 4 B(0-5); 2<->5: 2 holds
 * C(0-5), 5 D(0-5).  Allgather at distance 2 then 1 gives all of ABCD to
 * ranks 0,2,4,5, and 0->1, 2->3 send it to the removed ranks.
 */
#include "internal.h"
#include "select/cost.h"
#include "algo/rabenseifner/rabenseifner.h"

/* Room for `need` incoming elements that overlaps no live data of w, or the
 * scratch buffer; NULL when the data should go straight into w (the rank's
 * data is still its input) or memory is short. */
char *redcoll__rab_tmp(redcoll__rab_state *s, size_t need) {
  size_t before = s->live_lo, after = s->n - s->live_hi;
  if (s->cur != s->w) return NULL;
  if (before >= need && before >= after) return s->w;
  if (after >= need) return s->w + s->live_hi * s->es;
  return redcoll__scratch(s->call->comm, s->tmp_scratch, need * s->es);
}

int redcoll__rab_exchange(redcoll__rab_state *s, int peer, int keep_lower, int i_am_left,
                          size_t lo, size_t hi) {
  const redcoll__call *call = s->call;
  size_t mid = redcoll__rab_mid(lo, hi);
  size_t klo = keep_lower ? lo : mid, khi = keep_lower ? mid : hi;
  size_t slo = keep_lower ? mid : lo, shi = keep_lower ? hi : mid;
  size_t k = khi - klo, es = s->es;
  char *tmp = redcoll__rab_tmp(s, k);
  char *dst = tmp != NULL ? tmp : s->w + klo * es;
  if (s->cur == s->w && tmp == NULL) return REDCOLL_ENOMEM;
  int rc = redcoll__sendrecv(call->comm, peer, s->cur + slo * es, (shi - slo) * es, peer, dst,
                             k * es);
  if (rc != REDCOLL_OK) return rc;
  const char *own = s->cur + klo * es;
  char *out = s->w + klo * es;
  if (k > 0) {
    if (i_am_left)
      redcoll__reduce(call, out, own, dst, k);
    else
      redcoll__reduce(call, out, dst, own, k);
  }
  s->cur = s->w;
  s->live_lo = klo;
  s->live_hi = khi;
  return REDCOLL_OK;
}

int redcoll__rab_reduce_from(redcoll__rab_state *s, int src, size_t lo, size_t hi,
                             int i_am_left) {
  size_t k = hi - lo, es = s->es;
  char *tmp = redcoll__rab_tmp(s, k);
  if (s->cur == s->w && tmp == NULL) return REDCOLL_ENOMEM;
  char *dst = tmp != NULL ? tmp : s->w + lo * es;
  int rc = redcoll__recv(s->call->comm, src, dst, k * es);
  if (rc != REDCOLL_OK) return rc;
  if (k > 0) {
    if (i_am_left)
      redcoll__reduce(s->call, s->w + lo * es, s->cur + lo * es, dst, k);
    else
      redcoll__reduce(s->call, s->w + lo * es, dst, s->cur + lo * es, k);
  }
  s->cur = s->w;
  s->live_lo = lo;
  s->live_hi = hi;
  return REDCOLL_OK;
}

/* The pair step of a non-power-of-two p (rank < 2r): halves are exchanged
 * and reduced; then the rank that is removed sends its half to the survivor.
 * Returns with *survives set. */
static int hd_pair_step(redcoll__rab_state *s, int swap_pair, int *survives) {
  redcoll_comm *c = s->call->comm;
  int rank = c->rank, peer = rank ^ 1, even = (rank & 1) == 0, rc;
  size_t n = s->n, es = s->es, mid = redcoll__rab_mid(0, n);
  if ((rc = redcoll__rab_exchange(s, peer, even, even, 0, n)) != REDCOLL_OK) return rc;
  *survives = redcoll__rab_newrank(c->size, rank, swap_pair) >= 0;
  size_t olo = even ? mid : 0, ohi = even ? n : mid; /* the partner's half */
  if (*survives) {
    if ((rc = redcoll__recv(c, peer, s->w + olo * es, (ohi - olo) * es)) != REDCOLL_OK) return rc;
    s->live_lo = 0;
    s->live_hi = n;
    return REDCOLL_OK;
  }
  return redcoll__send(c, peer, s->w + s->live_lo * es, (s->live_hi - s->live_lo) * es);
}

/* Reduce-scatter among the pp new ranks; on return w[live) is the result
 * piece of new rank j: the range of depth lg pp of j. */
static int hd_reduce_scatter(redcoll__rab_state *s, int j, int pp, int swap_pair) {
  int p = s->call->comm->size, rc;
  for (int d = 1, t = 0; d < pp; d <<= 1, t++) {
    size_t lo, hi;
    redcoll__rab_range(s->n, t, j, &lo, &hi);
    int peer = redcoll__rab_oldrank(p, j ^ d, swap_pair);
    int lower = (j & d) == 0;
    if ((rc = redcoll__rab_exchange(s, peer, lower, lower, lo, hi)) != REDCOLL_OK) return rc;
  }
  return REDCOLL_OK;
}

static int allreduce_halving_doubling(const redcoll__call *call) {
  redcoll_comm *c = call->comm;
  int p = c->size, rank = c->rank, pp = redcoll__floor_pow2(p), lg = redcoll__ceil_log2(pp), rc;
  redcoll__rab_state s = {call, call->recvbuf, call->sendbuf, call->count, call->esize, 0, 0, 0};
  if (call->in_place) s.live_hi = s.n;
  int survives = 1;
  if (redcoll__rab_first_partner(p, rank) >= 0) {
    if ((rc = hd_pair_step(&s, -1, &survives)) != REDCOLL_OK) return rc;
    if (!survives) return redcoll__recv(c, rank ^ 1, s.w, s.n * s.es);
  }
  int j = redcoll__rab_newrank(p, rank, -1);
  if ((rc = hd_reduce_scatter(&s, j, pp, -1)) != REDCOLL_OK) return rc;
  /* Allgather: vector doubling, distance halving. */
  for (int t = lg - 1; t >= 0; t--) {
    size_t lo, hi, plo, phi;
    redcoll__rab_range(s.n, t + 1, j, &lo, &hi);
    redcoll__rab_range(s.n, t, j, &plo, &phi);
    size_t olo = lo == plo ? hi : plo, ohi = lo == plo ? phi : lo; /* the sibling */
    int peer = redcoll__rab_oldrank(p, j ^ (1 << t), -1);
    rc = redcoll__sendrecv(c, peer, s.w + lo * s.es, (hi - lo) * s.es, peer, s.w + olo * s.es,
                           (ohi - olo) * s.es);
    if (rc != REDCOLL_OK) return rc;
  }
  if (rank < 2 * (p - pp)) return redcoll__send(c, rank ^ 1, s.w, s.n * s.es);
  return REDCOLL_OK;
}

static int reduce_halving_doubling(const redcoll__call *call) {
  redcoll_comm *c = call->comm;
  int p = c->size, rank = c->rank, root = call->root, rc;
  int pp = redcoll__floor_pow2(p), lg = redcoll__ceil_log2(pp);
  int swap = redcoll__rab_swap_pair(p, root);
  redcoll__rab_state s = {call, call->recvbuf, call->sendbuf, call->count, call->esize, 0, 0, 0};
  if (rank != root) {
    if ((s.w = redcoll__scratch(c, 0, s.n * s.es)) == NULL) return REDCOLL_ENOMEM;
    s.tmp_scratch = 1;
  } else if (call->in_place) {
    s.live_hi = s.n;
  }
  int survives = 1;
  if (redcoll__rab_first_partner(p, rank) >= 0) {
    if ((rc = hd_pair_step(&s, swap, &survives)) != REDCOLL_OK) return rc;
    if (!survives) return REDCOLL_OK;
  }
  int j = redcoll__rab_newrank(p, rank, swap), jr = redcoll__rab_newrank(p, root, swap);
  if ((rc = hd_reduce_scatter(&s, j, pp, swap)) != REDCOLL_OK) return rc;
  /* Binomial gather toward new rank jr, distance pp/2 first. */
  for (int t = lg - 1; t >= 0; t--) {
    int role = redcoll__rab_gather_role(j, jr, 1 << t);
    int peer = redcoll__rab_oldrank(p, j ^ (1 << t), swap);
    size_t lo, hi, plo, phi;
    redcoll__rab_range(s.n, t + 1, j, &lo, &hi);
    redcoll__rab_range(s.n, t, j, &plo, &phi);
    if (role == 0) return redcoll__send(c, peer, s.w + lo * s.es, (hi - lo) * s.es);
    size_t olo = lo == plo ? hi : plo, ohi = lo == plo ? phi : lo;
    if ((rc = redcoll__recv(c, peer, s.w + olo * s.es, (ohi - olo) * s.es)) != REDCOLL_OK)
      return rc;
  }
  return REDCOLL_OK;
}

/* ---- cost ---------------------------------------------------------------- */

/* The butterfly over pp = 2^k ranks halving at every level, routed back;
 * for p not a power of two the pair step before (exchange halves, reduce,
 * send the reduced half) and, for allreduce, the result's return after. */
static double cost_halving_doubling(const redcoll__mach *M, const redcoll__cost_args *a) {
  int p = a->p, k = redcoll__ilog2_floor(p), pp = 1 << k;
  size_t n = a->count, es = a->esize;
  if (p == pp) return redcoll__cost_butterfly(M, k, k, n, es, 1);
  double half = redcoll__cost_piece(n, 1, es), m = (double)n * (double)es;
  double time = redcoll__cost_rnd(M, half, half) + redcoll__cost_rnd(M, half, 0) +
                redcoll__cost_butterfly(M, k, k, n, es, 1);
  if (a->coll != REDCOLL_COLL_REDUCE) time += redcoll__cost_rnd(M, m, 0);
  return time;
}

/* ---- registry ------------------------------------------------------------ */

const redcoll__algo_entry redcoll__algos_halving_doubling[] = {
    {REDCOLL_COLL_ALLREDUCE, REDCOLL_ALGO_HALVING_DOUBLING, allreduce_halving_doubling,
     cost_halving_doubling, 0},
    {REDCOLL_COLL_REDUCE, REDCOLL_ALGO_HALVING_DOUBLING, reduce_halving_doubling,
     cost_halving_doubling, 0},
    {REDCOLL_COLL_COUNT, REDCOLL_ALGO_AUTO, NULL, NULL, 0},
};
