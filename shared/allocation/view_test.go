package allocation

import (
	"testing"

	"github.com/shardwise/shardwise/shared/cluster"
)

func TestViewProjection(t *testing.T) {
	base := func() *fixture {
		return newFixture("a", "b", "c").
			index("x", 10<<30, []float64{2, 1}, []string{"a", "b"}, []string{"a", "c"})
	}
	cases := []struct {
		name string
		snap func() *cluster.Snapshot
		want map[string]float64 // node → projected WRITE threads
	}{
		{"as measured", func() *cluster.Snapshot { return base().snap() }, map[string]float64{"id-a": 3, "id-b": 2, "id-c": 1}},
		{"a relocation in flight counts as done", func() *cluster.Snapshot {
			s := base().snap()
			s.Copies[0].State, s.Copies[0].RelocatingNode = cluster.StateRelocating, "id-c"
			return s
		}, map[string]float64{"id-a": 1, "id-b": 2, "id-c": 3}},
		{"a copy with no rate yet bears its shard's load", func() *cluster.Snapshot {
			s := base().snap()
			s.Copies[1].LoadKnown, s.Copies[1].WriteLoad = false, 0
			s.Nodes[1].Write.Load = 0
			return s
		}, map[string]float64{"id-a": 3, "id-b": 2, "id-c": 1}},
		{"a hot node's undercounted load is at least its active threads", func() *cluster.Snapshot {
			s := base().snap()
			s.Nodes[0].Write.Active = 8
			return s
		}, map[string]float64{"id-a": 8, "id-b": 2, "id-c": 1}},
		{"a cool node's active threads are a passing gauge, not its load", func() *cluster.Snapshot {
			s := base().snap()
			s.Nodes[1].Write.Active = 8
			return s
		}, map[string]float64{"id-a": 3, "id-b": 2, "id-c": 1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v := NewView(tc.snap(), DefaultConfig(), map[string]bool{"id-a": true})
			for node, want := range tc.want {
				if got := v.WriteLoad(node); got != want {
					t.Errorf("%s: got %v threads want %v", node, got, want)
				}
			}
		})
	}
}

// try applies moves and its restore puts every projected figure back exactly.
func TestViewTryRestores(t *testing.T) {
	f := newFixture("a", "b", "c").
		index("x", 10<<30, []float64{2, 1}, []string{"a", "b"}, []string{"a", "c"})
	v := NewView(f.snap(), DefaultConfig(), nil)
	type figures struct {
		load          float64
		disk          int64
		heap          float64
		copies, index int
		holds         bool
	}
	read := func(node string) figures {
		return figures{v.WriteLoad(node), v.figures(node).diskUsed, v.figures(node).heapUsed, v.NodeCopies(node), v.IndexCopies("x", node),
			v.Holds(node, cluster.ShardID{Index: "x", Shard: 1})}
	}
	before := map[string]figures{}
	for _, n := range []string{"id-a", "id-b", "id-c"} {
		before[n] = read(n)
	}
	moves := []Move{
		{Index: "x", Shard: 1, From: "id-a", To: "id-b", WriteLoad: 1, SizeBytes: 10 << 30},
		{Index: "x", Shard: 0, From: "id-b", To: "id-c", WriteLoad: 2, SizeBytes: 10 << 30},
	}
	restore := v.try(moves)
	if got := v.WriteLoad("id-c"); got != 3 {
		t.Fatalf("applied: c carries %v threads, want 3", got)
	}
	if !v.Holds("id-b", cluster.ShardID{Index: "x", Shard: 1}) {
		t.Fatal("applied: b does not hold x[1]")
	}
	restore()
	for n, want := range before {
		if got := read(n); got != want {
			t.Errorf("%s after restore: got %+v want %+v", n, got, want)
		}
	}
}
