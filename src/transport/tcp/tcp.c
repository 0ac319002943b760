/* The TCP transport: blocking send, recv and sendrecv over a libuv loop that
 * this rank owns.  Each call posts its operations and runs the loop one
 * iteration at a time until they are done, the call's timer fires, or a
 * failure breaks the communicator.
 *
 * Every ordered pair of ranks uses its own connection, opened by the sender
 * on its first message: no tie-breaking between ranks that connect to each
 * other at once, and the order of messages is the order of one stream.
 *
 * Sending tries the socket at once (uv_try_write): a message the kernel
 * takes whole is done without a trip through the loop; the rest of a longer
 * one is queued with uv_write.  The receiver reads whatever the socket holds
 * into the connection's buffer (REDCOLL__TCP_RBUF bytes), one read for
 * header and payload of a small message and for several messages that came
 * together, checks each header against the posted receive and copies the
 * payload out; the rest of a payload longer than that is read straight into
 * the caller's buffer.  Frames nobody has asked for yet wait in the buffer;
 * once it is full the connection stops reading (the kernel's buffers and
 * TCP flow control hold the sender back).  Before a connection is
 * identified it reads exactly the bytes of each set-up frame, so that
 * nothing of the messages after it lands in the wrong place. */
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "tcp_int.h"

/* ---- frame header ------------------------------------------------------- */

#ifdef REDCOLL_HAVE_SODIUM
#include <sodium.h>
#endif

/* ---- authentication ------------------------------------------------------- */

int redcoll__tcp_auth_init(redcoll__tcp *t, const char *secret) {
  t->auth = 0;
  if (secret == NULL || *secret == '\0') return REDCOLL_OK;
#ifdef REDCOLL_HAVE_SODIUM
  if (sodium_init() < 0) {
    redcoll__log(0, "tcp rank %d: libsodium failed to initialize", t->rank);
    return REDCOLL_ENOTSUP;
  }
  crypto_hash_sha256(t->key, (const unsigned char *)secret, strlen(secret));
  t->auth = 1;
  return REDCOLL_OK;
#else
  redcoll__log(0,
               "tcp rank %d: a secret (REDCOLL_SECRET) is set but this build of redcoll has no "
               "crypto library (libsodium) to authenticate with; rebuild with libsodium-dev",
               t->rank);
  return REDCOLL_ENOTSUP;
#endif
}

#ifdef REDCOLL_HAVE_SODIUM
/* The MAC of role 'C' or 'S' over both nonces, both ranks and the size. */
static void auth_mac(const redcoll__tcp *t, unsigned char *out, char role, const unsigned char *nc,
                     const unsigned char *ns, int client, int server) {
  unsigned char m[16 + 1 + 2 * REDCOLL__AUTH_NONCE + 12];
  size_t n = 0;
  memcpy(m, "redcoll-auth-v1", 16);
  n = 16;
  m[n++] = (unsigned char)role;
  memcpy(m + n, nc, REDCOLL__AUTH_NONCE);
  n += REDCOLL__AUTH_NONCE;
  memcpy(m + n, ns, REDCOLL__AUTH_NONCE);
  n += REDCOLL__AUTH_NONCE;
  redcoll__tcp_put_le(m + n, (uint64_t)client, 4);
  redcoll__tcp_put_le(m + n + 4, (uint64_t)server, 4);
  redcoll__tcp_put_le(m + n + 8, (uint64_t)t->size, 4);
  n += 12;
  crypto_auth_hmacsha256_state st;
  crypto_auth_hmacsha256_init(&st, t->key, sizeof t->key);
  crypto_auth_hmacsha256_update(&st, m, n);
  crypto_auth_hmacsha256_final(&st, out);
}
static void auth_nonce(unsigned char *out) { randombytes_buf(out, REDCOLL__AUTH_NONCE); }
static int auth_equal(const unsigned char *a, const unsigned char *b) {
  return crypto_verify_32(a, b) == 0;
}
#else
static void auth_mac(const redcoll__tcp *t, unsigned char *out, char role, const unsigned char *nc,
                     const unsigned char *ns, int client, int server) {
  (void)t, (void)role, (void)nc, (void)ns, (void)client, (void)server;
  memset(out, 0, REDCOLL__AUTH_MAC);
}
static void auth_nonce(unsigned char *out) { memset(out, 0, REDCOLL__AUTH_NONCE); }
static int auth_equal(const unsigned char *a, const unsigned char *b) {
  (void)a, (void)b;
  return 0; /* never: t->auth is never set without the library */
}
#endif

/* ---- helpers -------------------------------------------------------------- */

static const redcoll_transport_ops tcp_ops;

static const char *peer_addr(redcoll__tcp *t, int q, char *buf, size_t len) {
  redcoll__tcp_addr_str(&t->peers[q].addr, buf, len);
  return buf;
}

/* Breaks every call of this rank with status; the first reason is logged. */
static void set_fatal(redcoll__tcp *t, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void set_fatal(redcoll__tcp *t, int status, const char *fmt, ...) {
  /* The first reason stays, but a peer's abort explains a closed
   * connection better than the closing does: it takes precedence. */
  if (t->fatal != REDCOLL_OK && !(status == REDCOLL_EABORTED && t->fatal == REDCOLL_ETRANSPORT))
    return;
  t->fatal = status;
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  char self[64];
  redcoll__tcp_addr_str(&t->self, self, sizeof self);
  redcoll__log(0, "tcp rank %d (%s): %s: %s", t->rank, self, msg, redcoll_strerror(status));
}

/* Makes one direction (or both) of peer q unusable: pending and later
 * operations that need it fail. */
enum { DIR_SEND = 1, DIR_RECV = 2, DIR_BOTH = 3 };
static void peer_fail(redcoll__tcp *t, int q, int status, int dirs) {
  redcoll__tcp_peer *p = &t->peers[q];
  if ((dirs & DIR_SEND) && p->err_send == REDCOLL_OK) p->err_send = status;
  if ((dirs & DIR_RECV) && p->err_recv == REDCOLL_OK) p->err_recv = status;
  if ((dirs & DIR_SEND) && p->tx != NULL && !p->tx->queued) {
    p->tx->done = 1;
    p->tx->status = status;
    p->tx = NULL;
  }
  if ((dirs & DIR_RECV) && p->rx != NULL) {
    p->rx->done = 1;
    p->rx->status = status;
    p->rx = NULL;
  }
}

static void on_conn_closed(uv_handle_t *h) {
  redcoll__tcp_conn *c = h->data;
  c->prev->next = c->next;
  c->next->prev = c->prev;
  free(c->rb);
  free(c);
}

static void conn_close(redcoll__tcp_conn *c) {
  if (c->closing) return;
  c->closing = 1;
  if (c->peer >= 0) {
    redcoll__tcp_peer *p = &c->t->peers[c->peer];
    if (p->out == c) p->out = NULL;
    if (p->in == c) p->in = NULL;
  }
  uv_close((uv_handle_t *)&c->h, on_conn_closed);
}

static redcoll__tcp_conn *conn_new(redcoll__tcp *t, int peer, int out) {
  redcoll__tcp_conn *c = calloc(1, sizeof *c);
  if (c == NULL) return NULL;
  if (uv_tcp_init(&t->loop, &c->h) != 0) {
    free(c);
    return NULL;
  }
  c->t = t;
  c->peer = peer;
  c->claimed = -1;
  c->out = out;
  c->h.data = c;
  c->next = &t->conns;
  c->prev = t->conns.prev;
  t->conns.prev->next = c;
  t->conns.prev = c;
  return c;
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *b);
static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *b);

static void conn_read_start(redcoll__tcp_conn *c) {
  if (c->reading || c->closing) return;
  int r = uv_read_start((uv_stream_t *)&c->h, on_alloc, on_read);
  if (r != 0) {
    set_fatal(c->t, REDCOLL_ETRANSPORT, "cannot read from rank %d: %s", c->peer, uv_strerror(r));
    return;
  }
  c->reading = 1;
}

static void conn_read_stop(redcoll__tcp_conn *c) {
  if (!c->reading) return;
  uv_read_stop((uv_stream_t *)&c->h);
  c->reading = 0;
}

/* ---- control frames ------------------------------------------------------ */

typedef struct ctl_write {
  uv_write_t req;
  redcoll__tcp *t;
  redcoll__tcp_conn *close_after; /* closed once the frame is out */
  unsigned char hdr[REDCOLL__TCP_HDR + REDCOLL__AUTH_NONCE + REDCOLL__AUTH_MAC];
} ctl_write;

static void on_ctl_written(uv_write_t *req, int status) {
  ctl_write *w = (ctl_write *)req;
  (void)status;
  w->t->ctl_pending--;
  if (w->close_after != NULL) conn_close(w->close_after);
  free(w);
}

static void on_hello_written(uv_write_t *req, int status) {
  redcoll__tcp_conn *c = req->data;
  (void)status; /* a failure shows up on the read side as well */
  c->t->ctl_pending--;
}

/* Writes a frame (n bytes of frame, header and payload, at most
 * sizeof hdr); with close, closes c once it is out. */
static void ctl_write_bytes(redcoll__tcp_conn *c, const unsigned char *frame, size_t n, int close) {
  if (c->closing) return;
  ctl_write *w = malloc(sizeof *w);
  if (w == NULL || n > sizeof w->hdr) { /* best effort: the peer will see the close instead */
    free(w);
    if (close) conn_close(c);
    return;
  }
  w->t = c->t;
  w->close_after = close ? c : NULL;
  memcpy(w->hdr, frame, n);
  uv_buf_t b = uv_buf_init((char *)w->hdr, (unsigned)n);
  if (uv_write(&w->req, (uv_stream_t *)&c->h, &b, 1, on_ctl_written) != 0) {
    free(w);
    if (close) conn_close(c);
    return;
  }
  c->t->ctl_pending++;
}

static void ctl_write_frame(redcoll__tcp_conn *c, unsigned type, uint64_t tag, int close) {
  unsigned char h[REDCOLL__TCP_HDR];
  redcoll__tcp_encode(h, type, tag, 0);
  ctl_write_bytes(c, h, sizeof h, close);
}

static void ctl_send(redcoll__tcp_conn *c, unsigned type, uint64_t tag) {
  ctl_write_frame(c, type, tag, 0);
}

/* Refuses a connection in its set-up: tells the other side (an AUTH frame
 * of step 0, so that a rank of this job can say why) and closes it. */
static void conn_refuse(redcoll__tcp_conn *c) {
  if (c->closing || c->refused) return;
  c->refused = 1;
  conn_read_stop(c);
  if (c->peer >= 0 && !c->out) {
    redcoll__tcp_peer *p = &c->t->peers[c->peer];
    if (p->in == c) p->in = NULL;
    c->peer = -1;
  }
  ctl_write_frame(c, REDCOLL__FR_AUTH, REDCOLL__AUTH_REFUSED, 1);
}

/* ---- receiving ------------------------------------------------------------ */

/* An identified incoming connection: it reads through its buffer. */
static int buffered(const redcoll__tcp_conn *c) { return !c->out && c->ready && c->peer >= 0; }

/* Completes the receive r of the frame on c. */
static void recv_complete(redcoll__tcp *t, redcoll__tcp_conn *c, redcoll__tcp_recv *r) {
  c->have_frame = 0;
  r->done = 1;
  r->status = REDCOLL_OK;
  t->peers[c->peer].rx = NULL;
}

/* Moves what c's buffer holds of the matched frame's payload into r. */
static void recv_from_buffer(redcoll__tcp *t, redcoll__tcp_conn *c, redcoll__tcp_recv *r) {
  size_t avail = c->rhi - c->rlo, need = r->len - r->got;
  size_t n = avail < need ? avail : need;
  if (n > 0) {
    memcpy((char *)r->buf + r->got, c->rb + c->rlo, n);
    c->rlo += n;
    r->got += n;
  }
  if (r->got == r->len) recv_complete(t, c, r);
}

/* A DATA header is waiting on peer q's connection, or a receive was just
 * posted: match them.  Unmatched, a buffered connection reads on into its
 * buffer; one that is not stops reading until they can be matched. */
static void try_match(redcoll__tcp *t, int q) {
  redcoll__tcp_peer *p = &t->peers[q];
  redcoll__tcp_conn *c = p->in;
  if (c == NULL || !c->have_frame) return;
  redcoll__tcp_recv *r = p->rx;
  if (r == NULL) {
    if (!buffered(c)) conn_read_stop(c);
    return;
  }
  if (r->matched) return;
  if (c->fr.tag != r->tag || c->fr.len != r->len) {
    redcoll__log(0,
                 "tcp rank %d: message from rank %d has tag %#llx and %llu bytes, "
                 "the receive expects tag %#llx and %llu bytes",
                 t->rank, q, (unsigned long long)c->fr.tag, (unsigned long long)c->fr.len,
                 (unsigned long long)r->tag, (unsigned long long)r->len);
    conn_read_stop(c);
    r->done = 1;
    r->status = REDCOLL_EMISMATCH;
    p->rx = NULL;
    /* The stream from q is out of step from here on. */
    set_fatal(t, REDCOLL_EMISMATCH, "receive from rank %d does not match", q);
    return;
  }
  r->matched = 1;
  if (buffered(c)) {
    recv_from_buffer(t, c, r);
    return;
  }
  if (r->len == 0) recv_complete(t, c, r);
  conn_read_start(c);
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *b) {
  redcoll__tcp_conn *c = h->data;
  (void)suggested;
  c->into_rb = 0;
  if (buffered(c)) {
    redcoll__tcp_recv *r = c->t->peers[c->peer].rx;
    if (!(c->have_frame && r != NULL && r->matched)) {
      /* Into the buffer (a matched payload goes straight to the caller). */
      b->base = NULL;
      b->len = 0;
      if (c->rb == NULL && (c->rb = malloc(REDCOLL__TCP_RBUF)) == NULL) return;
      if (c->rlo > 0) {
        memmove(c->rb, c->rb + c->rlo, c->rhi - c->rlo);
        c->rhi -= c->rlo;
        c->rlo = 0;
      }
      if (c->rhi == REDCOLL__TCP_RBUF) return; /* full: stop reading */
      b->base = (char *)c->rb + c->rhi;
      b->len = REDCOLL__TCP_RBUF - c->rhi;
      c->into_rb = 1;
      return;
    }
  }
  if (c->aneed > 0) { /* an authentication payload: exactly its bytes */
    b->base = (char *)c->abuf + c->agot;
    b->len = c->aneed - c->agot;
    return;
  }
  if (!c->have_frame) {
    /* Exactly the rest of the header: never read past it into a payload
     * whose buffer is not known yet. */
    b->base = (char *)c->hdr + c->hdr_got;
    b->len = REDCOLL__TCP_HDR - c->hdr_got;
    return;
  }
  redcoll__tcp_recv *r = c->t->peers[c->peer].rx;
  if (r == NULL || !r->matched) {
    b->base = NULL;
    b->len = 0;
    return;
  }
  size_t left = r->len - r->got;
  if (left > ((size_t)1 << 30)) left = (size_t)1 << 30;
  b->base = (char *)r->buf + r->got;
  b->len = left;
}

/* The set-up of this rank's connection to q failed: sending to q is over
 * and the communicator is broken, with the reason `why`. */
static void auth_fail(redcoll__tcp *t, int q, const char *why) {
  char a[64];
  if (t->auth_failed_with < 0) t->auth_failed_with = q;
  peer_fail(t, q, REDCOLL_EPROTO, DIR_SEND);
  set_fatal(t, REDCOLL_EPROTO, "rank %d (%s) %s", q, peer_addr(t, q, a, sizeof a), why);
}

/* Peer q destroyed its communicator.  If it has no connection to this
 * rank that may still carry data (has_out 0) and none is open here,
 * nothing can ever arrive from it: receives from it fail now, not at the
 * timeout. */
static void peer_said_bye(redcoll__tcp *t, int q, int has_out) {
  redcoll__tcp_peer *p = &t->peers[q];
  p->said_bye = 1;
  if (!has_out && p->in == NULL) {
    if (p->rx != NULL)
      redcoll__log(0, "tcp rank %d: rank %d closed its communicator while this rank waits for "
                      "a message from it", t->rank, q);
    peer_fail(t, q, REDCOLL_ETRANSPORT, DIR_RECV);
  }
}

/* The connection is gone (EOF or error). */
static void conn_lost(redcoll__tcp_conn *c, int uverr) {
  redcoll__tcp *t = c->t;
  int q = c->peer;
  char a[64];
  if (q < 0 || (!c->ready && c->out)) {
    if (c->out && q >= 0 && c->auth_step != 0 && !c->abort_after_hello && !c->refused) {
      conn_close(c);
      auth_fail(t, q, "closed the connection during authentication (has it the same secret?)");
      return;
    }
    if (!c->out && c->auth_step != 0 && !c->refused)
      redcoll__log(1, "tcp rank %d: a connection claiming to be rank %d closed during "
                      "authentication", t->rank, c->claimed);
    conn_close(c);
    return;
  }
  if (c->ctl_only) { /* carried no data: nothing depends on it */
    conn_close(c);
    return;
  }
  if (c->bye && (uverr == UV_EOF || uverr == UV_ECONNRESET)) {
    /* Closed normally: only what uses this connection fails from now on.
     * (The connection of the other direction may still hold messages.) */
    redcoll__log(3, "tcp rank %d: rank %d closed its %s connection", t->rank, q,
                 c->out ? "incoming" : "outgoing");
    conn_close(c);
    peer_fail(t, q, REDCOLL_ETRANSPORT, c->out ? DIR_SEND : DIR_RECV);
    return;
  }
  conn_close(c);
  peer_fail(t, q, REDCOLL_ETRANSPORT, DIR_BOTH);
  set_fatal(t, REDCOLL_ETRANSPORT, "lost the connection %s rank %d (%s): %s", c->out ? "to" : "from",
            q, peer_addr(t, q, a, sizeof a), uv_strerror(uverr));
}

static void conn_proto(redcoll__tcp_conn *c, const char *what) {
  redcoll__tcp *t = c->t;
  if (c->peer < 0) {
    /* An unidentified client: not one of ours.  Drop it quietly. */
    redcoll__log(1, "tcp rank %d: dropped a connection: %s", t->rank, what);
    conn_close(c);
    return;
  }
  int q = c->peer;
  conn_close(c);
  peer_fail(t, q, REDCOLL_EPROTO, DIR_BOTH);
  set_fatal(t, REDCOLL_EPROTO, "protocol error on the connection %s rank %d: %s",
            c->out ? "to" : "from", q, what);
}

static void out_ready(redcoll__tcp_conn *c);

/* The incoming connection c has proved to be rank q's (HELLO of this job,
 * and the secret if there is one).  Its first is the data connection; a
 * second one is a control connection, opened by a rank that aborts while
 * its data connection may be blocked behind data this rank has not asked
 * for yet: it carries the ABORT (and BYE), never data. */
static void accept_peer(redcoll__tcp_conn *c, int q) {
  redcoll__tcp *t = c->t;
  redcoll__tcp_peer *p = &t->peers[q];
  c->peer = q;
  c->ready = 1;
  if (p->in != NULL) {
    c->ctl_only = 1;
    redcoll__log(3, "tcp rank %d: rank %d opened a control connection", t->rank, q);
    return;
  }
  p->in = c;
  redcoll__log(3, "tcp rank %d: rank %d connected%s", t->rank, q, t->auth ? " and authenticated" : "");
}

/* The payload of an authentication frame has been read into c->abuf. */
static void auth_arrived(redcoll__tcp_conn *c) {
  redcoll__tcp *t = c->t;
  unsigned char mac[REDCOLL__AUTH_MAC];
  unsigned char fr[REDCOLL__TCP_HDR + REDCOLL__AUTH_NONCE + REDCOLL__AUTH_MAC];
  switch (c->astep) {
  case REDCOLL__AUTH_C1: { /* server: answer the challenge, challenge back */
    memcpy(c->nonce_peer, c->abuf, REDCOLL__AUTH_NONCE);
    auth_nonce(c->nonce_mine);
    redcoll__tcp_encode(fr, REDCOLL__FR_AUTH, REDCOLL__AUTH_S2,
                        REDCOLL__AUTH_NONCE + REDCOLL__AUTH_MAC);
    memcpy(fr + REDCOLL__TCP_HDR, c->nonce_mine, REDCOLL__AUTH_NONCE);
    auth_mac(t, fr + REDCOLL__TCP_HDR + REDCOLL__AUTH_NONCE, 'S', c->nonce_peer, c->nonce_mine,
             c->claimed, t->rank);
    c->auth_step = REDCOLL__AUTH_C3;
    ctl_write_bytes(c, fr, sizeof fr, 0);
    return;
  }
  case REDCOLL__AUTH_S2: { /* client: check the server, answer its challenge */
    int q = c->peer;
    memcpy(c->nonce_peer, c->abuf, REDCOLL__AUTH_NONCE);
    auth_mac(t, mac, 'S', c->nonce_mine, c->nonce_peer, t->rank, q);
    if (!auth_equal(mac, c->abuf + REDCOLL__AUTH_NONCE)) {
      int for_abort = c->abort_after_hello;
      conn_refuse(c);
      if (!for_abort)
        auth_fail(t, q, "failed authentication: its answer does not match this rank's secret");
      return;
    }
    redcoll__tcp_encode(fr, REDCOLL__FR_AUTH, REDCOLL__AUTH_C3, REDCOLL__AUTH_MAC);
    auth_mac(t, fr + REDCOLL__TCP_HDR, 'C', c->nonce_mine, c->nonce_peer, t->rank, q);
    ctl_write_bytes(c, fr, REDCOLL__TCP_HDR + REDCOLL__AUTH_MAC, 0);
    c->auth_step = 0;
    out_ready(c);
    return;
  }
  case REDCOLL__AUTH_C3: { /* server: check the client; it is rank q now */
    int q = c->claimed;
    auth_mac(t, mac, 'C', c->nonce_peer, c->nonce_mine, q, t->rank);
    if (!auth_equal(mac, c->abuf)) {
      redcoll__log(0,
                   "tcp rank %d: refused a connection claiming to be rank %d: authentication "
                   "failed (another secret?)",
                   t->rank, q);
      conn_refuse(c);
      return;
    }
    c->auth_step = 0;
    accept_peer(c, q);
    return;
  }
  default:
    conn_proto(c, "unexpected authentication step");
  }
}

/* The payload of a HELLO that claimed to be rank c->claimed has been read
 * into c->abuf: the job id. */
static void hello_arrived(redcoll__tcp_conn *c) {
  redcoll__tcp *t = c->t;
  int q = c->claimed;
  uint64_t job = redcoll__tcp_get_le(c->abuf, 8);
  if (job != t->job) {
    redcoll__log(1,
                 "tcp rank %d: dropped a connection claiming to be rank %d: HELLO from another "
                 "job (job id %016llx, this job's is %016llx)",
                 t->rank, q, (unsigned long long)job, (unsigned long long)t->job);
    conn_close(c);
    return;
  }
  if (t->auth) {
    /* Identified only once it has proved it knows the secret. */
    c->auth_step = REDCOLL__AUTH_C1;
    return;
  }
  accept_peer(c, q);
}

/* An AUTH frame header. */
static void auth_frame(redcoll__tcp_conn *c, const redcoll__tcp_frame *f) {
  redcoll__tcp *t = c->t;
  if (f->tag == REDCOLL__AUTH_REFUSED && f->len == 0) {
    if (!c->out || c->peer < 0) {
      conn_close(c);
      return;
    }
    int q = c->peer;
    int for_abort = c->abort_after_hello;
    conn_close(c);
    if (for_abort) return;
    auth_fail(t, q,
              t->auth ? "refused this rank's authentication (has it the same secret?)"
                      : "refused this rank: it requires authentication and this rank has no "
                        "secret (REDCOLL_SECRET)");
    return;
  }
  int want = redcoll__tcp_auth_len(f->tag);
  if (want < 0 || f->len != (uint64_t)want) return conn_proto(c, "malformed authentication frame");
  if (!t->auth) {
    if (c->out || c->peer < 0) return conn_proto(c, "unexpected authentication frame");
    int q = c->peer;
    conn_refuse(c);
    set_fatal(t, REDCOLL_EPROTO,
              "rank %d wants to authenticate (it has a secret) and this rank has no secret "
              "(REDCOLL_SECRET)",
              q);
    return;
  }
  if (f->tag != (uint64_t)c->auth_step || c->auth_step == 0) {
    if (c->out) return conn_proto(c, "unexpected authentication step");
    redcoll__log(0, "tcp rank %d: refused a connection: authentication step %llu out of order",
                 t->rank, (unsigned long long)f->tag);
    conn_refuse(c);
    return;
  }
  c->astep = (unsigned)f->tag;
  c->aneed = (size_t)want;
  c->agot = 0;
}

static void frame_arrived(redcoll__tcp_conn *c, const redcoll__tcp_frame *f) {
  redcoll__tcp *t = c->t;
  if (!c->out && c->peer < 0 && c->auth_step != 0 && f->type != REDCOLL__FR_AUTH) {
    redcoll__log(0,
                 "tcp rank %d: refused a connection claiming to be rank %d: it did not "
                 "authenticate (this rank has a secret)",
                 t->rank, c->claimed);
    conn_refuse(c);
    return;
  }
  switch (f->type) {
  case REDCOLL__FR_AUTH:
    return auth_frame(c, f);
  case REDCOLL__FR_HELLO: {
    if (c->out || c->peer >= 0 || c->auth_step != 0 || c->claimed >= 0)
      return conn_proto(c, "unexpected HELLO");
    const char *why = NULL;
    int q = redcoll__tcp_hello_check(f, t->rank, t->size, &why);
    if (q < 0) return conn_proto(c, why);
    /* Its payload, the job id, decides (hello_arrived). */
    c->claimed = q;
    c->astep = REDCOLL__ASTEP_HELLO;
    c->aneed = REDCOLL__TCP_HELLO_LEN;
    c->agot = 0;
    return;
  }
  case REDCOLL__FR_BYE:
    if (c->peer < 0 || f->tag > 1 || f->len != 0) return conn_proto(c, "bad BYE");
    c->bye = 1;
    peer_said_bye(t, c->peer, (int)f->tag);
    return;
  case REDCOLL__FR_ABORT: {
    if (c->peer < 0 || f->len != 0) return conn_proto(c, "bad ABORT");
    int st = (int)(int32_t)(uint32_t)f->tag;
    if (((f->tag >> 32) & 0xff) == 1)
      set_fatal(t, REDCOLL_EABORTED,
                "rank %d aborted: its authentication with rank %d failed (not the same "
                "REDCOLL_SECRET?)",
                c->peer, (int)(f->tag >> 40));
    else
      set_fatal(t, REDCOLL_EABORTED, "rank %d aborted with status %d (%s)", c->peer, st,
                redcoll_status_name(st));
    return;
  }
  case REDCOLL__FR_DATA:
    if (c->out || c->peer < 0 || c->ctl_only) return conn_proto(c, "DATA on a wrong connection");
    c->have_frame = 1;
    c->fr = *f;
    /* Once broken (an ABORT may have come just before this frame in the
     * same read), nothing more is delivered. */
    if (t->fatal != REDCOLL_OK) {
      conn_read_stop(c);
      return;
    }
    try_match(t, c->peer);
    return;
  default:
    return conn_proto(c, "unexpected frame type");
  }
}

/* Nothing more can be delivered from c's buffer without reading more. */
static int rx_stuck(redcoll__tcp_conn *c) {
  size_t avail = c->rhi - c->rlo;
  if (!c->have_frame) return avail < REDCOLL__TCP_HDR;
  redcoll__tcp_recv *r = c->t->peers[c->peer].rx;
  if (r != NULL && r->matched) return 1; /* its buffered bytes are taken */
  return avail < c->fr.len;
}

/* Delivers what the buffered connection c holds: frames, and the payload
 * of a matched receive.  Then reads on if there is room, or reports the
 * end of the connection once nothing deliverable is left. */
static void rx_pump(redcoll__tcp_conn *c) {
  redcoll__tcp *t = c->t;
  while (!c->closing && buffered(c) && t->fatal == REDCOLL_OK) {
    if (c->have_frame) {
      try_match(t, c->peer);
      if (c->have_frame) break;
      continue;
    }
    if (c->rhi - c->rlo < REDCOLL__TCP_HDR) break;
    redcoll__tcp_frame f;
    if (redcoll__tcp_decode(c->rb + c->rlo, &f) != REDCOLL_OK) {
      conn_proto(c, "malformed frame header");
      return;
    }
    c->rlo += REDCOLL__TCP_HDR;
    frame_arrived(c, &f);
    if (c->aneed > 0 && !c->closing) {
      /* Only set-up frames have a payload that is not a message. */
      conn_proto(c, "set-up frame on an identified connection");
      return;
    }
  }
  if (c->closing || !buffered(c)) return;
  if (c->lost != 0) {
    if (rx_stuck(c)) conn_lost(c, c->lost);
    return;
  }
  if (!c->reading && t->fatal == REDCOLL_OK && (c->rlo > 0 || c->rhi < REDCOLL__TCP_RBUF))
    conn_read_start(c);
}

static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *b) {
  redcoll__tcp_conn *c = s->data;
  redcoll__tcp *t = c->t;
  (void)b;
  int into_rb = c->into_rb;
  c->into_rb = 0;
  if (n == 0 || c->closing) return;
  if (n == UV_ENOBUFS) {
    conn_read_stop(c);
    if (buffered(c) && c->rb == NULL)
      set_fatal(t, REDCOLL_ENOMEM, "no memory for the read buffer of rank %d", c->peer);
    return;
  }
  if (n < 0) {
    if (buffered(c) && !rx_stuck(c)) {
      /* The end, but frames before it wait in the buffer: deliver them
       * first (rx_pump reports it). */
      conn_read_stop(c);
      c->lost = (int)n;
      return;
    }
    conn_lost(c, (int)n);
    return;
  }
  if (c->refused) return;
  if (into_rb) {
    c->rhi += (size_t)n;
    rx_pump(c);
    return;
  }
  if (c->aneed > 0) {
    c->agot += (size_t)n;
    if (c->agot < c->aneed) return;
    c->aneed = 0;
    if (c->astep == REDCOLL__ASTEP_HELLO) hello_arrived(c);
    else auth_arrived(c);
    return;
  }
  if (!c->have_frame) {
    c->hdr_got += (size_t)n;
    if (c->hdr_got < REDCOLL__TCP_HDR) return;
    c->hdr_got = 0;
    redcoll__tcp_frame f;
    if (redcoll__tcp_decode(c->hdr, &f) != REDCOLL_OK) {
      conn_proto(c, "malformed frame header");
      return;
    }
    frame_arrived(c, &f);
    return;
  }
  redcoll__tcp_recv *r = t->peers[c->peer].rx;
  r->got += (size_t)n;
  if (r->got == r->len) recv_complete(t, c, r);
}

/* ---- connecting and sending ---------------------------------------------- */

static void peer_connect(redcoll__tcp *t, int q, int for_abort);

static void on_send_written(uv_write_t *req, int status) {
  redcoll__tcp_send *s = req->data;
  redcoll__tcp *t = req->handle->data ? ((redcoll__tcp_conn *)req->handle->data)->t : NULL;
  s->done = 1;
  if (status == 0) {
    s->status = REDCOLL_OK;
  } else {
    s->status = REDCOLL_ETRANSPORT;
    if (t != NULL && status != UV_ECANCELED) {
      char a[64];
      set_fatal(t, REDCOLL_ETRANSPORT, "sending to rank %d (%s) failed: %s", s->dst,
                peer_addr(t, s->dst, a, sizeof a), uv_strerror(status));
    }
  }
  if (t != NULL && t->peers[s->dst].tx == s) t->peers[s->dst].tx = NULL;
}

static void send_queue(redcoll__tcp *t, redcoll__tcp_send *s) {
  redcoll__tcp_conn *c = t->peers[s->dst].out;
  redcoll__tcp_encode(s->hdr, REDCOLL__FR_DATA, s->tag, (uint64_t)s->len);
  uv_buf_t b[2];
  b[0] = uv_buf_init((char *)s->hdr, REDCOLL__TCP_HDR);
  b[1].base = (char *)(uintptr_t)s->buf;
  b[1].len = s->len;
  uv_buf_t *bp = b;
  unsigned nb = s->len ? 2 : 1;
  /* Straight into the socket if it takes it (libuv refuses, UV_EAGAIN,
   * while earlier writes are queued, which keeps the order). */
  int r = uv_try_write((uv_stream_t *)&c->h, b, nb);
  if (r >= 0) {
    size_t w = (size_t)r;
    while (nb > 0 && w >= bp->len) {
      w -= bp->len;
      bp++;
      nb--;
    }
    if (nb == 0) {
      s->done = 1;
      s->status = REDCOLL_OK;
      t->peers[s->dst].tx = NULL;
      return;
    }
    bp->base += w;
    bp->len -= w;
  }
  /* The rest is queued; after UV_EAGAIN all of it, and after a failure
   * uv_write meets the same failure and reports it (on_send_written). */
  s->req.data = s;
  r = uv_write(&s->req, (uv_stream_t *)&c->h, bp, nb, on_send_written);
  if (r != 0) {
    s->done = 1;
    s->status = REDCOLL_ETRANSPORT;
    t->peers[s->dst].tx = NULL;
    char a[64];
    set_fatal(t, REDCOLL_ETRANSPORT, "cannot send to rank %d (%s): %s", s->dst,
              peer_addr(t, s->dst, a, sizeof a), uv_strerror(r));
    return;
  }
  s->queued = 1;
}

static void on_retry(uv_timer_t *tm) {
  redcoll__tcp_peer *p = tm->data;
  redcoll__tcp *t = uv_handle_get_loop((uv_handle_t *)tm)->data;
  p->retry_active = 0;
  int q = (int)(p - t->peers);
  if (p->out == NULL && p->err_send == REDCOLL_OK && p->tx != NULL) peer_connect(t, q, 0);
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
    int for_abort = c->abort_after_hello;
    conn_close(c);
    if (for_abort) return;
    if (!retryable) {
      peer_fail(t, q, REDCOLL_ETRANSPORT, DIR_SEND);
      set_fatal(t, REDCOLL_ETRANSPORT, "cannot connect to rank %d at %s: %s", q,
                peer_addr(t, q, a, sizeof a), uv_strerror(status));
      return;
    }
    /* Not listening yet: try again a little later, backing off up to a
     * quarter second.  The call's timer bounds the whole wait. */
    redcoll__log(3, "tcp rank %d: rank %d at %s: %s, retrying in %u ms", t->rank, q,
                 peer_addr(t, q, a, sizeof a), uv_strerror(status), p->backoff_ms);
    if (!p->retry_init) {
      uv_timer_init(&t->loop, &p->retry);
      p->retry.data = p;
      p->retry_init = 1;
    }
    uv_timer_start(&p->retry, on_retry, p->backoff_ms, 0);
    p->retry_active = 1;
    p->backoff_ms = p->backoff_ms * 2 > 250 ? 250 : p->backoff_ms * 2;
    return;
  }
  uv_tcp_nodelay(&c->h, 1);
  redcoll__tcp_encode(c->hello, REDCOLL__FR_HELLO, (uint64_t)t->rank | (uint64_t)t->size << 32,
                      REDCOLL__TCP_HELLO_LEN);
  redcoll__tcp_put_le(c->hello + REDCOLL__TCP_HDR, t->job, 8);
  size_t hn = REDCOLL__TCP_HDR + REDCOLL__TCP_HELLO_LEN;
  if (t->auth) {
    /* Ready once the peer has answered the challenge (auth_arrived). */
    auth_nonce(c->nonce_mine);
    redcoll__tcp_encode(c->hello + hn, REDCOLL__FR_AUTH, REDCOLL__AUTH_C1, REDCOLL__AUTH_NONCE);
    memcpy(c->hello + hn + REDCOLL__TCP_HDR, c->nonce_mine, REDCOLL__AUTH_NONCE);
    hn += REDCOLL__TCP_HDR + REDCOLL__AUTH_NONCE;
    c->auth_step = REDCOLL__AUTH_S2;
  } else {
    c->ready = 1;
  }
  uv_buf_t b = uv_buf_init((char *)c->hello, (unsigned)hn);
  c->hello_req.data = c;
  int r = uv_write(&c->hello_req, (uv_stream_t *)&c->h, &b, 1, on_hello_written);
  if (r != 0) {
    conn_lost(c, r);
    return;
  }
  t->ctl_pending++;
  /* Reading an outgoing connection only ever yields the authentication,
   * BYE, ABORT or the end. */
  conn_read_start(c);
  if (!t->auth) out_ready(c);
}

/* An outgoing connection is set up (and authenticated): use it. */
static void out_ready(redcoll__tcp_conn *c) {
  redcoll__tcp *t = c->t;
  redcoll__tcp_peer *p = &t->peers[c->peer];
  c->ready = 1;
  if (c->abort_after_hello) ctl_send(c, REDCOLL__FR_ABORT, t->abort_tag);
  if (p->out == c && p->tx != NULL && !p->tx->queued) send_queue(t, p->tx);
}

/* Connects to rank q: the data connection (for_abort 0, 1 when it is made
 * only to carry this rank's ABORT), or (control 1) an extra connection for
 * the ABORT alone, beside a data connection that may be blocked. */
static void connect_to(redcoll__tcp *t, int q, int for_abort, int control) {
  redcoll__tcp_peer *p = &t->peers[q];
  char a[64];
  redcoll__tcp_conn *c = conn_new(t, q, 1);
  if (c == NULL) {
    if (!for_abort) set_fatal(t, REDCOLL_ENOMEM, "no memory for a connection to rank %d", q);
    return;
  }
  c->abort_after_hello = for_abort;
  c->creq.data = c;
  int r = uv_tcp_connect(&c->creq, &c->h, (const struct sockaddr *)&p->addr, on_connect);
  if (r != 0) {
    conn_close(c);
    if (!for_abort)
      set_fatal(t, REDCOLL_ETRANSPORT, "cannot connect to rank %d at %s: %s", q,
                peer_addr(t, q, a, sizeof a), uv_strerror(r));
    return;
  }
  t->connects_pending++;
  if (!control) p->out = c;
}

static void peer_connect(redcoll__tcp *t, int q, int for_abort) { connect_to(t, q, for_abort, 0); }

void redcoll__tcp_on_accept(uv_stream_t *server, int status) {
  redcoll__tcp *t = server->data;
  if (status != 0) {
    redcoll__log(1, "tcp rank %d: accept failed: %s", t->rank, uv_strerror(status));
    return;
  }
  redcoll__tcp_conn *c = conn_new(t, -1, 0);
  if (c == NULL) return;
  if (uv_accept(server, (uv_stream_t *)&c->h) != 0) {
    conn_close(c);
    return;
  }
  uv_tcp_nodelay(&c->h, 1);
  conn_read_start(c);
}

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
static int not_aborted(redcoll__tcp *t) { return t->fatal != REDCOLL_EABORTED; }
/* How long a wait that ends with a lost peer listens for an ABORT. */
#define ABORT_GRACE_MS 250

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
        set_fatal(t, REDCOLL_ETIMEDOUT,
                  "%s rank %d (%s): the collective did not finish within its deadline "
                  "(redcoll_comm_set_deadline)",
                  what, peer, peer_addr(t, peer, a, sizeof a));
      else
        set_fatal(t, REDCOLL_ETIMEDOUT, "%s rank %d (%s) did not complete within %llu ms", what,
                  peer, peer_addr(t, peer, a, sizeof a), (unsigned long long)t->timeout_ms);
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
      set_fatal(t, REDCOLL_ETRANSPORT, "%s rank %d: the event loop ran dry", what, peer);
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
    if (w->r->matched && p->in != NULL) conn_close(p->in); /* stream out of step now */
    w->r->done = 1;
  }
  if (w->s != NULL && !w->s->done) {
    redcoll__tcp_peer *p = &t->peers[w->s->dst];
    if (p->tx == w->s) p->tx = NULL;
    if (w->s->queued) {
      /* The write still points at the caller's buffer: closing the
       * connection cancels it, and its callback runs in the close pass. */
      if (p->out != NULL) conn_close(p->out);
      for (int i = 0; i < 1000 && !w->s->done; i++) uv_run(&t->loop, UV_RUN_NOWAIT);
    }
    w->s->done = 1;
  }
  /* A peer gone is often the echo of an abort elsewhere, which explains
   * more: give an ABORT already on its way a moment to arrive. */
  if (rc == REDCOLL_ETRANSPORT) {
    run_bounded(t, not_aborted, ABORT_GRACE_MS);
    if (t->fatal == REDCOLL_EABORTED) rc = REDCOLL_EABORTED;
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
  if (p->out != NULL && p->out->ready) {
    send_queue(t, s);
  } else if (p->out == NULL && !p->retry_active) {
    p->backoff_ms = 2;
    peer_connect(t, s->dst, 0);
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
    if (buffered(p->in)) rx_pump(p->in);
    else if (p->in->have_frame) try_match(t, r->src);
    else conn_read_start(p->in);
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
  redcoll__log(2, "tcp rank %d: aborting (%s)", t->rank, redcoll_status_name(status));
  for (int q = 0; q < t->size; q++) {
    if (q == t->rank) continue;
    redcoll__tcp_peer *p = &t->peers[q];
    int told = 0;
    if (p->out != NULL && p->out->ready) {
      ctl_send(p->out, REDCOLL__FR_ABORT, tag);
      told = 1;
      /* q reads that connection only as far as it has asked for data: an
       * ABORT behind data it has not asked for yet would wait there.  q
       * always reads its own connection to this rank, if it has one;
       * otherwise the ABORT also goes through a connection of its own. */
      if (p->in == NULL) connect_to(t, q, 1, 1);
    } else if (p->out != NULL) {
      p->out->abort_after_hello = 1;
      told = 1;
    }
    if (p->in != NULL) {
      ctl_send(p->in, REDCOLL__FR_ABORT, tag);
      told = 1;
    }
    /* A peer we never talked to may be waiting for our first message: tell
     * it through a connection of its own (one attempt, no retry). */
    if (!told && p->err_send == REDCOLL_OK) peer_connect(t, q, 1);
  }
  uint64_t ms = t->timeout_ms < 1000 ? t->timeout_ms : 1000;
  run_bounded(t, ctl_busy, ms);
  /* This rank has given up: its own later calls fail as well. */
  if (t->fatal == REDCOLL_OK) t->fatal = REDCOLL_EABORTED;
}

static void close_all(redcoll__tcp *t) {
  for (redcoll__tcp_conn *c = t->conns.next; c != &t->conns; c = c->next) conn_close(c);
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
        /* Tag 1: this rank's data connection to that peer is open, and
         * the peer should read it to its end before giving up on it. */
        const redcoll__tcp_conn *o = t->peers[c->peer].out;
        ctl_send(c, REDCOLL__FR_BYE, o != NULL && !o->closing ? 1 : 0);
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
  t->timeout_ms = cfg->timeout_ms ? cfg->timeout_ms : REDCOLL_TCP_DEFAULT_TIMEOUT_MS;
  t->coll_deadline_ns = UINT64_MAX;
  t->auth_failed_with = -1;
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
  t->timeout_ms = timeout_ms ? timeout_ms : REDCOLL_TCP_DEFAULT_TIMEOUT_MS;
  return REDCOLL_OK;
}

REDCOLL_API int redcoll_tcp_comm_address(const redcoll_comm *c, char *buf, size_t len) {
  const redcoll__tcp *t = redcoll__comm_transport(c, &tcp_ops);
  if (t == NULL || buf == NULL || len == 0) return REDCOLL_EINVAL;
  redcoll__tcp_addr_str(&t->self, buf, len);
  return REDCOLL_OK;
}
