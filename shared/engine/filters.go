package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/shardwise/shardwise/shared/allocation"
	"github.com/shardwise/shardwise/shared/cluster"
	"github.com/shardwise/shardwise/shared/config"
	"github.com/shardwise/shardwise/shared/state"
)

const excludeSetting = "index.routing.allocation.exclude._name"

// errFilterHeld: a record of the same exclusion exists, written by an earlier cycle or by an
// invocation racing this one. The filter is in place or being put there; adding it twice would
// only record the exclusion as its own "original" value.
var errFilterHeld = errors.New("an allocation filter excluding this node from the index is already recorded")

// filterRecord remembers an exclusion shardwise added until the filter is removed again
// (cleanupFilters). Original is the value it appended to, for the audit trail.
type filterRecord struct {
	Index    string    `json:"index"`
	Node     string    `json:"node"`
	NodeName string    `json:"node_name"`
	Shard    int       `json:"shard"`
	Original string    `json:"original"`
	AddedAt  time.Time `json:"added_at"`
	// Steer lists the nodes this exclusion names beside Node so that OpenSearch's allocator sends
	// the copies it moves where the plan weighed them (allocation.Steer); none held a copy of the
	// index when it was added, so naming them moved nothing. They come off with Node.
	Steer []string `json:"steer,omitempty"`
}

// filterMaxAge is how long an exclusion stands: one whose copies cannot leave the node (no other
// node takes them) is removed then, so it never outlives its purpose, and one whose copies left
// keeps them from coming back until then. An hour lets a 100 GiB shard relocate at OpenSearch's
// default 40 MiB/s recovery rate (about 42 minutes), and is the hour within which no copy goes
// back to a node it left.
const filterMaxAge = time.Hour

// SettingsEditor is what allocation filtering needs from a cluster: an index's settings, read and
// written.
type SettingsEditor interface {
	IndexSettings(ctx context.Context, index string) (map[string]string, error)
	PutIndexSettings(ctx context.Context, index string, settings map[string]any) error
}

// addExclusion adds m's source, and the steer names the list does not hold yet, to m's index's
// exclusions, recorded first so that cleanup can take them off. It returns the steer names added.
func (e *Engine) addExclusion(ctx context.Context, api SettingsEditor, name string, m allocation.Move, steer []string) ([]string, error) {
	cur, err := api.IndexSettings(ctx, m.Index)
	if err != nil {
		return nil, fmt.Errorf("allocation filter on %s: %w", m.Index, err)
	}
	orig := cur[excludeSetting]
	if slices.Contains(names(orig), m.FromName) {
		// The operator excludes the node already: OpenSearch moves the copies off it, and
		// appending the name again would leave cleanup unable to tell the operator's entry from
		// shardwise's.
		return nil, fmt.Errorf("%w: %s already lists %s (the operator's own exclusion)", errOperatorExcludes, excludeSetting, m.FromName)
	}
	// A steering name the list holds already is someone else's entry: it stays theirs.
	steer = slices.DeleteFunc(slices.Clone(steer), func(n string) bool { return slices.Contains(names(orig), n) })
	rec := filterRecord{Index: m.Index, Node: m.From, NodeName: m.FromName, Shard: m.Shard, Original: orig, AddedAt: e.now(), Steer: steer}
	// Record first: if the settings call then fails, cleanup restores the original (a no-op).
	if _, err := state.PutJSON(ctx, e.Store, state.Key{PK: pk(name), SK: filterKey(m.Index, m.FromName)}, rec, state.Condition{IfAbsent: true}, 0, e.now()); err != nil {
		if errors.Is(err, state.ErrConflict) {
			return nil, errFilterHeld
		}
		return nil, fmt.Errorf("allocation filter on %s: record: %w", m.Index, err)
	}
	value := appended(orig, append([]string{m.FromName}, steer...)...)
	if err := api.PutIndexSettings(ctx, m.Index, map[string]any{excludeSetting: value}); err != nil {
		return nil, fmt.Errorf("allocation filter on %s: %w", m.Index, err)
	}
	return steer, nil
}

// rerouteRefusedFor is how long the auto strategy remembers that a cluster refused
// _cluster/reroute: the planner plans for exclusions meanwhile, and a day later reroute is tried
// again (a domain's access policy may have changed).
const rerouteRefusedFor = 24 * time.Hour

// rerouteRefusal records that the cluster answered a reroute with 401 or 403.
type rerouteRefusal struct {
	At     time.Time `json:"at"`
	Reason string    `json:"reason"`
}

// movesByExclusion says whether the move function will issue this cycle's moves as index-level
// exclusions: always under the allocation-filter strategy; under auto, for rerouteRefusedFor
// after the cluster refused _cluster/reroute.
func (e *Engine) movesByExclusion(ctx context.Context, name string) (bool, error) {
	switch e.Config.MoveStrategy {
	case config.StrategyAllocationFilter:
		return true, nil
	case config.StrategyAuto:
		_, _, err := state.GetJSON[rerouteRefusal](ctx, e.Store, state.Key{PK: pk(name), SK: rerouteRefusedSK})
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, state.ErrNotFound):
			return false, nil
		default:
			return false, fmt.Errorf("reroute refusal: %w", err)
		}
	}
	return false, nil
}

// rememberRerouteRefused records that the cluster refused _cluster/reroute, so that the planner
// plans for exclusions from the next cycle on. A failed write is logged: the next cycle then plans
// for reroute once more and the move function falls back again.
func (e *Engine) rememberRerouteRefused(ctx context.Context, name string, forbidden error) {
	rec := rerouteRefusal{At: e.now(), Reason: forbidden.Error()}
	if _, err := state.PutJSON(ctx, e.Store, state.Key{PK: pk(name), SK: rerouteRefusedSK}, rec, state.Condition{}, rerouteRefusedFor, e.now()); err != nil {
		e.log().Warn("recording the reroute refusal failed; the next cycle plans for reroute again", "cluster", name, "error", err)
	}
}

// cleanupFilters removes the exclusions shardwise added, restoring the value that was there
// before, once one of these holds:
//   - no copy of the index remains on (or is relocating off) the excluded node, and the filter is
//     filterMaxAge old: done. Until then it keeps the index off the node: an exclusion moves
//     copies with no count-neutral return, so OpenSearch's balancer, free to, would even the
//     counts by bringing copies of the index back, the hot ones among them (200 random managed
//     clusters: 53 moves undone when the filter came off as soon as the copies had left, 12 with
//     it kept for the hour);
//   - no copy remains on the node and a copy of the index is unassigned: OpenSearch may need the
//     node for it;
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
	// Dry-run changes nothing on a cluster, so it needs no lease: it only says what it would remove.
	dryRun := e.Config.Safety.DryRun
	if !leased && !dryRun {
		l, err := e.takeLease(ctx, name, "filter cleanup")
		if held, ok := errors.AsType[*LeaseHeldError](err); ok {
			e.log().Info("filter cleanup left to the lease holder", "cluster", name, "reason", held.Error())
			return nil
		}
		if err != nil {
			return fmt.Errorf("filter cleanup: %w", err)
		}
		defer l.Release()
	}
	mem, _, err := state.GetLargeJSON[allocation.Memory](ctx, e.Store, state.Key{PK: pk(name), SK: memoryKey})
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
			if len(rec.Steer) > 0 && unassignedIn(snap, rec.Index) {
				// The steering names keep OpenSearch from copies it must assign: they come off,
				// and the source's exclusion stays.
				if dryRun {
					e.log().Info("dry-run: would remove allocation filter steering", "cluster", name, "index", rec.Index, "nodes", rec.Steer)
					continue
				}
				if err := e.dropSteer(ctx, api, name, it, rec); err != nil {
					errs = append(errs, err)
				}
			}
			continue
		}
		if dryRun {
			e.log().Info("dry-run: would remove allocation filter", "cluster", name, "index", rec.Index, "node", rec.NodeName, "reason", why)
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
	case remaining == 0 && unassignedIn(snap, rec.Index):
		return fmt.Sprintf("no copy of %s remains on %s and a copy of it is unassigned: OpenSearch may need %s for it", rec.Index, rec.NodeName, rec.NodeName)
	case remaining == 0 && age >= filterMaxAge:
		return fmt.Sprintf("no copy of %s remains on %s, and in %s OpenSearch's balancer can no longer bring one back within the hour", rec.Index, rec.NodeName, age.Round(time.Second))
	case remaining == 0:
		// Kept: OpenSearch's balancer, free to, would bring copies of the index back.
		return ""
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
		if err := api.PutIndexSettings(ctx, rec.Index, map[string]any{excludeSetting: withoutNames(cur[excludeSetting], append([]string{rec.NodeName}, rec.Steer...), rec.Original)}); err != nil {
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

// unassignedIn reports whether index has a copy with no node: OpenSearch's allocator must find it
// one, and no steering name may stand in its way.
func unassignedIn(snap *cluster.Snapshot, index string) bool {
	for i := range snap.Copies {
		if c := &snap.Copies[i]; c.Index == index && c.State == cluster.StateUnassigned {
			return true
		}
	}
	return false
}

// dropSteer takes rec's steering names off the index's exclusions and off the record, the source's
// exclusion kept: a copy of the index lost its node (a node left), and a busy node may be the only
// one it can go to.
func (e *Engine) dropSteer(ctx context.Context, api SettingsEditor, name string, it state.Item, rec filterRecord) error {
	cur, err := api.IndexSettings(ctx, rec.Index)
	if err != nil {
		if isNotFound(err) {
			return nil // cleanup drops the record once the index is gone
		}
		return fmt.Errorf("filter steering %s: %w", rec.Index, err)
	}
	// Settings first: were the record changed first and the settings call then failed, the names
	// would stand with no record to take them off. Changed second, a record that still lists them
	// only makes cleanup look for names already gone, which it passes over (removeLast).
	if err := api.PutIndexSettings(ctx, rec.Index, map[string]any{excludeSetting: withoutNames(cur[excludeSetting], rec.Steer, appended(rec.Original, rec.NodeName))}); err != nil {
		return fmt.Errorf("filter steering %s: %w", rec.Index, err)
	}
	steer := rec.Steer
	rec.Steer = nil
	if _, err := state.PutJSON(ctx, e.Store, it.Key, rec, state.Condition{IfVersion: it.Version}, 0, e.now()); err != nil && !errors.Is(err, state.ErrConflict) {
		return fmt.Errorf("filter steering %s: record: %w", rec.Index, err)
	}
	e.log().Info("allocation filter steering removed", "cluster", name, "index", rec.Index, "node", rec.NodeName, "nodes", steer,
		"reason", fmt.Sprintf("%s has an unassigned copy; the exclusion of %s stays", rec.Index, rec.NodeName))
	return nil
}

// errOperatorExcludes: the index's exclusions already name the node, so shardwise adds nothing.
var errOperatorExcludes = errors.New("the node is excluded from the index already")

// appended is the exclusion list orig with nodes added, as addExclusion writes it.
func appended(orig string, nodes ...string) string {
	if orig == "" {
		return strings.Join(nodes, ",")
	}
	return strings.Join(append([]string{orig}, nodes...), ",")
}

// names is a comma list's entries, trimmed.
func names(list string) []string {
	var out []string
	for _, v := range strings.Split(list, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}

// withoutNames takes shardwise's entries for nodes off the exclusion list cur. When cur is still
// what shardwise wrote (orig with nodes appended), orig comes back exactly as it was; nil deletes
// the setting when there was none. When the list changed since (an operator edited it, another of
// shardwise's exclusions was added), only the last entry naming each node goes, so every other
// entry, an operator's included, stays.
func withoutNames(cur string, nodes []string, orig string) any {
	if cur == appended(orig, nodes...) {
		if orig == "" {
			return nil
		}
		return orig
	}
	v := cur
	for _, n := range nodes {
		v = removeLast(v, n)
	}
	if v != "" {
		return v
	}
	return nil
}

// removeLast is the comma list without its last entry naming node, every other entry kept.
func removeLast(list, node string) string {
	keep := names(list)
	for i := len(keep) - 1; i >= 0; i-- {
		if keep[i] == node {
			keep = slices.Delete(keep, i, i+1)
			break
		}
	}
	return strings.Join(keep, ",")
}

// isNotFound reports whether err says the index does not exist.
func isNotFound(err error) bool { return errors.Is(err, ErrNotFound) }

// undoExclusion takes off an exclusion addExclusion just added, with its record, as cleanup would.
func (e *Engine) undoExclusion(ctx context.Context, api SettingsEditor, name string, m allocation.Move) error {
	it, err := e.Store.Get(ctx, state.Key{PK: pk(name), SK: filterKey(m.Index, m.FromName)})
	if err != nil {
		return fmt.Errorf("undo allocation filter on %s: %w", m.Index, err)
	}
	rec, err := state.DecodeJSON[filterRecord](it.Value)
	if err != nil {
		return fmt.Errorf("undo allocation filter on %s: %w", m.Index, err)
	}
	return e.removeFilter(ctx, api, name, it, rec, "its group was not applied whole")
}
