package allocation

import (
	"testing"

	"github.com/shardwise/shardwise/shared/cluster"
)

func TestShardsLimitDecider(t *testing.T) {
	// deciderBase: x[0] on a (primary) and b, x[1] on a (primary) and c. b holds 1 copy of x, c 1.
	indexLimit := func(n int) func(*fixture, *Config, map[string]bool) {
		return func(f *fixture, _ *Config, _ map[string]bool) { f.s.Indices[0].TotalShardsPerNode = n }
	}
	// y adds a copy on b, so b holds two copies in all.
	other := func(f *fixture) { f.index("y", 1<<30, []float64{0}, []string{"b"}) }
	runDeciderCases(t, shardsLimit{}, []deciderCase{
		{name: "yes: no limits set", shard: 1, from: "a", to: "b", want: Yes},
		{name: "no: target at the index limit", mutate: indexLimit(1), shard: 1, from: "a", to: "b", want: No},
		{name: "yes: target under the index limit", mutate: indexLimit(2), shard: 1, from: "a", to: "b", want: Yes},
		{name: "no: a copy relocating in counts on its target", mutate: func(f *fixture, _ *Config, _ map[string]bool) {
			f.s.Indices[0].TotalShardsPerNode = 2
			// x[0]'s copy on a is on its way to c: c owns two copies of x already.
			f.s.Copies[0].State, f.s.Copies[0].RelocatingNode = cluster.StateRelocating, "id-c"
		}, shard: 0, from: "b", to: "c", want: No},
		{name: "yes: a copy relocating out does not count on its source", mutate: func(f *fixture, _ *Config, _ map[string]bool) {
			f.s.Indices[0].TotalShardsPerNode = 1
			// b's copy of x[0] is leaving for c: b owns none of x.
			f.s.Copies[1].State, f.s.Copies[1].RelocatingNode = cluster.StateRelocating, "id-c"
		}, shard: 1, from: "c", to: "b", want: Yes},
		{name: "no: target at the cluster limit", mutate: func(f *fixture, _ *Config, _ map[string]bool) {
			other(f)
			f.s.Settings.TotalShardsPerNode = 2
		}, shard: 1, from: "a", to: "b", want: No},
		{name: "yes: target under the cluster limit", mutate: func(f *fixture, _ *Config, _ map[string]bool) {
			other(f)
			f.s.Settings.TotalShardsPerNode = 3
		}, shard: 1, from: "a", to: "b", want: Yes},
		{name: "no: a primary onto a node at the index's primary limit", mutate: func(f *fixture, _ *Config, _ map[string]bool) {
			f.s.Indices[0].TotalPrimaryShardsPerNode = 1
			f.s.Copies[1].Primary, f.s.Copies[0].Primary = true, false // b holds x[0]'s primary
		}, shard: 1, from: "a", to: "b", want: No},
		{name: "yes: a replica is not held to the primary limit", mutate: func(f *fixture, _ *Config, _ map[string]bool) {
			f.s.Indices[0].TotalPrimaryShardsPerNode = 1
			f.s.Copies[1].Primary, f.s.Copies[0].Primary = true, false
		}, shard: 1, from: "c", to: "b", want: Yes},
		{name: "no: a primary onto a node at the cluster's primary limit", mutate: func(f *fixture, _ *Config, _ map[string]bool) {
			f.index("y", 1<<30, []float64{0}, []string{"b"}) // y[0]'s primary on b
			f.s.Settings.TotalPrimaryShardsPerNode = 1
		}, shard: 1, from: "a", to: "b", want: No},
		{name: "yes: a primary onto a node under the cluster's primary limit", mutate: func(f *fixture, _ *Config, _ map[string]bool) {
			f.s.Settings.TotalPrimaryShardsPerNode = 1
		}, shard: 1, from: "a", to: "b", want: Yes},
	})
}

// TestShardsLimitFollowsPlannedMoves: a move planned this cycle counts on its target and leaves
// its source, and a tried plan taken back restores the counts, as the relief search relies on.
func TestShardsLimitFollowsPlannedMoves(t *testing.T) {
	f := deciderBase()
	f.s.Indices[0].TotalShardsPerNode = 1
	f.s.Indices[0].TotalPrimaryShardsPerNode = 1
	s := f.snap()
	v := NewView(s, DefaultConfig(), nil)
	b, c := s.NodeByRef("b"), s.NodeByRef("c")
	var x1a *cluster.Copy
	for i := range s.Copies {
		if cp := &s.Copies[i]; cp.Shard == 1 && cp.Node == "id-a" {
			x1a = cp
		}
	}
	judge := func() Decision { return shardsLimit{}.CanAllocate(v, x1a, b).Decision }
	if got := judge(); got != No {
		t.Fatalf("b holds x[0]: got %s want NO", got)
	}
	// x[0]'s replica leaves b for c: b is free for x[1]'s primary.
	m := Move{Index: "x", Shard: 0, From: b.ID, To: c.ID}
	restore := v.try([]Move{m})
	if got := judge(); got != Yes {
		t.Errorf("after x[0] leaves b: got %s want YES", got)
	}
	restore()
	if got := judge(); got != No {
		t.Errorf("after the tried move is taken back: got %s want NO", got)
	}
	// A primary moved onto c counts against c's primary limit.
	v.Apply(Move{Index: "x", Shard: 0, Primary: true, From: "id-a", To: c.ID})
	if got := (shardsLimit{}).CanAllocate(v, x1a, c); got.Decision != No {
		t.Errorf("c after x[0]'s primary lands: got %s want NO (%s)", got.Decision, got.Why())
	}
}
