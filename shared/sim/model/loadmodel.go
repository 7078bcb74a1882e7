package model

import (
	"math"

	"github.com/shardwise/shardwise/shared/sim/scenario"
)

// normalized returns weights scaled to sum to 1, or nil for nil.
func normalized(weights []float64) []float64 {
	if weights == nil {
		return nil
	}
	out := make([]float64, len(weights))
	sum := 0.0
	for _, w := range weights {
		sum += w
	}
	for i, w := range weights {
		out[i] = w / sum
	}
	return out
}

// applyLoadModel sets an index's load-model fields from its spec.
func (ix *Index) applyLoadModel(spec *scenario.IndexSpec) {
	ix.segment = spec.ReplicationType == scenario.ReplicationSegment
	ix.searchWeights = normalized(spec.ShardSearchWeights)
	ix.growthPerSecond = spec.ShardBytesGrowthPerHour / 3600
}

// Segment reports whether the index uses segment replication (index.replication.type SEGMENT).
func (ix *Index) Segment() bool { return ix.segment }

// copyWriteShare is the part of its shard's write load a copy bears: all of it, except a replica
// under segment replication, which copies the primary's segments instead of indexing.
func (c *ShardCopy) copyWriteShare() float64 {
	if c.Sh.Idx.segment && !c.Primary {
		return DefaultSegmentReplicaShare
	}
	return 1
}

// grow adds dt seconds of shard_bytes_growth_per_hour to the index's shards.
func (ix *Index) grow(dt float64) {
	if ix.growthPerSecond == 0 {
		return
	}
	ix.grown += ix.growthPerSecond * dt
	whole := math.Floor(ix.grown)
	ix.ShardBytes += int64(whole)
	ix.grown -= whole
}

// setShardWeights applies set_shard_weights: the index's write load is split by the new weights
// from now on.
func (ix *Index) setShardWeights(weights []float64) { ix.weights = normalized(weights) }
