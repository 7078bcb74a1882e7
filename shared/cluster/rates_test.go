package cluster

import (
	"math"
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// sample builds a one-index sample: copies maps node id → (index_time_ms, search_time_ms).
func sample(at time.Time, copies map[string][2]int64, completed, queue int64) Sample {
	s := Sample{
		Snapshot: Snapshot{Cluster: "c", At: at, Nodes: []Node{
			{ID: "n1", Name: "n1", Write: Pool{Threads: 8, Queue: int(queue)}},
			{ID: "n2", Name: "n2", Write: Pool{Threads: 8}},
		}},
		Counters: Counters{At: at, Nodes: map[string]NodeCounters{
			"n1": {At: at, WriteCompleted: completed},
			"n2": {At: at},
		}, Copies: map[string]CopyCounters{}},
	}
	for node, c := range copies {
		s.Snapshot.Copies = append(s.Snapshot.Copies, Copy{Index: "i", Shard: 0, Primary: true, State: StateStarted, Node: node})
		s.Counters.Copies[CopyKey("i", 0, node)] = CopyCounters{IndexTimeMillis: c[0], SearchTimeMillis: c[1]}
	}
	return s
}

func TestDeriveRates(t *testing.T) {
	cases := []struct {
		name      string
		prev, cur Sample
		noPrev    bool
		// nodeStats, when set, moves the nodes' stats timestamps of cur, which the sample
		// builder sets to the collector's clock.
		nodeStats   time.Time
		wantKnown   bool
		wantWrite   float64
		wantLatency float64
		wantStalled bool
		// wantInterval, when set, is n1's interval by its own stats timestamps.
		wantInterval float64
	}{
		{
			name: "steady counters give a rate",
			prev: sample(t0, map[string][2]int64{"n1": {0, 0}}, 0, 0),
			cur:  sample(t0.Add(30*time.Second), map[string][2]int64{"n1": {60_000, 3_000}}, 600, 40),
			// 60 s of indexing over 30 s = 2 threads; 40 queued / 20 completions per s = 2 s.
			wantKnown: true, wantWrite: 2, wantLatency: 2, wantInterval: 30,
		},
		{
			name:   "first sample has no rate",
			cur:    sample(t0, map[string][2]int64{"n1": {60_000, 0}}, 0, 0),
			noPrev: true,
		},
		{
			name: "counter went down: reset, no negative rate",
			prev: sample(t0, map[string][2]int64{"n1": {90_000, 0}}, 0, 0),
			cur:  sample(t0.Add(30*time.Second), map[string][2]int64{"n1": {1_000, 0}}, 600, 0),
		},
		{
			name: "copy new on its node (relocated): unknown this sample",
			prev: sample(t0, map[string][2]int64{"n2": {90_000, 0}}, 0, 0),
			cur:  sample(t0.Add(30*time.Second), map[string][2]int64{"n1": {3_000, 0}}, 600, 0),
		},
		{
			name: "implausibly huge rate is treated as unknown",
			prev: sample(t0, map[string][2]int64{"n1": {0, 0}}, 0, 0),
			cur:  sample(t0.Add(30*time.Second), map[string][2]int64{"n1": {30_000_000, 0}}, 600, 0),
		},
		{
			name:        "queue with no completions is stalled",
			prev:        sample(t0, map[string][2]int64{"n1": {0, 0}}, 100, 0),
			cur:         sample(t0.Add(30*time.Second), map[string][2]int64{"n1": {0, 0}}, 100, 50),
			wantKnown:   true,
			wantLatency: 30, wantStalled: true,
		},
		{
			// A simulator at 60× speed: 30 s between reads by the collector's clock, 30 min by
			// the nodes'. 1,800 s of indexing over 1,800 s is 1 thread, not 60.
			name:      "copy load uses its node's stats interval, not the collector's",
			prev:      sample(t0, map[string][2]int64{"n1": {0, 0}}, 0, 0),
			cur:       sample(t0.Add(30*time.Second), map[string][2]int64{"n1": {1_800_000, 0}}, 36_000, 40),
			nodeStats: t0.Add(30 * time.Minute),
			wantKnown: true, wantWrite: 1, wantLatency: 2, wantInterval: 1800,
		},
		{
			name:      "node stats timestamp did not advance: load unknown, not 0",
			prev:      sample(t0, map[string][2]int64{"n1": {0, 0}}, 0, 0),
			cur:       sample(t0.Add(30*time.Second), map[string][2]int64{"n1": {0, 0}}, 0, 0),
			nodeStats: t0,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var prev *Counters
			if !tc.noPrev {
				prev = &tc.prev.Counters
			}
			if !tc.nodeStats.IsZero() {
				for id, n := range tc.cur.Counters.Nodes {
					n.At = tc.nodeStats
					tc.cur.Counters.Nodes[id] = n
				}
			}
			s := Derive(prev, tc.cur)
			c := s.Copies[0]
			if c.LoadKnown != tc.wantKnown {
				t.Fatalf("known: got %v want %v", c.LoadKnown, tc.wantKnown)
			}
			if c.WriteLoad < 0 || math.Abs(c.WriteLoad-tc.wantWrite) > 1e-9 {
				t.Errorf("write load: got %v want %v", c.WriteLoad, tc.wantWrite)
			}
			n1 := s.NodeByID("n1")
			if n1.Write.LoadKnown != tc.wantKnown {
				t.Errorf("node load known: got %v want %v", n1.Write.LoadKnown, tc.wantKnown)
			}
			if !tc.noPrev && math.Abs(n1.Write.QueueLatencySeconds-tc.wantLatency) > 1e-9 {
				t.Errorf("queue latency: got %v want %v", n1.Write.QueueLatencySeconds, tc.wantLatency)
			}
			if n1.Write.Stalled != tc.wantStalled {
				t.Errorf("stalled: got %v want %v", n1.Write.Stalled, tc.wantStalled)
			}
			if tc.wantInterval != 0 && n1.IntervalSeconds != tc.wantInterval {
				t.Errorf("node interval: got %v want %v", n1.IntervalSeconds, tc.wantInterval)
			}
		})
	}
}

// A relocated copy yields no rate for one sample and then resumes correctly.
func TestDeriveResumesAfterRelocation(t *testing.T) {
	s1 := sample(t0, map[string][2]int64{"n1": {100_000, 0}}, 0, 0)
	s2 := sample(t0.Add(30*time.Second), map[string][2]int64{"n2": {0, 0}}, 0, 0) // moved to n2, counters restart
	s3 := sample(t0.Add(60*time.Second), map[string][2]int64{"n2": {45_000, 0}}, 0, 0)
	d2 := Derive(&s1.Counters, s2)
	if d2.Copies[0].LoadKnown {
		t.Fatalf("sample after relocation: got known rate %v, want unknown", d2.Copies[0].WriteLoad)
	}
	d3 := Derive(&s2.Counters, s3)
	if !d3.Copies[0].LoadKnown || math.Abs(d3.Copies[0].WriteLoad-1.5) > 1e-9 {
		t.Fatalf("next sample: got known=%v load=%v, want known 1.5", d3.Copies[0].LoadKnown, d3.Copies[0].WriteLoad)
	}
	if got := d3.NodeByID("n2").Write.Load; math.Abs(got-1.5) > 1e-9 {
		t.Fatalf("node load: got %v want 1.5", got)
	}
}

// A node whose stats timestamp did not advance gives no pool rates: the same reading twice is not
// a stalled queue.
func TestDeriveSameNodeReading(t *testing.T) {
	prev := sample(t0, map[string][2]int64{"n1": {0, 0}}, 100, 50)
	cur := sample(t0.Add(30*time.Second), map[string][2]int64{"n1": {0, 0}}, 100, 50)
	for id, c := range cur.Counters.Nodes {
		c.At = prev.Counters.Nodes[id].At
		cur.Counters.Nodes[id] = c
	}
	d := Derive(&prev.Counters, cur)
	n1 := d.NodeByID("n1")
	if n1.Write.RateKnown || n1.Write.Stalled {
		t.Errorf("same reading: got rate known %v, stalled %v; want neither", n1.Write.RateKnown, n1.Write.Stalled)
	}
}

// A pool draining a backlog serves more than arrives: the tasks its queue shrank by, at the
// interval's thread-seconds per completed task, are load served that did not arrive in the interval.
func TestDeriveBacklogServed(t *testing.T) {
	cases := []struct {
		name string
		// indexMillis and completed are n1's deltas over the 30 s interval; queues its WRITE queue
		// at the previous and the current sample (-1: not in the previous counters).
		indexMillis, completed int64
		queues                 [2]int
		noRate                 bool // the completed counter went down: a restart
		wantLoad, wantBacklog  float64
	}{
		{
			// 8 threads served; 4,800 completions are 0.05 thread-seconds each; the queue shrank by
			// 207 tasks, 10.35 thread-seconds over 30 s: 0.345 threads of the 8 were backlog.
			name: "queue shrank: its tasks at the interval's cost were served from the backlog", indexMillis: 240_000, completed: 4_800,
			queues: [2]int{3_852, 3_645}, wantLoad: 8, wantBacklog: 0.345,
		},
		{
			// 450 tasks queued before the interval drained within it: 0.75 of 7.5 threads served.
			name: "queue drained within the interval", indexMillis: 225_000, completed: 4_500,
			queues: [2]int{450, 0}, wantLoad: 7.5, wantBacklog: 0.75,
		},
		{
			name: "queue grew: nothing served from a backlog", indexMillis: 240_000, completed: 4_800,
			queues: [2]int{78, 1_632}, wantLoad: 8,
		},
		{
			name: "queue unchanged", indexMillis: 240_000, completed: 4_800,
			queues: [2]int{78, 78}, wantLoad: 8,
		},
		{
			// Counters stored before the queue was kept read as an empty queue: it cannot have shrunk.
			name: "previous counters without a queue", indexMillis: 240_000, completed: 4_800,
			queues: [2]int{-1, 500}, wantLoad: 8,
		},
		{
			name: "node restarted: no completion rate, nothing known of the backlog", indexMillis: 240_000, completed: 4_800,
			queues: [2]int{3_852, 0}, noRate: true, wantLoad: 8,
		},
		{
			// A queue reading that does not belong with the counters: never more than was served.
			name: "a shrink larger than the load served is capped at the load", indexMillis: 30_000, completed: 600,
			queues: [2]int{10_000, 0}, wantLoad: 1, wantBacklog: 1,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			prev := sample(t0, map[string][2]int64{"n1": {0, 0}}, 10_000, 0)
			cur := sample(t0.Add(30*time.Second), map[string][2]int64{"n1": {tc.indexMillis, 0}}, 10_000+tc.completed, int64(tc.queues[1]))
			if tc.noRate {
				cur = sample(t0.Add(30*time.Second), map[string][2]int64{"n1": {tc.indexMillis, 0}}, tc.completed, int64(tc.queues[1]))
			}
			if tc.queues[0] >= 0 {
				c := prev.Counters.Nodes["n1"]
				c.WriteQueue = tc.queues[0]
				prev.Counters.Nodes["n1"] = c
			}
			c := cur.Counters.Nodes["n1"]
			c.WriteQueue = tc.queues[1]
			cur.Counters.Nodes["n1"] = c
			d := Derive(&prev.Counters, cur)
			n1 := d.NodeByID("n1")
			if math.Abs(n1.Write.Load-tc.wantLoad) > 1e-9 || math.Abs(n1.Write.BacklogServed-tc.wantBacklog) > 1e-9 {
				t.Errorf("load %v, backlog served %v: want %v and %v", n1.Write.Load, n1.Write.BacklogServed, tc.wantLoad, tc.wantBacklog)
			}
			if got, want := n1.Write.Arrived(), tc.wantLoad-tc.wantBacklog; math.Abs(got-want) > 1e-9 {
				t.Errorf("arrived: got %v want %v", got, want)
			}
		})
	}
}

// TestAppendCopyKey: the bytes AppendCopyKey appends are CopyKey's string, whatever the buffer
// held, for every shard number and empty names.
func TestAppendCopyKey(t *testing.T) {
	for _, tc := range []struct {
		index string
		shard int
		node  string
	}{
		{"logs-000001", 0, "Qm8kKmrzTdqjtgqbh0N9tQ"},
		{"events-7", 49, "node-a"},
		{"", 0, ""},
		{"x", -1, "n"},
		{"a/b", 1 << 40, "c/d"},
	} {
		want := CopyKey(tc.index, tc.shard, tc.node)
		buf := []byte("left over from an earlier key")
		if got := string(AppendCopyKey(buf[:0], tc.index, tc.shard, tc.node)); got != want {
			t.Errorf("AppendCopyKey(%q, %d, %q) = %q, want %q", tc.index, tc.shard, tc.node, got, want)
		}
		if got := string(AppendCopyKey([]byte("p:"), tc.index, tc.shard, tc.node)); got != "p:"+want {
			t.Errorf("AppendCopyKey after %q = %q, want %q", "p:", got, "p:"+want)
		}
	}
}
