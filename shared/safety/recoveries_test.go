package safety

import (
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/shardwise/shardwise/shared/allocation"
	"github.com/shardwise/shardwise/shared/cluster"
)

func TestRecoveriesOf(t *testing.T) {
	nodes := []cluster.Node{{ID: "id-a", Name: "a"}, {ID: "id-b", Name: "b"}, {ID: "id-c", Name: "c"}}
	started := func(ix string, sh int, primary bool, node string) cluster.Copy {
		return cluster.Copy{Index: ix, Shard: sh, Primary: primary, State: cluster.StateStarted, Node: node}
	}
	cases := []struct {
		name       string
		copies     []cluster.Copy
		limits     cluster.RecoveryLimits
		own        []allocation.Move
		relocating int
		in, out    map[string]int
		wantLimits cluster.RecoveryLimits
		recovering []string // shards with a copy relocating or initializing
	}{
		{
			name:       "a settled cluster, limits not read: OpenSearch's defaults",
			copies:     []cluster.Copy{started("x", 0, true, "id-a"), started("x", 0, false, "id-b")},
			in:         map[string]int{},
			out:        map[string]int{},
			wantLimits: cluster.RecoveryLimits{NodeIncoming: 2, NodeOutgoing: 2, ClusterRebalance: 2, Known: true},
		},
		{
			name: "a relocation counts out on its source and in on its target",
			copies: []cluster.Copy{
				{Index: "x", Shard: 0, Primary: true, State: cluster.StateRelocating, Node: "id-a", RelocatingNode: "id-c"},
				started("x", 0, false, "id-b"),
			},
			limits:     cluster.RecoveryLimits{NodeIncoming: 3, NodeOutgoing: 1, ClusterRebalance: -1, Known: true},
			relocating: 1,
			in:         map[string]int{"id-c": 1},
			out:        map[string]int{"id-a": 1},
			wantLimits: cluster.RecoveryLimits{NodeIncoming: 3, NodeOutgoing: 1, ClusterRebalance: -1, Known: true},
			recovering: []string{"x[0]"},
		},
		{
			name: "a replica recovering from its primary; a primary from its store counts nowhere",
			copies: []cluster.Copy{
				started("x", 0, true, "id-a"),
				{Index: "x", Shard: 0, State: cluster.StateInitializing, Node: "id-b"},
				{Index: "y", Shard: 0, Primary: true, State: cluster.StateInitializing, Node: "id-c"},
			},
			in:         map[string]int{"id-b": 1},
			out:        map[string]int{"id-a": 1},
			wantLimits: cluster.RecoveryLimits{NodeIncoming: 2, NodeOutgoing: 2, ClusterRebalance: 2, Known: true},
			recovering: []string{"x[0]", "y[0]"},
		},
		{
			name: "own moves beyond the relocations seen are clamped",
			copies: []cluster.Copy{
				{Index: "x", Shard: 0, Primary: true, State: cluster.StateRelocating, Node: "id-a", RelocatingNode: "id-b"},
			},
			own:        []allocation.Move{mv("x", 0, "a", "b", 1, 0), mv("y", 0, "c", "b", 1, 0), mv("z", 0, "c", "a", 1, 0)},
			relocating: 1,
			in:         map[string]int{"id-b": 1},
			out:        map[string]int{"id-a": 1},
			wantLimits: cluster.RecoveryLimits{NodeIncoming: 2, NodeOutgoing: 2, ClusterRebalance: 2, Known: true},
			recovering: []string{"x[0]"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := &cluster.Snapshot{Nodes: nodes, Copies: tc.copies, Settings: cluster.Settings{Recoveries: tc.limits}}
			r := RecoveriesOf(s, tc.own)
			if r.Relocating != tc.relocating || r.Own != min(len(tc.own), tc.relocating) || !r.PerNode {
				t.Errorf("got relocating %d own %d per-node %v, want %d, %d, true", r.Relocating, r.Own, r.PerNode, tc.relocating, min(len(tc.own), tc.relocating))
			}
			for _, m := range tc.own {
				if _, ok := r.OwnAt[m.From]; !ok {
					t.Errorf("own move %s: source not marked busy", label(m))
				}
				if _, ok := r.OwnAt[m.To]; !ok {
					t.Errorf("own move %s: target not marked busy", label(m))
				}
			}
			if !maps.Equal(r.Incoming, tc.in) || !maps.Equal(r.Outgoing, tc.out) {
				t.Errorf("got in %v out %v, want in %v out %v", r.Incoming, r.Outgoing, tc.in, tc.out)
			}
			if got := r.Limits.Effective(); got != tc.wantLimits {
				t.Errorf("limits: got %+v want %+v", got, tc.wantLimits)
			}
			var recovering []string
			for id := range r.Recovering {
				recovering = append(recovering, fmt.Sprintf("%s[%d]", id.Index, id.Shard))
			}
			slices.Sort(recovering)
			if !slices.Equal(recovering, tc.recovering) {
				t.Errorf("recovering: got %v want %v", recovering, tc.recovering)
			}
		})
	}
}

func TestThrottle(t *testing.T) {
	busy := func(in, out map[string]int) Recoveries {
		return Recoveries{PerNode: true, Incoming: in, Outgoing: out,
			Limits: cluster.RecoveryLimits{NodeIncoming: 2, NodeOutgoing: 2, ClusterRebalance: 2, Known: true}}
	}
	type refusal struct{ move, budget, reason string }
	cases := []struct {
		name    string
		moves   []allocation.Move
		rec     Recoveries
		kept    []string
		refused []refusal
	}{
		{
			name:  "nothing in flight: every move fits",
			moves: []allocation.Move{mv("x", 0, "a", "b", 1, 0), mv("x", 1, "c", "d", 1, 0)},
			rec:   busy(map[string]int{}, map[string]int{}),
			kept:  []string{"x[0] a->b", "x[1] c->d"},
		},
		{
			name:  "OpenSearch's balancer busy elsewhere: the move goes",
			moves: []allocation.Move{mv("x", 0, "a", "b", 1, 0)},
			rec:   busy(map[string]int{"id-e": 2}, map[string]int{"id-f": 2}),
			kept:  []string{"x[0] a->b"},
		},
		{
			name:    "a target already at its incoming limit",
			moves:   []allocation.Move{mv("x", 0, "a", "b", 1, 0), mv("x", 1, "c", "d", 1, 0)},
			rec:     busy(map[string]int{"id-b": 2}, map[string]int{}),
			kept:    []string{"x[1] c->d"},
			refused: []refusal{{"x[0] a->b", "node_concurrent_incoming_recoveries", "b would have 3 incoming recoveries, limit 2"}},
		},
		{
			name:    "a source already at its outgoing limit",
			moves:   []allocation.Move{mv("x", 0, "a", "b", 1, 0)},
			rec:     busy(map[string]int{}, map[string]int{"id-a": 2}),
			refused: []refusal{{"x[0] a->b", "node_concurrent_outgoing_recoveries", "a would have 3 outgoing recoveries, limit 2"}},
		},
		{
			name:    "moves kept earlier in the cycle count",
			moves:   []allocation.Move{mv("x", 0, "a", "c", 1, 0), mv("y", 0, "b", "c", 1, 0)},
			rec:     busy(map[string]int{"id-c": 1}, map[string]int{}),
			kept:    []string{"x[0] a->c"},
			refused: []refusal{{"y[0] b->c", "node_concurrent_incoming_recoveries", "c would have 3 incoming recoveries, limit 2"}},
		},
		{
			name:    "a swap is kept or refused whole",
			moves:   []allocation.Move{mv("hot", 0, "a", "b", 1, 1), mv("cold", 0, "b", "a", 1, 1)},
			rec:     busy(map[string]int{"id-a": 2}, map[string]int{}),
			refused: []refusal{{"hot[0] a->b", "node_concurrent_incoming_recoveries", "a would have 3 incoming recoveries, limit 2"}, {"cold[0] b->a", "node_concurrent_incoming_recoveries", "a would have 3 incoming recoveries, limit 2"}},
		},
		{
			// Moves by exclusion (a managed domain that refuses reroute) send no return: OpenSearch
			// chooses the target, so the return takes none of a's incoming slots (random managed
			// seed 102 of 200: a swap refused for four cycles, 0.72 → 0.61 of OpenSearch's
			// balancer alone with it let through).
			name: "by exclusion a swap's return is not sent, so it takes no recovery slot",
			moves: func() []allocation.Move {
				back := mv("cold", 0, "b", "a", 1, 1)
				back.Phase = allocation.PhaseSwapReturn
				return []allocation.Move{mv("hot", 0, "a", "b", 1, 1), back}
			}(),
			rec: func() Recoveries {
				r := busy(map[string]int{"id-a": 2}, map[string]int{})
				r.ByExclusion = true
				return r
			}(),
			kept: []string{"hot[0] a->b", "cold[0] b->a"},
		},
		{
			name:  "a node with one of shardwise's moves in flight takes no other",
			moves: []allocation.Move{mv("x", 0, "a", "b", 1, 0), mv("x", 1, "c", "d", 1, 0), mv("x", 2, "e", "a", 1, 0)},
			rec: func() Recoveries {
				r := busy(map[string]int{"id-a": 1}, map[string]int{"id-f": 1})
				r.OwnAt = map[string][]allocation.Move{"id-f": {mv("w", 0, "f", "a", 1, 0)}, "id-a": {mv("w", 0, "f", "a", 1, 0)}}
				return r
			}(),
			kept: []string{"x[1] c->d"},
			refused: []refusal{
				{"x[0] a->b", "own_move_in_flight_per_node", "a has one of shardwise's moves still relocating (w[0] f→a)"},
				{"x[2] e->a", "own_move_in_flight_per_node", "a has one of shardwise's moves still relocating (w[0] f→a)"},
			},
		},
		{
			name: "a young index's quick copy leaves a held node; into a held node it waits",
			moves: func() []allocation.Move {
				off, in := mv("new", 0, "a", "b", 3, 0), mv("new", 1, "c", "a", 3, 0)
				off.YoungIndex, in.YoungIndex = true, true
				return []allocation.Move{off, in}
			}(),
			rec: func() Recoveries {
				r := busy(map[string]int{"id-a": 1}, map[string]int{"id-f": 1})
				r.OwnAt = map[string][]allocation.Move{"id-f": {mv("w", 0, "f", "a", 1, 0)}, "id-a": {mv("w", 0, "f", "a", 1, 0)}}
				return r
			}(),
			kept:    []string{"new[0] a->b"},
			refused: []refusal{{"new[1] c->a", "own_move_in_flight_per_node", "a has one of shardwise's moves still relocating (w[0] f→a)"}},
		},
		{
			name: "a staged return goes through the hold of the swap's hot move it completes, not another's",
			moves: func() []allocation.Move {
				back, other := mv("cold", 0, "b", "a", 1, 0), mv("cold", 1, "b", "a", 1, 0)
				back.Phase, back.Completes = allocation.PhaseStagedReturn, &allocation.Moved{Index: "hot", Shard: 0, From: "id-a", To: "id-b"}
				other.Phase, other.Completes = allocation.PhaseStagedReturn, &allocation.Moved{Index: "hot", Shard: 1, From: "id-a", To: "id-b"}
				return []allocation.Move{back, other}
			}(),
			rec: func() Recoveries {
				r := busy(map[string]int{"id-b": 1}, map[string]int{"id-a": 1})
				r.OwnAt = map[string][]allocation.Move{"id-a": {mv("hot", 0, "a", "b", 1, 0)}, "id-b": {mv("hot", 0, "a", "b", 1, 0)}}
				return r
			}(),
			kept:    []string{"cold[0] b->a"},
			refused: []refusal{{"cold[1] b->a", "own_move_in_flight_per_node", "b has one of shardwise's moves still relocating (hot[0] a→b)"}},
		},
		{
			name: "a staged return waits for another of shardwise's moves on its node beside the hot move it completes",
			moves: func() []allocation.Move {
				back := mv("cold", 0, "b", "a", 1, 0)
				back.Phase, back.Completes = allocation.PhaseStagedReturn, &allocation.Moved{Index: "hot", Shard: 0, From: "id-a", To: "id-b"}
				return []allocation.Move{back}
			}(),
			rec: func() Recoveries {
				r := busy(map[string]int{"id-b": 1, "id-c": 1}, map[string]int{"id-a": 1, "id-b": 1})
				r.OwnAt = map[string][]allocation.Move{"id-a": {mv("hot", 0, "a", "b", 1, 0)},
					"id-b": {mv("hot", 0, "a", "b", 1, 0), mv("w", 0, "b", "c", 1, 0)}, "id-c": {mv("w", 0, "b", "c", 1, 0)}}
				return r
			}(),
			refused: []refusal{{"cold[0] b->a", "own_move_in_flight_per_node", "b has one of shardwise's moves still relocating (w[0] b→c)"}},
		},
		{
			name:  "a shard with a copy relocating or initializing: no other copy of it moves",
			moves: []allocation.Move{mv("x", 0, "a", "b", 1, 0), mv("x", 1, "c", "d", 1, 0), mv("y", 0, "e", "f", 1, 2), mv("z", 0, "f", "e", 1, 2)},
			rec: func() Recoveries {
				r := busy(map[string]int{"id-g": 1, "id-h": 1}, map[string]int{"id-b": 1})
				r.names = map[string]string{"id-b": "b", "id-g": "g", "id-h": "h"}
				r.Recovering = map[cluster.ShardID]*cluster.Copy{
					{Index: "x", Shard: 0}: {Index: "x", Shard: 0, State: cluster.StateRelocating, Node: "id-b", RelocatingNode: "id-g"},
					{Index: "z", Shard: 0}: {Index: "z", Shard: 0, State: cluster.StateInitializing, Node: "id-h"},
				}
				return r
			}(),
			kept: []string{"x[1] c->d"},
			refused: []refusal{
				{"x[0] a->b", "shard_in_flight", "x[0] has a copy still relocating b→g; never two copies of a shard in flight at once"},
				{"y[0] e->f", "shard_in_flight", "z[0] has a copy still initializing on h; never two copies of a shard in flight at once"},
				{"z[0] f->e", "shard_in_flight", "z[0] has a copy still initializing on h; never two copies of a shard in flight at once"},
			},
		},
		{
			name:  "without per-node counts every move is kept",
			moves: []allocation.Move{mv("x", 0, "a", "b", 1, 0)},
			rec:   Recoveries{Relocating: 9},
			kept:  []string{"x[0] a->b"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			kept, refused := Throttle(tc.moves, tc.rec)
			var gotKept []string
			for _, m := range kept {
				gotKept = append(gotKept, label(m))
			}
			if !slices.Equal(gotKept, tc.kept) {
				t.Errorf("kept: got %v want %v", gotKept, tc.kept)
			}
			var got []refusal
			for _, r := range refused {
				got = append(got, refusal{label(r.Move), r.Budget, r.Reason})
				if want := map[bool]int64{true: 1, false: 2}[r.Budget == "own_move_in_flight_per_node" || r.Budget == "shard_in_flight"]; r.Limit != want {
					t.Errorf("refusal limit: got %d want %d", r.Limit, want)
				}
			}
			if !slices.Equal(got, tc.refused) {
				t.Errorf("refused: got %v want %v", got, tc.refused)
			}
		})
	}
}
