package sandbox

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// Cancellation is one request to cancel, with every number that chose it.
type Cancellation struct {
	// Task is the request's top-level task, which POST _tasks/{id}/_cancel takes: OpenSearch
	// cancels its child tasks on every node with it.
	Task     string `json:"task"`
	OpaqueID string `json:"opaque_id,omitempty"`
	// Source is the indices the request reads; Kind is KindCancel or KindReject.
	Source   string      `json:"source,omitempty"`
	Kind     string      `json:"kind"`
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

// Kinds of cancellation.
const (
	// KindCancel stops a request whose tasks are running, to bring its sandbox down to its limit.
	KindCancel = "cancel"
	// KindReject stops a request whose tasks on the node still wait for a search thread: from
	// outside the cluster that is how the sandboxing RFC's rejection ("new tasks of overflowing
	// sandboxes are rejected") is done, and what keeps a flood's queued work from reaching the
	// threads the other tenants wait for.
	KindReject = "reject"
)

// request is one top-level request and what its tasks use on each node.
type request struct {
	root    string
	sandbox string
	opaque  string
	// source is the indices the request reads, which index permissions bound: a tenant can tag
	// its request with any X-Opaque-Id, but it can only search indices it may read.
	source      string
	start       time.Time
	cancellable bool
	cancelled   bool
	perNode     map[string]Usage
	// queued holds the nodes where one of its shard-level tasks waits for a search thread.
	queued map[string]bool
}

// noSource names the requests whose description shows no indices.
const noSource = "(no indices)"

// PlanCancellations says which requests to cancel for the report's cancel and reject findings,
// and what stays over its limit.
//
// A finding acts when its sandbox is over a limit on a node: in hard mode whatever the node's
// state, in soft mode only while the node is past its threshold (see Evaluate; monitor never
// acts). The sandbox's requests with tasks on that node are grouped by their source, the indices
// they read, and the sources are taken heaviest first on that node: the overflow is charged to
// the work that makes it, so requests that carry another tenant's X-Opaque-Id, and so count in
// that tenant's sandbox, are cut before the tenant's own lighter ones. Within a source, running
// requests are cancelled newest first, the order the RFC's discussion asks for ("I want to abort
// the most recent one"), until the sandbox's usage there is at most its cancellation limit (a
// reject finding cancels none). Then the requests of the sources that cover the excess whose
// tasks still wait in that node's search queue are rejected: cancelled before they take a thread.
// A request is cancelled as a whole through its top-level task, so what it frees counts on every
// node its tasks run on, and it is cancelled at most once. Requests OpenSearch already marks
// cancelled are counted as gone and not cancelled again.
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
			src := strings.Join(slices.Sorted(slices.Values(RequestOf(root).Indices)), ",")
			r = &request{root: t.Root, sandbox: t.Sandbox, opaque: root.Headers[OpaqueIDHeader], source: cmp.Or(src, noSource), start: root.Start,
				cancellable: root.Cancellable, cancelled: root.Cancelled, perNode: map[string]Usage{}, queued: map[string]bool{}}
			reqs[t.Root] = r
		}
		if t.Queued {
			r.queued[t.Node] = true
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
	newest := slices.SortedFunc(maps.Values(reqs), func(a, b *request) int { return newestFirst(*a, *b) })
	for _, r := range newest {
		if r.cancelled {
			release(r)
		}
	}

	chosen := map[string]bool{}
	var out []Cancellation
	var short []Shortfall
	for _, f := range rep.Findings {
		if f.Action != ActionCancel && f.Action != ActionReject {
			continue
		}
		cur := remaining[f.Node][f.Sandbox].of(f.Resource)
		limit := f.CancelAbove
		if f.Action == ActionReject {
			limit = f.RejectAbove
		}
		start := cur
		ordered, cut := bySource(newest, f, cur-limit, chosen)
		choose := func(r *request, kind string, usage, share, after float64) {
			chosen[r.root] = true
			c := Cancellation{
				Task: r.root, OpaqueID: r.opaque, Source: r.source, Kind: kind, Started: r.start, Node: f.Node, Sandbox: f.Sandbox, Resource: f.Resource, Mode: f.Mode,
				Figures: Figures{Usage: usage, Freed: share, After: after, Limit: limit, Allocation: f.Allocation, NodeUsage: f.NodeUsage},
			}
			c.Reason = cancelReason(c, r, f, nodeName(byNode, f.Node))
			out = append(out, c)
		}
		if f.Action == ActionCancel {
			for _, r := range ordered {
				if cur <= limit+allocationSlack {
					break
				}
				share := r.perNode[f.Node].of(f.Resource)
				if chosen[r.root] || r.cancelled || !r.cancellable || share <= 0 {
					continue
				}
				release(r)
				after := remaining[f.Node][f.Sandbox].of(f.Resource)
				choose(r, KindCancel, cur, share, after)
				cur = after
			}
		}
		// Queued work is refused only when the sandbox was over its limit there once the requests
		// cancelled before were released (bySource then marks every source, whatever the excess).
		for _, r := range ordered {
			if start <= limit+allocationSlack {
				break
			}
			if cut[r.source] && r.queued[f.Node] && !chosen[r.root] && !r.cancelled && r.cancellable {
				// Its figure is the usage that made the sandbox refuse queued work, before this
				// pass's cancellations brought it down.
				choose(r, KindReject, start, 0, cur)
			}
		}
		if f.Action == ActionCancel && cur > limit+allocationSlack {
			short = append(short, Shortfall{Node: f.Node, Sandbox: f.Sandbox, Resource: f.Resource, Usage: cur, Limit: limit,
				Reason: fmt.Sprintf("sandbox %s on %s stays at %.3f of %s, over its cancellation limit %.3f: none of its requests with tasks there is left to cancel (already chosen, already cancelled, or not cancellable)",
					f.Sandbox, nodeName(byNode, f.Node), cur, f.Resource, limit)})
		}
	}
	return out, short
}

// bySource orders the finding's sandbox's requests with tasks on its node (running or queued)
// heaviest source first, newest first within a source, and says which sources cover excess:
// the heaviest ones whose usage there, summed, reaches it (all of them if none does).
func bySource(newest []*request, f Finding, excess float64, chosen map[string]bool) ([]*request, map[string]bool) {
	weight := map[string]float64{}
	var mine []*request
	for _, r := range newest {
		share := r.perNode[f.Node].of(f.Resource)
		if r.sandbox != f.Sandbox || r.cancelled || chosen[r.root] || (share <= 0 && !r.queued[f.Node]) {
			continue
		}
		weight[r.source] += max(share, 0)
		mine = append(mine, r)
	}
	sources := slices.SortedFunc(maps.Keys(weight), func(a, b string) int {
		return cmp.Or(cmp.Compare(weight[b], weight[a]), cmp.Compare(a, b))
	})
	rank := map[string]int{}
	cut := map[string]bool{}
	acc := 0.0
	for i, s := range sources {
		rank[s] = i
		if acc <= excess+allocationSlack && weight[s] > 0 {
			cut[s] = true
			acc += weight[s]
		}
	}
	slices.SortStableFunc(mine, func(a, b *request) int { return cmp.Compare(rank[a.source], rank[b.source]) })
	return mine, cut
}

// cancelReason says why r is cancelled for finding f, with c's numbers.
func cancelReason(c Cancellation, r *request, f Finding, node string) string {
	who := ""
	if r.opaque != "" {
		who = fmt.Sprintf(" (X-Opaque-Id %q)", r.opaque)
	}
	limitName := "cancellation"
	if f.Action == ActionReject {
		limitName = "rejection"
	}
	started := r.start.UTC().Format(time.RFC3339)
	var why string
	if c.Kind == KindReject {
		why = fmt.Sprintf("reject request %s%s (indices %s), started %s, whose tasks on %s still wait for a search thread: sandbox %s uses %.3f of %s there, over its %s %s limit %.3f (allocation %.3f), and this source is among the heaviest that make the excess, so its queued work is refused before it runs",
			r.root, who, r.source, started, node, f.Sandbox, c.Usage, f.Resource, f.Mode, limitName, c.Limit, f.Allocation)
	} else {
		why = fmt.Sprintf("cancel request %s%s (indices %s), started %s, the newest of sandbox %s's heaviest source on %s: the sandbox uses %.3f of %s there, over its %s cancellation limit %.3f (allocation %.3f); this request's %.3f brings it to %.3f",
			r.root, who, r.source, started, f.Sandbox, node, c.Usage, f.Resource, f.Mode, c.Limit, f.Allocation, c.Freed, c.After)
	}
	if f.Mode == Soft {
		th := f.Cancellation
		if f.Action == ActionReject {
			th = f.Rejection
		}
		why += fmt.Sprintf("; soft: the node is at %.3f, past its %s threshold %.2f", f.NodeUsage, limitName, th)
	}
	return why
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
