/*
 * The pure parts of the TCP wire format: frame headers, the checks of the
 * HELLO and of authentication frames.  No I/O and no libuv calls, so that
 * the fuzz targets (fuzz/) exercise exactly the code the transport runs.
 */
#include "base.h"
#include "wire.h"

void redcoll__tcp_put_le(unsigned char *p, uint64_t v, int n) {
  for (int i = 0; i < n; i++) p[i] = (unsigned char)(v >> (8 * i));
}

uint64_t redcoll__tcp_get_le(const unsigned char *p, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; i--) v = v << 8 | p[i];
  return v;
}

void redcoll__tcp_encode_ch(unsigned char *out, unsigned type, uint64_t tag, uint64_t len,
                            uint64_t chan) {
  redcoll__tcp_put_le(out, REDCOLL__TCP_MAGIC, 4);
  out[4] = REDCOLL__TCP_VERSION;
  out[5] = (unsigned char)type;
  out[6] = out[7] = 0;
  redcoll__tcp_put_le(out + 8, tag, 8);
  redcoll__tcp_put_le(out + 16, len, 8);
  redcoll__tcp_put_le(out + 24, chan, 8);
}

void redcoll__tcp_encode(unsigned char *out, unsigned type, uint64_t tag, uint64_t len) {
  redcoll__tcp_encode_ch(out, type, tag, len, 0);
}

int redcoll__tcp_decode(const unsigned char *in, redcoll__tcp_frame *f) {
  if (redcoll__tcp_get_le(in, 4) != REDCOLL__TCP_MAGIC || in[4] != REDCOLL__TCP_VERSION || in[6] != 0 ||
      in[7] != 0)
    return REDCOLL_EPROTO;
  f->type = in[5];
  if (f->type < REDCOLL__FR_DATA || f->type > REDCOLL__FR_CLOSE) return REDCOLL_EPROTO;
  f->tag = redcoll__tcp_get_le(in + 8, 8);
  f->len = redcoll__tcp_get_le(in + 16, 8);
  f->chan = redcoll__tcp_get_le(in + 24, 8);
  if (f->chan != 0 && f->type != REDCOLL__FR_DATA && f->type != REDCOLL__FR_CANCEL &&
      f->type != REDCOLL__FR_CLOSE)
    return REDCOLL_EPROTO;
  return REDCOLL_OK;
}

uint64_t redcoll__tcp_fnv1a(uint64_t h, const void *p, size_t n) {
  const unsigned char *b = p;
  for (size_t i = 0; i < n; i++) {
    h ^= b[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

int redcoll__tcp_auth_len(uint64_t step) {
  switch (step) {
  case REDCOLL__AUTH_REFUSED: return 0;
  case REDCOLL__AUTH_C1: return REDCOLL__AUTH_NONCE;
  case REDCOLL__AUTH_S2: return REDCOLL__AUTH_NONCE + REDCOLL__AUTH_MAC;
  case REDCOLL__AUTH_C3: return REDCOLL__AUTH_MAC;
  default: return -1;
  }
}

int redcoll__tcp_hello_check(const redcoll__tcp_frame *f, int rank, int size, const char **why) {
  if (f->type != REDCOLL__FR_HELLO) {
    *why = "not a HELLO";
    return -1;
  }
  if (f->len != REDCOLL__TCP_HELLO_LEN) {
    *why = "malformed HELLO";
    return -1;
  }
  if (f->tag >> 32 != (uint64_t)size) {
    *why = "HELLO from a job of another size";
    return -1;
  }
  uint64_t q = f->tag & 0xffffffffu;
  if (q >= (uint64_t)size || q == (uint64_t)rank) {
    *why = "HELLO with a bad rank";
    return -1;
  }
  return (int)q;
}
