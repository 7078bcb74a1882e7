package runner

import "testing"

// Outcomes lists where a run's hot node-cycles went, the most frequent first and ties by name, as
// simulate prints it.
func TestResultOutcomes(t *testing.T) {
	cases := []struct {
		name     string
		outcomes map[string]int
		want     string
	}{
		{"no plan had a hot node", nil, ""},
		{"one outcome", map[string]int{"planned": 2}, "planned 2"},
		{"the most frequent first", map[string]int{"planned": 2, "relief-in-flight": 148, "relief-settling": 3},
			"relief-in-flight 148, relief-settling 3, planned 2"},
		{"ties by name", map[string]int{"throttled": 4, "deferred": 4, "planned": 9}, "planned 9, deferred 4, throttled 4"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := (Result{HotCyclesByOutcome: tc.outcomes}).Outcomes(); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
