package bus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge/types"

	"github.com/shardwise/shardwise/shared/allocation"
	"github.com/shardwise/shardwise/shared/safety"
)

var at = time.Date(2026, 11, 29, 10, 15, 0, 0, time.UTC)

func statsEvent(n int) Event {
	return Event{DetailType: TypeStatsIngested, Time: at.Add(time.Duration(n) * time.Second),
		Detail: StatsIngested{Cluster: fmt.Sprintf("c%d", n), SnapshotKey: "snap#k", At: at, Nodes: 3, Copies: 9}}
}

func TestMemory(t *testing.T) {
	var m Memory
	if err := m.Publish(t.Context(), statsEvent(0), statsEvent(1)); err != nil {
		t.Fatal(err)
	}
	if err := m.Publish(t.Context(), Event{DetailType: TypeScaleUpNeeded, Detail: ScaleUpNeeded{Cluster: "c2"}}); err != nil {
		t.Fatal(err)
	}
	got := m.Events()
	var types []string
	for _, r := range got {
		types = append(types, r.DetailType)
		if r.Source != Source {
			t.Errorf("source: got %q want %q", r.Source, Source)
		}
	}
	if want := []string{TypeStatsIngested, TypeStatsIngested, TypeScaleUpNeeded}; !slices.Equal(types, want) {
		t.Fatalf("events in order: got %v want %v", types, want)
	}
	var d StatsIngested
	if err := json.Unmarshal(got[1].Detail, &d); err != nil || d.Cluster != "c1" {
		t.Errorf("detail: got %s (%v), want cluster c1", got[1].Detail, err)
	}
	if !got[1].Time.Equal(at.Add(time.Second)) {
		t.Errorf("time: got %v want %v", got[1].Time, at.Add(time.Second))
	}
	// Events returns a copy: the caller cannot reorder what was published.
	got[0].DetailType = "tampered"
	if m.Events()[0].DetailType != TypeStatsIngested {
		t.Error("Events shares its slice with the publisher")
	}
	drained := m.Drain()
	if len(drained) != 3 {
		t.Fatalf("Drain: got %d events want 3", len(drained))
	}
	if rest := m.Events(); len(rest) != 0 {
		t.Errorf("after Drain: got %d events want 0", len(rest))
	}
	if err := m.Publish(t.Context(), Event{DetailType: "Broken", Detail: make(chan int)}); err == nil || !strings.Contains(err.Error(), "Broken") {
		t.Errorf("unmarshalable detail: got %v, want an error naming the detail type", err)
	}
}

func TestMemoryConcurrentPublish(t *testing.T) {
	var m Memory
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			if err := m.Publish(context.Background(), statsEvent(i)); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if n := len(m.Drain()); n != 8 {
		t.Errorf("got %d events want 8", n)
	}
}

// fakePutEvents records every PutEvents call and answers from fail ({call, entry within the call}
// → error code) or err.
type fakePutEvents struct {
	calls [][]types.PutEventsRequestEntry
	fail  map[[2]int]string
	// failCount overrides FailedEntryCount without naming an entry.
	failCount int32
	err       error
}

func (f *fakePutEvents) PutEvents(_ context.Context, in *eventbridge.PutEventsInput, _ ...func(*eventbridge.Options)) (*eventbridge.PutEventsOutput, error) {
	f.calls = append(f.calls, in.Entries)
	call := len(f.calls) - 1
	if f.err != nil {
		return nil, f.err
	}
	out := &eventbridge.PutEventsOutput{FailedEntryCount: f.failCount}
	for i := range in.Entries {
		r := types.PutEventsResultEntry{EventId: aws.String(fmt.Sprintf("id-%d", i))}
		if code, ok := f.fail[[2]int{call, i}]; ok {
			r = types.PutEventsResultEntry{ErrorCode: aws.String(code), ErrorMessage: aws.String("event bus is throttled")}
			out.FailedEntryCount++
		}
		out.Entries = append(out.Entries, r)
	}
	return out, nil
}

func TestEventBridgeBatches(t *testing.T) {
	cases := []struct {
		name  string
		n     int
		sizes []int
	}{
		{"nothing to send makes no call", 0, nil},
		{"one event", 1, []int{1}},
		{"exactly one batch", 10, []int{10}},
		{"one over a batch", 11, []int{10, 1}},
		{"twenty-three events", 23, []int{10, 10, 3}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakePutEvents{}
			p := &EventBridge{Client: f, BusName: "shardwise-bus"}
			events := make([]Event, tc.n)
			for i := range events {
				events[i] = statsEvent(i)
			}
			if err := p.Publish(t.Context(), events...); err != nil {
				t.Fatal(err)
			}
			var sizes []int
			sent := 0
			for _, call := range f.calls {
				sizes = append(sizes, len(call))
				for _, e := range call {
					if aws.ToString(e.Source) != "shardwise" || aws.ToString(e.EventBusName) != "shardwise-bus" || aws.ToString(e.DetailType) != TypeStatsIngested {
						t.Errorf("entry: source %q bus %q type %q", aws.ToString(e.Source), aws.ToString(e.EventBusName), aws.ToString(e.DetailType))
					}
					var d StatsIngested
					if err := json.Unmarshal([]byte(aws.ToString(e.Detail)), &d); err != nil {
						t.Fatalf("detail %q: %v", aws.ToString(e.Detail), err)
					}
					// Order is kept across batches.
					if want := fmt.Sprintf("c%d", sent); d.Cluster != want {
						t.Errorf("entry %d: cluster %q want %q", sent, d.Cluster, want)
					}
					if e.Time == nil || !e.Time.Equal(events[sent].Time) {
						t.Errorf("entry %d: time %v want %v", sent, e.Time, events[sent].Time)
					}
					sent++
				}
			}
			if !slices.Equal(sizes, tc.sizes) {
				t.Errorf("batch sizes: got %v want %v", sizes, tc.sizes)
			}
		})
	}
}

func TestEventBridgeZeroTimeLeftToEventBridge(t *testing.T) {
	f := &fakePutEvents{}
	p := &EventBridge{Client: f, BusName: "b"}
	if err := p.Publish(t.Context(), Event{DetailType: TypeScaleUpNeeded, Detail: ScaleUpNeeded{Cluster: "c"}}); err != nil {
		t.Fatal(err)
	}
	if tm := f.calls[0][0].Time; tm != nil {
		t.Errorf("time: got %v, want nil so EventBridge stamps it", tm)
	}
}

func TestEventBridgeFailures(t *testing.T) {
	boom := errors.New("connection reset")
	mixed := []Event{statsEvent(0), {DetailType: TypeMovesPlanned, Detail: MovesPlanned{Cluster: "c"}}, statsEvent(2)}
	cases := []struct {
		name   string
		fake   *fakePutEvents
		events []Event
		want   []string
		is     error
		calls  int
	}{
		{
			name:   "failed entry names its detail type and code",
			fake:   &fakePutEvents{fail: map[[2]int]string{{0, 1}: "ThrottlingException"}},
			events: mixed,
			want:   []string{`"Moves Planned" failed`, "ThrottlingException", "event bus is throttled", "put events to bus"},
			calls:  1,
		},
		{
			name:   "failed entry in the second batch names the right event",
			fake:   &fakePutEvents{fail: map[[2]int]string{{1, 0}: "InternalFailure"}},
			events: append(slices.Repeat([]Event{statsEvent(0)}, 10), Event{DetailType: TypeReplicasChanged, Detail: ReplicasChanged{Cluster: "c"}}),
			want:   []string{`"Replicas Changed" failed`, "InternalFailure"},
			calls:  2,
		},
		{
			name:   "failed count without an entry error",
			fake:   &fakePutEvents{failCount: 2},
			events: mixed,
			want:   []string{"2 entries failed"},
			calls:  1,
		},
		{
			name:   "client error is wrapped",
			fake:   &fakePutEvents{err: boom},
			events: mixed,
			want:   []string{"put events to bus", "connection reset"},
			is:     boom,
			calls:  1,
		},
		{
			name:   "unmarshalable detail is refused before any call",
			fake:   &fakePutEvents{},
			events: []Event{{DetailType: TypeSandboxEnforced, Detail: func() {}}},
			want:   []string{"publish Sandbox Enforced"},
			calls:  0,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := &EventBridge{Client: tc.fake, BusName: "bus"}
			err := p.Publish(t.Context(), tc.events...)
			if err == nil {
				t.Fatal("Publish: got nil, want an error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("error %v does not wrap %v", err, tc.is)
			}
			if len(tc.fake.calls) != tc.calls {
				t.Errorf("calls: got %d want %d", len(tc.fake.calls), tc.calls)
			}
		})
	}
}

// TestDetailShapes pins the JSON field names of every event: rules, dashboards and the audit trail
// read them, so a rename is a breaking change.
func TestDetailShapes(t *testing.T) {
	shard := 2
	move := allocation.Move{Index: "logs", Shard: 1, From: "id-a", FromName: "a", To: "id-c", ToName: "c", SizeBytes: 1 << 30,
		WriteLoad: 2.5, Phase: allocation.PhaseWriteHotspot, Reason: "a is hot",
		Verdicts: []allocation.Verdict{{Decider: "write_load", Decision: allocation.Yes, Value: 0.3, Limit: 0.9, Reason: "room"}}}
	breaker := safety.Evaluate(safety.Inputs{Health: "yellow"}, safety.DefaultConfig())
	cases := []struct {
		name   string
		detail any
		keys   []string
		nested map[string][]string
	}{
		{
			name:   TypeStatsIngested,
			detail: StatsIngested{Cluster: "prod", SnapshotKey: "snap#1", At: at, Nodes: 3, Copies: 12, Stale: []string{"a stats 2m old"}},
			keys:   []string{"cluster", "snapshot_key", "at", "nodes", "copies", "stale"},
		},
		{
			name:   TypeStatsIngested + " without stale figures",
			detail: StatsIngested{Cluster: "prod", SnapshotKey: "snap#1", At: at},
			keys:   []string{"cluster", "snapshot_key", "at", "nodes", "copies"},
		},
		{
			name: TypeMovesPlanned,
			detail: MovesPlanned{Cluster: "prod", PlanKey: "plan#snap#1", SnapshotKey: "snap#1",
				Hotspots: []allocation.Hotspot{{Node: "id-a", NodeName: "a", Hot: true, Reason: "hot"}},
				Moves:    []allocation.Move{move}, Notes: []allocation.Note{{Kind: "deferred", Node: "b", Shard: &shard, Reason: "wait"}}},
			keys: []string{"cluster", "plan_key", "snapshot_key", "hotspots", "moves", "notes"},
			nested: map[string][]string{
				"moves":    {"index", "shard", "primary", "from", "from_name", "to", "to_name", "size_bytes", "write_load", "phase", "reason", "verdicts"},
				"hotspots": {"node", "node_name", "queue_latency_seconds", "latency_limit_seconds", "utilization", "utilization_limit", "queue", "rejected", "streak", "streak_limit", "hot", "reason"},
				"notes":    {"kind", "node", "shard", "reason"},
			},
		},
		{
			name: TypeShardMoveExecuted,
			detail: ShardMoveExecuted{Cluster: "prod", PlanKey: "plan#snap#1", Move: move, Strategy: "reroute", DryRun: true,
				Outcome: "skipped", Reason: breaker.Reason(), Breaker: breaker},
			keys:   []string{"cluster", "plan_key", "move", "strategy", "dry_run", "outcome", "reason", "breaker"},
			nested: map[string][]string{"breaker": {"closed", "checks"}},
		},
		{
			name: TypeReplicasChanged,
			detail: ReplicasChanged{Cluster: "prod", DryRun: false, Changes: []ReplicaChange{{Index: "logs", Setting: "index.number_of_replicas",
				From: 1, To: 2, Kind: "scale-up", L: 0.6, N: 3, S: 1, Reason: "busy"}}},
			keys:   []string{"cluster", "dry_run", "changes"},
			nested: map[string][]string{"changes": {"index", "setting", "from", "to", "kind", "l", "n", "s", "reason"}},
		},
		{
			name:   TypeScaleUpNeeded,
			detail: ScaleUpNeeded{Cluster: "prod", Nodes: []string{"a", "b"}, Reason: "all hot"},
			keys:   []string{"cluster", "nodes", "reason", "notify"},
		},
		{
			name: TypeScaleUpNeeded + " notifying",
			detail: ScaleUpNeeded{Cluster: "prod", Nodes: []string{"a", "b"}, Reason: "all hot",
				Notice: Notice{Notify: true, NotifyReason: "started: bound cluster-capacity"}},
			keys: []string{"cluster", "nodes", "reason", "notify", "notify_reason"},
		},
		{
			name:   TypeSandboxEnforced,
			detail: SandboxEnforced{Cluster: "prod", Mode: "report", Actions: []string{"would cancel"}, Reason: "over"},
			keys:   []string{"cluster", "mode", "actions", "reason"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var m Memory
			if err := m.Publish(t.Context(), Event{DetailType: tc.name, Detail: tc.detail}); err != nil {
				t.Fatal(err)
			}
			var obj map[string]json.RawMessage
			if err := json.Unmarshal(m.Events()[0].Detail, &obj); err != nil {
				t.Fatal(err)
			}
			if got := sortedKeys(obj); !slices.Equal(got, sorted(tc.keys)) {
				t.Errorf("fields: got %v want %v", got, sorted(tc.keys))
			}
			for field, want := range tc.nested {
				raw := obj[field]
				var one map[string]json.RawMessage
				if raw[0] == '[' {
					var list []map[string]json.RawMessage
					if err := json.Unmarshal(raw, &list); err != nil || len(list) == 0 {
						t.Fatalf("%s: %s (%v)", field, raw, err)
					}
					one = list[0]
				} else if err := json.Unmarshal(raw, &one); err != nil {
					t.Fatalf("%s: %v", field, err)
				}
				for _, k := range want {
					if _, ok := one[k]; !ok {
						t.Errorf("%s lacks field %q: %s", field, k, raw)
					}
				}
			}
		})
	}
}

func sortedKeys(m map[string]json.RawMessage) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return sorted(out)
}

func sorted(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return out
}
