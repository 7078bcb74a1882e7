package allocation

import (
	"fmt"
	"path"
	"strings"

	"github.com/shardwise/shardwise/shared/cluster"
)

// sameShard: no two copies of a shard on one node, nor on one host when
// cluster.routing.allocation.same_shard.host is set.
type sameShard struct{}

func (sameShard) Name() string { return "same_shard" }

func (d sameShard) CanAllocate(v *View, c *cluster.Copy, t *cluster.Node) Verdict {
	if v.Holds(t.ID, c.ID()) {
		return Verdict{Decider: d.Name(), Decision: No, Reason: fmt.Sprintf("%s already holds a copy of %s[%d]", t.Name, c.Index, c.Shard)}
	}
	if v.Snap.Settings.SameShardHost && t.Host != "" {
		for _, n := range v.DataNodes() {
			if n.ID != t.ID && n.Host == t.Host && v.Holds(n.ID, c.ID()) {
				return Verdict{Decider: d.Name(), Decision: No, Reason: fmt.Sprintf("host %s (node %s) already holds a copy of %s[%d]", t.Host, n.Name, c.Index, c.Shard)}
			}
		}
	}
	return yes(d.Name(), "no copy of %s[%d] on %s", c.Index, c.Shard, t.Name)
}

// exclusion: nodes that are not data nodes, or are being drained or shut down, take nothing.
type exclusion struct{}

func (exclusion) Name() string { return "node_exclusion" }

func (d exclusion) CanAllocate(v *View, _ *cluster.Copy, t *cluster.Node) Verdict {
	if !t.IsData() {
		return Verdict{Decider: d.Name(), Decision: No, Reason: fmt.Sprintf("%s has no data role", t.Name)}
	}
	if v.excluded[t.ID] {
		return Verdict{Decider: d.Name(), Decision: No, Reason: fmt.Sprintf("%s is excluded (draining or shutting down)", t.Name)}
	}
	return yes(d.Name(), "%s is a data node in service", t.Name)
}

func (d exclusion) CanRemain(v *View, _ *cluster.Copy, n *cluster.Node) Verdict {
	if v.excluded[n.ID] {
		return Verdict{Decider: d.Name(), Decision: No, Reason: fmt.Sprintf("%s is excluded (draining or shutting down)", n.Name)}
	}
	return yes(d.Name(), "%s is in service", n.Name)
}

// filter: index and cluster allocation filters (include / exclude / require).
type filter struct{}

func (filter) Name() string { return "filter" }

func (d filter) CanAllocate(v *View, c *cluster.Copy, t *cluster.Node) Verdict {
	if ix := v.Index(c.Index); ix != nil {
		if ok, why := filtersAllow(ix.Filters, t); !ok {
			return Verdict{Decider: d.Name(), Decision: No, Reason: fmt.Sprintf("index %s: %s", c.Index, why)}
		}
	}
	if ok, why := filtersAllow(v.Snap.Settings.Filters, t); !ok {
		return Verdict{Decider: d.Name(), Decision: No, Reason: "cluster: " + why}
	}
	return yes(d.Name(), "%s matches the allocation filters", t.Name)
}

func (d filter) CanRemain(v *View, c *cluster.Copy, n *cluster.Node) Verdict {
	return d.CanAllocate(v, c, n)
}

// filtersAllow applies OpenSearch's filter semantics: every require attribute must match, at least one
// include value must match when include is set, and no exclude value may match.
func filtersAllow(f cluster.Filters, n *cluster.Node) (bool, string) {
	for attr, values := range f.Require {
		val, _ := n.Attr(attr)
		if !matchAny(values, val) {
			return false, fmt.Sprintf("require %s=%q does not match %s (%q)", attr, values, n.Name, val)
		}
	}
	if len(f.Include) > 0 {
		matched := false
		for attr, values := range f.Include {
			if val, ok := n.Attr(attr); ok && matchAny(values, val) {
				matched = true
				break
			}
		}
		if !matched {
			return false, fmt.Sprintf("%s matches no include filter", n.Name)
		}
	}
	for attr, values := range f.Exclude {
		if val, ok := n.Attr(attr); ok && matchAny(values, val) {
			return false, fmt.Sprintf("exclude %s=%q matches %s", attr, values, n.Name)
		}
	}
	return true, ""
}

func matchAny(list, value string) bool {
	for _, pat := range strings.Split(list, ",") {
		pat = strings.TrimSpace(pat)
		if pat == "" {
			continue
		}
		if ok, err := path.Match(pat, value); err == nil && ok {
			return true
		}
	}
	return false
}

// awareness: copies of a shard spread over the values of each awareness attribute; a value may hold
// at most ceil(copies / values) of them.
type awareness struct{}

func (awareness) Name() string { return "awareness" }

func (d awareness) CanAllocate(v *View, c *cluster.Copy, t *cluster.Node) Verdict {
	ix := v.Index(c.Index)
	if ix == nil || len(v.Snap.Settings.AwarenessAttributes) == 0 {
		return yes(d.Name(), "no awareness attributes")
	}
	copies := 1 + ix.Replicas
	for _, attr := range v.Snap.Settings.AwarenessAttributes {
		tv, ok := t.Attributes[attr]
		if !ok {
			return Verdict{Decider: d.Name(), Decision: No, Reason: fmt.Sprintf("%s has no awareness attribute %s", t.Name, attr)}
		}
		values := map[string]bool{}
		for _, fv := range v.Snap.Settings.ForcedAwareness[attr] {
			values[fv] = true
		}
		inValue := 0
		for _, n := range v.DataNodes() {
			nv, ok := n.Attributes[attr]
			if !ok {
				continue
			}
			values[nv] = true
			if nv == tv && v.Holds(n.ID, c.ID()) && n.ID != c.Node {
				inValue++
			}
		}
		limit := (copies + len(values) - 1) / max(len(values), 1)
		if inValue+1 > limit {
			return Verdict{Decider: d.Name(), Decision: No, Value: float64(inValue + 1), Limit: float64(limit),
				Reason: fmt.Sprintf("%s=%s would hold %d copies of %s[%d], over %d", attr, tv, inValue+1, c.Index, c.Shard, limit)}
		}
	}
	return yes(d.Name(), "copies stay spread over %v", v.Snap.Settings.AwarenessAttributes)
}

// disk: the target's disk use after receiving the copy must stay under the high watermark.
type disk struct{}

func (disk) Name() string { return "disk_watermark" }

func (d disk) CanAllocate(v *View, c *cluster.Copy, t *cluster.Node) Verdict {
	if t.DiskTotalBytes <= 0 {
		return yes(d.Name(), "%s reports no disk size", t.Name)
	}
	after := v.diskUsed[t.ID] + c.SizeBytes
	s := v.Snap.Settings
	if s.DiskHighWatermarkFreeBytes > 0 {
		free := t.DiskTotalBytes - after
		if free < s.DiskHighWatermarkFreeBytes {
			return Verdict{Decider: d.Name(), Decision: No, Value: float64(free), Limit: float64(s.DiskHighWatermarkFreeBytes),
				Reason: fmt.Sprintf("%s would have %d bytes free, under the high watermark of %d", t.Name, free, s.DiskHighWatermarkFreeBytes)}
		}
		return yes(d.Name(), "%s keeps %d bytes free", t.Name, free)
	}
	wm := s.DiskHighWatermark
	if wm <= 0 {
		wm = 0.9 // OpenSearch's default cluster.routing.allocation.disk.watermark.high
	}
	ratio := float64(after) / float64(t.DiskTotalBytes)
	if ratio > wm {
		return Verdict{Decider: d.Name(), Decision: No, Value: ratio, Limit: wm,
			Reason: fmt.Sprintf("%s disk would be %.1f%% used, over the high watermark %.1f%%", t.Name, ratio*100, wm*100)}
	}
	return Verdict{Decider: d.Name(), Decision: Yes, Value: ratio, Limit: wm,
		Reason: fmt.Sprintf("%s disk would be %.1f%% used, under %.1f%%", t.Name, ratio*100, wm*100)}
}

// heap: the target's estimated heap after receiving the copy must stay under the limit. NO, never
// NOT_PREFERRED: a node out of memory is worse than a slow one.
type heap struct{}

func (heap) Name() string { return "heap" }

func (d heap) CanAllocate(v *View, c *cluster.Copy, t *cluster.Node) Verdict {
	if t.HeapMaxBytes <= 0 {
		return yes(d.Name(), "%s reports no heap size", t.Name)
	}
	src := c.Node
	per := v.heapPerCopy(src)
	if per == 0 {
		per = v.heapPerCopy(t.ID)
	}
	ratio := (v.heapUsed[t.ID] + per) / float64(t.HeapMaxBytes)
	if ratio > v.Cfg.HeapLimit {
		return Verdict{Decider: d.Name(), Decision: No, Value: ratio, Limit: v.Cfg.HeapLimit,
			Reason: fmt.Sprintf("%s heap would be %.0f%% after the move, over %.0f%%", t.Name, ratio*100, v.Cfg.HeapLimit*100)}
	}
	return Verdict{Decider: d.Name(), Decision: Yes, Value: ratio, Limit: v.Cfg.HeapLimit,
		Reason: fmt.Sprintf("%s heap would be %.0f%%, under %.0f%%", t.Name, ratio*100, v.Cfg.HeapLimit*100)}
}

func (d heap) CanRemain(v *View, _ *cluster.Copy, n *cluster.Node) Verdict {
	if n.HeapMaxBytes <= 0 {
		return yes(d.Name(), "%s reports no heap size", n.Name)
	}
	ratio := v.heapUsed[n.ID] / float64(n.HeapMaxBytes)
	if ratio > v.Cfg.HeapLimit {
		return Verdict{Decider: d.Name(), Decision: No, Value: ratio, Limit: v.Cfg.HeapLimit,
			Reason: fmt.Sprintf("%s heap is %.0f%%, over %.0f%%", n.Name, ratio*100, v.Cfg.HeapLimit*100)}
	}
	return Verdict{Decider: d.Name(), Decision: Yes, Value: ratio, Limit: v.Cfg.HeapLimit,
		Reason: fmt.Sprintf("%s heap is %.0f%%, under %.0f%%", n.Name, ratio*100, v.Cfg.HeapLimit*100)}
}

// writeLoad: a hot target, or one the shard's load would push past the allocation utilization, is
// NOT_PREFERRED (it could start queueing).
type writeLoad struct{}

func (writeLoad) Name() string { return "write_load" }

func (d writeLoad) CanAllocate(v *View, c *cluster.Copy, t *cluster.Node) Verdict {
	if v.hot[t.ID] {
		return Verdict{Decider: d.Name(), Decision: NotPreferred, Value: v.Utilization(t.ID), Limit: v.Cfg.HotUtilization,
			Reason: fmt.Sprintf("%s is a write hotspot", t.Name)}
	}
	if t.Write.Threads <= 0 {
		return Verdict{Decider: d.Name(), Decision: NotPreferred, Reason: fmt.Sprintf("%s reports no WRITE pool size", t.Name)}
	}
	load := v.ShardLoad(c.ID())
	after := (v.WriteLoad(t.ID) + load) / float64(t.Write.Threads)
	limit := v.Cfg.AllocationUtilization
	if after > limit {
		return Verdict{Decider: d.Name(), Decision: NotPreferred, Value: after, Limit: limit,
			Reason: fmt.Sprintf("%s WRITE utilization would be %.0f%% with %.2f threads more, over %.0f%%", t.Name, after*100, load, limit*100)}
	}
	return Verdict{Decider: d.Name(), Decision: Yes, Value: after, Limit: limit,
		Reason: fmt.Sprintf("%s WRITE utilization would be %.0f%%, under %.0f%%", t.Name, after*100, limit*100)}
}

// indexBalance: a target already holding ceil(ceil(copies/eligible) × 1.5) copies of the index is
// NOT_PREFERRED, so an index's shards spread over as many nodes as they can.
type indexBalance struct{}

func (indexBalance) Name() string { return "index_balance" }

func (d indexBalance) CanAllocate(v *View, c *cluster.Copy, t *cluster.Node) Verdict {
	limit := v.IndexBalanceLimit(c.Index)
	have := v.IndexCopies(c.Index, t.ID)
	if have >= limit {
		return Verdict{Decider: d.Name(), Decision: NotPreferred, Value: float64(have), Limit: float64(limit),
			Reason: fmt.Sprintf("%s already holds %d copies of %s, limit %d", t.Name, have, c.Index, limit)}
	}
	return Verdict{Decider: d.Name(), Decision: Yes, Value: float64(have), Limit: float64(limit),
		Reason: fmt.Sprintf("%s holds %d copies of %s, under %d", t.Name, have, c.Index, limit)}
}
