/* The single copy of a large message by cross-memory attach
 * (process_vm_readv), and the probe that decides, once per pair, whether
 * the kernel allows it.  It needs the right to ptrace the peer: the same
 * user and, under Yama's ptrace_scope 1, a declared tracer; seccomp
 * filters of containers may forbid the call.  Where the probe fails the
 * pair uses the pipelined double copy through its queue (shm.c). */
#include <errno.h>
#include <sys/uio.h>
#include <unistd.h>

#include "shm_int.h"

/* The word peers read to probe; its value is set once per segment. */
static uint64_t probe_word;

void redcoll__shm_copy_probe_word(uint64_t nonce, uint64_t *addr, uint64_t *val) {
  (void)nonce;
  uint64_t v = 0x5a5a5a5a5a5a5a5aull ^ (uint64_t)getpid();
  __atomic_store_n(&probe_word, v, __ATOMIC_RELAXED);
  *addr = (uint64_t)(uintptr_t)&probe_word;
  *val = v;
}

int redcoll__shm_copy_from(int pid, uint64_t addr, void *dst, size_t len) {
  size_t done = 0;
  while (done < len) {
    struct iovec l = {(char *)dst + done, len - done};
    struct iovec r = {(void *)(uintptr_t)(addr + done), len - done};
    ssize_t n = process_vm_readv(pid, &l, 1, &r, 1, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return REDCOLL_ETRANSPORT;
    done += (size_t)n;
  }
  return REDCOLL_OK;
}

void redcoll__shm_copy_probe(shm_impl *t, int allowed) {
  unsigned char *row = redcoll__shm_segment_cma_row(t, t->rank);
  for (int s = 0; s < t->size; s++) {
    row[s] = 0;
    if (s == t->rank || !allowed) continue;
    shm_rank *r = &t->ranks[s];
    uint64_t got = 0;
    if (redcoll__shm_copy_from(r->pid, r->probe_addr, &got, sizeof got) == REDCOLL_OK &&
        got == r->probe_val)
      row[s] = 1;
    else
      redcoll__log(2, "shm rank %d: cannot read rank %d's memory (%s): large messages from it "
                      "go through the queue", t->rank, s, strerror(errno));
  }
}
