/*
 * The simulator as a version 4 transport: posted exchanges (post) told by
 * progress, driven straight through the vtable (tests/raw.h): matching per
 * channel, done only inside the poster's own progress and in the order the
 * ops ended, the links (a rank's sends queue on its outgoing link, its
 * receives on its incoming link, the two directions at once), polls,
 * deadlines, deadlock, cancel, abort, mismatch, a blocking exchange among
 * posted ones, determinism, and a world of the program's threads; then
 * the core's nonblocking collectives on it: random mixes of up to 64
 * outstanding ones of 11 kinds on a communicator and its dup at p = 2..13
 * checked against sequential sums, the same seed giving the same trace,
 * the overlap of two allreduces against the cost model, and a deadlock and
 * a timeout of a collective a rank never joins.
 */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "raw.h"
#include "redcoll/mock.h"
#include "test.h"

/* ---- helpers ------------------------------------------------------------ */

#define MAXR 16
#define NS 1000000.0 /* nanoseconds per unit of virtual time */

/* A posted exchange of the tests: the transport's op first. */
typedef struct t_op {
  redcoll_transport_op op;
  redcoll_comm *comm;
  int ndone;     /* how many times done was called (must be 1) */
  int status;
  double at;     /* the rank's clock when done was called */
  int order;     /* the how-manieth done of its rank */
  int outside;   /* done was called outside its rank's progress */
} t_op;

/* Which rank is inside progress (one rank runs at a time), and per-rank
 * done counters. */
static int in_progress[MAXR];
static int ndones[MAXR];

static double clock_of(redcoll_comm *c) { return (double)c->ops->now(c->impl) / NS; }

static void t_done(redcoll_transport_op *op, int status) {
  t_op *t = (t_op *)op;
  int r = redcoll_comm_rank(t->comm);
  t->ndone++;
  t->status = status;
  t->at = clock_of(t->comm);
  t->order = ndones[r]++;
  if (!in_progress[r]) t->outside = 1;
}

/* What the rank programs leave (one rank runs at a time: plain stores). */
typedef struct {
  int rc[MAXR][8];
  double at[MAXR][8];
  int order[MAXR][8];
  int outside[MAXR];
  double clock[MAXR];
  uint64_t data[MAXR][8];
} results;
static results R;

static void reset(void) {
  memset(in_progress, 0, sizeof in_progress);
  memset(ndones, 0, sizeof ndones);
  memset(&R, 0, sizeof R);
}

/* A run of fn on p ranks from a clean slate; cfg NULL: the defaults. */
static int run_case(int p, const redcoll_mock_config *cfg, redcoll_rank_main fn,
                    redcoll_mock_stats *st) {
  reset();
  return redcoll_mock_run(p, cfg, fn, NULL, st);
}


/* Posts on channel chan with a deadline (UINT64_MAX: none); dst or src < 0:
 * that side is absent. */
static int t_post(redcoll_comm *c, uint64_t chan, uint64_t deadline_ns, int dst, uint64_t stag,
                  const void *sbuf, size_t slen, int src, uint64_t rtag, void *rbuf, size_t rlen,
                  t_op *t) {
  memset(t, 0, sizeof *t);
  t->op.done = t_done;
  t->comm = c;
  redcoll_transport_ctx ctx = {deadline_ns, 0, chan};
  redcoll_transport_msg s = {dst, stag, (void *)sbuf, slen}, r = {src, rtag, rbuf, rlen};
  return c->ops->post(c->impl, &ctx, dst >= 0 ? &s : NULL, src >= 0 ? &r : NULL, &t->op);
}

static int t_progress(redcoll_comm *c, uint64_t until_ns) {
  int r = redcoll_comm_rank(c);
  in_progress[r] = 1;
  int rc = c->ops->progress(c->impl, until_ns);
  in_progress[r] = 0;
  return rc;
}

/* Progress until t is done; its status. */
static int t_wait(redcoll_comm *c, t_op *t) {
  while (!t->ndone) {
    int rc = t_progress(c, UINT64_MAX);
    if (rc != REDCOLL_OK) return rc;
  }
  return t->status;
}

/* Posts and waits; the status of whichever fails first. */
static int t_post_wait(redcoll_comm *c, uint64_t chan, int dst, uint64_t stag, const void *sbuf,
                       size_t slen, int src, uint64_t rtag, void *rbuf, size_t rlen) {
  t_op t;
  int rc = t_post(c, chan, UINT64_MAX, dst, stag, sbuf, slen, src, rtag, rbuf, rlen, &t);
  return rc != REDCOLL_OK ? rc : t_wait(c, &t);
}

/* An exchange on a channel (raw_call uses channel 0). */
static int t_exchange(redcoll_comm *c, uint64_t chan, int dst, uint64_t stag, const void *sbuf,
                      size_t slen, int src, uint64_t rtag, void *rbuf, size_t rlen) {
  redcoll_transport_ctx ctx = {UINT64_MAX, 0, chan};
  redcoll_transport_msg s = {dst, stag, (void *)sbuf, slen}, r = {src, rtag, rbuf, rlen};
  return c->ops->exchange(c->impl, &ctx, dst >= 0 ? &s : NULL, src >= 0 ? &r : NULL);
}

static redcoll_mock_config cfg_abg(double alpha, double beta, double gamma) {
  redcoll_mock_config cfg;
  redcoll_mock_config_init(&cfg);
  cfg.alpha = alpha;
  cfg.beta = beta;
  cfg.gamma = gamma;
  return cfg;
}


/* ---- the cases ---------------------------------------------------------- */

/* Every rank posts a send to the next and a receive from the previous, as
 * one op, then progresses: a ring of one round (alpha 1). */
static int ring_fn(redcoll_comm *c, void *arg) {
  (void)arg;
  int me = redcoll_comm_rank(c), p = redcoll_comm_size(c);
  uint64_t out = 1000 + (uint64_t)me, in = 0;
  t_op t;
  int rc = t_post(c, 0, UINT64_MAX, (me + 1) % p, 7, &out, sizeof out, (me + p - 1) % p, 7, &in,
                  sizeof in, &t);
  R.rc[me][0] = rc;
  R.rc[me][1] = t.ndone; /* never inside post */
  R.rc[me][2] = t_wait(c, &t);
  R.rc[me][3] = t.ndone;
  R.outside[me] = t.outside;
  R.data[me][0] = in;
  R.clock[me] = clock_of(c);
  return REDCOLL_OK;
}

static void test_post_ring(void) {
  for (int p = 2; p <= 7; p++) {
    redcoll_mock_config cfg = cfg_abg(1, 0, 0);
    redcoll_mock_stats st[MAXR];
    CHECK_INT(run_case(p, &cfg, ring_fn, st), REDCOLL_OK);
    for (int r = 0; r < p; r++) {
      CHECK_INT(R.rc[r][0], REDCOLL_OK);
      CHECK_INT(R.rc[r][1], 0);
      CHECK_INT(R.rc[r][2], REDCOLL_OK);
      CHECK_INT(R.rc[r][3], 1);
      CHECK_INT(R.outside[r], 0);
      CHECK_INT(R.data[r][0], 1000 + (r + p - 1) % p);
      CHECK_DBL(R.clock[r], 1);
      CHECK_INT(st[r].rounds, 1);
      CHECK_INT(st[r].msgs_sent, 1);
      CHECK_INT(st[r].calls, 1);
    }
  }
}

/* Two channels, posted in opposite orders on the two ranks: each channel
 * matches on its own (the same as blocking calls would deadlock).  Rank 0
 * receives on channel 4 first, then channel 0; rank 1 sends on 0 first,
 * then 4.  Both ops of each rank end at 1 and are told in post order. */
static int channels_fn(redcoll_comm *c, void *arg) {
  (void)arg;
  int me = redcoll_comm_rank(c);
  uint64_t v[2] = {11, 22}, in[2] = {0, 0};
  t_op t[2];
  if (me == 0) {
    R.rc[0][0] = t_post(c, 4, UINT64_MAX, -1, 0, NULL, 0, 1, 9, &in[1], 8, &t[0]);
    R.rc[0][1] = t_post(c, 0, UINT64_MAX, -1, 0, NULL, 0, 1, 9, &in[0], 8, &t[1]);
  } else {
    R.rc[1][0] = t_post(c, 0, UINT64_MAX, 0, 9, &v[0], 8, -1, 0, NULL, 0, &t[0]);
    R.rc[1][1] = t_post(c, 4, UINT64_MAX, 0, 9, &v[1], 8, -1, 0, NULL, 0, &t[1]);
  }
  for (int i = 0; i < 2; i++) {
    R.rc[me][2 + i] = t_wait(c, &t[i]);
    R.at[me][i] = t[i].at;
    R.order[me][i] = t[i].order;
  }
  R.data[me][0] = in[0];
  R.data[me][1] = in[1];
  return REDCOLL_OK;
}

static void test_post_channels(void) {
  for (uint64_t seed = 1; seed <= 8; seed++) {
    redcoll_mock_config cfg = cfg_abg(1, 0, 0);
    cfg.seed = seed;
    CHECK_INT(run_case(2, &cfg, channels_fn, NULL), REDCOLL_OK);
    for (int r = 0; r < 2; r++)
      for (int i = 0; i < 4; i++) CHECK_INT(R.rc[r][i], REDCOLL_OK);
    CHECK_INT(R.data[0][0], 11);
    CHECK_INT(R.data[0][1], 22);
    for (int r = 0; r < 2; r++) {
      CHECK_DBL(R.at[r][0], 1);
      CHECK_DBL(R.at[r][1], 1);
      CHECK_INT(R.order[r][0], 0);
      CHECK_INT(R.order[r][1], 1);
    }
  }
}

/* The links, alpha 1 and beta 1 per byte (every message 10 bytes, so a
 * transfer occupies its links 10 and ends 11 after its start):
 * - rank 0 posts sends to 1 and 2 at once: they queue on 0's outgoing
 *   link, [0, 10] then [10, 20], ending at 11 and 21;
 * - ranks 3 and 4 send to 5 at once: they queue on 5's incoming link,
 *   ending at 11 and 21 in the order they matched;
 * - ranks 6 and 7 send to each other at once, each also receiving: full
 *   duplex, both ops end at 11.
 * Ranks 1, 2 and 5 post their receives at 0. */
static int links_fn(redcoll_comm *c, void *arg) {
  (void)arg;
  int me = redcoll_comm_rank(c);
  char out[10] = "abcdefghi", in[2][10];
  t_op t[2];
  int n = 0;
  switch (me) {
  case 0:
    t_post(c, 0, UINT64_MAX, 1, 5, out, 10, -1, 0, NULL, 0, &t[n++]);
    t_post(c, 4, UINT64_MAX, 2, 5, out, 10, -1, 0, NULL, 0, &t[n++]);
    break;
  case 1:
  case 2:
    t_post(c, me == 1 ? 0 : 4, UINT64_MAX, -1, 0, NULL, 0, 0, 5, in[0], 10, &t[n++]);
    break;
  case 3:
  case 4:
    t_post(c, 0, UINT64_MAX, 5, 5, out, 10, -1, 0, NULL, 0, &t[n++]);
    break;
  case 5:
    t_post(c, 0, UINT64_MAX, -1, 0, NULL, 0, 3, 5, in[0], 10, &t[n++]);
    t_post(c, 0, UINT64_MAX, -1, 0, NULL, 0, 4, 5, in[1], 10, &t[n++]);
    break;
  default:
    t_post(c, 0, UINT64_MAX, 13 - me, 5, out, 10, 13 - me, 5, in[0], 10, &t[n++]);
    break;
  }
  for (int i = 0; i < n; i++) {
    R.rc[me][i] = t_wait(c, &t[i]);
    R.at[me][i] = t[i].at;
  }
  R.clock[me] = clock_of(c);
  return REDCOLL_OK;
}

static void test_links(void) {
  for (uint64_t seed = 1; seed <= 8; seed++) {
    redcoll_mock_config cfg = cfg_abg(1, 1, 0);
    cfg.seed = seed;
    redcoll_mock_stats st[8];
    CHECK_INT(run_case(8, &cfg, links_fn, st), REDCOLL_OK);
    for (int r = 0; r < 8; r++) CHECK_INT(R.rc[r][0], REDCOLL_OK);
    /* Outgoing queue of rank 0: whichever receive matched first goes
     * first, and here both receivers post at 0 before or after rank 0. */
    double a = R.at[0][0], b = R.at[0][1];
    CHECK_DBL(fmin(a, b), 11);
    CHECK_DBL(fmax(a, b), 21);
    CHECK_DBL(R.clock[0], 21);
    CHECK_DBL(fmin(R.at[1][0], R.at[2][0]), 11);
    CHECK_DBL(fmax(R.at[1][0], R.at[2][0]), 21);
    /* Incoming queue of rank 5. */
    CHECK_DBL(fmin(R.at[5][0], R.at[5][1]), 11);
    CHECK_DBL(fmax(R.at[5][0], R.at[5][1]), 21);
    CHECK_DBL(R.clock[5], 21);
    /* Full duplex. */
    CHECK_DBL(R.at[6][0], 11);
    CHECK_DBL(R.at[7][0], 11);
    CHECK_INT(st[6].rounds, 1);
  }
}

/* Blocking exchanges keep their numbers: the same two sends from rank 0
 * done one after the other take 11 each. */
static int blocking_links_fn(redcoll_comm *c, void *arg) {
  (void)arg;
  int me = redcoll_comm_rank(c);
  char out[10] = "abcdefghi", in[10];
  if (me == 0) {
    R.rc[0][0] = t_exchange(c, 0, 1, 5, out, 10, -1, 0, NULL, 0);
    R.rc[0][1] = t_exchange(c, 0, 2, 5, out, 10, -1, 0, NULL, 0);
  } else {
    R.rc[me][0] = t_exchange(c, 0, -1, 0, NULL, 0, 0, 5, in, 10);
  }
  R.clock[me] = clock_of(c);
  return REDCOLL_OK;
}

static void test_blocking_unchanged(void) {
  redcoll_mock_config cfg = cfg_abg(1, 1, 0);
  CHECK_INT(run_case(3, &cfg, blocking_links_fn, NULL), REDCOLL_OK);
  CHECK_DBL(R.clock[0], 22);
  CHECK_DBL(R.clock[1], 11);
  CHECK_DBL(R.clock[2], 22);
}

/* done is told in the order the ops ended, not the order they matched:
 * rank 0 posts a receive from 1, then one from 2; rank 2 sends to 0 at
 * once (ends at 1), rank 1 first does three exchanges with rank 3 and
 * sends at 3 (ends at 4).  Whatever the seed, rank 0 hears of the op from
 * 2 first, at 1, then of 1's at 4. */
static int order_fn(redcoll_comm *c, void *arg) {
  (void)arg;
  int me = redcoll_comm_rank(c);
  uint64_t v = 100 + (uint64_t)me, in[2] = {0, 0}, x = 0;
  t_op t[2];
  switch (me) {
  case 0:
    t_post(c, 0, UINT64_MAX, -1, 0, NULL, 0, 1, 1, &in[0], 8, &t[0]);
    t_post(c, 0, UINT64_MAX, -1, 0, NULL, 0, 2, 1, &in[1], 8, &t[1]);
    /* Wait for either: the first told must be the op from 2. */
    while (!t[0].ndone && !t[1].ndone) t_progress(c, UINT64_MAX);
    R.rc[0][0] = t[1].ndone && !t[0].ndone;
    R.rc[0][1] = t_wait(c, &t[0]);
    R.rc[0][2] = t_wait(c, &t[1]);
    R.at[0][0] = t[0].at;
    R.at[0][1] = t[1].at;
    R.data[0][0] = in[0];
    R.data[0][1] = in[1];
    break;
  case 1:
    for (int i = 0; i < 3; i++) raw_exchange(c, 3, 2, &v, 8, 3, 2, &x, 8);
    raw_send(c, 0, 1, &v, 8);
    break;
  case 2:
    raw_send(c, 0, 1, &v, 8);
    break;
  default:
    for (int i = 0; i < 3; i++) raw_exchange(c, 1, 2, &v, 8, 1, 2, &x, 8);
    break;
  }
  R.clock[me] = clock_of(c);
  return REDCOLL_OK;
}

static void test_done_order(void) {
  for (uint64_t seed = 1; seed <= 16; seed++) {
    redcoll_mock_config cfg = cfg_abg(1, 0, 0);
    cfg.seed = seed;
    CHECK_INT(run_case(4, &cfg, order_fn, NULL), REDCOLL_OK);
    CHECK_MSG(R.rc[0][0] == 1, "seed %d", (int)seed);
    CHECK_INT(R.rc[0][1], REDCOLL_OK);
    CHECK_INT(R.rc[0][2], REDCOLL_OK);
    CHECK_DBL(R.at[0][1], 1);
    CHECK_DBL(R.at[0][0], 4);
    CHECK_DBL(R.clock[0], 4);
    CHECK_INT(R.data[0][0], 101);
    CHECK_INT(R.data[0][1], 102);
  }
}

/* A poll (until 0) returns with nothing told when nothing has ended by the
 * rank's clock, and the rank goes on: rank 0 posts a receive from 1 on
 * channel 0, polls once, then sends to 1 on channel 4 and waits; rank 1
 * first receives that (blocking), then sends on channel 0.  With polls
 * that waited, this would deadlock. */
static int poll_fn(redcoll_comm *c, void *arg) {
  (void)arg;
  int me = redcoll_comm_rank(c);
  uint64_t v = 5, in = 0;
  if (me == 0) {
    t_op t;
    t_post(c, 0, UINT64_MAX, -1, 0, NULL, 0, 1, 3, &in, 8, &t);
    R.rc[0][0] = t_progress(c, 0);
    R.rc[0][1] = t.ndone;
    R.clock[0] = clock_of(c);
    R.rc[0][2] = t_exchange(c, 4, 1, 3, &v, 8, -1, 0, NULL, 0);
    /* A loop of polls ends too (it waits once a poll told nothing and
     * nothing happened since). */
    int polls = 0;
    while (!t.ndone) {
      t_progress(c, 0);
      polls++;
    }
    R.rc[0][3] = t.status;
    R.rc[0][4] = polls <= 3;
    R.at[0][0] = t.at;
    R.data[0][0] = in;
  } else {
    R.rc[1][0] = t_exchange(c, 4, -1, 0, NULL, 0, 0, 3, &in, 8);
    R.rc[1][1] = raw_send(c, 0, 3, &in, 8);
  }
  return REDCOLL_OK;
}

static void test_poll(void) {
  for (uint64_t seed = 1; seed <= 8; seed++) {
    redcoll_mock_config cfg = cfg_abg(1, 0, 0);
    cfg.seed = seed;
    CHECK_INT(run_case(2, &cfg, poll_fn, NULL), REDCOLL_OK);
    CHECK_INT(R.rc[0][0], REDCOLL_OK);
    CHECK_INT(R.rc[0][1], 0);
    CHECK_DBL(R.clock[0], 0);
    CHECK_INT(R.rc[0][2], REDCOLL_OK);
    CHECK_INT(R.rc[0][3], REDCOLL_OK);
    CHECK_INT(R.rc[0][4], 1);
    CHECK_DBL(R.at[0][0], 2);
    CHECK_INT(R.data[0][0], 5);
    CHECK_INT(R.rc[1][0], REDCOLL_OK);
    CHECK_INT(R.rc[1][1], REDCOLL_OK);
  }
}

/* progress with a bound: nothing ends before it, so the rank comes back
 * at the bound with nothing told (rank 1 sends at 10, the op ends at 11). */
static int bound_fn(redcoll_comm *c, void *arg) {
  (void)arg;
  int me = redcoll_comm_rank(c);
  uint64_t v = 5, in = 0;
  if (me == 0) {
    t_op t;
    t_post(c, 0, UINT64_MAX, -1, 0, NULL, 0, 1, 3, &in, 8, &t);
    R.rc[0][0] = t_progress(c, (uint64_t)(4 * NS));
    R.rc[0][1] = t.ndone;
    R.clock[0] = clock_of(c);
    R.rc[0][2] = t_wait(c, &t);
    R.at[0][0] = t.at;
  } else {
    for (int i = 0; i < 10; i++) c->ops->charge(c->impl, 1);
    raw_send(c, 0, 3, &v, 8);
  }
  return REDCOLL_OK;
}

static void test_progress_bound(void) {
  redcoll_mock_config cfg = cfg_abg(1, 0, 1);
  CHECK_INT(run_case(2, &cfg, bound_fn, NULL), REDCOLL_OK);
  CHECK_INT(R.rc[0][0], REDCOLL_OK);
  CHECK_INT(R.rc[0][1], 0);
  CHECK_DBL(R.clock[0], 4);
  CHECK_INT(R.rc[0][2], REDCOLL_OK);
  CHECK_DBL(R.at[0][0], 11);
}

/* A posted receive with a deadline of 5 whose message never comes times
 * out at 5: REDCOLL_ETIMEDOUT, the clock at 5, the report names the peer.
 * Rank 1 meanwhile waits (blocking, channel 4) for rank 0's word after
 * the timeout. */
static int deadline_fn(redcoll_comm *c, void *arg) {
  (void)arg;
  int me = redcoll_comm_rank(c);
  uint64_t v = 5, in = 0;
  if (me == 0) {
    t_op t;
    R.rc[0][0] = t_post(c, 0, (uint64_t)(5 * NS), -1, 0, NULL, 0, 1, 3, &in, 8, &t);
    R.rc[0][1] = t_wait(c, &t);
    R.at[0][0] = t.at;
    R.rc[0][2] = t_exchange(c, 4, 1, 3, &v, 8, -1, 0, NULL, 0);
    R.clock[0] = clock_of(c);
  } else {
    R.rc[1][0] = t_exchange(c, 4, -1, 0, NULL, 0, 0, 3, &in, 8);
    R.clock[1] = clock_of(c);
  }
  return REDCOLL_OK;
}

static void test_deadline(void) {
  char rep[512];
  redcoll_mock_config cfg = cfg_abg(1, 0, 0);
  cfg.report = rep;
  cfg.report_len = sizeof rep;
  CHECK_INT(run_case(2, &cfg, deadline_fn, NULL), REDCOLL_OK);
  CHECK_INT(R.rc[0][0], REDCOLL_OK);
  CHECK_INT(R.rc[0][1], REDCOLL_ETIMEDOUT);
  CHECK_DBL(R.at[0][0], 5);
  CHECK_INT(R.rc[0][2], REDCOLL_OK);
  CHECK_DBL(R.clock[0], 6);
  CHECK_INT(R.rc[1][0], REDCOLL_OK);
  CHECK_DBL(R.clock[1], 6);
  CHECK_MSG(strstr(rep, "rank 0: timed out at 5 waiting for rank 1 (posted recv from 1") != NULL,
            "%s", rep);
}

/* Both ranks post receives from each other and wait: a deadlock, reported
 * with the posted ops, told to both as REDCOLL_EDEADLOCK; later posts fail
 * at once. */
static int deadlock_fn(redcoll_comm *c, void *arg) {
  (void)arg;
  int me = redcoll_comm_rank(c);
  uint64_t in = 0;
  t_op t, u;
  R.rc[me][0] = t_post(c, 4, UINT64_MAX, -1, 0, NULL, 0, 1 - me, 3, &in, 8, &t);
  R.rc[me][1] = t_wait(c, &t);
  R.rc[me][2] = t_post(c, 4, UINT64_MAX, -1, 0, NULL, 0, 1 - me, 3, &in, 8, &u);
  R.rc[me][3] = u.ndone;
  return R.rc[me][1];
}

static void test_deadlock(void) {
  char rep[512];
  redcoll_mock_config cfg = cfg_abg(1, 0, 0);
  cfg.report = rep;
  cfg.report_len = sizeof rep;
  CHECK_INT(run_case(2, &cfg, deadlock_fn, NULL), REDCOLL_EDEADLOCK);
  for (int r = 0; r < 2; r++) {
    CHECK_INT(R.rc[r][0], REDCOLL_OK);
    CHECK_INT(R.rc[r][1], REDCOLL_EDEADLOCK);
    CHECK_INT(R.rc[r][2], REDCOLL_EDEADLOCK);
    CHECK_INT(R.rc[r][3], 0);
  }
  CHECK_MSG(strstr(rep, "deadlock: 2 rank(s) blocked, none can run\n"
                        "rank 0: posted recv from 1 tag 0x0000000000000003 8 bytes on channel 4\n"
                        "rank 1: posted recv from 0 tag 0x0000000000000003 8 bytes on channel 4\n") !=
                NULL,
            "%s", rep);
}

/* A rank blocked in an exchange and another in progress, each waiting for
 * the other on a channel where nothing will come: one deadlock. */
static int deadlock_mixed_fn(redcoll_comm *c, void *arg) {
  (void)arg;
  int me = redcoll_comm_rank(c);
  uint64_t in = 0, v = 1;
  if (me == 0) {
    t_op t;
    t_post(c, 0, UINT64_MAX, 1, 3, &v, 8, -1, 0, NULL, 0, &t);
    R.rc[0][0] = t_wait(c, &t);
  } else {
    R.rc[1][0] = t_exchange(c, 4, -1, 0, NULL, 0, 0, 3, &in, 8);
  }
  return REDCOLL_OK;
}

static void test_deadlock_mixed(void) {
  char rep[512];
  redcoll_mock_config cfg = cfg_abg(1, 0, 0);
  cfg.report = rep;
  cfg.report_len = sizeof rep;
  CHECK_INT(run_case(2, &cfg, deadlock_mixed_fn, NULL), REDCOLL_EDEADLOCK);
  CHECK_INT(R.rc[0][0], REDCOLL_EDEADLOCK);
  CHECK_INT(R.rc[1][0], REDCOLL_EDEADLOCK);
  CHECK_MSG(strstr(rep, "rank 0: posted send to 1 tag 0x0000000000000003 8 bytes\n"
                        "rank 1: recv from 0 tag 0x0000000000000003 8 bytes on channel 4\n") != NULL,
            "%s", rep);
}

/* cancel of channel group 4 by rank 1: its own posted op there ends with
 * the status given, rank 0's with REDCOLL_EABORTED; channel 0 goes on. */
static int cancel_fn(redcoll_comm *c, void *arg) {
  (void)arg;
  int me = redcoll_comm_rank(c);
  uint64_t in[2] = {0, 0}, v = 9;
  t_op t, u;
  if (me == 0) {
    /* Posted after the cancel, the op fails at once. */
    int rc = t_post(c, 5, UINT64_MAX, -1, 0, NULL, 0, 1, 3, &in[0], 8, &t);
    t_post(c, 0, UINT64_MAX, -1, 0, NULL, 0, 1, 3, &in[1], 8, &u);
    R.rc[0][0] = rc != REDCOLL_OK ? rc : t_wait(c, &t);
    R.rc[0][1] = t_wait(c, &u);
    R.data[0][0] = in[1];
  } else {
    t_post(c, 6, UINT64_MAX, -1, 0, NULL, 0, 0, 3, &in[0], 8, &t);
    c->ops->cancel(c->impl, 4, REDCOLL_EPROTO);
    R.rc[1][0] = t_wait(c, &t);
    R.rc[1][1] = raw_send(c, 0, 3, &v, 8);
    R.rc[1][2] = t_post(c, 4, UINT64_MAX, 0, 3, &v, 8, -1, 0, NULL, 0, &u);
  }
  return REDCOLL_OK;
}

static void test_cancel(void) {
  CHECK_INT(run_case(2, NULL, cancel_fn, NULL), REDCOLL_OK);
  CHECK_INT(R.rc[0][0], REDCOLL_EABORTED);
  CHECK_INT(R.rc[0][1], REDCOLL_OK);
  CHECK_INT(R.data[0][0], 9);
  CHECK_INT(R.rc[1][0], REDCOLL_EPROTO);
  CHECK_INT(R.rc[1][1], REDCOLL_OK);
  CHECK_INT(R.rc[1][2], REDCOLL_EABORTED);
}

/* abort ends every open op of every rank with REDCOLL_EABORTED. */
static int abort_fn(redcoll_comm *c, void *arg) {
  (void)arg;
  int me = redcoll_comm_rank(c);
  uint64_t in = 0;
  if (me < 2) {
    R.rc[me][0] = t_post_wait(c, 0, -1, 0, NULL, 0, 2, 3, &in, 8);
  } else {
    c->ops->abort(c->impl, REDCOLL_EPROTO);
  }
  return REDCOLL_OK;
}

static void test_abort(void) {
  CHECK_INT(run_case(3, NULL, abort_fn, NULL), REDCOLL_OK);
  CHECK_INT(R.rc[0][0], REDCOLL_EABORTED);
  CHECK_INT(R.rc[1][0], REDCOLL_EABORTED);
}

/* A message with another tag: REDCOLL_EMISMATCH on both posted ops. */
static int mismatch_fn(redcoll_comm *c, void *arg) {
  (void)arg;
  int me = redcoll_comm_rank(c);
  uint64_t v = 1, in = 0;
  if (me == 0) R.rc[0][0] = t_post_wait(c, 0, 1, 3, &v, 8, -1, 0, NULL, 0);
  else R.rc[1][0] = t_post_wait(c, 0, -1, 0, NULL, 0, 0, 4, &in, 8);
  return REDCOLL_OK;
}

static void test_mismatch(void) {
  CHECK_INT(run_case(2, NULL, mismatch_fn, NULL), REDCOLL_OK);
  CHECK_INT(R.rc[0][0], REDCOLL_EMISMATCH);
  CHECK_INT(R.rc[1][0], REDCOLL_EMISMATCH);
}

/* A fault on the peer: the posted op waiting for the dead rank ends with
 * REDCOLL_ETRANSPORT. */
static int fault_fn(redcoll_comm *c, void *arg) {
  (void)arg;
  int me = redcoll_comm_rank(c);
  uint64_t v = 1, in = 0;
  if (me == 0) {
    R.rc[0][0] = t_post_wait(c, 0, -1, 0, NULL, 0, 1, 3, &in, 8);
  } else {
    R.rc[1][0] = raw_send(c, 0, 3, &v, 8); /* call 0 fails: rank 1 dies */
  }
  return REDCOLL_OK;
}

/* Rank 1 posts a receive from 0 (which sends nothing), then dies at its
 * next call: that op of its own ends with REDCOLL_ETRANSPORT too, and so
 * does rank 2's send to it (posted before or after the death). */
static int fault_own_fn(redcoll_comm *c, void *arg) {
  (void)arg;
  int me = redcoll_comm_rank(c);
  uint64_t v = 1, in = 0;
  if (me == 1) {
    t_op t;
    R.rc[1][0] = t_post(c, 0, UINT64_MAX, -1, 0, NULL, 0, 0, 3, &in, 8, &t);
    R.rc[1][1] = raw_send(c, 0, 3, &v, 8); /* call 1 fails: rank 1 dies */
    R.rc[1][2] = t_wait(c, &t);
  } else if (me == 2) {
    R.rc[2][0] = t_post_wait(c, 0, 1, 3, &v, 8, -1, 0, NULL, 0);
  }
  return REDCOLL_OK;
}

static void test_fault(void) {
  redcoll_mock_config cfg = cfg_abg(1, 0, 0);
  cfg.fail_rank = 1;
  cfg.fail_after = 0;
  CHECK_INT(run_case(2, &cfg, fault_fn, NULL), REDCOLL_OK);
  CHECK_INT(R.rc[0][0], REDCOLL_ETRANSPORT);
  CHECK_INT(R.rc[1][0], REDCOLL_ETRANSPORT);
  cfg.fail_after = 1;
  CHECK_INT(run_case(3, &cfg, fault_own_fn, NULL), REDCOLL_OK);
  CHECK_INT(R.rc[1][0], REDCOLL_OK);
  CHECK_INT(R.rc[1][1], REDCOLL_ETRANSPORT);
  CHECK_INT(R.rc[1][2], REDCOLL_ETRANSPORT);
  CHECK_INT(R.rc[2][0], REDCOLL_ETRANSPORT);
}

/* done may post again (as the core does): a chain of 20 ping-pongs, each
 * posted from the done of the one before; 40 rounds. */
typedef struct chain {
  t_op t;
  int left;
  uint64_t v;
} chain;

static void chain_done(redcoll_transport_op *op, int status) {
  chain *ch = (chain *)op;
  redcoll_comm *c = ch->t.comm;
  int me = redcoll_comm_rank(c);
  if (!in_progress[me]) ch->t.outside = 1;
  if (status != REDCOLL_OK || --ch->left == 0) {
    ch->t.status = status;
    ch->t.ndone = 1;
    return;
  }
  ch->v++;
  redcoll_transport_ctx ctx = {UINT64_MAX, 0, 0};
  redcoll_transport_msg s = {1 - me, 1, &ch->v, 8}, r = {1 - me, 1, &ch->v, 8};
  int send = (ch->left % 2) == (me == 0);
  ch->t.op.done = chain_done;
  if (c->ops->post(c->impl, &ctx, send ? &s : NULL, send ? NULL : &r, &ch->t.op) != REDCOLL_OK)
    ch->t.ndone = 1;
}

static int chain_fn(redcoll_comm *c, void *arg) {
  (void)arg;
  int me = redcoll_comm_rank(c);
  chain ch;
  memset(&ch, 0, sizeof ch);
  ch.t.comm = c;
  ch.left = 41;
  ch.t.op.done = chain_done;
  in_progress[me] = 1; /* (not a done of the transport's) */
  chain_done(&ch.t.op, REDCOLL_OK); /* posts the first */
  in_progress[me] = 0;
  while (!ch.t.ndone) t_progress(c, UINT64_MAX);
  R.rc[me][0] = ch.t.status;
  R.rc[me][1] = ch.t.outside;
  R.data[me][0] = ch.v;
  R.clock[me] = clock_of(c);
  return REDCOLL_OK;
}

static void test_post_from_done(void) {
  redcoll_mock_config cfg = cfg_abg(1, 0, 0);
  CHECK_INT(run_case(2, &cfg, chain_fn, NULL), REDCOLL_OK);
  for (int r = 0; r < 2; r++) {
    CHECK_INT(R.rc[r][0], REDCOLL_OK);
    CHECK_INT(R.rc[r][1], 0);
    CHECK_DBL(R.clock[r], 40);
  }
}

/* A blocking exchange while posted ops are open on the same rank: the
 * exchange returns once it is done, the posted op is told in the next
 * progress.  Alpha 1, beta 0: the exchange ends at 1, the posted op (rank
 * 1 sends it after its exchange) at 2. */
static int mixed_fn(redcoll_comm *c, void *arg) {
  (void)arg;
  int me = redcoll_comm_rank(c);
  uint64_t v = 3, in = 0, x = 0;
  if (me == 0) {
    t_op t;
    t_post(c, 4, UINT64_MAX, -1, 0, NULL, 0, 1, 3, &in, 8, &t);
    R.rc[0][0] = t_exchange(c, 0, 1, 2, &v, 8, 1, 2, &x, 8);
    R.clock[0] = clock_of(c);
    R.rc[0][1] = t.ndone;
    R.rc[0][2] = t_wait(c, &t);
    R.at[0][0] = t.at;
  } else {
    R.rc[1][0] = t_exchange(c, 0, 0, 2, &v, 8, 0, 2, &x, 8);
    R.rc[1][1] = t_exchange(c, 4, 0, 3, &v, 8, -1, 0, NULL, 0);
  }
  return REDCOLL_OK;
}

static void test_exchange_among_posted(void) {
  redcoll_mock_config cfg = cfg_abg(1, 0, 0);
  CHECK_INT(run_case(2, &cfg, mixed_fn, NULL), REDCOLL_OK);
  CHECK_INT(R.rc[0][0], REDCOLL_OK);
  CHECK_DBL(R.clock[0], 1);
  CHECK_INT(R.rc[0][1], 0);
  CHECK_INT(R.rc[0][2], REDCOLL_OK);
  CHECK_DBL(R.at[0][0], 2);
}

/* Random posted traffic: every rank posts, in a seeded order, an op per
 * (peer, channel) pair it sends to or receives from, on channels 0, 4 and
 * 8, with sizes from the seed, and waits for all; same seed, same trace
 * and clocks byte for byte.  (Other seeds give other clocks here: transfers
 * that contend for a link take it in the order they matched.) */
#define RP 5

static uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

static int random_fn(redcoll_comm *c, void *arg) {
  (void)arg;
  int me = redcoll_comm_rank(c), p = redcoll_comm_size(c);
  enum { NCH = 3 };
  t_op t[2 * RP * NCH];
  uint64_t out[RP * NCH][4], in[RP * NCH][4];
  int idx[2 * RP * NCH], n = 0;
  /* Op k: k < p*NCH sends to peer k/NCH on channel 4*(k%NCH); others
   * receive.  The order of posting is a permutation from the rank. */
  for (int k = 0; k < 2 * p * NCH; k++) idx[n++] = k;
  for (int i = n - 1; i > 0; i--) {
    int j = (int)(mix((uint64_t)(me * 1000 + i)) % (uint64_t)(i + 1));
    int x = idx[i];
    idx[i] = idx[j];
    idx[j] = x;
  }
  int posted = 0;
  for (int i = 0; i < n; i++) {
    int k = idx[i], send = k < p * NCH, kk = send ? k : k - p * NCH;
    int peer = kk / NCH;
    uint64_t ch = 4 * (uint64_t)(kk % NCH);
    if (peer == me) continue;
    /* Length of the message from s to d on ch: from both ends' view. */
    int s = send ? me : peer, d = send ? peer : me;
    size_t len = 8 * (1 + mix((uint64_t)(s * 97 + d * 13) + ch) % 4);
    for (int w = 0; w < 4; w++) out[kk][w] = (uint64_t)(me * 1000 + kk * 10 + w);
    if (send)
      t_post(c, ch, UINT64_MAX, peer, 1 + ch, out[kk], len, -1, 0, NULL, 0, &t[posted++]);
    else
      t_post(c, ch, UINT64_MAX, -1, 0, NULL, 0, peer, 1 + ch, in[kk], len, &t[posted++]);
    if (i % 3 == 2) c->ops->charge(c->impl, 4);
  }
  int bad = 0;
  for (int i = 0; i < posted; i++)
    if (t_wait(c, &t[i]) != REDCOLL_OK) bad++;
  /* The data: from peer q on ch, word 0 is q*1000 + (me*NCH + ch/4)*10. */
  for (int q = 0; q < p; q++)
    for (int k = 0; k < NCH; k++)
      if (q != me && in[q * NCH + k][0] != (uint64_t)(q * 1000 + (me * NCH + k) * 10)) bad++;
  R.rc[me][0] = bad;
  R.clock[me] = clock_of(c);
  return REDCOLL_OK;
}

static char *run_random(uint64_t seed, double *clocks) {
  redcoll_mock_config cfg = cfg_abg(1, 0.5, 0.25);
  cfg.seed = seed;
  cfg.eager_limit = 16;
  FILE *tr = tmpfile();
  cfg.trace = tr;
  CHECK_INT(run_case(RP, &cfg, random_fn, NULL), REDCOLL_OK);
  for (int r = 0; r < RP; r++) {
    CHECK_INT(R.rc[r][0], 0);
    clocks[r] = R.clock[r];
  }
  fflush(tr);
  long len = ftell(tr);
  char *s = calloc((size_t)len + 1, 1);
  rewind(tr);
  if (s != NULL && len > 0 && fread(s, 1, (size_t)len, tr) != (size_t)len) s[0] = '\0';
  fclose(tr);
  return s;
}

static void test_random_deterministic(void) {
  double c1[RP], c2[RP];
  for (uint64_t seed = 1; seed <= 6; seed++) {
    char *a = run_random(seed, c1);
    char *b = run_random(seed, c2);
    CHECK(a != NULL && b != NULL && strcmp(a, b) == 0);
    for (int r = 0; r < RP; r++) CHECK_DBL(c1[r], c2[r]);
    free(a);
    free(b);
  }
}

/* A world of the program's threads: two ranks, each a thread, post and
 * progress as the coroutines do. */
typedef struct {
  redcoll_comm *c;
} world_arg;

static void *world_thread(void *arg) {
  world_arg *w = arg;
  ring_fn(w->c, NULL);
  redcoll_comm_destroy(w->c); /* a rank counts as running until then */
  return NULL;
}

static void test_world(void) {
  enum { WP = 3 };
  redcoll_comm *comms[WP];
  redcoll_mock_config cfg = cfg_abg(1, 0, 0);
  CHECK_INT(redcoll_mock_world_create(WP, &cfg, comms), REDCOLL_OK);
  pthread_t th[WP];
  world_arg wa[WP];
  for (int i = 0; i < WP; i++) {
    wa[i].c = comms[i];
    pthread_create(&th[i], NULL, world_thread, &wa[i]);
  }
  for (int i = 0; i < WP; i++) pthread_join(th[i], NULL);
  for (int i = 0; i < WP; i++) {
    CHECK_INT(R.rc[i][2], REDCOLL_OK);
    CHECK_INT(R.data[i][0], 1000 + (i + WP - 1) % WP);
    CHECK_DBL(R.clock[i], 1);
  }
}

/* ---- nonblocking collectives of the core on the simulator -------------- */

/* Random mixes: up to NB_MAX outstanding collectives of 11 kinds on a
 * communicator and its dup, all started, then completed by redcoll_test
 * calls in an order of the seed's and the rank's, by redcoll_wait on some
 * and redcoll_waitall on the rest; every result against the sum computed
 * here.  Integers only, so every algorithm gives exact results. */
#define NB_MAX 64
#define NB_P 13
#define NB_CNT 4
enum { K_ALLREDUCE, K_REDUCE, K_ALLGATHER, K_BCAST, K_BARRIER, K_SCAN, K_EXSCAN, K_ALLTOALL,
       K_RSB, K_GATHER, K_SCATTER, K_KINDS };

typedef struct nb_req {
  int kind, n, root, on_dup;
  int64_t in[NB_P * NB_CNT], out[NB_P * NB_CNT];
  redcoll_request *req;
  int status;
  int callback;
} nb_req;

typedef struct nb_arg {
  uint64_t seed;
  int nreq;
  int bad[NB_P];       /* wrong words per rank */
  int status[NB_P];    /* the first failed status per rank */
  int callbacks[NB_P];
} nb_arg;

static void nb_cb(redcoll_request *req, int status, void *arg) {
  (void)req;
  nb_req *q = arg;
  q->callback++;
  q->status = status;
}

/* The value rank r puts in word i of request k's send buffer. */
static int64_t nb_val(int r, int k, int i) { return (int64_t)(r + 1) * 1000 + (int64_t)k * 37 + i; }

static int nb_start(redcoll_comm *c, nb_req *q, int me, int p, int k) {
  int n = q->n;
  for (int i = 0; i < p * n; i++) q->in[i] = nb_val(me, k, i);
  memset(q->out, 0, sizeof q->out);
  const redcoll_op *sum = REDCOLL_SUM;
  switch (q->kind) {
  case K_ALLREDUCE:
    return redcoll_iallreduce(c, q->in, q->out, (size_t)n, REDCOLL_INT64, sum, &q->req);
  case K_REDUCE:
    return redcoll_ireduce(c, q->in, q->out, (size_t)n, REDCOLL_INT64, sum, q->root, &q->req);
  case K_ALLGATHER:
    return redcoll_iallgather(c, q->in, q->out, (size_t)n, REDCOLL_INT64, &q->req);
  case K_BCAST:
    if (me == q->root) memcpy(q->out, q->in, (size_t)n * sizeof(int64_t));
    return redcoll_ibcast(c, q->out, (size_t)n, REDCOLL_INT64, q->root, &q->req);
  case K_BARRIER:
    return redcoll_ibarrier(c, &q->req);
  case K_SCAN:
    return redcoll_iscan(c, q->in, q->out, (size_t)n, REDCOLL_INT64, sum, &q->req);
  case K_EXSCAN:
    return redcoll_iexscan(c, q->in, q->out, (size_t)n, REDCOLL_INT64, sum, &q->req);
  case K_ALLTOALL:
    return redcoll_ialltoall(c, q->in, q->out, (size_t)n, REDCOLL_INT64, &q->req);
  case K_RSB:
    return redcoll_ireduce_scatter_block(c, q->in, q->out, (size_t)n, REDCOLL_INT64, sum,
                                         &q->req);
  case K_GATHER:
    return redcoll_igather(c, q->in, q->out, (size_t)n, REDCOLL_INT64, q->root, &q->req);
  default:
    return redcoll_iscatter(c, q->in, q->out, (size_t)n, REDCOLL_INT64, q->root, &q->req);
  }
}

/* Wrong words of request k's result on rank me, computed sequentially. */
static int nb_check(const nb_req *q, int me, int p, int k) {
  int n = q->n, bad = 0;
  int64_t want;
  for (int j = 0; j < p; j++)
    for (int i = 0; i < n; i++) {
      int w = j * n + i; /* a word of a p-block result */
      int in_first = j == 0;
      switch (q->kind) {
      case K_ALLREDUCE:
      case K_REDUCE:
        if (!in_first || (q->kind == K_REDUCE && me != q->root)) continue;
        want = 0;
        for (int r = 0; r < p; r++) want += nb_val(r, k, i);
        break;
      case K_BCAST:
        if (!in_first) continue;
        want = nb_val(q->root, k, i);
        break;
      case K_SCAN:
      case K_EXSCAN:
        if (!in_first || (q->kind == K_EXSCAN && me == 0)) continue;
        want = 0;
        for (int r = 0; r < me + (q->kind == K_SCAN); r++) want += nb_val(r, k, i);
        break;
      case K_ALLGATHER:
      case K_GATHER:
        if (q->kind == K_GATHER && me != q->root) continue;
        want = nb_val(j, k, i);
        break;
      case K_ALLTOALL: /* block j comes from rank j, its block me */
        want = nb_val(j, k, me * n + i);
        break;
      case K_RSB:
        if (!in_first) continue;
        want = 0;
        for (int r = 0; r < p; r++) want += nb_val(r, k, me * n + i);
        break;
      case K_SCATTER:
        if (!in_first) continue;
        want = nb_val(q->root, k, me * n + i);
        break;
      default:
        continue;
      }
      if (q->out[w] != want) bad++;
    }
  return bad;
}

static int nb_fn(redcoll_comm *c, void *arg) {
  nb_arg *a = arg;
  int me = redcoll_comm_rank(c), p = redcoll_comm_size(c);
  redcoll_comm *d = NULL;
  int rc = redcoll_comm_dup(c, &d);
  if (rc != REDCOLL_OK) return rc;
  int n = a->nreq;
  nb_req *q = calloc((size_t)n, sizeof *q);
  if (q == NULL) return REDCOLL_ENOMEM;
  int first = REDCOLL_OK;
  /* The same shapes on every rank: from the seed only. */
  for (int k = 0; k < n; k++) {
    uint64_t h = mix(a->seed * 1000003 + (uint64_t)k);
    q[k].kind = (int)(h % K_KINDS);
    q[k].n = 1 + (int)((h >> 8) % NB_CNT);
    q[k].root = (int)((h >> 16) % (uint64_t)p);
    q[k].on_dup = (int)((h >> 24) & 1);
    rc = nb_start(q[k].on_dup ? d : c, &q[k], me, p, k);
    if (rc != REDCOLL_OK && first == REDCOLL_OK) first = rc;
    if (rc == REDCOLL_OK && (h >> 32) % 4 == 0)
      redcoll_request_set_callback(q[k].req, nb_cb, &q[k]);
  }
  /* Tests in this rank's order, then waits on a few, then the rest. */
  uint64_t g = mix(a->seed ^ ((uint64_t)me << 40));
  for (int t = 0; t < 3 * n; t++) {
    g = mix(g);
    int k = (int)(g % (uint64_t)n), done = 0;
    if (q[k].req == NULL) continue;
    rc = redcoll_test(q[k].req, &done);
    if (done) {
      q[k].req = NULL;
      if (rc != REDCOLL_OK && first == REDCOLL_OK) first = rc;
    } else if (rc != REDCOLL_OK && first == REDCOLL_OK) {
      first = rc;
    }
  }
  for (int k = (int)(g % 5); k < n; k += 5) {
    rc = redcoll_wait(q[k].req);
    q[k].req = NULL;
    if (rc != REDCOLL_OK && first == REDCOLL_OK) first = rc;
  }
  redcoll_request **all = malloc((size_t)n * sizeof *all);
  for (int k = 0; k < n; k++) all[k] = q[k].req;
  rc = redcoll_waitall(all, (size_t)n);
  if (rc != REDCOLL_OK && first == REDCOLL_OK) first = rc;
  free(all);
  for (int k = 0; k < n; k++) {
    a->bad[me] += nb_check(&q[k], me, p, k);
    if (q[k].callback) a->callbacks[me]++;
    if (q[k].callback > 1 || (q[k].callback && q[k].status != REDCOLL_OK)) a->bad[me]++;
  }
  a->status[me] = first;
  free(q);
  redcoll_comm_destroy(d);
  return first;
}

static void test_colls_random(void) {
  int runs = 0;
  for (int p = 2; p <= NB_P; p++)
    for (uint64_t seed = 1; seed <= 6; seed++) {
      nb_arg a;
      memset(&a, 0, sizeof a);
      a.seed = seed * 7919 + (uint64_t)p;
      a.nreq = 1 + (int)(mix(a.seed) % NB_MAX);
      if (seed == 1) a.nreq = NB_MAX;
      redcoll_mock_config cfg = cfg_abg(1, 0.001, 0.0005);
      cfg.seed = a.seed;
      cfg.eager_limit = seed % 2 ? 0 : 64; /* rendezvous and eager */
      int rc = redcoll_mock_run(p, &cfg, nb_fn, &a, NULL);
      CHECK_MSG(rc == REDCOLL_OK, "p %d seed %d: %s", p, (int)seed, redcoll_status_name(rc));
      for (int r = 0; r < p; r++)
        CHECK_MSG(a.bad[r] == 0 && a.status[r] == REDCOLL_OK, "p %d seed %d rank %d: %d wrong, %s",
                  p, (int)seed, r, a.bad[r], redcoll_status_name(a.status[r]));
      runs++;
    }
  CHECK_INT(runs, 12 * 6);
}

/* Same seed, same clocks and trace: a run of nb_fn twice. */
static void test_colls_deterministic(void) {
  for (int p = 3; p <= 7; p += 4) {
    char *tr[2];
    redcoll_mock_stats st[2][NB_P];
    for (int i = 0; i < 2; i++) {
      nb_arg a;
      memset(&a, 0, sizeof a);
      a.seed = 42;
      a.nreq = 40;
      redcoll_mock_config cfg = cfg_abg(1, 0.01, 0.005);
      cfg.seed = 42;
      FILE *f = tmpfile();
      cfg.trace = f;
      CHECK_INT(redcoll_mock_run(p, &cfg, nb_fn, &a, st[i]), REDCOLL_OK);
      long len = ftell(f);
      tr[i] = calloc((size_t)len + 1, 1);
      rewind(f);
      if (len > 0 && fread(tr[i], 1, (size_t)len, f) != (size_t)len) tr[i][0] = '\0';
      fclose(f);
    }
    CHECK(strcmp(tr[0], tr[1]) == 0 && tr[0][0] != '\0');
    for (int r = 0; r < p; r++) {
      CHECK_DBL(st[0][r].time, st[1][r].time);
      CHECK_INT(st[0][r].rounds, st[1][r].rounds);
      CHECK_INT(st[0][r].bytes_sent, st[1][r].bytes_sent);
    }
    free(tr[0]);
    free(tr[1]);
  }
}

/* Overlap.  Two allreduces (recursive doubling forced) of M int64 each, on
 * a communicator and on its dup, both outstanding at once, against the
 * model: alpha A, beta B per byte, gamma G per byte, m = 8M bytes, and
 * links as docs/simulator.md says (a rank's sends queue on its outgoing
 * link for m*B each, its receives on its incoming link, alpha is latency).
 *
 * p = 2, one step.  Both ranks post step 1 of the first (X) and then of
 * the second (Y) at t = 0.  X's transfers take the links first: [0, mB],
 * ending at A + mB; Y's follow: [mB, 2mB], ending at A + 2mB.  Released at
 * A + mB, a rank reduces X (mG): X ends at A + mB + mG.  Y's reduce starts
 * at max(A + mB + mG, A + 2mB):
 *   T2 = A + max(mB + mG, 2mB) + mG.
 * p = 4, two steps (partners r^1, then r^2).  Step 1 as above: X1 ends at
 * A + mB, Y1 at A + 2mB.  X reduces and posts X2 at c1 = A + mB + mG,
 * whose transfer starts at max(c1, 2mB) (the link carries Y1 until 2mB)
 * = c1 here (G >= B), ending at e = c1 + A + mB.  Y1 is told at
 * max(c1, A + 2mB) = c1 (G >= B), Y reduces and posts Y2 at c2 = c1 + mG;
 * the link is free from c1 + mB <= c2, so Y2 ends at c2 + A + mB.  X2 is
 * told at max(c2, e) and reduced; Y2 then at max(that + mG, c2 + A + mB):
 *   T4 = max(max(c2, e) + mG, c2 + A + mB) + mG.
 * With A = 1, B = 0.001, G = 0.002 and M = 1000 (m = 8000): mB = 8,
 * mG = 16, so T2 = 1 + 24 + 16 = 41, and c1 = 25, e = 34, c2 = 41,
 * T4 = max(57, 50) + 16 = 73.
 * Blocking, one after the other, each allreduce takes k(A + mB + mG)
 * (k = 1, 2 steps): 2 * 25 = 50 and 2 * 50 = 100; the overlap saves 9 and
 * 27. */
typedef struct ov_arg {
  int blocking;
  double t[NB_P];
  int status[NB_P];
} ov_arg;

#define OV_M 1000

static int ov_fn(redcoll_comm *c, void *arg) {
  ov_arg *a = arg;
  int me = redcoll_comm_rank(c);
  redcoll_comm *d = NULL;
  int rc = redcoll_comm_dup(c, &d);
  if (rc == REDCOLL_OK) rc = redcoll_comm_set_algorithm(c, REDCOLL_COLL_ALLREDUCE,
                                                        REDCOLL_ALGO_RECURSIVE_DOUBLING);
  if (rc == REDCOLL_OK) rc = redcoll_comm_set_algorithm(d, REDCOLL_COLL_ALLREDUCE,
                                                        REDCOLL_ALGO_RECURSIVE_DOUBLING);
  if (rc != REDCOLL_OK) return rc;
  int64_t *in = malloc(2 * OV_M * sizeof *in), *out = malloc(2 * OV_M * sizeof *out);
  for (int i = 0; i < 2 * OV_M; i++) in[i] = me + i;
  redcoll_mock_stats s0, s1;
  redcoll_mock_comm_stats(c, &s0);
  if (a->blocking) {
    rc = redcoll_allreduce(c, in, out, OV_M, REDCOLL_INT64, REDCOLL_SUM);
    if (rc == REDCOLL_OK)
      rc = redcoll_allreduce(d, in + OV_M, out + OV_M, OV_M, REDCOLL_INT64, REDCOLL_SUM);
  } else {
    redcoll_request *r[2] = {NULL, NULL};
    rc = redcoll_iallreduce(c, in, out, OV_M, REDCOLL_INT64, REDCOLL_SUM, &r[0]);
    if (rc == REDCOLL_OK)
      rc = redcoll_iallreduce(d, in + OV_M, out + OV_M, OV_M, REDCOLL_INT64, REDCOLL_SUM, &r[1]);
    int rc2 = redcoll_waitall(r, 2);
    if (rc == REDCOLL_OK) rc = rc2;
  }
  redcoll_mock_comm_stats(c, &s1);
  a->t[me] = s1.time - s0.time;
  int p = redcoll_comm_size(c);
  for (int i = 0; i < 2 * OV_M && rc == REDCOLL_OK; i++)
    if (out[i] != (int64_t)p * (p - 1) / 2 + (int64_t)p * i) rc = -1;
  a->status[me] = rc;
  free(in);
  free(out);
  redcoll_comm_destroy(d);
  return rc;
}

static void test_overlap(void) {
  const double A = 1, B = 0.001, G = 0.002, m = 8.0 * OV_M;
  double c1 = A + m * B + m * G, e = c1 + A + m * B, c2 = c1 + m * G;
  double t2 = A + fmax(m * B + m * G, 2 * m * B) + m * G;
  double t4 = fmax(fmax(c2, e) + m * G, c2 + A + m * B) + m * G;
  CHECK_DBL(t2, 41);
  CHECK_DBL(t4, 73);
  for (int p = 2; p <= 4; p += 2)
    for (uint64_t seed = 1; seed <= 4; seed++)
      for (int blocking = 0; blocking < 2; blocking++) {
        ov_arg a;
        memset(&a, 0, sizeof a);
        a.blocking = blocking;
        redcoll_mock_config cfg = cfg_abg(A, B, G);
        cfg.seed = seed;
        CHECK_INT(redcoll_mock_run(p, &cfg, ov_fn, &a, NULL), REDCOLL_OK);
        double want = blocking ? (p == 2 ? 2 : 4) * (A + m * B + m * G) : (p == 2 ? t2 : t4);
        for (int r = 0; r < p; r++) {
          CHECK_INT(a.status[r], REDCOLL_OK);
          CHECK_MSG(a.t[r] == want, "p %d seed %d %s rank %d: %.17g, model %.17g", p, (int)seed,
                    blocking ? "blocking" : "overlapped", r, a.t[r], want);
        }
        if (seed == 1 && !blocking) printf("  overlap p=%d: simulated %.17g, model %.17g\n", p,
                                           a.t[0], want);
      }
}

/* Through the core: a nonblocking allreduce that rank p-1 never joins.
 * Without a deadline the run is a deadlock, with one the others time out. */
typedef struct stuck_arg {
  uint64_t deadline_ms;
  int status[NB_P];
} stuck_arg;

static int stuck_fn(redcoll_comm *c, void *arg) {
  stuck_arg *a = arg;
  int me = redcoll_comm_rank(c), p = redcoll_comm_size(c);
  if (a->deadline_ms) redcoll_comm_set_deadline(c, a->deadline_ms);
  int64_t v = me, s = 0;
  if (me == p - 1) {
    a->status[me] = REDCOLL_OK;
    return REDCOLL_OK;
  }
  redcoll_request *r = NULL;
  int rc = redcoll_iallreduce(c, &v, &s, 1, REDCOLL_INT64, REDCOLL_SUM, &r);
  if (rc == REDCOLL_OK) rc = redcoll_wait(r);
  a->status[me] = rc;
  return rc;
}

static void test_colls_deadlock_timeout(void) {
  for (int p = 3; p <= 5; p++) {
    stuck_arg a;
    memset(&a, 0, sizeof a);
    char rep[2048];
    redcoll_mock_config cfg = cfg_abg(1, 0, 0);
    cfg.report = rep;
    cfg.report_len = sizeof rep;
    CHECK_INT(redcoll_mock_run(p, &cfg, stuck_fn, &a, NULL), REDCOLL_EDEADLOCK);
    CHECK_MSG(strstr(rep, "deadlock:") != NULL && strstr(rep, "posted") != NULL, "%s", rep);
    for (int r = 0; r < p - 1; r++)
      CHECK_MSG(a.status[r] == REDCOLL_EDEADLOCK || a.status[r] == REDCOLL_EABORTED,
                "p %d rank %d: %s", p, r, redcoll_status_name(a.status[r]));
    int dl = 0;
    for (int r = 0; r < p - 1; r++) dl += a.status[r] == REDCOLL_EDEADLOCK;
    CHECK(dl > 0);

    memset(&a, 0, sizeof a);
    a.deadline_ms = 50;
    CHECK_INT(redcoll_mock_run(p, &cfg, stuck_fn, &a, NULL), REDCOLL_ETIMEDOUT);
    CHECK_MSG(strstr(rep, "timed out at 50 waiting for rank") != NULL, "%s", rep);
    for (int r = 0; r < p - 1; r++)
      CHECK_MSG(a.status[r] == REDCOLL_ETIMEDOUT || a.status[r] == REDCOLL_EABORTED,
                "p %d rank %d: %s", p, r, redcoll_status_name(a.status[r]));
    CHECK(a.status[0] == REDCOLL_ETIMEDOUT || a.status[1] == REDCOLL_ETIMEDOUT);
  }
}

TEST_MAIN(TEST(test_post_ring), TEST(test_post_channels), TEST(test_links),
          TEST(test_blocking_unchanged), TEST(test_done_order), TEST(test_poll),
          TEST(test_progress_bound), TEST(test_deadline), TEST(test_deadlock),
          TEST(test_deadlock_mixed), TEST(test_cancel), TEST(test_abort), TEST(test_mismatch),
          TEST(test_fault), TEST(test_post_from_done), TEST(test_exchange_among_posted),
          TEST(test_random_deterministic), TEST(test_world), TEST(test_colls_random),
          TEST(test_colls_deterministic), TEST(test_overlap), TEST(test_colls_deadlock_timeout))
