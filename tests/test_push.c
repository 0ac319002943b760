/*
 * The push transport and nonblocking collectives over it, in one process:
 * each rank is a thread with its own transport object; its "connections"
 * are inboxes, and a delivery thread per rank hands what arrives to
 * redcoll_push_deliver, as a program with its own network threads would.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "redcoll/push.h"
#include "redcoll/redcoll.h"
#include "redcoll/threads.h"
#include "test.h"
#include "disagree.h"

#define MAXP 9

typedef struct letter {
  struct letter *next;
  int src;
  size_t len;
  unsigned char data[];
} letter;

typedef struct world world;

typedef struct box {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  letter *head, *tail;
  int stop;
  world *w;
  int rank;
  pthread_t thread;
} box;

struct world {
  int p;
  box boxes[MAXP];
  redcoll_comm *comms[MAXP];
  _Atomic int ready; /* comms made: deliveries may start */
  /* Fault knobs: a rank whose sends are dropped; an EPROTO count. */
  _Atomic int mute_rank;
  _Atomic int eproto;
  _Atomic int step; /* a hand-shake between ranks outside redcoll */
  int (*body)(world *w, int rank, redcoll_comm *c);
  int status[MAXP];
};

static int box_send(void *ctx, int dst, const void *msg, size_t len) {
  box *from = ctx;
  world *w = from->w;
  if (atomic_load(&w->mute_rank) == from->rank) return 0; /* lost on the way */
  box *b = &w->boxes[dst];
  letter *l = malloc(sizeof *l + len);
  if (l == NULL) return REDCOLL_ENOMEM;
  l->next = NULL;
  l->src = from->rank;
  l->len = len;
  memcpy(l->data, msg, len);
  pthread_mutex_lock(&b->mu);
  if (b->tail) b->tail->next = l;
  else b->head = l;
  b->tail = l;
  pthread_cond_signal(&b->cv);
  pthread_mutex_unlock(&b->mu);
  return 0;
}

static void *deliverer(void *arg) {
  box *b = arg;
  while (atomic_load(&b->w->ready) == 0) usleep(100);
  for (;;) {
    pthread_mutex_lock(&b->mu);
    while (b->head == NULL && !b->stop) pthread_cond_wait(&b->cv, &b->mu);
    letter *l = b->head;
    if (l == NULL) {
      pthread_mutex_unlock(&b->mu);
      return NULL;
    }
    b->head = l->next;
    if (b->head == NULL) b->tail = NULL;
    pthread_mutex_unlock(&b->mu);
    int rc = redcoll_push_deliver(b->w->comms[b->rank], l->src, l->data, l->len);
    if (rc == REDCOLL_EPROTO) atomic_fetch_add(&b->w->eproto, 1);
    free(l);
  }
}

typedef struct rank_arg {
  world *w;
  int rank;
} rank_arg;

static void *rank_thread(void *arg) {
  rank_arg *a = arg;
  a->w->status[a->rank] = a->w->body(a->w, a->rank, a->w->comms[a->rank]);
  return NULL;
}

/* Runs body on p ranks over push transports; returns the first failure of
 * comm creation, else REDCOLL_OK (each rank's status in w->status). */
static int run_world(world *w, int p, uint64_t timeout_ms,
                     int (*body)(world *w, int rank, redcoll_comm *c)) {
  memset(w, 0, sizeof *w);
  w->p = p;
  w->body = body;
  atomic_store(&w->mute_rank, -1);
  for (int r = 0; r < p; r++) {
    box *b = &w->boxes[r];
    pthread_mutex_init(&b->mu, NULL);
    pthread_cond_init(&b->cv, NULL);
    b->w = w;
    b->rank = r;
    redcoll_push_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.struct_size = sizeof cfg;
    cfg.rank = r;
    cfg.size = p;
    cfg.send = box_send;
    cfg.send_ctx = b;
    cfg.wait_timeout_ms = timeout_ms;
    int rc = redcoll_push_comm_create(&cfg, &w->comms[r]);
    if (rc != REDCOLL_OK) return rc;
    pthread_create(&b->thread, NULL, deliverer, b);
  }
  atomic_store(&w->ready, 1);
  pthread_t th[MAXP];
  rank_arg args[MAXP];
  for (int r = 0; r < p; r++) {
    args[r] = (rank_arg){w, r};
    pthread_create(&th[r], NULL, rank_thread, &args[r]);
  }
  for (int r = 0; r < p; r++) pthread_join(th[r], NULL);
  for (int r = 0; r < p; r++) {
    box *b = &w->boxes[r];
    pthread_mutex_lock(&b->mu);
    b->stop = 1;
    pthread_cond_signal(&b->cv);
    pthread_mutex_unlock(&b->mu);
    pthread_join(b->thread, NULL);
  }
  /* Destroying sends BYE to the peers, into boxes nobody reads any more. */
  for (int r = 0; r < p; r++) redcoll_comm_destroy(w->comms[r]);
  for (int r = 0; r < p; r++) {
    box *b = &w->boxes[r];
    while (b->head) {
      letter *l = b->head;
      b->head = l->next;
      free(l);
    }
  }
  return REDCOLL_OK;
}

/* ---- blocking collectives --------------------------------------------- */

static int body_blocking(world *w, int rank, redcoll_comm *c) {
  int p = w->p;
  int64_t v[100], out[100];
  for (int n = 1; n <= 100; n += 33) {
    for (int i = 0; i < n; i++) v[i] = rank * 1000 + i;
    int rc = redcoll_allreduce(c, v, out, (size_t)n, REDCOLL_INT64, REDCOLL_SUM);
    if (rc != REDCOLL_OK) return rc;
    for (int i = 0; i < n; i++)
      if (out[i] != (int64_t)p * (p - 1) / 2 * 1000 + (int64_t)p * i) return -9999;
  }
  int64_t all[MAXP];
  int64_t mine = rank + 7;
  int rc = redcoll_allgather(c, &mine, all, 1, REDCOLL_INT64);
  if (rc != REDCOLL_OK) return rc;
  for (int r = 0; r < p; r++)
    if (all[r] != r + 7) return -9998;
  return redcoll_barrier(c);
}

static void blocking_collectives(void) {
  world *w = malloc(sizeof *w);
  for (int p = 1; p <= MAXP; p++) {
    CHECK_INT(run_world(w, p, 10000, body_blocking), REDCOLL_OK);
    for (int r = 0; r < p; r++) CHECK_MSG(w->status[r] == REDCOLL_OK, "p %d rank %d: %d", p, r, w->status[r]);
  }
  free(w);
}

/* ---- nonblocking: many outstanding on two communicators --------------- */

#define NB_N 64
#define NB_LEN 37

typedef struct nb_state {
  int64_t in[NB_N][NB_LEN], out[NB_N][NB_LEN];
  redcoll_request *req[NB_N];
  int kind[NB_N];
  _Atomic int callbacks;
} nb_state;

static void count_cb(redcoll_request *req, int status, void *arg) {
  (void)req;
  if (status == REDCOLL_OK) atomic_fetch_add((_Atomic int *)arg, 1);
}

static uint64_t mix(uint64_t x) {
  x ^= x >> 31;
  x *= 0x9e3779b97f4a7c15ULL;
  return x ^ (x >> 29);
}

static int body_nonblocking(world *w, int rank, redcoll_comm *c) {
  int p = w->p;
  redcoll_comm *d = NULL;
  int rc = redcoll_comm_dup(c, &d);
  if (rc != REDCOLL_OK) return rc;
  nb_state *s = calloc(1, sizeof *s);
  for (int k = 0; k < NB_N; k++) {
    s->kind[k] = (int)(mix((uint64_t)k * 7 + 1) % 4);
    redcoll_comm *on = (mix((uint64_t)k) & 1) ? d : c;
    for (int i = 0; i < NB_LEN; i++) s->in[k][i] = (int64_t)(rank + 1) * (k + 1) + i;
    switch (s->kind[k]) {
    case 0:
      rc = redcoll_iallreduce(on, s->in[k], s->out[k], NB_LEN, REDCOLL_INT64, REDCOLL_SUM,
                              &s->req[k]);
      break;
    case 1:
      rc = redcoll_iscan(on, s->in[k], s->out[k], NB_LEN, REDCOLL_INT64, REDCOLL_SUM, &s->req[k]);
      break;
    case 2:
      if (rank == k % p) memcpy(s->out[k], s->in[k], sizeof s->out[k]);
      rc = redcoll_ibcast(on, s->out[k], NB_LEN, REDCOLL_INT64, k % p, &s->req[k]);
      break;
    default:
      rc = redcoll_ibarrier(on, &s->req[k]);
      break;
    }
    if (rc != REDCOLL_OK) return rc;
    if (k % 3 == 0) redcoll_request_set_callback(s->req[k], count_cb, &s->callbacks);
  }
  /* Test in an order of this rank's own, then wait for the rest. */
  int left = NB_N, spins = 0;
  while (left > NB_N / 2 && spins < 100000) {
    int k = (int)(mix((uint64_t)(spins++ * 31 + rank)) % NB_N);
    if (s->req[k] == NULL) continue;
    int done = 0;
    rc = redcoll_test(s->req[k], &done);
    if (done) {
      s->req[k] = NULL;
      left--;
      if (rc != REDCOLL_OK) return rc;
    } else if (rc != REDCOLL_OK) {
      return rc;
    }
  }
  rc = redcoll_waitall(s->req, NB_N);
  if (rc != REDCOLL_OK) return rc;
  int bad = 0;
  for (int k = 0; k < NB_N; k++) {
    for (int i = 0; i < NB_LEN; i++) {
      int64_t want;
      switch (s->kind[k]) {
      case 0:
        want = (int64_t)p * (p + 1) / 2 * (k + 1) + (int64_t)p * i;
        break;
      case 1:
        want = (int64_t)(rank + 1) * (rank + 2) / 2 * (k + 1) + (int64_t)(rank + 1) * i;
        break;
      case 2:
        want = (int64_t)(k % p + 1) * (k + 1) + i;
        break;
      default:
        want = 0;
      }
      if (s->kind[k] != 3 && s->out[k][i] != want) bad++;
    }
  }
  int cbs = atomic_load(&s->callbacks);
  free(s);
  redcoll_comm_destroy(d);
  if (bad) return -9000 - bad;
  return cbs == (NB_N + 2) / 3 ? REDCOLL_OK : -8000 - cbs;
}

static void nonblocking_many(void) {
  world *w = malloc(sizeof *w);
  int ps[] = {2, 3, 5, 7, 8};
  for (size_t i = 0; i < sizeof ps / sizeof *ps; i++) {
    CHECK_INT(run_world(w, ps[i], 20000, body_nonblocking), REDCOLL_OK);
    for (int r = 0; r < ps[i]; r++)
      CHECK_MSG(w->status[r] == REDCOLL_OK, "p %d rank %d: %d", ps[i], r, w->status[r]);
  }
  free(w);
}

/* ---- faults ---------------------------------------------------------- */

/* Rank p-1 is mute: every other rank's allreduce times out or is aborted,
 * none hangs; and a garbage message is EPROTO without breaking anything. */
static int body_mute(world *w, int rank, redcoll_comm *c) {
  if (rank == 0) {
    unsigned char junk[40] = "not a redcoll message at all.........";
    int rc = redcoll_push_deliver(c, 1, junk, sizeof junk);
    if (rc != REDCOLL_EPROTO) return -7000 + rc;
    rc = redcoll_push_deliver(c, 1, junk, 3);
    if (rc != REDCOLL_EPROTO) return -7100 + rc;
  }
  /* The junk broke nothing: one good collective first. */
  int64_t v = rank, s = 0;
  int rc = redcoll_allreduce(c, &v, &s, 1, REDCOLL_INT64, REDCOLL_SUM);
  if (rc != REDCOLL_OK || s != (int64_t)w->p * (w->p - 1) / 2) return -7200 + rc;
  rc = redcoll_barrier(c);
  if (rc != REDCOLL_OK) return rc;
  if (rank == w->p - 1) {
    atomic_store(&w->mute_rank, rank);
    return REDCOLL_OK;
  }
  redcoll_comm_set_deadline(c, 300);
  redcoll_request *req;
  rc = redcoll_iallreduce(c, &v, &s, 1, REDCOLL_INT64, REDCOLL_SUM, &req);
  if (rc != REDCOLL_OK) return -7300 + rc;
  return redcoll_wait(req);
}

static void fault_mute_and_junk(void) {
  world *w = malloc(sizeof *w);
  int p = 4;
  double t0 = test__now();
  CHECK_INT(run_world(w, p, 10000, body_mute), REDCOLL_OK);
  CHECK_INT(w->status[p - 1], REDCOLL_OK);
  int timed_out = 0;
  for (int r = 0; r < p - 1; r++) {
    CHECK_MSG(w->status[r] == REDCOLL_ETIMEDOUT || w->status[r] == REDCOLL_EABORTED,
              "rank %d: %s", r, redcoll_status_name(w->status[r]));
    timed_out += w->status[r] == REDCOLL_ETIMEDOUT;
  }
  CHECK(timed_out >= 1);
  CHECK(test__now() - t0 < 5.0);
  CHECK_INT(atomic_load(&w->eproto), 0); /* the junk was handed in by rank 0 itself */
  free(w);
}

/* A peer reported lost: ETRANSPORT at once on the rank that waits for it. */
static int body_lost(world *w, int rank, redcoll_comm *c) {
  if (rank == 1) return REDCOLL_OK; /* never joins */
  int64_t v = 1, s = 0;
  if (rank == 0) redcoll_push_peer_lost(c, 1);
  redcoll_comm_set_deadline(c, 2000);
  return redcoll_allreduce(c, &v, &s, 1, REDCOLL_INT64, REDCOLL_SUM);
  (void)w;
}

static void fault_peer_lost(void) {
  world *w = malloc(sizeof *w);
  double t0 = test__now();
  CHECK_INT(run_world(w, 2, 10000, body_lost), REDCOLL_OK);
  CHECK_INT(w->status[0], REDCOLL_ETRANSPORT);
  CHECK(test__now() - t0 < 1.5);
  free(w);
}

/* ---- the background progress thread ----------------------------------- */

static void flag_cb(redcoll_request *req, int status, void *arg) {
  (void)req;
  atomic_store((_Atomic int *)arg, status == REDCOLL_OK ? 1 : -1);
}

/* Rank 0 stays silent; rank 1's ibcast from rank 0 has a 100 ms deadline,
 * and rank 1 only waits for its callback.  Deadlines are checked in
 * progress: without the thread nothing calls it and the callback does not
 * come; with it, the callback says ETIMEDOUT by itself. */
static int progress_thread_on;

static int body_progress_thread(world *w, int rank, redcoll_comm *c) {
  if (rank == 0) {
    while (atomic_load(&w->step) == 0) usleep(1000);
    return REDCOLL_OK;
  }
  int on = progress_thread_on;
  if (on && redcoll_comm_set_progress_thread(c, 1) != REDCOLL_OK) return -6000;
  redcoll_comm_set_deadline(c, 100);
  _Atomic int flag = 0;
  int64_t v = 0;
  redcoll_request *req;
  int rc = redcoll_ibcast(c, &v, 1, REDCOLL_INT64, 0, &req);
  if (rc != REDCOLL_OK) return rc;
  redcoll_request_set_callback(req, flag_cb, &flag);
  /* "Computing": no redcoll call for a while. */
  for (int i = 0; i < 200 && atomic_load(&flag) == 0; i++) usleep(5000);
  int seen = atomic_load(&flag);
  atomic_store(&w->step, 1);
  rc = redcoll_wait(req);
  if (seen != (on ? -1 : 0)) return -6100 - on;
  return rc;
}

static void progress_thread(void) {
  world *w = malloc(sizeof *w);
  for (progress_thread_on = 0; progress_thread_on <= 1; progress_thread_on++) {
    CHECK_INT(run_world(w, 2, 10000, body_progress_thread), REDCOLL_OK);
    CHECK_INT(w->status[0], REDCOLL_OK);
    CHECK_MSG(w->status[1] == REDCOLL_ETIMEDOUT, "progress thread %d: rank 1: %d",
              progress_thread_on, w->status[1]);
  }
  free(w);
}

/* A send alone finishes inside post: a leaf of a linear reduce is done
 * before any progress call, its callback already run. */
static int body_send_in_place(world *w, int rank, redcoll_comm *c) {
  int64_t v = rank + 5, s = 0;
  if (redcoll_comm_set_algorithm(c, REDCOLL_COLL_REDUCE, REDCOLL_ALGO_LINEAR) != REDCOLL_OK)
    return -5900;
  _Atomic int flag = 0;
  redcoll_request *req;
  int rc = redcoll_ireduce(c, &v, &s, 1, REDCOLL_INT64, REDCOLL_SUM, 0, &req);
  if (rc != REDCOLL_OK) return rc;
  redcoll_request_set_callback(req, flag_cb, &flag);
  if (rank == 1 && atomic_load(&flag) != 1) return -5800;
  rc = redcoll_wait(req);
  if (rank == 0 && s != 11) return -5700;
  (void)w;
  return rc;
}

static void send_finishes_in_post(void) {
  world *w = malloc(sizeof *w);
  CHECK_INT(run_world(w, 2, 10000, body_send_in_place), REDCOLL_OK);
  for (int r = 0; r < 2; r++) CHECK_MSG(w->status[r] == REDCOLL_OK, "rank %d: %d", r, w->status[r]);
  free(w);
}

/* ---- a blocking transport: the i-form runs at once -------------------- */

static int body_threads(redcoll_comm *c, void *arg) {
  (void)arg;
  int64_t v = redcoll_comm_rank(c) + 1, s = 0;
  redcoll_request *req = NULL;
  int rc = redcoll_iallreduce(c, &v, &s, 1, REDCOLL_INT64, REDCOLL_SUM, &req);
  if (rc != REDCOLL_OK) return rc;
  /* Finished inside the call: its result is there before any test. */
  int p = redcoll_comm_size(c);
  if (s != (int64_t)p * (p + 1) / 2) return -1;
  int done = 0;
  rc = redcoll_test(req, &done);
  if (!done) return -2;
  if (redcoll_comm_fd(c) != -1) return -3;
  if (redcoll_comm_set_progress_thread(c, 1) != REDCOLL_ENOTSUP) return -4;
  return rc;
}

/* ---- ranks that disagree where their messages may never meet --------- */

/* disagree.h's calls: a kept message of the same collective number with
 * another call fails the receive with REDCOLL_EMISMATCH, the others are
 * aborted, none waits for the timeout (a minute here). */
static int disagree_mode;
static size_t disagree_n;
static int disagree_next[MAXP];

static int body_disagree(world *w, int r, redcoll_comm *c) {
  (void)w;
  int rc = disagree_call(c, disagree_mode, disagree_n);
  disagree_next[r] = redcoll_barrier(c);
  return rc;
}

static void disagree(void) {
  static world w;
  for (int p = 3; p <= 7; p += 2)
    for (disagree_mode = 0; disagree_mode < DISAGREE_MODES; disagree_mode++)
      for (disagree_n = 1; disagree_n <= 1000; disagree_n *= 1000) {
        CHECK_INT(run_world(&w, p, 60000, body_disagree), REDCOLL_OK);
        disagree_check(p, disagree_mode, disagree_n, w.status, disagree_next, 1);
      }
}

static void blocking_transport_runs_at_once(void) {
  CHECK_INT(redcoll_threads_run(5, body_threads, NULL), REDCOLL_OK);
}

/* Bad arguments: statuses, nothing started. */
static void bad_arguments(void) {
  redcoll_request *req = (redcoll_request *)1;
  CHECK_INT(redcoll_iallreduce(NULL, NULL, NULL, 1, REDCOLL_INT64, REDCOLL_SUM, &req),
            REDCOLL_EINVAL);
  CHECK(req == NULL);
  CHECK_INT(redcoll_wait(NULL), REDCOLL_OK);
  int done = 7;
  CHECK_INT(redcoll_test(NULL, &done), REDCOLL_EINVAL);
  CHECK_INT(redcoll_waitall(NULL, 0), REDCOLL_OK);
  CHECK_INT(redcoll_push_comm_create(NULL, NULL), REDCOLL_EINVAL);
  redcoll_push_config cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.struct_size = sizeof cfg;
  cfg.size = 2;
  redcoll_comm *c = (redcoll_comm *)1;
  CHECK_INT(redcoll_push_comm_create(&cfg, &c), REDCOLL_EINVAL); /* no send function */
  CHECK(c == NULL);
}

TEST_MAIN(TEST(blocking_collectives), TEST(nonblocking_many), TEST(fault_mute_and_junk),
          TEST(fault_peer_lost), TEST(progress_thread), TEST(send_finishes_in_post),
          TEST(blocking_transport_runs_at_once), TEST(disagree),
          TEST(bad_arguments))
