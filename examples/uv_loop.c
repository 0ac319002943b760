/*
 * TCP collectives on the program's own libuv loop: the transport's sockets
 * live on the loop the program runs (redcoll_tcp_config.loop), a chain of
 * nonblocking allreduces moves on while uv_run turns, and their callbacks
 * come from that loop, between the ticks of the program's 1 ms timer.  No
 * thread is parked on a collective.
 *
 * Start it under a launcher, which sets the environment the TCP transport
 * reads (REDCOLL_RANK, REDCOLL_SIZE, REDCOLL_MASTER):
 *
 *   build/tools/redcoll-run -n 3 build/examples/uv_loop
 *
 * Each rank starts ROUNDS allreduces of N floats one after another (the
 * callback of one checks its result and starts the next), and keeps two
 * in flight at once.  Rank r contributes x[i] = r + round + i % 7, so the
 * sum is exact: p (round + i % 7) + p (p - 1) / 2.  Meanwhile a timer ticks
 * every millisecond; at the end rank 0 prints how many ticks there were and
 * how late the latest was.  Exit status 0 if every result was right.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uv.h>

#include <redcoll/redcoll.h>
#include <redcoll/tcp.h>

#define ROUNDS 40
#define INFLIGHT 2
#define N (256 * 1024) /* floats: 1 MiB per allreduce */

typedef struct slot {
  struct app *app;
  int round;
  float *x, *sum;
} slot;

typedef struct app {
  redcoll_comm *comm;
  uv_timer_t tick;
  int p, started, finished, wrong, failed;
  uint64_t ticks, last_ns, worst_late_ns;
  slot slots[INFLIGHT];
} app;

static void start(slot *s);

/* Called from the loop (inside uv_run) when an allreduce has finished. */
static void on_done(redcoll_request *req, int status, void *arg) {
  slot *s = arg;
  app *a = s->app;
  redcoll_wait(req); /* frees req: it has finished, so this returns at once */
  a->finished++;
  if (status != REDCOLL_OK) {
    fprintf(stderr, "uv_loop: allreduce %d: %s\n", s->round, redcoll_strerror(status));
    a->failed = 1;
  } else {
    for (int i = 0; i < N; i++) {
      float want = (float)(a->p * (s->round + i % 7) + a->p * (a->p - 1) / 2);
      if (s->sum[i] != want) {
        a->wrong++;
        break;
      }
    }
  }
  if (!a->failed && a->started < ROUNDS) start(s); /* the next one, on this slot's buffers */
  if (a->finished == a->started) uv_timer_stop(&a->tick); /* all done: the loop can end */
}

static void start(slot *s) {
  app *a = s->app;
  s->round = a->started++;
  int me = redcoll_comm_rank(a->comm);
  for (int i = 0; i < N; i++) s->x[i] = (float)(me + s->round + i % 7);
  redcoll_request *req;
  int rc = redcoll_iallreduce(a->comm, s->x, s->sum, N, REDCOLL_FLOAT32, REDCOLL_SUM, &req);
  if (rc == REDCOLL_OK) rc = redcoll_request_set_callback(req, on_done, s);
  if (rc != REDCOLL_OK) {
    fprintf(stderr, "uv_loop: starting allreduce %d: %s\n", s->round, redcoll_strerror(rc));
    a->failed = 1;
    a->finished++;
  }
}

/* The program's own work on the same loop: a 1 ms heartbeat. */
static void on_tick(uv_timer_t *t) {
  app *a = t->data;
  uint64_t now = uv_hrtime();
  if (a->last_ns != 0 && now - a->last_ns > 1000000 &&
      now - a->last_ns - 1000000 > a->worst_late_ns)
    a->worst_late_ns = now - a->last_ns - 1000000;
  a->last_ns = now;
  a->ticks++;
}

int main(void) {
  uv_loop_t loop;
  uv_loop_init(&loop);
  redcoll_tcp_config cfg;
  if (redcoll_tcp_config_from_env(&cfg) != REDCOLL_OK) {
    fprintf(stderr, "uv_loop: start it under a launcher: redcoll-run -n 3 uv_loop\n");
    return 2;
  }
  cfg.loop = &loop; /* every socket of the transport on this loop */
  app a;
  memset(&a, 0, sizeof a);
  /* Bootstrap blocks (the rendezvous), before the loop runs. */
  int rc = redcoll_tcp_comm_create(&cfg, &a.comm);
  if (rc != REDCOLL_OK) {
    fprintf(stderr, "uv_loop: %s\n", redcoll_strerror(rc));
    return 1;
  }
  a.p = redcoll_comm_size(a.comm);
  uv_timer_init(&loop, &a.tick);
  a.tick.data = &a;
  uv_timer_start(&a.tick, on_tick, 1, 1);
  for (int k = 0; k < INFLIGHT; k++) {
    slot *s = &a.slots[k];
    s->app = &a;
    s->x = malloc(N * sizeof(float));
    s->sum = malloc(N * sizeof(float));
    if (s->x == NULL || s->sum == NULL) return 1;
    start(s);
  }
  uv_run(&loop, UV_RUN_DEFAULT); /* returns once the timer is stopped and nothing is posted */
  if (redcoll_comm_rank(a.comm) == 0)
    printf("uv_loop: %d allreduces of %zu KiB on %d ranks, %llu timer ticks meanwhile, the "
           "latest %.2f ms late\n",
           a.finished, N * sizeof(float) / 1024, a.p, (unsigned long long)a.ticks,
           (double)a.worst_late_ns * 1e-6);
  int ok = !a.failed && a.wrong == 0 && a.finished == ROUNDS;
  redcoll_comm_destroy(a.comm);
  uv_close((uv_handle_t *)&a.tick, NULL);
  uv_run(&loop, UV_RUN_DEFAULT); /* the transport's handles close */
  uv_loop_close(&loop);
  for (int k = 0; k < INFLIGHT; k++) {
    free(a.slots[k].x);
    free(a.slots[k].sum);
  }
  if (!ok) fprintf(stderr, "uv_loop: %d wrong results\n", a.wrong);
  return ok ? 0 : 1;
}
