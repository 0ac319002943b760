/*
 * The arithmetic the families' cost functions share, as the simulator
 * measures costs (one-ported, full duplex: a round costs alpha + n beta for
 * its largest message n on the critical path, a local reduction of n bytes
 * n gamma).  Blocks are counted in whole elements (ceil), as the algorithms
 * cut them.  The cost functions themselves sit next to their algorithms
 * (algo/<family>/) and in the registry rows; redcoll__cost (select.c) calls
 * them.
 */
#include <math.h>

#include "select/cost.h"

int redcoll__ilog2_floor(int p) {
  int k = 0;
  while ((2 << k) <= p) k++;
  return k;
}

int redcoll__trailing_zeros(int p) {
  int t = 0;
  while (p > 0 && !(p & 1)) {
    p >>= 1;
    t++;
  }
  return t;
}

double redcoll__cost_cut(double b, size_t segment, size_t es) {
  double s = es > 0 ? (double)(segment / es * es) : 0;
  return s == 0 || b / 2 < s ? 0 : s;
}

double redcoll__cost_piped(const redcoll__mach *M, double b, size_t segment, size_t es) {
  double s = redcoll__cost_cut(b, segment, es);
  if (s == 0) return M->a + b * (M->b + M->g);
  double k = ceil(b / s), last = b - (k - 1) * s;
  double full = fmax(M->a + s * M->b, s * M->g), tail = fmax(M->a + last * M->b, s * M->g);
  return M->a + s * M->b + (k - 2) * full + tail + last * M->g;
}

double redcoll__cost_blk(size_t n, size_t k, size_t es) {
  return (double)((n + k - 1) / k) * (double)es;
}

double redcoll__cost_piece(size_t n, int z, size_t es) {
  size_t l = n;
  for (int i = 0; i < z; i++) l = (l + 1) / 2;
  return (double)l * (double)es;
}

int redcoll__cost_halving_levels(size_t n, size_t es, size_t b, int levels) {
  int h = 0;
  while (h < levels && redcoll__cost_piece(n, h, es) > (double)b) h++;
  return h;
}

double redcoll__cost_rnd(const redcoll__mach *M, double sent, double reduced) {
  return M->a + sent * M->b + reduced * M->g;
}

double redcoll__cost_linear_rounds(const redcoll__mach *M, const redcoll__cost_args *a) {
  return (a->p - 1) * redcoll__cost_rnd(M, (double)a->count * (double)a->esize, 0);
}

double redcoll__cost_butterfly(const redcoll__mach *M, int k, int h, size_t n, size_t es,
                               int route) {
  double t = 0;
  double top = redcoll__cost_piece(n, h, es);
  for (int z = 0; z < k; z++) {
    double s = z < h ? redcoll__cost_piece(n, z + 1, es) : top;
    t += redcoll__cost_rnd(M, s, s);
  }
  if (route) {
    for (int z = 0; z < h; z++) t += redcoll__cost_rnd(M, redcoll__cost_piece(n, z + 1, es), 0);
  }
  return t;
}
