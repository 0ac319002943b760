/*
 * The simulator transport (include/redcoll/mock.h, docs/simulator.md).
 *
 * Every rank is a coroutine (ucontext) on its own stack, all of them on the
 * thread that called redcoll_mock_run: only one runs at a time.  A rank
 * gives way only when it blocks in a call or returns from fn; it switches to
 * the scheduler, which picks the next rank from the runnable set with a
 * generator seeded by cfg->seed and switches to it, so one seed gives one
 * interleaving.  No lock is needed, and a switch costs a few hundred
 * nanoseconds where a hand-off between threads costs a wake-up by the
 * kernel (tens of microseconds, milliseconds on a loaded machine).
 * Completion times are a dataflow computation over post times and do not
 * depend on the interleaving at all.  Under AddressSanitizer and
 * ThreadSanitizer the switches are announced to the sanitizer.
 *
 * Messages wait in FIFO queues, one per ordered pair (src, dst) that has a
 * message in flight, found through a hash table: memory is proportional to
 * the messages in flight, not to p^2.  A rendezvous message lives in its
 * blocked sender's rank record and points at the sender's buffer; an eager
 * message is a heap copy.  A rank has at most one call in progress, made of
 * a send half and/or a receive half.
 *
 * A world made by redcoll_mock_world_create has no coroutines: its ranks
 * are the program's own threads, and a baton under one mutex takes the
 * scheduler's place.  Every transport call is a gate where the rank waits,
 * ready; once no rank runs (all wait at a gate, are blocked or are done)
 * the thread that stopped last picks the next rank with the same seeded
 * generator and wakes it.  So one rank runs at a time there too, and one
 * seed gives one interleaving however the threads are scheduled.
 */
#include <inttypes.h>
#include <limits.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <ucontext.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "base.h"
#include "redcoll/mock.h"
#include "redcoll/transport.h"

#define MOCK_MAX_P 65536
#define MOCK_DEFAULT_STACK ((size_t)256 * 1024)
#define MOCK_MIN_STACK ((size_t)64 * 1024)

enum rank_state { ST_READY, ST_RUNNING, ST_BLOCKED, ST_DONE };

typedef struct mock_msg {
  struct mock_msg *next; /* next message of the same (src, dst, channel) */
  int src, dst;
  uint64_t chan;
  uint64_t tag;
  size_t len;
  const void *data;      /* the sender's buffer, or the eager copy after the header */
  int eager;
  double post;           /* send post time */
  uint64_t rpost;        /* same on the round clock */
  double end;            /* eager only: when the transfer ended */
  uint64_t rend;
} mock_msg;

typedef struct mock_pair {
  uint64_t key;          /* src << 32 | dst */
  uint64_t chan;
  mock_msg *head, *tail;
  struct mock_pair *next; /* hash chain, or free list */
} mock_pair;

typedef struct mock_edge {
  int src, dst;
  uint64_t round;
  size_t bytes;
} mock_edge;

struct mock_run;

typedef struct mock_rank {
  struct mock_run *run;
  int id;
  int state;
  ucontext_t ctx;        /* where the rank resumes */
  void *fiber;           /* ThreadSanitizer's fiber of the rank */
  double clock;
  uint64_t rclock;
  int started;           /* its coroutine was made */
  int dead;              /* fault injection fired on this rank */
  uint64_t ncalls;
  uint64_t ctag;         /* tag of the current call */
  uint64_t chan;         /* its channel */
  int in_coll;           /* the current call belongs to a collective */
  double deadline;       /* of the running collective; INFINITY: none */
  redcoll_mock_stats st;
  /* The call in progress. */
  int send_active, recv_active; /* halves not finished yet */
  int pend;              /* send_active + recv_active */
  int err;
  double cend;           /* latest end among finished halves */
  uint64_t crend;
  mock_msg rv;           /* the rendezvous message of the send half */
  int sdst;
  uint64_t stag;
  size_t slen;
  int rsrc;
  uint64_t rtag;
  void *rbuf;
  size_t rlen;
  double rpost_t;        /* receive post time */
  uint64_t rpost_r;
} mock_rank;

typedef struct mock_run {
  ucontext_t sched;      /* the scheduler, on the caller's stack */
  void *sched_fiber;     /* ThreadSanitizer's fiber of the caller */
  const void *sched_stack; /* the caller's stack, for AddressSanitizer */
  size_t sched_stack_len;
  int p;
  redcoll_mock_config cfg;
  redcoll_rank_main fn;
  void *arg;
  mock_rank *ranks;
  unsigned char *stacks; /* one mapping holding every rank's stack */
  size_t stacks_len;
  size_t slot;           /* guard page + stack */
  size_t page;
  int *runnable;         /* ranks in state ST_READY, in no particular order */
  int nrunnable;
  int nblocked;
  uint64_t rng;
  int aborted;
  uint64_t *cancelled;   /* channel groups cancelled (REDCOLL_TRANSPORT_CAP_CHANNELS) */
  size_t ncancelled;
  /* A world of the program's threads (redcoll_mock_world_create). */
  int threaded;
  pthread_mutex_t mu;    /* guards everything above while threaded */
  pthread_cond_t *cvs;   /* one per rank: its turn has come */
  int nrunning;          /* ranks running outside a gate */
  int nalive;            /* communicators not yet destroyed */
  int deadlocked;
  uint64_t nmsgs;        /* completed messages */
  mock_pair **buckets;
  size_t nbuckets;
  size_t npairs;
  mock_pair *free_pairs;
  mock_edge *edges;
  size_t nedges, edges_cap;
  int edges_failed;
  char *report;          /* error events, one per line */
  size_t report_len, report_cap;
} mock_run;

/* The channel group (one communicator) a channel belongs to. */
#define GROUP_OF(ch) ((ch) & ~(uint64_t)(REDCOLL_TRANSPORT_CHANNEL_GROUP - 1))

static int is_cancelled(const mock_run *run, uint64_t chan) {
  for (size_t i = 0; i < run->ncancelled; i++)
    if (run->cancelled[i] == GROUP_OF(chan)) return 1;
  return 0;
}

/* ---- small helpers -------------------------------------------------------- */

static uint64_t rng_next(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

static double max_d(double a, double b) { return a > b ? a : b; }
static uint64_t max_u(uint64_t a, uint64_t b) { return a > b ? a : b; }

/* Appends one formatted line to the run's report (and to stderr when
 * verbose).  Memory shortage only loses report text. */
#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static void report_add(mock_run *run, const char *fmt, ...) {
  char line[384];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  size_t len = (size_t)n < sizeof line ? (size_t)n : sizeof line - 1;
  if (run->cfg.verbose) fprintf(stderr, "redcoll mock: %s\n", line);
  /* Text beyond report_len would be cut off anyway. */
  if (run->cfg.report == NULL || run->report_len >= run->cfg.report_len) return;
  if (run->report_len + len + 2 > run->report_cap) {
    size_t cap = run->report_cap ? run->report_cap * 2 : 1024;
    while (cap < run->report_len + len + 2) cap *= 2;
    char *r = realloc(run->report, cap);
    if (r == NULL) return;
    run->report = r;
    run->report_cap = cap;
  }
  memcpy(run->report + run->report_len, line, len);
  run->report_len += len;
  run->report[run->report_len++] = '\n';
  run->report[run->report_len] = '\0';
}

/* ---- pair queues ---------------------------------------------------------- */

static uint64_t pair_key(int src, int dst) { return (uint64_t)(uint32_t)src << 32 | (uint32_t)dst; }

static size_t pair_hash(uint64_t key, size_t nbuckets) {
  uint64_t h = (key ^ (key >> 32)) * 0xbf58476d1ce4e5b9ULL;
  h ^= h >> 31;
  h *= 0x94d049bb133111ebULL;
  return (size_t)(h ^ (h >> 29)) & (nbuckets - 1);
}

/* The bucket of (key, chan); a pair's bucket is rehashed from both. */
static size_t pair_bucket_n(uint64_t key, uint64_t chan, size_t nbuckets) {
  return pair_hash(key ^ chan * 0x9e3779b97f4a7c15ULL, nbuckets);
}
static size_t pair_bucket(const mock_run *run, uint64_t key, uint64_t chan) {
  return pair_bucket_n(key, chan, run->nbuckets);
}

static mock_pair *pair_find(mock_run *run, int src, int dst, uint64_t chan) {
  uint64_t key = pair_key(src, dst);
  for (mock_pair *q = run->buckets[pair_bucket(run, key, chan)]; q != NULL; q = q->next)
    if (q->key == key && q->chan == chan) return q;
  return NULL;
}

/* Doubles the table when it gets crowded; on memory shortage the chains
 * just grow longer. */
static void pair_grow(mock_run *run) {
  size_t n = run->nbuckets * 2;
  mock_pair **b = calloc(n, sizeof *b);
  if (b == NULL) return;
  for (size_t i = 0; i < run->nbuckets; i++) {
    mock_pair *q = run->buckets[i];
    while (q != NULL) {
      mock_pair *next = q->next;
      size_t j = pair_bucket_n(q->key, q->chan, n);
      q->next = b[j];
      b[j] = q;
      q = next;
    }
  }
  free(run->buckets);
  run->buckets = b;
  run->nbuckets = n;
}

static int pair_push(mock_run *run, mock_msg *m) {
  mock_pair *q = pair_find(run, m->src, m->dst, m->chan);
  if (q == NULL) {
    if (run->free_pairs != NULL) {
      q = run->free_pairs;
      run->free_pairs = q->next;
    } else if ((q = malloc(sizeof *q)) == NULL) {
      return REDCOLL_ENOMEM;
    }
    if (run->npairs >= run->nbuckets) pair_grow(run);
    q->key = pair_key(m->src, m->dst);
    q->chan = m->chan;
    q->head = q->tail = NULL;
    size_t b = pair_bucket(run, q->key, q->chan);
    q->next = run->buckets[b];
    run->buckets[b] = q;
    run->npairs++;
  }
  m->next = NULL;
  if (q->tail != NULL) q->tail->next = m;
  else q->head = m;
  q->tail = m;
  return REDCOLL_OK;
}

/* Unlinks m from its pair queue; drops the queue when it empties. */
static void pair_remove(mock_run *run, mock_msg *m) {
  uint64_t key = pair_key(m->src, m->dst);
  mock_pair **link = &run->buckets[pair_bucket(run, key, m->chan)];
  while (*link != NULL && ((*link)->key != key || (*link)->chan != m->chan)) link = &(*link)->next;
  mock_pair *q = *link;
  if (q == NULL) return;
  mock_msg *prev = NULL;
  for (mock_msg *x = q->head; x != NULL; prev = x, x = x->next) {
    if (x != m) continue;
    if (prev != NULL) prev->next = x->next;
    else q->head = x->next;
    if (q->tail == x) q->tail = prev;
    break;
  }
  m->next = NULL;
  if (q->head == NULL) {
    *link = q->next;
    q->next = run->free_pairs;
    run->free_pairs = q;
    run->npairs--;
  }
}

/* ---- scheduling ------------------------------------------------------------ */

static void make_runnable(mock_run *run, mock_rank *r) {
  if (r->state == ST_BLOCKED) run->nblocked--;
  r->state = ST_READY;
  run->runnable[run->nrunnable++] = r->id;
}

/* Ends the call of r with err: whatever half is still open is withdrawn
 * (its rendezvous message leaves the queue, its receive is unposted).  A
 * blocked r becomes runnable. */
static void cancel_call(mock_run *run, mock_rank *r, int err) {
  if (r->send_active) {
    if (!r->rv.eager) pair_remove(run, &r->rv);
    r->send_active = 0;
  }
  r->recv_active = 0;
  r->pend = 0;
  if (r->err == REDCOLL_OK) r->err = err;
  if (r->state == ST_BLOCKED) make_runnable(run, r);
}

/* One half of r's call finished at (end, rend) or failed with err. */
static void half_done(mock_run *run, mock_rank *r, int is_send, int err, double end, uint64_t rend) {
  if (is_send) r->send_active = 0;
  else r->recv_active = 0;
  r->pend--;
  if (err != REDCOLL_OK) {
    cancel_call(run, r, err);
    return;
  }
  r->cend = max_d(r->cend, end);
  r->crend = max_u(r->crend, rend);
  if (r->pend == 0 && r->state == ST_BLOCKED) make_runnable(run, r);
}

static const char *peer_note(const mock_run *run, int peer) {
  if (run->ranks[peer].state == ST_DONE) return " (that rank has returned)";
  if (run->ranks[peer].dead) return " (that rank is dead)";
  return "";
}

/* What the call of r still waits for, e.g. "send to 3 tag ... 8 bytes". */
static void describe_wait(const mock_run *run, const mock_rank *r, char *out, size_t n) {
  char s[128] = "", q[128] = "";
  if (r->send_active)
    snprintf(s, sizeof s, "send to %d tag 0x%016" PRIx64 " %zu bytes%s", r->sdst, r->stag, r->slen,
             peer_note(run, r->sdst));
  if (r->recv_active)
    snprintf(q, sizeof q, "recv from %d tag 0x%016" PRIx64 " %zu bytes%s", r->rsrc, r->rtag,
             r->rlen, peer_note(run, r->rsrc));
  snprintf(out, n, "%s%s%s", s, (s[0] && q[0]) ? "; " : "", q);
  if (r->chan != 0) {
    size_t k = strlen(out);
    snprintf(out + k, n - k, " on channel %" PRIu64, r->chan);
  }
}

/* r's call passes its deadline at virtual time `at` while it waits for
 * rank peer: it fails with REDCOLL_ETIMEDOUT, and r's clock stops there. */
static void time_out(mock_run *run, mock_rank *r, double at, int peer) {
  char w[272];
  describe_wait(run, r, w, sizeof w);
  report_add(run, "rank %d: timed out at %.17g waiting for rank %d (%s)", r->id, at, peer, w);
  r->clock = at;
  cancel_call(run, r, REDCOLL_ETIMEDOUT);
}

/* Nothing can move: virtual time runs on to the earliest deadline among
 * the blocked ranks (a call posted after its deadline expires at once),
 * and that call times out.  0 if no blocked rank has a deadline. */
static int expire_one(mock_run *run) {
  mock_rank *best = NULL;
  double bt = INFINITY;
  for (int i = 0; i < run->p; i++) {
    mock_rank *r = &run->ranks[i];
    if (r->state != ST_BLOCKED || !isfinite(r->deadline)) continue;
    double t = max_d(r->deadline, r->clock);
    if (t < bt) {
      bt = t;
      best = r;
    }
  }
  if (best == NULL) return 0;
  time_out(run, best, bt, best->recv_active ? best->rsrc : best->sdst);
  return 1;
}

/* Whether r's call has an open half with this tag on this channel. */
static int waits_in(const mock_rank *r, uint64_t tag, uint64_t chan) {
  return r->chan == chan && ((r->send_active && r->stag == tag) || (r->recv_active && r->rtag == tag));
}

/* The tag of r's open call if it is the tag of the collective r's core is
 * running (not a raw transport call), else 0. */
static uint64_t coll_tag(const mock_rank *r) {
  if (r->state != ST_BLOCKED || !r->in_coll) return 0;
  return waits_in(r, r->ctag, r->chan) ? r->ctag : 0;
}

/* Nothing can move, and a blocked rank r waits for a blocked rank q (to
 * send to it or to receive from it) that is in another collective: under
 * rendezvous, ranks that disagree on the collective often wait like this
 * without ever matching a message, where a buffering transport would have
 * delivered one and compared the tags.  Both fail with REDCOLL_EMISMATCH,
 * with both tags in the report.  0 if there is no such pair. */
static int blocked_mismatch(mock_run *run) {
  int found = 0;
  for (int i = 0; i < run->p; i++) {
    mock_rank *r = &run->ranks[i];
    uint64_t rt = coll_tag(r);
    if (rt == 0) continue;
    int peers[2] = {r->send_active ? r->sdst : -1, r->recv_active ? r->rsrc : -1};
    for (int j = 0; j < 2; j++) {
      if (peers[j] < 0) continue;
      mock_rank *q = &run->ranks[peers[j]];
      uint64_t qt = coll_tag(q);
      if (qt == 0 || q->chan != r->chan || waits_in(q, rt, r->chan)) continue;
      report_add(run,
                 "rank %d: %s %d in tag 0x%016" PRIx64 ", but rank %d waits in tag 0x%016" PRIx64
                 " (rank %d is at collective #%" PRIu64 ", rank %d at #%" PRIu64 ")",
                 r->id, j == 0 ? "send to" : "recv from", q->id, rt, q->id, qt, r->id, rt >> 40,
                 q->id, qt >> 40);
      cancel_call(run, r, REDCOLL_EMISMATCH);
      cancel_call(run, q, REDCOLL_EMISMATCH);
      found = 1;
      break;
    }
  }
  return found;
}

/* No rank can run and some are blocked: every blocked call fails with
 * REDCOLL_EDEADLOCK, and so does every later call. */
static void deadlock(mock_run *run) {
  run->deadlocked = 1;
  report_add(run, "deadlock: %d rank(s) blocked, none can run", run->nblocked);
  for (int i = 0; i < run->p; i++) {
    mock_rank *r = &run->ranks[i];
    if (r->state != ST_BLOCKED) continue;
    char w[272];
    describe_wait(run, r, w, sizeof w);
    report_add(run, "rank %d: %s", i, w);
  }
  for (int i = 0; i < run->p; i++)
    if (run->ranks[i].state == ST_BLOCKED) cancel_call(run, &run->ranks[i], REDCOLL_EDEADLOCK);
}

/* ---- coroutines ------------------------------------------------------------- */

#if defined(__SANITIZE_ADDRESS__)
#define MOCK_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define MOCK_ASAN 1
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#define MOCK_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define MOCK_TSAN 1
#endif
#endif

#ifdef MOCK_ASAN
void __asan_unpoison_memory_region(void const volatile *addr, size_t size);
void __sanitizer_start_switch_fiber(void **fake_stack_save, const void *bottom, size_t size);
void __sanitizer_finish_switch_fiber(void *fake_stack_save, const void **bottom_old,
                                     size_t *size_old);
#endif
#ifdef MOCK_TSAN
void *__tsan_get_current_fiber(void);
void *__tsan_create_fiber(unsigned flags);
void __tsan_destroy_fiber(void *fiber);
void __tsan_switch_to_fiber(void *fiber, unsigned flags);
#endif

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
static unsigned char *stacks_get(size_t slot, size_t page, size_t *len) {
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

static void stacks_put(unsigned char *m, size_t len, size_t slot) {
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
static void run_rank(mock_run *run, mock_rank *r) {
  switch_to(&run->sched, &r->ctx, r->fiber, stack_of(run, r), run->slot - run->page, 0);
}

/* From rank r back to the scheduler; returns when r is picked again (never
 * once r is done). */
static void to_scheduler(mock_run *run, mock_rank *r) {
  switch_to(&r->ctx, &run->sched, run->sched_fiber, run->sched_stack, run->sched_stack_len,
            r->state == ST_DONE);
}

static void rank_main(unsigned lo, unsigned hi);

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
  makecontext(&r->ctx, (void (*)(void))rank_main, 2, (unsigned)(a & 0xffffffffu),
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
static mock_rank *pick_next(mock_run *run) {
  for (;;) {
    if (run->nrunnable == 0 && run->nblocked > 0 && !expire_one(run) && !blocked_mismatch(run))
      deadlock(run);
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
    report_add(run, "rank %d: could not make its coroutine", id);
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

static void thread_give_way(mock_run *run, mock_rank *r) {
  if (--run->nrunning == 0) {
    /* Threads reach their gates in any order: the runnable set is put in
     * rank order so that the seed alone decides. */
    qsort(run->runnable, (size_t)run->nrunnable, sizeof *run->runnable, cmp_int);
    mock_rank *next = pick_next(run);
    if (next != NULL) {
      run->nrunning = 1;
      pthread_cond_signal(&run->cvs[next->id]);
    }
  }
  while (r->state != ST_RUNNING && r->state != ST_DONE) pthread_cond_wait(&run->cvs[r->id], &run->mu);
}

/* The caller gives way until its call has ended. */
static void block(mock_run *run, mock_rank *r) {
  r->state = ST_BLOCKED;
  run->nblocked++;
  if (run->threaded) thread_give_way(run, r);
  else to_scheduler(run, r);
}

/* ---- message completion ------------------------------------------------------ */

static void record(mock_run *run, const mock_msg *m, double start, double end, uint64_t rend) {
  uint64_t n = run->nmsgs++;
  if (run->cfg.trace != NULL)
    fprintf(run->cfg.trace,
            "msg=%" PRIu64 " src=%d dst=%d tag=0x%016" PRIx64 " bytes=%zu start=%.17g end=%.17g"
            " round=%" PRIu64 "\n",
            n, m->src, m->dst, m->tag, m->len, start, end, rend);
  if (run->cfg.dot != NULL && !run->edges_failed) {
    if (run->nedges == run->edges_cap) {
      size_t cap = run->edges_cap ? run->edges_cap * 2 : 256;
      mock_edge *e = realloc(run->edges, cap * sizeof *e);
      if (e == NULL) {
        run->edges_failed = 1;
        return;
      }
      run->edges = e;
      run->edges_cap = cap;
    }
    run->edges[run->nedges++] = (mock_edge){m->src, m->dst, rend, m->len};
  }
}

/* Would the transfer of m (matched with rr's receive) end after the
 * deadline of a side that waits for it?  Each side waits from its post
 * time; one posted after its own deadline expires at its post time.  The
 * side whose expiry comes first times out (the message stays queued) and
 * the function returns 1. */
static int deadline_passed(mock_run *run, mock_msg *m, mock_rank *rr) {
  mock_rank *sr = &run->ranks[m->src];
  double end;
  if (m->eager) end = max_d(rr->rpost_t, m->end);
  else end = max_d(m->post, rr->rpost_t) + run->cfg.alpha + (double)m->len * run->cfg.beta;
  double tr = end > rr->deadline && end > rr->rpost_t ? max_d(rr->deadline, rr->rpost_t) : INFINITY;
  double ts = !m->eager && end > sr->deadline && end > m->post ? max_d(sr->deadline, m->post)
                                                               : INFINITY;
  if (tr == INFINITY && ts == INFINITY) return 0;
  if (tr <= ts) time_out(run, rr, tr, sr->id);
  else time_out(run, sr, ts, rr->id);
  return 1;
}

/* Delivers m, the head of its queue, to the posted receive of rank rr.  A
 * tag or length that differs fails both sides with REDCOLL_EMISMATCH and
 * writes nothing. */
static void deliver(mock_run *run, mock_msg *m, mock_rank *rr) {
  mock_rank *sr = &run->ranks[m->src];
  if (m->tag == rr->rtag && m->len == rr->rlen && deadline_passed(run, m, rr)) return;
  pair_remove(run, m);
  if (m->tag != rr->rtag || m->len != rr->rlen) {
    /* Both views: the receiver's expectation and what the sender sent.
     * The high 24 bits of a core tag are the collective's number. */
    uint64_t rs = rr->rtag >> 40, ss = m->tag >> 40;
    const char *why = m->tag == rr->rtag ? "same tag, different length"
                      : rs != ss ? "the ranks are at different collective numbers"
                                 : "same collective number, different collective, count,"
                                   " dtype, op or root";
    report_add(run,
               "rank %d: recv from %d tag 0x%016" PRIx64 " %zu bytes, but the next message has"
               " tag 0x%016" PRIx64 " %zu bytes (rank %d expects collective #%" PRIu64
               ", rank %d sent #%" PRIu64 ": %s)",
               rr->id, m->src, rr->rtag, rr->rlen, m->tag, m->len, rr->id, rs, m->src, ss, why);
    if (m->eager) free(m);
    else half_done(run, sr, 1, REDCOLL_EMISMATCH, 0, 0);
    half_done(run, rr, 0, REDCOLL_EMISMATCH, 0, 0);
    return;
  }
  if (m->len > 0) memcpy(rr->rbuf, m->data, m->len);
  double cost = run->cfg.alpha + (double)m->len * run->cfg.beta;
  rr->st.msgs_recv++;
  rr->st.bytes_recv += m->len;
  if (m->eager) {
    record(run, m, m->post, m->end, m->rend);
    double end = max_d(rr->rpost_t, m->end);
    uint64_t rend = max_u(rr->rpost_r, m->rend);
    free(m);
    half_done(run, rr, 0, REDCOLL_OK, end, rend);
  } else {
    double start = max_d(m->post, rr->rpost_t);
    double end = start + cost;
    uint64_t rend = max_u(m->rpost, rr->rpost_r) + 1;
    record(run, m, start, end, rend);
    sr->st.msgs_sent++;
    sr->st.bytes_sent += m->len;
    half_done(run, sr, 1, REDCOLL_OK, end, rend);
    half_done(run, rr, 0, REDCOLL_OK, end, rend);
  }
}

static void post_send(mock_run *run, mock_rank *r, int dst, uint64_t tag, const void *buf, size_t len) {
  r->send_active = 1;
  r->pend++;
  r->sdst = dst;
  r->stag = tag;
  r->slen = len;
  if (run->ranks[dst].dead) {
    half_done(run, r, 1, REDCOLL_ETRANSPORT, 0, 0);
    return;
  }
  mock_msg *m;
  if (len < run->cfg.eager_limit) {
    m = malloc(sizeof *m + len);
    if (m == NULL) {
      half_done(run, r, 1, REDCOLL_ENOMEM, 0, 0);
      return;
    }
    if (len > 0) memcpy(m + 1, buf, len);
    m->data = m + 1;
    m->eager = 1;
  } else {
    m = &r->rv;
    m->data = buf;
    m->eager = 0;
  }
  m->src = r->id;
  m->dst = dst;
  m->chan = r->chan;
  m->tag = tag;
  m->len = len;
  m->post = r->clock;
  m->rpost = r->rclock;
  m->end = r->clock + (run->cfg.alpha + (double)len * run->cfg.beta);
  m->rend = r->rclock + 1;
  r->rv.eager = m->eager; /* tells cancel_call whether rv is queued */
  if (pair_push(run, m) != REDCOLL_OK) {
    if (m->eager) free(m);
    r->rv.eager = 1;
    half_done(run, r, 1, REDCOLL_ENOMEM, 0, 0);
    return;
  }
  if (m->eager) {
    r->st.msgs_sent++;
    r->st.bytes_sent += len;
    half_done(run, r, 1, REDCOLL_OK, m->end, m->rend);
  }
  /* A receive posted earlier by dst: its queue from us was empty, so m is
   * the head and they match now. */
  mock_rank *d = &run->ranks[dst];
  if (d->recv_active && d->rsrc == r->id && d->chan == r->chan) deliver(run, m, d);
}

static void post_recv(mock_run *run, mock_rank *r, int src, uint64_t tag, void *buf, size_t len) {
  r->recv_active = 1;
  r->pend++;
  r->rsrc = src;
  r->rtag = tag;
  r->rbuf = buf;
  r->rlen = len;
  r->rpost_t = r->clock;
  r->rpost_r = r->rclock;
  mock_pair *q = pair_find(run, src, r->id, r->chan);
  if (q != NULL) deliver(run, q->head, r);
  else if (run->ranks[src].dead) half_done(run, r, 0, REDCOLL_ETRANSPORT, 0, 0);
}

/* Rank f dies: calls waiting on it fail with REDCOLL_ETRANSPORT. */
static void kill_rank(mock_run *run, mock_rank *f) {
  f->dead = 1;
  report_add(run, "rank %d: injected transport failure at call %" PRIu64, f->id, f->ncalls - 1);
  for (int i = 0; i < run->p; i++) {
    mock_rank *r = &run->ranks[i];
    if (r->state != ST_BLOCKED) continue;
    if ((r->send_active && r->sdst == f->id) || (r->recv_active && r->rsrc == f->id))
      cancel_call(run, r, REDCOLL_ETRANSPORT);
  }
}

/* ---- the vtable ----------------------------------------------------------------- */

/* Virtual time runs in units of one millisecond for deadlines. */
#define MOCK_NS_PER_UNIT 1e6

static int mock_call(mock_rank *r, const redcoll_transport_ctx *ctx, int has_send, int dst, uint64_t stag,
                     const void *sbuf, size_t slen, int has_recv, int src, uint64_t rtag,
                     void *rbuf, size_t rlen) {
  mock_run *run = r->run;
  if (has_send && (dst < 0 || dst >= run->p || dst == r->id || (sbuf == NULL && slen > 0)))
    return REDCOLL_EINVAL;
  if (has_recv && (src < 0 || src >= run->p || src == r->id || (rbuf == NULL && rlen > 0)))
    return REDCOLL_EINVAL;
  if (run->threaded) {
    /* The gate: wait, ready, until picked. */
    pthread_mutex_lock(&run->mu);
    make_runnable(run, r);
    thread_give_way(run, r);
  }
  int rc;
  if (run->deadlocked) {
    rc = REDCOLL_EDEADLOCK;
    goto out;
  }
  if (run->aborted) {
    rc = REDCOLL_EABORTED;
    goto out;
  }
  if (r->dead) {
    rc = REDCOLL_ETRANSPORT;
    goto out;
  }
  r->chan = ctx->channel;
  if (is_cancelled(run, r->chan)) {
    rc = REDCOLL_EABORTED;
    goto out;
  }
  uint64_t n = r->ncalls++;
  r->st.calls = r->ncalls;
  if (r->id == run->cfg.fail_rank && n == run->cfg.fail_after) {
    kill_rank(run, r);
    rc = REDCOLL_ETRANSPORT;
    goto out;
  }
  /* The core measures the collective's deadline on this clock. */
  r->ctag = has_send ? stag : rtag;
  r->in_coll = ctx->collective != 0;
  r->deadline =
      ctx->deadline_ns == UINT64_MAX ? INFINITY : (double)ctx->deadline_ns / MOCK_NS_PER_UNIT;
  if (r->id == run->cfg.stall_rank && n == run->cfg.stall_after) {
    report_add(run, "rank %d: stalled for %.17g at call %" PRIu64, r->id, run->cfg.stall_time, n);
    r->clock += run->cfg.stall_time;
  }
  r->err = REDCOLL_OK;
  r->pend = 0;
  r->send_active = r->recv_active = 0;
  r->cend = r->clock;
  r->crend = r->rclock;
  if (has_send) post_send(run, r, dst, stag, sbuf, slen);
  if (has_recv && r->err == REDCOLL_OK) post_recv(run, r, src, rtag, rbuf, rlen);
  if (r->pend > 0) block(run, r);
  rc = r->err;
  if (rc == REDCOLL_OK) {
    r->clock = r->cend;
    r->rclock = r->crend;
  }
out:
  if (run->threaded) pthread_mutex_unlock(&run->mu);
  return rc;
}

static int mock_exchange(void *impl, const redcoll_transport_ctx *ctx,
                         const redcoll_transport_msg *s, const redcoll_transport_msg *v) {
  if (s == NULL && v == NULL) return REDCOLL_EINVAL;
  return mock_call(impl, ctx, s != NULL, s ? s->peer : 0, s ? s->tag : 0,
                   s ? s->buf : NULL, s ? s->len : 0, v != NULL, v ? v->peer : 0, v ? v->tag : 0,
                   v ? v->buf : NULL, v ? v->len : 0);
}

static uint64_t mock_now(void *impl) {
  const mock_rank *r = impl;
  double ns = r->clock * MOCK_NS_PER_UNIT;
  return ns >= 1.8e19 ? UINT64_MAX - 1 : (uint64_t)llround(ns);
}

/* The simulator's own cost model is the run's configuration. */
static int mock_info(void *impl, redcoll_transport_info *info) {
  const mock_rank *r = impl;
  strcpy(info->name, "mock");
  info->caps = REDCOLL_TRANSPORT_CAP_CHANNELS;
  info->alpha = r->run->cfg.alpha;
  info->beta = r->run->cfg.beta;
  info->gamma = r->run->cfg.gamma;
  return REDCOLL_OK;
}

static void lock(mock_run *run) {
  if (run->threaded) pthread_mutex_lock(&run->mu);
}
static void unlock(mock_run *run) {
  if (run->threaded) pthread_mutex_unlock(&run->mu);
}

static void mock_charge(void *impl, size_t bytes) {
  mock_rank *r = impl;
  lock(r->run);
  r->clock += (double)bytes * r->run->cfg.gamma;
  r->st.bytes_reduced += bytes;
  unlock(r->run);
}

static void mock_abort(void *impl, int status) {
  mock_rank *r = impl;
  mock_run *run = r->run;
  lock(run);
  if (!run->aborted && !run->deadlocked && !r->dead) {
    run->aborted = 1;
    report_add(run, "rank %d: aborted the run (%s)", r->id, redcoll_status_name(status));
    for (int i = 0; i < run->p; i++)
      if (run->ranks[i].state == ST_BLOCKED) cancel_call(run, &run->ranks[i], REDCOLL_EABORTED);
  }
  unlock(run);
}

static void run_free(mock_run *run);
static void write_dot(const mock_run *run);

/* Channel group `group` is over for everyone (cancel) with status `why`:
 * every blocked call on one of its channels ends with it. */
static void cancel_group(mock_run *run, uint64_t group, int why) {
  for (int i = 0; i < run->p; i++) {
    mock_rank *q = &run->ranks[i];
    if (q->state == ST_BLOCKED && GROUP_OF(q->chan) == group) cancel_call(run, q, why);
  }
}

static void mock_cancel(void *impl, uint64_t channel, int status) {
  mock_rank *r = impl;
  mock_run *run = r->run;
  lock(run);
  if (!is_cancelled(run, channel)) {
    uint64_t *n = realloc(run->cancelled, (run->ncancelled + 1) * sizeof *n);
    if (n != NULL) {
      run->cancelled = n;
      run->cancelled[run->ncancelled++] = GROUP_OF(channel);
    }
    report_add(run, "rank %d: aborted the communicator on channel %" PRIu64 " (%s)", r->id,
               GROUP_OF(channel), redcoll_status_name(status));
    cancel_group(run, GROUP_OF(channel), REDCOLL_EABORTED);
  }
  unlock(run);
}

/* Rank r leaves the channel group: the calls waiting for it there fail. */
static void mock_close(void *impl, uint64_t channel) {
  mock_rank *r = impl;
  mock_run *run = r->run;
  lock(run);
  for (int i = 0; i < run->p; i++) {
    mock_rank *q = &run->ranks[i];
    if (q->state != ST_BLOCKED || GROUP_OF(q->chan) != GROUP_OF(channel)) continue;
    if ((q->send_active && q->sdst == r->id) || (q->recv_active && q->rsrc == r->id))
      cancel_call(run, q, REDCOLL_ETRANSPORT);
  }
  unlock(run);
}
static void run_finish(mock_run *run);

/* Under redcoll_mock_run the rank record belongs to the run, which outlives
 * every communicator.  In a threaded world the rank is done: it gives way
 * for good, and the last one frees the world. */
static void mock_destroy(void *impl) {
  mock_rank *r = impl;
  mock_run *run = r->run;
  if (!run->threaded) return;
  pthread_mutex_lock(&run->mu);
  r->st.time = r->clock;
  r->st.rounds = r->rclock;
  r->state = ST_DONE;
  thread_give_way(run, r);
  int last = --run->nalive == 0;
  pthread_mutex_unlock(&run->mu);
  if (last) {
    if (run->cfg.dot != NULL) write_dot(run);
    run_finish(run);
    run_free(run);
  }
}

static const redcoll_transport_ops mock_ops = {
  .version = 3,
  .charge = mock_charge,
  .abort = mock_abort,
  .destroy = mock_destroy,
  .info = mock_info,
  .now = mock_now,
  .exchange = mock_exchange,
  .cancel = mock_cancel,
  .close = mock_close,
};

/* ---- the run ---------------------------------------------------------------------- */

/* A rank's coroutine: r's address in two halves (makecontext passes ints). */
static void rank_main(unsigned lo, unsigned hi) {
  mock_rank *r = (mock_rank *)(uintptr_t)((uint64_t)hi << 32 | lo);
  mock_run *run = r->run;
#ifdef MOCK_ASAN
  /* Entered from the scheduler: learn its stack. */
  __sanitizer_finish_switch_fiber(NULL, &run->sched_stack, &run->sched_stack_len);
#endif
  redcoll_comm *comm = NULL;
  int status = redcoll_comm_create(&mock_ops, r, r->id, run->p, &comm);
  if (status == REDCOLL_OK) status = run->fn(comm, run->arg);
  r->st.time = r->clock;
  r->st.rounds = r->rclock;
  r->st.status = status;
  redcoll_comm_destroy(comm);
  r->state = ST_DONE;
  to_scheduler(run, r); /* for good */
  abort();              /* a finished rank is never resumed */
}

static void write_dot(const mock_run *run) {
  FILE *f = run->cfg.dot;
  /* Nodes are ranks, labelled with their number; an edge is a message,
   * labelled with its round and size ("round 2, 64 B"). */
  fprintf(f, "digraph redcoll {\n  node [shape=circle];\n");
  for (int i = 0; i < run->p; i++) fprintf(f, "  rank%d [label=\"%d\"];\n", i, i);
  for (size_t i = 0; i < run->nedges; i++) {
    const mock_edge *e = &run->edges[i];
    fprintf(f, "  rank%d -> rank%d [label=\"round %" PRIu64 ", %zu B\"];\n", e->src, e->dst,
            e->round, e->bytes);
  }
  if (run->edges_failed) fprintf(f, "  // out of memory: edges missing\n");
  fprintf(f, "}\n");
}

REDCOLL_API void redcoll_mock_config_init(redcoll_mock_config *cfg) {
  if (cfg == NULL) return;
  memset(cfg, 0, sizeof *cfg);
  cfg->alpha = 1.0;
  cfg->beta = 0.0;
  cfg->gamma = 0.0;
  cfg->seed = 1;
  cfg->eager_limit = 0;
  cfg->fail_rank = -1;
  cfg->stall_rank = -1;
}

/* A run of p ranks with cfg (NULL: defaults): everything but the stacks. */
static int run_new(int p, const redcoll_mock_config *cfg, mock_run **out) {
  mock_run *run = calloc(1, sizeof *run);
  if (run == NULL) return REDCOLL_ENOMEM;
  if (cfg != NULL) run->cfg = *cfg;
  else redcoll_mock_config_init(&run->cfg);
  run->p = p;
  run->rng = run->cfg.seed;
  run->nbuckets = 64;
  while (run->nbuckets < (size_t)p) run->nbuckets *= 2;
  run->ranks = calloc((size_t)p, sizeof *run->ranks);
  run->runnable = malloc((size_t)p * sizeof *run->runnable);
  run->buckets = calloc(run->nbuckets, sizeof *run->buckets);
  *out = run;
  if (run->ranks == NULL || run->runnable == NULL || run->buckets == NULL) return REDCOLL_ENOMEM;
  for (int i = 0; i < p; i++) {
    mock_rank *r = &run->ranks[i];
    r->run = run;
    r->id = i;
    r->rv.eager = 1;
    r->deadline = INFINITY;
  }
  return REDCOLL_OK;
}

/* What a run leaves when it ends: the report. */
static void run_finish(mock_run *run) {
  if (run->cfg.report != NULL && run->cfg.report_len > 0) {
    size_t n = run->report_len < run->cfg.report_len ? run->report_len : run->cfg.report_len - 1;
    if (n > 0) memcpy(run->cfg.report, run->report, n);
    run->cfg.report[n] = '\0';
  }
}

static void run_free(mock_run *run) {
  if (run->buckets != NULL) {
    for (size_t i = 0; i < run->nbuckets; i++) {
      mock_pair *q = run->buckets[i];
      while (q != NULL) {
        mock_pair *next = q->next;
        for (mock_msg *m = q->head; m != NULL;) {
          mock_msg *mn = m->next;
          if (m->eager) free(m);
          m = mn;
        }
        free(q);
        q = next;
      }
    }
  }
  while (run->free_pairs != NULL) {
    mock_pair *q = run->free_pairs;
    run->free_pairs = q->next;
    free(q);
  }
  if (run->threaded) {
    for (int i = 0; i < run->p; i++) pthread_cond_destroy(&run->cvs[i]);
    pthread_mutex_destroy(&run->mu);
  }
  free(run->cvs);
  free(run->cancelled);
  free(run->buckets);
  free(run->report);
  free(run->edges);
  free(run->runnable);
  free(run->ranks);
  free(run);
}

REDCOLL_API int redcoll_mock_run(int p, const redcoll_mock_config *cfg, redcoll_rank_main fn,
                                 void *arg, redcoll_mock_stats *stats) {
  if (p < 1 || p > MOCK_MAX_P || fn == NULL) return REDCOLL_EINVAL;
  mock_run *run = NULL;
  int rc = run_new(p, cfg, &run);
  if (run == NULL) return rc;
  if (rc != REDCOLL_OK) goto out;
  run->fn = fn;
  run->arg = arg;
  rc = REDCOLL_ENOMEM;

  /* Stack slots: a guard page and a stack each (stacks_get). */
  long pg = sysconf(_SC_PAGESIZE);
  run->page = pg > 0 ? (size_t)pg : 4096;
  size_t stack = run->cfg.stack_size ? run->cfg.stack_size : MOCK_DEFAULT_STACK;
  if (stack < MOCK_MIN_STACK) stack = MOCK_MIN_STACK;
  if (stack > SIZE_MAX / 2) {
    rc = REDCOLL_EINVAL;
    goto out;
  }
  stack = (stack + run->page - 1) / run->page * run->page;
  run->slot = stack + run->page;
  if (run->slot > SIZE_MAX / (size_t)p) {
    rc = REDCOLL_EINVAL;
    goto out;
  }
  run->stacks_len = run->slot * (size_t)p;
  run->stacks = stacks_get(run->slot, run->page, &run->stacks_len);
  if (run->stacks == NULL) goto out;

  for (int i = 0; i < p; i++) {
    run->ranks[i].state = ST_READY;
    run->runnable[i] = i;
  }
  run->nrunnable = p;
#ifdef MOCK_TSAN
  run->sched_fiber = __tsan_get_current_fiber();
#endif
  for (mock_rank *r; (r = pick_next(run)) != NULL;) run_rank(run, r);
#ifdef MOCK_TSAN
  for (int i = 0; i < p; i++)
    if (run->ranks[i].started) __tsan_destroy_fiber(run->ranks[i].fiber);
#endif

  if (run->cfg.dot != NULL) write_dot(run);
  rc = REDCOLL_OK;
  for (int i = 0; i < p && rc == REDCOLL_OK; i++) rc = run->ranks[i].st.status;
  if (run->deadlocked) rc = REDCOLL_EDEADLOCK;
  if (stats != NULL)
    for (int i = 0; i < p; i++) stats[i] = run->ranks[i].st;

  stacks_put(run->stacks, run->stacks_len, run->slot);
out:
  run_finish(run);
  run_free(run);
  return rc;
}

REDCOLL_API int redcoll_mock_world_create(int p, const redcoll_mock_config *cfg,
                                          redcoll_comm **comms) {
  if (p < 1 || p > MOCK_MAX_P || comms == NULL) return REDCOLL_EINVAL;
  for (int i = 0; i < p; i++) comms[i] = NULL;
  mock_run *run = NULL;
  int rc = run_new(p, cfg, &run);
  if (run == NULL) return rc;
  if (rc == REDCOLL_OK && (run->cvs = calloc((size_t)p, sizeof *run->cvs)) == NULL)
    rc = REDCOLL_ENOMEM;
  if (rc != REDCOLL_OK) {
    run_free(run);
    return rc;
  }
  pthread_mutex_init(&run->mu, NULL);
  for (int i = 0; i < p; i++) {
    pthread_cond_init(&run->cvs[i], NULL);
    run->ranks[i].state = ST_RUNNING;
    run->ranks[i].started = 1;
  }
  run->threaded = 1;
  run->nrunning = p;
  for (int i = 0; i < p && rc == REDCOLL_OK; i++)
    rc = redcoll_comm_create(&mock_ops, &run->ranks[i], i, p, &comms[i]);
  if (rc == REDCOLL_OK) {
    run->nalive = p;
    return REDCOLL_OK;
  }
  /* All or nothing: no rank has called yet, so none of this waits. */
  run->threaded = 0; /* the destroys below leave the run alone */
  for (int i = 0; i < p; i++) {
    redcoll_comm_destroy(comms[i]);
    comms[i] = NULL;
  }
  run->threaded = 1;
  run_free(run);
  return rc;
}

REDCOLL_API int redcoll_mock_comm_stats(const redcoll_comm *c, redcoll_mock_stats *out) {
  const mock_rank *r = redcoll__comm_transport(c, &mock_ops);
  if (r == NULL || out == NULL) return REDCOLL_EINVAL;
  lock(r->run);
  *out = r->st;
  out->time = r->clock;
  out->rounds = r->rclock;
  unlock(r->run);
  return REDCOLL_OK;
}
