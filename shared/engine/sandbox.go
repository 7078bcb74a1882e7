package engine

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/shardwise/shardwise/shared/bus"
	"github.com/shardwise/shardwise/shared/cluster"
	"github.com/shardwise/shardwise/shared/safety"
	"github.com/shardwise/shardwise/shared/sandbox"
	"github.com/shardwise/shardwise/shared/state"
	"github.com/shardwise/shardwise/shared/telemetry"
)

// Cancellation outcomes.
const (
	CancelExecuted = "executed"
	CancelDryRun   = "dry-run"
	CancelSkipped  = "skipped"
	CancelGone     = "gone"
	CancelFailed   = "failed"
)

// SandboxAPI is what containing tenants needs from a cluster: the running search tasks, each
// node's own load, and task cancellation.
type SandboxAPI interface {
	SearchTasks(ctx context.Context) ([]sandbox.Task, error)
	NodeLoads(ctx context.Context) ([]sandbox.NodeLoad, error)
	CancelTask(ctx context.Context, id string) error
}

// TenantCluster is the sandbox function's port, built by Engine.Tenants: tasks, node loads and
// cancellation, the workload-management plugin its definitions are synced to, and health for the
// breaker in front of both.
type TenantCluster interface {
	SandboxAPI
	WLMCluster
	HealthReader
}

// CancelOutcome is a planned cancellation and what became of it.
type CancelOutcome struct {
	sandbox.Cancellation
	Outcome string `json:"outcome"`
	// Why says why the outcome is what it is (dry-run, breaker open, the task finished, an error).
	Why string `json:"why"`
}

// SandboxResult is one sandbox invocation's report: its first pass and every pass of its loop.
type SandboxResult struct {
	Cluster string `json:"cluster"`
	// Report, Tasks, Assigned and Short are the last pass's.
	Report   sandbox.Report      `json:"report"`
	Tasks    int                 `json:"tasks"`
	Assigned map[string]int      `json:"assigned"`
	Warnings []sandbox.Warning   `json:"warnings,omitempty"`
	Outcomes []CancelOutcome     `json:"outcomes,omitempty"`
	Short    []sandbox.Shortfall `json:"shortfalls,omitempty"`
	// Breaker is the circuit breaker's last verdict, evaluated only when something is to be
	// cancelled.
	Breaker safety.Verdict `json:"breaker"`
	DryRun  bool           `json:"dry_run"`
	// Passes counts the looks at the cluster's tasks: the first, and each of the loop's.
	Passes int `json:"passes"`
	// Loop says why the invocation looped as it did, or did not.
	Loop string `json:"loop"`
	// WLM is the workload-management plugin's own view, read from _wlm/stats when it enforces the
	// sandboxes; nil otherwise.
	WLM *sandbox.WLMVerification `json:"wlm,omitempty"`
	// History says where the invocation's record went in the state table, or why it did not.
	History string `json:"history,omitempty"`
}

// Cancelled counts the requests actually cancelled.
func (r SandboxResult) Cancelled() int {
	n := 0
	for _, o := range r.Outcomes {
		if o.Outcome == CancelExecuted {
			n++
		}
	}
	return n
}

// SandboxLoop is how long the sandbox function keeps looking at the cluster within one
// invocation, and how often. A flood arrives faster than any schedule can invoke a function, so
// the function samples the tasks every Interval for most of its time budget and cancels and
// rejects at the rate requests arrive, while the plugin, where it enforces, does the same on the
// nodes every second.
type SandboxLoop struct {
	// Interval is the time between passes; when zero, DefaultSandboxInterval, or
	// SecondLineInterval beside the workload-management plugin.
	Interval time.Duration
	// Budget is how long the passes may go on after the first. Zero takes the time left before the
	// context's deadline (Lambda's timeout) less SandboxMargin, and no deadline means one pass.
	Budget time.Duration
	// PluginAlone leaves the sandboxes to the workload-management plugin where it enforces them,
	// with no second line beside it (secondLine): for runs that compare the two. The deployed
	// function never sets it.
	PluginAlone bool
}

// Loop defaults. OpenSearch's workload management runs its enforcement every second
// (wlm.workload_group.enforcement_interval, 1000 ms); two seconds is three reads of the cluster per
// pass at a rate a busy cluster's tasks API bears.
const (
	DefaultSandboxInterval = 2 * time.Second
	// SandboxMargin is the time kept before the invocation's deadline for the last pass's
	// cancellations and events.
	SandboxMargin = 5 * time.Second
	// SecondLineInterval is the loop's interval beside the plugin: the plugin's own
	// enforcement_interval, so between two of its runs the loop looks once more. Its passes read
	// less than a pass alone would need to: only hard sandboxes act.
	SecondLineInterval = time.Second
)

// sleep waits d on the engine's clock: Engine.Sleep when set, else real time.
func (e *Engine) sleep(ctx context.Context, d time.Duration) error {
	if e.Sleep != nil {
		return e.Sleep(ctx, d)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Sandbox contains tenants from outside the cluster. It reads the running search tasks and each
// node's own CPU and heap, attributes every task to a sandbox through its top-level request
// (child tasks on any node inherit it), and judges each sandbox on each node by its mode
// (sandbox.Assess). Every pass emits each sandbox's usage and limit per node and resource as
// metrics, so monitor-mode sandboxes show on a dashboard. The requests soft and hard sandboxes
// must lose are cancelled, and their queued ones rejected, through POST _tasks/{id}/_cancel,
// behind the circuit breaker and dry-run like moves. At the end of the invocation each sandbox that
// lost requests is one "Sandbox Enforced" event with their numbers, and the invocation's record
// (usage per node, cancellations, the last pass's plan) goes to the state table's history for
// `shardwise sandbox report` (sandboxFinish).
//
// Where the cluster's workload-management plugin enforces the synced sandboxes, the plugin does
// the per-second work on the nodes, and the function reads _wlm/stats to report and verify it.
// Elsewhere it keeps looking every SandboxLoop.Interval for its budget (sandboxLoop).
func (e *Engine) Sandbox(ctx context.Context, name string) (SandboxResult, error) {
	res := SandboxResult{Cluster: name, Assigned: map[string]int{}, DryRun: e.Config.Safety.DryRun}
	if len(e.Config.Sandbox.Definitions) == 0 {
		return res, nil
	}
	defs, warns, err := sandbox.ParseDocument(e.Config.Sandbox.Definitions)
	if err != nil {
		return res, fmt.Errorf("sandbox %s: definitions: %w", name, err)
	}
	res.Warnings = warns
	api, err := connect(e, name, "Engine.Tenants", e.Tenants)
	if err != nil {
		return res, fmt.Errorf("sandbox: %w", err)
	}
	sync, syncErr := e.sandboxWLM(ctx, name, api, defs)
	start := e.now()
	if enforced, why := wlmEnforces(sync, syncErr, defs); enforced {
		// The plugin rejects and cancels on the nodes every second. Its first pass here only
		// measures and reads _wlm/stats; beside the plugin the loop then acts on the hard sandboxes
		// alone (secondLine), since the plugin leaves a flood's queued requests in front of the
		// other tenants.
		rec := sandbox.NewRecorder(start, res.DryRun, sandbox.EnforcerWLM)
		first, err := e.sandboxPass(ctx, name, api, defs, &res, rec, actNone, nil)
		if err != nil {
			return res, e.sandboxFinish(ctx, &res, rec, err)
		}
		v, err := e.verifyWLM(ctx, name, api, defs, sync)
		res.WLM = &v
		if err != nil {
			e.log().Error("sandbox wlm stats", "cluster", name, "error", err)
		}
		hard := secondLine(defs)
		switch {
		case e.SandboxLoop.PluginAlone:
			res.Loop = "no loop, no cancellation: " + why + ", and the second line is off"
			return res, e.sandboxFinish(ctx, &res, rec, nil)
		case len(hard) == 0:
			res.Loop = "no loop, no cancellation: " + why + ", and no sandbox is hard"
			return res, e.sandboxFinish(ctx, &res, rec, nil)
		}
		lerr := e.sandboxLoop(ctx, name, api, defs, start, &res, rec, actHard, first)
		res.Loop = why + "; beside it, a second line for the hard sandboxes " + strings.Join(hard, ", ") + ": " + res.Loop
		return res, e.sandboxFinish(ctx, &res, rec, lerr)
	}
	rec := sandbox.NewRecorder(start, res.DryRun, sandbox.EnforcerShardwise)
	first, err := e.sandboxPass(ctx, name, api, defs, &res, rec, actAll, nil)
	if err != nil {
		return res, e.sandboxFinish(ctx, &res, rec, err)
	}
	return res, e.sandboxFinish(ctx, &res, rec, e.sandboxLoop(ctx, name, api, defs, start, &res, rec, actAll, first))
}

// actScope is which sandboxes a pass cancels for: none (it only measures), every soft and hard
// sandbox, or the hard ones only.
type actScope int

const (
	actNone actScope = iota
	actAll
	actHard
)

// secondLine names the hard sandboxes shardwise's loop keeps containing beside the
// workload-management plugin. On a real OpenSearch 3.8 node the plugin alone let a hard flood
// raise the protected tenant's p99 6.9× to 22.8× (docs/sandboxes.md): it rejects a group's new
// requests only while the usage it recorded at its last run (once a second) is over the limit,
// and it measures a task's CPU over its whole age, queue wait included, so a flood that gets ahead
// of the node reads low while its queued shard requests, which use no CPU and so are never
// cancelled, wait in the search queue in front of the other tenants. The loop rejects those
// queued requests and cancels the running ones over the sandbox's limit. Soft sandboxes are left
// to the plugin: both act on them only while the node is in duress, where the plugin is faster.
func secondLine(defs sandbox.Definitions) []string {
	var hard []string
	for _, s := range defs.Sandboxes {
		if s.Enforcement == sandbox.Hard {
			hard = append(hard, s.Name)
		}
	}
	return hard
}

// sandboxFinish ends an invocation, whether its passes all ran (err nil) or one failed: one
// "Sandbox Enforced" event per sandbox for every cancellation planned, and the invocation's record
// in the history. A record that cannot be written is logged and said in res.History; it does
// not fail the invocation, whose cancellations are made.
func (e *Engine) sandboxFinish(ctx context.Context, res *SandboxResult, rec *sandbox.Recorder, err error) error {
	if res.Passes > 0 {
		r := rec.Record(e.now())
		ttl := cmp.Or(e.Config.Sandbox.HistoryRetention.Std(), sandbox.DefaultHistoryRetention)
		if what, herr := PutSandboxRecord(ctx, e.Store, res.Cluster, r, ttl); herr != nil {
			res.History = fmt.Sprintf("not recorded: %v", herr)
			e.log().Error("sandbox history", "cluster", res.Cluster, "error", herr)
		} else {
			res.History = what
		}
	}
	return errors.Join(err, e.publishEnforced(ctx, *res))
}

// sandboxLoop runs the passes after the first until the budget is spent, the context ends, or a
// pass fails. Each pass measures the tasks the pass before read over the time between the two
// (sandbox.Recent), so a flood whose requests wait long in the search queue reads at the rate it
// uses the node now; prev is the first pass's tasks.
func (e *Engine) sandboxLoop(ctx context.Context, name string, api TenantCluster, defs sandbox.Definitions, start time.Time, res *SandboxResult, rec *sandbox.Recorder, act actScope, prev []sandbox.Task) error {
	interval := cmp.Or(e.SandboxLoop.Interval, DefaultSandboxInterval)
	if act == actHard {
		interval = cmp.Or(e.SandboxLoop.Interval, SecondLineInterval)
	}
	budget := e.SandboxLoop.Budget
	if budget == 0 {
		if dl, ok := ctx.Deadline(); ok {
			budget = time.Until(dl) - SandboxMargin
		}
	}
	acting := slices.ContainsFunc(defs.Sandboxes, func(s sandbox.Sandbox) bool { return s.Enforcement != sandbox.Monitor })
	switch {
	case !acting:
		res.Loop = "no loop: every sandbox is in monitor mode, so there is nothing to contain between invocations"
		return nil
	case budget < interval:
		res.Loop = fmt.Sprintf("no loop: a budget of %s leaves no %s interval", budget.Round(time.Millisecond), interval)
		return nil
	}
	res.Loop = fmt.Sprintf("looked every %s for %s", interval, budget)
	for e.now().Add(interval).Sub(start) <= budget {
		if err := e.sleep(ctx, interval); err != nil {
			res.Loop += fmt.Sprintf("; stopped after %d passes: %v", res.Passes, err)
			return nil
		}
		tasks, err := e.sandboxPass(ctx, name, api, defs, res, rec, act, prev)
		if err != nil {
			return err
		}
		prev = tasks
	}
	return nil
}

// sandboxPass is one look: node loads, health, tasks, the assessment, its metrics, and the
// cancellations of the sandboxes act covers, behind the breaker. It returns the tasks as read;
// those also in prev, the pass before's, are measured since then. The tasks are read last, and cancelled right after: a search
// lives seconds, and every call between listing it and cancelling it is a chance for it to
// finish first.
func (e *Engine) sandboxPass(ctx context.Context, name string, api TenantCluster, defs sandbox.Definitions, res *SandboxResult, rec *sandbox.Recorder, act actScope, prev []sandbox.Task) ([]sandbox.Task, error) {
	res.Passes++
	loads, err := api.NodeLoads(ctx)
	if err != nil {
		return nil, fmt.Errorf("sandbox %s: %w", name, err)
	}
	health, herr := api.Health(ctx)
	tasks, err := api.SearchTasks(ctx)
	if err != nil {
		return nil, fmt.Errorf("sandbox %s: %w", name, err)
	}
	a := sandbox.Assess(sandbox.Recent(prev, tasks), loads, defs)
	res.Report, res.Tasks, res.Assigned, res.Short = a.Report, len(tasks), a.Assigned, a.Shortfalls
	e.sandboxMetrics(name, a.Report)
	rec.Pass(a.Report, loads)
	for _, f := range a.Report.Findings {
		if f.Action != sandbox.ActionNone || f.Usage > f.CancelAbove {
			e.log().Info("sandbox finding", "cluster", name, "node", f.Node, "sandbox", f.Sandbox, "resource", f.Resource,
				"mode", f.Mode, "action", f.Action, "usage", f.Usage, "limit", f.CancelAbove, "reason", f.Reason)
		}
	}
	for _, s := range a.Shortfalls {
		e.log().Warn("sandbox shortfall", "cluster", name, "reason", s.Reason)
	}
	cancels := a.Cancellations
	switch act {
	case actNone:
		cancels = nil
	case actHard:
		cancels = slices.DeleteFunc(slices.Clone(cancels), func(c sandbox.Cancellation) bool { return c.Mode != sandbox.Hard })
	}
	if len(cancels) == 0 {
		return tasks, nil
	}

	// The figures are this pass's own reads, so they are fresh; cancelling cures slow searches
	// rather than adding to them, so the latency check does not hold it back.
	in := safety.Inputs{Reachable: herr, Health: health.Status, Relocating: health.Relocating, Initializing: health.Initializing,
		LatencyExempt: true}
	// Recoveries hold moves back, which add to them; a cancellation adds none, so the cluster's
	// relocations are counted (max_relocating still applies) against no rebalance limit.
	in.Recoveries = safety.Recoveries{Relocating: health.Relocating, Limits: cluster.RecoveryLimits{
		NodeIncoming: cluster.DefaultNodeConcurrentRecoveries, NodeOutgoing: cluster.DefaultNodeConcurrentRecoveries,
		ClusterRebalance: safety.Unlimited, Known: true}}
	res.Breaker = safety.Evaluate(in, e.Config.Safety)
	first := len(res.Outcomes)
	for _, c := range cancels {
		o := CancelOutcome{Cancellation: c}
		switch {
		case !res.Breaker.Closed:
			o.Outcome, o.Why = CancelSkipped, res.Breaker.Reason()
		case e.Config.Safety.DryRun:
			o.Outcome, o.Why = CancelDryRun, "dry-run: would POST _tasks/"+c.Task+"/_cancel"
		default:
			o.Outcome, o.Why = e.cancel(ctx, api, c)
		}
		res.Outcomes = append(res.Outcomes, o)
		rec.Outcome(c, o.Outcome)
		e.log().Info("sandbox cancellation", "cluster", name, "task", c.Task, "opaque_id", c.OpaqueID, "sandbox", c.Sandbox,
			"kind", c.Kind, "outcome", o.Outcome, "why", o.Why, "reason", c.Reason)
	}
	if !res.Breaker.Closed {
		e.metric(name, "BreakerOpen", telemetry.UnitCount, 1)
	}
	executed := 0
	bySandbox := map[string]int{}
	for _, o := range res.Outcomes[first:] {
		if o.Outcome == CancelExecuted {
			executed++
			bySandbox[o.Sandbox]++
		}
	}
	e.metric(name, "SandboxTasksCancelled", telemetry.UnitCount, float64(executed))
	if e.Metrics != nil {
		// Per sandbox, so the dashboard shows each tenant's cancellations beside its usage.
		for sb, n := range bySandbox {
			e.Metrics.Add("SandboxRequestsCancelled", telemetry.UnitCount, float64(n),
				telemetry.Dimension{Name: "Cluster", Value: name}, telemetry.Dimension{Name: "Sandbox", Value: sb})
		}
	}
	return tasks, nil
}

// cancel sends one cancellation. A task that finished meanwhile is gone, not a failure.
func (e *Engine) cancel(ctx context.Context, api SandboxAPI, c sandbox.Cancellation) (string, string) {
	err := api.CancelTask(ctx, c.Task)
	switch {
	case err == nil:
		return CancelExecuted, "cancelled: " + c.CancelReason()
	case errors.Is(err, ErrNotFound):
		return CancelGone, "the request finished before it could be cancelled: " + err.Error()
	default:
		return CancelFailed, err.Error()
	}
}

// sandboxMetrics emits, per node, sandbox and limited resource, the sandbox's usage and its
// cancellation limit, whatever the mode.
func (e *Engine) sandboxMetrics(name string, rep sandbox.Report) {
	if e.Metrics == nil {
		return
	}
	// SandboxOverLimit is 1 for a hard sandbox over its cancellation limit on some node in this
	// pass, else 0: its Maximum over N minutes is what the stack's per-sandbox alarm watches.
	over := map[string]float64{}
	for _, f := range rep.Findings {
		if f.Mode == sandbox.Hard && f.Sandbox != sandbox.GenPop {
			if f.Usage > f.CancelAbove {
				over[f.Sandbox] = 1
			} else if _, ok := over[f.Sandbox]; !ok {
				over[f.Sandbox] = 0
			}
		}
	}
	for sb, v := range over {
		e.Metrics.Add("SandboxOverLimit", telemetry.UnitCount, v, telemetry.Dimension{Name: "Cluster", Value: name}, telemetry.Dimension{Name: "Sandbox", Value: sb})
	}
	actions := 0
	for _, f := range rep.Findings {
		// The dimensions are spelled out at each call, as the dashboard's test reads them.
		e.Metrics.Add("SandboxUsage", telemetry.UnitNone, f.Usage, telemetry.Dimension{Name: "Cluster", Value: name},
			telemetry.Dimension{Name: "Node", Value: f.Node}, telemetry.Dimension{Name: "Sandbox", Value: f.Sandbox},
			telemetry.Dimension{Name: "Resource", Value: string(f.Resource)}, telemetry.Dimension{Name: "Mode", Value: string(f.Mode)})
		e.Metrics.Add("SandboxLimit", telemetry.UnitNone, f.CancelAbove, telemetry.Dimension{Name: "Cluster", Value: name},
			telemetry.Dimension{Name: "Node", Value: f.Node}, telemetry.Dimension{Name: "Sandbox", Value: f.Sandbox},
			telemetry.Dimension{Name: "Resource", Value: string(f.Resource)}, telemetry.Dimension{Name: "Mode", Value: string(f.Mode)})
		if f.Action != sandbox.ActionNone {
			actions++
		}
	}
	e.metric(name, "SandboxFindings", telemetry.UnitCount, float64(actions))
}

// publishEnforced publishes one "Sandbox Enforced" event per sandbox with cancellations planned in
// the invocation (enforcedEvents).
func (e *Engine) publishEnforced(ctx context.Context, res SandboxResult) error {
	events := enforcedEvents(res, e.now())
	if len(events) == 0 {
		return nil
	}
	if err := e.Bus.Publish(ctx, events...); err != nil {
		return fmt.Errorf("sandbox %s: %w", res.Cluster, err)
	}
	return nil
}

// enforcedEvents summarizes an invocation's cancellation outcomes per sandbox, in the order the
// sandboxes first lost a request: the counts by outcome, the shares freed (executed) or that
// would have been (the others) per resource, and the first bus.MaxEnforcedRequests requests with
// their figures, reasons and outcomes.
func enforcedEvents(res SandboxResult, at time.Time) []bus.Event {
	var order []string
	by := map[string]*bus.SandboxCancellations{}
	modes := map[string]string{}
	for _, o := range res.Outcomes {
		c := o.Cancellation
		sc := by[c.Sandbox]
		if sc == nil {
			sc = &bus.SandboxCancellations{Sandbox: c.Sandbox, DryRun: res.DryRun, Passes: res.Passes,
				Outcomes: map[string]int{}, Freed: map[string]float64{}}
			by[c.Sandbox] = sc
			order = append(order, c.Sandbox)
			modes[c.Sandbox] = string(c.Mode)
		}
		sc.Count++
		sc.Outcomes[o.Outcome]++
		if o.Outcome == CancelExecuted {
			sc.Freed[string(c.Resource)] += c.Freed
		} else {
			if sc.WouldFree == nil {
				sc.WouldFree = map[string]float64{}
			}
			sc.WouldFree[string(c.Resource)] += c.Freed
		}
		if len(sc.Requests) < bus.MaxEnforcedRequests {
			sc.Requests = append(sc.Requests, bus.SandboxCancellation{Task: c.Task, OpaqueID: c.OpaqueID, Node: c.Node,
				Resource: string(c.Resource), Enforce: string(c.Mode), Kind: c.Kind, Figures: c.Figures, Outcome: o.Outcome,
				Reason: c.Reason, Why: o.Why})
		} else {
			sc.Omitted++
		}
	}
	events := make([]bus.Event, 0, len(order))
	for _, name := range order {
		sc := by[name]
		var actions []string
		for _, outcome := range []string{CancelExecuted, CancelDryRun, CancelSkipped, CancelGone, CancelFailed} {
			if n := sc.Outcomes[outcome]; n > 0 {
				actions = append(actions, fmt.Sprintf("%s: %d requests", outcome, n))
			}
		}
		var nodes []string
		for _, r := range sc.Requests {
			if !slices.Contains(nodes, r.Node) {
				nodes = append(nodes, r.Node)
			}
		}
		reason := fmt.Sprintf("sandbox %s (%s) over its limit on %s: %d requests planned for cancellation over %d passes (%s)",
			name, modes[name], strings.Join(nodes, ", "), sc.Count, sc.Passes, strings.Join(actions, ", "))
		if len(sc.Freed) > 0 {
			reason += ", freeing " + shares(sc.Freed)
		}
		if len(sc.WouldFree) > 0 {
			reason += ", not freeing " + shares(sc.WouldFree)
		}
		reason += "; each request's figures and reason are in cancellations.requests"
		if sc.Omitted > 0 {
			reason += fmt.Sprintf(" (the first %d; %d more counted only)", len(sc.Requests), sc.Omitted)
		}
		events = append(events, bus.Event{DetailType: bus.TypeSandboxEnforced, Time: at, Detail: bus.SandboxEnforced{
			Cluster: res.Cluster, Mode: modes[name], Actions: actions, Reason: reason, Cancellations: sc}})
	}
	return events
}

// shares writes per-resource sums of node shares: "1.250 of a node's cpu".
func shares(m map[string]float64) string {
	var parts []string
	for _, r := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%.3f of a node's %s", m[r], r))
	}
	return strings.Join(parts, " and ")
}

// PutSandboxRecord writes an invocation's record to the cluster's history, expiring after ttl,
// and says what it wrote.
func PutSandboxRecord(ctx context.Context, store state.Store, cluster string, r sandbox.Record, ttl time.Duration) (string, error) {
	key := state.Key{PK: pk(cluster), SK: sandboxHistoryKey(r.At)}
	value, err := state.EncodeJSON(r)
	if err != nil {
		return "", err
	}
	if _, err := store.Put(ctx, state.Item{Key: key, Value: value, ExpiresAt: r.At.Add(ttl)}, state.Condition{}); err != nil {
		return "", err
	}
	return fmt.Sprintf("recorded %s (%d bytes, %d usage rows, kept %s)", key.SK, len(value), len(r.Usage), ttl), nil
}

// SandboxHistory reads the cluster's sandbox records of the invocations that ended in [from, to],
// oldest first, with one Query per hour the window touches.
func SandboxHistory(ctx context.Context, store state.Store, cluster string, from, to time.Time) ([]sandbox.Record, error) {
	if to.Before(from) {
		return nil, fmt.Errorf("sandbox history of %s: window ends (%s) before it starts (%s)", cluster, to.Format(time.RFC3339), from.Format(time.RFC3339))
	}
	var out []sandbox.Record
	for _, prefix := range sandboxHistoryPrefixes(from, to) {
		items, err := store.Query(ctx, pk(cluster), prefix)
		if err != nil {
			return nil, fmt.Errorf("sandbox history of %s: %w", cluster, err)
		}
		for _, it := range items {
			r, err := state.DecodeJSON[sandbox.Record](it.Value)
			if err != nil {
				return nil, fmt.Errorf("sandbox history of %s: %s: %w", cluster, it.Key.SK, err)
			}
			if !r.At.Before(from) && !r.At.After(to) {
				out = append(out, r)
			}
		}
	}
	return out, nil
}
