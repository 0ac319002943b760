/* The TCP transport: messages between processes over a libuv loop that
 * this rank owns, on any number of channels (one group of them per
 * communicator) and from any number of threads.  Each call posts its
 * operations and waits (wait.c) until they are done, its deadline passes,
 * its channel is cancelled, or a failure breaks the transport.
 *
 * Every ordered pair of ranks uses its own connection, opened by the sender
 * on its first message and shared by all channels: no tie-breaking between
 * ranks that connect to each other at once, and the order of messages is
 * the order of one stream.  The receiver matches per (peer, channel) and
 * keeps messages that come before their receive (chan.c).
 *
 * Sending tries the socket at once and queues the rest (send.c); an
 * incoming connection reads whatever the socket holds into its buffer and
 * takes frames out of it (recv.c).
 *
 * This file holds the vtable (exchange, post, progress, fd, cancel, close,
 * destroy, info, now), one call's wait, the posted exchanges of
 * nonblocking collectives and their end, the handles that drive them on
 * the program's own loop (redcoll_tcp_config.loop), and construction.  The rest of the transport,
 * each file calling only the ones below it:
 *   connect.c    making connections, retrying, accepting
 *   recv.c       reading a connection, frames, matching receives
 *   handshake.c  HELLO's job id, authentication steps, accepting a peer
 *   send.c       DATA frames onto a connection
 *   conn.c       one connection: new, close, control frames, refusal
 *   failure.c    failures of the transport, of a peer, of a channel group
 *   chan.c       a peer's channels, kept messages, channel groups
 *   wait.c       the mutex, and the threads taking turns with the loop
 *   auth.c       the shared secret's key, nonces and MACs
 *   rendezvous.c the bootstrap: listening, host list, rank 0's rendezvous
 *   config.c     configuration from the environment, job ids
 *   addr.c       addresses and interfaces
 *   wire.c       the frame format (pure, fuzzed) */
#include <limits.h>
#include <signal.h>
#include <stdlib.h>

#include "auth.h"
#include "chan.h"
#include "conn.h"
#include "connect.h"
#include "env.h"
#include "failure.h"
#include "recv.h"
#include "rendezvous.h"
#include "send.h"
#include "wait.h"

static const redcoll_transport_ops tcp_ops;

/* ---- one call's wait ------------------------------------------------------- */

/* How long a wait that ends with a peer lost without its BYE listens for a
 * better reason (a CANCEL, a failed authentication): a lost connection is
 * often the echo of an abort elsewhere (a rank that gave up, told everyone
 * and exited; its CANCEL to this rank may come a little after another
 * rank's connection ends).  Short, since a peer's exit must be noticed at
 * once, and never past the wait's own end. */
#define ABORT_GRACE_MS 50

typedef struct wait_set {
  redcoll__tcp_send *s;
  redcoll__tcp_recv *r;
  uint64_t chan;
} wait_set;

/* The call can end: its operations are done, or its channel or the whole
 * transport is broken. */
static int call_over(redcoll__tcp *t, void *arg) {
  const wait_set *w = arg;
  if (t->fatal != REDCOLL_OK || redcoll__tcp_chan_status(t, w->chan) != REDCOLL_OK) return 1;
  return (w->s == NULL || w->s->done) && (w->r == NULL || w->r->done);
}

static int send_done(redcoll__tcp *t, void *arg) {
  (void)t;
  return ((redcoll__tcp_send *)arg)->done;
}

/* A better reason than a lost connection has arrived for the channel. */
static int explained(redcoll__tcp *t, void *arg) {
  const wait_set *w = arg;
  return (t->fatal != REDCOLL_OK && t->fatal != REDCOLL_ETRANSPORT) ||
         redcoll__tcp_chan_status(t, w->chan) != REDCOLL_OK;
}

/* Takes back what is still pending of w, so that nothing touches the
 * caller's memory after return; a send that libuv still writes is left to
 * finish from a copy, and w->s is then NULL. */
static void withdraw(redcoll__tcp *t, wait_set *w, int may_wait) {
  if (w->r != NULL && !w->r->done) redcoll__tcp_recv_withdraw(t, w->r);
  redcoll__tcp_send *s = w->s;
  if (s == NULL || s->done) return;
  redcoll__tcp_peer *p = &t->peers[s->dst];
  if (!s->queued) {
    /* Still waiting for the connection: off the queue. */
    redcoll__tcp_send **pp = &p->txq, *last = NULL;
    while (*pp != NULL && *pp != s) {
      last = *pp;
      pp = &(*pp)->next;
    }
    if (*pp == s) *pp = s->next;
    if (p->txq_tail == s) p->txq_tail = last;
    s->done = 1;
    return;
  }
  /* libuv still writes from the caller's buffer: the rest goes on from a
   * copy (redcoll__tcp_send_detach).  Only without memory for it does this
   * call wait for the write, and cut the connection if the peer takes
   * nothing for a second; a posted exchange (which must not wait) cuts it
   * at once. */
  if (redcoll__tcp_send_detach(s) == 0) {
    w->s = NULL; /* the write callback's now */
    return;
  }
  if (!may_wait) {
    redcoll__log(0, "tcp rank %d: no memory to finish a send to rank %d without its caller: its "
                    "connection is cut", t->rank, s->dst);
    /* Its write callback frees it, or the close does (a message in pieces
     * between two of them). */
    s->detached = 1;
    s->copy = NULL;
    w->s = NULL;
    if (p->out != NULL) redcoll__tcp_conn_close(p->out); /* libuv reads the buffer no more */
    return;
  }
  if (redcoll__tcp_progress(t, send_done, s, uv_hrtime() + 1000000000u)) return;
  redcoll__log(0, "tcp rank %d: no memory to finish a send to rank %d without its caller, and "
                  "it takes no data: its connection is cut", t->rank, s->dst);
  if (p->out != NULL) redcoll__tcp_conn_close(p->out);
  redcoll__tcp_progress(t, send_done, s, UINT64_MAX);
}

/* The status of w once call_over. */
static int over_status(redcoll__tcp *t, const wait_set *w) {
  if (t->fatal != REDCOLL_OK) return t->fatal;
  int rc = redcoll__tcp_chan_status(t, w->chan);
  if (rc != REDCOLL_OK) return rc;
  /* A peer's failure ends this call: its reason is logged (once, at level
   * error) if it was only noted while no call needed the peer. */
  if (w->r != NULL && w->r->status != REDCOLL_OK) {
    rc = w->r->status;
    redcoll__tcp_peer_why(t, w->r->src);
  }
  if (w->s != NULL && w->s->status != REDCOLL_OK) {
    rc = w->s->status;
    redcoll__tcp_peer_why(t, w->s->dst);
  }
  return rc;
}

/* A peer lost without its BYE: a CANCEL on its way may say why (within
 * ABORT_GRACE_MS). */
static int lost_unexplained(redcoll__tcp *t, const wait_set *w, int rc) {
  /* Only the peer whose operation failed: a healthy peer this rank was
   * sending to says no BYE either. */
  return rc == REDCOLL_ETRANSPORT && t->size > 2 && /* (at p = 2 nobody else could say why) */
         ((w->r != NULL && w->r->status == REDCOLL_ETRANSPORT && !t->peers[w->r->src].said_bye) ||
          (w->s != NULL && w->s->status == REDCOLL_ETRANSPORT && !t->peers[w->s->dst].said_bye));
}

/* The end of the grace for a wait that ended now: ABORT_GRACE_MS, but not
 * past until (the wait's timeout or deadline). */
static uint64_t grace_end(uint64_t now, uint64_t until) {
  uint64_t g = now + ABORT_GRACE_MS * 1000000ull;
  return g < until ? g : until;
}

/* The better reason, if one came, for a wait that ended with rc. */
static int better_reason(redcoll__tcp *t, const wait_set *w, int rc) {
  if (t->fatal != REDCOLL_OK && t->fatal != REDCOLL_ETRANSPORT) return t->fatal;
  if (redcoll__tcp_chan_status(t, w->chan) != REDCOLL_OK) return redcoll__tcp_chan_status(t, w->chan);
  return rc;
}

/* Waits until w is done.  Returns REDCOLL_OK or why it stopped; pending
 * operations are then withdrawn. */
/* When a wait that starts now ends: the tighter of the collective's
 * deadline and the transport's bound on one wait (*by_deadline: the
 * deadline). */
static uint64_t wait_until(const redcoll__tcp *t, uint64_t deadline_ns, int *by_deadline) {
  uint64_t now = uv_hrtime(), ms = t->timeout_ms;
  uint64_t until = ms == REDCOLL_WAIT_FOREVER || ms > (UINT64_MAX - now) / 1000000u
                       ? UINT64_MAX
                       : now + ms * 1000000u;
  *by_deadline = deadline_ns <= until;
  return *by_deadline ? deadline_ns : until;
}

static void log_timeout(redcoll__tcp *t, const wait_set *w, const char *what, int peer,
                        int by_deadline) {
  char a[64];
  redcoll__tcp_peer_addr(t, peer, a, sizeof a);
  if (by_deadline)
    redcoll__log(0, "tcp rank %d: %s rank %d (%s) on channel %llu: the collective did not "
                    "finish within its deadline (redcoll_comm_set_deadline)",
                 t->rank, what, peer, a, (unsigned long long)w->chan);
  else
    redcoll__log(0, "tcp rank %d: %s rank %d (%s) on channel %llu did not complete within %llu "
                    "ms", t->rank, what, peer, a, (unsigned long long)w->chan,
                 (unsigned long long)t->timeout_ms);
}

static const char *what_of(const redcoll_transport_msg *sm, const redcoll_transport_msg *rm) {
  return sm != NULL && rm != NULL ? "exchanging with" : sm != NULL ? "sending to" : "receiving from";
}

static int wait_for(redcoll__tcp *t, wait_set *w, const char *what, int peer, uint64_t deadline_ns) {
  int by_deadline;
  uint64_t until = wait_until(t, deadline_ns, &by_deadline);
  int rc = REDCOLL_OK;
  redcoll__tcp_kick(t);
  if (!redcoll__tcp_progress(t, call_over, w, until)) {
    log_timeout(t, w, what, peer, by_deadline);
    rc = REDCOLL_ETIMEDOUT;
  } else {
    rc = over_status(t, w);
  }
  withdraw(t, w, 1);
  /* A peer lost without its BYE: a CANCEL on its way may say why. */
  if (lost_unexplained(t, w, rc)) {
    redcoll__tcp_progress(t, explained, w, grace_end(uv_hrtime(), until));
    rc = better_reason(t, w, rc);
  }
  return rc;
}

static int post_send(redcoll__tcp *t, redcoll__tcp_send *s) {
  redcoll__tcp_peer *p = &t->peers[s->dst];
  /* The channel's own end (a cancel) is the better reason than a peer's. */
  int st = redcoll__tcp_chan_status(t, s->chan);
  if (st == REDCOLL_OK && (st = p->err_send) != REDCOLL_OK) redcoll__tcp_peer_why(t, s->dst);
  if (st != REDCOLL_OK) {
    s->done = 1;
    s->status = st;
    return st;
  }
  if (s->coll != 0) redcoll__tcp_chan_sent(t, s->chan, s->coll);
  if (p->probe) {
    /* A send connects now: a receive's probe must not hold it up. */
    p->probe = 0;
    if (p->retry_active) uv_timer_stop(&p->retry);
    p->retry_active = 0;
  }
  if (p->out != NULL && p->out->ready && p->out->wr_busy == NULL && p->txq == NULL) {
    redcoll__tcp_send_queue(t, s);
    return REDCOLL_OK;
  }
  if (p->txq_tail != NULL) p->txq_tail->next = s;
  else p->txq = s;
  p->txq_tail = s;
  if (p->out == NULL && !p->retry_active) {
    p->backoff_ms = 2;
    redcoll__tcp_peer_connect(t, s->dst, 0);
  }
  return REDCOLL_OK;
}

static int post_recv(redcoll__tcp *t, redcoll__tcp_recv *r) {
  redcoll__tcp_peer *p = &t->peers[r->src];
  int st = redcoll__tcp_chan_status(t, r->chan);
  if (st == REDCOLL_OK && r->coll != 0 &&
      (st = redcoll__tcp_chan_enter(t, r->chan, r->tag, r->coll)) != REDCOLL_OK) {
    redcoll__tcp_group_fail(t, REDCOLL__TCP_GROUP_OF(r->chan), st);
    redcoll__tcp_pump_all(t); /* a frame of the group waiting for room is dropped now */
  }
  redcoll__tcp_pchan *pc = NULL;
  if (st == REDCOLL_OK) {
    pc = redcoll__tcp_pchan_get(t, r->src, r->chan, 1);
    if (pc == NULL) st = REDCOLL_ENOMEM;
    else if (pc->rx != NULL) {
      redcoll__log(0, "tcp rank %d: two receives from rank %d on channel %llu at once", t->rank,
                   r->src, (unsigned long long)r->chan);
      st = REDCOLL_EINVAL;
    }
  }
  if (st != REDCOLL_OK) {
    r->done = 1;
    r->status = st;
    return st;
  }
  pc->rx = r;
  /* A message still arriving into a kept copy goes on into r's buffer. */
  if (redcoll__tcp_recv_adopt(t, r, pc)) {
    if (p->in != NULL) redcoll__tcp_rx_pump(p->in); /* room among the kept again */
    return REDCOLL_OK;
  }
  /* A message kept for it is taken first, even from a peer gone since. */
  if (redcoll__tcp_umsg_deliver(t, r->src, pc)) {
    redcoll__tcp_pchan_tidy(t, r->src, pc);
    if (p->in != NULL) redcoll__tcp_rx_pump(p->in); /* room among the kept again */
    return r->status;
  }
  if (pc->head == NULL) {
    st = p->err_recv;
    if (st != REDCOLL_OK) redcoll__tcp_peer_why(t, r->src);
    if (st == REDCOLL_OK && redcoll__tcp_peer_has_closed(t, r->src, REDCOLL__TCP_GROUP_OF(r->chan))) {
      redcoll__log(0, "tcp rank %d: rank %d has destroyed the communicator of channel %llu, and "
                      "this rank waits for a message from it there", t->rank, r->src,
                   (unsigned long long)REDCOLL__TCP_GROUP_OF(r->chan));
      st = REDCOLL_ETRANSPORT;
    }
    if (st != REDCOLL_OK) {
      pc->rx = NULL;
      redcoll__tcp_pchan_tidy(t, r->src, pc);
      r->done = 1;
      r->status = st;
      return st;
    }
  }
  if (p->in != NULL) {
    redcoll__tcp_rx_pump(p->in);
  } else if (p->out == NULL && !p->retry_active && p->err_send == REDCOLL_OK &&
             (t->number == 0 || p->ever)) {
    /* Neither side has connected, and the peer is known to have listened
     * (the rendezvous saw it, or a connection did): if nothing arrives
     * for a while, find out whether it is still there
     * (redcoll__tcp_peer.probe). */
    p->probe = 1;
    redcoll__tcp_retry_later_ms(t, r->src, REDCOLL__TCP_PROBE_MS);
  }
  return REDCOLL_OK;
}

/* The vtable's one transfer: a send, a receive or both on the channel of
 * ctx, until the tighter of the collective's deadline and the wait bound.
 * Any thread; the receive is posted first, so the peer's data can flow
 * while this rank sends. */
static int tcp_exchange(void *impl, const redcoll_transport_ctx *ctx,
                        const redcoll_transport_msg *sm, const redcoll_transport_msg *rm) {
  redcoll__tcp *t = impl;
  if ((sm == NULL && rm == NULL) ||
      (sm != NULL && (sm->peer < 0 || sm->peer >= t->size || sm->peer == t->rank)) ||
      (rm != NULL && (rm->peer < 0 || rm->peer >= t->size || rm->peer == t->rank)))
    return REDCOLL_EINVAL;
  /* The send lives on the heap: a call that returns before libuv has
   * written it leaves it to the write callback (withdraw). */
  redcoll__tcp_send *s = NULL;
  redcoll__tcp_recv r = {0};
  wait_set w = {NULL, NULL, ctx->channel};
  if (sm != NULL) {
    if ((s = calloc(1, sizeof *s)) == NULL) return REDCOLL_ENOMEM;
    *s = (redcoll__tcp_send){.dst = sm->peer, .tag = sm->tag, .chan = ctx->channel,
                             .coll = ctx->collective, .buf = sm->buf, .len = sm->len};
    w.s = s;
  }
  if (rm != NULL) {
    r = (redcoll__tcp_recv){.src = rm->peer, .tag = rm->tag, .chan = ctx->channel,
                            .buf = rm->buf, .len = rm->len, .coll = ctx->collective};
    w.r = &r;
  }
  pthread_mutex_lock(&t->mu);
  if (t->ext && (t->leader || t->in_cb)) {
    /* Inside a callback of the embedder's loop, which must not run again
     * from there. */
    redcoll__log(0, "tcp rank %d: a blocking call from inside a callback of the event loop the "
                    "transport runs on (redcoll_tcp_config.loop): start its nonblocking form "
                    "instead", t->rank);
    pthread_mutex_unlock(&t->mu);
    free(s);
    return REDCOLL_ENOTSUP;
  }
  int rc = t->fatal;
  if (rc == REDCOLL_OK && w.r != NULL) rc = post_recv(t, &r);
  if (rc == REDCOLL_OK && w.s != NULL) rc = post_send(t, s);
  if (rc != REDCOLL_OK) {
    /* What was posted is taken back. */
    withdraw(t, &w, 1);
  } else {
    rc = wait_for(t, &w, what_of(sm, rm), rm != NULL ? rm->peer : sm->peer, ctx->deadline_ns);
  }
  free(w.s); /* NULL once handed to the write callback */
  /* Posting can complete other threads' operations (a pump of kept
   * messages): they must not wait for the leader's next turn. */
  pthread_cond_broadcast(&t->cv);
  pthread_mutex_unlock(&t->mu);
  return rc;
}

/* ---- posted exchanges (version 4) ---------------------------------------------
 *
 * post starts what exchange does and files the exchange in t->pend; after
 * every turn of the loop (and in every progress) reap moves those that are
 * over -- done, failed, past their deadline or their wait bound -- to
 * t->fin, withdrawing what is still pending of them, exactly as a blocking
 * call's wait ends; deliver calls their done with the mutex released and
 * no thread leading the loop, so that done may post, cancel and abort
 * (which take the mutex, and cancel runs the loop for its CANCELs).  Any
 * thread in progress delivers every finished exchange, and one that
 * delivered wakes the others (t->gen), whose progress then returns. */

typedef struct redcoll__tcp_pop {
  struct redcoll__tcp_pop *next;
  redcoll_transport_op *op;
  wait_set w;             /* w.s on the heap, w.r = &rx */
  redcoll__tcp_recv rx;
  uint64_t until;         /* the deadline or the wait bound, uv_hrtime ns */
  uint64_t grace;         /* a lost peer: listening for a better reason until then */
  int by_deadline, peer, status;
  const char *what;
} redcoll__tcp_pop;

static void pend_unlink(redcoll__tcp *t, redcoll__tcp_pop *prev, redcoll__tcp_pop *o) {
  if (prev != NULL) prev->next = o->next;
  else t->pend = o->next;
  if (t->pend_tail == o) t->pend_tail = prev;
  o->next = NULL;
}

/* Whether o is over (o->status then set), with t->mu held. */
static int pop_over(redcoll__tcp *t, redcoll__tcp_pop *o, uint64_t now) {
  if (o->grace != 0) {
    if (!explained(t, &o->w) && now < o->grace) return 0;
    o->status = better_reason(t, &o->w, o->status);
    return 1;
  }
  int rc;
  if (call_over(t, &o->w)) {
    rc = over_status(t, &o->w);
  } else if (now >= o->until) {
    log_timeout(t, &o->w, o->what, o->peer, o->by_deadline);
    rc = REDCOLL_ETIMEDOUT;
  } else {
    return 0;
  }
  withdraw(t, &o->w, 0);
  o->status = rc;
  if (lost_unexplained(t, &o->w, rc) && now < o->until) {
    o->grace = grace_end(now, o->until);
    return 0;
  }
  return 1;
}

/* Moves the posted exchanges that are over to t->fin; how many. */
static int reap(redcoll__tcp *t) {
  if (t->pend == NULL) return 0;
  uint64_t now = uv_hrtime();
  int n = 0;
  for (redcoll__tcp_pop *o = t->pend, *prev = NULL, *next; o != NULL; o = next) {
    next = o->next;
    if (!pop_over(t, o, now)) {
      prev = o;
      continue;
    }
    pend_unlink(t, prev, o);
    if (t->fin_tail != NULL) t->fin_tail->next = o;
    else t->fin = o;
    t->fin_tail = o;
    n++;
  }
  return n;
}

/* When the next posted exchange times out (UINT64_MAX: none). */
static uint64_t next_deadline(const redcoll__tcp *t) {
  uint64_t d = UINT64_MAX;
  for (const redcoll__tcp_pop *o = t->pend; o != NULL; o = o->next) {
    uint64_t u = o->grace != 0 ? o->grace : o->until;
    if (u < d) d = u;
  }
  return d;
}

static void ext_rearm(redcoll__tcp *t);

/* With t->mu held (and this thread not leading the loop): calls done for
 * every finished exchange, with the mutex released meanwhile.  Returns how
 * many. */
static int deliver(redcoll__tcp *t) {
  redcoll__tcp_pop *o = t->fin;
  if (o == NULL) return 0;
  t->fin = t->fin_tail = NULL;
  if (t->ext) ext_rearm(t);
  t->in_cb++;
  pthread_mutex_unlock(&t->mu);
  int n = 0;
  while (o != NULL) {
    redcoll__tcp_pop *next = o->next;
    redcoll_transport_op *op = o->op;
    int st = o->status;
    free(o->w.s); /* NULL once handed to its write callback */
    free(o);
    op->done(op, st);
    n++;
    o = next;
  }
  pthread_mutex_lock(&t->mu);
  t->in_cb--;
  /* Once the dones have run, the others in progress return (their
   * requests may be among these): those waiting on cv, and the leader's
   * poll. */
  t->gen++;
  pthread_cond_broadcast(&t->cv);
  redcoll__tcp_kick(t);
  return n;
}

static void on_nb_idle(uv_idle_t *h);

static int tcp_post(void *impl, const redcoll_transport_ctx *ctx, const redcoll_transport_msg *sm,
                    const redcoll_transport_msg *rm, redcoll_transport_op *op) {
  redcoll__tcp *t = impl;
  if (op == NULL || op->done == NULL ||
      (sm != NULL && (sm->peer < 0 || sm->peer >= t->size || sm->peer == t->rank)) ||
      (rm != NULL && (rm->peer < 0 || rm->peer >= t->size || rm->peer == t->rank)))
    return REDCOLL_EINVAL;
  redcoll__tcp_pop *o = calloc(1, sizeof *o);
  if (o == NULL) return REDCOLL_ENOMEM;
  o->op = op;
  o->w.chan = ctx->channel;
  o->what = what_of(sm, rm);
  /* Neither side: a yield (REDCOLL_TRANSPORT_CAP_YIELD), over at once, so
   * that the next reap finishes it: the next turn of the loop, or the
   * next progress. */
  o->peer = rm != NULL ? rm->peer : sm != NULL ? sm->peer : -1;
  if (sm != NULL) {
    if ((o->w.s = calloc(1, sizeof *o->w.s)) == NULL) {
      free(o);
      return REDCOLL_ENOMEM;
    }
    *o->w.s = (redcoll__tcp_send){.dst = sm->peer, .tag = sm->tag, .chan = ctx->channel,
                                  .coll = ctx->collective, .buf = sm->buf, .len = sm->len};
  }
  if (rm != NULL) {
    o->rx = (redcoll__tcp_recv){.src = rm->peer, .tag = rm->tag, .chan = ctx->channel,
                                .buf = rm->buf, .len = rm->len, .coll = ctx->collective};
    o->w.r = &o->rx;
  }
  pthread_mutex_lock(&t->mu);
  int rc = t->fatal;
  if (rc == REDCOLL_OK && o->w.r != NULL) rc = post_recv(t, &o->rx);
  if (rc == REDCOLL_OK && o->w.s != NULL) rc = post_send(t, o->w.s);
  if (rc != REDCOLL_OK) {
    withdraw(t, &o->w, 0);
    pthread_cond_broadcast(&t->cv);
    pthread_mutex_unlock(&t->mu);
    free(o->w.s);
    free(o);
    return rc;
  }
  o->until = wait_until(t, ctx->deadline_ns, &o->by_deadline);
  if (t->pend_tail != NULL) t->pend_tail->next = o;
  else t->pend = o;
  t->pend_tail = o;
  redcoll__tcp_kick(t); /* the leader's poll sees the new writes and reads */
  /* A yield wakes whoever polls the loop's descriptor (a program's own
   * poll loop, redcoll_comm_fd), whose next progress finishes it. */
  if (sm == NULL && rm == NULL && !t->ext && !t->leader) uv_async_send(&t->wake);
  if (t->ext) {
    /* It may be over already: the next turn does not wait. */
    uv_idle_start(&t->nb_idle, on_nb_idle);
    ext_rearm(t);
  }
  /* Posting can complete other threads' operations (a pump of kept
   * messages). */
  pthread_cond_broadcast(&t->cv);
  pthread_mutex_unlock(&t->mu);
  return REDCOLL_OK;
}

typedef struct nb_wait {
  uint64_t gen, until;
} nb_wait;

/* progress can return: an exchange is over, another thread delivered, or
 * an exchange must be looked at before the wait would end (one that began
 * to listen for a better reason than a lost peer). */
static int nb_ready(redcoll__tcp *t, void *arg) {
  const nb_wait *nw = arg;
  reap(t);
  return t->fin != NULL || t->gen != nw->gen || next_deadline(t) < nw->until;
}

static int tcp_progress(void *impl, uint64_t until_ns) {
  redcoll__tcp *t = impl;
  pthread_mutex_lock(&t->mu);
  nb_wait nw = {t->gen, UINT64_MAX};
  /* On the embedder's loop, progress runs the loop only for a wait
   * (until_ns > 0) called outside the loop's callbacks; a pass (0), and
   * any call from inside a callback, only finishes what the loop did. */
  int may_run = !t->ext || (until_ns != 0 && !t->leader && !t->in_cb);
  if (until_ns == 0 || !may_run) {
    if (may_run && !t->leader) redcoll__tcp_one_turn(t);
    reap(t);
  } else {
    uint64_t d = next_deadline(t);
    nw.until = d < until_ns ? d : until_ns;
    redcoll__tcp_kick(t);
    redcoll__tcp_progress(t, nb_ready, &nw, nw.until);
    reap(t);
  }
  deliver(t);
  int rc = t->fatal;
  pthread_mutex_unlock(&t->mu);
  return rc;
}

/* The loop's descriptor: readable when the loop has I/O to handle.  Its
 * timers (connection retries, the deadlines of posted exchanges) are not
 * in it: redcoll_tcp_comm_poll_timeout says how long a poll may wait. */
static int tcp_fd(void *impl) {
  redcoll__tcp *t = impl;
  pthread_mutex_lock(&t->mu);
  int fd = uv_backend_fd(t->loop);
  pthread_mutex_unlock(&t->mu);
  return fd;
}

/* ---- on the embedder's loop ---------------------------------------------------
 *
 * The embedder's thread runs the loop; the transport's handles are unref'd,
 * so that its uv_run can end while nothing is posted, and nb_check is ref'd
 * while something is: uv_run(UV_RUN_DEFAULT) returns once the program's own
 * handles and the posted exchanges are all done.  After every poll nb_check
 * finishes the exchanges the loop moved on and calls their done (and so the
 * requests' callbacks) from the loop; nb_idle makes the next turn not wait
 * after something changed outside a callback; nb_timer wakes the loop at the
 * next deadline. */

static void linger_check(redcoll__tcp *t);

static void ext_turn(redcoll__tcp *t) {
  redcoll__tcp_ext_turn(t); /* connections paused for this turn read on */
  if (t->lingering) {
    linger_check(t);
    return;
  }
  /* Inside a call of this thread that runs the loop itself (a blocking
   * call, a wait): that call finishes them. */
  if (t->leader) return;
  pthread_mutex_lock(&t->mu);
  reap(t);
  deliver(t);
  if (!t->lingering) ext_rearm(t); /* (a done may have destroyed it) */
  pthread_mutex_unlock(&t->mu);
}

static void on_nb_check(uv_check_t *h) { ext_turn(h->data); }

static void on_nb_idle(uv_idle_t *h) {
  uv_idle_stop(h);
  ext_turn(h->data);
}

static void on_nb_timer(uv_timer_t *h) { ext_turn(h->data); }

static void ext_rearm(redcoll__tcp *t) {
  if (!t->nb_init) return;
  if (t->pend == NULL && t->fin == NULL) {
    uv_unref((uv_handle_t *)&t->nb_check);
    uv_timer_stop(&t->nb_timer);
    return;
  }
  uv_ref((uv_handle_t *)&t->nb_check);
  if (t->fin != NULL) uv_idle_start(&t->nb_idle, on_nb_idle);
  uint64_t d = next_deadline(t), now = uv_hrtime();
  if (d == UINT64_MAX) {
    uv_timer_stop(&t->nb_timer);
    return;
  }
  uint64_t ms = d > now ? (d - now + 999999) / 1000000 : 0;
  uv_timer_start(&t->nb_timer, on_nb_timer, ms, 0);
}

static int ext_init(redcoll__tcp *t) {
  if (uv_check_init(t->loop, &t->nb_check) != 0 || uv_idle_init(t->loop, &t->nb_idle) != 0 ||
      uv_timer_init(t->loop, &t->nb_timer) != 0)
    return REDCOLL_ENOMEM;
  t->nb_check.data = t->nb_idle.data = t->nb_timer.data = t;
  t->on_idle = on_nb_idle;
  uv_check_start(&t->nb_check, on_nb_check);
  uv_unref((uv_handle_t *)&t->nb_check);
  uv_unref((uv_handle_t *)&t->nb_timer);
  uv_unref((uv_handle_t *)&t->nb_idle);
  t->nb_init = 1;
  return REDCOLL_OK;
}

/* ---- cancel, close, destroy ------------------------------------------------- */

/* Control frames are still being written, connections made, or a
 * connection that is to carry a CANCEL is still being set up. */
static int ctl_busy(redcoll__tcp *t) {
  if (t->ctl_pending > 0 || t->connects_pending > 0) return 1;
  for (const redcoll__tcp_conn *c = t->conns.next; c != &t->conns; c = c->next) {
    if ((c->abort_after_hello || c->send_cancels) && !c->ready && !c->closing) return 1;
    /* While leaving: a connection in its set-up says BYE once set up, so
     * that the peer does not see it end half made. */
    if (t->leaving && c->out && c->hello_sent && !c->ready && !c->closing && !c->refused) return 1;
  }
  return 0;
}

static int ctl_flushed(redcoll__tcp *t, void *arg) {
  (void)arg;
  return !ctl_busy(t);
}

/* This rank gives up on the communicator of channel group `channel`: its
 * calls there end with REDCOLL_EABORTED here and, told by a CANCEL, on
 * every peer.  Any thread, at any time. */
static void tcp_cancel(void *impl, uint64_t channel, int status) {
  redcoll__tcp *t = impl;
  uint64_t g = REDCOLL__TCP_GROUP_OF(channel);
  pthread_mutex_lock(&t->mu);
  redcoll__tcp_group *gr = redcoll__tcp_group_get(t, g, 1);
  if (gr == NULL || gr->cancelled) {
    pthread_mutex_unlock(&t->mu);
    return;
  }
  uint64_t tag = (uint32_t)(int32_t)(status ? status : REDCOLL_EABORTED);
  if (t->auth_failed_with >= 0) tag |= (uint64_t)1 << 32 | (uint64_t)t->auth_failed_with << 40;
  gr->cancelled = REDCOLL_EABORTED;
  gr->from = t->rank;
  gr->why = tag;
  if (t->abort_from < 0) {
    t->abort_from = t->rank;
    t->abort_why = tag;
  }
  redcoll__log(2, "tcp rank %d: cancelling the communicator of channel %llu (%s)", t->rank,
               (unsigned long long)g, redcoll_status_name(status));
  redcoll__tcp_group_fail(t, g, REDCOLL_EABORTED);
  redcoll__tcp_pump_all(t); /* a frame of the group waiting for room is dropped now */
  for (int q = 0; q < t->size; q++) {
    if (q == t->rank) continue;
    redcoll__tcp_peer *p = &t->peers[q];
    if (p->in != NULL) {
      /* The peer's own connection to this rank, which it always reads and
       * on which this rank sends no data: nothing is ahead of the CANCEL
       * (on this rank's connection it could wait behind a message the peer
       * has no room for). */
      redcoll__tcp_ctl_send_ch(p->in, REDCOLL__FR_CANCEL, tag, g);
    } else if (p->out != NULL && p->out->ready) {
      /* Not behind this rank's data: on a connection of its own. */
      redcoll__tcp_connect_to(t, q, 1, 1);
    } else if (p->out != NULL) {
      p->out->send_cancels = 1;
    } else if (p->err_send == REDCOLL_OK) {
      /* A peer this rank never talked to may be waiting for its first
       * message: tell it through a connection made for the CANCEL (one
       * attempt), which is also this rank's data connection to it from
       * now on (nothing is ahead of the CANCEL there).  Not a control
       * connection beside it: the peer takes the first connection from a
       * rank for its data connection, and a later one for control only,
       * so data sent on the later one would be refused (DATA on a wrong
       * connection). */
      if (p->retry_active) { /* a probe, or a connection about to be retried: now */
        uv_timer_stop(&p->retry);
        p->retry_active = 0;
      }
      redcoll__tcp_connect_to(t, q, 1, 0);
    }
  }
  pthread_cond_broadcast(&t->cv); /* the calls that just failed */
  redcoll__tcp_kick(t);
  if (t->ext) {
    /* The embedder's loop writes the CANCELs on its next turns (which
     * also finish the group's posted exchanges); cancel may come from
     * inside its callbacks, where the loop must not run. */
    if (t->nb_init) uv_idle_start(&t->nb_idle, on_nb_idle);
    pthread_mutex_unlock(&t->mu);
    return;
  }
  /* Out within a second at most. */
  uint64_t ms = t->timeout_ms < 1000 ? t->timeout_ms : 1000;
  redcoll__tcp_progress(t, ctl_flushed, NULL, uv_hrtime() + ms * 1000000u);
  pthread_mutex_unlock(&t->mu);
}

/* The communicator of channel group `channel` is destroyed here: what is
 * kept for it goes, later messages on it are dropped, and every peer
 * connected to this rank learns it after the last message it sent there
 * (CLOSE), so that one still waiting for it there is not left waiting. */
static void tcp_close(void *impl, uint64_t channel) {
  redcoll__tcp *t = impl;
  uint64_t g = REDCOLL__TCP_GROUP_OF(channel);
  pthread_mutex_lock(&t->mu);
  redcoll__tcp_group *gr = redcoll__tcp_group_get(t, g, 1);
  if (gr != NULL) gr->closed = 1;
  for (int q = 0; q < t->size; q++) {
    if (q == t->rank) continue;
    redcoll__tcp_peer *p = &t->peers[q];
    redcoll__tcp_conn *in = p->in;
    if (in != NULL && in->sink_um != NULL && REDCOLL__TCP_GROUP_OF(in->fr.chan) == g) {
      /* A message of the group still arriving: the rest is dropped. */
      in->discard = in->sink_um->len - in->sink_um->got;
      in->sink_um = NULL;
      in->have_frame = 0;
    }
    for (redcoll__tcp_pchan **pp = &p->chans; *pp != NULL;) {
      redcoll__tcp_pchan *pc = *pp;
      if (REDCOLL__TCP_GROUP_OF(pc->chan) != g || pc->rx != NULL) {
        pp = &pc->next;
        continue;
      }
      *pp = pc->next;
      while (pc->head != NULL) {
        redcoll__tcp_umsg *m = pc->head;
        pc->head = m->next;
        p->unexpected -= m->len + REDCOLL__TCP_UMSG_COST;
        redcoll__tcp_umsg_free(t, m);
      }
      free(pc);
    }
    /* On this rank's connection (after its data), else on the peer's,
     * which the peer always reads. */
    redcoll__tcp_conn *c = p->out != NULL && p->out->ready ? p->out : p->in;
    if (c != NULL && !c->closing && p->err_send == REDCOLL_OK)
      redcoll__tcp_ctl_send_ch(c, REDCOLL__FR_CLOSE, 0, g);
    if (p->in != NULL) redcoll__tcp_rx_pump(p->in); /* room among the kept again */
  }
  redcoll__tcp_kick(t);
  if (t->nb_init) uv_idle_start(&t->nb_idle, on_nb_idle);
  pthread_cond_broadcast(&t->cv); /* receives it may have completed */
  pthread_mutex_unlock(&t->mu);
}

static void on_handle_closed(uv_handle_t *h) { redcoll__tcp_handle_closed(h->data); }

static void close_handle(redcoll__tcp *t, uv_handle_t *h) {
  h->data = t;
  t->handles++;
  uv_close(h, on_handle_closed);
}

static void close_all(redcoll__tcp *t) {
  for (redcoll__tcp_conn *c = t->conns.next; c != &t->conns; c = c->next)
    redcoll__tcp_conn_close(c);
  for (int q = 0; t->peers != NULL && q < t->size; q++)
    if (t->peers[q].retry_init) close_handle(t, (uv_handle_t *)&t->peers[q].retry);
  if (t->listener_init) close_handle(t, (uv_handle_t *)&t->listener);
  if (t->wake_init) close_handle(t, (uv_handle_t *)&t->wake);
  if (t->resume_init) close_handle(t, (uv_handle_t *)&t->resume);
  if (t->nb_init) {
    close_handle(t, (uv_handle_t *)&t->nb_check);
    close_handle(t, (uv_handle_t *)&t->nb_idle);
    close_handle(t, (uv_handle_t *)&t->nb_timer);
  }
}

/* Posted exchanges the core left behind at destroy: taken back, never
 * done. */
static void drop_posted(redcoll__tcp *t) {
  for (int i = 0; i < 2; i++) {
    redcoll__tcp_pop *o = i == 0 ? t->pend : t->fin;
    while (o != NULL) {
      redcoll__tcp_pop *next = o->next;
      withdraw(t, &o->w, 0);
      free(o->w.s);
      free(o);
      o = next;
    }
  }
  t->pend = t->pend_tail = t->fin = t->fin_tail = NULL;
}

/* What is left of t once its loop has closed its handles. */
static void tcp_free(redcoll__tcp *t) {
  redcoll__tcp_wait_fini(t);
  for (int q = 0; t->peers != NULL && q < t->size; q++) redcoll__tcp_pchan_free_all(t, q);
  redcoll__tcp_spares_free(t);
  redcoll__tcp_groups_free(t);
  free(t->peers);
  free(t);
}

/* The peer that may take connection c for set up, to say BYE to at
 * destroy; -1 if none.  The peer does so once it has identified this rank
 * on it (an outgoing connection: at its HELLO without a secret, at the
 * last step of the authentication with one) or once this rank has (an
 * incoming one; with a secret from the answered HELLO on, the peer taking
 * a BYE at any step of its authentication).  The BYE goes after whatever
 * the set-up wrote. */
static int bye_peer(const redcoll__tcp *t, const redcoll__tcp_conn *c) {
  if (c->closing || c->refused) return -1;
  if (c->peer >= 0 && (c->ready || (c->out && c->hello_sent && !t->auth))) return c->peer;
  /* An incoming one in its authentication (the HELLO answered): the peer
   * takes a BYE at any step, and hears it before the end, not a failed
   * authentication. */
  if (!c->out && c->peer < 0 && t->auth && c->auth_step != 0 && c->claimed >= 0) return c->claimed;
  return -1;
}

/* The end of a destroy on the program's loop: every handle closes, and
 * the last close callback frees t. */
static void ext_close(redcoll__tcp *t) {
  t->lingering = 0;
  close_all(t);
  if (!t->nb_init)
    for (int i = 0; i < 100 && t->handles > 0; i++) uv_run(t->loop, UV_RUN_NOWAIT);
  int later = t->handles > 0;
  t->dying = later;
  t->gone = tcp_free;
  if (t->mu_init) pthread_mutex_unlock(&t->mu);
  if (!later) tcp_free(t);
}

/* What a lingering transport still has to write: the pieces not yet handed
 * to libuv, and a frame's worth for each control frame not yet written. */
static size_t linger_bytes(const redcoll__tcp *t) {
  size_t n = (size_t)t->ctl_pending * REDCOLL__TCP_HDR;
  for (const redcoll__tcp_conn *c = t->conns.next; c != &t->conns; c = c->next)
    if (c->wr_busy != NULL) n += c->wr_busy->rest_len;
  return n;
}

/* The linger's timer, for the time left by the loop's clock: libuv counts
 * from its cached time, which may lag uv_hrtime (a blocking call ran
 * before destroy), so a timer started once could fire before
 * linger_until and leave nothing to wake the loop. */
static void linger_arm(redcoll__tcp *t, uint64_t now) {
  uv_update_time(t->loop);
  uv_timer_start(&t->nb_timer, on_nb_timer, (t->linger_until - now + 999999) / 1000000, 0);
}

/* A transport destroyed on the program's loop while frames were still to
 * go (tcp_destroy), at each turn and at its timer: it closes once they are
 * out, or once REDCOLL__TCP_LINGER_NS pass without a byte of them going. */
static void linger_check(redcoll__tcp *t) {
  pthread_mutex_lock(&t->mu);
  uint64_t now = uv_hrtime();
  size_t left = linger_bytes(t);
  if (left < t->linger_left) {
    t->linger_left = left;
    t->linger_until = now + REDCOLL__TCP_LINGER_NS;
  }
  if (!ctl_busy(t) || now >= t->linger_until) {
    if (ctl_busy(t))
      redcoll__log(1, "tcp rank %d: destroyed with %zu bytes still to write, none written for %llu ms: "
                   "closing", t->rank, left, (unsigned long long)(REDCOLL__TCP_LINGER_NS / 1000000));
    ext_close(t); /* unlocks */
    return;
  }
  linger_arm(t, now);
  pthread_mutex_unlock(&t->mu);
}

static void tcp_destroy(void *impl) {
  redcoll__tcp *t = impl;
  if (t == NULL) return;
  if (!t->loop_init) {
    tcp_free(t);
    return;
  }
  if (t->mu_init) pthread_mutex_lock(&t->mu);
  drop_posted(t);
  /* Say goodbye on every connection the peer may take for set up, so that
   * peers still at work can tell a normal close from a crash and learn of
   * an abort before any of this rank's connections ends.  Connections
   * whose set-up completes from now on say it then (bye_if_leaving). */
  t->leaving = 1;
  for (redcoll__tcp_conn *c = t->conns.next; c != &t->conns; c = c->next) {
    int q = bye_peer(t, c);
    if (q >= 0) redcoll__tcp_bye_if_leaving(c, q);
  }
  if (t->ext) {
    /* The embedder's loop: destroy may come from inside its callbacks,
     * where it must not run.  The goodbyes went out with their write (libuv
     * writes at once on an idle connection), or wait behind a message still
     * written in pieces from its copy (its call ended early): then the
     * connections stay until they are out (linger_check).  The handles
     * close on a later turn of the loop, whose last close callback frees t
     * (t->gone).  A communicator that failed to come up was made outside
     * the loop's callbacks (redcoll_tcp_comm_create): its handles close
     * now. */
    if (t->nb_init && ctl_busy(t)) {
      uint64_t now = uv_hrtime();
      t->lingering = 1;
      t->linger_left = linger_bytes(t);
      t->linger_until = now + REDCOLL__TCP_LINGER_NS;
      linger_arm(t, now);
      uv_ref((uv_handle_t *)&t->nb_timer); /* the loop runs on for it */
      if (t->mu_init) pthread_mutex_unlock(&t->mu);
      return;
    }
    ext_close(t);
    return;
  }
  if (t->mu_init) redcoll__tcp_progress(t, ctl_flushed, NULL, uv_hrtime() + REDCOLL__TCP_LINGER_NS);
  close_all(t);
  uv_run(t->loop, UV_RUN_DEFAULT);
  if (uv_loop_close(t->loop) != 0)
    redcoll__log(1, "tcp rank %d: event loop still busy at close", t->rank);
  if (t->mu_init) pthread_mutex_unlock(&t->mu);
  tcp_free(t);
}

static uint64_t tcp_now(void *impl) {
  (void)impl;
  return uv_hrtime();
}

/* TCP between processes through libuv (loopback or a LAN). */
static int tcp_info(void *impl, redcoll_transport_info *info) {
  const redcoll__tcp *t = impl;
  strcpy(info->name, "tcp");
  info->alpha = 3e-5;
  info->beta = 1e-9;
  info->gamma = 2.5e-10;
  info->ranks_per_cpu = redcoll__tcp_ranks_per_cpu(t);
  /* The sender's kernel copies a piece while the root reduces the one
   * before: linear reduce of 16 MiB at p = 2 on loopback took 6.4-6.6 ms in
   * 1 MiB pieces against 8.6-11.5 whole (docs/performance.md). */
  info->segment = REDCOLL__TCP_ROOT_SEGMENT;
  /* On the embedder's loop one thread, the loop's, makes every call. */
  info->caps = REDCOLL_TRANSPORT_CAP_CHANNELS | REDCOLL_TRANSPORT_CAP_YIELD |
               (t->ext ? 0 : REDCOLL_TRANSPORT_CAP_THREADS);
  return REDCOLL_OK;
}

static const redcoll_transport_ops tcp_ops = {
    .version = REDCOLL_TRANSPORT_VERSION,
    .charge = NULL,
    .abort = NULL, /* the core cancels channel groups instead */
    .destroy = tcp_destroy,
    .info = tcp_info,
    .now = tcp_now,
    .exchange = tcp_exchange,
    .cancel = tcp_cancel,
    .close = tcp_close,
    .post = tcp_post,
    .progress = tcp_progress,
    .fd = tcp_fd,
};

/* ---- construction --------------------------------------------------------- */

static void ignore_sigpipe(void) {
  struct sigaction sa;
  if (sigaction(SIGPIPE, NULL, &sa) == 0 && sa.sa_handler == SIG_DFL) {
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = SIG_IGN;
    sigaction(SIGPIPE, &sa, NULL);
  }
}

REDCOLL_API int redcoll_tcp_comm_create(const redcoll_tcp_config *cfg, redcoll_comm **out) {
  if (out == NULL) return REDCOLL_EINVAL;
  *out = NULL;
  if (cfg == NULL || cfg->size < 1 || cfg->size > REDCOLL_TCP_MAX_SIZE || cfg->rank < 0 ||
      cfg->rank >= cfg->size) {
    redcoll__log(0, "tcp: rank %d of size %d: a rank from 0 to size - 1 and a size from 1 to %d "
                    "are needed", cfg ? cfg->rank : -1, cfg ? cfg->size : -1, REDCOLL_TCP_MAX_SIZE);
    return REDCOLL_EINVAL;
  }
  uint64_t sb;
  int rc = redcoll__env_u64("REDCOLL_TCP_SNDBUF", INT_MAX / 2, &sb);
  int sndbuf = rc == REDCOLL_OK ? (int)sb : -1;
  if (rc != REDCOLL_OK && rc != REDCOLL__ENV_UNSET) {
    redcoll__log(0, "tcp rank %d: REDCOLL_TCP_SNDBUF=%s is not a number of bytes up to %d",
                 cfg->rank, redcoll__env("REDCOLL_TCP_SNDBUF"), INT_MAX / 2);
    return REDCOLL_EINVAL;
  }
  redcoll__tcp *t = calloc(1, sizeof *t);
  if (t == NULL) return REDCOLL_ENOMEM;
  t->conns.next = t->conns.prev = &t->conns;
  t->rank = cfg->rank;
  t->size = cfg->size;
  t->timeout_ms = cfg->wait_timeout_ms ? cfg->wait_timeout_ms : REDCOLL_TCP_DEFAULT_WAIT_TIMEOUT_MS;
  t->unexpected_max = cfg->unexpected_max ? cfg->unexpected_max : REDCOLL__TCP_UNEXPECTED_MAX;
  t->auth_failed_with = -1;
  t->sndbuf = sndbuf;
  t->abort_from = -1;
  t->peers = calloc((size_t)cfg->size, sizeof *t->peers);
  if (t->peers == NULL) {
    rc = REDCOLL_ENOMEM;
    goto fail;
  }
  for (int q = 0; q < cfg->size; q++) t->peers[q].t = t;
  t->ext = cfg->loop != NULL;
  t->loop = t->ext ? cfg->loop : &t->own_loop;
  if (!t->ext && uv_loop_init(&t->own_loop) != 0) {
    rc = REDCOLL_ENOMEM;
    goto fail;
  }
  t->loop_init = 1;
  rc = redcoll__tcp_wait_init(t);
  if (rc != REDCOLL_OK) goto fail;
  ignore_sigpipe();
  t->on_accept = redcoll__tcp_on_accept;
  t->connect_peer = redcoll__tcp_peer_connect;
  t->on_retry = redcoll__tcp_on_retry;
  rc = redcoll__tcp_auth_init(t, cfg->secret);
  if (rc == REDCOLL_OK) rc = redcoll__tcp_bootstrap(t, cfg);
  if (rc != REDCOLL_OK) goto fail;
  if (t->ext) {
    if (t->listener_init) uv_unref((uv_handle_t *)&t->listener);
    if ((rc = ext_init(t)) != REDCOLL_OK) goto fail;
  } else if ((rc = redcoll__tcp_resume_init(t)) != REDCOLL_OK) {
    goto fail;
  }
#ifdef REDCOLL_HAVE_SHM
  /* The ranks of this host through shared memory (src/transport/shm/host.c);
   * not on the program's loop, whose one thread the shared-memory path's
   * helper threads would break. */
  if (!cfg->no_shm && !t->ext) {
    rc = redcoll__shm_host_split(&tcp_ops, t, cfg->rank, cfg->size, t->job, t->timeout_ms,
                                 &t->kernel_ranks_per_cpu, out);
    if (rc == REDCOLL_OK) return rc; /* t belongs to the new transport */
    if (rc != REDCOLL__ENV_UNSET) goto fail;
  }
#endif
  rc = redcoll_comm_create(&tcp_ops, t, cfg->rank, cfg->size, out);
  if (rc != REDCOLL_OK) goto fail; /* t is still ours */
  return rc;

fail:
  tcp_destroy(t);
  return rc;
}

REDCOLL_API int redcoll_tcp_comm_create_from_env(redcoll_comm **out) {
  redcoll_tcp_config cfg;
  if (out != NULL) *out = NULL;
  int rc = redcoll_tcp_config_from_env(&cfg);
  if (rc != REDCOLL_OK) return rc;
  return redcoll_tcp_comm_create(&cfg, out);
}

/* The TCP transport of c, also inside the one with the shared-memory path. */
static redcoll__tcp *tcp_of(const redcoll_comm *c) {
  redcoll__tcp *t = redcoll__comm_transport(c, &tcp_ops);
#ifdef REDCOLL_HAVE_SHM
  if (t == NULL && c != NULL) t = redcoll__shm_host_inner(c, &tcp_ops);
#endif
  return t;
}

REDCOLL_API int redcoll_tcp_comm_set_wait_timeout(redcoll_comm *c, uint64_t timeout_ms) {
  redcoll__tcp *t = tcp_of(c);
  if (t == NULL) return REDCOLL_EINVAL;
  pthread_mutex_lock(&t->mu);
  t->timeout_ms = timeout_ms ? timeout_ms : REDCOLL_TCP_DEFAULT_WAIT_TIMEOUT_MS;
  pthread_mutex_unlock(&t->mu);
  return REDCOLL_OK;
}

REDCOLL_API int redcoll_tcp_comm_poll_timeout(redcoll_comm *c, int *ms) {
  redcoll__tcp *t = redcoll__comm_transport(c, &tcp_ops);
  if (t == NULL || ms == NULL) return REDCOLL_EINVAL;
  pthread_mutex_lock(&t->mu);
  if (t->leader) {
    *ms = 0; /* another thread runs the loop now: it may have news */
  } else if (reap(t) > 0 || t->fin != NULL) {
    *ms = 0; /* an exchange is over (a yield, say): the next progress finishes it */
  } else if (t->resumed) {
    *ms = 0; /* a connection reads again: the next progress runs the loop (tcp_int.h) */
  } else {
    uv_update_time(t->loop);
    *ms = uv_backend_timeout(t->loop);
    uint64_t d = next_deadline(t), now = uv_hrtime();
    if (d != UINT64_MAX) {
      uint64_t left = d > now ? (d - now + 999999) / 1000000 : 0;
      if (left > INT_MAX) left = INT_MAX;
      if (*ms < 0 || (uint64_t)*ms > left) *ms = (int)left;
    }
  }
  pthread_mutex_unlock(&t->mu);
  return REDCOLL_OK;
}

REDCOLL_API int redcoll_tcp_comm_address(const redcoll_comm *c, char *buf, size_t len) {
  const redcoll__tcp *t = tcp_of(c);
  if (t == NULL || buf == NULL || len == 0) return REDCOLL_EINVAL;
  redcoll__tcp_addr_str(&t->self, buf, len);
  return REDCOLL_OK;
}
