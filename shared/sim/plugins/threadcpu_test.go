package plugins_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/shardwise/shardwise/shared/sim/simtest"
)

// A node's search threads share its processors: on noisy-neighbor-wlm-node's one node (2
// processors, 4 search threads) every running tenant search, the flood's included, shows the tasks
// API at most 0.4 of a core over its life (SearchCPUShare 0.8 × 2/4), as a real 2-core node with
// 4 busy search threads kept each of them at about half a core. Its life counts its queue wait, so
// the flood's tasks, queued behind each other, show less.
func TestThreadsShareProcessors(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "..", "scenarios", "noisy-neighbor-wlm-node.json"))
	if err != nil {
		t.Fatal(err)
	}
	s := simtest.MustSim(t, string(doc))
	simtest.StepN(s, 121)
	_, body := simtest.CallJSON(t, s, "GET", "/_tasks?detailed=true&actions=*search*", "")
	nodes, _ := body["nodes"].(map[string]any)
	running, peak := 0, 0.0
	for _, n := range nodes {
		tasks, _ := simtest.Dig(n, "tasks").(map[string]any)
		for id, raw := range tasks {
			tk := raw.(map[string]any)
			if tk["action"] != "indices:data/read/search[phase/query]" {
				continue
			}
			cpu, _ := simtest.Dig(tk, "resource_stats", "total", "cpu_time_in_nanos").(float64)
			life, _ := tk["running_time_in_nanos"].(float64)
			if cpu == 0 || life == 0 {
				continue
			}
			running++
			rate := cpu / life
			peak = max(peak, rate)
			if rate > 0.4+1e-9 {
				t.Errorf("task %s: %.3f of a core over its life, want at most 0.4 with 4 search threads on 2 processors", id, rate)
			}
		}
	}
	if running == 0 {
		t.Fatalf("no running search task 1 s into the flood: %v", body)
	}
	t.Logf("%d running shard-level searches, the busiest at %.3f of a core over its life", running, peak)
}
