package replicas

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

func TestCopies(t *testing.T) {
	tests := []struct {
		name string
		L    float64
		N, S int
		X    float64
		want int
	}{
		{"article: 4 nodes, 2 primaries, 80 % of load", 0.8, 4, 2, 0.5, 4},
		{"capped at N", 1, 4, 1, 0.5, 4},
		{"exact multiple does not round up", 0.5, 4, 2, 0.5, 2},
		{"float error does not add a copy", 0.1 + 0.2, 10, 3, 1, 1},
		{"just over a multiple rounds up", 0.51, 4, 2, 0.5, 3},
		{"no load, no copies", 0, 4, 2, 0.5, 0},
		{"share above 1 clamped", 3, 4, 2, 0.5, 4},
		{"negative share clamped", -1, 4, 2, 0.5, 0},
		{"no primaries", 0.8, 4, 0, 0.5, 0},
		{"no nodes", 0.8, 0, 2, 0.5, 0},
		{"no threshold", 0.8, 4, 2, 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Copies(tc.L, tc.N, tc.S, tc.X); got != tc.want {
				t.Errorf("Copies(%v, %d, %d, %v) got %d, want %d", tc.L, tc.N, tc.S, tc.X, got, tc.want)
			}
		})
	}
}

// idx is an index with known load and unlimited disk.
func idx(name string, primaries, replicas, nodes int, load float64) IndexInput {
	return IndexInput{Name: name, Primaries: primaries, Replicas: replicas, EligibleNodes: nodes,
		SearchLoad: load, LoadKnown: true, ExtraCopiesAllowed: -1}
}

// pooled gives an index the search pools of the nodes holding its copies (threads and busy
// threads) and the eligible nodes' pool size.
func pooled(i IndexInput, threads int, busy, perNode float64) IndexInput {
	i.PoolThreads, i.PoolLoad, i.NodeSearchThreads = threads, busy, perNode
	return i
}

func TestDecideOneCycle(t *testing.T) {
	type want struct {
		kind                   string
		from, to, desired      int
		min, max               int
		setting, reasonContain string
	}
	tests := []struct {
		name   string
		cfg    func(*Config)
		in     []IndexInput
		mem    map[string]Memory
		want   want // for in[0]
		change bool
	}{
		{
			name:   "article example: L=0.8, N=4, S=2 wants 4 copies, 3 replicas",
			in:     []IndexInput{idx("hot", 2, 1, 4, 0.8), idx("cold", 2, 1, 4, 0.2)},
			want:   want{kind: KindScaleUp, from: 1, to: 3, desired: 3, min: 1, max: 3, reasonContain: "N) = 4 with L=0.800"},
			change: true,
		},
		{
			name: "first-seen replicas are the minimum",
			in:   []IndexInput{idx("a", 1, 2, 5, 0.01), idx("b", 1, 1, 5, 1)},
			want: want{kind: KindHold, from: 2, to: 2, desired: 2, min: 2, max: 4},
		},
		{
			name: "stored first-seen minimum, not the current count",
			in:   []IndexInput{idx("a", 1, 3, 5, 0.01), idx("b", 1, 1, 5, 1)},
			mem:  map[string]Memory{"a": {Index: "a", FirstSeenReplicas: 2}},
			want: want{kind: KindPendingScaleDown, from: 3, to: 3, desired: 2, min: 2, max: 4},
		},
		{
			name:   "first seen with 0 replicas raised to DefaultMin even when idle",
			in:     []IndexInput{idx("a", 1, 0, 3, 0)},
			want:   want{kind: KindScaleUp, from: 0, to: 1, desired: 1, min: 1, max: 2, reasonContain: "idle"},
			change: true,
		},
		{
			name: "override min replaces the first-seen minimum",
			cfg:  func(c *Config) { c.Overrides = []Override{{Pattern: "a*", Min: intp(0)}} },
			in:   []IndexInput{idx("a", 1, 2, 5, 0), idx("b", 1, 1, 5, 1)},
			want: want{kind: KindPendingScaleDown, from: 2, to: 2, desired: 0, min: 0, max: 4, reasonContain: `override "a*"`},
		},
		{
			name:   "override max clamps a scale-up",
			cfg:    func(c *Config) { c.Overrides = []Override{{Pattern: "hot", Max: intp(2)}} },
			in:     []IndexInput{idx("hot", 2, 1, 4, 0.8), idx("cold", 2, 1, 4, 0.2)},
			want:   want{kind: KindScaleUp, from: 1, to: 2, desired: 2, min: 1, max: 2},
			change: true,
		},
		{
			name:   "override max above N-1 does not raise the ceiling",
			cfg:    func(c *Config) { c.Overrides = []Override{{Pattern: "hot", Max: intp(9)}} },
			in:     []IndexInput{idx("hot", 1, 1, 3, 1)},
			want:   want{kind: KindScaleUp, from: 1, to: 2, desired: 2, min: 1, max: 2},
			change: true,
		},
		{
			name: "a single node allows no replica: the minimum yields to N-1",
			in:   []IndexInput{idx("a", 1, 0, 1, 1)},
			want: want{kind: KindHold, from: 0, to: 0, desired: 0, min: 0, max: 0},
		},
		{
			name: "a node gone within delayed_timeout: the cap waits",
			in:   []IndexInput{idx("a", 1, 3, 3, 1)},
			mem:  map[string]Memory{"a": {Index: "a", FirstSeenReplicas: 3}},
			want: want{kind: KindPendingCap, from: 3, to: 3, desired: 2, min: 2, max: 2, reasonContain: "delayed_timeout is 1m0s"},
		},
		{
			name:   "a node gone longer than delayed_timeout: cap now, and say so",
			in:     []IndexInput{idx("a", 1, 3, 3, 1)},
			mem:    map[string]Memory{"a": {Index: "a", FirstSeenReplicas: 3, OverSince: t0.Add(-61 * time.Second)}},
			want:   want{kind: KindCap, from: 3, to: 2, desired: 2, min: 2, max: 2, reasonContain: "longer than index.unassigned.node_left.delayed_timeout (1m0s"},
			change: true,
		},
		{
			name: "the index's own delayed_timeout replaces the default",
			in: []IndexInput{func() IndexInput {
				i := idx("a", 1, 3, 3, 1)
				i.DelayedTimeout, i.DelayedTimeoutSet = 5*time.Minute, true
				return i
			}()},
			mem:  map[string]Memory{"a": {Index: "a", FirstSeenReplicas: 3, OverSince: t0.Add(-2 * time.Minute)}},
			want: want{kind: KindPendingCap, from: 3, to: 3, desired: 2, min: 2, max: 2, reasonContain: "5m0s (the index's setting)"},
		},
		{
			name: "delayed_timeout 0 caps at once",
			in: []IndexInput{func() IndexInput {
				i := idx("a", 1, 3, 3, 1)
				i.DelayedTimeoutSet = true
				return i
			}()},
			want:   want{kind: KindCap, from: 3, to: 2, desired: 2, min: 2, max: 2},
			change: true,
		},
		{
			name: "an override lowering the maximum caps at once: no node left",
			cfg:  func(c *Config) { c.Overrides = []Override{{Pattern: "a", Max: intp(1)}} },
			in:   []IndexInput{idx("a", 1, 3, 5, 1)},
			want: want{kind: KindCap, from: 3, to: 1, desired: 1, min: 1, max: 1, reasonContain: "without waiting"}, change: true,
		},
		{
			name: "need: a hot share of a nearly idle pool gets no copy (the issue's reviews 1→2 at 3 of 52 threads)",
			in:   []IndexInput{pooled(idx("reviews", 2, 1, 4, 3), 52, 3, 13), pooled(idx("users", 1, 1, 4, 2), 26, 2, 13)},
			// 3 threads over its floor's 4 nodes (52 threads) is 6 %: little absolute load.
			want: want{kind: KindHold, from: 1, to: 1, desired: 1, min: 1, max: 3, reasonContain: "little absolute load"},
		},
		{
			name: "need: the formula's ceiling is held back while the pools holding the copies are under 50 %",
			// 12 nodes of 8 threads; the index's floor spans 2 nodes: 10/16 = 62 % would be busy,
			// but its copies sit on 6 nodes (48 threads) only 40 % busy.
			in:   []IndexInput{pooled(idx("a", 1, 5, 12, 10), 48, 19.2, 8), idx("b", 1, 1, 12, 2)},
			mem:  map[string]Memory{"a": {Index: "a", FirstSeenReplicas: 1}},
			want: want{kind: KindHold, from: 5, to: 5, desired: 5, min: 1, max: 11, reasonContain: "only 40% busy, under 50%"},
		},
		{
			name: "need: busy pools give the go-ahead up to the formula's ceiling",
			in: []IndexInput{func() IndexInput {
				i := pooled(idx("hot", 2, 1, 12, 40), 32, 32, 8)
				i.WriteLoadPerCopy, i.CopyBytes = 0.25, 1<<30
				return i
			}(), idx("cold", 1, 1, 12, 4)},
			// L = 40/44, N=12, S=2: ceil(0.909×12/1) = 11 copies.
			want:   want{kind: KindScaleUp, from: 1, to: 10, desired: 10, min: 1, max: 11, reasonContain: "costs 18 shard copies indexing 4.50 WRITE threads and 18.0 GiB to copy; each copy serves 1.82 busy search threads instead of 10.00"},
			change: true,
		},
		{
			name: "need: pool utilization unknown, the formula alone decides",
			in:   []IndexInput{pooled(idx("hot", 2, 1, 4, 40), 0, 0, 13), idx("cold", 2, 1, 4, 10)},
			want: want{kind: KindScaleUp, from: 1, to: 3, desired: 3, min: 1, max: 3}, change: true,
		},
		{
			name: "quiet: an index whose floor would be under 50 % busy wants its floor whatever its share",
			in:   []IndexInput{pooled(idx("a", 2, 3, 8, 5), 64, 6, 8), idx("b", 1, 1, 8, 0.5)},
			mem:  map[string]Memory{"a": {Index: "a", FirstSeenReplicas: 1}},
			want: want{kind: KindPendingScaleDown, from: 3, to: 3, desired: 1, min: 1, max: 7, reasonContain: "under the 50%"},
		},
		{
			name: "placement: total_shards_per_node lowers the maximum below N-1",
			in: []IndexInput{func() IndexInput {
				i := idx("hot", 2, 1, 6, 1)
				i.MaxCopies, i.MaxWhy = 3, "index.routing.allocation.total_shards_per_node=1 on 6 nodes"
				return i
			}()},
			want:   want{kind: KindScaleUp, from: 1, to: 2, desired: 2, min: 1, max: 2, reasonContain: "3 copies assignable per shard: index.routing.allocation.total_shards_per_node=1"},
			change: true,
		},
		{
			name: "placement: search replicas never above what can be assigned",
			cfg:  func(c *Config) { c.UseSearchReplicas = true },
			in: []IndexInput{func() IndexInput {
				i := idx("hot", 1, 1, 4, 1)
				i.MaxCopies, i.MaxWhy = 2, "cluster.routing.allocation.same_shard.host: 2 hosts"
				return i
			}()},
			want:   want{kind: KindScaleUp, from: 0, to: 2, desired: 2, min: 0, max: 2, setting: SettingSearchReplicas},
			change: true,
		},
		{
			name: "excluded pattern skipped",
			cfg:  func(c *Config) { c.Overrides = []Override{{Pattern: "logs-*", Exclude: true}} },
			in:   []IndexInput{idx("logs-1", 1, 1, 4, 1)},
			want: want{kind: KindSkip, from: 1, to: 1, desired: 1, reasonContain: `"logs-*"`},
		},
		{
			name: "system index skipped",
			in:   []IndexInput{idx(".kibana", 1, 0, 4, 1)},
			want: want{kind: KindSkip, from: 0, to: 0, desired: 0, reasonContain: "system or hidden"},
		},
		{
			name: "hidden index skipped",
			in:   []IndexInput{func() IndexInput { i := idx("h", 1, 0, 4, 1); i.Hidden = true; return i }()},
			want: want{kind: KindSkip, from: 0, to: 0, desired: 0, reasonContain: "system or hidden"},
		},
		{
			name: "no primaries skipped",
			in:   []IndexInput{idx("broken", 0, 1, 4, 1)},
			want: want{kind: KindSkip, from: 1, to: 1, desired: 1, reasonContain: "S=0"},
		},
		{
			name: "disk refuses 4 extra copies when it takes 3",
			in: []IndexInput{func() IndexInput {
				i := idx("hot", 2, 1, 4, 0.8)
				i.ExtraCopiesAllowed = 3
				return i
			}(), idx("cold", 2, 1, 4, 0.2)},
			want: want{kind: KindHold, from: 1, to: 1, desired: 3, min: 1, max: 3, reasonContain: "would add 4 shard copies but the disk takes only 3"},
		},
		{
			name: "disk takes exactly the extra copies",
			in: []IndexInput{func() IndexInput {
				i := idx("hot", 2, 1, 4, 0.8)
				i.ExtraCopiesAllowed = 4
				return i
			}(), idx("cold", 2, 1, 4, 0.2)},
			want:   want{kind: KindScaleUp, from: 1, to: 3, desired: 3, min: 1, max: 3},
			change: true,
		},
		{
			name: "disk limit does not block a cap",
			in: []IndexInput{func() IndexInput {
				i := idx("a", 1, 4, 3, 1)
				i.ExtraCopiesAllowed = 0
				return i
			}()},
			mem:    map[string]Memory{"a": {Index: "a", FirstSeenReplicas: 4, OverSince: t0.Add(-time.Hour)}},
			want:   want{kind: KindCap, from: 4, to: 2, desired: 2, min: 2, max: 2},
			change: true,
		},
		{
			name:   "search replicas: copies are search replicas, up to N",
			cfg:    func(c *Config) { c.UseSearchReplicas = true },
			in:     []IndexInput{idx("hot", 1, 1, 3, 0.5), idx("cold", 1, 1, 3, 0.5)},
			want:   want{kind: KindScaleUp, from: 0, to: 3, desired: 3, min: 0, max: 3, setting: SettingSearchReplicas},
			change: true,
		},
		{
			name: "search replicas may fall to 0",
			cfg:  func(c *Config) { c.UseSearchReplicas = true },
			in: []IndexInput{func() IndexInput {
				i := idx("a", 1, 1, 3, 0)
				i.SearchReplicas = 2
				return i
			}(), idx("b", 1, 1, 3, 1)},
			want: want{kind: KindPendingScaleDown, from: 2, to: 2, desired: 0, min: 0, max: 3, setting: SettingSearchReplicas},
		},
		{
			name: "search replicas capped at N search nodes",
			cfg:  func(c *Config) { c.UseSearchReplicas = true },
			in: []IndexInput{func() IndexInput {
				i := idx("a", 1, 1, 2, 1)
				i.SearchReplicas = 3
				return i
			}()},
			mem:    map[string]Memory{"a": {Index: "a", FirstSeenReplicas: 1, OverSince: t0.Add(-time.Hour)}},
			want:   want{kind: KindCap, from: 3, to: 2, desired: 2, min: 0, max: 2, setting: SettingSearchReplicas},
			change: true,
		},
		{
			name: "idle cluster holds a hot share at its floor",
			in:   []IndexInput{idx("hot", 2, 1, 4, 0.04), idx("cold", 2, 1, 4, 0.001)},
			want: want{kind: KindHold, from: 1, to: 1, desired: 1, min: 1, max: 3, reasonContain: "idle"},
		},
		{
			name: "no load known anywhere is not idle: nothing advances",
			in: []IndexInput{func() IndexInput { i := idx("hot", 2, 3, 4, 0); i.LoadKnown = false; return i }(),
				func() IndexInput { i := idx("cold", 2, 1, 4, 0); i.LoadKnown = false; return i }()},
			mem:  map[string]Memory{"hot": {Index: "hot", FirstSeenReplicas: 1}},
			want: want{kind: KindHold, from: 3, to: 3, desired: 3, min: 1, max: 3, reasonContain: "not known"},
		},
		{
			name: "idle cluster: an index above its floor starts its scale-down window",
			in:   []IndexInput{idx("hot", 2, 3, 4, 0.04), idx("cold", 2, 1, 4, 0.001)},
			mem:  map[string]Memory{"hot": {Index: "hot", FirstSeenReplicas: 1}},
			want: want{kind: KindPendingScaleDown, from: 3, to: 3, desired: 1, min: 1, max: 3, reasonContain: "idle"},
		},
		{
			name: "unknown load holds",
			in: []IndexInput{func() IndexInput {
				i := idx("hot", 2, 1, 4, 5)
				i.LoadKnown = false
				return i
			}(), idx("cold", 2, 1, 4, 0.2)},
			want: want{kind: KindHold, from: 1, to: 1, desired: 1, min: 1, max: 3, reasonContain: "not known"},
		},
		{
			name: "excluded and system load count in the total",
			cfg:  func(c *Config) { c.Overrides = []Override{{Pattern: "big", Exclude: true}} },
			in:   []IndexInput{idx("a", 1, 1, 4, 1), idx("big", 1, 1, 4, 2), idx(".sys", 1, 1, 4, 1)},
			// L = 1/4 → ceil(0.25 × 4 / 0.5) = 2 copies → 1 replica.
			want: want{kind: KindHold, from: 1, to: 1, desired: 1, min: 1, max: 3, reasonContain: "L=0.250"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			if tc.cfg != nil {
				tc.cfg(&cfg)
			}
			if err := cfg.Validate(); err != nil {
				t.Fatalf("config: %v", err)
			}
			changes, all, _ := Decide(t0, tc.in, tc.mem, cfg)
			if len(all) != len(tc.in) {
				t.Fatalf("got %d decisions, want one per index (%d)", len(all), len(tc.in))
			}
			d := all[0]
			w := tc.want
			if w.setting == "" {
				w.setting = SettingReplicas
			}
			got := want{d.Kind, d.From, d.To, d.Desired, d.Min, d.Max, d.Setting, w.reasonContain}
			if d.Kind == KindSkip {
				got.min, got.max = w.min, w.max
			}
			if got != w {
				t.Errorf("decision got %+v, want %+v (reason %q)", got, w, d.Reason)
			}
			if !strings.Contains(d.Reason, w.reasonContain) {
				t.Errorf("reason %q does not contain %q", d.Reason, w.reasonContain)
			}
			inChanges := false
			for _, c := range changes {
				if c.Index == d.Index {
					inChanges = true
				}
			}
			if inChanges != tc.change {
				t.Errorf("in changes got %v, want %v", inChanges, tc.change)
			}
		})
	}
}

// phase holds the subject index's share of the search load and its eligible nodes until the given
// offset from t0. The total load is 1 busy thread, or 0.01 (idle) when idle is set.
type phase struct {
	until time.Duration
	share float64
	nodes int
	idle  bool
}

type change struct {
	at       time.Duration
	kind     string
	from, to int
}

// run drives Decide every 30 s over phases for index "a" (1 primary) next to an excluded ballast
// index "b" carrying the rest of the load, applying every change, and returns a's changes.
func run(t *testing.T, cfg Config, replicas int, mem map[string]Memory, phases []phase) []change {
	t.Helper()
	cfg.Overrides = append(cfg.Overrides, Override{Pattern: "b", Exclude: true})
	if err := cfg.Validate(); err != nil {
		t.Fatalf("config: %v", err)
	}
	var got []change
	at := time.Duration(0)
	for _, p := range phases {
		for ; at < p.until; at += 30 * time.Second {
			total := 1.0
			if p.idle {
				total = 0.01
			}
			in := []IndexInput{idx("a", 1, replicas, p.nodes, p.share*total), idx("b", 1, 1, p.nodes, (1-p.share)*total)}
			var changes []Decision
			changes, _, mem = Decide(t0.Add(at), in, mem, cfg)
			for _, c := range changes {
				if c.Index == "a" {
					got = append(got, change{at, c.Kind, c.From, c.To})
					replicas = c.To
				}
			}
		}
	}
	return got
}

func TestDecideOverTime(t *testing.T) {
	// N=4, S=1, X=0.5: copies = ceil(8L), so share 0.1 → target 1 (the minimum), 0.3 → 2, 0.5 → 3.
	first1 := map[string]Memory{"a": {Index: "a", FirstSeenReplicas: 1}}
	oscillation := func() []phase {
		var ps []phase
		for at := 10 * time.Minute; at <= 3*time.Hour; at += 10 * time.Minute {
			share := 0.5
			if at/(10*time.Minute)%2 == 0 {
				share = 0.1
			}
			ps = append(ps, phase{at, share, 4, false})
		}
		return ps
	}()
	tests := []struct {
		name     string
		replicas int
		mem      map[string]Memory
		phases   []phase
		want     []change
	}{
		{
			name:     "scale-up is immediate",
			replicas: 1, mem: first1,
			phases: []phase{{5 * time.Minute, 0.5, 4, false}},
			want:   []change{{0, KindScaleUp, 1, 3}},
		},
		{
			name:     "scale-down waits 30 min and goes to the window's highest target",
			replicas: 3, mem: first1,
			phases: []phase{{10 * time.Minute, 0.1, 4, false}, {20 * time.Minute, 0.3, 4, false}, {35 * time.Minute, 0.1, 4, false}},
			want:   []change{{30 * time.Minute, KindScaleDown, 3, 2}},
		},
		{
			name:     "after a scale-down the next one comes once the lower target has held its own 30 min",
			replicas: 3, mem: first1,
			phases: []phase{{10 * time.Minute, 0.1, 4, false}, {20 * time.Minute, 0.3, 4, false}, {61 * time.Minute, 0.1, 4, false}},
			// Target 2 was last seen at 19m30s; 1 held from 20m, so 2→1 comes at 50m.
			want: []change{{30 * time.Minute, KindScaleDown, 3, 2}, {50 * time.Minute, KindScaleDown, 2, 1}},
		},
		{
			name:     "a dip that recovers before 30 min resets the pending scale-down",
			replicas: 3, mem: first1,
			phases: []phase{{20 * time.Minute, 0.1, 4, false}, {20*time.Minute + 30*time.Second, 0.5, 4, false}, {50 * time.Minute, 0.1, 4, false}},
			want:   nil,
		},
		{
			name:     "after the reset the lower target needs its own 30 min",
			replicas: 3, mem: first1,
			phases: []phase{{20 * time.Minute, 0.1, 4, false}, {20*time.Minute + 30*time.Second, 0.5, 4, false}, {55 * time.Minute, 0.1, 4, false}},
			want:   []change{{50*time.Minute + 30*time.Second, KindScaleDown, 3, 1}},
		},
		{
			name:     "an idle spell advances the pending scale-down",
			replicas: 3, mem: first1,
			phases: []phase{{20 * time.Minute, 0.1, 4, false}, {21 * time.Minute, 0.1, 4, true}, {45 * time.Minute, 0.1, 4, false}},
			want:   []change{{30 * time.Minute, KindScaleDown, 3, 1}},
		},
		{
			name:     "an idle night after a spike returns to the floor 30 min after the spike",
			replicas: 1, mem: first1,
			phases: []phase{{20 * time.Minute, 0.5, 4, false}, {2 * time.Hour, 0.5, 4, true}},
			want:   []change{{0, KindScaleUp, 1, 3}, {50 * time.Minute, KindScaleDown, 3, 1}},
		},
		{
			name:     "oscillation with a 20 min period over 3 h changes once",
			replicas: 1, mem: first1,
			phases: oscillation,
			want:   []change{{0, KindScaleUp, 1, 3}},
		},
		{
			name:     "node loss caps once gone longer than delayed_timeout, mid-window",
			replicas: 3, mem: first1,
			phases: []phase{{5 * time.Minute, 0.5, 4, false}, {10 * time.Minute, 0.5, 3, false}},
			want:   []change{{6 * time.Minute, KindCap, 3, 2}},
		},
		{
			name:     "a node back within delayed_timeout costs nothing",
			replicas: 3, mem: first1,
			phases: []phase{{5 * time.Minute, 0.5, 4, false}, {6 * time.Minute, 0.5, 3, false}, {10 * time.Minute, 0.5, 4, false}},
			want:   nil,
		},
		{
			name:     "after a cap the lower target's window counts from before it",
			replicas: 3, mem: first1,
			phases: []phase{{10 * time.Minute, 0.1, 4, false}, {45 * time.Minute, 0.1, 3, false}},
			want:   []change{{11 * time.Minute, KindCap, 3, 2}, {30 * time.Minute, KindScaleDown, 2, 1}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mem := map[string]Memory{}
			for k, v := range tc.mem {
				mem[k] = v
			}
			got := run(t, DefaultConfig(), tc.replicas, mem, tc.phases)
			if len(got) != len(tc.want) {
				t.Fatalf("changes got %+v, want %+v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("change %d got %+v, want %+v", i, got[i], tc.want[i])
				}
			}
		})
	}
}

func TestDecideLimitAndOrder(t *testing.T) {
	now := t0
	pending := func(name string) Memory {
		return Memory{Index: name, FirstSeenReplicas: 1, LowerSince: now.Add(-31 * time.Minute), WindowMax: 1}
	}
	cfgBase := DefaultConfig()
	cfgBase.Overrides = []Override{
		{Pattern: "ballast", Exclude: true}, {Pattern: "paused", Exclude: true},
		{Pattern: "up-1", Min: intp(2)}, {Pattern: "up-2", Min: intp(3)}, {Pattern: "up-3", Min: intp(4)},
	}
	// The ballast carries all the load, so every other index's target is its minimum.
	in := []IndexInput{
		idx("ballast", 1, 1, 6, 10),
		idx("down-b", 1, 2, 6, 0), idx("up-1", 1, 1, 6, 0), idx("cap-a", 1, 3, 3, 0), idx("down-a", 1, 3, 6, 0),
		idx("up-3", 1, 1, 6, 0), idx("cap-b", 1, 5, 3, 0), idx("up-2", 1, 1, 6, 0), idx("paused", 1, 3, 6, 0),
	}
	mem := map[string]Memory{
		"down-a": pending("down-a"), "down-b": pending("down-b"),
		"cap-a":  {Index: "cap-a", FirstSeenReplicas: 1, OverSince: now.Add(-time.Hour)},
		"cap-b":  {Index: "cap-b", FirstSeenReplicas: 1, OverSince: now.Add(-time.Hour)},
		"gone":   {Index: "gone", FirstSeenReplicas: 4},
		"paused": {Index: "paused", FirstSeenReplicas: 2, LowerSince: now.Add(-time.Hour), WindowMax: 2},
	}
	tests := []struct {
		name     string
		k        int
		order    []string
		deferred []string
	}{
		{"limit 5: caps, then largest scale-ups", 5, []string{"cap-b", "cap-a", "up-3", "up-2", "up-1"}, []string{"down-b", "down-a"}},
		{"limit 7: scale-downs last, largest first", 7, []string{"cap-b", "cap-a", "up-3", "up-2", "up-1", "down-a", "down-b"}, nil},
		{"limit 1: the biggest cap alone", 1, []string{"cap-b"}, []string{"down-b", "up-1", "cap-a", "down-a", "up-3", "up-2"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := cfgBase
			cfg.MaxIndicesPerCycle = tc.k
			if err := cfg.Validate(); err != nil {
				t.Fatalf("config: %v", err)
			}
			changes, all, next := Decide(now, in, mem, cfg)
			var order []string
			for _, c := range changes {
				order = append(order, c.Index)
			}
			if strings.Join(order, ",") != strings.Join(tc.order, ",") {
				t.Errorf("changes got %v, want %v", order, tc.order)
			}
			var deferred []string
			for _, d := range all {
				if d.Deferred {
					deferred = append(deferred, d.Index)
					if !strings.Contains(d.Reason, "deferred") {
						t.Errorf("%s: reason %q does not say deferred", d.Index, d.Reason)
					}
				}
			}
			if strings.Join(deferred, ",") != strings.Join(tc.deferred, ",") {
				t.Errorf("deferred got %v, want %v", deferred, tc.deferred)
			}
			for _, name := range deferred {
				m := next[name]
				if !m.LastChange.IsZero() {
					t.Errorf("%s deferred but memory records a change at %v", name, m.LastChange)
				}
				if strings.HasPrefix(name, "down-") && !m.LowerSince.Equal(now.Add(-31*time.Minute)) {
					t.Errorf("%s deferred: LowerSince got %v, want the pending window kept", name, m.LowerSince)
				}
			}
			for _, c := range changes {
				if m := next[c.Index]; !m.LastChange.Equal(now) || m.LastReason != c.Reason {
					t.Errorf("%s applied: memory got %+v, want LastChange %v and its reason", c.Index, m, now)
				}
			}
			if _, ok := next["gone"]; ok {
				t.Errorf("memory of an index no longer present was kept")
			}
			if _, ok := next["ballast"]; ok {
				t.Errorf("memory created for an excluded index")
			}
			if m := next["paused"]; m.FirstSeenReplicas != 2 || !m.LowerSince.IsZero() {
				t.Errorf("excluded index memory got %+v, want first-seen 2 kept and no pending scale-down", m)
			}
		})
	}
}

func TestMemoryJSON(t *testing.T) {
	tests := []struct {
		name   string
		mem    Memory
		absent []string
	}{
		{"no pending scale-down", Memory{Index: "a", FirstSeenReplicas: 1}, []string{"lower_since", "window_max", "last_change", "last_reason", "recent", "over_since"}},
		{"pending and changed", Memory{Index: "a", FirstSeenReplicas: 2, LowerSince: t0, WindowMax: 1, LastChange: t0.Add(-time.Hour), LastReason: "r",
			Recent: []Seen{{At: t0.Add(-time.Minute).UTC(), Target: 2}, {At: t0.UTC(), Target: 1}}, OverSince: t0.Add(-time.Hour)}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, err := json.Marshal(tc.mem)
			if err != nil {
				t.Fatalf("marshal: %v", err)
			}
			for _, k := range tc.absent {
				if strings.Contains(string(b), `"`+k+`"`) {
					t.Errorf("%s present in %s, want omitted", k, b)
				}
			}
			var back Memory
			if err := json.Unmarshal(b, &back); err != nil {
				t.Fatalf("unmarshal %s: %v", b, err)
			}
			if !reflect.DeepEqual(back, tc.mem) {
				t.Errorf("round trip got %+v, want %+v", back, tc.mem)
			}
		})
	}
}

// BenchmarkDecide runs one cycle over 5,000 indices, about a 30,000-shard cluster.
func BenchmarkDecide(b *testing.B) {
	cfg := DefaultConfig()
	in := make([]IndexInput, 5000)
	mem := make(map[string]Memory, len(in))
	for i := range in {
		name := fmt.Sprintf("logs-%05d", i)
		in[i] = idx(name, 1+i%5, 1+i%3, 6, float64(i%97)/10)
		mem[name] = Memory{Index: name, FirstSeenReplicas: 1, LowerSince: t0.Add(-time.Duration(i%40) * time.Minute), WindowMax: 1}
	}
	b.ReportAllocs()
	for b.Loop() {
		Decide(t0, in, mem, cfg)
	}
}
