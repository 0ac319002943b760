/*
 * Posted exchanges (transport.h version 4) over shared memory, and the
 * nonblocking collectives over them: on the shared-memory transport
 * (processes of tests/shm_runner.h), and on TCP with its shared-memory
 * path (tests/tcp_runner.h), all ranks on this host or on two fake hosts
 * (REDCOLL_SHM_HOST_ID: ranks 0-1 on A, 2-4 on B), where an exchange can
 * have a half of each kind.
 *
 *   raw_*    the members straight: a receive nobody answers ends with
 *            REDCOLL_ETIMEDOUT at its deadline, one on a channel group that
 *            a peer cancels with REDCOLL_EABORTED, each done called once,
 *            never inside cancel.
 *   mixed_*  240 requests of five kinds (allreduces of 16 and of 20000
 *            int64 -- the latter by cross-memory attach --, bcast,
 *            allgather, reduce) outstanding at once, tested in reverse
 *            order until all are done, every element checked.  Rank 0's
 *            first request is posted before any other rank has started
 *            (they wait for it to say so): an i-form that ran at once
 *            would wait for them forever.  redcoll_comm_fd is -1.
 *   thread_* the same with the progress thread on and callbacks counting:
 *            the main thread only sleeps until they have all run.
 *   poll_*   the same moved on by redcoll_comm_progress from a loop that
 *            sleeps a millisecond between calls (the recipe for a poll loop
 *            without a descriptor).
 *   hosts_tcp  info.hosts through the vtable on fake hosts B A B C A (rank
 *            3 alone on its host, reaching every peer by TCP): 0 1 0 2 1 on
 *            every rank, and the mixed requests above; NULL when every
 *            rank is alone on its host.
 *   kill9_*  the last rank is killed (SIGKILL) 2 ms into a 16 MiB
 *            iallreduce with six more queued: every request of every
 *            survivor fails, within 10 s.
 */
#include <poll.h>
#include <pthread.h>

#include "test.h"
#include "shm_runner.h"
#ifdef REDCOLL_TEST_TCP
#include "tcp_runner.h"
#endif

#include "raw.h"

static double now_s(void) { return shm_run__now(); }

static void *shared_new(size_t n) {
  void *s = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (s == MAP_FAILED) {
    perror("mmap");
    exit(2);
  }
  memset(s, 0, n);
  return s;
}

/* What the ranks report to the parent. */
typedef struct shared {
  int mode;      /* MODE_* */
  int posted;    /* rank 0's first request is posted */
  int st[16];
  int n[16];     /* wrong elements, or failed requests */
  int fd[16];
  double t[16];
  int nhosts[16];      /* -1: info.hosts NULL */
  uint32_t hosts[16][16];
  double local[16][2]; /* local_alpha, local_beta */
} shared;

enum { MODE_TEST, MODE_THREAD, MODE_POLL };

/* ---- the worlds ------------------------------------------------------------- */

enum { W_SHM, W_TCP_LOCAL, W_TCP_HOSTS, W_TCP_SPREAD, W_TCP_ALONE };
#define P 5
/* The fake hosts of the TCP worlds W_TCP_HOSTS and after. */
static const char *const fake[3][P] = {
    {"A", "A", "B", "B", "B"},
    {"B", "A", "B", "C", "A"}, /* rank 3 alone on its host */
    {"A", "B", "C", "D", "E"}, /* every rank alone */
};

/* Runs fn on P ranks of world w; statuses[r] gets rank r's. */
static int run_in(int w, redcoll_rank_main fn, void *arg, int *statuses) {
  int rc;
  if (w == W_SHM) {
    shm_run_opts o;
    shm_run_opts_init(&o);
    o.timeout_ms = 30000;
    o.deadline_s = 120;
    rc = shm_run_opts_run(P, fn, arg, &o);
    memcpy(statuses, o.statuses, P * sizeof *statuses);
    return rc;
  }
#ifdef REDCOLL_TEST_TCP
  tcp_run_opts o;
  memset(&o, 0, sizeof o);
  o.shm = 1;
  for (int r = 0; r < P && w >= W_TCP_HOSTS; r++) o.shm_hosts[r] = fake[w - W_TCP_HOSTS][r];
  o.timeout_ms = 30000;
  o.deadline_s = 120;
  rc = tcp_run_opts_run(P, fn, arg, &o);
  memcpy(statuses, o.statuses, P * sizeof *statuses);
  return rc;
#else
  (void)fn, (void)arg, (void)statuses;
  return REDCOLL_ENOTSUP;
#endif
}

/* Whether world w can run here (TCP needs libuv). */
static int have(int w) {
#ifdef REDCOLL_TEST_TCP
  (void)w;
  return 1;
#else
  if (w != W_SHM) printf("note: built without TCP; this case did not run\n");
  return w == W_SHM;
#endif
}

static uint64_t mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t clock_of(redcoll_comm *c) {
  return c->ops->now != NULL ? c->ops->now(c->impl) : mono_ns();
}

static void sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

/* ---- the members straight --------------------------------------------------- */

typedef struct rop {
  redcoll_transport_op op;
  int status, calls;
} rop;

static void rop_done(redcoll_transport_op *op, int status) {
  rop *r = (rop *)op;
  r->status = status;
  r->calls++;
}

/* Posts a receive of 8 bytes from src on channel chan. */
static int rpost_recv(redcoll_comm *c, uint64_t chan, uint64_t deadline, int src, uint64_t *v,
                      rop *r) {
  memset(r, 0, sizeof *r);
  r->op.done = rop_done;
  r->status = 1;
  redcoll_transport_ctx ctx = {deadline, 0, chan};
  redcoll_transport_msg m = {src, 7, v, sizeof *v};
  return c->ops->post(c->impl, &ctx, NULL, &m, &r->op);
}

static int rwait(redcoll_comm *c, rop *r) {
  double t0 = now_s();
  while (r->calls == 0 && now_s() - t0 < 20) {
    int rc = c->ops->progress(c->impl, clock_of(c) + 5000000u);
    if (rc != REDCOLL_OK) return rc;
  }
  return r->calls == 1 ? r->status : REDCOLL_ETIMEDOUT;
}

/* Rank 0 waits for rank 1 on channel 8 under a 200 ms deadline; rank 1
 * waits for rank 2 on channel 12, whose group rank 2 cancels. */
static int rank_raw(redcoll_comm *c, void *arg) {
  shared *sh = arg;
  int me = redcoll_comm_rank(c);
  CHECK(c->ops->version >= 4 && c->ops->post != NULL && c->ops->progress != NULL);
  uint64_t v = 0;
  rop r;
  if (me == 0) {
    uint64_t t0 = clock_of(c);
    int rc = rpost_recv(c, 8, t0 + 200000000u, 1, &v, &r);
    if (rc != REDCOLL_OK) return rc;
    CHECK_INT(r.calls, 0);
    sh->st[0] = rwait(c, &r);
    sh->t[0] = (double)(clock_of(c) - t0) * 1e-9;
    CHECK_INT(r.calls, 1);
  }
  if (me == 1) {
    int rc = rpost_recv(c, 12, UINT64_MAX, 2, &v, &r);
    sh->st[1] = rc != REDCOLL_OK ? rc : rwait(c, &r);
  }
  if (me == 2) {
    int rc = rpost_recv(c, 12, UINT64_MAX, 1, &v, &r);
    if (rc != REDCOLL_OK) return rc;
    sleep_ms(100);
    c->ops->cancel(c->impl, 12, REDCOLL_EABORTED);
    CHECK_INT(r.calls, 0); /* through progress, never inside cancel */
    sh->st[2] = rwait(c, &r);
    CHECK_INT(r.calls, 1);
  }
  return redcoll_barrier(c);
}

static void raw_in(int w) {
  if (!have(w)) return;
  shared *sh = shared_new(sizeof *sh);
  int st[P];
  CHECK_INT(run_in(w, rank_raw, sh, st), REDCOLL_OK);
  CHECK_INT(sh->st[0], REDCOLL_ETIMEDOUT);
  CHECK_MSG(sh->t[0] > 0.15 && sh->t[0] < 5.0, "timed out after %.3f s", sh->t[0]);
  CHECK_INT(sh->st[1], REDCOLL_EABORTED);
  CHECK_INT(sh->st[2], REDCOLL_EABORTED);
  munmap(sh, sizeof *sh);
}

static void raw_shm(void) { raw_in(W_SHM); }
static void raw_tcp_hosts(void) { raw_in(W_TCP_HOSTS); }

/* ---- many requests of mixed kinds ----------------------------------------- */

#define NREQ 240
enum { K_SMALL, K_LARGE, K_BCAST, K_GATHER, K_REDUCE, NKINDS };
static const size_t kind_cnt[NKINDS] = {16, 20000, 3000, 50, 1000};

static int64_t contrib(int r, int k, size_t i) {
  return (int64_t)r * 1000003 + (int64_t)k * 7 + (int64_t)i;
}
static int64_t total(int p, int k, size_t i) {
  return (int64_t)1000003 * p * (p - 1) / 2 + (int64_t)p * ((int64_t)k * 7 + (int64_t)i);
}

typedef struct req {
  int64_t *in, *out;
  redcoll_request *r;
} req;

/* Starts request k on c. */
static int start_one(redcoll_comm *c, int k, req *q) {
  int p = redcoll_comm_size(c), me = redcoll_comm_rank(c), kind = k % NKINDS;
  size_t n = kind_cnt[kind];
  q->in = calloc(n, sizeof *q->in);
  q->out = calloc(n * (size_t)p, sizeof *q->out);
  if (q->in == NULL || q->out == NULL) return REDCOLL_ENOMEM;
  for (size_t i = 0; i < n; i++) q->in[i] = contrib(me, k, i);
  switch (kind) {
  case K_SMALL:
  case K_LARGE:
    return redcoll_iallreduce(c, q->in, q->out, n, REDCOLL_INT64, REDCOLL_SUM, &q->r);
  case K_BCAST:
    if (me == k % p) memcpy(q->out, q->in, n * sizeof *q->in);
    return redcoll_ibcast(c, q->out, n, REDCOLL_INT64, k % p, &q->r);
  case K_GATHER:
    return redcoll_iallgather(c, q->in, q->out, n, REDCOLL_INT64, &q->r);
  default:
    return redcoll_ireduce(c, q->in, q->out, n, REDCOLL_INT64, REDCOLL_SUM, k % p, &q->r);
  }
}

/* Wrong elements of finished request k. */
static int bad_of(redcoll_comm *c, int k, const req *q) {
  int p = redcoll_comm_size(c), me = redcoll_comm_rank(c), kind = k % NKINDS, bad = 0;
  size_t n = kind_cnt[kind];
  for (size_t i = 0; i < n; i++) switch (kind) {
    case K_SMALL:
    case K_LARGE:
      bad += q->out[i] != total(p, k, i);
      break;
    case K_BCAST:
      bad += q->out[i] != contrib(k % p, k, i);
      break;
    case K_GATHER:
      for (int r = 0; r < p; r++) bad += q->out[(size_t)r * n + i] != contrib(r, k, i);
      break;
    default:
      bad += me == k % p ? q->out[i] != total(p, k, i) : q->out[i] != 0;
    }
  return bad;
}

static void count_cb(redcoll_request *r, int status, void *arg) {
  int *n = arg;
  __atomic_add_fetch(n, status == REDCOLL_OK ? 1 : 100000, __ATOMIC_ACQ_REL);
  redcoll_wait(r); /* frees it once the callback returns */
}

static int rank_mixed(redcoll_comm *c, void *arg) {
  shared *sh = arg;
  int me = redcoll_comm_rank(c);
  req *q = calloc(NREQ, sizeof *q);
  if (q == NULL) return REDCOLL_ENOMEM;
  sh->fd[me] = redcoll_comm_fd(c);
  int rc = REDCOLL_OK, finished = 0;
  if (sh->mode == MODE_THREAD) rc = redcoll_comm_set_progress_thread(c, 1);
  /* Rank 0's first request is posted before anybody else starts one. */
  if (rc == REDCOLL_OK && me == 0) {
    rc = start_one(c, 0, &q[0]);
    int done = 1;
    if (rc == REDCOLL_OK) rc = redcoll_test(q[0].r, &done);
    CHECK_MSG(done == 0, "rank 0: the first request finished alone");
    __atomic_store_n(&sh->posted, 1, __ATOMIC_RELEASE);
  } else if (rc == REDCOLL_OK) {
    double t0 = now_s();
    while (!__atomic_load_n(&sh->posted, __ATOMIC_ACQUIRE) && now_s() - t0 < 20) sleep_ms(1);
    if (!__atomic_load_n(&sh->posted, __ATOMIC_ACQUIRE)) rc = REDCOLL_ETIMEDOUT;
    CHECK_MSG(rc == REDCOLL_OK, "rank %d: rank 0 never said its request was posted", me);
    if (rc == REDCOLL_OK) rc = start_one(c, 0, &q[0]);
  }
  for (int k = 1; k < NREQ && rc == REDCOLL_OK; k++) rc = start_one(c, k, &q[k]);
  if (rc == REDCOLL_OK && sh->mode == MODE_THREAD)
    for (int k = 0; k < NREQ && rc == REDCOLL_OK; k++) {
      rc = redcoll_request_set_callback(q[k].r, count_cb, &finished);
      q[k].r = NULL;
    }
  double t0 = now_s();
  int left = NREQ;
  while (rc == REDCOLL_OK && left > 0 && now_s() - t0 < 60) {
    if (sh->mode == MODE_THREAD) {
      /* Nothing but the progress thread moves them. */
      left = NREQ - __atomic_load_n(&finished, __ATOMIC_ACQUIRE);
      if (left < 0) rc = REDCOLL_EPROTO; /* a callback saw a failure */
      sleep_ms(1);
      continue;
    }
    if (sh->mode == MODE_POLL) {
      rc = redcoll_comm_progress(c);
      sleep_ms(1);
    }
    for (int k = NREQ - 1; k >= 0 && rc == REDCOLL_OK; k--) {
      if (q[k].r == NULL) continue;
      int done = 0;
      rc = redcoll_test(q[k].r, &done);
      if (done) {
        q[k].r = NULL;
        left--;
      }
    }
  }
  if (rc == REDCOLL_OK && left != 0) rc = REDCOLL_ETIMEDOUT;
  CHECK_MSG(rc == REDCOLL_OK, "rank %d: %s, %d requests left", me, redcoll_status_name(rc), left);
  for (int k = 0; k < NREQ && rc == REDCOLL_OK; k++) sh->n[me] += bad_of(c, k, &q[k]);
  /* Blocking and nonblocking calls mix. */
  if (rc == REDCOLL_OK) rc = redcoll_barrier(c);
  if (sh->mode == MODE_THREAD) redcoll_comm_set_progress_thread(c, 0);
  for (int k = 0; k < NREQ; k++) {
    if (q[k].r != NULL) redcoll_wait(q[k].r);
    free(q[k].in);
    free(q[k].out);
  }
  free(q);
  return rc;
}

static void mixed_in(int w, int mode) {
  if (!have(w)) return;
  shared *sh = shared_new(sizeof *sh);
  sh->mode = mode;
  int st[P];
  double t0 = now_s();
  CHECK_INT(run_in(w, rank_mixed, sh, st), REDCOLL_OK);
  for (int r = 0; r < P; r++) {
    CHECK_MSG(sh->n[r] == 0, "rank %d: %d wrong elements", r, sh->n[r]);
    CHECK_MSG(sh->fd[r] == -1, "rank %d: redcoll_comm_fd %d", r, sh->fd[r]);
  }
  printf("  %d requests of %d kinds outstanding at p = %d: %.2f s\n", NREQ, NKINDS, P,
         now_s() - t0);
  munmap(sh, sizeof *sh);
}

static void mixed_shm(void) { mixed_in(W_SHM, MODE_TEST); }
static void mixed_tcp_local(void) { mixed_in(W_TCP_LOCAL, MODE_TEST); }
static void mixed_tcp_hosts(void) { mixed_in(W_TCP_HOSTS, MODE_TEST); }
static void thread_shm(void) { mixed_in(W_SHM, MODE_THREAD); }
static void thread_tcp_hosts(void) { mixed_in(W_TCP_HOSTS, MODE_THREAD); }
static void poll_shm(void) { mixed_in(W_SHM, MODE_POLL); }
static void poll_tcp_hosts(void) { mixed_in(W_TCP_HOSTS, MODE_POLL); }

/* ---- which ranks share a host ------------------------------------------------ */

static int rank_hosts(redcoll_comm *c, void *arg) {
  shared *sh = arg;
  int me = redcoll_comm_rank(c);
  redcoll_transport_info info;
  memset(&info, 0, sizeof info);
  int rc = c->ops->info(c->impl, &info);
  sh->nhosts[me] = info.hosts == NULL ? -1 : P;
  for (int r = 0; r < P && info.hosts != NULL; r++) sh->hosts[me][r] = info.hosts[r];
  sh->local[me][0] = info.local_alpha;
  sh->local[me][1] = info.local_beta;
  /* Every path works, the lone rank's too (with every rank alone this is
   * TCP alone, tested elsewhere). */
  if (rc == REDCOLL_OK && info.hosts != NULL) rc = rank_mixed(c, arg);
  return rc;
}

/* info.hosts through the vtable: hosts numbered in the order of their
 * lowest ranks, the same array on every rank, also on rank 3 alone on
 * its host (which reaches everybody by TCP); NULL when every rank is
 * alone.  The local model is the shared-memory transport's. */
static void hosts_tcp(void) {
  if (!have(W_TCP_SPREAD)) return;
  static const uint32_t want[P] = {0, 1, 0, 2, 1};
  for (int w = W_TCP_SPREAD; w <= W_TCP_ALONE; w++) {
    shared *sh = shared_new(sizeof *sh);
    int st[P];
    double t0 = now_s();
    CHECK_INT(run_in(w, rank_hosts, sh, st), REDCOLL_OK);
    printf("  %s: %.2f s\n", w == W_TCP_ALONE ? "every rank alone" : "rank 3 alone", now_s() - t0);
    for (int r = 0; r < P; r++) {
      CHECK_MSG(sh->n[r] == 0, "world %d rank %d: %d wrong elements", w, r, sh->n[r]);
      if (w == W_TCP_ALONE) {
        CHECK_MSG(sh->nhosts[r] == -1, "rank %d: hosts given with every rank alone", r);
        continue;
      }
      CHECK_MSG(sh->nhosts[r] == P, "rank %d: no hosts", r);
      for (int q = 0; q < P; q++)
        CHECK_MSG(sh->hosts[r][q] == want[q], "rank %d: hosts[%d] = %u, not %u", r, q,
                  sh->hosts[r][q], want[q]);
      CHECK_MSG(sh->local[r][0] == 2e-6 && sh->local[r][1] == 1e-10, "rank %d: local %g %g", r,
                sh->local[r][0], sh->local[r][1]);
    }
    munmap(sh, sizeof *sh);
  }
}

/* ---- a rank killed mid-collective ------------------------------------------- */

#define KILL_N 6
static int rank_killed(redcoll_comm *c, void *arg) {
  shared *sh = arg;
  int me = redcoll_comm_rank(c), p = redcoll_comm_size(c);
  size_t n = (size_t)4 << 20; /* floats: 16 MiB */
  float *big = calloc(n, sizeof *big), *sum = calloc(n, sizeof *sum);
  int64_t small[KILL_N], ssum[KILL_N];
  redcoll_request *reqs[KILL_N + 1];
  if (big == NULL || sum == NULL) return REDCOLL_ENOMEM;
  int rc = redcoll_barrier(c);
  if (rc != REDCOLL_OK) return rc;
  double t0 = now_s();
  /* A survivor that starts after the kill may see the start itself fail:
   * that request has failed too. */
  int errors = 0;
  if (redcoll_iallreduce(c, big, sum, n, REDCOLL_FLOAT32, REDCOLL_SUM, &reqs[0]) != REDCOLL_OK) {
    reqs[0] = NULL;
    errors++;
  }
  for (int k = 0; k < KILL_N; k++) {
    small[k] = k;
    if (redcoll_iallreduce(c, &small[k], &ssum[k], 1, REDCOLL_INT64, REDCOLL_SUM, &reqs[k + 1]) !=
        REDCOLL_OK) {
      reqs[k + 1] = NULL;
      errors++;
    }
  }
  if (me == p - 1) {
    while (now_s() - t0 < 0.002) redcoll_comm_progress(c);
    fflush(NULL);
    raise(SIGKILL);
  }
  for (int k = 0; k <= KILL_N; k++) errors += reqs[k] != NULL && redcoll_wait(reqs[k]) != REDCOLL_OK;
  sh->n[me] = errors;
  sh->t[me] = now_s() - t0;
  free(big);
  free(sum);
  return REDCOLL_OK;
}

static void kill9_in(int w) {
  if (!have(w)) return;
  shared *sh = shared_new(sizeof *sh);
  int st[P];
  CHECK_INT(run_in(w, rank_killed, sh, st), REDCOLL_ETRANSPORT); /* the killed rank */
  CHECK_INT(st[P - 1], REDCOLL_ETRANSPORT);
  for (int r = 0; r < P - 1; r++) {
    CHECK_MSG(st[r] == REDCOLL_OK, "rank %d: %s", r, redcoll_status_name(st[r]));
    CHECK_MSG(sh->n[r] == KILL_N + 1, "rank %d: %d of %d requests failed", r, sh->n[r], KILL_N + 1);
    CHECK_MSG(sh->t[r] < 10.0, "rank %d took %.2f s", r, sh->t[r]);
  }
  munmap(sh, sizeof *sh);
}

static void kill9_shm(void) { kill9_in(W_SHM); }
static void kill9_tcp_hosts(void) { kill9_in(W_TCP_HOSTS); }

TEST_MAIN(TEST(raw_shm), TEST(raw_tcp_hosts), TEST(mixed_shm), TEST(mixed_tcp_local),
          TEST(mixed_tcp_hosts), TEST(thread_shm), TEST(thread_tcp_hosts), TEST(poll_shm),
          TEST(poll_tcp_hosts), TEST(hosts_tcp), TEST(kill9_shm), TEST(kill9_tcp_hosts))
