package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/shardwise/shardwise/shared/allocation"
	"github.com/shardwise/shardwise/shared/bus"
	"github.com/shardwise/shardwise/shared/state"
)

// A cluster that needs nodes keeps needing them for hours, and every 30-second plan says so again.
// The plans' "Scale Up Needed" and "Hotspot Unrelieved" events all go to the bus, the audit log,
// but only some of them notify (bus.Notice), the ones the alert topic's rules deliver: when the
// signal starts or changes, and not within config.NotifyCooldown of the cluster's last
// notification of that signal. What each signal last notified is kept in the state table
// (signalsKey), so the decision holds across invocations and cold starts.

// signalRecord is what a cluster's notifications of one signal last said. It changes only when a
// notification goes out or the signal ends, so a standing signal costs no write per cycle.
type signalRecord struct {
	// Notified is what the last notification said and still holds: the bound of a Scale Up
	// Needed, the hot nodes of a Hotspot Unrelieved. Empty once the signal has ended.
	Notified string `json:"notified,omitempty"`
	// SentAt is when the last notification went out; zero for never. It outlives the signal's
	// end, so a signal that flaps still notifies at most once per cool-down.
	SentAt time.Time `json:"sent_at,omitzero"`
	// SentPlan is the plan whose event carried it: publishing that plan again (a retry after a
	// failed publish) notifies again rather than losing the notification.
	SentPlan string `json:"sent_plan,omitempty"`
}

// signalsState is a cluster's record of each signal.
type signalsState struct {
	ScaleUp    signalRecord `json:"scale_up"`
	Unrelieved signalRecord `json:"unrelieved"`
}

// decideNotice decides whether the plan planKey, whose signal now holds key (empty: the signal is
// absent), notifies; it returns the notice, with its reason, and the record to keep.
func decideNotice(rec signalRecord, key, planKey string, now time.Time, cooldown time.Duration) (bus.Notice, signalRecord) {
	next := rec
	switch {
	case key == "":
		// Ended: its next start is news, however soon, but still within the cool-down.
		next.Notified = ""
		return bus.Notice{NotifyReason: "signal absent"}, next
	case rec.SentPlan == planKey:
		return bus.Notice{Notify: true, NotifyReason: "this plan's notification, published again"}, next
	case rec.Notified == key:
		return bus.Notice{NotifyReason: fmt.Sprintf("unchanged since the notification at %s",
			rec.SentAt.UTC().Format(time.RFC3339))}, next
	case !rec.SentAt.IsZero() && now.Sub(rec.SentAt) < cooldown:
		return bus.Notice{NotifyReason: fmt.Sprintf("%s since the notification at %s, which starts a cool-down of %v: "+
			"notifies at %s if it still holds", changeOf(rec, key), rec.SentAt.UTC().Format(time.RFC3339), cooldown,
			rec.SentAt.Add(cooldown).UTC().Format(time.RFC3339))}, next
	}
	next.Notified, next.SentAt, next.SentPlan = key, now, planKey
	return bus.Notice{Notify: true, NotifyReason: changeOf(rec, key)}, next
}

// changeOf says how the signal moved from what was last notified to key.
func changeOf(rec signalRecord, key string) string {
	if rec.Notified == "" {
		return "started: " + key
	}
	return "changed from " + rec.Notified + " to " + key
}

// scaleUpKey is what a Scale Up Needed notifies: the bound that proves it.
func scaleUpKey(s *allocation.ScaleUp) string {
	if s == nil {
		return ""
	}
	return "bound " + s.Bound
}

// unrelievedKey is what a Hotspot Unrelieved notifies: its hot nodes, sorted.
func unrelievedKey(us []allocation.Unrelieved) string {
	if len(us) == 0 {
		return ""
	}
	names := make([]string, 0, len(us))
	for _, u := range us {
		names = append(names, u.NodeName)
	}
	slices.Sort(names)
	return "nodes " + strings.Join(slices.Compact(names), ",")
}

// notices decides the plan's notices and stores the cluster's signal records when they change.
// A concurrent invocation that stored the records first wins, and the decision is made again on
// what it stored, so two invocations cannot both notify one change.
func (e *Engine) notices(ctx context.Context, name, planKey string, plan allocation.Plan) (scaleUp, unrelieved bus.Notice, err error) {
	key := state.Key{PK: pk(name), SK: signalsKey}
	cooldown := e.Config.NotifyCooldown.Std()
	const attempts = 3
	for range attempts {
		prev, version, gerr := state.GetJSON[signalsState](ctx, e.Store, key)
		if gerr != nil && !errors.Is(gerr, state.ErrNotFound) {
			return scaleUp, unrelieved, fmt.Errorf("detect %s: read signals: %w", name, gerr)
		}
		var next signalsState
		now := e.now()
		scaleUp, next.ScaleUp = decideNotice(prev.ScaleUp, scaleUpKey(plan.ScaleUp), planKey, now, cooldown)
		unrelieved, next.Unrelieved = decideNotice(prev.Unrelieved, unrelievedKey(plan.Unrelieved), planKey, now, cooldown)
		if next == prev {
			return scaleUp, unrelieved, nil
		}
		_, perr := state.PutJSON(ctx, e.Store, key, next, condFor(version), 0, now)
		if perr == nil {
			return scaleUp, unrelieved, nil
		}
		if !errors.Is(perr, state.ErrConflict) {
			return scaleUp, unrelieved, fmt.Errorf("detect %s: store signals: %w", name, perr)
		}
	}
	return scaleUp, unrelieved, fmt.Errorf("detect %s: store signals: %d conflicting writes in a row", name, attempts)
}
