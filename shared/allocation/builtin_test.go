package allocation

import "testing"

func TestInvitesBuiltin(t *testing.T) {
	// Six copies of x and six of y, two of each per node: level counts, spread 0.
	base := func() *View {
		f := newFixture("a", "b", "c").
			index("x", 1<<30, []float64{1, 1, 1}, []string{"a", "b"}, []string{"b", "c"}, []string{"c", "a"}).
			index("y", 1<<30, []float64{0, 0, 0}, []string{"a", "b"}, []string{"b", "c"}, []string{"c", "a"})
		return NewView(f.snap(), DefaultConfig(), nil)
	}
	cases := []struct {
		name  string
		moves []Move
		want  bool
	}{
		{"a lone move unbalances counts past the threshold", []Move{{Index: "x", Shard: 0, From: "id-a", To: "id-c"}}, true},
		{"a same-index swap keeps every spread level", []Move{
			{Index: "x", Shard: 0, From: "id-a", To: "id-c"},
			{Index: "x", Shard: 1, From: "id-c", To: "id-a"},
		}, false},
		{"a swap across indices levels node counts but not the index's", []Move{
			{Index: "x", Shard: 0, From: "id-a", To: "id-c"},
			{Index: "y", Shard: 1, From: "id-c", To: "id-a"},
		}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v := base()
			got, ix, spread := v.invitesBuiltin(tc.moves)
			if got != tc.want {
				t.Errorf("got %v (index %s spread %.2f) want %v", got, ix, spread, tc.want)
			}
			if v.NodeCopies("id-a") != 4 || v.NodeCopies("id-c") != 4 {
				t.Errorf("counts changed by measuring: a %d c %d, want 4 and 4", v.NodeCopies("id-a"), v.NodeCopies("id-c"))
			}
		})
	}
	off := DefaultConfig()
	off.BuiltinBalancer.Enabled = false
	v := NewView(newFixture("a", "b").index("x", 1<<30, []float64{1, 1}, []string{"a"}, []string{"b"}).snap(), off, nil)
	if got, _, _ := v.invitesBuiltin([]Move{{Index: "x", Shard: 0, From: "id-a", To: "id-b"}}); got {
		t.Error("builtin balancer off: got a conflict, want none")
	}
}
