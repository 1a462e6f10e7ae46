#!/bin/sh
# Storage throughput as a ratio of the disk's sequential bandwidth (dd with
# O_DIRECT), measured in the same run, plus recovery time per GiB of unflushed
# tail. Prints the machine's load with every figure: on a shared machine the
# figures move with it. Usage: storage/bench.sh [MiB per run, default 512] [dir]
set -eu
cd "$(dirname "$0")/.."
echo "== $(date -u +%FT%TZ) $(uname -srm), $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
echo "== uptime: $(uptime)"
KGO_STORAGE_BENCH=1 KGO_STORAGE_BENCH_MIB="${1:-512}" KGO_STORAGE_BENCH_DIR="${2:-}" \
	go test -count=1 -timeout 60m -run TestThroughputReport -v ./storage | grep -v -e '^=== ' -e '^--- ' -e '^PASS' -e '^ok '
echo "== uptime: $(uptime)"
