package engine

import (
	"bytes"
	"context"
	"encoding/json"
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
	// Trigger says what asked for this plan outside the cadence (DetectNow); empty for a plan of
	// an ingested snapshot.
	Trigger string `json:"trigger,omitempty"`
}

// MetricUnrelievedHotspots counts, per plan, the hot nodes the planner found no step for without a
// capacity proof (allocation.Plan.Unrelieved).
const MetricUnrelievedHotspots = "UnrelievedHotspots"

// NoteTriggered is the kind of the plan note that says what asked for a plan outside the cadence.
const NoteTriggered = "triggered"

// Detect plans moves for a snapshot (the latest when snapshotKey is empty) and publishes "Moves
// Planned", "Scale Up Needed" when a bound proves moves cannot help, and "Hotspot Unrelieved" when
// the planner found no step for a hot node without such a proof. The same snapshot planned twice (a
// duplicate event) returns the stored plan and publishes nothing again.
func (e *Engine) Detect(ctx context.Context, name, snapshotKey string) (DetectResult, error) {
	return e.detect(ctx, name, snapshotKey, "")
}

// DetectNow ingests one cluster now and plans on that fresh snapshot: what a CloudWatch alarm on
// the cluster asks for. Planning the latest stored snapshot instead would find it planned already
// and do nothing until the next tick. trigger says what asked (the alarm, by name and state); the
// plan carries it as a NoteTriggered note, so the stored plan, the "Moves Planned" event and the
// log all say why it was made. "Stats Ingested" for the new snapshot goes out once the plan is
// stored, so the detect invocation that event wakes finds this plan and publishes nothing twice,
// while replicas and sandbox get the fresh snapshot as usual. The sample only reads the cluster:
// removing finished allocation filters stays with the ingest function. Within minSampleInterval
// of the last sample (the cluster's write-queue and rejection alarms firing together, or the
// cadence's sample a moment ago) no second sample is taken, since rates over so short an interval
// are noise: the last sample is planned, or its stored plan returned.
func (e *Engine) DetectNow(ctx context.Context, name, trigger string) (IngestResult, DetectResult, error) {
	dr := DetectResult{Cluster: name, Trigger: trigger}
	if trigger == "" {
		return IngestResult{Cluster: name}, dr, fmt.Errorf("detect %s: a fresh plan needs the trigger that asked for it", name)
	}
	if _, ok := e.Config.Cluster(name); !ok {
		return IngestResult{Cluster: name}, dr, fmt.Errorf("detect: %w %q", ErrUnknownCluster, name)
	}
	e.log().Info("detect: ingesting and planning now", "cluster", name, "trigger", trigger)
	ir, err := e.ingestWith(ctx, name, pull, ingestOptions{scheduled: true, skipCleanup: true, deferPublish: true})
	if err != nil {
		return ir, dr, err
	}
	dr, err = e.detect(ctx, name, ir.SnapshotKey, trigger)
	// The snapshot is stored whatever the plan's fate: replicas and sandbox still want it.
	if perr := e.publishIngested(ctx, &ir); perr != nil {
		err = errors.Join(err, perr)
	}
	return ir, dr, err
}

// detect is Detect; a non-empty trigger is noted in a plan it makes.
func (e *Engine) detect(ctx context.Context, name, snapshotKey, trigger string) (DetectResult, error) {
	res := DetectResult{Cluster: name, Trigger: trigger}
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
	// The moves of shardwise's still in flight, of every phase: the move function holds their
	// nodes, so the planner plans nothing there.
	own, err := e.verifyMoves(ctx, name, snap)
	if err != nil {
		return res, fmt.Errorf("detect %s: %w", name, err)
	}
	mkey := state.Key{PK: pk(name), SK: memoryKey}
	// The memory grows with the moves of the last hour (returnWithin): a large value, stored in
	// parts of which a cycle rewrites only the changed ones.
	mem, memRef, err := state.GetLargeJSON[allocation.Memory](ctx, e.Store, mkey)
	if err != nil && !errors.Is(err, state.ErrNotFound) {
		return res, fmt.Errorf("detect %s: %w", name, err)
	}
	memStored := err == nil
	byExclusion, err := e.movesByExclusion(ctx, name)
	if err != nil {
		return res, fmt.Errorf("detect %s: %w", name, err)
	}
	cfg := e.Config.Allocation.WithSampleInterval(e.Config.RefreshPeriod.Std()).WithMoveBudget(e.Config.Safety.MaxMovesPerCycle, e.Config.Safety.MaxMovesPerNode).
		WithOwnInFlight(own).WithMovesByExclusion(byExclusion)
	start := time.Now()
	plan, next := allocation.PlanCycle(snap, mem, cfg)
	res.PlanTime = time.Since(start)
	if trigger != "" {
		plan.Notes = append(plan.Notes, allocation.Note{Kind: NoteTriggered,
			Reason: trigger + ": planned on a sample ingested at once, not at the next 30 s tick"})
	}
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
	if memStored && sameJSON(mem, next) {
		// Nothing to store: a cycle without hotspots or moves leaves the memory as it was, and
		// rewriting it would cost a write a cycle for nothing.
	} else if _, err := state.PutLargeJSON(ctx, e.Store, mkey, next, memRef, condFor(memRef.Version), 0, e.now()); err != nil {
		if !errors.Is(err, state.ErrConflict) {
			return res, fmt.Errorf("detect %s: store streaks: %w", name, err)
		}
		// Another invocation planned another snapshot meanwhile and stored its streaks. Its
		// streaks stand; this plan, stored above under its own snapshot, still goes out.
		e.log().Info("detect: another invocation stored hotspot streaks first; keeping theirs",
			"cluster", name, "snapshot", snapshotKey, "error", err)
	}
	if snap.IntervalSeconds > 0 && len(snap.Nodes) > 0 {
		// The busiest node's estimate, for the dashboard and the queue-latency alarm: one metric
		// per cluster (CloudWatch bills each node's series a month), and the node's name in the
		// log line, where the alarm's reader finds which node it was. A first sample has no
		// rates, so no estimate.
		busiest := snap.Nodes[0]
		for _, n := range snap.Nodes[1:] {
			if n.Write.QueueLatencySeconds > busiest.Write.QueueLatencySeconds {
				busiest = n
			}
		}
		e.log().Info("write queue latency", "cluster", name, "node", busiest.Name,
			"queue_latency_s", busiest.Write.QueueLatencySeconds, "snapshot", snapshotKey)
		e.metric(name, telemetry.MetricWriteQueueLatency, telemetry.UnitSeconds, busiest.Write.QueueLatencySeconds)
	}
	for _, h := range plan.Hotspots {
		e.log().Info("hotspot", "cluster", name, "node", h.NodeName, "hot", h.Hot, "rising", h.Rising != nil, "skewed", h.Skew != nil, "queue_latency_s", h.QueueLatencySeconds,
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
	for _, u := range plan.Unrelieved {
		e.log().Warn("hotspot unrelieved", "cluster", name, "node", u.NodeName, "evaluations", u.Search.Evaluations,
			"candidates", u.Search.Candidates, "reason", u.Reason)
	}
	// Every plan sends it, 0 included, so an alarm on it sees the hotspot end.
	e.metric(name, MetricUnrelievedHotspots, telemetry.UnitCount, float64(len(plan.Unrelieved)))
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

// publishPlan publishes a plan's "Moves Planned", "Scale Up Needed" and "Hotspot Unrelieved" and then marks it
// published. With again set (the plan was stored already) it publishes only a plan not yet
// marked: its first invocation stored it and then failed to publish, and was retried. Events are
// at least once: a failure after publishing and before marking publishes again on the retry.
// The two signals' events carry whether they notify (notices), decided once per plan.
func (e *Engine) publishPlan(ctx context.Context, name, snapshotKey string, plan allocation.Plan, again bool) error {
	planKey := planKey(snapshotKey)
	mark := state.Key{PK: pk(name), SK: publishedKey(planKey)}
	if again {
		if len(plan.Moves) == 0 && plan.ScaleUp == nil && len(plan.Unrelieved) == 0 {
			return nil
		}
		if _, err := e.Store.Get(ctx, mark); err == nil {
			return nil
		} else if !errors.Is(err, state.ErrNotFound) {
			return fmt.Errorf("detect %s: %w", name, err)
		}
		e.log().Info("detect: publishing a stored plan whose events never went out", "cluster", name, "plan", planKey)
	}
	// Every plan reaches the signal records, one without a signal too: that is how a signal's end
	// is seen, so that its return notifies.
	scaleUp, unrelieved, err := e.notices(ctx, name, planKey, plan)
	if err != nil {
		return err
	}
	var events []bus.Event
	if len(plan.Moves) > 0 {
		events = append(events, bus.Event{DetailType: bus.TypeMovesPlanned, Time: e.now(), Detail: bus.MovesPlanned{
			Cluster: name, PlanKey: planKey, SnapshotKey: snapshotKey, Hotspots: plan.Hotspots, Moves: plan.Moves, Notes: plan.Notes}})
	}
	if plan.ScaleUp != nil {
		e.log().Info("scale up needed: notice", "cluster", name, "notify", scaleUp.Notify, "reason", scaleUp.NotifyReason)
		events = append(events, bus.Event{DetailType: bus.TypeScaleUpNeeded, Time: e.now(), Detail: bus.ScaleUpNeeded{
			Cluster: name, Nodes: plan.ScaleUp.Nodes, Reason: plan.ScaleUp.Reason,
			Bound: plan.ScaleUp.Bound, Value: plan.ScaleUp.Value, Limit: plan.ScaleUp.Limit, Notice: scaleUp}})
	}
	if len(plan.Unrelieved) > 0 {
		e.log().Info("hotspot unrelieved: notice", "cluster", name, "notify", unrelieved.Notify, "reason", unrelieved.NotifyReason)
		events = append(events, bus.Event{DetailType: bus.TypeHotspotUnrelieved, Time: e.now(), Detail: bus.HotspotUnrelieved{
			Cluster: name, PlanKey: planKey, Unrelieved: plan.Unrelieved, Notice: unrelieved}})
	}
	if len(events) == 0 {
		return nil
	}
	if err := e.Bus.Publish(ctx, events...); err != nil {
		return fmt.Errorf("detect %s: %w", name, err)
	}
	if _, err := state.PutJSON(ctx, e.Store, mark, true, state.Condition{}, e.ttl(), e.now()); err != nil {
		e.log().Warn("detect: marking the plan published failed; a retry may publish it again", "cluster", name, "plan", planKey, "error", err)
	}
	return nil
}

// sameJSON reports whether a and b encode alike: a value stored as JSON that would be stored
// again unchanged. An encoding error reads as a change, so the value is written and the error
// reported there.
func sameJSON[T any](a, b T) bool {
	ja, erra := json.Marshal(a)
	jb, errb := json.Marshal(b)
	return erra == nil && errb == nil && bytes.Equal(ja, jb)
}
