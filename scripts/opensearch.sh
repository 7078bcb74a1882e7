#!/usr/bin/env bash
# Fetches OpenSearch 2.19 from Maven Central, starts a three-node cluster on 127.0.0.1 for the
# integration tests (package it/), and stops it. The tests read the cluster's addresses from
# SHARDWISE_OPENSEARCH_URLS.
#
#   eval "$(scripts/opensearch.sh start)"   fetches (cached), starts three nodes, waits for green,
#                                           prints the export line
#   scripts/opensearch.sh stop              stops the nodes this script started
#   scripts/opensearch.sh fetch             only fetches, and prints the cached zip's path
#
# The artifact is org.opensearch.distribution.integ-test-zip:opensearch:<version>:zip: the
# minimal distribution OpenSearch's own integration tests run, with no bundled JDK and no
# security plugin. Versions are tried newest first. Every failure exits non-zero with the reason:
# a cluster that cannot be fetched or started must fail CI, never skip its tests.
#
# OpenSearch refuses to run as root, so under root the nodes run as the user "opensearch", created
# here when missing. Settings (environment):
#   SHARDWISE_OPENSEARCH_VERSIONS   versions to try, in order (default: 2.19.6 down to 2.19.0)
#   SHARDWISE_OPENSEARCH_PORT       first HTTP port (default 9250); transport ports start 100 above
#   SHARDWISE_OPENSEARCH_DIR        install, data and logs (default /tmp/shardwise-opensearch, which
#                                   the node user can reach whatever the checkout's permissions)
#   SHARDWISE_OPENSEARCH_HEAP       heap per node (default 512m)
#   SHARDWISE_OPENSEARCH_START_TIMEOUT  seconds to wait for green (default 600)
#   OPENSEARCH_JAVA_HOME            the JDK to run on (default: the first JDK 17 to 21 found)
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cache="$root/.cache/opensearch"
versions="${SHARDWISE_OPENSEARCH_VERSIONS:-2.19.6 2.19.5 2.19.4 2.19.3 2.19.2 2.19.1 2.19.0}"
http_base="${SHARDWISE_OPENSEARCH_PORT:-9250}"
transport_base=$((http_base + 100))
run="${SHARDWISE_OPENSEARCH_DIR:-/tmp/shardwise-opensearch}"
# 512 MiB: small enough for three nodes on a 2-core, 24 GiB machine, large enough that bulk load
# stays clear of shardwise's 85 % heap decider between garbage collections.
heap="${SHARDWISE_OPENSEARCH_HEAP:-512m}"
nodes=3
node_user=opensearch
# Three JVMs starting together on two cores take 30-60 s to elect a cluster manager on a quiet
# machine, and took 338-417 s on one loaded by other builds; 600 s leaves room for both.
start_timeout_seconds="${SHARDWISE_OPENSEARCH_START_TIMEOUT:-600}"
stop_timeout_seconds=30

log() { echo "opensearch: $*" >&2; }
die() {
	log "$*"
	exit 1
}

urls() {
	local i out=()
	for ((i = 0; i < nodes; i++)); do
		out+=("http://127.0.0.1:$((http_base + i))")
	done
	local IFS=,
	echo "${out[*]}"
}

# fetch prints the path of a cached integ-test-zip, downloading the first version Maven Central has.
fetch() {
	mkdir -p "$cache"
	local v zip
	for v in $versions; do
		zip="$cache/opensearch-$v.zip"
		if [[ -f "$zip" ]] && unzip -tqq "$zip" >/dev/null 2>&1; then
			log "using cached $zip"
			echo "$zip"
			return 0
		fi
	done
	command -v mvn >/dev/null || die "mvn is not installed: it fetches OpenSearch from Maven Central"
	for v in $versions; do
		zip="$cache/opensearch-$v.zip"
		log "fetching org.opensearch.distribution.integ-test-zip:opensearch:$v:zip from Maven Central"
		# --strict-checksums: a corrupt download fails here, not as a JVM error later.
		if mvn --batch-mode --quiet --strict-checksums dependency:copy \
			-Dartifact="org.opensearch.distribution.integ-test-zip:opensearch:$v:zip" \
			-DoutputDirectory="$cache" >&2; then
			unzip -tqq "$zip" >/dev/null || die "$zip is not a valid zip"
			log "fetched OpenSearch $v ($(du -h "$zip" | cut -f1))"
			echo "$zip"
			return 0
		fi
		log "OpenSearch $v is not available; trying an older 2.19.x"
	done
	die "no OpenSearch version of [$versions] could be fetched from Maven Central"
}

# java_home prints a JDK OpenSearch 2.19 runs on: 17 to 21 (2.19 bundles 21; newer JDKs removed
# the security manager it installs).
java_home() {
	if [[ -n "${OPENSEARCH_JAVA_HOME:-}" ]]; then
		echo "$OPENSEARCH_JAVA_HOME"
		return 0
	fi
	local candidates=()
	[[ -n "${JAVA_HOME:-}" ]] && candidates+=("$JAVA_HOME")
	if command -v java >/dev/null; then
		candidates+=("$(dirname "$(dirname "$(readlink -f "$(command -v java)")")")")
	fi
	candidates+=(/usr/lib/jvm/* /opt/java/* /opt/jdk*)
	local home major
	for home in "${candidates[@]}"; do
		[[ -x "$home/bin/java" ]] || continue
		major="$("$home/bin/java" -XshowSettings:properties -version 2>&1 |
			sed -n 's/^ *java\.specification\.version = //p')"
		if [[ "$major" =~ ^[0-9]+$ ]] && ((major >= 17 && major <= 21)); then
			echo "$home"
			return 0
		fi
	done
	die "no JDK 17 to 21 found (set OPENSEARCH_JAVA_HOME); OpenSearch 2.19 runs on those"
}

# as_node_user is the command prefix that runs a command as the nodes' user: "opensearch" under
# root, oneself otherwise. setpriv execs rather than forking, so the pid started is the JVM's.
as_node_user=()
if ((EUID == 0)); then
	as_node_user=(setpriv --reuid="$node_user" --regid="$node_user" --init-groups --)
fi

node_config() {
	local i=$1 seeds=() managers=() j
	for ((j = 0; j < nodes; j++)); do
		seeds+=("127.0.0.1:$((transport_base + j))")
		managers+=("it-$j")
	done
	local IFS=,
	cat <<EOF
cluster.name: shardwise-it
node.name: it-$i
network.host: 127.0.0.1
http.port: $((http_base + i))
transport.port: $((transport_base + i))
path.data: $run/node-$i/data
path.logs: $run/node-$i/logs
discovery.seed_hosts: [${seeds[*]}]
cluster.initial_cluster_manager_nodes: [${managers[*]}]
# One WRITE thread with a deep queue: bulk load from the tests queues on a 2-core machine, where
# the default (one thread per core) would leave the CPU, not the pool, as the bottleneck.
thread_pool.write.size: 1
thread_pool.write.queue_size: 100000
# The three nodes share one disk, so each sees the others' data as used space: absolute free-space
# watermarks keep allocation independent of how full the machine's disk already is.
cluster.routing.allocation.disk.watermark.low: 2gb
cluster.routing.allocation.disk.watermark.high: 1gb
cluster.routing.allocation.disk.watermark.flood_stage: 500mb
EOF
	if [[ -d "$home/plugins/opensearch-security" ]]; then
		echo "plugins.security.disabled: true"
	fi
}

# cpus prints the CPUs node $1 may run on. Nodes of a real cluster have their own machines; here
# they share one, and a node saturating its WRITE pool would slow every other node's too, so a move
# off it could not show relief. Each node gets its own CPU when there are enough; with fewer (CI
# has 2), node 0, the one the tests load, gets CPU 0 to itself and the others share the rest.
cpus() {
	local n
	n="$(nproc)"
	if ((n >= nodes)); then
		echo "$1"
	elif (($1 == 0)); then
		echo 0
	else
		seq -s, 1 $((n - 1))
	fi
}

pidfile() { echo "$run/node-$1.pid"; }

node_running() {
	local f
	f="$(pidfile "$1")"
	[[ -f "$f" ]] && kill -0 "$(cat "$f")" 2>/dev/null
}

health() {
	curl -fsS --max-time 5 "http://127.0.0.1:$http_base/_cluster/health?wait_for_status=green&wait_for_nodes=$nodes&timeout=2s" 2>/dev/null
}

dump_logs() {
	local i
	for ((i = 0; i < nodes; i++)); do
		log "--- it-$i: last lines of its log"
		tail -n 40 "$run/node-$i/logs/shardwise-it.log" >&2 2>/dev/null || true
		tail -n 20 "$run/node-$i/stdout.log" >&2 2>/dev/null || true
	done
}

start() {
	local i
	for ((i = 0; i < nodes; i++)); do
		if node_running "$i"; then
			die "node it-$i is already running (pid $(cat "$(pidfile "$i")")); run 'scripts/opensearch.sh stop' first"
		fi
		if curl -fsS --max-time 2 "http://127.0.0.1:$((http_base + i))" >/dev/null 2>&1; then
			die "port $((http_base + i)) is taken by another process; set SHARDWISE_OPENSEARCH_PORT"
		fi
	done
	local zip jhome version started=$SECONDS
	zip="$(fetch)"
	jhome="$(java_home)"
	version="$(basename "$zip" .zip)"
	version="${version#opensearch-}"

	if ((EUID == 0)) && ! id "$node_user" >/dev/null 2>&1; then
		useradd --system --no-create-home --shell /usr/sbin/nologin "$node_user"
		log "created user $node_user"
	fi
	# A fresh install and empty data directories every start: the tests assume a new cluster.
	rm -rf "$run"
	mkdir -p "$run"
	unzip -qq "$zip" -d "$run"
	home="$run/opensearch-$version"
	[[ -x "$home/bin/opensearch" ]] || die "$zip holds no opensearch-$version/bin/opensearch"
	for ((i = 0; i < nodes; i++)); do
		local dir="$run/node-$i"
		mkdir -p "$dir/data" "$dir/logs"
		cp -r "$home/config" "$dir/config"
		node_config "$i" >"$dir/config/opensearch.yml"
		printf -- '-Xms%s\n-Xmx%s\n' "$heap" "$heap" >"$dir/config/jvm.options.d/heap.options"
	done
	if ((EUID == 0)); then
		chown -R "$node_user:$node_user" "$run"
	fi

	local placement="any CPU"
	if (($(nproc) >= 2)); then
		placement="CPUs"
		for ((i = 0; i < nodes; i++)); do
			placement+=" it-$i:$(cpus "$i")"
		done
	fi
	local user="$node_user"
	((EUID == 0)) || user="$(id -un)"
	log "starting $nodes nodes of OpenSearch $version on $(urls) (java $jhome, heap $heap, as $user, $placement)"
	for ((i = 0; i < nodes; i++)); do
		local dir="$run/node-$i"
		# Not -d: a daemonized node writes its pid file only once it is up, so a node that dies while
		# starting would leave nothing to watch. Here the subshell execs, through taskset, setpriv,
		# env and bin/opensearch, into the JVM itself, so $! is the node's pid from the first moment.
		# bin/opensearch runs bin/opensearch-keystore by a relative path: start from the install.
		# Its output goes to a file, not this script's stdout, which `eval "$(...)"` reads to the end.
		local pin=()
		if (($(nproc) >= 2)); then
			pin=(taskset --cpu-list "$(cpus "$i")")
		fi
		(cd "$home" && exec "${pin[@]}" "${as_node_user[@]}" env OPENSEARCH_JAVA_HOME="$jhome" OPENSEARCH_PATH_CONF="$dir/config" \
			"$home/bin/opensearch") >"$dir/stdout.log" 2>&1 </dev/null &
		echo $! >"$(pidfile "$i")"
	done

	until health >/dev/null; do
		for ((i = 0; i < nodes; i++)); do
			if ! node_running "$i"; then
				dump_logs
				stop
				die "node it-$i exited during start"
			fi
		done
		if ((SECONDS - started > start_timeout_seconds)); then
			dump_logs
			stop
			die "the cluster was not green with $nodes nodes within ${start_timeout_seconds}s"
		fi
		sleep 1
	done
	local took=$((SECONDS - started))
	log "OpenSearch $version: $nodes nodes green in ${took}s (fetch included): $(health)"
	echo "export SHARDWISE_OPENSEARCH_URLS=$(urls) SHARDWISE_OPENSEARCH_VERSION=$version SHARDWISE_OPENSEARCH_STARTUP_SECONDS=$took"
}

stop() {
	local i pid pids=()
	for ((i = 0; i < nodes; i++)); do
		if node_running "$i"; then
			pid="$(cat "$(pidfile "$i")")"
			kill "$pid"
			pids+=("$pid")
		fi
	done
	local waited=0
	for pid in "${pids[@]}"; do
		while kill -0 "$pid" 2>/dev/null && ((waited < stop_timeout_seconds * 10)); do
			sleep 0.1
			waited=$((waited + 1))
		done
		if kill -0 "$pid" 2>/dev/null; then
			log "pid $pid did not stop within ${stop_timeout_seconds}s; killing it"
			kill -9 "$pid"
		fi
	done
	for ((i = 0; i < nodes; i++)); do
		rm -f "$(pidfile "$i")"
	done
	if ((${#pids[@]} > 0)); then
		log "stopped ${#pids[@]} nodes (pids ${pids[*]}); logs in $run/node-*/logs"
	fi
}

case "${1:-}" in
start) start ;;
stop) stop ;;
fetch) fetch ;;
*)
	echo "usage: scripts/opensearch.sh start|stop|fetch" >&2
	exit 2
	;;
esac
