#!/usr/bin/env bash
# one_cpu.sh MPIRUN ARGS...: runs MPIRUN with every rank bound to CPU 0
# (Open MPI's --cpu-set 0 --bind-to core).  Skipped (exit 77) where CPU 0
# is not this process's to use or MPIRUN is not Open MPI's.
set -u
mpirun=$1
shift
if ! taskset -c 0 true 2> /dev/null; then
  echo "one_cpu.sh: CPU 0 is not in this process's affinity mask: skipped"
  exit 77
fi
if ! "$mpirun" --version 2>&1 | grep -q "Open MPI"; then
  echo "one_cpu.sh: $mpirun is not Open MPI's (--cpu-set is its option): skipped"
  exit 77
fi
exec "$mpirun" --cpu-set 0 --bind-to core "$@"
