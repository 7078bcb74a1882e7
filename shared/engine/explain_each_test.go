package engine

import (
	"slices"
	"testing"

	"github.com/shardwise/shardwise/shared/allocation"
)

// A reroute sent for several groups at once is explained command by command; each group's moves
// carry their own explanations, not every group's (a move's reason once listed every command of
// the call, each twice when two groups went together).
func TestExplainEachSplitsByGroup(t *testing.T) {
	mv := func(index string) allocation.Move { return allocation.Move{Index: index, From: "a", To: "b"} }
	groups := []claim{{group: []allocation.Move{mv("x")}}, {group: []allocation.Move{mv("y"), mv("z")}}}
	cases := []struct {
		name         string
		explanations []string
		want         [][]string
	}{
		{"one per command", []string{"move x", "move y", "move z"}, [][]string{{"move x"}, {"move y", "move z"}}},
		{"another count keeps all", []string{"move x", "move y"}, [][]string{{"move x", "move y"}, {"move x", "move y"}}},
		{"none", nil, [][]string{nil, nil}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := explainEach(groups, tc.explanations)
			if len(got) != len(groups) {
				t.Fatalf("got %d claims, want %d", len(got), len(groups))
			}
			for i, g := range got {
				if !slices.Equal(g.explained, tc.want[i]) {
					t.Errorf("claim %d: got %q, want %q", i, g.explained, tc.want[i])
				}
				if len(g.group) != len(groups[i].group) || g.group[0].Index != groups[i].group[0].Index {
					t.Errorf("claim %d: group %v, want %v", i, g.group, groups[i].group)
				}
			}
		})
	}
}
