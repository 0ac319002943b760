/*
 * What the simulator writes about a run: the report of its error events
 * (cfg->report and, when verbose, stderr), the trace line of a completed
 * message (cfg->trace) and the graph of its messages (cfg->dot).
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mock_int.h"

/* Appends one formatted line to the run's report (and to stderr when
 * verbose).  Memory shortage only loses report text. */
#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
void redcoll__mock_report_add(mock_run *run, const char *fmt, ...) {
  char line[384];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  size_t len = (size_t)n < sizeof line ? (size_t)n : sizeof line - 1;
  if (run->cfg.verbose) fprintf(stderr, "redcoll mock: %s\n", line);
  /* Text beyond report_len would be cut off anyway. */
  if (run->cfg.report == NULL || run->report_len >= run->cfg.report_len) return;
  if (run->report_len + len + 2 > run->report_cap) {
    size_t cap = run->report_cap ? run->report_cap * 2 : 1024;
    while (cap < run->report_len + len + 2) cap *= 2;
    char *r = realloc(run->report, cap);
    if (r == NULL) return;
    run->report = r;
    run->report_cap = cap;
  }
  memcpy(run->report + run->report_len, line, len);
  run->report_len += len;
  run->report[run->report_len++] = '\n';
  run->report[run->report_len] = '\0';
}

void redcoll__mock_record(mock_run *run, const mock_msg *m, double start, double end,
                          uint64_t rend) {
  uint64_t n = run->nmsgs++;
  if (run->cfg.trace != NULL)
    fprintf(run->cfg.trace,
            "msg=%" PRIu64 " src=%d dst=%d tag=0x%016" PRIx64 " bytes=%zu start=%.17g end=%.17g"
            " round=%" PRIu64 "\n",
            n, m->src, m->dst, m->tag, m->len, start, end, rend);
  if (run->cfg.dot != NULL && !run->edges_failed) {
    if (run->nedges == run->edges_cap) {
      size_t cap = run->edges_cap ? run->edges_cap * 2 : 256;
      mock_edge *e = realloc(run->edges, cap * sizeof *e);
      if (e == NULL) {
        run->edges_failed = 1;
        return;
      }
      run->edges = e;
      run->edges_cap = cap;
    }
    run->edges[run->nedges++] = (mock_edge){m->src, m->dst, rend, m->len};
  }
}

void redcoll__mock_write_dot(const mock_run *run) {
  FILE *f = run->cfg.dot;
  /* Nodes are ranks, labelled with their number; an edge is a message,
   * labelled with its round and size ("round 2, 64 B"). */
  fprintf(f, "digraph redcoll {\n  node [shape=circle];\n");
  for (int i = 0; i < run->p; i++) fprintf(f, "  rank%d [label=\"%d\"];\n", i, i);
  for (size_t i = 0; i < run->nedges; i++) {
    const mock_edge *e = &run->edges[i];
    fprintf(f, "  rank%d -> rank%d [label=\"round %" PRIu64 ", %zu B\"];\n", e->src, e->dst,
            e->round, e->bytes);
  }
  if (run->edges_failed) fprintf(f, "  // out of memory: edges missing\n");
  fprintf(f, "}\n");
}

/* What a run leaves when it ends: the report. */
void redcoll__mock_run_finish(mock_run *run) {
  if (run->cfg.report != NULL && run->cfg.report_len > 0) {
    size_t n = run->report_len < run->cfg.report_len ? run->report_len : run->cfg.report_len - 1;
    if (n > 0) memcpy(run->cfg.report, run->report, n);
    run->cfg.report[n] = '\0';
  }
}
