package engine

import (
	"context"
	"fmt"
	"slices"

	"github.com/shardwise/shardwise/shared/bus"
	"github.com/shardwise/shardwise/shared/safety"
	"github.com/shardwise/shardwise/shared/sandbox"
	"github.com/shardwise/shardwise/shared/telemetry"
)

// WLMCluster is what syncing sandboxes to OpenSearch's workload management needs from a cluster:
// its version, probes of the plugin's endpoints, the plugin's state, and one change at a time.
type WLMCluster interface {
	// Version is the version number GET / reports.
	Version(ctx context.Context) (string, error)
	// WLMProbe reports whether the cluster serves GET path (false on 404 or "no handler found").
	WLMProbe(ctx context.Context, path string) (bool, error)
	// WLMState reads every group of sup.API, every rule when sup.Rules, and the wlm.* settings.
	WLMState(ctx context.Context, sup sandbox.WLMSupport) (sandbox.WLMState, error)
	// WLMSend makes one call, once.
	WLMSend(ctx context.Context, c sandbox.Call) error
	// WLMStats reads GET _wlm/stats: each node's groups, with their counters and usage.
	WLMStats(ctx context.Context) ([]sandbox.WLMGroupStats, error)
}

// WLM call outcomes.
const (
	WLMDone    = "done"
	WLMWould   = "dry-run"
	WLMFailed  = "failed"
	WLMSkipped = "skipped"
)

// WLMCallOutcome is one call of a sync and what became of it.
type WLMCallOutcome struct {
	sandbox.Call
	Outcome string `json:"outcome"`
	Error   string `json:"error,omitempty"`
}

// WLMSyncResult reports one sync: what the cluster offers, the drift found before any change, the
// calls made (or, in a dry run, that would be made) and the drift left after them.
type WLMSyncResult struct {
	Cluster string             `json:"cluster"`
	Support sandbox.WLMSupport `json:"support"`
	DryRun  bool               `json:"dry_run"`
	// Notes say what of the definitions the plugin cannot carry.
	Notes []string `json:"notes,omitempty"`
	// Ruled names the sandboxes a rule sends requests to, so the plugin attributes them itself.
	Ruled   []string         `json:"ruled,omitempty"`
	Mode    string           `json:"mode,omitempty"`
	Drift   []sandbox.Drift  `json:"drift"`
	Calls   []WLMCallOutcome `json:"calls,omitempty"`
	Breaker *safety.Verdict  `json:"breaker,omitempty"`
	// After is the drift read back once the calls were made; empty when the cluster matches.
	After []sandbox.Drift `json:"after,omitempty"`
	// Reason says in one sentence what the sync did and why.
	Reason string `json:"reason"`
}

// WLMOptions are a sync's safety settings: dry-run (on unless turned off) and the breaker's limits.
type WLMOptions struct {
	DryRun bool
	Safety safety.Config
}

// SyncWLM brings a cluster's workload-management groups, rules and wlm.* settings to what defs
// call for. It detects the plugin at run time (the group API by version and probe, the rule API by
// probe), reads the cluster, and reports the drift as data before changing anything. Behind the
// circuit breaker on fresh health, and in a dry run it reports the calls it would make and makes
// none. Bad definitions (a group name over 50 characters, thresholds the plugin refuses, limits
// that do not fit beside groups shardwise does not own) fail before any call. A cluster without
// workload management is reported with its reason and no error. Only groups named with
// sandbox.GroupPrefix and rules described with sandbox.RulePrefix are ever deleted.
func SyncWLM(ctx context.Context, api WLMCluster, hr HealthReader, defs sandbox.Definitions, opts WLMOptions) (WLMSyncResult, error) {
	res := WLMSyncResult{DryRun: opts.DryRun}
	version, err := api.Version(ctx)
	if err != nil {
		return res, fmt.Errorf("wlm: version: %w", err)
	}
	probes, err := sandbox.WLMProbes(version)
	if err != nil {
		return res, fmt.Errorf("wlm: %w", err)
	}
	found := map[string]bool{}
	for _, p := range probes {
		if found[p], err = api.WLMProbe(ctx, p); err != nil {
			return res, fmt.Errorf("wlm: probe %s: %w", p, err)
		}
	}
	res.Support = sandbox.DetectWLM(version, found)
	if !res.Support.Supported() {
		res.Reason = "not synced: " + res.Support.Reason
		return res, nil
	}
	want, err := sandbox.DesiredWLM(defs, res.Support)
	if err != nil {
		return res, err
	}
	res.Notes = want.Notes
	for _, r := range want.Rules {
		res.Ruled = append(res.Ruled, r.Sandbox)
	}
	res.Mode = want.Settings["wlm."+string(res.Support.API)+".mode"]
	have, err := api.WLMState(ctx, res.Support)
	if err != nil {
		return res, fmt.Errorf("wlm: read: %w", err)
	}
	res.Drift = sandbox.DiffWLM(want, have)
	if len(res.Drift) == 0 {
		res.Reason = fmt.Sprintf("in sync: %d groups, %d rules and the wlm settings match the definitions", len(want.Groups), len(want.Rules))
		return res, nil
	}
	plan, err := sandbox.PlanWLMGroups(res.Support, want, have)
	if err != nil {
		return res, err
	}
	plan.Calls = sandbox.WithRuleDeletes(plan.Calls, have)
	// planned is every call in the order it would be made, for a sync that makes none.
	planned := func() []sandbox.Call {
		calls := append(slices.Clone(plan.Calls), sandbox.PlanWLMRules(want, sandbox.ApplyGroupCalls(have, plan.Calls))...)
		if plan.Last != nil {
			calls = append(calls, *plan.Last)
		}
		return calls
	}
	health, herr := hr.Health(ctx)
	verdict := safety.Evaluate(safety.Inputs{Reachable: herr, Health: health.Status, Relocating: health.Relocating,
		Initializing: health.Initializing, LatencyExempt: true}, opts.Safety)
	res.Breaker = &verdict
	if !verdict.Closed {
		reason := verdict.Reason()
		for _, c := range planned() {
			res.Calls = append(res.Calls, WLMCallOutcome{Call: c, Outcome: WLMSkipped, Error: reason})
		}
		res.Reason = fmt.Sprintf("%d drifts, nothing changed: %s", len(res.Drift), reason)
		return res, nil
	}
	if opts.DryRun {
		for _, c := range planned() {
			res.Calls = append(res.Calls, WLMCallOutcome{Call: c, Outcome: WLMWould})
		}
		res.Reason = fmt.Sprintf("dry-run: %d drifts; %d calls would bring the cluster to the definitions", len(res.Drift), len(res.Calls))
		return res, nil
	}
	err = res.send(ctx, api, plan.Calls)
	if err == nil && res.Support.Rules && len(want.Rules)+len(have.Rules) > 0 {
		// Rules name their group by id, known only once the groups exist.
		if have, err = api.WLMState(ctx, res.Support); err != nil {
			err = fmt.Errorf("wlm: read after the group calls: %w", err)
			res.Reason = fmt.Sprintf("%d drifts; %v", len(res.Drift), err)
		} else {
			err = res.send(ctx, api, sandbox.PlanWLMRules(want, have))
		}
	}
	if plan.Last != nil {
		err = res.last(ctx, api, *plan.Last, err)
	}
	if err != nil {
		return res, err
	}
	after, err := api.WLMState(ctx, res.Support)
	if err != nil {
		return res, fmt.Errorf("wlm: read back: %w", err)
	}
	res.After = sandbox.DiffWLM(want, after)
	res.Reason = fmt.Sprintf("%d drifts; %d calls made", len(res.Drift), len(res.Calls))
	if len(res.After) > 0 {
		res.Reason += fmt.Sprintf("; %d drifts remain: %s", len(res.After), res.After[0])
		return res, fmt.Errorf("wlm: %d drifts remain after the sync, first %s", len(res.After), res.After[0])
	}
	res.Reason += "; the cluster matches the definitions"
	return res, nil
}

// send makes calls in order and stops at the first failure: the later calls are skipped, and
// the next sync reads the cluster afresh.
func (res *WLMSyncResult) send(ctx context.Context, api WLMCluster, calls []sandbox.Call) error {
	for i, c := range calls {
		if err := api.WLMSend(ctx, c); err != nil {
			res.Calls = append(res.Calls, WLMCallOutcome{Call: c, Outcome: WLMFailed, Error: err.Error()})
			for _, rest := range calls[i+1:] {
				res.Calls = append(res.Calls, WLMCallOutcome{Call: rest, Outcome: WLMSkipped, Error: "an earlier call failed"})
			}
			res.Reason = fmt.Sprintf("%d drifts; %s failed: %v", len(res.Drift), c, err)
			return fmt.Errorf("wlm: %s: %w", c, err)
		}
		res.Calls = append(res.Calls, WLMCallOutcome{Call: c, Outcome: WLMDone})
	}
	return nil
}

// last makes the plan's last call, which puts the definitions' mode in place after the group calls
// ran in mode enabled. After a failure (failed) it is still made, so the mode is not left enabled
// against the definitions, unless no call was made at all: the mode is then as it was before the
// sync. The error and the reason say which mode the failure left.
func (res *WLMSyncResult) last(ctx context.Context, api WLMCluster, c sandbox.Call, failed error) error {
	mode := res.Mode
	if failed != nil && !slices.ContainsFunc(res.Calls, func(o WLMCallOutcome) bool { return o.Outcome == WLMDone }) {
		res.Calls = append(res.Calls, WLMCallOutcome{Call: c, Outcome: WLMSkipped, Error: "no call was made: the mode is as it was before the sync"})
		res.Reason += "; no call was made, so the mode is as it was before the sync"
		return fmt.Errorf("%w; no call was made, so the mode is as it was before the sync", failed)
	}
	if err := api.WLMSend(ctx, c); err != nil {
		res.Calls = append(res.Calls, WLMCallOutcome{Call: c, Outcome: WLMFailed, Error: err.Error()})
		if failed != nil {
			res.Reason += fmt.Sprintf("; setting the mode back to %s failed too (%v): it is left enabled", mode, err)
			return fmt.Errorf("%w; setting the mode back to %s failed too, so it is left enabled: %s: %w", failed, mode, c, err)
		}
		res.Reason = fmt.Sprintf("%d drifts; %s failed: %v; the mode is left enabled", len(res.Drift), c, err)
		return fmt.Errorf("wlm: %s: %w; the mode is left enabled", c, err)
	}
	res.Calls = append(res.Calls, WLMCallOutcome{Call: c, Outcome: WLMDone})
	if failed != nil {
		res.Reason += "; the mode was set to " + mode + ", the definitions' mode, all the same"
		return fmt.Errorf("%w; the mode was set to %s, the definitions' mode, all the same", failed, mode)
	}
	return nil
}

// Lines are the result as the CLI, the log and the event print it: support, drift, calls, notes.
func (res WLMSyncResult) Lines() []string {
	out := []string{res.Reason}
	for _, d := range res.Drift {
		out = append(out, "drift: "+d.String())
	}
	for _, c := range res.Calls {
		line := c.Outcome + ": " + c.String()
		if c.Error != "" {
			line += ": " + c.Error
		}
		out = append(out, line)
	}
	for _, d := range res.After {
		out = append(out, "remaining drift: "+d.String())
	}
	for _, n := range res.Notes {
		out = append(out, "note: "+n)
	}
	return out
}

// sandboxWLM is the sandbox cycle's sync of its definitions to the cluster's workload management,
// dry-run unless the configuration turns it off. It logs, counts and publishes what it found and
// did; its failure is logged and does not stop the cycle's report. A cluster without the plugin
// is reported as such (SyncWLM) and changes nothing.
func (e *Engine) sandboxWLM(ctx context.Context, name string, api TenantCluster, defs sandbox.Definitions) (WLMSyncResult, error) {
	res, err := SyncWLM(ctx, api, api, defs, WLMOptions{DryRun: e.Config.Safety.DryRun, Safety: e.Config.Safety})
	res.Cluster = name
	for _, l := range res.Lines() {
		e.log().Info("sandbox wlm", "cluster", name, "line", l)
	}
	if err != nil {
		e.log().Error("sandbox wlm", "cluster", name, "error", err)
		e.metric(name, "WLMSyncErrors", telemetry.UnitCount, 1)
	}
	e.metric(name, "WLMDrift", telemetry.UnitCount, float64(len(res.Drift)))
	if len(res.Calls) == 0 {
		return res, err
	}
	mode := "wlm-sync"
	if res.DryRun {
		mode = "wlm-dry-run"
	}
	ev := bus.SandboxEnforced{Cluster: name, Mode: mode, Actions: res.Lines()[1:], Reason: res.Reason}
	if perr := e.Bus.Publish(ctx, bus.Event{DetailType: bus.TypeSandboxEnforced, Time: e.now(), Detail: ev}); perr != nil {
		e.log().Error("sandbox wlm: publish", "cluster", name, "error", perr)
	}
	return res, err
}

// wlmEnforces says whether the plugin contains every sandbox that acts, so the function need not:
// the sync succeeded for real (not a dry run), left no drift, set the plugin's mode to enabled, and
// gave each soft or hard sandbox a rule, without which the plugin never sees its requests.
func wlmEnforces(sync WLMSyncResult, syncErr error, defs sandbox.Definitions) (bool, string) {
	switch {
	case syncErr != nil:
		return false, "the workload-management sync failed: " + syncErr.Error()
	case !sync.Support.Supported():
		return false, "the cluster has no workload management: " + sync.Support.Reason
	case sync.DryRun:
		return false, "the workload-management sync is a dry run, so the plugin does not hold the sandboxes"
	case len(sync.After) > 0:
		return false, "the plugin still differs from the definitions: " + sync.After[0].String()
	case sync.Mode != "enabled":
		return false, "the plugin's mode is " + sync.Mode + ": it cancels nothing"
	}
	for _, s := range defs.Sandboxes {
		if s.Enforcement != sandbox.Monitor && !slices.Contains(sync.Ruled, s.Name) {
			return false, "sandbox " + s.Name + " has no rule, so the plugin never sees its requests"
		}
	}
	return true, "the workload-management plugin enforces every sandbox on the nodes, each from its rule"
}

// verifyWLM reads _wlm/stats and reports what the plugin did for each sandbox, as metrics
// (SandboxUsage with Mode "wlm", and per sandbox WLMCancellations and WLMRejections, totals since
// the node started) and as the result's verification.
func (e *Engine) verifyWLM(ctx context.Context, name string, api TenantCluster, defs sandbox.Definitions, sync WLMSyncResult) (sandbox.WLMVerification, error) {
	have, err := api.WLMState(ctx, sync.Support)
	if err != nil {
		return sandbox.WLMVerification{Reason: "not verified: " + err.Error()}, fmt.Errorf("wlm: read: %w", err)
	}
	stats, err := api.WLMStats(ctx)
	if err != nil {
		return sandbox.WLMVerification{Reason: "not verified: " + err.Error()}, fmt.Errorf("wlm: stats: %w", err)
	}
	v := sandbox.VerifyWLM(defs, have, stats)
	for _, s := range v.Sandboxes {
		e.log().Info("sandbox wlm stats", "cluster", name, "sandbox", s.Sandbox, "reason", s.Reason)
		if e.Metrics == nil || s.Nodes == 0 {
			continue
		}
		e.Metrics.Add("WLMCancellations", telemetry.UnitCount, float64(s.Cancellations), telemetry.Dimension{Name: "Cluster", Value: name}, telemetry.Dimension{Name: "Sandbox", Value: s.Sandbox})
		e.Metrics.Add("WLMRejections", telemetry.UnitCount, float64(s.Rejections), telemetry.Dimension{Name: "Cluster", Value: name}, telemetry.Dimension{Name: "Sandbox", Value: s.Sandbox})
		for r, u := range s.MaxUsage {
			if l, ok := s.Limit[r]; ok {
				e.Metrics.Add("WLMSandboxUsage", telemetry.UnitNone, u, telemetry.Dimension{Name: "Cluster", Value: name},
					telemetry.Dimension{Name: "Sandbox", Value: s.Sandbox}, telemetry.Dimension{Name: "Resource", Value: string(r)})
				e.Metrics.Add("WLMSandboxLimit", telemetry.UnitNone, l, telemetry.Dimension{Name: "Cluster", Value: name},
					telemetry.Dimension{Name: "Sandbox", Value: s.Sandbox}, telemetry.Dimension{Name: "Resource", Value: string(r)})
			}
		}
	}
	e.metric(name, "WLMUnenforcedSandboxes", telemetry.UnitCount, float64(len(v.Missing)))
	return v, nil
}
