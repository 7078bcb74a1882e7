#!/usr/bin/env bash
# Runs every fuzz target in the module for FUZZTIME each (default 10s). `go test -fuzz` takes one
# target per run, so targets are found here rather than listed by hand: a new Fuzz* function is
# fuzzed in CI without anyone remembering to add it.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
fuzztime="${FUZZTIME:-10s}"

# file:line:func FuzzName(  ->  "dir FuzzName". Go runs FuzzXxx only when Xxx does not start
# with a lower-case letter, and so does this pattern.
mapfile -t targets < <(
	grep -rEo --include='*_test.go' \
		--exclude-dir=.git --exclude-dir=.cache --exclude-dir=bin --exclude-dir=build --exclude-dir=testdata \
		'^func Fuzz([A-Z0-9_][A-Za-z0-9_]*)?\(' . |
		sed -E 's#^(.*)/[^/]+_test\.go:func (Fuzz[A-Za-z0-9_]*)\($#\1 \2#' |
		sort -u
)

if ((${#targets[@]} == 0)); then
	echo "fuzz: no Fuzz* targets found"
	exit 0
fi

# Go 1.26's fuzz coordinator can fail a target with a bare "context deadline exceeded" when a
# worker on a loaded machine misses the -fuzztime deadline (go.dev/issue/75804, fixed in Go 1.27):
# no input failed and nothing was written. Such a run counts as passed only when its output shows no
# failing input and the target's whole corpus then replays clean. Anything else is a failure.
# (A count such as 20000x has no deadline to race, but some targets here run tens of executions a
# second under load, so a count that fuzzes the fast ones would take hours on the slow ones.)
coordinator_deadline() {
	local out=$1
	grep -qx '    context deadline exceeded' "$out" &&
		! grep -qE 'Failing input written to|panic:|_test\.go:[0-9]+:' "$out"
}

failed=()
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
for target in "${targets[@]}"; do
	read -r dir name <<<"$target"
	echo "fuzz: $dir $name for $fuzztime"
	if go test -run='^$' -fuzz="^${name}\$" -fuzztime="$fuzztime" "$dir" 2>&1 | tee "$log"; then
		continue
	fi
	if coordinator_deadline "$log" && go test -count=1 -run="^${name}\$" "$dir"; then
		echo "fuzz: $dir $name: the fuzz coordinator missed its own deadline (go.dev/issue/75804); no input failed and the corpus replays clean"
		continue
	fi
	failed+=("$dir $name")
done

echo "fuzz: $((${#targets[@]} - ${#failed[@]})) passed, ${#failed[@]} failed"
if ((${#failed[@]} > 0)); then
	printf 'fuzz: FAILED %s\n' "${failed[@]}"
	exit 1
fi
