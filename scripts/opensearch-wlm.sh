#!/usr/bin/env bash
# Fetches OpenSearch 3.8 and its workload-management plugin from Maven Central, assembles the
# plugin's installable zip, and starts a one-node cluster with the plugin on 127.0.0.1 for the
# workload-management integration test (it/wlm_test.go, TestWLM*); stops it.
#
#   eval "$(scripts/opensearch-wlm.sh start)"  fetches (cached), installs the plugin, starts the
#                                              node, waits for green and for the plugin's APIs,
#                                              prints the export line the tests read
#   scripts/opensearch-wlm.sh stop             stops the node this script started
#   scripts/opensearch-wlm.sh fetch            only fetches and assembles, and prints the paths
#
# What is fetched (Maven Central, by `mvn dependency:copy`, with strict checksums):
#   org.opensearch.distribution.integ-test-zip:opensearch:<v>:zip   the minimal distribution. From
#       3.x it carries every module, among them rule-framework (the rule API the plugin extends)
#       and lang-painless, but no plugin.
#   org.opensearch.plugin:workload-management:<v>:jar   the plugin's classes. Maven Central serves
#       no plugin zip for it, only this jar.
#
# How the plugin is assembled. OpenSearch's own build packs the plugin as plugin-descriptor.properties,
# workload-management-<v>.jar and workload-management-wlm-spi-<v>.jar, extending rule-framework
# (the plugin's WorkloadManagementPlugin implements rule-framework's RuleFrameworkExtension, whose
# classes only rule-framework's class loader holds, so the descriptor says
# extended.plugins=rule-framework). The descriptor is written here with the fields of the
# distribution's own modules (rule-framework's, in the same zip). workload-management-wlm-spi is
# not on Maven Central (org.opensearch.plugin:workload-management-wlm-spi:<v> answers 404, and so
# does its group's maven-metadata.xml). It holds the extension point through which other plugins
# (the Security plugin's principal extractor) add request attributes; the plugin's bytecode
# resolves one type of it, the interface AttributeExtractorExtension with the single method
# `AttributeExtractor<String> getAttributeExtractor()`, when the node loads its extensions. This
# script compiles that one interface from the declaration below (the signature read from the
# plugin's class files with javap) against the distribution's rule-framework jar, and packs it as
# the plugin's wlm-spi jar. With no plugin extending workload-management on the node, which is so
# without the Security plugin, the list of extensions is empty and the stand-in is never called:
# groups, index_pattern rules (the plugin's own IndicesExtractor), enforcement (the server's
# WorkloadGroupService) and _wlm/stats are the released code.
#
# One node, not three: workload management enforces per node, each node against its own CPU, so
# the noisy-neighbour case needs one shared node, not a cluster; on CI's 2 cores three 3.x JVMs
# would spend minutes electing a manager, and would share the same two cores, so a flood on one
# would slow the others' tenants too, which says nothing about the plugin.
#
# OpenSearch refuses to run as root, so under root the node runs as the user "opensearch", created
# here when missing (the same user scripts/opensearch.sh uses). Every failure exits non-zero with
# the reason: a cluster that cannot be fetched or started must fail CI, never skip its test.
#
# Settings (environment):
#   SHARDWISE_OPENSEARCH_WLM_VERSION   OpenSearch and plugin version (default 3.8.0)
#   SHARDWISE_OPENSEARCH_WLM_PORT      HTTP port (default 9450); the transport port is 100 above.
#                                      scripts/opensearch.sh takes 9250-9252 and 9350-9352, so both
#                                      clusters can run at once
#   SHARDWISE_OPENSEARCH_WLM_DIR       install, data and logs (default /tmp/shardwise-opensearch-wlm)
#   SHARDWISE_OPENSEARCH_WLM_HEAP      heap (default 1g)
#   SHARDWISE_OPENSEARCH_START_TIMEOUT seconds to wait for green (default 600)
#   OPENSEARCH_JAVA_HOME               the JDK to run on (default: the first JDK 21 or newer found;
#                                      it needs javac too, for the stand-in above)
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cache="$root/.cache/opensearch"
version="${SHARDWISE_OPENSEARCH_WLM_VERSION:-3.8.0}"
http_port="${SHARDWISE_OPENSEARCH_WLM_PORT:-9450}"
transport_port=$((http_port + 100))
run="${SHARDWISE_OPENSEARCH_WLM_DIR:-/tmp/shardwise-opensearch-wlm}"
heap="${SHARDWISE_OPENSEARCH_WLM_HEAP:-1g}"
node_user=opensearch
start_timeout_seconds="${SHARDWISE_OPENSEARCH_START_TIMEOUT:-600}"
stop_timeout_seconds=30
pidfile="$run/node.pid"

log() { echo "opensearch-wlm: $*" >&2; }
die() {
	log "$*"
	exit 1
}

url() { echo "http://127.0.0.1:$http_port"; }

# mvn_copy GAV prints the path of the artifact copied into the cache (kept once valid).
mvn_copy() {
	local gav=$1 file=$2
	if [[ -f "$cache/$file" ]] && unzip -tqq "$cache/$file" >/dev/null 2>&1; then
		echo "$cache/$file"
		return 0
	fi
	command -v mvn >/dev/null || die "mvn is not installed: it fetches OpenSearch from Maven Central"
	log "fetching $gav from Maven Central"
	# --strict-checksums: a corrupt download fails here, not as a JVM error later.
	mvn --batch-mode --quiet --strict-checksums dependency:copy -Dartifact="$gav" -DoutputDirectory="$cache" >&2 ||
		die "Maven Central did not serve $gav"
	unzip -tqq "$cache/$file" >/dev/null || die "$cache/$file is not a valid zip"
	echo "$cache/$file"
}

# java_home prints a JDK with javac that OpenSearch 3.x runs on (21 or newer).
java_home() {
	if [[ -n "${OPENSEARCH_JAVA_HOME:-}" ]]; then
		echo "$OPENSEARCH_JAVA_HOME"
		return 0
	fi
	local candidates=()
	[[ -n "${JAVA_HOME:-}" ]] && candidates+=("$JAVA_HOME")
	candidates+=(/usr/lib/jvm/* /opt/java/* /opt/jdk*)
	local home major
	for home in "${candidates[@]}"; do
		[[ -x "$home/bin/java" && -x "$home/bin/javac" ]] || continue
		major="$("$home/bin/java" -XshowSettings:properties -version 2>&1 |
			sed -n 's/^ *java\.specification\.version = //p')"
		if [[ "$major" =~ ^[0-9]+$ ]] && ((major >= 21)); then
			echo "$home"
			return 0
		fi
	done
	die "no JDK 21 or newer with javac found (set OPENSEARCH_JAVA_HOME); OpenSearch $version runs on those"
}

# fetch prints the distribution's zip and the assembled plugin zip, one a line.
fetch() {
	mkdir -p "$cache"
	local dist jar plugin jhome
	dist="$(mvn_copy "org.opensearch.distribution.integ-test-zip:opensearch:$version:zip" "opensearch-$version.zip")"
	jar="$(mvn_copy "org.opensearch.plugin:workload-management:$version:jar" "workload-management-$version.jar")"
	plugin="$cache/workload-management-$version-plugin.zip"
	if [[ -f "$plugin" ]] && unzip -tqq "$plugin" >/dev/null 2>&1; then
		log "using the assembled plugin $plugin"
		printf '%s\n%s\n' "$dist" "$plugin"
		return 0
	fi
	jhome="$(java_home)"
	local work
	work="$(mktemp -d)"
	# The stand-in's one type needs rule-framework's AttributeExtractor, from the distribution.
	unzip -qq -j "$dist" "opensearch-$version/modules/rule-framework/common-$version.jar" -d "$work" ||
		die "$dist has no modules/rule-framework/common-$version.jar: the plugin extends rule-framework"
	mkdir -p "$work/src/org/opensearch/plugin/wlm/spi" "$work/classes" "$work/zip"
	cat >"$work/src/org/opensearch/plugin/wlm/spi/AttributeExtractorExtension.java" <<'EOF'
package org.opensearch.plugin.wlm.spi;

import org.opensearch.rule.attribute_extractor.AttributeExtractor;

/** Stand-in for workload-management-wlm-spi, which Maven Central does not serve: see scripts/opensearch-wlm.sh. */
public interface AttributeExtractorExtension {
    AttributeExtractor<String> getAttributeExtractor();
}
EOF
	"$jhome/bin/javac" --release 21 -nowarn -cp "$work/common-$version.jar" -d "$work/classes" \
		"$work/src/org/opensearch/plugin/wlm/spi/AttributeExtractorExtension.java" >&2
	"$jhome/bin/jar" --create --file "$work/zip/workload-management-wlm-spi-$version.jar" -C "$work/classes" .
	cp "$jar" "$work/zip/workload-management-$version.jar"
	cat >"$work/zip/plugin-descriptor.properties" <<EOF
description=OpenSearch Workload Management Plugin.
version=$version
name=workload-management
classname=org.opensearch.plugin.wlm.WorkloadManagementPlugin
java.version=21
opensearch.version=$version
custom.foldername=
extended.plugins=rule-framework
has.native.controller=false
EOF
	(cd "$work/zip" && "$jhome/bin/jar" --create --no-manifest --file "$work/plugin.zip" .)
	mv "$work/plugin.zip" "$plugin"
	rm -rf "$work"
	log "assembled $plugin (plugin jar from Maven Central, stand-in wlm-spi, descriptor extending rule-framework)"
	printf '%s\n%s\n' "$dist" "$plugin"
}

as_node_user=()
if ((EUID == 0)); then
	as_node_user=(setpriv --reuid="$node_user" --regid="$node_user" --init-groups --)
fi

node_running() { [[ -f "$pidfile" ]] && kill -0 "$(cat "$pidfile")" 2>/dev/null; }

health() {
	curl -fsS --max-time 5 "$(url)/_cluster/health?wait_for_status=green&timeout=2s" 2>/dev/null
}

dump_logs() {
	log "--- last lines of the node's log"
	tail -n 60 "$run/logs/shardwise-it-wlm.log" >&2 2>/dev/null || true
	tail -n 20 "$run/stdout.log" >&2 2>/dev/null || true
}

start() {
	if node_running; then
		die "the node is already running (pid $(cat "$pidfile")); run 'scripts/opensearch-wlm.sh stop' first"
	fi
	if curl -fsS --max-time 2 "$(url)" >/dev/null 2>&1; then
		die "port $http_port is taken by another process; set SHARDWISE_OPENSEARCH_WLM_PORT"
	fi
	local started=$SECONDS paths dist plugin jhome
	paths="$(fetch)"
	dist="$(sed -n 1p <<<"$paths")"
	plugin="$(sed -n 2p <<<"$paths")"
	jhome="$(java_home)"

	if ((EUID == 0)) && ! id "$node_user" >/dev/null 2>&1; then
		useradd --system --no-create-home --shell /usr/sbin/nologin "$node_user"
		log "created user $node_user"
	fi
	# A fresh install and empty data every start: the test assumes a new cluster.
	rm -rf "$run"
	mkdir -p "$run/data" "$run/logs"
	unzip -qq "$dist" -d "$run"
	local home="$run/opensearch-$version"
	[[ -x "$home/bin/opensearch" ]] || die "$dist holds no opensearch-$version/bin/opensearch"
	if ! OPENSEARCH_JAVA_HOME="$jhome" "$home/bin/opensearch-plugin" install --batch "file://$plugin" >"$run/plugin-install.log" 2>&1; then
		cat "$run/plugin-install.log" >&2
		die "opensearch-plugin could not install $plugin"
	fi
	[[ -f "$home/plugins/workload-management/plugin-descriptor.properties" ]] ||
		die "opensearch-plugin did not install workload-management into $home/plugins"
	cat >"$home/config/opensearch.yml" <<EOF
cluster.name: shardwise-it-wlm
node.name: it-wlm-0
network.host: 127.0.0.1
http.port: $http_port
transport.port: $transport_port
path.data: $run/data
path.logs: $run/logs
discovery.type: single-node
# The test's indices share the machine's disk with everything else on it: absolute free-space
# watermarks keep allocation independent of how full that disk already is.
cluster.routing.allocation.disk.watermark.low: 2gb
cluster.routing.allocation.disk.watermark.high: 1gb
cluster.routing.allocation.disk.watermark.flood_stage: 500mb
EOF
	printf -- '-Xms%s\n-Xmx%s\n' "$heap" "$heap" >"$home/config/jvm.options.d/heap.options"
	if ((EUID == 0)); then
		chown -R "$node_user:$node_user" "$run"
	fi
	local user="$node_user"
	((EUID == 0)) || user="$(id -un)"
	log "starting OpenSearch $version with workload-management on $(url) (java $jhome, heap $heap, as $user)"
	# Not -d: the subshell execs through setpriv and env into bin/opensearch and the JVM, so $! is
	# the node's pid from the first moment and a node that dies while starting is seen.
	(cd "$home" && exec "${as_node_user[@]}" env OPENSEARCH_JAVA_HOME="$jhome" OPENSEARCH_PATH_CONF="$home/config" \
		"$home/bin/opensearch") >"$run/stdout.log" 2>&1 </dev/null &
	echo $! >"$pidfile"

	until health >/dev/null; do
		if ! node_running; then
			dump_logs
			stop
			die "the node exited during start"
		fi
		if ((SECONDS - started > start_timeout_seconds)); then
			dump_logs
			stop
			die "the node was not green within ${start_timeout_seconds}s"
		fi
		sleep 1
	done
	# The plugin's APIs answer: a node that loaded without it must fail here, not in a test.
	if ! curl -fsS --max-time 10 "$(url)/_wlm/workload_group" >/dev/null || ! curl -fsS --max-time 10 "$(url)/_rules/workload_group" >/dev/null; then
		dump_logs
		stop
		die "the node is up but does not serve _wlm/workload_group and _rules/workload_group: the plugin did not load"
	fi
	local took=$((SECONDS - started))
	log "OpenSearch $version with $(curl -fsS --max-time 5 "$(url)/_cat/plugins?h=component,version" | tr '\n' ' ')green in ${took}s (fetch included)"
	echo "export SHARDWISE_OPENSEARCH_URLS=$(url) SHARDWISE_OPENSEARCH_VERSION=$version SHARDWISE_OPENSEARCH_STARTUP_SECONDS=$took SHARDWISE_OPENSEARCH_WLM=1"
}

stop() {
	node_running || return 0
	local pid waited=0
	pid="$(cat "$pidfile")"
	kill "$pid"
	while kill -0 "$pid" 2>/dev/null && ((waited < stop_timeout_seconds * 10)); do
		sleep 0.1
		waited=$((waited + 1))
	done
	if kill -0 "$pid" 2>/dev/null; then
		log "pid $pid did not stop within ${stop_timeout_seconds}s; killing it"
		kill -9 "$pid"
	fi
	rm -f "$pidfile"
	log "stopped the node (pid $pid); logs in $run/logs"
}

case "${1:-}" in
start) start ;;
stop) stop ;;
fetch) fetch ;;
*)
	echo "usage: scripts/opensearch-wlm.sh start|stop|fetch" >&2
	exit 2
	;;
esac
