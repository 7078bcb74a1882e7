package allocation

import (
	"time"

	"github.com/shardwise/shardwise/shared/cluster"
)

// Relocation times learned. The translog replay's speed (Config.TranslogReplaySpeed) differs from
// cluster to cluster and with how busy its nodes are: make it measured 0.05 to 0.48 WRITE
// thread-seconds a second on one machine, and a cluster whose copies are written lightly replays
// next to nothing. The planner therefore times the relocations it planned, from the first sample
// that shows a copy relocating to the first that shows it started on its target, and fits the
// replay to them: for each, the time beyond its estimated file phase against the indexing it
// replays (its WRITE threads × that file phase), by least squares through the origin. With
// minReplaySamples such relocations, the fitted speed replaces the configured one for the cycle's
// estimates (and "no replay" when they landed with their files alone); until then the configured
// speed stands.

// RelocationSample is one relocation the planner planned and watched land.
type RelocationSample struct {
	Index string    `json:"index"`
	Shard int       `json:"shard"`
	At    time.Time `json:"at"`
	// FileSeconds and WriteLoad are the planner's estimate of its file phase and the copy's WRITE
	// threads when planned; Seconds is what it took, in samples: first seen relocating to first
	// seen started on its target.
	FileSeconds float64 `json:"file_seconds"`
	WriteLoad   float64 `json:"write_load"`
	Seconds     float64 `json:"seconds"`
}

const (
	// relocationSamplesKept bounds the relocations remembered, the latest kept.
	relocationSamplesKept = 16
	// minReplaySamples is how many timed relocations with minReplayWork of indexing to replay the
	// fit needs before it replaces the configured speed.
	minReplaySamples = 2
	// minReplayWork is the least indexing, in WRITE thread-seconds written during the file phase,
	// that makes a relocation tell the replay's speed: one sample interval of timing error on a
	// copy written lightly says nothing of it.
	minReplayWork = 30.0
	// noReplay is the fitted replay time per thread-second of indexing below which relocations
	// are taken to land with their files alone (a speed over 20 threads: no real replay is that
	// fast, and a copy written at 4 threads whose files take 200 s would replay within one 30 s
	// sample's timing error).
	noReplay = 0.05
)

// timeRelocations marks, on a projection's moves, the first sample that shows each relocating
// and the first after that shows it started on its target; a move timed both ways becomes a
// RelocationSample.
func (p *planner) timeRelocations(moves []Moved, relocating map[Moved]bool, started map[Moved]*cluster.Copy) {
	at := p.v.Snap.At
	for i := range moves {
		m := &moves[i]
		if !m.Landed.IsZero() {
			continue
		}
		if m.Underway.IsZero() {
			if relocating[Moved{Index: m.Index, Shard: m.Shard, From: m.From, To: m.To}] {
				m.Underway = at
				p.observeSharers(m)
			}
			continue
		}
		if started[Moved{Index: m.Index, Shard: m.Shard, To: m.To}] == nil {
			continue
		}
		m.Landed = at
		p.relocations = append(p.relocations, RelocationSample{Index: m.Index, Shard: m.Shard, At: at,
			FileSeconds: m.FileSeconds, WriteLoad: m.WriteLoad, Seconds: at.Sub(m.Underway).Seconds()})
	}
}

// observeSharers sets the file phase of m, first seen relocating in this sample, to the recoveries
// that share its nodes' recovery rate in it (its own included) instead of those the planner
// counted. The planner counts a return OpenSearch's balancer may start at once, with a rebalance
// slot free when the group is planned; a later group of the same cycle may fill the slots, and the
// return then waits. Fitted to the doubled file phase, the replay speed came out at 0.39 where the
// relocations replayed at 0.23 (random seed 80 of 200: hot[0], est. 42m57s "shared by 2", landed
// in 21.5 minutes alone), and every estimate after it was that much too short.
func (p *planner) observeSharers(m *Moved) {
	if m.Sharers <= 0 || m.FileSeconds <= 0 {
		return
	}
	in := p.recoveriesInFlight()
	seen := max(in[m.From], in[m.To], 1)
	m.FileSeconds *= float64(seen) / float64(m.Sharers)
	m.Sharers = seen
}

// latestRelocations is samples cut to the relocationSamplesKept latest.
func latestRelocations(samples []RelocationSample) []RelocationSample {
	if n := len(samples); n > relocationSamplesKept {
		return append([]RelocationSample(nil), samples[n-relocationSamplesKept:]...)
	}
	return samples
}

// learnedReplay fits the replay speed to the timed relocations: ok is false until
// minReplaySamples of them carried minReplayWork, and speed 0 means they landed with their files
// alone (no replay to estimate).
func learnedReplay(samples []RelocationSample) (speed float64, n int, ok bool) {
	var num, den float64
	for _, s := range samples {
		work := s.WriteLoad * s.FileSeconds
		if work < minReplayWork || s.FileSeconds <= 0 {
			continue
		}
		num += (s.Seconds - s.FileSeconds) * work
		den += work * work
		n++
	}
	if n < minReplaySamples {
		return 0, n, false
	}
	k := num / den
	if k <= noReplay {
		return 0, n, true
	}
	return 1 / k, n, true
}

// withLearnedReplay is cfg with the replay speed the relocations show, when they show it.
func withLearnedReplay(cfg Config, samples []RelocationSample) Config {
	if speed, n, ok := learnedReplay(samples); ok {
		cfg.TranslogReplaySpeed = speed
		cfg.replayLearnedFrom = n
	}
	return cfg
}
