/* Configuration of the shared-memory transport from the environment
 * (redcoll_shm_config_from_env): the TCP transport's variables, so that a
 * program started by redcoll-run or a launcher finds its segment. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "base.h"
#include "redcoll/shm.h"

static uint64_t fnv1a(uint64_t h, const char *s) {
  for (; *s != '\0'; s++) {
    h ^= (unsigned char)*s;
    h *= 0x100000001b3ull;
  }
  return h;
}

/* 1 with *out set, 0 if unset, -1 (logged) if not a number up to max. */
static int env_int(const char *name, uint64_t max, long *out) {
  uint64_t v;
  int rc = redcoll__env_u64(name, max, &v);
  if (rc == REDCOLL__ENV_UNSET) return 0;
  if (rc != REDCOLL_OK) {
    redcoll__log(0, "shm: %s=%s is not a number in [0, %llu]", name, redcoll__env(name),
                 (unsigned long long)max);
    return -1;
  }
  *out = (long)v;
  return 1;
}

REDCOLL_API int redcoll_shm_config_from_env(redcoll_shm_config *cfg) {
  if (cfg == NULL) return REDCOLL_EINVAL;
  redcoll_shm_config_init(cfg);
  static const char *const pairs[][2] = {{"REDCOLL_RANK", "REDCOLL_SIZE"},
                                         {"SLURM_PROCID", "SLURM_NTASKS"},
                                         {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
                                         {"PMI_RANK", "PMI_SIZE"}};
  for (size_t i = 0; i < sizeof pairs / sizeof pairs[0] && cfg->rank < 0; i++) {
    long r, s;
    int hr = env_int(pairs[i][0], REDCOLL_SHM_MAX_SIZE - 1, &r),
        hs = env_int(pairs[i][1], REDCOLL_SHM_MAX_SIZE, &s);
    if (hr < 0 || hs < 0) return REDCOLL_EINVAL;
    if (hr != hs) {
      redcoll__log(0, "shm: %s and %s must be set together", pairs[i][0], pairs[i][1]);
      return REDCOLL_EINVAL;
    }
    if (hr) {
      if (s < 1 || r >= s) {
        redcoll__log(0, "shm: %s=%ld is not below %s=%ld", pairs[i][0], r, pairs[i][1], s);
        return REDCOLL_EINVAL;
      }
      cfg->rank = (int)r;
      cfg->size = (int)s;
    }
  }
  if (cfg->rank < 0) {
    redcoll__log(0, "shm: no rank in the environment (REDCOLL_RANK and REDCOLL_SIZE, or a "
                    "launcher's SLURM_PROCID, OMPI_COMM_WORLD_RANK, PMI_RANK)");
    return REDCOLL_EINVAL;
  }
  static __thread char name[64];
  const char *n = redcoll__env("REDCOLL_SHM_NAME");
  if (n == NULL) {
    static const char *const from[] = {"REDCOLL_JOB_ID", "REDCOLL_MASTER", "REDCOLL_HOSTS"};
    for (size_t i = 0; i < 3 && n == NULL; i++) {
      const char *v = redcoll__env(from[i]);
      if (v == NULL) continue;
      uint64_t h = fnv1a(fnv1a(0xcbf29ce484222325ull, from[i]), v);
      snprintf(name, sizeof name, "/redcoll-%u-%016llx", (unsigned)getuid(), (unsigned long long)h);
      n = name;
    }
  }
  if (n == NULL && cfg->size > 1) {
    redcoll__log(0, "shm: no segment name in the environment (REDCOLL_SHM_NAME, or "
                    "REDCOLL_JOB_ID, REDCOLL_MASTER or REDCOLL_HOSTS to derive it from)");
    return REDCOLL_EINVAL;
  }
  cfg->name = n != NULL ? n : "/redcoll-single";
  long ms;
  int h = env_int("REDCOLL_TIMEOUT_MS", 0x7fffffffL, &ms);
  if (h < 0) return REDCOLL_EINVAL;
  if (h > 0) cfg->wait_timeout_ms = ms == 0 ? REDCOLL_WAIT_FOREVER : (uint64_t)ms;
  const char *c = redcoll__env("REDCOLL_SHM_CMA");
  if (c != NULL) {
    if (strcmp(c, "0") == 0) cfg->copy = REDCOLL_SHM_COPY_QUEUE;
    else if (strcmp(c, "1") != 0) {
      redcoll__log(0, "shm: REDCOLL_SHM_CMA=%s is neither 0 nor 1", c);
      return REDCOLL_EINVAL;
    }
  }
  return REDCOLL_OK;
}
