package allocation

import "testing"

// IndexBalanceLimit is kept between calls; every change to an index's counts (a planned move, a
// tried plan taken back) and to the balance factor must show in the next answer.
func TestIndexBalanceLimitFollowsMoves(t *testing.T) {
	// "orphan" is missing from the metadata, so its busiest node's count sets its copies.
	s := newFixture("a", "b", "c").
		index("orphan", 1<<30, []float64{0, 0, 0, 0, 0, 0}, []string{"a"}, []string{"a"}, []string{"a"}, []string{"a"}, []string{"a"}, []string{"b"}).
		index("listed", 1<<30, []float64{0}, []string{"a", "b"}).snap()
	s.Indices = s.Indices[1:]
	v := NewView(s, DefaultConfig(), nil)
	move := func(shard int, from, to string) Move {
		return Move{Index: "orphan", Shard: shard, From: "id-" + from, To: "id-" + to}
	}
	var restore func()
	// With factor 1.5 over 3 nodes: 4 or 5 copies on the busiest node give ceil(ceil(n/3) × 1.5) = 3, 2 give 2.
	steps := []struct {
		name string
		do   func()
		want int
	}{
		{"as indexed: 5 on a", func() {}, 3},
		{"one moved from a to c: 4 on a", func() { v.Apply(move(0, "a", "c")) }, 3},
		{"two more moved off a: 2 at most", func() { v.Apply(move(1, "a", "c")); v.Apply(move(2, "a", "b")) }, 2},
		{"a tried plan back onto a: 4", func() { restore = v.try([]Move{move(1, "c", "a"), move(2, "b", "a")}) }, 3},
		{"the tried plan taken back: 2 at most", func() { restore() }, 2},
		{"the factor doubled", func() { v.Cfg.IndexBalanceFactor *= 2 }, 3},
	}
	for _, st := range steps {
		st.do()
		for _, ix := range []string{"orphan", "listed"} {
			want := v.indexBalanceLimit(ix, "")
			if got := v.IndexBalanceLimit(ix, "id-a"); got != want {
				t.Errorf("%s: IndexBalanceLimit(%s): got %d, want %d as worked out afresh", st.name, ix, got, want)
			}
		}
		if got := v.IndexBalanceLimit("orphan", "id-a"); got != st.want {
			t.Errorf("%s: IndexBalanceLimit(orphan): got %d, want %d", st.name, got, st.want)
		}
	}
}
