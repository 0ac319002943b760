/*
 * The simulator's messages from post to completion: posting the send and
 * receive halves of an op, delivering a message to its receive, the end of
 * a half and of an op (completion or cancellation), the next event when no
 * rank can run (a deadline expires, a rank in progress is released), the
 * injected fault that kills a rank, the mismatch between blocked ranks in
 * different collectives, and the deadlock report.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mock_int.h"

static double max_d(double a, double b) { return a > b ? a : b; }
static uint64_t max_u(uint64_t a, uint64_t b) { return a > b ? a : b; }

/* r is ready to run (a blocked r no longer counts as blocked). */
void redcoll__mock_make_runnable(mock_run *run, mock_rank *r) {
  if (r->state == ST_BLOCKED) run->nblocked--;
  r->state = ST_READY;
  run->runnable[run->nrunnable++] = r->id;
}

void redcoll__mock_op_link(mock_op *op) {
  mock_rank *r = op->r;
  op->seq = r->nops++;
  op->next = NULL;
  op->prev = r->ops_tail;
  if (r->ops_tail != NULL) r->ops_tail->next = op;
  else r->ops = op;
  r->ops_tail = op;
}

void redcoll__mock_op_unlink(mock_op *op) {
  mock_rank *r = op->r;
  if (op->prev != NULL) op->prev->next = op->next;
  else r->ops = op->next;
  if (op->next != NULL) op->next->prev = op->prev;
  else r->ops_tail = op->prev;
  op->prev = op->next = NULL;
}

/* op has ended: a blocking op's rank, blocked in exchange, can run on; a
 * posted op waits for its rank's progress (released by next_event). */
static void op_finished(mock_run *run, mock_op *op) {
  op->finished = 1;
  mock_rank *r = op->r;
  if (op->top == NULL && r->state == ST_BLOCKED && !r->in_progress)
    redcoll__mock_make_runnable(run, r);
}

/* Ends op with err: whatever half is still open is withdrawn (its
 * rendezvous message leaves the queue, its receive is unposted). */
/* Drops the untimed transfers of op; the op at their other end loses its
 * count (its half stays open: whatever ended op ends it too, or the
 * deadlock report names it). */
static void drop_xfers(mock_run *run, mock_op *op) {
  for (mock_xfer **at = &run->xfers; *at != NULL && op->deferred > 0;) {
    mock_xfer *x = *at;
    if (x->sop != op && x->rop != op) {
      at = &x->next;
      continue;
    }
    *at = x->next;
    x->sop->deferred--;
    x->rop->deferred--;
    free(x);
  }
}

void redcoll__mock_cancel_op(mock_run *run, mock_op *op, int err) {
  if (op->finished) return;
  if (op->deferred > 0) drop_xfers(run, op);
  if (op->send_active) {
    if (!op->rv.eager) redcoll__mock_pair_remove(run, &op->rv);
    op->send_active = 0;
  }
  op->recv_active = 0;
  op->pend = 0;
  if (op->err == REDCOLL_OK) {
    op->err = err;
    op->cend = op->post_t; /* a failed call leaves the clock alone */
    op->crend = op->post_r;
  }
  op_finished(run, op);
}

void redcoll__mock_cancel_where(mock_run *run, int (*keep)(const mock_op *op, const void *arg),
                                const void *arg, int err) {
  for (int i = 0; i < run->p; i++)
    for (mock_op *op = run->ranks[i].ops, *next; op != NULL; op = next) {
      next = op->next;
      if (!op->finished && keep(op, arg)) redcoll__mock_cancel_op(run, op, err);
    }
}

/* One half of op finished at (end, rend) or failed with err. */
static void half_done(mock_run *run, mock_op *op, int is_send, int err, double end, uint64_t rend) {
  if (is_send) op->send_active = 0;
  else op->recv_active = 0;
  op->pend--;
  if (err != REDCOLL_OK) {
    redcoll__mock_cancel_op(run, op, err);
    return;
  }
  op->cend = max_d(op->cend, end);
  op->crend = max_u(op->crend, rend);
  if (op->pend == 0) op_finished(run, op);
}

static const char *peer_note(const mock_run *run, int peer) {
  if (run->ranks[peer].state == ST_DONE) return " (that rank has returned)";
  if (run->ranks[peer].dead) return " (that rank is dead)";
  return "";
}

/* What op still waits for, e.g. "send to 3 tag ... 8 bytes". */
static void describe_wait(const mock_run *run, const mock_op *op, char *out, size_t n) {
  char s[128] = "", q[128] = "";
  if (op->send_active)
    snprintf(s, sizeof s, "send to %d tag 0x%016" PRIx64 " %zu bytes%s", op->sdst, op->stag,
             op->slen, peer_note(run, op->sdst));
  if (op->recv_active)
    snprintf(q, sizeof q, "recv from %d tag 0x%016" PRIx64 " %zu bytes%s", op->rsrc, op->rtag,
             op->rlen, peer_note(run, op->rsrc));
  snprintf(out, n, "%s%s%s%s", op->top != NULL ? "posted " : "", s, (s[0] && q[0]) ? "; " : "",
           q);
  if (op->chan != 0) {
    size_t k = strlen(out);
    snprintf(out + k, n - k, " on channel %" PRIu64, op->chan);
  }
}

/* What every open op of r waits for, " | " between ops. */
static void describe_rank(const mock_run *run, const mock_rank *r, char *out, size_t n) {
  out[0] = '\0';
  for (const mock_op *op = r->ops; op != NULL; op = op->next) {
    if (op->finished) continue;
    size_t k = strlen(out);
    if (k + 4 >= n) break;
    if (k > 0) {
      memcpy(out + k, " | ", 4);
      k += 3;
    }
    describe_wait(run, op, out + k, n - k);
  }
}

/* op passes its deadline at virtual time `at` while it waits for rank
 * peer: it fails with REDCOLL_ETIMEDOUT, and its end is `at` (a blocking
 * op's rank's clock stops there). */
static void time_out(mock_run *run, mock_op *op, double at, int peer) {
  char w[288];
  describe_wait(run, op, w, sizeof w);
  mock_rank *r = op->r;
  redcoll__mock_report_add(run, "rank %d: timed out at %.17g waiting for rank %d (%s)", r->id, at,
                           peer, w);
  redcoll__mock_cancel_op(run, op, REDCOLL_ETIMEDOUT);
  if (op->top == NULL) r->clock = at;
  else op->cend = at;
}

/* Nothing can move.  The earliest of these happens:
 * - virtual time runs on to the earliest deadline among the open ops of
 *   blocked ranks (an op posted after its deadline expires at once), and
 *   that op times out;
 * - the rank blocked in progress whose next event comes first (the end of
 *   one of its finished posted ops, or its bound) is released at that time.
 * Deadlines first on a tie, then the lowest rank, its first op.  0 if
 * there is neither. */
int redcoll__mock_next_event(mock_run *run) {
  mock_op *best = NULL;
  double bt = INFINITY;
  mock_rank *rel = NULL;
  double rt = INFINITY;
  for (int i = 0; i < run->p; i++) {
    mock_rank *r = &run->ranks[i];
    if (r->state != ST_BLOCKED) continue;
    double ev = r->in_progress ? r->wake : INFINITY;
    for (mock_op *op = r->ops; op != NULL; op = op->next) {
      if (op->finished) {
        if (op->top != NULL && op->cend < ev) ev = op->cend;
        continue;
      }
      if (!isfinite(op->deadline)) continue;
      double t = max_d(op->deadline, op->post_t);
      if (t < bt) {
        bt = t;
        best = op;
      }
    }
    if (r->in_progress && ev < rt) {
      rt = ev;
      rel = r;
    }
  }
  if (best != NULL && bt <= rt) {
    time_out(run, best, bt, best->recv_active ? best->rsrc : best->sdst);
    return 1;
  }
  if (rel == NULL) return 0;
  rel->release = rt;
  redcoll__mock_make_runnable(run, rel);
  return 1;
}

/* Whether op has an open half with this tag on this channel. */
static int waits_in(const mock_op *op, uint64_t tag, uint64_t chan) {
  return !op->finished && op->chan == chan &&
         ((op->send_active && op->stag == tag) || (op->recv_active && op->rtag == tag));
}

/* The tag of op if it is open in the tag of the collective it belongs to
 * (not a raw transport call), else 0. */
static uint64_t coll_tag(const mock_op *op) {
  if (!op->in_coll) return 0;
  return waits_in(op, op->ctag, op->chan) ? op->ctag : 0;
}

/* An open collective op of blocked rank q on chan, and whether one of them
 * waits in tag. */
static mock_op *coll_op_on(const mock_rank *q, uint64_t chan, uint64_t tag, int *has_tag) {
  mock_op *first = NULL;
  *has_tag = 0;
  if (q->state != ST_BLOCKED) return NULL;
  for (mock_op *op = q->ops; op != NULL; op = op->next) {
    if (op->chan != chan || coll_tag(op) == 0) continue;
    if (first == NULL) first = op;
    if (waits_in(op, tag, chan)) *has_tag = 1;
  }
  return first;
}

/* Nothing can move, and an op of a blocked rank r waits for a blocked rank
 * q (to send to it or to receive from it) that is in another collective
 * on that channel: under rendezvous, ranks that disagree on the collective
 * often wait like this without ever matching a message, where a buffering
 * transport would have delivered one and compared the tags.  Both ops fail
 * with REDCOLL_EMISMATCH, with both tags in the report.  0 if there is no
 * such pair. */
int redcoll__mock_blocked_mismatch(mock_run *run) {
  int found = 0;
  for (int i = 0; i < run->p; i++) {
    mock_rank *r = &run->ranks[i];
    if (r->state != ST_BLOCKED) continue;
    for (mock_op *op = r->ops; op != NULL; op = op->next) {
      uint64_t rt = coll_tag(op);
      if (rt == 0) continue;
      int peers[2] = {op->send_active ? op->sdst : -1, op->recv_active ? op->rsrc : -1};
      for (int j = 0; j < 2; j++) {
        if (peers[j] < 0) continue;
        mock_rank *q = &run->ranks[peers[j]];
        int has;
        mock_op *qop = coll_op_on(q, op->chan, rt, &has);
        if (qop == NULL || has) continue;
        uint64_t qt = qop->ctag;
        redcoll__mock_report_add(run,
                   "rank %d: %s %d in tag 0x%016" PRIx64 ", but rank %d waits in tag 0x%016" PRIx64
                   " (rank %d is at collective #%" PRIu64 ", rank %d at #%" PRIu64 ")",
                   r->id, j == 0 ? "send to" : "recv from", q->id, rt, q->id, qt, r->id, rt >> 40,
                   q->id, qt >> 40);
        redcoll__mock_cancel_op(run, op, REDCOLL_EMISMATCH);
        redcoll__mock_cancel_op(run, qop, REDCOLL_EMISMATCH);
        found = 1;
        break;
      }
      if (found) break;
    }
  }
  return found;
}

static int any_op(const mock_op *op, const void *arg) {
  (void)op, (void)arg;
  return 1;
}

/* No rank can run and some are blocked: every open op fails with
 * REDCOLL_EDEADLOCK, and so does every later call. */
void redcoll__mock_deadlock(mock_run *run) {
  run->deadlocked = 1;
  redcoll__mock_report_add(run, "deadlock: %d rank(s) blocked, none can run", run->nblocked);
  for (int i = 0; i < run->p; i++) {
    mock_rank *r = &run->ranks[i];
    if (r->state != ST_BLOCKED) continue;
    char w[384];
    describe_rank(run, r, w, sizeof w);
    redcoll__mock_report_add(run, "rank %d: %s", i, w);
  }
  redcoll__mock_cancel_where(run, any_op, NULL, REDCOLL_EDEADLOCK);
}

/* Whether a message from rank a to rank b crosses between hosts (always,
 * when every rank is its own host). */
static int between_hosts(const mock_run *run, int a, int b) {
  return run->host_idx == NULL || run->host_idx[a] != run->host_idx[b];
}

/* A message of n bytes from a to b: its latency (alpha, or local_alpha
 * inside a host), returned, and how long it occupies its links (n beta, or
 * n local_beta). */
static double msg_time(const mock_run *run, int a, int b, size_t n, double *occupy) {
  if (between_hosts(run, a, b)) {
    *occupy = (double)n * run->cfg.beta;
    return run->cfg.alpha;
  }
  *occupy = (double)n * run->cfg.local_beta;
  return run->cfg.local_alpha;
}

/* The shared host links a message from a to b occupies: the sending
 * host's outgoing and the receiving host's incoming one, or NULL for
 * both (inside a host, or every rank its own host). */
static void host_links(const mock_run *run, int a, int b, double **out, double **in) {
  *out = *in = NULL;
  if (run->host_idx == NULL || run->host_idx[a] == run->host_idx[b]) return;
  *out = &run->host_out_free[run->host_idx[a]];
  *in = &run->host_in_free[run->host_idx[b]];
}

/* The transfer of m into the receive of rop: its start and end, and its
 * end on the round clock.  A rendezvous transfer starts when both sides
 * have posted and the sender's outgoing and the receiver's incoming links
 * are free; an eager one was timed when it was sent, and the receive ends
 * at the later of its post and the transfer's end. */
static void transfer_times(const mock_run *run, const mock_msg *m, const mock_op *rop,
                           double *start, double *end, uint64_t *rend) {
  if (m->eager) {
    *start = m->start;
    *end = max_d(rop->rpost_t, m->end);
    *rend = max_u(rop->rpost_r, m->rend);
    return;
  }
  const mock_rank *sr = &run->ranks[m->src], *rr = rop->r;
  *start = max_d(max_d(m->post, rop->rpost_t), max_d(sr->out_free, rr->in_free));
  double *ho, *hi, occupy;
  host_links(run, m->src, m->dst, &ho, &hi);
  if (ho != NULL) *start = max_d(*start, max_d(*ho, *hi));
  double lat = msg_time(run, m->src, m->dst, m->len, &occupy);
  *end = *start + lat + occupy;
  *rend = max_u(m->rpost, rop->rpost_r) + 1;
}

/* Would the transfer of m (matched with rop) end after the deadline of a
 * side that waits for it?  Each side waits from its post time; one posted
 * after its own deadline expires at its post time.  The side whose expiry
 * comes first times out (the message stays queued) and the function
 * returns 1. */
static int deadline_passed(mock_run *run, mock_msg *m, mock_op *rop) {
  double start, end;
  uint64_t rend;
  transfer_times(run, m, rop, &start, &end, &rend);
  mock_op *sop = m->op;
  double tr = end > rop->deadline && end > rop->rpost_t ? max_d(rop->deadline, rop->rpost_t)
                                                         : INFINITY;
  double ts = !m->eager && end > sop->deadline && end > m->post ? max_d(sop->deadline, m->post)
                                                                : INFINITY;
  if (tr == INFINITY && ts == INFINITY) return 0;
  if (tr <= ts) time_out(run, rop, tr, m->src);
  else time_out(run, sop, ts, rop->r->id);
  return 1;
}

/* Delivers m, the head of its queue, to the posted receive of op rop.  A
 * tag or length that differs fails both sides with REDCOLL_EMISMATCH and
 * writes nothing. */
static void deliver(mock_run *run, mock_msg *m, mock_op *rop) {
  mock_rank *sr = &run->ranks[m->src], *rr = rop->r;
  if (m->tag == rop->rtag && m->len == rop->rlen && deadline_passed(run, m, rop)) return;
  redcoll__mock_pair_remove(run, m);
  if (m->tag != rop->rtag || m->len != rop->rlen) {
    /* Both views: the receiver's expectation and what the sender sent.
     * The high 24 bits of a core tag are the collective's number. */
    uint64_t rs = rop->rtag >> 40, ss = m->tag >> 40;
    const char *why = m->tag == rop->rtag ? "same tag, different length"
                      : rs != ss ? "the ranks are at different collective numbers"
                                 : "same collective number, different collective, count,"
                                   " dtype, op or root";
    redcoll__mock_report_add(run,
               "rank %d: recv from %d tag 0x%016" PRIx64 " %zu bytes, but the next message has"
               " tag 0x%016" PRIx64 " %zu bytes (rank %d expects collective #%" PRIu64
               ", rank %d sent #%" PRIu64 ": %s)",
               rr->id, m->src, rop->rtag, rop->rlen, m->tag, m->len, rr->id, rs, m->src, ss, why);
    if (m->eager) free(m);
    else half_done(run, m->op, 1, REDCOLL_EMISMATCH, 0, 0);
    half_done(run, rop, 0, REDCOLL_EMISMATCH, 0, 0);
    return;
  }
  if (m->len > 0) memcpy(rop->rbuf, m->data, m->len);
  rr->st.msgs_recv++;
  rr->st.bytes_recv += m->len;
  double start, end;
  uint64_t rend;
  transfer_times(run, m, rop, &start, &end, &rend);
  if (m->eager) {
    redcoll__mock_record(run, m, m->start, m->end, m->rend);
    free(m);
    half_done(run, rop, 0, REDCOLL_OK, end, rend);
  } else if (run->host_idx != NULL && between_hosts(run, m->src, m->dst)) {
    /* Between hosts: timed later, in ready-time order (xfer_step). */
    mock_xfer *x = malloc(sizeof *x);
    if (x == NULL) {
      half_done(run, m->op, 1, REDCOLL_ENOMEM, 0, 0);
      half_done(run, rop, 0, REDCOLL_ENOMEM, 0, 0);
      return;
    }
    *x = (mock_xfer){run->xfers, m->op, rop, m->src, m->dst, m->chan, m->tag, m->len,
                     max_d(m->post, rop->rpost_t), max_u(m->rpost, rop->rpost_r)};
    run->xfers = x;
    m->op->deferred++;
    rop->deferred++;
    rop->rmatched = 1;
  } else {
    redcoll__mock_record(run, m, start, end, rend);
    double *ho, *hi, occupy;
    msg_time(run, m->src, m->dst, m->len, &occupy);
    sr->out_free = rr->in_free = start + occupy;
    host_links(run, m->src, m->dst, &ho, &hi);
    if (ho != NULL) *ho = *hi = start + occupy;
    sr->st.msgs_sent++;
    sr->st.bytes_sent += m->len;
    if (between_hosts(run, m->src, m->dst)) sr->st.bytes_sent_host += m->len;
    half_done(run, m->op, 1, REDCOLL_OK, end, rend);
    half_done(run, rop, 0, REDCOLL_OK, end, rend);
  }
}

/* Whether x is to be timed before y: ready time, then source,
 * destination, channel (the seed has no say). */
static int xfer_before(const mock_xfer *x, const mock_xfer *y) {
  if (x->ready != y->ready) return x->ready < y->ready;
  if (x->src != y->src) return x->src < y->src;
  if (x->dst != y->dst) return x->dst < y->dst;
  return x->chan < y->chan;
}

int redcoll__mock_xfer_step(mock_run *run) {
  if (run->xfers == NULL) return 0;
  mock_xfer **best = &run->xfers;
  for (mock_xfer **at = &run->xfers; *at != NULL; at = &(*at)->next)
    if (xfer_before(*at, *best)) best = at;
  mock_xfer *x = *best;
  *best = x->next;
  mock_rank *sr = &run->ranks[x->src], *rr = &run->ranks[x->dst];
  double *ho, *hi, occupy;
  double lat = msg_time(run, x->src, x->dst, x->len, &occupy);
  host_links(run, x->src, x->dst, &ho, &hi);
  double start = max_d(max_d(x->ready, max_d(sr->out_free, rr->in_free)), max_d(*ho, *hi));
  double end = start + lat + occupy;
  uint64_t rend = x->rready + 1;
  sr->out_free = rr->in_free = *ho = *hi = start + occupy;
  mock_msg m = {.src = x->src, .dst = x->dst, .chan = x->chan, .tag = x->tag, .len = x->len};
  redcoll__mock_record(run, &m, start, end, rend);
  sr->st.msgs_sent++;
  sr->st.bytes_sent += x->len;
  sr->st.bytes_sent_host += x->len;
  x->sop->deferred--;
  x->rop->deferred--;
  half_done(run, x->sop, 1, REDCOLL_OK, end, rend);
  half_done(run, x->rop, 0, REDCOLL_OK, end, rend);
  free(x);
  return 1;
}

/* The first open receive of rank d from src on chan, in post order. */
static mock_op *open_recv(mock_rank *d, int src, uint64_t chan) {
  for (mock_op *op = d->ops; op != NULL; op = op->next)
    if (op->recv_active && !op->rmatched && op->rsrc == src && op->chan == chan) return op;
  return NULL;
}

void redcoll__mock_post_send(mock_run *run, mock_op *op, int dst, uint64_t tag, const void *buf,
                             size_t len) {
  mock_rank *r = op->r;
  op->send_active = 1;
  op->pend++;
  op->sdst = dst;
  op->stag = tag;
  op->slen = len;
  if (run->ranks[dst].dead) {
    half_done(run, op, 1, REDCOLL_ETRANSPORT, 0, 0);
    return;
  }
  mock_msg *m;
  if (len < run->cfg.eager_limit) {
    m = malloc(sizeof *m + len);
    if (m == NULL) {
      half_done(run, op, 1, REDCOLL_ENOMEM, 0, 0);
      return;
    }
    if (len > 0) memcpy(m + 1, buf, len);
    m->data = m + 1;
    m->eager = 1;
    m->op = NULL;
  } else {
    m = &op->rv;
    m->data = buf;
    m->eager = 0;
    m->op = op;
  }
  m->src = r->id;
  m->dst = dst;
  m->chan = op->chan;
  m->tag = tag;
  m->len = len;
  m->post = r->clock;
  m->rpost = r->rclock;
  /* An eager transfer starts once the outgoing link (and its host's, to
   * another host) is free. */
  double *ho, *hi, occupy, lat = msg_time(run, r->id, dst, len, &occupy);
  host_links(run, r->id, dst, &ho, &hi);
  m->start = max_d(r->clock, r->out_free);
  if (ho != NULL) m->start = max_d(m->start, *ho);
  m->end = m->start + (lat + occupy);
  m->rend = r->rclock + 1;
  op->rv.eager = m->eager; /* tells redcoll__mock_cancel_op whether rv is queued */
  if (redcoll__mock_pair_push(run, m) != REDCOLL_OK) {
    if (m->eager) free(m);
    op->rv.eager = 1;
    half_done(run, op, 1, REDCOLL_ENOMEM, 0, 0);
    return;
  }
  if (m->eager) {
    r->out_free = m->start + occupy;
    if (ho != NULL) *ho = m->start + occupy;
    r->st.msgs_sent++;
    r->st.bytes_sent += len;
    if (between_hosts(run, r->id, dst)) r->st.bytes_sent_host += len;
    half_done(run, op, 1, REDCOLL_OK, m->end, m->rend);
  }
  /* A receive posted earlier by dst: its queue from us was empty, so m is
   * the head and they match now. */
  mock_op *d = open_recv(&run->ranks[dst], r->id, op->chan);
  if (d != NULL) deliver(run, m, d);
}

void redcoll__mock_post_recv(mock_run *run, mock_op *op, int src, uint64_t tag, void *buf,
                             size_t len) {
  mock_rank *r = op->r;
  op->recv_active = 1;
  op->rmatched = 0;
  op->pend++;
  op->rsrc = src;
  op->rtag = tag;
  op->rbuf = buf;
  op->rlen = len;
  op->rpost_t = r->clock;
  op->rpost_r = r->rclock;
  /* An earlier open receive from src on this channel would have taken the
   * queue's head: a queue and a receive never wait for each other. */
  mock_pair *q = redcoll__mock_pair_find(run, src, r->id, op->chan);
  if (q != NULL) deliver(run, q->head, op);
  else if (run->ranks[src].dead) half_done(run, op, 0, REDCOLL_ETRANSPORT, 0, 0);
}

/* An op of rank f, or one waiting for it. */
static int waits_for(const mock_op *op, const void *arg) {
  int f = *(const int *)arg;
  return op->r->id == f || (op->send_active && op->sdst == f) ||
         (op->recv_active && op->rsrc == f);
}

/* Rank f dies: its own posted ops and the ops waiting on it fail with
 * REDCOLL_ETRANSPORT (its eager messages already sent stay receivable). */
void redcoll__mock_kill_rank(mock_run *run, mock_rank *f) {
  f->dead = 1;
  redcoll__mock_report_add(run, "rank %d: injected transport failure at call %" PRIu64, f->id,
                           f->ncalls - 1);
  redcoll__mock_cancel_where(run, waits_for, &f->id, REDCOLL_ETRANSPORT);
}
