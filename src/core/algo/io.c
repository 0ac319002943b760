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
  if (k < 0 || (size_t)k >= n) return;
  if (call == NULL && c->calibrating) {
    snprintf(buf + k, n - (size_t)k, ": the cost model's self-calibration, run by the first "
                                     "collective that lets AUTO choose");
    return;
  }
  if (call == NULL) return;
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
    /* Every failing rank prints its line, an aborted one too (the rank
     * that aborted printed the first cause). */
    redcoll__log(0, "rank %d: %s failed in %s: %s (%s)%s",
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

/* The context's number of c's running collective.  create_group's
 * agreement (owns_channels 0) runs on its parent's group channel and
 * numbers its collectives from 0 each time, so agreements on overlapping
 * groups may meet there with the same number and other calls (their
 * calibrations differ in size): its exchanges go to the transport as
 * outside a collective (0), which transports do not check for tags that
 * conflict (redcoll_transport_tags_conflict). */
static uint64_t collective_of(const redcoll_comm *c) { return c->owns_channels ? c->seq : 0; }

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
  return exchange_on(c, REDCOLL__CH_COLL, collective_of(c), c->deadline_ns, dst, c->tag, sbuf,
                     slen, src, c->tag, rbuf, rlen);
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
    redcoll_transport_ctx ctx = {c->deadline_ns, collective_of(c),
                                 channel_of(c, REDCOLL__CH_COLL)};
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


/* ---- piped steps ---------------------------------------------------------------
 *
 * A step that receives a block and reduces it costs, done whole, the
 * transfer plus the reduction: alpha + m beta + m gamma.  Cut into k
 * segments of s bytes, with the exchange of segment j + 1 posted as soon
 * as segment j is in and before it is reduced, the two overlap: the step
 * takes
 *   alpha + s beta + (k - 1) max(alpha + s beta, s gamma) + s gamma
 * (the last segment shorter: its own s), about k alpha + max(m beta,
 * m gamma) for many segments.  That matters where the operator is slow (a
 * user's op, half precision on a CPU without conversions) or the network
 * fast.  Example: m = 16 MiB, 1 MiB segments, gamma = 4 beta (a slow
 * operator): 16 alpha + 1 MiB beta + 64 MiB beta against alpha + 80 MiB
 * beta whole.
 * Posting needs a version 4 transport (post and progress); elsewhere, and
 * on a nonblocking collective's fiber (whose exchanges are posted and
 * waited for one at a time), the segments go one after the other, so that
 * the messages are the same whoever runs them.  A direction is cut when it
 * holds at least two segments; the cuts depend on its length and the
 * segment the step is given only (the communicator's, or at linear's root
 * redcoll__root_segment's), which is the same on every rank. */

/* Send pieces of one step in flight at once. */
#define SEG_SENDS 4

/* One posted segment exchange, finished by the transport's done. */
typedef struct seg_op {
  redcoll_transport_op op; /* first: done gets its address */
  int status;
  int finished;
} seg_op;

static void seg_done(redcoll_transport_op *op, int status) {
  seg_op *so = (seg_op *)op;
  so->status = status;
  __atomic_store_n(&so->finished, 1, __ATOMIC_RELEASE);
}

/* Bytes per segment of a direction of len bytes (whole elements of es
 * bytes) in segments of at most segment bytes, or 0: not cut. */
static size_t seg_size(size_t segment, size_t len, size_t es) {
  size_t seg = segment / es * es;
  return seg == 0 || len / 2 < seg ? 0 : seg;
}

/* How many pieces a direction of len bytes goes in (seg 0: whole, one). */
static size_t seg_count(size_t len, size_t seg) { return seg == 0 ? 1 : (len + seg - 1) / seg; }

/* Piece j of a direction of len bytes cut into segments of seg bytes (0:
 * whole): its offset and length; 0 if there is no piece j. */
static int seg_piece(size_t len, size_t seg, size_t j, size_t *off, size_t *n) {
  size_t k = seg_count(len, seg);
  if (j >= k) return 0;
  if (seg == 0) {
    *off = 0;
    *n = len;
    return 1;
  }
  *off = j * seg;
  *n = j + 1 < k ? seg : len - j * seg;
  return 1;
}

/* Posts piece j of one direction (send: to peer, else from peer) on op. */
static int seg_post(redcoll_comm *c, seg_op *op, int send, int peer, char *buf, size_t len,
                    size_t seg, size_t j) {
  size_t off = 0, n = 0;
  (void)seg_piece(len, seg, j, &off, &n);
  redcoll_transport_ctx ctx = {c->deadline_ns, collective_of(c),
                               channel_of(c, REDCOLL__CH_COLL)};
  redcoll_transport_msg m = {redcoll__peer(c, peer), c->tag, buf + off, n};
  memset(op, 0, sizeof *op);
  op->op.done = seg_done;
  op->op.user = c;
  return c->ops->post(c->impl, &ctx, send ? &m : NULL, send ? NULL : &m, &op->op);
}

/* Drives the transport until op has finished; its status. */
static int seg_wait(redcoll_comm *c, seg_op *op) {
  while (!__atomic_load_n(&op->finished, __ATOMIC_ACQUIRE))
    (void)c->ops->progress(c->impl, UINT64_MAX); /* a broken transport finishes op */
  return op->status;
}

/* Reduces piece j of the received direction. */
static void seg_reduce(const redcoll__call *call, size_t j, char *rbuf, size_t rlen, size_t rseg,
                       char *out, const char *other, int recv_left) {
  size_t ro, rn;
  if (out == NULL || !seg_piece(rlen, rseg, j, &ro, &rn) || rn == 0) return;
  size_t count = rn / call->esize;
  if (recv_left) redcoll__reduce(call, out + ro, rbuf + ro, other + ro, count);
  else redcoll__reduce(call, out + ro, other + ro, rbuf + ro, count);
}

/* The send side of a posted step: pieces in flight in SEG_SENDS slots,
 * piece i in slot i % SEG_SENDS. */
typedef struct seg_sends {
  redcoll_comm *c;
  int dst;
  char *buf;
  size_t len, seg, n; /* n pieces */
  size_t posted, done; /* pieces posted; of them, waited for */
  seg_op slot[SEG_SENDS];
} seg_sends;

/* Posts the next pieces into free slots: all of them if block (waiting
 * for the oldest to finish), else as many as are free now.  REDCOLL_OK or
 * the first failure (of a post, or of a piece waited for). */
static int sends_top_up(seg_sends *ss, int block) {
  while (ss->posted < ss->n) {
    if (ss->posted - ss->done == SEG_SENDS) {
      seg_op *old = &ss->slot[ss->done % SEG_SENDS];
      if (!block && !__atomic_load_n(&old->finished, __ATOMIC_ACQUIRE)) return REDCOLL_OK;
      int rc = seg_wait(ss->c, old);
      ss->done++;
      if (rc != REDCOLL_OK) return rc;
    }
    int rc = seg_post(ss->c, &ss->slot[ss->posted % SEG_SENDS], 1, ss->dst, ss->buf, ss->len,
                      ss->seg, ss->posted);
    if (rc != REDCOLL_OK) return rc;
    ss->posted++;
  }
  return REDCOLL_OK;
}

/* Waits for every piece still out; the first failure among them. */
static int sends_finish(seg_sends *ss) {
  int first = REDCOLL_OK;
  for (; ss->done < ss->posted; ss->done++) {
    int rc = seg_wait(ss->c, &ss->slot[ss->done % SEG_SENDS]);
    if (rc != REDCOLL_OK && first == REDCOLL_OK) first = rc;
  }
  return first;
}

int redcoll__sendrecv_reduce(const redcoll__call *call, int dst, const void *sbuf, size_t slen,
                             int src, void *rbuf, size_t rlen, void *out, const void *other,
                             int recv_left) {
  return redcoll__sendrecv_reduce_seg(call, call->comm->segment, dst, sbuf, slen, src, rbuf, rlen,
                                      out, other, recv_left);
}

size_t redcoll__root_segment(const redcoll_comm *c) {
  return c->segment_set ? c->segment : c->info.segment;
}

int redcoll__sendrecv_reduce_seg(const redcoll__call *call, size_t segment, int dst,
                                 const void *sbuf, size_t slen, int src, void *rbuf, size_t rlen,
                                 void *out, const void *other, int recv_left) {
  redcoll_comm *c = call->comm;
  size_t es = call->esize;
  size_t sseg = dst >= 0 ? seg_size(segment, slen, es) : 0;
  size_t rseg = src >= 0 ? seg_size(segment, rlen, es) : 0;
  size_t ks = seg_count(slen, sseg), kr = seg_count(rlen, rseg), k = ks > kr ? ks : kr;
  int posts = c->ops->version >= 4 && c->ops->post != NULL && c->ops->progress != NULL &&
              (c->nb == NULL || redcoll__fiber_current() != &c->nb->fiber);
  if (k == 1 || !posts) {
    /* Whole, or the pieces one after the other. */
    for (size_t j = 0; j < k; j++) {
      size_t so = 0, sn = 0, ro = 0, rn = 0;
      int d = dst >= 0 && seg_piece(slen, sseg, j, &so, &sn) ? dst : -1;
      int r = src >= 0 && seg_piece(rlen, rseg, j, &ro, &rn) ? src : -1;
      int rc = redcoll__sendrecv(c, d, d >= 0 ? (const char *)sbuf + so : NULL, sn, r,
                                 r >= 0 ? (char *)rbuf + ro : NULL, rn);
      if (rc != REDCOLL_OK) return rc;
      seg_reduce(call, j, rbuf, rlen, rseg, out, other, recv_left);
    }
    return REDCOLL_OK;
  }
  /* The send pieces go SEG_SENDS at a time, each as its own op, so that
   * the sender keeps the line busy; the receive pieces one at a time (a
   * transport may refuse two receives from one peer on one channel at
   * once): piece j + 1 is posted as soon as piece j is in, before j is
   * reduced, so that the next transfer overlaps the reduction.  While it
   * waits for a receive, a rank posts the next send pieces as slots free
   * up (its peer may be waiting for them: with sends that finish only
   * when received, shared memory's, waiting for the receive alone would
   * deadlock). */
  seg_sends ss = {.c = c, .dst = dst, .buf = (char *)sbuf, .len = slen, .seg = sseg,
                  .n = dst >= 0 ? ks : 0};
  seg_op rop;
  size_t nr = src >= 0 ? kr : 0;
  int rc = sends_top_up(&ss, 0);
  if (rc != REDCOLL_OK) fail_io(c, rc, NULL, dst, -1);
  for (size_t j = 0; rc == REDCOLL_OK && j < nr; j++) {
    if (j == 0 && (rc = seg_post(c, &rop, 0, src, rbuf, rlen, rseg, 0)) != REDCOLL_OK) {
      fail_io(c, rc, NULL, -1, src);
      break;
    }
    while (rc == REDCOLL_OK && !__atomic_load_n(&rop.finished, __ATOMIC_ACQUIRE)) {
      (void)c->ops->progress(c->impl, UINT64_MAX);
      rc = sends_top_up(&ss, 0);
    }
    if (rc != REDCOLL_OK) {
      fail_io(c, rc, NULL, dst, -1); /* cancels the receive too */
      (void)seg_wait(c, &rop);
      break;
    }
    if ((rc = rop.status) != REDCOLL_OK) {
      fail_io(c, rc, NULL, -1, src);
      break;
    }
    if (j + 1 < nr && (rc = seg_post(c, &rop, 0, src, rbuf, rlen, rseg, j + 1)) != REDCOLL_OK) {
      fail_io(c, rc, NULL, -1, src);
      break;
    }
    seg_reduce(call, j, rbuf, rlen, rseg, out, other, recv_left);
  }
  /* The rest of the sends, then the ones still out. */
  if (rc == REDCOLL_OK && (rc = sends_top_up(&ss, 1)) != REDCOLL_OK) fail_io(c, rc, NULL, dst, -1);
  int st = sends_finish(&ss);
  if (st != REDCOLL_OK && rc == REDCOLL_OK) rc = fail_io(c, st, NULL, dst, -1);
  return rc;
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
