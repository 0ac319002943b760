/*
 * Elimination algorithms for allreduce and reduce with any p
 * (Rabenseifner and Traeff 2004, sections 2, 3.1-3.3).
 *
 * All three run the hybrid butterfly: while the current piece is larger than
 * the threshold b (comm->threshold bytes) a merge halves it (recursive vector
 * halving), below it merges exchange whole pieces.  Allreduce then reverses
 * the halving merges (the routing phase); reduce instead gathers the pieces
 * to the root along the same reverse path.  Ranks in excess of the largest
 * power of two 2^k <= p are eliminated on the way:
 *
 * elimination: the overlapping protocol (3.2).  At level z the units are the
 *   floor(p / 2^z) groups of 2^z consecutive ranks (the last one takes the
 *   rest); units pair up, and when their number is odd the last three merge
 *   in a 3-2 step (A, B, C) that eliminates A.  The last unit, the one still
 *   busy with the previous 3-2 step, is C, which idles in the first message
 *   of the step: the delays do not add up.  For p = q 2^n (q odd) the first n
 *   levels are plain butterflies and the first 3-2 step is at level n.
 *   Small m (m <= b):   (ceil(log2 p) + 1) alpha, or log2 p alpha for p = 2^k;
 *                       the extra round sends the result to eliminated ranks.
 *   Large m (halving at every level), with p = q 2^n:
 *     time <= 2 floor(log2 p) alpha + 2 alpha + (1 + 1/2^(n+1)) 2 m beta
 *                                             + (1 + 1/2^(n+1)) m gamma.
 * elimination_nonoverlap: the non-overlapping protocol (3.3) for the odd
 *   factor q of p = q 2^n: after n butterfly levels the q units of 2^n ranks
 *   take one 3-2 step (units 0, 1, 2) and pair up (3,4), (5,6), ...; then
 *   pairs of these pair-units merge by 2-1 steps on half pieces until 2^k
 *   ranks are left, and butterflies finish.  Same rounds and volume bounds.
 * elimination_2to1: the classical baseline: ranks 2i (i < p - 2^k) send their
 *   whole vector to 2i+1 first, 2^k ranks run the butterfly, and the result
 *   goes back to the eliminated ranks at the end:
 *     small m: (floor(log2 p) + 2) (alpha + m beta), ~(log2 p + 1) m gamma;
 *     large m: ~ 2 log2 p alpha + 4 m beta + 2 m gamma.
 *
 * Restrictions: none.  Operands stay in rank order (units are contiguous rank
 * ranges and merges combine neighbours, lower on the left), and every piece
 * of the vector is merged along the same tree, so every element has one
 * bracketing on every rank: non-commutative operators are fine.
 * Scratch: one buffer for received pieces (at most m); reduce also keeps a
 * work vector of m on ranks other than the root (two vectors there).
 *
 * Example, elimination on p = 7, m <= b.  Level 0 (7 units, odd): pairs
 * (0,1), (2,3); 3-2 step on (4,5,6): round 1: 4 <-> 5 exchange, both hold
 * v4+v5; round 2: 4 -> 6 sends v4+v5, 6 -> 5 sends v6: 5 and 6 hold
 * (v4+v5)+v6 and 4 is eliminated.  Level 1 (units {0,1}, {2,3}, {4,5,6}, odd):
 * 3-2 step on them, members paired by index: 0 <-> 2 and 1 <-> 3 in round 2
 * (A and B are ready), then in round 3: 0 -> 5, 5 -> 2 and 1 -> 6, 6 -> 3,
 * since C = {5,6} is ready only after round 2.  Units {0,1} are eliminated;
 * 2, 3, 5, 6 hold ((v0+v1)+(v2+v3))+((v4+v5)+v6).  Round 4: 2 -> 0, 3 -> 1,
 * 5 -> 4 (the B member with the same index sends).  4 rounds = ceil(log2 7)+1.
 */
#include "algo/elimination/elimination.h"
#include "select/cost.h"

/* ---- plans ---------------------------------------------------------------- */

static unsigned bitrev(unsigned x, int bits) {
  unsigned r = 0;
  for (int i = 0; i < bits; i++) r |= ((x >> i) & 1u) << (bits - 1 - i);
  return r;
}

int redcoll__elim_levels(int p) {
  int k = 0;
  while ((2 << k) <= p) k++;
  return k;
}

static void set_units2(redcoll__elim_event *e, int kind, int level, int me, int r0, int r1, int lo0,
                       int hi0, int lo1, int hi1) {
  e->kind = kind;
  e->level = level;
  e->nunits = 2;
  e->me = me;
  e->rank[0] = r0;
  e->rank[1] = r1;
  e->rank[2] = -1;
  e->lo[0] = lo0;
  e->hi[0] = hi0;
  e->lo[1] = lo1;
  e->hi[1] = hi1;
  e->lo[2] = e->hi[2] = 0;
}

/* elimination (overlapping): unit g at level z is [g 2^z, (g+1) 2^z), the
 * last one (g = G-1, G = p >> z) up to p.  Member j of a unit formed from
 * (X, Y) or (B, C) is member j/2 of X or B if j is even, else of Y or C.
 * The rank of member j of unit g at level z: */
static int ov_rank_of(int p, int z, int g, unsigned j) {
  while (z > 0) {
    int G = p >> z;
    if (g < G - 1) return (g << z) + (int)bitrev(j, z);
    int Gp = p >> (z - 1);
    g = (j & 1u) ? Gp - 1 : Gp - 2;
    j >>= 1;
    z--;
  }
  return g;
}

static int ov_hi(int p, int z, int g) { return g == (p >> z) - 1 ? p : (g + 1) << z; }

static int plan_overlap(int p, int rank, redcoll__elim_event *ev, int cap) {
  int k = redcoll__elim_levels(p), n = 0;
  unsigned j = 0;
  for (int z = 0; z < k; z++) {
    int G = p >> z, g = rank >> z;
    if (g > G - 1) g = G - 1;
    if (n >= cap) return -1;
    redcoll__elim_event *e = &ev[n++];
    if ((G & 1) && g >= G - 3) {
      int a = G - 3, me = g - a;
      e->kind = REDCOLL__ELIM_T32;
      e->level = z;
      e->nunits = 3;
      e->me = me;
      for (int u = 0; u < 3; u++) {
        e->rank[u] = ov_rank_of(p, z, a + u, j);
        e->lo[u] = (a + u) << z;
        e->hi[u] = ov_hi(p, z, a + u);
      }
      if (me == 0) break;
      j = 2 * j + (me == 2);
    } else {
      int x = g & ~1, me = g & 1;
      set_units2(e, REDCOLL__ELIM_PAIR, z, me, ov_rank_of(p, z, x, j), ov_rank_of(p, z, x + 1, j),
                 x << z, ov_hi(p, z, x), (x + 1) << z, ov_hi(p, z, x + 1));
      j = 2 * j + (unsigned)me;
    }
  }
  return n;
}

/* Pure butterfly levels [z0, z1) over "virtual ranks" v in [0, 2^(z1-z0))
 * whose members are mapped by map(v, j) and whose ranges by vlo/vhi. */
typedef struct vmap {
  int p, n, q, e; /* nonoverlap: p = q 2^n, e 2-1 steps; 2to1: e = p - 2^k */
  int two2one;
} vmap;

/* nonoverlap: units of level n are u = 0..q-1 ([u 2^n, (u+1) 2^n)); pair
 * units P_0 = (0,1,2) as a 3-2 step, P_i = (2i+1, 2i+2) for i >= 1.  After the
 * 2-1 steps P_{2i-1} -> P_{2i} (i = 1..e) the survivors are w = 0..2^(K-1)-1. */
static int no_p_of_w(const vmap *m, int w) { return w <= m->e ? 2 * w : w + m->e; }
static int no_p_lo(const vmap *m, int P) { return (P == 0 ? 0 : 2 * P + 1) << m->n; }
static int no_p_hi(const vmap *m, int P) { return (2 * P + 3) << m->n; }
static int no_w_lo(const vmap *m, int w) {
  return w == 0 ? 0 : (w <= m->e ? no_p_lo(m, 2 * w - 1) : no_p_lo(m, w + m->e));
}
static int no_w_hi(const vmap *m, int w) { return no_p_hi(m, no_p_of_w(m, w)); }
/* Member j (n+1 bits) of pair unit P. */
static int no_p_rank(const vmap *m, int P, unsigned j) {
  int u = 2 * P + 1 + (int)(j & 1u);
  return (u << m->n) + (int)bitrev(j >> 1, m->n);
}

/* 2to1: virtual rank v is 2v+1 for v < e, else v + e. */
static int t2_rank(const vmap *m, int v) { return v < m->e ? 2 * v + 1 : v + m->e; }
static int t2_lo(const vmap *m, int v) { return v < m->e ? 2 * v : v + m->e; }

/* Unit W (of 2^y virtual ranks) at butterfly level y: its range and the rank
 * of member j. */
static int v_lo(const vmap *m, int W, int y) {
  int v = W << y;
  return m->two2one ? t2_lo(m, v) : no_w_lo(m, v);
}
static int v_hi(const vmap *m, int W, int y) {
  int v = ((W + 1) << y) - 1;
  return m->two2one ? t2_rank(m, v) + 1 : no_w_hi(m, v);
}
static int v_rank(const vmap *m, int W, int y, unsigned j) {
  unsigned low = j & ((1u << y) - 1);
  int v = (W << y) + (int)bitrev(low, y);
  if (m->two2one) return t2_rank(m, v);
  return no_p_rank(m, no_p_of_w(m, v), j >> y);
}

/* Butterfly levels base..base+levels-1 for virtual rank v with member index
 * j (at level base). */
static int plan_vbutterfly(const vmap *m, int v, unsigned j, int base, int levels,
                           redcoll__elim_event *ev, int n, int cap) {
  for (int y = 0; y < levels; y++) {
    int W = v >> y, x = W & ~1, me = W & 1;
    if (n >= cap) return -1;
    set_units2(&ev[n++], REDCOLL__ELIM_PAIR, base + y, me, v_rank(m, x, y, j),
               v_rank(m, x + 1, y, j), v_lo(m, x, y), v_hi(m, x, y), v_lo(m, x + 1, y),
               v_hi(m, x + 1, y));
    j = 2 * j + (unsigned)me;
  }
  return n;
}

static int plan_nonoverlap(int p, int rank, redcoll__elim_event *ev, int cap) {
  int n2 = 0;
  while (((p >> n2) & 1) == 0) n2++;
  int q = p >> n2;
  if (q == 1) return plan_overlap(p, rank, ev, cap);
  int K = redcoll__elim_levels(q), cnt = 0;
  vmap m = {p, n2, q, (q - 1) / 2 - (1 << (K - 1)), 0};
  unsigned j = 0;
  /* Butterflies inside the groups of 2^n. */
  for (int z = 0; z < n2; z++) {
    int partner = rank ^ (1 << z), me = (rank >> z) & 1, base = rank >> (z + 1) << (z + 1);
    if (cnt >= cap) return -1;
    set_units2(&ev[cnt++], REDCOLL__ELIM_PAIR, z, me, me ? partner : rank, me ? rank : partner,
               base, base + (1 << z), base + (1 << z), base + (2 << z));
    j = 2 * j + (unsigned)me;
  }
  int u = rank >> n2, P;
  if (cnt + 2 > cap) return -1;
  redcoll__elim_event *e = &ev[cnt++];
  if (u <= 2) {
    e->kind = REDCOLL__ELIM_T32;
    e->level = n2;
    e->nunits = 3;
    e->me = u;
    for (int t = 0; t < 3; t++) {
      e->rank[t] = (t << n2) + (int)bitrev(j, n2);
      e->lo[t] = t << n2;
      e->hi[t] = (t + 1) << n2;
    }
    if (u == 0) return cnt;
    j = 2 * j + (u == 2);
    P = 0;
  } else {
    int x = u - ((u & 1) == 0), me = (u & 1) == 0;
    set_units2(e, REDCOLL__ELIM_PAIR, n2, me, (x << n2) + (int)bitrev(j, n2),
               ((x + 1) << n2) + (int)bitrev(j, n2), x << n2, (x + 1) << n2, (x + 1) << n2,
               (x + 2) << n2);
    j = 2 * j + (unsigned)me;
    P = (u - 1) / 2;
  }
  int w;
  if (P >= 1 && P <= 2 * m.e) {
    int low = P - ((P & 1) == 0), me = (P & 1) == 0;
    set_units2(&ev[cnt++], REDCOLL__ELIM_E21, n2 + 1, me, no_p_rank(&m, low, j),
               no_p_rank(&m, low + 1, j), no_p_lo(&m, low), no_p_hi(&m, low),
               no_p_lo(&m, low + 1), no_p_hi(&m, low + 1));
    if (!me) return cnt;
    w = P / 2;
  } else {
    w = P == 0 ? 0 : P - m.e;
  }
  return plan_vbutterfly(&m, w, j, n2 + 1, K - 1, ev, cnt, cap);
}

static int plan_2to1(int p, int rank, redcoll__elim_event *ev, int cap) {
  int k = redcoll__elim_levels(p), e = p - (1 << k), cnt = 0, v;
  vmap m = {p, 0, 0, e, 1};
  if (rank < 2 * e) {
    int low = rank & ~1, me = rank & 1;
    if (cap < 1) return -1;
    set_units2(&ev[cnt++], REDCOLL__ELIM_E21, 0, me, low, low + 1, low, low + 1, low + 1, low + 2);
    if (!me) return cnt;
    v = rank / 2;
  } else {
    v = rank - e;
  }
  return plan_vbutterfly(&m, v, 0, 0, k, ev, cnt, cap);
}

int redcoll__elim_plan(redcoll_algo algo, int p, int rank, redcoll__elim_event *ev, int cap) {
  if (p < 1 || rank < 0 || rank >= p) return -1;
  switch (algo) {
  case REDCOLL_ALGO_ELIMINATION:
    return plan_overlap(p, rank, ev, cap);
  case REDCOLL_ALGO_ELIMINATION_NONOVERLAP:
    return plan_nonoverlap(p, rank, ev, cap);
  case REDCOLL_ALGO_ELIMINATION_2TO1:
    return plan_2to1(p, rank, ev, cap);
  default:
    return -1;
  }
}

int redcoll__elim_eliminated(const redcoll__elim_event *ev, int nev) {
  if (nev == 0) return 0;
  const redcoll__elim_event *e = &ev[nev - 1];
  return (e->kind == REDCOLL__ELIM_T32 || e->kind == REDCOLL__ELIM_E21) && e->me == 0;
}

int redcoll__elim_halving(size_t count, size_t esize, size_t threshold, int levels) {
  int h = 0;
  while (h < levels) {
    size_t piece = (count >> h) + ((count & (((size_t)1 << h) - 1)) != 0);
    if (piece * esize <= threshold) break;
    h++;
  }
  return h;
}

void redcoll__elim_piece(size_t count, int level, unsigned j, size_t *off, size_t *len) {
  size_t o = 0, l = count;
  for (int y = 0; y < level; y++) {
    size_t lo = redcoll__elim_lower(l);
    if ((j >> (level - 1 - y)) & 1u) {
      o += lo;
      l -= lo;
    } else {
      l = lo;
    }
  }
  *off = o;
  *len = l;
}

/* ---- ops ------------------------------------------------------------------ */

typedef struct piece {
  size_t off, len;
} piece;

typedef struct emitter {
  redcoll__elim_op *ops;
  int n, cap;
} emitter;

static void emit(emitter *em, int to, piece s, int from, piece r, int combine) {
  if (em->n < em->cap) {
    redcoll__elim_op *o = &em->ops[em->n];
    o->send_to = to;
    o->send_off = to >= 0 ? s.off : 0;
    o->send_len = to >= 0 ? s.len : 0;
    o->recv_from = from;
    o->recv_off = from >= 0 ? r.off : 0;
    o->recv_len = from >= 0 ? r.len : 0;
    o->combine = from >= 0 ? combine : REDCOLL__ELIM_COPY;
  }
  em->n++;
}

static const piece none = {0, 0};

static piece lower(piece x) {
  piece r = {x.off, redcoll__elim_lower(x.len)};
  return r;
}
static piece upper(piece x) {
  size_t l = redcoll__elim_lower(x.len);
  piece r = {x.off + l, x.len - l};
  return r;
}

static int in_unit(const redcoll__elim_event *e, int u, int rank) {
  return rank >= e->lo[u] && rank < e->hi[u];
}

/* Whether event e is reversed in the routing phase (else its result goes
 * back in the extra step right after the reduction phase). */
static int routed(const redcoll__elim_event *e, int h) { return e->level < h; }

/* Whether event e halves its pieces. */
static int halves(const redcoll__elim_event *e, int h) {
  return e->kind != REDCOLL__ELIM_E21 && e->level < h;
}

/* The forward (reduction) ops of event e; cur is this rank's piece. */
static void forward(emitter *em, const redcoll__elim_event *e, int h, piece *cur) {
  int hv = halves(e, h);
  piece lo = hv ? lower(*cur) : *cur, hi = hv ? upper(*cur) : *cur;
  const int *r = e->rank;
  switch (e->kind) {
  case REDCOLL__ELIM_PAIR:
    if (e->me == 0) {
      emit(em, r[1], hi, r[1], lo, REDCOLL__ELIM_RIGHT);
      *cur = lo;
    } else {
      emit(em, r[0], lo, r[0], hi, REDCOLL__ELIM_LEFT);
      *cur = hi;
    }
    break;
  case REDCOLL__ELIM_T32:
    if (e->me == 0) { /* A: keeps the upper half of A+B, passes it to C */
      emit(em, r[1], lo, r[1], hi, REDCOLL__ELIM_RIGHT);
      emit(em, r[2], hi, -1, none, 0);
      *cur = hi;
    } else if (e->me == 1) { /* B: lower half of A+B, then of (A+B)+C */
      emit(em, r[0], hi, r[0], lo, REDCOLL__ELIM_LEFT);
      emit(em, -1, none, r[2], lo, REDCOLL__ELIM_RIGHT);
      *cur = lo;
    } else { /* C: idle in the first step */
      emit(em, r[1], lo, r[0], hi, REDCOLL__ELIM_LEFT);
      *cur = hi;
    }
    break;
  case REDCOLL__ELIM_E21:
    if (e->me == 0)
      emit(em, r[1], *cur, -1, none, 0);
    else
      emit(em, -1, none, r[0], *cur, REDCOLL__ELIM_LEFT);
    break;
  }
}

/* The ops that hand the result of event e back to its eliminated unit: the
 * reverse of e.  pre is this rank's piece before e, cur its piece now (the
 * result piece held after the later events were reversed).  root < 0: every
 * rank of the event gets its piece back (allreduce); else only the unit that
 * holds root does (reduce).  Returns this rank's piece afterwards. */
static piece backward(emitter *em, const redcoll__elim_event *e, int h, piece pre, piece cur,
                      int root) {
  int hv = halves(e, h);
  const int *r = e->rank;
  int me = e->me;
  if (!hv) {
    /* Non-halving T32 or E21: the survivor B / U gives the eliminated unit
     * its piece, which both hold whole. */
    if (e->kind == REDCOLL__ELIM_PAIR) return cur;
    if (root >= 0 && !in_unit(e, 0, root)) return cur;
    if (me == 0) emit(em, -1, none, r[1], pre, REDCOLL__ELIM_COPY);
    if (me == 1) emit(em, r[0], cur, -1, none, 0);
    return me == 0 ? pre : cur;
  }
  piece lo = lower(pre), hi = upper(pre);
  if (e->kind == REDCOLL__ELIM_PAIR) {
    if (root < 0) {
      emit(em, r[1 - me], cur, r[1 - me], me ? lo : hi, REDCOLL__ELIM_COPY);
      return pre;
    }
    if (in_unit(e, me, root)) {
      emit(em, -1, none, r[1 - me], me ? lo : hi, REDCOLL__ELIM_COPY);
      return pre;
    }
    if (in_unit(e, 1 - me, root)) emit(em, r[1 - me], cur, -1, none, 0);
    return cur;
  }
  /* T32, halving: B holds lo, C holds hi. */
  if (root < 0) {
    if (me == 0) {
      emit(em, -1, none, r[2], hi, REDCOLL__ELIM_COPY);
      emit(em, r[1], hi, r[1], lo, REDCOLL__ELIM_COPY);
    } else if (me == 1) {
      emit(em, r[2], lo, -1, none, 0);
      emit(em, r[0], lo, r[0], hi, REDCOLL__ELIM_COPY);
    } else {
      emit(em, r[0], hi, r[1], lo, REDCOLL__ELIM_COPY);
    }
    return pre;
  }
  int ru = in_unit(e, 0, root) ? 0 : in_unit(e, 1, root) ? 1 : in_unit(e, 2, root) ? 2 : -1;
  if (ru < 0) return cur;
  if (ru == me) {
    if (me == 0) emit(em, -1, none, r[1], lo, REDCOLL__ELIM_COPY);
    if (me != 2) emit(em, -1, none, r[2], hi, REDCOLL__ELIM_COPY);
    if (me == 2) emit(em, -1, none, r[1], lo, REDCOLL__ELIM_COPY);
    return pre;
  }
  if (me != 0) emit(em, r[ru], cur, -1, none, 0);
  return cur;
}

int redcoll__elim_ops(const redcoll__elim_event *ev, int nev, int h, size_t count,
                      redcoll_coll coll, int root, redcoll__elim_op *ops, int cap) {
  emitter em = {ops, 0, cap};
  piece pre[REDCOLL__ELIM_MAX_EVENTS], cur = {0, count};
  int rt = coll == REDCOLL_COLL_REDUCE ? root : -1;
  if (nev > REDCOLL__ELIM_MAX_EVENTS) return -1;
  for (int i = 0; i < nev; i++) {
    pre[i] = cur;
    forward(&em, &ev[i], h, &cur);
  }
  /* The results for units eliminated by non-halving events. */
  for (int i = 0; i < nev; i++)
    if (!routed(&ev[i], h)) cur = backward(&em, &ev[i], h, pre[i], cur, rt);
  /* The routing phase (allreduce) or the gather to the root (reduce). */
  for (int i = nev - 1; i >= 0; i--)
    if (routed(&ev[i], h)) cur = backward(&em, &ev[i], h, pre[i], cur, rt);
  return em.n <= cap ? em.n : -1;
}

/* ---- execution ------------------------------------------------------------ */

static int elim_run(const redcoll__call *call, redcoll_algo algo) {
  redcoll_comm *c = call->comm;
  size_t es = call->esize, bytes = call->count * es, tmp_len = 0;
  redcoll__elim_event ev[REDCOLL__ELIM_MAX_EVENTS];
  redcoll__elim_op ops[REDCOLL__ELIM_MAX_OPS];
  int nev = redcoll__elim_plan(algo, c->size, c->rank, ev, REDCOLL__ELIM_MAX_EVENTS);
  if (nev < 0) return REDCOLL_EINVAL;
  int h = redcoll__elim_halving(call->count, es, c->threshold, redcoll__elim_levels(c->size));
  int nops = redcoll__elim_ops(ev, nev, h, call->count, call->coll, call->root, ops,
                               REDCOLL__ELIM_MAX_OPS);
  if (nops < 0) return REDCOLL_EINVAL;

  char *work = call->recvbuf;
  if (work == NULL && (work = redcoll__scratch(c, 1, bytes)) == NULL) return REDCOLL_ENOMEM;
  for (int i = 0; i < nops; i++)
    if (ops[i].combine != REDCOLL__ELIM_COPY && ops[i].recv_len > tmp_len)
      tmp_len = ops[i].recv_len;
  char *tmp = NULL;
  if (tmp_len > 0 && (tmp = redcoll__scratch(c, 0, tmp_len * es)) == NULL) return REDCOLL_ENOMEM;

  /* Until this rank first writes its work vector, its data is the input. */
  const char *rd = call->in_place ? work : call->sendbuf;
  for (int i = 0; i < nops; i++) {
    const redcoll__elim_op *o = &ops[i];
    const char *sb = rd + o->send_off * es;
    char *rb = o->combine == REDCOLL__ELIM_COPY ? work + o->recv_off * es : tmp;
    size_t sl = o->send_len * es, rl = o->recv_len * es;
    int rc;
    if (o->send_to >= 0 && o->recv_from >= 0)
      rc = redcoll__sendrecv(c, o->send_to, sb, sl, o->recv_from, rb, rl);
    else if (o->send_to >= 0)
      rc = redcoll__send(c, o->send_to, sb, sl);
    else
      rc = redcoll__recv(c, o->recv_from, rb, rl);
    if (rc != REDCOLL_OK) return rc;
    if (o->recv_from < 0) continue;
    char *w = work + o->recv_off * es;
    const char *mine = rd + o->recv_off * es;
    if (o->combine == REDCOLL__ELIM_LEFT)
      redcoll__reduce(call, w, tmp, mine, o->recv_len);
    else if (o->combine == REDCOLL__ELIM_RIGHT)
      redcoll__reduce(call, w, mine, tmp, o->recv_len);
    rd = work;
  }
  if (call->coll == REDCOLL_COLL_REDUCE || rd == work) return REDCOLL_OK;
  /* Not reached for p > 1 (every rank receives something); kept for safety. */
  redcoll__copy(c, work, rd, bytes);
  return REDCOLL_OK;
}

static int elimination(const redcoll__call *call) {
  return elim_run(call, REDCOLL_ALGO_ELIMINATION);
}
static int elimination_nonoverlap(const redcoll__call *call) {
  return elim_run(call, REDCOLL_ALGO_ELIMINATION_NONOVERLAP);
}
static int elimination_2to1(const redcoll__call *call) {
  return elim_run(call, REDCOLL_ALGO_ELIMINATION_2TO1);
}

/* ---- cost ----------------------------------------------------------------
 *
 * Charged level by level, so that the threshold b between halving and
 * non-halving levels is modelled.  Notation: p ranks, q = ceil(log2 p),
 * k = floor(log2 p), pp = 2^k, t the number of trailing zero bits of p
 * (p = odd 2^t), n elements of es bytes, m = n es, s_z = ceil(n / 2^z) es
 * the piece after z halvings, h the number of halving levels (pieces above
 * b are halved).  Allreduce, both protocols:
 *   reduction   sum over levels z < k of alpha + piece_z (beta + gamma),
 *               piece_z = s_(z+1) for z < h, s_h above;
 *   3-2 step    one more round of the piece of level t (p not a power of 2);
 *   routing     the halving levels reversed, alpha + s_(z+1) beta each, the
 *               3-2 step reversed when t < h, and one round of s_h beta to
 *               the ranks eliminated at non-halving levels, if any.
 * For m <= b that is (q + 1)(alpha + m beta) + q m gamma, for halving at
 * every level 2 q alpha + (2 (1 - 1/pp) + 1/2^t) m beta
 * + ((1 - 1/pp) + 1/2^(t+1)) m gamma.  Reduce (root 0) of the overlapping
 * protocol replaces the routing by the gather of the pieces along the
 * halving levels, plus one round of s_h beta when p >= 3 pp / 2; the
 * non-overlapping protocol's reduce costs what its allreduce does. */

/* Whether some level z in [from, k) has an odd number >= 3 of units, whose
 * 3-2 step eliminates ranks at a level that does not halve. */
static int odd_level_from(int p, int from, int k) {
  for (int z = from; z < k; z++) {
    int u = p >> z;
    if ((u & 1) && u >= 3) return 1;
  }
  return 0;
}

double redcoll__elimination_cost(const redcoll__mach *M, const redcoll__cost_args *a,
                                 int overlap) {
  int p = a->p, k = redcoll__ilog2_floor(p), t = redcoll__trailing_zeros(p);
  size_t n = a->count, es = a->esize;
  int h = redcoll__cost_halving_levels(n, es, a->threshold, k);
  int reduce = overlap && a->coll == REDCOLL_COLL_REDUCE;
  double time = redcoll__cost_butterfly(M, k, h, n, es, 1);
  if ((p & (p - 1)) == 0) return time;
  double top = redcoll__cost_piece(n, h, es);
  double pt = t < h ? redcoll__cost_piece(n, t + 1, es) : top;
  time += redcoll__cost_rnd(M, pt, pt); /* the extra message of the first 3-2 step */
  if (reduce) {
    /* The gather to the root takes one more round when p >= 3 pp / 2. */
    if (2 * p >= 3 << k) time += redcoll__cost_rnd(M, top, 0);
    return time;
  }
  if (t < h) time += redcoll__cost_rnd(M, redcoll__cost_piece(n, t + 1, es), 0);
  if (t >= h && odd_level_from(p, h, k)) time += redcoll__cost_rnd(M, top, 0);
  return time;
}

static double cost_overlap(const redcoll__mach *M, const redcoll__cost_args *a) {
  return redcoll__elimination_cost(M, a, 1);
}

static double cost_nonoverlap(const redcoll__mach *M, const redcoll__cost_args *a) {
  return redcoll__elimination_cost(M, a, 0);
}

/* The butterfly over pp ranks; for p not a power of two rank 2i sends its
 * vector to 2i+1 first and at the end the result goes back to 2i
 * (allreduce), or the gather to the root takes as long (reduce). */
static double cost_2to1(const redcoll__mach *M, const redcoll__cost_args *a) {
  int p = a->p, k = redcoll__ilog2_floor(p);
  size_t n = a->count, es = a->esize;
  int h = redcoll__cost_halving_levels(n, es, a->threshold, k);
  double m = (double)n * (double)es;
  double time = redcoll__cost_butterfly(M, k, h, n, es, 1);
  if ((p & (p - 1)) == 0) return time;
  time += redcoll__cost_rnd(M, m, m) + redcoll__cost_rnd(M, m, 0);
  return time;
}

/* ---- registry ------------------------------------------------------------ */

const redcoll__algo_entry redcoll__algos_elimination[] = {
    {REDCOLL_COLL_ALLREDUCE, REDCOLL_ALGO_ELIMINATION, elimination, cost_overlap, 0},
    {REDCOLL_COLL_REDUCE, REDCOLL_ALGO_ELIMINATION, elimination, cost_overlap, 0},
    {REDCOLL_COLL_ALLREDUCE, REDCOLL_ALGO_ELIMINATION_NONOVERLAP, elimination_nonoverlap,
     cost_nonoverlap, 0},
    {REDCOLL_COLL_REDUCE, REDCOLL_ALGO_ELIMINATION_NONOVERLAP, elimination_nonoverlap,
     cost_nonoverlap, 0},
    {REDCOLL_COLL_ALLREDUCE, REDCOLL_ALGO_ELIMINATION_2TO1, elimination_2to1, cost_2to1, 0},
    {REDCOLL_COLL_REDUCE, REDCOLL_ALGO_ELIMINATION_2TO1, elimination_2to1, cost_2to1, 0},
    {REDCOLL_COLL_COUNT, REDCOLL_ALGO_AUTO, NULL, NULL, 0},
};
