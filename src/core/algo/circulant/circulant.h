/*
 * Schedule arithmetic of the circulant-graph collectives (circulant.c):
 * skips, correction terms, the reduce tree's path heads and the block
 * enumeration of reduce-scatter.  Pure functions without I/O, so that unit
 * tests can reach them.
 *
 * Terms (Traeff, Hunold, Vardas, Funk, section III):
 *   q = ceil(log2 p) rounds.  skips[q] = p and skips[k] = ceil(skips[k+1]/2),
 *   so skips[0] = 1 and skips[1] = 2 for p > 1.
 *   eps_k = skips[k+1] & 1: the correction term of round k.
 *   d_k = skips[k] - eps_k = skips[k+1] - skips[k]: the edge length of round
 *   k.  Rank r sends to (r - d_k) mod p and receives from (r + d_k) mod p.
 *   d_0 + ... + d_{q-1} = p - 1, and d_{k+1} >= d_0 + ... + d_k.
 *
 * Slots.  Every subset A of the rounds {0..q-1} names one message of the
 * reduce tree rooted at (virtual) rank 0: rank sum(d_i, i in A) holds the
 * partial sum of slot A and sends it to rank sum(A) - d_min(A) in round
 * min(A), after it received, in each round j < min(A), slot A + {j} from rank
 * sum(A) + d_j.  The value of slot A includes the rank's own input iff
 * eps_min(A) == 0 (the "W" type, S_r plus V_r) and excludes it otherwise
 * (the "S" type).  Each rank 0 < v < p has exactly one slot with min >= 1
 * (its path head) or else a slot with min 0; an S-type rank has both and
 * sends its own input alone in round 0.  These facts are checked by
 * tests/test_circulant.c for every p up to 1024.
 */
#ifndef REDCOLL_CIRCULANT_H
#define REDCOLL_CIRCULANT_H

/* Room for skips[0..q] for any int p. */
#define REDCOLL__CIRC_MAXQ 32

/* Fills skips[0..q] for p >= 1 and returns q = ceil(log2 p) (0 for p = 1:
 * skips[0] = 1). */
int redcoll__circ_skips(int p, int skips[REDCOLL__CIRC_MAXQ + 1]);

/* eps_k of round k < q. */
static inline int redcoll__circ_eps(const int *skips, int k) { return skips[k + 1] & 1; }

/* d_k = skips[k] - eps_k, the edge length of round k < q. */
static inline int redcoll__circ_dist(const int *skips, int k) {
  return skips[k] - (skips[k + 1] & 1);
}

/* The path head of virtual rank v (0 <= v < p) of the reduce tree rooted at
 * 0: the round in which v sends its partial sum towards the root, i.e. the
 * largest k such that v is a sum of a subset of {d_k, ..., d_{q-1}}.  q for
 * v == 0 (the root never sends).  v receives in every round before it. */
int redcoll__circ_pathhead(int v, int q, const int *skips);

/* 1 if virtual rank v (0 < v < p) sends the S type (its partial sum without
 * its own input) at its path head, and then its own input alone to v - 1 in
 * round 0; 0 if it sends the W type (input included), and for v == 0. */
int redcoll__circ_sends_s(int v, int q, const int *skips);

/* The relative block offsets of reduce-scatter (Listing 5): fills
 * block[0 .. 2^q - 2] with the sums of the non-empty subsets A of
 * {d_0..d_{q-1}} in depth-first order, grouped by min(A): first the 2^(q-1)
 * subsets with min 0 (B^0, sent in round 0), then the 2^(q-2) with min 1
 * (B^1), and so on.  Rank r sends, in round k, the blocks r - block[j] for j
 * in B^k.  Returns 2^q - 1.  block must have room for 2^q - 1 ints. */
int redcoll__circ_relative_blocks(int q, const int *skips, int *block);

/* Start of segment B^k (k <= q) in the relative_blocks array: 2^q - 2^(q-k). */
static inline int redcoll__circ_seg_start(int q, int k) { return (1 << q) - (1 << (q - k)); }

#endif /* REDCOLL_CIRCULANT_H */
