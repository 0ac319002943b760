/*
 * The simulator transport (include/redcoll/mock.h, docs/simulator.md).
 *
 * Every rank is a thread, but only the thread that holds the baton runs; all
 * others wait on their own semaphore.  A rank gives the baton away only when
 * it blocks in a call or returns from fn: it picks the next rank from the
 * runnable set with a generator seeded by cfg->seed, posts that rank's
 * semaphore and waits on its own, so one seed gives one interleaving.  All
 * run state is touched only by the baton holder, and the semaphores order
 * those accesses, so no lock is needed.  Completion times are a
 * dataflow computation over post times and do not depend on the
 * interleaving at all.
 *
 * Messages wait in FIFO queues, one per ordered pair (src, dst) that has a
 * message in flight, found through a hash table: memory is proportional to
 * the messages in flight, not to p^2.  A rendezvous message lives in its
 * blocked sender's rank record and points at the sender's buffer; an eager
 * message is a heap copy.  A rank has at most one call in progress, made of
 * a send half and/or a receive half.
 */
#include <inttypes.h>
#include <limits.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "internal.h"
#include "redcoll/mock.h"
#include "redcoll/transport.h"

#define MOCK_MAX_P 65536
#define MOCK_DEFAULT_STACK ((size_t)256 * 1024)

enum rank_state { ST_READY, ST_RUNNING, ST_BLOCKED, ST_DONE };

typedef struct mock_msg {
  struct mock_msg *next; /* next message of the same (src, dst) pair */
  int src, dst;
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
  sem_t baton;           /* posted when the rank may run */
  double clock;
  uint64_t rclock;
  int started;           /* its thread was created (it must be joined) */
  int dead;              /* fault injection fired on this rank */
  uint64_t ncalls;
  redcoll_comm *comm;    /* the rank's communicator, for its deadline */
  uint64_t ctag;         /* tag of the collective the deadline belongs to */
  int have_ctag;
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
  sem_t done;            /* posted when every rank has returned */
  int p;
  redcoll_mock_config cfg;
  redcoll_rank_main fn;
  void *arg;
  mock_rank *ranks;
  pthread_t *threads;
  unsigned char *stacks; /* one mapping holding every rank's stack */
  size_t stacks_len;
  size_t slot;           /* guard page + stack */
  size_t page;
  int *runnable;         /* ranks in state ST_READY, in no particular order */
  int nrunnable;
  int nblocked;
  uint64_t rng;
  int aborted;
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

static size_t pair_bucket(const mock_run *run, uint64_t key) { return pair_hash(key, run->nbuckets); }

static mock_pair *pair_find(mock_run *run, int src, int dst) {
  uint64_t key = pair_key(src, dst);
  for (mock_pair *q = run->buckets[pair_bucket(run, key)]; q != NULL; q = q->next)
    if (q->key == key) return q;
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
      size_t j = pair_hash(q->key, n);
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
  mock_pair *q = pair_find(run, m->src, m->dst);
  if (q == NULL) {
    if (run->free_pairs != NULL) {
      q = run->free_pairs;
      run->free_pairs = q->next;
    } else if ((q = malloc(sizeof *q)) == NULL) {
      return REDCOLL_ENOMEM;
    }
    if (run->npairs >= run->nbuckets) pair_grow(run);
    q->key = pair_key(m->src, m->dst);
    q->head = q->tail = NULL;
    size_t b = pair_bucket(run, q->key);
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
  mock_pair **link = &run->buckets[pair_bucket(run, key)];
  while (*link != NULL && (*link)->key != key) link = &(*link)->next;
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

/* Whether r's call has an open half with this tag. */
static int waits_in(const mock_rank *r, uint64_t tag) {
  return (r->send_active && r->stag == tag) || (r->recv_active && r->rtag == tag);
}

/* The tag of r's open call if it is the tag of the collective r's core is
 * running (not a raw transport call), else 0. */
static uint64_t coll_tag(const mock_rank *r) {
  if (r->state != ST_BLOCKED || r->comm == NULL || r->comm->tag == 0) return 0;
  return waits_in(r, r->comm->tag) ? r->comm->tag : 0;
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
      if (qt == 0 || waits_in(q, rt)) continue;
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

static void *rank_thread(void *p);

/* Starts r's thread on its slot of the stack mapping.  The stacks are
 * carved from one mapping rather than left to pthread_create, because
 * thousands of thread stacks unmapped one by one cost a TLB shootdown each.
 * The C library puts static TLS on a caller-provided stack too; should it
 * not fit (sanitizer runtimes have large TLS), the library allocates the
 * stack itself. */
static int start_thread(mock_run *run, mock_rank *r) {
  pthread_attr_t attr;
  if (pthread_attr_init(&attr) != 0) return -1;
  int rc = pthread_attr_setstack(&attr, run->stacks + (size_t)r->id * run->slot + run->page,
                                 run->slot - run->page);
  if (rc == 0) rc = pthread_create(&run->threads[r->id], &attr, rank_thread, r);
  pthread_attr_destroy(&attr);
  if (rc == 0) return 0;
  if (pthread_attr_init(&attr) != 0) return -1;
  rc = pthread_attr_setstacksize(&attr, run->slot - run->page);
  if (rc == 0) rc = pthread_create(&run->threads[r->id], &attr, rank_thread, r);
  pthread_attr_destroy(&attr);
  return rc;
}

/* Hands the baton to the next rank.  Called by the baton holder (or by the
 * main thread at the start), which must not touch the run afterwards.  A
 * rank's thread is created the first time the rank is picked, already
 * holding the baton; a rank whose thread cannot be created counts as having
 * returned REDCOLL_ENOMEM. */
static void schedule_next(mock_run *run) {
  for (;;) {
    if (run->nrunnable == 0 && run->nblocked > 0 && !expire_one(run) && !blocked_mismatch(run))
      deadlock(run);
    if (run->nrunnable == 0) {
      sem_post(&run->done);
      return;
    }
    int idx = (int)(rng_next(&run->rng) % (uint64_t)run->nrunnable);
    int id = run->runnable[idx];
    int last = run->runnable[--run->nrunnable];
    run->runnable[idx] = last;
    mock_rank *r = &run->ranks[id];
    r->state = ST_RUNNING;
    if (r->started) {
      sem_post(&r->baton);
      return;
    }
    r->started = 1;
    if (start_thread(run, r) == 0) return;
    r->started = 0;
    report_add(run, "rank %d: could not create its thread", id);
    r->state = ST_DONE;
    r->st.status = REDCOLL_ENOMEM;
  }
}

static void baton_wait(sem_t *s) {
  while (sem_wait(s) != 0 && errno == EINTR) continue;
}

/* The caller gives up the baton until its call has ended. */
static void block(mock_run *run, mock_rank *r) {
  r->state = ST_BLOCKED;
  run->nblocked++;
  schedule_next(run);
  baton_wait(&r->baton);
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
  if (d->recv_active && d->rsrc == r->id) deliver(run, m, d);
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
  mock_pair *q = pair_find(run, src, r->id);
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

static int mock_call(mock_rank *r, int has_send, int dst, uint64_t stag, const void *sbuf,
                     size_t slen, int has_recv, int src, uint64_t rtag, void *rbuf, size_t rlen) {
  mock_run *run = r->run;
  if (has_send && (dst < 0 || dst >= run->p || dst == r->id || (sbuf == NULL && slen > 0)))
    return REDCOLL_EINVAL;
  if (has_recv && (src < 0 || src >= run->p || src == r->id || (rbuf == NULL && rlen > 0)))
    return REDCOLL_EINVAL;
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
  uint64_t n = r->ncalls++;
  r->st.calls = r->ncalls;
  if (r->id == run->cfg.fail_rank && n == run->cfg.fail_after) {
    kill_rank(run, r);
    rc = REDCOLL_ETRANSPORT;
    goto out;
  }
  /* A new tag is a new collective: its deadline starts now. */
  uint64_t tag = has_send ? stag : rtag;
  uint64_t tmo = r->comm != NULL ? r->comm->timeout_ms : 0;
  if (tmo == 0) {
    r->deadline = INFINITY;
    r->have_ctag = 0;
  } else if (!r->have_ctag || tag != r->ctag) {
    r->ctag = tag;
    r->have_ctag = 1;
    r->deadline = r->clock + (double)tmo;
  }
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
  return rc;
}

static int mock_send(void *impl, int dst, uint64_t tag, const void *buf, size_t len) {
  return mock_call(impl, 1, dst, tag, buf, len, 0, 0, 0, NULL, 0);
}

static int mock_recv(void *impl, int src, uint64_t tag, void *buf, size_t len) {
  return mock_call(impl, 0, 0, 0, NULL, 0, 1, src, tag, buf, len);
}

static int mock_sendrecv(void *impl, int dst, uint64_t stag, const void *sbuf, size_t slen, int src,
                         uint64_t rtag, void *rbuf, size_t rlen) {
  return mock_call(impl, 1, dst, stag, sbuf, slen, 1, src, rtag, rbuf, rlen);
}

static void mock_charge(void *impl, size_t bytes) {
  mock_rank *r = impl;
  r->clock += (double)bytes * r->run->cfg.gamma;
  r->st.bytes_reduced += bytes;
}

static void mock_abort(void *impl, int status) {
  mock_rank *r = impl;
  mock_run *run = r->run;
  if (!run->aborted && !run->deadlocked && !r->dead) {
    run->aborted = 1;
    report_add(run, "rank %d: aborted the run (%s)", r->id, redcoll_status_name(status));
    for (int i = 0; i < run->p; i++)
      if (run->ranks[i].state == ST_BLOCKED) cancel_call(run, &run->ranks[i], REDCOLL_EABORTED);
  }
}

/* The rank record belongs to the run, which outlives every communicator. */
static void mock_destroy(void *impl) { (void)impl; }

static const redcoll_transport_ops mock_ops = {
  .version = REDCOLL_TRANSPORT_VERSION,
  .send = mock_send,
  .recv = mock_recv,
  .sendrecv = mock_sendrecv,
  .charge = mock_charge,
  .abort = mock_abort,
  .destroy = mock_destroy,
};

/* ---- the run ---------------------------------------------------------------------- */

/* A rank's thread is created holding the baton. */
static void *rank_thread(void *p) {
  mock_rank *r = p;
  mock_run *run = r->run;
  redcoll_comm *comm = NULL;
  int status = redcoll_comm_create(&mock_ops, r, r->id, run->p, &comm);
  if (status == REDCOLL_OK) {
    r->comm = comm;
    comm->timeout_ok = 1; /* mock_call reads comm->timeout_ms */
    /* AUTO chooses with the simulator's own cost model unless told otherwise. */
    redcoll_comm_set_transport_name(comm, "mock");
    if (getenv("REDCOLL_COST_MODEL") == NULL)
      redcoll_comm_set_cost_model(comm, run->cfg.alpha, run->cfg.beta, run->cfg.gamma);
    status = run->fn(comm, run->arg);
  }
  r->st.time = r->clock;
  r->st.rounds = r->rclock;
  r->st.status = status;
  r->comm = NULL;
  redcoll_comm_destroy(comm);
  r->state = ST_DONE;
  schedule_next(run); /* the last thing this thread does with the run */
  return NULL;
}

static void write_dot(const mock_run *run) {
  FILE *f = run->cfg.dot;
  fprintf(f, "digraph redcoll {\n  node [shape=circle];\n");
  for (int i = 0; i < run->p; i++) fprintf(f, "  r%d;\n", i);
  for (size_t i = 0; i < run->nedges; i++) {
    const mock_edge *e = &run->edges[i];
    fprintf(f, "  r%d -> r%d [label=\"r%" PRIu64 " %zuB\"];\n", e->src, e->dst, e->round, e->bytes);
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

REDCOLL_API int redcoll_mock_run(int p, const redcoll_mock_config *cfg, redcoll_rank_main fn,
                                 void *arg, redcoll_mock_stats *stats) {
  if (p < 1 || p > MOCK_MAX_P || fn == NULL) return REDCOLL_EINVAL;
  int rc = REDCOLL_ENOMEM, nsem = 0;
  mock_run *run = calloc(1, sizeof *run);
  if (run == NULL) return REDCOLL_ENOMEM;
  if (cfg != NULL) run->cfg = *cfg;
  else redcoll_mock_config_init(&run->cfg);
  run->p = p;
  run->fn = fn;
  run->arg = arg;
  run->rng = run->cfg.seed;
  run->nbuckets = 64;
  while (run->nbuckets < (size_t)p) run->nbuckets *= 2;

  run->ranks = calloc((size_t)p, sizeof *run->ranks);
  run->threads = calloc((size_t)p, sizeof *run->threads);
  run->runnable = malloc((size_t)p * sizeof *run->runnable);
  run->buckets = calloc(run->nbuckets, sizeof *run->buckets);
  if (run->ranks == NULL || run->threads == NULL || run->runnable == NULL || run->buckets == NULL)
    goto free_arrays;
  if (sem_init(&run->done, 0, 0) != 0) goto free_arrays;
  for (; nsem < p; nsem++) {
    mock_rank *r = &run->ranks[nsem];
    r->run = run;
    r->id = nsem;
    r->rv.eager = 1;
    r->deadline = INFINITY;
    if (sem_init(&r->baton, 0, 0) != 0) goto free_sems;
  }

  /* Stack slots: a guard page below each stack (stacks grow down).  Should
   * the kernel's mapping limit refuse more guard pages, the remaining
   * stacks go without. */
  long pg = sysconf(_SC_PAGESIZE);
  run->page = pg > 0 ? (size_t)pg : 4096;
  size_t stack = run->cfg.stack_size ? run->cfg.stack_size : MOCK_DEFAULT_STACK;
  if (stack < (size_t)PTHREAD_STACK_MIN) stack = (size_t)PTHREAD_STACK_MIN;
  if (stack > SIZE_MAX / 2) {
    rc = REDCOLL_EINVAL;
    goto free_sems;
  }
  stack = (stack + run->page - 1) / run->page * run->page;
  run->slot = stack + run->page;
  if (run->slot > SIZE_MAX / (size_t)p) {
    rc = REDCOLL_EINVAL;
    goto free_sems;
  }
  run->stacks_len = run->slot * (size_t)p;
  void *map = mmap(NULL, run->stacks_len, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
  if (map == MAP_FAILED) goto free_sems;
  run->stacks = map;
  for (int i = 0; i < p; i++)
    if (mprotect(run->stacks + (size_t)i * run->slot, run->page, PROT_NONE) != 0) break;

  for (int i = 0; i < p; i++) {
    run->ranks[i].state = ST_READY;
    run->runnable[i] = i;
  }
  run->nrunnable = p;
  schedule_next(run);
  baton_wait(&run->done);
  for (int i = 0; i < p; i++)
    if (run->ranks[i].started) pthread_join(run->threads[i], NULL);

  if (run->cfg.dot != NULL) write_dot(run);
  rc = REDCOLL_OK;
  for (int i = 0; i < p && rc == REDCOLL_OK; i++) rc = run->ranks[i].st.status;
  if (run->deadlocked) rc = REDCOLL_EDEADLOCK;
  if (stats != NULL)
    for (int i = 0; i < p; i++) stats[i] = run->ranks[i].st;

  munmap(run->stacks, run->stacks_len);
free_sems:
  for (int i = 0; i < nsem; i++) sem_destroy(&run->ranks[i].baton);
  sem_destroy(&run->done);
free_arrays:
  if (run->cfg.report != NULL && run->cfg.report_len > 0) {
    size_t n = run->report_len < run->cfg.report_len ? run->report_len : run->cfg.report_len - 1;
    if (n > 0) memcpy(run->cfg.report, run->report, n);
    run->cfg.report[n] = '\0';
  }
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
  free(run->buckets);
  free(run->report);
  free(run->edges);
  free(run->runnable);
  free(run->threads);
  free(run->ranks);
  free(run);
  return rc;
}
