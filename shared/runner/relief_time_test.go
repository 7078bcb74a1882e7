package runner

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/shardwise/shardwise/shared/sim"
	"github.com/shardwise/shardwise/shared/sim/model"
)

// A relocation takes its files at the recovery rate and then the translog replay of what its copy
// indexed meanwhile (shared/sim/model/recovery.go), and the copy's load stays on its source until
// it ends. So a hot node whose relief needs a hot copy moved stays hot for at least that
// relocation, whatever the balancer: in a run too short for it, no balancer can relieve the node,
// and the random tests' relief targets do not apply. reliefLead gives that lower bound.

// movable is a copy on a node: its write load in threads, the seconds its files take at the full
// recovery rate, and the seconds its whole relocation takes (the files, then the translog replay of
// what it indexes meanwhile).
type movable struct {
	load, files, seconds float64
	// shard is the copy's shard in the simulator, nil when not known: never two copies of a shard
	// relocate at once (jointHot).
	shard *model.Shard
}

// replaySpeed is the replay speed sc's relocations replay at (sim.Sim.ReplaySpeed).
func replaySpeed(sc *sim.Scenario) float64 {
	if v := sc.Cluster.TranslogReplaySpeed; v != nil {
		return *v
	}
	return sim.DefaultTranslogReplaySpeed
}

// nodeAtStep is a hot node right after the load step: its write load and WRITE threads, the
// recoveries it may send at once (node_concurrent_outgoing_recoveries), the most work its WRITE
// queue holds before it rejects (in thread-seconds), and the copies it holds.
type nodeAtStep struct {
	load       float64
	threads    int
	slots      int
	backlogCap float64
	copies     []movable
}

// hotWait is the queue wait at or over which the simulator counts a node hot (docs/scenarios.md,
// "The run result").
const hotWait = 3.0

// copiesAtStep lists each of nodes right after sc's load step (at stepAt seconds), as the cluster
// holds them under OpenSearch's balancer alone: each copy with its write load in threads and the
// seconds its relocation takes at the full recovery rate (its files, then the translog replay of
// what it indexes meanwhile), and the node's load, WRITE threads, recovery slots and queue room.
// Every copy is listed: the bound counts no copy as leaving at once. A copy relocating off the
// node at the step takes what that relocation has left (model.Recovery.LeastSecondsLeft), its
// files sharing no rate with the rest.
func copiesAtStep(sc *sim.Scenario, stepAt float64, nodes []string) (map[string]nodeAtStep, error) {
	s, err := sim.New(sc, sim.Options{})
	if err != nil {
		return nil, err
	}
	var rep sim.TickReport
	for s.ElapsedSeconds() < stepAt+sc.TickSeconds-1e-9 {
		rep = s.Step()
	}
	rate, speed := sc.Cluster.RecoveryBytesPerSecond, replaySpeed(sc)
	s.Mu.Lock()
	defer s.Mu.Unlock()
	out := map[string]nodeAtStep{}
	for _, nt := range rep.Nodes {
		if !slices.Contains(nodes, nt.Name) {
			continue
		}
		n := s.MatchNodes([]string{nt.Name})
		if len(n) != 1 {
			return nil, fmt.Errorf("node %s: found %d", nt.Name, len(n))
		}
		var list []movable
		underway := map[int]bool{}
		demand := 0.0
		for ix, c := range s.CopiesOn(n[0]) {
			if !c.Active() {
				continue
			}
			demand += c.WriteDemand
			files := float64(ix.ShardBytes) / rate
			m := movable{load: c.WriteDemand, files: files, seconds: files, shard: c.Sh}
			if c.State == model.StateRelocating && c.Rec != nil {
				// Already relocating off the node (OpenSearch's balancer spreading an index, say):
				// it leaves when that relocation ends, its files already under way.
				m.files, m.seconds = 0, c.Rec.LeastSecondsLeft(rate, speed, c.WriteDemand)
				underway[len(list)] = true
			}
			list = append(list, m)
		}
		for i := range list {
			if demand > 0 {
				list[i].load *= nt.WriteLoad / demand // the node's speed: what it offers per thread of demand
			}
			if !underway[i] {
				list[i].seconds *= 1 + list[i].load/speed
			}
		}
		out[nt.Name] = nodeAtStep{load: nt.WriteLoad, threads: nt.WriteThreads, slots: s.Config().Outgoing,
			backlogCap: model.QueueCapacity * n[0].Write.TaskSeconds, copies: list}
	}
	return out, nil
}

// reliefLead is a lower bound on the seconds a node takes to stop being hot by moving copies off
// it, its copies listing all it holds. The copies moved must carry load − threads; each takes its
// relocation's seconds at least; together their files take the sum of their file seconds at least,
// as a node's recoveries share its recovery rate, and their relocations the sum of their seconds
// over the node's recovery slots, as the rest wait their turn. Until the first of them lands the
// queue grows by the excess (up to its room), and once they have all landed it drains at what they
// carry beyond the excess at most, until its wait is under hotWait. queueLead bounds it too, from
// the queue that builds while the copies land one by one. +Inf when moving every copy would not do.
func reliefLead(n nodeAtStep) float64 {
	need := n.load - float64(n.threads)
	if need <= 0 {
		return 0
	}
	copies := slices.Clone(n.copies)
	slices.SortFunc(copies, func(a, b movable) int { return cmpFloat(a.seconds, b.seconds) })
	best := math.Inf(1)
	carried := 0.0
	// The quickest set's slowest relocation is one of the copies': for each, the copies no slower
	// can be the set, and their files take at least the least files that can carry the load.
	for i := range copies {
		carried += copies[i].load
		lands := max(copies[i].seconds, leastFiles(copies[:i+1], need), leastSeconds(copies[:i+1], need)/float64(max(n.slots, 1)))
		if math.IsInf(lands, 1) {
			continue
		}
		drain := 0.0
		if over := min(n.backlogCap, need*copies[0].seconds) - hotWait*float64(n.threads); over > 0 {
			if carried <= need {
				continue
			}
			drain = over / (carried - need)
		}
		best = min(best, lands+drain)
	}
	return max(best, queueLead(n, copies), rateLead(n, copies))
}

// rateLead is a lower bound on the seconds a node stays hot whichever copies leave it, from the
// queue it builds while they land: by t seconds after the step, the copies landed can carry no
// more than the most load a set of copies each relocating within t can carry when their files
// together take at most t (they share the node's recovery rate) and their relocations together at
// most slots × t (they take turns on its recovery slots), each bound taken as a fractional cover.
// The excess over the node's threads less that grows the queue (up to its room) and, once past
// zero, drains it; any schedule of moves leaves at least that queue, so the node is hot at least
// until it drains under a hotWait wait. +Inf when even every copy leaving would not bring the node
// under saturation.
func rateLead(n nodeAtStep, copies []movable) float64 {
	need := n.load - float64(n.threads)
	if need <= 0 {
		return 0
	}
	total := 0.0
	for _, c := range copies {
		total += c.load
	}
	if total <= need {
		return math.Inf(1)
	}
	hot := hotWait * float64(n.threads)
	slots := float64(max(n.slots, 1))
	const dt = 1.0
	backlog := 0.0
	for t := dt; ; t += dt {
		var within []movable
		for _, c := range copies {
			if c.seconds <= t {
				within = append(within, c)
			}
		}
		carried := min(mostLoad(within, t, func(c movable) float64 { return c.files }),
			mostLoad(within, slots*t, func(c movable) float64 { return c.seconds }))
		excess := need - carried
		backlog = min(n.backlogCap, max(0, backlog+excess*dt))
		if excess <= 0 && backlog < hot {
			return t - dt // it may have drained at any time within the step
		}
	}
}

// mostLoad is the most load copies can carry when their cost together is at most budget: the
// fractional cover, the copies of most load per unit of cost first.
func mostLoad(copies []movable, budget float64, cost func(movable) float64) float64 {
	copies = slices.Clone(copies)
	slices.SortFunc(copies, func(a, b movable) int { return cmpFloat(cost(a)*b.load, cost(b)*a.load) })
	load := 0.0
	for _, c := range copies {
		k := cost(c)
		if k >= budget {
			if k > 0 {
				load += c.load * budget / k
			}
			return load
		}
		budget -= k
		load += c.load
	}
	return load
}

// queueLead is a lower bound on the seconds a node stays hot whichever copies leave it: every copy
// leaves at once, each landing after its relocation alone (copies, sorted by seconds), and the queue
// grows by the load still over the node's threads (up to its room) and drains at what has left
// beyond it, until its wait is under hotWait. Any set of copies leaves no sooner, so its queue is
// never shorter. +Inf when even every copy leaving would not bring the node under saturation.
func queueLead(n nodeAtStep, copies []movable) float64 {
	excess := n.load - float64(n.threads)
	hot := hotWait * float64(n.threads)
	t, backlog := 0.0, 0.0
	for k := 0; ; k++ {
		next := math.Inf(1)
		if k < len(copies) {
			next = copies[k].seconds
		}
		switch {
		case excess > 0 && math.IsInf(next, 1):
			return math.Inf(1)
		case excess > 0:
			backlog = min(n.backlogCap, backlog+excess*(next-t))
		case backlog < hot:
			return t
		default:
			if end := t + (backlog-hot)/-excess; end <= next {
				return end
			}
			backlog += excess * (next - t)
		}
		t = next
		excess -= copies[k].load
	}
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

// leastSeconds is leastFiles for the copies' whole relocations.
func leastSeconds(copies []movable, need float64) float64 {
	whole := make([]movable, len(copies))
	for i, c := range copies {
		whole[i] = movable{load: c.load, files: c.seconds}
	}
	return leastFiles(whole, need)
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
// balancer that acts on load can reach in the run, counting every node the step leaves over its
// WRITE threads (the generator aims it at some; the load it shifts can push others over). Each is
// hot from when its queue has built to a 3 s wait (untilHot) until its relief lead, counted from
// the load step (at stepAt seconds), has passed, within the run's end or its leaving. A copy
// OpenSearch's balancer is relocating off it at the step leaves when that relocation would end.
// Nothing before the step tells that it comes (the load is flat until then),
// so the bound counts relief started at the step. A balancer may beat it by spreading a skewed node
// before the step, as shardwise does (allocation.detectSkew) when a node carries twice its share,
// and as es-weights' and es-writeload's weight balancing may by chance (random seed 150 of 200:
// es-writeload moved a hot copy off node-1 at 30 s): the bound decides only which clusters are held
// to the relief target, not what reaches it. Over 200 random clusters, with each node's bound taken
// alone, OpenSearch's balancer alone never came under it, es-writeload once (seed 150, by that
// move), and shardwise on 44, each of them with moves spreading a skewed node ahead of the step;
// with the shared shards' schedules (jointHot) shardwise comes under it on 56. Once the bound came to
// count the node's recovery rate over time (rateLead), none of es-writeload, es-weights and sway
// came under it over 200 random clusters (the bound then counting node-0 and node-1 alone).
// Counting only the nodes the generator aimed the step at, and every relocation as starting at the
// step, the bound came over OpenSearch's balancer alone on segment-replication seeds 4 and 7 (2.11
// and 1.25: its index spreading under way at the step landed early); a bound over 1 now fails the
// seed.
func reliefFloor(t *testing.T, sc *sim.Scenario, stepAt float64, noneHot float64) float64 {
	t.Helper()
	if noneHot <= 0 {
		return 0
	}
	nodes := make([]string, 0, len(sc.Nodes))
	for _, n := range sc.Nodes {
		nodes = append(nodes, n.Name)
	}
	at, err := copiesAtStep(sc, stepAt, nodes)
	if err != nil {
		t.Fatalf("%s: relief floor: %v", sc.Name, err)
	}
	// A node within its threads has no lead, and a shard it shares with a hot node constrains
	// nothing: it need not move its copy.
	over := slices.DeleteFunc(slices.Clone(nodes), func(name string) bool {
		n, ok := at[name]
		return !ok || n.load <= float64(n.threads)
	})
	// A node that leaves is hot no longer than until it leaves.
	left := func(name string) float64 {
		end := sc.DurationSeconds
		for _, e := range sc.Events {
			if e.Kind == sim.EventNodeLeave && e.Node != nil && e.Node.Name == name && e.AtSeconds >= stepAt {
				end = min(end, e.AtSeconds)
			}
		}
		return end - stepAt
	}
	floor := jointHot(at, over, left, sc.TickSeconds) / noneHot
	if floor > 1+1e-9 {
		// OpenSearch's balancer alone is a balancer too: under the bound, the bound is wrong.
		t.Errorf("%s: relief floor %.2f of the hot node-seconds OpenSearch's balancer alone had (%v): no lower bound", sc.Name, floor, noneHot)
	}
	return floor
}

// maxJointShards bounds the shards whose schedules jointHot enumerates (5 each); the constraints
// of the rest are dropped, which only lowers the bound.
const maxJointShards = 4

// jointHot is a lower bound on the nodes' hot seconds summed, each hot from the step until its relief
// lead has passed, within its left seconds (until the run ends or it leaves) and less the tick that
// detects it. Two of the nodes holding copies of one shard cannot relocate them at once (never two
// copies of a shard in flight, for shardwise and OpenSearch's balancer alike): the copy moves from
// neither node, from one of them, or from both, the second starting once the first has landed.
// Every schedule of the shared shards is one of those, so the least over them bounds the relief;
// without it the bound would let both hot nodes shed the same shard at once (random seed 191 of
// 200: node-0 and node-1 each needed hot[1], the quicker of the two hot copies they share).
func jointHot(at map[string]nodeAtStep, nodes []string, left func(node string) float64, tick float64) float64 {
	type shared struct {
		a, b   string
		ia, ib int
		load   float64
	}
	holders := map[*model.Shard][]int{} // positions in nodes
	index := map[*model.Shard]map[string]int{}
	for ni, name := range nodes {
		for ci, c := range at[name].copies {
			if c.shard == nil {
				continue
			}
			holders[c.shard] = append(holders[c.shard], ni)
			if index[c.shard] == nil {
				index[c.shard] = map[string]int{}
			}
			index[c.shard][name] = ci
		}
	}
	var sh []shared
	for shard, hs := range holders {
		if len(hs) < 2 {
			continue
		}
		a, b := nodes[hs[0]], nodes[hs[1]]
		ia, ib := index[shard][a], index[shard][b]
		sh = append(sh, shared{a: a, b: b, ia: ia, ib: ib, load: max(at[a].copies[ia].load, at[b].copies[ib].load)})
	}
	slices.SortFunc(sh, func(x, y shared) int {
		if c := cmpFloat(y.load, x.load); c != 0 {
			return c
		}
		return cmpFloat(float64(x.ia), float64(y.ia))
	})
	sh = sh[:min(len(sh), maxJointShards)]
	schedules := 1
	for range sh {
		schedules *= 5
	}
	best := math.Inf(1)
	for k := range schedules {
		lists := map[string][]movable{}
		for _, name := range nodes {
			lists[name] = slices.Clone(at[name].copies)
		}
		drop := map[string][]int{}
		for i, x := 0, k; i < len(sh); i, x = i+1, x/5 {
			s := sh[i]
			ca, cb := at[s.a].copies[s.ia], at[s.b].copies[s.ib]
			switch x % 5 {
			case 0: // moves from neither
				drop[s.a], drop[s.b] = append(drop[s.a], s.ia), append(drop[s.b], s.ib)
			case 1: // from a only
				drop[s.b] = append(drop[s.b], s.ib)
			case 2: // from b only
				drop[s.a] = append(drop[s.a], s.ia)
			case 3: // from a, then from b once a's has landed
				lists[s.b][s.ib].seconds += ca.seconds
			case 4: // from b, then from a
				lists[s.a][s.ia].seconds += cb.seconds
			}
		}
		hot := 0.0
		for _, name := range nodes {
			n := at[name]
			list := lists[name]
			for _, i := range drop[name] {
				list[i].load = 0 // a copy that does not move carries nothing off the node
			}
			n.copies = list
			hot += max(0, min(reliefLead(n), left(name))-untilHot(n)-tick)
		}
		best = min(best, hot)
	}
	return best
}

// untilHot is the seconds a node's queue takes from empty to a hotWait wait, growing at what the
// node is offered over its threads: a node just over them takes minutes to turn hot.
func untilHot(n nodeAtStep) float64 {
	excess := n.load - float64(n.threads)
	if excess <= 0 {
		return math.Inf(1)
	}
	return hotWait * float64(n.threads) / excess
}

func TestReliefLead(t *testing.T) {
	cases := []struct {
		name string
		node nodeAtStep
		want float64
	}{
		{"under saturation: no lead", nodeAtStep{7.5, 8, 8, 0, []movable{{4, 100, 2000, nil}}}, 0},
		{"one hot copy must go: the quicker", nodeAtStep{11, 8, 8, 0, []movable{{5, 100, 2540, nil}, {4, 100, 1940, nil}, {0.5, 10, 10, nil}, {1.5, 100, 1000, nil}}}, 1940},
		{"two must go: the slower of the quickest pair", nodeAtStep{11, 8, 8, 0, []movable{{2, 100, 900, nil}, {2.5, 100, 1200, nil}, {6, 100, 3000, nil}, {0.5, 100, 200, nil}}}, 1200},
		{"cold copies share the node's recovery rate: their files add up", nodeAtStep{9, 8, 8, 0, []movable{{0.5, 600, 700, nil}, {0.5, 600, 700, nil}, {7, 100, 5000, nil}, {1, 100, 6000, nil}}}, 1200},
		{"part of a copy's files: the fractional cover bounds the set", nodeAtStep{8, 7, 8, 0, []movable{{0.6, 600, 700, nil}, {0.6, 300, 400, nil}, {6.8, 100, 5000, nil}}}, 700},
		{"two recovery slots: the set's relocations take turns", nodeAtStep{10, 8, 2, 0, []movable{{0.6, 10, 300, nil}, {0.6, 10, 300, nil}, {0.6, 10, 300, nil}, {0.6, 10, 300, nil}, {5, 100, 4000, nil}}}, 1000.0 / 2},
		// The queue grows by 2 threads for 300 s until the first copy lands (600 thread-seconds,
		// 500 the room), and drains to 3 s (24 thread-seconds) at what the set carries over the
		// excess: 0.4 threads with the four small copies (1,190 s more), 5.4 with the large one too
		// (88 s more, after its 1,500 s).
		{"the backlog drains at what the set carries beyond the excess", nodeAtStep{10, 8, 8, 500, []movable{{0.6, 10, 300, nil}, {0.6, 10, 300, nil}, {0.6, 10, 300, nil}, {0.6, 10, 300, nil}, {5, 100, 1500, nil}}}, 300 + 476.0/0.4},
		{"a large backlog: the set that carries more drains sooner", nodeAtStep{10, 8, 8, 500, []movable{{0.6, 10, 300, nil}, {0.6, 10, 300, nil}, {0.6, 10, 300, nil}, {0.6, 10, 300, nil}, {5, 100, 1000, nil}}}, 1000 + 476.0/5.4},
		// Every copy leaving at once, each landing after its relocation alone: the queue gains 200
		// thread-seconds by the first landing and fills (500) while the second copy relocates; past
		// it the node drains at 0.1 threads, to 100 by the time the large copy lands at 5,000 s, and
		// the rest (76 over the 24 of a 3 s wait) at 5.1. The set of the two small copies alone
		// would drain from the 200 of the first landing (1,000 + 1,760 s).
		{"the queue fills while the excess lasts", nodeAtStep{10, 8, 8, 500, []movable{{1, 10, 100, nil}, {1.1, 10, 1000, nil}, {5, 100, 5000, nil}}}, 5000 + 76.0/5.1},
		{"the listed copies cannot carry the excess: no set does", nodeAtStep{20, 8, 8, 0, []movable{{6, 100, 3000, nil}, {5, 100, 3000, nil}}}, math.Inf(1)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := reliefLead(tc.node); math.Abs(got-tc.want) > 1e-9 && got != tc.want {
				t.Errorf("reliefLead(%+v) = %v, want %v", tc.node, got, tc.want)
			}
		})
	}
}

// TestRateLead checks the bound from the node's recovery rate over time: four cool copies of 0.6
// threads, each relocating in 150 s alone, 100 s of it its files, must carry the 2 threads the node
// is over its 8. Each landing at its own relocation, the queue would stop growing at 150 s (300
// thread-seconds) and drain at the 0.4 threads beyond the excess (queueLead: 840 s), and the set's
// files take 333 s (reliefLead: 1,023 s). But their files share the node's rate: by t seconds no
// more than t/100 of them can have landed, the excess lasts until 333 s with the queue at about 400
// thread-seconds, and it drains to a 3 s wait (24) at 0.4 from 400 s: about 1,310 s.
func TestRateLead(t *testing.T) {
	small := movable{load: 0.6, files: 100, seconds: 150}
	n := nodeAtStep{load: 10, threads: 8, slots: 8, backlogCap: 1e9, copies: []movable{small, small, small, small}}
	if got := queueLead(n, n.copies); math.Abs(got-840) > 1e-9 {
		t.Errorf("queueLead = %v, want 840", got)
	}
	got := rateLead(n, n.copies)
	if got < 1295 || got > 1315 {
		t.Errorf("rateLead = %v, want about 1,310 (within the one-second steps it integrates in)", got)
	}
	if lead := reliefLead(n); lead != got {
		t.Errorf("reliefLead = %v, want the rate bound %v, the largest", lead, got)
	}
	if got := rateLead(nodeAtStep{load: 7, threads: 8, copies: n.copies}, n.copies); got != 0 {
		t.Errorf("rateLead under saturation = %v, want 0", got)
	}
	if got := rateLead(nodeAtStep{load: 11, threads: 8, slots: 2, copies: n.copies}, n.copies); !math.IsInf(got, 1) {
		t.Errorf("rateLead with too little to move = %v, want +Inf", got)
	}
}

func TestJointHot(t *testing.T) {
	shared, other := &model.Shard{}, &model.Shard{}
	// a and b each hold a copy of shared (4 threads, 1,000 s to relocate), the only copy either
	// can shed in time; c, a slower copy on b, carries enough as well.
	a := nodeAtStep{11, 8, 2, 0, []movable{{4, 100, 1000, shared}, {0.5, 10, 20, nil}}}
	b := nodeAtStep{11, 8, 2, 0, []movable{{4, 100, 1000, shared}, {4, 100, 3000, other}}}
	cases := []struct {
		name  string
		at    map[string]nodeAtStep
		nodes []string
		left  float64
		want  float64
	}{
		// Each node's queue reaches a 3 s wait (24 thread-seconds) 8 s after the step, at the 3
		// threads it is offered over its 8, and the tick after that detects it.
		{"no shared shard: each node's own lead", map[string]nodeAtStep{"a": a}, []string{"a"}, 3600, 1000 - 8 - 30},
		// Alone each would shed shared in 1,000 s (1,924 hot seconds). Together one waits for the
		// other's copy to land (1,000 + 2,000), or b sheds the slower copy (1,000 + 3,000): the
		// first is the least, 962 + 1,962.
		{"a shared shard moves from one node at a time", map[string]nodeAtStep{"a": a, "b": b}, []string{"a", "b"}, 3600, 962 + 1962},
		{"a run too short for the second: it stays hot to the end", map[string]nodeAtStep{"a": a, "b": b}, []string{"a", "b"}, 1500, 962 + 1462},
		// 0.1 threads over its 8, a node's queue takes 240 s to a 3 s wait: relief landing sooner
		// leaves it never hot.
		{"just over its threads: hot only once its queue has built", map[string]nodeAtStep{"m": {8.1, 8, 2, 0, []movable{{0.5, 10, 200, nil}}}}, []string{"m"}, 3600, 0},
		{"just over its threads, relief late", map[string]nodeAtStep{"m": {8.1, 8, 2, 0, []movable{{0.5, 10, 1000, nil}}}}, []string{"m"}, 3600, 1000 - 240 - 30},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := jointHot(tc.at, tc.nodes, func(string) float64 { return tc.left }, 30); math.Abs(got-tc.want) > 1e-9 {
				t.Errorf("jointHot = %v, want %v", got, tc.want)
			}
		})
	}
}
