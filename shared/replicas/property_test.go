package replicas

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"
)

// cycle is one decision on one index, kept to check a scale-down against the cycles before it.
type cycle struct {
	at      time.Time
	from    int
	desired int
	applied bool
	known   bool
}

// TestDecideProperties runs random clusters through hours of cycles, applying every change, and
// checks the invariants independently of how Decide computes them: a change never goes below the
// index's minimum nor above the topology ceiling, an index left above its ceiling has a deferred
// cap, and a scale-down comes only after every cycle of the preceding ScaleDownAfter wanted fewer
// copies than the count it lowers, to no fewer than the highest of them.
func TestDecideProperties(t *testing.T) {
	kinds := map[string]int{}
	for seed := uint64(1); seed <= 60; seed++ {
		t.Run(fmt.Sprintf("seed %d", seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 0x5eed))
			cfg := DefaultConfig()
			cfg.MaxIndicesPerCycle = 1 + r.IntN(6)
			cfg.ScaleDownAfter = time.Duration(r.IntN(61)) * time.Minute
			cfg.X = []float64{0.25, 0.5, 1}[r.IntN(3)]
			cfg.DefaultMin = r.IntN(3)
			cfg.UseSearchReplicas = r.IntN(4) == 0
			if err := cfg.Validate(); err != nil {
				t.Fatalf("config: %v", err)
			}

			in := make([]IndexInput, 2+r.IntN(7))
			firstSeen := map[string]int{}
			for i := range in {
				in[i] = IndexInput{
					Name: fmt.Sprintf("i%d", i), Primaries: 1 + r.IntN(4), Replicas: r.IntN(6),
					SearchReplicas: r.IntN(4), EligibleNodes: 1 + r.IntN(8), SearchLoad: r.Float64() * 3,
					LoadKnown: true, ExtraCopiesAllowed: -1,
				}
				firstSeen[in[i].Name] = in[i].Replicas
			}
			mem := map[string]Memory{}
			history := map[string][]cycle{}
			now := t0
			for step := 0; step < 480; step++ {
				now = now.Add(30 * time.Second)
				for i := range in {
					// Loads random-walk and sometimes collapse to idle; nodes come and go; samples drop.
					in[i].SearchLoad = max(0, in[i].SearchLoad+r.NormFloat64()*0.3)
					if r.IntN(200) == 0 {
						in[i].SearchLoad = 0
					}
					if r.IntN(60) == 0 {
						in[i].EligibleNodes = max(1, in[i].EligibleNodes+r.IntN(3)-1)
					}
					in[i].LoadKnown = r.IntN(40) != 0
					// Half the indices report their pools, so need and quiet cycles take part too.
					if i%2 == 0 {
						in[i].NodeSearchThreads = 2
						in[i].PoolThreads = 2 * min(in[i].EligibleNodes, in[i].Primaries*(in[i].Replicas+1))
						in[i].PoolLoad = in[i].SearchLoad * (0.5 + r.Float64())
					}
				}
				before := cloneMemory(mem)
				changes, all, next := Decide(now, in, mem, cfg)
				// The engine compares the memory it read with the one Decide returns to skip a
				// write when nothing changed, and restores an index's read memory when its change
				// is held: Decide must leave what it was given as it was.
				if !reflect.DeepEqual(before, mem) {
					t.Fatalf("%v: Decide changed the memory it was given:\nbefore %+v\nafter  %+v", now, before, mem)
				}
				mem = next
				applied := map[string]Decision{}
				for _, c := range changes {
					applied[c.Index] = c
				}
				if len(changes) > cfg.MaxIndicesPerCycle {
					t.Fatalf("%v: %d changes, limit %d", now, len(changes), cfg.MaxIndicesPerCycle)
				}
				for i, d := range all {
					ix := &in[i]
					floor, ceiling := 0, ix.EligibleNodes
					if !cfg.UseSearchReplicas {
						ceiling = ix.EligibleNodes - 1
						floor = min(max(firstSeen[ix.Name], cfg.DefaultMin), ceiling)
					}
					c, ok := applied[ix.Name]
					history[ix.Name] = append(history[ix.Name], cycle{now, d.From, d.Desired, ok, ix.LoadKnown})
					if !ok {
						waiting := d.Kind == KindPendingCap && now.Sub(d.PendingSince) < cfg.NodeLeftDelay
						if d.From > ceiling && !waiting && (d.Kind != KindCap || !d.Deferred) {
							t.Fatalf("%v %s: left at %d above ceiling %d by a %s decision (%s)", now, ix.Name, d.From, ceiling, d.Kind, d.Reason)
						}
						continue
					}
					kinds[c.Kind]++
					if c.To > ceiling || c.To < floor {
						t.Fatalf("%v %s: %s %d→%d outside [%d, %d] (%s)", now, ix.Name, c.Kind, c.From, c.To, floor, ceiling, c.Reason)
					}
					if c.Kind == KindScaleDown {
						checkWindow(t, history[ix.Name], now, cfg.ScaleDownAfter, c)
					}
					if cfg.UseSearchReplicas {
						ix.SearchReplicas = c.To
					} else {
						ix.Replicas = c.To
					}
				}
			}
		})
	}
	// The random walk must reach every kind of change, or the checks above proved little.
	for _, k := range []string{KindScaleUp, KindScaleDown, KindCap} {
		if kinds[k] == 0 {
			t.Errorf("no %s change in any run; kinds seen %v", k, kinds)
		}
	}
	t.Logf("changes by kind: %v", kinds)
}

// checkWindow fails unless every cycle with a measured load in [now-wait, now] wanted fewer copies
// than the count being lowered, the new count is at least the highest of those targets, and the
// history reaches back to now-wait.
func checkWindow(t *testing.T, h []cycle, now time.Time, wait time.Duration, c Decision) {
	t.Helper()
	start := now.Add(-wait)
	covered := false
	highest := c.Desired
	for _, cy := range h {
		if cy.at.Before(start) {
			continue
		}
		covered = covered || !cy.at.After(start)
		// A cycle without a measured load neither advances nor restarts the window.
		if !cy.known {
			continue
		}
		if cy.desired >= c.From {
			t.Fatalf("%v %s: scale-down %d→%d but at %v the target %d was not below %d", now, c.Index, c.From, c.To, cy.at, cy.desired, c.From)
		}
		highest = max(highest, cy.desired)
	}
	if !covered {
		t.Fatalf("%v %s: scale-down %d→%d without a cycle at or before %v", now, c.Index, c.From, c.To, start)
	}
	if c.To < highest {
		t.Fatalf("%v %s: scale-down to %d below the window's highest target %d", now, c.Index, c.To, highest)
	}
}

// cloneMemory copies mem deeply enough to tell whether Decide wrote into it.
func cloneMemory(mem map[string]Memory) map[string]Memory {
	out := make(map[string]Memory, len(mem))
	for k, m := range mem {
		m.Recent = slices.Clone(m.Recent)
		out[k] = m
	}
	return out
}
