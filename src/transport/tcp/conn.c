/* One connection: making it, closing it, stopping its reading, writing a
 * control frame on it (BYE, CANCEL, CLOSE, a step of the set-up), refusing it and
 * closing it on a protocol error; making a peer's connection again later.
 * What its reads mean is in recv.c. */
#include <stdlib.h>

#include "conn.h"
#include "failure.h"

void redcoll__tcp_handle_closed(redcoll__tcp *t) {
  if (--t->handles == 0 && t->dying && t->gone != NULL) t->gone(t);
}

static void ctl_drop(redcoll__tcp_conn *c);

void redcoll__tcp_send_end(redcoll__tcp *t, redcoll__tcp_send *s, int status) {
  if (s->detached) {
    /* Its call has returned; the bytes went out from the copy. */
    free(s->copy);
    free(s);
    return;
  }
  s->done = 1;
  if (status == 0) {
    s->status = REDCOLL_OK;
    return;
  }
  s->status = t != NULL ? redcoll__tcp_loss_status(t, s->dst) : REDCOLL_ETRANSPORT;
  if (t != NULL && status != UV_ECANCELED) {
    char a[64];
    redcoll__tcp_peer_lost(t, s->dst, REDCOLL_ETRANSPORT, DIR_SEND,
                           "sending to rank %d (%s) failed: %s", s->dst,
                           redcoll__tcp_peer_addr(t, s->dst, a, sizeof a), uv_strerror(status));
  }
}

/* A message written in pieces (send.c) whose next piece was due ends with
 * c: libuv holds none of it, so no write callback will end it. */
static void pieces_drop(redcoll__tcp_conn *c) {
  redcoll__tcp_send *s = c->wr_busy;
  if (s == NULL || !c->piece_due) return;
  c->wr_busy = NULL;
  c->piece_due = 0;
  redcoll__tcp_send_end(c->t, s, UV_ECANCELED);
}

static void on_conn_closed(uv_handle_t *h) {
  redcoll__tcp_conn *c = h->data;
  redcoll__tcp *t = c->t;
  c->prev->next = c->next;
  c->next->prev = c->prev;
  free(c->rb);
  free(c);
  redcoll__tcp_handle_closed(t);
}

void redcoll__tcp_conn_close(redcoll__tcp_conn *c) {
  if (c->closing) return;
  c->closing = 1;
  ctl_drop(c);
  pieces_drop(c);
  if (c->peer >= 0) {
    redcoll__tcp_peer *p = &c->t->peers[c->peer];
    if (p->out == c) p->out = NULL;
    if (p->in == c) p->in = NULL;
  }
  c->t->handles++;
  uv_close((uv_handle_t *)&c->h, on_conn_closed);
}

/* Connects to peer q again after a backoff (2 ms doubling up to a quarter
 * second): it is not listening yet, or another communicator holds its
 * port.  The call's timer bounds the whole wait. */
void redcoll__tcp_retry_later_ms(redcoll__tcp *t, int q, unsigned ms) {
  redcoll__tcp_peer *p = &t->peers[q];
  if (p->retry_active || t->on_retry == NULL) return;
  if (!p->retry_init) {
    uv_timer_init(t->loop, &p->retry);
    if (t->ext) uv_unref((uv_handle_t *)&p->retry);
    p->retry.data = p;
    p->retry_init = 1;
  }
  uv_timer_start(&p->retry, t->on_retry, ms, 0);
  p->retry_active = 1;
}

void redcoll__tcp_retry_later(redcoll__tcp *t, int q) {
  redcoll__tcp_peer *p = &t->peers[q];
  if (p->retry_active) return;
  if (p->backoff_ms == 0) p->backoff_ms = 2;
  unsigned ms = p->backoff_ms;
  p->backoff_ms = p->backoff_ms * 2 > 250 ? 250 : p->backoff_ms * 2;
  redcoll__tcp_retry_later_ms(t, q, ms);
}

redcoll__tcp_conn *redcoll__tcp_conn_new(redcoll__tcp *t, int peer, int out) {
  redcoll__tcp_conn *c = calloc(1, sizeof *c);
  if (c == NULL) return NULL;
  if (uv_tcp_init(t->loop, &c->h) != 0) {
    free(c);
    return NULL;
  }
  if (t->ext) uv_unref((uv_handle_t *)&c->h); /* the embedder's loop may end without it */
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

void redcoll__tcp_conn_read_stop(redcoll__tcp_conn *c) {
  if (!c->reading) return;
  uv_read_stop((uv_stream_t *)&c->h);
  c->reading = 0;
}

/* ---- control frames ------------------------------------------------------ */

typedef struct redcoll__tcp_ctlw {
  uv_write_t req;
  redcoll__tcp *t;
  redcoll__tcp_conn *close_after; /* closed once the frame is out */
  struct redcoll__tcp_ctlw *next;  /* in its connection's ctl_wait */
  size_t n;
  unsigned char hdr[REDCOLL__TCP_HDR + REDCOLL__AUTH_NONCE + REDCOLL__AUTH_MAC];
} ctl_write;

static void on_ctl_written(uv_write_t *req, int status) {
  ctl_write *w = (ctl_write *)req;
  (void)status;
  w->t->ctl_pending--;
  if (w->close_after != NULL) redcoll__tcp_conn_close(w->close_after);
  free(w);
}

/* Hands w to libuv (counted in ctl_pending already). */
static void ctl_start(redcoll__tcp_conn *c, ctl_write *w) {
  uv_buf_t b = uv_buf_init((char *)w->hdr, (unsigned)w->n);
  if (uv_write(&w->req, (uv_stream_t *)&c->h, &b, 1, on_ctl_written) != 0) {
    c->t->ctl_pending--;
    redcoll__tcp_conn *close = w->close_after;
    free(w);
    if (close != NULL) redcoll__tcp_conn_close(close);
  }
}

/* Writes a frame (n bytes of frame, header and payload, at most
 * sizeof hdr); with close, closes c once it is out.  Behind a message
 * being written in pieces it waits for the last piece (ctl_wait). */
void redcoll__tcp_ctl_write_bytes(redcoll__tcp_conn *c, const unsigned char *frame, size_t n,
                                  int close) {
  if (c->closing) return;
  ctl_write *w = malloc(sizeof *w);
  if (w == NULL || n > sizeof w->hdr) { /* best effort: the peer will see the close instead */
    free(w);
    if (close) redcoll__tcp_conn_close(c);
    return;
  }
  w->t = c->t;
  w->close_after = close ? c : NULL;
  w->next = NULL;
  w->n = n;
  memcpy(w->hdr, frame, n);
  c->t->ctl_pending++;
  if (c->wr_busy == NULL) {
    ctl_start(c, w);
    return;
  }
  ctl_write **pp = &c->ctl_wait;
  while (*pp != NULL) pp = &(*pp)->next;
  *pp = w;
}

void redcoll__tcp_ctl_flush(redcoll__tcp_conn *c) {
  while (c->ctl_wait != NULL && c->wr_busy == NULL && !c->closing) {
    ctl_write *w = c->ctl_wait;
    c->ctl_wait = w->next;
    ctl_start(c, w);
  }
}

/* The control frames still waiting on a closing connection go unsent. */
static void ctl_drop(redcoll__tcp_conn *c) {
  while (c->ctl_wait != NULL) {
    ctl_write *w = c->ctl_wait;
    c->ctl_wait = w->next;
    c->t->ctl_pending--;
    free(w);
  }
}

static void ctl_write_frame(redcoll__tcp_conn *c, unsigned type, uint64_t tag, uint64_t chan,
                            int close) {
  unsigned char h[REDCOLL__TCP_HDR];
  redcoll__tcp_encode_ch(h, type, tag, 0, chan);
  redcoll__tcp_ctl_write_bytes(c, h, sizeof h, close);
}

void redcoll__tcp_ctl_send(redcoll__tcp_conn *c, unsigned type, uint64_t tag) {
  ctl_write_frame(c, type, tag, 0, 0);
}

void redcoll__tcp_ctl_send_ch(redcoll__tcp_conn *c, unsigned type, uint64_t tag, uint64_t chan) {
  ctl_write_frame(c, type, tag, chan, 0);
}

/* Refuses a connection in its set-up: tells the other side (an AUTH frame
 * of step 0, so that a rank of this job can say why) and closes it. */
void redcoll__tcp_conn_refuse(redcoll__tcp_conn *c) {
  if (c->closing || c->refused) return;
  c->refused = 1;
  redcoll__tcp_conn_read_stop(c);
  if (c->peer >= 0 && !c->out) {
    redcoll__tcp_peer *p = &c->t->peers[c->peer];
    if (p->in == c) p->in = NULL;
    c->peer = -1;
  }
  ctl_write_frame(c, REDCOLL__FR_AUTH, REDCOLL__AUTH_REFUSED, 0, 1);
}

void redcoll__tcp_conn_proto(redcoll__tcp_conn *c, const char *what) {
  redcoll__tcp *t = c->t;
  if (c->peer < 0) {
    /* An unidentified client: not one of ours.  Drop it quietly. */
    redcoll__log(1, "tcp rank %d: dropped a connection: %s", t->rank, what);
    redcoll__tcp_conn_close(c);
    return;
  }
  int q = c->peer;
  redcoll__tcp_conn_close(c);
  redcoll__tcp_peer_fail(t, q, REDCOLL_EPROTO, DIR_BOTH);
  redcoll__tcp_set_fatal(t, REDCOLL_EPROTO, "protocol error on the connection %s rank %d: %s",
                         c->out ? "to" : "from", q, what);
}
