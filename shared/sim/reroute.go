package sim

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// rerouteCommand is one entry of POST _cluster/reroute's commands: {"move": {...}}.
type rerouteCommand struct {
	name   string
	params map[string]any
}

// moveCommands names the commands OpenSearch registers (ClusterModule.getNamedXWriteables).
var moveCommands = []string{"move", "cancel", "allocate_replica", "allocate_empty_primary", "allocate_stale_primary"}

// parseRerouteBody reads {"commands": [...]}; an empty body has no commands.
func parseRerouteBody(body []byte) ([]rerouteCommand, *apiError) {
	if len(strings.TrimSpace(string(body))) == 0 {
		return nil, nil
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(body, &doc); err != nil {
		return nil, parseError("json_parse_exception", "failed to parse reroute request body: "+err.Error())
	}
	var out []rerouteCommand
	for k, raw := range doc {
		if k != "commands" {
			return nil, parseError("x_content_parse_exception", fmt.Sprintf("[cluster_reroute] unknown field [%s]", k))
		}
		var list []map[string]json.RawMessage
		if err := json.Unmarshal(raw, &list); err != nil {
			return nil, parseError("x_content_parse_exception", "[cluster_reroute] failed to parse field [commands]: "+err.Error())
		}
		for _, entry := range list {
			if len(entry) != 1 {
				return nil, parseError("parse_exception", "allocation command must be an object with a single field")
			}
			for name, pr := range entry {
				if !slices.Contains(moveCommands, name) {
					return nil, parseError("x_content_parse_exception", fmt.Sprintf("[commands] unknown allocation command [%s]", name))
				}
				dec := json.NewDecoder(strings.NewReader(string(pr)))
				dec.UseNumber()
				var params map[string]any
				if err := dec.Decode(&params); err != nil || params == nil {
					return nil, parseError("parse_exception", fmt.Sprintf("[%s] command does not support complex json tokens", name))
				}
				out = append(out, rerouteCommand{name: name, params: params})
			}
		}
	}
	return out, nil
}

// commandFields lists each command's fields (OpenSearch's fromXContent), required ones first.
var commandFields = map[string]struct{ required, optional []string }{
	"move":                   {required: []string{"index", "shard", "from_node", "to_node"}},
	"cancel":                 {required: []string{"index", "shard", "node"}, optional: []string{"allow_primary"}},
	"allocate_replica":       {required: []string{"index", "shard", "node"}},
	"allocate_empty_primary": {required: []string{"index", "shard", "node"}, optional: []string{"accept_data_loss"}},
	"allocate_stale_primary": {required: []string{"index", "shard", "node"}, optional: []string{"accept_data_loss"}},
}

// commandArgs are a command's parsed parameters.
type commandArgs struct {
	index, from, to, node string
	shard                 int
	allowPrimary          bool
	acceptDataLoss        bool
}

func (cmd rerouteCommand) args() (commandArgs, *apiError) {
	var a commandArgs
	spec := commandFields[cmd.name]
	for k, v := range cmd.params {
		if !slices.Contains(spec.required, k) && !slices.Contains(spec.optional, k) {
			return a, parseError("parse_exception", fmt.Sprintf("[%s] command does not support field [%s]", cmd.name, k))
		}
		var s string
		switch t := v.(type) {
		case string:
			s = t
		case json.Number:
			s = t.String()
		case bool:
			s = strconv.FormatBool(t)
		default:
			return a, parseError("parse_exception", fmt.Sprintf("[%s] command does not support complex json tokens [START_OBJECT]", cmd.name))
		}
		switch k {
		case "index":
			a.index = s
		case "from_node":
			a.from = s
		case "to_node":
			a.to = s
		case "node":
			a.node = s
		case "shard":
			n, err := strconv.Atoi(s)
			if err != nil {
				return a, parseError("x_content_parse_exception", fmt.Sprintf("[%s] failed to parse field [shard]: %q is not an integer", cmd.name, s))
			}
			a.shard = n
		case "allow_primary":
			a.allowPrimary = s == "true"
		case "accept_data_loss":
			a.acceptDataLoss = s == "true"
		}
	}
	for _, k := range spec.required {
		if _, ok := cmd.params[k]; !ok {
			return a, parseError("parse_exception", fmt.Sprintf("[%s] command missing the %s parameter", cmd.name, k))
		}
	}
	return a, nil
}

// commandParams is what the explanation echoes: the real command's fields plus those the OpenSearch
// API specification marks required for every explanation (allow_primary, node).
func (cmd rerouteCommand) explanationParams(a commandArgs) object {
	o := object{{"index", a.index}, {"shard", a.shard}}
	switch cmd.name {
	case "move":
		o = append(o, field{"from_node", a.from}, field{"to_node", a.to}, field{"node", a.to}, field{"allow_primary", false})
	case "cancel":
		o = append(o, field{"node", a.node}, field{"allow_primary", a.allowPrimary})
	default:
		o = append(o, field{"node", a.node}, field{"allow_primary", false})
		if cmd.name != "allocate_replica" {
			o = append(o, field{"accept_data_loss", a.acceptDataLoss})
		}
	}
	return o
}

// resolveNode is DiscoveryNodes.resolveNode: a node id, name, address or _local; exactly one match.
func (s *Sim) resolveNode(id string) (*node, *apiError) {
	ms := s.matchNodes([]string{id})
	switch {
	case len(ms) == 0:
		return nil, illegalArgument(fmt.Sprintf("failed to resolve [%s], no matching nodes", id))
	case len(ms) > 1:
		return nil, illegalArgument(fmt.Sprintf("failed to resolve [%s], matched multiple nodes", id))
	}
	return ms[0], nil
}

// rerouteOutcome is what applying a command list did.
type rerouteOutcome struct {
	explanations []any
	moves        []*shardCopy // copies an accepted move started relocating
	moveKeys     []moveKey
}

// reroute applies commands atomically: if one fails, none applies. dry_run and a failure restore the
// routing as it was. The cluster state answer is built by the caller while the changes are in place,
// through the done callback.
func (s *Sim) reroute(cmds []rerouteCommand, dryRun, explain bool, done func()) (*rerouteOutcome, *apiError) {
	healthBefore, _, _, _ := s.healthCounts()
	s.refresh()
	flight := s.inFlight()
	snap := newRoutingSnapshot(s)
	out := &rerouteOutcome{}
	fail := func(e *apiError) (*rerouteOutcome, *apiError) {
		snap.restore(s)
		return nil, e
	}
	for _, cmd := range cmds {
		a, perr := cmd.args()
		if perr != nil {
			return fail(perr)
		}
		if ix, ok := s.byIndex[a.index]; ok && a.shard >= 0 && a.shard < len(ix.shards) {
			snap.save(ix.shards[a.shard])
		}
		v, moved, err := s.applyCommand(cmd.name, a, explain)
		if err != nil {
			return fail(err)
		}
		if moved != nil {
			out.moves = append(out.moves, moved)
			out.moveKeys = append(out.moveKeys, moveKey{from: moved.node.name, to: moved.target.name})
		}
		if explain {
			ds := make([]any, 0, len(v.decisions))
			for _, d := range v.decisions {
				ds = append(ds, object{{"decider", d.decider}, {"decision", d.typ.String()}, {"explanation", d.explanation}})
			}
			out.explanations = append(out.explanations, object{
				{"command", cmd.name}, {"parameters", cmd.explanationParams(a)}, {"decisions", ds},
			})
		}
	}
	if done != nil {
		done()
	}
	if dryRun {
		snap.restore(s)
		return out, nil
	}
	// Safety invariants in the simulator's own truth, for every accepted move: what the breaker and
	// its per-node holds allow. Moves of one call count against the node limits together.
	cfg := s.config()
	in, outgoing := slices.Clone(flight.incoming), slices.Clone(flight.outgoing)
	for i, c := range out.moves {
		sh := c.sh
		what := fmt.Sprintf("move %s %s -> %s", sh, out.moveKeys[i].from, out.moveKeys[i].to)
		in[c.target.ord]++
		outgoing[c.node.ord]++
		switch {
		case healthBefore != "green":
			s.violate(what + " accepted while cluster health was " + healthBefore)
		case flight.externalAt[c.node.ord] > 0 || flight.externalAt[c.target.ord] > 0:
			s.violate(fmt.Sprintf("%s accepted while an earlier reroute move from or to %s or %s was still relocating", what, c.node.name, c.target.name))
		case cfg.concurrentRebalance >= 0 && flight.others > cfg.concurrentRebalance:
			s.violate(fmt.Sprintf("%s accepted while OpenSearch had %d relocations in flight, over cluster_concurrent_rebalance %d",
				what, flight.others, cfg.concurrentRebalance))
		case in[c.target.ord] > cfg.incoming:
			s.violate(fmt.Sprintf("%s takes %s to %d incoming recoveries, over node_concurrent_incoming_recoveries %d",
				what, c.target.name, in[c.target.ord], cfg.incoming))
		case outgoing[c.node.ord] > cfg.outgoing:
			s.violate(fmt.Sprintf("%s takes %s to %d outgoing recoveries, over node_concurrent_outgoing_recoveries %d",
				what, c.node.name, outgoing[c.node.ord], cfg.outgoing))
		}
		if sh.hasLastMove && sh.lastMove == out.moveKeys[i] && !sh.movedSinceCmd {
			s.violate(what + " issued twice with no other movement of the shard in between")
		}
		sh.lastMove, sh.hasLastMove, sh.movedSinceCmd = out.moveKeys[i], true, false
		s.res.Moves++
		if flight.others > 0 {
			s.res.MovesWhileBuiltinBusy++
		}
		s.res.BytesMoved += sh.idx.shardBytes
	}
	s.checkCycleInvariants(len(out.moves))
	for sh := range snap.shards {
		if firstActive(sh) == nil && snap.hadActive[sh] {
			s.violate(fmt.Sprintf("shard %s left with no active copy by a reroute", sh))
		}
	}
	s.checkTickInvariants()
	return out, nil
}

// applyCommand runs one command against the current routing, as OpenSearch's AllocationCommand.execute.
// With explain, a refusal that OpenSearch explains instead of throwing returns a NO verdict and no error.
func (s *Sim) applyCommand(name string, a commandArgs, explain bool) (verdict, *shardCopy, *apiError) {
	refused := func(decider, why string) (verdict, *shardCopy, *apiError) {
		v := verdict{explain: true}
		v.add(decNo, decider, func() string { return why })
		return v, nil, nil
	}
	switch name {
	case "move":
		from, err := s.resolveNode(a.from)
		if err != nil {
			return verdict{}, nil, err
		}
		to, err := s.resolveNode(a.to)
		if err != nil {
			return verdict{}, nil, err
		}
		var c *shardCopy
		if ix, ok := s.byIndex[a.index]; ok && a.shard >= 0 && a.shard < len(ix.shards) {
			c = ix.shards[a.shard].onNode(from)
			if c != nil && c.node != from {
				c = nil // only a relocation target is there: OpenSearch finds it initializing
				if explain {
					return refused("move_allocation_command", fmt.Sprintf("shard %d has not been started", a.shard))
				}
				return verdict{}, nil, illegalArgument(fmt.Sprintf("[move_allocation] can't move %d, shard is not started (state = INITIALIZING]", a.shard))
			}
		}
		if c == nil {
			if explain {
				return refused("move_allocation_command", fmt.Sprintf("shard %d not found", a.shard))
			}
			return verdict{}, nil, illegalArgument(fmt.Sprintf("[move_allocation] can't move %d, failed to find it on node %s", a.shard, from.discoString()))
		}
		if c.state != stateStarted {
			if explain {
				return refused("move_allocation_command", fmt.Sprintf("shard %d has not been started", a.shard))
			}
			return verdict{}, nil, illegalArgument(fmt.Sprintf("[move_allocation] can't move %d, shard is not started (state = %s]", a.shard, c.state))
		}
		v := s.canAllocate(c.sh, c, to, true, true)
		if v.typ == decNo {
			if explain {
				return v, nil, nil
			}
			return v, nil, illegalArgument(fmt.Sprintf("[move_allocation] can't move %d, from %s, to %s, since its not allowed, reason: %s",
				a.shard, from.discoString(), to.discoString(), v.multiString()))
		}
		// A THROTTLE is accepted, as OpenSearch does "since the user wants it"; the recovery queues.
		s.startRelocation(c, to, relocExternal)
		return v, c, nil
	case "cancel":
		n, ix, err := s.commandNodeIndex(a)
		if err != nil {
			return verdict{}, nil, err
		}
		var c *shardCopy
		if a.shard >= 0 && a.shard < len(ix.shards) {
			c = ix.shards[a.shard].onNode(n)
		}
		if c == nil {
			why := fmt.Sprintf("can't cancel %d, failed to find it on node %s", a.shard, n.discoString())
			if explain {
				return refused("cancel_allocation_command", why)
			}
			return verdict{}, nil, illegalArgument("[cancel_allocation] " + why)
		}
		onTarget := c.target == n
		stateName := strings.ToLower(c.state.String())
		if onTarget {
			stateName = "initializing"
		}
		if c.primary && !a.allowPrimary && !onTarget {
			why := fmt.Sprintf("can't cancel %d on node %s, shard is primary and %s", a.shard, n.discoString(), stateName)
			if explain {
				return refused("cancel_allocation_command", why)
			}
			return verdict{}, nil, illegalArgument("[cancel_allocation] " + why)
		}
		if onTarget {
			s.cancelRecovery(c.rec)
		} else {
			s.failCopy(c, "REROUTE_CANCELLED")
		}
		v := verdict{explain: true}
		v.add(decYes, "cancel_allocation_command", func() string {
			return fmt.Sprintf("shard %d on node %s can be cancelled", a.shard, n.discoString())
		})
		return v, nil, nil
	default:
		return s.applyAllocate(name, a, explain)
	}
}

// commandNodeIndex resolves the node and the index a cancel or allocate command names, node first.
func (s *Sim) commandNodeIndex(a commandArgs) (*node, *index, *apiError) {
	n, err := s.resolveNode(a.node)
	if err != nil {
		return nil, nil, err
	}
	ix, ok := s.byIndex[a.index]
	if !ok {
		return nil, nil, indexNotFound(a.index)
	}
	return n, ix, nil
}

// applyAllocate runs allocate_replica, allocate_empty_primary and allocate_stale_primary.
func (s *Sim) applyAllocate(name string, a commandArgs, explain bool) (verdict, *shardCopy, *apiError) {
	reject := func(why string) (verdict, *shardCopy, *apiError) {
		if explain {
			v := verdict{explain: true}
			v.add(decNo, name+"_allocation_command", func() string { return why })
			return v, nil, nil
		}
		return verdict{}, nil, illegalArgument("[" + name + "] " + why)
	}
	n, ix, err := s.commandNodeIndex(a)
	if err != nil {
		return verdict{}, nil, err
	}
	if a.shard < 0 || a.shard >= len(ix.shards) {
		return verdict{}, nil, &apiError{status: 404, body: errorBody("shard_not_found_exception",
			"no such shard", object{{"index", ix.name}, {"shard", strconv.Itoa(a.shard)}, {"index_uuid", ix.uuid}})}
	}
	sh := ix.shards[a.shard]
	p := sh.primary()
	var c *shardCopy
	switch name {
	case "allocate_replica":
		if p == nil || p.state == stateUnassigned {
			return reject(fmt.Sprintf("trying to allocate a replica shard [%s][%d], while corresponding primary shard is still unassigned", ix.name, a.shard))
		}
		for _, x := range sh.copies {
			if !x.primary && x.state == stateUnassigned {
				c = x
				break
			}
		}
		if c == nil {
			return reject(fmt.Sprintf("all copies of [%s][%d] are already assigned. Use the move allocation command instead", ix.name, a.shard))
		}
	case "allocate_empty_primary", "allocate_stale_primary":
		if p == nil || p.state != stateUnassigned {
			return reject(fmt.Sprintf("primary [%s][%d] is already assigned", ix.name, a.shard))
		}
		if name == "allocate_stale_primary" {
			// Copies lost with a node are gone in this model, so no node holds stale data.
			return reject(fmt.Sprintf("No data for shard [%d] of index [%s] found on node [%s]", a.shard, ix.name, n.name))
		}
		if !a.acceptDataLoss {
			return reject(fmt.Sprintf("allocating an empty primary for [%s][%d] can result in data loss. Please confirm by setting the accept_data_loss parameter to true", ix.name, a.shard))
		}
		c = p
	}
	v := s.canAllocate(sh, c, n, true, true)
	if v.typ == decNo {
		if explain {
			return v, nil, nil
		}
		return v, nil, illegalArgument(fmt.Sprintf("[%s] allocation of [%s][%d] on node %s is not allowed, reason: %s",
			name, ix.name, a.shard, n.discoString(), v.multiString()))
	}
	c.lostData = false
	s.initialize(c, n, true)
	return v, nil, nil
}

// failCopy takes a copy off its node, as RoutingNodes.failShard: a relocation stops, a failed primary
// hands over to an active replica, and the copy waits unassigned for the allocator.
func (s *Sim) failCopy(c *shardCopy, reason string) {
	if c.rec != nil {
		s.recoveries = slices.DeleteFunc(s.recoveries, func(x *recovery) bool { return x == c.rec })
		c.rec = nil
	}
	wasPrimary := c.primary
	c.state, c.node, c.allocID, c.target, c.targetAllocID = stateUnassigned, nil, "", nil, ""
	c.unassignedReason, c.unassignedAt, c.delayedUntil, c.external = reason, s.now(), s.now(), false
	c.resetCounters()
	if wasPrimary {
		if p := firstActive(c.sh); p != nil {
			p.primary, c.primary = true, false
			c.sh.term++
		} else {
			c.lostData = true
		}
	}
	s.changed()
}

// routingSnapshot saves what reroute commands may change so a failed or dry-run list can be undone.
type routingSnapshot struct {
	shards    map[*shard]shard
	copies    map[*shardCopy]shardCopy
	hadActive map[*shard]bool
	recs      []*recovery
	recSeq    int64
	version   int64
	res       Result
}

func newRoutingSnapshot(s *Sim) *routingSnapshot {
	return &routingSnapshot{
		shards: map[*shard]shard{}, copies: map[*shardCopy]shardCopy{}, hadActive: map[*shard]bool{},
		recs: slices.Clone(s.recoveries), recSeq: s.recSeq, version: s.stateVersion, res: s.res,
	}
}

func (rs *routingSnapshot) save(sh *shard) {
	if _, ok := rs.shards[sh]; ok {
		return
	}
	rs.shards[sh] = *sh
	rs.hadActive[sh] = firstActive(sh) != nil
	for _, c := range sh.copies {
		rs.copies[c] = *c
	}
}

func (rs *routingSnapshot) restore(s *Sim) {
	for sh, v := range rs.shards {
		*sh = v
	}
	for c, v := range rs.copies {
		*c = v
	}
	s.recoveries, s.recSeq, s.stateVersion = rs.recs, rs.recSeq, rs.version
	violations := s.res.Violations
	s.res = rs.res
	s.res.Violations = violations[:len(rs.res.Violations)]
	s.refresh()
}

// checkCycleInvariants counts an accepted reroute call that started moves relocations. A balancer
// acts once per cycle (a tick), with all of its moves in one call and within its budget: a second
// call in the same tick is two movers acting on the cluster at once, and more relocations than
// MaxMovesPerCycle is a budget breached.
func (s *Sim) checkCycleInvariants(moves int) {
	if moves == 0 {
		return
	}
	s.tickReroutes++
	s.tickMoves += moves
	if s.tickReroutes > 1 {
		s.violate(fmt.Sprintf("reroute call %d of this cycle started %d relocations: two movers acting on the cluster at once", s.tickReroutes, moves))
	}
	if s.maxMovesPerCycle > 0 && s.tickMoves > s.maxMovesPerCycle {
		s.violate(fmt.Sprintf("%d relocations started by reroute this cycle, over max_moves_per_cycle %d", s.tickMoves, s.maxMovesPerCycle))
	}
}
