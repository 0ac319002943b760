/*
 * MINLOC and MAXLOC on value-index pairs (the REDCOLL_<VALUE>_<INDEX>
 * dtypes of redcoll.h, laid out as its redcoll_<value>_<index> structs).
 * The right pair wins when its value is strictly better; equal values keep
 * the lower index; a comparison false both ways (NaN) keeps the left pair,
 * like MIN and MAX.  Pairs are copied through locals, so any alignment
 * works and out may be left or right.
 */
#include <string.h>

#include "internal.h"

/* One loop per (struct type, operator): better(a, b) is 1 when the right
 * value b beats the left value a. */
#define LOC_LOOP(T, NAME, BETTER)                                                       \
  static void NAME(void *out, const void *left, const void *right, size_t n) {         \
    for (size_t i = 0; i < n; i++) {                                                   \
      T a, b;                                                                          \
      memcpy(&a, (const char *)left + i * sizeof(T), sizeof(T));                       \
      memcpy(&b, (const char *)right + i * sizeof(T), sizeof(T));                      \
      if (BETTER(a.value, b.value) || (a.value == b.value && b.index < a.index)) a = b; \
      memcpy((char *)out + i * sizeof(T), &a, sizeof(T));                              \
    }                                                                                  \
  }
#define LOC_LESS(a, b) ((b) < (a))
#define LOC_MORE(a, b) ((b) > (a))
#define LOC_PAIR(T)                             \
  LOC_LOOP(redcoll_##T, minloc_##T, LOC_LESS) \
  LOC_LOOP(redcoll_##T, maxloc_##T, LOC_MORE)

LOC_PAIR(float32_int32)
LOC_PAIR(float64_int32)
LOC_PAIR(int32_int32)
LOC_PAIR(int64_int32)
LOC_PAIR(float32_int64)
LOC_PAIR(float64_int64)
LOC_PAIR(int32_int64)
LOC_PAIR(int64_int64)

typedef void (*loc_fn)(void *out, const void *left, const void *right, size_t n);

#define LOC_ROW(D, T) [REDCOLL_##D - REDCOLL_FLOAT32_INT32] = {minloc_##T, maxloc_##T}
static const loc_fn loc_table[REDCOLL_DTYPE_COUNT - REDCOLL_FLOAT32_INT32][2] = {
    LOC_ROW(FLOAT32_INT32, float32_int32), LOC_ROW(FLOAT64_INT32, float64_int32),
    LOC_ROW(INT32_INT32, int32_int32),     LOC_ROW(INT64_INT32, int64_int32),
    LOC_ROW(FLOAT32_INT64, float32_int64), LOC_ROW(FLOAT64_INT64, float64_int64),
    LOC_ROW(INT32_INT64, int32_int64),     LOC_ROW(INT64_INT64, int64_int64),
};

int redcoll__is_loc_dtype(redcoll_dtype dt) {
  return dt >= REDCOLL_FLOAT32_INT32 && dt < REDCOLL_DTYPE_COUNT;
}

int redcoll__loc_check(redcoll_dtype dt, const redcoll_op *op) {
  int loc_op = op->id == REDCOLL__OP_MINLOC || op->id == REDCOLL__OP_MAXLOC;
  int loc_dt = redcoll__is_loc_dtype(dt);
  if (!loc_op && !loc_dt) return 1;
  return loc_op && loc_dt ? REDCOLL_OK : REDCOLL_EINVAL;
}

void redcoll__loc_apply(redcoll_dtype dt, int op_id, void *out, const void *left,
                        const void *right, size_t count) {
  loc_table[dt - REDCOLL_FLOAT32_INT32][op_id == REDCOLL__OP_MAXLOC](out, left, right, count);
}
