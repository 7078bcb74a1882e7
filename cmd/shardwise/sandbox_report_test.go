package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/shardwise/shardwise/shared/engine"
	"github.com/shardwise/shardwise/shared/sandbox"
	"github.com/shardwise/shardwise/shared/state"
)

// sandbox report reads the sandbox function's records from the state table it is pointed at and
// prints the window's usage, cancellations and last plan; bad flags are refused before any read.
func TestSandboxReport(t *testing.T) {
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	store := state.NewMemory(func() time.Time { return now })
	put := func(at time.Time, flood float64, cancelled int) {
		r := sandbox.NewRecorder(at.Add(-30*time.Second), true, sandbox.EnforcerShardwise)
		r.Pass(sandbox.Report{Findings: []sandbox.Finding{
			{Node: "node-1", Sandbox: "flood", Resource: sandbox.CPU, Mode: sandbox.Hard, Usage: flood, CancelAbove: 0.225},
			{Node: "node-1", Sandbox: "storefront", Resource: sandbox.CPU, Mode: sandbox.Soft, Usage: 0.1, CancelAbove: 0.36},
		}}, nil)
		for range cancelled {
			r.Outcome(sandbox.Cancellation{Task: "c1:7", OpaqueID: "flood-1", Sandbox: "flood", Node: "node-1", Resource: sandbox.CPU,
				Kind: sandbox.KindCancel, Figures: sandbox.Figures{Freed: 0.125}, Reason: "cancel request c1:7 the newest of flood's"}, engine.CancelDryRun)
		}
		if _, err := engine.PutSandboxRecord(context.Background(), store, "prod", r.Record(at), 24*time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	put(now.Add(-3*time.Hour), 0.99, 9) // outside --since 1h
	put(now.Add(-50*time.Minute), 0.8, 2)
	put(now.Add(-time.Minute), 0.5, 1)

	openStateTable = func(_ context.Context, table, _ string) (state.Store, error) {
		if table != "shardwise-prod" {
			t.Errorf("table got %q, want the --table given", table)
		}
		return store, nil
	}
	reportNow = func() time.Time { return now }
	t.Cleanup(func() { openStateTable, reportNow = nil, time.Now })

	tests := []struct {
		name    string
		args    []string
		wantErr string
		wantOut []string
	}{
		{name: "the last hour", args: []string{"--cluster", "prod", "--since", "1h"},
			wantOut: []string{"2 invocations", "dry-run", "flood", "(all nodes)", "80.0 %", "22.5 %", "storefront",
				"WOULD HAVE FREED", "cpu 0.38", "Would cancel now", "c1:7", "flood-1"}},
		{name: "a window with no records", args: []string{"--cluster", "other"},
			wantOut: []string{"0 invocations", "no sandbox records in table shardwise-prod for cluster other"}},
		{name: "bad --since", args: []string{"--cluster", "prod", "--since", "an hour"}, wantErr: `--since "an hour": want a duration such as 30m, 1h or 2d`},
		{name: "--since past retention", args: []string{"--cluster", "prod", "--since", "30d"}, wantErr: "kept at most 7d"},
		{name: "no --cluster", args: nil, wantErr: `"cluster" not set`},
		{name: "a cluster name no key holds", args: []string{"--cluster", "a#b"}, wantErr: "must be 1 to 64 letters"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, _, err := execute(t, append([]string{"sandbox", "report", "--table", "shardwise-prod"}, tc.args...)...)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("got error %v, want none\n%s", err, out)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("got error %v, want one containing %q\n%s", err, tc.wantErr, out)
			}
			for _, w := range tc.wantOut {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
		})
	}

	out, _, err := execute(t, "sandbox", "report", "--table", "shardwise-prod", "--cluster", "prod", "--since", "2h", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var s sandbox.Summary
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	if s.Invocations != 2 || len(s.Cancellations) != 1 || s.Cancellations[0].Count[engine.CancelDryRun] != 3 || len(s.Usage) != 4 ||
		len(s.Plan) != 1 || s.Plan[0].Task != "c1:7" {
		t.Errorf("--json got %+v, want 2 invocations, flood's 3 dry-run cancellations, 4 usage rows and the last plan", s)
	}
}
