/* The receiving side of a connection: its reads, the frames taken out of
 * them, and the DATA frames matched against the posted receive.
 *
 * An identified incoming connection reads whatever the socket holds into
 * its buffer (REDCOLL__TCP_RBUF bytes), one read for header and payload of
 * a small message and for several messages that came together, checks each
 * header against the posted receive and copies the payload out; the rest
 * of a payload longer than that is read straight into the caller's buffer.
 * Frames nobody has asked for yet wait in the buffer; once it is full the
 * connection stops reading (the kernel's buffers and TCP flow control hold
 * the sender back).  Before a connection is identified it reads exactly the
 * bytes of each set-up frame (handshake.c says what they mean), so that
 * nothing of the messages after it lands in the wrong place. */
#include <stdlib.h>

#include "conn.h"
#include "failure.h"
#include "handshake.h"
#include "recv.h"

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *b);
static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *b);

void redcoll__tcp_conn_read_start(redcoll__tcp_conn *c) {
  if (c->reading || c->closing) return;
  int r = uv_read_start((uv_stream_t *)&c->h, on_alloc, on_read);
  if (r != 0) {
    redcoll__tcp_set_fatal(c->t, REDCOLL_ETRANSPORT, "cannot read from rank %d: %s", c->peer,
                           uv_strerror(r));
    return;
  }
  c->reading = 1;
}

/* An identified incoming connection: it reads through its buffer. */
int redcoll__tcp_buffered(const redcoll__tcp_conn *c) {
  return !c->out && c->ready && c->peer >= 0;
}

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
void redcoll__tcp_try_match(redcoll__tcp *t, int q) {
  redcoll__tcp_peer *p = &t->peers[q];
  redcoll__tcp_conn *c = p->in;
  if (c == NULL || !c->have_frame) return;
  redcoll__tcp_recv *r = p->rx;
  if (r == NULL) {
    if (!redcoll__tcp_buffered(c)) redcoll__tcp_conn_read_stop(c);
    return;
  }
  if (r->matched) return;
  if (c->fr.tag != r->tag || c->fr.len != r->len) {
    redcoll__log(0,
                 "tcp rank %d: message from rank %d has tag %#llx and %llu bytes, "
                 "the receive expects tag %#llx and %llu bytes",
                 t->rank, q, (unsigned long long)c->fr.tag, (unsigned long long)c->fr.len,
                 (unsigned long long)r->tag, (unsigned long long)r->len);
    redcoll__tcp_conn_read_stop(c);
    r->done = 1;
    r->status = REDCOLL_EMISMATCH;
    p->rx = NULL;
    /* The stream from q is out of step from here on. */
    redcoll__tcp_set_fatal(t, REDCOLL_EMISMATCH, "receive from rank %d does not match", q);
    return;
  }
  r->matched = 1;
  if (redcoll__tcp_buffered(c)) {
    recv_from_buffer(t, c, r);
    return;
  }
  if (r->len == 0) recv_complete(t, c, r);
  redcoll__tcp_conn_read_start(c);
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *b) {
  redcoll__tcp_conn *c = h->data;
  (void)suggested;
  c->into_rb = 0;
  if (redcoll__tcp_buffered(c)) {
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

/* Peer q destroyed its communicator.  If it has no connection to this
 * rank that may still carry data (has_out 0) and none is open here,
 * nothing can ever arrive from it: receives from it fail now, not at the
 * timeout. */
/* This rank learns that rank `from` aborted, with an ABORT frame's tag
 * (`why`): the communicator is broken with REDCOLL_EABORTED and the reason
 * (an authentication that failed, or the status), told by `via`. */
static void abort_learnt(redcoll__tcp *t, const char *via, int from, uint64_t why) {
  if (t->abort_from < 0) {
    t->abort_from = from;
    t->abort_why = why;
  }
  int st = (int)(int32_t)(uint32_t)why;
  if (((why >> 32) & 0xff) == 1)
    redcoll__tcp_set_fatal(t, REDCOLL_EABORTED,
                           "%srank %d aborted: its authentication with rank %d failed (not the "
                           "same REDCOLL_SECRET?)",
                           via, from, (int)(why >> 40));
  else
    redcoll__tcp_set_fatal(t, REDCOLL_EABORTED, "%srank %d aborted with status %d (%s)", via, from,
                           st, redcoll_status_name(st));
}

/* Rank q said goodbye (BYE, redcoll__tcp_bye_tag): whether its data
 * connection to this rank is still open, and whether it left after an
 * abort, and whose. */
static void peer_said_bye(redcoll__tcp *t, int q, uint64_t tag) {
  redcoll__tcp_peer *p = &t->peers[q];
  int has_out = (int)(tag & 1);
  p->said_bye = 1;
  if (tag & 2) {
    /* It gave up after an abort (its own, sent before this BYE, or one it
     * was told of): that is the reason to report, not its leaving. */
    uint64_t why;
    int from = redcoll__tcp_bye_abort(tag, &why);
    char via[48];
    snprintf(via, sizeof via, "rank %d left after an abort: ", q);
    if (from < 0)
      redcoll__tcp_set_fatal(t, REDCOLL_EABORTED, "rank %d left after its communicator broke", q);
    else
      abort_learnt(t, via, from, why);
    return;
  }
  if (!has_out && p->in == NULL) {
    if (p->rx != NULL)
      redcoll__log(0, "tcp rank %d: rank %d closed its communicator while this rank waits for "
                      "a message from it", t->rank, q);
    redcoll__tcp_peer_fail(t, q, REDCOLL_ETRANSPORT, DIR_RECV);
  }
}

/* The connection is gone (EOF or error). */
void redcoll__tcp_conn_lost(redcoll__tcp_conn *c, int uverr) {
  redcoll__tcp *t = c->t;
  int q = c->peer;
  char a[64];
  if (c->out && q >= 0 && !c->answered) {
    /* Closed before it answered the HELLO: nothing but the set-up went out
     * on it, so it can be made again.  The usual cause: the listening
     * socket of an earlier communicator on the peer's port closed with this
     * connection in its backlog. */
    redcoll__tcp_peer *p = &t->peers[q];
    int data = p->out == c && !c->abort_after_hello;
    redcoll__tcp_conn_close(c);
    if (!data) return;
    if (p->said_bye) { /* gone for good, as a refused connection is then */
      redcoll__tcp_peer_fail(t, q, REDCOLL_ETRANSPORT, DIR_SEND);
      redcoll__tcp_set_fatal(t, REDCOLL_ETRANSPORT, "rank %d (%s) closed the connection: %s", q,
                             redcoll__tcp_peer_addr(t, q, a, sizeof a), uv_strerror(uverr));
      return;
    }
    redcoll__log(3, "tcp rank %d: rank %d (%s) closed the connection before answering: %s, "
                    "connecting again", t->rank, q, redcoll__tcp_peer_addr(t, q, a, sizeof a),
                 uv_strerror(uverr));
    if (p->gone_after_ns == 0) p->gone_after_ns = uv_hrtime() + REDCOLL__TCP_GONE_NS;
    redcoll__tcp_retry_later(t, q);
    return;
  }
  if (q < 0 || (!c->ready && c->out)) {
    if (c->out && q >= 0 && c->auth_step != 0 && !c->abort_after_hello && !c->refused) {
      redcoll__tcp_conn_close(c);
      redcoll__tcp_auth_fail(
          t, q, "closed the connection during authentication (has it the same secret?)");
      return;
    }
    if (!c->out && c->auth_step != 0 && !c->refused)
      redcoll__log(1, "tcp rank %d: a connection claiming to be rank %d closed during "
                      "authentication", t->rank, c->claimed);
    redcoll__tcp_conn_close(c);
    return;
  }
  if (c->ctl_only) { /* carried no data: nothing depends on it */
    redcoll__tcp_conn_close(c);
    return;
  }
  if (c->bye && (uverr == UV_EOF || uverr == UV_ECONNRESET)) {
    /* Closed normally: only what uses this connection fails from now on.
     * (The connection of the other direction may still hold messages.) */
    if (!c->out && t->peers[q].rx != NULL)
      redcoll__log(0, "tcp rank %d: rank %d closed its communicator while this rank waits for "
                      "a message from it", t->rank, q);
    else
      redcoll__log(3, "tcp rank %d: rank %d closed its %s connection", t->rank, q,
                   c->out ? "incoming" : "outgoing");
    redcoll__tcp_conn_close(c);
    redcoll__tcp_peer_fail(t, q, REDCOLL_ETRANSPORT, c->out ? DIR_SEND : DIR_RECV);
    return;
  }
  redcoll__tcp_conn_close(c);
  redcoll__tcp_peer_fail(t, q, REDCOLL_ETRANSPORT, DIR_BOTH);
  redcoll__tcp_set_fatal(t, REDCOLL_ETRANSPORT, "lost the connection %s rank %d (%s): %s",
                         c->out ? "to" : "from", q, redcoll__tcp_peer_addr(t, q, a, sizeof a),
                         uv_strerror(uverr));
}

static void frame_arrived(redcoll__tcp_conn *c, const redcoll__tcp_frame *f) {
  redcoll__tcp *t = c->t;
  if (!c->out && c->peer < 0 && c->auth_step != 0 && f->type != REDCOLL__FR_AUTH) {
    redcoll__log(0,
                 "tcp rank %d: refused a connection claiming to be rank %d: it did not "
                 "authenticate (this rank has a secret)",
                 t->rank, c->claimed);
    redcoll__tcp_conn_refuse(c);
    return;
  }
  switch (f->type) {
  case REDCOLL__FR_AUTH:
    return redcoll__tcp_auth_frame(c, f);
  case REDCOLL__FR_HELLO: {
    const char *why = NULL;
    if (c->out) {
      /* The answer to this rank's HELLO: from the rank it called, of a
       * communicator of the same size; its payload decides. */
      if (c->answered || c->peer < 0) return redcoll__tcp_conn_proto(c, "unexpected HELLO");
      int q = redcoll__tcp_hello_check(f, t->rank, t->size, &why);
      if (q != c->peer)
        return redcoll__tcp_conn_proto(c, q < 0 ? why : "the answer to HELLO names another rank");
      c->astep = REDCOLL__ASTEP_HELLO;
      c->aneed = REDCOLL__TCP_HELLO_LEN;
      c->agot = 0;
      return;
    }
    if (c->peer >= 0 || c->auth_step != 0 || c->claimed >= 0)
      return redcoll__tcp_conn_proto(c, "unexpected HELLO");
    int q = redcoll__tcp_hello_check(f, t->rank, t->size, &why);
    if (q < 0) return redcoll__tcp_conn_proto(c, why);
    /* Its payload, the job id, decides (redcoll__tcp_hello_arrived). */
    c->claimed = q;
    c->astep = REDCOLL__ASTEP_HELLO;
    c->aneed = REDCOLL__TCP_HELLO_LEN;
    c->agot = 0;
    return;
  }
  case REDCOLL__FR_BYE:
    if (c->peer < 0 || f->tag >> REDCOLL__TCP_BYE_BITS != 0 || f->len != 0)
      return redcoll__tcp_conn_proto(c, "bad BYE");
    c->bye = 1;
    peer_said_bye(t, c->peer, f->tag);
    return;
  case REDCOLL__FR_ABORT:
    if (c->peer < 0 || f->len != 0) return redcoll__tcp_conn_proto(c, "bad ABORT");
    abort_learnt(t, "", c->peer, f->tag);
    return;
  case REDCOLL__FR_DATA:
    if (c->out || c->peer < 0 || c->ctl_only)
      return redcoll__tcp_conn_proto(c, "DATA on a wrong connection");
    c->have_frame = 1;
    c->fr = *f;
    /* Once broken (an ABORT may have come just before this frame in the
     * same read), nothing more is delivered. */
    if (t->fatal != REDCOLL_OK) {
      redcoll__tcp_conn_read_stop(c);
      return;
    }
    redcoll__tcp_try_match(t, c->peer);
    return;
  default:
    return redcoll__tcp_conn_proto(c, "unexpected frame type");
  }
}

/* Whether frames are still parsed: while nothing broke the communicator,
 * and while only a lost connection did, so that an ABORT or a BYE that
 * explains it is seen (data is no longer delivered then). */
static int listening(const redcoll__tcp *t) {
  return t->fatal == REDCOLL_OK || t->fatal == REDCOLL_ETRANSPORT;
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
void redcoll__tcp_rx_pump(redcoll__tcp_conn *c) {
  redcoll__tcp *t = c->t;
  while (!c->closing && redcoll__tcp_buffered(c) && listening(t)) {
    if (c->have_frame) {
      redcoll__tcp_try_match(t, c->peer);
      if (c->have_frame) break;
      continue;
    }
    if (c->rhi - c->rlo < REDCOLL__TCP_HDR) break;
    redcoll__tcp_frame f;
    if (redcoll__tcp_decode(c->rb + c->rlo, &f) != REDCOLL_OK) {
      redcoll__tcp_conn_proto(c, "malformed frame header");
      return;
    }
    c->rlo += REDCOLL__TCP_HDR;
    frame_arrived(c, &f);
    if (c->aneed > 0 && !c->closing) {
      /* Only set-up frames have a payload that is not a message. */
      redcoll__tcp_conn_proto(c, "set-up frame on an identified connection");
      return;
    }
  }
  if (c->closing || !redcoll__tcp_buffered(c)) return;
  if (c->lost != 0) {
    if (rx_stuck(c)) redcoll__tcp_conn_lost(c, c->lost);
    return;
  }
  if (!c->reading && listening(t) && (c->rlo > 0 || c->rhi < REDCOLL__TCP_RBUF))
    redcoll__tcp_conn_read_start(c);
}

static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *b) {
  redcoll__tcp_conn *c = s->data;
  redcoll__tcp *t = c->t;
  (void)b;
  int into_rb = c->into_rb;
  c->into_rb = 0;
  if (n == 0 || c->closing) return;
  if (n == UV_ENOBUFS) {
    redcoll__tcp_conn_read_stop(c);
    if (redcoll__tcp_buffered(c) && c->rb == NULL)
      redcoll__tcp_set_fatal(t, REDCOLL_ENOMEM, "no memory for the read buffer of rank %d",
                             c->peer);
    return;
  }
  if (n < 0) {
    if (redcoll__tcp_buffered(c) && !rx_stuck(c)) {
      /* The end, but frames before it wait in the buffer: deliver them
       * first (rx_pump reports it). */
      redcoll__tcp_conn_read_stop(c);
      c->lost = (int)n;
      return;
    }
    redcoll__tcp_conn_lost(c, (int)n);
    return;
  }
  if (c->refused) return;
  if (into_rb) {
    c->rhi += (size_t)n;
    redcoll__tcp_rx_pump(c);
    return;
  }
  if (c->aneed > 0) {
    c->agot += (size_t)n;
    if (c->agot < c->aneed) return;
    c->aneed = 0;
    if (c->astep == REDCOLL__ASTEP_HELLO) redcoll__tcp_hello_arrived(c);
    else redcoll__tcp_auth_arrived(c);
    return;
  }
  if (!c->have_frame) {
    c->hdr_got += (size_t)n;
    if (c->hdr_got < REDCOLL__TCP_HDR) return;
    c->hdr_got = 0;
    redcoll__tcp_frame f;
    if (redcoll__tcp_decode(c->hdr, &f) != REDCOLL_OK) {
      redcoll__tcp_conn_proto(c, "malformed frame header");
      return;
    }
    frame_arrived(c, &f);
    return;
  }
  redcoll__tcp_recv *r = t->peers[c->peer].rx;
  r->got += (size_t)n;
  if (r->got == r->len) recv_complete(t, c, r);
}
