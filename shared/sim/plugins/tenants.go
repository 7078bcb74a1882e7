package plugins

import (
	"cmp"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/shardwise/shardwise/shared/sim/model"
	"github.com/shardwise/shardwise/shared/sim/scenario"
	"github.com/shardwise/shardwise/shared/sim/wire"
)

// Tenants: a scenario's tenants are clients searching one index each. A tenant's queries arrive at
// its search_load (queries per second, evenly spaced, the rate read at each tick's start like every
// load). A query is a coordinating search task (indices:data/read/search) on a node taken in turn
// from the present nodes, and one shard-level query task (indices:data/read/search[phase/query]) per
// shard of the index on one of the shard's active copies, taken in turn, each a child of the
// coordinating task, possibly across nodes. Each shard-level task offers task_seconds of search-thread
// work, spread over [arrival, arrival + task_seconds) as the pools' offered load (so it contends in
// the search pools with the index's own load), waits the search pool's queue wait on its node
// (queue.go) and then runs task_seconds: it lives wait + task_seconds, and its query lives until its
// slowest shard is done. The query's latency is that life, task_seconds plus the longest wait of the
// nodes it ran on.
//
// Queries still running at a tick's end are kept, with ids that stay theirs until they end, so the
// tasks API lists them tick after tick with running_time growing; shorter ones are counted (load,
// latency) without being kept, as no request can see them. POST _tasks/{id}/_cancel on a tenant's
// task ends its resource use at once: the work it had not yet offered leaves the pool's load, the
// work it had offered and not yet been served leaves the pool's backlog, and a coordinating task's
// cancellation takes its shard-level tasks with it. A cancelled query leaves the tasks API at the
// next tick, and gives no latency sample. While the workload-management plugin acts on tasks, a
// tick's arrivals are made queries before the pools' step, so that it can reject and cancel them
// within the tick (wlm_enforce.go).

// tenantTaskBase is the first id of a tenant task: far above the per-tick ids of the synthetic
// search tasks (tick × 1,000,000 + a few thousand).
const tenantTaskBase int64 = 1 << 50

// Coordinating tasks' own use: the reduce of each shard's result.
const (
	coordCPUPerShard  = time.Millisecond
	coordHeapPerShard = 64 << 10
)

// Tenant is a TenantSpec at run time.
type Tenant struct {
	ord    int
	spec   scenario.TenantSpec
	ix     *model.Index
	load   scenario.LoadProfile
	credit float64 // arrivals owed, in (0, 1] after the first tick: the next arrives when it reaches 1
	seq    int64   // queries issued

	live  []*tenantQuery
	batch tenantBatch
	// pending are this tick's arrivals made queries before the pools' step, while the
	// workload-management plugin acts on tasks (wlm_enforce.go); nil otherwise.
	pending []*tenantQuery

	cancelled int
	// searchesCancelled counts the searches a cancellation reached, each once however many of its
	// tasks were cancelled.
	searchesCancelled int
	rejected          int              // searches the workload-management plugin rejected, whole or on a shard
	latency           []model.Weighted // ms, weighted by queries
}

// tenantBatch is one tick's arrivals, between the load computation and the pools' step.
type tenantBatch struct {
	t, dt  float64
	rate   float64
	credit float64 // credit at the tick's start
	n      int     // arrivals
	made   bool    // the arrivals were made queries before the pools' step (tenant.pending)
	seq    int64   // the first arrival's sequence number
	copies [][]*model.ShardCopy
}

// arrival is the time of the batch's i-th arrival.
func (b *tenantBatch) arrival(i int) float64 { return b.t + (float64(i)+1-b.credit)/b.rate }

// tenantQuery is one kept query.
type tenantQuery struct {
	tn        *Tenant
	seq       int64
	arrival   float64 // scenario seconds
	coord     *model.Node
	id        int64
	Cancelled bool
	cancelAt  float64
	shards    []*tenantShardTask
	group     string // the workload group's id the plugin gave it on arrival; "" default
	rejected  bool   // rejected by the plugin on arrival, on its coordinating node or a shard's
	counted   bool   // counted in its tenant's searchesCancelled
}

// countCancelled counts the search as cancelled, once.
func (q *tenantQuery) countCancelled() {
	if !q.counted {
		q.counted = true
		q.tn.searchesCancelled++
	}
}

// end is when the query's slowest shard-level task is done.
func (q *tenantQuery) end() float64 {
	e := q.arrival
	for _, c := range q.shards {
		e = max(e, c.end())
	}
	return e
}

// anyCancelled reports whether the query or any of its shard-level tasks was cancelled.
func (q *tenantQuery) anyCancelled() bool {
	return q.Cancelled || slices.ContainsFunc(q.shards, func(c *tenantShardTask) bool { return c.Cancelled })
}

// tenantShardTask is one shard-level query task of a kept query.
type tenantShardTask struct {
	q         *tenantQuery
	c         *model.ShardCopy
	n         *model.Node
	id        int64
	wait      float64 // search queue wait on n when the query arrived
	Cancelled bool
	cancelAt  float64
}

func (c *tenantShardTask) end() float64 { return c.q.arrival + c.wait + c.q.tn.spec.TaskSeconds }

// stopAt is when the task stops using resources: its end, or its cancellation.
func (c *tenantShardTask) stopAt() float64 {
	if c.Cancelled {
		return min(c.cancelAt, c.end())
	}
	return c.end()
}

// served is the search-thread seconds the task has run by time x.
func (c *tenantShardTask) served(x float64) float64 {
	x = min(x, c.stopAt())
	return math.Min(math.Max(x-c.q.arrival-c.wait, 0), c.q.tn.spec.TaskSeconds)
}

// offered is the work the task has offered its pool by time x: task_seconds spread from arrival.
func (c *tenantShardTask) offered(x float64) float64 {
	x = min(x, c.stopAt())
	return math.Min(math.Max(x-c.q.arrival, 0), c.q.tn.spec.TaskSeconds)
}

// NewTenants builds the scenario's tenants; the indices exist.
func (s *Plugins) NewTenants() {
	for i, ts := range s.Spec.Tenants {
		s.tenants = append(s.tenants, &Tenant{ord: i, spec: ts, ix: s.ByIndex[ts.Index], load: model.ProfileOr(ts.SearchLoad)})
	}
	s.nextTenantTask = tenantTaskBase
}

// overlap is the length of [a, b) ∩ [c, d).
func overlap(a, b, c, d float64) float64 { return math.Max(0, math.Min(b, d)-math.Max(a, c)) }

// TenantLoads adds the tenants' offered search work over [t, t+dt) to their copies and nodes, after
// computeLoads: the kept queries' tasks still running, and this tick's arrivals. It first drops
// what ended, was cancelled, or lost its node.
func (s *Plugins) TenantLoads(t, dt float64) {
	if len(s.tenants) == 0 {
		return
	}
	for _, n := range s.Nodes {
		n.TenantLoad = 0
	}
	for _, ix := range s.Indices {
		for _, sh := range ix.Shards {
			for _, c := range sh.Copies {
				c.TenantDemand = 0
			}
		}
	}
	add := func(c *model.ShardCopy, n *model.Node, work float64) {
		if work <= 0 || !n.Present {
			return
		}
		n.TenantLoad += work / dt
		n.SearchLoad += work / dt
		if c.Node == n && c.Active() {
			c.TenantDemand += work / dt
		}
	}
	present := s.PresentNodes()
	api := s.wlmEnforcing()
	var pending []*tenantQuery
	for _, tn := range s.tenants {
		tn.live = slices.DeleteFunc(tn.live, func(q *tenantQuery) bool {
			q.shards = slices.DeleteFunc(q.shards, func(c *tenantShardTask) bool {
				return c.Cancelled || !c.n.Present || c.end() <= t
			})
			return q.Cancelled || len(q.shards) == 0 || !q.coord.Present
		})
		b := tenantBatch{t: t, dt: dt, rate: tn.load.At(t), credit: tn.credit, seq: tn.seq}
		if b.rate > 0 {
			owed := tn.credit + b.rate*dt
			b.n = int(math.Ceil(owed)) - 1
			tn.credit = owed - float64(b.n)
		}
		tn.seq += int64(b.n)
		b.copies = make([][]*model.ShardCopy, len(tn.ix.Shards))
		for i, sh := range tn.ix.Shards {
			for _, c := range sh.Copies {
				if c.Active() && c.Node.Present {
					b.copies[i] = append(b.copies[i], c)
				}
			}
		}
		if len(present) == 0 {
			b.n = 0
		}
		b.made = api != ""
		tn.batch = b
		tn.pending = nil
		if api != "" {
			group := s.groupFor(tn)
			for i := range b.n {
				if q := s.newQuery(tn, i, present, c0Wait); q != nil {
					q.group = group
					tn.pending = append(tn.pending, q)
				}
			}
			pending = append(pending, tn.pending...)
		}
	}
	if api != "" {
		s.wlmTick(api, t, dt, pending)
	}
	for _, tn := range s.tenants {
		ts := tn.spec.TaskSeconds
		for _, q := range tn.live {
			for _, c := range q.shards {
				add(c.c, c.n, overlap(q.arrival, min(q.arrival+ts, c.stopAt()), t, t+dt))
			}
		}
		if api != "" {
			for _, q := range tn.pending {
				for _, c := range q.shards {
					add(c.c, c.n, overlap(q.arrival, min(q.arrival+ts, c.stopAt()), t, t+dt))
				}
			}
			continue
		}
		b := &tn.batch
		for i := range b.n {
			a := b.arrival(i)
			seq := b.seq + int64(i)
			for _, cs := range b.copies {
				if len(cs) > 0 {
					c := cs[seq%int64(len(cs))]
					add(c, c.Node, overlap(a, a+ts, t, t+dt))
				}
			}
		}
	}
}

// c0Wait is a shard's queue wait taken before the pools' step: its node's wait in the tick before.
func c0Wait(c *model.ShardCopy) float64 { return c.Node.Search.LastWait }

// newQuery makes the batch's i-th arrival a query with its tasks, each shard waiting wait(copy);
// nil when every shard failed (no search ran).
func (s *Plugins) newQuery(tn *Tenant, i int, present []*model.Node, wait func(*model.ShardCopy) float64) *tenantQuery {
	b := &tn.batch
	seq := b.seq + int64(i)
	q := &tenantQuery{tn: tn, seq: seq, arrival: b.arrival(i), coord: present[int((seq+int64(tn.ord))%int64(len(present)))]}
	for _, cs := range b.copies {
		if len(cs) == 0 {
			continue
		}
		c := cs[seq%int64(len(cs))]
		q.shards = append(q.shards, &tenantShardTask{q: q, c: c, n: c.Node, wait: wait(c)})
	}
	if len(q.shards) == 0 {
		return nil
	}
	q.id = s.newTaskID()
	for _, c := range q.shards {
		c.id = s.newTaskID()
	}
	return q
}

// TenantSettle runs after the pools' step over [t, t+dt): this tick's arrivals take their nodes'
// queue waits, those still running at t+dt are kept, and queries that ended within the tick
// uncancelled give their latency.
func (s *Plugins) TenantSettle() {
	if len(s.tenants) == 0 {
		return
	}
	present := s.PresentNodes()
	for _, tn := range s.tenants {
		b := &tn.batch
		end := b.t + b.dt
		ts := tn.spec.TaskSeconds
		samples := map[float64]float64{}
		for _, q := range tn.live {
			if e := q.end(); e > b.t && e <= end && !q.anyCancelled() {
				samples[roundMicros(e-q.arrival)]++
				s.wlmComplete(q)
			}
		}
		for i := range b.n {
			if b.made {
				break // made queries before the step: tn.pending
			}
			a := b.arrival(i)
			seq := b.seq + int64(i)
			longest, shards := -1.0, 0
			for _, cs := range b.copies {
				if len(cs) > 0 {
					longest = max(longest, cs[seq%int64(len(cs))].Node.Search.LastWait)
					shards++
				}
			}
			if shards == 0 {
				continue // every shard failed: no search ran
			}
			if a+longest+ts <= end {
				samples[roundMicros(longest+ts)]++
				continue
			}
			q := &tenantQuery{tn: tn, seq: seq, arrival: a, coord: present[int((seq+int64(tn.ord))%int64(len(present)))]}
			q.id = s.newTaskID()
			for _, cs := range b.copies {
				if len(cs) == 0 {
					continue
				}
				c := cs[seq%int64(len(cs))]
				q.shards = append(q.shards, &tenantShardTask{q: q, c: c, n: c.Node, id: s.newTaskID(), wait: c.Node.Search.LastWait})
			}
			tn.live = append(tn.live, q)
		}
		for _, q := range tn.pending {
			if q.rejected {
				tn.rejected++
			}
			for _, c := range q.shards {
				if !c.Cancelled {
					c.wait = c.n.Search.LastWait
				}
			}
			running := slices.ContainsFunc(q.shards, func(c *tenantShardTask) bool { return !c.Cancelled })
			switch e := q.end(); {
			case q.anyCancelled():
				// Failed shards end their tasks; the others run on and stay listed.
				if running && e > end {
					tn.live = append(tn.live, q)
				}
			case e <= end:
				samples[roundMicros(e-q.arrival)]++
				s.wlmComplete(q)
			default:
				tn.live = append(tn.live, q)
			}
		}
		for v, w := range samples {
			tn.latency = append(tn.latency, model.Weighted{V: v, W: w})
		}
		// Map order is random; the samples' order must not be.
		slices.SortFunc(tn.latency[len(tn.latency)-len(samples):], func(x, y model.Weighted) int { return cmp.Compare(x.V, y.V) })
	}
}

// roundMicros is seconds in milliseconds, rounded to the microsecond: the same latency reached by
// different sums is one sample value.
func roundMicros(seconds float64) float64 { return math.Round(seconds*1e6) / 1000 }

func (s *Plugins) newTaskID() int64 {
	id := s.nextTenantTask
	s.nextTenantTask++
	return id
}

// TenantTasks lists the tenants' tasks running now on the given nodes: each kept query's
// coordinating task and its shard-level tasks not yet done.
func (s *Plugins) TenantTasks(nodes []*model.Node) []*SimTask {
	if len(s.tenants) == 0 {
		return nil
	}
	on := map[*model.Node]bool{}
	for _, n := range nodes {
		on[n] = true
	}
	x := s.ElapsedSeconds()
	var out []*SimTask
	for _, tn := range s.tenants {
		headers := map[string]string{"X-Opaque-Id": tn.spec.OpaqueID}
		for _, q := range tn.live {
			if !q.coord.Present || q.end() <= x {
				continue
			}
			start := s.at(q.arrival)
			if on[q.coord] {
				pt := &SimTask{N: q.coord, ID: q.id, Action: "indices:data/read/search",
					Desc:  "indices[" + tn.ix.Name + `], search_type[QUERY_THEN_FETCH], source[{"query":{"match_all":{}}}], cancel_after_time_interval[-1]`,
					Start: start, Running: s.at(x).Sub(start), Headers: headers, Query: q,
					Cancelled: q.Cancelled, CancelAt: s.at(q.cancelAt)}
				done := 0
				for _, c := range q.shards {
					if c.served(x) >= tn.spec.TaskSeconds {
						done++
					}
				}
				pt.Stats = &TaskStats{CPU: time.Duration(done) * coordCPUPerShard, Mem: int64(done) * coordHeapPerShard, Executions: done}
				out = append(out, pt)
			}
			for _, c := range q.shards {
				if !on[c.n] || !c.n.Present || c.end() <= x {
					continue
				}
				ct := &SimTask{N: c.n, ID: c.id, parentNode: q.coord, Parent: q.id, Action: "indices:data/read/search[phase/query]",
					Desc: "shardId[" + c.c.Sh.String() + "]", Start: start, Running: s.at(x).Sub(start), Headers: headers,
					Query: q, Shard: c, Cancelled: c.Cancelled, CancelAt: s.at(c.cancelAt)}
				served := c.served(x)
				st := &TaskStats{CPU: time.Duration(ThreadCPU(c.n) * served * float64(time.Second))}
				st.Mem = int64(float64(tn.spec.TaskHeapBytes) * served / tn.spec.TaskSeconds)
				if served > 0 {
					st.Executions = 1
				}
				if served > 0 && served < tn.spec.TaskSeconds && !c.Cancelled {
					st.Active = 1
				}
				ct.Stats = st
				out = append(out, ct)
			}
		}
	}
	return out
}

// at is the virtual time of scenario second x.
func (s *Plugins) at(x float64) time.Time {
	return s.Start.Add(time.Duration(math.Round(x * float64(time.Second))))
}

// CancelTenantTask cancels a tenant's task now: a coordinating task with its shard-level tasks, or
// one shard-level task. Each shard-level task stops: its work not yet served leaves its pool's
// backlog (what it had not yet offered is no longer offered from the next tick on).
func (s *Plugins) CancelTenantTask(t *SimTask) {
	x := s.ElapsedSeconds()
	stop := func(c *tenantShardTask) {
		if c.Cancelled || c.end() <= x {
			return
		}
		unserved := c.offered(x) - c.served(x)
		c.Cancelled, c.cancelAt = true, x
		if c.n.Present && unserved > 0 {
			p := &c.n.Search
			p.Backlog = math.Max(0, p.Backlog-unserved/p.TaskSeconds)
		}
	}
	q := t.Query
	if t.Shard != nil {
		stop(t.Shard)
	} else {
		q.Cancelled, q.cancelAt = true, x
		for _, c := range q.shards {
			stop(c)
		}
	}
	q.tn.cancelled++
	q.countCancelled()
}

// TenantResults fills the result's per-tenant measures.
func (s *Plugins) TenantResults(r *model.Result) {
	if len(s.tenants) == 0 {
		return
	}
	r.TasksCancelledByTenant = map[string]int{}
	r.TenantP99SearchLatencyMs = map[string]float64{}
	r.SearchesCancelledByTenant = map[string]int{}
	for _, tn := range s.tenants {
		r.TasksCancelledByTenant[tn.spec.Name] = tn.cancelled
		r.SearchesCancelledByTenant[tn.spec.Name] = tn.searchesCancelled
		if tn.rejected > 0 {
			if r.SearchesRejectedByTenant == nil {
				r.SearchesRejectedByTenant = map[string]int{}
			}
			r.SearchesRejectedByTenant[tn.spec.Name] = tn.rejected
		}
		// A tenant none of whose searches completed has no latency to report: it is left out
		// rather than given 0, which would read as the fastest tenant of all.
		if len(tn.latency) > 0 {
			r.TenantP99SearchLatencyMs[tn.spec.Name] = model.WeightedPercentile(tn.latency, 0.99)
		}
	}
}

// TaskStats is a task's resource_stats as OpenSearch's task resource tracking reports them.
type TaskStats struct {
	CPU        time.Duration
	Mem        int64
	Executions int
	Active     int
}

// Render is the stats as _tasks reports them in resource_stats; one task is its own average, min
// and max.
func (st *TaskStats) Render() wire.Object {
	stat := wire.Object{{"cpu_time_in_nanos", st.CPU.Nanoseconds()}, {"memory_in_bytes", st.Mem}}
	return wire.Object{
		{"average", stat}, {"total", stat}, {"min", stat}, {"max", stat},
		{"thread_info", wire.Object{{"thread_executions", st.Executions}, {"active_threads", st.Active}}},
	}
}

// ParentID is the parent task's full id, on the coordinating node when that is another node.
func (t *SimTask) ParentID() string {
	n := t.N
	if t.parentNode != nil {
		n = t.parentNode
	}
	return n.ID + ":" + strconv.FormatInt(t.Parent, 10)
}
