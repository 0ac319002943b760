/*
 * redcoll-sim: runs one collective under the simulator and prints one JSON
 * object per line (one line per p), with the result verified against a
 * sequential reduction in rank order.  Exits 1 if any line is not ok, 2 on
 * a usage error.  See docs/simulator.md and `redcoll-sim --help`.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

static void usage(FILE *f) {
  fprintf(f,
          "usage: redcoll-sim --coll C --algo A --p N|A-B --count N [options]\n"
          "  --coll     allreduce reduce reduce_scatter_block reduce_scatter allgather\n"
          "             allgatherv bcast gather scatter barrier\n"
          "  --algo     an algorithm name (see docs/algorithms) or auto\n"
          "  --p        number of ranks, or a range A-B (one line per p)\n"
          "  --count    the count argument of the collective (the per-rank block\n"
          "             for reduce_scatter_block, allgather, gather and scatter)\n"
          "  --counts   c0,c1,...  per-rank blocks (reduce_scatter, allgatherv)\n"
          "  --dtype    int8 uint8 int16 uint16 int32 uint32 int64 uint64 f16 bf16\n"
          "             f32 f64 (also the long names float64, ...); default f64\n"
          "  --op       sum | max | noncomm (2x2 matrix product mod 65521) |\n"
          "             sumrandom (random float64, bitwise-equal on all ranks)\n"
          "  --root R   root rank (default 0); --root all runs every root\n"
          "  --in-place use REDCOLL_IN_PLACE\n"
          "  --threshold BYTES   butterfly block threshold b\n"
          "  --alpha A --beta B --gamma G   cost model (default 1 0 0)\n"
          "  --model A,B,G  the cost model --algo auto chooses by (default: the\n"
          "             simulator's --alpha, --beta, --gamma); the line's algo is\n"
          "             the algorithm it chose\n"
          "  --seed S   scheduler seed (default 1)\n"
          "  --eager BYTES  messages shorter than this are eager (default 0)\n"
          "  --trace FILE   append every message of every run to FILE\n"
          "  --dot FILE     the communication graph of the run (a single p): nodes are\n"
          "                 ranks, edges messages; render: dot -Tsvg FILE -o FILE.svg\n"
          "  --dot-rounds FILE  the run as a rank x round picture (a single p): a row\n"
          "                 per rank, a column per round, an arrow per message;\n"
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

int main(int argc, char **argv) {
  check_case tc;
  check_case_init(&tc);
  int have_coll = 0, have_algo = 0, have_p = 0, have_count = 0, all_roots = 0;
  unsigned long long pa = 0, pb = 0, v;
  const char *trace_path = NULL, *dot_path = NULL, *rounds_path = NULL, *model = NULL;
  size_t *counts = NULL;
  int ncounts = 0;

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
      bad = redcoll_algo_parse(val, &tc.algo) != REDCOLL_OK;
      have_algo = 1;
    } else if (strcmp(a, "--p") == 0) {
      const char *dash = strchr(val, '-');
      if (dash) {
        char lo[32];
        size_t n = (size_t)(dash - val);
        bad = n == 0 || n >= sizeof lo;
        if (!bad) {
          memcpy(lo, val, n);
          lo[n] = '\0';
          bad = parse_u64(lo, &pa) || parse_u64(dash + 1, &pb);
        }
      } else {
        bad = parse_u64(val, &pa);
        pb = pa;
      }
      bad = bad || pa < 1 || pb < pa || pb > 65536;
      have_p = 1;
    } else if (strcmp(a, "--count") == 0) {
      bad = parse_u64(val, &v);
      tc.count = (size_t)v;
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
        tc.root = (int)v;
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
    } else if (strcmp(a, "--model") == 0) {
      model = val;
    } else if (strcmp(a, "--seed") == 0) {
      bad = parse_u64(val, &v);
      tc.mock.seed = v;
    } else if (strcmp(a, "--eager") == 0) {
      bad = parse_u64(val, &v);
      tc.mock.eager_limit = (size_t)v;
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
  if (!have_coll || !have_algo || !have_p || (!have_count && tc.coll != REDCOLL_COLL_BARRIER)) {
    fprintf(stderr, "redcoll-sim: --coll, --algo, --p and --count are required\n");
    usage(stderr);
    return 2;
  }
  if (!redcoll_algo_is_supported(tc.coll, tc.algo)) {
    fprintf(stderr, "redcoll-sim: %s has no algorithm %s\n", redcoll_coll_name(tc.coll),
            redcoll_algo_name(tc.algo));
    return 2;
  }
  if ((dot_path || rounds_path) && pa != pb) {
    fprintf(stderr, "redcoll-sim: --dot and --dot-rounds take a single p\n");
    return 2;
  }
  if (counts && (unsigned long long)ncounts != pa) {
    fprintf(stderr, "redcoll-sim: --counts needs exactly p entries\n");
    return 2;
  }
  if (counts && pa != pb) {
    fprintf(stderr, "redcoll-sim: --counts takes a single p\n");
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

  int all_ok = 1;
  for (unsigned long long p = pa; p <= pb; p++) {
    tc.p = (int)p;
    int r0 = tc.root, r1 = tc.root;
    if (all_roots) {
      r0 = 0;
      r1 = (int)p - 1;
    } else if (tc.root >= (int)p) {
      fprintf(stderr, "redcoll-sim: root %d out of range for p = %llu\n", tc.root, p);
      all_ok = 0;
      continue;
    }
    for (int root = r0; root <= r1; root++) {
      check_result res;
      tc.root = root;
      report[0] = '\0';
      check_run(&tc, &res);
      if (!res.ok) all_ok = 0;
      printf("{\"coll\":\"%s\",\"algo\":\"%s\",\"requested\":\"%s\",\"p\":%llu,\"count\":%zu,"
             "\"dtype\":\"%s\",\"op\":\"%s\",\"root\":%d,\"in_place\":%s,\"bytes\":%zu,"
             "\"ok\":%s,\"status\":\"%s\",\"time\":%.17g,\"rounds\":%llu,"
             "\"max_bytes_sent\":%llu,\"max_bytes_recv\":%llu,\"max_bytes_reduced\":%llu,"
             "\"msgs\":%llu",
             redcoll_coll_name(tc.coll), redcoll_algo_name(res.algo), redcoll_algo_name(tc.algo),
             p, tc.count,
             tc.op == CHECK_OP_NONCOMM ? "custom" : tc.op == CHECK_OP_SUM_RANDOM ? "float64"
                                                                                 : redcoll_dtype_name(tc.dtype),
             op_name(tc.op), root, tc.in_place ? "true" : "false", res.bytes,
             res.ok ? "true" : "false", redcoll_status_name(res.status), res.time,
             (unsigned long long)res.rounds, (unsigned long long)res.max_bytes_sent,
             (unsigned long long)res.max_bytes_recv, (unsigned long long)res.max_bytes_reduced,
             (unsigned long long)res.msgs);
      if (!res.ok) {
        printf(",\"error\":\"");
        for (const char *s = res.error; *s; s++) {
          if (*s == '"' || *s == '\\') putchar('\\');
          putchar(*s == '\n' ? ' ' : *s);
        }
        printf("\"");
      }
      printf("}\n");
      fflush(stdout);
      if (!res.ok && report[0]) fprintf(stderr, "%s\n", report);
    }
    if (all_roots) tc.root = 0;
  }
  if (rounds_path && write_rounds(trace, rounds_path, (int)pa) != 0) all_ok = 0;
  if (trace) fclose(trace);
  if (dot) fclose(dot);
  free(counts);
  return all_ok ? 0 : 1;
}
