/*
 * Collectives over connections the program already has: processes that
 * talk through ZeroMQ run redcoll's allreduce and reduce over the push
 * transport (include/redcoll/push.h).  Start it with redcoll-run:
 *
 *   redcoll-run -n 5 ./zmq_allreduce
 *
 * Each process binds one PULL socket and connects one PUSH socket to every
 * other process (ipc endpoints named after the job, or ZMQ_ENDPOINT_BASE,
 * e.g. tcp://127.0.0.1:7000 gives ports 7000 + rank).  A message travels
 * as two frames: the sender's rank, then redcoll's bytes.  A receiver
 * thread hands every message to redcoll_push_deliver; redcoll calls
 * send_to when it has a message for a rank, from the main thread or from
 * the receiver thread (a nonblocking collective goes on inside the
 * delivery), so the PUSH sockets are used under a mutex.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#include <redcoll/push.h>
#include <redcoll/redcoll.h>

typedef struct net {
  void *zctx, *pull, **push;
  pthread_mutex_t mu; /* the PUSH sockets */
  int rank, size;
  redcoll_comm *comm;
  atomic_int stop;
  pthread_t receiver;
} net;

static void endpoint(char *out, size_t n, int rank) {
  const char *base = getenv("ZMQ_ENDPOINT_BASE");
  if (base != NULL && strncmp(base, "tcp://", 6) == 0) {
    const char *colon = strrchr(base, ':');
    snprintf(out, n, "%.*s:%d", (int)(colon - base), base, atoi(colon + 1) + rank);
    return;
  }
  /* redcoll-run gives each job its own REDCOLL_MASTER address. */
  const char *job = getenv("REDCOLL_MASTER");
  const char *port = job != NULL ? strrchr(job, ':') : NULL;
  snprintf(out, n, "ipc:///tmp/redcoll-zmq-%s-%d", port != NULL ? port + 1 : "0", rank);
}

/* redcoll's send function: two frames, never blocking (no high-water mark). */
static int send_to(void *ctx, int dst, const void *msg, size_t len) {
  net *nt = ctx;
  int32_t me = nt->rank;
  pthread_mutex_lock(&nt->mu);
  int rc = zmq_send(nt->push[dst], &me, sizeof me, ZMQ_SNDMORE) < 0 ||
           zmq_send(nt->push[dst], msg, len, 0) < 0;
  pthread_mutex_unlock(&nt->mu);
  return rc ? REDCOLL_ETRANSPORT : 0;
}

static void *receive_loop(void *arg) {
  net *nt = arg;
  zmq_pollitem_t item = {nt->pull, 0, ZMQ_POLLIN, 0};
  while (!atomic_load(&nt->stop)) {
    if (zmq_poll(&item, 1, 50) <= 0) continue;
    zmq_msg_t from, body;
    zmq_msg_init(&from);
    zmq_msg_init(&body);
    if (zmq_msg_recv(&from, nt->pull, 0) == sizeof(int32_t) && zmq_msg_more(&from) &&
        zmq_msg_recv(&body, nt->pull, 0) >= 0) {
      int32_t src;
      memcpy(&src, zmq_msg_data(&from), sizeof src);
      int rc = redcoll_push_deliver(nt->comm, src, zmq_msg_data(&body), zmq_msg_size(&body));
      if (rc != REDCOLL_OK) fprintf(stderr, "rank %d: dropped a message: %s\n", nt->rank,
                                    redcoll_strerror(rc));
    }
    zmq_msg_close(&from);
    zmq_msg_close(&body);
  }
  return NULL;
}

static int open_net(net *nt) {
  char ep[256];
  int zero = 0, linger = 2000;
  nt->zctx = zmq_ctx_new();
  nt->pull = zmq_socket(nt->zctx, ZMQ_PULL);
  zmq_setsockopt(nt->pull, ZMQ_RCVHWM, &zero, sizeof zero);
  endpoint(ep, sizeof ep, nt->rank);
  if (zmq_bind(nt->pull, ep) != 0) {
    fprintf(stderr, "rank %d: cannot bind %s: %s\n", nt->rank, ep, zmq_strerror(zmq_errno()));
    return -1;
  }
  nt->push = calloc((size_t)nt->size, sizeof *nt->push);
  for (int r = 0; r < nt->size; r++) {
    if (r == nt->rank) continue;
    nt->push[r] = zmq_socket(nt->zctx, ZMQ_PUSH);
    zmq_setsockopt(nt->push[r], ZMQ_SNDHWM, &zero, sizeof zero);
    zmq_setsockopt(nt->push[r], ZMQ_LINGER, &linger, sizeof linger);
    endpoint(ep, sizeof ep, r);
    if (zmq_connect(nt->push[r], ep) != 0) return -1;
  }
  pthread_mutex_init(&nt->mu, NULL);
  return 0;
}

static void close_net(net *nt) {
  for (int r = 0; r < nt->size; r++)
    if (nt->push[r] != NULL) zmq_close(nt->push[r]);
  zmq_close(nt->pull);
  zmq_ctx_term(nt->zctx);
  free(nt->push);
  char ep[256];
  endpoint(ep, sizeof ep, nt->rank);
  if (strncmp(ep, "ipc://", 6) == 0) remove(ep + 6);
}

int main(void) {
  const char *r = getenv("REDCOLL_RANK"), *s = getenv("REDCOLL_SIZE");
  if (r == NULL || s == NULL) {
    fprintf(stderr, "start me with redcoll-run -n P\n");
    return 2;
  }
  net nt;
  memset(&nt, 0, sizeof nt);
  nt.rank = atoi(r);
  nt.size = atoi(s);
  if (open_net(&nt) != 0) return 1;

  redcoll_push_config cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.struct_size = sizeof cfg;
  cfg.rank = nt.rank;
  cfg.size = nt.size;
  cfg.send = send_to;
  cfg.send_ctx = &nt;
  int rc = redcoll_push_comm_create(&cfg, &nt.comm);
  if (rc != REDCOLL_OK) return 1;
  pthread_create(&nt.receiver, NULL, receive_loop, &nt);

  /* A blocking allreduce of 100000 doubles: every rank adds rank + i. */
  enum { N = 100000 };
  double *v = malloc(N * sizeof *v), *sum = malloc(N * sizeof *sum);
  for (int i = 0; i < N; i++) v[i] = nt.rank + i;
  rc = redcoll_allreduce(nt.comm, v, sum, N, REDCOLL_FLOAT64, REDCOLL_SUM);
  int bad = rc != REDCOLL_OK;
  double p = nt.size;
  for (int i = 0; i < N && !bad; i++) bad = sum[i] != p * (p - 1) / 2 + p * i;

  /* Ten nonblocking reduces to rank 0 in flight at once, moved on by the
   * receiver thread's deliveries while this thread only waits. */
  int64_t in[10], out[10];
  redcoll_request *req[10];
  for (int k = 0; k < 10 && !bad; k++) {
    in[k] = (int64_t)(nt.rank + 1) * (k + 1);
    bad = redcoll_ireduce(nt.comm, &in[k], &out[k], 1, REDCOLL_INT64, REDCOLL_SUM, 0,
                          &req[k]) != REDCOLL_OK;
  }
  if (!bad) bad = redcoll_waitall(req, 10) != REDCOLL_OK;
  for (int k = 0; k < 10 && !bad && nt.rank == 0; k++)
    bad = out[k] != (int64_t)nt.size * (nt.size + 1) / 2 * (k + 1);
  /* Nobody leaves while a peer may still need its messages. */
  if (redcoll_barrier(nt.comm) != REDCOLL_OK) bad = 1;

  if (nt.rank == 0)
    printf("%s: allreduce of %d doubles and 10 nonblocking reduces over ZeroMQ on %d ranks\n",
           bad ? "FAILED" : "ok", N, nt.size);
  /* The receiver stops before the communicator it delivers to goes. */
  atomic_store(&nt.stop, 1);
  pthread_join(nt.receiver, NULL);
  redcoll_comm_destroy(nt.comm);
  close_net(&nt);
  free(v);
  free(sum);
  return bad;
}
