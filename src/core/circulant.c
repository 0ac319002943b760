/* Placeholder: the circulant family is not implemented yet. */
#include "internal.h"

const redcoll__algo_entry redcoll__algos_circulant[] = {
    {REDCOLL_COLL_COUNT, REDCOLL_ALGO_AUTO, NULL, 0},
};
