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
 *   build/tools/redcoll-run -n 3 build/examples/uv_loop [MiB [rounds]]
 *
 * Each rank starts `rounds` allreduces (default 40) of MiB mebibytes of
 * floats (default 1) one after another (the callback of one checks its
 * result and starts the next), and keeps two in flight at once, on two
 * slots of buffers.  Rank r contributes x[i] = r + slot + i % 7, so the
 * sum is exact: p (slot + i % 7) + p (p - 1) / 2; the check looks at every
 * CHECK_STRIDE-th element (and the last), which are overwritten before each
 * round, so that the program's own work in the loop stays small beside the
 * collectives' (filling and checking 16 MiB takes milliseconds too).
 * Meanwhile a timer ticks every
 * millisecond; at the end rank 0 prints how many ticks there were, how
 * late the latest was, and the longest stretch of CPU time the loop's
 * thread spent between two ticks (the work that kept a tick waiting; the
 * wall clock adds the time the thread waited for a CPU).  Exit status 0 if
 * every result was right.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <uv.h>

#include <redcoll/redcoll.h>
#include <redcoll/tcp.h>

#define INFLIGHT 2
#define CHECK_STRIDE 4099

typedef struct slot {
  struct app *app;
  int round, k;
  float *x, *sum;
} slot;

typedef struct app {
  redcoll_comm *comm;
  uv_timer_t tick;
  int p, started, finished, wrong, failed, rounds;
  size_t n; /* floats per allreduce */
  uint64_t ticks, last_ns, worst_late_ns, last_cpu_ns, worst_cpu_ns;
  slot slots[INFLIGHT];
} app;

static void start(slot *s);

/* Whether element i of slot s's sum is right; counts it if not. */
static int right(app *a, const slot *s, size_t i) {
  float want = (float)(a->p * (s->k + (int)(i % 7)) + a->p * (a->p - 1) / 2);
  if (s->sum[i] == want) return 1;
  a->wrong++;
  return 0;
}

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
    for (size_t i = 0; i < a->n; i += CHECK_STRIDE)
      if (!right(a, s, i)) break;
    right(a, s, a->n - 1);
  }
  if (!a->failed && a->started < a->rounds) start(s); /* the next one, on this slot's buffers */
  if (a->finished == a->started) uv_timer_stop(&a->tick); /* all done: the loop can end */
}

static void start(slot *s) {
  app *a = s->app;
  s->round = a->started++;
  /* What the check looks at: not a result yet. */
  for (size_t i = 0; i < a->n; i += CHECK_STRIDE) s->sum[i] = -1;
  s->sum[a->n - 1] = -1;
  redcoll_request *req;
  int rc = redcoll_iallreduce(a->comm, s->x, s->sum, a->n, REDCOLL_FLOAT32, REDCOLL_SUM, &req);
  if (rc == REDCOLL_OK) rc = redcoll_request_set_callback(req, on_done, s);
  if (rc != REDCOLL_OK) {
    fprintf(stderr, "uv_loop: starting allreduce %d: %s\n", s->round, redcoll_strerror(rc));
    a->failed = 1;
    a->finished++;
  }
}

static uint64_t thread_cpu_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The program's own work on the same loop: a 1 ms heartbeat. */
static void on_tick(uv_timer_t *t) {
  app *a = t->data;
  uint64_t now = uv_hrtime(), cpu = thread_cpu_ns();
  if (a->last_ns != 0 && now - a->last_ns > 1000000 &&
      now - a->last_ns - 1000000 > a->worst_late_ns)
    a->worst_late_ns = now - a->last_ns - 1000000;
  if (a->last_ns != 0 && cpu - a->last_cpu_ns > a->worst_cpu_ns)
    a->worst_cpu_ns = cpu - a->last_cpu_ns;
  a->last_ns = now;
  a->last_cpu_ns = cpu;
  a->ticks++;
}

int main(int argc, char **argv) {
  double mib = argc > 1 ? atof(argv[1]) : 1;
  int rounds = argc > 2 ? atoi(argv[2]) : 40;
  if (mib <= 0 || mib > 1024 || rounds < 1) {
    fprintf(stderr, "usage: uv_loop [MiB per allreduce, up to 1024 [rounds]]\n");
    return 2;
  }
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
  a.n = (size_t)(mib * 262144); /* floats */
  if (a.n == 0) a.n = 1;
  a.rounds = rounds;
  /* Bootstrap blocks (the rendezvous), before the loop runs. */
  int rc = redcoll_tcp_comm_create(&cfg, &a.comm);
  if (rc != REDCOLL_OK) {
    fprintf(stderr, "uv_loop: %s\n", redcoll_strerror(rc));
    return 1;
  }
  a.p = redcoll_comm_size(a.comm);
  for (int k = 0; k < INFLIGHT; k++) {
    slot *s = &a.slots[k];
    s->app = &a;
    s->k = k;
    s->x = malloc(a.n * sizeof(float));
    s->sum = calloc(a.n, sizeof(float));
    if (s->x == NULL || s->sum == NULL) return 1;
    int me = redcoll_comm_rank(a.comm);
    for (size_t i = 0; i < a.n; i++) s->x[i] = (float)(me + k + (int)(i % 7));
  }
  uv_timer_init(&loop, &a.tick);
  a.tick.data = &a;
  uv_timer_start(&a.tick, on_tick, 1, 1);
  for (int k = 0; k < INFLIGHT; k++) start(&a.slots[k]);
  uv_run(&loop, UV_RUN_DEFAULT); /* returns once the timer is stopped and nothing is posted */
  if (redcoll_comm_rank(a.comm) == 0)
    printf("uv_loop: %d allreduces of %zu KiB on %d ranks, %llu timer ticks meanwhile, the "
           "latest %.2f ms late, the loop's longest CPU time between two ticks %.2f ms\n",
           a.finished, a.n * sizeof(float) / 1024, a.p, (unsigned long long)a.ticks,
           (double)a.worst_late_ns * 1e-6, (double)a.worst_cpu_ns * 1e-6);
  int ok = !a.failed && a.wrong == 0 && a.finished == a.rounds;
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
