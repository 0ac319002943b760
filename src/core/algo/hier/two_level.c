/*
 * Two-level collectives ("two_level") for communicators whose transport
 * says which ranks share a host (redcoll_transport_info.hosts): the hier
 * world of hosts x threads, TCP with ranks that share hosts, a threads or
 * simulator world told to pretend hosts.  Each phase is a flat collective
 * on a view of the communicator: `intra` holds this rank's host (its ranks
 * in rank order), `inter` holds the rank of the same local index on every
 * host (in host order).  The views borrow the communicator's transport,
 * channel, tag and fiber, so a two-level collective is one collective to
 * the transport and runs nonblocking like any other.
 *
 * allreduce, m bytes, H hosts of at most T ranks, S slices (S = 1, or the
 * fewest ranks on a host when the model says that is faster):
 *   S = 1: reduce to each host's first rank, allreduce among those, bcast
 *          in each host.
 *   S > 1: reduce-scatter in each host into S slices (local rank l < S
 *          holds its host's sum of slice l), allreduce of slice l among the
 *          local-l ranks of all hosts (S allreduces at once: every core and
 *          the host's link work together), allgatherv in each host.
 *   Bytes over a host's link with a bandwidth-optimal inter-host
 *   allreduce: 2 (H-1)/H m, against up to T times that for a flat
 *   algorithm whose T ranks per host all talk across hosts at once.
 *   Rounds: those of the two intra-host phases (2 ceil(lg T) with tree or
 *   halving algorithms) plus the inter-host allreduce's.
 * reduce (root r): the same first two phases with a reduce to r's host in
 *   the middle, then a gatherv of the slices to r (S > 1), or one message
 *   from r's host's first rank to r (S = 1, when r is not that rank).
 * bcast: r hands the vector to its host's first rank, bcast among the
 *   hosts' first ranks, bcast in each host.
 * barrier: barrier in each host, among the hosts' first ranks, in each
 *   host again.
 * allgather, reduce_scatter_block, reduce_scatter: gather (or reduce) to
 *   each host's first rank, allgatherv (or reduce-scatter) of whole hosts'
 *   parts among the first ranks, bcast (or scatterv) in each host.
 * Each phase's algorithm is AUTO's flat choice on its view, under the
 * intra-host model (a tuning file's local alpha and beta, else
 * info.local_alpha and local_beta, else a tenth of the network's; with
 * ranks sharing CPUs a round inside a host also waits for
 * the other ranks of its CPU, intra_alpha) or the network's.  AUTO takes
 * two_level when the sum of its
 * phases' predicted times (the inter-host phase's beta times S, the slices
 * sharing the link) is below the best flat algorithm's, predicted with beta
 * times T (redcoll__two_level_link_share), or for recursive doubling and
 * halving-doubling on hosts where their first rounds stay inside a host by
 * their rounds on each level (select.c); a tie stays flat.
 *
 * Restrictions: with hosts whose ranks are consecutive ranks (host-major,
 * as the hier world and TCP's host-ordered ranks are), operands stay in
 * rank order: each host's partial is v_a + ... + v_b of its ranks, combined
 * in host order, and every rank gets the same bits (one rank computes each
 * element's result; the others receive copies).  With hosts whose ranks
 * interleave, a reduction needs a commutative operator, and allgather and
 * the reduce-scatters are not supported (REDCOLL_ENOTSUP, the same on
 * every rank; AUTO never picks it there).  Without hosts (every rank its
 * own host) it runs the flat choice on the whole communicator.  Scratch:
 * one slice (allreduce, reduce with S > 1), the vector (reduce, S = 1, on
 * the first rank of a host other than the root's), or the vector and the
 * host's part (reduce-scatter, on each host's first rank), in scratch 1.
 *
 * Example: allreduce of 4 doubles on 2 hosts x 2 ranks (ranks 0, 1 on host
 * 0; 2, 3 on host 1), S = 2.  Phase 1: ranks 0 and 1 reduce-scatter, rank 0
 * holds (v0+v1)[0..1], rank 1 (v0+v1)[2..3]; ranks 2 and 3 likewise for
 * v2+v3.  Phase 2: ranks 0 and 2 allreduce elements 0..1, ranks 1 and 3
 * elements 2..3, at once: (v0+v1)+(v2+v3).  Phase 3: each host allgathers
 * its two halves.  Four messages of 2 elements cross between the hosts.
 */
#include <math.h>
#include <stdlib.h>

#include "internal.h"
#include "select/cost.h" /* the cost model the views carry */

typedef struct redcoll__hier {
  redcoll__topo topo;
  redcoll_comm *intra; /* this rank's host */
  redcoll_comm *inter; /* local index my_local of every host; NULL when some
                        * host has no rank of that index */
  size_t *cnt, *dsp;   /* max(p, H) entries each: the phases' counts */
} redcoll__hier;

/* ---- the hosts and the views --------------------------------------------- */

static void view_free(redcoll_comm *v) {
  if (v == NULL) return;
  free(v->map);
  free(v->scratch[0]);
  free(v->scratch[1]);
  free(v);
}

void redcoll__hier_free(redcoll_comm *c) {
  redcoll__hier *h = c->hier;
  if (h == NULL) return;
  view_free(h->intra);
  view_free(h->inter);
  redcoll__topo_free(&h->topo);
  free(h->cnt);
  free(h->dsp);
  free(h);
  c->hier = NULL;
}

/* A view of the ranks `ranks[0 .. n)` of c (in that order), this rank
 * being ranks[me]: c's transport and channel, one level (no hosts), no
 * calibration; its cost model and settings (the segment too) are c's,
 * refreshed at every call (refresh). */
static int make_view(redcoll_comm *c, const int *ranks, int n, int me, redcoll_comm **out) {
  redcoll_comm *v = calloc(1, sizeof *v);
  int *map = malloc((size_t)n * sizeof *map);
  if (v == NULL || map == NULL) {
    free(v);
    free(map);
    return REDCOLL_ENOMEM;
  }
  for (int i = 0; i < n; i++) map[i] = redcoll__peer(c, ranks[i]);
  v->ep = c->ep;
  v->ops = c->ops;
  v->impl = c->impl;
  v->map = map;
  v->rank = me;
  v->size = n;
  v->channel = c->channel;
  v->owns_channels = c->owns_channels;
  v->parent = c;
  v->info = c->info;
  v->info.hosts = NULL;
  v->last_algo = REDCOLL_ALGO_AUTO;
  v->timeout_ms = c->timeout_ms;
  v->deadline_ns = UINT64_MAX;
  v->cost_state = 2;
  v->cal_state = 1;
  v->rpc_state = 2;
  *out = v;
  return REDCOLL_OK;
}

static int hier_build(redcoll_comm *c, redcoll__hier *h) {
  redcoll__topo *t = &h->topo;
  int rc = redcoll__topo_build(c->info.hosts, c->map, c->size, c->rank, t);
  if (rc != REDCOLL_OK) return rc;
  size_t n = (size_t)(c->size > t->hosts ? c->size : t->hosts) + 1;
  h->cnt = malloc(n * sizeof *h->cnt);
  h->dsp = malloc(n * sizeof *h->dsp);
  if (h->cnt == NULL || h->dsp == NULL) return REDCOLL_ENOMEM;
  int s = t->start[t->my_host];
  rc = make_view(c, t->members + s, t->start[t->my_host + 1] - s, t->my_local, &h->intra);
  if (rc != REDCOLL_OK || t->my_local >= t->min_local) return rc;
  int *ranks = malloc((size_t)t->hosts * sizeof *ranks);
  if (ranks == NULL) return REDCOLL_ENOMEM;
  for (int k = 0; k < t->hosts; k++) ranks[k] = t->members[t->start[k] + t->my_local];
  rc = make_view(c, ranks, t->hosts, t->my_host, &h->inter);
  free(ranks);
  return rc;
}

const redcoll__topo *redcoll__hier_topo(redcoll_comm *c) {
  if (c->hier != NULL) return &c->hier->topo;
  redcoll__hier *h = calloc(1, sizeof *h);
  if (h == NULL) return NULL;
  c->hier = h;
  if (hier_build(c, h) != REDCOLL_OK) {
    redcoll__hier_free(c);
    return NULL;
  }
  return &h->topo;
}

/* The alpha of a phase inside a host, before the phase's cost scales it
 * by the ranks per CPU f (as every round's, select.c).  With f > 1 a
 * round waits for the f - 1 other ranks of its CPU to take their turns,
 * and a turn is a wake-up through the kernel whatever path the message
 * takes: it costs the communicator's alpha, as in a flat round (alpha f =
 * alpha + (f - 1) alpha), not local_alpha, the latency between ranks that
 * each have a CPU.  So a round inside a host costs local_alpha + (f - 1)
 * max(alpha, local_alpha); f <= 1 leaves local_alpha. */
static double intra_alpha(const redcoll_comm *c) {
  double la = redcoll__local_alpha(c), f = c->ranks_per_cpu;
  if (!(f > 1)) return la;
  double turn = c->cost_alpha > la ? c->cost_alpha : la;
  return (la + (f - 1) * turn) / f;
}

/* Two levels are there: hosts known, more than one, one with two ranks. */
static const redcoll__topo *two_levels(redcoll_comm *c) {
  if (c->parent != NULL || c->info.hosts == NULL) return NULL;
  const redcoll__topo *t = redcoll__hier_topo(c);
  return t != NULL && t->hosts > 1 && t->max_local > 1 ? t : NULL;
}

double redcoll__two_level_link_share(redcoll_comm *c) {
  const redcoll__topo *t = two_levels(c);
  return t != NULL ? t->max_local : 1;
}

/* ---- the cost ------------------------------------------------------------ */

/* The best flat algorithm's predicted time for one phase; a crude linear
 * estimate where nothing is modelled. */
static double phase(const redcoll__call *call, redcoll_coll coll, int p, size_t count, double a,
                    double b) {
  if (p <= 1 || count == 0) return 0;
  double t = call->phases->cost(call, coll, p, count, a, b);
  if (t >= 0) return t;
  return (p - 1) * a + (double)count * (double)call->esize * b;
}

/* The predicted time of the two-level algorithm with s slices. */
static double cost_two(const redcoll__call *call, const redcoll__topo *t, int s) {
  const redcoll_comm *c = call->comm;
  double la = intra_alpha(c), lb = redcoll__local_beta(c), a = c->cost_alpha, b = c->cost_beta;
  int T = t->max_local, H = t->hosts;
  size_t m = call->count, per = call->counts != NULL ? 0 : m;
  if (call->counts != NULL)
    for (int i = 0; i < c->size; i++)
      if (call->counts[i] > per) per = call->counts[i];
  switch (call->coll) {
  case REDCOLL_COLL_ALLREDUCE:
  case REDCOLL_COLL_REDUCE: {
    redcoll_coll mid = call->coll;
    if (s == 1)
      return phase(call, REDCOLL_COLL_REDUCE, T, m, la, lb) + phase(call, mid, H, m, a, b) +
             phase(call, REDCOLL_COLL_BCAST, T, m, la, lb);
    size_t sl = redcoll__block_start(m, (size_t)s, 1); /* the largest slice */
    return phase(call, REDCOLL_COLL_REDUCE_SCATTER, T, sl, la, lb) +
           phase(call, mid, H, sl, a, b * s) + phase(call, REDCOLL_COLL_ALLGATHERV, T, sl, la, lb);
  }
  case REDCOLL_COLL_BCAST:
    return phase(call, REDCOLL_COLL_BCAST, H, m, a, b) +
           phase(call, REDCOLL_COLL_BCAST, T, m, la, lb);
  case REDCOLL_COLL_BARRIER:
    return 2 * phase(call, REDCOLL_COLL_BARRIER, T, 1, la, lb) +
           phase(call, REDCOLL_COLL_BARRIER, H, 1, a, b);
  case REDCOLL_COLL_ALLGATHER:
    return phase(call, REDCOLL_COLL_GATHER, T, m, la, lb) +
           phase(call, REDCOLL_COLL_ALLGATHERV, H, m * (size_t)T, a, b) +
           phase(call, REDCOLL_COLL_BCAST, T, m * (size_t)c->size, la, lb);
  case REDCOLL_COLL_REDUCE_SCATTER_BLOCK:
  case REDCOLL_COLL_REDUCE_SCATTER: {
    size_t all = call->counts != NULL ? m : m * (size_t)c->size;
    return phase(call, REDCOLL_COLL_REDUCE, T, all, la, lb) +
           phase(call, REDCOLL_COLL_REDUCE_SCATTER, H, per * (size_t)T, a, b) +
           phase(call, REDCOLL_COLL_SCATTERV, T, per, la, lb);
  }
  default:
    return HUGE_VAL;
  }
}

/* The slices of an allreduce or reduce: 1, or the fewest ranks on a host
 * when that is predicted faster (and the vector has that many elements);
 * *cost (if not NULL) gets the predicted time with them. */
int redcoll__two_level_slices_forced;

static int slices(const redcoll__call *call, const redcoll__topo *t, double *cost) {
  int s = t->min_local;
  int sliceable = s > 1 && call->count >= (size_t)s &&
                  (call->coll == REDCOLL_COLL_ALLREDUCE || call->coll == REDCOLL_COLL_REDUCE);
  if (!sliceable || redcoll__two_level_slices_forced != 0) {
    if (!sliceable || redcoll__two_level_slices_forced == 1) s = 1;
    if (cost != NULL) *cost = cost_two(call, t, s);
    return s;
  }
  double one = cost_two(call, t, 1), many = cost_two(call, t, s);
  int more = many < one * (1 - 1e-9);
  if (cost != NULL) *cost = more ? many : one;
  return more ? s : 1;
}

/* Whether the two-level algorithm takes this call on these hosts. */
static int admissible(const redcoll__call *call, const redcoll__topo *t) {
  if (t->contiguous) return 1;
  switch (call->coll) {
  case REDCOLL_COLL_ALLGATHER:
  case REDCOLL_COLL_REDUCE_SCATTER_BLOCK:
  case REDCOLL_COLL_REDUCE_SCATTER:
    return 0;
  default:
    return call->op == NULL || call->op->commutative;
  }
}

int redcoll__two_level_check(const redcoll__call *call) {
  const redcoll__topo *t = redcoll__hier_topo(call->comm);
  if (t == NULL) return REDCOLL_ENOMEM;
  return admissible(call, t) ? REDCOLL_OK : REDCOLL_ENOTSUP;
}

int redcoll__two_level_wins(const redcoll__call *call, double flat_time) {
  const redcoll__topo *t = two_levels(call->comm);
  if (t == NULL || !admissible(call, t)) return 0;
  double cost;
  slices(call, t, &cost);
  return cost < flat_time * (1 - 1e-9);
}

/* ---- the intra-host model, for AUTO's flat prices ------------------------- */

void redcoll__two_level_intra_model(const redcoll_comm *c, double *alpha, double *beta) {
  *alpha = intra_alpha(c);
  *beta = redcoll__local_beta(c);
}

/* ---- running the phases -------------------------------------------------- */

/* The views' settings from c's, now: the models may have been calibrated
 * or set since they were made. */
static void refresh(redcoll_comm *c, redcoll_comm *v, double a, double b) {
  if (v == NULL) return;
  v->cost_alpha = a;
  v->cost_beta = b;
  v->cost_gamma = c->cost_gamma;
  v->threshold = c->threshold;
  v->segment = c->segment;
  v->segment_set = c->segment_set;
  v->results = c->results;
  v->ranks_per_cpu = c->ranks_per_cpu;
}

static int prepare(const redcoll__call *call, redcoll__hier **out) {
  redcoll_comm *c = call->comm;
  redcoll__cost_resolve(c);
  redcoll__rpc_resolve(c);
  const redcoll__topo *t = redcoll__hier_topo(c);
  if (t == NULL) return REDCOLL_ENOMEM;
  if (!admissible(call, t)) return REDCOLL_ENOTSUP;
  redcoll__hier *h = c->hier;
  refresh(c, h->intra, intra_alpha(c), redcoll__local_beta(c));
  refresh(c, h->inter, c->cost_alpha, c->cost_beta);
  *out = h;
  return REDCOLL_OK;
}

/* Phase `phase` (1 .. 15) of c's running collective on view v: v's tag is
 * c's with the phase in its low 4 bits, so that the number and the call
 * stay those of c's (a transport tells disagreeing ranks from phases of
 * one collective: redcoll_transport_tags_conflict). */
static void enter_phase(redcoll_comm *v, const redcoll__call *sc, unsigned phase) {
  redcoll_comm *c = v->parent;
  v->nb = c->nb;
  v->seq = c->seq;
  v->tag = (c->tag & ~(uint64_t)15) | (phase & 15);
  v->deadline_ns = c->deadline_ns;
  v->error = REDCOLL_OK;
  v->cur = sc;
}

/* What a view of one rank does: its own block where the output wants it. */
static int one(const redcoll__call *sc) {
  size_t es = sc->esize, n = sc->counts != NULL ? sc->counts[0] : sc->count;
  if (sc->in_place || sc->recvbuf == NULL || sc->sendbuf == NULL || n == 0) return REDCOLL_OK;
  const char *from = sc->sendbuf;
  char *to = sc->recvbuf;
  if (sc->coll == REDCOLL_COLL_SCATTERV) from += sc->displs[0] * es;
  if (sc->coll == REDCOLL_COLL_GATHERV) to += sc->displs[0] * es;
  if (from != to) memmove(to, from, n * es);
  return REDCOLL_OK;
}

/* The buffers of one phase's flat collective (as in redcoll__call). */
typedef struct phase_args {
  const void *send;
  void *recv;
  size_t count; /* the vector, or the total of counts */
  const size_t *counts, *displs;
  int root, in_place;
} phase_args;

/* Phase `phase` of call: collective coll on view v with AUTO's flat choice
 * there; nothing for an empty vector, a copy on a view of one rank. */
static int step(const redcoll__call *call, redcoll_comm *v, redcoll_coll coll, unsigned phase,
                phase_args a) {
  redcoll__call sc;
  memset(&sc, 0, sizeof sc);
  sc.comm = v;
  sc.coll = coll;
  sc.dtype = call->dtype;
  sc.op = call->op;
  sc.esize = call->esize;
  sc.phases = call->phases;
  sc.sendbuf = a.send;
  sc.recvbuf = a.recv;
  sc.count = a.count;
  sc.counts = a.counts;
  sc.displs = a.displs;
  sc.root = a.root;
  sc.in_place = a.in_place;
  if (coll != REDCOLL_COLL_BARRIER && a.count == 0) return REDCOLL_OK;
  if (v->size == 1) return coll == REDCOLL_COLL_BARRIER ? REDCOLL_OK : one(&sc);
  enter_phase(v, &sc, phase);
  int rc = call->phases->run(&sc);
  v->cur = NULL;
  return rc;
}

/* One message inside the host, from local rank `from` to local rank `to`,
 * as phase `phase`. */
static int hand_over(redcoll__hier *h, const redcoll__call *call, unsigned phase, int from, int to,
                     void *buf, size_t bytes) {
  redcoll_comm *v = h->intra;
  if (from == to || (v->rank != from && v->rank != to)) return REDCOLL_OK;
  enter_phase(v, call, phase);
  int rc = v->rank == from ? redcoll__send(v, to, buf, bytes) : redcoll__recv(v, from, buf, bytes);
  v->cur = NULL;
  return rc;
}

/* Slice l of s over m elements: counts and starts, for the ranks of this
 * rank's host (local index >= s: nothing). */
static void slice_counts(redcoll__hier *h, size_t m, int s) {
  for (int l = 0; l < h->intra->size; l++) {
    h->cnt[l] = l < s ? redcoll__block_start(m, (size_t)s, (size_t)l + 1) -
                            redcoll__block_start(m, (size_t)s, (size_t)l)
                      : 0;
    h->dsp[l] = l < s ? redcoll__block_start(m, (size_t)s, (size_t)l) : 0;
  }
}

/* Phase 1 of a reduction in s slices: the counts and starts of the
 * slices (slice_counts), and this host's partial of slice my_local in
 * *tmp (scratch 1). */
static int host_slices(const redcoll__call *call, redcoll__hier *h, int s, void **tmp) {
  size_t m = call->count;
  slice_counts(h, m, s);
  /* the first slice is the largest */
  if ((*tmp = redcoll__scratch(call->comm, 1, redcoll__block_start(m, (size_t)s, 1) * call->esize)) ==
      NULL)
    return REDCOLL_ENOMEM;
  return step(call, h->intra, REDCOLL_COLL_REDUCE_SCATTER, 1,
              (phase_args){.send = call->sendbuf, .recv = *tmp, .count = m, .counts = h->cnt});
}

static int tl_allreduce(const redcoll__call *call) {
  redcoll__hier *h;
  int rc = prepare(call, &h);
  if (rc != REDCOLL_OK) return rc;
  const redcoll__topo *t = &h->topo;
  int s = slices(call, t, NULL), lead = t->my_local == 0;
  size_t m = call->count;
  void *out = call->recvbuf, *tmp;
  if (s == 1) {
    rc = step(call, h->intra, REDCOLL_COLL_REDUCE, 1,
              (phase_args){.send = call->sendbuf, .recv = lead ? out : NULL, .count = m,
                           .in_place = lead && call->in_place});
    if (rc == REDCOLL_OK && lead)
      rc = step(call, h->inter, REDCOLL_COLL_ALLREDUCE, 2,
                (phase_args){.send = out, .recv = out, .count = m, .in_place = 1});
    if (rc != REDCOLL_OK) return rc;
    return step(call, h->intra, REDCOLL_COLL_BCAST, 3,
                (phase_args){.send = out, .recv = out, .count = m, .in_place = 1});
  }
  if ((rc = host_slices(call, h, s, &tmp)) != REDCOLL_OK) return rc;
  if (t->my_local < s &&
      (rc = step(call, h->inter, REDCOLL_COLL_ALLREDUCE, 2,
                 (phase_args){.send = tmp, .recv = tmp, .count = h->cnt[t->my_local],
                              .in_place = 1})) != REDCOLL_OK)
    return rc;
  return step(call, h->intra, REDCOLL_COLL_ALLGATHERV, 3,
              (phase_args){.send = tmp, .recv = out, .count = m, .counts = h->cnt});
}

static int tl_reduce(const redcoll__call *call) {
  redcoll__hier *h;
  int rc = prepare(call, &h);
  if (rc != REDCOLL_OK) return rc;
  const redcoll__topo *t = &h->topo;
  redcoll_comm *c = call->comm;
  int s = slices(call, t, NULL), lead = t->my_local == 0, root = c->rank == call->root;
  int hr = t->host_of[call->root], lr = t->local_of[call->root], home = t->my_host == hr;
  size_t m = call->count, es = call->esize;
  void *tmp = NULL;
  if (s == 1) {
    /* a host's first rank reduces into the root's buffer or scratch */
    if (lead && (tmp = root ? call->recvbuf : redcoll__scratch(c, 1, m * es)) == NULL)
      return REDCOLL_ENOMEM;
    rc = step(call, h->intra, REDCOLL_COLL_REDUCE, 1,
              (phase_args){.send = call->sendbuf, .recv = tmp, .count = m,
                           .in_place = tmp == call->sendbuf});
    if (rc == REDCOLL_OK && lead)
      rc = step(call, h->inter, REDCOLL_COLL_REDUCE, 2,
                (phase_args){.send = tmp, .recv = home ? tmp : NULL, .count = m, .root = hr,
                             .in_place = home});
    if (rc != REDCOLL_OK || !home) return rc;
    return hand_over(h, call, 3, 0, lr, lead ? tmp : call->recvbuf, m * es);
  }
  if ((rc = host_slices(call, h, s, &tmp)) != REDCOLL_OK) return rc;
  if (t->my_local < s &&
      (rc = step(call, h->inter, REDCOLL_COLL_REDUCE, 2,
                 (phase_args){.send = tmp, .recv = home ? tmp : NULL,
                              .count = h->cnt[t->my_local], .root = hr, .in_place = home})) !=
          REDCOLL_OK)
    return rc;
  if (!home) return REDCOLL_OK;
  return step(call, h->intra, REDCOLL_COLL_GATHERV, 3,
              (phase_args){.send = tmp, .recv = root ? call->recvbuf : NULL, .count = m,
                           .counts = h->cnt, .displs = root ? h->dsp : NULL, .root = lr});
}

static int tl_bcast(const redcoll__call *call) {
  redcoll__hier *h;
  int rc = prepare(call, &h);
  if (rc != REDCOLL_OK) return rc;
  const redcoll__topo *t = &h->topo;
  int hr = t->host_of[call->root], lr = t->local_of[call->root];
  void *buf = call->recvbuf;
  size_t m = call->count;
  if (t->my_host == hr && (rc = hand_over(h, call, 1, lr, 0, buf, m * call->esize)) != REDCOLL_OK)
    return rc;
  if (t->my_local == 0 &&
      (rc = step(call, h->inter, REDCOLL_COLL_BCAST, 2,
                 (phase_args){.send = buf, .recv = buf, .count = m, .root = hr,
                              .in_place = 1})) != REDCOLL_OK)
    return rc;
  return step(call, h->intra, REDCOLL_COLL_BCAST, 3,
              (phase_args){.send = buf, .recv = buf, .count = m, .in_place = 1});
}

static int tl_barrier(const redcoll__call *call) {
  redcoll__hier *h;
  int rc = prepare(call, &h);
  if (rc == REDCOLL_OK) rc = step(call, h->intra, REDCOLL_COLL_BARRIER, 1, (phase_args){0});
  if (rc == REDCOLL_OK && h->topo.my_local == 0)
    rc = step(call, h->inter, REDCOLL_COLL_BARRIER, 2, (phase_args){0});
  return rc == REDCOLL_OK ? step(call, h->intra, REDCOLL_COLL_BARRIER, 3, (phase_args){0}) : rc;
}

static int tl_allgather(const redcoll__call *call) {
  redcoll__hier *h;
  int rc = prepare(call, &h);
  if (rc != REDCOLL_OK) return rc;
  const redcoll__topo *t = &h->topo;
  int lead = t->my_local == 0;
  size_t n = call->count, all = (size_t)call->comm->size * n;
  char *out = call->recvbuf;
  char *mine = out + (size_t)t->members[t->start[t->my_host]] * n * call->esize; /* the host's */
  rc = step(call, h->intra, REDCOLL_COLL_GATHER, 1,
            (phase_args){.send = call->sendbuf, .recv = lead ? mine : NULL, .count = n,
                         .in_place = lead && call->in_place});
  if (rc == REDCOLL_OK && lead) {
    for (int k = 0; k < t->hosts; k++) h->cnt[k] = (size_t)(t->start[k + 1] - t->start[k]) * n;
    rc = step(call, h->inter, REDCOLL_COLL_ALLGATHERV, 2,
              (phase_args){.send = mine, .recv = out, .count = all, .counts = h->cnt,
                           .in_place = 1});
  }
  if (rc != REDCOLL_OK) return rc;
  return step(call, h->intra, REDCOLL_COLL_BCAST, 3,
              (phase_args){.send = out, .recv = out, .count = all, .in_place = 1});
}

/* reduce_scatter_block and reduce_scatter: rank r's block has count (the
 * same for all) or counts[r] elements. */
static size_t count_of(const redcoll__call *call, int r) {
  return call->counts != NULL ? call->counts[r] : call->count;
}

static int tl_reduce_scatter(const redcoll__call *call) {
  redcoll__hier *h;
  int rc = prepare(call, &h);
  if (rc != REDCOLL_OK) return rc;
  const redcoll__topo *t = &h->topo;
  redcoll_comm *c = call->comm;
  int lead = t->my_local == 0;
  size_t es = call->esize, all = 0, part = 0;
  for (int r = 0; r < c->size; r++) all += count_of(call, r);
  for (int i = t->start[t->my_host]; i < t->start[t->my_host + 1]; i++)
    part += count_of(call, t->members[i]);
  /* on a host's first rank: the host's sum, then its part of the whole */
  char *tmp = NULL;
  if (lead && (tmp = redcoll__scratch(c, 1, (all + part) * es)) == NULL) return REDCOLL_ENOMEM;
  char *host_part = lead ? tmp + all * es : NULL;
  rc = step(call, h->intra, REDCOLL_COLL_REDUCE, 1,
            (phase_args){.send = call->sendbuf, .recv = tmp, .count = all});
  if (rc == REDCOLL_OK && lead) {
    for (int k = 0; k < t->hosts; k++) {
      h->cnt[k] = 0;
      for (int i = t->start[k]; i < t->start[k + 1]; i++)
        h->cnt[k] += count_of(call, t->members[i]);
    }
    rc = step(call, h->inter, REDCOLL_COLL_REDUCE_SCATTER, 2,
              (phase_args){.send = tmp, .recv = host_part, .count = all, .counts = h->cnt});
  }
  if (rc != REDCOLL_OK) return rc;
  size_t at = 0;
  for (int l = 0; l < h->intra->size; l++) {
    h->cnt[l] = count_of(call, t->members[t->start[t->my_host] + l]);
    h->dsp[l] = at;
    at += h->cnt[l];
  }
  return step(call, h->intra, REDCOLL_COLL_SCATTERV, 3,
              (phase_args){.send = host_part, .recv = call->recvbuf, .count = part,
                           .counts = h->cnt, .displs = lead ? h->dsp : NULL});
}

const redcoll__algo_entry redcoll__algos_two_level[] = {
    {REDCOLL_COLL_ALLREDUCE, REDCOLL_ALGO_TWO_LEVEL, tl_allreduce, NULL, 0},
    {REDCOLL_COLL_REDUCE, REDCOLL_ALGO_TWO_LEVEL, tl_reduce, NULL, 0},
    {REDCOLL_COLL_BCAST, REDCOLL_ALGO_TWO_LEVEL, tl_bcast, NULL, 0},
    {REDCOLL_COLL_BARRIER, REDCOLL_ALGO_TWO_LEVEL, tl_barrier, NULL, 0},
    {REDCOLL_COLL_ALLGATHER, REDCOLL_ALGO_TWO_LEVEL, tl_allgather, NULL, 0},
    {REDCOLL_COLL_REDUCE_SCATTER_BLOCK, REDCOLL_ALGO_TWO_LEVEL, tl_reduce_scatter, NULL, 0},
    {REDCOLL_COLL_REDUCE_SCATTER, REDCOLL_ALGO_TWO_LEVEL, tl_reduce_scatter, NULL, 0},
    {REDCOLL_COLL_COUNT, REDCOLL_ALGO_AUTO, NULL, NULL, 0},
};
