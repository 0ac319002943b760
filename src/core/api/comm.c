/* The communicator: creation from a transport vtable, its settings, abort,
 * the deadline of each collective and the tag of each call.  What
 * algorithms send and receive with is in algo/io.c. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "env.h"
#include "internal.h"

/* The members the struct's version requires. */
static int ops_valid(const redcoll_transport_ops *ops) {
  if (ops == NULL || ops->destroy == NULL) return 0;
  if (ops->version == 1 || ops->version == 2)
    return ops->send != NULL && ops->recv != NULL && ops->sendrecv != NULL;
  if (ops->version != 3 && ops->version != 4) return 0;
  if (ops->info == NULL || ops->exchange == NULL) return 0;
  /* posted exchanges: both members or neither */
  return ops->version == 3 || (ops->post == NULL) == (ops->progress == NULL);
}

/* Asks a version 3 transport about itself; checks the name. */
static int ask_info(redcoll_comm *c) {
  if (c->ops->version < 3) return REDCOLL_OK;
  int rc = c->ops->info(c->impl, &c->info);
  if (rc != REDCOLL_OK) return rc;
  if (memchr(c->info.name, '\0', sizeof c->info.name) == NULL) {
    redcoll__log(0, "rank %d: the transport's name is not a string of at most 15 characters",
                 c->rank);
    return REDCOLL_EINVAL;
  }
  redcoll__comm_set_ranks_per_cpu_detected(c, c->info.ranks_per_cpu);
  return REDCOLL_OK;
}

/* REDCOLL_ALGO_<COLL>=name forces an algorithm; an unknown or unsupported
 * name is an error, never a silent default. */
static int algos_from_env(redcoll_comm *c) {
  for (int coll = 0; coll < REDCOLL_COLL_COUNT; coll++) {
    char var[64] = "REDCOLL_ALGO_";
    const char *name = redcoll_coll_name((redcoll_coll)coll);
    size_t n = strlen(var);
    for (size_t i = 0; name[i] != '\0' && n + 1 < sizeof var; i++)
      var[n++] = (char)toupper((unsigned char)name[i]);
    var[n] = '\0';
    const char *val = redcoll__env(var);
    if (val == NULL) continue;
    redcoll_algo a;
    if (redcoll_algo_parse(val, &a) != REDCOLL_OK || !redcoll_algo_is_supported((redcoll_coll)coll, a)) {
      redcoll__log(0, "rank %d: %s=%s names no %s algorithm", c->rank, var, val, name);
      return REDCOLL_EINVAL;
    }
    c->algo[coll] = a;
  }
  return REDCOLL_OK;
}

/* REDCOLL_RESULTS=identical|fast; anything else is an error. */
static int results_from_env(redcoll_comm *c) {
  static const char *const words[] = {"identical", "fast", NULL};
  int w;
  int rc = redcoll__env_word("REDCOLL_RESULTS", words, &w);
  if (rc == REDCOLL__ENV_UNSET) return REDCOLL_OK;
  if (rc != REDCOLL_OK) {
    redcoll__log(0, "rank %d: REDCOLL_RESULTS=%s: expected identical or fast", c->rank,
                 redcoll__env("REDCOLL_RESULTS"));
    return REDCOLL_EINVAL;
  }
  if (w == 1) c->results = REDCOLL_RESULTS_FAST;
  return REDCOLL_OK;
}

/* REDCOLL_SEGMENT_KB: the segment of piped steps (redcoll_comm_set_segment);
 * a bad value fails the creation, as the ranks must agree. */
static int segment_from_env(redcoll_comm *c) {
  uint64_t kb;
  int rc = redcoll__env_u64("REDCOLL_SEGMENT_KB", (uint64_t)1 << 30, &kb);
  if (rc == REDCOLL__ENV_UNSET) return REDCOLL_OK;
  if (rc != REDCOLL_OK) {
    redcoll__log(0, "rank %d: REDCOLL_SEGMENT_KB=%s: expected a number of KiB from 0 to 1073741824",
                 c->rank, redcoll__env("REDCOLL_SEGMENT_KB"));
    return REDCOLL_EINVAL;
  }
  c->segment = (size_t)kb * 1024;
  c->segment_set = 1;
  return REDCOLL_OK;
}

/* The settings every new communicator starts from. */
static void comm_defaults(redcoll_comm *c, redcoll__endpoint *ep, int rank, int size) {
  c->ep = ep;
  c->ops = ep->ops;
  c->impl = ep->impl;
  c->rank = rank;
  c->size = size;
  c->threshold = REDCOLL_DEFAULT_THRESHOLD;
  c->segment = REDCOLL_DEFAULT_SEGMENT;
  c->last_algo = REDCOLL_ALGO_AUTO;
  c->results = REDCOLL_RESULTS_IDENTICAL;
  c->deadline_ns = UINT64_MAX;
  c->owns_channels = 1;
}

static void ep_free(redcoll__endpoint *ep) {
  pthread_mutex_destroy(&ep->mu);
  free(ep->chans);
  free(ep);
}

/* On failure impl stays the caller's: ops->destroy is called only by
 * redcoll_comm_destroy of a communicator this function returned. */
REDCOLL_API int redcoll_comm_create(const redcoll_transport_ops *ops, void *impl, int rank, int size,
                                    redcoll_comm **out) {
  if (out == NULL) return REDCOLL_EINVAL;
  *out = NULL;
  if (!ops_valid(ops) || size < 1 || rank < 0 || rank >= size) return REDCOLL_EINVAL;
  redcoll_comm *c = calloc(1, sizeof *c);
  redcoll__endpoint *ep = calloc(1, sizeof *ep);
  if (c == NULL || ep == NULL || pthread_mutex_init(&ep->mu, NULL) != 0) {
    free(c);
    free(ep);
    return REDCOLL_ENOMEM;
  }
  ep->ops = ops;
  ep->impl = impl;
  ep->rank = rank;
  ep->size = size;
  ep->refs = 1;
  comm_defaults(c, ep, rank, size);
  int rc = ask_info(c);
  if (rc == REDCOLL_OK) {
    ep->caps = ops->version >= 3 ? c->info.caps : 0;
    int chans = (ep->caps & REDCOLL_TRANSPORT_CAP_CHANNELS) != 0;
    if (chans && (ops->cancel == NULL || ops->close == NULL)) {
      redcoll__log(0, "rank %d: the transport has channels but no cancel or close member", rank);
      rc = REDCOLL_EINVAL;
    }
  }
  if (rc == REDCOLL_OK && !redcoll__chan_reserve(c, 0)) rc = REDCOLL_ENOMEM;
  if (rc == REDCOLL_OK) rc = algos_from_env(c);
  if (rc == REDCOLL_OK) rc = results_from_env(c);
  if (rc == REDCOLL_OK) rc = segment_from_env(c);
  if (rc != REDCOLL_OK) {
    ep_free(ep);
    free(c);
    return rc;
  }
  *out = c;
  return REDCOLL_OK;
}

int redcoll__comm_derive(redcoll_comm *p, int rank, int size, int *map, uint64_t ch,
                         redcoll_comm **out) {
  *out = NULL;
  redcoll_comm *c = calloc(1, sizeof *c);
  if (c == NULL) return REDCOLL_ENOMEM;
  comm_defaults(c, p->ep, rank, size);
  c->map = map;
  c->channel = ch;
  c->info = p->info;
  c->rpc_detected = p->rpc_detected;
  int rc = algos_from_env(c);
  if (rc == REDCOLL_OK) rc = results_from_env(c);
  if (rc == REDCOLL_OK) rc = segment_from_env(c);
  if (rc != REDCOLL_OK) {
    free(c);
    return rc;
  }
  __atomic_add_fetch(&p->ep->refs, 1, __ATOMIC_ACQ_REL);
  *out = c;
  return REDCOLL_OK;
}

REDCOLL__HIDDEN int redcoll__comm_endpoint(const redcoll_comm *c, const redcoll_transport_ops **ops,
                                           void **impl, uint64_t *channel, const int **map,
                                           unsigned *caps) {
  if (c == NULL) return REDCOLL_EINVAL;
  *ops = c->ops;
  *impl = c->impl;
  *channel = c->channel;
  *map = c->map;
  *caps = c->ep->caps;
  return REDCOLL_OK;
}

int redcoll__chan_reserve(redcoll_comm *c, uint64_t ch) {
  redcoll__endpoint *ep = c->ep;
  int ok = 1;
  pthread_mutex_lock(&ep->mu);
  for (size_t i = 0; i < ep->nchans && ok; i++) ok = ep->chans[i] != ch;
  if (ok && ep->nchans == ep->chans_cap) {
    size_t cap = ep->chans_cap ? ep->chans_cap * 2 : 4;
    uint64_t *n = realloc(ep->chans, cap * sizeof *n);
    if (n == NULL) ok = 0;
    else {
      ep->chans = n;
      ep->chans_cap = cap;
    }
  }
  if (ok) ep->chans[ep->nchans++] = ch;
  pthread_mutex_unlock(&ep->mu);
  return ok;
}

void redcoll__chan_release(redcoll__endpoint *ep, uint64_t ch) {
  pthread_mutex_lock(&ep->mu);
  for (size_t i = 0; i < ep->nchans; i++)
    if (ep->chans[i] == ch) {
      ep->chans[i] = ep->chans[--ep->nchans];
      break;
    }
  pthread_mutex_unlock(&ep->mu);
}

REDCOLL_API int redcoll_comm_set_results(redcoll_comm *c, redcoll_results mode) {
  if (c == NULL || (mode != REDCOLL_RESULTS_IDENTICAL && mode != REDCOLL_RESULTS_FAST))
    return REDCOLL_EINVAL;
  c->results = mode;
  return REDCOLL_OK;
}

REDCOLL_API redcoll_results redcoll_comm_get_results(const redcoll_comm *c) {
  return c != NULL ? c->results : REDCOLL_RESULTS_IDENTICAL;
}

void *redcoll__comm_transport(const redcoll_comm *c, const redcoll_transport_ops *ops) {
  return c != NULL && c->ops == ops ? c->impl : NULL;
}

REDCOLL_API int redcoll_comm_rank(const redcoll_comm *c) { return c ? c->rank : REDCOLL_EINVAL; }
REDCOLL_API int redcoll_comm_size(const redcoll_comm *c) { return c ? c->size : REDCOLL_EINVAL; }
REDCOLL_API int redcoll_comm_error(const redcoll_comm *c) {
  return c ? __atomic_load_n(&c->error, __ATOMIC_ACQUIRE) : REDCOLL_EINVAL;
}

/* The last communicator on a transport destroys it; one of several closes
 * its channels there.  Its channel group stays reserved on the endpoint
 * (retired): no later communicator uses it, so a late message or CLOSE of
 * this one can never meet that communicator's calls. */
REDCOLL_API void redcoll_comm_destroy(redcoll_comm *c) {
  if (c == NULL) return;
  redcoll__nb_free(c);
  redcoll__hier_free(c);
  redcoll__endpoint *ep = c->ep;
  int last = __atomic_sub_fetch(&ep->refs, 1, __ATOMIC_ACQ_REL) == 0;
  if (last) {
    redcoll__nb_ep_stop(ep);
    ep->ops->destroy(ep->impl);
    ep_free(ep);
  } else {
    if (ep->caps & REDCOLL_TRANSPORT_CAP_CHANNELS) ep->ops->close(ep->impl, c->channel);
  }
  free(c->map);
  free(c->scratch[0]);
  free(c->scratch[1]);
  free(c);
}

REDCOLL_API int redcoll_comm_set_algorithm(redcoll_comm *c, redcoll_coll coll, redcoll_algo algo) {
  if (c == NULL || (unsigned)coll >= REDCOLL_COLL_COUNT || (unsigned)algo >= REDCOLL_ALGO_COUNT)
    return REDCOLL_EINVAL;
  if (!redcoll_algo_is_supported(coll, algo)) return REDCOLL_ENOTSUP;
  c->algo[coll] = algo;
  return REDCOLL_OK;
}

REDCOLL_API redcoll_algo redcoll_comm_get_algorithm(const redcoll_comm *c, redcoll_coll coll) {
  if (c == NULL || (unsigned)coll >= REDCOLL_COLL_COUNT) return REDCOLL_ALGO_AUTO;
  return c->algo[coll];
}

REDCOLL_API redcoll_algo redcoll_comm_last_algorithm(const redcoll_comm *c) {
  return c ? c->last_algo : REDCOLL_ALGO_AUTO;
}

REDCOLL_API int redcoll_comm_set_threshold(redcoll_comm *c, size_t bytes) {
  if (c == NULL || bytes == 0) return REDCOLL_EINVAL;
  c->threshold = bytes;
  return REDCOLL_OK;
}

REDCOLL_API size_t redcoll_comm_get_threshold(const redcoll_comm *c) {
  return c ? c->threshold : 0;
}

REDCOLL_API int redcoll_comm_set_segment(redcoll_comm *c, size_t bytes) {
  if (c == NULL) return REDCOLL_EINVAL;
  c->segment = bytes;
  c->segment_set = 1;
  return REDCOLL_OK;
}

REDCOLL_API size_t redcoll_comm_get_segment(const redcoll_comm *c) {
  return c ? c->segment : 0;
}

REDCOLL_API int redcoll_comm_set_deadline(redcoll_comm *c, uint64_t ms) {
  if (c == NULL) return REDCOLL_EINVAL;
  if (c->ops->version == 2 && c->ops->set_timeout != NULL) {
    /* A version 2 transport measures the deadline itself. */
    int rc = c->ops->set_timeout(c->impl, ms);
    if (rc != REDCOLL_OK) return rc;
  } else if (c->ops->version < 3) {
    return REDCOLL_ENOTSUP;
  }
  c->timeout_ms = ms;
  return REDCOLL_OK;
}

static uint64_t clock_ns(const redcoll_comm *c) {
  if (c->ops->now != NULL) return c->ops->now(c->impl);
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t redcoll__comm_deadline(const redcoll_comm *c) {
  if (c->ops->version < 3 || c->timeout_ms == 0) return UINT64_MAX;
  uint64_t now = clock_ns(c), span = c->timeout_ms;
  span = span > (UINT64_MAX - now) / 1000000u ? UINT64_MAX - now : span * 1000000u;
  return now + span;
}

void redcoll__comm_start_deadline(redcoll_comm *c) { c->deadline_ns = redcoll__comm_deadline(c); }

REDCOLL_API uint64_t redcoll_comm_get_deadline(const redcoll_comm *c) {
  return c ? c->timeout_ms : 0;
}

REDCOLL_API int redcoll_comm_abort(redcoll_comm *c) {
  if (c == NULL) return REDCOLL_EINVAL;
  int ok = REDCOLL_OK;
  if (!__atomic_compare_exchange_n(&c->error, &ok, REDCOLL_EABORTED, 0, __ATOMIC_ACQ_REL,
                                   __ATOMIC_ACQUIRE))
    return REDCOLL_OK; /* broken: the peers know */
  redcoll__log(2, "rank %d: communicator aborted by the application", c->rank);
  if (!(c->ep->caps & REDCOLL_TRANSPORT_CAP_CHANNELS) && c->ops->abort == NULL)
    return REDCOLL_ENOTSUP;
  redcoll__comm_tell_peers(c, REDCOLL_EABORTED);
  return REDCOLL_OK;
}


uint64_t redcoll__make_tag(uint64_t seq, redcoll_coll coll, uint64_t count, redcoll_dtype dt,
                           const redcoll_op *op, int root) {
  uint64_t h = redcoll__mix64(0x726564636f6c6cULL ^ (uint64_t)coll);
  h = redcoll__mix64(h ^ count);
  h = redcoll__mix64(h ^ (uint64_t)dt);
  if (op != NULL) {
    h = redcoll__mix64(h ^ (uint64_t)op->id);
    h = redcoll__mix64(h ^ ((uint64_t)op->elem_size << 1 | (uint64_t)(op->commutative != 0)));
  }
  h = redcoll__mix64(h ^ (uint64_t)(int64_t)root);
  return (seq & 0xffffffULL) << 40 | (h & 0xfffffffff0ULL); /* phase 0 */
}
