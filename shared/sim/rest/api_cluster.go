package rest

import (
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/shardwise/shardwise/shared/sim/alloc"
	"github.com/shardwise/shardwise/shared/sim/model"
	"github.com/shardwise/shardwise/shared/sim/settings"
	"github.com/shardwise/shardwise/shared/sim/wire"
)

func (s *Server) handleInfo(*wire.Request) (wire.Reply, *wire.APIError) {
	m := s.ClusterManager()
	name := ""
	if m != nil {
		name = m.Name
	}
	return wire.JSONReply(wire.Object{
		{"name", name},
		{"cluster_name", model.ClusterName},
		{"cluster_uuid", s.ClusterUUID},
		{"version", wire.Object{
			{"distribution", "opensearch"},
			{"number", s.OsVersion()},
			{"build_type", "tar"},
			{"build_hash", model.VersionBuildHash},
			{"build_date", model.VersionBuildDate},
			{"build_snapshot", false},
			{"lucene_version", model.VersionLucene},
			{"minimum_wire_compatibility_version", model.VersionMinWire},
			{"minimum_index_compatibility_version", model.VersionMinIndex},
		}},
		{"tagline", "The OpenSearch Project: https://opensearch.org/"},
	}), nil
}

// handleHealth is GET _cluster/health[/{index}] with level and the wait_for_* checks answered at once:
// the simulator does not advance while a request waits, so an unmet condition is a timeout (408).
func (s *Server) handleHealth(rq *wire.Request) (wire.Reply, *wire.APIError) {
	indices := s.Indices
	if len(rq.Segs) == 3 {
		var err *wire.APIError
		if indices, err = s.ResolveIndices(rq.Segs[2], false); err != nil {
			return wire.Reply{}, err
		}
	}
	level := rq.Param("level")
	status := "green"
	var activePrimaries, active, relocating, initializing, unassigned, delayed, total int
	var perIndex wire.Object
	now := s.NowLocked()
	for _, ix := range indices {
		ih, r, i, u := model.IndexHealth(ix)
		status = model.WorseHealth(status, ih)
		relocating, initializing, unassigned = relocating+r, initializing+i, unassigned+u
		var ap, ac int
		var perShard wire.Object
		for _, sh := range ix.Shards {
			sa, sr, si, su := 0, 0, 0, 0
			primaryActive := false
			for _, c := range sh.Copies {
				total++
				switch c.State {
				case model.StateStarted, model.StateRelocating:
					sa++
					if c.State == model.StateRelocating {
						sr++
					}
					if c.Primary {
						primaryActive = true
					}
				case model.StateInitializing:
					si++
				case model.StateUnassigned:
					su++
					if now.Before(c.DelayedUntil) {
						delayed++
					}
				}
			}
			if primaryActive {
				ap++
			}
			ac += sa
			if level == "shards" {
				perShard = append(perShard, wire.Field{strconv.Itoa(sh.Num), wire.Object{
					{"status", model.ShardHealth(sh)}, {"primary_active", primaryActive}, {"active_shards", sa},
					{"relocating_shards", sr}, {"initializing_shards", si}, {"unassigned_shards", su},
				}})
			}
		}
		activePrimaries += ap
		active += ac
		if level == "indices" || level == "shards" {
			io := wire.Object{
				{"status", ih}, {"number_of_shards", len(ix.Shards)}, {"number_of_replicas", ix.Replicas},
				{"active_primary_shards", ap}, {"active_shards", ac}, {"relocating_shards", r},
				{"initializing_shards", i}, {"unassigned_shards", u},
			}
			if level == "shards" {
				io = append(io, wire.Field{"shards", perShard})
			}
			perIndex = append(perIndex, wire.Field{ix.Name, io})
		}
	}
	pct := 100.0
	if total > 0 {
		pct = 100 * float64(active) / float64(total)
	}
	nodes := len(s.PresentNodes())
	timedOut := false
	if want := rq.Param("wait_for_status"); want != "" && model.WorseHealth(status, strings.ToLower(want)) != strings.ToLower(want) {
		timedOut = true
	}
	if rq.Flag("wait_for_no_relocating_shards") && relocating > 0 {
		timedOut = true
	}
	if rq.Flag("wait_for_no_initializing_shards") && initializing > 0 {
		timedOut = true
	}
	body := wire.Object{
		{"cluster_name", model.ClusterName}, {"status", status}, {"timed_out", timedOut},
		{"number_of_nodes", nodes}, {"number_of_data_nodes", nodes},
		{"discovered_master", nodes > 0}, {"discovered_cluster_manager", nodes > 0},
		{"active_primary_shards", activePrimaries}, {"active_shards", active},
		{"relocating_shards", relocating}, {"initializing_shards", initializing},
		{"unassigned_shards", unassigned}, {"delayed_unassigned_shards", delayed},
		{"number_of_pending_tasks", 0}, {"number_of_in_flight_fetch", 0},
		{"task_max_waiting_in_queue_millis", 0}, {"active_shards_percent_as_number", pct},
	}
	if perIndex != nil || level == "indices" || level == "shards" {
		body = append(body, wire.Field{"indices", perIndex})
	}
	rep := wire.JSONReply(body)
	if timedOut {
		rep.Status = http.StatusRequestTimeout
	}
	return rep, nil
}

// stateMetrics are the metrics of GET _cluster/state/{metrics}.
var stateMetrics = []string{"version", "master_node", "cluster_manager_node", "blocks", "nodes", "metadata", "routing_table", "routing_nodes", "customs"}

// stateMetricSet reads a comma list of cluster state metrics, where "_all" is every one and, when
// noneOK (a reroute's metric parameter), "none" adds none.
func stateMetricSet(rq *wire.Request, list string, noneOK bool) (map[string]bool, *wire.APIError) {
	metrics := map[string]bool{}
	for m := range strings.SplitSeq(list, ",") {
		switch {
		case m == "_all":
			for _, x := range stateMetrics {
				metrics[x] = true
			}
		case m == "none" && noneOK:
		case slices.Contains(stateMetrics, m):
			metrics[m] = true
		default:
			return nil, wire.IllegalArgument(fmt.Sprintf("request [%s] contains unrecognized metric: [%s]", rq.R.URL.Path, m))
		}
	}
	return metrics, nil
}

func (s *Server) handleState(rq *wire.Request) (wire.Reply, *wire.APIError) {
	list := "_all"
	if len(rq.Segs) >= 3 {
		list = rq.Segs[2]
	}
	metrics, err := stateMetricSet(rq, list, false)
	if err != nil {
		return wire.Reply{}, err
	}
	indices := s.Indices
	if len(rq.Segs) == 4 {
		if indices, err = s.ResolveIndices(rq.Segs[3], rq.Flag("ignore_unavailable")); err != nil {
			return wire.Reply{}, err
		}
	}
	return wire.JSONReply(s.clusterState(metrics, indices, rq.Flag("flat_settings"), &routingShapes{})), nil
}

// clusterState renders the cluster state with the chosen metrics, as ClusterState.toXContent. With
// shapes, the routing table's entries are filled when written, which must then happen under the
// lock the state is rendered under; without, the state is rendered whole now.
func (s *Server) clusterState(metrics map[string]bool, indices []*model.Index, flat bool, shapes *routingShapes) wire.Object {
	lazy := shapes != nil
	o := wire.Object{{"cluster_name", model.ClusterName}, {"cluster_uuid", s.ClusterUUID}}
	if metrics["version"] {
		o = append(o, wire.Field{"version", s.StateVersion}, wire.Field{"state_uuid", model.MakeID(s.Spec.Seed, fmt.Sprintf("state/%d", s.StateVersion))})
	}
	managerID := ""
	if m := s.ClusterManager(); m != nil {
		managerID = m.ID
	}
	if metrics["master_node"] {
		o = append(o, wire.Field{"master_node", managerID})
	}
	if metrics["cluster_manager_node"] {
		o = append(o, wire.Field{"cluster_manager_node", managerID})
	}
	if metrics["blocks"] {
		o = append(o, wire.Field{"blocks", wire.Object{}})
	}
	if metrics["nodes"] {
		nodes := wire.Object{}
		for _, n := range s.PresentNodes() {
			nodes = append(nodes, wire.Field{n.ID, wire.Object{
				{"name", n.Name}, {"ephemeral_id", n.EphemeralID}, {"transport_address", n.Address()},
				{"attributes", stringMap(n.Attrs())}, {"roles", []string{"data", "ingest"}},
			}})
		}
		o = append(o, wire.Field{"nodes", nodes})
	}
	if metrics["metadata"] {
		ids := make([]string, 0)
		if m := s.ClusterManager(); m != nil {
			ids = append(ids, m.ID)
		}
		mi := make(wire.Object, 0, len(indices))
		for _, ix := range indices {
			mi = append(mi, wire.Field{ix.Name, wire.Object{
				{"version", 1 + ix.SettingsVersion}, {"mapping_version", 1}, {"settings_version", 1 + ix.SettingsVersion},
				{"aliases_version", 1}, {"routing_num_shards", routingNumShards(len(ix.Shards))}, {"state", "open"},
				{"settings", s.renderedSettings(ix, flat)},
				{"mappings", wire.Object{}}, {"aliases", []any{}}, {"primary_terms", indexTerms(ix, lazy)},
				{"in_sync_allocations", inSync(ix, lazy)}, {"rollover_info", wire.Object{}}, {"system", false},
			}})
		}
		o = append(o, wire.Field{"metadata", wire.Object{
			{"cluster_uuid", s.ClusterUUID}, {"cluster_uuid_committed", true},
			{"cluster_coordination", wire.Object{
				{"term", 1}, {"last_committed_config", ids}, {"last_accepted_config", ids}, {"voting_config_exclusions", []any{}},
			}},
			{"templates", wire.Object{}}, {"indices", mi}, {"index-graveyard", wire.Object{{"tombstones", []any{}}}},
		}})
	}
	if metrics["routing_table"] {
		rt := wire.Object{}
		for _, ix := range indices {
			shards := wire.Object{}
			for _, sh := range ix.Shards {
				entries := make([]any, 0, len(sh.Copies))
				for _, c := range sh.Copies {
					if shapes != nil {
						entries = append(entries, shapes.entry(s, c, false))
					} else {
						entries = append(entries, s.routingEntry(c, false))
					}
				}
				shards = append(shards, wire.Field{strconv.Itoa(sh.Num), entries})
			}
			rt = append(rt, wire.Field{ix.Name, wire.Object{{"shards", shards}}})
		}
		o = append(o, wire.Field{"routing_table", wire.Object{{"indices", rt}}})
	}
	if metrics["routing_nodes"] {
		unassigned := []any{}
		byNode := map[*model.Node][]any{}
		for _, ix := range indices {
			for _, sh := range ix.Shards {
				for _, c := range sh.Copies {
					switch c.Node {
					case nil:
						unassigned = append(unassigned, s.routingEntry(c, false))
					default:
						byNode[c.Node] = append(byNode[c.Node], s.routingEntry(c, false))
						if c.Target != nil {
							byNode[c.Target] = append(byNode[c.Target], s.routingEntry(c, true))
						}
					}
				}
			}
		}
		nodes := wire.Object{}
		for _, n := range s.PresentNodes() {
			nodes = append(nodes, wire.Field{n.ID, append([]any{}, byNode[n]...)})
		}
		o = append(o, wire.Field{"routing_nodes", wire.Object{{"unassigned", unassigned}, {"nodes", nodes}}})
	}
	return o
}

// indexTerms is an index's primary_terms: built when written if lazy (a client reading a few
// settings of 4,000 indices leaves them out), else now.
func indexTerms(ix *model.Index, lazy bool) any {
	build := func() wire.Object {
		terms := make(wire.Object, 0, len(ix.Shards))
		for _, sh := range ix.Shards {
			terms = append(terms, wire.Field{strconv.Itoa(sh.Num), sh.Term})
		}
		return terms
	}
	if lazy {
		return wire.LazyObject(build)
	}
	return build()
}

// inSync is an index's in_sync_allocations, built when written if lazy, else now.
func inSync(ix *model.Index, lazy bool) any {
	build := func() wire.Object {
		insync := make(wire.Object, 0, len(ix.Shards))
		for _, sh := range ix.Shards {
			var ids []string
			for _, c := range sh.Copies {
				if c.Active() {
					ids = append(ids, c.AllocID)
				}
			}
			insync = append(insync, wire.Field{strconv.Itoa(sh.Num), ids})
		}
		return insync
	}
	if lazy {
		return wire.LazyObject(build)
	}
	return build()
}

// routingNumShards is IndexMetadata's default routing_num_shards: shards × 2^k up to 1024.
func routingNumShards(shards int) int {
	n := shards
	for n*2 <= 1024 {
		n *= 2
	}
	return n
}

func stringMap(m map[string]string) wire.Object {
	o := wire.Object{}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		o = append(o, wire.Field{k, m[k]})
	}
	return o
}

// routingEntry is ShardRouting.toXContent; target selects the relocation target's INITIALIZING entry.
func (s *Server) routingEntry(c *model.ShardCopy, target bool) wire.Object {
	var v [routingSlots]wire.Scalar
	s.routingFill(c, target, v[:])
	return routingTree(c, target, func(i int) any { return v[i].Tree() })
}

// routingSlots is how many values a routing entry has (routingFill).
const routingSlots = 14

// routingTree lays out a routing entry of c with the values val gives for each slot of routingFill.
// Its keys depend on c's state, on whether it has a node and a relocation target, and on target:
// routingVariant.
func routingTree(c *model.ShardCopy, target bool, val func(slot int) any) wire.Object {
	var alloc wire.Object
	switch {
	case target:
		alloc = wire.Object{{"id", val(8)}, {"relocation_id", val(9)}}
	case c.Node != nil:
		alloc = wire.Object{{"id", val(8)}}
		if c.Target != nil {
			alloc = append(alloc, wire.Field{"relocation_id", val(9)})
		}
	}
	o := wire.Object{
		{"state", val(0)}, {"primary", val(1)}, {"node", val(2)}, {"relocating_node", val(3)},
		{"shard", val(4)}, {"index", val(5)},
	}
	if c.State == model.StateInitializing || c.State == model.StateRelocating || target {
		o = append(o, wire.Field{"expected_shard_size_in_bytes", val(6)})
	}
	if c.State == model.StateInitializing || target {
		o = append(o, wire.Field{"recovery_source", wire.Object{{"type", val(7)}}})
	}
	if len(alloc) > 0 {
		o = append(o, wire.Field{"allocation_id", alloc})
	}
	if c.State == model.StateUnassigned {
		o = append(o, wire.Field{"recovery_source", wire.Object{{"type", "PEER"}}})
		o = append(o, wire.Field{"unassigned_info", wire.Object{
			{"reason", val(10)}, {"at", val(11)}, {"delayed", val(12)}, {"allocation_status", val(13)},
		}})
	}
	return o
}

// routingFill sets a routing entry's values: state, primary, node, relocating node, shard, index,
// expected size, recovery source, allocation id, relocation id, and for an unassigned copy its
// reason, time, whether it is delayed, and allocation status (unassignedInfo).
func (s *Server) routingFill(c *model.ShardCopy, target bool, v []wire.Scalar) {
	state := c.State.String()
	var nodeID, relocating wire.Scalar
	switch {
	case target:
		nodeID, relocating, state = wire.Str(c.Target.ID), wire.Str(c.Node.ID), model.StateInitializing.String()
		v[8], v[9] = wire.Str(c.TargetAllocID), wire.Str(c.AllocID)
	case c.Node != nil:
		nodeID = wire.Str(c.Node.ID)
		v[8] = wire.Str(c.AllocID)
		if c.Target != nil {
			relocating = wire.Str(c.Target.ID)
			v[9] = wire.Str(c.TargetAllocID)
		}
	}
	v[0], v[1], v[2], v[3] = wire.Str(state), wire.Bool(c.Primary), nodeID, relocating
	v[4], v[5], v[6] = wire.Int(int64(c.Sh.Num)), wire.Str(c.Sh.Idx.Name), wire.Int(c.Sh.Idx.ShardBytes)
	src := "PEER"
	if c.Primary && !target {
		src = "EMPTY_STORE"
	}
	v[7] = wire.Str(src)
	if c.State == model.StateUnassigned {
		status := "no_attempt"
		if c.LostData {
			status = "no_valid_shard_copy"
		}
		v[10], v[11] = wire.Str(c.UnassignedReason), wire.Str(c.UnassignedAt.UTC().Format("2006-01-02T15:04:05.000Z"))
		v[12], v[13] = wire.Bool(s.NowLocked().Before(c.DelayedUntil)), wire.Str(status)
	}
}

// routingShapes are the shapes of routing entries met in one answer, by routingVariant.
type routingShapes [32]*wire.Shape

// routingVariant numbers what routingTree's keys depend on.
func routingVariant(c *model.ShardCopy, target bool) int {
	v := int(c.State) << 3
	if target {
		v |= 4
	}
	if c.Node != nil {
		v |= 2
	}
	if c.Target != nil {
		v |= 1
	}
	return v
}

// entry is c's routing entry as a Shaped, filled when written (under the handler's lock).
func (rs *routingShapes) entry(s *Server, c *model.ShardCopy, target bool) wire.Shaped {
	k := routingVariant(c, target)
	if rs[k] == nil {
		rs[k] = wire.NewShape(routingSlots, routingTree(c, target, func(i int) any { return wire.Slot(i) }))
	}
	return wire.Shaped{Shape: rs[k], Fill: func(v []wire.Scalar) { s.routingFill(c, target, v) }}
}

func (s *Server) unassignedInfo(c *model.ShardCopy) wire.Object {
	status := "no_attempt"
	if c.LostData {
		status = "no_valid_shard_copy"
	}
	return wire.Object{
		{"reason", c.UnassignedReason}, {"at", c.UnassignedAt.UTC().Format("2006-01-02T15:04:05.000Z")},
		{"delayed", s.NowLocked().Before(c.DelayedUntil)}, {"allocation_status", status},
	}
}

// handleGetClusterSettings is GET _cluster/settings: persistent, transient, and with include_defaults
// the defaults the scenario implies (the disk high watermark among them).
func (s *Server) handleGetClusterSettings(rq *wire.Request) (wire.Reply, *wire.APIError) {
	flat := rq.Flag("flat_settings")
	o := wire.Object{{"persistent", settings.RenderSettings(s.Persistent, flat)}, {"transient", settings.RenderSettings(s.Transient, flat)}}
	if rq.Flag("include_defaults") {
		d := map[string]string{}
		for k, v := range s.Defaults {
			if _, ok := s.Persistent[k]; ok {
				continue
			}
			if _, ok := s.Transient[k]; ok {
				continue
			}
			d[k] = v
		}
		defaults := settings.RenderSettings(d, flat)
		for _, k := range settings.ListSettings {
			settings.AsList(defaults, k, flat)
		}
		o = append(o, wire.Field{"defaults", defaults})
	}
	return wire.JSONReply(o), nil
}

// handlePutClusterSettings is PUT _cluster/settings. Every setting is validated before any applies.
func (s *Server) handlePutClusterSettings(rq *wire.Request) (wire.Reply, *wire.APIError) {
	body, err := wire.DecodeBody(rq.Body)
	if err != nil {
		return wire.Reply{}, err
	}
	updates := map[string]map[string]*string{}
	for scope, v := range body {
		if scope != "persistent" && scope != "transient" {
			return wire.Reply{}, wire.ParseError("x_content_parse_exception", fmt.Sprintf("[1:2] [cluster_update_settings_request] unknown field [%s]", scope))
		}
		m, ok := v.(map[string]any)
		if !ok {
			return wire.Reply{}, wire.ParseError("x_content_parse_exception", fmt.Sprintf("[cluster_update_settings_request] failed to parse field [%s]", scope))
		}
		flat := map[string]*string{}
		if e := settings.FlattenSettings("", m, flat); e != nil {
			return wire.Reply{}, wire.IllegalArgument(e.Error())
		}
		for k, val := range flat {
			if val == nil {
				continue
			}
			if e := s.Plugins.ValidateSetting(scope, k, *val); e != nil {
				return wire.Reply{}, wire.IllegalArgument(e.Error())
			}
		}
		updates[scope] = flat
	}
	if e := s.Plugins.CheckWLMThresholds(updates); e != nil {
		return wire.Reply{}, wire.IllegalArgument(e.Error())
	}
	ack := wire.Object{{"acknowledged", true}}
	for _, scope := range []string{"persistent", "transient"} {
		store := s.Persistent
		if scope == "transient" {
			store = s.Transient
		}
		applied := map[string]string{}
		for k, v := range updates[scope] {
			if v == nil {
				delete(store, k)
				continue
			}
			store[k], applied[k] = *v, *v
		}
		ack = append(ack, wire.Field{scope, settings.RenderSettings(applied, rq.Flag("flat_settings"))})
	}
	s.Cfg = nil
	s.Changed()
	return wire.JSONReply(ack), nil
}

// rerouteMetrics are what POST _cluster/reroute answers with by default: all but metadata.
var rerouteMetrics = []string{"version", "master_node", "cluster_manager_node", "blocks", "nodes", "routing_table", "routing_nodes"}

func (s *Server) handleReroute(rq *wire.Request) (wire.Reply, *wire.APIError) {
	cmds, err := alloc.ParseRerouteBody(rq.Body)
	if err != nil {
		return wire.Reply{}, err
	}
	list := rq.Param("metric")
	if list == "" {
		list = strings.Join(rerouteMetrics, ",")
	}
	metrics, err := stateMetricSet(rq, list, true)
	if err != nil {
		return wire.Reply{}, err
	}
	var state wire.Object
	out, err := s.Alloc.Reroute(cmds, rq.Flag("dry_run"), rq.Flag("explain"), func() {
		state = s.clusterState(metrics, s.Indices, false, nil)
	})
	if err != nil {
		return wire.Reply{}, err
	}
	o := wire.Object{{"acknowledged", true}, {"state", state}}
	if rq.Flag("explain") {
		o = append(o, wire.Field{"explanations", append([]any{}, out.Explanations...)})
	}
	return wire.JSONReply(o), nil
}

// handleAllocationExplain is GET/POST _cluster/allocation/explain.
func (s *Server) handleAllocationExplain(rq *wire.Request) (wire.Reply, *wire.APIError) {
	body, err := wire.DecodeBody(rq.Body)
	if err != nil {
		return wire.Reply{}, err
	}
	includeYes := rq.Flag("include_yes_decisions")
	var c *model.ShardCopy
	if len(body) == 0 {
		for _, ix := range s.Indices {
			for _, sh := range ix.Shards {
				for _, x := range sh.Copies {
					if c == nil && x.State == model.StateUnassigned {
						c = x
					}
				}
			}
		}
		if c == nil {
			return wire.Reply{}, wire.IllegalArgument(fmt.Sprintf("unable to find any unassigned shards to explain "+
				"[ClusterAllocationExplainRequest[useAnyUnassignedShard=true,include_yes_decisions?=%t]", includeYes))
		}
	} else {
		name, _ := body["index"].(string)
		shardNum, ok := jsonInt(body["shard"])
		primary, pok := body["primary"].(bool)
		if name == "" || !ok || !pok {
			return wire.Reply{}, wire.IllegalArgument("index, shard, and primary must be specified in allocation explain request")
		}
		ix, found := s.ByIndex[name]
		if !found {
			return wire.Reply{}, wire.IndexNotFound(name)
		}
		if shardNum < 0 || shardNum >= len(ix.Shards) {
			return wire.Reply{}, wire.IllegalArgument(fmt.Sprintf("No shard was specified in the request which means the request is for any unassigned shard, "+
				"but shard [%d] does not exist in index [%s]", shardNum, name))
		}
		sh := ix.Shards[shardNum]
		current, _ := body["current_node"].(string)
		var cn *model.Node
		if current != "" {
			var e *wire.APIError
			if cn, e = s.Alloc.ResolveNode(current); e != nil {
				return wire.Reply{}, e
			}
		}
		for _, x := range sh.Copies {
			if x.Primary != primary || (cn != nil && x.Node != cn) {
				continue
			}
			if c == nil || (x.State == model.StateUnassigned && c.State != model.StateUnassigned && cn == nil) {
				c = x
			}
		}
		if c == nil {
			return wire.Reply{}, wire.IllegalArgument(fmt.Sprintf("unable to find a shard assigned to node [%s] for [%s][%d]", current, name, shardNum))
		}
	}
	return wire.JSONReply(s.explainCopy(c, includeYes)), nil
}

func jsonInt(v any) (int, bool) {
	switch t := v.(type) {
	case interface{ Int64() (int64, error) }:
		n, err := t.Int64()
		return int(n), err == nil
	case float64:
		return int(t), t == float64(int(t))
	}
	return 0, false
}

// explainCopy renders ClusterAllocationExplanation for one copy.
func (s *Server) explainCopy(c *model.ShardCopy, includeYes bool) wire.Object {
	sh := c.Sh
	ix := sh.Idx
	s.Refresh() // the caller holds the write lock
	b := s.Alloc.NewBalance()
	ranking := map[*model.Node]int{}
	ranked := slices.Clone(b.Nodes)
	slices.SortStableFunc(ranked, func(x, y *model.Node) int {
		wx, wy := b.Weight(x, ix), b.Weight(y, ix)
		switch {
		case wx < wy:
			return -1
		case wx > wy:
			return 1
		}
		return 0
	})
	for i, n := range ranked {
		ranking[n] = i + 1
	}
	deciders := func(v alloc.Verdict) []any {
		out := []any{}
		for _, d := range v.Decisions {
			if includeYes || d.Typ != alloc.DecYes {
				out = append(out, wire.Object{{"decider", d.Decider}, {"decision", d.Typ.String()}, {"explanation", d.Explanation}})
			}
		}
		return out
	}
	o := wire.Object{{"index", ix.Name}, {"shard", sh.Num}, {"primary", c.Primary}, {"current_state", strings.ToLower(c.State.String())}}
	var nodeDecisions []any
	anyYes, anyThrottle := false, false
	for _, n := range ranked {
		if n == c.Node {
			continue
		}
		v := s.Alloc.CanAllocate(sh, c, n, true, false)
		nd := map[alloc.DecisionType]string{alloc.DecYes: "yes", alloc.DecThrottle: "throttled", alloc.DecNo: "no"}[v.Typ]
		if c.Node != nil && v.Typ == alloc.DecYes && s.Alloc.CanRemain(c, false).Typ == alloc.DecYes {
			// A started copy only moves where the balance improves, as the rebalancer judges it.
			if b.Weight(c.Node, ix)-b.Weight(n, ix) <= b.Cfg.Threshold+0.001 {
				nd = "worse_balance"
			}
		}
		anyYes = anyYes || nd == "yes"
		anyThrottle = anyThrottle || nd == "throttled"
		nodeDecisions = append(nodeDecisions, wire.Object{
			{"node_id", n.ID}, {"node_name", n.Name}, {"transport_address", n.Address()},
			{"node_attributes", stringMap(n.Attrs())}, {"node_decision", nd}, {"weight_ranking", ranking[n]},
			{"deciders", deciders(v)},
		})
	}
	if c.Node == nil {
		o = append(o, wire.Field{"unassigned_info", s.unassignedInfo(c)})
		canAllocate, why := "no", "cannot allocate because allocation is not permitted to any of the nodes"
		switch {
		case c.LostData:
			canAllocate, why = "no_valid_shard_copy", "cannot allocate because a previous copy of the primary shard existed but can no longer be found on the nodes in the cluster"
		case s.NowLocked().Before(c.DelayedUntil) && anyYes:
			canAllocate = "allocation_delayed"
			why = fmt.Sprintf("cannot allocate because the cluster is still waiting %s for the departed node holding a replica to rejoin, "+
				"despite being allowed to allocate the shard to at least one other node", c.DelayedUntil.Sub(s.NowLocked()).Round(time.Millisecond))
		case anyYes:
			canAllocate, why = "yes", "can allocate the shard"
		case anyThrottle:
			canAllocate, why = "throttled", "allocation temporarily throttled"
		}
		o = append(o, wire.Field{"can_allocate", canAllocate}, wire.Field{"allocate_explanation", why})
		return append(o, wire.Field{"node_allocation_decisions", append([]any{}, nodeDecisions...)})
	}
	o = append(o, wire.Field{"current_node", wire.Object{
		{"id", c.Node.ID}, {"name", c.Node.Name}, {"transport_address", c.Node.Address()},
		{"attributes", stringMap(c.Node.Attrs())}, {"weight_ranking", ranking[c.Node]},
	}})
	remain := s.Alloc.CanRemain(c, true)
	if remain.Typ == alloc.DecNo {
		move, why := "no", "cannot move shard to another node, even though it is not allowed to remain on its current node"
		switch {
		case anyYes:
			move, why = "yes", "shard cannot remain on this node and is force-moved to another node"
		case anyThrottle:
			move, why = "throttled", "shard cannot remain on this node but is throttled on moving to another node"
		}
		o = append(o, wire.Field{"can_remain_on_current_node", "no"}, wire.Field{"can_remain_decisions", deciders(remain)},
			wire.Field{"can_move_to_other_node", move}, wire.Field{"move_explanation", why})
		return append(o, wire.Field{"node_allocation_decisions", append([]any{}, nodeDecisions...)})
	}
	o = append(o, wire.Field{"can_remain_on_current_node", "yes"})
	if includeYes {
		o = append(o, wire.Field{"can_remain_decisions", deciders(remain)})
	}
	rb := s.Alloc.CanRebalance(true)
	rbName := map[alloc.DecisionType]string{alloc.DecYes: "yes", alloc.DecThrottle: "throttled", alloc.DecNo: "no"}[rb.Typ]
	o = append(o, wire.Field{"can_rebalance_cluster", rbName})
	if rb.Typ != alloc.DecYes || includeYes {
		o = append(o, wire.Field{"can_rebalance_cluster_decisions", deciders(rb)})
	}
	toOther, why := "no", "cannot rebalance as no target node exists that can both allocate this shard and improve the cluster balance"
	switch {
	case rb.Typ == alloc.DecNo:
		why = "rebalancing is not allowed"
		if anyYes {
			why += ", even though there is at least one node on which the shard can be allocated"
		}
	case rb.Typ == alloc.DecThrottle:
		toOther, why = "throttled", "rebalancing is throttled"
	case anyYes:
		toOther, why = "yes", "can rebalance shard"
	case anyThrottle:
		toOther, why = "throttled", "shard rebalancing throttled"
	}
	o = append(o, wire.Field{"can_rebalance_to_other_node", toOther}, wire.Field{"rebalance_explanation", why})
	return append(o, wire.Field{"node_allocation_decisions", append([]any{}, nodeDecisions...)})
}
