/*
 * The alpha-beta-gamma cost of every algorithm, as the simulator measures
 * it (one-ported, full duplex: a round costs alpha + n beta for its largest
 * message n on the critical path, a local reduction of n bytes n gamma).
 *
 * The formulas are those of the algorithm files' headers and of the papers,
 * with two refinements that the simulator showed to matter: blocks are
 * counted in whole elements (ceil), and the elimination family is charged
 * level by level, so that the threshold b between halving and non-halving
 * levels is modelled.  Notation: p ranks, q = ceil(log2 p), k = floor(log2
 * p), pp = 2^k, t the number of trailing zero bits of p (p = odd 2^t), n
 * elements of es bytes, m = n es, s_z = ceil(n / 2^z) es the piece after z
 * halvings, h the number of halving levels (pieces above b are halved).
 *
 * Elimination (overlapping and non-overlapping protocols), allreduce:
 *   reduction   sum over levels z < k of alpha + piece_z (beta + gamma),
 *               piece_z = s_(z+1) for z < h, s_h above;
 *   3-2 step    one more round of the piece of level t (p not a power of 2);
 *   routing     the halving levels reversed, alpha + s_(z+1) beta each, the
 *               3-2 step reversed when t < h, and one round of s_h beta to
 *               the ranks eliminated at non-halving levels, if any.
 * For m <= b that is (q + 1)(alpha + m beta) + q m gamma, for halving at
 * every level 2 q alpha + (2 (1 - 1/pp) + 1/2^t) m beta
 * + ((1 - 1/pp) + 1/2^(t+1)) m gamma.  Reduce (root 0) replaces the
 * routing by the gather of the pieces along the halving levels, plus one
 * round of s_h beta when p >= 3 pp / 2.
 */
#include <math.h>

#include "select/cost.h"
#include "algo/elimination/elimination.h"

/* ---- small arithmetic -------------------------------------------------- */

static int ilog2_floor(int p) {
  int k = 0;
  while ((2 << k) <= p) k++;
  return k;
}

static int trailing_zeros(int p) {
  int t = 0;
  while (p > 0 && !(p & 1)) {
    p >>= 1;
    t++;
  }
  return t;
}

/* Bytes of the largest of k balanced blocks of n elements. */
static double blk(size_t n, size_t k, size_t es) { return (double)((n + k - 1) / k) * (double)es; }

/* Bytes of the piece after z halvings (the lower half keeps the odd
 * element). */
static double piece(size_t n, int z, size_t es) {
  size_t l = n;
  for (int i = 0; i < z; i++) l = (l + 1) / 2;
  return (double)l * (double)es;
}

/* Number of halving levels among the first `levels`: those whose piece,
 * ceil(n / 2^y) elements, is larger than b. */
static int halving_levels(size_t n, size_t es, size_t b, int levels) {
  int h = 0;
  while (h < levels && piece(n, h, es) > (double)b) h++;
  return h;
}

typedef struct {
  double a, b, g; /* alpha, beta, gamma of the machine */
} mach;

static double rnd(const mach *M, double sent, double reduced) {
  return M->a + sent * M->b + reduced * M->g;
}

/* ---- the elimination family -------------------------------------------- */

/* The butterfly over pp = 2^k ranks with h halving levels: the reduction
 * phase (or, with route, also the reverse of the halving levels). */
static double butterfly(const mach *M, int k, int h, size_t n, size_t es, int route) {
  double t = 0;
  double top = piece(n, h, es);
  for (int z = 0; z < k; z++) {
    double s = z < h ? piece(n, z + 1, es) : top;
    t += rnd(M, s, s);
  }
  if (route) {
    for (int z = 0; z < h; z++) t += rnd(M, piece(n, z + 1, es), 0);
  }
  return t;
}

/* Whether some level z in [from, k) has an odd number >= 3 of units, whose
 * 3-2 step eliminates ranks at a level that does not halve. */
static int odd_level_from(int p, int from, int k) {
  for (int z = from; z < k; z++) {
    int u = p >> z;
    if ((u & 1) && u >= 3) return 1;
  }
  return 0;
}

/* overlap: the overlapping protocol, whose reduce gathers along a shorter
 * path; the non-overlapping protocol's reduce costs what its allreduce
 * does. */
static double elimination(const mach *M, const redcoll__cost_args *a, int overlap) {
  int p = a->p, k = ilog2_floor(p), t = trailing_zeros(p);
  size_t n = a->count, es = a->esize;
  int h = halving_levels(n, es, a->threshold, k);
  int reduce = overlap && a->coll == REDCOLL_COLL_REDUCE;
  double time = butterfly(M, k, h, n, es, 1);
  if ((p & (p - 1)) == 0) return time;
  double pt = t < h ? piece(n, t + 1, es) : piece(n, h, es);
  time += rnd(M, pt, pt); /* the extra message of the first 3-2 step */
  if (reduce) {
    /* The gather to the root takes one more round when p >= 3 pp / 2. */
    if (2 * p >= 3 << k) time += rnd(M, piece(n, h, es), 0);
    return time;
  }
  if (t < h) time += rnd(M, piece(n, t + 1, es), 0);
  if (t >= h && odd_level_from(p, h, k)) time += rnd(M, piece(n, h, es), 0);
  return time;
}

static double elimination_2to1(const mach *M, const redcoll__cost_args *a) {
  int p = a->p, k = ilog2_floor(p);
  size_t n = a->count, es = a->esize;
  int h = halving_levels(n, es, a->threshold, k);
  double m = (double)n * (double)es;
  double time = butterfly(M, k, h, n, es, 1);
  if ((p & (p - 1)) == 0) return time;
  /* 2i sends its vector to 2i+1; at the end the result goes back to 2i
   * (allreduce), or the gather to the root takes as long (reduce). */
  time += rnd(M, m, m) + rnd(M, m, 0);
  return time;
}

/* elimination_rings: the stages of its plan (elimination_rings.c: n
 * butterflies, a' rings of three, then the elimination over the q remaining
 * units); each stage cuts its piece into r blocks while the piece is above
 * b, and allreduce reverses the cutting stages. */
static double elimination_rings(const mach *M, const redcoll__cost_args *a) {
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
      time += (r - 1) * rnd(M, bb, bb);
      back += (r - 1) * rnd(M, bb, 0);
      cur = b;
    } else {
      time += (r - 1) * rnd(M, whole, whole);
    }
  }
  if (pl.q > 1) {
    redcoll__cost_args e = *a;
    e.p = pl.q;
    e.count = cur;
    time += elimination(M, &e, 1);
  }
  return time + back;
}

/* ---- Rabenseifner's family --------------------------------------------- */

static double halving_doubling(const mach *M, const redcoll__cost_args *a) {
  int p = a->p, k = ilog2_floor(p), pp = 1 << k;
  size_t n = a->count, es = a->esize;
  if (p == pp) return butterfly(M, k, k, n, es, 1);
  /* the pair step: exchange halves, reduce, send the reduced half */
  double half = piece(n, 1, es), m = (double)n * (double)es;
  double time = rnd(M, half, half) + rnd(M, half, 0) + butterfly(M, k, k, n, es, 1);
  if (a->coll != REDCOLL_COLL_REDUCE) time += rnd(M, m, 0);
  return time;
}

/* binary_blocks: docs/algorithms/rabenseifner.md, "Derived cost". */
static double binary_blocks(const mach *M, const redcoll__cost_args *a) {
  int ex[32], nb = 0;
  for (int e = 30; e >= 0; e--)
    if ((a->p >> e) & 1) ex[nb++] = e;
  double n = (double)a->count * (double)a->esize;
#define RS(e) (M->a * (e) + (M->b + M->g) * (n - n / (double)(1u << (e))))
  double A = RS(ex[nb - 1]);
  for (int k = nb - 1; k > 0; k--) {
    double q = (double)(1u << (ex[k - 1] - ex[k]));
    double pc = n / (double)(1u << ex[k - 1]);
    double rs = RS(ex[k - 1]);
    A = (A > rs ? A : rs) + q * (M->a + M->b * pc) + M->g * pc;
  }
#undef RS
  if (a->coll == REDCOLL_COLL_REDUCE) {
    double t = A;
    for (int s = 0; s < ex[0]; s++) t += M->a + M->b * n / (double)(2u << s);
    return t;
  }
  double B = A, end = 0;
  for (int k = 0; k < nb; k++) {
    int e = ex[k];
    double steps_hi = 0, steps_lo = 0;
    int nx = k + 1 < nb ? ex[k + 1] : -1;
    for (int s = 0; s < e; s++) {
      double st = M->a + M->b * n / (double)(2u << s);
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

/* ---- circulant --------------------------------------------------------- */

static double circulant(const mach *M, const redcoll__cost_args *a, int rsag) {
  int p = a->p, q = redcoll__ceil_log2(p);
  size_t n = a->count, es = a->esize;
  double m = (double)n * (double)es, b = blk(n, (size_t)p, es);
  double span = (double)((1u << q) - 1);
  switch (a->coll) {
  case REDCOLL_COLL_ALLREDUCE: {
    if (rsag) return 2 * q * M->a + (span + (p - 1)) * b * M->b + span * b * M->g;
    int extra = 0;
    if (p & (p - 1)) {
      extra = q - 2 - trailing_zeros(p);
      if (extra < 0) extra = 0;
    }
    return q * M->a + q * m * M->b + (q + extra) * m * M->g;
  }
  case REDCOLL_COLL_REDUCE:
    return q * (M->a + m * M->b + m * M->g);
  case REDCOLL_COLL_BCAST:
    return q * (M->a + m * M->b);
  case REDCOLL_COLL_REDUCE_SCATTER_BLOCK:
  case REDCOLL_COLL_REDUCE_SCATTER:
    return q * M->a + span * m * (M->b + M->g);
  case REDCOLL_COLL_ALLGATHER:
  case REDCOLL_COLL_ALLGATHERV:
  case REDCOLL_COLL_GATHER:
  case REDCOLL_COLL_SCATTER:
    return q * M->a + (p - 1) * m * M->b;
  default:
    return -1;
  }
}

/* ---- the rest ---------------------------------------------------------- */

static double linear(const mach *M, const redcoll__cost_args *a) {
  double p1 = a->p - 1, m = (double)a->count * (double)a->esize;
  /* Start-ups per phase of allreduce and reduce: p-1, one per message;
   * with more ranks than CPUs one, since a rank then waits for a CPU more
   * than for its messages and the root drains what came in meanwhile.
   * Volume and reductions stay serial at the root.  Measured for these two
   * only (docs/tuning.md), so the other collectives keep p-1. */
  double starts = a->ranks_per_cpu > 1 ? 1 : p1;
  switch (a->coll) {
  case REDCOLL_COLL_ALLREDUCE:
    return 2 * starts * M->a + p1 * m * (2 * M->b + M->g);
  case REDCOLL_COLL_REDUCE:
    return starts * M->a + p1 * m * (M->b + M->g);
  case REDCOLL_COLL_BCAST:
  case REDCOLL_COLL_GATHER:
  case REDCOLL_COLL_SCATTER:
    return p1 * rnd(M, m, 0);
  case REDCOLL_COLL_REDUCE_SCATTER_BLOCK:
  case REDCOLL_COLL_REDUCE_SCATTER: {
    double v = m * a->p;
    return p1 * rnd(M, v, v) + p1 * rnd(M, m, 0);
  }
  case REDCOLL_COLL_ALLGATHER:
  case REDCOLL_COLL_ALLGATHERV:
    return p1 * rnd(M, m, 0) + p1 * rnd(M, m * a->p, 0);
  case REDCOLL_COLL_BARRIER:
    return 2 * p1 * M->a;
  default:
    return -1;
  }
}

static double binary_tree(const mach *M, const redcoll__cost_args *a) {
  int q = redcoll__ceil_log2(a->p);
  double m = (double)a->count * (double)a->esize;
  switch (a->coll) {
  case REDCOLL_COLL_ALLREDUCE:
    return q * rnd(M, m, m) + q * rnd(M, m, 0);
  case REDCOLL_COLL_REDUCE:
    return q * rnd(M, m, m); /* the tree is rooted at the root: no forwarding */
  case REDCOLL_COLL_BCAST:
    return q * rnd(M, m, 0);
  default:
    return -1;
  }
}

double redcoll__cost(redcoll_algo algo, const redcoll__cost_args *a, const redcoll__cost_model *cm) {
  /* f ranks per CPU: every round waits for them to take turns. */
  double f = a->ranks_per_cpu > 1 ? a->ranks_per_cpu : 1;
  const mach M = {cm->alpha * f, cm->beta, cm->gamma};
  int p = a->p, q = redcoll__ceil_log2(p);
  size_t n = a->count, es = a->esize;
  double m = (double)n * (double)es;
  int rooted = a->coll == REDCOLL_COLL_REDUCE;
  if (p <= 1) return 0;
  switch (algo) {
  case REDCOLL_ALGO_LINEAR:
    return linear(&M, a);
  case REDCOLL_ALGO_BINARY_TREE:
    return binary_tree(&M, a);
  case REDCOLL_ALGO_RECURSIVE_DOUBLING: {
    if (a->coll != REDCOLL_COLL_ALLREDUCE) return -1;
    int k = ilog2_floor(p);
    double t = k * rnd(&M, m, m);
    if (p != 1 << k) t += rnd(&M, m, m) + rnd(&M, m, 0);
    return t;
  }
  case REDCOLL_ALGO_HALVING_DOUBLING:
    return rooted || a->coll == REDCOLL_COLL_ALLREDUCE ? halving_doubling(&M, a) : -1;
  case REDCOLL_ALGO_BINARY_BLOCKS:
    return rooted || a->coll == REDCOLL_COLL_ALLREDUCE ? binary_blocks(&M, a) : -1;
  case REDCOLL_ALGO_RING: {
    if (!rooted && a->coll != REDCOLL_COLL_ALLREDUCE) return -1;
    double b = blk(n, (size_t)p, es);
    return 2 * (p - 1) * M.a + 2 * (p - 1) * b * M.b + (p - 1) * b * M.g;
  }
  case REDCOLL_ALGO_RING_SEQUENTIAL: {
    if (!rooted && a->coll != REDCOLL_COLL_ALLREDUCE) return -1;
    double b = blk(n, (size_t)p, es);
    return (p - 1 + q) * M.a + 2 * (p - 1) * b * M.b + (p - 1) * b * M.g;
  }
  case REDCOLL_ALGO_ALLGATHER_REDUCE:
    if (!rooted && a->coll != REDCOLL_COLL_ALLREDUCE) return -1;
    return q * M.a + (p - 1) * m * (M.b + M.g);
  case REDCOLL_ALGO_ELIMINATION:
  case REDCOLL_ALGO_ELIMINATION_NONOVERLAP:
    if (!rooted && a->coll != REDCOLL_COLL_ALLREDUCE) return -1;
    return elimination(&M, a, algo == REDCOLL_ALGO_ELIMINATION);
  case REDCOLL_ALGO_ELIMINATION_RINGS:
    if (!rooted && a->coll != REDCOLL_COLL_ALLREDUCE) return -1;
    return elimination_rings(&M, a);
  case REDCOLL_ALGO_ELIMINATION_2TO1:
    if (!rooted && a->coll != REDCOLL_COLL_ALLREDUCE) return -1;
    return elimination_2to1(&M, a);
  case REDCOLL_ALGO_CIRCULANT:
    return circulant(&M, a, 0);
  case REDCOLL_ALGO_CIRCULANT_RSAG:
    return a->coll == REDCOLL_COLL_ALLREDUCE ? circulant(&M, a, 1) : -1;
  case REDCOLL_ALGO_DISSEMINATION:
    return a->coll == REDCOLL_COLL_BARRIER ? q * M.a : -1;
  default:
    return -1;
  }
}

/* Candidates per collective, in the order that breaks ties. */
static const redcoll_algo candidates[] = {
    REDCOLL_ALGO_CIRCULANT,        REDCOLL_ALGO_ELIMINATION,
    REDCOLL_ALGO_RECURSIVE_DOUBLING, REDCOLL_ALGO_HALVING_DOUBLING,
    REDCOLL_ALGO_RING_SEQUENTIAL,  REDCOLL_ALGO_RING,
    REDCOLL_ALGO_CIRCULANT_RSAG,   REDCOLL_ALGO_BINARY_BLOCKS,
    REDCOLL_ALGO_ELIMINATION_NONOVERLAP, REDCOLL_ALGO_ELIMINATION_RINGS,
    REDCOLL_ALGO_ELIMINATION_2TO1, REDCOLL_ALGO_ALLGATHER_REDUCE,
    REDCOLL_ALGO_DISSEMINATION,    REDCOLL_ALGO_BINARY_TREE,
    REDCOLL_ALGO_LINEAR,
};

redcoll_algo redcoll__cost_select(const redcoll__cost_args *a, unsigned exclude,
                                  const redcoll__cost_model *cm, double *time) {
  redcoll_algo best = REDCOLL_ALGO_AUTO;
  double best_t = HUGE_VAL;
  for (size_t i = 0; i < sizeof candidates / sizeof candidates[0]; i++) {
    const redcoll__algo_entry *e = redcoll__algo_find(a->coll, candidates[i]);
    if (e == NULL) continue;
    if (e->flags & exclude) continue;
    double t = redcoll__cost(candidates[i], a, cm);
    if (t < 0) continue;
    /* A relative margin keeps rounding noise from deciding a tie. */
    if (best == REDCOLL_ALGO_AUTO || t < best_t * (1 - 1e-9)) {
      best = candidates[i];
      best_t = t;
    }
  }
  if (best == REDCOLL_ALGO_AUTO) {
    /* Nothing modelled: the first registered candidate that accepts the
     * operator. */
    for (size_t i = 0; i < sizeof candidates / sizeof candidates[0]; i++) {
      const redcoll__algo_entry *e = redcoll__algo_find(a->coll, candidates[i]);
      if (e == NULL) continue;
      if (e->flags & exclude) continue;
      best = candidates[i];
      break;
    }
    if (best == REDCOLL_ALGO_AUTO) best = REDCOLL_ALGO_LINEAR;
  }
  if (time != NULL) *time = best_t;
  return best;
}
