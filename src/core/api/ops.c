/*
 * Reduction operators and data types: the ten built-in operator objects and
 * their public handles, user operators, and the size and name tables of the
 * data types.  The arithmetic itself lives in kernels.c.
 */
#include <stdlib.h>

#include "internal.h"

/* The built-in operators are constant objects indexed by their id, so that
 * redcoll_op_destroy can recognise them by address. */
static const struct redcoll_op redcoll__builtin_ops[REDCOLL__OP_COUNT] = {
    [REDCOLL__OP_SUM] = {REDCOLL__OP_SUM, 1, NULL, 0, NULL},
    [REDCOLL__OP_PROD] = {REDCOLL__OP_PROD, 1, NULL, 0, NULL},
    [REDCOLL__OP_MIN] = {REDCOLL__OP_MIN, 1, NULL, 0, NULL},
    [REDCOLL__OP_MAX] = {REDCOLL__OP_MAX, 1, NULL, 0, NULL},
    [REDCOLL__OP_BAND] = {REDCOLL__OP_BAND, 1, NULL, 0, NULL},
    [REDCOLL__OP_BOR] = {REDCOLL__OP_BOR, 1, NULL, 0, NULL},
    [REDCOLL__OP_BXOR] = {REDCOLL__OP_BXOR, 1, NULL, 0, NULL},
    [REDCOLL__OP_LAND] = {REDCOLL__OP_LAND, 1, NULL, 0, NULL},
    [REDCOLL__OP_LOR] = {REDCOLL__OP_LOR, 1, NULL, 0, NULL},
    [REDCOLL__OP_LXOR] = {REDCOLL__OP_LXOR, 1, NULL, 0, NULL},
    [REDCOLL__OP_MINLOC] = {REDCOLL__OP_MINLOC, 1, NULL, 0, NULL},
    [REDCOLL__OP_MAXLOC] = {REDCOLL__OP_MAXLOC, 1, NULL, 0, NULL},
};

REDCOLL_API const redcoll_op *const REDCOLL_SUM = &redcoll__builtin_ops[REDCOLL__OP_SUM];
REDCOLL_API const redcoll_op *const REDCOLL_PROD = &redcoll__builtin_ops[REDCOLL__OP_PROD];
REDCOLL_API const redcoll_op *const REDCOLL_MIN = &redcoll__builtin_ops[REDCOLL__OP_MIN];
REDCOLL_API const redcoll_op *const REDCOLL_MAX = &redcoll__builtin_ops[REDCOLL__OP_MAX];
REDCOLL_API const redcoll_op *const REDCOLL_BAND = &redcoll__builtin_ops[REDCOLL__OP_BAND];
REDCOLL_API const redcoll_op *const REDCOLL_BOR = &redcoll__builtin_ops[REDCOLL__OP_BOR];
REDCOLL_API const redcoll_op *const REDCOLL_BXOR = &redcoll__builtin_ops[REDCOLL__OP_BXOR];
REDCOLL_API const redcoll_op *const REDCOLL_LAND = &redcoll__builtin_ops[REDCOLL__OP_LAND];
REDCOLL_API const redcoll_op *const REDCOLL_LOR = &redcoll__builtin_ops[REDCOLL__OP_LOR];
REDCOLL_API const redcoll_op *const REDCOLL_LXOR = &redcoll__builtin_ops[REDCOLL__OP_LXOR];
REDCOLL_API const redcoll_op *const REDCOLL_MINLOC = &redcoll__builtin_ops[REDCOLL__OP_MINLOC];
REDCOLL_API const redcoll_op *const REDCOLL_MAXLOC = &redcoll__builtin_ops[REDCOLL__OP_MAXLOC];

static int redcoll__is_builtin(const redcoll_op *op) {
  /* Compare addresses as integers: relational operators on pointers into
   * different objects are undefined. */
  uintptr_t p = (uintptr_t)op;
  uintptr_t lo = (uintptr_t)&redcoll__builtin_ops[0];
  uintptr_t hi = (uintptr_t)&redcoll__builtin_ops[REDCOLL__OP_COUNT];
  return p >= lo && p < hi;
}

REDCOLL_API int redcoll_op_create(redcoll_user_fn fn, size_t elem_size, int commutative, void *ctx,
                                  redcoll_op **out) {
  if (out == NULL) return REDCOLL_EINVAL;
  *out = NULL;
  if (fn == NULL || elem_size == 0) return REDCOLL_EINVAL;
  redcoll_op *op = malloc(sizeof *op);
  if (op == NULL) return REDCOLL_ENOMEM;
  op->id = REDCOLL__OP_USER;
  op->commutative = commutative != 0;
  op->fn = fn;
  op->elem_size = elem_size;
  op->ctx = ctx;
  *out = op;
  return REDCOLL_OK;
}

REDCOLL_API void redcoll_op_destroy(redcoll_op *op) {
  if (op == NULL || redcoll__is_builtin(op)) return;
  free(op);
}

REDCOLL_API int redcoll_op_is_commutative(const redcoll_op *op) {
  if (op == NULL) return REDCOLL_EINVAL;
  return op->commutative != 0;
}

/* ---- data types ---------------------------------------------------------- */

static const struct {
  size_t size;
  const char *name;
} redcoll__dtypes[REDCOLL_DTYPE_COUNT] = {
    [REDCOLL_INT8] = {1, "int8"},       [REDCOLL_UINT8] = {1, "uint8"},
    [REDCOLL_INT16] = {2, "int16"},     [REDCOLL_UINT16] = {2, "uint16"},
    [REDCOLL_INT32] = {4, "int32"},     [REDCOLL_UINT32] = {4, "uint32"},
    [REDCOLL_INT64] = {8, "int64"},     [REDCOLL_UINT64] = {8, "uint64"},
    [REDCOLL_FLOAT16] = {2, "float16"}, [REDCOLL_BFLOAT16] = {2, "bfloat16"},
    [REDCOLL_FLOAT32] = {4, "float32"}, [REDCOLL_FLOAT64] = {8, "float64"},
    [REDCOLL_CUSTOM] = {0, "custom"},
    [REDCOLL_FLOAT32_INT32] = {sizeof(redcoll_float32_int32), "float32_int32"},
    [REDCOLL_FLOAT64_INT32] = {sizeof(redcoll_float64_int32), "float64_int32"},
    [REDCOLL_INT32_INT32] = {sizeof(redcoll_int32_int32), "int32_int32"},
    [REDCOLL_INT64_INT32] = {sizeof(redcoll_int64_int32), "int64_int32"},
    [REDCOLL_FLOAT32_INT64] = {sizeof(redcoll_float32_int64), "float32_int64"},
    [REDCOLL_FLOAT64_INT64] = {sizeof(redcoll_float64_int64), "float64_int64"},
    [REDCOLL_INT32_INT64] = {sizeof(redcoll_int32_int64), "int32_int64"},
    [REDCOLL_INT64_INT64] = {sizeof(redcoll_int64_int64), "int64_int64"},
};

REDCOLL_API size_t redcoll_dtype_size(redcoll_dtype dt) {
  /* The enum may be signed or unsigned; the cast catches negatives too. */
  if ((unsigned)dt >= (unsigned)REDCOLL_DTYPE_COUNT) return 0;
  return redcoll__dtypes[dt].size;
}

REDCOLL_API const char *redcoll_dtype_name(redcoll_dtype dt) {
  if ((unsigned)dt >= (unsigned)REDCOLL_DTYPE_COUNT) return NULL;
  return redcoll__dtypes[dt].name;
}

size_t redcoll__elem_size(redcoll_dtype dt, const redcoll_op *op) {
  if (dt == REDCOLL_CUSTOM) return op != NULL && op->id == REDCOLL__OP_USER ? op->elem_size : 0;
  return redcoll_dtype_size(dt);
}
