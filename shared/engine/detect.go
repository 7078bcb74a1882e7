package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/shardwise/shardwise/shared/allocation"
	"github.com/shardwise/shardwise/shared/bus"
	"github.com/shardwise/shardwise/shared/snapshots"
	"github.com/shardwise/shardwise/shared/state"
	"github.com/shardwise/shardwise/shared/telemetry"
)

// DetectResult is a planning outcome.
type DetectResult struct {
	Cluster  string          `json:"cluster"`
	PlanKey  string          `json:"plan_key"`
	Plan     allocation.Plan `json:"plan"`
	Repeated bool            `json:"repeated,omitempty"`
	PlanTime time.Duration   `json:"plan_time"`
}

// Detect plans moves for a snapshot (the latest when snapshotKey is empty) and publishes "Moves
// Planned" and, when moves cannot help, "Scale Up Needed". The same snapshot planned twice (a
// duplicate event) returns the stored plan and publishes nothing again.
func (e *Engine) Detect(ctx context.Context, name, snapshotKey string) (DetectResult, error) {
	res := DetectResult{Cluster: name}
	if _, ok := e.Config.Cluster(name); !ok {
		return res, fmt.Errorf("detect: %w %q", ErrUnknownCluster, name)
	}
	if snapshotKey == "" {
		k, err := snapshots.Latest(ctx, e.Store, name)
		if err != nil {
			return res, fmt.Errorf("detect %s: %w", name, err)
		}
		snapshotKey = k
	}
	res.PlanKey = planKey(snapshotKey)
	pkey := state.Key{PK: pk(name), SK: res.PlanKey}
	if stored, _, err := state.GetJSON[allocation.Plan](ctx, e.Store, pkey); err == nil {
		res.Plan, res.Repeated = stored, true
		// A plan stored by an invocation that failed to publish it is published now.
		return res, e.publishPlan(ctx, name, snapshotKey, stored, true)
	} else if !errors.Is(err, state.ErrNotFound) {
		return res, fmt.Errorf("detect %s: %w", name, err)
	}
	snap, _, err := snapshots.Load(ctx, e.Store, name, snapshotKey)
	if err != nil {
		return res, fmt.Errorf("detect %s: %w", name, err)
	}
	if err := e.verifyMoves(ctx, name, snap); err != nil {
		return res, fmt.Errorf("detect %s: %w", name, err)
	}
	mkey := state.Key{PK: pk(name), SK: memoryKey}
	mem, version, err := state.GetJSON[allocation.Memory](ctx, e.Store, mkey)
	if err != nil && !errors.Is(err, state.ErrNotFound) {
		return res, fmt.Errorf("detect %s: %w", name, err)
	}
	start := time.Now()
	plan, next := allocation.PlanCycle(snap, mem, e.Config.Allocation)
	res.PlanTime = time.Since(start)
	res.Plan = plan
	if _, err := state.PutJSON(ctx, e.Store, pkey, plan, state.Condition{IfAbsent: true}, e.ttl(), e.now()); err != nil {
		if errors.Is(err, state.ErrConflict) {
			// Another invocation planned this snapshot first; its plan stands.
			e.log().Info("detect: another invocation planned this snapshot first; its plan stands",
				"cluster", name, "snapshot", snapshotKey)
			stored, _, gerr := state.GetJSON[allocation.Plan](ctx, e.Store, pkey)
			if gerr != nil {
				return res, fmt.Errorf("detect %s: %w", name, gerr)
			}
			// That invocation publishes it (and its retry, should it fail).
			res.Plan, res.Repeated = stored, true
			return res, nil
		}
		return res, fmt.Errorf("detect %s: %w", name, err)
	}
	if _, err := state.PutJSON(ctx, e.Store, mkey, next, condFor(version), 0, e.now()); err != nil {
		if !errors.Is(err, state.ErrConflict) {
			return res, fmt.Errorf("detect %s: store streaks: %w", name, err)
		}
		// Another invocation planned another snapshot meanwhile and stored its streaks. Its
		// streaks stand; this plan, stored above under its own snapshot, still goes out.
		e.log().Info("detect: another invocation stored hotspot streaks first; keeping theirs",
			"cluster", name, "snapshot", snapshotKey, "error", err)
	}
	for _, h := range plan.Hotspots {
		e.log().Info("hotspot", "cluster", name, "node", h.NodeName, "hot", h.Hot, "queue_latency_s", h.QueueLatencySeconds,
			"latency_limit_s", h.LatencyLimit, "utilization", h.Utilization, "utilization_limit", h.UtilizationLimit,
			"streak", h.Streak, "streak_limit", h.StreakLimit, "reason", h.Reason)
	}
	for _, m := range plan.Moves {
		e.log().Info("move planned", "cluster", name, "index", m.Index, "shard", m.Shard, "from", m.FromName, "to", m.ToName,
			"phase", m.Phase, "reason", m.Reason)
	}
	for _, n := range plan.Notes {
		e.log().Info("plan note", "cluster", name, "kind", n.Kind, "node", n.Node, "reason", n.Reason)
	}
	if plan.ScaleUp != nil {
		e.log().Warn("scale up needed", "cluster", name, "nodes", plan.ScaleUp.Nodes, "bound", plan.ScaleUp.Bound,
			"value", plan.ScaleUp.Value, "limit", plan.ScaleUp.Limit, "reason", plan.ScaleUp.Reason)
		if e.Metrics != nil {
			// The bound is a dimension, so an alarm can tell a full cluster from an unsplittable shard.
			e.Metrics.Add("ScaleUpNeeded", telemetry.UnitCount, 1, telemetry.Dimension{Name: "Cluster", Value: name},
				telemetry.Dimension{Name: "Bound", Value: plan.ScaleUp.Bound})
		}
	}
	hot := 0
	for _, h := range plan.Hotspots {
		if h.Hot {
			hot++
		}
	}
	e.metric(name, "HotNodes", telemetry.UnitCount, float64(hot))
	e.metric(name, "MovesPlanned", telemetry.UnitCount, float64(len(plan.Moves)))
	if err := e.publishPlan(ctx, name, snapshotKey, plan, false); err != nil {
		return res, err
	}
	return res, nil
}

// publishPlan publishes a plan's "Moves Planned" and "Scale Up Needed" and then marks it
// published. With again set (the plan was stored already) it publishes only a plan not yet
// marked: its first invocation stored it and then failed to publish, and was retried. Events are
// at least once: a failure after publishing and before marking publishes again on the retry.
func (e *Engine) publishPlan(ctx context.Context, name, snapshotKey string, plan allocation.Plan, again bool) error {
	planKey := planKey(snapshotKey)
	mark := state.Key{PK: pk(name), SK: publishedKey(planKey)}
	var events []bus.Event
	if len(plan.Moves) > 0 {
		events = append(events, bus.Event{DetailType: bus.TypeMovesPlanned, Time: e.now(), Detail: bus.MovesPlanned{
			Cluster: name, PlanKey: planKey, SnapshotKey: snapshotKey, Hotspots: plan.Hotspots, Moves: plan.Moves, Notes: plan.Notes}})
	}
	if plan.ScaleUp != nil {
		events = append(events, bus.Event{DetailType: bus.TypeScaleUpNeeded, Time: e.now(), Detail: bus.ScaleUpNeeded{
			Cluster: name, Nodes: plan.ScaleUp.Nodes, Reason: plan.ScaleUp.Reason,
			Bound: plan.ScaleUp.Bound, Value: plan.ScaleUp.Value, Limit: plan.ScaleUp.Limit}})
	}
	if len(events) == 0 {
		return nil
	}
	if again {
		if _, err := e.Store.Get(ctx, mark); err == nil {
			return nil
		} else if !errors.Is(err, state.ErrNotFound) {
			return fmt.Errorf("detect %s: %w", name, err)
		}
		e.log().Info("detect: publishing a stored plan whose events never went out", "cluster", name, "plan", planKey)
	}
	if err := e.Bus.Publish(ctx, events...); err != nil {
		return fmt.Errorf("detect %s: %w", name, err)
	}
	if _, err := state.PutJSON(ctx, e.Store, mark, true, state.Condition{}, e.ttl(), e.now()); err != nil {
		e.log().Warn("detect: marking the plan published failed; a retry may publish it again", "cluster", name, "plan", planKey, "error", err)
	}
	return nil
}
