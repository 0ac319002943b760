/*
 * The interposer (libredcoll-mpi.so, under LD_PRELOAD) against Open MPI's
 * own collectives: every intercepted collective is called through MPI_*
 * (redcoll) and PMPI_* (MPI) on the same inputs and the results compared
 * byte for byte on every rank, with MPI_IN_PLACE, every root, built-in
 * and user operators, a non-commutative user operator (also against a
 * rank-order fold), datatypes with and without gaps, and communicators
 * made by MPI_Comm_dup, split and create and freed again.  Each call
 * checks from the interposer's counts whether redcoll took it or it fell
 * through, as expected.  A float sum whose terms cancel gives the same
 * bits on every rank.
 *
 * `mpi_interpose` runs everything; `mpi_interpose --listed` checks the
 * selection REDCOLL_MPI_COLLS=allreduce=ring,bcast (allreduce and bcast
 * taken, the others not).
 */
#include <dlfcn.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test.h"

static int P, R;
typedef int (*counts_fn)(const char *, long *, long *);
static counts_fn counts;

/* ---- expectation of the interposer's choice -------------------------------- */

static long t0, f0;
static const char *cur;

static void before(const char *coll) {
  cur = coll;
  t0 = f0 = -1;
  if (counts) counts(coll, &t0, &f0);
}

/* After one call of cur: taken by redcoll (1) or fallen through (0). */
static void after(int want_taken, const char *what) {
  long t = -1, f = -1;
  if (counts) counts(cur, &t, &f);
  CHECK_MSG(t == t0 + want_taken && f == f0 + !want_taken,
            "%s %s: taken %ld -> %ld, fell %ld -> %ld, expected %s", cur, what, t0, t, f0, f,
            want_taken ? "taken" : "fallen through");
}

#define SAME(a, b, n, ...) CHECK_MSG(memcmp((a), (b), (n)) == 0, __VA_ARGS__)

/* ---- inputs -------------------------------------------------------------------- */

static int ival(int rank, int i) { return (rank + 1) * 1000 + i * 7 - (i % 5) * rank; }

static void fill_int(int *x, int n, int rank) {
  for (int i = 0; i < n; i++) x[i] = ival(rank, i);
}

/* A 2x2 integer matrix product modulo 2^32: associative, not commutative. */
typedef struct { uint32_t a, b, c, d; } mat;
static void mat_mul(mat *o, const mat *l, const mat *r) {
  mat t = {l->a * r->a + l->b * r->c, l->a * r->b + l->b * r->d, l->c * r->a + l->d * r->c,
           l->c * r->b + l->d * r->d};
  *o = t;
}
/* MPI's user function: inout = in (+) inout, in the lower rank's operand. */
static void mat_fn(void *in, void *inout, int *len, MPI_Datatype *dt) {
  (void)dt;
  mat *x = in, *y = inout;
  for (int i = 0; i < *len; i++) mat_mul(&y[i], &x[i], &y[i]);
}
static mat mval(int rank, int i) {
  return (mat){(uint32_t)(rank + 2 + i), (uint32_t)(rank * 3 + 1), (uint32_t)(i + 5),
               (uint32_t)(rank + 7 * i + 1)};
}
/* Commutative: elementwise max of int pairs as one 8-byte element. */
static void pmax_fn(void *in, void *inout, int *len, MPI_Datatype *dt) {
  (void)dt;
  int *x = in, *y = inout;
  for (int i = 0; i < 2 * *len; i++) y[i] = x[i] > y[i] ? x[i] : y[i];
}

static MPI_Op op_mat, op_pmax;
static MPI_Datatype t_mat, t_pair, t_gappy, t_three;

/* ---- reductions ------------------------------------------------------------------ */

static const int sizes[] = {0, 1, 7, 1000, 5000};
#define NSIZES (int)(sizeof sizes / sizeof *sizes)

static void test_allreduce(MPI_Comm comm, int taken) {
  int p, me;
  MPI_Comm_size(comm, &p);
  MPI_Comm_rank(comm, &me);
  int *x = malloc(5000 * sizeof *x), *a = malloc(5000 * sizeof *a), *b = malloc(5000 * sizeof *b);
  for (int s = 0; s < NSIZES; s++) {
    int n = sizes[s];
    fill_int(x, n, me);
    before("allreduce");
    MPI_Allreduce(x, a, n, MPI_INT, MPI_SUM, comm);
    after(taken, "int sum");
    PMPI_Allreduce(x, b, n, MPI_INT, MPI_SUM, comm);
    SAME(a, b, (size_t)n * sizeof *a, "allreduce int sum n=%d", n);
    memcpy(a, x, (size_t)n * sizeof *a);
    before("allreduce");
    MPI_Allreduce(MPI_IN_PLACE, a, n, MPI_INT, MPI_MAX, comm);
    after(taken, "in place");
    PMPI_Allreduce(x, b, n, MPI_INT, MPI_MAX, comm);
    SAME(a, b, (size_t)n * sizeof *a, "allreduce in place int max n=%d", n);
  }
  /* float and double sums of integers (exact in any order), band on bytes,
   * lor on bools, minloc and maxloc on pairs */
  float fx[100], fa[100], fb[100];
  double dx[100], da[100], db[100];
  for (int i = 0; i < 100; i++) /* products exact in any order */
    fx[i] = (float)ival(me, i), dx[i] = (1 + (me + i) % 3) * (i % 2 ? 0.5 : 1.0);
  before("allreduce");
  MPI_Allreduce(fx, fa, 100, MPI_FLOAT, MPI_SUM, comm);
  after(taken, "float");
  PMPI_Allreduce(fx, fb, 100, MPI_FLOAT, MPI_SUM, comm);
  SAME(fa, fb, sizeof fa, "allreduce float sum");
  before("allreduce");
  MPI_Allreduce(dx, da, 100, MPI_DOUBLE, MPI_PROD, comm);
  after(taken, "double prod");
  PMPI_Allreduce(dx, db, 100, MPI_DOUBLE, MPI_PROD, comm);
  for (int i = 0; i < 100; i++) CHECK_MSG(da[i] == db[i], "double prod %d: %g %g", i, da[i], db[i]);
  unsigned char bx[64], ba[64], bb[64];
  for (int i = 0; i < 64; i++) bx[i] = (unsigned char)(me * 37 + i * 11);
  before("allreduce");
  MPI_Allreduce(bx, ba, 64, MPI_BYTE, MPI_BXOR, comm);
  after(taken, "byte bxor");
  PMPI_Allreduce(bx, bb, 64, MPI_BYTE, MPI_BXOR, comm);
  SAME(ba, bb, 64, "allreduce byte bxor");
  _Bool lx[8], la[8], lb[8];
  for (int i = 0; i < 8; i++) lx[i] = (me + i) % 3 == 0;
  before("allreduce");
  MPI_Allreduce(lx, la, 8, MPI_C_BOOL, MPI_LOR, comm);
  after(taken, "bool lor");
  PMPI_Allreduce(lx, lb, 8, MPI_C_BOOL, MPI_LOR, comm);
  SAME(la, lb, sizeof la, "allreduce bool lor");
  struct { double v; int i; } px[10], pa[10], pb[10];
  memset(px, 0, sizeof px), memset(pa, 0, sizeof pa), memset(pb, 0, sizeof pb);
  for (int i = 0; i < 10; i++) px[i].v = (double)((me * 7 + i * 3) % 5), px[i].i = me;
  before("allreduce");
  MPI_Allreduce(px, pa, 10, MPI_DOUBLE_INT, MPI_MAXLOC, comm);
  after(taken, "double_int maxloc");
  PMPI_Allreduce(px, pb, 10, MPI_DOUBLE_INT, MPI_MAXLOC, comm);
  for (int i = 0; i < 10; i++)
    CHECK_MSG(pa[i].v == pb[i].v && pa[i].i == pb[i].i, "maxloc %d", i);
  int ix[20], ia[20], ib[20];
  for (int i = 0; i < 20; i++) ix[i] = i % 2 ? (me * 5 + i) % 7 : me;
  before("allreduce");
  MPI_Allreduce(ix, ia, 10, MPI_2INT, MPI_MINLOC, comm);
  after(taken, "2int minloc");
  PMPI_Allreduce(ix, ib, 10, MPI_2INT, MPI_MINLOC, comm);
  SAME(ia, ib, sizeof ia, "allreduce 2int minloc");
  /* user operators: commutative on a datatype without gaps, the
   * non-commutative one against a rank-order fold */
  int qx[40], qa[40], qb[40];
  fill_int(qx, 40, me);
  before("allreduce");
  MPI_Allreduce(qx, qa, 20, t_pair, op_pmax, comm);
  after(taken, "user op, commutative");
  PMPI_Allreduce(qx, qb, 20, t_pair, op_pmax, comm);
  SAME(qa, qb, sizeof qa, "allreduce user pmax");
  int nm = 600; /* 9600 B: above the inline limit */
  mat *mx = malloc((size_t)nm * sizeof *mx), *ma = malloc((size_t)nm * sizeof *ma),
      *mb = malloc((size_t)nm * sizeof *mb), *fold = malloc((size_t)nm * sizeof *fold);
  for (int i = 0; i < nm; i++) {
    mx[i] = mval(me, i);
    fold[i] = mval(0, i);
    for (int r = 1; r < p; r++) {
      mat v = mval(r, i);
      mat_mul(&fold[i], &fold[i], &v);
    }
  }
  before("allreduce");
  MPI_Allreduce(mx, ma, nm, t_mat, op_mat, comm);
  after(taken, "user op, non-commutative");
  PMPI_Allreduce(mx, mb, nm, t_mat, op_mat, comm);
  SAME(ma, fold, (size_t)nm * sizeof *ma, "allreduce non-commutative against the fold");
  SAME(ma, mb, (size_t)nm * sizeof *ma, "allreduce non-commutative against PMPI");
  memcpy(ma, mx, (size_t)nm * sizeof *ma);
  before("allreduce");
  MPI_Allreduce(MPI_IN_PLACE, ma, nm, t_mat, op_mat, comm);
  after(taken, "user op in place");
  SAME(ma, fold, (size_t)nm * sizeof *ma, "allreduce non-commutative in place");
  /* fall-through: a pair type redcoll has not, a user op on a datatype
   * with gaps, long double */
  struct { short v; int i; } sx[4], sa[4], sb[4];
  memset(sx, 0, sizeof sx), memset(sa, 0, sizeof sa), memset(sb, 0, sizeof sb);
  for (int i = 0; i < 4; i++) sx[i].v = (short)((me + i) % 3), sx[i].i = me;
  before("allreduce");
  MPI_Allreduce(sx, sa, 4, MPI_SHORT_INT, MPI_MINLOC, comm);
  after(0, "short_int");
  PMPI_Allreduce(sx, sb, 4, MPI_SHORT_INT, MPI_MINLOC, comm);
  for (int i = 0; i < 4; i++) CHECK(sa[i].v == sb[i].v && sa[i].i == sb[i].i);
  int gx[8], ga[8], gb[8];
  fill_int(gx, 8, me);
  memset(ga, 0, sizeof ga), memset(gb, 0, sizeof gb);
  before("allreduce");
  MPI_Allreduce(gx, ga, 2, t_gappy, op_pmax, comm);
  after(0, "user op on a datatype with gaps");
  PMPI_Allreduce(gx, gb, 2, t_gappy, op_pmax, comm);
  SAME(ga, gb, sizeof ga, "allreduce gappy");
  long double lx2[3] = {1.0L * me, 2.0L, 3.0L}, la2[3], lb2[3];
  before("allreduce");
  MPI_Allreduce(lx2, la2, 3, MPI_LONG_DOUBLE, MPI_SUM, comm);
  after(0, "long double");
  PMPI_Allreduce(lx2, lb2, 3, MPI_LONG_DOUBLE, MPI_SUM, comm);
  for (int i = 0; i < 3; i++) CHECK(la2[i] == lb2[i]);
  free(mx), free(ma), free(mb), free(fold);
  free(x), free(a), free(b);
}

static void test_reduce(MPI_Comm comm, int taken) {
  int p, me;
  MPI_Comm_size(comm, &p);
  MPI_Comm_rank(comm, &me);
  int n = 1500;
  int *x = malloc((size_t)n * sizeof *x), *a = malloc((size_t)n * sizeof *a),
      *b = malloc((size_t)n * sizeof *b);
  mat mx[50], ma[50], mb[50];
  for (int i = 0; i < 50; i++) mx[i] = mval(me, i);
  fill_int(x, n, me);
  for (int root = 0; root < p; root++) {
    memset(a, 0, (size_t)n * sizeof *a), memset(b, 0, (size_t)n * sizeof *b);
    before("reduce");
    MPI_Reduce(x, a, n, MPI_INT, MPI_SUM, root, comm);
    after(taken, "int sum");
    PMPI_Reduce(x, b, n, MPI_INT, MPI_SUM, root, comm);
    if (me == root) SAME(a, b, (size_t)n * sizeof *a, "reduce root %d", root);
    memcpy(a, x, (size_t)n * sizeof *a);
    before("reduce");
    MPI_Reduce(me == root ? MPI_IN_PLACE : x, me == root ? a : NULL, n, MPI_INT, MPI_MIN, root,
               comm);
    after(taken, "in place");
    PMPI_Reduce(x, b, n, MPI_INT, MPI_MIN, root, comm);
    if (me == root) SAME(a, b, (size_t)n * sizeof *a, "reduce in place root %d", root);
    before("reduce");
    MPI_Reduce(mx, ma, 50, t_mat, op_mat, root, comm);
    after(taken, "non-commutative");
    PMPI_Reduce(mx, mb, 50, t_mat, op_mat, root, comm);
    if (me == root) SAME(ma, mb, sizeof ma, "reduce non-commutative root %d", root);
  }
  free(x), free(a), free(b);
}

static void test_reduce_scatter(MPI_Comm comm, int taken) {
  int p, me;
  MPI_Comm_size(comm, &p);
  MPI_Comm_rank(comm, &me);
  int blk = 300, *cnt = malloc((size_t)p * sizeof *cnt), total = 0;
  for (int i = 0; i < p; i++) cnt[i] = (i * 5) % 4, total += cnt[i];
  int n = blk * p > total ? blk * p : total;
  int *x = malloc((size_t)n * sizeof *x), *a = malloc((size_t)n * sizeof *a),
      *b = malloc((size_t)n * sizeof *b);
  fill_int(x, n, me);
  before("reduce_scatter_block");
  MPI_Reduce_scatter_block(x, a, blk, MPI_INT, MPI_SUM, comm);
  after(taken, "int sum");
  PMPI_Reduce_scatter_block(x, b, blk, MPI_INT, MPI_SUM, comm);
  SAME(a, b, (size_t)blk * sizeof *a, "reduce_scatter_block");
  memcpy(a, x, (size_t)n * sizeof *a);
  before("reduce_scatter_block");
  MPI_Reduce_scatter_block(MPI_IN_PLACE, a, blk, MPI_INT, MPI_SUM, comm);
  after(taken, "in place");
  SAME(a, b, (size_t)blk * sizeof *a, "reduce_scatter_block in place");
  mat *mx = malloc((size_t)p * 20 * sizeof *mx), ma[20], mb[20];
  for (int i = 0; i < p * 20; i++) mx[i] = mval(me, i);
  before("reduce_scatter_block");
  MPI_Reduce_scatter_block(mx, ma, 20, t_mat, op_mat, comm);
  after(taken, "non-commutative");
  PMPI_Reduce_scatter_block(mx, mb, 20, t_mat, op_mat, comm);
  SAME(ma, mb, sizeof ma, "reduce_scatter_block non-commutative");
  free(mx);
  before("reduce_scatter");
  MPI_Reduce_scatter(x, a, cnt, MPI_INT, MPI_SUM, comm);
  after(taken, "int sum");
  PMPI_Reduce_scatter(x, b, cnt, MPI_INT, MPI_SUM, comm);
  SAME(a, b, (size_t)cnt[me] * sizeof *a, "reduce_scatter");
  memcpy(a, x, (size_t)n * sizeof *a);
  before("reduce_scatter");
  MPI_Reduce_scatter(MPI_IN_PLACE, a, cnt, MPI_INT, MPI_SUM, comm);
  after(taken, "in place");
  SAME(a, b, (size_t)cnt[me] * sizeof *a, "reduce_scatter in place");
  free(cnt), free(x), free(a), free(b);
}

static void test_scan(MPI_Comm comm, int taken) {
  int p, me;
  MPI_Comm_size(comm, &p);
  MPI_Comm_rank(comm, &me);
  int n = 1200;
  int *x = malloc((size_t)n * sizeof *x), *a = malloc((size_t)n * sizeof *a),
      *b = malloc((size_t)n * sizeof *b);
  fill_int(x, n, me);
  const char *names[] = {"scan", "exscan"};
  for (int k = 0; k < 2; k++) {
    int (*mpi)(const void *, void *, int, MPI_Datatype, MPI_Op, MPI_Comm) = k ? MPI_Exscan : MPI_Scan;
    int (*pm)(const void *, void *, int, MPI_Datatype, MPI_Op, MPI_Comm) = k ? PMPI_Exscan : PMPI_Scan;
    int check = k == 0 || me > 0; /* exscan: rank 0's result is undefined */
    before(names[k]);
    mpi(x, a, n, MPI_INT, MPI_SUM, comm);
    after(taken, "int sum");
    pm(x, b, n, MPI_INT, MPI_SUM, comm);
    if (check) SAME(a, b, (size_t)n * sizeof *a, "%s", names[k]);
    memcpy(a, x, (size_t)n * sizeof *a);
    before(names[k]);
    mpi(MPI_IN_PLACE, a, n, MPI_INT, MPI_SUM, comm);
    after(taken, "in place");
    if (check) SAME(a, b, (size_t)n * sizeof *a, "%s in place", names[k]);
    mat mx[30], ma[30], mb[30];
    for (int i = 0; i < 30; i++) mx[i] = mval(me, i);
    before(names[k]);
    mpi(mx, ma, 30, t_mat, op_mat, comm);
    after(taken, "non-commutative");
    pm(mx, mb, 30, t_mat, op_mat, comm);
    if (check) SAME(ma, mb, sizeof ma, "%s non-commutative", names[k]);
  }
  (void)p;
  free(x), free(a), free(b);
}

/* ---- data movement --------------------------------------------------------------- */

/* An input x of n ints per rank (filled), two outputs a and b. */
typedef struct bufs {
  int p, me, *x, *a, *b;
} bufs;

static bufs bufs_new(MPI_Comm comm, int n) {
  bufs u;
  MPI_Comm_size(comm, &u.p);
  MPI_Comm_rank(comm, &u.me);
  size_t len = (size_t)n * (size_t)u.p * sizeof(int);
  u.x = malloc(len), u.a = malloc(len), u.b = malloc(len);
  fill_int(u.x, n * u.p, u.me);
  return u;
}

static void bufs_free(bufs *u) { free(u->x), free(u->a), free(u->b); }

static void test_bcast_barrier(MPI_Comm comm, int taken) {
  int p, me;
  MPI_Comm_size(comm, &p);
  MPI_Comm_rank(comm, &me);
  for (int root = 0; root < p; root++)
    for (int s = 0; s < NSIZES; s++) {
      int n = sizes[s], *a = malloc((size_t)(n + 1) * sizeof *a);
      for (int i = 0; i < n; i++) a[i] = me == root ? ival(root, i) : -1;
      before("bcast");
      MPI_Bcast(a, n, MPI_INT, root, comm);
      after(taken, "int");
      int bad = 0;
      for (int i = 0; i < n; i++) bad += a[i] != ival(root, i);
      CHECK_MSG(bad == 0, "bcast root %d n %d", root, n);
      free(a);
    }
  before("barrier");
  MPI_Barrier(comm);
  after(taken, "");
}

static void test_allgather_alltoall(MPI_Comm comm, int taken) {
  int n = 700;
  bufs u = bufs_new(comm, n);
  int p = u.p, me = u.me, *x = u.x, *a = u.a, *b = u.b;
  before("allgather");
  MPI_Allgather(x, n, MPI_INT, a, n, MPI_INT, comm);
  after(taken, "int");
  PMPI_Allgather(x, n, MPI_INT, b, n, MPI_INT, comm);
  SAME(a, b, (size_t)n * p * sizeof *a, "allgather");
  memset(a, 0, (size_t)n * p * sizeof *a);
  memcpy(a + (size_t)me * n, x, (size_t)n * sizeof *a);
  before("allgather");
  MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, a, n, MPI_INT, comm);
  after(taken, "in place");
  SAME(a, b, (size_t)n * p * sizeof *a, "allgather in place");
  before("allgather");
  MPI_Allgather(x, 10, t_three, a, 10, t_three, comm);
  after(taken, "contiguous derived datatype");
  PMPI_Allgather(x, 10, t_three, b, 10, t_three, comm);
  SAME(a, b, (size_t)30 * p * sizeof *a, "allgather derived");
  before("allgather");
  MPI_Allgather(x, 2, t_gappy, a, 2, t_gappy, comm);
  after(0, "datatype with gaps");
  before("alltoall");
  MPI_Alltoall(x, n, MPI_INT, a, n, MPI_INT, comm);
  after(taken, "int");
  PMPI_Alltoall(x, n, MPI_INT, b, n, MPI_INT, comm);
  SAME(a, b, (size_t)n * p * sizeof *a, "alltoall");
  memcpy(a, x, (size_t)n * p * sizeof *a);
  before("alltoall");
  MPI_Alltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, a, n, MPI_INT, comm);
  after(taken, "in place");
  SAME(a, b, (size_t)n * p * sizeof *a, "alltoall in place");
  bufs_free(&u);
}

static void test_v(MPI_Comm comm, int taken) {
  int p, me;
  MPI_Comm_size(comm, &p);
  MPI_Comm_rank(comm, &me);
  int *cnt = malloc((size_t)p * sizeof *cnt), *dis = malloc((size_t)p * sizeof *dis), tot = 0;
  for (int i = 0; i < p; i++) cnt[i] = 200 * (i % 3) + i, dis[i] = tot + 3, tot = dis[i] + cnt[i];
  size_t len = (size_t)tot + 8;
  int *x = malloc(len * sizeof *x), *a = calloc(len, sizeof *a), *b = calloc(len, sizeof *b);
  fill_int(x, (int)len, me);
  before("allgatherv");
  MPI_Allgatherv(x, cnt[me], MPI_INT, a, cnt, dis, MPI_INT, comm);
  after(taken, "int");
  PMPI_Allgatherv(x, cnt[me], MPI_INT, b, cnt, dis, MPI_INT, comm);
  SAME(a, b, len * sizeof *a, "allgatherv");
  memset(a, 0, len * sizeof *a);
  memcpy(a + dis[me], x, (size_t)cnt[me] * sizeof *a);
  before("allgatherv");
  MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, a, cnt, dis, MPI_INT, comm);
  after(taken, "in place");
  SAME(a, b, len * sizeof *a, "allgatherv in place");
  for (int root = 0; root < p; root++) {
    memset(a, 0, len * sizeof *a), memset(b, 0, len * sizeof *b);
    before("gatherv");
    MPI_Gatherv(x, cnt[me], MPI_INT, a, cnt, dis, MPI_INT, root, comm);
    after(taken, "int");
    PMPI_Gatherv(x, cnt[me], MPI_INT, b, cnt, dis, MPI_INT, root, comm);
    if (me == root) SAME(a, b, len * sizeof *a, "gatherv root %d", root);
    if (me == root) memcpy(a + dis[me], x, (size_t)cnt[me] * sizeof *a);
    before("gatherv");
    MPI_Gatherv(me == root ? MPI_IN_PLACE : x, cnt[me], MPI_INT, a, cnt, dis, MPI_INT, root, comm);
    after(taken, "in place");
    if (me == root) SAME(a, b, len * sizeof *a, "gatherv in place root %d", root);
    memset(a, 0, len * sizeof *a), memset(b, 0, len * sizeof *b);
    before("scatterv");
    MPI_Scatterv(x, cnt, dis, MPI_INT, a, cnt[me], MPI_INT, root, comm);
    after(taken, "int");
    PMPI_Scatterv(x, cnt, dis, MPI_INT, b, cnt[me], MPI_INT, root, comm);
    SAME(a, b, (size_t)cnt[me] * sizeof *a, "scatterv root %d", root);
    before("scatterv");
    MPI_Scatterv(x, cnt, dis, MPI_INT, me == root ? MPI_IN_PLACE : a, cnt[me], MPI_INT, root, comm);
    after(taken, "in place");
    if (me != root) SAME(a, b, (size_t)cnt[me] * sizeof *a, "scatterv in place root %d", root);
  }
  /* alltoallv: rank i sends (i + j) % 4 * 50 ints to j, at gapped places */
  int *sc = malloc(4 * (size_t)p * sizeof *sc), *sd = sc + p, *rc = sc + 2 * p, *rd = sc + 3 * p;
  int st = 0, rt = 0;
  for (int j = 0; j < p; j++) {
    sc[j] = (me + j) % 4 * 50, sd[j] = st + 1, st = sd[j] + sc[j];
    rc[j] = (j + me) % 4 * 50, rd[j] = rt + 2, rt = rd[j] + rc[j];
  }
  int *sx = malloc((size_t)(st + 1) * sizeof *sx), *ra = calloc((size_t)rt + 1, sizeof *ra),
      *rb = calloc((size_t)rt + 1, sizeof *rb);
  fill_int(sx, st + 1, me);
  before("alltoallv");
  MPI_Alltoallv(sx, sc, sd, MPI_INT, ra, rc, rd, MPI_INT, comm);
  after(taken, "int");
  PMPI_Alltoallv(sx, sc, sd, MPI_INT, rb, rc, rd, MPI_INT, comm);
  SAME(ra, rb, (size_t)(rt + 1) * sizeof *ra, "alltoallv");
  /* in place: no redcoll form, falls through (symmetric counts) */
  int *ic = malloc(2 * (size_t)p * sizeof *ic), *id = ic + p;
  for (int j = 0; j < p; j++) ic[j] = 30, id[j] = 40 * j;
  int *ia = malloc((size_t)40 * p * sizeof *ia), *ib = malloc((size_t)40 * p * sizeof *ib);
  fill_int(ia, 40 * p, me);
  PMPI_Alltoallv(ia, ic, id, MPI_INT, ib, ic, id, MPI_INT, comm);
  before("alltoallv");
  MPI_Alltoallv(MPI_IN_PLACE, NULL, NULL, MPI_DATATYPE_NULL, ia, ic, id, MPI_INT, comm);
  after(0, "in place");
  for (int j = 0; j < p; j++)
    SAME(ia + 40 * j, ib + 40 * j, 30 * sizeof *ia, "alltoallv in place block %d", j);
  free(ic), free(ia), free(ib);
  free(sc), free(sx), free(ra), free(rb);
  free(cnt), free(dis), free(x), free(a), free(b);
}

static void test_gather_scatter(MPI_Comm comm, int taken) {
  int n = 600;
  bufs u = bufs_new(comm, n);
  int p = u.p, me = u.me, *x = u.x, *a = u.a, *b = u.b;
  for (int root = 0; root < p; root++) {
    before("gather");
    MPI_Gather(x, n, MPI_INT, a, n, MPI_INT, root, comm);
    after(taken, "int");
    PMPI_Gather(x, n, MPI_INT, b, n, MPI_INT, root, comm);
    if (me == root) SAME(a, b, (size_t)n * p * sizeof *a, "gather root %d", root);
    if (me == root) memcpy(a + (size_t)root * n, x, (size_t)n * sizeof *a);
    before("gather");
    MPI_Gather(me == root ? MPI_IN_PLACE : x, n, MPI_INT, a, n, MPI_INT, root, comm);
    after(taken, "in place");
    if (me == root) SAME(a, b, (size_t)n * p * sizeof *a, "gather in place root %d", root);
    before("scatter");
    MPI_Scatter(x, n, MPI_INT, a, n, MPI_INT, root, comm);
    after(taken, "int");
    PMPI_Scatter(x, n, MPI_INT, b, n, MPI_INT, root, comm);
    SAME(a, b, (size_t)n * sizeof *a, "scatter root %d", root);
    before("scatter");
    MPI_Scatter(x, n, MPI_INT, me == root ? MPI_IN_PLACE : a, n, MPI_INT, root, comm);
    after(taken, "in place");
    if (me != root) SAME(a, b, (size_t)n * sizeof *a, "scatter in place root %d", root);
  }
  bufs_free(&u);
}

static void all_collectives(MPI_Comm comm, int taken) {
  test_allreduce(comm, taken);
  test_reduce(comm, taken);
  test_reduce_scatter(comm, taken);
  test_scan(comm, taken);
  test_bcast_barrier(comm, taken);
  test_allgather_alltoall(comm, taken);
  test_gather_scatter(comm, taken);
  test_v(comm, taken);
}

/* ---- cases -------------------------------------------------------------------------- */

static void test_world(void) { all_collectives(MPI_COMM_WORLD, 1); }

/* Communicators made by dup, split and create, freed, and made again
 * (Open MPI may hand out the freed handles again). */
static void test_communicators(void) {
  for (int round = 0; round < 2; round++) {
    MPI_Comm d, s, c;
    MPI_Group wg, g;
    MPI_Comm_dup(MPI_COMM_WORLD, &d);
    MPI_Comm_split(MPI_COMM_WORLD, R % 2, P - R, &s);
    MPI_Comm_group(MPI_COMM_WORLD, &wg);
    int range[1][3] = {{0, P - 1, 2}};
    MPI_Group_range_incl(wg, 1, range, &g);
    MPI_Comm_create(MPI_COMM_WORLD, g, &c);
    test_allreduce(d, 1);
    test_reduce(s, 1);
    test_v(s, 1);
    if (c != MPI_COMM_NULL) test_scan(c, 1);
    MPI_Comm_free(&d);
    MPI_Comm_free(&s);
    if (c != MPI_COMM_NULL) MPI_Comm_free(&c);
    MPI_Group_free(&g);
    MPI_Group_free(&wg);
  }
}

/* An inter-communicator falls through, with MPI's result. */
static void test_intercomm(void) {
  if (P < 2) return;
  MPI_Comm half, inter;
  int color = R < P / 2;
  MPI_Comm_split(MPI_COMM_WORLD, color, R, &half);
  MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, color ? P / 2 : 0, 7, &inter);
  int x[3] = {R, R * 2, 1}, a[3], b[3];
  before("allreduce");
  MPI_Allreduce(x, a, 3, MPI_INT, MPI_SUM, inter);
  after(0, "inter-communicator");
  PMPI_Allreduce(x, b, 3, MPI_INT, MPI_SUM, inter);
  SAME(a, b, sizeof a, "intercomm allreduce");
  before("barrier");
  MPI_Barrier(inter);
  after(0, "inter-communicator");
  MPI_Comm_free(&inter);
  MPI_Comm_free(&half);
}

/* Terms that cancel: 1e20, 1, -1e20 and friends in every rank's input. The
 * sum depends on the order of the additions, and every rank must get the
 * same bits. */
static void test_cancelling_sum(void) {
  enum { N = 4096 };
  double *x = malloc(N * sizeof *x), *s = malloc(N * sizeof *s);
  double *all = malloc((size_t)N * P * sizeof *all);
  const double terms[] = {1e20, 1.0, -1e20, 3.5, -1.0, 1e-3, 7e19, -7e19};
  for (int i = 0; i < N; i++) x[i] = terms[(R * 3 + i) % 8] * (1 + (i % 5) * 1e-16);
  before("allreduce");
  MPI_Allreduce(x, s, N, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  after(1, "cancelling double sum");
  PMPI_Allgather(s, N, MPI_DOUBLE, all, N, MPI_DOUBLE, MPI_COMM_WORLD);
  for (int r = 1; r < P; r++)
    SAME(all, all + (size_t)r * N, N * sizeof *all, "rank %d's sum differs from rank 0's", r);
  float fx[N], fs[N], *fall = malloc((size_t)N * P * sizeof *fall);
  for (int i = 0; i < N; i++) fx[i] = (float)terms[(R + i) % 8];
  before("allreduce");
  MPI_Allreduce(fx, fs, N, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  after(1, "cancelling float sum");
  PMPI_Allgather(fs, N, MPI_FLOAT, fall, N, MPI_FLOAT, MPI_COMM_WORLD);
  for (int r = 1; r < P; r++)
    SAME(fall, fall + (size_t)r * N, N * sizeof *fall, "rank %d's float sum differs", r);
  free(x), free(s), free(all), free(fall);
}

/* Under REDCOLL_MPI_COLLS=allreduce=ring,bcast. */
static void test_listed(void) {
  int x = R + 1, a = 0;
  before("allreduce");
  MPI_Allreduce(&x, &a, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  after(1, "listed");
  CHECK_INT(a, P * (P + 1) / 2);
  before("bcast");
  MPI_Bcast(&x, 1, MPI_INT, 0, MPI_COMM_WORLD);
  after(1, "listed");
  CHECK_INT(x, 1);
  before("reduce");
  MPI_Reduce(&x, &a, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
  after(0, "not listed");
  before("barrier");
  MPI_Barrier(MPI_COMM_WORLD);
  after(0, "not listed");
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_size(MPI_COMM_WORLD, &P);
  MPI_Comm_rank(MPI_COMM_WORLD, &R);
  *(void **)&counts = dlsym(RTLD_DEFAULT, "redcoll_mpi_interposer_counts");
  CHECK_MSG(counts != NULL, "libredcoll-mpi.so is not loaded (LD_PRELOAD)");
  MPI_Type_contiguous(4, MPI_UINT32_T, &t_mat);
  MPI_Type_contiguous(2, MPI_INT, &t_pair);
  MPI_Type_contiguous(3, MPI_INT, &t_three);
  MPI_Type_vector(2, 1, 2, MPI_INT, &t_gappy); /* 2 ints with a gap: size 8, extent 12 */
  MPI_Type_commit(&t_mat);
  MPI_Type_commit(&t_pair);
  MPI_Type_commit(&t_three);
  MPI_Type_commit(&t_gappy);
  MPI_Op_create(mat_fn, 0, &op_mat);
  MPI_Op_create(pmax_fn, 1, &op_pmax);
  int listed = argc > 1 && strcmp(argv[1], "--listed") == 0;
  static const test_case all[] = {TEST(test_world), TEST(test_communicators),
                                  TEST(test_intercomm), TEST(test_cancelling_sum)};
  static const test_case only[] = {TEST(test_listed)};
  if (R != 0 && freopen("/dev/null", "w", stdout) == NULL) return 1; /* rank 0 prints */
  int rc = listed ? test_main(only, 1, 1, argv) : test_main(all, 4, argc, argv);
  MPI_Op_free(&op_mat);
  MPI_Op_free(&op_pmax);
  MPI_Type_free(&t_mat);
  MPI_Type_free(&t_pair);
  MPI_Type_free(&t_three);
  MPI_Type_free(&t_gappy);
  int worst = 0;
  PMPI_Allreduce(&rc, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return worst;
}
