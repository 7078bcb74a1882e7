package deploy

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/shardwise/shardwise/shared/webhook"
)

// stackName and account stand in for AWS::StackName and AWS::AccountId when the tests evaluate
// the template.
const (
	testStackName = "shardwise"
	testAccount   = "123456789012"
)

// evalCFN evaluates the intrinsic functions the alarms and the bus use (Ref, Fn::Join, Fn::Split,
// Fn::Select, Fn::Equals, Fn::Not, Fn::Sub of a string) as CloudFormation does, with params the
// parameters' values (a CommaDelimitedList as []any); params may also give a pseudo parameter
// (AWS::StackName) another value than the tests' own. Fn::Select out of range is an error, as it
// fails a deployment.
func evalCFN(t *testing.T, v any, params map[string]any) any {
	t.Helper()
	switch x := v.(type) {
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = evalCFN(t, e, params)
		}
		return out
	case map[string]any:
		if len(x) != 1 {
			out := map[string]any{}
			for k, e := range x {
				out[k] = evalCFN(t, e, params)
			}
			return out
		}
		for fn, arg := range x {
			args, _ := arg.([]any)
			switch fn {
			case "Ref":
				name := arg.(string)
				if p, ok := params[name]; ok {
					return p
				}
				switch name {
				case "AWS::StackName":
					return testStackName
				case "AWS::AccountId":
					return testAccount
				}
				t.Fatalf("Ref %s: no value given", name)
			case "Fn::Sub":
				s, ok := arg.(string)
				if !ok {
					t.Fatalf("Fn::Sub %v: only the string form is evaluated here", arg)
				}
				return subVariable.ReplaceAllStringFunc(s, func(v string) string {
					return evalCFN(t, map[string]any{"Ref": v[2 : len(v)-1]}, params).(string)
				})
			case "Fn::Join":
				var parts []string
				list := evalCFN(t, args[1], params).([]any)
				for _, e := range list {
					parts = append(parts, e.(string))
				}
				return strings.Join(parts, args[0].(string))
			case "Fn::Split":
				var out []any
				for _, s := range strings.Split(evalCFN(t, args[1], params).(string), args[0].(string)) {
					out = append(out, s)
				}
				return out
			case "Fn::Select":
				i, err := strconv.Atoi(fmt.Sprint(args[0]))
				if err != nil {
					t.Fatalf("Fn::Select index %v: %v", args[0], err)
				}
				list := evalCFN(t, args[1], params).([]any)
				if i < 0 || i >= len(list) {
					t.Fatalf("Fn::Select index %d out of range of %v: the deployment would fail", i, list)
				}
				return list[i]
			case "Fn::Equals":
				return fmt.Sprint(evalCFN(t, args[0], params)) == fmt.Sprint(evalCFN(t, args[1], params))
			case "Fn::Not":
				return !evalCFN(t, args[0], params).(bool)
			}
			return map[string]any{fn: evalCFN(t, arg, params)}
		}
	}
	return v
}

// subVariable is a ${Name} of Fn::Sub.
var subVariable = regexp.MustCompile(`\$\{[A-Za-z0-9:]+\}`)

// testThresholds are the thresholds' values in the evaluated templates: each distinct, so that an
// alarm on the wrong parameter shows.
var testThresholds = map[string]any{paramLatencyThreshold: "3.5", paramWriteQueueThreshold: "101", paramWriteRejectedThreshold: "2"}

// deployedAlarm is an alarm the template creates for some AlarmClusters value.
type deployedAlarm struct {
	id, name, metric, expression string
	dimensions                   map[string]string
	threshold                    any
}

// deployedAlarms evaluates the template's alarm slots for an AlarmClusters value: the alarms
// whose conditions hold, by logical ID.
func deployedAlarms(t *testing.T, doc map[string]any, alarmClusters string) map[string]deployedAlarm {
	t.Helper()
	params := map[string]any{paramAlarmClusters: alarmClusters}
	maps.Copy(params, testThresholds)
	conditions := get(t, doc, "Conditions").(map[string]any)
	out := map[string]deployedAlarm{}
	for id, r := range get(t, doc, "Resources").(map[string]any) {
		res := r.(map[string]any)
		cond, ok := res["Condition"].(string)
		if !ok || (!strings.HasPrefix(cond, "HasAlarmCluster") && !strings.HasPrefix(cond, "HasAlarmDomain")) {
			continue
		}
		if !evalCFN(t, conditions[cond], params).(bool) {
			continue
		}
		props := evalCFN(t, res["Properties"], params).(map[string]any)
		a := deployedAlarm{id: id, name: props["AlarmName"].(string), dimensions: map[string]string{}, threshold: props["Threshold"]}
		if m, ok := props["MetricName"].(string); ok {
			a.metric = props["Namespace"].(string) + "/" + m + " " + props["Statistic"].(string)
		}
		for _, d := range asList(props["Dimensions"]) {
			dm := d.(map[string]any)
			a.dimensions[dm["Name"].(string)] = dm["Value"].(string)
		}
		for _, q := range asList(props["Metrics"]) {
			qm := q.(map[string]any)
			if ms, ok := qm["MetricStat"].(map[string]any); ok {
				m := ms["Metric"].(map[string]any)
				a.metric = m["Namespace"].(string) + "/" + m["MetricName"].(string) + " " + ms["Stat"].(string)
				for _, d := range asList(m["Dimensions"]) {
					dm := d.(map[string]any)
					a.dimensions[dm["Name"].(string)] = dm["Value"].(string)
				}
				continue
			}
			a.expression = qm["Expression"].(string)
		}
		out[id] = a
	}
	return out
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}

func TestAlarmSlots(t *testing.T) {
	doc := render(t, Options{})
	tests := []struct {
		name          string
		alarmClusters string
		configured    []string
		// want maps each alarm's logical ID to its cluster and, for the domain alarms, domain.
		want map[string][2]string
	}{
		{name: "none", alarmClusters: "", want: map[string][2]string{}},
		{name: "a cluster without a domain", alarmClusters: "prod", configured: []string{"prod"},
			want: map[string][2]string{"WriteQueueLatencyAlarm1": {"prod", ""}}},
		{name: "a domain and a plain cluster", alarmClusters: "prod:search-prod,stage", configured: []string{"stage", "prod"},
			want: map[string][2]string{
				"WriteQueueLatencyAlarm1": {"prod", ""}, "WriteQueueAlarm1": {"prod", "search-prod"}, "WriteRejectedAlarm1": {"prod", "search-prod"},
				"WriteQueueLatencyAlarm2": {"stage", ""},
			}},
		{name: "every slot, a cluster name a prefix of another", alarmClusters: "prod:search-prod,prod-eu:search-prod-eu,a,b,c",
			configured: []string{"prod", "prod-eu", "a", "b", "c"},
			want: map[string][2]string{
				"WriteQueueLatencyAlarm1": {"prod", ""}, "WriteQueueAlarm1": {"prod", "search-prod"}, "WriteRejectedAlarm1": {"prod", "search-prod"},
				"WriteQueueLatencyAlarm2": {"prod-eu", ""}, "WriteQueueAlarm2": {"prod-eu", "search-prod-eu"}, "WriteRejectedAlarm2": {"prod-eu", "search-prod-eu"},
				"WriteQueueLatencyAlarm3": {"a", ""}, "WriteQueueLatencyAlarm4": {"b", ""}, "WriteQueueLatencyAlarm5": {"c", ""},
			}},
	}
	rule := get(t, doc, "Resources", "DetectFunction", "Properties", "Events", "AlarmStateChange", "Properties", "Pattern")
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := deployedAlarms(t, doc, tc.alarmClusters)
			if gotIDs, wantIDs := slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(tc.want)); !slices.Equal(gotIDs, wantIDs) {
				t.Fatalf("alarms: got %v, want %v", gotIDs, wantIDs)
			}
			for id, a := range got {
				cluster, domain := tc.want[id][0], tc.want[id][1]
				// detect's rule takes the alarm, and detect finds its cluster from the event.
				event := map[string]any{"source": "aws.cloudwatch", "detail-type": "CloudWatch Alarm State Change",
					"detail": map[string]any{"alarmName": a.name, "state": map[string]any{"value": "ALARM"}}}
				if !matches(rule, event) {
					t.Errorf("%s: detect's rule does not take alarm %q", id, a.name)
				}
				dims := map[string]string{}
				if domain != "" {
					dims = map[string]string{"DomainName": domain}
				}
				if c, err := (webhook.Alarm{Name: a.name, DomainNames: slices.Collect(maps.Values(dims))}).Cluster(tc.configured); err != nil || c != cluster {
					t.Errorf("%s: alarm %q maps to cluster %q (err %v), want %q", id, a.name, c, err, cluster)
				}
				if !strings.HasSuffix(a.name, "-"+testStackName) {
					t.Errorf("%s: name %q does not end in the stack's name", id, a.name)
				}
				switch {
				case strings.HasPrefix(id, "WriteQueueLatencyAlarm"):
					// One series per cluster, its busiest node's: Maximum is the highest of any node.
					wantDims := map[string]string{"Cluster": cluster}
					if a.metric != "shardwise/WriteQueueLatency Maximum" || a.expression != "" || !maps.Equal(a.dimensions, wantDims) ||
						a.threshold != testThresholds[paramLatencyThreshold] {
						t.Errorf("%s: got %s %q %v threshold %v, want shardwise/WriteQueueLatency Maximum %v on %s", id, a.metric,
							a.expression, a.dimensions, a.threshold, wantDims, paramLatencyThreshold)
					}
				case strings.HasPrefix(id, "WriteQueueAlarm"):
					wantDims := map[string]string{"DomainName": domain, "ClientId": testAccount}
					if a.metric != "AWS/ES/ThreadpoolWriteQueue Maximum" || !maps.Equal(a.dimensions, wantDims) || a.threshold != testThresholds[paramWriteQueueThreshold] {
						t.Errorf("%s: got %s %v threshold %v, want AWS/ES/ThreadpoolWriteQueue Maximum %v on %s", id, a.metric, a.dimensions, a.threshold, wantDims, paramWriteQueueThreshold)
					}
				case strings.HasPrefix(id, "WriteRejectedAlarm"):
					wantDims := map[string]string{"DomainName": domain, "ClientId": testAccount}
					// New rejections: the counter is cumulative, so the alarm is on its increase.
					if a.metric != "AWS/ES/ThreadpoolWriteRejected Sum" || a.expression != "DIFF(rejected)" || !maps.Equal(a.dimensions, wantDims) ||
						a.threshold != testThresholds[paramWriteRejectedThreshold] {
						t.Errorf("%s: got %s %q %v threshold %v, want DIFF of AWS/ES/ThreadpoolWriteRejected Sum %v on %s", id, a.metric,
							a.expression, a.dimensions, a.threshold, wantDims, paramWriteRejectedThreshold)
					}
				}
			}
		})
	}
}

// The thresholds' defaults are where docs/deploy.md says they come from; the latency one is the
// detector's own.
func TestAlarmParameters(t *testing.T) {
	doc := render(t, Options{})
	for _, tc := range []struct{ param, want string }{
		{paramWriteQueueThreshold, "100"},
		{paramWriteRejectedThreshold, "1"},
		{paramLatencyThreshold, "3"},
		{paramAlarmClusters, ""},
	} {
		if got := get(t, doc, "Parameters", tc.param, "Default"); got != tc.want {
			t.Errorf("%s default: got %v, want %s", tc.param, got, tc.want)
		}
	}
	if got := defaultLatencyThreshold(); got != 3 {
		t.Errorf("detector's queue_latency_threshold default: got %v s, want 3 (the documented default)", got)
	}

	pattern := regexp.MustCompile(get(t, doc, "Parameters", paramAlarmClusters, "AllowedPattern").(string))
	// Each entry alone, and the same entry second in a list: the rule holds in every position.
	for _, tc := range []struct {
		entry string
		ok    bool
	}{
		{"prod", true},
		{"prod-eu.2_b", true},
		{"prod:search-prod", true},
		{"prod:abc", true},
		{"prod:ab", false},                            // a domain name has 3 characters at least
		{"prod:Search-prod", false},                   // and no capitals
		{"prod:" + strings.Repeat("a", 29), false},    // and 28 at most
		{"prod=search-prod", false},                   // ":" parts the domain
		{" prod", false},                              // a space would end up in the alarm's name
		{"it's", false},                               // a quote has no place in an alarm name
		{"prod:search-prod:other", false},             // one domain
		{"-prod", false},                              // names start with a letter or digit
		{"", false},                                   // no empty entry in a list
		{"prod:" + strings.Repeat("a", 28), true},     // 28 is allowed
		{"p:" + "a" + strings.Repeat("-", 27), true},  // dashes after the first letter
		{"p:" + "1" + strings.Repeat("a", 27), false}, // the domain starts with a letter
	} {
		for _, value := range []string{tc.entry, "first:search-first," + tc.entry} {
			if tc.entry == "" && value == "" {
				continue // the empty value is no entry: no alarms (below)
			}
			if got := pattern.MatchString(value); got != tc.ok {
				t.Errorf("AlarmClusters %q: allowed %v, want %v", value, got, tc.ok)
			}
		}
	}
	for _, tc := range []struct {
		value string
		ok    bool
	}{
		{"", true}, // no alarms
		{"prod:search-prod,stage", true},
		{"a,b,c,d,e", true},
		{"a,b,c,d,e,f", false}, // past the slots
		{"a,,b", false},        // an empty entry
		{"a,b,", false},
		{",a", false},
		{"a, b", false}, // a space
	} {
		if got := pattern.MatchString(tc.value); got != tc.ok {
			t.Errorf("AlarmClusters %q: allowed %v, want %v", tc.value, got, tc.ok)
		}
	}
}

// TestAlarmClustersLimit: AlarmClusters takes as many entries as the template has alarm slots and
// no more. Every value its AllowedPattern accepts gets every entry's alarms, none left out past
// the last slot; a longer one is refused by CloudFormation, before it creates or changes anything,
// with a ConstraintDescription naming the limit.
func TestAlarmClustersLimit(t *testing.T) {
	doc := render(t, Options{})
	param := get(t, doc, "Parameters", paramAlarmClusters).(map[string]any)
	if param["Type"] != "String" {
		// A CommaDelimitedList's pattern applies to each entry apart: nothing could count them.
		t.Errorf("AlarmClusters type: got %v, want String", param["Type"])
	}
	pattern := regexp.MustCompile(param["AllowedPattern"].(string))
	limit := fmt.Sprintf("at most %d entries", alarmSlots)
	if got := param["ConstraintDescription"].(string); !strings.Contains(got, limit) {
		t.Errorf("ConstraintDescription %q does not name the limit (%q)", got, limit)
	}
	if got := param["Description"].(string); !strings.Contains(got, fmt.Sprintf("at most %d", alarmSlots)) {
		t.Errorf("Description %q does not name the limit", got)
	}
	for n := 0; n <= alarmSlots+2; n++ {
		var entries []string
		for i := range n {
			entries = append(entries, fmt.Sprintf("c%d:domain-%d", i+1, i+1))
		}
		value := strings.Join(entries, ",")
		t.Run(strconv.Itoa(n)+" entries", func(t *testing.T) {
			allowed := pattern.MatchString(value)
			if allowed != (n <= alarmSlots) {
				t.Fatalf("AlarmClusters %q: allowed %v, want %v (%d slots)", value, allowed, n <= alarmSlots, alarmSlots)
			}
			if !allowed {
				return
			}
			got := deployedAlarms(t, doc, value)
			if len(got) != 3*n {
				t.Errorf("%d alarms for %d entries, want %d", len(got), n, 3*n)
			}
			for _, e := range entries {
				cluster, domain, _ := strings.Cut(e, domainSeparator)
				var latency, queue, rejected bool
				for _, a := range got {
					latency = latency || a.metric == "shardwise/WriteQueueLatency Maximum" && a.dimensions["Cluster"] == cluster
					queue = queue || a.metric == "AWS/ES/ThreadpoolWriteQueue Maximum" && a.dimensions["DomainName"] == domain
					rejected = rejected || a.metric == "AWS/ES/ThreadpoolWriteRejected Sum" && a.dimensions["DomainName"] == domain
				}
				if !latency || !queue || !rejected {
					t.Errorf("entry %s: latency alarm %v, write queue alarm %v, rejected alarm %v; want all three", e, latency, queue, rejected)
				}
			}
		})
	}
}
