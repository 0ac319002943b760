/*
 * libFuzzer target: the accepting side of the TCP connection set-up, as
 * recv.c and handshake.c parse it: a HELLO (redcoll__tcp_hello_check against a rank, size
 * and job id taken from the input; its payload is the job id), then, as
 * with a secret, the client's
 * authentication steps (redcoll__tcp_auth_len) with their payloads read
 * into a fixed buffer, then DATA headers whose lengths must never be used
 * without a check.  Any memory error or an inconsistent verdict aborts.
 * Built and run by scripts/fuzz.sh.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "transport/tcp/tcp_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 10) return 0;
  int world = 1 + data[0] % 64, rank = data[1] % world;
  uint64_t job = redcoll__tcp_get_le(data + 2, 8);
  size_t off = 10;
  redcoll__tcp_frame f;
  /* HELLO */
  if (size - off < REDCOLL__TCP_HDR || redcoll__tcp_decode(data + off, &f) != REDCOLL_OK) return 0;
  off += REDCOLL__TCP_HDR;
  const char *why = NULL;
  int peer = redcoll__tcp_hello_check(&f, rank, world, &why);
  if (peer < 0) {
    if (why == NULL) abort();
    return 0;
  }
  if (peer >= world || peer == rank || f.type != REDCOLL__FR_HELLO ||
      f.len != REDCOLL__TCP_HELLO_LEN)
    abort();
  /* Its payload: exactly the job id's bytes, then compared. */
  if (size - off < REDCOLL__TCP_HELLO_LEN) return 0;
  if (redcoll__tcp_get_le(data + off, 8) != job) return 0; /* another job: refused */
  off += REDCOLL__TCP_HELLO_LEN;
  /* Authentication: step 1 (client nonce), then step 3 (client MAC). */
  unsigned char abuf[REDCOLL__AUTH_NONCE + REDCOLL__AUTH_MAC];
  int expect = REDCOLL__AUTH_C1;
  while (expect != 0) {
    if (size - off < REDCOLL__TCP_HDR || redcoll__tcp_decode(data + off, &f) != REDCOLL_OK)
      return 0;
    off += REDCOLL__TCP_HDR;
    if (f.type != REDCOLL__FR_AUTH) return 0; /* refused: did not authenticate */
    int n = redcoll__tcp_auth_len(f.tag);
    if (n < 0 || f.len != (uint64_t)n || f.tag != (uint64_t)expect) return 0; /* refused */
    if ((size_t)n > sizeof abuf) abort();
    if (size - off < (size_t)n) return 0;
    memcpy(abuf, data + off, (size_t)n);
    off += (size_t)n;
    expect = expect == REDCOLL__AUTH_C1 ? REDCOLL__AUTH_C3 : 0;
  }
  /* DATA headers: a length is only compared with the posted receive's. */
  size_t posted = (size_t)abuf[0] << 8 | abuf[1];
  while (size - off >= REDCOLL__TCP_HDR && redcoll__tcp_decode(data + off, &f) == REDCOLL_OK) {
    off += REDCOLL__TCP_HDR;
    if (f.type != REDCOLL__FR_DATA || f.len != posted) return 0; /* mismatch or protocol error */
    size_t n = size - off < posted ? size - off : posted;
    off += n;
  }
  return 0;
}
