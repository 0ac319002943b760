/*
 * The threads transport (include/redcoll/threads.h): ranks are threads of
 * one process and a message is copied once, between the user buffers.
 *
 * A world holds one record per rank, and a rank one port per channel it
 * uses (several communicators share a world: REDCOLL_TRANSPORT_CAP_CHANNELS
 * and CAP_THREADS).  A port has two slots, a send slot and a receive slot:
 * a rank has at most one call in progress per channel, and a call posts
 * one or both halves (sendrecv posts both before waiting for either, so a
 * ring of sendrecvs cannot deadlock).  Because a send blocks until it has
 * been received, a port has at most one message in flight to anybody, and
 * messages between a pair are matched in the order sent without a queue.
 * Ports are made at a channel's first call and freed when its communicator
 * is closed on that rank; calls on different channels run at once from
 * different threads.
 *
 * Matching is done under the world mutex by whichever thread posts the
 * second half of a pair (send slot of s aimed at r, receive slot of r aimed
 * at s, on one channel).  It marks both slots busy, drops the mutex, copies straight from
 * the sender's buffer into the receiver's, takes the mutex again, marks both
 * done and signals the other thread, which sleeps on its own condition
 * variable meanwhile.  A busy slot is never given up: a thread whose wait is
 * cut short (abort, timeout, peer gone) cancels only slots nobody has
 * claimed, so no copy ever lands in a buffer its owner has taken back.
 *
 * Lifetime: each communicator's impl holds a reference on the world, and so
 * does the function that creates it until it is done; the last release
 * frees the world.  Destroying an impl marks its rank gone, which fails the
 * peers' calls that wait for it with REDCOLL_ETRANSPORT.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base.h"
#include "redcoll/threads.h"
#include "redcoll/transport.h"

#define THREADS_MAX_P 65536
/* Timeouts beyond this (about 31 years) are taken as no bound at all. */
#define THREADS_MAX_TIMEOUT_MS ((int64_t)1000000000000)

enum slot_state {
  SLOT_IDLE,   /* no half of a call posted */
  SLOT_POSTED, /* waiting for the peer's matching half */
  SLOT_BUSY,   /* matched; a thread is copying between the two buffers */
  SLOT_DONE    /* finished with status */
};

typedef struct th_slot {
  int state;
  int peer;
  uint64_t tag;
  void *buf; /* receive: the destination; send: the source */
  size_t len;
  int status;
  int coll; /* posted inside a collective (ctx.collective not 0) */
} th_slot;

typedef struct th_port {
  struct th_port *next; /* the rank's other ports */
  uint64_t chan;
  pthread_cond_t cv;    /* waited on by the thread calling on the channel */
  th_slot send, recv;
  unsigned news;        /* bumped (atomically, under the mutex) whenever
                         * something the port may wait for happens: read
                         * without the mutex by its spinning thread */
} th_port;

typedef struct th_rank {
  th_port *ports;
  int gone;          /* the rank's impl has been destroyed */
} th_rank;

typedef struct th_world {
  pthread_mutex_t mu;
  pthread_condattr_t cvattr; /* CLOCK_MONOTONIC */
  int p;
  uint64_t pause_ns;  /* a wait's poll on the pause hint (redcoll__spin_pause_ns) */
  int refs;
  int aborted;        /* the status given to abort; 0 while not aborted */
  int64_t timeout_ms; /* bound on one call; < 0: none */
  th_rank *ranks;
  uint64_t *cancelled; /* channel groups cancelled */
  size_t ncancelled;
  uint32_t *hosts;     /* the host of each rank (config), or NULL */
} th_world;

#define GROUP_OF(ch) ((ch) & ~(uint64_t)(REDCOLL_TRANSPORT_CHANNEL_GROUP - 1))

typedef struct th_impl {
  th_world *w;
  int rank;
} th_impl;

/* ---- world ---------------------------------------------------------------- */

/* A bound in milliseconds as the world keeps it: -1 for none. */
static int64_t bound_of(uint64_t ms) {
  return ms == REDCOLL_WAIT_FOREVER || ms > (uint64_t)THREADS_MAX_TIMEOUT_MS ? -1 : (int64_t)ms;
}

/* The bound on one wait from cfg, else REDCOLL_TIMEOUT_MS (0 there: none),
 * else the default; -1 for none. */
static int resolve_timeout(const redcoll_threads_config *cfg, int64_t *out) {
  if (cfg != NULL && cfg->wait_timeout_ms != 0) {
    *out = bound_of(cfg->wait_timeout_ms);
    return REDCOLL_OK;
  }
  const char *s = getenv("REDCOLL_TIMEOUT_MS");
  if (s == NULL || *s == '\0') {
    *out = bound_of(REDCOLL_THREADS_DEFAULT_WAIT_TIMEOUT_MS);
    return REDCOLL_OK;
  }
  char *end;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno != 0 || end == s || *end != '\0' || s[0] == '-') {
    redcoll__log(0, "threads: REDCOLL_TIMEOUT_MS=%s is not a number of milliseconds", s);
    return REDCOLL_EINVAL;
  }
  *out = v == 0 ? -1 : bound_of(v);
  return REDCOLL_OK;
}

static void port_free(th_port *q) {
  pthread_cond_destroy(&q->cv);
  free(q);
}

static void world_free(th_world *w) {
  for (int i = 0; i < w->p; i++)
    for (th_port *q = w->ranks[i].ports, *next; q != NULL; q = next) {
      next = q->next;
      port_free(q);
    }
  pthread_condattr_destroy(&w->cvattr);
  pthread_mutex_destroy(&w->mu);
  free(w->cancelled);
  free(w->hosts);
  free(w->ranks);
  free(w);
}

/* Rank r's port of channel chan, or NULL. */
static th_port *port_find(th_world *w, int r, uint64_t chan) {
  for (th_port *q = w->ranks[r].ports; q != NULL; q = q->next)
    if (q->chan == chan) return q;
  return NULL;
}

/* Rank r's port of channel chan, made if need be; NULL without memory. */
static th_port *port_get(th_world *w, int r, uint64_t chan) {
  th_port *q = port_find(w, r, chan);
  if (q != NULL) return q;
  q = calloc(1, sizeof *q);
  if (q == NULL) return NULL;
  if (pthread_cond_init(&q->cv, &w->cvattr) != 0) {
    free(q);
    return NULL;
  }
  q->chan = chan;
  q->next = w->ranks[r].ports;
  w->ranks[r].ports = q;
  return q;
}

static int is_cancelled(const th_world *w, uint64_t chan) {
  for (size_t i = 0; i < w->ncancelled; i++)
    if (w->cancelled[i] == GROUP_OF(chan)) return 1;
  return 0;
}

/* A world of p ranks with one reference, the creator's. */
static int world_new(int p, const redcoll_threads_config *cfg, th_world **out) {
  int64_t timeout;
  int rc = resolve_timeout(cfg, &timeout);
  if (rc != REDCOLL_OK) return rc;
  rc = REDCOLL_ENOMEM;
  th_world *w = calloc(1, sizeof *w);
  if (w == NULL) goto fail;
  w->ranks = calloc((size_t)p, sizeof *w->ranks);
  if (w->ranks == NULL) goto fail_world;
  {
    /* The ranks take the world's mutex for microseconds at a time; one that
     * finds it held spins a little before it sleeps in the kernel (a sleep
     * and a wake-up cost more than the wait), where glibc offers that. */
    pthread_mutexattr_t ma;
    if (pthread_mutexattr_init(&ma) != 0) goto fail_ranks;
#ifdef PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP
    pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_ADAPTIVE_NP);
#endif
    int bad = pthread_mutex_init(&w->mu, &ma) != 0;
    pthread_mutexattr_destroy(&ma);
    if (bad) goto fail_ranks;
  }
  if (pthread_condattr_init(&w->cvattr) != 0) goto fail_mutex;
  /* Deadlines are on the monotonic clock: a jump of the wall clock must not
   * fire or postpone a timeout. */
  if (pthread_condattr_setclock(&w->cvattr, CLOCK_MONOTONIC) != 0) goto fail_attr;
  w->p = p;
  uint64_t mask[REDCOLL__CPU_MASK_WORDS]; /* the threads run where their creator may */
  redcoll__cpu_mask(mask, REDCOLL__CPU_MASK_WORDS);
  w->pause_ns = redcoll__spin_pause_ns(redcoll__ranks_per_cpu(p, mask, REDCOLL__CPU_MASK_WORDS));
  w->refs = 1;
  w->timeout_ms = timeout;
  if (cfg != NULL && (cfg->hosts != NULL || cfg->ranks_per_host > 1)) {
    if ((w->hosts = malloc((size_t)p * sizeof *w->hosts)) == NULL) goto fail_hosts;
    for (int r = 0; r < p; r++)
      w->hosts[r] = cfg->hosts != NULL ? cfg->hosts[r] : (uint32_t)(r / cfg->ranks_per_host);
  }
  *out = w;
  return REDCOLL_OK;

fail_hosts:
  pthread_condattr_destroy(&w->cvattr);
  pthread_mutex_destroy(&w->mu);
  free(w->ranks);
  free(w);
  return REDCOLL_ENOMEM;

fail_attr:
  pthread_condattr_destroy(&w->cvattr);
fail_mutex:
  pthread_mutex_destroy(&w->mu);
fail_ranks:
  free(w->ranks);
fail_world:
  free(w);
fail:
  return rc;
}

static void world_release(th_world *w) {
  pthread_mutex_lock(&w->mu);
  int last = --w->refs == 0;
  pthread_mutex_unlock(&w->mu);
  if (last) world_free(w);
}

/* Tells the thread of port q that something it may wait for happened.
 * Mutex held. */
static void wake(th_port *q) {
  __atomic_add_fetch(&q->news, 1, __ATOMIC_RELEASE);
  pthread_cond_signal(&q->cv);
}

/* Wakes every port of channel group `group`, or all if group is
 * UINT64_MAX.  Mutex held. */
static void wake_all(th_world *w, uint64_t group) {
  for (int i = 0; i < w->p; i++)
    for (th_port *q = w->ranks[i].ports; q != NULL; q = q->next)
      if (group == UINT64_MAX || GROUP_OF(q->chan) == group) wake(q);
}

static void world_abort(th_world *w, int status) {
  pthread_mutex_lock(&w->mu);
  if (w->aborted == 0) {
    w->aborted = status < 0 ? status : REDCOLL_EABORTED;
    wake_all(w, UINT64_MAX);
  }
  pthread_mutex_unlock(&w->mu);
}

/* ---- matching and waiting -------------------------------------------------- */

static void slot_post(th_slot *s, int peer, uint64_t tag, void *buf, size_t len, int coll) {
  s->state = SLOT_POSTED;
  s->coll = coll;
  s->peer = peer;
  s->tag = tag;
  s->buf = buf;
  s->len = len;
  s->status = REDCOLL_OK;
}

/* If the send slot of rank s and the receive slot of rank r on channel
 * chan are posted to each other, carries out the transfer and wakes the
 * thread of the two that is not `me`.  Called with the mutex held; drops it
 * during the copy. */
static void try_match(th_world *w, int s, int r, uint64_t chan, int me) {
  th_port *sp = port_find(w, s, chan), *rp = port_find(w, r, chan);
  if (sp == NULL || rp == NULL) return;
  th_slot *ss = &sp->send, *rs = &rp->recv;
  if (ss->state != SLOT_POSTED || ss->peer != r || rs->state != SLOT_POSTED || rs->peer != s)
    return;
  if (w->aborted != 0) return; /* the waits cancel both halves */
  int status = REDCOLL_OK;
  if (ss->tag != rs->tag || ss->len != rs->len) {
    status = REDCOLL_EMISMATCH;
  } else if (ss->len > 0) {
    void *dst = rs->buf;
    const void *src = ss->buf;
    size_t len = ss->len;
    ss->state = rs->state = SLOT_BUSY;
    pthread_mutex_unlock(&w->mu);
    memcpy(dst, src, len);
    pthread_mutex_lock(&w->mu);
  }
  ss->state = rs->state = SLOT_DONE;
  ss->status = rs->status = status;
  wake(me == s ? rp : sp);
}

/* Ranks that disagree where their messages never meet: send slot ss of
 * rank s waits for rank r, which waits on the same channel in a slot of
 * its own (a receive from a third rank, or a send: a send completes only
 * when received), both inside a collective, and their tags say the same
 * collective number but another call (redcoll_transport_tags_conflict).
 * Ends both slots with REDCOLL_EMISMATCH and wakes the thread of the two
 * that is not `me`; 1 if so.  Mutex held. */
static int conflict(int s, th_port *sp, int r, th_port *rp, int me) {
  th_slot *ss = &sp->send;
  if (ss->state != SLOT_POSTED || ss->peer != r || !ss->coll) return 0;
  th_slot *const theirs[2] = {&rp->recv, &rp->send};
  for (int i = 0; i < 2; i++) {
    th_slot *o = theirs[i];
    if (o->state != SLOT_POSTED || !o->coll || !redcoll_transport_tags_conflict(ss->tag, o->tag))
      continue;
    redcoll__log(0, "threads rank %d: rank %d sends tag %#llx on channel %llu, and rank %d "
                    "waits there %s rank %d with tag %#llx: the same collective (#%llu), "
                    "another call (collective, count, dtype, op or root)", me, s,
                 (unsigned long long)ss->tag, (unsigned long long)sp->chan, r,
                 i == 0 ? "for a message from" : "to send to", o->peer,
                 (unsigned long long)o->tag, (unsigned long long)(o->tag >> 40));
    ss->state = o->state = SLOT_DONE;
    ss->status = o->status = REDCOLL_EMISMATCH;
    wake(me == s ? rp : sp);
    return 1;
  }
  return 0;
}

/* The conflicts of rank me's port mp: its send slot against its peer's
 * slots, and (all) its slots against every rank's send slot aimed at it.
 * 1 if one was found.  Mutex held. */
static int find_conflict(th_world *w, int me, th_port *mp, int all) {
  th_port *q;
  if (mp->send.state == SLOT_POSTED && mp->send.coll &&
      (q = port_find(w, mp->send.peer, mp->chan)) != NULL &&
      conflict(me, mp, mp->send.peer, q, me))
    return 1;
  if (!all || !((mp->recv.state == SLOT_POSTED && mp->recv.coll) ||
                (mp->send.state == SLOT_POSTED && mp->send.coll)))
    return 0;
  for (int s = 0; s < w->p; s++)
    if (s != me && (q = port_find(w, s, mp->chan)) != NULL && conflict(s, q, me, mp, me))
      return 1;
  return 0;
}

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Waits, with the mutex held, until each of the caller's slots a and b (NULL
 * if not posted) of rank `rank`'s port me is done, cancelling the ones
 * nobody has claimed yet when the world is aborted, the peer is gone, the
 * deadline (NULL: none) has passed or the other half failed.  Before it
 * first sleeps it looks for a conflict of tags (find_conflict).  Returns
 * the first failure (a's before b's) and leaves both slots idle. */
static int wait_slots(th_world *w, int rank, th_port *me, th_slot *a, th_slot *b,
                      const struct timespec *deadline) {
  th_slot *const sl[2] = {a, b};
  int expired = 0, looked = 0;
  uint64_t spin = redcoll__spin_ns(), spin_until = spin != 0 ? now_ns() + spin : 0;
  uint64_t pause_until = now_ns() + w->pause_ns;
  for (;;) {
    int cancel = REDCOLL_OK, pending = 0, failed = 0;
    for (int i = 0; i < 2; i++) {
      if (sl[i] != NULL && sl[i]->state == SLOT_DONE && sl[i]->status != REDCOLL_OK &&
          cancel == REDCOLL_OK)
        cancel = sl[i]->status;
    }
    if (cancel == REDCOLL_OK && (w->aborted != 0 || is_cancelled(w, me->chan)))
      cancel = REDCOLL_EABORTED;
    if (cancel == REDCOLL_OK && expired) cancel = REDCOLL_ETIMEDOUT;
    for (int i = 0; i < 2; i++) {
      th_slot *s = sl[i];
      if (s == NULL) continue;
      if (s->state == SLOT_POSTED) {
        int why = cancel != REDCOLL_OK ? cancel
                  : w->ranks[s->peer].gone ? REDCOLL_ETRANSPORT
                                           : REDCOLL_OK;
        if (why != REDCOLL_OK) {
          s->state = SLOT_DONE;
          s->status = why;
          failed = 1;
        } else {
          pending = 1;
        }
      } else if (s->state == SLOT_BUSY) {
        pending = 1; /* a copy in progress always finishes */
      }
    }
    if (!pending) break;
    if (failed) continue; /* the other half is cancelled on the next pass */
    if (spin_until != 0) {
      /* Watch for news without the mutex before sleeping on the condition
       * variable (redcoll__spin_ns, redcoll__spin_pause_ns); then look again
       * under the mutex. */
      unsigned seen = __atomic_load_n(&me->news, __ATOMIC_ACQUIRE);
      pthread_mutex_unlock(&w->mu);
      while (__atomic_load_n(&me->news, __ATOMIC_ACQUIRE) == seen) {
        uint64_t t = now_ns();
        if (t >= spin_until) {
          spin_until = 0;
          break;
        }
        redcoll__spin_relax(t < pause_until);
      }
      pthread_mutex_lock(&w->mu);
      continue;
    }
    if (!looked) {
      looked = 1;
      if (find_conflict(w, rank, me, 1)) continue;
    }
    if (deadline != NULL && !expired) {
      if (pthread_cond_timedwait(&me->cv, &w->mu, deadline) == ETIMEDOUT) expired = 1;
    } else {
      pthread_cond_wait(&me->cv, &w->mu);
    }
  }
  int rc = REDCOLL_OK;
  for (int i = 0; i < 2; i++) {
    if (sl[i] == NULL) continue;
    if (rc == REDCOLL_OK) rc = sl[i]->status;
    sl[i]->state = SLOT_IDLE;
  }
  return rc;
}

static void deadline_after(struct timespec *ts, int64_t ms) {
  clock_gettime(CLOCK_MONOTONIC, ts);
  ts->tv_sec += (time_t)(ms / 1000);
  ts->tv_nsec += (long)(ms % 1000) * 1000000L;
  if (ts->tv_nsec >= 1000000000L) {
    ts->tv_sec++;
    ts->tv_nsec -= 1000000000L;
  }
}

/* One call: the send half if dst >= 0, the receive half if src >= 0,
 * bounded by the world's bound on one call and by the collective's deadline
 * coll_ns (CLOCK_MONOTONIC nanoseconds; UINT64_MAX: none), whichever comes
 * first. */
static int xfer(th_impl *t, uint64_t coll_ns, int coll, uint64_t chan, int dst, uint64_t stag,
                const void *sbuf, size_t slen, int src, uint64_t rtag, void *rbuf, size_t rlen) {
  th_world *w = t->w;
  int me = t->rank;
  struct timespec deadline;
  int has_deadline = w->timeout_ms >= 0, by_coll = 0;
  if (has_deadline) deadline_after(&deadline, w->timeout_ms);
  if (coll_ns != UINT64_MAX) {
    struct timespec c = {(time_t)(coll_ns / 1000000000u), (long)(coll_ns % 1000000000u)};
    if (!has_deadline || c.tv_sec < deadline.tv_sec ||
        (c.tv_sec == deadline.tv_sec && c.tv_nsec <= deadline.tv_nsec)) {
      deadline = c;
      has_deadline = 1;
      by_coll = 1;
    }
  }

  pthread_mutex_lock(&w->mu);
  if (w->aborted != 0 || is_cancelled(w, chan)) {
    pthread_mutex_unlock(&w->mu);
    return REDCOLL_EABORTED;
  }
  th_port *r = port_get(w, me, chan);
  if (r == NULL) {
    pthread_mutex_unlock(&w->mu);
    return REDCOLL_ENOMEM;
  }
  if (dst >= 0) slot_post(&r->send, dst, stag, (void *)(uintptr_t)sbuf, slen, coll);
  if (src >= 0) slot_post(&r->recv, src, rtag, rbuf, rlen, coll);
  if (dst >= 0) try_match(w, me, dst, chan, me);
  if (src >= 0) try_match(w, src, me, chan, me);
  if (coll) find_conflict(w, me, r, 0); /* a receive waiting for it: at once */
  int rc = wait_slots(w, me, r, dst >= 0 ? &r->send : NULL, src >= 0 ? &r->recv : NULL,
                      has_deadline ? &deadline : NULL);
  pthread_mutex_unlock(&w->mu);
  if (rc == REDCOLL_ETIMEDOUT) {
    char peers[48];
    if (dst >= 0 && src >= 0 && dst != src)
      snprintf(peers, sizeof peers, "exchanging with ranks %d and %d", dst, src);
    else
      snprintf(peers, sizeof peers, "%s rank %d",
               dst >= 0 && src >= 0 ? "exchanging with" : dst >= 0 ? "sending to" : "receiving from",
               dst >= 0 ? dst : src);
    if (by_coll)
      redcoll__log(0, "threads rank %d: %s: the collective did not finish within its deadline "
                      "(redcoll_comm_set_deadline)", me, peers);
    else
      redcoll__log(0, "threads rank %d: %s did not complete within %lld ms", me, peers,
                   (long long)w->timeout_ms);
  }
  return rc;
}

static int peer_ok(const th_impl *t, int peer, const void *buf, size_t len) {
  return peer >= 0 && peer < t->w->p && peer != t->rank && (buf != NULL || len == 0);
}

/* ---- the vtable --------------------------------------------------------------- */

static int th_exchange(void *impl, const redcoll_transport_ctx *ctx,
                       const redcoll_transport_msg *s, const redcoll_transport_msg *v) {
  th_impl *t = impl;
  if ((s != NULL && !peer_ok(t, s->peer, s->buf, s->len)) ||
      (v != NULL && !peer_ok(t, v->peer, v->buf, v->len)) || (s == NULL && v == NULL))
    return REDCOLL_EINVAL;
  return xfer(t, ctx->deadline_ns, ctx->collective != 0, ctx->channel, s ? s->peer : -1,
              s ? s->tag : 0, s ? s->buf : NULL, s ? s->len : 0, v ? v->peer : -1,
              v ? v->tag : 0, v ? v->buf : NULL, v ? v->len : 0);
}

/* A hand-over through shared memory costs about a microsecond, the single
 * copy runs at memory bandwidth. */
static int th_info(void *impl, redcoll_transport_info *info) {
  th_impl *t = impl;
  strcpy(info->name, "threads");
  info->hosts = t->w->hosts;
  info->caps = REDCOLL_TRANSPORT_CAP_CHANNELS | REDCOLL_TRANSPORT_CAP_THREADS;
  info->alpha = 2e-6;
  info->beta = 1e-10;
  info->gamma = 2.5e-10;
  return REDCOLL_OK;
}

static void th_abort(void *impl, int status) {
  th_impl *t = impl;
  world_abort(t->w, status);
}

/* Every call on the channel group's channels ends with REDCOLL_EABORTED,
 * now and later. */
static void th_cancel(void *impl, uint64_t channel, int status) {
  (void)status;
  th_world *w = ((th_impl *)impl)->w;
  pthread_mutex_lock(&w->mu);
  if (!is_cancelled(w, channel)) {
    uint64_t *n = realloc(w->cancelled, (w->ncancelled + 1) * sizeof *n);
    if (n != NULL) {
      w->cancelled = n;
      w->cancelled[w->ncancelled++] = GROUP_OF(channel);
    }
    wake_all(w, GROUP_OF(channel));
  }
  pthread_mutex_unlock(&w->mu);
}

/* Wakes the other ranks' ports whose unmatched halves wait for rank `me`
 * on a channel of `group` (UINT64_MAX: any), ending those halves with
 * REDCOLL_ETRANSPORT if `end` and no abort of the world or the group
 * comes first (an abort takes precedence over a peer that left; a whole
 * rank that left is seen by the waits themselves).  Mutex held. */
static void fail_waiters(th_world *w, int me, uint64_t group, int end) {
  for (int i = 0; i < w->p; i++)
    for (th_port *q = w->ranks[i].ports; q != NULL; q = q->next) {
      if (group != UINT64_MAX && GROUP_OF(q->chan) != group) continue;
      int hit = 0;
      th_slot *const sl[2] = {&q->send, &q->recv};
      for (int k = 0; k < 2; k++)
        if (sl[k]->state == SLOT_POSTED && sl[k]->peer == me) {
          if (end && w->aborted == 0 && !is_cancelled(w, q->chan)) {
            sl[k]->state = SLOT_DONE;
            sl[k]->status = REDCOLL_ETRANSPORT;
          }
          hit = 1;
        }
      if (hit) wake(q);
    }
}

/* The rank's communicator of the channel group is gone: peers waiting for
 * it there fail, and its ports of the group are freed. */
static void th_close(void *impl, uint64_t channel) {
  th_impl *t = impl;
  th_world *w = t->w;
  uint64_t group = GROUP_OF(channel);
  pthread_mutex_lock(&w->mu);
  fail_waiters(w, t->rank, group, 1);
  for (th_port **link = &w->ranks[t->rank].ports; *link != NULL;) {
    th_port *q = *link;
    if (GROUP_OF(q->chan) == group) {
      *link = q->next;
      port_free(q);
    } else {
      link = &q->next;
    }
  }
  pthread_mutex_unlock(&w->mu);
}

static void th_destroy(void *impl) {
  th_impl *t = impl;
  if (t == NULL) return;
  th_world *w = t->w;
  int me = t->rank;
  pthread_mutex_lock(&w->mu);
  w->ranks[me].gone = 1;
  /* Wake the ranks whose unmatched halves wait for this one. */
  fail_waiters(w, me, UINT64_MAX, 0);
  int last = --w->refs == 0;
  pthread_mutex_unlock(&w->mu);
  if (last) world_free(w);
  free(t);
}

static const redcoll_transport_ops threads_ops = {
    .version = 3,
    .charge = NULL, /* no clock to advance */
    .abort = th_abort,
    .destroy = th_destroy,
    .info = th_info,
    .now = NULL, /* CLOCK_MONOTONIC, as deadline_after */
    .exchange = th_exchange,
    .cancel = th_cancel,
    .close = th_close,
};

/* The communicator of rank `rank` in w; takes a reference on w. */
static int comm_new(th_world *w, int rank, redcoll_comm **out) {
  *out = NULL;
  th_impl *t = calloc(1, sizeof *t);
  if (t == NULL) return REDCOLL_ENOMEM;
  t->w = w;
  t->rank = rank;
  pthread_mutex_lock(&w->mu);
  w->refs++;
  pthread_mutex_unlock(&w->mu);
  int rc = redcoll_comm_create(&threads_ops, t, rank, w->p, out);
  if (rc != REDCOLL_OK) {
    th_destroy(t); /* still ours: drops the reference */
    return rc;
  }
  return rc;
}

/* ---- public ----------------------------------------------------------------- */

REDCOLL_API void redcoll_threads_config_init(redcoll_threads_config *cfg) {
  if (cfg != NULL) memset(cfg, 0, sizeof *cfg);
}

REDCOLL_API int redcoll_threads_world_create(int p, const redcoll_threads_config *cfg,
                                             redcoll_comm **comms) {
  if (comms == NULL || p < 1 || p > THREADS_MAX_P) return REDCOLL_EINVAL;
  for (int i = 0; i < p; i++) comms[i] = NULL;
  th_world *w;
  int rc = world_new(p, cfg, &w);
  if (rc != REDCOLL_OK) return rc;
  int i = 0;
  for (; i < p; i++) {
    if ((rc = comm_new(w, i, &comms[i])) != REDCOLL_OK) goto fail_comms;
  }
  world_release(w);
  return REDCOLL_OK;

fail_comms:
  while (i-- > 0) {
    redcoll_comm_destroy(comms[i]);
    comms[i] = NULL;
  }
  world_release(w);
  return rc;
}

typedef struct th_runner {
  th_world *w;
  redcoll_comm *comm;
  redcoll_rank_main fn;
  void *arg;
  int status;
  pthread_t tid;
} th_runner;

static void *rank_thread(void *vp) {
  th_runner *r = vp;
  r->status = r->fn(r->comm, r->arg);
  /* A rank that gives up takes the world down with it rather than leaving
   * its peers to their timeouts. */
  if (r->status != REDCOLL_OK) world_abort(r->w, r->status);
  redcoll_comm_destroy(r->comm);
  r->comm = NULL;
  return NULL;
}

REDCOLL_API int redcoll_threads_run_config(int p, const redcoll_threads_config *cfg,
                                           redcoll_rank_main fn, void *arg, int *statuses) {
  if (fn == NULL || p < 1 || p > THREADS_MAX_P) return REDCOLL_EINVAL;
  th_world *w;
  int rc = world_new(p, cfg, &w);
  if (rc != REDCOLL_OK) return rc;
  rc = REDCOLL_ENOMEM;
  th_runner *rs = calloc((size_t)p, sizeof *rs);
  if (rs == NULL) goto fail_world;
  int made = 0, started = 0;
  for (; made < p; made++) {
    rs[made].w = w;
    rs[made].fn = fn;
    rs[made].arg = arg;
    if ((rc = comm_new(w, made, &rs[made].comm)) != REDCOLL_OK) goto fail_comms;
  }
  pthread_attr_t attr;
  rc = REDCOLL_ENOMEM;
  if (pthread_attr_init(&attr) != 0) goto fail_comms;
  if (cfg != NULL && cfg->stack_size != 0 && pthread_attr_setstacksize(&attr, cfg->stack_size) != 0) {
    rc = REDCOLL_EINVAL;
    goto fail_attr;
  }
  for (; started < p; started++) {
    if (pthread_create(&rs[started].tid, &attr, rank_thread, &rs[started]) != 0) {
      rc = REDCOLL_ENOMEM;
      world_abort(w, REDCOLL_ENOMEM);
      break;
    }
  }
  pthread_attr_destroy(&attr);
  for (int i = 0; i < started; i++) pthread_join(rs[i].tid, NULL);
  if (started < p) goto fail_comms;

  /* The cause of a failure rather than its echo: aborted ranks count last. */
  rc = REDCOLL_OK;
  for (int i = 0; i < p && (rc == REDCOLL_OK || rc == REDCOLL_EABORTED); i++) {
    if (rs[i].status != REDCOLL_OK) rc = rs[i].status;
  }
  if (statuses != NULL) {
    for (int i = 0; i < p; i++) statuses[i] = rs[i].status;
  }
  free(rs);
  world_release(w);
  return rc;

fail_attr:
  pthread_attr_destroy(&attr);
fail_comms:
  /* Ranks never started still own their communicators. */
  for (int i = started; i < made; i++) redcoll_comm_destroy(rs[i].comm);
  free(rs);
fail_world:
  world_release(w);
  return rc;
}

REDCOLL_API int redcoll_threads_run(int p, redcoll_rank_main fn, void *arg) {
  return redcoll_threads_run_config(p, NULL, fn, arg, NULL);
}
