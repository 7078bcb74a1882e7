package engine

import (
	"log/slog"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/shardwise/shardwise/shared/allocation"
	"github.com/shardwise/shardwise/shared/bus"
	"github.com/shardwise/shardwise/shared/duration"
)

func TestDecideNotice(t *testing.T) {
	at := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	sent := signalRecord{Notified: "bound cluster-capacity", SentAt: at, SentPlan: "plan#1"}
	ended := signalRecord{SentAt: at, SentPlan: "plan#1"}
	tests := []struct {
		name       string
		rec        signalRecord
		key, plan  string
		now        time.Time
		wantNotify bool
		wantReason string
		want       signalRecord
	}{
		{name: "absent, never seen", key: "", plan: "plan#1", now: at, wantReason: "signal absent"},
		{name: "first start notifies", key: "bound cluster-capacity", plan: "plan#1", now: at, wantNotify: true,
			wantReason: "started: bound cluster-capacity", want: sent},
		{name: "unchanged a cycle later is quiet", rec: sent, key: "bound cluster-capacity", plan: "plan#2", now: at.Add(30 * time.Second),
			wantReason: "unchanged since the notification at 2026-11-29T10:00:00Z", want: sent},
		{name: "unchanged for a day stays quiet", rec: sent, key: "bound cluster-capacity", plan: "plan#9", now: at.Add(24 * time.Hour),
			wantReason: "unchanged since", want: sent},
		{name: "the notifying plan published again notifies again", rec: sent, key: "bound cluster-capacity", plan: "plan#1",
			now: at.Add(time.Second), wantNotify: true, wantReason: "published again", want: sent},
		{name: "ending is recorded, not notified", rec: sent, key: "", plan: "plan#2", now: at.Add(time.Minute),
			wantReason: "signal absent", want: ended},
		{name: "a return within the cool-down waits", rec: ended, key: "bound cluster-capacity", plan: "plan#3", now: at.Add(10 * time.Minute),
			wantReason: "started: bound cluster-capacity since the notification at 2026-11-29T10:00:00Z, which starts a cool-down of 1h0m0s: " +
				"notifies at 2026-11-29T11:00:00Z", want: ended},
		{name: "a return after the cool-down notifies", rec: ended, key: "bound cluster-capacity", plan: "plan#4", now: at.Add(61 * time.Minute),
			wantNotify: true, wantReason: "started: bound cluster-capacity",
			want: signalRecord{Notified: "bound cluster-capacity", SentAt: at.Add(61 * time.Minute), SentPlan: "plan#4"}},
		{name: "a change within the cool-down waits", rec: sent, key: "bound unsplittable-shard", plan: "plan#5", now: at.Add(5 * time.Minute),
			wantReason: "changed from bound cluster-capacity to bound unsplittable-shard since", want: sent},
		{name: "a waiting change notifies when the cool-down ends", rec: sent, key: "bound unsplittable-shard", plan: "plan#6",
			now: at.Add(time.Hour), wantNotify: true, wantReason: "changed from bound cluster-capacity to bound unsplittable-shard",
			want: signalRecord{Notified: "bound unsplittable-shard", SentAt: at.Add(time.Hour), SentPlan: "plan#6"}},
		{name: "no cool-down: every change notifies", rec: sent, key: "bound unsplittable-shard", plan: "plan#7",
			now: at.Add(time.Second), wantNotify: true, wantReason: "changed from",
			want: signalRecord{Notified: "bound unsplittable-shard", SentAt: at.Add(time.Second), SentPlan: "plan#7"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cooldown := time.Hour
			if strings.HasPrefix(tc.name, "no cool-down") {
				cooldown = 0
			}
			n, next := decideNotice(tc.rec, tc.key, tc.plan, tc.now, cooldown)
			if n.Notify != tc.wantNotify || !strings.Contains(n.NotifyReason, tc.wantReason) {
				t.Errorf("got notify %v reason %q, want %v with %q", n.Notify, n.NotifyReason, tc.wantNotify, tc.wantReason)
			}
			if next != tc.want {
				t.Errorf("record: got %+v, want %+v", next, tc.want)
			}
		})
	}
}

func TestUnrelievedKey(t *testing.T) {
	got := unrelievedKey([]allocation.Unrelieved{{NodeName: "b"}, {NodeName: "a"}, {NodeName: "b"}})
	if got != "nodes a,b" {
		t.Errorf("got %q, want %q", got, "nodes a,b")
	}
}

// A cluster that stays saturated plans a Scale Up Needed every 30 s; each goes to the bus, and one
// notifies. The record lives in the state table, so an engine started afresh (a cold start)
// notifies nothing more; the signal's end and its return within the hour wait out the cool-down,
// and a return after it notifies again.
func TestScaleUpNotifiesOnChangeWithCooldown(t *testing.T) {
	w := newWorld("a", "b").
		index("x", 0, []float64{3, 3, 3, 3, 3, 3}, nil, []string{"a"}, []string{"a"}, []string{"a"}, []string{"b"}, []string{"b"}, []string{"b"}).
		queueing("a", 500).queueing("b", 600)
	cfg := testConfig("prod")
	cfg.NotifyCooldown = duration.Duration(time.Hour)
	r := newRig(t, cfg, map[string]*world{"prod": w})
	hot := maps.Clone(w.write)
	cycle := func(t *testing.T, e *Engine) []bus.ScaleUpNeeded {
		t.Helper()
		w.tick(30 * time.Second)
		if _, err := e.Detect(t.Context(), "prod", r.ingest(t, "prod")); err != nil {
			t.Fatal(err)
		}
		return events[bus.ScaleUpNeeded](t, r.bus.Drain(), bus.TypeScaleUpNeeded)
	}
	notified := func(t *testing.T, e *Engine, cycles int) (seen, notified int, reasons []string) {
		t.Helper()
		for range cycles {
			for _, su := range cycle(t, e) {
				seen++
				if su.Notify {
					notified++
				}
				reasons = append(reasons, su.NotifyReason)
			}
		}
		return seen, notified, reasons
	}
	coolDown := func() {
		for k := range w.write {
			w.write[k] = 0.1
		}
		w.queueing("a", 0).queueing("b", 0)
	}
	heatUp := func() {
		maps.Copy(w.write, hot)
		w.queueing("a", 500).queueing("b", 600)
	}

	if seen, n, reasons := notified(t, r.e, 20); seen < 15 || n != 1 {
		t.Fatalf("20 saturated cycles: %d Scale Up Needed events, %d notifying (%q); want one a cycle once hot, one notifying", seen, n, reasons)
	}
	fresh := &Engine{Store: r.store, Bus: r.bus, Clock: w.Now, Log: slog.New(slog.DiscardHandler), Config: cfg, Cluster: r.e.Cluster}
	if seen, n, _ := notified(t, fresh, 5); seen != 5 || n != 0 {
		t.Fatalf("after a cold start: %d events, %d notifying; want 5 and none", seen, n)
	}
	coolDown()
	if seen, _, _ := notified(t, fresh, 4); seen != 0 {
		t.Fatalf("cooled: %d Scale Up Needed events, want none", seen)
	}
	heatUp()
	if seen, n, reasons := notified(t, fresh, 10); seen == 0 || n != 0 || !strings.Contains(reasons[0], "cool-down") {
		t.Fatalf("back within the hour: %d events, %d notifying, reasons %q; want events waiting out the cool-down", seen, n, reasons)
	}
	// 20 + 5 + 4 + 10 cycles of 30 s are 19.5 minutes; 90 more pass the hour since the notification.
	seen, n, reasons := notified(t, fresh, 90)
	if seen != 90 || n != 1 {
		t.Fatalf("past the hour: %d events, %d notifying (%q); want 90 and one", seen, n, reasons)
	}
}
