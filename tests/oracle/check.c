/* The collective checker; see check.h. */
#include "check.h"

#include "redcoll/threads.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GUARD 64
#define GUARD_BYTE 0xa5
#define NONCOMM_P 65521u

/* ---- the non-commutative operator: 2x2 matrices over Z/65521 ---------- */

static void matmul_fn(void *out, const void *left, const void *right, size_t count, void *ctx) {
  (void)ctx;
  const uint32_t *a = left, *b = right;
  uint32_t *o = out;
  for (size_t i = 0; i < count; i++, a += 4, b += 4, o += 4) {
    uint64_t c0 = ((uint64_t)a[0] * b[0] + (uint64_t)a[1] * b[2]) % NONCOMM_P;
    uint64_t c1 = ((uint64_t)a[0] * b[1] + (uint64_t)a[1] * b[3]) % NONCOMM_P;
    uint64_t c2 = ((uint64_t)a[2] * b[0] + (uint64_t)a[3] * b[2]) % NONCOMM_P;
    uint64_t c3 = ((uint64_t)a[2] * b[1] + (uint64_t)a[3] * b[3]) % NONCOMM_P;
    o[0] = (uint32_t)c0;
    o[1] = (uint32_t)c1;
    o[2] = (uint32_t)c2;
    o[3] = (uint32_t)c3;
  }
}

static redcoll_op *noncomm_op;
static pthread_once_t noncomm_once = PTHREAD_ONCE_INIT;
static void noncomm_init(void) {
  if (redcoll_op_create(matmul_fn, 16, 0, NULL, &noncomm_op) != REDCOLL_OK) noncomm_op = NULL;
}
const redcoll_op *check_noncomm_op(void) {
  pthread_once(&noncomm_once, noncomm_init);
  return noncomm_op;
}

/* ---- data ---------------------------------------------------------------- */

static uint64_t hash3(uint64_t a, uint64_t b, uint64_t c) {
  uint64_t x = a * 0x9e3779b97f4a7c15ULL ^ (b + 0x632be59bd9b4e019ULL) * 0xbf58476d1ce4e5b9ULL ^ c;
  x ^= x >> 31;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 29;
  return x;
}

static uint16_t to_f16_int(int v) {
  /* small integers 0..2 are all we use for float16 data */
  static const uint16_t tab[3] = {0x0000, 0x3c00, 0x4000};
  return tab[v];
}
static uint16_t to_bf16_int(int v) {
  static const uint16_t tab[3] = {0x0000, 0x3f80, 0x4000};
  return tab[v];
}

/* Element j of rank r's input. */
static void gen_elem(const check_case *tc, redcoll_dtype dt, int r, size_t j, void *dst) {
  uint64_t h = hash3((uint64_t)r, j, 12345);
  if (tc->op == CHECK_OP_NONCOMM) {
    uint32_t *m = dst;
    for (int k = 0; k < 4; k++) m[k] = (uint32_t)(hash3(h, (uint64_t)k, 7) % NONCOMM_P);
    return;
  }
  if (tc->op == CHECK_OP_SUM_RANDOM) {
    double d = (double)(h >> 11) / 9007199254740992.0 * 2.0 - 1.0;
    memcpy(dst, &d, 8);
    return;
  }
  int small = (int)(h % 97) - 48; /* exact in any summation order for p <= 4096 */
  int tiny = (int)(h % 2);        /* half-precision sums stay exact while p <= 256 */
  switch (dt) {
    case REDCOLL_INT8: { int8_t v = (int8_t)small; memcpy(dst, &v, 1); break; }
    case REDCOLL_UINT8: { uint8_t v = (uint8_t)(h % 200); memcpy(dst, &v, 1); break; }
    case REDCOLL_INT16: { int16_t v = (int16_t)small; memcpy(dst, &v, 2); break; }
    case REDCOLL_UINT16: { uint16_t v = (uint16_t)(h % 60000); memcpy(dst, &v, 2); break; }
    case REDCOLL_INT32: { int32_t v = (int32_t)(h % 2000001) - 1000000; memcpy(dst, &v, 4); break; }
    case REDCOLL_UINT32: { uint32_t v = (uint32_t)h; memcpy(dst, &v, 4); break; }
    case REDCOLL_INT64: { int64_t v = (int64_t)(h >> 1) - (int64_t)(1ULL << 62); memcpy(dst, &v, 8); break; }
    case REDCOLL_UINT64: memcpy(dst, &h, 8); break;
    case REDCOLL_FLOAT16: { uint16_t v = to_f16_int(tiny); memcpy(dst, &v, 2); break; }
    case REDCOLL_BFLOAT16: { uint16_t v = to_bf16_int(tiny); memcpy(dst, &v, 2); break; }
    case REDCOLL_FLOAT32: { float v = (float)small; memcpy(dst, &v, 4); break; }
    case REDCOLL_FLOAT64: default: { double v = (double)small; memcpy(dst, &v, 8); break; }
  }
}

/* ---- the shape of each collective ---------------------------------------- */

typedef struct shape {
  redcoll_dtype dt;
  const redcoll_op *op; /* NULL for data movement */
  size_t esize;
  size_t *in_count;     /* per rank: elements of input */
  size_t *out_count;    /* per rank: elements of output checked */
  size_t *out_off;      /* per rank: offset of its output within ref */
  size_t ref_count;     /* elements of the reference vector */
  size_t recv_alloc;    /* elements of recvbuf to allocate (max over ranks) */
} shape;

static int is_prefix(redcoll_coll c) {
  return c == REDCOLL_COLL_SCAN || c == REDCOLL_COLL_EXSCAN || c == REDCOLL_COLL_EXSCAN_TOTAL;
}

static int is_reduction(redcoll_coll c) {
  return c == REDCOLL_COLL_ALLREDUCE || c == REDCOLL_COLL_REDUCE ||
         c == REDCOLL_COLL_REDUCE_SCATTER_BLOCK || c == REDCOLL_COLL_REDUCE_SCATTER ||
         is_prefix(c);
}

size_t check_elem_size(const check_case *tc) {
  if (tc->op == CHECK_OP_NONCOMM) return 16;
  if (tc->op == CHECK_OP_SUM_RANDOM) return 8;
  return redcoll_dtype_size(tc->dtype);
}

static const redcoll_op *case_op(const check_case *tc) {
  switch (tc->op) {
    case CHECK_OP_NONCOMM: return check_noncomm_op();
    case CHECK_OP_MAX: return REDCOLL_MAX;
    default: return REDCOLL_SUM;
  }
}

/* ---- the layouts of the v-collectives ------------------------------------ */

static int is_blocks_v(redcoll_coll c) {
  return c == REDCOLL_COLL_ALLTOALL || c == REDCOLL_COLL_ALLTOALLV ||
         c == REDCOLL_COLL_GATHERV || c == REDCOLL_COLL_SCATTERV ||
         c == REDCOLL_COLL_ALLGATHERV_DISPLS;
}

/* Rank i's block for rank j in alltoallv. */
static size_t base_count(const check_case *tc, int i, int j) {
  size_t n = tc->count;
  if (tc->irregular == 0) return n;
  if (tc->irregular == 1) return (i + j) % 3 == 0 ? 0 : ((size_t)i * 7 + (size_t)j * 13) % (n + 1);
  return j == (i * i + 1) % tc->p ? 4 * n : ((i ^ j) & 3) ? 0 : 1;
}

size_t check_pair_count(const check_case *tc, int i, int j) {
  switch (tc->coll) {
    case REDCOLL_COLL_ALLTOALL: return tc->count;
    case REDCOLL_COLL_GATHERV:
    case REDCOLL_COLL_ALLGATHERV_DISPLS: return base_count(tc, 0, i); /* rank i's block */
    case REDCOLL_COLL_SCATTERV: return base_count(tc, 0, j); /* rank j's block */
    default: return base_count(tc, i, j);
  }
}

/* Send side of rank i: block j (to rank j); receive side: block j (from
 * rank j).  Irregular layouts put block p-1 first and leave a gap. */
void check_displs(const check_case *tc, int i, int send, size_t *displs) {
  int p = tc->p;
  size_t off = 0, gap = tc->coll != REDCOLL_COLL_ALLTOALL && tc->irregular ? 1 : 0;
  for (int k = 0; k < p; k++) {
    int j = gap ? p - 1 - k : k;
    displs[j] = off;
    off += (send ? check_pair_count(tc, i, j) : check_pair_count(tc, j, i)) + gap;
  }
}

/* Elements spanned by rank i's send (or receive) blocks. */
static size_t span_of(const check_case *tc, int i, int send) {
  size_t *d = malloc((size_t)tc->p * sizeof *d), end = 0;
  if (d == NULL) return 0;
  check_displs(tc, i, send, d);
  for (int j = 0; j < tc->p; j++) {
    size_t n = send ? check_pair_count(tc, i, j) : check_pair_count(tc, j, i);
    if (n > 0 && d[j] + n > end) end = d[j] + n;
  }
  free(d);
  return end;
}

static int make_shape(const check_case *tc, shape *s) {
  int p = tc->p;
  memset(s, 0, sizeof *s);
  s->dt = tc->op == CHECK_OP_NONCOMM ? REDCOLL_CUSTOM
          : tc->op == CHECK_OP_SUM_RANDOM ? REDCOLL_FLOAT64 : tc->dtype;
  s->op = is_reduction(tc->coll) ? case_op(tc) : NULL;
  s->esize = check_elem_size(tc);
  s->in_count = calloc((size_t)p, sizeof(size_t));
  s->out_count = calloc((size_t)p, sizeof(size_t));
  s->out_off = calloc((size_t)p, sizeof(size_t));
  if (!s->in_count || !s->out_count || !s->out_off) return -1;
  size_t total = 0;
  for (int r = 0; r < p; r++) total += tc->counts ? tc->counts[r] : tc->count;
  size_t off = 0; /* the elements of the blocks of ranks before r */
  for (int r = 0; r < p; off += tc->counts ? tc->counts[r] : tc->count, r++) {
    size_t cr = tc->counts ? tc->counts[r] : tc->count;
    switch (tc->coll) {
      case REDCOLL_COLL_ALLREDUCE:
      case REDCOLL_COLL_BCAST:
        s->in_count[r] = tc->count;
        s->out_count[r] = tc->count;
        s->ref_count = tc->count;
        s->recv_alloc = tc->count;
        break;
      case REDCOLL_COLL_ALLTOALL:
      case REDCOLL_COLL_ALLTOALLV:
      case REDCOLL_COLL_ALLGATHERV_DISPLS:
        /* per rank the image of its recvbuf */
        s->in_count[r] = tc->coll == REDCOLL_COLL_ALLGATHERV_DISPLS ? check_pair_count(tc, r, 0)
                                                                  : span_of(tc, r, 1);
        s->out_count[r] = span_of(tc, r, 0);
        s->out_off[r] = s->ref_count;
        s->ref_count += s->out_count[r];
        if (s->out_count[r] > s->recv_alloc) s->recv_alloc = s->out_count[r];
        break;
      case REDCOLL_COLL_GATHERV: {
        size_t span = span_of(tc, tc->root, 0);
        s->in_count[r] = check_pair_count(tc, r, tc->root);
        s->out_count[r] = r == tc->root ? span : 0;
        s->ref_count = s->recv_alloc = span;
        break;
      }
      case REDCOLL_COLL_SCATTERV:
        s->in_count[r] = r == tc->root ? span_of(tc, tc->root, 1) : 0;
        s->out_count[r] = check_pair_count(tc, tc->root, r);
        s->out_off[r] = s->ref_count;
        s->ref_count += s->out_count[r];
        if (s->out_count[r] > s->recv_alloc) s->recv_alloc = s->out_count[r];
        break;
      case REDCOLL_COLL_SCAN:
      case REDCOLL_COLL_EXSCAN:
      case REDCOLL_COLL_EXSCAN_TOTAL: {
        /* per rank its own result; exscan_total: [exclusive | total] */
        size_t k = tc->coll == REDCOLL_COLL_EXSCAN_TOTAL ? 2 : 1;
        s->in_count[r] = tc->count;
        s->out_count[r] = k * tc->count;
        s->out_off[r] = (size_t)r * k * tc->count;
        s->ref_count = (size_t)p * k * tc->count;
        s->recv_alloc = k * tc->count;
        break;
      }
      case REDCOLL_COLL_REDUCE:
        s->in_count[r] = tc->count;
        s->out_count[r] = r == tc->root ? tc->count : 0;
        s->ref_count = tc->count;
        s->recv_alloc = tc->count;
        break;
      case REDCOLL_COLL_REDUCE_SCATTER_BLOCK:
      case REDCOLL_COLL_REDUCE_SCATTER:
        s->in_count[r] = total;
        s->out_count[r] = cr;
        s->out_off[r] = off;
        s->ref_count = total;
        s->recv_alloc = tc->in_place ? total : (cr > s->recv_alloc ? cr : s->recv_alloc);
        break;
      case REDCOLL_COLL_ALLGATHER:
      case REDCOLL_COLL_ALLGATHERV:
        s->in_count[r] = cr;
        s->out_count[r] = total;
        s->ref_count = total;
        s->recv_alloc = total;
        break;
      case REDCOLL_COLL_GATHER:
        /* p blocks of count at the root, in rank order */
        s->in_count[r] = tc->count;
        s->out_count[r] = r == tc->root ? total : 0;
        s->ref_count = total;
        s->recv_alloc = total;
        break;
      case REDCOLL_COLL_SCATTER:
        /* the root's p blocks; rank r's result is block r */
        s->in_count[r] = r == tc->root ? total : 0;
        s->out_count[r] = tc->count;
        s->out_off[r] = off;
        s->ref_count = total;
        s->recv_alloc = tc->count;
        break;
      default:
        break;
    }
  }
  return 0;
}

static void free_shape(shape *s) {
  free(s->in_count);
  free(s->out_count);
  free(s->out_off);
}

/* ---- the run ------------------------------------------------------------- */

typedef struct run_state {
  const check_case *tc;
  shape sh;
  unsigned char *ref;          /* expected output vector */
  unsigned char **outs;        /* per rank: its output (kept for comparison) */
  redcoll_algo algo0;
  pthread_mutex_t mu;
  char error[512];
} run_state;

static void fail(run_state *st, const char *fmt, int a, long long b) {
  pthread_mutex_lock(&st->mu);
  if (st->error[0] == '\0') snprintf(st->error, sizeof st->error, fmt, a, b);
  pthread_mutex_unlock(&st->mu);
}

static void fill_input(const check_case *tc, const shape *s, int r, unsigned char *dst) {
  /* bcast: only the root's data matters; others get a different pattern */
  int src = tc->coll == REDCOLL_COLL_BCAST ? (r == tc->root ? r : r + 100000) : r;
  size_t off = 0;
  if (tc->coll == REDCOLL_COLL_ALLGATHER || tc->coll == REDCOLL_COLL_ALLGATHERV ||
      tc->coll == REDCOLL_COLL_GATHER) {
    for (int q = 0; q < r; q++) off += s->in_count[q];
  }
  for (size_t j = 0; j < s->in_count[r]; j++) gen_elem(tc, s->dt, src, off + j, dst + j * s->esize);
}

static unsigned char *alloc_guarded(size_t bytes) {
  unsigned char *b = malloc(bytes + GUARD);
  if (b != NULL) memset(b + bytes, GUARD_BYTE, GUARD);
  return b;
}
static int guard_ok(const unsigned char *b, size_t bytes) {
  for (size_t i = 0; i < GUARD; i++)
    if (b[bytes + i] != GUARD_BYTE) return 0;
  return 1;
}

/* alltoall, alltoallv, gatherv, scatterv on rank r with the case's layout.
 * In place: alltoall from recvbuf, gatherv with the root's block at its
 * place in recvbuf, scatterv leaving the root's block in sendbuf (copied
 * out for the check).  gatherv's recvcounts and scatterv's sendcounts are
 * passed on every rank, their displacements at the root only. */
static int call_blocks_v(redcoll_comm *c, const check_case *tc, const shape *s, int r,
                         unsigned char *in, unsigned char *out) {
  int p = tc->p, rc = REDCOLL_ENOMEM, ip = tc->in_place, root = tc->root, at_root = r == root;
  size_t es = s->esize;
  size_t *sc = malloc(4 * (size_t)p * sizeof *sc + 1);
  if (sc == NULL) return rc;
  size_t *sd = sc + p, *rcn = sc + 2 * p, *rd = sc + 3 * p;
  for (int j = 0; j < p; j++) {
    sc[j] = check_pair_count(tc, r, j);
    rcn[j] = check_pair_count(tc, j, r);
  }
  check_displs(tc, r, 1, sd);
  check_displs(tc, r, 0, rd);
  switch (tc->coll) {
    case REDCOLL_COLL_ALLTOALL:
      if (ip) memcpy(out, in, s->in_count[r] * es);
      rc = redcoll_alltoall(c, ip ? REDCOLL_IN_PLACE : in, out, tc->count, s->dt);
      break;
    case REDCOLL_COLL_ALLTOALLV:
      rc = redcoll_alltoallv(c, in, sc, sd, out, rcn, rd, s->dt);
      break;
    case REDCOLL_COLL_ALLGATHERV_DISPLS:
      if (ip) memcpy(out + rd[r] * es, in, rcn[r] * es);
      rc = redcoll_allgatherv_displs(c, ip ? REDCOLL_IN_PLACE : in, rcn[r], out, rcn, rd, s->dt);
      break;
    case REDCOLL_COLL_GATHERV:
      if (ip && at_root) memcpy(out + rd[root] * es, in, rcn[root] * es);
      rc = redcoll_gatherv(c, ip && at_root ? REDCOLL_IN_PLACE : in, rcn[r], at_root ? out : NULL,
                           rcn, at_root ? rd : NULL, s->dt, root);
      break;
    default:
      rc = redcoll_scatterv(c, at_root ? in : NULL, sc, at_root ? sd : NULL,
                            ip && at_root ? (void *)REDCOLL_IN_PLACE : out, sc[r], s->dt, root);
      if (ip && at_root && rc == REDCOLL_OK) memcpy(out, in + sd[root] * es, sc[root] * es);
      break;
  }
  free(sc);
  return rc;
}

static int rank_main(redcoll_comm *c, void *arg) {
  run_state *st = arg;
  const check_case *tc = st->tc;
  const shape *s = &st->sh;
  int r = redcoll_comm_rank(c), rc;
  size_t es = s->esize, inb = s->in_count[r] * es, recvb = s->recv_alloc * es;
  if (tc->algo != REDCOLL_ALGO_AUTO) {
    rc = redcoll_comm_set_algorithm(c, tc->coll, tc->algo);
    if (rc != REDCOLL_OK) return rc;
  }
  if (tc->threshold) redcoll_comm_set_threshold(c, tc->threshold);

  unsigned char *in = alloc_guarded(inb), *orig = malloc(inb + 1);
  unsigned char *out = alloc_guarded(recvb);
  if (!in || !orig || !out) {
    free(in);
    free(orig);
    free(out);
    return REDCOLL_ENOMEM;
  }
  fill_input(tc, s, r, in);
  memcpy(orig, in, inb);
  memset(out, 0x5a, recvb);
  const void *sendbuf = in;
  int ip = tc->in_place;
  switch (tc->coll) {
    case REDCOLL_COLL_ALLREDUCE:
      if (ip) { memcpy(out, in, inb); sendbuf = REDCOLL_IN_PLACE; }
      rc = redcoll_allreduce(c, sendbuf, out, tc->count, s->dt, s->op);
      break;
    case REDCOLL_COLL_REDUCE:
      if (ip && r == tc->root) { memcpy(out, in, inb); sendbuf = REDCOLL_IN_PLACE; }
      rc = redcoll_reduce(c, sendbuf, r == tc->root ? out : NULL, tc->count, s->dt, s->op, tc->root);
      break;
    case REDCOLL_COLL_REDUCE_SCATTER_BLOCK:
      if (ip) { memcpy(out, in, inb); sendbuf = REDCOLL_IN_PLACE; }
      rc = redcoll_reduce_scatter_block(c, sendbuf, out, tc->count, s->dt, s->op);
      break;
    case REDCOLL_COLL_REDUCE_SCATTER: {
      size_t *cnt = malloc((size_t)tc->p * sizeof(size_t));
      if (cnt == NULL) { rc = REDCOLL_ENOMEM; break; }
      for (int q = 0; q < tc->p; q++) cnt[q] = tc->counts ? tc->counts[q] : tc->count;
      if (ip) { memcpy(out, in, inb); sendbuf = REDCOLL_IN_PLACE; }
      rc = redcoll_reduce_scatter(c, sendbuf, out, cnt, s->dt, s->op);
      free(cnt);
      break;
    }
    case REDCOLL_COLL_ALLGATHER:
      if (ip) { memcpy(out + (size_t)r * inb, in, inb); sendbuf = REDCOLL_IN_PLACE; }
      rc = redcoll_allgather(c, sendbuf, out, tc->count, s->dt);
      break;
    case REDCOLL_COLL_ALLGATHERV: {
      size_t *cnt = malloc((size_t)tc->p * sizeof(size_t)), off = 0;
      if (cnt == NULL) { rc = REDCOLL_ENOMEM; break; }
      for (int q = 0; q < tc->p; q++) {
        cnt[q] = tc->counts ? tc->counts[q] : tc->count;
        if (q < r) off += cnt[q];
      }
      if (ip) { memcpy(out + off * es, in, inb); sendbuf = REDCOLL_IN_PLACE; }
      rc = redcoll_allgatherv(c, sendbuf, s->in_count[r], out, cnt, s->dt);
      free(cnt);
      break;
    }
    case REDCOLL_COLL_GATHER: {
      /* recvbuf is not significant off the root: pass NULL there */
      size_t blk = tc->count * es;
      if (ip && r == tc->root) { memcpy(out + (size_t)r * blk, in, blk); sendbuf = REDCOLL_IN_PLACE; }
      rc = redcoll_gather(c, sendbuf, r == tc->root ? out : NULL, tc->count, s->dt, tc->root);
      break;
    }
    case REDCOLL_COLL_SCATTER: {
      /* sendbuf is not significant off the root: pass NULL there.  In place,
       * the root's block stays in sendbuf; it is copied out for the check.
       * (REDCOLL_IN_PLACE is a const pointer, recvbuf is not: cast.) */
      size_t blk = tc->count * es;
      int root_ip = ip && r == tc->root;
      void *recvbuf = root_ip ? (void *)REDCOLL_IN_PLACE : (void *)out;
      rc = redcoll_scatter(c, r == tc->root ? in : NULL, recvbuf, tc->count, s->dt, tc->root);
      if (root_ip && rc == REDCOLL_OK) memcpy(out, in + (size_t)r * blk, blk);
      break;
    }
    case REDCOLL_COLL_BCAST:
      memcpy(out, in, inb);
      rc = redcoll_bcast(c, out, tc->count, s->dt, tc->root);
      break;
    case REDCOLL_COLL_BARRIER:
      rc = redcoll_barrier(c);
      break;
    case REDCOLL_COLL_ALLTOALL:
    case REDCOLL_COLL_ALLTOALLV:
    case REDCOLL_COLL_GATHERV:
    case REDCOLL_COLL_SCATTERV:
    case REDCOLL_COLL_ALLGATHERV_DISPLS:
      rc = call_blocks_v(c, tc, s, r, in, out);
      break;
    case REDCOLL_COLL_SCAN:
    case REDCOLL_COLL_EXSCAN:
      if (ip) { memcpy(out, in, inb); sendbuf = REDCOLL_IN_PLACE; }
      rc = tc->coll == REDCOLL_COLL_SCAN ? redcoll_scan(c, sendbuf, out, tc->count, s->dt, s->op)
                                         : redcoll_exscan(c, sendbuf, out, tc->count, s->dt, s->op);
      break;
    case REDCOLL_COLL_EXSCAN_TOTAL:
      if (ip) { memcpy(out, in, inb); sendbuf = REDCOLL_IN_PLACE; }
      rc = redcoll_exscan_total(c, sendbuf, out, out + inb, tc->count, s->dt, s->op);
      break;
    default:
      rc = REDCOLL_ENOTSUP;
      break;
  }
  if (r == 0) st->algo0 = redcoll_comm_last_algorithm(c);
  if (rc == REDCOLL_OK) {
    if (!guard_ok(out, recvb)) fail(st, "rank %d: wrote past the end of recvbuf (%lld bytes)", r, (long long)recvb);
    if (!guard_ok(in, inb)) fail(st, "rank %d: wrote past the end of sendbuf (%lld bytes)", r, (long long)inb);
    /* in place, every rank's input was copied to recvbuf first (or is the
     * root's scatter(v) sendbuf): in must be as it was in every case */
    if (memcmp(in, orig, inb) != 0) fail(st, "rank %d: modified its input (%lld bytes)", r, (long long)inb);
    st->outs[r] = out;
    out = NULL;
  }
  free(in);
  free(orig);
  free(out);
  return rc;
}

/* Rank r's expected recvbuf (and total) for scan, exscan, exscan_total:
 * sequential prefixes in rank order; rank 0's exscan recvbuf as it was
 * before the call (the 0x5a fill, or its input in place). */
static void prefix_reference(const check_case *tc, run_state *st, unsigned char *v) {
  const shape *s = &st->sh;
  size_t n = tc->count, es = s->esize, bytes = n * es;
  int total = tc->coll == REDCOLL_COLL_EXSCAN_TOTAL, incl = tc->coll == REDCOLL_COLL_SCAN;
  unsigned char *acc = malloc(bytes + 1), *prev = malloc(bytes + 1);
  if (acc == NULL || prev == NULL) goto out;
  for (int r = 0; r < tc->p; r++) {
    unsigned char *blk = st->ref + s->out_off[r] * es;
    fill_input(tc, s, r, v);
    memcpy(prev, acc, bytes); /* the prefix of the ranks before r */
    if (r == 0) memcpy(acc, v, bytes);
    else redcoll_reduce_local(acc, acc, v, n, s->dt, s->op);
    if (incl) memcpy(blk, acc, bytes);
    else if (r > 0) memcpy(blk, prev, bytes);
    else if (tc->in_place) memcpy(blk, v, bytes);
    else memset(blk, 0x5a, bytes);
  }
  if (total) /* acc is the total now */
    for (int r = 0; r < tc->p; r++) memcpy(st->ref + (s->out_off[r] + n) * es, acc, bytes);
out:
  free(acc);
  free(prev);
}

/* Element e of what rank i sends to rank j (its input at the block's
 * displacement). */
static void sent_elem(const check_case *tc, redcoll_dtype dt, int i, int j, size_t e, void *dst) {
  size_t *d = malloc((size_t)tc->p * sizeof *d);
  if (d == NULL) return;
  check_displs(tc, i, 1, d);
  gen_elem(tc, dt, i, d[j] + e, dst);
  free(d);
}

/* Each rank's expected recvbuf: 0x5a where nothing lands, the blocks where
 * their displacements put them. */
static void blocks_reference(const check_case *tc, run_state *st) {
  const shape *s = &st->sh;
  size_t es = s->esize, *d = malloc((size_t)tc->p * sizeof *d);
  if (d == NULL) return;
  memset(st->ref, 0x5a, s->ref_count * es);
  for (int r = 0; r < tc->p; r++) {
    unsigned char *img = st->ref + s->out_off[r] * es;
    if (s->out_count[r] == 0) continue;
    if (tc->coll == REDCOLL_COLL_SCATTERV) {
      for (size_t e = 0; e < s->out_count[r]; e++) sent_elem(tc, s->dt, tc->root, r, e, img + e * es);
      continue;
    }
    check_displs(tc, r, 0, d);
    for (int j = 0; j < tc->p; j++) {
      size_t n = check_pair_count(tc, j, r);
      for (size_t e = 0; e < n; e++) {
        if (tc->coll == REDCOLL_COLL_GATHERV || tc->coll == REDCOLL_COLL_ALLGATHERV_DISPLS)
          gen_elem(tc, s->dt, j, e, img + (d[j] + e) * es);
        else sent_elem(tc, s->dt, j, r, e, img + (d[j] + e) * es);
      }
    }
  }
  free(d);
}

static void compute_reference(const check_case *tc, run_state *st) {
  const shape *s = &st->sh;
  size_t es = s->esize, n = s->ref_count;
  unsigned char *tmp = malloc((n > tc->count ? n : tc->count) * es + 1);
  if (tc->coll == REDCOLL_COLL_BCAST) {
    fill_input(tc, s, tc->root, st->ref);
  } else if (tc->coll == REDCOLL_COLL_SCATTER) {
    fill_input(tc, s, tc->root, st->ref);
  } else if (tc->coll == REDCOLL_COLL_ALLGATHER || tc->coll == REDCOLL_COLL_ALLGATHERV ||
             tc->coll == REDCOLL_COLL_GATHER) {
    size_t off = 0;
    for (int r = 0; r < tc->p; r++) {
      fill_input(tc, s, r, st->ref + off * es);
      off += s->in_count[r];
    }
  } else if (is_prefix(tc->coll)) {
    prefix_reference(tc, st, tmp);
  } else if (is_blocks_v(tc->coll)) {
    blocks_reference(tc, st);
  } else if (is_reduction(tc->coll)) {
    fill_input(tc, s, 0, st->ref);
    for (int r = 1; r < tc->p; r++) {
      fill_input(tc, s, r, tmp);
      redcoll_reduce_local(st->ref, st->ref, tmp, n, s->dt, s->op);
    }
  }
  free(tmp);
}

void check_case_init(check_case *tc) {
  memset(tc, 0, sizeof *tc);
  tc->coll = REDCOLL_COLL_ALLREDUCE;
  tc->algo = REDCOLL_ALGO_AUTO;
  tc->p = 2;
  tc->dtype = REDCOLL_FLOAT64;
  tc->op = CHECK_OP_SUM;
  redcoll_mock_config_init(&tc->mock);
}

check_case check_case_make(redcoll_coll coll, redcoll_algo algo, int p, size_t count, int root,
                           check_op op, int in_place) {
  check_case tc;
  check_case_init(&tc);
  tc.coll = coll;
  tc.algo = algo;
  tc.p = p;
  tc.count = count;
  tc.root = root;
  tc.op = op;
  tc.in_place = in_place;
  return tc;
}

int check_run_report(const check_case *tc, check_result *res) {
  int rc = check_run(tc, res);
  if (rc == 0 && res->ok) return 1;
  fprintf(stderr,
          "%s/%s p=%d count=%zu root=%d op=%d in_place=%d threshold=%zu eager=%zu seed=%llu: %s\n",
          redcoll_coll_name(tc->coll), redcoll_algo_name(tc->algo), tc->p, tc->count, tc->root,
          (int)tc->op, tc->in_place, tc->threshold, tc->mock.eager_limit,
          (unsigned long long)tc->mock.seed, res->error);
  return 0;
}

static int close_enough(const double *a, const double *b, size_t n) {
  for (size_t i = 0; i < n; i++) {
    double d = fabs(a[i] - b[i]), m = fabs(b[i]) > 1 ? fabs(b[i]) : 1;
    if (!(d <= 1e-9 * m)) return 0;
  }
  return 1;
}

/* Orders (host, bytes) pairs by host. */
typedef struct {
  uint32_t host;
  uint64_t bytes;
} host_bytes;
static int cmp_host_bytes(const void *a, const void *b) {
  uint32_t x = ((const host_bytes *)a)->host, y = ((const host_bytes *)b)->host;
  return (x > y) - (x < y);
}

/* The most bytes one host of mock sent to other hosts (the ranks' bytes
 * to other hosts, summed per host), or 0 without memory for it. */
static uint64_t max_host_bytes_out(const redcoll_mock_config *mock, int p,
                                   const redcoll_mock_stats *stats) {
  host_bytes *hb = malloc((size_t)p * sizeof *hb);
  if (hb == NULL) return 0;
  for (int r = 0; r < p; r++) {
    hb[r].host = mock->hosts != NULL            ? mock->hosts[r]
                 : mock->ranks_per_host > 1 ? (uint32_t)r / mock->ranks_per_host
                                                : (uint32_t)r;
    hb[r].bytes = stats[r].bytes_sent_host;
  }
  qsort(hb, (size_t)p, sizeof *hb, cmp_host_bytes);
  uint64_t best = 0, sum = 0;
  for (int r = 0; r < p; r++) {
    sum = (r > 0 && hb[r].host == hb[r - 1].host ? sum : 0) + hb[r].bytes;
    if (sum > best) best = sum;
  }
  free(hb);
  return best;
}

int check_run(const check_case *tc, check_result *res) {
  run_state st;
  memset(res, 0, sizeof *res);
  memset(&st, 0, sizeof st);
  st.tc = tc;
  pthread_mutex_init(&st.mu, NULL);
  int p = tc->p;
  redcoll_mock_stats *stats = NULL;
  if (p < 1 || make_shape(tc, &st.sh) != 0) {
    snprintf(res->error, sizeof res->error, "bad case (p = %d)", p);
    res->status = REDCOLL_EINVAL;
    free_shape(&st.sh);
    pthread_mutex_destroy(&st.mu);
    return -1;
  }
  size_t es = st.sh.esize;
  res->bytes = (tc->counts ? 0 : tc->count) * es;
  if (tc->counts)
    for (int r = 0; r < p; r++) res->bytes += tc->counts[r] * es;
  st.ref = malloc(st.sh.ref_count * es + 1);
  st.outs = calloc((size_t)p, sizeof *st.outs);
  stats = calloc((size_t)p, sizeof *stats);
  if (!st.ref || !st.outs || !stats) {
    res->status = REDCOLL_ENOMEM;
    snprintf(res->error, sizeof res->error, "out of memory");
    goto done;
  }
  compute_reference(tc, &st);

  if (tc->threads) {
    res->status = redcoll_threads_run(p, rank_main, &st);
    for (int r = 0; r < p; r++) stats[r].status = st.outs[r] != NULL ? REDCOLL_OK : res->status;
  } else {
    res->status = redcoll_mock_run(p, &tc->mock, rank_main, &st, stats);
  }
  res->algo = st.algo0;
  for (int r = 0; r < p; r++) {
    if (stats[r].time > res->time) res->time = stats[r].time;
    if (stats[r].rounds > res->rounds) res->rounds = stats[r].rounds;
    if (stats[r].bytes_sent > res->max_bytes_sent) res->max_bytes_sent = stats[r].bytes_sent;
    if (stats[r].bytes_recv > res->max_bytes_recv) res->max_bytes_recv = stats[r].bytes_recv;
    if (stats[r].bytes_reduced > res->max_bytes_reduced) res->max_bytes_reduced = stats[r].bytes_reduced;
    res->msgs += stats[r].msgs_sent;
  }
  if (!tc->threads) res->max_host_bytes_out = max_host_bytes_out(&tc->mock, p, stats);
  if (res->status != REDCOLL_OK) {
    for (int r = 0; r < p; r++) {
      if (stats[r].status != REDCOLL_OK) {
        snprintf(res->error, sizeof res->error, "rank %d returned %s", r,
                 redcoll_status_name(stats[r].status));
        break;
      }
    }
    if (res->error[0] == '\0')
      snprintf(res->error, sizeof res->error, "run returned %s", redcoll_status_name(res->status));
    goto done;
  }
  if (st.error[0] != '\0') {
    memcpy(res->error, st.error, sizeof res->error);
    goto done;
  }
  /* Compare every rank's output. */
  for (int r = 0; r < p && res->error[0] == '\0'; r++) {
    size_t n = st.sh.out_count[r];
    if (n == 0) continue;
    const unsigned char *exp = st.ref + st.sh.out_off[r] * es;
    const unsigned char *got = st.outs[r];
    if (tc->op == CHECK_OP_SUM_RANDOM) {
      if (!close_enough((const double *)(const void *)got, (const double *)(const void *)exp, n))
        snprintf(res->error, sizeof res->error, "rank %d: result differs from the sequential sum", r);
      else if (tc->coll == REDCOLL_COLL_ALLREDUCE && r > 0 && memcmp(got, st.outs[0], n * es) != 0)
        snprintf(res->error, sizeof res->error, "rank %d: result not bitwise equal to rank 0's", r);
      else if (tc->coll == REDCOLL_COLL_EXSCAN_TOTAL && r > 0 &&
               memcmp(got + n / 2 * es, st.outs[0] + n / 2 * es, n / 2 * es) != 0)
        snprintf(res->error, sizeof res->error, "rank %d: total not bitwise equal to rank 0's", r);
      continue;
    }
    if (memcmp(got, exp, n * es) != 0) {
      size_t j = 0;
      while (memcmp(got + j * es, exp + j * es, es) == 0) j++;
      snprintf(res->error, sizeof res->error, "rank %d: wrong result at element %zu of %zu", r, j, n);
    }
  }
  res->ok = res->error[0] == '\0';

done:
  if (st.outs)
    for (int r = 0; r < p; r++) free(st.outs[r]);
  free(st.outs);
  free(st.ref);
  free(stats);
  free_shape(&st.sh);
  pthread_mutex_destroy(&st.mu);
  return res->ok ? 0 : -1;
}
