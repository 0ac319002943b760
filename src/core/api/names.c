/* Status names and messages, and the names of collectives and algorithms,
 * all generated from the X-macro tables of redcoll.h. */
#include <string.h>

#include "internal.h"

REDCOLL_API const char *redcoll_strerror(int status) {
  switch (status) {
#define REDCOLL__MSG(name, val, msg) \
  case REDCOLL_##name:              \
    return msg;
    REDCOLL_STATUS_MAP(REDCOLL__MSG)
#undef REDCOLL__MSG
  }
  return "unknown status";
}

REDCOLL_API const char *redcoll_status_name(int status) {
  switch (status) {
#define REDCOLL__NAME(name, val, msg) \
  case REDCOLL_##name:               \
    return "REDCOLL_" #name;
    REDCOLL_STATUS_MAP(REDCOLL__NAME)
#undef REDCOLL__NAME
  }
  return "REDCOLL_UNKNOWN";
}

static const char *const coll_names[REDCOLL_COLL_COUNT] = {
    "allreduce", "reduce", "reduce_scatter_block", "reduce_scatter", "allgather",
    "allgatherv", "bcast", "gather", "scatter", "barrier", "scan", "exscan", "exscan_total",
    "alltoall", "alltoallv", "gatherv", "scatterv", "allgatherv_displs",
};

REDCOLL_API const char *redcoll_coll_name(redcoll_coll coll) {
  if ((unsigned)coll >= REDCOLL_COLL_COUNT) return NULL;
  return coll_names[coll];
}

REDCOLL_API int redcoll_coll_parse(const char *name, redcoll_coll *out) {
  if (name == NULL || out == NULL) return REDCOLL_EINVAL;
  for (int i = 0; i < REDCOLL_COLL_COUNT; i++) {
    if (strcmp(name, coll_names[i]) == 0) {
      *out = (redcoll_coll)i;
      return REDCOLL_OK;
    }
  }
  return REDCOLL_EINVAL;
}

static const char *const algo_names[REDCOLL_ALGO_COUNT] = {
#define REDCOLL__ALGO_STR(name, str) str,
    REDCOLL_ALGO_MAP(REDCOLL__ALGO_STR)
#undef REDCOLL__ALGO_STR
};

REDCOLL_API const char *redcoll_algo_name(redcoll_algo a) {
  if ((unsigned)a >= REDCOLL_ALGO_COUNT) return NULL;
  return algo_names[a];
}

REDCOLL_API int redcoll_algo_parse(const char *name, redcoll_algo *out) {
  if (name == NULL || out == NULL) return REDCOLL_EINVAL;
  for (int i = 0; i < REDCOLL_ALGO_COUNT; i++) {
    if (strcmp(name, algo_names[i]) == 0) {
      *out = (redcoll_algo)i;
      return REDCOLL_OK;
    }
  }
  return REDCOLL_EINVAL;
}
