/*
 * libFuzzer target: the TCP frame header parser (redcoll__tcp_decode).
 * Every 32-byte window of the input is decoded; a header that decodes must
 * encode back to the same bytes, have a known type, and an authentication
 * frame's step must map to a payload length or be rejected by
 * redcoll__tcp_auth_len.  Built and run by scripts/fuzz.sh.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "transport/tcp/tcp_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  for (size_t off = 0; off + REDCOLL__TCP_HDR <= size; off += (size % 7) + 1) {
    redcoll__tcp_frame f;
    if (redcoll__tcp_decode(data + off, &f) != REDCOLL_OK) continue;
    if (f.type < REDCOLL__FR_DATA || f.type > REDCOLL__FR_CLOSE) abort();
    if (f.chan != 0 && f.type != REDCOLL__FR_DATA && f.type != REDCOLL__FR_CANCEL &&
        f.type != REDCOLL__FR_CLOSE)
      abort();
    unsigned char back[REDCOLL__TCP_HDR];
    redcoll__tcp_encode_ch(back, f.type, f.tag, f.len, f.chan);
    if (memcmp(back, data + off, REDCOLL__TCP_HDR) != 0) abort();
    if (f.type == REDCOLL__FR_AUTH) {
      int n = redcoll__tcp_auth_len(f.tag);
      if (n > REDCOLL__AUTH_NONCE + REDCOLL__AUTH_MAC) abort();
    }
  }
  return 0;
}
