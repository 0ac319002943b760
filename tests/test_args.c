/*
 * Argument checks: one test per rule.  Every bad call must return its status
 * with nothing sent (the recording transport below counts every call) and
 * nothing written (buffers keep their fill pattern).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "test.h"

/* A transport that records and refuses: any call is a test failure. */
typedef struct rec {
  int calls;
  int destroyed;
} rec;

static int rec_send(void *impl, int dst, uint64_t tag, const void *buf, size_t len) {
  ((rec *)impl)->calls++;
  return REDCOLL_ETRANSPORT;
}
static int rec_recv(void *impl, int src, uint64_t tag, void *buf, size_t len) {
  ((rec *)impl)->calls++;
  return REDCOLL_ETRANSPORT;
}
static int rec_sendrecv(void *impl, int dst, uint64_t stag, const void *sbuf, size_t slen, int src,
                        uint64_t rtag, void *rbuf, size_t rlen) {
  ((rec *)impl)->calls++;
  return REDCOLL_ETRANSPORT;
}
static void rec_destroy(void *impl) { ((rec *)impl)->destroyed++; }

static const redcoll_transport_ops rec_ops = {.version = 2,
                                             .send = rec_send,
                                             .recv = rec_recv,
                                             .sendrecv = rec_sendrecv,
                                             .destroy = rec_destroy};

static rec state;
static redcoll_comm *make(int rank, int size) {
  redcoll_comm *c = NULL;
  int rc = redcoll_comm_create(&rec_ops, &state, rank, size, &c);
  CHECK_INT(rc, REDCOLL_OK);
  return c;
}

static void user_sum(void *out, const void *l, const void *r, size_t n, void *ctx) {
  const int *a = l, *b = r;
  int *o = out;
  for (size_t i = 0; i < n; i++) o[i] = a[i] + b[i];
}

#define N 16
static double sbuf[4 * N], rbuf[4 * N];
static void fill(void) {
  memset(sbuf, 0x11, sizeof sbuf);
  memset(rbuf, 0x22, sizeof rbuf);
}
static int untouched(void) {
  for (size_t i = 0; i < sizeof sbuf; i++)
    if (((unsigned char *)sbuf)[i] != 0x11 || ((unsigned char *)rbuf)[i] != 0x22) return 0;
  return 1;
}

/* Runs one bad call and checks status, no transport call, no write. */
#define BAD(expect, call)                          \
  do {                                             \
    fill();                                        \
    state.calls = 0;                               \
    CHECK_INT((call), (expect));                   \
    CHECK_INT(state.calls, 0);                     \
    CHECK(untouched());                            \
  } while (0)

static void comm_rules(void) {
  redcoll_comm *c = (redcoll_comm *)0x1;
  state.destroyed = 0;
  CHECK_INT(redcoll_comm_create(&rec_ops, &state, 0, 0, &c), REDCOLL_EINVAL); /* p < 1 */
  CHECK(c == NULL);
  CHECK_INT(redcoll_comm_create(&rec_ops, &state, -1, 4, &c), REDCOLL_EINVAL);
  CHECK_INT(redcoll_comm_create(&rec_ops, &state, 4, 4, &c), REDCOLL_EINVAL);
  CHECK_INT(redcoll_comm_create(&rec_ops, &state, 0, 4, NULL), REDCOLL_EINVAL);
  CHECK_INT(redcoll_comm_create(NULL, &state, 0, 4, &c), REDCOLL_EINVAL);
  redcoll_transport_ops bad = rec_ops;
  bad.sendrecv = NULL;
  CHECK_INT(redcoll_comm_create(&bad, &state, 0, 4, &c), REDCOLL_EINVAL);
  bad = rec_ops;
  bad.version = 99;
  CHECK_INT(redcoll_comm_create(&bad, &state, 0, 4, &c), REDCOLL_EINVAL);
  CHECK_INT(state.destroyed, 0); /* rejected before taking ownership */
  c = make(1, 4);
  CHECK_INT(redcoll_comm_rank(c), 1);
  CHECK_INT(redcoll_comm_size(c), 4);
  CHECK_INT(redcoll_comm_set_algorithm(c, REDCOLL_COLL_COUNT, REDCOLL_ALGO_LINEAR), REDCOLL_EINVAL);
  CHECK_INT(redcoll_comm_set_algorithm(c, REDCOLL_COLL_ALLREDUCE, REDCOLL_ALGO_COUNT), REDCOLL_EINVAL);
  CHECK_INT(redcoll_comm_set_algorithm(c, REDCOLL_COLL_BARRIER, REDCOLL_ALGO_LINEAR), REDCOLL_ENOTSUP);
  CHECK_INT(redcoll_comm_set_algorithm(c, REDCOLL_COLL_ALLREDUCE, REDCOLL_ALGO_LINEAR), REDCOLL_OK);
  CHECK_INT(redcoll_comm_get_algorithm(c, REDCOLL_COLL_ALLREDUCE), REDCOLL_ALGO_LINEAR);
  CHECK_INT(redcoll_comm_set_threshold(c, 0), REDCOLL_EINVAL);
  CHECK_INT(redcoll_comm_set_threshold(c, 4096), REDCOLL_OK);
  CHECK_INT(redcoll_comm_get_threshold(c), 4096);
  redcoll_comm_destroy(c);
  CHECK_INT(state.destroyed, 1);
  redcoll_comm_destroy(NULL);
}

/* REDCOLL_IN_PLACE in both buffer slots: one of them is the wrong slot, on
 * every rank (this rank is the root where there is one).  It used to be
 * taken for the in-place form and copy from address 1. */
static void both_in_place(redcoll_comm *c) {
  const redcoll_op *S = REDCOLL_SUM;
  const void *is = REDCOLL_IN_PLACE;
  void *ir = (void *)REDCOLL_IN_PLACE;
  int me = redcoll_comm_rank(c);
  size_t n = N / 4;
  size_t cnt[4] = {n, n, n, n};
  BAD(REDCOLL_EINVAL, redcoll_allreduce(c, is, ir, n, REDCOLL_FLOAT64, S));
  BAD(REDCOLL_EINVAL, redcoll_reduce(c, is, ir, n, REDCOLL_FLOAT64, S, me));
  BAD(REDCOLL_EINVAL, redcoll_allgather(c, is, ir, n, REDCOLL_FLOAT64));
  BAD(REDCOLL_EINVAL, redcoll_reduce_scatter_block(c, is, ir, n, REDCOLL_FLOAT64, S));
  BAD(REDCOLL_EINVAL, redcoll_reduce_scatter(c, is, ir, cnt, REDCOLL_FLOAT64, S));
  BAD(REDCOLL_EINVAL, redcoll_gather(c, is, ir, n, REDCOLL_FLOAT64, me));
  BAD(REDCOLL_EINVAL, redcoll_scatter(c, is, ir, n, REDCOLL_FLOAT64, me));
  BAD(REDCOLL_EINVAL, redcoll_scan(c, is, ir, n, REDCOLL_FLOAT64, S));
  BAD(REDCOLL_EINVAL, redcoll_exscan(c, is, ir, n, REDCOLL_FLOAT64, S));
  BAD(REDCOLL_EINVAL, redcoll_alltoall(c, is, ir, n, REDCOLL_FLOAT64));
}

static void collective_rules(void) {
  redcoll_comm *c = make(1, 4);
  const redcoll_op *S = REDCOLL_SUM;
  /* NULL buffers with count > 0 */
  BAD(REDCOLL_EINVAL, redcoll_allreduce(c, NULL, rbuf, N, REDCOLL_FLOAT64, S));
  BAD(REDCOLL_EINVAL, redcoll_allreduce(c, sbuf, NULL, N, REDCOLL_FLOAT64, S));
  BAD(REDCOLL_EINVAL, redcoll_reduce(c, NULL, rbuf, N, REDCOLL_FLOAT64, S, 0));
  BAD(REDCOLL_EINVAL, redcoll_reduce(c, sbuf, NULL, N, REDCOLL_FLOAT64, S, 1)); /* at the root */
  BAD(REDCOLL_EINVAL, redcoll_bcast(c, NULL, N, REDCOLL_FLOAT64, 0));
  BAD(REDCOLL_EINVAL, redcoll_allgather(c, NULL, rbuf, N, REDCOLL_FLOAT64));
  BAD(REDCOLL_EINVAL, redcoll_reduce_scatter_block(c, sbuf, NULL, N, REDCOLL_FLOAT64, S));
  BAD(REDCOLL_EINVAL, redcoll_reduce_scatter(c, sbuf, rbuf, NULL, REDCOLL_FLOAT64, S));
  /* count * size overflows */
  BAD(REDCOLL_EINVAL, redcoll_allreduce(c, sbuf, rbuf, SIZE_MAX / 4, REDCOLL_FLOAT64, S));
  BAD(REDCOLL_EINVAL, redcoll_bcast(c, rbuf, SIZE_MAX / 2 + 2, REDCOLL_INT16, 0));
  BAD(REDCOLL_EINVAL, redcoll_reduce_scatter_block(c, sbuf, rbuf, SIZE_MAX / 16, REDCOLL_FLOAT64, S));
  BAD(REDCOLL_EINVAL, redcoll_allgather(c, sbuf, rbuf, SIZE_MAX / 16, REDCOLL_FLOAT64));
  size_t huge[4] = {SIZE_MAX / 2, SIZE_MAX / 2, 2, 0};
  BAD(REDCOLL_EINVAL, redcoll_reduce_scatter(c, sbuf, rbuf, huge, REDCOLL_UINT8, S));
  /* root out of range */
  BAD(REDCOLL_EINVAL, redcoll_reduce(c, sbuf, rbuf, N, REDCOLL_FLOAT64, S, 4));
  BAD(REDCOLL_EINVAL, redcoll_reduce(c, sbuf, rbuf, N, REDCOLL_FLOAT64, S, -1));
  BAD(REDCOLL_EINVAL, redcoll_bcast(c, rbuf, N, REDCOLL_FLOAT64, 7));
  /* partially overlapping buffers */
  BAD(REDCOLL_EINVAL, redcoll_allreduce(c, sbuf, sbuf + 1, N, REDCOLL_FLOAT64, S));
  BAD(REDCOLL_EINVAL, redcoll_allreduce(c, sbuf + 1, sbuf, N, REDCOLL_FLOAT64, S));
  BAD(REDCOLL_EINVAL, redcoll_reduce(c, sbuf, sbuf + N - 1, N, REDCOLL_FLOAT64, S, 1));
  BAD(REDCOLL_EINVAL, redcoll_allgather(c, sbuf + 3, sbuf, N, REDCOLL_FLOAT64));
  BAD(REDCOLL_EINVAL, redcoll_reduce_scatter_block(c, sbuf, sbuf + 2, N / 4, REDCOLL_FLOAT64, S));
  /* REDCOLL_IN_PLACE at a non-root of reduce */
  BAD(REDCOLL_EINVAL, redcoll_reduce(c, REDCOLL_IN_PLACE, rbuf, N, REDCOLL_FLOAT64, S, 0));
  /* user op with a built-in dtype, built-in op with REDCOLL_CUSTOM */
  redcoll_op *user = NULL;
  CHECK_INT(redcoll_op_create(user_sum, sizeof(int), 1, NULL, &user), REDCOLL_OK);
  BAD(REDCOLL_EINVAL, redcoll_allreduce(c, sbuf, rbuf, N, REDCOLL_INT32, user));
  BAD(REDCOLL_EINVAL, redcoll_allreduce(c, sbuf, rbuf, N, REDCOLL_CUSTOM, S));
  BAD(REDCOLL_EINVAL, redcoll_reduce(c, sbuf, rbuf, N, REDCOLL_CUSTOM, REDCOLL_MAX, 1));
  /* senseless (dtype, op) pairs and bad values */
  BAD(REDCOLL_EINVAL, redcoll_allreduce(c, sbuf, rbuf, N, REDCOLL_FLOAT64, REDCOLL_BAND));
  BAD(REDCOLL_EINVAL, redcoll_allreduce(c, sbuf, rbuf, N, REDCOLL_BFLOAT16, REDCOLL_LXOR));
  BAD(REDCOLL_EINVAL, redcoll_allreduce(c, sbuf, rbuf, N, REDCOLL_FLOAT64, NULL));
  BAD(REDCOLL_EINVAL, redcoll_allreduce(c, sbuf, rbuf, N, (redcoll_dtype)99, S));
  BAD(REDCOLL_EINVAL, redcoll_allreduce(NULL, sbuf, rbuf, N, REDCOLL_FLOAT64, S));
  /* allgatherv: the own count must match recvcounts[rank] */
  size_t counts[4] = {1, 2, 3, 4};
  BAD(REDCOLL_EINVAL, redcoll_allgatherv(c, sbuf, 3, rbuf, counts, REDCOLL_FLOAT64));
  /* nothing communicated: the sequence number did not move */
  CHECK_INT(c->seq, 0);
  /* a forced algorithm that needs commutativity refuses a non-commutative op
   * (checked in test_colls for the registered ones) */
  redcoll_op_destroy(user);
  redcoll_op_destroy(NULL);
  redcoll_comm_destroy(c);
}

/* Gather and scatter (rank 1 of 4; sbuf and rbuf hold 4 * N elements). */
static void rooted_rules(void) {
  redcoll_comm *c = make(1, 4);
  void *in_place = (void *)REDCOLL_IN_PLACE; /* recvbuf of scatter is not const */
  /* root out of range */
  BAD(REDCOLL_EINVAL, redcoll_gather(c, sbuf, rbuf, N, REDCOLL_FLOAT64, 4));
  BAD(REDCOLL_EINVAL, redcoll_gather(c, sbuf, rbuf, N, REDCOLL_FLOAT64, -1));
  BAD(REDCOLL_EINVAL, redcoll_scatter(c, sbuf, rbuf, N, REDCOLL_FLOAT64, 4));
  BAD(REDCOLL_EINVAL, redcoll_scatter(c, sbuf, rbuf, N, REDCOLL_FLOAT64, -1));
  /* NULL buffers with count > 0: sendbuf of gather and recvbuf of scatter
   * everywhere, the p-block buffer at the root */
  BAD(REDCOLL_EINVAL, redcoll_gather(c, NULL, rbuf, N, REDCOLL_FLOAT64, 0));
  BAD(REDCOLL_EINVAL, redcoll_gather(c, NULL, rbuf, N, REDCOLL_FLOAT64, 1));
  BAD(REDCOLL_EINVAL, redcoll_gather(c, sbuf, NULL, N, REDCOLL_FLOAT64, 1));
  BAD(REDCOLL_EINVAL, redcoll_scatter(c, sbuf, NULL, N, REDCOLL_FLOAT64, 0));
  BAD(REDCOLL_EINVAL, redcoll_scatter(c, sbuf, NULL, N, REDCOLL_FLOAT64, 1));
  BAD(REDCOLL_EINVAL, redcoll_scatter(c, NULL, rbuf, N, REDCOLL_FLOAT64, 1));
  /* REDCOLL_IN_PLACE off the root, and on the wrong side */
  BAD(REDCOLL_EINVAL, redcoll_gather(c, REDCOLL_IN_PLACE, rbuf, N, REDCOLL_FLOAT64, 0));
  BAD(REDCOLL_EINVAL, redcoll_scatter(c, sbuf, in_place, N, REDCOLL_FLOAT64, 0));
  BAD(REDCOLL_EINVAL, redcoll_scatter(c, REDCOLL_IN_PLACE, rbuf, N, REDCOLL_FLOAT64, 1));
  /* the root's block partially overlapping the p-block buffer (exactly at
   * its own block is in place and fine) */
  BAD(REDCOLL_EINVAL, redcoll_gather(c, sbuf + 1, sbuf, N, REDCOLL_FLOAT64, 1));
  BAD(REDCOLL_EINVAL, redcoll_gather(c, sbuf + 3 * N + 1, sbuf, N, REDCOLL_FLOAT64, 1));
  BAD(REDCOLL_EINVAL, redcoll_scatter(c, sbuf, sbuf + N + 1, N, REDCOLL_FLOAT64, 1));
  BAD(REDCOLL_EINVAL, redcoll_scatter(c, sbuf + 1, sbuf, N, REDCOLL_FLOAT64, 1));
  /* count * size and p * count * size overflow */
  BAD(REDCOLL_EINVAL, redcoll_gather(c, sbuf, rbuf, SIZE_MAX / 4, REDCOLL_FLOAT64, 1));
  BAD(REDCOLL_EINVAL, redcoll_gather(c, sbuf, rbuf, SIZE_MAX / 16, REDCOLL_FLOAT64, 0));
  BAD(REDCOLL_EINVAL, redcoll_scatter(c, sbuf, rbuf, SIZE_MAX / 4, REDCOLL_FLOAT64, 1));
  BAD(REDCOLL_EINVAL, redcoll_scatter(c, sbuf, rbuf, SIZE_MAX / 16, REDCOLL_FLOAT64, 0));
  /* no operator, so no element size for REDCOLL_CUSTOM; bad dtype */
  BAD(REDCOLL_EINVAL, redcoll_gather(c, sbuf, rbuf, N, REDCOLL_CUSTOM, 1));
  BAD(REDCOLL_EINVAL, redcoll_scatter(c, sbuf, rbuf, N, (redcoll_dtype)99, 1));
  BAD(REDCOLL_EINVAL, redcoll_gather(NULL, sbuf, rbuf, N, REDCOLL_FLOAT64, 1));
  CHECK_INT(c->seq, 0);
  /* count 0: nothing to do, NULL buffers allowed */
  fill();
  state.calls = 0;
  CHECK_INT(redcoll_gather(c, NULL, NULL, 0, REDCOLL_FLOAT64, 1), REDCOLL_OK);
  CHECK_INT(redcoll_scatter(c, NULL, NULL, 0, REDCOLL_FLOAT64, 2), REDCOLL_OK);
  CHECK_INT(state.calls, 0);
  CHECK(untouched());
  redcoll_comm_destroy(c);

  /* p = 1: a copy, or nothing in place */
  c = make(0, 1);
  for (int i = 0; i < N; i++) sbuf[i] = i;
  memset(rbuf, 0, sizeof rbuf);
  CHECK_INT(redcoll_gather(c, sbuf, rbuf, N, REDCOLL_FLOAT64, 0), REDCOLL_OK);
  CHECK(memcmp(sbuf, rbuf, N * sizeof(double)) == 0);
  memset(rbuf, 0, sizeof rbuf);
  CHECK_INT(redcoll_scatter(c, sbuf, rbuf, N, REDCOLL_FLOAT64, 0), REDCOLL_OK);
  CHECK(memcmp(sbuf, rbuf, N * sizeof(double)) == 0);
  CHECK_INT(redcoll_gather(c, REDCOLL_IN_PLACE, rbuf, N, REDCOLL_FLOAT64, 0), REDCOLL_OK);
  CHECK_INT(redcoll_scatter(c, sbuf, in_place, N, REDCOLL_FLOAT64, 0), REDCOLL_OK);
  CHECK(memcmp(sbuf, rbuf, N * sizeof(double)) == 0);
  CHECK_INT(state.calls, 0);
  redcoll_comm_destroy(c);
}

/* The one buffer rule: the own block exactly where the in-place layout
 * puts it is in place; every other overlap is REDCOLL_EINVAL before anything
 * is sent.  Rank 1 of 4: its own block of a p-block buffer is block 1, so
 * sendbuf == recvbuf is not in place for allgather, allgatherv, and gather
 * and scatter rooted at 1 (each used to run, with wrong data or a write into
 * the root's const sendbuf). */
static void alias_rules(void) {
  redcoll_comm *c = make(1, 4);
  const redcoll_op *S = REDCOLL_SUM;
  size_t counts[4] = {2, 3, 1, 4};
  BAD(REDCOLL_EINVAL, redcoll_allgather(c, rbuf, rbuf, N, REDCOLL_FLOAT64));
  BAD(REDCOLL_EINVAL, redcoll_allgatherv(c, rbuf, 3, rbuf, counts, REDCOLL_FLOAT64));
  BAD(REDCOLL_EINVAL, redcoll_allgatherv(c, rbuf + 1, 3, rbuf, counts, REDCOLL_FLOAT64));
  BAD(REDCOLL_EINVAL, redcoll_gather(c, rbuf, rbuf, N, REDCOLL_FLOAT64, 1));
  BAD(REDCOLL_EINVAL, redcoll_scatter(c, sbuf, sbuf, N, REDCOLL_FLOAT64, 1));
  BAD(REDCOLL_EINVAL, redcoll_scatter(c, sbuf, sbuf + 2 * N, N, REDCOLL_FLOAT64, 1));
  /* the result inside the input, the input inside the result */
  BAD(REDCOLL_EINVAL, redcoll_reduce_scatter_block(c, sbuf, sbuf + N - 1, N / 4, REDCOLL_FLOAT64, S));
  BAD(REDCOLL_EINVAL, redcoll_reduce_scatter(c, rbuf, rbuf + 1, counts, REDCOLL_FLOAT64, S));
  BAD(REDCOLL_EINVAL, redcoll_allgather(c, rbuf + 3 * N, rbuf, N, REDCOLL_FLOAT64));
  BAD(REDCOLL_EINVAL, redcoll_allreduce(c, rbuf, (char *)rbuf + 1, N, REDCOLL_FLOAT64, S));
  /* REDCOLL_IN_PLACE only in the slot of the collective's in-place form */
  void *ip = (void *)REDCOLL_IN_PLACE;
  BAD(REDCOLL_EINVAL, redcoll_allreduce(c, sbuf, ip, N, REDCOLL_FLOAT64, S));
  BAD(REDCOLL_EINVAL, redcoll_allgather(c, sbuf, ip, N, REDCOLL_FLOAT64));
  BAD(REDCOLL_EINVAL, redcoll_reduce_scatter(c, sbuf, ip, counts, REDCOLL_FLOAT64, S));
  BAD(REDCOLL_EINVAL, redcoll_bcast(c, ip, N, REDCOLL_FLOAT64, 0));
  BAD(REDCOLL_EINVAL, redcoll_scatter(c, REDCOLL_IN_PLACE, rbuf, N, REDCOLL_FLOAT64, 1));
  both_in_place(c);
  CHECK_INT(c->seq, 0);
  redcoll_comm_destroy(c);
  c = make(0, 1); /* one rank too: it used to return REDCOLL_OK */
  both_in_place(c);
  CHECK_INT(c->seq, 0);
  redcoll_comm_destroy(c);

  /* One rank: a forced algorithm that needs commutativity refuses a
   * non-commutative operator as it does on many ranks (it used to return
   * REDCOLL_OK); count 0 has nothing to reduce. */
  redcoll_op *noncomm = NULL;
  CHECK_INT(redcoll_op_create(user_sum, sizeof(int), 0, NULL, &noncomm), REDCOLL_OK);
  c = make(0, 1);
  CHECK_INT(redcoll_comm_set_algorithm(c, REDCOLL_COLL_ALLREDUCE, REDCOLL_ALGO_RING), REDCOLL_OK);
  CHECK_INT(redcoll_comm_set_algorithm(c, REDCOLL_COLL_REDUCE, REDCOLL_ALGO_RING), REDCOLL_OK);
  BAD(REDCOLL_ENOTSUP, redcoll_allreduce(c, sbuf, rbuf, N, REDCOLL_CUSTOM, noncomm));
  BAD(REDCOLL_ENOTSUP, redcoll_reduce(c, sbuf, rbuf, N, REDCOLL_CUSTOM, noncomm, 0));
  BAD(REDCOLL_OK, redcoll_allreduce(c, sbuf, rbuf, 0, REDCOLL_CUSTOM, noncomm));
  CHECK_INT(redcoll_comm_set_algorithm(c, REDCOLL_COLL_ALLREDUCE, REDCOLL_ALGO_ELIMINATION),
            REDCOLL_OK);
  fill();
  CHECK_INT(redcoll_allreduce(c, sbuf, rbuf, N, REDCOLL_CUSTOM, noncomm), REDCOLL_OK);
  CHECK(memcmp(sbuf, rbuf, N * sizeof(int)) == 0);
  redcoll_comm_destroy(c);
  redcoll_op_destroy(noncomm);
}

/* A version 3 transport: exchange and info instead of send, recv and
 * sendrecv; the core owns the deadline. */
static int v3_exchange(void *impl, const redcoll_transport_ctx *ctx, const redcoll_transport_msg *s,
                       const redcoll_transport_msg *r) {
  ((rec *)impl)->calls++;
  return REDCOLL_ETRANSPORT;
}
static char v3_name[16] = "mine";
static int v3_info(void *impl, redcoll_transport_info *info) {
  memcpy(info->name, v3_name, sizeof info->name);
  info->alpha = 7e-6;
  info->beta = 2e-9;
  info->gamma = 3e-10;
  info->ranks_per_cpu = 2;
  return REDCOLL_OK;
}

static void version3(void) {
  redcoll_transport_ops v3 = {.version = 3, .destroy = rec_destroy, .info = v3_info,
                              .exchange = v3_exchange};
  redcoll_comm *c = NULL;
  state.destroyed = 0;
  CHECK_INT(redcoll_comm_create(&v3, &state, 0, 4, &c), REDCOLL_OK);
  double a, b, g, f;
  CHECK_INT(redcoll_comm_get_cost_model(c, &a, &b, &g), REDCOLL_OK);
  CHECK_DBL(a, 7e-6); /* the transport's defaults */
  CHECK_DBL(b, 2e-9);
  CHECK_DBL(g, 3e-10);
  CHECK_INT(redcoll_comm_get_ranks_per_cpu(c, &f), REDCOLL_OK);
  CHECK_DBL(f, 2);
  /* No local costs declared: a tenth of the network's; a NULL pointer is
   * skipped, a NULL communicator refused. */
  CHECK_INT(redcoll_comm_get_local_cost_model(c, &a, &b), REDCOLL_OK);
  CHECK_DBL(a, 7e-7);
  CHECK_DBL(b, 2e-10);
  CHECK_INT(redcoll_comm_get_local_cost_model(c, NULL, &b), REDCOLL_OK);
  CHECK_INT(redcoll_comm_get_local_cost_model(NULL, &a, &b), REDCOLL_EINVAL);
  CHECK_INT(redcoll_comm_set_deadline(c, 50), REDCOLL_OK); /* the core measures it */
  CHECK_INT(redcoll_comm_get_deadline(c), 50);
  double x[4] = {1, 2, 3, 4}, y[4];
  state.calls = 0;
  CHECK_INT(redcoll_allreduce(c, x, y, 4, REDCOLL_FLOAT64, REDCOLL_SUM), REDCOLL_ETRANSPORT);
  CHECK_INT(state.calls, 1);
  redcoll_comm_destroy(c);
  CHECK_INT(state.destroyed, 1);
  /* Required members of version 3, and a name that is not a string. */
  redcoll_transport_ops bad = v3;
  bad.exchange = NULL;
  CHECK_INT(redcoll_comm_create(&bad, &state, 0, 4, &c), REDCOLL_EINVAL);
  bad = v3;
  bad.info = NULL;
  CHECK_INT(redcoll_comm_create(&bad, &state, 0, 4, &c), REDCOLL_EINVAL);
  memset(v3_name, 'x', sizeof v3_name);
  CHECK_INT(redcoll_comm_create(&v3, &state, 0, 4, &c), REDCOLL_EINVAL);
  CHECK(c == NULL);
  CHECK_INT(state.destroyed, 1);
  strcpy(v3_name, "mine");
  /* A version 1 struct has no deadline. */
  redcoll_transport_ops v1 = rec_ops;
  v1.version = 1;
  CHECK_INT(redcoll_comm_create(&v1, &state, 0, 4, &c), REDCOLL_OK);
  CHECK_INT(redcoll_comm_set_deadline(c, 50), REDCOLL_ENOTSUP);
  redcoll_comm_destroy(c);
}

/* redcoll_comm_create: on failure impl stays the caller's, whatever the
 * reason (a malformed environment used to destroy it, a bad rank not). */
static void create_ownership(void) {
  redcoll_comm *c = NULL;
  state.destroyed = 0;
  setenv("REDCOLL_ALGO_ALLREDUCE", "no_such_algorithm", 1);
  CHECK_INT(redcoll_comm_create(&rec_ops, &state, 0, 4, &c), REDCOLL_EINVAL);
  CHECK(c == NULL);
  unsetenv("REDCOLL_ALGO_ALLREDUCE");
  setenv("REDCOLL_RESULTS", "sometimes", 1);
  CHECK_INT(redcoll_comm_create(&rec_ops, &state, 0, 4, &c), REDCOLL_EINVAL);
  CHECK_INT(redcoll_comm_create(&rec_ops, &state, 5, 4, &c), REDCOLL_EINVAL);
  CHECK_INT(state.destroyed, 0);
  setenv("REDCOLL_RESULTS", "fast", 1);
  c = make(0, 4);
  CHECK_INT(redcoll_comm_get_results(c), REDCOLL_RESULTS_FAST);
  CHECK_INT(redcoll_comm_set_results(c, (redcoll_results)7), REDCOLL_EINVAL);
  CHECK_INT(redcoll_comm_set_results(c, REDCOLL_RESULTS_IDENTICAL), REDCOLL_OK);
  CHECK_INT(redcoll_comm_get_results(c), REDCOLL_RESULTS_IDENTICAL);
  CHECK_INT(redcoll_comm_set_results(NULL, REDCOLL_RESULTS_FAST), REDCOLL_EINVAL);
  unsetenv("REDCOLL_RESULTS");
  redcoll_comm_destroy(c);
  CHECK_INT(state.destroyed, 1);
  c = make(0, 4);
  CHECK_INT(redcoll_comm_get_results(c), REDCOLL_RESULTS_IDENTICAL); /* the default */
  redcoll_comm_destroy(c);
}

/* Valid calls with count 0 or p = 1 do not communicate either. */
static void trivial_calls(void) {
  redcoll_comm *c = make(0, 3);
  fill();
  state.calls = 0;
  CHECK_INT(redcoll_allreduce(c, NULL, NULL, 0, REDCOLL_FLOAT64, REDCOLL_SUM), REDCOLL_OK);
  CHECK_INT(redcoll_reduce(c, sbuf, rbuf, 0, REDCOLL_FLOAT64, REDCOLL_SUM, 2), REDCOLL_OK);
  CHECK_INT(redcoll_bcast(c, NULL, 0, REDCOLL_INT8, 1), REDCOLL_OK);
  CHECK_INT(state.calls, 0);
  CHECK(untouched());
  redcoll_comm_destroy(c);

  c = make(0, 1);
  for (int i = 0; i < N; i++) sbuf[i] = i;
  CHECK_INT(redcoll_allreduce(c, sbuf, rbuf, N, REDCOLL_FLOAT64, REDCOLL_SUM), REDCOLL_OK);
  CHECK(memcmp(sbuf, rbuf, N * sizeof(double)) == 0);
  CHECK_INT(redcoll_barrier(c), REDCOLL_OK);
  CHECK_INT(state.calls, 0);
  redcoll_comm_destroy(c);
}

static int log_fd = -1, log_saved = -1;

/* From here to log_end, what goes to fd 2 goes to a file instead. */
static void log_begin(void) {
  char path[] = "/tmp/redcoll-test-args-XXXXXX";
  log_fd = mkstemp(path);
  log_saved = dup(2);
  CHECK(log_fd >= 0 && log_saved >= 0);
  if (log_fd < 0 || log_saved < 0) return; /* (log_end then finds nothing) */
  unlink(path);
  fflush(stderr);
  CHECK(dup2(log_fd, 2) == 2);
}

/* fd 2 back; what it got into log (NUL-terminated, at most n - 1 bytes). */
static void log_end(char *log, size_t n) {
  memset(log, 0, n);
  if (log_fd < 0 || log_saved < 0) return;
  fflush(stderr);
  dup2(log_saved, 2);
  close(log_saved);
  CHECK(pread(log_fd, log, n - 1, 0) > 0);
  close(log_fd);
  fprintf(stderr, "captured:\n%s", log); /* for the test's log when a check fails */
}

/* After a transport failure the communicator is broken: later calls fail
 * fast with the same status and do not touch the transport. */
static void broken_comm(void) {
  redcoll_comm *c = make(0, 2);
  double x[4] = {1, 2, 3, 4}, y[4];
  state.calls = 0;
  log_begin();
  int st = redcoll_allreduce(c, x, y, 4, REDCOLL_FLOAT64, REDCOLL_SUM);
  char log[1024];
  log_end(log, sizeof log);
  CHECK_INT(st, REDCOLL_ETRANSPORT);
  /* The first call that lets AUTO choose calibrates first; its failure
   * says so. */
  CHECK(strstr(log, "redcoll error: rank 0: collective #0 (tag 0x") != NULL);
  CHECK(strstr(log, "): the cost model's self-calibration, run by the first collective that lets "
                    "AUTO choose failed in ") != NULL);
  CHECK_INT(state.calls, 1);
  CHECK_INT(redcoll_comm_error(c), REDCOLL_ETRANSPORT);
  CHECK_INT(redcoll_allreduce(c, x, y, 4, REDCOLL_FLOAT64, REDCOLL_SUM), REDCOLL_ETRANSPORT);
  CHECK_INT(redcoll_barrier(c), REDCOLL_ETRANSPORT);
  CHECK_INT(state.calls, 1);
  redcoll_comm_destroy(c);
}

/* The error line of a refused call (what the program's stderr gets, fd 2
 * sent to a file meanwhile): the rank, the call, the status and the reason;
 * and an i-form with no request's address is refused, not run blocking. */
static void refusals_logged(void) {
  redcoll_comm *c = make(1, 4);
  log_begin();
  int st1 = redcoll_reduce(c, sbuf, rbuf, N, REDCOLL_FLOAT64, REDCOLL_SUM, 9);
  int st2 = redcoll_allreduce(c, REDCOLL_IN_PLACE, (void *)REDCOLL_IN_PLACE, N, REDCOLL_INT32,
                              REDCOLL_SUM);
  redcoll_request *req = (redcoll_request *)&state; /* must be set to NULL */
  state.calls = 0;
  int st3 = redcoll_iallreduce(c, sbuf, rbuf, N, REDCOLL_FLOAT64, REDCOLL_SUM, NULL);
  int st4 = redcoll_ibarrier(c, NULL);
  int st5 = redcoll_iallreduce(c, sbuf, NULL, N, REDCOLL_FLOAT64, REDCOLL_SUM, &req);
  char log[2048];
  log_end(log, sizeof log);
  CHECK_INT(st1, REDCOLL_EINVAL);
  CHECK_INT(st2, REDCOLL_EINVAL);
  CHECK_INT(st3, REDCOLL_EINVAL);
  CHECK_INT(st4, REDCOLL_EINVAL);
  CHECK_INT(st5, REDCOLL_EINVAL);
  CHECK(req == NULL);
  CHECK_INT(state.calls, 0);
  CHECK(strstr(log, "redcoll error: rank 1: reduce count 16 dtype float64 root 9 refused: "
                    "REDCOLL_EINVAL (") != NULL);
  CHECK(strstr(log, "the root is not a rank of the communicator\n") != NULL);
  CHECK(strstr(log, "rank 1: allreduce count 16 dtype int32 refused: REDCOLL_EINVAL") != NULL);
  CHECK(strstr(log, "REDCOLL_IN_PLACE in a slot, or on a rank, where the collective has no "
                    "in-place form\n") != NULL);
  CHECK(strstr(log, "rank 1: allreduce count 16 dtype float64 refused: REDCOLL_EINVAL "
                    "(invalid argument): the request's address is NULL\n") != NULL);
  CHECK(strstr(log, "rank 1: barrier refused: REDCOLL_EINVAL (invalid argument): the request's "
                    "address is NULL\n") != NULL);
  CHECK(strstr(log, "a NULL buffer where there are elements to move\n") != NULL);
  /* One line each: five calls, five newlines. */
  int lines = 0;
  for (const char *q = log; *q != '\0'; q++) lines += *q == '\n';
  CHECK_INT(lines, 5);
  CHECK_INT(redcoll_comm_error(c), REDCOLL_OK); /* refused calls do not break it */
  redcoll_comm_destroy(c);
}

/* The tag folds sequence number, collective, count, dtype, op and root. */
static void tags(void) {
  uint64_t t = redcoll__make_tag(5, REDCOLL_COLL_REDUCE, 100, REDCOLL_FLOAT64, REDCOLL_SUM, 3);
  CHECK_INT(t >> 40, 5);
  CHECK(t != redcoll__make_tag(6, REDCOLL_COLL_REDUCE, 100, REDCOLL_FLOAT64, REDCOLL_SUM, 3));
  CHECK(t != redcoll__make_tag(5, REDCOLL_COLL_ALLREDUCE, 100, REDCOLL_FLOAT64, REDCOLL_SUM, 3));
  CHECK(t != redcoll__make_tag(5, REDCOLL_COLL_REDUCE, 101, REDCOLL_FLOAT64, REDCOLL_SUM, 3));
  CHECK(t != redcoll__make_tag(5, REDCOLL_COLL_REDUCE, 100, REDCOLL_FLOAT32, REDCOLL_SUM, 3));
  CHECK(t != redcoll__make_tag(5, REDCOLL_COLL_REDUCE, 100, REDCOLL_FLOAT64, REDCOLL_MAX, 3));
  CHECK(t != redcoll__make_tag(5, REDCOLL_COLL_REDUCE, 100, REDCOLL_FLOAT64, REDCOLL_SUM, 2));
  CHECK_INT(t, redcoll__make_tag(5, REDCOLL_COLL_REDUCE, 100, REDCOLL_FLOAT64, REDCOLL_SUM, 3));
}

TEST_MAIN(TEST(comm_rules), TEST(collective_rules), TEST(rooted_rules), TEST(alias_rules),
          TEST(version3), TEST(create_ownership), TEST(trivial_calls), TEST(broken_comm),
          TEST(refusals_logged), TEST(tags))
