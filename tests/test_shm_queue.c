/*
 * The shared-memory transport's per-pair queue and doorbell
 * (src/transport/shm/queue.c, wait.c), with threads standing in for the
 * two processes: the same code, the same memory order, and
 * ThreadSanitizer can watch it (scripts/tsan.sh).
 *
 * Cases: exact space and used counts across a wrap; a stream of 24 MiB
 * through a 4 KiB queue in chunks of varying size on both sides, every
 * byte checked, the threads sleeping on each other's bells when the queue
 * is full or empty; a sleeper woken by a ring within the bound, and a wait
 * nobody rings ending at its timeout.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "../src/transport/shm/queue.h"
#include "../src/transport/shm/wait.h"
#include "test.h"

#define CAP 4096

static redcoll__shm_queue *queue_new(void) {
  void *m = NULL;
  if (posix_memalign(&m, 64, redcoll__shm_queue_bytes(CAP)) != 0) return NULL;
  memset(m, 0, redcoll__shm_queue_bytes(CAP));
  return m;
}

/* Space and used are exact, and a write and a read that wrap around the
 * end of the ring keep the bytes in order; peek does not take them. */
static void counts_and_wrap(void) {
  redcoll__shm_queue *q = queue_new();
  CHECK(q != NULL);
  if (q == NULL) return;
  unsigned char in[CAP], out[CAP];
  for (int i = 0; i < CAP; i++) in[i] = (unsigned char)(i * 7 + 1);
  CHECK_INT(redcoll__shm_queue_space(q, CAP), CAP);
  CHECK_INT(redcoll__shm_queue_used(q), 0);
  CHECK_INT(redcoll__shm_queue_put(q, CAP, in, 3000), 3000);
  CHECK_INT(redcoll__shm_queue_space(q, CAP), CAP - 3000);
  CHECK_INT(redcoll__shm_queue_get(q, CAP, out, 2500), 2500);
  CHECK(memcmp(out, in, 2500) == 0);
  CHECK_INT(redcoll__shm_queue_used(q), 500);
  /* Only the room there is is taken: 3596 of 4000. */
  CHECK_INT(redcoll__shm_queue_put(q, CAP, in, 4000), CAP - 500);
  CHECK_INT(redcoll__shm_queue_space(q, CAP), 0);
  CHECK_INT(redcoll__shm_queue_put(q, CAP, in, 1), 0);
  memset(out, 0, sizeof out);
  redcoll__shm_queue_peek(q, CAP, out, 600);
  CHECK(memcmp(out, in + 2500, 500) == 0);
  CHECK(memcmp(out + 500, in, 100) == 0);
  CHECK_INT(redcoll__shm_queue_used(q), CAP);
  CHECK_INT(redcoll__shm_queue_get(q, CAP, NULL, 500), 500); /* dropped */
  CHECK_INT(redcoll__shm_queue_get(q, CAP, out, CAP), CAP - 500);
  CHECK(memcmp(out, in, CAP - 500) == 0);
  CHECK_INT(redcoll__shm_queue_get(q, CAP, out, 1), 0);
  CHECK_INT(redcoll__shm_queue_space(q, CAP), CAP);
  free(q);
}

/* ---- a stream between two threads ---- */

#define STREAM_BYTES ((size_t)24 << 20)

typedef struct stream {
  redcoll__shm_queue *q;
  redcoll__shm_bell bells[2]; /* 0: the producer's, 1: the consumer's */
  size_t bad_at;              /* first wrong byte, or STREAM_BYTES */
  unsigned sleeps[2];
} stream;

static unsigned char pattern(size_t k) { return (unsigned char)(k * 131 + (k >> 12)); }

static size_t next_len(uint64_t *seed) {
  *seed = *seed * 6364136223846793005ull + 1442695040888963407ull;
  size_t v = (size_t)(*seed >> 33);
  /* Mostly small pieces, sometimes more than the whole queue. */
  return v % 4 == 0 ? 1 + v % (2 * CAP) : 1 + v % 97;
}

static void *producer(void *vp) {
  stream *s = vp;
  unsigned char chunk[2 * CAP];
  uint64_t seed = 1;
  size_t k = 0;
  while (k < STREAM_BYTES) {
    size_t n = next_len(&seed);
    if (n > STREAM_BYTES - k) n = STREAM_BYTES - k;
    for (size_t i = 0; i < n; i++) chunk[i] = pattern(k + i);
    size_t done = 0;
    while (done < n) {
      uint32_t seen = redcoll__shm_bell_read(&s->bells[0]);
      size_t m = redcoll__shm_queue_put(s->q, CAP, chunk + done, n - done);
      done += m;
      if (m > 0) {
        redcoll__shm_bell_ring(&s->bells[1]);
        continue;
      }
      s->sleeps[0]++;
      redcoll__shm_bell_wait(&s->bells[0], seen, 0, 0, UINT64_MAX);
    }
    k += n;
  }
  return NULL;
}

static void *consumer(void *vp) {
  stream *s = vp;
  unsigned char chunk[2 * CAP];
  uint64_t seed = 2;
  size_t k = 0;
  s->bad_at = STREAM_BYTES;
  while (k < STREAM_BYTES) {
    uint32_t seen = redcoll__shm_bell_read(&s->bells[1]);
    size_t want = next_len(&seed);
    size_t m = redcoll__shm_queue_get(s->q, CAP, chunk, want);
    if (m == 0) {
      s->sleeps[1]++;
      redcoll__shm_bell_wait(&s->bells[1], seen, 0, 0, UINT64_MAX);
      continue;
    }
    redcoll__shm_bell_ring(&s->bells[0]);
    for (size_t i = 0; i < m; i++)
      if (chunk[i] != pattern(k + i) && s->bad_at == STREAM_BYTES) s->bad_at = k + i;
    k += m;
  }
  return NULL;
}

static void stream_threads(void) {
  stream s;
  memset(&s, 0, sizeof s);
  s.q = queue_new();
  CHECK(s.q != NULL);
  if (s.q == NULL) return;
  pthread_t a, b;
  CHECK_INT(pthread_create(&a, NULL, producer, &s), 0);
  CHECK_INT(pthread_create(&b, NULL, consumer, &s), 0);
  pthread_join(a, NULL);
  pthread_join(b, NULL);
  CHECK_INT(s.bad_at, STREAM_BYTES);
  CHECK_INT(redcoll__shm_queue_used(s.q), 0);
  CHECK_INT(s.q->tail, STREAM_BYTES);
  CHECK_INT(s.q->head, STREAM_BYTES);
  printf("stream: producer slept %u times, consumer %u times\n", s.sleeps[0], s.sleeps[1]);
  free(s.q);
}

/* ---- the bell ---- */

typedef struct waiter {
  redcoll__shm_bell bell;
  uint32_t seen;
  int woke;
  double took;
} waiter;

static void *wait_thread(void *vp) {
  waiter *w = vp;
  uint64_t t0 = redcoll__shm_now();
  /* No spinning: straight into the futex; bounded at 10 s. */
  w->woke = redcoll__shm_bell_wait(&w->bell, w->seen, 0, 0, t0 + 10000000000ull);
  w->took = (double)(redcoll__shm_now() - t0) * 1e-9;
  return NULL;
}

static void bell_wakes_sleeper(void) {
  waiter w;
  memset(&w, 0, sizeof w);
  w.seen = redcoll__shm_bell_read(&w.bell);
  pthread_t th;
  CHECK_INT(pthread_create(&th, NULL, wait_thread, &w), 0);
  /* Until the waiter sleeps in the kernel (or 2 s). */
  for (int i = 0; i < 2000 && __atomic_load_n(&w.bell.sleepers, __ATOMIC_SEQ_CST) == 0; i++) {
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
  }
  CHECK_INT(__atomic_load_n(&w.bell.sleepers, __ATOMIC_SEQ_CST), 1);
  redcoll__shm_bell_ring(&w.bell);
  pthread_join(th, NULL);
  CHECK_INT(w.woke, 1);
  CHECK_MSG(w.took < 5.0, "woken after %.3f s", w.took);
  CHECK_INT(w.bell.sleepers, 0);
}

static void bell_times_out(void) {
  redcoll__shm_bell b;
  memset(&b, 0, sizeof b);
  uint32_t seen = redcoll__shm_bell_read(&b);
  /* Polls yielding, pausing, or both one after the other; then sleeps. */
  static const uint64_t pauses[] = {0, 1000000, 2000000};
  for (int i = 0; i < 3; i++) {
    uint64_t pause = pauses[i];
    uint64_t t0 = redcoll__shm_now();
    CHECK_INT(redcoll__shm_bell_wait(&b, seen, t0 + pause, t0 + 2000000, t0 + 30000000), 0);
    uint64_t took = redcoll__shm_now() - t0;
    CHECK_MSG(took >= 30000000 && took < 2000000000, "pause %llu ns: waited %llu ns",
              (unsigned long long)pause, (unsigned long long)took);
  }
  /* A ring before the wait: it returns at once. */
  redcoll__shm_bell_ring(&b);
  CHECK_INT(redcoll__shm_bell_wait(&b, seen, 0, 0, redcoll__shm_now() + 1000000000), 1);
}

TEST_MAIN(TEST(counts_and_wrap), TEST(stream_threads), TEST(bell_wakes_sleeper),
          TEST(bell_times_out))
