/*
 * Automatic algorithm selection (REDCOLL_ALGO_AUTO) and the cost model it
 * uses: per-transport defaults, REDCOLL_COST_MODEL, tuning files
 * (REDCOLL_TUNING_FILE, redcoll_comm_load_tuning) and the setters.
 *
 * AUTO predicts the time of every registered algorithm of the collective
 * that accepts the operator (cost.c) and runs the cheapest.  The prediction
 * depends only on p, the count, the element size, the root, the operator's
 * commutativity, the threshold, the cost model and the ranks per CPU:
 * values every rank shares (the cost model, the threshold and the ranks
 * per CPU must be set alike on every rank), so every rank picks the same
 * algorithm.  docs/tuning.md.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "select/cost.h"

/* ---- defaults ---------------------------------------------------------- */

redcoll__cost_model redcoll__cost_default(const char *transport) {
  /* The simulator's own default (alpha 1, beta = gamma = 0): the mock's
   * runner sets its actual configuration. */
  if (transport != NULL && strcmp(transport, "mock") == 0) return (redcoll__cost_model){1, 0, 0};
  /* Ranks as threads: a hand-over through shared memory costs about a
   * microsecond, the single copy runs at memory bandwidth. */
  if (transport != NULL && strcmp(transport, "threads") == 0)
    return (redcoll__cost_model){2e-6, 1e-10, 2.5e-10};
  /* TCP between processes through libuv (loopback or a LAN). */
  if (transport != NULL && strcmp(transport, "tcp") == 0)
    return (redcoll__cost_model){3e-5, 1e-9, 2.5e-10};
  /* A commodity cluster: 10 us latency, about 1 GB/s per link, a
   * reduction at 4 GB/s. */
  return (redcoll__cost_model){1e-5, 1e-9, 2.5e-10};
}

static int valid(double v) { return isfinite(v) && v >= 0; }

/* n numbers >= 0, separated by commas or blanks, and nothing else. */
static int parse_numbers(const char *s, double *v, int n) {
  char *end;
  for (int i = 0; i < n; i++) {
    while (*s == ' ' || *s == '\t' || (i > 0 && *s == ',')) s++;
    errno = 0;
    v[i] = strtod(s, &end);
    if (end == s || errno != 0 || !valid(v[i])) return REDCOLL_EINVAL;
    s = end;
  }
  while (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r') s++;
  return *s == '\0' ? REDCOLL_OK : REDCOLL_EINVAL;
}

/* "alpha,beta,gamma". */
static int parse_triple(const char *s, redcoll__cost_model *cm) {
  double v[3];
  if (parse_numbers(s, v, 3) != REDCOLL_OK) return REDCOLL_EINVAL;
  *cm = (redcoll__cost_model){v[0], v[1], v[2]};
  return REDCOLL_OK;
}

/* ---- tuning files ------------------------------------------------------ */

int redcoll__tuning_read(const char *path, const char *transport, redcoll__cost_model *cm,
                         size_t *threshold) {
  (void)threshold; /* reserved: the file format has no threshold yet */
  FILE *f = fopen(path, "r");
  if (f == NULL) {
    redcoll__log(0, "tuning file %s: %s", path, strerror(errno));
    return REDCOLL_EINVAL;
  }
  char line[512];
  int lineno = 0, rc = 1;
  redcoll__cost_model own, dflt;
  int have_own = 0, have_dflt = 0;
  while (fgets(line, sizeof line, f) != NULL) {
    lineno++;
    char *s = line, *hash = strchr(line, '#');
    if (hash != NULL) *hash = '\0'; /* comments run to the end of the line */
    while (*s == ' ' || *s == '\t') s++;
    if (*s == '#' || *s == '\n' || *s == '\r' || *s == '\0') continue;
    char name[16]; /* a transport name has at most 15 characters */
    size_t n = 0;
    while (*s != '\0' && *s != ' ' && *s != '\t' && *s != '\n' && *s != '\r') {
      if (n + 1 == sizeof name) {
        redcoll__log(0, "tuning file %s:%d: transport name longer than %zu characters", path,
                     lineno, sizeof name - 1);
        fclose(f);
        return REDCOLL_EINVAL;
      }
      name[n++] = *s++;
    }
    name[n] = '\0';
    redcoll__cost_model v;
    if ((*s != ' ' && *s != '\t') || parse_triple(s, &v) != REDCOLL_OK) {
      redcoll__log(0, "tuning file %s:%d: expected `transport alpha beta gamma`", path, lineno);
      fclose(f);
      return REDCOLL_EINVAL;
    }
    if (transport != NULL && strcmp(name, transport) == 0) {
      own = v;
      have_own = 1;
    } else if (strcmp(name, "default") == 0) {
      dflt = v;
      have_dflt = 1;
    }
  }
  if (ferror(f)) {
    redcoll__log(0, "tuning file %s: read error", path);
    rc = REDCOLL_EINVAL;
  } else if (have_own) {
    *cm = own;
    rc = REDCOLL_OK;
  } else if (have_dflt) {
    *cm = dflt;
    rc = REDCOLL_OK;
  }
  fclose(f);
  return rc;
}

/* ---- the communicator's model ------------------------------------------ */

/* The transport's own default (a version 3 transport's info), else the
 * built-in one for its name. */
static redcoll__cost_model transport_default(const redcoll_comm *c, const char *tname) {
  const redcoll_transport_info *i = &c->info;
  if (i->alpha > 0 || i->beta > 0 || i->gamma > 0) return (redcoll__cost_model){i->alpha, i->beta, i->gamma};
  return redcoll__cost_default(tname);
}

int redcoll__cost_resolve(redcoll_comm *c) {
  if (c->cost_state != 0) return REDCOLL_OK;
  const char *tname = c->transport_name[0] ? c->transport_name : NULL;
  redcoll__cost_model cm = transport_default(c, tname);
  int rc = REDCOLL_OK;
  const char *env = getenv("REDCOLL_COST_MODEL");
  const char *file = getenv("REDCOLL_TUNING_FILE");
  if (env != NULL && *env != '\0') {
    if (parse_triple(env, &cm) != REDCOLL_OK) {
      redcoll__log(0, "REDCOLL_COST_MODEL=%s: expected alpha,beta,gamma (seconds, >= 0)", env);
      cm = transport_default(c, tname);
      rc = REDCOLL_EINVAL;
    }
  } else if (file != NULL && *file != '\0') {
    int r = redcoll__tuning_read(file, tname, &cm, NULL);
    if (r == 1) {
      redcoll__log(2, "tuning file %s: no entry for %s, defaults used", file,
                   tname ? tname : "this transport");
    } else if (r != REDCOLL_OK) {
      cm = transport_default(c, tname);
      rc = r;
    }
  }
  c->cost_alpha = cm.alpha;
  c->cost_beta = cm.beta;
  c->cost_gamma = cm.gamma;
  c->cost_state = 1;
  return rc;
}

REDCOLL_API int redcoll_comm_set_cost_model(redcoll_comm *c, double alpha, double beta, double gamma) {
  if (c == NULL || !valid(alpha) || !valid(beta) || !valid(gamma)) return REDCOLL_EINVAL;
  c->cost_alpha = alpha;
  c->cost_beta = beta;
  c->cost_gamma = gamma;
  c->cost_state = 2;
  return REDCOLL_OK;
}

REDCOLL_API int redcoll_comm_get_cost_model(redcoll_comm *c, double *alpha, double *beta,
                                            double *gamma) {
  if (c == NULL) return REDCOLL_EINVAL;
  int rc = redcoll__cost_resolve(c);
  if (alpha) *alpha = c->cost_alpha;
  if (beta) *beta = c->cost_beta;
  if (gamma) *gamma = c->cost_gamma;
  return rc;
}

REDCOLL_API int redcoll_comm_load_tuning(redcoll_comm *c, const char *path) {
  if (c == NULL || path == NULL) return REDCOLL_EINVAL;
  redcoll__cost_model cm;
  int rc = redcoll__tuning_read(path, c->transport_name[0] ? c->transport_name : NULL, &cm, NULL);
  if (rc == 1) {
    redcoll__log(0, "tuning file %s: no entry for %s and no default entry", path,
                 c->transport_name[0] ? c->transport_name : "this transport");
    return REDCOLL_EINVAL;
  }
  if (rc != REDCOLL_OK) return rc;
  return redcoll_comm_set_cost_model(c, cm.alpha, cm.beta, cm.gamma);
}

/* ---- ranks per CPU ---------------------------------------------------- */

static int rpc_resolve(redcoll_comm *c) {
  if (c->rpc_state != 0) return c->rpc_state == 1 ? c->rpc_status : REDCOLL_OK;
  const char *env = getenv("REDCOLL_RANKS_PER_CPU");
  int rc = REDCOLL_OK;
  c->ranks_per_cpu = c->rpc_detected;
  double v;
  if (env != NULL && *env != '\0') {
    if (parse_numbers(env, &v, 1) != REDCOLL_OK) {
      redcoll__log(0, "REDCOLL_RANKS_PER_CPU=%s: expected a number >= 0", env);
      rc = REDCOLL_EINVAL;
    } else {
      c->ranks_per_cpu = v;
    }
  }
  c->rpc_state = 1;
  c->rpc_status = rc;
  return rc;
}

void redcoll__comm_set_ranks_per_cpu_detected(redcoll_comm *c, double ranks_per_cpu) {
  c->rpc_detected = valid(ranks_per_cpu) ? ranks_per_cpu : 0;
  if (c->rpc_state == 1) c->rpc_state = 0; /* resolve again */
}

REDCOLL_API int redcoll_comm_set_ranks_per_cpu(redcoll_comm *c, double ranks_per_cpu) {
  if (c == NULL || !valid(ranks_per_cpu)) return REDCOLL_EINVAL;
  c->ranks_per_cpu = ranks_per_cpu;
  c->rpc_state = 2;
  return REDCOLL_OK;
}

REDCOLL_API int redcoll_comm_get_ranks_per_cpu(redcoll_comm *c, double *ranks_per_cpu) {
  if (c == NULL) return REDCOLL_EINVAL;
  int rc = rpc_resolve(c);
  if (ranks_per_cpu != NULL) *ranks_per_cpu = c->ranks_per_cpu;
  return rc;
}

REDCOLL_API int redcoll_comm_set_transport_name(redcoll_comm *c, const char *name) {
  if (c == NULL || name == NULL || strlen(name) >= sizeof c->transport_name) return REDCOLL_EINVAL;
  strcpy(c->transport_name, name);
  if (c->cost_state == 1) c->cost_state = 0; /* resolve again with the new name */
  return REDCOLL_OK;
}

/* ---- the cost of one algorithm ------------------------------------------ */

double redcoll__cost(redcoll_algo algo, const redcoll__cost_args *a, const redcoll__cost_model *cm) {
  /* f ranks per CPU: every round waits for them to take turns. */
  double f = a->ranks_per_cpu > 1 ? a->ranks_per_cpu : 1;
  const redcoll__mach M = {cm->alpha * f, cm->beta, cm->gamma};
  if (a->p <= 1) return 0;
  const redcoll__algo_entry *e = redcoll__algo_row(a->coll, algo);
  if (e == NULL || e->cost == NULL) return -1;
  return e->cost(&M, a);
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

/* ---- the choice -------------------------------------------------------- */

redcoll_algo redcoll__select(const redcoll__call *call) {
  redcoll_comm *c = call->comm;
  redcoll__cost_resolve(c); /* a malformed setting is logged; defaults then */
  rpc_resolve(c);
  redcoll__cost_model cm = {c->cost_alpha, c->cost_beta, c->cost_gamma};
  redcoll__cost_args a = {call->coll,   c->size,    call->count,      call->esize,
                          c->threshold, call->root, c->ranks_per_cpu};
  if (call->counts != NULL) {
    /* Irregular blocks: the largest one is on the critical path. */
    size_t mx = 0;
    for (int i = 0; i < c->size; i++)
      if (call->counts[i] > mx) mx = call->counts[i];
    a.count = mx;
  }
  return redcoll__cost_select(&a, redcoll__excluded_flags(call), &cm, NULL);
}

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
      elem_size == 0 || threshold == 0 || time == NULL || !valid(alpha) || !valid(beta) ||
      !valid(gamma))
    return REDCOLL_EINVAL;
  redcoll__cost_args a = {coll, p, count, elem_size, threshold, 0, 1};
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
  redcoll__cost_args a = {coll, p, count, elem_size, threshold, 0, 1};
  redcoll__cost_model cm = {alpha, beta, gamma};
  return redcoll__cost_select(&a, exclude_of(op_flags), &cm, NULL);
}
