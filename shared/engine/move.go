package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
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
	Group     []allocation.Move   `json:"group,omitempty"`
	Status    string              `json:"status"`
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
	release, err := e.takeLease(ctx, name, "move "+planKey)
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
	defer release()

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

	if err := e.cleanupFilters(ctx, api, name, &fresh.Snapshot, true); err != nil {
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
	res.Outcomes = append(res.Outcomes, e.moveAll(ctx, api, name, planKey, view, &snap, allocation.Groups(kept))...)
	if err := e.publishOutcomes(ctx, res); err != nil {
		return res, err
	}
	e.markPublished(ctx, name, res.Outcomes)
	return res, nil
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

// claim is a group of moves (one move, or a swap) that passed its re-check and, when acting, holds
// its ledger entry.
type claim struct {
	group  []allocation.Move
	key    state.Key // its ledger entry
	finish func(strategy config.MoveStrategy, status, reason string)
}

// executed is the outcome of a group that was issued, tied to its ledger entry.
func (c claim) executed(strategy config.MoveStrategy, reason string) []MoveOutcome {
	out := outcomes(c.group, OutcomeExecuted, strategy, reason)
	for i := range out {
		out[i].ledger = c.key
	}
	return out
}

func outcomes(group []allocation.Move, outcome string, strategy config.MoveStrategy, reason string) []MoveOutcome {
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

// Mover is what issuing moves needs from a cluster: reroute, and index settings for the
// allocation-filter strategy.
type Mover interface {
	// Reroute sends the moves as one _cluster/reroute call, which applies all of them or none.
	// A refusal of any move is an error matching ErrRerouteRefused, in a dry run too.
	Reroute(ctx context.Context, moves []allocation.Move, dryRun bool) (RerouteResult, error)
	SettingsEditor
}

// moveAll re-checks every group on fresh state, claims each in the ledger, and issues the cycle's
// moves in ONE reroute call, dry-run with explain first: the breaker was checked for this cycle, and
// a second call would start while the first call's relocations are in flight.
func (e *Engine) moveAll(ctx context.Context, api Mover, name, planKey string, view *allocation.View, snap *cluster.Snapshot, groups [][]allocation.Move) []MoveOutcome {
	var res []MoveOutcome
	var ok []claim
	for _, g := range groups {
		// A retried or overlapping invocation meets the ledger before the re-check: a move that
		// was issued no longer passes the re-check, and its event may still be owed.
		lk := state.Key{PK: pk(name), SK: ledgerKey(planKey, g[0])}
		if prev, _, err := state.GetJSON[ledgerEntry](ctx, e.Store, lk); err == nil {
			res = append(res, earlier(prev, g, lk)...)
			continue
		} else if !errors.Is(err, state.ErrNotFound) {
			res = append(res, outcomes(g, OutcomeSkipped, "", fmt.Sprintf("ledger: %v", err))...)
			continue
		}
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
				res = append(res, outcomes(c.group, OutcomeDryRun, config.StrategyReroute, "dry-run: OpenSearch accepts it: "+strings.Join(r.Explanations, "; "))...)
			}
			return res
		}
		for _, c := range ok {
			r, err := api.Reroute(ctx, c.group, true)
			if err != nil {
				res = append(res, outcomes(c.group, OutcomeRefused, config.StrategyReroute, fmt.Sprintf("dry run: OpenSearch refused: %v", err))...)
				continue
			}
			res = append(res, outcomes(c.group, OutcomeDryRun, config.StrategyReroute, "dry-run: OpenSearch accepts it: "+strings.Join(r.Explanations, "; "))...)
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
		entry := ledgerEntry{Move: c.group[0], Group: c.group, Status: statusClaimed, PlanKey: planKey, ClaimedAt: e.now()}
		if _, err := state.PutJSON(ctx, e.Store, lk, entry, state.Condition{IfAbsent: true}, e.ttl(), e.now()); err != nil {
			reason := fmt.Sprintf("ledger: %v", err)
			if errors.Is(err, state.ErrConflict) {
				reason = "ledger: already claimed by another invocation; a move is issued once"
			}
			res = append(res, outcomes(c.group, OutcomeSkipped, "", reason)...)
			continue
		}
		c.key = lk
		c.finish = func(strategy config.MoveStrategy, status, reason string) {
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
	if strategy == config.StrategyAllocationFilter {
		return append(res, e.filterGroups(ctx, api, name, snap, claimed, "strategy "+string(config.StrategyAllocationFilter))...)
	}
	accepted := claimed
	// The dry run's explanations go into the ledger and the outcomes: the real call is sent
	// without explain (see ClusterAPI.Reroute).
	dry, err := api.Reroute(ctx, flatten(claimed), true)
	explained := dry.Explanations
	if err != nil {
		if strategy == config.StrategyAuto && errors.Is(err, ErrForbidden) {
			return append(res, e.filterGroups(ctx, api, name, snap, claimed, fmt.Sprintf("reroute forbidden (%v)", err))...)
		}
		// Find which groups OpenSearch refuses; the rest still go, together.
		accepted, explained = nil, nil
		for _, c := range claimed {
			r, err := api.Reroute(ctx, c.group, true)
			if err != nil {
				c.finish(config.StrategyReroute, "refused", err.Error())
				res = append(res, outcomes(c.group, OutcomeRefused, config.StrategyReroute, fmt.Sprintf("dry run refused: %v", err))...)
				continue
			}
			accepted = append(accepted, c)
			explained = append(explained, r.Explanations...)
		}
	}
	if len(accepted) == 0 {
		return res
	}
	_, err = api.Reroute(ctx, flatten(accepted), false)
	for _, c := range accepted {
		if err != nil {
			c.finish(config.StrategyReroute, "refused", err.Error())
			res = append(res, outcomes(c.group, OutcomeRefused, config.StrategyReroute, fmt.Sprintf("reroute refused: %v", err))...)
			continue
		}
		c.finish(config.StrategyReroute, statusIssued, strings.Join(explained, "; "))
		res = append(res, c.executed(config.StrategyReroute, "reroute accepted; dry run: "+strings.Join(explained, "; "))...)
	}
	if err == nil {
		e.metric(name, "MovesExecuted", telemetry.UnitCount, float64(len(flatten(accepted))))
	}
	return res
}

// filterGroups moves copies off their node with index-level allocation filtering, for managed
// domains that refuse _cluster/reroute. OpenSearch then picks the target; the filter is recorded
// so a later cycle removes it. A filter pushes every copy of the index off the node, so the cycle's
// budgets count what it will move, not one move per filter.
func (e *Engine) filterGroups(ctx context.Context, api SettingsEditor, name string, snap *cluster.Snapshot, claimed []claim, why string) []MoveOutcome {
	var outs []MoveOutcome
	moves, bytes := 0, int64(0)
	limits := e.Config.Safety
	for _, c := range claimed {
		for _, m := range c.group {
			if m.Phase == allocation.PhaseSwapReturn {
				outs = append(outs, MoveOutcome{Move: m, Outcome: OutcomeSkipped, Strategy: config.StrategyAllocationFilter,
					Reason: "swap return not needed: with a filter OpenSearch chooses the target itself"})
				continue
			}
			n, b := filterCost(snap, m)
			if moves+n > limits.MaxMovesPerCycle || bytes+b > limits.MaxBytesPerCycle {
				reason := fmt.Sprintf("budget: excluding %s from %s moves every copy of the index there (%d copies, %s); with %d copies and %s already this cycle that passes max_moves_per_cycle %d or max_bytes_per_cycle %s",
					m.FromName, m.Index, n, humanBytes(b), moves, humanBytes(bytes), limits.MaxMovesPerCycle, humanBytes(limits.MaxBytesPerCycle))
				c.finish(config.StrategyAllocationFilter, "skipped", reason)
				outs = append(outs, MoveOutcome{Move: m, Outcome: OutcomeSkipped, Strategy: config.StrategyAllocationFilter, Reason: reason})
				continue
			}
			o, issued := e.filterMove(ctx, api, name, c, m, why)
			if issued {
				moves, bytes = moves+n, bytes+b
			}
			outs = append(outs, o)
		}
	}
	return outs
}

// filterCost is what excluding m's source node from m's index moves: every copy of the index on
// that node, and their bytes.
func filterCost(snap *cluster.Snapshot, m allocation.Move) (int, int64) {
	n, b := 0, int64(0)
	for _, c := range snap.Copies {
		if c.Index == m.Index && c.Node == m.From {
			n++
			b += c.SizeBytes
		}
	}
	return max(n, 1), max(b, m.SizeBytes)
}

func humanBytes(b int64) string { return fmt.Sprintf("%.1f GiB", float64(b)/(1<<30)) }

// filterMove adds one exclusion; issued says it went out.
func (e *Engine) filterMove(ctx context.Context, api SettingsEditor, name string, c claim, m allocation.Move, why string) (MoveOutcome, bool) {
	err := e.addExclusion(ctx, api, name, m)
	if errors.Is(err, errFilterHeld) {
		reason := fmt.Sprintf("%s: %s is already excluded from %s by shardwise; not added twice", why, m.FromName, m.Index)
		c.finish(config.StrategyAllocationFilter, "skipped", reason)
		e.log().Info("allocation filter already held", "cluster", name, "index", m.Index, "node", m.FromName, "reason", reason)
		return MoveOutcome{Move: m, Outcome: OutcomeSkipped, Strategy: config.StrategyAllocationFilter, Reason: reason}, false
	}
	if err != nil {
		c.finish(config.StrategyAllocationFilter, "refused", err.Error())
		return MoveOutcome{Move: m, Outcome: OutcomeRefused, Strategy: config.StrategyAllocationFilter, Reason: err.Error()}, false
	}
	c.finish(config.StrategyAllocationFilter, statusIssued, "allocation filter")
	return MoveOutcome{Move: m, Outcome: OutcomeExecuted, Strategy: config.StrategyAllocationFilter, ledger: c.key,
		Reason: fmt.Sprintf("%s; index.routing.allocation.exclude._name on %s now includes %s (removed once the copies have left, the hotspot is over, or %s passed)",
			why, m.Index, m.FromName, filterMaxAge)}, true
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
