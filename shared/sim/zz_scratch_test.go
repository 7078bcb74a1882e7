package sim

import (
	"encoding/json"
	"fmt"
	"testing"
)

func TestScratchRun(t *testing.T) {
	for _, name := range []string{"steady", "write-hotspot", "search-spike"} {
		sc, err := LoadScenario("/work/shared/scenarios/" + name + ".json")
		if err != nil {
			t.Fatal(err)
		}
		s, err := New(sc, Options{})
		if err != nil {
			t.Fatal(err)
		}
		for !s.Done() {
			r := s.Step()
			if r.Tick%4 == 0 || r.Tick < 3 {
				line := fmt.Sprintf("%s t=%d %s reloc=%d init=%d unas=%d bal=%d |", name, r.Tick, r.Health, r.Relocating, r.Initializing, r.Unassigned, r.BuiltinRelocations)
				for _, n := range r.Nodes {
					line += fmt.Sprintf(" %s:u%.2f q%.2f s%d", n.Name, n.WriteUtil, n.QueueLatencySeconds, n.Shards)
				}
				fmt.Println(line)
			}
		}
		b, _ := json.Marshal(s.Result())
		fmt.Println(string(b))
	}
}
