#!/usr/bin/env bash
# REDCOLL_MPI_REPORT=1: rank 0 prints, at MPI_Finalize, the calls redcoll
# took and those that fell through, with the reasons.  Under the selection
# allreduce,bcast of mpi_interpose --listed: allreduce 1 taken, reduce and
# barrier 1 fallen through each because they are not listed.
# usage: report.sh MPIRUN INTERPOSER MPI_INTERPOSE
set -euo pipefail
out=$("$1" -np 2 -x LD_PRELOAD="$2" -x REDCOLL_MPI_COLLS=allreduce=ring,bcast \
  -x REDCOLL_MPI_REPORT=1 "$3" --listed 2>&1)
echo "$out"
fail=0
want() { grep -Eq "$1" <<<"$out" || { echo "missing: $1"; fail=1; }; }
want '^redcoll-mpi report, rank 0 of 2:$'
want '^allreduce +1 +0 *$'
want '^bcast +1 +0 *$'
want '^reduce +0 +1 +not in REDCOLL_MPI_COLLS: 1$'
want '^barrier +0 +1 +not in REDCOLL_MPI_COLLS: 1$'
[ "$(grep -c '^redcoll-mpi report' <<<"$out")" = 1 ] || { echo "not exactly one report"; fail=1; }
exit $fail
