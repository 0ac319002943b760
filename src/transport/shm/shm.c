/* The shared-memory transport's vtable, its waiting calls and its
 * construction (include/redcoll/shm.h; the state is in shm_int.h).
 *
 * A call posts its halves, then runs the progress engine (progress.c) over
 * every peer until both are done or one fails, sleeping on its rank's
 * doorbell (wait.c) in between.  The threads of a process take the impl's
 * mutex for every pass and drop it while they wait, so whichever thread
 * runs a pass moves the others' frames too and rings the bell for them. */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "progress.h"
#include "redcoll/transport.h"

static void ring_all(shm_impl *t) {
  for (int r = 0; r < t->size; r++) redcoll__shm_bell_ring(&t->ranks[r].bell);
}

static int is_cancelled(shm_impl *t, uint64_t channel) {
  uint32_t n = __atomic_load_n(&t->hdr->ncancelled, __ATOMIC_ACQUIRE);
  if (n > REDCOLL__SHM_MAX_CANCEL) n = REDCOLL__SHM_MAX_CANCEL;
  uint64_t want = REDCOLL__SHM_GROUP(channel) + 1;
  for (uint32_t i = 0; i < n; i++)
    if (__atomic_load_n(&t->hdr->cancelled[i], __ATOMIC_ACQUIRE) == want) return 1;
  return 0;
}

/* Why calls on channel cannot go on (abort, cancel), or REDCOLL_OK. */
static int stopped(shm_impl *t, uint64_t channel) {
  if (__atomic_load_n(&t->hdr->aborted, __ATOMIC_ACQUIRE) != 0 || is_cancelled(t, channel))
    return REDCOLL_EABORTED;
  return REDCOLL_OK;
}

/* Asks the pidfds, at most every REDCOLL__SHM_LIVE_NS. */
static void check_live(shm_impl *t, uint64_t now) {
  if (now - t->live_checked < REDCOLL__SHM_LIVE_NS) return;
  t->live_checked = now;
  int d;
  while ((d = redcoll__shm_live_check(&t->live)) >= 0)
    if (!__atomic_load_n(&t->ranks[d].gone, __ATOMIC_ACQUIRE)) /* not a rank that has finished */
      redcoll__log(0, "shm rank %d: rank %d (pid %d) has died", REDCOLL__SHM_WR(t, t->rank),
                   REDCOLL__SHM_WR(t, d), t->live.pids[d]);
}

static void log_timeout(shm_impl *t, const shm_op *s, const shm_op *r, int by_coll) {
  char what[64];
  if (s != NULL && r != NULL && s->peer != r->peer)
    snprintf(what, sizeof what, "exchanging with ranks %d and %d", REDCOLL__SHM_WR(t, s->peer),
             REDCOLL__SHM_WR(t, r->peer));
  else
    snprintf(what, sizeof what, "%s rank %d",
             s != NULL && r != NULL ? "exchanging with" : s != NULL ? "sending to" : "receiving from",
             REDCOLL__SHM_WR(t, s != NULL ? s->peer : r->peer));
  if (by_coll)
    redcoll__log(0, "shm rank %d: %s: the collective did not finish within its deadline "
                    "(redcoll_comm_set_deadline)", REDCOLL__SHM_WR(t, t->rank), what);
  else
    redcoll__log(0, "shm rank %d: %s did not complete within %llu ms", REDCOLL__SHM_WR(t, t->rank), what,
                 (unsigned long long)(t->timeout_ns / 1000000u));
}

static void log_doomed(shm_impl *t, const shm_op *op) {
  int s = op->peer;
  const char *why = t->live.dead[s]                                 ? "has died"
                    : __atomic_load_n(&t->ranks[s].gone, __ATOMIC_ACQUIRE) ? "has left (its transport was destroyed)"
                    : "closed the communicator or cut its queue";
  redcoll__log(0, "shm rank %d: %s rank %d: rank %d %s", REDCOLL__SHM_WR(t, t->rank),
               op->is_send ? "sending to" : "receiving from", REDCOLL__SHM_WR(t, s), REDCOLL__SHM_WR(t, s), why);
}

/* Checks the halves of one call and fills ops from them; REDCOLL_EINVAL
 * for a bad one. */
static int halves(shm_impl *t, const redcoll_transport_ctx *ctx, const redcoll_transport_msg *send,
                  const redcoll_transport_msg *recv, shm_op ops[2], shm_op **so, shm_op **ro) {
  const redcoll_transport_msg *m[2] = {send, recv};
  if (send == NULL && recv == NULL) return REDCOLL_EINVAL;
  for (int i = 0; i < 2; i++)
    if (m[i] != NULL && (m[i]->peer < 0 || m[i]->peer >= t->size || m[i]->peer == t->rank ||
                         (m[i]->buf == NULL && m[i]->len != 0)))
      return REDCOLL_EINVAL;
  memset(ops, 0, 2 * sizeof *ops);
  for (int i = 0; i < 2; i++) {
    if (m[i] == NULL) continue;
    shm_op *op = &ops[i];
    op->is_send = i == 0;
    op->peer = m[i]->peer;
    op->tag = m[i]->tag;
    op->channel = ctx->channel;
    op->coll = ctx->collective;
    op->buf = m[i]->buf;
    op->len = m[i]->len;
    op->slot = -1;
  }
  *so = send != NULL ? &ops[0] : NULL;
  *ro = recv != NULL ? &ops[1] : NULL;
  if (*so != NULL)
    (*so)->kind = (*so)->len > REDCOLL__SHM_CMA_MIN && t->peers[(*so)->peer].peer_cma ? FRAME_CMA
                                                                                     : FRAME_INLINE;
  return REDCOLL_OK;
}

/* Puts the halves on their lists (mutex held). */
static void start(shm_impl *t, shm_op *so, shm_op *ro) {
  if (so != NULL) redcoll__shm_post_send(t, so);
  if (ro != NULL) redcoll__shm_post_recv(t, ro);
}

/* The end of a call started now: the wait bound or the collective's
 * deadline, whichever comes first (*by_coll: the deadline). */
static uint64_t call_deadline(const shm_impl *t, const redcoll_transport_ctx *ctx, int *by_coll) {
  uint64_t start = redcoll__shm_now();
  uint64_t deadline = t->timeout_ns == UINT64_MAX || start + t->timeout_ns < start
                          ? UINT64_MAX
                          : start + t->timeout_ns;
  *by_coll = 0;
  if (ctx->deadline_ns < deadline) {
    deadline = ctx->deadline_ns;
    *by_coll = 1;
  }
  return deadline;
}

/* Looks at the halves so and ro of one call on channel after a pass: 1
 * with *status once the call is over (a half that failed withdraws the
 * other), 0 while a half still waits.  Mutex held. */
static int settle(shm_impl *t, shm_op *so, shm_op *ro, uint64_t channel, uint64_t now,
                  uint64_t deadline, int by_coll, int *status) {
  int fail = REDCOLL_OK, pending = 0;
  shm_op *cause = NULL;
  if (so != NULL) redcoll__shm_check_ack(t, so);
  for (int i = 0; i < 2 && fail == REDCOLL_OK; i++) {
    shm_op *op = i == 0 ? so : ro;
    if (op == NULL) continue;
    if (op->done) {
      if (op->status != REDCOLL_OK) {
        /* An abort or a cancel comes before a peer that left after it. */
        fail = op->status == REDCOLL_ETRANSPORT && stopped(t, channel) != REDCOLL_OK
                   ? REDCOLL_EABORTED
                   : op->status;
        cause = op;
      }
      continue;
    }
    pending = 1;
    int why = stopped(t, channel);
    if (why == REDCOLL_OK && (why = redcoll__shm_op_doomed(t, op)) != REDCOLL_OK) log_doomed(t, op);
    if (why == REDCOLL_OK && now >= deadline) {
      why = REDCOLL_ETIMEDOUT;
      log_timeout(t, so, ro, by_coll);
    }
    if (why != REDCOLL_OK) {
      redcoll__shm_abandon(t, op, why);
      fail = why;
      cause = op;
    }
  }
  if (fail != REDCOLL_OK) {
    /* The other half is withdrawn too. */
    for (int i = 0; i < 2; i++) {
      shm_op *op = i == 0 ? so : ro;
      if (op != NULL && op != cause) redcoll__shm_abandon(t, op, fail);
    }
    *status = fail;
    return 1;
  }
  *status = REDCOLL_OK;
  return !pending;
}

/* One pass of the progress engine (mutex held): what it moved may be
 * other threads' operations, so they are woken. */
static int pass(shm_impl *t, redcoll__shm_bell *bell) {
  int moved = redcoll__shm_progress(t);
  if (moved && t->callers > 1) redcoll__shm_bell_ring(bell);
  return moved;
}

static int sh_exchange(void *impl, const redcoll_transport_ctx *ctx,
                       const redcoll_transport_msg *send, const redcoll_transport_msg *recv) {
  shm_impl *t = impl;
  shm_op ops[2], *so, *ro;
  int rc = halves(t, ctx, send, recv, ops, &so, &ro);
  if (rc != REDCOLL_OK) return rc;
  int by_coll;
  uint64_t deadline = call_deadline(t, ctx, &by_coll);

  pthread_mutex_lock(&t->mu);
  rc = stopped(t, ctx->channel);
  if (rc != REDCOLL_OK) {
    pthread_mutex_unlock(&t->mu);
    return rc;
  }
  start(t, so, ro);
  redcoll__shm_bell *bell = &t->ranks[t->rank].bell;
  uint64_t pause_until = redcoll__shm_now() + t->pause_ns; /* once per wait, not per ring */
  t->callers++;
  for (;;) {
    uint32_t seen = redcoll__shm_bell_read(bell);
    pass(t, bell);
    uint64_t now = redcoll__shm_now();
    check_live(t, now);
    if (settle(t, so, ro, ctx->channel, now, deadline, by_coll, &rc)) break;
    pthread_mutex_unlock(&t->mu);
    uint64_t until = now + REDCOLL__SHM_LIVE_NS;
    if (until > deadline) until = deadline;
    redcoll__shm_bell_wait(bell, seen, pause_until, now + t->spin_ns, until);
    pthread_mutex_lock(&t->mu);
  }
  t->callers--;
  pthread_mutex_unlock(&t->mu);
  return rc;
}

/* ---- posted exchanges (version 4) ----
 *
 * post puts the halves on the same lists as exchange does, runs one pass
 * and files the exchange in t->pend unless it is over already (then its
 * done comes before post returns).  progress runs passes as exchange's
 * wait does, moves the exchanges that are over (done, failed, stopped, past
 * their deadline) off t->pend and calls their done with the mutex
 * released, so that done may post, cancel and abort.  A thread in exchange
 * or progress whose pass moved others' frames rings this rank's bell,
 * which wakes the threads in progress; one that called done bumps t->gen,
 * after which the others in progress return (the requests they wait for
 * may be among those). */

typedef struct shm_pop {
  struct shm_pop *next;
  redcoll_transport_op *op;
  shm_op ops[2];
  shm_op *so, *ro;
  uint64_t channel, deadline;
  int by_coll, status;
} shm_pop;

static int sh_post(void *impl, const redcoll_transport_ctx *ctx, const redcoll_transport_msg *send,
                   const redcoll_transport_msg *recv, redcoll_transport_op *op) {
  shm_impl *t = impl;
  if (op == NULL || op->done == NULL) return REDCOLL_EINVAL;
  shm_pop *o = calloc(1, sizeof *o);
  if (o == NULL) return REDCOLL_ENOMEM;
  int rc = halves(t, ctx, send, recv, o->ops, &o->so, &o->ro);
  if (rc != REDCOLL_OK) {
    free(o);
    return rc;
  }
  o->op = op;
  o->channel = ctx->channel;
  o->deadline = call_deadline(t, ctx, &o->by_coll);
  pthread_mutex_lock(&t->mu);
  rc = stopped(t, ctx->channel);
  if (rc != REDCOLL_OK) {
    pthread_mutex_unlock(&t->mu);
    free(o);
    return rc;
  }
  start(t, o->so, o->ro);
  redcoll__shm_bell *bell = &t->ranks[t->rank].bell;
  /* The pass may have moved the frames of threads waiting here. */
  if (redcoll__shm_progress(t) && t->callers > 0) redcoll__shm_bell_ring(bell);
  int status;
  if (settle(t, o->so, o->ro, o->channel, redcoll__shm_now(), o->deadline, o->by_coll, &status)) {
    /* Over at once (a send that fit in the queue, a message kept): done
     * now, so that the collective goes on without waiting for progress. */
    pthread_mutex_unlock(&t->mu);
    free(o);
    op->done(op, status);
    return REDCOLL_OK;
  }
  if (t->pend_tail != NULL) t->pend_tail->next = o;
  else t->pend = o;
  t->pend_tail = o;
  pthread_mutex_unlock(&t->mu);
  return REDCOLL_OK;
}

/* Moves the posted exchanges that are over from t->pend to a list it
 * returns; *next gets the earliest deadline of those left. */
static shm_pop *reap(shm_impl *t, uint64_t now, uint64_t *next) {
  shm_pop *fin = NULL, **fin_tail = &fin, *prev = NULL;
  *next = UINT64_MAX;
  for (shm_pop *o = t->pend, *nx; o != NULL; o = nx) {
    nx = o->next;
    if (!settle(t, o->so, o->ro, o->channel, now, o->deadline, o->by_coll, &o->status)) {
      if (o->deadline < *next) *next = o->deadline;
      prev = o;
      continue;
    }
    if (prev != NULL) prev->next = nx;
    else t->pend = nx;
    if (t->pend_tail == o) t->pend_tail = prev;
    o->next = NULL;
    *fin_tail = o;
    fin_tail = &o->next;
  }
  return fin;
}

uint64_t redcoll__shm_kicks(shm_impl *t) { return __atomic_load_n(&t->kick, __ATOMIC_ACQUIRE); }

int redcoll__shm_progress_since(shm_impl *t, uint64_t until_ns, uint64_t kick0) {
  if (t->size < 2) return REDCOLL_OK; /* no segment, never an op */
  redcoll__shm_bell *bell = &t->ranks[t->rank].bell;
  pthread_mutex_lock(&t->mu);
  uint64_t gen0 = t->gen, pause_until = redcoll__shm_now() + t->pause_ns;
  t->callers++;
  for (;;) {
    uint32_t seen = redcoll__shm_bell_read(bell);
    int moved = pass(t, bell);
    uint64_t now = redcoll__shm_now(), next;
    check_live(t, now);
    shm_pop *fin = reap(t, now, &next);
    if (fin != NULL) {
      pthread_mutex_unlock(&t->mu);
      while (fin != NULL) {
        shm_pop *nx = fin->next;
        redcoll_transport_op *op = fin->op;
        int status = fin->status;
        free(fin);
        op->done(op, status);
        fin = nx;
      }
      pthread_mutex_lock(&t->mu);
      t->gen++;
      if (t->callers > 1) redcoll__shm_bell_ring(bell);
      break;
    }
    if (until_ns == 0 && !moved) {
      /* A program polling in a loop: the peers it waits for may need this
       * CPU (more ranks than cores). */
      pthread_mutex_unlock(&t->mu);
      sched_yield();
      pthread_mutex_lock(&t->mu);
    }
    if (until_ns == 0 || now >= until_ns || t->gen != gen0 || redcoll__shm_kicks(t) != kick0) break;
    uint64_t wake = now + REDCOLL__SHM_LIVE_NS;
    if (wake > until_ns) wake = until_ns;
    if (wake > next) wake = next;
    pthread_mutex_unlock(&t->mu);
    redcoll__shm_bell_wait(bell, seen, pause_until, now + t->spin_ns, wake);
    pthread_mutex_lock(&t->mu);
  }
  t->callers--;
  pthread_mutex_unlock(&t->mu);
  return REDCOLL_OK;
}

static int sh_progress(void *impl, uint64_t until_ns) {
  shm_impl *t = impl;
  return redcoll__shm_progress_since(t, until_ns, redcoll__shm_kicks(t));
}

void redcoll__shm_kick(shm_impl *t) {
  __atomic_add_fetch(&t->kick, 1, __ATOMIC_ACQ_REL);
  if (t->ranks != NULL) redcoll__shm_bell_ring(&t->ranks[t->rank].bell);
}

/* REDCOLL__SHM_ALPHA and _BETA (shm_int.h). */
static int sh_info(void *impl, redcoll_transport_info *info) {
  shm_impl *t = impl;
  strcpy(info->name, "shm");
  info->caps = REDCOLL_TRANSPORT_CAP_CHANNELS | REDCOLL_TRANSPORT_CAP_THREADS;
  info->alpha = REDCOLL__SHM_ALPHA;
  info->beta = REDCOLL__SHM_BETA;
  info->gamma = 2.5e-10;
  if (t->ranks_per_cpu > 1) info->ranks_per_cpu = t->ranks_per_cpu;
  return REDCOLL_OK;
}

static void sh_abort(void *impl, int status) {
  shm_impl *t = impl;
  int32_t zero = 0;
  __atomic_compare_exchange_n(&t->hdr->aborted, &zero, status < 0 ? status : REDCOLL_EABORTED, 0,
                              __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
  ring_all(t);
}

/* Records the channel group in the segment, where every rank's calls look;
 * past REDCOLL__SHM_MAX_CANCEL groups, the whole transport is aborted. */
static void sh_cancel(void *impl, uint64_t channel, int status) {
  shm_impl *t = impl;
  if (!is_cancelled(t, channel)) {
    uint32_t i = __atomic_fetch_add(&t->hdr->ncancelled, 1, __ATOMIC_ACQ_REL);
    if (i < REDCOLL__SHM_MAX_CANCEL) {
      __atomic_store_n(&t->hdr->cancelled[i], REDCOLL__SHM_GROUP(channel) + 1, __ATOMIC_RELEASE);
    } else {
      redcoll__log(1, "shm rank %d: more than %d communicators cancelled: aborting them all",
                   t->rank, REDCOLL__SHM_MAX_CANCEL);
      sh_abort(t, status);
    }
  }
  ring_all(t);
}

/* Tells every peer, in order after what this rank sent on the group. */
static void sh_close(void *impl, uint64_t channel) {
  shm_impl *t = impl;
  uint64_t group = REDCOLL__SHM_GROUP(channel);
  pthread_mutex_lock(&t->mu);
  redcoll__shm_group_add(&t->closed, &t->nclosed, group);
  redcoll__shm_drop_group(t, group);
  for (int s = 0; s < t->size; s++) {
    if (s == t->rank || t->live.dead[s]) continue;
    shm_op *op = calloc(1, sizeof *op);
    if (op == NULL) continue; /* the peer learns at destroy */
    op->is_send = 1;
    op->peer = s;
    op->channel = group;
    op->kind = FRAME_CLOSE;
    op->owned = 1;
    redcoll__shm_post_send(t, op);
  }
  redcoll__shm_progress(t);
  pthread_mutex_unlock(&t->mu);
}

static void sh_destroy(void *impl) {
  shm_impl *t = impl;
  if (t == NULL) return;
  if (t->base != NULL) {
    pthread_mutex_lock(&t->mu);
    redcoll__shm_progress(t); /* close frames that fit */
    redcoll__shm_drop_all(t);
    pthread_mutex_unlock(&t->mu);
    __atomic_store_n(&t->ranks[t->rank].gone, 1, __ATOMIC_RELEASE);
    ring_all(t);
  }
  /* The core destroys a transport only when none of its ops is posted. */
  while (t->pend != NULL) {
    shm_pop *o = t->pend;
    t->pend = o->next;
    free(o);
  }
  redcoll__shm_segment_close(t);
  redcoll__shm_live_free(&t->live);
  pthread_mutex_destroy(&t->mu);
  free(t->closed);
  free(t->peers);
  free(t);
}

static const redcoll_transport_ops shm_ops = {
    .version = REDCOLL_TRANSPORT_VERSION,
    .abort = sh_abort,
    .destroy = sh_destroy,
    .info = sh_info,
    .now = NULL, /* CLOCK_MONOTONIC, as redcoll__shm_now */
    .exchange = sh_exchange,
    .cancel = sh_cancel,
    .close = sh_close,
    .post = sh_post,
    .progress = sh_progress,
    .fd = NULL, /* none: a futex cannot be polled (docs/embedding.md) */
};

/* ---- public ---- */

static int name_ok(const char *n) {
  if (n == NULL || *n == '\0' || strlen(n) > 200) return 0;
  if (*n == '/') n++;
  return *n != '\0' && strchr(n, '/') == NULL;
}

REDCOLL_API void redcoll_shm_config_init(redcoll_shm_config *cfg) {
  if (cfg == NULL) return;
  memset(cfg, 0, sizeof *cfg);
  cfg->rank = -1;
  cfg->size = -1;
}

const redcoll_transport_ops *redcoll__shm_ops(void) { return &shm_ops; }

int redcoll__shm_impl_create(const redcoll_shm_config *cfg, shm_impl **out) {
  *out = NULL;
  if (cfg == NULL || cfg->size < 1 || cfg->size > REDCOLL_SHM_MAX_SIZE || cfg->rank < 0 ||
      cfg->rank >= cfg->size || (cfg->copy != REDCOLL_SHM_COPY_AUTO &&
                                 cfg->copy != REDCOLL_SHM_COPY_QUEUE) ||
      (cfg->queue_bytes != 0 && (cfg->queue_bytes < 4096 ||
                                 (cfg->queue_bytes & (cfg->queue_bytes - 1)) != 0))) {
    redcoll__log(0, "shm: bad configuration (rank %d, size %d, queue_bytes %zu, copy %d)",
                 cfg ? cfg->rank : -1, cfg ? cfg->size : -1, cfg ? cfg->queue_bytes : 0,
                 cfg ? cfg->copy : -1);
    return REDCOLL_EINVAL;
  }
  if (!name_ok(cfg->name)) {
    redcoll__log(0, "shm rank %d: the segment name \"%s\" is not 1 to 200 characters without '/' "
                    "after the first", cfg->rank, cfg->name ? cfg->name : "(null)");
    return REDCOLL_EINVAL;
  }
  shm_impl *t = calloc(1, sizeof *t);
  if (t == NULL) return REDCOLL_ENOMEM;
  t->rank = cfg->rank;
  t->size = cfg->size;
  uint64_t ms = cfg->wait_timeout_ms != 0 ? cfg->wait_timeout_ms : REDCOLL_SHM_DEFAULT_WAIT_TIMEOUT_MS;
  t->timeout_ns = ms == REDCOLL_WAIT_FOREVER || ms > UINT64_MAX / 1000000u ? UINT64_MAX
                                                                          : ms * 1000000u;
  t->spin_ns = redcoll__spin_ns();
  t->ranks_per_cpu = 1; /* one rank; else from the masks (segment.c) */
  snprintf(t->name, sizeof t->name, "%s%s", cfg->name[0] == '/' ? "" : "/", cfg->name);
  pthread_mutex_init(&t->mu, NULL);
  t->peers = calloc((size_t)t->size, sizeof *t->peers);
  int rc = REDCOLL_ENOMEM;
  if (t->peers == NULL) goto fail;
  if (t->size > 1 && (rc = redcoll__shm_segment_open(t, cfg)) != REDCOLL_OK) goto fail;
  t->pause_ns = redcoll__spin_pause_ns(t->ranks_per_cpu);
  {
    int *pids = calloc((size_t)t->size, sizeof *pids);
    rc = REDCOLL_ENOMEM;
    if (pids == NULL) goto fail;
    for (int r = 0; r < t->size && t->size > 1; r++)
      pids[r] = r == t->rank ? 0 : t->ranks[r].pid;
    rc = redcoll__shm_live_init(&t->live, pids, t->size);
    free(pids);
    if (rc != REDCOLL_OK) goto fail;
  }
  *out = t;
  return REDCOLL_OK;

fail:
  sh_destroy(t);
  return rc;
}

REDCOLL_API int redcoll_shm_comm_create(const redcoll_shm_config *cfg, redcoll_comm **out) {
  if (out == NULL) return REDCOLL_EINVAL;
  *out = NULL;
  shm_impl *t;
  int rc = redcoll__shm_impl_create(cfg, &t);
  if (rc != REDCOLL_OK) return rc;
  rc = redcoll_comm_create(&shm_ops, t, t->rank, t->size, out);
  if (rc != REDCOLL_OK) sh_destroy(t); /* still ours */
  return rc;
}

REDCOLL_API int redcoll_shm_comm_create_from_env(redcoll_comm **out) {
  if (out != NULL) *out = NULL;
  redcoll_shm_config cfg;
  int rc = redcoll_shm_config_from_env(&cfg);
  return rc != REDCOLL_OK ? rc : redcoll_shm_comm_create(&cfg, out);
}

REDCOLL_API int redcoll_shm_comm_uses_cma(const redcoll_comm *c, int peer) {
  shm_impl *t = c != NULL ? redcoll__comm_transport(c, &shm_ops) : NULL;
  if (t == NULL || peer < 0 || peer >= t->size || peer == t->rank) return REDCOLL_EINVAL;
  return t->peers[peer].cma;
}
