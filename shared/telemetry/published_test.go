package telemetry

import (
	"slices"
	"testing"
)

type recordingSink struct{ got []string }

func (r *recordingSink) Add(name string, _ Unit, _ float64, _ ...Dimension) {
	r.got = append(r.got, name)
}

// PublishedOnly passes what the stack reads and drops the rest: unread metrics, and the zeros of
// the counts whose zero says only that nothing happened (each would be a billed metric of zeros).
func TestPublishedOnly(t *testing.T) {
	tests := []struct {
		name   string
		metric string
		value  float64
		want   bool
	}{
		{name: "the alarmed latency, zero included", metric: MetricWriteQueueLatency, value: 0, want: true},
		{name: "the sample age", metric: MetricSecondsSinceLastSample, value: 30, want: true},
		{name: "hot nodes", metric: "HotNodes", value: 1, want: true},
		{name: "no hot nodes", metric: "HotNodes", value: 0, want: false},
		{name: "moves planned", metric: "MovesPlanned", value: 3, want: true},
		{name: "no moves planned", metric: "MovesPlanned", value: 0, want: false},
		{name: "no replica changes", metric: "ReplicaChanges", value: 0, want: false},
		{name: "a hard sandbox within its limit, alarmed on", metric: "SandboxOverLimit", value: 0, want: true},
		{name: "read by nothing", metric: "IngestSeconds", value: 1.5, want: false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := &recordingSink{}
			PublishedOnly(r).Add(tc.metric, UnitCount, tc.value, Dimension{Name: DimensionCluster, Value: "prod"})
			if got := slices.Equal(r.got, []string{tc.metric}); got != tc.want {
				t.Errorf("%s = %v: published %v, want %v", tc.metric, tc.value, got, tc.want)
			}
		})
	}
}
