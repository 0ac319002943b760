/* The wire format of the TCP transport (wire.c): the frame header, the
 * frame types, the set-up's payloads and the authentication steps, and the
 * pure functions that write and check them. */
#ifndef REDCOLL_TCP_WIRE_H
#define REDCOLL_TCP_WIRE_H

#include <stddef.h>
#include <stdint.h>

#define REDCOLL__TCP_MAGIC 0x4c434452u /* "RDCL" little-endian */
#define REDCOLL__TCP_VERSION 5
/* magic (u32), version (u8), type (u8), two zero bytes, tag (u64), len (u64),
 * channel (u64; 0 but in DATA, CANCEL and CLOSE), all little-endian. */
#define REDCOLL__TCP_HDR 32
/* An address in the rendezvous: family (u16: 4 or 6), port (u16), 16 bytes
 * of address (IPv4 in the first 4). */
#define REDCOLL__TCP_ADDR_WIRE 20

enum {
  REDCOLL__FR_DATA = 1,  /* tag: the message tag; len: payload bytes; channel:
                          * the message's (matched per peer and channel) */
  REDCOLL__FR_HELLO = 2, /* first frame of a connection; tag: rank | size << 32;
                          * len: HELLO_LEN, the job id (u64) and the
                          * communicator's number (u64, see below).  The
                          * accepting rank answers with a HELLO of its own
                          * (its rank, its job id and number) and closes the
                          * connection after it if they differ; the
                          * connecting rank sends nothing else until then */
  REDCOLL__FR_BYE = 3,   /* the sender is closing normally; len 0; tag bit 0
                          * if it has a connection to the receiver that may
                          * still carry data (it ends with a BYE of its own),
                          * and whether and why it was aborted (see
                          * REDCOLL__TCP_BYE_BITS) */
  REDCOLL__FR_ABORT = 4, /* reserved: wire version 4's abort of the whole
                          * transport, which CANCEL replaced; an ABORT tag
                          * (CANCEL's) is the sender's status (low 32 bits)
                          * and a reason (bits 32..39: 1 = authentication
                          * with rank (bits 40..63) failed) */
  REDCOLL__FR_REG = 5,   /* rendezvous: tag: rank | size << 32; len: ADDR_WIRE + 8:
                          * the address, the configured job id (0: none) */
  REDCOLL__FR_TABLE = 6, /* rendezvous: tag: size; len: TABLE_HEAD + size *
                          * ADDR_WIRE: the job's id (u64), the host's CPUs
                          * (u32: rank 0's online CPUs when every address is
                          * on one host, else 0), every rank's address */
  REDCOLL__FR_AUTH = 7,  /* authentication (a shared secret): tag: the step,
                          * len: its payload (REDCOLL__AUTH_*) */
  REDCOLL__FR_CANCEL = 8, /* the sender gave up on the communicator of the
                           * channel group `channel`; len 0; tag as ABORT's */
  REDCOLL__FR_CLOSE = 9,  /* the sender destroyed the communicator of the
                           * channel group `channel`: nothing more comes on
                           * it (sent after its last message); len 0, tag 0 */
};

/* The part of a TABLE's payload before the addresses. */
#define REDCOLL__TCP_TABLE_HEAD 12
/* The payload of a HELLO: the job id and the communicator's number, u64
 * little-endian each.  The number tells apart communicators made one after
 * the other on the same ports with the same job id: a communicator from a
 * host list is the n-th of its job id, rank and size in its process (1,
 * 2, ...); one from a rendezvous has 0 (the rendezvous already keeps them
 * apart). */
#define REDCOLL__TCP_HELLO_LEN 16

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

typedef struct redcoll__tcp_frame {
  unsigned type;
  uint64_t tag;
  uint64_t len;
  uint64_t chan;
} redcoll__tcp_frame;

/* A BYE's tag: bit 0, the sender's data connection to the receiver is
 * still open; bit 1, the sender left after an abort; then bits 2..17 the
 * rank that aborted (0xffff: not known, not sent today), bit 18 its
 * authentication failed,
 * bits 19..34 with which rank, bits 35..50 the abort's status (int16).
 * Nothing above. */
#define REDCOLL__TCP_BYE_BITS 51

void redcoll__tcp_encode(unsigned char *out, unsigned type, uint64_t tag, uint64_t len);
/* The same with a channel (DATA, CANCEL, CLOSE). */
void redcoll__tcp_encode_ch(unsigned char *out, unsigned type, uint64_t tag, uint64_t len,
                            uint64_t chan);
/* REDCOLL_EPROTO if magic, version, reserved bits or type are wrong, or a
 * frame other than DATA, CANCEL and CLOSE has a channel. */
int redcoll__tcp_decode(const unsigned char *in, redcoll__tcp_frame *f);
/* The rank a HELLO frame header f received by `rank` of a job of `size`
 * announces, or -1 with the reason in *why (another type, size, payload
 * length or a bad rank).  Its payload, the job id, is compared after. */
int redcoll__tcp_hello_check(const redcoll__tcp_frame *f, int rank, int size, const char **why);

#endif /* REDCOLL_TCP_WIRE_H */
