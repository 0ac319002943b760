/*
 * Soak: thousands of random collectives on the threads transport and a few
 * dozen on TCP and on shared memory, every result checked exactly.
 *
 * A run is a sequence of worlds; a world is p ranks that call a random
 * sequence of collectives on the same communicators (this is where tag and
 * sequence bugs show).  Every call picks at random: the collective, an
 * algorithm the collective implements (or AUTO), forced with
 * redcoll_comm_set_algorithm before the call; the count (0, fewer than p,
 * not divisible by p, up to some KiB, sometimes past the butterfly
 * threshold); per-rank counts for reduce_scatter and allgatherv (zeros
 * included); the dtype; the operator; the root; in place or not; and the
 * butterfly threshold.  Operators: SUM, PROD, MIN, MAX, BAND, BOR, BXOR,
 * LAND, LOR, LXOR on the integer types; SUM, PROD, MIN and MAX on the
 * floating-point types with small integer values, so that the results are
 * exact in any order; and two user operators on REDCOLL_CUSTOM quadruples
 * of uint32: the product of 2x2 matrices modulo 65521 (not commutative,
 * only with algorithms that accept it; now and then forced onto one that
 * does not, which must refuse with REDCOLL_ENOTSUP and leave the
 * communicator usable) and a lane-wise sum (commutative).
 *
 * All choices are drawn in the main thread from the seed before a world
 * starts, so every rank makes the same ones; the reference of every
 * reduction is computed there too, sequentially in rank order.  Every rank
 * checks its own result bytewise, that nothing was written past its receive
 * buffer, that its send buffer (and a receive buffer that is not
 * significant) was left alone, which algorithm ran, and for a barrier that
 * every rank had entered it.  A failure prints the seed, the iteration, the
 * collective, the algorithm, p, the count and the rank.
 *
 * Settings:  argv[1] or REDCOLL_SOAK_SEED: the seed (decimal or 0x...);
 * REDCOLL_SOAK_ITERS: collectives on threads; REDCOLL_SOAK_TCP_ITERS:
 * collectives on TCP (0: none; TCP runs only in builds that define
 * REDCOLL_TEST_TCP, that is, with libuv); REDCOLL_SOAK_SHM_ITERS:
 * collectives on the shared-memory transport (processes; Linux builds,
 * REDCOLL_TEST_SHM); REDCOLL_SOAK_WORLD=threads:N, tcp:N or shm:N: run
 * only that world (as a failure names it), with the same
 * seed and iteration counts, to reproduce a failure faster;
 * REDCOLL_SOAK_VERBOSE: a line per world.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <time.h>

#include "redcoll/redcoll.h"
#include "redcoll/threads.h"
#include "test.h"
#ifdef REDCOLL_TEST_TCP
#include "tcp_runner.h"
#endif
#ifdef REDCOLL_TEST_SHM
#include "shm_runner.h"
#endif

#define DEFAULT_SEED 0x5eed2026u
#define DEFAULT_ITERS 4000
#define DEFAULT_TCP_ITERS 150
#define MAXP_THREADS 16
#define MAXP_TCP 6
#define MAX_BYTES 32768 /* largest buffer of one rank in one call */
#define GUARD 32
#define GUARD_BYTE 0xC3
#define JUNK_BYTE 0xA5
#define MAX_FAILED_WORLDS 5
#define MAX_PRINTS 3        /* failures printed per rank and world */
#define MAX_WORLD_PRINTS 12 /* and per world */

/* ---- random numbers ----------------------------------------------------------- */

static uint64_t mix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

typedef struct rng {
  uint64_t s;
} rng;

static uint64_t rnd(rng *g) {
  g->s += 0x9E3779B97F4A7C15ULL;
  return mix64(g->s);
}
/* Uniform in [0, n). */
static size_t rnd_below(rng *g, size_t n) { return n ? (size_t)(rnd(g) % n) : 0; }
static int chance(rng *g, int percent) { return (int)rnd_below(g, 100) < percent; }

/* ---- operators ---------------------------------------------------------------- */

enum {
  OPK_NONE = -1, /* data movement */
  OPK_SUM,
  OPK_PROD,
  OPK_MIN,
  OPK_MAX,
  OPK_BAND,
  OPK_BOR,
  OPK_BXOR,
  OPK_LAND,
  OPK_LOR,
  OPK_LXOR,
  OPK_MAT,  /* user, 2x2 matrix product mod 65521, not commutative */
  OPK_QSUM, /* user, lane-wise sum of 4 x uint32, commutative */
  OPK_COUNT
};

static const char *const op_names[OPK_COUNT] = {"sum",  "prod", "min", "max", "band", "bor",
                                                "bxor", "land", "lor", "lxor", "matmul", "qsum"};

#define MAT_MOD 65521u
static redcoll_op *op_mat, *op_qsum;
static int op_ctx_magic;
static atomic_int op_bad_ctx;

static void mat_mul(uint32_t *c, const uint32_t *a, const uint32_t *b) {
  uint64_t r0 = ((uint64_t)a[0] * b[0] + (uint64_t)a[1] * b[2]) % MAT_MOD;
  uint64_t r1 = ((uint64_t)a[0] * b[1] + (uint64_t)a[1] * b[3]) % MAT_MOD;
  uint64_t r2 = ((uint64_t)a[2] * b[0] + (uint64_t)a[3] * b[2]) % MAT_MOD;
  uint64_t r3 = ((uint64_t)a[2] * b[1] + (uint64_t)a[3] * b[3]) % MAT_MOD;
  c[0] = (uint32_t)r0;
  c[1] = (uint32_t)r1;
  c[2] = (uint32_t)r2;
  c[3] = (uint32_t)r3;
}

/* out may be left or right: each element is read whole before it is written. */
static void mat_fn(void *out, const void *left, const void *right, size_t count, void *ctx) {
  if (ctx != &op_ctx_magic) atomic_store(&op_bad_ctx, 1);
  for (size_t i = 0; i < count; i++) {
    uint32_t a[4], b[4], c[4];
    memcpy(a, (const char *)left + 16 * i, 16);
    memcpy(b, (const char *)right + 16 * i, 16);
    mat_mul(c, a, b);
    memcpy((char *)out + 16 * i, c, 16);
  }
}

static void qsum_fn(void *out, const void *left, const void *right, size_t count, void *ctx) {
  if (ctx != &op_ctx_magic) atomic_store(&op_bad_ctx, 1);
  for (size_t i = 0; i < count; i++) {
    uint32_t a[4], b[4];
    memcpy(a, (const char *)left + 16 * i, 16);
    memcpy(b, (const char *)right + 16 * i, 16);
    for (int k = 0; k < 4; k++) a[k] += b[k];
    memcpy((char *)out + 16 * i, a, 16);
  }
}

static const redcoll_op *op_of(int opk) {
  switch (opk) {
  case OPK_SUM: return REDCOLL_SUM;
  case OPK_PROD: return REDCOLL_PROD;
  case OPK_MIN: return REDCOLL_MIN;
  case OPK_MAX: return REDCOLL_MAX;
  case OPK_BAND: return REDCOLL_BAND;
  case OPK_BOR: return REDCOLL_BOR;
  case OPK_BXOR: return REDCOLL_BXOR;
  case OPK_LAND: return REDCOLL_LAND;
  case OPK_LOR: return REDCOLL_LOR;
  case OPK_LXOR: return REDCOLL_LXOR;
  case OPK_MAT: return op_mat;
  case OPK_QSUM: return op_qsum;
  default: return NULL;
  }
}

/* ---- elements ----------------------------------------------------------------- */

static int is_int_dtype(redcoll_dtype dt) { return dt <= REDCOLL_UINT64; }
static int is_signed_dtype(redcoll_dtype dt) { return is_int_dtype(dt) && dt % 2 == 0; }
static unsigned int_bits(redcoll_dtype dt) { return 8u << (dt / 2); }

static uint64_t load_uint(redcoll_dtype dt, const unsigned char *p) {
  uint64_t v = 0;
  memcpy(&v, p, int_bits(dt) / 8); /* little-endian hosts only, as the library */
  return v;
}
static void store_uint(redcoll_dtype dt, unsigned char *p, uint64_t v) {
  memcpy(p, &v, int_bits(dt) / 8);
}
static int64_t sign_extend(redcoll_dtype dt, uint64_t v) {
  unsigned sh = 64 - int_bits(dt);
  return (int64_t)(v << sh) >> sh;
}

/* binary16 and bfloat16 of the small integers and powers of two used here
 * (all normal numbers, exactly representable). */
static uint16_t half_from_double(double v) {
  if (v == 0) return 0;
  uint16_t s = v < 0 ? 0x8000 : 0;
  int e;
  double f = frexp(fabs(v), &e); /* fabs(v) = f * 2^e, f in [0.5, 1) */
  uint16_t mant = (uint16_t)((f * 2 - 1) * 1024);
  return (uint16_t)(s | (uint16_t)((e - 1 + 15) << 10) | mant);
}
static double half_to_double(uint16_t h) {
  int e = (h >> 10) & 31, m = h & 0x3ff;
  double v = e == 0 ? ldexp(m, -24) : ldexp(1024 + m, e - 25);
  return (h & 0x8000) ? -v : v;
}

static double load_flt(redcoll_dtype dt, const unsigned char *p) {
  switch (dt) {
  case REDCOLL_FLOAT16: {
    uint16_t h;
    memcpy(&h, p, 2);
    return half_to_double(h);
  }
  case REDCOLL_BFLOAT16: {
    uint16_t h;
    memcpy(&h, p, 2);
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
  }
  case REDCOLL_FLOAT32: {
    float f;
    memcpy(&f, p, 4);
    return f;
  }
  default: {
    double d;
    memcpy(&d, p, 8);
    return d;
  }
  }
}
static void store_flt(redcoll_dtype dt, unsigned char *p, double v) {
  switch (dt) {
  case REDCOLL_FLOAT16: {
    uint16_t h = half_from_double(v);
    memcpy(p, &h, 2);
    break;
  }
  case REDCOLL_BFLOAT16: {
    float f = (float)v;
    uint32_t u;
    memcpy(&u, &f, 4);
    uint16_t h = (uint16_t)(u >> 16); /* exact: small integers, powers of two */
    memcpy(p, &h, 2);
    break;
  }
  case REDCOLL_FLOAT32: {
    float f = (float)v;
    memcpy(p, &f, 4);
    break;
  }
  default:
    memcpy(p, &v, 8);
    break;
  }
}

/* ---- the plan ------------------------------------------------------------------- */

typedef struct call_plan {
  int iter; /* global iteration number */
  redcoll_coll coll;
  redcoll_algo algo;
  int opk;
  redcoll_dtype dt;
  size_t esize;
  size_t count;   /* the count argument (a block for the *gather/scatter ones) */
  size_t *counts; /* p entries: reduce_scatter and allgatherv */
  size_t total;   /* elements of the whole vector */
  int root, in_place, null_recv;
  size_t threshold;
  uint64_t dseed;
  int expect;         /* REDCOLL_OK or REDCOLL_ENOTSUP */
  unsigned char *ref; /* reductions: the reduction of all `total` elements */
  int barrier_no;     /* barriers: how many came before in this world */
} call_plan;

/* Shared between the ranks, also when they are processes (mmap). */
typedef struct world_shared {
  atomic_int arrivals; /* barrier entries so far */
  atomic_int failed;   /* some rank saw a failure */
  atomic_int prints;   /* failures printed */
} world_shared;

typedef struct world {
  int index, p, tcp, ncalls, first_iter;
  uint64_t seed;
  call_plan *calls;
  world_shared *sh;
} world;

static uint64_t g_seed;
static redcoll_algo algos[REDCOLL_COLL_COUNT][REDCOLL_ALGO_COUNT];
static int nalgos[REDCOLL_COLL_COUNT];
static long coverage[REDCOLL_COLL_COUNT][REDCOLL_ALGO_COUNT];

static int is_reduction(redcoll_coll c) { return c <= REDCOLL_COLL_REDUCE_SCATTER; }

/* The element i of rank r's input vector (also the junk of bcast non-roots,
 * with r offset). */
static void gen_elem(const call_plan *cp, int p, int r, size_t i, unsigned char *dst) {
  uint64_t h = mix64(cp->dseed ^ mix64((uint64_t)r * 0x100000001B3ULL + i));
  redcoll_dtype dt = cp->dt;
  if (cp->opk == OPK_NONE) {
    memcpy(dst, &h, cp->esize); /* raw bits, NaNs included: only moved */
    return;
  }
  if (cp->opk == OPK_MAT || cp->opk == OPK_QSUM) {
    uint64_t h2 = mix64(h);
    uint32_t q[4] = {(uint32_t)h, (uint32_t)(h >> 32), (uint32_t)h2, (uint32_t)(h2 >> 32)};
    if (cp->opk == OPK_MAT)
      for (int k = 0; k < 4; k++) q[k] %= MAT_MOD;
    memcpy(dst, q, 16);
    return;
  }
  if (is_int_dtype(dt)) {
    uint64_t v = h >> 8;
    switch (cp->opk) {
    case OPK_PROD: v |= 1; break; /* odd: products do not collapse to 0 */
    case OPK_LAND:
    case OPK_LOR:
    case OPK_LXOR: if ((h & 7) < 2) v = 0; break;
    case OPK_BAND: v |= h << 3 | h << 7; break; /* mostly ones: AND keeps bits */
    case OPK_BOR: v &= h >> 3 & h >> 7; break; /* mostly zeros */
    default: break;
    }
    store_uint(dt, dst, v);
    return;
  }
  double v;
  switch (cp->opk) {
  case OPK_SUM: v = (double)(int)(h % 17) - 8; break; /* |sum| <= 128 */
  case OPK_PROD: {
    /* +-1, +-2 (at most 14 twos: 2^14 fits binary16) */
    double mag = p <= 14 && (h & 2) ? 2 : 1;
    v = (h & 1) ? -mag : mag;
    break;
  }
  default: v = (double)(int)(h % 201) - 100; break;
  }
  store_flt(dt, dst, v);
}

static void ref_combine(const call_plan *cp, unsigned char *acc, const unsigned char *x) {
  redcoll_dtype dt = cp->dt;
  if (cp->opk == OPK_MAT || cp->opk == OPK_QSUM) {
    uint32_t a[4], b[4], c[4];
    memcpy(a, acc, 16);
    memcpy(b, x, 16);
    if (cp->opk == OPK_MAT) {
      mat_mul(c, a, b);
    } else {
      for (int k = 0; k < 4; k++) c[k] = a[k] + b[k];
    }
    memcpy(acc, c, 16);
    return;
  }
  if (is_int_dtype(dt)) {
    uint64_t a = load_uint(dt, acc), b = load_uint(dt, x), r = 0;
    int64_t sa = sign_extend(dt, a), sb = sign_extend(dt, b);
    int sg = is_signed_dtype(dt);
    switch (cp->opk) {
    case OPK_SUM: r = a + b; break;
    case OPK_PROD: r = a * b; break;
    case OPK_MIN: r = sg ? (sb < sa ? b : a) : (b < a ? b : a); break;
    case OPK_MAX: r = sg ? (sb > sa ? b : a) : (b > a ? b : a); break;
    case OPK_BAND: r = a & b; break;
    case OPK_BOR: r = a | b; break;
    case OPK_BXOR: r = a ^ b; break;
    case OPK_LAND: r = a != 0 && b != 0; break;
    case OPK_LOR: r = a != 0 || b != 0; break;
    case OPK_LXOR: r = (a != 0) != (b != 0); break;
    default: break;
    }
    store_uint(dt, acc, r);
    return;
  }
  double a = load_flt(dt, acc), b = load_flt(dt, x), r = a;
  switch (cp->opk) {
  case OPK_SUM: r = a + b; break;
  case OPK_PROD: r = a * b; break;
  case OPK_MIN: r = b < a ? b : a; break;
  case OPK_MAX: r = b > a ? b : a; break;
  default: break;
  }
  store_flt(dt, acc, r);
}

/* The reduction of all p ranks' inputs, in rank order. */
static int compute_ref(call_plan *cp, int p) {
  size_t es = cp->esize;
  cp->ref = malloc(cp->total * es + 1);
  if (cp->ref == NULL) return -1;
  unsigned char x[16];
  for (size_t i = 0; i < cp->total; i++) {
    unsigned char *acc = cp->ref + i * es;
    gen_elem(cp, p, 0, i, acc);
    for (int r = 1; r < p; r++) {
      gen_elem(cp, p, r, i, x);
      ref_combine(cp, acc, x);
    }
  }
  return 0;
}

/* A count of elements of es bytes: 0, small (around p), up to 2 KiB, or up
 * to `cap` bytes. */
static size_t rnd_count(rng *g, int p, size_t es, size_t cap) {
  size_t maxn = cap / es, n;
  int k = (int)rnd_below(g, 100);
  if (k < 6) n = 0;
  else if (k < 35) n = 1 + rnd_below(g, 2 * (size_t)p + 1);
  else if (k < 85) n = 1 + rnd_below(g, 2048 / es);
  else n = 1 + rnd_below(g, maxn);
  return n > maxn ? maxn : n;
}

static const redcoll_dtype float_dtypes[] = {REDCOLL_FLOAT16, REDCOLL_BFLOAT16, REDCOLL_FLOAT32,
                                             REDCOLL_FLOAT64};

static void pick_reduction_type(rng *g, call_plan *cp) {
  int k = (int)rnd_below(g, 100);
  if (k < 55) {
    cp->dt = (redcoll_dtype)rnd_below(g, 8);
    static const int int_ops[] = {OPK_SUM,  OPK_SUM,  OPK_SUM, OPK_PROD, OPK_MIN,
                                  OPK_MAX,  OPK_BAND, OPK_BOR, OPK_BXOR, OPK_BXOR,
                                  OPK_LAND, OPK_LOR,  OPK_LXOR};
    cp->opk = int_ops[rnd_below(g, sizeof int_ops / sizeof int_ops[0])];
  } else if (k < 80) {
    cp->dt = float_dtypes[rnd_below(g, 4)];
    static const int flt_ops[] = {OPK_SUM, OPK_SUM, OPK_SUM, OPK_PROD, OPK_MIN, OPK_MAX};
    cp->opk = flt_ops[rnd_below(g, sizeof flt_ops / sizeof flt_ops[0])];
  } else {
    cp->dt = REDCOLL_CUSTOM;
    cp->opk = k < 94 ? OPK_MAT : OPK_QSUM;
  }
}

/* Draws call k of world w; the reference comes later. */
static void plan_call(rng *g, const world *w, call_plan *cp) {
  int p = w->p;
  memset(cp, 0, sizeof *cp);
  cp->dseed = rnd(g);
  /* Barriers less often than the others. */
  /* allreduce and reduce have the most algorithms: more of them; barriers
   * less often. */
  static const redcoll_coll colls[] = {
      REDCOLL_COLL_ALLREDUCE,  REDCOLL_COLL_ALLREDUCE,  REDCOLL_COLL_ALLREDUCE,
      REDCOLL_COLL_ALLREDUCE,  REDCOLL_COLL_REDUCE,     REDCOLL_COLL_REDUCE,
      REDCOLL_COLL_REDUCE,     REDCOLL_COLL_REDUCE_SCATTER_BLOCK,
      REDCOLL_COLL_REDUCE_SCATTER, REDCOLL_COLL_ALLGATHER, REDCOLL_COLL_ALLGATHERV,
      REDCOLL_COLL_BCAST,      REDCOLL_COLL_GATHER,     REDCOLL_COLL_SCATTER};
  cp->coll = chance(g, 3) ? REDCOLL_COLL_BARRIER : colls[rnd_below(g, sizeof colls / sizeof colls[0])];
  cp->opk = OPK_NONE;
  if (is_reduction(cp->coll)) {
    pick_reduction_type(g, cp);
  } else {
    cp->dt = (redcoll_dtype)rnd_below(g, REDCOLL_CUSTOM);
  }
  cp->esize = cp->dt == REDCOLL_CUSTOM ? 16 : redcoll_dtype_size(cp->dt);
  cp->root = (int)rnd_below(g, (size_t)p);
  cp->in_place = chance(g, 40);
  cp->null_recv = chance(g, 50);
  cp->threshold = REDCOLL_DEFAULT_THRESHOLD;
  if (chance(g, 35)) {
    static const size_t th[] = {1, 16, 64, 100, 512, 1000, 4096};
    cp->threshold = th[rnd_below(g, sizeof th / sizeof th[0])];
  }
  size_t es = cp->esize, cap = MAX_BYTES;
  switch (cp->coll) {
  case REDCOLL_COLL_ALLREDUCE:
  case REDCOLL_COLL_REDUCE:
  case REDCOLL_COLL_BCAST:
    cp->count = rnd_count(g, p, es, cap);
    cp->total = cp->count;
    break;
  case REDCOLL_COLL_REDUCE_SCATTER_BLOCK:
  case REDCOLL_COLL_ALLGATHER:
  case REDCOLL_COLL_GATHER:
  case REDCOLL_COLL_SCATTER:
    cp->count = rnd_count(g, p, es, cap / (size_t)p);
    cp->total = cp->count * (size_t)p;
    break;
  case REDCOLL_COLL_REDUCE_SCATTER:
  case REDCOLL_COLL_ALLGATHERV: {
    cp->counts = calloc((size_t)p, sizeof *cp->counts);
    if (cp->counts == NULL) abort();
    int shape = (int)rnd_below(g, 4); /* all zero now and then; some zeros; one big */
    for (int q = 0; q < p; q++) {
      if (shape == 0 && chance(g, 70)) continue;
      if (chance(g, 20)) continue;
      cp->counts[q] = rnd_count(g, p, es, cap / (size_t)p);
    }
    if (shape == 3) cp->counts[rnd_below(g, (size_t)p)] = rnd_count(g, p, es, cap / 2);
    for (int q = 0; q < p; q++) cp->total += cp->counts[q];
    cp->count = cp->total;
    break;
  }
  default:
    cp->dt = REDCOLL_UINT8;
    cp->esize = 1;
    break;
  }
  /* The algorithm: one the collective implements, or AUTO; a commutative
   * one with the matrix product now and then, which must be refused. */
  int noncomm = cp->opk == OPK_MAT;
  redcoll_algo cands[REDCOLL_ALGO_COUNT];
  int nc = 0, nbad = 0;
  redcoll_algo bad[REDCOLL_ALGO_COUNT];
  for (int i = 0; i < nalgos[cp->coll]; i++) {
    redcoll_algo a = algos[cp->coll][i];
    if (!noncomm || redcoll_algo_is_rank_ordered(cp->coll, a)) cands[nc++] = a;
    else bad[nbad++] = a;
  }
  cp->expect = REDCOLL_OK;
  if (nbad > 0 && chance(g, 12)) {
    cp->algo = bad[rnd_below(g, (size_t)nbad)];
    int empty = cp->total == 0 || p == 1;
    cp->expect = empty ? REDCOLL_OK : REDCOLL_ENOTSUP;
  } else if (nc == 0 || chance(g, 15)) {
    cp->algo = REDCOLL_ALGO_AUTO;
  } else {
    cp->algo = cands[rnd_below(g, (size_t)nc)];
  }
}

static void free_plan(world *w) {
  for (int k = 0; w->calls != NULL && k < w->ncalls; k++) {
    free(w->calls[k].counts);
    free(w->calls[k].ref);
  }
  free(w->calls);
  w->calls = NULL;
}

/* The world's size and length come first from its generator, so that the
 * iteration numbers of later worlds do not need the whole plan. */
/* The kind of a world: 0 threads, 1 TCP, 2 shared memory. */
static const char *kind_name(int kind) { return kind == 2 ? "shm" : kind ? "tcp" : "threads"; }

static void world_head(world *w, uint64_t seed, int index, int tcp) {
  memset(w, 0, sizeof *w);
  w->index = index;
  w->tcp = tcp;
  w->seed = mix64(seed ^ mix64((uint64_t)index + (uint64_t)tcp * 0x7c9000000ULL));
  rng g = {w->seed};
  if (tcp) {
    w->p = 1 + (int)rnd_below(&g, MAXP_TCP);
    w->ncalls = 20 + (int)rnd_below(&g, 21);
  } else {
    int k = (int)rnd_below(&g, 100);
    w->p = k < 4 ? 1 : k < 65 ? 2 + (int)rnd_below(&g, 7) : 9 + (int)rnd_below(&g, 8);
    w->ncalls = 20 + (int)rnd_below(&g, 61);
  }
}

static int world_plan(world *w) {
  rng g = {mix64(w->seed ^ 0xC0115ULL)}; /* a stream of its own, apart from the head's */
  w->calls = calloc((size_t)w->ncalls, sizeof *w->calls);
  if (w->calls == NULL) return -1;
  int barriers = 0;
  for (int k = 0; k < w->ncalls; k++) {
    call_plan *cp = &w->calls[k];
    plan_call(&g, w, cp);
    cp->iter = w->first_iter + k;
    if (cp->coll == REDCOLL_COLL_BARRIER) cp->barrier_no = barriers++;
    if (is_reduction(cp->coll) && compute_ref(cp, w->p) != 0) return -1;
    coverage[cp->coll][cp->algo]++;
  }
  return 0;
}

/* ---- one rank ------------------------------------------------------------------- */

typedef struct rank_state {
  const world *w;
  int me, prints, fails;
} rank_state;

static void describe(char *buf, size_t n, const world *w, const call_plan *cp, int k) {
  char cnt[64];
  if (cp->counts != NULL) snprintf(cnt, sizeof cnt, "counts (total %zu)", cp->total);
  else snprintf(cnt, sizeof cnt, "count %zu", cp->count);
  snprintf(buf, n,
           "seed 0x%" PRIx64 " iteration %d (%s world %d, call %d of %d): %s algo %s p %d %s "
           "dtype %s op %s root %d in_place %d threshold %zu",
           g_seed, cp->iter, kind_name(w->tcp), w->index, k, w->ncalls,
           redcoll_coll_name(cp->coll), redcoll_algo_name(cp->algo), w->p, cnt,
           redcoll_dtype_name(cp->dt), cp->opk == OPK_NONE ? "none" : op_names[cp->opk], cp->root,
           cp->in_place, cp->threshold);
}

static void rank_fail(rank_state *rs, const call_plan *cp, int k, const char *fmt, ...) {
  rs->fails++;
  atomic_store(&rs->w->sh->failed, 1);
  if (rs->prints++ >= MAX_PRINTS || atomic_fetch_add(&rs->w->sh->prints, 1) >= MAX_WORLD_PRINTS)
    return;
  char head[512], what[400];
  describe(head, sizeof head, rs->w, cp, k);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  fprintf(stderr, "soak FAIL: %s: rank %d: %s\n", head, rs->me, what);
}

static unsigned char *alloc_guarded(size_t bytes) {
  unsigned char *b = malloc(bytes + GUARD);
  if (b != NULL) {
    memset(b, JUNK_BYTE, bytes);
    memset(b + bytes, GUARD_BYTE, GUARD);
  }
  return b;
}
static int guard_ok(const unsigned char *b, size_t bytes) {
  for (size_t i = 0; i < GUARD; i++)
    if (b[bytes + i] != GUARD_BYTE) return 0;
  return 1;
}

/* Compares n elements of got with want; reports the first difference. */
static int compare(rank_state *rs, const call_plan *cp, int k, const char *what,
                   const unsigned char *got, const unsigned char *want, size_t n, size_t base) {
  size_t es = cp->esize;
  if (n == 0 || memcmp(got, want, n * es) == 0) return 1;
  size_t i = 0;
  while (i < n && memcmp(got + i * es, want + i * es, es) == 0) i++;
  size_t bad = 0;
  for (size_t j = i; j < n; j++) bad += memcmp(got + j * es, want + j * es, es) != 0;
  char g[40] = "", w[40] = "";
  for (size_t b = 0; b < es && b < 16; b++) {
    snprintf(g + 2 * b, 3, "%02x", got[i * es + b]);
    snprintf(w + 2 * b, 3, "%02x", want[i * es + b]);
  }
  rank_fail(rs, cp, k, "%s: element %zu differs (got %s, want %s; %zu of %zu wrong)", what,
            base + i, g, w, bad, n);
  return 0;
}

/* Fills the expected input of rank r (elements [from, from + n) of its
 * vector) into dst. */
static void fill(const call_plan *cp, int p, int r, size_t from, size_t n, unsigned char *dst) {
  for (size_t i = 0; i < n; i++) gen_elem(cp, p, r, from + i, dst + i * cp->esize);
}

/* Runs call k; returns REDCOLL_OK to go on, else the status to stop with. */
static int run_call(redcoll_comm *c, rank_state *rs, int k) {
  const world *w = rs->w;
  const call_plan *cp = &w->calls[k];
  int me = rs->me, p = w->p, rc;
  size_t es = cp->esize;
  const redcoll_op *op = op_of(cp->opk);
  int is_root = me == cp->root;

  if ((rc = redcoll_comm_set_threshold(c, cp->threshold)) != REDCOLL_OK ||
      (rc = redcoll_comm_set_algorithm(c, cp->coll, cp->algo)) != REDCOLL_OK) {
    rank_fail(rs, cp, k, "setting threshold/algorithm returned %s", redcoll_status_name(rc));
    return rc;
  }
  redcoll_algo last_before = redcoll_comm_last_algorithm(c);

  /* Sizes in elements: what this rank sends, its receive buffer, where its
   * result lies in the whole vector and how long it is. */
  size_t in_n = 0, out_n = 0, res_off = 0, res_n = 0, before = 0;
  if (cp->counts != NULL)
    for (int q = 0; q < me; q++) before += cp->counts[q];
  switch (cp->coll) {
  case REDCOLL_COLL_ALLREDUCE:
    in_n = out_n = res_n = cp->count;
    break;
  case REDCOLL_COLL_REDUCE:
    in_n = out_n = cp->count;
    res_n = is_root ? cp->count : 0;
    break;
  case REDCOLL_COLL_REDUCE_SCATTER_BLOCK:
    in_n = cp->total;
    out_n = cp->in_place ? cp->total : cp->count;
    res_off = (size_t)me * cp->count;
    res_n = cp->count;
    break;
  case REDCOLL_COLL_REDUCE_SCATTER:
    in_n = cp->total;
    out_n = cp->in_place ? cp->total : cp->counts[me];
    res_off = before;
    res_n = cp->counts[me];
    break;
  case REDCOLL_COLL_ALLGATHER:
    in_n = cp->count;
    out_n = res_n = cp->total;
    break;
  case REDCOLL_COLL_ALLGATHERV:
    in_n = cp->counts[me];
    out_n = res_n = cp->total;
    break;
  case REDCOLL_COLL_BCAST:
    in_n = 0;
    out_n = res_n = cp->count;
    break;
  case REDCOLL_COLL_GATHER:
    in_n = cp->count;
    out_n = cp->total; /* significant at the root only */
    res_n = is_root ? cp->total : 0;
    break;
  case REDCOLL_COLL_SCATTER:
    in_n = is_root ? cp->total : 0;
    out_n = res_n = cp->count;
    res_off = (size_t)me * cp->count;
    break;
  default:
    break;
  }
  size_t inb = in_n * es, outb = out_n * es;
  unsigned char *in = alloc_guarded(inb), *orig = malloc(inb + 1), *out = alloc_guarded(outb);
  unsigned char *want = malloc(cp->total * es + 1);
  if (in == NULL || orig == NULL || out == NULL || want == NULL) {
    rank_fail(rs, cp, k, "out of memory");
    rc = REDCOLL_ENOMEM;
    goto out;
  }
  /* Inputs: a reduction's rank r holds element i of the whole vector at i;
   * the gathers' rank r holds its block; the root of bcast and scatter
   * holds the data, the other bcast ranks junk. */
  fill(cp, p, me, 0, in_n, in);
  memcpy(orig, in, inb);
  const void *sendbuf = in;
  void *recvbuf = out;
  int ip = cp->in_place;
  switch (cp->coll) {
  case REDCOLL_COLL_ALLREDUCE:
    if (ip) {
      memcpy(out, in, inb);
      sendbuf = REDCOLL_IN_PLACE;
    }
    rc = redcoll_allreduce(c, sendbuf, out, cp->count, cp->dt, op);
    break;
  case REDCOLL_COLL_REDUCE:
    if (ip && is_root) {
      memcpy(out, in, inb);
      sendbuf = REDCOLL_IN_PLACE;
    }
    if (!is_root && cp->null_recv) recvbuf = NULL;
    rc = redcoll_reduce(c, sendbuf, recvbuf, cp->count, cp->dt, op, cp->root);
    break;
  case REDCOLL_COLL_REDUCE_SCATTER_BLOCK:
    if (ip) {
      memcpy(out, in, inb);
      sendbuf = REDCOLL_IN_PLACE;
    }
    rc = redcoll_reduce_scatter_block(c, sendbuf, out, cp->count, cp->dt, op);
    break;
  case REDCOLL_COLL_REDUCE_SCATTER:
    if (ip) {
      memcpy(out, in, inb);
      sendbuf = REDCOLL_IN_PLACE;
    }
    rc = redcoll_reduce_scatter(c, sendbuf, out, cp->counts, cp->dt, op);
    break;
  case REDCOLL_COLL_ALLGATHER:
    if (ip) {
      memcpy(out + (size_t)me * inb, in, inb);
      sendbuf = REDCOLL_IN_PLACE;
    }
    rc = redcoll_allgather(c, sendbuf, out, cp->count, cp->dt);
    break;
  case REDCOLL_COLL_ALLGATHERV:
    if (ip) {
      memcpy(out + before * es, in, inb);
      sendbuf = REDCOLL_IN_PLACE;
    }
    rc = redcoll_allgatherv(c, sendbuf, in_n, out, cp->counts, cp->dt);
    break;
  case REDCOLL_COLL_BCAST:
    /* The root's data, junk elsewhere (rank + p never is a real rank). */
    fill(cp, p, is_root ? me : me + p, 0, cp->count, out);
    rc = redcoll_bcast(c, out, cp->count, cp->dt, cp->root);
    break;
  case REDCOLL_COLL_GATHER:
    if (ip && is_root) {
      memcpy(out + (size_t)me * inb, in, inb);
      sendbuf = REDCOLL_IN_PLACE;
    }
    if (!is_root && cp->null_recv) recvbuf = NULL;
    rc = redcoll_gather(c, sendbuf, recvbuf, cp->count, cp->dt, cp->root);
    break;
  case REDCOLL_COLL_SCATTER:
    if (!is_root && cp->null_recv) sendbuf = NULL;
    if (ip && is_root) recvbuf = (void *)REDCOLL_IN_PLACE;
    rc = redcoll_scatter(c, sendbuf, recvbuf, cp->count, cp->dt, cp->root);
    if (ip && is_root && rc == REDCOLL_OK) memcpy(out, in + res_off * es, res_n * es);
    break;
  case REDCOLL_COLL_BARRIER:
    atomic_fetch_add(&w->sh->arrivals, 1);
    rc = redcoll_barrier(c);
    if (rc == REDCOLL_OK) {
      int seen = atomic_load(&w->sh->arrivals);
      if (seen < p * (cp->barrier_no + 1))
        rank_fail(rs, cp, k, "left barrier %d having seen %d entries, want >= %d", cp->barrier_no,
                  seen, p * (cp->barrier_no + 1));
    }
    break;
  default:
    rc = REDCOLL_ENOTSUP;
    break;
  }

  if (rc != cp->expect) {
    /* A peer's failure reaches the others as EABORTED: stay quiet then. */
    if (!(rc == REDCOLL_EABORTED && atomic_load(&w->sh->failed)))
      rank_fail(rs, cp, k, "returned %s, want %s", redcoll_status_name(rc),
                redcoll_status_name(cp->expect));
    else
      rs->fails++;
    if (rc == REDCOLL_OK || rc == REDCOLL_ENOTSUP || rc == REDCOLL_EINVAL) rc = REDCOLL_OK;
    goto out;
  }
  if (rc != REDCOLL_OK) { /* refused as it should be; the communicator goes on */
    rc = REDCOLL_OK;
    goto out;
  }

  /* Which algorithm ran: the forced one, or one AUTO may choose. */
  int communicated = p > 1 && (cp->coll == REDCOLL_COLL_BARRIER || cp->total > 0);
  redcoll_algo last = redcoll_comm_last_algorithm(c);
  if (!communicated) {
    if (last != last_before)
      rank_fail(rs, cp, k, "a call that needs no communication ran algorithm %s",
                redcoll_algo_name(last));
  } else if (cp->algo != REDCOLL_ALGO_AUTO ? last != cp->algo
                                           : !redcoll_algo_is_supported(cp->coll, last) ||
                                                 last == REDCOLL_ALGO_AUTO ||
                                                 (cp->opk == OPK_MAT &&
                                                  !redcoll_algo_is_rank_ordered(cp->coll,
                                                                                       last))) {
    rank_fail(rs, cp, k, "ran algorithm %s", redcoll_algo_name(last));
  }

  /* Nothing past the buffers; the send buffer (and an insignificant
   * receive buffer) left alone. */
  if (!guard_ok(out, outb)) rank_fail(rs, cp, k, "wrote past the end of recvbuf (%zu bytes)", outb);
  if (!guard_ok(in, inb)) rank_fail(rs, cp, k, "wrote past the end of sendbuf (%zu bytes)", inb);
  /* (In place, `in` was copied from and not passed, or is scatter's
   * sendbuf: unchanged all the same.) */
  if (inb > 0 && memcmp(in, orig, inb) != 0)
    rank_fail(rs, cp, k, "modified its sendbuf");
  if ((cp->coll == REDCOLL_COLL_REDUCE || cp->coll == REDCOLL_COLL_GATHER) && !is_root) {
    for (size_t b = 0; b < outb; b++) {
      if (out[b] != JUNK_BYTE) {
        rank_fail(rs, cp, k, "wrote to the insignificant recvbuf (byte %zu)", b);
        break;
      }
    }
  }

  /* The result. */
  if (res_n > 0) {
    if (is_reduction(cp->coll)) {
      compare(rs, cp, k, "result", out, cp->ref + res_off * es, res_n, res_off);
    } else if (cp->coll == REDCOLL_COLL_ALLGATHER || cp->coll == REDCOLL_COLL_GATHER ||
               cp->coll == REDCOLL_COLL_ALLGATHERV) {
      size_t off = 0;
      for (int q = 0; q < p; q++) {
        size_t n = cp->counts ? cp->counts[q] : cp->count;
        fill(cp, p, q, 0, n, want);
        char what[48];
        snprintf(what, sizeof what, "block of rank %d", q);
        if (!compare(rs, cp, k, what, out + off * es, want, n, off)) break;
        off += n;
      }
    } else {
      /* bcast: the root's vector; scatter: block `me` of the root's. */
      fill(cp, p, cp->root, res_off, res_n, want);
      compare(rs, cp, k, "result", out, want, res_n, res_off);
    }
  }
  rc = REDCOLL_OK;
out:
  free(in);
  free(orig);
  free(out);
  free(want);
  return rc;
}

static int soak_rank(redcoll_comm *c, void *arg) {
  rank_state rs;
  memset(&rs, 0, sizeof rs);
  rs.w = arg;
  rs.me = redcoll_comm_rank(c);
  if (redcoll_comm_size(c) != rs.w->p) return REDCOLL_EINVAL;
  for (int k = 0; k < rs.w->ncalls; k++) {
    int rc = run_call(c, &rs, k);
    if (rc != REDCOLL_OK) return rc;
  }
  return rs.fails ? REDCOLL_EPROTO : REDCOLL_OK;
}

/* ---- driver ----------------------------------------------------------------------- */

static double now_sec(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static long env_long(const char *name, long def) {
  const char *s = getenv(name);
  if (s == NULL || *s == '\0') return def;
  char *end;
  errno = 0;
  long v = strtol(s, &end, 0);
  if (errno != 0 || *end != '\0' || v < 0) {
    fprintf(stderr, "soak: bad %s=%s, using %ld\n", name, s, def);
    return def;
  }
  return v;
}

static int run_threads_world(world *w) {
  redcoll_threads_config cfg;
  redcoll_threads_config_init(&cfg);
  cfg.wait_timeout_ms = 60000; /* a hang shows as REDCOLL_ETIMEDOUT */
  int statuses[MAXP_THREADS];
  return redcoll_threads_run_config(w->p, &cfg, soak_rank, w, statuses);
}

#ifdef REDCOLL_TEST_SHM
static int run_shm_world(world *w) {
  shm_run_opts o;
  shm_run_opts_init(&o);
  o.timeout_ms = 60000;
  o.deadline_s = 150;
  return shm_run_opts_run(w->p, soak_rank, w, &o);
}
#endif

#ifdef REDCOLL_TEST_TCP
static int run_tcp_world(world *w) {
  tcp_run_opts o;
  memset(&o, 0, sizeof o);
  o.timeout_ms = 60000;
  o.deadline_s = 150;
  return tcp_run_opts_run(w->p, soak_rank, w, &o);
}
#endif

/* Runs worlds until `iters` collectives have been planned (tcp: 0 threads,
 * 1 TCP, 2 shared memory); returns the
 * number of failed worlds. */
static int soak(int tcp, long iters, int *iter_base, long only_world, int *failed_worlds) {
  long done = 0;
  int nworlds = 0;
  double t0 = now_sec();
  world_shared *sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                          -1, 0);
  CHECK(sh != MAP_FAILED);
  if (sh == MAP_FAILED) return 0;
  for (int wi = 0; done < iters && *failed_worlds < MAX_FAILED_WORLDS; wi++) {
    world w;
    world_head(&w, g_seed, wi, tcp);
    w.first_iter = *iter_base;
    *iter_base += w.ncalls;
    done += w.ncalls;
    if (only_world >= 0 && wi != only_world) continue;
    w.sh = sh;
    atomic_store(&sh->arrivals, 0);
    atomic_store(&sh->failed, 0);
    atomic_store(&sh->prints, 0);
    int ok = world_plan(&w) == 0;
    CHECK_MSG(ok, "out of memory planning world %d", wi);
    if (ok) {
      double tw = now_sec();
      int rc = REDCOLL_ENOTSUP;
      if (tcp == 0) rc = run_threads_world(&w);
#ifdef REDCOLL_TEST_TCP
      if (tcp == 1) rc = run_tcp_world(&w);
#endif
#ifdef REDCOLL_TEST_SHM
      if (tcp == 2) rc = run_shm_world(&w);
#endif
      nworlds++;
      if (getenv("REDCOLL_SOAK_VERBOSE") != NULL)
        printf("%s world %d: p %d, iterations %d..%d, %.2f s\n", kind_name(tcp), wi, w.p,
               w.first_iter, w.first_iter + w.ncalls - 1, now_sec() - tw);
      CHECK_MSG(rc == REDCOLL_OK && !atomic_load(&sh->failed),
                "seed 0x%" PRIx64 ": %s world %d (p %d, iterations %d..%d) returned %s; rerun "
                "with REDCOLL_SOAK_SEED=0x%" PRIx64 " REDCOLL_SOAK_WORLD=%s:%d",
                g_seed, kind_name(tcp), wi, w.p, w.first_iter,
                w.first_iter + w.ncalls - 1, redcoll_status_name(rc), g_seed,
                kind_name(tcp), wi);
      if (rc != REDCOLL_OK || atomic_load(&sh->failed)) ++*failed_worlds;
    }
    free_plan(&w);
  }
  munmap(sh, sizeof *sh);
  printf("%s: %ld collectives in %d worlds, %.2f s\n", kind_name(tcp), done, nworlds,
         now_sec() - t0);
  return nworlds;
}

int main(int argc, char **argv) {
  const char *s = argc > 1 ? argv[1] : getenv("REDCOLL_SOAK_SEED");
  g_seed = DEFAULT_SEED;
  if (s != NULL && *s != '\0') {
    char *end;
    errno = 0;
    g_seed = strtoull(s, &end, 0);
    if (errno != 0 || *end != '\0') {
      fprintf(stderr, "soak: bad seed %s\n", s);
      return 2;
    }
  }
  long iters = env_long("REDCOLL_SOAK_ITERS", DEFAULT_ITERS);
  long tcp_iters = env_long("REDCOLL_SOAK_TCP_ITERS", DEFAULT_TCP_ITERS);
  long shm_iters = env_long("REDCOLL_SOAK_SHM_ITERS", DEFAULT_TCP_ITERS);
  /* REDCOLL_SOAK_WORLD=threads:N, tcp:N or shm:N runs that world alone. */
  long only_threads = -1, only_tcp = -1, only_shm = -1;
  const char *ow = getenv("REDCOLL_SOAK_WORLD");
  if (ow != NULL && *ow != '\0') {
    long n;
    char kind[8];
    if (sscanf(ow, "%7[a-z]:%ld", kind, &n) != 2 || n < 0 ||
        (strcmp(kind, "threads") != 0 && strcmp(kind, "tcp") != 0 && strcmp(kind, "shm") != 0)) {
      fprintf(stderr, "soak: bad REDCOLL_SOAK_WORLD=%s (threads:N, tcp:N or shm:N)\n", ow);
      return 2;
    }
    only_threads = strcmp(kind, "threads") == 0 ? n : LONG_MAX;
    only_tcp = strcmp(kind, "tcp") == 0 ? n : LONG_MAX;
    only_shm = strcmp(kind, "shm") == 0 ? n : LONG_MAX;
  }
#ifndef REDCOLL_TEST_TCP
  if (tcp_iters > 0)
    printf("soak: TCP part skipped (built without REDCOLL_TEST_TCP)\n");
  tcp_iters = 0;
#endif
#ifndef REDCOLL_TEST_SHM
  if (shm_iters > 0)
    printf("soak: shared-memory part skipped (built without REDCOLL_TEST_SHM)\n");
  shm_iters = 0;
#endif
  printf("soak: seed 0x%" PRIx64 " (REDCOLL_SOAK_SEED), %ld collectives on threads, %ld on tcp, "
         "%ld on shm\n", g_seed, iters, tcp_iters, shm_iters);
  fflush(stdout);

  CHECK_INT(redcoll_op_create(mat_fn, 16, 0, &op_ctx_magic, &op_mat), REDCOLL_OK);
  CHECK_INT(redcoll_op_create(qsum_fn, 16, 1, &op_ctx_magic, &op_qsum), REDCOLL_OK);
  if (op_mat == NULL || op_qsum == NULL) return TEST_DONE();

  for (int coll = 0; coll < REDCOLL_COLL_COUNT; coll++) {
    for (int a = 1; a < REDCOLL_ALGO_COUNT; a++)
      if (redcoll_algo_is_supported((redcoll_coll)coll, (redcoll_algo)a))
        algos[coll][nalgos[coll]++] = (redcoll_algo)a;
  }

  int iter_base = 0, failed_worlds = 0;
  soak(0, iters, &iter_base, only_threads, &failed_worlds);
  if (tcp_iters > 0) soak(1, tcp_iters, &iter_base, only_tcp, &failed_worlds);
  if (shm_iters > 0) soak(2, shm_iters, &iter_base, only_shm, &failed_worlds);
  CHECK_MSG(!atomic_load(&op_bad_ctx), "a user operator was called with another ctx");

  /* What the run covered: calls per collective and forced algorithm. */
  for (int coll = 0; coll < REDCOLL_COLL_COUNT; coll++) {
    printf("  %-21s auto %ld", redcoll_coll_name((redcoll_coll)coll), coverage[coll][0]);
    for (int i = 0; i < nalgos[coll]; i++)
      printf(", %s %ld", redcoll_algo_name(algos[coll][i]), coverage[coll][algos[coll][i]]);
    printf("\n");
  }
  redcoll_op_destroy(op_mat);
  redcoll_op_destroy(op_qsum);
  return TEST_DONE();
}
