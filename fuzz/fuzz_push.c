/*
 * libFuzzer target: the push transport's message header
 * (redcoll__push_frame_decode), which parses whatever a program hands to
 * redcoll_push_deliver.  A message that decodes must come from a rank below
 * the size, have a known type, carry a payload only as DATA, and encode
 * back to the same 32 bytes.  Built and run by scripts/fuzz.sh.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "transport/push/push_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  int ranks = size > 0 ? data[0] % 9 + 1 : 1;
  push_frame f;
  if (redcoll__push_frame_decode(data, size, ranks, &f) != REDCOLL_OK) return 0;
  if (f.src < 0 || f.src >= ranks) abort();
  if (f.type < PUSH_DATA || f.type > PUSH_BYE) abort();
  if (f.type != PUSH_DATA && f.len != 0) abort();
  if (f.len != size - PUSH_HEADER || f.payload != data + PUSH_HEADER) abort();
  unsigned char back[PUSH_HEADER];
  redcoll__push_frame_encode(&f, back);
  if (memcmp(back, data, PUSH_HEADER) != 0) abort();
  return 0;
}
