/*
 * The push transport (include/redcoll/push.h): redcoll over the program's
 * own messages.  A send is one call of the program's send function with a
 * header (frame.c) and the payload in one buffer, made at once: it never
 * waits for the receiver.  A receive is matched against the messages the
 * program delivers from that peer on that channel, in order.
 *
 * State, under one mutex: per peer, a list of its channels, each with a
 * FIFO of messages kept for receives not posted yet and a FIFO of receives
 * waiting for messages; the list of every unfinished receive (for
 * deadlines, cancel, a lost peer); the channel groups cancelled or closed;
 * and the ready list of posted ops that have finished but whose done is
 * still due.
 *
 * Completion: a posted op's done is never called under the mutex, because
 * it may post again.  An op finished by a delivery gets its done in that
 * redcoll_push_deliver call, after the mutex is dropped; one finished in
 * post (a send alone, a receive whose message had arrived) gets it before
 * post returns; one finished by cancel, abort, close, a lost peer or a
 * deadline goes to the ready list, which progress and redcoll_push_deliver
 * empty.  Deadlines are checked in progress: a program that only waits
 * for callbacks runs progress now and then, or the progress thread.  A blocking exchange's own op is a flag its
 * thread waits on (condition variable), never a done.
 *
 * Deadlines: an op waits at most until its collective's deadline and at
 * most wait_timeout_ms after it was posted; progress and the blocking wait
 * expire ops past theirs with REDCOLL_ETIMEDOUT.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "push_int.h"
#include "tagrec.h"

#define PUSH_UNEXPECTED_DEFAULT ((size_t)64 << 20)
#define PUSH_MSG_COST 64
#define PUSH_TIMEOUT_DEFAULT_MS 60000

/* A message kept for a receive not posted yet. */
typedef struct kept {
  struct kept *next;
  uint64_t tag;
  size_t len;
  unsigned char data[];
} kept;

/* An unfinished exchange's receive half, or a finished op on the ready
 * list. */
typedef struct pop {
  struct pop *next;           /* its channel's receive FIFO, or the ready list */
  struct pop *prev_all, *next_all; /* every unfinished receive */
  redcoll_transport_op *op;   /* NULL: a blocking exchange's */
  int finished, status;
  uint64_t deadline;          /* CLOCK_MONOTONIC ns */
  uint64_t chan;
  int src;
  uint64_t tag;
  void *buf;
  size_t len;
} pop;

typedef struct pchan {
  struct pchan *next;
  uint64_t chan;
  kept *kh, *kt;
  pop *rh, *rt;
} pchan;

typedef struct ppeer {
  pchan *chans;
  size_t kept_bytes;
  int lost;
} ppeer;

/* A channel group cancelled (status < 0) or closed. */
typedef struct pgroup {
  struct pgroup *next;
  uint64_t base;
  int status;
  int closed;                 /* here */
  int told;                   /* the peers were sent a CANCEL */
  int *closed_by;             /* peers that closed it */
  size_t nclosed_by;
} pgroup;

typedef struct push {
  pthread_mutex_t mu;
  pthread_cond_t cv;          /* something finished or changed */
  int rank, size;
  redcoll_push_send_fn send;
  void *send_ctx;
  size_t unexpected_max;
  uint64_t wait_ns;           /* UINT64_MAX: no bound */
  ppeer *peers;
  pgroup *groups;
  pop *all;                   /* unfinished receives */
  pop *ready_h, *ready_t;
  uint64_t gen;               /* bumped after done calls finished outside
                               * a progress that waits */
  int aborted;                /* the transport's status once aborted */
  redcoll__tagrec rec; /* for the check of tags that conflict (tagrec.h) */
} push;

static const redcoll_transport_ops push_ops;

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t push_now(void *impl) {
  (void)impl;
  return now_ns();
}

static pgroup *group_of(push *t, uint64_t chan) {
  uint64_t base = chan - chan % REDCOLL_TRANSPORT_CHANNEL_GROUP;
  for (pgroup *g = t->groups; g != NULL; g = g->next)
    if (g->base == base) return g;
  return NULL;
}

static pgroup *group_make(push *t, uint64_t chan) {
  pgroup *g = group_of(t, chan);
  if (g != NULL) return g;
  g = calloc(1, sizeof *g);
  if (g == NULL) return NULL;
  g->base = chan - chan % REDCOLL_TRANSPORT_CHANNEL_GROUP;
  g->next = t->groups;
  t->groups = g;
  return g;
}

static pchan *chan_of(push *t, int peer, uint64_t chan, int make) {
  ppeer *pp = &t->peers[peer];
  for (pchan *c = pp->chans; c != NULL; c = c->next)
    if (c->chan == chan) return c;
  if (!make) return NULL;
  pchan *c = calloc(1, sizeof *c);
  if (c == NULL) return NULL;
  c->chan = chan;
  c->next = pp->chans;
  pp->chans = c;
  return c;
}

/* ---- finishing ops (mutex held) ------------------------------------------ */

static void unlink_all(push *t, pop *o) {
  if (o->prev_all != NULL) o->prev_all->next_all = o->next_all;
  else if (t->all == o) t->all = o->next_all;
  if (o->next_all != NULL) o->next_all->prev_all = o->prev_all;
  o->prev_all = o->next_all = NULL;
}

/* Takes a waiting receive off its channel's FIFO. */
static void unlink_fifo(push *t, pop *o) {
  pchan *c = chan_of(t, o->src, o->chan, 0);
  if (c == NULL) return;
  pop **pp = &c->rh, *prev = NULL;
  while (*pp != NULL && *pp != o) {
    prev = *pp;
    pp = &(*pp)->next;
  }
  if (*pp == NULL) return;
  *pp = o->next;
  if (c->rt == o) c->rt = prev;
  o->next = NULL;
}

/* o has finished with status: a blocking one wakes its thread, a posted
 * one goes to `list` (its done is due once the mutex is dropped). */
static void finish(push *t, pop *o, int status, pop **list_h, pop **list_t) {
  (void)t;
  o->finished = 1;
  o->status = status;
  if (o->op == NULL) return; /* the blocking thread frees nothing: o is on its stack */
  o->next = NULL;
  if (*list_t != NULL) (*list_t)->next = o;
  else *list_h = o;
  *list_t = o;
}

static void finish_ready(push *t, pop *o, int status) {
  finish(t, o, status, &t->ready_h, &t->ready_t);
}

/* Fails every unfinished receive for which `which` says yes. */
static void fail_where(push *t, int status, int (*which)(const pop *o, const void *arg),
                       const void *arg) {
  pop *o = t->all;
  while (o != NULL) {
    pop *next = o->next_all;
    if (which(o, arg)) {
      unlink_fifo(t, o);
      unlink_all(t, o);
      finish_ready(t, o, status);
    }
    o = next;
  }
  pthread_cond_broadcast(&t->cv);
}

static int any_op(const pop *o, const void *arg) {
  (void)o, (void)arg;
  return 1;
}
static int in_group(const pop *o, const void *arg) {
  uint64_t base = *(const uint64_t *)arg;
  return o->chan - o->chan % REDCOLL_TRANSPORT_CHANNEL_GROUP == base;
}
static int from_peer(const pop *o, const void *arg) { return o->src == *(const int *)arg; }
static int on_chan(const pop *o, const void *arg) { return o->chan == *(const uint64_t *)arg; }
typedef struct group_peer {
  uint64_t base;
  int peer;
} group_peer;
static int in_group_from(const pop *o, const void *arg) {
  const group_peer *gp = arg;
  return in_group(o, &gp->base) && o->src == gp->peer;
}

/* Calls done for each op of a list taken off the mutex. */
static void call_done(pop *h) {
  while (h != NULL) {
    pop *next = h->next;
    redcoll_transport_op *op = h->op;
    int status = h->status;
    free(h);
    op->done(op, status);
    h = next;
  }
}

/* After done calls outside progress: wakes the threads in progress, whose
 * requests those calls may have finished. */
static void bump(push *t) {
  pthread_mutex_lock(&t->mu);
  t->gen++;
  pthread_cond_broadcast(&t->cv);
  pthread_mutex_unlock(&t->mu);
}

/* Empties the ready list; 1 if it called any done. */
static int run_ready(push *t) {
  int any = 0;
  for (;;) {
    pthread_mutex_lock(&t->mu);
    pop *h = t->ready_h;
    t->ready_h = t->ready_t = NULL;
    pthread_mutex_unlock(&t->mu);
    if (h == NULL) return any;
    any = 1;
    call_done(h);
  }
}

/* Expires receives past their deadline (mutex held); the earliest deadline
 * left. */
static uint64_t expire(push *t, uint64_t now) {
  uint64_t next = UINT64_MAX;
  pop *o = t->all;
  while (o != NULL) {
    pop *n = o->next_all;
    if (o->deadline <= now) {
      unlink_fifo(t, o);
      unlink_all(t, o);
      redcoll__log(2, "push rank %d: waited past the deadline for rank %d", t->rank, o->src);
      finish_ready(t, o, REDCOLL_ETIMEDOUT);
      pthread_cond_broadcast(&t->cv);
    } else if (o->deadline < next) {
      next = o->deadline;
    }
    o = n;
  }
  return next;
}

/* ---- matching (mutex held) --------------------------------------------- */

/* Copies a message into a receive: EMISMATCH (nothing written) if the tag
 * or the length differ. */
static int land(pop *o, uint64_t tag, const void *data, size_t len) {
  if (tag != o->tag || len != o->len) {
    redcoll__log(1, "push: message from rank %d has tag %016llx and %zu bytes where the "
                    "receive wants tag %016llx and %zu bytes",
                 o->src, (unsigned long long)tag, len, (unsigned long long)o->tag, o->len);
    return REDCOLL_EMISMATCH;
  }
  if (len > 0) memcpy(o->buf, data, len);
  return REDCOLL_OK;
}

/* The status a new call on chan gets before it starts (the transport or
 * the communicator is finished), or REDCOLL_OK. */
static int refused(push *t, uint64_t chan) {
  if (t->aborted != REDCOLL_OK) return t->aborted;
  pgroup *g = group_of(t, chan);
  if (g != NULL && g->closed) return REDCOLL_ETRANSPORT;
  if (g != NULL && g->status != REDCOLL_OK) return g->status;
  return REDCOLL_OK;
}

/* 1 if peer is gone for chan: lost, or it closed chan's communicator. */
static int peer_gone(push *t, uint64_t chan, int peer) {
  if (t->peers[peer].lost) return 1;
  pgroup *g = group_of(t, chan);
  for (size_t i = 0; g != NULL && i < g->nclosed_by; i++)
    if (g->closed_by[i] == peer) return 1;
  return 0;
}

/* 1 if a message from peer on chan is kept (it arrived before the peer
 * went: it is still received). */
static int has_kept(push *t, int peer, uint64_t chan) {
  pchan *c = chan_of(t, peer, chan, 0);
  return c != NULL && c->kh != NULL;
}

/* Rank src's message with tag ftag on chan and this rank's receive there
 * with tag rtag say the same collective number and another call. */
static void log_conflict(push *t, int src, uint64_t chan, uint64_t ftag, uint64_t rtag) {
  redcoll__log(0, "push rank %d: rank %d sent tag %#llx on channel %llu, and this rank "
                  "receives there with tag %#llx: the same collective (#%llu), another call "
                  "(collective, count, dtype, op or root)", t->rank, src,
               (unsigned long long)ftag, (unsigned long long)chan, (unsigned long long)rtag,
               (unsigned long long)(rtag >> 40));
}

/* A receive o inside a collective with a tag not seen last: the messages
 * kept on its channel from every peer are checked against it; 1 if one
 * conflicts (the ranks disagree where their messages may never meet). */
static int enter(push *t, const pop *o, uint64_t coll) {
  if (!redcoll__tagrec_enter(&t->rec, o->chan, o->tag, coll)) return 0;
  for (int q = 0; q < t->size; q++) {
    pchan *c = q == t->rank || t->peers[q].kept_bytes == 0 ? NULL : chan_of(t, q, o->chan, 0);
    for (const kept *k = c != NULL ? c->kh : NULL; k != NULL; k = k->next)
      if (redcoll_transport_tags_conflict(k->tag, o->tag)) {
        log_conflict(t, q, o->chan, k->tag, o->tag);
        return 1;
      }
  }
  return 0;
}

/* Registers o's receive (coll: its collective's number, 0 outside one):
 * failed at once by a conflicting kept message (1, with
 * REDCOLL_EMISMATCH), matched at once against a kept message (1), or
 * queued (0); -1 if memory is short. */
static int recv_start(push *t, pop *o, uint64_t coll, uint64_t now, uint64_t deadline) {
  pchan *c = chan_of(t, o->src, o->chan, 1);
  if (c == NULL) return -1;
  if (coll != 0 && enter(t, o, coll)) {
    o->status = REDCOLL_EMISMATCH;
    return 1;
  }
  kept *k = c->kh;
  if (k != NULL && c->rh == NULL) {
    c->kh = k->next;
    if (c->kh == NULL) c->kt = NULL;
    t->peers[o->src].kept_bytes -= k->len + PUSH_MSG_COST;
    o->status = land(o, k->tag, k->data, k->len);
    free(k);
    return 1;
  }
  uint64_t bound = t->wait_ns == UINT64_MAX || now > UINT64_MAX - t->wait_ns ? UINT64_MAX
                                                                              : now + t->wait_ns;
  o->deadline = deadline < bound ? deadline : bound;
  o->next = NULL;
  if (c->rt != NULL) c->rt->next = o;
  else c->rh = o;
  c->rt = o;
  o->next_all = t->all;
  o->prev_all = NULL;
  if (t->all != NULL) t->all->prev_all = o;
  t->all = o;
  return 0;
}

/* ---- sending ------------------------------------------------------------- */

/* One frame to dst through the program's function; a status < 0 from it
 * is passed on (anything else it returns but 0 counts as ETRANSPORT). */
static int transmit(push *t, int dst, const push_frame *f, const void *payload, size_t len) {
  unsigned char stack[PUSH_HEADER + 256];
  unsigned char *buf = len <= 256 ? stack : malloc(PUSH_HEADER + len);
  if (buf == NULL) return REDCOLL_ENOMEM;
  redcoll__push_frame_encode(f, buf);
  if (len > 0) memcpy(buf + PUSH_HEADER, payload, len);
  int rc = t->send(t->send_ctx, dst, buf, PUSH_HEADER + len);
  if (buf != stack) free(buf);
  if (rc == 0) return REDCOLL_OK;
  redcoll__log(1, "push rank %d: the program's send to rank %d failed (%d)", t->rank, dst, rc);
  return rc < 0 && rc > -1000 ? rc : REDCOLL_ETRANSPORT;
}

/* A control frame to every other rank; failures are the program's to see. */
static void tell_all(push *t, int type, uint64_t chan, int status) {
  push_frame f = {type, t->rank, status, chan, 0, NULL, 0};
  for (int r = 0; r < t->size; r++)
    if (r != t->rank && !t->peers[r].lost) (void)transmit(t, r, &f, NULL, 0);
}

/* ---- the vtable ---------------------------------------------------------- */

/* The send half, then the receive half registered; *o_out is the receive
 * (NULL without one), already finished (1) or waiting (0). */
static int start(push *t, const redcoll_transport_ctx *ctx, const redcoll_transport_msg *send,
                 const redcoll_transport_msg *recv, pop *o, int *matched) {
  pthread_mutex_lock(&t->mu);
  int rc = refused(t, ctx->channel);
  if (rc == REDCOLL_OK && send != NULL && peer_gone(t, ctx->channel, send->peer))
    rc = REDCOLL_ETRANSPORT;
  if (send != NULL) redcoll__tagrec_sent(&t->rec, ctx->channel, ctx->collective);
  pthread_mutex_unlock(&t->mu);
  if (rc != REDCOLL_OK) return rc;
  if (send != NULL) {
    push_frame f = {PUSH_DATA, t->rank, 0, ctx->channel, send->tag, NULL, 0};
    if ((rc = transmit(t, send->peer, &f, send->buf, send->len)) != REDCOLL_OK) return rc;
  }
  *matched = 1;
  if (recv == NULL) return REDCOLL_OK;
  o->chan = ctx->channel;
  o->src = recv->peer;
  o->tag = recv->tag;
  o->buf = recv->buf;
  o->len = recv->len;
  pthread_mutex_lock(&t->mu);
  rc = refused(t, ctx->channel);
  if (rc == REDCOLL_OK && !has_kept(t, recv->peer, ctx->channel) &&
      peer_gone(t, ctx->channel, recv->peer))
    rc = REDCOLL_ETRANSPORT;
  int m = rc == REDCOLL_OK ? recv_start(t, o, ctx->collective, now_ns(), ctx->deadline_ns) : 1;
  pthread_mutex_unlock(&t->mu);
  if (rc != REDCOLL_OK) return rc;
  if (m < 0) return REDCOLL_ENOMEM;
  *matched = m;
  return REDCOLL_OK;
}

static int push_exchange(void *impl, const redcoll_transport_ctx *ctx,
                         const redcoll_transport_msg *send, const redcoll_transport_msg *recv) {
  push *t = impl;
  pop o;
  memset(&o, 0, sizeof o);
  int matched;
  int rc = start(t, ctx, send, recv, &o, &matched);
  if (rc != REDCOLL_OK || recv == NULL) return rc;
  if (matched) return o.status;
  pthread_mutex_lock(&t->mu);
  while (!o.finished) {
    uint64_t now = now_ns();
    if (o.deadline <= now) {
      unlink_fifo(t, &o);
      unlink_all(t, &o);
      o.finished = 1;
      o.status = REDCOLL_ETIMEDOUT;
      redcoll__log(2, "push rank %d: waited past the deadline for rank %d", t->rank, o.src);
      break;
    }
    if (o.deadline == UINT64_MAX) {
      pthread_cond_wait(&t->cv, &t->mu);
    } else {
      struct timespec ts = {(time_t)(o.deadline / 1000000000u), (long)(o.deadline % 1000000000u)};
      pthread_cond_timedwait(&t->cv, &t->mu, &ts);
    }
  }
  pthread_mutex_unlock(&t->mu);
  return o.status;
}

static int push_post(void *impl, const redcoll_transport_ctx *ctx,
                     const redcoll_transport_msg *send, const redcoll_transport_msg *recv,
                     redcoll_transport_op *op) {
  push *t = impl;
  pop *o = calloc(1, sizeof *o);
  if (o == NULL) return REDCOLL_ENOMEM;
  o->op = op;
  int matched;
  int rc = start(t, ctx, send, recv, o, &matched);
  if (rc != REDCOLL_OK) {
    free(o);
    return rc;
  }
  if (matched) {
    /* Finished already (a send alone, or a message that had arrived):
     * done at once, so that the collective goes on without waiting for
     * a progress call or a delivery. */
    int status = recv != NULL ? o->status : REDCOLL_OK;
    free(o);
    op->done(op, status);
  }
  return REDCOLL_OK;
}

static int push_progress(void *impl, uint64_t until_ns) {
  push *t = impl;
  pthread_mutex_lock(&t->mu);
  uint64_t gen0 = t->gen;
  for (;;) {
    uint64_t next = expire(t, now_ns());
    if (t->ready_h != NULL) {
      pthread_mutex_unlock(&t->mu);
      run_ready(t);
      /* Other threads in progress may wait for what these finished. */
      bump(t);
      return REDCOLL_OK;
    }
    uint64_t now = now_ns();
    if (t->gen != gen0 || until_ns == 0 || now >= until_ns) break;
    uint64_t wake = next < until_ns ? next : until_ns;
    if (wake == UINT64_MAX) {
      pthread_cond_wait(&t->cv, &t->mu);
    } else {
      struct timespec ts = {(time_t)(wake / 1000000000u), (long)(wake % 1000000000u)};
      pthread_cond_timedwait(&t->cv, &t->mu, &ts);
    }
  }
  pthread_mutex_unlock(&t->mu);
  return REDCOLL_OK;
}

static int push_info(void *impl, redcoll_transport_info *info) {
  (void)impl;
  strcpy(info->name, "push");
  info->caps = REDCOLL_TRANSPORT_CAP_CHANNELS | REDCOLL_TRANSPORT_CAP_THREADS;
  return REDCOLL_OK;
}

static void push_cancel(void *impl, uint64_t channel, int status) {
  push *t = impl;
  pthread_mutex_lock(&t->mu);
  pgroup *g = group_make(t, channel);
  int first = g != NULL && !g->told && !g->closed;
  if (g != NULL && g->status == REDCOLL_OK) g->status = status;
  if (g != NULL) g->told = 1;
  fail_where(t, status, in_group, &channel);
  pthread_mutex_unlock(&t->mu);
  if (first) tell_all(t, PUSH_CANCEL, channel, status == REDCOLL_EABORTED ? status : REDCOLL_EABORTED);
}

static void push_abort(void *impl, int status) {
  push *t = impl;
  pthread_mutex_lock(&t->mu);
  int first = t->aborted == REDCOLL_OK;
  if (first) t->aborted = status;
  fail_where(t, status, any_op, NULL);
  pthread_mutex_unlock(&t->mu);
  if (first) tell_all(t, PUSH_ABORT, 0, REDCOLL_EABORTED);
}

/* Frees a channel record and the messages kept on it. */
static void free_chan(ppeer *pp, pchan *c) {
  while (c->kh != NULL) {
    kept *k = c->kh;
    c->kh = k->next;
    pp->kept_bytes -= k->len + PUSH_MSG_COST;
    free(k);
  }
  free(c);
}

/* Frees the kept messages and records of a group's channels (mutex held). */
static void drop_group(push *t, uint64_t base) {
  for (int r = 0; r < t->size; r++) {
    ppeer *pp = &t->peers[r];
    pchan **cp = &pp->chans;
    while (*cp != NULL) {
      pchan *c = *cp;
      if (c->chan - c->chan % REDCOLL_TRANSPORT_CHANNEL_GROUP != base) {
        cp = &c->next;
        continue;
      }
      *cp = c->next;
      free_chan(pp, c);
    }
  }
}

static void push_close(void *impl, uint64_t channel) {
  push *t = impl;
  pthread_mutex_lock(&t->mu);
  fail_where(t, REDCOLL_ETRANSPORT, in_group, &channel);
  drop_group(t, channel);
  pgroup *g = group_make(t, channel);
  if (g != NULL) g->closed = 1;
  pthread_mutex_unlock(&t->mu);
  tell_all(t, PUSH_CLOSE, channel, 0);
}

static void push_destroy(void *impl) {
  push *t = impl;
  /* Peers still waiting for this rank learn at once that it is gone. */
  tell_all(t, PUSH_BYE, 0, 0);
  pthread_mutex_lock(&t->mu);
  fail_where(t, REDCOLL_ETRANSPORT, any_op, NULL);
  pthread_mutex_unlock(&t->mu);
  /* The core has finished every op before destroying: nothing is due. */
  while (t->ready_h != NULL) {
    pop *o = t->ready_h;
    t->ready_h = o->next;
    free(o);
  }
  for (int r = 0; r < t->size; r++) {
    ppeer *pp = &t->peers[r];
    while (pp->chans != NULL) {
      pchan *c = pp->chans;
      pp->chans = c->next;
      free_chan(pp, c);
    }
  }
  while (t->groups != NULL) {
    pgroup *g = t->groups;
    t->groups = g->next;
    free(g->closed_by);
    free(g);
  }
  free(t->peers);
  pthread_cond_destroy(&t->cv);
  pthread_mutex_destroy(&t->mu);
  free(t);
}

static const redcoll_transport_ops push_ops = {
    .version = 4,
    .abort = push_abort,
    .destroy = push_destroy,
    .info = push_info,
    .now = push_now,
    .exchange = push_exchange,
    .cancel = push_cancel,
    .close = push_close,
    .post = push_post,
    .progress = push_progress,
};

/* ---- the program's side --------------------------------------------------- */

REDCOLL_API int redcoll_push_comm_create(const redcoll_push_config *cfg, redcoll_comm **out) {
  if (out != NULL) *out = NULL;
  if (cfg == NULL || out == NULL || cfg->struct_size < offsetof(redcoll_push_config, send_ctx) +
                                                           sizeof cfg->send_ctx ||
      cfg->send == NULL || cfg->size < 1 || cfg->rank < 0 || cfg->rank >= cfg->size)
    return REDCOLL_EINVAL;
  redcoll_push_config c;
  memset(&c, 0, sizeof c);
  memcpy(&c, cfg, cfg->struct_size < sizeof c ? cfg->struct_size : sizeof c);
  push *t = calloc(1, sizeof *t);
  if (t == NULL) return REDCOLL_ENOMEM;
  t->peers = calloc((size_t)c.size, sizeof *t->peers);
  pthread_condattr_t ca;
  int ok = t->peers != NULL && pthread_condattr_init(&ca) == 0;
  if (ok) {
    ok = pthread_condattr_setclock(&ca, CLOCK_MONOTONIC) == 0 &&
         pthread_cond_init(&t->cv, &ca) == 0;
    pthread_condattr_destroy(&ca);
  }
  if (!ok || pthread_mutex_init(&t->mu, NULL) != 0) {
    free(t->peers);
    free(t);
    return REDCOLL_ENOMEM;
  }
  t->rank = c.rank;
  t->size = c.size;
  t->send = c.send;
  t->send_ctx = c.send_ctx;
  t->unexpected_max = c.unexpected_max ? c.unexpected_max : PUSH_UNEXPECTED_DEFAULT;
  uint64_t ms = c.wait_timeout_ms ? c.wait_timeout_ms : PUSH_TIMEOUT_DEFAULT_MS;
  t->wait_ns = ms == REDCOLL_WAIT_FOREVER || ms > UINT64_MAX / 1000000u ? UINT64_MAX
                                                                         : ms * 1000000u;
  int rc = redcoll_comm_create(&push_ops, t, c.rank, c.size, out);
  if (rc != REDCOLL_OK) push_destroy(t);
  return rc;
}

/* A DATA frame (mutex held): lands in a waiting receive (added to the
 * caller's done list) or is kept. */
static void deliver_data(push *t, int src, const push_frame *f, pop **dh, pop **dt,
                         uint64_t *cancel) {
  pgroup *g = group_of(t, f->chan);
  if (g != NULL && (g->closed || g->status != REDCOLL_OK)) return; /* dropped */
  if (t->aborted != REDCOLL_OK) return;
  pchan *c = chan_of(t, src, f->chan, 1);
  if (c != NULL && c->rh != NULL) {
    pop *o = c->rh;
    c->rh = o->next;
    if (c->rh == NULL) c->rt = NULL;
    unlink_all(t, o);
    finish(t, o, land(o, f->tag, f->payload, f->len), dh, dt);
    pthread_cond_broadcast(&t->cv);
    return;
  }
  ppeer *pp = &t->peers[src];
  kept *k = NULL;
  if (c != NULL && pp->kept_bytes + f->len + PUSH_MSG_COST <= t->unexpected_max)
    k = malloc(sizeof *k + f->len);
  if (k == NULL) {
    /* Over the bound (or no memory): the communicator fails here. */
    uint64_t base = f->chan - f->chan % REDCOLL_TRANSPORT_CHANNEL_GROUP;
    redcoll__log(0, "push rank %d: rank %d sent more than %zu bytes ahead of the receives on "
                    "channel %llu",
                 t->rank, src, t->unexpected_max, (unsigned long long)f->chan);
    pgroup *gg = group_make(t, base);
    if (gg != NULL && gg->status == REDCOLL_OK) gg->status = REDCOLL_ENOMEM;
    if (gg != NULL && !gg->told) {
      gg->told = 1;
      *cancel = base; /* the peers are told once the mutex is dropped */
    }
    fail_where(t, REDCOLL_ENOMEM, in_group, &base);
    return;
  }
  k->next = NULL;
  k->tag = f->tag;
  k->len = f->len;
  if (f->len > 0) memcpy(k->data, f->payload, f->len);
  if (c->kt != NULL) c->kt->next = k;
  else c->kh = k;
  c->kt = k;
  pp->kept_bytes += f->len + PUSH_MSG_COST;
  if (redcoll__tagrec_kept(&t->rec, f->chan, f->tag)) {
    /* The receives waiting on that channel cannot both be right; one
     * posted later (the collective may be between two of them) looks at
     * the kept messages again and finds this one. */
    log_conflict(t, src, f->chan, f->tag, t->rec.tag);
    fail_where(t, REDCOLL_EMISMATCH, on_chan, &f->chan);
    t->rec.set = 0;
  }
}

REDCOLL_API int redcoll_push_deliver(redcoll_comm *comm, int src, const void *msg, size_t len) {
  push *t = redcoll__comm_transport(comm, &push_ops);
  if (t == NULL || src < 0 || src >= t->size || src == t->rank) return REDCOLL_EINVAL;
  push_frame f;
  if (redcoll__push_frame_decode(msg, len, t->size, &f) != REDCOLL_OK || f.src != src) {
    redcoll__log(1, "push rank %d: a message of %zu bytes said to come from rank %d is not "
                    "redcoll's; dropped",
                 t->rank, len, src);
    return REDCOLL_EPROTO;
  }
  pop *dh = NULL, *dt = NULL;
  uint64_t cancel = UINT64_MAX;
  pthread_mutex_lock(&t->mu);
  switch (f.type) {
  case PUSH_DATA:
    deliver_data(t, src, &f, &dh, &dt, &cancel);
    break;
  case PUSH_CANCEL: {
    pgroup *g = group_make(t, f.chan);
    if (g != NULL && g->status == REDCOLL_OK) g->status = REDCOLL_EABORTED;
    fail_where(t, REDCOLL_EABORTED, in_group, &f.chan);
    break;
  }
  case PUSH_ABORT:
    if (t->aborted == REDCOLL_OK) t->aborted = REDCOLL_EABORTED;
    fail_where(t, REDCOLL_EABORTED, any_op, NULL);
    break;
  case PUSH_CLOSE: {
    /* Remembered: later calls of this group with src fail at once. */
    pgroup *g = group_make(t, f.chan);
    int *grown = g != NULL ? realloc(g->closed_by, (g->nclosed_by + 1) * sizeof *grown) : NULL;
    if (grown != NULL) {
      g->closed_by = grown;
      g->closed_by[g->nclosed_by++] = src;
    }
    group_peer gp = {f.chan, src};
    fail_where(t, REDCOLL_ETRANSPORT, in_group_from, &gp);
    break;
  }
  case PUSH_BYE:
    /* src's transport is gone: as redcoll_push_peer_lost. */
    t->peers[src].lost = 1;
    fail_where(t, REDCOLL_ETRANSPORT, from_peer, &src);
    break;
  }
  pthread_mutex_unlock(&t->mu);
  if (cancel != UINT64_MAX) tell_all(t, PUSH_CANCEL, cancel, REDCOLL_EABORTED);
  int any = dh != NULL;
  call_done(dh);
  if (run_ready(t) || any) bump(t);
  return REDCOLL_OK;
}

REDCOLL_API int redcoll_push_peer_lost(redcoll_comm *comm, int peer) {
  push *t = redcoll__comm_transport(comm, &push_ops);
  if (t == NULL || peer < 0 || peer >= t->size || peer == t->rank) return REDCOLL_EINVAL;
  pthread_mutex_lock(&t->mu);
  t->peers[peer].lost = 1;
  fail_where(t, REDCOLL_ETRANSPORT, from_peer, &peer);
  pthread_mutex_unlock(&t->mu);
  if (run_ready(t)) bump(t);
  return REDCOLL_OK;
}
