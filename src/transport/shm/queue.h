/* The lock-free single-producer, single-consumer byte queue of one ordered
 * pair of ranks (queue.c), laid out in the shared segment: two 64-bit
 * counters of bytes ever written (tail, the producer's) and ever read
 * (head, the consumer's), each on a cache line of its own, then the ring
 * of cap bytes (a power of two).  A queue carries a stream of bytes;
 * messages are framed on top of it (shm_int.h).  Neither side ever
 * blocks: they return how much they could move. */
#ifndef REDCOLL_SHM_QUEUE_H
#define REDCOLL_SHM_QUEUE_H

#include <stddef.h>
#include <stdint.h>

typedef struct redcoll__shm_queue {
  _Alignas(64) uint64_t tail; /* written by the producer only */
  uint32_t broken;            /* the producer abandoned a message midway */
  _Alignas(64) uint64_t head; /* written by the consumer only */
  _Alignas(64) unsigned char data[]; /* cap bytes */
} redcoll__shm_queue;

/* Bytes a queue of capacity cap takes in the segment. */
size_t redcoll__shm_queue_bytes(size_t cap);
/* Producer: bytes that fit now. */
size_t redcoll__shm_queue_space(redcoll__shm_queue *q, size_t cap);
/* Producer: appends min(n, space) bytes of src and publishes them;
 * returns how many. */
size_t redcoll__shm_queue_put(redcoll__shm_queue *q, size_t cap, const void *src, size_t n);
/* Consumer: bytes waiting. */
size_t redcoll__shm_queue_used(redcoll__shm_queue *q);
/* Consumer: copies the first n bytes waiting (n <= used) without taking
 * them. */
void redcoll__shm_queue_peek(redcoll__shm_queue *q, size_t cap, void *dst, size_t n);
/* Consumer: takes min(n, used) bytes into dst (NULL: drops them), frees
 * their room for the producer; returns how many. */
size_t redcoll__shm_queue_get(redcoll__shm_queue *q, size_t cap, void *dst, size_t n);

#endif /* REDCOLL_SHM_QUEUE_H */
