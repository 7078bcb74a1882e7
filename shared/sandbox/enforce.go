package sandbox

import (
	"fmt"
	"maps"
	"slices"
	"time"
)

// Cancellation is one request to cancel, with every number that chose it.
type Cancellation struct {
	// Task is the request's top-level task, which POST _tasks/{id}/_cancel takes: OpenSearch
	// cancels its child tasks on every node with it.
	Task     string      `json:"task"`
	OpaqueID string      `json:"opaque_id,omitempty"`
	Started  time.Time   `json:"started"`
	Node     string      `json:"node"`
	Sandbox  string      `json:"sandbox"`
	Resource Resource    `json:"resource"`
	Mode     Enforcement `json:"mode"`
	Figures
	Reason string `json:"reason"`
}

// Figures are the numbers that chose a cancellation, as the cancellation plan and the "Sandbox
// Enforced" event both carry them.
type Figures struct {
	// Usage is the sandbox's share of the node's resource before this cancellation, Freed this
	// request's part of it, After what is left; Limit is the sandbox's cancellation limit there.
	Usage float64 `json:"usage"`
	Freed float64 `json:"freed"`
	After float64 `json:"after"`
	Limit float64 `json:"limit"`
	// Allocation is the sandbox's allocation of the resource, NodeUsage the node's own use of it.
	Allocation float64 `json:"allocation"`
	NodeUsage  float64 `json:"node_usage"`
}

// nodeName is the node's name when its load has one, else its id.
func nodeName(loads map[string]NodeLoad, id string) string {
	if n := loads[id].Name; n != "" {
		return n
	}
	return id
}

// CancelReason is what the cancellation tells about itself, short enough for a log line: the
// sandbox, its limit and what it used.
func (c Cancellation) CancelReason() string {
	return fmt.Sprintf("shardwise sandbox %s (%s): %s on %s at %.3f over its limit %.3f",
		c.Sandbox, c.Mode, c.Resource, c.Node, c.Usage, c.Limit)
}

// Shortfall is a sandbox still over its cancellation limit after every request it could cancel.
type Shortfall struct {
	Node     string   `json:"node"`
	Sandbox  string   `json:"sandbox"`
	Resource Resource `json:"resource"`
	Usage    float64  `json:"usage"`
	Limit    float64  `json:"limit"`
	Reason   string   `json:"reason"`
}

// request is one top-level request and what its tasks use on each node.
type request struct {
	root        string
	sandbox     string
	opaque      string
	start       time.Time
	cancellable bool
	cancelled   bool
	perNode     map[string]Usage
}

// PlanCancellations says which requests to cancel for the report's cancel findings, and what
// stays over its limit.
//
// A finding asks to cancel when its sandbox is over its cancellation limit on a node: in hard
// mode whatever the node's state, in soft mode only while the node is past its cancellation
// threshold (see Evaluate; monitor never cancels). Its requests with tasks on that node are
// cancelled newest first, the order the RFC's discussion asks for ("I want to abort the most
// recent one"), until the sandbox's usage there is at most its limit. A request is cancelled as a
// whole through its top-level task, so what it frees counts on every node its tasks run on, and
// it is cancelled at most once. Requests OpenSearch already marks cancelled are counted as gone
// and not cancelled again.
func PlanCancellations(rep Report, tasks []Attributed, loads []NodeLoad) ([]Cancellation, []Shortfall) {
	byNode := map[string]NodeLoad{}
	for _, n := range loads {
		byNode[n.Node] = n
	}
	byID := map[string]Task{}
	for _, t := range tasks {
		byID[t.ID] = t.Task
	}
	reqs := map[string]*request{}
	for _, t := range tasks {
		r := reqs[t.Root]
		if r == nil {
			root := byID[t.Root]
			r = &request{root: t.Root, sandbox: t.Sandbox, opaque: root.Headers[OpaqueIDHeader], start: root.Start,
				cancellable: root.Cancellable, cancelled: root.Cancelled, perNode: map[string]Usage{}}
			reqs[t.Root] = r
		}
		if n, ok := byNode[t.Node]; ok {
			share := TaskShare(t.Task, n)
			u := r.perNode[t.Node]
			u.JVM += share.JVM
			u.CPU += share.CPU
			r.perNode[t.Node] = u
		}
	}

	// remaining[node][sandbox]: usage left once the chosen and already-cancelled requests go.
	remaining := map[string]map[string]Usage{}
	for _, f := range rep.Findings {
		if remaining[f.Node] == nil {
			remaining[f.Node] = map[string]Usage{}
		}
		u := remaining[f.Node][f.Sandbox]
		if f.Resource == CPU {
			u.CPU = f.Usage
		} else {
			u.JVM = f.Usage
		}
		remaining[f.Node][f.Sandbox] = u
	}
	release := func(r *request) {
		for node, share := range r.perNode {
			if m := remaining[node]; m != nil {
				u := m[r.sandbox]
				u.JVM -= share.JVM
				u.CPU -= share.CPU
				m[r.sandbox] = u
			}
		}
	}
	ordered := slices.SortedFunc(maps.Values(reqs), func(a, b *request) int { return newestFirst(*a, *b) })
	for _, r := range ordered {
		if r.cancelled {
			release(r)
		}
	}

	chosen := map[string]bool{}
	var out []Cancellation
	var short []Shortfall
	for _, f := range rep.Findings {
		if f.Action != ActionCancel {
			continue
		}
		cur := remaining[f.Node][f.Sandbox].of(f.Resource)
		for _, r := range ordered {
			if cur <= f.CancelAbove+allocationSlack {
				break
			}
			share := r.perNode[f.Node].of(f.Resource)
			if r.sandbox != f.Sandbox || chosen[r.root] || r.cancelled || !r.cancellable || share <= 0 {
				continue
			}
			chosen[r.root] = true
			release(r)
			after := remaining[f.Node][f.Sandbox].of(f.Resource)
			c := Cancellation{
				Task: r.root, OpaqueID: r.opaque, Started: r.start, Node: f.Node, Sandbox: f.Sandbox, Resource: f.Resource, Mode: f.Mode,
				Figures: Figures{Usage: cur, Freed: share, After: after, Limit: f.CancelAbove, Allocation: f.Allocation, NodeUsage: f.NodeUsage},
			}
			who := ""
			if r.opaque != "" {
				who = fmt.Sprintf(" (X-Opaque-Id %q)", r.opaque)
			}
			c.Reason = fmt.Sprintf("cancel request %s%s, started %s, the newest of sandbox %s on %s: the sandbox uses %.3f of %s there, over its %s cancellation limit %.3f (allocation %.3f); this request's %.3f brings it to %.3f",
				r.root, who, r.start.UTC().Format(time.RFC3339), f.Sandbox, nodeName(byNode, f.Node), cur, f.Resource, f.Mode, f.CancelAbove, f.Allocation, share, after)
			if f.Mode == Soft {
				c.Reason += fmt.Sprintf("; soft: the node is at %.3f, past its cancellation threshold %.2f", f.NodeUsage, f.Cancellation)
			}
			out = append(out, c)
			cur = after
		}
		if cur > f.CancelAbove+allocationSlack {
			short = append(short, Shortfall{Node: f.Node, Sandbox: f.Sandbox, Resource: f.Resource, Usage: cur, Limit: f.CancelAbove,
				Reason: fmt.Sprintf("sandbox %s on %s stays at %.3f of %s, over its cancellation limit %.3f: none of its requests with tasks there is left to cancel (already chosen, already cancelled, or not cancellable)",
					f.Sandbox, nodeName(byNode, f.Node), cur, f.Resource, f.CancelAbove)})
		}
	}
	return out, short
}

// Assessment is one look at a cluster's search tasks against the definitions: what each task
// counts against, each node's usage, the verdicts, and the cancellations they call for.
type Assessment struct {
	Tasks         []Attributed   `json:"-"`
	Usage         NodeUsage      `json:"usage"`
	Report        Report         `json:"report"`
	Cancellations []Cancellation `json:"cancellations,omitempty"`
	Shortfalls    []Shortfall    `json:"shortfalls,omitempty"`
	// Unweighed lists tasks on nodes that reported no load; they count in no usage.
	Unweighed []string `json:"unweighed,omitempty"`
	// Assigned counts tasks per sandbox, genPop included.
	Assigned map[string]int `json:"assigned"`
}

// Assess attributes, measures, evaluates and plans, in that order; defs must have passed Validate.
func Assess(tasks []Task, loads []NodeLoad, defs Definitions) Assessment {
	at := Attribute(tasks, defs)
	usage, unweighed := Measure(at, loads)
	rep := Evaluate(usage, defs)
	cs, short := PlanCancellations(rep, at, loads)
	assigned := map[string]int{}
	for _, t := range at {
		assigned[t.Sandbox]++
	}
	return Assessment{Tasks: at, Usage: usage, Report: rep, Cancellations: cs, Shortfalls: short, Unweighed: unweighed, Assigned: assigned}
}
