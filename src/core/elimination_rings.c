/* Placeholder: elimination_rings is not implemented yet. */
#include "internal.h"

const redcoll__algo_entry redcoll__algos_elimination_rings[] = {
    {REDCOLL_COLL_COUNT, REDCOLL_ALGO_AUTO, NULL, 0},
};
