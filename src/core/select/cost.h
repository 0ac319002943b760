/*
 * The alpha-beta-gamma cost of every algorithm, as pure functions of values
 * that every rank shares, and the choice REDCOLL_ALGO_AUTO makes from them
 * (select.c), with the model resolved in tuning.c.  Each algorithm family
 * defines its cost functions next to its algorithm and puts them in its
 * registry rows; cost.c holds the arithmetic they share.  No I/O, no
 * allocation: the tests call them directly.
 */
#ifndef REDCOLL_COST_H
#define REDCOLL_COST_H

#include <stddef.h>

#include "internal.h"

/* The machine: alpha seconds per message, beta seconds per byte sent,
 * gamma seconds per byte reduced (any time unit, as long as it is one). */
typedef struct redcoll__cost_model {
  double alpha, beta, gamma;
} redcoll__cost_model;

/* One collective call as the cost functions see it. */
typedef struct redcoll__cost_args {
  redcoll_coll coll;
  int p;
  size_t count;     /* elements: the vector, or the largest per-rank block */
  size_t esize;     /* bytes per element */
  size_t threshold; /* butterfly threshold b in bytes */
  int root;
  double ranks_per_cpu; /* f > 1: alpha f per round, and the start-ups of
                         * a linear allreduce or reduce overlap (linear.c) */
  size_t segment;       /* of a linear reduce's root (redcoll__root_segment);
                         * 0: whole messages */
} redcoll__cost_args;

/* The machine as the cost functions see it: alpha already scaled by the
 * ranks per CPU (redcoll__cost). */
typedef struct redcoll__mach {
  double a, b, g; /* alpha, beta, gamma */
} redcoll__mach;

/* ---- arithmetic the families share (cost.c) ---------------------------- */

int redcoll__ilog2_floor(int p);
/* Trailing zero bits of p (p = odd 2^t). */
int redcoll__trailing_zeros(int p);
/* A piped step (algo/io.c) that receives b bytes in segments of at most
 * segment bytes (whole elements of es bytes) and reduces them: alpha + b
 * (beta + gamma) when it is not cut (segment 0, or fewer than two
 * segments), else the first segment's transfer, each next one's beside
 * the reduction of the one before, and the last one's reduction:
 *   alpha + s beta + sum_{j>0} max(alpha + s_j beta, s gamma) + s_last gamma. */
double redcoll__cost_piped(const redcoll__mach *M, double b, size_t segment, size_t es);
/* The segment such a step of b bytes is cut into (io.c's seg_size): whole
 * elements, or 0 when it goes whole. */
double redcoll__cost_cut(double b, size_t segment, size_t es);
/* Bytes of the largest of k balanced blocks of n elements. */
double redcoll__cost_blk(size_t n, size_t k, size_t es);
/* Bytes of the piece after z halvings (the lower half keeps the odd
 * element). */
double redcoll__cost_piece(size_t n, int z, size_t es);
/* Number of halving levels among the first `levels`: those whose piece,
 * ceil(n / 2^y) elements, is larger than b. */
int redcoll__cost_halving_levels(size_t n, size_t es, size_t b, int levels);
/* One round: alpha + sent beta + reduced gamma. */
double redcoll__cost_rnd(const redcoll__mach *M, double sent, double reduced);
/* p - 1 rounds, each moving one block of count elements, nothing reduced:
 * the linear and pairwise data movements (bcast, gather(v), scatter(v),
 * alltoall(v), the v-ring). */
double redcoll__cost_linear_rounds(const redcoll__mach *M, const redcoll__cost_args *a);
/* The butterfly over 2^k ranks with h halving levels: the reduction phase
 * (or, with route, also the reverse of the halving levels). */
double redcoll__cost_butterfly(const redcoll__mach *M, int k, int h, size_t n, size_t es,
                               int route);

/* ---- the costs --------------------------------------------------------- */

/* The predicted time of algo for the call under model cm, on the critical
 * path of the one-ported full-duplex model of the simulator: the cost
 * function of the registry row (a->coll, algo), with alpha scaled by the
 * ranks per CPU; 0 for p <= 1; a negative value if the cost of (coll,
 * algo) is not modelled. */
double redcoll__cost(redcoll_algo algo, const redcoll__cost_args *a, const redcoll__cost_model *cm);
/* The same where the two directions of an exchange cost dup seconds per
 * byte beyond the larger one, as where the same CPUs copy both (loopback,
 * shared memory; self-calibration measures it at p = 2): an allreduce or
 * reduce algorithm other than linear and binary_tree (whose messages go
 * one way at a time) pays dup for every byte on its critical path.
 * redcoll__cost is dup = 0, the full-duplex model. */
double redcoll__cost_dup(redcoll_algo algo, const redcoll__cost_args *a,
                         const redcoll__cost_model *cm, double dup);

/* The cheapest algorithm registered for a->coll whose registry flags
 * share no bit with exclude (redcoll__excluded_flags: REDCOLL__NEEDS_COMMUTATIVE
 * for a non-commutative operator, REDCOLL__RANK_DEPENDENT where results
 * must be identical on every rank).  Ties go to the earlier candidate of the
 * collective's list.  *time, if not NULL, gets its predicted time. */
redcoll_algo redcoll__cost_select(const redcoll__cost_args *a, unsigned exclude,
                                  const redcoll__cost_model *cm, double *time);
/* The same with redcoll__cost_dup's dup; redcoll__cost_select is dup = 0. */
redcoll_algo redcoll__cost_select_dup(const redcoll__cost_args *a, unsigned exclude,
                                      const redcoll__cost_model *cm, double dup, double *time);

/* Built-in cost model of a transport ("mock", "threads", "tcp"); NULL or
 * an unknown name gives the commodity-cluster default. */
redcoll__cost_model redcoll__cost_default(void);

/* Parses a tuning file (format in docs/tuning.md) and stores the entry for
 * transport (or the "default" entry) in *cm, its intra-host alpha and beta
 * in local[0] and local[1] (if local is not NULL; 0 and 0 when the entry
 * has none) and, when the entry sets one, the threshold in *threshold
 * (left alone otherwise).  REDCOLL_OK; 1 if the file has no entry that
 * applies; REDCOLL_EINVAL for an unreadable or malformed file (the reason
 * is logged). */
int redcoll__tuning_read(const char *path, const char *transport, redcoll__cost_model *cm,
                         double *local, size_t *threshold);

/* A finite number >= 0: a valid alpha, beta, gamma or ranks per CPU. */
int redcoll__cost_valid(double v);

/* Resolves the communicator's ranks per CPU once (explicit setting, then
 * REDCOLL_RANKS_PER_CPU, then what the transport detected).  REDCOLL_EINVAL
 * if the variable is malformed (logged; the detected value is used). */
int redcoll__rpc_resolve(redcoll_comm *c);

/* Resolves the communicator's cost model once (explicit setting, then
 * REDCOLL_COST_MODEL, then REDCOLL_TUNING_FILE, then the transport's
 * default).  REDCOLL_EINVAL if an environment variable is malformed. */
int redcoll__cost_resolve(redcoll_comm *c);

/* The model inside one of c's hosts (the two-level model): what was set
 * (REDCOLL_COST_MODEL's or a tuning file's five numbers) or calibrated,
 * else the transport's (info.local_alpha, local_beta), else a tenth of the
 * network's. */
double redcoll__local_alpha(const redcoll_comm *c);
double redcoll__local_beta(const redcoll_comm *c);

/* Self-calibration (calibrate.c).  Due: 1 if the communicator should
 * measure its model before this collective (the first that lets AUTO
 * choose, nothing set by the program or the environment, the transport's
 * model not exact); asked once. */
int redcoll__calibration_due(redcoll_comm *c);
/* Measures alpha, beta and gamma on every rank and agrees on the largest
 * (a collective of its own): the communicator's model from then on. */
int redcoll__calibrate(redcoll_comm *c);

#endif /* REDCOLL_COST_H */
