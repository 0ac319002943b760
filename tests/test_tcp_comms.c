/*
 * Communicators over TCP: several over one set of connections, used from
 * several threads of each process at once.
 *
 *   dups     7 processes, two threads each, each thread running 1000
 *            verified allreduces on its own dup of the world; then a split
 *            into 3 + 4 ranks with a different algorithm on each half;
 *            then create_group of the same halves and of the even and the
 *            odd ranks, groups of other sizes that overlap (a rank may
 *            agree on its second group while a member of it still agrees
 *            on its first, on the same channel of the world).
 *   cancel   3 processes: two threads wait in an allreduce on a dup that
 *            rank 0 never joins; a second thread of rank 1 aborts the dup:
 *            REDCOLL_EABORTED on both within a second, and the world is
 *            untouched.
 *   kill     4 processes with the world, a dup of it and a split into
 *            {0, 1} and {2, 3}; rank 3 is killed with SIGKILL: on every
 *            survivor the world, the dup and {2, 3} fail, {0, 1} still
 *            works.
 *   churn    dups made and destroyed 200 times, each used once, while
 *            another thread runs allreduces on the world.
 *   detach   a 32 MiB send on a dup times out while its peer reads nothing:
 *            the call returns at its deadline, the connection both
 *            communicators share stays up, and the world goes on.
 *   bound    with 64 KiB kept per peer, messages on two communicators sent
 *            before the sender leaves all arrive, received in another order
 *            than sent.
 */
#include <pthread.h>

#include "test.h"
#include "tcp_runner.h"

typedef struct shared {
  double t[64];
  int st[64][8];
} shared;

static double now_s(void) { return tcp_run__now(); }

/* ---- dups: two threads per process, each on its own dup ------------------ */

#define DUP_ITERS 1000
#define DUP_N 37

typedef struct worker {
  redcoll_comm *c;
  int id;     /* which of the process's threads */
  int status; /* first failure, REDCOLL_EINVAL for a wrong result */
} worker;

/* Rank r's element i in iteration it on thread id: the sum over ranks is
 * known in closed form. */
static int64_t dup_val(int r, int id, int it, int i) {
  return (int64_t)r * 1000003 + (int64_t)id * 7919 + (int64_t)it * 31 + i;
}

static void *dup_worker(void *arg) {
  worker *w = arg;
  int r = redcoll_comm_rank(w->c), p = redcoll_comm_size(w->c);
  int64_t in[DUP_N], out[DUP_N];
  for (int it = 0; it < DUP_ITERS && w->status == REDCOLL_OK; it++) {
    for (int i = 0; i < DUP_N; i++) in[i] = dup_val(r, w->id, it, i);
    int rc = redcoll_allreduce(w->c, in, out, DUP_N, REDCOLL_INT64, REDCOLL_SUM);
    if (rc != REDCOLL_OK) {
      w->status = rc;
      break;
    }
    for (int i = 0; i < DUP_N; i++) {
      int64_t want = 0;
      for (int q = 0; q < p; q++) want += dup_val(q, w->id, it, i);
      if (out[i] != want) w->status = REDCOLL_EINVAL;
    }
  }
  return NULL;
}

/* The sum of the ranks of c, reduced with algorithm algo. */
static int check_sum(redcoll_comm *c, redcoll_algo algo) {
  int rc = redcoll_comm_set_algorithm(c, REDCOLL_COLL_ALLREDUCE, algo);
  if (rc != REDCOLL_OK) return rc;
  int n = redcoll_comm_size(c);
  int64_t x[100], s[100];
  for (int i = 0; i < 100; i++) x[i] = redcoll_comm_rank(c) + i;
  rc = redcoll_allreduce(c, x, s, 100, REDCOLL_INT64, REDCOLL_SUM);
  if (rc != REDCOLL_OK) return rc;
  for (int i = 0; i < 100; i++)
    if (s[i] != (int64_t)n * (n - 1) / 2 + (int64_t)n * i) return REDCOLL_EINVAL;
  return redcoll_comm_last_algorithm(c) == algo ? REDCOLL_OK : REDCOLL_EINVAL;
}

static int rank_dups(redcoll_comm *c, void *arg) {
  shared *sh = arg;
  int me = redcoll_comm_rank(c);
  worker w[2];
  pthread_t th[2];
  for (int k = 0; k < 2; k++) {
    w[k].id = k;
    w[k].status = REDCOLL_OK;
    CHECK_INT(redcoll_comm_dup(c, &w[k].c), REDCOLL_OK);
    if (w[k].c == NULL) return REDCOLL_ENOMEM;
  }
  double t0 = now_s();
  for (int k = 0; k < 2; k++) pthread_create(&th[k], NULL, dup_worker, &w[k]);
  for (int k = 0; k < 2; k++) pthread_join(th[k], NULL);
  sh->t[me] = now_s() - t0;
  for (int k = 0; k < 2; k++) {
    sh->st[me][k] = w[k].status;
    CHECK_INT(w[k].status, REDCOLL_OK);
    redcoll_comm_destroy(w[k].c);
  }
  /* 3 + 4, each half with its own algorithm. */
  redcoll_comm *half = NULL;
  int low = me < 3;
  CHECK_INT(redcoll_comm_split(c, low, me, &half), REDCOLL_OK);
  if (half == NULL) return REDCOLL_ENOMEM;
  CHECK_INT(redcoll_comm_size(half), low ? 3 : 4);
  CHECK_INT(redcoll_comm_rank(half), low ? me : me - 3);
  sh->st[me][2] = check_sum(half, low ? REDCOLL_ALGO_RING : REDCOLL_ALGO_RECURSIVE_DOUBLING);
  sh->st[me][3] = check_sum(half, low ? REDCOLL_ALGO_ELIMINATION : REDCOLL_ALGO_LINEAR);
  CHECK_INT(sh->st[me][2], REDCOLL_OK);
  CHECK_INT(sh->st[me][3], REDCOLL_OK);
  redcoll_comm_destroy(half);
  /* Overlapping groups from lists: {0, 1, 2} or {3 .. 6}, then the even or
   * the odd ranks. */
  int list[7], n = 0;
  for (int r = 0; r < 7; r++)
    if ((r < 3) == low) list[n++] = r;
  redcoll_comm *g1 = NULL, *g2 = NULL;
  CHECK_INT(redcoll_comm_create_group(c, list, n, &g1), REDCOLL_OK);
  n = 0;
  for (int r = 0; r < 7; r++)
    if (r % 2 == me % 2) list[n++] = r;
  CHECK_INT(redcoll_comm_create_group(c, list, n, &g2), REDCOLL_OK);
  if (g1 == NULL || g2 == NULL) return REDCOLL_ENOMEM;
  CHECK_INT(check_sum(g1, REDCOLL_ALGO_RING), REDCOLL_OK);
  CHECK_INT(check_sum(g2, REDCOLL_ALGO_RECURSIVE_DOUBLING), REDCOLL_OK);
  redcoll_comm_destroy(g1);
  redcoll_comm_destroy(g2);
  /* And the world after all of it. */
  return check_sum(c, REDCOLL_ALGO_RING);
}

/* ---- cancel: an abort from another thread --------------------------------- */

typedef struct waiter {
  redcoll_comm *d;
  int status;
  double t;
} waiter;

static void *wait_in_allreduce(void *arg) {
  waiter *w = arg;
  double x = 1, y = 0;
  w->status = redcoll_allreduce(w->d, &x, &y, 1, REDCOLL_FLOAT64, REDCOLL_SUM);
  w->t = now_s();
  return NULL;
}

static int rank_cancel(redcoll_comm *c, void *arg) {
  shared *sh = arg;
  int me = redcoll_comm_rank(c);
  redcoll_comm *d = NULL;
  CHECK_INT(redcoll_comm_dup(c, &d), REDCOLL_OK);
  if (d == NULL) return REDCOLL_ENOMEM;
  waiter w = {d, REDCOLL_OK, 0};
  pthread_t th;
  if (me != 0) pthread_create(&th, NULL, wait_in_allreduce, &w);
  if (me == 1) {
    tcp_run_sleep_ms(300); /* both are blocked by now */
    sh->t[63] = now_s();
    CHECK_INT(redcoll_comm_abort(d), REDCOLL_OK);
  }
  if (me != 0) {
    pthread_join(th, NULL);
    sh->st[me][0] = w.status;
    sh->t[me] = w.t;
    CHECK_INT(w.status, REDCOLL_EABORTED);
    CHECK_INT(redcoll_comm_error(d), REDCOLL_EABORTED);
  }
  /* The world is untouched, and so is a dup made after. */
  int64_t x = me, s = 0;
  CHECK_INT(redcoll_allreduce(c, &x, &s, 1, REDCOLL_INT64, REDCOLL_SUM), REDCOLL_OK);
  CHECK_INT(s, 3);
  redcoll_comm_destroy(d);
  CHECK_INT(redcoll_comm_dup(c, &d), REDCOLL_OK);
  if (d == NULL) return REDCOLL_ENOMEM;
  s = 0;
  CHECK_INT(redcoll_allreduce(d, &x, &s, 1, REDCOLL_INT64, REDCOLL_SUM), REDCOLL_OK);
  CHECK_INT(s, 3);
  redcoll_comm_destroy(d);
  return redcoll_comm_error(c);
}

/* ---- kill: only the communicators with the dead rank break ---------------- */

static int sum_of_ranks(redcoll_comm *c, int64_t *s) {
  int64_t x = redcoll_comm_rank(c);
  *s = -1;
  return redcoll_allreduce(c, &x, s, 1, REDCOLL_INT64, REDCOLL_SUM);
}

static int rank_kill(redcoll_comm *c, void *arg) {
  shared *sh = arg;
  int me = redcoll_comm_rank(c);
  redcoll_comm *dup = NULL, *pair = NULL;
  CHECK_INT(redcoll_comm_dup(c, &dup), REDCOLL_OK);
  CHECK_INT(redcoll_comm_split(c, me / 2, me, &pair), REDCOLL_OK);
  if (dup == NULL || pair == NULL) return REDCOLL_ENOMEM;
  int64_t s;
  /* All three work, and every connection is made. */
  CHECK_INT(sum_of_ranks(c, &s), REDCOLL_OK);
  CHECK_INT(sum_of_ranks(dup, &s), REDCOLL_OK);
  CHECK_INT(sum_of_ranks(pair, &s), REDCOLL_OK);
  CHECK_INT(s, 1);
  CHECK_INT(redcoll_barrier(c), REDCOLL_OK);
  if (me == 3) kill(getpid(), SIGKILL);
  tcp_run_sleep_ms(100);
  double t0 = now_s();
  sh->st[me][0] = sum_of_ranks(c, &s);
  sh->st[me][1] = sum_of_ranks(dup, &s);
  sh->st[me][2] = sum_of_ranks(pair, &s);
  sh->t[me] = now_s() - t0;
  if (me < 2) {
    CHECK_INT(sh->st[me][2], REDCOLL_OK);
    CHECK_INT(s, 1);
    /* And it goes on working. */
    CHECK_INT(sum_of_ranks(pair, &s), REDCOLL_OK);
  }
  redcoll_comm_destroy(pair);
  redcoll_comm_destroy(dup);
  return REDCOLL_OK;
}

/* ---- churn: dups made and destroyed beside a busy world ------------------- */

#define BUSY_ITERS 400

typedef struct busy {
  redcoll_comm *c;
  int status;
} busy;

static void *world_busy(void *arg) {
  busy *b = arg;
  int p = redcoll_comm_size(b->c);
  for (int i = 0; i < BUSY_ITERS && b->status == REDCOLL_OK; i++) {
    int64_t x = i, s = 0;
    b->status = redcoll_allreduce(b->c, &x, &s, 1, REDCOLL_INT64, REDCOLL_SUM);
    if (b->status == REDCOLL_OK && s != (int64_t)i * p) b->status = REDCOLL_EINVAL;
  }
  return NULL;
}

static int rank_churn(redcoll_comm *c, void *arg) {
  shared *sh = arg;
  int me = redcoll_comm_rank(c), p = redcoll_comm_size(c);
  redcoll_comm *base = NULL;
  /* The parent of the dups is a dup too, so that the world stays free for
   * the busy thread (one thread per communicator at a time). */
  CHECK_INT(redcoll_comm_dup(c, &base), REDCOLL_OK);
  if (base == NULL) return REDCOLL_ENOMEM;
  busy b = {.c = c, .status = REDCOLL_OK};
  pthread_t th;
  pthread_create(&th, NULL, world_busy, &b);
  int rc = REDCOLL_OK;
  for (int k = 0; k < 200 && rc == REDCOLL_OK; k++) {
    redcoll_comm *d = NULL;
    rc = redcoll_comm_dup(base, &d);
    if (rc != REDCOLL_OK) break;
    int64_t x = k, s = 0;
    rc = redcoll_allreduce(d, &x, &s, 1, REDCOLL_INT64, REDCOLL_SUM);
    if (rc == REDCOLL_OK && s != (int64_t)k * p) rc = REDCOLL_EINVAL;
    redcoll_comm_destroy(d);
  }
  pthread_join(th, NULL);
  sh->st[me][0] = rc;
  CHECK_INT(rc, REDCOLL_OK);
  CHECK_INT(b.status, REDCOLL_OK);
  redcoll_comm_destroy(base);
  return redcoll_comm_error(c);
}

/* ---- detach: a send taken back does not cut the shared connection --------- */

#define BIG ((size_t)32 << 20)

static int rank_detach(redcoll_comm *c, void *arg) {
  shared *sh = arg;
  int me = redcoll_comm_rank(c);
  redcoll_comm *d = NULL;
  CHECK_INT(redcoll_comm_dup(c, &d), REDCOLL_OK);
  if (d == NULL) return REDCOLL_ENOMEM;
  CHECK_INT(redcoll_barrier(c), REDCOLL_OK);
  int64_t v = 0;
  if (me == 0) {
    unsigned char *big = malloc(BIG);
    if (big == NULL) return REDCOLL_ENOMEM;
    memset(big, 7, BIG);
    CHECK_INT(redcoll_comm_set_deadline(d, 200), REDCOLL_OK);
    double t0 = now_s();
    sh->st[0][0] = redcoll_send(d, 1, 1, big, BIG);
    sh->t[0] = now_s() - t0;
    memset(big, 0, BIG); /* the call has returned: the buffer is the caller's again */
    free(big);
    v = 42;
    CHECK_INT(redcoll_send(c, 1, 2, &v, sizeof v), REDCOLL_OK);
  } else {
    tcp_run_sleep_ms(1000); /* reads nothing meanwhile */
    CHECK_INT(redcoll_recv(c, 0, 2, &v, sizeof v), REDCOLL_OK);
    CHECK_INT(v, 42);
    uint64_t x;
    sh->st[1][0] = redcoll_recv(d, 0, 1, &x, sizeof x); /* cancelled by rank 0 */
  }
  int64_t s = 0, one = 1;
  CHECK_INT(redcoll_allreduce(c, &one, &s, 1, REDCOLL_INT64, REDCOLL_SUM), REDCOLL_OK);
  CHECK_INT(s, 2);
  redcoll_comm_destroy(d);
  return redcoll_comm_error(c);
}

/* ---- bound: kept messages on two communicators, the sender gone ----------- */

static int rank_bound(redcoll_comm *c, void *arg) {
  (void)arg;
  int me = redcoll_comm_rank(c);
  redcoll_comm *d = NULL;
  CHECK_INT(redcoll_comm_dup(c, &d), REDCOLL_OK);
  if (d == NULL) return REDCOLL_ENOMEM;
  CHECK_INT(redcoll_barrier(c), REDCOLL_OK);
  static unsigned char a[64 << 10], b[1 << 10], e[100];
  if (me == 0) {
    memset(a, 1, sizeof a);
    memset(b, 2, sizeof b);
    memset(e, 3, sizeof e);
    CHECK_INT(redcoll_send(c, 1, 1, a, sizeof a), REDCOLL_OK);
    CHECK_INT(redcoll_send(c, 1, 2, b, sizeof b), REDCOLL_OK);
    CHECK_INT(redcoll_send(d, 1, 3, e, sizeof e), REDCOLL_OK);
    redcoll_comm_destroy(d);
    return REDCOLL_OK; /* and the process leaves */
  }
  tcp_run_sleep_ms(500); /* all of it is sent, rank 0 is gone or going */
  CHECK_INT(redcoll_recv(d, 0, 3, e, sizeof e), REDCOLL_OK);
  CHECK_INT(redcoll_recv(c, 0, 1, a, sizeof a), REDCOLL_OK);
  CHECK_INT(redcoll_recv(c, 0, 2, b, sizeof b), REDCOLL_OK);
  size_t bad = 0;
  for (size_t i = 0; i < sizeof a; i++) bad += a[i] != 1;
  for (size_t i = 0; i < sizeof b; i++) bad += b[i] != 2;
  for (size_t i = 0; i < sizeof e; i++) bad += e[i] != 3;
  CHECK_INT(bad, 0);
  redcoll_comm_destroy(d);
  return REDCOLL_OK;
}

static int want(int argc, char **argv, const char *part) {
  return argc < 2 || strcmp(argv[1], part) == 0;
}

int main(int argc, char **argv) {
  setenv("REDCOLL_LOG_LEVEL", "warn", 0);
  shared *sh = tcp_run_shared(sizeof(shared));
  tcp_run_opts o;
  if (want(argc, argv, "dups")) {
    memset(sh, 0, sizeof *sh);
    memset(&o, 0, sizeof o);
    o.deadline_s = 200;
    CHECK_INT(tcp_run_opts_run(7, rank_dups, sh, &o), REDCOLL_OK);
    double slowest = 0;
    for (int r = 0; r < 7; r++) slowest = sh->t[r] > slowest ? sh->t[r] : slowest;
    printf("dups: 7 processes x 2 threads x %d allreduces in %.2f s (slowest rank)\n", DUP_ITERS,
           slowest);
  }
  if (want(argc, argv, "cancel")) {
    memset(sh, 0, sizeof *sh);
    memset(&o, 0, sizeof o);
    o.deadline_s = 60;
    CHECK_INT(tcp_run_opts_run(3, rank_cancel, sh, &o), REDCOLL_OK);
    for (int r = 1; r < 3; r++) {
      double took = sh->t[r] - sh->t[63];
      printf("cancel: rank %d returned %s %.3f s after the abort\n", r,
             redcoll_status_name(sh->st[r][0]), took);
      CHECK_MSG(took >= 0 && took < 1.0, "rank %d took %.3f s", r, took);
    }
  }
  if (want(argc, argv, "kill")) {
    memset(sh, 0, sizeof *sh);
    memset(&o, 0, sizeof o);
    o.deadline_s = 60;
    int rc = tcp_run_opts_run(4, rank_kill, sh, &o);
    CHECK_INT(rc, REDCOLL_ETRANSPORT); /* rank 3 died of a signal, the others passed */
    /* Somebody noticed the dead rank itself; the others may hear it as a cancel. */
    int direct = 0;
    for (int r = 0; r < 3; r++) direct += sh->st[r][0] == REDCOLL_ETRANSPORT;
    CHECK(direct >= 1);
    for (int r = 0; r < 3; r++) {
      CHECK_INT(o.statuses[r], REDCOLL_OK);
      for (int k = 0; k < 3; k++) {
        int broken = k < 2 || r == 2;
        int st = sh->st[r][k];
        CHECK_MSG(broken ? st == REDCOLL_ETRANSPORT || st == REDCOLL_EABORTED : st == REDCOLL_OK,
                  "rank %d, communicator %d: %s", r, k, redcoll_status_name(st));
      }
      printf("kill: rank %d: world %s, dup %s, pair %s in %.3f s\n", r,
             redcoll_status_name(sh->st[r][0]), redcoll_status_name(sh->st[r][1]),
             redcoll_status_name(sh->st[r][2]), sh->t[r]);
      CHECK_MSG(sh->t[r] < 5.0, "rank %d took %.3f s", r, sh->t[r]);
    }
  }
  if (want(argc, argv, "churn")) {
    memset(sh, 0, sizeof *sh);
    memset(&o, 0, sizeof o);
    o.deadline_s = 120;
    CHECK_INT(tcp_run_opts_run(4, rank_churn, sh, &o), REDCOLL_OK);
  }
  if (want(argc, argv, "detach")) {
    memset(sh, 0, sizeof *sh);
    memset(&o, 0, sizeof o);
    o.deadline_s = 60;
    CHECK_INT(tcp_run_opts_run(2, rank_detach, sh, &o), REDCOLL_OK);
    CHECK_INT(sh->st[0][0], REDCOLL_ETIMEDOUT);
    CHECK_INT(sh->st[1][0], REDCOLL_EABORTED);
    printf("detach: the 32 MiB send returned %s after %.3f s\n", redcoll_status_name(sh->st[0][0]),
           sh->t[0]);
    CHECK_MSG(sh->t[0] < 0.9, "the send took %.3f s", sh->t[0]);
  }
  if (want(argc, argv, "bound")) {
    memset(sh, 0, sizeof *sh);
    memset(&o, 0, sizeof o);
    o.deadline_s = 60;
    o.unexpected_max = 64 << 10;
    CHECK_INT(tcp_run_opts_run(2, rank_bound, sh, &o), REDCOLL_OK);
  }
  munmap(sh, sizeof *sh);
  return TEST_DONE();
}
