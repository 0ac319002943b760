/*
 * redcoll-run -n P [--no-prefix] [--bind] [--] PROGRAM ARGS...
 *
 * Starts P local processes of PROGRAM with the TCP transport's environment
 * (REDCOLL_RANK, REDCOLL_SIZE, REDCOLL_MASTER on a free 127.0.0.1 port),
 * prefixes every line they print with "[rank] " (stdout to stdout, stderr to
 * stderr), and as soon as one rank fails (non-zero exit or a signal) stops
 * the others (SIGTERM, then SIGKILL after two seconds) and exits with the
 * failing rank's status: its exit code, or 128 + the signal number.
 * --no-prefix passes the lines through unchanged (for CSV that only rank 0
 * prints, as redcoll-bench does).
 *
 * --bind pins rank r to one CPU, the (r mod n)-th of the n CPUs
 * redcoll-run may use (sched_getaffinity), as mpirun --bind-to core does.
 * Without it the kernel places the ranks; two ranks that poll while they
 * wait can then share one core for a long time while another idles.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "stats.h"

#define LINE_MAX_BYTES 65536

typedef struct stream {
  int fd;    /* -1 once closed */
  int out;   /* 1: our stdout, 2: our stderr */
  int rank;
  size_t len;
  char buf[LINE_MAX_BYTES];
} stream;

static volatile sig_atomic_t interrupted;
static int no_prefix;

/* Pins the calling process to the (r mod n)-th of its n allowed CPUs. */
static void bind_rank(int r) {
  cpu_set_t allowed;
  if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) return;
  int n = CPU_COUNT(&allowed), k = r % (n > 0 ? n : 1);
  for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
    if (!CPU_ISSET(cpu, &allowed) || k-- > 0) continue;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    if (sched_setaffinity(0, sizeof one, &one) != 0)
      fprintf(stderr, "redcoll-run: rank %d: cannot bind to CPU %d: %s\n", r, cpu, strerror(errno));
    return;
  }
}

static void on_signal(int sig) { interrupted = sig; }

static void usage(void) {
  fprintf(stderr, "usage: redcoll-run -n P [--no-prefix] [--bind] [--] PROGRAM [ARGS...]\n");
  exit(2);
}

static void write_all(int fd, const char *p, size_t n) {
  while (n > 0) {
    ssize_t r = write(fd, p, n);
    if (r < 0) {
      if (errno == EINTR) continue;
      return;
    }
    p += r;
    n -= (size_t)r;
  }
}

/* Writes "[rank] " and n bytes (a line, or a chunk too long for one). */
static void emit(stream *s, const char *p, size_t n, int newline) {
  char pre[32];
  int k = snprintf(pre, sizeof pre, "[%d] ", s->rank);
  int fd = s->out == 1 ? STDOUT_FILENO : STDERR_FILENO;
  if (!no_prefix) write_all(fd, pre, (size_t)k);
  write_all(fd, p, n);
  if (newline) write_all(fd, "\n", 1);
}

/* Reads what is there; prints every complete line. */
static void drain(stream *s) {
  ssize_t r = read(s->fd, s->buf + s->len, sizeof s->buf - s->len);
  if (r < 0 && (errno == EINTR || errno == EAGAIN)) return;
  if (r <= 0) {
    if (s->len > 0) emit(s, s->buf, s->len, 1);
    s->len = 0;
    close(s->fd);
    s->fd = -1;
    return;
  }
  s->len += (size_t)r;
  size_t start = 0;
  for (size_t i = 0; i < s->len; i++) {
    if (s->buf[i] != '\n') continue;
    emit(s, s->buf + start, i - start + 1, 0);
    start = i + 1;
  }
  if (start == 0 && s->len == sizeof s->buf) {
    emit(s, s->buf, s->len, 1); /* a very long line: print it in pieces */
    start = s->len;
  }
  memmove(s->buf, s->buf + start, s->len - start);
  s->len -= start;
}

/* A free loopback port, kept bound (never listening, SO_REUSEADDR) until the
 * ranks are started so that nobody else is handed it meanwhile. */
static int free_port(int *fd_out) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  struct sockaddr_in a;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (bind(fd, (struct sockaddr *)&a, len) != 0 || getsockname(fd, (struct sockaddr *)&a, &len)) {
    close(fd);
    return -1;
  }
  *fd_out = fd;
  return ntohs(a.sin_port);
}

int main(int argc, char **argv) {
  int p = 0, i = 1, bind = 0;
  for (; i < argc; i++) {
    if (strcmp(argv[i], "--") == 0) {
      i++;
      break;
    }
    if (strcmp(argv[i], "--no-prefix") == 0) {
      no_prefix = 1;
    } else if (strcmp(argv[i], "--bind") == 0) {
      bind = 1;
    } else if (strcmp(argv[i], "-n") == 0 || strcmp(argv[i], "--np") == 0) {
      if (i + 1 >= argc) usage();
      char *end;
      long v = strtol(argv[++i], &end, 10);
      if (*end != '\0' || v < 1 || v > 4096) usage();
      p = (int)v;
    } else if (strncmp(argv[i], "-n", 2) == 0 && argv[i][2] != '\0') {
      char *end;
      long v = strtol(argv[i] + 2, &end, 10);
      if (*end != '\0' || v < 1 || v > 4096) usage();
      p = (int)v;
    } else if (argv[i][0] == '-') {
      usage();
    } else {
      break;
    }
  }
  if (p < 1 || i >= argc) usage();
  char **prog = argv + i;

  int pfd = -1;
  int port = free_port(&pfd);
  if (port < 0) {
    perror("redcoll-run: no free port on 127.0.0.1");
    return 2;
  }
  char master[64], size_s[16];
  snprintf(master, sizeof master, "127.0.0.1:%d", port);
  snprintf(size_s, sizeof size_s, "%d", p);

  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGHUP, &sa, NULL);
  signal(SIGPIPE, SIG_IGN);

  pid_t *pids = calloc((size_t)p, sizeof *pids);
  stream *st = calloc((size_t)p * 2, sizeof *st);
  struct pollfd *pf = calloc((size_t)p * 2, sizeof *pf);
  if (pids == NULL || st == NULL || pf == NULL) {
    fprintf(stderr, "redcoll-run: out of memory\n");
    return 2;
  }
  int alive = 0, fail_rank = -1, fail_code = 0;
  for (int r = 0; r < p; r++) {
    int po[2], pe[2];
    if (pipe2(po, O_CLOEXEC) != 0 || pipe2(pe, O_CLOEXEC) != 0) {
      perror("redcoll-run: pipe");
      fail_rank = r;
      fail_code = 2;
      break;
    }
    pid_t pid = fork();
    if (pid < 0) {
      perror("redcoll-run: fork");
      fail_rank = r;
      fail_code = 2;
      break;
    }
    if (pid == 0) {
      char rank_s[16];
      snprintf(rank_s, sizeof rank_s, "%d", r);
      setenv("REDCOLL_RANK", rank_s, 1);
      setenv("REDCOLL_SIZE", size_s, 1);
      setenv("REDCOLL_MASTER", master, 1);
      unsetenv("REDCOLL_HOSTS");
      dup2(po[1], STDOUT_FILENO);
      dup2(pe[1], STDERR_FILENO);
      signal(SIGPIPE, SIG_DFL);
      if (bind) bind_rank(r);
      execvp(prog[0], prog);
      fprintf(stderr, "redcoll-run: cannot run %s: %s\n", prog[0], strerror(errno));
      _exit(127);
    }
    close(po[1]);
    close(pe[1]);
    pids[r] = pid;
    st[2 * r] = (stream){.fd = po[0], .out = 1, .rank = r};
    st[2 * r + 1] = (stream){.fd = pe[0], .out = 2, .rank = r};
    alive++;
  }
  close(pfd);

  double kill_at = 0;  /* when SIGKILL follows the SIGTERM */
  double all_gone = 0; /* when the last rank exited */
  int stopping = fail_rank >= 0;
  if (stopping) {
    for (int r = 0; r < p; r++)
      if (pids[r] > 0) kill(pids[r], SIGTERM);
    kill_at = stats_now() + 2.0;
  }
  for (;;) {
    int nf = 0;
    for (int k = 0; k < 2 * p; k++) {
      if (st[k].fd < 0) continue;
      pf[nf].fd = st[k].fd;
      pf[nf].events = POLLIN;
      pf[nf].revents = 0;
      nf++;
    }
    if (nf == 0 && alive == 0) break;
    /* Output still open after every rank exited (a stray grandchild holds
     * the pipe): give it a second, then stop listening. */
    if (alive == 0 && all_gone == 0) all_gone = stats_now();
    if (alive == 0 && stats_now() - all_gone > 1.0) break;
    int r = poll(pf, (nfds_t)nf, 50);
    if (r > 0) {
      int j = 0;
      for (int k = 0; k < 2 * p; k++) {
        if (st[k].fd < 0) continue;
        if (pf[j].revents & (POLLIN | POLLHUP | POLLERR)) drain(&st[k]);
        j++;
      }
    }
    int ws;
    pid_t pid;
    while (alive > 0 && (pid = waitpid(-1, &ws, WNOHANG)) > 0) {
      for (int q = 0; q < p; q++) {
        if (pids[q] != pid) continue;
        pids[q] = 0;
        alive--;
        int code = WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
        if (code != 0 && fail_rank < 0) {
          fail_rank = q;
          fail_code = code;
          if (WIFEXITED(ws))
            fprintf(stderr, "redcoll-run: rank %d exited with status %d\n", q, code);
          else
            fprintf(stderr, "redcoll-run: rank %d killed by signal %d (%s)\n", q, WTERMSIG(ws),
                    strsignal(WTERMSIG(ws)));
        }
      }
    }
    if (interrupted && !stopping && fail_rank < 0) {
      fail_rank = p;
      fail_code = 128 + interrupted;
    }
    if (fail_rank >= 0 && !stopping) {
      stopping = 1;
      for (int q = 0; q < p; q++)
        if (pids[q] > 0) kill(pids[q], SIGTERM);
      kill_at = stats_now() + 2.0;
    }
    if (stopping && kill_at > 0 && stats_now() > kill_at) {
      for (int q = 0; q < p; q++)
        if (pids[q] > 0) kill(pids[q], SIGKILL);
      kill_at = 0;
    }
  }
  free(pids);
  free(st);
  free(pf);
  return fail_rank >= 0 ? fail_code : 0;
}
