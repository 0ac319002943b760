/*
 * REDCOLL_LOG_LEVEL=debug: one line per collective with the collective,
 * count, dtype, the algorithm and why it ran (the cost model or forced),
 * the time taken and the status.  Captured from stderr of a simulated run.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "redcoll/mock.h"
#include "test.h"
#include "../src/base/base.h"

static int rank_main(redcoll_comm *c, void *arg) {
  (void)arg;
  double x[10] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, y[10];
  int rc = redcoll_allreduce(c, x, y, 10, REDCOLL_FLOAT64, REDCOLL_SUM);
  if (rc == REDCOLL_OK) rc = redcoll_comm_set_algorithm(c, REDCOLL_COLL_BCAST, REDCOLL_ALGO_LINEAR);
  if (rc == REDCOLL_OK) rc = redcoll_bcast(c, y, 3, REDCOLL_FLOAT64, 2);
  return rc;
}

/* Rank 1 dies at its first transport call: every rank's collective fails. */
static int failing_main(redcoll_comm *c, void *arg) {
  (void)arg;
  double x = 1, y;
  return redcoll_allreduce(c, &x, &y, 1, REDCOLL_FLOAT64, REDCOLL_SUM);
}

/* Runs a failing simulation in a child with REDCOLL_LOG_LEVEL as given
 * (NULL: unset) and returns the number of error lines it printed. */
static int error_lines(const char *level) {
  char path[] = "/tmp/redcoll-log-XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0) return -1;
  pid_t pid = fork();
  if (pid == 0) {
    if (level == NULL) unsetenv("REDCOLL_LOG_LEVEL");
    else setenv("REDCOLL_LOG_LEVEL", level, 1);
    dup2(fd, 2);
    redcoll_mock_config cfg;
    redcoll_mock_config_init(&cfg);
    cfg.fail_rank = 1;
    int rc = redcoll_mock_run(3, &cfg, failing_main, NULL, NULL);
    _exit(rc != REDCOLL_OK ? 0 : 1); /* 0: it failed, as it should */
  }
  int st = 0, n = 0;
  waitpid(pid, &st, 0);
  close(fd);
  FILE *f = fopen(path, "r");
  char line[512];
  while (f != NULL && fgets(line, sizeof line, f) != NULL)
    n += strstr(line, "redcoll error: rank ") == line;
  if (f != NULL) fclose(f);
  unlink(path);
  return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? n : -1;
}

/* Errors are printed by default (they used to need REDCOLL_LOG_LEVEL);
 * REDCOLL_LOG_LEVEL=none silences them. */
static void errors_by_default(void) {
  CHECK(error_lines(NULL) >= 1);
  CHECK_INT(error_lines("none"), 0);
  CHECK(error_lines("error") >= 1);
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

/* In a child (the settings are read once per process): REDCOLL_SPIN_US and
 * REDCOLL_PAUSE_US as given (NULL: unset), and whether the poll, the pause
 * with one rank per CPU, and the pause with two are the ns expected. */
static int spin_case(const char *spin, const char *pause, uint64_t want_spin,
                     uint64_t want_pause) {
  pid_t pid = fork();
  if (pid == 0) {
    if (spin == NULL) unsetenv("REDCOLL_SPIN_US");
    else setenv("REDCOLL_SPIN_US", spin, 1);
    if (pause == NULL) unsetenv("REDCOLL_PAUSE_US");
    else setenv("REDCOLL_PAUSE_US", pause, 1);
    setenv("REDCOLL_LOG_LEVEL", "none", 1);
    uint64_t s = redcoll__spin_ns(), p1 = redcoll__spin_pause_ns(1),
             p05 = redcoll__spin_pause_ns(0.5), p2 = redcoll__spin_pause_ns(2);
    if (s != want_spin || p1 != want_pause || p05 != want_pause || p2 != 0) {
      printf("SPIN_US=%s PAUSE_US=%s: spin %llu pause %llu / %llu / %llu\n", spin ? spin : "-",
             pause ? pause : "-", (unsigned long long)s, (unsigned long long)p1,
             (unsigned long long)p05, (unsigned long long)p2);
      fflush(stdout);
      _exit(1);
    }
    _exit(0);
  }
  int st = 0;
  waitpid(pid, &st, 0);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* The wait's settings: the defaults, each variable, the pause capped at the
 * poll, none with more ranks than CPUs, and malformed values ignored. */
static void spin_settings(void) {
  CHECK_INT(spin_case(NULL, NULL, REDCOLL__SPIN_US_DEFAULT * 1000ull,
                      REDCOLL__PAUSE_US_DEFAULT * 1000ull), 0);
  CHECK_INT(spin_case("50", NULL, 50000, 1000), 0);
  CHECK_INT(spin_case(NULL, "7", 100000, 7000), 0);
  CHECK_INT(spin_case("20", "80", 20000, 20000), 0); /* capped at the poll */
  CHECK_INT(spin_case("0", NULL, 0, 0), 0);          /* no polling, no pause */
  CHECK_INT(spin_case(NULL, "0", 100000, 0), 0);
  CHECK_INT(spin_case("abc", "1x", 100000, 1000), 0); /* malformed: the defaults */
  CHECK_INT(spin_case("2000000", "-3", 100000, 1000), 0); /* out of range */
}

TEST_MAIN(TEST(errors_by_default), TEST(spin_settings), TEST(debug_line_per_call))
