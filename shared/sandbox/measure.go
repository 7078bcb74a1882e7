package sandbox

import (
	"cmp"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
)

// Task is one running task as GET _tasks?detailed=true shows it (OpenSearch 2.9+ with task
// resource tracking fills the resource figures from resource_stats.total).
type Task struct {
	// ID is "<node id>:<number>"; ParentID the same form, empty for a top-level task.
	ID          string
	ParentID    string
	Node        string
	Action      string
	Description string
	// Headers are the request headers OpenSearch keeps, X-Opaque-Id among them.
	Headers      map[string]string
	Start        time.Time
	RunningTime  time.Duration
	CPUTimeNanos int64
	MemoryBytes  int64
	Cancellable  bool
	Cancelled    bool
	// Queued is a shard-level task no thread has run yet (resource_stats.thread_info
	// .thread_executions 0): it waits in its node's search queue, uses nothing so far, and
	// cancelling it frees a place in that queue.
	Queued bool
}

// ShardLevel reports whether a search action is a shard-level phase
// (indices:data/read/search[phase/query]), the tasks that queue for a node's search threads.
func ShardLevel(action string) bool { return strings.Contains(action, "[phase/") }

// OpaqueIDHeader is the request header the tasks API shows and custom_id matches.
const OpaqueIDHeader = "X-Opaque-Id"

// NodeLoad is one node's own resource figures from GET _nodes/stats (os, process, jvm) and its
// processor count from GET _nodes (os.allocated_processors).
type NodeLoad struct {
	// Node is the node's id, as tasks name it; Name its name, for people.
	Node string
	Name string
	// CPU is the node's CPU use, 0..1: process.cpu.percent (the OpenSearch process, what its own
	// workload management tracks), or os.cpu.percent when the process figure is missing.
	CPU           float64
	HeapUsedBytes int64
	HeapMaxBytes  int64
	Processors    int
}

// Attributed is a task with the sandbox it counts against.
type Attributed struct {
	Task
	Sandbox string
	// Root is the top-level task whose request resolved the sandbox: the task itself, or the
	// farthest ancestor present in the listing.
	Root   string
	Score  int
	Reason string
}

var indicesInDescription = regexp.MustCompile(`indices\[([^\]]*)\]`)

// maxDepth stops a parent chain that loops (which OpenSearch never reports, but a listing is
// outside input).
const maxDepth = 64

// Attribute resolves each task to a sandbox, as the sandboxing RFC's high-level flow has it: the
// request is mapped on the coordinating node, and "all child tasks spawned from the request will
// also inherit the sandbox allocation, irrespective on which node it runs". A task follows
// parent_task_id to the farthest ancestor in the listing, on any node, and that root's headers
// (X-Opaque-Id as custom_id) and description (its indices[...], as indices_name) are matched by
// Resolve. A task whose parent is not in the listing (it finished, or is not a search action) is
// resolved from its own headers and description: OpenSearch copies the request's headers to
// every child task, so X-Opaque-Id survives.
func Attribute(tasks []Task, defs Definitions) []Attributed {
	byID := make(map[string]*Task, len(tasks))
	for i := range tasks {
		byID[tasks[i].ID] = &tasks[i]
	}
	resolved := map[string]Attributed{} // by root ID
	out := make([]Attributed, 0, len(tasks))
	for _, t := range tasks {
		root := &t
		for depth := 0; root.ParentID != "" && depth < maxDepth; depth++ {
			p, ok := byID[root.ParentID]
			if !ok || p.ID == t.ID {
				break
			}
			root = p
		}
		r, ok := resolved[root.ID]
		if !ok {
			sb, score, why := defs.Resolve(RequestOf(*root))
			r = Attributed{Sandbox: sb, Root: root.ID, Score: score, Reason: why}
			resolved[root.ID] = r
		}
		a := r
		a.Task = t
		if root.ID != t.ID {
			a.Reason = fmt.Sprintf("inherits from its parent request %s: %s", root.ID, r.Reason)
		}
		out = append(out, a)
	}
	return out
}

// RequestOf is what the tasks API tells about a task's request: X-Opaque-Id as custom_id and the
// indices of its description. User and roles are not shown (see Unobservable).
func RequestOf(t Task) Request {
	req := Request{CustomID: t.Headers[OpaqueIDHeader]}
	if m := indicesInDescription.FindStringSubmatch(t.Description); m != nil {
		for ix := range strings.SplitSeq(m[1], ",") {
			if ix = strings.TrimSpace(ix); ix != "" {
				req.Indices = append(req.Indices, ix)
			}
		}
	}
	return req
}

// TaskShare is a task's share of its node's resources: Heap is memory_in_bytes over the node's
// heap max, CPU its cpu_time over its running time (the average cores it kept busy) over the
// node's processors. Zero where a figure is missing.
func TaskShare(t Task, n NodeLoad) Usage {
	var u Usage
	if n.HeapMaxBytes > 0 {
		u.JVM = float64(t.MemoryBytes) / float64(n.HeapMaxBytes)
	}
	if t.RunningTime > 0 && n.Processors > 0 {
		u.CPU = float64(t.CPUTimeNanos) / float64(t.RunningTime.Nanoseconds()) / float64(n.Processors)
	}
	return u
}

// Measure is each node's usage: its total from its own CPU and heap (not a sum over tasks), and
// per sandbox the sum of TaskShare over the sandbox's tasks on that node. Tasks on nodes without
// a load are left out and named in the second result.
func Measure(tasks []Attributed, loads []NodeLoad) (NodeUsage, []string) {
	usage := NodeUsage{}
	byNode := map[string]NodeLoad{}
	for _, n := range loads {
		byNode[n.Node] = n
		heap := 0.0
		if n.HeapMaxBytes > 0 {
			heap = float64(n.HeapUsedBytes) / float64(n.HeapMaxBytes)
		}
		usage[n.Node] = NodeSample{Name: n.Name, Total: Usage{JVM: heap, CPU: n.CPU}, Sandboxes: map[string]Usage{}}
	}
	var missing []string
	for _, t := range tasks {
		n, ok := byNode[t.Node]
		if !ok {
			missing = append(missing, t.ID)
			continue
		}
		share := TaskShare(t.Task, n)
		s := usage[t.Node]
		u := s.Sandboxes[t.Sandbox]
		u.JVM += share.JVM
		u.CPU += share.CPU
		s.Sandboxes[t.Sandbox] = u
	}
	slices.Sort(missing)
	return usage, missing
}

// newestFirst orders requests by start time, newest first, then by ID for a stable order.
func newestFirst(a, b request) int {
	return cmp.Or(b.start.Compare(a.start), cmp.Compare(a.root, b.root))
}

// Recent returns cur with the CPU figures of every task also in prev (the same task read a pass
// before) made those of the time between the two reads: its cpu_time and running time less what
// they were then. TaskShare then gives the cores the task kept busy lately, not over its whole
// life. A task's life counts from its arrival on the node, its wait in the search queue included,
// so over its life a flood that keeps its requests queued for seconds reads as light as the time
// they wait is long: on a real OpenSearch 3.8 node the workload-management plugin, which measures
// so, read a flood of 8 searches a second at about its 0.08 limit while the flood held every
// search thread (docs/sandboxes.md). Tasks not in prev, or whose figures did not grow, are left
// as they are.
func Recent(prev, cur []Task) []Task {
	if len(prev) == 0 {
		return cur
	}
	before := make(map[string]Task, len(prev))
	for _, t := range prev {
		before[t.ID] = t
	}
	out := make([]Task, len(cur))
	for i, t := range cur {
		out[i] = t
		p, ok := before[t.ID]
		if !ok || t.RunningTime <= p.RunningTime || t.CPUTimeNanos < p.CPUTimeNanos {
			continue
		}
		out[i].CPUTimeNanos = t.CPUTimeNanos - p.CPUTimeNanos
		out[i].RunningTime = t.RunningTime - p.RunningTime
	}
	return out
}
