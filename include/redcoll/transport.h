/*
 * The transport vtable: how redcoll moves bytes.  Bring your own by filling
 * a redcoll_transport_ops and passing it with your state to
 * redcoll_comm_create().  docs/transports.md walks through an example.
 *
 * Threading: the core calls a transport from the one thread that is running
 * a collective on the communicator; members are never called concurrently
 * for the same impl.  Members must not call back into redcoll.
 *
 * Errors: members return REDCOLL_OK or a negative redcoll status.  After any
 * error the core considers the communicator broken and calls no member but
 * abort (if present) and destroy.
 */
#ifndef REDCOLL_TRANSPORT_H
#define REDCOLL_TRANSPORT_H

#include "redcoll.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Version 2 added set_timeout.  A version 1 struct (without it) is still
 * accepted: the core then reads no member past destroy. */
#define REDCOLL_TRANSPORT_VERSION 2

typedef struct redcoll_transport_ops {
  /* REDCOLL_TRANSPORT_VERSION (or 1 for a struct that ends at destroy);
   * lets the struct grow later. */
  unsigned version;

  /* Blocks until len bytes of buf have been handed to rank dst with tag, or
   * until the matching receive has been posted (a transport may choose
   * either: algorithms are correct under rendezvous).  buf is the caller's
   * and is not kept after return.  len may be 0.  dst is never the caller's
   * own rank.  Messages from one rank to another arrive in the order sent.
   * Errors: REDCOLL_ETRANSPORT (peer gone), REDCOLL_ETIMEDOUT,
   * REDCOLL_EABORTED (a peer aborted), REDCOLL_EMISMATCH, REDCOLL_EDEADLOCK
   * (simulator). Required. */
  int (*send)(void *impl, int dst, uint64_t tag, const void *buf, size_t len);

  /* Blocks until the next message from rank src has been received into buf.
   * If that message carries another tag or another length, fails with
   * REDCOLL_EMISMATCH and writes nothing beyond len bytes of buf.
   * Required. */
  int (*recv)(void *impl, int src, uint64_t tag, void *buf, size_t len);

  /* Full duplex: sends sbuf to dst and receives rbuf from src, both
   * progressing at once (neither may wait for the other to finish); dst and
   * src may differ.  Same rules as send and recv.  Required. */
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

  /* Optional: the per-collective deadline of redcoll_comm_set_timeout().
   * From now on, a collective (a run of calls with one tag; a call with
   * another tag starts the next) that has not finished ms milliseconds after
   * its first call on this rank fails with REDCOLL_ETIMEDOUT, and the log
   * names the peer the call was waiting for.  0 means no deadline: back to
   * the transport's own timeout, which bounds every wait in any case.
   * Returns REDCOLL_OK or an error that redcoll_comm_set_timeout passes on.
   * Without this member (and outside the simulator) redcoll_comm_set_timeout
   * returns REDCOLL_ENOTSUP. */
  int (*set_timeout)(void *impl, uint64_t ms);
} redcoll_transport_ops;

#ifdef __cplusplus
}
#endif
#endif /* REDCOLL_TRANSPORT_H */
