/*
 * The hier transport: a world of H processes x T threads (redcoll/hier.h).
 * Thread t of process i is rank i * T + t.  An exchange's sides between
 * threads of this process go through the mailbox (mailbox.c); sides to
 * other processes are posted on procs' transport (version 4), each on the
 * channel of its ordered pair of threads and its world channel, so that
 * every receive there meets exactly the messages meant for it:
 *   remote channel = group(anchor, world group, sender thread, receiver
 *   thread) + (world channel - world group),
 * where group() hashes to a multiple of REDCOLL_TRANSPORT_CHANNEL_GROUP and
 * anchor is the channel base of a dup of procs made for the world (so two
 * worlds, or procs' own communicators, never share a channel but by a
 * 2^-62 chance).  The caller waits for its remote sides in procs'
 * progress, then for its local ones on a condition variable.
 *
 * Cancel of a world group: its local halves end with REDCOLL_EABORTED, and
 * procs cancels the T x T remote groups (every peer process hears it).
 * Close (a thread's communicator destroyed): its local peers get
 * REDCOLL_ETRANSPORT, and procs closes the thread's 2T remote groups.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hier_int.h"
#include "redcoll/hier.h"
#include "redcoll/transport.h"

typedef struct hier_rank {
  hier_proc *P;
  int t;
} hier_rank;

/* Ranks of the world: process and thread. */
static int proc_of(const hier_proc *P, int w) { return w / P->T; }
static int thread_of(const hier_proc *P, int w) { return w % P->T; }

static uint64_t mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t h_now(void *impl) {
  hier_proc *P = ((hier_rank *)impl)->P;
  return P->ops->now != NULL ? P->ops->now(P->impl) : mono_ns();
}

static uint64_t mix(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

/* The remote channel group of world group g from thread `from` to `to`. */
static uint64_t remote_group(const hier_proc *P, uint64_t g, int from, int to) {
  uint64_t x = mix(P->anchor ^ mix(g + 0x9e3779b97f4a7c15ULL) ^
                   mix(((uint64_t)(unsigned)from << 32 | (unsigned)to) + 0x68696572ULL));
  x = HIER_GROUP(x);
  return x == 0 ? REDCOLL_TRANSPORT_CHANNEL_GROUP : x;
}

/* Remembers that world group g is used here (abort cancels it). */
static void note_used(hier_proc *P, uint64_t g) {
  for (size_t i = 0; i < P->nused; i++)
    if (P->used[i] == g) return;
  if (P->nused == P->used_cap) {
    size_t cap = P->used_cap ? 2 * P->used_cap : 8;
    uint64_t *u = realloc(P->used, cap * sizeof *u);
    if (u == NULL) return; /* abort then misses it; its deadline still ends it */
    P->used = u;
    P->used_cap = cap;
  }
  P->used[P->nused++] = g;
}

/* ---- one side over procs' transport --------------------------------------- */

typedef struct remote_side {
  redcoll_transport_op op;
  int done, status;
} remote_side;

static void remote_done(redcoll_transport_op *op, int status) {
  remote_side *s = op->user;
  s->status = status;
  __atomic_store_n(&s->done, 1, __ATOMIC_RELEASE);
}

/* Posts one side (send or receive) to or from world rank peer. */
static int remote_post(hier_rank *R, const redcoll_transport_ctx *ctx, int send,
                       const redcoll_transport_msg *m, remote_side *s) {
  hier_proc *P = R->P;
  int pt = thread_of(P, m->peer), pp = proc_of(P, m->peer);
  uint64_t g = HIER_GROUP(ctx->channel);
  uint64_t rg = send ? remote_group(P, g, R->t, pt) : remote_group(P, g, pt, R->t);
  redcoll_transport_ctx c = {ctx->deadline_ns, ctx->collective, rg + (ctx->channel - g)};
  redcoll_transport_msg pm = {P->map != NULL ? P->map[pp] : pp, m->tag, m->buf, m->len};
  memset(&s->op, 0, sizeof s->op);
  s->op.done = remote_done;
  s->op.user = s;
  s->done = 0;
  int rc = P->ops->post(P->impl, &c, send ? &pm : NULL, send ? NULL : &pm, &s->op);
  if (rc != REDCOLL_OK) {
    s->status = rc;
    s->done = 1;
  }
  return rc;
}

/* Runs procs' progress until every side is done. */
static void remote_wait(hier_proc *P, remote_side *const *sides, int n) {
  for (;;) {
    int pending = 0;
    for (int i = 0; i < n; i++)
      if (sides[i] != NULL && !__atomic_load_n(&sides[i]->done, __ATOMIC_ACQUIRE)) pending = 1;
    if (!pending) return;
    uint64_t now = P->ops->now != NULL ? P->ops->now(P->impl) : mono_ns();
    /* Short turns: the transport's own deadlines finish the ops. */
    P->ops->progress(P->impl, now + 1000000);
  }
}

/* ---- the exchange ----------------------------------------------------------- */

/* Waits for the local halves (mutex held); takes them back at the deadline
 * or when the group is refused.  Returns the first failure. */
static int local_wait(hier_proc *P, mb_half *const *hs, int n, uint64_t deadline_ns) {
  int rc = REDCOLL_OK;
  uint64_t bound = P->bound_ms < 0 ? UINT64_MAX : mono_ns() + (uint64_t)P->bound_ms * 1000000ull;
  if (deadline_ns < bound) bound = deadline_ns;
  for (int i = 0; i < n; i++) {
    mb_half *h = hs[i];
    if (h == NULL) continue;
    while (h->state != MB_DONE) {
      int why = mb_refused(P, h);
      if (why == REDCOLL_OK && bound != UINT64_MAX && mono_ns() >= bound) why = REDCOLL_ETIMEDOUT;
      if (why != REDCOLL_OK && h->state == MB_POSTED) {
        mb_withdraw(P, h);
        h->status = why;
        break;
      }
      if (bound == UINT64_MAX) {
        pthread_cond_wait(&P->cv, &P->mu);
      } else {
        uint64_t b = bound;
        struct timespec ts = {(time_t)(b / 1000000000ull), (long)(b % 1000000000ull)};
        pthread_cond_timedwait(&P->cv, &P->mu, &ts);
      }
    }
    if (rc == REDCOLL_OK) rc = h->status;
  }
  return rc;
}

static int h_exchange(void *impl, const redcoll_transport_ctx *ctx, const redcoll_transport_msg *send,
                      const redcoll_transport_msg *recv) {
  hier_rank *R = impl;
  hier_proc *P = R->P;
  int n = P->H * P->T;
  if ((send == NULL && recv == NULL) || (send != NULL && (send->peer < 0 || send->peer >= n)) ||
      (recv != NULL && (recv->peer < 0 || recv->peer >= n)))
    return REDCOLL_EINVAL;
  /* The clock of deadlines: procs' (hier's now is procs' now). */
  uint64_t deadline = ctx->deadline_ns;
  if (P->ops->now != NULL && deadline != UINT64_MAX) {
    /* Local waits run on the monotonic clock: translate. */
    uint64_t pn = P->ops->now(P->impl), mn = mono_ns();
    deadline = deadline > pn ? mn + (deadline - pn) : mn;
  }
  const redcoll_transport_msg *side[2] = {send, recv};
  mb_half half[2];
  mb_half *local[2] = {NULL, NULL}, *other[2] = {NULL, NULL};
  remote_side rs[2];
  remote_side *remote[2] = {NULL, NULL};
  int rc = REDCOLL_OK;
  pthread_mutex_lock(&P->mu);
  note_used(P, HIER_GROUP(ctx->channel));
  for (int k = 0; k < 2; k++) {
    const redcoll_transport_msg *m = side[k];
    if (m == NULL || proc_of(P, m->peer) != P->me) continue;
    mb_half *h = &half[k];
    memset(h, 0, sizeof *h);
    h->send = k == 0;
    h->from = k == 0 ? R->t : thread_of(P, m->peer);
    h->to = k == 0 ? thread_of(P, m->peer) : R->t;
    h->chan = ctx->channel;
    h->tag = m->tag;
    h->buf = m->buf;
    h->len = m->len;
    h->state = MB_POSTED;
    int why = mb_refused(P, h);
    if (why != REDCOLL_OK) {
      h->state = MB_DONE;
      h->status = why;
      if (rc == REDCOLL_OK) rc = why;
      continue;
    }
    mb_post(P, h, &other[k]);
    local[k] = h;
  }
  pthread_mutex_unlock(&P->mu);
  for (int k = 0; k < 2; k++)
    if (other[k] != NULL) mb_copy(P, local[k], other[k]);
  /* The sides to other processes, both posted before waiting for any. */
  for (int k = 0; k < 2; k++) {
    const redcoll_transport_msg *m = side[k];
    if (m == NULL || proc_of(P, m->peer) == P->me || rc != REDCOLL_OK) continue;
    remote[k] = &rs[k];
    remote_post(R, ctx, k == 0, m, &rs[k]);
  }
  remote_wait(P, remote, 2);
  for (int k = 0; k < 2; k++)
    if (remote[k] != NULL && rc == REDCOLL_OK) rc = remote[k]->status;
  pthread_mutex_lock(&P->mu);
  if (rc != REDCOLL_OK) {
    /* Nothing of this call may stay posted: take back what waits. */
    for (int k = 0; k < 2; k++)
      if (local[k] != NULL && local[k]->state == MB_POSTED) {
        mb_withdraw(P, local[k]);
        local[k]->status = rc;
      }
  }
  int lrc = local_wait(P, local, 2, deadline);
  pthread_mutex_unlock(&P->mu);
  return rc != REDCOLL_OK ? rc : lrc;
}

/* ---- the rest of the vtable -------------------------------------------------- */

static int h_info(void *impl, redcoll_transport_info *info) {
  hier_proc *P = ((hier_rank *)impl)->P;
  strcpy(info->name, "hier");
  info->caps = REDCOLL_TRANSPORT_CAP_CHANNELS | REDCOLL_TRANSPORT_CAP_THREADS;
  info->hosts = P->hosts;
  /* Between processes: what procs' transport proposes (TCP's model, say);
   * between threads: one copy through memory, like the threads
   * transport. */
  info->alpha = P->pinfo.alpha;
  info->beta = P->pinfo.beta;
  info->gamma = P->pinfo.gamma;
  info->local_alpha = 2e-6;
  info->local_beta = 1e-10;
  return REDCOLL_OK;
}

/* Cancels world group g here and on every peer process; mutex held. */
static void cancel_group(hier_proc *P, uint64_t g, int status) {
  for (size_t i = 0; i < P->ncancelled; i++)
    if (P->cancelled[i] == g) return;
  if (P->ncancelled == P->cancel_cap) {
    size_t cap = P->cancel_cap ? 2 * P->cancel_cap : 8;
    uint64_t *c = realloc(P->cancelled, cap * sizeof *c);
    if (c == NULL) {
      P->aborted = REDCOLL_EABORTED; /* no room to remember: everything ends */
      pthread_cond_broadcast(&P->cv);
      return;
    }
    P->cancelled = c;
    P->cancel_cap = cap;
  }
  P->cancelled[P->ncancelled++] = g;
  pthread_cond_broadcast(&P->cv);
  if (P->H > 1 && P->ops->cancel != NULL)
    for (int a = 0; a < P->T; a++)
      for (int b = 0; b < P->T; b++) P->ops->cancel(P->impl, remote_group(P, g, a, b), status);
}

static void h_cancel(void *impl, uint64_t channel, int status) {
  hier_proc *P = ((hier_rank *)impl)->P;
  pthread_mutex_lock(&P->mu);
  cancel_group(P, HIER_GROUP(channel), status);
  pthread_mutex_unlock(&P->mu);
}

static void h_abort(void *impl, int status) {
  hier_proc *P = ((hier_rank *)impl)->P;
  pthread_mutex_lock(&P->mu);
  for (size_t i = 0; i < P->nused; i++) cancel_group(P, P->used[i], status);
  pthread_mutex_unlock(&P->mu);
}

static void h_close(void *impl, uint64_t channel) {
  hier_rank *R = impl;
  hier_proc *P = R->P;
  uint64_t g = HIER_GROUP(channel);
  pthread_mutex_lock(&P->mu);
  if (P->nclosed == P->closed_cap) {
    size_t cap = P->closed_cap ? 2 * P->closed_cap : 8;
    mb_closed *c = realloc(P->closed, cap * sizeof *c);
    if (c != NULL) {
      P->closed = c;
      P->closed_cap = cap;
    }
  }
  if (P->nclosed < P->closed_cap) P->closed[P->nclosed++] = (mb_closed){g, R->t};
  pthread_cond_broadcast(&P->cv);
  pthread_mutex_unlock(&P->mu);
  if (P->H > 1 && P->ops->close != NULL)
    for (int u = 0; u < P->T; u++) {
      P->ops->close(P->impl, remote_group(P, g, R->t, u));
      P->ops->close(P->impl, remote_group(P, g, u, R->t));
    }
}

static void proc_release(hier_proc *P) {
  pthread_mutex_lock(&P->mu);
  int last = --P->refs == 0;
  pthread_mutex_unlock(&P->mu);
  if (!last) return;
  pthread_cond_destroy(&P->cv);
  pthread_condattr_destroy(&P->cvattr);
  pthread_mutex_destroy(&P->mu);
  free(P->cancelled);
  free(P->closed);
  free(P->used);
  free(P->hosts);
  free(P->map);
  free(P);
}

static void h_destroy(void *impl) {
  hier_rank *R = impl;
  proc_release(R->P);
  free(R);
}

static const redcoll_transport_ops hier_ops = {
    .version = 3,
    .destroy = h_destroy,
    .abort = h_abort,
    .info = h_info,
    .now = h_now,
    .exchange = h_exchange,
    .cancel = h_cancel,
    .close = h_close,
};

/* ---- the run ------------------------------------------------------------------ */

typedef struct hier_thread {
  hier_proc *P;
  int t;
  redcoll_rank_main fn;
  void *arg;
  int status;
  pthread_t th;
} hier_thread;

static void *thread_main(void *p) {
  hier_thread *ht = p;
  hier_proc *P = ht->P;
  hier_rank *R = malloc(sizeof *R);
  redcoll_comm *world = NULL;
  int rc = REDCOLL_ENOMEM;
  if (R != NULL) {
    R->P = P;
    R->t = ht->t;
    pthread_mutex_lock(&P->mu);
    P->refs++;
    pthread_mutex_unlock(&P->mu);
    rc = redcoll_comm_create(&hier_ops, R, P->me * P->T + ht->t, P->H * P->T, &world);
    if (rc != REDCOLL_OK) h_destroy(R);
  }
  if (rc == REDCOLL_OK) {
    rc = ht->fn(world, ht->arg);
    /* A rank that gives up tells everyone who might wait for it. */
    if (rc != REDCOLL_OK) h_abort(R, rc);
    redcoll_comm_destroy(world);
  } else {
    pthread_mutex_lock(&P->mu);
    P->aborted = REDCOLL_EABORTED;
    pthread_cond_broadcast(&P->cv);
    pthread_mutex_unlock(&P->mu);
  }
  ht->status = rc;
  return NULL;
}

static int proc_new(redcoll_comm *procs, redcoll_comm *dup, int T, hier_proc **out) {
  const redcoll_transport_ops *ops;
  void *impl;
  uint64_t anchor;
  const int *map;
  unsigned caps;
  int rc = redcoll__comm_endpoint(dup, &ops, &impl, &anchor, &map, &caps);
  if (rc != REDCOLL_OK) return rc;
  hier_proc *P = calloc(1, sizeof *P);
  if (P == NULL) return REDCOLL_ENOMEM;
  P->H = redcoll_comm_size(procs);
  P->me = redcoll_comm_rank(procs);
  P->T = T;
  P->ops = ops;
  P->impl = impl;
  P->anchor = anchor;
  P->refs = 1;
  P->bound_ms = 300000;
  uint64_t ms;
  if (redcoll__env_u64("REDCOLL_TIMEOUT_MS", UINT64_MAX, &ms) == REDCOLL_OK)
    P->bound_ms = ms == 0 ? -1 : (int64_t)(ms > 1000000000000ull ? 1000000000000ull : ms);
  if (ops->version >= 3 && ops->info != NULL) ops->info(impl, &P->pinfo);
  P->pinfo.hosts = NULL;
  size_t n = (size_t)P->H * (size_t)T;
  P->hosts = malloc(n * sizeof *P->hosts);
  if (map != NULL && (P->map = malloc((size_t)P->H * sizeof *P->map)) != NULL)
    memcpy(P->map, map, (size_t)P->H * sizeof *P->map);
  if (P->hosts == NULL || (map != NULL && P->map == NULL) ||
      pthread_mutex_init(&P->mu, NULL) != 0) {
    free(P->hosts);
    free(P->map);
    free(P);
    return REDCOLL_ENOMEM;
  }
  pthread_condattr_init(&P->cvattr);
  pthread_condattr_setclock(&P->cvattr, CLOCK_MONOTONIC);
  pthread_cond_init(&P->cv, &P->cvattr);
  for (size_t w = 0; w < n; w++) P->hosts[w] = (uint32_t)(w / (size_t)T);
  *out = P;
  return REDCOLL_OK;
}

REDCOLL_API int redcoll_hier_run_statuses(redcoll_comm *procs, int threads, redcoll_rank_main fn,
                                          void *arg, int *statuses) {
  if (procs == NULL || fn == NULL || threads < 1 || threads > REDCOLL_HIER_MAX_THREADS ||
      (int64_t)redcoll_comm_size(procs) * threads > 65536)
    return REDCOLL_EINVAL;
  const redcoll_transport_ops *ops;
  void *impl;
  uint64_t ch;
  const int *map;
  unsigned caps;
  redcoll__comm_endpoint(procs, &ops, &impl, &ch, &map, &caps);
  unsigned need = REDCOLL_TRANSPORT_CAP_CHANNELS | REDCOLL_TRANSPORT_CAP_THREADS;
  if (redcoll_comm_size(procs) > 1 &&
      ((caps & need) != need || ops->version < 4 || ops->post == NULL || ops->progress == NULL)) {
    redcoll__log(0, "rank %d: redcoll_hier_run needs a transport with channels, threads and "
                    "posted exchanges between processes",
                 redcoll_comm_rank(procs));
    return REDCOLL_ENOTSUP;
  }
  redcoll_comm *dup = NULL;
  int rc = redcoll_comm_dup(procs, &dup);
  if (rc != REDCOLL_OK) return rc;
  hier_proc *P = NULL;
  if ((rc = proc_new(procs, dup, threads, &P)) != REDCOLL_OK) {
    redcoll_comm_destroy(dup);
    return rc;
  }
  hier_thread *ht = calloc((size_t)threads, sizeof *ht);
  if (ht == NULL) {
    proc_release(P);
    redcoll_comm_destroy(dup);
    return REDCOLL_ENOMEM;
  }
  int started = 0;
  for (int t = 0; t < threads; t++) {
    ht[t] = (hier_thread){P, t, fn, arg, REDCOLL_OK, 0};
    if (pthread_create(&ht[t].th, NULL, thread_main, &ht[t]) != 0) {
      rc = REDCOLL_ENOMEM;
      pthread_mutex_lock(&P->mu);
      P->aborted = REDCOLL_EABORTED;
      pthread_cond_broadcast(&P->cv);
      pthread_mutex_unlock(&P->mu);
      break;
    }
    started++;
  }
  for (int t = 0; t < started; t++) pthread_join(ht[t].th, NULL);
  int first = REDCOLL_OK, echo = REDCOLL_OK;
  for (int t = 0; t < started; t++) {
    if (statuses != NULL) statuses[t] = ht[t].status;
    if (ht[t].status == REDCOLL_EABORTED) echo = REDCOLL_EABORTED;
    else if (ht[t].status != REDCOLL_OK && first == REDCOLL_OK) first = ht[t].status;
  }
  free(ht);
  proc_release(P);
  redcoll_comm_destroy(dup);
  if (rc != REDCOLL_OK) return rc;
  return first != REDCOLL_OK ? first : echo;
}

REDCOLL_API int redcoll_hier_run(redcoll_comm *procs, int threads, redcoll_rank_main fn,
                                 void *arg) {
  return redcoll_hier_run_statuses(procs, threads, fn, arg, NULL);
}
