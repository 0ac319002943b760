/*
 * Runs fn on p ranks of the shared-memory transport, each a forked process
 * of this host, the way tcp_runner.h does over TCP:
 *
 *   int shm_run(int p, redcoll_rank_main fn, void *arg);
 *
 * Every run uses a segment name of its own (the parent's pid and a
 * counter) unless the options name one.  Every child creates its
 * communicator, calls fn, destroys the communicator and exits; it fails if
 * it counted CHECK failures (tests/test.h included first) or if its open
 * file descriptors differ before and after.  The parent waits for every
 * child with a deadline and kills them all when it passes; afterwards the
 * segment's name must be gone from /dev/shm (else the run fails with
 * REDCOLL_EPROTO).  Returns REDCOLL_OK if every rank returned REDCOLL_OK,
 * else the status of the lowest failing rank (REDCOLL_ETIMEDOUT if the
 * deadline passed, REDCOLL_ETRANSPORT if a rank died of a signal).
 */
#ifndef REDCOLL_SHM_RUNNER_H
#define REDCOLL_SHM_RUNNER_H

#include <dirent.h>
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "redcoll/redcoll.h"
#include "redcoll/shm.h"

typedef struct shm_run_opts {
  const char *name;      /* NULL: a fresh one */
  int copy;              /* config.copy */
  size_t queue_bytes;    /* config.queue_bytes */
  uint64_t timeout_ms;   /* communicator timeout; 0: 30 s */
  double deadline_s;     /* the parent's deadline; 0: 120 s */
  int start_delay_ms[64];
  int pin[64];           /* c + 1: the rank runs on CPU c alone; 0: as the parent */
  /* If signal_rank >= 0: the parent sends signal_no to that rank
   * signal_after_ms after starting the ranks, and not before *signal_gate
   * (in memory shared with the ranks; NULL: no gate) has reached
   * signal_gate_min (SIGKILL, SIGSTOP; a stopped
   * rank is killed once the others have ended). */
  int signal_rank;
  int signal_no;
  int signal_after_ms;
  const int *signal_gate;
  int signal_gate_min;
  double signal_at_s;    /* out: seconds from start to the signal */
  double took_s[64];     /* out: seconds from start to each rank's exit */
  int statuses[64];      /* out: every rank's status (first 64 ranks) */
} shm_run_opts;

static double shm_run__now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static inline void shm_run_opts_init(shm_run_opts *o) {
  memset(o, 0, sizeof *o);
  o->signal_rank = -1;
}

static inline int shm_run_fd_count(void) {
  DIR *d = opendir("/proc/self/fd");
  if (d == NULL) return -1;
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL)
    if (e->d_name[0] != '.') n++;
  closedir(d);
  return n;
}

/* A fresh segment name for this process. */
static inline const char *shm_run_fresh_name(char *buf, size_t n) {
  static int counter;
  snprintf(buf, n, "/redcoll-test-%d-%d", (int)getpid(), counter++);
  return buf;
}

/* Does /dev/shm hold the name? */
static inline int shm_run_name_exists(const char *name) {
  char path[300];
  snprintf(path, sizeof path, "/dev/shm/%s", name[0] == '/' ? name + 1 : name);
  struct stat st;
  return stat(path, &st) == 0;
}

static int shm_run__child(int rank, int p, const char *name, const shm_run_opts *o,
                          redcoll_rank_main fn, void *arg) {
#ifdef REDCOLL_TEST_H
  int failures_before = test__failures;
#endif
  redcoll_shm_config cfg;
  redcoll_shm_config_init(&cfg);
  cfg.rank = rank;
  cfg.size = p;
  cfg.name = name;
  cfg.copy = o->copy;
  cfg.queue_bytes = o->queue_bytes;
  cfg.wait_timeout_ms = o->timeout_ms ? o->timeout_ms : 30000;
  int fds_before = shm_run_fd_count();
  if (rank < 64 && o->start_delay_ms[rank] > 0) {
    struct timespec ts = {o->start_delay_ms[rank] / 1000, (long)(o->start_delay_ms[rank] % 1000) * 1000000L};
    nanosleep(&ts, NULL);
  }
  if (rank < 64 && o->pin[rank] > 0) {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(o->pin[rank] - 1, &one);
    if (sched_setaffinity(0, sizeof one, &one) != 0) return 97;
  }
  redcoll_comm *comm = NULL;
  int rc = redcoll_shm_comm_create(&cfg, &comm);
  if (rc == REDCOLL_OK) rc = fn(comm, arg);
  redcoll_comm_destroy(comm);
  int fds_after = shm_run_fd_count();
  fflush(NULL);
  if (rc != REDCOLL_OK) return 100 + (-rc & 0x1f);
#ifdef REDCOLL_TEST_H
  if (test__failures != failures_before) return 99;
#endif
  if (fds_before != fds_after) {
    fprintf(stderr, "shm_run: rank %d: %d file descriptors open before, %d after\n", rank,
            fds_before, fds_after);
    return 98;
  }
  return 0;
}

static int shm_run_opts_run(int p, redcoll_rank_main fn, void *arg, shm_run_opts *o) {
  if (p < 1 || p > 64) return REDCOLL_EINVAL;
  char fresh[64];
  const char *name = o->name != NULL ? o->name : shm_run_fresh_name(fresh, sizeof fresh);
  pid_t pids[64];
  int status[64];
  fflush(NULL);
  double start = shm_run__now();
  for (int r = 0; r < p; r++) {
    pid_t pid = fork();
    if (pid < 0) {
      for (int q = 0; q < r; q++) kill(pids[q], SIGKILL);
      for (int q = 0; q < r; q++) waitpid(pids[q], NULL, 0);
      return REDCOLL_ENOMEM;
    }
    if (pid == 0) _exit(shm_run__child(r, p, name, o, fn, arg));
    pids[r] = pid;
    status[r] = REDCOLL_ETIMEDOUT;
  }
  double deadline = start + (o->deadline_s > 0 ? o->deadline_s : 120.0);
  int left = p, signalled = o->signal_rank < 0;
  while (left > 0) {
    if (!signalled && shm_run__now() >= start + o->signal_after_ms / 1000.0 &&
        (o->signal_gate == NULL ||
         __atomic_load_n(o->signal_gate, __ATOMIC_ACQUIRE) >= o->signal_gate_min)) {
      kill(pids[o->signal_rank], o->signal_no);
      o->signal_at_s = shm_run__now() - start;
      signalled = 1;
    }
    /* A stopped rank is released once all the others have ended. */
    if (signalled && o->signal_rank >= 0 && o->signal_no == SIGSTOP && left == 1 &&
        pids[o->signal_rank] > 0)
      kill(pids[o->signal_rank], SIGKILL);
    int ws;
    pid_t pid = waitpid(-1, &ws, WNOHANG);
    if (pid > 0) {
      for (int r = 0; r < p; r++) {
        if (pids[r] != pid) continue;
        pids[r] = 0;
        left--;
        if (r < 64) o->took_s[r] = shm_run__now() - start;
        if (WIFEXITED(ws)) {
          int code = WEXITSTATUS(ws);
          status[r] = code == 0 ? REDCOLL_OK : code >= 100 ? -(code - 100) : REDCOLL_EINVAL;
        } else {
          status[r] = REDCOLL_ETRANSPORT;
        }
      }
      continue;
    }
    if (pid < 0 && errno != EINTR) break;
    if (shm_run__now() > deadline) {
      fprintf(stderr, "shm_run: deadline passed, killing %d ranks\n", left);
      for (int r = 0; r < p; r++)
        if (pids[r] > 0) kill(pids[r], SIGKILL);
      for (int r = 0; r < p; r++)
        if (pids[r] > 0) waitpid(pids[r], NULL, 0);
      break;
    }
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
  }
  int rc = REDCOLL_OK;
  for (int r = 0; r < p; r++) {
    o->statuses[r] = status[r];
    if (status[r] != REDCOLL_OK && rc == REDCOLL_OK) rc = status[r];
  }
  if (shm_run_name_exists(name)) {
    fprintf(stderr, "shm_run: segment %s left in /dev/shm\n", name);
    shm_unlink(name);
    if (rc == REDCOLL_OK) rc = REDCOLL_EPROTO;
  }
  return rc;
}

static inline int shm_run(int p, redcoll_rank_main fn, void *arg) {
  shm_run_opts o;
  shm_run_opts_init(&o);
  return shm_run_opts_run(p, fn, arg, &o);
}

#endif /* REDCOLL_SHM_RUNNER_H */
