package model_test

import (
	"strings"
	"testing"

	"github.com/shardwise/shardwise/shared/sim/simtest"
)

// A replica lost with its node waits the index's index.unassigned.node_left.delayed_timeout when the
// index sets one, OpenSearch's 1m otherwise; a bad value is refused.
func TestNodeLeftDelayedTimeout(t *testing.T) {
	const doc = `{"name": "delay", "seed": 1, "tick_seconds": 30, "duration_seconds": 1800,
  "cluster": {"builtin_balancer": false},
  "nodes": [{"name": "a"}, {"name": "b"}, {"name": "c"}],
  "indices": [{"name": "x", "primaries": 1, "replicas": 1, "shard_bytes": 1048576, "placement": [["a", "b"]]}],
  "events": [{"at_seconds": 60, "kind": "node_leave", "node": "b"}]}`
	tests := []struct {
		name    string
		setting string // PUT x/_settings body, "" for none
		// assigned after this many ticks past the leave, unassigned the tick before
		wantTicks int
	}{
		{"the default, 1m", "", 1},
		{"the index's 5m", `{"index":{"unassigned":{"node_left":{"delayed_timeout":"5m"}}}}`, 9},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := simtest.MustSim(t, doc)
			if tc.setting != "" {
				if code, body := simtest.Call(t, s, "PUT", "/x/_settings", tc.setting); code != 200 {
					t.Fatalf("PUT x/_settings: %d %s", code, body)
				}
			}
			simtest.StepN(s, 3) // the leave is applied at the start of tick 3 (60 s); the allocator runs at each tick's end
			replicaOnC := func() bool { return simtest.CopyOn(s, "x", 0, "c") != "" }
			for i := 1; i < tc.wantTicks; i++ {
				simtest.StepN(s, 1)
				if replicaOnC() {
					t.Fatalf("replica reallocated %d ticks after the leave, want not before %d", i, tc.wantTicks)
				}
			}
			simtest.StepN(s, 1)
			if !replicaOnC() {
				t.Errorf("replica not reallocated %d ticks after the leave", tc.wantTicks)
			}
		})
	}
	s := simtest.MustSim(t, doc)
	code, body := simtest.Call(t, s, "PUT", "/x/_settings", `{"index":{"unassigned":{"node_left":{"delayed_timeout":"soon"}}}}`)
	if code != 400 || !strings.Contains(body, "time value") {
		t.Errorf("PUT a bad delayed_timeout: got %d %s, want 400 naming the time value", code, body)
	}
}
