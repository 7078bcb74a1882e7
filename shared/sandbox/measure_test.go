package sandbox

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

func tenantDefs(mode Enforcement) Definitions {
	return Definitions{Sandboxes: []Sandbox{
		{Name: "noisy", Attributes: Attributes{CustomID: "noisy-*"}, Resources: Allocations{CPU: &Allocation{Allocation: 0.2}}, Enforcement: mode},
		{Name: "logs", Attributes: Attributes{IndicesName: "logs-*"}, Resources: Allocations{JVM: &Allocation{Allocation: 0.3}}, Enforcement: Hard},
	}}
}

// search builds a coordinating task on node c and a shard task per data node, the way
// OpenSearch lists a search: children point at the parent by parent_task_id, headers copied.
func search(c string, n int, opaque, index string, start time.Time, cpuPerChild time.Duration, data ...string) []Task {
	hdr := map[string]string{}
	if opaque != "" {
		hdr[OpaqueIDHeader] = opaque
	}
	run := t0.Add(10 * time.Second).Sub(start)
	root := Task{ID: c + ":" + string(rune('0'+n)), Node: c, Action: "indices:data/read/search", Description: "indices[" + index + "], search_type[QUERY_THEN_FETCH]",
		Headers: hdr, Start: start, RunningTime: run, Cancellable: true}
	out := []Task{root}
	for i, d := range data {
		out = append(out, Task{ID: d + ":" + string(rune('0'+n)) + string(rune('a'+i)), ParentID: root.ID, Node: d, Action: "indices:data/read/search[phase/query]",
			Description: "shardId[[" + index + "][0]]", Start: start, RunningTime: run, CPUTimeNanos: int64(float64(run) * cpuPerChild.Seconds()),
			MemoryBytes: 100 << 20, Cancellable: true})
	}
	return out
}

func TestAttributeFollowsParents(t *testing.T) {
	var tasks []Task
	tasks = append(tasks, search("c1", 1, "noisy-batch", "orders", t0, time.Second, "d1", "d2")...)
	tasks = append(tasks, search("c1", 2, "", "logs-2026", t0, time.Second, "d2")...)
	// A shard task whose parent is gone, with the header OpenSearch copies to children.
	tasks = append(tasks, Task{ID: "d1:99", ParentID: "c9:1", Node: "d1", Description: "shardId[[orders][1]]", Headers: map[string]string{OpaqueIDHeader: "noisy-2"}})
	// A loop in parent ids (bad input) must end.
	tasks = append(tasks, Task{ID: "x:1", ParentID: "x:2", Node: "d1"}, Task{ID: "x:2", ParentID: "x:1", Node: "d1"})
	got := map[string]string{}
	roots := map[string]string{}
	reasons := map[string]string{}
	// Children listed before their parent, as a listing sorted by node can have them.
	slices.Reverse(tasks)
	for _, a := range Attribute(tasks, tenantDefs(Hard)) {
		got[a.ID] = a.Sandbox
		roots[a.ID] = a.Root
		reasons[a.ID] = a.Reason
	}
	if !strings.HasPrefix(reasons["d2:1b"], "inherits from its parent request c1:1: sandbox noisy matches") ||
		!strings.HasPrefix(reasons["c1:1"], "sandbox noisy matches") {
		t.Errorf("reasons got child %q, parent %q", reasons["d2:1b"], reasons["c1:1"])
	}
	want := map[string]string{
		"c1:1": "noisy", "d1:1a": "noisy", "d2:1b": "noisy",
		"c1:2": "logs", "d2:2a": "logs",
		"d1:99": "noisy", "x:1": GenPop, "x:2": GenPop,
	}
	for id, w := range want {
		if got[id] != w {
			t.Errorf("%s: got %q, want %q", id, got[id], w)
		}
	}
	if roots["d2:1b"] != "c1:1" || roots["d1:99"] != "d1:99" {
		t.Errorf("roots got %v", roots)
	}
}

func TestMeasure(t *testing.T) {
	var tasks []Task
	tasks = append(tasks, search("c1", 1, "noisy-a", "orders", t0, 2*time.Second, "d1", "d2")...)
	tasks = append(tasks, search("c1", 2, "noisy-b", "orders", t0, time.Second, "d1")...)
	tasks = append(tasks, Task{ID: "gone:1", Node: "gone"})
	loads := []NodeLoad{
		{Node: "d1", Name: "data-1", CPU: 0.97, HeapUsedBytes: 600 << 20, HeapMaxBytes: 1000 << 20, Processors: 4},
		{Node: "d2", CPU: 0.3, HeapUsedBytes: 100 << 20, HeapMaxBytes: 1000 << 20, Processors: 4},
		{Node: "c1", CPU: 0.1, HeapMaxBytes: 1000 << 20, Processors: 4},
	}
	usage, missing := Measure(Attribute(tasks, tenantDefs(Hard)), loads)
	d1 := usage["d1"]
	// Node totals are the node's own figures, not sums over tasks.
	if d1.Total.CPU != 0.97 || d1.Total.JVM != 0.6 {
		t.Errorf("d1 total got %+v, want cpu 0.97 jvm 0.6", d1.Total)
	}
	// noisy on d1: (2 + 1 cores) / 4 processors; heap 200 MiB of 1000.
	if n := d1.Sandboxes["noisy"]; math.Abs(n.CPU-0.75) > 1e-9 || math.Abs(n.JVM-0.2) > 1e-9 {
		t.Errorf("noisy on d1 got %+v, want cpu 0.75 jvm 0.2", n)
	}
	if n := usage["d2"].Sandboxes["noisy"]; math.Abs(n.CPU-0.5) > 1e-9 {
		t.Errorf("noisy on d2 got %+v, want cpu 0.5", n)
	}
	// Reasons name a node by its name when it has one.
	for _, f := range Evaluate(usage, tenantDefs(Hard)).Findings {
		if f.Node == "d1" && !strings.Contains(f.Reason, "on data-1 uses") {
			t.Errorf("reason %q does not name node d1 data-1", f.Reason)
		}
	}
	if len(missing) != 1 || missing[0] != "gone:1" {
		t.Errorf("missing got %v", missing)
	}
}

func TestPlanCancellations(t *testing.T) {
	loads := []NodeLoad{
		{Node: "d1", CPU: 0.95, HeapUsedBytes: 500, HeapMaxBytes: 1000 << 20, Processors: 4},
		{Node: "d2", CPU: 0.5, HeapUsedBytes: 500, HeapMaxBytes: 1000 << 20, Processors: 4},
		{Node: "c1", CPU: 0.1, HeapMaxBytes: 1000 << 20, Processors: 4},
	}
	build := func() []Task {
		var tasks []Task
		// Three noisy requests of one core each on d1, oldest first; the newest also on d2.
		tasks = append(tasks, search("c1", 1, "noisy-1", "orders", t0, time.Second, "d1")...)
		tasks = append(tasks, search("c1", 2, "noisy-2", "orders", t0.Add(time.Second), time.Second, "d1")...)
		tasks = append(tasks, search("c1", 3, "noisy-3", "orders", t0.Add(2*time.Second), time.Second, "d1", "d2")...)
		// A well-behaved request on d1.
		tasks = append(tasks, search("c1", 4, "", "logs-1", t0.Add(3*time.Second), time.Second/4, "d1")...)
		return tasks
	}
	tests := []struct {
		name   string
		mode   Enforcement
		loads  func([]NodeLoad) []NodeLoad
		tweak  func([]Task) []Task
		want   []string // request IDs, in order
		short  int
		reason string
	}{
		// noisy uses 0.75 of d1's CPU; its limit is 0.2 × 0.9 = 0.18: cancel newest first
		// until at most 0.18, i.e. all three (0.75 → 0.5 → 0.25 → 0).
		{name: "hard cancels newest first down to its share", mode: Hard, want: []string{"c1:3", "c1:2", "c1:1"}, reason: "over its hard cancellation limit 0.180"},
		{name: "monitor never cancels", mode: Monitor},
		{name: "soft cancels while the node is past its threshold", mode: Soft, want: []string{"c1:3", "c1:2", "c1:1"}, reason: "soft: the node is at 0.950"},
		{name: "soft leaves a calm node alone", mode: Soft, loads: func(l []NodeLoad) []NodeLoad { l[0].CPU = 0.85; return l }},
		{
			name: "an already-cancelled request counts as gone and is not cancelled again", mode: Hard,
			tweak: func(ts []Task) []Task {
				for i := range ts {
					if ts[i].ID == "c1:3" {
						ts[i].Cancelled = true
					}
				}
				return ts
			},
			want: []string{"c1:2", "c1:1"},
		},
		{
			name: "requests that cannot be cancelled leave a shortfall", mode: Hard,
			tweak: func(ts []Task) []Task {
				for i := range ts {
					ts[i].Cancellable = false
				}
				return ts
			},
			short: 2, // d1 and d2
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tasks := build()
			if tc.tweak != nil {
				tasks = tc.tweak(tasks)
			}
			l := append([]NodeLoad(nil), loads...)
			if tc.loads != nil {
				l = tc.loads(l)
			}
			defs := tenantDefs(tc.mode)
			at := Attribute(tasks, defs)
			usage, _ := Measure(at, l)
			cs, short := PlanCancellations(Evaluate(usage, defs), at, l)
			var got []string
			for _, c := range cs {
				got = append(got, c.Task)
				if c.Sandbox != "noisy" || c.Limit > c.Usage || c.After != c.Usage-c.Freed && math.Abs(c.After-(c.Usage-c.Freed)) > 1e-9 {
					t.Errorf("cancellation numbers inconsistent: %+v", c)
				}
			}
			if strings.Join(got, " ") != strings.Join(tc.want, " ") {
				t.Errorf("cancelled %v, want %v", got, tc.want)
			}
			if len(short) != tc.short {
				t.Errorf("shortfalls got %+v, want %d", short, tc.short)
			}
			if tc.reason != "" && (len(cs) == 0 || !strings.Contains(cs[0].Reason, tc.reason)) {
				t.Errorf("first reason got %+v, want it to contain %q", cs, tc.reason)
			}
		})
	}
}

// TestPlanCancellationsStopsAtTheShare: only as many requests as bring the sandbox under its
// limit, and a request cancelled for one node counts as freed on the others.
func TestPlanCancellationsStopsAtTheShare(t *testing.T) {
	defs := Definitions{Sandboxes: []Sandbox{
		{Name: "noisy", Attributes: Attributes{CustomID: "noisy-*"}, Resources: Allocations{CPU: &Allocation{Allocation: 0.5}}, Enforcement: Hard},
	}}
	loads := []NodeLoad{{Node: "d1", CPU: 0.9, Processors: 4}, {Node: "d2", CPU: 0.9, Processors: 4}, {Node: "c1", Processors: 4}}
	var tasks []Task
	for i := 1; i <= 3; i++ {
		tasks = append(tasks, search("c1", i, "noisy-x", "orders", t0.Add(time.Duration(i)*time.Second), time.Second, "d1", "d2")...)
	}
	at := Attribute(tasks, defs)
	usage, _ := Measure(at, loads)
	cs, short := PlanCancellations(Evaluate(usage, defs), at, loads)
	// 0.75 per node, limit 0.45: one request (0.25) leaves 0.5, two leave 0.25. On d2 the same
	// two are already gone, so nothing more.
	if len(cs) != 2 || cs[0].Task != "c1:3" || cs[1].Task != "c1:2" || len(short) != 0 {
		t.Fatalf("got %+v, short %+v; want c1:3 then c1:2 only", cs, short)
	}
	if cs[1].After != 0.25 || cs[0].Node != "d1" {
		t.Errorf("numbers got %+v", cs)
	}
}
