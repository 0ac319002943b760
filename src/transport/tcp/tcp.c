/* The TCP transport: blocking send, recv and sendrecv over a libuv loop that
 * this rank owns.  Each call posts its operations and runs the loop one
 * iteration at a time until they are done, the call's timer fires, or a
 * failure breaks the communicator.
 *
 * Every ordered pair of ranks uses its own connection, opened by the sender
 * on its first message: no tie-breaking between ranks that connect to each
 * other at once, and the order of messages is the order of one stream.
 *
 * Sending tries the socket at once and queues the rest (send.c); an
 * incoming connection reads whatever the socket holds into its buffer and
 * takes frames out of it (recv.c).
 *
 * This file holds the vtable (send, receive, exchange, abort, destroy,
 * info, now), the wait that runs the loop, and construction.  The rest of
 * the transport, each file calling only the ones below it:
 *   connect.c    making connections, retrying, accepting
 *   recv.c       reading a connection, frames, matching receives
 *   handshake.c  HELLO's job id, authentication steps, accepting a peer
 *   send.c       DATA frames onto a connection
 *   conn.c       one connection: new, close, control frames, refusal
 *   failure.c    failures of the communicator and of a peer
 *   auth.c       the shared secret's key, nonces and MACs
 *   rendezvous.c the bootstrap: listening, host list, rank 0's rendezvous
 *   config.c     configuration from the environment, job ids
 *   addr.c       addresses and interfaces
 *   wire.c       the frame format (pure, fuzzed) */
#include <sched.h>
#include <signal.h>
#include <stdlib.h>

#include "auth.h"
#include "conn.h"
#include "connect.h"
#include "failure.h"
#include "recv.h"
#include "rendezvous.h"
#include "send.h"

static const redcoll_transport_ops tcp_ops;

/* ---- the blocking wait ------------------------------------------------------ */

static void on_timer(uv_timer_t *tm) {
  redcoll__tcp *t = tm->data;
  t->timed_out = 1;
}

typedef struct wait_set {
  redcoll__tcp_send *s;
  redcoll__tcp_recv *r;
} wait_set;

static int wait_done(const wait_set *w) {
  return (w->s == NULL || w->s->done) && (w->r == NULL || w->r->done);
}

static void run_bounded(redcoll__tcp *t, int (*busy)(redcoll__tcp *), uint64_t ms);
static int only_lost(redcoll__tcp *t) { return t->fatal == REDCOLL_ETRANSPORT; }
/* How long a wait that ends with a lost peer listens for a better reason
 * (an ABORT, a failed authentication). */
#define ABORT_GRACE_MS 1000

/* Runs the loop until everything in w is done.  Returns REDCOLL_OK or the
 * reason it stopped; operations still pending are then withdrawn so that
 * no callback touches the caller's memory after return. */
static int wait_for(redcoll__tcp *t, wait_set *w, const char *what, int peer) {
  int rc = REDCOLL_OK;
  t->timed_out = 0;
  uv_update_time(&t->loop); /* the loop's clock is stale between calls */
  /* The tighter of the wait's timeout and the collective's deadline. */
  uint64_t ms = t->timeout_ms, now = uv_hrtime();
  int by_deadline = 0;
  if (t->coll_deadline_ns != UINT64_MAX) {
    uint64_t left = t->coll_deadline_ns > now ? (t->coll_deadline_ns - now + 999999) / 1000000 : 0;
    if (left <= ms) {
      ms = left;
      by_deadline = 1;
    }
  }
  uv_timer_start(&t->timer, on_timer, ms, 0);
  uint64_t spin = redcoll__spin_ns(), spin_until = spin != 0 ? uv_hrtime() + spin : 0;
  while (!wait_done(w)) {
    if (t->fatal != REDCOLL_OK) {
      rc = t->fatal;
      break;
    }
    if (t->timed_out) {
      char a[64];
      if (by_deadline)
        redcoll__tcp_set_fatal(t, REDCOLL_ETIMEDOUT,
                               "%s rank %d (%s): the collective did not finish within its deadline "
                               "(redcoll_comm_set_deadline)",
                               what, peer, redcoll__tcp_peer_addr(t, peer, a, sizeof a));
      else
        redcoll__tcp_set_fatal(
            t, REDCOLL_ETIMEDOUT, "%s rank %d (%s) did not complete within %llu ms", what, peer,
            redcoll__tcp_peer_addr(t, peer, a, sizeof a), (unsigned long long)t->timeout_ms);
      rc = REDCOLL_ETIMEDOUT;
      break;
    }
    if (spin_until != 0) {
      /* Poll, yielding the CPU between polls, before sleeping in epoll
       * (redcoll__spin_ns). */
      uv_run(&t->loop, UV_RUN_NOWAIT);
      if (wait_done(w)) break;
      if (uv_hrtime() >= spin_until) spin_until = 0;
      else sched_yield();
      continue;
    }
    if (uv_run(&t->loop, UV_RUN_ONCE) == 0 && !wait_done(w)) {
      /* Nothing left that could complete the operation. */
      redcoll__tcp_set_fatal(t, REDCOLL_ETRANSPORT, "%s rank %d: the event loop ran dry", what,
                             peer);
      rc = REDCOLL_ETRANSPORT;
      break;
    }
  }
  uv_timer_stop(&t->timer);
  if (rc == REDCOLL_OK) {
    if (w->r != NULL && w->r->status != REDCOLL_OK) rc = w->r->status;
    if (w->s != NULL && w->s->status != REDCOLL_OK) rc = w->s->status;
    /* An abort or a crash that broke everything is the better reason than
     * the closed connection it caused. */
    if (rc != REDCOLL_OK && t->fatal != REDCOLL_OK) rc = t->fatal;
  }
  /* Withdraw what is still pending. */
  if (w->r != NULL && !w->r->done) {
    redcoll__tcp_peer *p = &t->peers[w->r->src];
    p->rx = NULL;
    if (w->r->matched && p->in != NULL) redcoll__tcp_conn_close(p->in); /* stream out of step now */
    w->r->done = 1;
  }
  if (w->s != NULL && !w->s->done) {
    redcoll__tcp_peer *p = &t->peers[w->s->dst];
    if (p->tx == w->s) p->tx = NULL;
    if (w->s->queued) {
      /* The write still points at the caller's buffer: closing the
       * connection cancels it, and its callback runs in the close pass.
       * The peer sees the connection cut mid-message; if an abort of
       * another rank is why, a connection of its own says so first (a
       * BYE with the abort's reason), or the peer could only report a lost
       * connection. */
      if (p->out != NULL && t->abort_from >= 0 && t->abort_from != t->rank)
        redcoll__tcp_connect_to(t, w->s->dst, REDCOLL__TCP_RELAY_BYE, 1);
      if (p->out != NULL) redcoll__tcp_conn_close(p->out);
      for (int i = 0; i < 1000 && !w->s->done; i++) uv_run(&t->loop, UV_RUN_NOWAIT);
    }
    w->s->done = 1;
  }
  /* A lost connection (a peer gone without its BYE) is often the echo of
   * an abort elsewhere, which explains more: give an ABORT already on its
   * way a moment to arrive.  A peer that said BYE has said whether it was
   * aborted: its close is reported at once. */
  if (rc == REDCOLL_ETRANSPORT && t->fatal == REDCOLL_ETRANSPORT) {
    run_bounded(t, only_lost, ABORT_GRACE_MS);
    rc = t->fatal;
  }
  return rc;
}

static int call_enter(redcoll__tcp *t) {
  if (t->in_call) {
    redcoll__log(0, "tcp rank %d: transport re-entered from a callback", t->rank);
    return REDCOLL_EINVAL;
  }
  if (t->fatal != REDCOLL_OK) return t->fatal;
  t->in_call = 1;
  return REDCOLL_OK;
}

static int post_send(redcoll__tcp *t, redcoll__tcp_send *s) {
  redcoll__tcp_peer *p = &t->peers[s->dst];
  if (p->err_send != REDCOLL_OK) {
    s->done = 1;
    s->status = p->err_send;
    return p->err_send;
  }
  p->tx = s;
  if (p->probe) {
    /* A send connects now: a receive's probe must not hold it up. */
    p->probe = 0;
    if (p->retry_active) uv_timer_stop(&p->retry);
    p->retry_active = 0;
  }
  if (p->out != NULL && p->out->ready) {
    redcoll__tcp_send_queue(t, s);
  } else if (p->out == NULL && !p->retry_active) {
    p->backoff_ms = 2;
    redcoll__tcp_peer_connect(t, s->dst, 0);
  }
  return REDCOLL_OK;
}

static int post_recv(redcoll__tcp *t, redcoll__tcp_recv *r) {
  redcoll__tcp_peer *p = &t->peers[r->src];
  if (p->err_recv != REDCOLL_OK) {
    r->done = 1;
    r->status = p->err_recv;
    return p->err_recv;
  }
  p->rx = r;
  if (p->in != NULL) {
    if (redcoll__tcp_buffered(p->in)) redcoll__tcp_rx_pump(p->in);
    else if (p->in->have_frame) redcoll__tcp_try_match(t, r->src);
    else redcoll__tcp_conn_read_start(p->in);
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

static int tcp_send(void *impl, int dst, uint64_t tag, const void *buf, size_t len) {
  redcoll__tcp *t = impl;
  if (dst < 0 || dst >= t->size || dst == t->rank) return REDCOLL_EINVAL;
  int rc = call_enter(t);
  if (rc != REDCOLL_OK) return rc;
  redcoll__tcp_send s = {.dst = dst, .tag = tag, .buf = buf, .len = len};
  wait_set w = {&s, NULL};
  rc = post_send(t, &s);
  if (rc == REDCOLL_OK) rc = wait_for(t, &w, "sending to", dst);
  t->in_call = 0;
  return rc;
}

static int tcp_recv(void *impl, int src, uint64_t tag, void *buf, size_t len) {
  redcoll__tcp *t = impl;
  if (src < 0 || src >= t->size || src == t->rank) return REDCOLL_EINVAL;
  int rc = call_enter(t);
  if (rc != REDCOLL_OK) return rc;
  redcoll__tcp_recv r = {.src = src, .tag = tag, .buf = buf, .len = len};
  wait_set w = {NULL, &r};
  rc = post_recv(t, &r);
  if (rc == REDCOLL_OK) rc = wait_for(t, &w, "receiving from", src);
  t->in_call = 0;
  return rc;
}

static int tcp_sendrecv(void *impl, int dst, uint64_t stag, const void *sbuf, size_t slen, int src,
                        uint64_t rtag, void *rbuf, size_t rlen) {
  redcoll__tcp *t = impl;
  if (dst < 0 || dst >= t->size || dst == t->rank || src < 0 || src >= t->size || src == t->rank)
    return REDCOLL_EINVAL;
  int rc = call_enter(t);
  if (rc != REDCOLL_OK) return rc;
  redcoll__tcp_recv r = {.src = src, .tag = rtag, .buf = rbuf, .len = rlen};
  redcoll__tcp_send s = {.dst = dst, .tag = stag, .buf = sbuf, .len = slen};
  wait_set w = {&s, &r};
  /* The receive goes first, so the peer's data can flow while we send. */
  rc = post_recv(t, &r);
  if (rc == REDCOLL_OK) rc = post_send(t, &s);
  else s.done = 1;
  if (rc == REDCOLL_OK || !wait_done(&w)) {
    int rc2 = wait_for(t, &w, "exchanging with", dst == src ? dst : rc == REDCOLL_OK ? src : dst);
    if (rc == REDCOLL_OK) rc = rc2;
  }
  t->in_call = 0;
  return rc;
}

/* Runs the loop while cond holds, for at most ms milliseconds. */
static void run_bounded(redcoll__tcp *t, int (*busy)(redcoll__tcp *), uint64_t ms) {
  t->timed_out = 0;
  uv_update_time(&t->loop); /* the loop's clock is stale between calls */
  uv_timer_start(&t->timer, on_timer, ms, 0);
  while (busy(t) && !t->timed_out) {
    if (uv_run(&t->loop, UV_RUN_ONCE) == 0) break;
  }
  uv_timer_stop(&t->timer);
}

/* Control frames are still being written, connections made, or a
 * connection made to carry an ABORT is still authenticating. */
static int ctl_busy(redcoll__tcp *t) {
  if (t->ctl_pending > 0 || t->connects_pending > 0) return 1;
  for (const redcoll__tcp_conn *c = t->conns.next; c != &t->conns; c = c->next)
    if (c->abort_after_hello && !c->ready && !c->closing) return 1;
  return 0;
}

static void tcp_abort(void *impl, int status) {
  redcoll__tcp *t = impl;
  if (t->in_call || t->aborting) return;
  t->aborting = status ? status : REDCOLL_EABORTED;
  uint64_t tag = (uint32_t)(int32_t)status;
  if (t->auth_failed_with >= 0) tag |= (uint64_t)1 << 32 | (uint64_t)t->auth_failed_with << 40;
  t->abort_tag = tag;
  if (t->abort_from < 0) {
    t->abort_from = t->rank;
    t->abort_why = tag;
  }
  redcoll__log(2, "tcp rank %d: aborting (%s)", t->rank, redcoll_status_name(status));
  for (int q = 0; q < t->size; q++) {
    if (q == t->rank) continue;
    redcoll__tcp_peer *p = &t->peers[q];
    int told = 0;
    if (p->out != NULL && p->out->ready) {
      redcoll__tcp_ctl_send(p->out, REDCOLL__FR_ABORT, tag);
      told = 1;
      /* q reads that connection only as far as it has asked for data: an
       * ABORT behind data it has not asked for yet would wait there.  q
       * always reads its own connection to this rank, if it has one;
       * otherwise the ABORT also goes through a connection of its own. */
      if (p->in == NULL) redcoll__tcp_connect_to(t, q, 1, 1);
    } else if (p->out != NULL) {
      p->out->abort_after_hello = 1;
      told = 1;
    }
    if (p->in != NULL) {
      redcoll__tcp_ctl_send(p->in, REDCOLL__FR_ABORT, tag);
      told = 1;
    }
    /* A peer we never talked to may be waiting for our first message: tell
     * it through a connection of its own (one attempt, no retry). */
    if (!told && p->err_send == REDCOLL_OK) redcoll__tcp_peer_connect(t, q, 1);
  }
  uint64_t ms = t->timeout_ms < 1000 ? t->timeout_ms : 1000;
  run_bounded(t, ctl_busy, ms);
  /* This rank has given up: its own later calls fail as well. */
  if (t->fatal == REDCOLL_OK) t->fatal = REDCOLL_EABORTED;
}

static void close_all(redcoll__tcp *t) {
  for (redcoll__tcp_conn *c = t->conns.next; c != &t->conns; c = c->next)
    redcoll__tcp_conn_close(c);
  for (int q = 0; t->peers != NULL && q < t->size; q++)
    if (t->peers[q].retry_init) uv_close((uv_handle_t *)&t->peers[q].retry, NULL);
  if (t->listener_init) uv_close((uv_handle_t *)&t->listener, NULL);
  if (t->timer_init) uv_close((uv_handle_t *)&t->timer, NULL);
}

static void tcp_destroy(void *impl) {
  redcoll__tcp *t = impl;
  if (t == NULL) return;
  if (t->loop_init) {
    /* Say goodbye on every live connection so that peers still at work
     * can tell a normal close from a crash. */
    if (!t->in_call) {
      for (redcoll__tcp_conn *c = t->conns.next; c != &t->conns; c = c->next) {
        if (!c->ready || c->closing || c->peer < 0) continue;
        /* The tag says whether this rank's data connection to that peer
         * is open (the peer should read it to its end before giving up on
         * it), and whether and why this rank was aborted. */
        const redcoll__tcp_conn *o = t->peers[c->peer].out;
        redcoll__tcp_ctl_send(c, REDCOLL__FR_BYE, redcoll__tcp_bye_tag(t, o != NULL && !o->closing));
      }
      if (t->timer_init) run_bounded(t, ctl_busy, 500);
    }
    close_all(t);
    uv_run(&t->loop, UV_RUN_DEFAULT);
    if (uv_loop_close(&t->loop) != 0)
      redcoll__log(1, "tcp rank %d: event loop still busy at close", t->rank);
  }
  free(t->peers);
  free(t);
}

/* The vtable's one transfer: the collective's deadline for the waits of
 * this call, then a send, a receive or both. */
static int tcp_exchange(void *impl, const redcoll_transport_ctx *ctx,
                        const redcoll_transport_msg *s, const redcoll_transport_msg *v) {
  redcoll__tcp *t = impl;
  t->coll_deadline_ns = ctx->deadline_ns;
  if (s != NULL && v != NULL)
    return tcp_sendrecv(t, s->peer, s->tag, s->buf, s->len, v->peer, v->tag, v->buf, v->len);
  if (s != NULL) return tcp_send(t, s->peer, s->tag, s->buf, s->len);
  if (v != NULL) return tcp_recv(t, v->peer, v->tag, v->buf, v->len);
  return REDCOLL_EINVAL;
}

static uint64_t tcp_now(void *impl) {
  (void)impl;
  return uv_hrtime();
}

static double ranks_per_cpu(const redcoll__tcp *t);

/* TCP between processes through libuv (loopback or a LAN). */
static int tcp_info(void *impl, redcoll_transport_info *info) {
  const redcoll__tcp *t = impl;
  strcpy(info->name, "tcp");
  info->alpha = 3e-5;
  info->beta = 1e-9;
  info->gamma = 2.5e-10;
  info->ranks_per_cpu = ranks_per_cpu(t);
  return REDCOLL_OK;
}

static const redcoll_transport_ops tcp_ops = {
    .version = 3,
    .charge = NULL,
    .abort = tcp_abort,
    .destroy = tcp_destroy,
    .info = tcp_info,
    .now = tcp_now,
    .exchange = tcp_exchange,
};

/* ---- construction --------------------------------------------------------- */

/* p / the CPU count of the rendezvous table: only what rank 0 sent
 * everyone, so the same on every rank.  With a host list, or ranks on
 * several hosts: 1 (a rank does not know the others' CPUs;
 * REDCOLL_RANKS_PER_CPU says otherwise). */
static double ranks_per_cpu(const redcoll__tcp *t) {
  return t->table_cpus > 0 ? (double)t->size / (double)t->table_cpus : 1;
}

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
  int rc;
  redcoll__tcp *t = calloc(1, sizeof *t);
  if (t == NULL) return REDCOLL_ENOMEM;
  t->conns.next = t->conns.prev = &t->conns;
  t->rank = cfg->rank;
  t->size = cfg->size;
  t->timeout_ms = cfg->wait_timeout_ms ? cfg->wait_timeout_ms : REDCOLL_TCP_DEFAULT_WAIT_TIMEOUT_MS;
  t->coll_deadline_ns = UINT64_MAX;
  t->auth_failed_with = -1;
  t->abort_from = -1;
  t->peers = calloc((size_t)cfg->size, sizeof *t->peers);
  if (t->peers == NULL) {
    rc = REDCOLL_ENOMEM;
    goto fail;
  }
  if (uv_loop_init(&t->loop) != 0) {
    rc = REDCOLL_ENOMEM;
    goto fail;
  }
  t->loop_init = 1;
  t->loop.data = t;
  uv_timer_init(&t->loop, &t->timer);
  t->timer.data = t;
  t->timer_init = 1;
  ignore_sigpipe();
  t->on_accept = redcoll__tcp_on_accept;
  t->connect_peer = redcoll__tcp_peer_connect;
  t->on_retry = redcoll__tcp_on_retry;
  rc = redcoll__tcp_auth_init(t, cfg->secret);
  if (rc == REDCOLL_OK) rc = redcoll__tcp_bootstrap(t, cfg);
  if (rc != REDCOLL_OK) goto fail;
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

REDCOLL_API int redcoll_tcp_comm_set_wait_timeout(redcoll_comm *c, uint64_t timeout_ms) {
  redcoll__tcp *t = redcoll__comm_transport(c, &tcp_ops);
  if (t == NULL) return REDCOLL_EINVAL;
  t->timeout_ms = timeout_ms ? timeout_ms : REDCOLL_TCP_DEFAULT_WAIT_TIMEOUT_MS;
  return REDCOLL_OK;
}

REDCOLL_API int redcoll_tcp_comm_address(const redcoll_comm *c, char *buf, size_t len) {
  const redcoll__tcp *t = redcoll__comm_transport(c, &tcp_ops);
  if (t == NULL || buf == NULL || len == 0) return REDCOLL_EINVAL;
  redcoll__tcp_addr_str(&t->self, buf, len);
  return REDCOLL_OK;
}
