package scenario

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/shardwise/shardwise/shared/jsonstrict"
	"github.com/shardwise/shardwise/shared/sim/wire"
)

// Scenario is one scenario file (docs/scenarios.md, "The scenario"): a cluster, its workload over time and events.
type Scenario struct {
	Name            string           `json:"name"`
	Description     string           `json:"description,omitempty"`
	Seed            uint64           `json:"seed"`
	TickSeconds     float64          `json:"tick_seconds" unit:"seconds"`
	DurationSeconds float64          `json:"duration_seconds" unit:"seconds"`
	Cluster         ClusterSpec      `json:"cluster"`
	NodeDefaults    NodeSpec         `json:"node_defaults"`
	Nodes           []NodeSpec       `json:"nodes"`
	Indices         []IndexSpec      `json:"indices"`
	IndexGroups     []IndexGroupSpec `json:"index_groups,omitempty"`
	Events          []Event          `json:"events,omitempty"`
	// Tenants are search clients of one index each, whose searches run as tasks the tasks API
	// lists and can cancel (tenants.go).
	Tenants []TenantSpec `json:"tenants,omitempty"`
}

// TenantSpec is one tenant: searches tagged X-Opaque-Id: OpaqueID against Index, arriving at
// SearchLoad queries per second, each running TaskSeconds on every shard of the index and
// allocating TaskHeapBytes of heap per shard-level task.
type TenantSpec struct {
	Name          string       `json:"name"`
	OpaqueID      string       `json:"opaque_id"`
	Index         string       `json:"index"`
	SearchLoad    *LoadProfile `json:"search_load"`
	TaskSeconds   float64      `json:"task_seconds" unit:"seconds"`
	TaskHeapBytes int64        `json:"task_heap_bytes" unit:"bytes"`
	// Username and Roles are the authenticated principal the tenant searches as; the
	// workload-management plugin's rules match them (principal.username, principal.role).
	Username string   `json:"username,omitempty"`
	Roles    []string `json:"roles,omitempty"`
}

// ClusterSpec holds cluster-wide settings. Zero values take the OpenSearch defaults in defaults.go.
type ClusterSpec struct {
	// BuiltinBalancer turns OpenSearch's own count balancer on; absent means on, as in OpenSearch.
	BuiltinBalancer          *bool   `json:"builtin_balancer,omitempty"`
	RecoveryBytesPerSecond   float64 `json:"recovery_bytes_per_second,omitempty" unit:"bytes"`
	NodeConcurrentRecoveries int     `json:"node_concurrent_recoveries,omitempty"`
	DiskHighWatermark        float64 `json:"disk_high_watermark,omitempty"`
	// AwarenessAttributes is cluster.routing.allocation.awareness.attributes, set persistently
	// from the start as an operator would: zone or any attribute the nodes carry.
	AwarenessAttributes []string `json:"awareness_attributes,omitempty"`
	// AwarenessForce is cluster.routing.allocation.awareness.force.<attribute>.values per
	// attribute (cluster_shape.go); each attribute also becomes an awareness attribute.
	AwarenessForce map[string][]string `json:"awareness_force,omitempty"`
	// OpenSearchVersion is the version the cluster answers as (GET /, _nodes, _cat/nodes); empty
	// means the simulator's default, 2.19.3. It decides which plugin endpoints exist.
	OpenSearchVersion string `json:"opensearch_version,omitempty"`
	// Plugins are the optional plugins installed: "workload-management" serves _wlm/query_group
	// (2.18 to 3.0) or _wlm/workload_group and _rules/workload_group (3.1 and later) (api_wlm.go).
	Plugins []string `json:"plugins,omitempty"`
	// TranslogReplaySpeed is the hot-copy recovery model's replay speed (model/recovery.go): a
	// relocation of a copy being written replays, after its files, what was indexed meanwhile,
	// at this many thread-seconds of indexing a second, as OpenSearch replays its translog.
	// Absent (nil): model.DefaultTranslogReplaySpeed, the figure `make it` measures. An explicit
	// 0 turns the replay off, so a relocation takes bytes/rate alone, as for an idle copy.
	TranslogReplaySpeed *float64 `json:"translog_replay_speed,omitempty"`
}

// NodeSpec describes a data node. In nodes and node_join events zero fields inherit node_defaults.
type NodeSpec struct {
	Name          string `json:"name,omitempty"`
	WriteThreads  int    `json:"write_threads,omitempty"`
	SearchThreads int    `json:"search_threads,omitempty"`
	HeapBytes     int64  `json:"heap_bytes,omitempty" unit:"bytes"`
	DiskBytes     int64  `json:"disk_bytes,omitempty" unit:"bytes"`
	Zone          string `json:"zone,omitempty"`
	// Attributes are the node's custom attributes (node.attr.*), beside zone; in nodes and
	// node_join events they are laid over node_defaults' attributes.
	Attributes map[string]string `json:"attributes,omitempty"`
	// Speed multiplies the time the node's tasks take: 2 is an instance type half as fast, whose
	// threads serve half the work. Absent means 1.
	Speed float64 `json:"speed,omitempty"`
}

// IndexSpec describes one index and, optionally, where its copies start.
type IndexSpec struct {
	Name       string       `json:"name"`
	Primaries  int          `json:"primaries"`
	Replicas   int          `json:"replicas"`
	ShardBytes int64        `json:"shard_bytes" unit:"bytes"`
	WriteLoad  *LoadProfile `json:"write_load,omitempty"`
	SearchLoad *LoadProfile `json:"search_load,omitempty"`
	// Placement lists, per shard, its copies' nodes, primary first.
	Placement [][]string `json:"placement,omitempty"`
	IndexOptions
}

// IndexOptions are the fields of an index beyond its counts and loads, which an index_groups
// entry gives each of its indices too.
type IndexOptions struct {
	// ShardWeights split write_load over the primaries (evenly when absent).
	ShardWeights []float64 `json:"shard_weights,omitempty"`
	// Allocation, TotalShardsPerNode, DelayedTimeoutSeconds and Priority are the index settings
	// index.routing.allocation.{include,exclude,require}.*, .total_shards_per_node,
	// index.unassigned.node_left.delayed_timeout and index.priority, set at creation
	// (cluster_shape.go).
	Allocation            *AllocationSpec `json:"allocation,omitempty"`
	TotalShardsPerNode    int             `json:"total_shards_per_node,omitempty"`
	DelayedTimeoutSeconds *float64        `json:"delayed_timeout_seconds,omitempty" unit:"seconds"`
	Priority              int             `json:"priority,omitempty"`
	// ReplicationType is index.replication.type: "document" (the default, every copy indexes) or
	// "segment" (only the primary indexes; each replica pays DefaultSegmentReplicaShare of it).
	ReplicationType string `json:"replication_type,omitempty"`
	// ShardSearchWeights split search_load over the shards as ShardWeights split write_load.
	ShardSearchWeights []float64 `json:"shard_search_weights,omitempty"`
	// ShardBytesGrowthPerHour is how many bytes each shard grows by per hour of scenario time.
	ShardBytesGrowthPerHour float64 `json:"shard_bytes_growth_per_hour,omitempty"`
}

// AllocationSpec is an index's allocation filters: per kind, attribute (_name, _id, _ip, _host or
// a node attribute) → comma-separated values with * wildcards, as in OpenSearch's settings.
type AllocationSpec struct {
	Include map[string]string `json:"include,omitempty"`
	Exclude map[string]string `json:"exclude,omitempty"`
	Require map[string]string `json:"require,omitempty"`
}

// IndexGroupSpec is count indices named NamePrefix+0..count-1 sharing group-total loads.
type IndexGroupSpec struct {
	NamePrefix string       `json:"name_prefix"`
	Count      int          `json:"count"`
	Primaries  int          `json:"primaries"`
	Replicas   int          `json:"replicas"`
	ShardBytes int64        `json:"shard_bytes" unit:"bytes"`
	WriteLoad  *LoadProfile `json:"write_load,omitempty"`
	SearchLoad *LoadProfile `json:"search_load,omitempty"`
	Skew       *Skew        `json:"skew,omitempty"`
	// IndexOptions apply to every index of the group.
	IndexOptions
}

// Member is the spec of the group's index number i: the group's counts and options. Its loads
// are the group's share, not in the spec.
func (g *IndexGroupSpec) Member(i int) IndexSpec {
	return IndexSpec{Name: g.NamePrefix + strconv.Itoa(i), Primaries: g.Primaries, Replicas: g.Replicas,
		ShardBytes: g.ShardBytes, IndexOptions: g.IndexOptions}
}

// HasOptions reports whether the group sets any of IndexOptions.
func (g *IndexGroupSpec) HasOptions() bool { return !reflect.ValueOf(g.IndexOptions).IsZero() }

// Skew says how a group's total load splits over its indices.
type Skew struct {
	Kind string  `json:"kind"`
	S    float64 `json:"s,omitempty"`
}

// Event kinds (docs/scenarios.md, "The scenario").
const (
	EventSetWriteLoad   = "set_write_load"
	EventSetSearchLoad  = "set_search_load"
	EventNodeLeave      = "node_leave"
	EventNodeJoin       = "node_join"
	EventAPIErrors      = "api_errors"
	EventAPILatency     = "api_latency"
	EventRerouteRejects = "reroute_rejects"
	// Cluster-shape events (cluster_shape.go, restart.go, rollover.go).
	EventCreateIndex      = "create_index"
	EventDeleteIndex      = "delete_index"
	EventNodeRestart      = "node_restart"
	EventSetIndexSettings = "set_index_settings"
	// EventSetShardWeights gives an index new shard_weights: its write load moves between shards.
	EventSetShardWeights = "set_shard_weights"
)

// Event is something that happens at AtSeconds of virtual time.
type Event struct {
	AtSeconds float64      `json:"at_seconds" unit:"seconds"`
	Kind      string       `json:"kind"`
	Index     string       `json:"index,omitempty"`
	Group     string       `json:"group,omitempty"`
	Load      *LoadProfile `json:"load,omitempty"`
	// Node is a node name for node_leave and a node description for node_join.
	Node         *EventNode `json:"node,omitempty"`
	Rate         float64    `json:"rate,omitempty"`
	UntilSeconds float64    `json:"until_seconds,omitempty" unit:"seconds"`
	MS           float64    `json:"ms,omitempty"`
	// Spec and RolloverFrom are create_index's new index and the index whose write load it takes.
	Spec         *IndexSpec `json:"spec,omitempty"`
	RolloverFrom string     `json:"rollover_from,omitempty"`
	// DownSeconds is how long a node_restart keeps the node away; WaitForGreen holds the event
	// (and the events after it) until the cluster is green.
	DownSeconds  float64 `json:"down_seconds,omitempty" unit:"seconds"`
	WaitForGreen bool    `json:"wait_for_green,omitempty"`
	// Settings are set_index_settings' index settings, as a PUT {index}/_settings body.
	Settings map[string]any `json:"settings,omitempty"`
	// Weights are set_shard_weights' new shard weights, one per primary.
	Weights []float64 `json:"weights,omitempty"`
}

// EventNode is either a bare node name (`"node": "node-1"`) or a node description (`"node": {...}`).
type EventNode struct {
	NodeSpec
	// Bare is true when the JSON was a string, so it encodes back the same way.
	Bare bool `json:"-"`
}

// UnmarshalJSON accepts a string or an object.
func (n *EventNode) UnmarshalJSON(data []byte) error {
	data = bytes.TrimSpace(data)
	if len(data) > 0 && data[0] == '"' {
		n.Bare = true
		return json.Unmarshal(data, &n.Name)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	return dec.Decode(&n.NodeSpec)
}

// MarshalJSON writes the form it was read in.
func (n EventNode) MarshalJSON() ([]byte, error) {
	if n.Bare {
		return json.Marshal(n.Name)
	}
	return json.Marshal(n.NodeSpec)
}

// Load profile kinds (docs/scenarios.md, "The scenario").
const (
	ProfileConstant = "constant"
	ProfileStep     = "step"
	ProfileRamp     = "ramp"
	ProfileSine     = "sine"
	ProfileSeries   = "series"
)

// LoadProfile is a load as a function of scenario time in seconds.
type LoadProfile struct {
	Kind          string      `json:"kind"`
	Value         float64     `json:"value,omitempty"`
	Before        float64     `json:"before,omitempty"`
	After         float64     `json:"after,omitempty"`
	AtSeconds     float64     `json:"at_seconds,omitempty" unit:"seconds"`
	From          float64     `json:"from,omitempty"`
	To            float64     `json:"to,omitempty"`
	StartSeconds  float64     `json:"start_seconds,omitempty" unit:"seconds"`
	EndSeconds    float64     `json:"end_seconds,omitempty" unit:"seconds"`
	Mean          float64     `json:"mean,omitempty"`
	Amplitude     float64     `json:"amplitude,omitempty"`
	PeriodSeconds float64     `json:"period_seconds,omitempty" unit:"seconds"`
	Points        [][]float64 `json:"points,omitempty"`

	// present records which keys the JSON had, so a missing required field is an error rather than 0.
	present map[string]bool
}

// profileFields lists the fields each kind takes; all are required.
var profileFields = map[string][]string{
	ProfileConstant: {"value"},
	ProfileStep:     {"before", "after", "at_seconds"},
	ProfileRamp:     {"from", "to", "start_seconds", "end_seconds"},
	ProfileSine:     {"mean", "amplitude", "period_seconds"},
	ProfileSeries:   {"points"},
}

// UnmarshalJSON decodes strictly and records which keys were present.
func (p *LoadProfile) UnmarshalJSON(data []byte) error {
	type plain LoadProfile
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var v plain
	if err := dec.Decode(&v); err != nil {
		return err
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(data, &keys); err != nil {
		return err
	}
	*p = LoadProfile(v)
	p.present = make(map[string]bool, len(keys))
	for k := range keys {
		p.present[k] = true
	}
	return nil
}

// MarshalJSON writes the kind and exactly that kind's fields, zero values included, so a parsed
// profile encodes back to one ParseScenario accepts.
func (p LoadProfile) MarshalJSON() ([]byte, error) {
	values := map[string]any{
		"value": p.Value, "before": p.Before, "after": p.After, "at_seconds": p.AtSeconds, "from": p.From,
		"to": p.To, "start_seconds": p.StartSeconds, "end_seconds": p.EndSeconds, "mean": p.Mean,
		"amplitude": p.Amplitude, "period_seconds": p.PeriodSeconds, "points": p.Points,
	}
	o := wire.Object{{"kind", p.Kind}}
	for _, f := range profileFields[p.Kind] {
		v := values[f]
		if pts, ok := v.([][]float64); ok {
			list := make([]any, len(pts))
			for i, pt := range pts {
				list[i] = []any{pt[0], pt[1]}
			}
			v = list
		}
		o = append(o, wire.Field{f, v})
	}
	return wire.AppendJSON(nil, o)
}

// Constant returns a constant profile.
func Constant(v float64) LoadProfile { return LoadProfile{Kind: ProfileConstant, Value: v} }

// At returns the load at scenario time seconds. Profiles are validated non-negative by ParseScenario.
func (p LoadProfile) At(seconds float64) float64 {
	switch p.Kind {
	case ProfileConstant:
		return p.Value
	case ProfileStep:
		if seconds < p.AtSeconds {
			return p.Before
		}
		return p.After
	case ProfileRamp:
		switch {
		case seconds <= p.StartSeconds:
			return p.From
		case seconds >= p.EndSeconds:
			return p.To
		}
		f := (seconds - p.StartSeconds) / (p.EndSeconds - p.StartSeconds)
		return p.From + f*(p.To-p.From)
	case ProfileSine:
		return p.Mean + p.Amplitude*math.Sin(2*math.Pi*seconds/p.PeriodSeconds)
	case ProfileSeries:
		return seriesAt(p.Points, seconds)
	}
	return 0
}

// seriesAt interpolates linearly between points sorted by time, holding the ends flat.
func seriesAt(points [][]float64, t float64) float64 {
	if len(points) == 0 {
		return 0
	}
	if t <= points[0][0] {
		return points[0][1]
	}
	last := points[len(points)-1]
	if t >= last[0] {
		return last[1]
	}
	i, _ := slices.BinarySearchFunc(points, t, func(p []float64, t float64) int {
		switch {
		case p[0] < t:
			return -1
		case p[0] > t:
			return 1
		}
		return 0
	})
	if points[i][0] == t {
		return points[i][1]
	}
	a, b := points[i-1], points[i]
	return a[1] + (t-a[0])/(b[0]-a[0])*(b[1]-a[1])
}

// LoadScenario reads and parses a scenario file.
func LoadScenario(path string) (*Scenario, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load scenario: %w", err)
	}
	sc, err := ParseScenario(data)
	var located *jsonstrict.Error
	if errors.As(err, &located) {
		return nil, fmt.Errorf("load scenario %w", jsonstrict.InFile(path, located))
	}
	if err != nil {
		return nil, fmt.Errorf("load scenario %s: %w", path, err)
	}
	return sc, nil
}

// ParseScenario decodes a scenario strictly (unknown fields are errors) and validates every field.
// Errors name the field path, e.g. `indices[0].write_load.kind: unknown kind "stepp"`, and a
// document error (syntax, an unknown field, a wrong type) its line and column too. Sizes (fields
// tagged unit:"bytes") may be written "8GiB" and times in seconds (unit:"seconds") "5m".
func ParseScenario(data []byte) (*Scenario, error) {
	if first := skipSpace(data); first < len(data) && data[first] != '{' {
		return nil, errors.New("parse scenario: not a JSON object")
	}
	data, err := jsonstrict.Normalize(data, reflect.TypeFor[Scenario](), jsonstrict.Options{})
	if err != nil {
		return nil, fmt.Errorf("parse scenario: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var sc Scenario
	if err := dec.Decode(&sc); err != nil {
		return nil, fmt.Errorf("parse scenario: %w", err)
	}
	if err := sc.Validate(); err != nil {
		return nil, err
	}
	return &sc, nil
}

// fieldError is a validation error naming the field path.
func fieldError(path, format string, args ...any) error {
	return fmt.Errorf("%s: %s", path, fmt.Sprintf(format, args...))
}

// Validate checks every field; ParseScenario calls it, and callers building a Scenario in code should.
func (sc *Scenario) Validate() error {
	if sc.Name == "" {
		return fieldError("name", "required")
	}
	if !(sc.TickSeconds > 0) || math.IsInf(sc.TickSeconds, 0) {
		return fieldError("tick_seconds", "must be positive, got %v", sc.TickSeconds)
	}
	if !(sc.DurationSeconds >= sc.TickSeconds) || math.IsInf(sc.DurationSeconds, 0) {
		return fieldError("duration_seconds", "must be at least tick_seconds (%v), got %v", sc.TickSeconds, sc.DurationSeconds)
	}
	if sc.DurationSeconds/sc.TickSeconds > 10_000_000 {
		return fieldError("duration_seconds", "%v s at %v s ticks is over 10,000,000 ticks", sc.DurationSeconds, sc.TickSeconds)
	}
	if err := sc.Cluster.validate("cluster"); err != nil {
		return err
	}
	if err := validateNodeSpec(sc.NodeDefaults, "node_defaults", false); err != nil {
		return err
	}
	if len(sc.Nodes) == 0 {
		return fieldError("nodes", "at least one node is required")
	}
	nodes := map[string]bool{}
	for i, n := range sc.Nodes {
		p := fmt.Sprintf("nodes[%d]", i)
		if err := validateNodeSpec(n, p, true); err != nil {
			return err
		}
		if nodes[n.Name] {
			return fieldError(p+".name", "duplicate node name %q", n.Name)
		}
		nodes[n.Name] = true
	}
	indices := map[string]bool{}
	for i := range sc.Indices {
		if err := sc.Indices[i].validate(fmt.Sprintf("indices[%d]", i), nodes, indices); err != nil {
			return err
		}
	}
	groups := map[string]bool{}
	for i := range sc.IndexGroups {
		g := &sc.IndexGroups[i]
		if err := g.validate(fmt.Sprintf("index_groups[%d]", i), indices); err != nil {
			return err
		}
		groups[g.NamePrefix] = true
	}
	if err := sc.validateTenants(indices); err != nil {
		return err
	}
	return sc.validateEvents(nodes, indices, groups)
}

// Bounds on a tenant, so a scenario cannot ask for more live tasks than a run can hold.
const (
	maxTenantTaskSeconds = 86_400
	maxTenantShardRate   = 100_000 // peak queries per second × the index's primaries
	maxTenantLiveTasks   = 100_000 // peak queries per second × task_seconds × the index's primaries
)

// primariesOf is the primary count of a scenario index, from indices or index_groups.
func (sc *Scenario) primariesOf(name string) int {
	for _, ix := range sc.Indices {
		if ix.Name == name {
			return ix.Primaries
		}
	}
	for _, g := range sc.IndexGroups {
		if rest, ok := strings.CutPrefix(name, g.NamePrefix); ok {
			if n, err := strconv.Atoi(rest); err == nil && n >= 0 && n < g.Count && strconv.Itoa(n) == rest {
				return g.Primaries
			}
		}
	}
	return 0
}

func (sc *Scenario) validateTenants(indices map[string]bool) error {
	names, opaque := map[string]bool{}, map[string]bool{}
	for i := range sc.Tenants {
		t := &sc.Tenants[i]
		p := fmt.Sprintf("tenants[%d]", i)
		switch {
		case t.Name == "":
			return fieldError(p+".name", "required")
		case names[t.Name]:
			return fieldError(p+".name", "duplicate tenant name %q", t.Name)
		case t.OpaqueID == "":
			return fieldError(p+".opaque_id", "required: the X-Opaque-Id header the tenant's searches carry")
		case strings.TrimSpace(t.OpaqueID) != t.OpaqueID || strings.ContainsAny(t.OpaqueID, "\r\n"):
			return fieldError(p+".opaque_id", "%q: a header value takes no surrounding spaces or line breaks", t.OpaqueID)
		case opaque[t.OpaqueID]:
			return fieldError(p+".opaque_id", "%q is already another tenant's", t.OpaqueID)
		case t.Index == "":
			return fieldError(p+".index", "required")
		case !indices[t.Index]:
			return fieldError(p+".index", "unknown index %q", t.Index)
		case !(t.TaskSeconds > 0) || t.TaskSeconds > maxTenantTaskSeconds:
			return fieldError(p+".task_seconds", "must be in (0, %d], got %v", maxTenantTaskSeconds, t.TaskSeconds)
		case t.TaskHeapBytes < 0:
			return fieldError(p+".task_heap_bytes", "must not be negative, got %d", t.TaskHeapBytes)
		}
		names[t.Name], opaque[t.OpaqueID] = true, true
		if err := validateProfile(t.SearchLoad, p+".search_load", true); err != nil {
			return err
		}
		peak, shards := profilePeak(*t.SearchLoad), float64(sc.primariesOf(t.Index))
		if peak*shards > maxTenantShardRate {
			return fieldError(p+".search_load", "peaks at %v queries per second on %v shards: over %d shard-level tasks a second",
				peak, shards, maxTenantShardRate)
		}
		if peak*shards*t.TaskSeconds > maxTenantLiveTasks {
			return fieldError(p, "search_load's peak %v queries per second × %v shards × task_seconds %v is over %d shard-level tasks running at once",
				peak, shards, t.TaskSeconds, maxTenantLiveTasks)
		}
	}
	return nil
}

// profilePeak is the highest value a validated profile takes.
func profilePeak(p LoadProfile) float64 {
	switch p.Kind {
	case ProfileConstant:
		return p.Value
	case ProfileStep:
		return max(p.Before, p.After)
	case ProfileRamp:
		return max(p.From, p.To)
	case ProfileSine:
		return p.Mean + math.Abs(p.Amplitude)
	case ProfileSeries:
		peak := 0.0
		for _, pt := range p.Points {
			peak = max(peak, pt[1])
		}
		return peak
	}
	return 0
}

func (c ClusterSpec) validate(path string) error {
	if v := c.TranslogReplaySpeed; v != nil && (*v < 0 || math.IsNaN(*v) || math.IsInf(*v, 0)) {
		return fieldError(path+".translog_replay_speed", "must be a positive number of thread-seconds replayed a second, or 0 to turn the replay off (absent: the measured default), got %v", *v)
	}
	if c.RecoveryBytesPerSecond < 0 || math.IsNaN(c.RecoveryBytesPerSecond) || math.IsInf(c.RecoveryBytesPerSecond, 0) {
		return fieldError(path+".recovery_bytes_per_second", "must be positive, got %v", c.RecoveryBytesPerSecond)
	}
	if c.NodeConcurrentRecoveries < 0 {
		return fieldError(path+".node_concurrent_recoveries", "must be positive, got %d", c.NodeConcurrentRecoveries)
	}
	if c.DiskHighWatermark < 0 || c.DiskHighWatermark > 1 || math.IsNaN(c.DiskHighWatermark) {
		return fieldError(path+".disk_high_watermark", "must be a fraction in (0, 1], got %v", c.DiskHighWatermark)
	}
	if err := c.validateAwareness(path); err != nil {
		return err
	}
	return c.validateVersionAndPlugins(path)
}

func validateNodeSpec(n NodeSpec, path string, needName bool) error {
	if needName {
		if n.Name == "" {
			return fieldError(path+".name", "required")
		}
		if strings.ContainsAny(n.Name, ",*") || strings.TrimSpace(n.Name) != n.Name {
			return fieldError(path+".name", "%q: node names may not contain ',' or '*' or surrounding spaces", n.Name)
		}
	} else if n.Name != "" {
		return fieldError(path+".name", "node_defaults takes no name")
	}
	switch {
	case n.WriteThreads < 0:
		return fieldError(path+".write_threads", "must be positive, got %d", n.WriteThreads)
	case n.SearchThreads < 0:
		return fieldError(path+".search_threads", "must be positive, got %d", n.SearchThreads)
	case n.HeapBytes < 0:
		return fieldError(path+".heap_bytes", "must be positive, got %d", n.HeapBytes)
	case n.DiskBytes < 0:
		return fieldError(path+".disk_bytes", "must be positive, got %d", n.DiskBytes)
	case n.Speed < 0 || n.Speed > 100 || math.IsNaN(n.Speed):
		return fieldError(path+".speed", "must be a task-time multiplier in (0, 100], got %v", n.Speed)
	}
	return validateAttributes(n.Attributes, path+".attributes")
}

// validIndexName applies OpenSearch's index name rules (MetadataCreateIndexService.validateIndexOrAliasName).
func validIndexName(name string) error {
	switch {
	case name == "":
		return errors.New("required")
	case name == "." || name == "..":
		return fmt.Errorf("%q is not allowed", name)
	case len(name) > 255:
		return errors.New("longer than 255 bytes")
	case strings.ToLower(name) != name:
		return fmt.Errorf("%q must be lowercase", name)
	case strings.ContainsAny(name, "\\/*?\"<>| ,#:"):
		return fmt.Errorf(`%q must not contain a space, a colon or any of \ / * ? " < > | , #`, name)
	case strings.ContainsAny(name[:1], "_-+"):
		return fmt.Errorf("%q must not start with '_', '-' or '+'", name)
	}
	return nil
}

func validateCounts(path string, primaries, replicas int, shardBytes int64) error {
	if primaries < 1 || primaries > 1024 {
		return fieldError(path+".primaries", "must be in 1..1024 (OpenSearch's index.number_of_shards limit), got %d", primaries)
	}
	if replicas < 0 {
		return fieldError(path+".replicas", "must not be negative, got %d", replicas)
	}
	if shardBytes < 0 {
		return fieldError(path+".shard_bytes", "must not be negative, got %d", shardBytes)
	}
	return nil
}

// validateLoads checks the write and search loads of an index or a group, neither required.
func validateLoads(path string, write, search *LoadProfile) error {
	if err := validateProfile(write, path+".write_load", false); err != nil {
		return err
	}
	return validateProfile(search, path+".search_load", false)
}

func (ix *IndexSpec) validate(path string, nodes, indices map[string]bool) error {
	if err := validIndexName(ix.Name); err != nil {
		return fieldError(path+".name", "%v", err)
	}
	if indices[ix.Name] {
		return fieldError(path+".name", "duplicate index name %q", ix.Name)
	}
	indices[ix.Name] = true
	if err := validateCounts(path, ix.Primaries, ix.Replicas, ix.ShardBytes); err != nil {
		return err
	}
	if err := validateLoads(path, ix.WriteLoad, ix.SearchLoad); err != nil {
		return err
	}
	if ix.ShardWeights != nil {
		if err := validateWeights(path+".shard_weights", ix.ShardWeights, ix.Primaries); err != nil {
			return err
		}
	}
	if err := ix.validateLoadModel(path); err != nil {
		return err
	}
	if ix.Placement != nil {
		if len(ix.Placement) != ix.Primaries {
			return fieldError(path+".placement", "has %d entries for %d primaries", len(ix.Placement), ix.Primaries)
		}
		for s, copies := range ix.Placement {
			p := fmt.Sprintf("%s.placement[%d]", path, s)
			if len(copies) != ix.Replicas+1 {
				return fieldError(p, "has %d nodes, want replicas+1 = %d", len(copies), ix.Replicas+1)
			}
			seen := map[string]bool{}
			for c, n := range copies {
				if !nodes[n] {
					return fieldError(fmt.Sprintf("%s[%d]", p, c), "unknown node %q", n)
				}
				if seen[n] {
					return fieldError(fmt.Sprintf("%s[%d]", p, c), "two copies of shard %d on node %q", s, n)
				}
				seen[n] = true
			}
		}
	}
	return ix.validateSettingsFields(path)
}

func (g *IndexGroupSpec) validate(path string, indices map[string]bool) error {
	if g.Count < 1 {
		return fieldError(path+".count", "must be at least 1, got %d", g.Count)
	}
	if g.Count > 1_000_000 {
		return fieldError(path+".count", "over 1,000,000 indices")
	}
	if err := validIndexName(g.NamePrefix + "0"); err != nil {
		return fieldError(path+".name_prefix", "%v", err)
	}
	for i := range g.Count {
		name := fmt.Sprintf("%s%d", g.NamePrefix, i)
		if indices[name] {
			return fieldError(path+".name_prefix", "index %q already exists", name)
		}
		indices[name] = true
	}
	if err := validateCounts(path, g.Primaries, g.Replicas, g.ShardBytes); err != nil {
		return err
	}
	if err := validateLoads(path, g.WriteLoad, g.SearchLoad); err != nil {
		return err
	}
	if g.Skew != nil {
		switch g.Skew.Kind {
		case "even":
			if g.Skew.S != 0 {
				return fieldError(path+".skew.s", "only zipf takes s")
			}
		case "zipf":
			if !(g.Skew.S > 0) || g.Skew.S > 100 {
				return fieldError(path+".skew.s", "zipf exponent must be in (0, 100], got %v", g.Skew.S)
			}
		default:
			return fieldError(path+".skew.kind", "unknown kind %q (want even or zipf)", g.Skew.Kind)
		}
	}
	m := g.Member(0)
	if m.ShardWeights != nil {
		if err := validateWeights(path+".shard_weights", m.ShardWeights, m.Primaries); err != nil {
			return err
		}
	}
	if err := m.validateLoadModel(path); err != nil {
		return err
	}
	return m.validateSettingsFields(path)
}

// validateProfile checks a profile's kind, that it has exactly that kind's fields, and that the load
// it gives is never negative.
func validateProfile(p *LoadProfile, path string, required bool) error {
	if p == nil {
		if required {
			return fieldError(path, "required")
		}
		return nil
	}
	want, ok := profileFields[p.Kind]
	if !ok {
		return fieldError(path+".kind", "unknown kind %q", p.Kind)
	}
	// A profile built in code has no presence record; then only the values are checked.
	if p.present != nil {
		for _, f := range want {
			if !p.present[f] {
				return fieldError(path+"."+f, "required for kind %q", p.Kind)
			}
		}
		keys := make([]string, 0, len(p.present))
		for k := range p.present {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			if k != "kind" && !slices.Contains(want, k) {
				return fieldError(path+"."+k, "not a field of kind %q", p.Kind)
			}
		}
	}
	bad := func(f string, v float64) error {
		if !(v >= 0) || math.IsInf(v, 0) {
			return fieldError(path+"."+f, "must be a non-negative load, got %v", v)
		}
		return nil
	}
	finite := func(f string, v float64) error {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fieldError(path+"."+f, "must be finite")
		}
		return nil
	}
	switch p.Kind {
	case ProfileConstant:
		return bad("value", p.Value)
	case ProfileStep:
		return errors.Join(bad("before", p.Before), bad("after", p.After), finite("at_seconds", p.AtSeconds))
	case ProfileRamp:
		if err := errors.Join(bad("from", p.From), bad("to", p.To), finite("start_seconds", p.StartSeconds), finite("end_seconds", p.EndSeconds)); err != nil {
			return err
		}
		if !(p.EndSeconds > p.StartSeconds) {
			return fieldError(path+".end_seconds", "must be after start_seconds (%v), got %v", p.StartSeconds, p.EndSeconds)
		}
	case ProfileSine:
		if err := errors.Join(finite("mean", p.Mean), finite("amplitude", p.Amplitude)); err != nil {
			return err
		}
		if !(p.PeriodSeconds > 0) || math.IsInf(p.PeriodSeconds, 0) {
			return fieldError(path+".period_seconds", "must be positive, got %v", p.PeriodSeconds)
		}
		if p.Mean-math.Abs(p.Amplitude) < 0 {
			return fieldError(path+".amplitude", "mean %v - |amplitude %v| would make the load negative", p.Mean, p.Amplitude)
		}
	case ProfileSeries:
		if len(p.Points) == 0 {
			return fieldError(path+".points", "at least one point is required")
		}
		for i, pt := range p.Points {
			pp := fmt.Sprintf("%s.points[%d]", path, i)
			if len(pt) != 2 {
				return fieldError(pp, "want [seconds, value], got %d numbers", len(pt))
			}
			if err := finite("points", pt[0]); err != nil {
				return fieldError(pp, "seconds must be finite")
			}
			if !(pt[1] >= 0) || math.IsInf(pt[1], 0) {
				return fieldError(pp, "value must be a non-negative load, got %v", pt[1])
			}
			if i > 0 && !(pt[0] > p.Points[i-1][0]) {
				return fieldError(pp, "seconds %v not after the previous point's %v", pt[0], p.Points[i-1][0])
			}
		}
	}
	return nil
}

// eventFields lists, per kind, the optional fields besides at_seconds and kind that it may use.
var eventFields = map[string][]string{
	EventSetWriteLoad:     {"index", "group", "load"},
	EventSetShardWeights:  {"index", "weights"},
	EventSetSearchLoad:    {"index", "group", "load"},
	EventNodeLeave:        {"node"},
	EventNodeJoin:         {"node"},
	EventAPIErrors:        {"rate", "until_seconds"},
	EventAPILatency:       {"ms", "until_seconds"},
	EventRerouteRejects:   {"until_seconds"},
	EventCreateIndex:      {"spec", "rollover_from"},
	EventDeleteIndex:      {"index"},
	EventNodeRestart:      {"node", "down_seconds", "wait_for_green"},
	EventSetIndexSettings: {"index", "settings"},
}

// EventKinds lists the event kinds the format accepts, in name order.
func EventKinds() []string { return slices.Sorted(maps.Keys(eventFields)) }

// ProfileKinds lists the load profile kinds the format accepts, in name order.
func ProfileKinds() []string { return slices.Sorted(maps.Keys(profileFields)) }

// setFields names the fields of e that carry a non-zero value.
func (e *Event) setFields() []string {
	var out []string
	add := func(name string, set bool) {
		if set {
			out = append(out, name)
		}
	}
	add("index", e.Index != "")
	add("group", e.Group != "")
	add("load", e.Load != nil)
	add("node", e.Node != nil)
	add("rate", e.Rate != 0)
	add("until_seconds", e.UntilSeconds != 0)
	add("ms", e.MS != 0)
	add("weights", e.Weights != nil)
	add("spec", e.Spec != nil)
	add("rollover_from", e.RolloverFrom != "")
	add("down_seconds", e.DownSeconds != 0)
	add("wait_for_green", e.WaitForGreen)
	add("settings", e.Settings != nil)
	return out
}

func (sc *Scenario) validateEvents(nodes, indices, groups map[string]bool) error {
	// Events are checked in time order so node_leave/node_join see the nodes present then.
	order := make([]int, len(sc.Events))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		switch ea, eb := sc.Events[a].AtSeconds, sc.Events[b].AtSeconds; {
		case ea < eb:
			return -1
		case ea > eb:
			return 1
		}
		return 0
	})
	present := map[string]bool{}
	known := map[string]bool{}
	down := map[string]float64{} // node → when the restart that took it away ends
	for n := range nodes {
		present[n], known[n] = true, true
	}
	for _, i := range order {
		e := &sc.Events[i]
		p := fmt.Sprintf("events[%d]", i)
		allowed, ok := eventFields[e.Kind]
		if !ok {
			return fieldError(p+".kind", "unknown kind %q", e.Kind)
		}
		if !(e.AtSeconds >= 0) || e.AtSeconds > sc.DurationSeconds {
			return fieldError(p+".at_seconds", "must be in [0, duration_seconds %v], got %v", sc.DurationSeconds, e.AtSeconds)
		}
		for _, f := range e.setFields() {
			if !slices.Contains(allowed, f) {
				return fieldError(p+"."+f, "not a field of kind %q", e.Kind)
			}
		}
		until := func() error {
			if !(e.UntilSeconds > e.AtSeconds) || math.IsInf(e.UntilSeconds, 0) {
				return fieldError(p+".until_seconds", "must be after at_seconds (%v), got %v", e.AtSeconds, e.UntilSeconds)
			}
			return nil
		}
		switch e.Kind {
		case EventSetWriteLoad, EventSetSearchLoad:
			switch {
			case e.Index != "" && e.Group != "":
				return fieldError(p, "give index or group, not both")
			case e.Index != "" && !indices[e.Index]:
				return fieldError(p+".index", "unknown index %q", e.Index)
			case e.Group != "" && !groups[e.Group]:
				return fieldError(p+".group", "no index_groups entry has name_prefix %q", e.Group)
			case e.Index == "" && e.Group == "":
				return fieldError(p+".index", "index or group is required")
			}
			if err := validateProfile(e.Load, p+".load", true); err != nil {
				return err
			}
		case EventNodeLeave:
			switch {
			case e.Node == nil || e.Node.Name == "":
				return fieldError(p+".node", "the name of the node that leaves is required")
			case !e.Node.Bare:
				return fieldError(p+".node", "node_leave takes a node name, not an object")
			case !present[e.Node.Name]:
				return fieldError(p+".node", "node %q is not in the cluster at %v s", e.Node.Name, e.AtSeconds)
			case down[e.Node.Name] > e.AtSeconds:
				return fieldError(p+".node", "node %q is restarting at %v s", e.Node.Name, e.AtSeconds)
			}
			delete(present, e.Node.Name)
		case EventNodeJoin:
			if e.Node == nil || e.Node.Bare {
				return fieldError(p+".node", "node_join takes a node object, e.g. {\"name\": \"node-9\"}")
			}
			if err := validateNodeSpec(e.Node.NodeSpec, p+".node", true); err != nil {
				return err
			}
			if known[e.Node.Name] {
				return fieldError(p+".node.name", "node name %q was already used", e.Node.Name)
			}
			present[e.Node.Name], known[e.Node.Name] = true, true
		case EventAPIErrors:
			if !(e.Rate > 0 && e.Rate <= 1) {
				return fieldError(p+".rate", "must be in (0, 1], got %v", e.Rate)
			}
			if err := until(); err != nil {
				return err
			}
		case EventAPILatency:
			if !(e.MS > 0) || e.MS > 600_000 {
				return fieldError(p+".ms", "must be in (0, 600000], got %v", e.MS)
			}
			if err := until(); err != nil {
				return err
			}
		case EventRerouteRejects:
			if err := until(); err != nil {
				return err
			}
		case EventCreateIndex, EventDeleteIndex, EventNodeRestart, EventSetIndexSettings:
			if err := sc.validateShapeEvent(e, p, present, indices, down); err != nil {
				return err
			}
		case EventSetShardWeights:
			if err := sc.validateSetShardWeights(e, p, indices); err != nil {
				return err
			}
		}
	}
	return nil
}

// skipSpace is the offset of data's first byte that is not JSON white space.
func skipSpace(data []byte) int {
	return len(data) - len(bytes.TrimLeft(data, " \t\r\n"))
}
