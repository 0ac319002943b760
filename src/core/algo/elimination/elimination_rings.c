/*
 * elimination_rings: allreduce and reduce for p = 2^n q_1 ... q_h with small
 * rings for the factors 3 (Rabenseifner and Traeff 2004, sections 3.4 and 3.6).
 *
 * p = 2^n 3^a q (q odd, not a multiple of 3) is run in stages over the
 * mixed-radix digits of the rank: first n butterfly stages (radix 2), then
 * a' <= a ring stages of three ranks (radix 3), then the overlapping
 * elimination of elimination.c over the remaining q' = p / (2^n 3^a')
 * units of U = 2^n 3^a' consecutive ranks.  A stage of radix r joins r
 * units of consecutive ranks; member j of each unit works with member j of
 * the others.  In a stage whose current piece is larger than the threshold
 * b, the piece is cut into r balanced blocks and each member gets one: in
 * r - 1 rounds it sends its partial sum of block d + k to member d + k and
 * receives member d - k's partial of its own block d (a personalised
 * exchange; for r = 2 it is the butterfly step).  Below b the whole piece
 * goes to member d + k in round k.  Either way the reduction is postponed
 * until all r partials are there and done in rank order, P_0 + P_1 + P_2,
 * so that every element has one bracketing on every rank.  The elimination
 * stage then works on the piece each rank holds.  Allreduce finishes with
 * the reverse of the halving stages (a direct allgather of the r blocks in
 * r - 1 rounds); reduce gathers to the root instead: the elimination stage
 * gathers to the unit that holds the root, then each halving stage, last to
 * first, sends its blocks to the member with the root's digit.
 *
 * a' is the number of rings that gives the fewest rounds for m <= b, the
 * larger one on a tie (a' = 0 is the plain elimination, so rings never add
 * rounds).
 *
 * Cost, m <= b (no halving), E(x) = ceil(log2 x) + 1 for x > 1, E(1) = 0:
 *   (n + 2 a' + E(q')) (alpha + m beta), reduction (n + 2 a' + ~log2 q') m gamma.
 *   p = 3 2^n:  (n + 2) alpha = ceil(log2 p) alpha, optimal;
 *   p = 9 2^n:  (n + 4) alpha = ceil(log2 p) alpha, optimal;
 *   other p:    at most as many rounds as elimination (ceil(log2 p) + 1, or
 *               log2 p for a power of two), since a' = 0 is the elimination.
 * Cost, large m (halving in every stage), U = 2^n 3^a':
 *   2 (n + 2 a') alpha + the elimination of m/U on q' units,
 *   beta:  2 (1 - 1/U) m + (1 + 1/2) 2 m/U (q' > 1) <= 2 m + m/U,
 *   gamma: (1 - 1/U) m + (1 + 1/2) m/U (q' > 1)    <= m + m/(2U),
 *   plus one block of rounding when U does not divide the count.
 *
 * Restrictions: none (any p, any root, non-commutative operators).  Factors
 * other than 2 and 3 are not rings: they go to the elimination stage (a ring
 * of 5 takes 4 rounds like the elimination of 5, a ring of 7 more).  So do
 * the factors 3 whose rings would add rounds (p = 15 runs as
 * the plain elimination, p = 45 as one ring, then elimination of 15).
 * Scratch: buffer 0 holds the received partials of a stage (at most two
 * pieces, 2 m) and the elimination's received pieces; buffer 1 is the work
 * vector (m) of reduce on ranks other than the root.
 *
 * Example, allreduce on p = 12 = 2^2 3, m <= b (digits: rank = d0 + 2 d1 +
 * 4 d2).  Round 1: butterfly of 0-1, 2-3, ..., 10-11 (d0); round 2: 0-2,
 * 1-3, 4-6, ... (d1): ranks 0..3 hold v0+..+v3 = P_0, 4..7 P_1, 8..11 P_2.
 * The ring joins 0, 4, 8 (and 1, 5, 9; 2, 6, 10; 3, 7, 11): round 3: 0 -> 4,
 * 4 -> 8, 8 -> 0; round 4: 0 -> 8, 4 -> 0, 8 -> 4; each computes
 * (P_0 + P_1) + P_2.  4 rounds = ceil(log2 12); elimination needs 5.
 * With m > b: rounds 1-2 halve (rank 0 keeps the quarter [0, m/4) ...), the
 * ring splits that quarter into three blocks, 0 keeps the first: rounds 3-4
 * send m/12 each; then rounds 5-6 are the ring's allgather of the blocks and
 * rounds 7-8 reverse the butterflies.
 */
#include "algo/elimination/elimination.h"
#include "select/cost.h"

/* ---- plan ----------------------------------------------------------------- */

int redcoll__elim_small_rounds(int p) {
  if (p <= 1) return 0;
  return redcoll__ceil_log2(p) + ((p & (p - 1)) != 0);
}

int redcoll__rings_plan_for(int p, redcoll__rings_plan *pl) {
  if (p < 1) return -1;
  int n = 0, a = 0, rest = p;
  while (rest % 2 == 0) rest /= 2, n++;
  while (rest % 3 == 0) rest /= 3, a++;
  /* a' rings leave q' = rest 3^(a - a') units to the elimination. */
  int best = 0, best_rounds = -1, q = rest;
  for (int i = 0; i < a; i++) q *= 3;
  for (int ap = 0; ap <= a; ap++, q /= 3) {
    int r = 2 * ap + redcoll__elim_small_rounds(q);
    if (best_rounds < 0 || r <= best_rounds) best = ap, best_rounds = r;
  }
  pl->nstages = 0;
  pl->unit = 1;
  for (int i = 0; i < n + best; i++) {
    pl->radix[pl->nstages++] = i < n ? 2 : 3;
    pl->unit *= i < n ? 2 : 3;
  }
  pl->q = p / pl->unit;
  pl->rounds = n + best_rounds;
  return pl->rounds;
}

/* ---- execution ------------------------------------------------------------ */

typedef struct rings_state {
  const redcoll__call *call;
  char *work, *tmp;
  size_t es;
} rings_state;

/* One sendrecv, or only its send or receive part when the other is empty;
 * nothing if both are. */
static int xchg(const rings_state *s, int to, const void *sb, size_t sl, int from, void *rb,
                size_t rl) {
  redcoll_comm *c = s->call->comm;
  if (to >= 0 && sl > 0 && from >= 0 && rl > 0)
    return redcoll__sendrecv(c, to, sb, sl, from, rb, rl);
  if (to >= 0 && sl > 0) return redcoll__send(c, to, sb, sl);
  if (from >= 0 && rl > 0) return redcoll__recv(c, from, rb, rl);
  return REDCOLL_OK;
}

/* Reduction phase of one stage of radix r: this rank is member d of a group
 * whose member e is rank base + e stride; its piece is [off, off + len).
 * half: the piece is split into r blocks and this rank keeps block d. */
static int stage_forward(const rings_state *s, int r, int d, int base, int stride, size_t off,
                         size_t len, int half) {
  size_t es = s->es, mo = half ? redcoll__block_start(len, (size_t)r, (size_t)d) : 0;
  size_t ml = half ? redcoll__block_start(len, (size_t)r, (size_t)d + 1) - mo : len;
  char *part[3];
  char *mine = s->work + (off + mo) * es;
  for (int k = 1; k < r; k++) {
    int to = (d + k) % r, from = (d - k + r) % r;
    size_t so = half ? redcoll__block_start(len, (size_t)r, (size_t)to) : 0;
    size_t sl = half ? redcoll__block_start(len, (size_t)r, (size_t)to + 1) - so : len;
    char *slot = s->tmp + (size_t)(k - 1) * ml * es;
    int rc = xchg(s, base + to * stride, s->work + (off + so) * es, sl * es, base + from * stride,
                  slot, ml * es);
    if (rc != REDCOLL_OK) return rc;
    part[from] = slot;
  }
  part[d] = mine;
  if (ml == 0) return REDCOLL_OK;
  /* ((P_0 + P_1) + P_2), accumulated in P_0's slot while the own partial
   * P_d is still needed, then in place. */
  char *acc = d <= 1 ? mine : part[0];
  for (int e = 1; e < r; e++)
    redcoll__reduce(s->call, e >= d ? mine : acc, e == 1 ? part[0] : e - 1 >= d ? mine : acc,
                    part[e], ml);
  return REDCOLL_OK;
}

/* Routing phase of a halving stage: allreduce (root_d < 0) gathers all r
 * blocks of the piece on every member; reduce only on member root_d. */
static int stage_backward(const rings_state *s, int r, int d, int base, int stride, size_t off,
                          size_t len, int root_d) {
  size_t es = s->es;
  char *w = s->work + off * es;
#define BLK(b) redcoll__block_start(len, (size_t)r, (size_t)(b))
  for (int k = 1; k < r; k++) {
    int to = (d + k) % r, from = (d - k + r) % r, rc;
    if (root_d < 0)
      rc = xchg(s, base + to * stride, w + BLK(d) * es, (BLK(d + 1) - BLK(d)) * es,
                base + from * stride, w + BLK(from) * es, (BLK(from + 1) - BLK(from)) * es);
    else if (d == root_d)
      rc = xchg(s, -1, NULL, 0, base + from * stride, w + BLK(from) * es,
                (BLK(from + 1) - BLK(from)) * es);
    else if (to == root_d)
      rc = xchg(s, base + to * stride, w + BLK(d) * es, (BLK(d + 1) - BLK(d)) * es, -1, NULL, 0);
    else
      rc = REDCOLL_OK;
    if (rc != REDCOLL_OK) return rc;
  }
#undef BLK
  return REDCOLL_OK;
}

/* The elimination stage over q units of U ranks on the piece [off, off+len). */
static int stage_elimination(const rings_state *s, int q, int U, size_t off, size_t len) {
  const redcoll__call *call = s->call;
  redcoll_comm *c = call->comm;
  redcoll__elim_event ev[REDCOLL__ELIM_MAX_EVENTS];
  redcoll__elim_op ops[REDCOLL__ELIM_MAX_OPS];
  int v = c->rank / U, moff = c->rank % U;
  int nev = redcoll__elim_plan(REDCOLL_ALGO_ELIMINATION, q, v, ev, REDCOLL__ELIM_MAX_EVENTS);
  if (nev < 0) return REDCOLL_EINVAL;
  for (int i = 0; i < nev; i++)
    for (int u = 0; u < 3; u++)
      if (ev[i].rank[u] >= 0) ev[i].rank[u] = ev[i].rank[u] * U + moff;
  int h = redcoll__elim_halving(len, s->es, c->threshold, redcoll__elim_levels(q));
  int nops = redcoll__elim_ops(ev, nev, h, len, call->coll, call->root / U, ops,
                               REDCOLL__ELIM_MAX_OPS);
  if (nops < 0) return REDCOLL_EINVAL;
  char *w = s->work + off * s->es;
  for (int i = 0; i < nops; i++) {
    const redcoll__elim_op *o = &ops[i];
    char *dst = w + o->recv_off * s->es;
    int rc = xchg(s, o->send_to, w + o->send_off * s->es, o->send_len * s->es, o->recv_from,
                  o->combine == REDCOLL__ELIM_COPY ? dst : s->tmp, o->recv_len * s->es);
    if (rc != REDCOLL_OK) return rc;
    if (o->recv_from < 0 || o->recv_len == 0) continue;
    if (o->combine == REDCOLL__ELIM_LEFT)
      redcoll__reduce(call, dst, s->tmp, dst, o->recv_len);
    else if (o->combine == REDCOLL__ELIM_RIGHT)
      redcoll__reduce(call, dst, dst, s->tmp, o->recv_len);
  }
  return REDCOLL_OK;
}

static int elimination_rings(const redcoll__call *call) {
  redcoll_comm *c = call->comm;
  redcoll__rings_plan pl;
  int p = c->size, rank = c->rank, reduce = call->coll == REDCOLL_COLL_REDUCE;
  size_t es = call->esize, bytes = call->count * es;
  if (redcoll__rings_plan_for(p, &pl) < 0) return REDCOLL_EINVAL;

  /* Pieces before each stage, and the largest receive area. */
  size_t off[REDCOLL__RINGS_MAX_STAGES + 1], len[REDCOLL__RINGS_MAX_STAGES + 1], need = 0;
  int half[REDCOLL__RINGS_MAX_STAGES], digit[REDCOLL__RINGS_MAX_STAGES];
  int stride[REDCOLL__RINGS_MAX_STAGES];
  off[0] = 0;
  len[0] = call->count;
  for (int t = 0, S = 1; t < pl.nstages; S *= pl.radix[t], t++) {
    size_t r = (size_t)pl.radix[t];
    stride[t] = S;
    digit[t] = (rank / S) % pl.radix[t];
    half[t] = len[t] * es > c->threshold;
    size_t o = half[t] ? redcoll__block_start(len[t], r, (size_t)digit[t]) : 0;
    off[t + 1] = off[t] + o;
    len[t + 1] = half[t] ? redcoll__block_start(len[t], r, (size_t)digit[t] + 1) - o : len[t];
    if ((r - 1) * len[t + 1] > need) need = (r - 1) * len[t + 1];
  }
  if (pl.q > 1 && len[pl.nstages] > need) need = len[pl.nstages];

  rings_state s = {call, call->recvbuf, NULL, es};
  if (reduce && rank != call->root && (s.work = redcoll__scratch(c, 1, bytes)) == NULL)
    return REDCOLL_ENOMEM;
  if (need > 0 && (s.tmp = redcoll__scratch(c, 0, need * es)) == NULL) return REDCOLL_ENOMEM;
  if (bytes > 0 && (const void *)s.work != call->sendbuf) redcoll__copy(c, s.work, call->sendbuf, bytes);

  for (int t = 0; t < pl.nstages; t++) {
    int base = rank - digit[t] * stride[t];
    int rc = stage_forward(&s, pl.radix[t], digit[t], base, stride[t], off[t], len[t], half[t]);
    if (rc != REDCOLL_OK) return rc;
  }
  if (pl.q > 1) {
    int rc = stage_elimination(&s, pl.q, pl.unit, off[pl.nstages], len[pl.nstages]);
    if (rc != REDCOLL_OK) return rc;
  }
  /* Routing (allreduce) or gather to the root (reduce), last stage first:
   * for reduce only the ranks whose higher digits are the root's. */
  for (int t = pl.nstages - 1; t >= 0; t--) {
    int S1 = stride[t] * pl.radix[t], root_d = -1;
    if (!half[t]) continue;
    if (reduce) {
      if (rank / S1 != call->root / S1) continue;
      root_d = (call->root / stride[t]) % pl.radix[t];
    }
    int rc = stage_backward(&s, pl.radix[t], digit[t], rank - digit[t] * stride[t], stride[t],
                            off[t], len[t], root_d);
    if (rc != REDCOLL_OK) return rc;
  }
  return REDCOLL_OK;
}

/* ---- cost ----------------------------------------------------------------
 * The stages of the plan (n butterflies, a' rings of three, then the
 * elimination over the q remaining units); each stage cuts its piece into r
 * blocks while the piece is above b, and allreduce reverses the cutting
 * stages. */
static double cost_elimination_rings(const redcoll__mach *M, const redcoll__cost_args *a) {
  redcoll__rings_plan pl;
  if (redcoll__rings_plan_for(a->p, &pl) < 0) return -1;
  size_t es = a->esize, cur = a->count;
  double time = 0, back = 0;
  for (int i = 0; i < pl.nstages; i++) {
    int r = pl.radix[i];
    double whole = (double)cur * (double)es;
    if (whole > (double)a->threshold) {
      size_t b = (cur + (size_t)r - 1) / (size_t)r;
      double bb = (double)b * (double)es;
      time += (r - 1) * redcoll__cost_rnd(M, bb, bb);
      back += (r - 1) * redcoll__cost_rnd(M, bb, 0);
      cur = b;
    } else {
      time += (r - 1) * redcoll__cost_rnd(M, whole, whole);
    }
  }
  if (pl.q > 1) {
    redcoll__cost_args e = *a;
    e.p = pl.q;
    e.count = cur;
    time += redcoll__elimination_cost(M, &e, 1);
  }
  return time + back;
}

const redcoll__algo_entry redcoll__algos_elimination_rings[] = {
    {REDCOLL_COLL_ALLREDUCE, REDCOLL_ALGO_ELIMINATION_RINGS, elimination_rings,
     cost_elimination_rings, 0},
    {REDCOLL_COLL_REDUCE, REDCOLL_ALGO_ELIMINATION_RINGS, elimination_rings, cost_elimination_rings,
     0},
    {REDCOLL_COLL_COUNT, REDCOLL_ALGO_AUTO, NULL, NULL, 0},
};
