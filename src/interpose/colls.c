/*
 * The MPI collectives libredcoll-mpi.so takes (docs/mpi.md).  Each entry
 * point checks, in order, that the collective is listed and the
 * communicator is an intra-communicator (ip_start), that its datatypes
 * have no gaps and, for a reduction, that redcoll has the operator for
 * the datatype (ip_reduction, ip_bytes), then gets the communicator's
 * redcoll communicator (ip_attach, made on first use: a collective over
 * the communicator) and runs redcoll.  Data movers move bytes (UINT8,
 * counts times the datatype's size).  Anything that fails a check, and a
 * call redcoll refuses before sending anything (REDCOLL_EINVAL,
 * REDCOLL_ENOTSUP), goes to PMPI_* unchanged, so MPI reports the errors
 * it would report.  The checks look only at arguments MPI requires to
 * agree on every rank, except the datatypes of rooted and v-collectives,
 * which MPI lets differ when their type signatures match: such a program
 * must use datatypes without gaps on every rank or on none.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "interpose.h"

#define IN_PLACE(buf) ((buf) == MPI_IN_PLACE ? REDCOLL_IN_PLACE : (buf))
#define RECV_IN_PLACE(buf) ((buf) == MPI_IN_PLACE ? (void *)REDCOLL_IN_PLACE : (buf))

/* Runs a redcoll call with nested MPI calls kept from the interposer. */
#define RUN(expr)                \
  __extension__({                \
    int ip__prev = ip_enter();   \
    int ip__rc = (expr);         \
    ip_leave(ip__prev);          \
    ip__rc;                      \
  })

static int comm_size(MPI_Comm comm) {
  int p = 0;
  PMPI_Comm_size(comm, &p);
  return p;
}

static int comm_rank(MPI_Comm comm) {
  int r = 0;
  PMPI_Comm_rank(comm, &r);
  return r;
}

/* n counts (or displacements) times unit into out; 0 if one is negative. */
static int scaled(const int *v, int n, size_t unit, size_t *out) {
  for (int i = 0; i < n; i++) {
    if (v[i] < 0) return 0;
    out[i] = (size_t)v[i] * unit;
  }
  return 1;
}

/* ---- reductions ------------------------------------------------------------ */

IP_EXPORT int MPI_Allreduce(const void *sb, void *rb, int count, MPI_Datatype dt, MPI_Op op,
                            MPI_Comm comm) {
  ip_call c;
  int mrc;
  if (ip_start(&c, IP_ALLREDUCE, comm) && ip_reduction(&c, dt, op) && count >= 0 &&
      ip_attach(&c) &&
      ip_finish(&c, RUN(redcoll_allreduce(c.rc, IN_PLACE(sb), rb, (size_t)count, c.dt, c.op)),
                &mrc))
    return mrc;
  if (count < 0) c.reason = IP_R_ARGS;
  ip_fell(&c);
  return PMPI_Allreduce(sb, rb, count, dt, op, comm);
}

IP_EXPORT int MPI_Reduce(const void *sb, void *rb, int count, MPI_Datatype dt, MPI_Op op,
                         int root, MPI_Comm comm) {
  ip_call c;
  int mrc;
  if (ip_start(&c, IP_REDUCE, comm) && ip_reduction(&c, dt, op)) {
    int p = comm_size(comm), me = comm_rank(comm);
    if (count < 0 || root < 0 || root >= p || (sb == MPI_IN_PLACE && me != root)) {
      c.reason = IP_R_ARGS;
    } else if (ip_attach(&c) &&
               ip_finish(&c, RUN(redcoll_reduce(c.rc, IN_PLACE(sb), me == root ? rb : NULL,
                                                (size_t)count, c.dt, c.op, root)),
                         &mrc)) {
      return mrc;
    }
  }
  ip_fell(&c);
  return PMPI_Reduce(sb, rb, count, dt, op, root, comm);
}

IP_EXPORT int MPI_Reduce_scatter_block(const void *sb, void *rb, int count, MPI_Datatype dt,
                                       MPI_Op op, MPI_Comm comm) {
  ip_call c;
  int mrc;
  if (ip_start(&c, IP_REDUCE_SCATTER_BLOCK, comm) && ip_reduction(&c, dt, op) && count >= 0 &&
      ip_attach(&c) &&
      ip_finish(&c, RUN(redcoll_reduce_scatter_block(c.rc, IN_PLACE(sb), rb, (size_t)count, c.dt,
                                                     c.op)),
                &mrc))
    return mrc;
  if (count < 0) c.reason = IP_R_ARGS;
  ip_fell(&c);
  return PMPI_Reduce_scatter_block(sb, rb, count, dt, op, comm);
}

IP_EXPORT int MPI_Reduce_scatter(const void *sb, void *rb, const int counts[], MPI_Datatype dt,
                                 MPI_Op op, MPI_Comm comm) {
  ip_call c;
  int mrc;
  if (ip_start(&c, IP_REDUCE_SCATTER, comm) && ip_reduction(&c, dt, op)) {
    int p = comm_size(comm);
    size_t *n = malloc((size_t)p * sizeof *n);
    if (n == NULL || counts == NULL || !scaled(counts, p, 1, n)) {
      c.reason = IP_R_ARGS;
    } else if (ip_attach(&c) &&
               ip_finish(&c, RUN(redcoll_reduce_scatter(c.rc, IN_PLACE(sb), rb, n, c.dt, c.op)),
                         &mrc)) {
      free(n);
      return mrc;
    }
    free(n);
  }
  ip_fell(&c);
  return PMPI_Reduce_scatter(sb, rb, counts, dt, op, comm);
}

IP_EXPORT int MPI_Scan(const void *sb, void *rb, int count, MPI_Datatype dt, MPI_Op op,
                       MPI_Comm comm) {
  ip_call c;
  int mrc;
  if (ip_start(&c, IP_SCAN, comm) && ip_reduction(&c, dt, op) && count >= 0 && ip_attach(&c) &&
      ip_finish(&c, RUN(redcoll_scan(c.rc, IN_PLACE(sb), rb, (size_t)count, c.dt, c.op)), &mrc))
    return mrc;
  if (count < 0) c.reason = IP_R_ARGS;
  ip_fell(&c);
  return PMPI_Scan(sb, rb, count, dt, op, comm);
}

IP_EXPORT int MPI_Exscan(const void *sb, void *rb, int count, MPI_Datatype dt, MPI_Op op,
                         MPI_Comm comm) {
  ip_call c;
  int mrc;
  if (ip_start(&c, IP_EXSCAN, comm) && ip_reduction(&c, dt, op) && count >= 0 && ip_attach(&c) &&
      ip_finish(&c, RUN(redcoll_exscan(c.rc, IN_PLACE(sb), rb, (size_t)count, c.dt, c.op)), &mrc))
    return mrc;
  if (count < 0) c.reason = IP_R_ARGS;
  ip_fell(&c);
  return PMPI_Exscan(sb, rb, count, dt, op, comm);
}

/* ---- data movement ------------------------------------------------------------ */

IP_EXPORT int MPI_Barrier(MPI_Comm comm) {
  ip_call c;
  int mrc;
  if (ip_start(&c, IP_BARRIER, comm) && ip_attach(&c) &&
      ip_finish(&c, RUN(redcoll_barrier(c.rc)), &mrc))
    return mrc;
  ip_fell(&c);
  return PMPI_Barrier(comm);
}

IP_EXPORT int MPI_Bcast(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm) {
  ip_call c;
  int mrc;
  size_t n;
  if (ip_start(&c, IP_BCAST, comm) && ip_bytes(&c, dt, count, &n)) {
    if (root < 0 || root >= comm_size(comm)) c.reason = IP_R_ARGS;
    else if (ip_attach(&c) &&
             ip_finish(&c, RUN(redcoll_bcast(c.rc, buf, n, REDCOLL_UINT8, root)), &mrc))
      return mrc;
  }
  ip_fell(&c);
  return PMPI_Bcast(buf, count, dt, root, comm);
}

/* The bytes of one rank's block when the send side (unless in place) and
 * the receive side must agree; 0 (reason set) if they do not. */
static int block_bytes(ip_call *c, const void *sb, int scount, MPI_Datatype st, int rcount,
                       MPI_Datatype rt, size_t *bytes) {
  size_t r;
  if (!ip_bytes(c, rt, rcount, &r)) return 0;
  if (sb != MPI_IN_PLACE) {
    size_t s;
    if (!ip_bytes(c, st, scount, &s)) return 0;
    if (s != r) {
      c->reason = IP_R_ARGS;
      return 0;
    }
  }
  *bytes = r;
  return 1;
}

IP_EXPORT int MPI_Allgather(const void *sb, int scount, MPI_Datatype st, void *rb, int rcount,
                            MPI_Datatype rt, MPI_Comm comm) {
  ip_call c;
  int mrc;
  size_t n;
  if (ip_start(&c, IP_ALLGATHER, comm) && block_bytes(&c, sb, scount, st, rcount, rt, &n) &&
      ip_attach(&c) &&
      ip_finish(&c, RUN(redcoll_allgather(c.rc, IN_PLACE(sb), rb, n, REDCOLL_UINT8)), &mrc))
    return mrc;
  ip_fell(&c);
  return PMPI_Allgather(sb, scount, st, rb, rcount, rt, comm);
}

IP_EXPORT int MPI_Alltoall(const void *sb, int scount, MPI_Datatype st, void *rb, int rcount,
                           MPI_Datatype rt, MPI_Comm comm) {
  ip_call c;
  int mrc;
  size_t n;
  if (ip_start(&c, IP_ALLTOALL, comm) && block_bytes(&c, sb, scount, st, rcount, rt, &n) &&
      ip_attach(&c) &&
      ip_finish(&c, RUN(redcoll_alltoall(c.rc, IN_PLACE(sb), rb, n, REDCOLL_UINT8)), &mrc))
    return mrc;
  ip_fell(&c);
  return PMPI_Alltoall(sb, scount, st, rb, rcount, rt, comm);
}

IP_EXPORT int MPI_Gather(const void *sb, int scount, MPI_Datatype st, void *rb, int rcount,
                         MPI_Datatype rt, int root, MPI_Comm comm) {
  ip_call c;
  int mrc;
  size_t n = 0;
  if (ip_start(&c, IP_GATHER, comm)) {
    int p = comm_size(comm), me = comm_rank(comm);
    int ok = root >= 0 && root < p && (sb != MPI_IN_PLACE || me == root);
    if (!ok) c.reason = IP_R_ARGS;
    else if (me == root) ok = block_bytes(&c, sb, scount, st, rcount, rt, &n);
    else ok = ip_bytes(&c, st, scount, &n);
    if (ok && ip_attach(&c) &&
        ip_finish(&c, RUN(redcoll_gather(c.rc, IN_PLACE(sb), me == root ? rb : NULL, n,
                                         REDCOLL_UINT8, root)),
                  &mrc))
      return mrc;
  }
  ip_fell(&c);
  return PMPI_Gather(sb, scount, st, rb, rcount, rt, root, comm);
}

IP_EXPORT int MPI_Scatter(const void *sb, int scount, MPI_Datatype st, void *rb, int rcount,
                          MPI_Datatype rt, int root, MPI_Comm comm) {
  ip_call c;
  int mrc;
  size_t n = 0;
  if (ip_start(&c, IP_SCATTER, comm)) {
    int p = comm_size(comm), me = comm_rank(comm);
    int ok = root >= 0 && root < p && (rb != MPI_IN_PLACE || me == root);
    if (!ok) c.reason = IP_R_ARGS;
    else if (me == root) ok = block_bytes(&c, rb, rcount, rt, scount, st, &n);
    else ok = ip_bytes(&c, rt, rcount, &n);
    if (ok && ip_attach(&c) &&
        ip_finish(&c, RUN(redcoll_scatter(c.rc, me == root ? sb : NULL, RECV_IN_PLACE(rb), n,
                                          REDCOLL_UINT8, root)),
                  &mrc))
      return mrc;
  }
  ip_fell(&c);
  return PMPI_Scatter(sb, scount, st, rb, rcount, rt, root, comm);
}

/* ---- blocks of any size ---------------------------------------------------------- */

IP_EXPORT int MPI_Allgatherv(const void *sb, int scount, MPI_Datatype st, void *rb,
                             const int rcounts[], const int displs[], MPI_Datatype rt,
                             MPI_Comm comm) {
  ip_call c;
  int mrc;
  size_t unit, mine;
  if (ip_start(&c, IP_ALLGATHERV, comm) && ip_bytes(&c, rt, 0, &unit) &&
      (sb == MPI_IN_PLACE || ip_bytes(&c, st, scount, &mine))) {
    int p = comm_size(comm), me = comm_rank(comm);
    unit = ip_extent(rt);
    size_t *n = malloc(2 * (size_t)p * sizeof *n), *d = n + p;
    int ok = n != NULL && rcounts != NULL && displs != NULL && scaled(rcounts, p, unit, n) &&
             scaled(displs, p, unit, d) && (sb == MPI_IN_PLACE || mine == n[me]);
    if (!ok) c.reason = IP_R_ARGS;
    if (ok && ip_attach(&c) &&
        ip_finish(&c, RUN(redcoll_allgatherv_displs(c.rc, IN_PLACE(sb), n[me], rb, n, d,
                                                    REDCOLL_UINT8)),
                  &mrc)) {
      free(n);
      return mrc;
    }
    free(n);
  }
  ip_fell(&c);
  return PMPI_Allgatherv(sb, scount, st, rb, rcounts, displs, rt, comm);
}

IP_EXPORT int MPI_Alltoallv(const void *sb, const int scounts[], const int sdispls[],
                            MPI_Datatype st, void *rb, const int rcounts[], const int rdispls[],
                            MPI_Datatype rt, MPI_Comm comm) {
  ip_call c;
  int mrc;
  size_t su, ru;
  if (ip_start(&c, IP_ALLTOALLV, comm)) {
    int p = comm_size(comm);
    size_t *v = malloc(4 * (size_t)p * sizeof *v);
    int ok = 0;
    if (sb == MPI_IN_PLACE) c.reason = IP_R_IN_PLACE;
    else if (ip_bytes(&c, st, 1, &su) && ip_bytes(&c, rt, 1, &ru))
      ok = v != NULL && scounts && sdispls && rcounts && rdispls &&
           scaled(scounts, p, su, v) && scaled(sdispls, p, su, v + p) &&
           scaled(rcounts, p, ru, v + 2 * p) && scaled(rdispls, p, ru, v + 3 * p);
    if (!ok && c.reason == IP_R_NONE) c.reason = IP_R_ARGS;
    if (ok && ip_attach(&c) &&
        ip_finish(&c, RUN(redcoll_alltoallv(c.rc, sb, v, v + p, rb, v + 2 * p, v + 3 * p,
                                            REDCOLL_UINT8)),
                  &mrc)) {
      free(v);
      return mrc;
    }
    free(v);
  }
  ip_fell(&c);
  return PMPI_Alltoallv(sb, scounts, sdispls, st, rb, rcounts, rdispls, rt, comm);
}

/* A rooted v-collective (gatherv, scatterv): its counts and displacements,
 * which MPI gives the root alone, in bytes on every rank. */
typedef struct rooted_v {
  int p, me;
  size_t unit, mine; /* bytes per element at the root; this rank's block */
  uint64_t *n;       /* the counts, sent by the root */
  size_t *cnt, *dis; /* the counts and (at the root) displacements in bytes */
} rooted_v;

/* The checks: at the root, its counts, displacements and datatype vt, and
 * its own block of count elements of ot unless in place; elsewhere its
 * block.  1 with v ready for rv_run, else 0 (reason set). */
static int rv_check(ip_call *c, rooted_v *v, int root, const int *counts, const int *displs,
                    MPI_Datatype vt, int in_place, int count, MPI_Datatype ot) {
  memset(v, 0, sizeof *v);
  v->p = comm_size(c->comm);
  v->me = comm_rank(c->comm);
  int ok = root >= 0 && root < v->p && (!in_place || v->me == root);
  if (ok && v->me == root) {
    ok = ip_bytes(c, vt, 0, &v->unit) && counts != NULL && displs != NULL;
    for (int i = 0; ok && i < v->p; i++) ok = counts[i] >= 0 && displs[i] >= 0;
    v->unit = ip_extent(vt);
    if (ok && in_place) v->mine = (size_t)counts[v->me] * v->unit;
    else if (ok) ok = ip_bytes(c, ot, count, &v->mine) && v->mine == (size_t)counts[v->me] * v->unit;
  } else if (ok) {
    ok = ip_bytes(c, ot, count, &v->mine);
  }
  if (ok) v->n = malloc(3 * (size_t)v->p * sizeof *v->n);
  if ((!ok || v->n == NULL) && c->reason == IP_R_NONE) c->reason = IP_R_ARGS;
  if (v->n == NULL) return 0;
  v->cnt = (size_t *)(v->n + v->p);
  v->dis = (size_t *)(v->n + 2 * (size_t)v->p);
  if (ip_attach(c)) return 1;
  free(v->n);
  return 0;
}

/* The root sends the counts over redcoll. */
static int rv_counts(ip_call *c, rooted_v *v, const int *counts, const int *displs, int root) {
  if (v->me == root) {
    for (int i = 0; i < v->p; i++) v->n[i] = (uint64_t)counts[i] * v->unit;
    scaled(displs, v->p, v->unit, v->dis);
  }
  int rc = RUN(redcoll_bcast(c->rc, v->n, (size_t)v->p, REDCOLL_UINT64, root));
  for (int i = 0; i < v->p; i++) v->cnt[i] = (size_t)v->n[i];
  return rc;
}

static int rv_finish(ip_call *c, rooted_v *v, int rc, int *mrc) {
  free(v->n);
  /* The counts went out: a refusal now is ranks that disagree on them,
   * and falling through would leave the others waiting. */
  return ip_finish(c, rc == REDCOLL_EINVAL ? REDCOLL_EMISMATCH : rc, mrc);
}

IP_EXPORT int MPI_Gatherv(const void *sb, int scount, MPI_Datatype st, void *rb,
                          const int rcounts[], const int displs[], MPI_Datatype rt, int root,
                          MPI_Comm comm) {
  ip_call c;
  rooted_v v;
  int mrc;
  if (ip_start(&c, IP_GATHERV, comm) &&
      rv_check(&c, &v, root, rcounts, displs, rt, sb == MPI_IN_PLACE, scount, st)) {
    int at = v.me == root, rc = rv_counts(&c, &v, rcounts, displs, root);
    if (rc == REDCOLL_OK)
      rc = RUN(redcoll_gatherv(c.rc, IN_PLACE(sb), v.mine, at ? rb : NULL, v.cnt,
                               at ? v.dis : NULL, REDCOLL_UINT8, root));
    if (rv_finish(&c, &v, rc, &mrc)) return mrc;
  }
  ip_fell(&c);
  return PMPI_Gatherv(sb, scount, st, rb, rcounts, displs, rt, root, comm);
}

IP_EXPORT int MPI_Scatterv(const void *sb, const int scounts[], const int displs[],
                           MPI_Datatype st, void *rb, int rcount, MPI_Datatype rt, int root,
                           MPI_Comm comm) {
  ip_call c;
  rooted_v v;
  int mrc;
  if (ip_start(&c, IP_SCATTERV, comm) &&
      rv_check(&c, &v, root, scounts, displs, st, rb == MPI_IN_PLACE, rcount, rt)) {
    int at = v.me == root, rc = rv_counts(&c, &v, scounts, displs, root);
    if (rc == REDCOLL_OK)
      rc = RUN(redcoll_scatterv(c.rc, at ? sb : NULL, v.cnt, at ? v.dis : NULL,
                                RECV_IN_PLACE(rb), v.mine, REDCOLL_UINT8, root));
    if (rv_finish(&c, &v, rc, &mrc)) return mrc;
  }
  ip_fell(&c);
  return PMPI_Scatterv(sb, scounts, displs, st, rb, rcount, rt, root, comm);
}
