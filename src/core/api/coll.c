/* The public collectives: argument checks (before any communication), the
 * tag of the call, the choice of algorithm and the dispatch to it. */
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "internal.h"
#include "select/cost.h"

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
  return __atomic_load_n(&c->error, __ATOMIC_ACQUIRE);
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
  /* Two levels on hosts whose ranks interleave: only some collectives. */
  if (a == REDCOLL_ALGO_TWO_LEVEL) return redcoll__two_level_check(call);
  if (a == REDCOLL_ALGO_AUTO || call->op == NULL || call->op->commutative) return REDCOLL_OK;
  const redcoll__algo_entry *e = redcoll__algo_find(call->coll, a);
  return e != NULL && (e->flags & REDCOLL__NEEDS_COMMUTATIVE) ? REDCOLL_ENOTSUP : REDCOLL_OK;
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
  call->phases = &redcoll__phases;
  if (call->calibrate) {
    /* The first choice AUTO makes on c: measure the model first, as a
     * step of this collective (on a nonblocking one's fiber, posted). */
    int rc = redcoll__calibrate(c);
    if (rc != REDCOLL_OK) return rc;
  }
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


/* ---- the shape of each collective ---------------------------------------- */

/* What a collective's buffers hold.  A "block" is one rank's part (count
 * elements, or counts[rank] with S_VCOUNTS); "all" is the p blocks end to
 * end (p * count elements, or the sum of counts). */
enum {
  S_REDUCE = 1 << 0,       /* reduces with an operator */
  S_ROOTED = 1 << 1,       /* has a root */
  S_IN_ALL = 1 << 2,       /* sendbuf holds all blocks (else one block) */
  S_OUT_ALL = 1 << 3,      /* recvbuf holds all blocks (else one block) */
  S_IN_AT_ROOT = 1 << 4,   /* sendbuf is significant at the root only */
  S_OUT_AT_ROOT = 1 << 5,  /* recvbuf is significant at the root only */
  S_VCOUNTS = 1 << 6,      /* blocks of counts[i] elements */
  S_ONE_BUF = 1 << 7,      /* one buffer, input at the root, output elsewhere */
  S_NO_BUF = 1 << 8,       /* no data */
  S_EXCLUSIVE = 1 << 9,    /* rank 0's recvbuf is left unchanged */
  S_TOTAL = 1 << 10,       /* a third buffer of one block (the total): never
                              in place, overlapping neither of the others */
  S_DISPLS = 1 << 11,      /* with S_VCOUNTS: block i of the buffer of all
                              blocks sits at displs[i] (significant at the
                              root only if rooted), and the rank's own
                              count is passed as well */
  S_PAIRS = 1 << 12        /* alltoallv: counts and displacements for both
                              buffers; a rank's data is never "nothing to
                              do" for all (its peers may still send) */
};

/* Where the in-place layout keeps the rank's own input. */
enum {
  IP_NONE,          /* no in-place form */
  IP_SAME,          /* sendbuf == recvbuf */
  IP_SEND_IN_RECV,  /* sendbuf == recvbuf + the rank's block offset */
  IP_RECV_IN_SEND   /* recvbuf == sendbuf + the rank's block offset (given
                       as REDCOLL_IN_PLACE in recvbuf) */
};

typedef struct {
  unsigned flags;
  int place;
} coll_shape;

static const coll_shape shapes[REDCOLL_COLL_COUNT] = {
    [REDCOLL_COLL_ALLREDUCE] = {S_REDUCE, IP_SAME},
    [REDCOLL_COLL_REDUCE] = {S_REDUCE | S_ROOTED | S_OUT_AT_ROOT, IP_SAME},
    [REDCOLL_COLL_REDUCE_SCATTER_BLOCK] = {S_REDUCE | S_IN_ALL, IP_SAME},
    [REDCOLL_COLL_REDUCE_SCATTER] = {S_REDUCE | S_IN_ALL | S_VCOUNTS, IP_SAME},
    [REDCOLL_COLL_ALLGATHER] = {S_OUT_ALL, IP_SEND_IN_RECV},
    [REDCOLL_COLL_ALLGATHERV] = {S_OUT_ALL | S_VCOUNTS, IP_SEND_IN_RECV},
    [REDCOLL_COLL_BCAST] = {S_ROOTED | S_ONE_BUF, IP_NONE},
    [REDCOLL_COLL_GATHER] = {S_ROOTED | S_OUT_ALL | S_OUT_AT_ROOT, IP_SEND_IN_RECV},
    [REDCOLL_COLL_SCATTER] = {S_ROOTED | S_IN_ALL | S_IN_AT_ROOT, IP_RECV_IN_SEND},
    [REDCOLL_COLL_BARRIER] = {S_NO_BUF, IP_NONE},
    [REDCOLL_COLL_SCAN] = {S_REDUCE, IP_SAME},
    [REDCOLL_COLL_EXSCAN] = {S_REDUCE | S_EXCLUSIVE, IP_SAME},
    [REDCOLL_COLL_EXSCAN_TOTAL] = {S_REDUCE | S_EXCLUSIVE | S_TOTAL, IP_SAME},
    [REDCOLL_COLL_ALLTOALL] = {S_IN_ALL | S_OUT_ALL, IP_SAME},
    [REDCOLL_COLL_ALLTOALLV] = {S_PAIRS, IP_NONE},
    [REDCOLL_COLL_GATHERV] = {S_ROOTED | S_OUT_ALL | S_OUT_AT_ROOT | S_VCOUNTS | S_DISPLS,
                              IP_SEND_IN_RECV},
    [REDCOLL_COLL_SCATTERV] = {S_ROOTED | S_IN_ALL | S_IN_AT_ROOT | S_VCOUNTS | S_DISPLS,
                               IP_RECV_IN_SEND},
    [REDCOLL_COLL_ALLGATHERV_DISPLS] = {S_OUT_ALL | S_VCOUNTS | S_DISPLS, IP_SEND_IN_RECV},
};

/* The arguments of any entry point.  count: the vector or block, or with
 * S_VCOUNTS and a block input the sendcount (which must equal
 * counts[rank]). */
typedef struct {
  redcoll_coll coll;
  const void *sendbuf;
  void *recvbuf;
  size_t count;
  const size_t *counts;
  redcoll_dtype dt;
  const redcoll_op *op;
  int root;
  void *total; /* S_TOTAL */
  const size_t *displs;            /* S_DISPLS, S_PAIRS (send side) */
  const size_t *rcounts, *rdispls; /* S_PAIRS: the receive side */
} coll_args;

/* Sizes in bytes of one rank's view of a call. */
typedef struct {
  size_t in, out;  /* bytes of sendbuf and recvbuf the rank reads / writes */
  size_t at;       /* offset of the rank's block within all blocks */
  size_t total;    /* elements in all blocks; 0: nothing to do */
} coll_sizes;

/* Elements spanned by p blocks of counts[i] at displs[i] (empty blocks
 * span nothing); SIZE_MAX on overflow or NULL arrays. */
static size_t extent(const size_t *counts, const size_t *displs, int p) {
  size_t end = 0;
  if (counts == NULL || displs == NULL) return SIZE_MAX;
  for (int i = 0; i < p; i++) {
    if (counts[i] == 0) continue;
    if (displs[i] > SIZE_MAX - 1 - counts[i]) return SIZE_MAX;
    if (displs[i] + counts[i] > end) end = displs[i] + counts[i];
  }
  return end;
}

/* Block and all-block sizes from count or counts; EINVAL on overflow. */
static int measure(const coll_args *a, const redcoll__call *call, unsigned s, coll_sizes *z) {
  const redcoll_comm *c = call->comm;
  size_t es = call->esize, block, all, before = 0;
  if (s & S_PAIRS) {
    size_t in = extent(a->counts, a->displs, c->size), out = extent(a->rcounts, a->rdispls, c->size);
    if (in == SIZE_MAX || out == SIZE_MAX) return REDCOLL_EINVAL;
    /* the own block is sent and received by this rank alone */
    if (a->counts[c->rank] != a->rcounts[c->rank]) return REDCOLL_EINVAL;
    z->in = mul_sat(in, es);
    z->out = mul_sat(out, es);
    if (z->in == SIZE_MAX || z->out == SIZE_MAX) return REDCOLL_EINVAL;
    z->at = 0;
    z->total = 1;
    return REDCOLL_OK;
  }
  if (s & S_VCOUNTS) {
    if (a->counts == NULL) return REDCOLL_EINVAL;
    if (!(s & S_IN_ALL) && a->counts[c->rank] != a->count) return REDCOLL_EINVAL;
    all = 0;
    for (int i = 0; i < c->size; i++) {
      if (a->counts[i] > SIZE_MAX - all) return REDCOLL_EINVAL;
      if (i == c->rank) before = all;
      all += a->counts[i];
    }
    block = a->counts[c->rank];
    if ((s & S_DISPLS) && block != a->count) return REDCOLL_EINVAL;
  } else {
    block = a->count;
    all = (s & (S_IN_ALL | S_OUT_ALL)) ? mul_sat(block, (size_t)c->size) : block;
    before = (size_t)c->rank * block;
  }
  size_t span = all; /* elements the buffer of all blocks spans */
  if ((s & S_DISPLS) && (!(s & S_ROOTED) || c->rank == a->root)) {
    /* the root's layout: block i where displs[i] puts it */
    if ((span = extent(a->counts, a->displs, c->size)) == SIZE_MAX) return REDCOLL_EINVAL;
    before = a->displs[c->rank];
  }
  size_t all_bytes = mul_sat(span, es), block_bytes = mul_sat(block, es);
  if (all_bytes == SIZE_MAX || block_bytes == SIZE_MAX) return REDCOLL_EINVAL;
  z->in = (s & S_IN_ALL) ? all_bytes : block_bytes;
  z->out = (s & S_OUT_ALL) ? all_bytes : block_bytes;
  z->at = mul_sat(before, es);
  if (z->at == SIZE_MAX) return REDCOLL_EINVAL;
  z->total = all;
  return REDCOLL_OK;
}

/* REDCOLL_IN_PLACE in the slot the collective's in-place form uses, on a
 * rank where that form is allowed, becomes the buffer it stands for; in any
 * other slot or rank it is EINVAL.  A buffer not significant on this rank
 * becomes NULL. */
static int resolve_place(const coll_shape *sh, int is_root, const coll_sizes *z,
                         const void **send, void **recv) {
  unsigned s = sh->flags;
  const void *ip = REDCOLL_IN_PLACE;
  int ip_send = *send == ip, ip_recv = *recv == ip;
  if (ip_send && ip_recv) return REDCOLL_EINVAL; /* one of the two is the other slot */
  int ok_root = !(s & (S_IN_AT_ROOT | S_OUT_AT_ROOT)) || is_root;
  if (ip_send && (sh->place == IP_SAME || sh->place == IP_SEND_IN_RECV) && ok_root)
    *send = byte_at(*recv, sh->place == IP_SAME ? 0 : z->at);
  else if (ip_recv && sh->place == IP_RECV_IN_SEND && ok_root)
    *recv = byte_at(*send, z->at);
  else if (ip_send || ip_recv)
    return REDCOLL_EINVAL;
  if ((s & S_IN_AT_ROOT) && !is_root) *send = NULL;
  if ((s & S_OUT_AT_ROOT) && !is_root) *recv = NULL;
  return REDCOLL_OK;
}

/* The buffer rule (alias_rule) in the collective's in-place layout: 1 in
 * place, 0 apart, EINVAL for any other overlap. */
static int place_rule(int place, const void *send, const void *recv, const coll_sizes *z) {
  switch (place) {
  case IP_SAME: {
    int rc = alias_rule(send, z->in, recv, z->out, 0);
    return rc < 0 ? rc : (rc == 1 || send == recv);
  }
  case IP_SEND_IN_RECV:
    return alias_rule(send, z->in, recv, z->out, z->at);
  case IP_RECV_IN_SEND:
    return alias_rule(recv, z->out, send, z->in, z->at);
  default:
    return 0;
  }
}

/* The checks of a collective with buffers: dtype and op, root, sizes, NULL
 * buffers, REDCOLL_IN_PLACE and the buffer rule.  Fills call and z. */
static int check_buffers(const coll_args *a, redcoll__call *call, coll_sizes *z,
                         const char **why) {
  static const char no_buffer[] = "a NULL buffer where there are elements to move";
  const coll_shape *sh = &shapes[a->coll];
  unsigned s = sh->flags;
  const redcoll_comm *c = call->comm;
  int rc = check_type(call, a->dt, a->op, (s & S_REDUCE) != 0);
  *why = "the datatype or the operator is not one this collective takes";
  if (rc != REDCOLL_OK) return rc;
  *why = "the root is not a rank of the communicator";
  if ((s & S_ROOTED) && (a->root < 0 || a->root >= c->size)) return REDCOLL_EINVAL;
  int is_root = !(s & S_ROOTED) || c->rank == a->root;
  int both = !(s & (S_IN_AT_ROOT | S_OUT_AT_ROOT)) || is_root; /* both buffers significant */
  *why = "the counts overflow a size_t in bytes, or disagree with this rank's block";
  if ((rc = measure(a, call, s, z)) != REDCOLL_OK) return rc;
  const void *send = a->sendbuf;
  void *recv = a->recvbuf;
  int use_send = z->in > 0 && (!(s & S_IN_AT_ROOT) || is_root);
  int use_recv = z->out > 0 && (!(s & S_OUT_AT_ROOT) || is_root);
  *why = no_buffer;
  if ((use_send && send == NULL) || (use_recv && recv == NULL)) return REDCOLL_EINVAL;
  *why = "REDCOLL_IN_PLACE in a slot, or on a rank, where the collective has no in-place form";
  if (s & S_ONE_BUF) {
    if (send == REDCOLL_IN_PLACE) return REDCOLL_EINVAL;
    call->in_place = 1;
  } else {
    if ((rc = resolve_place(sh, is_root, z, &send, &recv)) != REDCOLL_OK) return rc;
    *why = no_buffer;
    if ((use_send && send == NULL) || (use_recv && recv == NULL)) return REDCOLL_EINVAL;
    *why = "the send and receive buffers overlap other than in the in-place layout";
    if (both) {
      if ((rc = place_rule(sh->place, send, recv, z)) < 0) return rc;
      call->in_place = rc;
    }
  }
  *why = "the send and receive buffers overlap";
  if ((s & S_PAIRS) && ranges_meet(send, z->in, recv, z->out)) return REDCOLL_EINVAL;
  if (s & S_TOTAL) {
    /* One block, like the vector itself; apart from both other buffers. */
    void *t = a->total;
    *why = "the total's buffer is NULL, REDCOLL_IN_PLACE, or overlaps another buffer";
    if (t == REDCOLL_IN_PLACE || (z->out > 0 && t == NULL)) return REDCOLL_EINVAL;
    if (ranges_meet(t, z->out, send, z->in) || ranges_meet(t, z->out, recv, z->out))
      return REDCOLL_EINVAL;
    call->total = t;
  }
  *why = NULL;
  call->sendbuf = send;
  call->recvbuf = recv;
  call->count = (s & S_VCOUNTS) ? z->total : (s & S_PAIRS) ? 0 : a->count;
  call->counts = a->counts;
  call->displs = is_root ? a->displs : NULL;
  call->rcounts = a->rcounts;
  call->rdispls = a->rdispls;
  call->root = (s & S_ROOTED) ? a->root : 0;
  return REDCOLL_OK;
}

/* One rank of alltoallv, gatherv or scatterv: its own block from where its
 * input keeps it to where its output wants it (unless in place). */
static int own_block_v(const redcoll__call *call) {
  size_t es = call->esize, n = call->counts[0];
  int a2a = call->coll == REDCOLL_COLL_ALLTOALLV, scatter = call->coll == REDCOLL_COLL_SCATTERV;
  size_t from = a2a || scatter ? call->displs[0] : 0;
  size_t to = a2a ? call->rdispls[0] : scatter ? 0 : call->displs[0];
  if (!call->in_place && n > 0)
    memcpy((char *)call->recvbuf + to * es, (const char *)call->sendbuf + from * es, n * es);
  return REDCOLL_OK;
}

/* One rank: its own block is the result (its offset is 0); an exclusive
 * prefix leaves rank 0's recvbuf alone, and the total is the own block. */
static int one_rank(const redcoll__call *call, unsigned s, const coll_sizes *z) {
  size_t own = z->in < z->out ? z->in : z->out;
  if (s & (S_PAIRS | S_DISPLS)) return own_block_v(call);
  if (s & S_TOTAL) memcpy(call->total, call->sendbuf, own);
  if (!call->in_place && !(s & S_EXCLUSIVE) && own > 0) memcpy(call->recvbuf, call->sendbuf, own);
  return REDCOLL_OK;
}

/* A call refused before anything was sent (EINVAL, ENOTSUP): one error line
 * naming the rank, the call and the reason; the communicator stays usable. */
static int refused(const redcoll_comm *c, const coll_args *a, int rc, const char *why) {
  unsigned s = shapes[a->coll].flags;
  const char *dt = redcoll_dtype_name(a->dt);
  char what[128];
  size_t k = (size_t)snprintf(what, sizeof what, "%s", redcoll_coll_name(a->coll));
  /* Only what the call has: no count where counts are given instead. */
  if (!(s & S_NO_BUF) && (a->counts == NULL || a->count > 0) && k < sizeof what)
    k += (size_t)snprintf(what + k, sizeof what - k, " count %zu", a->count);
  if (!(s & S_NO_BUF) && k < sizeof what)
    k += (size_t)snprintf(what + k, sizeof what - k, " dtype %s", dt ? dt : "?");
  if ((s & S_ROOTED) && k < sizeof what) snprintf(what + k, sizeof what - k, " root %d", a->root);
  redcoll__log(0, "rank %d: %s refused: %s (%s): %s", c->rank, what, redcoll_status_name(rc),
               redcoll_strerror(rc), why ? why : "invalid argument");
  return rc;
}

/* The one prologue and tail of every collective: the checks, all before
 * anything is sent; then nothing to do (total 0), the forced algorithm's
 * check (so that one rank answers as many do), one rank (a copy of its own
 * block unless in place), or the algorithm: now, or as a request (req not
 * NULL).  A blocking call first finishes the communicator's requests. */
static int enter(redcoll_comm *c, const coll_args *a, redcoll_request **req) {
  if (req != NULL) *req = NULL;
  redcoll__call call;
  coll_sizes z = {0, 0, 0, 1};
  int rc = check_comm(c);
  if (rc != REDCOLL_OK) return rc;
  memset(&call, 0, sizeof call);
  call.comm = c;
  call.coll = a->coll;
  const char *why = NULL;
  if (shapes[a->coll].flags & S_NO_BUF) {
    call.dtype = REDCOLL_UINT8;
    call.esize = 1;
  } else if ((rc = check_buffers(a, &call, &z, &why)) != REDCOLL_OK) {
    return refused(c, a, rc, why);
  }
  if (z.total > 0 && (rc = check_forced(&call)) != REDCOLL_OK)
    return refused(c, a, rc, "the forced algorithm does not take this call (a non-commutative "
                             "operator, or two_level where the collective has no such form)");
  if (z.total == 0 || c->size == 1) {
    /* Nothing to communicate. */
    rc = z.total == 0 ? REDCOLL_OK : one_rank(&call, shapes[a->coll].flags, &z);
    return req == NULL ? rc : redcoll__nb_finished(c, rc, req);
  }
  call.calibrate = c->algo[a->coll] == REDCOLL_ALGO_AUTO && redcoll__calibration_due(c);
  if (req != NULL) return redcoll__nb_start(&call, run, req);
  redcoll__nb_drain(c);
  return run(&call);
}

/* The i-forms: as enter, and the request's address is required (NULL would
 * make a blocking call of it). */
static int enter_nb(redcoll_comm *c, const coll_args *a, redcoll_request **req) {
  if (req == NULL) {
    int rc = check_comm(c); /* (EINVAL for c NULL) */
    return rc != REDCOLL_OK ? rc : refused(c, a, REDCOLL_EINVAL, "the request's address is NULL");
  }
  return enter(c, a, req);
}

/* ---- the entry points ------------------------------------------------------ */

REDCOLL_API int redcoll_allreduce(redcoll_comm *c, const void *sendbuf, void *recvbuf, size_t count,
                                  redcoll_dtype dt, const redcoll_op *op) {
  return enter(c, &(coll_args){.coll = REDCOLL_COLL_ALLREDUCE, .sendbuf = sendbuf,
                               .recvbuf = recvbuf, .count = count, .dt = dt, .op = op}, NULL);
}

REDCOLL_API int redcoll_reduce(redcoll_comm *c, const void *sendbuf, void *recvbuf, size_t count,
                               redcoll_dtype dt, const redcoll_op *op, int root) {
  return enter(c, &(coll_args){.coll = REDCOLL_COLL_REDUCE, .sendbuf = sendbuf, .recvbuf = recvbuf,
                               .count = count, .dt = dt, .op = op, .root = root}, NULL);
}

REDCOLL_API int redcoll_reduce_scatter_block(redcoll_comm *c, const void *sendbuf, void *recvbuf,
                                             size_t recvcount, redcoll_dtype dt,
                                             const redcoll_op *op) {
  return enter(c, &(coll_args){.coll = REDCOLL_COLL_REDUCE_SCATTER_BLOCK, .sendbuf = sendbuf,
                               .recvbuf = recvbuf, .count = recvcount, .dt = dt, .op = op}, NULL);
}

REDCOLL_API int redcoll_reduce_scatter(redcoll_comm *c, const void *sendbuf, void *recvbuf,
                                       const size_t *recvcounts, redcoll_dtype dt,
                                       const redcoll_op *op) {
  return enter(c, &(coll_args){.coll = REDCOLL_COLL_REDUCE_SCATTER, .sendbuf = sendbuf,
                               .recvbuf = recvbuf, .counts = recvcounts, .dt = dt, .op = op}, NULL);
}

REDCOLL_API int redcoll_allgather(redcoll_comm *c, const void *sendbuf, void *recvbuf, size_t count,
                                  redcoll_dtype dt) {
  return enter(c, &(coll_args){.coll = REDCOLL_COLL_ALLGATHER, .sendbuf = sendbuf,
                               .recvbuf = recvbuf, .count = count, .dt = dt}, NULL);
}

REDCOLL_API int redcoll_allgatherv(redcoll_comm *c, const void *sendbuf, size_t sendcount,
                                   void *recvbuf, const size_t *recvcounts, redcoll_dtype dt) {
  return enter(c, &(coll_args){.coll = REDCOLL_COLL_ALLGATHERV, .sendbuf = sendbuf,
                               .recvbuf = recvbuf, .count = sendcount, .counts = recvcounts,
                               .dt = dt}, NULL);
}

REDCOLL_API int redcoll_bcast(redcoll_comm *c, void *buf, size_t count, redcoll_dtype dt, int root) {
  return enter(c, &(coll_args){.coll = REDCOLL_COLL_BCAST, .sendbuf = buf, .recvbuf = buf,
                               .count = count, .dt = dt, .root = root}, NULL);
}

REDCOLL_API int redcoll_barrier(redcoll_comm *c) {
  return enter(c, &(coll_args){.coll = REDCOLL_COLL_BARRIER}, NULL);
}

REDCOLL_API int redcoll_gather(redcoll_comm *c, const void *sendbuf, void *recvbuf, size_t count,
                               redcoll_dtype dt, int root) {
  return enter(c, &(coll_args){.coll = REDCOLL_COLL_GATHER, .sendbuf = sendbuf, .recvbuf = recvbuf,
                               .count = count, .dt = dt, .root = root}, NULL);
}

REDCOLL_API int redcoll_scatter(redcoll_comm *c, const void *sendbuf, void *recvbuf, size_t count,
                                redcoll_dtype dt, int root) {
  return enter(c, &(coll_args){.coll = REDCOLL_COLL_SCATTER, .sendbuf = sendbuf,
                               .recvbuf = recvbuf, .count = count, .dt = dt, .root = root}, NULL);
}

REDCOLL_API int redcoll_scan(redcoll_comm *c, const void *sendbuf, void *recvbuf, size_t count,
                             redcoll_dtype dt, const redcoll_op *op) {
  return enter(c, &(coll_args){.coll = REDCOLL_COLL_SCAN, .sendbuf = sendbuf, .recvbuf = recvbuf,
                               .count = count, .dt = dt, .op = op}, NULL);
}

REDCOLL_API int redcoll_exscan(redcoll_comm *c, const void *sendbuf, void *recvbuf, size_t count,
                               redcoll_dtype dt, const redcoll_op *op) {
  return enter(c, &(coll_args){.coll = REDCOLL_COLL_EXSCAN, .sendbuf = sendbuf,
                               .recvbuf = recvbuf, .count = count, .dt = dt, .op = op}, NULL);
}

REDCOLL_API int redcoll_exscan_total(redcoll_comm *c, const void *sendbuf, void *recvbuf,
                                     void *total, size_t count, redcoll_dtype dt,
                                     const redcoll_op *op) {
  return enter(c, &(coll_args){.coll = REDCOLL_COLL_EXSCAN_TOTAL, .sendbuf = sendbuf,
                               .recvbuf = recvbuf, .count = count, .dt = dt, .op = op,
                               .total = total}, NULL);
}

REDCOLL_API int redcoll_alltoall(redcoll_comm *c, const void *sendbuf, void *recvbuf, size_t count,
                                 redcoll_dtype dt) {
  return enter(c, &(coll_args){.coll = REDCOLL_COLL_ALLTOALL, .sendbuf = sendbuf,
                               .recvbuf = recvbuf, .count = count, .dt = dt}, NULL);
}

REDCOLL_API int redcoll_alltoallv(redcoll_comm *c, const void *sendbuf, const size_t *sendcounts,
                                  const size_t *sdispls, void *recvbuf, const size_t *recvcounts,
                                  const size_t *rdispls, redcoll_dtype dt) {
  return enter(c, &(coll_args){.coll = REDCOLL_COLL_ALLTOALLV, .sendbuf = sendbuf,
                               .recvbuf = recvbuf, .counts = sendcounts, .displs = sdispls,
                               .rcounts = recvcounts, .rdispls = rdispls, .dt = dt}, NULL);
}

REDCOLL_API int redcoll_gatherv(redcoll_comm *c, const void *sendbuf, size_t sendcount,
                                void *recvbuf, const size_t *recvcounts, const size_t *displs,
                                redcoll_dtype dt, int root) {
  return enter(c, &(coll_args){.coll = REDCOLL_COLL_GATHERV, .sendbuf = sendbuf,
                               .recvbuf = recvbuf, .count = sendcount, .counts = recvcounts,
                               .displs = displs, .dt = dt, .root = root}, NULL);
}

REDCOLL_API int redcoll_scatterv(redcoll_comm *c, const void *sendbuf, const size_t *sendcounts,
                                 const size_t *displs, void *recvbuf, size_t recvcount,
                                 redcoll_dtype dt, int root) {
  return enter(c, &(coll_args){.coll = REDCOLL_COLL_SCATTERV, .sendbuf = sendbuf,
                               .recvbuf = recvbuf, .count = recvcount, .counts = sendcounts,
                               .displs = displs, .dt = dt, .root = root}, NULL);
}

REDCOLL_API int redcoll_allgatherv_displs(redcoll_comm *c, const void *sendbuf, size_t sendcount,
                                          void *recvbuf, const size_t *recvcounts,
                                          const size_t *displs, redcoll_dtype dt) {
  return enter(c, &(coll_args){.coll = REDCOLL_COLL_ALLGATHERV_DISPLS, .sendbuf = sendbuf,
                               .recvbuf = recvbuf, .count = sendcount, .counts = recvcounts,
                               .displs = displs, .dt = dt}, NULL);
}

/* ---- the nonblocking entry points (api/request.c runs them) ---------------- */

REDCOLL_API int redcoll_iallreduce(redcoll_comm *c, const void *sendbuf, void *recvbuf, size_t count,
                                  redcoll_dtype dt, const redcoll_op *op, redcoll_request **req) {
  return enter_nb(c, &(coll_args){.coll = REDCOLL_COLL_ALLREDUCE, .sendbuf = sendbuf,
                               .recvbuf = recvbuf, .count = count, .dt = dt, .op = op}, req);
}

REDCOLL_API int redcoll_ireduce(redcoll_comm *c, const void *sendbuf, void *recvbuf, size_t count,
                               redcoll_dtype dt, const redcoll_op *op, int root, redcoll_request **req) {
  return enter_nb(c, &(coll_args){.coll = REDCOLL_COLL_REDUCE, .sendbuf = sendbuf,
                                  .recvbuf = recvbuf,
                               .count = count, .dt = dt, .op = op, .root = root}, req);
}

REDCOLL_API int redcoll_ireduce_scatter_block(redcoll_comm *c, const void *sendbuf, void *recvbuf,
                                             size_t recvcount, redcoll_dtype dt,
                                             const redcoll_op *op, redcoll_request **req) {
  return enter_nb(c, &(coll_args){.coll = REDCOLL_COLL_REDUCE_SCATTER_BLOCK, .sendbuf = sendbuf,
                               .recvbuf = recvbuf, .count = recvcount, .dt = dt, .op = op}, req);
}

REDCOLL_API int redcoll_ireduce_scatter(redcoll_comm *c, const void *sendbuf, void *recvbuf,
                                       const size_t *recvcounts, redcoll_dtype dt,
                                       const redcoll_op *op, redcoll_request **req) {
  return enter_nb(c, &(coll_args){.coll = REDCOLL_COLL_REDUCE_SCATTER, .sendbuf = sendbuf,
                               .recvbuf = recvbuf, .counts = recvcounts, .dt = dt, .op = op}, req);
}

REDCOLL_API int redcoll_iallgather(redcoll_comm *c, const void *sendbuf, void *recvbuf, size_t count,
                                  redcoll_dtype dt, redcoll_request **req) {
  return enter_nb(c, &(coll_args){.coll = REDCOLL_COLL_ALLGATHER, .sendbuf = sendbuf,
                               .recvbuf = recvbuf, .count = count, .dt = dt}, req);
}

REDCOLL_API int redcoll_iallgatherv(redcoll_comm *c, const void *sendbuf, size_t sendcount,
                                   void *recvbuf, const size_t *recvcounts, redcoll_dtype dt, redcoll_request **req) {
  return enter_nb(c, &(coll_args){.coll = REDCOLL_COLL_ALLGATHERV, .sendbuf = sendbuf,
                               .recvbuf = recvbuf, .count = sendcount, .counts = recvcounts,
                               .dt = dt}, req);
}

REDCOLL_API int redcoll_ibcast(redcoll_comm *c, void *buf, size_t count, redcoll_dtype dt, int root, redcoll_request **req) {
  return enter_nb(c, &(coll_args){.coll = REDCOLL_COLL_BCAST, .sendbuf = buf, .recvbuf = buf,
                               .count = count, .dt = dt, .root = root}, req);
}

REDCOLL_API int redcoll_ibarrier(redcoll_comm *c, redcoll_request **req) {
  return enter_nb(c, &(coll_args){.coll = REDCOLL_COLL_BARRIER}, req);
}

REDCOLL_API int redcoll_igather(redcoll_comm *c, const void *sendbuf, void *recvbuf, size_t count,
                               redcoll_dtype dt, int root, redcoll_request **req) {
  return enter_nb(c, &(coll_args){.coll = REDCOLL_COLL_GATHER, .sendbuf = sendbuf, .recvbuf = recvbuf,
                               .count = count, .dt = dt, .root = root}, req);
}

REDCOLL_API int redcoll_iscatter(redcoll_comm *c, const void *sendbuf, void *recvbuf, size_t count,
                                redcoll_dtype dt, int root, redcoll_request **req) {
  return enter_nb(c, &(coll_args){.coll = REDCOLL_COLL_SCATTER, .sendbuf = sendbuf,
                               .recvbuf = recvbuf, .count = count, .dt = dt, .root = root}, req);
}

REDCOLL_API int redcoll_iscan(redcoll_comm *c, const void *sendbuf, void *recvbuf, size_t count,
                             redcoll_dtype dt, const redcoll_op *op, redcoll_request **req) {
  return enter_nb(c, &(coll_args){.coll = REDCOLL_COLL_SCAN, .sendbuf = sendbuf, .recvbuf = recvbuf,
                               .count = count, .dt = dt, .op = op}, req);
}

REDCOLL_API int redcoll_iexscan(redcoll_comm *c, const void *sendbuf, void *recvbuf, size_t count,
                               redcoll_dtype dt, const redcoll_op *op, redcoll_request **req) {
  return enter_nb(c, &(coll_args){.coll = REDCOLL_COLL_EXSCAN, .sendbuf = sendbuf,
                               .recvbuf = recvbuf, .count = count, .dt = dt, .op = op}, req);
}

REDCOLL_API int redcoll_iexscan_total(redcoll_comm *c, const void *sendbuf, void *recvbuf,
                                     void *total, size_t count, redcoll_dtype dt,
                                     const redcoll_op *op, redcoll_request **req) {
  return enter_nb(c, &(coll_args){.coll = REDCOLL_COLL_EXSCAN_TOTAL, .sendbuf = sendbuf,
                               .recvbuf = recvbuf, .count = count, .dt = dt, .op = op,
                               .total = total}, req);
}

REDCOLL_API int redcoll_ialltoall(redcoll_comm *c, const void *sendbuf, void *recvbuf, size_t count,
                                 redcoll_dtype dt, redcoll_request **req) {
  return enter_nb(c, &(coll_args){.coll = REDCOLL_COLL_ALLTOALL, .sendbuf = sendbuf,
                               .recvbuf = recvbuf, .count = count, .dt = dt}, req);
}

REDCOLL_API int redcoll_ialltoallv(redcoll_comm *c, const void *sendbuf, const size_t *sendcounts,
                                  const size_t *sdispls, void *recvbuf, const size_t *recvcounts,
                                  const size_t *rdispls, redcoll_dtype dt, redcoll_request **req) {
  return enter_nb(c, &(coll_args){.coll = REDCOLL_COLL_ALLTOALLV, .sendbuf = sendbuf,
                               .recvbuf = recvbuf, .counts = sendcounts, .displs = sdispls,
                               .rcounts = recvcounts, .rdispls = rdispls, .dt = dt}, req);
}

REDCOLL_API int redcoll_igatherv(redcoll_comm *c, const void *sendbuf, size_t sendcount,
                                void *recvbuf, const size_t *recvcounts, const size_t *displs,
                                redcoll_dtype dt, int root, redcoll_request **req) {
  return enter_nb(c, &(coll_args){.coll = REDCOLL_COLL_GATHERV, .sendbuf = sendbuf,
                               .recvbuf = recvbuf, .count = sendcount, .counts = recvcounts,
                               .displs = displs, .dt = dt, .root = root}, req);
}

REDCOLL_API int redcoll_iscatterv(redcoll_comm *c, const void *sendbuf, const size_t *sendcounts,
                                 const size_t *displs, void *recvbuf, size_t recvcount,
                                 redcoll_dtype dt, int root, redcoll_request **req) {
  return enter_nb(c, &(coll_args){.coll = REDCOLL_COLL_SCATTERV, .sendbuf = sendbuf,
                               .recvbuf = recvbuf, .count = recvcount, .counts = sendcounts,
                               .displs = displs, .dt = dt, .root = root}, req);
}

REDCOLL_API int redcoll_iallgatherv_displs(redcoll_comm *c, const void *sendbuf, size_t sendcount,
                                          void *recvbuf, const size_t *recvcounts,
                                          const size_t *displs, redcoll_dtype dt, redcoll_request **req) {
  return enter_nb(c, &(coll_args){.coll = REDCOLL_COLL_ALLGATHERV_DISPLS, .sendbuf = sendbuf,
                               .recvbuf = recvbuf, .count = sendcount, .counts = recvcounts,
                               .displs = displs, .dt = dt}, req);
}
