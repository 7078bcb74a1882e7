// Package collect is the production cluster API of the engine: it reads OpenSearch (or the simulator,
// over the same HTTP path) with shared/opensearch and turns the responses into shardwise's model,
// and it carries out reroutes and settings changes.
package collect

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/shardwise/shardwise/shared/duration"

	"golang.org/x/sync/errgroup"

	"github.com/shardwise/shardwise/shared/allocation"
	"github.com/shardwise/shardwise/shared/cluster"
	"github.com/shardwise/shardwise/shared/engine"
	"github.com/shardwise/shardwise/shared/opensearch"
	"github.com/shardwise/shardwise/shared/sandbox"
)

// API adapts an OpenSearch client to the engine.
type API struct {
	Client *opensearch.Client
	// Clock stamps samples; the local runner passes the simulator's virtual clock.
	Clock func() time.Time

	mu    sync.Mutex
	pools map[string]opensearch.NodeInfo // node id → configured pool sizes (from _nodes)
}

var (
	_ engine.ClusterAPI = (*API)(nil)
	_ engine.SandboxAPI = (*API)(nil)
)

// New returns an API over client.
func New(client *opensearch.Client, clock func() time.Time) *API {
	if clock == nil {
		clock = time.Now
	}
	return &API{Client: client, Clock: clock, pools: map[string]opensearch.NodeInfo{}}
}

// Read fetches node stats, shard stats, cluster state, health and settings concurrently and builds
// one sample.
func (a *API) Read(ctx context.Context) (cluster.Sample, error) {
	s, err := a.read(ctx, nil, true)
	return s, clusterErr(err)
}

// ReadTopology is Read without the shard stats (_stats?level=shards), whose counters only rates
// need: where every copy is, the nodes' fresh stats, health and settings. It is the largest answer
// a cluster gives (13 MB of JSON at 30,000 copies), and the move function, which acts on the
// planned snapshot's loads, read it a second time each cycle it had moves. Copies carry no size
// (cluster.Snapshot.CarryLoads takes them from the planned snapshot).
func (a *API) ReadTopology(ctx context.Context) (cluster.Snapshot, error) {
	s, err := a.read(ctx, nil, false)
	return s.Snapshot, clusterErr(err)
}

// clusterErr translates the client's errors into the engine's contract: a 401 or 403 matches
// engine.ErrForbidden, a missing index, shard or task engine.ErrNotFound. The client's error stays
// in the chain, for its details and for callers that retry on it.
func clusterErr(err error) error {
	switch {
	case err == nil:
		return nil
	case opensearch.IsForbidden(err):
		return fmt.Errorf("%w: %w", engine.ErrForbidden, err)
	case opensearch.IsNotFound(err):
		return fmt.Errorf("%w: %w", engine.ErrNotFound, err)
	}
	return err
}

// read fetches what a sample needs concurrently; pushed node stats, when given, stand in for
// GET _nodes/stats once they are checked against the cluster state. Without shards it leaves the
// shard stats out (ReadTopology).
func (a *API) read(ctx context.Context, pushed *opensearch.NodesStats, shards bool) (cluster.Sample, error) {
	var (
		ns  opensearch.NodesStats
		ss  opensearch.ShardStats
		cs  opensearch.ClusterState
		h   opensearch.Health
		set opensearch.ClusterSettings
	)
	g, gctx := errgroup.WithContext(ctx)
	if pushed == nil {
		g.Go(func() (err error) { ns, err = a.Client.NodesStats(gctx); return })
	}
	if shards {
		g.Go(func() (err error) { ss, err = a.Client.ShardStats(gctx); return })
	}
	g.Go(func() (err error) { cs, err = a.Client.ClusterState(gctx); return })
	g.Go(func() (err error) { h, err = a.Client.Health(gctx); return })
	g.Go(func() (err error) { set, err = a.Client.ClusterSettings(gctx); return })
	if err := g.Wait(); err != nil {
		return cluster.Sample{}, fmt.Errorf("read cluster: %w", err)
	}
	if pushed != nil {
		if err := CheckPushed(*pushed, cs); err != nil {
			return cluster.Sample{}, err
		}
		ns = *pushed
	}
	if err := a.refreshPools(ctx, ns); err != nil {
		return cluster.Sample{}, err
	}
	a.mu.Lock()
	pools := make(map[string]opensearch.NodeInfo, len(a.pools))
	for k, v := range a.pools {
		pools[k] = v
	}
	a.mu.Unlock()
	return Build(a.Clock(), ns, ss, cs, h, set, pools)
}

// refreshPools reads _nodes when a node it has not seen appears: the configured WRITE pool size is the
// denominator of utilization, and nodes stats' "threads" only counts threads started so far.
func (a *API) refreshPools(ctx context.Context, ns opensearch.NodesStats) error {
	a.mu.Lock()
	missing := false
	for _, n := range ns.Nodes {
		if _, ok := a.pools[n.ID]; !ok {
			missing = true
			break
		}
	}
	a.mu.Unlock()
	if !missing {
		return nil
	}
	info, err := a.Client.NodesInfo(ctx)
	if err != nil {
		return fmt.Errorf("read cluster: %w", err)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, n := range info.Nodes {
		a.pools[n.ID] = n
	}
	return nil
}

// Build assembles a sample from the five responses. It is pure so it can be tested and fuzzed.
func Build(at time.Time, ns opensearch.NodesStats, ss opensearch.ShardStats, cs opensearch.ClusterState,
	h opensearch.Health, set opensearch.ClusterSettings, pools map[string]opensearch.NodeInfo) (cluster.Sample, error) {
	// Sized up front: at 100,000 copies, growing these maps and the copy list took a third of
	// Build.
	snap := cluster.Snapshot{At: at, Health: h.Status}
	if len(cs.Routing) > 0 {
		snap.Copies = make([]cluster.Copy, 0, len(cs.Routing))
	}
	ctrs := cluster.Counters{At: at, Nodes: make(map[string]cluster.NodeCounters, len(ns.Nodes)),
		Copies: make(map[string]cluster.CopyCounters, len(ss.Copies))}

	wm, err := set.DiskHighWatermark()
	if err != nil {
		return cluster.Sample{}, fmt.Errorf("read cluster: %w", err)
	}
	if wm.MinFreeBytes > 0 {
		snap.Settings.DiskHighWatermarkFreeBytes = wm.MinFreeBytes
	} else {
		snap.Settings.DiskHighWatermark = wm.UsedRatio
	}
	snap.Settings.AwarenessAttributes = set.AwarenessAttributes()
	snap.Settings.ForcedAwareness = set.ForcedAwareness()
	f := set.Filters()
	snap.Settings.Filters = cluster.Filters{Include: f.Include, Exclude: f.Exclude, Require: f.Require}
	snap.Settings.AllocationEnable = set.AllocationEnable()
	snap.Settings.SameShardHost = set["cluster.routing.allocation.same_shard.host"] == "true"
	rl, err := set.RecoveryLimits()
	if err != nil {
		return cluster.Sample{}, fmt.Errorf("read cluster: %w", err)
	}
	snap.Settings.Recoveries = cluster.RecoveryLimits{NodeIncoming: rl.NodeIncoming, NodeOutgoing: rl.NodeOutgoing,
		ClusterRebalance: rl.ClusterRebalance, Known: true}
	if snap.Settings.RecoveryBytesPerSecond, err = set.RecoveryBytesPerSecond(); err != nil {
		return cluster.Sample{}, fmt.Errorf("read cluster: %w", err)
	}
	tspn, err := set.TotalShardsPerNode()
	if err != nil {
		return cluster.Sample{}, fmt.Errorf("read cluster: %w", err)
	}
	snap.Settings.TotalShardsPerNode = max(tspn, 0)
	tpspn, err := set.TotalPrimaryShardsPerNode()
	if err != nil {
		return cluster.Sample{}, fmt.Errorf("read cluster: %w", err)
	}
	snap.Settings.TotalPrimaryShardsPerNode = max(tpspn, 0)

	for _, n := range ns.Nodes {
		node := cluster.Node{ID: n.ID, Name: n.Name, Host: n.Host, IP: n.IP, Roles: n.Roles, Attributes: n.Attributes,
			HeapUsedBytes: n.HeapUsedBytes, HeapMaxBytes: n.HeapMaxBytes,
			DiskTotalBytes: n.DiskTotalBytes, DiskAvailableBytes: n.DiskAvailableBytes, StatsAt: n.Timestamp,
			Write:  cluster.Pool{Threads: n.Write.Threads, Queue: n.Write.Queue, Active: n.Write.Active},
			Search: cluster.Pool{Threads: n.Search.Threads, Queue: n.Search.Queue, Active: n.Search.Active}}
		if p, ok := pools[n.ID]; ok {
			if p.Write.Size > 0 {
				node.Write.Threads = p.Write.Size
			}
			if p.Search.Size > 0 {
				node.Search.Threads = p.Search.Size
			}
		}
		stamp := n.Timestamp
		if stamp.IsZero() {
			stamp = at
		}
		ctrs.Nodes[n.ID] = cluster.NodeCounters{At: stamp, WriteCompleted: n.Write.Completed, WriteRejected: n.Write.Rejected,
			SearchCompleted: n.Search.Completed, SearchRejected: n.Search.Rejected, WriteQueue: n.Write.Queue}
		snap.Nodes = append(snap.Nodes, node)
	}

	for _, ix := range cs.Indices {
		if ix.State == "close" {
			continue
		}
		// OpenSearch writes "no limit" as -1; the model's no limit is 0.
		mi := cluster.Index{Name: ix.Name, Primaries: ix.NumberOfShards, Replicas: ix.NumberOfReplicas,
			SearchReplicas: ix.NumberOfSearchReplicas, Hidden: ix.Hidden, TotalShardsPerNode: max(ix.TotalShardsPerNode, 0),
			ReplicationType: ix.ReplicationType, TotalPrimaryShardsPerNode: max(ix.TotalPrimaryShardsPerNode, 0), Created: ix.CreationDate,
			Filters: cluster.Filters{Include: ix.Filters.Include, Exclude: ix.Filters.Exclude, Require: ix.Filters.Require}}
		if ix.NodeLeftDelayedTimeoutSet {
			mi.NodeLeftDelayedTimeout, mi.NodeLeftDelayedTimeoutSet = duration.Duration(ix.NodeLeftDelayedTimeout), true
		}
		snap.Indices = append(snap.Indices, mi)
	}

	// The routing table is the truth about where copies are (it lists unassigned and initializing
	// ones too); shard stats add sizes and counters to the active ones.
	stats := newStatsIndex(ss.Copies, cs.Routing)
	for _, r := range cs.Routing {
		c := cluster.Copy{Index: r.Index, Shard: r.Shard, Primary: r.Primary, State: r.State, Node: r.Node, RelocatingNode: r.RelocatingNode}
		st, size := stats.find(r)
		if st != nil && r.Node != "" {
			c.SizeBytes = st.StoreBytes
			k := cluster.CopyKey(r.Index, r.Shard, r.Node)
			ctrs.Copies[k] = cluster.CopyCounters{IndexTimeMillis: st.IndexTimeMillis, SearchTimeMillis: st.QueryTimeMillis + st.FetchTimeMillis}
			nc := ctrs.Nodes[r.Node]
			nc.QueryTimeMillis += st.QueryTimeMillis
			nc.QueryTotal += st.QueryTotal
			ctrs.Nodes[r.Node] = nc
		} else {
			c.SizeBytes = size
		}
		if r.State == cluster.StateInitializing && r.RelocatingNode != "" {
			// The target half of a relocation: OpenSearch lists it as its own INITIALIZING entry.
			// The view counts it through the RELOCATING source; keep it out of the copy list.
			continue
		}
		snap.Copies = append(snap.Copies, c)
	}
	snap.Sort()
	return cluster.Sample{Snapshot: snap, Counters: ctrs}, nil
}

// statsIndex finds the shard stats of a routing table's copies: a copy's own (same index, shard
// and node; the last listed if several), and its shard's size (the largest copy's). The client
// lists both by index and shard, and then it walks them side by side: at 30,000 copies, maps
// keyed by index, shard and node took a third of Build. Lists in another order go through maps.
type statsIndex struct {
	copies []opensearch.ShardCopyStats
	// Side by side: next is where the shard of the last routing entry found starts.
	sorted bool
	next   int
	// Otherwise, by copy and by shard.
	byCopy  map[statsKey]*opensearch.ShardCopyStats
	byShard map[cluster.ShardID]int64
}

type statsKey struct {
	index string
	shard int
	node  string
}

func newStatsIndex(copies []opensearch.ShardCopyStats, routing []opensearch.ShardRouting) *statsIndex {
	x := &statsIndex{copies: copies}
	x.sorted = slices.IsSortedFunc(copies, func(a, b opensearch.ShardCopyStats) int { return compareShard(a.Index, a.Shard, b.Index, b.Shard) }) &&
		slices.IsSortedFunc(routing, func(a, b opensearch.ShardRouting) int { return compareShard(a.Index, a.Shard, b.Index, b.Shard) })
	if x.sorted {
		return x
	}
	x.byCopy = make(map[statsKey]*opensearch.ShardCopyStats, len(copies))
	x.byShard = make(map[cluster.ShardID]int64, len(copies))
	for i := range copies {
		c := &copies[i]
		x.byCopy[statsKey{c.Index, c.Shard, c.Node}] = c
		id := cluster.ShardID{Index: c.Index, Shard: c.Shard}
		x.byShard[id] = max(x.byShard[id], c.StoreBytes)
	}
	return x
}

func compareShard(indexA string, shardA int, indexB string, shardB int) int {
	return cmp.Or(strings.Compare(indexA, indexB), cmp.Compare(shardA, shardB))
}

// find returns r's stats (nil if none) and its shard's size. Side by side, it must be called
// with the routing entries in their order.
func (x *statsIndex) find(r opensearch.ShardRouting) (*opensearch.ShardCopyStats, int64) {
	if !x.sorted {
		return x.byCopy[statsKey{r.Index, r.Shard, r.Node}], x.byShard[cluster.ShardID{Index: r.Index, Shard: r.Shard}]
	}
	cs := x.copies
	for x.next < len(cs) && compareShard(cs[x.next].Index, cs[x.next].Shard, r.Index, r.Shard) < 0 {
		x.next++
	}
	var own *opensearch.ShardCopyStats
	var size int64
	for i := x.next; i < len(cs) && cs[i].Shard == r.Shard && cs[i].Index == r.Index; i++ {
		if cs[i].Node == r.Node {
			own = &cs[i]
		}
		size = max(size, cs[i].StoreBytes)
	}
	return own, size
}

// Health reads the cluster's health.
func (a *API) Health(ctx context.Context) (engine.Health, error) {
	h, err := a.Client.Health(ctx)
	if err != nil {
		return engine.Health{}, clusterErr(err)
	}
	return engine.Health{Status: h.Status, Relocating: h.RelocatingShards, Initializing: h.InitializingShards, Unassigned: h.UnassignedShards}, nil
}

// Reroute sends the moves as move commands in one _cluster/reroute call. OpenSearch applies a
// call's commands in one cluster-state update, all or none, but with explain=true it answers a
// command its deciders refuse with a NO decision and HTTP 200, and applies the others. So only the
// dry run asks for the explanation, and any NO in it refuses the whole call; the real call goes
// without explain, where a refused command fails the call and nothing applies. Both refusals match
// engine.ErrRerouteRefused.
func (a *API) Reroute(ctx context.Context, moves []allocation.Move, dryRun bool) (engine.RerouteResult, error) {
	cmds := make([]opensearch.RerouteCommand, 0, len(moves))
	for _, m := range moves {
		cmds = append(cmds, opensearch.RerouteCommand{Move: &opensearch.MoveCommand{Index: m.Index, Shard: m.Shard, FromNode: m.From, ToNode: m.To}})
	}
	r, err := a.Client.Reroute(ctx, cmds, opensearch.RerouteOptions{DryRun: dryRun, Explain: dryRun})
	if err != nil {
		if apiErr, ok := errors.AsType[*opensearch.APIError](err); ok && apiErr.Status == http.StatusBadRequest && apiErr.Type == "illegal_argument_exception" {
			return engine.RerouteResult{}, fmt.Errorf("%w: %w", engine.ErrRerouteRefused, err)
		}
		return engine.RerouteResult{}, clusterErr(err)
	}
	var out engine.RerouteResult
	var refusals []string
	for _, e := range r.Explanations {
		var parts, no []string
		for _, d := range e.Decisions {
			part := fmt.Sprintf("%s %s: %s", d.Decider, d.Decision, d.Explanation)
			parts = append(parts, part)
			if strings.EqualFold(d.Decision, "NO") {
				no = append(no, part)
			}
		}
		explained := fmt.Sprintf("%s %s[%d] %s→%s: %s", e.Command, e.Index, e.Shard, e.FromNode, e.ToNode, strings.Join(parts, "; "))
		out.Explanations = append(out.Explanations, explained)
		if len(no) > 0 {
			refusals = append(refusals, fmt.Sprintf("%s %s[%d] %s→%s: %s", e.Command, e.Index, e.Shard, e.FromNode, e.ToNode, strings.Join(no, "; ")))
		}
	}
	if len(refusals) > 0 {
		return out, fmt.Errorf("%w: %s", engine.ErrRerouteRefused, strings.Join(refusals, "; "))
	}
	return out, nil
}

// IndexSettings reads an index's flat settings.
func (a *API) IndexSettings(ctx context.Context, index string) (map[string]string, error) {
	s, err := a.Client.IndexSettings(ctx, index)
	return s, clusterErr(err)
}

// PutIndexSettings updates an index's settings.
func (a *API) PutIndexSettings(ctx context.Context, index string, settings map[string]any) error {
	return clusterErr(a.Client.PutIndexSettings(ctx, index, settings))
}

// PutClusterSettings updates the cluster's persistent settings.
func (a *API) PutClusterSettings(ctx context.Context, settings map[string]any) error {
	return clusterErr(a.Client.PutClusterSettings(ctx, settings))
}

// searchActions selects the search tasks sandboxes govern: the top-level search and msearch
// tasks and their shard-level children (indices:data/read/search[phase/...]).
const searchActions = "*search*"

// SearchTasks lists running search tasks with their parents, headers and resource use.
func (a *API) SearchTasks(ctx context.Context) ([]sandbox.Task, error) {
	tl, err := a.Client.Tasks(ctx, searchActions)
	if err != nil {
		return nil, clusterErr(err)
	}
	if len(tl.Failures) > 0 {
		return nil, fmt.Errorf("tasks: %d nodes or tasks failed to report, first %s: %s", len(tl.Failures), tl.Failures[0].NodeID, tl.Failures[0].Reason)
	}
	out := make([]sandbox.Task, 0, len(tl.Tasks))
	for _, t := range tl.Tasks {
		st := sandbox.Task{ID: t.ID, ParentID: t.ParentTaskID, Node: t.Node, Action: t.Action, Description: t.Description,
			Headers: t.Headers, Start: t.StartTime, RunningTime: t.RunningTime, Cancellable: t.Cancellable, Cancelled: t.Canceled}
		if t.Resources != nil {
			st.CPUTimeNanos, st.MemoryBytes = t.Resources.CPUTimeNanos, t.Resources.MemoryBytes
			st.Queued = t.Resources.ThreadExecutions == 0 && sandbox.ShardLevel(t.Action)
		}
		out = append(out, st)
	}
	return out, nil
}

// NodeLoads reads each node's own CPU (the OpenSearch process's, else the host's), heap and
// processors. A node that failed to answer fails the read: its tasks could not be weighed.
func (a *API) NodeLoads(ctx context.Context) ([]sandbox.NodeLoad, error) {
	nl, err := a.Client.NodeLoads(ctx)
	if err != nil {
		return nil, clusterErr(err)
	}
	if len(nl.Failures) > 0 {
		return nil, fmt.Errorf("node loads: %d nodes failed to report, first %s: %s", len(nl.Failures), nl.Failures[0].NodeID, nl.Failures[0].Reason)
	}
	out := make([]sandbox.NodeLoad, 0, len(nl.Nodes))
	for _, n := range nl.Nodes {
		cpu := n.ProcessCPUPercent
		if cpu < 0 {
			cpu = n.OSCPUPercent
		}
		out = append(out, sandbox.NodeLoad{Node: n.ID, Name: n.Name, CPU: float64(max(cpu, 0)) / 100,
			HeapUsedBytes: n.HeapUsedBytes, HeapMaxBytes: n.HeapMaxBytes, Processors: n.Processors})
	}
	return out, nil
}

// CancelTask cancels a task and, with it, its children on every node.
func (a *API) CancelTask(ctx context.Context, id string) error {
	return clusterErr(a.Client.CancelTask(ctx, id))
}
