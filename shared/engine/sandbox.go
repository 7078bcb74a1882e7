package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/shardwise/shardwise/shared/bus"
	"github.com/shardwise/shardwise/shared/cluster"
	"github.com/shardwise/shardwise/shared/safety"
	"github.com/shardwise/shardwise/shared/sandbox"
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

// SandboxResult is one sandbox cycle's report.
type SandboxResult struct {
	Cluster  string              `json:"cluster"`
	Report   sandbox.Report      `json:"report"`
	Tasks    int                 `json:"tasks"`
	Assigned map[string]int      `json:"assigned"`
	Warnings []sandbox.Warning   `json:"warnings,omitempty"`
	Outcomes []CancelOutcome     `json:"outcomes,omitempty"`
	Short    []sandbox.Shortfall `json:"shortfalls,omitempty"`
	// Breaker is the circuit breaker's verdict, evaluated only when something is to be cancelled.
	Breaker safety.Verdict `json:"breaker"`
	DryRun  bool           `json:"dry_run"`
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

// Sandbox contains tenants from outside the cluster. It reads the running search tasks and each
// node's own CPU and heap, attributes every task to a sandbox through its top-level request
// (child tasks on any node inherit it), and judges each sandbox on each node by its mode
// (sandbox.Assess). Every cycle it emits each sandbox's usage and limit per node and resource as
// metrics, so monitor-mode sandboxes show on a dashboard. The requests soft and hard sandboxes
// must lose are cancelled newest first through POST _tasks/{id}/_cancel, behind the circuit
// breaker and dry-run like moves, and each is a "Sandbox Enforced" event with its numbers.
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
	e.sandboxWLM(ctx, name, api, defs)
	// The tasks are read last, and cancelled right after: a search lives seconds, and every call
	// between listing it and cancelling it is a chance for it to finish first.
	loads, err := api.NodeLoads(ctx)
	if err != nil {
		return res, fmt.Errorf("sandbox %s: %w", name, err)
	}
	health, herr := api.Health(ctx)
	tasks, err := api.SearchTasks(ctx)
	if err != nil {
		return res, fmt.Errorf("sandbox %s: %w", name, err)
	}
	a := sandbox.Assess(tasks, loads, defs)
	res.Report, res.Tasks, res.Assigned, res.Short = a.Report, len(tasks), a.Assigned, a.Shortfalls
	e.sandboxMetrics(name, a.Report)
	for _, f := range a.Report.Findings {
		if f.Action != sandbox.ActionNone || f.Usage > f.CancelAbove {
			e.log().Info("sandbox finding", "cluster", name, "node", f.Node, "sandbox", f.Sandbox, "resource", f.Resource,
				"mode", f.Mode, "action", f.Action, "usage", f.Usage, "limit", f.CancelAbove, "reason", f.Reason)
		}
	}
	for _, s := range a.Shortfalls {
		e.log().Warn("sandbox shortfall", "cluster", name, "reason", s.Reason)
	}
	if len(a.Cancellations) == 0 {
		return res, nil
	}

	// The figures are this cycle's own reads, so they are fresh; cancelling cures slow searches
	// rather than adding to them, so the latency check does not hold it back.
	in := safety.Inputs{Reachable: herr, Health: health.Status, Relocating: health.Relocating, Initializing: health.Initializing,
		LatencyExempt: true}
	// Recoveries hold moves back, which add to them; a cancellation adds none, so the cluster's
	// relocations are counted (max_relocating still applies) against no rebalance limit.
	in.Recoveries = safety.Recoveries{Relocating: health.Relocating, Limits: cluster.RecoveryLimits{
		NodeIncoming: cluster.DefaultNodeConcurrentRecoveries, NodeOutgoing: cluster.DefaultNodeConcurrentRecoveries,
		ClusterRebalance: safety.Unlimited, Known: true}}
	res.Breaker = safety.Evaluate(in, e.Config.Safety)
	for _, c := range a.Cancellations {
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
		e.log().Info("sandbox cancellation", "cluster", name, "task", c.Task, "opaque_id", c.OpaqueID, "sandbox", c.Sandbox,
			"outcome", o.Outcome, "why", o.Why, "reason", c.Reason)
	}
	if !res.Breaker.Closed {
		e.metric(name, "BreakerOpen", telemetry.UnitCount, 1)
	}
	e.metric(name, "SandboxTasksCancelled", telemetry.UnitCount, float64(res.Cancelled()))
	return res, e.publishCancellations(ctx, res)
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
	actions := 0
	for _, f := range rep.Findings {
		dims := []telemetry.Dimension{{Name: "Cluster", Value: name}, {Name: "Node", Value: f.Node},
			{Name: "Sandbox", Value: f.Sandbox}, {Name: "Resource", Value: string(f.Resource)}, {Name: "Mode", Value: string(f.Mode)}}
		e.Metrics.Add("SandboxUsage", telemetry.UnitNone, f.Usage, dims...)
		e.Metrics.Add("SandboxLimit", telemetry.UnitNone, f.CancelAbove, dims...)
		if f.Action != sandbox.ActionNone {
			actions++
		}
	}
	e.metric(name, "SandboxFindings", telemetry.UnitCount, float64(actions))
}

// publishCancellations publishes one "Sandbox Enforced" event per cancellation outcome.
func (e *Engine) publishCancellations(ctx context.Context, res SandboxResult) error {
	events := make([]bus.Event, 0, len(res.Outcomes))
	for _, o := range res.Outcomes {
		c := o.Cancellation
		events = append(events, bus.Event{DetailType: bus.TypeSandboxEnforced, Time: e.now(), Detail: bus.SandboxEnforced{
			Cluster: res.Cluster, Mode: string(c.Mode),
			Actions: []string{fmt.Sprintf("%s: cancel %s (%s) on account of %s", o.Outcome, c.Task, c.OpaqueID, c.Node)},
			Reason:  c.Reason + "; " + o.Why,
			Cancellation: &bus.SandboxCancellation{
				Task: c.Task, OpaqueID: c.OpaqueID, Node: c.Node, Sandbox: c.Sandbox, Resource: string(c.Resource), Enforce: string(c.Mode),
				Figures: c.Figures, DryRun: res.DryRun, Outcome: o.Outcome,
			},
		}})
	}
	if len(events) == 0 {
		return nil
	}
	if err := e.Bus.Publish(ctx, events...); err != nil {
		return fmt.Errorf("sandbox %s: %w", res.Cluster, err)
	}
	return nil
}
