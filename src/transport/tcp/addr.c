/* Addresses of the TCP transport: parsing "host:port" (names resolved),
 * printing, comparing, the 20 bytes of an address in the rendezvous, and
 * the interface REDCOLL_IFNAME selects. */
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <sys/socket.h>
#include <uv.h>

#include "addr.h"
#include "base.h"
#include "wire.h"

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

int redcoll__tcp_fd_self_connected(int fd) {
  redcoll__tcp_addr la, ra;
  socklen_t ll = sizeof la, rl = sizeof ra;
  memset(&la, 0, sizeof la);
  memset(&ra, 0, sizeof ra);
  return getsockname(fd, (struct sockaddr *)&la, &ll) == 0 &&
         getpeername(fd, (struct sockaddr *)&ra, &rl) == 0 && redcoll__tcp_addr_equal(&la, &ra);
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
