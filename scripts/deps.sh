#!/usr/bin/env bash
# Installs what redcoll needs on Debian/Ubuntu, only what is missing:
# a C compiler, meson, ninja, pkg-config, libuv, libsodium (for REDCOLL_SECRET)
# (and graphviz with --docs; with --ci what .ci/run needs besides: g++,
# clang with its sanitizer and fuzzer runtimes, Open MPI and PMIx for the
# MPI transport, the interposer and their tests, libzmq for the push
# transport's ZeroMQ example, iproute2 for the emulated cluster).
set -euo pipefail
want=()
command -v cc >/dev/null 2>&1 || want+=(gcc)
# gcc without its Recommends has no C library headers on a fresh Debian 12.
printf '#include <stdio.h>\n' | cc -E -x c - >/dev/null 2>&1 || want+=(libc6-dev)
command -v meson >/dev/null 2>&1 || want+=(meson)
command -v ninja >/dev/null 2>&1 || want+=(ninja-build)
command -v pkg-config >/dev/null 2>&1 || want+=(pkg-config)
pkg-config --exists libuv 2>/dev/null || want+=(libuv1-dev)
pkg-config --exists libsodium 2>/dev/null || want+=(libsodium-dev)
if [ "${1:-}" = "--docs" ]; then
  command -v dot >/dev/null 2>&1 || want+=(graphviz)
fi
if [ "${1:-}" = "--ci" ]; then
  # C++ too, so that the C++ header's tests and example run in every stage.
  command -v g++ >/dev/null 2>&1 || want+=(g++)
  command -v clang >/dev/null 2>&1 || want+=(clang)
  dpkg -s libclang-rt-14-dev >/dev/null 2>&1 || want+=(libclang-rt-14-dev)
  command -v mpirun >/dev/null 2>&1 || want+=(openmpi-bin)
  dpkg -s libopenmpi-dev >/dev/null 2>&1 || want+=(libopenmpi-dev)
  dpkg -s libpmix-dev >/dev/null 2>&1 || want+=(libpmix-dev)
  pkg-config --exists libzmq 2>/dev/null || want+=(libzmq3-dev)
  # ip and tc for the emulated cluster's self-test (scripts/emucluster.sh)
  command -v tc >/dev/null 2>&1 || want+=(iproute2)
fi
if [ ${#want[@]} -eq 0 ]; then
  exit 0
fi
echo "installing: ${want[*]}"
sudo=""
if [ "$(id -u)" != 0 ]; then sudo=sudo; fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${want[@]}"
