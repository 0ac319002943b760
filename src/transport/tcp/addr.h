/* Addresses of the TCP transport (addr.c). */
#ifndef REDCOLL_TCP_ADDR_H
#define REDCOLL_TCP_ADDR_H

#include <stddef.h>
#include <sys/socket.h>

typedef struct sockaddr_storage redcoll__tcp_addr;

/* Parses "host:port", "[v6]:port", "host", ":port" (n bytes of s).
 * default_port < 0 makes the port mandatory.  *has_host is 0 for ":port".
 * Host names are resolved.  REDCOLL_EINVAL if malformed or unresolvable. */
int redcoll__tcp_parse_addr(const char *s, size_t n, int default_port, redcoll__tcp_addr *out,
                            int *has_host);
/* "1.2.3.4:5" or "[::1]:5". */
void redcoll__tcp_addr_str(const redcoll__tcp_addr *a, char *buf, size_t len);
int redcoll__tcp_addr_port(const redcoll__tcp_addr *a);
void redcoll__tcp_addr_set_port(redcoll__tcp_addr *a, int port);
int redcoll__tcp_addr_loopback(const redcoll__tcp_addr *a);
int redcoll__tcp_addr_wildcard(const redcoll__tcp_addr *a);
int redcoll__tcp_addr_equal(const redcoll__tcp_addr *a, const redcoll__tcp_addr *b);
/* 1 if the connected socket fd is connected to itself: TCP's simultaneous
 * open does that when a connect to a port of this host where nobody
 * listens is given that very port as its local one (the rendezvous port of
 * a job whose rank 0 has not listened yet is from the same range).  Such a
 * socket would keep the port from rank 0 and read its own HELLO. */
int redcoll__tcp_fd_self_connected(int fd);
/* The same address apart from the port, or both loopback. */
int redcoll__tcp_addr_same_host(const redcoll__tcp_addr *a, const redcoll__tcp_addr *b);
void redcoll__tcp_addr_encode(unsigned char *out, const redcoll__tcp_addr *a);
int redcoll__tcp_addr_decode(const unsigned char *in, redcoll__tcp_addr *a);
/* The first address of family `family` of an interface that REDCOLL_IFNAME-
 * style spec selects.  REDCOLL_EINVAL (message in why) if none. */
int redcoll__tcp_pick_interface(const char *spec, int family, redcoll__tcp_addr *out, char *why,
                                size_t whylen);

#endif /* REDCOLL_TCP_ADDR_H */
