/*
 * redcoll-tune: measures the cost model of a transport and writes the tuning
 * file that REDCOLL_TUNING_FILE or redcoll_comm_load_tuning() loads
 * (format in docs/tuning.md); also prints what AUTO predicts and chooses.
 *
 *   redcoll-tune [--out FILE] [--iters N]
 *       threads transport (2 ranks as threads); under redcoll-run (the TCP
 *       environment is set) the TCP transport between ranks 0 and 1, the
 *       others wait.  alpha and beta: ping-pong (a linear bcast from rank 0
 *       then from rank 1, half the round trip) at several sizes, fitted by
 *       least squares; gamma: float64 SUM with redcoll_reduce_local over
 *       4 MiB.  Medians of --iters runs.  Rank 0 appends or replaces its
 *       transport's line in FILE (default: stdout).
 *   redcoll-tune predict --coll C --p N --count N [--esize E] [--threshold B]
 *       [--alpha A --beta B --gamma G] [--noncomm]
 *       every algorithm's predicted time and AUTO's choice.
 *   redcoll-tune calibrate [--reps N] [--p P]
 *       the library's self-calibration (redcoll_comm_calibrate) N times
 *       (default 20), each on a new duplicate communicator: the spread of
 *       alpha, beta and gamma, and how often AUTO's allreduce choice from
 *       8 B to 32 MiB agrees with the most common one.  P threads (default
 *       4), or under redcoll-run the TCP ranks.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "redcoll/redcoll.h"
#include "redcoll/threads.h"
#ifdef REDCOLL_TUNE_TCP
#include "redcoll/tcp.h"
#endif
#include "stats.h"

/* ---- measurement --------------------------------------------------------- */

#define NSIZES 5
static const size_t sizes[NSIZES] = {0, 4096, 65536, 1 << 20, 4 << 20};

typedef struct tune {
  int iters;
  double half_rtt[NSIZES]; /* seconds, rank 0 */
  double alpha, beta, gamma;
  int status;
} tune;

/* Half the round trip of `bytes` between ranks 0 and 1 (a linear bcast
 * from 0, then one from 1); ranks above 1 take part with nothing to do but
 * must call the same collectives. */
static int pingpong(redcoll_comm *c, tune *t) {
  int rank = redcoll_comm_rank(c);
  int rc = redcoll_comm_set_algorithm(c, REDCOLL_COLL_BCAST, REDCOLL_ALGO_LINEAR);
  if (rc != REDCOLL_OK) return rc;
  unsigned char *buf = malloc(sizes[NSIZES - 1] + 1);
  double *v = malloc(sizeof(double) * (size_t)t->iters);
  if (buf == NULL || v == NULL) {
    free(buf);
    free(v);
    return REDCOLL_ENOMEM;
  }
  memset(buf, rank, sizes[NSIZES - 1] + 1);
  for (int s = 0; s < NSIZES && rc == REDCOLL_OK; s++) {
    size_t n = sizes[s] ? sizes[s] : 1; /* count 0 sends nothing: 1 byte */
    if (redcoll_comm_size(c) > 2) rc = redcoll_barrier(c);
    for (int i = -2; i < t->iters && rc == REDCOLL_OK; i++) {
      double t0 = stats_now();
      rc = redcoll_bcast(c, buf, n, REDCOLL_UINT8, 0);
      if (rc == REDCOLL_OK) rc = redcoll_bcast(c, buf, n, REDCOLL_UINT8, 1);
      if (i >= 0) v[i] = (stats_now() - t0) / 2;
    }
    if (rc == REDCOLL_OK && rank == 0) t->half_rtt[s] = stats_median(v, (size_t)t->iters);
  }
  free(buf);
  free(v);
  return rc;
}

static int two_ranks_main(redcoll_comm *c, void *arg) {
  tune *t = arg;
  /* With p = 2 a linear bcast is one message: exactly a ping-pong. */
  return pingpong(c, t);
}

static void fit(tune *t) {
  /* least squares of half_rtt = alpha + n beta over the sizes */
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (int s = 0; s < NSIZES; s++) {
    double x = (double)(sizes[s] ? sizes[s] : 1), y = t->half_rtt[s];
    sx += x;
    sy += y;
    sxx += x * x;
    sxy += x * y;
  }
  double den = NSIZES * sxx - sx * sx;
  t->beta = den > 0 ? (NSIZES * sxy - sx * sy) / den : 0;
  if (t->beta < 0) t->beta = 0;
  /* alpha from the smallest message: the fit's intercept is noisy */
  t->alpha = t->half_rtt[0] - t->beta;
  if (t->alpha < 0) t->alpha = 0;
}

static void measure_gamma(tune *t) {
  size_t n = (4u << 20) / sizeof(double);
  double *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b);
  double *v = malloc(sizeof(double) * (size_t)t->iters);
  if (a == NULL || b == NULL || v == NULL) {
    t->gamma = 0;
    goto out;
  }
  for (size_t i = 0; i < n; i++) a[i] = b[i] = (double)i;
  for (int i = -2; i < t->iters; i++) {
    double t0 = stats_now();
    redcoll_reduce_local(a, a, b, n, REDCOLL_FLOAT64, REDCOLL_SUM);
    if (i >= 0) v[i] = stats_now() - t0;
  }
  /* The core charges count * element size bytes per reduction. */
  t->gamma = stats_median(v, (size_t)t->iters) / (double)(n * sizeof(double));
out:
  free(a);
  free(b);
  free(v);
}

/* Replaces (or adds) the line of transport in path, keeping the others. */
static int write_entry(const char *path, const char *transport, const tune *t) {
  char line[256];
  snprintf(line, sizeof line, "%s %.6g %.6g %.6g\n", transport, t->alpha, t->beta, t->gamma);
  if (path == NULL) {
    printf("# redcoll tuning file: transport alpha(s) beta(s/byte) gamma(s/byte)\n%s", line);
    return 0;
  }
  char *keep = NULL;
  size_t keep_len = 0;
  FILE *in = fopen(path, "r");
  if (in != NULL) {
    FILE *mem = open_memstream(&keep, &keep_len);
    char buf[512];
    size_t tl = strlen(transport);
    while (fgets(buf, sizeof buf, in) != NULL) {
      if (strncmp(buf, transport, tl) == 0 && (buf[tl] == ' ' || buf[tl] == '\t')) continue;
      fputs(buf, mem);
    }
    fclose(in);
    fclose(mem);
  }
  FILE *out = fopen(path, "w");
  if (out == NULL) {
    fprintf(stderr, "redcoll-tune: %s: %s\n", path, strerror(errno));
    free(keep);
    return -1;
  }
  if (keep == NULL || keep_len == 0)
    fputs("# redcoll tuning file (docs/tuning.md): transport alpha(s) beta(s/byte) "
          "gamma(s/byte)\n",
          out);
  else
    fputs(keep, out);
  fputs(line, out);
  free(keep);
  return fclose(out) == 0 ? 0 : -1;
}

/* fn on every rank: under redcoll-run (the TCP environment set) this
 * process's TCP rank, at least two of them; else p threads.  *transport
 * names which, *rank is this process's rank (0 for threads), *size p. */
static int run_ranks(int p, redcoll_rank_main fn, void *arg, const char **transport, int *rank,
                     int *size) {
  *transport = "threads";
  *rank = 0;
  *size = p;
#ifdef REDCOLL_TUNE_TCP
  if (getenv("REDCOLL_RANK") != NULL) {
    redcoll_comm *c;
    *transport = "tcp";
    int rc = redcoll_tcp_comm_create_from_env(&c);
    if (rc != REDCOLL_OK) return rc;
    *rank = redcoll_comm_rank(c);
    *size = redcoll_comm_size(c);
    rc = *size < 2 ? REDCOLL_EINVAL : fn(c, arg);
    redcoll_comm_destroy(c);
    return rc;
  }
#endif
  return redcoll_threads_run(p, fn, arg);
}

static int cmd_measure(int argc, char **argv) {
  const char *out = NULL;
  tune t;
  memset(&t, 0, sizeof t);
  t.iters = 21;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--out") == 0 && i + 1 < argc) out = argv[++i];
    else if (strcmp(argv[i], "--iters") == 0 && i + 1 < argc) t.iters = atoi(argv[++i]);
    else {
      fprintf(stderr, "redcoll-tune: unknown option %s (see the source's header)\n", argv[i]);
      return 2;
    }
  }
  if (t.iters < 1) t.iters = 1;
  const char *transport;
  int rank, size;
  int rc = run_ranks(2, two_ranks_main, &t, &transport, &rank, &size);
  if (rc != REDCOLL_OK) {
    fprintf(stderr, "redcoll-tune: ping-pong: %s\n", redcoll_strerror(rc));
    return 1;
  }
  if (rank != 0) return 0;
  fit(&t);
  measure_gamma(&t);
  for (int s = 0; s < NSIZES; s++)
    fprintf(stderr, "redcoll-tune: %s %zu bytes: %.3f us one way\n", transport, sizes[s],
            t.half_rtt[s] * 1e6);
  fprintf(stderr, "redcoll-tune: %s alpha %.4g s, beta %.4g s/B (%.3g GB/s), gamma %.4g s/B\n",
          transport, t.alpha, t.beta, t.beta > 0 ? 1e-9 / t.beta : 0.0, t.gamma);
  return write_entry(out, transport, &t) == 0 ? 0 : 1;
}

/* ---- self-calibration, repeated ------------------------------------------ */

#define CAL_MAX_REPS 200
#define CAL_POINTS 23 /* allreduce of 8 B .. 32 MiB float32, factor 2 */

typedef struct cal {
  int reps;
  double m[CAL_MAX_REPS][3];
} cal;

/* The library's own calibration (redcoll_comm_calibrate), reps times, each
 * on a fresh duplicate of c as a new communicator would do it. */
static int calibrate_reps(redcoll_comm *c, cal *k) {
  for (int i = 0; i < k->reps; i++) {
    redcoll_comm *d;
    int rc = redcoll_comm_dup(c, &d);
    if (rc == REDCOLL_OK) rc = redcoll_comm_calibrate(d);
    if (rc == REDCOLL_OK) rc = redcoll_comm_get_cost_model(d, &k->m[i][0], &k->m[i][1], &k->m[i][2]);
    redcoll_comm_destroy(d);
    if (rc != REDCOLL_OK) return rc;
  }
  return REDCOLL_OK;
}

static int calibrate_main(redcoll_comm *c, void *arg) { return calibrate_reps(c, arg); }

/* Prints the spread of each term and how often AUTO's allreduce choice
 * under each repetition's model is the most common one, over the sizes. */
static void calibrate_report(const cal *k, int p, const char *transport) {
  const char *names[3] = {"alpha", "beta", "gamma"};
  for (int t = 0; t < 3; t++) {
    double v[CAL_MAX_REPS] = {0};
    for (int i = 0; i < k->reps; i++) v[i] = k->m[i][t];
    double lo = v[0], hi = v[0];
    for (int i = 1; i < k->reps; i++) {
      if (v[i] < lo) lo = v[i];
      if (v[i] > hi) hi = v[i];
    }
    printf("%s,%d,%s,min %.4g,median %.4g,max %.4g\n", transport, p, names[t], lo,
           stats_median(v, (size_t)k->reps), hi);
  }
  int same = 0, points = 0;
  for (int s = 0; s < CAL_POINTS; s++) {
    size_t count = ((size_t)8 << s) / 4;
    int votes[REDCOLL_ALGO_COUNT] = {0};
    redcoll_algo pick[CAL_MAX_REPS];
    for (int i = 0; i < k->reps; i++) {
      pick[i] = redcoll_cost_choose(REDCOLL_COLL_ALLREDUCE, p, count, 4, REDCOLL_DEFAULT_THRESHOLD,
                                    REDCOLL_CHOOSE_COMMUTATIVE, k->m[i][0], k->m[i][1],
                                    k->m[i][2]);
      votes[pick[i]]++;
    }
    int best = 0;
    for (int x = 1; x < REDCOLL_ALGO_COUNT; x++)
      if (votes[x] > votes[best]) best = x;
    same += votes[best];
    points += k->reps;
  }
  printf("%s,%d,auto allreduce 8 B..32 MiB: the most common choice at %.1f %% of %d "
         "(repetition, size) points\n",
         transport, p, 100.0 * same / points, points);
}

static int cmd_calibrate(int argc, char **argv) {
  cal *k = calloc(1, sizeof *k);
  if (k == NULL) return 1;
  k->reps = 20;
  int p = 4;
  for (int i = 2; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "--reps") == 0) k->reps = atoi(argv[i + 1]);
    else if (strcmp(argv[i], "--p") == 0) p = atoi(argv[i + 1]);
  }
  if (k->reps < 1 || k->reps > CAL_MAX_REPS || p < 2) {
    fprintf(stderr, "redcoll-tune calibrate: --reps 1..%d, --p >= 2\n", CAL_MAX_REPS);
    free(k);
    return 2;
  }
  const char *transport;
  int rank;
  int rc = run_ranks(p, calibrate_main, k, &transport, &rank, &p);
  if (rc != REDCOLL_OK) {
    fprintf(stderr, "redcoll-tune calibrate: %s\n", redcoll_strerror(rc));
    free(k);
    return 1;
  }
  if (rank == 0) calibrate_report(k, p, transport);
  free(k);
  return 0;
}

/* ---- predictions --------------------------------------------------------- */

static int cmd_predict(int argc, char **argv) {
  redcoll_coll coll = REDCOLL_COLL_ALLREDUCE;
  long p = 0;
  unsigned long long count = 0, esize = 8, thr = REDCOLL_DEFAULT_THRESHOLD;
  double a = 1e-5, b = 1e-9, g = 2.5e-10;
  int commutative = 1;
  for (int i = 2; i < argc; i++) {
    const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(o, "--noncomm") == 0) {
      commutative = 0;
      continue;
    }
    if (v == NULL) {
      fprintf(stderr, "redcoll-tune: %s needs a value\n", o);
      return 2;
    }
    i++;
    if (strcmp(o, "--coll") == 0) {
      if (redcoll_coll_parse(v, &coll) != REDCOLL_OK) {
        fprintf(stderr, "redcoll-tune: unknown collective %s\n", v);
        return 2;
      }
    } else if (strcmp(o, "--p") == 0) p = strtol(v, NULL, 10);
    else if (strcmp(o, "--count") == 0) count = strtoull(v, NULL, 10);
    else if (strcmp(o, "--esize") == 0) esize = strtoull(v, NULL, 10);
    else if (strcmp(o, "--threshold") == 0) thr = strtoull(v, NULL, 10);
    else if (strcmp(o, "--alpha") == 0) a = strtod(v, NULL);
    else if (strcmp(o, "--beta") == 0) b = strtod(v, NULL);
    else if (strcmp(o, "--gamma") == 0) g = strtod(v, NULL);
    else {
      fprintf(stderr, "redcoll-tune: unknown option %s\n", o);
      return 2;
    }
  }
  if (p < 1 || p > 65536 || esize == 0 || thr == 0) {
    fprintf(stderr, "redcoll-tune predict: --p (1..65536) and --count are required\n");
    return 2;
  }
  for (int x = 1; x < REDCOLL_ALGO_COUNT; x++) {
    if (!redcoll_algo_is_supported(coll, (redcoll_algo)x)) continue;
    double t;
    if (redcoll_cost_predict(coll, (redcoll_algo)x, (int)p, (size_t)count, (size_t)esize,
                             (size_t)thr, a, b, g, &t) != REDCOLL_OK)
      continue;
    printf("{\"coll\":\"%s\",\"algo\":\"%s\",\"p\":%ld,\"count\":%llu,\"predicted\":%.17g%s}\n",
           redcoll_coll_name(coll), redcoll_algo_name((redcoll_algo)x), p, count, t,
           redcoll_algo_is_rank_ordered(coll, (redcoll_algo)x) ? "" : ",\"commutative_only\":true");
  }
  redcoll_algo ch = redcoll_cost_choose(coll, (int)p, (size_t)count, (size_t)esize, (size_t)thr,
                                        commutative, a, b, g);
  printf("{\"coll\":\"%s\",\"algo\":\"auto\",\"chosen\":\"%s\",\"p\":%ld,\"count\":%llu}\n",
         redcoll_coll_name(coll), redcoll_algo_name(ch), p, count);
  return 0;
}

int main(int argc, char **argv) {
  if (argc > 1 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
    printf("usage: redcoll-tune [--out FILE] [--iters N]\n"
           "       redcoll-tune predict --coll C --p N --count N [--esize E] [--threshold B]\n"
           "                    [--alpha A --beta B --gamma G] [--noncomm]\n"
           "       redcoll-tune calibrate [--reps N] [--p P]\n"
           "see docs/tuning.md\n");
    return 0;
  }
  if (argc > 1 && strcmp(argv[1], "predict") == 0) return cmd_predict(argc, argv);
  if (argc > 1 && strcmp(argv[1], "calibrate") == 0) return cmd_calibrate(argc, argv);
  return cmd_measure(argc, argv);
}
