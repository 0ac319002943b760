/* Frames between the queues and the calls (progress.h). */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>

#include "progress.h"

#define FRAME ((size_t)sizeof(shm_frame))

int redcoll__shm_group_in(const uint64_t *v, size_t n, uint64_t group) {
  for (size_t i = 0; i < n; i++)
    if (v[i] == group) return 1;
  return 0;
}

int redcoll__shm_group_add(uint64_t **v, size_t *n, uint64_t group) {
  if (redcoll__shm_group_in(*v, *n, group)) return REDCOLL_OK;
  uint64_t *g = realloc(*v, (*n + 1) * sizeof *g);
  if (g == NULL) return REDCOLL_ENOMEM;
  g[(*n)++] = group;
  *v = g;
  return REDCOLL_OK;
}

static void ring(shm_impl *t, int r) { redcoll__shm_bell_ring(&t->ranks[r].bell); }

static void finish(shm_op *op, int status) {
  op->done = 1;
  op->status = status;
}

/* ---- ack slots of large sends ----
 * A slot's word is a generation (high 24 bits) and a state (low 8); the
 * frame carries the generation with the slot's index, so that a receiver
 * that finishes a copy after the sender withdrew the send, and the slot
 * went to a later send, cannot touch the later one. */

#define ACK_WORD(gen, state) (((uint32_t)(gen) << 8) | (uint32_t)(state))

static uint32_t *ack_of(shm_impl *t, int rank, uint32_t fslot) {
  return &t->ranks[rank].acks[fslot & 0xff];
}

/* Moves the sender's slot of frame slot fslot from state `from` to `to`;
 * 0 if it is not in `from` (the sender withdrew the send). */
static int ack_move(shm_impl *t, int sender, uint32_t fslot, uint32_t from, uint32_t to) {
  uint32_t want = ACK_WORD(fslot >> 8, from);
  if (!__atomic_compare_exchange_n(ack_of(t, sender, fslot), &want, ACK_WORD(fslot >> 8, to), 0,
                                   __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
    return 0;
  if (to != ACK_BUSY) ring(t, sender);
  return 1;
}

/* Ends a large message the receiver will not copy (mismatch, closed). */
static void ack_refuse(shm_impl *t, int sender, uint32_t fslot, uint32_t state) {
  if (ack_move(t, sender, fslot, ACK_PENDING, ACK_BUSY))
    ack_move(t, sender, fslot, ACK_BUSY, state);
}

static void slot_free(shm_impl *t, shm_op *op) {
  if (op->slot < 0) return;
  t->acks_used &= ~((uint64_t)1 << (op->slot & 0xff));
  op->slot = -1;
}

void redcoll__shm_check_ack(shm_impl *t, shm_op *op) {
  if (op->done || op->kind != FRAME_CMA || !op->framed) return;
  uint32_t s = __atomic_load_n(ack_of(t, t->rank, (uint32_t)op->slot), __ATOMIC_ACQUIRE) & 0xff;
  if (s == ACK_PENDING || s == ACK_BUSY) return;
  slot_free(t, op);
  finish(op, s == ACK_OK ? REDCOLL_OK : s == ACK_MISMATCH ? REDCOLL_EMISMATCH : REDCOLL_ETRANSPORT);
}

/* Copies a large message from sender s into op's buffer. */
static void cma_receive(shm_impl *t, int s, const shm_frame *f, shm_op *op) {
  if (!ack_move(t, s, f->slot, ACK_PENDING, ACK_BUSY)) {
    finish(op, REDCOLL_ETRANSPORT); /* the sender gave up on it */
    return;
  }
  int rc = redcoll__shm_copy_from(t->ranks[s].pid, f->addr, op->buf, (size_t)f->len);
  if (rc != REDCOLL_OK)
    redcoll__log(0, "shm rank %d: reading %llu bytes from rank %d's memory failed: %s",
                 REDCOLL__SHM_WR(t, t->rank), (unsigned long long)f->len, REDCOLL__SHM_WR(t, s), strerror(errno));
  if (!ack_move(t, s, f->slot, ACK_BUSY, rc == REDCOLL_OK ? ACK_OK : ACK_CANCELLED)) {
    /* Withdrawn during the copy: what was read may not be the message. */
    redcoll__log(0, "shm rank %d: rank %d withdrew its message during the copy",
                 REDCOLL__SHM_WR(t, t->rank), REDCOLL__SHM_WR(t, s));
    rc = REDCOLL_ETRANSPORT;
  }
  finish(op, rc);
}

/* ---- receiving ---- */

static int mismatched(const shm_frame *f, const shm_op *op) {
  return f->tag != op->tag || f->len != op->len;
}

static void log_mismatch(shm_impl *t, int s, const shm_frame *f, const shm_op *op) {
  redcoll__log(0, "shm rank %d: the next message from rank %d has tag %llx and %llu bytes, the "
                  "receive expects tag %llx and %zu bytes", REDCOLL__SHM_WR(t, t->rank), REDCOLL__SHM_WR(t, s),
               (unsigned long long)f->tag,
               (unsigned long long)f->len, (unsigned long long)op->tag, op->len);
}

/* Starts reading the payload of frame f into dst (NULL: dropped). */
static void read_into(shm_peer *ps, unsigned char *dst, shm_op *op, shm_unexp *u) {
  ps->reading = 1;
  ps->in_left = (size_t)ps->in_f.len;
  ps->in_dst = dst;
  ps->in_op = op;
  ps->in_unexp = u;
}

/* Message f from s meets receive op. */
static void match(shm_impl *t, int s, shm_peer *ps, const shm_frame *f, shm_op *op) {
  if (mismatched(f, op)) {
    log_mismatch(t, s, f, op);
    finish(op, REDCOLL_EMISMATCH);
    if (f->kind == FRAME_CMA) ack_refuse(t, s, f->slot, ACK_MISMATCH);
    if (f->kind == FRAME_INLINE) read_into(ps, NULL, NULL, NULL);
    return;
  }
  if (f->kind == FRAME_CMA) cma_receive(t, s, f, op);
  else read_into(ps, op->buf, op, NULL);
}

static void unlink_posted(shm_peer *ps, shm_op *op) {
  for (shm_op **l = &ps->posted; *l != NULL; l = &(*l)->next)
    if (*l == op) {
      *l = op->next;
      op->next = NULL;
      return;
    }
}

/* Rank s's message with tag ftag on channel chan and this rank's receive
 * there with tag rtag say the same collective number and another call. */
static void log_conflict(shm_impl *t, int s, uint64_t chan, uint64_t ftag, uint64_t rtag) {
  redcoll__log(0, "shm rank %d: rank %d sent tag %#llx on channel %llu, and this rank receives "
                  "there with tag %#llx: the same collective (#%llu), another call "
                  "(collective, count, dtype, op or root)", REDCOLL__SHM_WR(t, t->rank),
               REDCOLL__SHM_WR(t, s), (unsigned long long)ftag, (unsigned long long)chan,
               (unsigned long long)rtag, (unsigned long long)(rtag >> 40));
}

/* Frame f from s is kept: if it conflicts with the last receive posted
 * inside a collective on its channel, every receive posted there fails
 * with REDCOLL_EMISMATCH (the ranks disagree where their messages may
 * never meet), and one posted later (the collective may be between two
 * receives) looks at the kept messages again and finds f. */
static void check_kept(shm_impl *t, int s, const shm_frame *f) {
  if (!redcoll__tagrec_kept(&t->rec, f->channel, f->tag)) return;
  log_conflict(t, s, f->channel, f->tag, t->rec.tag);
  for (int q = 0; q < t->size; q++) {
    if (q == t->rank) continue;
    shm_peer *pq = &t->peers[q];
    for (shm_op *op = pq->posted, *next; op != NULL; op = next) {
      next = op->next;
      if (op->channel != f->channel) continue;
      unlink_posted(pq, op);
      finish(op, REDCOLL_EMISMATCH);
    }
  }
  t->rec.set = 0;
}

/* A frame has been read from s. */
static void dispatch(shm_impl *t, int s, shm_peer *ps) {
  const shm_frame *f = &ps->in_f;
  uint64_t group = REDCOLL__SHM_GROUP(f->channel);
  if (f->kind == FRAME_CLOSE) {
    redcoll__shm_group_add(&ps->closed, &ps->nclosed, group);
    for (shm_op *op = ps->posted, *next; op != NULL; op = next) {
      next = op->next;
      if (REDCOLL__SHM_GROUP(op->channel) == group) {
        unlink_posted(ps, op);
        finish(op, REDCOLL_ETRANSPORT);
      }
    }
    return;
  }
  if (redcoll__shm_group_in(t->closed, t->nclosed, group)) {
    /* For a communicator this rank has closed: dropped. */
    if (f->kind == FRAME_CMA) ack_refuse(t, s, f->slot, ACK_CANCELLED);
    if (f->kind == FRAME_INLINE) read_into(ps, NULL, NULL, NULL);
    return;
  }
  for (shm_op *op = ps->posted; op != NULL; op = op->next)
    if (op->channel == f->channel) {
      unlink_posted(ps, op);
      match(t, s, ps, f, op);
      return;
    }
  shm_unexp *u = calloc(1, sizeof *u);
  unsigned char *data = NULL;
  if (u != NULL && f->kind == FRAME_INLINE && f->len > 0 && (data = malloc((size_t)f->len)) == NULL) {
    free(u);
    u = NULL;
  }
  if (u == NULL) {
    /* Out of memory: the communicator cannot go on; drop the message and
     * make its receive fail by cutting nothing else. */
    redcoll__log(0, "shm rank %d: no memory to keep a message of %llu bytes from rank %d",
                 REDCOLL__SHM_WR(t, t->rank), (unsigned long long)f->len, REDCOLL__SHM_WR(t, s));
    if (f->kind == FRAME_CMA) ack_refuse(t, s, f->slot, ACK_CANCELLED);
    if (f->kind == FRAME_INLINE) read_into(ps, NULL, NULL, NULL);
    return;
  }
  u->f = *f;
  u->data = data;
  check_kept(t, s, f);
  if (ps->unexp_tail != NULL) ps->unexp_tail->next = u;
  else ps->unexp_head = u;
  ps->unexp_tail = u;
  if (f->kind == FRAME_INLINE) read_into(ps, data, NULL, u);
}

static void unexp_remove(shm_peer *ps, shm_unexp *u) {
  shm_unexp *prev = NULL;
  for (shm_unexp *x = ps->unexp_head; x != NULL; prev = x, x = x->next)
    if (x == u) {
      if (prev != NULL) prev->next = u->next;
      else ps->unexp_head = u->next;
      if (ps->unexp_tail == u) ps->unexp_tail = prev;
      u->next = NULL;
      return;
    }
}

/* A receive inside a collective with a tag not seen last: the messages
 * kept on its channel from every peer are checked against it.  1 if one
 * conflicts (op has failed). */
static int enter(shm_impl *t, shm_op *op) {
  if (!redcoll__tagrec_enter(&t->rec, op->channel, op->tag, op->coll)) return 0;
  for (int q = 0; q < t->size; q++) {
    if (q == t->rank) continue;
    for (const shm_unexp *u = t->peers[q].unexp_head; u != NULL; u = u->next)
      if (u->f.channel == op->channel && redcoll_transport_tags_conflict(u->f.tag, op->tag)) {
        log_conflict(t, q, op->channel, u->f.tag, op->tag);
        finish(op, REDCOLL_EMISMATCH);
        return 1;
      }
  }
  return 0;
}

void redcoll__shm_post_recv(shm_impl *t, shm_op *op) {
  shm_peer *ps = &t->peers[op->peer];
  if (op->coll && enter(t, op)) return;
  shm_unexp *u = ps->unexp_head;
  while (u != NULL && u->f.channel != op->channel) u = u->next;
  if (u == NULL) {
    op->next = ps->posted;
    ps->posted = op;
    return;
  }
  unexp_remove(ps, u);
  int streaming = ps->reading && ps->in_unexp == u;
  if (mismatched(&u->f, op)) {
    log_mismatch(t, op->peer, &u->f, op);
    finish(op, REDCOLL_EMISMATCH);
    if (u->f.kind == FRAME_CMA) ack_refuse(t, op->peer, u->f.slot, ACK_MISMATCH);
    if (streaming) {
      ps->in_dst = NULL;
      ps->in_unexp = NULL;
    }
  } else if (u->f.kind == FRAME_CMA) {
    cma_receive(t, op->peer, &u->f, op);
  } else {
    size_t got = (size_t)u->f.len - (streaming ? ps->in_left : 0);
    if (got > 0) memcpy(op->buf, u->data, got);
    if (streaming) {
      /* The rest goes straight into the receive. */
      ps->in_dst = (unsigned char *)op->buf + got;
      ps->in_op = op;
      ps->in_unexp = NULL;
    } else {
      finish(op, REDCOLL_OK);
    }
  }
  free(u->data);
  free(u);
}

/* Reads what has come from s; returns 1 if it took any bytes. */
static int read_peer(shm_impl *t, int s, shm_peer *ps) {
  int took = 0;
  for (;;) {
    if (!ps->reading) {
      if (redcoll__shm_queue_used(ps->in) < FRAME) break;
      redcoll__shm_queue_get(ps->in, t->cap, &ps->in_f, FRAME);
      took = 1;
      dispatch(t, s, ps);
    } else {
      size_t n = redcoll__shm_queue_get(ps->in, t->cap, ps->in_dst, ps->in_left);
      if (n == 0) break;
      took = 1;
      ps->in_left -= n;
      if (ps->in_dst != NULL) ps->in_dst += n;
    }
    if (ps->reading && ps->in_left == 0) {
      ps->reading = 0;
      if (ps->in_op != NULL) finish(ps->in_op, REDCOLL_OK);
      ps->in_op = NULL;
      ps->in_unexp = NULL;
      ps->in_dst = NULL;
    }
  }
  return took;
}

/* ---- sending ---- */

void redcoll__shm_post_send(shm_impl *t, shm_op *op) {
  shm_peer *ps = &t->peers[op->peer];
  redcoll__tagrec_sent(&t->rec, op->channel, op->coll);
  op->next = NULL;
  op->slot = -1;
  if (ps->out_tail != NULL) ps->out_tail->next = op;
  else ps->out_head = op;
  ps->out_tail = op;
}

static void pop_out(shm_peer *ps) {
  shm_op *op = ps->out_head;
  ps->out_head = op->next;
  if (ps->out_head == NULL) ps->out_tail = NULL;
  op->next = NULL;
}

/* Writes what fits to s; returns 1 if it wrote any bytes. */
static int write_peer(shm_impl *t, shm_peer *ps) {
  int wrote = 0;
  shm_op *op;
  while ((op = ps->out_head) != NULL) {
    if (!op->framed) {
      if (redcoll__shm_queue_space(ps->out, t->cap) < FRAME) break;
      if (op->kind == FRAME_CMA) {
        if (t->acks_used == UINT64_MAX) break; /* all 64 large sends wait */
        int k = __builtin_ctzll(~t->acks_used);
        t->acks_used |= (uint64_t)1 << k;
        uint32_t gen = (t->ack_gen[k] = (t->ack_gen[k] + 1) & 0xffffff);
        op->slot = (int)(gen << 8 | (uint32_t)k);
        __atomic_store_n(ack_of(t, t->rank, (uint32_t)k), ACK_WORD(gen, ACK_PENDING),
                         __ATOMIC_RELEASE);
      }
      shm_frame f = {op->tag, op->len, op->channel, (uint64_t)(uintptr_t)op->buf, op->kind,
                     op->slot < 0 ? 0u : (uint32_t)op->slot};
      redcoll__shm_queue_put(ps->out, t->cap, &f, FRAME);
      op->framed = 1;
      wrote = 1;
    }
    if (op->kind == FRAME_INLINE && op->sent < op->len) {
      size_t n = redcoll__shm_queue_put(ps->out, t->cap, (const unsigned char *)op->buf + op->sent,
                                        op->len - op->sent);
      op->sent += n;
      if (n > 0) wrote = 1;
      if (op->sent < op->len) break;
    }
    pop_out(ps);
    if (op->owned) free(op);
    else if (op->kind == FRAME_INLINE) finish(op, REDCOLL_OK);
    /* FRAME_CMA: done when its ack slot says so. */
  }
  return wrote;
}

int redcoll__shm_progress(shm_impl *t) {
  int moved = 0;
  for (int s = 0; s < t->size; s++) {
    if (s == t->rank) continue;
    shm_peer *ps = &t->peers[s];
    if (ps->out_head != NULL && !__atomic_load_n(&ps->out->broken, __ATOMIC_RELAXED) &&
        write_peer(t, ps)) {
      ring(t, s);
      moved = 1;
    }
    if (read_peer(t, s, ps)) {
      ring(t, s); /* room for its sends */
      moved = 1;
    }
  }
  return moved;
}

/* ---- failures ---- */

int redcoll__shm_op_doomed(shm_impl *t, shm_op *op) {
  int s = op->peer;
  shm_peer *ps = &t->peers[s];
  int dead = t->live.dead[s] || __atomic_load_n(&t->ranks[s].gone, __ATOMIC_ACQUIRE);
  uint64_t group = REDCOLL__SHM_GROUP(op->channel);
  if (op->is_send) {
    if (dead || __atomic_load_n(&ps->out->broken, __ATOMIC_RELAXED) ||
        redcoll__shm_group_in(ps->closed, ps->nclosed, group))
      return REDCOLL_ETRANSPORT;
    return REDCOLL_OK;
  }
  /* A receive still gets what the peer wrote before it went. */
  if ((dead || __atomic_load_n(&ps->in->broken, __ATOMIC_ACQUIRE)) &&
      redcoll__shm_queue_used(ps->in) == 0)
    return REDCOLL_ETRANSPORT;
  return REDCOLL_OK;
}

void redcoll__shm_abandon(shm_impl *t, shm_op *op, int status) {
  if (op->done) return;
  shm_peer *ps = &t->peers[op->peer];
  if (!op->is_send) {
    unlink_posted(ps, op);
    if (ps->in_op == op) {
      ps->in_op = NULL;
      ps->in_dst = NULL; /* the rest of its payload is dropped */
    }
    finish(op, status);
    return;
  }
  if (!op->framed || (op->kind == FRAME_INLINE && op->sent < op->len)) {
    /* Still in the outbound FIFO. */
    shm_op **l = &ps->out_head, *prev = NULL;
    while (*l != NULL && *l != op) {
      prev = *l;
      l = &(*l)->next;
    }
    if (*l == op) {
      *l = op->next;
      if (ps->out_tail == op) ps->out_tail = prev;
    }
    if (op->framed) {
      /* Half a payload is on the queue: nothing may follow it. */
      __atomic_store_n(&ps->out->broken, 1, __ATOMIC_RELEASE);
      ring(t, op->peer);
    }
    slot_free(t, op);
    finish(op, status);
    return;
  }
  if (op->kind == FRAME_CMA) {
    /* Withdrawn, even from a receiver in the middle of its copy (stopped,
     * say): that receiver then fails its receive, and reading this rank's
     * memory after the buffer is gone harms only its own result. */
    uint32_t *a = ack_of(t, t->rank, (uint32_t)op->slot);
    uint32_t cur = __atomic_load_n(a, __ATOMIC_ACQUIRE);
    while (((cur & 0xff) == ACK_PENDING || (cur & 0xff) == ACK_BUSY) &&
           !__atomic_compare_exchange_n(a, &cur, (cur & ~(uint32_t)0xff) | ACK_CANCELLED, 0,
                                        __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
    }
    slot_free(t, op);
    finish(op, status);
  }
}

/* ---- dropping what is kept ---- */

void redcoll__shm_drop_group(shm_impl *t, uint64_t group) {
  for (int s = 0; s < t->size; s++) {
    if (s == t->rank) continue;
    shm_peer *ps = &t->peers[s];
    for (shm_unexp *u = ps->unexp_head, *next; u != NULL; u = next) {
      next = u->next;
      if (REDCOLL__SHM_GROUP(u->f.channel) != group) continue;
      unexp_remove(ps, u);
      if (u->f.kind == FRAME_CMA) ack_refuse(t, s, u->f.slot, ACK_CANCELLED);
      if (ps->reading && ps->in_unexp == u) {
        ps->in_dst = NULL;
        ps->in_unexp = NULL;
      }
      free(u->data);
      free(u);
    }
  }
}

void redcoll__shm_drop_all(shm_impl *t) {
  for (int s = 0; s < t->size; s++) {
    if (s == t->rank) continue;
    shm_peer *ps = &t->peers[s];
    for (shm_unexp *u = ps->unexp_head, *next; u != NULL; u = next) {
      next = u->next;
      if (u->f.kind == FRAME_CMA) ack_refuse(t, s, u->f.slot, ACK_CANCELLED);
      free(u->data);
      free(u);
    }
    ps->unexp_head = ps->unexp_tail = NULL;
    for (shm_op *op = ps->out_head, *next; op != NULL; op = next) {
      next = op->next;
      if (op->owned) free(op);
    }
    ps->out_head = ps->out_tail = NULL;
    free(ps->closed);
    ps->closed = NULL;
  }
}
