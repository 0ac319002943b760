/*
 * The push transport (include/redcoll/push.h): its state and the header
 * format its two files share.
 *   push.c   the vtable, matching of messages and receives per (peer,
 *            channel), early messages, deadlines, cancel and abort,
 *            redcoll_push_deliver;
 *   frame.c  the 32-byte header: encoding and checking (pure).
 */
#ifndef REDCOLL_PUSH_INT_H
#define REDCOLL_PUSH_INT_H

#include <stddef.h>
#include <stdint.h>

#include "base.h"
#include "redcoll/push.h"
#include "redcoll/transport.h"

#define PUSH_MAGIC 0x4d504352u /* "RCPM" little-endian */
#define PUSH_VERSION 1
#define PUSH_HEADER 32

enum { PUSH_DATA = 1, PUSH_CANCEL = 2, PUSH_ABORT = 3, PUSH_CLOSE = 4, PUSH_BYE = 5 };

typedef struct push_frame {
  int type;
  int src;
  int status;
  uint64_t chan;
  uint64_t tag;
  const unsigned char *payload; /* decode: after the header */
  size_t len;                   /* decode: payload bytes */
} push_frame;

void redcoll__push_frame_encode(const push_frame *f, unsigned char out[PUSH_HEADER]);
/* REDCOLL_OK with *f filled, or REDCOLL_EPROTO for anything that is not a
 * well-formed header of a rank below size. */
int redcoll__push_frame_decode(const void *msg, size_t len, int size, push_frame *f);

#endif /* REDCOLL_PUSH_INT_H */
