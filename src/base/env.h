/*
 * The one reader of environment variables, for the core and the transports:
 * each function returns
 * REDCOLL__ENV_UNSET for a variable that is unset or empty, REDCOLL_OK with
 * the value stored, or REDCOLL_EINVAL (nothing stored) for a value that is
 * not what the caller expects; the caller logs that once, with the
 * variable's name and what it expected, and decides what the error means.
 */
#ifndef REDCOLL_ENV_H
#define REDCOLL_ENV_H

#include <stddef.h>
#include <stdint.h>

#define REDCOLL__ENV_UNSET 1

/* The variable's value, or NULL if it is unset or empty. */
const char *redcoll__env(const char *name);

/* Parses exactly n finite numbers >= 0 from s, separated by commas or
 * blanks, trailing blanks allowed: REDCOLL_OK or REDCOLL_EINVAL.  Also for
 * the lines of tuning files. */
int redcoll__parse_numbers(const char *s, double *v, int n);

/* n numbers >= 0 as redcoll__parse_numbers reads them. */
int redcoll__env_doubles(const char *name, double *out, int n);

/* A decimal integer up to max, nothing after it. */
int redcoll__env_u64(const char *name, uint64_t max, uint64_t *out);

/* One of words (a NULL-terminated list); *index gets its position. */
int redcoll__env_word(const char *name, const char *const *words, int *index);

#endif /* REDCOLL_ENV_H */
