package allocation

import (
	"fmt"
	"hash/fnv"
	"math"
	"strconv"
	"time"

	"github.com/shardwise/shardwise/shared/cluster"
)

// Acting before the queue forms. A node is hot only once its WRITE queue has waited for
// SustainedSamples samples, and a relocation off it then takes minutes more (EstimateRelocation:
// a hot copy's translog replay is most of it), so on a slow ramp the queue grows the whole time
// relief is on its way. A node whose WRITE use climbs steadily toward saturation, and would
// saturate before relief started now could land, is *rising*: it is relieved as a hot node is,
// judged on the load it is projected to carry when that relief lands.
//
// The climb is read from the node's recent samples (TrendHistory, kept in the planner's memory) by
// a least-squares line, and it must be a steady climb, not noise (EstimateTrend): enough samples over
// enough time, a slope of at least trendMinSlope, a line that fits them (R² at least trendMinFit),
// a later half still climbing (not levelling off), and no single step carrying most of the rise (a
// copy arriving, a step in the load: a jump, not a climb). A flat node with jitter fails the fit.

// TrendSample is one sample of a node's WRITE utilization (Pool.Utilization, from the copies'
// indexing counters over the interval: a point sample of active threads is too noisy to fit); At is
// the snapshot time in Unix seconds.
type TrendSample struct {
	At          int64   `json:"t"`
	Utilization float64 `json:"u"`
}

// TrendHistory is a node's recent samples, oldest first, kept while the node is at or over
// HotUtilization, within TrendWindow and at most trendMaxSamples of them. Copies fingerprints the
// copies on the node (and arriving on it): when a copy arrives or leaves, the node's load changes
// for a reason that is no trend, and the history starts again.
type TrendHistory struct {
	Copies  uint64        `json:"copies"`
	Samples []TrendSample `json:"samples"`
}

const (
	// trendMinSamples is the fewest samples a trend is fitted to.
	trendMinSamples = 6
	// trendMaxSamples bounds a node's history whatever the window (120 at 30 s is an hour).
	trendMaxSamples = 40
	// trendMinSlopePerMinute: a climb slower than half a percent of the pool a minute takes over an
	// hour and a half from 50 % to saturation; the regular criteria are soon enough for it.
	trendMinSlopePerMinute = 0.005
	// trendMinFit is the least R² of the line: on a flat node with jitter the line explains little of
	// the samples' spread; on a climb, nearly all of it.
	trendMinFit = 0.8
	// trendLateShare: the later half of the samples must climb at least this share of the whole
	// line's slope; a ramp levelling off below saturation fails it.
	trendLateShare = 0.5
	// trendMaxStep: no single step between samples may carry more than this share of the line's rise
	// over the samples: a copy arriving or a step in the load is a jump, not a climb.
	trendMaxStep = 0.5
)

// copiesFingerprints returns, per node, a fingerprint of the shards it holds or is receiving: the
// sum of a hash of each, so the order of the copies does not matter.
func copiesFingerprints(snap *cluster.Snapshot) map[string]uint64 {
	out := make(map[string]uint64, len(snap.Nodes))
	h := fnv.New64a()
	var buf []byte
	for i := range snap.Copies {
		c := &snap.Copies[i]
		if c.Node == "" {
			continue
		}
		h.Reset()
		buf = append(buf[:0], c.Index...)
		buf = append(buf, '/')
		buf = strconv.AppendInt(buf, int64(c.Shard), 10)
		_, _ = h.Write(buf)
		sum := h.Sum64()
		out[c.Node] += sum
		if c.State == cluster.StateRelocating && c.RelocatingNode != "" {
			out[c.RelocatingNode] += sum
		}
	}
	return out
}

// RecordTrends adds this snapshot's WRITE utilization to each data node's history and returns the
// histories to keep. A node under HotUtilization, or whose rate is unknown this sample, keeps none (a
// cluster at rest stores nothing); a node whose copies changed, or whose last sample is more than
// streakGapIntervals sampling intervals old, starts again; the same snapshot delivered twice counts
// once. TrendWindow 0 keeps nothing.
func RecordTrends(snap *cluster.Snapshot, prev map[string]TrendHistory, cfg Config) map[string]TrendHistory {
	window := int64(cfg.TrendWindow.Std() / time.Second)
	if window <= 0 {
		return nil
	}
	var fps map[string]uint64
	next := map[string]TrendHistory{}
	at := snap.At.Unix()
	for i := range snap.Nodes {
		n := &snap.Nodes[i]
		if !n.IsData() || !n.Write.RateKnown || !n.Write.LoadKnown || n.Write.Threads <= 0 || n.Write.Utilization < cfg.HotUtilization {
			continue
		}
		if fps == nil {
			fps = copiesFingerprints(snap)
		}
		h := prev[n.ID]
		if h.Copies != fps[n.ID] {
			h = TrendHistory{Copies: fps[n.ID]}
		}
		if k := len(h.Samples); k > 0 {
			last := h.Samples[k-1].At
			switch {
			case at-last < int64(streakMinStep/time.Second):
				// The same snapshot again, or one moments after it: it counts once.
				next[n.ID] = h
				continue
			case snap.IntervalSeconds > 0 && float64(at-last) > streakGapIntervals*snap.IntervalSeconds:
				h.Samples = nil
			}
		}
		samples := make([]TrendSample, 0, min(len(h.Samples)+1, trendMaxSamples))
		for _, s := range h.Samples {
			if at-s.At <= window {
				samples = append(samples, s)
			}
		}
		samples = append(samples, TrendSample{At: at, Utilization: math.Round(n.Write.Utilization*1e4) / 1e4})
		if len(samples) > trendMaxSamples {
			samples = samples[len(samples)-trendMaxSamples:]
		}
		h.Samples = samples
		next[n.ID] = h
	}
	if len(next) == 0 {
		return nil
	}
	return next
}

// Trend is the line fitted to a node's recent WRITE utilization and whether it is a steady climb.
type Trend struct {
	Samples     int     `json:"samples"`
	SpanSeconds float64 `json:"span_seconds"`
	// Utilization is the line's value at the last sample; SlopePerMinute its slope, in utilization
	// a minute; Fit its R².
	Utilization    float64 `json:"utilization"`
	SlopePerMinute float64 `json:"slope_per_minute"`
	Fit            float64 `json:"fit"`
	// LateSlopePerMinute is the slope of the later half of the samples alone.
	LateSlopePerMinute float64 `json:"late_slope_per_minute"`
	// Steady is true for a steady climb; Reason says why it is or is not one.
	Steady bool   `json:"steady"`
	Reason string `json:"reason"`
}

// SaturatesIn is how long until the line reaches a utilization of 1 (0 when it has), for a climb.
func (t Trend) SaturatesIn() time.Duration {
	if t.SlopePerMinute <= 0 {
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(max(0, (1-t.Utilization)/t.SlopePerMinute) * float64(time.Minute))
}

// fitLine fits u = a + b·t by least squares over samples (t in minutes from the first) and returns
// the line's value at the last sample, its slope b and its R². Samples all at one time give slope 0.
func fitLine(samples []TrendSample) (last, slope, r2 float64) {
	n := float64(len(samples))
	t0 := samples[0].At
	var st, su float64
	for _, s := range samples {
		st += float64(s.At-t0) / 60
		su += s.Utilization
	}
	mt, mu := st/n, su/n
	var stt, stu, suu float64
	for _, s := range samples {
		dt, du := float64(s.At-t0)/60-mt, s.Utilization-mu
		stt += dt * dt
		stu += dt * du
		suu += du * du
	}
	if stt == 0 {
		return samples[len(samples)-1].Utilization, 0, 0
	}
	slope = stu / stt
	r2 = 1.0
	if suu > 0 {
		r2 = stu * stu / (stt * suu)
	}
	lastT := float64(samples[len(samples)-1].At-t0) / 60
	return mu + slope*(lastT-mt), slope, r2
}

// EstimateTrend fits a line to a node's samples (oldest first) and judges whether they climb
// steadily: at least trendMinSamples samples spanning at least half of TrendWindow, a slope of at
// least trendMinSlopePerMinute, an R² of at least trendMinFit, a later half climbing at least
// trendLateShare of the slope, and no step between two samples carrying more than trendMaxStep of
// the line's rise. The reason says which test failed, or the climb.
func EstimateTrend(samples []TrendSample, cfg Config) Trend {
	t := Trend{Samples: len(samples)}
	if len(samples) > 0 {
		t.SpanSeconds = float64(samples[len(samples)-1].At - samples[0].At)
		t.Utilization = samples[len(samples)-1].Utilization
	}
	minSpan := cfg.TrendWindow.Std().Seconds() / 2
	switch {
	case len(samples) < trendMinSamples:
		t.Reason = fmt.Sprintf("%d samples, fewer than the %d a trend needs", len(samples), trendMinSamples)
		return t
	case t.SpanSeconds < minSpan:
		t.Reason = fmt.Sprintf("the samples span %s, under half the trend window (%s)", roundSeconds(t.SpanSeconds), roundSeconds(minSpan))
		return t
	}
	t.Utilization, t.SlopePerMinute, t.Fit = fitLine(samples)
	half := samples[len(samples)/2:]
	if len(half) >= 3 {
		_, t.LateSlopePerMinute, _ = fitLine(half)
	}
	rise := t.SlopePerMinute * t.SpanSeconds / 60
	maxStep := 0.0
	for i := 1; i < len(samples); i++ {
		maxStep = max(maxStep, samples[i].Utilization-samples[i-1].Utilization)
	}
	switch {
	case t.SlopePerMinute < trendMinSlopePerMinute:
		t.Reason = fmt.Sprintf("flat or falling: %+.2f %%/min, under %.1f %%/min", t.SlopePerMinute*100, trendMinSlopePerMinute*100)
	case t.Fit < trendMinFit:
		t.Reason = fmt.Sprintf("noise, not a climb: the line (%+.2f %%/min) explains %.0f%% of the samples' spread, under %.0f%%",
			t.SlopePerMinute*100, t.Fit*100, trendMinFit*100)
	case t.LateSlopePerMinute < trendLateShare*t.SlopePerMinute:
		t.Reason = fmt.Sprintf("levelling off: the later %d samples climb %+.2f %%/min against %+.2f %%/min over all %d",
			len(half), t.LateSlopePerMinute*100, t.SlopePerMinute*100, len(samples))
	case maxStep > trendMaxStep*rise:
		t.Reason = fmt.Sprintf("a jump, not a climb: one step rose %.1f%% of the %.1f%% the line rises over %s",
			maxStep*100, rise*100, roundSeconds(t.SpanSeconds))
	default:
		t.Steady = true
		t.Reason = fmt.Sprintf("WRITE use %.0f%% rising %.2f %%/min over %d samples (%s, R² %.2f)",
			t.Utilization*100, t.SlopePerMinute*100, len(samples), roundSeconds(t.SpanSeconds), t.Fit)
	}
	return t
}

// Rise is a node whose WRITE use climbs steadily toward saturation and would saturate before relief
// could land if it waited: it is relieved early, as a hot node is.
type Rise struct {
	Trend Trend `json:"trend"`
	// SaturatesInSeconds is when the line reaches saturation, from this sample.
	SaturatesInSeconds float64 `json:"saturates_in_seconds"`
	// Copy is the node's first candidate in the shard-choice heuristic's order, whose relocation
	// (Relocation, with reliefOverhead) ReliefSeconds estimates; MarginSeconds is what the regular
	// criteria would wait (SustainedSamples sampling intervals).
	Copy          string             `json:"copy"`
	Relocation    RelocationEstimate `json:"relocation"`
	ReliefSeconds float64            `json:"relief_seconds"`
	MarginSeconds float64            `json:"margin_seconds"`
	// Growth is the WRITE threads the node is projected to gain, over what it carries now, by the
	// time relief started now lands (ReliefSeconds + MarginSeconds), but no further ahead than the
	// samples reach back (Trend.SpanSeconds): the planner judges it at that load.
	Growth float64 `json:"growth_threads"`
	Reason string  `json:"reason"`
}

// detectRising marks the nodes whose WRITE use climbs toward saturation sooner than relief would
// land (see Rise). A hot node is left to the regular rule; a node building its streak, or not
// meeting the criteria at all, may be rising. It returns hotspots with Rising set on those already
// listed and an entry added, not hot, for each other rising node, and the nodes whose WRITE use
// climbs steadily, rising or not yet: no target for early relief.
func detectRising(snap *cluster.Snapshot, hotspots []Hotspot, trends map[string]TrendHistory, cfg Config) ([]Hotspot, map[string]bool) {
	if len(trends) == 0 || snap.IntervalSeconds <= 0 {
		return hotspots, nil
	}
	climbing := map[string]bool{}
	excluded := map[string]bool{}
	for _, ref := range cfg.ExcludedNodes {
		if n := snap.NodeByRef(ref); n != nil {
			excluded[n.ID] = true
		}
	}
	listed := map[string]int{}
	for i, h := range hotspots {
		listed[h.Node] = i
	}
	largest := 0
	for i := range snap.Nodes {
		if n := &snap.Nodes[i]; n.IsData() && !excluded[n.ID] {
			largest = max(largest, n.Write.Threads)
		}
	}
	var (
		byNode   map[string][]*cluster.Copy
		inFlight map[string]int
	)
	for i := range snap.Nodes {
		n := &snap.Nodes[i]
		h, ok := trends[n.ID]
		if !ok || excluded[n.ID] || n.Write.Threads <= 0 {
			continue
		}
		if j, ok := listed[n.ID]; ok && hotspots[j].Hot {
			continue
		}
		tr := EstimateTrend(h.Samples, cfg)
		if !tr.Steady {
			continue
		}
		climbing[n.ID] = true
		if tr.Utilization < cfg.HotUtilization {
			continue
		}
		if byNode == nil {
			byNode, inFlight = map[string][]*cluster.Copy{}, map[string]int{}
			for k := range snap.Copies {
				c := &snap.Copies[k]
				switch {
				case c.State == cluster.StateStarted && c.Node != "":
					byNode[c.Node] = append(byNode[c.Node], c)
				case c.State == cluster.StateRelocating && c.RelocatingNode != "":
					inFlight[c.Node]++
					inFlight[c.RelocatingNode]++
				case c.State == cluster.StateInitializing && !c.Primary && c.Node != "":
					inFlight[c.Node]++
				}
			}
		}
		order := ChooseOrder(byNode[n.ID], cfg.AllocationUtilization*float64(largest), cfg.MinShardWriteLoad)
		if len(order) == 0 {
			continue
		}
		first := order[0]
		sharers := 1 + inFlight[n.ID]
		if cfg.BuiltinBalancer.Enabled {
			// A move off a node whose counts OpenSearch's balancer keeps level goes with a
			// count-neutral return, which shares the node's recovery rate: relief takes twice
			// the files' time.
			sharers++
		}
		est := EstimateRelocation(snap.Settings, cfg, first.Copy.SizeBytes, first.Load, sharers)
		relief := est.Seconds() + float64(reliefOverhead)*float64(sharers)/est.Rate
		margin := float64(cfg.SustainedSamples) * snap.IntervalSeconds
		satIn := tr.SaturatesIn().Seconds()
		if satIn > relief+margin {
			continue
		}
		// The load it is judged at is the line's when relief lands, but a line is trusted no
		// further ahead than its samples reach back: a climb seen for 5 minutes says little about
		// the load in 20.
		projected := tr.Utilization + tr.SlopePerMinute*min(relief+margin, tr.SpanSeconds)/60
		growth := projected*float64(n.Write.Threads) - n.Write.Load
		if projected < cfg.AllocationUtilization || growth <= 0 {
			// Within what the line can tell, the node stays under its goal: nothing to relieve yet.
			continue
		}
		r := &Rise{Trend: tr, SaturatesInSeconds: satIn, Copy: fmt.Sprintf("%s[%d]", first.Copy.Index, first.Copy.Shard),
			Relocation: est, ReliefSeconds: relief, MarginSeconds: margin, Growth: growth}
		r.Reason = fmt.Sprintf("%s: %s, saturates in ~%s; relieving it takes ~%s (%s[%d], %s) plus %s of detection: relieving early, as if at %.0f%%",
			n.Name, tr.Reason, roundSeconds(satIn), roundSeconds(relief), first.Copy.Index, first.Copy.Shard, est, roundSeconds(margin), projected*100)
		if j, ok := listed[n.ID]; ok {
			hotspots[j].Rising = r
			hotspots[j].Reason += "; rising: " + r.Reason
			continue
		}
		hotspots = append(hotspots, Hotspot{Node: n.ID, NodeName: n.Name,
			QueueLatencySeconds: n.Write.QueueLatencySeconds, LatencyLimit: cfg.QueueLatencyThreshold.Std().Seconds(),
			Utilization: n.Write.Utilization, UtilizationLimit: cfg.HotUtilization, Queue: n.Write.Queue,
			StreakLimit: cfg.SustainedSamples, Rising: r, Reason: "rising: " + r.Reason})
	}
	return hotspots, climbing
}
