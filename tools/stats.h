/*
 * The few statistics the tools and benchmarks print: a monotonic clock,
 * sorting doubles, the median and a quantile.  Header-only, for the tools
 * and bench/ (the library does not use it).
 */
#ifndef REDCOLL_TOOLS_STATS_H
#define REDCOLL_TOOLS_STATS_H

#include <math.h>
#include <stdlib.h>
#include <time.h>

/* Seconds on CLOCK_MONOTONIC. */
static inline double stats_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* For qsort: ascending doubles. */
static inline int stats_cmp_double(const void *x, const void *y) {
  double a = *(const double *)x, b = *(const double *)y;
  return (a > b) - (a < b);
}

static inline void stats_sort(double *v, size_t n) { qsort(v, n, sizeof *v, stats_cmp_double); }

/* The median of n sorted values (the mean of the middle two for even n). */
static inline double stats_median_sorted(const double *v, size_t n) {
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Sorts v and returns its median. */
static inline double stats_median(double *v, size_t n) {
  stats_sort(v, n);
  return stats_median_sorted(v, n);
}

/* The q-quantile (0..1) of n sorted values, nearest rank. */
static inline double stats_quantile(const double *v, size_t n, double q) {
  long k = (long)ceil(q * (double)n) - 1;
  if (k < 0) k = 0;
  if (k >= (long)n) k = (long)n - 1;
  return v[k];
}

#endif
