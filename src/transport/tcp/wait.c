/* Waiting, from any number of threads.  libuv's loop is not thread-safe, so
 * one mutex (t->mu) guards the loop and the whole transport, and the
 * threads take turns as its leader:
 *
 *   - a thread that waits for something and finds no leader becomes it:
 *     it runs the loop without blocking (uv_run NOWAIT, mutex held), wakes
 *     the other waiters (cv), and then polls the loop's descriptor with the
 *     mutex released, for at most the loop's next timer or its own
 *     deadline;
 *   - the others wait on cv until their operation is done, their deadline
 *     passes, or the leader leaves (done), when one of them takes over;
 *   - a thread that posts an operation or cancels does so under the mutex
 *     while the leader polls (no libuv call runs then), and wakes the
 *     leader's poll (t->wake) so that the loop sees it.
 *
 * So a blocking call costs no thread of its own, and a collective in one
 * thread progresses the messages of every other thread's.  The posted
 * exchanges of nonblocking collectives wait here too (tcp.c's progress,
 * whose condition is "an exchange is over, or another thread has called
 * the dones of some"); their dones are called after this returns, with no
 * thread leading.  On the program's own loop (t->ext) one thread makes
 * every call, the mutex is recursive (the loop's callbacks may call in
 * again), and the transport's handles are unref'd, so the leader refs the
 * wake-up while it runs the loop. */
#include <limits.h>
#include <poll.h>
#include <time.h>

#include "wait.h"

static void on_wake(uv_async_t *a) { (void)a; }

int redcoll__tcp_wait_init(redcoll__tcp *t) {
  pthread_condattr_t ca;
  if (pthread_condattr_init(&ca) != 0) return REDCOLL_ENOMEM;
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC); /* uv_hrtime's clock */
  int r = pthread_cond_init(&t->cv, &ca);
  pthread_condattr_destroy(&ca);
  if (r != 0) return REDCOLL_ENOMEM;
  /* On the embedder's loop one thread makes every call, and the loop's
   * callbacks (a request's, a timer's) may call the transport again while
   * a call of that thread holds the mutex and runs the loop. */
  pthread_mutexattr_t ma;
  if (pthread_mutexattr_init(&ma) != 0) {
    pthread_cond_destroy(&t->cv);
    return REDCOLL_ENOMEM;
  }
  if (t->ext) pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_RECURSIVE);
  r = pthread_mutex_init(&t->mu, &ma);
  pthread_mutexattr_destroy(&ma);
  if (r != 0) {
    pthread_cond_destroy(&t->cv);
    return REDCOLL_ENOMEM;
  }
  t->mu_init = 1;
  if (uv_async_init(t->loop, &t->wake, on_wake) != 0) return REDCOLL_ENOMEM;
  if (t->ext) uv_unref((uv_handle_t *)&t->wake);
  t->wake_init = 1;
  return REDCOLL_OK;
}

void redcoll__tcp_wait_fini(redcoll__tcp *t) {
  if (!t->mu_init) return;
  pthread_mutex_destroy(&t->mu);
  pthread_cond_destroy(&t->cv);
  t->mu_init = 0;
}

void redcoll__tcp_ext_soon(redcoll__tcp *t) {
  if (!t->ext || !t->nb_init) return;
  uv_ref((uv_handle_t *)&t->nb_idle); /* the loop lives until that turn */
  uv_idle_start(&t->nb_idle, t->on_idle);
}

void redcoll__tcp_kick(redcoll__tcp *t) {
  if (t->leader && t->wake_init) uv_async_send(&t->wake);
}

static void abs_time(struct timespec *ts, uint64_t ns) {
  ts->tv_sec = (time_t)(ns / 1000000000u);
  ts->tv_nsec = (long)(ns % 1000000000u);
}

/* Ranks per CPU on the busiest kernel, as the exchange of host identities
 * found it (src/transport/shm/host.c: the ranks of one boot id over the
 * CPUs their masks allow together); without that exchange (REDCOLL_SHM=0,
 * one rank, the program's loop), p / the CPU count of the rendezvous
 * table, which rank 0 sent everyone; with neither (a host list, ranks on
 * several machines), 1.  The same on every rank either way
 * (REDCOLL_RANKS_PER_CPU changes what AUTO assumes, not this). */
double redcoll__tcp_ranks_per_cpu(const redcoll__tcp *t) {
  if (t->kernel_ranks_per_cpu > 0) return t->kernel_ranks_per_cpu;
  return t->table_cpus > 0 ? (double)t->size / (double)t->table_cpus : 1;
}

void redcoll__tcp_one_turn(redcoll__tcp *t) {
  t->leader = 1;
  t->resumed = 0;
  uv_run(t->loop, UV_RUN_NOWAIT);
  t->leader = 0;
  pthread_cond_broadcast(&t->cv);
}

int redcoll__tcp_progress(redcoll__tcp *t, int (*done)(redcoll__tcp *, void *), void *arg,
                          uint64_t deadline_ns) {
  uint64_t spin = redcoll__spin_ns(), spin_until = spin != 0 ? uv_hrtime() + spin : 0;
  uint64_t pause_until = uv_hrtime() + redcoll__spin_pause_ns(redcoll__tcp_ranks_per_cpu(t));
  int led = 0; /* this thread ran the loop last: the others must hear it is free */
  int looked = 0; /* the turn after the deadline (wait.h) */
  for (;;) {
    uint64_t now = uv_hrtime();
    if (now >= deadline_ns && !looked && !t->ext && !t->leader) {
      looked = 1;
      redcoll__tcp_one_turn(t);
    }
    if (done(t, arg) || now >= deadline_ns) {
      if (led) pthread_cond_broadcast(&t->cv);
      return done(t, arg);
    }
    if (t->leader) {
      led = 0;
      /* A follower: the leader wakes it after every turn of the loop.  It
       * also looks again every second, which costs nothing and bounds
       * what a lost wake-up could cost. */
      uint64_t until = deadline_ns - now > 1000000000u ? now + 1000000000u : deadline_ns;
      struct timespec ts;
      abs_time(&ts, until);
      pthread_cond_timedwait(&t->cv, &t->mu, &ts);
      continue;
    }
    t->leader = 1;
    led = 1;
    /* On the embedder's loop the transport's handles are unref'd, and
     * uv_run does nothing on a loop that is not alive. */
    if (t->ext) uv_ref((uv_handle_t *)&t->wake);
    t->resumed = 0;
    uv_run(t->loop, UV_RUN_NOWAIT);
    if (t->ext) uv_unref((uv_handle_t *)&t->wake);
    pthread_cond_broadcast(&t->cv);
    if (done(t, arg)) break;
    int ms;
    if (t->resumed) {
      ms = 0; /* a connection reads again: the loop first (tcp_int.h) */
    } else if (spin_until != 0 && uv_hrtime() < spin_until) {
      ms = 0; /* poll again (redcoll__spin_ns, redcoll__spin_pause_ns) */
    } else {
      spin_until = 0;
      ms = uv_backend_timeout(t->loop);
      now = uv_hrtime();
      uint64_t left = deadline_ns > now ? (deadline_ns - now + 999999) / 1000000 : 0;
      if (left > INT_MAX) left = INT_MAX;
      if (ms < 0 || (uint64_t)ms > left) ms = (int)left;
    }
    struct pollfd pfd = {.fd = uv_backend_fd(t->loop), .events = POLLIN};
    pthread_mutex_unlock(&t->mu);
    if (ms == 0) redcoll__spin_relax(uv_hrtime() < pause_until);
    else poll(&pfd, 1, ms);
    pthread_mutex_lock(&t->mu);
    t->leader = 0;
  }
  t->leader = 0;
  pthread_cond_broadcast(&t->cv); /* one of the others takes over */
  return 1;
}
