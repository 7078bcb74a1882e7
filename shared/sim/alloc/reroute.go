package alloc

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/shardwise/shardwise/shared/sim/model"
	"github.com/shardwise/shardwise/shared/sim/wire"
)

// RerouteCommand is one entry of POST _cluster/reroute's commands: {"move": {...}}.
type RerouteCommand struct {
	name   string
	params map[string]any
}

// moveCommands names the commands OpenSearch registers (ClusterModule.getNamedXWriteables).
var moveCommands = []string{"move", "cancel", "allocate_replica", "allocate_empty_primary", "allocate_stale_primary"}

// ParseRerouteBody reads {"commands": [...]}; an empty body has no commands.
func ParseRerouteBody(body []byte) ([]RerouteCommand, *wire.APIError) {
	if len(strings.TrimSpace(string(body))) == 0 {
		return nil, nil
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(body, &doc); err != nil {
		return nil, wire.ParseError("json_parse_exception", "failed to parse reroute request body: "+err.Error())
	}
	var out []RerouteCommand
	for k, raw := range doc {
		if k != "commands" {
			return nil, wire.ParseError("x_content_parse_exception", fmt.Sprintf("[cluster_reroute] unknown field [%s]", k))
		}
		var list []map[string]json.RawMessage
		if err := json.Unmarshal(raw, &list); err != nil {
			return nil, wire.ParseError("x_content_parse_exception", "[cluster_reroute] failed to parse field [commands]: "+err.Error())
		}
		for _, entry := range list {
			if len(entry) != 1 {
				return nil, wire.ParseError("parse_exception", "allocation command must be an object with a single field")
			}
			for name, pr := range entry {
				if !slices.Contains(moveCommands, name) {
					return nil, wire.ParseError("x_content_parse_exception", fmt.Sprintf("[commands] unknown allocation command [%s]", name))
				}
				dec := json.NewDecoder(strings.NewReader(string(pr)))
				dec.UseNumber()
				var params map[string]any
				if err := dec.Decode(&params); err != nil || params == nil {
					return nil, wire.ParseError("parse_exception", fmt.Sprintf("[%s] command does not support complex json tokens", name))
				}
				out = append(out, RerouteCommand{name: name, params: params})
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

func (cmd RerouteCommand) args() (commandArgs, *wire.APIError) {
	var a commandArgs
	spec := commandFields[cmd.name]
	for k, v := range cmd.params {
		if !slices.Contains(spec.required, k) && !slices.Contains(spec.optional, k) {
			return a, wire.ParseError("parse_exception", fmt.Sprintf("[%s] command does not support field [%s]", cmd.name, k))
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
			return a, wire.ParseError("parse_exception", fmt.Sprintf("[%s] command does not support complex json tokens [START_OBJECT]", cmd.name))
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
				return a, wire.ParseError("x_content_parse_exception", fmt.Sprintf("[%s] failed to parse field [shard]: %q is not an integer", cmd.name, s))
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
			return a, wire.ParseError("parse_exception", fmt.Sprintf("[%s] command missing the %s parameter", cmd.name, k))
		}
	}
	return a, nil
}

// commandParams is what the explanation echoes: the real command's fields plus those the OpenSearch
// API specification marks required for every explanation (allow_primary, node).
func (cmd RerouteCommand) explanationParams(a commandArgs) wire.Object {
	o := wire.Object{{"index", a.index}, {"shard", a.shard}}
	switch cmd.name {
	case "move":
		o = append(o, wire.Field{"from_node", a.from}, wire.Field{"to_node", a.to}, wire.Field{"node", a.to}, wire.Field{"allow_primary", false})
	case "cancel":
		o = append(o, wire.Field{"node", a.node}, wire.Field{"allow_primary", a.allowPrimary})
	default:
		o = append(o, wire.Field{"node", a.node}, wire.Field{"allow_primary", false})
		if cmd.name != "allocate_replica" {
			o = append(o, wire.Field{"accept_data_loss", a.acceptDataLoss})
		}
	}
	return o
}

// ResolveNode is DiscoveryNodes.resolveNode: a node id, name, address or _local; exactly one match.
func (s *Allocator) ResolveNode(id string) (*model.Node, *wire.APIError) {
	ms := s.MatchNodes([]string{id})
	switch {
	case len(ms) == 0:
		return nil, wire.IllegalArgument(fmt.Sprintf("failed to resolve [%s], no matching nodes", id))
	case len(ms) > 1:
		return nil, wire.IllegalArgument(fmt.Sprintf("failed to resolve [%s], matched multiple nodes", id))
	}
	return ms[0], nil
}

// RerouteOutcome is what applying a command list did.
type RerouteOutcome struct {
	Explanations []any
	moves        []*model.ShardCopy // copies an accepted move started relocating
	moveKeys     []model.MoveKey
}

// Reroute applies commands atomically: if one fails, none applies. dry_run and a failure restore the
// routing as it was. The cluster state answer is built by the caller while the changes are in place,
// through the done callback.
func (s *Allocator) Reroute(cmds []RerouteCommand, dryRun, explain bool, done func()) (*RerouteOutcome, *wire.APIError) {
	healthBefore, _, _, _ := s.HealthCounts()
	s.Refresh()
	flight := s.InFlight()
	// The shards with a copy recovering before the call: shardwise never has two copies of a shard
	// in flight at once (a move of one while another relocates or initializes).
	recovering := map[*model.Shard]bool{}
	for _, cmd := range cmds {
		if a, perr := cmd.args(); perr == nil {
			if ix, ok := s.ByIndex[a.index]; ok && a.shard >= 0 && a.shard < len(ix.Shards) {
				for _, c := range ix.Shards[a.shard].Copies {
					if c.State == model.StateRelocating || c.State == model.StateInitializing {
						recovering[ix.Shards[a.shard]] = true
					}
				}
			}
		}
	}
	snap := newRoutingSnapshot(s)
	out := &RerouteOutcome{}
	fail := func(e *wire.APIError) (*RerouteOutcome, *wire.APIError) {
		snap.restore(s)
		return nil, e
	}
	for _, cmd := range cmds {
		a, perr := cmd.args()
		if perr != nil {
			return fail(perr)
		}
		if ix, ok := s.ByIndex[a.index]; ok && a.shard >= 0 && a.shard < len(ix.Shards) {
			snap.save(ix.Shards[a.shard])
		}
		v, moved, err := s.applyCommand(cmd.name, a, explain)
		if err != nil {
			return fail(err)
		}
		if moved != nil {
			out.moves = append(out.moves, moved)
			out.moveKeys = append(out.moveKeys, model.MoveKey{From: moved.Node.Name, To: moved.Target.Name})
		}
		if explain {
			ds := make([]any, 0, len(v.Decisions))
			for _, d := range v.Decisions {
				ds = append(ds, wire.Object{{"decider", d.Decider}, {"decision", d.Typ.String()}, {"explanation", d.Explanation}})
			}
			out.Explanations = append(out.Explanations, wire.Object{
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
	cfg := s.Config()
	in, outgoing := slices.Clone(flight.Incoming), slices.Clone(flight.Outgoing)
	for i, c := range out.moves {
		sh := c.Sh
		what := fmt.Sprintf("move %s %s -> %s", sh, out.moveKeys[i].From, out.moveKeys[i].To)
		in[c.Target.Ord]++
		outgoing[c.Node.Ord]++
		switch {
		case healthBefore != "green":
			s.Violate(what + " accepted while cluster health was " + healthBefore)
		case recovering[sh]:
			s.Violate(what + " accepted while another copy of the shard was still recovering: two copies of a shard in flight at once")
		case slices.IndexFunc(out.moves[:i], func(o *model.ShardCopy) bool { return o.Sh == sh }) >= 0:
			s.Violate(what + " accepted in the same call as a move of another copy of the shard: two copies of a shard in flight at once")
		case (flight.ExternalAt[c.Node.Ord] > 0 && !s.YoungQuick(c) || flight.ExternalAt[c.Target.Ord] > 0) && !flight.SwapCompletion(c.Node.Ord, c.Target.Ord):
			s.Violate(fmt.Sprintf("%s accepted while an earlier reroute move from or to %s or %s was still relocating", what, c.Node.Name, c.Target.Name))
		case cfg.ConcurrentRebalance >= 0 && flight.Others > cfg.ConcurrentRebalance:
			s.Violate(fmt.Sprintf("%s accepted while OpenSearch had %d relocations in flight, over cluster_concurrent_rebalance %d",
				what, flight.Others, cfg.ConcurrentRebalance))
		case in[c.Target.Ord] > cfg.Incoming:
			s.Violate(fmt.Sprintf("%s takes %s to %d incoming recoveries, over node_concurrent_incoming_recoveries %d",
				what, c.Target.Name, in[c.Target.Ord], cfg.Incoming))
		case outgoing[c.Node.Ord] > cfg.Outgoing:
			s.Violate(fmt.Sprintf("%s takes %s to %d outgoing recoveries, over node_concurrent_outgoing_recoveries %d",
				what, c.Node.Name, outgoing[c.Node.Ord], cfg.Outgoing))
		}
		if sh.HasLastMove && sh.LastMove == out.moveKeys[i] && !sh.MovedSinceCmd {
			s.Violate(what + " issued twice with no other movement of the shard in between")
		}
		sh.LastMove, sh.HasLastMove, sh.MovedSinceCmd = out.moveKeys[i], true, false
		s.Res.Moves++
		if flight.Others > 0 {
			s.Res.MovesWhileBuiltinBusy++
		}
		s.Res.BytesMoved += sh.Idx.ShardBytes
	}
	s.checkCycleInvariants(len(out.moves))
	for sh := range snap.shards {
		if model.FirstActive(sh) == nil && snap.hadActive[sh] {
			s.Violate(fmt.Sprintf("shard %s left with no active copy by a reroute", sh))
		}
	}
	s.CheckTickInvariants()
	return out, nil
}

// applyCommand runs one command against the current routing, as OpenSearch's AllocationCommand.execute.
// With explain, a refusal that OpenSearch explains instead of throwing returns a NO verdict and no error.
func (s *Allocator) applyCommand(name string, a commandArgs, explain bool) (Verdict, *model.ShardCopy, *wire.APIError) {
	refused := func(decider, why string) (Verdict, *model.ShardCopy, *wire.APIError) {
		v := Verdict{explain: true}
		v.add(DecNo, decider, func() string { return why })
		return v, nil, nil
	}
	switch name {
	case "move":
		from, err := s.ResolveNode(a.from)
		if err != nil {
			return Verdict{}, nil, err
		}
		to, err := s.ResolveNode(a.to)
		if err != nil {
			return Verdict{}, nil, err
		}
		var c *model.ShardCopy
		if ix, ok := s.ByIndex[a.index]; ok && a.shard >= 0 && a.shard < len(ix.Shards) {
			c = ix.Shards[a.shard].OnNode(from)
			if c != nil && c.Node != from {
				c = nil // only a relocation target is there: OpenSearch finds it initializing
				if explain {
					return refused("move_allocation_command", fmt.Sprintf("shard %d has not been started", a.shard))
				}
				return Verdict{}, nil, wire.IllegalArgument(fmt.Sprintf("[move_allocation] can't move %d, shard is not started (state = INITIALIZING]", a.shard))
			}
		}
		if c == nil {
			if explain {
				return refused("move_allocation_command", fmt.Sprintf("shard %d not found", a.shard))
			}
			return Verdict{}, nil, wire.IllegalArgument(fmt.Sprintf("[move_allocation] can't move %d, failed to find it on node %s", a.shard, from.DiscoString()))
		}
		if c.State != model.StateStarted {
			if explain {
				return refused("move_allocation_command", fmt.Sprintf("shard %d has not been started", a.shard))
			}
			return Verdict{}, nil, wire.IllegalArgument(fmt.Sprintf("[move_allocation] can't move %d, shard is not started (state = %s]", a.shard, c.State))
		}
		v := s.CanAllocate(c.Sh, c, to, true, true)
		if v.Typ == DecNo {
			s.Res.MovesRefused++
			if explain {
				return v, nil, nil
			}
			return v, nil, wire.IllegalArgument(fmt.Sprintf("[move_allocation] can't move %d, from %s, to %s, since its not allowed, reason: %s",
				a.shard, from.DiscoString(), to.DiscoString(), v.multiString()))
		}
		// A THROTTLE is accepted, as OpenSearch does "since the user wants it"; the recovery queues.
		// The copy counts on its target at once, and no longer on its source, for the commands
		// after it in the same request, as OpenSearch's RoutingNodes count a relocation.
		s.RelocatePlaced(c, to, model.RelocExternal)
		return v, c, nil
	case "cancel":
		n, ix, err := s.commandNodeIndex(a)
		if err != nil {
			return Verdict{}, nil, err
		}
		var c *model.ShardCopy
		if a.shard >= 0 && a.shard < len(ix.Shards) {
			c = ix.Shards[a.shard].OnNode(n)
		}
		if c == nil {
			why := fmt.Sprintf("can't cancel %d, failed to find it on node %s", a.shard, n.DiscoString())
			if explain {
				return refused("cancel_allocation_command", why)
			}
			return Verdict{}, nil, wire.IllegalArgument("[cancel_allocation] " + why)
		}
		onTarget := c.Target == n
		stateName := strings.ToLower(c.State.String())
		if onTarget {
			stateName = "initializing"
		}
		if c.Primary && !a.allowPrimary && !onTarget {
			why := fmt.Sprintf("can't cancel %d on node %s, shard is primary and %s", a.shard, n.DiscoString(), stateName)
			if explain {
				return refused("cancel_allocation_command", why)
			}
			return Verdict{}, nil, wire.IllegalArgument("[cancel_allocation] " + why)
		}
		if onTarget {
			s.CancelRecovery(c.Rec)
		} else {
			s.failCopy(c, "REROUTE_CANCELLED")
		}
		v := Verdict{explain: true}
		v.add(DecYes, "cancel_allocation_command", func() string {
			return fmt.Sprintf("shard %d on node %s can be cancelled", a.shard, n.DiscoString())
		})
		return v, nil, nil
	default:
		return s.applyAllocate(name, a, explain)
	}
}

// commandNodeIndex resolves the node and the index a cancel or allocate command names, node first.
func (s *Allocator) commandNodeIndex(a commandArgs) (*model.Node, *model.Index, *wire.APIError) {
	n, err := s.ResolveNode(a.node)
	if err != nil {
		return nil, nil, err
	}
	ix, ok := s.ByIndex[a.index]
	if !ok {
		return nil, nil, wire.IndexNotFound(a.index)
	}
	return n, ix, nil
}

// applyAllocate runs allocate_replica, allocate_empty_primary and allocate_stale_primary.
func (s *Allocator) applyAllocate(name string, a commandArgs, explain bool) (Verdict, *model.ShardCopy, *wire.APIError) {
	reject := func(why string) (Verdict, *model.ShardCopy, *wire.APIError) {
		if explain {
			v := Verdict{explain: true}
			v.add(DecNo, name+"_allocation_command", func() string { return why })
			return v, nil, nil
		}
		return Verdict{}, nil, wire.IllegalArgument("[" + name + "] " + why)
	}
	n, ix, err := s.commandNodeIndex(a)
	if err != nil {
		return Verdict{}, nil, err
	}
	if a.shard < 0 || a.shard >= len(ix.Shards) {
		return Verdict{}, nil, &wire.APIError{Status: 404, Body: wire.ErrorBody("shard_not_found_exception",
			"no such shard", wire.Object{{"index", ix.Name}, {"shard", strconv.Itoa(a.shard)}, {"index_uuid", ix.UUID}})}
	}
	sh := ix.Shards[a.shard]
	p := sh.Primary()
	var c *model.ShardCopy
	switch name {
	case "allocate_replica":
		if p == nil || p.State == model.StateUnassigned {
			return reject(fmt.Sprintf("trying to allocate a replica shard [%s][%d], while corresponding primary shard is still unassigned", ix.Name, a.shard))
		}
		for _, x := range sh.Copies {
			if !x.Primary && x.State == model.StateUnassigned {
				c = x
				break
			}
		}
		if c == nil {
			return reject(fmt.Sprintf("all copies of [%s][%d] are already assigned. Use the move allocation command instead", ix.Name, a.shard))
		}
	case "allocate_empty_primary", "allocate_stale_primary":
		if p == nil || p.State != model.StateUnassigned {
			return reject(fmt.Sprintf("primary [%s][%d] is already assigned", ix.Name, a.shard))
		}
		if name == "allocate_stale_primary" {
			// Copies lost with a node are gone in this model, so no node holds stale data.
			return reject(fmt.Sprintf("No data for shard [%d] of index [%s] found on node [%s]", a.shard, ix.Name, n.Name))
		}
		if !a.acceptDataLoss {
			return reject(fmt.Sprintf("allocating an empty primary for [%s][%d] can result in data loss. Please confirm by setting the accept_data_loss parameter to true", ix.Name, a.shard))
		}
		c = p
	}
	v := s.CanAllocate(sh, c, n, true, true)
	if v.Typ == DecNo {
		if explain {
			return v, nil, nil
		}
		return v, nil, wire.IllegalArgument(fmt.Sprintf("[%s] allocation of [%s][%d] on node %s is not allowed, reason: %s",
			name, ix.Name, a.shard, n.DiscoString(), v.multiString()))
	}
	c.LostData = false
	s.Initialize(c, n, true)
	return v, nil, nil
}

// failCopy takes a copy off its node, as RoutingNodes.failShard: a relocation stops, a failed primary
// hands over to an active replica, and the copy waits unassigned for the allocator.
func (s *Allocator) failCopy(c *model.ShardCopy, reason string) {
	if c.Rec != nil {
		s.Recoveries = slices.DeleteFunc(s.Recoveries, func(x *model.Recovery) bool { return x == c.Rec })
		c.Rec = nil
	}
	wasPrimary := c.Primary
	c.State, c.Node, c.AllocID, c.Target, c.TargetAllocID = model.StateUnassigned, nil, "", nil, ""
	c.UnassignedReason, c.UnassignedAt, c.DelayedUntil, c.External = reason, s.NowLocked(), s.NowLocked(), false
	c.ResetCounters()
	if wasPrimary {
		if p := model.FirstActive(c.Sh); p != nil {
			p.Primary, c.Primary = true, false
			c.Sh.Term++
		} else {
			c.LostData = true
		}
	}
	s.Changed()
}

// routingSnapshot saves what reroute commands may change so a failed or dry-run list can be undone.
type routingSnapshot struct {
	shards    map[*model.Shard]model.Shard
	copies    map[*model.ShardCopy]model.ShardCopy
	hadActive map[*model.Shard]bool
	recs      []*model.Recovery
	recSeq    int64
	version   int64
	res       model.Result
}

func newRoutingSnapshot(s *Allocator) *routingSnapshot {
	return &routingSnapshot{
		shards: map[*model.Shard]model.Shard{}, copies: map[*model.ShardCopy]model.ShardCopy{}, hadActive: map[*model.Shard]bool{},
		recs: slices.Clone(s.Recoveries), recSeq: s.RecSeq, version: s.StateVersion, res: s.Res,
	}
}

func (rs *routingSnapshot) save(sh *model.Shard) {
	if _, ok := rs.shards[sh]; ok {
		return
	}
	rs.shards[sh] = *sh
	rs.hadActive[sh] = model.FirstActive(sh) != nil
	for _, c := range sh.Copies {
		rs.copies[c] = *c
	}
}

func (rs *routingSnapshot) restore(s *Allocator) {
	for sh, v := range rs.shards {
		*sh = v
	}
	for c, v := range rs.copies {
		*c = v
	}
	s.Recoveries, s.RecSeq, s.StateVersion = rs.recs, rs.recSeq, rs.version
	violations, refused := s.Res.Violations, s.Res.MovesRefused
	s.Res = rs.res
	s.Res.Violations = violations[:len(rs.res.Violations)]
	// A refusal is counted whether or not the request is rolled back: a dry run is how a balancer
	// asks, and a refused move is what the count is for.
	s.Res.MovesRefused = refused
	s.Refresh()
}

// checkCycleInvariants counts an accepted reroute call that started moves relocations. A balancer
// acts once per cycle (a tick), with all of its moves in one call and within its budget: a second
// call in the same tick is two movers acting on the cluster at once, and more relocations than
// MaxMovesPerCycle is a budget breached.
func (s *Allocator) checkCycleInvariants(moves int) {
	if moves == 0 {
		return
	}
	s.TickReroutes++
	s.TickMoves += moves
	if s.TickReroutes > 1 {
		s.Violate(fmt.Sprintf("reroute call %d of this cycle started %d relocations: two movers acting on the cluster at once", s.TickReroutes, moves))
	}
	if s.MaxMovesPerCycle > 0 && s.TickMoves > s.MaxMovesPerCycle {
		s.Violate(fmt.Sprintf("%d relocations started by reroute this cycle, over max_moves_per_cycle %d", s.TickMoves, s.MaxMovesPerCycle))
	}
}
