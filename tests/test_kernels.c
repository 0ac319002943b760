/*
 * Local reduction kernels, operators, data types and the float16 / bfloat16
 * conversions.
 *
 * Every valid (dtype, op) pair is compared element by element with a scalar
 * reference written here independently of kernels.c: integers in 64-bit
 * (or 128-bit) arithmetic reduced modulo 2^bits afterwards, float32 through
 * double, float16 and bfloat16 through a frexp/ldexp based encoder and
 * decoder.  The reference encoder is also compared with the library's
 * float32 -> float16/bfloat16 conversion on millions of sampled floats.
 *
 * float16 and bfloat16 have several kernel paths (portable C, AVX2 + F16C,
 * AVX-512; kernels/kernels.h): every case that reduces them runs on each
 * path this CPU supports, and each must give the reference's bits, NaNs
 * included.  test_half_sweep pairs all 65536 left patterns with 512 right
 * ones per (dtype, op, path); REDCOLL_TEST_ALL_PAIRS=1 in the environment
 * makes that all 2^32 pairs (minutes, by hand).
 */
#include <float.h>
#include <math.h>
#include <stdint.h>

#include "internal.h"
#include "kernels/kernels.h"
#include "test.h"

/* ---- helpers -------------------------------------------------------------- */

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rng(void) {
  /* xorshift64* */
  rng_state ^= rng_state >> 12;
  rng_state ^= rng_state << 25;
  rng_state ^= rng_state >> 27;
  return rng_state * 0x2545f4914f6cdd1dull;
}

static uint32_t f32_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}
static float f32_from(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}
static uint64_t f64_bits(double d) {
  uint64_t u;
  memcpy(&u, &d, sizeof u);
  return u;
}
static double f64_from(uint64_t u) {
  double d;
  memcpy(&d, &u, sizeof d);
  return d;
}

/* Element i of a buffer of elements of esize bytes, zero-extended. */
static uint64_t get_elem(const void *buf, size_t i, size_t esize) {
  const unsigned char *p = (const unsigned char *)buf + i * esize;
  switch (esize) {
    case 1: {
      uint8_t v;
      memcpy(&v, p, 1);
      return v;
    }
    case 2: {
      uint16_t v;
      memcpy(&v, p, 2);
      return v;
    }
    case 4: {
      uint32_t v;
      memcpy(&v, p, 4);
      return v;
    }
    default: {
      uint64_t v;
      memcpy(&v, p, 8);
      return v;
    }
  }
}

static void put_elem(void *buf, size_t i, size_t esize, uint64_t v) {
  unsigned char *p = (unsigned char *)buf + i * esize;
  switch (esize) {
    case 1: {
      uint8_t x = (uint8_t)v;
      memcpy(p, &x, 1);
      break;
    }
    case 2: {
      uint16_t x = (uint16_t)v;
      memcpy(p, &x, 2);
      break;
    }
    case 4: {
      uint32_t x = (uint32_t)v;
      memcpy(p, &x, 4);
      break;
    }
    default:
      memcpy(p, &v, 8);
      break;
  }
}

/* ---- reference binary16 / bfloat16 codec ----------------------------------
 * Works on values, not bit tricks: a format has mbits fraction bits and
 * ebits exponent bits. */

static double ref_decode(uint32_t bits, int mbits, int ebits) {
  int bias = (1 << (ebits - 1)) - 1;
  uint32_t emax = (1u << ebits) - 1;
  uint32_t e = (bits >> mbits) & emax;
  uint32_t m = bits & ((1u << mbits) - 1);
  int neg = (int)((bits >> (mbits + ebits)) & 1u);
  double v;
  if (e == emax)
    v = m ? NAN : INFINITY;
  else if (e == 0)
    v = ldexp((double)m, 1 - bias - mbits);
  else
    v = ldexp((double)(m | (1u << mbits)), (int)e - bias - mbits);
  return neg ? -v : v;
}

/* Rounds v (not NaN) to nearest, ties to even, and returns the bits. */
static uint32_t ref_encode(double v, int mbits, int ebits) {
  int bias = (1 << (ebits - 1)) - 1;
  int emin = 1 - bias;
  uint32_t sign = signbit(v) ? 1u << (mbits + ebits) : 0u;
  uint32_t infbits = ((1u << ebits) - 1) << mbits;
  double x = fabs(v);
  if (isinf(x)) return sign | infbits;
  if (x == 0) return sign;
  int e;
  (void)frexp(x, &e);
  int k = e - 1; /* 2^k <= x < 2^(k+1) */
  if (k < emin) k = emin;
  double q = ldexp(1.0, k - mbits); /* spacing of the format around x */
  double n = x / q;
  double fl = floor(n), frac = n - fl;
  if (frac > 0.5 || (frac == 0.5 && fmod(fl, 2.0) != 0.0)) fl += 1.0;
  double r = fl * q;
  if (r >= ldexp(1.0, bias + 1)) return sign | infbits;
  if (r < ldexp(1.0, emin)) return sign | (uint32_t)fl;
  (void)frexp(r, &e);
  k = e - 1;
  uint32_t mant = (uint32_t)(ldexp(r, mbits - k) - ldexp(1.0, mbits));
  return sign | ((uint32_t)(k + bias) << mbits) | mant;
}

#define H_M 10
#define H_E 5
#define B_M 7
#define B_E 8

static int h_isnan(uint32_t h) { return (h & 0x7c00u) == 0x7c00u && (h & 0x3ffu) != 0; }
static int b_isnan(uint32_t h) { return (h & 0x7f80u) == 0x7f80u && (h & 0x7fu) != 0; }

/* A second encoder, fast enough for hundreds of millions of elements:
 * float32 bits u (not NaN) to a format of mbits fraction and ebits exponent
 * bits, the textbook way (integer significand, guard and sticky bits).
 * test_half_sampled checks it against ref_encode. */
static uint32_t tb_encode(uint32_t u, int mbits, int ebits) {
  int bias = (1 << (ebits - 1)) - 1, emin = 1 - bias;
  uint32_t sign = (u >> 31) << (mbits + ebits);
  uint32_t infbits = ((1u << ebits) - 1) << mbits;
  int e = (int)((u >> 23) & 0xffu);
  uint32_t m = u & 0x7fffffu;
  if (e == 255) return sign | infbits;
  if (e == 0 && m == 0) return sign;
  uint64_t sig = e == 0 ? m : (m | 0x800000u); /* value = sig * 2^ex */
  int ex = e == 0 ? -149 : e - 150;
  int lg = ex + 63 - __builtin_clzll(sig); /* floor(log2(value)) */
  int k = lg < emin ? emin : lg;
  int shift = (k - mbits) - ex; /* bits of sig below the format's unit */
  uint64_t n;
  if (shift <= 0) {
    n = sig << -shift;
  } else if (shift > 25) {
    n = 0; /* below half a unit */
  } else {
    uint64_t rem = sig & ((1ull << shift) - 1), half = 1ull << (shift - 1);
    n = sig >> shift;
    if (rem > half || (rem == half && (n & 1))) n++;
  }
  if (n == (2ull << mbits)) { /* rounded up to the next power of two */
    n >>= 1;
    k++;
  }
  if (k > bias) return sign | infbits;
  if (n < (1ull << mbits)) return sign | (uint32_t)n; /* subnormal or zero */
  return sign | ((uint32_t)(k + bias) << mbits) | (uint32_t)(n - (1ull << mbits));
}

/* Decoded float16 and bfloat16 patterns, filled from ref_decode. */
static float dec_h[65536], dec_b[65536];
static int dec_ready;

static void dec_init(void) {
  if (dec_ready) return;
  for (uint32_t h = 0; h <= 0xffffu; h++) {
    dec_h[h] = (float)ref_decode(h, H_M, H_E);
    dec_b[h] = (float)ref_decode(h, B_M, B_E);
  }
  dec_ready = 1;
}

/* The expected float16 / bfloat16 result bits of left op right, NaN rule
 * included (kernels.c): SUM and PROD give the left NaN quiet, else the right
 * NaN quiet, else for a NaN made by the operation 0xfe00 / 0xffc0; MIN and
 * MAX give the left operand unless the right compares lower (higher), a
 * NaN quiet. */
static uint32_t ref_half(redcoll_dtype dt, int op, uint32_t a, uint32_t b) {
  int f16 = dt == REDCOLL_FLOAT16;
  uint32_t inf = f16 ? 0x7c00u : 0x7f80u, quiet = f16 ? 0x200u : 0x40u;
  int an = (a & 0x7fffu) > inf, bn = (b & 0x7fffu) > inf;
  const float *dec = f16 ? dec_h : dec_b;
  if (op == REDCOLL__OP_MIN || op == REDCOLL__OP_MAX) {
    int right = !an && !bn && (op == REDCOLL__OP_MIN ? dec[b] < dec[a] : dec[b] > dec[a]);
    return right ? b : an ? a | quiet : a;
  }
  if (an) return a | quiet;
  if (bn) return b | quiet;
  float v = op == REDCOLL__OP_SUM ? dec[a] + dec[b] : dec[a] * dec[b];
  if (isnan(v)) return 0x8000u | inf | quiet;
  return f16 ? tb_encode(f32_bits(v), H_M, H_E) : tb_encode(f32_bits(v), B_M, B_E);
}

static int is_half(redcoll_dtype dt) { return dt == REDCOLL_FLOAT16 || dt == REDCOLL_BFLOAT16; }

/* ---- reference reduction ---------------------------------------------------- */

static int is_int(redcoll_dtype dt) { return dt <= REDCOLL_UINT64; }
static int is_signed_int(redcoll_dtype dt) {
  return dt == REDCOLL_INT8 || dt == REDCOLL_INT16 || dt == REDCOLL_INT32 || dt == REDCOLL_INT64;
}

/* Reduces x modulo 2^bits into [0, 2^bits). */
static uint64_t wrap(int64_t x, int bits) {
  if (bits == 64) return (uint64_t)x;
  int64_t mod = (int64_t)1 << bits;
  int64_t r = x % mod;
  if (r < 0) r += mod;
  return (uint64_t)r;
}

static int64_t sign_extend(uint64_t v, int bits) {
  if (bits == 64) return (int64_t)v;
  uint64_t top = (uint64_t)1 << (bits - 1);
  if (v & top) return (int64_t)(v - top) - (int64_t)top;
  return (int64_t)v;
}

static uint64_t ref_int(redcoll_dtype dt, int op, uint64_t lu, uint64_t ru) {
  int bits = (int)redcoll_dtype_size(dt) * 8;
  uint64_t mask = bits == 64 ? ~(uint64_t)0 : (((uint64_t)1 << bits) - 1);
  int sgn = is_signed_int(dt);
  int64_t ls = sign_extend(lu, bits), rs = sign_extend(ru, bits);
  switch (op) {
    case REDCOLL__OP_SUM:
      if (bits < 64) return wrap(sgn ? ls + rs : (int64_t)(lu + ru), bits);
      return lu + ru;
    case REDCOLL__OP_PROD:
      if (bits <= 32) {
        /* |values| <= 2^32, so the exact product of the unsigned ones fits
         * 64 bits unsigned; the signed one fits int64. */
        if (sgn) return wrap(ls * rs, bits);
        return (lu * ru) & mask;
      }
#ifdef __SIZEOF_INT128__
      return (uint64_t)((unsigned __int128)lu * ru);
#else
      return lu * ru;
#endif
    case REDCOLL__OP_MIN:
      if (sgn) return rs < ls ? ru : lu;
      return ru < lu ? ru : lu;
    case REDCOLL__OP_MAX:
      if (sgn) return rs > ls ? ru : lu;
      return ru > lu ? ru : lu;
    case REDCOLL__OP_BAND: return lu & ru;
    case REDCOLL__OP_BOR: return lu | ru;
    case REDCOLL__OP_BXOR: return lu ^ ru;
    case REDCOLL__OP_LAND: return (lu != 0 && ru != 0) ? 1 : 0;
    case REDCOLL__OP_LOR: return (lu != 0 || ru != 0) ? 1 : 0;
    case REDCOLL__OP_LXOR: return ((lu != 0) != (ru != 0)) ? 1 : 0;
  }
  return 0;
}

/* Expected element bits for a floating dtype.  *nan_any is set when the
 * result is a NaN produced by arithmetic, whose payload is not specified;
 * the caller then only checks that the result is a NaN. */
static uint64_t ref_float(redcoll_dtype dt, int op, uint64_t lu, uint64_t ru, int *nan_any) {
  *nan_any = 0;
  if (op == REDCOLL__OP_MIN || op == REDCOLL__OP_MAX) {
    /* The right operand only when the comparison is true (no NaN). */
    double l, r;
    uint64_t quiet = 0;
    if (dt == REDCOLL_FLOAT16) {
      l = ref_decode((uint32_t)lu, H_M, H_E);
      r = ref_decode((uint32_t)ru, H_M, H_E);
      quiet = 0x200;
    } else if (dt == REDCOLL_BFLOAT16) {
      l = ref_decode((uint32_t)lu, B_M, B_E);
      r = ref_decode((uint32_t)ru, B_M, B_E);
      quiet = 0x40;
    } else if (dt == REDCOLL_FLOAT32) {
      l = f32_from((uint32_t)lu);
      r = f32_from((uint32_t)ru);
    } else {
      l = f64_from(lu);
      r = f64_from(ru);
    }
    int take_right = !isnan(l) && !isnan(r) && (op == REDCOLL__OP_MIN ? r < l : r > l);
    uint64_t res = take_right ? ru : lu;
    double chosen = take_right ? r : l;
    /* The half formats travel through float32, which quiets NaNs. */
    if (isnan(chosen)) res |= quiet;
    return res;
  }
  if (dt == REDCOLL_FLOAT64) {
    double l = f64_from(lu), r = f64_from(ru);
    double v = op == REDCOLL__OP_SUM ? l + r : l * r;
    *nan_any = isnan(v);
    return f64_bits(v);
  }
  if (dt == REDCOLL_FLOAT32) {
    /* A double result rounded to float is the correctly rounded float sum
     * or product (53 >= 2 * 24 + 2). */
    double l = f32_from((uint32_t)lu), r = f32_from((uint32_t)ru);
    double v = op == REDCOLL__OP_SUM ? l + r : l * r;
    *nan_any = isnan(v);
    return f32_bits((float)v);
  }
  int mb = dt == REDCOLL_FLOAT16 ? H_M : B_M, eb = dt == REDCOLL_FLOAT16 ? H_E : B_E;
  float l = (float)ref_decode((uint32_t)lu, mb, eb), r = (float)ref_decode((uint32_t)ru, mb, eb);
  float v = op == REDCOLL__OP_SUM ? l + r : l * r; /* reduced in float32 */
  if (isnan(v)) {
    *nan_any = 1;
    return 0;
  }
  return ref_encode(v, mb, eb);
}

static int elem_is_nan(redcoll_dtype dt, uint64_t v) {
  switch (dt) {
    case REDCOLL_FLOAT16: return h_isnan((uint32_t)v);
    case REDCOLL_BFLOAT16: return b_isnan((uint32_t)v);
    case REDCOLL_FLOAT32: return isnan(f32_from((uint32_t)v));
    case REDCOLL_FLOAT64: return isnan(f64_from(v));
    default: return 0;
  }
}

/* ---- test data ------------------------------------------------------------ */

static uint64_t random_elem(redcoll_dtype dt) {
  uint64_t x = rng();
  switch (dt) {
    case REDCOLL_FLOAT32:
      if (x & 1) {
        /* moderate magnitudes, so that sums and products are not trivial */
        uint32_t e = (uint32_t)(127 - 20 + (x >> 8) % 40);
        return ((x >> 1) & 0x80000000u) | (e << 23) | ((x >> 20) & 0x7fffffu);
      }
      return (uint32_t)(x >> 32); /* any pattern: NaN, inf, subnormal */
    case REDCOLL_FLOAT64:
      if (x & 1) {
        uint64_t e = 1023 - 40 + (x >> 8) % 80;
        return (x & 0x8000000000000000ull) | (e << 52) | ((rng() >> 12) & 0xfffffffffffffull);
      }
      return rng();
    case REDCOLL_FLOAT16:
    case REDCOLL_BFLOAT16:
      if (x & 1) return (x >> 16) & 0xffffu; /* any pattern */
      /* mostly near one: exponents within 2^-6 .. 2^5, both signs */
      if (dt == REDCOLL_FLOAT16)
        return ((x >> 8) & 0x8000u) | ((uint32_t)(9 + (x >> 20) % 12) << 10) | ((x >> 32) & 0x3ffu);
      return ((x >> 8) & 0x8000u) | ((uint32_t)(121 + (x >> 20) % 12) << 7) | ((x >> 32) & 0x7fu);
    default:
      /* integers: a mix of any value, small values and zero */
      switch ((x >> 60) & 3u) {
        case 0: return 0;
        case 1: return (x >> 8) % 5;
        default: return rng();
      }
  }
}

enum { ALIAS_NONE, ALIAS_LEFT, ALIAS_RIGHT, ALIAS_BOTH, ALIAS_COUNT };

/* Elements where the two float16 / bfloat16 references differ. */
static size_t ref_disagree;

/* Runs one (dtype, op, count, aliasing, misalignment) case; returns the
 * number of wrong elements. */
static size_t run_case(redcoll_dtype dt, int opid, size_t count, int alias, size_t shift,
                       const redcoll_op *op) {
  size_t es = redcoll_dtype_size(dt);
  size_t bytes = (count + 1) * es;
  unsigned char *lb = malloc(bytes), *rb = malloc(bytes), *ob = malloc(bytes);
  uint64_t *want = malloc((count + 1) * sizeof *want);
  char *any = malloc(count + 1);
  size_t bad = 0;
  CHECK(lb && rb && ob && want && any);
  if (!lb || !rb || !ob || !want || !any) goto out;
  /* shift moves every buffer off its malloc alignment by that many bytes:
   * one element keeps it aligned for the type, one byte does not (the
   * kernels must then not load elements in place: UndefinedBehaviorSanitizer
   * reports it) */
  void *l = lb + shift, *r = rb + shift, *o = ob + shift;
  for (size_t i = 0; i < count; i++) {
    put_elem(l, i, es, random_elem(dt));
    put_elem(r, i, es, random_elem(dt));
    put_elem(o, i, es, 0x5a5a5a5a5a5a5a5aull);
  }
  if (alias == ALIAS_BOTH) memcpy(r, l, count * es);
  for (size_t i = 0; i < count; i++) {
    uint64_t lv = get_elem(l, i, es), rv = get_elem(r, i, es);
    int nan_any = 0;
    want[i] = is_int(dt) ? ref_int(dt, opid, lv, rv) : ref_float(dt, opid, lv, rv, &nan_any);
    if (is_half(dt)) {
      /* The exact reference with its NaN rule; where the frexp/ldexp one
       * gives bits, both must agree. */
      uint64_t exact = ref_half(dt, opid, (uint32_t)lv, (uint32_t)rv);
      if (!nan_any && exact != want[i]) ref_disagree++;
      want[i] = exact;
      nan_any = 0;
    }
    any[i] = (char)nan_any;
  }
  const void *lp = l, *rp = r;
  void *op_out = o;
  switch (alias) {
    case ALIAS_LEFT: op_out = l; break;
    case ALIAS_RIGHT: op_out = r; break;
    case ALIAS_BOTH: op_out = l, rp = l; break;
    default: break;
  }
  int rc = redcoll_reduce_local(op_out, lp, rp, count, dt, op);
  CHECK_INT(rc, REDCOLL_OK);
  for (size_t i = 0; i < count; i++) {
    uint64_t got = get_elem(op_out, i, es);
    int ok = any[i] ? elem_is_nan(dt, got) : got == want[i];
    if (!ok) {
      if (bad == 0)
        fprintf(stderr, "  %s op %d count %zu alias %d shift %zu: element %zu: got %#llx want %#llx%s\n",
                redcoll_dtype_name(dt), opid, count, alias, shift, i, (unsigned long long)got,
                (unsigned long long)want[i], any[i] ? " (any NaN)" : "");
      bad++;
    }
  }
out:
  free(lb);
  free(rb);
  free(ob);
  free(want);
  free(any);
  return bad;
}

static const redcoll_op *builtin(int id) {
  const redcoll_op *ops[REDCOLL__OP_COUNT] = {REDCOLL_SUM,  REDCOLL_PROD, REDCOLL_MIN,  REDCOLL_MAX,
                                              REDCOLL_BAND, REDCOLL_BOR,  REDCOLL_BXOR, REDCOLL_LAND,
                                              REDCOLL_LOR,  REDCOLL_LXOR, REDCOLL_MINLOC,
                                              REDCOLL_MAXLOC};
  return ops[id];
}

/* (MINLOC and MAXLOC with the value-index dtypes: test_loc.c) */
static int pair_valid(redcoll_dtype dt, int opid) {
  if (dt == REDCOLL_CUSTOM || opid == REDCOLL__OP_MINLOC || opid == REDCOLL__OP_MAXLOC) return 0;
  return opid <= REDCOLL__OP_MAX || is_int(dt);
}

/* ---- tests ------------------------------------------------------------------- */

/* The float16 / bfloat16 paths this CPU runs; *n of them. */
static int half_paths(int *paths) {
  int n = 0;
  for (int p = 0; p < REDCOLL__HALF_PATHS; p++)
    if (redcoll__half_path_supported(p)) paths[n++] = p;
  return n;
}

static void test_all_pairs(void) {
  static const size_t counts[] = {0, 1, 7, 15, 16, 17, 31, 32, 33, 47, 4099};
  int paths[REDCOLL__HALF_PATHS], npaths = half_paths(paths);
  dec_init();
  ref_disagree = 0;
  for (int d = 0; d < REDCOLL_CUSTOM; d++) {
    for (int o = 0; o < REDCOLL__OP_COUNT; o++) {
      if (!pair_valid((redcoll_dtype)d, o)) continue;
      /* the half types on every path, the others once */
      for (int k = 0; k < (is_half((redcoll_dtype)d) ? npaths : 1); k++) {
        if (is_half((redcoll_dtype)d)) CHECK_INT(redcoll__half_path_set(paths[k]), REDCOLL_OK);
        size_t bad = 0;
        for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++)
          for (int a = 0; a < ALIAS_COUNT; a++)
            for (size_t shift = 0; shift < 3; shift++)
              bad += run_case((redcoll_dtype)d, o, counts[c], a,
                              shift == 2 ? 1 : shift * redcoll_dtype_size((redcoll_dtype)d),
                              builtin(o));
        CHECK_MSG(bad == 0, "%s op %d path %s: %zu wrong elements",
                  redcoll_dtype_name((redcoll_dtype)d), o,
                  is_half((redcoll_dtype)d) ? redcoll__half_path_name(paths[k]) : "-", bad);
      }
    }
  }
  CHECK_INT(redcoll__half_path_set(-1), REDCOLL_OK);
  CHECK_MSG(ref_disagree == 0, "the two half references disagree on %zu elements", ref_disagree);
}

static int noop_calls;
static void noop_fn(void *out, const void *left, const void *right, size_t count, void *ctx) {
  (void)out, (void)left, (void)right, (void)count, (void)ctx;
  noop_calls++;
}

static void test_invalid_pairs(void) {
  unsigned char out[64], l[64], r[64];
  memset(l, 1, sizeof l);
  memset(r, 2, sizeof r);
  for (int d = 0; d <= REDCOLL_CUSTOM; d++) {
    for (int o = 0; o < REDCOLL__OP_COUNT; o++) {
      int want = pair_valid((redcoll_dtype)d, o) ? REDCOLL_OK : REDCOLL_EINVAL;
      CHECK_INT(redcoll__kernel_check((redcoll_dtype)d, builtin(o)), want);
      memset(out, 0x77, sizeof out);
      CHECK_INT(redcoll_reduce_local(out, l, r, 4, (redcoll_dtype)d, builtin(o)), want);
      CHECK_INT(redcoll_reduce_local(out, l, r, 0, (redcoll_dtype)d, builtin(o)), want);
      if (want != REDCOLL_OK) {
        int untouched = 1;
        for (size_t i = 0; i < sizeof out; i++) untouched &= out[i] == 0x77;
        CHECK_MSG(untouched, "dtype %d op %d wrote its output", d, o);
      }
    }
  }
  /* A user op: only with REDCOLL_CUSTOM. */
  redcoll_op *user = NULL;
  CHECK_INT(redcoll_op_create(noop_fn, 4, 1, NULL, &user), REDCOLL_OK);
  for (int d = 0; d < REDCOLL_CUSTOM; d++) {
    CHECK_INT(redcoll__kernel_check((redcoll_dtype)d, user), REDCOLL_EINVAL);
    CHECK_INT(redcoll_reduce_local(out, l, r, 4, (redcoll_dtype)d, user), REDCOLL_EINVAL);
  }
  CHECK_INT(redcoll__kernel_check(REDCOLL_CUSTOM, user), REDCOLL_OK);
  CHECK_INT(noop_calls, 0);
  /* Out-of-range dtypes, NULL and malformed operators. */
  CHECK_INT(redcoll__kernel_check((redcoll_dtype)-1, REDCOLL_SUM), REDCOLL_EINVAL);
  CHECK_INT(redcoll__kernel_check(REDCOLL_DTYPE_COUNT, REDCOLL_SUM), REDCOLL_EINVAL);
  CHECK_INT(redcoll__kernel_check(REDCOLL_DTYPE_COUNT, user), REDCOLL_EINVAL);
  CHECK_INT(redcoll_reduce_local(out, l, r, 4, (redcoll_dtype)-1, REDCOLL_SUM), REDCOLL_EINVAL);
  CHECK_INT(redcoll__kernel_check(REDCOLL_INT32, NULL), REDCOLL_EINVAL);
  CHECK_INT(redcoll_reduce_local(out, l, r, 4, REDCOLL_INT32, NULL), REDCOLL_EINVAL);
  struct redcoll_op bad_id = {42, 1, NULL, 0, NULL};
  CHECK_INT(redcoll__kernel_check(REDCOLL_INT32, &bad_id), REDCOLL_EINVAL);
  struct redcoll_op neg_id = {-1, 1, NULL, 0, NULL};
  CHECK_INT(redcoll__kernel_check(REDCOLL_INT32, &neg_id), REDCOLL_EINVAL);
  struct redcoll_op no_fn = {REDCOLL__OP_USER, 1, NULL, 4, NULL};
  CHECK_INT(redcoll__kernel_check(REDCOLL_CUSTOM, &no_fn), REDCOLL_EINVAL);
  struct redcoll_op no_size = {REDCOLL__OP_USER, 1, noop_fn, 0, NULL};
  CHECK_INT(redcoll__kernel_check(REDCOLL_CUSTOM, &no_size), REDCOLL_EINVAL);
  redcoll_op_destroy(user);
}

static void test_buffer_args(void) {
  int32_t a[8] = {1, 2, 3, 4, 5, 6, 7, 8}, b[8] = {0}, o[8];
  /* NULL buffers: an error with elements, fine without. */
  CHECK_INT(redcoll_reduce_local(NULL, a, b, 1, REDCOLL_INT32, REDCOLL_SUM), REDCOLL_EINVAL);
  CHECK_INT(redcoll_reduce_local(o, NULL, b, 1, REDCOLL_INT32, REDCOLL_SUM), REDCOLL_EINVAL);
  CHECK_INT(redcoll_reduce_local(o, a, NULL, 1, REDCOLL_INT32, REDCOLL_SUM), REDCOLL_EINVAL);
  CHECK_INT(redcoll_reduce_local(NULL, NULL, NULL, 0, REDCOLL_INT32, REDCOLL_SUM), REDCOLL_OK);
  /* Partial overlap of out with an input. */
  CHECK_INT(redcoll_reduce_local(a + 1, a, b, 4, REDCOLL_INT32, REDCOLL_SUM), REDCOLL_EINVAL);
  CHECK_INT(redcoll_reduce_local(a, b, a + 3, 4, REDCOLL_INT32, REDCOLL_SUM), REDCOLL_EINVAL);
  CHECK_INT(a[0], 1);
  CHECK_INT(a[1], 2);
  /* Adjacent is not overlapping; inputs may overlap each other. */
  CHECK_INT(redcoll_reduce_local(a + 4, a, a + 1, 3, REDCOLL_INT32, REDCOLL_SUM), REDCOLL_OK);
  CHECK_INT(a[4], 3);
  CHECK_INT(a[5], 5);
  CHECK_INT(a[6], 7);
  CHECK_INT(a[7], 8);
  /* count * size overflowing size_t */
  CHECK_INT(redcoll_reduce_local(o, a, b, SIZE_MAX / 2, REDCOLL_INT32, REDCOLL_SUM),
            REDCOLL_EINVAL);
}

static void test_wraparound(void) {
  int8_t a8[4] = {127, -128, -128, 100}, b8[4] = {1, -1, 0, 100}, o8[4];
  CHECK_INT(redcoll_reduce_local(o8, a8, b8, 4, REDCOLL_INT8, REDCOLL_SUM), REDCOLL_OK);
  CHECK_INT(o8[0], -128);
  CHECK_INT(o8[1], 127);
  CHECK_INT(o8[2], -128);
  CHECK_INT(o8[3], -56);
  int8_t c8[4] = {-1, 0, 2, 100};
  CHECK_INT(redcoll_reduce_local(o8, a8, c8, 4, REDCOLL_INT8, REDCOLL_PROD), REDCOLL_OK);
  CHECK_INT(o8[0], -127);
  CHECK_INT(o8[1], 0);
  CHECK_INT(o8[2], 0); /* -256 mod 256 */
  CHECK_INT(o8[3], 16); /* 10000 mod 256 */
  int8_t m1 = -1, mn = -128;
  CHECK_INT(redcoll_reduce_local(o8, &mn, &m1, 1, REDCOLL_INT8, REDCOLL_PROD), REDCOLL_OK);
  CHECK_INT(o8[0], -128);

  int16_t a16[2] = {300, 32767}, b16[2] = {300, 1}, o16[2];
  CHECK_INT(redcoll_reduce_local(o16, a16, b16, 2, REDCOLL_INT16, REDCOLL_PROD), REDCOLL_OK);
  CHECK_INT(o16[0], 24464); /* 90000 - 65536 */
  CHECK_INT(o16[1], 32767);
  CHECK_INT(redcoll_reduce_local(o16, a16, b16, 2, REDCOLL_INT16, REDCOLL_SUM), REDCOLL_OK);
  CHECK_INT(o16[1], -32768);

  uint16_t u16a = 65535, u16b = 65535, u16o;
  CHECK_INT(redcoll_reduce_local(&u16o, &u16a, &u16b, 1, REDCOLL_UINT16, REDCOLL_PROD), REDCOLL_OK);
  CHECK_INT(u16o, 1);
  CHECK_INT(redcoll_reduce_local(&u16o, &u16a, &u16b, 1, REDCOLL_UINT16, REDCOLL_SUM), REDCOLL_OK);
  CHECK_INT(u16o, 65534);

  int32_t a32[3] = {INT32_MAX, INT32_MIN, 65536}, b32[3] = {1, -1, 65536}, o32[3];
  CHECK_INT(redcoll_reduce_local(o32, a32, b32, 3, REDCOLL_INT32, REDCOLL_SUM), REDCOLL_OK);
  CHECK_INT(o32[0], INT32_MIN);
  CHECK_INT(o32[1], INT32_MAX);
  CHECK_INT(redcoll_reduce_local(o32, a32, b32, 3, REDCOLL_INT32, REDCOLL_PROD), REDCOLL_OK);
  CHECK_INT(o32[0], INT32_MAX);
  CHECK_INT(o32[1], INT32_MIN); /* -INT32_MIN wraps to itself */
  CHECK_INT(o32[2], 0);

  int64_t a64[3] = {INT64_MAX, INT64_MIN, INT64_MIN}, b64[3] = {1, -1, -1}, o64[3];
  CHECK_INT(redcoll_reduce_local(o64, a64, b64, 3, REDCOLL_INT64, REDCOLL_SUM), REDCOLL_OK);
  CHECK(o64[0] == INT64_MIN);
  CHECK(o64[1] == INT64_MAX);
  CHECK_INT(redcoll_reduce_local(o64, a64, b64, 3, REDCOLL_INT64, REDCOLL_PROD), REDCOLL_OK);
  CHECK(o64[0] == INT64_MAX);
  CHECK(o64[2] == INT64_MIN);
  uint64_t u64a = UINT64_MAX, u64b = 2, u64o;
  CHECK_INT(redcoll_reduce_local(&u64o, &u64a, &u64b, 1, REDCOLL_UINT64, REDCOLL_PROD), REDCOLL_OK);
  CHECK(u64o == UINT64_MAX - 1);

  /* Logical operators give 0 or 1, also from negative operands. */
  int8_t la[4] = {-128, 0, 5, 0}, lb[4] = {-1, 7, 0, 0}, lo[4];
  CHECK_INT(redcoll_reduce_local(lo, la, lb, 4, REDCOLL_INT8, REDCOLL_LAND), REDCOLL_OK);
  CHECK(lo[0] == 1 && lo[1] == 0 && lo[2] == 0 && lo[3] == 0);
  CHECK_INT(redcoll_reduce_local(lo, la, lb, 4, REDCOLL_INT8, REDCOLL_LOR), REDCOLL_OK);
  CHECK(lo[0] == 1 && lo[1] == 1 && lo[2] == 1 && lo[3] == 0);
  CHECK_INT(redcoll_reduce_local(lo, la, lb, 4, REDCOLL_INT8, REDCOLL_LXOR), REDCOLL_OK);
  CHECK(lo[0] == 0 && lo[1] == 1 && lo[2] == 1 && lo[3] == 0);
  /* Signed comparison for signed MIN/MAX, unsigned for unsigned. */
  CHECK_INT(redcoll_reduce_local(lo, la, lb, 4, REDCOLL_INT8, REDCOLL_MIN), REDCOLL_OK);
  CHECK(lo[0] == -128 && lo[1] == 0 && lo[2] == 0);
  uint8_t ua = 0x80, ub = 0x7f, uo;
  CHECK_INT(redcoll_reduce_local(&uo, &ua, &ub, 1, REDCOLL_UINT8, REDCOLL_MIN), REDCOLL_OK);
  CHECK_INT(uo, 0x7f);
}

static void test_float_minmax(void) {
  float qnan = NAN;
  float l[4] = {qnan, 1.0f, -0.0f, 0.0f}, r[4] = {1.0f, qnan, 0.0f, -0.0f}, o[4];
  CHECK_INT(redcoll_reduce_local(o, l, r, 4, REDCOLL_FLOAT32, REDCOLL_MIN), REDCOLL_OK);
  CHECK(f32_bits(o[0]) == f32_bits(qnan));
  CHECK(o[1] == 1.0f);
  CHECK(f32_bits(o[2]) == 0x80000000u); /* left -0.0 kept */
  CHECK(f32_bits(o[3]) == 0u);
  CHECK_INT(redcoll_reduce_local(o, l, r, 4, REDCOLL_FLOAT32, REDCOLL_MAX), REDCOLL_OK);
  CHECK(f32_bits(o[0]) == f32_bits(qnan));
  CHECK(o[1] == 1.0f);
  CHECK(f32_bits(o[2]) == 0x80000000u);
  CHECK(f32_bits(o[3]) == 0u);
  double dl[2] = {NAN, 2.0}, dr[2] = {-1.0, NAN}, d[2];
  CHECK_INT(redcoll_reduce_local(d, dl, dr, 2, REDCOLL_FLOAT64, REDCOLL_MAX), REDCOLL_OK);
  CHECK(isnan(d[0]));
  CHECK(d[1] == 2.0);
  /* float16: a signalling NaN on the left comes back quiet. */
  uint16_t hl[3] = {0x7c01, 0x3c00, 0x8000}, hr[3] = {0x3c00, 0x7e00, 0x0000}, ho[3];
  CHECK_INT(redcoll_reduce_local(ho, hl, hr, 3, REDCOLL_FLOAT16, REDCOLL_MIN), REDCOLL_OK);
  CHECK_INT(ho[0], 0x7e01);
  CHECK_INT(ho[1], 0x3c00);
  CHECK_INT(ho[2], 0x8000);
  uint16_t bl[2] = {0x7f81, 0xbf80}, br[2] = {0x3f80, 0x3f80}, bo[2];
  CHECK_INT(redcoll_reduce_local(bo, bl, br, 2, REDCOLL_BFLOAT16, REDCOLL_MAX), REDCOLL_OK);
  CHECK_INT(bo[0], 0x7fc1);
  CHECK_INT(bo[1], 0x3f80);
}

/* A non-commutative user operator on affine maps x -> m x + c (int32 pairs):
 * out = right after left. */
typedef struct {
  int32_t m, c;
} affine;

static int affine_calls;
static void affine_fn(void *out, const void *left, const void *right, size_t count, void *ctx) {
  const affine *l = left, *r = right;
  affine *o = out;
  CHECK(ctx == &affine_calls);
  affine_calls++;
  for (size_t i = 0; i < count; i++) {
    affine x = l[i], y = r[i];
    o[i].m = y.m * x.m;
    o[i].c = y.m * x.c + y.c;
  }
}

static void test_user_op(void) {
  redcoll_op *op = (redcoll_op *)1;
  CHECK_INT(redcoll_op_create(NULL, 8, 0, NULL, &op), REDCOLL_EINVAL);
  CHECK(op == NULL);
  CHECK_INT(redcoll_op_create(affine_fn, 0, 0, NULL, &op), REDCOLL_EINVAL);
  CHECK_INT(redcoll_op_create(affine_fn, 8, 0, NULL, NULL), REDCOLL_EINVAL);
  CHECK_INT(redcoll_op_create(affine_fn, sizeof(affine), 0, &affine_calls, &op), REDCOLL_OK);
  CHECK(op != NULL);
  if (op == NULL) return;
  CHECK_INT(redcoll_op_is_commutative(op), 0);
  CHECK_INT(redcoll__elem_size(REDCOLL_CUSTOM, op), sizeof(affine));
  CHECK_INT(redcoll_dtype_size(REDCOLL_CUSTOM), 0);

  static const size_t counts[] = {1, 7, 4099};
  for (size_t k = 0; k < 3; k++) {
    size_t n = counts[k];
    affine *l = malloc(n * sizeof *l), *r = malloc(n * sizeof *r), *o = malloc(n * sizeof *o);
    affine *want = malloc(n * sizeof *want);
    CHECK(l && r && o && want);
    if (!l || !r || !o || !want) goto next;
    for (size_t i = 0; i < n; i++) {
      l[i].m = (int32_t)(rng() % 7) - 3;
      l[i].c = (int32_t)(rng() % 100) - 50;
      r[i].m = (int32_t)(rng() % 7) - 3;
      r[i].c = (int32_t)(rng() % 100) - 50;
      want[i].m = r[i].m * l[i].m;
      want[i].c = r[i].m * l[i].c + r[i].c;
    }
    for (int alias = 0; alias < 3; alias++) {
      affine *lc = malloc(n * sizeof *lc), *rc = malloc(n * sizeof *rc);
      CHECK(lc && rc);
      if (!lc || !rc) {
        free(lc);
        free(rc);
        continue;
      }
      memcpy(lc, l, n * sizeof *l);
      memcpy(rc, r, n * sizeof *r);
      affine *dst = alias == 0 ? o : alias == 1 ? lc : rc;
      int before = affine_calls;
      CHECK_INT(redcoll_reduce_local(dst, lc, rc, n, REDCOLL_CUSTOM, op), REDCOLL_OK);
      CHECK_INT(affine_calls, before + 1);
      CHECK(memcmp(dst, want, n * sizeof *want) == 0);
      free(lc);
      free(rc);
    }
  next:
    free(l);
    free(r);
    free(o);
    free(want);
  }
  /* count 0 does not call the operator */
  int before = affine_calls;
  CHECK_INT(redcoll_reduce_local(NULL, NULL, NULL, 0, REDCOLL_CUSTOM, op), REDCOLL_OK);
  CHECK_INT(affine_calls, before);
  /* a built-in op with CUSTOM */
  affine a = {1, 2}, b = {3, 4}, c;
  CHECK_INT(redcoll_reduce_local(&c, &a, &b, 1, REDCOLL_CUSTOM, REDCOLL_SUM), REDCOLL_EINVAL);
  CHECK_INT(redcoll__elem_size(REDCOLL_CUSTOM, REDCOLL_SUM), 0);
  redcoll_op_destroy(op);

  redcoll_op *comm = NULL;
  CHECK_INT(redcoll_op_create(affine_fn, sizeof(affine), 5, NULL, &comm), REDCOLL_OK);
  CHECK_INT(redcoll_op_is_commutative(comm), 1);
  redcoll_op_destroy(comm);
}

static void test_ops_and_dtypes(void) {
  static const char *names[] = {"int8",   "uint8",   "int16",    "uint16",  "int32",
                                "uint32", "int64",   "uint64",   "float16", "bfloat16",
                                "float32", "float64", "custom", "float32_int32",
                                "float64_int32", "int32_int32", "int64_int32", "float32_int64",
                                "float64_int64", "int32_int64", "int64_int64"};
  static const size_t sizes[] = {1, 1, 2, 2, 4, 4, 8, 8, 2, 2, 4, 8, 0, 8, 16, 8, 16, 16, 16, 16, 16};
  for (int d = 0; d < REDCOLL_DTYPE_COUNT; d++) {
    CHECK(redcoll_dtype_name((redcoll_dtype)d) != NULL &&
          strcmp(redcoll_dtype_name((redcoll_dtype)d), names[d]) == 0);
    CHECK_INT(redcoll_dtype_size((redcoll_dtype)d), sizes[d]);
    if (d != REDCOLL_CUSTOM) CHECK_INT(redcoll__elem_size((redcoll_dtype)d, REDCOLL_SUM), sizes[d]);
    if (d > REDCOLL_CUSTOM) { /* value-index pairs: MINLOC and MAXLOC only */
      CHECK_INT(redcoll__kernel_check((redcoll_dtype)d, REDCOLL_MINLOC), REDCOLL_OK);
      CHECK_INT(redcoll__kernel_check((redcoll_dtype)d, REDCOLL_MAXLOC), REDCOLL_OK);
      CHECK_INT(redcoll__kernel_check((redcoll_dtype)d, REDCOLL_SUM), REDCOLL_EINVAL);
      CHECK_INT(redcoll__kernel_check((redcoll_dtype)d, REDCOLL_MIN), REDCOLL_EINVAL);
    }
  }
  CHECK(redcoll_dtype_name(REDCOLL_DTYPE_COUNT) == NULL);
  CHECK(redcoll_dtype_name((redcoll_dtype)-1) == NULL);
  CHECK_INT(redcoll_dtype_size(REDCOLL_DTYPE_COUNT), 0);
  CHECK_INT(redcoll_dtype_size((redcoll_dtype)-1), 0);
  for (int o = 0; o < REDCOLL__OP_COUNT; o++) {
    CHECK_INT(builtin(o)->id, o);
    CHECK_INT(redcoll_op_is_commutative(builtin(o)), 1);
    for (int p = 0; p < o; p++) CHECK(builtin(o) != builtin(p));
    /* destroying a built-in operator does nothing */
    redcoll_op_destroy((redcoll_op *)builtin(o));
    CHECK_INT(builtin(o)->id, o);
  }
  CHECK_INT(redcoll_op_is_commutative(NULL), REDCOLL_EINVAL);
  redcoll_op_destroy(NULL);
}

/* Named float16 and bfloat16 cases. */
static void test_half_cases(void) {
  static const struct {
    float f;
    uint16_t h;
  } to_h[] = {
      {1.0f, 0x3c00},
      {-2.0f, 0xc000},
      {0.5f, 0x3800},
      {0x1.554p-2f, 0x3555},       /* exact, 0.333251953125 */
      {0x1p-14f, 0x0400},          /* smallest normal */
      {65504.0f, 0x7bff},          /* largest finite */
      {-65504.0f, 0xfbff},
      {1.0f + 0x1p-11f, 0x3c00},   /* tie, down to even */
      {1.0f + 0x3p-11f, 0x3c02},   /* tie, up to even */
      {1.0f + 0x1p-11f + 0x1p-20f, 0x3c01}, /* above the tie */
      {1.0f + 0x1p-11f - 0x1p-20f, 0x3c00}, /* below the tie */
      {-(1.0f + 0x3p-11f), 0xbc02},
      {2048.0f + 1.0f, 0x6800},    /* tie at 2048 (spacing 2), even is 2048 */
      {2048.0f + 3.0f, 0x6802},    /* tie, up to 2052 */
      {65519.0f, 0x7bff},
      {0x1.ffdffep15f, 0x7bff},    /* largest float below 65520 */
      {65520.0f, 0x7c00},          /* tie between 65504 and 2^16: infinity */
      {-65520.0f, 0xfc00},
      {1e6f, 0x7c00},
      {FLT_MAX, 0x7c00},
      {INFINITY, 0x7c00},
      {-INFINITY, 0xfc00},
      {0x1p-24f, 0x0001},          /* smallest subnormal */
      {-0x1p-24f, 0x8001},
      {0x1p-25f, 0x0000},          /* tie between 0 and 2^-24: 0 */
      {0x1.000002p-25f, 0x0001},   /* just above that tie */
      {0x3p-25f, 0x0002},          /* tie between 1 and 2 units: 2 */
      {0x5p-25f, 0x0002},          /* tie between 2 and 3 units: 2 */
      {0x1.8p-24f * 3.0f, 0x0004}, /* 4.5 units: tie, 4 */
      {0x3ffp-24f, 0x03ff},        /* largest subnormal */
      {0x7ffp-25f, 0x0400},        /* 1023.5 units: tie, up to the smallest normal */
      {0x1.ff8p-15f, 0x03ff},      /* 1023 units exactly */
      {0x1p-26f, 0x0000},
      {1e-40f, 0x0000},            /* float32 subnormal */
      {-1e-40f, 0x8000},
      {0.0f, 0x0000},
      {-0.0f, 0x8000},
  };
  for (size_t i = 0; i < sizeof to_h / sizeof to_h[0]; i++) {
    uint16_t got = redcoll__f32_to_f16(to_h[i].f);
    CHECK_MSG(got == to_h[i].h, "f32_to_f16(%a) = %#x, want %#x", (double)to_h[i].f, got,
              to_h[i].h);
  }
  static const struct {
    uint16_t h;
    float f;
  } from_h[] = {
      {0x3c00, 1.0f},      {0xc000, -2.0f},        {0x7bff, 65504.0f},     {0x0400, 0x1p-14f},
      {0x0001, 0x1p-24f},  {0x8001, -0x1p-24f},    {0x03ff, 0x3ffp-24f},   {0x0200, 0x1p-15f},
      {0x7c00, INFINITY},  {0xfc00, -INFINITY},    {0x3555, 0x1.554p-2f},  {0x0000, 0.0f},
  };
  for (size_t i = 0; i < sizeof from_h / sizeof from_h[0]; i++) {
    float got = redcoll__f16_to_f32(from_h[i].h);
    CHECK_MSG(f32_bits(got) == f32_bits(from_h[i].f), "f16_to_f32(%#x) = %a, want %a", from_h[i].h,
              (double)got, (double)from_h[i].f);
  }
  CHECK(f32_bits(redcoll__f16_to_f32(0x8000)) == 0x80000000u);
  /* NaN: stays NaN, quiet, sign kept, not turned into infinity. */
  float qn = redcoll__f16_to_f32(0x7e00);
  CHECK(isnan(qn));
  float sn = redcoll__f16_to_f32(0x7c01);
  CHECK(isnan(sn) && (f32_bits(sn) & 0x00400000u));
  CHECK(isnan(redcoll__f16_to_f32(0xfc01)) && signbit(redcoll__f16_to_f32(0xfc01)));
  CHECK_INT(redcoll__f32_to_f16(NAN) & 0x7e00, 0x7e00);
  CHECK(h_isnan(redcoll__f32_to_f16(NAN)));
  CHECK_INT(redcoll__f32_to_f16(f32_from(0x7f800001u)), 0x7e00); /* payload only in low bits */
  CHECK_INT(redcoll__f32_to_f16(f32_from(0xffc00000u)), 0xfe00);

  /* bfloat16 */
  static const struct {
    uint32_t f;
    uint16_t b;
  } to_b[] = {
      {0x3f800000u, 0x3f80},                  /* 1.0 */
      {0x3f808000u, 0x3f80},                  /* tie, down to even */
      {0x3f818000u, 0x3f82},                  /* tie, up to even */
      {0x3f808001u, 0x3f81},                  /* above the tie */
      {0x3f807fffu, 0x3f80},                  /* below the tie */
      {0xbf818000u, 0xbf82},
      {0x7f7f0000u, 0x7f7f},                  /* largest finite */
      {0x7f7f7fffu, 0x7f7f},
      {0x7f7f8000u, 0x7f80},                  /* tie above the largest: infinity */
      {0x7f7fffffu, 0x7f80},                  /* FLT_MAX rounds to infinity */
      {0xff7fffffu, 0xff80},
      {0x7f800000u, 0x7f80},
      {0x00010000u, 0x0001},                  /* smallest subnormal */
      {0x00008000u, 0x0000},                  /* tie: 0 */
      {0x00018000u, 0x0002},                  /* tie: 2 */
      {0x00008001u, 0x0001},
      {0x007fffffu, 0x0080},                  /* largest f32 subnormal: smallest normal */
      {0x80000000u, 0x8000},                  /* -0.0 */
      {0x7f800001u, 0x7fc0},                  /* signalling NaN: quiet */
      {0xffc00000u, 0xffc0},
  };
  for (size_t i = 0; i < sizeof to_b / sizeof to_b[0]; i++) {
    uint16_t got = redcoll__f32_to_bf16(f32_from(to_b[i].f));
    CHECK_MSG(got == to_b[i].b, "f32_to_bf16(%#x) = %#x, want %#x", to_b[i].f, got, to_b[i].b);
  }
  CHECK(f32_bits(redcoll__bf16_to_f32(0x3f80)) == 0x3f800000u);
  CHECK(f32_bits(redcoll__bf16_to_f32(0x0001)) == 0x00010000u);
  CHECK(f32_bits(redcoll__bf16_to_f32(0x8000)) == 0x80000000u);
  CHECK(f32_bits(redcoll__bf16_to_f32(0xff80)) == 0xff800000u);
  CHECK(f32_bits(redcoll__bf16_to_f32(0x7f81)) == 0x7fc10000u);
}

/* Every float16 and bfloat16 pattern through float32 and back. */
static void test_half_exhaustive(void) {
  size_t bad_h = 0, bad_b = 0;
  for (uint32_t h = 0; h <= 0xffffu; h++) {
    float f = redcoll__f16_to_f32((uint16_t)h);
    uint16_t back = redcoll__f32_to_f16(f);
    if (h_isnan(h)) {
      if (!isnan(f) || !(f32_bits(f) & 0x00400000u) || back != (h | 0x200u)) bad_h++;
    } else {
      double ref = ref_decode(h, H_M, H_E);
      if (back != h || (double)f != ref || !signbit(f) != !signbit(ref)) bad_h++;
    }
    float g = redcoll__bf16_to_f32((uint16_t)h);
    uint16_t gback = redcoll__f32_to_bf16(g);
    if (b_isnan(h)) {
      if (!isnan(g) || !(f32_bits(g) & 0x00400000u) || gback != (h | 0x40u)) bad_b++;
    } else {
      double ref = ref_decode(h, B_M, B_E);
      if (gback != h || (double)g != ref || !signbit(g) != !signbit(ref)) bad_b++;
    }
  }
  CHECK_MSG(bad_h == 0, "%zu float16 patterns do not round-trip", bad_h);
  CHECK_MSG(bad_b == 0, "%zu bfloat16 patterns do not round-trip", bad_b);
}

/* The library's float32 -> float16 / bfloat16 rounding against the
 * frexp/ldexp reference on sampled floats: any bit pattern, the range
 * float16 covers, and exact ties. */
static void test_half_sampled(void) {
  const size_t n = 3000000;
  size_t bad_h = 0, bad_b = 0, nan_bad = 0, bad_tb = 0;
#ifdef __FLT16_MAX__
  size_t bad_native = 0;
#endif
  for (size_t i = 0; i < n; i++) {
    uint64_t x = rng();
    uint32_t u;
    switch (i % 4) {
      case 0: u = (uint32_t)x; break;
      case 1: /* exponents 2^-27 .. 2^17 */
        u = (uint32_t)(x & 0x80000000u) | ((uint32_t)(100 + (x >> 40) % 45) << 23) |
            (uint32_t)((x >> 8) & 0x7fffffu);
        break;
      case 2: /* float16 ties: exactly half a float16 unit below bit 13 */
        u = (uint32_t)(x & 0x80000000u) | ((uint32_t)(100 + (x >> 40) % 45) << 23) |
            (uint32_t)((x >> 8) & 0x7fe000u) | 0x1000u;
        break;
      default: /* bfloat16 ties */
        u = (uint32_t)(x & 0xffff0000u) | 0x8000u;
        break;
    }
    float f = f32_from(u);
    uint16_t h = redcoll__f32_to_f16(f);
    uint16_t b = redcoll__f32_to_bf16(f);
    if (isnan(f)) {
      uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
      if (!h_isnan(h) || !(h & 0x200u) || (h & 0x8000u) != sign) nan_bad++;
      if (!b_isnan(b) || !(b & 0x40u) || (b & 0x8000u) != sign) nan_bad++;
      continue;
    }
    if (h != ref_encode((double)f, H_M, H_E)) {
      if (bad_h == 0)
        fprintf(stderr, "  f32_to_f16(%#x) = %#x, reference %#x\n", u, h,
                ref_encode((double)f, H_M, H_E));
      bad_h++;
    }
    if (tb_encode(u, H_M, H_E) != ref_encode((double)f, H_M, H_E) ||
        tb_encode(u, B_M, B_E) != ref_encode((double)f, B_M, B_E))
      bad_tb++;
    if (b != ref_encode((double)f, B_M, B_E)) {
      if (bad_b == 0)
        fprintf(stderr, "  f32_to_bf16(%#x) = %#x, reference %#x\n", u, b,
                ref_encode((double)f, B_M, B_E));
      bad_b++;
    }
#ifdef __FLT16_MAX__
    /* the compiler's own conversion, where it has one */
    _Float16 nat = (_Float16)f;
    uint16_t nb;
    memcpy(&nb, &nat, sizeof nb);
    if (nb != h) bad_native++;
#endif
  }
  CHECK_MSG(bad_h == 0, "%zu of %zu sampled f32_to_f16 differ from the reference", bad_h, n);
  CHECK_MSG(bad_b == 0, "%zu of %zu sampled f32_to_bf16 differ from the reference", bad_b, n);
  CHECK_MSG(nan_bad == 0, "%zu NaNs converted wrongly", nan_bad);
  CHECK_MSG(bad_tb == 0, "%zu sampled tb_encode differ from the reference", bad_tb);
#ifdef __FLT16_MAX__
  CHECK_MSG(bad_native == 0, "%zu sampled f32_to_f16 differ from _Float16", bad_native);
#endif
}

/* ---- float16 / bfloat16 paths ------------------------------------------------ */

static void test_half_paths(void) {
  CHECK(strcmp(redcoll__half_path_name(REDCOLL__HALF_PORTABLE), "portable") == 0);
  CHECK(strcmp(redcoll__half_path_name(REDCOLL__HALF_AVX2), "avx2") == 0);
  CHECK(strcmp(redcoll__half_path_name(REDCOLL__HALF_AVX512), "avx512") == 0);
  CHECK(strcmp(redcoll__half_path_name(REDCOLL__HALF_AVX512BF16), "avx512bf16") == 0);
  CHECK(redcoll__half_path_name(REDCOLL__HALF_PATHS) == NULL);
  CHECK(redcoll__half_path_name(-1) == NULL);
  CHECK_INT(redcoll__half_path_supported(REDCOLL__HALF_PORTABLE), 1);
  CHECK_INT(redcoll__half_path_supported(REDCOLL__HALF_PATHS), 0);
  CHECK_INT(redcoll__half_path_set(REDCOLL__HALF_PATHS), REDCOLL_ENOTSUP);
  CHECK_INT(redcoll__half_path_set(-2), REDCOLL_ENOTSUP);
  int def = redcoll__half_path();
  CHECK(redcoll__half_path_supported(def));
  fprintf(stderr, "  half paths here:");
  for (int p = 0; p < REDCOLL__HALF_PATHS; p++) {
    if (!redcoll__half_path_supported(p)) continue;
    fprintf(stderr, " %s%s", redcoll__half_path_name(p), p == def ? " (default)" : "");
    CHECK_INT(redcoll__half_path_set(p), REDCOLL_OK);
    CHECK_INT(redcoll__half_path(), p);
  }
  fputc('\n', stderr);
  /* Without REDCOLL_HALF_KERNELS the default is the last supported path. */
  if (getenv("REDCOLL_HALF_KERNELS") == NULL) {
    int best = 0;
    for (int p = 0; p < REDCOLL__HALF_PATHS; p++)
      if (redcoll__half_path_supported(p)) best = p;
    CHECK_INT(def, best);
  }
  CHECK_INT(redcoll__half_path_set(-1), REDCOLL_OK);
  CHECK_INT(redcoll__half_path(), def);
}

/* The NaN rule, signed zeros, overflow and subnormals by name, each case
 * placed among ordinary elements of a vector long enough for the SIMD loops
 * (which hand a vector holding a NaN to the element functions), on every
 * path. */
static void test_half_nan_rule(void) {
  static const struct {
    redcoll_dtype dt;
    int op;
    uint16_t a, b, want;
  } cases[] = {
      {REDCOLL_FLOAT16, REDCOLL__OP_SUM, 0x7c01, 0x3c00, 0x7e01},  /* signalling NaN left: quiet */
      {REDCOLL_FLOAT16, REDCOLL__OP_SUM, 0x3c00, 0xfc05, 0xfe05},  /* NaN right, sign kept */
      {REDCOLL_FLOAT16, REDCOLL__OP_PROD, 0x7e00, 0xfd00, 0x7e00}, /* two NaNs: the left one */
      {REDCOLL_FLOAT16, REDCOLL__OP_SUM, 0xfd00, 0x7e00, 0xff00},
      {REDCOLL_FLOAT16, REDCOLL__OP_SUM, 0x7c00, 0xfc00, 0xfe00},  /* inf - inf */
      {REDCOLL_FLOAT16, REDCOLL__OP_PROD, 0x0000, 0x7c00, 0xfe00}, /* 0 * inf */
      {REDCOLL_FLOAT16, REDCOLL__OP_SUM, 0x7bff, 0x7bff, 0x7c00},  /* overflow */
      {REDCOLL_FLOAT16, REDCOLL__OP_SUM, 0x7bff, 0x5000, 0x7c00},  /* 65504 + 32 = 65536: inf */
      {REDCOLL_FLOAT16, REDCOLL__OP_SUM, 0x7bff, 0x4c00, 0x7c00},  /* 65504 + 16: tie, to inf */
      {REDCOLL_FLOAT16, REDCOLL__OP_SUM, 0x7bff, 0x4800, 0x7bff},  /* 65504 + 8: down */
      {REDCOLL_FLOAT16, REDCOLL__OP_SUM, 0x8000, 0x8000, 0x8000},  /* -0 + -0 */
      {REDCOLL_FLOAT16, REDCOLL__OP_SUM, 0x8000, 0x0000, 0x0000},  /* -0 + 0 */
      {REDCOLL_FLOAT16, REDCOLL__OP_SUM, 0x0001, 0x0001, 0x0002},  /* subnormals */
      {REDCOLL_FLOAT16, REDCOLL__OP_SUM, 0x03ff, 0x0001, 0x0400},  /* into the normals */
      {REDCOLL_FLOAT16, REDCOLL__OP_PROD, 0x0400, 0x3800, 0x0200}, /* to a subnormal */
      {REDCOLL_FLOAT16, REDCOLL__OP_PROD, 0x0001, 0x3800, 0x0000}, /* half a unit: tie to 0 */
      {REDCOLL_FLOAT16, REDCOLL__OP_PROD, 0x0003, 0x3800, 0x0002}, /* 1.5 units: tie to 2 */
      {REDCOLL_FLOAT16, REDCOLL__OP_PROD, 0x8001, 0x3400, 0x8000}, /* underflow to -0 */
      {REDCOLL_FLOAT16, REDCOLL__OP_SUM, 0x3c00, 0x1000, 0x3c00},  /* 1 + 2^-11: tie, to even */
      {REDCOLL_FLOAT16, REDCOLL__OP_SUM, 0x3c01, 0x1000, 0x3c02},  /* tie, up to even */
      {REDCOLL_FLOAT16, REDCOLL__OP_MIN, 0x3c00, 0x7e00, 0x3c00},  /* NaN right: dropped */
      {REDCOLL_FLOAT16, REDCOLL__OP_MIN, 0x7c01, 0x3c00, 0x7e01},  /* NaN left: kept, quiet */
      {REDCOLL_FLOAT16, REDCOLL__OP_MAX, 0xfd01, 0x3c00, 0xff01},
      {REDCOLL_FLOAT16, REDCOLL__OP_MAX, 0x8000, 0x0000, 0x8000},  /* -0 vs 0: left kept */
      {REDCOLL_FLOAT16, REDCOLL__OP_MIN, 0x0000, 0x8000, 0x0000},
      {REDCOLL_FLOAT16, REDCOLL__OP_MIN, 0x0002, 0x0001, 0x0001},
      {REDCOLL_FLOAT16, REDCOLL__OP_MAX, 0xfc00, 0x7c00, 0x7c00},
      {REDCOLL_BFLOAT16, REDCOLL__OP_SUM, 0x7f81, 0x3f80, 0x7fc1},
      {REDCOLL_BFLOAT16, REDCOLL__OP_SUM, 0x3f80, 0xff81, 0xffc1},
      {REDCOLL_BFLOAT16, REDCOLL__OP_PROD, 0x7fc5, 0xffc0, 0x7fc5},
      {REDCOLL_BFLOAT16, REDCOLL__OP_SUM, 0x7f80, 0xff80, 0xffc0},  /* inf - inf */
      {REDCOLL_BFLOAT16, REDCOLL__OP_PROD, 0x8000, 0xff80, 0xffc0}, /* -0 * -inf */
      {REDCOLL_BFLOAT16, REDCOLL__OP_SUM, 0x7f7f, 0x7f7f, 0x7f80},  /* overflow */
      {REDCOLL_BFLOAT16, REDCOLL__OP_PROD, 0xff7f, 0x4000, 0xff80},
      {REDCOLL_BFLOAT16, REDCOLL__OP_SUM, 0x8000, 0x8000, 0x8000},
      {REDCOLL_BFLOAT16, REDCOLL__OP_SUM, 0x0000, 0x8000, 0x0000},
      {REDCOLL_BFLOAT16, REDCOLL__OP_SUM, 0x0001, 0x0001, 0x0002},  /* subnormals */
      {REDCOLL_BFLOAT16, REDCOLL__OP_SUM, 0x007f, 0x0001, 0x0080},  /* into the normals */
      {REDCOLL_BFLOAT16, REDCOLL__OP_PROD, 0x0080, 0x3f00, 0x0040}, /* to a subnormal */
      {REDCOLL_BFLOAT16, REDCOLL__OP_PROD, 0x0001, 0x3f00, 0x0000}, /* half a unit: tie to 0 */
      {REDCOLL_BFLOAT16, REDCOLL__OP_PROD, 0x0003, 0x3f00, 0x0002}, /* 1.5 units: tie to 2 */
      {REDCOLL_BFLOAT16, REDCOLL__OP_PROD, 0x3f80, 0x0001, 0x0001}, /* 1 * subnormal */
      {REDCOLL_BFLOAT16, REDCOLL__OP_SUM, 0x3f80, 0x3b80, 0x3f80},  /* 1 + 2^-8: tie, to even */
      {REDCOLL_BFLOAT16, REDCOLL__OP_SUM, 0x3f81, 0x3b80, 0x3f82},  /* tie, up to even */
      {REDCOLL_BFLOAT16, REDCOLL__OP_MIN, 0x3f80, 0x7fc0, 0x3f80},
      {REDCOLL_BFLOAT16, REDCOLL__OP_MAX, 0xff81, 0x3f80, 0xffc1},
      {REDCOLL_BFLOAT16, REDCOLL__OP_MAX, 0x7f80, 0x7f81, 0x7f80},
      {REDCOLL_BFLOAT16, REDCOLL__OP_MAX, 0x0001, 0x0002, 0x0002},  /* subnormals compared */
      {REDCOLL_BFLOAT16, REDCOLL__OP_MIN, 0x8000, 0x0000, 0x8000},
  };
  int paths[REDCOLL__HALF_PATHS], npaths = half_paths(paths);
  dec_init();
  enum { N = 71, AT = 37 };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    CHECK_MSG(ref_half(cases[c].dt, cases[c].op, cases[c].a, cases[c].b) == cases[c].want,
              "reference: case %zu gives %#x", c,
              ref_half(cases[c].dt, cases[c].op, cases[c].a, cases[c].b));
    uint16_t one = cases[c].dt == REDCOLL_FLOAT16 ? 0x3c00 : 0x3f80;
    for (int k = 0; k < npaths; k++) {
      CHECK_INT(redcoll__half_path_set(paths[k]), REDCOLL_OK);
      uint16_t l[N], r[N], o[N];
      for (int i = 0; i < N; i++) l[i] = r[i] = one;
      l[AT] = cases[c].a;
      r[AT] = cases[c].b;
      l[3] = cases[c].a; /* and once in the scalar tail, or an early vector */
      r[3] = cases[c].b;
      CHECK_INT(redcoll_reduce_local(o, l, r, N, cases[c].dt, builtin(cases[c].op)), REDCOLL_OK);
      uint16_t other = (uint16_t)ref_half(cases[c].dt, cases[c].op, one, one);
      int rest_ok = 1;
      for (int i = 0; i < N; i++)
        if (i != AT && i != 3) rest_ok &= o[i] == other;
      CHECK_MSG(o[AT] == cases[c].want && o[3] == cases[c].want && rest_ok,
                "%s: case %zu (%#x op %d %#x) gives %#x / %#x, want %#x",
                redcoll__half_path_name(paths[k]), c, cases[c].a, cases[c].op, cases[c].b, o[AT],
                o[3], cases[c].want);
    }
  }
  CHECK_INT(redcoll__half_path_set(-1), REDCOLL_OK);
}

/* Every float16 / bfloat16 left pattern against a sample of right ones (all
 * of them with REDCOLL_TEST_ALL_PAIRS=1), for every op on every path: the
 * left patterns in a shuffled order so that NaNs fall anywhere in a vector,
 * the right sample rotated so that each left meets each right once; in
 * place for every other rotation. */
static void test_half_sweep(void) {
  const char *all = getenv("REDCOLL_TEST_ALL_PAIRS");
  const size_t nsamp = all != NULL && strcmp(all, "1") == 0 ? 65536 : 512;
  enum { N = 65536 };
  uint16_t *left = malloc(N * 2), *right = malloc(N * 2), *out = malloc(N * 2);
  uint16_t *want = malloc(N * 2), *samp = malloc(nsamp * 2);
  CHECK(left && right && out && want && samp);
  if (!left || !right || !out || !want || !samp) goto done;
  int paths[REDCOLL__HALF_PATHS], npaths = half_paths(paths);
  dec_init();
  for (uint32_t i = 0; i < N; i++) left[i] = (uint16_t)i;
  for (uint32_t i = N - 1; i > 0; i--) { /* Fisher-Yates */
    uint32_t j = (uint32_t)(rng() % (i + 1));
    uint16_t t = left[i];
    left[i] = left[j];
    left[j] = t;
  }
  static const redcoll_dtype dts[2] = {REDCOLL_FLOAT16, REDCOLL_BFLOAT16};
  for (int d = 0; d < 2; d++) {
    redcoll_dtype dt = dts[d];
    /* The sample: every sign and exponent with the fraction 0, 1, its top
     * bit and all ones (float16; for bfloat16 the exponents near the ends
     * and the middle), then random patterns. */
    size_t ns = 0;
    if (nsamp == N) {
      for (uint32_t i = 0; i < N; i++) samp[ns++] = (uint16_t)i;
    } else {
      int mb = dt == REDCOLL_FLOAT16 ? H_M : B_M, eb = dt == REDCOLL_FLOAT16 ? H_E : B_E;
      uint32_t top = 1u << (mb - 1), ones = (1u << mb) - 1, emax = (1u << eb) - 1;
      for (uint32_t e = 0; e <= emax; e++) {
        if (dt == REDCOLL_BFLOAT16 && e > 3 && e < emax - 3 && (e < 110 || e > 145)) continue;
        uint32_t fr[4] = {0, 1, top, ones};
        for (int sg = 0; sg < 2; sg++)
          for (int f = 0; f < 4; f++)
            samp[ns++] = (uint16_t)((uint32_t)sg << 15 | e << mb | fr[f]);
      }
      while (ns < nsamp) samp[ns++] = (uint16_t)rng();
    }
    for (int op = REDCOLL__OP_SUM; op <= REDCOLL__OP_MAX; op++) {
      size_t bad[REDCOLL__HALF_PATHS] = {0};
      for (size_t k = 0; k < nsamp; k++) {
        for (size_t i = 0; i < N; i++) {
          right[i] = samp[(i + k) % nsamp];
          want[i] = (uint16_t)ref_half(dt, op, left[i], right[i]);
        }
        for (int p = 0; p < npaths; p++) {
          redcoll__half_path_set(paths[p]);
          const uint16_t *l = left;
          if (k & 1) { /* in place: out = out op right */
            memcpy(out, left, N * 2);
            l = out;
          }
          CHECK_INT(redcoll_reduce_local(out, l, right, N, dt, builtin(op)), REDCOLL_OK);
          if (memcmp(out, want, N * 2) == 0) continue;
          for (size_t i = 0; i < N; i++) {
            if (out[i] == want[i]) continue;
            if (bad[paths[p]] == 0)
              fprintf(stderr, "  %s %s op %d: %#x op %#x = %#x, want %#x\n",
                      redcoll__half_path_name(paths[p]), redcoll_dtype_name(dt), op, left[i],
                      right[i], out[i], want[i]);
            bad[paths[p]]++;
          }
        }
      }
      for (int p = 0; p < npaths; p++)
        CHECK_MSG(bad[paths[p]] == 0, "%s %s op %d: %zu of %zu pairs wrong",
                  redcoll__half_path_name(paths[p]), redcoll_dtype_name(dt), op, bad[paths[p]],
                  (size_t)N * nsamp);
    }
  }
  redcoll__half_path_set(-1);
done:
  free(left);
  free(right);
  free(out);
  free(want);
  free(samp);
}

TEST_MAIN(TEST(test_ops_and_dtypes), TEST(test_half_cases), TEST(test_half_exhaustive), TEST(test_half_sampled), TEST(test_all_pairs), TEST(test_half_paths), TEST(test_half_nan_rule), TEST(test_half_sweep), TEST(test_invalid_pairs), TEST(test_buffer_args), TEST(test_wraparound), TEST(test_float_minmax), TEST(test_user_op))
