/*
 * A transport of your own in about 100 lines: P ranks are threads, every
 * pair of ranks shares a socketpair(2), and the exchange member of
 * include/redcoll/transport.h (version 3) moves a 16-byte header (tag,
 * length) and the payload over it.  This is how a runtime with its own messaging plugs into
 * redcoll; docs/transports.md walks through it.
 *
 *   build/examples/socketpair_transport [P]
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <redcoll/redcoll.h>
#include <redcoll/transport.h>

#define MAXP 64
static int fds[MAXP][MAXP]; /* fds[i][j]: rank i's end of the pair {i, j} */

typedef struct rank_state { /* the impl pointer every vtable call gets */
  int rank;
} rank_state;

/* One step of a transfer: the header first, then the payload. */
typedef struct xfer {
  int fd;
  uint64_t hdr[2]; /* tag, length (host order: both ends are this process) */
  char *buf;
  size_t len, done; /* done counts header bytes, then payload bytes */
} xfer;

/* Moves what can be moved without blocking; 1 when finished, -1 on error. */
static int step(xfer *x, int sending, uint64_t want_tag) {
  size_t total = sizeof x->hdr + x->len;
  while (x->done < total) {
    int hdr = x->done < sizeof x->hdr;
    char *p = hdr ? (char *)x->hdr + x->done : x->buf + (x->done - sizeof x->hdr);
    size_t n = hdr ? sizeof x->hdr - x->done : total - x->done;
    ssize_t r = sending ? send(x->fd, p, n, MSG_DONTWAIT | MSG_NOSIGNAL)
                        : recv(x->fd, p, n, MSG_DONTWAIT);
    if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR)) return -1;
    if (r < 0) return 0;
    x->done += (size_t)r;
    /* A receive checks the header before it writes any payload. */
    if (!sending && x->done == sizeof x->hdr && (x->hdr[0] != want_tag || x->hdr[1] != x->len))
      return -2;
  }
  return 1;
}

/* Sends s and receives r (either may be NULL), both at once. */
static int exchange(xfer *s, xfer *r, uint64_t rtag) {
  int sdone = s == NULL, rdone = r == NULL;
  while (!sdone || !rdone) {
    struct pollfd pf[2] = {{sdone ? -1 : s->fd, POLLOUT, 0}, {rdone ? -1 : r->fd, POLLIN, 0}};
    if (poll(pf, 2, 60000) <= 0) return REDCOLL_ETIMEDOUT;
    int a = sdone ? 1 : step(s, 1, 0), b = rdone ? 1 : step(r, 0, rtag);
    if (b == -2) return REDCOLL_EMISMATCH;
    if (a < 0 || b < 0) return REDCOLL_ETRANSPORT;
    sdone = a == 1;
    rdone = b == 1;
  }
  return REDCOLL_OK;
}

/* The vtable's one transfer: a send, a receive or both (the deadline in
 * ctx is not used: poll's timeout bounds every wait). */
static int sp_exchange(void *impl, const redcoll_transport_ctx *ctx,
                       const redcoll_transport_msg *send, const redcoll_transport_msg *recv) {
  (void)ctx;
  int me = ((rank_state *)impl)->rank;
  xfer s, r;
  if (send != NULL) s = (xfer){fds[me][send->peer], {send->tag, send->len}, send->buf, send->len, 0};
  if (recv != NULL) r = (xfer){fds[me][recv->peer], {0, 0}, recv->buf, recv->len, 0};
  return exchange(send ? &s : NULL, recv ? &r : NULL, recv ? recv->tag : 0);
}
static int sp_info(void *impl, redcoll_transport_info *info) {
  (void)impl;
  strcpy(info->name, "socketpair"); /* its line in a tuning file, if any */
  return REDCOLL_OK;
}
static void sp_destroy(void *impl) { free(impl); }

static const redcoll_transport_ops sp_ops = {
    .version = REDCOLL_TRANSPORT_VERSION,
    .destroy = sp_destroy, /* charge, abort and now are optional */
    .info = sp_info, .exchange = sp_exchange,
};

static int P = 7;
static int wrong[MAXP];

static void *rank_thread(void *arg) {
  int me = (int)(intptr_t)arg, rc = REDCOLL_ENOMEM;
  redcoll_comm *c = NULL;
  rank_state *st = malloc(sizeof *st);
  if (st != NULL) {
    st->rank = me;
    rc = redcoll_comm_create(&sp_ops, st, me, P, &c); /* on success st belongs to c */
    if (rc != REDCOLL_OK) sp_destroy(st);
  }
  int64_t x[1000];
  for (int i = 0; i < 1000; i++) x[i] = (int64_t)(me + 1) * i;
  if (rc == REDCOLL_OK)
    rc = redcoll_allreduce(c, REDCOLL_IN_PLACE, x, 1000, REDCOLL_INT64, REDCOLL_SUM);
  for (int i = 0; rc == REDCOLL_OK && i < 1000; i++)
    wrong[me] += x[i] != (int64_t)P * (P + 1) / 2 * i; /* sum of (r + 1) i over r */
  if (rc != REDCOLL_OK) {
    fprintf(stderr, "rank %d: %s\n", me, redcoll_strerror(rc));
    wrong[me]++;
  }
  redcoll_comm_destroy(c); /* calls sp_destroy */
  return NULL;
}

int main(int argc, char **argv) {
  if (argc > 1) P = atoi(argv[1]);
  if (P < 1 || P > MAXP) return 2;
  for (int i = 0; i < P; i++)
    for (int j = i + 1; j < P; j++) {
      int sv[2];
      if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) {
        perror("socketpair");
        return 1;
      }
      fds[i][j] = sv[0];
      fds[j][i] = sv[1];
    }
  pthread_t th[MAXP];
  for (int i = 0; i < P; i++) pthread_create(&th[i], NULL, rank_thread, (void *)(intptr_t)i);
  int bad = 0;
  for (int i = 0; i < P; i++) {
    pthread_join(th[i], NULL);
    bad += wrong[i];
  }
  printf("allreduce over a socketpair transport on %d threads: %s\n", P,
         bad ? "WRONG" : "verified on every rank");
  return bad != 0;
}
