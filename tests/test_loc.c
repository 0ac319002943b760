/*
 * MINLOC and MAXLOC on the value-index dtypes: the kernels against a
 * direct reference (ties to the lower index, NaN on the left kept), with
 * misaligned buffers and out aliasing an input; allreduce, reduce and scan
 * with them on the simulator (p = 1..33) and on threads, every rank's
 * result compared with the sequential answer; the argument checks (no
 * other operator with these dtypes, these operators with no other dtype).
 */
#include <math.h>
#include <stddef.h>

#include "redcoll/mock.h"
#include "redcoll/threads.h"
#include "test.h"

/* Where the value and the index are in each pair, and their kinds. */
typedef struct {
  redcoll_dtype dt;
  size_t size, ioff;
  char vkind; /* 'f' float, 'd' double, 'i' int32, 'l' int64 */
  int ibits;  /* 32 or 64 */
} pair_desc;

#define DESC(D, T, V, I) {REDCOLL_##D, sizeof(T), offsetof(T, index), V, I}
static const pair_desc descs[] = {
    DESC(FLOAT32_INT32, redcoll_float32_int32, 'f', 32),
    DESC(FLOAT64_INT32, redcoll_float64_int32, 'd', 32),
    DESC(INT32_INT32, redcoll_int32_int32, 'i', 32),
    DESC(INT64_INT32, redcoll_int64_int32, 'l', 32),
    DESC(FLOAT32_INT64, redcoll_float32_int64, 'f', 64),
    DESC(FLOAT64_INT64, redcoll_float64_int64, 'd', 64),
    DESC(INT32_INT64, redcoll_int32_int64, 'i', 64),
    DESC(INT64_INT64, redcoll_int64_int64, 'l', 64),
};
#define NDESC (sizeof descs / sizeof descs[0])

static void put(const pair_desc *d, unsigned char *e, double v, long long idx) {
  memset(e, 0, d->size);
  float f = (float)v;
  int32_t i32 = (int32_t)v, x32 = (int32_t)idx;
  int64_t i64 = (int64_t)v, x64 = idx;
  switch (d->vkind) {
    case 'f': memcpy(e, &f, 4); break;
    case 'd': memcpy(e, &v, 8); break;
    case 'i': memcpy(e, &i32, 4); break;
    default: memcpy(e, &i64, 8); break;
  }
  if (d->ibits == 32) memcpy(e + d->ioff, &x32, 4);
  else memcpy(e + d->ioff, &x64, 8);
}

static double val(const pair_desc *d, const unsigned char *e) {
  float f;
  double x;
  int32_t i32;
  int64_t i64;
  switch (d->vkind) {
    case 'f': memcpy(&f, e, 4); return f;
    case 'd': memcpy(&x, e, 8); return x;
    case 'i': memcpy(&i32, e, 4); return i32;
    default: memcpy(&i64, e, 8); return (double)i64;
  }
}

static long long idx(const pair_desc *d, const unsigned char *e) {
  int32_t x32;
  int64_t x64;
  if (d->ibits == 32) { memcpy(&x32, e + d->ioff, 4); return x32; }
  memcpy(&x64, e + d->ioff, 8);
  return x64;
}

/* The reference: the right pair wins if strictly better, or equal with a
 * lower index. */
static void ref(const pair_desc *d, int max, unsigned char *out, const unsigned char *l,
                const unsigned char *r) {
  double a = val(d, l), b = val(d, r);
  int right = (max ? b > a : b < a) || (a == b && idx(d, r) < idx(d, l));
  memmove(out, right ? r : l, d->size);
}

static uint64_t rnd(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

static void kernels(void) {
  uint64_t seed = 88172645463325252ULL;
  for (size_t k = 0; k < NDESC; k++) {
    const pair_desc *d = &descs[k];
    for (int max = 0; max < 2; max++) {
      for (int shift = 0; shift < 2; shift++) {
        for (int alias = 0; alias < 3; alias++) {
          enum { N = 67 };
          unsigned char lb[N * 16 + 1], rb[N * 16 + 1], ob[N * 16 + 1], want[N * 16];
          unsigned char *l = lb + shift, *r = rb + shift, *o = alias == 1 ? l : alias == 2 ? r : ob + shift;
          for (int i = 0; i < N; i++) {
            put(d, l + i * d->size, (double)(rnd(&seed) % 5) - 2, (long long)(rnd(&seed) % 7) - 3);
            put(d, r + i * d->size, (double)(rnd(&seed) % 5) - 2, (long long)(rnd(&seed) % 7) - 3);
            ref(d, max, want + i * d->size, l + i * d->size, r + i * d->size);
          }
          CHECK_INT(redcoll_reduce_local(o, l, r, N, d->dt, max ? REDCOLL_MAXLOC : REDCOLL_MINLOC),
                    REDCOLL_OK);
          CHECK_MSG(memcmp(o, want, N * d->size) == 0, "%s %s shift %d alias %d",
                    redcoll_dtype_name(d->dt), max ? "maxloc" : "minloc", shift, alias);
        }
      }
    }
    /* a NaN on the left is kept, on the right dropped (floating values) */
    if (d->vkind == 'f' || d->vkind == 'd') {
      unsigned char a[16], b[16], o[16];
      put(d, a, NAN, 5);
      put(d, b, 1, 0);
      CHECK_INT(redcoll_reduce_local(o, a, b, 1, d->dt, REDCOLL_MINLOC), REDCOLL_OK);
      CHECK(isnan(val(d, o)) && idx(d, o) == 5);
      CHECK_INT(redcoll_reduce_local(o, b, a, 1, d->dt, REDCOLL_MAXLOC), REDCOLL_OK);
      CHECK(val(d, o) == 1 && idx(d, o) == 0);
    }
    /* no other operator with these dtypes, and these with no other dtype */
    unsigned char x[16] = {0};
    CHECK_INT(redcoll_reduce_local(x, x, x, 1, d->dt, REDCOLL_SUM), REDCOLL_EINVAL);
    CHECK_INT(redcoll_reduce_local(x, x, x, 1, d->dt, REDCOLL_MAX), REDCOLL_EINVAL);
  }
  unsigned char x[16] = {0};
  CHECK_INT(redcoll_reduce_local(x, x, x, 1, REDCOLL_FLOAT64, REDCOLL_MINLOC), REDCOLL_EINVAL);
  CHECK_INT(redcoll_reduce_local(x, x, x, 1, REDCOLL_INT32, REDCOLL_MAXLOC), REDCOLL_EINVAL);
  CHECK_INT(redcoll_op_is_commutative(REDCOLL_MINLOC), 1);
}

/* ---- collectives ---------------------------------------------------------- */

typedef struct {
  const pair_desc *d;
  int max, p;
  size_t n;
  int bad;
} coll_job;

/* Rank r's element j: values from a small range (many ties), index r. */
static void input(const coll_job *j, int r, unsigned char *buf) {
  for (size_t e = 0; e < j->n; e++)
    put(j->d, buf + e * j->d->size, (double)((r * 7 + (int)e * 3) % 4), r);
}

static int coll_rank(redcoll_comm *c, void *arg) {
  coll_job *j = arg;
  const pair_desc *d = j->d;
  const redcoll_op *op = j->max ? REDCOLL_MAXLOC : REDCOLL_MINLOC;
  int me = redcoll_comm_rank(c), rc;
  size_t bytes = j->n * d->size;
  unsigned char *in = malloc(bytes + 1), *out = malloc(bytes + 1), *acc = malloc(bytes + 1),
                *tmp = malloc(bytes + 1);
  if (!in || !out || !acc || !tmp) return REDCOLL_ENOMEM;
  input(j, me, in);
  for (int what = 0; what < 3; what++) {
    /* the expected: all ranks (allreduce, reduce at root p-1) or ranks 0..me (scan) */
    int upto = what == 2 ? me : j->p - 1;
    input(j, 0, acc);
    for (int r = 1; r <= upto; r++) {
      input(j, r, tmp);
      for (size_t e = 0; e < j->n; e++) ref(d, j->max, acc + e * d->size, acc + e * d->size, tmp + e * d->size);
    }
    if (what == 0) rc = redcoll_allreduce(c, in, out, j->n, d->dt, op);
    else if (what == 1) rc = redcoll_reduce(c, in, out, j->n, d->dt, op, j->p - 1);
    else rc = redcoll_scan(c, in, out, j->n, d->dt, op);
    if (rc != REDCOLL_OK) break;
    if ((what != 1 || me == j->p - 1) && memcmp(out, acc, bytes) != 0) __atomic_store_n(&j->bad, 1, __ATOMIC_RELAXED);
  }
  free(in);
  free(out);
  free(acc);
  free(tmp);
  return rc;
}

static void collectives(void) {
  for (size_t k = 0; k < NDESC; k++)
    for (int max = 0; max < 2; max++)
      for (int p = 1; p <= 33; p++) {
        coll_job j = {&descs[k], max, p, 9, 0};
        CHECK_INT(redcoll_mock_run(p, NULL, coll_rank, &j, NULL), REDCOLL_OK);
        CHECK_MSG(!j.bad, "%s %s p=%d", redcoll_dtype_name(descs[k].dt), max ? "maxloc" : "minloc", p);
        if (p % 8 != 5) continue;
        j.bad = 0;
        CHECK_INT(redcoll_threads_run(p, coll_rank, &j), REDCOLL_OK);
        CHECK_MSG(!j.bad, "threads %s p=%d", redcoll_dtype_name(descs[k].dt), p);
      }
}

TEST_MAIN(TEST(kernels), TEST(collectives))
