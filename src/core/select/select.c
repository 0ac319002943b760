/*
 * Automatic algorithm selection (REDCOLL_ALGO_AUTO): the cost of one
 * algorithm (its registry row's cost function), the cheapest candidate,
 * and the public redcoll_cost_predict and redcoll_cost_choose.  The cost
 * model and the ranks per CPU it uses are resolved in tuning.c.
 *
 * AUTO predicts the time of every registered algorithm of the collective
 * that accepts the operator and runs the cheapest.  The prediction
 * depends only on p, the count, the element size, the root, the operator's
 * commutativity, the threshold, the cost model and the ranks per CPU:
 * values every rank shares (the cost model, the threshold and the ranks
 * per CPU must be set alike on every rank), so every rank picks the same
 * algorithm.  docs/tuning.md.
 */
#include <math.h>

#include "select/cost.h"

/* ---- the cost of one algorithm ------------------------------------------ */

double redcoll__cost(redcoll_algo algo, const redcoll__cost_args *a, const redcoll__cost_model *cm) {
  return redcoll__cost_dup(algo, a, cm, 0);
}

double redcoll__cost_dup(redcoll_algo algo, const redcoll__cost_args *a,
                         const redcoll__cost_model *cm, double dup) {
  /* f ranks per CPU: every round waits for them to take turns. */
  double f = a->ranks_per_cpu > 1 ? a->ranks_per_cpu : 1;
  const redcoll__mach M = {cm->alpha * f, cm->beta, cm->gamma};
  if (a->p <= 1) return 0;
  const redcoll__algo_entry *e = redcoll__algo_row(a->coll, algo);
  if (e == NULL || e->cost == NULL) return -1;
  double t = e->cost(&M, a);
  if (dup > 0 && (a->coll == REDCOLL_COLL_ALLREDUCE || a->coll == REDCOLL_COLL_REDUCE) &&
      algo != REDCOLL_ALGO_LINEAR && algo != REDCOLL_ALGO_BINARY_TREE) {
    /* Its exchanges: the bytes on its critical path, each copied twice by
     * the CPUs of a rank that sends and receives at once. */
    const redcoll__mach bytes = {0, 1, 0};
    t += dup * e->cost(&bytes, a);
  }
  return t;
}

/* Candidates per collective, in the order that breaks ties. */
static const redcoll_algo candidates[] = {
    REDCOLL_ALGO_CIRCULANT,        REDCOLL_ALGO_ELIMINATION,
    REDCOLL_ALGO_RECURSIVE_DOUBLING, REDCOLL_ALGO_HALVING_DOUBLING,
    REDCOLL_ALGO_RING_SEQUENTIAL,  REDCOLL_ALGO_RING,
    REDCOLL_ALGO_CIRCULANT_RSAG,   REDCOLL_ALGO_BINARY_BLOCKS,
    REDCOLL_ALGO_ELIMINATION_NONOVERLAP, REDCOLL_ALGO_ELIMINATION_RINGS,
    REDCOLL_ALGO_ELIMINATION_2TO1, REDCOLL_ALGO_ALLGATHER_REDUCE,
    REDCOLL_ALGO_DISSEMINATION,    REDCOLL_ALGO_HILLIS_STEELE,
    REDCOLL_ALGO_TRANSPOSE,        REDCOLL_ALGO_BRUCK,
    REDCOLL_ALGO_PAIRWISE,         REDCOLL_ALGO_BINARY_TREE,
    REDCOLL_ALGO_LINEAR,
};

redcoll_algo redcoll__cost_select(const redcoll__cost_args *a, unsigned exclude,
                                  const redcoll__cost_model *cm, double *time) {
  return redcoll__cost_select_dup(a, exclude, cm, 0, time);
}

redcoll_algo redcoll__cost_select_dup(const redcoll__cost_args *a, unsigned exclude,
                                      const redcoll__cost_model *cm, double dup, double *time) {
  redcoll_algo best = REDCOLL_ALGO_AUTO;
  double best_t = HUGE_VAL;
  for (size_t i = 0; i < sizeof candidates / sizeof candidates[0]; i++) {
    const redcoll__algo_entry *e = redcoll__algo_find(a->coll, candidates[i]);
    if (e == NULL) continue;
    if (e->flags & exclude) continue;
    double t = redcoll__cost_dup(candidates[i], a, cm, dup);
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

/* ---- the choice -------------------------------------------------------- */

/* recursive_doubling and halving_doubling allreduce pair rank r with
 * r ^ d for d = 1, 2, ..., p/2.  On hosts of T ranks each holding
 * consecutive ranks, T and the number of hosts H powers of two, their
 * first lg T rounds stay inside a host and the others pair ranks of
 * different hosts, all T ranks of a host at once: the algorithm is
 * two-level already (halving-doubling is the schedule of two_level with T
 * slices when every phase runs it).  Its predicted time: its rounds inside
 * a host under the intra-host model (the algorithm on T ranks, the whole
 * vector) plus those between hosts with beta x T (on H ranks, the whole
 * vector, or halving-doubling's 1/T of it), as the two-level phases are
 * priced.  -1 elsewhere (beta x T for every byte applies). */
static double butterfly_on_hosts(const redcoll__call *call, redcoll_algo algo) {
  redcoll_comm *c = call->comm;
  const redcoll__topo *t = redcoll__hier_topo(c);
  if (t == NULL || call->coll != REDCOLL_COLL_ALLREDUCE || !t->contiguous) return -1;
  int T = t->max_local, H = t->hosts;
  if (t->min_local != T || (T & (T - 1)) != 0 || (H & (H - 1)) != 0) return -1;
  size_t m = call->count;
  size_t across = algo == REDCOLL_ALGO_HALVING_DOUBLING ? (m + (size_t)T - 1) / (size_t)T : m;
  redcoll__cost_args in = {REDCOLL_COLL_ALLREDUCE, T, m, call->esize, c->threshold, 0,
                           c->ranks_per_cpu, 0};
  redcoll__cost_args out = in;
  out.p = H;
  out.count = across;
  redcoll__cost_model lm = {0, 0, c->cost_gamma};
  redcoll__two_level_intra_model(c, &lm.alpha, &lm.beta);
  redcoll__cost_model nm = {c->cost_alpha, c->cost_beta * T, c->cost_gamma};
  double ti = redcoll__cost(algo, &in, &lm), to = redcoll__cost(algo, &out, &nm);
  return ti < 0 || to < 0 ? -1 : ti + to;
}

redcoll_algo redcoll__select(const redcoll__call *call) {
  redcoll_comm *c = call->comm;
  redcoll__cost_resolve(c); /* a malformed setting is logged; defaults then */
  redcoll__rpc_resolve(c);
  /* Ranks that share a host share its link: a flat algorithm's ranks may
   * all talk across hosts at once (algo/hier/two_level.c). */
  double share = redcoll__two_level_link_share(c);
  redcoll__cost_model cm = {c->cost_alpha, c->cost_beta * share, c->cost_gamma};
  redcoll__cost_args a = {call->coll,   c->size,    call->count,      call->esize,
                          c->threshold, call->root, c->ranks_per_cpu, redcoll__root_segment(c)};
  if (call->counts != NULL) {
    /* Irregular blocks: the largest one is on the critical path. */
    size_t mx = 0;
    for (int i = 0; i < c->size; i++)
      if (call->counts[i] > mx) mx = call->counts[i];
    a.count = mx;
  }
  double flat;
  unsigned exclude = redcoll__excluded_flags(call);
  struct redcoll__pick *k = &c->pick[call->coll];
  if (share <= 1 && k->valid && k->p == a.p && k->count == a.count &&
      k->root == a.root && k->esize == a.esize && k->threshold == a.threshold &&
      k->exclude == exclude &&
      k->ranks_per_cpu == a.ranks_per_cpu && k->alpha == cm.alpha && k->beta == cm.beta &&
      k->gamma == cm.gamma && k->dup == c->cost_dup && k->segment == a.segment)
    return k->algo;
  redcoll_algo best = redcoll__cost_select_dup(&a, exclude, &cm, c->cost_dup, &flat);
  if (share <= 1) {
    *k = (struct redcoll__pick){1,        a.p,     a.root,   a.count,     a.esize,
                                a.threshold, exclude, a.ranks_per_cpu, cm.alpha,
                                cm.beta,  cm.gamma, c->cost_dup, a.segment, best};
    return best;
  }
  /* Butterflies whose first rounds stay inside hosts: priced by their
   * rounds on each level instead of beta x T for all. */
  static const redcoll_algo butterflies[] = {REDCOLL_ALGO_RECURSIVE_DOUBLING,
                                             REDCOLL_ALGO_HALVING_DOUBLING};
  for (size_t i = 0; i < sizeof butterflies / sizeof butterflies[0]; i++) {
    const redcoll__algo_entry *e = redcoll__algo_find(call->coll, butterflies[i]);
    if (e == NULL || (e->flags & exclude)) continue;
    double t = butterfly_on_hosts(call, butterflies[i]);
    if (t >= 0 && t < flat * (1 - 1e-9)) {
      best = butterflies[i];
      flat = t;
    }
  }
  return redcoll__two_level_wins(call, flat) ? REDCOLL_ALGO_TWO_LEVEL : best;
}

/* ---- the phases of a two-level algorithm ----------------------------------- */

static int phase_run(const redcoll__call *sub) {
  const redcoll__algo_entry *e = redcoll__algo_find(sub->coll, redcoll__select(sub));
  return e != NULL ? e->run(sub) : REDCOLL_ENOTSUP;
}

static double phase_cost(const redcoll__call *call, redcoll_coll coll, int p, size_t count,
                         double a, double b) {
  const redcoll_comm *c = call->comm;
  redcoll__cost_args args = {coll,         p, count, call->esize, c->threshold, 0,
                             c->ranks_per_cpu, redcoll__root_segment(c)};
  redcoll__cost_model cm = {a, b, c->cost_gamma};
  double t;
  redcoll__cost_select(&args, redcoll__excluded_flags(call), &cm, &t);
  return isfinite(t) ? t : -1;
}

const redcoll__phase_ops redcoll__phases = {phase_run, phase_cost};

/* Integer dtypes with built-in operators are exact in every order. */
static int order_changes_bits(const redcoll__call *call) {
  if (call->op == NULL) return 0;
  if (call->op->id == REDCOLL__OP_USER) return 1;
  return call->dtype == REDCOLL_FLOAT16 || call->dtype == REDCOLL_BFLOAT16 ||
         call->dtype == REDCOLL_FLOAT32 || call->dtype == REDCOLL_FLOAT64;
}

unsigned redcoll__excluded_flags(const redcoll__call *call) {
  unsigned x = 0;
  if (call->op != NULL && !call->op->commutative) x |= REDCOLL__NEEDS_COMMUTATIVE;
  if (call->comm->results == REDCOLL_RESULTS_IDENTICAL && order_changes_bits(call))
    x |= REDCOLL__RANK_DEPENDENT;
  return x;
}

/* REDCOLL_CHOOSE_* flags of the public redcoll_cost_choose as registry
 * flags to exclude. */
static unsigned exclude_of(int op_flags) {
  unsigned x = 0;
  if (!(op_flags & REDCOLL_CHOOSE_COMMUTATIVE)) x |= REDCOLL__NEEDS_COMMUTATIVE;
  if (!(op_flags & REDCOLL_CHOOSE_RANK_DEPENDENT)) x |= REDCOLL__RANK_DEPENDENT;
  return x;
}

REDCOLL_API int redcoll_cost_predict(redcoll_coll coll, redcoll_algo algo, int p, size_t count,
                                     size_t elem_size, size_t threshold, double alpha, double beta,
                                     double gamma, double *time) {
  if ((unsigned)coll >= REDCOLL_COLL_COUNT || (unsigned)algo >= REDCOLL_ALGO_COUNT || p < 1 ||
      elem_size == 0 || threshold == 0 || time == NULL || !redcoll__cost_valid(alpha) ||
      !redcoll__cost_valid(beta) || !redcoll__cost_valid(gamma))
    return REDCOLL_EINVAL;
  redcoll__cost_args a = {coll, p, count, elem_size, threshold, 0, 1, 0};
  redcoll__cost_model cm = {alpha, beta, gamma};
  double t = redcoll__cost(algo, &a, &cm);
  if (t < 0) return REDCOLL_ENOTSUP;
  *time = t;
  return REDCOLL_OK;
}

REDCOLL_API redcoll_algo redcoll_cost_choose(redcoll_coll coll, int p, size_t count,
                                             size_t elem_size, size_t threshold, int op_flags,
                                             double alpha, double beta, double gamma) {
  if ((unsigned)coll >= REDCOLL_COLL_COUNT || p < 1 || elem_size == 0 || threshold == 0)
    return REDCOLL_ALGO_AUTO;
  redcoll__cost_args a = {coll, p, count, elem_size, threshold, 0, 1, 0};
  redcoll__cost_model cm = {alpha, beta, gamma};
  return redcoll__cost_select(&a, exclude_of(op_flags), &cm, NULL);
}
