/*
 * Internals of the TCP transport shared by its files: the frame header, the
 * transport state, and the bootstrap (addresses, environment, rendezvous).
 */
#ifndef REDCOLL_TCP_INT_H
#define REDCOLL_TCP_INT_H

#include <uv.h>

#include "base.h"
#include "redcoll/tcp.h"

/* ---- wire format --------------------------------------------------------- */

#define REDCOLL__TCP_MAGIC 0x4c434452u /* "RDCL" little-endian */
#define REDCOLL__TCP_VERSION 3
#define REDCOLL__TCP_HDR 24
/* The read buffer of an incoming connection (tcp.c). */
#define REDCOLL__TCP_RBUF 16384
/* An address in the rendezvous: family (u16: 4 or 6), port (u16), 16 bytes
 * of address (IPv4 in the first 4). */
#define REDCOLL__TCP_ADDR_WIRE 20

enum {
  REDCOLL__FR_DATA = 1,  /* tag: the message tag; len: payload bytes */
  REDCOLL__FR_HELLO = 2, /* first frame of a connection; tag: rank | size << 32;
                          * len: HELLO_LEN, the job id (u64) */
  REDCOLL__FR_BYE = 3,   /* the sender is closing normally; len 0; tag 1 if it
                          * has a connection to the receiver that may still
                          * carry data (it ends with a BYE of its own), else 0 */
  REDCOLL__FR_ABORT = 4, /* the sender gave up; len 0; tag: its status (low 32
                          * bits), a reason (bits 32..39: 1 = authentication
                          * with rank (bits 40..63) failed) */
  REDCOLL__FR_REG = 5,   /* rendezvous: tag: rank | size << 32; len: ADDR_WIRE + 8:
                          * the address, the configured job id (0: none) */
  REDCOLL__FR_TABLE = 6, /* rendezvous: tag: size; len: TABLE_HEAD + size *
                          * ADDR_WIRE: the job's id (u64), the host's CPUs
                          * (u32: rank 0's online CPUs when every address is
                          * on one host, else 0), every rank's address */
  REDCOLL__FR_AUTH = 7,  /* authentication (a shared secret): tag: the step,
                          * len: its payload (REDCOLL__AUTH_*) */
};

/* The part of a TABLE's payload before the addresses. */
#define REDCOLL__TCP_TABLE_HEAD 12
/* The payload of a HELLO: the job id, u64 little-endian. */
#define REDCOLL__TCP_HELLO_LEN 8

/* The challenge-response after HELLO when the job has a secret; the
 * connecting rank is the client C, the accepting one the server S:
 *   1  C -> S  nonce_C                                   (32 bytes)
 *   2  S -> C  nonce_S, HMAC(k, "S" nonce_C nonce_S C S size)  (64 bytes)
 *   3  C -> S  HMAC(k, "C" nonce_C nonce_S C S size)     (32 bytes)
 *   0  either  refused: the connection closes after it   (no payload)
 * k = SHA-256(secret), HMAC-SHA256; ranks and size as u32 little-endian. */
#define REDCOLL__AUTH_NONCE 32
#define REDCOLL__ASTEP_HELLO 0x100 /* reading a HELLO's payload, not an AUTH's */
#define REDCOLL__AUTH_MAC 32
enum { REDCOLL__AUTH_REFUSED = 0, REDCOLL__AUTH_C1 = 1, REDCOLL__AUTH_S2 = 2, REDCOLL__AUTH_C3 = 3 };

/* The payload length step `step` must have; -1 for no such step. */
int redcoll__tcp_auth_len(uint64_t step);
/* Writes the n low bytes of v little-endian; reads them back. */
void redcoll__tcp_put_le(unsigned char *p, uint64_t v, int n);
uint64_t redcoll__tcp_get_le(const unsigned char *p, int n);
/* 64-bit FNV-1a of n bytes, continuing from h (start with
 * REDCOLL__TCP_FNV_INIT): the digest a job id is made from. */
#define REDCOLL__TCP_FNV_INIT 0xcbf29ce484222325ull
uint64_t redcoll__tcp_fnv1a(uint64_t h, const void *p, size_t n);
/* The job id of a REDCOLL_HOSTS list without a configured one: a digest of
 * its entries as written, whatever separates them (bootstrap.c). */
uint64_t redcoll__tcp_hosts_digest(const char *hosts);

typedef struct redcoll__tcp_frame {
  unsigned type;
  uint64_t tag;
  uint64_t len;
} redcoll__tcp_frame;

void redcoll__tcp_encode(unsigned char *out, unsigned type, uint64_t tag, uint64_t len);
/* REDCOLL_EPROTO if magic, version, reserved bits or type are wrong. */
int redcoll__tcp_decode(const unsigned char *in, redcoll__tcp_frame *f);
/* The rank a HELLO frame header f received by `rank` of a job of `size`
 * announces, or -1 with the reason in *why (another type, size, payload
 * length or a bad rank).  Its payload, the job id, is compared after. */
int redcoll__tcp_hello_check(const redcoll__tcp_frame *f, int rank, int size, const char **why);

/* ---- addresses ------------------------------------------------------------ */

typedef struct sockaddr_storage redcoll__tcp_addr;

/* Parses "host:port", "[v6]:port", "host", ":port" (n bytes of s).
 * default_port < 0 makes the port mandatory.  *has_host is 0 for ":port".
 * Host names are resolved.  REDCOLL_EINVAL if malformed or unresolvable. */
int redcoll__tcp_parse_addr(const char *s, size_t n, int default_port, redcoll__tcp_addr *out,
                            int *has_host);
/* "1.2.3.4:5" or "[::1]:5". */
void redcoll__tcp_addr_str(const redcoll__tcp_addr *a, char *buf, size_t len);
int redcoll__tcp_addr_port(const redcoll__tcp_addr *a);
void redcoll__tcp_addr_set_port(redcoll__tcp_addr *a, int port);
int redcoll__tcp_addr_loopback(const redcoll__tcp_addr *a);
int redcoll__tcp_addr_wildcard(const redcoll__tcp_addr *a);
int redcoll__tcp_addr_equal(const redcoll__tcp_addr *a, const redcoll__tcp_addr *b);
/* The same address apart from the port, or both loopback. */
int redcoll__tcp_addr_same_host(const redcoll__tcp_addr *a, const redcoll__tcp_addr *b);
void redcoll__tcp_addr_encode(unsigned char *out, const redcoll__tcp_addr *a);
int redcoll__tcp_addr_decode(const unsigned char *in, redcoll__tcp_addr *a);
/* The first address of family `family` of an interface that REDCOLL_IFNAME-
 * style spec selects.  REDCOLL_EINVAL (message in why) if none. */
int redcoll__tcp_pick_interface(const char *spec, int family, redcoll__tcp_addr *out, char *why,
                                size_t whylen);

/* ---- transport state ------------------------------------------------------- */

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
  int abort_after_hello; /* opened by abort: send ABORT once connected */
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
  /* What the listener calls for a new connection (tcp.c hands it to the
   * bootstrap, which opens the listener). */
  uv_connection_cb on_accept;
  uint64_t abort_tag; /* the ABORT frame's tag, once aborting */
  uint64_t job;            /* the job id every HELLO must carry */
  uint32_t table_cpus;     /* the rendezvous table's CPU count (0: none) */
  int auth;                /* a secret is set: connections authenticate */
  unsigned char key[32];   /* SHA-256 of the secret */
};

/* Sets t->auth and t->key from the secret (NULL or "": no authentication).
 * REDCOLL_ENOTSUP (logged) if this build has no crypto library. */
int redcoll__tcp_auth_init(redcoll__tcp *t, const char *secret);

/* The listener's connection callback (tcp.c). */
void redcoll__tcp_on_accept(uv_stream_t *server, int status);

/* Fills t->peers[*].addr and t->self and makes t->listener listen (bootstrap.c).
 * Returns a status with the reason logged. */
int redcoll__tcp_bootstrap(redcoll__tcp *t, const redcoll_tcp_config *cfg);

#endif /* REDCOLL_TCP_INT_H */
