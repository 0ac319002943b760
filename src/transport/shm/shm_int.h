/*
 * The shared-memory transport's state (include/redcoll/shm.h).
 *
 * The segment (segment.c) holds, in this order: a header; one record per
 * rank (its pid, its doorbell, whether it left, the slots its large sends
 * wait on); the matrix of which rank may read which by cross-memory attach;
 * then one byte queue (queue.h) per ordered pair of ranks, queue (s, r)
 * written by s and read by r only.  Everything a rank keeps for itself
 * (posted receives, messages that came before their receive, the sends not
 * yet written) is in its shm_impl, behind one mutex per process.
 *
 * A message on a queue is a frame header (shm_frame) and, for an inline
 * message, its payload right after it, written in pieces as room frees
 * up: the pipelined double copy through the segment, used for every message
 * up to REDCOLL__SHM_CMA_MIN bytes and for all of them where cross-memory
 * attach is not allowed.  A larger message travels as a header with the
 * address of the sender's buffer and the index of one of its ack slots; the
 * receiver copies the bytes with process_vm_readv straight into its buffer
 * (copy.c) and marks the slot done, which releases the sender.
 */
#ifndef REDCOLL_SHM_INT_H
#define REDCOLL_SHM_INT_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "base.h"
#include "tagrec.h"
#include "live.h"
#include "queue.h"
#include "redcoll/shm.h"
#include "wait.h"

#define REDCOLL__SHM_MAGIC 0x314d48534c434452ull /* "RDCLSHM1" */
#define REDCOLL__SHM_VERSION 2u
/* Messages above this many bytes go by cross-memory attach where allowed. */
#define REDCOLL__SHM_CMA_MIN ((size_t)32768)
/* Ack slots per rank: large sends one rank may have waiting at once. */
#define REDCOLL__SHM_ACKS 64
/* Channel groups the segment records as cancelled; one more aborts all. */
#define REDCOLL__SHM_MAX_CANCEL 512
/* The cost model (info): a hand-over through a queue costs about 2 us, a
 * byte one copy at about 10 GB/s. */
#define REDCOLL__SHM_ALPHA 2e-6
#define REDCOLL__SHM_BETA 1e-10
/* How often (ns) a waiting rank asks whether its peers still live. */
#define REDCOLL__SHM_LIVE_NS 5000000u

#define REDCOLL__SHM_GROUP(ch) ((ch) & ~(uint64_t)(REDCOLL_TRANSPORT_CHANNEL_GROUP - 1))

/* States of an ack slot (low 8 bits of its word, progress.c; the sender
 * frees it locally once it has seen the slot end). */
enum { ACK_FREE, ACK_PENDING, ACK_BUSY, ACK_OK, ACK_MISMATCH, ACK_CANCELLED };

/* Frame kinds. */
enum { FRAME_INLINE = 1, FRAME_CMA = 2, FRAME_CLOSE = 3 };

typedef struct shm_frame {
  uint64_t tag;
  uint64_t len;
  uint64_t channel;
  uint64_t addr; /* FRAME_CMA: the sender's buffer */
  uint32_t kind;
  uint32_t slot; /* FRAME_CMA: the sender's ack slot (low 8 bits) and its
                  * generation (the rest) */
} shm_frame;

typedef struct shm_header {
  uint64_t magic; /* written last by the creator, with release */
  uint32_t version;
  int32_t size;
  uint64_t total_bytes;
  uint64_t queue_cap;
  uint64_t nonce;     /* drawn by the creator */
  int32_t creator_pid;
  uint32_t attached;  /* ranks that have mapped the segment */
  uint32_t probed;    /* ranks that have filled their row of cma_ok */
  int32_t aborted;    /* a rank's abort status; 0: none */
  uint32_t ncancelled;
  uint32_t pad;
  uint64_t cancelled[REDCOLL__SHM_MAX_CANCEL];
} shm_header;

typedef struct shm_rank {
  _Alignas(64) redcoll__shm_bell bell;
  int32_t pid;
  uint32_t gone;         /* its transport was destroyed */
  uint64_t probe_addr;   /* a word in its memory holding probe_val */
  uint64_t probe_val;
  uint64_t cpus[REDCOLL__CPU_MASK_WORDS]; /* its affinity mask (base/cpus.c) */
  uint32_t acks[REDCOLL__SHM_ACKS];
} shm_rank;

/* One half of an exchange, or a control frame to write. */
typedef struct shm_op {
  struct shm_op *next; /* the peer's outbound FIFO, or its posted receives */
  int is_send;
  int peer;
  uint64_t tag, channel;
  void *buf;
  size_t len;
  int done;
  int status;
  uint64_t coll;       /* ctx.collective: its collective's number, 0 outside */
  /* sends */
  uint32_t kind;       /* FRAME_* */
  int framed;          /* the header is on the queue */
  size_t sent;         /* inline payload bytes on the queue */
  int slot;            /* FRAME_CMA: the ack slot and generation as in
                        * shm_frame; -1 none */
  int owned;           /* a control frame: freed by the progress engine */
  /* receives */
  struct shm_unexp *from; /* the early message it took, still streaming */
} shm_op;

/* A message that arrived before its receive was posted. */
typedef struct shm_unexp {
  struct shm_unexp *next;
  shm_frame f;
  unsigned char *data; /* FRAME_INLINE: the payload */
  size_t got;          /* bytes of it received so far */
} shm_unexp;

typedef struct shm_peer {
  redcoll__shm_queue *out, *in; /* queues (me, peer) and (peer, me) */
  shm_op *out_head, *out_tail;  /* sends and controls not wholly written */
  shm_op *posted;               /* receives waiting for their message */
  shm_unexp *unexp_head, *unexp_tail;
  /* The frame being read from the peer. */
  int reading;
  shm_frame in_f;
  size_t in_left;
  unsigned char *in_dst;        /* where the rest goes; NULL: dropped */
  shm_op *in_op;                /* the receive it completes, or NULL */
  shm_unexp *in_unexp;          /* or the early message it fills */
  uint64_t *closed;             /* channel groups the peer closed */
  size_t nclosed;
  int cma;                      /* this rank may read the peer's memory */
  int peer_cma;                 /* the peer may read this rank's memory */
} shm_peer;

typedef struct shm_impl {
  pthread_mutex_t mu;
  unsigned char *base;          /* the mapping */
  size_t map_bytes;
  shm_header *hdr;
  shm_rank *ranks;
  int rank, size;
  size_t cap;                   /* bytes of each queue */
  uint64_t timeout_ns;          /* bound on one wait; UINT64_MAX none */
  uint64_t spin_ns;
  uint64_t pause_ns; /* of which first on the pause hint (redcoll__spin_pause_ns) */
  double ranks_per_cpu;         /* over the union of the ranks' masks */
  shm_peer *peers;
  redcoll__shm_live live;       /* indexed by rank */
  uint64_t live_checked;        /* when live was last asked */
  int callers;                  /* threads inside exchange (under mu) */
  uint64_t acks_used;           /* bitmap of this rank's ack slots */
  uint32_t ack_gen[REDCOLL__SHM_ACKS]; /* each slot's last generation */
  uint64_t *closed;             /* this rank's closed channel groups */
  size_t nclosed;
  redcoll__tagrec rec; /* for the check of tags that conflict (tagrec.h) */
  const int *world;             /* rank numbers for the logs (host.c: those
                                 * of the TCP world); NULL: the same */
  /* Posted exchanges (shm.c): those waiting, in the order posted. */
  struct shm_pop *pend, *pend_tail;
  uint64_t gen;                 /* bumped after a progress called done */
  uint64_t kick;                /* bumped by redcoll__shm_kick */
  char name[256];
} shm_impl;

/* Rank r as the logs name it. */
#define REDCOLL__SHM_WR(t, r) ((t)->world != NULL ? (t)->world[r] : (r))

/* ---- shm.c ---- */
/* The transport of cfg without its communicator (for host.c). */
int redcoll__shm_impl_create(const redcoll_shm_config *cfg, shm_impl **out);
const redcoll_transport_ops *redcoll__shm_ops(void);
/* Makes a progress of t that is waiting return (host.c: an op of the other
 * transport finished); any thread. */
void redcoll__shm_kick(shm_impl *t);
/* How many kicks t has had. */
uint64_t redcoll__shm_kicks(shm_impl *t);
/* The progress member, returning also once t has been kicked more than
 * kick0 times (read by the caller before it looked for work). */
int redcoll__shm_progress_since(shm_impl *t, uint64_t until_ns, uint64_t kick0);

/* ---- segment.c ---- */
/* Creates (rank 0) or attaches to (the others) the segment of cfg, waits
 * until every rank has attached and probed, unlinks the name; fills t. */
int redcoll__shm_segment_open(shm_impl *t, const redcoll_shm_config *cfg);
void redcoll__shm_segment_close(shm_impl *t);
redcoll__shm_queue *redcoll__shm_segment_queue(shm_impl *t, int from, int to);
/* Row `reader` of the matrix: entry w is 1 if reader may read w's memory. */
unsigned char *redcoll__shm_segment_cma_row(shm_impl *t, int reader);

/* ---- copy.c ---- */
/* Fills this rank's row of cma_ok by reading every peer's probe word;
 * allowed = 0 marks every peer as unreadable (the fallback). */
void redcoll__shm_copy_probe(shm_impl *t, int allowed);
/* Copies len bytes at the peer's address into dst: REDCOLL_OK, or
 * REDCOLL_ETRANSPORT (the peer's memory is gone). */
int redcoll__shm_copy_from(int pid, uint64_t addr, void *dst, size_t len);
/* Where this rank's probe word is and what it holds. */
void redcoll__shm_copy_probe_word(uint64_t nonce, uint64_t *addr, uint64_t *val);

/* What every rank of a TCP communicator tells the others about its host at
 * creation (host.c; ID_WORDS words): its host's identity (2 words), its
 * kernel's (the boot id alone: ranks of one kernel share its CPUs, also
 * from hosts of their own), the kernel's online CPUs, and the first 256
 * CPUs it may run on (a bit mask). */
enum { ID_HOST = 0, ID_KERNEL = 2, ID_ONLINE = 3, ID_MASK = 4, ID_MASK_WORDS = REDCOLL__CPU_MASK_WORDS,
       ID_WORDS = 8 };
/* Ranks per CPU on the busiest kernel among size ranks' words: its ranks
 * over the CPUs they may run on together (the union of their masks; the
 * kernel's online CPUs when a rank's mask is empty, which host.c makes it
 * when the rank may run on a CPU beyond the first 256); at least 1.  The
 * same on every rank. */
double redcoll__shm_ranks_per_cpu(const uint64_t *ids, int size);

#endif /* REDCOLL_SHM_INT_H */
