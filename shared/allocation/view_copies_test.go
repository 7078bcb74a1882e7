package allocation

import (
	"fmt"
	"slices"
	"testing"

	"github.com/shardwise/shardwise/shared/cluster"
)

// TestViewShardCopies: NewView lists each shard's assigned copies in the snapshot's order, whether
// its copies are side by side (they then share one slab) or spread among other shards' copies (an
// unsorted snapshot: a shard's list must then not grow into another's). Fails if a shard's list is
// grown in the slab when it does not end it.
func TestViewShardCopies(t *testing.T) {
	copyOf := func(index string, shard int, node string, primary bool) cluster.Copy {
		return cluster.Copy{Index: index, Shard: shard, Primary: primary, State: cluster.StateStarted, Node: "id-" + node}
	}
	for _, tt := range []struct {
		name   string
		copies []cluster.Copy
	}{
		{"sorted", []cluster.Copy{copyOf("a", 0, "n1", true), copyOf("a", 0, "n2", false), copyOf("a", 1, "n2", true), copyOf("a", 1, "n3", false), copyOf("b", 0, "n3", true)}},
		{"shards interleaved", []cluster.Copy{copyOf("a", 0, "n1", true), copyOf("a", 1, "n2", true), copyOf("a", 0, "n2", false), copyOf("a", 1, "n3", false), copyOf("a", 0, "n3", false)}},
		{"indices interleaved", []cluster.Copy{copyOf("a", 0, "n1", true), copyOf("b", 0, "n2", true), copyOf("a", 0, "n2", false), copyOf("b", 0, "n1", false), copyOf("b", 0, "n3", false)}},
		{"unassigned between", []cluster.Copy{copyOf("a", 0, "n1", true), {Index: "a", Shard: 0, State: cluster.StateUnassigned}, copyOf("a", 0, "n2", false), copyOf("b", 0, "n2", true)}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture("n1", "n2", "n3")
			f.s.Indices = []cluster.Index{{Name: "a", Primaries: 2, Replicas: 2}, {Name: "b", Primaries: 1, Replicas: 2}}
			f.s.Copies = tt.copies
			v := NewView(&f.s, Config{}, nil)
			want := map[cluster.ShardID][]string{}
			for _, c := range tt.copies {
				if c.Node != "" {
					want[c.ID()] = append(want[c.ID()], fmt.Sprintf("%s/%d@%s", c.Index, c.Shard, c.Node))
				}
			}
			for id, w := range want {
				var got []string
				for _, c := range v.shards[id].copies {
					got = append(got, fmt.Sprintf("%s/%d@%s", c.Index, c.Shard, c.Node))
				}
				if !slices.Equal(got, w) {
					t.Errorf("%v: copies %v, want %v", id, got, w)
				}
				for _, c := range v.shards[id].copies {
					if got := v.copyOn(id.Index, id.Shard, c.Node); got != c {
						t.Errorf("copyOn(%v, %s) = %v, want %v", id, c.Node, got, c)
					}
				}
			}
		})
	}
}
