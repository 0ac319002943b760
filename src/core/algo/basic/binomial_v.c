/*
 * Binomial gatherv and scatterv ("binary_tree"): rooted collectives with
 * blocks of any size in ceil(log2 p) rounds, every message exactly as long
 * as the blocks it carries.
 *
 * On virtual ranks v = (rank - root) mod p, rank v's subtree is the ranks
 * [v, v + low(v)) (low: the lowest set bit of v; everything for the root),
 * and its children are v + 1, v + 2, v + 4, ... below low(v).  gatherv: a
 * rank receives the packed subtrees of its children, smallest first, right
 * behind its own block in virtual-rank order, then sends the whole packed
 * subtree to its parent v - low(v); the root unpacks each block to
 * recvbuf + displs[i].  scatterv: the reverse, largest child first; the
 * root packs its blocks in virtual-rank order first.  A leaf sends from
 * sendbuf (gatherv) or receives into recvbuf (scatterv) directly; an empty
 * subtree is no message.  With S_v the elements of rank v's subtree, e the
 * element size and N the sum of all counts:
 *   rounds: ceil(log2 p); rank v sends (gatherv) or receives (scatterv)
 *   S_v e bytes; the root receives or sends (N - n_root) e bytes, in
 *   ceil(log2 p) messages whose sizes are the subtrees' (the counts), not
 *   p times the largest block.
 *   time on the critical path: sum over the root's children c of
 *   (alpha + S_c e beta) for an even spread <= ceil(log2 p) alpha + N e beta.
 *
 * Restrictions: none (no operator).  Every rank needs every count (a
 * subtree's size): gatherv's recvcounts and scatterv's sendcounts are
 * passed on every rank.  Scratch: an inner rank holds its packed subtree
 * (at most N elements); the root packs or unpacks N - n_root elements, the
 * only copies besides the own block.
 *
 * Example, gatherv on p = 6 with root 2 (virtual v = rank - 2 mod 6):
 * round 1: v1 -> v0, v3 -> v2, v5 -> v4; round 2: v2 (with v3) -> v0;
 * round 3: v4 (with v5) -> v0.  In ranks: 3 -> 2, 5 -> 4, 1 -> 0; 4 (4, 5)
 * -> 2; 0 (0, 1) -> 2.
 */
#include "algo/basic/binomial_v.h"
#include "internal.h"
#include "select/cost.h"

typedef struct {
  const redcoll__call *call;
  int p, root;
  size_t es;
  int v, end;      /* this rank's virtual rank and the end of its subtree */
  size_t own, sub; /* bytes of its block and of its whole subtree */
} bv_ctx;

static size_t bv_sum(const bv_ctx *t, int a, int b);

static bv_ctx bv_init(const redcoll__call *call) {
  redcoll_comm *c = call->comm;
  bv_ctx t = {call, c->size, call->root, call->esize, 0, 0, 0, 0};
  t.v = (c->rank - t.root + t.p) % t.p;
  t.end = redcoll__binom_end(t.p, t.v);
  t.own = call->counts[c->rank] * t.es;
  t.sub = bv_sum(&t, t.v, t.end) * t.es;
  return t;
}

static int bv_real(const bv_ctx *t, int v) { return (v + t->root) % t->p; }
static size_t bv_count(const bv_ctx *t, int v) { return t->call->counts[bv_real(t, v)]; }

/* Elements of virtual ranks [a, b). */
static size_t bv_sum(const bv_ctx *t, int a, int b) {
  size_t s = 0;
  for (int v = a; v < b; v++) s += bv_count(t, v);
  return s;
}

/* Bytes of child v + m's packed subtree.  The children's subtrees lie one
 * after the other in v's packed buffer, smallest child first, behind v's
 * own block (left out at the root): the loops keep the running offset. */
static size_t bv_child(const bv_ctx *t, int v, int m) {
  return bv_sum(t, v + m, redcoll__binom_end(t->p, v + m)) * t->es;
}

/* The root's blocks in virtual order, packed at pack, to or from their
 * places (unpack: pack -> buffer).  The root's own block is skipped. */
static void bv_root_copy(const bv_ctx *t, char *pack, int unpack) {
  char *buf = unpack ? t->call->recvbuf : (char *)t->call->sendbuf;
  size_t o = 0;
  for (int v = 1; v < t->p; v++) {
    int i = bv_real(t, v);
    size_t n = t->call->counts[i] * t->es;
    char *at = buf + t->call->displs[i] * t->es;
    if (unpack) redcoll__copy(t->call->comm, at, pack + o, n);
    else redcoll__copy(t->call->comm, pack + o, at, n);
    o += n;
  }
}

static int gatherv_binomial(const redcoll__call *call) {
  redcoll_comm *c = call->comm;
  bv_ctx t = bv_init(call);
  char *pack = NULL;
  int rc;
  if (t.end > t.v + 1) {
    /* an inner rank: its own block (not at the root), then the children's */
    if ((pack = redcoll__scratch(c, 0, t.sub)) == NULL) return REDCOLL_ENOMEM;
    if (t.v > 0) redcoll__copy(c, pack, call->sendbuf, t.own);
    size_t at = t.v > 0 ? t.own : 0;
    for (int m = 1; t.v + m < t.end; m <<= 1) {
      size_t n = bv_child(&t, t.v, m);
      if (n > 0 && (rc = redcoll__recv(c, bv_real(&t, t.v + m), pack + at, n)) != REDCOLL_OK) return rc;
      at += n;
    }
  }
  if (t.v > 0) {
    const void *out = pack != NULL ? pack : call->sendbuf;
    return t.sub > 0 ? redcoll__send(c, bv_real(&t, redcoll__binom_parent(t.v)), out, t.sub) : REDCOLL_OK;
  }
  if (!call->in_place && t.own > 0)
    redcoll__copy(c, (char *)call->recvbuf + call->displs[c->rank] * t.es, call->sendbuf, t.own);
  if (pack != NULL) bv_root_copy(&t, pack, 1);
  return REDCOLL_OK;
}

static int scatterv_binomial(const redcoll__call *call) {
  redcoll_comm *c = call->comm;
  bv_ctx t = bv_init(call);
  char *pack = NULL;
  int rc;
  if (t.v == 0) {
    if (!call->in_place && t.own > 0)
      redcoll__copy(c, call->recvbuf, (const char *)call->sendbuf + call->displs[c->rank] * t.es, t.own);
    if ((pack = redcoll__scratch(c, 0, t.sub - t.own)) == NULL) return REDCOLL_ENOMEM;
    bv_root_copy(&t, pack, 0);
  } else if (t.end > t.v + 1) {
    if ((pack = redcoll__scratch(c, 0, t.sub)) == NULL) return REDCOLL_ENOMEM;
    int parent = bv_real(&t, redcoll__binom_parent(t.v));
    if (t.sub > 0 && (rc = redcoll__recv(c, parent, pack, t.sub)) != REDCOLL_OK) return rc;
    redcoll__copy(c, call->recvbuf, pack, t.own);
  } else {
    int parent = bv_real(&t, redcoll__binom_parent(t.v));
    return t.own > 0 ? redcoll__recv(c, parent, call->recvbuf, t.own) : REDCOLL_OK;
  }
  /* children, largest (farthest) first */
  int m = 1;
  while (t.v + m * 2 < t.end && m * 2 < redcoll__binom_low(t.p, t.v)) m <<= 1;
  /* The packed buffer ends with the largest child's subtree. */
  size_t at = t.v > 0 ? t.sub : t.sub - t.own;
  for (; m > 0; m >>= 1) {
    if (t.v + m >= t.end) continue;
    size_t n = bv_child(&t, t.v, m);
    at -= n;
    if (n > 0 && (rc = redcoll__send(c, bv_real(&t, t.v + m), pack + at, n)) != REDCOLL_OK) return rc;
  }
  return REDCOLL_OK;
}

/* The root's children's subtrees one after the other, for the largest
 * block b: ceil(log2 p) (alpha + ...) with at most (p-1) b in all. */
static double cost_binomial_v(const redcoll__mach *M, const redcoll__cost_args *a) {
  double b = (double)a->count * (double)a->esize;
  return redcoll__ceil_log2(a->p) * M->a + (a->p - 1) * b * M->b;
}

const redcoll__algo_entry redcoll__algos_binomial_v[] = {
    {REDCOLL_COLL_GATHERV, REDCOLL_ALGO_BINARY_TREE, gatherv_binomial, cost_binomial_v, 0},
    {REDCOLL_COLL_SCATTERV, REDCOLL_ALGO_BINARY_TREE, scatterv_binomial, cost_binomial_v, 0},
    {REDCOLL_COLL_COUNT, REDCOLL_ALGO_AUTO, NULL, NULL, 0},
};
