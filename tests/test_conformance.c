/*
 * The transport conformance suite: one set of rank programs that drive a
 * transport through its vtable (c->ops->send and friends, no algorithm in
 * between), run on every transport in `runners`.  A transport is added with
 * one line in that table: its name, a function that runs a rank program on
 * p ranks, the size of its large-message case, and whether its sends are
 * eager.  The TCP transport (tcp_run from tcp_runner.h, whose ranks are
 * processes: ranks report their failures through their return status) is
 * in the table when the build defines REDCOLL_TEST_TCP (libuv found), the
 * shared-memory transport (shm_runner.h: forked processes, with
 * cross-memory attach and with the queue fallback forced) when it defines
 * REDCOLL_TEST_SHM (Linux).
 *
 * Cases: several messages between pairs arrive in order with their tags and
 * lengths; a tag or length mismatch fails both sides with REDCOLL_EMISMATCH
 * and writes nothing beyond the receive length; zero-length messages;
 * sendrecv with dst != src (shifts by 1 and by 3) and different lengths in
 * the two directions; large messages; rings of concurrent sendrecvs; abort
 * wakes blocked peers and fails later calls; on a transport with channels,
 * a message of one channel never meets a receive of another.
 *
 * Rank programs run on several threads at once, so they do not use CHECK
 * (its counters are not thread-safe): each rank records its failures in its
 * own slot of the case's argument, prints them and returns REDCOLL_EPROTO,
 * so that the run fails also when the ranks are processes.
 */
#include <stdarg.h>
#include <time.h>

#include "raw.h"
#include "redcoll/mock.h"
#include "redcoll/threads.h"
#include "test.h"
#ifdef REDCOLL_TEST_TCP
#include "tcp_runner.h"
#endif
#ifdef REDCOLL_TEST_SHM
#include "shm_runner.h"
#endif

/* ---- the transports --------------------------------------------------------- */

typedef struct conf_runner {
  const char *name;
  /* Runs fn on p ranks of a fresh world; returns what the runner returns. */
  int (*run)(int p, redcoll_rank_main fn, void *arg);
  size_t large; /* bytes of the large-message case */
  /* 1: a send may complete once its bytes are handed to the network (TCP),
   * so the sender of a mismatched message may see REDCOLL_OK; 0: sends
   * meet their receive (rendezvous) and both sides see the mismatch. */
  int eager;
} conf_runner;

static int run_mock(int p, redcoll_rank_main fn, void *arg) {
  redcoll_mock_config cfg;
  redcoll_mock_config_init(&cfg);
  cfg.stack_size = (size_t)2 << 20; /* room for the sanitizers' own use */
  return redcoll_mock_run(p, &cfg, fn, arg, NULL);
}

/* A bug shows as a timeout within the test's own time limit, not a hang. */
static int run_threads(int p, redcoll_rank_main fn, void *arg) {
  redcoll_threads_config cfg;
  redcoll_threads_config_init(&cfg);
  cfg.wait_timeout_ms = 60000;
  return redcoll_threads_run_config(p, &cfg, fn, arg, NULL);
}

#ifdef REDCOLL_TEST_TCP
/* Forked processes over 127.0.0.1; a hung rank is killed by the deadline. */
static int run_tcp(int p, redcoll_rank_main fn, void *arg) {
  tcp_run_opts o;
  memset(&o, 0, sizeof o);
  o.timeout_ms = 30000;
  o.deadline_s = 60;
  return tcp_run_opts_run(p, fn, arg, &o);
}
#endif

#ifdef REDCOLL_TEST_SHM
/* Forked processes over a shared segment; large messages by cross-memory
 * attach where the kernel allows it (run_shm), or forced through the
 * queues, the fallback (run_shm_queue). */
static int run_shm_copy(int p, redcoll_rank_main fn, void *arg, int copy) {
  shm_run_opts o;
  shm_run_opts_init(&o);
  o.copy = copy;
  o.timeout_ms = 30000;
  o.deadline_s = 60;
  return shm_run_opts_run(p, fn, arg, &o);
}
static int run_shm(int p, redcoll_rank_main fn, void *arg) {
  return run_shm_copy(p, fn, arg, REDCOLL_SHM_COPY_AUTO);
}
static int run_shm_queue(int p, redcoll_rank_main fn, void *arg) {
  return run_shm_copy(p, fn, arg, REDCOLL_SHM_COPY_QUEUE);
}
#endif

static const conf_runner runners[] = {
    {"mock", run_mock, (size_t)4 << 20, 0},
    {"threads", run_threads, (size_t)16 << 20, 0},
#ifdef REDCOLL_TEST_TCP
    {"tcp", run_tcp, (size_t)12 << 20, 1},
#endif
#ifdef REDCOLL_TEST_SHM
    {"shm", run_shm, (size_t)16 << 20, 1},
    {"shm_queue", run_shm_queue, (size_t)16 << 20, 1},
#endif
};

/* ---- per-rank bookkeeping ------------------------------------------------------ */

#define MAXP 16

typedef struct conf_arg {
  const conf_runner *tr;
  const char *name; /* of the case */
  redcoll_rank_main fn;
  int p;
  int param;
  int fails[MAXP];
  char first[MAXP][200];
} conf_arg;

static void rank_fail(conf_arg *a, int rank, int line, const char *fmt, ...) {
  if (a->fails[rank]++ > 0) return;
  int n = snprintf(a->first[rank], sizeof a->first[rank], "line %d: ", line);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(a->first[rank] + n, sizeof a->first[rank] - (size_t)n, fmt, ap);
  va_end(ap);
}

#define RCHECK(cond)                                                    \
  do {                                                                  \
    if (!(cond)) rank_fail(a, me, __LINE__, "%s", #cond);               \
  } while (0)
#define RCHECK_RC(expr, want)                                           \
  do {                                                                  \
    int rc_ = (expr);                                                   \
    if (rc_ != (want))                                                  \
      rank_fail(a, me, __LINE__, "%s returned %s, want %s", #expr,      \
                redcoll_status_name(rc_), redcoll_status_name(want));   \
  } while (0)

#define tsend raw_send
#define trecv raw_recv
#define tsendrecv raw_exchange

/* The k-th byte of the message number `msg` from src to dst. */
static uint8_t pat(int src, int dst, int msg, size_t k) {
  return (uint8_t)(src * 31 + dst * 7 + msg * 13 + k * 3 + (k >> 8));
}
static void fill(uint8_t *buf, size_t len, int src, int dst, int msg) {
  for (size_t k = 0; k < len; k++) buf[k] = pat(src, dst, msg, k);
}
/* Index of the first byte that differs from the pattern, or len. */
static size_t verify(const uint8_t *buf, size_t len, int src, int dst, int msg) {
  for (size_t k = 0; k < len; k++)
    if (buf[k] != pat(src, dst, msg, k)) return k;
  return len;
}

/* ---- cases --------------------------------------------------------------------- */

/* Rank 0 sends 6 messages to each of ranks 1 and 2, alternating, with
 * their own tags and lengths (some zero); halfway through, rank 2 sends 4
 * to rank 1 in between; everything arrives in order. */
#define ORDER_N 6
static size_t order_len(int i) { return i % 3 == 0 ? 0 : (size_t)(i * 13 + 1); }

static int case_order(redcoll_comm *c, void *vp) {
  conf_arg *a = vp;
  int me = c->rank;
  uint8_t buf[128];
  if (me == 0) {
    for (int i = 0; i < 2 * ORDER_N; i++) {
      int dst = 1 + i % 2, msg = i / 2;
      fill(buf, order_len(msg), 0, dst, msg);
      RCHECK_RC(tsend(c, dst, 200 + (uint64_t)msg, buf, order_len(msg)), REDCOLL_OK);
    }
  } else {
    for (int msg = 0; msg < ORDER_N; msg++) {
      memset(buf, 0xEE, sizeof buf);
      RCHECK_RC(trecv(c, 0, 200 + (uint64_t)msg, buf, order_len(msg)), REDCOLL_OK);
      RCHECK(verify(buf, order_len(msg), 0, me, msg) == order_len(msg));
      RCHECK(buf[order_len(msg)] == 0xEE);
      /* Halfway through, rank 2 sends 4 messages to rank 1. */
      for (int j = 0; msg == ORDER_N / 2 - 1 && j < 4; j++) {
        if (me == 1) {
          memset(buf, 0xEE, sizeof buf);
          RCHECK_RC(trecv(c, 2, 300 + (uint64_t)j, buf, 10 + (size_t)j), REDCOLL_OK);
          RCHECK(verify(buf, 10 + (size_t)j, 2, 1, j) == 10 + (size_t)j);
        } else {
          fill(buf, 10 + (size_t)j, 2, 1, j);
          RCHECK_RC(tsend(c, 1, 300 + (uint64_t)j, buf, 10 + (size_t)j), REDCOLL_OK);
        }
      }
    }
  }
  return REDCOLL_OK;
}

/* Mismatches between rank 0's send and rank 1's receive, chosen by
 * a->param: 0 tag, 1 longer message, 2 shorter message, 3 zero-length with
 * another tag, 4 in the receive half of a sendrecv.  The receiver fails
 * with REDCOLL_EMISMATCH and nothing beyond the receive length is written;
 * so does the sender, unless the transport is eager (its send is done once
 * the bytes are on their way). */
#define SENDER_RC(expr)                                                        \
  do {                                                                         \
    int src_ = (expr);                                                         \
    if (!(src_ == REDCOLL_EMISMATCH || (a->tr->eager && src_ == REDCOLL_OK)))  \
      rank_fail(a, me, __LINE__, "%s returned %s, want %s", #expr,             \
                redcoll_status_name(src_), redcoll_status_name(REDCOLL_EMISMATCH)); \
  } while (0)

static int case_mismatch(redcoll_comm *c, void *vp) {
  conf_arg *a = vp;
  int me = c->rank;
  uint8_t sbuf[64], rbuf[96];
  fill(sbuf, sizeof sbuf, me, 1 - me, 0);
  memset(rbuf, 0xEE, sizeof rbuf);
  size_t rlen = 32;
  switch (a->param) {
  case 0:
    if (me == 0) SENDER_RC(tsend(c, 1, 7, sbuf, 32));
    else RCHECK_RC(trecv(c, 0, 8, rbuf, rlen), REDCOLL_EMISMATCH);
    break;
  case 1:
    if (me == 0) SENDER_RC(tsend(c, 1, 7, sbuf, 48));
    else RCHECK_RC(trecv(c, 0, 7, rbuf, rlen), REDCOLL_EMISMATCH);
    break;
  case 2:
    if (me == 0) SENDER_RC(tsend(c, 1, 7, sbuf, 16));
    else RCHECK_RC(trecv(c, 0, 7, rbuf, rlen), REDCOLL_EMISMATCH);
    break;
  case 3:
    rlen = 0;
    if (me == 0) SENDER_RC(tsend(c, 1, 7, NULL, 0));
    else RCHECK_RC(trecv(c, 0, 9, rbuf, 0), REDCOLL_EMISMATCH);
    break;
  default:
    /* Rank 1 expects tag 2 from rank 0, which sends tag 1.  Rank 0's
     * receive half waits for rank 1's send, which rank 1 withdraws when its
     * receive fails: if it had not left yet (TCP sends nothing before the
     * peer has answered its HELLO), rank 0 learns that rank 1 gave up on
     * the connection, REDCOLL_ETRANSPORT (a transport whose sends return
     * when handed over; the others deliver before either half fails). */
    if (me == 1) {
      RCHECK_RC(tsendrecv(c, 0, 1, sbuf, 32, 0, 2, rbuf, rlen), REDCOLL_EMISMATCH);
    } else {
      int src = tsendrecv(c, 1, 1, sbuf, 32, 1, 1, rbuf, rlen);
      if (!(a->tr->eager && src == REDCOLL_ETRANSPORT)) SENDER_RC(src);
    }
    if (me == 0) rlen = sizeof rbuf; /* rank 0's receive half may or may not complete */
    break;
  }
  if (me == 1 || a->param < 4) {
    for (size_t k = rlen; k < sizeof rbuf; k++) RCHECK(rbuf[k] == 0xEE);
  }
  return REDCOLL_OK;
}

/* Zero-length messages, also with NULL buffers, in send, recv and both
 * halves of a sendrecv, between messages with payload. */
static int case_zero(redcoll_comm *c, void *vp) {
  conf_arg *a = vp;
  int me = c->rank, peer = 1 - me;
  uint8_t buf[8], empty[1] = {0xEE};
  if (me == 0) {
    RCHECK_RC(tsend(c, 1, 11, NULL, 0), REDCOLL_OK);
    RCHECK_RC(tsend(c, 1, 12, empty, 0), REDCOLL_OK);
    fill(buf, 5, 0, 1, 3);
    RCHECK_RC(tsend(c, 1, 13, buf, 5), REDCOLL_OK);
  } else {
    RCHECK_RC(trecv(c, 0, 11, empty, 0), REDCOLL_OK);
    RCHECK(empty[0] == 0xEE);
    RCHECK_RC(trecv(c, 0, 12, NULL, 0), REDCOLL_OK);
    memset(buf, 0xEE, sizeof buf);
    RCHECK_RC(trecv(c, 0, 13, buf, 5), REDCOLL_OK);
    RCHECK(verify(buf, 5, 0, 1, 3) == 5 && buf[5] == 0xEE);
  }
  /* Both halves empty, with their own tags. */
  RCHECK_RC(tsendrecv(c, peer, 20 + (uint64_t)me, NULL, 0, peer, 20 + (uint64_t)peer, NULL, 0),
            REDCOLL_OK);
  /* One half empty, the other not. */
  fill(buf, 7, me, peer, 4);
  uint8_t in[8];
  memset(in, 0xEE, sizeof in);
  size_t slen = me == 0 ? 7 : 0, rlen = me == 0 ? 0 : 7;
  RCHECK_RC(tsendrecv(c, peer, 30, buf, slen, peer, 30, in, rlen), REDCOLL_OK);
  if (me == 1) RCHECK(verify(in, 7, 0, 1, 4) == 7 && in[7] == 0xEE);
  else RCHECK(in[0] == 0xEE);
  return REDCOLL_OK;
}

/* sendrecv to rank+k from rank-k, k = a->param, three rounds; the message
 * from rank r has length 40 + 37 r and tag 0x5000 + 16 round + r, so the two
 * halves of one call differ in peer, tag and length. */
static size_t shift_len(int r) { return 40 + 37 * (size_t)r; }

static int case_shift(redcoll_comm *c, void *vp) {
  conf_arg *a = vp;
  int me = c->rank, p = c->size, k = a->param;
  int dst = (me + k) % p, src = (me - k % p + p) % p;
  uint8_t sbuf[40 + 37 * MAXP], rbuf[40 + 37 * MAXP + 1];
  for (int round = 0; round < 3; round++) {
    fill(sbuf, shift_len(me), me, dst, round);
    memset(rbuf, 0xEE, sizeof rbuf);
    RCHECK_RC(tsendrecv(c, dst, 0x5000 + 16 * (uint64_t)round + (uint64_t)me, sbuf, shift_len(me),
                        src, 0x5000 + 16 * (uint64_t)round + (uint64_t)src, rbuf, shift_len(src)),
              REDCOLL_OK);
    RCHECK(verify(rbuf, shift_len(src), src, me, round) == shift_len(src));
    RCHECK(rbuf[shift_len(src)] == 0xEE);
  }
  return REDCOLL_OK;
}

static double now_sec(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Words of a large message from src; cheap to generate and to check. */
static uint64_t big_word(int src, size_t i) {
  return (uint64_t)i * 0x9E3779B97F4A7C15ULL ^ ((uint64_t)src + 1) * 0xD1B54A32D192ED03ULL;
}

/* Rank 0 sends a large message to rank 1 (timed), then both exchange large
 * messages in one sendrecv each. */
static int case_large(redcoll_comm *c, void *vp) {
  conf_arg *a = vp;
  int me = c->rank, peer = 1 - me;
  size_t n = a->tr->large / sizeof(uint64_t);
  uint64_t *mine = malloc(n * sizeof *mine), *in = malloc(n * sizeof *in);
  if (mine == NULL || in == NULL) {
    rank_fail(a, me, __LINE__, "out of memory");
    goto out;
  }
  for (size_t i = 0; i < n; i++) mine[i] = big_word(me, i);
  /* Timed three times, the best kept: the first pass may pay page faults. */
  double best = 0;
  for (int rep = 0; rep < 3; rep++) {
    memset(in, 0xEE, n * sizeof *in);
    /* Line the two up so that the timed call measures the transfer. */
    RCHECK_RC(tsendrecv(c, peer, 1, NULL, 0, peer, 1, NULL, 0), REDCOLL_OK);
    if (me == 0) {
      RCHECK_RC(tsend(c, 1, 2, mine, n * sizeof *mine), REDCOLL_OK);
    } else {
      double t0 = now_sec();
      RCHECK_RC(trecv(c, 0, 2, in, n * sizeof *in), REDCOLL_OK);
      double t = now_sec() - t0;
      if (rep == 0 || t < best) best = t;
      size_t bad = 0;
      for (size_t i = 0; i < n; i++) bad += in[i] != big_word(0, i);
      RCHECK(bad == 0);
    }
  }
  if (me == 1 && best > 0)
    printf("%s: %zu MiB message in %.2f ms: %.2f GB/s\n", a->tr->name, a->tr->large >> 20,
           best * 1e3, (double)a->tr->large / best * 1e-9);
  memset(in, 0xEE, n * sizeof *in);
  RCHECK_RC(tsendrecv(c, peer, 3, mine, n * sizeof *mine, peer, 3, in, n * sizeof *in), REDCOLL_OK);
  size_t bad = 0;
  for (size_t i = 0; i < n; i++) bad += in[i] != big_word(peer, i);
  RCHECK(bad == 0);
out:
  free(mine);
  free(in);
  return REDCOLL_OK;
}

/* A ring allgather: p - 1 rounds of sendrecv to rank+1 from rank-1, every
 * rank at once; the block of rank i has 100 + 17 i bytes. */
static size_t ring_len(int i) { return 100 + 17 * (size_t)i; }

static int case_ring(redcoll_comm *c, void *vp) {
  conf_arg *a = vp;
  int me = c->rank, p = c->size;
  uint8_t *blocks[MAXP] = {0};
  for (int i = 0; i < p; i++) {
    blocks[i] = malloc(ring_len(i));
    if (blocks[i] == NULL) {
      rank_fail(a, me, __LINE__, "out of memory");
      goto out;
    }
    memset(blocks[i], 0xEE, ring_len(i));
  }
  fill(blocks[me], ring_len(me), me, -1, 9);
  int next = (me + 1) % p, prev = (me + p - 1) % p;
  for (int round = 0; round < p - 1; round++) {
    int sb = (me - round + p) % p, rb = (me - round - 1 + 2 * p) % p;
    RCHECK_RC(tsendrecv(c, next, 0x100 + (uint64_t)round, blocks[sb], ring_len(sb), prev,
                        0x100 + (uint64_t)round, blocks[rb], ring_len(rb)),
              REDCOLL_OK);
  }
  for (int i = 0; i < p; i++) RCHECK(verify(blocks[i], ring_len(i), i, -1, 9) == ring_len(i));
out:
  for (int i = 0; i < p; i++) free(blocks[i]);
  return REDCOLL_OK;
}

/* One side of a version 3 exchange on `channel`, with a deadline `ms`
 * milliseconds from now on the transport's clock (0: none). */
static int chan_call(redcoll_comm *c, uint64_t channel, uint64_t ms, int dst, uint64_t tag,
                     void *buf, size_t len) {
  uint64_t deadline = UINT64_MAX;
  if (ms > 0) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    uint64_t now = c->ops->now != NULL ? c->ops->now(c->impl)
                                       : (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
    deadline = now + ms * 1000000u;
  }
  redcoll_transport_ctx ctx = {deadline, 0, channel};
  redcoll_transport_msg m = {dst, tag, buf, len};
  int send = dst >= 0;
  if (!send) m.peer = -dst - 1;
  return c->ops->exchange(c->impl, &ctx, send ? &m : NULL, send ? NULL : &m);
}

/* Channels (transports with REDCOLL_TRANSPORT_CAP_CHANNELS; the others
 * say that it did not run): a message on channel 4 never meets a receive on
 * channel 0.  Rank 0 sends on channel 4; rank 1 first receives on channel 0
 * with a 50 ms deadline, which must time out without touching its buffer (a
 * shared queue would hand it the channel-4 message or a mismatch), then
 * receives on channel 4 and gets the message, and says so on channel 8;
 * only then does rank 0 send on channel 0, whose queue is untouched by all
 * this and whose timed-out receive was taken back whole. */
static int case_channels(redcoll_comm *c, void *vp) {
  conf_arg *a = vp;
  int me = c->rank;
  if (!(c->ep->caps & REDCOLL_TRANSPORT_CAP_CHANNELS)) {
    /* Not run, and said so: this transport has no channels. */
    if (me == 0) printf("note: %s has no channels; the channels case did not run\n", a->tr->name);
    return REDCOLL_OK;
  }
  uint8_t buf[16], want[16];
  fill(want, sizeof want, 0, 1, 4);
  if (me == 0) {
    uint8_t s[16];
    fill(s, sizeof s, 0, 1, 4);
    RCHECK_RC(chan_call(c, 4, 0, 1, 11, s, sizeof s), REDCOLL_OK);
    RCHECK_RC(chan_call(c, 8, 0, -2, 13, buf, 1), REDCOLL_OK);
    fill(s, sizeof s, 0, 1, 0);
    RCHECK_RC(chan_call(c, 0, 0, 1, 12, s, sizeof s), REDCOLL_OK);
  } else {
    memset(buf, 0xEE, sizeof buf);
    RCHECK_RC(chan_call(c, 0, 50, -1, 12, buf, sizeof buf), REDCOLL_ETIMEDOUT);
    for (size_t k = 0; k < sizeof buf; k++) RCHECK(buf[k] == 0xEE);
    RCHECK_RC(chan_call(c, 4, 0, -1, 11, buf, sizeof buf), REDCOLL_OK);
    RCHECK(memcmp(buf, want, sizeof buf) == 0);
    RCHECK_RC(chan_call(c, 8, 0, 0, 13, buf, 1), REDCOLL_OK);
    fill(want, sizeof want, 0, 1, 0);
    RCHECK_RC(chan_call(c, 0, 0, -1, 12, buf, sizeof buf), REDCOLL_OK);
    RCHECK(memcmp(buf, want, sizeof buf) == 0);
  }
  return REDCOLL_OK;
}

/* Rank 0 gives up while rank 1 waits in a recv from it and rank 2 in a
 * sendrecv with rank 1 (which never answers): both calls return
 * REDCOLL_EABORTED, and so does every later call, on every rank.  param 0:
 * through cancel on channel group 0 (the communicator's) on a transport
 * with channels, else abort; param 1: through the abort member, on a
 * transport that has one (the others say the case did not run). */
static int case_abort(redcoll_comm *c, void *vp) {
  conf_arg *a = vp;
  int me = c->rank;
  uint8_t buf[16] = {0};
  int chans = (c->ep->caps & REDCOLL_TRANSPORT_CAP_CHANNELS) != 0 && a->param == 0;
  if (a->param == 1 && c->ops->abort == NULL) {
    if (me == 0) printf("note: %s has no abort member; the abort_member case did not run\n",
                        a->tr->name);
    return REDCOLL_OK;
  }
  RCHECK(chans ? c->ops->cancel != NULL : c->ops->abort != NULL);
  if (chans ? c->ops->cancel == NULL : c->ops->abort == NULL) return REDCOLL_OK;
  if (me == 0) {
    /* Give the others time to block (on threads; harmless on the mock). */
    struct timespec ts = {0, 30 * 1000000L};
    nanosleep(&ts, NULL);
    if (chans) c->ops->cancel(c->impl, 0, REDCOLL_ETRANSPORT);
    else c->ops->abort(c->impl, REDCOLL_ETRANSPORT);
    RCHECK_RC(tsend(c, 1, 5, buf, sizeof buf), REDCOLL_EABORTED);
  } else if (me == 1) {
    RCHECK_RC(trecv(c, 0, 5, buf, sizeof buf), REDCOLL_EABORTED);
    RCHECK_RC(tsend(c, 2, 6, buf, sizeof buf), REDCOLL_EABORTED);
  } else {
    RCHECK_RC(tsendrecv(c, 1, 7, buf, sizeof buf, 1, 7, buf, sizeof buf), REDCOLL_EABORTED);
    RCHECK_RC(trecv(c, 1, 6, buf, sizeof buf), REDCOLL_EABORTED);
  }
  return REDCOLL_OK;
}

/* ---- driver --------------------------------------------------------------------- */

typedef struct conf_case {
  const char *name;
  redcoll_rank_main fn;
  int p;
  int param;
} conf_case;

static const conf_case cases[] = {
    {"order", case_order, 3, 0},
    {"mismatch_tag", case_mismatch, 2, 0},
    {"mismatch_longer", case_mismatch, 2, 1},
    {"mismatch_shorter", case_mismatch, 2, 2},
    {"mismatch_zero_length_tag", case_mismatch, 2, 3},
    {"mismatch_sendrecv", case_mismatch, 2, 4},
    {"zero_length", case_zero, 2, 0},
    {"shift1_p5", case_shift, 5, 1},
    {"shift3_p5", case_shift, 5, 3},
    {"shift1_p8", case_shift, 8, 1},
    {"shift3_p8", case_shift, 8, 3},
    {"shift3_p16", case_shift, 16, 3},
    {"large", case_large, 2, 0},
    {"ring_p2", case_ring, 2, 0},
    {"ring_p3", case_ring, 3, 0},
    {"ring_p5", case_ring, 5, 0},
    {"ring_p8", case_ring, 8, 0},
    {"abort", case_abort, 3, 0},
    {"abort_member", case_abort, 3, 1},
    {"channels", case_channels, 2, 0},
};

/* Runs a case on one rank and turns its recorded failures into the rank's
 * status, printed where they happened: a runner whose ranks are processes
 * (TCP) never shows the parent the rank's copy of conf_arg. */
static int conf_rank(redcoll_comm *c, void *vp) {
  conf_arg *a = vp;
  int me = c->rank;
  int rc = a->fn(c, a);
  if (rc == REDCOLL_OK && a->fails[me] > 0) {
    fprintf(stderr, "%s %s rank %d: %d failures, first at %s\n", a->tr->name, a->name, me,
            a->fails[me], a->first[me]);
    rc = REDCOLL_EPROTO;
  }
  return rc;
}

/* Every case on every transport; `test_conformance NAME` runs the cases
 * whose name contains NAME. */
int main(int argc, char **argv) {
  test_args(argc, argv);
  for (size_t t = 0; t < sizeof runners / sizeof runners[0]; t++) {
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
      const conf_case *cs = &cases[k];
      if (!test_selected(cs->name)) continue;
      conf_arg *a = calloc(1, sizeof *a);
      CHECK(a != NULL);
      if (a == NULL) continue;
      a->tr = &runners[t];
      a->name = cs->name;
      a->fn = cs->fn;
      a->p = cs->p;
      a->param = cs->param;
      double t0 = now_sec();
      int rc = runners[t].run(cs->p, conf_rank, a);
      double took = now_sec() - t0;
      if (took > 1.0) printf("%s %s: %.2f s\n", runners[t].name, cs->name, took);
      CHECK_MSG(rc == REDCOLL_OK, "%s %s: run returned %s", runners[t].name, cs->name,
                redcoll_status_name(rc));
      /* In-process runners also show the ranks' records here. */
      for (int r = 0; r < cs->p; r++) CHECK_INT(a->fails[r], 0);
      free(a);
    }
  }
  return TEST_DONE();
}
