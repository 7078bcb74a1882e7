package sandbox

import (
	"fmt"
	"slices"
)

// Usage is a share (0..1) of one node's resources.
type Usage struct {
	JVM float64 `json:"jvm"`
	CPU float64 `json:"cpu"`
}

func (u Usage) of(r Resource) float64 {
	if r == CPU {
		return u.CPU
	}
	return u.JVM
}

// NodeSample is one node's measured usage: the node's total and each sandbox's part of it (the
// resource stats of its tasks, summed by the sandbox each task resolved to).
type NodeSample struct {
	// Name is the node's name for reasons, when the key is its id.
	Name      string           `json:"name,omitempty"`
	Total     Usage            `json:"total"`
	Sandboxes map[string]Usage `json:"sandboxes"`
}

// NodeUsage holds a sample per node name.
type NodeUsage map[string]NodeSample

// Action is what a finding asks the node to do with a sandbox's tasks.
type Action string

// Actions, mildest first.
const (
	ActionNone   Action = "none"
	ActionReject Action = "reject" // refuse new tasks of the sandbox
	ActionCancel Action = "cancel" // cancel running tasks of the sandbox
)

// Finding is the verdict for one sandbox on one node for one resource, with every number used.
type Finding struct {
	Node     string      `json:"node"`
	Sandbox  string      `json:"sandbox"`
	Resource Resource    `json:"resource"`
	Mode     Enforcement `json:"mode"`
	// Usage is the sandbox's share of the node's resource; NodeUsage the node's total.
	Usage     float64 `json:"usage"`
	NodeUsage float64 `json:"node_usage"`
	// Allocation is the sandbox's share (genPop: what the sandboxes leave).
	Allocation float64 `json:"allocation"`
	// Rejection and Cancellation are the node thresholds; RejectAbove and CancelAbove the
	// sandbox's limits, its allocation scaled by each (or by its own threshold).
	Rejection    float64 `json:"rejection"`
	Cancellation float64 `json:"cancellation"`
	RejectAbove  float64 `json:"reject_above"`
	// SandboxThreshold is the sandbox's own threshold when it sets one (then RejectAbove and
	// CancelAbove are both allocation × it), else 0.
	SandboxThreshold float64 `json:"sandbox_threshold,omitempty"`
	CancelAbove      float64 `json:"cancel_above"`
	Action           Action  `json:"action"`
	Reason           string  `json:"reason"`
}

// Report is the outcome of one Evaluate.
type Report struct {
	// Findings run node by node (sorted by name), then sandbox in definition order with genPop
	// last, then jvm before cpu.
	Findings []Finding `json:"findings"`
	// Unknown lists "node/sandbox" pairs whose usage names no defined sandbox; it is not enforced.
	Unknown []string `json:"unknown,omitempty"`
}

// Actions returns the findings that reject or cancel.
func (r Report) Actions() []Finding {
	var out []Finding
	for _, f := range r.Findings {
		if f.Action != ActionNone {
			out = append(out, f)
		}
	}
	return out
}

// Evaluate says, per node, sandbox and limited resource, what the enforcement mode implies for
// the measured usage.
//
// As the query sandboxing RFC puts it, "sandbox level thresholds are always proportional to the node level
// thresholds": a sandbox overflows for rejection when its usage is above allocation × the node's
// rejection threshold, and for cancellation above allocation × the cancellation threshold. This
// is also how OpenSearch's workload management normalises a group's limit, so the same
// definitions mean the same thing whether shardwise or the plugin enforces them. Then:
//
//   - monitor: report only, never act;
//   - soft: the sandbox may overflow while the node is calm; it is rejected only when the node is
//     above its rejection threshold and the sandbox overflows for rejection, and canceled when
//     the node is above its cancellation threshold and the sandbox overflows for cancellation;
//   - hard: the sandbox is canceled when it overflows for cancellation, else rejected when it
//     overflows for rejection, whatever the node's usage.
//
// A resource's cluster-level enforcement, when set, replaces each sandbox's mode for it. genPop is
// evaluated on every resource some sandbox is limited on, with the share the sandboxes leave and
// the cluster-level mode, or soft when none is set: it has no owner to tune it, so it gets the
// mode that only acts when a node is in duress.
func Evaluate(usage NodeUsage, defs Definitions) Report {
	var rep Report
	nodes := make([]string, 0, len(usage))
	for n := range usage {
		nodes = append(nodes, n)
	}
	slices.Sort(nodes)

	known := map[string]bool{GenPop: true}
	left := map[Resource]float64{}
	limited := map[Resource]bool{}
	for _, s := range defs.Sandboxes {
		known[s.Name] = true
	}
	for _, r := range resources {
		left[r] = 1
		for _, s := range defs.Sandboxes {
			if a, ok := s.Resources.allocation(r); ok {
				left[r] -= a
				limited[r] = true
			}
		}
		left[r] = max(left[r], 0)
	}

	for _, node := range nodes {
		sample := usage[node]
		for _, s := range defs.Sandboxes {
			for _, r := range resources {
				if a, ok := s.Resources.allocation(r); ok {
					own, hasOwn := s.Resources.threshold(r)
					f := judge(node, s.Name, r, s.Enforcement, a, own, hasOwn, sample, defs.Resources.limit(r))
					rep.Findings = append(rep.Findings, f)
				}
			}
		}
		for _, r := range resources {
			if limited[r] {
				rep.Findings = append(rep.Findings, judge(node, GenPop, r, Soft, left[r], 0, false, sample, defs.Resources.limit(r)))
			}
		}
		var unknown []string
		for name := range sample.Sandboxes {
			if !known[name] {
				unknown = append(unknown, node+"/"+name)
			}
		}
		slices.Sort(unknown)
		rep.Unknown = append(rep.Unknown, unknown...)
	}
	return rep
}

// judge applies one mode to one sandbox's usage of one resource on one node. A sandbox's own
// threshold (hasOwn) replaces the node's thresholds in its limits, not in the node's duress.
func judge(node, sandbox string, r Resource, mode Enforcement, alloc, own float64, hasOwn bool, sample NodeSample, limit ResourceLimit) Finding {
	if limit.Enforcement != "" {
		mode = limit.Enforcement
	}
	f := Finding{
		Node: node, Sandbox: sandbox, Resource: r, Mode: mode,
		Usage: sample.Sandboxes[sandbox].of(r), NodeUsage: sample.Total.of(r), Allocation: alloc,
		Rejection: float64(limit.Threshold.Rejection), Cancellation: float64(limit.Threshold.Cancellation),
		Action: ActionNone,
	}
	f.RejectAbove, f.CancelAbove = alloc*f.Rejection, alloc*f.Cancellation
	if hasOwn {
		f.SandboxThreshold = own
		f.RejectAbove, f.CancelAbove = alloc*own, alloc*own
	}
	overReject, overCancel := f.Usage > f.RejectAbove, f.Usage > f.CancelAbove
	nodeReject, nodeCancel := f.NodeUsage > f.Rejection, f.NodeUsage > f.Cancellation

	ownNote := ""
	if hasOwn {
		ownNote = fmt.Sprintf(" × its own threshold %.2f", own)
	}
	where := node
	if sample.Name != "" && sample.Name != node {
		where = sample.Name
	}
	who := fmt.Sprintf("%s on %s uses %.3f of %s (allocation %.3f%s: reject above %.3f, cancel above %.3f), node at %.3f (rejection %.2f, cancellation %.2f)",
		sandbox, where, f.Usage, r, alloc, ownNote, f.RejectAbove, f.CancelAbove, f.NodeUsage, f.Rejection, f.Cancellation)
	switch mode {
	case Hard:
		switch {
		case overCancel:
			f.Action = ActionCancel
			f.Reason = who + "; hard: over its cancellation limit, so cancel its tasks whatever the node's state."
		case overReject:
			f.Action = ActionReject
			f.Reason = who + "; hard: over its rejection limit, so reject its new tasks whatever the node's state."
		default:
			f.Reason = who + "; hard: within its limits."
		}
	case Soft:
		switch {
		case nodeCancel && overCancel:
			f.Action = ActionCancel
			f.Reason = who + "; soft: the node is over its cancellation threshold and the sandbox over its cancellation limit, so cancel its tasks."
		case nodeReject && overReject:
			f.Action = ActionReject
			f.Reason = who + "; soft: the node is over its rejection threshold and the sandbox over its rejection limit, so reject its new tasks."
		case overReject:
			f.Reason = who + "; soft: over its limit, allowed while the node is under its thresholds."
		default:
			f.Reason = who + "; soft: within its limits."
		}
	default:
		state := "within its limits"
		if overReject {
			state = "over its limits"
		}
		f.Reason = who + "; monitor: " + state + ", reported only."
	}
	return f
}
