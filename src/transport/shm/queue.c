/* The per-pair byte queue (queue.h).  The producer owns tail and the
 * consumer head; each reads the other's counter with acquire and publishes
 * its own with release, so the bytes written before a tail is published
 * are visible to the consumer that reads that tail, and the room freed
 * before a head is published is not overwritten before it is read. */
#include <string.h>

#include "queue.h"

size_t redcoll__shm_queue_bytes(size_t cap) { return sizeof(redcoll__shm_queue) + cap; }

size_t redcoll__shm_queue_space(redcoll__shm_queue *q, size_t cap) {
  uint64_t head = __atomic_load_n(&q->head, __ATOMIC_ACQUIRE);
  uint64_t tail = __atomic_load_n(&q->tail, __ATOMIC_RELAXED);
  return cap - (size_t)(tail - head);
}

size_t redcoll__shm_queue_used(redcoll__shm_queue *q) {
  uint64_t tail = __atomic_load_n(&q->tail, __ATOMIC_ACQUIRE);
  uint64_t head = __atomic_load_n(&q->head, __ATOMIC_RELAXED);
  return (size_t)(tail - head);
}

size_t redcoll__shm_queue_put(redcoll__shm_queue *q, size_t cap, const void *src, size_t n) {
  size_t room = redcoll__shm_queue_space(q, cap);
  if (n > room) n = room;
  if (n == 0) return 0;
  uint64_t tail = __atomic_load_n(&q->tail, __ATOMIC_RELAXED);
  size_t at = (size_t)tail & (cap - 1), first = cap - at < n ? cap - at : n;
  memcpy(q->data + at, src, first);
  memcpy(q->data, (const unsigned char *)src + first, n - first);
  __atomic_store_n(&q->tail, tail + n, __ATOMIC_RELEASE);
  return n;
}

static void copy_out(redcoll__shm_queue *q, size_t cap, uint64_t head, void *dst, size_t n) {
  size_t at = (size_t)head & (cap - 1), first = cap - at < n ? cap - at : n;
  memcpy(dst, q->data + at, first);
  memcpy((unsigned char *)dst + first, q->data, n - first);
}

void redcoll__shm_queue_peek(redcoll__shm_queue *q, size_t cap, void *dst, size_t n) {
  copy_out(q, cap, __atomic_load_n(&q->head, __ATOMIC_RELAXED), dst, n);
}

size_t redcoll__shm_queue_get(redcoll__shm_queue *q, size_t cap, void *dst, size_t n) {
  size_t used = redcoll__shm_queue_used(q);
  if (n > used) n = used;
  if (n == 0) return 0;
  uint64_t head = __atomic_load_n(&q->head, __ATOMIC_RELAXED);
  if (dst != NULL) copy_out(q, cap, head, dst, n);
  __atomic_store_n(&q->head, head + n, __ATOMIC_RELEASE);
  return n;
}
