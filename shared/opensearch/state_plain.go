package opensearch

import "bytes"

// plainClusterState reads the cluster state answer when it is in the plain form OpenSearch and the
// simulator give under clusterStateFilter (see decodeShardStatsPlain: only the names the filter
// keeps, each in its own case and at most once per object, strings of printable ASCII without
// escapes, null only where a string, bool or struct goes). Each index's settings are kept as
// their bytes, for flattenSettings, as the general decode keeps them. ok is false for anything
// else, and the caller then decodes the answer the general way; for an answer in the plain form
// both give the same clusterStateWire (TestPlainClusterState, FuzzDecodeLargeMatchesStd).
//
// The routing table lists every copy (30,000 at production size, 3 MB of the answer): decoding it
// by reflection was most of what a changed cluster state cost.
func plainClusterState(body []byte) (clusterStateWire, bool) {
	p := plainScanner{b: body}
	var (
		w    clusterStateWire
		seen uint8
		in   = make(interner)
	)
	ok := p.object(func(name []byte) bool {
		switch string(name) {
		case "version":
			return p.once(&seen, 1) && p.int64Into(&w.Version)
		case "state_uuid":
			return p.once(&seen, 2) && p.internInto(&w.StateUUID, in)
		case "nodes":
			w.Nodes = map[string]stateNodeWire{}
			return p.once(&seen, 4) && p.object(func(id []byte) bool {
				if _, dup := w.Nodes[string(id)]; dup {
					return false
				}
				var n stateNodeWire
				var seenN uint8
				if !p.object(func(name []byte) bool {
					switch string(name) {
					case "name":
						return p.once(&seenN, 1) && p.internInto(&n.Name, in)
					case "transport_address":
						return p.once(&seenN, 2) && p.internInto(&n.TransportAddress, in)
					case "attributes":
						n.Attributes = map[string]string{}
						return p.once(&seenN, 4) && p.object(func(key []byte) bool {
							if _, dup := n.Attributes[string(key)]; dup {
								return false
							}
							var v string
							if p.null() || !p.internInto(&v, in) {
								return false
							}
							n.Attributes[string(key)] = v
							return true
						}, false)
					}
					return false
				}, false) {
					return false
				}
				w.Nodes[string(id)] = n
				return true
			}, false)
		case "metadata":
			var seenM uint8
			return p.once(&seen, 8) && p.object(func(name []byte) bool {
				if string(name) != "indices" || !p.once(&seenM, 1) {
					return false
				}
				w.Metadata.Indices = map[string]indexMetaWire{}
				return p.object(func(index []byte) bool {
					if _, dup := w.Metadata.Indices[string(index)]; dup {
						return false
					}
					var m indexMetaWire
					var seenI uint8
					if !p.object(func(name []byte) bool {
						switch string(name) {
						case "state":
							return p.once(&seenI, 1) && p.internInto(&m.State, in)
						case "settings":
							if !p.once(&seenI, 2) || p.null() {
								return false
							}
							raw, ok := p.rawValue()
							// A copy: the memo keeps it, and must not keep the answer.
							m.Settings = bytes.Clone(raw)
							return ok
						}
						return false
					}, false) {
						return false
					}
					w.Metadata.Indices[string(index)] = m
					return true
				}, false)
			}, false)
		case "routing_table":
			var seenR uint8
			return p.once(&seen, 16) && p.object(func(name []byte) bool {
				if string(name) != "indices" || !p.once(&seenR, 1) {
					return false
				}
				w.RoutingTable.Indices = shardTable[routingCopyWire]{}
				return p.object(func(index []byte) bool {
					name := string(index)
					if _, dup := w.RoutingTable.Indices[name]; dup {
						return false
					}
					var shards map[string][]routingCopyWire
					var seenS uint8
					if !p.object(func(key []byte) bool {
						if string(key) != "shards" || !p.once(&seenS, 1) {
							return false
						}
						shards = map[string][]routingCopyWire{}
						return p.object(func(key []byte) bool {
							if _, dup := shards[string(key)]; dup {
								return false
							}
							copies := []routingCopyWire{}
							if !p.array(func() bool {
								var c routingCopyWire
								if !p.routingCopy(&c, in) {
									return false
								}
								copies = append(copies, c)
								return true
							}) {
								return false
							}
							shards[string(key)] = copies
							return true
						}, false)
					}, false) {
						return false
					}
					w.RoutingTable.Indices[name] = struct {
						Shards map[string][]routingCopyWire `json:"shards"`
					}{Shards: shards}
					return true
				}, false)
			}, false)
		}
		return false
	}, false)
	if !ok || !p.end() {
		return clusterStateWire{}, false
	}
	return w, true
}

// routingCopy reads one copy of the routing table into c.
func (p *plainScanner) routingCopy(c *routingCopyWire, in interner) bool {
	var seen uint8
	return p.object(func(name []byte) bool {
		switch string(name) {
		case "state":
			return p.once(&seen, 1) && p.internInto(&c.State, in)
		case "primary":
			return p.once(&seen, 2) && p.boolInto(&c.Primary)
		case "searchOnly":
			return p.once(&seen, 4) && p.boolInto(&c.SearchOnly)
		case "node":
			return p.once(&seen, 8) && p.internInto(&c.Node, in)
		case "relocating_node":
			return p.once(&seen, 16) && p.internInto(&c.RelocatingNode, in)
		case "unassigned_info":
			var seenU uint8
			return p.once(&seen, 32) && p.object(func(name []byte) bool {
				return string(name) == "reason" && p.once(&seenU, 1) && p.internInto(&c.UnassignedInfo.Reason, in)
			}, true)
		}
		return false
	}, true)
}

// rawValue reads a value in the plain form (strings as str takes them, numbers as JSON writes
// them, any names, repeated or not) and returns its bytes, which alias the body.
func (p *plainScanner) rawValue() ([]byte, bool) {
	p.ws()
	start := p.i
	if !p.skipValue(0) {
		return nil, false
	}
	return p.b[start:p.i], true
}

// skipValue reads one value; depth bounds the nesting as the general decoder does.
func (p *plainScanner) skipValue(depth int) bool {
	if depth > 1000 {
		return false
	}
	p.ws()
	if p.i >= len(p.b) {
		return false
	}
	switch p.b[p.i] {
	case '{':
		return p.object(func([]byte) bool { return p.skipValue(depth + 1) }, false)
	case '[':
		return p.array(func() bool { return p.skipValue(depth + 1) })
	case '"':
		_, ok := p.str()
		return ok
	case 't', 'f', 'n':
		for _, lit := range [...]string{"true", "false", "null"} {
			if len(p.b)-p.i >= len(lit) && string(p.b[p.i:p.i+len(lit)]) == lit {
				p.i += len(lit)
				return p.delimited()
			}
		}
		return false
	default:
		return p.number()
	}
}

// number reads a JSON number.
func (p *plainScanner) number() bool {
	digits := func() int {
		n := 0
		for p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9' {
			p.i++
			n++
		}
		return n
	}
	if p.i < len(p.b) && p.b[p.i] == '-' {
		p.i++
	}
	start := p.i
	n := digits()
	if n == 0 || (n > 1 && p.b[start] == '0') {
		return false
	}
	if p.i < len(p.b) && p.b[p.i] == '.' {
		p.i++
		if digits() == 0 {
			return false
		}
	}
	if p.i < len(p.b) && (p.b[p.i] == 'e' || p.b[p.i] == 'E') {
		p.i++
		if p.i < len(p.b) && (p.b[p.i] == '+' || p.b[p.i] == '-') {
			p.i++
		}
		if digits() == 0 {
			return false
		}
	}
	return p.delimited()
}
