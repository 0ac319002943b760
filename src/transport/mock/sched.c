/*
 * The simulator's scheduling: the ranks' coroutine stacks and the switches
 * between them (announced to AddressSanitizer and ThreadSanitizer),
 * picking the next rank with the seeded generator (and, when none can run,
 * the next event), blocking a rank until its call ends or progress
 * releases it, and the baton of a world of the program's threads.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <ucontext.h>

#include "mock_int.h"

static uint64_t rng_next(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

/* The stacks of a run: one mapping of slots of `slot` bytes, each a guard
 * page and a stack (stacks grow down; should the kernel's mapping limit
 * refuse more guard pages, the remaining stacks go without).  The mapping
 * of the last run is kept for the next one with the same slot size when it
 * is at most MOCK_CACHE_MAX bytes: a sweep of thousands of runs would
 * otherwise spend most of its time mapping stacks and faulting them in. */
#define MOCK_CACHE_MAX ((size_t)64 << 20)
static pthread_mutex_t cache_mu = PTHREAD_MUTEX_INITIALIZER;
static unsigned char *cache_map;
static size_t cache_len, cache_slot;

/* A mapping of at least *len bytes in slots of `slot`; *len is set to its
 * size.  NULL if the system has no memory for it. */
unsigned char *redcoll__mock_stacks_get(size_t slot, size_t page, size_t *len) {
  unsigned char *m = NULL;
  pthread_mutex_lock(&cache_mu);
  if (cache_map != NULL && cache_slot == slot && cache_len >= *len) {
    m = cache_map;
    *len = cache_len;
    cache_map = NULL;
  }
  pthread_mutex_unlock(&cache_mu);
  if (m != NULL) return m;
  void *map = mmap(NULL, *len, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
  if (map == MAP_FAILED) return NULL;
  m = map;
  for (size_t off = 0; off < *len; off += slot)
    if (mprotect(m + off, page, PROT_NONE) != 0) break;
  return m;
}

void redcoll__mock_stacks_put(unsigned char *m, size_t len, size_t slot) {
  if (len <= MOCK_CACHE_MAX) {
    pthread_mutex_lock(&cache_mu);
    unsigned char *old = cache_map;
    size_t old_len = cache_len;
    if (old == NULL || old_len <= len) { /* keep the larger one */
      cache_map = m;
      cache_len = len;
      cache_slot = slot;
      m = old;
      len = old_len;
    }
    pthread_mutex_unlock(&cache_mu);
  }
  if (m != NULL) munmap(m, len);
}

static unsigned char *stack_of(const mock_run *run, const mock_rank *r) {
  return run->stacks + (size_t)r->id * run->slot + run->page;
}

/* Saves the running context in `from` and resumes `to`, whose stack is
 * [bottom, bottom + len) and whose ThreadSanitizer fiber is `fiber`; returns
 * when `from` is resumed.  `dying`: `from` is never resumed. */
static void switch_to(ucontext_t *from, ucontext_t *to, void *fiber, const void *bottom, size_t len,
                      int dying) {
#ifdef MOCK_ASAN
  void *fake = NULL;
  __sanitizer_start_switch_fiber(dying ? NULL : &fake, bottom, len);
#else
  (void)bottom, (void)len, (void)dying;
#endif
#ifdef MOCK_TSAN
  __tsan_switch_to_fiber(fiber, 0);
#else
  (void)fiber;
#endif
  swapcontext(from, to);
#ifdef MOCK_ASAN
  __sanitizer_finish_switch_fiber(fake, NULL, NULL);
#endif
}

/* From the scheduler into r, until r blocks or returns. */
void redcoll__mock_run_rank(mock_run *run, mock_rank *r) {
  switch_to(&run->sched, &r->ctx, r->fiber, stack_of(run, r), run->slot - run->page, 0);
}

/* From rank r back to the scheduler; returns when r is picked again (never
 * once r is done). */
void redcoll__mock_to_scheduler(mock_run *run, mock_rank *r) {
  switch_to(&r->ctx, &run->sched, run->sched_fiber, run->sched_stack, run->sched_stack_len,
            r->state == ST_DONE);
}

/* Makes r's coroutine on its slot of the stack mapping.  The stacks are
 * carved from one mapping because thousands of them unmapped one by one
 * would cost a TLB shootdown each. */
static int start_rank(mock_run *run, mock_rank *r) {
#ifdef MOCK_ASAN
  /* A stack reused from an earlier rank may still carry its poisoned
   * redzones: that rank never returned through its frames. */
  __asan_unpoison_memory_region(stack_of(run, r), run->slot - run->page);
#endif
  if (getcontext(&r->ctx) != 0) return -1;
  r->ctx.uc_stack.ss_sp = stack_of(run, r);
  r->ctx.uc_stack.ss_size = run->slot - run->page;
  r->ctx.uc_link = NULL; /* rank_main never returns: it switches away */
  uintptr_t a = (uintptr_t)r;
  makecontext(&r->ctx, (void (*)(void))run->rank_main, 2, (unsigned)(a & 0xffffffffu),
              (unsigned)((uint64_t)a >> 32));
#ifdef MOCK_TSAN
  r->fiber = __tsan_create_fiber(0);
#endif
  return 0;
}

/* The next rank to run, picked from the runnable set by the seeded
 * generator, or NULL when every rank has returned (a deadlock is reported
 * and broken first).  A rank whose coroutine cannot be made counts as
 * having returned REDCOLL_ENOMEM. */
mock_rank *redcoll__mock_pick_next(mock_run *run) {
  for (;;) {
    /* No rank can run: the next event, else a mismatch, else a deadlock
     * (whose failed ops are events in turn). */
    while (run->nrunnable == 0 && run->nblocked > 0) {
      if (redcoll__mock_xfer_step(run) || redcoll__mock_next_event(run) ||
          redcoll__mock_blocked_mismatch(run))
        continue;
      if (run->deadlocked) break; /* nothing left to end: should not happen */
      redcoll__mock_deadlock(run);
    }
    if (run->nrunnable == 0) return NULL;
    int idx = (int)(rng_next(&run->rng) % (uint64_t)run->nrunnable);
    int id = run->runnable[idx];
    int last = run->runnable[--run->nrunnable];
    run->runnable[idx] = last;
    mock_rank *r = &run->ranks[id];
    r->state = ST_RUNNING;
    if (r->started) return r;
    if (start_rank(run, r) == 0) {
      r->started = 1;
      return r;
    }
    redcoll__mock_report_add(run, "rank %d: could not make its coroutine", id);
    r->state = ST_DONE;
    r->st.status = REDCOLL_ENOMEM;
  }
}

/* Threaded world, with the mutex held: r stops running (it waits at a
 * gate, is blocked, or is done).  When no rank runs any more, the next one
 * is picked and woken.  Then waits until r is picked (not once r is done). */
static int cmp_int(const void *a, const void *b) {
  int x = *(const int *)a, y = *(const int *)b;
  return (x > y) - (x < y);
}

void redcoll__mock_thread_give_way(mock_run *run, mock_rank *r) {
  if (--run->nrunning == 0) {
    /* Threads reach their gates in any order: the runnable set is put in
     * rank order so that the seed alone decides. */
    qsort(run->runnable, (size_t)run->nrunnable, sizeof *run->runnable, cmp_int);
    mock_rank *next = redcoll__mock_pick_next(run);
    if (next != NULL) {
      run->nrunning = 1;
      pthread_cond_signal(&run->cvs[next->id]);
    }
  }
  while (r->state != ST_RUNNING && r->state != ST_DONE) pthread_cond_wait(&run->cvs[r->id], &run->mu);
}

/* The caller gives way until its call has ended. */
void redcoll__mock_block(mock_run *run, mock_rank *r) {
  r->state = ST_BLOCKED;
  run->nblocked++;
  if (run->threaded) redcoll__mock_thread_give_way(run, r);
  else redcoll__mock_to_scheduler(run, r);
}
