#!/usr/bin/env bash
# Short fuzz runs of every Fuzz target in the repository (found with grep, so new
# targets join automatically). Each target runs as
#   go test -run '^$' -fuzz '^FuzzX$' -fuzztime <T> ./pkg
# with T = KGO_FUZZTIME if set, else the budget KGO_FUZZ_BUDGET (default 105s of
# fuzzing in total) split evenly, between 3s and 10s per target. Compile time is extra.
# (21 targets: 5s each; the SASL connection, JAAS, SCRAM and OAUTHBEARER parsers are 4 of them. The budget was 150s with 6 targets at the 10s cap, 60s in all;
# the 9 targets for the on-disk files and __consumer_offsets records added 45s;
# txn's FuzzTxnRecord, the __transaction_state records, is the 16th.)
# A failing input is written by Go under <pkg>/testdata/fuzz/<FuzzX>/ ; commit it as a
# regression case once the bug is fixed.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

GO=${GO:-go}
budget=${KGO_FUZZ_BUDGET:-105}

# "dir<TAB>FuzzName" for each fuzz target outside integration/ and testdata/.
mapfile -t targets < <(
	grep -rEo --include='*_test.go' '^func Fuzz[A-Za-z0-9_]*\(\s*[A-Za-z_][A-Za-z0-9_]*\s+\*testing\.F\s*\)' . |
		grep -vE '^\./(integration|bin)/|/testdata/|/vendor/' |
		sed -E 's#^(.*)/[^/]+_test\.go:func (Fuzz[A-Za-z0-9_]*)\(.*#\1\t\2#' |
		sort -u
)

if [ ${#targets[@]} -eq 0 ]; then
	echo "fuzz: no Fuzz targets found"
	exit 0
fi

if [ -n "${KGO_FUZZTIME:-}" ]; then
	per=$KGO_FUZZTIME
else
	secs=$((budget / ${#targets[@]}))
	[ "$secs" -lt 3 ] && secs=3
	[ "$secs" -gt 10 ] && secs=10
	per=${secs}s
fi

echo "fuzz: ${#targets[@]} targets, -fuzztime $per each"
fail=0
for tgt in "${targets[@]}"; do
	dir=${tgt%%$'\t'*}
	name=${tgt##*$'\t'}
	echo "--- fuzz $name ($dir)"
	for attempt in 1 2 3; do
		out=$(mktemp)
		if "$GO" test -run '^$' -fuzz "^${name}\$" -fuzztime "$per" "$dir" 2>&1 | tee "$out"; [ "${PIPESTATUS[0]}" -eq 0 ]; then
			rm -f "$out"
			break
		fi
		# Go's fuzzing engine sometimes fails with "context deadline exceeded"
		# when -fuzztime ends while it is still minimizing a new interesting
		# (not failing) input on a loaded machine; no input is written then.
		# That is the engine, not a bug found: run the target once more.
		if [ "$attempt" -lt 3 ] && grep -q 'context deadline exceeded' "$out" && ! grep -q 'Failing input written' "$out"; then
			echo "fuzz: $name: the fuzzing engine timed out without a failing input; running it again"
			rm -f "$out"
			continue
		fi
		rm -f "$out"
		echo "FAIL: fuzz $name in $dir (see $dir/testdata/fuzz/$name/ for the failing input)"
		fail=1
		break 2
	done
done
exit $fail
