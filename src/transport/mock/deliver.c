/*
 * The simulator's messages from post to completion: posting the send and
 * receive halves of a call, delivering a message to its receive, the end of
 * a half and of a call (completion or cancellation), deadlines and their
 * expiry, the injected fault that kills a rank, the mismatch between
 * blocked ranks in different collectives, and the deadlock report.
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

/* Ends the call of r with err: whatever half is still open is withdrawn
 * (its rendezvous message leaves the queue, its receive is unposted).  A
 * blocked r becomes runnable. */
void redcoll__mock_cancel_call(mock_run *run, mock_rank *r, int err) {
  if (r->send_active) {
    if (!r->rv.eager) redcoll__mock_pair_remove(run, &r->rv);
    r->send_active = 0;
  }
  r->recv_active = 0;
  r->pend = 0;
  if (r->err == REDCOLL_OK) r->err = err;
  if (r->state == ST_BLOCKED) redcoll__mock_make_runnable(run, r);
}

/* One half of r's call finished at (end, rend) or failed with err. */
static void half_done(mock_run *run, mock_rank *r, int is_send, int err, double end, uint64_t rend) {
  if (is_send) r->send_active = 0;
  else r->recv_active = 0;
  r->pend--;
  if (err != REDCOLL_OK) {
    redcoll__mock_cancel_call(run, r, err);
    return;
  }
  r->cend = max_d(r->cend, end);
  r->crend = max_u(r->crend, rend);
  if (r->pend == 0 && r->state == ST_BLOCKED) redcoll__mock_make_runnable(run, r);
}

static const char *peer_note(const mock_run *run, int peer) {
  if (run->ranks[peer].state == ST_DONE) return " (that rank has returned)";
  if (run->ranks[peer].dead) return " (that rank is dead)";
  return "";
}

/* What the call of r still waits for, e.g. "send to 3 tag ... 8 bytes". */
static void describe_wait(const mock_run *run, const mock_rank *r, char *out, size_t n) {
  char s[128] = "", q[128] = "";
  if (r->send_active)
    snprintf(s, sizeof s, "send to %d tag 0x%016" PRIx64 " %zu bytes%s", r->sdst, r->stag, r->slen,
             peer_note(run, r->sdst));
  if (r->recv_active)
    snprintf(q, sizeof q, "recv from %d tag 0x%016" PRIx64 " %zu bytes%s", r->rsrc, r->rtag,
             r->rlen, peer_note(run, r->rsrc));
  snprintf(out, n, "%s%s%s", s, (s[0] && q[0]) ? "; " : "", q);
  if (r->chan != 0) {
    size_t k = strlen(out);
    snprintf(out + k, n - k, " on channel %" PRIu64, r->chan);
  }
}

/* r's call passes its deadline at virtual time `at` while it waits for
 * rank peer: it fails with REDCOLL_ETIMEDOUT, and r's clock stops there. */
static void time_out(mock_run *run, mock_rank *r, double at, int peer) {
  char w[272];
  describe_wait(run, r, w, sizeof w);
  redcoll__mock_report_add(run, "rank %d: timed out at %.17g waiting for rank %d (%s)", r->id, at,
                           peer, w);
  r->clock = at;
  redcoll__mock_cancel_call(run, r, REDCOLL_ETIMEDOUT);
}

/* Nothing can move: virtual time runs on to the earliest deadline among
 * the blocked ranks (a call posted after its deadline expires at once),
 * and that call times out.  0 if no blocked rank has a deadline. */
int redcoll__mock_expire_one(mock_run *run) {
  mock_rank *best = NULL;
  double bt = INFINITY;
  for (int i = 0; i < run->p; i++) {
    mock_rank *r = &run->ranks[i];
    if (r->state != ST_BLOCKED || !isfinite(r->deadline)) continue;
    double t = max_d(r->deadline, r->clock);
    if (t < bt) {
      bt = t;
      best = r;
    }
  }
  if (best == NULL) return 0;
  time_out(run, best, bt, best->recv_active ? best->rsrc : best->sdst);
  return 1;
}

/* Whether r's call has an open half with this tag on this channel. */
static int waits_in(const mock_rank *r, uint64_t tag, uint64_t chan) {
  return r->chan == chan && ((r->send_active && r->stag == tag) || (r->recv_active && r->rtag == tag));
}

/* The tag of r's open call if it is the tag of the collective r's core is
 * running (not a raw transport call), else 0. */
static uint64_t coll_tag(const mock_rank *r) {
  if (r->state != ST_BLOCKED || !r->in_coll) return 0;
  return waits_in(r, r->ctag, r->chan) ? r->ctag : 0;
}

/* Nothing can move, and a blocked rank r waits for a blocked rank q (to
 * send to it or to receive from it) that is in another collective: under
 * rendezvous, ranks that disagree on the collective often wait like this
 * without ever matching a message, where a buffering transport would have
 * delivered one and compared the tags.  Both fail with REDCOLL_EMISMATCH,
 * with both tags in the report.  0 if there is no such pair. */
int redcoll__mock_blocked_mismatch(mock_run *run) {
  int found = 0;
  for (int i = 0; i < run->p; i++) {
    mock_rank *r = &run->ranks[i];
    uint64_t rt = coll_tag(r);
    if (rt == 0) continue;
    int peers[2] = {r->send_active ? r->sdst : -1, r->recv_active ? r->rsrc : -1};
    for (int j = 0; j < 2; j++) {
      if (peers[j] < 0) continue;
      mock_rank *q = &run->ranks[peers[j]];
      uint64_t qt = coll_tag(q);
      if (qt == 0 || q->chan != r->chan || waits_in(q, rt, r->chan)) continue;
      redcoll__mock_report_add(run,
                 "rank %d: %s %d in tag 0x%016" PRIx64 ", but rank %d waits in tag 0x%016" PRIx64
                 " (rank %d is at collective #%" PRIu64 ", rank %d at #%" PRIu64 ")",
                 r->id, j == 0 ? "send to" : "recv from", q->id, rt, q->id, qt, r->id, rt >> 40,
                 q->id, qt >> 40);
      redcoll__mock_cancel_call(run, r, REDCOLL_EMISMATCH);
      redcoll__mock_cancel_call(run, q, REDCOLL_EMISMATCH);
      found = 1;
      break;
    }
  }
  return found;
}

/* No rank can run and some are blocked: every blocked call fails with
 * REDCOLL_EDEADLOCK, and so does every later call. */
void redcoll__mock_deadlock(mock_run *run) {
  run->deadlocked = 1;
  redcoll__mock_report_add(run, "deadlock: %d rank(s) blocked, none can run", run->nblocked);
  for (int i = 0; i < run->p; i++) {
    mock_rank *r = &run->ranks[i];
    if (r->state != ST_BLOCKED) continue;
    char w[272];
    describe_wait(run, r, w, sizeof w);
    redcoll__mock_report_add(run, "rank %d: %s", i, w);
  }
  for (int i = 0; i < run->p; i++)
    if (run->ranks[i].state == ST_BLOCKED)
      redcoll__mock_cancel_call(run, &run->ranks[i], REDCOLL_EDEADLOCK);
}

/* Would the transfer of m (matched with rr's receive) end after the
 * deadline of a side that waits for it?  Each side waits from its post
 * time; one posted after its own deadline expires at its post time.  The
 * side whose expiry comes first times out (the message stays queued) and
 * the function returns 1. */
static int deadline_passed(mock_run *run, mock_msg *m, mock_rank *rr) {
  mock_rank *sr = &run->ranks[m->src];
  double end;
  if (m->eager) end = max_d(rr->rpost_t, m->end);
  else end = max_d(m->post, rr->rpost_t) + run->cfg.alpha + (double)m->len * run->cfg.beta;
  double tr = end > rr->deadline && end > rr->rpost_t ? max_d(rr->deadline, rr->rpost_t) : INFINITY;
  double ts = !m->eager && end > sr->deadline && end > m->post ? max_d(sr->deadline, m->post)
                                                               : INFINITY;
  if (tr == INFINITY && ts == INFINITY) return 0;
  if (tr <= ts) time_out(run, rr, tr, sr->id);
  else time_out(run, sr, ts, rr->id);
  return 1;
}

/* Delivers m, the head of its queue, to the posted receive of rank rr.  A
 * tag or length that differs fails both sides with REDCOLL_EMISMATCH and
 * writes nothing. */
static void deliver(mock_run *run, mock_msg *m, mock_rank *rr) {
  mock_rank *sr = &run->ranks[m->src];
  if (m->tag == rr->rtag && m->len == rr->rlen && deadline_passed(run, m, rr)) return;
  redcoll__mock_pair_remove(run, m);
  if (m->tag != rr->rtag || m->len != rr->rlen) {
    /* Both views: the receiver's expectation and what the sender sent.
     * The high 24 bits of a core tag are the collective's number. */
    uint64_t rs = rr->rtag >> 40, ss = m->tag >> 40;
    const char *why = m->tag == rr->rtag ? "same tag, different length"
                      : rs != ss ? "the ranks are at different collective numbers"
                                 : "same collective number, different collective, count,"
                                   " dtype, op or root";
    redcoll__mock_report_add(run,
               "rank %d: recv from %d tag 0x%016" PRIx64 " %zu bytes, but the next message has"
               " tag 0x%016" PRIx64 " %zu bytes (rank %d expects collective #%" PRIu64
               ", rank %d sent #%" PRIu64 ": %s)",
               rr->id, m->src, rr->rtag, rr->rlen, m->tag, m->len, rr->id, rs, m->src, ss, why);
    if (m->eager) free(m);
    else half_done(run, sr, 1, REDCOLL_EMISMATCH, 0, 0);
    half_done(run, rr, 0, REDCOLL_EMISMATCH, 0, 0);
    return;
  }
  if (m->len > 0) memcpy(rr->rbuf, m->data, m->len);
  double cost = run->cfg.alpha + (double)m->len * run->cfg.beta;
  rr->st.msgs_recv++;
  rr->st.bytes_recv += m->len;
  if (m->eager) {
    redcoll__mock_record(run, m, m->post, m->end, m->rend);
    double end = max_d(rr->rpost_t, m->end);
    uint64_t rend = max_u(rr->rpost_r, m->rend);
    free(m);
    half_done(run, rr, 0, REDCOLL_OK, end, rend);
  } else {
    double start = max_d(m->post, rr->rpost_t);
    double end = start + cost;
    uint64_t rend = max_u(m->rpost, rr->rpost_r) + 1;
    redcoll__mock_record(run, m, start, end, rend);
    sr->st.msgs_sent++;
    sr->st.bytes_sent += m->len;
    half_done(run, sr, 1, REDCOLL_OK, end, rend);
    half_done(run, rr, 0, REDCOLL_OK, end, rend);
  }
}

void redcoll__mock_post_send(mock_run *run, mock_rank *r, int dst, uint64_t tag, const void *buf,
                             size_t len) {
  r->send_active = 1;
  r->pend++;
  r->sdst = dst;
  r->stag = tag;
  r->slen = len;
  if (run->ranks[dst].dead) {
    half_done(run, r, 1, REDCOLL_ETRANSPORT, 0, 0);
    return;
  }
  mock_msg *m;
  if (len < run->cfg.eager_limit) {
    m = malloc(sizeof *m + len);
    if (m == NULL) {
      half_done(run, r, 1, REDCOLL_ENOMEM, 0, 0);
      return;
    }
    if (len > 0) memcpy(m + 1, buf, len);
    m->data = m + 1;
    m->eager = 1;
  } else {
    m = &r->rv;
    m->data = buf;
    m->eager = 0;
  }
  m->src = r->id;
  m->dst = dst;
  m->chan = r->chan;
  m->tag = tag;
  m->len = len;
  m->post = r->clock;
  m->rpost = r->rclock;
  m->end = r->clock + (run->cfg.alpha + (double)len * run->cfg.beta);
  m->rend = r->rclock + 1;
  r->rv.eager = m->eager; /* tells redcoll__mock_cancel_call whether rv is queued */
  if (redcoll__mock_pair_push(run, m) != REDCOLL_OK) {
    if (m->eager) free(m);
    r->rv.eager = 1;
    half_done(run, r, 1, REDCOLL_ENOMEM, 0, 0);
    return;
  }
  if (m->eager) {
    r->st.msgs_sent++;
    r->st.bytes_sent += len;
    half_done(run, r, 1, REDCOLL_OK, m->end, m->rend);
  }
  /* A receive posted earlier by dst: its queue from us was empty, so m is
   * the head and they match now. */
  mock_rank *d = &run->ranks[dst];
  if (d->recv_active && d->rsrc == r->id && d->chan == r->chan) deliver(run, m, d);
}

void redcoll__mock_post_recv(mock_run *run, mock_rank *r, int src, uint64_t tag, void *buf,
                             size_t len) {
  r->recv_active = 1;
  r->pend++;
  r->rsrc = src;
  r->rtag = tag;
  r->rbuf = buf;
  r->rlen = len;
  r->rpost_t = r->clock;
  r->rpost_r = r->rclock;
  mock_pair *q = redcoll__mock_pair_find(run, src, r->id, r->chan);
  if (q != NULL) deliver(run, q->head, r);
  else if (run->ranks[src].dead) half_done(run, r, 0, REDCOLL_ETRANSPORT, 0, 0);
}

/* Rank f dies: calls waiting on it fail with REDCOLL_ETRANSPORT. */
void redcoll__mock_kill_rank(mock_run *run, mock_rank *f) {
  f->dead = 1;
  redcoll__mock_report_add(run, "rank %d: injected transport failure at call %" PRIu64, f->id,
                           f->ncalls - 1);
  for (int i = 0; i < run->p; i++) {
    mock_rank *r = &run->ranks[i];
    if (r->state != ST_BLOCKED) continue;
    if ((r->send_active && r->sdst == f->id) || (r->recv_active && r->rsrc == f->id))
      redcoll__mock_cancel_call(run, r, REDCOLL_ETRANSPORT);
  }
}
