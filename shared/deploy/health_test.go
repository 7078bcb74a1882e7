package deploy

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/shardwise/shardwise/shared/bus"
	"github.com/shardwise/shardwise/shared/telemetry"
)

// The alert topic's rules take a signal's event when it notifies and leave the rest, which still
// go to the bus: a cluster saturated for hours sends one email, not one every 30 s.
func TestAlertRulesTakeNotifyingEventsOnly(t *testing.T) {
	doc := render(t, Options{})
	tests := []struct {
		name, rule, detailType string
		detail                 any
		want                   bool
	}{
		{"scale-up that notifies", "ScaleUpNeededRule", bus.TypeScaleUpNeeded,
			bus.ScaleUpNeeded{Cluster: "prod", Notice: bus.Notice{Notify: true, NotifyReason: "started"}}, true},
		{"scale-up unchanged", "ScaleUpNeededRule", bus.TypeScaleUpNeeded,
			bus.ScaleUpNeeded{Cluster: "prod", Notice: bus.Notice{NotifyReason: "unchanged"}}, false},
		{"unrelieved that notifies", "HotspotUnrelievedRule", bus.TypeHotspotUnrelieved,
			bus.HotspotUnrelieved{Cluster: "prod", Notice: bus.Notice{Notify: true}}, true},
		{"unrelieved in its cool-down", "HotspotUnrelievedRule", bus.TypeHotspotUnrelieved,
			bus.HotspotUnrelieved{Cluster: "prod", Notice: bus.Notice{NotifyReason: "cool-down"}}, false},
		{"unrelieved to the scale-up rule", "ScaleUpNeededRule", bus.TypeHotspotUnrelieved,
			bus.HotspotUnrelieved{Cluster: "prod", Notice: bus.Notice{Notify: true}}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			raw, err := json.Marshal(map[string]any{"source": bus.Source, "detail-type": tc.detailType, "detail": tc.detail})
			if err != nil {
				t.Fatal(err)
			}
			var event any
			if err := json.Unmarshal(raw, &event); err != nil {
				t.Fatal(err)
			}
			pattern := get(t, doc, "Resources", tc.rule, "Properties", "EventPattern")
			if got := matches(pattern, event); got != tc.want {
				t.Errorf("%s matches %s: got %v, want %v", tc.rule, raw, got, tc.want)
			}
		})
	}
}

func TestStaleSamplesAlarm(t *testing.T) {
	doc := render(t, Options{})
	props := get(t, doc, "Resources", staleAlarmID, "Properties")
	tests := []struct {
		name string
		path []any
		want any
	}{
		{"the oldest sample of any cluster", []any{"Metrics", 0, "Expression"},
			`SELECT MAX(SecondsSinceLastSample) FROM SCHEMA("shardwise", Cluster)`},
		{"older than three refresh periods", []any{"Threshold"}, float64(90)},
		{"above", []any{"ComparisonOperator"}, "GreaterThanThreshold"},
		{"no sample at all is stale", []any{"TreatMissingData"}, "breaching"},
		{"three minutes running", []any{"DatapointsToAlarm"}, float64(3)},
		{"notifies", []any{"AlarmActions"}, []any{ref("AlertTopic")}},
		{"never wakes detect", []any{"AlarmName"}, map[string]any{"Fn::Sub": "stale-samples-${AWS::StackName}"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := get(t, props, tc.path...); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %#v, want %#v", got, tc.want)
			}
		})
	}
}

// AWS's recommended alarms come for each domain of AlarmClusters when DomainHealthAlarms is true,
// notify the topic, never wake detect, and read the worst node.
func TestDomainHealthAlarms(t *testing.T) {
	doc := render(t, Options{})
	conditions := get(t, doc, "Conditions").(map[string]any)
	resources := get(t, doc, "Resources").(map[string]any)
	rule := get(t, doc, "Resources", "DetectFunction", "Properties", "Events", "AlarmStateChange", "Properties", "Pattern")
	tests := []struct {
		name, alarmClusters, enabled string
		want                         []string
	}{
		{"on, one domain and a plain cluster", "prod:search-prod,stage", "true",
			[]string{"CPUAlarm1", "ClusterRedAlarm1", "FreeStorageAlarm1", "JVMPressureAlarm1", "WritesBlockedAlarm1"}},
		{"on, the domain second", "stage,prod:search-prod", "true",
			[]string{"CPUAlarm2", "ClusterRedAlarm2", "FreeStorageAlarm2", "JVMPressureAlarm2", "WritesBlockedAlarm2"}},
		{"off", "prod:search-prod", "false", nil},
		{"no domain", "prod", "true", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			params := map[string]any{paramAlarmClusters: tc.alarmClusters, paramHealthAlarms: tc.enabled, paramFreeStorageMiB: "4096",
				alertTopicID: "arn:aws:sns:us-east-1:123456789012:alerts"}
			var got []string
			for id, r := range resources {
				cond, _ := r.(map[string]any)["Condition"].(string)
				if !strings.HasPrefix(cond, "HasDomainHealthAlarms") {
					continue
				}
				// Fn::And of the switch and the slot's domain condition.
				holds := true
				for _, c := range get(t, conditions[cond], "Fn::And").([]any) {
					holds = holds && evalCFN(t, c, params).(bool)
				}
				if !holds {
					continue
				}
				got = append(got, id)
				props := evalCFN(t, r.(map[string]any)["Properties"], params).(map[string]any)
				name := props["AlarmName"].(string)
				event := map[string]any{"source": "aws.cloudwatch", "detail-type": "CloudWatch Alarm State Change",
					"detail": map[string]any{"alarmName": name, "state": map[string]any{"value": "ALARM"}}}
				if matches(rule, event) || !strings.HasPrefix(name, "opensearch-prod-") {
					t.Errorf("%s: name %q, want opensearch-prod-… that detect's rule leaves alone", id, name)
				}
				if !reflect.DeepEqual(props["AlarmActions"], []any{params[alertTopicID]}) {
					t.Errorf("%s: actions %v, want the alert topic", id, props["AlarmActions"])
				}
				// The domain's statistic over its nodes: the worst node.
				wantStat := map[string]string{"FreeStorageAlarm": "Minimum"}[strings.TrimRight(id, "12345")]
				if wantStat == "" {
					wantStat = "Maximum"
				}
				if dims := props["Dimensions"].([]any); get(t, dims[0], "Value") != "search-prod" || props["Statistic"] != wantStat {
					t.Errorf("%s: dimensions %v statistic %v, want DomainName search-prod and %s", id, dims, props["Statistic"], wantStat)
				}
				if strings.HasPrefix(id, "FreeStorageAlarm") && props["Threshold"] != "4096" {
					t.Errorf("%s: threshold %v, want FreeStorageAlarmMiB", id, props["Threshold"])
				}
			}
			slices.Sort(got)
			if !slices.Equal(got, tc.want) {
				t.Errorf("alarms: got %v, want %v", got, tc.want)
			}
		})
	}
}

// The functions publish exactly the metrics the stack reads: each a month of CloudWatch's charge.
func TestPublishedMetricsAreRead(t *testing.T) {
	read := map[string]bool{
		// The alarms' metrics (alarms.go, health.go).
		telemetry.MetricWriteQueueLatency:      true,
		telemetry.MetricSecondsSinceLastSample: true,
	}
	for _, g := range dashboardGraphs() {
		for _, m := range g.metrics {
			read[m] = true
		}
	}
	doc := render(t, Options{})
	q := get(t, doc, "Resources", staleAlarmID, "Properties", "Metrics", 0, "Expression")
	if !strings.Contains(fmt.Sprint(q), "MAX("+telemetry.MetricSecondsSinceLastSample+")") {
		t.Errorf("%s queries %v, want the maximum of %s", staleAlarmID, q, telemetry.MetricSecondsSinceLastSample)
	}
	if m := get(t, doc, "Resources", latencyAlarmID(0), "Properties", "MetricName"); m != telemetry.MetricWriteQueueLatency {
		t.Errorf("%s alarms on %v, want %s", latencyAlarmID(0), m, telemetry.MetricWriteQueueLatency)
	}
	got, want := slices.Sorted(slices.Values(telemetry.Published())), slices.Sorted(maps.Keys(read))
	if !slices.Equal(got, want) {
		t.Errorf("published metrics %v, want those the dashboard and alarms read, %v", got, want)
	}
}
