package deploy

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/shardwise/shardwise/shared/allocation"
	"github.com/shardwise/shardwise/shared/bus"
)

// The samples of shardwise's own events in events/ are written from the bus types by this test:
// SHARDWISE_UPDATE_EVENTS=1 go test -run TestSampleBusEvents ./shared/deploy/ rewrites them.
// Without it the test fails when a sample differs from what the types produce, so a field added
// to bus.StatsIngested or bus.MovesPlanned cannot leave the samples behind.
const updateEventsEnv = "SHARDWISE_UPDATE_EVENTS"

// busSample is one shardwise event as EventBridge delivers it to a function.
type busSample struct {
	file   string
	detail any
	// decode returns a fresh value of detail's type, for the strict decoding check.
	decode     func() any
	detailType string
}

func busSamples() []busSample {
	at := time.Date(2026, 11, 29, 10, 15, 0, 0, time.UTC)
	snapshot := "snap#20261129T101500.000000000Z"
	hot := allocation.Hotspot{
		Node: "n3Qx7bYdT2uVw0aZk1LmSg", NodeName: "node-3",
		QueueLatencySeconds: 4.1, LatencyLimit: 3, Utilization: 0.97, UtilizationLimit: 0.9,
		Queue: 412, Streak: 3, StreakLimit: 3, Demand: 9.4, Hot: true,
	}
	hot.Reason = "node-3: estimated WRITE queue latency 4.1s ≥ 3.0s and utilization 97% ≥ 90%, 3 of 3 samples (hot)"
	return []busSample{
		{
			file:       "stats-ingested.json",
			detailType: bus.TypeStatsIngested,
			detail: bus.StatsIngested{
				Cluster: "prod", SnapshotKey: snapshot, At: at, Nodes: 6, Copies: 240,
				Stale: []string{"node-5 thread_pool 95s old"},
			},
			decode: func() any { return new(bus.StatsIngested) },
		},
		{
			file:       "moves-planned.json",
			detailType: bus.TypeMovesPlanned,
			detail: bus.MovesPlanned{
				Cluster: "prod", PlanKey: "plan#" + snapshot, SnapshotKey: snapshot,
				Hotspots: []allocation.Hotspot{hot},
				Moves: []allocation.Move{{
					Index: "logs-2026.11.29", Shard: 4, Primary: true,
					From: "n3Qx7bYdT2uVw0aZk1LmSg", FromName: "node-3", To: "p9Rk2cXeU4wVy1bAl3NnTh", ToName: "node-5",
					SizeBytes: 12_884_901_888, WriteLoad: 2.35, Phase: allocation.PhaseWriteHotspot,
					Reason:           "node-3 is hot; logs-2026.11.29[4] carries 2.35 WRITE threads; node-5 has room, 41% utilized after the move; relocation est. 35m12s: files in 5m7s at 40 MiB/s shared by 1, then 30m5s replaying 2.35 WRITE threads of indexing at 0.40",
					EstimatedSeconds: 2112,
				}},
				Notes: []allocation.Note{{
					Kind:   "unassigned",
					Reason: "2 unassigned copies: OpenSearch's allocator assigns them; shardwise does not move them",
				}},
			},
			decode: func() any { return new(bus.MovesPlanned) },
		},
	}
}

// envelope wraps a detail as EventBridge delivers it, in aws-lambda-go's field order.
func envelope(t *testing.T, detailType string, detail any, at time.Time) events.CloudWatchEvent {
	t.Helper()
	raw, err := json.Marshal(detail)
	if err != nil {
		t.Fatalf("marshal detail: %v", err)
	}
	return events.CloudWatchEvent{
		Version:    "0",
		ID:         "7bf73129-1428-4cd3-a780-95db273d1602",
		DetailType: detailType,
		Source:     bus.Source,
		AccountID:  "123456789012",
		Time:       at,
		Region:     "us-east-1",
		Resources:  []string{},
		Detail:     raw,
	}
}

func TestSampleBusEvents(t *testing.T) {
	doc := render(t, Options{})
	at := time.Date(2026, 11, 29, 10, 15, 1, 0, time.UTC)
	for _, s := range busSamples() {
		t.Run(s.file, func(t *testing.T) {
			want, err := json.MarshalIndent(envelope(t, s.detailType, s.detail, at), "", "  ")
			if err != nil {
				t.Fatalf("marshal: %v", err)
			}
			want = append(want, '\n')
			path := filepath.Join("..", "..", "events", s.file)
			if os.Getenv(updateEventsEnv) == "1" {
				if err := os.WriteFile(path, want, 0o644); err != nil {
					t.Fatalf("write sample: %v", err)
				}
			}
			raw := readEvent(t, s.file)
			if !bytes.Equal(raw, want) {
				t.Errorf("events/%s differs from what bus.%T produces: run %s=1 go test -run TestSampleBusEvents ./shared/deploy/",
					s.file, s.detail, updateEventsEnv)
			}

			// The detail decodes into its bus type with no unknown field, as the handlers decode it.
			var ev struct {
				DetailType string          `json:"detail-type"`
				Detail     json.RawMessage `json:"detail"`
			}
			if err := json.Unmarshal(raw, &ev); err != nil {
				t.Fatalf("decode envelope: %v", err)
			}
			if ev.DetailType != s.detailType {
				t.Errorf("detail-type: got %q, want %q", ev.DetailType, s.detailType)
			}
			got := s.decode()
			dec := json.NewDecoder(bytes.NewReader(ev.Detail))
			dec.DisallowUnknownFields()
			if err := dec.Decode(got); err != nil {
				t.Fatalf("decode detail as %T: %v", s.detail, err)
			}
			if g := reflect.ValueOf(got).Elem().Interface(); !reflect.DeepEqual(g, s.detail) {
				t.Errorf("detail: got %+v, want %+v", g, s.detail)
			}

			// It invokes exactly the functions subscribed to it: their rules match, no other does.
			var generic any
			if err := json.Unmarshal(raw, &generic); err != nil {
				t.Fatalf("decode: %v", err)
			}
			subscribers := bus.Subscribers(s.detailType)
			if len(subscribers) == 0 {
				t.Fatalf("no function subscribes to %q", s.detailType)
			}
			for _, fn := range functions() {
				for _, tr := range fn.triggers {
					pattern := get(t, doc, "Resources", logicalID(fn.name), "Properties", "Events", tr.name, "Properties", "Pattern")
					wantMatch := slices.Contains(subscribers, fn.name) && tr.name == bus.RuleName(s.detailType)
					if matches(pattern, generic) != wantMatch {
						t.Errorf("%s rule %s: match %v, want %v", fn.name, tr.name, !wantMatch, wantMatch)
					}
				}
			}
		})
	}
}

// TestSampleCadenceInvoke holds events/cadence-ingest.json to the payload each iteration of the
// cadence's Map sends ingest: {"cluster": name}.
func TestSampleCadenceInvoke(t *testing.T) {
	var direct struct {
		Cluster string `json:"cluster"`
	}
	dec := json.NewDecoder(strings.NewReader(string(readEvent(t, "cadence-ingest.json"))))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&direct); err != nil {
		t.Fatalf("decode: %v", err)
	}
	if direct.Cluster != "prod" {
		t.Errorf("cluster: got %q, want prod", direct.Cluster)
	}
	doc := render(t, Options{})
	iter := get(t, doc, "Resources", "IngestCadence", "Properties", "Definition", "States", "Cadence", "Branches", 0,
		"States", "Now", "ItemProcessor", "States").(map[string]any)
	if got, want := get(t, iter, "NowCluster", "Parameters"), "cluster.$"; !hasKey(got, want) {
		t.Errorf("the Map's payload %v has no %q: the sample no longer matches it", got, want)
	}
}

func hasKey(v any, key string) bool {
	m, ok := v.(map[string]any)
	if !ok {
		return false
	}
	_, ok = m[key]
	return ok
}

// TestEnvJSON holds events/env.json, for `sam local invoke --env-vars`, to the template: one entry
// per function, each setting only variables the function declares (sam local ignores the others
// without a word), and each pointing at local names, a localhost cluster and dry run.
func TestEnvJSON(t *testing.T) {
	var env map[string]map[string]string
	dec := json.NewDecoder(bytes.NewReader(readEvent(t, "env.json")))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&env); err != nil {
		t.Fatalf("decode env.json: %v", err)
	}
	doc := render(t, Options{})
	var ids []string
	for _, fn := range functions() {
		ids = append(ids, logicalID(fn.name))
	}
	got := make([]string, 0, len(env))
	for id := range env {
		got = append(got, id)
	}
	slices.Sort(got)
	slices.Sort(ids)
	if !slices.Equal(got, ids) {
		t.Errorf("entries: got %v, want the functions %v", got, ids)
	}
	for _, id := range ids {
		t.Run(id, func(t *testing.T) {
			declared := get(t, doc, "Resources", id, "Properties", "Environment", "Variables").(map[string]any)
			for name := range env[id] {
				if _, ok := declared[name]; !ok {
					t.Errorf("%s is not a variable of %s in the template: sam local would drop it", name, id)
				}
			}
			for name, want := range map[string]string{
				"SHARDWISE_TABLE": "shardwise-local",
				"SHARDWISE_BUS":   "shardwise-local",
				// The cluster the sample events name (functions' TestSampleEventsWithEnvJSON runs them).
				"SHARDWISE_CLUSTERS": "prod=http://localhost:9200",
				"SHARDWISE_AUTH":     "none",
				"SHARDWISE_DRY_RUN":  "true",
			} {
				if got := env[id][name]; got != want {
					t.Errorf("%s: got %q, want %q", name, got, want)
				}
			}
		})
	}
}
