/*
 * Schedules of Rabenseifner's reduction family (binary_tree,
 * recursive_doubling, halving_doubling, binary_blocks, ring): pure rank and
 * block arithmetic, no I/O, shared by the family files and reachable from
 * unit tests.
 *
 * Terms (Rabenseifner 2004, section 2.5): p = pp + r with pp the largest power
 * of two <= p.  The first 2r ranks form r pairs (2i, 2i+1); one rank of each
 * pair is "removed" after the first step and the other survives with new
 * rank i; ranks 2r..p-1 get new ranks r..pp-1.  The survivor is the even
 * rank, except in the one pair whose odd rank is the root of a reduce (the
 * paper's role swap).  New ranks are increasing in the old ones, so the
 * partial result a new rank holds always covers a contiguous run of ranks.
 *
 * Vector halving: a range [lo, hi) of elements is split at
 * lo + ceil((hi - lo) / 2); in the exchange with distance d = 2^t, the rank
 * whose bit t is 0 keeps the lower part.  After t halvings the range of a
 * rank is a function of the low t bits of its (new or block-local) rank, and
 * all ranges of one depth differ in length by at most one element.
 */
#ifndef REDCOLL_RABENSEIFNER_H
#define REDCOLL_RABENSEIFNER_H

#include <stddef.h>

#include "internal.h"

/* The split point of [lo, hi): the lower part gets the odd element. */
static inline size_t redcoll__rab_mid(size_t lo, size_t hi) { return lo + (hi - lo + 1) / 2; }

/* The range of rank j (new rank, or rank inside a block) after `depth`
 * halvings of [0, n), the first one by bit 0 of j. */
static inline void redcoll__rab_range(size_t n, int depth, int j, size_t *lo, size_t *hi) {
  size_t a = 0, b = n;
  for (int t = 0; t < depth; t++) {
    size_t m = redcoll__rab_mid(a, b);
    if ((j >> t) & 1)
      a = m;
    else
      b = m;
  }
  *lo = a;
  *hi = b;
}

/* ---- order-keeping binomial tree (binary_tree reduce) --------------------- */

/* The reduction tree toward any root in ceil(lg p) rounds that keeps rank
 * order.  With t rounds left, an interval [lo, hi) of at most 2^t ranks and
 * its root x is split at m = lo + 2^(t-1) (if it has more than 2^(t-1)
 * ranks): the part without x is reduced in t - 1 rounds to its sub-root y
 * (its lowest rank), which sends it to x in round t.  Both parts are
 * contiguous, so x puts the incoming partial on the left iff y < x.  For
 * root 0 this is the classical binomial tree (y = x + 2^(t-1)).  Returns the
 * number of ranks `rank` receives from; from[] gets them in the order of
 * receipt (round 1 first) and *parent the rank it then sends to (-1 for the
 * root). */
static inline int redcoll__rab_tree(int p, int root, int rank, int from[32], int *parent) {
  int lo = 0, hi = p, x = root, t = 0, nr = 0, down[32];
  while ((1 << t) < p) t++;
  *parent = -1;
  while (hi - lo > 1) {
    int half = 1 << --t;
    if (hi - lo <= half) continue;
    int m = lo + half, xlow = x < m;
    int olo = xlow ? m : lo, ohi = xlow ? hi : m, y = olo;
    if (rank >= olo && rank < ohi) {
      if (rank == y) *parent = x;
      lo = olo;
      hi = ohi;
      x = y;
    } else {
      if (rank == x) down[nr++] = y;
      if (xlow)
        hi = m;
      else
        lo = m;
    }
  }
  for (int i = 0; i < nr; i++) from[i] = down[nr - 1 - i];
  return nr;
}

/* ---- removing ranks down to a power of two (recursive_doubling,
 * halving_doubling) -------------------------------------------------------- */

/* The pair whose odd rank survives: (root - 1) / 2 when root is an odd rank
 * below 2r (reduce), else -1.  Pass root = -1 for allreduce. */
static inline int redcoll__rab_swap_pair(int p, int root) {
  int pp = 1;
  while (pp * 2 <= p) pp *= 2;
  int r = p - pp;
  return (root >= 0 && root < 2 * r && (root & 1)) ? root / 2 : -1;
}

/* The new rank of rank, or -1 if it is removed after the first step. */
static inline int redcoll__rab_newrank(int p, int rank, int swap_pair) {
  int pp = 1;
  while (pp * 2 <= p) pp *= 2;
  int r = p - pp;
  if (rank >= 2 * r) return rank - r;
  int pair = rank / 2, odd = rank & 1;
  int survivor_odd = pair == swap_pair;
  return odd == survivor_odd ? pair : -1;
}

/* The old rank of new rank j. */
static inline int redcoll__rab_oldrank(int p, int j, int swap_pair) {
  int pp = 1;
  while (pp * 2 <= p) pp *= 2;
  int r = p - pp;
  if (j >= r) return j + r;
  return 2 * j + (j == swap_pair ? 1 : 0);
}

/* The partner of rank in the first step (rank ^ 1 below 2r), else -1. */
static inline int redcoll__rab_first_partner(int p, int rank) {
  int pp = 1;
  while (pp * 2 <= p) pp *= 2;
  return rank < 2 * (p - pp) ? (rank ^ 1) : -1;
}

/* ---- binomial gather of the halving ranges (halving_doubling reduce) ----- */

/* In the gather step with distance d (pp/2, pp/4, ..., 1) toward new rank
 * jr: 1 if new rank j receives from j ^ d, 0 if it sends to j ^ d, -1 if it
 * has already sent its data in an earlier step. */
static inline int redcoll__rab_gather_role(int j, int jr, int d) {
  int above = ~(2 * d - 1);
  if ((j & above) != (jr & above)) return -1;
  return (j & d) == (jr & d) ? 1 : 0;
}

/* ---- binary blocks ------------------------------------------------------- */

/* p as a sum of powers of two, the largest block on the lowest ranks:
 * block k has 2^e_k ranks starting at rank start_k, e_0 > e_1 > ...
 * Returns the number of blocks (at most 31); exp[] and start[] get them. */
static inline int redcoll__rab_blocks(int p, int exp[32], int start[32]) {
  int nb = 0, s = 0;
  for (int e = 30; e >= 0; e--) {
    if (p & (1 << e)) {
      exp[nb] = e;
      start[nb] = s;
      s += 1 << e;
      nb++;
    }
  }
  return nb;
}

/* The block of rank. */
static inline int redcoll__rab_block_of(int p, int rank) {
  int exp[32], start[32];
  int nb = redcoll__rab_blocks(p, exp, start);
  for (int k = nb - 1; k > 0; k--)
    if (rank >= start[k]) return k;
  return 0;
}

/* ---- ring ---------------------------------------------------------------- */

/* Elements [start, end) of chunk i of n elements split into p chunks, the
 * first n % p chunks one element longer. */
static inline void redcoll__rab_chunk(size_t n, int p, int i, size_t *lo, size_t *hi) {
  size_t q = n / (size_t)p, r = n % (size_t)p, u = (size_t)i;
  *lo = u * q + (u < r ? u : r);
  *hi = *lo + q + (u < r ? 1 : 0);
}

/* ---- step helpers shared by the family files (halving_doubling.c); these
 * communicate, unlike everything above ---------------------------------- */

/* One rank's working state: its working vector w (absolute element
 * offsets), where its current partial lives (cur: the input or w) and the
 * part of w that holds live data (empty while cur is the input). */
typedef struct redcoll__rab_state {
  const redcoll__call *call;
  char *w;
  const char *cur;
  size_t n, es;
  size_t live_lo, live_hi;
  int tmp_scratch; /* scratch buffer for incoming data when w has no room */
} redcoll__rab_state;

/* Room for need incoming elements outside the live part of w, else scratch
 * buffer tmp_scratch; NULL while cur is the input (receive straight into w)
 * or when memory is short. */
char *redcoll__rab_tmp(redcoll__rab_state *s, size_t need);

/* One halving exchange with peer over [lo, hi): keep the lower part if
 * keep_lower, send the other part of cur, receive the peer's copy of the
 * kept part and reduce it into w (this rank on the left iff i_am_left).
 * The live part of w becomes the kept part. */
int redcoll__rab_exchange(redcoll__rab_state *s, int peer, int keep_lower, int i_am_left,
                          size_t lo, size_t hi);

/* Receives [lo, hi) from src and reduces it into w with cur (this rank on
 * the left iff i_am_left); the live part of w becomes [lo, hi). */
int redcoll__rab_reduce_from(redcoll__rab_state *s, int src, size_t lo, size_t hi,
                             int i_am_left);

#endif /* REDCOLL_RABENSEIFNER_H */
