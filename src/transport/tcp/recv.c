/* The receiving side of a connection: its reads, the frames taken out of
 * them, and the DATA frames matched per (peer, channel) against the posted
 * receives (chan.c keeps what comes first).
 *
 * An identified incoming connection reads whatever the socket holds into
 * its buffer (REDCOLL__TCP_RBUF bytes), one read for header and payload of
 * a small message and for several messages that came together, checks each
 * header against the receive posted on its channel and copies the payload
 * out; the rest of a payload longer than that is read straight into the
 * caller's buffer.  A message whose receive is not posted yet is kept whole
 * for it, up to the peer's bound on kept bytes; past that the connection
 * stops reading (the kernel's buffers and TCP flow control hold the sender
 * back) until receives take what is kept.  Before a connection is
 * identified it reads exactly the bytes of each set-up frame (handshake.c
 * says what they mean), so that nothing of the messages after it lands in
 * the wrong place. */
#include <stdlib.h>

#include "conn.h"
#include "failure.h"
#include "handshake.h"
#include "recv.h"
#include "chan.h"
#include "send.h"
#include "wait.h"

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *b);
static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *b);
static void on_resume(uv_check_t *h);

/* c, if paused for a turn, reads on. */
static void resume_conn(redcoll__tcp_conn *c) {
  if (!c->paused) return;
  c->paused = 0;
  if (redcoll__tcp_buffered(c)) redcoll__tcp_rx_pump(c); /* reads on if it may */
  else redcoll__tcp_conn_read_start(c);
}

int redcoll__tcp_resume_init(redcoll__tcp *t) {
  if (uv_check_init(t->loop, &t->resume) != 0) return REDCOLL_ENOMEM;
  t->resume.data = t;
  uv_unref((uv_handle_t *)&t->resume);
  t->resume_init = 1;
  return REDCOLL_OK;
}

static void on_resume(uv_check_t *h) {
  redcoll__tcp *t = h->data;
  uv_check_stop(h);
  for (redcoll__tcp_conn *c = t->conns.next; c != &t->conns; c = c->next) resume_conn(c);
  t->resumed = 1;
}

/* A read of c (in the loop's poll phase) just ended a receive of at least
 * REDCOLL__TCP_PAUSE_MIN bytes: on the transport's own loop c reads
 * nothing more in this turn.  Only from on_read: the check phase of the
 * same turn must follow, for libuv drops from its epoll set a descriptor
 * that has an event while nobody reads it, and the leader's poll of the
 * loop's descriptor would then not see it. */
static void pause_turn(redcoll__tcp *t, redcoll__tcp_conn *c) {
  if (t->ext || !t->resume_init || !c->reading) return;
  redcoll__tcp_conn_read_stop(c);
  c->paused = 1;
  uv_check_start(&t->resume, on_resume);
}

void redcoll__tcp_conn_read_start(redcoll__tcp_conn *c) {
  if (c->reading || c->closing || c->paused) return;
  int r = uv_read_start((uv_stream_t *)&c->h, on_alloc, on_read);
  if (r != 0) {
    redcoll__tcp_peer_lost(c->t, c->peer, REDCOLL_ETRANSPORT, DIR_BOTH,
                           "cannot read from rank %d: %s", c->peer, uv_strerror(r));
    return;
  }
  c->reading = 1;
}

/* An identified incoming connection: it reads through its buffer. */
int redcoll__tcp_buffered(const redcoll__tcp_conn *c) {
  return !c->out && c->ready && c->peer >= 0;
}

/* The payload of c's frame is all there: the receive it was read into is
 * done, or the message kept for a later receive is whole (and handed to a
 * receive posted meanwhile). */
static void payload_done(redcoll__tcp *t, redcoll__tcp_conn *c) {
  int q = c->peer;
  c->have_frame = 0;
  if (c->sink_rx != NULL) {
    redcoll__tcp_recv *r = c->sink_rx;
    c->sink_rx = NULL;
    if (r->pre != NULL) {
      /* All in; what came before it is still being copied (copy_turn). */
      r->stream_done = 1;
      r->copying = 1;
      return;
    }
    redcoll__tcp_pchan *pc = redcoll__tcp_pchan_get(t, q, r->chan, 0);
    if (pc != NULL && pc->rx == r) pc->rx = NULL;
    r->done = 1;
    r->status = REDCOLL_OK;
    redcoll__tcp_pchan_tidy(t, q, pc);
    return;
  }
  c->sink_um = NULL;
  redcoll__tcp_pchan *pc = redcoll__tcp_pchan_get(t, q, c->fr.chan, 0);
  if (pc != NULL && redcoll__tcp_umsg_deliver(t, q, pc)) redcoll__tcp_pchan_tidy(t, q, pc);
}

/* Bytes of c's frame payload still to come, and where they go. */
static size_t payload_left(const redcoll__tcp_conn *c) {
  if (c->sink_rx != NULL) return c->sink_rx->len - c->sink_rx->got;
  if (c->sink_um != NULL) return c->sink_um->len - c->sink_um->got;
  return 0;
}

static unsigned char *payload_at(const redcoll__tcp_conn *c) {
  if (c->sink_rx != NULL) return (unsigned char *)c->sink_rx->buf + c->sink_rx->got;
  return c->sink_um->data + c->sink_um->got;
}

static void payload_took(redcoll__tcp *t, redcoll__tcp_conn *c, size_t n) {
  if (c->sink_rx != NULL) c->sink_rx->got += n;
  else c->sink_um->got += n;
  if (payload_left(c) == 0) payload_done(t, c);
}

/* The DATA header c->fr has been read: chooses where its payload goes --
 * the receive posted on its channel (nothing kept before it), a message
 * kept for a later receive, or nowhere (its communicator is gone or
 * cancelled here).  Returns 0 if it must wait: the bytes kept from the peer
 * are at their bound. */
static int data_sink(redcoll__tcp *t, redcoll__tcp_conn *c) {
  int q = c->peer;
  redcoll__tcp_peer *p = &t->peers[q];
  const redcoll__tcp_frame *f = &c->fr;
  const redcoll__tcp_group *gr = redcoll__tcp_group_get(t, REDCOLL__TCP_GROUP_OF(f->chan), 0);
  if (gr != NULL && (gr->closed || gr->cancelled || gr->broken)) {
    redcoll__log(3, "tcp rank %d: dropped %llu bytes from rank %d on channel %llu (its "
                    "communicator is %s here)", t->rank, (unsigned long long)f->len, q,
                 (unsigned long long)f->chan, gr->closed ? "destroyed" : "broken");
    c->have_frame = 0;
    c->discard = f->len;
    return 1;
  }
  redcoll__tcp_pchan *pc = redcoll__tcp_pchan_get(t, q, f->chan, 1);
  if (pc == NULL) goto nomem;
  redcoll__tcp_recv *r = pc->rx;
  if (r != NULL && !r->matched && pc->head == NULL) {
    if (f->tag != r->tag || f->len != r->len) {
      redcoll__log(0,
                   "tcp rank %d: message from rank %d on channel %llu has tag %#llx and %llu "
                   "bytes, the receive expects tag %#llx and %zu bytes",
                   t->rank, q, (unsigned long long)f->chan, (unsigned long long)f->tag,
                   (unsigned long long)f->len, (unsigned long long)r->tag, r->len);
      r->done = 1;
      r->status = REDCOLL_EMISMATCH;
      pc->rx = NULL;
      redcoll__tcp_chan_broken(t, f->chan);
      c->have_frame = 0;
      c->discard = f->len; /* the channel is out of step: its communicator fails */
      return 1;
    }
    r->matched = 1;
    c->sink_rx = r;
  } else {
    /* At the bound the connection waits for receives to take some; once it
     * has ended (lost), what is left in its buffer is all there is, and is
     * kept. */
    uint64_t need = f->len + REDCOLL__TCP_UMSG_COST;
    if (p->unexpected > 0 && c->lost == 0 &&
        (f->len > t->unexpected_max || need > t->unexpected_max - p->unexpected ||
         p->unexpected > t->unexpected_max))
      return 0;
    if (f->len > SIZE_MAX - sizeof(redcoll__tcp_umsg)) goto nomem;
    c->sink_um = redcoll__tcp_umsg_push(t, q, pc, f->tag, (size_t)f->len);
    if (c->sink_um == NULL) goto nomem;
    if (redcoll__tcp_chan_kept(t, q, f->chan, f->tag))
      redcoll__tcp_group_fail(t, REDCOLL__TCP_GROUP_OF(f->chan), REDCOLL_EMISMATCH);
  }
  if (f->len == 0) payload_done(t, c);
  return 1;
nomem:
  /* That peer's stream cannot go on here; the others are not affected. */
  redcoll__tcp_conn_read_stop(c);
  redcoll__tcp_peer_lost(t, q, REDCOLL_ENOMEM, DIR_RECV,
                         "no memory to keep a message of %llu bytes from rank %d",
                         (unsigned long long)f->len, q);
  return 0;
}

/* The receive r (posted on peer q's channel r->chan) ends before its
 * message did: the rest of a payload being read into it is dropped. */
void redcoll__tcp_recv_withdraw(redcoll__tcp *t, redcoll__tcp_recv *r) {
  redcoll__tcp_peer *p = &t->peers[r->src];
  redcoll__tcp_conn *c = p->in;
  redcoll__tcp_recv_drop_pre(t, r);
  if (c != NULL && c->sink_rx == r) {
    c->sink_rx = NULL;
    c->have_frame = 0;
    c->discard = r->len - r->got;
  }
  redcoll__tcp_pchan *pc = redcoll__tcp_pchan_get(t, r->src, r->chan, 0);
  if (pc != NULL && pc->rx == r) {
    pc->rx = NULL;
    redcoll__tcp_pchan_tidy(t, r->src, pc);
  }
  r->done = 1;
  if (c != NULL) redcoll__tcp_rx_pump(c);
}

/* The receive r was posted on peer q's channel while the message it takes
 * is still arriving into a kept copy (pc's only one, the connection's
 * current payload): what came so far is copied to the caller's buffer, the
 * kept copy is dropped, and the rest is read straight into the buffer.  So
 * a large message whose receive is posted a little late is copied once
 * more only for the bytes that came before it, not whole.  On the
 * program's loop, past REDCOLL__TCP_EXT_COPY bytes, r keeps them (r->pre)
 * and copies them in slices, one per turn (copy_turn), while the rest
 * arrives.  Returns 1 if r took it over. */
int redcoll__tcp_recv_adopt(redcoll__tcp *t, redcoll__tcp_recv *r, redcoll__tcp_pchan *pc) {
  redcoll__tcp_peer *p = &t->peers[r->src];
  redcoll__tcp_conn *c = p->in;
  redcoll__tcp_umsg *m = pc->head;
  if (c == NULL || m == NULL || c->sink_um != m || m->next != NULL || m->got >= m->len ||
      m->tag != r->tag || m->len != r->len || c->fr.chan != pc->chan)
    return 0;
  r->got = m->got;
  r->matched = 1;
  pc->head = pc->tail = NULL;
  p->unexpected -= m->len + REDCOLL__TCP_UMSG_COST;
  if (t->ext && m->got > REDCOLL__TCP_EXT_COPY) {
    r->pre = m;
    r->pre_len = m->got;
    r->pre_got = 0;
    t->copy_hint = 1;
    redcoll__tcp_ext_soon(t);
  } else {
    if (m->got > 0) memcpy(r->buf, m->data, m->got);
    t->kept_copied += m->got;
    redcoll__tcp_umsg_free(t, m);
  }
  c->sink_um = NULL;
  c->sink_rx = r;
  return 1;
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *b) {
  redcoll__tcp_conn *c = h->data;
  (void)suggested;
  c->into_rb = 0;
  if (redcoll__tcp_buffered(c)) {
    if (c->have_frame && c->discard == 0 && payload_left(c) > 0 && c->rlo == c->rhi) {
      /* The rest of a payload whose place is known: straight there. */
      size_t left = payload_left(c);
      if (left > ((size_t)1 << 30)) left = (size_t)1 << 30;
      if (c->t->ext && left > REDCOLL__TCP_EXT_READ) left = REDCOLL__TCP_EXT_READ;
      b->base = (char *)payload_at(c);
      b->len = left;
      return;
    }
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
  if (c->aneed > 0) { /* an authentication payload: exactly its bytes */
    b->base = (char *)c->abuf + c->agot;
    b->len = c->aneed - c->agot;
    return;
  }
  /* Exactly the rest of the header: never read past it into what follows
   * the set-up. */
  b->base = (char *)c->hdr + c->hdr_got;
  b->len = REDCOLL__TCP_HDR - c->hdr_got;
}

/* Rank `from` gave up on the communicator of channel group g (a CANCEL
 * frame, or a BYE that says so, told by `via`), with an ABORT tag's why:
 * the calls on its channels end with REDCOLL_EABORTED, and the reason is
 * logged. */
void redcoll__tcp_cancel_learnt(redcoll__tcp *t, const char *via, int from, uint64_t g,
                                uint64_t why) {
  redcoll__tcp_group *gr = redcoll__tcp_group_get(t, g, 1);
  if (t->abort_from < 0) {
    t->abort_from = from;
    t->abort_why = why;
  }
  if (gr == NULL || gr->cancelled) return;
  gr->cancelled = REDCOLL_EABORTED;
  gr->from = from;
  gr->why = why;
  int st = (int)(int32_t)(uint32_t)why;
  if (((why >> 32) & 0xff) == 1)
    redcoll__log(0,
                 "tcp rank %d: %srank %d aborted the communicator of channel %llu: its "
                 "authentication with rank %d failed (not the same REDCOLL_SECRET?)",
                 t->rank, via, from, (unsigned long long)g, (int)(why >> 40));
  else
    redcoll__log(2, "tcp rank %d: %srank %d aborted the communicator of channel %llu with status "
                    "%d (%s)", t->rank, via, from, (unsigned long long)g, st,
                 redcoll_status_name(st));
  redcoll__tcp_group_fail(t, g, REDCOLL_EABORTED);
  redcoll__tcp_pump_all(t); /* a frame of the group waiting for room is dropped now */
}

void redcoll__tcp_pump_all(redcoll__tcp *t) {
  for (int q = 0; q < t->size; q++)
    if (q != t->rank && t->peers[q].in != NULL) redcoll__tcp_rx_pump(t->peers[q].in);
}

/* Rank q said goodbye (BYE, redcoll__tcp_bye_tag): whether its data
 * connection to this rank is still open, and whether it left after an
 * abort, and whose. */
static void peer_said_bye(redcoll__tcp *t, int q, uint64_t tag) {
  redcoll__tcp_peer *p = &t->peers[q];
  int has_out = (int)(tag & 1);
  p->said_bye = 1;
  if (tag & 2) {
    /* It left after an abort (its own or one it was told of, perhaps on
     * another communicator): the reason to report for whatever needs it,
     * not its leaving.  Its messages still on their way are delivered
     * first: receives fail only once its data connection ends. */
    p->left_aborted = 1;
    p->bye_tag = tag;
    redcoll__tcp_peer_left_aborted(t, q, has_out || p->in != NULL ? DIR_SEND : DIR_BOTH);
    return;
  }
  if (!has_out && p->in == NULL) {
    if (redcoll__tcp_peer_waited(t, q))
      redcoll__log(0, "tcp rank %d: rank %d closed its communicator while this rank waits for "
                      "a message from it", t->rank, q);
    redcoll__tcp_peer_fail(t, q, REDCOLL_ETRANSPORT, DIR_RECV);
  }
}

/* Rank q destroyed its communicator of channel group g: nothing more comes
 * from it there, after what has come. */
static void peer_closed_group(redcoll__tcp *t, int q, uint64_t g) {
  redcoll__tcp_peer_closed(t, q, g);
  for (redcoll__tcp_pchan *pc = t->peers[q].chans; pc != NULL; pc = pc->next) {
    redcoll__tcp_recv *r = pc->rx;
    if (REDCOLL__TCP_GROUP_OF(pc->chan) != g || r == NULL || r->matched || pc->head != NULL)
      continue;
    redcoll__log(0, "tcp rank %d: rank %d destroyed the communicator of channel %llu while this "
                    "rank waits for a message from it there", t->rank, q, (unsigned long long)g);
    pc->rx = NULL;
    r->done = 1;
    r->status = redcoll__tcp_loss_status(t, q);
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
      redcoll__tcp_peer_lost(t, q, REDCOLL_ETRANSPORT, DIR_SEND,
                             "rank %d (%s) closed the connection: %s", q,
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
      int data = t->peers[q].out == c;
      redcoll__tcp_conn_close(c);
      if (!t->peers[q].said_bye)
        redcoll__tcp_auth_fail(
            t, q, "closed the connection during authentication (has it the same secret?)");
      else if (data) /* it left: not the secret's fault */
        redcoll__tcp_peer_lost(t, q, REDCOLL_ETRANSPORT, DIR_SEND,
                               "rank %d (%s) left while this rank's connection was being set up",
                               q, redcoll__tcp_peer_addr(t, q, a, sizeof a));
      return;
    }
    int claimed = !c->out && c->auth_step != 0 && !c->refused ? c->claimed : -1;
    redcoll__tcp_conn_close(c);
    if (claimed < 0) return;
    redcoll__tcp_peer *p = &t->peers[claimed];
    if (p->said_bye && p->in == NULL) {
      /* Its data connection, which its goodbye said to read, ended before
       * it was set up: nothing comes from it. */
      redcoll__log(3, "tcp rank %d: rank %d left while its connection was being set up",
                   t->rank, claimed);
      redcoll__tcp_peer_fail(t, claimed, REDCOLL_ETRANSPORT, DIR_RECV);
    } else {
      redcoll__log(1, "tcp rank %d: a connection claiming to be rank %d closed during "
                      "authentication", t->rank, claimed);
    }
    return;
  }
  if (c->ctl_only) { /* carried no data: nothing depends on it */
    redcoll__tcp_conn_close(c);
    return;
  }
  if (c->bye && (uverr == UV_EOF || uverr == UV_ECONNRESET)) {
    /* Closed normally: only what uses this connection fails from now on.
     * (The connection of the other direction may still hold messages.) */
    if (!c->out && redcoll__tcp_peer_waited(t, q))
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
  redcoll__tcp_peer_lost(t, q, REDCOLL_ETRANSPORT, DIR_BOTH,
                         "lost the connection %s rank %d (%s): %s", c->out ? "to" : "from", q,
                         redcoll__tcp_peer_addr(t, q, a, sizeof a), uv_strerror(uverr));
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
  case REDCOLL__FR_CANCEL:
    if (c->peer < 0 || f->len != 0 || REDCOLL__TCP_GROUP_OF(f->chan) != f->chan)
      return redcoll__tcp_conn_proto(c, "bad CANCEL");
    redcoll__tcp_cancel_learnt(t, "", c->peer, f->chan, f->tag);
    return;
  case REDCOLL__FR_CLOSE:
    if (c->peer < 0 || f->len != 0 || f->tag != 0 || REDCOLL__TCP_GROUP_OF(f->chan) != f->chan)
      return redcoll__tcp_conn_proto(c, "bad CLOSE");
    peer_closed_group(t, c->peer, f->chan);
    return;
  case REDCOLL__FR_DATA:
    if (c->out || c->peer < 0 || c->ctl_only)
      return redcoll__tcp_conn_proto(c, "DATA on a wrong connection");
    c->have_frame = 1;
    c->fr = *f;
    return; /* rx_pump chooses where its payload goes */
  default:
    return redcoll__tcp_conn_proto(c, "unexpected frame type");
  }
}

/* Whether frames are still parsed: while nothing broke the whole
 * transport, and while only a lost connection did, so that a CANCEL or a
 * BYE that explains it is seen. */
static int listening(const redcoll__tcp *t) {
  return t->fatal == REDCOLL_OK || t->fatal == REDCOLL_ETRANSPORT;
}

/* Nothing more can be taken from c's buffer without reading more (or,
 * for a payload waiting for room among the kept messages, without a
 * receive taking some). */
static int rx_stuck(redcoll__tcp_conn *c) {
  size_t avail = c->rhi - c->rlo;
  if (c->discard > 0) return avail == 0;
  if (!c->have_frame) return avail < REDCOLL__TCP_HDR;
  if (c->sink_rx == NULL && c->sink_um == NULL) return c->lost == 0;
  return avail == 0;
}

/* Takes what the buffered connection c holds: frames, and payloads into
 * their receive or kept message.  Then reads on if there is room, or
 * reports the end of the connection once nothing more can be taken. */
void redcoll__tcp_rx_pump(redcoll__tcp_conn *c) {
  redcoll__tcp *t = c->t;
  while (!c->closing && redcoll__tcp_buffered(c) && listening(t)) {
    size_t avail = c->rhi - c->rlo;
    if (c->discard > 0) {
      size_t n = avail < c->discard ? avail : (size_t)c->discard;
      c->rlo += n;
      c->discard -= n;
      if (c->discard > 0) break;
      continue;
    }
    if (c->have_frame) {
      if (c->sink_rx == NULL && c->sink_um == NULL && !data_sink(t, c)) break;
      if (!c->have_frame || c->discard > 0) continue;
      size_t left = payload_left(c), n = avail < left ? avail : left;
      if (n > 0) {
        memcpy(payload_at(c), c->rb + c->rlo, n);
        c->rlo += n;
        payload_took(t, c, n);
      }
      if (c->have_frame) break;
      continue;
    }
    if (avail < REDCOLL__TCP_HDR) break;
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

/* The next slice of what r took over came before it (r->pre); 1 if r is
 * done now. */
static int pre_slice(redcoll__tcp *t, redcoll__tcp_pchan *pc, redcoll__tcp_recv *r) {
  size_t n = r->pre_len - r->pre_got;
  if (n > REDCOLL__TCP_EXT_COPY) n = REDCOLL__TCP_EXT_COPY;
  memcpy((unsigned char *)r->buf + r->pre_got, r->pre->data + r->pre_got, n);
  r->pre_got += n;
  t->kept_copied += n;
  if (r->pre_got < r->pre_len) return 0;
  redcoll__tcp_recv_drop_pre(t, r);
  if (!r->stream_done) return 0; /* the rest is still arriving */
  pc->rx = NULL;
  r->copying = 0;
  r->done = 1;
  r->status = REDCOLL_OK;
  return 1;
}

/* The receives copying a kept message, or what came of a message before
 * they took it over, take their next slice; one whose copy is done may
 * make room among its peer's kept messages. */
static void copy_turn(redcoll__tcp *t) {
  if (!t->copy_hint) return;
  t->copy_hint = 0;
  for (int q = 0; q < t->size; q++) {
    redcoll__tcp_peer *p = &t->peers[q];
    int took = 0;
    for (redcoll__tcp_pchan *pc = p->chans, *next; pc != NULL; pc = next) {
      next = pc->next;
      redcoll__tcp_recv *r = pc->rx;
      if (r == NULL || (!r->copying && r->pre == NULL)) continue;
      if (r->pre != NULL ? pre_slice(t, pc, r) : redcoll__tcp_umsg_deliver(t, q, pc)) {
        redcoll__tcp_pchan_tidy(t, q, pc);
        took = 1;
      } else if (r->copying || r->pre != NULL) {
        t->copy_hint = 1;
      }
    }
    if (t->copy_hint) redcoll__tcp_ext_soon(t);
    if (took && p->in != NULL) redcoll__tcp_rx_pump(p->in);
  }
}

void redcoll__tcp_ext_turn(redcoll__tcp *t) {
  for (redcoll__tcp_conn *c = t->conns.next; c != &t->conns; c = c->next) {
    c->turn_bytes = 0;
    redcoll__tcp_send_piece(c);
    resume_conn(c);
  }
  copy_turn(t);
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
    if (redcoll__tcp_buffered(c)) {
      /* The end: what the buffer still holds (the messages and the BYE
       * sent before it) is taken first, then rx_pump reports it. */
      redcoll__tcp_conn_read_stop(c);
      c->lost = (int)n;
      redcoll__tcp_rx_pump(c);
      return;
    }
    redcoll__tcp_conn_lost(c, (int)n);
    return;
  }
  if (c->refused) return;
  if (t->ext && (c->turn_bytes += (size_t)n) >= REDCOLL__TCP_EXT_TURN && c->reading) {
    /* Enough for this turn of the program's loop (redcoll__tcp_ext_turn
     * reads on in the next). */
    redcoll__tcp_conn_read_stop(c);
    c->paused = 1;
  }
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
  if (redcoll__tcp_buffered(c)) {
    /* Straight into a payload (on_alloc). */
    int ends_big = c->sink_rx != NULL && c->sink_rx->len >= REDCOLL__TCP_PAUSE_MIN &&
                   payload_left(c) == (size_t)n;
    payload_took(t, c, (size_t)n);
    if (ends_big) pause_turn(t, c);
    if (!c->have_frame) redcoll__tcp_rx_pump(c);
    return;
  }
  c->hdr_got += (size_t)n;
  if (c->hdr_got < REDCOLL__TCP_HDR) return;
  c->hdr_got = 0;
  redcoll__tcp_frame f;
  if (redcoll__tcp_decode(c->hdr, &f) != REDCOLL_OK) {
    redcoll__tcp_conn_proto(c, "malformed frame header");
    return;
  }
  frame_arrived(c, &f);
}
