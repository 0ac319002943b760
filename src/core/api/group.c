/*
 * Communicators made from communicators: dup, split and create_group.  A
 * new communicator shares its parent's transport object (the endpoint)
 * and has channels of its own there, so that its messages never meet
 * those of another communicator; ranks are translated to the transport's
 * through its map.
 *
 * Channel bases are multiples of 4 (a communicator uses base .. base + 3:
 * collectives, point-to-point, group agreement).  A child's base is drawn
 * from a 64-bit mix of its parent's base, the parent's count of children
 * and a salt, so every member computes the same one without asking.  Each
 * rank reserves it on its endpoint, where bases in use are kept; the
 * members then agree (an allgather of split's (color, key) carries the
 * answer; create_group allreduces it over the members) and draw again
 * with the next salt if any member has the base in use.  So no process
 * ever has two live communicators on one channel, whatever other threads
 * create meanwhile.  The groups of one split draw with their colors mixed
 * in, so that an abort of one (a cancel of its channels on the whole
 * transport) does not reach another; two groups that share no process
 * could still draw one base with a chance of about 2^-62 per pair.
 *
 * Example: world of 6, split by color r % 2 and key -r: colors 0 = {0,2,4}
 * and 1 = {1,3,5}; ordered by key, the even group is 4, 2, 0 (new ranks
 * 0, 1, 2) with map {4, 2, 0}: new rank 1 sending to new rank 2 sends to
 * transport rank 0 on the group's channel.
 */
#include <stdlib.h>

#include "internal.h"

#define MAX_SALT 64

/* The candidate base of child k of parent base `base`, salt `salt`. */
static uint64_t draw_base(uint64_t base, uint64_t k, uint64_t salt) {
  uint64_t x = redcoll__mix64(base ^ 0x9e3779b97f4a7c15ULL * (k + 1) ^ salt << 48);
  x &= ~(uint64_t)(REDCOLL__CH_SPAN - 1);
  return x == 0 ? REDCOLL__CH_SPAN : x;
}

static int check_parent(redcoll_comm *c, redcoll_comm **out) {
  if (c == NULL || out == NULL) return REDCOLL_EINVAL;
  *out = NULL;
  int rc = redcoll_comm_error(c);
  if (rc != REDCOLL_OK) return rc;
  if (!(c->ep->caps & REDCOLL_TRANSPORT_CAP_CHANNELS)) {
    redcoll__log(0, "rank %d: the transport '%s' has no channels: it carries one communicator "
                    "(dup, split and create_group need REDCOLL_TRANSPORT_CAP_CHANNELS)",
                 c->rank, c->info.name[0] ? c->info.name : "?");
    return REDCOLL_ENOTSUP;
  }
  return REDCOLL_OK;
}

/* Members of `color` in the (color, key, ok) table of p rows, ordered by
 * key, then parent rank; their count. */
typedef struct {
  int key, rank;
} member;

static int by_key(const void *a, const void *b) {
  const member *x = a, *y = b;
  if (x->key != y->key) return x->key < y->key ? -1 : 1;
  return (x->rank > y->rank) - (x->rank < y->rank);
}

int redcoll__split_members(const int32_t *table, int p, int color, int *ranks) {
  member *m = malloc((size_t)p * sizeof *m);
  if (m == NULL) return -1;
  int n = 0;
  for (int i = 0; i < p; i++)
    if (table[3 * i] == color) m[n++] = (member){table[3 * i + 1], i};
  qsort(m, (size_t)n, sizeof *m, by_key);
  for (int i = 0; i < n; i++) ranks[i] = m[i].rank;
  free(m);
  return n;
}

/* Agrees on a base for the split: every rank reserves the candidate (if
 * it takes part) and the allgather of (color, key, ok) tells whether all
 * could.  Fills table (3 p entries) and *base. */
static int agree_split(redcoll_comm *c, int color, int key, int32_t *table, uint64_t *base) {
  uint64_t k = c->children++;
  for (uint64_t salt = 0; salt < MAX_SALT; salt++) {
    uint64_t ch = draw_base(c->channel ^ (uint64_t)(uint32_t)color << 20, k, salt);
    int ok = color == REDCOLL_UNDEFINED ? 1 : redcoll__chan_reserve(c, ch);
    int32_t mine[3] = {color, key, ok};
    int rc = redcoll_allgather(c, mine, table, 3, REDCOLL_INT32);
    int all = 1;
    for (int i = 0; rc == REDCOLL_OK && i < c->size; i++) all &= table[3 * i + 2] != 0;
    if (rc == REDCOLL_OK && all) {
      *base = ch;
      return REDCOLL_OK;
    }
    if (ok && color != REDCOLL_UNDEFINED) redcoll__chan_release(c->ep, ch);
    if (rc != REDCOLL_OK) return rc;
  }
  return REDCOLL_ENOMEM; /* MAX_SALT bases in use: not in this universe */
}

REDCOLL_API int redcoll_comm_split(redcoll_comm *c, int color, int key, redcoll_comm **out) {
  int rc = check_parent(c, out);
  if (rc != REDCOLL_OK) return rc;
  if (color < 0 && color != REDCOLL_UNDEFINED) return REDCOLL_EINVAL;
  int p = c->size;
  int32_t *table = malloc((size_t)p * 3 * sizeof *table);
  int *ranks = malloc((size_t)p * sizeof *ranks);
  uint64_t base = 0;
  rc = table && ranks ? REDCOLL_OK : REDCOLL_ENOMEM;
  /* Every rank takes part in the agreement even without memory, so that
   * none waits for it: it says no. */
  if (rc == REDCOLL_OK) rc = agree_split(c, color, key, table, &base);
  else rc = redcoll__fail(c, rc);
  if (rc != REDCOLL_OK || color == REDCOLL_UNDEFINED) goto out;
  int n = redcoll__split_members(table, p, color, ranks);
  int me = -1;
  for (int i = 0; i < n; i++)
    if (ranks[i] == c->rank) me = i;
  if (n < 0 || me < 0) {
    rc = REDCOLL_ENOMEM;
    redcoll__chan_release(c->ep, base);
    goto out;
  }
  for (int i = 0; i < n; i++) ranks[i] = redcoll__peer(c, ranks[i]);
  rc = redcoll__comm_derive(c, me, n, ranks, base, out);
  if (rc == REDCOLL_OK) ranks = NULL; /* the child's map now */
  else redcoll__chan_release(c->ep, base);
out:
  free(table);
  free(ranks);
  return rc;
}

REDCOLL_API int redcoll_comm_dup(redcoll_comm *c, redcoll_comm **out) {
  return redcoll_comm_split(c, 0, c != NULL ? c->rank : 0, out);
}

/* Frees a communicator that owns no channel (create_group's agreement). */
static void discard(redcoll_comm *t) {
  redcoll__hier_free(t);
  __atomic_sub_fetch(&t->ep->refs, 1, __ATOMIC_ACQ_REL);
  free(t->map);
  free(t->scratch[0]);
  free(t->scratch[1]);
  free(t);
}

/* FNV-1a of the member list: two groups of one parent start apart. */
static uint64_t list_hash(const int *ranks, int n) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (int i = 0; i < n; i++) {
    h ^= (uint64_t)(uint32_t)ranks[i];
    h *= 0x100000001b3ULL;
  }
  return h;
}

REDCOLL_API int redcoll_comm_create_group(redcoll_comm *c, const int *ranks, int n,
                                          redcoll_comm **out) {
  int rc = check_parent(c, out);
  if (rc != REDCOLL_OK) return rc;
  if (ranks == NULL || n < 1 || n > c->size) return REDCOLL_EINVAL;
  int me = -1;
  for (int i = 0; i < n; i++) {
    if (ranks[i] < 0 || ranks[i] >= c->size) return REDCOLL_EINVAL;
    for (int j = 0; j < i; j++)
      if (ranks[j] == ranks[i]) return REDCOLL_EINVAL;
    if (ranks[i] == c->rank) me = i;
  }
  if (me < 0) return REDCOLL_EINVAL; /* only members call */
  int *map = malloc((size_t)n * sizeof *map);
  if (map == NULL) return REDCOLL_ENOMEM;
  for (int i = 0; i < n; i++) map[i] = redcoll__peer(c, ranks[i]);
  /* The members agree on the parent's group channel, in a communicator
   * that becomes the new one once they have. */
  redcoll_comm *t;
  rc = redcoll__comm_derive(c, me, n, map, c->channel + REDCOLL__CH_GROUP, &t);
  if (rc != REDCOLL_OK) {
    free(map);
    return rc;
  }
  t->owns_channels = 0;
  uint64_t h = list_hash(ranks, n);
  for (uint64_t salt = 0;; salt++) {
    uint64_t ch = draw_base(c->channel ^ h, 0, salt);
    int ok = salt < MAX_SALT && redcoll__chan_reserve(c, ch), all = 0;
    rc = redcoll_allreduce(t, &ok, &all, 1, REDCOLL_INT32, REDCOLL_MIN);
    if (rc == REDCOLL_OK && all) {
      t->channel = ch;
      t->owns_channels = 1;
      t->seq = 0;
      /* Two-level views made during the agreement are on its channel:
       * the next collective makes them again on the new one. */
      redcoll__hier_free(t);
      *out = t;
      return REDCOLL_OK;
    }
    if (ok) redcoll__chan_release(c->ep, ch);
    if (rc == REDCOLL_OK && salt >= MAX_SALT) rc = REDCOLL_ENOMEM;
    if (rc != REDCOLL_OK) break;
  }
  discard(t);
  return rc;
}
