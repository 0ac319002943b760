/* Failures as this rank records them: of the whole communicator (every
 * call fails from then on, the first reason is logged) or of one direction
 * to one peer (what needs it fails), and a peer's address for the
 * messages. */
#include <stdarg.h>
#include <stdio.h>

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

/* Makes one direction (or both) of peer q unusable: pending and later
 * operations that need it fail. */
void redcoll__tcp_peer_fail(redcoll__tcp *t, int q, int status, int dirs) {
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
