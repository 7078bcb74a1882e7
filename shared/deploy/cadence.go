package deploy

import (
	"github.com/awslabs/goformation/v7/cloudformation"
	"github.com/awslabs/goformation/v7/cloudformation/cloudwatch"
	"github.com/awslabs/goformation/v7/cloudformation/logs"
	"github.com/awslabs/goformation/v7/cloudformation/policies"
	"github.com/awslabs/goformation/v7/cloudformation/serverless"
)

// The 30-second cadence: an Express state machine started every minute, its log group and the
// alarm on its failed executions.
const (
	cadenceLogGroupID = "IngestCadenceLogGroup"
	cadenceAlarmID    = "IngestCadenceAlarm"

	// The Map's result when a cluster's ingest failed after its retries (see cadenceFanOut).
	cadenceFailed = "failed"
	// Three failed minutes in a row: a failed tick is retried by the next one 30 s later, so one
	// is a blip; three mean a cluster has had no fresh snapshot for three minutes.
	cadenceAlarmMinutes = 3
)

// cadenceResources are the state machine, its log group and the alarm on its failed executions.
func cadenceResources() map[string]cloudformation.Resource {
	return map[string]cloudformation.Resource{
		cadenceID: ingestCadence(),
		cadenceLogGroupID: &logs.LogGroup{
			// The /aws/vendedlogs/ prefix keeps Step Functions' log delivery from adding a resource
			// policy per log group (CloudWatch Logs allows ten per account and region).
			LogGroupName:                         cloudformation.String(cloudformation.Sub("/aws/vendedlogs/states/${AWS::StackName}-cadence")),
			RetentionInDays:                      cloudformation.Int(logRetentionDays),
			AWSCloudFormationDeletionPolicy:      policies.DeletionPolicy("Delete"),
			AWSCloudFormationUpdateReplacePolicy: policies.UpdateReplacePolicy("Delete"),
		},
		cadenceAlarmID: &cloudwatch.Alarm{
			// Not "shardwise-...": detect's alarm rule takes those for cluster alarms.
			AlarmName: cloudformation.String(cloudformation.Sub("cadence-failed-${AWS::StackName}")),
			AlarmDescription: cloudformation.String("The ingest cadence failed for three minutes running: at least one " +
				"cluster's ingest fails; its state machine's log group names the cluster and the error"),
			Namespace:          cloudformation.String("AWS/States"),
			MetricName:         cloudformation.String("ExecutionsFailed"),
			Dimensions:         []cloudwatch.Alarm_Dimension{{Name: "StateMachineArn", Value: cloudformation.Ref(cadenceID)}},
			Statistic:          cloudformation.String("Sum"),
			Period:             cloudformation.Int(60),
			EvaluationPeriods:  cadenceAlarmMinutes,
			DatapointsToAlarm:  cloudformation.Int(cadenceAlarmMinutes),
			Threshold:          cloudformation.Float64(0),
			ComparisonOperator: "GreaterThanThreshold",
			TreatMissingData:   cloudformation.String("notBreaching"),
			AlarmActions:       []string{cloudformation.Ref(alertTopicID)},
		},
	}
}

// ingestCadence runs ingest every 30 s for every cluster, although EventBridge schedules fire at
// most once a minute: each minute the schedule starts an Express state machine whose Parallel
// state fans out over the clusters at once and again after a 30 s Wait. Each fan-out is a Map
// with one iteration per cluster, each invoking ingest for that cluster alone, so a slow or
// failing cluster holds up only its own iteration. An SQS delay queue was the alternative; it
// needs a second event shape and a poller, and a chain of ingest re-enqueueing itself would be
// cut by Lambda's recursive-loop detection. docs/deploy.md works out what it costs.
//
// The clusters come from where the functions take them (config.Load): the ClusterEndpoints
// parameter when it is set, else the configuration parameter's document.
func ingestCadence() withProperties {
	definition := map[string]any{
		"Comment": "Ingest every cluster now and 30 seconds from now, each cluster on its own.",
		"StartAt": "Clusters",
		"States": map[string]any{
			"Clusters": map[string]any{
				"Type":       "Pass",
				"Parameters": map[string]any{"endpoints": "${ClusterEndpoints}"},
				"Next":       "ClustersFrom",
			},
			"ClustersFrom": map[string]any{
				"Type": "Choice",
				"Choices": []any{map[string]any{
					"Variable": "$.endpoints", "StringEquals": "", "Next": "ReadConfig",
				}},
				"Default": "SplitEndpoints",
			},
			// name=url pairs, as CloudFormation joins the list: each iteration keeps the name.
			"SplitEndpoints": map[string]any{
				"Type":       "Pass",
				"Parameters": map[string]any{"clusters.$": "States.StringSplit($.endpoints, ', ')"},
				"Next":       "Cadence",
			},
			"ReadConfig": map[string]any{
				"Type":           "Task",
				"Resource":       "arn:aws:states:::aws-sdk:ssm:getParameter",
				"Parameters":     map[string]any{"Name": "${ConfigParameterName}", "WithDecryption": true},
				"ResultSelector": map[string]any{"config.$": "States.StringToJson($.Parameter.Value)"},
				"Next":           "ConfigClusters",
			},
			"ConfigClusters": map[string]any{
				"Type":       "Pass",
				"Parameters": map[string]any{"clusters.$": "$.config.clusters[*].name"},
				"Next":       "Cadence",
			},
			"Cadence": map[string]any{
				"Type": "Parallel",
				"Next": "Outcome",
				// Each pass ends in true when one of its clusters failed.
				"ResultSelector": map[string]any{"failed.$": "States.ArrayContains($, true)"},
				"Branches": []any{
					map[string]any{
						"StartAt": "Now",
						"States":  cadenceFanOut("Now"),
					},
					map[string]any{
						"StartAt": "WaitHalfCycle",
						"States": mergeStates(
							map[string]any{"WaitHalfCycle": map[string]any{"Type": "Wait", "Seconds": cadenceSeconds, "Next": "Later"}},
							cadenceFanOut("Later"),
						),
					},
				},
			},
			// Every cluster has had its turn; the execution fails if any one failed, so that
			// ExecutionsFailed counts it and the log group holds the error.
			"Outcome": map[string]any{
				"Type": "Choice",
				"Choices": []any{map[string]any{
					"Variable": "$.failed", "BooleanEquals": true, "Next": "ClusterFailed",
				}},
				"Default": "Done",
			},
			"ClusterFailed": map[string]any{
				"Type":  "Fail",
				"Error": "ClusterIngestFailed",
				"Cause": "At least one cluster's ingest failed after its retries; the other clusters were ingested. " +
					"The state machine's log group has the error.",
			},
			"Done": map[string]any{"Type": "Succeed"},
		},
	}
	sm := &serverless.StateMachine{
		Type:       cloudformation.String("EXPRESS"),
		Definition: definition,
		DefinitionSubstitutions: map[string]string{
			"IngestFunctionArn":   cloudformation.GetAtt(logicalID("ingest"), "Arn"),
			"ClusterEndpoints":    cloudformation.Join(",", cloudformation.Ref(paramClusters)),
			"ConfigParameterName": cloudformation.Ref(paramConfig),
		},
	}
	return withProperties{Resource: sm, extra: map[string]any{
		// goformation's ScheduleEvent has no RetryPolicy or DeadLetterConfig. A start the schedule
		// could not make (Step Functions throttling, a deleted role) is retried within the minute,
		// the next schedule's start being as good as a later retry, and then kept in the
		// dead-letter queue, whose alarm notifies: a missed start is seen, not silent.
		"Events": map[string]any{
			"EveryMinute": map[string]any{
				"Type": "Schedule",
				"Properties": map[string]any{
					"Schedule": scheduleExpression,
					"RetryPolicy": map[string]any{
						"MaximumEventAgeInSeconds": maxEventAgeSeconds,
						"MaximumRetryAttempts":     maxRetryAttempts,
					},
					"DeadLetterConfig": map[string]any{"Arn": cloudformation.GetAtt(dlqID, "Arn")},
				},
			},
		},
		"Policies": []any{
			map[string]any{"LambdaInvokePolicy": map[string]any{"FunctionName": cloudformation.Ref(logicalID("ingest"))}},
			// Step Functions delivers its logs through CloudWatch Logs' vended-log API, which
			// takes no resource-level permissions (Step Functions developer guide, "Logging").
			map[string]any{"Statement": []any{map[string]any{
				"Effect": "Allow",
				"Action": []string{
					"logs:CreateLogDelivery", "logs:GetLogDelivery", "logs:UpdateLogDelivery",
					"logs:DeleteLogDelivery", "logs:ListLogDeliveries", "logs:PutResourcePolicy",
					"logs:DescribeResourcePolicies", "logs:DescribeLogGroups",
				},
				"Resource": "*",
			}}},
			configParameterPolicy(),
		},
		// ERROR logs every failed task, caught or not, with its input: the cluster it was for.
		"Logging": map[string]any{
			"Level":                "ERROR",
			"IncludeExecutionData": true,
			"Destinations": []any{map[string]any{
				"CloudWatchLogsLogGroup": map[string]any{"LogGroupArn": cloudformation.GetAtt(cadenceLogGroupID, "Arn")},
			}},
		},
	}}
}

// cadenceFanOut is one pass over the clusters: a Map state named prefix with one iteration per
// cluster. An iteration that fails after its retries is caught and ends as "failed", so the others
// go on; the Map's result is true when any failed. A failure of the Map itself (a malformed
// cluster list) is caught too, so it cannot cancel the other branch of the Parallel.
func cadenceFanOut(prefix string) map[string]any {
	mapState := map[string]any{
		"Type":      "Map",
		"ItemsPath": "$.clusters",
		// Inline Maps run up to 40 iterations at a time; no lower cap is set.
		"ItemProcessor": map[string]any{
			"ProcessorConfig": map[string]any{"Mode": "INLINE"},
			"StartAt":         prefix + "Cluster",
			"States": map[string]any{
				// The item is a cluster name, or a name=url pair from ClusterEndpoints.
				prefix + "Cluster": map[string]any{
					"Type":       "Pass",
					"Parameters": map[string]any{"cluster.$": "States.ArrayGetItem(States.StringSplit($, '='), 0)"},
					"Next":       prefix + "Ingest",
				},
				prefix + "Ingest": map[string]any{
					"Type":     "Task",
					"Resource": "arn:aws:states:::lambda:invoke",
					// ingest's direct payload: {"cluster": name} ingests that cluster only.
					"Parameters": map[string]any{"FunctionName": "${IngestFunctionArn}", "Payload.$": "$"},
					"Retry": []any{map[string]any{
						// Lambda's transient service errors (Step Functions' recommended retry set).
						"ErrorEquals": []string{
							"Lambda.ServiceException", "Lambda.AWSLambdaException",
							"Lambda.SdkClientException", "Lambda.TooManyRequestsException",
						},
						"IntervalSeconds": 1,
						"MaxAttempts":     2,
						"BackoffRate":     2,
					}},
					"Catch": []any{map[string]any{
						"ErrorEquals": []string{"States.ALL"},
						"ResultPath":  "$.error",
						"Next":        prefix + "Failed",
					}},
					"Next": prefix + "Ingested",
				},
				prefix + "Ingested": map[string]any{"Type": "Pass", "Result": "ok", "End": true},
				prefix + "Failed":   map[string]any{"Type": "Pass", "Result": cadenceFailed, "End": true},
			},
		},
		"ResultSelector": map[string]any{"failed.$": "States.ArrayContains($, '" + cadenceFailed + "')"},
		"OutputPath":     "$.failed",
		"Catch": []any{map[string]any{
			"ErrorEquals": []string{"States.ALL"},
			"ResultPath":  "$.error",
			"Next":        prefix + "MapFailed",
		}},
		"End": true,
	}
	mapFailed := map[string]any{"Type": "Pass", "Result": true, "End": true}
	return map[string]any{prefix: mapState, prefix + "MapFailed": mapFailed}
}

// mergeStates joins the States maps of one branch.
func mergeStates(parts ...map[string]any) map[string]any {
	out := map[string]any{}
	for _, p := range parts {
		for k, v := range p {
			out[k] = v
		}
	}
	return out
}
