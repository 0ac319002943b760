/* The communicator: creation from a transport vtable, settings, scratch
 * memory, and the point-to-point and reduction helpers every algorithm goes
 * through (they stamp the running collective's tag and break the
 * communicator on the first error). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "env.h"
#include "internal.h"

/* The members the struct's version requires. */
static int ops_valid(const redcoll_transport_ops *ops) {
  if (ops == NULL || ops->destroy == NULL) return 0;
  if (ops->version == 1 || ops->version == 2)
    return ops->send != NULL && ops->recv != NULL && ops->sendrecv != NULL;
  return ops->version == 3 && ops->info != NULL && ops->exchange != NULL;
}

/* Asks a version 3 transport about itself; checks the name. */
static int ask_info(redcoll_comm *c) {
  if (c->ops->version < 3) return REDCOLL_OK;
  int rc = c->ops->info(c->impl, &c->info);
  if (rc != REDCOLL_OK) return rc;
  if (memchr(c->info.name, '\0', sizeof c->info.name) == NULL) {
    redcoll__log(0, "rank %d: the transport's name is not a string of at most 15 characters",
                 c->rank);
    return REDCOLL_EINVAL;
  }
  redcoll__comm_set_ranks_per_cpu_detected(c, c->info.ranks_per_cpu);
  return REDCOLL_OK;
}

/* REDCOLL_ALGO_<COLL>=name forces an algorithm; an unknown or unsupported
 * name is an error, never a silent default. */
static int algos_from_env(redcoll_comm *c) {
  for (int coll = 0; coll < REDCOLL_COLL_COUNT; coll++) {
    char var[64] = "REDCOLL_ALGO_";
    const char *name = redcoll_coll_name((redcoll_coll)coll);
    size_t n = strlen(var);
    for (size_t i = 0; name[i] != '\0' && n + 1 < sizeof var; i++)
      var[n++] = (char)toupper((unsigned char)name[i]);
    var[n] = '\0';
    const char *val = redcoll__env(var);
    if (val == NULL) continue;
    redcoll_algo a;
    if (redcoll_algo_parse(val, &a) != REDCOLL_OK || !redcoll_algo_supported((redcoll_coll)coll, a)) {
      redcoll__log(0, "rank %d: %s=%s names no %s algorithm", c->rank, var, val, name);
      return REDCOLL_EINVAL;
    }
    c->algo[coll] = a;
  }
  return REDCOLL_OK;
}

/* REDCOLL_RESULTS=identical|fast; anything else is an error. */
static int results_from_env(redcoll_comm *c) {
  static const char *const words[] = {"identical", "fast", NULL};
  int w;
  int rc = redcoll__env_word("REDCOLL_RESULTS", words, &w);
  if (rc == REDCOLL__ENV_UNSET) return REDCOLL_OK;
  if (rc != REDCOLL_OK) {
    redcoll__log(0, "rank %d: REDCOLL_RESULTS=%s: expected identical or fast", c->rank,
                 redcoll__env("REDCOLL_RESULTS"));
    return REDCOLL_EINVAL;
  }
  if (w == 1) c->results = REDCOLL_RESULTS_FAST;
  return REDCOLL_OK;
}

/* On failure impl stays the caller's: ops->destroy is called only by
 * redcoll_comm_destroy of a communicator this function returned. */
REDCOLL_API int redcoll_comm_create(const redcoll_transport_ops *ops, void *impl, int rank, int size,
                                    redcoll_comm **out) {
  if (out == NULL) return REDCOLL_EINVAL;
  *out = NULL;
  if (!ops_valid(ops) || size < 1 || rank < 0 || rank >= size) return REDCOLL_EINVAL;
  redcoll_comm *c = calloc(1, sizeof *c);
  if (c == NULL) return REDCOLL_ENOMEM;
  c->ops = ops;
  c->impl = impl;
  c->rank = rank;
  c->size = size;
  c->threshold = REDCOLL_DEFAULT_THRESHOLD;
  c->last_algo = REDCOLL_ALGO_AUTO;
  c->results = REDCOLL_RESULTS_IDENTICAL;
  c->deadline_ns = UINT64_MAX;
  int rc = ask_info(c);
  if (rc == REDCOLL_OK) rc = algos_from_env(c);
  if (rc == REDCOLL_OK) rc = results_from_env(c);
  if (rc != REDCOLL_OK) {
    free(c);
    return rc;
  }
  *out = c;
  return REDCOLL_OK;
}

REDCOLL_API int redcoll_comm_set_results(redcoll_comm *c, redcoll_results mode) {
  if (c == NULL || (mode != REDCOLL_RESULTS_IDENTICAL && mode != REDCOLL_RESULTS_FAST))
    return REDCOLL_EINVAL;
  c->results = mode;
  return REDCOLL_OK;
}

REDCOLL_API redcoll_results redcoll_comm_get_results(const redcoll_comm *c) {
  return c != NULL ? c->results : REDCOLL_RESULTS_IDENTICAL;
}

void *redcoll__comm_transport(const redcoll_comm *c, const redcoll_transport_ops *ops) {
  return c != NULL && c->ops == ops ? c->impl : NULL;
}

REDCOLL_API int redcoll_comm_rank(const redcoll_comm *c) { return c ? c->rank : REDCOLL_EINVAL; }
REDCOLL_API int redcoll_comm_size(const redcoll_comm *c) { return c ? c->size : REDCOLL_EINVAL; }
REDCOLL_API int redcoll_comm_error(const redcoll_comm *c) { return c ? c->error : REDCOLL_EINVAL; }

REDCOLL_API void redcoll_comm_destroy(redcoll_comm *c) {
  if (c == NULL) return;
  c->ops->destroy(c->impl);
  free(c->scratch[0]);
  free(c->scratch[1]);
  free(c);
}

REDCOLL_API int redcoll_comm_set_algorithm(redcoll_comm *c, redcoll_coll coll, redcoll_algo algo) {
  if (c == NULL || (unsigned)coll >= REDCOLL_COLL_COUNT || (unsigned)algo >= REDCOLL_ALGO_COUNT)
    return REDCOLL_EINVAL;
  if (!redcoll_algo_supported(coll, algo)) return REDCOLL_ENOTSUP;
  c->algo[coll] = algo;
  return REDCOLL_OK;
}

REDCOLL_API redcoll_algo redcoll_comm_get_algorithm(const redcoll_comm *c, redcoll_coll coll) {
  if (c == NULL || (unsigned)coll >= REDCOLL_COLL_COUNT) return REDCOLL_ALGO_AUTO;
  return c->algo[coll];
}

REDCOLL_API redcoll_algo redcoll_comm_last_algorithm(const redcoll_comm *c) {
  return c ? c->last_algo : REDCOLL_ALGO_AUTO;
}

REDCOLL_API int redcoll_comm_set_threshold(redcoll_comm *c, size_t bytes) {
  if (c == NULL || bytes == 0) return REDCOLL_EINVAL;
  c->threshold = bytes;
  return REDCOLL_OK;
}

REDCOLL_API size_t redcoll_comm_get_threshold(const redcoll_comm *c) {
  return c ? c->threshold : 0;
}

void *redcoll__scratch(redcoll_comm *c, int which, size_t bytes) {
  if (bytes == 0) bytes = 1;
  if (c->scratch_cap[which] < bytes) {
    /* Grow geometrically so a sequence of growing calls allocates rarely. */
    size_t cap = c->scratch_cap[which] * 2;
    if (cap < bytes) cap = bytes;
    void *p = malloc(cap);
    if (p == NULL) {
      p = malloc(bytes);
      cap = bytes;
      if (p == NULL) return NULL;
    }
    free(c->scratch[which]);
    c->scratch[which] = p;
    c->scratch_cap[which] = cap;
  }
  return c->scratch[which];
}

REDCOLL_API int redcoll_comm_set_timeout(redcoll_comm *c, uint64_t ms) {
  if (c == NULL) return REDCOLL_EINVAL;
  if (c->ops->version == 2 && c->ops->set_timeout != NULL) {
    /* A version 2 transport measures the deadline itself. */
    int rc = c->ops->set_timeout(c->impl, ms);
    if (rc != REDCOLL_OK) return rc;
  } else if (c->ops->version < 3) {
    return REDCOLL_ENOTSUP;
  }
  c->timeout_ms = ms;
  return REDCOLL_OK;
}

static uint64_t clock_ns(const redcoll_comm *c) {
  if (c->ops->now != NULL) return c->ops->now(c->impl);
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void redcoll__comm_start_deadline(redcoll_comm *c) {
  c->deadline_ns = UINT64_MAX;
  if (c->ops->version < 3 || c->timeout_ms == 0) return;
  uint64_t now = clock_ns(c), span = c->timeout_ms;
  span = span > (UINT64_MAX - now) / 1000000u ? UINT64_MAX - now : span * 1000000u;
  c->deadline_ns = now + span;
}

REDCOLL_API uint64_t redcoll_comm_get_timeout(const redcoll_comm *c) {
  return c ? c->timeout_ms : 0;
}

/* The running collective as this rank sees it, for error logs: what the tag
 * folds in, so that two ranks' lines can be compared. */
static void describe(const redcoll_comm *c, char *buf, size_t n) {
  static const char *const op_names[REDCOLL__OP_COUNT] = {
      "sum", "prod", "min", "max", "band", "bor", "bxor", "land", "lor", "lxor",
  };
  int k = snprintf(buf, n, "collective #%llu (tag 0x%016llx)",
                   (unsigned long long)(c->tag >> 40), (unsigned long long)c->tag);
  const struct redcoll__call *call = c->cur;
  if (call == NULL || k < 0 || (size_t)k >= n) return;
  const char *op = call->op == NULL                      ? "none"
                   : call->op->id == REDCOLL__OP_USER    ? "user"
                   : (unsigned)call->op->id < REDCOLL__OP_COUNT ? op_names[call->op->id]
                                                               : "?";
  const char *dt = redcoll_dtype_name(call->dtype);
  snprintf(buf + k, n - (size_t)k, ": %s count %zu dtype %s op %s root %d",
           redcoll_coll_name(call->coll), call->count, dt ? dt : "?", op, call->root);
}

/* Records the first error and tells the peers, so that nobody waits for a
 * rank that has given up.  An EABORTED came from a peer, which has told
 * everyone already. */
static int fail_with(redcoll_comm *c, int status, const char *what) {
  if (c->error == REDCOLL_OK) {
    char view[192], deadline[64] = "";
    c->error = status;
    describe(c, view, sizeof view);
    if (status == REDCOLL_ETIMEDOUT && c->timeout_ms != 0)
      snprintf(deadline, sizeof deadline, ", with the collective's deadline of %llu ms",
               (unsigned long long)c->timeout_ms);
    redcoll__log(status == REDCOLL_EABORTED ? 2 : 0, "rank %d: %s failed in %s: %s (%s)%s",
                 c->rank, view, what, redcoll_status_name(status), redcoll_strerror(status),
                 deadline);
    if (status != REDCOLL_EABORTED && c->ops->abort != NULL) c->ops->abort(c->impl, status);
  }
  return status;
}

int redcoll__fail(redcoll_comm *c, int status) { return fail_with(c, status, "the algorithm"); }

REDCOLL_API int redcoll_comm_abort(redcoll_comm *c) {
  if (c == NULL) return REDCOLL_EINVAL;
  if (c->error != REDCOLL_OK) return REDCOLL_OK; /* broken: the peers know */
  c->error = REDCOLL_EABORTED;
  redcoll__log(2, "rank %d: communicator aborted by the application", c->rank);
  if (c->ops->abort == NULL) return REDCOLL_ENOTSUP;
  c->ops->abort(c->impl, REDCOLL_EABORTED);
  return REDCOLL_OK;
}

/* The failed call, named by the peer(s) it was waiting for. */
static int fail_io(redcoll_comm *c, int status, int dst, int src) {
  char what[64];
  if (dst >= 0 && src >= 0)
    snprintf(what, sizeof what, "sendrecv (send to rank %d, receive from rank %d)", dst, src);
  else if (dst >= 0)
    snprintf(what, sizeof what, "send to rank %d", dst);
  else
    snprintf(what, sizeof what, "receive from rank %d", src);
  return fail_with(c, status, what);
}

/* One exchange with the running collective's tag and deadline: through a
 * version 3 transport's exchange member, or an earlier version's send,
 * recv or sendrecv.  dst or src < 0: that side is absent. */
static int exchange(redcoll_comm *c, int dst, const void *sbuf, size_t slen, int src, void *rbuf,
                    size_t rlen) {
  const redcoll_transport_ops *o = c->ops;
  if (o->version >= 3) {
    redcoll_transport_ctx ctx = {c->deadline_ns, c->seq, 0, 0};
    redcoll_transport_msg s = {dst, c->tag, (void *)sbuf, slen}, r = {src, c->tag, rbuf, rlen};
    return o->exchange(c->impl, &ctx, dst >= 0 ? &s : NULL, src >= 0 ? &r : NULL);
  }
  if (src < 0) return o->send(c->impl, dst, c->tag, sbuf, slen);
  if (dst < 0) return o->recv(c->impl, src, c->tag, rbuf, rlen);
  return o->sendrecv(c->impl, dst, c->tag, sbuf, slen, src, c->tag, rbuf, rlen);
}

int redcoll__send(redcoll_comm *c, int dst, const void *buf, size_t len) {
  int rc = exchange(c, dst, buf, len, -1, NULL, 0);
  return rc == REDCOLL_OK ? rc : fail_io(c, rc, dst, -1);
}

int redcoll__recv(redcoll_comm *c, int src, void *buf, size_t len) {
  int rc = exchange(c, -1, NULL, 0, src, buf, len);
  return rc == REDCOLL_OK ? rc : fail_io(c, rc, -1, src);
}

int redcoll__sendrecv(redcoll_comm *c, int dst, const void *sbuf, size_t slen, int src, void *rbuf,
                      size_t rlen) {
  int rc = exchange(c, dst, sbuf, slen, src, rbuf, rlen);
  return rc == REDCOLL_OK ? rc : fail_io(c, rc, dst, src);
}

void redcoll__reduce(const redcoll__call *call, void *out, const void *left, const void *right,
                     size_t count) {
  if (count == 0) return;
  redcoll__kernel_apply(call->dtype, call->op, out, left, right, count);
  redcoll_comm *c = call->comm;
  if (c->ops->charge != NULL) c->ops->charge(c->impl, count * call->esize);
}

static uint64_t mix64(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

uint64_t redcoll__make_tag(uint64_t seq, redcoll_coll coll, uint64_t count, redcoll_dtype dt,
                           const redcoll_op *op, int root) {
  uint64_t h = mix64(0x726564636f6c6cULL ^ (uint64_t)coll);
  h = mix64(h ^ count);
  h = mix64(h ^ (uint64_t)dt);
  if (op != NULL) {
    h = mix64(h ^ (uint64_t)op->id);
    h = mix64(h ^ ((uint64_t)op->elem_size << 1 | (uint64_t)(op->commutative != 0)));
  }
  h = mix64(h ^ (uint64_t)(int64_t)root);
  return (seq & 0xffffffULL) << 40 | (h & 0xffffffffffULL);
}
