/*
 * The float16 / bfloat16 kernel paths (kernels.c), for the tests and the
 * kernel benchmark: which one runs, and a switch to force another.
 *
 * Every path gives the same bits for every input (see kernels.c); they
 * differ only in speed.  By default the fastest path the CPU has runs;
 * REDCOLL_HALF_KERNELS=portable|avx2|avx512|avx512bf16 in the environment,
 * read once, picks another (a path the CPU lacks is ignored, with a
 * warning).
 */
#ifndef REDCOLL_KERNELS_H
#define REDCOLL_KERNELS_H

enum redcoll__half_path {
  REDCOLL__HALF_PORTABLE, /* plain C, vectorised by the compiler */
  REDCOLL__HALF_AVX2,     /* x86-64: AVX2, F16C and FMA */
  REDCOLL__HALF_AVX512,   /* x86-64: AVX-512F besides */
  REDCOLL__HALF_AVX512BF16, /* x86-64: AVX-512 BF16, BW and DQ besides */
  REDCOLL__HALF_PATHS
};

/* "portable", "avx2", "avx512", "avx512bf16"; NULL for anything else. */
const char *redcoll__half_path_name(int path);
/* 1 if the path is compiled in and the CPU can run it, else 0. */
int redcoll__half_path_supported(int path);
/* The path the float16 / bfloat16 kernels use now. */
int redcoll__half_path(void);
/* Makes the kernels use path from now on (-1: the default choice again):
 * REDCOLL_OK, or REDCOLL_ENOTSUP for a path that is not supported.  For
 * tests and benchmarks; not meant to race with running kernels (a kernel
 * running meanwhile finishes on either path, with the same result). */
int redcoll__half_path_set(int path);

#endif
