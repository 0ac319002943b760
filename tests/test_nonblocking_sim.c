/*
 * The simulator as a version 4 transport: posted exchanges (post) told by
 * progress, driven straight through the vtable (tests/raw.h): matching per
 * channel, done only inside the poster's own progress and in the order the
 * ops ended, the links (a rank's sends queue on its outgoing link, its
 * receives on its incoming link, the two directions at once), polls,
 * deadlines, deadlock, cancel, abort, mismatch, a blocking exchange among
 * posted ones, determinism, and a world of the program's threads.
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

static void test_fault(void) {
  redcoll_mock_config cfg = cfg_abg(1, 0, 0);
  cfg.fail_rank = 1;
  cfg.fail_after = 0;
  CHECK_INT(run_case(2, &cfg, fault_fn, NULL), REDCOLL_OK);
  CHECK_INT(R.rc[0][0], REDCOLL_ETRANSPORT);
  CHECK_INT(R.rc[1][0], REDCOLL_ETRANSPORT);
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

TEST_MAIN(TEST(test_post_ring), TEST(test_post_channels), TEST(test_links),
          TEST(test_blocking_unchanged), TEST(test_done_order), TEST(test_poll),
          TEST(test_progress_bound), TEST(test_deadline), TEST(test_deadlock),
          TEST(test_deadlock_mixed), TEST(test_cancel), TEST(test_abort), TEST(test_mismatch),
          TEST(test_fault), TEST(test_post_from_done), TEST(test_exchange_among_posted),
          TEST(test_random_deterministic), TEST(test_world))
