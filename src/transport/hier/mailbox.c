/*
 * Messages between the threads of one process in a hosts x threads world:
 * a list of posted halves (sends waiting for their receive, receives
 * waiting for their send), matched per (sender thread, receiver thread,
 * channel) in the order posted.  Whichever half comes second matches, and
 * its thread copies the bytes once, from the sender's buffer straight into
 * the receiver's, with the mutex released so that threads of one process
 * copy at once.
 */
#include <stdlib.h>
#include <string.h>

#include "hier_int.h"

static void unlink_half(hier_proc *P, mb_half *h) {
  mb_half **pp = &P->head, *prev = NULL;
  while (*pp != NULL && *pp != h) {
    prev = *pp;
    pp = &(*pp)->next;
  }
  if (*pp == NULL) return;
  *pp = h->next;
  if (P->tail == h) P->tail = prev;
  h->next = NULL;
}

void mb_post(hier_proc *P, mb_half *h, mb_half **other) {
  *other = NULL;
  for (mb_half *o = P->head; o != NULL; o = o->next) {
    if (o->send == h->send || o->from != h->from || o->to != h->to || o->chan != h->chan ||
        o->state != MB_POSTED)
      continue;
    unlink_half(P, o);
    o->state = h->state = MB_BUSY;
    *other = o;
    return;
  }
  h->next = NULL;
  if (P->tail != NULL) P->tail->next = h;
  else P->head = h;
  P->tail = h;
}

void mb_copy(hier_proc *P, mb_half *a, mb_half *b) {
  mb_half *s = a->send ? a : b, *r = a->send ? b : a;
  int st = REDCOLL_OK;
  if (s->tag != r->tag || s->len != r->len) st = REDCOLL_EMISMATCH;
  else if (s->len > 0) memcpy(r->buf, s->buf, s->len);
  pthread_mutex_lock(&P->mu);
  s->state = r->state = MB_DONE;
  s->status = r->status = st;
  pthread_cond_broadcast(&P->cv);
  pthread_mutex_unlock(&P->mu);
}

void mb_withdraw(hier_proc *P, mb_half *h) {
  if (h->state == MB_POSTED) {
    unlink_half(P, h);
    h->state = MB_DONE;
    return;
  }
  while (h->state == MB_BUSY) pthread_cond_wait(&P->cv, &P->mu);
}

int mb_refused(const hier_proc *P, const mb_half *h) {
  if (P->aborted) return REDCOLL_EABORTED;
  uint64_t g = HIER_GROUP(h->chan);
  for (size_t i = 0; i < P->ncancelled; i++)
    if (P->cancelled[i] == g) return REDCOLL_EABORTED;
  int peer = h->send ? h->to : h->from;
  for (size_t i = 0; i < P->nclosed; i++)
    if (P->closed[i].group == g && P->closed[i].thread == peer) return REDCOLL_ETRANSPORT;
  return REDCOLL_OK;
}
