package cluster

import (
	"strconv"
	"time"
)

// Counters are the monotonically increasing OpenSearch counters one sample read, and the WRITE queue
// length beside them. Rates come from the difference of two samples; the previous sample's counters
// are stored with each snapshot.
type Counters struct {
	At     time.Time               `json:"at"`
	Nodes  map[string]NodeCounters `json:"nodes"`
	Copies map[string]CopyCounters `json:"copies"`
}

// NodeCounters are one node's thread pool counters at its own stats timestamp.
type NodeCounters struct {
	At              time.Time `json:"at"`
	WriteCompleted  int64     `json:"write_completed"`
	WriteRejected   int64     `json:"write_rejected"`
	SearchCompleted int64     `json:"search_completed"`
	SearchRejected  int64     `json:"search_rejected"`
	QueryTimeMillis int64     `json:"query_time_millis"`
	QueryTotal      int64     `json:"query_total"`
	// WriteQueue is the WRITE queue's length at At: a gauge, not a counter. How much it shrank
	// since the previous sample tells the work the pool served from its backlog apart from the work
	// that arrived (see Pool.BacklogServed).
	WriteQueue int `json:"write_queue,omitempty"`
}

// CopyCounters are one shard copy's time counters: indexing.index_time_in_millis and
// search.query_time_in_millis + search.fetch_time_in_millis.
type CopyCounters struct {
	IndexTimeMillis  int64 `json:"index_time_millis"`
	SearchTimeMillis int64 `json:"search_time_millis"`
}

// CopyKey identifies a copy across samples: a copy is the shard on a node. A copy that moved is a new
// copy whose counters start again, so its rate is unknown for one sample.
func CopyKey(index string, shard int, node string) string {
	return index + "/" + strconv.Itoa(shard) + "/" + node
}

// AppendCopyKey appends CopyKey(index, shard, node) to dst. A map lookup by
// m[string(AppendCopyKey(buf[:0], …))] builds no string: at 30,000 copies, the keys built for
// lookups alone were about 0.3 GB of allocation in the first 20 minutes of the production
// simulate.
func AppendCopyKey(dst []byte, index string, shard int, node string) []byte {
	dst = append(dst, index...)
	dst = append(dst, '/')
	dst = strconv.AppendInt(dst, int64(shard), 10)
	dst = append(dst, '/')
	return append(dst, node...)
}

// Sample is what one read of a cluster returns: the topology with raw pool figures, and counters.
type Sample struct {
	Snapshot Snapshot `json:"snapshot"`
	Counters Counters `json:"counters"`
}

// maxLoadOverThreads bounds a believable copy load: a copy cannot keep more threads busy than its node
// has, so a larger figure means the counters did not belong together (e.g. a reset between reads).
const maxLoadOverThreads = 1.5

// Derive computes the signals of cur from the previous counters (nil on the first sample):
//
//   - copy write load = Δindex_time_in_millis / 1000 / Δt, search load likewise from query+fetch time,
//     where Δt is the copy's node's stats timestamp interval, the clock its pool rates use too; the
//     collector's own clock differs from it by the response latency, and from a simulator's by its
//     speed. A node whose timestamp did not advance gives its copies unknown loads. A counter that
//     went down is a reset (the shard moved or the node restarted) and a copy seen for the first
//     time on a node has no previous value: its rate is unknown for this sample, not negative, and
//     resumes with the next one;
//   - node write utilization = Σ copy write loads on the node / WRITE pool threads;
//   - WRITE queue latency, ESTIMATED by Little's law, because OpenSearch reports no wait time for the
//     WRITE pool: latency ≈ queue / (Δcompleted / Δt). A queue with no completions is stalled;
//   - rejections = Δrejected;
//   - backlog served = the tasks the WRITE queue shrank by × the interval's thread-seconds per
//     completed task (write load / completions per second) / Δt: the part of the node's write load
//     that went to tasks queued before the interval, not to work that arrived in it.
func Derive(prev *Counters, cur Sample) Snapshot {
	s := cur.Snapshot
	if prev != nil && cur.Counters.At.After(prev.At) {
		s.IntervalSeconds = cur.Counters.At.Sub(prev.At).Seconds()
	} else {
		s.IntervalSeconds = 0
	}
	threads := make(map[string]int, len(s.Nodes))
	for i := range s.Nodes {
		threads[s.Nodes[i].ID] = s.Nodes[i].Write.Threads
	}
	interval := nodeIntervals(prev, cur.Counters)
	writeLoad := make(map[string]float64, len(s.Nodes))
	searchLoad := make(map[string]float64, len(s.Nodes))
	unknown := make(map[string]bool, len(s.Nodes))
	var key []byte
	for i := range s.Copies {
		c := &s.Copies[i]
		c.WriteLoad, c.SearchLoad, c.LoadKnown = 0, 0, false
		if !c.Active() || c.Node == "" {
			continue
		}
		key = AppendCopyKey(key[:0], c.Index, c.Shard, c.Node)
		now, ok := cur.Counters.Copies[string(key)]
		if !ok || prev == nil || s.IntervalSeconds <= 0 {
			unknown[c.Node] = true
			continue
		}
		before, seen := prev.Copies[string(key)]
		dt := interval[c.Node]
		if !seen || dt <= 0 || now.IndexTimeMillis < before.IndexTimeMillis || now.SearchTimeMillis < before.SearchTimeMillis {
			unknown[c.Node] = true
			continue
		}
		w := float64(now.IndexTimeMillis-before.IndexTimeMillis) / 1000 / dt
		r := float64(now.SearchTimeMillis-before.SearchTimeMillis) / 1000 / dt
		if t := threads[c.Node]; t > 0 && w > float64(t)*maxLoadOverThreads {
			unknown[c.Node] = true
			continue
		}
		c.WriteLoad, c.SearchLoad, c.LoadKnown = w, r, true
		writeLoad[c.Node] += w
		searchLoad[c.Node] += r
	}
	for i := range s.Nodes {
		n := &s.Nodes[i]
		n.Write.Load, n.Search.Load = writeLoad[n.ID], searchLoad[n.ID]
		n.Write.LoadKnown = !unknown[n.ID] && s.IntervalSeconds > 0
		n.Search.LoadKnown = n.Write.LoadKnown
		n.Write.Utilization = ratio(n.Write.Load, n.Write.Threads)
		n.Search.Utilization = ratio(n.Search.Load, n.Search.Threads)
		now, ok := cur.Counters.Nodes[n.ID]
		var before NodeCounters
		seen := false
		if prev != nil {
			before, seen = prev.Nodes[n.ID]
		}
		if !ok || !seen {
			continue
		}
		dt := now.At.Sub(before.At).Seconds()
		if dt <= 0 {
			// The node's own stats timestamp did not advance: the same reading again (a cached
			// answer, a frozen clock), which says nothing about completions or a stall.
			continue
		}
		n.IntervalSeconds = dt
		derivePool(&n.Write, now.WriteCompleted-before.WriteCompleted, now.WriteRejected-before.WriteRejected, dt)
		n.Write.BacklogServed = backlogServed(&n.Write, before.WriteQueue-now.WriteQueue, dt)
		derivePool(&n.Search, now.SearchCompleted-before.SearchCompleted, now.SearchRejected-before.SearchRejected, dt)
		if dq, dms := now.QueryTotal-before.QueryTotal, now.QueryTimeMillis-before.QueryTimeMillis; dq >= 0 && dms >= 0 {
			n.SearchLatencyKnown = true
			if dq > 0 {
				n.SearchLatencyMs = float64(dms) / float64(dq)
			}
		}
	}
	return s
}

// nodeIntervals returns, per node read in both samples, the seconds its stats timestamp advanced
// (0 or less when it did not).
func nodeIntervals(prev *Counters, cur Counters) map[string]float64 {
	out := make(map[string]float64, len(cur.Nodes))
	if prev == nil {
		return out
	}
	for id, now := range cur.Nodes {
		if before, ok := prev.Nodes[id]; ok {
			out[id] = now.At.Sub(before.At).Seconds()
		}
	}
	return out
}

// derivePool fills the completion rate, the Little's-law queue latency and Δrejected. Negative deltas
// mean the node restarted: the figures stay unknown for this sample.
func derivePool(p *Pool, completed, rejected int64, dt float64) {
	if completed < 0 || rejected < 0 || dt <= 0 {
		return
	}
	p.RateKnown = true
	p.Rejected = rejected
	p.CompletedPerSecond = float64(completed) / dt
	switch {
	case p.Queue == 0:
		p.QueueLatencySeconds = 0
	case completed == 0:
		// Tasks waited the whole interval and none finished: at least dt of latency.
		p.Stalled = true
		p.QueueLatencySeconds = dt
	default:
		p.QueueLatencySeconds = float64(p.Queue) / p.CompletedPerSecond
	}
}

// backlogServed is the load a pool spent on the tasks its queue shrank by: those tasks at the
// interval's thread-seconds per completed task (Load / CompletedPerSecond), over dt, at most Load.
// 0 when the queue did not shrink or the rate is unknown. A Load that lacks a copy's unknown rate
// gives a lower figure, never a higher one.
func backlogServed(p *Pool, shrank int, dt float64) float64 {
	if shrank <= 0 || !p.RateKnown || p.CompletedPerSecond <= 0 || p.Load <= 0 || dt <= 0 {
		return 0
	}
	perTask := p.Load / p.CompletedPerSecond
	return min(float64(shrank)*perTask/dt, p.Load)
}

func ratio(load float64, threads int) float64 {
	if threads <= 0 {
		return 0
	}
	return load / float64(threads)
}

// CarryLoads copies the measured signals of an earlier snapshot onto this one, matching copies by
// shard and node and nodes by id. The move function reads fresh topology just before acting but
// has no second sample to derive rates from, so it re-checks the deciders with the loads the plan saw.
// A copy without a size (the fresh topology reads no shard stats) takes the earlier copy's, or,
// where the shard has moved since, the largest of the shard's earlier copies, as a sample sizes a
// copy without stats of its own.
func (s *Snapshot) CarryLoads(from *Snapshot) {
	type shardKey struct {
		index string
		shard int
	}
	loads := make(map[string]*Copy, len(from.Copies))
	sizes := make(map[shardKey]int64, len(from.Copies)/2)
	for i := range from.Copies {
		c := &from.Copies[i]
		if c.Node != "" {
			loads[CopyKey(c.Index, c.Shard, c.Node)] = c
		}
		k := shardKey{c.Index, c.Shard}
		sizes[k] = max(sizes[k], c.SizeBytes)
	}
	writeLoad := map[string]float64{}
	var key []byte
	for i := range s.Copies {
		c := &s.Copies[i]
		key = AppendCopyKey(key[:0], c.Index, c.Shard, c.Node)
		old, ok := loads[string(key)]
		if ok {
			c.WriteLoad, c.SearchLoad, c.LoadKnown = old.WriteLoad, old.SearchLoad, old.LoadKnown
			writeLoad[c.Node] += c.WriteLoad
		}
		if c.SizeBytes == 0 {
			if ok && old.SizeBytes > 0 {
				c.SizeBytes = old.SizeBytes
			} else {
				c.SizeBytes = sizes[shardKey{c.Index, c.Shard}]
			}
		}
	}
	for i := range s.Nodes {
		n := &s.Nodes[i]
		old := from.NodeByID(n.ID)
		if old == nil {
			continue
		}
		queue, active, threads := n.Write.Queue, n.Write.Active, n.Write.Threads
		n.Write, n.Search = old.Write, old.Search
		n.Write.Queue, n.Write.Active, n.Write.Threads = queue, active, threads
		n.Write.Load = writeLoad[n.ID]
		n.Write.Utilization = ratio(n.Write.Load, threads)
		n.SearchLatencyMs, n.SearchLatencyKnown = old.SearchLatencyMs, old.SearchLatencyKnown
	}
	if s.IntervalSeconds == 0 {
		s.IntervalSeconds = from.IntervalSeconds
	}
}
