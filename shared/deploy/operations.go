package deploy

import (
	"github.com/awslabs/goformation/v7/cloudformation"
	"github.com/awslabs/goformation/v7/cloudformation/cloudwatch"
	"github.com/awslabs/goformation/v7/cloudformation/events"
	"github.com/awslabs/goformation/v7/cloudformation/logs"
	"github.com/awslabs/goformation/v7/cloudformation/policies"
	"github.com/awslabs/goformation/v7/cloudformation/sns"
	"github.com/awslabs/goformation/v7/cloudformation/sqs"

	"github.com/shardwise/shardwise/shared/bus"
)

// Running the stack safely in an account: log groups, the bus archive, alerts, dead letters of
// rule targets, and the optional VPC.
const (
	archiveID         = "EventArchive"
	alertTopicID      = "AlertTopic"
	alertPolicyID     = "AlertTopicPolicy"
	alertEmailID      = "AlertEmailSubscription"
	scaleUpRuleID     = "ScaleUpNeededRule"
	unrelievedRuleID  = "HotspotUnrelievedRule"
	dlqPolicyID       = "DeadLetterQueuePolicy"
	dlqAlarmID        = "DeadLetterAlarm"
	paramAlertEmail   = "AlertEmail"
	paramVpcSubnets   = "VpcSubnetIds"
	paramVpcSecGroups = "VpcSecurityGroupIds"
	condHasAlertEmail = "HasAlertEmail"
	condHasVpc        = "HasVpc"

	// A month of function logs: enough to look back at an incident, without keeping every
	// 30-second cycle's lines forever (CloudWatch Logs' default is never to expire).
	logRetentionDays = 30
	// The bus is the audit log of every decision: a year of it, replayable.
	archiveRetentionDays = 365
	// Scale Up Needed and Hotspot Unrelieved are for people: retry their delivery for a day,
	// EventBridge's own maximum.
	alertEventAgeSeconds = 24 * 60 * 60
	alertRetryAttempts   = 185
	// The dead-letter alarm looks every 5 minutes: a failed event is worth a look, not a page
	// within the minute.
	dlqAlarmPeriodSeconds = 300
)

// logGroupID names a function's log group.
func logGroupID(function string) string { return logicalID(function) + "LogGroup" }

func logGroup() *logs.LogGroup {
	return &logs.LogGroup{
		RetentionInDays: cloudformation.Int(logRetentionDays),
		// The logs expire within a month anyway; the decisions outlive the stack in the archive
		// and the table.
		AWSCloudFormationDeletionPolicy:      policies.DeletionPolicy("Delete"),
		AWSCloudFormationUpdateReplacePolicy: policies.UpdateReplacePolicy("Delete"),
	}
}

// loggingConfig sends a function's logs, JSON, to its own log group. The functions already
// write slog JSON lines, which Lambda's JSON format keeps as they are and adds its own records to.
func loggingConfig(function string) map[string]any {
	return map[string]any{"LogFormat": "JSON", "LogGroup": cloudformation.Ref(logGroupID(function))}
}

// ruleTargetPolicy is what a rule does when it cannot deliver to a function: a stats-driven
// event older than two refresh periods is stale, so it is retried briefly and then kept in the
// dead-letter queue.
func ruleTargetPolicy() map[string]any {
	return map[string]any{
		"RetryPolicy":      map[string]any{"MaximumEventAgeInSeconds": maxEventAgeSeconds, "MaximumRetryAttempts": maxRetryAttempts},
		"DeadLetterConfig": map[string]any{"Arn": cloudformation.GetAtt(dlqID, "Arn")},
	}
}

// operationsResources are the stack's resources for running it in an account.
func operationsResources() map[string]cloudformation.Resource {
	topic := &sns.Topic{DisplayName: cloudformation.String("shardwise alerts")}
	ruleArn := cloudformation.GetAtt(scaleUpRuleID, "Arn")
	return map[string]cloudformation.Resource{
		archiveID: &events.Archive{
			SourceArn:     cloudformation.GetAtt(busID, "Arn"),
			RetentionDays: cloudformation.Int(archiveRetentionDays),
			Description:   cloudformation.String("Every shardwise event: the audit log, replayable"),
		},
		alertTopicID: topic,
		scaleUpRuleID: alertRule(bus.TypeScaleUpNeeded,
			"Scale Up Needed to the alert topic when it starts or changes: shardwise proved the cluster needs more nodes"),
		unrelievedRuleID: alertRule(bus.TypeHotspotUnrelieved,
			"Hotspot Unrelieved to the alert topic when it starts or changes: hot nodes the planner found no step for"),
		// A topic policy replaces the default one, so it names every publisher: the two rules, and
		// the stack's notifying alarms by name (each ends in the stack's name; the conditional
		// ones cannot be named by GetAtt when absent).
		alertPolicyID: &sns.TopicPolicy{
			Topics: []string{cloudformation.Ref(alertTopicID)},
			PolicyDocument: map[string]any{
				"Version": "2012-10-17",
				"Statement": []any{
					servicePublish("ScaleUpRule", "events.amazonaws.com", "sns:Publish", cloudformation.Ref(alertTopicID), ruleArn),
					servicePublish("UnrelievedRule", "events.amazonaws.com", "sns:Publish", cloudformation.Ref(alertTopicID),
						cloudformation.GetAtt(unrelievedRuleID, "Arn")),
					servicePublishAny("StackAlarms", "cloudwatch.amazonaws.com", "sns:Publish", cloudformation.Ref(alertTopicID),
						notifyingAlarmArns()),
				},
			},
		},
		alertEmailID: &sns.Subscription{
			Protocol:                   "email",
			TopicArn:                   cloudformation.Ref(alertTopicID),
			Endpoint:                   cloudformation.String(cloudformation.Ref(paramAlertEmail)),
			AWSCloudFormationCondition: condHasAlertEmail,
		},
		// EventBridge puts what its rules could not deliver into the dead-letter queue; any
		// rule of this account's buses may, no other principal.
		dlqPolicyID: &sqs.QueuePolicy{
			Queues: []string{cloudformation.Ref(dlqID)},
			PolicyDocument: map[string]any{
				"Version": "2012-10-17",
				"Statement": []any{servicePublish("RuleDeadLetters", "events.amazonaws.com", "sqs:SendMessage",
					cloudformation.GetAtt(dlqID, "Arn"),
					cloudformation.Sub("arn:${AWS::Partition}:events:${AWS::Region}:${AWS::AccountId}:rule/*"))},
			},
		},
		dlqAlarmID: &cloudwatch.Alarm{
			// Not "shardwise-...": detect's alarm rule takes those for cluster alarms.
			AlarmName:          cloudformation.String(cloudformation.Sub("dead-letters-${AWS::StackName}")),
			AlarmDescription:   cloudformation.String("An event shardwise failed to handle is in the dead-letter queue"),
			Namespace:          cloudformation.String("AWS/SQS"),
			MetricName:         cloudformation.String("ApproximateNumberOfMessagesVisible"),
			Dimensions:         []cloudwatch.Alarm_Dimension{{Name: "QueueName", Value: cloudformation.GetAtt(dlqID, "QueueName")}},
			Statistic:          cloudformation.String("Maximum"),
			Period:             cloudformation.Int(dlqAlarmPeriodSeconds),
			EvaluationPeriods:  1,
			Threshold:          cloudformation.Float64(0),
			ComparisonOperator: "GreaterThanThreshold",
			TreatMissingData:   cloudformation.String("notBreaching"),
			AlarmActions:       []string{cloudformation.Ref(alertTopicID)},
		},
	}
}

// alertRule sends the events of detailType that notify (bus.Notice) to the alert topic. Every plan
// that finds the signal publishes its event on the bus; only those marked notify (when the signal
// starts or changes, at most once per cool-down) reach people.
func alertRule(detailType, description string) *events.Rule {
	return &events.Rule{
		Description:  cloudformation.String(description),
		EventBusName: cloudformation.String(cloudformation.Ref(busID)),
		EventPattern: map[string]any{
			"source":      []string{bus.Source},
			"detail-type": []string{detailType},
			"detail":      map[string]any{"notify": []bool{true}},
		},
		Targets: []events.Rule_Target{{
			Id:  "AlertTopic",
			Arn: cloudformation.Ref(alertTopicID),
			RetryPolicy: &events.Rule_RetryPolicy{
				MaximumEventAgeInSeconds: cloudformation.Int(alertEventAgeSeconds),
				MaximumRetryAttempts:     cloudformation.Int(alertRetryAttempts),
			},
			DeadLetterConfig: &events.Rule_DeadLetterConfig{Arn: cloudformation.String(cloudformation.GetAtt(dlqID, "Arn"))},
		}},
	}
}

// notifyingAlarmArns are the ARNs of the alarms that notify the alert topic, by name pattern.
func notifyingAlarmArns() []string {
	const alarm = "arn:${AWS::Partition}:cloudwatch:${AWS::Region}:${AWS::AccountId}:alarm:"
	return []string{
		cloudformation.Sub(alarm + "dead-letters-${AWS::StackName}"),
		cloudformation.Sub(alarm + "cadence-failed-${AWS::StackName}"),
		cloudformation.Sub(alarm + "stale-samples-${AWS::StackName}"),
		cloudformation.Sub(alarm + "opensearch-*-${AWS::StackName}"),
		cloudformation.Sub(alarm + sandboxAlarmPrefix + "*-over-limit-${AWS::StackName}"),
	}
}

// servicePublishAny is servicePublish for any of several sources.
func servicePublishAny(sid, service, action, resource string, sources []string) map[string]any {
	st := servicePublish(sid, service, action, resource, "")
	st["Condition"] = map[string]any{"ArnLike": map[string]any{"aws:SourceArn": sources}}
	return st
}

// servicePublish lets one AWS service principal take action on resource, on behalf of source only.
func servicePublish(sid, service, action, resource, source string) map[string]any {
	return map[string]any{
		"Sid":       sid,
		"Effect":    "Allow",
		"Principal": map[string]any{"Service": service},
		"Action":    action,
		"Resource":  resource,
		"Condition": map[string]any{"ArnLike": map[string]any{"aws:SourceArn": source}},
	}
}

func operationsParameters() cloudformation.Parameters {
	return cloudformation.Parameters{
		paramAlertEmail: {
			Type:           "String",
			Default:        "",
			AllowedPattern: cloudformation.String(`^$|^[^@\s]+@[^@\s]+$`),
			Description: cloudformation.String("Email address subscribed to the alert topic (Scale Up Needed, Hotspot Unrelieved, alarms, dead letters); " +
				"the address confirms the subscription. Empty: none"),
		},
		paramVpcSubnets: {
			Type:    "CommaDelimitedList",
			Default: "",
			Description: cloudformation.String("Subnets for the functions when the domain is in a VPC, comma-separated; " +
				"empty: the functions run outside any VPC. Give VpcSecurityGroupIds with them"),
		},
		paramVpcSecGroups: {
			Type:        "CommaDelimitedList",
			Default:     "",
			Description: cloudformation.String("Security groups of the functions in the VPC, allowed to reach the domain on 443"),
		},
	}
}

func operationsConditions() map[string]any {
	return map[string]any{
		condHasAlertEmail: cloudformation.Not([]string{cloudformation.Equals(cloudformation.Ref(paramAlertEmail), "")}),
		condHasVpc: cloudformation.Not([]string{cloudformation.Equals(
			cloudformation.Join(",", cloudformation.Ref(paramVpcSubnets)), "")}),
	}
}

// vpcConfig places a function in the VPC when the stack names subnets.
func vpcConfig() any {
	return cloudformation.If(condHasVpc,
		map[string]any{"SubnetIds": cloudformation.Ref(paramVpcSubnets), "SecurityGroupIds": cloudformation.Ref(paramVpcSecGroups)},
		cloudformation.Ref("AWS::NoValue"))
}
