/* Moving frames (progress.c): writing each peer's outbound queue from the
 * sends and control frames waiting for it, reading each inbound queue into
 * the posted receives or into messages kept for later, and the matching of
 * receives per (peer, channel).  Everything here runs with the impl's
 * mutex held. */
#ifndef REDCOLL_SHM_PROGRESS_H
#define REDCOLL_SHM_PROGRESS_H

#include "shm_int.h"

/* One pass over every peer: writes what fits, reads what has come, rings
 * the peers it gave work or room to.  Returns 1 if it moved anything. */
int redcoll__shm_progress(shm_impl *t);
/* Posts receive op: takes the first kept message of its (peer, channel),
 * or waits in the posted list. */
void redcoll__shm_post_recv(shm_impl *t, shm_op *op);
/* Queues send or control op behind the peer's other outbound frames. */
void redcoll__shm_post_send(shm_impl *t, shm_op *op);
/* Checks a large send's ack slot; completes op if the receiver is done. */
void redcoll__shm_check_ack(shm_impl *t, shm_op *op);
/* Why op cannot complete any more (REDCOLL_ETRANSPORT: the peer died, left,
 * closed the channel group or cut the queue), or REDCOLL_OK. */
int redcoll__shm_op_doomed(shm_impl *t, shm_op *op);
/* Withdraws an unfinished op with status: from the lists, from the frame
 * being read, from the ack slot (waiting for a copy in progress to end). */
void redcoll__shm_abandon(shm_impl *t, shm_op *op, int status);
/* Is channel group `group` in list v of n? */
int redcoll__shm_group_in(const uint64_t *v, size_t n, uint64_t group);
/* Appends group to *v (of *n); REDCOLL_OK or REDCOLL_ENOMEM. */
int redcoll__shm_group_add(uint64_t **v, size_t *n, uint64_t group);
/* Drops what this rank keeps for channel group `group` (closed). */
void redcoll__shm_drop_group(shm_impl *t, uint64_t group);
/* Frees everything kept (destroy). */
void redcoll__shm_drop_all(shm_impl *t);

#endif /* REDCOLL_SHM_PROGRESS_H */
