/*
 * The shared-memory transport: the ranks are processes of one host that
 * share a segment of memory (POSIX shared memory, /dev/shm).
 *
 * Set-up.  Every rank names the same segment and the same size.  Rank 0
 * creates it (a name left over by a job whose creator has died is removed
 * and made again; one whose creator still lives is refused), the others
 * attach to it as soon as it exists, and the last rank to attach unlinks
 * the name: from then on the segment has no name, and a crash leaves
 * nothing in /dev/shm.  Creation blocks until every rank has attached, or
 * fails with REDCOLL_ETIMEDOUT after the wait timeout.
 *
 * Messages.  Each ordered pair of ranks has a lock-free single-producer,
 * single-consumer queue in the segment.  A message of up to 32 KiB is
 * copied into the queue by the sender and out of it by the receiver, in
 * pieces as room frees up (a send returns once its bytes are in the queue).
 * A larger one is copied once, by the receiver, straight from the sender's
 * buffer with process_vm_readv (cross-memory attach); its send returns
 * when the receiver has copied it.  Where the kernel forbids that (ptrace
 * rules: Yama's ptrace_scope, a seccomp filter, other users), which every
 * rank finds out once at creation by reading a word of each peer, or when
 * REDCOLL_SHM_CMA=0 or copy = REDCOLL_SHM_COPY_QUEUE asks so, larger
 * messages take the pipelined double copy through the queue too.
 *
 * Waiting.  A rank waiting for a peer polls for at most REDCOLL_SPIN_US
 * microseconds (default 100, 0 turns it off): the first REDCOLL_PAUSE_US
 * (default 1) with the CPU's pause hint, unless the segment's ranks
 * outnumber the CPUs their affinity masks allow together, the rest giving
 * the CPU away (sched_yield) between polls; then it sleeps on a futex in
 * the segment until a peer rings it: a host with more ranks than cores is not kept
 * busy by the ranks that wait.
 *
 * Failures.  Every rank holds a pidfd of every peer and asks them while it
 * waits (every 5 ms at most): a peer that dies (kill -9) makes every
 * waiting and later call that needs it return REDCOLL_ETRANSPORT within
 * milliseconds, once what it had already written has been received.  A
 * peer whose transport is destroyed does the same at once.  A rank that
 * aborts (abort member) makes every rank's calls return REDCOLL_EABORTED;
 * a cancelled communicator (the core cancels one after its first error)
 * does so for its channels only.  A call that waits past its collective's
 * deadline or the wait timeout returns REDCOLL_ETIMEDOUT (a stopped peer,
 * SIGSTOP).  A send given up in the middle of its bytes (timeout, abort)
 * cuts its queue: later receives from that rank fail with
 * REDCOLL_ETRANSPORT.  Errors are logged naming the rank and the cause.
 *
 * Communicators.  dup, split and create_group work (channels); calls on
 * different communicators may come from different threads at once.
 *
 * Nonblocking collectives (redcoll_iallreduce, ...) post their exchanges
 * and move on inside redcoll_test, redcoll_wait, redcoll_comm_progress and
 * the progress thread (redcoll_comm_set_progress_thread), here and on TCP
 * with its shared-memory path.  redcoll_comm_fd is -1 on both: a waiting
 * rank sleeps on a futex, which poll cannot watch (docs/embedding.md).
 */
#ifndef REDCOLL_SHM_H
#define REDCOLL_SHM_H

#include <stddef.h>
#include <stdint.h>

#include "redcoll.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Default of wait_timeout_ms: 3 minutes, as TCP. */
#define REDCOLL_SHM_DEFAULT_WAIT_TIMEOUT_MS ((uint64_t)180000)
/* The largest number of ranks (queues grow with the square of it). */
#define REDCOLL_SHM_MAX_SIZE 256

/* How messages above 32 KiB are copied. */
typedef enum redcoll_shm_copy {
  REDCOLL_SHM_COPY_AUTO = 0,  /* cross-memory attach where the kernel allows it */
  REDCOLL_SHM_COPY_QUEUE = 1  /* always the pipelined double copy */
} redcoll_shm_copy;

typedef struct redcoll_shm_config {
  /* This rank and the number of ranks: 0 <= rank < size <= REDCOLL_SHM_MAX_SIZE. */
  int rank;
  int size;
  /* The segment's name, the same on every rank of the job and on no other
   * job of the host: at most 200 characters, no '/' but an optional first
   * one.  Read during redcoll_shm_comm_create only. */
  const char *name;
  /* Bound in milliseconds on every wait, creation included (redcoll.h,
   * REDCOLL_WAIT_FOREVER); 0: REDCOLL_SHM_DEFAULT_WAIT_TIMEOUT_MS. */
  uint64_t wait_timeout_ms;
  /* Bytes of each pair's queue, a power of two from 4096; 0: 256 KiB for
   * up to 16 ranks, less beyond, about 64 MiB in all.  The same on every
   * rank (the creator's is used). */
  size_t queue_bytes;
  /* REDCOLL_SHM_COPY_AUTO or REDCOLL_SHM_COPY_QUEUE. */
  int copy;
} redcoll_shm_config;

/* Zeroes cfg and sets rank and size to -1 (unknown). */
REDCOLL_API void redcoll_shm_config_init(redcoll_shm_config *cfg);

/* Initializes cfg and fills it from the environment of the TCP transport
 * (redcoll/tcp.h; redcoll-run sets it): rank and size from REDCOLL_RANK and
 * REDCOLL_SIZE (else SLURM_PROCID / SLURM_NTASKS, OMPI_COMM_WORLD_RANK /
 * OMPI_COMM_WORLD_SIZE, PMI_RANK / PMI_SIZE); the name from
 * REDCOLL_SHM_NAME, else "/redcoll-UID-" and a digest of REDCOLL_JOB_ID,
 * else of REDCOLL_MASTER, else of REDCOLL_HOSTS (one of which must be
 * set); wait_timeout_ms from REDCOLL_TIMEOUT_MS (0 there: no bound);
 * copy = REDCOLL_SHM_COPY_QUEUE if REDCOLL_SHM_CMA=0.  The name is kept in
 * storage of the calling thread until its next call.  Returns
 * REDCOLL_EINVAL (with a message at log level error) for a malformed or
 * missing variable. */
REDCOLL_API int redcoll_shm_config_from_env(redcoll_shm_config *cfg);

/* Creates or attaches to the segment and returns this rank's
 * communicator once every rank has attached.  REDCOLL_EINVAL for a bad
 * configuration or a name a live job uses, REDCOLL_ETIMEDOUT if not every
 * rank attached within the timeout, REDCOLL_ETRANSPORT if the segment
 * cannot be made or mapped, REDCOLL_ENOMEM. */
REDCOLL_API int redcoll_shm_comm_create(const redcoll_shm_config *cfg, redcoll_comm **out);

/* redcoll_shm_config_from_env + redcoll_shm_comm_create. */
REDCOLL_API int redcoll_shm_comm_create_from_env(redcoll_comm **out);

/* 1 if messages above 32 KiB from rank peer to this rank are copied by
 * cross-memory attach, 0 if through the queue; REDCOLL_EINVAL if c is not
 * a shared-memory communicator or peer is out of range or this rank. */
REDCOLL_API int redcoll_shm_comm_uses_cma(const redcoll_comm *c, int peer);

/* 1 if messages between this rank and rank peer (a rank of the world the
 * transport was created with) go through shared memory: always on a
 * shared-memory communicator; on a TCP communicator for the ranks of this
 * host, unless REDCOLL_SHM=0 or the configuration's no_shm turned the path
 * off; 0 otherwise, and for other transports.  REDCOLL_EINVAL for a NULL c
 * or a peer out of range. */
REDCOLL_API int redcoll_shm_comm_is_local(const redcoll_comm *c, int peer);

#ifdef __cplusplus
}
#endif
#endif /* REDCOLL_SHM_H */
