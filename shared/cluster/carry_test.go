package cluster

import "testing"

// TestCarryLoadsSizes: a fresh topology's copies have no size; each takes its own earlier copy's,
// or, having moved since, its shard's largest earlier copy's. A copy that has a size keeps it, and
// a shard unknown earlier stays without one.
func TestCarryLoadsSizes(t *testing.T) {
	planned := &Snapshot{Nodes: []Node{{ID: "a"}, {ID: "b"}, {ID: "c"}}, Copies: []Copy{
		{Index: "i", Shard: 0, Primary: true, State: StateStarted, Node: "a", SizeBytes: 100, WriteLoad: 1, LoadKnown: true},
		{Index: "i", Shard: 0, State: StateStarted, Node: "b", SizeBytes: 90, WriteLoad: 1, LoadKnown: true},
		{Index: "i", Shard: 1, Primary: true, State: StateStarted, Node: "a", SizeBytes: 50},
		{Index: "i", Shard: 1, State: StateUnassigned, SizeBytes: 70},
	}}
	cases := []struct {
		name string
		c    Copy
		want int64
	}{
		{"the same copy", Copy{Index: "i", Shard: 0, Node: "b", State: StateStarted}, 90},
		{"moved since: the shard's largest", Copy{Index: "i", Shard: 0, Node: "c", State: StateStarted}, 100},
		{"an unassigned copy's size counts for the shard", Copy{Index: "i", Shard: 1, Node: "c", State: StateInitializing}, 70},
		{"a size of its own stays", Copy{Index: "i", Shard: 0, Node: "a", State: StateStarted, SizeBytes: 120}, 120},
		{"a shard new since", Copy{Index: "j", Shard: 0, Node: "a", State: StateStarted}, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fresh := &Snapshot{Nodes: []Node{{ID: "a"}, {ID: "b"}, {ID: "c"}}, Copies: []Copy{tc.c}}
			fresh.CarryLoads(planned)
			if got := fresh.Copies[0].SizeBytes; got != tc.want {
				t.Errorf("size %d, want %d", got, tc.want)
			}
		})
	}
}
