package safety

import (
	"fmt"

	"github.com/shardwise/shardwise/shared/allocation"
)

// Refusal is a planned move the budgets held back, with the budget and its limit.
type Refusal struct {
	Move   allocation.Move `json:"move"`
	Budget string          `json:"budget"`
	Limit  int64           `json:"limit"`
	Reason string          `json:"reason"`
}

// Budget keeps the moves that fit the per-node, per-cycle and bytes-per-cycle budgets, in plan order.
// Moves of one swap group are kept or refused together, and a swap counts once per node.
func Budget(moves []allocation.Move, cfg Config) ([]allocation.Move, []Refusal) {
	var kept []allocation.Move
	var refused []Refusal
	perNode := map[string]int{}
	var bytes int64
	groups := allocation.Groups(moves)
	for _, g := range groups {
		nodes := map[string]bool{}
		var gb int64
		for _, m := range g {
			nodes[m.From], nodes[m.To] = true, true
			gb += m.SizeBytes
		}
		why, budget, limit := "", "", int64(0)
		switch {
		case len(kept)+len(g) > cfg.MaxMovesPerCycle:
			budget, limit = "max_moves_per_cycle", int64(cfg.MaxMovesPerCycle)
			why = fmt.Sprintf("%d moves already this cycle, limit %d", len(kept), cfg.MaxMovesPerCycle)
		case bytes+gb > int64(cfg.MaxBytesPerCycle):
			budget, limit = "max_bytes_per_cycle", int64(cfg.MaxBytesPerCycle)
			why = fmt.Sprintf("%d bytes would move this cycle, limit %d", bytes+gb, cfg.MaxBytesPerCycle)
		default:
			for n := range nodes {
				if perNode[n]+1 > cfg.MaxMovesPerNode {
					budget, limit = "max_moves_per_node", int64(cfg.MaxMovesPerNode)
					why = fmt.Sprintf("node %s already has %d moves this cycle, limit %d", nodeName(g, n), perNode[n], cfg.MaxMovesPerNode)
					break
				}
			}
		}
		if why != "" {
			for _, m := range g {
				refused = append(refused, Refusal{Move: m, Budget: budget, Limit: limit, Reason: why})
			}
			continue
		}
		for n := range nodes {
			perNode[n]++
		}
		bytes += gb
		kept = append(kept, g...)
	}
	return kept, refused
}

func nodeName(g []allocation.Move, id string) string {
	for _, m := range g {
		if m.From == id {
			return m.FromName
		}
		if m.To == id {
			return m.ToName
		}
	}
	return id
}

// Hold keeps the moves that both the cluster's recovery limits and shardwise's own moves in flight
// (Throttle) and the budgets (Budget) let run, in plan order. Throttle goes first: a group it holds
// back cannot run, so it must not use up the cycle's budget that a later group, for another hot
// node, could run in.
func Hold(moves []allocation.Move, r Recoveries, cfg Config) ([]allocation.Move, []Refusal) {
	kept, throttled := Throttle(moves, r)
	kept, over := Budget(kept, cfg)
	return kept, append(throttled, over...)
}
