/* Making connections: this rank's connection to a peer (its HELLO, with
 * the first step of the authentication), the retries while the peer is not
 * listening yet, and accepting a peer's connection. */
#include "auth.h"
#include "conn.h"
#include "connect.h"

#include <string.h>

#include "addr.h"
#include "failure.h"
#include "handshake.h"
#include "recv.h"
#include "send.h"

static void on_hello_written(uv_write_t *req, int status) {
  redcoll__tcp_conn *c = req->data;
  (void)status; /* a failure shows up on the read side as well */
  c->t->ctl_pending--;
}

void redcoll__tcp_on_retry(uv_timer_t *tm) {
  redcoll__tcp_peer *p = tm->data;
  redcoll__tcp *t = p->t; /* not the loop's data: the loop may be the program's */
  p->retry_active = 0;
  int q = (int)(p - t->peers);
  int probe = p->probe && redcoll__tcp_peer_waited(t, q) && p->in == NULL;
  if (!probe) p->probe = 0;
  if (p->out == NULL && p->err_send == REDCOLL_OK && (p->txq != NULL || probe)) {
    if (probe && p->gone_after_ns == 0) p->gone_after_ns = uv_hrtime() + REDCOLL__TCP_GONE_NS;
    redcoll__tcp_peer_connect(t, q, 0);
  }
}

/* The send buffer of a new connection: REDCOLL_TCP_SNDBUF's bytes if set
 * (t->sndbuf >= 0; 0 leaves every one to the kernel), else
 * REDCOLL__TCP_LOCAL_SNDBUF for a peer on this host (the same address at
 * both ends, or loopback) and the kernel's autotuning for the others. */
static void set_sndbuf(const redcoll__tcp *t, uv_tcp_t *h) {
  int v = t->sndbuf;
  if (v < 0) {
    redcoll__tcp_addr a, b;
    int la = (int)sizeof a, lb = (int)sizeof b;
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    if (uv_tcp_getsockname(h, (struct sockaddr *)&a, &la) != 0 ||
        uv_tcp_getpeername(h, (struct sockaddr *)&b, &lb) != 0 ||
        !redcoll__tcp_addr_same_host(&a, &b))
      return;
    v = REDCOLL__TCP_LOCAL_SNDBUF;
  }
  if (v > 0) uv_send_buffer_size((uv_handle_t *)h, &v);
}

static void on_connect(uv_connect_t *req, int status) {
  redcoll__tcp_conn *c = req->data;
  redcoll__tcp *t = c->t;
  int q = c->peer;
  redcoll__tcp_peer *p = &t->peers[q];
  t->connects_pending--;
  if (c->closing) return;
  char a[64];
  if (status != 0) {
    /* A peer that said goodbye is gone for good; any other may not be
     * listening yet. */
    int retryable = !p->said_bye && (status == UV_ECONNREFUSED || status == UV_ETIMEDOUT ||
                                     status == UV_ECONNRESET || status == UV_EAGAIN ||
                                     status == UV_ECONNABORTED);
    /* A peer that closed a connection before answering it and has let
     * nobody listen on its port since is gone. */
    int gone = retryable && p->gone_after_ns != 0 && uv_hrtime() >= p->gone_after_ns;
    int for_abort = c->abort_after_hello;
    redcoll__tcp_conn_close(c);
    if (for_abort) return;
    if (gone && t->auth && !p->probe) {
      /* As a close during the authentication: the usual reason is that
       * the peer gave up on a failed authentication of its own. */
      redcoll__tcp_auth_fail(t, q, "closed the connection during the authentication and is gone (has "
                                   "it the same secret?)");
      return;
    }
    if (gone) {
      /* A probe: it never connected to this rank, which waits for it. */
      redcoll__tcp_peer_lost(t, q, REDCOLL_ETRANSPORT, p->probe ? DIR_BOTH : DIR_SEND,
                             "rank %d (%s) %s, and nobody has listened there for %llu ms since: it "
                             "is gone (%s)",
                             q, redcoll__tcp_peer_addr(t, q, a, sizeof a),
                             p->probe ? "never connected to this rank, which waits for a message "
                                        "from it"
                                      : "closed this rank's connection before answering it",
                             REDCOLL__TCP_GONE_NS / 1000000ull, uv_strerror(status));
      return;
    }
    if (!retryable) {
      redcoll__tcp_peer_lost(t, q, REDCOLL_ETRANSPORT, DIR_SEND,
                             "cannot connect to rank %d at %s: %s", q,
                             redcoll__tcp_peer_addr(t, q, a, sizeof a), uv_strerror(status));
      return;
    }
    /* Not listening yet: try again a little later, backing off up to a
     * quarter second.  The call's timer bounds the whole wait. */
    redcoll__log(3, "tcp rank %d: rank %d at %s: %s, retrying in %u ms", t->rank, q,
                 redcoll__tcp_peer_addr(t, q, a, sizeof a), uv_strerror(status), p->backoff_ms);
    redcoll__tcp_retry_later(t, q);
    return;
  }
  uv_tcp_nodelay(&c->h, 1);
  set_sndbuf(t, &c->h);
  redcoll__tcp_encode(c->hello, REDCOLL__FR_HELLO, (uint64_t)t->rank | (uint64_t)t->size << 32,
                      REDCOLL__TCP_HELLO_LEN);
  redcoll__tcp_put_le(c->hello + REDCOLL__TCP_HDR, t->job, 8);
  redcoll__tcp_put_le(c->hello + REDCOLL__TCP_HDR + 8, t->number, 8);
  size_t hn = REDCOLL__TCP_HDR + REDCOLL__TCP_HELLO_LEN;
  /* Ready once the peer has answered the HELLO with one of this job and
   * communicator (redcoll__tcp_hello_arrived), and with a secret once it
   * has answered the challenge too (redcoll__tcp_auth_arrived): until then
   * nothing but the set-up goes out, so that a connection that reached
   * another communicator on the peer's port can be made again. */
  if (t->auth) {
    redcoll__tcp_auth_nonce(c->nonce_mine);
    redcoll__tcp_encode(c->hello + hn, REDCOLL__FR_AUTH, REDCOLL__AUTH_C1, REDCOLL__AUTH_NONCE);
    memcpy(c->hello + hn + REDCOLL__TCP_HDR, c->nonce_mine, REDCOLL__AUTH_NONCE);
    hn += REDCOLL__TCP_HDR + REDCOLL__AUTH_NONCE;
    c->auth_step = REDCOLL__AUTH_S2;
  }
  uv_buf_t b = uv_buf_init((char *)c->hello, (unsigned)hn);
  c->hello_req.data = c;
  int r = uv_write(&c->hello_req, (uv_stream_t *)&c->h, &b, 1, on_hello_written);
  if (r != 0) {
    redcoll__tcp_conn_lost(c, r);
    return;
  }
  t->ctl_pending++;
  c->hello_sent = 1;
  /* Without a secret the peer takes it for set up at the HELLO. */
  if (!t->auth) redcoll__tcp_bye_if_leaving(c, q);
  /* Reading an outgoing connection only ever yields the answer to the
   * HELLO, the authentication, BYE, CANCEL, CLOSE or the end. */
  redcoll__tcp_conn_read_start(c);
}

/* Connects to rank q: the data connection (for_abort 0, 1 when it is made
 * only to carry this rank's CANCELs), or (control 1) an extra connection for
 * the CANCELs alone, which later messages do not wait for. */
void redcoll__tcp_connect_to(redcoll__tcp *t, int q, int for_abort, int control) {
  redcoll__tcp_peer *p = &t->peers[q];
  char a[64];
  redcoll__tcp_conn *c = redcoll__tcp_conn_new(t, q, 1);
  if (c == NULL) {
    if (!for_abort)
      redcoll__tcp_set_fatal(t, REDCOLL_ENOMEM, "no memory for a connection to rank %d", q);
    return;
  }
  c->abort_after_hello = for_abort;
  t->on_retry = redcoll__tcp_on_retry;
  c->creq.data = c;
  int r = uv_tcp_connect(&c->creq, &c->h, (const struct sockaddr *)&p->addr, on_connect);
  if (r != 0) {
    redcoll__tcp_conn_close(c);
    if (!for_abort)
      redcoll__tcp_peer_lost(t, q, REDCOLL_ETRANSPORT, DIR_SEND,
                             "cannot connect to rank %d at %s: %s", q,
                             redcoll__tcp_peer_addr(t, q, a, sizeof a), uv_strerror(r));
    return;
  }
  t->connects_pending++;
  if (!control) p->out = c;
}

void redcoll__tcp_peer_connect(redcoll__tcp *t, int q, int for_abort) {
  redcoll__tcp_connect_to(t, q, for_abort, 0);
}

void redcoll__tcp_on_accept(uv_stream_t *server, int status) {
  redcoll__tcp *t = server->data;
  if (status != 0) {
    redcoll__log(1, "tcp rank %d: accept failed: %s", t->rank, uv_strerror(status));
    return;
  }
  redcoll__tcp_conn *c = redcoll__tcp_conn_new(t, -1, 0);
  if (c == NULL) return;
  if (uv_accept(server, (uv_stream_t *)&c->h) != 0) {
    redcoll__tcp_conn_close(c);
    return;
  }
  uv_tcp_nodelay(&c->h, 1);
  set_sndbuf(t, &c->h);
  redcoll__tcp_conn_read_start(c);
}
