/* Sending a message on this rank's connection to its peer: the DATA frame
 * straight into the socket when it takes it, the rest queued behind the
 * writes before it (several threads may send to one peer); and what an
 * outgoing connection does once it is set up (its pending CANCELs or
 * messages). */
#include <stdlib.h>

#include "conn.h"
#include "failure.h"
#include "send.h"

static void on_send_written(uv_write_t *req, int status) {
  redcoll__tcp_send *s = req->data;
  if (s->detached) {
    /* Its call has returned; the bytes went out from the copy. */
    free(s->copy);
    free(s);
    return;
  }
  redcoll__tcp *t = req->handle->data ? ((redcoll__tcp_conn *)req->handle->data)->t : NULL;
  s->done = 1;
  if (status == 0) {
    s->status = REDCOLL_OK;
  } else {
    s->status = t != NULL ? redcoll__tcp_loss_status(t, s->dst) : REDCOLL_ETRANSPORT;
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
   * while earlier writes are queued, which keeps the order); on the
   * program's loop, at most REDCOLL__TCP_EXT_WRITE bytes now. */
  uv_buf_t tb[2] = {b[0], b[1]};
  if (t->ext && nb == 2 && tb[1].len > REDCOLL__TCP_EXT_WRITE) tb[1].len = REDCOLL__TCP_EXT_WRITE;
  int r = uv_try_write((uv_stream_t *)&c->h, tb, nb);
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
 * writes; the layout of every libuv 1.x on Unix).  Returns 0, or -1
 * without memory (s is then still the caller's). */
int redcoll__tcp_send_detach(redcoll__tcp_send *s) {
  uv_write_t *req = &s->req;
  size_t n = 0;
  for (unsigned i = req->write_index; i < req->nbufs; i++) n += req->bufs[i].len;
  unsigned char *copy = malloc(n ? n : 1);
  if (copy == NULL) return -1;
  size_t off = 0;
  for (unsigned i = req->write_index; i < req->nbufs; i++) {
    memcpy(copy + off, req->bufs[i].base, req->bufs[i].len);
    req->bufs[i].base = (char *)copy + off;
    off += req->bufs[i].len;
  }
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
  if (p->out == c) {
    while (p->txq != NULL) {
      redcoll__tcp_send *s = p->txq;
      p->txq = s->next;
      s->next = NULL;
      redcoll__tcp_send_queue(t, s);
    }
    p->txq_tail = NULL;
  }
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
