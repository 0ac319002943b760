/*
 * REDCOLL_LOG_LEVEL=debug: one line per collective with the collective,
 * count, dtype, the algorithm and why it ran (the cost model or forced),
 * the time taken and the status.  Captured from stderr of a simulated run.
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "redcoll/mock.h"
#include "test.h"

static int rank_main(redcoll_comm *c, void *arg) {
  (void)arg;
  double x[10] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, y[10];
  int rc = redcoll_allreduce(c, x, y, 10, REDCOLL_FLOAT64, REDCOLL_SUM);
  if (rc == REDCOLL_OK) rc = redcoll_comm_set_algorithm(c, REDCOLL_COLL_BCAST, REDCOLL_ALGO_LINEAR);
  if (rc == REDCOLL_OK) rc = redcoll_bcast(c, y, 3, REDCOLL_FLOAT64, 2);
  return rc;
}

static void debug_line_per_call(void) {
  setenv("REDCOLL_LOG_LEVEL", "debug", 1);
  char path[] = "/tmp/redcoll-log-XXXXXX";
  int fd = mkstemp(path);
  CHECK(fd >= 0);
  if (fd < 0) return;
  fflush(stderr);
  int saved = dup(2);
  dup2(fd, 2);
  redcoll_mock_config cfg;
  redcoll_mock_config_init(&cfg);
  int rc = redcoll_mock_run(3, &cfg, rank_main, NULL, NULL);
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  CHECK_INT(rc, REDCOLL_OK);
  FILE *f = fopen(path, "r");
  char line[512];
  int auto_lines = 0, forced_lines = 0;
  while (f != NULL && fgets(line, sizeof line, f) != NULL) {
    fputs(line, stdout);
    if (strstr(line, "redcoll debug: rank ") != line) continue;
    if (strstr(line, ": allreduce #0 count 10 dtype float64 root 0 p 3: ") != NULL &&
        strstr(line, " (cost model), ") != NULL && strstr(line, " us, REDCOLL_OK") != NULL)
      auto_lines++;
    if (strstr(line, ": bcast #1 count 3 dtype float64 root 2 p 3: linear (forced), ") != NULL)
      forced_lines++;
  }
  if (f != NULL) fclose(f);
  unlink(path);
  CHECK_INT(auto_lines, 3); /* one per rank */
  CHECK_INT(forced_lines, 3);
}

TEST_MAIN(TEST(debug_line_per_call))
