/*
 * The simulator's message queues: one FIFO per (src, dst, channel) with a
 * message in flight, found through a hash table that doubles when crowded.
 */
#include <stdint.h>
#include <stdlib.h>

#include "mock_int.h"

static uint64_t pair_key(int src, int dst) { return (uint64_t)(uint32_t)src << 32 | (uint32_t)dst; }

static size_t pair_hash(uint64_t key, size_t nbuckets) {
  uint64_t h = (key ^ (key >> 32)) * 0xbf58476d1ce4e5b9ULL;
  h ^= h >> 31;
  h *= 0x94d049bb133111ebULL;
  return (size_t)(h ^ (h >> 29)) & (nbuckets - 1);
}

/* The bucket of (key, chan); a pair's bucket is rehashed from both. */
static size_t pair_bucket_n(uint64_t key, uint64_t chan, size_t nbuckets) {
  return pair_hash(key ^ chan * 0x9e3779b97f4a7c15ULL, nbuckets);
}
static size_t pair_bucket(const mock_run *run, uint64_t key, uint64_t chan) {
  return pair_bucket_n(key, chan, run->nbuckets);
}

mock_pair *redcoll__mock_pair_find(mock_run *run, int src, int dst, uint64_t chan) {
  uint64_t key = pair_key(src, dst);
  for (mock_pair *q = run->buckets[pair_bucket(run, key, chan)]; q != NULL; q = q->next)
    if (q->key == key && q->chan == chan) return q;
  return NULL;
}

/* Doubles the table when it gets crowded; on memory shortage the chains
 * just grow longer. */
static void pair_grow(mock_run *run) {
  size_t n = run->nbuckets * 2;
  mock_pair **b = calloc(n, sizeof *b);
  if (b == NULL) return;
  for (size_t i = 0; i < run->nbuckets; i++) {
    mock_pair *q = run->buckets[i];
    while (q != NULL) {
      mock_pair *next = q->next;
      size_t j = pair_bucket_n(q->key, q->chan, n);
      q->next = b[j];
      b[j] = q;
      q = next;
    }
  }
  free(run->buckets);
  run->buckets = b;
  run->nbuckets = n;
}

int redcoll__mock_pair_push(mock_run *run, mock_msg *m) {
  mock_pair *q = redcoll__mock_pair_find(run, m->src, m->dst, m->chan);
  if (q == NULL) {
    if (run->free_pairs != NULL) {
      q = run->free_pairs;
      run->free_pairs = q->next;
    } else if ((q = malloc(sizeof *q)) == NULL) {
      return REDCOLL_ENOMEM;
    }
    if (run->npairs >= run->nbuckets) pair_grow(run);
    q->key = pair_key(m->src, m->dst);
    q->chan = m->chan;
    q->head = q->tail = NULL;
    size_t b = pair_bucket(run, q->key, q->chan);
    q->next = run->buckets[b];
    run->buckets[b] = q;
    run->npairs++;
  }
  m->next = NULL;
  if (q->tail != NULL) q->tail->next = m;
  else q->head = m;
  q->tail = m;
  return REDCOLL_OK;
}

/* Unlinks m from its pair queue; drops the queue when it empties. */
void redcoll__mock_pair_remove(mock_run *run, mock_msg *m) {
  uint64_t key = pair_key(m->src, m->dst);
  mock_pair **link = &run->buckets[pair_bucket(run, key, m->chan)];
  while (*link != NULL && ((*link)->key != key || (*link)->chan != m->chan)) link = &(*link)->next;
  mock_pair *q = *link;
  if (q == NULL) return;
  mock_msg *prev = NULL;
  for (mock_msg *x = q->head; x != NULL; prev = x, x = x->next) {
    if (x != m) continue;
    if (prev != NULL) prev->next = x->next;
    else q->head = x->next;
    if (q->tail == x) q->tail = prev;
    break;
  }
  m->next = NULL;
  if (q->head == NULL) {
    *link = q->next;
    q->next = run->free_pairs;
    run->free_pairs = q;
    run->npairs--;
  }
}
