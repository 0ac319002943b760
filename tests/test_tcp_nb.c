/*
 * The TCP transport's posted exchanges (transport.h version 4: post,
 * progress, fd) and the nonblocking collectives over them: on the
 * transport's own loop, from several threads, through redcoll_comm_fd and
 * poll(2), and on the program's own libuv loop (redcoll_tcp_config.loop).
 *
 * raw_* cases call the members straight (tests/raw.h's way); the others go
 * through the public nonblocking API.  Every rank is a process
 * (tests/tcp_runner.h).  A case on the program's loop makes a second
 * communicator inside the rank: rank 0 reserves a port for its rendezvous
 * and tells the others over the runner's communicator.
 */
#include "test.h"
#include "tcp_runner.h"

#include <poll.h>
#include <pthread.h>
#include <uv.h>

#include "raw.h"

static double now_s(void) { return tcp_run__now(); }

/* What the ranks report to the parent. */
typedef struct shared {
  int st[16];
  double t[16];
  double x[16];
  int n[16];
} shared;

/* ---- the members straight ------------------------------------------------ */

typedef struct rop {
  redcoll_transport_op op;
  int status, calls;
} rop;

static void rop_done(redcoll_transport_op *op, int status) {
  rop *r = (rop *)op;
  r->status = status;
  r->calls++;
}

/* Posts an exchange on channel chan: dst < 0 no send, src < 0 no receive. */
static int rpost(redcoll_comm *c, uint64_t chan, uint64_t deadline, int dst, const void *sb,
                 size_t sl, int src, void *rb, size_t rl, rop *r, void (*done)(redcoll_transport_op *, int)) {
  memset(r, 0, sizeof *r);
  r->op.done = done != NULL ? done : rop_done;
  r->status = 1;
  redcoll_transport_ctx ctx = {deadline, 0, chan};
  redcoll_transport_msg s = {dst, 7, (void *)sb, sl}, v = {src, 7, rb, rl};
  return c->ops->post(c->impl, &ctx, dst >= 0 ? &s : NULL, src >= 0 ? &v : NULL, &r->op);
}

/* progress until r is done: its status. */
static int rwait(redcoll_comm *c, rop *r) {
  while (r->calls == 0) {
    int rc = c->ops->progress(c->impl, UINT64_MAX);
    if (rc != REDCOLL_OK) return rc;
  }
  return r->status;
}

/* A ring of exchanges chained from done: each done checks what came and
 * posts the next round (done may call post). */
#define RING_ROUNDS 200
typedef struct ring {
  rop r;
  redcoll_comm *c;
  uint64_t chan;
  int round, me, p, bad, status, finished;
  uint64_t out, in;
} ring;

static void ring_next(ring *g);

static void ring_done(redcoll_transport_op *op, int status) {
  ring *g = (ring *)op;
  if (status != REDCOLL_OK) {
    g->status = status;
    g->finished = 1;
    return;
  }
  int left = (g->me + g->p - 1) % g->p;
  if (g->in != (uint64_t)left * 1000000u + (uint64_t)g->round) g->bad++;
  g->round++;
  ring_next(g);
}

static void ring_next(ring *g) {
  if (g->round == RING_ROUNDS) {
    g->finished = 1;
    return;
  }
  g->out = (uint64_t)g->me * 1000000u + (uint64_t)g->round;
  int rc = rpost(g->c, g->chan, UINT64_MAX, (g->me + 1) % g->p, &g->out, sizeof g->out,
                 (g->me + g->p - 1) % g->p, &g->in, sizeof g->in, &g->r, ring_done);
  if (rc != REDCOLL_OK) {
    g->status = rc;
    g->finished = 1;
  }
}

static void ring_start(ring *g, redcoll_comm *c, uint64_t chan) {
  memset(g, 0, sizeof *g);
  g->c = c;
  g->chan = chan;
  g->me = redcoll_comm_rank(c);
  g->p = redcoll_comm_size(c);
  ring_next(g);
}

static int ring_result(const ring *g) {
  if (g->status != REDCOLL_OK) return g->status;
  return g->bad == 0 && g->round == RING_ROUNDS ? REDCOLL_OK : REDCOLL_EMISMATCH;
}

static int rank_raw_ring(redcoll_comm *c, void *arg) {
  (void)arg;
  ring g;
  ring_start(&g, c, 0);
  while (!g.finished) {
    int rc = c->ops->progress(c->impl, UINT64_MAX);
    if (rc != REDCOLL_OK) return rc;
  }
  return ring_result(&g);
}

static void raw_ring(void) { CHECK_INT(tcp_run(4, rank_raw_ring, NULL), REDCOLL_OK); }

/* A receive nobody answers ends with REDCOLL_ETIMEDOUT at its deadline,
 * inside progress; a send posted to a peer's channel that is cancelled
 * there, and a receive on a channel cancelled here, end with
 * REDCOLL_EABORTED. */
static int rank_raw_deadline_cancel(redcoll_comm *c, void *arg) {
  shared *sh = arg;
  int me = redcoll_comm_rank(c);
  uint64_t v = 0;
  rop r;
  if (me == 0) {
    uint64_t t0 = c->ops->now(c->impl);
    int rc = rpost(c, 8, t0 + 200000000u, -1, NULL, 0, 1, &v, sizeof v, &r, NULL);
    if (rc != REDCOLL_OK) return rc;
    CHECK_INT(r.calls, 0); /* never inside post */
    sh->st[0] = rwait(c, &r);
    sh->t[0] = (double)(c->ops->now(c->impl) - t0) * 1e-9;
    CHECK_INT(r.calls, 1);
  }
  /* Rank 1 waits on channel 12 for rank 2, which cancels the group there. */
  if (me == 1) {
    /* (post itself fails if the CANCEL came first) */
    int rc = rpost(c, 12, UINT64_MAX, -1, NULL, 0, 2, &v, sizeof v, &r, NULL);
    sh->st[1] = rc != REDCOLL_OK ? rc : rwait(c, &r);
  }
  if (me == 2) {
    int rc = rpost(c, 12, UINT64_MAX, -1, NULL, 0, 1, &v, sizeof v, &r, NULL);
    if (rc != REDCOLL_OK) return rc;
    tcp_run_sleep_ms(100);
    c->ops->cancel(c->impl, 12, REDCOLL_EABORTED);
    sh->st[2] = rwait(c, &r);
  }
  /* Everyone together again over channel 0 before leaving. */
  return redcoll_barrier(c);
}

static void raw_deadline_cancel(void) {
  shared *sh = tcp_run_shared(sizeof *sh);
  CHECK_INT(tcp_run(3, rank_raw_deadline_cancel, sh), REDCOLL_OK);
  CHECK_INT(sh->st[0], REDCOLL_ETIMEDOUT);
  CHECK_MSG(sh->t[0] > 0.15 && sh->t[0] < 3.0, "timed out after %.3f s", sh->t[0]);
  CHECK_INT(sh->st[1], REDCOLL_EABORTED);
  CHECK_INT(sh->st[2], REDCOLL_EABORTED);
  munmap(sh, sizeof *sh);
}

/* progress(0) passes driven by poll(2) on the fd member. */
static int rank_raw_fd(redcoll_comm *c, void *arg) {
  (void)arg;
  int fd = c->ops->fd(c->impl);
  if (fd < 0) return REDCOLL_EINVAL;
  ring g;
  ring_start(&g, c, 0);
  int sleeps = 0;
  while (!g.finished) {
    int rc = c->ops->progress(c->impl, 0);
    if (rc != REDCOLL_OK) return rc;
    if (g.finished) break;
    struct pollfd pfd = {fd, POLLIN, 0};
    int ms = -1;
    CHECK_INT(redcoll_tcp_comm_poll_timeout(c, &ms), REDCOLL_OK);
    if (ms < 0 || ms > 100) ms = 100;
    sleeps += poll(&pfd, 1, ms) == 0;
  }
  CHECK_MSG(sleeps < RING_ROUNDS, "%d polls timed out", sleeps);
  return ring_result(&g);
}

static void raw_fd(void) { CHECK_INT(tcp_run(3, rank_raw_fd, NULL), REDCOLL_OK); }

/* Two threads run chains on channels 4 and 8 with progress, a third
 * blocking exchanges on channel 16: they take turns with the loop, and a
 * thread in progress wakes when another finished its exchange. */
typedef struct thr {
  redcoll_comm *c;
  uint64_t chan;
  int rc;
} thr;

static void *thr_ring(void *a) {
  thr *x = a;
  ring g;
  ring_start(&g, x->c, x->chan);
  while (!g.finished) {
    int rc = x->c->ops->progress(x->c->impl, UINT64_MAX);
    if (rc != REDCOLL_OK) {
      x->rc = rc;
      return NULL;
    }
  }
  x->rc = ring_result(&g);
  return NULL;
}

static void *thr_blocking(void *a) {
  thr *x = a;
  redcoll_comm *c = x->c;
  int me = redcoll_comm_rank(c), p = redcoll_comm_size(c);
  for (int i = 0; i < RING_ROUNDS && x->rc == REDCOLL_OK; i++) {
    uint64_t out = (uint64_t)me * 1000u + (uint64_t)i, in = 0;
    redcoll_transport_ctx ctx = {UINT64_MAX, 0, x->chan};
    redcoll_transport_msg s = {(me + 1) % p, 9, &out, sizeof out},
                          v = {(me + p - 1) % p, 9, &in, sizeof in};
    x->rc = c->ops->exchange(c->impl, &ctx, &s, &v);
    if (x->rc == REDCOLL_OK && in != (uint64_t)((me + p - 1) % p) * 1000u + (uint64_t)i)
      x->rc = REDCOLL_EMISMATCH;
  }
  return NULL;
}

static int rank_raw_threads(redcoll_comm *c, void *arg) {
  (void)arg;
  thr x[3] = {{c, 4, 0}, {c, 8, 0}, {c, 16, 0}};
  pthread_t th[3];
  for (int i = 0; i < 3; i++) pthread_create(&th[i], NULL, i < 2 ? thr_ring : thr_blocking, &x[i]);
  for (int i = 0; i < 3; i++) pthread_join(th[i], NULL);
  for (int i = 0; i < 3; i++)
    if (x[i].rc != REDCOLL_OK) return x[i].rc;
  return REDCOLL_OK;
}

static void raw_threads(void) { CHECK_INT(tcp_run(3, rank_raw_threads, NULL), REDCOLL_OK); }

/* ---- on the program's own libuv loop ------------------------------------ */

/* A second communicator of the same ranks whose handles live on loop:
 * rank 0 reserves a port for the rendezvous and tells the others over c. */
static int loop_comm(redcoll_comm *c, uv_loop_t *loop, redcoll_comm **out) {
  int me = redcoll_comm_rank(c), fd = -1;
  int32_t port = 0;
  if (me == 0 && (port = tcp_run__port(0, &fd)) < 0) port = 0;
  int rc = redcoll_bcast(c, &port, 1, REDCOLL_INT32, 0);
  if (rc != REDCOLL_OK) return rc;
  if (port == 0) return REDCOLL_ETRANSPORT;
  char master[64];
  snprintf(master, sizeof master, "127.0.0.1:%d", (int)port);
  redcoll_tcp_config cfg;
  redcoll_tcp_config_init(&cfg);
  cfg.rank = me;
  cfg.size = redcoll_comm_size(c);
  cfg.master = master;
  cfg.wait_timeout_ms = 60000;
  cfg.loop = loop;
  rc = redcoll_tcp_comm_create(&cfg, out);
  if (fd >= 0) close(fd);
  return rc;
}

/* Destroys a communicator on loop, runs the loop until its handles are
 * closed and closes the loop. */
static int loop_fini(redcoll_comm *lc, uv_loop_t *loop) {
  redcoll_comm_destroy(lc);
  uv_run(loop, UV_RUN_DEFAULT);
  int r = uv_loop_close(loop);
  CHECK_MSG(r == 0, "uv_loop_close: %s", uv_strerror(r));
  return r == 0 ? REDCOLL_OK : REDCOLL_ETRANSPORT;
}

typedef struct ticker {
  uv_timer_t tm;
  double last, worst;
  int ticks;
  int *stop;
} ticker;

static void on_tick(uv_timer_t *h) {
  ticker *k = h->data;
  double n = now_s();
  if (k->ticks > 0 && n - k->last - 1e-3 > k->worst) k->worst = n - k->last - 1e-3;
  k->last = n;
  k->ticks++;
  if (*k->stop) uv_timer_stop(h);
}

/* The ring chained from done on the program's loop, next to a 1 ms
 * timer: uv_run(DEFAULT) returns once the ring is over (the transport
 * keeps the loop alive while an exchange is posted, and only then). */
static int rank_raw_uv(redcoll_comm *c, void *arg) {
  shared *sh = arg;
  uv_loop_t loop;
  uv_loop_init(&loop);
  redcoll_comm *lc = NULL;
  int rc = loop_comm(c, &loop, &lc);
  if (rc != REDCOLL_OK) return rc;
  int stop = 0;
  ticker k = {.stop = &stop};
  uv_timer_init(&loop, &k.tm);
  k.tm.data = &k;
  uv_timer_start(&k.tm, on_tick, 1, 1);
  uv_unref((uv_handle_t *)&k.tm); /* the ring alone keeps the loop alive */
  ring g;
  ring_start(&g, lc, 0);
  uv_run(&loop, UV_RUN_DEFAULT);
  stop = 1;
  uv_close((uv_handle_t *)&k.tm, NULL);
  CHECK(g.finished);
  rc = ring_result(&g);
  sh->n[redcoll_comm_rank(c)] = k.ticks;
  /* A blocking call outside the loop's callbacks runs the loop itself. */
  if (rc == REDCOLL_OK) rc = redcoll_barrier(lc);
  int rc2 = loop_fini(lc, &loop);
  return rc != REDCOLL_OK ? rc : rc2;
}

static void raw_uv(void) {
  shared *sh = tcp_run_shared(sizeof *sh);
  CHECK_INT(tcp_run(3, rank_raw_uv, sh), REDCOLL_OK);
  munmap(sh, sizeof *sh);
}

TEST_MAIN(TEST(raw_ring), TEST(raw_deadline_cancel), TEST(raw_fd), TEST(raw_threads),
          TEST(raw_uv))
