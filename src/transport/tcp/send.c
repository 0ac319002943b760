/* Sending a message on this rank's connection to its peer: the DATA frame
 * straight into the socket when it takes it, the rest queued behind the
 * writes before it (several threads may send to one peer); and what an
 * outgoing connection does once it is set up (its pending CANCELs or
 * messages).
 *
 * On the program's loop (t->ext) a message longer than
 * REDCOLL__TCP_EXT_WRITE goes in pieces of that size, one per turn of the
 * loop, each once the one before is written: a socket that takes
 * megabytes at once (loopback, whose send buffer empties as fast as the
 * peer reads) would otherwise hold the loop for tens of milliseconds in
 * one write.  Until the last piece is out the connection is busy
 * (wr_busy): later messages wait in the peer's queue, control frames in
 * the connection's, and both follow it. */
#include <stdlib.h>

#include "conn.h"
#include "failure.h"
#include "send.h"
#include "wait.h"

static void on_send_written(uv_write_t *req, int status);

/* c's messages waiting in its peer's queue go (until one is written in
 * pieces again). */
static void drain(redcoll__tcp *t, redcoll__tcp_conn *c) {
  redcoll__tcp_peer *p = &t->peers[c->peer];
  while (p->out == c && c->ready && !c->closing && c->wr_busy == NULL && p->txq != NULL) {
    redcoll__tcp_send *s = p->txq;
    p->txq = s->next;
    s->next = NULL;
    if (p->txq == NULL) p->txq_tail = NULL;
    redcoll__tcp_send_queue(t, s);
  }
}

/* s, written on c, is over: all of it is out (status 0) or it failed
 * (libuv's status). */
static void send_over(redcoll__tcp_conn *c, redcoll__tcp_send *s, int status) {
  if (c != NULL && c->wr_busy == s) {
    /* Written in pieces: what waited behind it goes. */
    c->wr_busy = NULL;
    c->piece_due = 0;
    redcoll__tcp_ctl_flush(c);
    drain(c->t, c);
  }
  redcoll__tcp_send_end(c != NULL ? c->t : NULL, s, status);
}

static void on_send_written(uv_write_t *req, int status) {
  redcoll__tcp_send *s = req->data;
  redcoll__tcp_conn *c = req->handle->data;
  if (status == 0 && s->rest_len > 0 && c != NULL && !c->closing) {
    /* The next piece in the loop's next turn (redcoll__tcp_send_piece):
     * libuv runs write callbacks several times within one turn, and
     * handing it the next from here would write them all at once. */
    c->piece_due = 1;
    redcoll__tcp_ext_soon(c->t);
    return;
  }
  if (status == 0 && s->rest_len > 0) status = UV_ECANCELED;
  send_over(c, s, status);
}

void redcoll__tcp_send_piece(redcoll__tcp_conn *c) {
  redcoll__tcp_send *s = c->wr_busy;
  if (!c->piece_due || s == NULL) return;
  c->piece_due = 0;
  size_t n = s->rest_len < REDCOLL__TCP_EXT_WRITE ? s->rest_len : REDCOLL__TCP_EXT_WRITE;
  uv_buf_t b = uv_buf_init((char *)(uintptr_t)s->rest, (unsigned)n);
  s->rest += n;
  s->rest_len -= n;
  int r = c->closing ? UV_ECANCELED : uv_write(&s->req, (uv_stream_t *)&c->h, &b, 1, on_send_written);
  if (r != 0) send_over(c, s, r);
}

void redcoll__tcp_send_queue(redcoll__tcp *t, redcoll__tcp_send *s) {
  redcoll__tcp_conn *c = t->peers[s->dst].out;
  redcoll__tcp_encode_ch(s->hdr, REDCOLL__FR_DATA, s->tag, (uint64_t)s->len, s->chan);
  uv_buf_t b[2];
  b[0] = uv_buf_init((char *)s->hdr, REDCOLL__TCP_HDR);
  b[1].base = (char *)(uintptr_t)s->buf;
  b[1].len = s->len;
  uv_buf_t *bp = b;
  unsigned nb = s->len ? 2 : 1;
  s->rest = NULL;
  s->rest_len = 0;
  int r = UV_EAGAIN;
  if (t->ext && s->len > REDCOLL__TCP_EXT_WRITE) {
    /* In pieces: the header and the first now, the others from the write
     * turns after (redcoll__tcp_send_piece). */
    s->rest = (const unsigned char *)s->buf + REDCOLL__TCP_EXT_WRITE;
    s->rest_len = s->len - REDCOLL__TCP_EXT_WRITE;
    b[1].len = REDCOLL__TCP_EXT_WRITE;
    c->wr_busy = s;
  } else {
    /* Straight into the socket if it takes it (libuv refuses, UV_EAGAIN,
     * while earlier writes are queued, which keeps the order). */
    r = uv_try_write((uv_stream_t *)&c->h, b, nb);
  }
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
    if (c->wr_busy == s) c->wr_busy = NULL; /* (nothing waits behind it yet) */
    s->done = 1;
    s->status = redcoll__tcp_loss_status(t, s->dst);
    char a[64];
    redcoll__tcp_peer_lost(t, s->dst, REDCOLL_ETRANSPORT, DIR_SEND, "cannot send to rank %d (%s): %s",
                           s->dst, redcoll__tcp_peer_addr(t, s->dst, a, sizeof a), uv_strerror(r));
    return;
  }
  s->queued = 1;
}

/* The call of s (queued: libuv is writing it) returns before the write is
 * done: the bytes not yet written are copied, the write goes on from the
 * copy, and s is freed by its callback.  So a timeout or a cancel on one
 * communicator never cuts the connection the others share, and the peer
 * gets the whole message (its communicator drops it if it is cancelled
 * there).  This repoints the buffers libuv keeps in the request
 * (uv_write_t's bufs from write_index on, which libuv advances as it
 * writes; the layout of every libuv 1.x on Unix), and the pieces not yet
 * handed to libuv.  Returns 0, or -1 without memory (s is then still the
 * caller's). */
int redcoll__tcp_send_detach(redcoll__tcp_send *s) {
  uv_write_t *req = &s->req;
  size_t n = s->rest_len;
  for (unsigned i = req->write_index; i < req->nbufs; i++) n += req->bufs[i].len;
  unsigned char *copy = malloc(n ? n : 1);
  if (copy == NULL) return -1;
  size_t off = 0;
  for (unsigned i = req->write_index; i < req->nbufs; i++) {
    memcpy(copy + off, req->bufs[i].base, req->bufs[i].len);
    req->bufs[i].base = (char *)copy + off;
    off += req->bufs[i].len;
  }
  if (s->rest_len > 0) memcpy(copy + off, s->rest, s->rest_len);
  s->rest = copy + off;
  s->copy = copy;
  s->detached = 1;
  return 0;
}

/* An outgoing connection is set up (and authenticated): use it. */
void redcoll__tcp_out_ready(redcoll__tcp_conn *c) {
  redcoll__tcp *t = c->t;
  redcoll__tcp_peer *p = &t->peers[c->peer];
  c->ready = 1;
  p->ever = 1;
  p->probe = 0;
  if (c->abort_after_hello || c->send_cancels) {
    /* Made to say, or made while, this rank gave up: every communicator it
     * cancelled. */
    for (const redcoll__tcp_group *g = t->groups; g != NULL; g = g->next)
      if (g->cancelled && g->from == t->rank)
        redcoll__tcp_ctl_send_ch(c, REDCOLL__FR_CANCEL, g->why, g->group);
  }
  drain(t, c);
  redcoll__tcp_bye_if_leaving(c, c->peer);
}

void redcoll__tcp_bye_if_leaving(redcoll__tcp_conn *c, int q) {
  redcoll__tcp *t = c->t;
  if (!t->leaving || c->bye_sent || c->closing) return;
  const redcoll__tcp_conn *o = t->peers[q].out;
  c->bye_sent = 1;
  /* Its data connection is worth reading to its end only if set up: data
   * goes on nothing else, and nothing more is posted now. */
  int has_out = o != NULL && !o->closing && o->ready;
  redcoll__tcp_ctl_send(c, REDCOLL__FR_BYE, redcoll__tcp_bye_tag(t, has_out));
}
