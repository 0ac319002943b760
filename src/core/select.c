/* Automatic algorithm selection.
 *
 * For now a fixed preference per collective: the first algorithm in the list
 * that the collective implements and that accepts the operator.  Every rank
 * sees the same list, the same p and the same operator, so every rank picks
 * the same algorithm.  The cost-model selection of issue 7 replaces this. */
#include "internal.h"

static const redcoll_algo prefs[REDCOLL_COLL_COUNT][6] = {
    [REDCOLL_COLL_ALLREDUCE] = {REDCOLL_ALGO_ELIMINATION, REDCOLL_ALGO_BINARY_TREE,
                                REDCOLL_ALGO_LINEAR},
    [REDCOLL_COLL_REDUCE] = {REDCOLL_ALGO_ELIMINATION, REDCOLL_ALGO_BINARY_TREE,
                             REDCOLL_ALGO_LINEAR},
    [REDCOLL_COLL_REDUCE_SCATTER_BLOCK] = {REDCOLL_ALGO_CIRCULANT, REDCOLL_ALGO_LINEAR},
    [REDCOLL_COLL_REDUCE_SCATTER] = {REDCOLL_ALGO_CIRCULANT, REDCOLL_ALGO_LINEAR},
    [REDCOLL_COLL_ALLGATHER] = {REDCOLL_ALGO_CIRCULANT, REDCOLL_ALGO_LINEAR},
    [REDCOLL_COLL_ALLGATHERV] = {REDCOLL_ALGO_CIRCULANT, REDCOLL_ALGO_LINEAR},
    [REDCOLL_COLL_BCAST] = {REDCOLL_ALGO_BINARY_TREE, REDCOLL_ALGO_LINEAR},
    [REDCOLL_COLL_GATHER] = {REDCOLL_ALGO_CIRCULANT, REDCOLL_ALGO_LINEAR},
    [REDCOLL_COLL_SCATTER] = {REDCOLL_ALGO_CIRCULANT, REDCOLL_ALGO_LINEAR},
    [REDCOLL_COLL_BARRIER] = {REDCOLL_ALGO_DISSEMINATION, REDCOLL_ALGO_LINEAR},
};

redcoll_algo redcoll__select(const redcoll__call *call) {
  int noncomm = call->op != NULL && !call->op->commutative;
  const redcoll_algo *list = prefs[call->coll];
  for (int i = 0; i < 6 && list[i] != REDCOLL_ALGO_AUTO; i++) {
    const redcoll__algo_entry *e = redcoll__algo_find(call->coll, list[i]);
    if (e == NULL) continue;
    if (noncomm && (e->flags & REDCOLL__NEEDS_COMMUTATIVE)) continue;
    return list[i];
  }
  return REDCOLL_ALGO_LINEAR;
}
