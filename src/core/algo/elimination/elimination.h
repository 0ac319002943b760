/*
 * Schedules of the elimination family (Rabenseifner and Traeff 2004), as pure
 * functions: no I/O, no allocation, so the tests can inspect them.
 *
 * A schedule is built in two stages.
 *
 * 1. The plan: for one rank, the list of merge events it takes part in, in
 *    forward (reduction) order.  Units are contiguous rank ranges whose
 *    active members hold pieces of the unit's partial sum; member j of one
 *    unit always works with member j of the others.  Events:
 *      PAIR  butterfly of units (X, Y);
 *      T32   3-2 elimination of units (A, B, C): A and B exchange halves,
 *            then A passes its half of A+B to C while C passes its other half
 *            to B; A is eliminated, B keeps the lower and C the upper half of
 *            (A+B)+C.  C is idle in the first step, so a C that is still busy
 *            with an earlier 3-2 step costs no time (the overlapping
 *            protocol);
 *      E21   2-1 elimination of units (L, U): L sends its piece to U, which
 *            computes L+U; L is eliminated.
 *    The level of an event says which pieces it works on: PAIR and T32 halve
 *    the piece iff level < h (the number of halving levels, from the vector
 *    size and the threshold); an E21 never halves and happens before the
 *    merges of its level.
 *
 * 2. The ops: the plan turned into a list of point-to-point steps with
 *    element ranges of the work vector, for allreduce (reduction phase, the
 *    results for ranks eliminated at non-halving levels in one extra step,
 *    then the reverse of the halving events) or reduce (reduction phase, then
 *    a gather of the pieces to the root along the reverse of the events).
 */
#ifndef REDCOLL_ELIMINATION_H
#define REDCOLL_ELIMINATION_H

#include <stddef.h>

#include "internal.h"

enum { REDCOLL__ELIM_PAIR = 1, REDCOLL__ELIM_T32 = 2, REDCOLL__ELIM_E21 = 3 };

typedef struct redcoll__elim_event {
  int kind;         /* REDCOLL__ELIM_PAIR, _T32 or _E21 */
  int level;        /* level of the pieces it works on */
  int nunits;       /* 2 (PAIR: X Y; E21: L U) or 3 (T32: A B C) */
  int me;           /* this rank's unit, index into the arrays below */
  int rank[3];      /* the rank of each unit that works with this one */
  int lo[3], hi[3]; /* each unit's ranks [lo, hi) */
} redcoll__elim_event;

/* Upper bounds on plan and op list lengths (p <= 65536). */
#define REDCOLL__ELIM_MAX_EVENTS 40
#define REDCOLL__ELIM_MAX_OPS 160

/* The plan of `rank` among p for algo (REDCOLL_ALGO_ELIMINATION,
 * _ELIMINATION_NONOVERLAP or _ELIMINATION_2TO1) into ev (cap entries).
 * Returns the number of events, or -1 for an unknown algorithm or too small
 * a cap.  The last event of an eliminated rank is the one that eliminates
 * it. */
int redcoll__elim_plan(redcoll_algo algo, int p, int rank, redcoll__elim_event *ev, int cap);

/* Number of levels of any of the plans above: floor(log2 p). */
int redcoll__elim_levels(int p);

/* Whether the plan eliminates the rank (its last event removes it). */
int redcoll__elim_eliminated(const redcoll__elim_event *ev, int nev);

/* Number of halving levels: the levels y < levels whose largest piece,
 * ceil(count / 2^y) elements of esize bytes, is larger than threshold. */
int redcoll__elim_halving(size_t count, size_t esize, size_t threshold, int levels);

/* Lower half of [off, off+len) has (len + 1) / 2 elements. */
static inline size_t redcoll__elim_lower(size_t len) { return (len + 1) / 2; }

/* Element range [*off, *off + *len) of piece j (j has level bits) of a
 * count-element vector after `level` halvings: the highest bit of j picks
 * the half at the first halving. */
void redcoll__elim_piece(size_t count, int level, unsigned j, size_t *off, size_t *len);

/* How a received block joins the work vector. */
enum {
  REDCOLL__ELIM_COPY = 0,  /* received straight into the work vector */
  REDCOLL__ELIM_LEFT = 1,  /* work = received (+) work */
  REDCOLL__ELIM_RIGHT = 2, /* work = work (+) received */
};

typedef struct redcoll__elim_op {
  int send_to, recv_from; /* ranks, -1 for none; both: one sendrecv */
  size_t send_off, send_len;
  size_t recv_off, recv_len;
  int combine; /* REDCOLL__ELIM_COPY, _LEFT, _RIGHT */
} redcoll__elim_op;

/* The ops of one rank from its plan.  coll is REDCOLL_COLL_ALLREDUCE or
 * REDCOLL_COLL_REDUCE (then root matters).  Returns the number of ops, or -1
 * if cap is too small. */
int redcoll__elim_ops(const redcoll__elim_event *ev, int nev, int h, size_t count,
                      redcoll_coll coll, int root, redcoll__elim_op *ops, int cap);

/* ---- elimination_rings (elimination_rings.c) -------------------------------
 * p = 2^n 3^a q with q odd and not a multiple of 3 is run in stages: n
 * butterfly stages (radix 2), a' <= a ring stages of three (radix 3), then
 * the overlapping elimination over the last q' = p / (2^n 3^a') units.
 * Stage t groups the ranks that differ only in digit t of the mixed-radix
 * number rank = sum_t digit_t S_t (S_t the product of the radices before t);
 * the elimination stage works on the units [v U, (v+1) U), U the product of
 * all radices, member rank mod U of each unit working with the same member
 * of the others.  a' is the number of rings that gives the fewest rounds
 * for small m, the larger one on a tie. */
#define REDCOLL__RINGS_MAX_STAGES 40

typedef struct redcoll__rings_plan {
  int nstages;                          /* butterfly and ring stages */
  int radix[REDCOLL__RINGS_MAX_STAGES]; /* 2 (butterfly) or 3 (ring), in order */
  int unit;                             /* U: the product of the radices */
  int q;                                /* units of the elimination stage, 1 = none */
  int rounds;                           /* rounds for m <= b */
} redcoll__rings_plan;

/* The plan for p ranks (p >= 1).  Returns pl->rounds, or -1 for p < 1. */
int redcoll__rings_plan_for(int p, redcoll__rings_plan *pl);

/* Rounds of the overlapping elimination alone for m <= b: 0 for p = 1,
 * log2 p for a power of two, else ceil(log2 p) + 1. */
int redcoll__elim_small_rounds(int p);

/* The cost of the elimination over a->p ranks under M (select/cost.h):
 * overlap 1 for the overlapping protocol, 0 for the non-overlapping one. */
struct redcoll__mach;
struct redcoll__cost_args;
double redcoll__elimination_cost(const struct redcoll__mach *M, const struct redcoll__cost_args *a,
                                 int overlap);

#endif /* REDCOLL_ELIMINATION_H */
