/*
 * What algorithms send, receive and reduce with: the only way from an
 * algorithm to the transport vtable.  Every call carries the running
 * collective's tag and deadline; the first failure breaks the communicator,
 * is logged with the whole call and the peer it waited for, and aborts the
 * peers.  Also the scratch buffers algorithms borrow from the communicator.
 */
#include <stdio.h>
#include <stdlib.h>

#include "internal.h"

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

/* The running collective as this rank sees it, for error logs: what the tag
 * folds in, so that two ranks' lines can be compared. */
static void describe(const redcoll_comm *c, char *buf, size_t n) {
  static const char *const op_names[REDCOLL__OP_COUNT] = {
      "sum", "prod", "min", "max", "band", "bor", "bxor", "land", "lor", "lxor", "minloc", "maxloc",
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

void redcoll__comm_tell_peers(redcoll_comm *c, int status) {
  if (c->ep->caps & REDCOLL_TRANSPORT_CAP_CHANNELS) {
    if (c->owns_channels) c->ops->cancel(c->impl, c->channel, status);
  } else if (c->ops->abort != NULL) {
    c->ops->abort(c->impl, status);
  }
}

/* Records the first error and tells the peers, so that nobody waits for a
 * rank that has given up.  An EABORTED came from a peer, which has told
 * everyone already. */
static int fail_in(redcoll_comm *c, int status, const char *call, const char *what) {
  int ok = REDCOLL_OK;
  if (__atomic_compare_exchange_n(&c->error, &ok, status, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
    char view[192], deadline[64] = "";
    if (call != NULL) snprintf(view, sizeof view, "%s", call);
    else describe(c, view, sizeof view);
    if (status == REDCOLL_ETIMEDOUT && c->timeout_ms != 0)
      snprintf(deadline, sizeof deadline, ", with the collective's deadline of %llu ms",
               (unsigned long long)c->timeout_ms);
    redcoll__log(status == REDCOLL_EABORTED ? 2 : 0, "rank %d: %s failed in %s: %s (%s)%s",
                 c->rank, view, what, redcoll_status_name(status), redcoll_strerror(status),
                 deadline);
    if (status != REDCOLL_EABORTED) redcoll__comm_tell_peers(c, status);
  }
  return status;
}

static int fail_with(redcoll_comm *c, int status, const char *what) {
  return fail_in(c, status, NULL, what);
}

int redcoll__fail(redcoll_comm *c, int status) { return fail_with(c, status, "the algorithm"); }

/* The failed call, named by the peer(s) it was waiting for. */
static int fail_io(redcoll_comm *c, int status, const char *call, int dst, int src) {
  char what[64];
  if (dst >= 0 && src >= 0)
    snprintf(what, sizeof what, "sendrecv (send to rank %d, receive from rank %d)", dst, src);
  else if (dst >= 0)
    snprintf(what, sizeof what, "send to rank %d", dst);
  else
    snprintf(what, sizeof what, "receive from rank %d", src);
  return fail_in(c, status, call, what);
}

/* On c's fiber (a nonblocking collective, api/request.c): posts the
 * exchange, yields until the transport has finished it and sets *rc to
 * its status; 1.  Elsewhere 0: the caller exchanges in place. */
static int posted(redcoll_comm *c, const redcoll_transport_ctx *ctx,
                  const redcoll_transport_msg *send, const redcoll_transport_msg *recv, int *rc) {
  redcoll__nb *nb = c->nb;
  if (nb == NULL || redcoll__fiber_current() != &nb->fiber) return 0;
  memset(&nb->op, 0, sizeof nb->op);
  nb->op.done = nb->op_done;
  nb->op.user = c->parent != NULL ? c->parent : c; /* a view's is its parent's */
  __atomic_store_n(&nb->handoff, 0, __ATOMIC_RELEASE);
  *rc = c->ops->post(c->impl, ctx, send, recv, &nb->op);
  if (*rc != REDCOLL_OK) return 1;
  redcoll__fiber_yield(&nb->fiber);
  nb->work = 0;
  *rc = nb->op_status;
  return 1;
}

/* The channel of sub-channel sub of c (the communicator's one on a
 * transport without channels). */
static uint64_t channel_of(const redcoll_comm *c, unsigned sub) {
  return c->channel + (c->ep->caps & REDCOLL_TRANSPORT_CAP_CHANNELS ? sub : 0);
}

/* One exchange with the running collective's tag and deadline: through a
 * version 3 transport's exchange member, or an earlier version's send,
 * recv or sendrecv.  dst or src < 0: that side is absent. */
static int exchange_on(redcoll_comm *c, unsigned sub, uint64_t collective, uint64_t deadline_ns,
                       int dst, uint64_t stag, const void *sbuf, size_t slen, int src,
                       uint64_t rtag, void *rbuf, size_t rlen) {
  const redcoll_transport_ops *o = c->ops;
  if (dst >= 0) dst = redcoll__peer(c, dst);
  if (src >= 0) src = redcoll__peer(c, src);
  if (o->version >= 3) {
    redcoll_transport_ctx ctx = {deadline_ns, collective, channel_of(c, sub)};
    redcoll_transport_msg s = {dst, stag, (void *)sbuf, slen}, r = {src, rtag, rbuf, rlen};
    const redcoll_transport_msg *sp = dst >= 0 ? &s : NULL, *rp = src >= 0 ? &r : NULL;
    int rc;
    /* A nonblocking collective posts the exchange and yields. */
    if (posted(c, &ctx, sp, rp, &rc)) return rc;
    return o->exchange(c->impl, &ctx, sp, rp);
  }
  if (src < 0) return o->send(c->impl, dst, stag, sbuf, slen);
  if (dst < 0) return o->recv(c->impl, src, rtag, rbuf, rlen);
  return o->sendrecv(c->impl, dst, stag, sbuf, slen, src, rtag, rbuf, rlen);
}

/* One exchange of the running collective. */
static int exchange(redcoll_comm *c, int dst, const void *sbuf, size_t slen, int src, void *rbuf,
                    size_t rlen) {
  return exchange_on(c, REDCOLL__CH_COLL, c->seq, c->deadline_ns, dst, c->tag, sbuf, slen, src,
                     c->tag, rbuf, rlen);
}

int redcoll__send(redcoll_comm *c, int dst, const void *buf, size_t len) {
  int rc = exchange(c, dst, buf, len, -1, NULL, 0);
  return rc == REDCOLL_OK ? rc : fail_io(c, rc, NULL, dst, -1);
}

int redcoll__recv(redcoll_comm *c, int src, void *buf, size_t len) {
  int rc = exchange(c, -1, NULL, 0, src, buf, len);
  return rc == REDCOLL_OK ? rc : fail_io(c, rc, NULL, -1, src);
}

int redcoll__sendrecv(redcoll_comm *c, int dst, const void *sbuf, size_t slen, int src, void *rbuf,
                      size_t rlen) {
  if (dst < 0 && src < 0) return REDCOLL_OK;
  int rc = exchange(c, dst, sbuf, slen, src, rbuf, rlen);
  return rc == REDCOLL_OK ? rc : fail_io(c, rc, NULL, dst, src);
}

/* ---- local work in slices ----------------------------------------------------
 *
 * On a nonblocking collective's fiber, whoever resumed it (a callback of
 * the program's event loop, a wait, the progress thread) runs everything
 * up to the next exchange, and a reduction or copy of megabytes would hold
 * that thread for milliseconds.  So there the work goes in slices: once
 * nb->slice bytes have been reduced or copied since the fiber last
 * yielded, it posts a yield (an exchange with no send and no receive,
 * which a transport with REDCOLL_TRANSPORT_CAP_YIELD finishes at its next
 * turn) and yields, and the rest goes on when the driver comes back.
 * Blocking collectives, and transports without the bit, do each piece of
 * work in one go.  An elementwise reduction cut at element boundaries
 * gives the same bits. */

/* c's fiber, if the running code is on it and may yield between slices. */
static redcoll__nb *slicing(const redcoll_comm *c) {
  redcoll__nb *nb = c->nb;
  if (nb == NULL || nb->slice == 0 || redcoll__fiber_current() != &nb->fiber) return NULL;
  return c->ep->caps & REDCOLL_TRANSPORT_CAP_YIELD ? nb : NULL;
}

/* How many of n units of `unit` bytes to do now: what is left of the slice
 * (at least one), after a yield if nothing is left.  A yield that fails
 * (the communicator was cancelled) is not waited for: the next exchange
 * reports the failure. */
static size_t next_slice(redcoll_comm *c, redcoll__nb *nb, size_t n, size_t unit) {
  if (nb->work >= nb->slice) {
    redcoll_transport_ctx ctx = {c->deadline_ns, c->seq, channel_of(c, REDCOLL__CH_COLL)};
    int rc;
    (void)posted(c, &ctx, NULL, NULL, &rc);
    nb->work = 0;
  }
  size_t k = (nb->slice - nb->work) / unit;
  if (k == 0) k = 1;
  if (k > n) k = n;
  nb->work += k * unit;
  return k;
}

void redcoll__reduce(const redcoll__call *call, void *out, const void *left, const void *right,
                     size_t count) {
  if (count == 0) return;
  redcoll_comm *c = call->comm;
  redcoll__nb *nb = slicing(c);
  size_t es = call->esize;
  if (nb == NULL) {
    redcoll__kernel_apply(call->dtype, call->op, out, left, right, count);
  } else {
    char *o = out;
    const char *a = left, *b = right;
    for (size_t n = count, k; n > 0; n -= k, o += k * es, a += k * es, b += k * es) {
      k = next_slice(c, nb, n, es);
      redcoll__kernel_apply(call->dtype, call->op, o, a, b, k);
    }
  }
  if (c->ops->charge != NULL) c->ops->charge(c->impl, count * es);
}

void redcoll__copy(redcoll_comm *c, void *dst, const void *src, size_t bytes) {
  redcoll__nb *nb = bytes > 0 ? slicing(c) : NULL;
  if (nb == NULL) {
    if (bytes > 0) memcpy(dst, src, bytes);
    return;
  }
  char *d = dst;
  const char *s = src;
  for (size_t k; bytes > 0; bytes -= k, d += k, s += k) {
    k = next_slice(c, nb, bytes, 1);
    memcpy(d, s, k);
  }
}


/* Point-to-point on the communicator's own channel (the collectives' one
 * on a transport without channels), with the user's tags, the deadline
 * and the failure handling of a collective's call. */
int redcoll__p2p(redcoll_comm *c, uint64_t deadline_ns, int dst, uint64_t stag, const void *sbuf,
                 size_t slen, int src, uint64_t rtag, void *rbuf, size_t rlen) {
  /* Its own deadline: a nonblocking collective of c may be between two
   * steps on another thread, with its deadline in c. */
  int rc = exchange_on(c, REDCOLL__CH_P2P, 0, deadline_ns, dst, stag, sbuf, slen, src, rtag, rbuf,
                       rlen);
  if (rc == REDCOLL_OK) return rc;
  return fail_io(c, rc, "point-to-point", dst, src);
}
