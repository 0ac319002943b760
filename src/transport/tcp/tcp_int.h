/*
 * The state of the TCP transport that its files share: a connection, a
 * peer, a send, a receive, and the rank's transport.  It includes the
 * headers of the pure parts (wire.h, addr.h, config.h), which the tests and
 * the fuzz targets reach through it; each file's functions are declared in
 * the header of the same name.
 */
#ifndef REDCOLL_TCP_INT_H
#define REDCOLL_TCP_INT_H

#include <pthread.h>
#include <uv.h>

#include "addr.h"
#include "base.h"
#include "tagrec.h"
#include "config.h"
#include "redcoll/tcp.h"
#include "wire.h"

/* How long a peer that closed a connection before answering its HELLO may
 * refuse connections before it counts as gone (connect.c): a new
 * communicator listens on the port of a destroyed one at once. */
#define REDCOLL__TCP_GONE_NS 1000000000ull
#define REDCOLL__TCP_PROBE_MS 300

/* The read buffer of an incoming connection (recv.c). */
#define REDCOLL__TCP_RBUF 16384
/* Bytes of messages that arrived before their receive, per peer, past
 * which its connection stops reading (redcoll_tcp_config.unexpected_max);
 * each kept message counts REDCOLL__TCP_UMSG_COST bytes besides its
 * payload, so that empty ones are bounded too. */
#define REDCOLL__TCP_UNEXPECTED_MAX ((uint64_t)64 << 20)
#define REDCOLL__TCP_UMSG_COST 64
/* On the program's loop (redcoll_tcp_config.loop) the transport keeps each
 * turn of the loop short, so that the program's timers stay on time: a
 * read takes at most REDCOLL__TCP_EXT_READ bytes, a connection reads at
 * most REDCOLL__TCP_EXT_TURN bytes per turn (then pauses until the next),
 * a message goes to the socket in pieces of at most REDCOLL__TCP_EXT_WRITE
 * bytes, the next once the last is written (send.c), and a message kept
 * before its receive is copied into place REDCOLL__TCP_EXT_COPY bytes per
 * turn (chan.c). */
#define REDCOLL__TCP_EXT_READ ((size_t)128 << 10)
#define REDCOLL__TCP_EXT_TURN ((size_t)128 << 10)
#define REDCOLL__TCP_EXT_WRITE ((size_t)128 << 10)
#define REDCOLL__TCP_EXT_COPY ((size_t)128 << 10)

/* On the transport's own loop a connection whose receive of at least
 * REDCOLL__TCP_PAUSE_MIN bytes just ended stops reading for the rest of that
 * turn (recv.c's pause_turn): the thread that waited for it, if it is the one
 * running the loop, posts its next receive before the bytes behind it are
 * read, so that they go straight into the caller's buffer rather than into a
 * kept copy that the receive then copies again (a piped step's next segment,
 * which its sender wrote right behind).  The resume handle reads on in the same
 * turn's check phase, so nothing waits longer than one poll. */
#define REDCOLL__TCP_PAUSE_MIN ((size_t)256 << 10)

/* SO_SNDBUF of a connection to a peer on this host (Linux caps it at
 * net.core.wmem_max and doubles it: 1 MiB where that is 4 MiB).  The kernel's
 * autotuning grows a loopback connection's send buffer to tcp_wmem's maximum
 * (4 MiB on Debian), and the megabytes in flight through it are fresh memory
 * for each message, copied into by the sender and out of by the receiver with
 * cache misses both times; at 1 MiB they stay in the caches.  On this machine
 * (docs/performance.md) a 16 MiB allreduce at p = 2 took 12 instead of 16 ms,
 * a reduce at p = 4 33 instead of 43.  Connections to other hosts keep the
 * autotuning, which a long, fast link needs.  REDCOLL_TCP_SNDBUF overrides
 * both. */
#define REDCOLL__TCP_LOCAL_SNDBUF (512 << 10)
/* The pieces of a linear reduce's root (redcoll_transport_info.segment):
 * the sender's kernel copies piece j + 1 into the connection while the
 * root reduces piece j. */
#define REDCOLL__TCP_ROOT_SEGMENT ((size_t)1 << 20)
/* How long destroy waits for its goodbyes to be written (tcp.c); on the
 * program's loop, while a message is still being written in pieces (its
 * call ended early), the transport keeps its connections until that is
 * out, as long as some of it goes every REDCOLL__TCP_LINGER_NS. */
#define REDCOLL__TCP_LINGER_NS ((uint64_t)500000000u)

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
                 * one: it may carry CANCEL and BYE, never data */
  int abort_after_hello; /* a control connection, opened to carry this
                          * rank's CANCELs (sent once it is set up) */
  int send_cancels;      /* the data connection, still connecting when this
                          * rank cancelled: send its CANCELs once set up */
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
  /* Where the payload of that frame goes: a matched receive, a message
   * kept for a later one (chan.c), or nowhere (discard bytes more). */
  struct redcoll__tcp_recv *sink_rx;
  struct redcoll__tcp_umsg *sink_um;
  uint64_t discard;
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
  size_t turn_bytes; /* read in this turn of the program's loop */
  int paused;        /* stopped reading until its next turn (or the resume check) */
  unsigned char hello[2 * REDCOLL__TCP_HDR + REDCOLL__TCP_HELLO_LEN + REDCOLL__AUTH_NONCE];
  uv_write_t hello_req;
  int hello_sent; /* out: the HELLO (and first AUTH step) is written or queued */
  int bye_sent;   /* this rank said BYE on it (it is leaving) */
  /* out, on the program's loop: the message being written in pieces
   * (send.c); until its last piece is out, later messages wait in the
   * peer's queue and control frames in ctl_wait (conn.c), so that nothing
   * comes between its pieces. */
  struct redcoll__tcp_send *wr_busy;
  int piece_due; /* its last piece is out: the next goes in the next turn */
  struct redcoll__tcp_ctlw *ctl_wait;
  redcoll__tcp_conn *next, *prev;
};

/* A message to send.  Until its peer's connection is ready it waits in
 * the peer's queue (next); then it is written (queued while libuv holds
 * its buffer). */
typedef struct redcoll__tcp_send {
  int dst;
  uint64_t tag, chan;
  uint64_t coll; /* ctx.collective: its collective's number, 0 outside */
  const void *buf;
  size_t len;
  /* On the program's loop: the bytes not yet handed to libuv, written in
   * pieces of REDCOLL__TCP_EXT_WRITE, each once the last is out. */
  const unsigned char *rest;
  size_t rest_len;
  unsigned char hdr[REDCOLL__TCP_HDR];
  uv_write_t req;
  int queued, done, status;
  /* Taken back by its call while libuv still writes it: the bytes not yet
   * written were copied to `copy`, and the write callback frees both. */
  int detached;
  unsigned char *copy;
  struct redcoll__tcp_send *next;
} redcoll__tcp_send;

/* A posted receive: matched once a message of its peer and channel is
 * taken for it (its payload may still be arriving). */
typedef struct redcoll__tcp_recv {
  int src;
  uint64_t tag, chan;
  void *buf;
  size_t len, got;
  int matched, done, status;
  uint64_t coll; /* ctx.collective: its collective's number, 0 outside */
  /* On the program's loop, copies in slices of REDCOLL__TCP_EXT_COPY, one
   * per turn (recv.c's copy_turn):
   *   - its message was kept whole and is copied into buf, got bytes so
   *     far; the message stays first on its channel until the last slice;
   *   - or it took over a message still arriving (redcoll__tcp_recv_adopt):
   *     the rest is read straight into buf, and the pre_len bytes that
   *     came before, kept in pre, are copied pre_got bytes so far; the
   *     receive is done once both are.
   * copying: nothing more is needed from the peer, only the copy. */
  int copying;
  struct redcoll__tcp_umsg *pre;
  size_t pre_len, pre_got;
  int stream_done;
} redcoll__tcp_recv;

/* A message that arrived before its receive (chan.c); got < len while its
 * payload is still being read. */
typedef struct redcoll__tcp_umsg {
  struct redcoll__tcp_umsg *next;
  uint64_t tag;
  size_t len, got;
  size_t cap; /* bytes data can hold (a spare reused for a shorter one) */
  unsigned char data[];
} redcoll__tcp_umsg;

/* Large kept messages' buffers, kept for the next ones (chan.c): fresh memory
 * costs a page fault per page on every message, which on a virtual machine can
 * cost more than the copy (about 15 us a page on the machine of
 * docs/performance.md).  Up to SPARES buffers of REDCOLL__TCP_SPARE_MIN ..
 * REDCOLL__TCP_SPARE_MAX bytes, at most REDCOLL__TCP_SPARE_BYTES in all, each
 * reused for a message of at least half its size: a piped step's segments (1
 * MiB, a dozen kept at once when the sender reached the step well before the
 * receiver) reuse their buffers from one call to the next, and an idle
 * transport holds no more than a few large messages' worth. */
#define REDCOLL__TCP_SPARES 16
#define REDCOLL__TCP_SPARE_MIN ((size_t)64 << 10)
#define REDCOLL__TCP_SPARE_MAX ((size_t)16 << 20)
#define REDCOLL__TCP_SPARE_BYTES ((size_t)16 << 20)

/* One channel of one peer as this rank sees it (chan.c): the messages that
 * came first, in order, and the receive posted on it. */
typedef struct redcoll__tcp_pchan {
  struct redcoll__tcp_pchan *next;
  uint64_t chan;
  redcoll__tcp_umsg *head, *tail;
  redcoll__tcp_recv *rx;
} redcoll__tcp_pchan;

/* A channel group something happened to (chan.c): cancelled (a rank gave
 * up on its communicator: who, and an ABORT tag's why), or closed here. */
typedef struct redcoll__tcp_group {
  struct redcoll__tcp_group *next;
  uint64_t group;
  int cancelled; /* REDCOLL_EABORTED once cancelled, else 0 */
  int broken;    /* REDCOLL_EMISMATCH once a message on it did not match
                  * its receive (the channel is out of step), else 0 */
  int from;
  uint64_t why;
  int closed;    /* destroyed on this rank: later traffic is dropped */
  unsigned char *closed_by; /* bit q: peer q destroyed it there (CLOSE) */
  /* The group's record for the check of tags that conflict (tagrec.h). */
  redcoll__tagrec rec;
  struct redcoll__tcp_group *hnext; /* the index's chain (chan.c) */
} redcoll__tcp_group;

typedef struct redcoll__tcp_peer {
  struct redcoll__tcp *t;
  redcoll__tcp_addr addr;
  redcoll__tcp_conn *out, *in;
  uv_timer_t retry;
  int retry_init, retry_active;
  unsigned backoff_ms;
  /* Sends waiting for the connection to be ready, in order. */
  redcoll__tcp_send *txq, *txq_tail;
  /* Its channels with messages kept or a receive posted (chan.c), and the
   * bytes kept. */
  redcoll__tcp_pchan *chans;
  uint64_t unexpected;
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
  int lost_logged; /* why it was lost is in the log at level error */
  char lost_why[200]; /* why, for the first call that meets it */
  /* Its BYE said it left after an abort (its tag, REDCOLL__TCP_BYE_BITS). */
  int left_aborted;
  uint64_t bye_tag;
} redcoll__tcp_peer;

struct redcoll__tcp {
  /* The loop every handle of the transport lives on: own_loop, or the
   * embedder's (redcoll_tcp_config.loop; ext 1), which its thread runs. */
  uv_loop_t *loop;
  uv_loop_t own_loop;
  int loop_init;
  int ext;
  int copy_hint; /* a receive may be copying (redcoll__tcp_recv.copying) */
  /* Threads (wait.c): every libuv call and every field is under mu; one
   * thread at a time, the leader, runs the loop, and polls its descriptor
   * with mu released; the others wait on cv.  wake interrupts the poll. */
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int mu_init;
  int leader;
  uv_async_t wake;
  int wake_init;
  /* Not on the program's loop: reads on, in the check phase of the turn
   * that paused them, connections paused after a large receive
   * (REDCOLL__TCP_PAUSE_MIN). */
  uv_check_t resume;
  int resume_init;
  /* The resume check turned reading back on during the last uv_run: run
   * the loop again before a poll of its descriptor waits.  (In the rare
   * turn whose epoll_wait returns libuv's whole batch of 1024 events,
   * libuv waits again at once and may drop a paused descriptor from its
   * epoll set; it is back only in the next uv_run.) */
  int resumed;
  /* Bytes receives copied out of kept messages (what came before them),
   * for the tests: a piped step's segments should add none. */
  uint64_t kept_copied;
  /* REDCOLL_TCP_SNDBUF: every connection's SO_SNDBUF in bytes (0: the
   * kernel's autotuning), or -1 when unset (connect.c's set_sndbuf). */
  int sndbuf;
  redcoll__tcp_group *groups; /* every record, and their index (chan.c) */
  redcoll__tcp_group **buckets;
  size_t nbuckets, ngroups;
  uint64_t unexpected_max;
  redcoll__tcp_umsg *spare[REDCOLL__TCP_SPARES]; /* chan.c; NULL: none */
  int rank, size;
  uint64_t timeout_ms;
  uv_tcp_t listener;
  int listener_init;
  redcoll__tcp_addr self;
  redcoll__tcp_peer *peers;
  redcoll__tcp_conn conns; /* list head of every connection */
  int ctl_pending;         /* BYE / CANCEL / CLOSE / HELLO writes in flight */
  int connects_pending;
  int fatal;               /* first error that breaks every call */
  /* The peer this rank failed to authenticate with (-1: none): its CANCEL
   * says so, so that every rank can tell why the job stopped. */
  int auth_failed_with;
  /* What the listener calls for a new connection (tcp.c hands it, from
   * connect.c, to the bootstrap, which opens the listener). */
  uv_connection_cb on_accept;
  /* What a peer's retry timer calls (connect.c sets it before its first
   * connection; redcoll__tcp_retry_later starts the timer). */
  uv_timer_cb on_retry;
  uv_idle_cb on_idle; /* the program's loop: nb_idle's callback (tcp.c) */
  /* How the authentication opens this rank's connection to a peer whose
   * claim it must check (tcp.c hands it from connect.c; the files that
   * parse frames cannot call connect.c, which calls them). */
  void (*connect_peer)(struct redcoll__tcp *t, int q, int for_abort);
  /* The first abort this rank learnt of (its own cancel or a peer's CANCEL):
   * who and why (a CANCEL frame's tag), so that its BYE can say why it left;
   * abort_from -1: none. */
  int abort_from;
  uint64_t abort_why;
  uint64_t job;            /* the job id every HELLO must carry */
  uint64_t number;         /* and the communicator's number (wire.h) */
  uint32_t table_cpus;     /* the rendezvous table's CPU count (0: none) */
  /* Posted exchanges (tcp.c, transport.h version 4): those still running
   * in the order posted, and those finished whose done is still to be
   * called; gen counts the rounds of done calls, so that a thread in
   * progress sees that another one finished something. */
  struct redcoll__tcp_pop *pend, *pend_tail, *fin, *fin_tail;
  uint64_t gen;
  /* On the embedder's loop (ext): a check handle that finishes posted
   * exchanges after every poll (ref'd while some are running, so that the
   * loop stays alive for them), an idle one that makes the next turn not
   * wait (an exchange finished outside a callback), a timer for their
   * deadlines; in_cb: one of their callbacks is on the stack (a done, the
   * embedder's request callbacks); handles: the transport's handles not
   * closed yet, and dying: destroyed, freed by the last close. */
  uv_check_t nb_check;
  uv_idle_t nb_idle;
  uv_timer_t nb_timer;
  int nb_init, in_cb, dying;
  /* Destroyed on the program's loop with frames or a message's pieces still
   * to write: the connections stay open until they are out, or until
   * REDCOLL__TCP_LINGER_NS pass with nothing written (linger_until);
   * linger_left: the bytes still to go at the last look. */
  int lingering;
  uint64_t linger_until;
  size_t linger_left;
  long handles;
  /* Frees t (tcp.c): called by the last close callback once dying. */
  void (*gone)(struct redcoll__tcp *t);
  int auth;                /* a secret is set: connections authenticate */
  int leaving;             /* destroy has begun: connections set up now say BYE */
  double kernel_ranks_per_cpu; /* from the host identities (shm/host.c); 0: not known */
  unsigned char key[32];   /* SHA-256 of the secret */
};

#endif /* REDCOLL_TCP_INT_H */
