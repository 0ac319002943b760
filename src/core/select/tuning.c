/*
 * The cost model AUTO chooses by (select.c), and the ranks per CPU it
 * scales alpha with: per-transport defaults, REDCOLL_COST_MODEL, tuning
 * files (REDCOLL_TUNING_FILE, redcoll_comm_load_tuning), REDCOLL_RANKS_PER_CPU
 * and the setters.  The format of tuning files: docs/tuning.md.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "env.h"
#include "select/cost.h"

/* ---- defaults ---------------------------------------------------------- */

redcoll__cost_model redcoll__cost_default(void) {
  /* A commodity cluster: 10 us latency, about 1 GB/s per link, a
   * reduction at 4 GB/s.  Transports propose their own (their info). */
  return (redcoll__cost_model){1e-5, 1e-9, 2.5e-10};
}

int redcoll__cost_valid(double v) { return isfinite(v) && v >= 0; }

/* "alpha,beta,gamma" or "alpha,beta,gamma,local_alpha,local_beta" (commas
 * or blanks); local[] gets 0, 0 for the first. */
static int parse_model(const char *s, redcoll__cost_model *cm, double local[2]) {
  double v[5] = {0, 0, 0, 0, 0};
  if (redcoll__parse_numbers(s, v, 5) != REDCOLL_OK &&
      redcoll__parse_numbers(s, v, 3) != REDCOLL_OK)
    return REDCOLL_EINVAL;
  *cm = (redcoll__cost_model){v[0], v[1], v[2]};
  local[0] = v[3];
  local[1] = v[4];
  return REDCOLL_OK;
}

/* ---- tuning files ------------------------------------------------------ */

int redcoll__tuning_read(const char *path, const char *transport, redcoll__cost_model *cm,
                         double *local, size_t *threshold) {
  (void)threshold; /* reserved: the file format has no threshold yet */
  FILE *f = fopen(path, "r");
  if (f == NULL) {
    redcoll__log(0, "tuning file %s: %s", path, strerror(errno));
    return REDCOLL_EINVAL;
  }
  char line[512];
  int lineno = 0, rc = 1;
  redcoll__cost_model own, dflt;
  double own_local[2] = {0, 0}, dflt_local[2] = {0, 0};
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
    double vl[2];
    if ((*s != ' ' && *s != '\t') || parse_model(s, &v, vl) != REDCOLL_OK) {
      redcoll__log(0, "tuning file %s:%d: expected `transport alpha beta gamma` and optionally "
                      "`local_alpha local_beta`, numbers >= 0", path, lineno);
      fclose(f);
      return REDCOLL_EINVAL;
    }
    if (transport != NULL && strcmp(name, transport) == 0) {
      own = v;
      memcpy(own_local, vl, sizeof vl);
      have_own = 1;
    } else if (strcmp(name, "default") == 0) {
      dflt = v;
      memcpy(dflt_local, vl, sizeof vl);
      have_dflt = 1;
    }
  }
  if (ferror(f)) {
    redcoll__log(0, "tuning file %s: read error", path);
    rc = REDCOLL_EINVAL;
  } else if (have_own || have_dflt) {
    *cm = have_own ? own : dflt;
    if (local != NULL) memcpy(local, have_own ? own_local : dflt_local, 2 * sizeof *local);
    rc = REDCOLL_OK;
  }
  fclose(f);
  return rc;
}

/* ---- the communicator's model ------------------------------------------ */

/* The transport's own default (a version 3 transport's info), else the
 * library's. */
static redcoll__cost_model transport_default(const redcoll_comm *c) {
  const redcoll_transport_info *i = &c->info;
  if (i->alpha > 0 || i->beta > 0 || i->gamma > 0)
    return (redcoll__cost_model){i->alpha, i->beta, i->gamma};
  return redcoll__cost_default();
}

int redcoll__cost_resolve(redcoll_comm *c) {
  if (c->cost_state != 0) return REDCOLL_OK;
  const char *tname = c->info.name[0] ? c->info.name : NULL;
  redcoll__cost_model cm = transport_default(c);
  int rc = REDCOLL_OK;
  const char *file = redcoll__env("REDCOLL_TUNING_FILE");
  const char *env = redcoll__env("REDCOLL_COST_MODEL");
  double local[2] = {0, 0};
  if (env != NULL && parse_model(env, &cm, local) != REDCOLL_OK) {
    redcoll__log(0, "REDCOLL_COST_MODEL=%s: expected alpha,beta,gamma and optionally "
                    "local_alpha,local_beta (seconds, >= 0)", env);
    cm = transport_default(c);
    local[0] = local[1] = 0;
    rc = REDCOLL_EINVAL;
  } else if (env == NULL && file != NULL) {
    int r = redcoll__tuning_read(file, tname, &cm, local, NULL);
    if (r == 1) {
      redcoll__log(2, "tuning file %s: no entry for %s, defaults used", file,
                   tname ? tname : "this transport");
    } else if (r != REDCOLL_OK) {
      cm = transport_default(c);
      rc = r;
    }
  }
  c->cost_alpha = cm.alpha;
  c->cost_beta = cm.beta;
  c->cost_gamma = cm.gamma;
  c->cost_dup = 0; /* measured by the calibration only */
  c->cost_local_alpha = local[0];
  c->cost_local_beta = local[1];
  c->cost_state = 1;
  return rc;
}

REDCOLL_API int redcoll_comm_set_cost_model(redcoll_comm *c, double alpha, double beta, double gamma) {
  if (c == NULL || !redcoll__cost_valid(alpha) || !redcoll__cost_valid(beta) ||
      !redcoll__cost_valid(gamma))
    return REDCOLL_EINVAL;
  c->cost_alpha = alpha;
  c->cost_beta = beta;
  c->cost_gamma = gamma;
  c->cost_dup = 0;
  c->cost_local_alpha = c->cost_local_beta = 0; /* the transport's */
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

double redcoll__local_alpha(const redcoll_comm *c) {
  if (c->cost_local_alpha > 0) return c->cost_local_alpha;
  return c->info.local_alpha > 0 ? c->info.local_alpha : c->cost_alpha / 10;
}

double redcoll__local_beta(const redcoll_comm *c) {
  if (c->cost_local_beta > 0) return c->cost_local_beta;
  return c->info.local_beta > 0 ? c->info.local_beta : c->cost_beta / 10;
}

REDCOLL_API int redcoll_comm_get_local_cost_model(redcoll_comm *c, double *alpha, double *beta) {
  if (c == NULL) return REDCOLL_EINVAL;
  int rc = redcoll__cost_resolve(c);
  if (alpha) *alpha = redcoll__local_alpha(c);
  if (beta) *beta = redcoll__local_beta(c);
  return rc;
}

REDCOLL_API int redcoll_comm_load_tuning(redcoll_comm *c, const char *path) {
  if (c == NULL || path == NULL) return REDCOLL_EINVAL;
  redcoll__cost_model cm;
  double local[2];
  int rc = redcoll__tuning_read(path, c->info.name[0] ? c->info.name : NULL, &cm, local, NULL);
  if (rc == 1) {
    redcoll__log(0, "tuning file %s: no entry for %s and no default entry", path,
                 c->info.name[0] ? c->info.name : "this transport");
    return REDCOLL_EINVAL;
  }
  if (rc != REDCOLL_OK) return rc;
  rc = redcoll_comm_set_cost_model(c, cm.alpha, cm.beta, cm.gamma);
  c->cost_local_alpha = local[0];
  c->cost_local_beta = local[1];
  return rc;
}

/* ---- ranks per CPU ---------------------------------------------------- */

int redcoll__rpc_resolve(redcoll_comm *c) {
  if (c->rpc_state != 0) return c->rpc_state == 1 ? c->rpc_status : REDCOLL_OK;
  int rc = REDCOLL_OK;
  c->ranks_per_cpu = c->rpc_detected;
  double v;
  int env = redcoll__env_doubles("REDCOLL_RANKS_PER_CPU", &v, 1);
  if (env == REDCOLL_OK) {
    c->ranks_per_cpu = v;
  } else if (env != REDCOLL__ENV_UNSET) {
    redcoll__log(0, "REDCOLL_RANKS_PER_CPU=%s: expected a number >= 0",
                 redcoll__env("REDCOLL_RANKS_PER_CPU"));
    rc = REDCOLL_EINVAL;
  }
  c->rpc_state = 1;
  c->rpc_status = rc;
  return rc;
}

void redcoll__comm_set_ranks_per_cpu_detected(redcoll_comm *c, double ranks_per_cpu) {
  c->rpc_detected = redcoll__cost_valid(ranks_per_cpu) ? ranks_per_cpu : 0;
  if (c->rpc_state == 1) c->rpc_state = 0; /* resolve again */
}

REDCOLL_API int redcoll_comm_set_ranks_per_cpu(redcoll_comm *c, double ranks_per_cpu) {
  if (c == NULL || !redcoll__cost_valid(ranks_per_cpu)) return REDCOLL_EINVAL;
  c->ranks_per_cpu = ranks_per_cpu;
  c->rpc_state = 2;
  return REDCOLL_OK;
}

REDCOLL_API int redcoll_comm_get_ranks_per_cpu(redcoll_comm *c, double *ranks_per_cpu) {
  if (c == NULL) return REDCOLL_EINVAL;
  int rc = redcoll__rpc_resolve(c);
  if (ranks_per_cpu != NULL) *ranks_per_cpu = c->ranks_per_cpu;
  return rc;
}
