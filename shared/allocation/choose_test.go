package allocation

import (
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
