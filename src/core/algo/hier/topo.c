/*
 * Hosts of a communicator: which of its ranks share a host, from the
 * transport's hosts array (redcoll_transport_info.hosts, indexed by
 * transport rank) and the communicator's map of ranks to transport ranks.
 * Pure functions: two_level.c builds its views from the result, and the
 * tests call redcoll__topo_build directly.
 *
 * Hosts are numbered in the order of their lowest rank, and the ranks of a
 * host are numbered 0, 1, ... (their local index) in rank order.  Example:
 * hosts of transport ranks {7, 7, 3, 7, 3} on a communicator without a map
 * give 2 hosts: host 0 = ranks {0, 1, 3} (local 0, 1, 2), host 1 = ranks
 * {2, 4} (local 0, 1); not contiguous (host 0's ranks are not consecutive),
 * min_local 2, max_local 3.
 */
#include <stdlib.h>

#include "internal.h"

void redcoll__topo_free(redcoll__topo *t) {
  free(t->host_of);
  free(t->local_of);
  free(t->start);
  free(t->members);
  memset(t, 0, sizeof *t);
}

int redcoll__topo_build(const uint32_t *hosts, const int *map, int p, int rank, redcoll__topo *t) {
  memset(t, 0, sizeof *t);
  t->host_of = malloc((size_t)p * sizeof *t->host_of);
  t->local_of = malloc((size_t)p * sizeof *t->local_of);
  t->start = malloc(((size_t)p + 1) * sizeof *t->start);
  t->members = malloc((size_t)p * sizeof *t->members);
  uint32_t *key = malloc((size_t)p * sizeof *key); /* the value of each host */
  if (t->host_of == NULL || t->local_of == NULL || t->start == NULL || t->members == NULL ||
      key == NULL) {
    free(key);
    redcoll__topo_free(t);
    return REDCOLL_ENOMEM;
  }
  /* Host indices in order of first appearance; quadratic only in the
   * number of distinct hosts met so far (p is at most a few thousand on a
   * communicator with hosts). */
  int nh = 0;
  for (int r = 0; r < p; r++) {
    if (hosts == NULL) {
      t->host_of[r] = nh++; /* every rank its own host */
      continue;
    }
    uint32_t v = hosts[map != NULL ? map[r] : r];
    int h = nh - 1;
    while (h >= 0 && key[h] != v) h--;
    if (h < 0) key[h = nh++] = v;
    t->host_of[r] = h;
  }
  free(key);
  t->hosts = nh;
  /* Counting sort by host, stable: each host's ranks stay in rank order. */
  for (int h = 0; h <= nh; h++) t->start[h] = 0;
  for (int r = 0; r < p; r++) t->start[t->host_of[r] + 1]++;
  for (int h = 0; h < nh; h++) t->start[h + 1] += t->start[h];
  t->contiguous = 1;
  t->min_local = p;
  t->max_local = 0;
  for (int h = 0; h < nh; h++) {
    int n = t->start[h + 1] - t->start[h];
    if (n < t->min_local) t->min_local = n;
    if (n > t->max_local) t->max_local = n;
  }
  int *next = malloc(((size_t)nh + 1) * sizeof *next);
  if (next == NULL) {
    redcoll__topo_free(t);
    return REDCOLL_ENOMEM;
  }
  memcpy(next, t->start, ((size_t)nh + 1) * sizeof *next);
  for (int r = 0; r < p; r++) {
    int h = t->host_of[r];
    t->local_of[r] = next[h] - t->start[h];
    t->members[next[h]++] = r;
    if (r > 0 && h != t->host_of[r - 1] && t->local_of[r] != 0) t->contiguous = 0;
  }
  free(next);
  t->my_host = t->host_of[rank];
  t->my_local = t->local_of[rank];
  return REDCOLL_OK;
}
