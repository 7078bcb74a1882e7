package allocation

import (
	"fmt"
	"slices"
	"testing"

	"github.com/shardwise/shardwise/shared/cluster"
)

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
			if !slices.Equal(got, tc.want) {
				t.Fatalf("got %v want %v", got, tc.want)
			}
		})
	}
}

// Equal distance from T within a tier: the smaller copy, then by index and shard so the order is
// stable, and a replica before its primary. Idle copies come last when nothing excludes them, and a
// copy whose load is unknown is never chosen.
func TestChooseOrderTies(t *testing.T) {
	type cp struct {
		index   string
		shard   int
		primary bool
		load    float64
		size    int64
		unknown bool
	}
	cases := []struct {
		name   string
		copies []cp
		minLd  float64
		want   []string
		tiers  []int
	}{
		{"as far from T: the smaller copy first, it is cheaper to move",
			[]cp{{"x", 0, true, 4, 1, false}, {"x", 1, true, 2, 9, false}, {"x", 2, true, 2, 1, false}}, 0.05,
			[]string{"x2", "x1", "x0"}, []int{1, 1, 3}},
		{"same load and size: by index, then shard",
			[]cp{{"b", 0, true, 2, 5, false}, {"a", 1, true, 2, 5, false}, {"a", 0, true, 2, 5, false}, {"c", 0, true, 4, 5, false}}, 0.05,
			[]string{"a0", "a1", "b0", "c0"}, []int{1, 1, 1, 3}},
		{"a replica before its primary",
			[]cp{{"x", 0, true, 2, 5, false}, {"x", 0, false, 2, 5, false}, {"y", 0, true, 4, 5, false}}, 0.05,
			[]string{"x0r", "x0", "y0"}, []int{1, 1, 3}},
		{"idle copies last when the minimum load lets them in",
			[]cp{{"x", 0, true, 0, 1, false}, {"x", 1, true, 4, 5, false}, {"x", 2, true, 1, 5, false}}, 0,
			[]string{"x2", "x1", "x0"}, []int{2, 3, 4}},
		{"a copy whose load is unknown is never chosen",
			[]cp{{"x", 0, true, 2, 1, true}, {"x", 1, true, 4, 5, false}}, 0.05,
			[]string{"x1"}, []int{3}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var in []*cluster.Copy
			for _, c := range tc.copies {
				in = append(in, &cluster.Copy{Index: c.index, Shard: c.shard, Primary: c.primary, WriteLoad: c.load, SizeBytes: c.size, LoadKnown: !c.unknown})
			}
			var got []string
			var tiers []int
			for _, c := range ChooseOrder(in, 100, tc.minLd) {
				name := fmt.Sprintf("%s%d", c.Copy.Index, c.Copy.Shard)
				if !c.Copy.Primary {
					name += "r"
				}
				got, tiers = append(got, name), append(tiers, c.Tier)
			}
			if !slices.Equal(got, tc.want) || !slices.Equal(tiers, tc.tiers) {
				t.Errorf("got %v tiers %v, want %v tiers %v", got, tiers, tc.want, tc.tiers)
			}
		})
	}
}
