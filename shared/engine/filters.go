package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/shardwise/shardwise/shared/allocation"
	"github.com/shardwise/shardwise/shared/cluster"
	"github.com/shardwise/shardwise/shared/state"
)

const excludeSetting = "index.routing.allocation.exclude._name"

// errFilterHeld: a record of the same exclusion exists, written by an earlier cycle or by an
// invocation racing this one. The filter is in place or being put there; adding it twice would
// only record the exclusion as its own "original" value.
var errFilterHeld = errors.New("an allocation filter excluding this node from the index is already recorded")

// filterRecord remembers an exclusion shardwise added until the copies have left the node and the
// filter is removed again. Original is the value it appended to, for the audit trail.
type filterRecord struct {
	Index    string `json:"index"`
	Node     string `json:"node"`
	NodeName string `json:"node_name"`
	Shard    int    `json:"shard"`
	Original string `json:"original"`
}

func filterKey(index, nodeName string) string { return "filter#" + index + "#" + nodeName }

func (e *Engine) addExclusion(ctx context.Context, api ClusterAPI, name string, m allocation.Move) error {
	cur, err := api.IndexSettings(ctx, m.Index)
	if err != nil {
		return fmt.Errorf("allocation filter on %s: %w", m.Index, err)
	}
	orig := cur[excludeSetting]
	rec := filterRecord{Index: m.Index, Node: m.From, NodeName: m.FromName, Shard: m.Shard, Original: orig}
	// Record first: if the settings call then fails, cleanup restores the original (a no-op).
	if _, err := state.PutJSON(ctx, e.Store, state.Key{PK: pk(name), SK: filterKey(m.Index, m.FromName)}, rec, state.Condition{IfAbsent: true}, 0, e.now()); err != nil {
		if errors.Is(err, state.ErrConflict) {
			return errFilterHeld
		}
		return fmt.Errorf("allocation filter on %s: record: %w", m.Index, err)
	}
	value := m.FromName
	if orig != "" {
		value = orig + "," + m.FromName
	}
	if err := api.PutIndexSettings(ctx, m.Index, map[string]any{excludeSetting: value}); err != nil {
		return fmt.Errorf("allocation filter on %s: %w", m.Index, err)
	}
	return nil
}

// cleanupFilters removes the exclusions shardwise added once no copy of the index remains on (or is
// relocating off) the excluded node, restoring the value that was there before.
//
// Changing an index's exclusions is a read-modify-write of its settings, so it happens only under
// the cluster's lease: leased says the caller holds it; otherwise cleanup takes it when there is
// anything to clean, and leaves the cleanup to the holder when another invocation has it.
func (e *Engine) cleanupFilters(ctx context.Context, api ClusterAPI, name string, snap *cluster.Snapshot, leased bool) error {
	items, err := e.Store.Query(ctx, pk(name), "filter#")
	if err != nil {
		return fmt.Errorf("filter cleanup: %w", err)
	}
	if len(items) == 0 {
		return nil
	}
	if !leased {
		release, err := e.takeLease(ctx, name, "filter cleanup")
		if held, ok := errors.AsType[*LeaseHeldError](err); ok {
			e.log().Info("filter cleanup left to the lease holder", "cluster", name, "reason", held.Error())
			return nil
		}
		if err != nil {
			return fmt.Errorf("filter cleanup: %w", err)
		}
		defer release()
	}
	for _, it := range items {
		rec, err := state.DecodeJSON[filterRecord](it.Value)
		if err != nil {
			return fmt.Errorf("filter cleanup %s: %w", it.Key.SK, err)
		}
		left := true
		for _, c := range snap.Copies {
			if c.Index == rec.Index && c.Node == rec.Node {
				left = false
				break
			}
		}
		if !left {
			continue
		}
		cur, err := api.IndexSettings(ctx, rec.Index)
		if err != nil {
			return fmt.Errorf("filter cleanup %s: %w", rec.Index, err)
		}
		if err := api.PutIndexSettings(ctx, rec.Index, map[string]any{excludeSetting: withoutName(cur[excludeSetting], rec.NodeName)}); err != nil {
			return fmt.Errorf("filter cleanup %s: %w", rec.Index, err)
		}
		if err := e.Store.Delete(ctx, it.Key, state.Condition{IfVersion: it.Version}); err != nil {
			if !errors.Is(err, state.ErrConflict) {
				return fmt.Errorf("filter cleanup %s: %w", rec.Index, err)
			}
			// Another invocation rewrote the record after this one read it; it owns the cleanup.
			e.log().Info("allocation filter record changed by another invocation; leaving it to that one",
				"cluster", name, "index", rec.Index, "node", rec.NodeName, "error", err)
			continue
		}
		e.log().Info("allocation filter removed", "cluster", name, "index", rec.Index, "node", rec.NodeName,
			"reason", fmt.Sprintf("no copy of %s remains on %s", rec.Index, rec.NodeName))
	}
	return nil
}

// withoutName removes the node shardwise appended from the comma list, keeping every other name:
// the operator's (shardwise only ever appends) and other exclusions shardwise still holds. nil
// deletes the setting in OpenSearch when nothing is left.
func withoutName(list, node string) any {
	var keep []string
	for _, v := range strings.Split(list, ",") {
		if v = strings.TrimSpace(v); v != "" && v != node {
			keep = append(keep, v)
		}
	}
	if len(keep) == 0 {
		return nil
	}
	return strings.Join(keep, ",")
}
