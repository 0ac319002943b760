/* Failures of the communicator and of a peer (failure.c). */
#ifndef REDCOLL_TCP_FAILURE_H
#define REDCOLL_TCP_FAILURE_H

#include "tcp_int.h"

/* Peer q's address as text, into buf. */
const char *redcoll__tcp_peer_addr(redcoll__tcp *t, int q, char *buf, size_t len);
/* Breaks every call of this rank with status; the first reason is logged
 * (a peer's abort takes precedence over a closed connection). */
void redcoll__tcp_set_fatal(redcoll__tcp *t, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Makes one direction (or both) of peer q unusable: pending and later
 * operations that need it fail. */
enum { DIR_SEND = 1, DIR_RECV = 2, DIR_BOTH = 3 };
void redcoll__tcp_peer_fail(redcoll__tcp *t, int q, int status, int dirs);
/* The same for a peer lost (gone, unreachable, or left after an abort),
 * with the reason logged the first time: calls that need q fail, the
 * other channels and peers go on. */
void redcoll__tcp_peer_lost(redcoll__tcp *t, int q, int status, int dirs, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
/* Peer q said it left after an abort (its BYE's tag in bye_tag): the
 * directions dirs fail with REDCOLL_EABORTED and the abort as the reason.
 * A connection of such a peer that ends later, in whatever way, is
 * reported the same (peer_fail and peer_lost turn ETRANSPORT into this). */
void redcoll__tcp_peer_left_aborted(redcoll__tcp *t, int q, int dirs);
/* The status of an operation with peer q that its connection's end broke:
 * REDCOLL_EABORTED once q said it left after an abort, else
 * REDCOLL_ETRANSPORT. */
int redcoll__tcp_loss_status(const redcoll__tcp *t, int q);
/* Logs (once, at level error) why peer q was lost, if it was: for the first
 * call that needs it. */
void redcoll__tcp_peer_why(redcoll__tcp *t, int q);
/* Whether a receive from peer q is posted. */
int redcoll__tcp_peer_waited(const redcoll__tcp *t, int q);
/* Ends every call on channel group g with status (a cancel). */
void redcoll__tcp_group_fail(redcoll__tcp *t, uint64_t g, int status);

/* The tag of this rank's BYE (wire.h): has_out, and the abort it left
 * after (its own or one it was told of), if any. */
uint64_t redcoll__tcp_bye_tag(const redcoll__tcp *t, int has_out);
/* The abort a BYE's tag says its sender left after: the aborting rank,
 * with *why as an ABORT frame's tag; -1 if none or not known. */
int redcoll__tcp_bye_abort(uint64_t tag, uint64_t *why);

#endif /* REDCOLL_TCP_FAILURE_H */
