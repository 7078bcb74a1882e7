#!/usr/bin/env bash
# Compares shardwise with OpenSearch's balancer alone (--balancer none) on scenario files, acting
# (--dry-run=false), and prints a Markdown table: hot node-seconds of each and their ratio, with the
# rest of the README's targets (scale-up signals, moves, moves undone, safety violations). Arguments
# are scenario files; without any, every file of scenarios/ and, when a ../shared/scenarios/ folder
# sits beside the checkout, the example scenarios the project started from. Scenarios whose name contains
# "production" run only with FULL=1 (each takes minutes).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
files=("$@")
if ((${#files[@]} == 0)); then
	files=(scenarios/*.json)
	if [[ -d ../shared/scenarios ]]; then
		files+=(../shared/scenarios/*.json)
	fi
fi

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/shardwise" ./cmd/shardwise

echo "| scenario | hot node-s shardwise | hot node-s none | ratio | scale-up signals | moves | moves while OpenSearch's balancer busy | undone by it | safety violations |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|"
for f in "${files[@]}"; do
	if [[ "$f" == *production* && "${FULL:-}" != 1 ]]; then
		echo "compare: skipping $f (FULL=1 runs it)" >&2
		continue
	fi
	for b in shardwise none; do
		"$tmp/shardwise" simulate --scenario "$f" --balancer "$b" --dry-run=false --json --quiet >"$tmp/$b.json"
	done
	python3 - "$f" "$tmp/shardwise.json" "$tmp/none.json" <<'PY'
import json, sys
f, sw, none = sys.argv[1], json.load(open(sys.argv[2])), json.load(open(sys.argv[3]))
h, n = sw["hot_node_seconds"], none["hot_node_seconds"]
ratio = f"{h / n:.2f}" if n else "–"
print(f"| {sw['scenario']} ({f}) | {h:g} | {n:g} | {ratio} | {sw['scale_up_signals']} | {sw['moves']} | "
      f"{sw.get('moves_while_builtin_busy', 0)} | {sw['moves_undone_by_builtin']} | {sw['safety_violations']} |")
PY
done
