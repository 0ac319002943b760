/*
 * A tiny test harness: CHECK-style assertions that print file, line and the
 * values, count failures, and make main() return non-zero.  Every test is its
 * own executable registered in tests/meson.build with a timeout.
 */
#ifndef REDCOLL_TEST_H
#define REDCOLL_TEST_H

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int test__failures;
static int test__checks;

#define CHECK(cond)                                                         \
  do {                                                                      \
    test__checks++;                                                         \
    if (!(cond)) {                                                          \
      test__failures++;                                                     \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
    }                                                                       \
  } while (0)

#define CHECK_MSG(cond, ...)                                                \
  do {                                                                      \
    test__checks++;                                                         \
    if (!(cond)) {                                                          \
      test__failures++;                                                     \
      fprintf(stderr, "%s:%d: CHECK failed: %s: ", __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                                         \
      fputc('\n', stderr);                                                  \
    }                                                                       \
  } while (0)

#define CHECK_INT(a, b)                                                     \
  do {                                                                      \
    long long test__a = (long long)(a), test__b = (long long)(b);           \
    test__checks++;                                                         \
    if (test__a != test__b) {                                               \
      test__failures++;                                                     \
      fprintf(stderr, "%s:%d: CHECK_INT failed: %s == %s (%lld != %lld)\n", \
              __FILE__, __LINE__, #a, #b, test__a, test__b);                \
    }                                                                       \
  } while (0)

#define CHECK_DBL(a, b)                                                     \
  do {                                                                      \
    double test__a = (double)(a), test__b = (double)(b);                    \
    test__checks++;                                                         \
    if (test__a != test__b) {                                               \
      test__failures++;                                                     \
      fprintf(stderr, "%s:%d: CHECK_DBL failed: %s == %s (%.17g != %.17g)\n", \
              __FILE__, __LINE__, #a, #b, test__a, test__b);                \
    }                                                                       \
  } while (0)

/* Ends main(): prints the count and returns the exit status. */
#define TEST_DONE()                                                         \
  (printf("%d checks, %d failed\n", test__checks, test__failures),          \
   test__failures ? 1 : 0)

#endif
