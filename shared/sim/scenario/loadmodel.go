package scenario

import (
	"fmt"
	"math"
)

// The load model's scenario fields beyond the loads themselves: segment replication, per-shard
// search weights, shard growth and node speed (docs/scenarios.md, "The scenario"), their
// validation, and set_shard_weights.

// Replication types (index.replication.type).
const (
	ReplicationDocument = "document"
	ReplicationSegment  = "segment"
)

// maxShardGrowthPerHour bounds shard_bytes_growth_per_hour at 1 PiB an hour, so shard_bytes cannot
// overflow over any run the format allows.
const maxShardGrowthPerHour = 1 << 50

// validateWeights checks one weight per primary, none negative, not all zero.
func validateWeights(path string, weights []float64, primaries int) error {
	if len(weights) != primaries {
		return fieldError(path, "has %d entries for %d primaries", len(weights), primaries)
	}
	sum := 0.0
	for i, w := range weights {
		if !(w >= 0) || math.IsInf(w, 0) {
			return fieldError(fmt.Sprintf("%s[%d]", path, i), "must be a non-negative number, got %v", w)
		}
		sum += w
	}
	if sum <= 0 {
		return fieldError(path, "must not all be zero")
	}
	return nil
}

// validateLoadModel checks an index's replication_type, shard_search_weights and
// shard_bytes_growth_per_hour.
func (ix *IndexSpec) validateLoadModel(path string) error {
	switch ix.ReplicationType {
	case "", ReplicationDocument, ReplicationSegment:
	default:
		return fieldError(path+".replication_type", "unknown type %q (want %s or %s)", ix.ReplicationType, ReplicationDocument, ReplicationSegment)
	}
	if ix.ShardSearchWeights != nil {
		if err := validateWeights(path+".shard_search_weights", ix.ShardSearchWeights, ix.Primaries); err != nil {
			return err
		}
	}
	if g := ix.ShardBytesGrowthPerHour; !(g >= 0) || g > maxShardGrowthPerHour {
		return fieldError(path+".shard_bytes_growth_per_hour", "must be in [0, %d] bytes, got %v", int64(maxShardGrowthPerHour), g)
	}
	return nil
}

// validateSetShardWeights checks a set_shard_weights event: an index known by then and one weight
// per primary.
func (sc *Scenario) validateSetShardWeights(e *Event, path string, indices map[string]bool) error {
	if e.Index == "" {
		return fieldError(path+".index", "required")
	}
	if !indices[e.Index] {
		return fieldError(path+".index", "unknown index %q", e.Index)
	}
	if e.Weights == nil {
		return fieldError(path+".weights", "required: one weight per primary")
	}
	return validateWeights(path+".weights", e.Weights, sc.primariesAt(e.Index))
}

// primariesAt is the primary count of an index of the scenario or of a create_index event.
func (sc *Scenario) primariesAt(name string) int {
	if n := sc.primariesOf(name); n > 0 {
		return n
	}
	for _, e := range sc.Events {
		if e.Kind == EventCreateIndex && e.Spec != nil && e.Spec.Name == name {
			return e.Spec.Primaries
		}
	}
	return 0
}
