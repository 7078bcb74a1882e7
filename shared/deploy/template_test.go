package deploy

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/awslabs/goformation/v7/cloudformation"
	"github.com/awslabs/goformation/v7/cloudformation/serverless"
)

// render returns the template as CloudFormation receives it, decoded generically, so the tests
// see what SAM sees rather than goformation's structs.
func render(t *testing.T, opts Options) map[string]any {
	t.Helper()
	tmpl, err := Template(opts)
	if err != nil {
		t.Fatalf("Template: %v", err)
	}
	raw, err := tmpl.JSON()
	if err != nil {
		t.Fatalf("JSON: %v", err)
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("decode rendered template: %v", err)
	}
	return doc
}

// get walks a path of map keys and list indexes ("Resources", "X", "Properties", 0, ...).
func get(t *testing.T, v any, path ...any) any {
	t.Helper()
	for i, step := range path {
		switch s := step.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				t.Fatalf("at %v: got %T, want an object", path[:i], v)
			}
			if v, ok = m[s]; !ok {
				t.Fatalf("at %v: no key %q (have %v)", path[:i], s, sortedKeys(m))
			}
		case int:
			l, ok := v.([]any)
			if !ok || s >= len(l) {
				t.Fatalf("at %v: got %v, want a list with index %d", path[:i], v, s)
			}
			v = l[s]
		}
	}
	return v
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func ref(name string) map[string]any { return map[string]any{"Ref": name} }

func getAtt(id, attr string) map[string]any {
	return map[string]any{"Fn::GetAtt": []any{id, attr}}
}

func TestTemplateResources(t *testing.T) {
	doc := render(t, Options{})
	if got, want := doc["Transform"], "AWS::Serverless-2016-10-31"; got != want {
		t.Errorf("Transform: got %v, want %v", got, want)
	}

	wantTypes := map[string]string{
		"StateTable":       "AWS::DynamoDB::Table",
		"EventBus":         "AWS::Events::EventBus",
		"DeadLetterQueue":  "AWS::SQS::Queue",
		"IngestCadence":    "AWS::Serverless::StateMachine",
		"IngestFunction":   "AWS::Serverless::Function",
		"DetectFunction":   "AWS::Serverless::Function",
		"MoveFunction":     "AWS::Serverless::Function",
		"ReplicasFunction": "AWS::Serverless::Function",
		"SandboxFunction":  "AWS::Serverless::Function",
		// The public metrics webhook, created when the stack names its secret (webhook.go).
		"WebhookAlias":           "AWS::Lambda::Alias",
		"WebhookUrl":             "AWS::Lambda::Url",
		"WebhookUrlPublicAccess": "AWS::Lambda::Permission",
		"WebhookInvokeViaUrl":    "AWS::Lambda::Permission",
		// Running it in an account (operations.go).
		"IngestFunctionLogGroup":   "AWS::Logs::LogGroup",
		"DetectFunctionLogGroup":   "AWS::Logs::LogGroup",
		"MoveFunctionLogGroup":     "AWS::Logs::LogGroup",
		"ReplicasFunctionLogGroup": "AWS::Logs::LogGroup",
		"SandboxFunctionLogGroup":  "AWS::Logs::LogGroup",
		"EventArchive":             "AWS::Events::Archive",
		"AlertTopic":               "AWS::SNS::Topic",
		"AlertTopicPolicy":         "AWS::SNS::TopicPolicy",
		"AlertEmailSubscription":   "AWS::SNS::Subscription",
		"ScaleUpNeededRule":        "AWS::Events::Rule",
		"HotspotUnrelievedRule":    "AWS::Events::Rule",
		"DeadLetterQueuePolicy":    "AWS::SQS::QueuePolicy",
		"DeadLetterAlarm":          "AWS::CloudWatch::Alarm",
		// The cadence's log group and alarm (cadence.go).
		"IngestCadenceLogGroup": "AWS::Logs::LogGroup",
		"IngestCadenceAlarm":    "AWS::CloudWatch::Alarm",
		// The staleness alarm (health.go).
		"StaleSamplesAlarm": "AWS::CloudWatch::Alarm",
		// The dashboard (dashboard.go).
		"Dashboard": "AWS::CloudWatch::Dashboard",
	}
	// Each function's role (roles.go).
	for _, fn := range functions() {
		wantTypes[functionRoleID(fn)] = "AWS::IAM::Role"
	}
	// The alarms of each AlarmClusters slot (alarms.go).
	for i := range alarmSlots {
		for _, id := range []string{latencyAlarmID(i), writeQueueAlarmID(i), rejectedAlarmID(i)} {
			wantTypes[id] = "AWS::CloudWatch::Alarm"
		}
		// And its domain's recommended alarms (health.go).
		for _, a := range healthAlarms() {
			wantTypes[healthAlarmID(a, i)] = "AWS::CloudWatch::Alarm"
		}
	}
	// The alarm of each SandboxAlarms slot (sandbox_alarms.go).
	for i := range sandboxAlarmSlots {
		wantTypes[sandboxAlarmID(i)] = "AWS::CloudWatch::Alarm"
	}
	resources := get(t, doc, "Resources").(map[string]any)
	if got, want := sortedKeys(resources), sortedKeys(toAny(wantTypes)); !slices.Equal(got, want) {
		t.Errorf("resources: got %v, want %v", got, want)
	}

	tests := []struct {
		name string
		path []any
		want any
	}{
		{"every resource has its type", nil, nil},
		{"table partition key", []any{"StateTable", "Properties", "KeySchema", 0}, map[string]any{"AttributeName": "pk", "KeyType": "HASH"}},
		{"table sort key", []any{"StateTable", "Properties", "KeySchema", 1}, map[string]any{"AttributeName": "sk", "KeyType": "RANGE"}},
		{"table key types", []any{"StateTable", "Properties", "AttributeDefinitions"}, []any{
			map[string]any{"AttributeName": "pk", "AttributeType": "S"},
			map[string]any{"AttributeName": "sk", "AttributeType": "S"},
		}},
		{"table on demand", []any{"StateTable", "Properties", "BillingMode"}, "PAY_PER_REQUEST"},
		{"table TTL", []any{"StateTable", "Properties", "TimeToLiveSpecification"}, map[string]any{"AttributeName": "expires_at", "Enabled": true}},
		{"table PITR", []any{"StateTable", "Properties", "PointInTimeRecoverySpecification", "PointInTimeRecoveryEnabled"}, true},
		{"table kept on delete", []any{"StateTable", "DeletionPolicy"}, "Retain"},
		{"table kept on replace", []any{"StateTable", "UpdateReplacePolicy"}, "Retain"},
		{"bus name: EventBusName, else the stack's", []any{"EventBus", "Properties", "Name"}, map[string]any{"Fn::If": []any{
			"HasEventBusName", ref("EventBusName"), map[string]any{"Fn::Sub": "shardwise-${AWS::StackName}"}}}},
		{"dead letters kept 14 days", []any{"DeadLetterQueue", "Properties", "MessageRetentionPeriod"}, float64(1209600)},
		{"dead letters encrypted", []any{"DeadLetterQueue", "Properties", "SqsManagedSseEnabled"}, true},
		{"output table", []any{"Outputs", "StateTableName", "Value"}, ref("StateTable")},
		{"output bus", []any{"Outputs", "EventBusName", "Value"}, ref("EventBus")},
		{"output function URL", []any{"Outputs", "IngestFunctionUrl", "Value"}, getAtt("IngestFunctionUrl", "FunctionUrl")},
		{"output public webhook URL", []any{"Outputs", "WebhookUrl", "Value"}, getAtt("WebhookUrl", "FunctionUrl")},
		{"public webhook URL only with a secret", []any{"Outputs", "WebhookUrl", "Condition"}, "HasPublicWebhook"},
		{"output dead letters", []any{"Outputs", "DeadLetterQueueUrl", "Value"}, ref("DeadLetterQueue")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.path == nil {
				for id, want := range wantTypes {
					if got := get(t, resources, id, "Type"); got != want {
						t.Errorf("%s type: got %v, want %v", id, got, want)
					}
				}
				return
			}
			root := any(resources)
			if tc.path[0] == "Outputs" {
				root = doc
			}
			if got := get(t, root, tc.path...); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %#v, want %#v", got, tc.want)
			}
		})
	}
}

func toAny(m map[string]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func TestFunctions(t *testing.T) {
	statsIngested := map[string]any{"source": []any{"shardwise"}, "detail-type": []any{"Stats Ingested"}}
	tests := []struct {
		name        string
		id          string
		memory      float64
		rules       map[string]rule
		openSearch  []string
		functionURL bool
		// publicWebhook: the function reads the webhook secret's SSM parameter.
		publicWebhook bool
		// stateless: the function calls no DynamoDB action, and is granted none.
		stateless bool
	}{
		{
			name:          "ingest",
			id:            "IngestFunction",
			memory:        256,
			openSearch:    []string{"es:ESHttpGet", "es:ESHttpPut"},
			functionURL:   true,
			publicWebhook: true,
		},
		{
			name:   "detect",
			id:     "DetectFunction",
			memory: 256,
			// Reads a fresh sample when an alarm fires.
			openSearch: []string{"es:ESHttpGet"},
			rules: map[string]rule{
				"StatsIngested": {onBus: true, pattern: statsIngested},
				"AlarmStateChange": {pattern: map[string]any{
					"source":      []any{"aws.cloudwatch"},
					"detail-type": []any{"CloudWatch Alarm State Change"},
					"detail": map[string]any{
						"alarmName": []any{map[string]any{"prefix": "shardwise-"}},
						"state":     map[string]any{"value": []any{"ALARM"}},
					},
				}},
			},
		},
		{
			name:       "move",
			id:         "MoveFunction",
			memory:     256,
			openSearch: []string{"es:ESHttpGet", "es:ESHttpPost", "es:ESHttpPut"},
			rules: map[string]rule{"MovesPlanned": {onBus: true, pattern: map[string]any{
				"source": []any{"shardwise"}, "detail-type": []any{"Moves Planned"},
			}}},
		},
		{
			name:       "replicas",
			id:         "ReplicasFunction",
			memory:     128,
			openSearch: []string{"es:ESHttpGet", "es:ESHttpPut"},
			rules:      map[string]rule{"StatsIngested": {onBus: true, pattern: statsIngested}},
		},
		{
			name:   "sandbox",
			id:     "SandboxFunction",
			memory: 128,
			// Lists and cancels tasks; creates, updates and deletes workload-management groups;
			// writes its cluster's sandbox history (PutItem), so not stateless.
			openSearch: []string{"es:ESHttpDelete", "es:ESHttpGet", "es:ESHttpPost", "es:ESHttpPut"},
			rules:      map[string]rule{"StatsIngested": {onBus: true, pattern: statsIngested}},
		},
	}
	doc := render(t, Options{})
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fn := get(t, doc, "Resources", tc.id)
			props := get(t, fn, "Properties")
			// The sandbox function loops for a stats cycle before its margin; the others end
			// within the cycle.
			timeout := float64(25)
			if tc.name == "sandbox" {
				timeout = 35
			}

			for key, want := range map[string]any{
				"CodeUri":       "functions/" + tc.name + "/",
				"Handler":       "bootstrap",
				"Runtime":       "provided.al2023",
				"Architectures": []any{"arm64"},
				"Timeout":       timeout,
				"MemorySize":    tc.memory,
			} {
				if got := get(t, props, key); !reflect.DeepEqual(got, want) {
					t.Errorf("%s: got %#v, want %#v", key, got, want)
				}
			}
			if got := get(t, fn, "Metadata", "BuildMethod"); got != "go1.x" {
				t.Errorf("BuildMethod: got %v, want go1.x", got)
			}

			wantEnv := map[string]any{
				"SHARDWISE_TABLE":            ref("StateTable"),
				"SHARDWISE_BUS":              ref("EventBus"),
				"SHARDWISE_DRY_RUN":          ref("DryRun"),
				"SHARDWISE_CLUSTERS":         map[string]any{"Fn::Join": []any{",", ref("ClusterEndpoints")}},
				"SHARDWISE_AUTH":             ref("AuthMode"),
				"SHARDWISE_SERVICE":          ref("Service"),
				"SHARDWISE_MOVE_STRATEGY":    ref("MoveStrategy"),
				"SHARDWISE_LOG_LEVEL":        ref("LogLevel"),
				"SHARDWISE_CONFIG_PARAMETER": ref("ConfigParameterName"),
			}
			if tc.publicWebhook {
				wantEnv["SHARDWISE_WEBHOOK_SECRET_PARAM"] = ref("WebhookSecretParameter")
			}
			if len(tc.openSearch) > 0 {
				wantEnv["SHARDWISE_BASIC_AUTH_SECRET"] = ref("BasicAuthSecretArn")
			}
			if got := get(t, props, "Environment", "Variables"); !reflect.DeepEqual(got, wantEnv) {
				t.Errorf("environment: got %#v, want %#v", got, wantEnv)
			}

			checkRules(t, props.(map[string]any), tc.rules)
			var spec function
			for _, f := range functions() {
				if logicalID(f.name) == tc.id {
					spec = f
				}
			}
			policies, deadLetters := rolePolicies(t, doc, spec)
			checkPolicies(t, policies, tc.openSearch, tc.publicWebhook, tc.stateless)
			// A function EventBridge invokes sends its failed events to the dead-letter queue.
			wantDLQ := map[string]any{"Statement": []any{map[string]any{"Effect": "Allow", "Action": []any{"sqs:SendMessage"},
				"Resource": getAtt("DeadLetterQueue", "Arn")}}}
			if len(tc.rules) == 0 {
				wantDLQ = nil
			}
			if !reflect.DeepEqual(deadLetters, toAnyOrNil(wantDLQ)) {
				t.Errorf("dead-letter policy: got %#v, want %#v", deadLetters, wantDLQ)
			}

			_, hasURL := props.(map[string]any)["FunctionUrlConfig"]
			if hasURL != tc.functionURL {
				t.Errorf("FunctionUrlConfig present: got %v, want %v", hasURL, tc.functionURL)
			}
			if tc.functionURL {
				if got := get(t, props, "FunctionUrlConfig", "AuthType"); got != "AWS_IAM" {
					t.Errorf("function URL AuthType: got %v, want AWS_IAM", got)
				}
			}

			// Only asynchronously invoked functions can have an on-failure destination.
			invokeConfig, async := props.(map[string]any)["EventInvokeConfig"]
			if async != (len(tc.rules) > 0) {
				t.Fatalf("EventInvokeConfig present: got %v, want %v", async, len(tc.rules) > 0)
			}
			if async {
				want := map[string]any{"Type": "SQS", "Destination": getAtt("DeadLetterQueue", "Arn")}
				if got := get(t, invokeConfig, "DestinationConfig", "OnFailure"); !reflect.DeepEqual(got, want) {
					t.Errorf("OnFailure: got %#v, want %#v", got, want)
				}
				if got := get(t, invokeConfig, "MaximumEventAgeInSeconds"); got != float64(60) {
					t.Errorf("MaximumEventAgeInSeconds: got %v, want 60", got)
				}
			}

			if _, ok := get(t, doc, "Resources").(map[string]any)[tc.id+"Url"]; ok {
				t.Errorf("%sUrl is a resource SAM generates; the template must not declare it", tc.id)
			}
		})
	}
}

// rule is an EventBridge rule a function should be triggered by.
type rule struct {
	onBus   bool
	pattern map[string]any
}

func checkRules(t *testing.T, props map[string]any, want map[string]rule) {
	t.Helper()
	events, _ := props["Events"].(map[string]any)
	if len(events) != len(want) {
		t.Errorf("events: got %v, want %d rules", sortedKeys(events), len(want))
	}
	for name, r := range want {
		ev := get(t, events, name)
		if got := get(t, ev, "Type"); got != "EventBridgeRule" {
			t.Errorf("%s type: got %v, want EventBridgeRule", name, got)
		}
		if got := get(t, ev, "Properties", "Pattern"); !reflect.DeepEqual(got, r.pattern) {
			t.Errorf("%s pattern: got %#v, want %#v", name, got, r.pattern)
		}
		bus, onBus := get(t, ev, "Properties").(map[string]any)["EventBusName"]
		if onBus != r.onBus {
			t.Errorf("%s on the shardwise bus: got %v, want %v", name, onBus, r.onBus)
		}
		if onBus && !reflect.DeepEqual(bus, ref("EventBus")) {
			t.Errorf("%s bus: got %#v, want Ref EventBus", name, bus)
		}
	}
}

// toAnyOrNil is m as an any, nil for a nil map.
func toAnyOrNil(m map[string]any) any {
	if m == nil {
		return nil
	}
	return m
}

func checkPolicies(t *testing.T, policyList []any, openSearch []string, publicWebhook, stateless bool) {
	t.Helper()
	// Which actions and paths each function is granted is TestRolesMatchCalls's business: it
	// compares them with the calls the code makes. Here, the shape of the list (rolePolicies).
	want := 3 // the table, the bus and the configuration parameter
	if stateless {
		want--
	}
	if len(openSearch) > 0 {
		want += 2 // the domains, and the basic-auth secret
	}
	if publicWebhook {
		// The webhook secret's parameter, checked in TestPublicWebhook.
		want++
	}
	if len(policyList) != want {
		t.Fatalf("policies: got %d, want %d", len(policyList), want)
	}
	next := 0
	if !stateless {
		table := get(t, policyList[0], "Statement", 0)
		if got := get(t, table, "Resource"); !reflect.DeepEqual(got, getAtt("StateTable", "Arn")) {
			t.Errorf("DynamoDB statement on %#v, want the state table", got)
		}
		for _, a := range get(t, table, "Action").([]any) {
			if !strings.HasPrefix(a.(string), "dynamodb:") {
				t.Errorf("DynamoDB statement grants %v", a)
			}
		}
		if n := len(get(t, policyList[0], "Statement").([]any)); n != 1 {
			t.Errorf("DynamoDB statements: got %d, want 1", n)
		}
		next++
	}
	wantBus := map[string]any{"Statement": []any{map[string]any{"Effect": "Allow", "Action": []any{"events:PutEvents"},
		"Resource": getAtt("EventBus", "Arn")}}}
	if got := policyList[next]; !reflect.DeepEqual(got, wantBus) {
		t.Errorf("bus policy: got %#v, want %#v", got, wantBus)
	}
	next++
	if len(openSearch) > 0 {
		domain := get(t, policyList[next], "Fn::If")
		next++
		if got := get(t, domain, 0); got != "HasOpenSearchDomain" {
			t.Errorf("OpenSearch policy condition: got %v, want HasOpenSearchDomain", got)
		}
		if got := get(t, domain, 2); !reflect.DeepEqual(got, ref("AWS::NoValue")) {
			t.Errorf("without a domain: got %#v, want no policy", got)
		}
		var methods []any
		for _, st := range get(t, domain, 1, "Statement").([]any) {
			action := get(t, st, "Action").([]any)
			if len(action) != 1 {
				t.Errorf("statement %#v: want one action, one HTTP method", st)
			}
			methods = append(methods, action...)
			domain := testARN("prod")
			for _, r := range (domainEval{t: t, arns: []string{domain}}).resources(get(t, st, "Resource")) {
				if !strings.HasPrefix(r, domain+"/") || r == domain+"/*" {
					t.Errorf("%v granted on %q, want a path under the domain", action, r)
				}
			}
		}
		want := make([]any, len(openSearch))
		for i, a := range openSearch {
			want[i] = a
		}
		if !reflect.DeepEqual(methods, want) {
			t.Errorf("OpenSearch methods: got %v, want %v", methods, want)
		}
	}
	wantConfig := map[string]any{"Fn::If": []any{
		"HasConfigParameter",
		map[string]any{"Statement": []any{map[string]any{
			"Effect":   "Allow",
			"Action":   []any{"ssm:GetParameter"},
			"Resource": map[string]any{"Fn::Sub": "arn:${AWS::Partition}:ssm:${AWS::Region}:${AWS::AccountId}:parameter${ConfigParameterName}"},
		}}},
		ref("AWS::NoValue"),
	}}
	if got := policyList[next]; !reflect.DeepEqual(got, wantConfig) {
		t.Errorf("configuration parameter policy: got %#v, want %#v", got, wantConfig)
	}
	if len(openSearch) == 0 {
		return
	}
	// The basic-auth secret, last: GetSecretValue on that one secret, only when the stack names it.
	wantSecret := map[string]any{"Fn::If": []any{
		"HasBasicAuthSecret",
		map[string]any{"Statement": []any{map[string]any{
			"Effect":   "Allow",
			"Action":   []any{"secretsmanager:GetSecretValue"},
			"Resource": ref("BasicAuthSecretArn"),
		}}},
		ref("AWS::NoValue"),
	}}
	if got := policyList[len(policyList)-1]; !reflect.DeepEqual(got, wantSecret) {
		t.Errorf("basic-auth secret policy: got %#v, want %#v", got, wantSecret)
	}
}

func TestIngestCadence(t *testing.T) {
	doc := render(t, Options{})
	sm := get(t, doc, "Resources", "IngestCadence", "Properties")
	tests := []struct {
		name string
		path []any
		want any
	}{
		{"express workflow", []any{"Type"}, "EXPRESS"},
		{"started every minute, retried, dead-lettered", []any{"Events", "EveryMinute"}, map[string]any{
			"Type": "Schedule", "Properties": map[string]any{
				"Schedule":         "rate(1 minute)",
				"RetryPolicy":      map[string]any{"MaximumEventAgeInSeconds": float64(60), "MaximumRetryAttempts": float64(2)},
				"DeadLetterConfig": map[string]any{"Arn": getAtt("DeadLetterQueue", "Arn")},
			},
		}},
		{"invokes ingest by ARN", []any{"DefinitionSubstitutions", "IngestFunctionArn"}, getAtt("IngestFunction", "Arn")},
		{"clusters from the parameter", []any{"DefinitionSubstitutions", "ClusterEndpoints"},
			map[string]any{"Fn::Join": []any{",", ref("ClusterEndpoints")}}},
		{"or from the configuration document", []any{"DefinitionSubstitutions", "ConfigParameterName"}, ref("ConfigParameterName")},
		{"may invoke ingest", []any{"Policies", 0}, map[string]any{"LambdaInvokePolicy": map[string]any{"FunctionName": ref("IngestFunction")}}},
		{"may read the configuration parameter", []any{"Policies", 2, "Fn::If", 0}, "HasConfigParameter"},
		{"clusters listed before the fan-out", []any{"Definition", "StartAt"}, "Clusters"},
		{"empty parameter reads the document", []any{"Definition", "States", "ClustersFrom", "Choices", 0}, map[string]any{
			"Variable": "$.endpoints", "StringEquals": "", "Next": "ReadConfig",
		}},
		{"document's cluster names", []any{"Definition", "States", "ConfigClusters", "Parameters"},
			map[string]any{"clusters.$": "$.config.clusters[*].name"}},
		{"two passes in parallel", []any{"Definition", "States", "Cadence", "Type"}, "Parallel"},
		{"first pass now", []any{"Definition", "States", "Cadence", "Branches", 0, "StartAt"}, "Now"},
		{"second pass waits first", []any{"Definition", "States", "Cadence", "Branches", 1, "StartAt"}, "WaitHalfCycle"},
		{"wait is half a minute", []any{"Definition", "States", "Cadence", "Branches", 1, "States", "WaitHalfCycle"}, map[string]any{
			"Type": "Wait", "Seconds": float64(30), "Next": "Later",
		}},
		{"either pass may have failed", []any{"Definition", "States", "Cadence", "ResultSelector"},
			map[string]any{"failed.$": "States.ArrayContains($, true)"}},
		{"a failed cluster fails the execution", []any{"Definition", "States", "Outcome", "Choices", 0}, map[string]any{
			"Variable": "$.failed", "BooleanEquals": true, "Next": "ClusterFailed",
		}},
		{"with its own error", []any{"Definition", "States", "ClusterFailed", "Error"}, "ClusterIngestFailed"},
		{"logged at ERROR", []any{"Logging", "Level"}, "ERROR"},
		{"logged to its log group", []any{"Logging", "Destinations", 0, "CloudWatchLogsLogGroup", "LogGroupArn"},
			getAtt("IngestCadenceLogGroup", "Arn")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := get(t, sm, tc.path...); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %#v, want %#v", got, tc.want)
			}
		})
	}

	// Each pass is a Map over the clusters whose iterations invoke ingest for one cluster and
	// catch its failure, and whose own failure is caught too.
	for i, pass := range []string{"Now", "Later"} {
		t.Run(pass, func(t *testing.T) {
			states := get(t, sm, "Definition", "States", "Cadence", "Branches", i, "States").(map[string]any)
			m := get(t, states, pass).(map[string]any)
			if m["Type"] != "Map" || m["ItemsPath"] != "$.clusters" {
				t.Errorf("%s: got type %v over %v, want a Map over $.clusters", pass, m["Type"], m["ItemsPath"])
			}
			if got, want := get(t, m, "Catch", 0, "Next"), pass+"MapFailed"; got != want {
				t.Errorf("Map catch: got %v, want %v", got, want)
			}
			if got, want := get(t, states, pass+"MapFailed", "Result"), true; got != want {
				t.Errorf("Map failure result: got %v, want %v", got, want)
			}
			iter := get(t, m, "ItemProcessor", "States").(map[string]any)
			if got, want := get(t, iter, pass+"Cluster", "Parameters"),
				map[string]any{"cluster.$": "States.ArrayGetItem(States.StringSplit($, '='), 0)"}; !reflect.DeepEqual(got, want) {
				t.Errorf("cluster name: got %v, want %v", got, want)
			}
			task := get(t, iter, pass+"Ingest").(map[string]any)
			if got, want := task["Parameters"], map[string]any{"FunctionName": "${IngestFunctionArn}", "Payload.$": "$"}; !reflect.DeepEqual(got, want) {
				t.Errorf("ingest task: got %v, want %v", got, want)
			}
			wantCatch := []any{map[string]any{"ErrorEquals": []any{"States.ALL"}, "ResultPath": "$.error", "Next": pass + "Failed"}}
			if got := task["Catch"]; !reflect.DeepEqual(got, wantCatch) {
				t.Errorf("ingest catch: got %v, want %v", got, wantCatch)
			}
			if got := get(t, iter, pass+"Failed", "Result"); got != "failed" {
				t.Errorf("failed iteration result: got %v, want failed", got)
			}
			if got, want := get(t, m, "ResultSelector", "failed.$"), "States.ArrayContains($, 'failed')"; got != want {
				t.Errorf("Map result: got %v, want %v", got, want)
			}
			if got, want := m["OutputPath"], "$.failed"; got != want {
				t.Errorf("Map output: got %v, want %v", got, want)
			}
		})
	}

	alarm := get(t, doc, "Resources", "IngestCadenceAlarm", "Properties")
	for _, tc := range []struct {
		name string
		path []any
		want any
	}{
		{"on failed executions", []any{"MetricName"}, "ExecutionsFailed"},
		{"of Step Functions", []any{"Namespace"}, "AWS/States"},
		{"of the cadence", []any{"Dimensions", 0}, map[string]any{"Name": "StateMachineArn", "Value": ref("IngestCadence")}},
		{"notifies the alert topic", []any{"AlarmActions"}, []any{ref("AlertTopic")}},
	} {
		t.Run("alarm "+tc.name, func(t *testing.T) {
			if got := get(t, alarm, tc.path...); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %#v, want %#v", got, tc.want)
			}
		})
	}
	if got, want := get(t, doc, "Resources", "IngestCadenceLogGroup", "Properties", "RetentionInDays"), float64(30); got != want {
		t.Errorf("cadence log retention: got %v, want %v", got, want)
	}
}

func TestParameters(t *testing.T) {
	doc := render(t, Options{})
	params := get(t, doc, "Parameters")
	tests := []struct {
		name string
		path []any
		want any
	}{
		{"clusters are a list", []any{"ClusterEndpoints", "Type"}, "CommaDelimitedList"},
		{"dry run by default", []any{"DryRun", "Default"}, "true"},
		{"dry run is a boolean", []any{"DryRun", "AllowedValues"}, []any{"true", "false"}},
		{"SigV4 by default", []any{"AuthMode", "Default"}, "sigv4"},
		{"auth modes", []any{"AuthMode", "AllowedValues"}, []any{"sigv4", "basic", "none"}},
		{"no domain by default", []any{"OpenSearchDomainArns", "Default"}, ""},
		{"clusters may come from the configuration parameter", []any{"ClusterEndpoints", "Default"}, ""},
		{"auto moves by default", []any{"MoveStrategy", "Default"}, "auto"},
		{"move strategies are config's", []any{"MoveStrategy", "AllowedValues"}, []any{"reroute", "allocation-filter", "auto"}},
		{"signs for es", []any{"Service", "Default"}, "es"},
		{"es only", []any{"Service", "AllowedValues"}, []any{"es"}},
		{"info logs by default", []any{"LogLevel", "Default"}, "info"},
		{"log levels", []any{"LogLevel", "AllowedValues"}, []any{"debug", "info", "warn", "error"}},
		{"no configuration parameter by default", []any{"ConfigParameterName", "Default"}, ""},
		{"configuration parameter name length", []any{"ConfigParameterName", "MaxLength"}, float64(1011)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := get(t, params, tc.path...); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %#v, want %#v", got, tc.want)
			}
		})
	}

	// TestDomainsPattern tries the pattern itself.
	if got := get(t, params, "OpenSearchDomainArns", "AllowedPattern"); got != domainsPattern {
		t.Errorf("OpenSearchDomainArns pattern: got %v, want %s", got, domainsPattern)
	}
}

func TestYAMLDeterministic(t *testing.T) {
	first, err := YAML(Options{})
	if err != nil {
		t.Fatalf("YAML: %v", err)
	}
	// Maps are iterated in random order: several renders give any ordering bug a chance to show.
	for i := range 5 {
		again, err := YAML(Options{})
		if err != nil {
			t.Fatalf("YAML: %v", err)
		}
		if !bytes.Equal(first, again) {
			t.Fatalf("render %d differs from the first", i+2)
		}
	}
	explicit, err := YAML(defaultOptions)
	if err != nil {
		t.Fatalf("YAML(defaultOptions): %v", err)
	}
	if !bytes.Equal(first, explicit) {
		t.Errorf("zero Options and defaultOptions render differently")
	}
}

func TestOptions(t *testing.T) {
	tests := []struct {
		name      string
		opts      Options
		wantField string // named in the error; empty for valid options
	}{
		{name: "zero value", opts: Options{}},
		{name: "custom bus and source", opts: Options{BusName: "shardwise-staging", SourceDir: "cmd/lambdas"}},
		{name: "bus with a space", opts: Options{BusName: "shard wise"}, wantField: "BusName"},
		{name: "bus with a slash", opts: Options{BusName: "shard/wise"}, wantField: "BusName"},
		{name: "default bus", opts: Options{BusName: "default"}, wantField: "BusName"},
		{name: "bus name too long", opts: Options{BusName: strings.Repeat("b", 257)}, wantField: "BusName"},
		{name: "absolute source", opts: Options{SourceDir: "/src/functions"}, wantField: "SourceDir"},
		{name: "source outside project", opts: Options{SourceDir: "../functions"}, wantField: "SourceDir"},
		{name: "unclean source", opts: Options{SourceDir: "functions/"}, wantField: "SourceDir"},
		{name: "backslash source", opts: Options{SourceDir: `src\functions`}, wantField: "SourceDir"},
		{name: "description too long", opts: Options{Description: strings.Repeat("d", 1025)}, wantField: "Description"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := YAML(tc.opts)
			if tc.wantField == "" {
				if err != nil {
					t.Fatalf("YAML: got %v, want no error", err)
				}
				return
			}
			if !errors.Is(err, ErrInvalidOptions) {
				t.Fatalf("error: got %v, want ErrInvalidOptions", err)
			}
			if !strings.Contains(err.Error(), tc.wantField) {
				t.Errorf("error %q does not name %s", err, tc.wantField)
			}
		})
	}

	doc := render(t, Options{BusName: "shardwise-staging", SourceDir: "cmd/lambdas"})
	if got := get(t, doc, "Parameters", "EventBusName", "Default"); got != "shardwise-staging" {
		t.Errorf("bus name: got %v, want shardwise-staging", got)
	}
	if got := get(t, doc, "Resources", "MoveFunction", "Properties", "CodeUri"); got != "cmd/lambdas/move/" {
		t.Errorf("CodeUri: got %v, want cmd/lambdas/move/", got)
	}
}

func TestWithPropertiesRefusesDuplicates(t *testing.T) {
	tests := []struct {
		name    string
		extra   map[string]any
		wantErr bool
	}{
		{name: "new property", extra: map[string]any{"Policies": []any{"AWSLambdaBasicExecutionRole"}}},
		{name: "property goformation set", extra: map[string]any{"Handler": "main"}, wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := withProperties{
				Resource: &serverless.Function{Handler: cloudformation.String("bootstrap")},
				extra:    tc.extra,
			}
			_, err := json.Marshal(r)
			if gotErr := err != nil; gotErr != tc.wantErr {
				t.Errorf("error: got %v, want error %v", err, tc.wantErr)
			}
		})
	}
}

// TestFunctionSourcesExist keeps CodeUri pointing at real main packages: sam build fails late
// and far from here when one is renamed.
func TestFunctionSourcesExist(t *testing.T) {
	root := filepath.Join("..", "..")
	for _, fn := range functions() {
		t.Run(fn.name, func(t *testing.T) {
			main := filepath.Join(root, defaultOptions.SourceDir, fn.name, "main.go")
			src, err := os.ReadFile(main)
			if err != nil {
				t.Fatalf("CodeUri source: %v", err)
			}
			if !bytes.Contains(src, []byte("package main")) {
				t.Errorf("%s is not a main package", main)
			}
		})
	}
}
