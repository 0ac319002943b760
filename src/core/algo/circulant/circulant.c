/*
 * Circulant-graph collectives ("circulant", "circulant_rsag"), after Traeff,
 * Hunold, Vardas and Funk, "Uniform algorithms for reduce-scatter and (most)
 * other collectives for MPI", section III; the pattern is the census
 * algorithm of Bar-Noy, Kipnis and Schieber.
 *
 * The pattern (circulant.h): q = ceil(log2 p) rounds; in round k rank r sends
 * to r - d_k and receives from r + d_k (mod p), with d_k = skips[k] - eps_k,
 * skips obtained by halving p with rounding up, and eps_k = skips[k+1] & 1.
 * After round k rank r holds the reduction of the inputs of ranks
 * r+1 .. r+skips[k+1]-1: when skips[k+1] is even it receives that of rank
 * r+d_k including its input (W), when odd that of rank r+d_k-1... = r+d_k
 * excluding its input (S).
 *
 * Costs (m the vector in bytes; for rooted and scattered collectives m is
 * the whole vector):
 *   allreduce      q alpha + q m beta + (q + q') m gamma, where q' < q counts
 *                  the rounds before the last odd skips[k+1] in which the
 *                  partial sum S must also be kept (q' = 0 for p a power of
 *                  two; the paper's bound is 2q m gamma).
 *   reduce         q (alpha + m beta + m gamma), at the root; any root.
 *   reduce_scatter_block
 *                  q alpha + (2^q - 1)/p m (beta + gamma).  Irregular blocks:
 *                  the same rounds; up to q m beta when one block holds all.
 *   allgather      q alpha + (p-1)/p m beta, copies at most ceil(p/2) blocks
 *                  (rank 0 none).  allgatherv: same rounds, up to q m beta.
 *   bcast          q (alpha + m beta) at the root (the reduce tree reversed).
 *   gather/scatter q alpha + (p-1)/p m beta at the root.
 *   circulant_rsag allreduce as reduce_scatter of p balanced blocks then
 *                  allgatherv: 2q alpha + ((2^q - 1)/p + (p-1)/p) m beta
 *                  + (2^q - 1)/p m gamma.  reduce the same way, with a gather
 *                  to the root instead of the allgatherv: the same cost at
 *                  the root.  With x = (2^q - 1)/p and y = (p-1)/p this
 *                  beats the reduce tree when m > q alpha / ((q - x - y) beta
 *                  + (q - x) gamma), about alpha/beta bytes for large p;
 *                  guideline (5) of section IV-C (reduce no slower than
 *                  allreduce) needs it once allreduce switches to rsag.
 *
 * Restrictions: every reduction needs a commutative operator (the operands
 * meet in rank-dependent order; results may differ in the last bit between
 * ranks for floating point).  Scratch: allreduce uses one vector, two when p
 * is not a power of two (the partial sums W and S are both live, besides the
 * incoming vector); reduce two on inner non-root ranks (accumulator and
 * incoming); reduce_scatter two buffers of 2^(q-1) blocks each (< m each);
 * allgather one of at most ceil(p/2) blocks; gather/scatter one of at most
 * skips[q-1] blocks; reduce circulant_rsag reduce_scatter's two plus the own
 * block (< m each).
 *
 * Example, p = 11: skips = 1 2 3 6 11, eps = 0 1 0 1, d = 1 1 3 5.  Allreduce,
 * rank 0: round 0 receives V1 from 1 and sends V0 to 10; round 1 receives S_1
 * = V2 from 1 and sends S_0 = V1 to 10 (holds V1+V2); round 2 receives
 * W_3 = V3+V4+V5 from 3 (holds V1..V5); round 3 receives S_5 = V6+..+V10
 * from 5: V0 + V1..V10.  Reduce to 0: rank 5 = d_3 has path head 3 and sends
 * S (eps_3 = 1), so it sends V5 alone to 4 in round 0.
 */
#include <stdlib.h>

#include "algo/circulant/circulant.h"
#include "internal.h"
#include "select/cost.h"

/* ---- pure schedule functions -------------------------------------------- */

int redcoll__circ_skips(int p, int skips[REDCOLL__CIRC_MAXQ + 1]) {
  int q = redcoll__ceil_log2(p);
  skips[q] = p;
  for (int i = q - 1; i >= 0; i--) skips[i] = skips[i + 1] - skips[i + 1] / 2;
  return q;
}

/* 1 if v is a sum of a subset of {d_k, ..., d_{q-1}}.  Since d_{i+1} is at
 * least d_k + ... + d_i, taking the largest edge that fits decides it. */
static int representable(int v, int k, int q, const int *skips) {
  for (int i = q - 1; i >= k && v > 0; i--) {
    int d = redcoll__circ_dist(skips, i);
    if (d <= v) v -= d;
  }
  return v == 0;
}

int redcoll__circ_pathhead(int v, int q, const int *skips) {
  if (v == 0) return q;
  for (int k = q - 1; k > 0; k--) {
    if (representable(v, k, q, skips)) return k;
  }
  return 0;
}

int redcoll__circ_sends_s(int v, int q, const int *skips) {
  if (v == 0) return 0;
  return redcoll__circ_eps(skips, redcoll__circ_pathhead(v, q, skips));
}

static int rel_blocks(int off, int k, int q, const int *skips, int b, int *block) {
  for (int i = k; i < q; i++) {
    int o = off + redcoll__circ_dist(skips, i);
    block[b] = o;
    b = rel_blocks(o, i + 1, q, skips, b + 1, block);
  }
  return b;
}

int redcoll__circ_relative_blocks(int q, const int *skips, int *block) {
  /* Depth-first enumeration yields the subsets with min 0 first, then those
   * with min 1, ...: exactly the segments B^0, B^1, ... */
  return rel_blocks(0, 0, q, skips, 0, block);
}

/* ---- helpers ------------------------------------------------------------ */

static int mod(int a, int p) { return redcoll__mod(a, p); } /* short: used all over */

/* Block layout of a vector split in p blocks: regular (each), balanced
 * (total split by redcoll__block_start) or explicit counts. */
typedef struct circ_blocks {
  int p;
  size_t each;          /* regular blocks, if counts == NULL && !balanced */
  size_t total;         /* elements of the whole vector */
  int balanced;
  const size_t *counts; /* explicit counts, with prefix[p + 1] */
  size_t *prefix;
} circ_blocks;

static size_t blk_off(const circ_blocks *b, int i) {
  if (b->counts) return b->prefix[i];
  if (b->balanced) return redcoll__block_start(b->total, (size_t)b->p, (size_t)i);
  return (size_t)i * b->each;
}

static size_t blk_len(const circ_blocks *b, int i) { return blk_off(b, i + 1) - blk_off(b, i); }

/* Sets up the layout of call: counts (reduce_scatter, allgatherv) or
 * regular blocks of call->count.  Returns REDCOLL_ENOMEM. */
static int blocks_init(circ_blocks *b, const redcoll__call *call) {
  memset(b, 0, sizeof *b);
  b->p = call->comm->size;
  if (call->counts == NULL) {
    b->each = call->count;
    b->total = call->count * (size_t)b->p;
    return REDCOLL_OK;
  }
  b->counts = call->counts;
  b->total = call->count;
  b->prefix = malloc(((size_t)b->p + 1) * sizeof *b->prefix);
  if (b->prefix == NULL) return REDCOLL_ENOMEM;
  b->prefix[0] = 0;
  for (int i = 0; i < b->p; i++) b->prefix[i + 1] = b->prefix[i] + call->counts[i];
  return REDCOLL_OK;
}

static void blocks_free(circ_blocks *b) {
  free(b->prefix);
  b->prefix = NULL;
}

/* The whole vector of call->count elements in p balanced blocks. */
static void blocks_balanced(circ_blocks *b, const redcoll__call *call) {
  memset(b, 0, sizeof *b);
  b->p = call->comm->size;
  b->total = call->count;
  b->balanced = 1;
}

/* A collective core on the call's block layout, from in to out. */
typedef int (*blocks_fn)(const redcoll__call *call, const circ_blocks *bl, const char *in,
                         char *out);

static int run_blocks(const redcoll__call *call, blocks_fn fn, const char *in, char *out) {
  circ_blocks bl;
  int rc = blocks_init(&bl, call);
  if (rc != REDCOLL_OK) return rc;
  rc = fn(call, &bl, in, out);
  blocks_free(&bl);
  return rc;
}

/* 1 if [a, a+an) and [b, b+bn) overlap other than exactly. */
static int partial_overlap(const char *a, size_t an, const char *b, size_t bn) {
  if (a == b || an == 0 || bn == 0) return 0;
  return a < b + bn && b < a + an;
}

/* ---- allreduce (Listing 2, Proposition 1) ------------------------------- */

static int allreduce_circulant(const redcoll__call *call) {
  redcoll_comm *c = call->comm;
  int p = c->size, r = c->rank, skips[REDCOLL__CIRC_MAXQ + 1], rc;
  int q = redcoll__circ_skips(p, skips);
  size_t n = call->count, bytes = n * call->esize;
  char *w = call->recvbuf; /* W: own input plus S */
  char *s = NULL;          /* S: the partial sum without the own input */
  char *t;                 /* the incoming vector */

  /* S^k is needed only up to the last round with eps = 1, which sends S. */
  int last_odd = -1;
  for (int k = 0; k < q; k++) {
    if (redcoll__circ_eps(skips, k)) last_odd = k;
  }
  if ((t = redcoll__scratch(c, 0, bytes)) == NULL) return REDCOLL_ENOMEM;
  if (last_odd > 0 && (s = redcoll__scratch(c, 1, bytes)) == NULL) return REDCOLL_ENOMEM;

  for (int k = 0; k < q; k++) {
    int e = redcoll__circ_eps(skips, k), d = redcoll__circ_dist(skips, k);
    const void *out = e ? (const void *)s : (k == 0 ? call->sendbuf : (const void *)w);
    /* Round 0 receives S^0 = V_{r+1} straight into S when S is kept. */
    char *in = (k == 0 && s != NULL) ? s : t;
    if ((rc = redcoll__sendrecv(c, mod(r - d, p), out, bytes, mod(r + d, p), in, bytes)) !=
        REDCOLL_OK)
      return rc;
    if (k == 0) {
      redcoll__reduce(call, w, call->sendbuf, in, n);
    } else {
      redcoll__reduce(call, w, w, t, n);
      if (k < last_odd) redcoll__reduce(call, s, s, t, n);
    }
  }
  return REDCOLL_OK;
}

/* ---- reduce (Listings 3 and 4) ------------------------------------------ */

static int reduce_circulant(const redcoll__call *call) {
  redcoll_comm *c = call->comm;
  int p = c->size, root = call->root, skips[REDCOLL__CIRC_MAXQ + 1], rc;
  int q = redcoll__circ_skips(p, skips);
  int v = mod(c->rank - root, p);
  int head = redcoll__circ_pathhead(v, q, skips);
  int sends_s = v != 0 && redcoll__circ_eps(skips, head);
  size_t n = call->count, bytes = n * call->esize;
  const void *in = call->sendbuf;
  char *acc, *t;

  if (head == 0) /* a leaf: its input is all it sends */
    return redcoll__send(c, mod(v - 1 + root, p), in, bytes);
  if ((t = redcoll__scratch(c, 0, bytes)) == NULL) return REDCOLL_ENOMEM;
  if (v == 0) {
    acc = call->recvbuf;
  } else if ((acc = redcoll__scratch(c, 1, bytes)) == NULL) {
    return REDCOLL_ENOMEM;
  }
  for (int k = 0; k < head; k++) {
    int from = mod(v + redcoll__circ_dist(skips, k) + root, p);
    if (k == 0 && sends_s) {
      /* The S type leaves the own input out of acc: it goes to v - 1 now. */
      rc = redcoll__sendrecv(c, mod(v - 1 + root, p), in, bytes, from, acc, bytes);
      if (rc != REDCOLL_OK) return rc;
      continue;
    }
    if ((rc = redcoll__recv(c, from, t, bytes)) != REDCOLL_OK) return rc;
    redcoll__reduce(call, acc, k == 0 ? in : acc, t, n);
  }
  if (v == 0) return REDCOLL_OK;
  return redcoll__send(c, mod(v - redcoll__circ_dist(skips, head) + root, p), acc, bytes);
}

/* ---- reduce_scatter (Listings 5 and 6, Proposition 2) ------------------- */

/* Reduce-scatter of input (blocks as in bl) with this rank's block of the
 * result to out.  out may equal input + its block (in place) or overlap the
 * input otherwise; the input is read completely before out is written.  out
 * NULL: the block goes to scratch 1, behind the round buffer, and *outp
 * (if not NULL) tells where. */
static int rs_core(const redcoll__call *call, const char *input, char *out, const circ_blocks *bl,
                   char **outp) {
  redcoll_comm *c = call->comm;
  int p = c->size, r = c->rank, skips[REDCOLL__CIRC_MAXQ + 1], rc = REDCOLL_OK;
  int q = redcoll__circ_skips(p, skips);
  size_t es = call->esize;
  if (q > 30) return REDCOLL_ENOTSUP;
  int nslots = (1 << q) - 1, s1 = redcoll__circ_seg_start(q, 1);
  int *rel = malloc((size_t)nslots * sizeof *rel);
  size_t *pos = malloc(((size_t)nslots + 1) * sizeof *pos);
  if (rel == NULL || pos == NULL) {
    rc = REDCOLL_ENOMEM;
    goto done;
  }
  redcoll__circ_relative_blocks(q, skips, rel);
  /* Slot j carries block r - rel[j].  pos[j] (j >= s1) is its element offset
   * in the partial-sum buffer P, which holds B^1 | B^2 | ... | B^{q-1};
   * pos[0 .. s1] locate B^0 in the round-0 send buffer. */
  pos[0] = 0;
  for (int j = 0; j < s1; j++) pos[j + 1] = pos[j] + blk_len(bl, mod(r - rel[j], p));
  size_t b0 = pos[s1];
  pos[s1] = 0;
  for (int j = s1; j < nslots; j++) pos[j + 1] = pos[j] + blk_len(bl, mod(r - rel[j], p));
  size_t own = blk_len(bl, r), tail = pos[nslots];
  size_t tail2 = q > 1 ? tail - pos[redcoll__circ_seg_start(q, 2)] : 0;
  /* X receives round 0: own | B^1 | ... ; afterwards X + own is P.
   * Y packs B^0 for round 0, then receives rounds 1.. (own | B^{k+1} | ...). */
  size_t ylen = b0 > own + tail2 ? b0 : own + tail2;
  char *x = redcoll__scratch(c, 1, (own + tail + (out == NULL ? own : 0)) * es);
  char *y = redcoll__scratch(c, 0, ylen * es);
  if (x == NULL || y == NULL) {
    rc = REDCOLL_ENOMEM;
    goto done;
  }
  if (out == NULL) out = x + (own + tail) * es;
  if (outp != NULL) *outp = out;
  char *pb = x + own * es;

  /* Round 0: permute-pack B^0 (all with the own input: eps_0 = 0). */
  size_t at = 0;
  for (int j = 0; j < s1; j++) {
    int b = mod(r - rel[j], p);
    size_t len = blk_len(bl, b);
    redcoll__copy(c, y + at * es, input + blk_off(bl, b) * es, len * es);
    at += len;
  }
  rc = redcoll__sendrecv(c, mod(r - 1, p), y, b0 * es, mod(r + 1, p), x, (own + tail) * es);
  if (rc != REDCOLL_OK) goto done;
  /* Blocks sent in a round with eps = 0 carry the own input (W type); the
   * others (S type) only what was received. */
  for (int k = 1; k < q; k++) {
    if (redcoll__circ_eps(skips, k)) continue;
    for (int j = redcoll__circ_seg_start(q, k); j < redcoll__circ_seg_start(q, k + 1); j++) {
      int b = mod(r - rel[j], p);
      size_t len = blk_len(bl, b);
      if (len) redcoll__reduce(call, pb + pos[j] * es, input + blk_off(bl, b) * es, pb + pos[j] * es, len);
    }
  }
  const char *vown = input + blk_off(bl, r) * es;
  if (own > 0) {
    if (partial_overlap(out, own * es, vown, own * es)) {
      redcoll__reduce(call, x, vown, x, own);
      memmove(out, x, own * es);
    } else {
      redcoll__reduce(call, out, vown, x, own);
    }
  }

  for (int k = 1; k < q; k++) {
    int d = redcoll__circ_dist(skips, k);
    size_t sb = pos[redcoll__circ_seg_start(q, k)], se = pos[redcoll__circ_seg_start(q, k + 1)];
    size_t rest = tail - se; /* B^{k+1} | ... | B^{q-1} */
    rc = redcoll__sendrecv(c, mod(r - d, p), pb + sb * es, (se - sb) * es, mod(r + d, p), y,
                           (own + rest) * es);
    if (rc != REDCOLL_OK) goto done;
    if (own) redcoll__reduce(call, out, out, y, own);
    if (rest) redcoll__reduce(call, pb + se * es, pb + se * es, y + own * es, rest);
  }
done:
  free(rel);
  free(pos);
  return rc;
}

static int rs_blocks(const redcoll__call *call, const circ_blocks *bl, const char *in, char *out) {
  return rs_core(call, in, out, bl, NULL);
}

static int reduce_scatter_circulant(const redcoll__call *call) {
  return run_blocks(call, rs_blocks, call->sendbuf, call->recvbuf);
}

/* ---- allgather (Listing 7, Propositions 3 and 4) ------------------------- */

/* Allgather into recvbuf (blocks as in bl) of this rank's block own_in, which
 * may already be at its place in recvbuf. */
static int ag_core(const redcoll__call *call, const circ_blocks *bl, const char *own_in,
                   char *recvbuf) {
  redcoll_comm *c = call->comm;
  int p = c->size, r = c->rank, skips[REDCOLL__CIRC_MAXQ + 1], rc;
  int q = redcoll__circ_skips(p, skips);
  int last = skips[q - 1];
  size_t es = call->esize, total = bl->total, base = blk_off(bl, r);
  /* Rotated position j is block (r + j) mod p; rpos(j) its element offset
   * in the rotated vector. */
#define RPOS(j) ((r + (j) <= p) ? blk_off(bl, r + (j)) - base \
                                : total - base + blk_off(bl, r + (j) - p))
  size_t lastpos = RPOS(last);
  char *lowr, *uppr, *tmp = NULL;
  if (r + last <= p) {
    /* Positions [0, last) are in place; [last, p) wrap unless r == 0. */
    lowr = recvbuf + base * es;
    if (r == 0) {
      uppr = recvbuf + blk_off(bl, last) * es;
    } else {
      if ((tmp = redcoll__scratch(c, 0, (total - lastpos) * es)) == NULL) return REDCOLL_ENOMEM;
      uppr = tmp;
    }
    if (lowr != own_in) redcoll__copy(c, lowr, own_in, blk_len(bl, r) * es);
  } else {
    /* [0, last) wraps; [last, p) is blocks r+last-p .. r-1, in place. */
    if ((tmp = redcoll__scratch(c, 0, lastpos * es)) == NULL) return REDCOLL_ENOMEM;
    lowr = tmp;
    uppr = recvbuf + blk_off(bl, r + last - p) * es;
    redcoll__copy(c, lowr, own_in, blk_len(bl, r) * es);
  }

  for (int k = 0; k < q; k++) {
    int e = redcoll__circ_eps(skips, k), d = redcoll__circ_dist(skips, k);
    size_t s0 = RPOS(e), s1 = RPOS(e + d);
    size_t r0 = RPOS(skips[k]), r1 = RPOS(skips[k + 1]);
    char *dst = k < q - 1 ? lowr + r0 * es : uppr + (r0 - lastpos) * es;
    rc = redcoll__sendrecv(c, mod(r - d, p), lowr + s0 * es, (s1 - s0) * es, mod(r + d, p), dst,
                           (r1 - r0) * es);
    if (rc != REDCOLL_OK) return rc;
  }

  if (r + last > p) {
    size_t first = total - base; /* blocks r .. p-1 */
    redcoll__copy(c, recvbuf + base * es, lowr, first * es);
    redcoll__copy(c, recvbuf, lowr + first * es, (lastpos - first) * es);
  } else if (r > 0) {
    size_t start = blk_off(bl, r + last), first = total - start; /* blocks r+last .. p-1 */
    redcoll__copy(c, recvbuf + start * es, uppr, first * es);
    redcoll__copy(c, recvbuf, uppr + first * es, base * es);
  }
#undef RPOS
  return REDCOLL_OK;
}

static int allgather_circulant(const redcoll__call *call) {
  return run_blocks(call, ag_core, call->sendbuf, call->recvbuf);
}

/* ---- allreduce as reduce_scatter + allgatherv (section III-G) ------------ */

static int allreduce_circulant_rsag(const redcoll__call *call) {
  circ_blocks bl;
  blocks_balanced(&bl, call);
  char *mine = (char *)call->recvbuf + blk_off(&bl, call->comm->rank) * call->esize;
  int rc = rs_core(call, call->sendbuf, mine, &bl, NULL);
  if (rc != REDCOLL_OK) return rc;
  return ag_core(call, &bl, mine, call->recvbuf);
}

/* ---- bcast: the reduce tree reversed ------------------------------------ */

static int bcast_circulant(const redcoll__call *call) {
  redcoll_comm *c = call->comm;
  int p = c->size, root = call->root, skips[REDCOLL__CIRC_MAXQ + 1], rc;
  int q = redcoll__circ_skips(p, skips);
  int v = mod(c->rank - root, p);
  int head = redcoll__circ_pathhead(v, q, skips);
  size_t bytes = call->count * call->esize;
  if (v != 0) {
    rc = redcoll__recv(c, mod(v - redcoll__circ_dist(skips, head) + root, p), call->recvbuf, bytes);
    if (rc != REDCOLL_OK) return rc;
  }
  /* Children: the ranks whose path head k < head leads back here. */
  for (int k = head - 1; k >= 0; k--) {
    int u = v + redcoll__circ_dist(skips, k);
    if (u >= p || redcoll__circ_pathhead(u, q, skips) != k) continue;
    if ((rc = redcoll__send(c, mod(u + root, p), call->recvbuf, bytes)) != REDCOLL_OK) return rc;
  }
  return REDCOLL_OK;
}

/* ---- gather and scatter (section III-F) --------------------------------- */

/* Both run on the reduce tree with concatenation: virtual rank v at its
 * path head h holds the virtual blocks [v, v + skips[h]); it sends (gather)
 * or receives (scatter) [v + eps_h, v + skips[h]) to or from v - d_h, and
 * in round k < h receives from (sends to) v + d_k the blocks
 * [v + skips[k], v + skips[k+1]).  An S-type rank's own block travels alone
 * in round 0 between it and v - 1.  Virtual rank x is rank (x + root) mod p;
 * blocks may differ in size (bl), which the reduce-scatter-then-gather
 * reduce below needs.  The root holds the p blocks in rank order, so the one
 * range of virtual blocks that wraps past rank p - 1 goes through scratch. */

/* Element offset of virtual block x (0 <= x <= p) in the concatenation of
 * the blocks in virtual order, which starts with the root's. */
static size_t vpos(const circ_blocks *bl, int root, int x) {
  size_t base = blk_off(bl, root);
  if (root + x <= bl->p) return blk_off(bl, root + x) - base;
  return bl->total - base + blk_off(bl, root + x - bl->p);
}

/* Root side: where the virtual blocks [a, b) (1 <= a < b <= p) lie in the
 * rank-order buffer buf: returns their start; *first is the number of
 * elements before the wrap past rank p - 1, or 0 if they are one piece. */
static char *root_range(const circ_blocks *bl, int root, size_t es, char *buf, int a, int b,
                        size_t *first) {
  int p = bl->p, lo = root + a;
  size_t len = vpos(bl, root, b) - vpos(bl, root, a);
  *first = 0;
  if (lo >= p) return buf + blk_off(bl, lo - p) * es;
  if (root + b > p) {
    size_t f = bl->total - blk_off(bl, lo);
    if (f == 0) return buf; /* the blocks before the wrap are all empty */
    if (f < len) *first = f;
  }
  return buf + blk_off(bl, lo) * es;
}

/* Gather of own (this rank's block) into rootbuf at the root, which may
 * hold own at its place already. */
static int gather_core(const redcoll__call *call, const circ_blocks *bl, const char *own,
                       char *rootbuf) {
  redcoll_comm *c = call->comm;
  int p = c->size, root = call->root, skips[REDCOLL__CIRC_MAXQ + 1], rc;
  int q = redcoll__circ_skips(p, skips);
  int v = mod(c->rank - root, p);
  int head = redcoll__circ_pathhead(v, q, skips);
  int e = v != 0 ? redcoll__circ_eps(skips, head) : 0;
  size_t es = call->esize, ownb = blk_len(bl, c->rank) * es;
  char *g;

  if (head == 0) return redcoll__send(c, mod(v - 1 + root, p), own, ownb);
  if (v == 0) {
    char *mine = rootbuf + blk_off(bl, root) * es;
    if (mine != own) redcoll__copy(c, mine, own, ownb);
    for (int k = 0; k < q; k++) {
      int a = skips[k], b = skips[k + 1], from = mod(redcoll__circ_dist(skips, k) + root, p);
      size_t first, len = (vpos(bl, root, b) - vpos(bl, root, a)) * es;
      char *dst = root_range(bl, root, es, rootbuf, a, b, &first);
      if (first == 0) {
        if ((rc = redcoll__recv(c, from, dst, len)) != REDCOLL_OK) return rc;
        continue;
      }
      char *t = redcoll__scratch(c, 0, len);
      if (t == NULL) return REDCOLL_ENOMEM;
      if ((rc = redcoll__recv(c, from, t, len)) != REDCOLL_OK) return rc;
      redcoll__copy(c, dst, t, first * es);
      redcoll__copy(c, rootbuf, t + first * es, len - first * es);
    }
    return REDCOLL_OK;
  }
  /* g holds the virtual blocks [v, v + skips[head]); goff(x) = offset of
   * v + x in g. */
  size_t base = vpos(bl, root, v);
#define GOFF(x) ((vpos(bl, root, v + (x)) - base) * es)
  if ((g = redcoll__scratch(c, 0, GOFF(skips[head]))) == NULL) return REDCOLL_ENOMEM;
  if (!e) redcoll__copy(c, g, own, ownb);
  for (int k = 0; k < head; k++) {
    int from = mod(v + redcoll__circ_dist(skips, k) + root, p);
    char *dst = g + GOFF(skips[k]);
    size_t len = GOFF(skips[k + 1]) - GOFF(skips[k]);
    if (k == 0 && e)
      rc = redcoll__sendrecv(c, mod(v - 1 + root, p), own, ownb, from, dst, len);
    else
      rc = redcoll__recv(c, from, dst, len);
    if (rc != REDCOLL_OK) return rc;
  }
  rc = redcoll__send(c, mod(v - redcoll__circ_dist(skips, head) + root, p), g + GOFF(e),
                     GOFF(skips[head]) - GOFF(e));
#undef GOFF
  return rc;
}

/* Scatter of rootbuf (significant at the root only) into own; at the root
 * own may be its block in rootbuf (in place). */
static int scatter_core(const redcoll__call *call, const circ_blocks *bl, const char *rootbuf,
                        char *own) {
  redcoll_comm *c = call->comm;
  int p = c->size, root = call->root, skips[REDCOLL__CIRC_MAXQ + 1], rc;
  int q = redcoll__circ_skips(p, skips);
  int v = mod(c->rank - root, p);
  int head = redcoll__circ_pathhead(v, q, skips);
  int e = v != 0 ? redcoll__circ_eps(skips, head) : 0;
  size_t es = call->esize, ownb = blk_len(bl, c->rank) * es;
  char *g;

  if (head == 0) return redcoll__recv(c, mod(v - 1 + root, p), own, ownb);
  if (v == 0) {
    for (int k = q - 1; k >= 0; k--) {
      int a = skips[k], b = skips[k + 1], to = mod(redcoll__circ_dist(skips, k) + root, p);
      size_t first, len = (vpos(bl, root, b) - vpos(bl, root, a)) * es;
      const char *src = root_range(bl, root, es, (char *)rootbuf, a, b, &first);
      if (first > 0) {
        char *t = redcoll__scratch(c, 0, len);
        if (t == NULL) return REDCOLL_ENOMEM;
        redcoll__copy(c, t, src, first * es);
        redcoll__copy(c, t + first * es, rootbuf, len - first * es);
        src = t;
      }
      if ((rc = redcoll__send(c, to, src, len)) != REDCOLL_OK) return rc;
    }
    const char *mine = rootbuf + blk_off(bl, root) * es;
    if (mine != own) redcoll__copy(c, own, mine, ownb);
    return REDCOLL_OK;
  }
  size_t base = vpos(bl, root, v);
#define GOFF(x) ((vpos(bl, root, v + (x)) - base) * es)
  if ((g = redcoll__scratch(c, 0, GOFF(skips[head]))) == NULL) return REDCOLL_ENOMEM;
  rc = redcoll__recv(c, mod(v - redcoll__circ_dist(skips, head) + root, p), g + GOFF(e),
                     GOFF(skips[head]) - GOFF(e));
  if (rc != REDCOLL_OK) return rc;
  for (int k = head - 1; k >= 0; k--) {
    int to = mod(v + redcoll__circ_dist(skips, k) + root, p);
    const char *src = g + GOFF(skips[k]);
    size_t len = GOFF(skips[k + 1]) - GOFF(skips[k]);
    if (k == 0 && e)
      rc = redcoll__sendrecv(c, to, src, len, mod(v - 1 + root, p), own, ownb);
    else
      rc = redcoll__send(c, to, src, len);
    if (rc != REDCOLL_OK) return rc;
  }
#undef GOFF
  if (!e) redcoll__copy(c, own, g, ownb);
  return REDCOLL_OK;
}

static int gather_circulant(const redcoll__call *call) {
  return run_blocks(call, gather_core, call->sendbuf, call->recvbuf);
}

static int scatter_circulant(const redcoll__call *call) {
  return run_blocks(call, scatter_core, call->sendbuf, call->recvbuf);
}

/* ---- reduce as reduce_scatter + gather ("circulant_rsag") ---------------- */

/* The reduce of section III-G's recipe for large vectors: reduce-scatter of
 * p balanced blocks, then gather of the reduced blocks to the root.  The
 * root's block is reduced straight into its place in recvbuf; the other
 * ranks keep theirs in scratch 1 behind reduce_scatter's buffer. */
static int reduce_circulant_rsag(const redcoll__call *call) {
  circ_blocks bl;
  blocks_balanced(&bl, call);
  char *own = NULL;
  if (call->comm->rank == call->root)
    own = (char *)call->recvbuf + blk_off(&bl, call->root) * call->esize;
  int rc = rs_core(call, call->sendbuf, own, &bl, &own);
  if (rc != REDCOLL_OK) return rc;
  return gather_core(call, &bl, own, call->recvbuf);
}

/* ---- cost: q = ceil(log2 p) rounds, m the vector or block in bytes ------- */

static double bytes_of(const redcoll__cost_args *a) { return (double)a->count * (double)a->esize; }

/* Recursive doubling over the circulant; for p not a power of two some
 * rounds reduce twice. */
static double cost_allreduce(const redcoll__mach *M, const redcoll__cost_args *a) {
  int p = a->p, q = redcoll__ceil_log2(p), extra = 0;
  double m = bytes_of(a);
  if (p & (p - 1)) {
    extra = q - 2 - redcoll__trailing_zeros(p);
    if (extra < 0) extra = 0;
  }
  return q * M->a + q * m * M->b + (q + extra) * m * M->g;
}

/* Reduce-scatter then allgather of blocks of m/p: the bound of the paper. */
static double cost_allreduce_rsag(const redcoll__mach *M, const redcoll__cost_args *a) {
  int p = a->p, q = redcoll__ceil_log2(p);
  double b = redcoll__cost_blk(a->count, (size_t)p, a->esize);
  double span = (double)((1u << q) - 1);
  return 2 * q * M->a + (span + (p - 1)) * b * M->b + span * b * M->g;
}

static double cost_reduce(const redcoll__mach *M, const redcoll__cost_args *a) {
  double m = bytes_of(a);
  return redcoll__ceil_log2(a->p) * (M->a + m * M->b + m * M->g);
}

static double cost_bcast(const redcoll__mach *M, const redcoll__cost_args *a) {
  return redcoll__ceil_log2(a->p) * (M->a + bytes_of(a) * M->b);
}

static double cost_reduce_scatter(const redcoll__mach *M, const redcoll__cost_args *a) {
  int q = redcoll__ceil_log2(a->p);
  double span = (double)((1u << q) - 1);
  return q * M->a + span * bytes_of(a) * (M->b + M->g);
}

/* allgather(v), gather, scatter: p-1 blocks through q rounds. */
static double cost_gathers(const redcoll__mach *M, const redcoll__cost_args *a) {
  return redcoll__ceil_log2(a->p) * M->a + (a->p - 1) * bytes_of(a) * M->b;
}

/* ---- registry ----------------------------------------------------------- */

const redcoll__algo_entry redcoll__algos_circulant[] = {
    {REDCOLL_COLL_ALLREDUCE, REDCOLL_ALGO_CIRCULANT, allreduce_circulant, cost_allreduce,
     REDCOLL__NEEDS_COMMUTATIVE | REDCOLL__RANK_DEPENDENT},
    {REDCOLL_COLL_ALLREDUCE, REDCOLL_ALGO_CIRCULANT_RSAG, allreduce_circulant_rsag,
     cost_allreduce_rsag, REDCOLL__NEEDS_COMMUTATIVE},
    {REDCOLL_COLL_REDUCE, REDCOLL_ALGO_CIRCULANT, reduce_circulant, cost_reduce,
     REDCOLL__NEEDS_COMMUTATIVE},
    /* Not modelled: AUTO never picks it for reduce. */
    {REDCOLL_COLL_REDUCE, REDCOLL_ALGO_CIRCULANT_RSAG, reduce_circulant_rsag, NULL,
     REDCOLL__NEEDS_COMMUTATIVE},
    {REDCOLL_COLL_REDUCE_SCATTER_BLOCK, REDCOLL_ALGO_CIRCULANT, reduce_scatter_circulant,
     cost_reduce_scatter, REDCOLL__NEEDS_COMMUTATIVE},
    {REDCOLL_COLL_REDUCE_SCATTER, REDCOLL_ALGO_CIRCULANT, reduce_scatter_circulant,
     cost_reduce_scatter, REDCOLL__NEEDS_COMMUTATIVE},
    {REDCOLL_COLL_ALLGATHER, REDCOLL_ALGO_CIRCULANT, allgather_circulant, cost_gathers, 0},
    {REDCOLL_COLL_ALLGATHERV, REDCOLL_ALGO_CIRCULANT, allgather_circulant, cost_gathers, 0},
    {REDCOLL_COLL_BCAST, REDCOLL_ALGO_CIRCULANT, bcast_circulant, cost_bcast, 0},
    {REDCOLL_COLL_GATHER, REDCOLL_ALGO_CIRCULANT, gather_circulant, cost_gathers, 0},
    {REDCOLL_COLL_SCATTER, REDCOLL_ALGO_CIRCULANT, scatter_circulant, cost_gathers, 0},
    {REDCOLL_COLL_COUNT, REDCOLL_ALGO_AUTO, NULL, NULL, 0},
};
