/* The set-up of a connection after HELLO: the job id and communicator
 * number of an incoming HELLO and the answer to it, the answer to this
 * rank's own HELLO, the steps of the authentication on either side, and
 * the rank an incoming connection then belongs to; a failed set-up of this
 * rank's own connection. */
#include "auth.h"
#include "conn.h"
#include "failure.h"
#include "handshake.h"
#include "send.h"

/* The set-up of this rank's connection to q failed: sending to q is over
 * and the communicator is broken, with the reason `why`. */
void redcoll__tcp_auth_fail(redcoll__tcp *t, int q, const char *why) {
  char a[64];
  if (t->auth_failed_with < 0) t->auth_failed_with = q;
  redcoll__tcp_peer_fail(t, q, REDCOLL_EPROTO, DIR_SEND);
  redcoll__tcp_set_fatal(t, REDCOLL_EPROTO, "rank %d (%s) %s", q,
                         redcoll__tcp_peer_addr(t, q, a, sizeof a), why);
}

/* An incoming connection claiming to be rank q failed its authentication
 * (its side refused this rank's answer, or its answer did not match): a
 * stranger, or rank q with another secret.  This rank checks for itself by
 * connecting to q, unless it has a connection to q already: if q has
 * another secret that connection fails and says so (redcoll__tcp_auth_fail),
 * so every rank learns it at once rather than at its timeout; a stranger
 * costs one connection that is needed anyway. */
static void check_claim(redcoll__tcp *t, int q) {
  if (q < 0 || q >= t->size || q == t->rank) return;
  redcoll__tcp_peer *p = &t->peers[q];
  /* Also once a lost connection broke the communicator: a failed
   * authentication is the better reason, and the wait still listens. */
  if (p->out != NULL || p->err_send != REDCOLL_OK || p->retry_active ||
      (t->fatal != REDCOLL_OK && t->fatal != REDCOLL_ETRANSPORT))
    return;
  redcoll__log(2, "tcp rank %d: checking rank %d's secret with a connection of its own", t->rank, q);
  p->backoff_ms = 2;
  t->connect_peer(t, q, 0);
}

/* The incoming connection c has proved to be rank q's (HELLO of this job,
 * and the secret if there is one).  Its first is the data connection; a
 * second one is a control connection, opened by a rank that cancels while
 * its data connection may be blocked behind data this rank has not asked
 * for yet: it carries CANCELs (and BYE), never data. */
static void accept_peer(redcoll__tcp_conn *c, int q) {
  redcoll__tcp *t = c->t;
  redcoll__tcp_peer *p = &t->peers[q];
  c->peer = q;
  c->ready = 1;
  p->ever = 1;
  if (p->probe && p->retry_active && p->out == NULL && p->txq == NULL) {
    /* The peer is there: its probe's timer must not hold up the first
     * send to it, which connects at once only when no timer is pending. */
    uv_timer_stop(&p->retry);
    p->retry_active = 0;
  }
  p->probe = 0;
  redcoll__tcp_bye_if_leaving(c, q);
  if (p->in != NULL) {
    c->ctl_only = 1;
    redcoll__log(3, "tcp rank %d: rank %d opened a control connection", t->rank, q);
    return;
  }
  p->in = c;
  redcoll__log(3, "tcp rank %d: rank %d connected%s", t->rank, q, t->auth ? " and authenticated" : "");
}

/* The payload of an authentication frame has been read into c->abuf. */
void redcoll__tcp_auth_arrived(redcoll__tcp_conn *c) {
  redcoll__tcp *t = c->t;
  unsigned char mac[REDCOLL__AUTH_MAC];
  unsigned char fr[REDCOLL__TCP_HDR + REDCOLL__AUTH_NONCE + REDCOLL__AUTH_MAC];
  switch (c->astep) {
  case REDCOLL__AUTH_C1: { /* server: answer the challenge, challenge back */
    memcpy(c->nonce_peer, c->abuf, REDCOLL__AUTH_NONCE);
    redcoll__tcp_auth_nonce(c->nonce_mine);
    redcoll__tcp_encode(fr, REDCOLL__FR_AUTH, REDCOLL__AUTH_S2,
                        REDCOLL__AUTH_NONCE + REDCOLL__AUTH_MAC);
    memcpy(fr + REDCOLL__TCP_HDR, c->nonce_mine, REDCOLL__AUTH_NONCE);
    redcoll__tcp_auth_mac(t, fr + REDCOLL__TCP_HDR + REDCOLL__AUTH_NONCE, 'S', c->nonce_peer,
                          c->nonce_mine, c->claimed, t->rank);
    c->auth_step = REDCOLL__AUTH_C3;
    redcoll__tcp_ctl_write_bytes(c, fr, sizeof fr, 0);
    redcoll__tcp_bye_if_leaving(c, c->claimed);
    return;
  }
  case REDCOLL__AUTH_S2: { /* client: check the server, answer its challenge */
    int q = c->peer;
    memcpy(c->nonce_peer, c->abuf, REDCOLL__AUTH_NONCE);
    redcoll__tcp_auth_mac(t, mac, 'S', c->nonce_mine, c->nonce_peer, t->rank, q);
    if (!redcoll__tcp_auth_equal(mac, c->abuf + REDCOLL__AUTH_NONCE)) {
      int for_abort = c->abort_after_hello;
      redcoll__tcp_conn_refuse(c);
      if (!for_abort)
        redcoll__tcp_auth_fail(
            t, q, "failed authentication: its answer does not match this rank's secret");
      return;
    }
    redcoll__tcp_encode(fr, REDCOLL__FR_AUTH, REDCOLL__AUTH_C3, REDCOLL__AUTH_MAC);
    redcoll__tcp_auth_mac(t, fr + REDCOLL__TCP_HDR, 'C', c->nonce_mine, c->nonce_peer, t->rank, q);
    redcoll__tcp_ctl_write_bytes(c, fr, REDCOLL__TCP_HDR + REDCOLL__AUTH_MAC, 0);
    c->auth_step = 0;
    redcoll__tcp_out_ready(c);
    return;
  }
  case REDCOLL__AUTH_C3: { /* server: check the client; it is rank q now */
    int q = c->claimed;
    redcoll__tcp_auth_mac(t, mac, 'C', c->nonce_peer, c->nonce_mine, q, t->rank);
    if (!redcoll__tcp_auth_equal(mac, c->abuf)) {
      redcoll__log(0,
                   "tcp rank %d: refused a connection claiming to be rank %d: authentication "
                   "failed (another secret?)",
                   t->rank, q);
      redcoll__tcp_conn_refuse(c);
      check_claim(t, q);
      return;
    }
    c->auth_step = 0;
    accept_peer(c, q);
    return;
  }
  default:
    redcoll__tcp_conn_proto(c, "unexpected authentication step");
  }
}

/* The level of a log line about a refused HELLO: `level` for the first
 * with peer q, debug for the rest (the other side tries again). */
static int refusal_level(redcoll__tcp *t, int q, int level) {
  return t->peers[q].refusals++ == 0 ? level : 3;
}

/* The answer to the HELLO on this rank's connection c has been read into
 * c->abuf: the job id and communicator number of the one who listens on
 * the peer's port.  The same as this one's: the connection is the peer's
 * (with a secret, once the challenge is answered too).  Otherwise the
 * peer closes it, and this rank connects again later while that is an
 * earlier communicator on the peer's port or one of another job (it may
 * be gone soon, a new one taking the port), but gives up on a later one
 * of this job: the peer has destroyed this communicator. */
static void answer_arrived(redcoll__tcp_conn *c) {
  redcoll__tcp *t = c->t;
  int q = c->peer;
  char a[64];
  uint64_t job = redcoll__tcp_get_le(c->abuf, 8), number = redcoll__tcp_get_le(c->abuf + 8, 8);
  t->peers[q].gone_after_ns = 0; /* somebody listens there */
  if (job == t->job && number == t->number) {
    c->answered = 1;
    if (!t->auth) redcoll__tcp_out_ready(c);
    return;
  }
  int data = t->peers[q].out == c && !c->abort_after_hello;
  redcoll__tcp_conn_close(c);
  if (!data) return;
  redcoll__tcp_peer_addr(t, q, a, sizeof a);
  if (job == t->job && number > t->number) {
    redcoll__tcp_peer_lost(t, q, REDCOLL_ETRANSPORT, DIR_SEND,
                           "rank %d (%s) has destroyed this communicator: it runs a later one "
                           "of this job (its number %llu, this one's %llu)",
                           q, a, (unsigned long long)number, (unsigned long long)t->number);
    return;
  }
  if (job != t->job)
    redcoll__log(refusal_level(t, q, 1),
                 "tcp rank %d: rank %d's port %s is held by a communicator of another job (job "
                 "id %016llx, this job's is %016llx): connecting again until it is gone",
                 t->rank, q, a, (unsigned long long)job, (unsigned long long)t->job);
  else
    redcoll__log(refusal_level(t, q, 2),
                 "tcp rank %d: rank %d's port %s is still held by an earlier communicator of "
                 "this job (its number %llu, this one's %llu): connecting again until it is gone",
                 t->rank, q, a, (unsigned long long)number, (unsigned long long)t->number);
  redcoll__tcp_retry_later(t, q);
}

/* The payload of a HELLO has been read into c->abuf: the job id and the
 * communicator's number.  On an accepted connection (from one claiming to
 * be rank c->claimed) it is answered with this rank's own; a HELLO of
 * another job or another communicator of this job is refused (the
 * connection closes after the answer), without disturbing this one. */
void redcoll__tcp_hello_arrived(redcoll__tcp_conn *c) {
  if (c->out) {
    answer_arrived(c);
    return;
  }
  redcoll__tcp *t = c->t;
  int q = c->claimed;
  uint64_t job = redcoll__tcp_get_le(c->abuf, 8), number = redcoll__tcp_get_le(c->abuf + 8, 8);
  int same = job == t->job && number == t->number;
  unsigned char fr[REDCOLL__TCP_HDR + REDCOLL__TCP_HELLO_LEN];
  redcoll__tcp_encode(fr, REDCOLL__FR_HELLO, (uint64_t)t->rank | (uint64_t)t->size << 32,
                      REDCOLL__TCP_HELLO_LEN);
  redcoll__tcp_put_le(fr + REDCOLL__TCP_HDR, t->job, 8);
  redcoll__tcp_put_le(fr + REDCOLL__TCP_HDR + 8, t->number, 8);
  if (!same) {
    if (job != t->job)
      redcoll__log(refusal_level(t, q, 1),
                   "tcp rank %d: dropped a connection claiming to be rank %d: HELLO from another "
                   "job (job id %016llx, this job's is %016llx)",
                   t->rank, q, (unsigned long long)job, (unsigned long long)t->job);
    else
      redcoll__log(refusal_level(t, q, 2),
                   "tcp rank %d: dropped a connection of rank %d: HELLO from %s communicator of "
                   "this job (its number %llu, this one's %llu)",
                   t->rank, q, number > t->number ? "a later" : "an earlier",
                   (unsigned long long)number, (unsigned long long)t->number);
    c->refused = 1;
    redcoll__tcp_conn_read_stop(c);
    redcoll__tcp_ctl_write_bytes(c, fr, sizeof fr, 1);
    return;
  }
  redcoll__tcp_ctl_write_bytes(c, fr, sizeof fr, 0);
  if (t->auth) {
    /* Identified only once it has proved it knows the secret. */
    c->auth_step = REDCOLL__AUTH_C1;
    return;
  }
  accept_peer(c, q);
}

/* An AUTH frame header. */
void redcoll__tcp_auth_frame(redcoll__tcp_conn *c, const redcoll__tcp_frame *f) {
  redcoll__tcp *t = c->t;
  if (c->out && !c->answered)
    return redcoll__tcp_conn_proto(c, "authentication before the answer to HELLO");
  if (f->tag == REDCOLL__AUTH_REFUSED && f->len == 0) {
    if (!c->out || c->peer < 0) {
      int q = !c->out && c->auth_step != 0 ? c->claimed : -1;
      redcoll__tcp_conn_close(c);
      if (q >= 0) check_claim(t, q);
      return;
    }
    int q = c->peer;
    int for_abort = c->abort_after_hello;
    redcoll__tcp_conn_close(c);
    if (for_abort) return;
    redcoll__tcp_auth_fail(
        t, q,
        t->auth ? "refused this rank's authentication (has it the same secret?)"
                : "refused this rank: it requires authentication and this rank has no "
                  "secret (REDCOLL_SECRET)");
    return;
  }
  int want = redcoll__tcp_auth_len(f->tag);
  if (want < 0 || f->len != (uint64_t)want)
    return redcoll__tcp_conn_proto(c, "malformed authentication frame");
  if (!t->auth) {
    if (c->out || c->peer < 0) return redcoll__tcp_conn_proto(c, "unexpected authentication frame");
    int q = c->peer;
    redcoll__tcp_conn_refuse(c);
    redcoll__tcp_set_fatal(
        t, REDCOLL_EPROTO,
        "rank %d wants to authenticate (it has a secret) and this rank has no secret "
        "(REDCOLL_SECRET)",
        q);
    return;
  }
  if (f->tag != (uint64_t)c->auth_step || c->auth_step == 0) {
    if (c->out) return redcoll__tcp_conn_proto(c, "unexpected authentication step");
    redcoll__log(0, "tcp rank %d: refused a connection: authentication step %llu out of order",
                 t->rank, (unsigned long long)f->tag);
    redcoll__tcp_conn_refuse(c);
    return;
  }
  c->astep = (unsigned)f->tag;
  c->aneed = (size_t)want;
  c->agot = 0;
}
