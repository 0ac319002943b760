/*
 * Throughput of the local kernels next to memcpy, on the same buffers.
 *
 * For each vector size (the bytes of one buffer) it times
 *   memcpy(out, left, bytes)                   2 streams: 1 read, 1 write
 *   redcoll_reduce_local(out, left, right)     3 streams: 2 reads, 1 write
 *   redcoll_reduce_local(acc, acc, right)      in place, as the collectives
 *                                              mostly call it (acc += recv)
 * and reports two rates in GB/s (10^9 bytes per second):
 *   traffic  bytes read + bytes written per second (memcpy 2 x size,
 *            sum 3 x size): how close a kernel comes to the memory
 *            bandwidth memcpy reaches;
 *   output   bytes of result per second (size / time for both): the
 *            stricter view, in which a three-stream kernel can reach at
 *            best 2/3 of a two-stream copy when both are bandwidth bound.
 * Every round runs each case once, one right after the other, so that on a
 * shared, noisy machine a burst of load slows both sides of a comparison.
 * The table gives the best round of each case (the least disturbed run) and
 * compares best with best; the last column is the median over rounds of the
 * output-rate ratio to memcpy in the same round, a check that the best
 * rounds are not flukes.
 *
 * A round of a case repeats the operation until it lasts about 0.5 ms (short,
 * so that most rounds fit in one scheduler time slice); small sizes measure
 * cache-resident throughput.  Default sizes: 16 KiB (three buffers fill a
 * 48 KiB L1), 256 KiB (L2), 1 MiB, 64 MiB (beyond L2: DRAM or a large L3).
 *
 * Every dtype runs SUM, PROD, MIN and MAX out of place; the floating-point
 * types also the sum in place.  float16 and bfloat16 run on the default
 * kernel path and on every other path the CPU has (portable, avx2, avx512,
 * avx512bf16: kernels/kernels.h), side by side in the same rounds; this is
 * why the benchmark links the internal static library rather than
 * libredcoll.so: it switches paths.  Every operator's traffic is counted
 * like a sum's (3 x size).
 *
 * Usage: bench_kernels [-a] [rounds [bytes ...]]   (default 31 rounds;
 *        -a: all three buffers at the same offset in their pages)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "redcoll/redcoll.h"
#include "kernels/kernels.h"
#include "../tools/stats.h"

#define MIN_SAMPLE_SECONDS 0.0005
#define MAX_SIZES 16
#define STAGGER 1088 /* 17 cache lines */



typedef enum { CASE_MEMCPY, CASE_OP, CASE_OP_INPLACE } case_kind;

static int is_half(redcoll_dtype dt) { return dt == REDCOLL_FLOAT16 || dt == REDCOLL_BFLOAT16; }

typedef struct {
  char name[40];
  case_kind kind;
  redcoll_dtype dt;
  const redcoll_op *op;
  int path; /* float16 / bfloat16 kernel path, -1 for the default */
} bench_case;

#define MAX_CASES 96
static bench_case cases[MAX_CASES];
static size_t NCASES;

static void add_case(case_kind kind, redcoll_dtype dt, const redcoll_op *op, const char *opname,
                     int path) {
  bench_case *c = &cases[NCASES++];
  c->kind = kind;
  c->dt = dt;
  c->op = op;
  c->path = path;
  if (kind == CASE_MEMCPY)
    snprintf(c->name, sizeof c->name, "memcpy");
  else
    snprintf(c->name, sizeof c->name, "%s %s%s%s%s", opname, redcoll_dtype_name(dt),
             path >= 0 ? " " : "", path >= 0 ? redcoll__half_path_name(path) : "",
             kind == CASE_OP_INPLACE ? " in place" : "");
}

/* Every dtype with SUM, PROD, MIN and MAX out of place (float16 and
 * bfloat16 on the default path); the in-place sums of the floating-point
 * types; then float16 and bfloat16 on every other path the CPU has. */
static void make_cases(void) {
  static const redcoll_dtype dts[] = {REDCOLL_INT8,    REDCOLL_UINT8,    REDCOLL_INT16,
                                      REDCOLL_UINT16,  REDCOLL_INT32,    REDCOLL_UINT32,
                                      REDCOLL_INT64,   REDCOLL_UINT64,   REDCOLL_FLOAT16,
                                      REDCOLL_BFLOAT16, REDCOLL_FLOAT32, REDCOLL_FLOAT64};
  static const redcoll_dtype floats[] = {REDCOLL_FLOAT32, REDCOLL_FLOAT64, REDCOLL_FLOAT16,
                                         REDCOLL_BFLOAT16};
  const redcoll_op *ops[4] = {REDCOLL_SUM, REDCOLL_PROD, REDCOLL_MIN, REDCOLL_MAX};
  static const char *const opnames[4] = {"sum", "prod", "min", "max"};
  int def = redcoll__half_path();
  add_case(CASE_MEMCPY, REDCOLL_UINT8, NULL, "", -1);
  for (size_t d = 0; d < sizeof dts / sizeof dts[0]; d++)
    for (int o = 0; o < 4; o++)
      add_case(CASE_OP, dts[d], ops[o], opnames[o], is_half(dts[d]) ? def : -1);
  for (size_t d = 0; d < sizeof floats / sizeof floats[0]; d++)
    add_case(CASE_OP_INPLACE, floats[d], REDCOLL_SUM, "sum", is_half(floats[d]) ? def : -1);
  for (size_t d = 2; d < 4; d++)
    for (int o = 0; o < 4; o++)
      for (int p = 0; p < REDCOLL__HALF_PATHS; p++)
        if (p != def && redcoll__half_path_supported(p))
          add_case(CASE_OP, floats[d], ops[o], opnames[o], p);
}

static volatile unsigned char sink;

/* Fills a buffer with harmless values of the dtype (no overflow, no NaN,
 * and sums that stay small over many in-place repetitions). */
static void fill(void *buf, size_t bytes, redcoll_dtype dt, uint32_t seed) {
  size_t n = bytes / redcoll_dtype_size(dt);
  for (size_t i = 0; i < n; i++) {
    uint32_t v = (uint32_t)(i * 2654435761u + seed) >> 22; /* 0 .. 1023 */
    switch (dt) {
      case REDCOLL_FLOAT32: ((float *)buf)[i] = (float)v * 1e-9f; break;
      case REDCOLL_FLOAT64: ((double *)buf)[i] = (double)v * 1e-9; break;
      case REDCOLL_FLOAT16: ((uint16_t *)buf)[i] = (uint16_t)(0x3c00u | v); break; /* [1, 2) */
      case REDCOLL_BFLOAT16: ((uint16_t *)buf)[i] = (uint16_t)(0x3f80u | (v & 0x7fu)); break;
      default: memset((unsigned char *)buf + i * redcoll_dtype_size(dt), (int)(v & 0x7fu),
                      redcoll_dtype_size(dt));
        break;
    }
  }
}

typedef struct {
  unsigned char *out, *left, *right;
} buffers;

/* reps runs of the case; returns the seconds taken or a negative value on
 * error. */
static double run(const bench_case *bc, const buffers *b, size_t bytes, size_t reps) {
  size_t count = bytes / redcoll_dtype_size(bc->dt);
  if (bc->path >= 0 && redcoll__half_path_set(bc->path) != REDCOLL_OK) return -1.0;
  double t0 = stats_now();
  for (size_t k = 0; k < reps; k++) {
    int rc = REDCOLL_OK;
    switch (bc->kind) {
      case CASE_MEMCPY: memcpy(b->out, b->left, bytes); break;
      case CASE_OP:
        rc = redcoll_reduce_local(b->out, b->left, b->right, count, bc->dt, bc->op);
        break;
      case CASE_OP_INPLACE:
        rc = redcoll_reduce_local(b->out, b->out, b->right, count, bc->dt, bc->op);
        break;
    }
    if (rc != REDCOLL_OK) return -1.0;
  }
  double dt = stats_now() - t0;
  sink ^= b->out[bytes / 2];
  return dt;
}

static void print_bytes(char *s, size_t n, size_t bytes) {
  if (bytes >= (1u << 20) && bytes % (1u << 20) == 0)
    snprintf(s, n, "%zu MiB", bytes >> 20);
  else if (bytes >= 1024 && bytes % 1024 == 0)
    snprintf(s, n, "%zu KiB", bytes >> 10);
  else
    snprintf(s, n, "%zu B", bytes);
}

/* Runs every case at one size; prints one table row per case. */
static int bench_size(const buffers *b, size_t bytes, int rounds) {
  size_t reps[MAX_CASES];
  double *out_rate = malloc(NCASES * (size_t)rounds * sizeof *out_rate);
  double *ratio = malloc((size_t)rounds * sizeof *ratio);
  double *tmp = malloc((size_t)rounds * sizeof *tmp);
  int status = -1;
  if (out_rate == NULL || ratio == NULL || tmp == NULL) goto done;

  for (size_t c = 0; c < NCASES; c++) {
    /* Each case gets its own inputs, filled for its dtype; the output
     * buffer is refilled too, for the in-place cases. */
    fill(b->left, bytes, cases[c].dt, 1);
    fill(b->right, bytes, cases[c].dt, 2);
    fill(b->out, bytes, cases[c].dt, 3);
    /* Warm up and find how many repetitions fill a round. */
    reps[c] = 1;
    for (;;) {
      double dt = run(&cases[c], b, bytes, reps[c]);
      if (dt < 0) {
        fprintf(stderr, "%s failed\n", cases[c].name);
        goto done;
      }
      if (dt >= MIN_SAMPLE_SECONDS) break;
      reps[c] *= 2;
    }
  }
  /* Rounds: every case once, inputs refilled only when the dtype changes
   * (memcpy does not care what it copies). */
  for (int r = 0; r < rounds; r++) {
    redcoll_dtype filled = REDCOLL_CUSTOM;
    for (size_t c = 0; c < NCASES; c++) {
      if (cases[c].kind != CASE_MEMCPY && cases[c].dt != filled) {
        fill(b->left, bytes, cases[c].dt, 1);
        fill(b->right, bytes, cases[c].dt, 2);
        filled = cases[c].dt;
      }
      if (cases[c].kind == CASE_OP_INPLACE) fill(b->out, bytes, cases[c].dt, 3);
      (void)run(&cases[c], b, bytes, 1); /* bring the buffers back into cache */
      double dt = run(&cases[c], b, bytes, reps[c]);
      if (dt <= 0) goto done;
      out_rate[c * (size_t)rounds + (size_t)r] = (double)bytes * (double)reps[c] / dt / 1e9;
    }
  }

  char sname[32];
  print_bytes(sname, sizeof sname, bytes);
  double cpy_best = 0.0;
  for (size_t c = 0; c < NCASES; c++) {
    double mult = cases[c].kind == CASE_MEMCPY ? 2.0 : 3.0;
    const double *rate = out_rate + c * (size_t)rounds;
    memcpy(tmp, rate, (size_t)rounds * sizeof *tmp);
    qsort(tmp, (size_t)rounds, sizeof *tmp, stats_cmp_double);
    double med = tmp[rounds / 2], best = tmp[rounds - 1];
    printf("| %-7s | %-28s | %8.1f | %8.1f | %8.1f |", sname, cases[c].name, mult * best, best,
           med);
    if (cases[c].kind == CASE_MEMCPY) {
      cpy_best = best;
      printf("          |          |          |\n");
      continue;
    }
    for (int r = 0; r < rounds; r++) ratio[r] = rate[r] / out_rate[r];
    qsort(ratio, (size_t)rounds, sizeof *ratio, stats_cmp_double);
    printf(" %7.0f%% | %7.0f%% | %7.0f%% |\n", 100.0 * best / cpy_best * mult / 2.0,
           100.0 * best / cpy_best, 100.0 * ratio[rounds / 2]);
  }
  fflush(stdout);
  status = 0;
done:
  free(out_rate);
  free(ratio);
  free(tmp);
  return status;
}

int main(int argc, char **argv) {
  size_t sizes[MAX_SIZES] = {16u << 10, 256u << 10, 1u << 20, 64u << 20};
  size_t nsizes = 4;
  int rounds = 31;
  size_t stagger = STAGGER;
  if (argc > 1 && strcmp(argv[1], "-a") == 0) {
    stagger = 0;
    argc--;
    argv++;
  }
  if (argc > 1) {
    rounds = atoi(argv[1]);
    if (rounds < 1 || rounds > 1000) {
      fprintf(stderr, "usage: bench_kernels [-a] [rounds 1..1000 [bytes ...]]\n");
      return 2;
    }
  }
  if (argc > 2) {
    nsizes = 0;
    for (int i = 2; i < argc && nsizes < MAX_SIZES; i++) {
      long long v = atoll(argv[i]);
      if (v < 64 || v % 64 != 0) {
        fprintf(stderr, "sizes must be positive multiples of 64 bytes\n");
        return 2;
      }
      sizes[nsizes++] = (size_t)v;
    }
  }

  size_t max = 0;
  for (size_t s = 0; s < nsizes; s++)
    if (sizes[s] > max) max = sizes[s];
  int status = 1;
  make_cases();
  /* The three buffers start at different offsets within a 4 KiB page
   * (STAGGER apart): when out[i], left[i] and right[i] share their low 12
   * address bits, loads falsely depend on earlier stores ("4K aliasing"),
   * which costs memcpy and the kernels about a quarter of their L1 speed on
   * the machines we tried.  Pass -a to measure that case instead. */
  unsigned char *mem[3] = {NULL, NULL, NULL};
  buffers b = {NULL, NULL, NULL};
  for (int k = 0; k < 3; k++) {
    mem[k] = aligned_alloc(4096, (max + 3 * STAGGER + 4095) / 4096 * 4096);
    if (mem[k] == NULL) {
      fprintf(stderr, "out of memory\n");
      goto done;
    }
    memset(mem[k], 0, max + 3 * STAGGER); /* touch every page before timing */
  }
  b.out = mem[0];
  b.left = mem[1] + stagger;
  b.right = mem[2] + 2 * stagger;

  printf("GB/s = 1e9 bytes/s; %d rounds, every case once per round, interleaved.\n", rounds);
  printf("traffic = bytes read + written per second (memcpy 2 x size, the others 3 x size);\n");
  printf("output = size / time.  max = best round, med = median round.\n");
  printf("traf/cpy, out/cpy: best rate / best memcpy rate; rounds: median over rounds of\n");
  printf("(output rate / memcpy output rate in the same round).\n");
  printf("Buffers %zu bytes apart in their pages.\n\n", stagger);
  printf("| size    | case                         | traf max |  out max |  out med | traf/cpy |"
         "  out/cpy |   rounds |\n");
  printf("|---------|------------------------------|---------:|---------:|---------:|---------:|"
         "---------:|---------:|\n");
  for (size_t s = 0; s < nsizes; s++)
    if (bench_size(&b, sizes[s], rounds) != 0) goto done;
  status = 0;
done:
  for (int k = 0; k < 3; k++) free(mem[k]);
  return status;
}
