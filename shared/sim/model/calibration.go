package model

import "github.com/shardwise/shardwise/shared/cluster"

// Figures of the model that are measured on real OpenSearch rather than taken from a default or
// an article. `make it` measures each on a three-node OpenSearch 2.19 (it/calibration_test.go),
// prints the measurement beside the value here, and fails when they differ by more than 25 %.
const (
	// DefaultSegmentReplicaShare is the part of a shard's write load that each of its replicas
	// pays under segment replication (index.replication.type: SEGMENT), where only the primary
	// indexes and the replicas copy its segments. The figure and its measurements live with the
	// cluster model (cluster.SegmentReplicaShare), so the planner estimates a replica by the same
	// one.
	DefaultSegmentReplicaShare = cluster.SegmentReplicaShare

	// DefaultTranslogReplaySpeed is how fast a relocation's target replays the operations
	// indexed on the source while its files were copied, in thread-seconds of indexing replayed
	// per second: a relocation of a copy written at w threads takes bytes/rate for the files,
	// then w × (bytes/rate) / DefaultTranslogReplaySpeed for the replay. The latest `make it`
	// measured 0.407 (w = 0.72 threads, 11.3 s of files, 20.0 s of replay); earlier runs 0.05 to
	// 0.48 (docs/calibration.md), as w is WRITE-thread time and moves with how busy the machine
	// is. The target replays slower than the source indexed while it also takes the live writes,
	// so a hot copy's relocation is mostly replay. A scenario turns the replay on with
	// cluster.translog_replay_speed (this figure, or its own); without it a relocation takes its
	// bytes alone (docs/calibration.md says why).
	DefaultTranslogReplaySpeed = 0.4
)
