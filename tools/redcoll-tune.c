/*
 * redcoll-tune: measures the cost model of a transport and writes the tuning
 * file that REDCOLL_TUNING_FILE or redcoll_comm_load_tuning() loads
 * (format in docs/tuning.md); also prints what AUTO predicts and chooses.
 *
 *   redcoll-tune [--out FILE] [--iters N] [--ranks-per-host T]
 *       threads transport (2 ranks as threads; with T > 1, 2 pretended
 *       hosts of T threads); under redcoll-run (the TCP environment is set)
 *       the TCP transport, ranks sharing a host when their host name, boot,
 *       network namespace and user agree.  alpha and beta: ping-pong (n
 *       bytes there, n back, half the round trip) at several sizes,
 *       fitted by least squares, between rank 0 and the first rank on
 *       another host (rank 1 without hosts or on one host); with more than
 *       one host and a host of two ranks, also between the first two ranks
 *       of one host: local_alpha and local_beta.  The others wait.  gamma:
 *       float64 SUM with redcoll_reduce_local over 4 MiB.  Medians of
 *       --iters runs.  Rank 0 appends or replaces its transport's line in
 *       FILE (default: stdout): three numbers, or five with local ones.
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
#include <unistd.h>

#include "redcoll/redcoll.h"
#include "redcoll/threads.h"
#ifdef REDCOLL_TUNE_TCP
#include "redcoll/tcp.h"
#endif
#include "stats.h"

/* ---- measurement --------------------------------------------------------- */

#define NSIZES 5
static const size_t sizes[NSIZES] = {0, 4096, 65536, 1 << 20, 4 << 20};
#define KEY_LEN 192 /* a host's identity, NUL-padded */

/* One path: half the round trip between two ranks at each size, the fit. */
typedef struct path {
  int a, b;                /* the ranks; a < 0: not measured */
  double half_rtt[NSIZES]; /* seconds, on every rank after measure_path */
  double alpha, beta;
} path;

typedef struct tune {
  int iters;
  int ranks_per_host; /* threads: pretend hosts of this many ranks (0: none) */
  path net, local;    /* between hosts (or the only path), inside a host */
  double gamma;
} tune;

/* What makes ranks share a host, as the transports' host identity: the
 * machine (host name, boot), the network namespace, the user. */
static void host_key(char key[KEY_LEN]) {
  char name[64] = "", boot[40] = "", net[64] = "";
  gethostname(name, sizeof name - 1);
  FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
  if (f != NULL) {
    if (fgets(boot, sizeof boot, f) == NULL) boot[0] = '\0';
    boot[strcspn(boot, "\n")] = '\0';
    fclose(f);
  }
  ssize_t n = readlink("/proc/self/ns/net", net, sizeof net - 1);
  net[n > 0 ? n : 0] = '\0';
  memset(key, 0, KEY_LEN);
  snprintf(key, KEY_LEN, "%s|%s|%s|%u", name, boot, net, (unsigned)getuid());
}

/* host[r] for every rank: the first rank of r's host.  Threads: hosts of
 * t->ranks_per_host ranks (or none); processes: ranks whose host_key
 * agrees (an allgather). */
static int find_hosts(redcoll_comm *c, const tune *t, int threads, int *host) {
  int p = redcoll_comm_size(c);
  if (threads) {
    int T = t->ranks_per_host > 1 ? t->ranks_per_host : 1;
    for (int r = 0; r < p; r++) host[r] = r / T * T;
    return REDCOLL_OK;
  }
  char mine[KEY_LEN], *all = malloc((size_t)p * KEY_LEN);
  if (all == NULL) return REDCOLL_ENOMEM;
  host_key(mine);
  int rc = redcoll_allgather(c, mine, all, KEY_LEN, REDCOLL_UINT8);
  for (int r = 0; r < p && rc == REDCOLL_OK; r++) {
    host[r] = r;
    for (int q = 0; q < r; q++)
      if (memcmp(all + (size_t)q * KEY_LEN, all + (size_t)r * KEY_LEN, KEY_LEN) == 0) {
        host[r] = q;
        break;
      }
  }
  free(all);
  return rc;
}

/* The pairs to measure: between rank 0 and the first rank on another host
 * (ranks 0 and 1 without hosts or with one host), and, when some host
 * holds two ranks and there is more than one host, between the first two
 * ranks of one host. */
static void choose_pairs(const int *host, int p, tune *t) {
  int other = -1, first = -1, second = -1;
  for (int r = 1; r < p; r++) {
    if (other < 0 && host[r] != host[0]) other = r;
    if (second < 0 && host[r] != r) {
      first = host[r];
      second = r;
    }
  }
  t->net.a = 0;
  t->net.b = other >= 0 ? other : 1;
  t->local.a = other >= 0 && second >= 0 ? first : -1;
  t->local.b = second;
}

/* Half the round trip of each size between pt->a and pt->b (n bytes there,
 * n back, the median of t->iters after 2 warm-ups), then pt->a's numbers
 * to every rank; the other ranks wait. */
static int measure_path(redcoll_comm *c, const tune *t, path *pt) {
  int rank = redcoll_comm_rank(c);
  unsigned char *buf = malloc(sizes[NSIZES - 1] + 1);
  double *v = malloc(sizeof(double) * (size_t)t->iters);
  int rc = buf != NULL && v != NULL ? redcoll_barrier(c) : REDCOLL_ENOMEM;
  if (buf != NULL) memset(buf, rank, sizes[NSIZES - 1] + 1);
  for (int s = 0; s < NSIZES && rc == REDCOLL_OK; s++) {
    size_t n = sizes[s] ? sizes[s] : 1; /* count 0 sends nothing: 1 byte */
    for (int i = -2; i < t->iters && rc == REDCOLL_OK; i++) {
      double t0 = stats_now();
      if (rank == pt->a) {
        rc = redcoll_send(c, pt->b, (uint32_t)s, buf, n);
        if (rc == REDCOLL_OK) rc = redcoll_recv(c, pt->b, (uint32_t)s, buf, n);
      } else if (rank == pt->b) {
        rc = redcoll_recv(c, pt->a, (uint32_t)s, buf, n);
        if (rc == REDCOLL_OK) rc = redcoll_send(c, pt->a, (uint32_t)s, buf, n);
      }
      if (i >= 0) v[i] = (stats_now() - t0) / 2;
    }
    if (rc == REDCOLL_OK && rank == pt->a) pt->half_rtt[s] = stats_median(v, (size_t)t->iters);
  }
  if (rc == REDCOLL_OK) rc = redcoll_bcast(c, pt->half_rtt, NSIZES, REDCOLL_FLOAT64, pt->a);
  free(buf);
  free(v);
  return rc;
}

typedef struct run_arg {
  tune *t;
  int threads;
} run_arg;

static int measure_main(redcoll_comm *c, void *arg) {
  run_arg *ra = arg;
  tune *t = ra->t;
  int p = redcoll_comm_size(c);
  int *host = malloc((size_t)p * sizeof *host);
  if (host == NULL) return REDCOLL_ENOMEM;
  int rc = find_hosts(c, t, ra->threads, host);
  /* every thread computes the same pairs; rank 0's copy is the one kept */
  tune mine = *t;
  if (rc == REDCOLL_OK) choose_pairs(host, p, &mine);
  free(host);
  if (rc == REDCOLL_OK) rc = measure_path(c, &mine, &mine.net);
  if (rc == REDCOLL_OK && mine.local.a >= 0) rc = measure_path(c, &mine, &mine.local);
  if (rc == REDCOLL_OK && redcoll_comm_rank(c) == 0) *t = mine;
  return rc;
}

static void fit(path *pt) {
  /* least squares of half_rtt = alpha + n beta over the sizes */
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (int s = 0; s < NSIZES; s++) {
    double x = (double)(sizes[s] ? sizes[s] : 1), y = pt->half_rtt[s];
    sx += x;
    sy += y;
    sxx += x * x;
    sxy += x * y;
  }
  double den = NSIZES * sxx - sx * sx;
  pt->beta = den > 0 ? (NSIZES * sxy - sx * sy) / den : 0;
  if (pt->beta < 0) pt->beta = 0;
  /* alpha from the smallest message: the fit's intercept is noisy */
  pt->alpha = pt->half_rtt[0] - pt->beta;
  if (pt->alpha < 0) pt->alpha = 0;
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

#define FILE_HEADER                                                                        \
  "# redcoll tuning file (docs/tuning.md): transport alpha(s) beta(s/byte) gamma(s/byte) " \
  "[local_alpha(s) local_beta(s/byte)]\n"

/* Replaces (or adds) the line of transport in file, keeping the others:
 * alpha, beta and gamma, and with a measured path inside a host its alpha
 * and beta. */
static int write_entry(const char *file, const char *transport, const tune *t) {
  char line[256];
  int n = snprintf(line, sizeof line, "%s %.6g %.6g %.6g", transport, t->net.alpha, t->net.beta,
                   t->gamma);
  if (t->local.a >= 0)
    n += snprintf(line + n, sizeof line - (size_t)n, " %.6g %.6g", t->local.alpha, t->local.beta);
  snprintf(line + n, sizeof line - (size_t)n, "\n");
  if (file == NULL) {
    printf(FILE_HEADER "%s", line);
    return 0;
  }
  char *keep = NULL;
  size_t keep_len = 0;
  FILE *in = fopen(file, "r");
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
  FILE *out = fopen(file, "w");
  if (out == NULL) {
    fprintf(stderr, "redcoll-tune: %s: %s\n", file, strerror(errno));
    free(keep);
    return -1;
  }
  if (keep == NULL || keep_len == 0)
    fputs(FILE_HEADER, out);
  else
    fputs(keep, out);
  fputs(line, out);
  free(keep);
  return fclose(out) == 0 ? 0 : -1;
}

/* fn on every rank: under redcoll-run (the TCP environment set) this
 * process's TCP rank, at least two of them; else p threads (hosts of
 * ranks_per_host of them when that is above 1).  *transport names which,
 * *rank is this process's rank (0 for threads), *size p, *threads whether
 * the ranks are threads. */
static int run_ranks(int p, int ranks_per_host, redcoll_rank_main fn, void *arg,
                     const char **transport, int *rank, int *size) {
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
  redcoll_threads_config cfg;
  redcoll_threads_config_init(&cfg);
  cfg.ranks_per_host = ranks_per_host;
  return redcoll_threads_run_config(p, &cfg, fn, arg, NULL);
}

static void report_path(const char *transport, const char *what, const path *pt) {
  for (int s = 0; s < NSIZES; s++)
    fprintf(stderr, "redcoll-tune: %s %s (ranks %d and %d) %zu bytes: %.3f us one way\n",
            transport, what, pt->a, pt->b, sizes[s], pt->half_rtt[s] * 1e6);
  fprintf(stderr, "redcoll-tune: %s %s alpha %.4g s, beta %.4g s/B (%.3g GB/s)\n", transport,
          what, pt->alpha, pt->beta, pt->beta > 0 ? 1e-9 / pt->beta : 0.0);
}

static int cmd_measure(int argc, char **argv) {
  const char *out = NULL;
  tune t;
  memset(&t, 0, sizeof t);
  t.iters = 21;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--out") == 0 && i + 1 < argc) out = argv[++i];
    else if (strcmp(argv[i], "--iters") == 0 && i + 1 < argc) t.iters = atoi(argv[++i]);
    else if (strcmp(argv[i], "--ranks-per-host") == 0 && i + 1 < argc)
      t.ranks_per_host = atoi(argv[++i]);
    else {
      fprintf(stderr, "redcoll-tune: unknown option %s (see the source's header)\n", argv[i]);
      return 2;
    }
  }
  if (t.iters < 1) t.iters = 1;
  if (t.ranks_per_host < 0 || t.ranks_per_host > 64) {
    fprintf(stderr, "redcoll-tune: --ranks-per-host 0..64\n");
    return 2;
  }
  const char *transport;
  int rank, size;
  int threads = t.ranks_per_host > 1 ? 2 * t.ranks_per_host : 2;
  run_arg ra = {&t, 1};
#ifdef REDCOLL_TUNE_TCP
  ra.threads = getenv("REDCOLL_RANK") == NULL;
#endif
  int rc = run_ranks(threads, t.ranks_per_host, measure_main, &ra, &transport, &rank, &size);
  if (rc != REDCOLL_OK) {
    fprintf(stderr, "redcoll-tune: ping-pong: %s\n", redcoll_strerror(rc));
    return 1;
  }
  if (rank != 0) return 0;
  fit(&t.net);
  report_path(transport, t.local.a >= 0 ? "between hosts" : "ping-pong", &t.net);
  if (t.local.a >= 0) {
    fit(&t.local);
    report_path(transport, "inside a host", &t.local);
  }
  measure_gamma(&t);
  fprintf(stderr, "redcoll-tune: gamma %.4g s/B\n", t.gamma);
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
  int rc = run_ranks(p, 0, calibrate_main, k, &transport, &rank, &p);
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
    printf("usage: redcoll-tune [--out FILE] [--iters N] [--ranks-per-host T]\n"
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
