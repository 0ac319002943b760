/*
 * Buffers and aliasing, every collective x every algorithm, on the simulator:
 *  - separate buffers: the result is right and sendbuf is left as it was
 *    (no algorithm may use the caller's input as scratch);
 *  - sendbuf exactly where the in-place layout puts the rank's own block
 *    (recvbuf for allreduce, reduce and reduce_scatter; recvbuf + rank *
 *    block for allgather(v); recvbuf + root * block at the root of gather;
 *    recvbuf == sendbuf + root * block at the root of scatter): the same
 *    result as REDCOLL_IN_PLACE;
 *  - the same buffer on a rank whose own block is not at its start: every
 *    rank gets REDCOLL_EINVAL and nothing is written.
 * Data are int32 sums, exact in any order, so results compare bytewise.
 */
#include <stdint.h>
#include <stdlib.h>

#include "redcoll/mock.h"
#include "test.h"

enum mode { SEPARATE, ALIAS };

typedef struct job {
  redcoll_coll coll;
  redcoll_algo algo;
  enum mode mode;
  int p, root;
  size_t n;         /* count argument: vector, or per-rank block */
  int status[64];   /* per rank */
  int wrong[64];    /* per rank: result or input differs */
} job;

static int32_t value(int rank, size_t i) { return (int32_t)(rank * 1000 + (int)i + 1); }

/* The per-rank block counts of reduce_scatter and allgatherv: uneven, one
 * zero when p > 2. */
static size_t vcount(const job *j, int r) { return j->p > 2 && r == 1 ? 0 : j->n + (size_t)r % 3; }

static size_t vtotal(const job *j) {
  size_t t = 0;
  for (int r = 0; r < j->p; r++) t += vcount(j, r);
  return t;
}
static size_t voff(const job *j, int r) {
  size_t t = 0;
  for (int q = 0; q < r; q++) t += vcount(j, q);
  return t;
}

/* Sum over ranks of value(rank, i). */
static int32_t sum_at(int p, size_t i) {
  int32_t s = 0;
  for (int r = 0; r < p; r++) s += value(r, i);
  return s;
}

/* Runs one collective on this rank with the job's buffer mode.  buf holds
 * room for everything; returns the status and sets *bad when the result
 * or the untouched input is wrong. */
static int call(redcoll_comm *c, const job *j, int32_t *buf, int32_t *in, int *bad) {
  int me = redcoll_comm_rank(c), p = j->p;
  size_t n = j->n, big = (size_t)p * n;
  const redcoll_op *S = REDCOLL_SUM;
  redcoll_dtype I = REDCOLL_INT32;
  size_t counts[64];
  for (int r = 0; r < p; r++) counts[r] = vcount(j, r);
  int alias = j->mode != SEPARATE, rc = REDCOLL_OK, is_root = me == j->root;
  size_t in_n = 0, out_n = 0, own = 0; /* input elements, output elements, own offset */
  switch (j->coll) {
    case REDCOLL_COLL_ALLREDUCE: case REDCOLL_COLL_REDUCE: in_n = n; out_n = n; break;
    case REDCOLL_COLL_REDUCE_SCATTER_BLOCK: in_n = big; out_n = n; break;
    case REDCOLL_COLL_REDUCE_SCATTER: in_n = vtotal(j); out_n = counts[me]; break;
    case REDCOLL_COLL_ALLGATHER: in_n = n; out_n = big; own = (size_t)me * n; break;
    case REDCOLL_COLL_ALLGATHERV: in_n = counts[me]; out_n = vtotal(j); own = voff(j, me); break;
    case REDCOLL_COLL_GATHER: in_n = n; out_n = big; own = (size_t)j->root * n; break;
    case REDCOLL_COLL_SCATTER: in_n = big; out_n = n; own = (size_t)j->root * n; break;
    default: return REDCOLL_EINVAL;
  }
  int scatter = j->coll == REDCOLL_COLL_SCATTER;
  /* The input: for scatter the root's p blocks, else this rank's values
   * (a p-block input for the reduce-scatters). */
  for (size_t i = 0; i < in_n; i++) in[i] = scatter ? value(0, i) : value(me, i);
  int32_t *recv = buf, *send = in;
  if (alias && !scatter) {
    for (size_t i = 0; i < out_n + in_n; i++) buf[i] = -7;
    memcpy(buf + own, in, in_n * sizeof *in);
    send = buf + own;
  } else if (alias) {
    recv = in + own; /* the root's recvbuf inside its sendbuf */
  }
  if (!alias) memset(buf, 0xee, out_n * sizeof *buf);
  switch (j->coll) {
    case REDCOLL_COLL_ALLREDUCE: rc = redcoll_allreduce(c, send, recv, n, I, S); break;
    case REDCOLL_COLL_REDUCE: rc = redcoll_reduce(c, send, recv, n, I, S, j->root); break;
    case REDCOLL_COLL_REDUCE_SCATTER_BLOCK:
      rc = redcoll_reduce_scatter_block(c, send, recv, n, I, S);
      break;
    case REDCOLL_COLL_REDUCE_SCATTER: rc = redcoll_reduce_scatter(c, send, recv, counts, I, S); break;
    case REDCOLL_COLL_ALLGATHER: rc = redcoll_allgather(c, send, recv, n, I); break;
    case REDCOLL_COLL_ALLGATHERV: rc = redcoll_allgatherv(c, send, counts[me], recv, counts, I); break;
    case REDCOLL_COLL_GATHER: rc = redcoll_gather(c, send, recv, n, I, j->root); break;
    case REDCOLL_COLL_SCATTER: rc = redcoll_scatter(c, send, recv, n, I, j->root); break;
    default: break;
  }
  if (rc != REDCOLL_OK) return rc;
  /* Expected output, element by element. */
  size_t off = j->coll == REDCOLL_COLL_REDUCE_SCATTER_BLOCK ? (size_t)me * n
               : j->coll == REDCOLL_COLL_REDUCE_SCATTER    ? voff(j, me)
                                                           : 0;
  int check_out = !(j->coll == REDCOLL_COLL_REDUCE || j->coll == REDCOLL_COLL_GATHER) || is_root;
  for (size_t i = 0; check_out && i < out_n; i++) {
    int32_t want;
    switch (j->coll) {
      case REDCOLL_COLL_ALLGATHER: case REDCOLL_COLL_GATHER:
        want = value((int)(i / n), i % n);
        break;
      case REDCOLL_COLL_ALLGATHERV: {
        int r = 0;
        while (i >= voff(j, r) + counts[r]) r++;
        want = value(r, i - voff(j, r));
        break;
      }
      case REDCOLL_COLL_SCATTER: want = value(0, (size_t)me * n + i); break;
      default: want = sum_at(p, off + i); break;
    }
    if (recv[i] != want) *bad = 1;
  }
  /* Separate buffers: the input is as it was. */
  for (size_t i = 0; j->mode == SEPARATE && i < in_n; i++)
    if (in[i] != (scatter ? value(0, i) : value(me, i))) *bad = 1;
  return rc;
}

static int rank_main(redcoll_comm *c, void *arg) {
  job *j = arg;
  int me = redcoll_comm_rank(c);
  if (j->algo != REDCOLL_ALGO_AUTO) redcoll_comm_set_algorithm(c, j->coll, j->algo);
  size_t room = (size_t)j->p * (j->n + 3) * 3 + 16; /* input and output, and more */
  int32_t *buf = calloc(room, sizeof *buf), *in = calloc(room, sizeof *in);
  if (buf == NULL || in == NULL) return REDCOLL_ENOMEM;
  int bad = 0;
  j->status[me] = call(c, j, buf, in, &bad);
  j->wrong[me] = bad;
  free(buf);
  free(in);
  return REDCOLL_OK;
}

static void run(job *j) {
  redcoll_mock_config cfg;
  redcoll_mock_config_init(&cfg);
  cfg.seed = (uint64_t)(j->p * 131 + (int)j->coll * 17 + (int)j->algo);
  memset(j->status, 0, sizeof j->status);
  memset(j->wrong, 0, sizeof j->wrong);
  int rc = redcoll_mock_run(j->p, &cfg, rank_main, j, NULL);
  CHECK_MSG(rc == REDCOLL_OK, "%s/%s p=%d mode %d: run %s", redcoll_coll_name(j->coll),
            redcoll_algo_name(j->algo), j->p, (int)j->mode, redcoll_status_name(rc));
  for (int r = 0; r < j->p; r++) {
    CHECK_MSG(j->status[r] == REDCOLL_OK && !j->wrong[r], "%s/%s p=%d n=%zu root=%d mode %d rank %d: %s%s",
              redcoll_coll_name(j->coll), redcoll_algo_name(j->algo), j->p, j->n, j->root,
              (int)j->mode, r, redcoll_status_name(j->status[r]), j->wrong[r] ? ", wrong data" : "");
  }
}

/* sendbuf == recvbuf on a rank whose own block is not first (every rank
 * but 0 of allgather and allgatherv): REDCOLL_EINVAL before anything is
 * sent, buffer untouched.  Rank 0, for which the same call would be in
 * place, stays out, so no rank waits (the simulator would report a
 * deadlock, not hang). */
static int misaligned_main(redcoll_comm *c, void *arg) {
  job *j = arg;
  int me = redcoll_comm_rank(c);
  int32_t buf[256];
  for (int i = 0; i < 256; i++) buf[i] = i;
  size_t counts[64];
  for (int r = 0; r < j->p; r++) counts[r] = j->n;
  if (me == 0) {
    j->status[me] = REDCOLL_EINVAL;
    return REDCOLL_OK;
  }
  j->status[me] = j->coll == REDCOLL_COLL_ALLGATHER
                      ? redcoll_allgather(c, buf, buf, j->n, REDCOLL_INT32)
                      : redcoll_allgatherv(c, buf, j->n, buf, counts, REDCOLL_INT32);
  for (int i = 0; i < 256; i++)
    if (buf[i] != i) j->wrong[me] = 1;
  return REDCOLL_OK;
}

static void misaligned(redcoll_coll coll, int p) {
  job j = {.coll = coll, .p = p, .n = 5};
  redcoll_mock_config cfg;
  redcoll_mock_config_init(&cfg);
  CHECK_INT(redcoll_mock_run(p, &cfg, misaligned_main, &j, NULL), REDCOLL_OK);
  for (int r = 0; r < p; r++) {
    CHECK_MSG(j.status[r] == REDCOLL_EINVAL && !j.wrong[r], "%s p=%d rank %d: %s%s",
              redcoll_coll_name(coll), p, r, redcoll_status_name(j.status[r]),
              j.wrong[r] ? ", buffer written" : "");
  }
}

static void every_algorithm(void) {
  static const redcoll_coll colls[] = {
      REDCOLL_COLL_ALLREDUCE,      REDCOLL_COLL_REDUCE,    REDCOLL_COLL_REDUCE_SCATTER_BLOCK,
      REDCOLL_COLL_REDUCE_SCATTER, REDCOLL_COLL_ALLGATHER, REDCOLL_COLL_ALLGATHERV,
      REDCOLL_COLL_GATHER,         REDCOLL_COLL_SCATTER};
  static const int ps[] = {1, 2, 3, 5, 7, 8, 13};
  int runs = 0;
  for (size_t ci = 0; ci < sizeof colls / sizeof colls[0]; ci++) {
    for (int a = 0; a < REDCOLL_ALGO_COUNT; a++) {
      if (!redcoll_algo_is_supported(colls[ci], (redcoll_algo)a)) continue;
      for (size_t pi = 0; pi < sizeof ps / sizeof ps[0]; pi++) {
        for (int mode = SEPARATE; mode <= ALIAS; mode++) {
          for (size_t n = 1; n <= 37; n += 36) {
            job j = {.coll = colls[ci], .algo = (redcoll_algo)a, .mode = (enum mode)mode,
                     .p = ps[pi], .root = ps[pi] / 2, .n = n};
            run(&j);
            runs++;
          }
        }
      }
    }
  }
  printf("%d runs\n", runs);
}

static void same_buffer_off_position(void) {
  for (int p = 2; p <= 9; p++) {
    misaligned(REDCOLL_COLL_ALLGATHER, p);
    misaligned(REDCOLL_COLL_ALLGATHERV, p);
  }
}

TEST_MAIN(TEST(every_algorithm), TEST(same_buffer_off_position))
