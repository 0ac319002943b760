/*
 * The MPI transport (include/redcoll/mpi.h): redcoll's messages as MPI
 * point-to-point messages on a duplicate of the user's communicator.
 *
 * Wire.  A message is a 24-byte header (tag, length, channel) followed by
 * its payload: up to EAGER_MAX bytes of payload ride in the same MPI
 * message (copied through a bounce buffer), a larger payload follows as a
 * second MPI message on the same MPI tag, which the receiver posts
 * straight into the caller's buffer once the header has matched.  MPI
 * keeps messages of one (source, tag, communicator) in order, so the
 * payload is the next message after its header.
 *
 * Channels.  Channel group g (4 channels) of a communicator uses the MPI
 * tags 1 + 4 slot(g) .. 4 + 4 slot(g), slot(0) = 0 and slot(g) a hash of g
 * below MPI_TAG_UB / 4 otherwise; MPI tag 0 carries control messages
 * (abort, cancel).  A receive that meets a message of another
 * channel with the same MPI tag (two live groups hashed alike) keeps it
 * aside (the stash) and receives again; a later receive looks there
 * first.
 *
 * Waiting.  exchange posts its requests and polls them together with the
 * control receive, yielding the CPU between polls after the spin time,
 * until both sides are done, the deadline passes, or a control message
 * fails the call.  Requests left over by a failed call are cancelled
 * (receives) or freed (sends): the communicator is broken by then.
 *
 * Leftovers.  Open MPI hands a message that arrives for a freed
 * communicator to the next communicator that gets its context id, where
 * it would upset the matching of that one's messages.  So a transport that
 * saw an error, sent or received a control message, or still has messages
 * kept aside does not free its duplicate: it is left to MPI_Finalize.  For
 * the same reason close sends nothing: a peer still waiting on a group a
 * rank has closed waits until its deadline or timeout, as under MPI.
 */
#include <limits.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base.h"
#include "redcoll/mpi.h"
#include "redcoll/transport.h"

#define EAGER_MAX 4096
#define HDR_LEN 24
#define CTRL_TAG 0
#define DEFAULT_TIMEOUT_MS 300000
#define GROUP_OF(ch) ((ch) & ~(uint64_t)(REDCOLL_TRANSPORT_CHANNEL_GROUP - 1))
#define ALL_GROUPS UINT64_MAX

enum { CTRL_ABORT = 1, CTRL_CANCEL = 2 };

typedef struct hdr {
  uint64_t tag, len, chan;
} hdr;

typedef struct ctrl_msg {
  int32_t kind, status;
  uint64_t group;
} ctrl_msg;

/* A message received for a channel nobody was waiting on. */
typedef struct stashed {
  struct stashed *next;
  int peer;
  hdr h;
  void *data; /* h.len bytes */
} stashed;

/* Control messages sent to every peer, kept until MPI is done with them. */
typedef struct ctrl_batch {
  struct ctrl_batch *next;
  ctrl_msg msg;
  int n;
  MPI_Request *reqs;
} ctrl_batch;

typedef struct mp_impl {
  MPI_Comm comm;
  int rank, size;
  int slots;          /* MPI tags per 4 above CTRL_TAG: MPI_TAG_UB / 4 - 1 */
  int aborted;        /* a peer's abort (REDCOLL_EABORTED) or our own, 0 if none */
  int dirty;          /* messages may be left in flight: keep the duplicate */
  int64_t timeout_ms; /* bound on one wait; < 0: none */
  double ranks_per_cpu;
  MPI_Request ctrl_req;
  ctrl_msg ctrl_in;
  ctrl_batch *batches;
  uint64_t *cancelled; /* groups cancelled */
  size_t ncancelled;
  stashed *stash;
  hdr sh; /* the header of a large send, alive until its MPI send is done */
  unsigned char sbounce[HDR_LEN + EAGER_MAX], rbounce[HDR_LEN + EAGER_MAX];
} mp_impl;

/* ---- helpers -------------------------------------------------------------- */

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* An MPI error code as a redcoll status, logged once with MPI's words. */
static int mpi_status(mp_impl *m, int err, const char *what) {
  int cls = MPI_ERR_OTHER, len = 0;
  char msg[MPI_MAX_ERROR_STRING] = "";
  MPI_Error_class(err, &cls);
  MPI_Error_string(err, msg, &len);
  redcoll__log(0, "rank %d: mpi: %s: %s", m->rank, what, msg);
  if (cls == MPI_ERR_TRUNCATE) return REDCOLL_EMISMATCH;
  if (cls == MPI_ERR_NO_MEM) return REDCOLL_ENOMEM;
  return REDCOLL_ETRANSPORT;
}

static int data_tag(const mp_impl *m, uint64_t chan) {
  uint64_t g = GROUP_OF(chan), slot = 0;
  if (g != 0) {
    uint64_t x = g * 0x9e3779b97f4a7c15ULL;
    x ^= x >> 29;
    slot = 1 + x % (uint64_t)(m->slots - 1);
  }
  return (int)(1 + slot * 4 + (chan & 3));
}

static int is_cancelled(const mp_impl *m, uint64_t chan) {
  for (size_t i = 0; i < m->ncancelled; i++)
    if (m->cancelled[i] == GROUP_OF(chan)) return 1;
  return 0;
}

static void *grow(void *p, size_t n, size_t elem) {
  return realloc(p, (n + 1) * elem);
}

/* ---- control messages ----------------------------------------------------- */

/* Frees the batches MPI is done with; with force, all of them (their
 * requests are freed: MPI completes them on its own). */
static void reap_batches(mp_impl *m, int force) {
  for (ctrl_batch **b = &m->batches; *b != NULL;) {
    int done = 0;
    if (MPI_Testall((*b)->n, (*b)->reqs, &done, MPI_STATUSES_IGNORE) != MPI_SUCCESS) done = 0;
    if (!done && !force) {
      b = &(*b)->next;
      continue;
    }
    ctrl_batch *x = *b;
    *b = x->next;
    if (!done) {
      for (int i = 0; i < x->n; i++)
        if (x->reqs[i] != MPI_REQUEST_NULL) MPI_Request_free(&x->reqs[i]);
      continue; /* MPI may still read x->msg: left allocated */
    }
    free(x->reqs);
    free(x);
  }
}

/* Sends a control message to every peer without waiting. */
static void ctrl_send_all(mp_impl *m, int kind, int status, uint64_t group) {
  reap_batches(m, 0);
  ctrl_batch *b = calloc(1, sizeof *b);
  if (b == NULL) return;
  b->reqs = malloc((size_t)m->size * sizeof *b->reqs);
  if (b->reqs == NULL) {
    free(b);
    return;
  }
  b->msg = (ctrl_msg){kind, status, group};
  m->dirty = 1;
  for (int r = 0; r < m->size; r++) {
    if (r == m->rank) continue;
    if (MPI_Isend(&b->msg, (int)sizeof b->msg, MPI_BYTE, r, CTRL_TAG, m->comm, &b->reqs[b->n]) ==
        MPI_SUCCESS)
      b->n++;
  }
  b->next = m->batches;
  m->batches = b;
}

static void ctrl_post(mp_impl *m) {
  if (MPI_Irecv(&m->ctrl_in, (int)sizeof m->ctrl_in, MPI_BYTE, MPI_ANY_SOURCE, CTRL_TAG, m->comm,
                &m->ctrl_req) != MPI_SUCCESS)
    m->ctrl_req = MPI_REQUEST_NULL;
}

/* Takes every control message that has arrived. */
static void ctrl_poll(mp_impl *m) {
  while (m->ctrl_req != MPI_REQUEST_NULL) {
    int done = 0;
    MPI_Status st;
    if (MPI_Test(&m->ctrl_req, &done, &st) != MPI_SUCCESS || !done) return;
    ctrl_msg c = m->ctrl_in;
    ctrl_post(m);
    m->dirty = 1;
    if (c.kind == CTRL_ABORT) {
      if (m->aborted == 0)
        redcoll__log(1, "rank %d: mpi: rank %d aborted (%s)", m->rank, st.MPI_SOURCE,
                     redcoll_strerror(c.status));
      m->aborted = REDCOLL_EABORTED;
    } else if (c.kind == CTRL_CANCEL) {
      uint64_t *p = grow(m->cancelled, m->ncancelled, sizeof *p);
      if (p == NULL) {
        m->aborted = REDCOLL_EABORTED; /* cannot keep it apart: fail everything */
        continue;
      }
      m->cancelled = p;
      m->cancelled[m->ncancelled++] = c.group;
    }
  }
}

/* ---- the receive side ------------------------------------------------------ */

typedef enum { RX_NONE, RX_HDR, RX_BODY, RX_STASH_BODY, RX_DONE } rx_state;

typedef struct rx {
  rx_state state;
  const redcoll_transport_msg *msg;
  uint64_t chan;
  int mtag;
  MPI_Request req;
  stashed *pending; /* RX_STASH_BODY: the stashed message whose body comes */
} rx;

/* Checks a header against the receive; copies an inline payload. */
static int rx_match(mp_impl *m, rx *x, const hdr *h, const void *inline_data) {
  const redcoll_transport_msg *r = x->msg;
  if (h->tag != r->tag || h->len != r->len) {
    redcoll__log(1, "rank %d: mpi: message from %d has tag %llx length %llu, expected %llx %zu",
                 m->rank, r->peer, (unsigned long long)h->tag, (unsigned long long)h->len,
                 (unsigned long long)r->tag, r->len);
    return REDCOLL_EMISMATCH;
  }
  if (h->len <= EAGER_MAX) {
    if (h->len > 0) memcpy(r->buf, inline_data, h->len);
    x->state = RX_DONE;
    return REDCOLL_OK;
  }
  int e = MPI_Irecv(r->buf, (int)h->len, MPI_BYTE, r->peer, x->mtag, m->comm, &x->req);
  if (e != MPI_SUCCESS) return mpi_status(m, e, "receive");
  x->state = RX_BODY;
  return REDCOLL_OK;
}

static int rx_post_hdr(mp_impl *m, rx *x) {
  int e = MPI_Irecv(m->rbounce, (int)sizeof m->rbounce, MPI_BYTE, x->msg->peer, x->mtag, m->comm,
                    &x->req);
  if (e != MPI_SUCCESS) return mpi_status(m, e, "receive");
  x->state = RX_HDR;
  return REDCOLL_OK;
}

/* Starts a receive: from the stash if a message of its channel waits there. */
static int rx_start(mp_impl *m, rx *x) {
  for (stashed **s = &m->stash; *s != NULL; s = &(*s)->next) {
    if ((*s)->peer != x->msg->peer || (*s)->h.chan != x->chan) continue;
    stashed *t = *s;
    *s = t->next;
    const redcoll_transport_msg *r = x->msg;
    int rc = REDCOLL_EMISMATCH;
    if (t->h.tag == r->tag && t->h.len == r->len) {
      if (r->len > 0) memcpy(r->buf, t->data, r->len);
      x->state = RX_DONE;
      rc = REDCOLL_OK;
    }
    free(t->data);
    free(t);
    return rc;
  }
  return rx_post_hdr(m, x);
}

/* Keeps a message of another channel for later; its body, if large, is
 * received next. */
static int rx_stash(mp_impl *m, rx *x, const hdr *h, const void *inline_data) {
  stashed *t = calloc(1, sizeof *t);
  if (t == NULL) return REDCOLL_ENOMEM;
  t->peer = x->msg->peer;
  t->h = *h;
  t->data = malloc(h->len > 0 ? h->len : 1);
  if (t->data == NULL || h->len > (uint64_t)INT_MAX) {
    free(t->data);
    free(t);
    return REDCOLL_ENOMEM;
  }
  redcoll__log(3, "rank %d: mpi: kept a message of channel %llx from %d aside", m->rank,
               (unsigned long long)h->chan, t->peer);
  stashed **end = &m->stash;
  while (*end != NULL) end = &(*end)->next;
  *end = t;
  if (h->len <= EAGER_MAX) {
    if (h->len > 0) memcpy(t->data, inline_data, h->len);
    return rx_post_hdr(m, x);
  }
  int e = MPI_Irecv(t->data, (int)h->len, MPI_BYTE, t->peer, x->mtag, m->comm, &x->req);
  if (e != MPI_SUCCESS) return mpi_status(m, e, "receive");
  x->pending = t;
  x->state = RX_STASH_BODY;
  return REDCOLL_OK;
}

/* Moves a receive on as far as it goes without waiting. */
static int rx_progress(mp_impl *m, rx *x) {
  while (x->state == RX_HDR || x->state == RX_BODY || x->state == RX_STASH_BODY) {
    int done = 0;
    MPI_Status st;
    int e = MPI_Test(&x->req, &done, &st);
    if (e != MPI_SUCCESS) return mpi_status(m, e, "receive");
    if (!done) return REDCOLL_OK;
    if (x->state == RX_BODY) {
      x->state = RX_DONE;
    } else if (x->state == RX_STASH_BODY) {
      x->pending = NULL;
      int rc = rx_post_hdr(m, x);
      if (rc != REDCOLL_OK) return rc;
    } else {
      int n = 0;
      MPI_Get_count(&st, MPI_BYTE, &n);
      hdr h;
      memcpy(&h, m->rbounce, sizeof h);
      if (n < HDR_LEN || (h.len <= EAGER_MAX && (uint64_t)n != HDR_LEN + h.len) ||
          (h.len > EAGER_MAX && n != HDR_LEN)) {
        redcoll__log(0, "rank %d: mpi: malformed message of %d bytes from %d", m->rank, n,
                     x->msg->peer);
        return REDCOLL_EPROTO;
      }
      int rc = h.chan == x->chan ? rx_match(m, x, &h, m->rbounce + HDR_LEN)
                                 : rx_stash(m, x, &h, m->rbounce + HDR_LEN);
      if (rc != REDCOLL_OK) return rc;
    }
  }
  return REDCOLL_OK;
}

/* ---- the vtable ------------------------------------------------------------ */

static void cancel_recv(MPI_Request *req) {
  if (*req == MPI_REQUEST_NULL) return;
  MPI_Cancel(req);
  MPI_Wait(req, MPI_STATUS_IGNORE);
}

static void drop_send(MPI_Request *req) {
  if (*req != MPI_REQUEST_NULL) MPI_Request_free(req);
}

static int mp_exchange(void *impl, const redcoll_transport_ctx *ctx,
                       const redcoll_transport_msg *send, const redcoll_transport_msg *recv) {
  mp_impl *m = impl;
  ctrl_poll(m);
  if (m->aborted) return REDCOLL_EABORTED;
  if (is_cancelled(m, ctx->channel)) return REDCOLL_EABORTED;
  if ((send && send->len > (size_t)INT_MAX) || (recv && recv->len > (size_t)INT_MAX)) {
    redcoll__log(0, "rank %d: mpi: messages over 2 GiB are not supported", m->rank);
    return REDCOLL_ENOTSUP;
  }
  int mtag = data_tag(m, ctx->channel), rc = REDCOLL_OK, e;
  MPI_Request sreq[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
  rx x = {RX_NONE, recv, ctx->channel, mtag, MPI_REQUEST_NULL, NULL};
  if (send != NULL) {
    hdr h = {send->tag, send->len, ctx->channel};
    if (send->len <= EAGER_MAX) {
      memcpy(m->sbounce, &h, sizeof h);
      if (send->len > 0) memcpy(m->sbounce + HDR_LEN, send->buf, send->len);
      e = MPI_Isend(m->sbounce, (int)(HDR_LEN + send->len), MPI_BYTE, send->peer, mtag, m->comm,
                    &sreq[0]);
    } else {
      m->sh = h;
      e = MPI_Isend(&m->sh, HDR_LEN, MPI_BYTE, send->peer, mtag, m->comm, &sreq[0]);
      if (e == MPI_SUCCESS)
        e = MPI_Isend(send->buf, (int)send->len, MPI_BYTE, send->peer, mtag, m->comm, &sreq[1]);
    }
    if (e != MPI_SUCCESS) {
      rc = mpi_status(m, e, "send");
      goto out;
    }
  }
  if (recv != NULL) {
    rc = rx_start(m, &x);
    if (rc != REDCOLL_OK) goto out;
  }
  uint64_t start = now_ns(), spin = redcoll__spin_ns();
  uint64_t limit = m->timeout_ms < 0 ? UINT64_MAX : start + (uint64_t)m->timeout_ms * 1000000u;
  for (;;) {
    int sdone = 1;
    if (sreq[0] != MPI_REQUEST_NULL || sreq[1] != MPI_REQUEST_NULL) {
      e = MPI_Testall(2, sreq, &sdone, MPI_STATUSES_IGNORE);
      if (e != MPI_SUCCESS) {
        rc = mpi_status(m, e, "send");
        goto out;
      }
    }
    if (recv != NULL) {
      rc = rx_progress(m, &x);
      if (rc != REDCOLL_OK) goto out;
    }
    if (sdone && (recv == NULL || x.state == RX_DONE)) break;
    ctrl_poll(m);
    if (m->aborted || is_cancelled(m, ctx->channel)) {
      rc = REDCOLL_EABORTED;
      goto out;
    }
    uint64_t t = now_ns();
    if (t >= ctx->deadline_ns || t >= limit) {
      redcoll__log(0, "rank %d: mpi: timed out waiting for %s %d", m->rank,
                   recv != NULL && x.state != RX_DONE ? "a message from" : "a send to",
                   recv != NULL && x.state != RX_DONE ? recv->peer : send->peer);
      rc = REDCOLL_ETIMEDOUT;
      goto out;
    }
    if (t - start >= spin) sched_yield();
  }
out:
  if (rc != REDCOLL_OK) {
    m->dirty = 1;
    if (x.state == RX_HDR || x.state == RX_BODY || x.state == RX_STASH_BODY) cancel_recv(&x.req);
    drop_send(&sreq[0]);
    drop_send(&sreq[1]);
  }
  return rc;
}

static int mp_info(void *impl, redcoll_transport_info *info) {
  mp_impl *m = impl;
  strcpy(info->name, "mpi");
  info->ranks_per_cpu = m->ranks_per_cpu;
  info->caps = REDCOLL_TRANSPORT_CAP_CHANNELS;
  return REDCOLL_OK;
}

static void mp_abort(void *impl, int status) {
  mp_impl *m = impl;
  if (m->aborted) return;
  m->aborted = REDCOLL_EABORTED;
  ctrl_send_all(m, CTRL_ABORT, status, ALL_GROUPS);
}

static void mp_cancel(void *impl, uint64_t channel, int status) {
  mp_impl *m = impl;
  if (is_cancelled(m, channel)) return;
  uint64_t *p = grow(m->cancelled, m->ncancelled, sizeof *p);
  if (p != NULL) {
    m->cancelled = p;
    m->cancelled[m->ncancelled++] = GROUP_OF(channel);
  }
  ctrl_send_all(m, CTRL_CANCEL, status, GROUP_OF(channel));
}

static void mp_close(void *impl, uint64_t channel) {
  mp_impl *m = impl;
  uint64_t g = GROUP_OF(channel);
  for (stashed **s = &m->stash; *s != NULL;) {
    if (GROUP_OF((*s)->h.chan) != g) {
      s = &(*s)->next;
      continue;
    }
    stashed *t = *s;
    *s = t->next;
    free(t->data);
    free(t);
  }
}

static void mp_destroy(void *impl) {
  mp_impl *m = impl;
  cancel_recv(&m->ctrl_req);
  /* Control messages go out eagerly; give them a moment, then let MPI
   * finish them on its own. */
  uint64_t until = now_ns() + 10000000u;
  while (m->batches != NULL && now_ns() < until) reap_batches(m, 0);
  reap_batches(m, 1);
  if (m->stash != NULL) m->dirty = 1;
  while (m->stash != NULL) {
    stashed *t = m->stash;
    m->stash = t->next;
    free(t->data);
    free(t);
  }
  int finalized = 1;
  MPI_Finalized(&finalized);
  if (!finalized && !m->dirty) PMPI_Comm_free(&m->comm);
  free(m->cancelled);
  free(m);
}

static const redcoll_transport_ops mp_ops = {
    .version = REDCOLL_TRANSPORT_VERSION,
    .info = mp_info,
    .exchange = mp_exchange,
    .abort = mp_abort,
    .destroy = mp_destroy,
    .cancel = mp_cancel,
    .close = mp_close,
};

/* ---- construction ---------------------------------------------------------- */

static int resolve_timeout(int64_t *out) {
  uint64_t ms = 0;
  int rc = redcoll__env_u64("REDCOLL_TIMEOUT_MS", UINT64_MAX, &ms);
  if (rc == REDCOLL__ENV_UNSET) ms = DEFAULT_TIMEOUT_MS;
  else if (rc != REDCOLL_OK) {
    redcoll__log(0, "mpi: REDCOLL_TIMEOUT_MS=%s is not a number of milliseconds",
                 redcoll__env("REDCOLL_TIMEOUT_MS"));
    return REDCOLL_EINVAL;
  }
  *out = ms == 0 || ms == REDCOLL_WAIT_FOREVER || ms > (uint64_t)INT64_MAX / 1000000 ? -1
                                                                                     : (int64_t)ms;
  return REDCOLL_OK;
}

/* The most ranks per CPU on any host of the communicator, the CPUs of a
 * host being the union of its ranks' affinity masks (a launcher that binds
 * each rank to a core gives each a mask of one). */
static int ranks_per_cpu(MPI_Comm comm, double *out) {
  MPI_Comm node;
  int n = 1;
  if (PMPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) != MPI_SUCCESS)
    return MPI_ERR_OTHER;
  MPI_Comm_size(node, &n);
  /* A rank whose mask is not known (all zero) sends all ones: the union is
   * then of no use, and the online count decides. */
  uint64_t mine[REDCOLL__CPU_MASK_WORDS], all[REDCOLL__CPU_MASK_WORDS];
  if (!redcoll__cpu_mask(mine, REDCOLL__CPU_MASK_WORDS)) memset(mine, 0xff, sizeof mine);
  int rc = PMPI_Allreduce(mine, all, REDCOLL__CPU_MASK_WORDS, MPI_UINT64_T, MPI_BOR, node);
  PMPI_Comm_free(&node);
  if (rc != MPI_SUCCESS) return rc;
  int unknown = 1;
  for (int i = 0; i < REDCOLL__CPU_MASK_WORDS; i++) unknown &= all[i] == UINT64_MAX;
  double here = redcoll__ranks_per_cpu(n, unknown ? NULL : all, REDCOLL__CPU_MASK_WORDS);
  return PMPI_Allreduce(&here, out, 1, MPI_DOUBLE, MPI_MAX, comm);
}

REDCOLL_API int redcoll_mpi_comm_create(MPI_Comm comm, redcoll_comm **out) {
  if (out == NULL) return REDCOLL_EINVAL;
  *out = NULL;
  int init = 0, fin = 0, inter = 0;
  MPI_Initialized(&init);
  MPI_Finalized(&fin);
  if (!init || fin || comm == MPI_COMM_NULL) {
    redcoll__log(0, "mpi: %s", !init || fin ? "MPI is not initialised" : "MPI_COMM_NULL");
    return REDCOLL_EINVAL;
  }
  if (MPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS || inter) {
    redcoll__log(0, "mpi: an inter-communicator has no redcoll communicator");
    return REDCOLL_EINVAL;
  }
  int64_t timeout;
  int rc = resolve_timeout(&timeout);
  if (rc != REDCOLL_OK) return rc;
  mp_impl *m = calloc(1, sizeof *m);
  if (m == NULL) return REDCOLL_ENOMEM;
  m->timeout_ms = timeout;
  m->ctrl_req = MPI_REQUEST_NULL;
  int e = PMPI_Comm_dup(comm, &m->comm);
  if (e != MPI_SUCCESS) {
    rc = mpi_status(m, e, "MPI_Comm_dup");
    free(m);
    return rc;
  }
  MPI_Comm_set_errhandler(m->comm, MPI_ERRORS_RETURN);
  MPI_Comm_rank(m->comm, &m->rank);
  MPI_Comm_size(m->comm, &m->size);
  int *ub = NULL, flag = 0;
  MPI_Comm_get_attr(m->comm, MPI_TAG_UB, &ub, &flag);
  m->slots = (flag && ub != NULL ? *ub : 32767) / 4 - 1;
  /* For tests: fewer tags, so that channel groups share them. */
  uint64_t cap = 0;
  if (redcoll__env_u64("REDCOLL_MPI_TAG_SLOTS", (uint64_t)m->slots, &cap) == REDCOLL_OK && cap >= 2)
    m->slots = (int)cap;
  e = ranks_per_cpu(m->comm, &m->ranks_per_cpu);
  if (e != MPI_SUCCESS) {
    rc = mpi_status(m, e, "ranks per CPU");
    goto fail;
  }
  ctrl_post(m);
  if (m->ctrl_req == MPI_REQUEST_NULL) {
    rc = REDCOLL_ETRANSPORT;
    goto fail;
  }
  rc = redcoll_comm_create(&mp_ops, m, m->rank, m->size, out);
  if (rc == REDCOLL_OK) return REDCOLL_OK;
  cancel_recv(&m->ctrl_req);
fail:
  PMPI_Comm_free(&m->comm);
  free(m);
  return rc;
}

REDCOLL_API MPI_Comm redcoll_mpi_comm_get(const redcoll_comm *c) {
  mp_impl *m = c != NULL ? redcoll__comm_transport(c, &mp_ops) : NULL;
  return m != NULL ? m->comm : MPI_COMM_NULL;
}
