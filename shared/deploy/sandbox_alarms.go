package deploy

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/awslabs/goformation/v7/cloudformation"
	"github.com/awslabs/goformation/v7/cloudformation/cloudwatch"

	"github.com/shardwise/shardwise/shared/telemetry"
)

// An alarm per hard sandbox that stays over its limit: the sandbox function emits
// SandboxOverLimit{Cluster,Sandbox}, 1 in a pass where a hard sandbox is over its cancellation
// limit on some node and 0 otherwise, and the alarm fires when its Maximum is 1 in every minute of
// sandboxAlarmMinutes. Sandboxes live in the configuration, not the template, so the ones to alarm
// on are the SandboxAlarms parameter, one slot each, as AlarmClusters does for clusters
// (alarms.go). The alarm names do not start with the prefix detect's rule matches: a tenant over
// its limit is not a write hotspot to plan for.
const (
	paramSandboxAlarms = "SandboxAlarms"
	sandboxAlarmSlots  = 5
	// sandboxAlarmMinutes: containment cancels within seconds, so a hard sandbox over its limit
	// for five minutes in a row is one shardwise (or the plugin) is not holding: a shortfall of
	// uncancellable requests, dry-run, or an open breaker.
	sandboxAlarmMinutes = 5
	sandboxAlarmPrefix  = "shardwise_sandbox-"
	// sandboxAlarmEntry is cluster/sandbox, each of letters, digits, '.', '_' and '-'.
	sandboxAlarmEntry = `[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9][A-Za-z0-9_.-]*`
)

var sandboxAlarmsPattern = fmt.Sprintf(`^$|^%s(,%s){0,%d}$`, sandboxAlarmEntry, sandboxAlarmEntry, sandboxAlarmSlots-1)

func condSandboxAlarm(i int) string { return "HasSandboxAlarm" + strconv.Itoa(i+1) }
func sandboxAlarmID(i int) string   { return "SandboxOverLimitAlarm" + strconv.Itoa(i+1) }
func sandboxAlarmEntryOf(i int) string {
	return cloudformation.Select(strconv.Itoa(i), paddedSandboxAlarms())
}

// sandboxAlarmPart is part k (0 cluster, 1 sandbox) of slot i's entry; the entry is padded with
// "/" so an empty slot still has two parts.
func sandboxAlarmPart(i, k int) string {
	return cloudformation.Select(strconv.Itoa(k), cloudformation.Split("/", cloudformation.Join("", []string{sandboxAlarmEntryOf(i), "/"})))
}

func paddedSandboxAlarms() string {
	return cloudformation.Split(",", cloudformation.Join(",", []string{
		cloudformation.Ref(paramSandboxAlarms), strings.Repeat(",", sandboxAlarmSlots-1),
	}))
}

func sandboxAlarmParameters() cloudformation.Parameters {
	return cloudformation.Parameters{paramSandboxAlarms: {
		Type:           "String",
		Default:        "",
		AllowedPattern: cloudformation.String(sandboxAlarmsPattern),
		ConstraintDescription: cloudformation.String(fmt.Sprintf("SandboxAlarms takes at most %d entries, comma-separated without "+
			"spaces, each cluster/sandbox of letters, digits, '.', '_' and '-'", sandboxAlarmSlots)),
		Description: cloudformation.String(fmt.Sprintf("Hard sandboxes to alarm on, comma-separated without spaces, at most %d, "+
			"each cluster/sandbox (prod/flood): an alarm fires when the sandbox stays over its limit on some node for %d minutes. Empty: none",
			sandboxAlarmSlots, sandboxAlarmMinutes)),
	}}
}

func sandboxAlarmConditions() map[string]any {
	out := map[string]any{}
	for i := range sandboxAlarmSlots {
		out[condSandboxAlarm(i)] = cloudformation.Not([]string{cloudformation.Equals(sandboxAlarmEntryOf(i), "")})
	}
	return out
}

func sandboxAlarmResources() map[string]cloudformation.Resource {
	out := map[string]cloudformation.Resource{}
	for i := range sandboxAlarmSlots {
		out[sandboxAlarmID(i)] = &cloudwatch.Alarm{
			AlarmName: cloudformation.String(cloudformation.Join("", []string{sandboxAlarmPrefix, sandboxAlarmPart(i, 0), "-",
				sandboxAlarmPart(i, 1), "-over-limit-", cloudformation.Ref("AWS::StackName")})),
			AlarmDescription: cloudformation.String(fmt.Sprintf("A hard sandbox has been over its limit on some node for %d minutes: "+
				"see shardwise sandbox status and the Sandbox Enforced events for why it is not contained", sandboxAlarmMinutes)),
			Namespace:  cloudformation.String(telemetry.Namespace),
			MetricName: cloudformation.String("SandboxOverLimit"),
			Dimensions: []cloudwatch.Alarm_Dimension{
				{Name: telemetry.DimensionCluster, Value: sandboxAlarmPart(i, 0)},
				{Name: "Sandbox", Value: sandboxAlarmPart(i, 1)},
			},
			Statistic:          cloudformation.String("Maximum"),
			Period:             cloudformation.Int(alarmPeriodSeconds),
			EvaluationPeriods:  sandboxAlarmMinutes,
			DatapointsToAlarm:  cloudformation.Int(sandboxAlarmMinutes),
			Threshold:          cloudformation.Float64(1),
			ComparisonOperator: "GreaterThanOrEqualToThreshold",
			TreatMissingData:   cloudformation.String("notBreaching"),
			// A sandbox that stays uncontained is for people: the alert topic, whose policy
			// names these alarms by their prefix (notifyingAlarmArns).
			AlarmActions:               []string{cloudformation.Ref(alertTopicID)},
			OKActions:                  []string{cloudformation.Ref(alertTopicID)},
			AWSCloudFormationCondition: condSandboxAlarm(i),
		}
	}
	return out
}
