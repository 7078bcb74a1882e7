package allocation

import (
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/shardwise/shardwise/shared/cluster"
)

// Streak counts the consecutive samples in which a node met both hotspot criteria. Streaks are kept in
// the state store between invocations; At is the snapshot time of the last sample counted, so the same
// snapshot delivered twice counts once. A streak whose last sample is more than streakGapIntervals
// sampling intervals old (detect did not run, or its events were lost) is not consecutive: it
// starts again.
type Streak struct {
	Count int       `json:"count"`
	Since time.Time `json:"since"`
	At    time.Time `json:"at"`
	// Queue is the WRITE queue length at At, to tell a growing queue from one draining.
	Queue int `json:"queue"`
	// Latency is the estimated WRITE queue latency at At, to measure how fast the backlog grows.
	Latency float64 `json:"latency,omitempty"`
}

// nodeTime is when the node's stats were taken by the cluster's clock: the node's own stats
// timestamp, or the snapshot's time when the node gives none. A streak's samples, and the growth
// of a backlog between them, are timed by it, as the collector's clock can run apart from the
// cluster's: against the simulator served at 20× speed, samples 10 s apart on the collector's
// clock were 200 s apart on the cluster's. Timed by the collector's, a backlog's growth read as
// twenty times the demand (write-hotspot: node-0 at 279 %, so every hot copy outweighed the
// other nodes and the plan moved a cool one), and two samples spanned too little to be
// sustained.
func nodeTime(n *cluster.Node, snap *cluster.Snapshot) time.Time {
	if !n.StatsAt.IsZero() {
		return n.StatsAt
	}
	return snap.At
}

// Hotspot is one node's WRITE pool evidence for this sample.
type Hotspot struct {
	Node                string  `json:"node"`
	NodeName            string  `json:"node_name"`
	QueueLatencySeconds float64 `json:"queue_latency_seconds"`
	LatencyLimit        float64 `json:"latency_limit_seconds"`
	Utilization         float64 `json:"utilization"`
	UtilizationLimit    float64 `json:"utilization_limit"`
	Queue               int     `json:"queue"`
	Rejected            int64   `json:"rejected"`
	Stalled             bool    `json:"stalled,omitempty"`
	// Draining: the queue shrank by more than DrainRatio since the last sample, so the node already
	// serves more than arrives (a move is taking effect); it is not acted on again until it stops.
	Draining    bool `json:"draining,omitempty"`
	Streak      int  `json:"streak"`
	StreakLimit int  `json:"streak_limit"`
	// SpanSeconds is the cluster time the streak's samples span; WindowSeconds the sustain window
	// it must reach (0: no window, see sustainSpan).
	SpanSeconds   float64 `json:"span_seconds,omitempty"`
	WindowSeconds float64 `json:"window_seconds,omitempty"`
	// Demand estimates the WRITE threads the node is asked for when its backlog grows or it rejects
	// writes: what it serves (a saturated pool serves all its threads) plus the backlog's growth in
	// thread-seconds per second, plus the rejected tasks at the completed tasks' cost. A saturated
	// node's counters show only what it served. Zero when the backlog neither grows nor overflows.
	Demand float64 `json:"demand_threads,omitempty"`
	// DrainingDemand estimates, when the node's backlog shrank since the last sample and it rejected
	// nothing, the WRITE threads it is asked for: what it serves less the backlog's shrink in
	// thread-seconds per second. Under its threads the queue empties without a move; zero when
	// the backlog did not shrink.
	DrainingDemand float64 `json:"draining_demand_threads,omitempty"`
	// Hot is true once both criteria held for StreakLimit samples, or, on a saturated node, in a
	// sample in which another node is hot (With).
	Hot bool `json:"hot"`
	// With names the hot node whose sample made this saturated node hot before its StreakLimit
	// samples (Config.SaturatedWithHot).
	With string `json:"hot_with,omitempty"`
	// Outcome is what the plan came to for this node, set by the planner on a node it relieved
	// (hot, rising or skewed): OutcomePlanned when a group of moves off it is in the plan, otherwise
	// the kind of the note that says why not (NoteReliefInFlight, NoteDeferred, NoteThrottled,
	// NoteUnrelieved, …), OutcomeOutweighed when a copy on it outweighs any node it may go to, or
	// the bound of a scale-up proof (OutcomeAllHot, the cluster's or its zone's capacity) when that,
	// not the planner, is why it stays hot.
	Outcome string `json:"outcome,omitempty"`
	// Rising is set, on a node not hot, when its WRITE use climbs steadily toward saturation sooner
	// than relief could land (see Rise): it is relieved early, judged at the load projected for then.
	Rising *Rise `json:"rising,omitempty"`
	// Skew is set, on a calm cluster's most skewed node, when it carries so much more than its
	// share of the WRITE load that it would saturate long before the rest (see Skew): it is spread
	// ahead of the peak, judged at the loads of the cluster's even growth.
	Skew   *Skew  `json:"skew,omitempty"`
	Reason string `json:"reason"`
}

// DetectHotspots applies the hotspot criteria to every data node: WRITE queue latency (a Little's-law
// estimate; a stalled queue or rejections count as queueing) at or over the latency threshold AND
// utilization at or over the utilization threshold, sustained over SustainedSamples samples. It returns
// the nodes meeting the criteria this sample (hot or building up) and the streaks to store.
func DetectHotspots(snap *cluster.Snapshot, streaks map[string]Streak, cfg Config) ([]Hotspot, map[string]Streak) {
	next := make(map[string]Streak, len(snap.Nodes))
	var out []Hotspot
	limit := cfg.QueueLatencyThreshold.Std().Seconds()
	for i := range snap.Nodes {
		n := &snap.Nodes[i]
		if !n.IsData() {
			continue
		}
		prev := streaks[n.ID]
		now := nodeTime(n, snap)
		if streakBroken(prev, n, snap, now) {
			prev = Streak{}
		}
		if !n.Write.RateKnown {
			// No completion rate this sample (first sample, restart): neither evidence nor relief.
			if prev.Count > 0 {
				next[n.ID] = prev
			}
			continue
		}
		util := n.Write.Utilization
		if n.Write.Threads > 0 {
			// Σ index_time_in_millis undercounts a busy WRITE thread (a bulk request's parsing, routing
			// and translog work is not indexing time; on real OpenSearch a saturated thread reads
			// about 0.5-0.8), and after a move the sum lacks the new copy's unknown rate. The pool's
			// active threads when the stats were taken cross-check it: a queue only
			// forms while every thread is active.
			util = max(util, float64(n.Write.Active)/float64(n.Write.Threads))
		}
		queueing := n.Write.QueueLatencySeconds >= limit || n.Write.Stalled || n.Write.Rejected > 0
		busy := util >= cfg.HotUtilization
		if !queueing || !busy {
			continue
		}
		draining := prev.Count > 0 && now.After(prev.At) && n.Write.Rejected == 0 &&
			float64(n.Write.Queue) < float64(prev.Queue)*(1-drainRatio)
		s := prev
		switch {
		case s.Count == 0:
			s = Streak{Count: 1, Since: now, At: now}
		case now.Sub(s.At) < streakMinStep:
			// The same snapshot again (a duplicate event), or a sample a push or an alert asked
			// for moments after the last: the streak measures the cluster's time, so it counts
			// once.
		case draining:
			// Evidence of relief, not of a hotspot: hold the count.
			s.At = now
		default:
			s.Count++
			s.At = now
		}
		demand := 0.0
		served := max(n.Write.Load, float64(min(n.Write.Active, n.Write.Threads)))
		if prev.Count > 0 && prev.Latency > 0 && now.After(prev.At) && n.Write.Threads > 0 {
			// Latency L is the queued work per thread: its growth g, times the threads, is the work
			// arriving per second beyond what the pool serves.
			if g := (n.Write.QueueLatencySeconds - prev.Latency) / now.Sub(prev.At).Seconds(); g > 0 {
				demand = served + g*float64(n.Write.Threads)
			}
		}
		if demand == 0 && prev.Count == 0 && n.Write.Threads > 0 && n.Write.QueueLatencySeconds > limit {
			// The streak starts with this sample: at the last one the queue was under the limit, so
			// the backlog grew by the latency over the limit at least, within the interval. A lower
			// bound on the demand where a saturated pool's counters show only what it served: a node
			// hot with another one (hotWith) is planned on it before a second sample measures the
			// growth (random seed 49 of 200: node-1 served 100 % and was asked 109 %, and a copy of
			// 0.44 threads, planned to take it to 95 %, left it at 103 %).
			if interval := nodeInterval(n, snap); interval > 0 {
				demand = served + (n.Write.QueueLatencySeconds-limit)/interval*float64(n.Write.Threads)
			}
		}
		drainingDemand := 0.0
		if prev.Count > 0 && prev.Latency > 0 && now.After(prev.At) && n.Write.Threads > 0 {
			// A shrinking backlog is served faster than it fills: the pool serves its threads, so
			// the shrink, times the threads, is what the node is no longer asked for.
			if g := (n.Write.QueueLatencySeconds - prev.Latency) / now.Sub(prev.At).Seconds(); g < 0 {
				drainingDemand = max(served+g*float64(n.Write.Threads), 1e-9)
			}
		}
		if interval := nodeInterval(n, snap); n.Write.Rejected > 0 && interval > 0 && n.Write.CompletedPerSecond > 0 {
			// A full queue rejects what it cannot hold: the rejected tasks, costing what the completed
			// ones did, are demand the pool never served.
			rejectedPerSecond := float64(n.Write.Rejected) / interval
			demand = max(demand, served) + served*rejectedPerSecond/n.Write.CompletedPerSecond
		}
		s.Queue = n.Write.Queue
		s.Latency = n.Write.QueueLatencySeconds
		next[n.ID] = s
		h := Hotspot{
			Node: n.ID, NodeName: n.Name,
			QueueLatencySeconds: n.Write.QueueLatencySeconds, LatencyLimit: limit,
			Utilization: util, UtilizationLimit: cfg.HotUtilization,
			Queue: n.Write.Queue, Rejected: n.Write.Rejected, Stalled: n.Write.Stalled,
			Draining: draining, Streak: s.Count, StreakLimit: cfg.SustainedSamples, Demand: demand, DrainingDemand: drainingDemand,
			Hot:         s.Count >= cfg.SustainedSamples && !draining && s.At.Sub(s.Since) >= sustainSpan(cfg),
			SpanSeconds: s.At.Sub(s.Since).Seconds(), WindowSeconds: sustainSpan(cfg).Seconds(),
		}
		h.Reason = hotspotReason(h)
		out = append(out, h)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].QueueLatencySeconds != out[j].QueueLatencySeconds {
			return out[i].QueueLatencySeconds > out[j].QueueLatencySeconds
		}
		return out[i].NodeName < out[j].NodeName
	})
	if cfg.SaturatedWithHot {
		hotWith(out)
	}
	return out, next
}

// hotWith makes hot, with the hottest confirmed hotspot of the sample, each node still building
// its streak whose every WRITE thread is busy and whose queue is past the threshold (it met the
// criteria this sample). A step in the cluster's write load saturates several nodes at once, and
// the sustained samples are there to tell a lasting load from a burst: a hot node in the same
// sample tells it. Planned a cycle after the first node's relief, the second node's finds
// OpenSearch's balancer already returning a copy for the first (a rebalance slot was free), sharing
// the recovery rate of the first node's hot copy while its files copy, so that its translog replay
// grows with them; planned in the same cycle, the two groups fill cluster_concurrent_rebalance and
// their returns wait for the files (staged.go). Random seed 168 of 200: node-1, at 100 % with a
// 5.7 s queue when node-0's hotspot was confirmed, was relieved a cycle later, and node-0's hot
// copy, est. 17 minutes alone, took 28 beside the balancer's return. A node under saturation, or
// draining, or in a sample with no hot node, waits its samples.
func hotWith(hs []Hotspot) {
	first := slices.IndexFunc(hs, func(h Hotspot) bool { return h.Hot })
	if first < 0 {
		return
	}
	for i := range hs {
		h := &hs[i]
		if h.Hot || h.Draining || h.Utilization < 1-1e-9 {
			continue
		}
		h.Hot, h.With = true, hs[first].NodeName
		h.Reason = hotspotReason(*h)
	}
}

// sustainSpan is the least cluster time from a streak's first sample to its last for a hot verdict:
// the sustain window, (SustainedSamples−1) sampling intervals (Config.WithSampleInterval), less a
// fifth of an interval so that a scheduled sample taken a little early still counts. Samples a push or an alert asked for
// between the scheduled ones add to the count but not to the time.
func sustainSpan(cfg Config) time.Duration {
	if cfg.sampleInterval <= 0 || cfg.SustainedSamples <= 1 {
		return 0
	}
	return time.Duration(cfg.SustainedSamples-1)*cfg.sampleInterval - cfg.sampleInterval/5
}

// streakMinStep is the least cluster time between two samples a streak counts: a hot verdict needs
// SustainedSamples samples spanning at least (SustainedSamples-1)×streakMinStep, however often
// webhook pushes and alerts ask for a sample. It is the engine's minimum sampling interval.
const streakMinStep = 5 * time.Second

// drainRatio: a queue that fell by more than a tenth since the last sample is draining.
const drainRatio = 0.1

// streakGapIntervals is how many sampling intervals may lie between two samples of one streak: one
// sample lost or planned late still continues it (two intervals), an hour without detection does not.
const streakGapIntervals = 2.5

// streakBroken reports whether a stored streak is too old to continue with this snapshot. Without a
// sampling interval (a first sample) nothing says how old is too old, and the streak is kept.
func streakBroken(prev Streak, n *cluster.Node, snap *cluster.Snapshot, now time.Time) bool {
	interval := nodeInterval(n, snap)
	if prev.Count == 0 || interval <= 0 {
		return false
	}
	return now.Sub(prev.At).Seconds() > streakGapIntervals*interval
}

// nodeInterval is the time since the previous sample by the clock nodeTime reads: the node's own
// stats timestamps, or the collector's when the node gives none.
func nodeInterval(n *cluster.Node, snap *cluster.Snapshot) float64 {
	if n.IntervalSeconds > 0 && !n.StatsAt.IsZero() {
		return n.IntervalSeconds
	}
	return snap.IntervalSeconds
}

func hotspotReason(h Hotspot) string {
	q := fmt.Sprintf("estimated WRITE queue latency %.1fs ≥ %.1fs", h.QueueLatencySeconds, h.LatencyLimit)
	switch {
	case h.Stalled:
		q = fmt.Sprintf("WRITE queue of %d tasks stalled (no completions)", h.Queue)
	case h.QueueLatencySeconds < h.LatencyLimit && h.Rejected > 0:
		q = fmt.Sprintf("%d WRITE rejections", h.Rejected)
	}
	state := "hot"
	switch {
	case h.With != "":
		state = fmt.Sprintf("hot: saturated in the sample in which %s is hot", h.With)
	case h.Draining:
		state = "draining: relief under way"
	case !h.Hot && h.Streak >= h.StreakLimit:
		state = fmt.Sprintf("building: the samples span %s of the %s sustain window",
			time.Duration(h.SpanSeconds*float64(time.Second)).Round(time.Second), time.Duration(h.WindowSeconds*float64(time.Second)).Round(time.Second))
	case !h.Hot:
		state = "building"
	}
	return fmt.Sprintf("%s: %s and utilization %.0f%% ≥ %.0f%%, %d of %d samples (%s)",
		h.NodeName, q, h.Utilization*100, h.UtilizationLimit*100, h.Streak, h.StreakLimit, state)
}
