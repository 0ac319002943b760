/*
 * The simulator's face (include/redcoll/mock.h, docs/simulator.md; how it
 * works: mock_int.h): the vtable members (exchange, post, progress, now,
 * info, charge, abort, cancel, close, destroy), a rank's coroutine, redcoll_mock_run,
 * redcoll_mock_world_create, redcoll_mock_comm_stats and the
 * configuration's defaults.
 */
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mock_int.h"

#define MOCK_MAX_P 65536
#define MOCK_DEFAULT_STACK ((size_t)256 * 1024)
#define MOCK_MIN_STACK ((size_t)64 * 1024)

/* The channel group (one communicator) a channel belongs to. */
#define GROUP_OF(ch) ((ch) & ~(uint64_t)(REDCOLL_TRANSPORT_CHANNEL_GROUP - 1))

static int is_cancelled(const mock_run *run, uint64_t chan) {
  for (size_t i = 0; i < run->ncancelled; i++)
    if (run->cancelled[i] == GROUP_OF(chan)) return 1;
  return 0;
}

/* ---- the vtable ----------------------------------------------------------------- */

static void lock(mock_run *run) {
  if (run->threaded) pthread_mutex_lock(&run->mu);
}
static void unlock(mock_run *run) {
  if (run->threaded) pthread_mutex_unlock(&run->mu);
}

/* Virtual time runs in units of one millisecond for deadlines. */
#define MOCK_NS_PER_UNIT 1e6

/* The checks and bookkeeping every call shares (exchange and post): the
 * gate of a threaded world, the run's and the rank's state, the call
 * count for fault and stall injection.  REDCOLL_OK: the op may start, and
 * in a threaded world the mutex is held; else the call's status (the
 * mutex is held too, except after REDCOLL_EINVAL). */
static int call_begin(mock_rank *r, const redcoll_transport_ctx *ctx,
                      const redcoll_transport_msg *s, const redcoll_transport_msg *v) {
  mock_run *run = r->run;
  if (s == NULL && v == NULL) return REDCOLL_EINVAL;
  if (s != NULL && (s->peer < 0 || s->peer >= run->p || s->peer == r->id ||
                    (s->buf == NULL && s->len > 0)))
    return REDCOLL_EINVAL;
  if (v != NULL && (v->peer < 0 || v->peer >= run->p || v->peer == r->id ||
                    (v->buf == NULL && v->len > 0)))
    return REDCOLL_EINVAL;
  if (run->threaded) {
    /* The gate: wait, ready, until picked. */
    pthread_mutex_lock(&run->mu);
    redcoll__mock_make_runnable(run, r);
    redcoll__mock_thread_give_way(run, r);
  }
  run->epoch++;
  if (run->deadlocked) return REDCOLL_EDEADLOCK;
  if (run->aborted) return REDCOLL_EABORTED;
  if (r->dead) return REDCOLL_ETRANSPORT;
  if (is_cancelled(run, ctx->channel)) return REDCOLL_EABORTED;
  uint64_t n = r->ncalls++;
  r->st.calls = r->ncalls;
  if (r->id == run->cfg.fail_rank && n == run->cfg.fail_after) {
    redcoll__mock_kill_rank(run, r);
    return REDCOLL_ETRANSPORT;
  }
  if (r->id == run->cfg.stall_rank && n == run->cfg.stall_after) {
    redcoll__mock_report_add(run, "rank %d: stalled for %.17g at call %" PRIu64, r->id,
                             run->cfg.stall_time, n);
    r->clock += run->cfg.stall_time;
  }
  return REDCOLL_OK;
}

/* Fills op for the exchange (s, v) of ctx, posted now by r, links it to
 * r's list and posts its halves. */
static void op_start(mock_rank *r, mock_op *op, redcoll_transport_op *top,
                     const redcoll_transport_ctx *ctx, const redcoll_transport_msg *s,
                     const redcoll_transport_msg *v) {
  memset(op, 0, sizeof *op);
  op->r = r;
  op->top = top;
  op->chan = ctx->channel;
  op->ctag = s != NULL ? s->tag : v->tag;
  op->in_coll = ctx->collective != 0;
  /* The core measures the collective's deadline on this clock. */
  op->deadline =
      ctx->deadline_ns == UINT64_MAX ? INFINITY : (double)ctx->deadline_ns / MOCK_NS_PER_UNIT;
  op->post_t = op->cend = r->clock;
  op->post_r = op->crend = r->rclock;
  op->rv.eager = 1;
  redcoll__mock_op_link(op);
  /* One count of pend for the posting itself, so that a send half that
   * ends at once (eager) does not end the op before its receive is up. */
  op->pend = 1;
  mock_run *run = r->run;
  if (s != NULL) redcoll__mock_post_send(run, op, s->peer, s->tag, s->buf, s->len);
  if (v != NULL && op->err == REDCOLL_OK)
    redcoll__mock_post_recv(run, op, v->peer, v->tag, v->buf, v->len);
  if (!op->finished && --op->pend == 0) op->finished = 1; /* the caller goes on */
}

static int mock_exchange(void *impl, const redcoll_transport_ctx *ctx,
                         const redcoll_transport_msg *s, const redcoll_transport_msg *v) {
  mock_rank *r = impl;
  mock_run *run = r->run;
  int rc = call_begin(r, ctx, s, v);
  if (rc == REDCOLL_EINVAL) return rc;
  if (rc == REDCOLL_OK) {
    mock_op op;
    op_start(r, &op, NULL, ctx, s, v);
    if (!op.finished) redcoll__mock_block(run, r);
    redcoll__mock_op_unlink(&op);
    rc = op.err;
    if (rc == REDCOLL_OK) {
      r->clock = op.cend;
      r->rclock = op.crend;
    }
  }
  if (run->threaded) pthread_mutex_unlock(&run->mu);
  return rc;
}

/* A posted exchange: the same op as exchange's, on the heap, told by
 * progress. */
static int mock_post(void *impl, const redcoll_transport_ctx *ctx, const redcoll_transport_msg *s,
                     const redcoll_transport_msg *v, redcoll_transport_op *top) {
  mock_rank *r = impl;
  mock_run *run = r->run;
  if (top == NULL || top->done == NULL) return REDCOLL_EINVAL;
  int rc = call_begin(r, ctx, s, v);
  if (rc == REDCOLL_EINVAL) return rc;
  if (rc == REDCOLL_OK) {
    mock_op *op = malloc(sizeof *op);
    if (op == NULL) {
      rc = REDCOLL_ENOMEM;
    } else {
      op_start(r, op, top, ctx, s, v);
      top->priv[0] = op;
    }
  }
  if (run->threaded) pthread_mutex_unlock(&run->mu);
  return rc;
}

/* Whether r has posted ops not yet told. */
static int has_posted(const mock_rank *r) {
  for (const mock_op *op = r->ops; op != NULL; op = op->next)
    if (op->top != NULL) return 1;
  return 0;
}

/* Orders finished ops by end, then post order. */
static int op_before(const mock_op *a, const mock_op *b) {
  return a->cend < b->cend || (a->cend == b->cend && a->seq < b->seq);
}

/* Gives way until the scheduler releases r (no rank can run and r's next
 * event is the earliest: see redcoll__mock_next_event), then calls done
 * for each posted op that had finished by then, in the order they ended.
 * until_ns at or before r's clock is a poll: r waits only until every
 * other rank has stopped, and is released at its own clock; a poll that
 * told nothing, followed by another with no transport call in between
 * anywhere, waits like progress(UINT64_MAX) (a loop of polls would
 * otherwise spin with virtual time standing still). */
static int mock_progress(void *impl, uint64_t until_ns) {
  mock_rank *r = impl;
  mock_run *run = r->run;
  if (run->threaded) {
    pthread_mutex_lock(&run->mu);
    redcoll__mock_make_runnable(run, r);
    redcoll__mock_thread_give_way(run, r);
  }
  if (!has_posted(r)) {
    if (run->threaded) pthread_mutex_unlock(&run->mu);
    return run->deadlocked ? REDCOLL_EDEADLOCK : REDCOLL_OK;
  }
  double until = until_ns == UINT64_MAX ? INFINITY : (double)until_ns / MOCK_NS_PER_UNIT;
  if (until <= r->clock) until = r->idle && r->idle_epoch == run->epoch ? INFINITY : r->clock;
  r->wake = until;
  r->in_progress = 1;
  redcoll__mock_block(run, r);
  r->in_progress = 0;
  double t = r->release;
  if (t > r->clock) r->clock = t;
  /* The ops to tell, detached and sorted (insertion: a rank has few). */
  mock_op *list = NULL;
  for (mock_op *op = r->ops, *next; op != NULL; op = next) {
    next = op->next;
    if (op->top == NULL || !op->finished || op->cend > t) continue;
    redcoll__mock_op_unlink(op);
    mock_op **at = &list;
    while (*at != NULL && op_before(*at, op)) at = &(*at)->next;
    op->next = *at;
    *at = op;
  }
  if (list == NULL) {
    r->idle = 1;
    r->idle_epoch = run->epoch;
  } else {
    r->idle = 0;
    run->epoch++;
  }
  if (run->threaded) pthread_mutex_unlock(&run->mu);
  while (list != NULL) {
    mock_op *op = list;
    list = op->next;
    redcoll_transport_op *top = op->top;
    int err = op->err;
    lock(run);
    if (err == REDCOLL_OK && op->crend > r->rclock) r->rclock = op->crend;
    unlock(run);
    free(op);
    /* done may post again with the same top: nothing of op is kept. */
    top->done(top, err);
  }
  return REDCOLL_OK;
}

static uint64_t mock_now(void *impl) {
  const mock_rank *r = impl;
  double ns = r->clock * MOCK_NS_PER_UNIT;
  return ns >= 1.8e19 ? UINT64_MAX - 1 : (uint64_t)llround(ns);
}

/* The simulator's own cost model is the run's configuration. */
static int mock_info(void *impl, redcoll_transport_info *info) {
  const mock_rank *r = impl;
  strcpy(info->name, "mock");
  info->caps = REDCOLL_TRANSPORT_CAP_CHANNELS | REDCOLL_TRANSPORT_CAP_MODEL_EXACT;
  info->alpha = r->run->cfg.alpha;
  info->beta = r->run->cfg.beta;
  info->gamma = r->run->cfg.gamma;
  info->hosts = r->run->hosts;
  info->local_alpha = r->run->cfg.local_alpha;
  info->local_beta = r->run->cfg.local_beta;
  info->segment = r->run->cfg.segment;
  return REDCOLL_OK;
}

static void mock_charge(void *impl, size_t bytes) {
  mock_rank *r = impl;
  lock(r->run);
  r->run->epoch++;
  r->clock += (double)bytes * r->run->cfg.gamma;
  r->st.bytes_reduced += bytes;
  unlock(r->run);
}

static int any_op(const mock_op *op, const void *arg) {
  (void)op, (void)arg;
  return 1;
}

static void mock_abort(void *impl, int status) {
  mock_rank *r = impl;
  mock_run *run = r->run;
  lock(run);
  run->epoch++;
  if (!run->aborted && !run->deadlocked && !r->dead) {
    run->aborted = 1;
    redcoll__mock_report_add(run, "rank %d: aborted the run (%s)", r->id,
                             redcoll_status_name(status));
    redcoll__mock_cancel_where(run, any_op, NULL, REDCOLL_EABORTED);
  }
  unlock(run);
}

static void run_free(mock_run *run);

/* An open op of rank `by` on a channel of group `group` (a uint64_t[2]:
 * {group, by}). */
static int in_group_of(const mock_op *op, const void *arg) {
  const uint64_t *g = arg;
  return GROUP_OF(op->chan) == g[0] && op->r->id == (int)g[1];
}
static int in_group(const mock_op *op, const void *arg) {
  return GROUP_OF(op->chan) == *(const uint64_t *)arg;
}

static void mock_cancel(void *impl, uint64_t channel, int status) {
  mock_rank *r = impl;
  mock_run *run = r->run;
  lock(run);
  run->epoch++;
  if (!is_cancelled(run, channel)) {
    uint64_t *n = realloc(run->cancelled, (run->ncancelled + 1) * sizeof *n);
    if (n != NULL) {
      run->cancelled = n;
      run->cancelled[run->ncancelled++] = GROUP_OF(channel);
    }
    redcoll__mock_report_add(run, "rank %d: aborted the communicator on channel %" PRIu64 " (%s)",
                             r->id, GROUP_OF(channel), redcoll_status_name(status));
    /* The group is over for everyone: the caller's own posted ops end with
     * its status, every other open op on its channels with
     * REDCOLL_EABORTED. */
    uint64_t g[2] = {GROUP_OF(channel), (uint64_t)r->id};
    redcoll__mock_cancel_where(run, in_group_of, g,
                               status != REDCOLL_OK ? status : REDCOLL_EABORTED);
    redcoll__mock_cancel_where(run, in_group, &g[0], REDCOLL_EABORTED);
  }
  unlock(run);
}

/* An open op on a channel of group g[0] that waits for rank g[1]. */
static int waits_in_group_for(const mock_op *op, const void *arg) {
  const uint64_t *g = arg;
  int who = (int)g[1];
  return GROUP_OF(op->chan) == g[0] &&
         ((op->send_active && op->sdst == who) || (op->recv_active && op->rsrc == who));
}

/* Rank r leaves the channel group: the ops waiting for it there fail. */
static void mock_close(void *impl, uint64_t channel) {
  mock_rank *r = impl;
  mock_run *run = r->run;
  lock(run);
  run->epoch++;
  uint64_t g[2] = {GROUP_OF(channel), (uint64_t)r->id};
  redcoll__mock_cancel_where(run, waits_in_group_for, g, REDCOLL_ETRANSPORT);
  unlock(run);
}

/* Under redcoll_mock_run the rank record belongs to the run, which outlives
 * every communicator.  In a threaded world the rank is done: it gives way
 * for good, and the last one frees the world. */
static void mock_destroy(void *impl) {
  mock_rank *r = impl;
  mock_run *run = r->run;
  if (!run->threaded) return;
  pthread_mutex_lock(&run->mu);
  r->st.time = r->clock;
  r->st.rounds = r->rclock;
  r->state = ST_DONE;
  redcoll__mock_thread_give_way(run, r);
  int last = --run->nalive == 0;
  pthread_mutex_unlock(&run->mu);
  if (last) {
    if (run->cfg.dot != NULL) redcoll__mock_write_dot(run);
    redcoll__mock_run_finish(run);
    run_free(run);
  }
}

static const redcoll_transport_ops mock_ops = {
  .version = 4,
  .charge = mock_charge,
  .abort = mock_abort,
  .destroy = mock_destroy,
  .info = mock_info,
  .now = mock_now,
  .exchange = mock_exchange,
  .cancel = mock_cancel,
  .close = mock_close,
  .post = mock_post,
  .progress = mock_progress,
};

/* ---- the run ---------------------------------------------------------------------- */

/* A rank's coroutine: r's address in two halves (makecontext passes ints). */
static void rank_main(unsigned lo, unsigned hi) {
  mock_rank *r = (mock_rank *)(uintptr_t)((uint64_t)hi << 32 | lo);
  mock_run *run = r->run;
#ifdef MOCK_ASAN
  /* Entered from the scheduler: learn its stack. */
  __sanitizer_finish_switch_fiber(NULL, &run->sched_stack, &run->sched_stack_len);
#endif
  redcoll_comm *comm = NULL;
  int status = redcoll_comm_create(&mock_ops, r, r->id, run->p, &comm);
  if (status == REDCOLL_OK) status = run->fn(comm, run->arg);
  r->st.time = r->clock;
  r->st.rounds = r->rclock;
  r->st.status = status;
  redcoll_comm_destroy(comm);
  r->state = ST_DONE;
  redcoll__mock_to_scheduler(run, r); /* for good */
  abort();              /* a finished rank is never resumed */
}


REDCOLL_API void redcoll_mock_config_init(redcoll_mock_config *cfg) {
  if (cfg == NULL) return;
  memset(cfg, 0, sizeof *cfg);
  cfg->alpha = 1.0;
  cfg->beta = 0.0;
  cfg->gamma = 0.0;
  cfg->seed = 1;
  cfg->eager_limit = 0;
  cfg->fail_rank = -1;
  cfg->stall_rank = -1;
}

/* Orders (host, rank) pairs by host, then rank. */
static int cmp_host(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

/* The hosts of run->cfg (ranks_per_host, or the hosts array): run->hosts,
 * the dense index of each rank's host (hosts numbered in the order of
 * their values) and the hosts' link records.  Nothing when every rank is
 * its own host. */
static int hosts_new(mock_run *run) {
  const redcoll_mock_config *c = &run->cfg;
  size_t p = (size_t)run->p;
  if (c->hosts == NULL && c->ranks_per_host <= 1) return REDCOLL_OK;
  uint64_t *pairs = malloc(p * sizeof *pairs);
  run->hosts = malloc(p * sizeof *run->hosts);
  run->host_idx = malloc(p * sizeof *run->host_idx);
  if (pairs == NULL || run->hosts == NULL || run->host_idx == NULL) {
    free(pairs);
    return REDCOLL_ENOMEM;
  }
  for (size_t i = 0; i < p; i++) {
    run->hosts[i] = c->hosts != NULL ? c->hosts[i] : (uint32_t)(i / c->ranks_per_host);
    pairs[i] = (uint64_t)run->hosts[i] << 32 | i;
  }
  qsort(pairs, p, sizeof *pairs, cmp_host);
  uint32_t n = 0;
  for (size_t i = 0; i < p; i++) {
    if (i > 0 && pairs[i] >> 32 != pairs[i - 1] >> 32) n++;
    run->host_idx[(uint32_t)pairs[i]] = n;
  }
  free(pairs);
  run->nhosts = n + 1;
  if (run->nhosts == p) { /* every rank its own host after all */
    free(run->hosts);
    free(run->host_idx);
    run->hosts = run->host_idx = NULL;
    run->nhosts = 0;
    return REDCOLL_OK;
  }
  run->host_out_free = calloc(run->nhosts, sizeof *run->host_out_free);
  run->host_in_free = calloc(run->nhosts, sizeof *run->host_in_free);
  if (run->host_out_free == NULL || run->host_in_free == NULL) return REDCOLL_ENOMEM;
  return REDCOLL_OK;
}

/* A run of p ranks with cfg (NULL: defaults): everything but the stacks. */
static int run_new(int p, const redcoll_mock_config *cfg, mock_run **out) {
  mock_run *run = calloc(1, sizeof *run);
  if (run == NULL) return REDCOLL_ENOMEM;
  if (cfg != NULL) run->cfg = *cfg;
  else redcoll_mock_config_init(&run->cfg);
  run->p = p;
  run->rng = run->cfg.seed;
  run->nbuckets = 64;
  while (run->nbuckets < (size_t)p) run->nbuckets *= 2;
  run->ranks = calloc((size_t)p, sizeof *run->ranks);
  run->runnable = malloc((size_t)p * sizeof *run->runnable);
  run->buckets = calloc(run->nbuckets, sizeof *run->buckets);
  *out = run;
  if (run->ranks == NULL || run->runnable == NULL || run->buckets == NULL) return REDCOLL_ENOMEM;
  int rc = hosts_new(run);
  run->cfg.hosts = run->hosts; /* the copy: the caller's array may go */
  if (rc != REDCOLL_OK) return rc;
  for (int i = 0; i < p; i++) {
    mock_rank *r = &run->ranks[i];
    r->run = run;
    r->id = i;
  }
  return REDCOLL_OK;
}

static void run_free(mock_run *run) {
  if (run->buckets != NULL) {
    for (size_t i = 0; i < run->nbuckets; i++) {
      mock_pair *q = run->buckets[i];
      while (q != NULL) {
        mock_pair *next = q->next;
        for (mock_msg *m = q->head; m != NULL;) {
          mock_msg *mn = m->next;
          if (m->eager) free(m);
          m = mn;
        }
        free(q);
        q = next;
      }
    }
  }
  /* Posted ops never told (a rank returned with them open): their
   * rendezvous messages were in the queues freed above. */
  for (int i = 0; run->ranks != NULL && i < run->p; i++)
    for (mock_op *op = run->ranks[i].ops, *next; op != NULL; op = next) {
      next = op->next;
      if (op->top != NULL) free(op);
    }
  while (run->xfers != NULL) {
    mock_xfer *x = run->xfers;
    run->xfers = x->next;
    free(x);
  }
  while (run->free_pairs != NULL) {
    mock_pair *q = run->free_pairs;
    run->free_pairs = q->next;
    free(q);
  }
  if (run->threaded) {
    for (int i = 0; i < run->p; i++) pthread_cond_destroy(&run->cvs[i]);
    pthread_mutex_destroy(&run->mu);
  }
  free(run->hosts);
  free(run->host_idx);
  free(run->host_out_free);
  free(run->host_in_free);
  free(run->cvs);
  free(run->cancelled);
  free(run->buckets);
  free(run->report);
  free(run->edges);
  free(run->runnable);
  free(run->ranks);
  free(run);
}

REDCOLL_API int redcoll_mock_run(int p, const redcoll_mock_config *cfg, redcoll_rank_main fn,
                                 void *arg, redcoll_mock_stats *stats) {
  if (p < 1 || p > MOCK_MAX_P || fn == NULL) return REDCOLL_EINVAL;
  mock_run *run = NULL;
  int rc = run_new(p, cfg, &run);
  if (run == NULL) return rc;
  if (rc != REDCOLL_OK) goto out;
  run->fn = fn;
  run->arg = arg;
  run->rank_main = rank_main;
  rc = REDCOLL_ENOMEM;

  /* Stack slots: a guard page and a stack each (stacks_get). */
  long pg = sysconf(_SC_PAGESIZE);
  run->page = pg > 0 ? (size_t)pg : 4096;
  size_t stack = run->cfg.stack_size ? run->cfg.stack_size : MOCK_DEFAULT_STACK;
  if (stack < MOCK_MIN_STACK) stack = MOCK_MIN_STACK;
  if (stack > SIZE_MAX / 2) {
    rc = REDCOLL_EINVAL;
    goto out;
  }
  stack = (stack + run->page - 1) / run->page * run->page;
  run->slot = stack + run->page;
  if (run->slot > SIZE_MAX / (size_t)p) {
    rc = REDCOLL_EINVAL;
    goto out;
  }
  run->stacks_len = run->slot * (size_t)p;
  run->stacks = redcoll__mock_stacks_get(run->slot, run->page, &run->stacks_len);
  if (run->stacks == NULL) goto out;

  for (int i = 0; i < p; i++) {
    run->ranks[i].state = ST_READY;
    run->runnable[i] = i;
  }
  run->nrunnable = p;
#ifdef MOCK_TSAN
  run->sched_fiber = __tsan_get_current_fiber();
#endif
  for (mock_rank *r; (r = redcoll__mock_pick_next(run)) != NULL;) redcoll__mock_run_rank(run, r);
#ifdef MOCK_TSAN
  for (int i = 0; i < p; i++)
    if (run->ranks[i].started) __tsan_destroy_fiber(run->ranks[i].fiber);
#endif

  if (run->cfg.dot != NULL) redcoll__mock_write_dot(run);
  rc = REDCOLL_OK;
  for (int i = 0; i < p && rc == REDCOLL_OK; i++) rc = run->ranks[i].st.status;
  if (run->deadlocked) rc = REDCOLL_EDEADLOCK;
  if (stats != NULL)
    for (int i = 0; i < p; i++) stats[i] = run->ranks[i].st;

  redcoll__mock_stacks_put(run->stacks, run->stacks_len, run->slot);
out:
  redcoll__mock_run_finish(run);
  run_free(run);
  return rc;
}

REDCOLL_API int redcoll_mock_world_create(int p, const redcoll_mock_config *cfg,
                                          redcoll_comm **comms) {
  if (p < 1 || p > MOCK_MAX_P || comms == NULL) return REDCOLL_EINVAL;
  for (int i = 0; i < p; i++) comms[i] = NULL;
  mock_run *run = NULL;
  int rc = run_new(p, cfg, &run);
  if (run == NULL) return rc;
  if (rc == REDCOLL_OK && (run->cvs = calloc((size_t)p, sizeof *run->cvs)) == NULL)
    rc = REDCOLL_ENOMEM;
  if (rc != REDCOLL_OK) {
    run_free(run);
    return rc;
  }
  pthread_mutex_init(&run->mu, NULL);
  for (int i = 0; i < p; i++) {
    pthread_cond_init(&run->cvs[i], NULL);
    run->ranks[i].state = ST_RUNNING;
    run->ranks[i].started = 1;
  }
  run->threaded = 1;
  run->nrunning = p;
  for (int i = 0; i < p && rc == REDCOLL_OK; i++)
    rc = redcoll_comm_create(&mock_ops, &run->ranks[i], i, p, &comms[i]);
  if (rc == REDCOLL_OK) {
    run->nalive = p;
    return REDCOLL_OK;
  }
  /* All or nothing: no rank has called yet, so none of this waits. */
  run->threaded = 0; /* the destroys below leave the run alone */
  for (int i = 0; i < p; i++) {
    redcoll_comm_destroy(comms[i]);
    comms[i] = NULL;
  }
  run->threaded = 1;
  run_free(run);
  return rc;
}

REDCOLL_API int redcoll_mock_comm_stats(const redcoll_comm *c, redcoll_mock_stats *out) {
  const mock_rank *r = redcoll__comm_transport(c, &mock_ops);
  if (r == NULL || out == NULL) return REDCOLL_EINVAL;
  lock(r->run);
  *out = r->st;
  out->time = r->clock;
  out->rounds = r->rclock;
  unlock(r->run);
  return REDCOLL_OK;
}
