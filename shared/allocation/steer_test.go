package allocation

import (
	"slices"
	"testing"

	"github.com/shardwise/shardwise/shared/cluster"
)

// An exclusion names, beside its source, every data node that holds no copy of the index and has
// no room within its goal for the heaviest copy of the index on the source, other than the targets
// the group plans: OpenSearch's allocator then picks among the planned targets, the nodes with
// room, and the nodes it could not be kept from without moving their copies.
func TestSteer(t *testing.T) {
	move := func(index string, shard int, from, to string) Move {
		return Move{Index: index, Shard: shard, From: "id-" + from, FromName: from, To: "id-" + to, ToName: to, Phase: PhaseWriteHotspot}
	}
	cases := []struct {
		name  string
		snap  func() *cluster.Snapshot
		group []Move
		want  []string
	}{
		{"busy nodes without a copy are named, nodes with room are not",
			func() *cluster.Snapshot {
				// d at 87.5 % and e at 75 % cannot take 3 threads within 90 %; b at 50 % can.
				return newFixture("a", "b", "c", "d", "e").index("h", 1<<30, []float64{3}, []string{"a"}).
					index("x", 1<<30, []float64{4, 7, 6}, []string{"b"}, []string{"d"}, []string{"e"}).snap()
			},
			[]Move{move("h", 0, "a", "c")}, []string{"d", "e"}},
		{"the heaviest copy of the index on the source sets the room",
			func() *cluster.Snapshot {
				// b at 50 % takes 3 threads (87.5 %) but not 4 (100 %), which the exclusion moves too.
				return newFixture("a", "b", "c").index("h", 1<<30, []float64{3, 4}, []string{"a"}, []string{"a"}).
					index("x", 1<<30, []float64{4}, []string{"b"}).snap()
			},
			[]Move{move("h", 0, "a", "c")}, []string{"b"}},
		{"a busy node holding a copy of the index is left out: its copy would move",
			func() *cluster.Snapshot {
				return newFixture("a", "b", "c").index("h", 1<<30, []float64{3, 7}, []string{"a"}, []string{"b"}).snap()
			},
			[]Move{move("h", 0, "a", "c")}, nil},
		{"the target of a relocation of the index is left out",
			func() *cluster.Snapshot {
				f := newFixture("a", "b", "c", "d").index("h", 1<<30, []float64{3, 1}, []string{"a"}, []string{"b"}).
					index("x", 1<<30, []float64{7}, []string{"d"})
				f.s.Copies[1].State, f.s.Copies[1].RelocatingNode = cluster.StateRelocating, "id-d"
				return f.snap()
			},
			[]Move{move("h", 0, "a", "c")}, nil},
		{"every target the group plans for the index's copies on the source is left out, a return's is not",
			func() *cluster.Snapshot {
				return newFixture("a", "b", "c", "d").index("h", 1<<30, []float64{3, 2}, []string{"a"}, []string{"a"}).
					index("x", 1<<30, []float64{7, 7, 0.1}, []string{"b"}, []string{"c"}, []string{"d"}).snap()
			},
			[]Move{move("h", 0, "a", "c"), move("h", 1, "a", "d"), {Index: "x", Shard: 0, From: "id-b", FromName: "b", To: "id-a", ToName: "a", Phase: PhaseSwapReturn}},
			[]string{"b"}},
		{"nothing is named while a copy of the index is unassigned",
			func() *cluster.Snapshot {
				f := newFixture("a", "b", "c").index("h", 1<<30, []float64{3}, []string{"a"}).index("x", 1<<30, []float64{7}, []string{"b"})
				f.s.Copies = append(f.s.Copies, cluster.Copy{Index: "h", Shard: 0, State: cluster.StateUnassigned})
				return f.snap()
			},
			[]Move{move("h", 0, "a", "c")}, nil},
		{"a node that holds no data is never named",
			func() *cluster.Snapshot {
				f := newFixture("a", "b", "c").index("h", 1<<30, []float64{3}, []string{"a"}).index("x", 1<<30, []float64{7}, []string{"b"})
				f.s.Nodes = append(f.s.Nodes, cluster.Node{ID: "id-m", Name: "m", Roles: []string{"cluster_manager"}})
				return f.snap()
			},
			[]Move{move("h", 0, "a", "c")}, []string{"b"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v := NewView(tc.snap(), DefaultConfig(), nil)
			if got := Steer(v, tc.group, tc.group[0]); !slices.Equal(got, tc.want) {
				t.Errorf("steer: got %v, want %v", got, tc.want)
			}
		})
	}
}
