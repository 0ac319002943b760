/* The public collectives: argument checks (before any communication), the
 * tag of the call, the choice of algorithm and the dispatch to it. */
#include <stdint.h>

#include "internal.h"

/* Partial overlap of [a, a+an) and [b, b+bn): an error; a == b is in place. */
static int overlaps(const void *a, size_t an, const void *b, size_t bn) {
  uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;
  if (an == 0 || bn == 0 || x == y) return 0;
  return x < y + bn && y < x + an;
}

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

/* Picks the algorithm and runs it. */
static int run(redcoll__call *call) {
  redcoll_comm *c = call->comm;
  redcoll_algo a = c->algo[call->coll];
  int noncomm = call->op != NULL && !call->op->commutative;
  if (a == REDCOLL_ALGO_AUTO) a = redcoll__select(call);
  const redcoll__algo_entry *e = redcoll__algo_find(call->coll, a);
  if (e == NULL) return REDCOLL_ENOTSUP;
  if (noncomm && (e->flags & REDCOLL__NEEDS_COMMUTATIVE)) return REDCOLL_ENOTSUP;
  c->last_algo = a;
  c->tag = redcoll__make_tag(c->seq++, call->coll, call->count, call->dtype, call->op, call->root);
  c->cur = call; /* so that failure reports can show the whole call */
  int rc = e->fn(call);
  /* Any failure inside the algorithm (ENOMEM for scratch included) breaks
   * the communicator and aborts the peers; transport errors already did. */
  if (rc != REDCOLL_OK) rc = redcoll__fail(c, rc);
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
  if (sendbuf == REDCOLL_IN_PLACE || sendbuf == recvbuf) {
    call.in_place = 1;
    sendbuf = recvbuf;
  } else if (overlaps(sendbuf, bytes, recvbuf, bytes)) {
    return REDCOLL_EINVAL;
  }
  call.sendbuf = sendbuf;
  call.recvbuf = recvbuf;
  call.count = count;
  if (count == 0) return REDCOLL_OK;
  if (c->size == 1) {
    if (!call.in_place) memcpy(recvbuf, sendbuf, bytes);
    return REDCOLL_OK;
  }
  return run(&call);
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
  if (sendbuf == REDCOLL_IN_PLACE || (at_root && sendbuf == recvbuf)) {
    if (!at_root) return REDCOLL_EINVAL;
    call.in_place = 1;
    sendbuf = recvbuf;
  }
  if (count > 0 && (sendbuf == NULL || (at_root && recvbuf == NULL))) return REDCOLL_EINVAL;
  if (at_root && !call.in_place && overlaps(sendbuf, bytes, recvbuf, bytes)) return REDCOLL_EINVAL;
  call.sendbuf = sendbuf;
  call.recvbuf = at_root ? recvbuf : NULL;
  call.count = count;
  call.root = root;
  if (count == 0) return REDCOLL_OK;
  if (c->size == 1) {
    if (!call.in_place) memcpy(recvbuf, sendbuf, bytes);
    return REDCOLL_OK;
  }
  return run(&call);
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
  if (sendbuf == REDCOLL_IN_PLACE || sendbuf == recvbuf) {
    call.in_place = 1;
    sendbuf = recvbuf;
  } else if (overlaps(sendbuf, total, recvbuf, bytes)) {
    return REDCOLL_EINVAL;
  }
  call.sendbuf = sendbuf;
  call.recvbuf = recvbuf;
  call.count = recvcount;
  if (recvcount == 0) return REDCOLL_OK;
  if (c->size == 1) {
    if (!call.in_place) memcpy(recvbuf, sendbuf, bytes);
    return REDCOLL_OK;
  }
  return run(&call);
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
  if (total > 0 && sendbuf == NULL) return REDCOLL_EINVAL;
  if (mine > 0 && recvbuf == NULL) return REDCOLL_EINVAL;
  if (sendbuf == REDCOLL_IN_PLACE || (sendbuf == recvbuf && recvbuf != NULL)) {
    if (recvbuf == NULL && total > 0) return REDCOLL_EINVAL;
    call.in_place = 1;
    sendbuf = recvbuf;
  } else if (overlaps(sendbuf, tbytes, recvbuf, mine)) {
    return REDCOLL_EINVAL;
  }
  call.sendbuf = sendbuf;
  call.recvbuf = recvbuf;
  call.counts = recvcounts;
  call.count = total;
  if (total == 0) return REDCOLL_OK;
  if (c->size == 1) {
    if (!call.in_place) memcpy(recvbuf, sendbuf, mine);
    return REDCOLL_OK;
  }
  return run(&call);
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
  char *own = (char *)recvbuf + (size_t)c->rank * bytes;
  if (sendbuf == REDCOLL_IN_PLACE || (count > 0 && sendbuf == own)) {
    call.in_place = 1;
    sendbuf = own;
  } else if (overlaps(sendbuf, bytes, recvbuf, total)) {
    return REDCOLL_EINVAL;
  }
  call.sendbuf = sendbuf;
  call.recvbuf = recvbuf;
  call.count = count;
  if (count == 0) return REDCOLL_OK;
  if (c->size == 1) {
    if (!call.in_place) memcpy(recvbuf, sendbuf, bytes);
    return REDCOLL_OK;
  }
  return run(&call);
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
  size_t bytes = sendcount * call.esize;
  if ((sendcount > 0 && sendbuf == NULL) || (total > 0 && recvbuf == NULL)) return REDCOLL_EINVAL;
  char *own = (char *)recvbuf + before * call.esize;
  if (sendbuf == REDCOLL_IN_PLACE || (bytes > 0 && sendbuf == own)) {
    call.in_place = 1;
    sendbuf = own;
  } else if (overlaps(sendbuf, bytes, recvbuf, tbytes)) {
    return REDCOLL_EINVAL;
  }
  call.sendbuf = sendbuf;
  call.recvbuf = recvbuf;
  call.counts = recvcounts;
  call.count = total;
  if (total == 0) return REDCOLL_OK;
  if (c->size == 1) {
    if (!call.in_place) memcpy(recvbuf, sendbuf, bytes);
    return REDCOLL_OK;
  }
  return run(&call);
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
  if (count == 0 || c->size == 1) return REDCOLL_OK;
  return run(&call);
}

REDCOLL_API int redcoll_barrier(redcoll_comm *c) {
  redcoll__call call;
  int rc = check_comm(c);
  if (rc != REDCOLL_OK) return rc;
  init_call(&call, c, REDCOLL_COLL_BARRIER);
  call.dtype = REDCOLL_UINT8;
  call.esize = 1;
  if (c->size == 1) return REDCOLL_OK;
  return run(&call);
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
  if (is_root) {
    char *own = (char *)recvbuf + (size_t)root * bytes;
    if (sendbuf == REDCOLL_IN_PLACE || (count > 0 && sendbuf == own)) {
      call.in_place = 1;
      sendbuf = own;
    } else if (overlaps(sendbuf, bytes, recvbuf, total)) {
      return REDCOLL_EINVAL;
    }
  } else {
    recvbuf = NULL; /* not significant off the root */
  }
  call.sendbuf = sendbuf;
  call.recvbuf = recvbuf;
  call.count = count;
  call.root = root;
  if (count == 0) return REDCOLL_OK;
  if (c->size == 1) {
    if (!call.in_place) memcpy(recvbuf, sendbuf, bytes);
    return REDCOLL_OK;
  }
  return run(&call);
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
  if (is_root) {
    const char *own = (const char *)sendbuf + (size_t)root * bytes;
    if (recvbuf == REDCOLL_IN_PLACE || (count > 0 && recvbuf == own)) {
      call.in_place = 1;
      recvbuf = (void *)own;
    } else if (overlaps(recvbuf, bytes, sendbuf, total)) {
      return REDCOLL_EINVAL;
    }
  } else {
    sendbuf = NULL; /* not significant off the root */
  }
  call.sendbuf = sendbuf;
  call.recvbuf = recvbuf;
  call.count = count;
  call.root = root;
  if (count == 0) return REDCOLL_OK;
  if (c->size == 1) {
    if (!call.in_place) memcpy(recvbuf, sendbuf, bytes);
    return REDCOLL_OK;
  }
  return run(&call);
}
