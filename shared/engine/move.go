package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/shardwise/shardwise/shared/allocation"
	"github.com/shardwise/shardwise/shared/bus"
	"github.com/shardwise/shardwise/shared/cluster"
	"github.com/shardwise/shardwise/shared/config"
	"github.com/shardwise/shardwise/shared/safety"
	"github.com/shardwise/shardwise/shared/snapshots"
	"github.com/shardwise/shardwise/shared/state"
	"github.com/shardwise/shardwise/shared/telemetry"
)

// Move outcomes.
const (
	OutcomeExecuted = "executed"
	OutcomeDryRun   = "dry-run"
	OutcomeRefused  = "refused"
	OutcomeSkipped  = "skipped"
)

// MoveOutcome is what happened to one planned move.
type MoveOutcome struct {
	Move     allocation.Move     `json:"move"`
	Outcome  string              `json:"outcome"`
	Strategy config.MoveStrategy `json:"strategy"`
	Reason   string              `json:"reason"`
	// ledger is the entry of an executed move, marked published once its event is out.
	ledger state.Key
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
	Group  []allocation.Move `json:"group,omitempty"`
	Status ledgerStatus      `json:"status"`
	// Each is every move of Group with its own status, once the invocation acted.
	Each      []ledgerMove        `json:"each,omitempty"`
	Strategy  config.MoveStrategy `json:"strategy,omitempty"`
	PlanKey   string              `json:"plan_key"`
	Reason    string              `json:"reason,omitempty"`
	ClaimedAt time.Time           `json:"claimed_at"`
	// Published: the move's "Shard Move Executed" event is out. An invocation that issued the
	// move and then failed to publish is retried; the retry publishes it instead of skipping it.
	Published bool `json:"published,omitempty"`
}

// cycleClaim records that one invocation acts on a plan.
type cycleClaim struct {
	PlanKey string `json:"plan_key"`
}

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
	snapKey := planSnapshot(planKey)
	planned, _, err := snapshots.Load(ctx, e.Store, name, snapKey)
	if err != nil {
		return res, fmt.Errorf("move %s: %w", name, err)
	}

	// One mover per cluster, from before the breaker reads health until the moves are issued.
	lse, err := e.takeLease(ctx, name, "move "+planKey)
	if held, ok := errors.AsType[*LeaseHeldError](err); ok {
		reason := held.Error() + "; it acts, this invocation does not"
		e.log().Info("move: lease held", "cluster", name, "plan", planKey, "reason", reason)
		for _, m := range plan.Moves {
			res.Outcomes = append(res.Outcomes, MoveOutcome{Move: m, Outcome: OutcomeSkipped, Reason: reason})
		}
		return res, e.publishOutcomes(ctx, res)
	}
	if err != nil {
		return res, fmt.Errorf("move %s: %w", name, err)
	}
	defer lse.Release()

	health, herr := api.Health(ctx)
	in := safety.Inputs{Reachable: herr, Health: health.Status, Relocating: health.Relocating, Initializing: health.Initializing,
		StatsAge: e.now().Sub(planned.At)}
	in.SearchLatencyMs, in.LatencyKnown = meanSearchLatency(planned)
	// The fresh routing table tells what is in flight: shardwise's own moves and the cluster's
	// recoveries per node, held to the cluster's own limits rather than to zero.
	var fresh cluster.Snapshot
	var own []allocation.Move
	if herr == nil {
		if fresh, err = api.ReadTopology(ctx); err != nil {
			return res, fmt.Errorf("move %s: fresh read: %w", name, err)
		}
		if own, err = e.ownMovesInFlight(ctx, name, &fresh); err != nil {
			return res, fmt.Errorf("move %s: %w", name, err)
		}
		in.OwnInFlight, in.OwnKnown = len(own), true
		in.Recoveries = safety.RecoveriesOf(&fresh, own)
		in.PrimariesLost = safety.LostPrimaries(&fresh)
	}
	res.Breaker = safety.Evaluate(in, e.Config.Safety)
	for _, c := range res.Breaker.Checks {
		e.log().Info("breaker check", "cluster", name, "check", c.Name, "ok", c.OK, "value", c.Value, "limit", c.Limit, "reason", c.Reason)
	}
	moves := plan.Moves
	if kept, held := completionsOnly(moves, res.Breaker); kept != nil {
		moves = kept
		res.Outcomes = append(res.Outcomes, held...)
	} else if !res.Breaker.Closed {
		reason := res.Breaker.Reason()
		if res.Breaker.OperatorActionNeeded() {
			// Not a wait-and-retry refusal: a shard has no copy left, and only an operator can
			// bring it back. The reason, in each outcome event, leads with it.
			e.log().Error("operator action needed", "cluster", name, "plan", planKey, "primaries_lost", in.PrimariesLost, "reason", reason)
			e.metric(name, "OperatorActionNeeded", telemetry.UnitCount, 1)
		}
		for _, m := range plan.Moves {
			res.Outcomes = append(res.Outcomes, MoveOutcome{Move: m, Outcome: OutcomeSkipped, Reason: reason})
		}
		e.metric(name, "BreakerOpen", telemetry.UnitCount, 1)
		return res, e.publishOutcomes(ctx, res)
	}

	if err := e.cleanupFilters(ctx, api, name, &fresh, true); err != nil {
		return res, fmt.Errorf("move %s: %w", name, err)
	}
	snap := fresh
	snap.Cluster = name
	snap.CarryLoads(planned)
	// The view the planner judged the moves on (the hot nodes' demand included), built in one place.
	view := allocation.PlannedView(&snap, plan.Hotspots, e.Config.Allocation)

	recoveries := safety.RecoveriesOf(&snap, own)
	if recoveries.ByExclusion, err = e.movesByExclusion(ctx, name); err != nil {
		// Unknown: the returns are counted, as reroute would send them.
		e.log().Warn("move: whether moves go by exclusion is unknown; swap returns count against the recovery limits", "cluster", name, "error", err)
		recoveries.ByExclusion = false
	}
	kept, refused := safety.Hold(moves, recoveries, e.Config.Safety)
	for _, r := range refused {
		res.Outcomes = append(res.Outcomes, MoveOutcome{Move: r.Move, Outcome: OutcomeSkipped, Reason: fmt.Sprintf("budget %s: %s", r.Budget, r.Reason)})
	}
	run := &moveRun{e: e, api: api, name: name, planKey: planKey, view: view, snap: &snap, lease: lse, recoveries: &recoveries}
	res.Outcomes = append(res.Outcomes, run.execute(ctx, allocation.Groups(kept))...)
	if err := e.publishOutcomes(ctx, res); err != nil {
		return res, err
	}
	e.markPublished(ctx, name, res.Outcomes)
	return res, nil
}

// completionsOnly is, when the breaker is open only on shardwise's own moves in flight
// (safety.Verdict.CompletionsOnly), the staged returns among moves, which complete swaps under way
// and still go, and the others skipped with the breaker's reason. Nil otherwise.
func completionsOnly(moves []allocation.Move, b safety.Verdict) (kept []allocation.Move, held []MoveOutcome) {
	if b.Closed || !b.CompletionsOnly() {
		return nil, nil
	}
	reason := b.Reason() + "; only staged returns completing a swap under way go"
	for _, m := range moves {
		if m.Completes != nil {
			kept = append(kept, m)
		} else {
			held = append(held, MoveOutcome{Move: m, Outcome: OutcomeSkipped, Reason: reason})
		}
	}
	if kept == nil {
		return nil, nil
	}
	return kept, held
}

// earlier is the outcome of a group whose ledger entry an earlier (or overlapping) invocation of
// this plan wrote. A move it issued but whose event it never published (it failed after the
// reroute) is reported executed again, so the retry publishes it; anything else was dealt with.
func earlier(prev ledgerEntry, group []allocation.Move, lk state.Key) []MoveOutcome {
	if prev.Status == statusIssued && !prev.Published {
		out := outcomes(group, OutcomeExecuted, prev.Strategy,
			"issued by an earlier invocation of this plan, whose outcome event was never published: "+prev.Reason)
		for i := range out {
			out[i].ledger = lk
		}
		return out
	}
	why := fmt.Sprintf("ledger: handled by an earlier or overlapping invocation (status %s); a move is issued once", prev.Status)
	if prev.Status == statusClaimed {
		why = "ledger: claimed by an earlier or overlapping invocation that recorded no outcome yet; a move is issued once, and a later cycle verifies where the copy went"
	}
	return outcomes(group, OutcomeSkipped, prev.Strategy, why)
}

// markPublished records on the ledger that the executed moves' events are out.
func (e *Engine) markPublished(ctx context.Context, name string, outs []MoveOutcome) {
	done := map[state.Key]bool{}
	for _, o := range outs {
		if o.Outcome != OutcomeExecuted || o.ledger == (state.Key{}) || done[o.ledger] {
			continue
		}
		done[o.ledger] = true
		entry, version, err := state.GetJSON[ledgerEntry](ctx, e.Store, o.ledger)
		if err == nil {
			entry.Published = true
			_, err = state.PutJSON(ctx, e.Store, o.ledger, entry, state.Condition{IfVersion: version}, e.ttl(), e.now())
		}
		if err != nil && !errors.Is(err, state.ErrConflict) {
			e.log().Warn("ledger: marking the move's event published failed; a retry may publish it again",
				"cluster", name, "key", o.ledger.SK, "error", err)
		}
	}
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
			Cluster: res.Cluster, PlanKey: res.PlanKey, Move: o.Move, Strategy: string(o.Strategy), DryRun: e.Config.Safety.DryRun,
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
