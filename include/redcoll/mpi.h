/*
 * The MPI transport: redcoll's algorithms over MPI point-to-point, for a
 * program that already runs under MPI (mpirun, srun) and wants redcoll's
 * collectives on its processes and fabric (docs/mpi.md).
 *
 * Built when the build finds an MPI (Meson option -Dmpi, auto by default);
 * include <mpi.h> comes with this header, so compile with mpicc or the
 * MPI's flags.  MPI must be initialised before redcoll_mpi_comm_create and
 * finalised only after every communicator made over it is destroyed.
 *
 * Messages travel on a duplicate of the communicator passed (MPI_Comm_dup,
 * with MPI_ERRORS_RETURN), so redcoll's messages never meet the program's
 * own.  Each message carries a 24-byte header (redcoll's 64-bit tag, the
 * length, the channel); up to 4 KiB of payload travel in one MPI message
 * with it, larger payloads in a second message straight into the
 * receiver's buffer.  Channels (redcoll_comm_dup, split, create_group) map
 * to MPI tags by a hash of the channel group; two live groups with one
 * MPI tag still work, the receiver keeps the other group's messages aside.
 *
 * Threading: one call at a time per transport (no
 * REDCOLL_TRANSPORT_CAP_THREADS): collectives on communicators made from
 * one redcoll_mpi_comm_create must not run at once in several threads.
 * The MPI must be initialised with a thread level that allows the calling
 * thread to call MPI (MPI_THREAD_FUNNELED from the main thread, or more).
 *
 * Errors of the collectives, besides those of redcoll.h: an MPI error is
 * REDCOLL_ETRANSPORT (the MPI's message is logged), a truncated message
 * REDCOLL_EMISMATCH; a wait longer than REDCOLL_TIMEOUT_MS (default 5
 * minutes; 0: no bound) or than the collective's deadline
 * (redcoll_comm_set_deadline) REDCOLL_ETIMEDOUT; a peer's abort
 * REDCOLL_EABORTED.  A waiting rank polls MPI, yielding the CPU between
 * polls after REDCOLL_SPIN_US microseconds.  A rank that destroys a
 * communicator tells nobody (as MPI does not): a peer still waiting for it
 * there waits until its deadline or timeout.  A transport that saw an
 * error or an abort keeps its duplicate until MPI_Finalize rather than
 * freeing it (Open MPI would hand late messages to the next communicator).
 */
#ifndef REDCOLL_MPI_H
#define REDCOLL_MPI_H

#include <mpi.h>

#include "redcoll.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Creates this rank's communicator over a duplicate of comm (collective
 * over comm: every member calls it, in the same order as its other
 * collectives on comm).  Rank and size are those of comm.  The duplicate
 * is freed by redcoll_comm_destroy of the last communicator over it.
 * Returns REDCOLL_EINVAL for a NULL out, MPI not initialised (or already
 * finalised), MPI_COMM_NULL or an inter-communicator; REDCOLL_ETRANSPORT
 * if MPI fails (logged); REDCOLL_ENOMEM. */
REDCOLL_API int redcoll_mpi_comm_create(MPI_Comm comm, redcoll_comm **out);

/* The MPI communicator (the duplicate) that communicator c runs over, or
 * MPI_COMM_NULL if c does not run over the MPI transport. */
REDCOLL_API MPI_Comm redcoll_mpi_comm_get(const redcoll_comm *c);

#ifdef __cplusplus
}
#endif
#endif /* REDCOLL_MPI_H */
