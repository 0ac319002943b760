/*
 * The binomial tree of gatherv and scatterv (binomial_v.c) as pure
 * functions of virtual ranks v = (rank - root) mod p, which the tests call.
 */
#ifndef REDCOLL_BINOMIAL_V_H
#define REDCOLL_BINOMIAL_V_H

/* The lowest set bit of v; for the root (v = 0) the smallest power of two
 * >= p, so that its subtree is everything. */
static inline int redcoll__binom_low(int p, int v) {
  if (v != 0) return v & -v;
  int m = 1;
  while (m < p) m <<= 1;
  return m;
}

/* Rank v's subtree: virtual ranks [v, redcoll__binom_end(p, v)). */
static inline int redcoll__binom_end(int p, int v) {
  long e = (long)v + redcoll__binom_low(p, v);
  return e < p ? (int)e : p;
}

/* Rank v's parent (v > 0). */
static inline int redcoll__binom_parent(int v) { return v - (v & -v); }

#endif /* REDCOLL_BINOMIAL_V_H */
