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
	// then w × (bytes/rate) / DefaultTranslogReplaySpeed for the replay. The last five `make it`
	// runs measured 0.513, 0.217, 0.196, 0.229 and 0.246 (docs/calibration.md); 0.23 is within
	// 25 % of four of them (0.513 is the odd one out, a run whose w, WRITE-thread time, was
	// inflated by a busy machine). The target replays slower than the source indexed while it
	// also takes the live writes, so a hot copy's relocation is mostly replay: at 0.23 a copy
	// written at 0.5 threads takes about 3.2 times its file copy, one at 3.5 threads about 16
	// times. Every run replays at this figure unless its scenario sets
	// cluster.translog_replay_speed (its own figure, or 0 to turn the replay off).
	DefaultTranslogReplaySpeed = 0.23
)
