/*
 * The interposer's shared parts (libredcoll-mpi.so): which collectives it
 * takes, the redcoll communicator of each MPI communicator, the user
 * operators, the counts of the report.  The MPI entry points are in
 * colls.c; these functions are in state.c.
 */
#ifndef REDCOLL_INTERPOSE_H
#define REDCOLL_INTERPOSE_H

#include <mpi.h>

#include "redcoll/mpi.h"
#include "redcoll/redcoll.h"

#define IP_EXPORT __attribute__((visibility("default")))

/* The collectives the interposer can take, in report order. */
#define IP_COLL_MAP(X)                                          \
  X(ALLREDUCE, "allreduce", REDCOLL_COLL_ALLREDUCE)             \
  X(REDUCE, "reduce", REDCOLL_COLL_REDUCE)                      \
  X(REDUCE_SCATTER, "reduce_scatter", REDCOLL_COLL_REDUCE_SCATTER) \
  X(REDUCE_SCATTER_BLOCK, "reduce_scatter_block", REDCOLL_COLL_REDUCE_SCATTER_BLOCK) \
  X(ALLGATHER, "allgather", REDCOLL_COLL_ALLGATHER)             \
  X(ALLGATHERV, "allgatherv", REDCOLL_COLL_ALLGATHERV_DISPLS)   \
  X(BCAST, "bcast", REDCOLL_COLL_BCAST)                         \
  X(BARRIER, "barrier", REDCOLL_COLL_BARRIER)                   \
  X(GATHER, "gather", REDCOLL_COLL_GATHER)                      \
  X(GATHERV, "gatherv", REDCOLL_COLL_GATHERV)                   \
  X(SCATTER, "scatter", REDCOLL_COLL_SCATTER)                   \
  X(SCATTERV, "scatterv", REDCOLL_COLL_SCATTERV)                \
  X(SCAN, "scan", REDCOLL_COLL_SCAN)                            \
  X(EXSCAN, "exscan", REDCOLL_COLL_EXSCAN)                      \
  X(ALLTOALL, "alltoall", REDCOLL_COLL_ALLTOALL)                \
  X(ALLTOALLV, "alltoallv", REDCOLL_COLL_ALLTOALLV)

typedef enum ip_coll {
#define IP__ENUM(name, str, coll) IP_##name,
  IP_COLL_MAP(IP__ENUM)
#undef IP__ENUM
  IP_COLL_COUNT
} ip_coll;

/* Why a call fell through to PMPI. */
#define IP_REASON_MAP(X)                                                 \
  X(NONE, "")                                                            \
  X(NOT_LISTED, "not in REDCOLL_MPI_COLLS")                              \
  X(INTERCOMM, "inter-communicator or MPI_COMM_NULL")                    \
  X(ARGS, "invalid arguments (left to MPI to report)")                   \
  X(DATATYPE, "datatype with gaps, or none redcoll reduces")             \
  X(OP, "operator redcoll cannot express for the datatype")              \
  X(IN_PLACE, "MPI_IN_PLACE where redcoll has no in-place form")        \
  X(REFUSED, "redcoll refused the call")                                 \
  X(NO_COMM, "no redcoll communicator (creation failed or broken)")      \
  X(NESTED, "called from inside redcoll")

typedef enum ip_reason {
#define IP__RENUM(name, str) IP_R_##name,
  IP_REASON_MAP(IP__RENUM)
#undef IP__RENUM
  IP_REASON_COUNT
} ip_reason;

/* One intercepted call on its way. */
typedef struct ip_call {
  ip_coll coll;
  MPI_Comm comm;
  redcoll_comm *rc;       /* attach() */
  redcoll_dtype dt;       /* reduction() */
  const redcoll_op *op;   /* reduction() */
  size_t elem;            /* reduction(): bytes per element */
  ip_reason reason;       /* set when a step says no */
} ip_call;

/* Whether coll is taken on comm (listed, intra-communicator, not nested). */
int ip_start(ip_call *c, ip_coll coll, MPI_Comm comm);
/* Maps (datatype, op) of a reduction; 0 (reason set) if redcoll cannot. */
int ip_reduction(ip_call *c, MPI_Datatype dt, MPI_Op op);
/* Bytes of count elements of a datatype without gaps; 0 (reason set) for
 * one with gaps or a negative count. */
int ip_bytes(ip_call *c, MPI_Datatype dt, int count, size_t *bytes);
/* The extent of a datatype, for displacements. */
size_t ip_extent(MPI_Datatype dt);
/* The redcoll communicator of c->comm, made on first use; 0 (reason set)
 * if there is none. */
int ip_attach(ip_call *c);
/* After the redcoll call returned rc: 1 and *mpi_rc if the call is done
 * (taken, or failed with an MPI error), 0 if it is to fall through. */
int ip_finish(ip_call *c, int rc, int *mpi_rc);
/* Counts a fall-through with c->reason. */
void ip_fell(ip_call *c);

/* For tests and tools (found with dlsym): how many calls of collective
 * `name` (IP_COLL_MAP's names) redcoll took and how many fell through so
 * far; -1 for an unknown name. */
IP_EXPORT int redcoll_mpi_interposer_counts(const char *name, long *took, long *fell_through);

/* Marks the calling thread as inside redcoll (nested MPI calls then go
 * straight to PMPI); returns the previous mark. */
int ip_enter(void);
void ip_leave(int prev);

#endif /* REDCOLL_INTERPOSE_H */
