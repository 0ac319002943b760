/*
 * Throughput of the local SUM kernels next to memcpy.
 *
 * For each vector size (the bytes of one buffer) it times
 *   memcpy(out, left, bytes)                  counted as 2 x bytes (1 read, 1 write)
 *   redcoll_reduce_local(out, left, right)    counted as 3 x bytes (2 reads, 1 write)
 * with out, left and right three distinct buffers, and prints the median
 * GB/s (10^9 bytes per second) of several samples.  A sample repeats the
 * operation until it lasts a few milliseconds, so small sizes measure
 * cache-resident throughput and 64 MiB measures memory bandwidth.
 *
 * Usage: bench_kernels [samples]   (default 7)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "redcoll/redcoll.h"

#define MIN_SAMPLE_SECONDS 0.005

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

typedef struct {
  const char *name;
  int is_memcpy;
  redcoll_dtype dt;
} bench_case;

static volatile unsigned char sink;

/* One run of the case over bytes bytes; returns a redcoll status. */
static int run_once(const bench_case *bc, void *out, const void *left, const void *right,
                    size_t bytes) {
  if (bc->is_memcpy) {
    memcpy(out, left, bytes);
    return REDCOLL_OK;
  }
  return redcoll_reduce_local(out, left, right, bytes / redcoll_dtype_size(bc->dt), bc->dt,
                              REDCOLL_SUM);
}

/* Median GB/s over nsamples samples, or a negative value on error. */
static double measure(const bench_case *bc, void *out, const void *left, const void *right,
                      size_t bytes, int nsamples) {
  double traffic = (bc->is_memcpy ? 2.0 : 3.0) * (double)bytes;
  double *rates = malloc((size_t)nsamples * sizeof *rates);
  if (rates == NULL) return -1.0;
  /* Warm up (first touch, caches) and find how many repetitions fill a
   * sample. */
  size_t reps = 1;
  for (;;) {
    double t0 = now();
    for (size_t k = 0; k < reps; k++)
      if (run_once(bc, out, left, right, bytes) != REDCOLL_OK) goto fail;
    double dt = now() - t0;
    if (dt >= MIN_SAMPLE_SECONDS) break;
    reps *= 2;
  }
  for (int s = 0; s < nsamples; s++) {
    double t0 = now();
    for (size_t k = 0; k < reps; k++) (void)run_once(bc, out, left, right, bytes);
    double dt = now() - t0;
    rates[s] = traffic * (double)reps / dt / 1e9;
    sink ^= ((const unsigned char *)out)[bytes / 2];
  }
  qsort(rates, (size_t)nsamples, sizeof *rates, cmp_double);
  double median = rates[nsamples / 2];
  free(rates);
  return median;
fail:
  free(rates);
  return -1.0;
}

/* Fills a buffer with harmless values of the dtype (no overflow, no NaN). */
static void fill(void *buf, size_t bytes, redcoll_dtype dt, uint32_t seed) {
  size_t n = bytes / redcoll_dtype_size(dt);
  for (size_t i = 0; i < n; i++) {
    uint32_t v = (uint32_t)(i * 2654435761u + seed) >> 22; /* 0 .. 1023 */
    switch (dt) {
      case REDCOLL_FLOAT32: ((float *)buf)[i] = (float)v * 0.001f; break;
      case REDCOLL_FLOAT64: ((double *)buf)[i] = (double)v * 0.001; break;
      case REDCOLL_FLOAT16: ((uint16_t *)buf)[i] = (uint16_t)(0x3c00u | v); break; /* [1, 2) */
      case REDCOLL_BFLOAT16: ((uint16_t *)buf)[i] = (uint16_t)(0x3f80u | (v & 0x7fu)); break;
      default: break;
    }
  }
}

int main(int argc, char **argv) {
  static const size_t sizes[] = {32u << 10, 1u << 20, 64u << 20};
  static const char *size_names[] = {"32 KiB", "1 MiB", "64 MiB"};
  static const bench_case cases[] = {
      {"memcpy", 1, REDCOLL_UINT8},
      {"sum float32", 0, REDCOLL_FLOAT32},
      {"sum float64", 0, REDCOLL_FLOAT64},
      {"sum bfloat16", 0, REDCOLL_BFLOAT16},
      {"sum float16", 0, REDCOLL_FLOAT16},
  };
  const size_t nsizes = sizeof sizes / sizeof sizes[0];
  const size_t ncases = sizeof cases / sizeof cases[0];
  int nsamples = 7;
  if (argc > 1) {
    nsamples = atoi(argv[1]);
    if (nsamples < 1 || nsamples > 1000) {
      fprintf(stderr, "usage: %s [samples 1..1000]\n", argv[0]);
      return 2;
    }
  }

  size_t max = sizes[nsizes - 1];
  int status = 1;
  unsigned char *out = aligned_alloc(64, max), *left = aligned_alloc(64, max);
  unsigned char *right = aligned_alloc(64, max);
  if (out == NULL || left == NULL || right == NULL) {
    fprintf(stderr, "out of memory\n");
    goto done;
  }
  /* touch every page before timing */
  memset(out, 0, max);
  memset(left, 0, max);
  memset(right, 0, max);

  printf("GB/s (1e9 bytes/s), median of %d samples; out, left, right distinct buffers.\n",
         nsamples);
  printf("memcpy counts 2 x size (1 read + 1 write); sum counts 3 x size (2 reads + 1 write).\n");
  printf("%-14s", "");
  for (size_t s = 0; s < nsizes; s++) printf(" %10s", size_names[s]);
  printf("\n");
  for (size_t c = 0; c < ncases; c++) {
    printf("%-14s", cases[c].name);
    fflush(stdout);
    for (size_t s = 0; s < nsizes; s++) {
      if (!cases[c].is_memcpy) {
        fill(left, sizes[s], cases[c].dt, 1);
        fill(right, sizes[s], cases[c].dt, 2);
      }
      double gbs = measure(&cases[c], out, left, right, sizes[s], nsamples);
      if (gbs < 0) {
        fprintf(stderr, "\n%s failed\n", cases[c].name);
        goto done;
      }
      printf(" %10.2f", gbs);
      fflush(stdout);
    }
    printf("\n");
  }
  status = 0;
done:
  free(out);
  free(left);
  free(right);
  return status;
}
