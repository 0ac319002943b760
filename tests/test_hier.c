/*
 * Two-level collectives: the hosts of a communicator (redcoll__topo_build)
 * on worked examples; every two-level collective on threads worlds that
 * pretend hosts (even, uneven, hosts of one rank, hosts whose ranks
 * interleave), forced and chosen by AUTO, checked element by element
 * against a sequential reduction in rank order (a non-commutative
 * operator), bitwise identical floating-point results on every rank, every
 * root; the same on a split of such a world (a map); AUTO's choice under a
 * slow network.
 */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "redcoll/hier.h"
#include "redcoll/mock.h"
#include "redcoll/transport.h"
#include "redcoll/threads.h"
#include "test.h"
#ifdef REDCOLL_TEST_TCP
#include <signal.h>

#include "tcp_runner.h"
#endif

/* ---- hosts ---------------------------------------------------------------- */

static void topo_examples(void) {
  redcoll__topo t;
  /* The example of topo.c. */
  const uint32_t h1[] = {7, 7, 3, 7, 3};
  CHECK_INT(redcoll__topo_build(h1, NULL, 5, 4, &t), REDCOLL_OK);
  CHECK_INT(t.hosts, 2);
  CHECK_INT(t.contiguous, 0);
  CHECK_INT(t.min_local, 2);
  CHECK_INT(t.max_local, 3);
  CHECK_INT(t.my_host, 1);
  CHECK_INT(t.my_local, 1);
  const int members[] = {0, 1, 3, 2, 4}, start[] = {0, 3, 5}, local[] = {0, 1, 0, 2, 1};
  for (int i = 0; i < 5; i++) CHECK_INT(t.members[i], members[i]);
  for (int i = 0; i < 3; i++) CHECK_INT(t.start[i], start[i]);
  for (int i = 0; i < 5; i++) CHECK_INT(t.local_of[i], local[i]);
  redcoll__topo_free(&t);
  /* Host-major, uneven: 5 + 3. */
  const uint32_t h2[] = {0, 0, 0, 0, 0, 1, 1, 1};
  CHECK_INT(redcoll__topo_build(h2, NULL, 8, 6, &t), REDCOLL_OK);
  CHECK_INT(t.hosts, 2);
  CHECK_INT(t.contiguous, 1);
  CHECK_INT(t.min_local, 3);
  CHECK_INT(t.max_local, 5);
  CHECK_INT(t.my_host, 1);
  CHECK_INT(t.my_local, 1);
  redcoll__topo_free(&t);
  /* Through a map: ranks 0..3 are transport ranks 4, 0, 5, 1 of hosts
   * {0,0,1,1,2,2}: hosts 2, 0, 2, 0 -> numbered 0, 1, 0, 1. */
  const uint32_t h3[] = {0, 0, 1, 1, 2, 2};
  const int map[] = {4, 0, 5, 1};
  CHECK_INT(redcoll__topo_build(h3, map, 4, 1, &t), REDCOLL_OK);
  CHECK_INT(t.hosts, 2);
  CHECK_INT(t.contiguous, 0);
  CHECK_INT(t.host_of[0], 0);
  CHECK_INT(t.host_of[1], 1);
  CHECK_INT(t.host_of[2], 0);
  CHECK_INT(t.host_of[3], 1);
  CHECK_INT(t.my_local, 0);
  redcoll__topo_free(&t);
  /* No hosts: every rank its own. */
  CHECK_INT(redcoll__topo_build(NULL, NULL, 3, 2, &t), REDCOLL_OK);
  CHECK_INT(t.hosts, 3);
  CHECK_INT(t.contiguous, 1);
  CHECK_INT(t.max_local, 1);
  CHECK_INT(t.my_host, 2);
  redcoll__topo_free(&t);
}

/* ---- collectives on worlds with hosts --------------------------------------- */

/* A non-commutative, associative operator: x -> m x + c modulo a prime. */
#define MOD 1000003ULL
typedef struct {
  uint64_t m, c;
} affine;

static affine compose(affine l, affine r) {
  return (affine){r.m * l.m % MOD, (r.m * l.c + r.c) % MOD};
}

static void affine_fn(void *out, const void *left, const void *right, size_t n, void *ctx) {
  (void)ctx;
  const affine *l = left, *r = right;
  affine *o = out;
  for (size_t i = 0; i < n; i++) o[i] = compose(l[i], r[i]);
}

static affine val(int rank, size_t i) {
  return (affine){(uint64_t)(rank * 7 + (int)i % 13) % 1000 + 2, (uint64_t)(rank * 3 + i) % MOD};
}

/* A double whose sum depends on the order: large and tiny magnitudes. */
static double fval(int rank, size_t i) {
  return (rank % 3 == 0 ? 1e16 : 1.0) * (1.0 + (double)((rank * 31 + (int)i) % 17) / 7.0) *
         (rank % 2 ? -1 : 1);
}

#define MAXP 12
#define MAXN 40

typedef struct {
  redcoll_algo algo;     /* forced, or AUTO */
  int noncomm;           /* the affine operator may be used (hosts in order) */
  int split;             /* run on the split {odd ranks} + {even ranks} */
  double fsum[MAXP][MAXN]; /* each rank's float allreduce result */
  int status[MAXP];
} world_arg;

/* The sequential fold of ranks lo..hi-1 (in the order of members). */
static affine fold(const int *members, int n, size_t i) {
  affine a = val(members[0], i);
  for (int k = 1; k < n; k++) a = compose(a, val(members[k], i));
  return a;
}

/* Every two-level collective on c (whose rank k is world rank members[k])
 * against its sequential result; returns the number of wrong results. */
static int exercise(redcoll_comm *c, const int *members, world_arg *w, int wr, redcoll_op *op) {
  int p = redcoll_comm_size(c), r = redcoll_comm_rank(c), bad = 0, rc;
  const redcoll_coll colls[] = {REDCOLL_COLL_ALLREDUCE, REDCOLL_COLL_REDUCE, REDCOLL_COLL_BCAST,
                                REDCOLL_COLL_BARRIER,   REDCOLL_COLL_ALLGATHER,
                                REDCOLL_COLL_REDUCE_SCATTER_BLOCK, REDCOLL_COLL_REDUCE_SCATTER};
  for (size_t k = 0; k < sizeof colls / sizeof colls[0]; k++)
    if (redcoll_algo_is_supported(colls[k], w->algo) &&
        (rc = redcoll_comm_set_algorithm(c, colls[k], w->algo)) != REDCOLL_OK)
      return 1000 + rc;
  const size_t sizes[] = {1, 3, MAXN};
  for (size_t si = 0; si < 3; si++) {
    size_t n = sizes[si];
    affine in[MAXP * MAXN], out[MAXP * MAXN];
    if (w->noncomm) {
      for (size_t i = 0; i < n; i++) in[i] = val(wr, i);
      bad += redcoll_allreduce(c, in, out, n, REDCOLL_CUSTOM, op) != REDCOLL_OK;
      for (size_t i = 0; i < n; i++) {
        affine e = fold(members, p, i);
        bad += out[i].m != e.m || out[i].c != e.c;
      }
      /* in place */
      bad += redcoll_allreduce(c, REDCOLL_IN_PLACE, in, n, REDCOLL_CUSTOM, op) != REDCOLL_OK;
      for (size_t i = 0; i < n; i++) bad += memcmp(&in[i], &out[i], sizeof in[i]) != 0;
      for (int root = 0; root < p; root++) {
        for (size_t i = 0; i < n; i++) in[i] = val(wr, i);
        memset(out, 0, sizeof out);
        bad += redcoll_reduce(c, in, out, n, REDCOLL_CUSTOM, op, root) != REDCOLL_OK;
        if (r == root)
          for (size_t i = 0; i < n; i++) {
            affine e = fold(members, p, i);
            bad += out[i].m != e.m || out[i].c != e.c;
          }
      }
      /* reduce_scatter_block: block k of rank r's input is val(r, k*n + i) */
      for (int b = 0; b < p; b++)
        for (size_t i = 0; i < n; i++) in[(size_t)b * n + i] = val(wr, (size_t)b * n + i);
      bad += redcoll_reduce_scatter_block(c, in, out, n, REDCOLL_CUSTOM, op) != REDCOLL_OK;
      for (size_t i = 0; i < n; i++) {
        affine e = fold(members, p, (size_t)r * n + i);
        bad += out[i].m != e.m || out[i].c != e.c;
      }
      /* reduce_scatter with counts r % 3 (some empty) */
      size_t counts[MAXP], tot = 0, at = 0;
      for (int b = 0; b < p; b++) {
        counts[b] = (size_t)((b + (int)n) % 3);
        if (b < r) at += counts[b];
        tot += counts[b];
      }
      for (size_t i = 0; i < tot; i++) in[i] = val(wr, i);
      bad += redcoll_reduce_scatter(c, in, out, counts, REDCOLL_CUSTOM, op) != REDCOLL_OK;
      for (size_t i = 0; i < counts[r]; i++) {
        affine e = fold(members, p, at + i);
        bad += out[i].m != e.m || out[i].c != e.c;
      }
    }
    /* floats: the same bits on every rank (compared after the run) */
    double f[MAXN], g[MAXN];
    for (size_t i = 0; i < n; i++) f[i] = fval(wr, i);
    bad += redcoll_allreduce(c, f, g, n, REDCOLL_FLOAT64, REDCOLL_SUM) != REDCOLL_OK;
    if (n == MAXN && !w->split) memcpy(w->fsum[wr], g, sizeof g);
    /* integers: exact sums, every root */
    int64_t x[MAXN], y[MAXN];
    for (int root = 0; root < p; root++) {
      for (size_t i = 0; i < n; i++) x[i] = wr * 1000 + (int64_t)i;
      bad += redcoll_reduce(c, x, y, n, REDCOLL_INT64, REDCOLL_SUM, root) != REDCOLL_OK;
      if (r == root)
        for (size_t i = 0; i < n; i++) {
          int64_t e = 0;
          for (int k = 0; k < p; k++) e += members[k] * 1000 + (int64_t)i;
          bad += y[i] != e;
        }
      for (size_t i = 0; i < n; i++) x[i] = r == root ? (int64_t)(root * 77 + (int)i) : -1;
      bad += redcoll_bcast(c, x, n, REDCOLL_INT64, root) != REDCOLL_OK;
      for (size_t i = 0; i < n; i++) bad += x[i] != (int64_t)(root * 77 + (int)i);
    }
    bad += redcoll_barrier(c) != REDCOLL_OK;
    int32_t blk[MAXN], all[MAXP * MAXN];
    for (size_t i = 0; i < n; i++) blk[i] = wr * 100 + (int32_t)i;
    bad += redcoll_allgather(c, blk, all, n, REDCOLL_INT32) != REDCOLL_OK;
    for (int k = 0; k < p; k++)
      for (size_t i = 0; i < n; i++) bad += all[(size_t)k * n + i] != members[k] * 100 + (int32_t)i;
    /* allgather in place */
    memset(all, 0xff, sizeof all);
    memcpy(all + (size_t)r * n, blk, n * sizeof *blk);
    bad += redcoll_allgather(c, REDCOLL_IN_PLACE, all, n, REDCOLL_INT32) != REDCOLL_OK;
    for (int k = 0; k < p; k++)
      for (size_t i = 0; i < n; i++) bad += all[(size_t)k * n + i] != members[k] * 100 + (int32_t)i;
  }
  if (w->algo == REDCOLL_ALGO_TWO_LEVEL)
    bad += redcoll_comm_last_algorithm(c) != REDCOLL_ALGO_TWO_LEVEL;
  return bad;
}

static int world_rank(redcoll_comm *c, void *arg) {
  world_arg *w = arg;
  int wr = redcoll_comm_rank(c), p = redcoll_comm_size(c), bad;
  redcoll_op *op = NULL;
  if (redcoll_op_create(affine_fn, sizeof(affine), 0, NULL, &op) != REDCOLL_OK) return REDCOLL_ENOMEM;
  int members[MAXP];
  if (!w->split) {
    for (int k = 0; k < p; k++) members[k] = k;
    bad = exercise(c, members, w, wr, op);
  } else {
    redcoll_comm *half = NULL;
    int rc = redcoll_comm_split(c, wr % 2, wr, &half);
    if (rc != REDCOLL_OK) {
      redcoll_op_destroy(op);
      return rc;
    }
    int n = 0;
    for (int k = wr % 2; k < p; k += 2) members[n++] = k;
    bad = exercise(half, members, w, wr, op);
    redcoll_comm_destroy(half);
  }
  redcoll_op_destroy(op);
  w->status[wr] = bad;
  return bad ? REDCOLL_EINVAL : REDCOLL_OK;
}

/* One world of p ranks on the given hosts (NULL: ranks_per_host rph). */
static void run_world(int p, const uint32_t *hosts, int rph, redcoll_algo algo, int noncomm,
                      int split) {
  redcoll_threads_config cfg;
  redcoll_threads_config_init(&cfg);
  cfg.hosts = hosts;
  cfg.ranks_per_host = rph;
  cfg.wait_timeout_ms = 60000;
  world_arg *w = calloc(1, sizeof *w);
  w->algo = algo;
  w->noncomm = noncomm;
  w->split = split;
  int rc = redcoll_threads_run_config(p, &cfg, world_rank, w, NULL);
  CHECK_MSG(rc == REDCOLL_OK, "p %d rph %d algo %s split %d: %s", p, rph, redcoll_algo_name(algo),
            split, redcoll_strerror(rc));
  for (int r = 0; r < p; r++)
    CHECK_MSG(w->status[r] == 0, "p %d rph %d algo %s split %d: rank %d: %d wrong", p, rph,
              redcoll_algo_name(algo), split, r, w->status[r]);
  if (!split)
    for (int r = 1; r < p; r++)
      CHECK_MSG(memcmp(w->fsum[r], w->fsum[0], sizeof w->fsum[0]) == 0,
                "p %d: rank %d's float sum differs from rank 0's", p, r);
  free(w);
}

/* Each world with one slice and with as many as the fewest ranks on a
 * host (allreduce and reduce). */
static void both_slicings(int p, const uint32_t *hosts, int rph, redcoll_algo algo, int split) {
  for (int s = 1; s <= 2; s++) {
    redcoll__two_level_slices_forced = s;
    run_world(p, hosts, rph, algo, 1, split);
  }
  redcoll__two_level_slices_forced = 0;
}

static void even_hosts(void) {
  both_slicings(8, NULL, 4, REDCOLL_ALGO_TWO_LEVEL, 0);  /* 2 x 4 */
  both_slicings(9, NULL, 3, REDCOLL_ALGO_TWO_LEVEL, 0);  /* 3 x 3 */
  both_slicings(12, NULL, 4, REDCOLL_ALGO_TWO_LEVEL, 0); /* 3 x 4 */
  run_world(6, NULL, 2, REDCOLL_ALGO_AUTO, 1, 0);
}

static void uneven_hosts(void) {
  const uint32_t five_three[] = {0, 0, 0, 0, 0, 1, 1, 1};
  both_slicings(8, five_three, 0, REDCOLL_ALGO_TWO_LEVEL, 0);
  const uint32_t singles[] = {4, 4, 9, 2, 2, 2, 8};  /* 2 + 1 + 3 + 1 */
  both_slicings(7, singles, 0, REDCOLL_ALGO_TWO_LEVEL, 0);
  both_slicings(7, NULL, 3, REDCOLL_ALGO_TWO_LEVEL, 0); /* 3 + 3 + 1 */
  const uint32_t two_two_three[] = {5, 5, 6, 6, 7, 7, 7};
  both_slicings(7, two_two_three, 0, REDCOLL_ALGO_TWO_LEVEL, 0);
}

/* Hosts whose ranks interleave ({0,2,4} and {1,3,5}): commutative
 * reductions, bcast and barrier work two-level; allgather and a
 * non-commutative reduction are refused on every rank alike. */
static int interleaved_rank(redcoll_comm *c, void *arg) {
  int *st = arg, r = redcoll_comm_rank(c), p = redcoll_comm_size(c), bad = 0;
  for (int k = 0; k < REDCOLL_COLL_COUNT; k++)
    if (redcoll_algo_is_supported((redcoll_coll)k, REDCOLL_ALGO_TWO_LEVEL))
      redcoll_comm_set_algorithm(c, (redcoll_coll)k, REDCOLL_ALGO_TWO_LEVEL);
  int64_t x[5], y[5];
  for (int i = 0; i < 5; i++) x[i] = r * 10 + i;
  bad += redcoll_allreduce(c, x, y, 5, REDCOLL_INT64, REDCOLL_SUM) != REDCOLL_OK;
  for (int i = 0; i < 5; i++) bad += y[i] != (int64_t)(10 * p * (p - 1) / 2 + p * i);
  for (int root = 0; root < p; root++) {
    bad += redcoll_reduce(c, x, y, 5, REDCOLL_INT64, REDCOLL_MAX, root) != REDCOLL_OK;
    if (r == root)
      for (int i = 0; i < 5; i++) bad += y[i] != (int64_t)(10 * (p - 1) + i);
    int64_t b[2] = {r == root ? root : -1, r == root ? 2 * root : -1};
    bad += redcoll_bcast(c, b, 2, REDCOLL_INT64, root) != REDCOLL_OK;
    bad += b[0] != root || b[1] != 2 * root;
  }
  bad += redcoll_barrier(c) != REDCOLL_OK;
  bad += redcoll_comm_last_algorithm(c) != REDCOLL_ALGO_TWO_LEVEL;
  int32_t one = r, all[8];
  bad += redcoll_allgather(c, &one, all, 1, REDCOLL_INT32) != REDCOLL_ENOTSUP;
  st[r] = bad;
  return REDCOLL_OK;
}

static void interleaved_hosts(void) {
  const uint32_t rr[] = {0, 1, 0, 1, 0, 1};
  redcoll_threads_config cfg;
  redcoll_threads_config_init(&cfg);
  cfg.hosts = rr;
  cfg.wait_timeout_ms = 60000;
  int st[6] = {-1, -1, -1, -1, -1, -1};
  CHECK_INT(redcoll_threads_run_config(6, &cfg, interleaved_rank, st, NULL), REDCOLL_OK);
  for (int r = 0; r < 6; r++) CHECK_INT(st[r], 0);
}

static void split_worlds(void) {
  /* {odd}, {even} of 4 hosts x 3: each half has ranks on every host,
   * interleaved with the other half but in host order within it. */
  both_slicings(12, NULL, 3, REDCOLL_ALGO_TWO_LEVEL, 1);
}

/* ---- AUTO's choice ----------------------------------------------------------- */

typedef struct {
  redcoll_algo big, small, flat;
} choice_arg;

static int choice_rank(redcoll_comm *c, void *arg) {
  choice_arg *a = arg;
  /* A network 100 times slower than the host. */
  redcoll_comm_set_cost_model(c, 5e-5, 1e-8, 1e-10);
  double *x = calloc(1 << 16, sizeof *x), *y = calloc(1 << 16, sizeof *y);
  int rc = x != NULL && y != NULL ? redcoll_allreduce(c, x, y, 1 << 16, REDCOLL_FLOAT64, REDCOLL_SUM)
                                  : REDCOLL_ENOMEM;
  if (rc == REDCOLL_OK && redcoll_comm_rank(c) == 0) a->big = redcoll_comm_last_algorithm(c);
  if (rc == REDCOLL_OK) rc = redcoll_allreduce(c, x, y, 1, REDCOLL_FLOAT64, REDCOLL_SUM);
  free(x);
  free(y);
  if (rc != REDCOLL_OK) return rc;
  if (redcoll_comm_rank(c) == 0) a->small = redcoll_comm_last_algorithm(c);
  return REDCOLL_OK;
}

static int flat_rank(redcoll_comm *c, void *arg) {
  choice_arg *a = arg;
  redcoll_comm_set_cost_model(c, 5e-5, 1e-8, 1e-10);
  double x[4] = {0}, y[4];
  int rc = redcoll_allreduce(c, x, y, 4, REDCOLL_FLOAT64, REDCOLL_SUM);
  if (redcoll_comm_rank(c) == 0) a->flat = redcoll_comm_last_algorithm(c);
  return rc;
}

static void auto_choice(void) {
  redcoll_threads_config cfg;
  redcoll_threads_config_init(&cfg);
  cfg.ranks_per_host = 4;
  choice_arg a = {0, 0, 0};
  CHECK_INT(redcoll_threads_run_config(8, &cfg, choice_rank, &a, NULL), REDCOLL_OK);
  CHECK_INT(a.big, REDCOLL_ALGO_TWO_LEVEL);
  /* One double: recursive doubling's first 2 rounds stay inside a host
   * (a tenth of alpha each), its third crosses: 2 x 5 + 50 us against
   * two_level's 2 + 1 + 2 rounds, 70 us.  The simulator with this model
   * (redcoll-sim --p 8 --ranks-per-host 4, alpha 5e-5, local 5e-6):
   * 60.3 us against 70.1. */
  CHECK_INT(a.small, REDCOLL_ALGO_RECURSIVE_DOUBLING);
  cfg.ranks_per_host = 0;
  CHECK_INT(redcoll_threads_run_config(8, &cfg, flat_rank, &a, NULL), REDCOLL_OK);
  CHECK(a.flat != REDCOLL_ALGO_TWO_LEVEL);
}

/* AUTO in the simulator, 4 hosts x 3 ranks, alpha 1, local_alpha 0.1, with
 * f ranks per CPU (0: not set).  One double (its bytes cost next to
 * nothing, beta 1e-3 per byte):
 * f <= 1: flat needs 4 rounds of alpha (4.096 with the bytes at beta x 3,
 * the ranks of a host sharing its link); two_level 2 rounds inside a host
 * (reduce), 2 between hosts, 2 inside (bcast): 0.2 + 2 + 0.2 = 2.4, and
 * wins.
 * f = 2: every round waits for the other rank of its CPU, whose turn costs
 * alpha wherever the message goes: a round inside a host costs 0.1 + 1 =
 * 1.1, one between hosts alpha f = 2.  Flat: linear, whose start-ups
 * overlap with ranks sharing CPUs, 2 start-ups, 4 (and 0.53 for the bytes,
 * serial at the root); two_level: a linear reduce (1.1), an allreduce
 * between hosts (4), a bcast (2.2): 7.3, and flat wins (the model before
 * it charged turns inside a host local_alpha: 0.2 + 4 + 0.4, two_level).
 * f = 8: linear 16.53 against 7.1 + 16 + 14.2 = 37.3: flat.
 * 4096 doubles with beta 1e-3 (1e-5 inside a host) at any f: the bytes
 * decide, flat priced with beta x 3 and two_level sending 2 (H-1)/H m out
 * of a host in 3 slices: two_level (53 against 196 at f = 1). */
typedef struct {
  double f;
  redcoll_algo small, big;
  const char *tuning; /* a tuning file to load, or NULL */
} cpu_arg;

static int cpu_rank(redcoll_comm *c, void *arg) {
  cpu_arg *a = arg;
  if (a->f > 0 && redcoll_comm_set_ranks_per_cpu(c, a->f) != REDCOLL_OK) return REDCOLL_EINVAL;
  if (a->tuning != NULL && redcoll_comm_load_tuning(c, a->tuning) != REDCOLL_OK)
    return REDCOLL_EINVAL;
  double *x = calloc(4096, sizeof *x), *y = calloc(4096, sizeof *y);
  int rc = x != NULL && y != NULL ? redcoll_allreduce(c, x, y, 1, REDCOLL_FLOAT64, REDCOLL_SUM)
                                  : REDCOLL_ENOMEM;
  if (rc == REDCOLL_OK && redcoll_comm_rank(c) == 0) a->small = redcoll_comm_last_algorithm(c);
  if (rc == REDCOLL_OK) rc = redcoll_allreduce(c, x, y, 4096, REDCOLL_FLOAT64, REDCOLL_SUM);
  if (rc == REDCOLL_OK && redcoll_comm_rank(c) == 0) a->big = redcoll_comm_last_algorithm(c);
  free(x);
  free(y);
  return rc;
}

/* The simulator with hosts of T consecutive ranks: 1 per message and 1e-3
 * per byte between hosts, 0.1 and 1e-5 inside one. */
static redcoll_mock_config hosts_cfg(uint32_t T) {
  redcoll_mock_config cfg;
  redcoll_mock_config_init(&cfg);
  cfg.ranks_per_host = T;
  cfg.alpha = 1;
  cfg.beta = 1e-3;
  cfg.local_alpha = 0.1;
  cfg.local_beta = 1e-5;
  return cfg;
}

static void auto_cpus(void) {
  const struct {
    double f;
    redcoll_algo small, big;
  } want[] = {{0, REDCOLL_ALGO_TWO_LEVEL, REDCOLL_ALGO_TWO_LEVEL},
              {1, REDCOLL_ALGO_TWO_LEVEL, REDCOLL_ALGO_TWO_LEVEL},
              {2, REDCOLL_ALGO_LINEAR, REDCOLL_ALGO_TWO_LEVEL},
              {8, REDCOLL_ALGO_LINEAR, REDCOLL_ALGO_TWO_LEVEL}};
  for (size_t k = 0; k < sizeof want / sizeof want[0]; k++) {
    redcoll_mock_config cfg = hosts_cfg(3);
    cpu_arg a = {want[k].f, REDCOLL_ALGO_AUTO, REDCOLL_ALGO_AUTO, NULL};
    CHECK_INT(redcoll_mock_run(12, &cfg, cpu_rank, &a, NULL), REDCOLL_OK);
    CHECK_MSG(a.small == want[k].small && a.big == want[k].big, "f %g: %s and %s", want[k].f,
              redcoll_algo_name(a.small), redcoll_algo_name(a.big));
  }
  /* A tuning file's intra-host alpha and beta reach the two-level model:
   * the same network and f <= 1, but 1.5 per message inside a host makes
   * two_level 1.5 + 1.5 + 2 + 1.5 + 1.5 = 8 for one double, and the best
   * flat algorithm (4 rounds; elimination, the first of those in the order
   * that breaks ties) wins; 4096 doubles stay
   * two_level. */
  char path[] = "/tmp/redcoll-hier-tuning-XXXXXX";
  int fd = mkstemp(path);
  CHECK(fd >= 0);
  if (fd < 0) return;
  FILE *f = fdopen(fd, "w");
  fprintf(f, "mock 1 0.001 0 1.5 1e-05\n");
  fclose(f);
  redcoll_mock_config cfg = hosts_cfg(3);
  cpu_arg a = {0, REDCOLL_ALGO_AUTO, REDCOLL_ALGO_AUTO, path};
  CHECK_INT(redcoll_mock_run(12, &cfg, cpu_rank, &a, NULL), REDCOLL_OK);
  unlink(path);
  CHECK_MSG(a.small == REDCOLL_ALGO_ELIMINATION_RINGS && a.big == REDCOLL_ALGO_TWO_LEVEL,
            "tuning file: %s and %s", redcoll_algo_name(a.small), redcoll_algo_name(a.big));
}

/* 4 hosts x 4 ranks (alpha 1, beta 1e-3; 0.1 and 1e-5 inside a host):
 * recursive doubling and halving-doubling pair ranks at distances 1, 2, 4,
 * 8, so their first two rounds stay inside a host.  AUTO prices them by
 * their rounds on each level, and picks them where the model says so: one
 * double, recursive doubling, 0.2 + 2 (and the bytes) against two_level's
 * 2.4; 4096 doubles, halving-doubling, which is two_level's schedule with
 * 4 slices, a tie (54.04 predicted for both), which stays flat.  Each
 * choice is no slower in the simulator than two_level, the old choice
 * (flat priced with beta x 4 for every byte): 2.240 against 2.416, and
 * 51.04 for both. */
typedef struct {
  size_t count;
  redcoll_algo algo, chosen;
} bfly_arg;

static int bfly_rank(redcoll_comm *c, void *arg) {
  bfly_arg *a = arg;
  double *x = calloc(a->count, sizeof *x), *y = calloc(a->count, sizeof *y);
  int rc = x != NULL && y != NULL ? REDCOLL_OK : REDCOLL_ENOMEM;
  if (rc == REDCOLL_OK) rc = redcoll_comm_set_algorithm(c, REDCOLL_COLL_ALLREDUCE, a->algo);
  if (rc == REDCOLL_OK) rc = redcoll_allreduce(c, x, y, a->count, REDCOLL_FLOAT64, REDCOLL_SUM);
  if (rc == REDCOLL_OK && redcoll_comm_rank(c) == 0) a->chosen = redcoll_comm_last_algorithm(c);
  free(x);
  free(y);
  return rc;
}

static double bfly_time(size_t count, redcoll_algo algo, redcoll_algo *chosen) {
  redcoll_mock_config cfg = hosts_cfg(4);
  redcoll_mock_stats st[16];
  bfly_arg a = {count, algo, REDCOLL_ALGO_AUTO};
  CHECK_INT(redcoll_mock_run(16, &cfg, bfly_rank, &a, st), REDCOLL_OK);
  double t = 0;
  for (int r = 0; r < 16; r++) t = st[r].time > t ? st[r].time : t;
  *chosen = a.chosen;
  return t;
}

static void auto_butterflies(void) {
  const struct {
    size_t count;
    redcoll_algo want;
  } cases[] = {{1, REDCOLL_ALGO_RECURSIVE_DOUBLING}, {4096, REDCOLL_ALGO_HALVING_DOUBLING}};
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    redcoll_algo chosen, ran;
    double t_auto = bfly_time(cases[k].count, REDCOLL_ALGO_AUTO, &chosen);
    double t_two = bfly_time(cases[k].count, REDCOLL_ALGO_TWO_LEVEL, &ran);
    CHECK_MSG(chosen == cases[k].want, "%zu doubles: %s", cases[k].count, redcoll_algo_name(chosen));
    CHECK_INT(ran, REDCOLL_ALGO_TWO_LEVEL);
    CHECK_MSG(t_auto <= t_two, "%zu doubles: %s %g, two_level %g", cases[k].count,
              redcoll_algo_name(chosen), t_auto, t_two);
  }
}

/* ---- the simulator with hosts: the two-level claims --------------------------- */

typedef struct {
  size_t count;
} sim_arg;

static int sim_rank(redcoll_comm *c, void *arg) {
  sim_arg *a = arg;
  float *x = calloc(a->count, sizeof *x), *y = calloc(a->count, sizeof *y);
  if (x == NULL || y == NULL) return REDCOLL_ENOMEM;
  for (size_t i = 0; i < a->count; i++) x[i] = (float)(redcoll_comm_rank(c) + (int)(i % 7));
  redcoll_comm_set_algorithm(c, REDCOLL_COLL_ALLREDUCE, REDCOLL_ALGO_TWO_LEVEL);
  int rc = redcoll_allreduce(c, x, y, a->count, REDCOLL_FLOAT32, REDCOLL_SUM);
  int p = redcoll_comm_size(c);
  for (size_t i = 0; i < a->count && rc == REDCOLL_OK; i++)
    if (y[i] != (float)(p * (p - 1) / 2 + p * (int)(i % 7))) rc = REDCOLL_EINVAL;
  free(x);
  free(y);
  return rc;
}

/* H hosts x T ranks in the simulator (a host's link shared by its ranks):
 * a large allreduce sends exactly 2 (H-1)/H m bytes out of the busiest
 * host, and a small one takes 2 ceil(lg T) + ceil(lg H) rounds. */
static void sim_claims(void) {
  const int cases[][3] = {{12, 4, 49152}, {20, 5, 61440}, {16, 4, 65536}, {9, 3, 36864}};
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    int p = cases[k][0], T = cases[k][1], H = p / T;
    redcoll_mock_config cfg;
    redcoll_mock_config_init(&cfg);
    cfg.ranks_per_host = (uint32_t)T;
    cfg.alpha = 1e-5;
    cfg.beta = 3.2e-8;
    cfg.gamma = 1e-10;
    cfg.local_alpha = 1e-6;
    cfg.local_beta = 1e-10;
    redcoll_mock_stats *st = calloc((size_t)p, sizeof *st);
    sim_arg a = {(size_t)cases[k][2]};
    CHECK_INT(redcoll_mock_run(p, &cfg, sim_rank, &a, st), REDCOLL_OK);
    uint64_t out[8] = {0}, most = 0, m = a.count * sizeof(float);
    for (int r = 0; r < p; r++) out[r / T] += st[r].bytes_sent_host;
    for (int h = 0; h < H; h++) most = out[h] > most ? out[h] : most;
    CHECK_MSG(most == 2 * (uint64_t)(H - 1) * m / (uint64_t)H, "%d x %d: %llu bytes out of a host",
              H, T, (unsigned long long)most);
    /* rounds */
    cfg.alpha = cfg.local_alpha = 1;
    cfg.beta = cfg.gamma = cfg.local_beta = 0;
    a.count = 1;
    CHECK_INT(redcoll_mock_run(p, &cfg, sim_rank, &a, st), REDCOLL_OK);
    double rounds = 0;
    for (int r = 0; r < p; r++) rounds = st[r].time > rounds ? st[r].time : rounds;
    CHECK_DBL(rounds, 2 * redcoll__ceil_log2(T) + redcoll__ceil_log2(H));
    free(st);
  }
}

/* ---- hosts x threads: redcoll_hier_run ---------------------------------------- */

/* In-process worlds: procs is a threads world of one rank (H = 1). */
static int one_proc(redcoll_comm *procs, void *arg) {
  return redcoll_hier_run(procs, 4, world_rank, arg);
}

static void hier_one_process(void) {
  world_arg *w = calloc(1, sizeof *w);
  w->algo = REDCOLL_ALGO_AUTO;
  w->noncomm = 1;
  CHECK_INT(redcoll_threads_run(1, one_proc, w), REDCOLL_OK);
  for (int r = 0; r < 4; r++) CHECK_INT(w->status[r], 0);
  free(w);
  /* arguments */
  CHECK_INT(redcoll_hier_run(NULL, 2, world_rank, NULL), REDCOLL_EINVAL);
}

/* Processes stood in for by a threads world of H ranks, each running T
 * threads: every collective with two_level, AUTO and flat algorithms
 * forced (ring, recursive doubling, elimination, linear); then the same
 * on a split of a hier world. */
typedef struct {
  int T;
  world_arg w;
} procs_arg;

static int threads_proc(redcoll_comm *procs, void *arg) {
  procs_arg *a = arg;
  return redcoll_hier_run(procs, a->T, world_rank, &a->w);
}

static void hier_over_threads(void) {
  const redcoll_algo algos[] = {REDCOLL_ALGO_TWO_LEVEL, REDCOLL_ALGO_AUTO, REDCOLL_ALGO_RING,
                                REDCOLL_ALGO_RECURSIVE_DOUBLING, REDCOLL_ALGO_ELIMINATION,
                                REDCOLL_ALGO_LINEAR};
  const int shapes[][2] = {{2, 3}, {3, 2}, {3, 3}};
  for (size_t s = 0; s < 3; s++)
    for (size_t k = 0; k < sizeof algos / sizeof algos[0]; k++) {
      procs_arg *a = calloc(1, sizeof *a);
      int H = shapes[s][0];
      a->T = shapes[s][1];
      a->w.algo = algos[k];
      /* ring reorders operands: commutative operators only */
      a->w.noncomm = redcoll_algo_is_rank_ordered(REDCOLL_COLL_ALLREDUCE, algos[k]);
      redcoll_threads_config cfg;
      redcoll_threads_config_init(&cfg);
      cfg.wait_timeout_ms = 60000;
      int rc = redcoll_threads_run_config(H, &cfg, threads_proc, a, NULL);
      CHECK_MSG(rc == REDCOLL_OK, "%d x %d %s: %s", H, a->T, redcoll_algo_name(algos[k]),
                redcoll_strerror(rc));
      for (int r = 0; r < H * a->T; r++) {
        CHECK_MSG(a->w.status[r] == 0, "%d x %d %s: rank %d: %d wrong", H, a->T,
                  redcoll_algo_name(algos[k]), r, a->w.status[r]);
        CHECK(memcmp(a->w.fsum[r], a->w.fsum[0], sizeof a->w.fsum[0]) == 0);
      }
      free(a);
    }
  /* a split of a hier world (odd and even ranks: hosts of 1 and 2 ranks) */
  procs_arg *a = calloc(1, sizeof *a);
  a->T = 3;
  a->w.algo = REDCOLL_ALGO_TWO_LEVEL;
  a->w.noncomm = 1;
  a->w.split = 1;
  CHECK_INT(redcoll_threads_run(2, threads_proc, a), REDCOLL_OK);
  for (int r = 0; r < 6; r++) CHECK_INT(a->w.status[r], 0);
  free(a);
}

/* Two threads of each rank, one on the world and one on a dup, at once:
 * every exchange of a 2-process world has both sides in the other process,
 * so both threads need a partner at the same time. */
typedef struct {
  redcoll_comm *c;
  int bad, rc;
} dup_job;

static void *dup_loop(void *p) {
  dup_job *j = p;
  for (int i = 0; i < 300 && j->rc == REDCOLL_OK; i++) {
    double v[64], r[64];
    for (int k = 0; k < 64; k++) v[k] = redcoll_comm_rank(j->c) + 1 + k;
    j->rc = redcoll_allreduce(j->c, v, r, 64, REDCOLL_FLOAT64, REDCOLL_SUM);
    for (int k = 0; k < 64 && j->rc == REDCOLL_OK; k++) j->bad += r[k] != 3.0 + 2 * k;
  }
  return NULL;
}

static int dup_world(redcoll_comm *w, void *arg) {
  int *bad = arg;
  redcoll_comm *d = NULL;
  int rc = redcoll_comm_dup(w, &d);
  if (rc != REDCOLL_OK) return rc;
  dup_job a = {w, 0, REDCOLL_OK}, b = {d, 0, REDCOLL_OK};
  pthread_t th;
  if (pthread_create(&th, NULL, dup_loop, &b) != 0) b.rc = REDCOLL_ENOMEM;
  else {
    dup_loop(&a);
    pthread_join(th, NULL);
  }
  redcoll_comm_destroy(d);
  __atomic_add_fetch(bad, a.bad + b.bad, __ATOMIC_RELAXED);
  return a.rc != REDCOLL_OK ? a.rc : b.rc;
}

static int dup_proc(redcoll_comm *procs, void *arg) {
  return redcoll_hier_run(procs, 1, dup_world, arg);
}

static void hier_dups_at_once(void) {
  int bad = 0;
  CHECK_INT(redcoll_threads_run(2, dup_proc, &bad), REDCOLL_OK);
  CHECK_INT(bad, 0);
}

/* A procs transport without channels and threads, with more than one
 * rank: refused before anything is sent. */
static int no_channels_send(void *impl, int dst, uint64_t tag, const void *buf, size_t len) {
  (void)impl, (void)dst, (void)tag, (void)buf, (void)len;
  return REDCOLL_ETRANSPORT;
}
static int no_channels_recv(void *impl, int src, uint64_t tag, void *buf, size_t len) {
  (void)impl, (void)src, (void)tag, (void)buf, (void)len;
  return REDCOLL_ETRANSPORT;
}
static int no_channels_sendrecv(void *impl, int dst, uint64_t stag, const void *sbuf, size_t slen,
                                int src, uint64_t rtag, void *rbuf, size_t rlen) {
  (void)impl, (void)dst, (void)stag, (void)sbuf, (void)slen, (void)src, (void)rtag, (void)rbuf,
      (void)rlen;
  return REDCOLL_ETRANSPORT;
}
static void no_channels_destroy(void *impl) { (void)impl; }

static void hier_refused(void) {
  static const redcoll_transport_ops v1 = {.version = 1,
                                           .send = no_channels_send,
                                           .recv = no_channels_recv,
                                           .sendrecv = no_channels_sendrecv,
                                           .destroy = no_channels_destroy};
  redcoll_comm *c = NULL;
  CHECK_INT(redcoll_comm_create(&v1, NULL, 0, 2, &c), REDCOLL_OK);
  CHECK_INT(redcoll_hier_run(c, 2, world_rank, NULL), REDCOLL_ENOTSUP);
  CHECK_INT(redcoll_hier_run(c, 0, world_rank, NULL), REDCOLL_EINVAL);
  CHECK_INT(redcoll_hier_run(c, REDCOLL_HIER_MAX_THREADS + 1, world_rank, NULL), REDCOLL_EINVAL);
  redcoll_comm_destroy(c);
}

#ifdef REDCOLL_TEST_TCP
#define TCP_T 3

typedef struct {
  world_arg w[2];          /* two_level forced (two slicings), AUTO */
  int killed;              /* the process that dies in tcp_kill */
  int errors[8][TCP_T];    /* what each thread of a surviving process got */
} tcp_arg;

static int tcp_proc(redcoll_comm *procs, void *arg) {
  tcp_arg *a = arg;
  int rc = REDCOLL_OK;
  for (int s = 1; s <= 2 && rc == REDCOLL_OK; s++) {
    redcoll__two_level_slices_forced = s;
    rc = redcoll_hier_run(procs, TCP_T, world_rank, &a->w[0]);
  }
  redcoll__two_level_slices_forced = 0;
  if (rc == REDCOLL_OK) rc = redcoll_hier_run(procs, TCP_T, world_rank, &a->w[1]);
  return rc;
}

/* 3 processes x 3 threads over loopback TCP: every collective, forced and
 * AUTO, checked; the same bits on every rank. */
static void tcp_hosts_threads(void) {
  tcp_arg *a = tcp_run_shared(sizeof *a);
  a->w[0].algo = REDCOLL_ALGO_TWO_LEVEL;
  a->w[0].noncomm = a->w[1].noncomm = 1;
  a->w[1].algo = REDCOLL_ALGO_AUTO;
  CHECK_INT(tcp_run(3, tcp_proc, a), REDCOLL_OK);
  for (int k = 0; k < 2; k++)
    for (int r = 0; r < 3 * TCP_T; r++) {
      CHECK_INT(a->w[k].status[r], 0);
      CHECK(memcmp(a->w[k].fsum[r], a->w[k].fsum[0], sizeof a->w[k].fsum[0]) == 0);
    }
  munmap(a, sizeof *a);
}

/* Allreduces of 1 MiB until the killed process dies mid-way. */
static int kill_rank(redcoll_comm *world, void *arg) {
  tcp_arg *a = arg;
  static __thread double x[1 << 17], y[1 << 17];
  int proc = redcoll_comm_rank(world) / TCP_T;
  for (int i = 0; i < 200; i++) {
    if (proc == a->killed && redcoll_comm_rank(world) % TCP_T == 1 && i == 3) raise(SIGKILL);
    int rc = redcoll_allreduce(world, x, y, 1 << 17, REDCOLL_FLOAT64, REDCOLL_SUM);
    if (rc != REDCOLL_OK) return rc;
  }
  return REDCOLL_OK;
}

static int kill_proc(redcoll_comm *procs, void *arg) {
  tcp_arg *a = arg;
  int st[TCP_T];
  redcoll_hier_run_statuses(procs, TCP_T, kill_rank, arg, st);
  int me = redcoll_comm_rank(procs);
  for (int t = 0; t < TCP_T; t++) a->errors[me][t] = st[t];
  return REDCOLL_OK;
}

/* A process killed (SIGKILL) in the middle of 1 MiB allreduces: every
 * thread of every other process returns an error, none hangs. */
static void tcp_kill(void) {
  tcp_arg *a = tcp_run_shared(sizeof *a);
  a->killed = 2;
  tcp_run_opts o;
  memset(&o, 0, sizeof o);
  o.timeout_ms = 20000;
  o.deadline_s = 60;
  int rc = tcp_run_opts_run(4, kill_proc, a, &o);
  CHECK_INT(rc, REDCOLL_ETRANSPORT);
  CHECK_INT(o.statuses[2], REDCOLL_ETRANSPORT);
  for (int p = 0; p < 4; p++) {
    if (p == 2) continue;
    CHECK_INT(o.statuses[p], REDCOLL_OK);
    for (int t = 0; t < TCP_T; t++)
      CHECK_MSG(a->errors[p][t] == REDCOLL_ETRANSPORT || a->errors[p][t] == REDCOLL_EABORTED,
                "process %d thread %d: %s", p, t, redcoll_status_name(a->errors[p][t]));
  }
  munmap(a, sizeof *a);
}
#endif

TEST_MAIN(TEST(topo_examples), TEST(even_hosts), TEST(uneven_hosts), TEST(interleaved_hosts),
          TEST(split_worlds), TEST(auto_choice), TEST(auto_cpus), TEST(auto_butterflies),
          TEST(sim_claims), TEST(hier_one_process), TEST(hier_over_threads), TEST(hier_dups_at_once), TEST(hier_refused)
#ifdef REDCOLL_TEST_TCP
          , TEST(tcp_hosts_threads), TEST(tcp_kill)
#endif
)
