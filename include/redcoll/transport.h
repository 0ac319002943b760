/*
 * The transport vtable: how redcoll moves bytes.  Bring your own by filling
 * a redcoll_transport_ops and passing it with your state to
 * redcoll_comm_create().  docs/transports.md walks through an example.
 *
 * Versions.  Version 3 is what a blocking transport implements (version 4,
 * REDCOLL_TRANSPORT_VERSION, adds posted exchanges, below): one full-duplex member, exchange, instead of send, recv and
 * sendrecv; a context with every call that carries the collective's
 * deadline (the core measures it, on the transport's clock); and an info
 * member through which the transport names itself and proposes its default
 * cost model.  Structs of versions 1 and 2 are still accepted and driven
 * through their send, recv and sendrecv members.
 *
 * Channels.  Several communicators can share one transport object
 * (redcoll_comm_dup, redcoll_comm_split, redcoll_comm_create_group): each
 * uses channels of its own, and every exchange names its channel in the
 * context.  A transport that matches messages per (peer, channel) says so
 * with REDCOLL_TRANSPORT_CAP_CHANNELS and has the members cancel and close;
 * one that does not (versions 1 and 2, and version 3 without the bit)
 * carries only channel 0, and dup, split and create_group on it return
 * REDCOLL_ENOTSUP.
 *
 * Threading: without REDCOLL_TRANSPORT_CAP_THREADS the core calls a
 * transport from one thread at a time for the same impl: the program must
 * not run collectives on two communicators of one transport object at
 * once.  With it, calls on different channels may come at the same time
 * from different threads, and abort and cancel may come from any thread
 * while another waits in exchange.  Members must not call back into
 * redcoll.
 *
 * Errors: members return REDCOLL_OK or a negative redcoll status.  After any
 * error the core considers the communicator broken and calls no member but
 * abort (if present) and destroy.
 *
 * Posted exchanges (version 4).  A transport that can start an exchange and
 * finish it later offers post and progress (and, if it can, fd): the core
 * runs nonblocking collectives (redcoll_iallreduce, ...) through them, and
 * blocking ones through exchange as before.  On a transport without them a
 * nonblocking collective runs to its end inside the call that starts it.
 */
#ifndef REDCOLL_TRANSPORT_H
#define REDCOLL_TRANSPORT_H

#include "redcoll.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Version 2 added set_timeout, version 3 info, now and exchange, version 4
 * post, progress and fd.  The core reads no member past the last one of the
 * struct's version. */
#define REDCOLL_TRANSPORT_VERSION 4

/* What a version 3 transport says about itself (the info member). */
typedef struct redcoll_transport_info {
  /* Its name, at most 15 characters ("" for none): the entry of a tuning
   * file that applies to it (redcoll-tune writes them), and the name in
   * logs. */
  char name[16];
  /* The cost model AUTO starts from unless the application, the
   * environment or a tuning file sets one (redcoll_comm_set_cost_model):
   * alpha seconds per message, beta per byte sent, gamma per byte reduced.
   * All 0: the library's default, a commodity cluster. */
  double alpha, beta, gamma;
  /* How many ranks share one CPU on the busiest host, the same number on
   * every rank (redcoll_comm_set_ranks_per_cpu); 0 or 1: none, or unknown. */
  double ranks_per_cpu;
  /* Capabilities beyond the required members: REDCOLL_TRANSPORT_CAP_*
   * bits, 0 for none. */
  unsigned caps;
  /* Which ranks share a host, for the two-level (hierarchical) algorithms:
   * hosts[r] names the host of transport rank r for every r from 0 to
   * size - 1, ranks with equal values share one, and every rank's array
   * holds the same values.  The transport keeps the array, unchanged,
   * until destroy.  NULL: not known, and the core runs flat algorithms
   * only.  A transport compiled against a header without this field leaves
   * it NULL (the core zeroes info before the call). */
  const uint32_t *hosts;
  /* With hosts: the cost of a message between two ranks of one host, alpha
   * seconds per message and beta per byte, for AUTO's two-level model
   * (alpha and beta above are then those between hosts).  0: the core
   * assumes a tenth of those between hosts. */
  double local_alpha, local_beta;
  /* The pieces, in bytes, in which the root of a linear reduce (also of
   * the reduce inside linear allreduce and reduce-scatter) takes each
   * vector when the application sets no segment (redcoll_comm_set_segment,
   * REDCOLL_SEGMENT_KB): for a transport whose transfers move while the
   * receiving rank computes, so that piece j + 1 arrives while piece j is
   * reduced (TCP, where the sender's kernel copies the bytes: 1 MiB).
   * AUTO prices those steps piped.  Every rank's value must be the same.
   * 0: whole messages; a transport compiled against a header without
   * this field leaves it 0. */
  size_t segment;
} redcoll_transport_info;

/* Messages are matched per (peer, channel): a message of one channel never
 * meets a receive of another, and one waiting unreceived on a channel does
 * not hold up the others.  Needs the members cancel and close. */
#define REDCOLL_TRANSPORT_CAP_CHANNELS 1u
/* A communicator owns this many consecutive channels from a multiple of
 * it (its collectives, its point-to-point messages, ...); cancel and close
 * name the first and apply to all of them. */
#define REDCOLL_TRANSPORT_CHANNEL_GROUP 4u
/* Calls on different channels may run at once in different threads; abort
 * and cancel may be called from any thread at any time. */
#define REDCOLL_TRANSPORT_CAP_THREADS 2u
/* The alpha, beta and gamma of info are exact (the simulator's): the core
 * does not measure them at the first collective (redcoll_comm_calibrate
 * still does when asked). */
#define REDCOLL_TRANSPORT_CAP_MODEL_EXACT 4u
/* Version 4: post accepts send and recv both NULL, a yield.  The core posts
 * one on a nonblocking collective's fiber between slices of a long local
 * reduction or copy, so that whoever drives the transport (an event loop's
 * callbacks above all) gets its turn before the rest of the work.  The
 * transport finishes a yield with done, REDCOLL_OK, at its next turn:
 * inside the next progress call, which then returns at once as for any
 * finished op, and, for a transport that runs on the embedder's event loop
 * or threads, in the loop's next iteration without waiting for I/O (a
 * libuv idle handle, say), so that a program that never calls progress
 * still gets it back.  It must not need a message to arrive, and should
 * not call done inside post (allowed, but then the work runs on without a
 * break).  A yield carries ctx like any op: cancel and abort finish it
 * with their status, and it never waits long enough to meet its
 * deadline.  Without this bit the core posts no yield, and a nonblocking
 * collective's local work runs in one go. */
#define REDCOLL_TRANSPORT_CAP_YIELD 8u

/* The context of one exchange call (version 3). */
typedef struct redcoll_transport_ctx {
  /* The collective's deadline on the transport's own clock (the now
   * member), in nanoseconds; UINT64_MAX: none.  A call still waiting at the
   * deadline returns REDCOLL_ETIMEDOUT.  A transport also keeps its own
   * bound on one wait, if it has one. */
  uint64_t deadline_ns;
  /* The collective the call belongs to: its sequence number on the
   * communicator (the first is 1; the tag carries this number minus 1,
   * modulo 2^24); 0 for a call outside any collective (point-to-point,
   * and the agreement of redcoll_comm_create_group).  For diagnostics,
   * and for the optional check of tags that conflict
   * (redcoll_transport_tags_conflict, below): only receives with a number
   * here are checked, and sends with one tell which collective this rank
   * is in. */
  uint64_t collective;
  /* The channel the messages belong to: 0 for the communicator made by
   * redcoll_comm_create, other values for those made from it; always 0 on
   * a transport without REDCOLL_TRANSPORT_CAP_CHANNELS. */
  uint64_t channel;
} redcoll_transport_ctx;

/* One side of an exchange: the message to send to peer, or the message to
 * receive from peer. */
typedef struct redcoll_transport_msg {
  int peer;      /* never the caller's own rank */
  uint64_t tag;  /* the collective's tag (below) */
  void *buf;     /* const for the sent side: never written */
  size_t len;    /* may be 0 */
} redcoll_transport_msg;

/* The tags of a collective's messages (ctx.collective not 0): bits 63..40
 * hold the collective's number on its communicator minus 1, modulo 2^24
 * (compare tags with tags, not with ctx.collective), bits 39..4 a hash of
 * the call (collective, count, dtype, operator, root) and bits 3..0 the
 * phase of a two-level collective (0 for the others).  A message sent
 * with a tag must meet a receive with the same tag; that is all a
 * transport has to check.  A transport that keeps messages which came
 * before their receive can also catch ranks that disagree where their
 * messages never meet: if a receive posted with ctx.collective not 0 and
 * a message kept from any peer on the same channel give 1 here, the ranks
 * are in different calls, and failing the receive (and the others
 * waiting on that channel) with REDCOLL_EMISMATCH ends at once what would
 * otherwise wait for the timeout.  Keep the record of that receive per
 * channel (communicators on other threads use other channels), check a
 * message kept later against it, and stop once this rank sends or
 * receives with a larger ctx.collective there: only 24 bits of the number
 * are in a tag, so an old record could match a new tag.  A transport
 * whose sends wait for their receive and that keeps nothing compares a
 * waiting send with what the peer it waits for waits on (threads.c).
 * Point-to-point tags (redcoll_send) never conflict; neither do the tags
 * of the few collectives whose number is 0x703270 modulo 2^24. */
static inline int redcoll_transport_tags_conflict(uint64_t a, uint64_t b) {
  const uint64_t call = ((uint64_t)1 << 40) - 16;
  return (a >> 40) == (b >> 40) && (a >> 40) != 0x703270u && ((a ^ b) & call) != 0;
}

/* One posted exchange (version 4).  The core fills done and user, zeroes
 * the rest and keeps the op, its messages' buffers and its peers' messages
 * alive until the transport calls done. */
typedef struct redcoll_transport_op {
  /* Called by the transport exactly once, when the exchange has finished,
   * with REDCOLL_OK or the status exchange would have returned: inside
   * post when the exchange finishes at once (a send the transport copied,
   * a receive whose message had arrived), inside progress on the thread
   * that called it, or, for a transport that runs on the embedder's
   * threads or event loop, inside the embedder's call that finished it (a
   * delivery, a loop callback), possibly on another thread before post
   * has returned.  From the call of done on, the transport does not touch
   * the op again: the core reuses it, from inside done too.  done may call
   * post, cancel and abort (the core starts the collective's next exchange
   * from it, or gives up and tells the peers) but never progress.  A
   * transport that calls done on the embedder's threads may see post
   * called there even without REDCOLL_TRANSPORT_CAP_THREADS; the core
   * posts for one communicator at a time. */
  void (*done)(struct redcoll_transport_op *op, int status);
  void *user;         /* the core's */
  void *priv[4];      /* the transport's: room to link the op into its lists */
} redcoll_transport_op;

typedef struct redcoll_transport_ops {
  /* REDCOLL_TRANSPORT_VERSION, or 1 or 2 for a struct of an earlier
   * version; lets the struct grow. */
  unsigned version;

  /* Versions 1 and 2: send, recv and sendrecv are required.  Version 3:
   * leave them NULL (exchange replaces them; the core ignores them). */

  /* Blocks until len bytes of buf have been handed to rank dst with tag, or
   * until the matching receive has been posted (a transport may choose
   * either: algorithms are correct under rendezvous).  buf is the caller's
   * and is not kept after return.  len may be 0.  dst is never the caller's
   * own rank.  Messages from one rank to another arrive in the order sent.
   * Errors: REDCOLL_ETRANSPORT (peer gone), REDCOLL_ETIMEDOUT,
   * REDCOLL_EABORTED (a peer aborted), REDCOLL_EMISMATCH, REDCOLL_EDEADLOCK
   * (simulator). */
  int (*send)(void *impl, int dst, uint64_t tag, const void *buf, size_t len);

  /* Blocks until the next message from rank src has been received into buf.
   * If that message carries another tag or another length, fails with
   * REDCOLL_EMISMATCH and writes nothing beyond len bytes of buf. */
  int (*recv)(void *impl, int src, uint64_t tag, void *buf, size_t len);

  /* Full duplex: sends sbuf to dst and receives rbuf from src, both
   * progressing at once (neither may wait for the other to finish); dst and
   * src may differ.  Same rules as send and recv. */
  int (*sendrecv)(void *impl, int dst, uint64_t stag, const void *sbuf, size_t slen, int src,
                  uint64_t rtag, void *rbuf, size_t rlen);

  /* Optional (may be NULL): the core reduced `bytes` bytes locally.  The
   * simulator advances the rank's clock by bytes * gamma. */
  void (*charge)(void *impl, size_t bytes);

  /* Optional: tell every peer that this rank gives up with `status`, so that
   * their pending and later calls return REDCOLL_EABORTED instead of
   * waiting.  Must not block for long. */
  void (*abort)(void *impl, int status);

  /* Frees impl.  Required. */
  void (*destroy)(void *impl);

  /* Optional: the per-collective deadline of redcoll_comm_set_deadline().
   * From now on, a collective (a run of calls with one tag; a call with
   * another tag starts the next) that has not finished ms milliseconds after
   * its first call on this rank fails with REDCOLL_ETIMEDOUT, and the log
   * names the peer the call was waiting for.  0 means no deadline: back to
   * the transport's own timeout, which bounds every wait in any case.
   * Returns REDCOLL_OK or an error that redcoll_comm_set_deadline passes on.
   * Without this member redcoll_comm_set_deadline returns REDCOLL_ENOTSUP.
   * Version 2 only: a version 3 transport gets the deadline with every call
   * and leaves this NULL. */
  int (*set_timeout)(void *impl, uint64_t ms);

  /* ---- version 3 ---- */

  /* Fills *info (zeroed by the core first).  Called once, when the
   * communicator is created.  Required. */
  int (*info)(void *impl, redcoll_transport_info *info);

  /* The transport's clock in nanoseconds, which deadlines are measured on
   * (the simulator's virtual time, a wall clock elsewhere).  Optional:
   * NULL means CLOCK_MONOTONIC. */
  uint64_t (*now)(void *impl);

  /* Sends *send (if not NULL) to send->peer and receives the next message
   * from recv->peer (if not NULL) into recv->buf, both directions
   * progressing at once, and returns when both are done; at least one is
   * not NULL, and the two peers may differ.  A send may return once its
   * bytes are handed over, or wait for the matching receive (algorithms are
   * correct under either).  Messages from one rank to another arrive in
   * the order sent.  If the next message from recv->peer carries another
   * tag or length: REDCOLL_EMISMATCH, and nothing written beyond recv->len
   * bytes.  Errors: REDCOLL_ETRANSPORT (peer gone), REDCOLL_ETIMEDOUT (past
   * ctx->deadline_ns or the transport's own bound on a wait),
   * REDCOLL_EABORTED (a peer aborted), REDCOLL_EMISMATCH, REDCOLL_EPROTO,
   * REDCOLL_EDEADLOCK (simulator).  Required. */
  int (*exchange)(void *impl, const redcoll_transport_ctx *ctx, const redcoll_transport_msg *send,
                  const redcoll_transport_msg *recv);

  /* With REDCOLL_TRANSPORT_CAP_CHANNELS (else NULL): abort for one
   * communicator, the channel group that starts at `channel`.  Pending and
   * later calls on its channels on every rank return REDCOLL_EABORTED;
   * other channels go on.  Must not block for long. */
  void (*cancel)(void *impl, uint64_t channel, int status);

  /* With REDCOLL_TRANSPORT_CAP_CHANNELS (else NULL): the communicator of
   * the channel group that starts at `channel` is destroyed on this rank;
   * free what is kept for it.  A peer waiting for this rank on one of its
   * channels gets REDCOLL_ETRANSPORT.  The core never uses the group again
   * on this transport object, so a transport may keep a record of it (and
   * drop what still arrives for it). */
  void (*close)(void *impl, uint64_t channel);

  /* ---- version 4 (optional: NULL members make a blocking transport) ---- */

  /* Starts what exchange does and returns at once: REDCOLL_OK, and done is
   * called later exactly once; or an error status, and done is never
   * called.  *ctx, *send and *recv may be read during the call only; the
   * buffers they point to stay valid until done.  Posted exchanges of one
   * channel are matched in the order posted (their messages from one rank
   * to another arrive in that order); an exchange posted on another channel
   * is independent.  An op still waiting at ctx->deadline_ns finishes with
   * REDCOLL_ETIMEDOUT when the transport next looks (in progress at the
   * latest); cancel finishes the ops of its channel group with the status
   * given (REDCOLL_EABORTED on the peers), abort all of them, both through
   * done in a later progress (or delivery), never inside cancel or abort.
   * The core calls close and destroy only when no op of theirs is posted.
   * send and recv are never both NULL, except for a yield on a transport
   * with REDCOLL_TRANSPORT_CAP_YIELD.  post and progress need both or
   * neither.  Sends to one peer on one channel may be posted several at
   * once; receives from one peer on one channel the core posts one at a
   * time (the next once the last has finished), and a transport may refuse
   * a second one while the first is posted (TCP does, REDCOLL_EINVAL). */
  int (*post)(void *impl, const redcoll_transport_ctx *ctx, const redcoll_transport_msg *send,
              const redcoll_transport_msg *recv, redcoll_transport_op *op);

  /* Moves posted exchanges on and calls done for those that finish.
   * Returns once it has called done, or once the transport's clock reaches
   * until_ns (0: do what can be done now and return; UINT64_MAX: no bound),
   * or earlier when another thread or a delivery has finished an op since
   * it began; a return with nothing done is allowed (the core checks and
   * calls again), but a transport should sleep, not spin, while nothing
   * happens.  REDCOLL_OK, or a status if the transport itself is broken
   * (its ops then finish with that status). */
  int (*progress)(void *impl, uint64_t until_ns);

  /* Optional: a file descriptor that becomes readable when progress has
   * something to do, for a program that waits in its own poll or epoll and
   * calls redcoll_comm_progress when it fires; -1 if there is none.  The
   * transport keeps the descriptor; the program only polls it. */
  int (*fd)(void *impl);
} redcoll_transport_ops;

#ifdef __cplusplus
}
#endif
#endif /* REDCOLL_TRANSPORT_H */
