/*
 * The push transport's message header: 32 bytes, little-endian, in front
 * of every message the program carries for redcoll.
 *
 *   0  u32 magic "RCPM"      16  u64 channel (DATA, CANCEL, CLOSE)
 *   4  u8  version (1)       24  u64 tag (DATA)
 *   5  u8  type
 *   6  u16 zero
 *   8  i32 sender's rank
 *  12  i32 status (CANCEL, ABORT: the sender's reason)
 *
 * A DATA message's payload is everything after the header; the other types
 * have none.  Parsing is pure so that the fuzzer reaches it.
 */
#include "push_int.h"

static void put32(unsigned char *p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}
static void put64(unsigned char *p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}
static uint32_t get32(const unsigned char *p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; i++) v |= (uint32_t)p[i] << (8 * i);
  return v;
}
static uint64_t get64(const unsigned char *p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; i++) v |= (uint64_t)p[i] << (8 * i);
  return v;
}

void redcoll__push_frame_encode(const push_frame *f, unsigned char out[PUSH_HEADER]) {
  put32(out, PUSH_MAGIC);
  out[4] = PUSH_VERSION;
  out[5] = (unsigned char)f->type;
  out[6] = out[7] = 0;
  put32(out + 8, (uint32_t)f->src);
  put32(out + 12, (uint32_t)f->status);
  put64(out + 16, f->chan);
  put64(out + 24, f->tag);
}

int redcoll__push_frame_decode(const void *msg, size_t len, int size, push_frame *f) {
  const unsigned char *p = msg;
  if (msg == NULL || len < PUSH_HEADER) return REDCOLL_EPROTO;
  if (get32(p) != PUSH_MAGIC || p[4] != PUSH_VERSION || p[6] != 0 || p[7] != 0)
    return REDCOLL_EPROTO;
  f->type = p[5];
  f->src = (int32_t)get32(p + 8);
  f->status = (int32_t)get32(p + 12);
  f->chan = get64(p + 16);
  f->tag = get64(p + 24);
  f->payload = p + PUSH_HEADER;
  f->len = len - PUSH_HEADER;
  if (f->src < 0 || f->src >= size) return REDCOLL_EPROTO;
  switch (f->type) {
  case PUSH_DATA:
    return REDCOLL_OK;
  case PUSH_CANCEL:
  case PUSH_CLOSE:
    if (f->chan % REDCOLL_TRANSPORT_CHANNEL_GROUP != 0) return REDCOLL_EPROTO;
    /* fall through */
  case PUSH_ABORT:
  case PUSH_BYE:
    if (f->len != 0 || f->tag != 0) return REDCOLL_EPROTO;
    if ((f->type == PUSH_ABORT || f->type == PUSH_BYE) && f->chan != 0) return REDCOLL_EPROTO;
    /* A reason is a redcoll status: negative and small. */
    if (f->type == PUSH_CLOSE || f->type == PUSH_BYE) return f->status == 0 ? REDCOLL_OK : REDCOLL_EPROTO;
    if (f->status >= 0 || f->status < -1000) return REDCOLL_EPROTO;
    return REDCOLL_OK;
  default:
    return REDCOLL_EPROTO;
  }
}
