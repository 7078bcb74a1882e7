package deploy

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/awslabs/goformation/v7/cloudformation"
	"github.com/awslabs/goformation/v7/cloudformation/cloudwatch"

	"github.com/shardwise/shardwise/shared/telemetry"
)

// The CloudWatch dashboard: per cluster, what shardwise sees and does. Cluster and node names are
// not known at deploy time, so every graph is a SEARCH over the metric's dimensions: one line per
// cluster (per tenant and node for the sandboxes), whatever clusters the stack watches.
const (
	dashboardID = "Dashboard"

	// dashboardPeriodSeconds: the metrics come every 30 s; a minute per point reads well over the
	// default three hours.
	dashboardPeriodSeconds = 60
	// dashboard grid: 24 columns; two graphs a row.
	dashboardWidgetWidth  = 12
	dashboardWidgetHeight = 6
)

// dashboardGraph is one graph: a metric of shardwise's namespace under its dimension set (as the
// code emits it: every dimension name, in any order), with the statistic that reads it right.
type dashboardGraph struct {
	title      string
	metrics    []string
	dimensions []string
	stat       string
	// unit labels the y axis.
	unit string
	// threshold, when set, draws that parameter's value as a horizontal line.
	threshold string
}

// dashboardGraphs are the dashboard's graphs, in reading order. The metric names are what the
// engine emits (TestDashboardMetricsAreEmitted holds them to the code).
func dashboardGraphs() []dashboardGraph {
	cluster := []string{telemetry.DimensionCluster}
	return []dashboardGraph{
		{title: "Hot nodes per cluster", metrics: []string{"HotNodes"}, dimensions: cluster, stat: "Maximum", unit: "nodes"},
		// One series per cluster, its busiest node's estimate (detect's log line names the node).
		{title: "Estimated WRITE queue latency of the busiest node per cluster", metrics: []string{telemetry.MetricWriteQueueLatency},
			dimensions: cluster, stat: "Maximum", unit: "seconds", threshold: paramLatencyThreshold},
		{title: "Moves planned and executed per cluster", metrics: []string{"MovesPlanned", "MovesExecuted"}, dimensions: cluster,
			stat: "Sum", unit: "moves"},
		{title: "Replica changes per cluster", metrics: []string{"ReplicaChanges"}, dimensions: cluster, stat: "Sum", unit: "changes"},
		// Scale Up Needed carries the bound that proved it (all nodes hot, capacity, ...).
		{title: "Scale-up signals per cluster and bound", metrics: []string{"ScaleUpNeeded"},
			dimensions: []string{"Bound", telemetry.DimensionCluster}, stat: "Sum", unit: "signals"},
		{title: "Breaker refusals per cluster", metrics: []string{"BreakerOpen"}, dimensions: cluster, stat: "Sum", unit: "refusals"},
		// Tenants: one line per sandbox (and node), as the sandbox function measures them or, where
		// workload management enforces them, as the plugin's _wlm/stats reports them.
		{title: "Sandbox usage and limit per tenant, node and resource", metrics: []string{"SandboxUsage", "SandboxLimit"},
			dimensions: []string{telemetry.DimensionCluster, "Mode", telemetry.DimensionNode, "Resource", "Sandbox"}, stat: "Maximum", unit: "share of the node"},
		{title: "Requests cancelled or rejected per tenant", metrics: []string{"SandboxRequestsCancelled"},
			dimensions: []string{telemetry.DimensionCluster, "Sandbox"}, stat: "Sum", unit: "requests"},
		{title: "Hard sandboxes over their limit", metrics: []string{"SandboxOverLimit"},
			dimensions: []string{telemetry.DimensionCluster, "Sandbox"}, stat: "Maximum", unit: "over (1) or within (0)"},
		{title: "Workload management: highest usage and limit per tenant", metrics: []string{"WLMSandboxUsage", "WLMSandboxLimit"},
			dimensions: []string{telemetry.DimensionCluster, "Resource", "Sandbox"}, stat: "Maximum", unit: "share of the node"},
	}
}

// searchExpression is the CloudWatch SEARCH over one metric of shardwise's namespace with exactly
// the given dimensions: {namespace,Dim1,Dim2} MetricName="name".
func searchExpression(metric string, dimensions []string, stat string) string {
	schema := strings.Join(append([]string{telemetry.Namespace}, dimensions...), ",")
	return fmt.Sprintf(`SEARCH('{%s} MetricName="%s"', '%s', %d)`, schema, metric, stat, dashboardPeriodSeconds)
}

// dashboardBody renders the dashboard as CloudWatch's dashboard body JSON, with ${AWS::Region}
// and ${<threshold parameter>} left for Fn::Sub.
func dashboardBody() (string, error) {
	widgets := []any{}
	for i, g := range dashboardGraphs() {
		var metrics []any
		for j, m := range g.metrics {
			metrics = append(metrics, []any{map[string]any{
				"expression": searchExpression(m, g.dimensions, g.stat),
				"id":         fmt.Sprintf("m%d", j+1),
				"label":      m,
			}})
		}
		props := map[string]any{
			"title":   g.title,
			"view":    "timeSeries",
			"stacked": false,
			"region":  "${AWS::Region}",
			"period":  dashboardPeriodSeconds,
			"stat":    g.stat,
			"metrics": metrics,
			"yAxis":   map[string]any{"left": map[string]any{"label": g.unit, "min": 0, "showUnits": false}},
		}
		if g.threshold != "" {
			props["annotations"] = map[string]any{"horizontal": []any{map[string]any{
				"label": "alarm threshold (" + g.threshold + ")",
				// A number in the body: Fn::Sub puts the parameter's value here, unquoted.
				"value": "@@" + g.threshold + "@@",
			}}}
		}
		widgets = append(widgets, map[string]any{
			"type": "metric", "x": (i % 2) * dashboardWidgetWidth, "y": (i / 2) * dashboardWidgetHeight,
			"width": dashboardWidgetWidth, "height": dashboardWidgetHeight, "properties": props,
		})
	}
	b, err := json.Marshal(map[string]any{"widgets": widgets})
	if err != nil {
		return "", fmt.Errorf("dashboard body: %w", err)
	}
	body := string(b)
	for _, g := range dashboardGraphs() {
		if g.threshold != "" {
			body = strings.ReplaceAll(body, `"@@`+g.threshold+`@@"`, "${"+g.threshold+"}")
		}
	}
	return body, nil
}

func dashboard() (cloudformation.Resource, error) {
	body, err := dashboardBody()
	if err != nil {
		return nil, err
	}
	return &cloudwatch.Dashboard{DashboardBody: cloudformation.Sub(body)}, nil
}
