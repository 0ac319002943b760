/*
 * mpi_bench: MPI_Allreduce / MPI_Reduce / MPI_Scan / MPI_Allgather / MPI_Bcast timed the way redcoll-bench times
 * redcoll, for the side-by-side comparison of bench/peers/run.py; and, as
 * redcoll-bench's --coll send / sendrecv, ranks 2i and 2i+1 moving bytes
 * one way (MPI_Send, MPI_Recv) or both at once (MPI_Sendrecv), for
 * bench/bench_p2p.py --mpi.
 *
 *   mpirun -n P mpi_bench [--coll allreduce|reduce|scan|allgather|bcast|send|sendrecv]
 *                         [--sizes MIN:MAX] [--factor F]
 *                         [--iters N] [--warmup N] [--impl NAME] [--no-header]
 *
 * float32 SUM, out of place (sendbuf -> recvbuf), root 0 for reduce and
 * bcast; allgather's bytes are the whole gathered vector (p blocks).  For
 * every size each rank runs the warm-up and timed iterations, each preceded
 * by MPI_Barrier; an iteration's time is the slowest rank's (MAX over ranks
 * of the per-iteration times, as redcoll-bench does).  The first call's
 * result is checked on every rank against the exact sum (small integers);
 * a wrong result exits with status 1.  Rank 0 prints CSV lines
 *
 *   impl,coll,p,bytes,median_us,p99_us,algbw_GBps,busbw_GBps,algo
 *
 * with bytes the size of the whole vector, algbw = bytes / median and busbw
 * = algbw x 2(p-1)/p for allreduce, x (p-1)/p for allgather, x 1 for
 * reduce and bcast (nccl-tests' factors).
 * impl defaults to "ompi"; run.py names it after the BTL it forced.
 *
 * Built by run.py with mpicc; not part of the Meson build.
 */
#include <math.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  int reduce; /* 0 allreduce, 1 reduce, 2 scan (inclusive, MPI_Scan), 3 allgather, 4 bcast */
  size_t min_bytes, max_bytes, factor;
  int iters, warmup, header;
  const char *impl;
} opts;

static int parse_size(const char *s, size_t *out) {
  char *end;
  unsigned long long v = strtoull(s, &end, 10), mul = 1;
  if (end == s) return -1;
  if (*end == 'k' || *end == 'K') mul = 1ull << 10;
  else if (*end == 'm' || *end == 'M') mul = 1ull << 20;
  else if (*end == 'g' || *end == 'G') mul = 1ull << 30;
  if (mul != 1) end++;
  if (*end == 'B' || *end == 'b') end++;
  if (*end != '\0') return -1;
  *out = (size_t)(v * mul);
  return 0;
}

static int parse_opts(int argc, char **argv, opts *o) {
  *o = (opts){0, 8, 16u << 20, 8, 20, 3, 1, "ompi"};
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(a, "--no-header") == 0) {
      o->header = 0;
      continue;
    }
    if (v == NULL) return -1;
    i++;
    if (strcmp(a, "--coll") == 0) {
      if (strcmp(v, "allreduce") == 0) o->reduce = 0;
      else if (strcmp(v, "reduce") == 0) o->reduce = 1;
      else if (strcmp(v, "scan") == 0) o->reduce = 2;
      else if (strcmp(v, "allgather") == 0) o->reduce = 3;
      else if (strcmp(v, "bcast") == 0) o->reduce = 4;
      else if (strcmp(v, "send") == 0) o->reduce = 5;
      else if (strcmp(v, "sendrecv") == 0) o->reduce = 6;
      else return -1;
    } else if (strcmp(a, "--sizes") == 0) {
      char buf[64];
      const char *colon = strchr(v, ':');
      if (colon == NULL || (size_t)(colon - v) >= sizeof buf) return -1;
      memcpy(buf, v, (size_t)(colon - v));
      buf[colon - v] = '\0';
      if (parse_size(buf, &o->min_bytes) || parse_size(colon + 1, &o->max_bytes)) return -1;
    } else if (strcmp(a, "--factor") == 0) {
      o->factor = (size_t)atol(v);
    } else if (strcmp(a, "--iters") == 0) {
      o->iters = atoi(v);
    } else if (strcmp(a, "--warmup") == 0) {
      o->warmup = atoi(v);
    } else if (strcmp(a, "--impl") == 0) {
      o->impl = v;
    } else {
      return -1;
    }
  }
  if (o->min_bytes < 4 || o->max_bytes < o->min_bytes || o->factor < 2 || o->iters < 1 ||
      o->warmup < 0)
    return -1;
  return 0;
}

static int cmp_double(const void *x, const void *y) {
  double a = *(const double *)x, b = *(const double *)y;
  return a < b ? -1 : a > b;
}

/* nearest-rank quantile of n sorted values, as redcoll-bench */
static double quantile(const double *v, int n, double q) {
  int k = (int)ceil(q * n) - 1;
  if (k < 0) k = 0;
  if (k >= n) k = n - 1;
  return v[k];
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int me, p, peer;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  peer = (me ^ 1) < p ? me ^ 1 : -1; /* send, sendrecv: the pair's other rank */
  opts o;
  if (parse_opts(argc, argv, &o) != 0) {
    if (me == 0)
      fprintf(stderr, "usage: mpi_bench [--coll allreduce|reduce|scan|allgather|bcast|send|\n"
                      "                  sendrecv]\n"
                      "                 [--sizes MIN:MAX] [--factor F]\n"
                      "                 [--iters N] [--warmup N] [--impl NAME] [--no-header]\n");
    MPI_Finalize();
    return 2;
  }
  size_t maxcount = o.max_bytes / sizeof(float);
  float *send = malloc((maxcount ? maxcount : 1) * sizeof *send);
  float *recv = malloc((maxcount ? maxcount : 1) * sizeof *recv);
  double *times = malloc((size_t)o.iters * sizeof *times);
  double *all = malloc((size_t)o.iters * sizeof *all);
  if (send == NULL || recv == NULL || times == NULL || all == NULL) {
    fprintf(stderr, "mpi_bench: out of memory\n");
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  if (me == 0 && o.header) printf("impl,coll,p,bytes,median_us,p99_us,algbw_GBps,busbw_GBps,algo\n");
  int status = 0;
  for (size_t bytes = o.min_bytes; bytes <= o.max_bytes; bytes *= o.factor) {
    int count = (int)(bytes / sizeof(float)), blk = count / p;
    for (int i = 0; i < count; i++) send[i] = (float)(me + 1 + i % 13);
    memset(recv, 0, (size_t)count * sizeof *recv);
    int n = o.warmup + o.iters;
    for (int it = 0; it < n; it++) {
      MPI_Barrier(MPI_COMM_WORLD);
      double t0 = MPI_Wtime();
      if (o.reduce == 4 && me == 0) memcpy(recv, send, (size_t)count * sizeof *recv);
      if (o.reduce >= 5 && peer < 0) {
        /* the last rank of an odd p takes part in the barriers only */
      } else if (o.reduce == 5 && (me & 1) == 0) {
        MPI_Send(send, count, MPI_FLOAT, peer, 1, MPI_COMM_WORLD);
      } else if (o.reduce == 5) {
        MPI_Recv(recv, count, MPI_FLOAT, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      } else if (o.reduce == 6) {
        MPI_Sendrecv(send, count, MPI_FLOAT, peer, 1, recv, count, MPI_FLOAT, peer, 1,
                     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      } else if (o.reduce == 4)
        MPI_Bcast(recv, count, MPI_FLOAT, 0, MPI_COMM_WORLD);
      else if (o.reduce == 3)
        MPI_Allgather(send, blk, MPI_FLOAT, recv, blk, MPI_FLOAT, MPI_COMM_WORLD);
      else if (o.reduce == 2)
        MPI_Scan(send, recv, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      else if (o.reduce)
        MPI_Reduce(send, recv, count, MPI_FLOAT, MPI_SUM, 0, MPI_COMM_WORLD);
      else
        MPI_Allreduce(send, recv, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      double t = MPI_Wtime() - t0;
      if (it == 0) {
        long bad = 0, anybad = 0;
        long q = o.reduce == 2 ? me + 1 : p; /* the ranks summed here */
        if (o.reduce >= 5) {
          if (peer >= 0 && (o.reduce == 6 || (me & 1)))
            for (int i = 0; i < count; i++) bad += recv[i] != (float)(peer + 1 + i % 13);
        } else if (o.reduce == 4)
          for (int i = 0; i < count; i++) bad += recv[i] != (float)(1 + i % 13);
        else if (o.reduce == 3)
          for (int i = 0; i < blk * p; i++) bad += recv[i] != (float)(i / blk + 1 + (i % blk) % 13);
        else if (o.reduce != 1 || me == 0)
          for (int i = 0; i < count; i++)
            bad += recv[i] != (float)(q * (q + 1) / 2 + q * (i % 13));
        MPI_Allreduce(&bad, &anybad, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
        if (anybad) {
          if (me == 0) fprintf(stderr, "mpi_bench: %zu bytes: %ld wrong elements\n", bytes, anybad);
          status = 1;
          goto done;
        }
      }
      if (it >= o.warmup) times[it - o.warmup] = t;
    }
    MPI_Allreduce(times, all, o.iters, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    if (me == 0) {
      qsort(all, (size_t)o.iters, sizeof *all, cmp_double);
      double med = o.iters % 2 ? all[o.iters / 2] : (all[o.iters / 2 - 1] + all[o.iters / 2]) / 2;
      double algbw = med > 0 ? (double)bytes / med * 1e-9 : 0;
      static const char *const names[] = {"allreduce", "reduce", "scan",    "allgather",
                                          "bcast",     "send",   "sendrecv"};
      static const char *const calls[] = {"MPI_Allreduce", "MPI_Reduce", "MPI_Scan",
                                          "MPI_Allgather", "MPI_Bcast",  "MPI_Send",
                                          "MPI_Sendrecv"};
      double bus = o.reduce == 0 ? 2.0 * (p - 1) / p : o.reduce == 3 ? (double)(p - 1) / p : 1.0;
      printf("%s,%s,%d,%zu,%.2f,%.2f,%.4f,%.4f,%s\n", o.impl, names[o.reduce], p, bytes, med * 1e6,
             quantile(all, o.iters, 0.99) * 1e6, algbw, algbw * bus, calls[o.reduce]);
      fflush(stdout);
    }
    if (bytes > o.max_bytes / o.factor) break;
  }
done:
  free(send);
  free(recv);
  free(times);
  free(all);
  MPI_Finalize();
  return status;
}
