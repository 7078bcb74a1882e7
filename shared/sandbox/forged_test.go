package sandbox

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// queued marks the shard-level tasks of the request rooted at root as waiting for a thread.
func queued(tasks []Task, root string) []Task {
	for i := range tasks {
		if tasks[i].ParentID == root {
			tasks[i].Queued, tasks[i].CPUTimeNanos, tasks[i].MemoryBytes = true, 0, 0
		}
	}
	return tasks
}

// A tenant that tags its heavy queries with another tenant's X-Opaque-Id puts them in that
// tenant's sandbox. The overflow they make is charged to their source (the indices they read,
// which the forger cannot change), so the forged requests are cancelled and the tenant whose id
// was taken keeps its own.
func TestForgedOpaqueIDCancelsTheForger(t *testing.T) {
	defs := Definitions{Sandboxes: []Sandbox{
		{Name: "storefront", Attributes: Attributes{CustomID: "storefront-web"}, Resources: Allocations{CPU: &Allocation{Allocation: 0.2}}, Enforcement: Hard},
		{Name: "flood", Attributes: Attributes{CustomID: "flood-batch"}, Resources: Allocations{CPU: &Allocation{Allocation: 0.2}}, Enforcement: Hard},
	}}
	loads := []NodeLoad{{Node: "d1", CPU: 0.95, HeapMaxBytes: 1 << 30, Processors: 4}, {Node: "c1", CPU: 0.1, HeapMaxBytes: 1 << 30, Processors: 4}}
	var tasks []Task
	// The forger: three one-core queries on logs, sent with storefront's id, older than
	// storefront's own, and one more still in d1's queue.
	for i := 1; i <= 3; i++ {
		tasks = append(tasks, search("c1", i, "storefront-web", "logs", t0.Add(time.Duration(i)*time.Second), time.Second, "d1")...)
	}
	tasks = append(tasks, queued(search("c1", 4, "storefront-web", "logs", t0.Add(8*time.Second), time.Second, "d1"), "c1:4")...)
	// storefront itself: two light queries on catalog, the newest, and one queued.
	tasks = append(tasks, search("c1", 5, "storefront-web", "catalog", t0.Add(5*time.Second), time.Second/8, "d1")...)
	tasks = append(tasks, search("c1", 6, "storefront-web", "catalog", t0.Add(6*time.Second), time.Second/8, "d1")...)
	tasks = append(tasks, queued(search("c1", 7, "storefront-web", "catalog", t0.Add(9*time.Second), time.Second/8, "d1"), "c1:7")...)

	a := Assess(tasks, loads, defs)
	got := map[string]string{}
	for _, c := range a.Cancellations {
		got[c.Task] = c.Kind
		if c.Sandbox != "storefront" {
			t.Errorf("cancellation %s in sandbox %s, want storefront", c.Task, c.Sandbox)
		}
	}
	for _, own := range []string{"c1:5", "c1:6", "c1:7"} {
		if k, ok := got[own]; ok {
			t.Errorf("storefront's own request %s got %s: the forged requests made the overflow", own, k)
		}
	}
	// 3.5 cores of 4 is 0.875, limit 0.2 × 0.9 = 0.18: the logs source (0.75) goes, leaving 0.125.
	want := map[string]string{"c1:3": KindCancel, "c1:2": KindCancel, "c1:1": KindCancel, "c1:4": KindReject}
	for id, k := range want {
		if got[id] != k {
			t.Errorf("%s: got %q, want %q (all: %v)", id, got[id], k, got)
		}
	}
	if len(a.Shortfalls) != 0 {
		t.Errorf("shortfalls %+v, want none", a.Shortfalls)
	}
}

// Queued requests of a sandbox over its limit are rejected, as the RFC rejects new tasks of an
// overflowing sandbox; those of a sandbox within its limits, and of a mode that does not act,
// are left alone.
func TestQueuedRequestsRejected(t *testing.T) {
	loads := []NodeLoad{{Node: "d1", CPU: 0.95, HeapMaxBytes: 1 << 30, Processors: 4}, {Node: "c1", CPU: 0.1, HeapMaxBytes: 1 << 30, Processors: 4}}
	build := func() []Task {
		var tasks []Task
		tasks = append(tasks, search("c1", 1, "noisy-1", "orders", t0, time.Second, "d1")...)
		tasks = append(tasks, queued(search("c1", 2, "noisy-2", "orders", t0.Add(time.Second), time.Second, "d1"), "c1:2")...)
		tasks = append(tasks, queued(search("c1", 3, "noisy-3", "orders", t0.Add(2*time.Second), time.Second, "d1"), "c1:3")...)
		tasks = append(tasks, queued(search("c1", 4, "", "logs-1", t0.Add(3*time.Second), time.Second, "d1"), "c1:4")...)
		return tasks
	}
	tests := []struct {
		name string
		mode Enforcement
		want []string // task:kind in order
	}{
		{name: "hard: the running request is cancelled and the queued ones rejected", mode: Hard,
			want: []string{"c1:1:cancel", "c1:3:reject", "c1:2:reject"}},
		{name: "monitor: nothing", mode: Monitor},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := Assess(build(), loads, tenantDefs(tc.mode))
			var got []string
			for _, c := range a.Cancellations {
				got = append(got, c.Task+":"+c.Kind)
				if c.Kind == KindReject && (c.Freed != 0 || !strings.Contains(c.Reason, "still wait for a search thread")) {
					t.Errorf("rejection %+v: want nothing freed and the queue named in its reason", c)
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}
