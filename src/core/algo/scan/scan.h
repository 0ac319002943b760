/*
 * What the prefix-reduction algorithms (scan, exscan, exscan_total) share:
 * the rank arithmetic of each algorithm as pure functions with no I/O,
 * which the tests call.  The algorithms are scan_linear.c, hillis_steele.c
 * and transpose.c; their costs are in docs/algorithms/scan.md.
 */
#ifndef REDCOLL_SCAN_H
#define REDCOLL_SCAN_H

#include "internal.h"

/* Hillis-Steele, the round at distance d (1, 2, 4, ... < p): rank r sends
 * its window to *dst and receives one from *src; -1 where that rank does
 * not exist. */
static inline void redcoll__hs_peers(int p, int r, int d, int *dst, int *src) {
  *dst = r + d < p ? r + d : -1;
  *src = r - d >= 0 ? r - d : -1;
}

/* Whether rank r still needs its inclusive window after the round at
 * distance d: it sends it at distance 2d, or (keep_last) it is the last
 * rank, whose window becomes the total. */
static inline int redcoll__hs_window_needed(int p, int r, int d, int keep_last) {
  return (long)r + 2L * d < p || (keep_last && r == p - 1);
}

#endif /* REDCOLL_SCAN_H */
