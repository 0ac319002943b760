/* The core's one reader of environment variables (env.h). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base.h"

const char *redcoll__env(const char *name) {
  const char *s = getenv(name);
  return s != NULL && *s != '\0' ? s : NULL;
}

int redcoll__parse_numbers(const char *s, double *v, int n) {
  char *end;
  for (int i = 0; i < n; i++) {
    while (*s == ' ' || *s == '\t' || (i > 0 && *s == ',')) s++;
    errno = 0;
    v[i] = strtod(s, &end);
    if (end == s || errno != 0 || !isfinite(v[i]) || v[i] < 0) return REDCOLL_EINVAL;
    s = end;
  }
  while (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r') s++;
  return *s == '\0' ? REDCOLL_OK : REDCOLL_EINVAL;
}

int redcoll__env_doubles(const char *name, double *out, int n) {
  const char *s = redcoll__env(name);
  if (s == NULL) return REDCOLL__ENV_UNSET;
  return redcoll__parse_numbers(s, out, n);
}

int redcoll__env_u64(const char *name, uint64_t max, uint64_t *out) {
  const char *s = redcoll__env(name);
  if (s == NULL) return REDCOLL__ENV_UNSET;
  if (*s < '0' || *s > '9') return REDCOLL_EINVAL; /* strtoull takes "-5" and " 5" */
  char *end;
  unsigned long long v = strtoull(s, &end, 10);
  if (*end != '\0' || v > max) return REDCOLL_EINVAL;
  *out = (uint64_t)v;
  return REDCOLL_OK;
}

int redcoll__env_word(const char *name, const char *const *words, int *index) {
  const char *s = redcoll__env(name);
  if (s == NULL) return REDCOLL__ENV_UNSET;
  for (int i = 0; words[i] != NULL; i++) {
    if (strcmp(s, words[i]) == 0) {
      *index = i;
      return REDCOLL_OK;
    }
  }
  return REDCOLL_EINVAL;
}
