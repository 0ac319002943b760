/*
 * Bruck's alltoall ("bruck"; Bruck, Ho, Kipnis, Upfal and Weathersby,
 * "Efficient algorithms for all-to-all communications in multiport
 * message-passing systems", IEEE TPDS 1997, radix 2): the personalised
 * exchange for small blocks, in ceil(log2 p) rounds for every p.
 *
 * (1) Rank r rotates its p blocks so that slot i holds the block for rank
 * r + i (mod p).  (2) In step k = 0 .. q-1 (q = ceil(log2 p)) every slot
 * i with bit k set goes, packed into one message, to rank r + 2^k, and the
 * same slots arrive from rank r - 2^k: a block moves i ranks in all, to its
 * destination.  (3) Slot i then holds the block from rank r - i, so
 * block j of the result is slot (r - j) mod p: a swap of pairs, in place.
 * recvbuf is the working array throughout.  With B = count e bytes and
 * c_k = the slots i < p with bit k set (about p/2):
 *   sum over k of (alpha + c_k B beta) ~ q alpha + q p/2 B beta
 * against (p-1)(alpha + B beta) for pairwise exchange: fewer start-ups,
 * about q/2 times the volume, so AUTO takes it for small blocks.  Every
 * step also packs and unpacks c_k B bytes (local copies).
 *
 * Restrictions: alltoall only (a v-variant would have to send the counts
 * first); no operator.  Scratch: two packing buffers of max_k c_k blocks.
 * In place (REDCOLL_IN_PLACE): the rotation of step 1 is done in recvbuf by
 * three block reversals.
 *
 * Example, p = 5, rank 0: slots hold blocks for 0 1 2 3 4; step 0 sends
 * slots 1, 3 to rank 1 (and gets rank 4's slots 1, 3); step 1 sends slots
 * 2, 3 to rank 2; step 2 sends slot 4 to rank 4.  Slot 3, bound for rank 3
 * from rank 0, went 0 -> 1 -> 3.
 */
#include "algo/alltoall/alltoall.h"
#include "select/cost.h"

static void swap_bytes(char *a, char *b, size_t n) {
  for (size_t i = 0; i < n; i++) {
    char t = a[i];
    a[i] = b[i];
    b[i] = t;
  }
}

/* Reverses the order of blocks lo .. hi-1 of w (blk bytes each). */
static void reverse_blocks(char *w, size_t blk, int lo, int hi) {
  for (hi--; lo < hi; lo++, hi--) swap_bytes(w + (size_t)lo * blk, w + (size_t)hi * blk, blk);
}

static int alltoall_bruck(const redcoll__call *call) {
  redcoll_comm *c = call->comm;
  int p = c->size, r = c->rank, rc;
  size_t blk = call->count * call->esize;
  char *w = call->recvbuf;
  const char *in = call->sendbuf;
  size_t most = (size_t)redcoll__bruck_max_moving(p) * blk;
  char *spack = redcoll__scratch(c, 0, 2 * most), *rpack = spack + most;
  if (spack == NULL) return REDCOLL_ENOMEM;
  /* (1) slot i = block r + i */
  if (call->in_place) {
    reverse_blocks(w, blk, 0, r);
    reverse_blocks(w, blk, r, p);
    reverse_blocks(w, blk, 0, p);
  } else {
    for (int i = 0; i < p; i++) redcoll__copy(c, w + (size_t)i * blk, in + (size_t)((r + i) % p) * blk, blk);
  }
  /* (2) */
  for (int k = 0; (1 << k) < p; k++) {
    int d = 1 << k;
    size_t len = (size_t)redcoll__bruck_moving(p, k) * blk, o = 0;
    for (int i = d; i < p; i++)
      if (i & d) redcoll__copy(c, spack + o, w + (size_t)i * blk, blk), o += blk;
    rc = redcoll__sendrecv(c, (r + d) % p, spack, len, (r - d + p) % p, rpack, len);
    if (rc != REDCOLL_OK) return rc;
    o = 0;
    for (int i = d; i < p; i++)
      if (i & d) redcoll__copy(c, w + (size_t)i * blk, rpack + o, blk), o += blk;
  }
  /* (3) block j = slot (r - j) mod p */
  for (int j = 0; j < p; j++) {
    int s = redcoll__bruck_slot_from(p, r, j);
    if (j < s) swap_bytes(w + (size_t)j * blk, w + (size_t)s * blk, blk);
  }
  return REDCOLL_OK;
}

static double cost_bruck(const redcoll__mach *M, const redcoll__cost_args *a) {
  double B = (double)a->count * (double)a->esize, t = 0;
  for (int k = 0; (1 << k) < a->p; k++) t += redcoll__cost_rnd(M, redcoll__bruck_moving(a->p, k) * B, 0);
  return t;
}

const redcoll__algo_entry redcoll__algos_bruck[] = {
    {REDCOLL_COLL_ALLTOALL, REDCOLL_ALGO_BRUCK, alltoall_bruck, cost_bruck, 0},
    {REDCOLL_COLL_COUNT, REDCOLL_ALGO_AUTO, NULL, NULL, 0},
};
