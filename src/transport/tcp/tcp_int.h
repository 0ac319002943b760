/*
 * The state of the TCP transport that its files share: a connection, a
 * peer, a send, a receive, and the rank's transport.  It includes the
 * headers of the pure parts (wire.h, addr.h, config.h), which the tests and
 * the fuzz targets reach through it; each file's functions are declared in
 * the header of the same name.
 */
#ifndef REDCOLL_TCP_INT_H
#define REDCOLL_TCP_INT_H

#include <uv.h>

#include "addr.h"
#include "base.h"
#include "config.h"
#include "redcoll/tcp.h"
#include "wire.h"

/* How long a peer that closed a connection before answering its HELLO may
 * refuse connections before it counts as gone (connect.c): a new
 * communicator listens on the port of a destroyed one at once. */
#define REDCOLL__TCP_GONE_NS 1000000000ull
#define REDCOLL__TCP_PROBE_MS 300
#define REDCOLL__TCP_RELAY_BYE 2

/* The read buffer of an incoming connection (recv.c). */
#define REDCOLL__TCP_RBUF 16384

typedef struct redcoll__tcp redcoll__tcp;
typedef struct redcoll__tcp_conn redcoll__tcp_conn;

struct redcoll__tcp_conn {
  uv_tcp_t h;
  uv_connect_t creq;
  redcoll__tcp *t;
  int peer;     /* rank; -1 for an accepted connection before its HELLO */
  int out;      /* 1: opened by this rank, carries its messages to peer */
  int ready;    /* connected (out) or identified (in) */
  int closing;
  int reading;
  int bye;      /* the peer said goodbye */
  int ctl_only; /* an extra incoming connection from a peer that already has
                 * one: it may carry ABORT and BYE, never data */
  int abort_after_hello; /* opened by abort: send ABORT once connected;
                          * REDCOLL__TCP_RELAY_BYE: send a BYE that says
                          * which abort this rank left after */
  int answered; /* out: the peer answered the HELLO with one of this job and
                 * communicator; nothing but the set-up is sent before */
  /* Authentication: the step awaited next (0: none), the rank the HELLO
   * claimed (accepted connections), the nonces, a payload being read. */
  int auth_step;
  int claimed;
  int refused;
  unsigned char nonce_mine[REDCOLL__AUTH_NONCE], nonce_peer[REDCOLL__AUTH_NONCE];
  unsigned char abuf[REDCOLL__AUTH_NONCE + REDCOLL__AUTH_MAC];
  size_t aneed, agot;
  unsigned astep; /* the AUTH step being read, or ASTEP_HELLO */
  unsigned char hdr[REDCOLL__TCP_HDR];
  size_t hdr_got;
  int have_frame; /* a DATA header was read, its payload not yet */
  redcoll__tcp_frame fr;
  /* An incoming connection, once identified, reads into rb as much as the
   * socket has (up to REDCOLL__TCP_RBUF bytes) and takes frames out of it;
   * only the rest of a matched payload longer than what rb held is read
   * straight into the caller's buffer.  rb[rlo..rhi) is not taken yet.
   * lost: the read error (or EOF) seen while rb still held deliverable
   * frames, reported once they are taken. */
  unsigned char *rb;
  size_t rlo, rhi;
  int into_rb; /* the pending read goes to rb */
  int lost;
  unsigned char hello[2 * REDCOLL__TCP_HDR + REDCOLL__TCP_HELLO_LEN + REDCOLL__AUTH_NONCE];
  uv_write_t hello_req;
  redcoll__tcp_conn *next, *prev;
};

typedef struct redcoll__tcp_send {
  int dst;
  uint64_t tag;
  const void *buf;
  size_t len;
  unsigned char hdr[REDCOLL__TCP_HDR];
  uv_write_t req;
  int queued, done, status;
} redcoll__tcp_send;

typedef struct redcoll__tcp_recv {
  int src;
  uint64_t tag;
  void *buf;
  size_t len, got;
  int matched, done, status;
} redcoll__tcp_recv;

typedef struct redcoll__tcp_peer {
  redcoll__tcp_addr addr;
  redcoll__tcp_conn *out, *in;
  uv_timer_t retry;
  int retry_init, retry_active;
  unsigned backoff_ms;
  redcoll__tcp_send *tx;
  redcoll__tcp_recv *rx;
  /* Sending to / receiving from this peer fails with this status: its
   * connection in that direction closed (normally, or not). */
  int err_send, err_recv;
  /* The peer said goodbye (destroyed its communicator): it sends nothing
   * new, and a refused connection to it means it is gone. */
  int said_bye;
  /* HELLOs refused to or by this peer (another job or communicator on the
   * same ports): the first is logged at its level, the rest at debug. */
  int refusals;
  /* A connection to it closed before its answer (the port's listener was
   * closing, or the peer went away): refused connections are retried
   * until this time (uv_hrtime ns) only; 0: none. */
  uint64_t gone_after_ns;
  /* This rank waits for a message from the peer and neither has connected
   * to the other: after REDCOLL__TCP_PROBE_MS it connects itself, so that a
   * peer that left without ever talking to it is found gone (its port
   * refuses for REDCOLL__TCP_GONE_NS) rather than at the timeout. */
  int probe;
  int ever; /* a connection with the peer was set up once: it listened */
} redcoll__tcp_peer;

struct redcoll__tcp {
  uv_loop_t loop;
  int loop_init;
  int rank, size;
  uint64_t timeout_ms;
  uv_tcp_t listener;
  int listener_init;
  redcoll__tcp_addr self;
  uv_timer_t timer;
  int timer_init;
  int timed_out;
  /* The deadline of the collective of the running call, passed by the core
   * (redcoll_comm_set_deadline), in uv_hrtime() nanoseconds; UINT64_MAX:
   * none. */
  uint64_t coll_deadline_ns;
  redcoll__tcp_peer *peers;
  redcoll__tcp_conn conns; /* list head of every connection */
  int ctl_pending;         /* BYE / ABORT / HELLO writes in flight */
  int connects_pending;
  int fatal;               /* first error that breaks every call */
  int in_call;             /* re-entry guard */
  int aborting;
  /* The peer this rank failed to authenticate with (-1: none): its ABORT
   * says so, so that every rank can tell why the job stopped. */
  int auth_failed_with;
  /* What the listener calls for a new connection (tcp.c hands it, from
   * connect.c, to the bootstrap, which opens the listener). */
  uv_connection_cb on_accept;
  /* What a peer's retry timer calls (connect.c sets it before its first
   * connection; redcoll__tcp_retry_later starts the timer). */
  uv_timer_cb on_retry;
  /* How the authentication opens this rank's connection to a peer whose
   * claim it must check (tcp.c hands it from connect.c; the files that
   * parse frames cannot call connect.c, which calls them). */
  void (*connect_peer)(struct redcoll__tcp *t, int q, int for_abort);
  uint64_t abort_tag; /* the ABORT frame's tag, once aborting */
  /* The first abort this rank learnt of (its own or a peer's ABORT): who
   * and why (an ABORT frame's tag), so that its BYE can say why it left;
   * abort_from -1: none. */
  int abort_from;
  uint64_t abort_why;
  uint64_t job;            /* the job id every HELLO must carry */
  uint64_t number;         /* and the communicator's number (wire.h) */
  uint32_t table_cpus;     /* the rendezvous table's CPU count (0: none) */
  int auth;                /* a secret is set: connections authenticate */
  unsigned char key[32];   /* SHA-256 of the secret */
};

#endif /* REDCOLL_TCP_INT_H */
