/*
 * threads_allreduce: an allreduce on 7 ranks that are threads of this
 * process.
 *
 * Seven is not a power of two, which is the case redcoll is built for: the
 * library picks an algorithm that handles any p without idle ranks.  Each
 * rank r contributes the vector x_r[i] = (r + 1) * (i + 1); after the
 * allreduce every rank holds sum_r x_r[i] = (i + 1) * p * (p + 1) / 2, which
 * is an integer, so the result can be checked exactly.
 *
 * Build:  part of the Meson build (examples/threads_allreduce), or by hand:
 *   cc -std=c11 threads_allreduce.c -lredcoll -lpthread
 * Run:    ./threads_allreduce [p] [n]
 */
#include <stdio.h>
#include <stdlib.h>

#include <redcoll/redcoll.h>
#include <redcoll/threads.h>

/* What every rank needs to know, shared read-only, plus one result slot per
 * rank that only that rank writes (so no locking is needed). */
struct job {
  size_t n;    /* elements per vector */
  int *wrong;  /* p entries: elements rank r got wrong */
};

/* The body of one rank.  redcoll_threads_run calls it on p threads at once,
 * each with its own communicator. */
static int rank_main(redcoll_comm *comm, void *arg) {
  struct job *job = arg;
  int rank = redcoll_comm_rank(comm), p = redcoll_comm_size(comm);
  double *x = malloc(job->n * sizeof *x);
  if (x == NULL) return REDCOLL_ENOMEM;

  for (size_t i = 0; i < job->n; i++) x[i] = (double)(rank + 1) * (double)(i + 1);

  /* In place: x is both the input and the result.  All ranks must call the
   * collective with the same count, dtype and operator. */
  int rc = redcoll_allreduce(comm, REDCOLL_IN_PLACE, x, job->n, REDCOLL_FLOAT64, REDCOLL_SUM);
  if (rc == REDCOLL_OK) {
    double ranks_sum = (double)p * (p + 1) / 2;
    int wrong = 0;
    for (size_t i = 0; i < job->n; i++) wrong += x[i] != (double)(i + 1) * ranks_sum;
    job->wrong[rank] = wrong;
    if (rank == 0)
      printf("rank 0 ran %s; x[0] = %g, x[%zu] = %g\n",
             redcoll_algo_name(redcoll_comm_last_algorithm(comm)), x[0], job->n - 1,
             x[job->n - 1]);
  }
  free(x);
  return rc; /* the runner reports the first failing rank */
}

int main(int argc, char **argv) {
  int p = argc > 1 ? atoi(argv[1]) : 7;
  struct job job = {argc > 2 ? (size_t)strtoul(argv[2], NULL, 10) : 1000, NULL};
  if (p < 1 || job.n == 0) {
    fprintf(stderr, "usage: %s [p >= 1] [n >= 1]\n", argv[0]);
    return 2;
  }
  job.wrong = calloc((size_t)p, sizeof *job.wrong);
  if (job.wrong == NULL) return 1;

  /* Starts p threads, one communicator each, and waits for all of them. */
  int rc = redcoll_threads_run(p, rank_main, &job);
  if (rc != REDCOLL_OK) {
    fprintf(stderr, "allreduce failed: %s\n", redcoll_strerror(rc));
    free(job.wrong);
    return 1;
  }
  int bad = 0;
  for (int r = 0; r < p; r++) {
    if (job.wrong[r] != 0) {
      printf("rank %d: %d elements wrong\n", r, job.wrong[r]);
      bad = 1;
    }
  }
  if (!bad) printf("allreduce of %zu doubles on %d threads: verified on every rank\n", job.n, p);
  free(job.wrong);
  return bad;
}
