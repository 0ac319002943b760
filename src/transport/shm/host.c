/*
 * The shared-memory path inside another transport (TCP): which ranks share
 * this host, and a transport that sends to those through a shared-memory
 * transport of their own and to the others through the network one.
 *
 * A host is the kernel's boot id (/proc/sys/kernel/random/boot_id), the
 * inode of the network namespace (/proc/self/ns/net) and the user id:
 * processes with all three equal can map one segment and read each other's
 * memory; a hostname cannot tell two containers of one machine apart, or
 * one machine from its clone.  REDCOLL_SHM_HOST_ID replaces the three (for
 * tests that fake several hosts on one machine).  Every rank sends its
 * host's 16-byte digest, with its kernel's boot id, CPU count and its own
 * CPU mask (ID_WORDS in shm_int.h), to every other by a ring allgather over
 * the network transport, on a channel group of its own that is closed
 * afterwards.  Ranks of one kernel share its CPUs whatever their hosts
 * (containers, network namespaces): the ranks per CPU that the core's
 * model needs come from the busiest kernel.
 *
 * The ranks of one host (in the order of their ranks) make a shared-memory
 * transport whose segment is named after the user, the job id and the
 * lowest rank of the host.  An exchange whose halves both go to this host,
 * or both elsewhere, is handed to one transport; one with a half of each
 * runs the shared-memory half on a helper thread of this impl while the
 * calling thread runs the network half, so both progress at once.  A half
 * that fails cancels the channel group on the other transport, which ends
 * the other half at once (the core cancels the group on both next anyway).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "shm_int.h"

/* The channel group of the host identities (never one of the core's). */
#define HOST_CHANNEL (UINT64_MAX & ~(uint64_t)(REDCOLL_TRANSPORT_CHANNEL_GROUP - 1))
#define HOST_TAG 0x4853544944ull /* "HSTID" */

typedef struct host_helper {
  struct host_helper *next_idle, *next_all;
  pthread_t tid;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int job, done, quit;
  void *shm;
  redcoll_transport_ctx ctx;
  redcoll_transport_msg msg;
  int is_send;
  int rc;
  /* What the helper cancels on the network transport if its half fails. */
  const redcoll_transport_ops *net_ops;
  void *net;
} host_helper;

typedef struct host_impl {
  const redcoll_transport_ops *net_ops;
  void *net;
  shm_impl *shm;
  int rank, size;
  int *local; /* rank -> its index among the ranks of this host, or -1 */
  int *world; /* the other way: index -> rank */
  pthread_mutex_t mu;
  host_helper *idle, *all;
  uint32_t *hosts; /* rank -> its host's index (info) */
  /* Posted exchanges (under mu): the halves outstanding on each inner
   * transport, those over and not yet delivered, and the pump. */
  int n_shm, n_net;
  struct host_pop *fin, *fin_tail;
  int waiting;     /* threads in progress */
  pthread_t pump;
  pthread_cond_t pump_cv;
  int pump_made, pump_on, pump_quit;
  int pump_busy;  /* the pump is in the network's progress */
  int net_direct; /* a thread waits in the network's progress itself */
  uint64_t pump_until;
} host_impl;

static const redcoll_transport_ops host_ops;

/* ---- the host's identity ---- */

static uint64_t fnv(uint64_t h, const void *p, size_t n) {
  const unsigned char *s = p;
  for (size_t i = 0; i < n; i++) {
    h ^= s[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

static void host_id(uint64_t *id) {
  char buf[160], boot[64];
  const char *over = redcoll__env("REDCOLL_SHM_HOST_ID");
  int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
  ssize_t k = fd >= 0 ? read(fd, boot, sizeof boot) : -1;
  if (fd >= 0) close(fd);
  size_t nb = k > 0 ? (size_t)k : 0;
  if (k <= 0) /* no boot id: this process is a host (and kernel) of its own */
    nb = (size_t)snprintf(boot, sizeof boot, "pid:%d", (int)getpid());
  if (nb > sizeof boot) nb = sizeof boot;
  size_t n = 0;
  if (over != NULL) {
    n = (size_t)snprintf(buf, sizeof buf, "override:%s", over);
  } else {
    memcpy(buf, boot, nb);
    n = nb;
    struct stat st;
    unsigned long long ino = stat("/proc/self/ns/net", &st) == 0 ? (unsigned long long)st.st_ino : 0;
    n += (size_t)snprintf(buf + n, sizeof buf - n, ":%llu:%u", ino, (unsigned)getuid());
  }
  if (n > sizeof buf) n = sizeof buf;
  id[ID_HOST] = fnv(0xcbf29ce484222325ull, buf, n);
  id[ID_HOST + 1] = fnv(0x84222325cbf29ce4ull, buf, n);
  id[ID_KERNEL] = fnv(0x9e3779b97f4a7c15ull, boot, nb);
  long online = sysconf(_SC_NPROCESSORS_ONLN);
  id[ID_ONLINE] = online > 0 ? (uint64_t)online : 0;
  redcoll__cpu_mask(&id[ID_MASK], ID_MASK_WORDS); /* all zero: the count decides */
}

static int same_host(const uint64_t *ids, int a, int b) {
  return ids[ID_WORDS * a + ID_HOST] == ids[ID_WORDS * b + ID_HOST] &&
         ids[ID_WORDS * a + ID_HOST + 1] == ids[ID_WORDS * b + ID_HOST + 1];
}

/* Every rank's words into ids (ID_WORDS per rank): a ring allgather over
 * the network transport. */
static int gather_ids(const redcoll_transport_ops *ops, void *net, int rank, int size,
                      uint64_t *ids) {
  host_id(&ids[ID_WORDS * rank]);
  redcoll_transport_ctx ctx = {UINT64_MAX, 0, HOST_CHANNEL};
  int right = (rank + 1) % size, left = (rank + size - 1) % size, rc = REDCOLL_OK;
  size_t len = ID_WORDS * sizeof *ids;
  for (int k = 0; k < size - 1 && rc == REDCOLL_OK; k++) {
    int out = (rank - k + size) % size, in = (rank - k - 1 + size) % size;
    redcoll_transport_msg s = {right, HOST_TAG + (uint64_t)k, &ids[ID_WORDS * out], len};
    redcoll_transport_msg r = {left, HOST_TAG + (uint64_t)k, &ids[ID_WORDS * in], len};
    rc = ops->exchange(net, &ctx, &s, &r);
  }
  ops->close(net, HOST_CHANNEL);
  return rc;
}

/* The host index of every rank (ids as gather_ids fills them): hosts
 * numbered from 0 in the order of their lowest ranks; NULL if memory is
 * short. */
static uint32_t *number_hosts(const uint64_t *ids, int size) {
  uint32_t *hosts = malloc((size_t)size * sizeof *hosts);
  if (hosts == NULL) return NULL;
  uint32_t n = 0;
  for (int r = 0; r < size; r++) {
    int first = 0;
    while (!same_host(ids, first, r)) first++;
    hosts[r] = first == r ? n++ : hosts[first];
  }
  return hosts;
}

double redcoll__shm_ranks_per_cpu(const uint64_t *ids, int size) {
  double worst = 1;
  for (int r = 0; r < size; r++) {
    const uint64_t *me = &ids[ID_WORDS * r];
    int first = 1, n = 0, full = 0;
    uint64_t mask[ID_MASK_WORDS] = {0}, online = 0;
    for (int q = 0; q < size && first; q++) {
      const uint64_t *w = &ids[ID_WORDS * q];
      if (w[ID_KERNEL] != me[ID_KERNEL]) continue;
      if (q < r) first = 0; /* counted at the kernel's first rank */
      n++;
      if (!redcoll__cpu_mask_add(mask, &w[ID_MASK], ID_MASK_WORDS))
        full = 1; /* no mask, or a CPU beyond it (host_id) */
      if (w[ID_ONLINE] > online) online = w[ID_ONLINE];
    }
    if (!first) continue;
    uint64_t cpus = 0;
    for (int i = 0; i < ID_MASK_WORDS; i++) cpus += (uint64_t)__builtin_popcountll(mask[i]);
    if (full || cpus == 0) cpus = online;
    if (cpus > 0 && (double)n / (double)cpus > worst) worst = (double)n / (double)cpus;
  }
  return worst;
}

/* ---- helpers for exchanges with a half of each kind ---- */

static void *helper_main(void *vp) {
  host_helper *w = vp;
  const redcoll_transport_ops *sops = redcoll__shm_ops();
  pthread_mutex_lock(&w->mu);
  for (;;) {
    while (!w->job && !w->quit) pthread_cond_wait(&w->cv, &w->mu);
    if (w->quit) break;
    pthread_mutex_unlock(&w->mu);
    int rc = sops->exchange(w->shm, &w->ctx, w->is_send ? &w->msg : NULL, w->is_send ? NULL : &w->msg);
    if (rc != REDCOLL_OK) w->net_ops->cancel(w->net, w->ctx.channel, rc);
    pthread_mutex_lock(&w->mu);
    w->rc = rc;
    w->job = 0;
    w->done = 1;
    pthread_cond_broadcast(&w->cv);
  }
  pthread_mutex_unlock(&w->mu);
  return NULL;
}

static host_helper *helper_get(host_impl *h) {
  pthread_mutex_lock(&h->mu);
  host_helper *w = h->idle;
  if (w != NULL) {
    h->idle = w->next_idle;
    pthread_mutex_unlock(&h->mu);
    return w;
  }
  pthread_mutex_unlock(&h->mu);
  w = calloc(1, sizeof *w);
  if (w == NULL) return NULL;
  pthread_mutex_init(&w->mu, NULL);
  pthread_cond_init(&w->cv, NULL);
  w->shm = h->shm;
  w->net_ops = h->net_ops;
  w->net = h->net;
  if (pthread_create(&w->tid, NULL, helper_main, w) != 0) {
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
    free(w);
    return NULL;
  }
  pthread_mutex_lock(&h->mu);
  w->next_all = h->all;
  h->all = w;
  pthread_mutex_unlock(&h->mu);
  return w;
}

static void helper_put(host_impl *h, host_helper *w) {
  pthread_mutex_lock(&h->mu);
  w->next_idle = h->idle;
  h->idle = w;
  pthread_mutex_unlock(&h->mu);
}

/* ---- the vtable ---- */

/* The first failure that is not the echo of another (EABORTED). */
static int worse(int a, int b) {
  if (a == REDCOLL_OK || (a == REDCOLL_EABORTED && b != REDCOLL_OK)) return b;
  return a;
}

static int h_exchange(void *impl, const redcoll_transport_ctx *ctx, const redcoll_transport_msg *send,
                      const redcoll_transport_msg *recv) {
  host_impl *h = impl;
  const redcoll_transport_ops *sops = redcoll__shm_ops();
  if ((send != NULL && (send->peer < 0 || send->peer >= h->size)) ||
      (recv != NULL && (recv->peer < 0 || recv->peer >= h->size)))
    return REDCOLL_EINVAL;
  int sl = send != NULL && h->local[send->peer] >= 0, rl = recv != NULL && h->local[recv->peer] >= 0;
  redcoll_transport_msg ls, lr;
  if (sl) {
    ls = *send;
    ls.peer = h->local[send->peer];
  }
  if (rl) {
    lr = *recv;
    lr.peer = h->local[recv->peer];
  }
  if ((send == NULL || sl) && (recv == NULL || rl))
    return sops->exchange(h->shm, ctx, sl ? &ls : NULL, rl ? &lr : NULL);
  if ((send == NULL || !sl) && (recv == NULL || !rl)) return h->net_ops->exchange(h->net, ctx, send, recv);
  host_helper *w = helper_get(h);
  if (w == NULL) return REDCOLL_ENOMEM;
  pthread_mutex_lock(&w->mu);
  w->ctx = *ctx;
  w->is_send = sl;
  w->msg = sl ? ls : lr;
  w->done = 0;
  w->job = 1;
  pthread_cond_signal(&w->cv);
  pthread_mutex_unlock(&w->mu);
  int rc = h->net_ops->exchange(h->net, ctx, sl ? NULL : send, sl ? recv : NULL);
  if (rc != REDCOLL_OK) sops->cancel(h->shm, ctx->channel, rc);
  pthread_mutex_lock(&w->mu);
  while (!w->done) pthread_cond_wait(&w->cv, &w->mu);
  int rs = w->rc;
  pthread_mutex_unlock(&w->mu);
  helper_put(h, w);
  return worse(rc, rs);
}

/* ---- posted exchanges (version 4) ----
 *
 * post hands each half to the transport of its peer as an op of its own
 * (in[0] on shared memory, in[1] on the network); the inner done of the
 * last half to finish files the exchange in h->fin (or, inside post, lets
 * post call done), and that of a half that failed cancels the channel
 * group on the other transport, as exchange does.  progress runs the inner
 * progress of whichever transport has halves outstanding; with both, the
 * network's runs on the pump thread in slices of PUMP_NS while this thread
 * waits in the shared memory's, which the pump's finished halves kick
 * awake.  done is called only by progress, on the thread that called it,
 * or inside post. */

#define PUMP_NS 2000000u

typedef struct host_pop {
  struct host_pop *next;
  host_impl *h;
  redcoll_transport_op *op;
  redcoll_transport_op in[2];
  int left;    /* halves not finished */
  int posting; /* post has not finished its work on it */
  int status;
  uint64_t channel;
} host_pop;

static int worse(int a, int b);
static uint64_t h_now(void *impl);

static void in_done(redcoll_transport_op *in, int status) {
  host_pop *o = in->user;
  host_impl *h = o->h;
  int net = in == &o->in[1];
  pthread_mutex_lock(&h->mu);
  if (net) h->n_net--;
  else h->n_shm--;
  int first_fail = status != REDCOLL_OK && o->status == REDCOLL_OK;
  o->status = worse(o->status, status);
  int last = --o->left == 0, filed = last && !o->posting;
  if (filed) {
    if (h->fin_tail != NULL) h->fin_tail->next = o;
    else h->fin = o;
    h->fin_tail = o;
  }
  uint64_t channel = o->channel;
  pthread_mutex_unlock(&h->mu);
  /* o may be delivered and freed by another thread from here on. */
  if (first_fail && !last) {
    if (net) redcoll__shm_ops()->cancel(h->shm, channel, status);
    else h->net_ops->cancel(h->net, channel, status);
  }
  /* A progress waiting in shared memory (none without it: in_done then
   * runs inside the network's progress, which returns after it). */
  if (filed && h->shm != NULL) redcoll__shm_kick(h->shm);
}

static int h_post(void *impl, const redcoll_transport_ctx *ctx, const redcoll_transport_msg *send,
                  const redcoll_transport_msg *recv, redcoll_transport_op *op) {
  host_impl *h = impl;
  const redcoll_transport_ops *sops = redcoll__shm_ops();
  if ((send == NULL && recv == NULL) || op == NULL || op->done == NULL ||
      (send != NULL && (send->peer < 0 || send->peer >= h->size)) ||
      (recv != NULL && (recv->peer < 0 || recv->peer >= h->size)))
    return REDCOLL_EINVAL;
  int sl = send != NULL && h->local[send->peer] >= 0, rl = recv != NULL && h->local[recv->peer] >= 0;
  redcoll_transport_msg ls, lr;
  if (sl) {
    ls = *send;
    ls.peer = h->local[send->peer];
  }
  if (rl) {
    lr = *recv;
    lr.peer = h->local[recv->peer];
  }
  /* The shared-memory half and the network half (NULL, NULL: none). */
  const redcoll_transport_msg *hs[2][2] = {{sl ? &ls : NULL, rl ? &lr : NULL},
                                           {sl ? NULL : send, rl ? NULL : recv}};
  host_pop *o = calloc(1, sizeof *o);
  if (o == NULL) return REDCOLL_ENOMEM;
  o->h = h;
  o->op = op;
  o->channel = ctx->channel;
  o->posting = 1;
  for (int k = 0; k < 2; k++)
    if (hs[k][0] != NULL || hs[k][1] != NULL) o->left++;
  int posted = 0, rc = REDCOLL_OK;
  for (int k = 0; k < 2 && rc == REDCOLL_OK; k++) {
    if (hs[k][0] == NULL && hs[k][1] == NULL) continue;
    o->in[k].done = in_done;
    o->in[k].user = o;
    pthread_mutex_lock(&h->mu);
    if (k == 0) h->n_shm++;
    else h->n_net++;
    pthread_mutex_unlock(&h->mu);
    rc = k == 0 ? sops->post(h->shm, ctx, hs[k][0], hs[k][1], &o->in[k])
                : h->net_ops->post(h->net, ctx, hs[k][0], hs[k][1], &o->in[k]);
    if (rc == REDCOLL_OK) {
      posted++;
      continue;
    }
    pthread_mutex_lock(&h->mu);
    if (k == 0) h->n_shm--;
    else h->n_net--;
    pthread_mutex_unlock(&h->mu);
  }
  if (rc != REDCOLL_OK && posted == 0) {
    free(o);
    return rc;
  }
  pthread_mutex_lock(&h->mu);
  if (rc != REDCOLL_OK) {
    /* The network half could not start: the exchange fails once the
     * shared-memory half, cancelled, has ended. */
    o->status = worse(o->status, rc);
    o->left--;
  }
  o->posting = 0;
  int over = o->left == 0;
  if (h->waiting > 0 && !over && h->shm != NULL)
    redcoll__shm_kick(h->shm); /* it may wait for the wrong one */
  pthread_mutex_unlock(&h->mu);
  if (rc != REDCOLL_OK && !over) sops->cancel(h->shm, ctx->channel, rc);
  if (over) {
    int status = o->status;
    free(o);
    op->done(op, status);
  }
  return REDCOLL_OK;
}

/* Calls done for the exchanges over (h->mu held, released meanwhile);
 * how many. */
static int h_deliver(host_impl *h) {
  host_pop *o = h->fin;
  if (o == NULL) return 0;
  h->fin = h->fin_tail = NULL;
  pthread_mutex_unlock(&h->mu);
  int n = 0;
  while (o != NULL) {
    host_pop *next = o->next;
    redcoll_transport_op *op = o->op;
    int status = o->status;
    free(o);
    op->done(op, status);
    n++;
    o = next;
  }
  pthread_mutex_lock(&h->mu);
  return n;
}

/* The pump: the network's progress while a thread waits in shared
 * memory's. */
static void *pump_main(void *vp) {
  host_impl *h = vp;
  pthread_mutex_lock(&h->mu);
  for (;;) {
    while (!h->pump_on && !h->pump_quit) pthread_cond_wait(&h->pump_cv, &h->mu);
    if (h->pump_quit) break;
    uint64_t until = h->pump_until, now = h_now(h);
    if (until > now + PUMP_NS) until = now + PUMP_NS;
    h->pump_busy = 1;
    pthread_mutex_unlock(&h->mu);
    (void)h->net_ops->progress(h->net, until);
    pthread_mutex_lock(&h->mu);
    h->pump_busy = 0;
    if (h_now(h) >= h->pump_until) h->pump_on = 0;
  }
  pthread_mutex_unlock(&h->mu);
  return NULL;
}

static int h_progress(void *impl, uint64_t until_ns) {
  host_impl *h = impl;
  pthread_mutex_lock(&h->mu);
  if (h->shm == NULL) {
    /* TCP alone (a rank alone on its host). */
    h_deliver(h);
    pthread_mutex_unlock(&h->mu);
    int rc = h->net_ops->progress(h->net, until_ns);
    pthread_mutex_lock(&h->mu);
    h_deliver(h);
    pthread_mutex_unlock(&h->mu);
    return rc;
  }
  uint64_t kick0 = redcoll__shm_kicks(h->shm);
  if (h_deliver(h) > 0) {
    pthread_mutex_unlock(&h->mu);
    return REDCOLL_OK;
  }
  int ns = h->n_shm, nn = h->n_net, rc = REDCOLL_OK;
  /* A wait drives the network from one thread at a time: this one alone
   * (net_direct) while nothing waits in shared memory, or else the pump.
   * Every other waits in shared memory's progress, which the finished
   * halves kick awake (in_done), whichever thread finished them: a thread
   * that entered the network's progress after another had delivered its
   * exchange there would wait for nothing. */
  int direct = until_ns != 0 && nn > 0 && ns == 0 && !h->net_direct && !h->pump_on &&
               !h->pump_busy && h->waiting == 0;
  int pump = until_ns != 0 && nn > 0 && !direct && !h->net_direct;
  if (pump && !h->pump_made) {
    h->pump_made = pthread_create(&h->pump, NULL, pump_main, h) == 0;
    pump = h->pump_made;
  }
  if (pump) {
    if (!h->pump_on || until_ns > h->pump_until) h->pump_until = until_ns;
    h->pump_on = 1;
    pthread_cond_signal(&h->pump_cv);
  }
  if (direct) h->net_direct = 1;
  int turns = until_ns != 0 && nn > 0 && !pump && !direct && !h->net_direct;
  h->waiting++;
  pthread_mutex_unlock(&h->mu);
  if (until_ns == 0 || turns) {
    /* A pass of each (or, without a pump, short turns of each). */
    uint64_t turn = until_ns == 0 ? 0 : h_now(h) + REDCOLL__SHM_LIVE_NS / 5;
    if (turn > until_ns) turn = until_ns;
    (void)redcoll__shm_progress_since(h->shm, 0, kick0);
    rc = h->net_ops->progress(h->net, turn);
  } else if (direct) {
    rc = h->net_ops->progress(h->net, until_ns);
  } else {
    /* Shared memory, with the network on the pump or on another thread's
     * direct wait, or nothing yet (a post kicks it). */
    (void)redcoll__shm_progress_since(h->shm, until_ns, kick0);
  }
  pthread_mutex_lock(&h->mu);
  h->waiting--;
  if (direct) {
    h->net_direct = 0;
    /* Those waiting in shared memory for the network drive it now. */
    if (h->waiting > 0) redcoll__shm_kick(h->shm);
  }
  if (h->waiting == 0) h->pump_on = 0; /* whoever turned it on */
  h_deliver(h);
  pthread_mutex_unlock(&h->mu);
  return rc;
}

/* The network's model between hosts; within one, the shared-memory
 * transport's own (REDCOLL__SHM_ALPHA and _BETA: 2 us and 10 GB/s), the
 * same on every rank, also on one that reaches its host's ranks by TCP.
 * The network's pieces for linear's root (info.segment) where some pair
 * goes over it; whole when every rank is on this host: through shared
 * memory the receiver's CPU copies, so nothing overlaps. */
static int h_info(void *impl, redcoll_transport_info *info) {
  host_impl *h = impl;
  int rc = h->net_ops->info(h->net, info);
  info->caps = REDCOLL_TRANSPORT_CAP_CHANNELS | REDCOLL_TRANSPORT_CAP_THREADS;
  int one_host = 1;
  for (int r = 0; r < h->size; r++) one_host &= h->hosts[r] == 0;
  if (one_host) info->segment = 0;
  info->hosts = h->hosts;
  info->local_alpha = REDCOLL__SHM_ALPHA;
  info->local_beta = REDCOLL__SHM_BETA;
  return rc;
}

static uint64_t h_now(void *impl) {
  host_impl *h = impl;
  return h->net_ops->now != NULL ? h->net_ops->now(h->net) : redcoll__shm_now();
}

static void h_abort(void *impl, int status) {
  host_impl *h = impl;
  if (h->shm != NULL) redcoll__shm_ops()->abort(h->shm, status);
  if (h->net_ops->abort != NULL) h->net_ops->abort(h->net, status);
}

static void h_cancel(void *impl, uint64_t channel, int status) {
  host_impl *h = impl;
  if (h->shm != NULL) redcoll__shm_ops()->cancel(h->shm, channel, status);
  h->net_ops->cancel(h->net, channel, status);
}

static void h_close(void *impl, uint64_t channel) {
  host_impl *h = impl;
  if (h->shm != NULL) redcoll__shm_ops()->close(h->shm, channel);
  h->net_ops->close(h->net, channel);
}

/* Frees h and its shared-memory transport, and the network one if net. */
static void h_free(host_impl *h, int net) {
  if (h->pump_made) {
    pthread_mutex_lock(&h->mu);
    h->pump_quit = 1;
    pthread_cond_signal(&h->pump_cv);
    pthread_mutex_unlock(&h->mu);
    pthread_join(h->pump, NULL);
  }
  /* The core destroys a transport only when none of its ops is posted. */
  while (h->fin != NULL) {
    host_pop *o = h->fin;
    h->fin = o->next;
    free(o);
  }
  for (host_helper *w = h->all, *next; w != NULL; w = next) {
    next = w->next_all;
    pthread_mutex_lock(&w->mu);
    w->quit = 1;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
    pthread_join(w->tid, NULL);
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
    free(w);
  }
  if (h->shm != NULL) redcoll__shm_ops()->destroy(h->shm);
  if (net) h->net_ops->destroy(h->net);
  pthread_cond_destroy(&h->pump_cv);
  pthread_mutex_destroy(&h->mu);
  free(h->hosts);
  free(h->local);
  free(h->world);
  free(h);
}

static void h_destroy(void *impl) {
  if (impl != NULL) h_free(impl, 1);
}

static const redcoll_transport_ops host_ops = {
    .version = REDCOLL_TRANSPORT_VERSION,
    .abort = h_abort,
    .destroy = h_destroy,
    .info = h_info,
    .now = h_now,
    .exchange = h_exchange,
    .cancel = h_cancel,
    .close = h_close,
    .post = h_post,
    .progress = h_progress,
    .fd = NULL, /* the shared-memory half has none (docs/embedding.md) */
};

/* ---- construction ---- */

int redcoll__shm_host_split(const redcoll_transport_ops *ops, void *net, int rank, int size,
                            uint64_t job, uint64_t timeout_ms, double *ranks_per_cpu,
                            redcoll_comm **out) {
  const char *env = redcoll__env("REDCOLL_SHM");
  if (size < 2 || (env != NULL && strcmp(env, "0") == 0)) return REDCOLL__ENV_UNSET;
  if (ops->cancel == NULL || ops->close == NULL) return REDCOLL__ENV_UNSET;
  uint64_t *ids = calloc((size_t)size * ID_WORDS, sizeof *ids);
  if (ids == NULL) return REDCOLL_ENOMEM;
  int rc = gather_ids(ops, net, rank, size, ids);
  if (rc != REDCOLL_OK) {
    redcoll__log(0, "tcp rank %d: the exchange of host identities failed: %s", rank,
                 redcoll_strerror(rc));
    free(ids);
    return rc;
  }
  *ranks_per_cpu = redcoll__shm_ranks_per_cpu(ids, size);
  int nlocal = 0, me = -1, first = -1;
  for (int r = 0; r < size; r++)
    if (same_host(ids, r, rank)) {
      if (first < 0) first = r;
      if (r == rank) me = nlocal;
      nlocal++;
    }
  uint32_t *hosts = number_hosts(ids, size);
  if (hosts == NULL) {
    free(ids);
    return REDCOLL_ENOMEM;
  }
  if (hosts[size - 1] == (uint32_t)size - 1) {
    /* Every rank alone on its host (the numbering is the identity): TCP
     * alone, on every rank alike. */
    free(hosts);
    free(ids);
    return REDCOLL__ENV_UNSET;
  }
  /* Some ranks share a host: every rank makes this transport, so that all
   * of them know the hosts (info), but a rank alone on its host, or on one
   * with more ranks than shared memory takes, reaches every peer by TCP. */
  int use_shm = nlocal >= 2 && nlocal <= REDCOLL_SHM_MAX_SIZE;
  if (nlocal > REDCOLL_SHM_MAX_SIZE)
    redcoll__log(1, "tcp rank %d: %d ranks on this host, more than shared memory takes (%d): "
                    "TCP between them", rank, nlocal, REDCOLL_SHM_MAX_SIZE);
  rc = REDCOLL_ENOMEM;
  host_impl *h = calloc(1, sizeof *h);
  if (h == NULL || (h->local = malloc((size_t)size * sizeof *h->local)) == NULL) {
    free(h);
    free(hosts);
    free(ids);
    return rc;
  }
  pthread_mutex_init(&h->mu, NULL);
  pthread_cond_init(&h->pump_cv, NULL);
  h->net_ops = ops;
  h->net = net;
  h->rank = rank;
  h->size = size;
  for (int r = 0, k = 0; r < size; r++)
    h->local[r] = use_shm && same_host(ids, r, rank) ? k++ : -1;
  h->hosts = hosts;
  free(ids);
  if (!use_shm) {
    rc = redcoll_comm_create(&host_ops, h, rank, size, out);
    if (rc != REDCOLL_OK) h_free(h, 0);
    return rc;
  }
  char name[96];
  snprintf(name, sizeof name, "/redcoll-%u-%016llx-%d", (unsigned)getuid(), (unsigned long long)job,
           first);
  redcoll_shm_config cfg;
  redcoll_shm_config_init(&cfg);
  cfg.rank = me;
  cfg.size = nlocal;
  cfg.name = name;
  cfg.wait_timeout_ms = timeout_ms;
  const char *cma = redcoll__env("REDCOLL_SHM_CMA");
  if (cma != NULL && strcmp(cma, "0") == 0) cfg.copy = REDCOLL_SHM_COPY_QUEUE;
  rc = redcoll__shm_impl_create(&cfg, &h->shm);
  if (rc != REDCOLL_OK) {
    redcoll__log(0, "tcp rank %d: the shared-memory path to the %d other ranks of this host "
                    "failed (%s); REDCOLL_SHM=0 turns it off", rank, nlocal - 1, redcoll_strerror(rc));
    h_free(h, 0);
    return rc;
  }
  int *world = malloc((size_t)nlocal * sizeof *world);
  if (world == NULL) {
    h_free(h, 0);
    return REDCOLL_ENOMEM;
  }
  for (int r = 0; r < size; r++)
    if (h->local[r] >= 0) world[h->local[r]] = r;
  h->world = world;
  h->shm->world = world;
  redcoll__log(2, "tcp rank %d: shared memory with %d other ranks of this host", rank, nlocal - 1);
  rc = redcoll_comm_create(&host_ops, h, rank, size, out);
  if (rc != REDCOLL_OK) h_free(h, 0); /* the network transport stays the caller's */
  return rc;
}

void *redcoll__shm_host_inner(const redcoll_comm *c, const redcoll_transport_ops *ops) {
  host_impl *h = redcoll__comm_transport(c, &host_ops);
  return h != NULL && h->net_ops == ops ? h->net : NULL;
}

REDCOLL_API int redcoll_shm_comm_is_local(const redcoll_comm *c, int peer) {
  if (c == NULL || peer < 0) return REDCOLL_EINVAL;
  host_impl *h = redcoll__comm_transport(c, &host_ops);
  if (h != NULL) return peer < h->size ? h->local[peer] >= 0 : REDCOLL_EINVAL;
  shm_impl *t = redcoll__comm_transport(c, redcoll__shm_ops());
  if (t != NULL) return peer < t->size ? 1 : REDCOLL_EINVAL;
  return 0;
}
