/* The shared-memory transport's vtable, its waiting calls and its
 * construction (include/redcoll/shm.h; the state is in shm_int.h).
 *
 * A call posts its halves, then runs the progress engine (progress.c) over
 * every peer until both are done or one fails, sleeping on its rank's
 * doorbell (wait.c) in between.  The threads of a process take the impl's
 * mutex for every pass and drop it while they wait, so whichever thread
 * runs a pass moves the others' frames too and rings the bell for them. */
#include <errno.h>
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

static int sh_exchange(void *impl, const redcoll_transport_ctx *ctx,
                       const redcoll_transport_msg *send, const redcoll_transport_msg *recv) {
  shm_impl *t = impl;
  const redcoll_transport_msg *m[2] = {send, recv};
  if (send == NULL && recv == NULL) return REDCOLL_EINVAL;
  for (int i = 0; i < 2; i++)
    if (m[i] != NULL && (m[i]->peer < 0 || m[i]->peer >= t->size || m[i]->peer == t->rank ||
                         (m[i]->buf == NULL && m[i]->len != 0)))
      return REDCOLL_EINVAL;
  uint64_t start = redcoll__shm_now();
  uint64_t deadline = t->timeout_ns == UINT64_MAX || start + t->timeout_ns < start
                          ? UINT64_MAX
                          : start + t->timeout_ns;
  int by_coll = 0;
  if (ctx->deadline_ns < deadline) {
    deadline = ctx->deadline_ns;
    by_coll = 1;
  }
  shm_op ops[2];
  memset(ops, 0, sizeof ops);
  shm_op *so = send != NULL ? &ops[0] : NULL, *ro = recv != NULL ? &ops[1] : NULL;

  pthread_mutex_lock(&t->mu);
  int rc = stopped(t, ctx->channel);
  if (rc != REDCOLL_OK) {
    pthread_mutex_unlock(&t->mu);
    return rc;
  }
  for (int i = 0; i < 2; i++) {
    if (m[i] == NULL) continue;
    shm_op *op = &ops[i];
    op->is_send = i == 0;
    op->peer = m[i]->peer;
    op->tag = m[i]->tag;
    op->channel = ctx->channel;
    op->buf = m[i]->buf;
    op->len = m[i]->len;
    op->slot = -1;
  }
  if (so != NULL) {
    so->kind = so->len > REDCOLL__SHM_CMA_MIN && t->peers[so->peer].peer_cma ? FRAME_CMA
                                                                             : FRAME_INLINE;
    redcoll__shm_post_send(t, so);
  }
  if (ro != NULL) redcoll__shm_post_recv(t, ro);

  redcoll__shm_bell *bell = &t->ranks[t->rank].bell;
  t->callers++;
  int fail = REDCOLL_OK;
  shm_op *cause = NULL;
  for (;;) {
    uint32_t seen = redcoll__shm_bell_read(bell);
    /* What this pass moved may be other threads' operations: wake them. */
    if (redcoll__shm_progress(t) && t->callers > 1) redcoll__shm_bell_ring(bell);
    uint64_t now = redcoll__shm_now();
    check_live(t, now);
    if (so != NULL) redcoll__shm_check_ack(t, so);
    int pending = 0;
    for (int i = 0; i < 2 && fail == REDCOLL_OK; i++) {
      shm_op *op = i == 0 ? so : ro;
      if (op == NULL) continue;
      if (op->done) {
        if (op->status != REDCOLL_OK) {
          /* An abort or a cancel comes before a peer that left after it. */
          fail = op->status == REDCOLL_ETRANSPORT && stopped(t, ctx->channel) != REDCOLL_OK
                     ? REDCOLL_EABORTED
                     : op->status;
          cause = op;
        }
        continue;
      }
      pending = 1;
      int why = stopped(t, ctx->channel);
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
      break;
    }
    if (!pending) break;
    pthread_mutex_unlock(&t->mu);
    uint64_t until = now + REDCOLL__SHM_LIVE_NS;
    if (until > deadline) until = deadline;
    redcoll__shm_bell_wait(bell, seen, now + t->spin_ns, until);
    pthread_mutex_lock(&t->mu);
  }
  t->callers--;
  pthread_mutex_unlock(&t->mu);
  return fail;
}

/* A hand-over through a queue costs about a microsecond; one copy at
 * memory bandwidth. */
static int sh_info(void *impl, redcoll_transport_info *info) {
  shm_impl *t = impl;
  strcpy(info->name, "shm");
  info->caps = REDCOLL_TRANSPORT_CAP_CHANNELS | REDCOLL_TRANSPORT_CAP_THREADS;
  info->alpha = 2e-6;
  info->beta = 1e-10;
  info->gamma = 2.5e-10;
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  if (cpus > 0 && t->size > cpus) info->ranks_per_cpu = (double)t->size / (double)cpus;
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
  snprintf(t->name, sizeof t->name, "%s%s", cfg->name[0] == '/' ? "" : "/", cfg->name);
  pthread_mutex_init(&t->mu, NULL);
  t->peers = calloc((size_t)t->size, sizeof *t->peers);
  int rc = REDCOLL_ENOMEM;
  if (t->peers == NULL) goto fail;
  if (t->size > 1 && (rc = redcoll__shm_segment_open(t, cfg)) != REDCOLL_OK) goto fail;
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
