/*
 * Nonblocking collectives: requests, the queue of each communicator, and
 * the fiber that runs the head of the queue.
 *
 * A request is a checked call (api/coll.c) waiting its turn.  The requests
 * of one communicator run one after another in start order, which every
 * rank shares, so their messages never meet on the communicator's channel
 * out of order.  The head of the queue runs on the communicator's fiber
 * (api/fiber.c): the algorithm is the blocking one, and where it would wait
 * in the transport's exchange, algo/io.c calls redcoll__nb_exchange, which
 * posts the exchange (transport.h, version 4) and yields.
 *
 * Hand-off.  Two things must happen before the fiber can go on: it has
 * yielded (its driver is back on its own stack), and the transport has
 * called done.  They may happen in either order and on different threads;
 * each adds one to `handoff`, and whichever makes it 2 resumes the fiber.
 * So the fiber is never resumed while still running, and the thread that
 * resumes it is the one that finished its exchange: inside the transport's
 * progress (called from redcoll_wait, redcoll_test or
 * redcoll_comm_progress), a delivery, or the embedder's event loop.
 *
 * Slices.  Between two exchanges the fiber reduces and copies in slices of
 * nb->slice bytes (REDCOLL_NB_SLICE_KB); between two slices it posts a
 * yield (an exchange with neither side, on a transport with
 * REDCOLL_TRANSPORT_CAP_YIELD) and goes through the same hand-off, so the
 * thread driving it gets its turn (algo/io.c).
 *
 * Memory: a request holds its call (a few hundred bytes); the fiber's
 * stack (REDCOLL_NB_STACK_KB, default 256) is mapped once per communicator
 * and reused, and only the pages touched become resident.
 *
 * On a transport without post and progress, a request runs to its end in
 * the call that starts it, in the caller's thread.
 */
#include <sched.h>
#include <stdlib.h>
#include <time.h>

#include "internal.h"

#define NB_STACK_KB_DEFAULT 256
/* Local work between two yields of the fiber (algo/io.c), KiB. */
#define NB_SLICE_KB_DEFAULT 256

struct redcoll_request {
  redcoll_comm *comm;
  struct redcoll_request *next; /* the queue */
  redcoll__call call;
  int (*run)(redcoll__call *call); /* api/coll.c's: picks and runs */
  int done;                     /* atomic: finished, status set */
  int status;
  redcoll_request_fn fn;
  void *arg;
  /* The collective's own state of the communicator while it runs (a
   * point-to-point call between two of its steps changes c's copy). */
  uint64_t tag, deadline_ns;
  /* Its callback runs (on cb_thread); free_after_cb: redcoll_wait or
   * redcoll_test was called from inside it and left the freeing to
   * finish. */
  int in_cb, free_after_cb;
  pthread_t cb_thread;
};

/* How deep this thread is inside drive (callbacks run there). */
static __thread int in_drive;

static int has_post(const redcoll_comm *c) {
  return c->ops->version >= 4 && c->ops->post != NULL && c->ops->progress != NULL;
}

static void drive(redcoll_comm *c);

static void op_done(redcoll_transport_op *op, int status) {
  redcoll_comm *c = op->user;
  redcoll__nb *nb = c->nb;
  nb->op_status = status;
  if (__atomic_add_fetch(&nb->handoff, 1, __ATOMIC_ACQ_REL) == 2) drive(c);
}

/* REDCOLL_NB_SLICE_KB: how much the fiber reduces or copies before it
 * lets its driver turn (0: all of it). */
static size_t slice_bytes(const redcoll_comm *c) {
  uint64_t kb = NB_SLICE_KB_DEFAULT;
  if (redcoll__env_u64("REDCOLL_NB_SLICE_KB", (uint64_t)1 << 22, &kb) == REDCOLL_EINVAL) {
    redcoll__log(1, "rank %d: REDCOLL_NB_SLICE_KB wants a number of KiB from 0 to 4194304; "
                    "using %d", c->rank, NB_SLICE_KB_DEFAULT);
    kb = NB_SLICE_KB_DEFAULT;
  }
  return (size_t)kb << 10;
}

static redcoll__nb *nb_of(redcoll_comm *c) {
  redcoll__nb *nb = __atomic_load_n(&c->nb, __ATOMIC_ACQUIRE);
  if (nb != NULL) return nb;
  nb = calloc(1, sizeof *nb);
  if (nb == NULL) return NULL;
  if (pthread_mutex_init(&nb->mu, NULL) != 0) {
    free(nb);
    return NULL;
  }
  nb->op_done = op_done;
  nb->slice = slice_bytes(c);
  /* Requests of a communicator are started by one thread at a time. */
  __atomic_store_n(&c->nb, nb, __ATOMIC_RELEASE);
  return nb;
}

static size_t stack_bytes(const redcoll_comm *c) {
  uint64_t kb = NB_STACK_KB_DEFAULT;
  int rc = redcoll__env_u64("REDCOLL_NB_STACK_KB", (uint64_t)1 << 22, &kb);
  if (rc == REDCOLL_EINVAL || (rc == REDCOLL_OK && kb < 64)) {
    redcoll__log(1, "rank %d: REDCOLL_NB_STACK_KB wants a number of KiB from 64 to 4194304; "
                    "using %d", c->rank, NB_STACK_KB_DEFAULT);
    kb = NB_STACK_KB_DEFAULT;
  }
  return (size_t)kb << 10;
}

/* Marks r finished and calls its callback, which may free r: r is not
 * touched afterwards. */
static void finish(redcoll__nb *nb, redcoll_request *r, int status) {
  __atomic_sub_fetch(&r->comm->ep->outstanding, 1, __ATOMIC_ACQ_REL);
  pthread_mutex_lock(&nb->mu);
  r->status = status;
  redcoll_request_fn fn = r->fn;
  void *arg = r->arg;
  if (fn == NULL) {
    __atomic_store_n(&r->done, 1, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&nb->mu);
    return;
  }
  /* Finished only once the callback has returned: a waiter on another
   * thread must not free r, or return, while it runs. */
  r->in_cb = 1;
  r->cb_thread = pthread_self();
  pthread_mutex_unlock(&nb->mu);
  fn(r, status, arg);
  pthread_mutex_lock(&nb->mu);
  int free_it = r->free_after_cb;
  if (!free_it) __atomic_store_n(&r->done, 1, __ATOMIC_RELEASE);
  pthread_mutex_unlock(&nb->mu);
  if (free_it) free(r);
}

/* redcoll_wait or redcoll_test from inside req's own callback: the status,
 * and finish frees req once the callback returns.  0 elsewhere. */
static int inside_own_callback(redcoll_request *req, int *status) {
  redcoll__nb *nb = req->comm->nb;
  pthread_mutex_lock(&nb->mu);
  int inside = req->in_cb && !__atomic_load_n(&req->done, __ATOMIC_ACQUIRE) &&
               pthread_equal(req->cb_thread, pthread_self());
  if (inside) {
    req->free_after_cb = 1;
    *status = req->status;
  }
  pthread_mutex_unlock(&nb->mu);
  return inside;
}

static void fiber_fn(void *arg) {
  redcoll_request *r = arg;
  r->status = r->run(&r->call);
}

/* Makes the head of the queue ready to run on the fiber; its status if it
 * cannot start (the communicator broke meanwhile, no memory for a stack). */
static int start_head(redcoll_comm *c, redcoll__nb *nb) {
  int rc = __atomic_load_n(&c->error, __ATOMIC_ACQUIRE);
  if (rc != REDCOLL_OK) return rc;
  if (!nb->fiber_ready) {
    if (redcoll__fiber_init(&nb->fiber, stack_bytes(c)) != REDCOLL_OK) return REDCOLL_ENOMEM;
    nb->fiber_ready = 1;
  }
  redcoll_request *r = nb->head;
  if (redcoll__fiber_start(&nb->fiber, fiber_fn, r) != REDCOLL_OK) return REDCOLL_ENOMEM;
  r->tag = c->tag;
  r->deadline_ns = c->deadline_ns;
  nb->work = 0;
  return REDCOLL_OK;
}

/* Pops the finished head; returns the next one (NULL: the queue is empty). */
static redcoll_request *pop_head(redcoll__nb *nb) {
  pthread_mutex_lock(&nb->mu);
  redcoll_request *next = nb->head->next;
  nb->head = next;
  if (next == NULL) nb->tail = NULL;
  pthread_mutex_unlock(&nb->mu);
  return next;
}

/* Runs the head's fiber until it waits for an exchange that has not
 * finished, finishing requests and starting the next ones on the way.
 * Called by whoever won the hand-off, or started the head. */
static void drive_on(redcoll_comm *c);

static void drive(redcoll_comm *c) {
  redcoll__nb *nb = c->nb;
  __atomic_add_fetch(&nb->driving, 1, __ATOMIC_ACQ_REL);
  in_drive++;
  drive_on(c);
  in_drive--;
  __atomic_sub_fetch(&nb->driving, 1, __ATOMIC_ACQ_REL);
}

static void drive_on(redcoll_comm *c) {
  redcoll__nb *nb = c->nb;
  for (;;) {
    redcoll_request *r = nb->head;
    /* The collective's own view of the communicator. */
    c->tag = r->tag;
    c->deadline_ns = r->deadline_ns;
    c->cur = &r->call;
    redcoll__fiber_resume(&nb->fiber);
    r->tag = c->tag;
    r->deadline_ns = c->deadline_ns;
    if (!nb->fiber.finished) {
      /* It posted an exchange and yielded: the second to arrive resumes. */
      if (__atomic_add_fetch(&nb->handoff, 1, __ATOMIC_ACQ_REL) == 1) return;
      continue;
    }
    redcoll_request *next = pop_head(nb);
    /* The next one starts before r's callback runs, so that a callback
     * starting a collective of its own only queues it. */
    int next_rc = next != NULL ? start_head(c, nb) : REDCOLL_OK;
    finish(nb, r, r->status);
    while (next != NULL && next_rc != REDCOLL_OK) {
      /* It could not start (the communicator broke): it fails, in turn. */
      redcoll_request *failed = next;
      int failed_rc = next_rc;
      next = pop_head(nb);
      next_rc = next != NULL ? start_head(c, nb) : REDCOLL_OK;
      finish(nb, failed, failed_rc);
    }
    if (next == NULL) return;
  }
}


/* ---- the background progress thread ------------------------------------- */

typedef struct redcoll__bg {
  pthread_t thread;
  pthread_mutex_t mu;
  pthread_cond_t cv; /* a request started, or stop */
  int stop;
} redcoll__bg;

static int progress_ep(redcoll__endpoint *ep, uint64_t until_ns);

/* Sleeps while no request is outstanding on the endpoint; else progresses
 * in slices. */
static void *bg_main(void *arg) {
  redcoll__endpoint *ep = arg;
  pthread_mutex_lock(&ep->mu); /* published by the creator, who holds it */
  redcoll__bg *bg = ep->bg;
  pthread_mutex_unlock(&ep->mu);
  for (;;) {
    pthread_mutex_lock(&bg->mu);
    while (!bg->stop && __atomic_load_n(&ep->outstanding, __ATOMIC_ACQUIRE) == 0)
      pthread_cond_wait(&bg->cv, &bg->mu);
    int stop = bg->stop;
    pthread_mutex_unlock(&bg->mu);
    if (stop) return NULL;
    (void)progress_ep(ep, UINT64_MAX);
  }
}

/* A request starts: counted, and the progress thread woken. */
static void bg_wake(redcoll__endpoint *ep) {
  if (__atomic_add_fetch(&ep->outstanding, 1, __ATOMIC_ACQ_REL) != 1) return;
  /* ep->mu: the thread is not stopped and freed meanwhile. */
  pthread_mutex_lock(&ep->mu);
  redcoll__bg *bg = ep->bg;
  if (bg != NULL) {
    pthread_mutex_lock(&bg->mu);
    pthread_cond_signal(&bg->cv);
    pthread_mutex_unlock(&bg->mu);
  }
  pthread_mutex_unlock(&ep->mu);
}

void redcoll__nb_ep_stop(redcoll__endpoint *ep) {
  pthread_mutex_lock(&ep->mu);
  redcoll__bg *bg = ep->bg;
  ep->bg = NULL;
  pthread_mutex_unlock(&ep->mu);
  if (bg == NULL) return;
  pthread_mutex_lock(&bg->mu);
  bg->stop = 1;
  pthread_cond_signal(&bg->cv);
  pthread_mutex_unlock(&bg->mu);
  pthread_join(bg->thread, NULL);
  pthread_cond_destroy(&bg->cv);
  pthread_mutex_destroy(&bg->mu);
  free(bg);
}

REDCOLL_API int redcoll_comm_set_progress_thread(redcoll_comm *c, int on) {
  if (c == NULL) return REDCOLL_EINVAL;
  redcoll__endpoint *ep = c->ep;
  if (!on) {
    redcoll__nb_ep_stop(ep);
    return REDCOLL_OK;
  }
  if (!has_post(c) || !(ep->caps & REDCOLL_TRANSPORT_CAP_THREADS)) return REDCOLL_ENOTSUP;
  if (__atomic_load_n(&ep->bg, __ATOMIC_ACQUIRE) != NULL) return REDCOLL_OK;
  redcoll__bg *bg = calloc(1, sizeof *bg);
  if (bg == NULL) return REDCOLL_ENOMEM;
  if (pthread_mutex_init(&bg->mu, NULL) != 0 || pthread_cond_init(&bg->cv, NULL) != 0) {
    free(bg);
    return REDCOLL_ENOMEM;
  }
  /* The thread reads its record through ep->bg: published first. */
  pthread_mutex_lock(&ep->mu);
  ep->bg = bg;
  int rc = pthread_create(&bg->thread, NULL, bg_main, ep) != 0 ? REDCOLL_ENOMEM : REDCOLL_OK;
  if (rc != REDCOLL_OK) ep->bg = NULL;
  pthread_mutex_unlock(&ep->mu);
  if (rc != REDCOLL_OK) {
    pthread_cond_destroy(&bg->cv);
    pthread_mutex_destroy(&bg->mu);
    free(bg);
  }
  return rc;
}

/* A request of c, zeroed, and c's nonblocking state made if it was not;
 * NULL if memory is short. */
static redcoll_request *new_request(redcoll_comm *c) {
  redcoll_request *r = calloc(1, sizeof *r);
  if (r == NULL || nb_of(c) == NULL) {
    free(r);
    return NULL;
  }
  r->comm = c;
  return r;
}

int redcoll__nb_finished(redcoll_comm *c, int status, redcoll_request **req) {
  redcoll_request *r = new_request(c);
  if (r == NULL) return REDCOLL_ENOMEM;
  r->status = status;
  r->done = 1;
  *req = r;
  return REDCOLL_OK;
}

int redcoll__nb_start(const redcoll__call *call, int (*run)(redcoll__call *call),
                      redcoll_request **req) {
  redcoll_comm *c = call->comm;
  if (!has_post(c)) {
    /* A blocking transport: the whole collective now. */
    int rc = run((redcoll__call *)call);
    return redcoll__nb_finished(c, rc, req);
  }
  redcoll_request *r = new_request(c);
  if (r == NULL) return REDCOLL_ENOMEM;
  redcoll__nb *nb = c->nb;
  r->call = *call;
  r->run = run;
  bg_wake(c->ep);
  pthread_mutex_lock(&nb->mu);
  int first = nb->head == NULL;
  if (first) nb->head = r;
  else nb->tail->next = r;
  nb->tail = r;
  pthread_mutex_unlock(&nb->mu);
  *req = r;
  if (!first) return REDCOLL_OK;
  int rc = start_head(c, nb);
  if (rc != REDCOLL_OK) {
    redcoll_request *next = pop_head(nb);
    __atomic_sub_fetch(&c->ep->outstanding, 1, __ATOMIC_ACQ_REL);
    *req = NULL;
    free(r);
    /* Requests another thread queued meanwhile start, or fail, in turn. */
    while (next != NULL) {
      int next_rc = start_head(c, nb);
      if (next_rc == REDCOLL_OK) {
        drive(c);
        break;
      }
      redcoll_request *failed = next;
      next = pop_head(nb);
      finish(nb, failed, next_rc);
    }
    return rc;
  }
  drive(c);
  return REDCOLL_OK;
}

/* A waiting thread's longest sleep in progress on a transport with
 * threads: a request may finish on another thread just before this one
 * goes to sleep for it, and the transport cannot know this thread waits
 * for that one. */
#define NB_SLICE_NS 5000000u

static uint64_t transport_now(const redcoll__endpoint *ep) {
  if (ep->ops->now != NULL) return ep->ops->now(ep->impl);
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* One pass of the transport's progress: waits at most until until_ns
 * (UINT64_MAX: a slice, on a transport with threads). */
static int progress_ep(redcoll__endpoint *ep, uint64_t until_ns) {
  const redcoll_transport_ops *o = ep->ops;
  if (o->version < 4 || o->post == NULL || o->progress == NULL) return REDCOLL_OK;
  if (until_ns == UINT64_MAX && (ep->caps & REDCOLL_TRANSPORT_CAP_THREADS))
    until_ns = transport_now(ep) + NB_SLICE_NS;
  return o->progress(ep->impl, until_ns);
}

static int progress(redcoll_comm *c, uint64_t until_ns) { return progress_ep(c->ep, until_ns); }

static int is_done(const redcoll_request *r) { return __atomic_load_n(&r->done, __ATOMIC_ACQUIRE); }

/* Waits until r has finished.  A transport that reports itself broken
 * finishes its ops with that status; if it does not, the request gives up
 * after the transport said so twice in a row. */
static void wait_done(redcoll_request *r) {
  int broken = 0;
  while (!is_done(r)) {
    int rc = progress(r->comm, UINT64_MAX);
    if (rc == REDCOLL_OK) {
      broken = 0;
    } else if (++broken >= 2 && !is_done(r)) {
      redcoll__log(0, "rank %d: the transport failed (%s) and left a nonblocking collective "
                      "unfinished",
                   r->comm->rank, redcoll_status_name(rc));
      redcoll__fail(r->comm, rc);
      return;
    }
  }
}

REDCOLL_API int redcoll_wait(redcoll_request *req) {
  if (req == NULL) return REDCOLL_OK;
  int status;
  if (inside_own_callback(req, &status)) return status;
  wait_done(req);
  if (!is_done(req)) return __atomic_load_n(&req->comm->error, __ATOMIC_ACQUIRE);
  status = req->status;
  free(req);
  return status;
}

REDCOLL_API int redcoll_test(redcoll_request *req, int *done) {
  if (req == NULL || done == NULL) return REDCOLL_EINVAL;
  *done = 0;
  int status;
  if (inside_own_callback(req, &status)) {
    *done = 1;
    return status;
  }
  if (!is_done(req)) {
    int rc = progress(req->comm, 0);
    if (rc != REDCOLL_OK && !is_done(req)) return rc;
    if (!is_done(req)) return REDCOLL_OK;
  }
  *done = 1;
  status = req->status;
  free(req);
  return status;
}

REDCOLL_API int redcoll_waitall(redcoll_request **reqs, size_t n) {
  if (reqs == NULL && n > 0) return REDCOLL_EINVAL;
  int first = REDCOLL_OK;
  for (size_t i = 0; i < n; i++) {
    int rc = redcoll_wait(reqs[i]);
    reqs[i] = NULL;
    if (first == REDCOLL_OK) first = rc;
  }
  return first;
}

REDCOLL_API int redcoll_request_set_callback(redcoll_request *req, redcoll_request_fn fn,
                                             void *arg) {
  if (req == NULL || fn == NULL) return REDCOLL_EINVAL;
  redcoll__nb *nb = req->comm->nb;
  pthread_mutex_lock(&nb->mu);
  if (req->fn != NULL) {
    pthread_mutex_unlock(&nb->mu);
    return REDCOLL_EINVAL;
  }
  req->fn = fn;
  req->arg = arg;
  int done = is_done(req);
  pthread_mutex_unlock(&nb->mu);
  if (done) fn(req, req->status, arg);
  return REDCOLL_OK;
}

REDCOLL_API int redcoll_comm_progress(redcoll_comm *c) {
  if (c == NULL) return REDCOLL_EINVAL;
  return progress(c, 0);
}

REDCOLL_API int redcoll_comm_fd(redcoll_comm *c) {
  if (c == NULL || c->ops->version < 4 || c->ops->fd == NULL) return -1;
  return c->ops->fd(c->impl);
}

/* No request queued or running, and (outside a drive of this thread) no
 * callback still running on another thread. */
static int queue_empty(redcoll__nb *nb) {
  pthread_mutex_lock(&nb->mu);
  int empty = nb->head == NULL;
  pthread_mutex_unlock(&nb->mu);
  return empty && (in_drive > 0 || __atomic_load_n(&nb->driving, __ATOMIC_ACQUIRE) == 0);
}

void redcoll__nb_drain(redcoll_comm *c) {
  redcoll__nb *nb = __atomic_load_n(&c->nb, __ATOMIC_ACQUIRE);
  if (nb == NULL) return;
  int broken = 0;
  while (!queue_empty(nb)) {
    int rc = progress(c, UINT64_MAX);
    if (rc == REDCOLL_OK) {
      broken = 0;
    } else if (++broken >= 2 && !queue_empty(nb)) {
      redcoll__log(0, "rank %d: the transport failed (%s) and left nonblocking collectives "
                      "unfinished",
                   c->rank, redcoll_status_name(rc));
      redcoll__fail(c, rc);
      return;
    }
  }
}

void redcoll__nb_free(redcoll_comm *c) {
  redcoll__nb *nb = c->nb;
  if (nb == NULL) return;
  if (nb->head != NULL) {
    redcoll__log(0, "rank %d: communicator destroyed with nonblocking collectives outstanding; "
                    "they are aborted",
                 c->rank);
    redcoll__fail(c, REDCOLL_EABORTED);
    /* fail does not tell the peers of an EABORTED (it came from one); this
     * one is ours, and cancelling also ends the running exchange. */
    redcoll__comm_tell_peers(c, REDCOLL_EABORTED);
    redcoll__nb_drain(c);
    if (!queue_empty(nb)) {
      /* The transport failed to end them: an op may still be posted on nb,
       * which therefore stays allocated. */
      redcoll__log(0, "rank %d: nonblocking collectives left unfinished at destruction",
                   c->rank);
      c->nb = NULL;
      return;
    }
  }
  /* A progress thread may still be leaving drive after the last request. */
  while (__atomic_load_n(&nb->driving, __ATOMIC_ACQUIRE) != 0) sched_yield();
  if (nb->fiber_ready) redcoll__fiber_free(&nb->fiber);
  pthread_mutex_destroy(&nb->mu);
  free(nb);
  c->nb = NULL;
}
