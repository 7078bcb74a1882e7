package sim

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
)

// shardState is a copy's routing state, as OpenSearch's ShardRoutingState.
type shardState int

const (
	stateUnassigned shardState = iota
	stateInitializing
	stateStarted
	stateRelocating
)

func (s shardState) String() string {
	return [...]string{"UNASSIGNED", "INITIALIZING", "STARTED", "RELOCATING"}[s]
}

// node is a data node, present or departed.
type node struct {
	ord         int
	name        string
	id          string
	ephemeralID string
	port        int
	zone        string
	// attributes are the node's custom attributes, zone among them when set (cluster_shape.go).
	attributes map[string]string
	heapBytes  int64
	diskBytes  int64
	present    bool
	joined     time.Time
	// restart is set while a node_restart keeps the node away (restart.go).
	restart  *restart
	restarts int // node_restarts so far, for a new ephemeral id each time

	write  pool
	search pool

	// Recomputed by refresh(): copies held (relocation targets count on the target), disk used.
	shardCount int
	diskUsed   int64
	writeLoad  float64 // offered WRITE load this tick
	searchLoad float64 // offered search load this tick
	tenantLoad float64 // the tenants' part of searchLoad

	// speed multiplies the time its tasks take (1 for the reference instance type).
	speed float64
}

func (n *node) ip() string      { return "127.0.0.1" }
func (n *node) host() string    { return "127.0.0.1" }
func (n *node) address() string { return fmt.Sprintf("127.0.0.1:%d", n.port) }

// attrs are the node's custom attributes (zone when set). Callers must not change the map.
func (n *node) attrs() map[string]string {
	if n.attributes == nil {
		return map[string]string{}
	}
	return n.attributes
}

// discoString is DiscoveryNode.toString, which OpenSearch puts in reroute errors: its attributes
// after the one every 2.x node carries, in name order.
func (n *node) discoString() string {
	attrs := "{shard_indexing_pressure_enabled=true"
	for _, k := range slices.Sorted(maps.Keys(n.attrs())) {
		attrs += ", " + k + "=" + n.attributes[k]
	}
	attrs += "}"
	return fmt.Sprintf("{%s}{%s}{%s}{%s}{%s}{%s}{di}%s", n.name, n.id, n.ephemeralID, n.host(), n.ip(), n.address(), attrs)
}

// index is one index with its shards.
type index struct {
	ord        int
	name       string
	uuid       string
	replicas   int
	shardBytes int64
	weights    []float64 // per primary, summing to 1
	writeLoad  LoadProfile
	searchLoad LoadProfile
	group      *group  // set for index_groups members: loads are the group's × share
	share      float64 // this member's part of its group's load
	created    time.Time
	shards     []*shard
	// settings holds the index's dynamic settings as flat keys ("index.routing.allocation.exclude._name").
	settings        map[string]string
	filters         filterSet // compiled from settings
	settingsVersion int64
	totalShardsCap  int // index.routing.allocation.total_shards_per_node, 0 = unlimited
	priority        int // index.priority: unassigned copies of higher priority indices are allocated first
	// rolloverOf is the index whose write load this one takes once its primaries are active
	// (rollover.go); nil when it is not a rollover's pending target.
	rolloverOf *index

	counts []int // copies per node ord, recomputed by refresh()

	// searchWeights split search_load over the shards (summing to 1); nil spreads it evenly over
	// the index's active copies.
	searchWeights []float64
	// segment is index.replication.type SEGMENT: only the primary indexes.
	segment bool
	// growthPerSecond is shard_bytes_growth_per_hour / 3600; grown the bytes added so far, whole
	// bytes of which are in shardBytes.
	growthPerSecond, grown float64
}

func (ix *index) loads(t float64) (write, search float64) {
	if ix.group != nil {
		return ix.group.writeLoad.At(t) * ix.share, ix.group.searchLoad.At(t) * ix.share
	}
	return ix.writeLoad.At(t), ix.searchLoad.At(t)
}

// group is an index_groups entry: its loads are totals over its members.
type group struct {
	prefix     string
	writeLoad  LoadProfile
	searchLoad LoadProfile
	members    []*index
}

// shard is one shard id with all its copies (primary and replicas, in any state).
type shard struct {
	idx    *index
	num    int
	copies []*shardCopy
	term   int64
	seqNo  float64 // operations indexed on the primary: max_seq_no

	// For the "same move twice" invariant: the last accepted external move and whether the shard
	// has moved otherwise since.
	lastMove      moveKey
	hasLastMove   bool
	movedSinceCmd bool
}

func (sh *shard) String() string { return fmt.Sprintf("[%s][%d]", sh.idx.name, sh.num) }

func (sh *shard) primary() *shardCopy {
	for _, c := range sh.copies {
		if c.primary {
			return c
		}
	}
	return nil
}

// onNode returns the copy of sh on n, as holder or relocation target.
func (sh *shard) onNode(n *node) *shardCopy {
	for _, c := range sh.copies {
		if c.node == n || c.target == n {
			return c
		}
	}
	return nil
}

type moveKey struct{ from, to string }

// shardCopy is one ShardRouting: a primary or replica, unassigned, initializing, started or
// relocating. A relocating copy keeps serving on node until its recovery onto target ends.
type shardCopy struct {
	sh      *shard
	primary bool
	state   shardState
	node    *node
	allocID string

	target        *node // relocation target, when state is relocating
	targetAllocID string
	rec           *recovery // the recovery in flight for an initializing or relocating copy

	unassignedReason string
	unassignedAt     time.Time
	delayedUntil     time.Time
	lostData         bool // a primary whose every copy was lost: only allocate_*_primary brings it back
	// dataOn is the restarted node that still holds this unassigned copy's data (restart.go).
	dataOn *node

	// external is true while the copy sits where an external reroute move put it.
	external bool

	// Counters that live with the copy and start at 0 when a copy is created on a node.
	indexTotal   float64
	indexTimeMS  float64
	queryTotal   float64
	queryTimeMS  float64
	fetchTotal   float64
	fetchTimeMS  float64
	docs         float64
	indexCurrent float64
	queryCurrent float64

	// Demand this tick, in threads.
	writeDemand  float64
	searchDemand float64
	tenantDemand float64 // the tenants' search work on this copy

	// tick is what the last tick added to the counters, for sim serve's reads within a tick.
	tick copyTick
}

func (c *shardCopy) active() bool { return c.state == stateStarted || c.state == stateRelocating }

// routingString is ShardRouting.toString, as OpenSearch prints it in decider explanations.
func (c *shardCopy) routingString() string {
	role := "R"
	if c.primary {
		role = "P"
	}
	nodeID := "null"
	if c.node != nil {
		nodeID = c.node.id
	}
	s := fmt.Sprintf("%s, node[%s], [%s], s[%s]", c.sh, nodeID, role, c.state)
	if c.target != nil {
		s = fmt.Sprintf("%s, node[%s], relocating [%s], [%s], s[%s]", c.sh, nodeID, c.target.id, role, c.state)
	}
	if c.allocID != "" {
		s += fmt.Sprintf(", a[id=%s]", c.allocID)
	}
	return s
}

// resetCounters starts the copy's statistics afresh, as a new IndexShard on a node does.
func (c *shardCopy) resetCounters() {
	c.indexTotal, c.indexTimeMS, c.queryTotal, c.queryTimeMS, c.fetchTotal, c.fetchTimeMS = 0, 0, 0, 0, 0, 0
	c.indexCurrent, c.queryCurrent = 0, 0
	c.docs = float64(c.sh.idx.shardBytes) / avgDocBytes
}

// recovery is a peer recovery: a relocation (copy moves source → target) or a replica (or empty
// primary) initializing on target. Throttled ones wait in seq order.
type recovery struct {
	seq        int64
	copy       *shardCopy
	relocation bool
	source     *node // nil for an empty primary
	target     *node
	bytes      float64
	done       float64
	external   bool // started by an external reroute command
	// The translog replay after the file copy (hot-copy recovery, recovery.go): copySeconds the
	// file copy has taken, replayWork the source's indexing over it in thread-seconds, and
	// replayLeft the seconds of replay still to run once the files are copied.
	copySeconds, replayWork, replayLeft float64
	copied                              bool
}

// makeID derives a stable 22-character base64url identifier, like OpenSearch's UUIDs, from the seed
// and a name.
func makeID(seed uint64, name string) string {
	sum := sha256.Sum256([]byte(fmt.Sprintf("%d/%s", seed, name)))
	return base64.RawURLEncoding.EncodeToString(sum[:])[:22]
}

// randomID draws a 22-character base64url identifier from r.
func randomID(r *rand.Rand) string {
	var b [16]byte
	binary.LittleEndian.PutUint64(b[:8], r.Uint64())
	binary.LittleEndian.PutUint64(b[8:], r.Uint64())
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// zipfShares splits 1 over n members with weights 1/(i+1)^s.
func zipfShares(n int, s float64) []float64 {
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
