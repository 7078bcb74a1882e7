package allocation

import (
	"testing"

	"github.com/shardwise/shardwise/shared/cluster"
)

// Indices without filters of their own share one count of the nodes the cluster allows; an index
// with filters counts its own, whichever is asked first.
func TestEligibleNodes(t *testing.T) {
	build := func() *View {
		f := newFixture("a1", "a2", "b1", "b2", "gone").
			index("plain", 1<<30, []float64{0}, []string{"a1", "b1"}).
			index("zone-a", 1<<30, []float64{0}, []string{"a1", "a2"}).
			index("not-a2", 1<<30, []float64{0}, []string{"a1", "b1"})
		for _, n := range []string{"a1", "a2"} {
			f.node(n).Attributes = map[string]string{"zone": "a"}
		}
		for _, n := range []string{"b1", "b2", "gone"} {
			f.node(n).Attributes = map[string]string{"zone": "b"}
		}
		s := f.snap()
		s.Settings.Filters = cluster.Filters{Exclude: map[string]string{"_name": "gone"}}
		s.Indices[1].Filters = cluster.Filters{Require: map[string]string{"zone": "a"}}
		s.Indices[2].Filters = cluster.Filters{Exclude: map[string]string{"_name": "a2"}}
		cfg := DefaultConfig()
		cfg.ExcludedNodes = []string{"b2"}
		return NewView(s, cfg, nil)
	}
	// Of a1, a2, b1, b2 and gone: the cluster's filter excludes gone and the configuration b2.
	want := map[string]int{"plain": 3, "unknown": 3, "zone-a": 2, "not-a2": 2}
	tests := []struct {
		name  string
		order []string
	}{
		{"an index without filters first", []string{"plain", "zone-a", "unknown", "not-a2", "plain"}},
		{"indices with filters first", []string{"zone-a", "not-a2", "plain", "unknown", "zone-a"}},
		{"an index the snapshot does not list first", []string{"unknown", "not-a2", "plain", "zone-a"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := build()
			for _, ix := range tc.order {
				if got := v.EligibleNodes(ix); got != want[ix] {
					t.Errorf("EligibleNodes(%s): got %d, want %d", ix, got, want[ix])
				}
			}
		})
	}
}
