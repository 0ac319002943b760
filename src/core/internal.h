/*
 * Internal interfaces of the core: the communicator, the call descriptor an
 * algorithm receives, the helpers algorithms send, receive and reduce with,
 * and the algorithm registry.  Nothing here is exported.
 */
#ifndef REDCOLL_INTERNAL_H
#define REDCOLL_INTERNAL_H

#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <ucontext.h>

#include "base.h"
#include "redcoll/redcoll.h"
#include "redcoll/transport.h"


/* ---- operators ---------------------------------------------------------- */

enum redcoll__builtin_op {
  REDCOLL__OP_SUM,
  REDCOLL__OP_PROD,
  REDCOLL__OP_MIN,
  REDCOLL__OP_MAX,
  REDCOLL__OP_BAND,
  REDCOLL__OP_BOR,
  REDCOLL__OP_BXOR,
  REDCOLL__OP_LAND,
  REDCOLL__OP_LOR,
  REDCOLL__OP_LXOR,
  REDCOLL__OP_MINLOC,
  REDCOLL__OP_MAXLOC,
  REDCOLL__OP_COUNT,
  REDCOLL__OP_USER = 0xff
};

struct redcoll_op {
  int id;                 /* enum redcoll__builtin_op, or REDCOLL__OP_USER */
  int commutative;
  redcoll_user_fn fn;     /* user operators only */
  size_t elem_size;       /* user operators only */
  void *ctx;
};

/* ---- kernels (kernels/kernels.c) ------------------------------------------------- */

/* REDCOLL_OK if op can reduce dt (a user op needs REDCOLL_CUSTOM and a
 * built-in op needs a built-in dtype; bitwise and logical ops need an integer
 * dtype), else REDCOLL_EINVAL. */
int redcoll__kernel_check(redcoll_dtype dt, const redcoll_op *op);
/* out[i] = left[i] op right[i] for count elements; out may equal left or
 * right.  The pair must have passed redcoll__kernel_check. */
void redcoll__kernel_apply(redcoll_dtype dt, const redcoll_op *op, void *out, const void *left,
                           const void *right, size_t count);
/* Element size of dt, or of the user op for REDCOLL_CUSTOM. */
size_t redcoll__elem_size(redcoll_dtype dt, const redcoll_op *op);

/* The value-index pairs (kernels/loc.c): 1 if dt is one of them. */
int redcoll__is_loc_dtype(redcoll_dtype dt);
/* REDCOLL_OK if (dt, op) is a pair dtype with MINLOC or MAXLOC; EINVAL if
 * only one side is; 1 if neither (for the scalar kernels to decide). */
int redcoll__loc_check(redcoll_dtype dt, const redcoll_op *op);
/* MINLOC or MAXLOC over count pairs of dt; out may equal left or right;
 * any alignment. */
void redcoll__loc_apply(redcoll_dtype dt, int op_id, void *out, const void *left,
                        const void *right, size_t count);

/* Conversions, round to nearest even, NaN stays NaN (quiet). */
float redcoll__f16_to_f32(uint16_t h);
uint16_t redcoll__f32_to_f16(float f);
float redcoll__bf16_to_f32(uint16_t h);
uint16_t redcoll__f32_to_bf16(float f);

/* ---- communicator ------------------------------------------------------- */

/* One transport object and the communicators over it (api/comm.c): the
 * first made by redcoll_comm_create, the others by dup, split and
 * create_group.  The last communicator to go destroys the transport. */
typedef struct redcoll__endpoint {
  const redcoll_transport_ops *ops;
  void *impl;
  int rank, size;   /* in the transport */
  unsigned caps;    /* REDCOLL_TRANSPORT_CAP_* of a version 3 transport */
  int refs;         /* communicators on it (atomic) */
  pthread_mutex_t mu; /* guards chans */
  uint64_t *chans;  /* channel bases in use by communicators here */
  size_t nchans, chans_cap;
  /* Nonblocking requests started and not finished on its communicators
   * (atomic), and the background progress thread (api/request.c). */
  int outstanding;
  struct redcoll__bg *bg;
} redcoll__endpoint;

/* A communicator uses the four channels base .. base + 3: its collectives,
 * its point-to-point messages, and the agreement of the groups made from
 * it (create_group). */
#define REDCOLL__CH_COLL 0u
#define REDCOLL__CH_P2P 1u
#define REDCOLL__CH_GROUP 2u
#define REDCOLL__CH_SPAN REDCOLL_TRANSPORT_CHANNEL_GROUP

struct redcoll_comm {
  const redcoll_transport_ops *ops; /* ep's, copied */
  void *impl;
  redcoll__endpoint *ep;
  int *map;         /* transport rank of each rank; NULL: the same */
  uint64_t channel; /* base of its channels (a multiple of 4) */
  uint64_t children; /* communicators split from it so far */
  int owns_channels; /* 0 for create_group's agreement, which runs on its
                      * parent's group channel: it tells no peer and closes
                      * nothing */
  int rank, size;
  uint64_t seq;                          /* collectives started so far */
  uint64_t tag;                          /* tag of the collective running now */
  redcoll_algo algo[REDCOLL_COLL_COUNT]; /* forced algorithm or AUTO */
  redcoll_algo last_algo;
  /* AUTO's last flat choice per collective and what it was made from
   * (select.c): a call with the same inputs gets the same answer without
   * pricing every candidate again. */
  struct redcoll__pick {
    int valid;
    int p, root;
    size_t count, esize, threshold;
    unsigned exclude;
    double ranks_per_cpu, alpha, beta, gamma, dup;
    size_t segment;
    redcoll_algo algo;
  } pick[REDCOLL_COLL_COUNT];
  size_t threshold;                      /* butterfly block threshold b, bytes */
  size_t segment;                        /* of a piped step (io.c), bytes;
                                          * 0: whole messages (linear's root:
                                          * the transport's unless set) */
  int segment_set;                       /* the application set segment (a
                                          * call or REDCOLL_SEGMENT_KB) */
  int error;                             /* first error; then broken */
  uint64_t timeout_ms;                   /* per-collective deadline; 0: none */
  uint64_t deadline_ns;                  /* of the running collective on the
                                          * transport's clock (version 3);
                                          * UINT64_MAX: none */
  redcoll_transport_info info;           /* what a version 3 transport said */
  const struct redcoll__call *cur;       /* the collective running now, for
                                          * error logs; NULL if not known */
  void *scratch[2];
  size_t scratch_cap[2];
  /* Cost model of REDCOLL_ALGO_AUTO (select/tuning.c, select/cost.h): 0 not resolved
   * yet, 1 resolved from the environment or the defaults, 2 set by the
   * user.  info.name picks the tuning-file entry, info the defaults. */
  int cost_state;
  double cost_alpha, cost_beta, cost_gamma;
  /* Seconds per byte an exchange costs beyond its larger direction where
   * both directions are copied by the same CPUs (loopback, shared memory):
   * measured by the self-calibration, else 0 (full duplex). */
  double cost_dup;
  /* With hosts: the cost of a message inside one (alpha, beta) from a
   * tuning file or REDCOLL_COST_MODEL; 0: the transport's
   * (info.local_alpha, local_beta). */
  double cost_local_alpha, cost_local_beta;
  /* Self-calibration (select/calibrate.c): 0 not decided yet, 1 not
   * wanted, 2 done or under way, 3 switched off by the program. */
  int cal_state;
  int calibrating; /* 1 while it runs: error lines name it */
  /* Ranks per CPU (redcoll_comm_set_ranks_per_cpu): the value AUTO uses,
   * resolved like the cost model (state 0, 1, 2), and what the transport
   * found. */
  int rpc_state, rpc_status; /* status: of resolving the variable */
  double ranks_per_cpu, rpc_detected;
  /* redcoll_comm_set_results: REDCOLL_RESULTS_IDENTICAL (the default) or
   * REDCOLL_RESULTS_FAST, resolved from REDCOLL_RESULTS at creation. */
  redcoll_results results;
  /* Nonblocking collectives (api/request.c); NULL until the first. */
  struct redcoll__nb *nb;
  /* Hosts and the two-level algorithms' views (algo/hier/two_level.c);
   * NULL until the first call that asks. */
  struct redcoll__hier *hier;
  /* A view (a host's ranks, or one rank of each host) borrows its parent's
   * fiber, tag and deadline for one phase of a two-level collective; NULL
   * for a communicator of the program's. */
  struct redcoll_comm *parent;
};

/* The transport's count of ranks per CPU (select/tuning.c); every rank must
 * report the same. */
void redcoll__comm_set_ranks_per_cpu_detected(redcoll_comm *c, double ranks_per_cpu);
/* A deadline starting now on the transport's clock from the
 * communicator's timeout (version 3 transports); UINT64_MAX: none. */
uint64_t redcoll__comm_deadline(const redcoll_comm *c);
/* At the start of each collective: c->deadline_ns from the above. */
void redcoll__comm_start_deadline(redcoll_comm *c);
/* A new communicator on c's transport: rank `rank` of `size`, map (size
 * entries, taken over; NULL: c's transport ranks) and channel base `ch`,
 * already reserved on the endpoint.  Settings from the environment, as
 * redcoll_comm_create. */
int redcoll__comm_derive(redcoll_comm *c, int rank, int size, int *map, uint64_t ch,
                         redcoll_comm **out);
/* Reserves channel base ch on c's endpoint: 1 if it was free, 0 if in use. */
int redcoll__chan_reserve(redcoll_comm *c, uint64_t ch);
void redcoll__chan_release(redcoll__endpoint *ep, uint64_t ch);
/* The transport rank of rank r of c. */
static inline int redcoll__peer(const redcoll_comm *c, int r) { return c->map ? c->map[r] : r; }
/* Tells the peers of c that it gives up with status (cancel on a channel
 * transport, else abort); nothing if the transport cannot. */
void redcoll__comm_tell_peers(redcoll_comm *c, int status);
/* The members of `color` in split's table of (color, key, ok) rows of p
 * ranks, ordered by key and then rank, into ranks; their number, -1 if
 * memory is short (api/group.c). */
int redcoll__split_members(const int32_t *table, int p, int color, int *ranks);
/* A point-to-point exchange (algo/io.c): send to dst with stag and/or
 * receive from src with rtag (-1: absent), ranks of c, by deadline_ns
 * (its own: a nonblocking collective of c keeps its in c). */
int redcoll__p2p(redcoll_comm *c, uint64_t deadline_ns, int dst, uint64_t stag, const void *sbuf,
                 size_t slen, int src, uint64_t rtag, void *rbuf, size_t rlen);

/* Everything an algorithm needs to know about one collective call, checked
 * and resolved: sendbuf is never REDCOLL_IN_PLACE (in place, it equals
 * recvbuf and in_place is 1). */
typedef struct redcoll__call {
  redcoll_comm *comm;
  redcoll_coll coll;
  const void *sendbuf;
  void *recvbuf;
  size_t count;          /* elements: the vector (allreduce, reduce, bcast) or
                            the per-rank block (reduce_scatter_block, allgather) */
  const size_t *counts;  /* per-rank blocks (reduce_scatter, allgatherv) or NULL */
  redcoll_dtype dtype;
  const redcoll_op *op;  /* NULL for data movement only */
  size_t esize;          /* bytes per element */
  int root;
  int in_place;
  int calibrate;         /* measure the cost model first (select/calibrate.c) */
  void *total;           /* exscan_total: the total's buffer, else NULL */
  /* alltoallv: counts and displs are the send side, rcounts and rdispls the
   * receive side; gatherv and scatterv: counts (every rank) and displs
   * (the root's; NULL elsewhere).  Elements. */
  const size_t *displs, *rcounts, *rdispls;
  /* How a meta-algorithm (two_level) runs and prices the flat collectives
   * of its phases (select/select.c's redcoll__phases), passed in so that
   * it needs no link to the registry that lists it. */
  const struct redcoll__phase_ops *phases;
} redcoll__call;

/* The flat collectives of a two-level algorithm's phases. */
typedef struct redcoll__phase_ops {
  /* Runs sub (its comm a view) with AUTO's flat choice there. */
  int (*run)(const redcoll__call *sub);
  /* The best flat algorithm's predicted time for coll on p ranks of
   * count elements of call's dtype and operator under alpha a and beta
   * b (call's communicator's gamma, threshold and ranks per CPU); a
   * negative value if nothing is modelled. */
  double (*cost)(const redcoll__call *call, redcoll_coll coll, int p, size_t count, double a,
                 double b);
} redcoll__phase_ops;
extern const redcoll__phase_ops redcoll__phases;

typedef int (*redcoll__algo_fn)(const redcoll__call *call);

/* Point-to-point with the running collective's tag.  Each returns
 * REDCOLL_OK or the transport's status; the caller must return it at once
 * (the communicator is then broken).  Sends and receives to or from the own
 * rank are not allowed.  redcoll__sendrecv takes dst or src -1 for a side
 * that is absent (it is then a send or a receive), and is a no-op when both
 * are. */
int redcoll__send(redcoll_comm *c, int dst, const void *buf, size_t len);
int redcoll__recv(redcoll_comm *c, int src, void *buf, size_t len);
int redcoll__sendrecv(redcoll_comm *c, int dst, const void *sbuf, size_t slen, int src, void *rbuf,
                      size_t rlen);

/* A piped step (io.c): sends slen bytes of sbuf to dst and receives rlen
 * bytes from src into rbuf, like redcoll__sendrecv, and then, if out is
 * not NULL, reduces what arrived: out = rbuf (+) other if recv_left, else
 * other (+) rbuf, over rlen / esize elements (out may be rbuf or other).
 * Each direction of at least two segments (c->segment bytes, whole
 * elements) goes as segments, on a transport that posts exchanges: the
 * receive of segment j + 1 is under way while segment j is reduced.  A
 * message cut on one side must be cut on the other: what a piped step
 * sends, a piped step receives (the cuts depend on the length alone). */
int redcoll__sendrecv_reduce(const redcoll__call *call, int dst, const void *sbuf, size_t slen,
                             int src, void *rbuf, size_t rlen, void *out, const void *other,
                             int recv_left);
/* The same with segments of seg bytes instead of c->segment's. */
int redcoll__sendrecv_reduce_seg(const redcoll__call *call, size_t seg, int dst, const void *sbuf,
                                 size_t slen, int src, void *rbuf, size_t rlen, void *out,
                                 const void *other, int recv_left);
/* The segment of a linear reduce's root (algo/basic/linear.c): the
 * application's, else the transport's (redcoll_transport_info.segment). */
size_t redcoll__root_segment(const redcoll_comm *c);

/* Sends bytes of buf from root to every rank along a binomial tree rooted
 * at root (algo/basic/binary_tree.c): ceil(log2 p) rounds. */
int redcoll__bcast_binomial(redcoll_comm *c, void *buf, size_t bytes, int root);
/* The same from root to each rank in turn (algo/basic/linear.c): p-1 rounds. */
int redcoll__bcast_linear(redcoll_comm *c, void *buf, size_t bytes, int root);

/* out = left (+) right over count elements of the call's dtype and op, and
 * charges count * esize bytes of reduction work to the transport.  On a
 * nonblocking collective's fiber a large reduction runs in slices, and the
 * fiber yields between them (so does redcoll__copy). */
void redcoll__reduce(const redcoll__call *call, void *out, const void *left, const void *right,
                     size_t count);
/* memcpy(dst, src, bytes) of the running collective on c (the two do not
 * overlap), in slices on a nonblocking collective's fiber. */
void redcoll__copy(redcoll_comm *c, void *dst, const void *src, size_t bytes);

/* Scratch buffer `which` (0 or 1) of at least bytes bytes, kept in the
 * communicator across calls; NULL if memory is short.  Algorithms use buffer
 * 0; buffer 1 is for the few that document a second one. */
void *redcoll__scratch(redcoll_comm *c, int which, size_t bytes);

/* The 64-bit tag of a collective call (layout in redcoll/transport.h):
 * the sequence number (high 24 bits, readable in logs), a hash of
 * collective, count, dtype, op and root (36 bits), phase 0 (low 4 bits;
 * a two-level collective's phases set them).  The core's point-to-point
 * tags have 0x703270 where the number goes (api/p2p.c). */
uint64_t redcoll__make_tag(uint64_t seq, redcoll_coll coll, uint64_t count, redcoll_dtype dt,
                           const redcoll_op *op, int root);

/* Records the first error of the communicator (it is broken from then on)
 * and aborts the peers through the transport.  Returns status. */
int redcoll__fail(redcoll_comm *c, int status);


/* ---- hosts and two-level collectives (algo/hier/) ------------------------- */

/* Which ranks of a communicator share a host (algo/hier/topo.c). */
typedef struct redcoll__topo {
  int hosts;                /* H: hosts, numbered in order of their lowest rank */
  int my_host, my_local;    /* this rank's host and index among its ranks */
  int contiguous;           /* every host's ranks are consecutive ranks */
  int min_local, max_local; /* fewest and most ranks on one host */
  int *host_of;             /* p: the host of each rank */
  int *local_of;            /* p: each rank's index among its host's ranks */
  int *start;               /* H + 1: host h's ranks are members[start[h] ..
                             * start[h + 1]), in rank order */
  int *members;             /* p */
} redcoll__topo;

/* The hosts of the p ranks of a communicator: hosts is indexed by
 * transport rank (NULL: every rank its own host), map maps ranks to
 * transport ranks (NULL: the same), rank is this rank.  REDCOLL_ENOMEM. */
int redcoll__topo_build(const uint32_t *hosts, const int *map, int p, int rank, redcoll__topo *t);
void redcoll__topo_free(redcoll__topo *t);

/* The communicator's hosts, built at the first call (NULL if memory is
 * short); the views are made then too. */
const redcoll__topo *redcoll__hier_topo(redcoll_comm *c);
/* At destruction: frees the hosts and the views. */
void redcoll__hier_free(redcoll_comm *c);
/* AUTO's two-level choice (algo/hier/two_level.c).  The factor by which
 * a flat algorithm's beta grows on c because ranks share a host's link:
 * the most ranks on one host when c has two levels (hosts known, more than
 * one, one with two ranks or more), else 1. */
double redcoll__two_level_link_share(redcoll_comm *c);
/* 1 if the two-level algorithm takes call and is predicted faster than
 * flat_time, the best flat algorithm's time under the shared link. */
int redcoll__two_level_wins(const struct redcoll__call *call, double flat_time);
/* The model of a round inside one of c's hosts, as the two-level phases
 * are priced: alpha before the ranks per CPU scale it, and beta. */
void redcoll__two_level_intra_model(const redcoll_comm *c, double *alpha, double *beta);
/* Before any communication, for a forced two_level: REDCOLL_ENOTSUP if
 * the hosts cannot take the call (ranks of hosts interleave, and the
 * collective moves blocks or the operator is not commutative);
 * REDCOLL_ENOMEM; else REDCOLL_OK. */
int redcoll__two_level_check(const struct redcoll__call *call);
/* For the tests: 1 makes every two-level allreduce and reduce use one
 * slice, 2 as many as the fewest ranks on a host; 0 (the default) lets
 * the cost model decide. */
extern int redcoll__two_level_slices_forced;

/* ---- fibers (api/fiber.c) ------------------------------------------------ */

/* A function on its own stack that yields and is resumed, from any thread. */
typedef struct redcoll__fiber {
  ucontext_t ctx, back;       /* the fiber; where its driver resumes */
  void *map;                  /* guard page + stack */
  size_t map_len;
  unsigned char *stack;
  size_t stack_len;
  void (*fn)(void *);
  void *arg;
  int finished;               /* fn returned */
  void *tsan_self, *tsan_back; /* ThreadSanitizer's fibers */
  const void *back_bottom;    /* the driver's stack, for AddressSanitizer */
  size_t back_len;
} redcoll__fiber;

/* Maps a stack of stack_bytes (rounded up to pages) with a guard page. */
int redcoll__fiber_init(redcoll__fiber *f, size_t stack_bytes);
void redcoll__fiber_free(redcoll__fiber *f);
/* Makes f run fn(arg) from the start at the next resume (f not running). */
int redcoll__fiber_start(redcoll__fiber *f, void (*fn)(void *), void *arg);
/* Runs f until it yields or fn returns (then f->finished is 1). */
void redcoll__fiber_resume(redcoll__fiber *f);
/* From inside f: back to whoever resumed it, until the next resume. */
void redcoll__fiber_yield(redcoll__fiber *f);
/* The fiber this thread is running now, or NULL. */
redcoll__fiber *redcoll__fiber_current(void);

/* ---- nonblocking collectives (api/request.c) ----------------------------- */

/* A communicator's nonblocking state (api/request.c; algo/io.c posts the
 * running fiber's exchanges). */
typedef struct redcoll__nb {
  pthread_mutex_t mu;           /* the queue, callbacks */
  redcoll_request *head, *tail; /* started, not finished; the head runs */
  int fiber_ready;
  redcoll__fiber fiber;
  redcoll_transport_op op;      /* the running fiber's posted exchange */
  void (*op_done)(redcoll_transport_op *op, int status); /* its done */
  int op_status;
  int handoff;                  /* atomic: the fiber yielded, done was called */
  int driving;                  /* atomic: threads inside drive */
  /* Local work on the fiber (algo/io.c): bytes reduced or copied since it
   * last yielded, and how many it may do before it yields to let the
   * driver turn (REDCOLL_NB_SLICE_KB; 0: never). */
  size_t work, slice;
} redcoll__nb;

/* Starts a checked call as a request that run (api/coll.c's) will run: at
 * once on a transport without posted exchanges, else queued behind c's
 * outstanding ones, on c's fiber. */
int redcoll__nb_start(const redcoll__call *call, int (*run)(redcoll__call *call),
                      redcoll_request **req);
/* A request already finished with status (nothing to communicate). */
int redcoll__nb_finished(redcoll_comm *c, int status, redcoll_request **req);
/* Before a blocking call on c: finishes c's outstanding requests. */
void redcoll__nb_drain(redcoll_comm *c);
/* At destruction: finishes what is outstanding and frees the state. */
void redcoll__nb_free(redcoll_comm *c);
/* Before the transport is destroyed: stops the progress thread. */
void redcoll__nb_ep_stop(redcoll__endpoint *ep);

/* ---- algorithm registry (algo/registry.c) --------------------------------------- */

enum {
  REDCOLL__NEEDS_COMMUTATIVE = 1u << 0, /* reorders operands */
  REDCOLL__RANK_DEPENDENT = 1u << 1,    /* ranks combine operands in different
                                         * orders, so floating-point results may
                                         * differ between ranks in the last bits */
};

/* The registry flags that rule an algorithm out for this call: needing a
 * commutative operator when it is not, and giving rank-dependent results
 * when they would show (a floating-point dtype or a user operator) unless
 * the communicator allows them (REDCOLL_RESULTS_FAST). */
unsigned redcoll__excluded_flags(const struct redcoll__call *call);

/* The cost of one (collective, algorithm) under a machine (select/cost.h):
 * seconds on the critical path, or a negative value if not modelled. */
struct redcoll__mach;
struct redcoll__cost_args;
typedef double (*redcoll__cost_fn)(const struct redcoll__mach *m,
                                   const struct redcoll__cost_args *a);

/* One registry row: the algorithm's run and cost functions side by side.
 * A row whose run is NULL is modelled only (redcoll__cost answers for it,
 * nothing runs it); a row whose cost is NULL is run but not modelled. */
typedef struct redcoll__algo_entry {
  redcoll_coll coll;
  redcoll_algo algo;
  redcoll__algo_fn run;
  redcoll__cost_fn cost;
  unsigned flags;
} redcoll__algo_entry;

/* Each family file defines one array, terminated by a row whose coll is
 * REDCOLL_COLL_COUNT, and algo/registry.c lists the arrays. */
extern const redcoll__algo_entry redcoll__algos_linear[];
extern const redcoll__algo_entry redcoll__algos_binary_tree[];
extern const redcoll__algo_entry redcoll__algos_dissemination[];
extern const redcoll__algo_entry redcoll__algos_elimination[];
extern const redcoll__algo_entry redcoll__algos_elimination_rings[];
extern const redcoll__algo_entry redcoll__algos_table1_rings[];
extern const redcoll__algo_entry redcoll__algos_recursive_doubling[];
extern const redcoll__algo_entry redcoll__algos_halving_doubling[];
extern const redcoll__algo_entry redcoll__algos_binary_blocks[];
extern const redcoll__algo_entry redcoll__algos_ring[];
extern const redcoll__algo_entry redcoll__algos_circulant[];
extern const redcoll__algo_entry redcoll__algos_rooted_linear[];
extern const redcoll__algo_entry redcoll__algos_scan_linear[];
extern const redcoll__algo_entry redcoll__algos_hillis_steele[];
extern const redcoll__algo_entry redcoll__algos_transpose[];
extern const redcoll__algo_entry redcoll__algos_bruck[];
extern const redcoll__algo_entry redcoll__algos_binomial_v[];
extern const redcoll__algo_entry redcoll__algos_ring_v[];
extern const redcoll__algo_entry redcoll__algos_pairwise[];
extern const redcoll__algo_entry redcoll__algos_two_level[];

/* The row of (coll, algo), modelled-only rows included, or NULL. */
const redcoll__algo_entry *redcoll__algo_row(redcoll_coll coll, redcoll_algo algo);

/* The row of (coll, algo) that runs, or NULL. */
const redcoll__algo_entry *redcoll__algo_find(redcoll_coll coll, redcoll_algo algo);

/* AUTO: the algorithm to run for this call (select/select.c).  Decides only from
 * values every rank shares. */
redcoll_algo redcoll__select(const redcoll__call *call);

/* ---- small shared helpers ---------------------------------------------- */

/* a mod p in [0, p), for any int a (p > 0). */
static inline int redcoll__mod(int a, int p) { return (a % p + p) % p; }

static inline int redcoll__ceil_log2(int p) {
  int k = 0;
  while ((1 << k) < p) k++;
  return k;
}
static inline int redcoll__floor_pow2(int p) {
  int k = 1;
  while (k * 2 <= p) k *= 2;
  return k;
}
/* Pairwise exchange, round k = 1 .. p-1: rank r sends to *dst and
 * receives from *src; every ordered pair of ranks meets exactly once
 * (alltoall's pairwise algorithm and the scan transposition). */
static inline void redcoll__pairwise_peers(int p, int r, int k, int *dst, int *src) {
  *dst = (r + k) % p;
  *src = (r - k + p) % p;
}
/* Start of block i when n elements are split into k blocks as evenly as
 * possible, the first n % k blocks one element larger. */
static inline size_t redcoll__block_start(size_t n, size_t k, size_t i) {
  size_t q = n / k, r = n % k;
  return i * q + (i < r ? i : r);
}

#endif /* REDCOLL_INTERNAL_H */
