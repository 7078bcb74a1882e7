package sim

import (
	"net/http"

	"github.com/shardwise/shardwise/shared/sim/alloc"
	"github.com/shardwise/shardwise/shared/sim/model"
	"github.com/shardwise/shardwise/shared/sim/plugins"
	"github.com/shardwise/shardwise/shared/sim/rest"
	"github.com/shardwise/shardwise/shared/sim/scenario"
)

// Sim is a simulated OpenSearch cluster on a virtual clock, wired: its state and clock (model),
// its allocator (alloc), its plugins and its REST API. All methods are safe for concurrent use.
type Sim struct {
	*model.Sim
	Alloc   *alloc.Allocator
	Plugins *plugins.Plugins
	REST    *rest.Server
}

// New builds a simulation of sc: the cluster, its copies placed by the allocator where the
// scenario does not place them, its plugins and tenants. The scenario is validated first.
func New(sc *Scenario, opts Options) (*Sim, error) {
	m, err := model.New(sc, opts)
	if err != nil {
		return nil, err
	}
	a, p := alloc.New(m), plugins.New(m)
	m.Attach(a, p)
	// In the order a cluster starts: the plugin's settings, the copies, then the tenants' traffic.
	p.InitWLM()
	a.PlaceInitial()
	p.NewTenants()
	return &Sim{Sim: m, Alloc: a, Plugins: p, REST: rest.New(m, a, p)}, nil
}

// Handler serves the OpenSearch REST subset the shardwise functions use (package rest).
func (s *Sim) Handler() http.Handler { return s.REST.Handler() }

// The run's options and measures (package model).
type (
	// Options configures a simulation.
	Options = model.Options
	// Rebalancer names what rebalances a cluster between ticks.
	Rebalancer = model.Rebalancer
	// Result is what the simulator itself measures over a run.
	Result = model.Result
	// TickReport is what one Step did.
	TickReport = model.TickReport
	// NodeTick is one node's state over one tick.
	NodeTick = model.NodeTick
	// ZoneNeed is the WRITE load an awareness value must carry whatever the placement.
	ZoneNeed = model.ZoneNeed
	// Violation is a breach of a safety invariant.
	Violation = model.Violation
)

// Rebalancers.
const (
	RebalancerOpenSearch    = model.RebalancerOpenSearch
	RebalancerESWeights     = model.RebalancerESWeights
	RebalancerESWeightsLive = model.RebalancerESWeightsLive
	RebalancerESWriteLoad   = model.RebalancerESWriteLoad
	RebalancerOff           = model.RebalancerOff
)

// The calibrated defaults (docs/calibration.md).
const (
	DefaultSegmentReplicaShare = model.DefaultSegmentReplicaShare
	DefaultTranslogReplaySpeed = model.DefaultTranslogReplaySpeed
)

// The scenario format (package scenario), as callers that build scenarios in code use it.
type (
	// Scenario is one scenario file: a cluster, its workload over time and events.
	Scenario = scenario.Scenario
	// NodeSpec describes a data node.
	NodeSpec = scenario.NodeSpec
	// IndexSpec describes one index and, optionally, where its copies start.
	IndexSpec = scenario.IndexSpec
	// IndexGroupSpec is a set of indices sharing group-total loads.
	IndexGroupSpec = scenario.IndexGroupSpec
	// TenantSpec is one tenant's searches against one index.
	TenantSpec = scenario.TenantSpec
	// Skew says how a group's total load splits over its indices.
	Skew = scenario.Skew
	// Event is something that happens at a point of virtual time.
	Event = scenario.Event
	// LoadProfile is a load as a function of scenario time in seconds.
	LoadProfile = scenario.LoadProfile
)

// LoadScenario reads and validates a scenario file (scenario.LoadScenario).
func LoadScenario(path string) (*Scenario, error) { return scenario.LoadScenario(path) }

// ParseScenario decodes and validates a scenario (scenario.ParseScenario).
func ParseScenario(data []byte) (*Scenario, error) { return scenario.ParseScenario(data) }

// Constant is a load profile of one value (scenario.Constant).
func Constant(v float64) LoadProfile { return scenario.Constant(v) }

// Event kinds and plugin names callers use.
const (
	EventNodeJoin            = scenario.EventNodeJoin
	EventNodeLeave           = scenario.EventNodeLeave
	EventRerouteRejects      = scenario.EventRerouteRejects
	PluginWorkloadManagement = scenario.PluginWorkloadManagement
)
