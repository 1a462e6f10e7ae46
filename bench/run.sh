#!/usr/bin/env bash
# make bench: Apache Kafka 4.4.0 and kgo-broker side by side (see bench/main.go).
#
#   make bench                       full run (~20 min on 2 cores), results in bench/results/
#   BENCH_QUICK=1 make bench         smoke test (small record counts, 1 repetition)
#   make bench PROFILE=1             CPU + allocation profiles of kgo-broker instead
#   BENCH_N=5 BENCH_SCENARIOS='^produce-1k' make bench
#   BENCH_CLEAN=1 make bench         measure HEAD as committed (not the work tree)
#   BENCH_WAIT_QUIET=600 make bench  before each run wait for a quiet machine (max 600 s in all)
#   BENCH_SCALE=10000 make bench     scale mode: 10,000 partitions on one node (bench/scale.go)
#   BENCH_CONNS=10000 make bench     10,000 idle client connections to one node (bench/conns.go)
#   BENCH_CLUSTER=3 make bench       replicated mode: 3-node clusters, RF 3, acks=all (bench/cluster.go;
#                                    BENCH_CLUSTER_RECORDS, BENCH_CLUSTER_KAFKA_HEAP=-Xmx384m -Xms384m)
#
# Installs what it needs idempotently: Apache Kafka's jars (scripts/install-tools.sh,
# cached) and gnuplot (Debian gnuplot-nox, for the chart; skipped with a warning
# when it cannot be installed). Builds bin/kgo-broker from the work tree as make build
# does, or with BENCH_CLEAN=1 HEAD alone into bin/kgo-broker-bench.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

log() { printf 'bench: %s\n' "$*" >&2; }

"$ROOT/scripts/install-tools.sh"

if ! command -v gnuplot >/dev/null 2>&1; then
	as_root=()
	[ "$(id -u)" = 0 ] || as_root=(sudo -n)
	log "installing gnuplot-nox (for bench/results/latest.png)"
	if ! { "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends gnuplot-nox >/dev/null 2>&1 ||
		{ "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null 2>&1 &&
			"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends gnuplot-nox >/dev/null 2>&1; }; }; then
		log "WARNING: could not install gnuplot-nox; the report will have no chart"
	fi
fi

# BENCH_CLEAN=1: measure HEAD as committed, not the work tree (others' uncommitted
# changes): build it from `git archive HEAD` into bin/kgo-broker-bench.
if [ "${BENCH_CLEAN:-0}" != 0 ]; then
	src=$(mktemp -d)
	trap 'rm -rf "$src"' EXIT
	git -C "$ROOT" archive HEAD | tar -x -C "$src"
	(cd "$src" && CGO_ENABLED=0 go build -trimpath -o "$ROOT/bin/kgo-broker-bench" ./cmd/kgo-broker)
	export BENCH_KGO_BIN=$ROOT/bin/kgo-broker-bench
	BENCH_KGO_COMMIT="$(git -C "$ROOT" rev-parse --short=12 HEAD) (clean build of HEAD, BENCH_CLEAN=1)"
	export BENCH_KGO_COMMIT
	log "measuring a clean build of HEAD: $BENCH_KGO_COMMIT"
else
	CGO_ENABLED=0 go build -trimpath -o "$ROOT/bin/kgo-broker" ./cmd/kgo-broker
fi
[ -x "${BENCH_KGO_BIN:-$ROOT/bin/kgo-broker}" ] || { log "bin/kgo-broker missing: run make build"; exit 1; }
go build -o "$ROOT/bin/kgo-bench" ./bench
log "uptime: $(uptime)"
"$ROOT/bin/kgo-bench" "$@"
