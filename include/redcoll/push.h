/*
 * The push transport: redcoll over connections the program already has.
 *
 * The program gives one function that transmits an opaque message to a
 * rank, and hands every such message that arrives to redcoll_push_deliver,
 * from any of its threads.  redcoll does the rest: framing (a 32-byte
 * header in front of each message), matching per (peer, communicator),
 * keeping messages that arrive before their receive (bounded), deadlines,
 * and telling peers of an abort.  docs/embedding.md has a runnable example,
 * and examples/zmq_allreduce.c runs it over ZeroMQ.
 *
 * Threads: collectives and redcoll_push_deliver may be called from any
 * threads at once (a communicator's own collectives from one thread at a
 * time, as everywhere).  Nonblocking collectives move on inside
 * redcoll_push_deliver (their next messages are sent from the delivering
 * thread) and inside redcoll_test, redcoll_wait and redcoll_comm_progress.
 */
#ifndef REDCOLL_PUSH_H
#define REDCOLL_PUSH_H

#include "redcoll.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Transmits len bytes of msg to rank dst, in order with the earlier
 * messages to dst; must not block for long and must not call redcoll
 * (copy the message, or hand it to a socket that copies).  msg is valid
 * during the call only.  Returns 0, or a negative redcoll status if dst
 * cannot be reached (REDCOLL_ETRANSPORT), which fails the call that sent. */
typedef int (*redcoll_push_send_fn)(void *ctx, int dst, const void *msg, size_t len);

typedef struct redcoll_push_config {
  /* sizeof(redcoll_push_config): lets the struct grow.  Zero it first. */
  size_t struct_size;
  int rank, size;
  redcoll_push_send_fn send; /* required */
  void *send_ctx;
  /* Bytes of early messages kept for receives not posted yet, per peer,
   * plus 64 bytes of cost per message; 0: 64 MiB.  A peer past the bound
   * fails the communicator its message is for with REDCOLL_ENOMEM. */
  size_t unexpected_max;
  /* The longest any call waits for a peer, in ms; 0: 60000;
   * REDCOLL_WAIT_FOREVER: no bound.  Collectives' own deadlines
   * (redcoll_comm_set_deadline) apply too. */
  uint64_t wait_timeout_ms;
} redcoll_push_config;

/* Makes the communicator of all size ranks over the program's messages:
 * every rank calls it with its rank; nothing is sent.  dup, split and
 * create_group work on it. */
REDCOLL_API int redcoll_push_comm_create(const redcoll_push_config *cfg, redcoll_comm **out);

/* A message from rank src arrived: c is any communicator of the transport
 * object (the one redcoll_push_comm_create made, or one made from it).
 * The message is copied or consumed during the call.  Returns REDCOLL_OK;
 * REDCOLL_EPROTO for a message that is not redcoll's or does not come from
 * src (dropped; nothing else changes); REDCOLL_EINVAL for bad arguments.
 * A message for a destroyed communicator is dropped. */
REDCOLL_API int redcoll_push_deliver(redcoll_comm *c, int src, const void *msg, size_t len);

/* The program lost rank peer (its connection closed, its process died):
 * calls waiting for it, now and later, fail with REDCOLL_ETRANSPORT. */
REDCOLL_API int redcoll_push_peer_lost(redcoll_comm *c, int peer);

#ifdef __cplusplus
}
#endif
#endif /* REDCOLL_PUSH_H */
