package model

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/shardwise/shardwise/shared/sim/scenario"
)

// shardState is a copy's routing state, as OpenSearch's ShardRoutingState.
type shardState int

// The ShardRoutingState values, in the order OpenSearch declares them.
const (
	StateUnassigned shardState = iota
	StateInitializing
	StateStarted
	StateRelocating
)

func (s shardState) String() string {
	return [...]string{"UNASSIGNED", "INITIALIZING", "STARTED", "RELOCATING"}[s]
}

// Node is a data node, present or departed.
type Node struct {
	Ord         int
	Name        string
	ID          string
	EphemeralID string
	Port        int
	Zone        string
	// attributes are the node's custom attributes, zone among them when set (cluster_shape.go).
	attributes map[string]string
	HeapBytes  int64
	DiskBytes  int64
	Present    bool
	Joined     time.Time
	// restart is set while a node_restart keeps the node away (restart.go).
	restart  *restart
	restarts int // node_restarts so far, for a new ephemeral id each time

	Write  Pool
	Search Pool

	// Recomputed by refresh(): copies held (relocation targets count on the target), disk used.
	ShardCount int
	DiskUsed   int64
	writeLoad  float64 // offered WRITE load this tick
	SearchLoad float64 // offered search load this tick
	TenantLoad float64 // the tenants' part of searchLoad

	// speed multiplies the time its tasks take (1 for the reference instance type).
	speed float64
}

// IP is the node's publish address: every simulated node is on loopback, told apart by its port.
func (n *Node) IP() string { return "127.0.0.1" }

// Host is the node's host name, the loopback address as for IP.
func (n *Node) Host() string { return "127.0.0.1" }

// Address is the node's transport address, host:port.
func (n *Node) Address() string { return fmt.Sprintf("127.0.0.1:%d", n.Port) }

// Attrs are the node's custom attributes (zone when set). Callers must not change the map.
func (n *Node) Attrs() map[string]string {
	if n.attributes == nil {
		return map[string]string{}
	}
	return n.attributes
}

// DiscoString is DiscoveryNode.toString, which OpenSearch puts in reroute errors: its attributes
// after the one every 2.x node carries, in name order.
func (n *Node) DiscoString() string {
	attrs := "{shard_indexing_pressure_enabled=true"
	for _, k := range slices.Sorted(maps.Keys(n.Attrs())) {
		attrs += ", " + k + "=" + n.attributes[k]
	}
	attrs += "}"
	return fmt.Sprintf("{%s}{%s}{%s}{%s}{%s}{%s}{di}%s", n.Name, n.ID, n.EphemeralID, n.Host(), n.IP(), n.Address(), attrs)
}

// Index is one index with its shards.
type Index struct {
	Ord        int
	Name       string
	UUID       string
	Replicas   int
	ShardBytes int64
	weights    []float64 // per primary, summing to 1
	writeLoad  scenario.LoadProfile
	searchLoad scenario.LoadProfile
	group      *group  // set for index_groups members: loads are the group's × share
	share      float64 // this member's part of its group's load
	Created    time.Time
	Shards     []*Shard
	// Settings holds the index's dynamic settings as flat keys ("index.routing.allocation.exclude._name").
	Settings map[string]string
	Filters  filterSet // compiled from settings
	// OperatorSettings are the settings the scenario gave the index (its spec and set_index_settings
	// events): the operator's, where Settings also holds what the settings API wrote.
	// operatorFilters is compiled from them: a copy they exclude is moved by OpenSearch for the
	// operator, not for the API's client.
	OperatorSettings map[string]string
	operatorFilters  filterSet
	SettingsVersion  int64
	TotalShardsCap   int // index.routing.allocation.total_shards_per_node, 0 = unlimited
	TotalPrimaryCap  int // index.routing.allocation.total_primary_shards_per_node, 0 = unlimited
	Priority         int // index.priority: unassigned copies of higher priority indices are allocated first
	// rolloverOf is the index whose write load this one takes once its primaries are active
	// (rollover.go); nil when it is not a rollover's pending target.
	rolloverOf *Index

	Counts []int // copies per node ord, recomputed by refresh()

	// searchWeights split search_load over the shards (summing to 1); nil spreads it evenly over
	// the index's active copies.
	searchWeights []float64
	// segment is index.replication.type SEGMENT: only the primary indexes.
	segment bool
	// growthPerSecond is shard_bytes_growth_per_hour / 3600; grown the bytes added so far, whole
	// bytes of which are in shardBytes.
	growthPerSecond, grown float64
}

// Loads are the index's write and search load at t seconds: its own profiles, or its share of its
// group's.
func (ix *Index) Loads(t float64) (write, search float64) {
	if ix.group != nil {
		return ix.group.writeLoad.At(t) * ix.share, ix.group.searchLoad.At(t) * ix.share
	}
	return ix.writeLoad.At(t), ix.searchLoad.At(t)
}

// group is an index_groups entry: its loads are totals over its members.
type group struct {
	prefix     string
	writeLoad  scenario.LoadProfile
	searchLoad scenario.LoadProfile
	members    []*Index
}

// Shard is one shard id with all its copies (primary and replicas, in any state).
type Shard struct {
	Idx    *Index
	Num    int
	Copies []*ShardCopy
	Term   int64
	SeqNo  float64 // operations indexed on the primary: max_seq_no

	// For the "same move twice" invariant: the last accepted external move and whether the shard
	// has moved otherwise since.
	LastMove      MoveKey
	HasLastMove   bool
	MovedSinceCmd bool
}

func (sh *Shard) String() string { return fmt.Sprintf("[%s][%d]", sh.Idx.Name, sh.Num) }

// Primary is the shard's primary copy, or nil when it has none.
func (sh *Shard) Primary() *ShardCopy {
	for _, c := range sh.Copies {
		if c.Primary {
			return c
		}
	}
	return nil
}

// OnNode returns the copy of sh on n, as holder or relocation target.
func (sh *Shard) OnNode(n *Node) *ShardCopy {
	for _, c := range sh.Copies {
		if c.Node == n || c.Target == n {
			return c
		}
	}
	return nil
}

// MoveKey is a move's source and target node names, for the "same move twice" invariant.
type MoveKey struct{ From, To string }

// ShardCopy is one ShardRouting: a primary or replica, unassigned, initializing, started or
// relocating. A relocating copy keeps serving on node until its recovery onto target ends.
type ShardCopy struct {
	Sh      *Shard
	Primary bool
	State   shardState
	Node    *Node
	AllocID string

	Target        *Node // relocation target, when state is relocating
	TargetAllocID string
	Rec           *Recovery // the recovery in flight for an initializing or relocating copy

	UnassignedReason string
	UnassignedAt     time.Time
	DelayedUntil     time.Time
	LostData         bool // a primary whose every copy was lost: only allocate_*_primary brings it back
	// DataOn is the restarted node that still holds this unassigned copy's data (restart.go).
	DataOn *Node

	// External is true while the copy sits where an external reroute move put it, since
	// ExternalSince.
	External      bool
	ExternalSince time.Time

	// Counters that live with the copy and start at 0 when a copy is created on a node.
	IndexTotal   float64
	IndexTimeMS  float64
	QueryTotal   float64
	QueryTimeMS  float64
	FetchTotal   float64
	FetchTimeMS  float64
	Docs         float64
	IndexCurrent float64
	QueryCurrent float64

	// Demand this tick, in threads.
	WriteDemand  float64
	SearchDemand float64
	TenantDemand float64 // the tenants' search work on this copy

	// Tick is what the last tick added to the counters, for sim serve's reads within a tick.
	Tick copyTick
}

// Active reports whether the copy serves: started, or relocating and still on its node.
func (c *ShardCopy) Active() bool { return c.State == StateStarted || c.State == StateRelocating }

// RoutingString is ShardRouting.toString, as OpenSearch prints it in decider explanations.
func (c *ShardCopy) RoutingString() string {
	role := "R"
	if c.Primary {
		role = "P"
	}
	nodeID := "null"
	if c.Node != nil {
		nodeID = c.Node.ID
	}
	s := fmt.Sprintf("%s, node[%s], [%s], s[%s]", c.Sh, nodeID, role, c.State)
	if c.Target != nil {
		s = fmt.Sprintf("%s, node[%s], relocating [%s], [%s], s[%s]", c.Sh, nodeID, c.Target.ID, role, c.State)
	}
	if c.AllocID != "" {
		s += fmt.Sprintf(", a[id=%s]", c.AllocID)
	}
	return s
}

// ResetCounters starts the copy's statistics afresh, as a new IndexShard on a node does.
func (c *ShardCopy) ResetCounters() {
	c.IndexTotal, c.IndexTimeMS, c.QueryTotal, c.QueryTimeMS, c.FetchTotal, c.FetchTimeMS = 0, 0, 0, 0, 0, 0
	c.IndexCurrent, c.QueryCurrent = 0, 0
	c.Docs = float64(c.Sh.Idx.ShardBytes) / avgDocBytes
}

// Recovery is a peer recovery: a relocation (copy moves source → target) or a replica (or empty
// primary) initializing on target. Throttled ones wait in seq order.
type Recovery struct {
	seq        int64
	copy       *ShardCopy
	Relocation bool
	Source     *Node // nil for an empty primary
	Target     *Node
	Bytes      float64
	done       float64
	external   bool // started by an external reroute command
	// The translog replay after the file copy (hot-copy recovery, recovery.go): copySeconds the
	// file copy has taken, replayWork the source's indexing over it in thread-seconds, and
	// replayLeft the seconds of replay still to run once the files are copied.
	copySeconds, replayWork, replayLeft float64
	copied                              bool
}

// MakeID derives a stable 22-character base64url identifier, like OpenSearch's UUIDs, from the seed
// and a name.
func MakeID(seed uint64, name string) string {
	sum := sha256.Sum256([]byte(fmt.Sprintf("%d/%s", seed, name)))
	return base64.RawURLEncoding.EncodeToString(sum[:])[:22]
}

// RandomID draws a 22-character base64url identifier from r.
func RandomID(r *rand.Rand) string {
	var b [16]byte
	binary.LittleEndian.PutUint64(b[:8], r.Uint64())
	binary.LittleEndian.PutUint64(b[8:], r.Uint64())
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// ZipfShares splits 1 over n members with weights 1/(i+1)^s.
func ZipfShares(n int, s float64) []float64 {
	out := make([]float64, n)
	sum := 0.0
	for i := range out {
		out[i] = 1 / math.Pow(float64(i+1), s)
		sum += out[i]
	}
	for i := range out {
		out[i] /= sum
	}
	return out
}

// HeapUsed is the model's heap use: a base share, the on-heap part of the node's shard data, and the
// indexing buffer filling with WRITE utilisation (constants in defaults.go).
func (n *Node) HeapUsed() int64 {
	util := math.Min(1, n.Write.LastActive/float64(n.Write.Threads))
	used := float64(n.HeapBytes)*(heapBaseFraction+HeapIndexingBufferFraction*util) + float64(n.DiskUsed)*HeapPerStoreByte
	return int64(math.Min(used, 0.99*float64(n.HeapBytes)))
}
