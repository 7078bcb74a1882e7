package webhook

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// CloudWatch's alarm state-change event, as EventBridge delivers it.
const (
	alarmDetailType = "CloudWatch Alarm State Change"
	alarmSource     = "aws.cloudwatch"
	alarmState      = "ALARM"
)

// Alarm is what a CloudWatch alarm state change says.
type Alarm struct {
	Name string
	// InAlarm is true when the alarm entered ALARM; any other state asks for nothing.
	InAlarm bool
	// ClusterDimensions are the dimensionCluster values of the alarm's metrics, DomainNames their
	// dimensionDomain values, Nodes their dimensionNode and dimensionNodeID values; each sorted,
	// without repeats.
	ClusterDimensions []string
	DomainNames       []string
	Nodes             []string
}

// ParseAlarm decodes a CloudWatch alarm state-change event in EventBridge's shape (as EventBridge
// delivers it to a target, or as a forwarder relays it).
func ParseAlarm(body []byte) (Alarm, error) {
	var wire struct {
		DetailType string `json:"detail-type"`
		Source     string `json:"source"`
		Detail     *struct {
			AlarmName string `json:"alarmName"`
			State     struct {
				Value string `json:"value"`
			} `json:"state"`
			Configuration struct {
				Metrics []struct {
					MetricStat struct {
						Metric struct {
							Dimensions map[string]string `json:"dimensions"`
						} `json:"metric"`
					} `json:"metricStat"`
				} `json:"metrics"`
			} `json:"configuration"`
		} `json:"detail"`
	}
	if err := json.Unmarshal(body, &wire); err != nil {
		return Alarm{}, fmt.Errorf("%w: alarm event: %w", errMalformed, err)
	}
	if wire.DetailType != alarmDetailType || wire.Source != alarmSource {
		return Alarm{}, fmt.Errorf("%w: detail-type %q from %q, want %q from %q",
			errMalformed, wire.DetailType, wire.Source, alarmDetailType, alarmSource)
	}
	if wire.Detail == nil || wire.Detail.AlarmName == "" {
		return Alarm{}, fmt.Errorf("%w: alarm event has no detail.alarmName", errMalformed)
	}
	d := wire.Detail
	a := Alarm{Name: d.AlarmName, InAlarm: d.State.Value == alarmState}
	for _, m := range d.Configuration.Metrics {
		dims := m.MetricStat.Metric.Dimensions
		a.ClusterDimensions = appendNonEmpty(a.ClusterDimensions, dims[dimensionCluster])
		a.DomainNames = appendNonEmpty(a.DomainNames, dims[dimensionDomain])
		a.Nodes = appendNonEmpty(appendNonEmpty(a.Nodes, dims[dimensionNode]), dims[dimensionNodeID])
	}
	for _, s := range []*[]string{&a.ClusterDimensions, &a.DomainNames, &a.Nodes} {
		slices.Sort(*s)
		*s = slices.Compact(*s)
	}
	return a, nil
}

func appendNonEmpty(list []string, v string) []string {
	if v == "" {
		return list
	}
	return append(list, v)
}

// Cluster finds the configured cluster the alarm is about: its metrics' Cluster dimension (which
// must then name a configured cluster), else a DomainName dimension equal to a configured
// cluster's name, else an alarm name "shardwise-<cluster>-…" (the longest configured name that
// fits, so "prod-eu" wins over "prod" for "shardwise-prod-eu-node-3").
func (a Alarm) Cluster(configured []string) (string, error) {
	switch len(a.ClusterDimensions) {
	case 0:
	case 1:
		c := a.ClusterDimensions[0]
		if !slices.Contains(configured, c) {
			return "", fmt.Errorf("%w %q (alarm %s, dimension %s)", ErrUnknownCluster, c, a.Name, dimensionCluster)
		}
		return c, nil
	default:
		return "", fmt.Errorf("%w: alarm %s has metrics of clusters %v: alarm on one cluster at a time", errMalformed, a.Name, a.ClusterDimensions)
	}
	for _, d := range a.DomainNames {
		if slices.Contains(configured, d) {
			return d, nil
		}
	}
	best := ""
	for _, c := range configured {
		p := AlarmPrefix + c
		if (a.Name == p || strings.HasPrefix(a.Name, p+"-")) && len(c) > len(best) {
			best = c
		}
	}
	if best == "" {
		return "", fmt.Errorf("%w: alarm %s names no configured cluster (want a %s dimension, or a name %s<cluster>-…)",
			ErrUnknownCluster, a.Name, dimensionCluster, AlarmPrefix)
	}
	return best, nil
}
