/* One TCP message of more than 4 GiB: rank 0 broadcasts 4.5 GiB to rank 1
 * (linear bcast on 2 ranks: a single message), and rank 1 checks every word.
 * Not part of `meson test`: it needs 9 GiB of memory and minutes of time.
 * Run it with scripts/huge_message.sh. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <redcoll/redcoll.h>
#include <redcoll/tcp.h>
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec / 1e9; }
static uint64_t word(size_t i) { uint64_t x = i * 0x9e3779b97f4a7c15ULL; return x ^ (x >> 29); }
int main(void) {
  redcoll_comm *c;
  int rc = redcoll_tcp_comm_create_from_env(&c);
  if (rc) { fprintf(stderr, "create: %s\n", redcoll_strerror(rc)); return 1; }
  int r = redcoll_comm_rank(c);
  size_t n = ((size_t)9 << 29) / 8; /* 4.5 GiB of uint64 */
  uint64_t *b = malloc(n * 8);
  if (!b) return 2;
  for (size_t i = 0; i < n; i++) b[i] = r == 0 ? word(i) : 0;
  redcoll_comm_set_algorithm(c, REDCOLL_COLL_BCAST, REDCOLL_ALGO_LINEAR);
  double t0 = now();
  rc = redcoll_bcast(c, b, n, REDCOLL_UINT64, 0);
  double t = now() - t0;
  size_t bad = 0;
  for (size_t i = 0; i < n; i++) bad += b[i] != word(i);
  printf("rank %d: bcast of %zu bytes: %s, %.1f s, %zu wrong words\n", r, n * 8, redcoll_strerror(rc), t, bad);
  redcoll_comm_destroy(c);
  free(b);
  return rc || bad;
}
