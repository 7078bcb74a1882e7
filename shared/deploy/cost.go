package deploy

import (
	"fmt"
	"math"
	"strings"

	"github.com/shardwise/shardwise/shared/telemetry"
)

// The cost table of docs/deploy.md: the template's own settings (function memory, the cadence,
// the alarms, the dashboard) and a simulate run's measured requests (Measure), priced at list
// prices. Every figure that is not measured or read from the template is a named assumption.

// Prices are us-east-1 list prices in USD, before free tiers.
type Prices struct {
	LambdaRequestPerMillion   float64 // per million invocations
	LambdaArmGBSecond         float64 // arm64 duration
	ExpressRequestPerMillion  float64 // Step Functions Express executions
	ExpressGBSecond           float64 // Express duration, billed at 64 MB at least
	DynamoWritePerMillion     float64 // on-demand write request units
	DynamoReadPerMillion      float64 // on-demand read request units
	DynamoStorageGBMonth      float64 // table storage
	DynamoPITRGBMonth         float64 // continuous backups
	EventsPerMillion          float64 // EventBridge custom events (64 KB each)
	CustomMetricMonth         float64 // CloudWatch custom metric, first 10,000
	LogsIngestGB              float64 // CloudWatch Logs ingestion (the EMF lines included)
	AlarmMonth                float64 // standard-resolution alarm, per metric it reads
	DashboardMonth            float64 // a dashboard past the account's first three
	StateMachineDurationFloor float64 // GB billed per Express execution (64 MB)
}

// ListPrices are the prices the checked-in table uses, as published on the AWS pricing pages for
// us-east-1 when it was written; they change, and a region's differ.
var ListPrices = Prices{
	LambdaRequestPerMillion: 0.20, LambdaArmGBSecond: 0.0000133334,
	ExpressRequestPerMillion: 1.00, ExpressGBSecond: 0.00001667, StateMachineDurationFloor: 0.0625,
	DynamoWritePerMillion: 0.625, DynamoReadPerMillion: 0.125, DynamoStorageGBMonth: 0.25, DynamoPITRGBMonth: 0.20,
	EventsPerMillion: 1.00, CustomMetricMonth: 0.30, LogsIngestGB: 0.50, AlarmMonth: 0.10, DashboardMonth: 3.00,
}

// Assumptions are the figures neither measured nor in the template.
type Assumptions struct {
	// Seconds each invocation runs, by function: ingest reads three APIs of the cluster, detect
	// plans, the others make a request or two.
	Seconds map[string]float64
	// PlatformLogBytes is what Lambda adds to the log per invocation (START, END, REPORT lines).
	PlatformLogBytes float64
	// EMFBytesPerDatapoint is the share of an EMF line one metric value takes.
	EMFBytesPerDatapoint float64
	// EventsPerCycle is the events a cycle publishes besides Moves Planned: Stats Ingested, and
	// Replicas Changed or Sandbox Enforced now and then.
	EventsPerCycle float64
}

// DefaultAssumptions are the checked-in table's.
var DefaultAssumptions = Assumptions{
	Seconds:              map[string]float64{"ingest": 1.0, "detect": 0.5, "move": 1.0, "replicas": 0.2, "sandbox": 0.2},
	PlatformLogBytes:     350,
	EMFBytesPerDatapoint: 150,
	EventsPerCycle:       1,
}

// cyclesPerMonth: a 30-day month of 30-second cycles.
const (
	minutesPerMonth = 60 * 24 * 30
	cyclesPerMonth  = minutesPerMonth * 60 / cadenceSeconds
)

// costLine is one row of the table: a monthly cost, fixed for the stack or per cluster.
type costLine struct {
	item, basis string
	perStack    float64
	perCluster  float64
}

// costLines prices the stack from the template and the measurement.
func costLines(m Measured, p Prices, a Assumptions) []costLine {
	cycles := float64(cyclesPerMonth)
	var lines []costLine
	// Lambda: every function once a cycle (move only on cycles whose plan has moves).
	var invocations, gbSeconds float64
	for _, fn := range functions() {
		n := cycles
		if fn.name == "move" {
			n *= m.MoveCycles
		}
		invocations += n
		gbSeconds += n * a.Seconds[fn.name] * float64(fn.memoryMB) / 1024
	}
	lines = append(lines,
		costLine{item: "Lambda requests", basis: fmt.Sprintf("%.0f invocations a cluster-month (ingest, detect, replicas, sandbox each cycle; move on %.0f%% of cycles)",
			invocations, 100*m.MoveCycles), perCluster: invocations / 1e6 * p.LambdaRequestPerMillion},
		costLine{item: "Lambda duration (arm64)", basis: fmt.Sprintf("%.0f GB-s a cluster-month at the template's memory sizes and the assumed run times", gbSeconds),
			perCluster: gbSeconds * p.LambdaArmGBSecond},
	)
	// The cadence: one Express execution a minute, 31 s at the 64 MB floor.
	executions := float64(minutesPerMonth)
	lines = append(lines,
		costLine{item: "Cadence executions", basis: fmt.Sprintf("%.0f a month, whatever the number of clusters", executions),
			perStack: executions / 1e6 * p.ExpressRequestPerMillion},
		costLine{item: "Cadence duration", basis: fmt.Sprintf("%.0f × %d s × %.4f GB", executions, cadenceSeconds+1, p.StateMachineDurationFloor),
			perStack: executions * float64(cadenceSeconds+1) * p.StateMachineDurationFloor * p.ExpressGBSecond},
	)
	// DynamoDB, measured.
	lines = append(lines,
		costLine{item: "DynamoDB writes", basis: fmt.Sprintf("%.1f write units a cycle (%.0f KiB written), measured", m.WriteUnits, m.WriteBytes/1024),
			perCluster: m.WriteUnits * cycles / 1e6 * p.DynamoWritePerMillion},
		costLine{item: "DynamoDB reads", basis: fmt.Sprintf("%.1f read units a cycle (strongly consistent), measured", m.ReadUnits),
			perCluster: m.ReadUnits * cycles / 1e6 * p.DynamoReadPerMillion},
		costLine{item: "DynamoDB storage and PITR", basis: fmt.Sprintf("%.1f MiB live at the end of the run (snapshots expire after snapshot_ttl)", m.StoredBytes/(1<<20)),
			perCluster: m.StoredBytes / (1 << 30) * (p.DynamoStorageGBMonth + p.DynamoPITRGBMonth)},
	)
	// EventBridge: Stats Ingested every cycle, Moves Planned on cycles with moves.
	events := cycles * (a.EventsPerCycle + m.MoveCycles)
	lines = append(lines, costLine{item: "EventBridge events", basis: fmt.Sprintf("%.0f a cluster-month", events),
		perCluster: events / 1e6 * p.EventsPerMillion})
	// CloudWatch: the custom metrics, the log lines with the EMF metrics in them.
	lines = append(lines, costLine{item: "Custom metrics", basis: fmt.Sprintf("%d series for this cluster (%d nodes), measured", len(m.Series), m.Nodes),
		perCluster: float64(len(m.Series)) * p.CustomMetricMonth})
	logBytes := cycles * (m.LogBytes + m.Datapoints*a.EMFBytesPerDatapoint + (invocations/cycles)*a.PlatformLogBytes)
	lines = append(lines, costLine{item: "Log ingestion", basis: fmt.Sprintf("%.2f GB a cluster-month: %.0f bytes of log lines and %.0f metric values a cycle, measured, and Lambda's own lines",
		logBytes/1e9, m.LogBytes, m.Datapoints), perCluster: logBytes / 1e9 * p.LogsIngestGB})
	// Alarms and dashboard, from the template: the stack's own alarms (the stale-samples query
	// reads one metric per cluster, counted with the cluster), and per AlarmClusters domain its
	// three correcting alarms, one metric each (the latency alarm reads the cluster's one
	// series), and AWS's recommended ones.
	stackAlarms := 2.0 // dead letters, cadence
	correcting := len(alarmResources()) / alarmSlots
	lines = append(lines,
		costLine{item: "Stack alarms and dashboard", basis: "2 alarms (dead letters, cadence) and the dashboard",
			perStack: stackAlarms*p.AlarmMonth + p.DashboardMonth},
		costLine{item: "Cluster alarms (AlarmClusters domain)", basis: fmt.Sprintf("stale samples (its metric in the stack's query), "+
			"%d correcting (write queue latency, write queue, rejections) and %d recommended (DomainHealthAlarms), a metric each",
			correcting, len(healthAlarms())), perCluster: float64(1+correcting+len(healthAlarms())) * p.AlarmMonth},
	)
	return lines
}

// CostTable renders the cost table as docs/deploy.md holds it.
func CostTable(m Measured, p Prices, a Assumptions) string {
	lines := costLines(m, p, a)
	var b strings.Builder
	fmt.Fprintf(&b, "Measured on `%s`: %d nodes, %d copies, %d cycles of %d s, dry run.\n\n", m.Scenario, m.Nodes, m.Copies, m.Cycles, cadenceSeconds)
	b.WriteString("| Item | Basis | Per stack a month | Per cluster a month |\n|---|---|---:|---:|\n")
	var stack, cluster float64
	for _, l := range lines {
		stack += l.perStack
		cluster += l.perCluster
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", l.item, l.basis, dollars(l.perStack), dollars(l.perCluster))
	}
	fmt.Fprintf(&b, "| **Total** | | **%s** | **%s** |\n\n", dollars(stack), dollars(cluster))
	b.WriteString("| Clusters | Stack a month | Per cluster a month |\n|---:|---:|---:|\n")
	for _, n := range []int{1, 20, 100} {
		total := stack + float64(n)*cluster
		fmt.Fprintf(&b, "| %d | %s | %s |\n", n, dollars(total), dollars(total/float64(n)))
	}
	b.WriteString("\nAssumptions, besides the measurement:\n\n")
	fmt.Fprintf(&b, "- Prices: us-east-1 list prices before free tiers (Lambda arm64 $%g per GB-s and $%.2f per million requests; "+
		"Step Functions Express $%.2f per million and $%g per GB-s at 64 MB; DynamoDB on-demand $%.3f per million writes and $%.3f per "+
		"million reads, $%.2f per GB-month stored and $%.2f for point-in-time recovery; EventBridge $%.2f per million events; "+
		"CloudWatch $%.2f per custom metric, $%.2f per GB of logs, $%.2f per alarm metric, $%.2f per dashboard).\n",
		p.LambdaArmGBSecond, p.LambdaRequestPerMillion, p.ExpressRequestPerMillion, p.ExpressGBSecond, p.DynamoWritePerMillion,
		p.DynamoReadPerMillion, p.DynamoStorageGBMonth, p.DynamoPITRGBMonth, p.EventsPerMillion, p.CustomMetricMonth, p.LogsIngestGB,
		p.AlarmMonth, p.DashboardMonth)
	fmt.Fprintf(&b, "- A 30-day month: %d cycles of %d s per cluster.\n", cyclesPerMonth, cadenceSeconds)
	fmt.Fprintf(&b, "- Run times: ingest %gs, detect %gs, move %gs, replicas %gs, sandbox %gs per invocation.\n",
		a.Seconds["ingest"], a.Seconds["detect"], a.Seconds["move"], a.Seconds["replicas"], a.Seconds["sandbox"])
	fmt.Fprintf(&b, "- Item sizes: each item's value plus its key and %d bytes of attributes; a read of up to 4 KiB is one unit, "+
		"a write of up to 1 KiB one unit.\n", itemOverheadBytes)
	fmt.Fprintf(&b, "- Logs: %.0f bytes of Lambda's own lines per invocation, %.0f bytes per EMF metric value; the functions log at info.\n",
		a.PlatformLogBytes, a.EMFBytesPerDatapoint)
	fmt.Fprintf(&b, "- Events: %.0f a cycle besides Moves Planned (Stats Ingested).\n", a.EventsPerCycle)
	fmt.Fprintf(&b, "- Every cluster is an `AlarmClusters` domain with `DomainHealthAlarms` on; without, take its alarm line off but "+
		"for the stale samples' $%.2f. The template has %d slots: past %d clusters, alarms of your own like them cost the same.\n",
		p.AlarmMonth, alarmSlots, alarmSlots)
	fmt.Fprintf(&b, "- Custom metrics: CloudWatch bills a metric for the hours it has data in. The counts published only when not zero "+
		"(%s) cost $%.2f each for a month of hours in which they happen, less when they happen in fewer hours; the series above are "+
		"those the run published, priced as a whole month each.\n", strings.Join(telemetry.Sparse(), ", "), p.CustomMetricMonth)
	b.WriteString("- Not counted: SQS and SNS (a few requests a month), the configuration parameter's reads, free tiers.\n")
	return b.String()
}

func dollars(v float64) string {
	if v == 0 {
		return "-"
	}
	if v < 0.01 {
		return "< $0.01"
	}
	return fmt.Sprintf("$%.2f", math.Round(v*100)/100)
}
