package sim

import (
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

func (s *Sim) handleInfo(*request) (reply, *apiError) {
	m := s.clusterManager()
	name := ""
	if m != nil {
		name = m.name
	}
	return jsonReply(object{
		{"name", name},
		{"cluster_name", clusterName},
		{"cluster_uuid", s.clusterUUID},
		{"version", object{
			{"distribution", "opensearch"},
			{"number", s.osVersion()},
			{"build_type", "tar"},
			{"build_hash", versionBuildHash},
			{"build_date", versionBuildDate},
			{"build_snapshot", false},
			{"lucene_version", versionLucene},
			{"minimum_wire_compatibility_version", versionMinWire},
			{"minimum_index_compatibility_version", versionMinIndex},
		}},
		{"tagline", "The OpenSearch Project: https://opensearch.org/"},
	}), nil
}

// handleHealth is GET _cluster/health[/{index}] with level and the wait_for_* checks answered at once:
// the simulator does not advance while a request waits, so an unmet condition is a timeout (408).
func (s *Sim) handleHealth(rq *request) (reply, *apiError) {
	indices := s.indices
	if len(rq.segs) == 3 {
		var err *apiError
		if indices, err = s.resolveIndices(rq.segs[2], false); err != nil {
			return reply{}, err
		}
	}
	level := rq.param("level")
	status := "green"
	var activePrimaries, active, relocating, initializing, unassigned, delayed, total int
	var perIndex object
	now := s.now()
	for _, ix := range indices {
		ih, r, i, u := indexHealth(ix)
		status = worseHealth(status, ih)
		relocating, initializing, unassigned = relocating+r, initializing+i, unassigned+u
		var ap, ac int
		var perShard object
		for _, sh := range ix.shards {
			sa, sr, si, su := 0, 0, 0, 0
			primaryActive := false
			for _, c := range sh.copies {
				total++
				switch c.state {
				case stateStarted, stateRelocating:
					sa++
					if c.state == stateRelocating {
						sr++
					}
					if c.primary {
						primaryActive = true
					}
				case stateInitializing:
					si++
				case stateUnassigned:
					su++
					if now.Before(c.delayedUntil) {
						delayed++
					}
				}
			}
			if primaryActive {
				ap++
			}
			ac += sa
			if level == "shards" {
				perShard = append(perShard, field{strconv.Itoa(sh.num), object{
					{"status", shardHealth(sh)}, {"primary_active", primaryActive}, {"active_shards", sa},
					{"relocating_shards", sr}, {"initializing_shards", si}, {"unassigned_shards", su},
				}})
			}
		}
		activePrimaries += ap
		active += ac
		if level == "indices" || level == "shards" {
			io := object{
				{"status", ih}, {"number_of_shards", len(ix.shards)}, {"number_of_replicas", ix.replicas},
				{"active_primary_shards", ap}, {"active_shards", ac}, {"relocating_shards", r},
				{"initializing_shards", i}, {"unassigned_shards", u},
			}
			if level == "shards" {
				io = append(io, field{"shards", perShard})
			}
			perIndex = append(perIndex, field{ix.name, io})
		}
	}
	pct := 100.0
	if total > 0 {
		pct = 100 * float64(active) / float64(total)
	}
	nodes := len(s.presentNodes())
	timedOut := false
	if want := rq.param("wait_for_status"); want != "" && worseHealth(status, strings.ToLower(want)) != strings.ToLower(want) {
		timedOut = true
	}
	if rq.flag("wait_for_no_relocating_shards") && relocating > 0 {
		timedOut = true
	}
	if rq.flag("wait_for_no_initializing_shards") && initializing > 0 {
		timedOut = true
	}
	body := object{
		{"cluster_name", clusterName}, {"status", status}, {"timed_out", timedOut},
		{"number_of_nodes", nodes}, {"number_of_data_nodes", nodes},
		{"discovered_master", nodes > 0}, {"discovered_cluster_manager", nodes > 0},
		{"active_primary_shards", activePrimaries}, {"active_shards", active},
		{"relocating_shards", relocating}, {"initializing_shards", initializing},
		{"unassigned_shards", unassigned}, {"delayed_unassigned_shards", delayed},
		{"number_of_pending_tasks", 0}, {"number_of_in_flight_fetch", 0},
		{"task_max_waiting_in_queue_millis", 0}, {"active_shards_percent_as_number", pct},
	}
	if perIndex != nil || level == "indices" || level == "shards" {
		body = append(body, field{"indices", perIndex})
	}
	rep := jsonReply(body)
	if timedOut {
		rep.status = http.StatusRequestTimeout
	}
	return rep, nil
}

// stateMetrics are the metrics of GET _cluster/state/{metrics}.
var stateMetrics = []string{"version", "master_node", "cluster_manager_node", "blocks", "nodes", "metadata", "routing_table", "routing_nodes", "customs"}

// stateMetricSet reads a comma list of cluster state metrics, where "_all" is every one and, when
// noneOK (a reroute's metric parameter), "none" adds none.
func stateMetricSet(rq *request, list string, noneOK bool) (map[string]bool, *apiError) {
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
			return nil, illegalArgument(fmt.Sprintf("request [%s] contains unrecognized metric: [%s]", rq.r.URL.Path, m))
		}
	}
	return metrics, nil
}

func (s *Sim) handleState(rq *request) (reply, *apiError) {
	list := "_all"
	if len(rq.segs) >= 3 {
		list = rq.segs[2]
	}
	metrics, err := stateMetricSet(rq, list, false)
	if err != nil {
		return reply{}, err
	}
	indices := s.indices
	if len(rq.segs) == 4 {
		if indices, err = s.resolveIndices(rq.segs[3], rq.flag("ignore_unavailable")); err != nil {
			return reply{}, err
		}
	}
	return jsonReply(s.clusterState(metrics, indices, rq.flag("flat_settings"))), nil
}

// clusterState renders the cluster state with the chosen metrics, as ClusterState.toXContent.
func (s *Sim) clusterState(metrics map[string]bool, indices []*index, flat bool) object {
	o := object{{"cluster_name", clusterName}, {"cluster_uuid", s.clusterUUID}}
	if metrics["version"] {
		o = append(o, field{"version", s.stateVersion}, field{"state_uuid", makeID(s.sc.Seed, fmt.Sprintf("state/%d", s.stateVersion))})
	}
	managerID := ""
	if m := s.clusterManager(); m != nil {
		managerID = m.id
	}
	if metrics["master_node"] {
		o = append(o, field{"master_node", managerID})
	}
	if metrics["cluster_manager_node"] {
		o = append(o, field{"cluster_manager_node", managerID})
	}
	if metrics["blocks"] {
		o = append(o, field{"blocks", object{}})
	}
	if metrics["nodes"] {
		nodes := object{}
		for _, n := range s.presentNodes() {
			nodes = append(nodes, field{n.id, object{
				{"name", n.name}, {"ephemeral_id", n.ephemeralID}, {"transport_address", n.address()},
				{"attributes", stringMap(n.attrs())}, {"roles", []string{"data", "ingest"}},
			}})
		}
		o = append(o, field{"nodes", nodes})
	}
	if metrics["metadata"] {
		ids := make([]string, 0)
		if m := s.clusterManager(); m != nil {
			ids = append(ids, m.id)
		}
		mi := object{}
		for _, ix := range indices {
			terms, insync := object{}, object{}
			for _, sh := range ix.shards {
				terms = append(terms, field{strconv.Itoa(sh.num), sh.term})
				var ids []string
				for _, c := range sh.copies {
					if c.active() {
						ids = append(ids, c.allocID)
					}
				}
				insync = append(insync, field{strconv.Itoa(sh.num), ids})
			}
			mi = append(mi, field{ix.name, object{
				{"version", 1 + ix.settingsVersion}, {"mapping_version", 1}, {"settings_version", 1 + ix.settingsVersion},
				{"aliases_version", 1}, {"routing_num_shards", routingNumShards(len(ix.shards))}, {"state", "open"},
				{"settings", renderSettings(s.indexSettings(ix), flat)},
				{"mappings", object{}}, {"aliases", []any{}}, {"primary_terms", terms},
				{"in_sync_allocations", insync}, {"rollover_info", object{}}, {"system", false},
			}})
		}
		o = append(o, field{"metadata", object{
			{"cluster_uuid", s.clusterUUID}, {"cluster_uuid_committed", true},
			{"cluster_coordination", object{
				{"term", 1}, {"last_committed_config", ids}, {"last_accepted_config", ids}, {"voting_config_exclusions", []any{}},
			}},
			{"templates", object{}}, {"indices", mi}, {"index-graveyard", object{{"tombstones", []any{}}}},
		}})
	}
	if metrics["routing_table"] {
		rt := object{}
		for _, ix := range indices {
			shards := object{}
			for _, sh := range ix.shards {
				entries := make([]any, 0, len(sh.copies))
				for _, c := range sh.copies {
					entries = append(entries, s.routingEntry(c, false))
				}
				shards = append(shards, field{strconv.Itoa(sh.num), entries})
			}
			rt = append(rt, field{ix.name, object{{"shards", shards}}})
		}
		o = append(o, field{"routing_table", object{{"indices", rt}}})
	}
	if metrics["routing_nodes"] {
		unassigned := []any{}
		byNode := map[*node][]any{}
		for _, ix := range indices {
			for _, sh := range ix.shards {
				for _, c := range sh.copies {
					switch c.node {
					case nil:
						unassigned = append(unassigned, s.routingEntry(c, false))
					default:
						byNode[c.node] = append(byNode[c.node], s.routingEntry(c, false))
						if c.target != nil {
							byNode[c.target] = append(byNode[c.target], s.routingEntry(c, true))
						}
					}
				}
			}
		}
		nodes := object{}
		for _, n := range s.presentNodes() {
			nodes = append(nodes, field{n.id, append([]any{}, byNode[n]...)})
		}
		o = append(o, field{"routing_nodes", object{{"unassigned", unassigned}, {"nodes", nodes}}})
	}
	return o
}

// routingNumShards is IndexMetadata's default routing_num_shards: shards × 2^k up to 1024.
func routingNumShards(shards int) int {
	n := shards
	for n*2 <= 1024 {
		n *= 2
	}
	return n
}

func stringMap(m map[string]string) object {
	o := object{}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		o = append(o, field{k, m[k]})
	}
	return o
}

// routingEntry is ShardRouting.toXContent; target selects the relocation target's INITIALIZING entry.
func (s *Sim) routingEntry(c *shardCopy, target bool) object {
	var nodeID, relocating any
	state := c.state.String()
	alloc := object{}
	switch {
	case target:
		nodeID, relocating, state = c.target.id, c.node.id, stateInitializing.String()
		alloc = object{{"id", c.targetAllocID}, {"relocation_id", c.allocID}}
	case c.node != nil:
		nodeID = c.node.id
		alloc = object{{"id", c.allocID}}
		if c.target != nil {
			relocating = c.target.id
			alloc = append(alloc, field{"relocation_id", c.targetAllocID})
		}
	}
	o := object{
		{"state", state}, {"primary", c.primary}, {"node", nodeID}, {"relocating_node", relocating},
		{"shard", c.sh.num}, {"index", c.sh.idx.name},
	}
	if c.state == stateInitializing || c.state == stateRelocating || target {
		o = append(o, field{"expected_shard_size_in_bytes", c.sh.idx.shardBytes})
	}
	if c.state == stateInitializing || target {
		src := "PEER"
		if c.primary && !target {
			src = "EMPTY_STORE"
		}
		o = append(o, field{"recovery_source", object{{"type", src}}})
	}
	if len(alloc) > 0 {
		o = append(o, field{"allocation_id", alloc})
	}
	if c.state == stateUnassigned {
		o = append(o, field{"recovery_source", object{{"type", "PEER"}}})
		o = append(o, field{"unassigned_info", s.unassignedInfo(c)})
	}
	return o
}

func (s *Sim) unassignedInfo(c *shardCopy) object {
	status := "no_attempt"
	if c.lostData {
		status = "no_valid_shard_copy"
	}
	return object{
		{"reason", c.unassignedReason}, {"at", c.unassignedAt.UTC().Format("2006-01-02T15:04:05.000Z")},
		{"delayed", s.now().Before(c.delayedUntil)}, {"allocation_status", status},
	}
}

// handleGetClusterSettings is GET _cluster/settings: persistent, transient, and with include_defaults
// the defaults the scenario implies (the disk high watermark among them).
func (s *Sim) handleGetClusterSettings(rq *request) (reply, *apiError) {
	flat := rq.flag("flat_settings")
	o := object{{"persistent", renderSettings(s.persistent, flat)}, {"transient", renderSettings(s.transient, flat)}}
	if rq.flag("include_defaults") {
		d := map[string]string{}
		for k, v := range s.defaults {
			if _, ok := s.persistent[k]; ok {
				continue
			}
			if _, ok := s.transient[k]; ok {
				continue
			}
			d[k] = v
		}
		defaults := renderSettings(d, flat)
		for _, k := range listSettings {
			asList(defaults, k, flat)
		}
		o = append(o, field{"defaults", defaults})
	}
	return jsonReply(o), nil
}

// handlePutClusterSettings is PUT _cluster/settings. Every setting is validated before any applies.
func (s *Sim) handlePutClusterSettings(rq *request) (reply, *apiError) {
	body, err := decodeBody(rq.body)
	if err != nil {
		return reply{}, err
	}
	updates := map[string]map[string]*string{}
	for scope, v := range body {
		if scope != "persistent" && scope != "transient" {
			return reply{}, parseError("x_content_parse_exception", fmt.Sprintf("[1:2] [cluster_update_settings_request] unknown field [%s]", scope))
		}
		m, ok := v.(map[string]any)
		if !ok {
			return reply{}, parseError("x_content_parse_exception", fmt.Sprintf("[cluster_update_settings_request] failed to parse field [%s]", scope))
		}
		flat := map[string]*string{}
		if e := flattenSettings("", m, flat); e != nil {
			return reply{}, illegalArgument(e.Error())
		}
		for k, val := range flat {
			if val == nil {
				continue
			}
			if e := s.validateSetting(scope, k, *val); e != nil {
				return reply{}, illegalArgument(e.Error())
			}
		}
		updates[scope] = flat
	}
	if e := s.checkWLMThresholds(updates); e != nil {
		return reply{}, illegalArgument(e.Error())
	}
	ack := object{{"acknowledged", true}}
	for _, scope := range []string{"persistent", "transient"} {
		store := s.persistent
		if scope == "transient" {
			store = s.transient
		}
		applied := map[string]string{}
		for k, v := range updates[scope] {
			if v == nil {
				delete(store, k)
				continue
			}
			store[k], applied[k] = *v, *v
		}
		ack = append(ack, field{scope, renderSettings(applied, rq.flag("flat_settings"))})
	}
	s.cfg = nil
	s.changed()
	return jsonReply(ack), nil
}

// rerouteMetrics are what POST _cluster/reroute answers with by default: all but metadata.
var rerouteMetrics = []string{"version", "master_node", "cluster_manager_node", "blocks", "nodes", "routing_table", "routing_nodes"}

func (s *Sim) handleReroute(rq *request) (reply, *apiError) {
	cmds, err := parseRerouteBody(rq.body)
	if err != nil {
		return reply{}, err
	}
	list := rq.param("metric")
	if list == "" {
		list = strings.Join(rerouteMetrics, ",")
	}
	metrics, err := stateMetricSet(rq, list, true)
	if err != nil {
		return reply{}, err
	}
	var state object
	out, err := s.reroute(cmds, rq.flag("dry_run"), rq.flag("explain"), func() {
		state = s.clusterState(metrics, s.indices, false)
	})
	if err != nil {
		return reply{}, err
	}
	o := object{{"acknowledged", true}, {"state", state}}
	if rq.flag("explain") {
		o = append(o, field{"explanations", append([]any{}, out.explanations...)})
	}
	return jsonReply(o), nil
}

// handleAllocationExplain is GET/POST _cluster/allocation/explain.
func (s *Sim) handleAllocationExplain(rq *request) (reply, *apiError) {
	body, err := decodeBody(rq.body)
	if err != nil {
		return reply{}, err
	}
	includeYes := rq.flag("include_yes_decisions")
	var c *shardCopy
	if len(body) == 0 {
		for _, ix := range s.indices {
			for _, sh := range ix.shards {
				for _, x := range sh.copies {
					if c == nil && x.state == stateUnassigned {
						c = x
					}
				}
			}
		}
		if c == nil {
			return reply{}, illegalArgument(fmt.Sprintf("unable to find any unassigned shards to explain "+
				"[ClusterAllocationExplainRequest[useAnyUnassignedShard=true,include_yes_decisions?=%t]", includeYes))
		}
	} else {
		name, _ := body["index"].(string)
		shardNum, ok := jsonInt(body["shard"])
		primary, pok := body["primary"].(bool)
		if name == "" || !ok || !pok {
			return reply{}, illegalArgument("index, shard, and primary must be specified in allocation explain request")
		}
		ix, found := s.byIndex[name]
		if !found {
			return reply{}, indexNotFound(name)
		}
		if shardNum < 0 || shardNum >= len(ix.shards) {
			return reply{}, illegalArgument(fmt.Sprintf("No shard was specified in the request which means the request is for any unassigned shard, "+
				"but shard [%d] does not exist in index [%s]", shardNum, name))
		}
		sh := ix.shards[shardNum]
		current, _ := body["current_node"].(string)
		var cn *node
		if current != "" {
			var e *apiError
			if cn, e = s.resolveNode(current); e != nil {
				return reply{}, e
			}
		}
		for _, x := range sh.copies {
			if x.primary != primary || (cn != nil && x.node != cn) {
				continue
			}
			if c == nil || (x.state == stateUnassigned && c.state != stateUnassigned && cn == nil) {
				c = x
			}
		}
		if c == nil {
			return reply{}, illegalArgument(fmt.Sprintf("unable to find a shard assigned to node [%s] for [%s][%d]", current, name, shardNum))
		}
	}
	return jsonReply(s.explainCopy(c, includeYes)), nil
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
func (s *Sim) explainCopy(c *shardCopy, includeYes bool) object {
	sh := c.sh
	ix := sh.idx
	s.refresh() // the caller holds the write lock
	b := s.newBalance()
	ranking := map[*node]int{}
	ranked := slices.Clone(b.nodes)
	slices.SortStableFunc(ranked, func(x, y *node) int {
		wx, wy := b.weight(x, ix), b.weight(y, ix)
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
	deciders := func(v verdict) []any {
		out := []any{}
		for _, d := range v.decisions {
			if includeYes || d.typ != decYes {
				out = append(out, object{{"decider", d.decider}, {"decision", d.typ.String()}, {"explanation", d.explanation}})
			}
		}
		return out
	}
	o := object{{"index", ix.name}, {"shard", sh.num}, {"primary", c.primary}, {"current_state", strings.ToLower(c.state.String())}}
	var nodeDecisions []any
	anyYes, anyThrottle := false, false
	for _, n := range ranked {
		if n == c.node {
			continue
		}
		v := s.canAllocate(sh, c, n, true, false)
		nd := map[decisionType]string{decYes: "yes", decThrottle: "throttled", decNo: "no"}[v.typ]
		if c.node != nil && v.typ == decYes && s.canRemain(c, false).typ == decYes {
			// A started copy only moves where the balance improves, as the rebalancer judges it.
			if b.weight(c.node, ix)-b.weight(n, ix) <= b.cfg.threshold+0.001 {
				nd = "worse_balance"
			}
		}
		anyYes = anyYes || nd == "yes"
		anyThrottle = anyThrottle || nd == "throttled"
		nodeDecisions = append(nodeDecisions, object{
			{"node_id", n.id}, {"node_name", n.name}, {"transport_address", n.address()},
			{"node_attributes", stringMap(n.attrs())}, {"node_decision", nd}, {"weight_ranking", ranking[n]},
			{"deciders", deciders(v)},
		})
	}
	if c.node == nil {
		o = append(o, field{"unassigned_info", s.unassignedInfo(c)})
		canAllocate, why := "no", "cannot allocate because allocation is not permitted to any of the nodes"
		switch {
		case c.lostData:
			canAllocate, why = "no_valid_shard_copy", "cannot allocate because a previous copy of the primary shard existed but can no longer be found on the nodes in the cluster"
		case s.now().Before(c.delayedUntil) && anyYes:
			canAllocate = "allocation_delayed"
			why = fmt.Sprintf("cannot allocate because the cluster is still waiting %s for the departed node holding a replica to rejoin, "+
				"despite being allowed to allocate the shard to at least one other node", c.delayedUntil.Sub(s.now()).Round(time.Millisecond))
		case anyYes:
			canAllocate, why = "yes", "can allocate the shard"
		case anyThrottle:
			canAllocate, why = "throttled", "allocation temporarily throttled"
		}
		o = append(o, field{"can_allocate", canAllocate}, field{"allocate_explanation", why})
		return append(o, field{"node_allocation_decisions", append([]any{}, nodeDecisions...)})
	}
	o = append(o, field{"current_node", object{
		{"id", c.node.id}, {"name", c.node.name}, {"transport_address", c.node.address()},
		{"attributes", stringMap(c.node.attrs())}, {"weight_ranking", ranking[c.node]},
	}})
	remain := s.canRemain(c, true)
	if remain.typ == decNo {
		move, why := "no", "cannot move shard to another node, even though it is not allowed to remain on its current node"
		switch {
		case anyYes:
			move, why = "yes", "shard cannot remain on this node and is force-moved to another node"
		case anyThrottle:
			move, why = "throttled", "shard cannot remain on this node but is throttled on moving to another node"
		}
		o = append(o, field{"can_remain_on_current_node", "no"}, field{"can_remain_decisions", deciders(remain)},
			field{"can_move_to_other_node", move}, field{"move_explanation", why})
		return append(o, field{"node_allocation_decisions", append([]any{}, nodeDecisions...)})
	}
	o = append(o, field{"can_remain_on_current_node", "yes"})
	if includeYes {
		o = append(o, field{"can_remain_decisions", deciders(remain)})
	}
	rb := s.canRebalance(true)
	rbName := map[decisionType]string{decYes: "yes", decThrottle: "throttled", decNo: "no"}[rb.typ]
	o = append(o, field{"can_rebalance_cluster", rbName})
	if rb.typ != decYes || includeYes {
		o = append(o, field{"can_rebalance_cluster_decisions", deciders(rb)})
	}
	toOther, why := "no", "cannot rebalance as no target node exists that can both allocate this shard and improve the cluster balance"
	switch {
	case rb.typ == decNo:
		why = "rebalancing is not allowed"
		if anyYes {
			why += ", even though there is at least one node on which the shard can be allocated"
		}
	case rb.typ == decThrottle:
		toOther, why = "throttled", "rebalancing is throttled"
	case anyYes:
		toOther, why = "yes", "can rebalance shard"
	case anyThrottle:
		toOther, why = "throttled", "shard rebalancing throttled"
	}
	o = append(o, field{"can_rebalance_to_other_node", toOther}, field{"rebalance_explanation", why})
	return append(o, field{"node_allocation_decisions", append([]any{}, nodeDecisions...)})
}
