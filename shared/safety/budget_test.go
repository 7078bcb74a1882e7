package safety

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/shardwise/shardwise/shared/allocation"
	"github.com/shardwise/shardwise/shared/cluster"
	"github.com/shardwise/shardwise/shared/size"
)

// mv is a move of index[shard] between nodes named a, b, c… (ids "id-a"…) of size GiB.
func mv(index string, shard int, from, to string, gib int64, group int) allocation.Move {
	return allocation.Move{Index: index, Shard: shard, From: "id-" + from, FromName: from, To: "id-" + to, ToName: to,
		SizeBytes: gib << 30, SwapGroup: group, Phase: allocation.PhaseWriteHotspot}
}

func label(m allocation.Move) string {
	return fmt.Sprintf("%s[%d] %s->%s", m.Index, m.Shard, m.FromName, m.ToName)
}

func TestBudget(t *testing.T) {
	limits := func(perNode, perCycle int, gib int64) Config {
		c := DefaultConfig()
		c.MaxMovesPerNode, c.MaxMovesPerCycle, c.MaxBytesPerCycle = perNode, perCycle, size.Bytes(gib<<30)
		return c
	}
	type refusal struct{ move, budget string }
	cases := []struct {
		name    string
		moves   []allocation.Move
		cfg     Config
		kept    []string
		refused []refusal
		// reasonHas: a fragment every refusal's reason must carry (the measured value and limit).
		reasonHas string
	}{
		{
			name:  "moves on distinct nodes fit",
			moves: []allocation.Move{mv("x", 0, "a", "b", 1, 0), mv("x", 1, "c", "d", 1, 0)},
			cfg:   limits(1, 4, 100),
			kept:  []string{"x[0] a->b", "x[1] c->d"},
		},
		{
			name:      "a second move off the same node is refused per node",
			moves:     []allocation.Move{mv("x", 0, "a", "b", 1, 0), mv("x", 1, "a", "c", 1, 0)},
			cfg:       limits(1, 4, 100),
			kept:      []string{"x[0] a->b"},
			refused:   []refusal{{"x[1] a->c", "max_moves_per_node"}},
			reasonHas: "node a already has 1 moves this cycle, limit 1",
		},
		{
			name:      "a second move onto the same node is refused per node",
			moves:     []allocation.Move{mv("x", 0, "a", "c", 1, 0), mv("y", 0, "b", "c", 1, 0)},
			cfg:       limits(1, 4, 100),
			kept:      []string{"x[0] a->c"},
			refused:   []refusal{{"y[0] b->c", "max_moves_per_node"}},
			reasonHas: "node c already has 1 moves this cycle, limit 1",
		},
		{
			name:  "a raised per-node budget allows two",
			moves: []allocation.Move{mv("x", 0, "a", "b", 1, 0), mv("x", 1, "a", "c", 1, 0)},
			cfg:   limits(2, 4, 100),
			kept:  []string{"x[0] a->b", "x[1] a->c"},
		},
		{
			name: "the fifth move is over the per-cycle budget",
			moves: []allocation.Move{mv("x", 0, "a", "b", 1, 0), mv("x", 1, "c", "d", 1, 0), mv("x", 2, "e", "f", 1, 0),
				mv("x", 3, "g", "h", 1, 0), mv("x", 4, "i", "j", 1, 0)},
			cfg:       limits(1, 4, 100),
			kept:      []string{"x[0] a->b", "x[1] c->d", "x[2] e->f", "x[3] g->h"},
			refused:   []refusal{{"x[4] i->j", "max_moves_per_cycle"}},
			reasonHas: "4 moves already this cycle, limit 4",
		},
		{
			name:      "bytes over the budget are refused and a smaller later move still fits",
			moves:     []allocation.Move{mv("x", 0, "a", "b", 60, 0), mv("x", 1, "c", "d", 50, 0), mv("x", 2, "e", "f", 30, 0)},
			cfg:       limits(1, 4, 100),
			kept:      []string{"x[0] a->b", "x[2] e->f"},
			refused:   []refusal{{"x[1] c->d", "max_bytes_per_cycle"}},
			reasonHas: fmt.Sprintf("%d bytes would move this cycle, limit %d", int64(110)<<30, int64(100)<<30),
		},
		{
			name:  "a swap counts once per node",
			moves: []allocation.Move{mv("hot", 0, "a", "b", 1, 1), mv("cold", 0, "b", "a", 1, 1)},
			cfg:   limits(1, 4, 100),
			kept:  []string{"hot[0] a->b", "cold[0] b->a"},
		},
		{
			name:      "a move after a swap on the same node is refused",
			moves:     []allocation.Move{mv("hot", 0, "a", "b", 1, 1), mv("cold", 0, "b", "a", 1, 1), mv("x", 0, "a", "c", 1, 0)},
			cfg:       limits(1, 4, 100),
			kept:      []string{"hot[0] a->b", "cold[0] b->a"},
			refused:   []refusal{{"x[0] a->c", "max_moves_per_node"}},
			reasonHas: "node a already has 1 moves",
		},
		{
			name: "a swap is refused whole when it does not fit the cycle",
			moves: []allocation.Move{mv("x", 0, "c", "d", 1, 0), mv("hot", 0, "a", "b", 1, 1), mv("cold", 0, "b", "a", 1, 1),
				mv("y", 0, "e", "f", 1, 0)},
			cfg:     limits(1, 2, 100),
			kept:    []string{"x[0] c->d", "y[0] e->f"},
			refused: []refusal{{"hot[0] a->b", "max_moves_per_cycle"}, {"cold[0] b->a", "max_moves_per_cycle"}},
		},
		{
			name:      "a swap is refused whole when its bytes together pass the budget",
			moves:     []allocation.Move{mv("hot", 0, "a", "b", 60, 1), mv("cold", 0, "b", "a", 50, 1)},
			cfg:       limits(1, 4, 100),
			refused:   []refusal{{"hot[0] a->b", "max_bytes_per_cycle"}, {"cold[0] b->a", "max_bytes_per_cycle"}},
			reasonHas: "limit 107374182400",
		},
		{
			name:    "a swap is refused whole when one of its nodes is spent",
			moves:   []allocation.Move{mv("x", 0, "b", "c", 1, 0), mv("hot", 0, "a", "b", 1, 7), mv("cold", 0, "b", "a", 1, 7)},
			cfg:     limits(1, 4, 100),
			kept:    []string{"x[0] b->c"},
			refused: []refusal{{"hot[0] a->b", "max_moves_per_node"}, {"cold[0] b->a", "max_moves_per_node"}},
		},
		{
			name: "swap members apart in plan order are still grouped",
			moves: []allocation.Move{mv("hot", 0, "a", "b", 1, 3), mv("x", 0, "c", "d", 1, 0),
				mv("cold", 0, "b", "a", 1, 3)},
			cfg:  limits(1, 4, 100),
			kept: []string{"hot[0] a->b", "cold[0] b->a", "x[0] c->d"},
		},
		{
			name: "no moves, nothing kept or refused",
			cfg:  limits(1, 4, 100),
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			kept, refused := Budget(tc.moves, tc.cfg)
			var gotKept []string
			for _, m := range kept {
				gotKept = append(gotKept, label(m))
			}
			if !slices.Equal(gotKept, tc.kept) {
				t.Errorf("kept: got %v want %v", gotKept, tc.kept)
			}
			var gotRefused []refusal
			for _, r := range refused {
				gotRefused = append(gotRefused, refusal{label(r.Move), r.Budget})
				if r.Reason == "" {
					t.Errorf("refusal of %s has no reason", label(r.Move))
				}
				if tc.reasonHas != "" && !strings.Contains(r.Reason, tc.reasonHas) {
					t.Errorf("refusal of %s: reason %q, want it to contain %q", label(r.Move), r.Reason, tc.reasonHas)
				}
				var want int64
				switch r.Budget {
				case "max_moves_per_node":
					want = int64(tc.cfg.MaxMovesPerNode)
				case "max_moves_per_cycle":
					want = int64(tc.cfg.MaxMovesPerCycle)
				case "max_bytes_per_cycle":
					want = int64(tc.cfg.MaxBytesPerCycle)
				}
				if r.Limit != want {
					t.Errorf("refusal of %s: limit %d, want %d", label(r.Move), r.Limit, want)
				}
			}
			if !slices.Equal(gotRefused, tc.refused) {
				t.Errorf("refused: got %v want %v", gotRefused, tc.refused)
			}
			if len(kept)+len(refused) != len(tc.moves) {
				t.Errorf("kept %d + refused %d != %d planned: a move was lost", len(kept), len(refused), len(tc.moves))
			}
		})
	}
}

func TestHold(t *testing.T) {
	// Node a has one of shardwise's moves in flight; b has a free slot.
	inFlight := Recoveries{PerNode: true, Limits: cluster.RecoveryLimits{NodeIncoming: 2, NodeOutgoing: 2, Known: true},
		OwnAt:    map[string][]allocation.Move{"id-a": {mv("w", 0, "a", "z", 1, 0)}},
		Incoming: map[string]int{"id-z": 1}, Outgoing: map[string]int{"id-a": 1}}
	cfg := DefaultConfig()
	cfg.MaxMovesPerCycle = 4
	cases := []struct {
		name    string
		moves   []allocation.Move
		kept    []string
		refused []string
	}{
		{
			name: "a group held back by a move in flight leaves the cycle's budget to the next",
			moves: []allocation.Move{mv("x", 0, "a", "b", 1, 1), mv("y", 0, "b", "a", 1, 1),
				mv("p", 0, "c", "d", 1, 2), mv("q", 0, "d", "c", 1, 2), mv("p", 1, "c", "e", 1, 2), mv("q", 1, "e", "c", 1, 2)},
			kept:    []string{"p[0] c->d", "q[0] d->c", "p[1] c->e", "q[1] e->c"},
			refused: []string{"x[0] a->b own_move_in_flight_per_node", "y[0] b->a own_move_in_flight_per_node"},
		},
		{
			name:    "groups that can run share the budget in plan order",
			moves:   []allocation.Move{mv("x", 0, "f", "b", 1, 1), mv("y", 0, "b", "f", 1, 1), mv("p", 0, "c", "d", 1, 2), mv("q", 0, "d", "c", 1, 2), mv("p", 1, "c", "e", 1, 2)},
			kept:    []string{"x[0] f->b", "y[0] b->f"},
			refused: []string{"p[0] c->d max_moves_per_cycle", "q[0] d->c max_moves_per_cycle", "p[1] c->e max_moves_per_cycle"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			kept, refused := Hold(tc.moves, inFlight, cfg)
			var gotKept, gotRefused []string
			for _, m := range kept {
				gotKept = append(gotKept, label(m))
			}
			for _, r := range refused {
				gotRefused = append(gotRefused, label(r.Move)+" "+r.Budget)
			}
			if !slices.Equal(gotKept, tc.kept) {
				t.Errorf("kept: got %v want %v", gotKept, tc.kept)
			}
			if !slices.Equal(gotRefused, tc.refused) {
				t.Errorf("refused: got %v want %v", gotRefused, tc.refused)
			}
		})
	}
}
