/*
 * Communicators made from communicators (dup, split, create_group) and
 * point-to-point, on the simulator and on threads: a tree of splits of a
 * 3 x 5 grid with collectives interleaved on every level and checked in
 * each communicator's canonical order; two threads per rank on a
 * communicator and its dup at once; abort of a child while its parent goes
 * on; abort from another thread of a collective that waits for a peer that
 * never comes; a deadlock report that names the channel; ENOTSUP on a
 * transport without channels; a half of a split costs in the simulator
 * exactly what a world of its size costs.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "redcoll/mock.h"
#include "redcoll/threads.h"
#include "redcoll/transport.h"
#include "test.h"

#define ROWS 3
#define COLS 5
#define P (ROWS * COLS)

/* A non-commutative, associative operator: x -> m x + c modulo a prime,
 * composed left then right (the right one applied after the left). */
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

static affine mine(int world_rank) {
  return (affine){(uint64_t)world_rank + 2, 3 * (uint64_t)world_rank + 1};
}

/* Checks, on communicator c whose rank i is world rank members[i]: the
 * members (an allgather of world ranks), an integer sum, the
 * non-commutative reduction in c's rank order, a bcast from the last rank
 * and a point-to-point ring.  Returns the number of failed checks. */
static int exercise(redcoll_comm *c, const int *members, int n, int world_rank, redcoll_op *op) {
  int bad = 0, r = redcoll_comm_rank(c);
  if (redcoll_comm_size(c) != n || members[r] != world_rank) return 1;
  int got[P];
  bad += redcoll_allgather(c, &world_rank, got, 1, REDCOLL_INT32) != REDCOLL_OK;
  for (int i = 0; i < n; i++) bad += got[i] != members[i];
  int64_t x = world_rank, sum = 0, want = 0;
  for (int i = 0; i < n; i++) want += members[i];
  bad += redcoll_allreduce(c, &x, &sum, 1, REDCOLL_INT64, REDCOLL_SUM) != REDCOLL_OK;
  bad += sum != want;
  affine a = mine(world_rank), all, expect = mine(members[0]);
  for (int i = 1; i < n; i++) expect = compose(expect, mine(members[i]));
  bad += redcoll_allreduce(c, &a, &all, 1, REDCOLL_CUSTOM, op) != REDCOLL_OK;
  bad += all.m != expect.m || all.c != expect.c;
  int b = world_rank;
  bad += redcoll_bcast(c, &b, 1, REDCOLL_INT32, n - 1) != REDCOLL_OK;
  bad += b != members[n - 1];
  if (n > 1) {
    int from = -1;
    bad += redcoll_sendrecv(c, (r + 1) % n, 7, &world_rank, sizeof world_rank, (r + n - 1) % n, 7,
                            &from, sizeof from) != REDCOLL_OK;
    bad += from != members[(r + n - 1) % n];
  }
  return bad;
}

typedef struct {
  int bad[P];
  int status[P];
} grid_out;

/* The tree: world; rows (key: column); columns (key: minus row, so rows
 * run backwards); odd and even columns of each row; a singleton per rank;
 * a dup of the world; create_group of the even world ranks in reverse;
 * create_group of each row and then of each column, groups of two sizes
 * that overlap (a rank may agree on its column while a member of it still
 * agrees on its row, on the same channel of the world).  Collectives on
 * all of them, interleaved level by level, twice. */
static int grid_rank(redcoll_comm *world, void *arg) {
  grid_out *o = arg;
  int w = redcoll_comm_rank(world), row = w / COLS, col = w % COLS, bad = 0;
  redcoll_op *op = NULL;
  if (redcoll_op_create(affine_fn, sizeof(affine), 0, NULL, &op) != REDCOLL_OK) return REDCOLL_ENOMEM;
  redcoll_comm *rows = NULL, *cols = NULL, *parity = NULL, *single = NULL, *dup = NULL,
               *evens = NULL, *none = (redcoll_comm *)1;
  int rc = redcoll_comm_split(world, row, col, &rows);
  if (rc == REDCOLL_OK) rc = redcoll_comm_split(world, col, -row, &cols);
  if (rc == REDCOLL_OK) rc = redcoll_comm_split(rows, col % 2, col, &parity);
  if (rc == REDCOLL_OK) rc = redcoll_comm_split(parity, redcoll_comm_rank(parity), 0, &single);
  if (rc == REDCOLL_OK) rc = redcoll_comm_dup(world, &dup);
  if (rc == REDCOLL_OK) rc = redcoll_comm_split(world, REDCOLL_UNDEFINED, 0, &none);
  int even_list[(P + 1) / 2], ne = 0;
  for (int i = P - 1; i >= 0; i--)
    if (i % 2 == 0) even_list[ne++] = i;
  if (rc == REDCOLL_OK && w % 2 == 0) rc = redcoll_comm_create_group(world, even_list, ne, &evens);
  redcoll_comm *grow = NULL, *gcol = NULL;
  int row_list[COLS], col_list[ROWS];
  for (int i = 0; i < COLS; i++) row_list[i] = row * COLS + i;
  for (int i = 0; i < ROWS; i++) col_list[i] = i * COLS + col;
  if (rc == REDCOLL_OK) rc = redcoll_comm_create_group(world, row_list, COLS, &grow);
  if (rc == REDCOLL_OK) rc = redcoll_comm_create_group(world, col_list, ROWS, &gcol);
  if (rc != REDCOLL_OK) {
    o->status[w] = rc;
    redcoll_op_destroy(op);
    return rc;
  }
  bad += none != NULL;
  int m_world[P], m_row[COLS], m_col[ROWS], m_par[COLS], np = 0;
  for (int i = 0; i < P; i++) m_world[i] = i;
  for (int i = 0; i < COLS; i++) m_row[i] = row * COLS + i;
  for (int i = 0; i < ROWS; i++) m_col[i] = (ROWS - 1 - i) * COLS + col;
  for (int i = 0; i < COLS; i++)
    if (i % 2 == col % 2) m_par[np++] = row * COLS + i;
  for (int round = 0; round < 2; round++) {
    bad += exercise(world, m_world, P, w, op);
    bad += exercise(rows, m_row, COLS, w, op);
    bad += exercise(cols, m_col, ROWS, w, op);
    bad += exercise(parity, m_par, np, w, op);
    bad += exercise(single, &w, 1, w, op);
    bad += exercise(dup, m_world, P, w, op);
    if (evens != NULL) bad += exercise(evens, even_list, ne, w, op);
    bad += exercise(grow, row_list, COLS, w, op);
    bad += exercise(gcol, col_list, ROWS, w, op);
  }
  redcoll_comm_destroy(grow);
  redcoll_comm_destroy(gcol);
  /* Children go first or last, in any order: the transport lives on. */
  redcoll_comm_destroy(rows);
  redcoll_comm_destroy(single);
  bad += exercise(parity, m_par, np, w, op);
  redcoll_comm_destroy(parity);
  redcoll_comm_destroy(cols);
  redcoll_comm_destroy(evens);
  bad += exercise(dup, m_world, P, w, op);
  redcoll_comm_destroy(dup);
  bad += exercise(world, m_world, P, w, op);
  o->bad[w] = bad;
  redcoll_op_destroy(op);
  return REDCOLL_OK;
}

static void grid_sim(void) {
  for (uint64_t seed = 1; seed <= 3; seed++) {
    grid_out o;
    memset(&o, 0, sizeof o);
    redcoll_mock_config cfg;
    redcoll_mock_config_init(&cfg);
    cfg.seed = seed;
    cfg.eager_limit = seed == 2 ? 64 : 0;
    CHECK_INT(redcoll_mock_run(P, &cfg, grid_rank, &o, NULL), REDCOLL_OK);
    for (int r = 0; r < P; r++) CHECK_MSG(o.bad[r] == 0, "seed %d rank %d: %d bad", (int)seed, r, o.bad[r]);
  }
}

static void grid_threads(void) {
  grid_out o;
  memset(&o, 0, sizeof o);
  CHECK_INT(redcoll_threads_run(P, grid_rank, &o), REDCOLL_OK);
  for (int r = 0; r < P; r++) CHECK_MSG(o.bad[r] == 0, "rank %d: %d bad", r, o.bad[r]);
}

/* ---- two threads per rank --------------------------------------------- */

#define TP 5
#define ITERS 300

typedef struct {
  redcoll_comm *comm;
  int world_rank, bad, status;
} pair_arg;

static void *pair_thread(void *a) {
  pair_arg *x = a;
  int p = redcoll_comm_size(x->comm);
  for (int i = 0; i < ITERS && x->status == REDCOLL_OK; i++) {
    double v[3] = {x->world_rank, i, 1}, s[3];
    x->status = redcoll_allreduce(x->comm, v, s, 3, REDCOLL_FLOAT64, REDCOLL_SUM);
    x->bad += s[0] != p * (p - 1) / 2.0 || s[1] != (double)i * p || s[2] != p;
  }
  return NULL;
}

/* Each rank runs allreduces on the world and on its dup from two threads
 * at once; messages of one never meet receives of the other. */
static int pairs_rank(redcoll_comm *world, void *arg) {
  int *bad = arg, w = redcoll_comm_rank(world);
  redcoll_comm *dup = NULL;
  int rc = redcoll_comm_dup(world, &dup);
  if (rc != REDCOLL_OK) return rc;
  pair_arg a = {world, w, 0, REDCOLL_OK}, b = {dup, w, 0, REDCOLL_OK};
  pthread_t t;
  if (pthread_create(&t, NULL, pair_thread, &b) != 0) return REDCOLL_ENOMEM;
  pair_thread(&a);
  pthread_join(t, NULL);
  redcoll_comm_destroy(dup);
  bad[w] = a.bad + b.bad + (a.status != REDCOLL_OK) + (b.status != REDCOLL_OK);
  return REDCOLL_OK;
}

static void dup_concurrent(void) {
  int bad[TP] = {0};
  CHECK_INT(redcoll_threads_run(TP, pairs_rank, bad), REDCOLL_OK);
  for (int r = 0; r < TP; r++) CHECK_MSG(bad[r] == 0, "rank %d: %d bad", r, bad[r]);
}

/* ---- failures stay where they belong ----------------------------------- */

typedef struct {
  int child_rc[8], world_rc[8], after_rc[8];
} abort_out;

/* Rank 0 aborts the child of ranks 0..2: its members' next collective on
 * it fails with EABORTED; the other child and the world go on. */
static int abort_rank(redcoll_comm *world, void *arg) {
  abort_out *o = arg;
  int w = redcoll_comm_rank(world);
  redcoll_comm *half = NULL;
  int rc = redcoll_comm_split(world, w < 3, w, &half);
  if (rc != REDCOLL_OK) return rc;
  int x = 1, y = 0;
  if (w == 0) redcoll_comm_abort(half);
  o->child_rc[w] = redcoll_allreduce(half, &x, &y, 1, REDCOLL_INT32, REDCOLL_SUM);
  o->world_rc[w] = redcoll_allreduce(world, &x, &y, 1, REDCOLL_INT32, REDCOLL_SUM);
  o->after_rc[w] = y == 6 ? REDCOLL_OK : REDCOLL_EINVAL;
  redcoll_comm_destroy(half);
  return REDCOLL_OK;
}

static void child_abort(void) {
  abort_out o;
  memset(&o, 0, sizeof o);
  CHECK_INT(redcoll_mock_run(6, NULL, abort_rank, &o, NULL), REDCOLL_OK);
  for (int r = 0; r < 6; r++) {
    CHECK_INT(o.child_rc[r], r < 3 ? REDCOLL_EABORTED : REDCOLL_OK);
    CHECK_INT(o.world_rc[r], REDCOLL_OK);
    CHECK_INT(o.after_rc[r], REDCOLL_OK);
  }
  memset(&o, 0, sizeof o);
  CHECK_INT(redcoll_threads_run(6, abort_rank, &o), REDCOLL_OK);
  for (int r = 0; r < 6; r++) {
    CHECK_INT(o.child_rc[r], r < 3 ? REDCOLL_EABORTED : REDCOLL_OK);
    CHECK_INT(o.world_rc[r], REDCOLL_OK);
  }
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

typedef struct {
  redcoll_comm *comm;
  int rc;
  double seconds;
} blocked_arg;

static void *blocked_thread(void *a) {
  blocked_arg *x = a;
  double t0 = now_s(), v = 1, s;
  x->rc = redcoll_allreduce(x->comm, &v, &s, 1, REDCOLL_FLOAT64, REDCOLL_SUM);
  x->seconds = now_s() - t0;
  return NULL;
}

typedef struct {
  redcoll_comm *world, *dup;
  int rc;
} dup_arg;

static void *dup_thread(void *a) {
  dup_arg *d = a;
  d->rc = redcoll_comm_dup(d->world, &d->dup);
  return NULL;
}

/* Ranks 0 and 1 wait in an allreduce on a dup for rank 2, which never
 * comes; the main thread aborts rank 0's dup.  Both return EABORTED
 * within a second, rank 2's later call at once, and the world still
 * works. */
static void abort_from_thread(void) {
  redcoll_comm *world[3];
  CHECK_INT(redcoll_threads_world_create(3, NULL, world), REDCOLL_OK);
  dup_arg d[3];
  pthread_t t[3];
  for (int i = 0; i < 3; i++) {
    d[i] = (dup_arg){world[i], NULL, 0};
    CHECK_INT(pthread_create(&t[i], NULL, dup_thread, &d[i]), 0);
  }
  for (int i = 0; i < 3; i++) pthread_join(t[i], NULL);
  for (int i = 0; i < 3; i++) CHECK_INT(d[i].rc, REDCOLL_OK);
  blocked_arg a[3];
  for (int i = 0; i < 2; i++) {
    a[i] = (blocked_arg){d[i].dup, 0, 0};
    CHECK_INT(pthread_create(&t[i], NULL, blocked_thread, &a[i]), 0);
  }
  struct timespec pause = {0, 100000000};
  nanosleep(&pause, NULL);
  double t0 = now_s();
  CHECK_INT(redcoll_comm_abort(d[0].dup), REDCOLL_OK);
  for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
  double waited = now_s() - t0;
  for (int i = 0; i < 2; i++) CHECK_INT(a[i].rc, REDCOLL_EABORTED);
  CHECK_MSG(waited < 1.0, "the blocked ranks returned %.3f s after the abort", waited);
  a[2] = (blocked_arg){d[2].dup, 0, 0};
  blocked_thread(&a[2]);
  CHECK_INT(a[2].rc, REDCOLL_EABORTED);
  for (int i = 0; i < 3; i++) redcoll_comm_destroy(d[i].dup);
  for (int i = 0; i < 3; i++) {
    a[i] = (blocked_arg){world[i], 0, 0};
    CHECK_INT(pthread_create(&t[i], NULL, blocked_thread, &a[i]), 0);
  }
  for (int i = 0; i < 3; i++) pthread_join(t[i], NULL);
  for (int i = 0; i < 3; i++) CHECK_INT(a[i].rc, REDCOLL_OK);
  for (int i = 0; i < 3; i++) redcoll_comm_destroy(world[i]);
}

/* ---- the simulator names the channel; arguments; no channels ------------ */

typedef struct {
  int rc[4];
} dl_out;

/* In the upper half of 4 ranks, each receives from the other first. */
static int deadlock_rank(redcoll_comm *world, void *arg) {
  dl_out *o = arg;
  int w = redcoll_comm_rank(world);
  redcoll_comm *half = NULL;
  int rc = redcoll_comm_split(world, w / 2, w, &half);
  if (rc != REDCOLL_OK) return rc;
  int x = 0;
  if (w >= 2) o->rc[w] = redcoll_recv(half, 1 - redcoll_comm_rank(half), 3, &x, sizeof x);
  redcoll_comm_destroy(half);
  return REDCOLL_OK;
}

static void deadlock_names_channel(void) {
  char rep[1024];
  redcoll_mock_config cfg;
  redcoll_mock_config_init(&cfg);
  cfg.report = rep;
  cfg.report_len = sizeof rep;
  dl_out o;
  memset(&o, 0, sizeof o);
  CHECK_INT(redcoll_mock_run(4, &cfg, deadlock_rank, &o, NULL), REDCOLL_EDEADLOCK);
  CHECK_INT(o.rc[2], REDCOLL_EDEADLOCK);
  CHECK_INT(o.rc[3], REDCOLL_EDEADLOCK);
  CHECK_MSG(strstr(rep, "rank 2: recv from 3 tag ") != NULL && strstr(rep, " on channel ") != NULL,
            "report: %s", rep);
}

static int args_rank(redcoll_comm *world, void *arg) {
  int *bad = arg, w = redcoll_comm_rank(world), p = redcoll_comm_size(world), x = 0;
  redcoll_comm *c = (redcoll_comm *)1;
  bad[w] += redcoll_comm_split(world, -5, 0, &c) != REDCOLL_EINVAL || c != NULL;
  bad[w] += redcoll_comm_split(NULL, 0, 0, &c) != REDCOLL_EINVAL;
  bad[w] += redcoll_comm_dup(world, NULL) != REDCOLL_EINVAL;
  int list[2] = {0, 0};
  bad[w] += redcoll_comm_create_group(world, list, 2, &c) != REDCOLL_EINVAL;
  list[1] = p;
  bad[w] += redcoll_comm_create_group(world, list, 2, &c) != REDCOLL_EINVAL;
  list[0] = (w + 1) % p;
  list[1] = (w + 2) % p;
  bad[w] += redcoll_comm_create_group(world, list, 2, &c) != REDCOLL_EINVAL; /* not a member */
  bad[w] += redcoll_send(world, w, 1, &x, sizeof x) != REDCOLL_EINVAL;
  bad[w] += redcoll_recv(world, p, 1, &x, sizeof x) != REDCOLL_EINVAL;
  bad[w] += redcoll_send(world, (w + 1) % p, 1, NULL, 4) != REDCOLL_EINVAL;
  /* a message of another tag or length is a mismatch, as in a collective */
  if (w == 0) bad[w] += redcoll_send(world, 1, 5, &x, sizeof x) != REDCOLL_OK;
  if (w == 1) bad[w] += redcoll_recv(world, 0, 6, &x, sizeof x) != REDCOLL_EMISMATCH;
  return REDCOLL_OK;
}

static void bad_arguments(void) {
  int bad[3] = {0};
  redcoll_mock_config cfg;
  redcoll_mock_config_init(&cfg);
  cfg.eager_limit = 64;
  CHECK_INT(redcoll_mock_run(3, &cfg, args_rank, bad, NULL), REDCOLL_OK);
  for (int r = 0; r < 3; r++) CHECK_MSG(bad[r] == 0, "rank %d: %d bad", r, bad[r]);
}

/* A version 3 transport without REDCOLL_TRANSPORT_CAP_CHANNELS. */
static int plain_info(void *impl, redcoll_transport_info *info) {
  (void)impl;
  strcpy(info->name, "plain");
  return REDCOLL_OK;
}
static int plain_exchange(void *impl, const redcoll_transport_ctx *ctx,
                          const redcoll_transport_msg *s, const redcoll_transport_msg *r) {
  (void)impl, (void)ctx, (void)s, (void)r;
  return REDCOLL_ETRANSPORT;
}
static void plain_destroy(void *impl) { (void)impl; }
/* Claims channels without the members they need. */
static int half_info(void *impl, redcoll_transport_info *info) {
  (void)impl;
  info->caps = REDCOLL_TRANSPORT_CAP_CHANNELS;
  return REDCOLL_OK;
}

static void no_channels(void) {
  redcoll_transport_ops ops = {.version = 3, .destroy = plain_destroy, .info = plain_info,
                               .exchange = plain_exchange};
  redcoll_comm *c = NULL, *d = (redcoll_comm *)1;
  CHECK_INT(redcoll_comm_create(&ops, NULL, 0, 2, &c), REDCOLL_OK);
  CHECK_INT(redcoll_comm_dup(c, &d), REDCOLL_ENOTSUP);
  CHECK(d == NULL);
  CHECK_INT(redcoll_comm_split(c, 0, 0, &d), REDCOLL_ENOTSUP);
  int list[1] = {0};
  CHECK_INT(redcoll_comm_create_group(c, list, 1, &d), REDCOLL_ENOTSUP);
  CHECK_INT(redcoll_comm_error(c), REDCOLL_OK);
  redcoll_comm_destroy(c);
  ops.info = half_info;
  CHECK_INT(redcoll_comm_create(&ops, NULL, 0, 2, &c), REDCOLL_EINVAL);
  CHECK(c == NULL);
}

/* ---- a split costs what a world of its size costs ------------------------ */

/* What one allreduce of COST_N doubles with algorithm `algo` costs a rank of
 * c in the simulator: rounds, messages, bytes sent and reduced (deltas of
 * the rank's counters). */
#define COST_N 40000
typedef struct cost {
  uint64_t rounds, msgs, bytes, reduced;
} cost;

static int measure(redcoll_comm *c, redcoll_algo algo, cost *out) {
  static double in[COST_N], outv[COST_N];
  redcoll_mock_stats a, b;
  int rc = redcoll_comm_set_algorithm(c, REDCOLL_COLL_ALLREDUCE, algo);
  if (rc == REDCOLL_OK) rc = redcoll_mock_comm_stats(c, &a);
  if (rc == REDCOLL_OK) rc = redcoll_allreduce(c, in, outv, COST_N, REDCOLL_FLOAT64, REDCOLL_SUM);
  if (rc == REDCOLL_OK) rc = redcoll_mock_comm_stats(c, &b);
  if (rc != REDCOLL_OK) return rc;
  *out = (cost){b.rounds - a.rounds, b.msgs_sent - a.msgs_sent, b.bytes_sent - a.bytes_sent,
                b.bytes_reduced - a.bytes_reduced};
  return REDCOLL_OK;
}

static const redcoll_algo cost_algos[] = {REDCOLL_ALGO_RING, REDCOLL_ALGO_ELIMINATION,
                                          REDCOLL_ALGO_RECURSIVE_DOUBLING};
#define NALGO (sizeof cost_algos / sizeof cost_algos[0])
static cost world_cost[3][NALGO], split_cost[6][NALGO];

static int world3_rank(redcoll_comm *c, void *arg) {
  (void)arg;
  int rc = REDCOLL_OK;
  for (size_t k = 0; k < NALGO && rc == REDCOLL_OK; k++)
    rc = measure(c, cost_algos[k], &world_cost[redcoll_comm_rank(c)][k]);
  return rc;
}

/* Six ranks split by parity: {0, 2, 4} and {1, 3, 5}. */
static int split6_rank(redcoll_comm *world, void *arg) {
  (void)arg;
  int r = redcoll_comm_rank(world);
  redcoll_comm *half = NULL;
  int rc = redcoll_comm_split(world, r % 2, r, &half);
  for (size_t k = 0; k < NALGO && rc == REDCOLL_OK; k++)
    rc = measure(half, cost_algos[k], &split_cost[r][k]);
  redcoll_comm_destroy(half);
  return rc;
}

/* The simulator counts exactly: a half of a split of 6 pays, rank for rank,
 * the rounds, messages, bytes sent and bytes reduced of a world of 3, for
 * every algorithm (the rank translation and the channels add nothing). */
static void split_costs_like_world(void) {
  CHECK_INT(redcoll_mock_run(3, NULL, world3_rank, NULL, NULL), REDCOLL_OK);
  CHECK_INT(redcoll_mock_run(6, NULL, split6_rank, NULL, NULL), REDCOLL_OK);
  for (int r = 0; r < 6; r++)
    for (size_t k = 0; k < NALGO; k++) {
      const cost *s = &split_cost[r][k], *w = &world_cost[r / 2][k];
      CHECK_MSG(s->rounds == w->rounds && s->msgs == w->msgs && s->bytes == w->bytes &&
                    s->reduced == w->reduced,
                "rank %d, %s: split %llu rounds %llu msgs %llu B, world %llu rounds %llu msgs %llu B",
                r, redcoll_algo_name(cost_algos[k]), (unsigned long long)s->rounds,
                (unsigned long long)s->msgs, (unsigned long long)s->bytes,
                (unsigned long long)w->rounds, (unsigned long long)w->msgs,
                (unsigned long long)w->bytes);
      CHECK(w->rounds > 0 && w->bytes > 0);
    }
}

/* ---- registration ------------------------------------------------------- */

TEST_MAIN(TEST(grid_sim), TEST(grid_threads), TEST(dup_concurrent), TEST(child_abort),
          TEST(abort_from_thread), TEST(deadlock_names_channel), TEST(bad_arguments),
          TEST(no_channels), TEST(split_costs_like_world))
