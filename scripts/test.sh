#!/usr/bin/env bash
# Everything `make test` (and CI) runs, in order, stopping at the first failing stage:
#   1. go vet (also with -tags integration)
#   2. unit tests with the race detector (need no external tools), then the replication
#      simulation's full 2,000 seeds without it
#   3. short fuzz runs of every Fuzz target (scripts/fuzz.sh)
#   4. make build (the binary users get), then make build-invariants: the same with
#      -tags invariants, in bin/invariants/kgo-broker, where a broken invariant or lock
#      order (lockrank, docs/LOCKING.md) panics
#   5. scripts/install-tools.sh (Kafka's tool jars from Maven Central, kcat; cached)
#   6. the integration suite against bin/invariants/kgo-broker, with KGO_REQUIRE_TOOLS=1
#      so that a missing tool fails instead of skipping. It includes the fault suite's
#      short mode (TestFaults: one run of each fault kind); scripts/install-faults.sh
#      installs iptables for its network faults, and KGO_REQUIRE_FAULTS=1 makes a fault
#      that cannot run (no root, no network namespaces) fail instead of skip.
# Environment: GO (default go), KGO_CACHE, KGO_FUZZ_BUDGET / KGO_FUZZTIME (scripts/fuzz.sh),
# KGO_SKIP_FUZZ=1 and KGO_SKIP_INTEGRATION=1 for quicker local runs (CI sets neither),
# KGO_INTEGRATION_RUN (a -run pattern for the integration suite).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

GO=${GO:-go}
export KGO_REQUIRE_TOOLS=1
START=$(date +%s)

section() {
	printf '\n==================== %s  (t+%ds) ====================\n' "$*" $(($(date +%s) - START))
}

section "go vet"
"$GO" vet ./...
"$GO" vet -tags integration ./integration/...

section "unit tests (go test -race)"
"$GO" test -race -count=1 ./...

# The replication simulation runs 100 seeds under -race; without the race
# detector it runs its full 2,000 seeds (seeded crashes, restarts, message
# loss and leader changes, invariants checked on every step) in ~40 s.
section "replication simulation (2,000 seeds, no -race)"
"$GO" test -count=1 -run 'TestSimulation' ./replication/

if [ -n "${KGO_SKIP_FUZZ:-}" ]; then
	section "fuzz: skipped (KGO_SKIP_FUZZ)"
else
	section "fuzz (scripts/fuzz.sh)"
	./scripts/fuzz.sh
fi

section "build (make build, make build-invariants)"
make --no-print-directory build GO="$GO"
make --no-print-directory build-invariants GO="$GO"

if [ -n "${KGO_SKIP_INTEGRATION:-}" ]; then
	section "integration: skipped (KGO_SKIP_INTEGRATION)"
	exit 0
fi

section "install tools (scripts/install-tools.sh, scripts/install-podman.sh, scripts/install-faults.sh)"
./scripts/install-tools.sh
# The docker image test runs under podman+runc (no Docker engine here); with
# KGO_REQUIRE_DOCKER it fails rather than skips when no engine can run.
./scripts/install-podman.sh
export KGO_REQUIRE_DOCKER=1
./scripts/install-faults.sh
export KGO_REQUIRE_FAULTS=1

section "integration tests (go test -tags integration)"
run=()
[ -n "${KGO_INTEGRATION_RUN:-}" ] && run=(-run "$KGO_INTEGRATION_RUN")
KGO_BROKER_BIN="$ROOT/bin/invariants/kgo-broker" \
	"$GO" test -tags integration -count=1 -timeout 40m -v "${run[@]}" ./integration/...
