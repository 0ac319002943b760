/* Large buffers (mem.h). */
#include "mem.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "env.h"

#if defined(__SANITIZE_ADDRESS__)
#define MEM_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define MEM_ASAN 1
#endif
#endif
#ifndef MEM_ASAN
#define MEM_ASAN 0
#endif

#define HUGE_BYTES ((size_t)2 << 20)

/* 1: mapped and advised; 0: malloc.  Decided at the first large buffer. */
static int use_map(void) {
  static int state = -1; /* -1: not read yet (a race reads it twice alike) */
  int s = __atomic_load_n(&state, __ATOMIC_RELAXED);
  if (s < 0) {
    const char *v = redcoll__env("REDCOLL_HUGEPAGES");
    s = !MEM_ASAN && !(v != NULL && strcmp(v, "0") == 0);
    __atomic_store_n(&state, s, __ATOMIC_RELAXED);
  }
  return s;
}

static int is_big(size_t n) { return n >= REDCOLL__BIG_MIN && n <= SIZE_MAX - 2 * HUGE_BYTES; }

static size_t round_huge(size_t n) { return (n + HUGE_BYTES - 1) & ~(HUGE_BYTES - 1); }

void *redcoll__big_alloc(size_t n) {
  if (!is_big(n) || !use_map()) return malloc(n);
  size_t len = round_huge(n), span = len + HUGE_BYTES;
  char *q = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (q == MAP_FAILED) return NULL;
  /* Keep the 2 MiB-aligned len bytes inside, give back the ends. */
  uintptr_t a = ((uintptr_t)q + HUGE_BYTES - 1) & ~(uintptr_t)(HUGE_BYTES - 1);
  size_t head = a - (uintptr_t)q, tail = span - head - len;
  if (head > 0) munmap(q, head);
  if (tail > 0) munmap((char *)a + len, tail);
#ifdef MADV_HUGEPAGE
  (void)madvise((void *)a, len, MADV_HUGEPAGE);
#endif
  return (void *)a;
}

void redcoll__big_free(void *p, size_t n) {
  if (p == NULL) return;
  if (!is_big(n) || !use_map()) {
    free(p);
    return;
  }
  munmap(p, round_huge(n));
}
