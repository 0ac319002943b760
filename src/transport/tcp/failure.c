/* Failures as this rank records them: of the whole communicator (every
 * call fails from then on, the first reason is logged) or of one direction
 * to one peer (what needs it fails), and a peer's address for the
 * messages. */
#include <stdarg.h>
#include <stdlib.h>
#include <stdio.h>

#include "chan.h"
#include "failure.h"

const char *redcoll__tcp_peer_addr(redcoll__tcp *t, int q, char *buf, size_t len) {
  redcoll__tcp_addr_str(&t->peers[q].addr, buf, len);
  return buf;
}

/* Breaks every call of this rank with status; the first reason is logged. */
void redcoll__tcp_set_fatal(redcoll__tcp *t, int status, const char *fmt, ...) {
  /* The first reason stays, but a peer's abort or a failed
   * authentication explains a closed connection better than the closing
   * does: they take precedence. */
  if (t->fatal != REDCOLL_OK &&
      !((status == REDCOLL_EABORTED || status == REDCOLL_EPROTO) && t->fatal == REDCOLL_ETRANSPORT))
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

/* A peer's error: the first, unless a lost connection is explained better
 * by an abort or a failed authentication. */
static void set_err(int *err, int status) {
  if (*err == REDCOLL_OK ||
      (*err == REDCOLL_ETRANSPORT && (status == REDCOLL_EABORTED || status == REDCOLL_EPROTO)))
    *err = status;
}

/* Ends the receive posted on pc of peer q with status; the rest of a
 * payload being read into it is dropped. */
static void fail_recv(redcoll__tcp *t, int q, redcoll__tcp_pchan *pc, int status) {
  redcoll__tcp_recv *r = pc->rx;
  redcoll__tcp_conn *c = t->peers[q].in;
  redcoll__tcp_recv_drop_pre(t, r);
  if (c != NULL && c->sink_rx == r) {
    c->sink_rx = NULL;
    c->have_frame = 0;
    c->discard = r->len - r->got;
  }
  pc->rx = NULL;
  r->done = 1;
  r->status = status;
}

/* Ends the sends to q still waiting for its connection (all, or those of
 * channel group g) with status. */
static void fail_sends(redcoll__tcp *t, int q, int all, uint64_t g, int status) {
  redcoll__tcp_peer *p = &t->peers[q];
  redcoll__tcp_send **pp = &p->txq, *last = NULL;
  while (*pp != NULL) {
    redcoll__tcp_send *s = *pp;
    if (all || REDCOLL__TCP_GROUP_OF(s->chan) == g) {
      *pp = s->next;
      s->next = NULL;
      s->done = 1;
      s->status = status;
    } else {
      last = s;
      pp = &s->next;
    }
  }
  p->txq_tail = last;
}

/* A message from q still being read into pc's queue can never be whole now:
 * it goes (and so do the bytes it counted). */
static void drop_partial(redcoll__tcp *t, int q, redcoll__tcp_pchan *pc) {
  redcoll__tcp_umsg *m = pc->tail;
  if (m == NULL || m->got == m->len) return;
  redcoll__tcp_peer *p = &t->peers[q];
  if (p->in != NULL && p->in->sink_um == m) {
    p->in->sink_um = NULL;
    p->in->have_frame = 0;
  }
  redcoll__tcp_umsg **pp = &pc->head, *prev = NULL;
  while (*pp != m) {
    prev = *pp;
    pp = &(*pp)->next;
  }
  *pp = NULL;
  pc->tail = prev;
  p->unexpected -= m->len + REDCOLL__TCP_UMSG_COST;
  redcoll__tcp_umsg_free(t, m);
}

int redcoll__tcp_loss_status(const redcoll__tcp *t, int q) {
  return t->peers[q].left_aborted ? REDCOLL_EABORTED : REDCOLL_ETRANSPORT;
}

/* Makes one direction (or both) of peer q unusable: pending and later
 * operations that need it fail.  Messages already kept whole from it can
 * still be received, and a receive copying one goes on. */
void redcoll__tcp_peer_fail(redcoll__tcp *t, int q, int status, int dirs) {
  redcoll__tcp_peer *p = &t->peers[q];
  /* A peer that said it left after an abort: its connections end because
   * it left, and the abort is the cause to report. */
  if (status == REDCOLL_ETRANSPORT) status = redcoll__tcp_loss_status(t, q);
  if (dirs & DIR_SEND) {
    set_err(&p->err_send, status);
    fail_sends(t, q, 1, 0, status);
  }
  if (dirs & DIR_RECV) {
    set_err(&p->err_recv, status);
    for (redcoll__tcp_pchan *pc = p->chans; pc != NULL; pc = pc->next) {
      drop_partial(t, q, pc);
      if (pc->rx != NULL && !pc->rx->copying) fail_recv(t, q, pc, p->err_recv);
    }
  }
}

void redcoll__tcp_peer_left_aborted(redcoll__tcp *t, int q, int dirs) {
  uint64_t why;
  int from = redcoll__tcp_bye_abort(t->peers[q].bye_tag, &why);
  if (from < 0)
    redcoll__tcp_peer_lost(t, q, REDCOLL_EABORTED, dirs, "rank %d left after its communicator broke",
                           q);
  else if (((why >> 32) & 0xff) == 1)
    redcoll__tcp_peer_lost(t, q, REDCOLL_EABORTED, dirs,
                           "rank %d left after an abort: rank %d's authentication with rank %d "
                           "failed (not the same REDCOLL_SECRET?)",
                           q, from, (int)(why >> 40));
  else
    redcoll__tcp_peer_lost(t, q, REDCOLL_EABORTED, dirs,
                           "rank %d left after an abort: rank %d aborted with status %d (%s)", q,
                           from, (int)(int32_t)(uint32_t)why,
                           redcoll_status_name((int)(int32_t)(uint32_t)why));
}

void redcoll__tcp_peer_lost(redcoll__tcp *t, int q, int status, int dirs, const char *fmt, ...) {
  redcoll__tcp_peer *p = &t->peers[q];
  if (status == REDCOLL_ETRANSPORT && p->left_aborted) {
    redcoll__tcp_peer_left_aborted(t, q, dirs);
    return;
  }
  if (!p->lost_logged) {
    char msg[sizeof p->lost_why - 24];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    snprintf(p->lost_why, sizeof p->lost_why, "%s: %s", msg, redcoll_status_name(status));
    /* At level error when a call waits for the peer now; otherwise when
     * the first call meets it (redcoll__tcp_peer_why). */
    if (redcoll__tcp_peer_waited(t, q) || p->txq != NULL) redcoll__tcp_peer_why(t, q);
    else redcoll__log(2, "tcp rank %d: %s", t->rank, p->lost_why);
  }
  redcoll__tcp_peer_fail(t, q, status, dirs);
}

void redcoll__tcp_peer_why(redcoll__tcp *t, int q) {
  redcoll__tcp_peer *p = &t->peers[q];
  if (p->lost_logged || p->lost_why[0] == '\0') return;
  p->lost_logged = 1;
  char self[64];
  redcoll__tcp_addr_str(&t->self, self, sizeof self);
  redcoll__log(0, "tcp rank %d (%s): %s", t->rank, self, p->lost_why);
}

int redcoll__tcp_peer_waited(const redcoll__tcp *t, int q) {
  for (const redcoll__tcp_pchan *pc = t->peers[q].chans; pc != NULL; pc = pc->next)
    if (pc->rx != NULL && !pc->rx->copying) return 1;
  return 0;
}

void redcoll__tcp_group_fail(redcoll__tcp *t, uint64_t g, int status) {
  for (int q = 0; q < t->size; q++) {
    if (q == t->rank) continue;
    for (redcoll__tcp_pchan *pc = t->peers[q].chans; pc != NULL; pc = pc->next)
      if (pc->rx != NULL && REDCOLL__TCP_GROUP_OF(pc->chan) == g) fail_recv(t, q, pc, status);
    fail_sends(t, q, 0, g, status);
  }
}

uint64_t redcoll__tcp_bye_tag(const redcoll__tcp *t, int has_out) {
  uint64_t tag = has_out ? 1 : 0;
  /* Only an abort (sent or received) is news for the peer: a failure this
   * rank kept to itself (its own calls saw it) is not the peer's. */
  if (t->abort_from < 0) return tag;
  tag |= 2;
  uint64_t why = t->abort_why;
  tag |= (uint64_t)(t->abort_from & 0xffff) << 2;
  if ((why >> 32 & 0xff) == 1) tag |= (uint64_t)1 << 18 | (why >> 40 & 0xffff) << 19;
  tag |= (uint64_t)(uint16_t)(int16_t)(int32_t)(uint32_t)why << 35;
  return tag;
}

int redcoll__tcp_bye_abort(uint64_t tag, uint64_t *why) {
  int from = (int)(tag >> 2 & 0xffff);
  if (!(tag & 2) || from == 0xffff) return -1;
  *why = (uint64_t)(uint32_t)(int32_t)(int16_t)(uint16_t)(tag >> 35 & 0xffff);
  if (tag >> 18 & 1) *why |= (uint64_t)1 << 32 | (tag >> 19 & 0xffff) << 40;
  return from;
}
