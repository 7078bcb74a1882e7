package model_test

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/shardwise/shardwise/shared/sim"
	"github.com/shardwise/shardwise/shared/sim/model"
	"github.com/shardwise/shardwise/shared/sim/scenario"
	"github.com/shardwise/shardwise/shared/sim/simtest"
)

// twoNodes is a scenario of nodes a and b (b with nodeB's extra fields) and one index whose extra
// fields are ixExtra, its shards placed by placement, and events.
func twoNodes(nodeB, ixExtra, placement, events string) string {
	return fmt.Sprintf(`{"name": "lm", "seed": 1, "tick_seconds": 30, "duration_seconds": 600,
	  "cluster": {"builtin_balancer": false},
	  "nodes": [{"name": "a"}, {"name": "b"%s}],
	  "indices": [{"name": "x", "shard_bytes": 1048576%s, "placement": %s}],
	  "events": [%s]}`, nodeB, ixExtra, placement, events)
}

// nodeLoads steps once and returns each node's offered WRITE and search load.
func nodeLoads(s *sim.Sim) (write, search map[string]float64) {
	rep := s.Step()
	write, search = map[string]float64{}, map[string]float64{}
	for _, n := range rep.Nodes {
		write[n.Name] = n.WriteLoad
		search[n.Name] = n.SearchUtil * float64(s.ByName[n.Name].Search.Threads)
	}
	return write, search
}

func closeTo(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func TestSegmentReplicationLoad(t *testing.T) {
	tests := []struct {
		name          string
		replication   string
		wantA, wantB  float64 // a holds the primary, b the replica
		wantHeaviestB bool
	}{
		{"document replication: every copy indexes", `"document"`, 4, 4, true},
		{"absent is document replication", ``, 4, 4, true},
		{"segment replication: the replica pays its share", `"segment"`, 4, 4 * model.DefaultSegmentReplicaShare, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			extra := `, "primaries": 1, "replicas": 1, "write_load": {"kind": "constant", "value": 4}`
			if tc.replication != "" {
				extra += `, "replication_type": ` + tc.replication
			}
			s := simtest.MustSim(t, twoNodes("", extra, `[["a", "b"]]`, ""))
			w, _ := nodeLoads(s)
			if !closeTo(w["a"], tc.wantA) || !closeTo(w["b"], tc.wantB) {
				t.Errorf("WRITE load: a %v b %v, want %v and %v", w["a"], w["b"], tc.wantA, tc.wantB)
			}
		})
	}
}

func TestShardSearchWeights(t *testing.T) {
	tests := []struct {
		name         string
		weights      string
		wantA, wantB float64
	}{
		{"absent: even over the copies", ``, 2, 2},
		{"3:1 over the shards", `, "shard_search_weights": [3, 1]`, 3, 1},
		{"a shard with no searches", `, "shard_search_weights": [1, 0]`, 4, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			extra := `, "primaries": 2, "replicas": 0, "search_load": {"kind": "constant", "value": 4}` + tc.weights
			s := simtest.MustSim(t, twoNodes("", extra, `[["a"], ["b"]]`, ""))
			_, sr := nodeLoads(s)
			if !closeTo(sr["a"], tc.wantA) || !closeTo(sr["b"], tc.wantB) {
				t.Errorf("search load: a %v b %v, want %v and %v", sr["a"], sr["b"], tc.wantA, tc.wantB)
			}
		})
	}
}

func TestSetShardWeightsMovesTheWriteLoad(t *testing.T) {
	extra := `, "primaries": 2, "replicas": 0, "write_load": {"kind": "constant", "value": 4}`
	events := `{"at_seconds": 60, "kind": "set_shard_weights", "index": "x", "weights": [3, 1]},
	  {"at_seconds": 120, "kind": "set_shard_weights", "index": "x", "weights": [0, 2]}`
	s := simtest.MustSim(t, twoNodes("", extra, `[["a"], ["b"]]`, events))
	want := [][2]float64{{2, 2}, {2, 2}, {3, 1}, {3, 1}, {0, 4}}
	for tick, wt := range want {
		w, _ := nodeLoads(s)
		if !closeTo(w["a"], wt[0]) || !closeTo(w["b"], wt[1]) {
			t.Errorf("tick %d: WRITE load a %v b %v, want %v and %v", tick+1, w["a"], w["b"], wt[0], wt[1])
		}
	}
}

func TestShardBytesGrowth(t *testing.T) {
	// 1 GiB shards growing 360 MiB an hour: 3 MiB a 30 s tick.
	extra := fmt.Sprintf(`, "primaries": 1, "replicas": 1, "shard_bytes_growth_per_hour": %d`, 360<<20)
	doc := strings.Replace(twoNodes("", extra, `[["a", "b"]]`, ""), `"shard_bytes": 1048576`, `"shard_bytes": 1073741824`, 1)
	s := simtest.MustSim(t, doc)
	for tick := 1; tick <= 4; tick++ {
		rep := s.Step()
		want := int64(1<<30) + int64(tick)*(3<<20)
		for _, n := range rep.Nodes {
			if n.DiskUsedBytes != want {
				t.Errorf("tick %d: %s uses %d bytes, want %d", tick, n.Name, n.DiskUsedBytes, want)
			}
		}
	}
}

func TestShardGrowthReachesTheWatermark(t *testing.T) {
	// a's 10 GiB disk holds a 8 GiB shard growing 1 GiB a tick: past 90 % (9 GiB) the allocator
	// moves it to c, as OpenSearch's disk threshold decider does.
	doc := fmt.Sprintf(`{"name": "grow", "seed": 1, "tick_seconds": 30, "duration_seconds": 600,
	  "cluster": {"builtin_balancer": false, "recovery_bytes_per_second": 1099511627776},
	  "nodes": [{"name": "a", "disk_bytes": %d}, {"name": "c"}],
	  "indices": [{"name": "x", "primaries": 1, "replicas": 0, "shard_bytes": %d,
	    "shard_bytes_growth_per_hour": %d, "placement": [["a"]]}]}`, 10<<30, 8<<30, 120<<30)
	s := simtest.MustSim(t, doc)
	simtest.StepN(s, 3)
	if got := simtest.CopyOn(s, "x", 0, "c"); got != "STARTED" && got != "TARGET" {
		t.Errorf("after growing past the watermark: x[0] on c is %q, want it moved there", got)
	}
}

func TestNodeSpeed(t *testing.T) {
	// One shard on each node at 2 threads; b's tasks take 1.5× as long.
	extra := `, "primaries": 2, "replicas": 0, "write_load": {"kind": "constant", "value": 4}`
	s := simtest.MustSim(t, twoNodes(`, "speed": 1.5`, extra, `[["a"], ["b"]]`, ""))
	w, _ := nodeLoads(s)
	if !closeTo(w["a"], 2) || !closeTo(w["b"], 3) {
		t.Errorf("WRITE load: a %v b %v, want 2 and 3 (1.5 × 2)", w["a"], w["b"])
	}
	// Both serve the same 40 tasks a second; each of b's takes 75 ms.
	for shard, node := range []string{"a", "b"} {
		_, body := simtest.CallJSON(t, s, "GET", "/x/_stats?level=shards", "")
		e := simtest.Dig(body, "indices", "x", "shards", fmt.Sprint(shard), 0, "indexing")
		total, _ := simtest.Dig(e, "index_total").(float64)
		ms, _ := simtest.Dig(e, "index_time_in_millis").(float64)
		want := map[string]float64{"a": 50, "b": 75}[node]
		// Served work is split in floating point: a task either way of 1200 is rounding.
		if math.Abs(total-1200) > 1 || math.Abs(ms/total-want) > 0.1 {
			t.Errorf("%s: %v tasks taking %v ms each, want 1200 taking %v", node, total, ms/total, want)
		}
	}
	if _, err := scenario.ParseScenario([]byte(twoNodes(`, "speed": -1`, `, "primaries": 1, "replicas": 0`, `[["a"]]`, ""))); err == nil || !strings.Contains(err.Error(), "nodes[1].speed") {
		t.Errorf("a negative speed: got %v, want an error naming nodes[1].speed", err)
	}
}

func TestHotCopyRecovery(t *testing.T) {
	// One 5 GiB copy moves from a to b at 40 MiB/s: 128 s of files, then the replay of what it
	// indexed meanwhile, unless the scenario turns the model off.
	const copySeconds = 128.0
	tests := []struct {
		name  string
		write float64
		// field is the scenario's cluster.translog_replay_speed, "" when absent.
		field string
		// speed is the replay speed the run must use: 0 leaves the replay out.
		speed float64
	}{
		{"idle: the files alone", 0, "", model.DefaultTranslogReplaySpeed},
		{"written at half a thread, at the default speed", 0.5, "", model.DefaultTranslogReplaySpeed},
		{"written at one thread, at the default speed", 1, "", model.DefaultTranslogReplaySpeed},
		{"written at three threads, at the default speed", 3, "", model.DefaultTranslogReplaySpeed},
		{"written at three threads, at the scenario's speed", 3, `, "translog_replay_speed": 0.6`, 0.6},
		{"written, with the replay turned off", 3, `, "translog_replay_speed": 0`, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			doc := fmt.Sprintf(`{"name": "hot", "seed": 1, "tick_seconds": 30, "duration_seconds": 100000,
			  "cluster": {"builtin_balancer": false, "recovery_bytes_per_second": %d%s},
			  "nodes": [{"name": "a"}, {"name": "b"}],
			  "indices": [{"name": "x", "primaries": 1, "replicas": 0, "shard_bytes": %d,
			    "write_load": {"kind": "constant", "value": %v}, "placement": [["a"]]}]}`, 40<<20, tc.field, 5<<30, tc.write)
			s := simtest.MustSim(t, doc)
			simtest.MustReroute(t, s, simtest.Commands(simtest.Move("x", 0, "a", "b")))
			total := copySeconds
			if tc.speed > 0 {
				total += tc.write * copySeconds / tc.speed
			}
			wantTick := int(math.Ceil(total/30 - 1e-9))
			got := 0
			for tick := 1; tick <= 3000 && got == 0; tick++ {
				rep := s.Step()
				if simtest.CopyOn(s, "x", 0, "b") == "STARTED" {
					got = tick
					continue
				}
				// Until the replay ends the load stays on a and the copy takes both disks.
				for _, n := range rep.Nodes {
					if n.Name == "b" && (n.WriteLoad != 0 || n.DiskUsedBytes != 5<<30) {
						t.Fatalf("tick %d: b carries %v threads and %d bytes while the copy recovers", tick, n.WriteLoad, n.DiskUsedBytes)
					}
				}
			}
			if got != wantTick {
				t.Errorf("STARTED on b after tick %d, want %d (%.0f s)", got, wantTick, total)
			}
		})
	}
}

func TestHotspotEpisodesAndSearchMeasures(t *testing.T) {
	// One node of 8 WRITE threads: load 10 for 3 ticks builds a backlog that drains over the next
	// 3 at load 6 (hot 5 ticks: 150 s); load 10 for one tick at 300 s is a second episode of 30 s.
	doc := `{"name": "eps", "seed": 1, "tick_seconds": 30, "duration_seconds": 420,
	  "cluster": {"builtin_balancer": false},
	  "node_defaults": {"search_threads": 2},
	  "nodes": [{"name": "a"}],
	  "indices": [{"name": "w", "primaries": 1, "replicas": 0, "shard_bytes": 1,
	    "write_load": {"kind": "series", "points": [[0, 10], [89, 10], [90, 6], [299, 6], [300, 10], [329, 10], [330, 6]]},
	    "search_load": {"kind": "step", "before": 1, "after": 3, "at_seconds": 360}}]}`
	s := simtest.MustSim(t, doc)
	simtest.StepN(s, 14)
	r := s.Result()
	if r.Hotspots != 2 || r.HotspotSecondsP50 != 30 || r.HotspotSecondsMax != 150 || r.TimeToCorrectSeconds != 150 {
		t.Errorf("episodes: got %d, p50 %v s, max %v s, time to correct %v s; want 2, 30, 150, 150",
			r.Hotspots, r.HotspotSecondsP50, r.HotspotSecondsMax, r.TimeToCorrectSeconds)
	}
	// Search: 1 thread of 2 busy until 360 s (Erlang C wait 6.7 ms), then 3 of 2: the backlog's
	// wait passes 1 s in the first saturated tick and stays there for the last two ticks.
	if r.SearchHotNodeSeconds != 60 {
		t.Errorf("search hot node-seconds: got %v, want 60", r.SearchHotNodeSeconds)
	}
	wantP50 := (model.SearchTaskSeconds + model.ErlangWait(2, 1, model.SearchTaskSeconds)) * 1000
	if math.Abs(r.P50SearchLatencyMs-wantP50) > 1e-9 || !(r.P99SearchLatencyMs > 1000) {
		t.Errorf("search latency: p50 %v ms, p99 %v ms; want p50 %v and p99 over 1000", r.P50SearchLatencyMs, r.P99SearchLatencyMs, wantP50)
	}
}

func TestLoadModelValidation(t *testing.T) {
	base := func(ixExtra, events string) string {
		return twoNodes("", `, "primaries": 2, "replicas": 0`+ixExtra, `[["a"], ["b"]]`, events)
	}
	tests := []struct {
		name, doc, wantPath string
	}{
		{"unknown replication type", base(`, "replication_type": "SEGMENT"`, ""), "indices[0].replication_type"},
		{"search weights per primary", base(`, "shard_search_weights": [1]`, ""), "indices[0].shard_search_weights"},
		{"negative search weight", base(`, "shard_search_weights": [1, -1]`, ""), "indices[0].shard_search_weights[1]"},
		{"negative growth", base(`, "shard_bytes_growth_per_hour": -5`, ""), "indices[0].shard_bytes_growth_per_hour"},
		{"set_shard_weights of an unknown index", base("", `{"at_seconds": 30, "kind": "set_shard_weights", "index": "y", "weights": [1, 1]}`), "events[0].index"},
		{"set_shard_weights without weights", base("", `{"at_seconds": 30, "kind": "set_shard_weights", "index": "x"}`), "events[0].weights"},
		{"set_shard_weights of the wrong count", base("", `{"at_seconds": 30, "kind": "set_shard_weights", "index": "x", "weights": [1, 1, 1]}`), "events[0].weights"},
		{"weights on another event", base("", `{"at_seconds": 30, "kind": "node_leave", "node": "a", "weights": [1, 1]}`), "events[0].weights"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := scenario.ParseScenario([]byte(tc.doc))
			if err == nil || !strings.HasPrefix(err.Error(), tc.wantPath+":") {
				t.Errorf("got %v, want an error naming %s", err, tc.wantPath)
			}
		})
	}
}

// TestLiveCountersMoveWithinATick reads sim serve's counters at points of a tick on a fake wall
// clock: they move in proportion to the time gone, and the next tick starts where this one ended.
func TestLiveCountersMoveWithinATick(t *testing.T) {
	// 4 WRITE threads of work: 80 tasks a second, 2,400 a tick, 120,000 ms of indexing time.
	s := simtest.MustSim(t, twoNodes("", `, "primaries": 1, "replicas": 0, "write_load": {"kind": "constant", "value": 4}`, `[["a"]]`, ""))
	wall := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s.Live.Wall = func() time.Time { return wall }
	s.StartLive(10 * time.Second) // a 30 s tick in 10 s of wall time
	read := func() (completed, indexMS float64, at time.Time) {
		t.Helper()
		_, nodes := simtest.CallJSON(t, s, "GET", "/_nodes/a/stats/thread_pool", "")
		for _, n := range simtest.Dig(nodes, "nodes").(map[string]any) {
			completed, _ = simtest.Dig(n, "thread_pool", "write", "completed").(float64)
		}
		_, stats := simtest.CallJSON(t, s, "GET", "/x/_stats", "")
		indexMS, _ = simtest.Dig(stats, "_all", "primaries", "indexing", "index_time_in_millis").(float64)
		return completed, indexMS, s.Now()
	}
	c0, ms0, t0 := read()
	wall = wall.Add(5 * time.Second)
	c1, ms1, t1 := read()
	wall = wall.Add(5 * time.Second)
	c2, ms2, t2 := read()
	if c0 != 0 || ms0 != 0 || !t0.Equal(s.Start) {
		t.Errorf("at the tick's start: completed %v, index time %v ms at %v; want 0, 0 at the start", c0, ms0, t0)
	}
	if math.Abs(c1-1200) > 1 || math.Abs(ms1-60000) > 1 || t1.Sub(t0) != 15*time.Second {
		t.Errorf("half a tick in: completed %v, index time %v ms, %v later; want 1200, 60000, 15s", c1, ms1, t1.Sub(t0))
	}
	if c2 != 2400 || ms2 != 120000 || t2.Sub(t0) != 30*time.Second {
		t.Errorf("at the tick's end: completed %v, index time %v ms, %v later; want 2400, 120000, 30s", c2, ms2, t2.Sub(t0))
	}
	s.LiveStep()
	c3, ms3, t3 := read()
	if c3 != c2 || ms3 != ms2 || !t3.Equal(t2) {
		t.Errorf("the next tick's start: completed %v, index time %v at %v; want where the last ended, %v, %v at %v", c3, ms3, t3, c2, ms2, t2)
	}
	// A client reading less often than once a tick sees the same line further on.
	wall = wall.Add(10 * time.Second)
	s.LiveStep()
	wall = wall.Add(2500 * time.Millisecond)
	c4, _, t4 := read()
	if math.Abs(c4-(4800+600)) > 1 || t4.Sub(t0) != 67500*time.Millisecond {
		t.Errorf("a quarter into the third tick: completed %v at %v; want 5400 at 1m7.5s", c4, t4.Sub(t0))
	}
}
