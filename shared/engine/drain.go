package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/shardwise/shardwise/shared/cluster"
	"github.com/shardwise/shardwise/shared/state"
)

// clusterExcludeSetting is OpenSearch's cluster-wide exclusion by node name. The nodes of
// allocation.excluded_nodes are drained through it, so that OpenSearch's own balancer agrees: a
// node that only shardwise's planner excludes would be drained by shardwise and filled again by
// OpenSearch, cycle after cycle.
const clusterExcludeSetting = "cluster.routing.allocation.exclude._name"

// drainSK records the names shardwise added to clusterExcludeSetting, and the value before.
const drainSK = "drain#cluster"

// ClusterSettingsEditor is what draining allocation.excluded_nodes needs from a cluster: its
// persistent settings, written. The cluster's current value comes with each sample.
type ClusterSettingsEditor interface {
	PutClusterSettings(ctx context.Context, settings map[string]any) error
}

// drainRecord is what shardwise added to clusterExcludeSetting.
type drainRecord struct {
	// Original is the value before shardwise's first addition, restored exactly once nothing of
	// shardwise's is left in it.
	Original string   `json:"original"`
	Added    []string `json:"added"`
}

// drainExcluded makes the cluster's own exclusion list name every node of allocation.excluded_nodes
// the sample knows, and takes off the names shardwise added for nodes no longer configured. The
// operator's entries are never touched. It changes snap's filters to what it wrote, so the plan
// made on this sample sees what OpenSearch now enforces. Dry-run changes nothing and logs what
// it would do; a cluster port without ClusterSettingsEditor only gets a warning.
func (e *Engine) drainExcluded(ctx context.Context, api SettingsEditor, name string, snap *cluster.Snapshot) error {
	var want []string
	for _, ref := range e.Config.Allocation.ExcludedNodes {
		if n := snap.NodeByRef(ref); n != nil && !slices.Contains(want, n.Name) {
			want = append(want, n.Name)
		}
	}
	key := state.Key{PK: pk(name), SK: drainSK}
	rec, version, err := state.GetJSON[drainRecord](ctx, e.Store, key)
	if err != nil && !errors.Is(err, state.ErrNotFound) {
		return fmt.Errorf("drain excluded nodes: %w", err)
	}
	cur := snap.Settings.Filters.Exclude["_name"]
	have := names(cur)
	var add, drop []string
	for _, n := range want {
		if !slices.Contains(have, n) {
			add = append(add, n)
		}
	}
	for _, n := range rec.Added {
		if !slices.Contains(want, n) {
			drop = append(drop, n)
		}
	}
	if len(add) == 0 && len(drop) == 0 {
		return nil
	}
	if e.Config.Safety.DryRun {
		e.log().Info("dry-run: would change the cluster's exclusions to drain allocation.excluded_nodes", "cluster", name,
			"setting", clusterExcludeSetting, "would_add", add, "would_remove", drop)
		return nil
	}
	editor, ok := api.(ClusterSettingsEditor)
	if !ok {
		e.log().Warn("allocation.excluded_nodes: the cluster port cannot write cluster settings; set "+clusterExcludeSetting+" yourself",
			"cluster", name, "nodes", add)
		return nil
	}
	l, err := e.takeLease(ctx, name, "drain excluded nodes")
	if held, ok := errors.AsType[*LeaseHeldError](err); ok {
		e.log().Info("drain of excluded nodes left to the next cycle", "cluster", name, "reason", held.Error())
		return nil
	}
	if err != nil {
		return fmt.Errorf("drain excluded nodes: %w", err)
	}
	defer l.Release()
	if version == 0 {
		rec.Original = cur
	}
	value := cur
	for _, n := range drop {
		value = removeLast(value, n)
		rec.Added = slices.DeleteFunc(rec.Added, func(s string) bool { return s == n })
	}
	for _, n := range add {
		value = appended(value, n)
		rec.Added = append(rec.Added, n)
	}
	var setting any = value
	if len(rec.Added) == 0 {
		// Nothing of shardwise's is left: the value before comes back exactly.
		value, setting = rec.Original, rec.Original
		if rec.Original == "" {
			setting = nil
		}
	}
	// Record first: if the settings call fails, the next cycle still knows what was there before.
	if _, err := state.PutJSON(ctx, e.Store, key, rec, condFor(version), 0, e.now()); err != nil {
		return fmt.Errorf("drain excluded nodes: record: %w", err)
	}
	if err := editor.PutClusterSettings(ctx, map[string]any{clusterExcludeSetting: setting}); err != nil {
		return fmt.Errorf("drain excluded nodes: %w", err)
	}
	if snap.Settings.Filters.Exclude == nil {
		snap.Settings.Filters.Exclude = map[string]string{}
	}
	if value == "" {
		delete(snap.Settings.Filters.Exclude, "_name")
	} else {
		snap.Settings.Filters.Exclude["_name"] = value
	}
	e.log().Info("cluster exclusions changed to drain allocation.excluded_nodes", "cluster", name,
		"setting", clusterExcludeSetting, "value", value, "added", add, "removed", drop)
	return nil
}
