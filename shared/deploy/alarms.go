package deploy

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/awslabs/goformation/v7/cloudformation"
	"github.com/awslabs/goformation/v7/cloudformation/cloudwatch"

	"github.com/shardwise/shardwise/shared/config"
	"github.com/shardwise/shardwise/shared/telemetry"
)

// CloudWatch alarms that start a correction. Each alarm is named shardwise-<cluster>-…, which the
// detect function's rule matches (alarmTrigger) and detect maps back to its cluster
// (webhook.Alarm.Cluster); on ALARM, detect ingests that cluster at once and plans on the fresh
// sample (engine.DetectNow), so a correction starts within seconds, not at the next tick.
//
// The clusters to alarm on are the AlarmClusters parameter, one alarm slot per entry: plain
// CloudFormation has no loop, and Fn::ForEach needs the AWS::LanguageExtensions transform, which
// neither SAM's translator nor moto's CloudFormation expand. A slot whose entry is absent creates
// nothing (its conditions are false). The parameter's AllowedPattern admits at most alarmSlots
// entries, so CloudFormation refuses a longer list before it creates or changes anything, rather
// than deploy it with the entries past the last slot silently left without alarms.
const (
	paramAlarmClusters          = "AlarmClusters"
	paramWriteQueueThreshold    = "WriteQueueAlarmThreshold"
	paramWriteRejectedThreshold = "WriteRejectedAlarmThreshold"
	paramLatencyThreshold       = "QueueLatencyAlarmThreshold"

	// alarmSlots is how many entries AlarmClusters takes, each with its slot of three alarms and
	// two conditions. No CloudFormation quota sets it (a template holds 500 resources, and the
	// conditions have no quota): it keeps the template's fixed cost, 15 alarm resources that exist
	// whether used or not, small. Raising it adds slots and widens the AllowedPattern together.
	alarmSlots = 5

	// Alarm periods: AWS/ES publishes the thread pool metrics every minute, and shardwise's own
	// metric comes twice a minute (the 30-second cadence).
	alarmPeriodSeconds = 60

	// The defaults of the thresholds. AWS's recommended alarms for Amazon OpenSearch Service
	// ("Recommended CloudWatch alarms for Amazon OpenSearch Service", OpenSearch Service developer
	// guide): ThreadpoolWriteQueue average >= 100 for 1 minute, 1 consecutive time; and
	// ThreadpoolWriteRejected SUM >= 1 (a rejected write is already lost work for its client).
	defaultWriteQueueThreshold    = 100
	defaultWriteRejectedThreshold = 1
)

// defaultLatencyThreshold is the detector's own queue-latency limit (allocation.Config's
// QueueLatencyThreshold default, 3 s): the alarm fires when a node queues as long as the
// detector counts as hot, so the fresh sample it asks for is one the detector acts on.
func defaultLatencyThreshold() float64 {
	return config.Default().Allocation.QueueLatencyThreshold.Std().Seconds()
}

// domainSeparator parts an AlarmClusters entry's cluster from its domain. Not "=" as in
// ClusterEndpoints: a bare "=" in YAML 1.1, which cfn-lint and SAM read, is the value tag.
const domainSeparator = ":"

// alarmClusterEntry is what one AlarmClusters entry may be: a cluster name of letters, digits,
// ".", "_" and "-" (nothing that breaks an alarm name or a dimension value), optionally ":" and the
// Amazon OpenSearch Service domain behind it (3 to 28 characters of a-z, 0-9 and "-", starting
// with a letter: the service's rule for domain names).
const alarmClusterEntry = `[A-Za-z0-9][A-Za-z0-9_.-]*(:[a-z][a-z0-9-]{2,27})?`

// alarmClustersPattern is the AlarmClusters parameter's AllowedPattern: empty, or 1 to alarmSlots
// entries separated by commas. The parameter is a String, not a CommaDelimitedList, because
// CloudFormation applies a list's pattern to each entry apart, and then nothing can count them.
var alarmClustersPattern = fmt.Sprintf(`^$|^%s(,%s){0,%d}$`, alarmClusterEntry, alarmClusterEntry, alarmSlots-1)

// Logical IDs of slot i's conditions and alarms (1-based in the template, as a user counts).
func condAlarmCluster(i int) string  { return "HasAlarmCluster" + strconv.Itoa(i+1) }
func condAlarmDomain(i int) string   { return "HasAlarmDomain" + strconv.Itoa(i+1) }
func latencyAlarmID(i int) string    { return "WriteQueueLatencyAlarm" + strconv.Itoa(i+1) }
func writeQueueAlarmID(i int) string { return "WriteQueueAlarm" + strconv.Itoa(i+1) }
func rejectedAlarmID(i int) string   { return "WriteRejectedAlarm" + strconv.Itoa(i+1) }
func alarmSlotEntry(i int) string {
	return cloudformation.Select(strconv.Itoa(i), paddedAlarmClusters())
}
func alarmSlotCluster(i int) string {
	return cloudformation.Select("0", cloudformation.Split(domainSeparator, alarmSlotEntry(i)))
}
func alarmSlotDomain(i int) string {
	return cloudformation.Select("1", cloudformation.Split(domainSeparator, domainPadded(i)))
}
func domainPadded(i int) string {
	return cloudformation.Join("", []string{alarmSlotEntry(i), domainSeparator})
}
func alarmSlotName(i int, s string) string {
	// The stack's name last: alarm names are unique per account and region, and two stacks may
	// watch clusters of the same name.
	return cloudformation.Join("", []string{alarmPrefix, alarmSlotCluster(i), "-" + s + "-", cloudformation.Ref("AWS::StackName")})
}

// paddedAlarmClusters is the AlarmClusters list with alarmSlots empty entries after it, so that
// Fn::Select of any slot is in range however few entries the list has ("a,b" becomes
// "a,b,,,,,").
func paddedAlarmClusters() string {
	return cloudformation.Split(",", cloudformation.Join(",", []string{
		cloudformation.Ref(paramAlarmClusters),
		strings.Repeat(",", alarmSlots-1),
	}))
}

func alarmParameters() cloudformation.Parameters {
	return cloudformation.Parameters{
		paramAlarmClusters: {
			Type:           "String",
			Default:        "",
			AllowedPattern: cloudformation.String(alarmClustersPattern),
			ConstraintDescription: cloudformation.String(fmt.Sprintf("AlarmClusters takes at most %d entries (the "+
				"template's alarm slots), comma-separated without spaces, each a cluster name of letters, digits, '.', "+
				"'_' and '-', or name:domain with the domain's name (3-28 characters of a-z, 0-9 and '-', starting "+
				"with a letter)", alarmSlots)),
			Description: cloudformation.String(fmt.Sprintf("Clusters whose alarms start a correction at once, comma-separated "+
				"without spaces, at most %d (more are refused): each a cluster name, or name:domain for a cluster that is an Amazon OpenSearch "+
				"Service domain of this account (prod:search-prod). Every entry gets an alarm on shardwise's %s metric; "+
				"name:domain also gets the domain's ThreadpoolWriteQueue and ThreadpoolWriteRejected alarms. Empty: no alarms",
				alarmSlots, telemetry.MetricWriteQueueLatency)),
		},
		paramWriteQueueThreshold: {
			Type:     "Number",
			Default:  strconv.Itoa(defaultWriteQueueThreshold),
			MinValue: cloudformation.Float64(1),
			Description: cloudformation.String("ThreadpoolWriteQueue alarm: queued write tasks on the busiest node (the " +
				"Maximum over 1 minute) at or above this. Default 100, AWS's recommended threshold for OpenSearch Service"),
		},
		paramWriteRejectedThreshold: {
			Type:     "Number",
			Default:  strconv.Itoa(defaultWriteRejectedThreshold),
			MinValue: cloudformation.Float64(1),
			Description: cloudformation.String("ThreadpoolWriteRejected alarm: write tasks the domain's nodes rejected in " +
				"1 minute (the increase of the cumulative counter, by metric math) at or above this. Default 1: a rejected " +
				"write is already lost work for its client"),
		},
		paramLatencyThreshold: {
			Type:     "Number",
			Default:  strconv.FormatFloat(defaultLatencyThreshold(), 'f', -1, 64),
			MinValue: cloudformation.Float64(0),
			Description: cloudformation.String(fmt.Sprintf("%s alarm: a node's estimated WRITE queue latency, seconds, at or "+
				"above this (the maximum over the cluster's nodes in 1 minute). Default: the detector's own "+
				"queue_latency_threshold default, %gs", telemetry.MetricWriteQueueLatency, defaultLatencyThreshold())),
		},
	}
}

func alarmConditions() map[string]any {
	out := map[string]any{}
	for i := range alarmSlots {
		out[condAlarmCluster(i)] = cloudformation.Not([]string{cloudformation.Equals(alarmSlotEntry(i), "")})
		// An empty entry has an empty domain too ("" + ":" splits into two empty strings).
		out[condAlarmDomain(i)] = cloudformation.Not([]string{cloudformation.Equals(alarmSlotDomain(i), "")})
	}
	return out
}

// alarmResources are the alarms of every slot.
func alarmResources() map[string]cloudformation.Resource {
	out := map[string]cloudformation.Resource{}
	for i := range alarmSlots {
		// No AlarmActions: CloudWatch sends every state change to EventBridge's default bus by
		// itself, where detect's rule picks up the ALARM ones.
		// The metric is the cluster's busiest node's estimate (one series per cluster, the node's
		// name in detect's log line), so Maximum over the minute is the highest of any node.
		out[latencyAlarmID(i)] = withProperties{
			Resource: &cloudwatch.Alarm{
				AlarmName: cloudformation.String(alarmSlotName(i, "write-queue-latency")),
				AlarmDescription: cloudformation.String("A node's estimated WRITE queue latency is at or over the threshold " +
					"(detect's \"write queue latency\" log line names the node): shardwise ingests and plans this cluster at once"),
				Namespace:                  cloudformation.String(telemetry.Namespace),
				MetricName:                 cloudformation.String(telemetry.MetricWriteQueueLatency),
				Dimensions:                 []cloudwatch.Alarm_Dimension{{Name: telemetry.DimensionCluster, Value: alarmSlotCluster(i)}},
				Statistic:                  cloudformation.String("Maximum"),
				Period:                     cloudformation.Int(alarmPeriodSeconds),
				EvaluationPeriods:          1,
				DatapointsToAlarm:          cloudformation.Int(1),
				ComparisonOperator:         "GreaterThanOrEqualToThreshold",
				TreatMissingData:           cloudformation.String("notBreaching"),
				AWSCloudFormationCondition: condAlarmCluster(i),
			},
			extra: map[string]any{"Threshold": cloudformation.Ref(paramLatencyThreshold)},
		}
		// Maximum, not Average: the domain's metric is per node, and one hot node's queue of 500 among
		// ten idle ones averages 50, under the threshold, when it is exactly what shardwise corrects.
		out[writeQueueAlarmID(i)] = domainAlarm(i, "write-queue", "ThreadpoolWriteQueue", "Maximum", paramWriteQueueThreshold,
			"A node's write thread pool queue is at or over the threshold (AWS's recommended alarm, on the busiest node): "+
				"shardwise ingests and plans this cluster at once")
		out[rejectedAlarmID(i)] = rejectedAlarm(i)
	}
	return out
}

// rejectedAlarm alarms on new write rejections: ThreadpoolWriteRejected counts a node's rejected
// tasks since it started, like the _nodes/stats counter it is read from, so an alarm on its value
// would stay in ALARM from the first rejection until a node restarts, and would wake detect once.
// Metric math takes the increase over each minute (DIFF of the nodes' sum; a node restart's drop
// is negative and never crosses the threshold).
func rejectedAlarm(i int) withProperties {
	return withProperties{
		Resource: &cloudwatch.Alarm{
			AlarmName: cloudformation.String(alarmSlotName(i, "write-rejected")),
			AlarmDescription: cloudformation.String("The domain's nodes rejected write tasks in the last minute (new " +
				"rejections, as a rate of the cumulative ThreadpoolWriteRejected): shardwise ingests and plans this cluster at once"),
			Metrics: []cloudwatch.Alarm_MetricDataQuery{
				{
					Id: "rejected",
					MetricStat: &cloudwatch.Alarm_MetricStat{
						Metric: &cloudwatch.Alarm_Metric{
							Namespace:  cloudformation.String("AWS/ES"),
							MetricName: cloudformation.String("ThreadpoolWriteRejected"),
							Dimensions: []cloudwatch.Alarm_Dimension{
								{Name: "DomainName", Value: alarmSlotDomain(i)},
								{Name: "ClientId", Value: cloudformation.Ref("AWS::AccountId")},
							},
						},
						Period: alarmPeriodSeconds,
						Stat:   "Sum",
					},
					ReturnData: cloudformation.Bool(false),
				},
				{
					Id:         "newRejections",
					Expression: cloudformation.String("DIFF(rejected)"),
					Label:      cloudformation.String("Write tasks rejected in the minute"),
					ReturnData: cloudformation.Bool(true),
				},
			},
			EvaluationPeriods:          1,
			DatapointsToAlarm:          cloudformation.Int(1),
			ComparisonOperator:         "GreaterThanOrEqualToThreshold",
			TreatMissingData:           cloudformation.String("notBreaching"),
			AWSCloudFormationCondition: condAlarmDomain(i),
		},
		extra: map[string]any{"Threshold": cloudformation.Ref(paramWriteRejectedThreshold)},
	}
}

// domainAlarm alarms on one of the domain's own AWS/ES metrics, which the service publishes per
// domain under DomainName and ClientId (the account id).
func domainAlarm(i int, suffix, metric, statistic, threshold, description string) withProperties {
	return withProperties{
		Resource: &cloudwatch.Alarm{
			AlarmName:        cloudformation.String(alarmSlotName(i, suffix)),
			AlarmDescription: cloudformation.String(description),
			Namespace:        cloudformation.String("AWS/ES"),
			MetricName:       cloudformation.String(metric),
			Dimensions: []cloudwatch.Alarm_Dimension{
				{Name: "DomainName", Value: alarmSlotDomain(i)},
				{Name: "ClientId", Value: cloudformation.Ref("AWS::AccountId")},
			},
			Statistic:                  cloudformation.String(statistic),
			Period:                     cloudformation.Int(alarmPeriodSeconds),
			EvaluationPeriods:          1,
			DatapointsToAlarm:          cloudformation.Int(1),
			ComparisonOperator:         "GreaterThanOrEqualToThreshold",
			TreatMissingData:           cloudformation.String("notBreaching"),
			AWSCloudFormationCondition: condAlarmDomain(i),
		},
		extra: map[string]any{"Threshold": cloudformation.Ref(threshold)},
	}
}
