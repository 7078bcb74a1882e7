package opensearch

import (
	"reflect"
	"testing"
)

// _wlm/stats names its counters total_* and its groups workload_groups from 3.1, and bare names
// under query_groups before; both read the same.
func TestDecodeWLMStats(t *testing.T) {
	tests := []struct {
		name string
		body string
		want []WLMGroupStats
	}{
		{"3.1 and later", `{"_nodes":{"total":1},"cluster_name":"c","n1":{"workload_groups":{"g1":{"total_completions":5,"total_rejections":2,"total_cancellations":3,"cpu":{"current_usage":0.25,"cancellations":3,"rejections":2},"memory":{"current_usage":0.1}}}}}`,
			[]WLMGroupStats{{Node: "n1", Group: "g1", Completions: 5, Rejections: 2, Cancellations: 3, CPU: 0.25, Memory: 0.1}}},
		{"before 3.1", `{"cluster_name":"c","n2":{"query_groups":{"b":{"completions":1,"rejections":0,"failures":0,"total_cancellations":0,"cpu":{"current_usage":0}},"a":{"completions":7,"rejections":1,"cpu":{"current_usage":0.5}}}}}`,
			[]WLMGroupStats{{Node: "n2", Group: "a", Completions: 7, Rejections: 1, CPU: 0.5}, {Node: "n2", Group: "b", Completions: 1}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := decodeWLMStats([]byte(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}
