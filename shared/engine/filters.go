package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

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
	Index    string    `json:"index"`
	Node     string    `json:"node"`
	NodeName string    `json:"node_name"`
	Shard    int       `json:"shard"`
	Original string    `json:"original"`
	AddedAt  time.Time `json:"added_at"`
}

// filterMaxAge is how long an exclusion may stand whose copies cannot leave the node (no other
// node takes them): past it the filter is removed, so it never outlives its purpose. An hour lets
// a 100 GiB shard relocate at OpenSearch's default 40 MiB/s recovery rate (about 42 minutes).
const filterMaxAge = time.Hour

// SettingsEditor is what allocation filtering needs from a cluster: an index's settings, read and
// written.
type SettingsEditor interface {
	IndexSettings(ctx context.Context, index string) (map[string]string, error)
	PutIndexSettings(ctx context.Context, index string, settings map[string]any) error
}

func (e *Engine) addExclusion(ctx context.Context, api SettingsEditor, name string, m allocation.Move) error {
	cur, err := api.IndexSettings(ctx, m.Index)
	if err != nil {
		return fmt.Errorf("allocation filter on %s: %w", m.Index, err)
	}
	orig := cur[excludeSetting]
	rec := filterRecord{Index: m.Index, Node: m.From, NodeName: m.FromName, Shard: m.Shard, Original: orig, AddedAt: e.now()}
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

// cleanupFilters removes the exclusions shardwise added, restoring the value that was there
// before, once one of these holds:
//   - no copy of the index remains on (or is relocating off) the excluded node: done;
//   - the node's hotspot is over (detect's last sample saw it cool) and nothing is relocating off
//     it: the rest of the index may stay;
//   - the filter is older than filterMaxAge: its copies cannot leave;
//   - the index is gone (404): only the record is dropped.
//
// Changing an index's exclusions is a read-modify-write of its settings, so it happens only under
// the cluster's lease: leased says the caller holds it; otherwise cleanup takes it when there is
// anything to clean, and leaves the cleanup to the holder when another invocation has it.
func (e *Engine) cleanupFilters(ctx context.Context, api SettingsEditor, name string, snap *cluster.Snapshot, leased bool) error {
	items, err := e.Store.Query(ctx, pk(name), filterPrefix)
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
	mem, _, err := state.GetJSON[allocation.Memory](ctx, e.Store, state.Key{PK: pk(name), SK: memoryKey})
	if err != nil && !errors.Is(err, state.ErrNotFound) {
		return fmt.Errorf("filter cleanup: %w", err)
	}
	var errs []error
	for _, it := range items {
		rec, err := state.DecodeJSON[filterRecord](it.Value)
		if err != nil {
			errs = append(errs, fmt.Errorf("filter cleanup %s: %w", it.Key.SK, err))
			continue
		}
		why := e.filterDone(rec, snap, mem)
		if why == "" {
			continue
		}
		if err := e.removeFilter(ctx, api, name, it, rec, why); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// filterDone says why rec's exclusion should come off now, or "" to keep it.
func (e *Engine) filterDone(rec filterRecord, snap *cluster.Snapshot, mem allocation.Memory) string {
	remaining, relocating := 0, 0
	for _, c := range snap.Copies {
		if c.Index == rec.Index && c.Node == rec.Node {
			remaining++
			if c.State == cluster.StateRelocating {
				relocating++
			}
		}
	}
	age := e.now().Sub(rec.AddedAt)
	// A record from before AddedAt existed has no age: treat it as new rather than expired.
	if rec.AddedAt.IsZero() {
		age = 0
	}
	settle := 2 * e.Config.RefreshPeriod.Std()
	switch {
	case remaining == 0:
		return fmt.Sprintf("no copy of %s remains on %s", rec.Index, rec.NodeName)
	case age >= filterMaxAge:
		return fmt.Sprintf("%d copies of %s could not leave %s in %s (limit %s)", remaining, rec.Index, rec.NodeName, age.Round(time.Second), filterMaxAge)
	case relocating == 0 && age >= settle && mem.Streaks[rec.Node].Count == 0:
		return fmt.Sprintf("the hotspot on %s is over and nothing of %s is relocating off it", rec.NodeName, rec.Index)
	}
	return ""
}

// removeFilter takes shardwise's name off the index's exclusions and drops the record.
func (e *Engine) removeFilter(ctx context.Context, api SettingsEditor, name string, it state.Item, rec filterRecord, why string) error {
	cur, err := api.IndexSettings(ctx, rec.Index)
	switch {
	case isNotFound(err):
		why = fmt.Sprintf("index %s no longer exists", rec.Index)
	case err != nil:
		return fmt.Errorf("filter cleanup %s: %w", rec.Index, err)
	default:
		if err := api.PutIndexSettings(ctx, rec.Index, map[string]any{excludeSetting: withoutName(cur[excludeSetting], rec.NodeName)}); err != nil {
			if !isNotFound(err) {
				return fmt.Errorf("filter cleanup %s: %w", rec.Index, err)
			}
			why = fmt.Sprintf("index %s no longer exists", rec.Index)
		}
	}
	if err := e.Store.Delete(ctx, it.Key, state.Condition{IfVersion: it.Version}); err != nil {
		if !errors.Is(err, state.ErrConflict) {
			return fmt.Errorf("filter cleanup %s: %w", rec.Index, err)
		}
		// Another invocation rewrote the record after this one read it; it owns the cleanup.
		e.log().Info("allocation filter record changed by another invocation; leaving it to that one",
			"cluster", name, "index", rec.Index, "node", rec.NodeName, "error", err)
		return nil
	}
	e.log().Info("allocation filter removed", "cluster", name, "index", rec.Index, "node", rec.NodeName, "reason", why)
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

// isNotFound reports whether err says the index does not exist.
func isNotFound(err error) bool { return errors.Is(err, ErrNotFound) }
