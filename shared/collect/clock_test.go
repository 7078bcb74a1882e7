package collect

import (
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/shardwise/shardwise/shared/cluster"
	"github.com/shardwise/shardwise/shared/opensearch"
	"github.com/shardwise/shardwise/shared/sim"
)

// Copy loads follow the nodes' stats clock, not the collector's. Between two reads the simulator
// advances 10 minutes while the collector's clock advances 10 seconds, as `sim serve --speed 60`
// does: measured on the collector's clock every copy read 60 times too hot and was discarded as
// implausible.
func TestReadRatesOnTheNodesClock(t *testing.T) {
	sc, err := sim.LoadScenario(filepath.Join("..", "..", "scenarios", "write-hotspot.json"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := sim.New(sc, sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for range 25 { // past the write spike at 600 s
		s.Step()
	}
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	client, err := opensearch.New(t.Context(), opensearch.Config{URLs: []string{srv.URL}})
	if err != nil {
		t.Fatal(err)
	}
	collectorNow := time.Date(2026, 12, 1, 6, 0, 0, 0, time.UTC)
	api := New(client, func() time.Time { return collectorNow })
	first, err := api.Read(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for range 20 { // 600 s of the simulator's time
		s.Step()
	}
	collectorNow = collectorNow.Add(10 * time.Second)
	second, err := api.Read(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	snap := cluster.Derive(&first.Counters, second)
	total := 0.0
	for _, c := range snap.Copies {
		if !c.Active() {
			continue
		}
		if !c.LoadKnown {
			t.Errorf("%s[%d] on %s: load unknown, want it measured over the nodes' 600 s", c.Index, c.Shard, c.Node)
		}
		total += c.WriteLoad
	}
	threads := 0
	for _, n := range snap.Nodes {
		threads += n.Write.Threads
	}
	// The cluster indexes with at most every WRITE thread it has; 60 times the truth would not fit.
	if total <= 0 || total > float64(threads) {
		t.Errorf("write load of all copies: got %.2f threads, want between 0 and the cluster's %d", total, threads)
	}
}
