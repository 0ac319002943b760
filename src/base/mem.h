/*
 * Large buffers: the core's scratch and the transports' kept messages.
 *
 * Fresh memory costs a page fault and a zeroed page per 4 KiB on first
 * touch.  On the virtual machine of docs/performance.md that is about
 * 15 us a page (16 MiB: 60 ms, against 1 ms to copy it), and it is paid
 * on every call whose buffer malloc took from the kernel and gave back.
 * Buffers of REDCOLL__BIG_MIN bytes and more are therefore mapped on
 * their own, aligned to 2 MiB and advised as transparent huge pages
 * (madvise MADV_HUGEPAGE; where the kernel has them off, as
 * /sys/kernel/mm/transparent_hugepage/enabled says, the advice does
 * nothing): 16 MiB first touched in 1.3 ms there.  Smaller ones, and every
 * buffer in a build with AddressSanitizer (which checks malloc's memory
 * only), come from malloc.  REDCOLL_HUGEPAGES=0 turns the advice off
 * (read once per process).
 */
#ifndef REDCOLL_MEM_H
#define REDCOLL_MEM_H

#include <stddef.h>

#define REDCOLL__BIG_MIN ((size_t)2 << 20)

/* n bytes (not zeroed), or NULL; free with redcoll__big_free(p, n), the
 * same n. */
void *redcoll__big_alloc(size_t n);
void redcoll__big_free(void *p, size_t n);

#endif /* REDCOLL_MEM_H */
