package allocation

import (
	"fmt"
	"time"

	"github.com/shardwise/shardwise/shared/cluster"
)

// fixture builds snapshots for tests: nodes with 8 WRITE threads, 100 GiB disks, 8 GiB heaps.
type fixture struct{ s cluster.Snapshot }

func newFixture(nodes ...string) *fixture {
	f := &fixture{s: cluster.Snapshot{Cluster: "t", At: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), IntervalSeconds: 30, Health: "green",
		Settings: cluster.Settings{DiskHighWatermark: 0.9}}}
	for _, n := range nodes {
		f.s.Nodes = append(f.s.Nodes, cluster.Node{ID: "id-" + n, Name: n, Roles: []string{"data"},
			HeapUsedBytes: 2 << 30, HeapMaxBytes: 8 << 30, DiskTotalBytes: 100 << 30, DiskAvailableBytes: 100 << 30,
			Write: cluster.Pool{Threads: 8, RateKnown: true, LoadKnown: true}})
	}
	return f
}

func (f *fixture) node(name string) *cluster.Node {
	for i := range f.s.Nodes {
		if f.s.Nodes[i].Name == name {
			return &f.s.Nodes[i]
		}
	}
	panic("no node " + name)
}

// index adds an index whose shard i has copies on placement[i] (primary first), each copy bearing
// loads[i] WRITE threads and size bytes.
func (f *fixture) index(name string, size int64, loads []float64, placement ...[]string) *fixture {
	f.s.Indices = append(f.s.Indices, cluster.Index{Name: name, Primaries: len(placement), Replicas: len(placement[0]) - 1})
	for sh, nodes := range placement {
		for i, n := range nodes {
			node := f.node(n)
			f.s.Copies = append(f.s.Copies, cluster.Copy{Index: name, Shard: sh, Primary: i == 0, State: cluster.StateStarted,
				Node: node.ID, SizeBytes: size, WriteLoad: loads[sh], LoadKnown: true})
			node.Write.Load += loads[sh]
			node.DiskAvailableBytes -= size
		}
	}
	return f
}

// segment adds an index under segment replication (index.replication.type SEGMENT) whose shard i
// has copies on placement[i], primary first: the primary bears loads[i] WRITE threads, each replica
// cluster.SegmentReplicaShare of it, as the simulator and OpenSearch measure them.
func (f *fixture) segment(name string, size int64, loads []float64, placement ...[]string) *fixture {
	f.s.Indices = append(f.s.Indices, cluster.Index{Name: name, Primaries: len(placement), Replicas: len(placement[0]) - 1,
		ReplicationType: cluster.ReplicationSegment})
	for sh, nodes := range placement {
		for i, n := range nodes {
			node := f.node(n)
			load := loads[sh]
			if i > 0 {
				load *= cluster.SegmentReplicaShare
			}
			f.s.Copies = append(f.s.Copies, cluster.Copy{Index: name, Shard: sh, Primary: i == 0, State: cluster.StateStarted,
				Node: node.ID, SizeBytes: size, WriteLoad: load, LoadKnown: true})
			node.Write.Load += load
			node.DiskAvailableBytes -= size
		}
	}
	return f
}

// hot marks a node as queueing (latency, utilization from its load).
func (f *fixture) queueing(name string, latency float64) *fixture {
	n := f.node(name)
	n.Write.QueueLatencySeconds = latency
	n.Write.Queue = 500
	return f
}

// rejecting makes a node's full queue reject writes: rejectedPerCompleted of them for every write it
// completes (100 a second) over the 30 s interval.
func (f *fixture) rejecting(name string, rejectedPerCompleted float64) *fixture {
	n := f.node(name)
	n.Write.CompletedPerSecond = 100
	n.Write.Rejected = int64(rejectedPerCompleted * 100 * f.s.IntervalSeconds)
	return f
}

func (f *fixture) snap() *cluster.Snapshot {
	s := f.s
	s.Nodes = append([]cluster.Node(nil), f.s.Nodes...)
	s.Copies = append([]cluster.Copy(nil), f.s.Copies...)
	s.Indices = append([]cluster.Index(nil), f.s.Indices...)
	for i := range s.Nodes {
		n := &s.Nodes[i]
		n.Write.Utilization = n.Write.Load / float64(n.Write.Threads)
	}
	return &s
}

// streaks pretends the given nodes already met the criteria in one earlier sample.
func streaks(s *cluster.Snapshot, names ...string) map[string]Streak {
	m := map[string]Streak{}
	for _, n := range names {
		nd := s.NodeByRef(n)
		m[nd.ID] = Streak{Count: 1, Since: s.At.Add(-30 * time.Second), At: s.At.Add(-30 * time.Second)}
	}
	return m
}

func moveNames(p Plan) []string {
	var out []string
	for _, m := range p.Moves {
		out = append(out, fmt.Sprintf("%s[%d] %s->%s %s", m.Index, m.Shard, m.FromName, m.ToName, m.Phase))
	}
	return out
}
