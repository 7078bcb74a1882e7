package webhook

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
)

// sampleRequest reads a Function URL request from events/.
func sampleRequest(t testing.TB, name string) events.LambdaFunctionURLRequest {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "events", name))
	if err != nil {
		t.Fatalf("sample event: %v", err)
	}
	var req events.LambdaFunctionURLRequest
	if err := json.Unmarshal(raw, &req); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return req
}

func TestParseNodesStats(t *testing.T) {
	sample := sampleRequest(t, "webhook-nodes-stats.json").Body
	tests := []struct {
		name      string
		body      string
		wantNodes []string
		wantErr   string
	}{
		{name: "sample push", body: sample, wantNodes: []string{"node-1", "node-2", "node-3"}},
		{name: "a failed node is counted, not listed", body: `{"_nodes":{"total":2,"successful":1,"failed":1},"nodes":{"a":{"name":"n-a"}}}`, wantNodes: []string{"n-a"}},
		{name: "no nodes", body: `{"_nodes":{"total":0},"cluster_name":"prod","nodes":{}}`, wantErr: "lists no nodes"},
		{name: "empty object", body: `{}`, wantErr: "lists no nodes"},
		{name: "null", body: `null`, wantErr: "lists no nodes"},
		{name: "empty node id", body: `{"nodes":{"":{"name":"x"}}}`, wantErr: "empty id"},
		{name: "nodes as a list", body: `{"nodes":[{"name":"x"}]}`, wantErr: "cannot unmarshal"},
		{name: "truncated", body: sample[:len(sample)/2], wantErr: "unexpected end"},
		{name: "not JSON", body: `nodes=3`, wantErr: "invalid character"},
		{name: "two documents", body: `{"nodes":{"a":{}}} {}`, wantErr: "invalid character"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ns, err := parseNodesStats([]byte(tc.body))
			if tc.wantErr != "" {
				if !errors.Is(err, errMalformed) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got %v, want errMalformed saying %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("parseNodesStats: %v", err)
			}
			var names []string
			for _, n := range ns.Nodes {
				names = append(names, n.Name)
			}
			if !slices.Equal(names, tc.wantNodes) {
				t.Errorf("nodes: got %v, want %v", names, tc.wantNodes)
			}
		})
	}
}

func TestParseAlertmanager(t *testing.T) {
	alert := func(status string, labels string) string {
		return `{"status":"` + status + `","labels":` + labels + `}`
	}
	payload := func(status string, alerts ...string) string {
		return `{"version":"4","status":"` + status + `","commonLabels":{"alertname":"WriteQueue"},"alerts":[` + strings.Join(alerts, ",") + `]}`
	}
	tests := []struct {
		name    string
		body    string
		want    Alertmanager
		wantErr string
	}{
		{name: "sample", body: sampleRequest(t, "webhook-alertmanager.json").Body,
			want: Alertmanager{Firing: true, Clusters: []string{"prod"}, Nodes: []string{"node-3"}}},
		{name: "two clusters, repeated, sorted", body: payload("firing",
			alert("firing", `{"cluster":"prod","node":"n2"}`), alert("firing", `{"cluster":"eu","node":"n1"}`), alert("firing", `{"cluster":"prod","node":"n2"}`)),
			want: Alertmanager{Firing: true, Clusters: []string{"eu", "prod"}, Nodes: []string{"n1", "n2"}}},
		{name: "resolved alerts in a firing group are left out", body: payload("firing",
			alert("resolved", `{"cluster":"eu"}`), alert("firing", `{"cluster":"prod"}`)),
			want: Alertmanager{Firing: true, Clusters: []string{"prod"}}},
		{name: "all resolved", body: payload("resolved", alert("resolved", `{"cluster":"prod"}`)), want: Alertmanager{}},
		{name: "cluster from the common labels", body: `{"version":"4","status":"firing","commonLabels":{"cluster":"prod"},"alerts":[{"status":"firing","labels":{}}]}`,
			want: Alertmanager{Firing: true, Clusters: []string{"prod"}}},
		{name: "no cluster label", body: payload("firing", alert("firing", `{"node":"n1"}`)), want: Alertmanager{Firing: true, Nodes: []string{"n1"}}},
		{name: "unknown fields are fine", body: `{"version":"4","status":"firing","newField":[1],"alerts":[{"status":"firing","labels":{"cluster":"prod"},"x":{}}]}`,
			want: Alertmanager{Firing: true, Clusters: []string{"prod"}}},
		{name: "payload version 3", body: `{"version":"3","status":"firing","alerts":[]}`, wantErr: `version "3"`},
		{name: "no version", body: `{"status":"firing","alerts":[]}`, wantErr: `version ""`},
		{name: "unknown status", body: `{"version":"4","status":"pending","alerts":[]}`, wantErr: `status "pending"`},
		{name: "labels not strings", body: payload("firing", alert("firing", `{"cluster":1}`)), wantErr: "cannot unmarshal"},
		{name: "a list", body: `[]`, wantErr: "cannot unmarshal"},
		{name: "not JSON", body: `alert!`, wantErr: "invalid character"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseAlertmanager([]byte(tc.body))
			if tc.wantErr != "" {
				if !errors.Is(err, errMalformed) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got %v, want errMalformed saying %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("parseAlertmanager: %v", err)
			}
			if got.Firing != tc.want.Firing || !slices.Equal(got.Clusters, tc.want.Clusters) || !slices.Equal(got.Nodes, tc.want.Nodes) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

// alarmEvent is an alarm state change with the given name, state and metric dimensions.
func alarmEvent(name, state string, dims ...string) string {
	var metrics []string
	for _, d := range dims {
		metrics = append(metrics, `{"id":"m","metricStat":{"metric":{"namespace":"ns","name":"x","dimensions":`+d+`}}}`)
	}
	return `{"version":"0","detail-type":"CloudWatch Alarm State Change","source":"aws.cloudwatch","detail":{"alarmName":"` + name +
		`","state":{"value":"` + state + `"},"configuration":{"metrics":[` + strings.Join(metrics, ",") + `]}}}`
}

func TestParseAlarm(t *testing.T) {
	alarm, err := os.ReadFile(filepath.Join("..", "..", "events", "alarm.json"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		body    string
		want    Alarm
		wantErr string
	}{
		{name: "sample alarm", body: string(alarm), want: Alarm{Name: "shardwise-prod-write-queue-shardwise", InAlarm: true,
			DomainNames: []string{"search-prod"}}},
		{name: "the webhook sample carries the same event", body: sampleRequest(t, "webhook-alarm.json").Body, want: Alarm{Name: "shardwise-prod-node-3-write-queue",
			InAlarm: true, ClusterDimensions: []string{"prod"}, Nodes: []string{"node-3"}}},
		{name: "back to OK", body: alarmEvent("shardwise-prod", "OK"), want: Alarm{Name: "shardwise-prod"}},
		{name: "Amazon OpenSearch Service metrics", body: alarmEvent("es-write-queue", "ALARM", `{"DomainName":"prod","NodeId":"abc","ClientId":"1234"}`, `{"DomainName":"prod","NodeId":"def","ClientId":"1234"}`),
			want: Alarm{Name: "es-write-queue", InAlarm: true, DomainNames: []string{"prod"}, Nodes: []string{"abc", "def"}}},
		{name: "composite alarm: no metrics", body: `{"detail-type":"CloudWatch Alarm State Change","source":"aws.cloudwatch","detail":{"alarmName":"shardwise-prod","state":{"value":"ALARM"},"configuration":{"alarmRule":"ALARM(a)"}}}`,
			want: Alarm{Name: "shardwise-prod", InAlarm: true}},
		{name: "another event", body: `{"detail-type":"Scheduled Event","source":"aws.events","detail":{}}`, wantErr: `detail-type "Scheduled Event"`},
		{name: "alarm detail-type from another source", body: `{"detail-type":"CloudWatch Alarm State Change","source":"custom","detail":{"alarmName":"a"}}`, wantErr: `from "custom"`},
		{name: "no detail", body: `{"detail-type":"CloudWatch Alarm State Change","source":"aws.cloudwatch"}`, wantErr: "no detail.alarmName"},
		{name: "dimensions not strings", body: alarmEvent("a", "ALARM", `{"Cluster":["prod"]}`), wantErr: "cannot unmarshal"},
		{name: "not JSON", body: `<alarm/>`, wantErr: "invalid character"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseAlarm([]byte(tc.body))
			if tc.wantErr != "" {
				if !errors.Is(err, errMalformed) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got %v, want errMalformed saying %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseAlarm: %v", err)
			}
			if got.Name != tc.want.Name || got.InAlarm != tc.want.InAlarm || !slices.Equal(got.ClusterDimensions, tc.want.ClusterDimensions) ||
				!slices.Equal(got.DomainNames, tc.want.DomainNames) || !slices.Equal(got.Nodes, tc.want.Nodes) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestAlarmCluster(t *testing.T) {
	configured := []string{"prod", "prod-eu", "staging"}
	tests := []struct {
		name    string
		alarm   Alarm
		want    string
		wantErr error
	}{
		{name: "Cluster dimension", alarm: Alarm{Name: "anything", ClusterDimensions: []string{"staging"}}, want: "staging"},
		{name: "Cluster dimension wins over the name", alarm: Alarm{Name: "shardwise-prod-x", ClusterDimensions: []string{"staging"}}, want: "staging"},
		{name: "unconfigured Cluster dimension", alarm: Alarm{Name: "shardwise-prod-x", ClusterDimensions: []string{"dev"}}, wantErr: ErrUnknownCluster},
		{name: "two clusters", alarm: Alarm{Name: "a", ClusterDimensions: []string{"prod", "staging"}}, wantErr: errMalformed},
		{name: "DomainName of a configured cluster", alarm: Alarm{Name: "es-alarm", DomainNames: []string{"other", "prod-eu"}}, want: "prod-eu"},
		{name: "DomainName of no configured cluster falls back to the name", alarm: Alarm{Name: "shardwise-staging-disk", DomainNames: []string{"search-domain"}}, want: "staging"},
		{name: "name prefix", alarm: Alarm{Name: "shardwise-prod-node-3-write-queue"}, want: "prod"},
		{name: "longest name prefix", alarm: Alarm{Name: "shardwise-prod-eu-node-3"}, want: "prod-eu"},
		{name: "name is the prefix and cluster", alarm: Alarm{Name: "shardwise-staging"}, want: "staging"},
		{name: "prefix without a dash after the cluster", alarm: Alarm{Name: "shardwise-production"}, wantErr: ErrUnknownCluster},
		{name: "nothing names a cluster", alarm: Alarm{Name: "cpu-high"}, wantErr: ErrUnknownCluster},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.alarm.Cluster(configured)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("got %q, %v, want %v", got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("got %q, %v, want %q", got, err, tc.want)
			}
		})
	}
}
