/*
 * The MPI transport under mpirun: every algorithm of allreduce and reduce
 * (every root) against sums every rank computes itself; a non-commutative
 * operator with every rank-ordered algorithm of allreduce, and with scan,
 * exscan and reduce_scatter_block (their default choice), against a
 * rank-order fold; bcast, allgather and alltoall with their default
 * choice; messages below and above the 4 KiB inline limit; dup and split
 * (channels), and two communicators' messages received out of order; a
 * mismatch; a deadline that fires and the abort the peers then see.  Run
 * as `mpirun -np P mpi_transport`.
 */
#include <mpi.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "redcoll/mpi.h"
#include "redcoll/redcoll.h"
#include "test.h"

static int P, R;

static const size_t counts[] = {0, 1, 7, 1000, 3000}; /* 3000 x 8 B: above the 4 KiB inline limit */

static int64_t val(int rank, size_t i) { return (int64_t)(rank + 1) * 1000003 + (int64_t)i * 7; }

/* An affine map x -> a x + b as (a, b), composed modulo 2^64: associative,
 * not commutative.  out = left then right: right(left(x)). */
typedef struct { uint64_t a, b; } affine;
static void compose(void *out, const void *l, const void *r, size_t n, void *ctx) {
  (void)ctx;
  const affine *x = l, *y = r;
  affine *o = out;
  for (size_t i = 0; i < n; i++) {
    affine t = {y[i].a * x[i].a, y[i].a * x[i].b + y[i].b};
    o[i] = t;
  }
}
static affine aff(int rank, size_t i) {
  return (affine){(uint64_t)(2 * rank + 3 + i), (uint64_t)(rank * 31 + i)};
}

static redcoll_comm *world(void) {
  redcoll_comm *c = NULL;
  CHECK_INT(redcoll_mpi_comm_create(MPI_COMM_WORLD, &c), REDCOLL_OK);
  return c;
}

static void test_create(void) {
  redcoll_comm *c = world();
  if (c == NULL) return;
  CHECK_INT(redcoll_comm_rank(c), R);
  CHECK_INT(redcoll_comm_size(c), P);
  MPI_Comm d = redcoll_mpi_comm_get(c);
  int cmp = -1;
  MPI_Comm_compare(d, MPI_COMM_WORLD, &cmp);
  CHECK_INT(cmp, MPI_CONGRUENT); /* a duplicate, not the communicator itself */
  redcoll_comm_destroy(c);
  CHECK_INT(redcoll_mpi_comm_create(MPI_COMM_NULL, &c), REDCOLL_EINVAL);
  CHECK(c == NULL);
  CHECK_INT(redcoll_mpi_comm_create(MPI_COMM_WORLD, NULL), REDCOLL_EINVAL);
}

/* The ranks per CPU the transport reports: P over the CPUs the ranks'
 * affinity masks allow together (all on this one machine; mpirun binds
 * each rank to a core or a socket), at least 1, on every rank. */
static void test_ranks_per_cpu(void) {
  if (getenv("REDCOLL_RANKS_PER_CPU") != NULL) {
    printf("note: REDCOLL_RANKS_PER_CPU is set; test_ranks_per_cpu did not run\n");
    return;
  }
  redcoll_comm *c = world();
  if (c == NULL) return;
  cpu_set_t mine, all;
  CHECK_INT(sched_getaffinity(0, sizeof mine, &mine), 0);
  MPI_Allreduce(&mine, &all, (int)sizeof mine, MPI_BYTE, MPI_BOR, MPI_COMM_WORLD);
  int cpus = CPU_COUNT(&all);
  /* A CPU beyond the 256 the library exchanges: it counts the online ones. */
  for (int k = 256; k < CPU_SETSIZE; k++)
    if (CPU_ISSET(k, &all)) cpus = (int)sysconf(_SC_NPROCESSORS_ONLN);
  double want = P > cpus ? (double)P / (double)cpus : 1, got = -1;
  CHECK_INT(redcoll_comm_get_ranks_per_cpu(c, &got), REDCOLL_OK);
  CHECK_MSG(got == want, "rank %d: %g ranks per CPU, want %g (%d ranks, %d CPUs, %d of them mine)",
            R, got, want, P, cpus, CPU_COUNT(&mine));
  redcoll_comm_destroy(c);
}

/* allreduce and reduce (every root) with every algorithm, int64 sum. */
static void test_reduce_algorithms(void) {
  redcoll_comm *c = world();
  if (c == NULL) return;
  int64_t *x = malloc(3000 * 8), *y = malloc(3000 * 8);
  redcoll_coll colls[] = {REDCOLL_COLL_ALLREDUCE, REDCOLL_COLL_REDUCE};
  for (int k = 0; k < 2; k++)
    for (int a = 0; a < REDCOLL_ALGO_COUNT; a++) {
      if (!redcoll_algo_is_supported(colls[k], (redcoll_algo)a)) continue;
      CHECK_INT(redcoll_comm_set_algorithm(c, colls[k], (redcoll_algo)a), REDCOLL_OK);
      for (size_t ci = 0; ci < sizeof counts / sizeof *counts; ci++) {
        size_t n = counts[ci];
        int root = (int)(ci % (size_t)P);
        for (size_t i = 0; i < n; i++) x[i] = val(R, i), y[i] = -1;
        int rc = k == 0 ? redcoll_allreduce(c, x, y, n, REDCOLL_INT64, REDCOLL_SUM)
                        : redcoll_reduce(c, x, y, n, REDCOLL_INT64, REDCOLL_SUM, root);
        CHECK_MSG(rc == REDCOLL_OK, "%s %s n=%zu: %s", redcoll_coll_name(colls[k]),
                  redcoll_algo_name((redcoll_algo)a), n, redcoll_strerror(rc));
        if (k == 1 && R != root) continue;
        size_t bad = 0;
        for (size_t i = 0; i < n; i++) {
          int64_t want = 0;
          for (int r = 0; r < P; r++) want += val(r, i);
          bad += y[i] != want;
        }
        CHECK_MSG(bad == 0, "%s %s n=%zu: %zu wrong", redcoll_coll_name(colls[k]),
                  redcoll_algo_name((redcoll_algo)a), n, bad);
      }
    }
  free(x);
  free(y);
  redcoll_comm_destroy(c);
}

/* A non-commutative operator with every rank-ordered algorithm of
 * allreduce, and with scan, exscan and reduce_scatter_block. */
static void test_noncommutative(void) {
  redcoll_comm *c = world();
  redcoll_op *op = NULL;
  CHECK_INT(redcoll_op_create(compose, sizeof(affine), 0, NULL, &op), REDCOLL_OK);
  if (c == NULL || op == NULL) return;
  size_t n = 300; /* 4800 B: above the inline limit */
  affine *x = malloc((size_t)P * n * sizeof *x), *y = malloc((size_t)P * n * sizeof *y);
  affine *want = malloc((size_t)P * n * sizeof *want); /* want[r*n+i]: fold of ranks 0..r */
  for (size_t i = 0; i < n; i++) {
    want[i] = aff(0, i);
    for (int r = 1; r < P; r++) {
      affine v = aff(r, i);
      compose(&want[(size_t)r * n + i], &want[(size_t)(r - 1) * n + i], &v, 1, NULL);
    }
  }
  const affine *total = &want[(size_t)(P - 1) * n];
  for (int a = 0; a < REDCOLL_ALGO_COUNT; a++) {
    if (!redcoll_algo_is_rank_ordered(REDCOLL_COLL_ALLREDUCE, (redcoll_algo)a)) continue;
    CHECK_INT(redcoll_comm_set_algorithm(c, REDCOLL_COLL_ALLREDUCE, (redcoll_algo)a), REDCOLL_OK);
    for (size_t i = 0; i < n; i++) x[i] = aff(R, i);
    int rc = redcoll_allreduce(c, x, y, n, REDCOLL_CUSTOM, op);
    CHECK_MSG(rc == REDCOLL_OK, "%s: %s", redcoll_algo_name((redcoll_algo)a), redcoll_strerror(rc));
    CHECK_MSG(memcmp(y, total, n * sizeof *y) == 0, "allreduce %s", redcoll_algo_name((redcoll_algo)a));
  }
  for (size_t i = 0; i < n; i++) x[i] = aff(R, i);
  CHECK_INT(redcoll_scan(c, x, y, n, REDCOLL_CUSTOM, op), REDCOLL_OK);
  CHECK(memcmp(y, &want[(size_t)R * n], n * sizeof *y) == 0);
  CHECK_INT(redcoll_exscan(c, x, y, n, REDCOLL_CUSTOM, op), REDCOLL_OK);
  if (R > 0) CHECK(memcmp(y, &want[(size_t)(R - 1) * n], n * sizeof *y) == 0);
  /* reduce_scatter_block: rank r's block j is aff(r, j*n+i) */
  for (int j = 0; j < P; j++)
    for (size_t i = 0; i < n; i++) x[(size_t)j * n + i] = aff(R, (size_t)j * n + i);
  CHECK_INT(redcoll_reduce_scatter_block(c, x, y, n, REDCOLL_CUSTOM, op), REDCOLL_OK);
  size_t bad = 0;
  for (size_t i = 0; i < n; i++) {
    affine f = aff(0, (size_t)R * n + i);
    for (int r = 1; r < P; r++) {
      affine v = aff(r, (size_t)R * n + i);
      compose(&f, &f, &v, 1, NULL);
    }
    bad += memcmp(&f, &y[i], sizeof f) != 0;
  }
  CHECK_INT(bad, 0);
  free(x);
  free(y);
  free(want);
  redcoll_op_destroy(op);
  redcoll_comm_destroy(c);
}

/* Data movement: bcast, allgather, gather, scatter, alltoall with the
 * default choice, above and below the inline limit. */
static void test_movement(void) {
  redcoll_comm *c = world();
  if (c == NULL) return;
  size_t sizes[] = {5, 6000};
  for (int s = 0; s < 2; s++) {
    size_t n = sizes[s];
    uint8_t *x = malloc((size_t)P * n), *y = malloc((size_t)P * n);
    int root = P - 1;
    for (size_t i = 0; i < n; i++) x[i] = (uint8_t)(R == root ? i * 3 + 1 : 0);
    CHECK_INT(redcoll_bcast(c, x, n, REDCOLL_UINT8, root), REDCOLL_OK);
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) bad += x[i] != (uint8_t)(i * 3 + 1);
    CHECK_INT(bad, 0);
    for (size_t i = 0; i < n; i++) x[i] = (uint8_t)(R * 17 + i);
    CHECK_INT(redcoll_allgather(c, x, y, n, REDCOLL_UINT8), REDCOLL_OK);
    bad = 0;
    for (int r = 0; r < P; r++)
      for (size_t i = 0; i < n; i++) bad += y[(size_t)r * n + i] != (uint8_t)(r * 17 + i);
    CHECK_INT(bad, 0);
    for (int j = 0; j < P; j++)
      for (size_t i = 0; i < n; i++) x[(size_t)j * n + i] = (uint8_t)(R * 7 + j * 3 + i);
    CHECK_INT(redcoll_alltoall(c, x, y, n, REDCOLL_UINT8), REDCOLL_OK);
    bad = 0;
    for (int r = 0; r < P; r++)
      for (size_t i = 0; i < n; i++) bad += y[(size_t)r * n + i] != (uint8_t)(r * 7 + R * 3 + i);
    CHECK_INT(bad, 0);
    free(x);
    free(y);
  }
  CHECK_INT(redcoll_barrier(c), REDCOLL_OK);
  redcoll_comm_destroy(c);
}

/* Channels: a dup and a split run their own collectives, interleaved
 * with the parent's. */
static void test_dup_split(void) {
  redcoll_comm *c = world(), *d = NULL, *s = NULL;
  if (c == NULL) return;
  CHECK_INT(redcoll_comm_dup(c, &d), REDCOLL_OK);
  CHECK_INT(redcoll_comm_split(c, R % 2, -R, &s), REDCOLL_OK);
  if (d == NULL || s == NULL) return;
  int half = (P + 1 - R % 2) / 2;
  CHECK_INT(redcoll_comm_size(s), half);
  for (int round = 0; round < 3; round++) {
    int64_t big[1000], out[1000];
    for (int i = 0; i < 1000; i++) big[i] = R + i;
    CHECK_INT(redcoll_allreduce(s, big, out, 1000, REDCOLL_INT64, REDCOLL_SUM), REDCOLL_OK);
    int64_t sum = 0;
    for (int r = R % 2; r < P; r += 2) sum += r;
    CHECK_INT(out[999], sum + 999LL * half);
    int64_t one = R, all = 0;
    CHECK_INT(redcoll_allreduce(d, &one, &all, 1, REDCOLL_INT64, REDCOLL_SUM), REDCOLL_OK);
    CHECK_INT(all, (int64_t)P * (P - 1) / 2);
    CHECK_INT(redcoll_allreduce(c, &one, &all, 1, REDCOLL_INT64, REDCOLL_MAX), REDCOLL_OK);
    CHECK_INT(all, P - 1);
  }
  redcoll_comm_destroy(s);
  redcoll_comm_destroy(d);
  redcoll_comm_destroy(c);
}

/* Rank 0 sends on e first, then on d; rank 1 receives on d first: a
 * message of one communicator waits for its receive while the other's
 * goes on.  100 bytes go out eagerly; with REDCOLL_MPI_TAG_SLOTS=2 both
 * communicators share one MPI tag, the receiver keeps e's message aside,
 * and 20000 bytes work too (on tags of their own the sender of a large
 * message may wait for its receive, which the contract allows: rank 0
 * would wait on e for ever). */
static void test_channels_apart(void) {
  if (P < 2) return;
  redcoll_comm *c = world(), *d = NULL, *e = NULL;
  if (c == NULL) return;
  CHECK_INT(redcoll_comm_dup(c, &d), REDCOLL_OK);
  CHECK_INT(redcoll_comm_dup(c, &e), REDCOLL_OK);
  if (d == NULL || e == NULL) return;
  size_t lens[] = {100, 20000};
  int shared = getenv("REDCOLL_MPI_TAG_SLOTS") != NULL;
  for (int k = 0; k < 1 + shared; k++) {
    size_t n = lens[k];
    uint8_t *a = malloc(n), *b = malloc(n);
    if (R == 0) {
      memset(a, 0xe0 + k, n);
      memset(b, 0xd0 + k, n);
      CHECK_INT(redcoll_send(e, 1, 7, a, n), REDCOLL_OK);
      CHECK_INT(redcoll_send(d, 1, 7, b, n), REDCOLL_OK);
    } else if (R == 1) {
      CHECK_INT(redcoll_recv(d, 0, 7, b, n), REDCOLL_OK);
      CHECK_INT(redcoll_recv(e, 0, 7, a, n), REDCOLL_OK);
      size_t bad = 0;
      for (size_t i = 0; i < n; i++) bad += a[i] != 0xe0 + k || b[i] != 0xd0 + k;
      CHECK_INT(bad, 0);
    }
    free(a);
    free(b);
  }
  redcoll_comm_destroy(e);
  redcoll_comm_destroy(d);
  redcoll_comm_destroy(c);
}

/* Ranks that disagree on the count: EMISMATCH somewhere, and no rank
 * hangs (the others see the abort). */
static void test_mismatch(void) {
  if (P < 2) return;
  redcoll_comm *c = world();
  if (c == NULL) return;
  CHECK_INT(redcoll_comm_set_algorithm(c, REDCOLL_COLL_ALLREDUCE, REDCOLL_ALGO_LINEAR), REDCOLL_OK);
  int64_t x[8] = {0}, y[8];
  int rc = redcoll_allreduce(c, x, y, R == 0 ? 8 : 7, REDCOLL_INT64, REDCOLL_SUM);
  CHECK_MSG(rc == REDCOLL_EMISMATCH || rc == REDCOLL_EABORTED, "%s", redcoll_strerror(rc));
  int mism = rc == REDCOLL_EMISMATCH, any = 0;
  MPI_Allreduce(&mism, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  CHECK_INT(any, 1);
  redcoll_comm_destroy(c);
}

/* Rank 0 waits alone in a barrier with a deadline: ETIMEDOUT; the others
 * then find the communicator aborted. */
static void test_deadline_abort(void) {
  if (P < 2) return;
  redcoll_comm *c = world();
  if (c == NULL) return;
  if (R == 0) {
    CHECK_INT(redcoll_comm_set_deadline(c, 100), REDCOLL_OK);
    CHECK_INT(redcoll_barrier(c), REDCOLL_ETIMEDOUT);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (R != 0) CHECK_INT(redcoll_barrier(c), REDCOLL_EABORTED);
  redcoll_comm_destroy(c);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_size(MPI_COMM_WORLD, &P);
  MPI_Comm_rank(MPI_COMM_WORLD, &R);
  static const test_case cases[] = {
      TEST(test_create),         TEST(test_reduce_algorithms), TEST(test_noncommutative),
      TEST(test_movement),       TEST(test_dup_split),         TEST(test_channels_apart), TEST(test_mismatch),
      TEST(test_deadline_abort), TEST(test_ranks_per_cpu),
  };
  if (R != 0 && freopen("/dev/null", "w", stdout) == NULL) return 1; /* rank 0 prints */
  int rc = test_main(cases, sizeof cases / sizeof *cases, argc, argv);
  int worst = 0;
  MPI_Allreduce(&rc, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return worst;
}
