package runner

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/shardwise/shardwise/shared/sim"
)

// A relocation takes its files at the recovery rate and then the translog replay of what its copy
// indexed meanwhile (shared/sim/model/recovery.go), and the copy's load stays on its source until
// it ends. So a hot node whose relief needs a hot copy moved stays hot for at least that
// relocation, whatever the balancer: in a run too short for it, no balancer can relieve the node,
// and the random tests' relief targets do not apply. reliefLead gives that lower bound.

// movable is a copy on a node: its write load in threads, the seconds its files take at the full
// recovery rate, and the seconds its whole relocation takes (the files, then the translog replay of
// what it indexes meanwhile).
type movable struct{ load, files, seconds float64 }

// replaySpeed is the replay speed sc's relocations replay at (sim.Sim.ReplaySpeed).
func replaySpeed(sc *sim.Scenario) float64 {
	if v := sc.Cluster.TranslogReplaySpeed; v != nil {
		return *v
	}
	return sim.DefaultTranslogReplaySpeed
}

// copiesAtStep lists the copies on each of nodes right after sc's load step (at stepAt seconds), as
// the cluster holds them under OpenSearch's balancer alone: each with its write load in threads and
// the seconds its relocation takes at the full recovery rate (its files, then the translog replay of
// what it indexes meanwhile), and the node's load and WRITE threads. Every copy is listed: the
// bound counts no copy as leaving at once.
func copiesAtStep(sc *sim.Scenario, stepAt float64, nodes []string) (map[string][]movable, map[string]sim.NodeTick, error) {
	s, err := sim.New(sc, sim.Options{})
	if err != nil {
		return nil, nil, err
	}
	var rep sim.TickReport
	for s.ElapsedSeconds() < stepAt+sc.TickSeconds-1e-9 {
		rep = s.Step()
	}
	rate, speed := sc.Cluster.RecoveryBytesPerSecond, replaySpeed(sc)
	s.Mu.Lock()
	defer s.Mu.Unlock()
	copies, ticks := map[string][]movable{}, map[string]sim.NodeTick{}
	for _, nt := range rep.Nodes {
		if !slices.Contains(nodes, nt.Name) {
			continue
		}
		n := s.MatchNodes([]string{nt.Name})
		if len(n) != 1 {
			return nil, nil, fmt.Errorf("node %s: found %d", nt.Name, len(n))
		}
		var list []movable
		demand := 0.0
		for ix, c := range s.CopiesOn(n[0]) {
			if !c.Active() {
				continue
			}
			demand += c.WriteDemand
			files := float64(ix.ShardBytes) / rate
			list = append(list, movable{load: c.WriteDemand, files: files, seconds: files})
		}
		for i := range list {
			if demand > 0 {
				list[i].load *= nt.WriteLoad / demand // the node's speed: what it offers per thread of demand
			}
			list[i].seconds *= 1 + list[i].load/speed
		}
		copies[nt.Name], ticks[nt.Name] = list, nt
	}
	return copies, ticks, nil
}

// reliefLead is a lower bound on the seconds a node at load threads of its threads takes to come
// under saturation by moving copies off it, copies listing all it holds: the copies moved must carry
// load − threads; each takes its relocation's seconds at least, and together their files take the
// sum of their file seconds at least, as a node's recoveries share its recovery rate. +Inf when
// moving every copy would not do.
func reliefLead(load float64, threads int, copies []movable) float64 {
	need := load - float64(threads)
	if need <= 0 {
		return 0
	}
	copies = slices.Clone(copies)
	slices.SortFunc(copies, func(a, b movable) int { return cmpFloat(a.seconds, b.seconds) })
	best := math.Inf(1)
	// The quickest set's slowest relocation is one of the copies': for each, the copies no slower
	// can be the set, and their files take at least the least files that can carry the load.
	for i := range copies {
		best = min(best, max(copies[i].seconds, leastFiles(copies[:i+1], need)))
	}
	return best
}

// leastFiles is a lower bound on the file seconds of a set of copies carrying need threads: the
// fractional cover, the copies of most load per file second first. +Inf when all of them carry less.
func leastFiles(copies []movable, need float64) float64 {
	copies = slices.Clone(copies)
	slices.SortFunc(copies, func(a, b movable) int { return cmpFloat(a.files*b.load, b.files*a.load) })
	files := 0.0
	for _, c := range copies {
		if c.load <= 0 {
			continue
		}
		if c.load >= need {
			return files + c.files*need/c.load
		}
		files += c.files
		need -= c.load
	}
	return math.Inf(1)
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// reliefFloor is the least share of OpenSearch's-balancer-alone hot node-seconds (noneHot) a
// balancer that acts on load can reach in the run, counting only the nodes named: each stays hot
// from the load step (at stepAt seconds) until its relief lead, counted from the step, has passed,
// within the run's end. Nothing before the step tells that it comes (the load is flat until then),
// so the bound counts relief started at the step. A balancer may beat it by spreading a skewed node
// before the step, as shardwise does (allocation.detectSkew) when a node carries twice its share:
// the bound decides only which clusters are held to the relief target, not what reaches it.
func reliefFloor(t *testing.T, sc *sim.Scenario, stepAt float64, nodes []string, noneHot float64) float64 {
	t.Helper()
	if noneHot <= 0 {
		return 0
	}
	copies, ticks, err := copiesAtStep(sc, stepAt, nodes)
	if err != nil {
		t.Fatalf("%s: relief floor: %v", sc.Name, err)
	}
	left := sc.DurationSeconds - stepAt
	hot := 0.0
	for name, known := range copies {
		n := ticks[name]
		lead := reliefLead(n.WriteLoad, n.WriteThreads, known)
		hot += max(0, min(lead, left)-sc.TickSeconds)
	}
	return hot / noneHot
}

func TestReliefLead(t *testing.T) {
	cases := []struct {
		name    string
		load    float64
		threads int
		copies  []movable
		want    float64
	}{
		{"under saturation: no lead", 7.5, 8, []movable{{4, 100, 2000}}, 0},
		{"one hot copy must go: the quicker", 11, 8, []movable{{5, 100, 2540}, {4, 100, 1940}, {0.5, 10, 10}, {1.5, 100, 1000}}, 1940},
		{"two must go: the slower of the quickest pair", 11, 8, []movable{{2, 100, 900}, {2.5, 100, 1200}, {6, 100, 3000}, {0.5, 100, 200}}, 1200},
		{"cold copies share the node's recovery rate: their files add up", 9, 8, []movable{{0.5, 600, 700}, {0.5, 600, 700}, {7, 100, 5000}, {1, 100, 6000}}, 1200},
		{"part of a copy's files: the fractional cover bounds the set", 8, 7, []movable{{0.6, 600, 700}, {0.6, 300, 400}, {6.8, 100, 5000}}, 700},
		{"the listed copies cannot carry the excess: no set does", 20, 8, []movable{{6, 100, 3000}, {5, 100, 3000}}, math.Inf(1)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := reliefLead(tc.load, tc.threads, tc.copies); math.Abs(got-tc.want) > 1e-9 && got != tc.want {
				t.Errorf("reliefLead(%v, %d, %v) = %v, want %v", tc.load, tc.threads, tc.copies, got, tc.want)
			}
		})
	}
}
