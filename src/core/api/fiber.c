/*
 * A fiber: a function running on its own small stack that can stop in the
 * middle (yield) and be resumed later, from any thread, by whoever drives
 * it.  Nonblocking collectives run their algorithm on one (api/request.c):
 * where a blocking collective would wait in the transport's exchange, the
 * fiber posts the exchange and yields, and the transport's completion
 * resumes it.  One source per algorithm serves both modes.
 *
 * The stack is one private mapping with a guard page below it; only the
 * pages the algorithm touches become resident.  Switches are announced to
 * AddressSanitizer and ThreadSanitizer, which otherwise lose track of the
 * stack.  The driver may be a different thread at each resume, so the
 * driver's stack and sanitizer fiber are learnt anew at every switch.
 */
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "internal.h"

#if defined(__SANITIZE_ADDRESS__)
#define FIBER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FIBER_ASAN 1
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#define FIBER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define FIBER_TSAN 1
#endif
#endif
#ifdef FIBER_ASAN
void __asan_unpoison_memory_region(void const volatile *addr, size_t size);
void __sanitizer_start_switch_fiber(void **fake_stack_save, const void *bottom, size_t size);
void __sanitizer_finish_switch_fiber(void *fake_stack_save, const void **bottom_old,
                                     size_t *size_old);
#endif
#ifdef FIBER_TSAN
void *__tsan_get_current_fiber(void);
void *__tsan_create_fiber(unsigned flags);
void __tsan_destroy_fiber(void *fiber);
void __tsan_switch_to_fiber(void *fiber, unsigned flags);
#endif

static size_t page_size(void) {
  long p = sysconf(_SC_PAGESIZE);
  return p > 0 ? (size_t)p : 4096;
}

int redcoll__fiber_init(redcoll__fiber *f, size_t stack_bytes) {
  memset(f, 0, sizeof *f);
  size_t page = page_size();
  stack_bytes = (stack_bytes + page - 1) / page * page;
  size_t len = stack_bytes + page;
  void *m = mmap(NULL, len, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
  if (m == MAP_FAILED) return REDCOLL_ENOMEM;
  /* The guard page: an overflow faults instead of writing over the heap. */
  (void)mprotect(m, page, PROT_NONE);
  f->map = m;
  f->map_len = len;
  f->stack = (unsigned char *)m + page;
  f->stack_len = stack_bytes;
  return REDCOLL_OK;
}

void redcoll__fiber_free(redcoll__fiber *f) {
#ifdef FIBER_TSAN
  if (f->tsan_self != NULL) __tsan_destroy_fiber(f->tsan_self);
#endif
  if (f->map != NULL) munmap(f->map, f->map_len);
  memset(f, 0, sizeof *f);
}

/* Saves the running context in `from` and resumes `to`, whose stack is
 * [bottom, bottom + len) and whose sanitizer fiber is tsan_to.  `leaving`:
 * `from` is never resumed (a finished fiber).  Returns when `from` is
 * resumed; *bottom_from and *len_from then tell whose stack we came from. */
static void switch_to(ucontext_t *from, ucontext_t *to, void *tsan_to, const void *bottom,
                      size_t len, int leaving, const void **bottom_from, size_t *len_from) {
#ifdef FIBER_ASAN
  void *fake = NULL;
  __sanitizer_start_switch_fiber(leaving ? NULL : &fake, bottom, len);
#else
  (void)bottom, (void)len, (void)leaving;
#endif
#ifdef FIBER_TSAN
  __tsan_switch_to_fiber(tsan_to, 0);
#else
  (void)tsan_to;
#endif
  swapcontext(from, to);
#ifdef FIBER_ASAN
  __sanitizer_finish_switch_fiber(fake, bottom_from, len_from);
#else
  (void)bottom_from, (void)len_from;
#endif
}

/* The fiber's first frame: f's address in two halves (makecontext passes
 * ints).  Runs fn, then leaves for good. */
static void fiber_main(unsigned lo, unsigned hi) {
  redcoll__fiber *f = (redcoll__fiber *)(uintptr_t)((uint64_t)hi << 32 | lo);
#ifdef FIBER_ASAN
  __sanitizer_finish_switch_fiber(NULL, &f->back_bottom, &f->back_len);
#endif
  f->fn(f->arg);
  f->finished = 1;
  switch_to(&f->ctx, &f->back, f->tsan_back, f->back_bottom, f->back_len, 1, NULL, NULL);
}

int redcoll__fiber_start(redcoll__fiber *f, void (*fn)(void *), void *arg) {
#ifdef FIBER_ASAN
  /* The last function that ran here never returned through its frames. */
  __asan_unpoison_memory_region(f->stack, f->stack_len);
#endif
  if (getcontext(&f->ctx) != 0) return REDCOLL_ENOMEM;
  f->ctx.uc_stack.ss_sp = f->stack;
  f->ctx.uc_stack.ss_size = f->stack_len;
  f->ctx.uc_link = NULL; /* fiber_main never returns: it switches away */
  f->fn = fn;
  f->arg = arg;
  f->finished = 0;
  uintptr_t a = (uintptr_t)f;
  makecontext(&f->ctx, (void (*)(void))fiber_main, 2, (unsigned)(a & 0xffffffffu),
              (unsigned)((uint64_t)a >> 32));
#ifdef FIBER_TSAN
  if (f->tsan_self == NULL) f->tsan_self = __tsan_create_fiber(0);
#endif
  return REDCOLL_OK;
}

/* The fiber each thread runs now (a fiber may resume another's driver
 * code, so this is saved and restored around each resume). */
static __thread redcoll__fiber *current;

redcoll__fiber *redcoll__fiber_current(void) { return current; }

void redcoll__fiber_resume(redcoll__fiber *f) {
#ifdef FIBER_TSAN
  f->tsan_back = __tsan_get_current_fiber();
#endif
  redcoll__fiber *outer = current;
  current = f;
  switch_to(&f->back, &f->ctx, f->tsan_self, f->stack, f->stack_len, 0, NULL, NULL);
  current = outer;
}

void redcoll__fiber_yield(redcoll__fiber *f) {
  switch_to(&f->ctx, &f->back, f->tsan_back, f->back_bottom, f->back_len, 0, &f->back_bottom,
            &f->back_len);
}
