/*
 * Self-calibration (src/core/select/calibrate.c): under the simulator the
 * measured model is the simulator's own, exactly; on the threads transport
 * every rank ends with the same model, AUTO's first choice triggers it, and
 * each way of switching it off leaves the model alone.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "redcoll/mock.h"
#include "redcoll/redcoll.h"
#include "redcoll/threads.h"
#include "test.h"

#define MAXP 8

typedef struct seen {
  double model[MAXP][3], local[MAXP][2]; /* between hosts; inside one */
  int status[MAXP];
} seen;

static int body_explicit(redcoll_comm *c, void *arg) {
  seen *s = arg;
  int r = redcoll_comm_rank(c);
  int rc = redcoll_comm_calibrate(c);
  if (rc == REDCOLL_OK)
    rc = redcoll_comm_get_cost_model(c, &s->model[r][0], &s->model[r][1], &s->model[r][2]);
  if (rc == REDCOLL_OK) rc = redcoll_comm_get_local_cost_model(c, &s->local[r][0], &s->local[r][1]);
  return rc;
}

/* The simulator's times are exact: 8 B take alpha + 8 beta, 256 KiB alpha
 * + 262144 beta, a reduction of 256 KiB 262144 gamma, in units of its
 * clock, which the transport's clock reads as milliseconds
 * (docs/simulator.md); the measurement gives the model back, in seconds:
 * the configuration times 1e-3. */
static void simulator_model_measured_exactly(void) {
  const double models[][3] = {{2.0, 1e-3, 2.5e-4}, {50, 1e-4, 1e-3}, {1.0, 4e-3, 0}};
  for (size_t m = 0; m < sizeof models / sizeof *models; m++) {
    for (int p = 2; p <= 7; p += 5) {
      redcoll_mock_config cfg;
      redcoll_mock_config_init(&cfg);
      cfg.alpha = models[m][0];
      cfg.beta = models[m][1];
      cfg.gamma = models[m][2];
      cfg.seed = 3;
      seen s;
      memset(&s, 0, sizeof s);
      CHECK_INT(redcoll_mock_run(p, &cfg, body_explicit, &s, NULL), REDCOLL_OK);
      for (int r = 0; r < p; r++)
        for (int k = 0; k < 3; k++) {
          double want = models[m][k] * 1e-3;
          CHECK_MSG(fabs(s.model[r][k] - want) <= 1e-9 * want + 1e-18,
                    "model %zu p %d rank %d term %d: %.17g vs %.17g", m, p, r, k, s.model[r][k],
                    want);
        }
    }
  }
}

/* With hosts the costs inside a host are measured too, around each host's
 * ring of ranks: under the simulator exactly its local_alpha and
 * local_beta, in seconds; the costs between hosts stay exact.  Without
 * hosts (or a host of one rank each) the local costs stay the transport's
 * (the simulator's info passes its configuration on as it is). */
static void hosts_local_costs(void) {
  const struct {
    int p;
    uint32_t t;
  } runs[] = {{6, 3}, {7, 3}, {8, 4}, {5, 1}, {4, 0}};
  for (size_t k = 0; k < sizeof runs / sizeof *runs; k++) {
    redcoll_mock_config cfg;
    redcoll_mock_config_init(&cfg);
    cfg.alpha = 5;
    cfg.beta = 2e-3;
    cfg.gamma = 1e-4;
    cfg.ranks_per_host = runs[k].t;
    cfg.local_alpha = 0.5;
    cfg.local_beta = 1e-4;
    seen s;
    memset(&s, 0, sizeof s);
    CHECK_INT(redcoll_mock_run(runs[k].p, &cfg, body_explicit, &s, NULL), REDCOLL_OK);
    int hosts = runs[k].t > 1;
    double want_net[3] = {5e-3, 2e-6, 1e-7};
    double want_local[2] = {hosts ? 0.5e-3 : cfg.local_alpha, hosts ? 1e-7 : cfg.local_beta};
    for (int r = 0; r < runs[k].p; r++) {
      for (int i = 0; i < 3; i++)
        CHECK_MSG(fabs(s.model[r][i] - want_net[i]) <= 1e-9 * want_net[i],
                  "p %d T %u rank %d network term %d: %.17g vs %.17g", runs[k].p, runs[k].t, r, i,
                  s.model[r][i], want_net[i]);
      for (int i = 0; i < 2; i++)
        CHECK_MSG(fabs(s.local[r][i] - want_local[i]) <= 1e-9 * want_local[i],
                  "p %d T %u rank %d local term %d: %.17g vs %.17g", runs[k].p, runs[k].t, r, i,
                  s.local[r][i], want_local[i]);
    }
  }
}

/* The first AUTO collective calibrates (or not), then the model is read. */
typedef struct auto_arg {
  seen s;
  int mode; /* 0 calibrate, 1 set_calibration(0), 2 set_cost_model, 3 forced algorithm */
} auto_arg;

static int body_auto(redcoll_comm *c, void *arg) {
  auto_arg *a = arg;
  int r = redcoll_comm_rank(c);
  if (a->mode == 1) redcoll_comm_set_calibration(c, 0);
  if (a->mode == 2) redcoll_comm_set_cost_model(c, 3e-6, 2e-9, 1e-9);
  if (a->mode == 3) redcoll_comm_set_algorithm(c, REDCOLL_COLL_ALLREDUCE, REDCOLL_ALGO_RING);
  double v[64], out[64];
  for (int i = 0; i < 64; i++) v[i] = r + i;
  int rc = redcoll_allreduce(c, v, out, 64, REDCOLL_FLOAT64, REDCOLL_SUM);
  if (rc != REDCOLL_OK) return rc;
  int p = redcoll_comm_size(c);
  for (int i = 0; i < 64; i++)
    if (out[i] != p * (p - 1) / 2.0 + p * i) return -100;
  return redcoll_comm_get_cost_model(c, &a->s.model[r][0], &a->s.model[r][1],
                                     &a->s.model[r][2]);
}

static void threads_first_auto_collective(void) {
  /* The threads transport's own proposal (its info). */
  const double dflt[3] = {2e-6, 1e-10, 0};
  for (int mode = 0; mode <= 3; mode++) {
    auto_arg a;
    memset(&a, 0, sizeof a);
    a.mode = mode;
    int p = 5;
    CHECK_INT(redcoll_threads_run(p, body_auto, &a), REDCOLL_OK);
    for (int r = 0; r < p; r++) {
      /* The same bits on every rank. */
      CHECK_MSG(memcmp(a.s.model[r], a.s.model[0], sizeof a.s.model[0]) == 0, "mode %d rank %d",
                mode, r);
      for (int k = 0; k < 3; k++) CHECK(isfinite(a.s.model[r][k]) && a.s.model[r][k] >= 0);
    }
    if (mode == 0) {
      /* Measured: a message costs something, a byte too. */
      CHECK(a.s.model[0][0] > 0);
      CHECK(a.s.model[0][1] > 0);
      CHECK(a.s.model[0][2] > 0);
    } else if (mode == 2) {
      CHECK_DBL(a.s.model[0][0], 3e-6);
      CHECK_DBL(a.s.model[0][1], 2e-9);
      CHECK_DBL(a.s.model[0][2], 1e-9);
    } else {
      /* Switched off, or no AUTO choice made: the transport's proposal,
       * whose gamma 0 means the library's default. */
      CHECK_DBL(a.s.model[0][0], dflt[0]);
      CHECK_DBL(a.s.model[0][1], dflt[1]);
    }
  }
}

static void environment_switches_it_off(void) {
  setenv("REDCOLL_CALIBRATE", "0", 1);
  auto_arg a;
  memset(&a, 0, sizeof a);
  CHECK_INT(redcoll_threads_run(3, body_auto, &a), REDCOLL_OK);
  CHECK_DBL(a.s.model[0][0], 2e-6);
  CHECK_DBL(a.s.model[0][1], 1e-10);
  unsetenv("REDCOLL_CALIBRATE");
}

TEST_MAIN(TEST(simulator_model_measured_exactly), TEST(hosts_local_costs),
          TEST(threads_first_auto_collective),
          TEST(environment_switches_it_off))
