package allocation

import (
	"fmt"
	"time"

	"github.com/shardwise/shardwise/shared/cluster"
)

// Relocation time. A peer recovery copies the shard's files at the node's recovery rate
// (indices.recovery.max_bytes_per_sec, one limit per node shared by its concurrent recoveries), then
// replays from the source's translog the operations indexed meanwhile before the copy starts on its
// target; until then the copy's load stays on its source. The replay takes
//
//	replay seconds = w × file seconds / TranslogReplaySpeed
//
// for a copy written at w WRITE threads: the shape of the simulator's hot-copy recovery model
// (shared/sim/model/recovery.go). A 2.90 GB primary under bulk load took 861.5 s to move on
// OpenSearch, where its files alone take 72 s at 40 MB/s, so a hot copy's relocation is mostly
// replay, and which copy leaves a hot node decides how soon the node is relieved.

// RelocationEstimate is how long one relocation is expected to take, with the figures behind it.
type RelocationEstimate struct {
	// FileSeconds copy the bytes at Rate bytes a second shared by Sharers recoveries.
	FileSeconds float64 `json:"file_seconds"`
	// ReplaySeconds replay WriteLoad threads of indexing over FileSeconds at Speed (0: not estimated).
	ReplaySeconds float64 `json:"replay_seconds"`
	Rate          float64 `json:"rate_bytes_per_second"`
	Sharers       int     `json:"sharers"`
	WriteLoad     float64 `json:"write_load"`
	Speed         float64 `json:"replay_speed"`
	// LearnedFrom is how many of the planner's timed relocations Speed was fitted to (0: the
	// configured figure).
	LearnedFrom int `json:"replay_learned_from,omitempty"`
}

// EstimateRelocation estimates the relocation of a copy of sizeBytes written at load WRITE threads
// on a cluster with settings, when sharers recoveries (itself included) share the busier of its
// two nodes' recovery rate.
func EstimateRelocation(settings cluster.Settings, cfg Config, sizeBytes int64, load float64, sharers int) RelocationEstimate {
	e := RelocationEstimate{Rate: settings.RecoveryRate(), Sharers: max(sharers, 1), WriteLoad: max(load, 0), Speed: cfg.TranslogReplaySpeed, LearnedFrom: cfg.replayLearnedFrom}
	e.FileSeconds = float64(max(sizeBytes, 0)) * float64(e.Sharers) / e.Rate
	if e.Speed > 0 {
		e.ReplaySeconds = e.WriteLoad * e.FileSeconds / e.Speed
	}
	return e
}

// Seconds is the whole relocation: files, then replay.
func (e RelocationEstimate) Seconds() float64 { return e.FileSeconds + e.ReplaySeconds }

// String says the estimate for a move's reason: "relocation est. 5m27s: 2.90 GiB of files in 1m14s at
// 40 MiB/s shared by 1, then 4m13s replaying 1.40 WRITE threads of indexing at 0.40".
func (e RelocationEstimate) String() string {
	s := fmt.Sprintf("relocation est. %s: files in %s at %.0f MiB/s shared by %d", roundSeconds(e.Seconds()), roundSeconds(e.FileSeconds), e.Rate/(1<<20), e.Sharers)
	if e.ReplaySeconds > 0 {
		s += fmt.Sprintf(", then %s replaying %.2f WRITE threads of indexing at %.2f", roundSeconds(e.ReplaySeconds), e.WriteLoad, e.Speed)
	}
	switch {
	case e.LearnedFrom > 0 && e.Speed > 0:
		s += fmt.Sprintf(" (the replay speed fitted to the last %d relocations timed)", e.LearnedFrom)
	case e.LearnedFrom > 0:
		s += fmt.Sprintf(" (no replay: the last %d relocations timed landed with their files)", e.LearnedFrom)
	}
	return s
}

// roundSeconds writes seconds as a duration to the second ("5m27s").
func roundSeconds(s float64) string {
	return (time.Duration(s+0.5) * time.Second).String()
}
