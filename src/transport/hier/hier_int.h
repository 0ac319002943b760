/*
 * The hier transport's shared state: one process's part of a hosts x
 * threads world (hier.c) and its mailbox of messages between its threads
 * (mailbox.c).
 */
#ifndef REDCOLL_HIER_INT_H
#define REDCOLL_HIER_INT_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "base.h"

/* One half of a message between two threads of the process: a send
 * waiting for its receive or a receive waiting for its send. */
typedef struct mb_half {
  struct mb_half *next;
  int send;            /* 1: a send, 0: a receive */
  int from, to;        /* threads */
  uint64_t chan;       /* the world's channel */
  uint64_t tag;
  void *buf;
  size_t len;
  int state;           /* MB_POSTED, MB_BUSY (matched, being copied), MB_DONE */
  int status;          /* with MB_DONE */
} mb_half;

enum { MB_POSTED, MB_BUSY, MB_DONE };

/* A world channel group closed by one thread (its communicator is gone). */
typedef struct mb_closed {
  uint64_t group;
  int thread;
} mb_closed;

typedef struct hier_proc {
  int H, T, me;                     /* processes, threads each, this process */
  /* procs' transport, the channel the world's channels are derived from,
   * procs' ranks as transport ranks (NULL: the same). */
  const redcoll_transport_ops *ops;
  void *impl;
  uint64_t anchor;
  int *map;
  redcoll_transport_info pinfo;     /* what procs' transport said */
  uint32_t *hosts;                  /* H * T: rank / T */
  int64_t bound_ms;                 /* the own bound on one local wait */
  pthread_mutex_t mu;               /* everything below */
  pthread_cond_t cv;
  pthread_condattr_t cvattr;
  mb_half *head, *tail;             /* posted halves, in order */
  uint64_t *cancelled;              /* world groups cancelled */
  size_t ncancelled, cancel_cap;
  mb_closed *closed;
  size_t nclosed, closed_cap;
  uint64_t *used;                   /* world groups used here (abort cancels them) */
  size_t nused, used_cap;
  int aborted;                      /* a status once the world is aborted here */
  int refs;
} hier_proc;

/* ---- the mailbox (mailbox.c) ----------------------------------------------
 * All under P->mu. */

/* Posts h (filled by the caller, state MB_POSTED): matches it with the
 * first posted opposite half of the same (from, to, chan), both then
 * MB_BUSY and *other that half (the caller copies with mb_copy), or queues
 * it (*other NULL). */
void mb_post(hier_proc *P, mb_half *h, mb_half **other);
/* Copies between a matched pair (mutex not held) and finishes both;
 * EMISMATCH on both when tag or length differ. */
void mb_copy(hier_proc *P, mb_half *a, mb_half *b);
/* Takes back a half still queued (its call gave up); waits out a copy in
 * progress.  Returns with h done or removed. */
void mb_withdraw(hier_proc *P, mb_half *h);
/* The status a half waiting on chan between from and to must end with
 * (cancelled group, closed peer, aborted world), or REDCOLL_OK. */
int mb_refused(const hier_proc *P, const mb_half *h);

#define HIER_GROUP(ch) ((ch) & ~(uint64_t)(REDCOLL_TRANSPORT_CHANNEL_GROUP - 1))

#endif /* REDCOLL_HIER_INT_H */
