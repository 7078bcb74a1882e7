package engine

import (
	"strings"
	"time"

	"github.com/shardwise/shardwise/shared/allocation"
)

// The state table holds a cluster's items under one partition key, pk(cluster) ("cluster#<name>",
// from shared/snapshots). This file is the one home of their sort keys:
//
//	snap#<time>…               a stats snapshot, its chunks and meta (shared/snapshots builds them)
//	plan#<snapshot key>        the plan detect made from that snapshot
//	published#<plan key>       the plan's events are out
//	claim#<plan key>           the move invocation that acts on the plan
//	ledger#<plan key>#<move>   one move of the plan, issued or skipped, and what became of it
//	lease#allocation           the lease that serializes acting on the cluster
//	allocation#memory          the planner's streaks and recent relocations between cycles
//	replicas#memory            the replica controller's cooldowns
//	signals#notified           what Scale Up Needed and Hotspot Unrelieved last notified, and when
//	replicas#done#<snapshot>   the snapshot whose replica decisions are made
//	filter#<index>#<node>      an allocation filter shardwise set
//	move#reroute-refused       the cluster refused _cluster/reroute and auto fell back to filters
//	                           (kept for rerouteRefusedFor)
//	sandbox#history#<time>     one sandbox invocation's record (sandbox.Record), kept for
//	                           sandbox.history_retention
//
// The webhook's replay items have their own partition key (shared/webhook).
const (
	planPrefix        = "plan#"
	publishedPrefix   = "published#"
	claimPrefix       = "claim#"
	ledgerPrefix      = "ledger#"
	filterPrefix      = "filter#"
	rerouteRefusedSK  = "move#reroute-refused"
	replicasDoneSK    = "replicas#done#"
	leaseSK           = "lease#allocation"
	memoryKey         = "allocation#memory"
	replicasMemoryKey = "replicas#memory"
	signalsKey        = "signals#notified"
	sandboxHistorySK  = "sandbox#history#"
)

// sandboxHistoryLayout orders the history's keys by time, to the hour in their first 11
// characters, so that a window is read with one Query per hour it touches.
const sandboxHistoryLayout = "20060102T150405.000000000Z"

// sandboxHistoryKey is the record of the invocation that ended at.
func sandboxHistoryKey(at time.Time) string {
	return sandboxHistorySK + at.UTC().Format(sandboxHistoryLayout)
}

// sandboxHistoryPrefixes are the key prefixes of the hours from..to touch, oldest first.
func sandboxHistoryPrefixes(from, to time.Time) []string {
	var out []string
	for h := from.UTC().Truncate(time.Hour); !h.After(to); h = h.Add(time.Hour) {
		out = append(out, sandboxHistorySK+h.Format("20060102T15"))
	}
	return out
}

// planKey is the plan made from a snapshot.
func planKey(snapshotKey string) string { return planPrefix + snapshotKey }

// planSnapshot is the snapshot a plan was made from.
func planSnapshot(planKey string) string { return strings.TrimPrefix(planKey, planPrefix) }

// publishedKey marks a plan whose events are out.
func publishedKey(planKey string) string { return publishedPrefix + planKey }

// cycleClaimKey records the invocation that acts on a plan.
func cycleClaimKey(planKey string) string { return claimPrefix + planKey }

// ledgerKey is one move of a plan.
func ledgerKey(planKey string, m allocation.Move) string {
	return ledgerPrefix + planKey + "#" + m.Key()
}

// filterKey is an allocation filter excluding nodeName for index.
func filterKey(index, nodeName string) string { return filterPrefix + index + "#" + nodeName }

// replicasDoneKey marks a snapshot whose replica decisions are made.
func replicasDoneKey(snapshotKey string) string { return replicasDoneSK + snapshotKey }
