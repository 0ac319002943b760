/*
 * The shared-memory transport between two processes of this host, next to
 * memcpy, in one run:
 *   latency    one-way time of a small message: half the round trip of a
 *              ping-pong of --small bytes (redcoll_send / redcoll_recv);
 *   bandwidth  a --large message from rank 0 to rank 1, which answers
 *              with one byte: bytes / time, by cross-memory attach (cma)
 *              and through the queue (queue, REDCOLL_SHM_COPY_QUEUE);
 *   memcpy     the same bytes copied by memcpy in one process (warm
 *              buffers), the bound of a single copy.
 * Every figure is the median of --iters timed repetitions after warm-up.
 * The output is CSV: what,bytes,median_us,GBps, then the ratios to memcpy.
 *
 * Usage: bench_shm [--small BYTES] [--large BYTES] [--iters N]
 *        (defaults 8, 16M, 50)
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "redcoll/redcoll.h"
#include "redcoll/shm.h"
#include "../tools/stats.h"

/* Rank r of a two-rank job: the latency or the bandwidth, into *out (rank
 * 0 only). */
static int job_rank(int r, const char *name, int copy, size_t small, size_t large, int iters,
                    double *lat_out, double *bw_out) {
  redcoll_shm_config cfg;
  redcoll_shm_config_init(&cfg);
  cfg.rank = r;
  cfg.size = 2;
  cfg.name = name;
  cfg.copy = copy;
  redcoll_comm *c = NULL;
  int rc = redcoll_shm_comm_create(&cfg, &c);
  if (rc != REDCOLL_OK) return rc;
  unsigned char *buf = malloc(large > small ? large : small);
  double *t = malloc((size_t)iters * sizeof *t);
  if (buf == NULL || t == NULL) return REDCOLL_ENOMEM;
  memset(buf, r + 1, large > small ? large : small);
  int warm = 20;
  for (int it = 0; it < warm + iters * 10 && rc == REDCOLL_OK && lat_out != NULL; it++) {
    double t0 = stats_now();
    if (r == 0) {
      rc = redcoll_send(c, 1, 1, buf, small);
      if (rc == REDCOLL_OK) rc = redcoll_recv(c, 1, 2, buf, small);
    } else {
      rc = redcoll_recv(c, 0, 1, buf, small);
      if (rc == REDCOLL_OK) rc = redcoll_send(c, 0, 2, buf, small);
    }
    if (it >= warm && (it - warm) % 10 == 0) t[(it - warm) / 10] = (stats_now() - t0) / 2;
  }
  if (lat_out != NULL && r == 0) *lat_out = stats_median(t, (size_t)iters);
  for (int it = 0; it < 3 + iters && rc == REDCOLL_OK && bw_out != NULL; it++) {
    double t0 = stats_now();
    if (r == 0) {
      rc = redcoll_send(c, 1, 3, buf, large);
      if (rc == REDCOLL_OK) rc = redcoll_recv(c, 1, 4, buf, 1);
    } else {
      rc = redcoll_recv(c, 0, 3, buf, large);
      if (rc == REDCOLL_OK) rc = redcoll_send(c, 0, 4, buf, 1);
    }
    if (it >= 3) t[it - 3] = stats_now() - t0;
  }
  if (bw_out != NULL && r == 0) *bw_out = stats_median(t, (size_t)iters);
  free(buf);
  free(t);
  redcoll_comm_destroy(c);
  return rc;
}

/* Runs a two-process job; the results of rank 0 land in shared memory. */
static int job(int copy, size_t small, size_t large, int iters, double *lat, double *bw) {
  double *res = mmap(NULL, 2 * sizeof *res, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (res == MAP_FAILED) return REDCOLL_ENOMEM;
  char name[64];
  static int n;
  snprintf(name, sizeof name, "/redcoll-bench-%d-%d", (int)getpid(), n++);
  pid_t kid[2];
  for (int r = 0; r < 2; r++) {
    kid[r] = fork();
    if (kid[r] == 0)
      _exit(-job_rank(r, name, copy, small, large, iters, lat ? &res[0] : NULL,
                      bw ? &res[1] : NULL));
  }
  int bad = 0;
  for (int r = 0; r < 2; r++) {
    int ws;
    waitpid(kid[r], &ws, 0);
    bad |= !WIFEXITED(ws) || WEXITSTATUS(ws) != 0;
  }
  if (lat) *lat = res[0];
  if (bw) *bw = res[1];
  munmap(res, 2 * sizeof *res);
  return bad ? REDCOLL_ETRANSPORT : REDCOLL_OK;
}

static size_t parse_size(const char *s) {
  char *end;
  double v = strtod(s, &end);
  if (*end == 'K' || *end == 'k') v *= 1024;
  else if (*end == 'M' || *end == 'm') v *= 1024 * 1024;
  return (size_t)v;
}

int main(int argc, char **argv) {
  size_t small = 8, large = (size_t)16 << 20;
  int iters = 50;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "--small") == 0) small = parse_size(argv[i + 1]);
    else if (strcmp(argv[i], "--large") == 0) large = parse_size(argv[i + 1]);
    else if (strcmp(argv[i], "--iters") == 0) iters = atoi(argv[i + 1]);
    else {
      fprintf(stderr, "usage: bench_shm [--small BYTES] [--large BYTES] [--iters N]\n");
      return 2;
    }
  }
  if (iters < 1 || large < 1) return 2;
  double lat = 0, cma = 0, queue = 0;
  if (job(REDCOLL_SHM_COPY_AUTO, small, large, iters, &lat, NULL) != REDCOLL_OK ||
      job(REDCOLL_SHM_COPY_AUTO, small, large, iters, NULL, &cma) != REDCOLL_OK ||
      job(REDCOLL_SHM_COPY_QUEUE, small, large, iters, NULL, &queue) != REDCOLL_OK) {
    fprintf(stderr, "bench_shm: a job failed\n");
    return 1;
  }
  unsigned char *a = malloc(large), *b = malloc(large);
  double *t = malloc((size_t)iters * sizeof *t);
  if (a == NULL || b == NULL || t == NULL) return 1;
  memset(a, 1, large);
  memset(b, 2, large);
  for (int it = 0; it < 3 + iters; it++) {
    double t0 = stats_now();
    memcpy(b, a, large);
    __asm__ volatile("" : : "r"(b) : "memory");
    if (it >= 3) t[it - 3] = stats_now() - t0;
  }
  double mc = stats_median(t, (size_t)iters);
  printf("what,bytes,median_us,GBps\n");
  printf("latency,%zu,%.2f,\n", small, lat * 1e6);
  printf("cma,%zu,%.1f,%.2f\n", large, cma * 1e6, (double)large / cma * 1e-9);
  printf("queue,%zu,%.1f,%.2f\n", large, queue * 1e6, (double)large / queue * 1e-9);
  printf("memcpy,%zu,%.1f,%.2f\n", large, mc * 1e6, (double)large / mc * 1e-9);
  printf("cma/memcpy time ratio %.2f, queue/memcpy %.2f\n", cma / mc, queue / mc);
  free(a);
  free(b);
  free(t);
  return 0;
}
