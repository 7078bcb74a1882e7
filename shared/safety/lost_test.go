package safety

import (
	"strings"
	"testing"

	"github.com/shardwise/shardwise/shared/cluster"
)

// TestPrimaryLostNeedsOperator: a red cluster whose shard has no active copy left is its own
// state, "operator action needed", naming the shard, not a generic health refusal.
func TestPrimaryLostNeedsOperator(t *testing.T) {
	snap := &cluster.Snapshot{Copies: []cluster.Copy{
		{Index: "gone", Shard: 0, Primary: true, State: cluster.StateUnassigned},
		{Index: "gone", Shard: 0, State: cluster.StateUnassigned},
		{Index: "ok", Shard: 0, Primary: true, State: cluster.StateUnassigned},
		{Index: "ok", Shard: 0, Node: "n1", State: cluster.StateStarted},
		{Index: "fine", Shard: 1, Primary: true, Node: "n1", State: cluster.StateStarted},
	}}
	lost := LostPrimaries(snap)
	if len(lost) != 1 || lost[0] != "gone[0]" {
		t.Fatalf("lost primaries: got %v, want [gone[0]]", lost)
	}
	for _, tc := range []struct {
		name string
		lost []string
		want string
	}{
		{name: "red, a primary lost", lost: lost, want: "operator action needed: 1 shards have no copy left (gone[0])"},
		{name: "red, nothing lost", want: `cluster health "red"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := Evaluate(Inputs{Health: "red", PrimariesLost: tc.lost}, DefaultConfig())
			if v.Closed || !strings.Contains(v.Reason(), tc.want) {
				t.Fatalf("verdict %v: %s, want it open saying %q", v.Closed, v.Reason(), tc.want)
			}
			if got := v.OperatorActionNeeded(); got != (tc.lost != nil) {
				t.Fatalf("OperatorActionNeeded: %v", got)
			}
		})
	}
}
