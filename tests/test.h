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
#include <time.h>

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

/* ---- named cases ---------------------------------------------------------
 * A test file lists its cases by name; `test_x` alone runs them all,
 * `test_x NAME...` the cases whose names contain one of the words (as does
 * TEST_FILTER=NAME in the environment, for meson test), `test_x --list`
 * prints the names.  A word that matches no case is an error, so a typo
 * never passes as an empty run.  Each case prints one line: ok or FAIL,
 * its checks and its time. */

typedef struct test_case {
  const char *name;
  void (*fn)(void);
} test_case;

#define TEST(fn) {#fn, fn}

static int test__argc;
static char **test__argv;

__attribute__((unused)) static double test__now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* 1 if the case name is selected by the command line or TEST_FILTER. */
__attribute__((unused)) static int test_selected(const char *name) {
  const char *env = getenv("TEST_FILTER");
  int any = 0;
  for (int i = 1; i < test__argc; i++) {
    if (test__argv[i][0] == '-') continue;
    any = 1;
    if (strstr(name, test__argv[i]) != NULL) return 1;
  }
  if (env != NULL && *env != '\0') return strstr(name, env) != NULL;
  return !any;
}

/* For files that select by hand with test_selected(). */
__attribute__((unused)) static void test_args(int argc, char **argv) {
  test__argc = argc;
  test__argv = argv;
}

__attribute__((unused)) static int test_main(const test_case *cases, size_t n, int argc,
                                             char **argv) {
  test_args(argc, argv);
  if (argc > 1 && strcmp(argv[1], "--list") == 0) {
    for (size_t i = 0; i < n; i++) printf("%s\n", cases[i].name);
    return 0;
  }
  for (int a = 1; a < argc; a++) {
    size_t hits = 0;
    for (size_t i = 0; i < n; i++) hits += strstr(cases[i].name, argv[a]) != NULL;
    if (argv[a][0] != '-' && hits == 0) {
      fprintf(stderr, "no case matches %s (--list shows them)\n", argv[a]);
      return 2;
    }
  }
  size_t ran = 0;
  for (size_t i = 0; i < n; i++) {
    if (!test_selected(cases[i].name)) continue;
    int f0 = test__failures, c0 = test__checks;
    double t0 = test__now();
    cases[i].fn();
    printf("%s %s: %d checks, %.2f s\n", test__failures > f0 ? "FAIL" : "ok  ", cases[i].name,
           test__checks - c0, test__now() - t0);
    fflush(stdout);
    ran++;
  }
  if (ran == 0) {
    fprintf(stderr, "no case selected\n");
    return 2;
  }
  printf("%zu cases, %d checks, %d failed\n", ran, test__checks, test__failures);
  return test__failures ? 1 : 0;
}

/* main() of a test file: its cases in order. */
#define TEST_MAIN(...)                                                     \
  int main(int argc, char **argv) {                                        \
    static const test_case test__cases[] = {__VA_ARGS__};                  \
    return test_main(test__cases, sizeof test__cases / sizeof test__cases[0], argc, argv); \
  }

/* Ends main(): prints the count and returns the exit status. */
#define TEST_DONE()                                                         \
  (printf("%d checks, %d failed\n", test__checks, test__failures),          \
   test__failures ? 1 : 0)

#endif
