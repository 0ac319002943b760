/*
 * redcoll — reduction collectives for any number of processes.
 *
 * This header is the contract between redcoll and the programs that embed it.
 * Every public function returns REDCOLL_OK (0) or a negative status.  Errors
 * (a failed collective, a bootstrap that cannot complete) are also printed
 * on stderr, one line naming the rank and the cause; REDCOLL_LOG_LEVEL=none
 * silences them, warn, info and debug say more (debug: one line per
 * collective with its algorithm and time).  A communicator belongs to
 * one thread at a time: collectives on one communicator must not be called
 * concurrently.  Different communicators are independent.
 */
#ifndef REDCOLL_H
#define REDCOLL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define REDCOLL_VERSION_MAJOR 0
#define REDCOLL_VERSION_MINOR 1
#define REDCOLL_VERSION_PATCH 0

#if defined(_WIN32)
#define REDCOLL_API
#elif defined(REDCOLL_BUILDING) && defined(__GNUC__)
#define REDCOLL_API __attribute__((visibility("default")))
#else
#define REDCOLL_API
#endif

/* ------------------------------------------------------------------------ */
/* Status codes.                                                            */
/* ------------------------------------------------------------------------ */

/* X(name, value, message): the one table from which the enum, the name and
 * the message functions are generated. */
#define REDCOLL_STATUS_MAP(X)                                                   \
  X(OK, 0, "success")                                                           \
  X(EINVAL, -1, "invalid argument")                                             \
  X(ENOMEM, -2, "out of memory")                                                \
  X(ETRANSPORT, -3, "transport failure (peer gone or connection broken)")       \
  X(ETIMEDOUT, -4, "timed out waiting for a peer")                              \
  X(EMISMATCH, -5, "ranks disagree on the collective (tag or length mismatch)") \
  X(EABORTED, -6, "communicator aborted")                                       \
  X(EPROTO, -7, "protocol error (malformed or unexpected message)")             \
  X(ENOTSUP, -8, "operation not supported by this algorithm or transport")      \
  X(EDEADLOCK, -9, "deadlock: no rank can make progress")

typedef enum redcoll_status {
#define REDCOLL__ENUM(name, val, msg) REDCOLL_##name = (val),
  REDCOLL_STATUS_MAP(REDCOLL__ENUM)
#undef REDCOLL__ENUM
} redcoll_status;

/* A static English sentence for a status; "unknown status" for others. */
REDCOLL_API const char *redcoll_strerror(int status);
/* The symbolic name ("REDCOLL_EINVAL"); "REDCOLL_UNKNOWN" for others. */
REDCOLL_API const char *redcoll_status_name(int status);

/* ------------------------------------------------------------------------ */
/* Data types.                                                              */
/* ------------------------------------------------------------------------ */

typedef enum redcoll_dtype {
  REDCOLL_INT8,
  REDCOLL_UINT8,
  REDCOLL_INT16,
  REDCOLL_UINT16,
  REDCOLL_INT32,
  REDCOLL_UINT32,
  REDCOLL_INT64,
  REDCOLL_UINT64,
  REDCOLL_FLOAT16,  /* IEEE 754 binary16, reduced in float32, rounded to nearest even */
  REDCOLL_BFLOAT16, /* bfloat16, reduced in float32, rounded to nearest even */
  REDCOLL_FLOAT32,
  REDCOLL_FLOAT64,
  REDCOLL_CUSTOM,   /* elements of the size of the user operator passed along */
  /* Value-index pairs for REDCOLL_MINLOC and REDCOLL_MAXLOC (and data
   * movement), laid out as the structs below: the value, then the index,
   * with C's alignment (so REDCOLL_FLOAT64_INT32 is 16 bytes). */
  REDCOLL_FLOAT32_INT32,
  REDCOLL_FLOAT64_INT32,
  REDCOLL_INT32_INT32,
  REDCOLL_INT64_INT32,
  REDCOLL_FLOAT32_INT64,
  REDCOLL_FLOAT64_INT64,
  REDCOLL_INT32_INT64,
  REDCOLL_INT64_INT64,
  REDCOLL_DTYPE_COUNT
} redcoll_dtype;

/* The elements of the value-index dtypes. */
typedef struct redcoll_float32_int32 { float value; int32_t index; } redcoll_float32_int32;
typedef struct redcoll_float64_int32 { double value; int32_t index; } redcoll_float64_int32;
typedef struct redcoll_int32_int32 { int32_t value; int32_t index; } redcoll_int32_int32;
typedef struct redcoll_int64_int32 { int64_t value; int32_t index; } redcoll_int64_int32;
typedef struct redcoll_float32_int64 { float value; int64_t index; } redcoll_float32_int64;
typedef struct redcoll_float64_int64 { double value; int64_t index; } redcoll_float64_int64;
typedef struct redcoll_int32_int64 { int32_t value; int64_t index; } redcoll_int32_int64;
typedef struct redcoll_int64_int64 { int64_t value; int64_t index; } redcoll_int64_int64;

/* Size in bytes of one element (of the struct, for the value-index pairs);
 * 0 for REDCOLL_CUSTOM (the operator decides) and for values out of
 * range. */
REDCOLL_API size_t redcoll_dtype_size(redcoll_dtype dt);
/* "int8", ..., "float64", "custom", "float32_int32", ..., "int64_int64";
 * NULL out of range. */
REDCOLL_API const char *redcoll_dtype_name(redcoll_dtype dt);

/* ------------------------------------------------------------------------ */
/* Reduction operators.                                                     */
/* ------------------------------------------------------------------------ */

typedef struct redcoll_op redcoll_op;

/* Built-in operators.  All are associative and commutative.  SUM, PROD, MIN
 * and MAX apply to every built-in dtype; BAND, BOR, BXOR, LAND, LOR, LXOR to
 * the integer dtypes only (REDCOLL_EINVAL otherwise).  Integer SUM and PROD
 * wrap around modulo 2^bits, signed ones included.  Logical operators yield 0
 * or 1.  MIN and MAX on floating point return the left operand when the
 * comparison is false (so a NaN on the left is kept). */
REDCOLL_API extern const redcoll_op *const REDCOLL_SUM;
REDCOLL_API extern const redcoll_op *const REDCOLL_PROD;
REDCOLL_API extern const redcoll_op *const REDCOLL_MIN;
REDCOLL_API extern const redcoll_op *const REDCOLL_MAX;
REDCOLL_API extern const redcoll_op *const REDCOLL_BAND;
REDCOLL_API extern const redcoll_op *const REDCOLL_BOR;
REDCOLL_API extern const redcoll_op *const REDCOLL_BXOR;
REDCOLL_API extern const redcoll_op *const REDCOLL_LAND;
REDCOLL_API extern const redcoll_op *const REDCOLL_LOR;
REDCOLL_API extern const redcoll_op *const REDCOLL_LXOR;
/* MINLOC and MAXLOC apply to the value-index dtypes only (and those take
 * no other operator): the pair with the smaller (larger) value wins; equal
 * values keep the lower index.  A comparison that is false both ways (a
 * NaN) keeps the left pair, as MIN and MAX do.  Commutative. */
REDCOLL_API extern const redcoll_op *const REDCOLL_MINLOC;
REDCOLL_API extern const redcoll_op *const REDCOLL_MAXLOC;

/* A user reduction: out[i] = left[i] (+) right[i] for i < count, elements of
 * the operator's elem_size.  out may be the same pointer as left or right
 * (never a partial overlap).  Called from the thread that called the
 * collective (for a nonblocking one: the thread that moves it on); it must
 * not call back into redcoll on the same communicator.  A nonblocking
 * collective may reduce one vector in several calls on consecutive parts
 * (REDCOLL_NB_SLICE_KB). */
typedef void (*redcoll_user_fn)(void *out, const void *left, const void *right, size_t count,
                                void *ctx);

/* Creates a user operator for REDCOLL_CUSTOM elements of elem_size bytes.
 * commutative != 0 allows algorithms that reorder operands.  The operator
 * must outlive every collective that uses it.  Returns REDCOLL_EINVAL for a
 * NULL fn or out, or elem_size 0; REDCOLL_ENOMEM. */
REDCOLL_API int redcoll_op_create(redcoll_user_fn fn, size_t elem_size, int commutative, void *ctx,
                                  redcoll_op **out);
/* Frees a user operator; NULL and built-in operators are ignored. */
REDCOLL_API void redcoll_op_destroy(redcoll_op *op);
/* 1 if the operator is commutative, 0 if not, REDCOLL_EINVAL for NULL. */
REDCOLL_API int redcoll_op_is_commutative(const redcoll_op *op);

/* Applies op to count elements locally: out = left (+) right.  The same
 * kernels the collectives use; handy for tests and for user code.  Returns
 * REDCOLL_EINVAL for a (dtype, op) pair that does not make sense. */
REDCOLL_API int redcoll_reduce_local(void *out, const void *left, const void *right, size_t count,
                                     redcoll_dtype dt, const redcoll_op *op);

/* ------------------------------------------------------------------------ */
/* Collectives and algorithms.                                              */
/* ------------------------------------------------------------------------ */

typedef enum redcoll_coll {
  REDCOLL_COLL_ALLREDUCE,
  REDCOLL_COLL_REDUCE,
  REDCOLL_COLL_REDUCE_SCATTER_BLOCK,
  REDCOLL_COLL_REDUCE_SCATTER,
  REDCOLL_COLL_ALLGATHER,
  REDCOLL_COLL_ALLGATHERV,
  REDCOLL_COLL_BCAST,
  REDCOLL_COLL_GATHER,
  REDCOLL_COLL_SCATTER,
  REDCOLL_COLL_BARRIER,
  REDCOLL_COLL_SCAN,
  REDCOLL_COLL_EXSCAN,
  REDCOLL_COLL_EXSCAN_TOTAL,
  REDCOLL_COLL_ALLTOALL,
  REDCOLL_COLL_ALLTOALLV,
  REDCOLL_COLL_GATHERV,
  REDCOLL_COLL_SCATTERV,
  REDCOLL_COLL_ALLGATHERV_DISPLS,
  REDCOLL_COLL_COUNT
} redcoll_coll;

/* "allreduce", "reduce", "reduce_scatter_block", ...; NULL out of range. */
REDCOLL_API const char *redcoll_coll_name(redcoll_coll coll);
/* Parses a collective name; REDCOLL_EINVAL if unknown. */
REDCOLL_API int redcoll_coll_parse(const char *name, redcoll_coll *out);

/* X(NAME, "name"): every algorithm the library knows.  Whether a collective
 * implements an algorithm is asked with redcoll_algo_is_supported(). */
#define REDCOLL_ALGO_MAP(X)                                 \
  X(AUTO, "auto")                                           \
  X(LINEAR, "linear")                                       \
  X(BINARY_TREE, "binary_tree")                             \
  X(RECURSIVE_DOUBLING, "recursive_doubling")               \
  X(HALVING_DOUBLING, "halving_doubling")                   \
  X(BINARY_BLOCKS, "binary_blocks")                         \
  X(RING, "ring")                                           \
  X(ELIMINATION, "elimination")                             \
  X(ELIMINATION_NONOVERLAP, "elimination_nonoverlap")       \
  X(ELIMINATION_2TO1, "elimination_2to1")                   \
  X(ELIMINATION_RINGS, "elimination_rings")                 \
  X(ALLGATHER_REDUCE, "allgather_reduce")                   \
  X(RING_SEQUENTIAL, "ring_sequential")                     \
  X(CIRCULANT, "circulant")                                 \
  X(CIRCULANT_RSAG, "circulant_rsag")                       \
  X(DISSEMINATION, "dissemination")                         \
  X(HILLIS_STEELE, "hillis_steele")                         \
  X(TRANSPOSE, "transpose")                                 \
  X(BRUCK, "bruck")                                         \
  X(PAIRWISE, "pairwise")                                   \
  X(TWO_LEVEL, "two_level")

typedef enum redcoll_algo {
#define REDCOLL__ALGO_ENUM(name, str) REDCOLL_ALGO_##name,
  REDCOLL_ALGO_MAP(REDCOLL__ALGO_ENUM)
#undef REDCOLL__ALGO_ENUM
  REDCOLL_ALGO_COUNT
} redcoll_algo;

/* The lowercase name ("halving_doubling"); NULL out of range. */
REDCOLL_API const char *redcoll_algo_name(redcoll_algo a);
/* Parses an algorithm name; REDCOLL_EINVAL if unknown. */
REDCOLL_API int redcoll_algo_parse(const char *name, redcoll_algo *out);
/* 1 if collective coll implements algorithm a (AUTO always), else 0. */
REDCOLL_API int redcoll_algo_is_supported(redcoll_coll coll, redcoll_algo a);
/* 1 if algorithm a of coll keeps canonical rank order, so that it accepts a
 * non-commutative operator; 0 if it needs commutativity or is unsupported. */
REDCOLL_API int redcoll_algo_is_rank_ordered(redcoll_coll coll, redcoll_algo a);
/* 1 if algorithm a of coll gives every rank the same bits for any dtype
 * and operator (AUTO always); 0 if its ranks may combine operands in
 * different orders (AUTO uses such an algorithm for floating point only in
 * REDCOLL_RESULTS_FAST mode) or it is unsupported. */
REDCOLL_API int redcoll_algo_is_rank_identical(redcoll_coll coll, redcoll_algo a);

/* ------------------------------------------------------------------------ */
/* Communicator.                                                            */
/* ------------------------------------------------------------------------ */

typedef struct redcoll_comm redcoll_comm;
struct redcoll_transport_ops; /* include/redcoll/transport.h */

/* Creates the communicator of one rank over a transport.  ops is checked
 * (required members present, known version); impl is the transport's state.
 * Ownership of impl passes to the communicator only when this call returns
 * REDCOLL_OK: redcoll_comm_destroy then calls ops->destroy(impl).  On any
 * failure impl is still the caller's and ops->destroy has not been called.
 * Returns REDCOLL_EINVAL for size < 1, rank outside [0, size), a NULL out,
 * an incomplete ops, or a malformed REDCOLL_ALGO_<COLL> or REDCOLL_RESULTS
 * in the environment (logged); REDCOLL_ENOMEM. */
REDCOLL_API int redcoll_comm_create(const struct redcoll_transport_ops *ops, void *impl, int rank,
                                    int size, redcoll_comm **out);
REDCOLL_API int redcoll_comm_rank(const redcoll_comm *c);
REDCOLL_API int redcoll_comm_size(const redcoll_comm *c);
/* Frees the communicator and its transport state; NULL is ignored. */
REDCOLL_API void redcoll_comm_destroy(redcoll_comm *c);

/* Forces algorithm algo for collective coll (REDCOLL_ALGO_AUTO restores the
 * automatic choice).  Every rank must make the same choice.  Returns
 * REDCOLL_ENOTSUP if coll does not implement algo, REDCOLL_EINVAL for values
 * out of range.  A forced algorithm that needs a commutative operator makes
 * collectives with a non-commutative one return REDCOLL_ENOTSUP. */
REDCOLL_API int redcoll_comm_set_algorithm(redcoll_comm *c, redcoll_coll coll, redcoll_algo algo);
REDCOLL_API redcoll_algo redcoll_comm_get_algorithm(const redcoll_comm *c, redcoll_coll coll);

/* The block-size threshold b in bytes of the butterfly algorithms: blocks
 * larger than b are halved, smaller ones are exchanged whole.  Default
 * REDCOLL_DEFAULT_THRESHOLD.  Every rank must set the same value. */
#define REDCOLL_DEFAULT_THRESHOLD ((size_t)8192)
REDCOLL_API int redcoll_comm_set_threshold(redcoll_comm *c, size_t bytes);
REDCOLL_API size_t redcoll_comm_get_threshold(const redcoll_comm *c);

/* The segment of piped steps, in bytes: a step that receives a block and
 * reduces it (the reduce-scatter steps of ring, the root of linear reduce)
 * cuts a block of at least two segments into segments and, on a transport
 * that posts exchanges (TCP, shared memory, push, the simulator), reduces
 * each while the next is on its way, so that a slow operator costs about
 * max(transfer, reduction) instead of their sum.  Every segment is a
 * message (one more alpha each).  0 (REDCOLL_DEFAULT_SEGMENT): whole
 * blocks; on loopback and shared memory with the built-in operators the
 * pieces cost more than the overlap saves in ring (docs/tuning.md).  Unless
 * set here, REDCOLL_SEGMENT_KB (KiB) at creation.  Until one of the two
 * sets it (0 included), the root of linear reduce (also inside linear
 * allreduce and reduce-scatter) takes the transport's pieces
 * (redcoll_transport_info.segment: 1 MiB over TCP unless every rank is on
 * one host, the simulator's mock.segment, whole elsewhere), and AUTO prices
 * them.  The phases of a two-level collective take the communicator's
 * setting too.  get returns what was set (0 unset).  Every rank must set
 * the same value. */
#define REDCOLL_DEFAULT_SEGMENT ((size_t)0)
REDCOLL_API int redcoll_comm_set_segment(redcoll_comm *c, size_t bytes);
REDCOLL_API size_t redcoll_comm_get_segment(const redcoll_comm *c);

/* The first error the communicator saw (it is then broken and every later
 * collective returns it at once), or REDCOLL_OK. */
REDCOLL_API int redcoll_comm_error(const redcoll_comm *c);

/* Gives up on the communicator: it is broken from now on (every later
 * collective returns REDCOLL_EABORTED, or the first error it had already
 * seen), and its transport tells every peer, whose collectives blocked now
 * or entered later on that group return REDCOLL_EABORTED promptly.  Only
 * this communicator is broken, not others over the same transport.  Call
 * it from the thread that uses the communicator, outside a collective; on
 * a transport with REDCOLL_TRANSPORT_CAP_THREADS (threads) also from any
 * other thread, while a collective on it waits (it then returns
 * REDCOLL_EABORTED on every rank).  A
 * communicator that is already broken has told its peers already; calling
 * again does nothing.  Returns REDCOLL_EINVAL for NULL, REDCOLL_ENOTSUP if
 * the transport has no abort (the communicator is still broken locally,
 * but the peers are not told), else REDCOLL_OK.  docs/reliability.md. */
REDCOLL_API int redcoll_comm_abort(redcoll_comm *c);

/* ---- communicators from communicators (docs/communicators.md) ---------- */
/* A new communicator over the same transport object as c, with channels of
 * its own there: its messages never meet those of c or of any other
 * communicator, and its sequence numbers, algorithm choices, deadline,
 * results mode and error state are its own (starting from the defaults and
 * the environment, as redcoll_comm_create).  Any depth of nesting.  A
 * child holds a reference on the transport: the communicators can be
 * destroyed in any order, and the last one destroys the transport.  A
 * failure or abort on one breaks only that one; a lost peer breaks every
 * communicator that holds it, as each waits for it.  These need a
 * transport with channels (REDCOLL_TRANSPORT_CAP_CHANNELS: every bundled
 * transport has them); on one of yours without, they return
 * REDCOLL_ENOTSUP.  On failure *out
 * is NULL and c is as before unless the failure broke it (a lost peer). */

/* The color of a rank that wants no communicator from redcoll_comm_split. */
#define REDCOLL_UNDEFINED (-32766)

/* A copy of c: same ranks, new channels.  Collective over c. */
REDCOLL_API int redcoll_comm_dup(redcoll_comm *c, redcoll_comm **out);
/* Collective over c: the ranks that give the same color (>= 0) form one
 * communicator, ordered by key, then by rank in c; REDCOLL_UNDEFINED gives
 * *out = NULL.  REDCOLL_EINVAL for another negative color. */
REDCOLL_API int redcoll_comm_split(redcoll_comm *c, int color, int key, redcoll_comm **out);
/* Collective over the n members only, each passing the same list: ranks[i]
 * (a rank of c) becomes rank i of the new communicator.  REDCOLL_EINVAL if
 * the caller is not in the list, a rank is out of range or repeated. */
REDCOLL_API int redcoll_comm_create_group(redcoll_comm *c, const int *ranks, int n,
                                          redcoll_comm **out);

/* ---- point-to-point (docs/communicators.md) ----------------------------- */
/* Messages between two ranks of a communicator, in the order sent, with a
 * user tag that the receive must name (another tag or length is
 * REDCOLL_EMISMATCH, as in a collective), exact lengths (0 allowed), the
 * communicator's deadline, and its statuses: a failure breaks it.  dst and
 * src are ranks of c other than the caller's.  On a transport with
 * channels they never meet the messages of collectives; on one without,
 * they share one order with them between two ranks, so receive a message
 * before the next collective that connects the same two ranks. */
REDCOLL_API int redcoll_send(redcoll_comm *c, int dst, uint32_t tag, const void *buf, size_t len);
REDCOLL_API int redcoll_recv(redcoll_comm *c, int src, uint32_t tag, void *buf, size_t len);
/* Both at once, progressing together (dst and src may differ). */
REDCOLL_API int redcoll_sendrecv(redcoll_comm *c, int dst, uint32_t stag, const void *sbuf,
                                 size_t slen, int src, uint32_t rtag, void *rbuf, size_t rlen);

/* A transport's own bound on one wait (threads and TCP: their
 * configuration's wait_timeout_ms, redcoll_tcp_comm_set_wait_timeout), the
 * same everywhere: milliseconds; 0 means the default (REDCOLL_TIMEOUT_MS
 * when the transport reads the environment, else the transport's own);
 * REDCOLL_WAIT_FOREVER means no bound.  In the environment,
 * REDCOLL_TIMEOUT_MS is a number of milliseconds, 0 for no bound.  It is
 * not the deadline of a collective (redcoll_comm_set_deadline), which
 * bounds a whole collective and applies on top of it. */
#define REDCOLL_WAIT_FOREVER UINT64_MAX

/* Deadline of each collective: one that has not finished ms milliseconds
 * after it started on this rank returns REDCOLL_ETIMEDOUT (the
 * communicator is then broken and its peers aborted), and the log names
 * the peer it was waiting for.  0, the default, means no deadline.  The
 * simulator measures it on its virtual clock, one time unit per
 * millisecond (docs/reliability.md).  The core measures it on the
 * transport's clock and passes it with every call (transport version 3);
 * a version 2 transport measures it itself (its set_timeout member).
 * Returns REDCOLL_EINVAL for NULL, REDCOLL_ENOTSUP for a version 1
 * transport or a version 2 one without set_timeout.  Distinct from the
 * bound on one wait that threads and TCP keep (their configuration's
 * timeout_ms, redcoll_tcp_comm_set_wait_timeout).  Names: a setting has a
 * set_ and a get_ function; a read-only property (rank, size, error,
 * last_algorithm) is named by its noun; a yes/no question is _is_. */
REDCOLL_API int redcoll_comm_set_deadline(redcoll_comm *c, uint64_t ms);
REDCOLL_API uint64_t redcoll_comm_get_deadline(const redcoll_comm *c);

/* Whether every rank must get the same bits.  REDCOLL_RESULTS_IDENTICAL,
 * the default: every collective returns bitwise identical results on every
 * rank, for every dtype and operator; AUTO never picks an algorithm whose
 * ranks combine operands in different orders (the `identical` column of
 * docs/algorithms/README.md) for a floating-point dtype or a user operator.
 * REDCOLL_RESULTS_FAST lets AUTO pick those too when the cost model says
 * they are faster: floating-point results may then differ between ranks in
 * the last bits (and more where terms cancel).  Integer dtypes with the
 * built-in operators are exact in any order and identical either way.  A
 * forced algorithm (redcoll_comm_set_algorithm, REDCOLL_ALGO_<COLL>) runs as
 * forced in both modes.  Unless set here, REDCOLL_RESULTS=identical|fast
 * from the environment decides at creation.  Every rank must use the same
 * setting.  REDCOLL_EINVAL for NULL or a value out of range. */
typedef enum redcoll_results {
  REDCOLL_RESULTS_IDENTICAL = 0,
  REDCOLL_RESULTS_FAST = 1
} redcoll_results;
REDCOLL_API int redcoll_comm_set_results(redcoll_comm *c, redcoll_results mode);
REDCOLL_API redcoll_results redcoll_comm_get_results(const redcoll_comm *c);

/* The algorithm the last collective on this communicator ran (the choice
 * AUTO made, or the forced one); REDCOLL_ALGO_AUTO before the first call. */
REDCOLL_API redcoll_algo redcoll_comm_last_algorithm(const redcoll_comm *c);

/* The cost model REDCOLL_ALGO_AUTO chooses by (docs/tuning.md): alpha
 * seconds per message, beta seconds per byte sent, gamma seconds per byte
 * reduced.  AUTO predicts the time of every algorithm that accepts the
 * operator from these, p, the size and the threshold, and runs the
 * cheapest; every rank must use the same values.  Unless set here, the
 * model comes from REDCOLL_COST_MODEL="alpha,beta,gamma", else from the
 * entry for the transport in the file named by REDCOLL_TUNING_FILE, else
 * from the transport's defaults.  REDCOLL_EINVAL for NULL, negative or
 * non-finite values, or (get) a malformed REDCOLL_COST_MODEL or tuning
 * file.  On a communicator with hosts these are the costs between hosts;
 * those inside a host (the two-level model, docs/hier.md) come from
 * REDCOLL_COST_MODEL="alpha,beta,gamma,local_alpha,local_beta" or a tuning
 * file entry of five numbers, else from the transport; set here, they are
 * the transport's again. */
REDCOLL_API int redcoll_comm_set_cost_model(redcoll_comm *c, double alpha, double beta, double gamma);
REDCOLL_API int redcoll_comm_get_cost_model(redcoll_comm *c, double *alpha, double *beta,
                                            double *gamma);
/* The costs inside one of the communicator's hosts that AUTO's two-level
 * model uses (docs/hier.md), in seconds and seconds per byte: the five
 * numbers' last two (REDCOLL_COST_MODEL, a tuning file), else what the
 * self-calibration measured between ranks of one host, else the
 * transport's (its info.local_alpha and local_beta), else a tenth of the
 * network's.  Either pointer may be NULL.  REDCOLL_EINVAL as
 * redcoll_comm_get_cost_model. */
REDCOLL_API int redcoll_comm_get_local_cost_model(redcoll_comm *c, double *alpha, double *beta);
/* Sets the cost model from the entry of tuning file path (written by
 * redcoll-tune) for the communicator's transport, or its "default" entry,
 * with the entry's intra-host alpha and beta if it has them.
 * REDCOLL_EINVAL if the file is unreadable, malformed or has no entry that
 * applies. */
REDCOLL_API int redcoll_comm_load_tuning(redcoll_comm *c, const char *path);

/* Self-calibration.  At the first collective that lets AUTO choose, a
 * communicator measures its cost model (a millisecond or two of ring
 * exchanges of 8 B and 256 KiB and local reductions, the fastest of a few
 * of each) and every rank takes the largest measurement, so that AUTO is
 * right on a network it has never seen and decides alike on every rank.
 * Not when the model was set (redcoll_comm_set_cost_model,
 * redcoll_comm_load_tuning, REDCOLL_COST_MODEL, REDCOLL_TUNING_FILE), nor
 * on the simulator (its model is exact), nor with REDCOLL_CALIBRATE=0.
 * redcoll_comm_set_calibration(c, 0) switches it off for c, (c, 1) has it
 * measure again at the next such collective; redcoll_comm_calibrate
 * measures now (collective: every rank calls it) and replaces any model.
 * redcoll_comm_get_cost_model shows the result. */
REDCOLL_API int redcoll_comm_calibrate(redcoll_comm *c);
REDCOLL_API int redcoll_comm_set_calibration(redcoll_comm *c, int on);
/* How many ranks share one CPU on the busiest host (f); every rank must
 * use the same value.  f <= 1 (the default): no CPU is shared.  With f > 1
 * a round waits for the f ranks of a CPU to take turns, so AUTO charges
 * alpha f per round, and the p-1 messages of a linear allreduce or
 * reduce's phases overlap: their start-up is charged once per phase (their
 * volume and reductions stay serial at the root).  That makes AUTO choose
 * linear for small vectors when f is large (docs/tuning.md).  Unless set
 * here: REDCOLL_RANKS_PER_CPU from the environment, else what the
 * transport found: shared memory, MPI, and TCP with its shared-memory
 * path count a host's ranks over the CPUs their affinity masks allow
 * together; TCP without it, p / rank 0's online CPUs when every registered
 * address is on rank 0's host, sent with the address table so that all
 * ranks agree; otherwise 1 (docs/tuning.md).  REDCOLL_EINVAL for NULL,
 * a negative or non-finite value, or (get) a malformed
 * REDCOLL_RANKS_PER_CPU, which is logged and then counts as unset. */
REDCOLL_API int redcoll_comm_set_ranks_per_cpu(redcoll_comm *c, double ranks_per_cpu);
REDCOLL_API int redcoll_comm_get_ranks_per_cpu(redcoll_comm *c, double *ranks_per_cpu);
/* The model's predicted time of algo for a collective of count elements of
 * elem_size bytes (count as in the collective's call) on p ranks with
 * threshold b, root 0; REDCOLL_ENOTSUP if (coll, algo) has no cost formula.
 * And the algorithm AUTO would choose for it; op_flags is a bitwise or of
 * REDCOLL_CHOOSE_COMMUTATIVE (the operator is commutative) and
 * REDCOLL_CHOOSE_RANK_DEPENDENT (results that differ between ranks in the
 * last bits are acceptable: an integer dtype with a built-in operator, or
 * REDCOLL_RESULTS_FAST).  For tools and tests; the communicator is not
 * needed, and so neither is a transport's segment (transport.h): both
 * price the root of linear whole, where AUTO on a TCP communicator prices
 * TCP's pieces. */
#define REDCOLL_CHOOSE_COMMUTATIVE 1
#define REDCOLL_CHOOSE_RANK_DEPENDENT 2
REDCOLL_API int redcoll_cost_predict(redcoll_coll coll, redcoll_algo algo, int p, size_t count,
                                     size_t elem_size, size_t threshold, double alpha, double beta,
                                     double gamma, double *time);
REDCOLL_API redcoll_algo redcoll_cost_choose(redcoll_coll coll, int p, size_t count,
                                             size_t elem_size, size_t threshold, int op_flags,
                                             double alpha, double beta, double gamma);

/* The body of one rank, as the bundled runners (redcoll_mock_run,
 * redcoll_threads_run) call it: returns REDCOLL_OK or a status. */
typedef int (*redcoll_rank_main)(redcoll_comm *comm, void *arg);

/* ------------------------------------------------------------------------ */
/* Collectives.                                                             */
/*                                                                          */
/* All ranks call a collective with the same count, dtype, op and root.     */
/* Arguments are checked before anything is sent: a NULL buffer with count  */
/* > 0, count * size overflowing, a root out of range, overlapping send and */
/* receive buffers (below), a user op with a built-in dtype or a built-in   */
/* op with REDCOLL_CUSTOM, and a (dtype, op) pair that makes no sense all   */
/* return REDCOLL_EINVAL with nothing sent and nothing written, and print   */
/* one line naming the rank, the call and the check that failed (redcoll    */
/* error: rank 1: reduce count 16 dtype float64 root 9 refused:             */
/* REDCOLL_EINVAL (invalid argument): the root is not a rank of the         */
/* communicator).                                                           */
/* Buffers, one rule for every collective: the rank's own input placed      */
/* exactly where the in-place layout of the collective keeps it is in       */
/* place, the same as REDCOLL_IN_PLACE (allreduce, reduce at the root and   */
/* the reduce-scatters: sendbuf == recvbuf; allgather: sendbuf == recvbuf + */
/* rank * count elements; allgatherv: recvbuf + the counts of the ranks     */
/* before; gather at the root: recvbuf + root * count; scatter at the root: */
/* recvbuf == sendbuf + root * count).  Any other overlap of the bytes a    */
/* rank reads and writes, sendbuf == recvbuf off those positions included,  */
/* is REDCOLL_EINVAL, and so is REDCOLL_IN_PLACE in any other slot (in both */
/* slots at once, too) or on a rank where the collective has no in-place    */
/* form.  Buffers may have any alignment.                                   */
/* Results: by default every rank gets bitwise identical results, for every */
/* dtype and operator (redcoll_comm_set_results).  Algorithms that accept   */
/* non-commutative operators compute v_0 (+) v_1 (+) ... (+) v_{p-1} in     */
/* rank order with one bracketing for every element.                        */
/* Statuses of every collective: REDCOLL_EINVAL (the checks above, nothing  */
/* sent); REDCOLL_ENOTSUP (the forced algorithm does not implement the      */
/* collective or needs a commutative operator); REDCOLL_ENOMEM (scratch);   */
/* from the transport REDCOLL_ETRANSPORT (a peer is gone),                  */
/* REDCOLL_ETIMEDOUT (a peer stayed silent past the timeout),               */
/* REDCOLL_EABORTED (a peer aborted), REDCOLL_EMISMATCH (ranks called       */
/* different collectives, counts, types, operators or roots, where their    */
/* messages meet, and over TCP, shared memory, threads and push also where  */
/* they never meet, as with two types for which AUTO picks different        */
/* algorithms; over MPI and between the processes of a hier world those     */
/* end at the timeout or deadline: docs/reliability.md), REDCOLL_EPROTO (a  */
/* malformed frame), REDCOLL_EDEADLOCK (simulator only).  After any of      */
/* these but EINVAL and ENOTSUP the communicator is broken.  A call with    */
/* count 0 or on one rank returns REDCOLL_OK after the argument checks      */
/* without choosing an algorithm or communicating.                          */
/* ------------------------------------------------------------------------ */

#define REDCOLL_IN_PLACE ((const void *)1)

/* Every rank gets the reduction of all ranks' count elements in recvbuf. */
REDCOLL_API int redcoll_allreduce(redcoll_comm *c, const void *sendbuf, void *recvbuf, size_t count,
                                  redcoll_dtype dt, const redcoll_op *op);
/* Rank root gets the reduction in recvbuf; recvbuf is ignored (may be NULL)
 * on other ranks.  REDCOLL_IN_PLACE only at the root. */
REDCOLL_API int redcoll_reduce(redcoll_comm *c, const void *sendbuf, void *recvbuf, size_t count,
                               redcoll_dtype dt, const redcoll_op *op, int root);
/* sendbuf holds p * recvcount elements; rank i gets block i of the
 * reduction.  With REDCOLL_IN_PLACE the input is recvbuf (p * recvcount
 * elements) and the result lands in its first recvcount elements. */
REDCOLL_API int redcoll_reduce_scatter_block(redcoll_comm *c, const void *sendbuf, void *recvbuf,
                                             size_t recvcount, redcoll_dtype dt,
                                             const redcoll_op *op);
/* As above with block i of recvcounts[i] elements. */
REDCOLL_API int redcoll_reduce_scatter(redcoll_comm *c, const void *sendbuf, void *recvbuf,
                                       const size_t *recvcounts, redcoll_dtype dt,
                                       const redcoll_op *op);
/* recvbuf gets p blocks of count elements, block i from rank i.  With
 * REDCOLL_IN_PLACE a rank's own block is already in place in recvbuf. */
REDCOLL_API int redcoll_allgather(redcoll_comm *c, const void *sendbuf, void *recvbuf, size_t count,
                                  redcoll_dtype dt);
REDCOLL_API int redcoll_allgatherv(redcoll_comm *c, const void *sendbuf, size_t sendcount,
                                   void *recvbuf, const size_t *recvcounts, redcoll_dtype dt);
/* Rank root gets p blocks of count elements in recvbuf, block i from rank
 * i; recvbuf is ignored off the root.  REDCOLL_IN_PLACE as sendbuf only at
 * the root: its block is already at recvbuf + root * count elements. */
REDCOLL_API int redcoll_gather(redcoll_comm *c, const void *sendbuf, void *recvbuf, size_t count,
                               redcoll_dtype dt, int root);
/* Rank i gets block i (count elements) of the root's sendbuf, which holds p
 * blocks; sendbuf is ignored off the root.  REDCOLL_IN_PLACE as recvbuf
 * (cast: (void *)REDCOLL_IN_PLACE) only at the root: its block stays where
 * it is in sendbuf. */
REDCOLL_API int redcoll_scatter(redcoll_comm *c, const void *sendbuf, void *recvbuf, size_t count,
                                redcoll_dtype dt, int root);
/* buf of root is copied to buf of every rank. */
REDCOLL_API int redcoll_bcast(redcoll_comm *c, void *buf, size_t count, redcoll_dtype dt, int root);
/* Returns once every rank has entered the barrier. */
REDCOLL_API int redcoll_barrier(redcoll_comm *c);

/* ---- prefix reductions (docs/algorithms/scan.md) ----------------------- */
/* Operands combine in rank order (lower ranks on the left), so a
 * non-commutative operator is fine with every algorithm.  Each rank's
 * result is its own: ranks may bracket differently (floating-point prefixes
 * need not equal a sequential left-to-right sum in the last bits), but the
 * total of redcoll_exscan_total is computed once and is bitwise identical
 * on every rank.  REDCOLL_IN_PLACE as sendbuf: the input is recvbuf. */

/* Inclusive prefix: rank i gets v_0 (+) v_1 (+) ... (+) v_i in recvbuf. */
REDCOLL_API int redcoll_scan(redcoll_comm *c, const void *sendbuf, void *recvbuf, size_t count,
                             redcoll_dtype dt, const redcoll_op *op);
/* Exclusive prefix: rank i > 0 gets v_0 (+) ... (+) v_{i-1} in recvbuf;
 * rank 0's recvbuf is left unchanged (it must still be a valid buffer of
 * count elements; in place it keeps v_0). */
REDCOLL_API int redcoll_exscan(redcoll_comm *c, const void *sendbuf, void *recvbuf, size_t count,
                               redcoll_dtype dt, const redcoll_op *op);
/* redcoll_exscan and, in one collective, the total v_0 (+) ... (+)
 * v_{p-1} in total on every rank, bitwise identical everywhere.  total is
 * count elements that overlap neither sendbuf nor recvbuf (REDCOLL_EINVAL
 * otherwise, and for REDCOLL_IN_PLACE or NULL as total). */
REDCOLL_API int redcoll_exscan_total(redcoll_comm *c, const void *sendbuf, void *recvbuf,
                                     void *total, size_t count, redcoll_dtype dt,
                                     const redcoll_op *op);

/* ---- personalised exchange (docs/algorithms/alltoall.md) -------------- */
/* Block j (count elements) of rank i's sendbuf goes to block i of rank j's
 * recvbuf; both buffers hold p blocks.  REDCOLL_IN_PLACE as sendbuf: the
 * blocks to send are in recvbuf, which is overwritten. */
REDCOLL_API int redcoll_alltoall(redcoll_comm *c, const void *sendbuf, void *recvbuf, size_t count,
                                 redcoll_dtype dt);
/* As redcoll_alltoall with blocks of any size at any place: rank i sends
 * sendcounts[j] elements from sendbuf + sdispls[j] elements to rank j, and
 * receives recvcounts[j] elements from rank j at recvbuf + rdispls[j]
 * elements; sendcounts[j] of rank i must equal recvcounts[i] of rank j
 * (another length is REDCOLL_EMISMATCH; for i = j, which the rank can
 * check itself, REDCOLL_EINVAL).  Zero counts are fine anywhere,
 * also all of a rank's.  The four arrays have p entries.  No in-place form
 * (REDCOLL_IN_PLACE is REDCOLL_EINVAL); the bytes spanned by the send
 * blocks must not overlap those spanned by the receive blocks, and receive
 * blocks must not overlap each other (not checked). */
REDCOLL_API int redcoll_alltoallv(redcoll_comm *c, const void *sendbuf, const size_t *sendcounts,
                                  const size_t *sdispls, void *recvbuf, const size_t *recvcounts,
                                  const size_t *rdispls, redcoll_dtype dt);

/* ---- rooted collectives with blocks of any size --------------------------- */
/* recvcounts (gatherv) and sendcounts (scatterv) have p entries and must
 * be passed, the same, on every rank: the binomial tree forwards the blocks
 * of whole subtrees, so every rank needs their sizes.  displs (elements)
 * is significant at the root only (may be NULL elsewhere): block i sits at
 * buf + displs[i] elements; the root's blocks must not overlap each other
 * (not checked). */

/* Rank root gets rank i's sendcount elements (sendcount must equal
 * recvcounts[i]) at recvbuf + displs[i].  recvbuf is ignored off the root.
 * REDCOLL_IN_PLACE as sendbuf only at the root: its block is already at
 * recvbuf + displs[root]. */
REDCOLL_API int redcoll_gatherv(redcoll_comm *c, const void *sendbuf, size_t sendcount,
                                void *recvbuf, const size_t *recvcounts, const size_t *displs,
                                redcoll_dtype dt, int root);
/* Rank i gets sendcounts[i] elements (recvcount must equal it) from the
 * root's sendbuf + displs[i].  sendbuf is ignored off the root.
 * REDCOLL_IN_PLACE as recvbuf (cast: (void *)REDCOLL_IN_PLACE) only at the
 * root: its block stays in sendbuf. */
REDCOLL_API int redcoll_scatterv(redcoll_comm *c, const void *sendbuf, const size_t *sendcounts,
                                 const size_t *displs, void *recvbuf, size_t recvcount,
                                 redcoll_dtype dt, int root);

/* redcoll_allgatherv with the blocks anywhere in recvbuf: rank i's
 * sendcount elements (recvcounts[i]) land at recvbuf + displs[i] elements
 * on every rank; recvcounts and displs (p entries) are significant on every
 * rank, and bytes between the blocks are not written.  REDCOLL_IN_PLACE as
 * sendbuf: the rank's own block is already at recvbuf + displs[rank].
 * (redcoll_allgatherv has no displacements and keeps its signature: this is
 * its general form.)  Collective name "allgatherv_displs". */
REDCOLL_API int redcoll_allgatherv_displs(redcoll_comm *c, const void *sendbuf, size_t sendcount,
                                          void *recvbuf, const size_t *recvcounts,
                                          const size_t *displs, redcoll_dtype dt);

/* ------------------------------------------------------------------------ */
/* Nonblocking collectives.                                                 */
/*                                                                          */
/* Each collective has an i-form with the same arguments and the same       */
/* checks, then redcoll_request **req: it starts the collective and returns */
/* at once (REDCOLL_OK and *req set), or returns the checks' status with    */
/* nothing started and *req NULL (req itself NULL: REDCOLL_EINVAL, not a    */
/* blocking call).  The buffers, and the counts and displs                  */
/* arrays, must stay untouched until the request has finished.  Many        */
/* requests may be outstanding on one communicator: they run one after      */
/* another in the order they were started, which must be the same on every  */
/* rank (as for blocking calls), and finish in that order; a blocking       */
/* collective on the communicator first finishes those before it.           */
/* Progress: a request moves on inside redcoll_test, redcoll_wait,          */
/* redcoll_waitall and redcoll_comm_progress on its communicator (or on     */
/* another communicator of the same transport object), and, depending on    */
/* the transport, from its own thread, the embedder's event loop or a       */
/* delivery (docs/embedding.md).  On a transport without posted exchanges   */
/* (transport.h, version 4) the collective runs to its end inside the call  */
/* that starts it.  Memory: a request is 176 bytes (x86-64); each          */
/* communicator with a request running holds one stack for it               */
/* (REDCOLL_NB_STACK_KB, default 256 KiB of address space, of which only    */
/* the pages touched are resident: a few KiB).  Local work: on a transport  */
/* that takes yields (REDCOLL_TRANSPORT_CAP_YIELD: TCP) reductions and      */
/* copies run in slices of REDCOLL_NB_SLICE_KB (default 256; 0: in one go), */
/* with a turn of whatever drives the request between two slices; the bits  */
/* are those of the blocking call.                                          */
/* ------------------------------------------------------------------------ */

typedef struct redcoll_request redcoll_request;

/* Called once when the request's collective finishes, with its status,
 * inside whichever call finished it (redcoll_test, redcoll_wait,
 * redcoll_comm_progress, a delivery, an event-loop callback).  It may call
 * redcoll_wait(req), which then returns at once and frees req, and start
 * new collectives; it must not wait for another request. */
typedef void (*redcoll_request_fn)(redcoll_request *req, int status, void *arg);

/* Sets req's callback; if the collective has finished already, calls it at
 * once.  REDCOLL_EINVAL if req is NULL or has a callback. */
REDCOLL_API int redcoll_request_set_callback(redcoll_request *req, redcoll_request_fn fn,
                                             void *arg);

/* Moves the request on without waiting.  *done = 1: it has finished, req
 * is freed and the collective's status is returned; *done = 0: REDCOLL_OK,
 * test again later. */
REDCOLL_API int redcoll_test(redcoll_request *req, int *done);
/* Waits for the request to finish, frees it and returns the collective's
 * status.  NULL: REDCOLL_OK. */
REDCOLL_API int redcoll_wait(redcoll_request *req);
/* Waits for all n (NULL entries are skipped), frees them, sets each entry
 * to NULL and returns the first error in array order, or REDCOLL_OK. */
REDCOLL_API int redcoll_waitall(redcoll_request **reqs, size_t n);

/* Moves every outstanding request of c's transport object on, without
 * waiting; returns REDCOLL_OK or the transport's error. */
REDCOLL_API int redcoll_comm_progress(redcoll_comm *c);
/* Switches a background thread on (on = 1) or off (0) that moves the
 * nonblocking collectives of c's transport object on while none of the
 * program's threads is inside redcoll_test or redcoll_wait: a collective
 * then overlaps the program's computation.  It sleeps while no request is
 * outstanding.  REDCOLL_ENOTSUP on a transport without posted exchanges and
 * threads (transport.h: post, REDCOLL_TRANSPORT_CAP_THREADS); off at
 * creation; the last communicator's destruction stops it. */
REDCOLL_API int redcoll_comm_set_progress_thread(redcoll_comm *c, int on);

/* A file descriptor that becomes readable when redcoll_comm_progress has
 * work to do, for a program that waits in its own poll or epoll; -1 if the
 * transport has none (then call redcoll_comm_progress from a timer, or
 * redcoll_wait).  The descriptor stays the transport's. */
REDCOLL_API int redcoll_comm_fd(redcoll_comm *c);

REDCOLL_API int redcoll_iallreduce(redcoll_comm *c, const void *sendbuf, void *recvbuf,
                                   size_t count, redcoll_dtype dt, const redcoll_op *op,
                                   redcoll_request **req);
REDCOLL_API int redcoll_ireduce(redcoll_comm *c, const void *sendbuf, void *recvbuf, size_t count,
                                redcoll_dtype dt, const redcoll_op *op, int root,
                                redcoll_request **req);
REDCOLL_API int redcoll_ireduce_scatter_block(redcoll_comm *c, const void *sendbuf, void *recvbuf,
                                              size_t recvcount, redcoll_dtype dt,
                                              const redcoll_op *op, redcoll_request **req);
REDCOLL_API int redcoll_ireduce_scatter(redcoll_comm *c, const void *sendbuf, void *recvbuf,
                                        const size_t *recvcounts, redcoll_dtype dt,
                                        const redcoll_op *op, redcoll_request **req);
REDCOLL_API int redcoll_iallgather(redcoll_comm *c, const void *sendbuf, void *recvbuf,
                                   size_t count, redcoll_dtype dt, redcoll_request **req);
REDCOLL_API int redcoll_iallgatherv(redcoll_comm *c, const void *sendbuf, size_t sendcount,
                                    void *recvbuf, const size_t *recvcounts, redcoll_dtype dt,
                                    redcoll_request **req);
REDCOLL_API int redcoll_igather(redcoll_comm *c, const void *sendbuf, void *recvbuf, size_t count,
                                redcoll_dtype dt, int root, redcoll_request **req);
REDCOLL_API int redcoll_iscatter(redcoll_comm *c, const void *sendbuf, void *recvbuf, size_t count,
                                 redcoll_dtype dt, int root, redcoll_request **req);
REDCOLL_API int redcoll_ibcast(redcoll_comm *c, void *buf, size_t count, redcoll_dtype dt,
                               int root, redcoll_request **req);
REDCOLL_API int redcoll_ibarrier(redcoll_comm *c, redcoll_request **req);
REDCOLL_API int redcoll_iscan(redcoll_comm *c, const void *sendbuf, void *recvbuf, size_t count,
                              redcoll_dtype dt, const redcoll_op *op, redcoll_request **req);
REDCOLL_API int redcoll_iexscan(redcoll_comm *c, const void *sendbuf, void *recvbuf, size_t count,
                                redcoll_dtype dt, const redcoll_op *op, redcoll_request **req);
REDCOLL_API int redcoll_iexscan_total(redcoll_comm *c, const void *sendbuf, void *recvbuf,
                                      void *total, size_t count, redcoll_dtype dt,
                                      const redcoll_op *op, redcoll_request **req);
REDCOLL_API int redcoll_ialltoall(redcoll_comm *c, const void *sendbuf, void *recvbuf,
                                  size_t count, redcoll_dtype dt, redcoll_request **req);
REDCOLL_API int redcoll_ialltoallv(redcoll_comm *c, const void *sendbuf, const size_t *sendcounts,
                                   const size_t *sdispls, void *recvbuf, const size_t *recvcounts,
                                   const size_t *rdispls, redcoll_dtype dt, redcoll_request **req);
REDCOLL_API int redcoll_igatherv(redcoll_comm *c, const void *sendbuf, size_t sendcount,
                                 void *recvbuf, const size_t *recvcounts, const size_t *displs,
                                 redcoll_dtype dt, int root, redcoll_request **req);
REDCOLL_API int redcoll_iscatterv(redcoll_comm *c, const void *sendbuf, const size_t *sendcounts,
                                  const size_t *displs, void *recvbuf, size_t recvcount,
                                  redcoll_dtype dt, int root, redcoll_request **req);
REDCOLL_API int redcoll_iallgatherv_displs(redcoll_comm *c, const void *sendbuf, size_t sendcount,
                                           void *recvbuf, const size_t *recvcounts,
                                           const size_t *displs, redcoll_dtype dt,
                                           redcoll_request **req);

#ifdef __cplusplus
}
#endif
#endif /* REDCOLL_H */
