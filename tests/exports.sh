#!/usr/bin/env bash
# The shared library exports only redcoll_ / REDCOLL_ symbols (and, in a
# build with AddressSanitizer, its __odr_asan markers for them).
lib=$1
bad=$(nm -D --defined-only "$lib" | awk '{print $3}' | grep -v -E '^(redcoll_|REDCOLL_)' | grep -v -E '^(_init|_fini|__bss_start|_edata|_end)$' | grep -v -E '^__odr_asan[._]')
n=$(nm -D --defined-only "$lib" | awk '{print $3}' | grep -c -E '^(redcoll_|REDCOLL_)')
if [ -n "$bad" ]; then echo "exported by mistake:"; echo "$bad"; exit 1; fi
[ "$n" -ge 30 ] || { echo "only $n redcoll symbols exported"; exit 1; }
echo "exports: $n redcoll symbols, nothing else"
