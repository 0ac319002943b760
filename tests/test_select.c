/*
 * Automatic selection: the cost formulas against the simulator, the choice
 * on every rank, operators that need commutativity, the cost-model
 * settings and tuning files, and REDCOLL_ALGO_<COLL> with an unknown name.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "select/cost.h"
#include "redcoll/mock.h"
#include "test.h"

/* What redcoll__cost_select excludes for a non-commutative operator. */
#define NONCOMM_EXCLUDE (REDCOLL__NEEDS_COMMUTATIVE | REDCOLL__RANK_DEPENDENT)

/* What a transport names itself in its info: picks the tuning-file entry. */
static void name_transport(redcoll_comm *c, const char *name) {
  snprintf(c->info.name, sizeof c->info.name, "%s", name);
  c->cost_state = 0;
}

/* ---- formulas versus the simulator -------------------------------------- */

/* Simulated time of (coll, algo, p, count of uint8, threshold) under the
 * model, or -1 if the run failed. */
static double sim_time(redcoll_coll coll, redcoll_algo algo, int p, size_t count, size_t thr,
                       const redcoll__cost_model *cm) {
  check_result res;
  check_case tc = check_case_make(coll, algo, p, count, 0, CHECK_OP_SUM, 0);
  tc.dtype = REDCOLL_UINT8;
  tc.threshold = thr;
  tc.mock.alpha = cm->alpha;
  tc.mock.beta = cm->beta;
  tc.mock.gamma = cm->gamma;
  if (check_run(&tc, &res) != 0) {
    fprintf(stderr, "run failed: %s\n", res.error);
    return -1;
  }
  return res.time;
}

static double model_time(redcoll_coll coll, redcoll_algo algo, int p, size_t count, size_t thr,
                         const redcoll__cost_model *cm) {
  redcoll__cost_args a = {coll, p, count, 1, thr, 0, 1, 0};
  return redcoll__cost(algo, &a, cm);
}

typedef struct {
  redcoll_coll coll;
  redcoll_algo algo;
  int p;
  size_t count, thr;
} formula_case;

/* Cases where the formula is the simulator's time exactly, for each term
 * alone and for a commodity profile (counts divisible by the blocks). */
static const formula_case exact[] = {
    {REDCOLL_COLL_ALLREDUCE, REDCOLL_ALGO_LINEAR, 5, 960, 8192},
    {REDCOLL_COLL_REDUCE, REDCOLL_ALGO_LINEAR, 4, 960, 8192},
    {REDCOLL_COLL_ALLREDUCE, REDCOLL_ALGO_BINARY_TREE, 7, 960, 8192},
    {REDCOLL_COLL_ALLREDUCE, REDCOLL_ALGO_RECURSIVE_DOUBLING, 8, 960, 8192},
    {REDCOLL_COLL_ALLREDUCE, REDCOLL_ALGO_RECURSIVE_DOUBLING, 6, 960, 8192},
    {REDCOLL_COLL_ALLREDUCE, REDCOLL_ALGO_HALVING_DOUBLING, 8, 960, 8192},
    {REDCOLL_COLL_ALLREDUCE, REDCOLL_ALGO_HALVING_DOUBLING, 6, 960, 8192},
    {REDCOLL_COLL_ALLREDUCE, REDCOLL_ALGO_RING, 5, 960, 8192},
    {REDCOLL_COLL_ALLREDUCE, REDCOLL_ALGO_RING_SEQUENTIAL, 6, 960, 8192},
    {REDCOLL_COLL_ALLREDUCE, REDCOLL_ALGO_ALLGATHER_REDUCE, 5, 960, 8192},
    {REDCOLL_COLL_ALLREDUCE, REDCOLL_ALGO_CIRCULANT, 6, 960, 8192},
    {REDCOLL_COLL_ALLREDUCE, REDCOLL_ALGO_CIRCULANT, 13, 960, 8192},
    {REDCOLL_COLL_ALLREDUCE, REDCOLL_ALGO_ELIMINATION, 6, 960, 8192},  /* no halving */
    {REDCOLL_COLL_ALLREDUCE, REDCOLL_ALGO_ELIMINATION, 13, 960, 8192}, /* no halving */
    {REDCOLL_COLL_ALLREDUCE, REDCOLL_ALGO_ELIMINATION, 6, 960, 1},     /* all halving */
    {REDCOLL_COLL_ALLREDUCE, REDCOLL_ALGO_ELIMINATION, 12, 960, 1},
    {REDCOLL_COLL_ALLREDUCE, REDCOLL_ALGO_ELIMINATION_2TO1, 7, 960, 1},
};

static void test_formulas(void) {
  const redcoll__cost_model profiles[] = {
      {1, 0, 0}, {0, 1, 0}, {0, 0, 1}, {1e-5, 1e-9, 2.5e-10}};
  for (size_t i = 0; i < sizeof exact / sizeof exact[0]; i++) {
    const formula_case *f = &exact[i];
    if (!redcoll_algo_is_supported(f->coll, f->algo)) continue;
    for (size_t j = 0; j < sizeof profiles / sizeof profiles[0]; j++) {
      double s = sim_time(f->coll, f->algo, f->p, f->count, f->thr, &profiles[j]);
      double m = model_time(f->coll, f->algo, f->p, f->count, f->thr, &profiles[j]);
      CHECK_MSG(s >= 0 && fabs(m - s) <= 1e-9 * (s > 1 ? s : 1),
                "%s %s p=%d count=%zu b=%zu profile %zu: formula %.10g, simulator %.10g",
                redcoll_coll_name(f->coll), redcoll_algo_name(f->algo), f->p, f->count, f->thr, j,
                m, s);
    }
  }
}

/* ---- the choice --------------------------------------------------------- */

typedef struct {
  size_t count;
  int noncomm;
  redcoll_algo chosen[64];
  int status[64];
} same_arg;

static int same_main(redcoll_comm *c, void *argp) {
  same_arg *a = argp;
  int r = redcoll_comm_rank(c), p = redcoll_comm_size(c);
  redcoll_comm_set_cost_model(c, 1e-5, 1e-9, 2.5e-10);
  const redcoll_op *op = a->noncomm ? check_noncomm_op() : REDCOLL_SUM;
  redcoll_dtype dt = a->noncomm ? REDCOLL_CUSTOM : REDCOLL_FLOAT64;
  size_t es = a->noncomm ? 16 : 8;
  unsigned char *buf = calloc(a->count ? a->count : 1, es);
  /* The identity matrix for the non-commutative operator: [1 0; 0 1]. */
  if (a->noncomm) {
    for (size_t i = 0; i < a->count; i++) {
      uint32_t id[4] = {1, 0, 0, 1};
      memcpy(buf + i * es, id, sizeof id);
    }
  }
  int rc = redcoll_allreduce(c, REDCOLL_IN_PLACE, buf, a->count, dt, op);
  a->status[r] = rc;
  a->chosen[r] = redcoll_comm_last_algorithm(c);
  (void)p;
  free(buf);
  return rc;
}

static void test_same_choice(void) {
  const int ps[] = {2, 3, 6, 13, 24};
  const size_t counts[] = {1, 100, 5000, 200000};
  redcoll_mock_config cfg;
  redcoll_mock_config_init(&cfg);
  cfg.alpha = 1e-5;
  cfg.beta = 1e-9;
  cfg.gamma = 2.5e-10;
  for (int nc = 0; nc < 2; nc++) {
    for (size_t i = 0; i < sizeof ps / sizeof ps[0]; i++) {
      for (size_t j = 0; j < sizeof counts / sizeof counts[0]; j++) {
        if (nc && counts[j] > 5000) continue;
        same_arg a;
        memset(&a, 0, sizeof a);
        a.count = counts[j];
        a.noncomm = nc;
        int rc = redcoll_mock_run(ps[i], &cfg, same_main, &a, NULL);
        CHECK_MSG(rc == REDCOLL_OK, "p=%d count=%zu noncomm=%d: %s", ps[i], counts[j], nc,
                  redcoll_status_name(rc));
        for (int r = 1; r < ps[i]; r++)
          CHECK_MSG(a.chosen[r] == a.chosen[0], "p=%d count=%zu: rank %d chose %s, rank 0 %s",
                    ps[i], counts[j], r, redcoll_algo_name(a.chosen[r]),
                    redcoll_algo_name(a.chosen[0]));
        CHECK(a.chosen[0] != REDCOLL_ALGO_AUTO);
        if (nc)
          CHECK_MSG(redcoll_algo_is_rank_ordered(REDCOLL_COLL_ALLREDUCE, a.chosen[0]),
                    "non-commutative op got %s", redcoll_algo_name(a.chosen[0]));
      }
    }
  }
}

/* AUTO keeps its last choice per collective and answers a call with the
 * same inputs from it: every input must still count.  A sequence of
 * allreduces on one communicator, each checked against a fresh choice
 * (redcoll_cost_choose) for the model, size, threshold and operator of
 * that call; every step changes one input so that the answer changes. */
typedef struct {
  redcoll_algo got[8][8], want[8][8];
} follow_arg;

static int follow_main(redcoll_comm *c, void *argp) {
  follow_arg *fa = argp;
  int r = redcoll_comm_rank(c), p = redcoll_comm_size(c);
  static int64_t buf[6][2048]; /* the mock's ranks are threads */
  double m1[3] = {1e-5, 1e-9, 2.5e-10}, m2[3] = {1e-7, 1e-8, 1e-8};
  /* At p = 6 (redcoll_cost_choose): circulant, circulant, binary_blocks,
   * ring_sequential, elimination_rings, circulant, allgather_reduce. */
  struct {
    const double *m;
    size_t count, threshold; /* elements */
    int noncomm;
  } steps[] = {
      {m1, 4, 8192, 0},    {m1, 4, 8192, 0}, /* the same call twice */
      {m2, 4, 8192, 0},                      /* the model */
      {m2, 1024, 8192, 0},                   /* the size */
      {m2, 1024, 64, 0},                     /* the threshold */
      {m1, 1024, 64, 0},                     /* the model back */
      {m1, 64, 64, 1},                       /* a non-commutative operator */
  };
  const redcoll_op *nc = check_noncomm_op();
  for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
    redcoll_comm_set_cost_model(c, steps[i].m[0], steps[i].m[1], steps[i].m[2]);
    redcoll_comm_set_threshold(c, steps[i].threshold);
    int rc;
    size_t n = steps[i].count, es = steps[i].noncomm ? 16 : 8;
    if (steps[i].noncomm) {
      for (size_t k = 0; k < n; k++) { /* identity matrices, [1 0; 0 1] */
        uint32_t id[4] = {1, 0, 0, 1};
        memcpy((unsigned char *)buf[r] + k * es, id, sizeof id);
      }
      rc = redcoll_allreduce(c, REDCOLL_IN_PLACE, buf[r], n, REDCOLL_CUSTOM, nc);
    } else {
      rc = redcoll_allreduce(c, REDCOLL_IN_PLACE, buf[r], n, REDCOLL_INT64, REDCOLL_SUM);
    }
    if (rc != REDCOLL_OK) return rc;
    int flags = steps[i].noncomm ? 0 : REDCOLL_CHOOSE_COMMUTATIVE | REDCOLL_CHOOSE_RANK_DEPENDENT;
    fa->got[r][i] = redcoll_comm_last_algorithm(c);
    fa->want[r][i] = redcoll_cost_choose(REDCOLL_COLL_ALLREDUCE, p, n, es, steps[i].threshold,
                                         flags, steps[i].m[0], steps[i].m[1], steps[i].m[2]);
  }
  return REDCOLL_OK;
}

static void test_choice_follows_inputs(void) {
  redcoll_mock_config cfg;
  redcoll_mock_config_init(&cfg);
  follow_arg fa;
  memset(&fa, 0, sizeof fa);
  CHECK_INT(redcoll_mock_run(6, &cfg, follow_main, &fa, NULL), REDCOLL_OK);
  for (int r = 0; r < 6; r++)
    for (int i = 0; i < 7; i++)
      CHECK_MSG(fa.got[r][i] == fa.want[r][i], "rank %d step %d: ran %s, the model says %s", r, i,
                redcoll_algo_name(fa.got[r][i]), redcoll_algo_name(fa.want[r][i]));
  /* Each step's change changed the answer (else the step proves nothing). */
  for (int i = 2; i < 7; i++)
    CHECK_MSG(fa.want[0][i] != fa.want[0][i - 1], "step %d: %s both times", i,
              redcoll_algo_name(fa.want[0][i]));
}

/* The choice for a non-commutative operator never needs commutativity, for
 * every collective and many sizes. */
static void test_choice_respects_operator(void) {
  redcoll__cost_model cm = {1e-5, 1e-9, 2.5e-10};
  for (int coll = 0; coll < REDCOLL_COLL_COUNT; coll++) {
    for (int p = 2; p <= 300; p += 7) {
      for (size_t n = 1; n <= ((size_t)1 << 26); n *= 8) {
        redcoll__cost_args a = {(redcoll_coll)coll, p, n, 1, 8192, 0, 1, 0};
        redcoll_algo x = redcoll__cost_select(&a, NONCOMM_EXCLUDE, &cm, NULL);
        CHECK(redcoll_algo_is_supported((redcoll_coll)coll, x));
        if (coll <= REDCOLL_COLL_REDUCE_SCATTER)
          CHECK_MSG(redcoll_algo_is_rank_ordered((redcoll_coll)coll, x),
                    "%s p=%d n=%zu: %s", redcoll_coll_name((redcoll_coll)coll), p, n,
                    redcoll_algo_name(x));
        CHECK(redcoll_algo_is_supported((redcoll_coll)coll, redcoll__cost_select(&a, 0, &cm, NULL)));
      }
    }
  }
  /* Commodity profile: latency-bound small vectors, bandwidth-bound large ones. */
  if (redcoll_algo_is_supported(REDCOLL_COLL_ALLREDUCE, REDCOLL_ALGO_CIRCULANT))
    CHECK_INT(redcoll_cost_choose(REDCOLL_COLL_ALLREDUCE, 13, 1, 8, 8192,
                                  REDCOLL_CHOOSE_COMMUTATIVE | REDCOLL_CHOOSE_RANK_DEPENDENT, 1e-5,
                                  1e-9, 2.5e-10),
              REDCOLL_ALGO_CIRCULANT);
  /* Results identical on every rank: never the rank-dependent circulant. */
  for (int p = 2; p <= 64; p++)
    for (size_t n = 1; n <= ((size_t)1 << 24); n *= 4)
      CHECK(redcoll_cost_choose(REDCOLL_COLL_ALLREDUCE, p, n, 8, 8192, REDCOLL_CHOOSE_COMMUTATIVE,
                                1e-5, 1e-9, 2.5e-10) != REDCOLL_ALGO_CIRCULANT);
  redcoll_algo big =
      redcoll_cost_choose(REDCOLL_COLL_ALLREDUCE, 13, 1 << 23, 8, 8192, 0, 1e-5, 1e-9, 2.5e-10);
  CHECK_MSG(big != REDCOLL_ALGO_LINEAR && big != REDCOLL_ALGO_BINARY_TREE &&
                big != REDCOLL_ALGO_RECURSIVE_DOUBLING && big != REDCOLL_ALGO_ALLGATHER_REDUCE,
            "64 MiB on 13 ranks: %s", redcoll_algo_name(big));
}

/* ---- settings ----------------------------------------------------------- */

static int settings_main(redcoll_comm *c, void *argp) {
  (void)argp;
  double a, b, g;
  CHECK_INT(redcoll_comm_set_cost_model(c, -1, 0, 0), REDCOLL_EINVAL);
  CHECK_INT(redcoll_comm_set_cost_model(c, NAN, 0, 0), REDCOLL_EINVAL);
  CHECK_INT(redcoll_comm_set_cost_model(c, 2e-6, 3e-10, 4e-10), REDCOLL_OK);
  CHECK_INT(redcoll_comm_get_cost_model(c, &a, &b, &g), REDCOLL_OK);
  CHECK_DBL(a, 2e-6);
  CHECK_DBL(b, 3e-10);
  CHECK_DBL(g, 4e-10);
  name_transport(c, "tcp");

  char path[] = "/tmp/redcoll-tuning-XXXXXX";
  int fd = mkstemp(path);
  CHECK(fd >= 0);
  if (fd < 0) return REDCOLL_OK;
  FILE *f = fdopen(fd, "w");
  fprintf(f, "# redcoll tuning file\n\ndefault 1e-05 1e-09 2.5e-10\n"
             "tcp 3e-05 5e-10 2e-10   # measured\nthreads 1e-06 1e-10 2e-10\n");
  fclose(f);
  CHECK_INT(redcoll_comm_load_tuning(c, path), REDCOLL_OK);
  redcoll_comm_get_cost_model(c, &a, &b, &g);
  CHECK_DBL(a, 3e-05);
  CHECK_DBL(b, 5e-10);
  CHECK_DBL(g, 2e-10);
  name_transport(c, "elsewhere");
  CHECK_INT(redcoll_comm_load_tuning(c, path), REDCOLL_OK);
  redcoll_comm_get_cost_model(c, &a, NULL, NULL);
  CHECK_DBL(a, 1e-05);
  /* Malformed: a missing gamma. */
  f = fopen(path, "w");
  fprintf(f, "tcp 3e-05 5e-10\n");
  fclose(f);
  CHECK_INT(redcoll_comm_load_tuning(c, path), REDCOLL_EINVAL);
  /* A transport name over 15 characters (the longest a transport can
   * give in its info): rejected, even when a valid
   * line for the transport follows (it used to be accepted, truncated at
   * 31 characters). */
  f = fopen(path, "w");
  fprintf(f, "a-name-that-is-too-long 1e-06 1e-10 2e-10\nelsewhere 3e-05 5e-10 2e-10\n");
  fclose(f);
  CHECK_INT(redcoll_comm_load_tuning(c, path), REDCOLL_EINVAL);
  f = fopen(path, "w");
  fprintf(f, "fifteen-chars-x 1e-06 1e-10 2e-10\nelsewhere 3e-05 5e-10 2e-10\n");
  fclose(f);
  CHECK_INT(redcoll_comm_load_tuning(c, path), REDCOLL_OK);
  /* No entry that applies. */
  f = fopen(path, "w");
  fprintf(f, "threads 1e-06 1e-10 2e-10\n");
  fclose(f);
  CHECK_INT(redcoll_comm_load_tuning(c, path), REDCOLL_EINVAL);
  unlink(path);
  CHECK_INT(redcoll_comm_load_tuning(c, path), REDCOLL_EINVAL);
  return REDCOLL_OK;
}

static int env_main(redcoll_comm *c, void *argp) {
  double *out = argp;
  if (redcoll_comm_rank(c) == 0) return redcoll_comm_get_cost_model(c, &out[0], &out[1], &out[2]);
  return REDCOLL_OK;
}

static void test_settings(void) {
  CHECK_INT(redcoll_mock_run(1, NULL, settings_main, NULL, NULL), REDCOLL_OK);
  double v[3] = {0, 0, 0};
  setenv("REDCOLL_COST_MODEL", "7e-6, 2e-9, 1e-10", 1);
  CHECK_INT(redcoll_mock_run(2, NULL, env_main, v, NULL), REDCOLL_OK);
  CHECK_DBL(v[0], 7e-6);
  CHECK_DBL(v[1], 2e-9);
  CHECK_DBL(v[2], 1e-10);
  setenv("REDCOLL_COST_MODEL", "7e-6,oops", 1);
  CHECK_INT(redcoll_mock_run(2, NULL, env_main, v, NULL), REDCOLL_EINVAL);
  unsetenv("REDCOLL_COST_MODEL");

  char path[] = "/tmp/redcoll-tuning-XXXXXX";
  int fd = mkstemp(path);
  FILE *f = fdopen(fd, "w");
  fprintf(f, "default 4e-06 3e-09 2e-10\n");
  fclose(f);
  setenv("REDCOLL_TUNING_FILE", path, 1);
  CHECK_INT(redcoll_mock_run(2, NULL, env_main, v, NULL), REDCOLL_OK);
  unsetenv("REDCOLL_TUNING_FILE");
  unlink(path);
  /* The mock's runner may set its own configuration explicitly (then it
   * wins over the file); otherwise the file's default entry applies. */
  CHECK(v[0] == 4e-06 || v[0] == 1);
}

/* The intra-host alpha and beta of an entry (the fourth and fifth numbers,
 * which redcoll-tune writes on a communicator with hosts): read back
 * exactly as written; an entry of three has none (0: the transport's); four
 * numbers, a negative one or a sixth are malformed.  They reach the
 * communicator from the file (REDCOLL_TUNING_FILE, redcoll_comm_load_tuning)
 * and from REDCOLL_COST_MODEL; redcoll_comm_set_cost_model drops them. */
static int local_main(redcoll_comm *c, void *argp) {
  double *out = argp;
  double a;
  int rc = redcoll_comm_get_cost_model(c, &a, NULL, NULL);
  if (redcoll_comm_rank(c) == 0) {
    out[0] = a;
    out[1] = c->cost_local_alpha;
    out[2] = c->cost_local_beta;
  }
  return rc;
}

static int load_main(redcoll_comm *c, void *argp) {
  const char *path = argp;
  name_transport(c, "tcp");
  CHECK_INT(redcoll_comm_load_tuning(c, path), REDCOLL_OK);
  CHECK_DBL(c->cost_alpha, 2.9e-05);
  CHECK_DBL(c->cost_local_alpha, 1.8e-06);
  CHECK_DBL(c->cost_local_beta, 9.5e-11);
  CHECK_INT(redcoll_comm_set_cost_model(c, 1e-5, 1e-9, 0), REDCOLL_OK);
  CHECK_DBL(c->cost_local_alpha, 0);
  CHECK_DBL(c->cost_local_beta, 0);
  return REDCOLL_OK;
}

static void test_tuning_local(void) {
  char path[] = "/tmp/redcoll-tuning-XXXXXX";
  int fd = mkstemp(path);
  CHECK(fd >= 0);
  if (fd < 0) return;
  FILE *f = fdopen(fd, "w");
  /* as redcoll-tune writes it: "%s %.6g %.6g %.6g %.6g %.6g" */
  fprintf(f, "%s %.6g %.6g %.6g %.6g %.6g\n", "tcp", 2.9e-05, 3.2e-08, 2.1e-10, 1.8e-06, 9.5e-11);
  fprintf(f, "default 1e-05 1e-09 2.5e-10\n");
  fclose(f);
  redcoll__cost_model cm;
  double local[2] = {-1, -1};
  CHECK_INT(redcoll__tuning_read(path, "tcp", &cm, local, NULL), REDCOLL_OK);
  CHECK_DBL(cm.alpha, 2.9e-05);
  CHECK_DBL(cm.beta, 3.2e-08);
  CHECK_DBL(cm.gamma, 2.1e-10);
  CHECK_DBL(local[0], 1.8e-06);
  CHECK_DBL(local[1], 9.5e-11);
  CHECK_INT(redcoll__tuning_read(path, "threads", &cm, local, NULL), REDCOLL_OK);
  CHECK_DBL(cm.alpha, 1e-05);
  CHECK_DBL(local[0], 0);
  CHECK_DBL(local[1], 0);
  CHECK_INT(redcoll_mock_run(1, NULL, load_main, path, NULL), REDCOLL_OK);
  /* the file through REDCOLL_TUNING_FILE (the simulator's entry) */
  f = fopen(path, "w");
  fprintf(f, "mock 2 0 0 0.5 0.25\n");
  fclose(f);
  double v[3] = {0, 0, 0};
  setenv("REDCOLL_TUNING_FILE", path, 1);
  CHECK_INT(redcoll_mock_run(2, NULL, local_main, v, NULL), REDCOLL_OK);
  unsetenv("REDCOLL_TUNING_FILE");
  CHECK_DBL(v[0], 2);
  CHECK_DBL(v[1], 0.5);
  CHECK_DBL(v[2], 0.25);
  const char *bad[] = {"tcp 1 2 3 4\n", "tcp 1 2 3 -4 5\n", "tcp 1 2 3 4 5 6\n", "tcp 1 2 3 4 x\n"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    f = fopen(path, "w");
    fputs(bad[i], f);
    fclose(f);
    CHECK_INT(redcoll__tuning_read(path, "tcp", &cm, local, NULL), REDCOLL_EINVAL);
  }
  unlink(path);
  setenv("REDCOLL_COST_MODEL", "7e-6, 2e-9, 1e-10, 1e-6, 1e-10", 1);
  CHECK_INT(redcoll_mock_run(2, NULL, local_main, v, NULL), REDCOLL_OK);
  CHECK_DBL(v[0], 7e-6);
  CHECK_DBL(v[1], 1e-6);
  CHECK_DBL(v[2], 1e-10);
  setenv("REDCOLL_COST_MODEL", "7e-6, 2e-9, 1e-10, 1e-6", 1); /* malformed: defaults */
  CHECK_INT(redcoll_mock_run(2, NULL, local_main, v, NULL), REDCOLL_EINVAL);
  CHECK_DBL(v[0], 1); /* the simulator's own alpha */
  CHECK_DBL(v[1], 0);
  unsetenv("REDCOLL_COST_MODEL");
}

static int nop_main(redcoll_comm *c, void *argp) {
  (void)c;
  (void)argp;
  return REDCOLL_OK;
}

/* REDCOLL_ALGO_<COLL> with an unknown name fails communicator creation. */
static void test_forcing_env(void) {
  setenv("REDCOLL_ALGO_ALLREDUCE", "no_such_algorithm", 1);
  int rc = redcoll_mock_run(2, NULL, nop_main, NULL, NULL);
  CHECK_MSG(rc == REDCOLL_EINVAL, "got %s", redcoll_status_name(rc));
  setenv("REDCOLL_ALGO_ALLREDUCE", "dissemination", 1); /* a barrier algorithm */
  rc = redcoll_mock_run(2, NULL, nop_main, NULL, NULL);
  CHECK_MSG(rc == REDCOLL_EINVAL, "got %s", redcoll_status_name(rc));
  setenv("REDCOLL_ALGO_ALLREDUCE", "ring", 1);
  CHECK_INT(redcoll_mock_run(2, NULL, nop_main, NULL, NULL), REDCOLL_OK);
  unsetenv("REDCOLL_ALGO_ALLREDUCE");
}

/* ---- ranks per CPU -------------------------------------------------------- */

/* The root's segment (redcoll__root_segment) prices linear's root as
 * piped steps, io.c's formula written out here, and nothing else: every
 * other algorithm costs the same with and without it, and with more ranks
 * than CPUs linear stays whole. */
static void test_segment_costs(void) {
  const redcoll__cost_model tcp = {3e-5, 1e-9, 2.5e-10};
  const double A = tcp.alpha, B = tcp.beta, G = tcp.gamma, s = 1048576;
  for (int p = 2; p <= 5; p++)
    for (size_t m = (size_t)256 << 10; m <= (size_t)64 << 20; m *= 4) {
      double p1 = p - 1, v = (double)m, k = ceil(v / s), last = v - (k - 1) * s;
      /* first piece in; each next beside the reduction of the one before;
       * the last one reduced */
      double step = A + s * B + (k - 2) * fmax(A + s * B, s * G) +
                    fmax(A + last * B, s * G) + last * G;
      redcoll__cost_args a = {REDCOLL_COLL_REDUCE, p, m / 4, 4, 8192, 0, 1, (size_t)1 << 20};
      redcoll__cost_args whole = a;
      whole.segment = 0;
      for (int ar = 0; ar < 2; ar++) {
        a.coll = whole.coll = ar ? REDCOLL_COLL_ALLREDUCE : REDCOLL_COLL_REDUCE;
        if (v >= 2 * s)
          CHECK_DBL(redcoll__cost(REDCOLL_ALGO_LINEAR, &a, &tcp),
                    p1 * step + (ar ? p1 * (A + v * B) : 0));
        else /* not cut: the whole formula, bit for bit */
          CHECK_DBL(redcoll__cost(REDCOLL_ALGO_LINEAR, &a, &tcp),
                    redcoll__cost(REDCOLL_ALGO_LINEAR, &whole, &tcp));
      }
      for (int coll = 0; coll < REDCOLL_COLL_COUNT; coll++) {
        a.coll = whole.coll = (redcoll_coll)coll;
        for (int algo = 1; algo < REDCOLL_ALGO_COUNT; algo++) {
          int lin = algo == REDCOLL_ALGO_LINEAR &&
                    (coll == REDCOLL_COLL_REDUCE || coll == REDCOLL_COLL_ALLREDUCE ||
                     coll == REDCOLL_COLL_REDUCE_SCATTER ||
                     coll == REDCOLL_COLL_REDUCE_SCATTER_BLOCK);
          if (!lin)
            CHECK_DBL(redcoll__cost((redcoll_algo)algo, &a, &tcp),
                      redcoll__cost((redcoll_algo)algo, &whole, &tcp));
        }
      }
      /* Two ranks per CPU: whole, one start-up (as without a segment). */
      a.coll = REDCOLL_COLL_REDUCE;
      a.ranks_per_cpu = 2;
      CHECK_DBL(redcoll__cost(REDCOLL_ALGO_LINEAR, &a, &tcp), 2 * A + p1 * v * (B + G));
    }
}

/* The cost model with f ranks per CPU: alpha f per round for every
 * algorithm, and linear allreduce and reduce charged one start-up per
 * phase, their volume and reductions p-1 times. */
static void test_ranks_per_cpu_costs(void) {
  const redcoll__cost_model tcp = {3e-5, 1e-9, 2.5e-10}; /* the TCP transport's info */
  const double B = tcp.beta, G = tcp.gamma;
  for (int p = 2; p <= 16; p++) {
    double f = p / 2.0, A = tcp.alpha * f, p1 = p - 1;
    redcoll__cost_model scaled = tcp;
    scaled.alpha = A;
    for (size_t m = 8; m <= ((size_t)16 << 20); m *= 8) {
      redcoll__cost_args a = {REDCOLL_COLL_ALLREDUCE, p, m / 4, 4, 8192, 0, f, 0};
      redcoll__cost_args plain = a;
      plain.ranks_per_cpu = 1;
      for (int coll = 0; coll < REDCOLL_COLL_COUNT; coll++) {
        a.coll = plain.coll = (redcoll_coll)coll;
        for (int algo = 1; algo < REDCOLL_ALGO_COUNT; algo++) {
          double want = redcoll__cost((redcoll_algo)algo, &plain, &scaled);
          if (p > 2 && algo == REDCOLL_ALGO_LINEAR && coll == REDCOLL_COLL_ALLREDUCE)
            want = 2 * A + p1 * (double)m * (2 * B + G);
          if (p > 2 && algo == REDCOLL_ALGO_LINEAR && coll == REDCOLL_COLL_REDUCE)
            want = A + p1 * (double)m * (B + G);
          if (p <= 2) want = redcoll__cost((redcoll_algo)algo, &plain, &tcp); /* f = 1 */
          CHECK_DBL(redcoll__cost((redcoll_algo)algo, &a, &tcp), want);
        }
      }
      /* f <= 1, or 0 (unset): the plain model. */
      a.ranks_per_cpu = 0.5;
      plain.ranks_per_cpu = 0;
      CHECK_DBL(redcoll__cost(REDCOLL_ALGO_LINEAR, &a, &tcp),
                redcoll__cost(REDCOLL_ALGO_LINEAR, &plain, &tcp));
    }
  }
  /* What it chooses on the TCP defaults with p ranks on 2 CPUs (measured,
   * docs/tuning.md): linear allreduce from p = 5 up to 4 KiB, linear
   * reduce from p = 3 up to 32 KiB; never linear for p >= 3 unshared. */
  for (int p = 3; p <= 8; p++) {
    for (size_t m = 8; m <= 32768; m *= 8) {
      redcoll__cost_args a = {REDCOLL_COLL_ALLREDUCE, p, m / 4, 4, 8192, 0, p / 2.0, 0};
      redcoll_algo got = redcoll__cost_select(&a, 0, &tcp, NULL);
      if (m <= 4096)
        CHECK_MSG((got == REDCOLL_ALGO_LINEAR) == (p >= 5), "allreduce p=%d %zu B f=%g: %s", p, m,
                  a.ranks_per_cpu, redcoll_algo_name(got));
      a.coll = REDCOLL_COLL_REDUCE;
      got = redcoll__cost_select(&a, 0, &tcp, NULL);
      CHECK_MSG(got == REDCOLL_ALGO_LINEAR, "reduce p=%d %zu B f=%g: %s", p, m, a.ranks_per_cpu,
                redcoll_algo_name(got));
      a.ranks_per_cpu = 1;
      got = redcoll__cost_select(&a, 0, &tcp, NULL);
      CHECK_MSG(got != REDCOLL_ALGO_LINEAR, "reduce p=%d %zu B: linear", p, m);
      a.coll = REDCOLL_COLL_ALLREDUCE;
      got = redcoll__cost_select(&a, 0, &tcp, NULL);
      CHECK_MSG(got != REDCOLL_ALGO_LINEAR, "allreduce p=%d %zu B: linear", p, m);
    }
  }
}

typedef struct {
  double set; /* < 0: leave alone, else redcoll_comm_set_ranks_per_cpu(set) */
  int rc[8];
  double got[8];
  redcoll_algo algo[8];
} rpc_arg;

static int rpc_main(redcoll_comm *c, void *argp) {
  rpc_arg *o = argp;
  int r = redcoll_comm_rank(c);
  double v = 0;
  CHECK_INT(redcoll_comm_set_ranks_per_cpu(c, -1), REDCOLL_EINVAL);
  CHECK_INT(redcoll_comm_set_ranks_per_cpu(c, NAN), REDCOLL_EINVAL);
  CHECK_INT(redcoll_comm_set_ranks_per_cpu(NULL, 2), REDCOLL_EINVAL);
  CHECK_INT(redcoll_comm_get_ranks_per_cpu(NULL, &v), REDCOLL_EINVAL);
  if (o->set >= 0) CHECK_INT(redcoll_comm_set_ranks_per_cpu(c, o->set), REDCOLL_OK);
  /* The simulator's default model is alpha only: the choice for 4 bytes. */
  float x = (float)r, s = 0;
  int rc = redcoll_allreduce(c, &x, &s, 1, REDCOLL_FLOAT32, REDCOLL_SUM);
  CHECK_INT(rc, REDCOLL_OK);
  CHECK_DBL(s, 15.0);
  o->algo[r] = redcoll_comm_last_algorithm(c);
  /* Asked after AUTO resolved the setting, and once more: the same answer
   * (a malformed variable stays an error). */
  o->rc[r] = redcoll_comm_get_ranks_per_cpu(c, &o->got[r]);
  double again = -1;
  CHECK_INT(redcoll_comm_get_ranks_per_cpu(c, &again), o->rc[r]);
  CHECK_DBL(again, o->got[r]);
  return rc;
}

/* Directions that share CPUs (dup, measured by the calibration at p = 2):
 * the exchanging algorithms pay dup for every byte of their critical path,
 * linear and binary_tree (one way at a time) nothing.  Over loopback
 * (dup = beta) a reduce at p = 2 sends the vector once instead of
 * exchanging halves; with dup 0 the model is the full-duplex one. */
static void test_shared_directions(void) {
  redcoll__cost_model cm = {1.2e-5, 1.7e-10, 2.3e-11};
  for (size_t m = (size_t)256 << 10; m <= (size_t)16 << 20; m *= 8) {
    redcoll__cost_args a = {REDCOLL_COLL_REDUCE, 2, m / 4, 4, 8192, 0, 1, 0};
    double full = redcoll__cost(REDCOLL_ALGO_ELIMINATION, &a, &cm);
    CHECK(redcoll__cost_dup(REDCOLL_ALGO_ELIMINATION, &a, &cm, 0) == full);
    /* Elimination's critical path at p = 2: m bytes (m/2 exchanged, m/2 to
     * the root). */
    double shared = redcoll__cost_dup(REDCOLL_ALGO_ELIMINATION, &a, &cm, cm.beta);
    CHECK_MSG(fabs(shared - full - cm.beta * (double)m) < 1e-12, "%zu: %g %g", m, shared, full);
    CHECK(redcoll__cost_dup(REDCOLL_ALGO_LINEAR, &a, &cm, cm.beta) ==
          redcoll__cost(REDCOLL_ALGO_LINEAR, &a, &cm));
    redcoll_algo x = redcoll__cost_select_dup(&a, REDCOLL__RANK_DEPENDENT, &cm, cm.beta, NULL);
    CHECK_MSG(x == REDCOLL_ALGO_BINARY_TREE || x == REDCOLL_ALGO_LINEAR, "%zu: %s", m,
              redcoll_algo_name(x));
    x = redcoll__cost_select_dup(&a, REDCOLL__RANK_DEPENDENT, &cm, 0, NULL);
    CHECK_MSG(x != REDCOLL_ALGO_BINARY_TREE && x != REDCOLL_ALGO_LINEAR, "%zu: %s", m,
              redcoll_algo_name(x));
    /* Other collectives keep the full-duplex costs. */
    a.coll = REDCOLL_COLL_REDUCE_SCATTER_BLOCK;
    CHECK(redcoll__cost_dup(REDCOLL_ALGO_ELIMINATION, &a, &cm, cm.beta) ==
          redcoll__cost(REDCOLL_ALGO_ELIMINATION, &a, &cm));
  }
}

/* The setting on a communicator: the transport's finding (the mock: 0,
 * unshared), REDCOLL_RANKS_PER_CPU, the setter; AUTO follows it alike on
 * every rank. */
static void test_ranks_per_cpu_setting(void) {
  struct {
    const char *env;
    double set;
    int want_rc;
    double want;
  } cases[] = {
      {NULL, -1, REDCOLL_OK, 0},  {"3", -1, REDCOLL_OK, 3},       {"0.5", -1, REDCOLL_OK, 0.5},
      {"3", 1, REDCOLL_OK, 1},    {NULL, 4, REDCOLL_OK, 4},        {"lots", -1, REDCOLL_EINVAL, 0},
      {"-2", -1, REDCOLL_EINVAL, 0}, {"2 ", -1, REDCOLL_OK, 2},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    rpc_arg o;
    memset(&o, 0, sizeof o);
    o.set = cases[i].set;
    if (cases[i].env) setenv("REDCOLL_RANKS_PER_CPU", cases[i].env, 1);
    else unsetenv("REDCOLL_RANKS_PER_CPU");
    CHECK_INT(redcoll_mock_run(6, NULL, rpc_main, &o, NULL), REDCOLL_OK);
    for (int r = 0; r < 6; r++) {
      CHECK_MSG(o.rc[r] == cases[i].want_rc && o.got[r] == cases[i].want,
                "case %zu rank %d: %d %g", i, r, o.rc[r], o.got[r]);
      /* Alpha only, 6 ranks: linear (2 start-ups) once f > 1, else a
       * log-round algorithm (never linear's 10). */
      CHECK_MSG((o.algo[r] == REDCOLL_ALGO_LINEAR) == (cases[i].want > 1),
                "case %zu rank %d ran %s", i, r, redcoll_algo_name(o.algo[r]));
      CHECK_INT(o.algo[r], o.algo[0]);
    }
  }
  unsetenv("REDCOLL_RANKS_PER_CPU");
}

TEST_MAIN(TEST(test_shared_directions), TEST(test_segment_costs), TEST(test_choice_follows_inputs), TEST(test_ranks_per_cpu_costs), TEST(test_ranks_per_cpu_setting), TEST(test_formulas), TEST(test_same_choice), TEST(test_choice_respects_operator), TEST(test_settings), TEST(test_tuning_local), TEST(test_forcing_env))
