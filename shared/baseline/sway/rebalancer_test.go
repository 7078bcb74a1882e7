package sway

import (
	"errors"
	"fmt"
	"testing"

	"github.com/shardwise/shardwise/shared/cluster"
)

const gib = int64(1) << 30

// node is a data node with 100 GiB of disk and 1 GiB of heap, heapPct of it used; its disk use is
// the bytes of its copies, as Sway's projection counts it.
type node struct {
	name    string
	heapPct int64
}

// cp is a started copy of shard 0 of index on node, sizeGiB large.
type cp struct {
	index   string
	primary bool
	node    string
	sizeGiB int64
}

func snapshot(nodes []node, copies []cp) cluster.Snapshot {
	s := cluster.Snapshot{Health: "green"}
	used := map[string]int64{}
	for _, c := range copies {
		s.Copies = append(s.Copies, cluster.Copy{Index: c.index, Shard: 0, Primary: c.primary, State: cluster.StateStarted,
			Node: c.node, SizeBytes: c.sizeGiB * gib})
		used[c.node] += c.sizeGiB * gib
	}
	for _, n := range nodes {
		s.Nodes = append(s.Nodes, cluster.Node{ID: "id-" + n.name, Name: n.name, Roles: []string{"data"},
			HeapMaxBytes: gib, HeapUsedBytes: n.heapPct * gib / 100, DiskTotalBytes: 100 * gib, DiskAvailableBytes: 100*gib - used[n.name]})
	}
	for i := range s.Copies {
		s.Copies[i].Node = "id-" + s.Copies[i].Node
	}
	return s
}

// hotOne is a cluster with one hot node (n0: 90 % heap, 75 GiB of shards) and three cool ones.
func hotOne(extra ...cp) cluster.Snapshot {
	copies := []cp{
		{"logs-a", true, "n0", 10}, {"logs-b", true, "n0", 30}, {"logs-c", true, "n0", 20}, {"logs-d", true, "n0", 15},
		{"x", true, "n1", 5}, {"y", true, "n2", 5}, {"z", true, "n3", 5},
	}
	return snapshot([]node{{"n0", 90}, {"n1", 30}, {"n2", 35}, {"n3", 40}}, append(copies, extra...))
}

// manySmall is a hot node with thirty 2 GiB shards: each move takes little off its score, so the
// skew target is further than five moves.
func manySmall() cluster.Snapshot {
	var copies []cp
	for i := range 30 {
		copies = append(copies, cp{fmt.Sprintf("idx-%02d", i), true, "n0", 2})
	}
	copies = append(copies, cp{"x", true, "n1", 2}, cp{"y", true, "n2", 2})
	return snapshot([]node{{"n0", 95}, {"n1", 20}, {"n2", 20}}, copies)
}

func TestSwayDecide(t *testing.T) {
	moveList := func(d Decision) []string {
		var out []string
		for _, m := range d.Moves {
			out = append(out, fmt.Sprintf("%s %s→%s %dGiB", m.Index, m.FromName, m.ToName, m.SizeBytes/gib))
		}
		return out
	}
	cases := []struct {
		name    string
		snap    cluster.Snapshot
		latency float64
		cfg     func(*Config)
		// want lists the moves in order; nil wants none.
		want        []string
		wantOpen    bool
		wantReason  string
		wantTarget  bool
		checkSkewAt bool // the target was reached by the last move, not before
	}{
		{
			// Scores: n0 0.4·0.9 + 0.4·0.75 + 0.2 = 0.86 (hot); n1 0.16, n2 0.18, n3 0.20. The 30 GiB
			// shard goes first to the coolest node, n1; that alone cuts the skew by more than 25 %.
			name: "hot node: largest shard first, to the coolest node, then stop at the skew target",
			snap: hotOne(), want: []string{"logs-b n0→n1 30GiB"}, wantTarget: true, checkSkewAt: true,
		},
		{
			// A higher target needs more moves: the next largest, each to the coolest node as the
			// projection changes.
			name: "hot node with a 50 % target: largest first, each to the then coolest node",
			snap: hotOne(), cfg: func(c *Config) { c.SkewReductionTarget = 0.5 },
			want:       []string{"logs-b n0→n1 30GiB", "logs-c n0→n2 20GiB"},
			wantTarget: true, checkSkewAt: true,
		},
		{
			name: "at most 5 moves per cycle, target not met",
			snap: manySmall(),
			want: []string{"idx-00 n0→n1 2GiB", "idx-01 n0→n2 2GiB", "idx-02 n0→n1 2GiB", "idx-03 n0→n2 2GiB", "idx-04 n0→n1 2GiB"},
		},
		{
			name: "a configured cap of 2 moves",
			snap: manySmall(), cfg: func(c *Config) { c.MaxMovesPerCycle = 2 },
			want: []string{"idx-00 n0→n1 2GiB", "idx-01 n0→n2 2GiB"},
		},
		{
			// n1 holds a replica of logs-b: the largest shard goes to n2, the next coolest.
			name: "a node holding a copy of the shard is skipped",
			snap: hotOne(cp{"logs-b", false, "n1", 30}),
			want: []string{"logs-b n0→n2 30GiB"}, wantTarget: true,
		},
		{
			// Every other node would pass 90 % of its disk with the 30 GiB shard, none with 20 GiB:
			// the largest candidate has no destination and the next is taken.
			name: "no destination for the largest shard: the next one moves",
			snap: hotOne(cp{"f1", true, "n1", 56}, cp{"f2", true, "n2", 56}, cp{"f3", true, "n3", 56}),
			want: []string{"logs-c n0→n1 20GiB"}, wantTarget: true,
		},
		{
			name: "balanced cluster: nothing hot, nothing moves",
			snap: snapshot([]node{{"n0", 40}, {"n1", 40}, {"n2", 40}},
				[]cp{{"a", true, "n0", 20}, {"b", true, "n1", 20}, {"c", true, "n2", 20}}),
		},
		{
			name:     "breaker open: health yellow",
			snap:     func() cluster.Snapshot { s := hotOne(); s.Health = "yellow"; return s }(),
			wantOpen: true, wantReason: "failed checks: cluster health yellow (limit >= green)",
		},
		{
			name: "breaker open: a shard relocating",
			snap: func() cluster.Snapshot {
				s := hotOne()
				s.Copies[0].State, s.Copies[0].RelocatingNode = cluster.StateRelocating, "id-n2"
				return s
			}(),
			wantOpen: true, wantReason: "failed checks: relocating shards 1 (limit <= 0)",
		},
		{
			name: "breaker open: search latency over 200 ms", snap: hotOne(), latency: 200.5,
			wantOpen: true, wantReason: "failed checks: avg search latency 200.5ms (limit <= 200ms)",
		},
		{
			// Sway's checkLatency passes at the limit (lat <= max), whatever its README says.
			name: "breaker closed at exactly 200 ms", snap: hotOne(), latency: 200,
			want: []string{"logs-b n0→n1 30GiB"}, wantTarget: true,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Default()
			if tc.cfg != nil {
				tc.cfg(&cfg)
			}
			d, err := Rebalancer{Config: cfg}.Decide(Input{Snapshot: tc.snap, SearchLatencyMs: tc.latency})
			if err != nil {
				t.Fatalf("Decide: %v", err)
			}
			if d.Breaker.Open != tc.wantOpen {
				t.Errorf("breaker open: got %v want %v (%s)", d.Breaker.Open, tc.wantOpen, d.Breaker.Reason())
			}
			if got := d.Breaker.Reason(); got != tc.wantReason {
				t.Errorf("breaker reason: got %q want %q", got, tc.wantReason)
			}
			got := moveList(d)
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("moves: got %q want %q", got, tc.want)
			}
			if len(d.Moves) > cfg.MaxMovesPerCycle {
				t.Errorf("moves: got %d want at most %d", len(d.Moves), cfg.MaxMovesPerCycle)
			}
			if d.TargetMet != tc.wantTarget {
				t.Errorf("target met: got %v want %v (skew %.4f→%.4f, %.1f %%)", d.TargetMet, tc.wantTarget, d.CurrentSkew, d.ProjectedSkew, 100*d.SkewReduction)
			}
			for i := 1; i < len(d.Moves); i++ {
				if d.Moves[i].SizeBytes > d.Moves[i-1].SizeBytes {
					t.Errorf("move %d: %d bytes after %d, want largest first", i, d.Moves[i].SizeBytes, d.Moves[i-1].SizeBytes)
				}
			}
			for i, m := range d.Moves {
				if m.Reason.SourceScore < cfg.HotNodeThreshold {
					t.Errorf("move %d: source score %.2f under the threshold %.2f", i, m.Reason.SourceScore, cfg.HotNodeThreshold)
				}
			}
			if tc.checkSkewAt {
				last := d.Moves[len(d.Moves)-1].Reason
				if before := 1 - last.SkewBefore/d.CurrentSkew; before >= cfg.SkewReductionTarget {
					t.Errorf("skew reduction before the last move: got %.3f, want under the target %.2f (a move too many)", before, cfg.SkewReductionTarget)
				}
			}
		})
	}
}

func TestSwayDecideErrors(t *testing.T) {
	cases := []struct {
		name string
		cfg  Config
		snap cluster.Snapshot
		want error
	}{
		{name: "no data nodes", cfg: Default(), snap: cluster.Snapshot{Health: "green",
			Nodes: []cluster.Node{{ID: "m", Name: "m", Roles: []string{"cluster_manager"}}}}, want: ErrNoDataNodes},
		{name: "zero moves per cycle", cfg: func() Config { c := Default(); c.MaxMovesPerCycle = 0; return c }(), snap: hotOne(), want: ErrInvalidConfig},
		{name: "unknown health", cfg: func() Config { c := Default(); c.RequiredHealth = "blue"; return c }(), snap: hotOne(), want: ErrInvalidConfig},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Rebalancer{Config: tc.cfg}.Decide(Input{Snapshot: tc.snap})
			if !errors.Is(err, tc.want) {
				t.Errorf("error: got %v want %v", err, tc.want)
			}
		})
	}
}

func TestSwayObserve(t *testing.T) {
	snap := snapshot([]node{{"n0", 50}, {"n1", 50}, {"n2", 50}}, nil)
	snap.Nodes = append(snap.Nodes, cluster.Node{ID: "m", Name: "m", Roles: []string{"cluster_manager"}})
	cases := []struct {
		name     string
		counters map[string]cluster.NodeCounters
		want     float64
	}{
		{name: "no queries yet", want: 0},
		{
			// Cumulative: 300 ms over 10 queries and 100 ms over 10; n2 has served none and the
			// manager node holds no data.
			name: "mean of the data nodes' cumulative averages",
			counters: map[string]cluster.NodeCounters{
				"id-n0": {QueryTimeMillis: 300, QueryTotal: 10}, "id-n1": {QueryTimeMillis: 100, QueryTotal: 10},
				"id-n2": {}, "m": {QueryTimeMillis: 5000, QueryTotal: 1},
			},
			want: 20,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := Observe(cluster.Sample{Snapshot: snap, Counters: cluster.Counters{Nodes: tc.counters}}).SearchLatencyMs
			if got != tc.want {
				t.Errorf("search latency: got %v want %v", got, tc.want)
			}
		})
	}
}
