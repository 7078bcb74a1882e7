package deploy

import (
	"reflect"
	"strings"
	"testing"
)

func TestOperations(t *testing.T) {
	doc := render(t, Options{})
	res := get(t, doc, "Resources")
	dlqArn := getAtt("DeadLetterQueue", "Arn")
	tests := []struct {
		name string
		path []any
		want any
	}{
		{"archive of the bus", []any{"EventArchive", "Properties", "SourceArn"}, getAtt("EventBus", "Arn")},
		{"archive kept a year", []any{"EventArchive", "Properties", "RetentionDays"}, float64(365)},
		{"scale-up rule on the bus", []any{"ScaleUpNeededRule", "Properties", "EventBusName"}, ref("EventBus")},
		{"scale-up rule takes notifying events only", []any{"ScaleUpNeededRule", "Properties", "EventPattern"}, map[string]any{
			"source": []any{"shardwise"}, "detail-type": []any{"Scale Up Needed"}, "detail": map[string]any{"notify": []any{true}}}},
		{"scale-up to the topic", []any{"ScaleUpNeededRule", "Properties", "Targets", 0, "Arn"}, ref("AlertTopic")},
		{"scale-up retried for a day", []any{"ScaleUpNeededRule", "Properties", "Targets", 0, "RetryPolicy"}, map[string]any{
			"MaximumEventAgeInSeconds": float64(86400), "MaximumRetryAttempts": float64(185)}},
		{"scale-up dead letters", []any{"ScaleUpNeededRule", "Properties", "Targets", 0, "DeadLetterConfig"}, map[string]any{"Arn": dlqArn}},
		{"unrelieved rule takes notifying events only", []any{"HotspotUnrelievedRule", "Properties", "EventPattern"}, map[string]any{
			"source": []any{"shardwise"}, "detail-type": []any{"Hotspot Unrelieved"}, "detail": map[string]any{"notify": []any{true}}}},
		{"unrelieved to the topic", []any{"HotspotUnrelievedRule", "Properties", "Targets", 0, "Arn"}, ref("AlertTopic")},
		{"email only when given", []any{"AlertEmailSubscription", "Condition"}, "HasAlertEmail"},
		{"email subscription", []any{"AlertEmailSubscription", "Properties"}, map[string]any{
			"Protocol": "email", "TopicArn": ref("AlertTopic"), "Endpoint": ref("AlertEmail")}},
		{"topic publishers", []any{"AlertTopicPolicy", "Properties", "PolicyDocument", "Statement"}, []any{
			map[string]any{"Sid": "ScaleUpRule", "Effect": "Allow", "Principal": map[string]any{"Service": "events.amazonaws.com"},
				"Action": "sns:Publish", "Resource": ref("AlertTopic"),
				"Condition": map[string]any{"ArnLike": map[string]any{"aws:SourceArn": getAtt("ScaleUpNeededRule", "Arn")}}},
			map[string]any{"Sid": "UnrelievedRule", "Effect": "Allow", "Principal": map[string]any{"Service": "events.amazonaws.com"},
				"Action": "sns:Publish", "Resource": ref("AlertTopic"),
				"Condition": map[string]any{"ArnLike": map[string]any{"aws:SourceArn": getAtt("HotspotUnrelievedRule", "Arn")}}},
			map[string]any{"Sid": "StackAlarms", "Effect": "Allow", "Principal": map[string]any{"Service": "cloudwatch.amazonaws.com"},
				"Action": "sns:Publish", "Resource": ref("AlertTopic"),
				"Condition": map[string]any{"ArnLike": map[string]any{"aws:SourceArn": []any{
					map[string]any{"Fn::Sub": "arn:${AWS::Partition}:cloudwatch:${AWS::Region}:${AWS::AccountId}:alarm:dead-letters-${AWS::StackName}"},
					map[string]any{"Fn::Sub": "arn:${AWS::Partition}:cloudwatch:${AWS::Region}:${AWS::AccountId}:alarm:cadence-failed-${AWS::StackName}"},
					map[string]any{"Fn::Sub": "arn:${AWS::Partition}:cloudwatch:${AWS::Region}:${AWS::AccountId}:alarm:stale-samples-${AWS::StackName}"},
					map[string]any{"Fn::Sub": "arn:${AWS::Partition}:cloudwatch:${AWS::Region}:${AWS::AccountId}:alarm:opensearch-*-${AWS::StackName}"},
					map[string]any{"Fn::Sub": "arn:${AWS::Partition}:cloudwatch:${AWS::Region}:${AWS::AccountId}:alarm:shardwise_sandbox-*-over-limit-${AWS::StackName}"},
				}}}},
		}},
		{"rules may dead-letter", []any{"DeadLetterQueuePolicy", "Properties", "PolicyDocument", "Statement", 0}, map[string]any{
			"Sid": "RuleDeadLetters", "Effect": "Allow", "Principal": map[string]any{"Service": "events.amazonaws.com"},
			"Action": "sqs:SendMessage", "Resource": dlqArn,
			"Condition": map[string]any{"ArnLike": map[string]any{"aws:SourceArn": map[string]any{
				"Fn::Sub": "arn:${AWS::Partition}:events:${AWS::Region}:${AWS::AccountId}:rule/*"}}}}},
		{"alarm on any dead letter", []any{"DeadLetterAlarm", "Properties", "Threshold"}, float64(0)},
		{"alarm above zero", []any{"DeadLetterAlarm", "Properties", "ComparisonOperator"}, "GreaterThanThreshold"},
		{"alarm on visible messages", []any{"DeadLetterAlarm", "Properties", "MetricName"}, "ApproximateNumberOfMessagesVisible"},
		{"alarm of the queue", []any{"DeadLetterAlarm", "Properties", "Dimensions"}, []any{
			map[string]any{"Name": "QueueName", "Value": getAtt("DeadLetterQueue", "QueueName")}}},
		{"alarm to the topic", []any{"DeadLetterAlarm", "Properties", "AlarmActions"}, []any{ref("AlertTopic")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := get(t, res, tc.path...); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %#v, want %#v", got, tc.want)
			}
		})
	}
	// detect's rule takes alarms named shardwise-* for cluster alarms.
	for _, id := range []string{"DeadLetterAlarm", "IngestCadenceAlarm"} {
		name := get(t, res, id, "Properties", "AlarmName", "Fn::Sub").(string)
		if strings.HasPrefix(name, alarmPrefix) || strings.HasPrefix(name, "${AWS::StackName}") {
			t.Errorf("%s name %q could start with %q and wake detect", id, name, alarmPrefix)
		}
	}
}

func TestFunctionOperations(t *testing.T) {
	doc := render(t, Options{})
	for _, fn := range functions() {
		t.Run(fn.name, func(t *testing.T) {
			id := logicalID(fn.name)
			props := get(t, doc, "Resources", id, "Properties").(map[string]any)
			if got, want := props["LoggingConfig"], map[string]any{"LogFormat": "JSON", "LogGroup": ref(id + "LogGroup")}; !reflect.DeepEqual(got, want) {
				t.Errorf("LoggingConfig: got %#v, want %#v", got, want)
			}
			if got := get(t, doc, "Resources", id+"LogGroup", "Properties", "RetentionInDays"); got != float64(30) {
				t.Errorf("log retention: got %v, want 30 days", got)
			}
			wantVpc := map[string]any{"Fn::If": []any{"HasVpc",
				map[string]any{"SubnetIds": ref("VpcSubnetIds"), "SecurityGroupIds": ref("VpcSecurityGroupIds")}, ref("AWS::NoValue")}}
			if got := props["VpcConfig"]; !reflect.DeepEqual(got, wantVpc) {
				t.Errorf("VpcConfig: got %#v, want %#v", got, wantVpc)
			}
			// ingest, behind the public webhook URL, is capped by the WebhookConcurrency parameter
			// unless it is 0; the others, move too (its lease serializes each cluster), are not.
			reserved, capped := props["ReservedConcurrentExecutions"]
			switch fn.name {
			case "ingest":
				want := map[string]any{"Fn::If": []any{"HasWebhookConcurrency", ref("WebhookConcurrency"), ref("AWS::NoValue")}}
				if !reflect.DeepEqual(reserved, want) {
					t.Errorf("ReservedConcurrentExecutions: got %#v, want %#v", reserved, want)
				}
			default:
				if capped {
					t.Errorf("ReservedConcurrentExecutions: got %v, want none", reserved)
				}
			}
			events, _ := props["Events"].(map[string]any)
			if len(events) != len(fn.triggers) {
				t.Fatalf("events: got %d, want %d", len(events), len(fn.triggers))
			}
			for name, ev := range events {
				p := get(t, ev, "Properties")
				if got, want := get(t, p, "RetryPolicy"), map[string]any{"MaximumEventAgeInSeconds": float64(60), "MaximumRetryAttempts": float64(2)}; !reflect.DeepEqual(got, want) {
					t.Errorf("%s RetryPolicy: got %#v, want %#v", name, got, want)
				}
				if got, want := get(t, p, "DeadLetterConfig"), map[string]any{"Arn": getAtt("DeadLetterQueue", "Arn")}; !reflect.DeepEqual(got, want) {
					t.Errorf("%s DeadLetterConfig: got %#v, want %#v", name, got, want)
				}
			}
		})
	}
}

func TestOperationsParameters(t *testing.T) {
	doc := render(t, Options{})
	params := get(t, doc, "Parameters")
	for _, name := range []string{"AlertEmail", "VpcSubnetIds", "VpcSecurityGroupIds"} {
		if got := get(t, params, name, "Default"); got != "" {
			t.Errorf("%s default: got %#v, want empty (optional)", name, got)
		}
	}
	wantVpc := map[string]any{"Fn::Not": []any{map[string]any{"Fn::Equals": []any{
		map[string]any{"Fn::Join": []any{",", ref("VpcSubnetIds")}}, ""}}}}
	if got := get(t, doc, "Conditions", "HasVpc"); !reflect.DeepEqual(got, wantVpc) {
		t.Errorf("HasVpc: got %#v, want %#v", got, wantVpc)
	}
}
