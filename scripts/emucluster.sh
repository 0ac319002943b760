#!/usr/bin/env bash
# An emulated cluster on this machine: H "hosts", each a network namespace
# with one veth into a bridge, its link shaped with tbf (both directions:
# the host's egress on its own end, its ingress on the bridge's end) well
# below what the CPUs can feed, so that the network, not the CPU, is the
# bottleneck, as on a real cluster.  Needs root (ip netns, tc) and says so.
#
#   scripts/emucluster.sh up H [RATE]        # RATE in Mbit/s, default 250
#   scripts/emucluster.sh run H -- PROG ARGS # one rank per host (EMU_PPH=N:
#                                            # N processes per host, ranks
#                                            # host-major), redcoll's TCP
#                                            # environment set; rank 0's
#                                            # output, the others' on failure
#   scripts/emucluster.sh mpirun H -- PROG ARGS
#                                            # Open MPI, one rank per host
#                                            # (EMU_PPH=N: N per host, the
#                                            # same placement), through an
#                                            # rsh agent that enters the
#                                            # namespace
#   scripts/emucluster.sh hier [H T] [SIZES] # hosts x ranks per host: redcoll
#                                            # as processes (shared memory
#                                            # inside a host) and as threads
#                                            # (redcoll_hier_run), Open MPI
#                                            # with the same placement; CSV
#   scripts/emucluster.sh down [H]           # removes everything it made
#   scripts/emucluster.sh selftest           # up 3 at 100 Mbit/s, a 1 MiB
#                                            # allreduce (redcoll-bench), the
#                                            # same with 2 threads and with 2
#                                            # processes per host, an mpirun
#                                            # across the namespaces, down
#
# Host i (0-based) is namespace rcemu<i> at 10.77.0.<i+1>/24; the bridge
# rcemu-br holds 10.77.0.254 for the launcher (mpirun's daemons call back
# there).  `run` and `mpirun` take the cluster down on exit when they
# brought it up (EMU_KEEP=1 keeps it); a trap takes it down on any exit
# of `up ... && run`, so a failed job leaves no namespace behind.
set -euo pipefail
cd "$(dirname "$0")/.."
PREFIX=rcemu
BR=rcemu-br
NET=10.77.0

need_root() {
  if [ "$(id -u)" != 0 ]; then
    echo "emucluster: needs root (ip netns, tc); run it with sudo" >&2
    exit 2
  fi
  command -v ip > /dev/null && command -v tc > /dev/null ||
    { echo "emucluster: needs iproute2 (ip, tc): apt-get install iproute2" >&2; exit 2; }
}

host_ip() { echo "$NET.$(($1 + 1))"; }

down() {
  local n
  for n in $(ip netns list 2>/dev/null | awk '{print $1}' | grep "^$PREFIX[0-9]" || true); do
    ip netns del "$n" 2>/dev/null || true
  done
  ip link del "$BR" 2>/dev/null || true
  for n in $(ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | cut -d@ -f1 | grep "^${PREFIX}v" || true); do
    ip link del "$n" 2>/dev/null || true
  done
}

up() {
  local h=$1 rate=${2:-250} i ns
  down
  ip link add "$BR" type bridge
  ip addr add "$NET.254/24" dev "$BR"
  ip link set "$BR" up
  for ((i = 0; i < h; i++)); do
    ns=$PREFIX$i
    ip netns add "$ns"
    ip link add "${PREFIX}v$i" type veth peer name eth0 netns "$ns"
    ip link set "${PREFIX}v$i" master "$BR" up
    ip -n "$ns" addr add "$(host_ip "$i")/24" dev eth0
    ip -n "$ns" link set eth0 up
    ip -n "$ns" link set lo up
    # tbf: the rate, a burst of a few packets, a queue of ~20 ms at the rate.
    # tbf splits a TCP segment larger than its burst into packets of the
    # path's MTU, and shaping each packet costs kernel time on this
    # machine's CPUs (a real NIC does that splitting in hardware): with
    # 64 KiB segments against a 16 KiB burst, the emulation took 3.4 s of
    # system time in a run where redcoll took 0.4 s.  So the veth ends send
    # segments that fit the burst whole; rate and burst stay as they were.
    local burst=$((rate * 1000 / 8 / 100 > 16384 ? rate * 1000 / 8 / 100 : 16384))
    local limit=$((rate * 1000000 / 8 / 50 > 65536 ? rate * 1000000 / 8 / 50 : 65536))
    local gso=$((burst - 2048 < 65536 ? burst - 2048 : 65536))
    ip -n "$ns" link set dev eth0 gso_max_size "$gso"
    ip link set dev "${PREFIX}v$i" gso_max_size "$gso"
    tc -n "$ns" qdisc add dev eth0 root tbf rate "${rate}mbit" burst "$burst" limit "$limit"
    tc qdisc add dev "${PREFIX}v$i" root tbf rate "${rate}mbit" burst "$burst" limit "$limit"
  done
  echo "emucluster: $h hosts at ${rate} Mbit/s: $(host_ip 0) .. $(host_ip $((h - 1)))"
}

# One rank per host with redcoll's TCP environment: a host list.
run() {
  local h=$1 i j r n pph=${EMU_PPH:-1} pids=() hosts="" port=29600 rc=0 logdir
  shift
  [ "${1:-}" = "--" ] && shift
  n=$((h * pph))
  for ((i = 0; i < h; i++)); do
    for ((j = 0; j < pph; j++)); do hosts+="${hosts:+,}$(host_ip "$i"):$((port + j))"; done
  done
  logdir=$(mktemp -d)
  for ((i = 0; i < h; i++)); do
    for ((j = 0; j < pph; j++)); do
      r=$((i * pph + j))
      ip netns exec "$PREFIX$i" env REDCOLL_RANK="$r" REDCOLL_SIZE="$n" REDCOLL_HOSTS="$hosts" \
        REDCOLL_JOB_ID="emu$$" "$@" > "$logdir/$r.out" 2> "$logdir/$r.err" &
      pids+=($!)
    done
  done
  for ((i = 0; i < n; i++)); do wait "${pids[$i]}" || rc=$?; done
  cat "$logdir/0.out"
  if [ "$rc" != 0 ]; then
    for ((i = 0; i < n; i++)); do sed "s/^/[$i] /" "$logdir/$i.err" >&2; done
  fi
  rm -rf "$logdir"
  return "$rc"
}

# Open MPI, one rank per host: mpirun in the root namespace, its daemons
# started in each namespace by the rsh agent below.  rtc_hwloc_vmhole none:
# each daemon otherwise writes the hwloc topology into the largest hole of
# its address space, which on this kernel can lie against the stack; orted
# then dies of SIGSEGV in hwloc_shmem_topology_write now and then.
mpirun_emu() {
  # Every namespace has the same hostname and the same /tmp: each daemon gets
  # its own session directory base, or one daemon's cleanup removes the
  # directory another is creating (orte_session_dir fails now and then).
  local h=$1 i hosts="" agent pph=${EMU_PPH:-1} tmpbase
  tmpbase=$(mktemp -d /tmp/rcemu-ompi.XXXXXX)
  shift
  [ "${1:-}" = "--" ] && shift
  for ((i = 0; i < h; i++)); do hosts+="${hosts:+,}$(host_ip "$i"):$pph"; done
  agent=$(mktemp)
  cat > "$agent" <<EOF
#!/bin/sh
# rsh agent for mpirun: "agent [options] HOST COMMAND": runs COMMAND in the
# namespace that holds HOST's address, with a hostname of its own (all
# namespaces share /dev/shm, and vader names its segments by hostname and
# local rank: with one hostname two hosts' ranks mapped the same segment).
while [ \$# -gt 0 ]; do case "\$1" in -*) shift ;; *) break ;; esac; done
host=\$1; shift
n=\$(( \${host##*.} - 1 ))
exec env OMPI_MCA_orte_tmpdir_base="$tmpbase/\$n" ip netns exec $PREFIX\$n unshare --uts sh -c "hostname $PREFIX-h\$n && \$*"
EOF
  chmod +x "$agent"
  for ((i = 0; i < h; i++)); do mkdir -p "$tmpbase/$i"; done
  # EMU_MPI_TIMEOUT (seconds): a launch that fails can leave mpirun waiting
  # for a daemon that died; the self-test bounds it.
  OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
    ${EMU_MPI_TIMEOUT:+timeout -k 5 "$EMU_MPI_TIMEOUT"} mpirun --host "$hosts" -np $((h * pph)) --map-by slot --bind-to none \
    --mca plm_rsh_agent "$agent" --mca rtc_hwloc_vmhole none ${EMU_MPI_ARGS:-} \
    --mca btl "${EMU_MPI_BTL:-tcp,self}" --mca btl_tcp_if_include "$NET.0/24" --mca oob_tcp_if_include "$NET.0/24" \
    "$@"
  local rc=$?
  rm -rf "$agent" "$tmpbase"
  return $rc
}

selftest() {
  local bench=${BUILD:-build}/tools/redcoll-bench
  up 3 100
  trap down EXIT
  run 3 -- "$bench" --sizes 1M:1M --iters 3 --warmup 1 --no-header
  # hosts x ranks: 2 threads per host (redcoll_hier_run), then 2 processes
  # per host (shared memory inside), two_level and AUTO, results checked
  run 3 -- "$bench" --threads 2 --sizes 256K:256K --algo two_level,auto --iters 2 --warmup 1 \
    --no-header
  EMU_PPH=2 run 3 -- "$bench" --sizes 256K:256K --algo two_level,auto --iters 2 --warmup 1 \
    --no-header
  if command -v mpirun > /dev/null; then
    EMU_MPI_TIMEOUT=120 mpirun_emu 3 -- sh -c 'ip -4 -o addr show eth0 | cut -d" " -f7' |
      sort | tr '\n' ' '
    echo
  fi
  echo "emucluster: selftest ok"
}

# H hosts x T ranks per host, allreduce float32 over SIZES: redcoll as
# processes (EMU_PPH=T, shared memory inside a host), as threads
# (redcoll-bench --threads T, one process per host), each with two_level,
# AUTO and flat algorithms forced; Open MPI with the same placement (vader
# inside a host), its default and each of its allreduce algorithms forced,
# with vader (shared memory) inside a host and TCP between hosts
# (EMU_MPI_BTL=tcp,self: TCP everywhere), yielding when idle (the ranks
# outnumber the CPUs; busy polling made every call 40-100 x slower).
# One CSV on stdout (redcoll-bench's columns, impl naming the placement).
hier_bench() {
  local h=${1:-4} t=${2:-4} sizes=${3:-64K:32M} bench=${BUILD:-build}/tools/redcoll-bench
  local algos=${EMU_ALGOS:-two_level,auto,ring,halving_doubling,elimination,binary_blocks}
  local common=(--sizes "$sizes" --factor 4 --iters "${EMU_ITERS:-3}" --warmup 1 --no-header)
  echo "impl,coll,p,bytes,median_us,p99_us,algbw_GBps,busbw_GBps,algo"
  run "$h" -- "$bench" --threads "$t" --algo "$algos" "${common[@]}" | sed "s/^redcoll,/redcoll-threads,/"
  EMU_PPH=$t run "$h" -- "$bench" --algo "$algos" "${common[@]}" | sed "s/^redcoll,/redcoll-procs,/"
  if command -v mpicc > /dev/null; then
    local mb
    mb=$(mktemp -d)/mpi_bench
    mpicc -O2 -o "$mb" bench/peers/mpi_bench.c -lm
    local a
    for a in 0 1 2 3 4 5 6; do
      EMU_PPH=$t EMU_MPI_BTL=${EMU_MPI_BTL:-tcp,self,vader} \
        EMU_MPI_ARGS="--mca mpi_yield_when_idle 1 --mca coll_tuned_use_dynamic_rules 1 --mca coll_tuned_allreduce_algorithm $a" \
        mpirun_emu "$h" -- "$mb" --impl "ompi-alg$a" --sizes "$sizes" --factor 4 \
        --iters "${EMU_ITERS:-3}" --warmup 1 --no-header
    done
    rm -rf "$(dirname "$mb")"
  fi
}

# Brings up h hosts unless they are there; what it brought up goes down
# on exit (EMU_KEEP=1 keeps it).
ensure_up() {
  if ! ip netns list | grep -q "^${PREFIX}$(($1 - 1))\b"; then
    up "$1" "${EMU_RATE:-250}"
    [ "${EMU_KEEP:-0}" = 1 ] || trap down EXIT
  fi
}

cmd=${1:-}
shift || true
case "$cmd" in
  up) need_root; up "$@" ;;
  down) need_root; down ;;
  run) need_root; ensure_up "$1"; run "$@" ;;
  mpirun) need_root; ensure_up "$1"; mpirun_emu "$@" ;;
  selftest) need_root; selftest ;;
  hier) need_root; ensure_up "${1:-4}"; hier_bench "$@" ;;
  *) sed -n '2,37p' "$0"; exit 2 ;;
esac
