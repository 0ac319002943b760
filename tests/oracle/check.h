/*
 * The collective checker: runs one collective under the simulator, with
 * inputs chosen so that the reduction is exact in any bracketing, and
 * verifies every rank's result bytewise against a sequential reduction in
 * rank order.  redcoll-sim and the tests share it.
 */
#ifndef REDCOLL_CHECK_H
#define REDCOLL_CHECK_H

#include <stddef.h>
#include <stdint.h>

#include "redcoll/mock.h"
#include "redcoll/redcoll.h"

typedef enum check_op {
  CHECK_OP_SUM,        /* SUM of integer-valued data (exact in any order) */
  CHECK_OP_MAX,        /* MAX */
  CHECK_OP_NONCOMM,    /* 2x2 matrix product modulo 65521: associative, not commutative */
  CHECK_OP_SUM_RANDOM, /* SUM of random float64: results must be bitwise equal on all ranks
                          and within 1e-9 (relative) of the sequential sum */
} check_op;

typedef struct check_case {
  redcoll_coll coll;
  redcoll_algo algo;     /* REDCOLL_ALGO_AUTO lets the library choose */
  int p;
  size_t count;          /* as the API's count argument (per-rank block for
                            reduce_scatter_block, allgather, gather and
                            scatter; the vector for scan, exscan and
                            exscan_total, whose results are checked per
                            rank: rank 0's exscan recvbuf must be as it
                            was, the total the same on every rank) */
  const size_t *counts;  /* reduce_scatter / allgatherv: p entries; NULL: count each */
  int root;
  redcoll_dtype dtype;   /* SUM and MAX only: any built-in dtype (default float64) */
  check_op op;
  int in_place;          /* REDCOLL_IN_PLACE where the API allows it: every
                            rank, or only the root (reduce: sendbuf, gather:
                            sendbuf, scatter: recvbuf) */
  size_t threshold;      /* 0: the communicator's default */
  redcoll_mock_config mock;
  int threads;           /* run on the threads transport instead of the
                            simulator (no statistics then) */
  int irregular;         /* alltoallv, gatherv, scatterv: 0 blocks of count
                            elements end to end; 1 uneven blocks of 0 ..
                            count elements (many zeros) in reverse rank
                            order with a gap of one element between them;
                            2 the same layout, very uneven: one block of
                            4 count elements per rank, 0 or 1 elsewhere.
                            gatherv and scatterv: block k has the size of
                            rank 0's block for rank k in alltoallv */
} check_case;

typedef struct check_result {
  int status;                 /* what the run returned */
  int ok;                     /* every rank's result verified */
  redcoll_algo algo;          /* the algorithm rank 0 ran */
  size_t bytes;               /* the vector in bytes (count * element size) */
  double time;                /* max over ranks */
  uint64_t rounds;            /* max over ranks */
  uint64_t max_bytes_sent, max_bytes_recv, max_bytes_reduced;
  uint64_t msgs;              /* total messages */
  uint64_t max_host_bytes_out; /* the most bytes one host sent to other hosts
                                  (mock.ranks_per_host, mock.hosts; every
                                  rank its own host: max_bytes_sent) */
  char error[512];            /* first problem found, or "" */
} check_result;

/* float64 SUM, rank 0, alpha = 1, the mock's other defaults. */
void check_case_init(check_case *tc);

/* Runs and verifies.  Returns 0 when res->ok, -1 otherwise. */
int check_run(const check_case *tc, check_result *res);

/* The case most tests build: check_case_init's defaults with these fields
 * set. */
check_case check_case_make(redcoll_coll coll, redcoll_algo algo, int p, size_t count, int root,
                           check_op op, int in_place);
/* check_run, and on failure one line on stderr naming the whole case;
 * returns 1 when res->ok. */
int check_run_report(const check_case *tc, check_result *res);

/* alltoallv, gatherv, scatterv: elements rank i sends to rank j, and the
 * displacements of rank i's send blocks (send = 1) or receive blocks
 * (send = 0) in the case's layout (p entries). */
size_t check_pair_count(const check_case *tc, int i, int j);
void check_displs(const check_case *tc, int i, int send, size_t *displs);

/* The element size of the case's data. */
size_t check_elem_size(const check_case *tc);

/* The non-commutative operator (16-byte elements); created on first use. */
const redcoll_op *check_noncomm_op(void);

#endif
