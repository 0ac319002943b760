/*
 * The rank arithmetic of the alltoall algorithms (bruck.c, pairwise.c) as
 * pure functions with no I/O, which the tests call.  Pairwise exchange's
 * partners are redcoll__pairwise_peers (internal.h), shared with the scan
 * transposition.
 */
#ifndef REDCOLL_ALLTOALL_H
#define REDCOLL_ALLTOALL_H

#include "internal.h"

/* Bruck: after the local rotation, slot i of rank r holds the block bound
 * for rank (r + i) mod p; in step k the slots with bit k set move to rank
 * r + 2^k.  At the end slot i holds the block that came from rank r - i, so
 * the block from rank j is in slot (r - j) mod p (an involution: the final
 * rotation swaps pairs). */
static inline int redcoll__bruck_slot_from(int p, int r, int j) { return redcoll__mod(r - j, p); }

/* Slots of p that move in step k: those i < p with bit k set. */
static inline int redcoll__bruck_moving(int p, int k) {
  int half = 1 << k, period = half << 1;
  int rest = p % period - half;
  return p / period * half + (rest > 0 ? rest : 0);
}

/* The most slots any step moves. */
static inline int redcoll__bruck_max_moving(int p) {
  int mx = 0;
  for (int k = 0; (1 << k) < p; k++)
    if (redcoll__bruck_moving(p, k) > mx) mx = redcoll__bruck_moving(p, k);
  return mx;
}

#endif /* REDCOLL_ALLTOALL_H */
