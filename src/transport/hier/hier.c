/*
 * The hier transport: a world of H processes x T threads (redcoll/hier.h).
 * Thread t of process i is rank i * T + t.  An exchange's sides between
 * threads of this process go through the mailbox (mailbox.c); sides to
 * other processes through procs' blocking exchange, each on the channel of
 * its ordered pair of (process, thread) and its world channel, so that
 * every receive there meets exactly the messages meant for it and a
 * channel is used by one thread of a process at a time:
 *   remote channel = group(anchor, world group, sender process, receiver
 *   process, sender thread, receiver thread) + (world channel - world
 *   group),
 * where group() hashes to a multiple of REDCOLL_TRANSPORT_CHANNEL_GROUP and
 * anchor is the channel base of a dup of procs made for the world (so two
 * worlds, or procs' own communicators, never share a channel but by a
 * 2^-62 chance).  The local halves are posted first, then the remote side
 * runs (a send and a receive that both go to other processes run at once,
 * the send on the thread's partner thread), then the caller waits for its
 * local halves on a condition variable.
 *
 * Cancel of a world group: its local halves end with REDCOLL_EABORTED, and
 * procs cancels the 2 (H-1) T^2 remote groups to and from this process
 * (every peer process hears it).  Close (a thread's communicator
 * destroyed): its local peers get REDCOLL_ETRANSPORT, and procs closes the
 * thread's 2 (H-1) T remote groups.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hier_int.h"
#include "redcoll/hier.h"
#include "redcoll/transport.h"

enum { PARTNER_IDLE, PARTNER_JOB, PARTNER_DONE, PARTNER_QUIT };

/* A thread that runs the send side of an exchange whose two sides both go
 * to other processes, and its one job. */
typedef struct partner {
  struct partner *next_idle, *next_all;
  struct hier_rank *R;
  int state, rc;
  pthread_t th;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  redcoll_transport_ctx ctx;
  redcoll_transport_msg msg;
} partner;

typedef struct hier_rank {
  hier_proc *P;
  int t;
  /* Partners: one per exchange in flight that needs one (calls on
   * different channels may run at once, CAP_THREADS), kept for reuse. */
  pthread_mutex_t pool_mu;
  partner *idle, *all;
} hier_rank;

static void h_cancel(void *impl, uint64_t channel, int status);

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

/* The remote channel group of world group g for messages from thread
 * `from` of process sp to thread `to` of process rp.  Every channel is
 * used by one send and one receive at a time: a process never sends and
 * receives on the same one, and its threads never share one. */
static uint64_t remote_group(const hier_proc *P, uint64_t g, int sp, int rp, int from, int to) {
  uint64_t pair = ((uint64_t)(unsigned)sp << 32 | (unsigned)rp) * 0x9e3779b97f4a7c15ULL;
  uint64_t x = redcoll__mix64(P->anchor ^ redcoll__mix64(g + 0x9e3779b97f4a7c15ULL) ^
                              redcoll__mix64(pair) ^
                              redcoll__mix64(((uint64_t)(unsigned)from << 32 | (unsigned)to) +
                                             0x68696572ULL));
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

/* procs' channel and message for one side of an exchange with world rank
 * m->peer. */
static void remote_channel(hier_rank *R, const redcoll_transport_ctx *ctx, int send,
                          const redcoll_transport_msg *m, redcoll_transport_ctx *c,
                          redcoll_transport_msg *pm) {
  hier_proc *P = R->P;
  int pt = thread_of(P, m->peer), pp = proc_of(P, m->peer);
  uint64_t g = HIER_GROUP(ctx->channel);
  uint64_t rg = send ? remote_group(P, g, P->me, pp, R->t, pt) : remote_group(P, g, pp, P->me, pt, R->t);
  *c = (redcoll_transport_ctx){ctx->deadline_ns, ctx->collective, rg + (ctx->channel - g)};
  *pm = (redcoll_transport_msg){P->map != NULL ? P->map[pp] : pp, m->tag, m->buf, m->len};
}

/* ---- one side over procs' transport --------------------------------------- */

/* One side through procs' blocking exchange. */
static int remote_exchange(hier_rank *R, const redcoll_transport_ctx *ctx, int send,
                           const redcoll_transport_msg *m) {
  redcoll_transport_ctx c;
  redcoll_transport_msg pm;
  remote_channel(R, ctx, send, m, &c, &pm);
  return R->P->ops->exchange(R->P->impl, &c, send ? &pm : NULL, send ? NULL : &pm);
}

/* ---- the partner: a thread's second remote side --------------------------
 * An exchange whose send and receive both go to other processes needs two
 * blocking exchanges of procs at once (their channels differ): the send
 * goes to the thread's partner, a thread started with the first such
 * exchange and kept until the rank is destroyed. */

static void *partner_main(void *arg) {
  partner *w = arg;
  pthread_mutex_lock(&w->mu);
  for (;;) {
    while (w->state == PARTNER_IDLE || w->state == PARTNER_DONE) pthread_cond_wait(&w->cv, &w->mu);
    if (w->state == PARTNER_QUIT) break;
    pthread_mutex_unlock(&w->mu);
    int rc = remote_exchange(w->R, &w->ctx, 1, &w->msg);
    pthread_mutex_lock(&w->mu);
    w->rc = rc;
    w->state = PARTNER_DONE;
    pthread_cond_broadcast(&w->cv);
  }
  pthread_mutex_unlock(&w->mu);
  return NULL;
}

/* An idle partner of R, started if there is none; NULL if memory or a
 * thread is short. */
static partner *partner_take(hier_rank *R) {
  pthread_mutex_lock(&R->pool_mu);
  partner *w = R->idle;
  if (w != NULL) R->idle = w->next_idle;
  pthread_mutex_unlock(&R->pool_mu);
  if (w != NULL) return w;
  if ((w = calloc(1, sizeof *w)) == NULL) return NULL;
  w->R = R;
  w->state = PARTNER_IDLE;
  if (pthread_mutex_init(&w->mu, NULL) != 0) {
    free(w);
    return NULL;
  }
  if (pthread_cond_init(&w->cv, NULL) != 0 ||
      pthread_create(&w->th, NULL, partner_main, w) != 0) {
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
    free(w);
    return NULL;
  }
  pthread_mutex_lock(&R->pool_mu);
  w->next_all = R->all;
  R->all = w;
  pthread_mutex_unlock(&R->pool_mu);
  return w;
}

/* Hands the send side to partner w. */
static void partner_send(partner *w, const redcoll_transport_ctx *ctx,
                         const redcoll_transport_msg *m) {
  pthread_mutex_lock(&w->mu);
  w->ctx = *ctx;
  w->msg = *m;
  w->state = PARTNER_JOB;
  pthread_cond_broadcast(&w->cv);
  pthread_mutex_unlock(&w->mu);
}

/* Waits for w's send and gives w back to R's idle partners. */
static int partner_wait(hier_rank *R, partner *w) {
  pthread_mutex_lock(&w->mu);
  while (w->state != PARTNER_DONE) pthread_cond_wait(&w->cv, &w->mu);
  w->state = PARTNER_IDLE;
  int rc = w->rc;
  pthread_mutex_unlock(&w->mu);
  pthread_mutex_lock(&R->pool_mu);
  w->next_idle = R->idle;
  R->idle = w;
  pthread_mutex_unlock(&R->pool_mu);
  return rc;
}

/* At destroy (no exchange of R runs): stops and frees every partner. */
static void partner_stop_all(hier_rank *R) {
  for (partner *w = R->all, *next; w != NULL; w = next) {
    next = w->next_all;
    pthread_mutex_lock(&w->mu);
    w->state = PARTNER_QUIT;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
    pthread_join(w->th, NULL);
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
    free(w);
  }
  R->all = R->idle = NULL;
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
      if (why != REDCOLL_OK) {
        /* Taken back if still posted; a copy under way is waited out (on
         * the condition variable, no spinning) and counts as done. */
        int posted = h->state == MB_POSTED;
        mb_withdraw(P, h);
        if (posted) h->status = why;
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
    uint64_t left = deadline > pn ? deadline - pn : 0;
    deadline = left > UINT64_MAX - mn ? UINT64_MAX : mn + left;
  }
  const redcoll_transport_msg *side[2] = {send, recv};
  mb_half half[2];
  mb_half *local[2] = {NULL, NULL}, *other[2] = {NULL, NULL};
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
  /* The sides to other processes: one through procs' blocking exchange;
   * two (on two channels) both posted before waiting for either. */
  int nremote = 0, only = -1;
  for (int k = 0; k < 2; k++)
    if (side[k] != NULL && proc_of(P, side[k]->peer) != P->me) {
      nremote++;
      only = k;
    }
  if (rc == REDCOLL_OK && nremote == 1) {
    rc = remote_exchange(R, ctx, only == 0, side[only]);
  } else if (rc == REDCOLL_OK && nremote == 2) {
    partner *w = partner_take(R);
    if (w == NULL) {
      rc = REDCOLL_ENOMEM;
    } else {
      partner_send(w, ctx, send);
      rc = remote_exchange(R, ctx, 0, recv);
      /* A failed receive ends the communicator here: the cancel also ends
       * the partner's send, which may wait for a peer that never comes. */
      if (rc != REDCOLL_OK) h_cancel(R, ctx->channel, rc);
      int src = partner_wait(R, w);
      if (rc == REDCOLL_OK) rc = src;
    }
  }
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
    for (int j = 0; j < P->H; j++)
      for (int a = 0; a < P->T && j != P->me; a++)
        for (int b = 0; b < P->T; b++) {
          P->ops->cancel(P->impl, remote_group(P, g, P->me, j, a, b), status);
          P->ops->cancel(P->impl, remote_group(P, g, j, P->me, a, b), status);
        }
}

static void h_cancel(void *impl, uint64_t channel, int status) {
  hier_proc *P = ((hier_rank *)impl)->P;
  pthread_mutex_lock(&P->mu);
  cancel_group(P, HIER_GROUP(channel), status);
  pthread_mutex_unlock(&P->mu);
}

/* This process gives up: every world group it used is cancelled here and
 * on the peer processes, and its threads' local waits end. */
static void proc_abort(hier_proc *P, int status) {
  pthread_mutex_lock(&P->mu);
  for (size_t i = 0; i < P->nused; i++) cancel_group(P, P->used[i], status);
  if (P->aborted == REDCOLL_OK) P->aborted = REDCOLL_EABORTED;
  pthread_cond_broadcast(&P->cv);
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
    for (int j = 0; j < P->H; j++)
      for (int u = 0; u < P->T && j != P->me; u++) {
        P->ops->close(P->impl, remote_group(P, g, P->me, j, R->t, u));
        P->ops->close(P->impl, remote_group(P, g, j, P->me, u, R->t));
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
  partner_stop_all(R);
  pthread_mutex_destroy(&R->pool_mu);
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
  if (R != NULL && pthread_mutex_init(&R->pool_mu, NULL) != 0) {
    free(R);
    R = NULL;
  }
  if (R != NULL) {
    R->P = P;
    R->t = ht->t;
    R->idle = R->all = NULL;
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
    proc_abort(P, rc);
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
  /* The world's own communicator: a rank that gives up before anyone
   * used it still cancels it. */
  note_used(P, 0);
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
  int rc = redcoll__comm_endpoint(procs, &ops, &impl, &ch, &map, &caps);
  if (rc != REDCOLL_OK) return rc;
  unsigned need = REDCOLL_TRANSPORT_CAP_CHANNELS | REDCOLL_TRANSPORT_CAP_THREADS;
  if (redcoll_comm_size(procs) > 1 &&
      ((caps & need) != need || ops->version < 3)) {
    redcoll__log(0, "rank %d: redcoll_hier_run needs a transport with channels and threads "
                    "between processes (version 3, REDCOLL_TRANSPORT_CAP_CHANNELS and "
                    "REDCOLL_TRANSPORT_CAP_THREADS)",
                 redcoll_comm_rank(procs));
    return REDCOLL_ENOTSUP;
  }
  redcoll_comm *dup = NULL;
  rc = redcoll_comm_dup(procs, &dup);
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
      proc_abort(P, rc);
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
