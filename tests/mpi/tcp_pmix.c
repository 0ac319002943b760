/*
 * The TCP transport bootstrapped by PMIx under mpirun, with no REDCOLL_*
 * bootstrap variable: redcoll_tcp_comm_create_from_env finds rank, size
 * and every rank's address through PMIx.  First with Open MPI's launcher
 * variables present (rank and size from OMPI_COMM_WORLD_*, addresses from
 * PMIx), then without them (all from PMIx); two communicators alive at
 * once (two bootstraps, two keys); every allreduce algorithm checked.
 * Not an MPI program: it never calls MPI.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "redcoll/redcoll.h"
#include "redcoll/tcp.h"
#include "test.h"

static int want_rank, want_size;

static void check_comm(redcoll_comm *c) {
  CHECK_INT(redcoll_comm_rank(c), want_rank);
  CHECK_INT(redcoll_comm_size(c), want_size);
  int64_t x[3000], y[3000];
  for (int a = 0; a < REDCOLL_ALGO_COUNT; a++) {
    if (!redcoll_algo_is_supported(REDCOLL_COLL_ALLREDUCE, (redcoll_algo)a)) continue;
    CHECK_INT(redcoll_comm_set_algorithm(c, REDCOLL_COLL_ALLREDUCE, (redcoll_algo)a), REDCOLL_OK);
    for (int i = 0; i < 3000; i++) x[i] = want_rank * 3 + i;
    CHECK_INT(redcoll_allreduce(c, x, y, 3000, REDCOLL_INT64, REDCOLL_SUM), REDCOLL_OK);
    int bad = 0;
    for (int i = 0; i < 3000; i++)
      bad += y[i] != 3LL * want_size * (want_size - 1) / 2 + (int64_t)want_size * i;
    CHECK_MSG(bad == 0, "%s", redcoll_algo_name((redcoll_algo)a));
  }
}

static void create_two(void) {
  redcoll_comm *a = NULL, *b = NULL;
  CHECK_INT(redcoll_tcp_comm_create_from_env(&a), REDCOLL_OK);
  CHECK_INT(redcoll_tcp_comm_create_from_env(&b), REDCOLL_OK);
  if (a != NULL) check_comm(a);
  if (b != NULL) check_comm(b);
  redcoll_comm_destroy(b);
  redcoll_comm_destroy(a);
}

static void test_launcher_vars(void) { create_two(); }

static void test_pmix_alone(void) {
  const char *vars[] = {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "PMI_RANK", "PMI_SIZE",
                        "SLURM_PROCID", "SLURM_NTASKS", "RANK", "WORLD_SIZE"};
  for (size_t i = 0; i < sizeof vars / sizeof *vars; i++) unsetenv(vars[i]);
  create_two();
}

int main(int argc, char **argv) {
  const char *r = getenv("PMIX_RANK"), *s = getenv("OMPI_COMM_WORLD_SIZE");
  const char *boot[] = {"REDCOLL_RANK", "REDCOLL_SIZE", "REDCOLL_MASTER", "REDCOLL_HOSTS"};
  for (size_t i = 0; i < sizeof boot / sizeof *boot; i++)
    if (getenv(boot[i]) != NULL) {
      fprintf(stderr, "%s is set: this test is about PMIx alone\n", boot[i]);
      return 1;
    }
  if (r == NULL || s == NULL) {
    fprintf(stderr, "run under mpirun (PMIX_RANK, OMPI_COMM_WORLD_SIZE)\n");
    return 1;
  }
  want_rank = atoi(r);
  want_size = atoi(s);
  static const test_case cases[] = {TEST(test_launcher_vars), TEST(test_pmix_alone)};
  if (want_rank != 0 && freopen("/dev/null", "w", stdout) == NULL) return 1;
  return test_main(cases, sizeof cases / sizeof *cases, argc, argv);
}
