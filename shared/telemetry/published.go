package telemetry

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

// PublishedOnly passes on to s the values of the published metrics and drops the others.
func PublishedOnly(s Sink) Sink { return publishedOnly{s} }

type publishedOnly struct{ s Sink }

func (p publishedOnly) Add(name string, unit Unit, value float64, dims ...Dimension) {
	if published[name] {
		p.s.Add(name, unit, value, dims...)
	}
}
