/*
 * The TCP transport: frame header and address parsing, configuration from
 * the environment, point-to-point over real sockets on 127.0.0.1 (and ::1
 * when the host has IPv6), the collectives with every algorithm for p = 1..8,
 * timeouts, aborts, a rank killed in the middle of an allreduce, and the
 * set-up of 32 processes.
 */
#include <pthread.h>
#include <limits.h>
#include <stdio.h>
#include <sys/ioctl.h>
#include <sys/mman.h>

#include "test.h"
#include "disagree.h"
#include "tcp_runner.h"

#include "raw.h"
#include "transport/tcp/addr.h"
#include "transport/tcp/chan.h"
#include "transport/tcp/failure.h"
#include "transport/tcp/tcp_int.h"

static double now_s(void) { return tcp_run__now(); }

static void sleep_ms(int ms) { tcp_run_sleep_ms(ms); }

/* Memory shared between the forked ranks and the parent. */
typedef struct shared {
  double t[64];
  int st[64];
  double kill_time;
} shared;

static shared *shared_new(void) { return tcp_run_shared(sizeof(shared)); }

#define t_send raw_send
#define t_recv raw_recv
#define t_sendrecv raw_exchange

static unsigned char pat(int from, size_t i, uint64_t salt) {
  return (unsigned char)(i * 131u + (size_t)from * 7u + salt * 13u + (i >> 12));
}

/* ---- units ------------------------------------------------------------------ */

/* The records of channel groups and their index (chan.c): 20000 groups, as
 * many destroyed communicators would leave, each found again; a CLOSE's bit
 * per peer; nothing confused between groups. */
static void test_group_index(void) {
  redcoll__tcp *t = calloc(1, sizeof *t);
  if (t == NULL) return;
  t->size = 70;
  for (uint64_t k = 0; k < 20000; k++) {
    redcoll__tcp_group *g = redcoll__tcp_group_get(t, k * 4 + 4, 1);
    CHECK(g != NULL && g->group == k * 4 + 4 && g->from == -1);
    if (g != NULL && k % 3 == 0) g->cancelled = REDCOLL_EABORTED;
  }
  CHECK(t->nbuckets >= 20000 / 2);
  size_t bad = 0;
  for (uint64_t k = 0; k < 20000; k++) {
    redcoll__tcp_group *g = redcoll__tcp_group_get(t, k * 4 + 4, 0);
    bad += g == NULL || g->group != k * 4 + 4;
    bad += redcoll__tcp_chan_status(t, k * 4 + 4 + 2) != (k % 3 == 0 ? REDCOLL_EABORTED : 0);
  }
  CHECK_INT(bad, 0);
  CHECK(redcoll__tcp_group_get(t, 0, 0) == NULL);
  CHECK(redcoll__tcp_group_get(t, 80004, 0) == NULL);
  redcoll__tcp_peer_closed(t, 69, 8);
  redcoll__tcp_peer_closed(t, 8, 8);
  CHECK(redcoll__tcp_peer_has_closed(t, 69, 8) && redcoll__tcp_peer_has_closed(t, 8, 8));
  CHECK(!redcoll__tcp_peer_has_closed(t, 9, 8) && !redcoll__tcp_peer_has_closed(t, 69, 12));
  CHECK(!redcoll__tcp_peer_has_closed(t, 69, 123456));
  redcoll__tcp_groups_free(t);
  CHECK(t->groups == NULL && t->nbuckets == 0);
  free(t);
}

/* A kept message handed to its receive (chan.c): whole at once, or on the
 * program's loop one slice per call; not while only part of it is there;
 * never to a receive that has its message already (matched: it took over
 * one while it arrived and may still be copying what came first), whose
 * channel's next message must wait for the next receive; and a receive
 * that expects another length fails with REDCOLL_EMISMATCH. */
static unsigned char kept_byte(int k, size_t i) { return (unsigned char)(k * 13 + i * 5 + (i >> 11)); }

static redcoll__tcp_umsg *kept(redcoll__tcp *t, redcoll__tcp_pchan *pc, int k, size_t len) {
  redcoll__tcp_umsg *m = redcoll__tcp_umsg_push(t, 1, pc, 7, len);
  if (m == NULL) return NULL;
  for (size_t i = 0; i < len; i++) m->data[i] = kept_byte(k, i);
  m->got = len;
  return m;
}

static int kept_wrong(int k, const unsigned char *b, size_t len) {
  for (size_t i = 0; i < len; i++)
    if (b[i] != kept_byte(k, i)) return 1;
  return 0;
}

static void test_umsg_deliver(void) {
  redcoll__tcp *t = calloc(1, sizeof *t);
  size_t big = 2 * REDCOLL__TCP_EXT_COPY + 5;
  unsigned char *buf = calloc(1, big);
  int have = t != NULL && buf != NULL && (t->peers = calloc(2, sizeof *t->peers)) != NULL;
  CHECK(have); /* (no memory: a failure, not a pass) */
  if (!have) return;
  t->size = 2;
  redcoll__tcp_pchan *pc = redcoll__tcp_pchan_get(t, 1, 36, 1);
  redcoll__tcp_umsg *m = pc != NULL ? kept(t, pc, 1, big) : NULL;
  CHECK(m != NULL);
  if (m == NULL) return;
  CHECK(t->peers[1].unexpected == big + REDCOLL__TCP_UMSG_COST);
  CHECK_INT(redcoll__tcp_umsg_deliver(t, 1, pc), 0); /* no receive */
  redcoll__tcp_recv r = {.src = 1, .tag = 7, .chan = 36, .buf = buf, .len = big, .matched = 1};
  pc->rx = &r;
  CHECK_INT(redcoll__tcp_umsg_deliver(t, 1, pc), 0);
  CHECK(pc->head == m && pc->rx == &r && r.got == 0 && !r.done && !r.copying);
  CHECK(buf[0] == 0 && buf[big - 1] == 0);
  /* Posted and not matched: all of it now. */
  r.matched = 0;
  m->got = big - 1; /* while its last byte is still to come: nothing */
  CHECK_INT(redcoll__tcp_umsg_deliver(t, 1, pc), 0);
  CHECK(pc->head == m && r.got == 0 && !r.done);
  m->got = big;
  CHECK_INT(redcoll__tcp_umsg_deliver(t, 1, pc), 1);
  CHECK(r.done && r.status == REDCOLL_OK && r.got == big && !kept_wrong(1, buf, big));
  CHECK(pc->head == NULL && pc->rx == NULL && t->peers[1].unexpected == 0);
  /* On the program's loop: two slices, then the rest. */
  t->ext = 1;
  memset(buf, 0, big);
  m = kept(t, pc, 2, big);
  redcoll__tcp_recv r2 = {.src = 1, .tag = 7, .chan = 36, .buf = buf, .len = big};
  pc->rx = &r2;
  int calls = 1;
  while (m != NULL && redcoll__tcp_umsg_deliver(t, 1, pc) == 0 && calls < 10) {
    CHECK(r2.copying && r2.got == (size_t)calls * REDCOLL__TCP_EXT_COPY && pc->head == m);
    calls++;
  }
  CHECK_INT(calls, 3);
  CHECK(r2.done && r2.status == REDCOLL_OK && !r2.copying && !kept_wrong(2, buf, big));
  /* Another length than the receive's: a mismatch, its group out of step. */
  m = kept(t, pc, 3, 100);
  redcoll__tcp_recv r3 = {.src = 1, .tag = 7, .chan = 36, .buf = buf, .len = 99};
  pc->rx = &r3;
  CHECK_INT(redcoll__tcp_umsg_deliver(t, 1, pc), 1);
  CHECK(r3.done && r3.status == REDCOLL_EMISMATCH);
  CHECK_INT(redcoll__tcp_chan_status(t, 37), REDCOLL_EMISMATCH);
  redcoll__tcp_pchan_free_all(t, 1);
  redcoll__tcp_spares_free(t);
  redcoll__tcp_groups_free(t);
  free(t->peers);
  free(t);
  free(buf);
}

/* Large kept messages' buffers are kept as spares (chan.c) within a byte
 * budget: a piped step's dozen 1 MiB segments kept at once come back to
 * the same buffers in the next call instead of fresh, page-faulting
 * memory; a buffer too small or too large, or one that would take the
 * spares past the budget, is freed. */
/* What t's spares hold together. */
/* The check of tags that conflict (chan.c): a message kept on a channel
 * whose tag has the number of this rank's current collective and another
 * call breaks the group; one of the same call in another phase, or of the
 * next collective, does not; and a record whose collective this rank has
 * left (it sent in a later one since) does not count, since only 24 bits
 * of the number are in a tag.  A receive whose collective finds such a
 * message kept fails at once. */
static void test_chan_conflict(void) {
  redcoll__tcp *t = calloc(1, sizeof *t);
  int have = t != NULL && (t->peers = calloc(2, sizeof *t->peers)) != NULL;
  CHECK(have);
  if (!have) return;
  t->size = 2;
  const uint64_t a = (uint64_t)5 << 40 | 0x123450, other = (uint64_t)5 << 40 | 0x987650;
  CHECK_INT(redcoll__tcp_chan_enter(t, 40, a, 6), REDCOLL_OK);
  CHECK_INT(redcoll__tcp_chan_kept(t, 1, 40, a | 2), 0);                 /* a phase */
  CHECK_INT(redcoll__tcp_chan_kept(t, 1, 40, (uint64_t)6 << 40 | 0x40), 0); /* the next */
  CHECK_INT(redcoll__tcp_chan_kept(t, 1, 41, other), 0);               /* another channel */
  CHECK_INT(redcoll__tcp_chan_kept(t, 1, 40, (uint64_t)0x703270 << 40 | 9), 0); /* p2p */
  redcoll__tcp_chan_sent(t, 40, 7); /* this rank has moved on */
  CHECK_INT(redcoll__tcp_chan_kept(t, 1, 40, other), 0);
  CHECK_INT(redcoll__tcp_chan_status(t, 40), REDCOLL_OK);
  redcoll__tcp_chan_sent(t, 40, 6); /* (the record's collective is the last again) */
  CHECK_INT(redcoll__tcp_chan_kept(t, 1, 40, other), 1);
  CHECK_INT(redcoll__tcp_chan_status(t, 41), REDCOLL_EMISMATCH); /* the whole group */
  /* A receive that finds such a message kept, in a group of its own: a
   * later phase of its own call is not, another call is. */
  redcoll__tcp_pchan *pc = redcoll__tcp_pchan_get(t, 1, 80, 1);
  redcoll__tcp_umsg *m = pc != NULL ? kept(t, pc, 1, 8) : NULL;
  CHECK(m != NULL);
  if (m == NULL) return;
  m->tag = a | 3;
  CHECK_INT(redcoll__tcp_chan_enter(t, 80, a | 1, 6), REDCOLL_OK);
  m = kept(t, pc, 2, 8);
  CHECK(m != NULL);
  if (m == NULL) return;
  m->tag = other;
  CHECK_INT(redcoll__tcp_chan_enter(t, 80, a | 2, 6), REDCOLL_EMISMATCH);
  CHECK_INT(redcoll__tcp_chan_status(t, 80), REDCOLL_EMISMATCH);
  redcoll__tcp_pchan_free_all(t, 1);
  redcoll__tcp_spares_free(t);
  redcoll__tcp_groups_free(t);
  free(t->peers);
  free(t);
}

static size_t held(const redcoll__tcp *t) {
  return redcoll__tcp_spares_held(t->spare, REDCOLL__TCP_SPARES);
}

static void test_spares(void) {
  const size_t M = (size_t)1 << 20;
  redcoll__tcp_umsg *fake[REDCOLL__TCP_SPARES], *sp[REDCOLL__TCP_SPARES] = {0};
  int got = 1;
  for (int i = 0; i < REDCOLL__TCP_SPARES; i++)
    got &= (fake[i] = calloc(1, sizeof *fake[i])) != NULL;
  CHECK(got); /* (no memory: a failure, not a pass) */
  CHECK_INT(redcoll__tcp_spare_slot(sp, REDCOLL__TCP_SPARES, REDCOLL__TCP_SPARE_MIN - 1), -1);
  CHECK_INT(redcoll__tcp_spare_slot(sp, REDCOLL__TCP_SPARES, REDCOLL__TCP_SPARE_MAX + 1), -1);
  CHECK_INT(redcoll__tcp_spare_slot(sp, REDCOLL__TCP_SPARES, M), 0);
  /* Four of 4, 4, 3 and 4 MiB: 15 MiB held. */
  size_t caps[4] = {4 * M, 4 * M, 3 * M, 4 * M};
  for (int i = 0; got && i < 4; i++) {
    fake[i]->cap = caps[i];
    sp[i] = fake[i];
  }
  CHECK(redcoll__tcp_spares_held(sp, REDCOLL__TCP_SPARES) == 15 * M);
  CHECK_INT(redcoll__tcp_spare_slot(sp, REDCOLL__TCP_SPARES, M), 4);      /* 16 MiB: fits */
  CHECK_INT(redcoll__tcp_spare_slot(sp, REDCOLL__TCP_SPARES, 2 * M), -1); /* 17, 3 not smaller */
  CHECK_INT(redcoll__tcp_spare_slot(sp, REDCOLL__TCP_SPARES, 4 * M), 2);  /* 3 MiB's place */
  /* Fifteen of 1 MiB and a free slot: another fits there; a 2 MiB one
   * would pass the budget there, so it takes the first 1 MiB's place. */
  for (int i = 0; got && i < REDCOLL__TCP_SPARES; i++) {
    fake[i]->cap = M;
    sp[i] = i < REDCOLL__TCP_SPARES - 1 ? fake[i] : NULL;
  }
  CHECK(redcoll__tcp_spares_held(sp, REDCOLL__TCP_SPARES) == 15 * M);
  CHECK_INT(redcoll__tcp_spare_slot(sp, REDCOLL__TCP_SPARES, M), REDCOLL__TCP_SPARES - 1);
  CHECK_INT(redcoll__tcp_spare_slot(sp, REDCOLL__TCP_SPARES, 2 * M), 0);
  /* All sixteen (the budget): nothing more, nothing larger. */
  sp[REDCOLL__TCP_SPARES - 1] = fake[REDCOLL__TCP_SPARES - 1];
  CHECK_INT(redcoll__tcp_spare_slot(sp, REDCOLL__TCP_SPARES, M), -1);
  CHECK_INT(redcoll__tcp_spare_slot(sp, REDCOLL__TCP_SPARES, 2 * M), -1);
  for (int i = 0; i < REDCOLL__TCP_SPARES; i++) free(fake[i]);
  if (!got) return;

  /* Through the transport: 12 segments of 1 MiB kept at once, given back,
   * kept again: the same 12 buffers, and the budget holds. */
  redcoll__tcp *t = calloc(1, sizeof *t);
  int have = t != NULL && (t->peers = calloc(2, sizeof *t->peers)) != NULL;
  CHECK(have); /* (no memory: a failure, not a pass) */
  if (!have) {
    free(t);
    return;
  }
  t->size = 2;
  redcoll__tcp_pchan *pc = redcoll__tcp_pchan_get(t, 1, 40, 1);
  redcoll__tcp_umsg *first[12] = {0};
  int made = 0, reused = 0;
  for (int round = 0; round < 2 && pc != NULL; round++) {
    for (int i = 0; i < 12; i++) {
      redcoll__tcp_umsg *m = redcoll__tcp_umsg_push(t, 1, pc, 7, M);
      if (m == NULL) break;
      made++;
      for (int j = 0; round == 1 && j < 12; j++) reused += first[j] == m;
      if (round == 0) first[i] = m;
    }
    CHECK(held(t) == 0); /* none yet, then all taken back out */
    while (pc->head != NULL) {
      redcoll__tcp_umsg *m = pc->head;
      pc->head = m->next;
      redcoll__tcp_umsg_free(t, m);
    }
    pc->tail = NULL;
    CHECK(held(t) == 12 * M);
  }
  CHECK_INT(made, 24);
  CHECK_INT(reused, 12);
  /* A shorter message reuses a spare of at most twice its length, keeping
   * the spare's size; a much shorter one takes fresh memory. */
  redcoll__tcp_umsg *mid = pc != NULL ? redcoll__tcp_umsg_push(t, 1, pc, 7, M / 2) : NULL;
  redcoll__tcp_umsg *small = pc != NULL ? redcoll__tcp_umsg_push(t, 1, pc, 7, M / 4) : NULL;
  CHECK(mid != NULL && mid->cap == M && mid->len == M / 2 && held(t) == 11 * M);
  CHECK(small != NULL && small->cap == M / 4 && held(t) == 11 * M);
  if (mid != NULL && small != NULL) {
    pc->head = pc->tail = NULL;
    redcoll__tcp_umsg_free(t, mid);
    redcoll__tcp_umsg_free(t, small);
    CHECK(held(t) == 12 * M + M / 4);
    redcoll__tcp_spares_free(t); /* (back to none) */
    CHECK(held(t) == 0);
  }
  /* A 16 MiB message: a spare alone; with another kept, past the budget. */
  redcoll__tcp_umsg *huge = pc != NULL ? redcoll__tcp_umsg_push(t, 1, pc, 7, 16 * M) : NULL;
  CHECK(huge != NULL);
  redcoll__tcp_umsg *one = pc != NULL ? redcoll__tcp_umsg_push(t, 1, pc, 7, M) : NULL;
  CHECK(one != NULL);
  if (huge != NULL && one != NULL) {
    pc->head = pc->tail = NULL;
    redcoll__tcp_umsg_free(t, huge);
    CHECK(held(t) == 16 * M);
    redcoll__tcp_umsg_free(t, one); /* 17 MiB: freed */
    CHECK(held(t) == 16 * M);
    redcoll__tcp_umsg *again = redcoll__tcp_umsg_push(t, 1, pc, 7, 16 * M);
    CHECK(again == huge && held(t) == 0);
    pc->head = pc->tail = NULL;
    if (again != NULL) redcoll__tcp_umsg_free(t, again);
  }
  t->peers[1].unexpected = 0;
  redcoll__tcp_pchan_free_all(t, 1);
  redcoll__tcp_spares_free(t);
  CHECK(held(t) == 0);
  redcoll__tcp_groups_free(t);
  free(t->peers);
  free(t);
}

/* A socket connected to itself (simultaneous open: bound to a port of
 * this host and connected to that very address) is told from one connected
 * to a listener; the rendezvous closes such a socket and tries again. */
static void test_self_connect(void) {
  struct sockaddr_in a;
  socklen_t al = sizeof a;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  CHECK(fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
        getsockname(fd, (struct sockaddr *)&a, &al) == 0);
  CHECK_INT(redcoll__tcp_fd_self_connected(fd), 0); /* not connected */
  CHECK_INT(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
  CHECK_INT(redcoll__tcp_fd_self_connected(fd), 1);
  close(fd);
  /* To a listener: not itself. */
  int l = socket(AF_INET, SOCK_STREAM, 0), c = socket(AF_INET, SOCK_STREAM, 0);
  a.sin_port = 0;
  al = sizeof a;
  CHECK(l >= 0 && c >= 0 && bind(l, (struct sockaddr *)&a, sizeof a) == 0 && listen(l, 1) == 0 &&
        getsockname(l, (struct sockaddr *)&a, &al) == 0);
  CHECK_INT(connect(c, (struct sockaddr *)&a, sizeof a), 0);
  CHECK_INT(redcoll__tcp_fd_self_connected(c), 0);
  close(c);
  close(l);
}

static void test_frames(void) {
  unsigned char h[REDCOLL__TCP_HDR];
  redcoll__tcp_frame f;
  redcoll__tcp_encode_ch(h, REDCOLL__FR_DATA, 0x0123456789abcdefULL, (uint64_t)5 << 32,
                         0x8877665544332211ULL);
  CHECK_INT(REDCOLL__TCP_HDR, 32);
  CHECK_INT(h[0], 'R');
  CHECK_INT(h[3], 'L');
  CHECK_INT(h[4], 5); /* the wire version */
  CHECK_INT(h[8], 0xef);
  CHECK_INT(h[20], 5);
  CHECK_INT(h[24], 0x11);
  CHECK_INT(h[31], 0x88);
  CHECK_INT(redcoll__tcp_decode(h, &f), REDCOLL_OK);
  CHECK_INT(f.type, REDCOLL__FR_DATA);
  CHECK(f.tag == 0x0123456789abcdefULL);
  CHECK(f.len == (uint64_t)5 << 32);
  CHECK(f.chan == 0x8877665544332211ULL);
  /* A channel only on DATA, CANCEL and CLOSE. */
  unsigned char hc[REDCOLL__TCP_HDR];
  static const unsigned chan_types[] = {REDCOLL__FR_DATA, REDCOLL__FR_CANCEL, REDCOLL__FR_CLOSE};
  for (unsigned ty = REDCOLL__FR_DATA; ty <= REDCOLL__FR_CLOSE; ty++) {
    int allowed = 0;
    for (size_t i = 0; i < 3; i++) allowed |= chan_types[i] == ty;
    redcoll__tcp_encode_ch(hc, ty, 1, 0, 4);
    CHECK_INT(redcoll__tcp_decode(hc, &f), allowed ? REDCOLL_OK : REDCOLL_EPROTO);
    redcoll__tcp_encode(hc, ty, 1, 0);
    CHECK_INT(redcoll__tcp_decode(hc, &f), REDCOLL_OK);
    CHECK(f.chan == 0);
  }
  static const int bad_at[] = {0, 3, 4, 5, 6, 7};
  for (size_t i = 0; i < sizeof bad_at / sizeof bad_at[0]; i++) {
    unsigned char b[REDCOLL__TCP_HDR];
    memcpy(b, h, sizeof b);
    b[bad_at[i]] ^= 0x40;
    CHECK_INT(redcoll__tcp_decode(b, &f), REDCOLL_EPROTO);
  }
  h[5] = 0;
  CHECK_INT(redcoll__tcp_decode(h, &f), REDCOLL_EPROTO);
  h[5] = REDCOLL__FR_CLOSE;
  CHECK_INT(redcoll__tcp_decode(h, &f), REDCOLL_OK);
  h[5] = REDCOLL__FR_CLOSE + 1;
  CHECK_INT(redcoll__tcp_decode(h, &f), REDCOLL_EPROTO);
  /* Authentication steps and their payloads; the HELLO check. */
  CHECK_INT(redcoll__tcp_auth_len(0), 0);
  CHECK_INT(redcoll__tcp_auth_len(1), 32);
  CHECK_INT(redcoll__tcp_auth_len(2), 64);
  CHECK_INT(redcoll__tcp_auth_len(3), 32);
  CHECK_INT(redcoll__tcp_auth_len(4), -1);
  CHECK_INT(redcoll__tcp_auth_len(UINT64_MAX), -1);
  const char *why = NULL;
  redcoll__tcp_frame hf = {REDCOLL__FR_HELLO, 2 | (uint64_t)4 << 32, REDCOLL__TCP_HELLO_LEN, 0};
  CHECK_INT(redcoll__tcp_hello_check(&hf, 0, 4, &why), 2);
  CHECK_INT(redcoll__tcp_hello_check(&hf, 2, 4, &why), -1); /* itself */
  CHECK_INT(redcoll__tcp_hello_check(&hf, 0, 5, &why), -1); /* another size */
  CHECK(why != NULL && strstr(why, "size") != NULL);
  hf.tag = 4 | (uint64_t)4 << 32; /* rank out of range */
  CHECK_INT(redcoll__tcp_hello_check(&hf, 0, 4, &why), -1);
  hf.tag = 1 | (uint64_t)4 << 32;
  hf.len = 4; /* the job id has 8 bytes */
  CHECK_INT(redcoll__tcp_hello_check(&hf, 0, 4, &why), -1);
  CHECK(why != NULL && strstr(why, "malformed") != NULL);
  hf.len = REDCOLL__TCP_HELLO_LEN;
  CHECK_INT(redcoll__tcp_hello_check(&hf, 0, 4, &why), 1);
  hf.type = REDCOLL__FR_DATA;
  CHECK_INT(redcoll__tcp_hello_check(&hf, 0, 4, &why), -1);
  /* Little-endian fields and the job id digest (FNV-1a 64, reference
   * values of the published test vectors: "" and "a"). */
  unsigned char le[8];
  redcoll__tcp_put_le(le, 0x1122334455667788ULL, 8);
  CHECK_INT(le[0], 0x88);
  CHECK_INT(le[7], 0x11);
  CHECK(redcoll__tcp_get_le(le, 8) == 0x1122334455667788ULL);
  CHECK(redcoll__tcp_get_le(le, 2) == 0x7788);
  CHECK(redcoll__tcp_fnv1a(REDCOLL__TCP_FNV_INIT, "", 0) == 0xcbf29ce484222325ULL);
  CHECK(redcoll__tcp_fnv1a(REDCOLL__TCP_FNV_INIT, "a", 1) == 0xaf63dc4c8601ec8cULL);
  /* A host list's id: its entries as written, separators aside. */
  uint64_t hd = redcoll__tcp_hosts_digest("node1:5000,node2:5000");
  CHECK(hd != 0);
  CHECK(redcoll__tcp_hosts_digest(" node1:5000  node2:5000\n") == hd);
  CHECK(redcoll__tcp_hosts_digest("node1:5000,,node2:5000,") == hd);
  CHECK(redcoll__tcp_hosts_digest("node2:5000,node1:5000") != hd);
  CHECK(redcoll__tcp_hosts_digest("node1:5000,node2:5001") != hd);
  CHECK(redcoll__tcp_hosts_digest("node1:5000node2:5000") != hd);
}

static int parse(const char *s, int defport, char *out, size_t n) {
  redcoll__tcp_addr a;
  int has;
  int rc = redcoll__tcp_parse_addr(s, strlen(s), defport, &a, &has);
  if (rc == REDCOLL_OK) redcoll__tcp_addr_str(&a, out, n);
  return rc;
}

/* A BYE's tag carries the abort its sender left after, and gives it back:
 * an authentication that failed with rank 65534, a status; none. */
static void test_bye_tag(void) {
  redcoll__tcp t;
  memset(&t, 0, sizeof t);
  t.abort_from = -1;
  uint64_t why = 7;
  CHECK_INT(redcoll__tcp_bye_tag(&t, 1), 1);
  CHECK_INT(redcoll__tcp_bye_abort(redcoll__tcp_bye_tag(&t, 1), &why), -1);
  t.abort_from = 65535; /* rank 65535, the largest */
  t.abort_why = (uint32_t)(int32_t)REDCOLL_EPROTO | (uint64_t)1 << 32 | (uint64_t)65534 << 40;
  uint64_t tag = redcoll__tcp_bye_tag(&t, 0);
  CHECK(tag >> REDCOLL__TCP_BYE_BITS == 0 && (tag & 3) == 2);
  CHECK_INT(redcoll__tcp_bye_abort(tag, &why), -1); /* 0xffff means not known */
  t.abort_from = 3;
  tag = redcoll__tcp_bye_tag(&t, 1);
  CHECK_INT(redcoll__tcp_bye_abort(tag, &why), 3);
  CHECK(why == t.abort_why && (tag & 1) == 1);
  t.abort_why = (uint32_t)(int32_t)REDCOLL_ETIMEDOUT;
  CHECK_INT(redcoll__tcp_bye_abort(redcoll__tcp_bye_tag(&t, 0), &why), 3);
  CHECK(why == t.abort_why);
}

static void test_addresses(void) {
  char b[64];
  CHECK_INT(parse("127.0.0.1:5000", -1, b, sizeof b), REDCOLL_OK);
  CHECK(strcmp(b, "127.0.0.1:5000") == 0);
  CHECK_INT(parse("[::1]:80", -1, b, sizeof b), REDCOLL_OK);
  CHECK(strcmp(b, "[::1]:80") == 0);
  CHECK_INT(parse("::1", 7, b, sizeof b), REDCOLL_OK);
  CHECK(strcmp(b, "[::1]:7") == 0);
  CHECK_INT(parse("10.1.2.3", 9, b, sizeof b), REDCOLL_OK);
  CHECK(strcmp(b, "10.1.2.3:9") == 0);
  CHECK_INT(parse("localhost:12", -1, b, sizeof b), REDCOLL_OK);
  CHECK_INT(parse("10.1.2.3", -1, b, sizeof b), REDCOLL_EINVAL);
  CHECK_INT(parse("10.1.2.3:", -1, b, sizeof b), REDCOLL_EINVAL);
  CHECK_INT(parse("10.1.2.3:65536", -1, b, sizeof b), REDCOLL_EINVAL);
  CHECK_INT(parse("10.1.2.3:12a", -1, b, sizeof b), REDCOLL_EINVAL);
  CHECK_INT(parse("[::1", -1, b, sizeof b), REDCOLL_EINVAL);
  CHECK_INT(parse("[::1]x80", -1, b, sizeof b), REDCOLL_EINVAL);
  CHECK_INT(parse("", 1, b, sizeof b), REDCOLL_EINVAL);

  redcoll__tcp_addr a, d;
  int has;
  CHECK_INT(redcoll__tcp_parse_addr(":77", 3, -1, &a, &has), REDCOLL_OK);
  CHECK_INT(has, 0);
  CHECK_INT(redcoll__tcp_addr_port(&a), 77);
  CHECK_INT(redcoll__tcp_parse_addr("127.9.0.1:1", 11, -1, &a, NULL), REDCOLL_OK);
  CHECK(redcoll__tcp_addr_loopback(&a));
  CHECK_INT(redcoll__tcp_parse_addr("[::1]:1", 7, -1, &a, NULL), REDCOLL_OK);
  CHECK(redcoll__tcp_addr_loopback(&a));
  CHECK_INT(redcoll__tcp_parse_addr("[2001:db8::5]:65535", 19, -1, &a, NULL), REDCOLL_OK);
  CHECK(!redcoll__tcp_addr_loopback(&a));
  unsigned char w[REDCOLL__TCP_ADDR_WIRE];
  redcoll__tcp_addr_encode(w, &a);
  CHECK_INT(redcoll__tcp_addr_decode(w, &d), REDCOLL_OK);
  CHECK(redcoll__tcp_addr_equal(&a, &d));
  w[0] = 5;
  CHECK_INT(redcoll__tcp_addr_decode(w, &d), REDCOLL_EPROTO);
  CHECK_INT(redcoll__tcp_parse_addr("10.0.0.1:3", 10, -1, &a, NULL), REDCOLL_OK);
  redcoll__tcp_addr_encode(w, &a);
  CHECK_INT(redcoll__tcp_addr_decode(w, &d), REDCOLL_OK);
  CHECK(redcoll__tcp_addr_equal(&a, &d));
  w[10] = 1; /* garbage after an IPv4 address */
  CHECK_INT(redcoll__tcp_addr_decode(w, &d), REDCOLL_EPROTO);
  /* One host: the same address whatever the port, or loopback both. */
  CHECK_INT(redcoll__tcp_parse_addr("10.0.0.1:4", 10, -1, &d, NULL), REDCOLL_OK);
  CHECK(redcoll__tcp_addr_same_host(&a, &d) && !redcoll__tcp_addr_equal(&a, &d));
  CHECK_INT(redcoll__tcp_parse_addr("10.0.0.2:3", 10, -1, &d, NULL), REDCOLL_OK);
  CHECK(!redcoll__tcp_addr_same_host(&a, &d));
  CHECK_INT(redcoll__tcp_parse_addr("127.0.0.1:3", 11, -1, &a, NULL), REDCOLL_OK);
  CHECK_INT(redcoll__tcp_parse_addr("127.0.0.2:3", 11, -1, &d, NULL), REDCOLL_OK);
  CHECK(redcoll__tcp_addr_same_host(&a, &d) && !redcoll__tcp_addr_equal(&a, &d));
  CHECK_INT(redcoll__tcp_parse_addr("[::1]:3", 7, -1, &d, NULL), REDCOLL_OK);
  CHECK(redcoll__tcp_addr_same_host(&a, &d));

  /* Interfaces: lo is selected by name, excluded with ^lo. */
  char why[160];
  CHECK_INT(redcoll__tcp_pick_interface("lo", AF_INET, &a, why, sizeof why), REDCOLL_OK);
  CHECK(redcoll__tcp_addr_loopback(&a));
  if (redcoll__tcp_pick_interface("^lo", AF_INET, &a, why, sizeof why) == REDCOLL_OK)
    CHECK(!redcoll__tcp_addr_loopback(&a));
  CHECK_INT(redcoll__tcp_pick_interface("no-such-if0", AF_INET, &a, why, sizeof why),
            REDCOLL_EINVAL);
  CHECK(strstr(why, "no-such-if0") != NULL);
}

static void clear_env(void) {
  static const char *const vars[] = {
      "REDCOLL_RANK", "REDCOLL_SIZE", "SLURM_PROCID", "SLURM_NTASKS", "OMPI_COMM_WORLD_RANK",
      "OMPI_COMM_WORLD_SIZE", "PMI_RANK", "PMI_SIZE", "REDCOLL_HOSTS", "REDCOLL_MASTER",
      "REDCOLL_TIMEOUT_MS", "REDCOLL_IFNAME", "REDCOLL_LISTEN", "REDCOLL_SECRET", "REDCOLL_JOB_ID",
      "SLURM_JOB_ID", "SLURM_STEP_ID", "OMPI_MCA_ess_base_jobid", "RANK", "WORLD_SIZE",
      "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT", "TORCHELASTIC_RUN_ID",
      "TORCHELASTIC_RESTART_COUNT", "REDCOLL_UNEXPECTED_MAX"};
  for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) unsetenv(vars[i]);
}

/* torchrun's variables: rank and size, and the rendezvous one port above
 * MASTER_PORT (PyTorch's own store keeps that one); REDCOLL_MASTER wins. */
static void test_env_torchrun(void) {
  redcoll_tcp_config cfg;
  clear_env();
  setenv("RANK", "2", 1);
  setenv("WORLD_SIZE", "4", 1);
  setenv("LOCAL_RANK", "0", 1);
  setenv("MASTER_ADDR", "node7", 1);
  setenv("MASTER_PORT", "29500", 1);
  CHECK_INT(redcoll_tcp_config_from_env(&cfg), REDCOLL_OK);
  CHECK_INT(cfg.rank, 2);
  CHECK_INT(cfg.size, 4);
  CHECK(cfg.master != NULL && strcmp(cfg.master, "node7:29501") == 0);
  setenv("MASTER_ADDR", "fd00::7", 1);
  CHECK_INT(redcoll_tcp_config_from_env(&cfg), REDCOLL_OK);
  CHECK(cfg.master != NULL && strcmp(cfg.master, "[fd00::7]:29501") == 0);
  setenv("TORCHELASTIC_RUN_ID", "run-9", 1);
  CHECK_INT(redcoll_tcp_config_from_env(&cfg), REDCOLL_OK);
  CHECK(cfg.job_id != 0);
  setenv("REDCOLL_MASTER", "10.0.0.1:5000", 1);
  CHECK_INT(redcoll_tcp_config_from_env(&cfg), REDCOLL_OK);
  CHECK(strcmp(cfg.master, "10.0.0.1:5000") == 0);
  setenv("WORLD_SIZE", "2", 1); /* RANK 2 of 2 */
  CHECK_INT(redcoll_tcp_config_from_env(&cfg), REDCOLL_EINVAL);
  clear_env();
}

/* Fills a stretch of the stack with a pattern: what an uninitialised local
 * of the next call reads. */
static __attribute__((noinline)) void dirty_stack(void) {
  volatile unsigned char junk[4096];
  for (size_t i = 0; i < sizeof junk; i++) junk[i] = (unsigned char)(0x5a + i);
}

/* REDCOLL_UNEXPECTED_MAX: unset or empty leaves the default (0: 64 MiB), a
 * number is taken, anything else fails.  Its reading once took "unset" for
 * "set" and the other way round: the bound was whatever the stack held
 * (even 2 bytes, which stopped a connection at its second kept message and
 * stalled threads receiving on other channels until their timeout), and a
 * value set was ignored. */
static void test_env_unexpected_max(void) {
  redcoll_tcp_config cfg;
  clear_env();
  setenv("REDCOLL_RANK", "0", 1);
  setenv("REDCOLL_SIZE", "2", 1);
  dirty_stack();
  CHECK_INT(redcoll_tcp_config_from_env(&cfg), REDCOLL_OK);
  CHECK_MSG(cfg.unexpected_max == 0, "unset: %llu", (unsigned long long)cfg.unexpected_max);
  setenv("REDCOLL_UNEXPECTED_MAX", "", 1);
  dirty_stack();
  CHECK_INT(redcoll_tcp_config_from_env(&cfg), REDCOLL_OK);
  CHECK_MSG(cfg.unexpected_max == 0, "empty: %llu", (unsigned long long)cfg.unexpected_max);
  setenv("REDCOLL_UNEXPECTED_MAX", "65536", 1);
  CHECK_INT(redcoll_tcp_config_from_env(&cfg), REDCOLL_OK);
  CHECK(cfg.unexpected_max == 65536);
  setenv("REDCOLL_UNEXPECTED_MAX", "18446744073709551615", 1);
  CHECK_INT(redcoll_tcp_config_from_env(&cfg), REDCOLL_OK);
  CHECK(cfg.unexpected_max == UINT64_MAX);
  setenv("REDCOLL_UNEXPECTED_MAX", "64k", 1);
  CHECK_INT(redcoll_tcp_config_from_env(&cfg), REDCOLL_EINVAL);
  setenv("REDCOLL_UNEXPECTED_MAX", "lots", 1);
  CHECK_INT(redcoll_tcp_config_from_env(&cfg), REDCOLL_EINVAL);
  clear_env();
}

/* Bad configuration fails at once with a message, instead of being retried
 * until the timeout (a master without a host or with port 0 used to be
 * retried for the whole timeout and reported as "Connection timed out");
 * nothing listening is retried, then reported as such. */
static void test_bad_config(void) {
  static const char *const masters[] = {":5000", ":0", "127.0.0.1:0", "127.0.0.1:70000"};
  redcoll_tcp_config cfg;
  redcoll_comm *c = NULL;
  for (size_t i = 0; i < sizeof masters / sizeof masters[0]; i++) {
    redcoll_tcp_config_init(&cfg);
    cfg.rank = 1;
    cfg.size = 2;
    cfg.master = masters[i];
    cfg.wait_timeout_ms = 20000;
    double t0 = now_s();
    CHECK_INT(redcoll_tcp_comm_create(&cfg, &c), REDCOLL_EINVAL);
    CHECK_MSG(now_s() - t0 < 1.0, "%s took %.2f s", masters[i], now_s() - t0);
  }
  clear_env();
  setenv("REDCOLL_RANK", "0", 1);
  setenv("REDCOLL_SIZE", "100000000", 1);
  CHECK_INT(redcoll_tcp_config_from_env(&cfg), REDCOLL_EINVAL);
  clear_env();
  redcoll_tcp_config_init(&cfg);
  cfg.rank = 0;
  cfg.size = REDCOLL_TCP_MAX_SIZE + 1;
  cfg.master = "127.0.0.1:5000";
  CHECK_INT(redcoll_tcp_comm_create(&cfg, &c), REDCOLL_EINVAL);
}

static void test_env(void) {
  redcoll_tcp_config cfg;
  clear_env();
  CHECK_INT(redcoll_tcp_config_from_env(&cfg), REDCOLL_EINVAL);
  setenv("SLURM_PROCID", "3", 1);
  setenv("SLURM_NTASKS", "8", 1);
  setenv("REDCOLL_MASTER", "node0:2900", 1);
  setenv("REDCOLL_TIMEOUT_MS", "1234", 1);
  setenv("REDCOLL_IFNAME", "^docker0", 1);
  CHECK_INT(redcoll_tcp_config_from_env(&cfg), REDCOLL_OK);
  CHECK_INT(cfg.rank, 3);
  CHECK_INT(cfg.size, 8);
  CHECK(cfg.master != NULL && strcmp(cfg.master, "node0:2900") == 0);
  CHECK(cfg.hosts == NULL);
  CHECK_INT(cfg.wait_timeout_ms, 1234);
  CHECK(cfg.ifname != NULL && strcmp(cfg.ifname, "^docker0") == 0);
  /* REDCOLL_RANK/SIZE win over the launcher's. */
  setenv("REDCOLL_RANK", "1", 1);
  setenv("REDCOLL_SIZE", "2", 1);
  CHECK_INT(redcoll_tcp_config_from_env(&cfg), REDCOLL_OK);
  CHECK_INT(cfg.rank, 1);
  CHECK_INT(cfg.size, 2);
  setenv("REDCOLL_RANK", "2", 1);
  CHECK_INT(redcoll_tcp_config_from_env(&cfg), REDCOLL_EINVAL); /* rank >= size */
  unsetenv("REDCOLL_SIZE");
  CHECK_INT(redcoll_tcp_config_from_env(&cfg), REDCOLL_EINVAL); /* half a pair */
  clear_env();
  setenv("OMPI_COMM_WORLD_RANK", "0", 1);
  setenv("OMPI_COMM_WORLD_SIZE", "4", 1);
  CHECK_INT(redcoll_tcp_config_from_env(&cfg), REDCOLL_OK);
  CHECK_INT(cfg.size, 4);
  clear_env();
  setenv("PMI_RANK", "5", 1);
  setenv("PMI_SIZE", "6", 1);
  setenv("REDCOLL_TIMEOUT_MS", "soon", 1);
  CHECK_INT(redcoll_tcp_config_from_env(&cfg), REDCOLL_EINVAL);
  setenv("REDCOLL_TIMEOUT_MS", "-5", 1);
  CHECK_INT(redcoll_tcp_config_from_env(&cfg), REDCOLL_EINVAL);
  setenv("REDCOLL_TIMEOUT_MS", "0", 1); /* no bound, as for threads */
  CHECK_INT(redcoll_tcp_config_from_env(&cfg), REDCOLL_OK);
  CHECK(cfg.wait_timeout_ms == REDCOLL_WAIT_FOREVER);
  unsetenv("REDCOLL_TIMEOUT_MS");
  CHECK_INT(redcoll_tcp_config_from_env(&cfg), REDCOLL_OK);
  CHECK_INT(cfg.rank, 5);
  /* The job id: none; REDCOLL_JOB_ID; else the job (and step) of the
   * launcher that gave the rank, never another launcher's.  The values are
   * FNV-1a 64 of "1234", "1234.5", "job-7" and "99". */
  CHECK(cfg.job_id == 0);
  setenv("SLURM_JOB_ID", "1234", 1);
  CHECK_INT(redcoll_tcp_config_from_env(&cfg), REDCOLL_OK);
  CHECK(cfg.job_id == 0); /* the rank came from PMI_RANK */
  clear_env();
  setenv("SLURM_PROCID", "0", 1);
  setenv("SLURM_NTASKS", "2", 1);
  setenv("SLURM_JOB_ID", "1234", 1);
  CHECK_INT(redcoll_tcp_config_from_env(&cfg), REDCOLL_OK);
  CHECK(cfg.job_id == 0x1fabbdf10314a21dULL);
  setenv("SLURM_STEP_ID", "5", 1);
  CHECK_INT(redcoll_tcp_config_from_env(&cfg), REDCOLL_OK);
  CHECK(cfg.job_id == 0xf7096c7e0e871d14ULL);
  setenv("REDCOLL_JOB_ID", "job-7", 1);
  CHECK_INT(redcoll_tcp_config_from_env(&cfg), REDCOLL_OK);
  CHECK(cfg.job_id == 0xf2c2ea802008f85cULL);
  clear_env();
  setenv("OMPI_COMM_WORLD_RANK", "1", 1);
  setenv("OMPI_COMM_WORLD_SIZE", "2", 1);
  setenv("SLURM_JOB_ID", "1234", 1);
  setenv("OMPI_MCA_ess_base_jobid", "99", 1);
  CHECK_INT(redcoll_tcp_config_from_env(&cfg), REDCOLL_OK);
  CHECK(cfg.job_id == 0x8140b07b4d19df7ULL);
  clear_env();

  /* Bad configurations fail before anything is sent. */
  redcoll_comm *c = (redcoll_comm *)1;
  redcoll_tcp_config_init(&cfg);
  CHECK_INT(redcoll_tcp_comm_create(&cfg, &c), REDCOLL_EINVAL);
  CHECK(c == NULL);
  cfg.rank = 0;
  cfg.size = 2;
  CHECK_INT(redcoll_tcp_comm_create(&cfg, &c), REDCOLL_EINVAL); /* no hosts, no master */
  cfg.hosts = "127.0.0.1:1";
  CHECK_INT(redcoll_tcp_comm_create(&cfg, &c), REDCOLL_EINVAL); /* one entry for two */
  cfg.hosts = "127.0.0.1:1,10.9.8.7:1";
  CHECK_INT(redcoll_tcp_comm_create(&cfg, &c), REDCOLL_EINVAL); /* loopback and remote */
  cfg.hosts = "127.0.0.1:1 127.0.0.1:x";
  CHECK_INT(redcoll_tcp_comm_create(&cfg, &c), REDCOLL_EINVAL);
#ifndef REDCOLL_HAVE_SODIUM
  /* Without libsodium a secret cannot be honoured (with it, see
   * test_tcp_faults "secret"). */
  cfg.hosts = NULL;
  cfg.master = "127.0.0.1:1";
  cfg.secret = "s3cret";
  CHECK_INT(redcoll_tcp_comm_create(&cfg, &c), REDCOLL_ENOTSUP);
#endif
  /* One rank needs nobody. */
  redcoll_tcp_config_init(&cfg);
  cfg.rank = 0;
  cfg.size = 1;
  CHECK_INT(redcoll_tcp_comm_create(&cfg, &c), REDCOLL_OK);
  CHECK(redcoll_tcp_comm_set_wait_timeout(c, 5) == REDCOLL_OK);
  int64_t v = 7, r = 0;
  CHECK_INT(redcoll_allreduce(c, &v, &r, 1, REDCOLL_INT64, REDCOLL_SUM), REDCOLL_OK);
  CHECK_INT(r, 7);
  redcoll_comm_destroy(c);
}

/* ---- point-to-point ------------------------------------------------------------- */

static const size_t p2p_sizes[] = {0, 1, 8, 23, 4096, 65537, (size_t)3 << 20};

static int rank_p2p(redcoll_comm *c, void *arg) {
  (void)arg;
  int me = redcoll_comm_rank(c), other = 1 - me;
  size_t max = (size_t)8 << 20;
  unsigned char *sb = malloc(max), *rb = malloc(max + 16);
  int rc = REDCOLL_OK;
  if (sb == NULL || rb == NULL) return REDCOLL_ENOMEM;
  /* One direction, every size, tags that change. */
  for (size_t k = 0; k < sizeof p2p_sizes / sizeof p2p_sizes[0]; k++) {
    size_t n = p2p_sizes[k];
    if (me == 0) {
      for (size_t i = 0; i < n; i++) sb[i] = pat(0, i, k);
      rc = t_send(c, 1, 100 + k, sb, n);
      CHECK_INT(rc, REDCOLL_OK);
    } else {
      memset(rb, 0xee, n + 16);
      rc = t_recv(c, 0, 100 + k, rb, n);
      CHECK_INT(rc, REDCOLL_OK);
      size_t bad = 0;
      for (size_t i = 0; i < n; i++) bad += rb[i] != pat(0, i, k);
      CHECK_INT(bad, 0);
      for (size_t i = n; i < n + 16; i++) bad += rb[i] != 0xee;
      CHECK_INT(bad, 0);
    }
    if (rc != REDCOLL_OK) goto out;
  }
  /* Full duplex: both ranks exchange 8 MiB at once (more than the socket
   * buffers hold, so the sends finish only if both directions flow). */
  for (size_t i = 0; i < max; i++) sb[i] = pat(me, i, 9);
  rc = t_sendrecv(c, other, 7, sb, max, other, 7, rb, max);
  CHECK_INT(rc, REDCOLL_OK);
  if (rc != REDCOLL_OK) goto out;
  size_t bad = 0;
  for (size_t i = 0; i < max; i++) bad += rb[i] != pat(other, i, 9);
  CHECK_INT(bad, 0);
  /* Messages that arrive long before their receives stay in order. */
  if (me == 0) {
    for (int m = 0; m < 5; m++) {
      uint64_t v = 1000 + (uint64_t)m;
      rc = t_send(c, 1, 200 + (uint64_t)m, &v, sizeof v);
      CHECK_INT(rc, REDCOLL_OK);
    }
  } else {
    sleep_ms(100);
    for (int m = 0; m < 5; m++) {
      uint64_t v = 0;
      rc = t_recv(c, 0, 200 + (uint64_t)m, &v, sizeof v);
      CHECK_INT(rc, REDCOLL_OK);
      CHECK_INT(v, 1000 + m);
    }
  }
  /* Zero-length sendrecv. */
  rc = t_sendrecv(c, other, 3, NULL, 0, other, 3, NULL, 0);
  CHECK_INT(rc, REDCOLL_OK);
out:
  free(sb);
  free(rb);
  return rc;
}

/* A receiver that posts each receive as soon as the one before ended, as a
 * piped step does, while its sender has written them all: with the pause
 * after a large receive (REDCOLL__TCP_PAUSE_MIN) nothing of the next
 * message is read before its receive is posted, so no byte is copied out
 * of a kept message (under load, at most an eighth of a segment: below).
 * After an exchange that sets up the connections,
 * rank 1 reads nothing for 200 ms while rank 0 writes what the sockets
 * take (rank 1's loop runs only inside its calls), then takes four
 * segments of 1 MiB; then five small messages that it receives only once
 * all of them are in its socket (the kernel's count of unread bytes, which
 * the segments no longer add to), whose copies out of kept messages are
 * counted. */
#define DIRECT_SEG ((size_t)1 << 20)
static int rank_direct(redcoll_comm *c, void *arg) {
  (void)arg;
  redcoll__tcp *t = c->impl; /* tcp_run's ranks have no shared-memory path */
  int me = redcoll_comm_rank(c), rc = REDCOLL_OK;
  unsigned char *b = malloc(4 * DIRECT_SEG);
  if (b == NULL) return REDCOLL_ENOMEM;
  uint64_t x = 1, y = 0;
  rc = t_sendrecv(c, 1 - me, 299, &x, sizeof x, 1 - me, 299, &y, sizeof y);
  if (rc != REDCOLL_OK) {
    free(b);
    return rc;
  }
  if (me == 0) {
    for (size_t i = 0; i < 4 * DIRECT_SEG; i++) b[i] = pat(0, i, 5);
    for (int k = 0; k < 4 && rc == REDCOLL_OK; k++)
      rc = t_send(c, 1, 300, b + (size_t)k * DIRECT_SEG, DIRECT_SEG);
    for (uint64_t m = 0; m < 5 && rc == REDCOLL_OK; m++) rc = t_send(c, 1, 310 + m, &m, sizeof m);
  } else {
    memset(b, 0, 4 * DIRECT_SEG);
    sleep_ms(200); /* rank 0 writes meanwhile */
    uint64_t before = t->kept_copied;
    for (int k = 0; k < 4 && rc == REDCOLL_OK; k++)
      rc = t_recv(c, 0, 300, b + (size_t)k * DIRECT_SEG, DIRECT_SEG);
    CHECK_INT(rc, REDCOLL_OK);
    size_t bad = 0;
    for (size_t i = 0; i < 4 * DIRECT_SEG; i++) bad += b[i] != pat(0, i, 5);
    CHECK_INT(bad, 0);
    /* Under load (the suite's tests two at a time on two CPUs) the header
     * of the next segment can come in the same turn as the end of one
     * (measured: 126944 bytes of it kept and copied, in 2 of 3 suite runs,
     * never alone); the segments are not copied whole. */
    CHECK_MSG(t->kept_copied - before <= DIRECT_SEG / 8,
              "%llu bytes of the segments copied out of kept messages",
              (unsigned long long)(t->kept_copied - before));
    /* The small messages after them, once all are in the socket: the first
     * goes to its receive, the other four were read with it and kept, 8
     * bytes each. */
    uv_os_fd_t fd = -1;
    int avail = 0;
    if (t->peers[0].in != NULL) uv_fileno((const uv_handle_t *)&t->peers[0].in->h, &fd);
    for (int k = 0; k < 10000 && fd >= 0; k++) { /* 10 s; a few ms once rank 0 is done */
      if (ioctl(fd, FIONREAD, &avail) != 0 || avail >= 5 * (int)(REDCOLL__TCP_HDR + sizeof x))
        break;
      sleep_ms(1);
    }
    CHECK_MSG(avail >= 5 * (int)(REDCOLL__TCP_HDR + sizeof x), "%d bytes in the socket", avail);
    before = t->kept_copied;
    for (uint64_t m = 0; m < 5 && rc == REDCOLL_OK; m++) {
      uint64_t v = 99;
      rc = t_recv(c, 0, 310 + m, &v, sizeof v);
      CHECK_INT(v, m);
    }
    CHECK_INT(rc, REDCOLL_OK);
    CHECK_INT(t->kept_copied - before, 4 * sizeof(uint64_t));
  }
  free(b);
  return rc;
}

/* The send buffers of the connections between ranks of this host:
 * REDCOLL__TCP_LOCAL_SNDBUF unless REDCOLL_TCP_SNDBUF says otherwise (the
 * kernel caps what it is given at wmem_max and doubles it).  Each rank
 * exchanges a message with the other, so that both its connections exist,
 * and reports their SO_SNDBUF. */
static int rank_sndbuf(redcoll_comm *c, void *arg) {
  int *got = arg; /* shared: [2 * rank] out, [2 * rank + 1] in */
  redcoll__tcp *t = c->impl;
  int me = redcoll_comm_rank(c), other = 1 - me;
  uint64_t x = (uint64_t)me, y = 0;
  int rc = t_sendrecv(c, other, 1, &x, sizeof x, other, 1, &y, sizeof y);
  if (rc != REDCOLL_OK) return rc;
  CHECK_INT(y, other);
  redcoll__tcp_conn *conn[2] = {t->peers[other].out, t->peers[other].in};
  for (int k = 0; k < 2; k++) {
    uv_os_fd_t fd;
    int v = -1;
    socklen_t len = sizeof v;
    if (conn[k] != NULL && uv_fileno((const uv_handle_t *)&conn[k]->h, &fd) == 0)
      getsockopt(fd, SOL_SOCKET, SO_SNDBUF, &v, &len);
    got[2 * me + k] = v;
  }
  /* Both ranks done with the sockets before either destroys. */
  return t_sendrecv(c, other, 2, &x, sizeof x, other, 2, &y, sizeof y);
}

/* What SO_SNDBUF reads back after asking for v: Linux caps v at
 * net.core.wmem_max (4 MiB on this project's test machine, 212992 by
 * default on Debian 12) and doubles it. */
static int sndbuf_of(int v) {
  long max = INT_MAX / 2;
  FILE *f = fopen("/proc/sys/net/core/wmem_max", "r");
  if (f != NULL) {
    if (fscanf(f, "%ld", &max) != 1) max = INT_MAX / 2;
    fclose(f);
  }
  return 2 * (v < max ? v : (int)max);
}

static void sndbuf(void) {
  const struct {
    const char *env; /* REDCOLL_TCP_SNDBUF, NULL: unset */
    int want;        /* SO_SNDBUF, -1: not the local default */
  } cases[] = {{NULL, sndbuf_of(REDCOLL__TCP_LOCAL_SNDBUF)}, {"300000", sndbuf_of(300000)},
               {"0", -1}};
  int *got = tcp_run_shared(4 * sizeof *got);
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    if (cases[i].env != NULL) setenv("REDCOLL_TCP_SNDBUF", cases[i].env, 1);
    else unsetenv("REDCOLL_TCP_SNDBUF");
    for (int k = 0; k < 4; k++) got[k] = -2;
    CHECK_INT(tcp_run(2, rank_sndbuf, got), REDCOLL_OK);
    for (int k = 0; k < 4; k++) {
      if (cases[i].want >= 0)
        CHECK_MSG(got[k] == cases[i].want, "REDCOLL_TCP_SNDBUF=%s: socket %d has %d bytes",
                  cases[i].env ? cases[i].env : "(unset)", k, got[k]);
      else
        CHECK_MSG(got[k] > 0 && got[k] != sndbuf_of(REDCOLL__TCP_LOCAL_SNDBUF),
                  "REDCOLL_TCP_SNDBUF=0: socket %d has %d bytes", k, got[k]);
    }
    unsetenv("REDCOLL_TCP_SNDBUF");
  }
  munmap(got, 4 * sizeof *got);
  /* Not a number of bytes: creation fails at once, with a message. */
  redcoll_tcp_config cfg;
  redcoll_tcp_config_init(&cfg);
  cfg.rank = 0;
  cfg.size = 1;
  redcoll_comm *c = NULL;
  setenv("REDCOLL_TCP_SNDBUF", "1m", 1);
  CHECK_INT(redcoll_tcp_comm_create(&cfg, &c), REDCOLL_EINVAL);
  CHECK(c == NULL);
  unsetenv("REDCOLL_TCP_SNDBUF");
}

/* Rank 0 sends messages of several sizes (one longer than a connection's
 * read buffer) and closes its communicator before rank 1 asks for most of
 * them.  Rank 1 takes three, then waits for rank 2, which sends late: while
 * it takes the third (straight into its buffer) and waits, its loop reads
 * the rest of rank 0's stream and the close, with frames still undelivered
 * in the read buffer.  It still gets every message whole and in order, and
 * only the receive after the last fails, with ETRANSPORT (the connection
 * closed normally).  Without the deferred close the receive from rank 2
 * already fails (checked by taking the deferral out). */
/* The public point-to-point calls on the one TCP communicator, between
 * collectives (a ring of sendrecvs, an allreduce, a send and a receive),
 * and a dup whose messages never meet the parent's. */
static int rank_public_p2p(redcoll_comm *c, void *arg) {
  (void)arg;
  int r = redcoll_comm_rank(c), p = redcoll_comm_size(c), x = r * 10, y = -1;
  int rc = redcoll_sendrecv(c, (r + 1) % p, 5, &x, sizeof x, (r + p - 1) % p, 5, &y, sizeof y);
  if (rc != REDCOLL_OK) return rc;
  if (y != (r + p - 1) % p * 10) return REDCOLL_EINVAL;
  double s = 1, t = 0;
  if ((rc = redcoll_allreduce(c, &s, &t, 1, REDCOLL_FLOAT64, REDCOLL_SUM)) != REDCOLL_OK) return rc;
  if (t != p) return REDCOLL_EINVAL;
  if (r == 0) rc = redcoll_send(c, 1, 9, &x, sizeof x);
  if (r == 1 && (rc = redcoll_recv(c, 0, 9, &y, sizeof y)) == REDCOLL_OK && y != 0)
    rc = REDCOLL_EINVAL;
  if (rc != REDCOLL_OK) return rc;
  /* A dup's point-to-point messages never meet the parent's: rank 0 sends
   * on the dup first, rank 1 receives on the parent first. */
  redcoll_comm *d = NULL;
  if ((rc = redcoll_comm_dup(c, &d)) != REDCOLL_OK) return rc;
  int z = -1;
  if (r == 0) {
    x = 111;
    rc = redcoll_send(d, 1, 9, &x, sizeof x);
    x = 222;
    if (rc == REDCOLL_OK) rc = redcoll_send(c, 1, 9, &x, sizeof x);
  }
  if (r == 1) {
    rc = redcoll_recv(c, 0, 9, &y, sizeof y);
    if (rc == REDCOLL_OK) rc = redcoll_recv(d, 0, 9, &z, sizeof z);
    if (rc == REDCOLL_OK && (y != 222 || z != 111)) rc = REDCOLL_EINVAL;
  }
  redcoll_comm_destroy(d);
  if (rc != REDCOLL_OK) return rc;
  return redcoll_comm_error(c);
}

/* A large message whose receive is posted while it is arriving: rank 1
 * first takes a small message on a dup, which rank 0 sent just before the
 * large one on the parent, so that the large one starts landing in a kept
 * copy; the receive posted then takes over the rest of it (recv.c's
 * redcoll__tcp_recv_adopt).  Every byte must arrive, in order, and a second
 * message on the same channel after it too. */
#define LATE_BYTES ((size_t)24 << 20)
static int rank_late_recv(redcoll_comm *c, void *arg) {
  (void)arg;
  int r = redcoll_comm_rank(c), rc;
  redcoll_comm *d = NULL;
  if ((rc = redcoll_comm_dup(c, &d)) != REDCOLL_OK) return rc;
  unsigned char *big = malloc(LATE_BYTES);
  if (big == NULL) {
    redcoll_comm_destroy(d);
    return REDCOLL_ENOMEM;
  }
  uint64_t small = 0, after = 0;
  if (r == 0) {
    for (size_t i = 0; i < LATE_BYTES; i++) big[i] = pat(0, i, 7);
    small = 0x5eed;
    after = 0xaf7e2;
    rc = redcoll_send(d, 1, 3, &small, sizeof small);
    if (rc == REDCOLL_OK) rc = redcoll_send(c, 1, 4, big, LATE_BYTES);
    if (rc == REDCOLL_OK) rc = redcoll_send(c, 1, 5, &after, sizeof after);
  } else {
    memset(big, 0, LATE_BYTES);
    sleep_ms(30); /* both messages are on their way */
    rc = redcoll_recv(d, 0, 3, &small, sizeof small);
    if (rc == REDCOLL_OK) rc = redcoll_recv(c, 0, 4, big, LATE_BYTES);
    if (rc == REDCOLL_OK) rc = redcoll_recv(c, 0, 5, &after, sizeof after);
    if (rc == REDCOLL_OK) {
      size_t bad = 0;
      for (size_t i = 0; i < LATE_BYTES; i++) bad += big[i] != pat(0, i, 7);
      CHECK_MSG(bad == 0, "late receive: %zu of %zu bytes wrong", bad, LATE_BYTES);
      CHECK(small == 0x5eed);
      CHECK(after == 0xaf7e2);
    }
  }
  free(big);
  redcoll_comm_destroy(d);
  if (rc != REDCOLL_OK) return rc;
  return redcoll_comm_error(c);
}

static const size_t early_sizes[] = {0, 8, 20000, 8, 100, 1};

static int rank_early_close(redcoll_comm *c, void *arg) {
  (void)arg;
  int me = redcoll_comm_rank(c);
  size_t nmsg = sizeof early_sizes / sizeof early_sizes[0];
  uint64_t late = 77;
  if (me == 2) {
    sleep_ms(400);
    return t_send(c, 1, 500, &late, sizeof late);
  }
  unsigned char *b = malloc(20000 + 16);
  if (b == NULL) return REDCOLL_ENOMEM;
  int rc = REDCOLL_OK;
  for (size_t k = 0; k < nmsg && rc == REDCOLL_OK; k++) {
    size_t n = early_sizes[k];
    if (me == 0) {
      for (size_t i = 0; i < n; i++) b[i] = pat(0, i, k);
      rc = t_send(c, 1, 300 + k, b, n);
      CHECK_INT(rc, REDCOLL_OK);
      continue;
    }
    if (k == 0) sleep_ms(200);
    if (k == 3) {
      uint64_t v = 0;
      rc = t_recv(c, 2, 500, &v, sizeof v);
      CHECK_INT(rc, REDCOLL_OK);
      CHECK_INT(v, late);
    }
    memset(b, 0xee, n + 16);
    if (rc == REDCOLL_OK) rc = t_recv(c, 0, 300 + k, b, n);
    CHECK_INT(rc, REDCOLL_OK);
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) bad += b[i] != pat(0, i, k);
    for (size_t i = n; i < n + 16; i++) bad += b[i] != 0xee;
    CHECK_MSG(bad == 0, "message %zu (%zu bytes): %zu bytes wrong", k, n, bad);
  }
  if (me == 1 && rc == REDCOLL_OK) CHECK_INT(t_recv(c, 0, 399, b, 8), REDCOLL_ETRANSPORT);
  free(b);
  return rc;
}

/* A receive with the wrong tag or length fails with EMISMATCH and leaves the
 * buffer alone. */
static int rank_mismatch(redcoll_comm *c, void *arg) {
  int wrong_len = *(int *)arg;
  int me = redcoll_comm_rank(c);
  uint64_t v[4] = {1, 2, 3, 4};
  if (me == 0) {
    int rc = t_send(c, 1, 42, v, sizeof v);
    /* The receiver never reads the payload: the send may complete (into the
     * socket buffer) or be aborted; either way it must return. */
    CHECK(rc == REDCOLL_OK || rc == REDCOLL_EABORTED || rc == REDCOLL_ETRANSPORT);
    return REDCOLL_OK;
  }
  uint64_t r[8];
  memset(r, 0x5a, sizeof r);
  int rc = wrong_len ? t_recv(c, 0, 42, r, sizeof v - 8) : t_recv(c, 0, 43, r, sizeof v);
  CHECK_INT(rc, REDCOLL_EMISMATCH);
  size_t bad = 0;
  for (size_t i = 0; i < sizeof r; i++) bad += ((unsigned char *)r)[i] != 0x5a;
  CHECK_INT(bad, 0);
  /* Broken from now on. */
  CHECK_INT(t_recv(c, 0, 42, r, sizeof v), REDCOLL_EMISMATCH);
  return REDCOLL_OK;
}

/* A rank that waits for a peer it has no connection with either way sets a
 * probe: a timer that finds out in REDCOLL__TCP_PROBE_MS whether the peer
 * is still there.  The peer's own connection ends it, so that the first
 * send back connects at once and not when the timer fires (it did: the
 * first collective at p >= 3 took 300 ms).  Rank 0 posts its receive
 * before rank 1 has connected; once the message is in, no timer is
 * pending for rank 1, and the answer goes back. */
static int rank_probe_ends(redcoll_comm *c, void *arg) {
  (void)arg;
  redcoll__tcp *t = c->impl;
  int me = redcoll_comm_rank(c);
  uint64_t x = 7, y = 0;
  if (me == 1) {
    sleep_ms(50); /* rank 0's receive first */
    int rc = t_send(c, 0, 5, &x, sizeof x);
    if (rc == REDCOLL_OK) rc = t_recv(c, 0, 6, &y, sizeof y);
    CHECK_INT(y, 8);
    return rc;
  }
  CHECK(t->peers[1].in == NULL && t->peers[1].out == NULL); /* nothing connected yet */
  int rc = t_recv(c, 1, 5, &y, sizeof y);
  CHECK_INT(rc, REDCOLL_OK);
  CHECK_INT(y, 7);
  CHECK_INT(t->peers[1].probe, 0);
  CHECK_INT(t->peers[1].retry_active, 0);
  y = 8;
  return t_send(c, 1, 6, &y, sizeof y);
}

/* Ranks that disagree where their messages may never meet (disagree.h):
 * the tags of the same collective number with another call end it, never
 * the timeout.  st[r]: the call's status, st[32 + r]: a barrier's after. */
static int rank_disagree(redcoll_comm *c, void *arg) {
  shared *sh = arg;
  int r = redcoll_comm_rank(c);
  CHECK_INT(redcoll_tcp_comm_set_wait_timeout(c, 60000), REDCOLL_OK);
  sh->st[r] = disagree_call(c, (int)sh->t[1], (size_t)sh->t[0]);
  sh->st[32 + r] = redcoll_barrier(c);
  return REDCOLL_OK;
}

static void disagree(void) {
  shared *sh = shared_new();
  for (int p = 3; p <= 7; p += 2)
    for (int mode = 0; mode < DISAGREE_MODES; mode++)
      for (size_t n = 1; n <= 1000; n *= 1000) {
        memset(sh, 0, sizeof *sh);
        sh->t[0] = (double)n;
        sh->t[1] = mode;
        CHECK_INT(tcp_run(p, rank_disagree, sh), REDCOLL_OK);
        disagree_check(p, mode, n, sh->st, sh->st + 32, 1);
      }
  munmap(sh, sizeof *sh);
}

/* Ring shift with dst != src on three ranks. */
static int rank_ring(redcoll_comm *c, void *arg) {
  (void)arg;
  int me = redcoll_comm_rank(c), p = redcoll_comm_size(c);
  /* A host list (how this test runs it): no table from rank 0, so no
   * count of ranks per CPU (1), even with all ranks on 127.0.0.1. */
  double f = 0;
  CHECK_INT(redcoll_comm_get_ranks_per_cpu(c, &f), REDCOLL_OK);
  CHECK_DBL(f, 1.0);
  size_t n = (size_t)1 << 20;
  unsigned char *sb = malloc(n), *rb = malloc(n);
  if (sb == NULL || rb == NULL) return REDCOLL_ENOMEM;
  for (int round = 0; round < 3; round++) {
    for (size_t i = 0; i < n; i++) sb[i] = pat(me, i, (uint64_t)round);
    int rc = t_sendrecv(c, (me + 1) % p, 9, sb, n, (me + p - 1) % p, 9, rb, n);
    CHECK_INT(rc, REDCOLL_OK);
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) bad += rb[i] != pat((me + p - 1) % p, i, (uint64_t)round);
    CHECK_INT(bad, 0);
  }
  free(sb);
  free(rb);
  return REDCOLL_OK;
}

/* ---- collectives ---------------------------------------------------------------- */

#define MOD 1000003u
/* 2x2 matrices modulo a prime, row-major in 4 uint32: associative, not
 * commutative. */
static void matmul(void *out, const void *left, const void *right, size_t count, void *ctx) {
  (void)ctx;
  for (size_t e = 0; e < count; e++) {
    const uint32_t *a = (const uint32_t *)left + 4 * e, *b = (const uint32_t *)right + 4 * e;
    uint64_t r0 = ((uint64_t)a[0] * b[0] + (uint64_t)a[1] * b[2]) % MOD;
    uint64_t r1 = ((uint64_t)a[0] * b[1] + (uint64_t)a[1] * b[3]) % MOD;
    uint64_t r2 = ((uint64_t)a[2] * b[0] + (uint64_t)a[3] * b[2]) % MOD;
    uint64_t r3 = ((uint64_t)a[2] * b[1] + (uint64_t)a[3] * b[3]) % MOD;
    uint32_t *o = (uint32_t *)out + 4 * e;
    o[0] = (uint32_t)r0;
    o[1] = (uint32_t)r1;
    o[2] = (uint32_t)r2;
    o[3] = (uint32_t)r3;
  }
}

static void mat_init(uint32_t *m, int rank, size_t e) {
  m[0] = (uint32_t)(rank + 2);
  m[1] = (uint32_t)(e % 97 + 1);
  m[2] = (uint32_t)(rank * 3 + 1);
  m[3] = (uint32_t)(e % 13 + rank + 1);
}

static int64_t val(int rank, size_t i) { return (int64_t)rank * 1000003 + (int64_t)i * 7 - 50; }

static int rank_colls(redcoll_comm *c, void *arg) {
  (void)arg;
  int me = redcoll_comm_rank(c), p = redcoll_comm_size(c);
  /* The rendezvous, every rank on 127.0.0.1: rank 0's table carries its
   * online CPUs, and every rank divides p by them (one rank alone has no
   * rendezvous, and nobody to share a CPU with: 1). */
  double f = 0;
  CHECK_INT(redcoll_comm_get_ranks_per_cpu(c, &f), REDCOLL_OK);
  CHECK_DBL(f, p == 1 ? 1.0 : (double)p / (double)sysconf(_SC_NPROCESSORS_ONLN));
  size_t counts[] = {0, 1, (size_t)p + 1, 1000, 70001};
  size_t maxn = 70001 * (size_t)p;
  int64_t *in = malloc(maxn * sizeof *in), *out = malloc(maxn * sizeof *out);
  int64_t *want = malloc(maxn * sizeof *want);
  uint32_t *min = malloc(4 * 1000 * sizeof *min), *mout = malloc(4 * 1000 * sizeof *mout);
  uint32_t *mwant = malloc(4 * 1000 * sizeof *mwant), *mtmp = malloc(4 * 1000 * sizeof *mtmp);
  redcoll_op *nc = NULL;
  int rc = redcoll_op_create(matmul, 16, 0, NULL, &nc);
  if (rc != REDCOLL_OK || !in || !out || !want || !min || !mout || !mwant || !mtmp) {
    rc = REDCOLL_ENOMEM;
    goto out;
  }
  /* Allreduce with every algorithm. */
  for (int a = 0; a < REDCOLL_ALGO_COUNT; a++) {
    if (!redcoll_algo_is_supported(REDCOLL_COLL_ALLREDUCE, (redcoll_algo)a)) continue;
    CHECK_INT(redcoll_comm_set_algorithm(c, REDCOLL_COLL_ALLREDUCE, (redcoll_algo)a), REDCOLL_OK);
    for (size_t k = 0; k < sizeof counts / sizeof counts[0]; k++) {
      size_t n = counts[k];
      for (size_t i = 0; i < n; i++) {
        in[i] = val(me, i);
        want[i] = 0;
        for (int q = 0; q < p; q++) want[i] += val(q, i);
      }
      memset(out, 0, n * sizeof *out);
      rc = redcoll_allreduce(c, in, out, n, REDCOLL_INT64, REDCOLL_SUM);
      CHECK_MSG(rc == REDCOLL_OK, "p %d algo %s count %zu: %s", p, redcoll_algo_name(a), n,
                redcoll_status_name(rc));
      if (rc != REDCOLL_OK) goto out;
      CHECK_MSG(memcmp(out, want, n * sizeof *out) == 0, "p %d algo %s count %zu", p,
                redcoll_algo_name(a), n);
    }
    if (!redcoll_algo_is_rank_ordered(REDCOLL_COLL_ALLREDUCE, (redcoll_algo)a)) continue;
    size_t n = 1000;
    for (size_t e = 0; e < n; e++) {
      mat_init(min + 4 * e, me, e);
      mat_init(mwant + 4 * e, 0, e);
      for (int q = 1; q < p; q++) {
        mat_init(mtmp + 4 * e, q, e);
        matmul(mwant + 4 * e, mwant + 4 * e, mtmp + 4 * e, 1, NULL);
      }
    }
    rc = redcoll_allreduce(c, min, mout, n, REDCOLL_CUSTOM, nc);
    CHECK_MSG(rc == REDCOLL_OK, "p %d algo %s noncomm: %s", p, redcoll_algo_name(a),
              redcoll_status_name(rc));
    if (rc != REDCOLL_OK) goto out;
    CHECK_MSG(memcmp(mout, mwant, n * 16) == 0, "p %d algo %s noncomm", p, redcoll_algo_name(a));
  }
  redcoll_comm_set_algorithm(c, REDCOLL_COLL_ALLREDUCE, REDCOLL_ALGO_AUTO);
  /* Reduce with every algorithm, to the first and the last rank, and the
   * other collectives with every algorithm they have. */
  for (int a = 1; a < REDCOLL_ALGO_COUNT; a++) {
    if (!redcoll_algo_is_supported(REDCOLL_COLL_REDUCE, (redcoll_algo)a)) continue;
    CHECK_INT(redcoll_comm_set_algorithm(c, REDCOLL_COLL_REDUCE, (redcoll_algo)a), REDCOLL_OK);
    for (size_t k = 1; k < 4; k++) {
      size_t n = counts[k];
      for (int root = 0; root < p; root += p > 1 ? p - 1 : 1) {
        for (size_t i = 0; i < n; i++) in[i] = val(me, i);
        memset(out, 0, n * sizeof *out);
        rc = redcoll_reduce(c, in, out, n, REDCOLL_INT64, REDCOLL_SUM, root);
        CHECK_MSG(rc == REDCOLL_OK, "p %d reduce %s count %zu root %d: %s", p,
                  redcoll_algo_name(a), n, root, redcoll_status_name(rc));
        if (rc != REDCOLL_OK) goto out;
        size_t wrong = 0;
        for (size_t i = 0; me == root && i < n; i++) {
          int64_t w = 0;
          for (int q = 0; q < p; q++) w += val(q, i);
          wrong += out[i] != w;
        }
        CHECK_MSG(wrong == 0, "p %d reduce %s count %zu root %d", p, redcoll_algo_name(a), n,
                  root);
      }
    }
  }
  redcoll_comm_set_algorithm(c, REDCOLL_COLL_REDUCE, REDCOLL_ALGO_AUTO);
  static const redcoll_coll others[] = {REDCOLL_COLL_REDUCE_SCATTER_BLOCK, REDCOLL_COLL_ALLGATHER,
                                        REDCOLL_COLL_BCAST};
  for (size_t k = 0; k < sizeof others / sizeof others[0]; k++) {
    redcoll_coll coll = others[k];
    for (int a = 1; a < REDCOLL_ALGO_COUNT; a++) {
      if (!redcoll_algo_is_supported(coll, (redcoll_algo)a)) continue;
      CHECK_INT(redcoll_comm_set_algorithm(c, coll, (redcoll_algo)a), REDCOLL_OK);
      size_t n = 333, wrong = 0;
      if (coll == REDCOLL_COLL_REDUCE_SCATTER_BLOCK) {
        for (size_t i = 0; i < n * (size_t)p; i++) in[i] = val(me, i);
        rc = redcoll_reduce_scatter_block(c, in, out, n, REDCOLL_INT64, REDCOLL_SUM);
        for (size_t i = 0; rc == REDCOLL_OK && i < n; i++) {
          int64_t w = 0;
          for (int q = 0; q < p; q++) w += val(q, (size_t)me * n + i);
          wrong += out[i] != w;
        }
      } else if (coll == REDCOLL_COLL_ALLGATHER) {
        for (size_t i = 0; i < n; i++) in[i] = val(me, i);
        rc = redcoll_allgather(c, in, out, n, REDCOLL_INT64);
        for (int q = 0; rc == REDCOLL_OK && q < p; q++)
          for (size_t i = 0; i < n; i++) wrong += out[(size_t)q * n + i] != val(q, i);
      } else {
        for (size_t i = 0; i < n; i++) out[i] = me == p - 1 ? val(77, i) : 0;
        rc = redcoll_bcast(c, out, n, REDCOLL_INT64, p - 1);
        for (size_t i = 0; rc == REDCOLL_OK && i < n; i++) wrong += out[i] != val(77, i);
      }
      CHECK_MSG(rc == REDCOLL_OK && wrong == 0, "p %d %s %s: %s, %zu wrong", p,
                redcoll_coll_name(coll), redcoll_algo_name(a), redcoll_status_name(rc), wrong);
      if (rc != REDCOLL_OK) goto out;
    }
    redcoll_comm_set_algorithm(c, coll, REDCOLL_ALGO_AUTO);
  }
  /* The other collectives with the automatic choice. */
  size_t n = 1001;
  int root = p - 1;
  for (size_t i = 0; i < n; i++) in[i] = val(me, i);
  rc = redcoll_reduce(c, in, out, n, REDCOLL_INT64, REDCOLL_SUM, root);
  CHECK_INT(rc, REDCOLL_OK);
  if (rc != REDCOLL_OK) goto out;
  if (me == root) {
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
      int64_t w = 0;
      for (int q = 0; q < p; q++) w += val(q, i);
      bad += out[i] != w;
    }
    CHECK_INT(bad, 0);
  }
  for (size_t i = 0; i < n; i++) out[i] = me == p / 2 ? val(99, i) : 0;
  rc = redcoll_bcast(c, out, n, REDCOLL_INT64, p / 2);
  CHECK_INT(rc, REDCOLL_OK);
  if (rc != REDCOLL_OK) goto out;
  size_t bad = 0;
  for (size_t i = 0; i < n; i++) bad += out[i] != val(99, i);
  CHECK_INT(bad, 0);
  for (size_t i = 0; i < n * (size_t)p; i++) in[i] = val(me, i);
  rc = redcoll_reduce_scatter_block(c, in, out, n, REDCOLL_INT64, REDCOLL_SUM);
  CHECK_INT(rc, REDCOLL_OK);
  if (rc != REDCOLL_OK) goto out;
  bad = 0;
  for (size_t i = 0; i < n; i++) {
    int64_t w = 0;
    for (int q = 0; q < p; q++) w += val(q, (size_t)me * n + i);
    bad += out[i] != w;
  }
  CHECK_INT(bad, 0);
  for (size_t i = 0; i < n; i++) in[i] = val(me, i);
  rc = redcoll_allgather(c, in, out, n, REDCOLL_INT64);
  CHECK_INT(rc, REDCOLL_OK);
  if (rc != REDCOLL_OK) goto out;
  bad = 0;
  for (int q = 0; q < p; q++)
    for (size_t i = 0; i < n; i++) bad += out[(size_t)q * n + i] != val(q, i);
  CHECK_INT(bad, 0);
  rc = redcoll_barrier(c);
  CHECK_INT(rc, REDCOLL_OK);
out:
  redcoll_op_destroy(nc);
  free(in);
  free(out);
  free(want);
  free(min);
  free(mout);
  free(mwant);
  free(mtmp);
  return rc;
}

/* ---- failures ----------------------------------------------------------------- */

/* Rank 1 does not answer for 1.5 s: rank 0's receive times out after its
 * 300 ms (set on the communicator), and its next receive gets the message
 * rank 1 sends then. */
static int rank_timeout(redcoll_comm *c, void *arg) {
  shared *sh = arg;
  int me = redcoll_comm_rank(c);
  uint64_t v = 7;
  if (me == 1) {
    sleep_ms(1500);
    CHECK_INT(t_send(c, 0, 1, &v, sizeof v), REDCOLL_OK);
    return REDCOLL_OK;
  }
  CHECK_INT(redcoll_tcp_comm_set_wait_timeout(c, 300), REDCOLL_OK);
  double t0 = now_s();
  v = 0;
  int rc = t_recv(c, 1, 1, &v, sizeof v);
  sh->t[0] = now_s() - t0;
  CHECK_INT(rc, REDCOLL_ETIMEDOUT);
  CHECK(v == 0);
  /* The receive was taken back whole: the next one gets the message. */
  CHECK_INT(redcoll_tcp_comm_set_wait_timeout(c, 10000), REDCOLL_OK);
  CHECK_INT(t_recv(c, 1, 1, &v, sizeof v), REDCOLL_OK);
  CHECK(v == 7);
  return REDCOLL_OK;
}

/* Rank 1 aborts before it ever talked to anyone: ranks 0 and 2, waiting for
 * messages that will not come, return EABORTED. */
static int rank_abort(redcoll_comm *c, void *arg) {
  shared *sh = arg;
  int me = redcoll_comm_rank(c);
  if (me == 1) {
    sleep_ms(200);
    CHECK_INT(redcoll_comm_abort(c), REDCOLL_OK);
    return REDCOLL_OK;
  }
  double t0 = now_s();
  uint64_t v;
  int rc = me == 0 ? t_recv(c, 1, 1, &v, sizeof v) : t_recv(c, 0, 1, &v, sizeof v);
  sh->t[me] = now_s() - t0;
  sh->st[me] = rc;
  CHECK_INT(rc, REDCOLL_EABORTED);
  return REDCOLL_OK;
}

static void *killer(void *arg) {
  shared *sh = arg;
  sleep_ms(300);
  sh->kill_time = now_s();
  kill(getpid(), SIGKILL);
  return NULL;
}

/* Rank 2 is killed in the middle of a stream of allreduces; the others must
 * fail at once (their timeout is a minute). */
static int rank_kill(redcoll_comm *c, void *arg) {
  shared *sh = arg;
  int me = redcoll_comm_rank(c);
  size_t n = (size_t)1 << 18;
  int64_t *in = calloc(n, sizeof *in), *out = calloc(n, sizeof *out);
  if (in == NULL || out == NULL) return REDCOLL_ENOMEM;
  if (me == 2) {
    pthread_t th;
    pthread_create(&th, NULL, killer, sh);
  }
  int rc = REDCOLL_OK;
  for (int it = 0; it < 1000000 && rc == REDCOLL_OK; it++)
    rc = redcoll_allreduce(c, in, out, n, REDCOLL_INT64, REDCOLL_SUM);
  sh->t[me] = now_s();
  sh->st[me] = rc;
  free(in);
  free(out);
  return rc;
}

/* Every rank exchanges 8 bytes with every other rank: all p(p-1)
 * connections are opened. */
static int rank_mesh(redcoll_comm *c, void *arg) {
  shared *sh = arg;
  int me = redcoll_comm_rank(c), p = redcoll_comm_size(c);
  double t0 = now_s();
  for (int k = 1; k < p; k++) {
    uint64_t s = (uint64_t)me * 1000 + (uint64_t)k, r = 0;
    int src = (me + p - k) % p;
    int rc = t_sendrecv(c, (me + k) % p, 5, &s, 8, src, 5, &r, 8);
    CHECK_INT(rc, REDCOLL_OK);
    if (rc != REDCOLL_OK) return rc;
    CHECK_INT(r, (uint64_t)src * 1000 + (uint64_t)k);
  }
  int rc = redcoll_barrier(c);
  sh->t[me] = now_s() - t0;
  return rc;
}

static int ipv6_available(void) {
  int fd = -1;
  int port = tcp_run__port(1, &fd);
  if (port < 0) return 0;
  close(fd);
  return 1;
}

static int want(int argc, char **argv, const char *part) {
  return argc < 2 || strcmp(argv[1], part) == 0;
}

int main(int argc, char **argv) {
  if (want(argc, argv, "units")) {
    test_frames();
    test_group_index();
    test_umsg_deliver();
    test_chan_conflict();
    test_spares();
    test_self_connect();
    test_bye_tag();
    test_addresses();
    test_env();
    test_env_torchrun();
    test_env_unexpected_max();
    test_bad_config();
  }
  tcp_run_opts o;
  if (want(argc, argv, "p2p")) {
    memset(&o, 0, sizeof o);
    CHECK_INT(tcp_run(2, rank_p2p, NULL), REDCOLL_OK);
    o.hosts = 1;
    CHECK_INT(tcp_run_opts_run(3, rank_ring, NULL, &o), REDCOLL_OK);
    if (ipv6_available()) {
      memset(&o, 0, sizeof o);
      o.ipv6 = 1;
      CHECK_INT(tcp_run_opts_run(2, rank_p2p, NULL, &o), REDCOLL_OK);
      o.hosts = 1;
      CHECK_INT(tcp_run_opts_run(3, rank_ring, NULL, &o), REDCOLL_OK);
    } else {
      printf("note: no IPv6 loopback here; the ::1 runs did not happen\n");
    }
    sndbuf();
    CHECK_INT(tcp_run(2, rank_direct, NULL), REDCOLL_OK);
    CHECK_INT(tcp_run(2, rank_probe_ends, NULL), REDCOLL_OK);
    CHECK_INT(tcp_run(3, rank_early_close, NULL), REDCOLL_OK);
    CHECK_INT(tcp_run(3, rank_public_p2p, NULL), REDCOLL_OK);
    for (int i = 0; i < 3; i++) CHECK_INT(tcp_run(2, rank_late_recv, NULL), REDCOLL_OK);
    for (int wrong_len = 0; wrong_len < 2; wrong_len++)
      CHECK_INT(tcp_run(2, rank_mismatch, &wrong_len), REDCOLL_OK);
  }
  if (want(argc, argv, "colls")) {
    disagree();
    for (int p = 1; p <= 8; p++) {
      int rc = tcp_run(p, rank_colls, NULL);
      CHECK_MSG(rc == REDCOLL_OK, "collectives on %d TCP ranks: %s", p, redcoll_status_name(rc));
    }
  }
  shared *sh = shared_new();
  if (want(argc, argv, "timeout")) {
    CHECK_INT(tcp_run(2, rank_timeout, sh), REDCOLL_OK);
    CHECK_MSG(sh->t[0] >= 0.29 && sh->t[0] < 1.4, "timed out after %.3f s", sh->t[0]);
  }
  if (want(argc, argv, "abort")) {
    memset(sh, 0, sizeof *sh);
    CHECK_INT(tcp_run(3, rank_abort, sh), REDCOLL_OK);
    CHECK(sh->t[0] < 2.0 && sh->t[2] < 2.0);
  }
  if (want(argc, argv, "kill")) {
    memset(sh, 0, sizeof *sh);
    memset(&o, 0, sizeof o);
    o.deadline_s = 30;
    int rc = tcp_run_opts_run(4, rank_kill, sh, &o);
    CHECK(rc != REDCOLL_OK);
    CHECK(sh->kill_time > 0);
    CHECK_INT(o.statuses[2], REDCOLL_ETRANSPORT); /* died of a signal */
    int direct = 0;
    for (int r = 0; r < 4; r++) {
      if (r == 2) continue;
      CHECK_MSG(o.statuses[r] == REDCOLL_ETRANSPORT || o.statuses[r] == REDCOLL_EABORTED,
                "rank %d: %s", r, redcoll_status_name(o.statuses[r]));
      CHECK_INT(sh->st[r], o.statuses[r]);
      /* At once: the lost connection, then at most the 50 ms a survivor
       * listens for a better reason, on each hop (it was a whole second,
       * and a survivor also waited for a healthy peer's); the bound leaves
       * room for a loaded machine and stays below the old second. */
      CHECK_MSG(sh->t[r] - sh->kill_time < 0.95, "rank %d took %.2f s", r,
                sh->t[r] - sh->kill_time);
      direct += o.statuses[r] == REDCOLL_ETRANSPORT;
    }
    CHECK(direct >= 1);
  }
  if (want(argc, argv, "mesh")) {
    memset(sh, 0, sizeof *sh);
    double t0 = now_s();
    CHECK_INT(tcp_run(32, rank_mesh, sh), REDCOLL_OK);
    double all = now_s() - t0, worst = 0;
    for (int r = 0; r < 32; r++) worst = sh->t[r] > worst ? sh->t[r] : worst;
    printf("32 ranks: full mesh of connections + barrier %.3f s (slowest rank), whole run %.3f s\n",
           worst, all);
    /* Speed is the benchmark's business (this machine is shared and the
     * suite also runs under ASan); this only catches a set-up stuck in
     * retries and backoff. */
    CHECK(worst < 30.0);
  }
  munmap(sh, sizeof *sh);
  return TEST_DONE();
}
