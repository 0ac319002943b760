/*
 * Prefix by transposition ("transpose"): the prefix for long vectors, with
 * a volume per rank that does not grow with p.
 *
 * The vector of n elements is cut into p blocks as evenly as possible
 * (redcoll__block_start); rank j owns block j.  (1) Pairwise exchange
 * (p-1 rounds: in round k rank r sends to r+k and receives from r-k, mod p)
 * brings rank j block j of every rank's input, S_0 .. S_{p-1}.  (2) Rank j
 * computes the p prefixes of its block in rank order, S_i = S_{i-1} (+) S_i,
 * sequentially.  (3) A second pairwise exchange returns to each rank i its
 * prefix block (S_i for scan, S_{i-1} for exscan; rank 0 receives nothing
 * then).  exscan_total sends the block's total S_{p-1} along in the same
 * message (packed behind the prefix block), so every rank receives every
 * block of the total as its owner computed it: bitwise identical totals.
 * With b = ceil(n / p) elements of e bytes per block, B = b e:
 *   scan, exscan: 2(p-1) (alpha + B beta) + (p-1) B gamma
 *   exscan_total: (p-1) (alpha + B beta) + (p-1) (alpha + 2B beta) + (p-1) B gamma
 * Each rank sends and receives (p-1) B twice, 2 (p-1)/p m: the volume stays
 * below 2m (3m with the total) for every p, and the reduction work,
 * (p-1)/p m, is spread evenly.  The price is 2(p-1) start-ups, so AUTO
 * takes it for long vectors only.
 *
 * Why this and not a pipeline: a pipelined chain (Sanders and Traff 2006
 * list it) sends m per rank but takes p - 2 + s rounds for s segments and
 * needs s chosen from alpha, beta and m, and exscan_total would pipeline
 * the total back down the chain, two sends per round per rank.  The
 * transposition is the reduce-scatter idea of Rabenseifner's allreduce
 * applied to the prefix: per-rank volume within 2x (3x with the total) of
 * m, every element combined once in rank order by one owner, fixed rounds
 * the simulator can check, and the same pairwise exchange as alltoall.
 *
 * Restrictions: none; S_i is combined strictly in rank order.  Scratch: the
 * p pieces of the own block, p b elements (at most n + p - 1); exscan_total
 * also packs two blocks to send and two received (4 b elements).  The
 * packing is the only copying: 4 (p-1) B bytes, and only in exscan_total.
 *
 * Example, scan on p = 3, n = 6 (blocks of 2): round 1: r -> r+1 sends its
 * block r+1; round 2: r -> r+2 sends block r+2.  Rank 1 now holds block 1
 * of v0, v1, v2 and computes v0, v0+v1, (v0+v1)+v2 on it; round 1 of phase
 * 3 sends (v0+v1)+v2 to rank 2, round 2 sends v0 to rank 0.
 */
#include "algo/scan/scan.h"
#include "select/cost.h"

typedef struct {
  const redcoll__call *call;
  size_t n, es;
  int p, r;
} tp_ctx;

static size_t tp_off(const tp_ctx *t, int j) { return redcoll__block_start(t->n, (size_t)t->p, (size_t)j); }
static size_t tp_len(const tp_ctx *t, int j) { return tp_off(t, j + 1) - tp_off(t, j); }

/* Phase 1: S[j] = block r of rank j's input; phase 2: the prefixes. */
static int tp_gather_prefix(const tp_ctx *t, char *S, int upto) {
  const redcoll__call *call = t->call;
  redcoll_comm *c = call->comm;
  size_t len = tp_len(t, t->r), lb = len * t->es;
  const char *v = call->sendbuf;
  int dst, src, rc;
  redcoll__copy(c, S + (size_t)t->r * lb, v + tp_off(t, t->r) * t->es, lb);
  for (int k = 1; k < t->p; k++) {
    redcoll__pairwise_peers(t->p, t->r, k, &dst, &src);
    rc = redcoll__sendrecv(c, dst, v + tp_off(t, dst) * t->es, tp_len(t, dst) * t->es, src,
                           S + (size_t)src * lb, lb);
    if (rc != REDCOLL_OK) return rc;
  }
  for (int j = 1; j <= upto; j++) redcoll__reduce(call, S + j * lb, S + (j - 1) * lb, S + j * lb, len);
  return REDCOLL_OK;
}

/* Phase 3 of scan and exscan: rank i gets its prefix block (S_i, or S_{i-1}
 * with shift 1, nothing to rank 0 then). */
static int tp_return(const tp_ctx *t, const char *S, int shift) {
  redcoll_comm *c = t->call->comm;
  size_t lb = tp_len(t, t->r) * t->es;
  char *out = t->call->recvbuf;
  int dst, src, rc;
  if (t->r - shift >= 0)
    redcoll__copy(c, out + tp_off(t, t->r) * t->es, S + (size_t)(t->r - shift) * lb, lb);
  for (int k = 1; k < t->p; k++) {
    redcoll__pairwise_peers(t->p, t->r, k, &dst, &src);
    int to = dst - shift >= 0 ? dst : -1, from = t->r - shift >= 0 ? src : -1;
    const char *sb = to >= 0 ? S + (size_t)(dst - shift) * lb : NULL;
    rc = redcoll__sendrecv(c, to, sb, lb, from,
                           out + tp_off(t, src) * t->es, tp_len(t, src) * t->es);
    if (rc != REDCOLL_OK) return rc;
  }
  return REDCOLL_OK;
}

/* Phase 3 of exscan_total: [S_{i-1} | S_{p-1}] to rank i (only S_{p-1} to
 * rank 0), unpacked on arrival into recvbuf and total. */
static int tp_return_total(const tp_ctx *t, const char *S) {
  redcoll_comm *c = t->call->comm;
  size_t lb = tp_len(t, t->r) * t->es, bmax = tp_len(t, 0) * t->es;
  char *out = t->call->recvbuf, *tot = t->call->total;
  const char *T = S + (size_t)(t->p - 1) * lb;
  char *spack = redcoll__scratch(c, 1, 4 * bmax), *rpack = spack + 2 * bmax;
  int dst, src, rc;
  if (spack == NULL) return REDCOLL_ENOMEM;
  redcoll__copy(c, tot + tp_off(t, t->r) * t->es, T, lb);
  if (t->r > 0) redcoll__copy(c, out + tp_off(t, t->r) * t->es, S + (size_t)(t->r - 1) * lb, lb);
  for (int k = 1; k < t->p; k++) {
    redcoll__pairwise_peers(t->p, t->r, k, &dst, &src);
    const char *sb = T;
    size_t sl = lb, rl = tp_len(t, src) * t->es;
    if (dst > 0) {
      redcoll__copy(c, spack, S + (size_t)(dst - 1) * lb, lb);
      redcoll__copy(c, spack + lb, T, lb);
      sb = spack;
      sl = 2 * lb;
    }
    char *rb = t->r > 0 ? rpack : tot + tp_off(t, src) * t->es;
    rc = redcoll__sendrecv(c, dst, sb, sl, src, rb, t->r > 0 ? 2 * rl : rl);
    if (rc != REDCOLL_OK) return rc;
    if (t->r > 0) {
      redcoll__copy(c, out + tp_off(t, src) * t->es, rpack, rl);
      redcoll__copy(c, tot + tp_off(t, src) * t->es, rpack + rl, rl);
    }
  }
  return REDCOLL_OK;
}

static int scan_transpose(const redcoll__call *call) {
  redcoll_comm *c = call->comm;
  tp_ctx t = {call, call->count, call->esize, c->size, c->rank};
  redcoll_coll kind = call->coll;
  char *S = redcoll__scratch(c, 0, (size_t)t.p * tp_len(&t, t.r) * t.es);
  if (S == NULL) return REDCOLL_ENOMEM;
  /* exscan needs the prefixes up to S_{p-2} only */
  int rc = tp_gather_prefix(&t, S, kind == REDCOLL_COLL_EXSCAN ? t.p - 2 : t.p - 1);
  if (rc != REDCOLL_OK) return rc;
  if (kind == REDCOLL_COLL_EXSCAN_TOTAL) return tp_return_total(&t, S);
  return tp_return(&t, S, kind == REDCOLL_COLL_EXSCAN);
}

/* ---- cost ---------------------------------------------------------------- */

static double cost_scan(const redcoll__mach *M, const redcoll__cost_args *a) {
  double b = redcoll__cost_blk(a->count, (size_t)a->p, a->esize), p1 = a->p - 1;
  return 2 * p1 * redcoll__cost_rnd(M, b, 0) + p1 * b * M->g;
}

static double cost_total(const redcoll__mach *M, const redcoll__cost_args *a) {
  double b = redcoll__cost_blk(a->count, (size_t)a->p, a->esize), p1 = a->p - 1;
  return p1 * redcoll__cost_rnd(M, b, 0) + p1 * redcoll__cost_rnd(M, 2 * b, 0) + p1 * b * M->g;
}

const redcoll__algo_entry redcoll__algos_transpose[] = {
    {REDCOLL_COLL_SCAN, REDCOLL_ALGO_TRANSPOSE, scan_transpose, cost_scan, 0},
    {REDCOLL_COLL_EXSCAN, REDCOLL_ALGO_TRANSPOSE, scan_transpose, cost_scan, 0},
    {REDCOLL_COLL_EXSCAN_TOTAL, REDCOLL_ALGO_TRANSPOSE, scan_transpose, cost_total, 0},
    {REDCOLL_COLL_COUNT, REDCOLL_ALGO_AUTO, NULL, NULL, 0},
};
