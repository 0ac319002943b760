/*
 * redcoll-bench: times a collective on a real transport.
 *
 *   redcoll-bench [--transport threads|tcp|shm] [--np P] [--coll allreduce] [--algo auto|NAME|all]
 *                 [--sizes 8:16M] [--factor 8] [--iters 20] [--warmup 3] [--settle-ms 100]
 *                 [--dtype f32] [--slow-op K]
 *                 [--dup] [--threads T] [--no-header]
 *
 * --slow-op K reduces with a user operator (redcoll_op_create, float32
 * elements, commutative) that adds each pair of elements K times over, one
 * addition after the other (about 4 K cycles an element, against a
 * fraction of one for the built-in sum): a slow operator, as the piped
 * steps of REDCOLL_SEGMENT_KB are meant for.  Its sums are exact and
 * checked like the others'.
 *
 * --algo takes one name, a comma-separated list (two_level,ring,auto), or
 * all.  --threads T runs T threads in every launched process, each a rank
 * of one world of P x T ranks (redcoll_hier_run: the threads of a process
 * share a host, so AUTO may choose two_level); p in the output is then
 * P x T.
 *
 * --dup runs everything on a duplicate of the communicator
 * (redcoll_comm_dup; impl "redcoll-dup"), on transports with channels.
 *
 * With --transport threads (the default outside a launcher) the P ranks are
 * threads of this process.  Under redcoll-run, or any launcher that sets
 * REDCOLL_RANK/REDCOLL_SIZE (or SLURM_*, OMPI_*, PMI_*), the ranks are the
 * launched processes and talk TCP (the default there):
 *
 *   redcoll-run -n 7 --no-prefix redcoll-bench --sizes 8:16M > allreduce.csv
 *
 * --transport shm makes the launched processes talk through shared memory
 * instead (redcoll_shm_comm_create_from_env, Linux).
 *
 * For every size (bytes, from A to B multiplying by --factor) and every
 * algorithm, each rank runs the warm-up iterations and then the timed ones
 * (at the run's first point, before them, untimed calls for --settle-ms),
 * every iteration preceded by a barrier; an iteration's time is the slowest
 * rank's.  The result of each point's first warm-up call is checked on every rank
 * against the exact expected value; a wrong result stops the run with exit
 * status 1.  Rank 0 prints one CSV line per (size, algorithm):
 *
 *   impl,coll,p,bytes,median_us,p99_us,algbw_GBps,busbw_GBps,algo
 *
 * --coll sendrecv times the point-to-point path instead: ranks 2i and 2i+1
 * exchange bytes each way at once (redcoll_sendrecv; a last rank of an odd
 * p only takes part in the barriers); bytes is what one rank sends, algbw
 * bytes / median time, and algo is "-".  --coll send is the same one way:
 * rank 2i sends, 2i+1 receives.  bench/bench_p2p.py runs both beside a
 * plain socket program (bench/raw_p2p.c).
 *
 * bytes is the size of the whole vector (as in nccl-tests): count elements
 * for allreduce, reduce and bcast, p blocks of count/p for
 * reduce_scatter_block and allgather.  algbw = bytes / median time; busbw
 * scales it by what each rank must move at least: 2(p-1)/p for allreduce,
 * (p-1)/p for reduce_scatter_block and allgather, 1 for reduce and bcast.
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <redcoll/redcoll.h>
#include <redcoll/threads.h>
#include <redcoll/hier.h>
#ifdef __linux__
#include <redcoll/shm.h>
#endif
#ifdef REDCOLL_BENCH_TCP
#include <redcoll/tcp.h>
#endif
#include "stats.h"

typedef struct bench_opts {
  int tcp; /* 0 threads, 1 tcp, 2 shm */
  int np;
  redcoll_coll coll;
  int all_algos;
  redcoll_algo algo;
  int algo_given; /* --algo: else REDCOLL_ALGO_<COLL> from the environment or AUTO */
  size_t min_bytes, max_bytes;
  size_t factor;
  int iters, warmup, settle_ms;
  redcoll_dtype dt;
  int header;
  int dup; /* --dup: on redcoll_comm_dup of the communicator */
  int threads; /* --threads: ranks per process through redcoll_hier_run; 0: none */
  redcoll_algo list[REDCOLL_ALGO_COUNT]; /* --algo A,B,...: in that order */
  int nlist;
  int p2p; /* 1: --coll sendrecv, pairs of ranks exchange; 2: --coll send,
            * one way; 0: a collective */
  int slow; /* --slow-op K: the user operator slow_sum, K passes; 0: REDCOLL_SUM */
} bench_opts;

/* --slow-op: out = left + right over float32, each sum computed `passes`
 * times, one after the other (the empty asm makes the compiler assume x
 * changed, so it cannot fold them).  out may be left or right. */
static void slow_sum(void *out, const void *left, const void *right, size_t n, void *ctx) {
  int passes = *(const int *)ctx;
  float *o = out;
  const float *a = left, *b = right;
  for (size_t i = 0; i < n; i++) {
    float x = a[i], y = b[i], s = 0;
    for (int k = 0; k < passes; k++) {
      s = x + y;
      __asm__ volatile("" : "+x"(x), "+x"(s));
    }
    o[i] = s;
  }
}

/* The operator of the reductions, and the dtype that goes with it. */
static const redcoll_op *g_op;
static redcoll_dtype red_dt(const bench_opts *o) { return o->slow ? REDCOLL_CUSTOM : o->dt; }

/* Set by the ranks: 1 if any result was wrong or a call failed. */
typedef struct bench_state {
  const bench_opts *o;
  int failed;
} bench_state;

static void usage(FILE *f) {
  fprintf(f,
          "usage: redcoll-bench [--transport threads|tcp|shm] [--np P] [--coll COLL]\n"
          "                     [--algo auto|NAME|all] [--sizes MIN:MAX] [--factor F]\n"
          "                     [--iters N] [--warmup N] [--settle-ms MS] [--dtype f32|f64|f16|bf16|i32|i64] [--dup]\n"
          "                     [--slow-op K] [--threads T] [--no-header]\n"
          "  COLL: allreduce (default), reduce, reduce_scatter_block, allgather, bcast,\n"
          "        scan, exscan, exscan_total, alltoall (sizes: the whole vector; for\n"
          "        alltoall what one rank sends, p blocks); sendrecv: ranks 2i and 2i+1\n"
          "        exchange the bytes each way (the point-to-point path); send: 2i sends\n"
          "        them to 2i+1\n"
          "  sizes in bytes with an optional K, M or G suffix; default 8:16M, factor 8\n"
          "  --slow-op K: a user operator summing float32 K times over (--dtype f32)\n"
          "  under redcoll-run (REDCOLL_RANK set) the transport is tcp, else threads\n");
}

static int parse_size(const char *s, size_t *out) {
  char *end;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (end == s || errno != 0) return -1;
  unsigned long long mul = 1;
  if (*end == 'k' || *end == 'K') mul = 1ull << 10;
  else if (*end == 'm' || *end == 'M') mul = 1ull << 20;
  else if (*end == 'g' || *end == 'G') mul = 1ull << 30;
  if (mul != 1) end++;
  if (*end == 'B' || *end == 'b') end++;
  if (*end != '\0' || v > SIZE_MAX / mul) return -1;
  *out = (size_t)(v * mul);
  return 0;
}

static int parse_int(const char *s, int lo, int hi, int *out) {
  char *end;
  long v = strtol(s, &end, 10);
  if (end == s || *end != '\0' || v < lo || v > hi) return -1;
  *out = (int)v;
  return 0;
}

static int launched(void) {
  static const char *vars[] = {"REDCOLL_RANK", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK", "PMI_RANK"};
  for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
    if (getenv(vars[i]) != NULL) return 1;
  return 0;
}

/* ---- values and the expected results -------------------------------------- */

/* Small integers, so that every sum is exact in every dtype: below 2^8 in
 * the half-precision types for p up to 64 (bfloat16 has 8 significant
 * bits), else up to 13 + p. */
static int half(redcoll_dtype dt) { return dt == REDCOLL_FLOAT16 || dt == REDCOLL_BFLOAT16; }
static redcoll_dtype g_dt;
static int64_t val(int rank, size_t i) {
  return half(g_dt) ? 1 + (int64_t)(i % 3) : (int64_t)(rank + 1) + (int64_t)(i % 13);
}

/* sum_r val(r, i) for r in 0..p-1 */
static int64_t sum_val(int p, size_t i) {
  if (half(g_dt)) return (int64_t)p * (1 + (int64_t)(i % 3));
  return (int64_t)p * (p + 1) / 2 + (int64_t)p * (int64_t)(i % 13);
}

/* A small integer n (|n| < 2^8) as float16 and bfloat16 bits, exactly, and
 * back.  -1 (bcast's fill of the receivers) included. */
static uint16_t int_to_f16(int64_t n) {
  uint16_t sign = n < 0 ? 0x8000u : 0;
  uint64_t m = (uint64_t)(n < 0 ? -n : n);
  if (m == 0) return sign;
  int e = 0;
  while ((m >> (e + 1)) != 0) e++;
  return (uint16_t)(sign | (uint16_t)((e + 15) << 10) | (uint16_t)((m << (10 - e)) & 0x3ffu));
}
static int64_t f16_to_int(uint16_t h) {
  int e = (h >> 10) & 0x1f;
  if (e == 0) return 0;
  int64_t m = (int64_t)((h & 0x3ffu) | 0x400u), v = e >= 25 ? m << (e - 25) : m >> (25 - e);
  return h & 0x8000u ? -v : v;
}
static uint16_t int_to_bf16(int64_t n) {
  float f = (float)n;
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return (uint16_t)(u >> 16);
}
static int64_t bf16_to_int(uint16_t h) {
  uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, sizeof f);
  return (int64_t)f;
}

static void put(void *buf, redcoll_dtype dt, size_t i, int64_t v) {
  switch (dt) {
  case REDCOLL_FLOAT16: ((uint16_t *)buf)[i] = int_to_f16(v); break;
  case REDCOLL_BFLOAT16: ((uint16_t *)buf)[i] = int_to_bf16(v); break;
  case REDCOLL_FLOAT32: ((float *)buf)[i] = (float)v; break;
  case REDCOLL_FLOAT64: ((double *)buf)[i] = (double)v; break;
  case REDCOLL_INT32: ((int32_t *)buf)[i] = (int32_t)v; break;
  default: ((int64_t *)buf)[i] = v; break;
  }
}

static int64_t get(const void *buf, redcoll_dtype dt, size_t i) {
  switch (dt) {
  case REDCOLL_FLOAT16: return f16_to_int(((const uint16_t *)buf)[i]);
  case REDCOLL_BFLOAT16: return bf16_to_int(((const uint16_t *)buf)[i]);
  case REDCOLL_FLOAT32: return (int64_t)((const float *)buf)[i];
  case REDCOLL_FLOAT64: return (int64_t)((const double *)buf)[i];
  case REDCOLL_INT32: return ((const int32_t *)buf)[i];
  default: return ((const int64_t *)buf)[i];
  }
}

/* Elements per rank's call for a size in bytes: count for the vector
 * collectives, the per-rank block for the blocked ones. */
static int blocked(redcoll_coll coll) {
  return coll == REDCOLL_COLL_REDUCE_SCATTER_BLOCK || coll == REDCOLL_COLL_ALLGATHER ||
         coll == REDCOLL_COLL_ALLTOALL;
}

static size_t count_for(const bench_opts *o, int p, size_t bytes) {
  size_t n = bytes / redcoll_dtype_size(o->dt);
  if (!o->p2p && blocked(o->coll)) n /= (size_t)p;
  return n;
}

static size_t total_elems(const bench_opts *o, int p, size_t count) {
  return !o->p2p && blocked(o->coll) ? count * (size_t)p : count;
}

static double bus_factor(redcoll_coll coll, int p) {
  switch (coll) {
  case REDCOLL_COLL_ALLREDUCE: return 2.0 * (p - 1) / p;
  case REDCOLL_COLL_REDUCE_SCATTER_BLOCK:
  case REDCOLL_COLL_ALLGATHER:
  case REDCOLL_COLL_ALLTOALL: return (double)(p - 1) / p;
  default: return 1.0;
  }
}

/* ---- one rank ------------------------------------------------------------------- */

typedef struct bufs {
  void *send, *recv;
} bufs;

/* Fills the inputs of this rank for a call of count elements. */
static void fill_inputs(const bench_opts *o, int me, int p, size_t count, bufs *b) {
  switch (o->p2p ? REDCOLL_COLL_ALLREDUCE : o->coll) {
  case REDCOLL_COLL_REDUCE_SCATTER_BLOCK:
  case REDCOLL_COLL_ALLTOALL:
    for (size_t i = 0; i < count * (size_t)p; i++) put(b->send, o->dt, i, val(me, i));
    break;
  case REDCOLL_COLL_BCAST:
    for (size_t i = 0; i < count; i++) put(b->recv, o->dt, i, me == 0 ? val(0, i) : -1);
    break;
  default:
    for (size_t i = 0; i < count; i++) put(b->send, o->dt, i, val(me, i));
    break;
  }
}

static const char *p2p_name(const bench_opts *o) { return o->p2p == 2 ? "send" : "sendrecv"; }

/* This rank's partner of --coll sendrecv, or -1 (the last of an odd p). */
static int partner_of(int me, int p) { return (me ^ 1) < p ? me ^ 1 : -1; }

static int run_coll(redcoll_comm *c, const bench_opts *o, size_t count, bufs *b) {
  if (o->p2p) {
    int q = partner_of(redcoll_comm_rank(c), redcoll_comm_size(c));
    size_t n = count * redcoll_dtype_size(o->dt);
    if (q < 0) return REDCOLL_OK;
    if (o->p2p == 2)
      return q & 1 ? redcoll_send(c, q, 1, b->send, n) : redcoll_recv(c, q, 1, b->recv, n);
    return redcoll_sendrecv(c, q, 1, b->send, n, q, 1, b->recv, n);
  }
  switch (o->coll) {
  case REDCOLL_COLL_ALLREDUCE:
    return redcoll_allreduce(c, b->send, b->recv, count, red_dt(o), g_op);
  case REDCOLL_COLL_REDUCE:
    return redcoll_reduce(c, b->send, b->recv, count, red_dt(o), g_op, 0);
  case REDCOLL_COLL_REDUCE_SCATTER_BLOCK:
    return redcoll_reduce_scatter_block(c, b->send, b->recv, count, red_dt(o), g_op);
  case REDCOLL_COLL_ALLGATHER:
    return redcoll_allgather(c, b->send, b->recv, count, o->dt);
  case REDCOLL_COLL_BCAST:
    return redcoll_bcast(c, b->recv, count, o->dt, 0);
  case REDCOLL_COLL_SCAN:
    return redcoll_scan(c, b->send, b->recv, count, red_dt(o), g_op);
  case REDCOLL_COLL_EXSCAN:
    return redcoll_exscan(c, b->send, b->recv, count, red_dt(o), g_op);
  case REDCOLL_COLL_EXSCAN_TOTAL: /* the total behind the prefix in recv */
    return redcoll_exscan_total(c, b->send, b->recv, (char *)b->recv + count * redcoll_dtype_size(o->dt),
                                count, red_dt(o), g_op);
  case REDCOLL_COLL_ALLTOALL:
    return redcoll_alltoall(c, b->send, b->recv, count, o->dt);
  default:
    return REDCOLL_ENOTSUP;
  }
}

/* Number of wrong elements of this rank's result. */
static size_t check(const bench_opts *o, int me, int p, size_t count, const bufs *b) {
  size_t bad = 0;
  if (o->p2p) {
    int q = partner_of(me, p);
    if (o->p2p == 2 && !(me & 1)) return 0; /* a sender */
    for (size_t i = 0; q >= 0 && i < count; i++) bad += get(b->recv, o->dt, i) != val(q, i);
    return bad;
  }
  switch (o->coll) {
  case REDCOLL_COLL_ALLREDUCE:
    for (size_t i = 0; i < count; i++) bad += get(b->recv, o->dt, i) != sum_val(p, i);
    break;
  case REDCOLL_COLL_REDUCE:
    if (me == 0)
      for (size_t i = 0; i < count; i++) bad += get(b->recv, o->dt, i) != sum_val(p, i);
    break;
  case REDCOLL_COLL_REDUCE_SCATTER_BLOCK:
    for (size_t i = 0; i < count; i++)
      bad += get(b->recv, o->dt, i) != sum_val(p, (size_t)me * count + i);
    break;
  case REDCOLL_COLL_ALLGATHER:
    for (int q = 0; q < p; q++)
      for (size_t i = 0; i < count; i++)
        bad += get(b->recv, o->dt, (size_t)q * count + i) != val(q, i);
    break;
  case REDCOLL_COLL_BCAST:
    for (size_t i = 0; i < count; i++) bad += get(b->recv, o->dt, i) != val(0, i);
    break;
  case REDCOLL_COLL_SCAN:
    for (size_t i = 0; i < count; i++) bad += get(b->recv, o->dt, i) != sum_val(me + 1, i);
    break;
  case REDCOLL_COLL_EXSCAN:
  case REDCOLL_COLL_EXSCAN_TOTAL:
    for (size_t i = 0; me > 0 && i < count; i++) bad += get(b->recv, o->dt, i) != sum_val(me, i);
    if (o->coll == REDCOLL_COLL_EXSCAN_TOTAL)
      for (size_t i = 0; i < count; i++) bad += get(b->recv, o->dt, count + i) != sum_val(p, i);
    break;
  case REDCOLL_COLL_ALLTOALL:
    for (int q = 0; q < p; q++)
      for (size_t i = 0; i < count; i++)
        bad += get(b->recv, o->dt, (size_t)q * count + i) != val(q, (size_t)me * count + i);
    break;
  default:
    break;
  }
  return bad;
}

/* The run's first point runs untimed for --settle-ms at least, before its
 * warm-up: processes started together are slower for a while (at 64 KiB,
 * p = 4, shared memory, 6.6 x for about 50 ms after the start).  Batches
 * of calls that double, until the slowest rank has spent settle_ms: every
 * rank runs as many. */
static int settle(redcoll_comm *c, const bench_opts *o, size_t count, bufs *b) {
  double t0 = stats_now(), want = o->settle_ms * 1e-3;
  for (int batch = 1;; batch = batch < 4096 ? 2 * batch : batch) {
    double el = stats_now() - t0, slowest = 0;
    int rc = redcoll_allreduce(c, &el, &slowest, 1, REDCOLL_FLOAT64, REDCOLL_MAX);
    if (rc != REDCOLL_OK || slowest >= want) return rc;
    for (int i = 0; i < batch; i++) {
      if ((rc = redcoll_barrier(c)) != REDCOLL_OK || (rc = run_coll(c, o, count, b)) != REDCOLL_OK)
        return rc;
    }
  }
}

/* Runs one (size, algorithm) point on this rank.  Returns a status; a wrong
 * result is reported and counted in st->failed (every rank agrees on it
 * through an allreduce). */
static int bench_point(redcoll_comm *c, bench_state *st, redcoll_algo algo, size_t bytes,
                       bufs *b, double *times, double *all, int *settled) {
  const bench_opts *o = st->o;
  int me = redcoll_comm_rank(c), p = redcoll_comm_size(c);
  size_t count = count_for(o, p, bytes);
  /* Without --algo the communicator keeps what REDCOLL_ALGO_<COLL> set. */
  int rc = !o->p2p && (o->algo_given || o->all_algos || o->nlist > 0)
               ? redcoll_comm_set_algorithm(c, o->coll, algo)
               : REDCOLL_OK;
  if (rc != REDCOLL_OK) return rc;
  fill_inputs(o, me, p, count, b);
  if (!*settled && o->settle_ms > 0) {
    *settled = 1;
    if ((rc = settle(c, o, count, b)) != REDCOLL_OK) return rc;
    fill_inputs(o, me, p, count, b); /* bcast overwrote its input */
  }
  int warm = o->warmup, n = warm + o->iters;
  redcoll_algo ran = REDCOLL_ALGO_AUTO;
  for (int it = 0; it < n; it++) {
    rc = redcoll_barrier(c);
    if (rc != REDCOLL_OK) return rc;
    double t0 = stats_now();
    rc = run_coll(c, o, count, b);
    double t = stats_now() - t0;
    if (rc != REDCOLL_OK) return rc;
    ran = redcoll_comm_last_algorithm(c); /* before the check's own allreduce */
    if (it == 0) {
      /* The first call's result, checked everywhere; all ranks learn the
       * verdict so that they stop together. */
      int64_t bad = (int64_t)check(o, me, p, count, b), anybad = 0;
      if (bad)
        fprintf(stderr, "redcoll-bench: rank %d: %s %s p %d %zu bytes: %lld wrong elements\n", me,
                o->p2p ? p2p_name(o) : redcoll_coll_name(o->coll),
                o->p2p ? "-" : redcoll_algo_name(redcoll_comm_last_algorithm(c)), p, bytes,
                (long long)bad);
      rc = redcoll_allreduce(c, &bad, &anybad, 1, REDCOLL_INT64, REDCOLL_SUM);
      if (rc != REDCOLL_OK) return rc;
      if (anybad) {
        __atomic_store_n(&st->failed, 1, __ATOMIC_RELAXED);
        return REDCOLL_OK;
      }
      fill_inputs(o, me, p, count, b); /* bcast overwrote its input */
    }
    if (it >= warm) times[it - warm] = t;
  }
  /* An iteration lasts as long as its slowest rank. */
  rc = redcoll_allreduce(c, times, all, (size_t)o->iters, REDCOLL_FLOAT64, REDCOLL_MAX);
  if (rc != REDCOLL_OK) return rc;
  if (me == 0) {
    double med = stats_median(all, (size_t)o->iters);
    double p99 = stats_quantile(all, (size_t)o->iters, 0.99);
    size_t real = total_elems(o, p, count) * redcoll_dtype_size(o->dt);
    double algbw = med > 0 ? (double)real / med * 1e-9 : 0;
    printf("%s,%s,%d,%zu,%.2f,%.2f,%.4f,%.4f,%s\n", o->dup ? "redcoll-dup" : "redcoll",
           o->p2p ? p2p_name(o) : redcoll_coll_name(o->coll), p, real, med * 1e6, p99 * 1e6, algbw,
           o->p2p ? algbw : algbw * bus_factor(o->coll, p),
           o->p2p ? "-" : redcoll_algo_name(count == 0 || p == 1 ? algo : ran));
    fflush(stdout);
  }
  return REDCOLL_OK;
}

static int rank_body(redcoll_comm *c, bench_state *st);

static int rank_dup(redcoll_comm *c, void *arg);

/* The whole run on c, or on a duplicate of it (--dup), or on the world of
 * c's processes x --threads threads. */
static int rank_main(redcoll_comm *c, void *arg) {
  bench_state *st = arg;
  if (st->o->threads > 0) return redcoll_hier_run(c, st->o->threads, rank_dup, st);
  return rank_dup(c, arg);
}

static int rank_dup(redcoll_comm *c, void *arg) {
  bench_state *st = arg;
  if (!st->o->dup) return rank_body(c, st);
  redcoll_comm *d = NULL;
  int rc = redcoll_comm_dup(c, &d);
  if (rc != REDCOLL_OK) {
    if (redcoll_comm_rank(c) == 0)
      fprintf(stderr, "redcoll-bench: --dup: %s\n", redcoll_strerror(rc));
    return rc;
  }
  rc = rank_body(d, st);
  redcoll_comm_destroy(d);
  return rc;
}

static int rank_body(redcoll_comm *c, bench_state *st) {
  const bench_opts *o = st->o;
  int me = redcoll_comm_rank(c), p = redcoll_comm_size(c);
  size_t es = redcoll_dtype_size(o->dt);
  size_t maxcount = count_for(o, p, o->max_bytes);
  size_t elems = total_elems(o, p, maxcount) + 1;
  bufs b = {malloc(elems * es), malloc(2 * elems * es)}; /* recv: room for exscan_total's total */
  double *times = malloc((size_t)o->iters * sizeof *times);
  double *all = malloc((size_t)o->iters * sizeof *all);
  int rc = REDCOLL_OK;
  if (b.send == NULL || b.recv == NULL || times == NULL || all == NULL) {
    rc = REDCOLL_ENOMEM;
    goto out;
  }
  /* Touch every page now, not in the first timed call. */
  memset(b.send, 1, elems * es);
  memset(b.recv, 1, 2 * elems * es);
  if (me == 0 && o->header) {
    printf("impl,coll,p,bytes,median_us,p99_us,algbw_GBps,busbw_GBps,algo\n");
    fflush(stdout);
  }
  int settled = 0; /* this rank's first point has warmed up for --settle-ms */
  for (size_t bytes = o->min_bytes;; bytes *= o->factor) {
    int n_algos = o->nlist > 0 && !o->p2p ? o->nlist : REDCOLL_ALGO_COUNT;
    for (int k = (o->all_algos || o->nlist > 0) && !o->p2p ? (o->nlist > 0 ? 0 : 1) : (int)o->algo;
         k < n_algos; k++) {
      int a = o->nlist > 0 && !o->p2p ? (int)o->list[k] : k;
      if (!o->p2p && !redcoll_algo_is_supported(o->coll, (redcoll_algo)a)) continue;
      rc = bench_point(c, st, (redcoll_algo)a, bytes, &b, times, all, &settled);
      if (rc == REDCOLL_ENOTSUP && (o->all_algos || o->nlist > 0) &&
          redcoll_comm_error(c) == REDCOLL_OK) {
        rc = REDCOLL_OK; /* this algorithm does not apply here */
        continue;
      }
      if (rc != REDCOLL_OK || __atomic_load_n(&st->failed, __ATOMIC_RELAXED)) {
        if (rc != REDCOLL_OK && me == 0)
          fprintf(stderr, "redcoll-bench: %s %s p %d %zu bytes: %s\n",
                  o->p2p ? p2p_name(o) : redcoll_coll_name(o->coll),
                  redcoll_algo_name((redcoll_algo)a), p, bytes, redcoll_strerror(rc));
        goto out;
      }
      if ((!o->all_algos && o->nlist == 0) || o->p2p) break;
    }
    if (bytes > o->max_bytes / o->factor || bytes == 0) break;
  }
out:
  free(b.send);
  free(b.recv);
  free(times);
  free(all);
  if (rc == REDCOLL_OK && st->failed) rc = REDCOLL_EPROTO;
  return rc;
}

int main(int argc, char **argv) {
  bench_opts o = {.tcp = launched(),
                  .np = 4,
                  .coll = REDCOLL_COLL_ALLREDUCE,
                  .algo = REDCOLL_ALGO_AUTO,
                  .min_bytes = 8,
                  .max_bytes = (size_t)16 << 20,
                  .factor = 8,
                  .iters = 20,
                  .warmup = 3,
                  .settle_ms = 100,
                  .dt = REDCOLL_FLOAT32,
                  .header = 1};
  int np_given = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    int bad = 0;
    if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
      usage(stdout);
      return 0;
    } else if (strcmp(a, "--no-header") == 0) {
      o.header = 0;
      continue;
    } else if (strcmp(a, "--dup") == 0) {
      o.dup = 1;
      continue;
    } else if (v == NULL) {
      bad = 1;
    } else if (strcmp(a, "--transport") == 0) {
      if (strcmp(v, "tcp") == 0) o.tcp = 1;
      else if (strcmp(v, "threads") == 0) o.tcp = 0;
#ifdef __linux__
      else if (strcmp(v, "shm") == 0) o.tcp = 2;
#endif
      else bad = 1;
    } else if (strcmp(a, "--np") == 0 || strcmp(a, "-n") == 0) {
      bad = parse_int(v, 1, 4096, &o.np) != 0;
      np_given = 1;
    } else if (strcmp(a, "--coll") == 0 && (strcmp(v, "sendrecv") == 0 || strcmp(v, "send") == 0)) {
      o.p2p = v[4] == 'r' ? 1 : 2;
    } else if (strcmp(a, "--coll") == 0) {
      o.p2p = 0;
      bad = redcoll_coll_parse(v, &o.coll) != REDCOLL_OK;
      if (!bad && o.coll != REDCOLL_COLL_ALLREDUCE && o.coll != REDCOLL_COLL_REDUCE &&
          o.coll != REDCOLL_COLL_REDUCE_SCATTER_BLOCK && o.coll != REDCOLL_COLL_ALLGATHER &&
          o.coll != REDCOLL_COLL_BCAST && o.coll != REDCOLL_COLL_SCAN &&
          o.coll != REDCOLL_COLL_EXSCAN && o.coll != REDCOLL_COLL_EXSCAN_TOTAL &&
          o.coll != REDCOLL_COLL_ALLTOALL)
        bad = 1;
    } else if (strcmp(a, "--algo") == 0) {
      if (strcmp(v, "all") == 0) o.all_algos = 1;
      else if (strchr(v, ',') == NULL) bad = redcoll_algo_parse(v, &o.algo) != REDCOLL_OK;
      else {
        char name[64];
        for (const char *q = v; *q != '\0' && !bad;) {
          size_t n = strcspn(q, ",");
          if (n == 0 || n >= sizeof name || o.nlist == REDCOLL_ALGO_COUNT) {
            bad = 1;
            break;
          }
          memcpy(name, q, n);
          name[n] = '\0';
          bad = redcoll_algo_parse(name, &o.list[o.nlist++]) != REDCOLL_OK;
          q += n + (q[n] == ',');
        }
      }
      o.algo_given = 1;
    } else if (strcmp(a, "--threads") == 0) {
      bad = parse_int(v, 1, REDCOLL_HIER_MAX_THREADS, &o.threads) != 0;
    } else if (strcmp(a, "--sizes") == 0) {
      char lo[64];
      const char *colon = strchr(v, ':');
      size_t n = colon ? (size_t)(colon - v) : strlen(v);
      if (n >= sizeof lo) {
        bad = 1;
      } else {
        memcpy(lo, v, n);
        lo[n] = '\0';
        bad = parse_size(lo, &o.min_bytes) != 0 ||
              parse_size(colon ? colon + 1 : lo, &o.max_bytes) != 0 || o.min_bytes > o.max_bytes;
      }
    } else if (strcmp(a, "--factor") == 0) {
      int f;
      bad = parse_int(v, 2, 1 << 20, &f) != 0;
      o.factor = (size_t)f;
    } else if (strcmp(a, "--iters") == 0) {
      bad = parse_int(v, 1, 1 << 24, &o.iters) != 0;
    } else if (strcmp(a, "--warmup") == 0) {
      bad = parse_int(v, 0, 1 << 24, &o.warmup) != 0;
    } else if (strcmp(a, "--slow-op") == 0) {
      bad = parse_int(v, 1, 1 << 20, &o.slow) != 0;
    } else if (strcmp(a, "--settle-ms") == 0) {
      bad = parse_int(v, 0, 1 << 20, &o.settle_ms) != 0;
    } else if (strcmp(a, "--dtype") == 0) {
      if (strcmp(v, "f32") == 0) o.dt = REDCOLL_FLOAT32;
      else if (strcmp(v, "f64") == 0) o.dt = REDCOLL_FLOAT64;
      else if (strcmp(v, "i32") == 0) o.dt = REDCOLL_INT32;
      else if (strcmp(v, "i64") == 0) o.dt = REDCOLL_INT64;
      else if (strcmp(v, "f16") == 0) o.dt = REDCOLL_FLOAT16;
      else if (strcmp(v, "bf16") == 0) o.dt = REDCOLL_BFLOAT16;
      else bad = 1;
    } else {
      bad = 1;
    }
    if (bad) {
      fprintf(stderr, "redcoll-bench: bad option %s%s%s\n", a, v ? " " : "", v ? v : "");
      usage(stderr);
      return 2;
    }
    i++;
  }
  g_dt = o.dt;
  g_op = REDCOLL_SUM;
  redcoll_op *slow_op = NULL;
  if (o.slow) {
    if (o.dt != REDCOLL_FLOAT32) {
      fprintf(stderr, "redcoll-bench: --slow-op sums float32 (--dtype f32)\n");
      return 2;
    }
    if (redcoll_op_create(slow_sum, sizeof(float), 1, &o.slow, &slow_op) != REDCOLL_OK) {
      fprintf(stderr, "redcoll-bench: cannot make the --slow-op operator\n");
      return 2;
    }
    g_op = slow_op;
  }
  if (half(o.dt) && o.np > 64 && o.coll != REDCOLL_COLL_BCAST && o.coll != REDCOLL_COLL_ALLGATHER &&
      o.coll != REDCOLL_COLL_ALLTOALL) {
    fprintf(stderr, "redcoll-bench: half-precision sums are checked exactly up to 64 ranks\n");
    return 2;
  }
  bench_state st = {&o, 0};
  int rc;
#ifdef __linux__
  if (o.tcp == 2) {
    redcoll_comm *c = NULL;
    rc = redcoll_shm_comm_create_from_env(&c);
    if (rc != REDCOLL_OK) {
      fprintf(stderr, "redcoll-bench: cannot join the shared-memory job (%s); start it with "
                      "redcoll-run -n P redcoll-bench --transport shm ...\n", redcoll_strerror(rc));
      return 2;
    }
    rc = rank_main(c, &st);
    redcoll_comm_destroy(c);
  } else
#endif
  if (o.tcp) {
#ifndef REDCOLL_BENCH_TCP
    (void)np_given;
    fprintf(stderr, "redcoll-bench: built without the TCP transport (libuv was not found)\n");
    return 2;
#else
    if (np_given)
      fprintf(stderr, "redcoll-bench: --np is for threads; with tcp the launcher sets the size\n");
    redcoll_comm *c = NULL;
    rc = redcoll_tcp_comm_create_from_env(&c);
    if (rc != REDCOLL_OK) {
      fprintf(stderr,
              "redcoll-bench: cannot join the TCP job (%s); start it with redcoll-run -n P "
              "redcoll-bench ..., or use --transport threads\n",
              redcoll_strerror(rc));
      return 2;
    }
    rc = rank_main(c, &st);
    redcoll_comm_destroy(c);
#endif
  } else {
    rc = redcoll_threads_run(o.np, rank_main, &st);
  }
  redcoll_op_destroy(slow_op);
  if (st.failed) return 1;
  if (rc != REDCOLL_OK) {
    fprintf(stderr, "redcoll-bench: %s\n", redcoll_strerror(rc));
    return 1;
  }
  return 0;
}
