/*
 * Overlap of a nonblocking allreduce with the program's own computation,
 * over TCP under redcoll-run (ranks of one host through shared memory;
 * REDCOLL_SHM=0 for loopback TCP):
 *
 *   redcoll-run -n 2 --no-prefix build/bench/bench_overlap [--bytes 8M] [--iters 15]
 *                                                           [--comp-ms MS]
 *
 * Per iteration, all ranks together (a barrier in between):
 *   coll     redcoll_iallreduce of --bytes float32, then redcoll_wait;
 *   comp     a computation of the program's (sums over a private 256 KiB
 *            array), sized at start so that it takes about as long as coll
 *            (the median of three), or --comp-ms milliseconds: rank 0's
 *            estimate, refined twice by timing it with all ranks computing;
 *   both     the progress thread on, redcoll_iallreduce, the computation,
 *            redcoll_wait.
 * Rank 0 prints CSV: p,bytes,coll_us,comp_us,both_us,ratio,comp_cpu_us,
 * both_comp_cpu_us where the times are medians, ratio = both / max(coll,
 * comp): 1.0 is full overlap, 2.0 none; and the last two the CPU time of
 * the computation's thread in comp and in both (more in both: the
 * collective's work, or the kernel's network work, ran on its CPU).  On a
 * machine with fewer CPUs than ranks times two (each rank's computation
 * and its progress thread) the two compete for CPU and the ratio says so.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "redcoll/redcoll.h"
#include "redcoll/tcp.h"

static double clock_us(clockid_t id) {
  struct timespec ts;
  clock_gettime(id, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static double now_us(void) { return clock_us(CLOCK_MONOTONIC); }
/* The CPU time of the calling thread. */
static double thread_cpu_us(void) { return clock_us(CLOCK_THREAD_CPUTIME_ID); }

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_d);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* The program's computation: passes over a private array. */
static volatile double sink;
static void compute(long passes) {
  static double a[32768];
  double s = 0;
  for (long p = 0; p < passes; p++)
    for (int i = 0; i < 32768; i++) {
      a[i] = a[i] * 0.999 + 1.0;
      s += a[i];
    }
  sink = s;
}

static size_t parse_size(const char *s) {
  char *end;
  double v = strtod(s, &end);
  if (*end == 'K' || *end == 'k') v *= 1024;
  if (*end == 'M' || *end == 'm') v *= 1024 * 1024;
  return (size_t)v;
}

int main(int argc, char **argv) {
  size_t bytes = 8u << 20;
  int iters = 15;
  double comp_ms = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "--bytes") == 0) bytes = parse_size(argv[i + 1]);
    else if (strcmp(argv[i], "--iters") == 0) iters = atoi(argv[i + 1]);
    else if (strcmp(argv[i], "--comp-ms") == 0) comp_ms = atof(argv[i + 1]);
  }
  if (iters < 1) iters = 1;
  redcoll_comm *c;
  int rc = redcoll_tcp_comm_create_from_env(&c);
  if (rc != REDCOLL_OK) {
    fprintf(stderr, "bench_overlap: %s (start it with redcoll-run)\n", redcoll_strerror(rc));
    return 1;
  }
  int rank = redcoll_comm_rank(c), p = redcoll_comm_size(c);
  size_t n = bytes / sizeof(float);
  float *in = malloc(n * sizeof *in), *out = malloc(n * sizeof *out);
  for (size_t i = 0; i < n; i++) in[i] = (float)(rank + (int)(i % 7));
  double *tc = calloc((size_t)iters, sizeof *tc), *tp = calloc((size_t)iters, sizeof *tp),
         *tb = calloc((size_t)iters, sizeof *tb), *cp = calloc((size_t)iters, sizeof *cp),
         *cb = calloc((size_t)iters, sizeof *cb);
  redcoll_request *req;

  /* Warm up, and size the computation like the collective (rank 0's
   * measurement, shared so that all ranks compute the same). */
  redcoll_iallreduce(c, in, out, n, REDCOLL_FLOAT32, REDCOLL_SUM, &req);
  redcoll_wait(req);
  double guess[3], t0;
  for (int k = 0; k < 3; k++) {
    redcoll_barrier(c);
    t0 = now_us();
    redcoll_iallreduce(c, in, out, n, REDCOLL_FLOAT32, REDCOLL_SUM, &req);
    redcoll_wait(req);
    guess[k] = now_us() - t0;
  }
  double coll_guess = comp_ms > 0 ? comp_ms * 1e3 : median(guess, 3);
  compute(20); /* its array's pages touched */
  t0 = now_us();
  compute(200);
  double passes = coll_guess / ((now_us() - t0) / 200);
  /* Then refined twice with all ranks computing at once, as they do below
   * (one rank's estimate alone was off by 2 x now and then). */
  for (int round = 0; round < 2; round++) {
    redcoll_bcast(c, &passes, 1, REDCOLL_FLOAT64, 0);
    double took[3];
    for (int k = 0; k < 3; k++) {
      redcoll_barrier(c);
      t0 = now_us();
      compute(passes < 1 ? 1 : (long)passes);
      took[k] = now_us() - t0;
    }
    passes *= coll_guess / median(took, 3);
  }
  redcoll_bcast(c, &passes, 1, REDCOLL_FLOAT64, 0);
  long np = passes < 1 ? 1 : (long)passes;

  for (int it = 0; it < iters && rc == REDCOLL_OK; it++) {
    redcoll_barrier(c);
    t0 = now_us();
    rc = redcoll_iallreduce(c, in, out, n, REDCOLL_FLOAT32, REDCOLL_SUM, &req);
    if (rc == REDCOLL_OK) rc = redcoll_wait(req);
    tc[it] = now_us() - t0;

    redcoll_barrier(c);
    t0 = now_us();
    double u0 = thread_cpu_us();
    compute(np);
    cp[it] = thread_cpu_us() - u0;
    tp[it] = now_us() - t0;

    redcoll_barrier(c);
    if (rc == REDCOLL_OK) rc = redcoll_comm_set_progress_thread(c, 1);
    if (rc == REDCOLL_ENOTSUP && rank == 0)
      fprintf(stderr, "bench_overlap: this transport has no progress thread\n");
    t0 = now_us();
    if (rc == REDCOLL_OK) rc = redcoll_iallreduce(c, in, out, n, REDCOLL_FLOAT32, REDCOLL_SUM, &req);
    u0 = thread_cpu_us();
    compute(np);
    cb[it] = thread_cpu_us() - u0;
    if (rc == REDCOLL_OK) rc = redcoll_wait(req);
    tb[it] = now_us() - t0;
    redcoll_comm_set_progress_thread(c, 0);
  }
  if (rc != REDCOLL_OK) {
    fprintf(stderr, "rank %d: %s\n", rank, redcoll_strerror(rc));
  } else {
    /* Check the last result: element i sums rank + i % 7 over the ranks. */
    for (size_t i = 0; i < n && rc == REDCOLL_OK; i++)
      if (out[i] != (float)(p * (p - 1) / 2 + p * (int)(i % 7))) rc = REDCOLL_EINVAL;
    double mc = median(tc, iters), mp = median(tp, iters), mb = median(tb, iters);
    if (rank == 0)
      printf("p,bytes,coll_us,comp_us,both_us,ratio,comp_cpu_us,both_comp_cpu_us\n"
             "%d,%zu,%.0f,%.0f,%.0f,%.3f,%.0f,%.0f\n",
             p, bytes, mc, mp, mb, mb / (mc > mp ? mc : mp), median(cp, iters), median(cb, iters));
  }
  free(in);
  free(out);
  free(tc);
  free(tp);
  free(tb);
  free(cp);
  free(cb);
  redcoll_comm_destroy(c);
  return rc != REDCOLL_OK;
}
