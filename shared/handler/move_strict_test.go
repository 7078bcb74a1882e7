package handler

import (
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/shardwise/shardwise/shared/bus"
	"github.com/shardwise/shardwise/shared/engine"
)

// TestMoveDecodesStrictly: a "Moves Planned" detail with a field the event does not have is an
// error before anything runs, as for the other handlers' events.
func TestMoveDecodesStrictly(t *testing.T) {
	raw, err := json.Marshal(map[string]any{"detail-type": bus.TypeMovesPlanned, "source": "shardwise",
		"detail": map[string]any{"cluster": "prod", "plan_key": "plan#x", "plan_kee": "typo"}})
	if err != nil {
		t.Fatal(err)
	}
	f := &Function{Engine: &engine.Engine{Log: slog.New(slog.DiscardHandler)}}
	if _, err := f.Move(t.Context(), raw); err == nil || !strings.Contains(err.Error(), "plan_kee") {
		t.Fatalf("got %v, want an error naming the unknown field plan_kee", err)
	}
}
