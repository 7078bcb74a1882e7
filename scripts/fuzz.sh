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

failed=()
for target in "${targets[@]}"; do
	read -r dir name <<<"$target"
	echo "fuzz: $dir $name for $fuzztime"
	if ! go test -run='^$' -fuzz="^${name}\$" -fuzztime="$fuzztime" "$dir"; then
		failed+=("$dir $name")
	fi
done

echo "fuzz: $((${#targets[@]} - ${#failed[@]})) passed, ${#failed[@]} failed"
if ((${#failed[@]} > 0)); then
	printf 'fuzz: FAILED %s\n' "${failed[@]}"
	exit 1
fi
