/*
 * The TCP demo: 7 processes on this machine (7 is not a power of two, the
 * case redcoll is built for) run an allreduce and a reduce over TCP with
 * every algorithm, check the result exactly on every rank, and rank 0 prints
 * a table of the times.
 *
 * Run it alone and it starts its 7 ranks itself (fork, rendezvous on a free
 * 127.0.0.1 port); or start it under a launcher, which sets the environment
 * the TCP transport reads (REDCOLL_RANK, REDCOLL_SIZE, REDCOLL_MASTER):
 *
 *   build/examples/tcp_demo [P]
 *   build/tools/redcoll-run -n 7 build/examples/tcp_demo
 *
 * Each rank r contributes v_r[i] = r * 1000 + i; the sum over the p ranks is
 * 1000 p (p - 1) / 2 + p i, exact in double precision, and every rank
 * compares every element.  The reduce goes to rank 3 (or the last rank) with
 * REDCOLL_MAX, whose result is v_{p-1}.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <redcoll/redcoll.h>
#include <redcoll/tcp.h>

#define ITERS 5 /* timed calls per point; the median is printed */

static const size_t sizes[] = {8, 64 << 10, 1 << 20}; /* bytes */
#define NSIZES (sizeof sizes / sizeof sizes[0])

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *x, const void *y) {
  double a = *(const double *)x, b = *(const double *)y;
  return a < b ? -1 : a > b;
}

/* Runs the collective ITERS + 1 times (the first call is checked, the
 * others timed); *us gets the median over the calls of the slowest rank's
 * time, *ok whether every rank got the right result. */
static int measure(redcoll_comm *c, redcoll_coll coll, size_t n, double *in, double *out,
                   double *us, int *ok) {
  int me = redcoll_comm_rank(c), p = redcoll_comm_size(c), root = p > 3 ? 3 : p - 1;
  double t[ITERS], slowest[ITERS];
  for (size_t i = 0; i < n; i++) in[i] = me * 1000.0 + (double)i;
  for (int it = 0; it <= ITERS; it++) {
    int rc = redcoll_barrier(c);
    double t0 = now_s();
    if (rc == REDCOLL_OK && coll == REDCOLL_COLL_ALLREDUCE)
      rc = redcoll_allreduce(c, in, out, n, REDCOLL_FLOAT64, REDCOLL_SUM);
    else if (rc == REDCOLL_OK)
      rc = redcoll_reduce(c, in, out, n, REDCOLL_FLOAT64, REDCOLL_MAX, root);
    if (rc != REDCOLL_OK) return rc;
    if (it > 0) {
      t[it - 1] = now_s() - t0;
      continue;
    }
    int64_t bad = 0, anybad = 0;
    for (size_t i = 0; i < n; i++) {
      if (coll == REDCOLL_COLL_ALLREDUCE)
        bad += out[i] != 1000.0 * p * (p - 1) / 2 + (double)p * (double)i;
      else if (me == root)
        bad += out[i] != (p - 1) * 1000.0 + (double)i;
    }
    rc = redcoll_allreduce(c, &bad, &anybad, 1, REDCOLL_INT64, REDCOLL_SUM);
    if (rc != REDCOLL_OK) return rc;
    *ok = anybad == 0;
  }
  int rc = redcoll_allreduce(c, t, slowest, ITERS, REDCOLL_FLOAT64, REDCOLL_MAX);
  qsort(slowest, ITERS, sizeof *slowest, cmp_double);
  *us = slowest[ITERS / 2] * 1e6;
  return rc;
}

static int rank_main(redcoll_comm *c) {
  int me = redcoll_comm_rank(c), p = redcoll_comm_size(c), failures = 0, rc = REDCOLL_OK;
  size_t n_max = sizes[NSIZES - 1] / sizeof(double);
  double *in = malloc(n_max * sizeof *in), *out = malloc(n_max * sizeof *out);
  if (in == NULL || out == NULL) return REDCOLL_ENOMEM;
  static const redcoll_coll colls[] = {REDCOLL_COLL_ALLREDUCE, REDCOLL_COLL_REDUCE};
  for (int k = 0; k < 2 && rc == REDCOLL_OK; k++) {
    if (me == 0) {
      printf("\n%s of float64 over TCP, p = %d; median of %d calls in microseconds\n",
             redcoll_coll_name(colls[k]), p, ITERS);
      printf("%-24s %10s %10s %10s  %s\n", "algorithm", "8 B", "64 KiB", "1 MiB", "result");
    }
    for (int a = 1; a < REDCOLL_ALGO_COUNT && rc == REDCOLL_OK; a++) {
      if (!redcoll_algo_is_supported(colls[k], (redcoll_algo)a)) continue;
      rc = redcoll_comm_set_algorithm(c, colls[k], (redcoll_algo)a);
      double us[NSIZES];
      int ok_all = 1;
      for (size_t s = 0; s < NSIZES && rc == REDCOLL_OK; s++) {
        int ok = 0;
        rc = measure(c, colls[k], sizes[s] / sizeof(double), in, out, &us[s], &ok);
        ok_all &= ok;
      }
      if (rc != REDCOLL_OK) break;
      failures += !ok_all;
      if (me == 0) {
        printf("%-24s %10.0f %10.0f %10.0f  %s\n", redcoll_algo_name((redcoll_algo)a), us[0],
               us[1], us[2], ok_all ? "verified on every rank" : "WRONG");
        fflush(stdout);
      }
    }
  }
  free(in);
  free(out);
  if (rc != REDCOLL_OK) {
    fprintf(stderr, "tcp_demo: rank %d: %s\n", me, redcoll_strerror(rc));
    return rc;
  }
  if (me == 0)
    printf("\n%s\n", failures ? "SOME RESULTS WERE WRONG" : "all results verified on every rank");
  return failures ? REDCOLL_EPROTO : REDCOLL_OK;
}

/* One rank: join the job described by the environment and run. */
static int run_rank(void) {
  redcoll_comm *c = NULL;
  int rc = redcoll_tcp_comm_create_from_env(&c);
  if (rc != REDCOLL_OK) {
    fprintf(stderr, "tcp_demo: cannot join the job: %s\n", redcoll_strerror(rc));
    return 1;
  }
  rc = rank_main(c);
  redcoll_comm_destroy(c);
  return rc == REDCOLL_OK ? 0 : 1;
}

/* A free port on 127.0.0.1 for rank 0's rendezvous. */
static int free_port(void) {
  int fd = socket(AF_INET, SOCK_STREAM, 0), port = -1;
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t len = sizeof a;
  if (fd >= 0 && bind(fd, (struct sockaddr *)&a, len) == 0 &&
      getsockname(fd, (struct sockaddr *)&a, &len) == 0)
    port = ntohs(a.sin_port);
  if (fd >= 0) close(fd);
  return port;
}

int main(int argc, char **argv) {
  if (getenv("REDCOLL_RANK") != NULL || getenv("SLURM_PROCID") != NULL ||
      getenv("OMPI_COMM_WORLD_RANK") != NULL || getenv("PMI_RANK") != NULL)
    return run_rank(); /* started by a launcher */

  int p = argc > 1 ? atoi(argv[1]) : 7, port = free_port();
  if (p < 1 || p > 256 || port < 0) {
    fprintf(stderr, "usage: %s [P, 1..256]\n", argv[0]);
    return 2;
  }
  char master[32], size[16];
  snprintf(master, sizeof master, "127.0.0.1:%d", port);
  snprintf(size, sizeof size, "%d", p);
  printf("redcoll TCP demo: %d processes on this machine, rendezvous at %s\n", p, master);
  fflush(stdout);
  pid_t *pids = calloc((size_t)p, sizeof *pids);
  if (pids == NULL) return 2;
  for (int r = 0; r < p; r++) {
    pids[r] = fork();
    if (pids[r] == 0) {
      char rank[16];
      snprintf(rank, sizeof rank, "%d", r);
      setenv("REDCOLL_RANK", rank, 1);
      setenv("REDCOLL_SIZE", size, 1);
      setenv("REDCOLL_MASTER", master, 1);
      int code = run_rank();
      fflush(NULL); /* _exit does not flush stdio */
      _exit(code);
    }
    if (pids[r] < 0) p = r; /* start no more; the ones started fail for want of peers */
  }
  /* Wait for all; the first failure stops the others. */
  int status = 0, left = p;
  while (left > 0) {
    int ws;
    pid_t pid = wait(&ws);
    if (pid < 0) break;
    left--;
    if ((!WIFEXITED(ws) || WEXITSTATUS(ws) != 0) && status == 0) {
      status = 1;
      for (int r = 0; r < p; r++)
        if (pids[r] > 0 && pids[r] != pid) kill(pids[r], SIGTERM);
    }
  }
  free(pids);
  return status;
}
