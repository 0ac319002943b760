/* Placeholder: the elimination family is not implemented yet. */
#include "internal.h"

const redcoll__algo_entry redcoll__algos_elimination[] = {
    {REDCOLL_COLL_COUNT, REDCOLL_ALGO_AUTO, NULL, 0},
};
