package sim

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

	"github.com/shardwise/shardwise/shared/duration"

	"github.com/shardwise/shardwise/shared/cluster"
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
	mu sync.RWMutex

	sc        *Scenario
	start     time.Time
	tickSecs  float64
	ticks     int // steps taken
	maxTicks  int
	rng       *rand.Rand
	builtinOn bool
	// rebalancer rebalances between ticks while builtinOn.
	rebalancer Rebalancer
	// eswl is the es-writeload rebalancer's stats between rounds (eswriteload.go).
	eswl *esWriteLoadState

	nodes     []*node // every node ever, by ord
	nodeOrder []*node // seeded tie-break order for placement
	byName    map[string]*node
	indices   []*index
	byIndex   map[string]*index
	groups    map[string]*group

	events    []Event // sorted by time
	nextEvent int

	recoveries []*recovery
	recSeq     int64
	incoming   []int   // recoveries into each node ord
	outgoing   []int   // recoveries out of each node ord
	leaving    []int64 // bytes relocating away from each node ord

	persistent, transient map[string]string
	defaults              map[string]string
	cfg                   *allocConfig
	watermarkDefault      float64
	recoveryDefault       float64

	clusterUUID  string
	stateVersion int64

	wlm *wlmState // the workload-management plugin's groups and rules (api_wlm.go)

	faults  []Event // api_errors, api_latency and reroute_rejects windows; read-only after New
	faultMu sync.Mutex
	faultRN *rand.Rand

	cancelled map[string]time.Time // task ids cancelled during the current tick

	tenants        []*tenant
	nextTenantTask int64

	// Reroute calls that started relocations during the current tick, and those relocations:
	// one mover acts once per cycle, within its budget.
	maxMovesPerCycle int
	tickReroutes     int
	tickMoves        int

	res          Result
	queueSamples []float64
	searchLat    []weighted
	episodeTicks int
	episodes     []int           // the lengths in ticks of the hotspot episodes that ended
	seen         map[string]bool // ongoing tick-invariant violations, reported once each

	// live is sim serve's clock within a tick (live.go); off for simulate runs.
	live live

	alloc   Allocator
	plugins Plugins
}

type weighted struct{ v, w float64 }

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
	Scenario               string  `json:"scenario"`
	Ticks                  int     `json:"ticks"`
	Moves                  int     `json:"moves"`
	BytesMoved             int64   `json:"bytes_moved"`
	MovesUndoneByBuiltin   int     `json:"moves_undone_by_builtin"`
	HotNodeSeconds         float64 `json:"hot_node_seconds"`
	MaxQueueLatencySeconds float64 `json:"max_queue_latency_seconds"`
	P99QueueLatencySeconds float64 `json:"p99_queue_latency_seconds"`
	RejectedWrites         int64   `json:"rejected_writes"`
	TimeToCorrectSeconds   float64 `json:"time_to_correct_seconds"`
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
	TasksCancelled        int `json:"tasks_cancelled"`
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

// New builds a simulation of sc. The scenario is validated first.
func New(sc *Scenario, opts Options) (*Sim, error) {
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
		sc:         sc,
		start:      start.UTC(),
		tickSecs:   sc.TickSeconds,
		maxTicks:   int(math.Ceil(sc.DurationSeconds/sc.TickSeconds - 1e-9)),
		rng:        rand.New(rand.NewPCG(sc.Seed, 0x5348415244574953)), // "SHARDWIS"
		faultRN:    rand.New(rand.NewPCG(sc.Seed, 0x4641554c54530000)), // "FAULTS"
		byName:     map[string]*node{},
		byIndex:    map[string]*index{},
		groups:     map[string]*group{},
		persistent: map[string]string{},
		transient:  map[string]string{},
		cancelled:  map[string]time.Time{},
		seen:       map[string]bool{},

		maxMovesPerCycle: opts.MaxMovesPerCycle,
		builtinOn:        sc.Cluster.BuiltinBalancer == nil || *sc.Cluster.BuiltinBalancer,
		rebalancer:       cmp.Or(opts.Rebalancer, RebalancerOpenSearch),
	}
	switch s.rebalancer {
	case RebalancerOpenSearch, RebalancerESWeights, RebalancerESWeightsLive, RebalancerESWriteLoad, RebalancerOff:
	default:
		return nil, fmt.Errorf("new simulation: rebalancer %q: want %s, %s, %s, %s or %s", s.rebalancer,
			RebalancerOpenSearch, RebalancerESWeights, RebalancerESWeightsLive, RebalancerESWriteLoad, RebalancerOff)
	}
	s.alloc, s.plugins = s, s
	s.res.Scenario = sc.Name
	s.clusterUUID = makeID(sc.Seed, "cluster/"+sc.Name)
	s.watermarkDefault = cmp.Or(sc.Cluster.DiskHighWatermark, cluster.DefaultDiskHighWatermark)
	s.recoveryDefault = cmp.Or(sc.Cluster.RecoveryBytesPerSecond, defaultRecoveryBytesPerSecond)
	s.defaults = s.defaultSettings()
	s.initWLM()
	s.applyClusterShape()
	for _, ns := range sc.Nodes {
		s.addNode(ns)
	}
	s.nodeOrder = slices.Clone(s.nodes)
	s.rng.Shuffle(len(s.nodeOrder), func(i, j int) { s.nodeOrder[i], s.nodeOrder[j] = s.nodeOrder[j], s.nodeOrder[i] })
	for i := range sc.Indices {
		ixs := &sc.Indices[i]
		ix := s.addIndex(ixs.Name, ixs.Primaries, ixs.Replicas, ixs.ShardBytes, ixs.ShardWeights)
		ix.writeLoad, ix.searchLoad = profileOr(ixs.WriteLoad), profileOr(ixs.SearchLoad)
		ix.applySpecSettings(ixs)
		ix.applyLoadModel(ixs)
		for sn, names := range ixs.Placement {
			for ci, name := range names {
				c := ix.shards[sn].copies[ci]
				c.state, c.node, c.allocID = stateStarted, s.byName[name], randomID(s.rng)
				c.resetCounters()
			}
		}
	}
	for _, gs := range sc.IndexGroups {
		g := &group{prefix: gs.NamePrefix, writeLoad: profileOr(gs.WriteLoad), searchLoad: profileOr(gs.SearchLoad)}
		shares := zipfShares(gs.Count, 0)
		if gs.Skew != nil && gs.Skew.Kind == "zipf" {
			shares = zipfShares(gs.Count, gs.Skew.S)
		}
		for i := range gs.Count {
			ix := s.addIndex(gs.NamePrefix+strconv.Itoa(i), gs.Primaries, gs.Replicas, gs.ShardBytes, nil)
			ix.group, ix.share = g, shares[i]
			g.members = append(g.members, ix)
		}
		s.groups[gs.NamePrefix] = g
	}
	s.events = slices.Clone(sc.Events)
	slices.SortStableFunc(s.events, func(a, b Event) int { return cmp.Compare(a.AtSeconds, b.AtSeconds) })
	for _, e := range s.events {
		switch e.Kind {
		case EventAPIErrors, EventAPILatency, EventRerouteRejects:
			s.faults = append(s.faults, e)
		}
	}
	s.placeInitial()
	s.newTenants()
	return s, nil
}

func profileOr(p *LoadProfile) LoadProfile {
	if p == nil {
		return Constant(0)
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
	conc := strconv.Itoa(cmp.Or(s.sc.Cluster.NodeConcurrentRecoveries, defaultNodeConcurrentRecoveries))
	return map[string]string{
		"cluster.name":                                                   clusterName,
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
		"cluster.routing.allocation.disk.watermark.high":                 percentString(s.watermarkDefault),
		"cluster.routing.allocation.disk.watermark.flood_stage":          diskFloodStage,
		"cluster.routing.allocation.balance.index":                       strconv.FormatFloat(defaultIndexBalance, 'f', -1, 64),
		"cluster.routing.allocation.balance.shard":                       strconv.FormatFloat(defaultShardBalance, 'f', -1, 64),
		"cluster.routing.allocation.balance.threshold":                   "1.0",
		"cluster.routing.allocation.total_shards_per_node":               "-1",
		"cluster.routing.allocation.awareness.attributes":                "",
		"cluster.max_shards_per_node":                                    "1000",
		"indices.recovery.max_bytes_per_sec":                             formatBytes(s.recoveryDefault),
	}
}

func (s *Sim) addNode(ns NodeSpec) *node {
	d := s.sc.NodeDefaults
	ord := len(s.nodes)
	n := &node{
		ord:         ord,
		name:        ns.Name,
		id:          makeID(s.sc.Seed, "node/"+ns.Name),
		ephemeralID: makeID(s.sc.Seed, "ephemeral/"+ns.Name),
		port:        firstTransportPort + ord,
		zone:        cmp.Or(ns.Zone, d.Zone),
		attributes:  nodeAttributes(ns, d),
		heapBytes:   cmp.Or(ns.HeapBytes, d.HeapBytes, defaultHeapBytes),
		diskBytes:   cmp.Or(ns.DiskBytes, d.DiskBytes, defaultDiskBytes),
		present:     true,
		joined:      s.now(),
	}
	// A slower node's tasks take speed× as long: the same work keeps speed× the threads busy.
	n.speed = cmp.Or(ns.Speed, d.Speed, 1)
	n.write = pool{threads: cmp.Or(ns.WriteThreads, d.WriteThreads, defaultWriteThreads), taskSeconds: writeTaskSeconds * n.speed}
	n.search = pool{threads: cmp.Or(ns.SearchThreads, d.SearchThreads, defaultSearchThreads), taskSeconds: searchTaskSeconds * n.speed}
	s.nodes = append(s.nodes, n)
	s.byName[n.name] = n
	return n
}

func (s *Sim) addIndex(name string, primaries, replicas int, shardBytes int64, weights []float64) *index {
	ix := &index{
		ord: len(s.indices), name: name, uuid: makeID(s.sc.Seed, "index/"+name), replicas: replicas,
		shardBytes: shardBytes, created: s.start, settings: map[string]string{},
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
		sh := &shard{idx: ix, num: n, term: 1}
		for r := range replicas + 1 {
			sh.copies = append(sh.copies, &shardCopy{sh: sh, primary: r == 0, unassignedReason: "INDEX_CREATED", unassignedAt: s.start})
		}
		ix.shards = append(ix.shards, sh)
	}
	s.indices = append(s.indices, ix)
	s.byIndex[name] = ix
	return ix
}

// placeInitial puts copies without a placement where OpenSearch's allocator would, primaries of every
// index first, and starts them at once: the scenario begins with a settled cluster.
func (s *Sim) placeInitial() {
	s.refresh()
	b := s.newBalance()
	for _, primaries := range []bool{true, false} {
		for _, ix := range s.indices {
			for _, sh := range ix.shards {
				for _, c := range sh.copies {
					if c.state != stateUnassigned || c.primary != primaries {
						continue
					}
					n, _ := s.bestNode(b, sh, c, nil)
					if n == nil {
						continue
					}
					c.state, c.node, c.allocID = stateStarted, n, randomID(s.rng)
					c.unassignedReason = ""
					c.resetCounters()
					place(n, ix)
				}
			}
		}
	}
	s.stateVersion = 1
}

// now is the virtual time; callers hold the lock.
func (s *Sim) now() time.Time { return s.start.Add(s.elapsedDuration()) }

// elapsedSeconds is the virtual time: whole ticks, and under sim serve the part of the tick in
// progress (live.go).
func (s *Sim) elapsedSeconds() float64 { return (float64(s.ticks) + s.live.frac()) * s.tickSecs }

func (s *Sim) elapsedDuration() time.Duration {
	return time.Duration(math.Round(s.elapsedSeconds() * float64(time.Second)))
}

// Now is the virtual clock.
func (s *Sim) Now() time.Time {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.now()
}

// Elapsed is the virtual time since the start.
func (s *Sim) Elapsed() time.Duration {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.elapsedDuration()
}

// Done reports whether duration_seconds has elapsed.
func (s *Sim) Done() bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.ticks >= s.maxTicks
}

// Scenario returns the scenario the simulation runs.
func (s *Sim) Scenario() *Scenario { return s.sc }

// changed bumps the cluster state version after a routing or settings change.
func (s *Sim) changed() { s.stateVersion++ }

// Step advances one tick: events due now, loads and queues over the tick, recoveries, then the
// allocator and built-in balancer, then the safety invariants and the run's measures.
func (s *Sim) Step() TickReport {
	s.mu.Lock()
	defer s.mu.Unlock()
	rep := s.beginTick()
	s.endTick(&rep)
	return rep
}

// beginTick is the first half of a tick, what happens over it: the events due at its start, the
// loads, the queues and the work they serve, and the run's load measures. Under sim serve it runs
// at the tick's start and reads within the tick see its work in proportion (live.go).
func (s *Sim) beginTick() TickReport {
	t := s.elapsedSeconds()
	dt := s.tickSecs
	applied := s.applyEvents(t)
	clear(s.cancelled)
	s.tickReroutes, s.tickMoves = 0, 0
	rep := TickReport{Tick: s.ticks + 1, Events: applied, MaxCopyWriteLoad: s.computeLoads(t)}
	s.plugins.TenantLoads(t, dt)
	rejected := 0.0
	anyHot := false
	for _, n := range s.nodes {
		if !n.present {
			continue
		}
		wt := n.write.step(n.writeLoad, dt)
		st := n.search.step(n.searchLoad, dt)
		rejected += wt.rejected
		hot := wt.wait >= hotQueueSeconds
		if hot {
			anyHot = true
			s.res.HotNodeSeconds += dt
		}
		if st.wait >= searchHotQueueSeconds {
			s.res.SearchHotNodeSeconds += dt
		}
		if n.writeLoad > 0 {
			s.queueSamples = append(s.queueSamples, wt.wait)
			s.res.MaxQueueLatencySeconds = max(s.res.MaxQueueLatencySeconds, wt.wait)
		}
		searchMs := (n.search.taskSeconds + st.wait) * 1000
		if st.served > 0 {
			s.searchLat = append(s.searchLat, weighted{searchMs, st.served})
		}
		rep.Nodes = append(rep.Nodes, NodeTick{
			Name: n.name, WriteUtil: n.writeLoad / float64(n.write.threads), QueueLatencySeconds: wt.wait,
			WriteQueue: wt.queue, Hot: hot, SearchUtil: n.searchLoad / float64(n.search.threads),
			SearchLatencyMs: searchMs, WriteLoad: n.writeLoad, WriteThreads: n.write.threads,
		})
	}
	s.plugins.TenantSettle()
	s.serveCopies()
	s.res.rejectedRaw += rejected
	s.res.RejectedWrites = int64(math.Round(s.res.rejectedRaw))
	rep.RejectedWrites = int64(math.Round(rejected))
	s.countEpisode(anyHot)
	rep.Replicas = s.assignedReplicas()
	s.res.ReplicaNodeHours += float64(rep.Replicas) * dt / 3600
	return rep
}

// endTick is the second half of a tick, what has happened by its end: recoveries advanced, shards
// grown, the clock moved on, the allocator and built-in balancer run, and the safety invariants
// checked.
func (s *Sim) endTick(rep *TickReport) {
	dt := s.tickSecs
	s.advanceRecoveries(dt)
	for _, ix := range s.indices {
		ix.grow(dt)
	}
	s.ticks++
	rep.At = s.now()
	rep.BuiltinRelocations = s.alloc.Allocate()
	rep.Violations = s.checkTickInvariants()
	s.refresh()
	byName := map[string]*node{}
	for _, n := range s.nodes {
		byName[n.name] = n
	}
	for i := range rep.Nodes {
		n := byName[rep.Nodes[i].Name]
		rep.Nodes[i].Shards, rep.Nodes[i].DiskUsedBytes = n.shardCount, n.diskUsed
	}
	rep.Health, rep.Relocating, rep.Initializing, rep.Unassigned = s.healthCounts()
	s.res.Ticks = s.ticks
}

// countEpisode follows hotspot episodes: runs of consecutive ticks with any hot node.
func (s *Sim) countEpisode(anyHot bool) {
	switch {
	case anyHot:
		if s.episodeTicks == 0 {
			s.res.Hotspots++
		}
		s.episodeTicks++
		s.res.longestEp = max(s.res.longestEp, s.episodeTicks)
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

func (s *Sim) applyEvent(e Event) string {
	if name, ok := s.applyShapeEvent(e); ok {
		return name
	}
	switch e.Kind {
	case EventSetWriteLoad, EventSetSearchLoad:
		write := e.Kind == EventSetWriteLoad
		if e.Group != "" {
			g := s.groups[e.Group]
			if write {
				g.writeLoad = *e.Load
			} else {
				g.searchLoad = *e.Load
			}
			return e.Kind + " group " + e.Group
		}
		ix := s.byIndex[e.Index]
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
	case EventSetShardWeights:
		s.byIndex[e.Index].setShardWeights(e.Weights)
		return e.Kind + " " + e.Index
	case EventNodeLeave:
		s.nodeLeave(s.byName[e.Node.Name])
		return "node_leave " + e.Node.Name
	case EventNodeJoin:
		n := s.addNode(e.Node.NodeSpec)
		s.nodeOrder = append(s.nodeOrder, n)
		s.changed()
		return "node_join " + n.name
	}
	// Fault windows need nothing applied: requests check them against the clock (see faultsAt).
	return fmt.Sprintf("%s until %v s", e.Kind, e.UntilSeconds)
}

// scaled multiplies a profile's values by f.
func scaled(p LoadProfile, f float64) LoadProfile {
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

// computeLoads sets each active copy's demand and each node's offered load at time t, and returns
// the heaviest copy's WRITE load on its node. A copy's demand is in reference threads; its node
// offers it at speed× that, as its tasks take speed× as long.
func (s *Sim) computeLoads(t float64) (heaviest float64) {
	for _, n := range s.nodes {
		n.writeLoad, n.searchLoad = 0, 0
	}
	for _, ix := range s.indices {
		w, sr := ix.loads(t)
		perCopySearch := 0.0
		if ix.searchWeights == nil {
			if active := activeCopies(ix.shards...); active > 0 {
				perCopySearch = sr / float64(active)
			}
		}
		for _, sh := range ix.shards {
			shardWrite := w * ix.weights[sh.num]
			copySearch := perCopySearch
			if ix.searchWeights != nil {
				// shard_search_weights: the shard's part of the index's searches, over its own copies.
				if active := activeCopies(sh); active > 0 {
					copySearch = sr * ix.searchWeights[sh.num] / float64(active)
				}
			}
			for _, c := range sh.copies {
				c.writeDemand, c.searchDemand = 0, 0
				if !c.active() || !c.node.present {
					continue
				}
				c.writeDemand, c.searchDemand = shardWrite*c.copyWriteShare(), copySearch
				c.node.writeLoad += c.writeDemand * c.node.speed
				c.node.searchLoad += c.searchDemand * c.node.speed
				heaviest = max(heaviest, c.writeDemand*c.node.speed)
			}
		}
	}
	return heaviest
}

// activeCopies counts the shards' active copies on present nodes.
func activeCopies(shards ...*shard) int {
	active := 0
	for _, sh := range shards {
		for _, c := range sh.copies {
			if c.active() && c.node.present {
				active++
			}
		}
	}
	return active
}

// copyTick is what one tick added to a copy's counters.
type copyTick struct {
	indexTotal, indexTimeMS, queryTotal, queryTimeMS, fetchTotal, fetchTimeMS float64
}

// serveCopies splits what each node's pools served over its copies in proportion to their demand and
// advances the copies' counters.
func (s *Sim) serveCopies() {
	for _, ix := range s.indices {
		for _, sh := range ix.shards {
			for _, c := range sh.copies {
				c.indexCurrent, c.queryCurrent = 0, 0
				c.tick = copyTick{}
				if !c.active() || !c.node.present {
					continue
				}
				n := c.node
				if n.writeLoad > 0 && c.writeDemand > 0 {
					share := c.writeDemand * n.speed / n.writeLoad
					tasks := n.write.lastServed * share
					c.tick.indexTotal = tasks
					c.tick.indexTimeMS = tasks * n.write.taskSeconds * 1000
					c.indexTotal += c.tick.indexTotal
					c.indexTimeMS += c.tick.indexTimeMS
					c.docs += tasks
					c.indexCurrent = n.write.lastActive * share
					if c.primary {
						sh.seqNo += tasks
					}
				}
				if demand := c.searchDemand*n.speed + c.tenantDemand; n.searchLoad > 0 && demand > 0 {
					share := demand / n.searchLoad
					tasks := n.search.lastServed * share
					c.tick.queryTotal = tasks
					c.tick.queryTimeMS = tasks * n.search.taskSeconds * 1000 * queryShare
					c.tick.fetchTotal = tasks
					c.tick.fetchTimeMS = tasks * n.search.taskSeconds * 1000 * (1 - queryShare)
					c.queryTotal += c.tick.queryTotal
					c.queryTimeMS += c.tick.queryTimeMS
					c.fetchTotal += c.tick.fetchTotal
					c.fetchTimeMS += c.tick.fetchTimeMS
					c.queryCurrent = n.search.lastActive * share
				}
			}
		}
	}
}

// advanceRecoveries moves bytes for the recoveries node_concurrent_recoveries lets run, oldest first,
// and finishes those that are done.
func (s *Sim) advanceRecoveries(dt float64) {
	cfg := s.config()
	in := make([]int, len(s.nodes))
	out := make([]int, len(s.nodes))
	var done []*recovery
	rates := s.recoveryRates(cfg) // a node's concurrent recoveries share its rate (recovery_rules.go)
	for _, r := range s.recoveries {
		if in[r.target.ord] >= cfg.incoming || (r.source != nil && out[r.source.ord] >= cfg.outgoing) {
			continue
		}
		in[r.target.ord]++
		if r.source != nil {
			out[r.source.ord]++
		}
		if r.progress(rates[r], s.sc.Cluster.TranslogReplaySpeed, dt) {
			done = append(done, r)
		}
	}
	for _, r := range done {
		s.finishRecovery(r)
	}
}

// finishRecovery starts the recovered copy; a relocated copy is a new copy with fresh counters.
func (s *Sim) finishRecovery(r *recovery) {
	s.recoveries = slices.DeleteFunc(s.recoveries, func(x *recovery) bool { return x == r })
	c := r.copy
	c.rec = nil
	if r.relocation {
		c.node, c.allocID, c.target, c.targetAllocID = r.target, c.targetAllocID, nil, ""
		c.resetCounters()
		c.external = r.external
	}
	c.state = stateStarted
	s.changed()
}

// nodeLeave removes n: its copies are lost, a replica is promoted where a primary was lost, and
// recoveries from or to it stop. The allocator reallocates missing copies later (replicas after
// index.unassigned.node_left.delayed_timeout).
func (s *Sim) nodeLeave(n *node) {
	n.present = false
	now := s.now()
	for _, ix := range s.indices {
		for _, sh := range ix.shards {
			for _, c := range sh.copies {
				if c.target == n {
					s.cancelRecovery(c.rec)
				}
			}
			for _, c := range sh.copies {
				if c.node != n || s.keepRelocationTarget(c) {
					continue
				}
				if c.rec != nil {
					s.recoveries = slices.DeleteFunc(s.recoveries, func(x *recovery) bool { return x == c.rec })
					c.rec = nil
				}
				wasPrimary := c.primary
				c.state, c.node, c.allocID, c.target, c.targetAllocID = stateUnassigned, nil, "", nil, ""
				c.unassignedReason, c.unassignedAt, c.delayedUntil, c.external = "NODE_LEFT", now, now.Add(ix.nodeLeftDelay()), false
				c.resetCounters()
				if !wasPrimary {
					continue
				}
				if p := firstActive(sh); p != nil {
					p.primary, c.primary = true, false
					sh.term++
				} else {
					c.lostData, c.delayedUntil = true, now
				}
			}
			sh.movedSinceCmd = true
		}
	}
	// Replica recoveries that were reading from n restart from the new primary, or stop.
	for _, r := range slices.Clone(s.recoveries) {
		if r.source != n || r.relocation {
			continue
		}
		if src := recoverySource(r.copy.sh); src != nil {
			r.source, r.done = src, 0
			continue
		}
		s.recoveries = slices.DeleteFunc(s.recoveries, func(x *recovery) bool { return x == r })
		c := r.copy
		c.rec, c.state, c.node, c.allocID = nil, stateUnassigned, nil, ""
		c.unassignedReason, c.unassignedAt = "PRIMARY_FAILED", now
	}
	n.write.reset()
	n.search.reset()
	s.changed()
}

func firstActive(sh *shard) *shardCopy {
	for _, c := range sh.copies {
		if c.active() {
			return c
		}
	}
	return nil
}

// assignedReplicas counts replica copies that occupy a node (initializing, started or relocating).
func (s *Sim) assignedReplicas() int {
	n := 0
	for _, ix := range s.indices {
		for _, sh := range ix.shards {
			for _, c := range sh.copies {
				if !c.primary && c.node != nil {
					n++
				}
			}
		}
	}
	return n
}

// healthCounts gives cluster health and the relocating, initializing and unassigned copy counts.
func (s *Sim) healthCounts() (health string, relocating, initializing, unassigned int) {
	health = "green"
	for _, ix := range s.indices {
		h, r, i, u := indexHealth(ix)
		relocating, initializing, unassigned = relocating+r, initializing+i, unassigned+u
		health = worseHealth(health, h)
	}
	return health, relocating, initializing, unassigned
}

// indexHealth: red when a primary is not active, yellow when any copy is not active.
func indexHealth(ix *index) (health string, relocating, initializing, unassigned int) {
	health = "green"
	for _, sh := range ix.shards {
		health = worseHealth(health, shardHealth(sh))
		for _, c := range sh.copies {
			switch c.state {
			case stateRelocating:
				relocating++
			case stateInitializing:
				initializing++
			case stateUnassigned:
				unassigned++
			}
		}
	}
	return health, relocating, initializing, unassigned
}

func shardHealth(sh *shard) string {
	if p := sh.primary(); p == nil || !p.active() {
		return "red"
	}
	for _, c := range sh.copies {
		if !c.active() {
			return "yellow"
		}
	}
	return "green"
}

func worseHealth(a, b string) string {
	rank := map[string]int{"green": 0, "yellow": 1, "red": 2}
	if rank[b] > rank[a] {
		return b
	}
	return a
}

// violate records a safety violation.
func (s *Sim) violate(what string) Violation {
	v := Violation{What: what, When: s.now(), AtSeconds: s.elapsedSeconds()}
	s.res.Violations = append(s.res.Violations, v)
	s.res.SafetyViolations++
	return v
}

// checkTickInvariants looks for two copies of a shard on one node. A breach is reported when it
// appears, not again on every tick it lasts.
func (s *Sim) checkTickInvariants() []Violation {
	var out []Violation
	now := map[string]bool{}
	for _, ix := range s.indices {
		for _, sh := range ix.shards {
			if len(sh.copies) < 2 {
				continue
			}
			for i, a := range sh.copies {
				for _, b := range sh.copies[i+1:] {
					for _, n := range []*node{a.node, a.target} {
						if n == nil || (b.node != n && b.target != n) {
							continue
						}
						key := fmt.Sprintf("two copies of shard %s on node %s", sh, n.name)
						now[key] = true
						if !s.seen[key] {
							out = append(out, s.violate(key))
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
	s.mu.RLock()
	defer s.mu.RUnlock()
	r := s.res
	r.Violations = slices.Clone(s.res.Violations)
	r.TimeToCorrectSeconds = float64(r.longestEp) * s.tickSecs
	r.P99QueueLatencySeconds = percentile(s.queueSamples, 0.99)
	r.P99SearchLatencyMs = weightedPercentile(s.searchLat, 0.99)
	r.P50SearchLatencyMs = weightedPercentile(s.searchLat, 0.5)
	// Episode durations are ticks × tick_seconds, as time_to_correct_seconds is.
	episodes := make([]float64, 0, len(s.episodes)+1)
	for _, e := range s.episodes {
		episodes = append(episodes, float64(e)*s.tickSecs)
	}
	if s.episodeTicks > 0 {
		episodes = append(episodes, float64(s.episodeTicks)*s.tickSecs)
	}
	r.HotspotSecondsP50 = percentile(episodes, 0.5)
	r.HotspotSecondsMax = float64(r.longestEp) * s.tickSecs
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

// weightedPercentile is the smallest value at which the cumulative weight reaches p of the total.
func weightedPercentile(xs []weighted, p float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	sorted := slices.Clone(xs)
	slices.SortFunc(sorted, func(a, b weighted) int { return cmp.Compare(a.v, b.v) })
	total := 0.0
	for _, x := range sorted {
		total += x.w
	}
	acc := 0.0
	for _, x := range sorted {
		acc += x.w
		if acc >= p*total {
			return x.v
		}
	}
	return sorted[len(sorted)-1].v
}

// RunRealtime steps every tick_seconds/speed real seconds until the run is done or ctx ends. Reads
// in between see the virtual clock and the counters move continuously through the tick (live.go).
func (s *Sim) RunRealtime(ctx context.Context, speed float64) error {
	if !(speed > 0) || math.IsInf(speed, 0) {
		return fmt.Errorf("run realtime: speed must be positive, got %v", speed)
	}
	interval := time.Duration(s.tickSecs / speed * float64(time.Second))
	if interval <= 0 {
		return fmt.Errorf("run realtime: speed %v makes a tick shorter than 1ns", speed)
	}
	// Each tick's loads and work are computed at its start and shown as its time goes by (live.go).
	s.startLive(interval)
	tk := time.NewTicker(interval)
	defer tk.Stop()
	for !s.Done() {
		select {
		case <-ctx.Done():
			return fmt.Errorf("run realtime: %w", ctx.Err())
		case <-tk.C:
			s.liveStep()
		}
	}
	return nil
}

// nodeLeftDelay is how long a replica lost with its node waits before it is reallocated: the
// index's index.unassigned.node_left.delayed_timeout when set, OpenSearch's default otherwise.
func (ix *index) nodeLeftDelay() time.Duration {
	if v, ok := ix.settings["index.unassigned.node_left.delayed_timeout"]; ok {
		if d, err := duration.ParseTimeValue(v); err == nil && d >= 0 {
			return d
		}
	}
	return nodeLeftDelay
}
