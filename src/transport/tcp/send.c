/* Sending a message on this rank's connection to its peer: the DATA frame
 * straight into the socket when it takes it, the rest queued behind the
 * writes before it (several threads may send to one peer); and what an
 * outgoing connection does once it is set up (its pending CANCELs or
 * messages). */
#include "conn.h"
#include "failure.h"
#include "send.h"

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
      redcoll__tcp_peer_lost(t, s->dst, REDCOLL_ETRANSPORT, DIR_SEND,
                             "sending to rank %d (%s) failed: %s", s->dst,
                             redcoll__tcp_peer_addr(t, s->dst, a, sizeof a), uv_strerror(status));
    }
  }
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
    char a[64];
    redcoll__tcp_peer_lost(t, s->dst, REDCOLL_ETRANSPORT, DIR_SEND, "cannot send to rank %d (%s): %s",
                           s->dst, redcoll__tcp_peer_addr(t, s->dst, a, sizeof a), uv_strerror(r));
    return;
  }
  s->queued = 1;
}

/* An outgoing connection is set up (and authenticated): use it. */
void redcoll__tcp_out_ready(redcoll__tcp_conn *c) {
  redcoll__tcp *t = c->t;
  redcoll__tcp_peer *p = &t->peers[c->peer];
  c->ready = 1;
  p->ever = 1;
  p->probe = 0;
  if (c->abort_after_hello == REDCOLL__TCP_RELAY_BYE) {
    redcoll__tcp_ctl_send(c, REDCOLL__FR_BYE, redcoll__tcp_bye_tag(t, 0));
  } else if (c->abort_after_hello) {
    /* Made to say that this rank gave up: every communicator it cancelled. */
    for (const redcoll__tcp_group *g = t->groups; g != NULL; g = g->next)
      if (g->cancelled && g->from == t->rank)
        redcoll__tcp_ctl_send_ch(c, REDCOLL__FR_CANCEL, g->why, g->group);
  }
  if (p->out != c) return;
  while (p->txq != NULL) {
    redcoll__tcp_send *s = p->txq;
    p->txq = s->next;
    s->next = NULL;
    redcoll__tcp_send_queue(t, s);
  }
  p->txq_tail = NULL;
}
