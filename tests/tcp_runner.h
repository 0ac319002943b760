/*
 * Runs fn on p ranks of the TCP transport, each a forked process talking
 * over 127.0.0.1, the way redcoll_threads_run does with threads:
 *
 *   int tcp_run(int p, redcoll_rank_main fn, void *arg);
 *
 * Rank 0 runs the rendezvous on a port the parent picked.  Every child
 * creates its communicator, calls fn, destroys the communicator and exits;
 * a child also fails if it counted CHECK failures (tests/test.h included
 * first).  The parent waits for every child with a deadline and kills them
 * all when it passes.  Returns REDCOLL_OK if every rank returned REDCOLL_OK,
 * else the status of the lowest failing rank (REDCOLL_ETIMEDOUT if the
 * deadline passed, REDCOLL_ETRANSPORT if a rank died of a signal).
 *
 * Leaks: every child counts its open file descriptors before it creates its
 * communicator and after it destroyed it, and fails (exit code 98, a line on
 * stderr) if the counts differ; under AddressSanitizer it also runs the leak
 * checker before it exits (exit code 97 on a leak).
 */
#ifndef REDCOLL_TCP_RUNNER_H
#define REDCOLL_TCP_RUNNER_H

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "redcoll/redcoll.h"
#include "redcoll/tcp.h"

/* Options of a run; tcp_run uses the defaults. */
typedef struct tcp_run_opts {
  int ipv6;             /* bind ::1 instead of 127.0.0.1 */
  int hosts;            /* REDCOLL_HOSTS-style list instead of the rendezvous */
  int recreate;         /* every rank creates its communicator, calls between
                         * on it, destroys it and at once creates it again on
                         * the same ports, this many times, before fn */
  redcoll_rank_main between; /* NULL: nothing between create and destroy */
  uint64_t job_step;    /* not 0: the k-th communicator of rank r (k = 0, 1,
                         * ...) has job id job_ids[r] + k * job_step */
  int start_delay_ms[64]; /* rank r waits this long before it bootstraps */
  /* If not NULL: called in the parent with the rendezvous address (or the
   * host list) once it is chosen, before the ranks start. */
  void (*before)(const char *addrs, void *arg);
  uint64_t timeout_ms;  /* communicator timeout; 0: 60 s */
  uint64_t unexpected_max; /* config.unexpected_max; 0: the default */
  double deadline_s;    /* the parent's deadline for the whole run; 0: 240 s */
  const char *secrets[64]; /* rank r's secret (config.secret); NULL: none */
  uint64_t job_ids[64];    /* rank r's config.job_id; 0: none */
  int statuses[64];     /* out: every rank's status (first 64 ranks) */
  int shm;              /* 0: TCP between all ranks (config.no_shm), the
                         * transport these tests are about; 1: the ranks of
                         * a host through shared memory */
  const char *shm_hosts[64]; /* with shm: rank r's REDCOLL_SHM_HOST_ID (a fake
                         * host), NULL: the real one */
} tcp_run_opts;

static double tcp_run__now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static inline void tcp_run_sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

/* Zeroed memory shared between the forked ranks and the parent (munmap it);
 * exits on failure. */
static inline void *tcp_run_shared(size_t n) {
  void *s = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (s == MAP_FAILED) {
    perror("mmap");
    exit(2);
  }
  memset(s, 0, n);
  return s;
}

/* Binds a socket to a free loopback port and keeps it bound (SO_REUSEADDR,
 * never listening) so that nobody else is handed that port meanwhile; the
 * rank that listens there binds with SO_REUSEADDR too. */
static int tcp_run__port(int ipv6, int *fd_out) {
  int fd = socket(ipv6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  struct sockaddr_storage ss;
  memset(&ss, 0, sizeof ss);
  socklen_t len;
  if (ipv6) {
    struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
    a->sin6_family = AF_INET6;
    a->sin6_addr = in6addr_loopback;
    len = sizeof *a;
  } else {
    struct sockaddr_in *a = (struct sockaddr_in *)&ss;
    a->sin_family = AF_INET;
    a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    len = sizeof *a;
  }
  if (bind(fd, (struct sockaddr *)&ss, len) != 0 || getsockname(fd, (struct sockaddr *)&ss, &len)) {
    close(fd);
    return -1;
  }
  *fd_out = fd;
  return ipv6 ? ntohs(((struct sockaddr_in6 *)&ss)->sin6_port)
              : ntohs(((struct sockaddr_in *)&ss)->sin_port);
}

/* Open file descriptors of this process (-1 if /proc is not there). */
static int tcp_run_fd_count(void) {
  DIR *d = opendir("/proc/self/fd");
  if (d == NULL) return -1;
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL)
    if (e->d_name[0] != '.') n++;
  closedir(d);
  return n;
}

#if defined(__SANITIZE_ADDRESS__)
#define TCP_RUN__LSAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TCP_RUN__LSAN 1
#endif
#endif
#ifdef TCP_RUN__LSAN
#include <sanitizer/lsan_interface.h>
#endif
#if defined(__has_include)
#if __has_include(<uv.h>)
#include <uv.h>
#define TCP_RUN__UV 1
#endif
#endif

/* libuv opens a pipe for its signal handling with the first loop of the
 * process and keeps it for good: open it before counting. */
static void tcp_run__uv_warm_up(void) {
#ifdef TCP_RUN__UV
  uv_loop_t l;
  if (uv_loop_init(&l) == 0) uv_loop_close(&l);
#endif
}

/* Exit codes of a child: 0 ok, 100 + (-status) for a failing status, 99 for
 * CHECK failures, 98 for leaked descriptors, 97 for leaked memory. */
static int tcp_run__child(int rank, int p, const char *addrs, const tcp_run_opts *o,
                          int delay_ms, uint64_t timeout_ms,
                          const char *secret, uint64_t job_id, redcoll_rank_main fn,
                          void *arg, int reserved_fd) {
#ifdef REDCOLL_TEST_H
  int failures_before = test__failures; /* inherited from the parent */
#endif
  redcoll_tcp_config cfg;
  redcoll_tcp_config_init(&cfg);
  cfg.rank = rank;
  cfg.size = p;
  if (o->hosts) cfg.hosts = addrs;
  else cfg.master = addrs;
  cfg.wait_timeout_ms = timeout_ms;
  cfg.secret = secret;
  cfg.job_id = job_id;
  cfg.unexpected_max = o->unexpected_max;
  cfg.no_shm = !o->shm;
  if (o->shm && rank < 64 && o->shm_hosts[rank] != NULL)
    setenv("REDCOLL_SHM_HOST_ID", o->shm_hosts[rank], 1);
  redcoll_comm *comm = NULL;
  tcp_run__uv_warm_up();
  int fds_before = tcp_run_fd_count();
  if (delay_ms > 0) tcp_run_sleep_ms(delay_ms);
  int rc = redcoll_tcp_comm_create(&cfg, &comm);
  /* This rank's port is bound (and listened on) now: the reservation
   * inherited from the parent goes. */
  if (reserved_fd >= 0) {
    close(reserved_fd);
    if (fds_before >= 0) fds_before--;
  }
  for (int k = 1; k <= o->recreate && rc == REDCOLL_OK; k++) {
    /* No sleep and no barrier: a rank's next communicator may connect to
     * the previous one of a rank that has not destroyed it yet. */
    if (o->between != NULL) rc = o->between(comm, arg);
    redcoll_comm_destroy(comm);
    comm = NULL;
    if (rc != REDCOLL_OK) break;
    cfg.job_id = job_id + (uint64_t)k * o->job_step;
    rc = redcoll_tcp_comm_create(&cfg, &comm);
  }
  if (rc == REDCOLL_OK) rc = fn(comm, arg);
  redcoll_comm_destroy(comm);
  int fds_after = tcp_run_fd_count();
  fflush(NULL);
  if (rc != REDCOLL_OK) return 100 + (-rc & 0x1f);
#ifdef REDCOLL_TEST_H
  if (test__failures != failures_before) return 99;
#endif
  if (fds_before != fds_after) {
    fprintf(stderr, "tcp_run: rank %d: %d file descriptors open before, %d after\n", rank,
            fds_before, fds_after);
    return 98;
  }
  return 0;
}

static int tcp_run_opts_run(int p, redcoll_rank_main fn, void *arg, tcp_run_opts *o) {
  if (p < 1 || p > 1024) return REDCOLL_EINVAL;
  int rc = REDCOLL_OK;
  int nports = o->hosts ? p : 1;
  int *fds = calloc((size_t)nports, sizeof *fds);
  pid_t *pids = calloc((size_t)p, sizeof *pids);
  int *status = calloc((size_t)p, sizeof *status);
  char *addrs = malloc((size_t)nports * 48 + 1);
  if (fds == NULL || pids == NULL || status == NULL || addrs == NULL) {
    rc = REDCOLL_ENOMEM;
    goto out;
  }
  addrs[0] = '\0';
  for (int i = 0; i < nports; i++) fds[i] = -1;
  for (int i = 0; i < nports; i++) {
    int port = tcp_run__port(o->ipv6, &fds[i]);
    if (port < 0) {
      rc = REDCOLL_ETRANSPORT;
      goto out;
    }
    char one[48];
    snprintf(one, sizeof one, "%s%s:%d", i ? "," : "", o->ipv6 ? "[::1]" : "127.0.0.1", port);
    strcat(addrs, one);
  }
  uint64_t tmo = o->timeout_ms ? o->timeout_ms : 60000;
  if (o->before != NULL) o->before(addrs, arg);
  fflush(NULL);
  for (int r = 0; r < p; r++) {
    pid_t pid = fork();
    if (pid < 0) {
      rc = REDCOLL_ENOMEM;
      for (int q = 0; q < r; q++) kill(pids[q], SIGKILL);
      for (int q = 0; q < r; q++) waitpid(pids[q], NULL, 0);
      goto out;
    }
    if (pid == 0) {
      /* The rank that listens on a reserved port keeps the reservation
       * until it has bound the port itself: closed earlier, the port could
       * be handed to another process's connection meanwhile. */
      int mine = o->hosts ? r : r == 0 ? 0 : -1, kept = -1;
      for (int i = 0; i < nports; i++) {
        if (i == mine) kept = fds[i];
        else close(fds[i]);
      }
      int code = tcp_run__child(r, p, addrs, o,
                                r < 64 ? o->start_delay_ms[r] : 0, tmo, r < 64 ? o->secrets[r] : NULL,
                                r < 64 ? o->job_ids[r] : 0, fn, arg, kept);
      free(fds);
      free(pids);
      free(status);
      free(addrs);
#ifdef TCP_RUN__LSAN
      if (code == 0 && __lsan_do_recoverable_leak_check() != 0) code = 97;
#endif
      _exit(code);
    }
    pids[r] = pid;
    status[r] = REDCOLL_ETIMEDOUT;
  }
  for (int i = 0; i < nports; i++) {
    close(fds[i]);
    fds[i] = -1;
  }
  double deadline = tcp_run__now() + (o->deadline_s > 0 ? o->deadline_s : 240.0);
  int left = p;
  while (left > 0) {
    int ws;
    pid_t pid = waitpid(-1, &ws, WNOHANG);
    if (pid > 0) {
      for (int r = 0; r < p; r++) {
        if (pids[r] != pid) continue;
        pids[r] = 0;
        left--;
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
    if (tcp_run__now() > deadline) {
      fprintf(stderr, "tcp_run: deadline passed, killing %d ranks\n", left);
      for (int r = 0; r < p; r++)
        if (pids[r] > 0) kill(pids[r], SIGKILL);
      for (int r = 0; r < p; r++)
        if (pids[r] > 0) waitpid(pids[r], NULL, 0);
      break;
    }
    struct timespec ts = {0, 2000000};
    nanosleep(&ts, NULL);
  }
  for (int r = 0; r < p; r++) {
    if (r < 64) o->statuses[r] = status[r];
    if (status[r] != REDCOLL_OK && rc == REDCOLL_OK) rc = status[r];
  }
out:
  if (fds != NULL)
    for (int i = 0; i < nports; i++)
      if (fds[i] >= 0) close(fds[i]);
  free(fds);
  free(pids);
  free(status);
  free(addrs);
  return rc;
}

static inline int tcp_run(int p, redcoll_rank_main fn, void *arg) {
  tcp_run_opts o;
  memset(&o, 0, sizeof o);
  return tcp_run_opts_run(p, fn, arg, &o);
}

#endif /* REDCOLL_TCP_RUNNER_H */
