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

// Every way the planner tries moves on the view and takes them back (try, nested tries, a group
// judged and not kept, a builtin-balancer measurement) puts every projected figure back exactly:
// the view's one undo stack.
func TestViewTryRestores(t *testing.T) {
	moves := []Move{
		{Index: "x", Shard: 1, Primary: true, From: "id-a", To: "id-b", WriteLoad: 1, SizeBytes: 10 << 30},
		{Index: "x", Shard: 0, From: "id-b", To: "id-c", WriteLoad: 2, SizeBytes: 10 << 30},
	}
	cases := []struct {
		name string
		// tried applies moves, checks what it must on the view with them applied, and takes them back.
		tried func(t *testing.T, v *View)
	}{
		{"try", func(t *testing.T, v *View) {
			restore := v.try(moves)
			if got := v.WriteLoad("id-c"); got != 3 {
				t.Fatalf("applied: c carries %v threads, want 3", got)
			}
			if !v.Holds("id-b", cluster.ShardID{Index: "x", Shard: 1}) || v.NodePrimaries("id-b") != 1 || v.IndexPrimaries("x", "id-a") != 1 {
				t.Fatalf("applied: b holds x[1] %v with %d primaries, a %d primaries of x; want true, 1, 1",
					v.Holds("id-b", cluster.ShardID{Index: "x", Shard: 1}), v.NodePrimaries("id-b"), v.IndexPrimaries("x", "id-a"))
			}
			restore()
		}},
		{"nested tries, newest back first", func(t *testing.T, v *View) {
			outer := v.try(moves[:1])
			inner := v.try(moves[1:])
			if got := v.NodeCopies("id-b"); got != 1 {
				t.Fatalf("applied: b holds %d copies, want 1", got)
			}
			inner()
			if got := v.NodeCopies("id-b"); got != 2 {
				t.Fatalf("inner taken back: b holds %d copies, want 2", got)
			}
			outer()
		}},
		{"a group judged and not kept", func(t *testing.T, v *View) {
			if _, ok := admitGroup(v, moves[:1], false); !ok {
				t.Fatal("the group was refused: the case needs it admitted")
			}
		}},
		{"a builtin-balancer measurement", func(t *testing.T, v *View) {
			v.Cfg.BuiltinBalancer.Enabled = true
			v.invitesBuiltin(moves)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture("a", "b", "c").
				index("x", 10<<30, []float64{2, 1}, []string{"a", "b"}, []string{"a", "c"})
			snap := f.snap()
			snap.Settings.TotalPrimaryShardsPerNode = 5 // primaries are counted
			v := NewView(snap, DefaultConfig(), nil)
			type figures struct {
				load                float64
				disk                int64
				heap                float64
				copies, index       int
				primaries, indexPri int
				holds0, holds1      bool
			}
			read := func(node string) figures {
				return figures{v.WriteLoad(node), v.figures(node).diskUsed, v.figures(node).heapUsed, v.NodeCopies(node), v.IndexCopies("x", node),
					v.NodePrimaries(node), v.IndexPrimaries("x", node),
					v.Holds(node, cluster.ShardID{Index: "x", Shard: 0}), v.Holds(node, cluster.ShardID{Index: "x", Shard: 1})}
			}
			before := map[string]figures{}
			for _, n := range []string{"id-a", "id-b", "id-c"} {
				before[n] = read(n)
			}
			counted, shares := v.counted, len(v.indexOn["x"])
			tc.tried(t, v)
			for n, want := range before {
				if got := read(n); got != want {
					t.Errorf("%s after restore: got %+v want %+v", n, got, want)
				}
			}
			if v.counted != counted || len(v.indexOn["x"]) != shares || len(v.undo) != 0 {
				t.Errorf("after restore: counts' number %d (want %d), x listed on %d nodes (want %d), %d undo steps left (want 0)",
					v.counted, counted, len(v.indexOn["x"]), shares, len(v.undo))
			}
		})
	}
}
