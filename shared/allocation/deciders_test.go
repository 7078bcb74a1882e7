package allocation

import (
	"testing"

	"github.com/shardwise/shardwise/shared/cluster"
)

func TestDeciders(t *testing.T) {
	base := func() *fixture {
		return newFixture("a", "b", "c").
			index("x", 10<<30, []float64{2, 1}, []string{"a", "b"}, []string{"a", "c"})
	}
	cases := []struct {
		name    string
		mutate  func(f *fixture, cfg *Config, hot map[string]bool)
		decider string
		shard   int
		from    string
		to      string
		want    Decision
	}{
		{"same shard: target holds a copy", nil, "same_shard", 0, "a", "b", No},
		{"same shard: target free", nil, "same_shard", 0, "a", "c", Yes},
		{"disk: over high watermark", func(f *fixture, _ *Config, _ map[string]bool) { f.node("c").DiskAvailableBytes = 15 << 30 }, "disk_watermark", 0, "a", "c", No},
		{"disk: room left", nil, "disk_watermark", 0, "a", "c", Yes},
		{"disk: absolute free-bytes watermark", func(f *fixture, _ *Config, _ map[string]bool) {
			f.s.Settings.DiskHighWatermarkFreeBytes = 95 << 30
		}, "disk_watermark", 0, "a", "c", No},
		{"filter: index excludes target", func(f *fixture, _ *Config, _ map[string]bool) {
			f.s.Indices[0].Filters.Exclude = map[string]string{"_name": "c"}
		}, "filter", 0, "a", "c", No},
		{"filter: index require attribute missing", func(f *fixture, _ *Config, _ map[string]bool) {
			f.s.Indices[0].Filters.Require = map[string]string{"box": "hot"}
		}, "filter", 0, "a", "c", No},
		{"filter: cluster include wildcard matches", func(f *fixture, _ *Config, _ map[string]bool) {
			f.s.Settings.Filters.Include = map[string]string{"_name": "c*"}
		}, "filter", 0, "a", "c", Yes},
		{"awareness: zone already holds its share", func(f *fixture, _ *Config, _ map[string]bool) {
			f.s.Settings.AwarenessAttributes = []string{"zone"}
			f.node("a").Attributes = map[string]string{"zone": "z1"}
			f.node("b").Attributes = map[string]string{"zone": "z2"}
			f.node("c").Attributes = map[string]string{"zone": "z2"}
		}, "awareness", 0, "a", "c", No},
		{"exclusion: node drained", func(_ *fixture, cfg *Config, _ map[string]bool) { cfg.ExcludedNodes = []string{"c"} }, "node_exclusion", 0, "a", "c", No},
		{"heap: target near limit", func(f *fixture, _ *Config, _ map[string]bool) { f.node("c").HeapUsedBytes = 7 << 30 }, "heap", 0, "a", "c", No},
		{"heap: plenty", nil, "heap", 0, "a", "c", Yes},
		{"write load: target hot", func(_ *fixture, _ *Config, hot map[string]bool) { hot["id-c"] = true }, "write_load", 0, "a", "c", NotPreferred},
		{"write load: would pass allocation threshold", func(f *fixture, _ *Config, _ map[string]bool) { f.node("c").Write.Load = 6 }, "write_load", 0, "a", "c", NotPreferred},
		{"write load: room", nil, "write_load", 0, "a", "c", Yes},
		{"index balance: target at limit", func(f *fixture, _ *Config, _ map[string]bool) {
			f.index("y", 1<<30, []float64{0, 0, 0, 0, 0}, []string{"c"}, []string{"c"}, []string{"c"}, []string{"a"}, []string{"b"})
		}, "index_balance", 3, "a", "c", NotPreferred},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := base()
			cfg := DefaultConfig()
			hot := map[string]bool{}
			if tc.mutate != nil {
				tc.mutate(f, &cfg, hot)
			}
			s := f.snap()
			v := NewView(s, cfg, hot)
			index := "x"
			if tc.decider == "index_balance" {
				index = "y"
			}
			var c *cluster.Copy
			for i := range s.Copies {
				cp := &s.Copies[i]
				if cp.Index == index && cp.Shard == tc.shard && cp.Node == "id-"+tc.from {
					c = cp
				}
			}
			if c == nil {
				t.Fatalf("no copy %s[%d] on %s", index, tc.shard, tc.from)
			}
			target := s.NodeByRef(tc.to)
			for _, vd := range Evaluate(v, c, target) {
				if vd.Decider != tc.decider {
					continue
				}
				if vd.Decision != tc.want {
					t.Errorf("got %s want %s (%s)", vd.Decision, tc.want, vd.Reason)
				}
				if vd.Reason == "" {
					t.Error("verdict without reason")
				}
				return
			}
			t.Fatalf("decider %s did not answer", tc.decider)
		})
	}
}

func TestChooseOrder(t *testing.T) {
	mk := func(loads ...float64) []*cluster.Copy {
		var out []*cluster.Copy
		for i, l := range loads {
			out = append(out, &cluster.Copy{Index: "i", Shard: i, WriteLoad: l, LoadKnown: true})
		}
		return out
	}
	cases := []struct {
		name     string
		loads    []float64
		aloneHot float64
		want     []int // shard order
	}{
		{"[T,max) closest to T first, then (0,T), then max", []float64{4, 2.5, 3, 1.5, 0.5}, 100, []int{1, 2, 3, 4, 0}},
		{"shard hot alone is never chosen", []float64{8, 3, 1}, 7.2, []int{1, 2}},
		{"near-idle shards are never chosen", []float64{2, 0.01, 0}, 100, []int{0}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got []int
			for _, c := range ChooseOrder(mk(tc.loads...), tc.aloneHot, 0.05) {
				got = append(got, c.Copy.Shard)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %v want %v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("got %v want %v", got, tc.want)
				}
			}
		})
	}
}
