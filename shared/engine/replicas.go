package engine

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/shardwise/shardwise/shared/allocation"
	"github.com/shardwise/shardwise/shared/bus"
	"github.com/shardwise/shardwise/shared/cluster"
	"github.com/shardwise/shardwise/shared/replicas"
	"github.com/shardwise/shardwise/shared/safety"
	"github.com/shardwise/shardwise/shared/snapshots"
	"github.com/shardwise/shardwise/shared/state"
	"github.com/shardwise/shardwise/shared/telemetry"
)

// ReplicasResult is one replica-scaling cycle.
type ReplicasResult struct {
	Cluster   string              `json:"cluster"`
	Decisions []replicas.Decision `json:"decisions"`
	Applied   []replicas.Decision `json:"applied"`
	Breaker   safety.Verdict      `json:"breaker"`
	Repeated  bool                `json:"repeated,omitempty"`
	// ReplicaCopies is the replica (or search replica) shard copies the decided indices hold, which
	// is also the replica node-hours they cost per hour; ReplicaCopiesAfter counts them after the
	// applied changes. SearchLatencyMs is the snapshot's mean search latency beside them
	// (OpenSearch reports means, not percentiles); LatencyKnown false when it was not measured.
	ReplicaCopies      int     `json:"replica_copies"`
	ReplicaCopiesAfter int     `json:"replica_copies_after"`
	SearchLatencyMs    float64 `json:"search_latency_ms"`
	LatencyKnown       bool    `json:"latency_known"`
}

// countCopies fills the result's replica copies before and after the applied changes.
func (r *ReplicasResult) countCopies() {
	r.ReplicaCopies, r.ReplicaCopiesAfter = 0, 0
	to := map[string]int{}
	for _, d := range r.Applied {
		to[d.Index] = d.To
	}
	for _, d := range r.Decisions {
		if d.Kind == replicas.KindSkip {
			continue
		}
		r.ReplicaCopies += d.From * d.S
		after, ok := to[d.Index]
		if !ok {
			after = d.From
		}
		r.ReplicaCopiesAfter += after * d.S
	}
}

// ReplicaInputs measures, per index, L's numerator (search threads busy), N (the nodes that may
// hold its copies: data nodes after allocation filters, or search nodes in search-replica mode),
// S (primaries), how many copies of each shard the nodes can assign (replicas.MaxCopies), how busy
// the search pools holding its copies are, what a new copy costs, and how many more copies the
// nodes can take: under the disk high watermark, and — because in stateful OpenSearch every
// replica indexes every document, or under segment replication copies its primary's segments at
// cluster.SegmentReplicaShare of the load — within the WRITE pools' allocation threshold, counting
// what a new replica of the index's heaviest shard bears (View.ReplicaLoad) per new copy.
func ReplicaInputs(snap *cluster.Snapshot, cfg allocation.Config, searchReplicas bool) []replicas.IndexInput {
	v := allocation.NewView(snap, cfg, nil)
	// What each index's active copies add up to. An index's copies are side by side in a sorted
	// snapshot, so its entry is looked up once per run of them, not once per copy and figure.
	type tally struct {
		load, heaviest float64
		known          bool
		size, count    int64
		nodes          map[string]bool // the nodes holding its copies
	}
	tallies := make(map[string]*tally, len(snap.Indices))
	for _, ix := range snap.Indices {
		tallies[ix.Name] = &tally{known: snap.IntervalSeconds > 0}
	}
	perNode := map[string]int{}
	var (
		cur     *tally
		curOf   string // cur's index
		shardOf = -1   // the shard of curOf whose replica load cur.heaviest already counts
	)
	for i := range snap.Copies {
		c := &snap.Copies[i]
		if c.Node != "" {
			perNode[c.Node]++
		}
		if !c.Active() {
			continue
		}
		if cur == nil || c.Index != curOf {
			curOf, shardOf = c.Index, -1
			if cur = tallies[c.Index]; cur == nil {
				cur = &tally{}
				tallies[c.Index] = cur
			}
		}
		cur.load += c.SearchLoad
		if !c.LoadKnown {
			cur.known = false
		}
		cur.size += c.SizeBytes
		cur.count++
		if c.Shard != shardOf {
			// A shard's copies share its replica load, and a sorted snapshot lists them side by
			// side: one lookup per shard, not per copy (a repeat lookup changes no maximum).
			shardOf = c.Shard
			cur.heaviest = max(cur.heaviest, v.ReplicaLoad(c.ID()))
		}
		if cur.nodes == nil {
			cur.nodes = map[string]bool{}
		}
		cur.nodes[c.Node] = true
	}
	excluded := map[string]bool{}
	for _, ref := range cfg.ExcludedNodes {
		if n := snap.NodeByRef(ref); n != nil {
			excluded[n.ID] = true
		}
	}
	wm := snap.Settings.DiskHighWatermark
	if wm <= 0 {
		wm = 0.9 // OpenSearch's default high watermark
	}
	out := make([]replicas.IndexInput, 0, len(snap.Indices))
	var (
		unfiltered      []*cluster.Node
		unfilteredKnown bool
		unfilteredPer   []int                    // perNode of each of unfiltered
		filteredPer     []int                    // perNode of each eligible node of an index with filters, reused
		per             []int                    // perNode of each eligible node
		pn              []replicas.PlacementNode // each index's, reused: MaxCopies keeps none
	)
	for _, ix := range snap.Indices {
		extra, limiter := -1, ""
		var avg int64
		t := tallies[ix.Name]
		if t.count > 0 {
			if avg = t.size / t.count; avg > 0 {
				disk := 0
				for _, n := range v.DataNodes() {
					if n.DiskTotalBytes <= 0 {
						disk = -1
						break
					}
					if room := int64(float64(n.DiskTotalBytes)*wm) - n.DiskUsedBytes(); room > 0 {
						disk += int(min(room/avg, math.MaxInt32))
					}
				}
				if disk >= 0 {
					extra, limiter = disk, "the disk (high watermark)"
				}
			}
		}
		if w := t.heaviest; w >= cfg.MinShardWriteLoad {
			write := 0
			for _, n := range v.DataNodes() {
				room := cfg.AllocationUtilization*float64(n.Write.Threads) - v.WriteLoad(n.ID)
				if room > 0 {
					write += int(room / w)
				}
			}
			if extra < 0 || write < extra {
				extra, limiter = write, fmt.Sprintf("WRITE pool room (each new copy indexes %.2f threads)", w)
			}
		}
		in := replicas.IndexInput{Name: ix.Name, Primaries: ix.Primaries, Replicas: ix.Replicas,
			SearchReplicas: ix.SearchReplicas, SearchLoad: t.load, EligibleNodes: v.EligibleNodes(ix.Name),
			Hidden: ix.System(), LoadKnown: t.known, ExtraCopiesAllowed: extra, Limiter: limiter,
			WriteLoadPerCopy: t.heaviest, CopyBytes: avg}
		for id := range t.nodes {
			if n := v.Node(id); n != nil {
				in.PoolThreads += n.Search.Threads
				in.PoolLoad += n.Search.Load
				in.CopyNodes++
			}
		}
		var eligible []*cluster.Node
		if ix.Filters.Empty() {
			// The same nodes for every index without filters of its own (most are): found once.
			if !unfilteredKnown {
				unfiltered, unfilteredKnown = placementNodes(snap, &ix, excluded, searchReplicas), true
				unfilteredPer = copiesPer(unfiltered, perNode, nil)
			}
			eligible, per = unfiltered, unfilteredPer
		} else {
			eligible = placementNodes(snap, &ix, excluded, searchReplicas)
			filteredPer = copiesPer(eligible, perNode, filteredPer[:0])
			per = filteredPer
		}
		if searchReplicas {
			in.EligibleNodes = len(eligible)
		}
		threads := 0
		for _, n := range eligible {
			threads += n.Search.Threads
		}
		if len(eligible) > 0 {
			in.NodeSearchThreads = float64(threads) / float64(len(eligible))
		}
		pn = slices.Grow(pn[:0], len(eligible))[:len(eligible)]
		own := v.IndexCopiesOf(ix.Name)
		for i, n := range eligible {
			// The index's own copies on the node do not count against the cluster-wide limit.
			pn[i] = replicas.PlacementNode{Host: n.Host, Attrs: n.Attributes, Others: per[i] - own(n.ID)}
		}
		if ix.NodeLeftDelayedTimeoutSet {
			in.DelayedTimeout, in.DelayedTimeoutSet = ix.NodeLeftDelayedTimeout.Std(), true
		}
		in.MaxCopies, in.MaxWhy = replicas.MaxCopies(pn, replicas.PlacementRules{Primaries: ix.Primaries,
			TotalShardsPerNode: ix.TotalShardsPerNode, ClusterTotalShardsPerNode: snap.Settings.TotalShardsPerNode,
			SameShardHost: snap.Settings.SameShardHost,
			Awareness:     snap.Settings.AwarenessAttributes, ForcedAwareness: snap.Settings.ForcedAwareness})
		out = append(out, in)
	}
	return out
}

// copiesPer appends to out the copies perNode counts on each of nodes, in their order.
func copiesPer(nodes []*cluster.Node, perNode map[string]int, out []int) []int {
	for _, n := range nodes {
		out = append(out, perNode[n.ID])
	}
	return out
}

// placementNodes are the nodes that may hold the index's copies: data nodes (search nodes in
// search-replica mode) not excluded by shardwise's configuration, allowed by the index's and the
// cluster's allocation filters.
func placementNodes(snap *cluster.Snapshot, ix *cluster.Index, excluded map[string]bool, searchReplicas bool) []*cluster.Node {
	var out []*cluster.Node
	for i := range snap.Nodes {
		n := &snap.Nodes[i]
		if excluded[n.ID] {
			continue
		}
		if searchReplicas && !slices.Contains(n.Roles, searchRole) || !searchReplicas && !n.IsData() {
			continue
		}
		if ok, _ := allocation.FiltersAllow(ix.Filters, n); !ok {
			continue
		}
		if ok, _ := allocation.FiltersAllow(snap.Settings.Filters, n); !ok {
			continue
		}
		out = append(out, n)
	}
	return out
}

// searchRole is the role of OpenSearch's dedicated search nodes, where search replicas live.
const searchRole = "search"

// Replicas scales each index's replicas with its share of search load: up at once, down only after
// the lower target held for the cooldown, capped at once when nodes leave. Changes go through the
// breaker; caps (which only drop copies no node can hold) are applied even when it is open.
func (e *Engine) Replicas(ctx context.Context, name, snapshotKey string) (_ ReplicasResult, err error) {
	res := ReplicasResult{Cluster: name}
	if !e.Config.Replicas.Enabled {
		return res, nil
	}
	api, err := e.api(name)
	if err != nil {
		return res, fmt.Errorf("replicas: %w", err)
	}
	if snapshotKey == "" {
		if snapshotKey, err = snapshots.Latest(ctx, e.Store, name); err != nil {
			return res, fmt.Errorf("replicas %s: %w", name, err)
		}
	}
	// One decision per snapshot, however often the event arrives.
	claim := state.Key{PK: pk(name), SK: replicasDoneKey(snapshotKey)}
	if _, err := state.PutJSON(ctx, e.Store, claim, true, state.Condition{IfAbsent: true}, e.ttl(), e.now()); err != nil {
		if errors.Is(err, state.ErrConflict) {
			e.log().Info("replicas: this snapshot was decided already (a duplicate delivery or an overlapping invocation)",
				"cluster", name, "snapshot", snapshotKey)
			res.Repeated = true
			return res, nil
		}
		return res, fmt.Errorf("replicas %s: %w", name, err)
	}
	defer func() {
		// A cycle that failed before applying everything gives its claim back, so a redelivery of
		// the event (EventBridge retries failed invocations) decides this snapshot again.
		if err != nil {
			if derr := e.Store.Delete(ctx, claim, state.Condition{}); derr != nil {
				e.log().Error("replicas claim release failed", "cluster", name, "key", claim.SK, "error", derr)
			}
		}
	}()
	snap, _, err := snapshots.Load(ctx, e.Store, name, snapshotKey)
	if err != nil {
		return res, fmt.Errorf("replicas %s: %w", name, err)
	}
	rcfg := e.Config.Replicas.Config
	threads := 0
	for _, n := range snap.Nodes {
		if n.IsData() {
			threads += n.Search.Threads
		}
	}
	rcfg.MinTotalSearchLoad = max(rcfg.MinTotalSearchLoad, e.Config.Replicas.MinSearchUtilization*float64(threads))
	inputs := ReplicaInputs(snap, e.Config.Allocation, rcfg.UseSearchReplicas)

	health, herr := api.Health(ctx)
	in := safety.Inputs{Reachable: herr, Health: health.Status, Relocating: health.Relocating, Initializing: health.Initializing,
		StatsAge: e.now().Sub(snap.At)}
	in.SearchLatencyMs, in.LatencyKnown = meanSearchLatency(snap)
	res.SearchLatencyMs, res.LatencyKnown = in.SearchLatencyMs, in.LatencyKnown
	// Per node from the snapshot the decision was made on; the cluster's relocations from the
	// fresher health when it counts more.
	in.Recoveries = safety.RecoveriesOf(snap, nil)
	in.Recoveries.Relocating = max(in.Recoveries.Relocating, health.Relocating)
	// Slow searches are what more replicas cure: the latency check does not hold replicas back.
	in.LatencyExempt = true
	res.Breaker = safety.Evaluate(in, e.Config.Safety)

	// Memory first, conditionally: a racing invocation loses here before touching the cluster,
	// then decides again from the memory the winner stored. A change held back by the breaker is
	// decided again next cycle from the memory it would have had.
	var apply []replicas.Decision
	for attempt := 1; ; attempt++ {
		var stored bool
		apply, stored, err = e.decideReplicas(ctx, name, snap, inputs, rcfg, herr, &res)
		if err != nil {
			return res, err
		}
		if stored {
			break
		}
		if attempt == memoryAttempts {
			e.log().Warn("replicas: cooldown memory kept changing under this invocation; leaving this snapshot to the others",
				"cluster", name, "snapshot", snapshotKey, "attempts", attempt)
			res.Repeated, res.Applied = true, nil
			return res, nil
		}
		e.log().Info("replicas: another invocation stored cooldowns first; deciding again from them",
			"cluster", name, "snapshot", snapshotKey, "attempt", attempt)
	}
	var events []bus.ReplicaChange
	for _, d := range apply {
		if !e.Config.Safety.DryRun {
			if err := api.PutIndexSettings(ctx, d.Index, map[string]any{d.Setting: d.To}); err != nil {
				return res, fmt.Errorf("replicas %s: set %s on %s: %w", name, d.Setting, d.Index, err)
			}
		}
		res.Applied = append(res.Applied, d)
		events = append(events, bus.ReplicaChange{Index: d.Index, Setting: d.Setting, From: d.From, To: d.To, Kind: d.Kind,
			L: d.L, N: d.N, S: d.S, Reason: d.Reason})
		e.log().Info("replicas changed", "cluster", name, "index", d.Index, "setting", d.Setting, "from", d.From, "to", d.To,
			"kind", d.Kind, "dry_run", e.Config.Safety.DryRun, "reason", d.Reason)
	}
	res.countCopies()
	e.metric(name, "ReplicaChanges", telemetry.UnitCount, float64(len(events)))
	if len(events) > 0 {
		if err := e.Bus.Publish(ctx, bus.Event{DetailType: bus.TypeReplicasChanged, Time: e.now(),
			Detail: bus.ReplicasChanged{Cluster: name, DryRun: e.Config.Safety.DryRun, Changes: events}}); err != nil {
			return res, fmt.Errorf("replicas %s: %w", name, err)
		}
	}
	return res, nil
}

// memoryAttempts bounds how often one invocation re-reads and re-decides after losing a
// conditional write of a memory item to another invocation. Invocations per cluster are few (the
// 30 s tick, an alarm, a duplicate delivery), so three losses in a row mean others are deciding.
const memoryAttempts = 3

// decideReplicas reads the cooldown memory, decides, and stores the next memory on the condition
// that nobody stored another since the read. stored is false when somebody did: res then holds
// this attempt's decisions, to be decided again.
func (e *Engine) decideReplicas(ctx context.Context, name string, snap *cluster.Snapshot, inputs []replicas.IndexInput,
	rcfg replicas.Config, herr error, res *ReplicasResult) (apply []replicas.Decision, stored bool, err error) {
	mkey := state.Key{PK: pk(name), SK: replicasMemoryKey}
	// One entry per index: a large value at tens of thousands of indices, stored in parts of which
	// a cycle rewrites only the changed ones.
	mem, memRef, err := replicaMemories.getMemory(ctx, e.Store, mkey)
	if err != nil && !errors.Is(err, state.ErrNotFound) {
		return nil, false, fmt.Errorf("replicas %s: %w", name, err)
	}
	memStored := err == nil
	changes, all, next := replicas.Decide(snap.At, inputs, mem, rcfg)
	res.Decisions = all
	for _, d := range changes {
		if res.Breaker.Closed || (d.Kind == replicas.KindCap && herr == nil) {
			apply = append(apply, d)
			continue
		}
		e.log().Info("replica change held", "cluster", name, "index", d.Index, "from", d.From, "to", d.To, "reason", d.Reason, "breaker", res.Breaker.Reason())
	}
	if len(apply) < len(changes) {
		next = heldMemory(next, mem, changes, apply)
	}
	if memStored && len(apply) == 0 && sameMemory(mem, next) {
		// Nothing to apply and nothing to remember: storing the memory again would cost a write a
		// cycle, and with nothing applied there is no race for its condition to settle.
		return nil, true, nil
	}
	if _, err := state.PutLargeJSON(ctx, e.Store, mkey, next, memRef, condFor(memRef.Version), 0, e.now()); err != nil {
		if errors.Is(err, state.ErrConflict) {
			return nil, false, nil
		}
		return nil, false, fmt.Errorf("replicas %s: store cooldowns: %w", name, err)
	}
	return apply, true, nil
}

// condFor is the condition of a read-modify-write of an item read at version (0: none was live).
func condFor(version int64) state.Condition {
	if version == 0 {
		return state.Condition{IfAbsent: true}
	}
	return state.Condition{IfVersion: version}
}

// heldMemory keeps the previous memory for indices whose change the breaker held back.
func heldMemory(next, prev map[string]replicas.Memory, changes, applied []replicas.Decision) map[string]replicas.Memory {
	done := map[string]bool{}
	for _, d := range applied {
		done[d.Index] = true
	}
	for _, d := range changes {
		if done[d.Index] {
			continue
		}
		if m, ok := prev[d.Index]; ok {
			next[d.Index] = m
		} else {
			delete(next, d.Index)
		}
	}
	return next
}
