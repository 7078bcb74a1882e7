package telemetry

import "slices"

// CloudWatch bills every custom metric (each name and set of dimension values) a month, about
// USD 0.30, and a per-node metric is one per node. So the functions publish only the metrics the
// deployed stack's dashboard or alarms read (shared/deploy's TestPublishedMetricsAreRead holds the
// two lists together); the rest of what the engine measures stays in its log lines.
var published = map[string]bool{
	"HotNodes":                   true,
	MetricWriteQueueLatency:      true,
	"MovesPlanned":               true,
	"MovesExecuted":              true,
	"ReplicaChanges":             true,
	"ScaleUpNeeded":              true,
	"BreakerOpen":                true,
	MetricSecondsSinceLastSample: true,
	// The tenants' graphs and the hard sandboxes' alarm, sent only for clusters with sandboxes.
	"SandboxUsage":             true,
	"SandboxLimit":             true,
	"SandboxRequestsCancelled": true,
	"SandboxOverLimit":         true,
	"WLMSandboxUsage":          true,
	"WLMSandboxLimit":          true,
}

// sparse are the published counts whose zero says only that nothing happened: they are published
// when not zero. CloudWatch bills a metric for the hours it receives data in, so a count sent as 0
// every cycle costs a metric a month for a graph of zeros, while sent only when something happened
// it costs the hours something did. A graph's gap reads as none; no alarm reads these.
var sparse = map[string]bool{
	"HotNodes":                 true,
	"MovesPlanned":             true,
	"MovesExecuted":            true,
	"ReplicaChanges":           true,
	"SandboxRequestsCancelled": true,
}

// Sparse lists the published metrics sent only when not zero, sorted.
func Sparse() []string {
	out := make([]string, 0, len(sparse))
	for name := range sparse {
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

// Published lists the metrics the functions publish.
func Published() []string {
	out := make([]string, 0, len(published))
	for name := range published {
		out = append(out, name)
	}
	return out
}

// Sink receives metric values.
type Sink interface {
	Add(name string, unit Unit, value float64, dims ...Dimension)
}

// PublishedOnly passes on to s the values of the published metrics and drops the others, and the
// zeros of the sparse ones.
func PublishedOnly(s Sink) Sink { return publishedOnly{s} }

type publishedOnly struct{ s Sink }

func (p publishedOnly) Add(name string, unit Unit, value float64, dims ...Dimension) {
	if published[name] && (value != 0 || !sparse[name]) {
		p.s.Add(name, unit, value, dims...)
	}
}
