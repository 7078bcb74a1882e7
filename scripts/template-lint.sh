#!/usr/bin/env bash
# Lints a SAM template with the real tools, offline:
#   cfn-lint, every rule level including informational;
#   sam validate, which runs the SAM translator (it catches unknown policy templates and
#     malformed events that cfn-lint lets through);
#   sam validate --lint, SAM's own cfn-lint configuration.
# sam needs a region to pick a partition but no credentials and no network.
set -euo pipefail

template="${1:?usage: scripts/template-lint.sh TEMPLATE}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bin="$("$root/scripts/venv.sh")"
export SAM_CLI_TELEMETRY=0

"$bin/cfn-lint" --include-checks I -- "$template"
"$bin/sam" validate --region us-east-1 --template-file "$template"
"$bin/sam" validate --region us-east-1 --lint --template-file "$template"
