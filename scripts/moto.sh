#!/usr/bin/env bash
# Starts or stops a moto server: the DynamoDB, EventBridge, SQS, ... APIs on 127.0.0.1 for the
# integration tests, which read its address from SHARDWISE_MOTO_ENDPOINT.
#
#   eval "$(scripts/moto.sh start)"   starts it (or finds it running) and prints the export line
#   scripts/moto.sh stop              stops the server this script started
#
# The pid and log live under .cache/, so stop finds exactly the process start made.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
port="${SHARDWISE_MOTO_PORT:-5055}"
pidfile="$root/.cache/moto.pid"
logfile="$root/.cache/moto.log"
endpoint="http://127.0.0.1:$port"
# moto answers on /moto-api/ once its HTTP server is up.
ready_url="$endpoint/moto-api/"
# moto imports every AWS service model at start: a few seconds on a slow machine.
start_timeout_seconds=60

running() {
	[[ -f "$pidfile" ]] && kill -0 "$(cat "$pidfile")" 2>/dev/null
}

responds() {
	"$1" -c "import sys, urllib.request
try:
    urllib.request.urlopen(sys.argv[1], timeout=1)
except Exception:
    sys.exit(1)" "$ready_url"
}

start() {
	local bin
	bin="$("$root/scripts/venv.sh")"
	mkdir -p "$root/.cache"
	if running && responds "$bin/python"; then
		echo "moto already running (pid $(cat "$pidfile")) at $endpoint" >&2
	else
		if responds "$bin/python"; then
			echo "moto: port $port is taken by another process; set SHARDWISE_MOTO_PORT" >&2
			exit 1
		fi
		"$bin/moto_server" -H 127.0.0.1 -p "$port" >"$logfile" 2>&1 &
		echo $! >"$pidfile"
		local started=$SECONDS
		until responds "$bin/python"; do
			if ! running; then
				echo "moto exited during start; its log:" >&2
				cat "$logfile" >&2
				exit 1
			fi
			if ((SECONDS - started > start_timeout_seconds)); then
				echo "moto did not answer on $ready_url within ${start_timeout_seconds}s" >&2
				stop
				exit 1
			fi
			sleep 0.2
		done
		echo "moto started (pid $(cat "$pidfile")) at $endpoint in $((SECONDS - started))s" >&2
	fi
	echo "export SHARDWISE_MOTO_ENDPOINT=$endpoint"
}

stop() {
	if ! running; then
		rm -f "$pidfile"
		return 0
	fi
	local pid
	pid="$(cat "$pidfile")"
	kill "$pid"
	for _ in $(seq 50); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$pid" 2>/dev/null; then
		kill -9 "$pid"
	fi
	rm -f "$pidfile"
	echo "moto stopped (pid $pid)" >&2
}

case "${1:-}" in
start) start ;;
stop) stop ;;
*)
	echo "usage: scripts/moto.sh start|stop" >&2
	exit 2
	;;
esac
