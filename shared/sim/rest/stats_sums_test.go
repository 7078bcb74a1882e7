package rest_test

import (
	"math"
	"testing"

	"github.com/shardwise/shardwise/shared/sim/simtest"
)

// TestStatsSums: _stats sums each index's copies (primaries and total) and all indices (_all) only
// when the answer reaches them (lazySums). Wherever they are written, at every level and with or
// without filter_path, they are the same figures, and they are the sums of the copies the shards
// level lists: each copy's counter is written rounded down, so a sum lies between the sum of those
// and that plus the number of copies.
func TestStatsSums(t *testing.T) {
	s := simtest.MustSim(t, simtest.RerouteScenario)
	simtest.StepN(s, 4)
	indexTotal := func(d any, path ...any) (float64, bool) {
		v, ok := simtest.Dig(d, append(path, "indexing", "index_total")...).(float64)
		return v, ok
	}
	_, full := simtest.CallJSON(t, s, "GET", "/_stats?level=shards", "")

	// The sums against the copies the answer lists.
	var allP, allT float64
	for _, name := range []string{"x", "y"} {
		var sumP, sumT, nP, nT float64
		shards, _ := simtest.Dig(full, "indices", name, "shards").(map[string]any)
		for _, copies := range shards {
			for _, c := range copies.([]any) {
				v, ok := indexTotal(c)
				if !ok {
					t.Fatalf("%s: a copy without indexing.index_total: %v", name, c)
				}
				sumT, nT = sumT+v, nT+1
				if simtest.Dig(c, "routing", "primary") == true {
					sumP, nP = sumP+v, nP+1
				}
			}
		}
		for _, tt := range []struct {
			section  string
			sum, n   float64
			wantMore bool
		}{{"primaries", sumP, nP, false}, {"total", sumT, nT, false}} {
			got, ok := indexTotal(full, "indices", name, tt.section)
			if !ok || got < tt.sum || got > tt.sum+tt.n {
				t.Errorf("%s %s index_total = %v (present %v), want in [%v, %v]", name, tt.section, got, ok, tt.sum, tt.sum+tt.n)
			}
		}
		p, _ := indexTotal(full, "indices", name, "primaries")
		tot, _ := indexTotal(full, "indices", name, "total")
		allP, allT = allP+p, allT+tot
	}
	if p, _ := indexTotal(full, "indices", "x", "primaries"); p <= 0 {
		t.Fatalf("x primaries index_total = %v: the scenario should have indexed", p)
	}
	if p, tot := must(indexTotal(full, "indices", "x", "primaries")), must(indexTotal(full, "indices", "x", "total")); tot <= p {
		t.Errorf("x: total %v not above primaries %v, though every copy indexes", tot, p)
	}
	for _, tt := range []struct {
		section string
		sum     float64
	}{{"primaries", allP}, {"total", allT}} {
		if got, ok := indexTotal(full, "_all", tt.section); !ok || got < tt.sum || got > tt.sum+2 {
			t.Errorf("_all %s index_total = %v (present %v), want in [%v, %v]", tt.section, got, ok, tt.sum, tt.sum+2)
		}
	}

	// The same figures wherever they are written; none where filter_path leaves them out.
	paths := [][]any{{"_all", "primaries"}, {"_all", "total"}, {"indices", "x", "primaries"}, {"indices", "x", "total"}, {"indices", "y", "total"}}
	for _, tt := range []struct {
		target string
		want   []bool // per path: written
	}{
		{"/_stats?level=indices", []bool{true, true, true, true, true}},
		{"/_stats?level=cluster", []bool{true, true, false, false, false}},
		{"/_stats?level=shards&filter_path=indices.*.total", []bool{false, false, false, true, true}},
		{"/_stats?level=shards&filter_path=_all.primaries,indices.x.primaries", []bool{true, false, true, false, false}},
		{"/_stats?level=shards&filter_path=indices.*.shards,_shards", []bool{false, false, false, false, false}},
		{"/_stats?level=shards&filter_path=-indices.*.shards", []bool{true, true, true, true, true}},
		{"/_stats?level=shards&pretty", []bool{true, true, true, true, true}},
	} {
		_, d := simtest.CallJSON(t, s, "GET", tt.target, "")
		for i, p := range paths {
			got, ok := indexTotal(d, p...)
			if ok != tt.want[i] {
				t.Errorf("%s: %v written %v, want %v", tt.target, p, ok, tt.want[i])
				continue
			}
			if want, _ := indexTotal(full, p...); ok && got != want {
				t.Errorf("%s: %v index_total = %v, want %v as in the full answer", tt.target, p, got, want)
			}
		}
	}
}

func must(v float64, ok bool) float64 {
	if !ok {
		return math.NaN()
	}
	return v
}
