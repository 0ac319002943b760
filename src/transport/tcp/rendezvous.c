/* Bootstrap of the TCP transport: the listening socket, the address table
 * from a REDCOLL_HOSTS list, or the rendezvous through which rank 0
 * collects and hands out every rank's listening address (REDCOLL_MASTER).
 *
 * The rendezvous runs once, before the communicator exists, over plain
 * non-blocking sockets and poll() with one deadline (the timeout); it moves
 * a few hundred bytes per rank.  Its frames use the same header as the data
 * connections and sizes are checked against the size this rank was given,
 * never taken from the wire. */
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include "config.h"
#ifdef REDCOLL_HAVE_PMIX
#include "pmix_boot.h"
#endif
#include "rendezvous.h"

/* ---- listening ----------------------------------------------------------------- */

/* Binds and listens on addr (falling back to the wildcard address of its
 * family when allow_wildcard and addr is not local); t->self gets the bound
 * address with its port. */
static int listen_on(redcoll__tcp *t, const redcoll__tcp_addr *addr, int allow_wildcard) {
  char a[64];
  redcoll__tcp_addr_str(addr, a, sizeof a);
  int r = uv_tcp_init(t->loop, &t->listener);
  if (r != 0) return REDCOLL_ENOMEM;
  t->listener_init = 1;
  t->listener.data = t;
  r = uv_tcp_bind(&t->listener, (const struct sockaddr *)addr, 0);
  if (r == UV_EADDRNOTAVAIL && allow_wildcard) {
    redcoll__tcp_addr any;
    memset(&any, 0, sizeof any);
    any.ss_family = addr->ss_family;
    redcoll__tcp_addr_set_port(&any, redcoll__tcp_addr_port(addr));
    redcoll__log(2, "tcp rank %d: %s is not local, listening on all interfaces", t->rank, a);
    r = uv_tcp_bind(&t->listener, (const struct sockaddr *)&any, 0);
  }
  if (r == 0) r = uv_listen((uv_stream_t *)&t->listener, 1024, t->on_accept);
  if (r != 0) {
    redcoll__log(0, "tcp rank %d: cannot listen on %s: %s", t->rank, a, uv_strerror(r));
    return REDCOLL_ETRANSPORT;
  }
  int len = (int)sizeof t->self;
  r = uv_tcp_getsockname(&t->listener, (struct sockaddr *)&t->self, &len);
  if (r != 0) return REDCOLL_ETRANSPORT;
  if (redcoll__tcp_addr_wildcard(&t->self)) {
    /* Advertise the address asked for, with the port actually bound. */
    int port = redcoll__tcp_addr_port(&t->self);
    t->self = *addr;
    redcoll__tcp_addr_set_port(&t->self, port);
  }
  return REDCOLL_OK;
}

/* The address to listen on when the configuration has a say: listen_host
 * (with its port, or listen_port), else the interface of ifname, else
 * fallback (whose port is replaced by listen_port if that is set). */
static int choose_listen(redcoll__tcp *t, const redcoll_tcp_config *cfg,
                         const redcoll__tcp_addr *fallback, redcoll__tcp_addr *out, int *explicit_) {
  *explicit_ = 0;
  int port = cfg->listen_port > 0 ? cfg->listen_port : redcoll__tcp_addr_port(fallback);
  int has_host = 0;
  if (cfg->listen_host != NULL && *cfg->listen_host != '\0') {
    redcoll__tcp_addr la;
    if (redcoll__tcp_parse_addr(cfg->listen_host, strlen(cfg->listen_host), port, &la,
                                &has_host) != REDCOLL_OK) {
      redcoll__log(0, "tcp rank %d: cannot use listen address '%s'", t->rank, cfg->listen_host);
      return REDCOLL_EINVAL;
    }
    port = redcoll__tcp_addr_port(&la);
    if (has_host) {
      *out = la;
      *explicit_ = 1;
      return REDCOLL_OK;
    }
  }
  if (cfg->ifname != NULL && *cfg->ifname != '\0') {
    char why[160];
    if (redcoll__tcp_pick_interface(cfg->ifname, fallback->ss_family, out, why, sizeof why) !=
        REDCOLL_OK) {
      redcoll__log(0, "tcp rank %d: %s", t->rank, why);
      return REDCOLL_EINVAL;
    }
    redcoll__tcp_addr_set_port(out, port);
    *explicit_ = 1;
    return REDCOLL_OK;
  }
  *out = *fallback;
  redcoll__tcp_addr_set_port(out, port);
  return REDCOLL_OK;
}

/* Refuses a mix of loopback and other addresses: a rank on loopback cannot
 * be reached from another host. */
static int check_loopback(redcoll__tcp *t) {
  int lo = -1, other = -1;
  for (int q = 0; q < t->size; q++) {
    if (redcoll__tcp_addr_loopback(&t->peers[q].addr)) lo = q;
    else other = q;
  }
  if (lo < 0 || other < 0) return REDCOLL_OK;
  char a[64], b[64];
  redcoll__tcp_addr_str(&t->peers[lo].addr, a, sizeof a);
  redcoll__tcp_addr_str(&t->peers[other].addr, b, sizeof b);
  redcoll__log(0,
               "tcp rank %d: rank %d listens on loopback %s but rank %d is at %s: choose an "
               "interface with REDCOLL_IFNAME or REDCOLL_LISTEN",
               t->rank, lo, a, other, b);
  return REDCOLL_EINVAL;
}

/* ---- REDCOLL_HOSTS ---------------------------------------------------------------- */

/* The number of a communicator made from a host list: the how-manieth of
 * its job id, rank and size this process makes (1, 2, ...).  Every rank
 * makes its communicators in the same order, so the numbers agree, and a
 * HELLO carrying another number comes from a communicator before or after
 * this one on the same ports (wire.h).  The last NUMBERS keys are kept. */
#define NUMBERS 64
static pthread_mutex_t numbers_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
  uint64_t job, count, used;
  int rank, size;
} numbers[NUMBERS];
static uint64_t numbers_clock;

static uint64_t next_number(uint64_t job, int rank, int size) {
  pthread_mutex_lock(&numbers_lock);
  int slot = -1, oldest = 0;
  for (int i = 0; i < NUMBERS && slot < 0; i++) {
    if (numbers[i].count != 0 && numbers[i].job == job && numbers[i].rank == rank &&
        numbers[i].size == size)
      slot = i;
    else if (numbers[i].used < numbers[oldest].used)
      oldest = i;
  }
  if (slot < 0) {
    slot = oldest;
    numbers[slot].job = job;
    numbers[slot].rank = rank;
    numbers[slot].size = size;
    numbers[slot].count = 0;
  }
  uint64_t n = ++numbers[slot].count;
  numbers[slot].used = ++numbers_clock;
  pthread_mutex_unlock(&numbers_lock);
  return n;
}

static int boot_hosts(redcoll__tcp *t, const redcoll_tcp_config *cfg) {
  const char *s = cfg->hosts, *e;
  size_t len;
  int n = 0;
  while ((e = redcoll__tcp_next_entry(&s, &len)) != NULL) {
    if (n >= t->size) {
      n++;
      break;
    }
    if (redcoll__tcp_parse_addr(e, len, -1, &t->peers[n].addr, NULL) != REDCOLL_OK) {
      redcoll__log(0, "tcp rank %d: entry %d of REDCOLL_HOSTS ('%.*s') is not host:port",
                   t->rank, n, (int)len, e);
      return REDCOLL_EINVAL;
    }
    n++;
  }
  if (n != t->size) {
    redcoll__log(0, "tcp rank %d: REDCOLL_HOSTS has %s%d entries for %d ranks", t->rank,
                 n > t->size ? "more than " : "", n > t->size ? t->size : n, t->size);
    return REDCOLL_EINVAL;
  }
  int rc = check_loopback(t);
  if (rc != REDCOLL_OK) return rc;
  /* Without a configured job id, the job is its list of addresses: another
   * job has another list (the same one could not listen while this runs). */
  t->job = cfg->job_id != 0 ? cfg->job_id : redcoll__tcp_hosts_digest(cfg->hosts);
  if (t->size == 1) {
    t->self = t->peers[0].addr;
    return REDCOLL_OK;
  }
  redcoll__tcp_addr la;
  int expl;
  rc = choose_listen(t, cfg, &t->peers[t->rank].addr, &la, &expl);
  if (rc != REDCOLL_OK) return rc;
  rc = listen_on(t, &la, !expl);
  /* Others know this rank by its entry in the list. */
  t->self = t->peers[t->rank].addr;
  if (rc == REDCOLL_OK) t->number = next_number(t->job, t->rank, t->size);
  return rc;
}

/* ---- REDCOLL_MASTER ------------------------------------------------------------- */

static int64_t now_ms(void) { return (int64_t)(uv_hrtime() / 1000000u); }

/* Waits until fd is ready for ev; 1 ready, 0 deadline passed, -1 error. */
static int fd_wait(int fd, short ev, int64_t deadline) {
  for (;;) {
    int64_t left = deadline - now_ms();
    if (left <= 0) return 0;
    struct pollfd pf = {.fd = fd, .events = ev};
    int r = poll(&pf, 1, left > 1000 ? 1000 : (int)left);
    if (r > 0) return 1;
    if (r < 0 && errno != EINTR) return -1;
  }
}

/* 0, or -1 with errno (ETIMEDOUT at the deadline, EPIPE for EOF). */
static int io_all(int fd, void *buf, size_t len, int writing, int64_t deadline) {
  unsigned char *p = buf;
  while (len > 0) {
    ssize_t r = writing ? send(fd, p, len, MSG_NOSIGNAL) : recv(fd, p, len, 0);
    if (r > 0) {
      p += r;
      len -= (size_t)r;
      continue;
    }
    if (r == 0) {
      errno = EPIPE;
      return -1;
    }
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) return -1;
    int w = fd_wait(fd, writing ? POLLOUT : POLLIN, deadline);
    if (w == 0) errno = ETIMEDOUT;
    if (w <= 0) return -1;
  }
  return 0;
}

static int socket_nb(int family) {
  int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return -1;
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  return fd;
}

static socklen_t addr_len(const redcoll__tcp_addr *a) {
  return a->ss_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
}

/* Connects to addr, retrying while nothing listens there yet, until the
 * deadline; *last gets the last attempt's error (ECONNREFUSED: nothing
 * listened), so that a timeout can say what it was waiting for. */
static int connect_retry(const redcoll__tcp_addr *addr, int64_t deadline, int *last) {
  int backoff = 2;
  *last = 0;
  for (;;) {
    int fd = socket_nb(addr->ss_family);
    if (fd < 0) return -1;
    int r = connect(fd, (const struct sockaddr *)addr, addr_len(addr));
    if (r != 0 && errno == EINPROGRESS) {
      int w = fd_wait(fd, POLLOUT, deadline);
      if (w <= 0) {
        close(fd);
        errno = w == 0 ? ETIMEDOUT : errno;
        return -1;
      }
      int err = 0;
      socklen_t el = sizeof err;
      getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el);
      r = err ? -1 : 0;
      errno = err;
    }
    if (r == 0 && redcoll__tcp_fd_self_connected(fd)) {
      redcoll__log(3, "tcp: the connection to the rendezvous address was connected to itself "
                      "(its local port is that port); trying again");
      r = -1;
      errno = ECONNREFUSED;
    }
    if (r == 0) return fd;
    int e = errno;
    *last = e;
    close(fd);
    if (e != ECONNREFUSED && e != ETIMEDOUT && e != ECONNRESET && e != EAGAIN) {
      errno = e;
      return -1;
    }
    if (now_ms() + backoff >= deadline) {
      errno = ETIMEDOUT;
      return -1;
    }
    poll(NULL, 0, backoff);
    backoff = backoff * 2 > 250 ? 250 : backoff * 2;
  }
}

static int errno_status(int e) { return e == ETIMEDOUT ? REDCOLL_ETIMEDOUT : REDCOLL_ETRANSPORT; }

/* A random job id, never 0. */
static uint64_t random_job(void) {
  uint64_t v = 0;
  if (getrandom(&v, sizeof v, 0) != (ssize_t)sizeof v) {
    /* No entropy source: the clock and the process are distinct enough
     * to tell concurrent jobs apart. */
    v = uv_hrtime() ^ (uint64_t)getpid() << 32;
    v = redcoll__tcp_fnv1a(REDCOLL__TCP_FNV_INIT, &v, sizeof v);
  }
  return v != 0 ? v : 1;
}

/* The CPU count rank 0 puts into the table: its online CPUs if every
 * registered address is on its host (the same address, or loopback), else
 * 0.  Every rank then divides p by this one number (ranks per CPU for
 * AUTO), whatever its own machine says. */
static uint32_t table_cpus(const redcoll__tcp *t) {
  for (int q = 1; q < t->size; q++)
    if (!redcoll__tcp_addr_same_host(&t->peers[q].addr, &t->peers[0].addr)) return 0;
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 && n < 1 << 30 ? (uint32_t)n : 0;
}

/* ---- the rendezvous server (rank 0) ------------------------------------------- */

#define REG_LEN (REDCOLL__TCP_HDR + REDCOLL__TCP_ADDR_WIRE + 8)
/* A connection to the rendezvous must deliver its whole registration
 * within this many milliseconds, or it is dropped: a silent or slow
 * stranger costs the job nothing. */
#define REG_WINDOW_MS 2000
/* Connections read at once beyond the ranks still expected. */
#define REG_EXTRA 64

typedef struct reg_conn {
  int fd;
  size_t got;
  int64_t until;
  unsigned char buf[REG_LEN];
} reg_conn;

/* A complete registration on fd: rank q's address.  Returns 1 if taken
 * (fds[q] = fd), 0 if dropped (fd closed), REDCOLL_EINVAL if a rank
 * registered twice. */
static int take_registration(redcoll__tcp *t, const char *ma, uint64_t cfg_job, int *fds, int fd,
                             const unsigned char *reg) {
  redcoll__tcp_frame f;
  redcoll__tcp_addr a;
  if (redcoll__tcp_decode(reg, &f) != REDCOLL_OK || f.type != REDCOLL__FR_REG ||
      f.len != REDCOLL__TCP_ADDR_WIRE + 8 || (f.tag >> 32) != (uint64_t)t->size ||
      (f.tag & 0xffffffffu) == 0 || (f.tag & 0xffffffffu) >= (uint64_t)t->size ||
      redcoll__tcp_addr_decode(reg + REDCOLL__TCP_HDR, &a) != REDCOLL_OK) {
    redcoll__log(1, "tcp rank 0: rendezvous on %s: dropped a malformed registration", ma);
    close(fd);
    return 0;
  }
  int q = (int)(f.tag & 0xffffffffu);
  uint64_t job = redcoll__tcp_get_le(reg + REDCOLL__TCP_HDR + REDCOLL__TCP_ADDR_WIRE, 8);
  if (job != cfg_job) {
    redcoll__log(1,
                 "tcp rank 0: rendezvous on %s: dropped a registration of rank %d from "
                 "another job (job id %016llx, this job's is %016llx)",
                 ma, q, (unsigned long long)job, (unsigned long long)cfg_job);
    close(fd);
    return 0;
  }
  if (fds[q] >= 0) {
    redcoll__log(0, "tcp rank 0: rendezvous on %s: rank %d registered twice", ma, q);
    close(fd);
    return REDCOLL_EINVAL;
  }
  fds[q] = fd;
  t->peers[q].addr = a;
  return 1;
}

/* Reads what connection c has; 1 when its registration is complete, 0 to
 * wait for more, -1 when it closed or failed. */
static int reg_read(reg_conn *c) {
  ssize_t r = recv(c->fd, c->buf + c->got, REG_LEN - c->got, 0);
  if (r > 0) c->got += (size_t)r;
  else if (r == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) return -1;
  return c->got == REG_LEN;
}

/* Accepts registrations on lfd until every rank has one (fds[q] gets rank
 * q's connection), reading all connections at once, each within
 * REG_WINDOW_MS; REDCOLL_ETIMEDOUT at the deadline. */
static int gather_registrations(redcoll__tcp *t, int lfd, const char *ma, uint64_t cfg_job,
                                int *fds, int64_t deadline) {
  int cap = t->size + REG_EXTRA, n = 0, got = 1, rc = REDCOLL_OK;
  reg_conn *pend = calloc((size_t)cap, sizeof *pend);
  struct pollfd *pfd = calloc((size_t)cap + 1, sizeof *pfd);
  if (pend == NULL || pfd == NULL) rc = REDCOLL_ENOMEM;
  while (rc == REDCOLL_OK && got < t->size) {
    int64_t now = now_ms(), wake = deadline;
    if (now >= deadline) {
      redcoll__log(0, "tcp rank 0: rendezvous on %s: %d of %d ranks arrived before the timeout",
                   ma, got, t->size);
      rc = REDCOLL_ETIMEDOUT;
      break;
    }
    for (int i = 0; i < n; i++) {
      pfd[i + 1] = (struct pollfd){pend[i].fd, POLLIN, 0};
      if (pend[i].until < wake) wake = pend[i].until;
    }
    pfd[0] = (struct pollfd){lfd, n < cap ? POLLIN : 0, 0};
    if (poll(pfd, (nfds_t)n + 1, (int)(wake - now)) < 0 && errno != EINTR) {
      rc = REDCOLL_ETRANSPORT;
      break;
    }
    now = now_ms();
    /* Read, and drop the finished, the failed and the late. */
    for (int i = n - 1; i >= 0; i--) {
      int st = pfd[i + 1].revents ? reg_read(&pend[i]) : 0;
      if (st == 0 && now < pend[i].until) continue;
      if (st == 1) {
        int r = take_registration(t, ma, cfg_job, fds, pend[i].fd, pend[i].buf);
        if (r < 0) rc = r;
        got += r == 1;
      } else {
        if (st == 0)
          redcoll__log(1, "tcp rank 0: rendezvous on %s: dropped a connection that sent no "
                          "registration within %d ms", ma, REG_WINDOW_MS);
        close(pend[i].fd);
      }
      pend[i] = pend[--n];
    }
    while (pfd[0].revents && n < cap) {
      int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
      if (fd < 0) break;
      int64_t until = now + REG_WINDOW_MS;
      pend[n++] = (reg_conn){fd, 0, until < deadline ? until : deadline, {0}};
    }
  }
  for (int i = 0; i < n; i++) close(pend[i].fd);
  free(pend);
  free(pfd);
  return rc;
}

/* Rank 0: collect every rank's address, then send everyone the table and
 * the job id (cfg_job, the configured one, or a random one). */
static int master_serve(redcoll__tcp *t, const redcoll__tcp_addr *maddr, uint64_t cfg_job,
                        int64_t deadline) {
  char ma[64];
  redcoll__tcp_addr_str(maddr, ma, sizeof ma);
  int rc = REDCOLL_OK, lfd = -1;
  size_t tlen = REDCOLL__TCP_TABLE_HEAD + (size_t)t->size * REDCOLL__TCP_ADDR_WIRE;
  int *fds = malloc((size_t)t->size * sizeof *fds);
  unsigned char *table = malloc(REDCOLL__TCP_HDR + tlen);
  if (fds == NULL || table == NULL) {
    rc = REDCOLL_ENOMEM;
    goto out;
  }
  for (int q = 0; q < t->size; q++) fds[q] = -1;
  t->peers[0].addr = t->self;
  lfd = socket_nb(maddr->ss_family);
  int br = lfd < 0 ? -1 : bind(lfd, (const struct sockaddr *)maddr, addr_len(maddr));
  if (br != 0 && lfd >= 0 && errno == EADDRNOTAVAIL) {
    /* The master's name is not an address of this host (NAT, alias). */
    redcoll__tcp_addr any;
    memset(&any, 0, sizeof any);
    any.ss_family = maddr->ss_family;
    redcoll__tcp_addr_set_port(&any, redcoll__tcp_addr_port(maddr));
    br = bind(lfd, (const struct sockaddr *)&any, addr_len(&any));
  }
  if (lfd < 0 || br != 0 || listen(lfd, t->size) != 0) {
    redcoll__log(0, "tcp rank 0: cannot run the rendezvous on %s: %s", ma, strerror(errno));
    rc = REDCOLL_ETRANSPORT;
    goto out;
  }
  rc = gather_registrations(t, lfd, ma, cfg_job, fds, deadline);
  if (rc != REDCOLL_OK) goto out;
  /* Without a configured job id the job gets a random one here. */
  t->job = cfg_job != 0 ? cfg_job : random_job();
  t->table_cpus = table_cpus(t);
  redcoll__tcp_encode(table, REDCOLL__FR_TABLE, (uint64_t)t->size, tlen);
  redcoll__tcp_put_le(table + REDCOLL__TCP_HDR, t->job, 8);
  redcoll__tcp_put_le(table + REDCOLL__TCP_HDR + 8, t->table_cpus, 4);
  for (int q = 0; q < t->size; q++)
    redcoll__tcp_addr_encode(table + REDCOLL__TCP_HDR + REDCOLL__TCP_TABLE_HEAD +
                                 (size_t)q * REDCOLL__TCP_ADDR_WIRE,
                             &t->peers[q].addr);
  for (int q = 1; q < t->size; q++) {
    if (io_all(fds[q], table, REDCOLL__TCP_HDR + tlen, 1, deadline) != 0) {
      redcoll__log(0, "tcp rank 0: rendezvous: cannot send the table to rank %d: %s", q,
                   strerror(errno));
      rc = errno_status(errno);
      goto out;
    }
  }
out:
  if (fds != NULL)
    for (int q = 0; q < t->size; q++)
      if (fds[q] >= 0) close(fds[q]);
  if (lfd >= 0) close(lfd);
  free(fds);
  free(table);
  return rc;
}

/* master_join: the rendezvous closed the connection before answering. */
#define JOIN_AGAIN 1

/* Ranks > 0: register with the master and receive the table. */
static int master_join(redcoll__tcp *t, int fd, const char *ma, uint64_t cfg_job,
                       int64_t deadline) {
  int rc = REDCOLL_OK;
  size_t tlen = REDCOLL__TCP_TABLE_HEAD + (size_t)t->size * REDCOLL__TCP_ADDR_WIRE;
  unsigned char *table = malloc(tlen);
  if (table == NULL) return REDCOLL_ENOMEM;
  unsigned char reg[REDCOLL__TCP_HDR + REDCOLL__TCP_ADDR_WIRE + 8];
  redcoll__tcp_encode(reg, REDCOLL__FR_REG, (uint64_t)t->rank | (uint64_t)t->size << 32,
                      REDCOLL__TCP_ADDR_WIRE + 8);
  redcoll__tcp_addr_encode(reg + REDCOLL__TCP_HDR, &t->self);
  redcoll__tcp_put_le(reg + REDCOLL__TCP_HDR + REDCOLL__TCP_ADDR_WIRE, cfg_job, 8);
  unsigned char hdr[REDCOLL__TCP_HDR];
  redcoll__tcp_frame f;
  if (io_all(fd, reg, sizeof reg, 1, deadline) != 0 ||
      io_all(fd, hdr, sizeof hdr, 0, deadline) != 0) {
    if (errno == ECONNRESET && now_ms() < deadline) {
      /* Reset before any answer: the listening socket of an earlier
       * rendezvous on this port, closed with this connection in its
       * backlog (a job made again at once).  Register again.  (A
       * registration rank 0 refuses is closed normally: EOF.) */
      rc = JOIN_AGAIN;
      goto out;
    }
    redcoll__log(0, "tcp rank %d: rendezvous with %s failed: %s", t->rank, ma, strerror(errno));
    rc = errno_status(errno);
    goto out;
  }
  if (redcoll__tcp_decode(hdr, &f) != REDCOLL_OK || f.type != REDCOLL__FR_TABLE ||
      f.tag != (uint64_t)t->size || f.len != tlen) {
    redcoll__log(0, "tcp rank %d: rendezvous with %s: malformed table", t->rank, ma);
    rc = REDCOLL_EPROTO;
    goto out;
  }
  if (io_all(fd, table, tlen, 0, deadline) != 0) {
    redcoll__log(0, "tcp rank %d: rendezvous with %s failed: %s", t->rank, ma, strerror(errno));
    rc = errno_status(errno);
    goto out;
  }
  t->job = redcoll__tcp_get_le(table, 8);
  if (t->job == 0 || (cfg_job != 0 && t->job != cfg_job)) {
    redcoll__log(0, "tcp rank %d: rendezvous with %s: the table has another job id", t->rank, ma);
    rc = REDCOLL_EPROTO;
    goto out;
  }
  t->table_cpus = (uint32_t)redcoll__tcp_get_le(table + 8, 4);
  for (int q = 0; q < t->size; q++) {
    if (redcoll__tcp_addr_decode(table + REDCOLL__TCP_TABLE_HEAD + (size_t)q * REDCOLL__TCP_ADDR_WIRE,
                                 &t->peers[q].addr) !=
        REDCOLL_OK) {
      redcoll__log(0, "tcp rank %d: rendezvous with %s: bad address of rank %d", t->rank, ma, q);
      rc = REDCOLL_EPROTO;
      goto out;
    }
  }
  if (!redcoll__tcp_addr_equal(&t->peers[t->rank].addr, &t->self)) {
    redcoll__log(0, "tcp rank %d: rendezvous with %s: the table disagrees on this rank's address",
                 t->rank, ma);
    rc = REDCOLL_EPROTO;
  }
out:
  free(table);
  return rc;
}

static int boot_master(redcoll__tcp *t, const redcoll_tcp_config *cfg) {
  redcoll__tcp_addr maddr;
  char ma[64];
  int has_host = 0;
  if (redcoll__tcp_parse_addr(cfg->master, strlen(cfg->master), -1, &maddr, &has_host) !=
          REDCOLL_OK ||
      !has_host || redcoll__tcp_addr_port(&maddr) == 0) {
    redcoll__log(0,
                 "tcp rank %d: the rendezvous address '%s' (REDCOLL_MASTER) is not host:port "
                 "with a host and a port from 1 to 65535, e.g. 10.0.0.1:29500",
                 t->rank, cfg->master);
    return REDCOLL_EINVAL;
  }
  redcoll__tcp_addr_str(&maddr, ma, sizeof ma);
  /* REDCOLL_WAIT_FOREVER (or anything past the year 292 million): none. */
  int64_t deadline = t->timeout_ms >= (uint64_t)INT64_MAX / 2 ? INT64_MAX
                                                              : now_ms() + (int64_t)t->timeout_ms;
  redcoll__tcp_addr route, la;
  int expl, rc, fd = -1;
  if (t->rank == 0) {
    route = maddr;
  } else {
  again:;
    /* The address this host uses to reach the master is the one the other
     * ranks can most likely reach it by. */
    int last;
    fd = connect_retry(&maddr, deadline, &last);
    if (fd < 0) {
      int e = errno;
      if (e == ETIMEDOUT && last == ECONNREFUSED)
        redcoll__log(0,
                     "tcp rank %d: nothing listened at the rendezvous address %s for %llu ms "
                     "(connection refused): is rank 0 running, with the same REDCOLL_MASTER?",
                     t->rank, ma, (unsigned long long)t->timeout_ms);
      else
        redcoll__log(0, "tcp rank %d: cannot reach the rendezvous at %s: %s", t->rank, ma,
                     strerror(e));
      return errno_status(e);
    }
    socklen_t sl = sizeof route;
    memset(&route, 0, sizeof route);
    if (getsockname(fd, (struct sockaddr *)&route, &sl) != 0) {
      close(fd);
      return REDCOLL_ETRANSPORT;
    }
  }
  redcoll__tcp_addr_set_port(&route, 0);
  rc = REDCOLL_OK;
  if (!t->listener_init) {
    rc = choose_listen(t, cfg, &route, &la, &expl);
    if (rc == REDCOLL_OK) rc = listen_on(t, &la, t->rank == 0 && !expl);
  }
  if (rc == REDCOLL_OK) {
    if (t->rank == 0) rc = master_serve(t, &maddr, cfg->job_id, deadline);
    else rc = master_join(t, fd, ma, cfg->job_id, deadline);
  }
  if (fd >= 0) close(fd);
  if (rc == JOIN_AGAIN) {
    fd = -1;
    poll(NULL, 0, 10);
    goto again;
  }
  if (rc == REDCOLL_OK) rc = check_loopback(t);
  if (rc == REDCOLL_OK) {
    char a[64];
    redcoll__tcp_addr_str(&t->self, a, sizeof a);
    redcoll__log(2, "tcp rank %d of %d listens on %s", t->rank, t->size, a);
  }
  return rc;
}

#ifdef REDCOLL_HAVE_PMIX
/* ---- PMIx ---------------------------------------------------------------------- */

/* Listens on a port of the first interface that is not loopback (or
 * REDCOLL_LISTEN, REDCOLL_IFNAME), then trades addresses through PMIx. */
static int boot_pmix(redcoll__tcp *t, const redcoll_tcp_config *cfg) {
  redcoll__tcp_addr route, la;
  char why[160], mine[64];
  if (redcoll__tcp_pick_interface("^lo", AF_INET, &route, why, sizeof why) != REDCOLL_OK &&
      redcoll__tcp_parse_addr("127.0.0.1", 9, 0, &route, NULL) != REDCOLL_OK)
    return REDCOLL_EINVAL;
  redcoll__tcp_addr_set_port(&route, 0);
  int expl, rc = choose_listen(t, cfg, &route, &la, &expl);
  if (rc == REDCOLL_OK) rc = listen_on(t, &la, !expl);
  if (rc != REDCOLL_OK) return rc;
  redcoll__tcp_addr_str(&t->self, mine, sizeof mine);
  char **all = calloc((size_t)t->size, sizeof *all);
  if (all == NULL) return REDCOLL_ENOMEM;
  static uint64_t boots; /* this process's PMIx bootstraps, in the same order on every rank */
  uint64_t job = 0;
  rc = redcoll__tcp_pmix_exchange(t->rank, t->size, __atomic_add_fetch(&boots, 1, __ATOMIC_RELAXED),
                                  mine, all, &job);
  for (int q = 0; rc == REDCOLL_OK && q < t->size; q++)
    if (redcoll__tcp_parse_addr(all[q], strlen(all[q]), -1, &t->peers[q].addr, NULL) != REDCOLL_OK) {
      redcoll__log(0, "tcp rank %d: PMIx gave rank %d the address '%s'", t->rank, q, all[q]);
      rc = REDCOLL_EPROTO;
    }
  for (int q = 0; q < t->size; q++) free(all[q]);
  free(all);
  if (rc == REDCOLL_OK) rc = check_loopback(t);
  if (rc != REDCOLL_OK) return rc;
  t->job = cfg->job_id != 0 ? cfg->job_id : job;
  t->number = next_number(t->job, t->rank, t->size);
  redcoll__log(2, "tcp rank %d of %d listens on %s (addresses from PMIx)", t->rank, t->size, mine);
  return REDCOLL_OK;
}
#endif

int redcoll__tcp_bootstrap(redcoll__tcp *t, const redcoll_tcp_config *cfg) {
  int has_hosts = cfg->hosts != NULL && *cfg->hosts != '\0';
  int has_master = cfg->master != NULL && *cfg->master != '\0';
  if (has_hosts && has_master) {
    redcoll__log(0, "tcp rank %d: set either REDCOLL_HOSTS or REDCOLL_MASTER, not both", t->rank);
    return REDCOLL_EINVAL;
  }
  if (has_hosts) return boot_hosts(t, cfg);
  if (t->size == 1) return REDCOLL_OK;
#ifdef REDCOLL_HAVE_PMIX
  if (!has_master && redcoll__tcp_pmix_present()) return boot_pmix(t, cfg);
#endif
  if (!has_master) {
    redcoll__log(0, "tcp rank %d: neither REDCOLL_HOSTS nor REDCOLL_MASTER is set", t->rank);
    return REDCOLL_EINVAL;
  }
  return boot_master(t, cfg);
}
