/*
 * The simulator: cost model (hand-checked clocks), rendezvous and eager
 * sends, FIFO matching, mismatches, deadlock reports, abort, fault
 * injection, determinism of the trace, the dot output, a 4096-rank run,
 * and worlds of the program's own threads (redcoll_mock_world_create).
 * Rank programs drive the transport through the communicator's vtable.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "raw.h"
#include "redcoll/mock.h"
#include "test.h"

/* ---- helpers ------------------------------------------------------------ */

#define t_send raw_send
#define t_recv raw_recv
#define t_sendrecv raw_exchange
static void t_charge(redcoll_comm *c, size_t bytes) { c->ops->charge(c->impl, bytes); }
static void t_abort(redcoll_comm *c, int status) { c->ops->abort(c->impl, status); }

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static redcoll_mock_config cfg_abg(double alpha, double beta, double gamma) {
  redcoll_mock_config cfg;
  redcoll_mock_config_init(&cfg);
  cfg.alpha = alpha;
  cfg.beta = beta;
  cfg.gamma = gamma;
  return cfg;
}

/* Reads a whole stream from the start into a fresh string. */
static char *slurp(FILE *f) {
  fflush(f);
  long n = ftell(f);
  char *s = calloc((size_t)n + 1, 1);
  if (s == NULL) return NULL;
  rewind(f);
  if (n > 0 && fread(s, 1, (size_t)n, f) != (size_t)n) {
    free(s);
    return NULL;
  }
  return s;
}

/* Per-rank results written by the rank programs (one rank runs at a time,
 * so plain stores are fine). */
#define MAXR 16
typedef struct {
  int rc[MAXR][8];
  unsigned char buf[MAXR][64];
  size_t charge[MAXR];
  size_t len;
  int flag;
} shared;

/* ---- defaults and arguments ------------------------------------------------ */

static int prog_nop(redcoll_comm *c, void *arg) {
  (void)c;
  (void)arg;
  return REDCOLL_OK;
}

static int prog_status(redcoll_comm *c, void *arg) {
  const int *st = arg;
  return st[redcoll_comm_rank(c)];
}

static int prog_badargs(redcoll_comm *c, void *arg) {
  shared *s = arg;
  int r = redcoll_comm_rank(c);
  char b[4] = {0};
  int k = 0;
  s->rc[r][k++] = t_send(c, r, 1, b, 4);
  s->rc[r][k++] = t_send(c, 2, 1, b, 4);
  s->rc[r][k++] = t_send(c, -1, 1, b, 4);
  s->rc[r][k++] = t_recv(c, r, 1, b, 4);
  s->rc[r][k++] = t_recv(c, 7, 1, b, 4);
  s->rc[r][k++] = t_sendrecv(c, 1 - r, 1, b, 4, r, 1, b, 4);
  s->rc[r][k++] = t_send(c, 1 - r, 1, NULL, 4);
  /* and the communicator still works afterwards */
  if (r == 0) s->rc[r][k++] = t_send(c, 1, 9, b, 4);
  else s->rc[r][k++] = t_recv(c, 0, 9, b, 4);
  return REDCOLL_OK;
}

static void test_defaults_and_args(void) {
  redcoll_mock_config cfg;
  memset(&cfg, 0x5a, sizeof cfg);
  redcoll_mock_config_init(&cfg);
  CHECK_DBL(cfg.alpha, 1.0);
  CHECK_DBL(cfg.beta, 0.0);
  CHECK_DBL(cfg.gamma, 0.0);
  CHECK_INT(cfg.seed, 1);
  CHECK_INT(cfg.eager_limit, 0);
  CHECK(cfg.trace == NULL && cfg.dot == NULL && cfg.report == NULL);
  CHECK_INT(cfg.report_len, 0);
  CHECK_INT(cfg.verbose, 0);
  CHECK_INT(cfg.fail_rank, -1);
  CHECK_INT(cfg.stall_rank, -1);
  CHECK_INT(cfg.stall_after, 0);
  CHECK_DBL(cfg.stall_time, 0.0);
  CHECK_INT(cfg.fail_after, 0);
  CHECK_INT(cfg.stack_size, 0);

  CHECK_INT(redcoll_mock_run(0, NULL, prog_nop, NULL, NULL), REDCOLL_EINVAL);
  CHECK_INT(redcoll_mock_run(-3, NULL, prog_nop, NULL, NULL), REDCOLL_EINVAL);
  CHECK_INT(redcoll_mock_run(65537, NULL, prog_nop, NULL, NULL), REDCOLL_EINVAL);
  CHECK_INT(redcoll_mock_run(2, NULL, NULL, NULL, NULL), REDCOLL_EINVAL);
  CHECK_INT(redcoll_mock_run(1, NULL, prog_nop, NULL, NULL), REDCOLL_OK);

  shared s;
  memset(&s, 0, sizeof s);
  redcoll_mock_stats st[2];
  CHECK_INT(redcoll_mock_run(2, NULL, prog_badargs, &s, st), REDCOLL_OK);
  for (int r = 0; r < 2; r++) {
    for (int k = 0; k < 7; k++) CHECK_INT(s.rc[r][k], REDCOLL_EINVAL);
    CHECK_INT(s.rc[r][7], REDCOLL_OK);
    CHECK_DBL(st[r].time, 1.0); /* default alpha = 1, one message */
    CHECK_INT(st[r].rounds, 1);
  }

  /* The lowest failing rank's status is returned. */
  int status[4] = {REDCOLL_OK, REDCOLL_EPROTO, REDCOLL_EINVAL, REDCOLL_OK};
  redcoll_mock_stats st4[4];
  CHECK_INT(redcoll_mock_run(4, NULL, prog_status, status, st4), REDCOLL_EPROTO);
  CHECK_INT(st4[2].status, REDCOLL_EINVAL);
  int status2[2] = {REDCOLL_ENOTSUP, REDCOLL_EPROTO};
  redcoll_mock_stats st2[2];
  CHECK_INT(redcoll_mock_run(2, NULL, prog_status, status2, st2), REDCOLL_ENOTSUP);
  CHECK_INT(st2[0].status, REDCOLL_ENOTSUP);
  CHECK_INT(st2[1].status, REDCOLL_EPROTO);
}

/* ---- hand-checked clocks ------------------------------------------------------ */

/* Rank 0 sends s->len bytes to rank 1; each rank first charges s->charge[r]. */
static int prog_pair(redcoll_comm *c, void *arg) {
  shared *s = arg;
  int r = redcoll_comm_rank(c);
  if (s->charge[r] > 0) t_charge(c, s->charge[r]);
  if (r == 0) {
    for (size_t i = 0; i < s->len; i++) s->buf[0][i] = (unsigned char)(i + 1);
    s->rc[0][0] = t_send(c, 1, 7, s->buf[0], s->len);
  } else {
    s->rc[1][0] = t_recv(c, 0, 7, s->buf[1], s->len);
  }
  return s->rc[r][0];
}

static void test_pair_clocks(void) {
  for (uint64_t seed = 1; seed <= 6; seed++) {
    redcoll_mock_config cfg = cfg_abg(2.0, 0.5, 1.0);
    cfg.seed = seed;
    shared s;
    memset(&s, 0, sizeof s);
    s.len = 10;
    redcoll_mock_stats st[2];
    FILE *tr = tmpfile();
    cfg.trace = tr;
    CHECK_INT(redcoll_mock_run(2, &cfg, prog_pair, &s, st), REDCOLL_OK);
    CHECK_DBL(st[0].time, 7.0);
    CHECK_DBL(st[1].time, 7.0);
    CHECK_INT(st[0].rounds, 1);
    CHECK_INT(st[1].rounds, 1);
    CHECK_INT(st[0].msgs_sent, 1);
    CHECK_INT(st[0].bytes_sent, 10);
    CHECK_INT(st[0].msgs_recv, 0);
    CHECK_INT(st[1].msgs_recv, 1);
    CHECK_INT(st[1].bytes_recv, 10);
    CHECK_INT(st[1].msgs_sent, 0);
    CHECK(memcmp(s.buf[0], s.buf[1], 10) == 0);
    char *t = slurp(tr);
    CHECK(t != NULL && strcmp(t, "msg=0 src=0 dst=1 tag=0x0000000000000007 bytes=10 start=0 "
                                 "end=7 round=1\n") == 0);
    free(t);
    fclose(tr);

    /* The receiver first reduces 4 bytes at gamma 1: the transfer starts at 4. */
    memset(&s, 0, sizeof s);
    s.len = 10;
    s.charge[1] = 4;
    CHECK_INT(redcoll_mock_run(2, &(redcoll_mock_config){.alpha = 2, .beta = 0.5, .gamma = 1,
                                                        .seed = seed, .fail_rank = -1},
                               prog_pair, &s, st),
              REDCOLL_OK);
    CHECK_DBL(st[0].time, 11.0);
    CHECK_DBL(st[1].time, 11.0);
    CHECK_INT(st[1].bytes_reduced, 4);
    CHECK_INT(st[0].bytes_reduced, 0);
    CHECK_INT(st[0].rounds, 1);

    /* Same with the sender late. */
    memset(&s, 0, sizeof s);
    s.len = 10;
    s.charge[0] = 6;
    cfg.trace = NULL;
    CHECK_INT(redcoll_mock_run(2, &cfg, prog_pair, &s, st), REDCOLL_OK);
    CHECK_DBL(st[0].time, 13.0);
    CHECK_DBL(st[1].time, 13.0);
  }
}

/* Three ranks in a ring, each one sendrecv to r+1 and from r-1, posted at
 * different times (charges 0, 3, 10 at gamma 1), 4, 8, 12 bytes at beta
 * 0.25, alpha 1:
 *   0->1: start max(0, 3) = 3,   end 3 + 1 + 1 = 5
 *   1->2: start max(3, 10) = 10, end 10 + 1 + 2 = 13
 *   2->0: start max(10, 0) = 10, end 10 + 1 + 3 = 14
 * so rank 0 ends at max(5, 14) = 14, rank 1 at max(5, 13) = 13, rank 2 at
 * max(13, 14) = 14.  Then a chain 0 -> 1 -> 2 of one byte each adds rounds. */
static int prog_ring3(redcoll_comm *c, void *arg) {
  shared *s = arg;
  int r = redcoll_comm_rank(c);
  static const size_t charge[3] = {0, 3, 10};
  t_charge(c, charge[r]);
  size_t slen = 4 * (size_t)(r + 1), rlen = 4 * (size_t)((r + 2) % 3 + 1);
  unsigned char out[16];
  memset(out, 0x10 + r, sizeof out);
  int rc = t_sendrecv(c, (r + 1) % 3, 100 + (uint64_t)r, out, slen, (r + 2) % 3,
                      100 + (uint64_t)((r + 2) % 3), s->buf[r], rlen);
  s->rc[r][0] = rc;
  return rc;
}

static void test_ring3(void) {
  for (uint64_t seed = 1; seed <= 6; seed++) {
    redcoll_mock_config cfg = cfg_abg(1.0, 0.25, 1.0);
    cfg.seed = seed;
    shared s;
    memset(&s, 0, sizeof s);
    redcoll_mock_stats st[3];
    CHECK_INT(redcoll_mock_run(3, &cfg, prog_ring3, &s, st), REDCOLL_OK);
    CHECK_DBL(st[0].time, 14.0);
    CHECK_DBL(st[1].time, 13.0);
    CHECK_DBL(st[2].time, 14.0);
    for (int r = 0; r < 3; r++) {
      CHECK_INT(st[r].rounds, 1);
      CHECK_INT(st[r].msgs_sent, 1);
      CHECK_INT(st[r].msgs_recv, 1);
      CHECK_INT(st[r].bytes_sent, 4 * (r + 1));
      CHECK_INT(st[r].bytes_recv, 4 * ((r + 2) % 3 + 1));
      size_t rlen = 4 * (size_t)((r + 2) % 3 + 1);
      int ok = 1;
      for (size_t i = 0; i < rlen; i++) ok &= s.buf[r][i] == 0x10 + (r + 2) % 3;
      for (size_t i = rlen; i < 64; i++) ok &= s.buf[r][i] == 0;
      CHECK(ok);
    }
  }
}

/* A token passed down a chain of p ranks: rank i ends at round i. */
static int prog_chain(redcoll_comm *c, void *arg) {
  (void)arg;
  int r = redcoll_comm_rank(c), p = redcoll_comm_size(c);
  unsigned char tok = 0;
  int rc = REDCOLL_OK;
  if (r > 0) rc = t_recv(c, r - 1, 5, &tok, 1);
  tok++;
  if (rc == REDCOLL_OK && r + 1 < p) rc = t_send(c, r + 1, 5, &tok, 1);
  if (rc == REDCOLL_OK && tok != r + 1) rc = REDCOLL_EPROTO;
  return rc;
}

static void test_chain_rounds(void) {
  redcoll_mock_config cfg = cfg_abg(3.0, 1.0, 0.0);
  redcoll_mock_stats st[6];
  CHECK_INT(redcoll_mock_run(6, &cfg, prog_chain, NULL, st), REDCOLL_OK);
  for (int r = 0; r < 6; r++) {
    uint64_t hops = (uint64_t)(r < 5 ? r + 1 : 5);
    CHECK_INT(st[r].rounds, hops);
    CHECK_DBL(st[r].time, 4.0 * (double)hops);
  }
}

/* ---- eager ------------------------------------------------------------------ */

/* Rank 0 sends two 10-byte messages; rank 1 receives the first at once,
 * reduces 20 bytes (gamma 1), then receives the second.  alpha 2, beta 0.5:
 * eager: rank 0 ends at 7 + 7 = 14; rank 1 gets the first at max(0, 7) = 7,
 * charges to 27, the second at max(27, 14) = 27.
 * rendezvous: the first transfer ends at 7, the second starts at 27 and
 * ends at 34 on both ranks. */
static int prog_eager(redcoll_comm *c, void *arg) {
  shared *s = arg;
  int r = redcoll_comm_rank(c);
  if (r == 0) {
    unsigned char a[10], b[10];
    memset(a, 0xA1, 10);
    memset(b, 0xB2, 10);
    s->rc[0][0] = t_send(c, 1, 1, a, 10);
    memset(a, 0, 10); /* the eager copy is taken at send time */
    s->rc[0][1] = t_send(c, 1, 2, b, 10);
  } else {
    s->rc[1][0] = t_recv(c, 0, 1, s->buf[1], 10);
    t_charge(c, 20);
    s->rc[1][1] = t_recv(c, 0, 2, s->buf[1] + 10, 10);
  }
  return s->rc[r][0] != REDCOLL_OK ? s->rc[r][0] : s->rc[r][1];
}

/* Both ranks send first, then receive: fine when eager, a deadlock under
 * rendezvous. */
static int prog_send_first(redcoll_comm *c, void *arg) {
  shared *s = arg;
  int r = redcoll_comm_rank(c);
  unsigned char out[8];
  memset(out, 0x30 + r, 8);
  s->rc[r][0] = t_send(c, 1 - r, 3, out, s->len);
  s->rc[r][1] = t_recv(c, 1 - r, 3, s->buf[r], s->len);
  return s->rc[r][0] != REDCOLL_OK ? s->rc[r][0] : s->rc[r][1];
}

static void test_eager(void) {
  for (uint64_t seed = 1; seed <= 6; seed++) {
    redcoll_mock_config cfg = cfg_abg(2.0, 0.5, 1.0);
    cfg.seed = seed;
    cfg.eager_limit = 11;
    shared s;
    memset(&s, 0, sizeof s);
    redcoll_mock_stats st[2];
    CHECK_INT(redcoll_mock_run(2, &cfg, prog_eager, &s, st), REDCOLL_OK);
    CHECK_DBL(st[0].time, 14.0);
    CHECK_DBL(st[1].time, 27.0);
    CHECK_INT(st[0].rounds, 2);
    CHECK_INT(st[1].rounds, 2);
    CHECK_INT(st[0].msgs_sent, 2);
    CHECK_INT(st[1].msgs_recv, 2);
    CHECK_INT(st[1].bytes_recv, 20);
    int ok = 1;
    for (int i = 0; i < 10; i++) ok &= s.buf[1][i] == 0xA1 && s.buf[1][10 + i] == 0xB2;
    CHECK(ok);

    /* len == eager_limit is not eager. */
    cfg.eager_limit = 10;
    memset(&s, 0, sizeof s);
    CHECK_INT(redcoll_mock_run(2, &cfg, prog_eager, &s, st), REDCOLL_OK);
    CHECK_DBL(st[0].time, 34.0);
    CHECK_DBL(st[1].time, 34.0);
    CHECK_INT(st[0].rounds, 2);

    /* Send-first exchange: eager completes, rendezvous deadlocks. */
    cfg = cfg_abg(1.0, 1.0, 0.0);
    cfg.seed = seed;
    cfg.eager_limit = 9;
    memset(&s, 0, sizeof s);
    s.len = 8;
    CHECK_INT(redcoll_mock_run(2, &cfg, prog_send_first, &s, st), REDCOLL_OK);
    CHECK_DBL(st[0].time, 9.0);
    CHECK_DBL(st[1].time, 9.0);
    CHECK_INT(st[0].rounds, 1);
    CHECK(s.buf[0][7] == 0x31 && s.buf[1][0] == 0x30);
    cfg.eager_limit = 0;
    memset(&s, 0, sizeof s);
    s.len = 8;
    char rep[256];
    cfg.report = rep;
    cfg.report_len = sizeof rep;
    CHECK_INT(redcoll_mock_run(2, &cfg, prog_send_first, &s, st), REDCOLL_EDEADLOCK);
    for (int r = 0; r < 2; r++) {
      CHECK_INT(s.rc[r][0], REDCOLL_EDEADLOCK);
      CHECK_INT(s.rc[r][1], REDCOLL_EDEADLOCK); /* later calls fail at once */
      CHECK_INT(st[r].status, REDCOLL_EDEADLOCK);
    }
    CHECK(strstr(rep, "rank 0: send to 1 tag 0x0000000000000003 8 bytes") != NULL);
    CHECK(strstr(rep, "rank 1: send to 0 tag 0x0000000000000003 8 bytes") != NULL);
  }
}

/* ---- FIFO matching and zero-length messages ---------------------------------- */

/* Rank 0 sends a mix of eager (< 4 bytes) and rendezvous messages, tags
 * 10..17, zero-length ones included; rank 1 receives them in order. */
static int prog_fifo(redcoll_comm *c, void *arg) {
  shared *s = arg;
  int r = redcoll_comm_rank(c);
  static const size_t len[8] = {0, 3, 8, 0, 1, 16, 2, 0};
  size_t off = 0;
  for (int i = 0; i < 8; i++) {
    int rc;
    if (r == 0) {
      unsigned char m[16];
      memset(m, 0x40 + i, sizeof m);
      rc = t_send(c, 1, 10 + (uint64_t)i, len[i] ? m : NULL, len[i]);
    } else {
      rc = t_recv(c, 0, 10 + (uint64_t)i, len[i] ? s->buf[1] + off : NULL, len[i]);
    }
    off += len[i];
    if (rc != REDCOLL_OK) return rc;
  }
  return REDCOLL_OK;
}

static int prog_zero(redcoll_comm *c, void *arg) {
  (void)arg;
  int r = redcoll_comm_rank(c);
  int rc = r == 0 ? t_send(c, 1, 0, NULL, 0) : t_recv(c, 0, 0, NULL, 0);
  if (rc != REDCOLL_OK) return rc;
  return t_sendrecv(c, 1 - r, 4, NULL, 0, 1 - r, 4, NULL, 0);
}

static void test_fifo_zero(void) {
  for (uint64_t seed = 1; seed <= 4; seed++) {
    redcoll_mock_config cfg = cfg_abg(1.0, 1.0, 0.0);
    cfg.seed = seed;
    cfg.eager_limit = 4;
    shared s;
    memset(&s, 0, sizeof s);
    redcoll_mock_stats st[2];
    CHECK_INT(redcoll_mock_run(2, &cfg, prog_fifo, &s, st), REDCOLL_OK);
    static const size_t len[8] = {0, 3, 8, 0, 1, 16, 2, 0};
    size_t off = 0;
    int ok = 1;
    for (int i = 0; i < 8; i++)
      for (size_t j = 0; j < len[i]; j++) ok &= s.buf[1][off++] == 0x40 + i;
    CHECK(ok);
    CHECK_INT(st[0].msgs_sent, 8);
    CHECK_INT(st[1].msgs_recv, 8);
    CHECK_INT(st[1].bytes_recv, 30);

    FILE *tr = tmpfile();
    cfg.trace = tr;
    cfg.eager_limit = 0;
    CHECK_INT(redcoll_mock_run(2, &cfg, prog_zero, NULL, st), REDCOLL_OK);
    CHECK_DBL(st[0].time, 2.0);
    CHECK_DBL(st[1].time, 2.0);
    CHECK_INT(st[0].msgs_sent, 2);
    CHECK_INT(st[0].bytes_sent, 0);
    CHECK_INT(st[1].msgs_recv, 2);
    char *t = slurp(tr);
    static const char first[] =
        "msg=0 src=0 dst=1 tag=0x0000000000000000 bytes=0 start=0 end=1 round=1\n";
    CHECK(t != NULL && strncmp(t, first, sizeof first - 1) == 0);
    CHECK(t != NULL && strstr(t, "bytes=0 start=1 end=2 round=2\n") != NULL);
    free(t);
    fclose(tr);
  }
}

/* ---- mismatch ------------------------------------------------------------- */

/* Rank 0 sends 8 bytes with tag 1; rank 1 expects s->flag: 0 another tag,
 * 1 another length (16), 2 another length with a sendrecv whose send half is
 * still pending. */
static int prog_mismatch(redcoll_comm *c, void *arg) {
  shared *s = arg;
  int r = redcoll_comm_rank(c);
  if (r == 0) {
    unsigned char m[8];
    memset(m, 0x77, 8);
    s->rc[0][0] = t_send(c, 1, 1, m, 8);
    s->rc[0][1] = t_send(c, 1, 1, m, 8); /* the transport itself stays usable */
    return s->rc[0][0];
  }
  memset(s->buf[1], 0xAA, 64);
  if (s->flag == 0) {
    s->rc[1][0] = t_recv(c, 0, 2, s->buf[1], 8);
  } else if (s->flag == 1) {
    s->rc[1][0] = t_recv(c, 0, 1, s->buf[1], 16);
  } else {
    unsigned char m[4] = {1, 2, 3, 4};
    s->rc[1][0] = t_sendrecv(c, 0, 9, m, 4, 0, 1, s->buf[1], 4);
  }
  s->rc[1][1] = t_recv(c, 0, 1, s->buf[1] + 32, 8);
  return s->rc[1][0];
}

static void test_mismatch(void) {
  for (int kind = 0; kind < 3; kind++) {
    for (uint64_t seed = 1; seed <= 6; seed++) {
      redcoll_mock_config cfg = cfg_abg(1.0, 0.0, 0.0);
      cfg.seed = seed;
      char rep[512];
      cfg.report = rep;
      cfg.report_len = sizeof rep;
      shared s;
      memset(&s, 0, sizeof s);
      s.flag = kind;
      redcoll_mock_stats st[2];
      CHECK_INT(redcoll_mock_run(2, &cfg, prog_mismatch, &s, st), REDCOLL_EMISMATCH);
      CHECK_INT(s.rc[0][0], REDCOLL_EMISMATCH);
      CHECK_INT(s.rc[1][0], REDCOLL_EMISMATCH);
      /* The failed message is gone; the next one matches normally. */
      CHECK_INT(s.rc[0][1], REDCOLL_OK);
      CHECK_INT(s.rc[1][1], REDCOLL_OK);
      int untouched = 1;
      for (int i = 0; i < 32; i++) untouched &= s.buf[1][i] == 0xAA;
      CHECK(untouched);
      CHECK(s.buf[1][32] == 0x77 && s.buf[1][39] == 0x77);
      CHECK_INT(st[0].msgs_sent, 1);
      CHECK_INT(st[1].msgs_recv, 1);
      CHECK_INT(st[1].msgs_sent, 0);
      CHECK(strstr(rep, "rank 1: recv from 0") != NULL);
      CHECK(strstr(rep, kind == 0 ? "tag 0x0000000000000002 8 bytes, but the next message has tag "
                                    "0x0000000000000001 8 bytes"
                                  : "but the next message has tag 0x0000000000000001 8 bytes") !=
            NULL);
    }
  }
}

/* ---- deadlock ------------------------------------------------------------- */

static int prog_recv_first(redcoll_comm *c, void *arg) {
  shared *s = arg;
  int r = redcoll_comm_rank(c);
  unsigned char b[100];
  s->rc[r][0] = t_recv(c, 1 - r, 0x1234, b, 100);
  s->rc[r][1] = t_send(c, 1 - r, 0x1234, b, 100);
  return s->rc[r][0];
}

/* Rank 2 returns at once; rank 0 waits for it, rank 1 for rank 0. */
static int prog_wait_done(redcoll_comm *c, void *arg) {
  (void)arg;
  int r = redcoll_comm_rank(c);
  char b[3];
  if (r == 0) return t_recv(c, 2, 5, b, 3);
  if (r == 1) return t_send(c, 0, 6, b, 3);
  return REDCOLL_OK;
}

/* The report of prog_recv_first on two ranks. */
static const char recv_first_report[] = "deadlock: 2 rank(s) blocked, none can run\n"
                                        "rank 0: recv from 1 tag 0x0000000000001234 100 bytes\n"
                                        "rank 1: recv from 0 tag 0x0000000000001234 100 bytes\n";

static void test_deadlock(void) {
  double t0 = now_s();
  char rep[512];
  redcoll_mock_config cfg = cfg_abg(1.0, 0.0, 0.0);
  cfg.report = rep;
  cfg.report_len = sizeof rep;
  shared s;
  memset(&s, 0, sizeof s);
  redcoll_mock_stats st[3];
  CHECK_INT(redcoll_mock_run(2, &cfg, prog_recv_first, &s, st), REDCOLL_EDEADLOCK);
  CHECK(now_s() - t0 < 1.0);
  for (int r = 0; r < 2; r++) {
    CHECK_INT(s.rc[r][0], REDCOLL_EDEADLOCK);
    CHECK_INT(s.rc[r][1], REDCOLL_EDEADLOCK);
    CHECK_INT(st[r].status, REDCOLL_EDEADLOCK);
    CHECK_DBL(st[r].time, 0.0);
  }
  CHECK_MSG(strcmp(rep, recv_first_report) == 0, "report: %s", rep);

  /* Truncated report, still NUL-terminated. */
  char small[17];
  memset(small, 'x', sizeof small);
  cfg.report = small;
  cfg.report_len = 16;
  CHECK_INT(redcoll_mock_run(2, &cfg, prog_recv_first, &s, NULL), REDCOLL_EDEADLOCK);
  CHECK(memcmp(small, "deadlock: 2 ran\0x", 17) == 0);

  /* Waiting for a rank that has returned. */
  cfg.report = rep;
  cfg.report_len = sizeof rep;
  CHECK_INT(redcoll_mock_run(3, &cfg, prog_wait_done, NULL, st), REDCOLL_EDEADLOCK);
  CHECK(strstr(rep, "rank 0: recv from 2 tag 0x0000000000000005 3 bytes (that rank has returned)") !=
        NULL);
  CHECK(strstr(rep, "rank 1: send to 0 tag 0x0000000000000006 3 bytes\n") != NULL);
  CHECK(strstr(rep, "rank 2") == NULL);
  CHECK_INT(st[0].status, REDCOLL_EDEADLOCK);
  CHECK_INT(st[1].status, REDCOLL_EDEADLOCK);
  CHECK_INT(st[2].status, REDCOLL_OK);
  CHECK(now_s() - t0 < 2.0);
}

/* ---- abort ---------------------------------------------------------------- */

/* Rank 2 posts a sendrecv (send to 0, receive from 0); rank 0 takes the send
 * half and aborts while rank 2's receive half is still waiting.  Rank 1
 * waits for rank 0 too. */
static int prog_abort(redcoll_comm *c, void *arg) {
  shared *s = arg;
  int r = redcoll_comm_rank(c);
  unsigned char b[4] = {0};
  if (r == 0) {
    s->rc[0][0] = t_recv(c, 2, 1, b, 4);
    t_abort(c, REDCOLL_EPROTO);
    s->rc[0][1] = t_send(c, 1, 1, b, 4);
    return REDCOLL_OK;
  }
  if (r == 1) {
    s->rc[1][0] = t_recv(c, 0, 1, b, 4);
    s->rc[1][1] = t_recv(c, 0, 1, b, 4);
    return s->rc[1][0];
  }
  s->rc[2][0] = t_sendrecv(c, 0, 1, b, 4, 0, 2, s->buf[2], 4);
  s->rc[2][1] = t_send(c, 1, 1, b, 4);
  return s->rc[2][0];
}

static void test_abort(void) {
  for (uint64_t seed = 1; seed <= 8; seed++) {
    redcoll_mock_config cfg = cfg_abg(1.0, 0.0, 0.0);
    cfg.seed = seed;
    char rep[256];
    cfg.report = rep;
    cfg.report_len = sizeof rep;
    shared s;
    memset(&s, 0, sizeof s);
    redcoll_mock_stats st[3];
    CHECK_INT(redcoll_mock_run(3, &cfg, prog_abort, &s, st), REDCOLL_EABORTED);
    CHECK_INT(s.rc[0][0], REDCOLL_OK);
    CHECK_INT(s.rc[0][1], REDCOLL_EABORTED);
    CHECK_INT(s.rc[1][0], REDCOLL_EABORTED);
    CHECK_INT(s.rc[1][1], REDCOLL_EABORTED);
    CHECK_INT(s.rc[2][0], REDCOLL_EABORTED);
    CHECK_INT(s.rc[2][1], REDCOLL_EABORTED);
    CHECK_INT(st[0].status, REDCOLL_OK);
    CHECK_INT(st[1].status, REDCOLL_EABORTED);
    CHECK_INT(st[0].msgs_recv, 1);
    CHECK_INT(st[2].msgs_sent, 1);
    CHECK(strcmp(rep, "rank 0: aborted the run (REDCOLL_EPROTO)\n") == 0);
  }
}

/* ---- fault injection ----------------------------------------------------------- */

/* fail_rank 1, fail_after 1: rank 1's call 0 (a receive from 0) works, call
 * 1 (a send to 2) fails, and so does everything after.  Rank 0's second send
 * to 1 and rank 2's receive from 1 fail with REDCOLL_ETRANSPORT, whether they
 * were posted before or after the failure.  An eager message rank 1 sent to
 * 2 before dying is still delivered. */
static int prog_fault(redcoll_comm *c, void *arg) {
  shared *s = arg;
  int r = redcoll_comm_rank(c);
  unsigned char b[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  if (r == 0) {
    s->rc[0][0] = t_send(c, 1, 1, b, 8);
    s->rc[0][1] = t_send(c, 1, 1, b, 8);
    s->rc[0][2] = t_send(c, 2, 1, b, 8);
    return s->rc[0][1];
  }
  if (r == 1) {
    s->rc[1][0] = t_recv(c, 0, 1, s->buf[1], 8);
    s->rc[1][1] = t_send(c, 2, 1, b, 8);
    s->rc[1][2] = t_recv(c, 0, 1, s->buf[1], 8);
    t_abort(c, REDCOLL_ETRANSPORT); /* a dead rank cannot abort the others */
    return s->rc[1][1];
  }
  s->rc[2][0] = t_recv(c, 1, 1, s->buf[2], 8);
  s->rc[2][1] = t_recv(c, 0, 1, s->buf[2] + 8, 8);
  return s->rc[2][0];
}

/* Eager variant: rank 1 sends one eager message to 2, then dies. */
static int prog_fault_eager(redcoll_comm *c, void *arg) {
  shared *s = arg;
  int r = redcoll_comm_rank(c);
  unsigned char b[2] = {9, 9};
  if (r == 0) return REDCOLL_OK;
  if (r == 1) {
    s->rc[1][0] = t_send(c, 2, 1, b, 2);
    s->rc[1][1] = t_send(c, 2, 1, b, 2);
    return s->rc[1][1];
  }
  s->rc[2][0] = t_recv(c, 1, 1, s->buf[2], 2);
  s->rc[2][1] = t_recv(c, 1, 1, s->buf[2] + 2, 2);
  return s->rc[2][1];
}

static void test_fault(void) {
  for (uint64_t seed = 1; seed <= 8; seed++) {
    redcoll_mock_config cfg = cfg_abg(1.0, 0.0, 0.0);
    cfg.seed = seed;
    cfg.fail_rank = 1;
    cfg.fail_after = 1;
    char rep[256];
    cfg.report = rep;
    cfg.report_len = sizeof rep;
    shared s;
    memset(&s, 0, sizeof s);
    redcoll_mock_stats st[3];
    CHECK_INT(redcoll_mock_run(3, &cfg, prog_fault, &s, st), REDCOLL_ETRANSPORT);
    CHECK_INT(s.rc[0][0], REDCOLL_OK);
    CHECK_INT(s.rc[0][1], REDCOLL_ETRANSPORT);
    CHECK_INT(s.rc[0][2], REDCOLL_OK);
    CHECK_INT(s.rc[1][0], REDCOLL_OK);
    CHECK_INT(s.rc[1][1], REDCOLL_ETRANSPORT);
    CHECK_INT(s.rc[1][2], REDCOLL_ETRANSPORT);
    CHECK_INT(s.rc[2][0], REDCOLL_ETRANSPORT);
    CHECK_INT(s.rc[2][1], REDCOLL_OK);
    CHECK(s.buf[1][0] == 1 && s.buf[2][8] == 1 && s.buf[2][15] == 8);
    CHECK_INT(st[0].status, REDCOLL_ETRANSPORT);
    CHECK_INT(st[1].status, REDCOLL_ETRANSPORT);
    CHECK_INT(st[2].status, REDCOLL_ETRANSPORT);
    CHECK(strcmp(rep, "rank 1: injected transport failure at call 1\n") == 0);

    cfg.eager_limit = 4;
    memset(&s, 0, sizeof s);
    CHECK_INT(redcoll_mock_run(3, &cfg, prog_fault_eager, &s, st), REDCOLL_ETRANSPORT);
    CHECK_INT(s.rc[1][0], REDCOLL_OK);
    CHECK_INT(s.rc[1][1], REDCOLL_ETRANSPORT);
    CHECK_INT(s.rc[2][0], REDCOLL_OK);
    CHECK_INT(s.rc[2][1], REDCOLL_ETRANSPORT);
    CHECK(s.buf[2][0] == 9 && s.buf[2][2] == 0);

    /* fail_after beyond the calls made: nothing happens. */
    cfg.eager_limit = 0;
    cfg.fail_after = 3;
    memset(&s, 0, sizeof s);
    CHECK_INT(redcoll_mock_run(3, &cfg, prog_chain, NULL, NULL), REDCOLL_OK);
  }
}

/* ---- determinism ----------------------------------------------------------- */

/* p = 7: three shifted exchanges (sendrecv to r+k, from r-k) of varied sizes
 * with reductions between them, a gather to rank 0 in rank order, and a
 * reply to everybody.  Eager limit 16 makes some messages eager. */
#define DP 7
typedef struct {
  uint64_t sum[DP];
} det_out;

static int prog_det(redcoll_comm *c, void *arg) {
  det_out *o = arg;
  int r = redcoll_comm_rank(c), p = redcoll_comm_size(c);
  unsigned char in[64], out[64];
  uint64_t acc = (uint64_t)r * 1000003u;
  for (int k = 1; k <= 3; k++) {
    int dst = (r + k) % p, src = (r - k + p) % p;
    size_t slen = (size_t)(8 + 7 * ((r + k) % 5)), rlen = (size_t)(8 + 7 * ((src + k) % 5));
    for (size_t i = 0; i < slen; i++) out[i] = (unsigned char)(acc >> (i % 8 * 8)) ^ (unsigned char)i;
    int rc = t_sendrecv(c, dst, (uint64_t)k, out, slen, src, (uint64_t)k, in, rlen);
    if (rc != REDCOLL_OK) return rc;
    for (size_t i = 0; i < rlen; i++) acc = acc * 31 + in[i];
    t_charge(c, rlen * (size_t)(r + 1));
  }
  if (r == 0) {
    for (int i = 1; i < p; i++) {
      uint64_t v;
      int rc = t_recv(c, i, 99, &v, sizeof v);
      if (rc != REDCOLL_OK) return rc;
      acc ^= v + (uint64_t)i;
      t_charge(c, 8);
    }
    for (int i = 1; i < p; i++) {
      int rc = t_send(c, i, 100, &acc, sizeof acc);
      if (rc != REDCOLL_OK) return rc;
    }
  } else {
    int rc = t_send(c, 0, 99, &acc, sizeof acc);
    if (rc == REDCOLL_OK) rc = t_recv(c, 0, 100, &acc, sizeof acc);
    if (rc != REDCOLL_OK) return rc;
  }
  o->sum[r] = acc;
  return REDCOLL_OK;
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The trace lines without their "msg=N " prefix, sorted, joined. */
static char *trace_set(const char *t) {
  size_t n = 0, cap = 64;
  char *copy = strdup(t);
  char **lines = malloc(cap * sizeof *lines);
  for (char *save = NULL, *l = strtok_r(copy, "\n", &save); l != NULL;
       l = strtok_r(NULL, "\n", &save)) {
    if (n == cap) lines = realloc(lines, (cap *= 2) * sizeof *lines);
    char *sp = strchr(l, ' ');
    lines[n++] = sp ? sp + 1 : l;
  }
  qsort(lines, n, sizeof *lines, cmp_str);
  char *out = calloc(strlen(t) + 1, 1);
  for (size_t i = 0; i < n; i++) {
    strcat(out, lines[i]);
    strcat(out, "\n");
  }
  free(lines);
  free(copy);
  return out;
}

/* a and b agree in clocks, messages and volumes, rank by rank. */
static void same_clocks(const redcoll_mock_stats *a, const redcoll_mock_stats *b, int p) {
  for (int r = 0; r < p; r++) {
    CHECK_DBL(a[r].time, b[r].time);
    CHECK_INT(a[r].rounds, b[r].rounds);
    CHECK_INT(a[r].bytes_sent, b[r].bytes_sent);
    CHECK_INT(a[r].bytes_recv, b[r].bytes_recv);
    CHECK_INT(a[r].msgs_sent, b[r].msgs_sent);
    CHECK_INT(a[r].msgs_recv, b[r].msgs_recv);
    CHECK_INT(a[r].bytes_reduced, b[r].bytes_reduced);
  }
}

static char *run_det(uint64_t seed, redcoll_mock_stats *st, det_out *o) {
  redcoll_mock_config cfg = cfg_abg(1.5, 0.125, 0.0625);
  cfg.seed = seed;
  cfg.eager_limit = 16;
  FILE *tr = tmpfile();
  cfg.trace = tr;
  memset(o, 0, sizeof *o);
  CHECK_INT(redcoll_mock_run(DP, &cfg, prog_det, o, st), REDCOLL_OK);
  char *t = slurp(tr);
  fclose(tr);
  return t;
}

static void test_determinism(void) {
  redcoll_mock_stats st1[DP], st2[DP];
  det_out o1, o2;
  char *t1 = run_det(42, st1, &o1);
  char *t2 = run_det(42, st2, &o2);
  CHECK(t1 != NULL && t2 != NULL && strcmp(t1, t2) == 0);
  CHECK(memcmp(st1, st2, sizeof st1) == 0);
  CHECK(memcmp(&o1, &o2, sizeof o1) == 0);
  /* 3 * 7 exchanges + 6 gathered + 6 replies */
  size_t lines = 0;
  for (const char *q = t1; q && *q; q++) lines += *q == '\n';
  CHECK_INT(lines, 3 * DP + 2 * (DP - 1));
  for (int r = 1; r < DP; r++) CHECK(o1.sum[r] == o1.sum[0]);
  free(t2);

  /* Other seeds: other interleavings, same clocks, same data, same set of
   * transfers. */
  char *set1 = trace_set(t1);
  int differs = 0;
  for (uint64_t seed = 1; seed <= 6; seed++) {
    t2 = run_det(seed, st2, &o2);
    differs |= strcmp(t1, t2) != 0;
    char *set2 = trace_set(t2);
    CHECK(strcmp(set1, set2) == 0);
    free(set2);
    free(t2);
    same_clocks(st2, st1, DP);
    CHECK(memcmp(&o1, &o2, sizeof o1) == 0);
  }
  CHECK(differs); /* the seed does change the order */
  free(set1);
  free(t1);
}

/* ---- dot -------------------------------------------------------------------- */

static void test_dot(void) {
  redcoll_mock_config cfg = cfg_abg(1.0, 0.0, 0.0);
  FILE *f = tmpfile();
  cfg.dot = f;
  CHECK_INT(redcoll_mock_run(3, &cfg, prog_chain, NULL, NULL), REDCOLL_OK);
  char *d = slurp(f);
  fclose(f);
  CHECK(d != NULL && strcmp(d, "digraph redcoll {\n"
                               "  node [shape=circle];\n"
                               "  rank0 [label=\"0\"];\n  rank1 [label=\"1\"];\n"
                               "  rank2 [label=\"2\"];\n"
                               "  rank0 -> rank1 [label=\"round 1, 1 B\"];\n"
                               "  rank1 -> rank2 [label=\"round 2, 1 B\"];\n"
                               "}\n") == 0);
  free(d);
}

/* ---- through the core: a collective with and without a fault ---------------- */

static int prog_allreduce(redcoll_comm *c, void *arg) {
  int64_t *res = arg;
  int r = redcoll_comm_rank(c);
  int64_t v[5];
  for (int i = 0; i < 5; i++) v[i] = r * 10 + i;
  int rc = redcoll_allreduce(c, REDCOLL_IN_PLACE, v, 5, REDCOLL_INT64, REDCOLL_SUM);
  res[r] = rc == REDCOLL_OK ? v[4] : -1;
  return rc;
}

static void test_core(void) {
  int64_t res[9];
  redcoll_mock_stats st[9];
  CHECK_INT(redcoll_mock_run(9, NULL, prog_allreduce, res, st), REDCOLL_OK);
  for (int r = 0; r < 9; r++) {
    CHECK_INT(res[r], 10 * 36 + 9 * 4);
    /* Every message is a call of its own or half of a sendrecv. */
    CHECK(st[r].calls > 0 && st[r].calls <= st[r].msgs_sent + st[r].msgs_recv);
  }
  /* Rank 4 dies at its first call: its value never leaves it, so no rank
   * may succeed, and none may hang. */
  redcoll_mock_config cfg;
  redcoll_mock_config_init(&cfg);
  cfg.fail_rank = 4;
  cfg.fail_after = 0;
  int rc = redcoll_mock_run(9, &cfg, prog_allreduce, res, st);
  CHECK(rc == REDCOLL_ETRANSPORT || rc == REDCOLL_EABORTED);
  CHECK_INT(st[4].status, REDCOLL_ETRANSPORT);
  for (int r = 0; r < 9; r++)
    CHECK_MSG(st[r].status == REDCOLL_ETRANSPORT || st[r].status == REDCOLL_EABORTED,
              "rank %d status %d", r, st[r].status);
  /* Dying at its second call: whoever still succeeds has the right sum. */
  cfg.fail_after = 1;
  rc = redcoll_mock_run(9, &cfg, prog_allreduce, res, st);
  CHECK(rc == REDCOLL_ETRANSPORT || rc == REDCOLL_EABORTED);
  CHECK_INT(st[4].status, REDCOLL_ETRANSPORT);
  for (int r = 0; r < 9; r++)
    CHECK_MSG(st[r].status == REDCOLL_ETRANSPORT || st[r].status == REDCOLL_EABORTED ||
                  (st[r].status == REDCOLL_OK && res[r] == 396),
              "rank %d status %d", r, st[r].status);
}

/* ---- scale --------------------------------------------------------------------- */

/* Every rank sends 8 bytes to rank 0, which takes them in rank order and
 * then answers each.  alpha 1: rank 0 ends at 2(p-1), rank r at p-1+r. */
static int prog_star(redcoll_comm *c, void *arg) {
  (void)arg;
  int r = redcoll_comm_rank(c), p = redcoll_comm_size(c);
  uint64_t v = (uint64_t)r;
  if (r == 0) {
    for (int i = 1; i < p; i++) {
      int rc = t_recv(c, i, 1, &v, 8);
      if (rc != REDCOLL_OK) return rc;
      if (v != (uint64_t)i) return REDCOLL_EPROTO;
    }
    for (int i = 1; i < p; i++) {
      v = (uint64_t)i * 3;
      int rc = t_send(c, i, 2, &v, 8);
      if (rc != REDCOLL_OK) return rc;
    }
    return REDCOLL_OK;
  }
  int rc = t_send(c, 0, 1, &v, 8);
  if (rc == REDCOLL_OK) rc = t_recv(c, 0, 2, &v, 8);
  if (rc == REDCOLL_OK && v != (uint64_t)r * 3) rc = REDCOLL_EPROTO;
  return rc;
}

static void test_scale(void) {
  enum { P = 4096 };
  redcoll_mock_stats *st = calloc(P, sizeof *st);
  double t0 = now_s();
  int rc = redcoll_mock_run(P, NULL, prog_star, NULL, st);
  double dt = now_s() - t0;
  printf("4096-rank star (8190 messages): %.3f s\n", dt);
  CHECK_INT(rc, REDCOLL_OK);
  CHECK_DBL(st[0].time, 2.0 * (P - 1));
  CHECK_INT(st[0].msgs_recv, P - 1);
  int ok = 1;
  for (int r = 1; r < P; r++)
    ok &= st[r].time == (double)(P - 1 + r) && st[r].rounds == (uint64_t)(P - 1 + r) &&
          st[r].msgs_sent == 1 && st[r].msgs_recv == 1 && st[r].status == REDCOLL_OK;
  CHECK(ok);
  free(st);
}

/* ---- worlds of the program's threads ------------------------------------ */

typedef struct {
  redcoll_comm *comm;
  redcoll_rank_main fn;
  void *arg;
  int status, stats_rc;
  redcoll_mock_stats st;
} world_rank;

static void *world_thread(void *a) {
  world_rank *w = a;
  w->status = w->fn(w->comm, w->arg);
  w->stats_rc = redcoll_mock_comm_stats(w->comm, &w->st); /* checked by the main thread */
  redcoll_comm_destroy(w->comm);
  return NULL;
}

/* Runs fn on a world of p threads (p <= DP) as redcoll_mock_run runs it;
 * returns the trace, fills st and statuses. */
static char *run_world(int p, redcoll_mock_config *cfg, redcoll_rank_main fn, void *arg,
                       redcoll_mock_stats *st, int *status) {
  redcoll_comm *comms[DP];
  world_rank w[DP];
  pthread_t tid[DP];
  FILE *tr = tmpfile();
  cfg->trace = tr;
  CHECK_INT(redcoll_mock_world_create(p, cfg, comms), REDCOLL_OK);
  for (int i = 0; i < p; i++) {
    w[i] = (world_rank){.comm = comms[i], .fn = fn, .arg = arg};
    CHECK_INT(pthread_create(&tid[i], NULL, world_thread, &w[i]), 0);
  }
  for (int i = 0; i < p; i++) {
    pthread_join(tid[i], NULL);
    CHECK_INT(w[i].stats_rc, REDCOLL_OK);
    st[i] = w[i].st;
    status[i] = w[i].status;
  }
  char *t = slurp(tr);
  fclose(tr);
  cfg->trace = NULL;
  return t;
}

/* The determinism program on a world of threads: the same trace for the
 * same seed run after run, the same transfers, clocks and data as
 * redcoll_mock_run. */
static void test_world(void) {
  redcoll_mock_stats ref[DP], st1[DP], st2[DP];
  det_out oref, o1, o2;
  int status[DP];
  char *tref = run_det(42, ref, &oref);
  redcoll_mock_config cfg = cfg_abg(1.5, 0.125, 0.0625);
  cfg.seed = 42;
  cfg.eager_limit = 16;
  memset(&o1, 0, sizeof o1);
  char *t1 = run_world(DP, &cfg, prog_det, &o1, st1, status);
  for (int r = 0; r < DP; r++) CHECK_INT(status[r], REDCOLL_OK);
  memset(&o2, 0, sizeof o2);
  char *t2 = run_world(DP, &cfg, prog_det, &o2, st2, status);
  CHECK(t1 != NULL && t2 != NULL && strcmp(t1, t2) == 0);
  char *setref = trace_set(tref), *set1 = trace_set(t1);
  CHECK(strcmp(setref, set1) == 0);
  CHECK(memcmp(&o1, &oref, sizeof o1) == 0 && memcmp(&o2, &oref, sizeof o2) == 0);
  same_clocks(st1, ref, DP);
  CHECK(memcmp(st1, st2, sizeof st1) == 0);
  free(setref);
  free(set1);
  free(tref);
  free(t1);
  free(t2);
}

/* A deadlock in a world is reported as under redcoll_mock_run, to every
 * rank, with the report written when the last communicator goes; a rank
 * waiting for one that is destroyed without sending is a deadlock too. */
static void test_world_deadlock(void) {
  char rep[512];
  redcoll_mock_config cfg = cfg_abg(1.0, 0.0, 0.0);
  cfg.report = rep;
  cfg.report_len = sizeof rep;
  shared s;
  memset(&s, 0, sizeof s);
  redcoll_mock_stats st[2];
  int status[2];
  free(run_world(2, &cfg, prog_recv_first, &s, st, status));
  for (int r = 0; r < 2; r++) {
    CHECK_INT(status[r], REDCOLL_EDEADLOCK);
    CHECK_INT(s.rc[r][0], REDCOLL_EDEADLOCK);
  }
  CHECK_MSG(strcmp(rep, recv_first_report) == 0, "report: %s", rep);

  redcoll_comm *comms[2];
  CHECK_INT(redcoll_mock_world_create(2, NULL, comms), REDCOLL_OK);
  redcoll_comm_destroy(comms[1]);
  double x = 1, y = 0;
  CHECK_INT(redcoll_allreduce(comms[0], &x, &y, 1, REDCOLL_FLOAT64, REDCOLL_SUM), REDCOLL_EDEADLOCK);
  redcoll_comm_destroy(comms[0]);
}

/* Collectives on a world of threads give the results and statistics of
 * redcoll_mock_run; the arguments are checked. */
static int prog_colls(redcoll_comm *c, void *arg) {
  (void)arg;
  int r = redcoll_comm_rank(c), p = redcoll_comm_size(c);
  double x[100], y[100];
  for (int i = 0; i < 100; i++) x[i] = r * 100 + i;
  int rc = redcoll_allreduce(c, x, y, 100, REDCOLL_FLOAT64, REDCOLL_SUM);
  if (rc == REDCOLL_OK) rc = redcoll_reduce(c, x, y, 100, REDCOLL_FLOAT64, REDCOLL_MAX, 2);
  if (rc == REDCOLL_OK) rc = redcoll_barrier(c);
  if (rc != REDCOLL_OK) return rc;
  if (r == 2)
    for (int i = 0; i < 100; i++)
      if (y[i] != (p - 1) * 100 + i) return REDCOLL_EINVAL;
  return REDCOLL_OK;
}

static void test_world_colls(void) {
  redcoll_mock_stats ref[5], st[5];
  int status[5];
  redcoll_mock_config cfg = cfg_abg(1.0, 0.001, 0.0001);
  CHECK_INT(redcoll_mock_run(5, &cfg, prog_colls, NULL, ref), REDCOLL_OK);
  free(run_world(5, &cfg, prog_colls, NULL, st, status));
  for (int r = 0; r < 5; r++) CHECK_INT(status[r], REDCOLL_OK);
  same_clocks(st, ref, 5);
  redcoll_comm *one[1] = {(redcoll_comm *)1};
  CHECK_INT(redcoll_mock_world_create(0, NULL, one), REDCOLL_EINVAL);
  CHECK(one[0] == (redcoll_comm *)1);
  CHECK_INT(redcoll_mock_world_create(2, NULL, NULL), REDCOLL_EINVAL);
  CHECK_INT(redcoll_mock_world_create(65537, NULL, one), REDCOLL_EINVAL);
  CHECK_INT(redcoll_mock_world_create(1, NULL, one), REDCOLL_OK);
  double v = 3, w = 0;
  CHECK_INT(redcoll_allreduce(one[0], &v, &w, 1, REDCOLL_FLOAT64, REDCOLL_SUM), REDCOLL_OK);
  CHECK_DBL(w, 3);
  redcoll_mock_stats s1;
  CHECK_INT(redcoll_mock_comm_stats(one[0], NULL), REDCOLL_EINVAL);
  CHECK_INT(redcoll_mock_comm_stats(one[0], &s1), REDCOLL_OK);
  CHECK_INT(s1.calls, 0);
  redcoll_comm_destroy(one[0]);
  CHECK_INT(redcoll_mock_comm_stats(NULL, &s1), REDCOLL_EINVAL);
}

TEST_MAIN(TEST(test_defaults_and_args), TEST(test_pair_clocks), TEST(test_ring3), TEST(test_chain_rounds), TEST(test_eager), TEST(test_fifo_zero), TEST(test_mismatch), TEST(test_deadlock), TEST(test_abort), TEST(test_fault), TEST(test_determinism), TEST(test_dot), TEST(test_core), TEST(test_scale), TEST(test_world), TEST(test_world_deadlock), TEST(test_world_colls))
