/*
 * Rank arithmetic of the two ring protocols of Table 1 of Rabenseifner and
 * Traeff (2004), allgather_reduce and ring_sequential (table1_rings.c).
 * Pure functions without I/O, so that the unit tests can call them.
 *
 * Blocks: a vector of n elements is cut into p balanced blocks, block b
 * being [redcoll__block_start(n, p, b), redcoll__block_start(n, p, b + 1)).
 * Block ranges are circular: [first, first + nblocks) modulo p.
 */
#ifndef REDCOLL_TABLE1_RINGS_H
#define REDCOLL_TABLE1_RINGS_H

#include <stddef.h>

/* A contiguous run of elements. */
typedef struct redcoll__ringp_seg {
  size_t off, len;
} redcoll__ringp_seg;

/* The elements of the circular block range [first, first + nblocks) of a
 * vector of n elements in p blocks (0 <= first < p, 0 <= nblocks <= p), as
 * at most two runs: the part up to the end of the vector, then the part that
 * wraps around to its start.  Empty runs are left out.  Returns how many runs
 * seg holds (0, 1 or 2). */
int redcoll__ringp_range(size_t n, int p, int first, int nblocks, redcoll__ringp_seg seg[2]);

/* The dissemination (Bruck) allgather: rounds d = 1, 2, 4, ... < p.  Before
 * round d, rank i holds the blocks [i, i + d); in round d it sends the first
 * redcoll__ringp_bruck_count(p, d) of them to rank (i - d) mod p and receives
 * as many, [i + d, i + d + count), from rank (i + d) mod p.  After
 * ceil(log2 p) rounds every rank holds all p blocks. */
int redcoll__ringp_bruck_count(int p, int d);

/* The binomial gather to relative rank 0 (relative rank = (rank - root) mod
 * p), steps d = 1, 2, 4, ... < p.  Before step d, relative rank rr holds the
 * blocks [rr, rr + held) for some held >= 1.  At step d:
 *   returns  1: receive *nblocks blocks [rr + d, rr + d + *nblocks) from
 *               relative rank *peer = rr + d;
 *   returns -1: send everything held, [rr, rr + *nblocks), to relative rank
 *               *peer = rr - d; rr is done after this step;
 *   returns  0: nothing to do (already done, or no child at distance d).
 * ceil(log2 p) steps; relative rank 0 then holds all p blocks, in order, so
 * that the range received at every step is contiguous (never wraps). */
int redcoll__ringp_gather_step(int p, int rr, int d, int *peer, int *nblocks);

/* How many blocks relative rank rr holds when it sends to its parent (p for
 * the root, rr = 0): min(lowest set bit of rr, p - rr). */
int redcoll__ringp_subtree(int p, int rr);

/* Round k (1 <= k < p) of the personalised exchange of ring_sequential:
 * rank sends to (rank - k) mod p and receives from (rank + k) mod p. */
void redcoll__ringp_exchange_peers(int p, int rank, int k, int *to, int *from);

/* The block a rank owns (reduces and first holds in the routing phase):
 * (rank - root) mod p, with root = 0 for allreduce. */
int redcoll__ringp_block_of(int p, int rank, int root);

/* Model times of section 3.5 for p ranks and a vector of m bytes (m = the
 * paper's m with beta and gamma per byte), exact for p | m:
 *   allgather_reduce: ceil(log2 p) alpha + (p-1) m beta + (p-1) m gamma
 *   ring_sequential:  (p - 1 + ceil(log2 p)) alpha + 2 (1 - 1/p) m beta
 *                     + (1 - 1/p) m gamma
 * The same for allreduce and for reduce with any root. */
double redcoll__ringp_cost_allgather_reduce(int p, double m, double alpha, double beta,
                                            double gamma);
double redcoll__ringp_cost_ring_sequential(int p, double m, double alpha, double beta,
                                           double gamma);

#endif /* REDCOLL_TABLE1_RINGS_H */
