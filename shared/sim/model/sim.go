package model

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/shardwise/shardwise/shared/cluster"
	"github.com/shardwise/shardwise/shared/duration"
	"github.com/shardwise/shardwise/shared/sim/scenario"
	"github.com/shardwise/shardwise/shared/sim/settings"
)

// Options configures a simulation.
type Options struct {
	// Start is the virtual epoch; zero means 2026-01-01T00:00:00Z.
	Start time.Time
	// MaxMovesPerCycle is the balancer's own budget of relocations per cycle (one tick): more
	// started by reroute within a tick is a safety violation. 0 leaves it unchecked.
	MaxMovesPerCycle int
	// Rebalancer is what rebalances between ticks when the scenario has the built-in balancer on:
	// OpenSearch's count balancer by default, or a baseline run instead of it.
	Rebalancer Rebalancer
}

// Rebalancer names what rebalances a cluster between ticks.
type Rebalancer string

// Rebalancers.
const (
	// RebalancerOpenSearch is OpenSearch's BalancedShardsAllocator: shard and index counts.
	RebalancerOpenSearch Rebalancer = "opensearch"
	// RebalancerESWeights is Elasticsearch's stateful BalancedShardsAllocator weight function, with
	// write load and disk usage beside the counts.
	RebalancerESWeights Rebalancer = "es-weights"
	// RebalancerESWeightsLive is RebalancerESWeights given each shard's true write load every tick
	// instead of Elasticsearch's fixed per-index forecast: an oracle, to show what the weight
	// function would do with knowledge Elasticsearch lacks.
	RebalancerESWeightsLive Rebalancer = "es-weights-live"
	// RebalancerESWriteLoad is RebalancerESWeights with Elasticsearch's WriteLoadConstraintDecider
	// and its moves off write-load hotspots, fed the node and shard stats Elasticsearch polls.
	RebalancerESWriteLoad Rebalancer = "es-writeload"
	// RebalancerOff leaves rebalancing to a balancer outside the cluster (Sway): the allocator still
	// assigns unassigned copies and moves those that may not remain.
	RebalancerOff Rebalancer = "off"
)

// Allocator is OpenSearch's allocator as the cluster runs it (package alloc): a round between ticks,
// the reroute after an index settings change, and the gateway allocation of a returning node's
// data.
type Allocator interface {
	// Allocate is one round: it reports how many relocations the rebalancer started.
	Allocate() int
	// AllocateAndMove assigns unassigned copies and moves those that may not remain, without
	// rebalancing.
	AllocateAndMove()
	// AllocateExistingData puts copies whose data is on a present node back on it, and reports
	// how many.
	AllocateExistingData() int
}

// Plugins is the work inside the nodes that is not the indices' own (package plugins): the
// tenants' searches, and the workload-management plugin acting on them.
type Plugins interface {
	// TenantLoads offers the tenants' searches over the tick from t to t+dt to the search pools.
	TenantLoads(t, dt float64)
	// TenantSettle settles the tenants' searches once the pools' waits for the tick are known.
	TenantSettle()
	// TenantResults adds the tenants' measures to a run's result.
	TenantResults(r *Result)
}

// Sim is a simulated OpenSearch cluster on a virtual clock. All methods are safe for concurrent use.
type Sim struct {
	Mu sync.RWMutex

	Spec      *scenario.Scenario
	Start     time.Time
	TickSecs  float64
	Ticks     int // steps taken
	maxTicks  int
	Rng       *rand.Rand
	builtinOn bool
	// Rebalancer rebalances between ticks while builtinOn.
	Rebalancer Rebalancer

	Nodes     []*Node // every node ever, by ord
	NodeOrder []*Node // seeded tie-break order for placement
	ByName    map[string]*Node
	Indices   []*Index
	ByIndex   map[string]*Index
	groups    map[string]*group

	events    []scenario.Event // sorted by time
	nextEvent int

	Recoveries []*Recovery
	RecSeq     int64
	Incoming   []int   // recoveries into each node ord
	Outgoing   []int   // recoveries out of each node ord
	Leaving    []int64 // bytes relocating away from each node ord

	Persistent, Transient map[string]string
	Defaults              map[string]string
	Cfg                   *AllocConfig
	watermarkDefault      float64
	recoveryDefault       float64

	ClusterUUID  string
	StateVersion int64

	Faults  []scenario.Event // api_errors, api_latency and reroute_rejects windows; read-only after New
	FaultMu sync.Mutex
	FaultRN *rand.Rand

	Cancelled map[string]time.Time // task ids cancelled during the current tick

	// Reroute calls that started relocations during the current tick, and those relocations:
	// one mover acts once per cycle, within its budget.
	MaxMovesPerCycle int
	TickReroutes     int
	TickMoves        int

	Res Result
	// TopologyChanged is when a node last left or joined during the run: OpenSearch's balancer
	// re-places copies after that for the new topology, which reverses nothing shardwise did.
	TopologyChanged time.Time
	queueSamples    []float64
	searchLat       []Weighted
	episodeTicks    int
	episodes        []int           // the lengths in ticks of the hotspot episodes that ended
	seen            map[string]bool // ongoing tick-invariant violations, reported once each

	// Live is sim serve's clock within a tick (live.go); off for simulate runs.
	Live live

	alloc   Allocator
	plugins Plugins
}

// Weighted is a sample V with its weight W (a latency and the queries it served), for
// WeightedPercentile.
type Weighted struct{ V, W float64 }

// TickReport is what one Step did.
type TickReport struct {
	At           time.Time  `json:"at"`
	Tick         int        `json:"tick"`
	Nodes        []NodeTick `json:"nodes"`
	Relocating   int        `json:"relocating"`
	Initializing int        `json:"initializing"`
	Unassigned   int        `json:"unassigned"`
	Health       string     `json:"health"`
	// Events lists the scenario events applied at the start of this tick.
	Events []string `json:"events,omitempty"`
	// BuiltinRelocations counts relocations the built-in balancer started after this tick.
	BuiltinRelocations int         `json:"builtin_relocations"`
	RejectedWrites     int64       `json:"rejected_writes"`
	Violations         []Violation `json:"violations,omitempty"`
	// MaxCopyWriteLoad is the offered WRITE load of the heaviest active copy, in threads.
	MaxCopyWriteLoad float64 `json:"max_copy_write_load"`
	// Replicas counts replica copies occupying a node over this tick, as replica_node_hours does.
	Replicas int `json:"replicas"`
	// Zones are the WRITE loads each awareness value must carry (none without awareness).
	Zones []ZoneNeed `json:"zones,omitempty"`
}

// NodeTick is one node's state over one tick.
type NodeTick struct {
	Name string `json:"name"`
	// WriteUtil is offered WRITE load over WRITE threads (above 1 means saturated).
	WriteUtil float64 `json:"write_util"`
	// QueueLatencySeconds is the true WRITE queue wait: Erlang C below saturation, backlog/(c·μ) above.
	QueueLatencySeconds float64 `json:"queue_latency_seconds"`
	WriteQueue          float64 `json:"write_queue"`
	Hot                 bool    `json:"hot"`
	SearchUtil          float64 `json:"search_util"`
	SearchLatencyMs     float64 `json:"search_latency_ms"`
	Shards              int     `json:"shards"`
	DiskUsedBytes       int64   `json:"disk_used_bytes"`
	// WriteLoad is the offered WRITE load in threads; WriteThreads the pool's size.
	WriteLoad    float64 `json:"write_load"`
	WriteThreads int     `json:"write_threads"`
}

// Violation is a breach of a safety invariant.
type Violation struct {
	What      string    `json:"what"`
	When      time.Time `json:"when"`
	AtSeconds float64   `json:"at_seconds"`
}

// Result is what the simulator itself measures over a run (docs/scenarios.md, "The run result"). Fields the
// simulator cannot know (balancer, plan times, scale-up signals) are the runner's.
type Result struct {
	Scenario             string `json:"scenario"`
	Ticks                int    `json:"ticks"`
	Moves                int    `json:"moves"`
	BytesMoved           int64  `json:"bytes_moved"`
	MovesUndoneByBuiltin int    `json:"moves_undone_by_builtin"`
	// MovesRebalancedAfterTopology counts copies an external move placed that OpenSearch's
	// balancer moved on after a node left or joined since they landed: a new topology, not a
	// reversal (those are MovesUndoneByBuiltin).
	MovesRebalancedAfterTopology int     `json:"moves_rebalanced_after_topology_change"`
	HotNodeSeconds               float64 `json:"hot_node_seconds"`
	MaxQueueLatencySeconds       float64 `json:"max_queue_latency_seconds"`
	P99QueueLatencySeconds       float64 `json:"p99_queue_latency_seconds"`
	RejectedWrites               int64   `json:"rejected_writes"`
	TimeToCorrectSeconds         float64 `json:"time_to_correct_seconds"`
	// Hotspots counts hotspot episodes (runs of consecutive ticks with any hot node);
	// HotspotSecondsP50 and HotspotSecondsMax are the nearest-rank median and the longest of their
	// durations, ticks × tick_seconds, an episode still going at the end counted as it stands.
	Hotspots           int     `json:"hotspots"`
	HotspotSecondsP50  float64 `json:"hotspot_seconds_p50"`
	HotspotSecondsMax  float64 `json:"hotspot_seconds_max"`
	ReplicaChanges     int     `json:"replica_changes"`
	ReplicaNodeHours   float64 `json:"replica_node_hours"`
	P99SearchLatencyMs float64 `json:"p99_search_latency_ms"`
	// P50SearchLatencyMs is the median of the same samples as P99SearchLatencyMs;
	// SearchHotNodeSeconds is HotNodeSeconds for the search pool, hot at a 1 s queue wait.
	P50SearchLatencyMs   float64     `json:"p50_search_latency_ms"`
	SearchHotNodeSeconds float64     `json:"search_hot_node_seconds"`
	SafetyViolations     int         `json:"safety_violations"`
	Violations           []Violation `json:"violations,omitempty"`
	// BuiltinRelocations and AllocatorRelocations count relocations OpenSearch itself started:
	// rebalancing, and moving copies off nodes they may not remain on (filters, watermark).
	BuiltinRelocations   int `json:"builtin_relocations"`
	AllocatorRelocations int `json:"allocator_relocations"`
	// MovesWhileBuiltinBusy counts reroute moves accepted while OpenSearch had relocations of its
	// own in flight.
	MovesWhileBuiltinBusy int `json:"moves_while_builtin_busy"`
	// MovesRefused counts reroute move commands an allocation decider answered NO, in a dry run
	// or not: a move the balancer planned that OpenSearch would not make.
	MovesRefused   int `json:"moves_refused"`
	TasksCancelled int `json:"tasks_cancelled"`
	// TasksCancelledByTenant counts, per tenant, the tasks cancel requests cancelled (a shard-level
	// task cancelled with its coordinating task is not counted again); TenantP99SearchLatencyMs is
	// each tenant's nearest-rank p99 search latency over its queries that completed. Both are set
	// when the scenario has tenants.
	TasksCancelledByTenant   map[string]int     `json:"tasks_cancelled_by_tenant,omitempty"`
	TenantP99SearchLatencyMs map[string]float64 `json:"tenant_p99_search_latency_ms,omitempty"`
	// SearchesCancelledByTenant counts, per tenant, the searches a cancellation reached (by a
	// cancel request or by the workload-management plugin), each once; set with tenants.
	SearchesCancelledByTenant map[string]int `json:"searches_cancelled_by_tenant,omitempty"`
	// SearchesRejectedByTenant counts, per tenant, the searches the workload-management plugin
	// rejected on arrival, whole or on a shard (wlm_enforce.go); tenants with none are left out.
	SearchesRejectedByTenant map[string]int `json:"searches_rejected_by_tenant,omitempty"`

	rejectedRaw float64
	longestEp   int
}

// New builds the cluster of sc, its copies not yet placed: the allocator Attach gives it places
// them (package sim's New does both). The scenario is validated first.
func New(sc *scenario.Scenario, opts Options) (*Sim, error) {
	if sc == nil {
		return nil, errors.New("new simulation: nil scenario")
	}
	if err := sc.Validate(); err != nil {
		return nil, fmt.Errorf("new simulation: %w", err)
	}
	start := opts.Start
	if start.IsZero() {
		var err error
		if start, err = time.Parse(time.RFC3339, defaultEpochRFC3339); err != nil {
			return nil, fmt.Errorf("new simulation: default epoch: %w", err)
		}
	}
	s := &Sim{
		Spec:       sc,
		Start:      start.UTC(),
		TickSecs:   sc.TickSeconds,
		maxTicks:   int(math.Ceil(sc.DurationSeconds/sc.TickSeconds - 1e-9)),
		Rng:        rand.New(rand.NewPCG(sc.Seed, 0x5348415244574953)), // "SHARDWIS"
		FaultRN:    rand.New(rand.NewPCG(sc.Seed, 0x4641554c54530000)), // "FAULTS"
		ByName:     map[string]*Node{},
		ByIndex:    map[string]*Index{},
		groups:     map[string]*group{},
		Persistent: map[string]string{},
		Transient:  map[string]string{},
		Cancelled:  map[string]time.Time{},
		seen:       map[string]bool{},

		MaxMovesPerCycle: opts.MaxMovesPerCycle,
		builtinOn:        sc.Cluster.BuiltinBalancer == nil || *sc.Cluster.BuiltinBalancer,
		Rebalancer:       cmp.Or(opts.Rebalancer, RebalancerOpenSearch),
	}
	switch s.Rebalancer {
	case RebalancerOpenSearch, RebalancerESWeights, RebalancerESWeightsLive, RebalancerESWriteLoad, RebalancerOff:
	default:
		return nil, fmt.Errorf("new simulation: rebalancer %q: want %s, %s, %s, %s or %s", s.Rebalancer,
			RebalancerOpenSearch, RebalancerESWeights, RebalancerESWeightsLive, RebalancerESWriteLoad, RebalancerOff)
	}
	s.Res.Scenario = sc.Name
	s.ClusterUUID = MakeID(sc.Seed, "cluster/"+sc.Name)
	s.watermarkDefault = cmp.Or(sc.Cluster.DiskHighWatermark, cluster.DefaultDiskHighWatermark)
	s.recoveryDefault = cmp.Or(sc.Cluster.RecoveryBytesPerSecond, defaultRecoveryBytesPerSecond)
	s.Defaults = s.defaultSettings()
	s.applyClusterShape()
	for _, ns := range sc.Nodes {
		s.addNode(ns)
	}
	s.NodeOrder = slices.Clone(s.Nodes)
	s.Rng.Shuffle(len(s.NodeOrder), func(i, j int) { s.NodeOrder[i], s.NodeOrder[j] = s.NodeOrder[j], s.NodeOrder[i] })
	for i := range sc.Indices {
		ixs := &sc.Indices[i]
		ix := s.addIndex(ixs.Name, ixs.Primaries, ixs.Replicas, ixs.ShardBytes, ixs.ShardWeights)
		ix.writeLoad, ix.searchLoad = ProfileOr(ixs.WriteLoad), ProfileOr(ixs.SearchLoad)
		ix.applySpecSettings(ixs)
		ix.applyLoadModel(ixs)
		for sn, names := range ixs.Placement {
			for ci, name := range names {
				c := ix.Shards[sn].Copies[ci]
				c.State, c.Node, c.AllocID = StateStarted, s.ByName[name], RandomID(s.Rng)
				c.ResetCounters()
			}
		}
	}
	for _, gs := range sc.IndexGroups {
		g := &group{prefix: gs.NamePrefix, writeLoad: ProfileOr(gs.WriteLoad), searchLoad: ProfileOr(gs.SearchLoad)}
		shares := ZipfShares(gs.Count, 0)
		if gs.Skew != nil && gs.Skew.Kind == "zipf" {
			shares = ZipfShares(gs.Count, gs.Skew.S)
		}
		options := gs.HasOptions()
		for i := range gs.Count {
			ix := s.addIndex(gs.NamePrefix+strconv.Itoa(i), gs.Primaries, gs.Replicas, gs.ShardBytes, gs.ShardWeights)
			ix.group, ix.share = g, shares[i]
			if options {
				spec := gs.Member(i)
				ix.applySpecSettings(&spec)
				ix.applyLoadModel(&spec)
			}
			g.members = append(g.members, ix)
		}
		s.groups[gs.NamePrefix] = g
	}
	s.events = slices.Clone(sc.Events)
	slices.SortStableFunc(s.events, func(a, b scenario.Event) int { return cmp.Compare(a.AtSeconds, b.AtSeconds) })
	for _, e := range s.events {
		switch e.Kind {
		case scenario.EventAPIErrors, scenario.EventAPILatency, scenario.EventRerouteRejects:
			s.Faults = append(s.Faults, e)
		}
	}
	return s, nil
}

// Attach gives the cluster its allocator and its plugins, which New cannot build as they act on
// the cluster (package sim wires them). A cluster steps only with both attached.
func (s *Sim) Attach(a Allocator, p Plugins) { s.alloc, s.plugins = a, p }

// ProfileOr is the load profile p, or no load when the scenario gave none.
func ProfileOr(p *scenario.LoadProfile) scenario.LoadProfile {
	if p == nil {
		return scenario.Constant(0)
	}
	return *p
}

// defaultSettings are the cluster settings defaults the scenario implies, reported by
// GET _cluster/settings?include_defaults=true and used when nothing is set.
func (s *Sim) defaultSettings() map[string]string {
	rebalance := "all"
	if !s.builtinOn {
		// A scenario without the built-in balancer is a cluster with rebalancing switched off.
		rebalance = "none"
	}
	conc := strconv.Itoa(cmp.Or(s.Spec.Cluster.NodeConcurrentRecoveries, defaultNodeConcurrentRecoveries))
	return map[string]string{
		"cluster.name":                                                   ClusterName,
		"cluster.routing.allocation.enable":                              "all",
		"cluster.routing.rebalance.enable":                               rebalance,
		"cluster.routing.allocation.allow_rebalance":                     "indices_all_active",
		"cluster.routing.allocation.cluster_concurrent_rebalance":        strconv.Itoa(defaultClusterConcurrentRebalance),
		"cluster.routing.allocation.node_concurrent_recoveries":          conc,
		"cluster.routing.allocation.node_concurrent_incoming_recoveries": conc,
		"cluster.routing.allocation.node_concurrent_outgoing_recoveries": conc,
		"cluster.routing.allocation.node_initial_primaries_recoveries":   "4",
		"cluster.routing.allocation.disk.threshold_enabled":              "true",
		"cluster.routing.allocation.disk.watermark.low":                  diskLowWatermark,
		"cluster.routing.allocation.disk.watermark.high":                 settings.PercentString(s.watermarkDefault),
		"cluster.routing.allocation.disk.watermark.flood_stage":          diskFloodStage,
		"cluster.routing.allocation.balance.index":                       strconv.FormatFloat(defaultIndexBalance, 'f', -1, 64),
		"cluster.routing.allocation.balance.shard":                       strconv.FormatFloat(defaultShardBalance, 'f', -1, 64),
		"cluster.routing.allocation.balance.threshold":                   "1.0",
		"cluster.routing.allocation.total_shards_per_node":               "-1",
		"cluster.routing.allocation.total_primary_shards_per_node":       "-1",
		"cluster.routing.allocation.awareness.attributes":                "",
		"cluster.max_shards_per_node":                                    "1000",
		"indices.recovery.max_bytes_per_sec":                             settings.FormatBytes(s.recoveryDefault),
	}
}

func (s *Sim) addNode(ns scenario.NodeSpec) *Node {
	d := s.Spec.NodeDefaults
	ord := len(s.Nodes)
	n := &Node{
		Ord:         ord,
		Name:        ns.Name,
		ID:          MakeID(s.Spec.Seed, "node/"+ns.Name),
		EphemeralID: MakeID(s.Spec.Seed, "ephemeral/"+ns.Name),
		Port:        firstTransportPort + ord,
		Zone:        cmp.Or(ns.Zone, d.Zone),
		attributes:  nodeAttributes(ns, d),
		HeapBytes:   cmp.Or(ns.HeapBytes, d.HeapBytes, DefaultHeapBytes),
		DiskBytes:   cmp.Or(ns.DiskBytes, d.DiskBytes, DefaultDiskBytes),
		Present:     true,
		Joined:      s.NowLocked(),
	}
	// A slower node's tasks take speed× as long: the same work keeps speed× the threads busy.
	n.speed = cmp.Or(ns.Speed, d.Speed, 1)
	n.Write = Pool{Threads: cmp.Or(ns.WriteThreads, d.WriteThreads, defaultWriteThreads), TaskSeconds: writeTaskSeconds * n.speed}
	n.Search = Pool{Threads: cmp.Or(ns.SearchThreads, d.SearchThreads, defaultSearchThreads), TaskSeconds: SearchTaskSeconds * n.speed}
	s.Nodes = append(s.Nodes, n)
	s.ByName[n.Name] = n
	return n
}

// preexistingAge is how long before the run a scenario's own indices were created: the cluster
// exists before it, so none of them is young at the start (allocation.YoungIndexAge); an index a
// create_index event adds is created at its time (rollover.go).
const preexistingAge = 24 * time.Hour

func (s *Sim) addIndex(name string, primaries, replicas int, shardBytes int64, weights []float64) *Index {
	ix := &Index{
		Ord: len(s.Indices), Name: name, UUID: MakeID(s.Spec.Seed, "index/"+name), Replicas: replicas,
		ShardBytes: shardBytes, Created: s.Start.Add(-preexistingAge), Settings: map[string]string{}, OperatorSettings: map[string]string{},
	}
	ix.weights = make([]float64, primaries)
	sum := 0.0
	for i := range ix.weights {
		ix.weights[i] = 1
		if weights != nil {
			ix.weights[i] = weights[i]
		}
		sum += ix.weights[i]
	}
	for i := range ix.weights {
		ix.weights[i] /= sum
	}
	for n := range primaries {
		sh := &Shard{Idx: ix, Num: n, Term: 1}
		for r := range replicas + 1 {
			sh.Copies = append(sh.Copies, &ShardCopy{Sh: sh, Primary: r == 0, UnassignedReason: "INDEX_CREATED", UnassignedAt: s.Start})
		}
		ix.Shards = append(ix.Shards, sh)
	}
	s.Indices = append(s.Indices, ix)
	s.ByIndex[name] = ix
	return ix
}

// NowLocked is the virtual time; callers hold the lock.
func (s *Sim) NowLocked() time.Time { return s.Start.Add(s.elapsedDuration()) }

// ElapsedSeconds is the virtual time: whole ticks, and under sim serve the part of the tick in
// progress (live.go).
func (s *Sim) ElapsedSeconds() float64 { return (float64(s.Ticks) + s.Live.frac()) * s.TickSecs }

func (s *Sim) elapsedDuration() time.Duration {
	return time.Duration(math.Round(s.ElapsedSeconds() * float64(time.Second)))
}

// Now is the virtual clock.
func (s *Sim) Now() time.Time {
	s.Mu.RLock()
	defer s.Mu.RUnlock()
	return s.NowLocked()
}

// Elapsed is the virtual time since the start.
func (s *Sim) Elapsed() time.Duration {
	s.Mu.RLock()
	defer s.Mu.RUnlock()
	return s.elapsedDuration()
}

// Done reports whether duration_seconds has elapsed.
func (s *Sim) Done() bool {
	s.Mu.RLock()
	defer s.Mu.RUnlock()
	return s.Ticks >= s.maxTicks
}

// Scenario returns the scenario the simulation runs.
func (s *Sim) Scenario() *scenario.Scenario { return s.Spec }

// Changed bumps the cluster state version after a routing or settings change.
func (s *Sim) Changed() { s.StateVersion++ }

// Step advances one tick: events due now, loads and queues over the tick, recoveries, then the
// allocator and built-in balancer, then the safety invariants and the run's measures.
func (s *Sim) Step() TickReport {
	s.Mu.Lock()
	defer s.Mu.Unlock()
	rep := s.beginTick()
	s.endTick(&rep)
	return rep
}

// beginTick is the first half of a tick, what happens over it: the events due at its start, the
// loads, the queues and the work they serve, and the run's load measures. Under sim serve it runs
// at the tick's start and reads within the tick see its work in proportion (live.go).
func (s *Sim) beginTick() TickReport {
	t := s.ElapsedSeconds()
	dt := s.TickSecs
	applied := s.applyEvents(t)
	clear(s.Cancelled)
	s.TickReroutes, s.TickMoves = 0, 0
	rep := TickReport{Tick: s.Ticks + 1, Events: applied, MaxCopyWriteLoad: s.ComputeLoads(t), Zones: s.zoneNeeds(t)}
	s.plugins.TenantLoads(t, dt)
	rejected := 0.0
	anyHot := false
	for _, n := range s.Nodes {
		if !n.Present {
			continue
		}
		wt := n.Write.step(n.writeLoad, dt)
		st := n.Search.step(n.SearchLoad, dt)
		rejected += wt.rejected
		hot := wt.wait >= hotQueueSeconds
		if hot {
			anyHot = true
			s.Res.HotNodeSeconds += dt
		}
		if st.wait >= searchHotQueueSeconds {
			s.Res.SearchHotNodeSeconds += dt
		}
		if n.writeLoad > 0 {
			s.queueSamples = append(s.queueSamples, wt.wait)
			s.Res.MaxQueueLatencySeconds = max(s.Res.MaxQueueLatencySeconds, wt.wait)
		}
		searchMs := (n.Search.TaskSeconds + st.wait) * 1000
		if st.served > 0 {
			s.searchLat = append(s.searchLat, Weighted{searchMs, st.served})
		}
		rep.Nodes = append(rep.Nodes, NodeTick{
			Name: n.Name, WriteUtil: n.writeLoad / float64(n.Write.Threads), QueueLatencySeconds: wt.wait,
			WriteQueue: wt.queue, Hot: hot, SearchUtil: n.SearchLoad / float64(n.Search.Threads),
			SearchLatencyMs: searchMs, WriteLoad: n.writeLoad, WriteThreads: n.Write.Threads,
		})
	}
	s.plugins.TenantSettle()
	s.serveCopies()
	s.Res.rejectedRaw += rejected
	s.Res.RejectedWrites = int64(math.Round(s.Res.rejectedRaw))
	rep.RejectedWrites = int64(math.Round(rejected))
	s.countEpisode(anyHot)
	rep.Replicas = s.assignedReplicas()
	s.Res.ReplicaNodeHours += float64(rep.Replicas) * dt / 3600
	return rep
}

// endTick is the second half of a tick, what has happened by its end: recoveries advanced, shards
// grown, the clock moved on, the allocator and built-in balancer run, and the safety invariants
// checked.
func (s *Sim) endTick(rep *TickReport) {
	dt := s.TickSecs
	s.advanceRecoveries(dt)
	for _, ix := range s.Indices {
		ix.grow(dt)
	}
	s.Ticks++
	rep.At = s.NowLocked()
	rep.BuiltinRelocations = s.alloc.Allocate()
	rep.Violations = s.CheckTickInvariants()
	s.Refresh()
	byName := map[string]*Node{}
	for _, n := range s.Nodes {
		byName[n.Name] = n
	}
	for i := range rep.Nodes {
		n := byName[rep.Nodes[i].Name]
		rep.Nodes[i].Shards, rep.Nodes[i].DiskUsedBytes = n.ShardCount, n.DiskUsed
	}
	rep.Health, rep.Relocating, rep.Initializing, rep.Unassigned = s.HealthCounts()
	s.Res.Ticks = s.Ticks
}

// countEpisode follows hotspot episodes: runs of consecutive ticks with any hot node.
func (s *Sim) countEpisode(anyHot bool) {
	switch {
	case anyHot:
		if s.episodeTicks == 0 {
			s.Res.Hotspots++
		}
		s.episodeTicks++
		s.Res.longestEp = max(s.Res.longestEp, s.episodeTicks)
	case s.episodeTicks > 0:
		s.episodes = append(s.episodes, s.episodeTicks)
		s.episodeTicks = 0
	}
}

// applyEvents applies the events due at t and names them.
func (s *Sim) applyEvents(t float64) []string {
	applied := s.shapeTick()
	for s.nextEvent < len(s.events) && s.events[s.nextEvent].AtSeconds <= t+1e-9 {
		e := s.events[s.nextEvent]
		if e.WaitForGreen && !s.readyForNext() {
			break // it and the events after it wait (restart.go)
		}
		s.nextEvent++
		applied = append(applied, s.applyEvent(e))
	}
	return applied
}

func (s *Sim) applyEvent(e scenario.Event) string {
	if name, ok := s.applyShapeEvent(e); ok {
		return name
	}
	switch e.Kind {
	case scenario.EventSetWriteLoad, scenario.EventSetSearchLoad:
		write := e.Kind == scenario.EventSetWriteLoad
		if e.Group != "" {
			g := s.groups[e.Group]
			if write {
				g.writeLoad = *e.Load
			} else {
				g.searchLoad = *e.Load
			}
			return e.Kind + " group " + e.Group
		}
		ix := s.ByIndex[e.Index]
		if ix.group != nil {
			// An index of a group leaves the group's split for this load; the other load keeps it.
			w, sr := ix.group.writeLoad, ix.group.searchLoad
			ix.writeLoad, ix.searchLoad = scaled(w, ix.share), scaled(sr, ix.share)
			ix.group = nil
		}
		if write {
			ix.writeLoad = *e.Load
		} else {
			ix.searchLoad = *e.Load
		}
		return e.Kind + " " + e.Index
	case scenario.EventSetShardWeights:
		s.ByIndex[e.Index].setShardWeights(e.Weights)
		return e.Kind + " " + e.Index
	case scenario.EventNodeLeave:
		s.nodeLeave(s.ByName[e.Node.Name])
		return "node_leave " + e.Node.Name
	case scenario.EventNodeJoin:
		n := s.addNode(e.Node.NodeSpec)
		s.TopologyChanged = s.NowLocked()
		s.NodeOrder = append(s.NodeOrder, n)
		s.Changed()
		return "node_join " + n.Name
	}
	// Fault windows need nothing applied: requests check them against the clock (see faultsAt).
	return fmt.Sprintf("%s until %v s", e.Kind, e.UntilSeconds)
}

// scaled multiplies a profile's values by f.
func scaled(p scenario.LoadProfile, f float64) scenario.LoadProfile {
	p.Value *= f
	p.Before *= f
	p.After *= f
	p.From *= f
	p.To *= f
	p.Mean *= f
	p.Amplitude *= f
	pts := make([][]float64, len(p.Points))
	for i, pt := range p.Points {
		pts[i] = []float64{pt[0], pt[1] * f}
	}
	p.Points = pts
	return p
}

// ComputeLoads sets each active copy's demand and each node's offered load at time t, and returns
// the heaviest copy's WRITE load on its node. A copy's demand is in reference threads; its node
// offers it at speed× that, as its tasks take speed× as long.
func (s *Sim) ComputeLoads(t float64) (heaviest float64) {
	for _, n := range s.Nodes {
		n.writeLoad, n.SearchLoad = 0, 0
	}
	for _, ix := range s.Indices {
		w, sr := ix.Loads(t)
		perCopySearch := 0.0
		if ix.searchWeights == nil {
			if active := activeCopies(ix.Shards...); active > 0 {
				perCopySearch = sr / float64(active)
			}
		}
		for _, sh := range ix.Shards {
			shardWrite := w * ix.weights[sh.Num]
			copySearch := perCopySearch
			if ix.searchWeights != nil {
				// shard_search_weights: the shard's part of the index's searches, over its own copies.
				if active := activeCopies(sh); active > 0 {
					copySearch = sr * ix.searchWeights[sh.Num] / float64(active)
				}
			}
			for _, c := range sh.Copies {
				c.WriteDemand, c.SearchDemand = 0, 0
				if !c.Active() || !c.Node.Present {
					continue
				}
				c.WriteDemand, c.SearchDemand = shardWrite*c.copyWriteShare(), copySearch
				c.Node.writeLoad += c.WriteDemand * c.Node.speed
				c.Node.SearchLoad += c.SearchDemand * c.Node.speed
				heaviest = max(heaviest, c.WriteDemand*c.Node.speed)
			}
		}
	}
	return heaviest
}

// activeCopies counts the shards' active copies on present nodes.
func activeCopies(shards ...*Shard) int {
	active := 0
	for _, sh := range shards {
		for _, c := range sh.Copies {
			if c.Active() && c.Node.Present {
				active++
			}
		}
	}
	return active
}

// copyTick is what one tick added to a copy's counters.
type copyTick struct {
	IndexTotal, IndexTimeMS, QueryTotal, QueryTimeMS, FetchTotal, FetchTimeMS float64
}

// serveCopies splits what each node's pools served over its copies in proportion to their demand and
// advances the copies' counters.
func (s *Sim) serveCopies() {
	for _, ix := range s.Indices {
		for _, sh := range ix.Shards {
			for _, c := range sh.Copies {
				c.IndexCurrent, c.QueryCurrent = 0, 0
				c.Tick = copyTick{}
				if !c.Active() || !c.Node.Present {
					continue
				}
				n := c.Node
				if n.writeLoad > 0 && c.WriteDemand > 0 {
					share := c.WriteDemand * n.speed / n.writeLoad
					tasks := n.Write.LastServed * share
					c.Tick.IndexTotal = tasks
					c.Tick.IndexTimeMS = tasks * n.Write.TaskSeconds * 1000
					c.IndexTotal += c.Tick.IndexTotal
					c.IndexTimeMS += c.Tick.IndexTimeMS
					c.Docs += tasks
					c.IndexCurrent = n.Write.LastActive * share
					if c.Primary {
						sh.SeqNo += tasks
					}
				}
				if demand := c.SearchDemand*n.speed + c.TenantDemand; n.SearchLoad > 0 && demand > 0 {
					share := demand / n.SearchLoad
					tasks := n.Search.LastServed * share
					c.Tick.QueryTotal = tasks
					c.Tick.QueryTimeMS = tasks * n.Search.TaskSeconds * 1000 * queryShare
					c.Tick.FetchTotal = tasks
					c.Tick.FetchTimeMS = tasks * n.Search.TaskSeconds * 1000 * (1 - queryShare)
					c.QueryTotal += c.Tick.QueryTotal
					c.QueryTimeMS += c.Tick.QueryTimeMS
					c.FetchTotal += c.Tick.FetchTotal
					c.FetchTimeMS += c.Tick.FetchTimeMS
					c.QueryCurrent = n.Search.LastActive * share
				}
			}
		}
	}
}

// advanceRecoveries moves bytes for the recoveries node_concurrent_recoveries lets run, oldest first,
// and finishes those that are done.
func (s *Sim) advanceRecoveries(dt float64) {
	cfg := s.Config()
	in := make([]int, len(s.Nodes))
	out := make([]int, len(s.Nodes))
	var done []*Recovery
	rates := s.recoveryRates(cfg) // a node's concurrent recoveries share its rate (recovery_rules.go)
	for _, r := range s.Recoveries {
		if in[r.Target.Ord] >= cfg.Incoming || (r.Source != nil && out[r.Source.Ord] >= cfg.Outgoing) {
			continue
		}
		in[r.Target.Ord]++
		if r.Source != nil {
			out[r.Source.Ord]++
		}
		if r.progress(rates[r], s.ReplaySpeed(), dt) {
			done = append(done, r)
		}
	}
	for _, r := range done {
		s.finishRecovery(r)
	}
}

// finishRecovery starts the recovered copy; a relocated copy is a new copy with fresh counters.
func (s *Sim) finishRecovery(r *Recovery) {
	s.Recoveries = slices.DeleteFunc(s.Recoveries, func(x *Recovery) bool { return x == r })
	c := r.copy
	c.Rec = nil
	if r.Relocation {
		c.Node, c.AllocID, c.Target, c.TargetAllocID = r.Target, c.TargetAllocID, nil, ""
		c.ResetCounters()
		c.External = r.external
		if c.External {
			c.ExternalSince = s.NowLocked()
		}
	}
	c.State = StateStarted
	s.Changed()
}

// nodeLeave removes n: its copies are lost, a replica is promoted where a primary was lost, and
// recoveries from or to it stop. The allocator reallocates missing copies later (replicas after
// index.unassigned.node_left.delayed_timeout).
func (s *Sim) nodeLeave(n *Node) {
	n.Present = false
	now := s.NowLocked()
	s.TopologyChanged = now
	for _, ix := range s.Indices {
		for _, sh := range ix.Shards {
			for _, c := range sh.Copies {
				if c.Target == n {
					s.CancelRecovery(c.Rec)
				}
			}
			for _, c := range sh.Copies {
				if c.Node != n || s.keepRelocationTarget(c) {
					continue
				}
				if c.Rec != nil {
					s.Recoveries = slices.DeleteFunc(s.Recoveries, func(x *Recovery) bool { return x == c.Rec })
					c.Rec = nil
				}
				wasPrimary := c.Primary
				c.State, c.Node, c.AllocID, c.Target, c.TargetAllocID = StateUnassigned, nil, "", nil, ""
				c.UnassignedReason, c.UnassignedAt, c.DelayedUntil, c.External = "NODE_LEFT", now, now.Add(ix.nodeLeftDelay()), false
				c.ResetCounters()
				if !wasPrimary {
					continue
				}
				if p := FirstActive(sh); p != nil {
					p.Primary, c.Primary = true, false
					sh.Term++
				} else {
					c.LostData, c.DelayedUntil = true, now
				}
			}
			sh.MovedSinceCmd = true
		}
	}
	// Replica recoveries that were reading from n restart from the new primary, or stop.
	for _, r := range slices.Clone(s.Recoveries) {
		if r.Source != n || r.Relocation {
			continue
		}
		if src := RecoverySource(r.copy.Sh); src != nil {
			r.Source, r.done = src, 0
			continue
		}
		s.Recoveries = slices.DeleteFunc(s.Recoveries, func(x *Recovery) bool { return x == r })
		c := r.copy
		c.Rec, c.State, c.Node, c.AllocID = nil, StateUnassigned, nil, ""
		c.UnassignedReason, c.UnassignedAt = "PRIMARY_FAILED", now
	}
	n.Write.reset()
	n.Search.reset()
	s.Changed()
}

// FirstActive is the shard's first copy that can serve (started or relocating), or nil.
func FirstActive(sh *Shard) *ShardCopy {
	for _, c := range sh.Copies {
		if c.Active() {
			return c
		}
	}
	return nil
}

// assignedReplicas counts replica copies that occupy a node (initializing, started or relocating).
func (s *Sim) assignedReplicas() int {
	n := 0
	for _, ix := range s.Indices {
		for _, sh := range ix.Shards {
			for _, c := range sh.Copies {
				if !c.Primary && c.Node != nil {
					n++
				}
			}
		}
	}
	return n
}

// HealthCounts gives cluster health and the relocating, initializing and unassigned copy counts.
func (s *Sim) HealthCounts() (health string, relocating, initializing, unassigned int) {
	health = "green"
	for _, ix := range s.Indices {
		h, r, i, u := IndexHealth(ix)
		relocating, initializing, unassigned = relocating+r, initializing+i, unassigned+u
		health = WorseHealth(health, h)
	}
	return health, relocating, initializing, unassigned
}

// IndexHealth is the index's health, red when a primary is not active, yellow when any copy is not
// active, with its copies counted by state.
func IndexHealth(ix *Index) (health string, relocating, initializing, unassigned int) {
	health = "green"
	for _, sh := range ix.Shards {
		health = WorseHealth(health, ShardHealth(sh))
		for _, c := range sh.Copies {
			switch c.State {
			case StateRelocating:
				relocating++
			case StateInitializing:
				initializing++
			case StateUnassigned:
				unassigned++
			}
		}
	}
	return health, relocating, initializing, unassigned
}

// ShardHealth is red when the primary is not active, yellow when a replica is not, else green.
func ShardHealth(sh *Shard) string {
	if p := sh.Primary(); p == nil || !p.Active() {
		return "red"
	}
	for _, c := range sh.Copies {
		if !c.Active() {
			return "yellow"
		}
	}
	return "green"
}

// WorseHealth is the worse of two health colours, so a health rolls up from shards to the cluster.
func WorseHealth(a, b string) string {
	if healthRank(b) > healthRank(a) {
		return b
	}
	return a
}

// healthRank orders health colours from green (and anything unknown) up to red. A switch, not a
// map made on each call: health rolls up over every shard of every index on each health read.
func healthRank(h string) int {
	switch h {
	case "yellow":
		return 1
	case "red":
		return 2
	}
	return 0
}

// Violate records a safety violation.
func (s *Sim) Violate(what string) Violation {
	v := Violation{What: what, When: s.NowLocked(), AtSeconds: s.ElapsedSeconds()}
	s.Res.Violations = append(s.Res.Violations, v)
	s.Res.SafetyViolations++
	return v
}

// CheckTickInvariants looks for two copies of a shard on one node. A breach is reported when it
// appears, not again on every tick it lasts.
func (s *Sim) CheckTickInvariants() []Violation {
	var out []Violation
	now := map[string]bool{}
	for _, ix := range s.Indices {
		for _, sh := range ix.Shards {
			if len(sh.Copies) < 2 {
				continue
			}
			for i, a := range sh.Copies {
				for _, b := range sh.Copies[i+1:] {
					for _, n := range []*Node{a.Node, a.Target} {
						if n == nil || (b.Node != n && b.Target != n) {
							continue
						}
						key := fmt.Sprintf("two copies of shard %s on node %s", sh, n.Name)
						now[key] = true
						if !s.seen[key] {
							out = append(out, s.Violate(key))
						}
					}
				}
			}
		}
	}
	s.seen = now
	return out
}

// Result returns the run's measures so far.
func (s *Sim) Result() Result {
	s.Mu.RLock()
	defer s.Mu.RUnlock()
	r := s.Res
	r.Violations = slices.Clone(s.Res.Violations)
	r.TimeToCorrectSeconds = float64(r.longestEp) * s.TickSecs
	r.P99QueueLatencySeconds = percentile(s.queueSamples, 0.99)
	r.P99SearchLatencyMs = WeightedPercentile(s.searchLat, 0.99)
	r.P50SearchLatencyMs = WeightedPercentile(s.searchLat, 0.5)
	// Episode durations are ticks × tick_seconds, as time_to_correct_seconds is.
	episodes := make([]float64, 0, len(s.episodes)+1)
	for _, e := range s.episodes {
		episodes = append(episodes, float64(e)*s.TickSecs)
	}
	if s.episodeTicks > 0 {
		episodes = append(episodes, float64(s.episodeTicks)*s.TickSecs)
	}
	r.HotspotSecondsP50 = percentile(episodes, 0.5)
	r.HotspotSecondsMax = float64(r.longestEp) * s.TickSecs
	s.plugins.TenantResults(&r)
	return r
}

// percentile is the nearest-rank percentile.
func percentile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	sorted := slices.Clone(xs)
	slices.Sort(sorted)
	rank := int(math.Ceil(p*float64(len(sorted)))) - 1
	return sorted[max(rank, 0)]
}

// WeightedPercentile is the smallest value at which the cumulative weight reaches p of the total.
func WeightedPercentile(xs []Weighted, p float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	sorted := slices.Clone(xs)
	slices.SortFunc(sorted, func(a, b Weighted) int { return cmp.Compare(a.V, b.V) })
	total := 0.0
	for _, x := range sorted {
		total += x.W
	}
	acc := 0.0
	for _, x := range sorted {
		acc += x.W
		if acc >= p*total {
			return x.V
		}
	}
	return sorted[len(sorted)-1].V
}

// RunRealtime steps every tick_seconds/speed real seconds until the run is done or ctx ends. Reads
// in between see the virtual clock and the counters move continuously through the tick (live.go).
func (s *Sim) RunRealtime(ctx context.Context, speed float64) error {
	if !(speed > 0) || math.IsInf(speed, 0) {
		return fmt.Errorf("run realtime: speed must be positive, got %v", speed)
	}
	interval := time.Duration(s.TickSecs / speed * float64(time.Second))
	if interval <= 0 {
		return fmt.Errorf("run realtime: speed %v makes a tick shorter than 1ns", speed)
	}
	// Each tick's loads and work are computed at its start and shown as its time goes by (live.go).
	s.StartLive(interval)
	tk := time.NewTicker(interval)
	defer tk.Stop()
	for !s.Done() {
		select {
		case <-ctx.Done():
			return fmt.Errorf("run realtime: %w", ctx.Err())
		case <-tk.C:
			s.LiveStep()
		}
	}
	return nil
}

// nodeLeftDelay is how long a replica lost with its node waits before it is reallocated: the
// index's index.unassigned.node_left.delayed_timeout when set, OpenSearch's default otherwise.
func (ix *Index) nodeLeftDelay() time.Duration {
	if v, ok := ix.Settings["index.unassigned.node_left.delayed_timeout"]; ok {
		if d, err := duration.ParseTimeValue(v); err == nil && d >= 0 {
			return d
		}
	}
	return nodeLeftDelay
}
