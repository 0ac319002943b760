/* Bootstrap of the TCP transport: configuration from the environment,
 * addresses and interfaces, the listening socket, and the rendezvous through
 * which rank 0 collects and hands out every rank's listening address.
 *
 * The rendezvous runs once, before the communicator exists, over plain
 * non-blocking sockets and poll() with one deadline (the timeout); it moves
 * a few hundred bytes per rank.  Its frames use the same header as the data
 * connections and sizes are checked against the size this rank was given,
 * never taken from the wire. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tcp_int.h"

/* ---- addresses -------------------------------------------------------------- */

int redcoll__tcp_parse_addr(const char *s, size_t n, int default_port, redcoll__tcp_addr *out,
                            int *has_host) {
  char host[256];
  const char *port = NULL;
  size_t hn;
  memset(out, 0, sizeof *out);
  if (has_host != NULL) *has_host = 0;
  if (n == 0) return REDCOLL_EINVAL;
  if (s[0] == '[') {
    const char *end = memchr(s, ']', n);
    if (end == NULL) return REDCOLL_EINVAL;
    hn = (size_t)(end - s) - 1;
    if (hn == 0 || hn >= sizeof host) return REDCOLL_EINVAL;
    memcpy(host, s + 1, hn);
    host[hn] = '\0';
    size_t rest = n - (size_t)(end - s) - 1;
    if (rest > 0) {
      if (end[1] != ':') return REDCOLL_EINVAL;
      port = end + 2;
    }
  } else {
    const char *colon = NULL;
    int colons = 0;
    for (size_t i = 0; i < n; i++)
      if (s[i] == ':') {
        colon = s + i;
        colons++;
      }
    /* A bare IPv6 literal has several colons and no port. */
    if (colons == 1) {
      hn = (size_t)(colon - s);
      port = colon + 1;
    } else {
      hn = n;
    }
    if (hn >= sizeof host) return REDCOLL_EINVAL;
    memcpy(host, s, hn);
    host[hn] = '\0';
  }
  long pv = default_port;
  if (port != NULL) {
    size_t pn = n - (size_t)(port - s);
    if (pn == 0 || pn > 5) return REDCOLL_EINVAL;
    pv = 0;
    for (size_t i = 0; i < pn; i++) {
      if (port[i] < '0' || port[i] > '9') return REDCOLL_EINVAL;
      pv = pv * 10 + (port[i] - '0');
    }
    if (pv > 65535) return REDCOLL_EINVAL;
  }
  if (pv < 0) return REDCOLL_EINVAL;
  if (host[0] == '\0') {
    /* ":port": the caller supplies the host. */
    struct sockaddr_in *a4 = (struct sockaddr_in *)out;
    a4->sin_family = AF_INET;
    a4->sin_port = htons((uint16_t)pv);
    return REDCOLL_OK;
  }
  if (has_host != NULL) *has_host = 1;
  struct sockaddr_in *a4 = (struct sockaddr_in *)out;
  struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)out;
  if (inet_pton(AF_INET, host, &a4->sin_addr) == 1) {
    a4->sin_family = AF_INET;
    a4->sin_port = htons((uint16_t)pv);
    return REDCOLL_OK;
  }
  if (inet_pton(AF_INET6, host, &a6->sin6_addr) == 1) {
    a6->sin6_family = AF_INET6;
    a6->sin6_port = htons((uint16_t)pv);
    return REDCOLL_OK;
  }
  struct addrinfo hints, *res = NULL;
  memset(&hints, 0, sizeof hints);
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  if (getaddrinfo(host, NULL, &hints, &res) != 0 || res == NULL) {
    redcoll__log(0, "tcp: cannot resolve host name '%s'", host);
    return REDCOLL_EINVAL;
  }
  int rc = REDCOLL_EINVAL;
  for (struct addrinfo *ai = res; ai != NULL; ai = ai->ai_next) {
    if ((ai->ai_family == AF_INET || ai->ai_family == AF_INET6) &&
        ai->ai_addrlen <= sizeof *out) {
      memcpy(out, ai->ai_addr, ai->ai_addrlen);
      redcoll__tcp_addr_set_port(out, (int)pv);
      rc = REDCOLL_OK;
      break;
    }
  }
  freeaddrinfo(res);
  return rc;
}

void redcoll__tcp_addr_str(const redcoll__tcp_addr *a, char *buf, size_t len) {
  char ip[INET6_ADDRSTRLEN];
  if (len == 0) return;
  if (a->ss_family == AF_INET) {
    const struct sockaddr_in *a4 = (const struct sockaddr_in *)a;
    inet_ntop(AF_INET, &a4->sin_addr, ip, sizeof ip);
    snprintf(buf, len, "%s:%d", ip, ntohs(a4->sin_port));
  } else if (a->ss_family == AF_INET6) {
    const struct sockaddr_in6 *a6 = (const struct sockaddr_in6 *)a;
    inet_ntop(AF_INET6, &a6->sin6_addr, ip, sizeof ip);
    snprintf(buf, len, "[%s]:%d", ip, ntohs(a6->sin6_port));
  } else {
    snprintf(buf, len, "(no address)");
  }
}

int redcoll__tcp_addr_port(const redcoll__tcp_addr *a) {
  if (a->ss_family == AF_INET) return ntohs(((const struct sockaddr_in *)a)->sin_port);
  if (a->ss_family == AF_INET6) return ntohs(((const struct sockaddr_in6 *)a)->sin6_port);
  return 0;
}

void redcoll__tcp_addr_set_port(redcoll__tcp_addr *a, int port) {
  if (a->ss_family == AF_INET) ((struct sockaddr_in *)a)->sin_port = htons((uint16_t)port);
  else if (a->ss_family == AF_INET6) ((struct sockaddr_in6 *)a)->sin6_port = htons((uint16_t)port);
}

int redcoll__tcp_addr_loopback(const redcoll__tcp_addr *a) {
  if (a->ss_family == AF_INET)
    return (ntohl(((const struct sockaddr_in *)a)->sin_addr.s_addr) >> 24) == 127;
  if (a->ss_family == AF_INET6) {
    const struct in6_addr *x = &((const struct sockaddr_in6 *)a)->sin6_addr;
    if (IN6_IS_ADDR_LOOPBACK(x)) return 1;
    return IN6_IS_ADDR_V4MAPPED(x) && x->s6_addr[12] == 127;
  }
  return 0;
}

int redcoll__tcp_addr_wildcard(const redcoll__tcp_addr *a) {
  if (a->ss_family == AF_INET)
    return ((const struct sockaddr_in *)a)->sin_addr.s_addr == htonl(INADDR_ANY);
  if (a->ss_family == AF_INET6)
    return IN6_IS_ADDR_UNSPECIFIED(&((const struct sockaddr_in6 *)a)->sin6_addr);
  return 0;
}

/* Family and address alike (the port aside). */
static int addr_equal_ip(const redcoll__tcp_addr *a, const redcoll__tcp_addr *b) {
  if (a->ss_family != b->ss_family) return 0;
  if (a->ss_family == AF_INET)
    return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
           ((const struct sockaddr_in *)b)->sin_addr.s_addr;
  if (a->ss_family == AF_INET6)
    return memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
                  &((const struct sockaddr_in6 *)b)->sin6_addr, 16) == 0;
  return 0;
}

int redcoll__tcp_addr_same_host(const redcoll__tcp_addr *a, const redcoll__tcp_addr *b) {
  if (redcoll__tcp_addr_loopback(a) && redcoll__tcp_addr_loopback(b)) return 1;
  return addr_equal_ip(a, b);
}

int redcoll__tcp_addr_equal(const redcoll__tcp_addr *a, const redcoll__tcp_addr *b) {
  return redcoll__tcp_addr_port(a) == redcoll__tcp_addr_port(b) && addr_equal_ip(a, b);
}

void redcoll__tcp_addr_encode(unsigned char *out, const redcoll__tcp_addr *a) {
  memset(out, 0, REDCOLL__TCP_ADDR_WIRE);
  int port = redcoll__tcp_addr_port(a);
  out[2] = (unsigned char)port;
  out[3] = (unsigned char)(port >> 8);
  if (a->ss_family == AF_INET) {
    out[0] = 4;
    memcpy(out + 4, &((const struct sockaddr_in *)a)->sin_addr, 4);
  } else if (a->ss_family == AF_INET6) {
    out[0] = 6;
    memcpy(out + 4, &((const struct sockaddr_in6 *)a)->sin6_addr, 16);
  }
}

int redcoll__tcp_addr_decode(const unsigned char *in, redcoll__tcp_addr *a) {
  memset(a, 0, sizeof *a);
  int port = in[2] | in[3] << 8;
  if (in[1] != 0 || port == 0) return REDCOLL_EPROTO;
  if (in[0] == 4) {
    for (int i = 8; i < REDCOLL__TCP_ADDR_WIRE; i++)
      if (in[i] != 0) return REDCOLL_EPROTO;
    struct sockaddr_in *a4 = (struct sockaddr_in *)a;
    a4->sin_family = AF_INET;
    memcpy(&a4->sin_addr, in + 4, 4);
  } else if (in[0] == 6) {
    struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)a;
    a6->sin6_family = AF_INET6;
    memcpy(&a6->sin6_addr, in + 4, 16);
  } else {
    return REDCOLL_EPROTO;
  }
  redcoll__tcp_addr_set_port(a, port);
  return REDCOLL_OK;
}

/* Does the comma-separated spec select interface name?  "a,b" selects a and
 * b; "^a,^b" selects all but a and b. */
static int iface_selected(const char *spec, const char *name) {
  int any_include = 0, included = 0;
  const char *p = spec;
  while (*p != '\0') {
    while (*p == ',' || *p == ' ') p++;
    if (*p == '\0') break;
    const char *e = p;
    while (*e != '\0' && *e != ',' && *e != ' ') e++;
    int exclude = *p == '^';
    const char *w = p + exclude;
    size_t wn = (size_t)(e - w);
    int match = strlen(name) == wn && strncmp(name, w, wn) == 0;
    if (exclude) {
      if (match) return 0;
    } else {
      any_include = 1;
      if (match) included = 1;
    }
    p = e;
  }
  return any_include ? included : 1;
}

int redcoll__tcp_pick_interface(const char *spec, int family, redcoll__tcp_addr *out, char *why,
                                size_t whylen) {
  uv_interface_address_t *ifs = NULL;
  int n = 0;
  int r = uv_interface_addresses(&ifs, &n);
  if (r != 0) {
    snprintf(why, whylen, "cannot list network interfaces: %s", uv_strerror(r));
    return REDCOLL_EINVAL;
  }
  int rc = REDCOLL_EINVAL;
  /* Two passes: a non-loopback address first, loopback only if named. */
  for (int pass = 0; pass < 2 && rc != REDCOLL_OK; pass++) {
    for (int i = 0; i < n; i++) {
      const uv_interface_address_t *f = &ifs[i];
      int fam = f->address.address4.sin_family;
      if (fam != family || !iface_selected(spec, f->name)) continue;
      if ((pass == 0) != !f->is_internal) continue;
      if (fam == AF_INET6 && IN6_IS_ADDR_LINKLOCAL(&f->address.address6.sin6_addr)) continue;
      memset(out, 0, sizeof *out);
      if (fam == AF_INET) memcpy(out, &f->address.address4, sizeof f->address.address4);
      else memcpy(out, &f->address.address6, sizeof f->address.address6);
      rc = REDCOLL_OK;
      break;
    }
  }
  if (rc != REDCOLL_OK)
    snprintf(why, whylen, "no %s interface matches REDCOLL_IFNAME=%s",
             family == AF_INET6 ? "IPv6" : "IPv4", spec);
  uv_free_interface_addresses(ifs, n);
  return rc;
}

/* ---- configuration ----------------------------------------------------------- */

/* The job id from digest h and an optional second part; never 0. */
static uint64_t job_digest(uint64_t h, const char *more) {
  if (more != NULL) {
    h = redcoll__tcp_fnv1a(h, ".", 1);
    h = redcoll__tcp_fnv1a(h, more, strlen(more));
  }
  return h != 0 ? h : 1;
}

REDCOLL_API void redcoll_tcp_config_init(redcoll_tcp_config *cfg) {
  if (cfg == NULL) return;
  memset(cfg, 0, sizeof *cfg);
  cfg->rank = -1;
  cfg->size = -1;
}

static int env_int(const char *name, long max, long *out) {
  const char *s = getenv(name);
  if (s == NULL || *s == '\0') return 0;
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno != 0 || *end != '\0' || v < 0 || v > max) {
    redcoll__log(0, "tcp: %s=%s is not a number in [0, %ld]", name, s, max);
    return -1;
  }
  *out = v;
  return 1;
}

/* torchrun's rendezvous host and port (MASTER_ADDR, MASTER_PORT): redcoll's
 * runs one port above, so that PyTorch's own store keeps MASTER_PORT.
 * Returns the string for cfg->master (kept per thread), or NULL. */
static const char *torchrun_master(void) {
  static __thread char buf[300];
  const char *a = getenv("MASTER_ADDR");
  long port;
  if (a == NULL || *a == '\0' || env_int("MASTER_PORT", 65534, &port) <= 0) return NULL;
  snprintf(buf, sizeof buf, strchr(a, ':') != NULL ? "[%s]:%ld" : "%s:%ld", a, port + 1);
  return buf;
}

REDCOLL_API int redcoll_tcp_config_from_env(redcoll_tcp_config *cfg) {
  if (cfg == NULL) return REDCOLL_EINVAL;
  redcoll_tcp_config_init(cfg);
  static const char *const pairs[][2] = {{"REDCOLL_RANK", "REDCOLL_SIZE"},
                                         {"SLURM_PROCID", "SLURM_NTASKS"},
                                         {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
                                         {"PMI_RANK", "PMI_SIZE"},
                                         {"RANK", "WORLD_SIZE"}};
  enum { FROM_TORCHRUN = 4 };
  size_t from = 0; /* the pair rank and size came from */
  for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
    long r, s;
    int hr = env_int(pairs[i][0], REDCOLL_TCP_MAX_SIZE - 1, &r),
        hs = env_int(pairs[i][1], REDCOLL_TCP_MAX_SIZE, &s);
    if (hr < 0 || hs < 0) return REDCOLL_EINVAL;
    if (hr && hs) {
      if (s < 1 || r >= s) {
        redcoll__log(0, "tcp: %s=%ld is not below %s=%ld", pairs[i][0], r, pairs[i][1], s);
        return REDCOLL_EINVAL;
      }
      cfg->rank = (int)r;
      cfg->size = (int)s;
      from = i;
      break;
    }
    if (hr || hs) {
      redcoll__log(0, "tcp: %s and %s must be set together", pairs[i][0], pairs[i][1]);
      return REDCOLL_EINVAL;
    }
  }
  if (cfg->rank < 0) {
    redcoll__log(0, "tcp: no rank in the environment (REDCOLL_RANK and REDCOLL_SIZE, or a "
                    "launcher's SLURM_PROCID, OMPI_COMM_WORLD_RANK, PMI_RANK, or torchrun's "
                    "RANK and WORLD_SIZE)");
    return REDCOLL_EINVAL;
  }
  const char *s;
  if ((s = getenv("REDCOLL_HOSTS")) != NULL && *s != '\0') cfg->hosts = s;
  if ((s = getenv("REDCOLL_MASTER")) != NULL && *s != '\0') cfg->master = s;
  else if (from == FROM_TORCHRUN && cfg->hosts == NULL) cfg->master = torchrun_master();
  if ((s = getenv("REDCOLL_LISTEN")) != NULL && *s != '\0') cfg->listen_host = s;
  if ((s = getenv("REDCOLL_IFNAME")) != NULL && *s != '\0') cfg->ifname = s;
  if ((s = getenv("REDCOLL_SECRET")) != NULL && *s != '\0') cfg->secret = s;
  /* The job id: REDCOLL_JOB_ID, else the job (and step) of the launcher
   * that gave the rank, so that every rank takes it from the same place
   * (under mpirun in a Slurm allocation the ranks see different Slurm
   * steps); hashed, so any string names a job. */
  static const char *const jobs[][2] = {{NULL, NULL},
                                        {"SLURM_JOB_ID", "SLURM_STEP_ID"},
                                        {"OMPI_MCA_ess_base_jobid", NULL},
                                        {NULL, NULL},
                                        {"TORCHELASTIC_RUN_ID", "TORCHELASTIC_RESTART_COUNT"}};
  const char *jv = getenv("REDCOLL_JOB_ID"), *more = NULL;
  if ((jv == NULL || *jv == '\0') && jobs[from][0] != NULL) {
    jv = getenv(jobs[from][0]);
    if (jobs[from][1] != NULL) more = getenv(jobs[from][1]);
  }
  if (jv != NULL && *jv != '\0')
    cfg->job_id = job_digest(redcoll__tcp_fnv1a(REDCOLL__TCP_FNV_INIT, jv, strlen(jv)), more);
  long ms;
  int h = env_int("REDCOLL_TIMEOUT_MS", 0x7fffffffL, &ms);
  if (h < 0) return REDCOLL_EINVAL;
  if (h > 0) cfg->timeout_ms = (uint64_t)ms;
  return REDCOLL_OK;
}

/* ---- listening ----------------------------------------------------------------- */

/* Binds and listens on addr (falling back to the wildcard address of its
 * family when allow_wildcard and addr is not local); t->self gets the bound
 * address with its port. */
static int listen_on(redcoll__tcp *t, const redcoll__tcp_addr *addr, int allow_wildcard) {
  char a[64];
  redcoll__tcp_addr_str(addr, a, sizeof a);
  int r = uv_tcp_init(&t->loop, &t->listener);
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

/* The next entry of a host list (commas or white space between entries):
 * its start, with its length in *n, and *s moved past it; NULL at the end. */
static const char *next_entry(const char **s, size_t *n) {
  const char *b = *s;
  while (*b == ',' || *b == ' ' || *b == '\t' || *b == '\n') b++;
  if (*b == '\0') return NULL;
  const char *e = b;
  while (*e != '\0' && *e != ',' && *e != ' ' && *e != '\t' && *e != '\n') e++;
  *n = (size_t)(e - b);
  *s = e;
  return b;
}

/* The job id of a host list: a digest of its entries as written (not of
 * the addresses they resolve to, which may differ from host to host), with
 * any separators between them counting as one. */
uint64_t redcoll__tcp_hosts_digest(const char *s) {
  uint64_t h = redcoll__tcp_fnv1a(REDCOLL__TCP_FNV_INIT, "hosts", 5);
  size_t n;
  for (const char *e; (e = next_entry(&s, &n)) != NULL;) {
    h = redcoll__tcp_fnv1a(h, e, n);
    h = redcoll__tcp_fnv1a(h, ",", 1);
  }
  return job_digest(h, NULL);
}

static int boot_hosts(redcoll__tcp *t, const redcoll_tcp_config *cfg) {
  const char *s = cfg->hosts, *e;
  size_t len;
  int n = 0;
  while ((e = next_entry(&s, &len)) != NULL) {
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

/* Connects to addr, retrying with backoff while nobody listens there. */
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

/* Rank 0: collect every rank's address, then send everyone the table and
 * the job id (cfg_job, the configured one, or a random one). */
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
  int64_t deadline = now_ms() + (int64_t)t->timeout_ms;
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

int redcoll__tcp_bootstrap(redcoll__tcp *t, const redcoll_tcp_config *cfg) {
  int has_hosts = cfg->hosts != NULL && *cfg->hosts != '\0';
  int has_master = cfg->master != NULL && *cfg->master != '\0';
  if (has_hosts && has_master) {
    redcoll__log(0, "tcp rank %d: set either REDCOLL_HOSTS or REDCOLL_MASTER, not both", t->rank);
    return REDCOLL_EINVAL;
  }
  if (has_hosts) return boot_hosts(t, cfg);
  if (t->size == 1) return REDCOLL_OK;
  if (!has_master) {
    redcoll__log(0, "tcp rank %d: neither REDCOLL_HOSTS nor REDCOLL_MASTER is set", t->rank);
    return REDCOLL_EINVAL;
  }
  return boot_master(t, cfg);
}
