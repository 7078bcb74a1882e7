#!/usr/bin/env bash
# Creates .cache/venv and installs scripts/python-requirements.txt into it, once per change of
# that file, then prints the venv's bin directory. Other scripts source nothing from here: they
# call it and put the printed directory first on PATH.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${SHARDWISE_VENV:-$root/.cache/venv}"
requirements="$root/scripts/python-requirements.txt"
stamp="$venv/.requirements.sha256"

want="$(sha256sum "$requirements" | cut -d' ' -f1)"
if [[ ! -x "$venv/bin/python" || "$(cat "$stamp" 2>/dev/null || true)" != "$want" ]]; then
	python3 -m venv "$venv" >&2
	"$venv/bin/python" -m pip install --quiet --upgrade pip >&2
	"$venv/bin/python" -m pip install --quiet -r "$requirements" >&2
	echo "$want" >"$stamp"
fi
echo "$venv/bin"
