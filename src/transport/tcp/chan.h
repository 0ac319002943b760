/* Channels as this rank keeps them (chan.c): a peer's channels with the
 * messages that came before their receive, and what happened to channel
 * groups (cancelled by a rank, closed by a peer or here). */
#ifndef REDCOLL_TCP_CHAN_H
#define REDCOLL_TCP_CHAN_H

#include "redcoll/transport.h"
#include "tcp_int.h"

#define REDCOLL__TCP_GROUP_OF(ch) ((ch) & ~(uint64_t)(REDCOLL_TRANSPORT_CHANNEL_GROUP - 1))

/* Peer q's record of channel chan, made if need be (NULL: no memory; make
 * 0: not there). */
redcoll__tcp_pchan *redcoll__tcp_pchan_get(redcoll__tcp *t, int q, uint64_t chan, int make);
/* Frees pc if it keeps nothing and no receive is posted on it. */
void redcoll__tcp_pchan_tidy(redcoll__tcp *t, int q, redcoll__tcp_pchan *pc);
/* Frees every record of peer q (destroy). */
void redcoll__tcp_pchan_free_all(redcoll__tcp *t, int q);

/* A message of len bytes kept on pc for a later receive, its payload still
 * to be filled (got 0); NULL without memory. */
redcoll__tcp_umsg *redcoll__tcp_umsg_push(redcoll__tcp *t, int q, redcoll__tcp_pchan *pc,
                                          uint64_t tag, size_t len);
/* Gives back a kept message's buffer: kept as a spare if large, else
 * freed (t->mu held).  And every spare, at destroy. */
void redcoll__tcp_umsg_free(redcoll__tcp *t, redcoll__tcp_umsg *m);
void redcoll__tcp_spares_free(redcoll__tcp *t);
/* The bytes the n spares hold together (their caps). */
size_t redcoll__tcp_spares_held(redcoll__tcp_umsg *const *spare, int n);
/* Where a freed buffer of cap bytes goes among the n spares: a free slot
 * if their sum stays within REDCOLL__TCP_SPARE_BYTES, else the slot of the
 * smallest spare if that is smaller than cap and the sum without it fits;
 * -1: freed (also for a cap outside REDCOLL__TCP_SPARE_MIN .. MAX).  Pure,
 * for the unit tests. */
int redcoll__tcp_spare_slot(redcoll__tcp_umsg *const *spare, int n, size_t cap);
/* Frees the bytes of a message that receive r took over while it arrived
 * (r->pre, recv.c), once copied or when r ends first. */
void redcoll__tcp_recv_drop_pre(redcoll__tcp *t, redcoll__tcp_recv *r);
/* Hands pc's first kept message, if it is whole, to the receive posted on
 * pc: done, or REDCOLL_EMISMATCH if its tag or length differ.  Returns 1
 * if the receive is done.  On the program's loop a message longer than
 * REDCOLL__TCP_EXT_COPY is copied one slice per call (the receive is then
 * copying, and redcoll__tcp_ext_turn calls again each turn); a receive
 * that ends before (withdrawn, failed) leaves the message first on pc for
 * the next. */
int redcoll__tcp_umsg_deliver(redcoll__tcp *t, int q, redcoll__tcp_pchan *pc);

/* The record of channel group g (make 0: NULL if none), found through a
 * hash index: a record is kept for every group something happened to, one
 * per communicator destroyed, so lookups must not walk them all. */
redcoll__tcp_group *redcoll__tcp_group_get(redcoll__tcp *t, uint64_t g, int make);
/* Why calls on channel chan fail now: REDCOLL_EABORTED if its group was
 * cancelled, REDCOLL_EMISMATCH if a message on it did not match, else
 * REDCOLL_OK. */
int redcoll__tcp_chan_status(redcoll__tcp *t, uint64_t chan);
/* A receive with tag is posted on chan inside a collective: if it is the
 * first with that tag, the messages kept on chan from every peer are
 * checked against it, and one whose tag says the same collective number
 * but another call (redcoll_transport_tags_conflict: the ranks disagree
 * where their messages may never meet) breaks the group (the caller fails
 * its calls): REDCOLL_EMISMATCH, else REDCOLL_OK. */
int redcoll__tcp_chan_enter(redcoll__tcp *t, uint64_t chan, uint64_t tag, uint64_t coll);
/* A send of collective number coll is posted on chan. */
void redcoll__tcp_chan_sent(redcoll__tcp *t, uint64_t chan, uint64_t coll);
/* A message with tag from peer q is kept on chan: the same check against
 * the group's last receive inside a collective, while this rank is still
 * in that receive's collective; 1 if the group broke. */
int redcoll__tcp_chan_kept(redcoll__tcp *t, int q, uint64_t chan, uint64_t tag);
/* A message on chan did not match its receive: the group is out of step. */
void redcoll__tcp_chan_broken(redcoll__tcp *t, uint64_t chan);
/* Peer q closed channel group g / has it closed it. */
void redcoll__tcp_peer_closed(redcoll__tcp *t, int q, uint64_t g);
int redcoll__tcp_peer_has_closed(redcoll__tcp *t, int q, uint64_t g);
/* Frees every record of a group (destroy). */
void redcoll__tcp_groups_free(redcoll__tcp *t);

#endif /* REDCOLL_TCP_CHAN_H */
