package engine

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/shardwise/shardwise/shared/bus"
	"github.com/shardwise/shardwise/shared/sandbox"
	"github.com/shardwise/shardwise/shared/snapshots"
	"github.com/shardwise/shardwise/shared/telemetry"
)

// Task is a running search task with the resources it used so far.
type Task struct {
	ID           string
	Node         string
	Action       string
	Description  string
	Headers      map[string]string
	RunningTime  time.Duration
	CPUTimeNanos int64
	MemoryBytes  int64
}

// SandboxResult is one sandbox cycle's report.
type SandboxResult struct {
	Cluster string         `json:"cluster"`
	Report  sandbox.Report `json:"report"`
	Tasks   int            `json:"tasks"`
	// Assigned counts the tasks resolved to each sandbox (genPop included).
	Assigned map[string]int `json:"assigned"`
}

// TaskLister is the part of a cluster API the sandbox function needs; clusters whose API cannot
// list tasks are reported as such.
type TaskLister interface {
	SearchTasks(ctx context.Context) ([]Task, error)
}

var indicesInDescription = regexp.MustCompile(`indices\[([^\]]*)\]`)

// Sandbox validates the sandbox definitions, resolves running search tasks to sandboxes by the
// RFC's similarity score and reports, per node and resource, what each sandbox's mode implies. This
// build reports; it does not reject or cancel.
func (e *Engine) Sandbox(ctx context.Context, name string) (SandboxResult, error) {
	res := SandboxResult{Cluster: name, Assigned: map[string]int{}}
	if len(e.Config.Sandbox.Definitions) == 0 {
		return res, nil
	}
	defs, err := sandbox.Parse(e.Config.Sandbox.Definitions)
	if err != nil {
		return res, fmt.Errorf("sandbox %s: definitions: %w", name, err)
	}
	api, err := e.api(name)
	if err != nil {
		return res, fmt.Errorf("sandbox: %w", err)
	}
	lister, ok := api.(TaskLister)
	if !ok {
		return res, fmt.Errorf("sandbox %s: the cluster API cannot list tasks", name)
	}
	tasks, err := lister.SearchTasks(ctx)
	if err != nil {
		return res, fmt.Errorf("sandbox %s: %w", name, err)
	}
	key, err := snapshots.Latest(ctx, e.Store, name)
	if err != nil {
		return res, fmt.Errorf("sandbox %s: %w", name, err)
	}
	snap, _, err := snapshots.Load(ctx, e.Store, name, key)
	if err != nil {
		return res, fmt.Errorf("sandbox %s: %w", name, err)
	}
	usage := sandbox.NodeUsage{}
	for _, n := range snap.Nodes {
		usage[n.ID] = sandbox.NodeSample{Total: sandbox.Usage{JVM: n.HeapRatio()}, Sandboxes: map[string]sandbox.Usage{}}
	}
	res.Tasks = len(tasks)
	for _, t := range tasks {
		node := snap.NodeByID(t.Node)
		if node == nil {
			continue
		}
		req := sandbox.Request{CustomID: t.Headers["X-Opaque-Id"]}
		if m := indicesInDescription.FindStringSubmatch(t.Description); m != nil {
			req.Indices = strings.Split(m[1], ",")
		}
		sb, _, _ := defs.Resolve(req)
		res.Assigned[sb]++
		ns := usage[node.ID]
		u := ns.Sandboxes[sb]
		// Heap share: the task's tracked allocations over the node's heap. CPU share: its CPU time
		// over its running time, spread over the node's search threads. Both are estimates from
		// task resource tracking (OpenSearch 2.9+).
		if node.HeapMaxBytes > 0 {
			u.JVM += float64(t.MemoryBytes) / float64(node.HeapMaxBytes)
		}
		if t.RunningTime > 0 && node.Search.Threads > 0 {
			u.CPU += float64(t.CPUTimeNanos) / float64(t.RunningTime.Nanoseconds()) / float64(node.Search.Threads)
		}
		ns.Sandboxes[sb] = u
		usage[node.ID] = ns
	}
	for id, ns := range usage {
		var cpu float64
		for _, u := range ns.Sandboxes {
			cpu += u.CPU
		}
		ns.Total.CPU = cpu
		usage[id] = ns
	}
	res.Report = sandbox.Evaluate(usage, defs)
	var actions []string
	for _, f := range res.Report.Actions() {
		actions = append(actions, fmt.Sprintf("would %s in %s on %s: %s", f.Action, f.Sandbox, f.Node, f.Reason))
	}
	e.metric(name, "SandboxFindings", telemetry.UnitCount, float64(len(actions)))
	for _, a := range actions {
		e.log().Info("sandbox", "cluster", name, "finding", a)
	}
	if len(actions) == 0 {
		return res, nil
	}
	ev := bus.SandboxEnforced{Cluster: name, Mode: "report", Actions: actions,
		Reason: fmt.Sprintf("%d running search tasks resolved to %d sandboxes; this build reports what enforcement would do", len(tasks), len(res.Assigned))}
	if err := e.Bus.Publish(ctx, bus.Event{DetailType: bus.TypeSandboxEnforced, Time: e.now(), Detail: ev}); err != nil {
		return res, fmt.Errorf("sandbox %s: %w", name, err)
	}
	return res, nil
}
