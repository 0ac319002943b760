/* Channels: every message carries its channel, and a rank matches what a
 * peer sends per (peer, channel).  A message whose receive is not posted
 * yet is kept, whole, in its channel's queue, so that one channel waiting
 * unreceived never holds up another on the same connection; the bytes kept
 * per peer are bounded (REDCOLL__TCP_UNEXPECTED_MAX by default): past the
 * bound its connection stops reading until receives take them (recv.c).
 *
 * Channel groups (REDCOLL_TRANSPORT_CHANNEL_GROUP channels, one
 * communicator) can be cancelled (a rank gave up on the communicator) and
 * closed (a rank destroyed it): those records live here too.  The core never
 * uses a closed group again on one transport object, so a record of a
 * group closed here or by a peer never meets a later communicator. */
#include <stdlib.h>

#include "chan.h"
#include "wait.h"

redcoll__tcp_pchan *redcoll__tcp_pchan_get(redcoll__tcp *t, int q, uint64_t chan, int make) {
  redcoll__tcp_peer *p = &t->peers[q];
  for (redcoll__tcp_pchan *pc = p->chans; pc != NULL; pc = pc->next)
    if (pc->chan == chan) return pc;
  if (!make) return NULL;
  redcoll__tcp_pchan *pc = calloc(1, sizeof *pc);
  if (pc == NULL) return NULL;
  pc->chan = chan;
  pc->next = p->chans;
  p->chans = pc;
  return pc;
}

void redcoll__tcp_pchan_tidy(redcoll__tcp *t, int q, redcoll__tcp_pchan *pc) {
  if (pc == NULL || pc->head != NULL || pc->rx != NULL) return;
  redcoll__tcp_peer *p = &t->peers[q];
  /* The connection may be filling its payload: it holds the queue's tail. */
  if (p->in != NULL && p->in->have_frame && p->in->fr.chan == pc->chan) return;
  for (redcoll__tcp_pchan **pp = &p->chans; *pp != NULL; pp = &(*pp)->next)
    if (*pp == pc) {
      *pp = pc->next;
      free(pc);
      return;
    }
}

void redcoll__tcp_pchan_free_all(redcoll__tcp *t, int q) {
  redcoll__tcp_peer *p = &t->peers[q];
  while (p->chans != NULL) {
    redcoll__tcp_pchan *pc = p->chans;
    p->chans = pc->next;
    while (pc->head != NULL) {
      redcoll__tcp_umsg *m = pc->head;
      pc->head = m->next;
      free(m);
    }
    free(pc);
  }
  p->unexpected = 0;
}

/* A buffer for a kept message of len bytes: the smallest spare that holds
 * it and is at most twice its size (a 64 KiB message does not take the
 * 16 MiB spare the next large one needs), else fresh memory. */
static redcoll__tcp_umsg *umsg_alloc(redcoll__tcp *t, size_t len) {
  int best = -1;
  for (int i = 0; len >= REDCOLL__TCP_SPARE_MIN && i < REDCOLL__TCP_SPARES; i++)
    if (t->spare[i] != NULL && t->spare[i]->cap >= len && t->spare[i]->cap / 2 <= len &&
        (best < 0 || t->spare[i]->cap < t->spare[best]->cap))
      best = i;
  if (best >= 0) {
    redcoll__tcp_umsg *m = t->spare[best];
    t->spare[best] = NULL;
    return m;
  }
  redcoll__tcp_umsg *m = malloc(sizeof *m + len);
  if (m != NULL) m->cap = len;
  return m;
}

size_t redcoll__tcp_spares_held(redcoll__tcp_umsg *const *spare, int n) {
  size_t held = 0;
  for (int i = 0; i < n; i++) held += spare[i] != NULL ? spare[i]->cap : 0;
  return held;
}

int redcoll__tcp_spare_slot(redcoll__tcp_umsg *const *spare, int n, size_t cap) {
  if (cap < REDCOLL__TCP_SPARE_MIN || cap > REDCOLL__TCP_SPARE_MAX) return -1;
  size_t held = redcoll__tcp_spares_held(spare, n);
  int at = -1, small = -1;
  for (int i = 0; i < n; i++) {
    if (spare[i] == NULL) {
      if (at < 0) at = i;
    } else if (small < 0 || spare[i]->cap < spare[small]->cap) {
      small = i;
    }
  }
  if (at >= 0 && held + cap <= REDCOLL__TCP_SPARE_BYTES) return at;
  /* In place of the smallest spare, if that is smaller and the sum fits. */
  if (small >= 0 && spare[small]->cap < cap &&
      held - spare[small]->cap + cap <= REDCOLL__TCP_SPARE_BYTES)
    return small;
  return -1;
}

void redcoll__tcp_umsg_free(redcoll__tcp *t, redcoll__tcp_umsg *m) {
  int at = redcoll__tcp_spare_slot(t->spare, REDCOLL__TCP_SPARES, m->cap);
  if (at < 0) {
    free(m);
    return;
  }
  free(t->spare[at]); /* (NULL, or the smaller spare m replaces) */
  t->spare[at] = m;
}

void redcoll__tcp_spares_free(redcoll__tcp *t) {
  for (int i = 0; i < REDCOLL__TCP_SPARES; i++) {
    free(t->spare[i]);
    t->spare[i] = NULL;
  }
}

void redcoll__tcp_recv_drop_pre(redcoll__tcp *t, redcoll__tcp_recv *r) {
  if (r->pre == NULL) return;
  redcoll__tcp_umsg_free(t, r->pre);
  r->pre = NULL;
}

redcoll__tcp_umsg *redcoll__tcp_umsg_push(redcoll__tcp *t, int q, redcoll__tcp_pchan *pc,
                                          uint64_t tag, size_t len) {
  redcoll__tcp_umsg *m = umsg_alloc(t, len);
  if (m == NULL) return NULL;
  m->next = NULL;
  m->tag = tag;
  m->len = len;
  m->got = 0;
  if (pc->tail != NULL) pc->tail->next = m;
  else pc->head = m;
  pc->tail = m;
  t->peers[q].unexpected += len + REDCOLL__TCP_UMSG_COST;
  return m;
}

int redcoll__tcp_umsg_deliver(redcoll__tcp *t, int q, redcoll__tcp_pchan *pc) {
  redcoll__tcp_umsg *m = pc->head;
  redcoll__tcp_recv *r = pc->rx;
  /* (A matched receive has its message: one that took over a message
   * while it arrived may still be copying what came before, with the
   * channel's next messages kept behind it.) */
  if (m == NULL || r == NULL || r->matched || m->got < m->len) return 0;
  if (t->ext && m->tag == r->tag && m->len == r->len && m->len - r->got > REDCOLL__TCP_EXT_COPY) {
    /* On the program's loop: a slice now, the next in the next turn. */
    memcpy((unsigned char *)r->buf + r->got, m->data + r->got, REDCOLL__TCP_EXT_COPY);
    r->got += REDCOLL__TCP_EXT_COPY;
    t->kept_copied += REDCOLL__TCP_EXT_COPY;
    r->copying = 1;
    t->copy_hint = 1;
    redcoll__tcp_ext_soon(t);
    return 0;
  }
  pc->head = m->next;
  if (pc->head == NULL) pc->tail = NULL;
  t->peers[q].unexpected -= m->len + REDCOLL__TCP_UMSG_COST;
  pc->rx = NULL;
  r->done = 1;
  if (m->tag != r->tag || m->len != r->len) {
    redcoll__log(0,
                 "tcp rank %d: message from rank %d on channel %llu has tag %#llx and %zu bytes, "
                 "the receive expects tag %#llx and %zu bytes",
                 t->rank, q, (unsigned long long)pc->chan, (unsigned long long)m->tag, m->len,
                 (unsigned long long)r->tag, r->len);
    r->status = REDCOLL_EMISMATCH;
    redcoll__tcp_chan_broken(t, pc->chan);
  } else {
    if (m->len > r->got) memcpy((unsigned char *)r->buf + r->got, m->data + r->got, m->len - r->got);
    t->kept_copied += m->len - r->got;
    r->got = m->len;
    r->copying = 0;
    r->status = REDCOLL_OK;
  }
  redcoll__tcp_umsg_free(t, m);
  return 1;
}

/* The bucket of group g in t's index of records (a multiplicative hash of
 * the group, whose low bits are always 0). */
static size_t bucket_of(const redcoll__tcp *t, uint64_t g) {
  return (size_t)((g * 0x9e3779b97f4a7c15ull) >> 32) & (t->nbuckets - 1);
}

/* Doubles the index (it holds twice as many records as buckets); 0 if
 * there is no memory for it, and the chains then just grow longer. */
static int index_grow(redcoll__tcp *t) {
  size_t n = t->nbuckets ? 2 * t->nbuckets : 64;
  redcoll__tcp_group **b = calloc(n, sizeof *b);
  if (b == NULL) return 0;
  free(t->buckets);
  t->buckets = b;
  t->nbuckets = n;
  for (redcoll__tcp_group *gr = t->groups; gr != NULL; gr = gr->next) {
    size_t k = bucket_of(t, gr->group);
    gr->hnext = b[k];
    b[k] = gr;
  }
  return 1;
}

redcoll__tcp_group *redcoll__tcp_group_get(redcoll__tcp *t, uint64_t g, int make) {
  redcoll__tcp_group *gr = t->nbuckets > 0 ? t->buckets[bucket_of(t, g)] : t->groups;
  for (; gr != NULL; gr = t->nbuckets > 0 ? gr->hnext : gr->next)
    if (gr->group == g) return gr;
  if (!make || (gr = calloc(1, sizeof *gr)) == NULL) return NULL;
  gr->group = g;
  gr->from = -1;
  gr->next = t->groups;
  t->groups = gr;
  if (++t->ngroups > 2 * t->nbuckets && index_grow(t)) return gr; /* indexed with the rest */
  if (t->nbuckets > 0) {
    size_t k = bucket_of(t, g);
    gr->hnext = t->buckets[k];
    t->buckets[k] = gr;
  }
  return gr;
}

void redcoll__tcp_groups_free(redcoll__tcp *t) {
  while (t->groups != NULL) {
    redcoll__tcp_group *g = t->groups;
    t->groups = g->next;
    free(g->closed_by);
    free(g);
  }
  free(t->buckets);
  t->buckets = NULL;
  t->nbuckets = t->ngroups = 0;
}

int redcoll__tcp_chan_status(redcoll__tcp *t, uint64_t chan) {
  const redcoll__tcp_group *gr = redcoll__tcp_group_get(t, REDCOLL__TCP_GROUP_OF(chan), 0);
  if (gr == NULL) return REDCOLL_OK;
  return gr->cancelled ? gr->cancelled : gr->broken;
}

/* Peer q's message with tag mtag on chan conflicts with the receive with
 * tag rtag that this rank posted there: the group breaks. */
static void conflict(redcoll__tcp *t, int q, uint64_t chan, uint64_t mtag, uint64_t rtag) {
  redcoll__log(0, "tcp rank %d: rank %d sent tag %#llx on channel %llu, and this rank receives "
                  "there with tag %#llx: the same collective (#%llu), another call "
                  "(collective, count, dtype, op or root)", t->rank, q,
               (unsigned long long)mtag, (unsigned long long)chan, (unsigned long long)rtag,
               (unsigned long long)(rtag >> 40));
  redcoll__tcp_chan_broken(t, chan);
}

int redcoll__tcp_chan_enter(redcoll__tcp *t, uint64_t chan, uint64_t tag, uint64_t coll) {
  redcoll__tcp_group *gr = redcoll__tcp_group_get(t, REDCOLL__TCP_GROUP_OF(chan), 1);
  if (gr == NULL) return REDCOLL_OK; /* no check without memory for it */
  if (!redcoll__tagrec_enter(&gr->rec, chan, tag, coll)) return REDCOLL_OK;
  for (int q = 0; q < t->size; q++) {
    if (q == t->rank || t->peers[q].unexpected == 0) continue;
    const redcoll__tcp_pchan *pc = redcoll__tcp_pchan_get(t, q, chan, 0);
    for (const redcoll__tcp_umsg *m = pc != NULL ? pc->head : NULL; m != NULL; m = m->next)
      if (redcoll_transport_tags_conflict(m->tag, tag)) {
        conflict(t, q, chan, m->tag, tag);
        return REDCOLL_EMISMATCH;
      }
  }
  return REDCOLL_OK;
}

void redcoll__tcp_chan_sent(redcoll__tcp *t, uint64_t chan, uint64_t coll) {
  redcoll__tcp_group *gr = redcoll__tcp_group_get(t, REDCOLL__TCP_GROUP_OF(chan), 0);
  if (gr != NULL) redcoll__tagrec_sent(&gr->rec, chan, coll);
}

int redcoll__tcp_chan_kept(redcoll__tcp *t, int q, uint64_t chan, uint64_t tag) {
  const redcoll__tcp_group *gr = redcoll__tcp_group_get(t, REDCOLL__TCP_GROUP_OF(chan), 0);
  if (gr == NULL || gr->broken || gr->cancelled || !redcoll__tagrec_kept(&gr->rec, chan, tag))
    return 0;
  conflict(t, q, chan, tag, gr->rec.tag);
  return 1;
}

void redcoll__tcp_chan_broken(redcoll__tcp *t, uint64_t chan) {
  redcoll__tcp_group *gr = redcoll__tcp_group_get(t, REDCOLL__TCP_GROUP_OF(chan), 1);
  if (gr != NULL && gr->broken == REDCOLL_OK) gr->broken = REDCOLL_EMISMATCH;
}

void redcoll__tcp_peer_closed(redcoll__tcp *t, int q, uint64_t g) {
  redcoll__tcp_group *gr = redcoll__tcp_group_get(t, g, 1);
  if (gr == NULL) return; /* its waiters find out at their timeout */
  if (gr->closed_by == NULL && (gr->closed_by = calloc(((size_t)t->size + 7) / 8, 1)) == NULL)
    return;
  gr->closed_by[q / 8] |= (unsigned char)(1u << (q % 8));
}

int redcoll__tcp_peer_has_closed(redcoll__tcp *t, int q, uint64_t g) {
  const redcoll__tcp_group *gr = redcoll__tcp_group_get(t, g, 0);
  return gr != NULL && gr->closed_by != NULL && (gr->closed_by[q / 8] >> (q % 8) & 1);
}
