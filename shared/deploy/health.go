package deploy

import (
	"fmt"
	"strconv"

	"github.com/awslabs/goformation/v7/cloudformation"
	"github.com/awslabs/goformation/v7/cloudformation/cloudwatch"

	"github.com/shardwise/shardwise/shared/telemetry"
)

// Alarms that only notify the alert topic: the heartbeat of shardwise's own samples, and AWS's
// recommended alarms for each Amazon OpenSearch Service domain of AlarmClusters. None of them is
// named shardwise-…, so none wakes detect: they are for people.
const (
	staleAlarmID = "StaleSamplesAlarm"
	// Three refresh periods: a sample is fresh for two (README, "Acting safely"), and one more
	// absorbs a slow ingest.
	staleThresholdSeconds = 3 * cadenceSeconds
	// Three minutes in a row, as the cadence alarm: one late minute is a blip.
	staleAlarmMinutes = 3

	paramHealthAlarms     = "DomainHealthAlarms"
	paramFreeStorageMiB   = "FreeStorageAlarmMiB"
	defaultFreeStorageMiB = 20480
)

// staleAlarm fires when some cluster's last sample grew older than staleThresholdSeconds before
// the next replaced it, and when no cluster has sampled at all for three minutes (missing data is
// breaching): ingest stopped, its schedule no longer starts, or every cluster fails.
func staleAlarm() *cloudwatch.Alarm {
	return &cloudwatch.Alarm{
		// Not "shardwise-...": detect's alarm rule takes those for cluster alarms.
		AlarmName: cloudformation.String(cloudformation.Sub("stale-samples-${AWS::StackName}")),
		AlarmDescription: cloudformation.String(fmt.Sprintf("A cluster's samples are more than %d s apart, or no cluster "+
			"was sampled for %d minutes: shardwise decides on stale numbers or not at all", staleThresholdSeconds, staleAlarmMinutes)),
		Metrics: []cloudwatch.Alarm_MetricDataQuery{{
			Id: "age",
			Expression: cloudformation.String(fmt.Sprintf("SELECT MAX(%s) FROM SCHEMA(%q, %s)",
				telemetry.MetricSecondsSinceLastSample, telemetry.Namespace, telemetry.DimensionCluster)),
			Period:     cloudformation.Int(alarmPeriodSeconds),
			ReturnData: cloudformation.Bool(true),
		}},
		EvaluationPeriods:  staleAlarmMinutes,
		DatapointsToAlarm:  cloudformation.Int(staleAlarmMinutes),
		Threshold:          cloudformation.Float64(staleThresholdSeconds),
		ComparisonOperator: "GreaterThanThreshold",
		TreatMissingData:   cloudformation.String("breaching"),
		AlarmActions:       []string{cloudformation.Ref(alertTopicID)},
	}
}

// healthAlarm is one of AWS's recommended alarms for Amazon OpenSearch Service ("Recommended
// CloudWatch alarms for Amazon OpenSearch Service", OpenSearch Service developer guide), as
// shardwise creates it for each domain of AlarmClusters.
type healthAlarm struct {
	id, suffix, metric, description string
	// stat is the domain-level statistic. The service computes a domain's Maximum and Minimum over
	// its nodes' values, so Maximum is the busiest node and Minimum the fullest: what a per-node
	// Metrics Insights query over NodeId would see, at one alarm metric instead of one per node.
	stat string
	// threshold is a number, or a parameter's name.
	threshold         any
	comparison        string
	periodSeconds     int
	evaluationPeriods int
	datapointsToAlarm int
}

// healthAlarms are AWS's recommended alarms shardwise cares about: a red cluster and blocked
// writes stop what shardwise does; the worst node's storage, heap and CPU are what a hotspot
// grows into when moves cannot keep up. Thresholds, periods and counts are the guide's.
func healthAlarms() []healthAlarm {
	return []healthAlarm{
		{id: "ClusterRedAlarm", suffix: "cluster-red", metric: "ClusterStatus.red", stat: "Maximum", threshold: 1.0,
			comparison: "GreaterThanOrEqualToThreshold", periodSeconds: 60, evaluationPeriods: 1, datapointsToAlarm: 1,
			description: "At least one primary shard and its replicas are not allocated to a node"},
		{id: "WritesBlockedAlarm", suffix: "writes-blocked", metric: "ClusterIndexWritesBlocked", stat: "Maximum", threshold: 1.0,
			comparison: "GreaterThanOrEqualToThreshold", periodSeconds: 300, evaluationPeriods: 1, datapointsToAlarm: 1,
			description: "The domain is blocking write requests"},
		{id: "FreeStorageAlarm", suffix: "free-storage", metric: "FreeStorageSpace", stat: "Minimum",
			threshold: paramFreeStorageMiB, comparison: "LessThanOrEqualToThreshold", periodSeconds: 60, evaluationPeriods: 1,
			datapointsToAlarm: 1, description: "A data node's free storage space (MiB) is at or under the threshold"},
		{id: "JVMPressureAlarm", suffix: "jvm-pressure", metric: "JVMMemoryPressure", stat: "Maximum", threshold: 95.0,
			comparison: "GreaterThanOrEqualToThreshold", periodSeconds: 60, evaluationPeriods: 3, datapointsToAlarm: 3,
			description: "A node's JVM memory pressure stayed at or over 95% for 3 minutes"},
		{id: "CPUAlarm", suffix: "cpu", metric: "CPUUtilization", stat: "Maximum", threshold: 80.0,
			comparison: "GreaterThanOrEqualToThreshold", periodSeconds: 900, evaluationPeriods: 3, datapointsToAlarm: 3,
			description: "A data node's CPU stayed at or over 80% for 45 minutes"},
	}
}

func healthAlarmID(a healthAlarm, i int) string { return a.id + strconv.Itoa(i+1) }

func condHealthAlarmSlot(i int) string { return "HasDomainHealthAlarms" + strconv.Itoa(i+1) }

// healthAlarmResources are the recommended alarms of every AlarmClusters slot with a domain, when
// DomainHealthAlarms is true. Each notifies the alert topic; none wakes detect.
func healthAlarmResources() map[string]cloudformation.Resource {
	out := map[string]cloudformation.Resource{}
	for i := range alarmSlots {
		for _, a := range healthAlarms() {
			alarm := &cloudwatch.Alarm{
				// Not "shardwise-...": these notify and never wake detect.
				AlarmName: cloudformation.String(cloudformation.Join("", []string{"opensearch-", alarmSlotCluster(i),
					"-" + a.suffix + "-", cloudformation.Ref("AWS::StackName")})),
				AlarmDescription:           cloudformation.String(a.description + " (AWS's recommended alarm for OpenSearch Service)"),
				EvaluationPeriods:          a.evaluationPeriods,
				DatapointsToAlarm:          cloudformation.Int(a.datapointsToAlarm),
				ComparisonOperator:         a.comparison,
				TreatMissingData:           cloudformation.String("notBreaching"),
				AlarmActions:               []string{cloudformation.Ref(alertTopicID)},
				OKActions:                  []string{cloudformation.Ref(alertTopicID)},
				AWSCloudFormationCondition: condHealthAlarmSlot(i),
			}
			alarm.Namespace = cloudformation.String("AWS/ES")
			alarm.MetricName = cloudformation.String(a.metric)
			alarm.Dimensions = []cloudwatch.Alarm_Dimension{
				{Name: "DomainName", Value: alarmSlotDomain(i)},
				{Name: "ClientId", Value: cloudformation.Ref("AWS::AccountId")},
			}
			alarm.Statistic = cloudformation.String(a.stat)
			alarm.Period = cloudformation.Int(a.periodSeconds)
			extra := map[string]any{}
			switch th := a.threshold.(type) {
			case float64:
				alarm.Threshold = cloudformation.Float64(th)
			case string:
				extra["Threshold"] = cloudformation.Ref(th)
			}
			out[healthAlarmID(a, i)] = withProperties{Resource: alarm, extra: extra}
		}
	}
	return out
}

func healthParameters() cloudformation.Parameters {
	return cloudformation.Parameters{
		paramHealthAlarms: {
			Type:          "String",
			Default:       "true",
			AllowedValues: []any{"true", "false"},
			Description: cloudformation.String("When true, each name:domain entry of AlarmClusters also gets AWS's " +
				"recommended alarms that bear on shardwise (ClusterStatus.red, ClusterIndexWritesBlocked, and on the worst " +
				"node FreeStorageSpace, JVMMemoryPressure and CPUUtilization), which notify the alert topic and never " +
				"start a correction. false: none (a domain with these alarms already)"),
		},
		paramFreeStorageMiB: {
			Type:     "Number",
			Default:  strconv.Itoa(defaultFreeStorageMiB),
			MinValue: cloudformation.Float64(1),
			Description: cloudformation.String("FreeStorageSpace alarm: a data node's free storage, MiB, at or under this. " +
				"Default 20480 (20 GiB), AWS's figure; AWS advises 25% of a node's storage"),
		},
	}
}

func healthConditions() map[string]any {
	out := map[string]any{}
	for i := range alarmSlots {
		// The two conditions written out: goformation renders a {"Condition": name} as null.
		out[condHealthAlarmSlot(i)] = cloudformation.And([]string{
			cloudformation.Equals(cloudformation.Ref(paramHealthAlarms), "true"),
			cloudformation.Not([]string{cloudformation.Equals(alarmSlotDomain(i), "")}),
		})
	}
	return out
}
