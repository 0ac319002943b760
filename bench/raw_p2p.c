/*
 * The baseline of redcoll's TCP point-to-point path: two processes (this one
 * and a child) move the same bytes over one loopback connection with plain
 * sockets, nothing else, so that `redcoll-bench --coll sendrecv`
 * (or `--coll send`) has a number to be divided by.  bench/bench_p2p.py runs
 * both, interleaved, and prints the ratio.
 *
 * Modes, per iteration:
 *   exchange   both processes send m bytes and receive the peer's m bytes at
 *              once: a thread writes (one write call of m bytes, which the
 *              kernel splits as its buffers allow) while the main thread
 *              reads;
 *   --oneway   process 0 writes m bytes and process 1 reads them.
 * Iterations are timed as redcoll-bench times them: each is preceded by a
 * barrier (one byte each way), each process times its own part, and the
 * iteration's time is the slower process's (the two exchange their times
 * afterwards, untimed).
 * Sockets are blocking unless --nonblock is given: then each process has one
 * thread, its socket is non-blocking, and it writes and reads whatever the
 * kernel takes and has (each call asks for all that is left).  When neither
 * direction moves it waits as redcoll's TCP transport does by default: it
 * tries again (sched_yield() between tries) until --spin-us microseconds
 * (default 100) have passed since bytes last moved, and then sleeps in
 * poll().  Its rows' algo column gets the suffix "+nonblock".  (On a
 * virtual machine, waking a sleeping process costs the other CPU an
 * interrupt; blocking sockets sleep whenever the socket is drained.)
 * For every size and every socket-buffer setting of --sockbuf (N: SO_SNDBUF
 * and SO_RCVBUF of N on both ends; sN: SO_SNDBUF alone, as redcoll sets it
 * between ranks of one host; 0: the kernel's autotuning), each on a
 * connection of its own, a warm-up iteration and then --iters timed ones; process 0
 * prints one CSV line per (size, setting) in redcoll-bench's columns:
 *
 *   impl,coll,p,bytes,median_us,p99_us,algbw_GBps,busbw_GBps,algo
 *
 * with impl "raw", coll "sendrecv" or "send", p 2, bytes what one process
 * sends, and algo "sockbuf=N" or "sndbuf=N".  --bind puts process r on CPU r (as
 * redcoll-run --bind does).
 *
 * Usage: raw_p2p [--oneway] [--nonblock [--spin-us N]] [--sizes MIN:MAX]
 *                [--factor F] [--iters N] [--sockbuf [s]N,...] [--bind] [--no-header]
 *        (defaults: exchange, 256K:16M, factor 8, 20 iterations,
 *        sockbuf 0,262144,1048576,4194304,s524288)
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../tools/stats.h"

#define MAX_SETTINGS 8

typedef struct opts {
  int oneway, nonblock, bind, header;
  double spin; /* seconds */
  size_t min, max, factor;
  int iters;
  int nbuf;
  int sockbuf[MAX_SETTINGS];
} opts;

static int parse_size(const char *s, size_t *out) {
  char *end;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (end == s || errno != 0) return -1;
  if (*end == 'K' || *end == 'k') v <<= 10, end++;
  else if (*end == 'M' || *end == 'm') v <<= 20, end++;
  if (*end != '\0' && *end != ':') return -1;
  *out = (size_t)v;
  return 0;
}

static int write_all(int fd, const char *p, size_t n) {
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return -1;
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

static int read_all(int fd, char *p, size_t n) {
  while (n > 0) {
    ssize_t r = read(fd, p, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return -1;
    p += r;
    n -= (size_t)r;
  }
  return 0;
}

/* The writing half of an exchange, in a thread of its own. */
typedef struct writer {
  int fd;
  const char *buf;
  size_t len;
  int rc;
} writer;

static void *write_thread(void *arg) {
  writer *w = arg;
  w->rc = write_all(w->fd, w->buf, w->len);
  return NULL;
}

/*
 * Non-blocking: sends sn bytes of s and receives rn bytes into r at once on
 * one thread; every call asks for all that is left, and poll() waits only
 * when neither direction can move.
 */
static int xfer(int fd, const char *s, size_t sn, char *r, size_t rn, double spin) {
  double last = stats_now();
  while (sn > 0 || rn > 0) {
    int moved = 0;
    if (sn > 0) {
      ssize_t w = send(fd, s, sn, MSG_NOSIGNAL);
      if (w > 0) s += w, sn -= (size_t)w, moved = 1;
      else if (w < 0 && errno != EAGAIN && errno != EINTR) return -1;
    }
    if (rn > 0) {
      ssize_t g = recv(fd, r, rn, 0);
      if (g > 0) r += g, rn -= (size_t)g, moved = 1;
      else if (g == 0 || (errno != EAGAIN && errno != EINTR)) return -1;
    }
    if (moved) {
      last = stats_now();
      continue;
    }
    if (stats_now() - last < spin) {
      sched_yield();
      continue;
    }
    struct pollfd pf = {fd, (short)((sn > 0 ? POLLOUT : 0) | (rn > 0 ? POLLIN : 0)), 0};
    if (poll(&pf, 1, -1) < 0 && errno != EINTR) return -1;
  }
  return 0;
}

/* Sends n bytes of s and receives n bytes into r at once: the barrier and
 * the exchange of times, small enough for the socket's buffers. */
static int swap_small(int fd, const void *s, void *r, size_t n, const opts *o) {
  if (o->nonblock) return xfer(fd, s, n, r, n, o->spin);
  return write_all(fd, s, n) || read_all(fd, r, n) ? -1 : 0;
}

/* The timed part of one iteration. */
static int iteration(int rank, int fd, const char *s, char *r, size_t m, const opts *o) {
  if (o->nonblock) {
    if (!o->oneway) return xfer(fd, s, m, r, m, o->spin);
    return rank == 0 ? xfer(fd, s, m, NULL, 0, o->spin) : xfer(fd, NULL, 0, r, m, o->spin);
  }
  if (o->oneway) return rank == 0 ? write_all(fd, s, m) : read_all(fd, r, m);
  writer w = {fd, s, m, 0};
  pthread_t th;
  if (pthread_create(&th, NULL, write_thread, &w) != 0) return -1;
  int rc = read_all(fd, r, m);
  pthread_join(th, NULL);
  return rc || w.rc ? -1 : 0;
}

/* One timed iteration after a barrier; *t is the slower process's time. */
static int timed(int rank, int fd, const char *s, char *r, size_t m, const opts *o, double *t) {
  char tok = 1, got;
  if (swap_small(fd, &tok, &got, 1, o) != 0) return -1;
  double t0 = stats_now();
  if (iteration(rank, fd, s, r, m, o) != 0) return -1;
  double mine = stats_now() - t0, other;
  if (swap_small(fd, &mine, &other, sizeof mine, o) != 0) return -1;
  *t = mine > other ? mine : other;
  return 0;
}

/* One connection for one setting: process 0 accepts, 1 connects. */
static int connect_pair(int rank, int lfd, int port, int sockbuf) {
  int fd;
  if (rank == 0) {
    fd = accept(lfd, NULL, NULL);
  } else {
    fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd >= 0 && sockbuf > 0) { /* before connecting, so that the window scale fits */
      setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sockbuf, sizeof sockbuf);
      setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &sockbuf, sizeof sockbuf);
    }
    for (int i = 0; fd >= 0 && i < 5000 && connect(fd, (struct sockaddr *)&a, sizeof a) != 0; i++)
      usleep(1000);
  }
  if (fd < 0) return -1;
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  if (sockbuf > 0) {
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sockbuf, sizeof sockbuf);
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &sockbuf, sizeof sockbuf);
  }
  if (sockbuf < 0) { /* the send buffer alone, as redcoll between ranks of one host */
    int v = -sockbuf;
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &v, sizeof v);
  }
  return fd;
}

static int run_rank(int rank, int lfd, int port, const opts *o) {
  if (o->bind) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(rank, &set);
    sched_setaffinity(0, sizeof set, &set); /* best effort, as redcoll-run --bind */
  }
  char *s = malloc(o->max), *r = malloc(o->max);
  double *t = malloc(sizeof(double) * (size_t)o->iters);
  if (s == NULL || r == NULL || t == NULL) return 4;
  memset(s, rank + 1, o->max);
  memset(r, 0, o->max);
  if (rank == 0 && o->header)
    printf("impl,coll,p,bytes,median_us,p99_us,algbw_GBps,busbw_GBps,algo\n");
  for (int k = 0; k < o->nbuf; k++) {
    int fd = connect_pair(rank, lfd, port, o->sockbuf[k]);
    if (fd < 0) return 2;
    if (o->nonblock && fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) != 0) return 3;
    for (size_t m = o->min;; m *= o->factor) {
      memset(r, 0, m); /* every received byte is checked below */
      if (timed(rank, fd, s, r, m, o, &t[0]) != 0) return 5; /* warm-up */
      for (int i = 0; i < o->iters; i++)
        if (timed(rank, fd, s, r, m, o, &t[i]) != 0) return 6;
      if (!o->oneway || rank == 1)
        for (size_t i = 0; i < m; i++)
          if (r[i] != (char)(2 - rank)) return 7;
      if (rank == 0) {
        double med = stats_median(t, (size_t)o->iters);
        double p99 = stats_quantile(t, (size_t)o->iters, 0.99);
        double bw = (double)m / med * 1e-9;
        printf("raw,%s,2,%zu,%.2f,%.2f,%.4f,%.4f,%s=%d%s\n", o->oneway ? "send" : "sendrecv", m,
               med * 1e6, p99 * 1e6, bw, bw, o->sockbuf[k] < 0 ? "sndbuf" : "sockbuf",
               o->sockbuf[k] < 0 ? -o->sockbuf[k] : o->sockbuf[k], o->nonblock ? "+nonblock" : "");
        fflush(stdout);
      }
      if (m > o->max / o->factor) break;
    }
    close(fd);
  }
  free(s);
  free(r);
  free(t);
  return 0;
}

int main(int argc, char **argv) {
  opts o = {.min = 256 << 10, .max = 16 << 20, .factor = 8, .iters = 20, .header = 1,
            .spin = 100e-6, .nbuf = 5, .sockbuf = {0, 262144, 1048576, 4194304, -524288}};
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(a, "--oneway") == 0) {
      o.oneway = 1;
      continue;
    }
    if (strcmp(a, "--nonblock") == 0) {
      o.nonblock = 1;
      continue;
    }
    if (strcmp(a, "--bind") == 0) {
      o.bind = 1;
      continue;
    }
    if (strcmp(a, "--no-header") == 0) {
      o.header = 0;
      continue;
    }
    if (v == NULL) goto usage;
    i++;
    if (strcmp(a, "--sizes") == 0) {
      const char *colon = strchr(v, ':');
      if (parse_size(v, &o.min) != 0 || parse_size(colon ? colon + 1 : v, &o.max) != 0) goto usage;
    } else if (strcmp(a, "--factor") == 0) {
      o.factor = (size_t)atol(v);
    } else if (strcmp(a, "--spin-us") == 0) {
      o.spin = atof(v) * 1e-6;
    } else if (strcmp(a, "--iters") == 0) {
      o.iters = atoi(v);
    } else if (strcmp(a, "--sockbuf") == 0) {
      o.nbuf = 0;
      for (const char *p = v; *p != '\0' && o.nbuf < MAX_SETTINGS;) {
        char *end;
        int snd_only = *p == 's';
        if (snd_only) p++;
        long b = strtol(p, &end, 10);
        if (end == p || b < 0 || b > (1L << 30) || (snd_only && b == 0)) goto usage;
        o.sockbuf[o.nbuf++] = snd_only ? -(int)b : (int)b;
        p = *end == ',' ? end + 1 : end;
        if (*end != ',' && *end != '\0') goto usage;
      }
    } else {
      goto usage;
    }
  }
  if (o.min == 0 || o.max < o.min || o.factor < 2 || o.iters < 1 || o.nbuf < 1) goto usage;
  int lfd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t alen = sizeof a;
  if (lfd < 0 || bind(lfd, (struct sockaddr *)&a, sizeof a) != 0 || listen(lfd, 8) != 0 ||
      getsockname(lfd, (struct sockaddr *)&a, &alen) != 0) {
    perror("raw_p2p: listen");
    return 1;
  }
  int port = ntohs(a.sin_port);
  fflush(stdout);
  pid_t child = fork();
  if (child < 0) return 1;
  if (child == 0) {
    close(lfd);
    _exit(run_rank(1, -1, port, &o));
  }
  int rc = run_rank(0, lfd, port, &o);
  close(lfd);
  int st = 0;
  waitpid(child, &st, 0);
  if (rc != 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
    fprintf(stderr, "raw_p2p: failed (process 0: %d, process 1: %d)\n", rc,
            WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    return 1;
  }
  return 0;
usage:
  fprintf(stderr, "usage: raw_p2p [--oneway] [--sizes MIN:MAX] [--factor F] [--iters N] "
                  "[--sockbuf [s]N,...] [--nonblock [--spin-us N]] [--bind] [--no-header]\n");
  return 2;
}
