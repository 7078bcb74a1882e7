package allocation

import "testing"

// Each weighing of a hot node's copies has the candidate bound to itself: quicker and bundle weigh
// them again, once for each set of quick copies and each part, and a bound shared by the whole
// search left the last and largest set of quick copies no candidate at all (random seed 168 of
// 200: the six smaller sets of node-0's cool copies took all 48).
func TestReliefCandidateBoundPerWeighing(t *testing.T) {
	f := newFixture("a", "b").
		index("x", 1<<30, []float64{3}, []string{"a"}).
		index("y", 1<<30, []float64{5.5}, []string{"a"}).
		queueing("a", 6)
	cfg := DefaultConfig()
	cfg.BuiltinBalancer.Enabled = false
	v := NewView(f.snap(), cfg, nil)
	v.hot = map[string]bool{"id-a": true}
	p := &planner{v: v, plan: Plan{Moves: []Move{}}, settling: map[string]bool{}}
	a := v.Node("id-a")
	order := ChooseOrder(p.copiesOn(a.ID), cfg.AllocationUtilization*8, cfg.MinShardWriteLoad)
	s := &search{p: p, src: a, bounds: SearchBounds{MaxEvaluations: searchEvaluations, MaxWeighings: searchWeighings,
		MaxCandidates: searchCandidates, MaxReturns: swapReturns, MaxChainDepth: chainDepth}}
	// Earlier weighings of the same search tried the bound's worth of candidates.
	s.bounds.Candidates = searchCandidates
	o := s.one(order, v.Goal(a.ID))
	if o == nil {
		t.Fatalf("no group: the weighing had no candidate left (bounds %s)", s.bounds)
	}
	if m := o.group[o.hot()]; m.Index != "x" || m.ToName != "b" {
		t.Errorf("group: got %s[%d] to %s, want x[0] to b", m.Index, m.Shard, m.ToName)
	}
	if s.bounds.Candidates != searchCandidates {
		t.Errorf("candidates: got %d, want the most one weighing tried, %d", s.bounds.Candidates, searchCandidates)
	}
}
