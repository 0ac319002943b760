/*
 * redcoll-sim: runs a collective under the simulator for every p, count,
 * algorithm and root asked for, and prints one line per run (a JSON object,
 * or a CSV row after a header), with the result verified against a
 * sequential reduction in rank order.  Exits 1 if any line is not ok, 2 on
 * a usage error.  See docs/simulator.md and `redcoll-sim --help`.
 */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

static void usage(FILE *f) {
  fprintf(f,
          "usage: redcoll-sim --coll C --algo A --p LIST --count LIST [options]\n"
          "  --coll     allreduce reduce reduce_scatter_block reduce_scatter allgather\n"
          "             allgatherv bcast gather scatter barrier scan exscan\n"
          "             exscan_total alltoall alltoallv gatherv scatterv\n"
          "             allgatherv_displs\n"
          "  --algo     an algorithm name (see docs/algorithms), auto, or all (every\n"
          "             algorithm of the collective that applies: with --op noncomm\n"
          "             not those that need a commutative operator, with --op\n"
          "             sumrandom not those whose ranks may differ in the last bits);\n"
          "             or a comma list of these (auto,all)\n"
          "  --p        number of ranks: N, a range A-B, or a LIST (one line per p)\n"
          "  --count    the count argument of the collective (the per-rank block\n"
          "             for reduce_scatter_block, allgather, gather and scatter):\n"
          "             N or a LIST\n"
          "             LIST: comma-separated items N, A-B (every value), A-B:+S\n"
          "             (step S) or A-B:xF (times F); numbers may end in K, M or G\n"
          "             (x 1024, 1024^2, 1024^3).  --p 2-16,32,64  --count 8-16M:x8\n"
          "             Lines come for each p, then each count, algorithm and root.\n"
          "  --counts   c0,c1,...  per-rank blocks (reduce_scatter, allgatherv)\n"
          "  --irregular 0|1|2  alltoallv, gatherv, scatterv: blocks of count\n"
          "             elements end to end (0), uneven with zeros and gaps (1),\n"
          "             very uneven (2); see tests/oracle/check.h\n"
          "  --dtype    int8 uint8 int16 uint16 int32 uint32 int64 uint64 f16 bf16\n"
          "             f32 f64 (also the long names float64, ...); default f64\n"
          "  --op       sum | max | noncomm (2x2 matrix product mod 65521) |\n"
          "             sumrandom (random float64, bitwise-equal on all ranks)\n"
          "  --root R   root rank (default 0); --root all runs every root\n"
          "  --in-place use REDCOLL_IN_PLACE\n"
          "  --threshold BYTES   butterfly block threshold b\n"
          "  --alpha A --beta B --gamma G   cost model (default 1 0 0); with\n"
          "             --ranks-per-host, alpha and beta are between hosts\n"
          "  --ranks-per-host T  T consecutive ranks per host (0 or 1: every\n"
          "             rank its own host); max_host_bytes_out is the most\n"
          "             bytes one host sent to other hosts\n"
          "  --local-alpha A --local-beta B  cost of a message inside a host\n"
          "             (default 0 0)\n"
          "  --model A,B,G  the cost model --algo auto chooses by (default: the\n"
          "             simulator's --alpha, --beta, --gamma); the line's algo is\n"
          "             the algorithm it chose\n"
          "  --seed S   scheduler seed (default 1)\n"
          "  --eager BYTES  messages shorter than this are eager (default 0)\n"
          "  --format json|csv  one JSON object per line (default), or a CSV header\n"
          "             line and one row per run with the same keys (error empty\n"
          "             when ok)\n"
          "  --trace FILE   append every message of every run to FILE\n"
          "  --dot FILE     the communication graph of the run (one p, count and\n"
          "                 algorithm): nodes are ranks, edges messages;\n"
          "                 render: dot -Tsvg FILE -o FILE.svg\n"
          "  --dot-rounds FILE  the run as a rank x round picture (one p, count\n"
          "                 and algorithm): a row per rank, a column per round, an\n"
          "                 arrow per message;\n"
          "                 render: neato -n2 -Tsvg FILE -o FILE.svg\n");
}

static int parse_dtype(const char *s, redcoll_dtype *dt) {
  static const struct {
    const char *a, *b;
    redcoll_dtype dt;
  } tab[] = {
      {"i8", "int8", REDCOLL_INT8},       {"u8", "uint8", REDCOLL_UINT8},
      {"i16", "int16", REDCOLL_INT16},    {"u16", "uint16", REDCOLL_UINT16},
      {"i32", "int32", REDCOLL_INT32},    {"u32", "uint32", REDCOLL_UINT32},
      {"i64", "int64", REDCOLL_INT64},    {"u64", "uint64", REDCOLL_UINT64},
      {"f16", "float16", REDCOLL_FLOAT16}, {"bf16", "bfloat16", REDCOLL_BFLOAT16},
      {"f32", "float32", REDCOLL_FLOAT32}, {"f64", "float64", REDCOLL_FLOAT64},
  };
  for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++) {
    if (strcmp(s, tab[i].a) == 0 || strcmp(s, tab[i].b) == 0) {
      *dt = tab[i].dt;
      return 0;
    }
  }
  return -1;
}

static int parse_u64(const char *s, unsigned long long *v) {
  char *end;
  errno = 0;
  if (*s == '-' || *s == '\0') return -1;
  *v = strtoull(s, &end, 0);
  return errno || *end ? -1 : 0;
}

static int parse_double(const char *s, double *v) {
  char *end;
  errno = 0;
  *v = strtod(s, &end);
  return errno || *end || *s == '\0' ? -1 : 0;
}

/* A list of values of --p or --count. */
typedef struct value_list {
  unsigned long long *v;
  size_t n;
} value_list;

#define LIST_MAX 1000000 /* values in one list */

static int list_add(value_list *l, unsigned long long v) {
  if (l->n == LIST_MAX) return -1;
  if ((l->n & (l->n - 1)) == 0) { /* 0, 1, 2, 4, ...: grow to twice */
    unsigned long long *nv = realloc(l->v, (l->n ? 2 * l->n : 1) * sizeof *nv);
    if (nv == NULL) return -1;
    l->v = nv;
  }
  l->v[l->n++] = v;
  return 0;
}

/* One number of a LIST, with an optional K, M or G; *s moves past it. */
static int list_num(const char **s, unsigned long long *v) {
  char *end;
  if (**s < '0' || **s > '9') return -1;
  errno = 0;
  *v = strtoull(*s, &end, 0);
  int shift = *end == 'K' ? 10 : *end == 'M' ? 20 : *end == 'G' ? 30 : 0;
  if (errno || *v > ULLONG_MAX >> shift) return -1;
  *v <<= shift;
  *s = end + (shift != 0);
  return 0;
}

/* Parses a LIST (see usage) into l, replacing what it held: items N, A-B,
 * A-B:+S and A-B:xF separated by commas.  Returns -1 if malformed. */
static int parse_list(const char *s, value_list *l) {
  l->n = 0;
  for (;;) {
    unsigned long long a, b, step = 1;
    char how = '+';
    if (list_num(&s, &a)) return -1;
    b = a;
    if (*s == '-' && (s++, list_num(&s, &b) || b < a)) return -1;
    if (*s == ':') {
      how = s[1];
      s += how ? 2 : 1;
      if ((how != '+' && how != 'x') || list_num(&s, &step) || step < (how == 'x' ? 2u : 1u) ||
          (how == 'x' && a == 0))
        return -1;
    }
    for (unsigned long long v = a;; v = how == 'x' ? v * step : v + step) {
      if (list_add(l, v)) return -1;
      if (how == 'x' ? v > b / step : b - v < step) break; /* the next would pass b */
    }
    if (*s == '\0') return 0;
    if (*s++ != ',') return -1;
  }
}

/* The keys of a line, in order; text values are quoted in JSON. */
static const struct {
  const char *key;
  int text;
} keys[] = {
    {"coll", 1},   {"algo", 1},           {"requested", 1},      {"p", 0},
    {"count", 0},  {"dtype", 1},          {"op", 1},             {"root", 0},
    {"in_place", 0}, {"bytes", 0},        {"ok", 0},             {"status", 1},
    {"time", 0},   {"rounds", 0},         {"max_bytes_sent", 0}, {"max_bytes_recv", 0},
    {"max_bytes_reduced", 0}, {"msgs", 0}, {"max_host_bytes_out", 0},
    {"model_time", 0}, {"error", 1},
};
#define NKEYS (sizeof keys / sizeof keys[0])

/* A text value: JSON escapes " and \, CSV quotes the value if it holds a
 * comma or a quote and doubles the quotes; both turn newlines into spaces. */
static void put_text(const char *s, int csv) {
  int quote = !csv || strpbrk(s, ",\"\n") != NULL;
  if (quote) putchar('"');
  for (; *s; s++) {
    if (*s == '"' || (*s == '\\' && !csv)) putchar(csv ? '"' : '\\');
    putchar(*s == '\n' ? ' ' : *s);
  }
  if (quote) putchar('"');
}

/* One line: val[i] is the value of keys[i]; NULL (the error of a run
 * that is ok) is left out of JSON and empty in CSV. */
static void put_line(const char *const *val, int csv) {
  for (size_t i = 0; i < NKEYS; i++) {
    const char *v = val[i] ? val[i] : "";
    if (!csv && val[i] == NULL) continue;
    if (csv) {
      if (i) putchar(',');
    } else {
      printf("%s\"%s\":", i ? "," : "{", keys[i].key);
    }
    if (keys[i].text) put_text(v, csv);
    else fputs(v, stdout);
  }
  puts(csv ? "" : "}");
}

static const char *op_name(check_op op) {
  switch (op) {
    case CHECK_OP_MAX: return "max";
    case CHECK_OP_NONCOMM: return "noncomm";
    case CHECK_OP_SUM_RANDOM: return "sumrandom";
    default: return "sum";
  }
}

/* The rank x round picture of the messages in trace (the simulator's
 * trace lines: src, dst, bytes and round): rank r's node in round t sits at
 * column t, row r, with pinned positions for neato -n2; a message of round
 * t is an arrow from its sender's node of round t - 1 to its receiver's of
 * round t.  Returns 0, or -1 if the file cannot be written. */
static int write_rounds(FILE *trace, const char *path, int p) {
  FILE *f = fopen(path, "w");
  if (f == NULL) {
    perror(path);
    return -1;
  }
  unsigned long long rounds = 0;
  char line[512];
  rewind(trace);
  while (fgets(line, sizeof line, trace) != NULL) {
    const char *r = strstr(line, " round=");
    unsigned long long t = r ? strtoull(r + 7, NULL, 10) : 0;
    if (t > rounds) rounds = t;
  }
  fprintf(f, "digraph rounds {\n  graph [splines=line, outputorder=edgesfirst];\n"
             "  node [shape=circle, width=0.4, fixedsize=true, fontsize=10];\n"
             "  edge [fontsize=8, arrowsize=0.6];\n");
  for (unsigned long long t = 0; t <= rounds; t++) {
    if (t == 0)
      fprintf(f, "  round0 [shape=plaintext, fixedsize=false, label=\"start\", pos=\"0,40!\"];\n");
    else
      fprintf(f, "  round%llu [shape=plaintext, fixedsize=false, label=\"round %llu\", pos=\"%llu,40!\"];\n",
              t, t, t * 110);
    for (int r = 0; r < p; r++)
      fprintf(f, "  n%d_%llu [label=\"%d\", pos=\"%llu,%d!\"];\n", r, t, r, t * 110, -60 * r);
  }
  rewind(trace);
  while (fgets(line, sizeof line, trace) != NULL) {
    int src, dst;
    size_t bytes;
    unsigned long long t;
    const char *s = strstr(line, "src="), *b = strstr(line, "bytes="), *r = strstr(line, " round=");
    if (!s || !b || !r || sscanf(s, "src=%d dst=%d", &src, &dst) != 2 ||
        sscanf(b, "bytes=%zu", &bytes) != 1 || sscanf(r, " round=%llu", &t) != 1 || t == 0)
      continue;
    fprintf(f, "  n%d_%llu -> n%d_%llu [label=\"%zu B\"];\n", src, t - 1, dst, t, bytes);
  }
  fprintf(f, "}\n");
  return fclose(f) == 0 ? 0 : -1;
}

/* Whether algorithm a of coll can run op: commutative-only algorithms
 * refuse noncomm, and sumrandom asks for the same bits on every rank. */
static int algo_applies(redcoll_coll coll, redcoll_algo a, check_op op) {
  if (op == CHECK_OP_NONCOMM) return redcoll_algo_is_rank_ordered(coll, a);
  if (op == CHECK_OP_SUM_RANDOM) return redcoll_algo_is_rank_identical(coll, a);
  return 1;
}

/* Parses --algo's comma list into algos (each algorithm once, in the order
 * named; all adds every algorithm of coll that applies to op).  Returns the
 * number, or -1 (an unknown name, with a message) or -2 (one coll lacks). */
static int parse_algos(const char *s, redcoll_coll coll, check_op op, redcoll_algo *algos) {
  int n = 0, seen[REDCOLL_ALGO_COUNT] = {0};
  char *copy = strdup(s), *save = NULL;
  if (copy == NULL) return -1;
  for (char *tok = strtok_r(copy, ",", &save); tok && n >= 0; tok = strtok_r(NULL, ",", &save)) {
    redcoll_algo a;
    int all = strcmp(tok, "all") == 0;
    if (!all && redcoll_algo_parse(tok, &a) != REDCOLL_OK) {
      fprintf(stderr, "redcoll-sim: bad value for --algo: %s\n", tok);
      n = -1;
    } else if (!all && !redcoll_algo_is_supported(coll, a)) {
      fprintf(stderr, "redcoll-sim: %s has no algorithm %s\n", redcoll_coll_name(coll), tok);
      n = -2;
    }
    for (int i = 0; n >= 0 && i < REDCOLL_ALGO_COUNT; i++) {
      redcoll_algo b = (redcoll_algo)i;
      int take = all ? b != REDCOLL_ALGO_AUTO && redcoll_algo_is_supported(coll, b) &&
                           algo_applies(coll, b, op)
                     : b == a;
      if (take && !seen[i]) {
        seen[i] = 1;
        algos[n++] = b;
      }
    }
  }
  free(copy);
  return n;
}

int main(int argc, char **argv) {
  check_case tc;
  check_case_init(&tc);
  int have_coll = 0, have_p = 0, have_count = 0, all_roots = 0, csv = 0, root = 0;
  unsigned long long v;
  const char *algo_arg = NULL, *trace_path = NULL, *dot_path = NULL, *rounds_path = NULL,
             *model = NULL;
  size_t *counts = NULL;
  int ncounts = 0;
  /* Static: the lists live until exit, error exits included. */
  static value_list ps = {NULL, 0}, cnts = {NULL, 0};

  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    const char *val = i + 1 < argc ? argv[i + 1] : NULL;
    int bad = 0;
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      usage(stdout);
      return 0;
    } else if (strcmp(a, "--in-place") == 0) {
      tc.in_place = 1;
      continue;
    }
    if (val == NULL) {
      fprintf(stderr, "redcoll-sim: %s needs a value\n", a);
      return 2;
    }
    i++;
    if (strcmp(a, "--coll") == 0) {
      bad = redcoll_coll_parse(val, &tc.coll) != REDCOLL_OK;
      have_coll = 1;
    } else if (strcmp(a, "--algo") == 0) {
      algo_arg = val;
    } else if (strcmp(a, "--p") == 0) {
      bad = parse_list(val, &ps);
      for (size_t k = 0; !bad && k < ps.n; k++) bad = ps.v[k] < 1 || ps.v[k] > 65536;
      have_p = 1;
    } else if (strcmp(a, "--count") == 0) {
      bad = parse_list(val, &cnts);
      for (size_t k = 0; !bad && k < cnts.n; k++) bad = cnts.v[k] > SIZE_MAX;
      have_count = 1;
    } else if (strcmp(a, "--counts") == 0) {
      free(counts);
      counts = NULL;
      ncounts = 0;
      char *copy = strdup(val), *save = NULL;
      for (char *tok = strtok_r(copy, ",", &save); tok && !bad; tok = strtok_r(NULL, ",", &save)) {
        size_t *nc = realloc(counts, (size_t)(ncounts + 1) * sizeof *counts);
        if (nc == NULL || parse_u64(tok, &v)) {
          bad = 1;
          if (nc) counts = nc;
          break;
        }
        counts = nc;
        counts[ncounts++] = (size_t)v;
      }
      free(copy);
      have_count = 1;
    } else if (strcmp(a, "--irregular") == 0) {
      bad = parse_u64(val, &v) || v > 2;
      tc.irregular = (int)v;
    } else if (strcmp(a, "--dtype") == 0) {
      bad = parse_dtype(val, &tc.dtype);
    } else if (strcmp(a, "--op") == 0) {
      if (strcmp(val, "sum") == 0) tc.op = CHECK_OP_SUM;
      else if (strcmp(val, "max") == 0) tc.op = CHECK_OP_MAX;
      else if (strcmp(val, "noncomm") == 0) tc.op = CHECK_OP_NONCOMM;
      else if (strcmp(val, "sumrandom") == 0) tc.op = CHECK_OP_SUM_RANDOM;
      else bad = 1;
    } else if (strcmp(a, "--root") == 0) {
      if (strcmp(val, "all") == 0) {
        all_roots = 1;
      } else {
        bad = parse_u64(val, &v) || v > 65535;
        root = (int)v;
        all_roots = 0;
      }
    } else if (strcmp(a, "--threshold") == 0) {
      bad = parse_u64(val, &v) || v == 0;
      tc.threshold = (size_t)v;
    } else if (strcmp(a, "--alpha") == 0) {
      bad = parse_double(val, &tc.mock.alpha);
    } else if (strcmp(a, "--beta") == 0) {
      bad = parse_double(val, &tc.mock.beta);
    } else if (strcmp(a, "--gamma") == 0) {
      bad = parse_double(val, &tc.mock.gamma);
    } else if (strcmp(a, "--ranks-per-host") == 0) {
      bad = parse_u64(val, &v) || v > UINT32_MAX;
      tc.mock.ranks_per_host = (uint32_t)v;
    } else if (strcmp(a, "--local-alpha") == 0) {
      bad = parse_double(val, &tc.mock.local_alpha);
    } else if (strcmp(a, "--local-beta") == 0) {
      bad = parse_double(val, &tc.mock.local_beta);
    } else if (strcmp(a, "--model") == 0) {
      model = val;
    } else if (strcmp(a, "--seed") == 0) {
      bad = parse_u64(val, &v);
      tc.mock.seed = v;
    } else if (strcmp(a, "--eager") == 0) {
      bad = parse_u64(val, &v);
      tc.mock.eager_limit = (size_t)v;
    } else if (strcmp(a, "--format") == 0) {
      csv = strcmp(val, "csv") == 0;
      bad = !csv && strcmp(val, "json") != 0;
    } else if (strcmp(a, "--trace") == 0) {
      trace_path = val;
    } else if (strcmp(a, "--dot") == 0) {
      dot_path = val;
    } else if (strcmp(a, "--dot-rounds") == 0) {
      rounds_path = val;
    } else {
      fprintf(stderr, "redcoll-sim: unknown option %s\n", a);
      usage(stderr);
      return 2;
    }
    if (bad) {
      fprintf(stderr, "redcoll-sim: bad value for %s: %s\n", a, val);
      return 2;
    }
  }
  if (!have_coll || !algo_arg || !have_p || (!have_count && tc.coll != REDCOLL_COLL_BARRIER)) {
    fprintf(stderr, "redcoll-sim: --coll, --algo, --p and --count are required\n");
    usage(stderr);
    return 2;
  }
  redcoll_algo algos[REDCOLL_ALGO_COUNT];
  int nalgos = parse_algos(algo_arg, tc.coll, tc.op, algos);
  if (nalgos < 0) return 2;
  if (cnts.n == 0 && list_add(&cnts, 0)) return 2; /* barrier, or --counts alone */
  if ((dot_path || rounds_path) && (ps.n != 1 || cnts.n != 1 || nalgos != 1)) {
    fprintf(stderr, "redcoll-sim: --dot and --dot-rounds take a single p, count and algorithm\n");
    return 2;
  }
  if (counts && ps.n != 1) {
    fprintf(stderr, "redcoll-sim: --counts takes a single p\n");
    return 2;
  }
  if (counts && (unsigned long long)ncounts != ps.v[0]) {
    fprintf(stderr, "redcoll-sim: --counts needs exactly p entries\n");
    return 2;
  }
  tc.counts = counts;
  /* AUTO chooses by the simulator's own cost model unless --model says
   * otherwise (REDCOLL_COST_MODEL is read by every communicator). */
  char model_buf[96];
  if (model == NULL) {
    snprintf(model_buf, sizeof model_buf, "%.17g,%.17g,%.17g", tc.mock.alpha, tc.mock.beta,
             tc.mock.gamma);
    model = model_buf;
  }
  setenv("REDCOLL_COST_MODEL", model, 1);
  FILE *trace = NULL, *dot = NULL;
  if (trace_path && (trace = fopen(trace_path, "w+")) == NULL) {
    perror(trace_path);
    return 2;
  }
  /* The rank x round picture is drawn from the trace. */
  if (rounds_path && trace == NULL && (trace = tmpfile()) == NULL) {
    perror("tmpfile");
    return 2;
  }
  if (dot_path && (dot = fopen(dot_path, "w")) == NULL) {
    perror(dot_path);
    if (trace) fclose(trace);
    return 2;
  }
  tc.mock.trace = trace;
  tc.mock.dot = dot;
  char report[1024] = "";
  tc.mock.report = report;
  tc.mock.report_len = sizeof report;

  if (csv) {
    for (size_t k = 0; k < NKEYS; k++) printf("%s%s", k ? "," : "", keys[k].key);
    putchar('\n');
  }
  int all_ok = 1;
  for (size_t i = 0; i < ps.n; i++) {
    unsigned long long p = ps.v[i];
    int r0 = all_roots ? 0 : root, r1 = all_roots ? (int)p - 1 : root;
    if (r1 >= (int)p) {
      fprintf(stderr, "redcoll-sim: root %d out of range for p = %llu\n", root, p);
      all_ok = 0;
      continue;
    }
    tc.p = (int)p;
    for (size_t j = 0; j < cnts.n; j++) {
      tc.count = (size_t)cnts.v[j];
      for (int k = 0; k < nalgos; k++) {
        tc.algo = algos[k];
        for (tc.root = r0; tc.root <= r1; tc.root++) {
          check_result res;
          report[0] = '\0';
          check_run(&tc, &res);
          if (!res.ok) all_ok = 0;
          char num[NKEYS][32];
          snprintf(num[3], 32, "%llu", p);
          snprintf(num[4], 32, "%zu", tc.count);
          snprintf(num[7], 32, "%d", tc.root);
          snprintf(num[9], 32, "%zu", res.bytes);
          snprintf(num[12], 32, "%.17g", res.time);
          snprintf(num[13], 32, "%llu", (unsigned long long)res.rounds);
          snprintf(num[14], 32, "%llu", (unsigned long long)res.max_bytes_sent);
          snprintf(num[15], 32, "%llu", (unsigned long long)res.max_bytes_recv);
          snprintf(num[16], 32, "%llu", (unsigned long long)res.max_bytes_reduced);
          snprintf(num[17], 32, "%llu", (unsigned long long)res.msgs);
          snprintf(num[18], 32, "%llu", (unsigned long long)res.max_host_bytes_out);
          /* The cost formula of the algorithm that ran, under the
           * simulator's alpha, beta, gamma (null: none). */
          double mt;
          if (redcoll_cost_predict(tc.coll, res.algo, tc.p, tc.count, check_elem_size(&tc),
                                   tc.threshold ? tc.threshold : REDCOLL_DEFAULT_THRESHOLD,
                                   tc.mock.alpha, tc.mock.beta, tc.mock.gamma, &mt) == REDCOLL_OK)
            snprintf(num[19], 32, "%.17g", mt);
          else
            snprintf(num[19], 32, "null");
          const char *val[NKEYS] = {
              redcoll_coll_name(tc.coll), redcoll_algo_name(res.algo),
              redcoll_algo_name(tc.algo), num[3], num[4],
              tc.op == CHECK_OP_NONCOMM       ? "custom"
              : tc.op == CHECK_OP_SUM_RANDOM ? "float64"
                                             : redcoll_dtype_name(tc.dtype),
              op_name(tc.op), num[7], tc.in_place ? "true" : "false", num[9],
              res.ok ? "true" : "false", redcoll_status_name(res.status), num[12], num[13],
              num[14], num[15], num[16], num[17], num[18], num[19], res.ok ? NULL : res.error};
          put_line(val, csv);
          fflush(stdout);
          if (!res.ok && report[0]) fprintf(stderr, "%s\n", report);
        }
      }
    }
  }
  if (rounds_path && write_rounds(trace, rounds_path, (int)ps.v[0]) != 0) all_ok = 0;
  if (trace) fclose(trace);
  if (dot) fclose(dot);
  free(counts);
  free(ps.v);
  free(cnts.v);
  return all_ok ? 0 : 1;
}
