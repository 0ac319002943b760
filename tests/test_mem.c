/*
 * Large buffers (src/base/mem.h): from REDCOLL__BIG_MIN bytes up they are
 * mapped on their own at a 2 MiB boundary (so that the kernel can back
 * them with huge pages), below it and with REDCOLL_HUGEPAGES=0 they come
 * from malloc; every byte of every size is usable, and each is given back
 * with its size.  Under AddressSanitizer every buffer comes from malloc.
 */
#include <stdint.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base.h"
#include "test.h"

#if defined(__SANITIZE_ADDRESS__)
#define ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ASAN 1
#endif
#endif
#ifndef ASAN
#define ASAN 0
#endif

#define HUGE ((uintptr_t)2 << 20)

/* Allocates n bytes, writes a byte at every page and the last, reads them
 * back; 1 if the buffer starts at a 2 MiB boundary, 0 if not, -1 failed. */
static int use(size_t n) {
  unsigned char *p = redcoll__big_alloc(n);
  if (p == NULL) return -1;
  int bad = 0;
  for (size_t i = 0; i < n; i += 4096) p[i] = (unsigned char)(i >> 12);
  p[n - 1] = 0xa5;
  for (size_t i = 0; i + 1 < n; i += 4096) bad |= p[i] != (unsigned char)(i >> 12);
  bad |= p[n - 1] != 0xa5;
  int aligned = ((uintptr_t)p & (HUGE - 1)) == 0;
  redcoll__big_free(p, n);
  return bad ? -1 : aligned;
}

static void sizes(void) {
  const size_t M = REDCOLL__BIG_MIN;
  CHECK(use(1) >= 0);
  CHECK(use(4096) >= 0);
  CHECK_INT(use(M - 1) >= 0, 1);
  /* From the threshold up: aligned (unless AddressSanitizer). */
  size_t big[] = {M, M + 1, 5 * M + 3, 16 * M};
  for (size_t i = 0; i < sizeof big / sizeof big[0]; i++) CHECK_INT(use(big[i]), !ASAN);
  redcoll__big_free(NULL, M); /* nothing */
  redcoll__big_free(NULL, 1);
}

/* REDCOLL_HUGEPAGES=0 (read once, at the first large buffer: so in a
 * fresh process, this program run again with REDCOLL_TEST_MEM_CHILD set):
 * malloc's memory, which starts 16 bytes into its own mapping, never at
 * 2 MiB. */
static int child(void) {
  int r = use(4 * REDCOLL__BIG_MIN);
  return r == 0 ? 0 : 2 + r; /* 3: aligned, 1: unusable */
}

static void switched_off(void) {
  pid_t pid = fork();
  if (pid == 0) {
    setenv("REDCOLL_HUGEPAGES", "0", 1);
    setenv("REDCOLL_TEST_MEM_CHILD", "1", 1);
    execl("/proc/self/exe", "test_mem", (char *)NULL);
    _exit(127);
  }
  int st = 0;
  CHECK(pid > 0 && waitpid(pid, &st, 0) == pid);
  CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

int main(int argc, char **argv) {
  if (getenv("REDCOLL_TEST_MEM_CHILD") != NULL) return child();
  static const test_case cases[] = {TEST(sizes), TEST(switched_off)};
  return test_main(cases, sizeof cases / sizeof cases[0], argc, argv);
}
