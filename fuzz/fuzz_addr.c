/*
 * libFuzzer target: the address and host-list parsers of the TCP bootstrap
 * (what REDCOLL_HOSTS, REDCOLL_MASTER and REDCOLL_LISTEN go through).  The
 * input is a host list; every entry is parsed with and without a default
 * port.  An address that parses must print to a string that parses back
 * to the same address, and (with a host and a port, as every address in
 * the rendezvous table has) encode to the rendezvous format and decode
 * back to it.  Name lookups are not the parser's and would be slow: this
 * target's getaddrinfo knows no names.  Built and run by scripts/fuzz.sh.
 */
#include <netdb.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "transport/tcp/tcp_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* Every name is unknown (numeric addresses never get here). */
int getaddrinfo(const char *node, const char *service, const struct addrinfo *hints,
                struct addrinfo **res) {
  (void)node, (void)service, (void)hints;
  *res = NULL;
  return EAI_NONAME;
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc, (void)argv;
  setenv("REDCOLL_LOG_LEVEL", "none", 1); /* unknown names are logged */
  return 0;
}

static void check_entry(const char *e, size_t n, int default_port) {
  redcoll__tcp_addr a, b;
  int has_host = -1;
  if (redcoll__tcp_parse_addr(e, n, default_port, &a, &has_host) != REDCOLL_OK) return;
  if (has_host != 0 && has_host != 1) abort();
  char s[128];
  redcoll__tcp_addr_str(&a, s, sizeof s);
  if (redcoll__tcp_parse_addr(s, strlen(s), -1, &b, NULL) != REDCOLL_OK) abort();
  if (!redcoll__tcp_addr_equal(&a, &b)) abort();
  int port = redcoll__tcp_addr_port(&a);
  if (port < 0 || port > 65535) abort();
  if (port == 0 || !has_host) return; /* the rendezvous carries listening addresses only */
  unsigned char enc[REDCOLL__TCP_ADDR_WIRE];
  redcoll__tcp_addr_encode(enc, &a);
  if (redcoll__tcp_addr_decode(enc, &b) != REDCOLL_OK || !redcoll__tcp_addr_equal(&a, &b)) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 4096) return 0;
  char *s = malloc(size + 1);
  if (s == NULL) return 0;
  memcpy(s, data, size);
  s[size] = '\0';
  const char *p = s;
  size_t n;
  for (const char *e; (e = redcoll__tcp_next_entry(&p, &n)) != NULL;) {
    if (e < s || e + n > s + size || n == 0) abort();
    check_entry(e, n, -1);
    check_entry(e, n, 5000);
  }
  (void)redcoll__tcp_hosts_digest(s);
  free(s);
  return 0;
}
