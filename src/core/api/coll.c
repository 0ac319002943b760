/* The public collectives: argument checks (before any communication), the
 * tag of the call, the choice of algorithm and the dispatch to it. */
#include <stdint.h>
#include <time.h>

#include "internal.h"

/* [a, a+an) and [b, b+bn) share a byte. */
static int ranges_meet(const void *a, size_t an, const void *b, size_t bn) {
  uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;
  if (an == 0 || bn == 0) return 0;
  return x < y + bn && y < x + an;
}

/* The one buffer rule of every collective.  `own` is the rank's own block
 * (sendbuf, or recvbuf for scatter) and `whole` the buffer it belongs in
 * when the call is in place (recvbuf, or sendbuf for scatter), at byte
 * offset `at`.  An own block exactly there is in place (returns 1); any
 * other overlap of the two buffers is REDCOLL_EINVAL; else 0. */
static int alias_rule(const void *own, size_t own_bytes, const void *whole, size_t whole_bytes,
                      size_t at) {
  if (own_bytes > 0 && (uintptr_t)own == (uintptr_t)whole + at) return 1;
  return ranges_meet(own, own_bytes, whole, whole_bytes) ? REDCOLL_EINVAL : 0;
}

/* p + off bytes; p itself for off 0, so that a NULL p stays NULL without
 * arithmetic on it. */
static void *byte_at(const void *p, size_t off) { return off == 0 ? (void *)p : (char *)p + off; }

/* n * m without overflow, else SIZE_MAX */
static size_t mul_sat(size_t n, size_t m) {
  if (m != 0 && n > SIZE_MAX / m) return SIZE_MAX;
  return n * m;
}

static int check_comm(const redcoll_comm *c) {
  if (c == NULL) return REDCOLL_EINVAL;
  return c->error;
}

/* Checks dtype and op; sets call->esize. op NULL for data movement. */
static int check_type(redcoll__call *call, redcoll_dtype dt, const redcoll_op *op, int reduction) {
  if ((unsigned)dt >= REDCOLL_DTYPE_COUNT) return REDCOLL_EINVAL;
  if (reduction) {
    if (op == NULL || redcoll__kernel_check(dt, op) != REDCOLL_OK) return REDCOLL_EINVAL;
  } else if (dt == REDCOLL_CUSTOM) {
    /* Data movement of custom elements needs the element size of an op. */
    if (op == NULL || op->id != REDCOLL__OP_USER) return REDCOLL_EINVAL;
  }
  call->dtype = dt;
  call->op = op;
  call->esize = redcoll__elem_size(dt, op);
  return call->esize == 0 ? REDCOLL_EINVAL : REDCOLL_OK;
}

/* A forced algorithm that needs a commutative operator refuses a
 * non-commutative one on every p, one rank included. */
static int check_forced(const redcoll__call *call) {
  redcoll_algo a = call->comm->algo[call->coll];
  if (a == REDCOLL_ALGO_AUTO || call->op == NULL || call->op->commutative) return REDCOLL_OK;
  const redcoll__algo_entry *e = redcoll__algo_find(call->coll, a);
  return e != NULL && (e->flags & REDCOLL__NEEDS_COMMUTATIVE) ? REDCOLL_ENOTSUP : REDCOLL_OK;
}

static int run(redcoll__call *call);

/* The common tail of every entry point, after its own checks: nothing to
 * do (total 0 elements), the forced algorithm's check (so that one rank
 * answers as many do), one rank (copy own_bytes from src to dst unless in
 * place), or the algorithm. */
static int finish(redcoll__call *call, size_t total, void *dst, const void *src, size_t own_bytes) {
  if (total == 0) return REDCOLL_OK;
  int rc = check_forced(call);
  if (rc != REDCOLL_OK) return rc;
  if (call->comm->size == 1) {
    if (!call->in_place && own_bytes > 0) memcpy(dst, src, own_bytes);
    return REDCOLL_OK;
  }
  return run(call);
}

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

/* Picks the algorithm and runs it; at debug level logs one line per call:
 * the collective, its size, the algorithm and why, and the time taken. */
static int run(redcoll__call *call) {
  redcoll_comm *c = call->comm;
  redcoll_algo a = c->algo[call->coll];
  int forced = a != REDCOLL_ALGO_AUTO;
  if (!forced) a = redcoll__select(call);
  const redcoll__algo_entry *e = redcoll__algo_find(call->coll, a);
  if (e == NULL) return REDCOLL_ENOTSUP;
  c->last_algo = a;
  c->tag = redcoll__make_tag(c->seq++, call->coll, call->count, call->dtype, call->op, call->root);
  redcoll__comm_start_deadline(c);
  c->cur = call; /* so that failure reports can show the whole call */
  int debug = redcoll__log_level() >= 3;
  double t0 = debug ? now_us() : 0;
  int rc = e->run(call);
  /* Any failure inside the algorithm (ENOMEM for scratch included) breaks
   * the communicator and aborts the peers; transport errors already did. */
  if (rc != REDCOLL_OK) rc = redcoll__fail(c, rc);
  if (debug) {
    const char *dt = redcoll_dtype_name(call->dtype);
    redcoll__log(3, "rank %d: %s #%llu count %zu dtype %s root %d p %d: %s (%s), %.1f us, %s",
                 c->rank, redcoll_coll_name(call->coll), (unsigned long long)(c->seq - 1),
                 call->count, dt ? dt : "?", call->root, c->size, redcoll_algo_name(a),
                 forced ? "forced" : "cost model", now_us() - t0, redcoll_status_name(rc));
  }
  c->cur = NULL;
  return rc;
}

static void init_call(redcoll__call *call, redcoll_comm *c, redcoll_coll coll) {
  memset(call, 0, sizeof *call);
  call->comm = c;
  call->coll = coll;
}

REDCOLL_API int redcoll_allreduce(redcoll_comm *c, const void *sendbuf, void *recvbuf, size_t count,
                                  redcoll_dtype dt, const redcoll_op *op) {
  redcoll__call call;
  int rc = check_comm(c);
  if (rc != REDCOLL_OK) return rc;
  init_call(&call, c, REDCOLL_COLL_ALLREDUCE);
  if ((rc = check_type(&call, dt, op, 1)) != REDCOLL_OK) return rc;
  size_t bytes = mul_sat(count, call.esize);
  if (bytes == SIZE_MAX) return REDCOLL_EINVAL;
  if (count > 0 && (sendbuf == NULL || recvbuf == NULL)) return REDCOLL_EINVAL;
  if (sendbuf == REDCOLL_IN_PLACE) sendbuf = recvbuf;
  if ((rc = alias_rule(sendbuf, bytes, recvbuf, bytes, 0)) < 0) return rc;
  call.in_place = rc == 1 || sendbuf == recvbuf;
  call.sendbuf = sendbuf;
  call.recvbuf = recvbuf;
  call.count = count;
  return finish(&call, count, recvbuf, sendbuf, bytes);
}

REDCOLL_API int redcoll_reduce(redcoll_comm *c, const void *sendbuf, void *recvbuf, size_t count,
                               redcoll_dtype dt, const redcoll_op *op, int root) {
  redcoll__call call;
  int rc = check_comm(c);
  if (rc != REDCOLL_OK) return rc;
  init_call(&call, c, REDCOLL_COLL_REDUCE);
  if ((rc = check_type(&call, dt, op, 1)) != REDCOLL_OK) return rc;
  if (root < 0 || root >= c->size) return REDCOLL_EINVAL;
  size_t bytes = mul_sat(count, call.esize);
  if (bytes == SIZE_MAX) return REDCOLL_EINVAL;
  int at_root = c->rank == root;
  if (sendbuf == REDCOLL_IN_PLACE) {
    if (!at_root) return REDCOLL_EINVAL;
    sendbuf = recvbuf;
  }
  if (count > 0 && (sendbuf == NULL || (at_root && recvbuf == NULL))) return REDCOLL_EINVAL;
  if (at_root) {
    if ((rc = alias_rule(sendbuf, bytes, recvbuf, bytes, 0)) < 0) return rc;
    call.in_place = rc == 1 || sendbuf == recvbuf;
  } else {
    recvbuf = NULL; /* not significant off the root */
  }
  call.sendbuf = sendbuf;
  call.recvbuf = recvbuf;
  call.count = count;
  call.root = root;
  return finish(&call, count, recvbuf, sendbuf, bytes);
}

REDCOLL_API int redcoll_reduce_scatter_block(redcoll_comm *c, const void *sendbuf, void *recvbuf,
                                             size_t recvcount, redcoll_dtype dt,
                                             const redcoll_op *op) {
  redcoll__call call;
  int rc = check_comm(c);
  if (rc != REDCOLL_OK) return rc;
  init_call(&call, c, REDCOLL_COLL_REDUCE_SCATTER_BLOCK);
  if ((rc = check_type(&call, dt, op, 1)) != REDCOLL_OK) return rc;
  size_t bytes = mul_sat(recvcount, call.esize);
  size_t total = mul_sat(bytes, (size_t)c->size);
  if (bytes == SIZE_MAX || total == SIZE_MAX) return REDCOLL_EINVAL;
  if (recvcount > 0 && (sendbuf == NULL || recvbuf == NULL)) return REDCOLL_EINVAL;
  if (sendbuf == REDCOLL_IN_PLACE) sendbuf = recvbuf; /* the input is in recvbuf */
  if ((rc = alias_rule(sendbuf, total, recvbuf, bytes, 0)) < 0) return rc;
  call.in_place = rc == 1 || sendbuf == recvbuf;
  call.sendbuf = sendbuf;
  call.recvbuf = recvbuf;
  call.count = recvcount;
  return finish(&call, recvcount, recvbuf, sendbuf, bytes);
}

REDCOLL_API int redcoll_reduce_scatter(redcoll_comm *c, const void *sendbuf, void *recvbuf,
                                       const size_t *recvcounts, redcoll_dtype dt,
                                       const redcoll_op *op) {
  redcoll__call call;
  int rc = check_comm(c);
  if (rc != REDCOLL_OK) return rc;
  init_call(&call, c, REDCOLL_COLL_REDUCE_SCATTER);
  if ((rc = check_type(&call, dt, op, 1)) != REDCOLL_OK) return rc;
  if (recvcounts == NULL) return REDCOLL_EINVAL;
  size_t total = 0;
  for (int i = 0; i < c->size; i++) {
    if (recvcounts[i] > SIZE_MAX - total) return REDCOLL_EINVAL;
    total += recvcounts[i];
  }
  size_t tbytes = mul_sat(total, call.esize);
  if (tbytes == SIZE_MAX) return REDCOLL_EINVAL;
  size_t mine = recvcounts[c->rank] * call.esize;
  if (sendbuf == REDCOLL_IN_PLACE) sendbuf = recvbuf; /* the input is in recvbuf */
  if ((total > 0 && sendbuf == NULL) || (mine > 0 && recvbuf == NULL)) return REDCOLL_EINVAL;
  if ((rc = alias_rule(sendbuf, tbytes, recvbuf, mine, 0)) < 0) return rc;
  call.in_place = rc == 1 || sendbuf == recvbuf;
  call.sendbuf = sendbuf;
  call.recvbuf = recvbuf;
  call.counts = recvcounts;
  call.count = total;
  return finish(&call, total, recvbuf, sendbuf, mine);
}

REDCOLL_API int redcoll_allgather(redcoll_comm *c, const void *sendbuf, void *recvbuf, size_t count,
                                  redcoll_dtype dt) {
  redcoll__call call;
  int rc = check_comm(c);
  if (rc != REDCOLL_OK) return rc;
  init_call(&call, c, REDCOLL_COLL_ALLGATHER);
  if (dt == REDCOLL_CUSTOM) return REDCOLL_EINVAL; /* no element size without an op */
  if ((rc = check_type(&call, dt, NULL, 0)) != REDCOLL_OK) return rc;
  size_t bytes = mul_sat(count, call.esize);
  size_t total = mul_sat(bytes, (size_t)c->size);
  if (bytes == SIZE_MAX || total == SIZE_MAX) return REDCOLL_EINVAL;
  if (count > 0 && (sendbuf == NULL || recvbuf == NULL)) return REDCOLL_EINVAL;
  size_t at = (size_t)c->rank * bytes;
  if (sendbuf == REDCOLL_IN_PLACE) sendbuf = byte_at(recvbuf, at);
  if ((rc = alias_rule(sendbuf, bytes, recvbuf, total, at)) < 0) return rc;
  call.in_place = rc == 1;
  call.sendbuf = sendbuf;
  call.recvbuf = recvbuf;
  call.count = count;
  return finish(&call, count, byte_at(recvbuf, at), sendbuf, bytes);
}

REDCOLL_API int redcoll_allgatherv(redcoll_comm *c, const void *sendbuf, size_t sendcount,
                                   void *recvbuf, const size_t *recvcounts, redcoll_dtype dt) {
  redcoll__call call;
  int rc = check_comm(c);
  if (rc != REDCOLL_OK) return rc;
  init_call(&call, c, REDCOLL_COLL_ALLGATHERV);
  if (dt == REDCOLL_CUSTOM) return REDCOLL_EINVAL;
  if ((rc = check_type(&call, dt, NULL, 0)) != REDCOLL_OK) return rc;
  if (recvcounts == NULL || recvcounts[c->rank] != sendcount) return REDCOLL_EINVAL;
  size_t total = 0, before = 0;
  for (int i = 0; i < c->size; i++) {
    if (recvcounts[i] > SIZE_MAX - total) return REDCOLL_EINVAL;
    if (i == c->rank) before = total;
    total += recvcounts[i];
  }
  size_t tbytes = mul_sat(total, call.esize);
  if (tbytes == SIZE_MAX) return REDCOLL_EINVAL;
  size_t bytes = sendcount * call.esize, at = before * call.esize;
  if ((sendcount > 0 && sendbuf == NULL) || (total > 0 && recvbuf == NULL)) return REDCOLL_EINVAL;
  if (sendbuf == REDCOLL_IN_PLACE) sendbuf = byte_at(recvbuf, at);
  if ((rc = alias_rule(sendbuf, bytes, recvbuf, tbytes, at)) < 0) return rc;
  call.in_place = rc == 1;
  call.sendbuf = sendbuf;
  call.recvbuf = recvbuf;
  call.counts = recvcounts;
  call.count = total;
  return finish(&call, total, byte_at(recvbuf, at), sendbuf, bytes);
}

REDCOLL_API int redcoll_bcast(redcoll_comm *c, void *buf, size_t count, redcoll_dtype dt, int root) {
  redcoll__call call;
  int rc = check_comm(c);
  if (rc != REDCOLL_OK) return rc;
  init_call(&call, c, REDCOLL_COLL_BCAST);
  if (dt == REDCOLL_CUSTOM) return REDCOLL_EINVAL;
  if ((rc = check_type(&call, dt, NULL, 0)) != REDCOLL_OK) return rc;
  if (root < 0 || root >= c->size) return REDCOLL_EINVAL;
  if (mul_sat(count, call.esize) == SIZE_MAX) return REDCOLL_EINVAL;
  if (count > 0 && buf == NULL) return REDCOLL_EINVAL;
  call.sendbuf = buf;
  call.recvbuf = buf;
  call.in_place = 1;
  call.count = count;
  call.root = root;
  return finish(&call, count, NULL, NULL, 0);
}

REDCOLL_API int redcoll_barrier(redcoll_comm *c) {
  redcoll__call call;
  int rc = check_comm(c);
  if (rc != REDCOLL_OK) return rc;
  init_call(&call, c, REDCOLL_COLL_BARRIER);
  call.dtype = REDCOLL_UINT8;
  call.esize = 1;
  return finish(&call, 1, NULL, NULL, 0);
}

REDCOLL_API int redcoll_gather(redcoll_comm *c, const void *sendbuf, void *recvbuf, size_t count,
                               redcoll_dtype dt, int root) {
  redcoll__call call;
  int rc = check_comm(c);
  if (rc != REDCOLL_OK) return rc;
  init_call(&call, c, REDCOLL_COLL_GATHER);
  if (dt == REDCOLL_CUSTOM) return REDCOLL_EINVAL;
  if ((rc = check_type(&call, dt, NULL, 0)) != REDCOLL_OK) return rc;
  if (root < 0 || root >= c->size) return REDCOLL_EINVAL;
  size_t bytes = mul_sat(count, call.esize);
  size_t total = mul_sat(bytes, (size_t)c->size);
  if (bytes == SIZE_MAX || total == SIZE_MAX) return REDCOLL_EINVAL;
  int is_root = c->rank == root;
  if (count > 0 && (sendbuf == NULL || (is_root && recvbuf == NULL))) return REDCOLL_EINVAL;
  if (sendbuf == REDCOLL_IN_PLACE && !is_root) return REDCOLL_EINVAL;
  size_t at = (size_t)root * bytes;
  if (is_root) {
    if (sendbuf == REDCOLL_IN_PLACE) sendbuf = byte_at(recvbuf, at);
    if ((rc = alias_rule(sendbuf, bytes, recvbuf, total, at)) < 0) return rc;
    call.in_place = rc == 1;
  } else {
    recvbuf = NULL; /* not significant off the root */
  }
  call.sendbuf = sendbuf;
  call.recvbuf = recvbuf;
  call.count = count;
  call.root = root;
  return finish(&call, count, byte_at(recvbuf, is_root ? at : 0), sendbuf, bytes);
}

REDCOLL_API int redcoll_scatter(redcoll_comm *c, const void *sendbuf, void *recvbuf, size_t count,
                                redcoll_dtype dt, int root) {
  redcoll__call call;
  int rc = check_comm(c);
  if (rc != REDCOLL_OK) return rc;
  init_call(&call, c, REDCOLL_COLL_SCATTER);
  if (dt == REDCOLL_CUSTOM) return REDCOLL_EINVAL;
  if ((rc = check_type(&call, dt, NULL, 0)) != REDCOLL_OK) return rc;
  if (root < 0 || root >= c->size) return REDCOLL_EINVAL;
  size_t bytes = mul_sat(count, call.esize);
  size_t total = mul_sat(bytes, (size_t)c->size);
  if (bytes == SIZE_MAX || total == SIZE_MAX) return REDCOLL_EINVAL;
  int is_root = c->rank == root;
  if (count > 0 && (recvbuf == NULL || (is_root && sendbuf == NULL))) return REDCOLL_EINVAL;
  if (sendbuf == REDCOLL_IN_PLACE || (recvbuf == REDCOLL_IN_PLACE && !is_root)) return REDCOLL_EINVAL;
  size_t at = (size_t)root * bytes;
  if (is_root) {
    if (recvbuf == REDCOLL_IN_PLACE) recvbuf = byte_at(sendbuf, at);
    /* The root's own block is recvbuf, its place the root's block of sendbuf. */
    if ((rc = alias_rule(recvbuf, bytes, sendbuf, total, at)) < 0) return rc;
    call.in_place = rc == 1;
  } else {
    sendbuf = NULL; /* not significant off the root */
  }
  call.sendbuf = sendbuf;
  call.recvbuf = recvbuf;
  call.count = count;
  call.root = root;
  return finish(&call, count, recvbuf, byte_at(sendbuf, is_root ? at : 0), bytes);
}
