package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/shardwise/shardwise/shared/allocation"
	"github.com/shardwise/shardwise/shared/bus"
	"github.com/shardwise/shardwise/shared/cluster"
	"github.com/shardwise/shardwise/shared/opensearch"
	"github.com/shardwise/shardwise/shared/safety"
	"github.com/shardwise/shardwise/shared/snapshots"
	"github.com/shardwise/shardwise/shared/state"
	"github.com/shardwise/shardwise/shared/telemetry"
)

const strategyFilter = "allocation-filter"

// Move outcomes.
const (
	OutcomeExecuted = "executed"
	OutcomeDryRun   = "dry-run"
	OutcomeRefused  = "refused"
	OutcomeSkipped  = "skipped"
)

// MoveOutcome is what happened to one planned move.
type MoveOutcome struct {
	Move     allocation.Move `json:"move"`
	Outcome  string          `json:"outcome"`
	Strategy string          `json:"strategy"`
	Reason   string          `json:"reason"`
}

// MoveResult is one move invocation's outcome.
type MoveResult struct {
	Cluster  string         `json:"cluster"`
	PlanKey  string         `json:"plan_key"`
	Breaker  safety.Verdict `json:"breaker"`
	Outcomes []MoveOutcome  `json:"outcomes"`
}

// ledgerEntry records that a move was claimed (and then issued) exactly once.
type ledgerEntry struct {
	Move allocation.Move `json:"move"`
	// Group is every move issued with Move (a swap's returns, a chain's steps), Move first, so
	// the breaker sees each of them in flight.
	Group    []allocation.Move `json:"group,omitempty"`
	Status   string            `json:"status"`
	Strategy string            `json:"strategy,omitempty"`
	PlanKey  string            `json:"plan_key"`
	Reason   string            `json:"reason,omitempty"`
}

func ledgerKey(planKey string, m allocation.Move) string { return "ledger#" + planKey + "#" + m.Key() }

// cycleClaim records that one invocation acts on a plan.
type cycleClaim struct {
	PlanKey string `json:"plan_key"`
}

func cycleClaimKey(planKey string) string { return "claim#" + planKey }

// Move executes a stored plan: the circuit breaker on fresh health (any failing check aborts the
// whole cycle), dry-run unless turned off, the deciders re-run on fresh topology before each move,
// the budgets, and a ledger with conditional writes so a duplicate or overlapping invocation never
// issues a move twice.
func (e *Engine) Move(ctx context.Context, name, planKey string) (MoveResult, error) {
	res := MoveResult{Cluster: name, PlanKey: planKey}
	api, err := e.api(name)
	if err != nil {
		return res, fmt.Errorf("move: %w", err)
	}
	plan, _, err := state.GetJSON[allocation.Plan](ctx, e.Store, state.Key{PK: pk(name), SK: planKey})
	if err != nil {
		return res, fmt.Errorf("move %s %s: %w", name, planKey, err)
	}
	if len(plan.Moves) == 0 {
		return res, nil
	}
	snapKey := strings.TrimPrefix(planKey, "plan#")
	planned, _, err := snapshots.Load(ctx, e.Store, name, snapKey)
	if err != nil {
		return res, fmt.Errorf("move %s: %w", name, err)
	}

	health, herr := api.Health(ctx)
	in := safety.Inputs{Reachable: herr, Health: health.Status, Relocating: health.Relocating, Initializing: health.Initializing,
		StatsAge: e.now().Sub(planned.At)}
	in.SearchLatencyMs, in.LatencyKnown = meanSearchLatency(planned)
	// The fresh routing table tells what is in flight: shardwise's own moves and the cluster's
	// recoveries per node, held to the cluster's own limits rather than to zero.
	var fresh cluster.Sample
	var own []allocation.Move
	if herr == nil {
		if fresh, err = api.Read(ctx); err != nil {
			return res, fmt.Errorf("move %s: fresh read: %w", name, err)
		}
		if own, err = e.ownMovesInFlight(ctx, name, &fresh.Snapshot); err != nil {
			return res, fmt.Errorf("move %s: %w", name, err)
		}
		in.OwnInFlight, in.OwnKnown = len(own), true
		in.Recoveries = safety.RecoveriesOf(&fresh.Snapshot, own)
	}
	res.Breaker = safety.Evaluate(in, e.Config.Safety)
	for _, c := range res.Breaker.Checks {
		e.log().Info("breaker check", "cluster", name, "check", c.Name, "ok", c.OK, "value", c.Value, "limit", c.Limit, "reason", c.Reason)
	}
	if !res.Breaker.Closed {
		reason := res.Breaker.Reason()
		for _, m := range plan.Moves {
			res.Outcomes = append(res.Outcomes, MoveOutcome{Move: m, Outcome: OutcomeSkipped, Reason: reason})
		}
		e.metric(name, "BreakerOpen", telemetry.UnitCount, 1)
		return res, e.publishOutcomes(ctx, res)
	}

	if err := e.cleanupFilters(ctx, api, name, &fresh.Snapshot); err != nil {
		return res, fmt.Errorf("move %s: %w", name, err)
	}
	snap := fresh.Snapshot
	snap.Cluster = name
	snap.CarryLoads(planned)
	hot := map[string]bool{}
	for _, h := range plan.Hotspots {
		hot[h.Node] = h.Hot
	}
	view := allocation.NewView(&snap, e.Config.Allocation, hot)
	for _, h := range plan.Hotspots {
		if h.Hot && h.Demand > 0 {
			// The same demand the planner weighed: a saturated node's counters show only what it served.
			view.SetDemand(h.Node, h.Demand)
		}
	}

	kept, refused := safety.Budget(plan.Moves, e.Config.Safety)
	kept, throttled := safety.Throttle(kept, safety.RecoveriesOf(&snap, own))
	refused = append(refused, throttled...)
	for _, r := range refused {
		res.Outcomes = append(res.Outcomes, MoveOutcome{Move: r.Move, Outcome: OutcomeSkipped, Reason: fmt.Sprintf("budget %s: %s", r.Budget, r.Reason)})
	}
	res.Outcomes = append(res.Outcomes, e.moveAll(ctx, api, name, planKey, view, allocation.Groups(kept))...)
	return res, e.publishOutcomes(ctx, res)
}

// claim is a group of moves (one move, or a swap) that passed its re-check and, when acting, holds
// its ledger entry.
type claim struct {
	group  []allocation.Move
	finish func(strategy, status, reason string)
}

func outcomes(group []allocation.Move, outcome, strategy, reason string) []MoveOutcome {
	o := make([]MoveOutcome, 0, len(group))
	for _, m := range group {
		o = append(o, MoveOutcome{Move: m, Outcome: outcome, Strategy: strategy, Reason: reason})
	}
	return o
}

func flatten(cs []claim) []allocation.Move {
	var out []allocation.Move
	for _, c := range cs {
		out = append(out, c.group...)
	}
	return out
}

// moveAll re-checks every group on fresh state, claims each in the ledger, and issues the cycle's
// moves in ONE reroute call, dry-run with explain first: the breaker was checked for this cycle, and
// a second call would start while the first call's relocations are in flight.
func (e *Engine) moveAll(ctx context.Context, api ClusterAPI, name, planKey string, view *allocation.View, groups [][]allocation.Move) []MoveOutcome {
	var res []MoveOutcome
	var ok []claim
	for _, g := range groups {
		// The same rule the planner used, on fresh state: a group passes whole or not at all.
		if judged, fine := allocation.AdmitGroup(view, g); !fine {
			last := judged[len(judged)-1]
			res = append(res, outcomes(g, OutcomeSkipped, "", "re-check on fresh state: "+last.Admission.Why())...)
			continue
		}
		ok = append(ok, claim{group: g})
	}
	if len(ok) == 0 {
		return res
	}
	if e.Config.Safety.DryRun {
		if r, err := api.Reroute(ctx, flatten(ok), true); err == nil {
			for _, c := range ok {
				res = append(res, outcomes(c.group, OutcomeDryRun, "reroute", "dry-run: OpenSearch accepts it: "+strings.Join(r.Explanations, "; "))...)
			}
			return res
		}
		for _, c := range ok {
			r, err := api.Reroute(ctx, c.group, true)
			if err != nil {
				res = append(res, outcomes(c.group, OutcomeRefused, "reroute", fmt.Sprintf("dry run: OpenSearch refused: %v", err))...)
				continue
			}
			res = append(res, outcomes(c.group, OutcomeDryRun, "reroute", "dry-run: OpenSearch accepts it: "+strings.Join(r.Explanations, "; "))...)
		}
		return res
	}

	// One invocation acts on a plan: two overlapping invocations splitting its groups between them
	// would issue two reroute calls, the second while the first's relocations run.
	ck := state.Key{PK: pk(name), SK: cycleClaimKey(planKey)}
	if _, err := state.PutJSON(ctx, e.Store, ck, cycleClaim{PlanKey: planKey}, state.Condition{IfAbsent: true}, e.ttl(), e.now()); err != nil {
		reason := fmt.Sprintf("ledger: claiming the plan: %v", err)
		if errors.Is(err, state.ErrConflict) {
			reason = "ledger: already claimed by another invocation: one invocation acts on a plan, so a cycle's moves go in one reroute call, each once"
		}
		for _, c := range ok {
			res = append(res, outcomes(c.group, OutcomeSkipped, "", reason)...)
		}
		return res
	}
	var claimed []claim
	for _, c := range ok {
		lk := state.Key{PK: pk(name), SK: ledgerKey(planKey, c.group[0])}
		entry := ledgerEntry{Move: c.group[0], Group: c.group, Status: "claimed", PlanKey: planKey}
		if _, err := state.PutJSON(ctx, e.Store, lk, entry, state.Condition{IfAbsent: true}, e.ttl(), e.now()); err != nil {
			reason := fmt.Sprintf("ledger: %v", err)
			if errors.Is(err, state.ErrConflict) {
				reason = "ledger: already claimed by another invocation; a move is issued once"
			}
			res = append(res, outcomes(c.group, OutcomeSkipped, "", reason)...)
			continue
		}
		c.finish = func(strategy, status, reason string) {
			entry.Strategy, entry.Status, entry.Reason = strategy, status, reason
			if _, err := state.PutJSON(ctx, e.Store, lk, entry, state.Condition{}, e.ttl(), e.now()); err != nil {
				e.log().Error("ledger update failed", "cluster", name, "key", lk.SK, "error", err)
			}
		}
		claimed = append(claimed, c)
	}
	if len(claimed) == 0 {
		return res
	}
	strategy := e.Config.MoveStrategy
	if strategy == strategyFilter {
		for _, c := range claimed {
			res = append(res, e.filterGroup(ctx, api, name, c.group, c.finish, "strategy allocation-filter")...)
		}
		return res
	}
	accepted := claimed
	if _, err := api.Reroute(ctx, flatten(claimed), true); err != nil {
		if strategy == "auto" && opensearch.IsForbidden(err) {
			for _, c := range claimed {
				res = append(res, e.filterGroup(ctx, api, name, c.group, c.finish, fmt.Sprintf("reroute forbidden (%v)", err))...)
			}
			return res
		}
		// Find which groups OpenSearch refuses; the rest still go, together.
		accepted = nil
		for _, c := range claimed {
			if _, err := api.Reroute(ctx, c.group, true); err != nil {
				c.finish("reroute", "refused", err.Error())
				res = append(res, outcomes(c.group, OutcomeRefused, "reroute", fmt.Sprintf("dry run refused: %v", err))...)
				continue
			}
			accepted = append(accepted, c)
		}
	}
	if len(accepted) == 0 {
		return res
	}
	r, err := api.Reroute(ctx, flatten(accepted), false)
	for _, c := range accepted {
		if err != nil {
			c.finish("reroute", "refused", err.Error())
			res = append(res, outcomes(c.group, OutcomeRefused, "reroute", fmt.Sprintf("reroute refused: %v", err))...)
			continue
		}
		c.finish("reroute", statusIssued, strings.Join(r.Explanations, "; "))
		res = append(res, outcomes(c.group, OutcomeExecuted, "reroute", "reroute accepted")...)
	}
	if err == nil {
		e.metric(name, "MovesExecuted", telemetry.UnitCount, float64(len(flatten(accepted))))
	}
	return res
}

// filterGroup moves copies off their node with index-level allocation filtering, for managed domains
// that refuse _cluster/reroute. OpenSearch then picks the target; the filter is recorded so the next
// cycle removes it once the copies have left.
func (e *Engine) filterGroup(ctx context.Context, api ClusterAPI, name string, group []allocation.Move, finish func(string, string, string), why string) []MoveOutcome {
	var outs []MoveOutcome
	for _, m := range group {
		if m.Phase == allocation.PhaseSwapReturn {
			outs = append(outs, MoveOutcome{Move: m, Outcome: OutcomeSkipped, Strategy: strategyFilter,
				Reason: "swap return not needed: with a filter OpenSearch chooses the target itself"})
			continue
		}
		if err := e.addExclusion(ctx, api, name, m); err != nil {
			finish(strategyFilter, "refused", err.Error())
			outs = append(outs, MoveOutcome{Move: m, Outcome: OutcomeRefused, Strategy: strategyFilter, Reason: err.Error()})
			continue
		}
		finish(strategyFilter, statusIssued, "allocation filter")
		outs = append(outs, MoveOutcome{Move: m, Outcome: OutcomeExecuted, Strategy: strategyFilter,
			Reason: fmt.Sprintf("%s; index.routing.allocation.exclude._name on %s now includes %s (removed once the copy has left)", why, m.Index, m.FromName)})
	}
	return outs
}

func meanSearchLatency(s *cluster.Snapshot) (float64, bool) {
	sum, n := 0.0, 0
	for _, node := range s.Nodes {
		if node.IsData() && node.SearchLatencyKnown {
			sum += node.SearchLatencyMs
			n++
		}
	}
	if n == 0 {
		return 0, false
	}
	return sum / float64(n), true
}

func (e *Engine) publishOutcomes(ctx context.Context, res MoveResult) error {
	events := make([]bus.Event, 0, len(res.Outcomes))
	for _, o := range res.Outcomes {
		e.log().Info("move", "cluster", res.Cluster, "index", o.Move.Index, "shard", o.Move.Shard, "from", o.Move.FromName,
			"to", o.Move.ToName, "outcome", o.Outcome, "strategy", o.Strategy, "reason", o.Reason, "plan_reason", o.Move.Reason)
		events = append(events, bus.Event{DetailType: bus.TypeShardMoveExecuted, Time: e.now(), Detail: bus.ShardMoveExecuted{
			Cluster: res.Cluster, PlanKey: res.PlanKey, Move: o.Move, Strategy: o.Strategy, DryRun: e.Config.Safety.DryRun,
			Outcome: o.Outcome, Reason: o.Reason, Breaker: res.Breaker}})
	}
	if len(events) == 0 {
		return nil
	}
	if err := e.Bus.Publish(ctx, events...); err != nil {
		return fmt.Errorf("move %s: %w", res.Cluster, err)
	}
	return nil
}
