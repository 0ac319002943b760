/* The algorithm registry: every family file contributes one table of rows
 * (collective, algorithm, run, cost, flags). */
#include <pthread.h>

#include "internal.h"

static const redcoll__algo_entry *const families[] = {
    redcoll__algos_linear,
    redcoll__algos_binary_tree,
    redcoll__algos_dissemination,
    redcoll__algos_elimination,
    redcoll__algos_elimination_rings,
    redcoll__algos_table1_rings,
    redcoll__algos_recursive_doubling,
    redcoll__algos_halving_doubling,
    redcoll__algos_binary_blocks,
    redcoll__algos_ring,
    redcoll__algos_circulant,
    redcoll__algos_rooted_linear,
    redcoll__algos_scan_linear,
    redcoll__algos_hillis_steele,
    redcoll__algos_transpose,
    redcoll__algos_bruck,
    redcoll__algos_binomial_v,
    redcoll__algos_ring_v,
    redcoll__algos_pairwise,
    redcoll__algos_two_level,
};

/* Every (collective, algorithm) row by index, filled once: AUTO prices
 * every candidate on every call, and a search of the families for each
 * took a third of a small allreduce's CPU time at p = 2. */
static const redcoll__algo_entry *rows[REDCOLL_COLL_COUNT][REDCOLL_ALGO_COUNT];
static pthread_once_t rows_once = PTHREAD_ONCE_INIT;

static void fill_rows(void) {
  /* The first row of a pair wins, as in the search this replaced. */
  for (size_t f = 0; f < sizeof families / sizeof families[0]; f++)
    for (const redcoll__algo_entry *e = families[f]; e->coll != REDCOLL_COLL_COUNT; e++)
      if ((unsigned)e->coll < REDCOLL_COLL_COUNT && (unsigned)e->algo < REDCOLL_ALGO_COUNT &&
          rows[e->coll][e->algo] == NULL)
        rows[e->coll][e->algo] = e;
}

const redcoll__algo_entry *redcoll__algo_row(redcoll_coll coll, redcoll_algo algo) {
  if ((unsigned)coll >= REDCOLL_COLL_COUNT || (unsigned)algo >= REDCOLL_ALGO_COUNT) return NULL;
  pthread_once(&rows_once, fill_rows);
  return rows[coll][algo];
}

const redcoll__algo_entry *redcoll__algo_find(redcoll_coll coll, redcoll_algo algo) {
  const redcoll__algo_entry *e = redcoll__algo_row(coll, algo);
  return e != NULL && e->run != NULL ? e : NULL;
}

REDCOLL_API int redcoll_algo_is_supported(redcoll_coll coll, redcoll_algo a) {
  if ((unsigned)coll >= REDCOLL_COLL_COUNT || (unsigned)a >= REDCOLL_ALGO_COUNT) return 0;
  if (a == REDCOLL_ALGO_AUTO) return 1;
  return redcoll__algo_find(coll, a) != NULL;
}

REDCOLL_API int redcoll_algo_is_rank_ordered(redcoll_coll coll, redcoll_algo a) {
  if ((unsigned)coll >= REDCOLL_COLL_COUNT || (unsigned)a >= REDCOLL_ALGO_COUNT) return 0;
  if (a == REDCOLL_ALGO_AUTO) return 1;
  const redcoll__algo_entry *e = redcoll__algo_find(coll, a);
  return e != NULL && !(e->flags & REDCOLL__NEEDS_COMMUTATIVE);
}

REDCOLL_API int redcoll_algo_is_rank_identical(redcoll_coll coll, redcoll_algo a) {
  if ((unsigned)coll >= REDCOLL_COLL_COUNT || (unsigned)a >= REDCOLL_ALGO_COUNT) return 0;
  if (a == REDCOLL_ALGO_AUTO) return 1;
  const redcoll__algo_entry *e = redcoll__algo_find(coll, a);
  return e != NULL && !(e->flags & REDCOLL__RANK_DEPENDENT);
}
