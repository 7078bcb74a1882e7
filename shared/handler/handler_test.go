package handler

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/shardwise/shardwise/shared/config"
	"github.com/shardwise/shardwise/shared/engine"
	"github.com/shardwise/shardwise/shared/state"
)

func readEvent(t *testing.T, name string) json.RawMessage {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "events", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestClassifySampleEvents(t *testing.T) {
	want := map[string]payloadKind{
		"schedule.json":                  kindEventBridge,
		"invoke.json":                    kindDirect,
		"alarm.json":                     kindEventBridge,
		"alarm-write-queue-latency.json": kindEventBridge,
		"webhook-alertmanager.json":      kindFunctionURL,
		"webhook-nodes-stats.json":       kindFunctionURL,
		"webhook-alarm.json":             kindFunctionURL,
		"stats-ingested.json":            kindEventBridge,
		"moves-planned.json":             kindEventBridge,
		"cadence-ingest.json":            kindDirect,
	}
	files, err := filepath.Glob(filepath.Join("..", "..", "events", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no sample events found in events/")
	}
	for _, f := range files {
		name := filepath.Base(f)
		if name == "env.json" {
			continue // sam local's environment variables, not an event
		}
		t.Run(name, func(t *testing.T) {
			k, ok := want[name]
			if !ok {
				t.Fatalf("events/%s has no expected kind in this test: add it", name)
			}
			got, err := classify(readEvent(t, name))
			if err != nil {
				t.Fatal(err)
			}
			if got != k {
				t.Errorf("classify: got %v want %v", got, k)
			}
		})
	}
}

func TestClassify(t *testing.T) {
	cases := []struct {
		name    string
		raw     string
		want    payloadKind
		wantErr bool
	}{
		{"eventbridge needs detail-type and source", `{"detail-type":"Stats Ingested","source":"shardwise","detail":{}}`, kindEventBridge, false},
		{"detail-type alone is a direct payload (then refused by decodeDirect)", `{"detail-type":"x"}`, kindDirect, false},
		{"function url needs requestContext and rawPath", `{"rawPath":"/","requestContext":{}}`, kindFunctionURL, false},
		{"empty object is a direct invoke of every cluster", `{}`, kindDirect, false},
		{"array is not an event", `["prod"]`, kindUnknown, true},
		{"not JSON", `prod`, kindUnknown, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := classify(json.RawMessage(tc.raw))
			if (err != nil) != tc.wantErr {
				t.Fatalf("classify: err %v, want error %v", err, tc.wantErr)
			}
			if got != tc.want {
				t.Errorf("classify: got %v want %v", got, tc.want)
			}
		})
	}
}

func TestDecodeDirect(t *testing.T) {
	cases := []struct {
		name    string
		raw     string
		want    []string
		wantErr string
	}{
		{"clusters list", `{"clusters":["prod","stage"]}`, []string{"prod", "stage"}, ""},
		{"single cluster field", `{"cluster":"prod","snapshot_key":"snap#1"}`, []string{"prod"}, ""},
		{"both merge", `{"clusters":["a"],"cluster":"b"}`, []string{"a", "b"}, ""},
		{"empty means every cluster", `{}`, nil, ""},
		{"unknown field is refused", `{"clusterz":["prod"]}`, nil, `unknown field "clusterz"`},
		{"eventbridge event is not a direct invoke", `{"detail-type":"Scheduled Event","source":"aws.events"}`, nil, "unknown field"},
		{"wrong type", `{"clusters":"prod"}`, nil, "direct invoke"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d, err := decodeDirect(json.RawMessage(tc.raw))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("decodeDirect: got %v, want an error containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(d.Clusters, tc.want) {
				t.Errorf("clusters: got %v want %v", d.Clusters, tc.want)
			}
		})
	}
	d, err := decodeDirect(readEvent(t, "invoke.json"))
	if err != nil || !slices.Equal(d.Clusters, []string{"prod"}) {
		t.Errorf("events/invoke.json: got %+v, %v", d, err)
	}
}

func TestDecodeDetailIsStrict(t *testing.T) {
	ev, err := eventBridgeEvent(json.RawMessage(`{"detail-type":"Stats Ingested","source":"shardwise","detail":{"cluster":"prod","snapshot_key":"k","extra":1}}`))
	if err != nil {
		t.Fatal(err)
	}
	type stats struct {
		Cluster     string `json:"cluster"`
		SnapshotKey string `json:"snapshot_key"`
	}
	if _, err := decodeDetail[stats](ev); err == nil || !strings.Contains(err.Error(), `"Stats Ingested" detail`) {
		t.Errorf("decodeDetail with an unknown field: got %v, want an error naming the detail type", err)
	}
}

// alarmDetail is a CloudWatch alarm state change detail with the given name, state and dimensions.
func alarmDetail(name, state string, dims map[string]string) json.RawMessage {
	d := map[string]any{"alarmName": name, "state": map[string]any{"value": state}}
	if dims != nil {
		d["configuration"] = map[string]any{"metrics": []any{map[string]any{"metricStat": map[string]any{"metric": map[string]any{"dimensions": dims}}}}}
	}
	b, err := json.Marshal(d)
	if err != nil {
		panic(err)
	}
	return b
}

func TestAlarmCluster(t *testing.T) {
	clusters := func(names ...string) []config.Cluster {
		var out []config.Cluster
		for _, n := range names {
			out = append(out, config.Cluster{Name: n})
		}
		return out
	}
	var sample struct {
		Detail json.RawMessage `json:"detail"`
	}
	if err := json.Unmarshal(readEvent(t, "alarm.json"), &sample); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name     string
		detail   json.RawMessage
		clusters []config.Cluster
		want     string
		ok       bool
		wantErr  string
	}{
		{"sample event names prod by alarm name", sample.Detail, clusters("prod", "stage"), "prod", true, ""},
		{"DomainName dimension", alarmDetail("JVMMemoryPressure high", "ALARM", map[string]string{"DomainName": "prod-eu", "ClientId": "123"}), clusters("prod", "prod-eu"), "prod-eu", true, ""},
		{"DomainName wins over the alarm name", alarmDetail("shardwise-prod-node-1", "ALARM", map[string]string{"DomainName": "stage"}), clusters("prod", "stage"), "stage", true, ""},
		{"longest match: prod-eu over prod", alarmDetail("shardwise-prod-eu-node-3-write-queue", "ALARM", nil), clusters("prod", "prod-eu"), "prod-eu", true, ""},
		{"longest match whatever the config order", alarmDetail("shardwise-prod-eu-node-3-write-queue", "ALARM", nil), clusters("prod-eu", "prod"), "prod-eu", true, ""},
		{"prod is not mistaken for prod-eu", alarmDetail("shardwise-prod-node-3-write-queue", "ALARM", nil), clusters("prod-eu", "prod"), "prod", true, ""},
		{"bare shardwise-<cluster>", alarmDetail("shardwise-prod", "ALARM", nil), clusters("prod"), "prod", true, ""},
		{"OK state is ignored", alarmDetail("shardwise-prod-node-3", "OK", nil), clusters("prod"), "", false, ""},
		{"INSUFFICIENT_DATA is ignored", alarmDetail("shardwise-prod-node-3", "INSUFFICIENT_DATA", nil), clusters("prod"), "", false, ""},
		{"unknown cluster", alarmDetail("shardwise-qa-node-1", "ALARM", nil), clusters("prod"), "", false, `alarm shardwise-qa-node-1 names no configured cluster`},
		{"unknown DomainName and no name match", alarmDetail("disk", "ALARM", map[string]string{"DomainName": "other"}), clusters("prod"), "", false, "names no configured cluster"},
		{"a prefix without the dash does not match", alarmDetail("shardwise-production-node-1", "ALARM", nil), clusters("prod"), "", false, "names no configured cluster"},
		{"not JSON", json.RawMessage(`[`), clusters("prod"), "", false, "alarm event"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			event := json.RawMessage(`{"detail-type":"CloudWatch Alarm State Change","source":"aws.cloudwatch","detail":` + string(tc.detail) + `}`)
			got, _, ok, err := alarmCluster(event, tc.clusters)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("alarmCluster: got %v, want an error containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want || ok != tc.ok {
				t.Errorf("alarmCluster: got %q, %v want %q, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}

// The handlers refuse events their function is not subscribed to before touching the engine,
// which here has no store, bus or cluster: reaching it would panic.
func TestHandlersRefuseUnsupportedEvents(t *testing.T) {
	f := &Function{Name: "test", Engine: &engine.Engine{}}
	statsIngested := json.RawMessage(`{"detail-type":"Stats Ingested","source":"shardwise","detail":{"cluster":"prod","snapshot_key":"k","at":"2026-11-29T10:15:00Z","nodes":1,"copies":1}}`)
	movesPlanned := json.RawMessage(`{"detail-type":"Moves Planned","source":"shardwise","detail":{}}`)
	cases := []struct {
		name string
		call func() error
	}{
		{"ingest: an event that is not the schedule", func() error { _, err := f.Ingest(t.Context(), statsIngested); return err }},
		{"detect: Moves Planned", func() error { _, err := f.Detect(t.Context(), movesPlanned); return err }},
		{"move: Stats Ingested", func() error { _, err := f.Move(t.Context(), statsIngested); return err }},
		{"replicas: the schedule", func() error { _, err := f.Replicas(t.Context(), readEvent(t, "schedule.json")); return err }},
		{"sandbox: an alarm", func() error { _, err := f.Sandbox(t.Context(), readEvent(t, "alarm.json")); return err }},
		{"detect: a Function URL request", func() error {
			_, err := f.Detect(t.Context(), readEvent(t, "webhook-alertmanager.json"))
			return err
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.call(); !errors.Is(err, errUnsupported) {
				t.Errorf("got %v, want errUnsupported", err)
			}
		})
	}
}

func TestDetectIgnoresAlarmLeavingAlarmState(t *testing.T) {
	f := &Function{Name: "detect", Engine: &engine.Engine{Config: config.Config{Clusters: []config.Cluster{{Name: "prod"}}}}}
	raw := readEvent(t, "alarm.json")
	var ev map[string]any
	if err := json.Unmarshal(raw, &ev); err != nil {
		t.Fatal(err)
	}
	ev["detail"].(map[string]any)["state"].(map[string]any)["value"] = "OK"
	b, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	r, err := f.Detect(t.Context(), b)
	if err != nil || r != nil {
		t.Errorf("Detect on an OK alarm: got %+v, %v, want nothing done", r, err)
	}
}

// An alarm about a cluster this stack does not watch (another stack's, through the account-wide
// alarm rule) is logged and ignored, not failed into the dead-letter queue; the alarm's own
// malformations still fail.
func TestDetectIgnoresOtherStacksAlarms(t *testing.T) {
	var logs bytes.Buffer
	f := &Function{Name: "detect", Engine: &engine.Engine{Config: config.Config{Clusters: []config.Cluster{{Name: "prod"}}},
		Log: slog.New(slog.NewJSONHandler(&logs, nil))}}
	event := func(detail json.RawMessage) json.RawMessage {
		return json.RawMessage(`{"detail-type":"CloudWatch Alarm State Change","source":"aws.cloudwatch","detail":` + string(detail) + `}`)
	}
	r, err := f.Detect(t.Context(), event(alarmDetail("shardwise-staging-node-1", "ALARM", nil)))
	if err != nil || r != nil {
		t.Fatalf("Detect on another stack's alarm: got %+v, %v, want nothing done and no error", r, err)
	}
	if !strings.Contains(logs.String(), "shardwise-staging-node-1") || !strings.Contains(logs.String(), "ignored") {
		t.Errorf("log: got %q, want a warning naming the alarm", logs.String())
	}
	if _, err := f.Detect(t.Context(), event(json.RawMessage(`{"alarmName": 5}`))); err == nil {
		t.Errorf("Detect on a malformed alarm: got no error")
	}
}

// The production state table's client retries as state documents: 10 attempts, where the SDK's
// DynamoDB default is 3.
func TestDynamoClientRetries(t *testing.T) {
	got := dynamoClient(aws.Config{Region: "eu-west-1"}).Options().Retryer.MaxAttempts()
	sdkDefault := dynamodb.NewFromConfig(aws.Config{Region: "eu-west-1"}).Options().Retryer.MaxAttempts()
	if want := state.NewDynamoRetryer().MaxAttempts(); got != want || got == sdkDefault {
		t.Errorf("max attempts: got %d, want %d (the SDK's default is %d)", got, want, sdkDefault)
	}
}
