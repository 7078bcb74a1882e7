package plugins

import (
	"cmp"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/shardwise/shardwise/shared/sim/model"
)

// The workload-management plugin at work on the tenants' searches, as OpenSearch's
// WorkloadGroupService (QueryGroupService before 3.1) and its task-cancellation service do:
//
//   - A search gets its group when it arrives: from the rules (3.1 and later), the one whose
//     highest-priority attribute matches (principal.username, then principal.role, then
//     index_pattern, the longest pattern first), every attribute of a rule having to match. Without
//     a matching rule it is in the default group, which is never enforced. The coordinating task
//     and its shard-level tasks carry the group to every node.
//   - Every wlm.<api>.enforcement_interval (1 s by default) each node builds its groups' usage
//     from the tasks it runs: CPU is Σ cpu_time / (now − start) over the group's tasks divided by
//     the node's processors, memory Σ heap / heap max. A task waiting in the search queue has used
//     no CPU yet, so it weighs nothing.
//   - Groups in enforced mode whose usage is over limit × the node's cancellation threshold lose
//     tasks, the highest user of the resource first (MaximumResourceTaskSelectionStrategy), until
//     what is selected covers the excess; then, if the node is in duress (its CPU over the CPU
//     cancellation threshold, or heap at or over the memory one, for duress_streak runs in a row),
//     soft groups do the same. Monitor groups are never cancelled.
//   - wlm.<api>.mode enabled cancels; monitor_only only logs what it would cancel (counted here in
//     the run's result, not in _wlm/stats, whose counters move only on a real cancellation);
//     disabled does nothing.
//   - In mode enabled a request is rejected, on the coordinating node and on each node its shard
//     requests reach, when its group's usage recorded there at the last run is over limit × the
//     rejection threshold; soft groups only while that node is in duress. The source applies this
//     to monitor groups as well (only soft returns early), and so does the simulator.
//
// The simulator runs the plugin within each tick, at its interval, over the tenants' kept queries
// and the tick's arrivals; an arrival's queue wait is taken as its node's wait in the tick before,
// the one figure known before the tick's pools are stepped. The indices' own synthetic searches
// are in the default group.

// WlmResources are the tracked resources in the plugin's order (ResourceType.getSortedValues).
var WlmResources = []string{"cpu", "memory"}

// wlmResourceStats is one resource's figures of one group on one node.
type wlmResourceStats struct {
	Usage         float64 // last recorded usage, a fraction of the node
	Cancellations int64
	Rejections    int64
}

// WlmGroupStats is one group's state on one node, as _wlm/stats reports it.
type WlmGroupStats struct {
	Completions, Rejections, Failures, Cancellations int64
	Res                                              [2]wlmResourceStats // by wlmResources
}

// wlmRuntime is the plugin's per-node state.
type wlmRuntime struct {
	stats  map[string]map[string]*WlmGroupStats // node id → group id → stats
	streak map[string]*[2]int                   // node id → consecutive runs over each threshold
	// WouldCancel counts the tasks monitor_only mode logged as eligible for cancellation.
	WouldCancel int64
	tickStart   float64 // the current tick's start, scenario seconds
}

// DefaultGroupID is the plugin's id for requests no group claims.
func DefaultGroupID(api string) string {
	if api == "query_group" {
		return "DEFAULT_QUERY_GROUP"
	}
	return "DEFAULT_WORKLOAD_GROUP"
}

// wlmFloat reads one of the plugin's numeric settings.
func (s *Plugins) wlmFloat(api, key string) float64 {
	v := s.SettingOr("wlm."+api+"."+key, wlmSettingDefaults[key])
	f, err := strconv.ParseFloat(v, 64)
	if err != nil {
		f, _ = strconv.ParseFloat(wlmSettingDefaults[key], 64)
	}
	return f
}

// wlmEnforcing is the group API when the plugin would act on tasks this tick: installed, not
// disabled, with at least one group.
func (s *Plugins) wlmEnforcing() string {
	api, _, _ := s.WlmAPI()
	if api == "" || s.WLM == nil || len(s.WLM.Groups) == 0 {
		return ""
	}
	if s.SettingOr("wlm."+api+".mode", wlmSettingDefaults["mode"]) == "disabled" {
		return ""
	}
	return api
}

// RuleMatch is how well rule r matches a search on index by user with roles: 0 when it does not
// match; else the priority of its highest attribute (3 username, 2 role, 1 index_pattern) and
// the length of the index pattern that matched (an exact name counts one more than its length).
func RuleMatch(r *WlmRule, index, user string, roles []string) (prio, specificity int) {
	if len(r.Username) > 0 {
		if user == "" || !slices.Contains(r.Username, user) {
			return 0, 0
		}
		prio = 3
	}
	if len(r.Role) > 0 {
		if !slices.ContainsFunc(roles, func(x string) bool { return slices.Contains(r.Role, x) }) {
			return 0, 0
		}
		prio = max(prio, 2)
	}
	if len(r.IndexPattern) > 0 {
		best := 0
		for _, p := range r.IndexPattern {
			if prefix, ok := strings.CutSuffix(p, "*"); ok {
				if strings.HasPrefix(index, prefix) {
					best = max(best, len(prefix))
				}
			} else if p == index {
				best = max(best, len(p)+1)
			}
		}
		if best == 0 && !slices.Contains(r.IndexPattern, "*") {
			return 0, 0
		}
		prio = max(prio, 1)
		specificity = best
	}
	return prio, specificity
}

// groupFor is the id of the group the rules give a tenant's search, "" for the default group.
// Equal matches go to the rule created first.
func (s *Plugins) groupFor(tn *Tenant) string {
	if _, rules, _ := s.WlmAPI(); !rules {
		return ""
	}
	var best *WlmRule
	bp, bs := 0, 0
	for _, r := range s.WLM.Rules {
		p, sp := RuleMatch(r, tn.ix.Name, tn.spec.Username, tn.spec.Roles)
		if p > bp || (p == bp && p > 0 && sp > bs) {
			best, bp, bs = r, p, sp
		}
	}
	if best == nil {
		return ""
	}
	return best.Group
}

func (w *WlmState) groupByID(id string) *WlmGroup {
	for _, g := range w.Groups {
		if g.ID == id {
			return g
		}
	}
	return nil
}

// GroupStats is group id's state on node n, made on first use.
func (s *Plugins) GroupStats(n *model.Node, id string) *WlmGroupStats {
	rt := &s.WLM.Rt
	if rt.stats == nil {
		rt.stats = map[string]map[string]*WlmGroupStats{}
	}
	byGroup := rt.stats[n.ID]
	if byGroup == nil {
		byGroup = map[string]*WlmGroupStats{}
		rt.stats[n.ID] = byGroup
	}
	st := byGroup[id]
	if st == nil {
		st = &WlmGroupStats{}
		byGroup[id] = st
	}
	return st
}

// wlmTask is one shard-level task as a node's usage view sees it at one run.
type wlmTask struct {
	c     *tenantShardTask
	usage [2]float64 // by wlmResources, as a fraction of the node
}

// taskUsage is a running shard-level task's CPU and heap share of its node at scenario second x.
func taskUsage(c *tenantShardTask, n *model.Node, x float64) [2]float64 {
	ts := c.q.tn.spec.TaskSeconds
	served := c.served(x)
	var u [2]float64
	if life := x - c.q.arrival; life > 0 {
		u[0] = ThreadCPU(n) * served / life / float64(n.Write.Threads)
	}
	if n.HeapBytes > 0 {
		u[1] = float64(c.q.tn.spec.TaskHeapBytes) * served / ts / float64(n.HeapBytes)
	}
	return u
}

// nodeDuress advances node n's duress trackers by one run and reports whether it is in duress.
// The node's CPU and heap are the tick's figures (the pools' last step).
func (s *Plugins) nodeDuress(api string, n *model.Node) bool {
	rt := &s.WLM.Rt
	if rt.streak == nil {
		rt.streak = map[string]*[2]int{}
	}
	st := rt.streak[n.ID]
	if st == nil {
		st = &[2]int{}
		rt.streak[n.ID] = st
	}
	cpu := math.Min(1, (n.Write.LastActive+n.Search.LastActive)/float64(n.Write.Threads))
	heap := float64(n.HeapUsed()) / float64(max(n.HeapBytes, 1))
	over := [2]bool{cpu > s.wlmFloat(api, "node.cpu_cancellation_threshold"), heap >= s.wlmFloat(api, "node.memory_cancellation_threshold")}
	streak := int(s.wlmFloat(api, "duress_streak"))
	duress := false
	for i := range st {
		if over[i] {
			st[i]++
		} else {
			st[i] = 0
		}
		duress = duress || st[i] >= streak
	}
	return duress
}

// wlmTick runs the plugin over [t, t+dt): rejections of the tick's arrivals (pending, in arrival
// order per tenant) and cancellations of running shard-level tasks, at the enforcement interval.
func (s *Plugins) wlmTick(api string, t, dt float64, pending []*tenantQuery) {
	mode := s.SettingOr("wlm."+api+".mode", wlmSettingDefaults["mode"])
	interval := s.wlmFloat(api, "enforcement_interval") / 1000
	steps := max(1, int(math.Ceil(dt/interval-1e-9)))
	slices.SortStableFunc(pending, func(a, b *tenantQuery) int { return cmp.Compare(a.arrival, b.arrival) })
	s.WLM.Rt.tickStart = t
	next := 0
	duress := map[*model.Node]bool{}
	for k := range steps {
		x := t + float64(k)*interval
		end := min(t+dt, x+interval)
		s.wlmRun(api, mode, x, duress)
		for ; next < len(pending) && pending[next].arrival < end; next++ {
			s.wlmAdmit(api, mode, pending[next], duress)
		}
	}
	for ; next < len(pending); next++ {
		s.wlmAdmit(api, mode, pending[next], duress)
	}
}

// overRejection names the first resource whose last recorded usage of group g on n is over
// limit × the rejection threshold, or "".
func (s *Plugins) overRejection(api string, g *WlmGroup, n *model.Node) (int, bool) {
	st := s.GroupStats(n, g.ID)
	for i, r := range WlmResources {
		limit, ok := g.Limits[r]
		if !ok {
			continue
		}
		if limit*s.wlmFloat(api, "node."+r+"_rejection_threshold") < st.Res[i].Usage {
			return i, true
		}
	}
	return 0, false
}

// wlmAdmit is rejectIfNeeded for one arrival: on its coordinating node, then on each shard
// task's node. A rejection on the coordinating node rejects the search; one on a shard's node
// fails that shard.
func (s *Plugins) wlmAdmit(api, mode string, q *tenantQuery, duress map[*model.Node]bool) {
	g := s.WLM.groupByID(q.group)
	if mode != "enabled" || g == nil {
		return
	}
	reject := func(n *model.Node) bool {
		if g.Mode == "soft" && !duress[n] {
			return false
		}
		i, over := s.overRejection(api, g, n)
		if !over {
			return false
		}
		st := s.GroupStats(n, g.ID)
		st.Res[i].Rejections++
		st.Rejections++
		return true
	}
	if reject(q.coord) {
		q.rejected = true
		for _, c := range q.shards {
			c.Cancelled, c.cancelAt = true, q.arrival
		}
		return
	}
	for _, c := range q.shards {
		if reject(c.n) {
			c.Cancelled, c.cancelAt = true, q.arrival
			q.rejected = true
		}
	}
}

// wlmRun is one run of the plugin on every present node at scenario second x.
func (s *Plugins) wlmRun(api, mode string, x float64, duress map[*model.Node]bool) {
	views := map[*model.Node]map[string][]wlmTask{}
	for _, tn := range s.tenants {
		for _, q := range slices.Concat(tn.live, tn.pending) {
			if q.group == "" || q.arrival > x {
				continue
			}
			for _, c := range q.shards {
				if c.Cancelled || !c.n.Present || c.end() <= x {
					continue
				}
				if views[c.n] == nil {
					views[c.n] = map[string][]wlmTask{}
				}
				views[c.n][q.group] = append(views[c.n][q.group], wlmTask{c: c, usage: taskUsage(c, c.n, x)})
			}
		}
	}
	for _, n := range s.PresentNodes() {
		duress[n] = s.nodeDuress(api, n)
		view := views[n]
		usage := map[string][2]float64{}
		for id, tasks := range view {
			var u [2]float64
			for _, tk := range tasks {
				u[0] += tk.usage[0]
				u[1] += tk.usage[1]
			}
			usage[id] = u
		}
		// Enforced groups always; soft groups only while the node is in duress.
		for _, pass := range []string{"enforced", "soft"} {
			if pass == "soft" && !duress[n] {
				break
			}
			for _, g := range s.WLM.Groups {
				if g.Mode == pass {
					s.cancelOver(api, mode, n, g, view[g.ID], usage[g.ID], x)
				}
			}
		}
		for _, g := range s.WLM.Groups {
			st := s.GroupStats(n, g.ID)
			for i := range WlmResources {
				st.Res[i].Usage = usage[g.ID][i]
			}
		}
	}
}

// cancelOver selects and cancels group g's tasks on node n over its limits: per resource, the
// excess over limit × cancellation threshold less what the tasks already selected use, covered by
// the highest users of that resource first.
func (s *Plugins) cancelOver(api, mode string, n *model.Node, g *WlmGroup, tasks []wlmTask, usage [2]float64, x float64) {
	var selected []wlmTask
	var reasons []int
	for i, r := range WlmResources {
		limit, ok := g.Limits[r]
		if !ok || len(tasks) == 0 {
			continue
		}
		excess := usage[i] - limit*s.wlmFloat(api, "node."+r+"_cancellation_threshold")
		for _, tk := range selected {
			excess -= tk.usage[i]
		}
		if excess <= 1e-9 {
			continue
		}
		reasons = append(reasons, i)
		order := slices.Clone(tasks)
		slices.SortStableFunc(order, func(a, b wlmTask) int { return cmp.Compare(b.usage[i], a.usage[i]) })
		acc := 0.0
		for _, tk := range order {
			if !slices.ContainsFunc(selected, func(y wlmTask) bool { return y.c == tk.c }) {
				selected = append(selected, tk)
			}
			acc += tk.usage[i]
			if acc-excess > 1e-9 {
				break
			}
		}
	}
	if len(selected) == 0 {
		return
	}
	if mode != "enabled" {
		s.WLM.Rt.WouldCancel += int64(len(selected))
		return
	}
	st := s.GroupStats(n, g.ID)
	for _, tk := range selected {
		s.stopShardTask(tk.c, x)
		tk.c.q.tn.cancelled++
		tk.c.q.countCancelled()
		st.Cancellations++
		for _, i := range reasons {
			st.Res[i].Cancellations++
		}
	}
}

// stopShardTask cancels a tenant's shard-level task at scenario second x within the current
// tick: it stops offering work at x, and what it offered before the tick and was not served
// leaves its pool's backlog (this tick's offer is counted up to x when the loads are added).
func (s *Plugins) stopShardTask(c *tenantShardTask, x float64) {
	if c.Cancelled || c.end() <= x {
		return
	}
	before := min(x, s.WLM.Rt.tickStart)
	unserved := c.offered(before) - c.served(before)
	c.Cancelled, c.cancelAt = true, x
	if c.n.Present && unserved > 0 {
		p := &c.n.Search
		p.Backlog = math.Max(0, p.Backlog-unserved/p.TaskSeconds)
	}
}

// wlmComplete counts a search that ended uncancelled: its coordinating task and each shard-level
// task complete in its group on their nodes.
func (s *Plugins) wlmComplete(q *tenantQuery) {
	if q.group == "" || s.WLM.groupByID(q.group) == nil {
		return
	}
	s.GroupStats(q.coord, q.group).Completions++
	for _, c := range q.shards {
		s.GroupStats(c.n, q.group).Completions++
	}
}

// Breached is resourceLimitBreached: a limit's rejection level under the last recorded usage.
func (s *Plugins) Breached(api string, n *model.Node, id string) bool {
	g := s.WLM.groupByID(id)
	if g == nil {
		return false
	}
	_, over := s.overRejection(api, g, n)
	return over
}
