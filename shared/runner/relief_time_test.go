package runner

import (
	"math"
	"slices"
	"testing"

	"github.com/shardwise/shardwise/shared/sim"
	simscenario "github.com/shardwise/shardwise/shared/sim/scenario"
)

// A relocation takes its files at the recovery rate and then the translog replay of what its copy
// indexed meanwhile (shared/sim/model/recovery.go), and the copy's load stays on its source until
// it ends. So a hot node whose relief needs a hot copy moved stays hot for at least that
// relocation, whatever the balancer: in a run too short for it, no balancer can relieve the node,
// and the random tests' relief targets do not apply. reliefLead gives that lower bound.

// movable is a copy on a node: its write load in threads and the seconds its relocation takes at
// the full recovery rate.
type movable struct{ load, seconds float64 }

// replaySpeed is the replay speed sc's relocations replay at (sim.Sim.ReplaySpeed).
func replaySpeed(sc *sim.Scenario) float64 {
	if v := sc.Cluster.TranslogReplaySpeed; v != nil {
		return *v
	}
	return sim.DefaultTranslogReplaySpeed
}

// placedCopies lists the copies sc's indices place on node (their placement), with each copy's
// write load at second at and its relocation's seconds at the full recovery rate; complete when
// every written index has a placement, so the list is all the node held at the start.
func placedCopies(sc *sim.Scenario, node string, at float64) (out []movable, complete bool) {
	rate, speed := sc.Cluster.RecoveryBytesPerSecond, replaySpeed(sc)
	complete = len(sc.IndexGroups) == 0
	for _, ix := range sc.Indices {
		if ix.WriteLoad == nil {
			continue
		}
		if ix.Placement == nil {
			complete = false
		}
		sum := 0.0
		for i := range ix.Primaries {
			sum += weight(ix.ShardWeights, i)
		}
		for shard, nodes := range ix.Placement {
			k := slices.Index(nodes, node)
			if k < 0 {
				continue
			}
			load := ix.WriteLoad.At(at) * weight(ix.ShardWeights, shard) / sum
			if ix.ReplicationType == simscenario.ReplicationSegment && k > 0 {
				load *= sim.DefaultSegmentReplicaShare // a segment replica copies segments
			}
			files := float64(ix.ShardBytes) / rate
			out = append(out, movable{load: load, seconds: files * (1 + load/speed)})
		}
	}
	return out, complete
}

func weight(weights []float64, i int) float64 {
	if weights == nil {
		return 1
	}
	return weights[i]
}

// reliefLead is a lower bound on the seconds a node at load threads of its threads takes to come
// under saturation by moving copies off it, known listing some of its copies: the copies not
// listed count as leaving at once, the listed ones when their relocations end, and the node must
// shed load − threads. 0 when the unlisted copies alone can shed it, or when the listed copies
// bear more than the node's load (some have left it: the list no longer describes the node).
func reliefLead(load float64, threads int, known []movable) float64 {
	need := load - float64(threads)
	if need <= 0 {
		return 0
	}
	shed := load
	for _, c := range known {
		shed -= c.load
	}
	if shed >= need || shed < -1e-6 {
		return 0 // the unlisted copies suffice, or the listed ones are no longer all there
	}
	known = slices.Clone(known)
	slices.SortFunc(known, func(a, b movable) int { return cmpFloat(a.seconds, b.seconds) })
	for _, c := range known {
		shed += c.load
		if shed >= need-1e-9 {
			return c.seconds
		}
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

// reliefFloor is the least share of OpenSearch's-balancer-alone hot node-seconds (noneHot)
// any balancer can reach in the run, counting only the nodes named: each stays hot from the load
// step (at stepAt seconds; tk is the tick after it) until its relief lead, counted from the run's
// start, has passed, within the run's end.
func reliefFloor(sc *sim.Scenario, tk Tick, stepAt float64, nodes []string, noneHot float64) float64 {
	if noneHot <= 0 {
		return 0
	}
	left := sc.DurationSeconds - stepAt
	hot := 0.0
	for _, n := range tk.Report.Nodes {
		if !slices.Contains(nodes, n.Name) {
			continue
		}
		known, complete := placedCopies(sc, n.Name, stepAt+sc.TickSeconds)
		sum := 0.0
		for _, c := range known {
			sum += c.load
		}
		if complete && math.Abs(sum-n.WriteLoad) > 1e-3*n.WriteLoad {
			continue // copies moved since the start: the placement no longer describes the node
		}
		// A balancer may start the relocation before the step (as primary balance and es-weights
		// do), so the lead counts from the run's start.
		lead := reliefLead(n.WriteLoad, n.WriteThreads, known)
		hot += max(0, min(lead-stepAt, left)-sc.TickSeconds)
	}
	return hot / noneHot
}

func TestReliefLead(t *testing.T) {
	cases := []struct {
		name    string
		load    float64
		threads int
		known   []movable
		want    float64
	}{
		{"under saturation: no lead", 7.5, 8, []movable{{4, 2000}}, 0},
		{"the unlisted copies can shed it: no lead", 10, 8, []movable{{4, 2000}, {3, 1500}}, 0},
		{"one hot copy must go: the quicker", 11, 8, []movable{{5, 2540}, {4, 1940}, {0.5, 10}}, 1940},
		{"two must go: the slower of the quickest pair", 11, 8, []movable{{2, 900}, {2.5, 1200}, {6, 3000}}, 1200},
		{"the listed copies bear more than the node: no bound", 9, 8, []movable{{6, 900}, {6, 1200}}, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := reliefLead(tc.load, tc.threads, tc.known); got != tc.want {
				t.Errorf("reliefLead(%v, %d, %v) = %v, want %v", tc.load, tc.threads, tc.known, got, tc.want)
			}
		})
	}
}
