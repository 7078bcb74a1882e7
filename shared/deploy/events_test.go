package deploy

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
)

// The sample events in events/ are what `sam local invoke -e` feeds the functions, so they must
// be what the stack's triggers deliver: these tests hold them to the template's rule patterns and
// to aws-lambda-go's event types.

func readEvent(t *testing.T, name string) []byte {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "events", name))
	if err != nil {
		t.Fatalf("sample event: %v", err)
	}
	return raw
}

// matches applies an EventBridge event pattern the way EventBridge does for the parts the
// template uses: a list matches when any of its entries does, an entry is a literal or
// {"prefix": "..."}, and an object matches field by field.
func matches(pattern, event any) bool {
	switch p := pattern.(type) {
	case map[string]any:
		ev, ok := event.(map[string]any)
		if !ok {
			return false
		}
		for key, sub := range p {
			if !matches(sub, ev[key]) {
				return false
			}
		}
		return true
	case []any:
		for _, want := range p {
			if rule, ok := want.(map[string]any); ok {
				prefix, isPrefix := rule["prefix"].(string)
				value, isString := event.(string)
				if isPrefix && isString && strings.HasPrefix(value, prefix) {
					return true
				}
				continue
			}
			if want == event {
				return true
			}
		}
		return false
	default:
		return false
	}
}

func TestSampleEventBridgeEvents(t *testing.T) {
	doc := render(t, Options{})
	pattern := func(function, event string) any {
		return get(t, doc, "Resources", function, "Properties", "Events", event, "Properties", "Pattern")
	}
	tests := []struct {
		name       string
		file       string
		detailType string
		matching   []any // rule patterns the event must match
		notMatch   []any // and must not
	}{
		{
			name:       "scheduled event",
			file:       "schedule.json",
			detailType: "Scheduled Event",
			notMatch: []any{
				pattern("DetectFunction", "StatsIngested"),
				pattern("DetectFunction", "AlarmStateChange"),
				pattern("MoveFunction", "MovesPlanned"),
			},
		},
		{
			name:       "shardwise queue-latency alarm",
			file:       "alarm-write-queue-latency.json",
			detailType: "CloudWatch Alarm State Change",
			matching:   []any{pattern("DetectFunction", "AlarmStateChange")},
			notMatch:   []any{pattern("DetectFunction", "StatsIngested")},
		},
		{
			name:       "shardwise alarm",
			file:       "alarm.json",
			detailType: "CloudWatch Alarm State Change",
			matching:   []any{pattern("DetectFunction", "AlarmStateChange")},
			notMatch: []any{
				pattern("DetectFunction", "StatsIngested"),
				pattern("ReplicasFunction", "StatsIngested"),
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			raw := readEvent(t, tc.file)
			var ev events.CloudWatchEvent
			if err := json.Unmarshal(raw, &ev); err != nil {
				t.Fatalf("decode as an EventBridge event: %v", err)
			}
			if ev.DetailType != tc.detailType {
				t.Errorf("detail-type: got %q, want %q", ev.DetailType, tc.detailType)
			}
			var generic any
			if err := json.Unmarshal(raw, &generic); err != nil {
				t.Fatalf("decode: %v", err)
			}
			for i, p := range tc.matching {
				if !matches(p, generic) {
					t.Errorf("pattern %d: event does not match %v", i, p)
				}
			}
			for i, p := range tc.notMatch {
				if matches(p, generic) {
					t.Errorf("pattern %d: event matches %v, want no match", i, p)
				}
			}
		})
	}

	t.Run("alarms as the template creates them", func(t *testing.T) {
		tests := []struct {
			file, name string
			// metric is the alarm's namespace, metric and statistic, query a Metrics Insights query.
			metric, query string
			dimensions    map[string]string
		}{
			{file: "alarm.json", name: "shardwise-prod-write-queue-shardwise", metric: "AWS/ES ThreadpoolWriteQueue Maximum",
				dimensions: map[string]string{"DomainName": "search-prod", "ClientId": "123456789012"}},
			{file: "alarm-write-queue-latency.json", name: "shardwise-prod-write-queue-latency-shardwise", metric: "shardwise WriteQueueLatency Maximum",
				dimensions: map[string]string{"Cluster": "prod"}},
		}
		deployed := deployedAlarms(t, doc, "prod:search-prod")
		for _, tc := range tests {
			var alarm struct {
				Detail struct {
					AlarmName string `json:"alarmName"`
					State     struct {
						Value string `json:"value"`
					} `json:"state"`
					Configuration struct {
						Metrics []struct {
							Expression string `json:"expression"`
							MetricStat struct {
								Metric struct {
									Namespace  string            `json:"namespace"`
									Name       string            `json:"name"`
									Dimensions map[string]string `json:"dimensions"`
								} `json:"metric"`
								Stat string `json:"stat"`
							} `json:"metricStat"`
						} `json:"metrics"`
					} `json:"configuration"`
				} `json:"detail"`
			}
			if err := json.Unmarshal(readEvent(t, tc.file), &alarm); err != nil {
				t.Fatalf("decode %s: %v", tc.file, err)
			}
			d := alarm.Detail
			if d.AlarmName != tc.name || d.State.Value != "ALARM" || len(d.Configuration.Metrics) != 1 {
				t.Fatalf("%s: got alarm %q in %s with %d metrics, want %q in ALARM with one", tc.file, d.AlarmName, d.State.Value,
					len(d.Configuration.Metrics), tc.name)
			}
			m := d.Configuration.Metrics[0]
			ms := m.MetricStat
			got := strings.TrimSpace(ms.Metric.Namespace + " " + ms.Metric.Name + " " + ms.Stat)
			if got != tc.metric || m.Expression != tc.query || !reflect.DeepEqual(ms.Metric.Dimensions, tc.dimensions) {
				t.Errorf("%s: got metric %q %v query %q, want %q %v %q", tc.file, got, ms.Metric.Dimensions, m.Expression, tc.metric, tc.dimensions, tc.query)
			}
			// The template creates an alarm of that name and shape for AlarmClusters prod:search-prod.
			found := false
			for _, a := range deployed {
				if a.name == tc.name {
					found = true
					if a.expression != tc.query || (tc.metric != "" && a.metric != strings.Replace(tc.metric, " ", "/", 1)) {
						t.Errorf("%s: the template's alarm %s has metric %q query %q", tc.file, a.id, a.metric, a.expression)
					}
				}
			}
			if !found {
				t.Errorf("%s: the template creates no alarm %q for AlarmClusters prod:search-prod", tc.file, tc.name)
			}
		}
	})
}

func TestSampleDirectInvoke(t *testing.T) {
	var direct struct {
		Clusters []string `json:"clusters"`
	}
	dec := json.NewDecoder(strings.NewReader(string(readEvent(t, "invoke.json"))))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&direct); err != nil {
		t.Fatalf("decode direct invoke: %v", err)
	}
	if len(direct.Clusters) != 1 || direct.Clusters[0] != "prod" {
		t.Errorf("clusters: got %v, want [prod]", direct.Clusters)
	}
}

func TestSampleWebhooks(t *testing.T) {
	type nodesStats struct {
		ClusterName string `json:"cluster_name"`
		Nodes       map[string]struct {
			Name       string `json:"name"`
			ThreadPool struct {
				Write *struct {
					Threads   int `json:"threads"`
					Queue     int `json:"queue"`
					Completed int `json:"completed"`
				} `json:"write"`
			} `json:"thread_pool"`
		} `json:"nodes"`
	}
	type alertmanager struct {
		Version string `json:"version"`
		Status  string `json:"status"`
		Alerts  []struct {
			Labels map[string]string `json:"labels"`
		} `json:"alerts"`
	}
	tests := []struct {
		name string
		file string
		// cluster is the x-shardwise-cluster header; the alarm names its cluster by dimension.
		cluster string
		check   func(t *testing.T, body []byte)
	}{
		{
			name:    "nodes stats",
			file:    "webhook-nodes-stats.json",
			cluster: "prod",
			check: func(t *testing.T, body []byte) {
				var stats nodesStats
				if err := json.Unmarshal(body, &stats); err != nil {
					t.Fatalf("body is not _nodes/stats: %v", err)
				}
				if stats.ClusterName != "prod" {
					t.Errorf("cluster_name: got %q, want prod", stats.ClusterName)
				}
				hot := false
				for id, n := range stats.Nodes {
					if n.ThreadPool.Write == nil || n.ThreadPool.Write.Threads == 0 {
						t.Errorf("node %s has no WRITE pool", id)
						continue
					}
					hot = hot || (n.Name == "node-3" && n.ThreadPool.Write.Queue > 0)
				}
				if !hot {
					t.Errorf("node-3 should be queueing writes, as the alarm sample says")
				}
			},
		},
		{
			name:    "alertmanager",
			file:    "webhook-alertmanager.json",
			cluster: "prod",
			check: func(t *testing.T, body []byte) {
				var am alertmanager
				if err := json.Unmarshal(body, &am); err != nil {
					t.Fatalf("body is not an Alertmanager webhook: %v", err)
				}
				if am.Version != "4" || am.Status != "firing" {
					t.Errorf("version, status: got %q, %q, want 4, firing", am.Version, am.Status)
				}
				if len(am.Alerts) == 0 {
					t.Fatal("no alerts")
				}
				if got := am.Alerts[0].Labels; got["node"] != "node-3" || got["cluster"] != "prod" {
					t.Errorf("labels: got %v, want node node-3 of cluster prod", got)
				}
			},
		},
		{
			name: "alarm",
			file: "webhook-alarm.json",
			check: func(t *testing.T, body []byte) {
				// A forwarder relays an alarm state change as EventBridge delivers it: here an
				// alarm of the user's own, whose metric names the cluster by a Cluster dimension.
				var relayed, delivered map[string]any
				if err := json.Unmarshal(body, &relayed); err != nil {
					t.Fatalf("body is not JSON: %v", err)
				}
				if err := json.Unmarshal(readEvent(t, "alarm.json"), &delivered); err != nil {
					t.Fatal(err)
				}
				if got := sortedKeys(relayed); !reflect.DeepEqual(got, sortedKeys(delivered)) {
					t.Errorf("fields: got %v, want those of events/alarm.json, %v", got, sortedKeys(delivered))
				}
				if relayed["detail-type"] != "CloudWatch Alarm State Change" || relayed["source"] != "aws.cloudwatch" {
					t.Errorf("got %v from %v, want an alarm state change", relayed["detail-type"], relayed["source"])
				}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var req events.LambdaFunctionURLRequest
			if err := json.Unmarshal(readEvent(t, tc.file), &req); err != nil {
				t.Fatalf("decode as a Function URL request: %v", err)
			}
			if req.Version != "2.0" || req.RequestContext.HTTP.Method != "POST" {
				t.Errorf("version, method: got %q, %q, want 2.0, POST", req.Version, req.RequestContext.HTTP.Method)
			}
			if got := req.Headers["x-shardwise-cluster"]; got != tc.cluster {
				t.Errorf("x-shardwise-cluster: got %q, want %q", got, tc.cluster)
			}
			// Temporary credentials (ASIA…) sign with their session token, which SigV4 then
			// covers: a sample without it could not have passed Lambda's check.
			auth := req.Headers["authorization"]
			if req.Headers["x-amz-security-token"] == "" || !strings.Contains(auth, ";x-amz-security-token") {
				t.Errorf("SigV4 with temporary credentials must send and sign x-amz-security-token: %q", auth)
			}
			if p := req.RequestContext.HTTP.Path; p != req.RawPath {
				t.Errorf("path: requestContext says %q, rawPath %q", p, req.RawPath)
			}
			// The template's Function URL is AWS_IAM: every request arrives SigV4-authenticated.
			if req.RequestContext.Authorizer == nil || req.RequestContext.Authorizer.IAM == nil {
				t.Error("no IAM authorizer context, which an AWS_IAM Function URL always sets")
			}
			if req.IsBase64Encoded {
				t.Fatal("body is base64; the samples carry plain JSON")
			}
			tc.check(t, []byte(req.Body))
		})
	}
}
