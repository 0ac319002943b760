/*
 * One large message over loopback TCP: redcoll's point-to-point path next to
 * a plain socket program that moves the same bytes, in one run, so that
 * the cost of redcoll's TCP path per byte is a printed ratio.
 *
 * Two processes (this one and a child), and for every size and round, one
 * right after the other:
 *   raw      one connection; both ranks write their m bytes and read the
 *            peer's m bytes at once (poll, non-blocking, writes of --chunk
 *            bytes; socket buffers as the kernel sizes them unless
 *            --sockbuf is given);
 *   redcoll  redcoll_sendrecv of m bytes each way on a two-rank TCP
 *            communicator (a host list on 127.0.0.1).
 * With --oneway both move m bytes from rank 0 to rank 1, which answers with
 * one byte: the rate of one direction.  Every timed iteration starts
 * together on both ranks (the previous exchange ends on both).
 *
 * Output: CSV lines impl,mode,bytes,median_us,GBps (GB/s = 10^9 bytes of
 * one direction per second), then per size the ratio of medians
 * redcoll/raw.  Rounds interleave the two so a burst of load hits both.
 *
 * With --two the raw program uses a connection per direction, as redcoll
 * does (one per ordered pair of ranks).
 *
 * Usage: bench_p2p [--oneway] [--two] [--sizes MIN:MAX] [--factor F] [--iters N]
 *                  [--rounds R] [--chunk BYTES] [--sockbuf BYTES]
 *        (defaults: exchange, 256K:16M, factor 4, 10 iterations, 5 rounds,
 *        chunk 1 MiB, kernel's socket buffers)
 */

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "redcoll/redcoll.h"
#include "redcoll/tcp.h"

typedef struct opts {
  int oneway;
  size_t min, max;
  double factor;
  int iters, rounds;
  size_t chunk;
  int sockbuf;
  int two; /* --two: the raw program uses a connection per direction, as redcoll does */
} opts;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static int parse_size(const char *s, size_t *out) {
  char *end;
  double v = strtod(s, &end);
  if (end == s || v < 0) return -1;
  if (*end == 'K' || *end == 'k') v *= 1024, end++;
  else if (*end == 'M' || *end == 'm') v *= 1024 * 1024, end++;
  else if (*end == 'G' || *end == 'g') v *= 1024.0 * 1024 * 1024, end++;
  if (*end != '\0' && *end != ':') return -1;
  *out = (size_t)v;
  return 0;
}

/* ---- raw sockets ----------------------------------------------------------- */

/* Writes slen bytes of s on wfd and reads rlen bytes into r from rfd at
 * once (the two may be one connection). */
static int raw_xfer(const int *fds, const char *s, size_t slen, char *r, size_t rlen,
                    size_t chunk) {
  int wfd = fds[0], rfd = fds[1];
  size_t sent = 0, got = 0;
  while (sent < slen || got < rlen) {
    struct pollfd pfd[2] = {{wfd, sent < slen ? POLLOUT : 0, 0}, {rfd, got < rlen ? POLLIN : 0, 0}};
    if (poll(pfd, 2, 10000) <= 0) return -1;
    short rev = pfd[0].revents;
    short rrev = pfd[1].revents;
    if ((rrev & POLLIN) && got < rlen) {
      ssize_t n = read(rfd, r + got, rlen - got);
      if (n <= 0 && !(n < 0 && errno == EAGAIN)) return -1;
      if (n > 0) got += (size_t)n;
    }
    if ((rev & POLLOUT) && sent < slen) {
      size_t k = slen - sent < chunk ? slen - sent : chunk;
      ssize_t n = write(wfd, s + sent, k);
      if (n < 0 && errno != EAGAIN) return -1;
      if (n > 0) sent += (size_t)n;
    }
    if (((rev | rrev) & (POLLERR | POLLHUP)) && !(rrev & POLLIN)) return -1;
  }
  return 0;
}

static int raw_connect1(int rank, int lfd, int port, const opts *o) {
  int fd;
  if (rank == 0) {
    fd = accept(lfd, NULL, NULL);
  } else {
    fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    for (int i = 0; i < 1000 && connect(fd, (struct sockaddr *)&a, sizeof a) != 0; i++)
      usleep(1000);
  }
  if (fd < 0) return -1;
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  if (o->sockbuf > 0) {
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &o->sockbuf, sizeof o->sockbuf);
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &o->sockbuf, sizeof o->sockbuf);
  }
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  return fd;
}

/* fds[0] to write, fds[1] to read: one connection, or (--two) rank 0's
 * first connection carries 0 -> 1 and the second 1 -> 0. */
static int raw_connect(int rank, int lfd, int port, const opts *o, int *fds) {
  fds[0] = fds[1] = raw_connect1(rank, lfd, port, o);
  if (fds[0] < 0) return -1;
  if (!o->two) return 0;
  int second = raw_connect1(rank, lfd, port, o);
  if (second < 0) return -1;
  if (rank == 0) fds[1] = second;
  else fds[1] = fds[0], fds[0] = second;
  return 0;
}

/* One timed iteration of the raw program. */
static int raw_iter(int rank, const int *fds, char *s, char *r, size_t m, const opts *o) {
  char ack = 1;
  if (!o->oneway) return raw_xfer(fds, s, m, r, m, o->chunk);
  if (rank == 0) {
    if (raw_xfer(fds, s, m, NULL, 0, o->chunk) != 0) return -1;
    return raw_xfer(fds, NULL, 0, &ack, 1, o->chunk);
  }
  if (raw_xfer(fds, NULL, 0, r, m, o->chunk) != 0) return -1;
  return raw_xfer(fds, &ack, 1, NULL, 0, o->chunk);
}

/* ---- redcoll --------------------------------------------------------------- */

static int rc_iter(redcoll_comm *c, int rank, char *s, char *r, size_t m, const opts *o) {
  int peer = 1 - rank;
  char ack = 1;
  if (!o->oneway) return redcoll_sendrecv(c, peer, 1, s, m, peer, 1, r, m);
  if (rank == 0) {
    int rc = redcoll_send(c, 1, 2, s, m);
    return rc == REDCOLL_OK ? redcoll_recv(c, 1, 3, &ack, 1) : rc;
  }
  int rc = redcoll_recv(c, 0, 2, r, m);
  return rc == REDCOLL_OK ? redcoll_send(c, 0, 3, &ack, 1) : rc;
}

/* ---- driver ---------------------------------------------------------------- */

static int free_port(int *fd_out) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) != 0) return -1;
  socklen_t len = sizeof a;
  getsockname(fd, (struct sockaddr *)&a, &len);
  *fd_out = fd;
  return ntohs(a.sin_port);
}

static int run_rank(int rank, int lfd, int raw_port, const char *hosts, const opts *o) {
  int fd[2];
  if (raw_connect(rank, lfd, raw_port, o, fd) != 0) return 2;
  redcoll_tcp_config cfg;
  redcoll_tcp_config_init(&cfg);
  cfg.rank = rank;
  cfg.size = 2;
  cfg.hosts = hosts;
  redcoll_comm *c = NULL;
  if (redcoll_tcp_comm_create(&cfg, &c) != REDCOLL_OK) return 3;
  char *s = malloc(o->max), *r = malloc(o->max);
  double *t_raw = malloc(sizeof(double) * (size_t)o->iters * (size_t)o->rounds);
  double *t_rc = malloc(sizeof(double) * (size_t)o->iters * (size_t)o->rounds);
  if (!s || !r || !t_raw || !t_rc) return 4;
  memset(s, rank + 1, o->max);
  memset(r, 0, o->max);
  if (rank == 0) printf("impl,mode,bytes,median_us,GBps\n");
  for (size_t m = o->min; m <= o->max; m = (size_t)((double)m * o->factor + 0.5)) {
    int n = 0;
    /* A warm-up of each, then the rounds, each running both. */
    if (raw_iter(rank, fd, s, r, m, o) != 0 || rc_iter(c, rank, s, r, m, o) != REDCOLL_OK)
      return 5;
    for (int round = 0; round < o->rounds; round++) {
      for (int i = 0; i < o->iters; i++) {
        double t0 = now_s();
        if (raw_iter(rank, fd, s, r, m, o) != 0) return 6;
        t_raw[n + i] = now_s() - t0;
      }
      for (int i = 0; i < o->iters; i++) {
        double t0 = now_s();
        if (rc_iter(c, rank, s, r, m, o) != REDCOLL_OK) return 7;
        t_rc[n + i] = now_s() - t0;
      }
      n += o->iters;
    }
    if (r[m - 1] != (char)(2 - rank) && (!o->oneway || rank == 1)) return 8;
    if (rank == 0) {
      double mr = median(t_raw, n), mc = median(t_rc, n);
      const char *mode = o->oneway ? "oneway" : "exchange";
      printf("raw,%s,%zu,%.1f,%.3f\n", mode, m, mr * 1e6, (double)m / mr / 1e9);
      printf("redcoll,%s,%zu,%.1f,%.3f\n", mode, m, mc * 1e6, (double)m / mc / 1e9);
      printf("# %zu bytes: redcoll / raw = %.2f\n", m, mc / mr);
      fflush(stdout);
    }
    if (o->factor <= 1) break;
  }
  redcoll_comm_destroy(c);
  close(fd[0]);
  if (fd[1] != fd[0]) close(fd[1]);
  free(s);
  free(r);
  free(t_raw);
  free(t_rc);
  return 0;
}

int main(int argc, char **argv) {
  opts o = {0, 256 << 10, 16 << 20, 4, 10, 5, 1 << 20, 0, 0};
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(a, "--oneway") == 0 || strcmp(a, "--two") == 0) {
      if (a[2] == 'o') o.oneway = 1;
      else o.two = 1;
      continue;
    }
    if (v == NULL) goto usage;
    i++;
    if (strcmp(a, "--sizes") == 0) {
      const char *colon = strchr(v, ':');
      if (parse_size(v, &o.min) != 0 || parse_size(colon ? colon + 1 : v, &o.max) != 0) goto usage;
    } else if (strcmp(a, "--factor") == 0) {
      o.factor = atof(v);
    } else if (strcmp(a, "--iters") == 0) {
      o.iters = atoi(v);
    } else if (strcmp(a, "--rounds") == 0) {
      o.rounds = atoi(v);
    } else if (strcmp(a, "--chunk") == 0) {
      if (parse_size(v, &o.chunk) != 0 || o.chunk == 0) goto usage;
    } else if (strcmp(a, "--sockbuf") == 0) {
      size_t b;
      if (parse_size(v, &b) != 0) goto usage;
      o.sockbuf = (int)b;
    } else {
      goto usage;
    }
  }
  if (o.min == 0 || o.max < o.min || o.iters < 1 || o.rounds < 1) goto usage;
  int lfd, pa = free_port(&lfd), fb, pb = free_port(&fb), fc, pc = free_port(&fc);
  if (pa < 0 || pb < 0 || pc < 0 || listen(lfd, 4) != 0) return 1;
  close(fb); /* the transport binds these itself */
  close(fc);
  char hosts[64];
  snprintf(hosts, sizeof hosts, "127.0.0.1:%d,127.0.0.1:%d", pb, pc);
  fflush(stdout);
  pid_t child = fork();
  if (child == 0) _exit(run_rank(1, -1, pa, hosts, &o));
  int rc = run_rank(0, lfd, pa, hosts, &o);
  int st = 0;
  waitpid(child, &st, 0);
  if (rc != 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
    fprintf(stderr, "bench_p2p: failed (rank 0: %d, rank 1: %d)\n", rc,
            WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    return 1;
  }
  return 0;
usage:
  fprintf(stderr, "usage: bench_p2p [--oneway] [--two] [--sizes MIN:MAX] [--factor F] [--iters N] "
                  "[--rounds R] [--chunk BYTES] [--sockbuf BYTES]\n");
  return 2;
}
