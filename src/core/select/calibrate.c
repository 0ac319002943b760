/*
 * Self-calibration: the cost model AUTO chooses by, measured on the
 * communicator itself, so that AUTO is right on a network it has never
 * seen without a tuning file.
 *
 * What runs (a collective of its own, with its own tag, on every rank):
 *   - CAL_SMALL_REPS exchanges of CAL_SMALL bytes around the ring (send to
 *     rank + 1, receive from rank - 1, both at once), each timed on the
 *     transport's clock; then CAL_LARGE_REPS of CAL_LARGE bytes;
 *   - CAL_GAMMA_REPS local reductions of CAL_LARGE bytes of float32 sums;
 *   - t_s, t_l, t_g: the fastest of each (noise only ever adds time);
 *     beta = (t_l - t_s) / (CAL_LARGE - CAL_SMALL), alpha = t_s - CAL_SMALL
 *     * beta, gamma = t_g / CAL_LARGE;
 *   - at p = 2, where the ring is one exchange between the two ranks, also
 *     CAL_SMALL_REPS round trips of CAL_SMALL bytes and CAL_LARGE_REPS
 *     one-way transfers of CAL_LARGE bytes in CAL_PIECES messages (rank 0
 *     sends, rank 1 answers with CAL_SMALL bytes), t_r and t_o: beta is
 *     then the one-way cost per byte, (t_o - t_r) / (CAL_LARGE -
 *     CAL_SMALL), and dup what the exchange costs beyond it per byte, the
 *     ring's beta minus that, at most beta (0 if the two directions do not share CPUs; about
 *     beta over loopback, where each rank's CPU copies what it sends and
 *     what it receives).  For p >= 3 beta stays the ring's and dup 0;
 *   - on a communicator with hosts (more than one; the transport's
 *     info.hosts), the same two sizes around the ring of each host's ranks
 *     (a host's ranks in rank order, the last sending to the first; a rank
 *     alone on its host sits it out): local_alpha and local_beta, the
 *     two-level model's costs inside a host;
 *   - the maximum of the six over the ranks (a dissemination of 48 bytes,
 *     ceil(log2 p) rounds), so that every rank holds the same model (the
 *     slowest link and CPU rule the critical path) and AUTO decides alike
 *     everywhere.
 * Cost: 8 + 4 ring exchanges, as many again inside hosts (at p = 2 also 8
 * round trips of 8 bytes and 4 one-way transfers of 256 KiB), 3 reductions
 * of 256 KiB and ceil(log2 p) small exchanges: about 1 ms over loopback
 * TCP, 2 ms on a 1 Gbit/s network.
 *
 * Example: under the simulator with alpha = 2 us, beta = 1 ns/B, an 8-byte
 * exchange takes 2.008 us and a 256 KiB one 264.144 us: beta = 262136 ns /
 * 262136 B = 1 ns/B and alpha = 2.008 - 0.008 = 2 us, exactly the
 * simulator's.
 *
 * When: at the first collective that lets AUTO choose (as that collective's
 * first step, so a nonblocking one posts it like the rest), unless the model was
 * set (redcoll_comm_set_cost_model, a tuning file, REDCOLL_COST_MODEL), the
 * transport declares its model exact (REDCOLL_TRANSPORT_CAP_MODEL_EXACT:
 * the simulator), or REDCOLL_CALIBRATE=0 / redcoll_comm_set_calibration
 * turned it off; or whenever redcoll_comm_calibrate is called.  Whether
 * to calibrate is decided by each rank alone: the settings above must be the
 * same on every rank (as every setting AUTO depends on), else the ranks
 * meet different collectives and fail with REDCOLL_EMISMATCH.
 */
#include <stdlib.h>
#include <time.h>

#include "env.h"
#include "select/cost.h"

#define CAL_SMALL 8
#define CAL_LARGE ((size_t)256 << 10)
#define CAL_SMALL_REPS 8
#define CAL_LARGE_REPS 4
#define CAL_GAMMA_REPS 3
/* At p = 2: the one-way CAL_LARGE bytes go as CAL_PIECES messages, so
 * that the receiver copies one out while the sender copies the next in, as
 * in any message larger than the socket buffers (one message of CAL_LARGE
 * bytes fits in them and is copied in, then out). */
#define CAL_PIECES 8
/* alpha, beta, gamma, dup, local_alpha, local_beta */
#define CAL_TERMS 6

static uint64_t clock_ns(const redcoll_comm *c) {
  if (c->ops->version >= 3 && c->ops->now != NULL) return c->ops->now(c->impl);
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The fastest of reps exchanges of len bytes around a ring (send to next,
 * receive from prev), in seconds; 0 without a ring (next < 0). */
static int ring_time(redcoll_comm *c, int next, int prev, unsigned char *s, unsigned char *r,
                     size_t len, int reps, double *best) {
  *best = next < 0 ? 0 : -1;
  if (next < 0) return REDCOLL_OK;
  for (int i = 0; i < reps; i++) {
    uint64_t t0 = clock_ns(c);
    int rc = redcoll__sendrecv(c, next, s, len, prev, r, len);
    if (rc != REDCOLL_OK) return rc;
    double t = (double)(clock_ns(c) - t0) * 1e-9;
    if (*best < 0 || t < *best) *best = t;
  }
  return REDCOLL_OK;
}

/* The fastest of CAL_GAMMA_REPS reductions of CAL_LARGE bytes, seconds. */
static double reduce_time(redcoll_comm *c, float *a, const float *b) {
  double best = -1;
  size_t n = CAL_LARGE / sizeof(float);
  for (int i = 0; i < CAL_GAMMA_REPS; i++) {
    uint64_t t0 = clock_ns(c);
    redcoll__kernel_apply(REDCOLL_FLOAT32, REDCOLL_SUM, a, a, b, n);
    if (c->ops->charge != NULL) c->ops->charge(c->impl, CAL_LARGE);
    double t = (double)(clock_ns(c) - t0) * 1e-9;
    if (best < 0 || t < best) best = t;
  }
  return best;
}

/* At p = 2: the fastest of reps transfers of len bytes from rank 0 to rank
 * 1 in `pieces` messages, each answered with CAL_SMALL bytes, timed on rank
 * 0 (seconds; rank 1 gets 0). */
static int oneway_time(redcoll_comm *c, unsigned char *s, unsigned char *r, size_t len,
                       int pieces, int reps, double *best) {
  *best = c->rank == 0 ? -1 : 0;
  size_t q = len / (size_t)pieces;
  for (int i = 0; i < reps; i++) {
    uint64_t t0 = clock_ns(c);
    int rc = REDCOLL_OK;
    for (int k = 0; k < pieces && rc == REDCOLL_OK; k++)
      rc = c->rank == 0 ? redcoll__send(c, 1, s + (size_t)k * q, q)
                        : redcoll__recv(c, 0, r + (size_t)k * q, q);
    if (rc == REDCOLL_OK)
      rc = c->rank == 0 ? redcoll__recv(c, 1, r, CAL_SMALL) : redcoll__send(c, 0, s, CAL_SMALL);
    if (rc != REDCOLL_OK) return rc;
    double t = (double)(clock_ns(c) - t0) * 1e-9;
    if (c->rank == 0 && (*best < 0 || t < *best)) *best = t;
  }
  return REDCOLL_OK;
}

/* At p = 2: beta as the one-way cost per byte, and dup, what an exchange
 * (the ring's beta, m[1]) costs beyond it.  Rank 1 reports 0 for both
 * (the agreement takes rank 0's). */
static int split_duplex(redcoll_comm *c, unsigned char *s, unsigned char *r, double m[4]) {
  double to, tr;
  int rc = oneway_time(c, s, r, CAL_SMALL, 1, CAL_SMALL_REPS, &tr);
  if (rc == REDCOLL_OK) rc = oneway_time(c, s, r, CAL_LARGE, CAL_PIECES, CAL_LARGE_REPS, &to);
  if (rc != REDCOLL_OK) return rc;
  if (c->rank != 0) {
    m[1] = m[3] = 0;
    return REDCOLL_OK;
  }
  double one = (to - tr) / (double)(CAL_LARGE - CAL_SMALL), both = m[1];
  if (one <= 0 || both <= one) return REDCOLL_OK; /* noise: the ring's beta, no dup */
  /* Two directions cost at most twice one where the same CPUs copy both. */
  m[3] = both - one < one ? both - one : one;
  m[1] = one;
  return REDCOLL_OK;
}

/* alpha and beta from the fastest exchanges of CAL_SMALL and CAL_LARGE
 * bytes (ts, tl; seconds), both at least 0. */
static void alpha_beta(double ts, double tl, double *alpha, double *beta) {
  double b = (tl - ts) / (double)(CAL_LARGE - CAL_SMALL);
  if (b < 0) b = 0;
  double a = ts - CAL_SMALL * b;
  *alpha = a > 0 ? a : 0;
  *beta = b;
}

/* With hosts (more than one): this rank's ring among the ranks of its host
 * (*next, *prev), or -1 for both when it is alone there. */
static int host_ring(const redcoll_comm *c, int *next, int *prev) {
  *next = *prev = -1;
  if (c->info.hosts == NULL) return REDCOLL_OK;
  redcoll__topo t;
  int rc = redcoll__topo_build(c->info.hosts, c->map, c->size, c->rank, &t);
  if (rc != REDCOLL_OK) return rc;
  const int *mine = t.members + t.start[t.my_host];
  int n = t.start[t.my_host + 1] - t.start[t.my_host];
  if (t.hosts > 1 && n > 1) {
    *next = mine[(t.my_local + 1) % n];
    *prev = mine[(t.my_local + n - 1) % n];
  }
  redcoll__topo_free(&t);
  return REDCOLL_OK;
}

/* The measurements of this rank (seconds): alpha, beta, gamma, dup, and
 * with hosts local_alpha and local_beta, from the ring of its host's ranks
 * (0 on a rank alone on its host). */
static int measure(redcoll_comm *c, double m[CAL_TERMS]) {
  unsigned char *buf = calloc(3, CAL_LARGE);
  if (buf == NULL) return REDCOLL_ENOMEM;
  unsigned char *s = buf, *r = buf + CAL_LARGE;
  int p = c->size, next = (c->rank + 1) % p, prev = (c->rank + p - 1) % p, hn, hp;
  double ts, tl, hs = 0, hl = 0;
  int rc = ring_time(c, next, prev, s, r, CAL_SMALL, CAL_SMALL_REPS, &ts);
  if (rc == REDCOLL_OK) rc = ring_time(c, next, prev, s, r, CAL_LARGE, CAL_LARGE_REPS, &tl);
  if (rc == REDCOLL_OK) rc = host_ring(c, &hn, &hp);
  if (rc == REDCOLL_OK) rc = ring_time(c, hn, hp, s, r, CAL_SMALL, CAL_SMALL_REPS, &hs);
  if (rc == REDCOLL_OK) rc = ring_time(c, hn, hp, s, r, CAL_LARGE, CAL_LARGE_REPS, &hl);
  if (rc == REDCOLL_OK) {
    alpha_beta(ts, tl, &m[0], &m[1]);
    m[2] = reduce_time(c, (float *)(buf + 2 * CAL_LARGE), (const float *)s) / (double)CAL_LARGE;
    m[3] = 0;
    m[4] = m[5] = 0;
    if (hn >= 0) alpha_beta(hs, hl, &m[4], &m[5]);
    if (c->size == 2) rc = split_duplex(c, s, r, m);
  }
  free(buf);
  return rc;
}

/* Every rank gets the elementwise maximum of all ranks' v[CAL_TERMS]: a
 * dissemination, ceil(log2 p) rounds of 48 bytes (the maximum is
 * idempotent, so a value met twice does no harm), with the calibration's
 * tag. */
static int agree_max(redcoll_comm *c, double v[CAL_TERMS]) {
  int p = c->size;
  for (int d = 1; d < p; d *= 2) {
    double in[CAL_TERMS];
    int rc = redcoll__sendrecv(c, (c->rank + d) % p, v, sizeof in, (c->rank - d % p + p) % p,
                               in, sizeof in);
    if (rc != REDCOLL_OK) return rc;
    for (int k = 0; k < CAL_TERMS; k++)
      if (in[k] > v[k]) v[k] = in[k];
  }
  return REDCOLL_OK;
}

int redcoll__calibrate(redcoll_comm *c) {
  c->cal_state = 2; /* done or under way */
  int rc = redcoll__cost_resolve(c);
  (void)rc; /* a malformed variable is logged; calibration replaces defaults anyway */
  if (c->size == 1) return REDCOLL_OK;
  c->tag = redcoll__make_tag(c->seq++, REDCOLL_COLL_BARRIER, CAL_LARGE, REDCOLL_UINT8, NULL,
                             c->size);
  redcoll__comm_start_deadline(c);
  c->cur = NULL;
  double agreed[CAL_TERMS];
  c->calibrating = 1;
  rc = measure(c, agreed);
  /* Every rank the same model: the slowest rank's numbers. */
  if (rc == REDCOLL_OK) rc = agree_max(c, agreed);
  if (rc != REDCOLL_OK) rc = redcoll__fail(c, rc);
  c->calibrating = 0;
  if (rc != REDCOLL_OK) return rc;
  if (c->cost_state != 2) {
    c->cost_alpha = agreed[0];
    c->cost_beta = agreed[1];
    c->cost_gamma = agreed[2];
    c->cost_dup = agreed[3];
    /* Inside hosts: measured where a host has two ranks; else what was
     * there (set, or the transport's).  0 means "not set" in these two, so
     * a measured 0 is stored as a picosecond. */
    if (agreed[4] > 0 || agreed[5] > 0) {
      c->cost_local_alpha = agreed[4] > 0 ? agreed[4] : 1e-12;
      c->cost_local_beta = agreed[5] > 0 ? agreed[5] : 1e-12;
    }
  }
  redcoll__log(2, "rank %d: calibrated cost model: alpha %.3g s, beta %.3g s/B, gamma %.3g s/B, "
               "dup %.3g s/B; inside a host alpha %.3g s, beta %.3g s/B (0: not measured)",
               c->rank, agreed[0], agreed[1], agreed[2], agreed[3], agreed[4], agreed[5]);
  return REDCOLL_OK;
}

int redcoll__calibration_due(redcoll_comm *c) {
  if (c->cal_state != 0) return 0;
  c->cal_state = 1; /* decided: not due again unless re-enabled */
  if (c->cost_state == 2) return 0;
  if (c->ops->version >= 3 && (c->info.caps & REDCOLL_TRANSPORT_CAP_MODEL_EXACT)) return 0;
  uint64_t on = 1;
  int env = redcoll__env_u64("REDCOLL_CALIBRATE", 1, &on);
  if (env == REDCOLL_EINVAL) redcoll__log(0, "REDCOLL_CALIBRATE wants 0 or 1; calibrating");
  if (env == REDCOLL_OK && on == 0) return 0;
  /* A model from the environment or a tuning file wins. */
  if (redcoll__env("REDCOLL_COST_MODEL") != NULL || redcoll__env("REDCOLL_TUNING_FILE") != NULL)
    return 0;
  c->cal_state = 2; /* scheduled: the caller's collective runs it first */
  return 1;
}

REDCOLL_API int redcoll_comm_calibrate(redcoll_comm *c) {
  if (c == NULL) return REDCOLL_EINVAL;
  int rc = __atomic_load_n(&c->error, __ATOMIC_ACQUIRE);
  if (rc != REDCOLL_OK) return rc;
  redcoll__nb_drain(c);
  int state = c->cost_state;
  c->cost_state = state == 2 ? 1 : state; /* measured on request, even over a setting */
  rc = redcoll__calibrate(c);
  return rc;
}

REDCOLL_API int redcoll_comm_set_calibration(redcoll_comm *c, int on) {
  if (c == NULL) return REDCOLL_EINVAL;
  c->cal_state = on ? 0 : 3;
  return REDCOLL_OK;
}
