package telemetry_test

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"testing"
	"time"

	"github.com/shardwise/shardwise/shared/telemetry"
)

func TestNewLoggerRecord(t *testing.T) {
	var buf bytes.Buffer
	log := telemetry.NewLogger(&buf, slog.LevelInfo,
		telemetry.AttrFunction, "ingest", telemetry.AttrCluster, "prod-logs", telemetry.AttrInvocation, "req-1")
	log.Info("stats ingested", "nodes", 3, slog.Group("took", slog.String("time", "12ms")))

	var rec map[string]any
	if err := json.Unmarshal(buf.Bytes(), &rec); err != nil {
		t.Fatalf("log line is not JSON: %v\n%s", err, buf.Bytes())
	}
	ts, ok := rec["timestamp"].(string)
	if !ok {
		t.Fatalf("timestamp: got %v, want an RFC 3339 string", rec["timestamp"])
	}
	if _, err := time.Parse(time.RFC3339Nano, ts); err != nil {
		t.Fatalf("timestamp %q: %v", ts, err)
	}
	want := map[string]any{
		"level":                  "INFO",
		"msg":                    "stats ingested",
		telemetry.AttrFunction:   "ingest",
		telemetry.AttrCluster:    "prod-logs",
		telemetry.AttrInvocation: "req-1",
		"nodes":                  float64(3),
	}
	for k, v := range want {
		if rec[k] != v {
			t.Errorf("%s: got %v, want %v", k, rec[k], v)
		}
	}
	if _, ok := rec["time"]; ok {
		t.Errorf("record has slog's time key as well as timestamp: %s", buf.Bytes())
	}
	// A "time" inside a group is the caller's attribute, not the record time.
	if g, _ := rec["took"].(map[string]any); g["time"] != "12ms" {
		t.Errorf("took.time: got %v, want 12ms", rec["took"])
	}
}

func TestNewLoggerLevels(t *testing.T) {
	tests := []struct {
		name      string
		min       slog.Level
		at        slog.Level
		wantLevel string // "" = filtered out
	}{
		{name: "trace shown at trace", min: telemetry.LevelTrace, at: telemetry.LevelTrace, wantLevel: "TRACE"},
		{name: "trace hidden at debug", min: slog.LevelDebug, at: telemetry.LevelTrace},
		{name: "debug", min: slog.LevelDebug, at: slog.LevelDebug, wantLevel: "DEBUG"},
		{name: "debug hidden at info", min: slog.LevelInfo, at: slog.LevelDebug},
		{name: "info", min: slog.LevelInfo, at: slog.LevelInfo, wantLevel: "INFO"},
		{name: "between info and warn names as info", min: slog.LevelInfo, at: slog.LevelInfo + 2, wantLevel: "INFO"},
		{name: "warn", min: slog.LevelInfo, at: slog.LevelWarn, wantLevel: "WARN"},
		{name: "error", min: slog.LevelWarn, at: slog.LevelError, wantLevel: "ERROR"},
		{name: "fatal", min: slog.LevelError, at: telemetry.LevelFatal, wantLevel: "FATAL"},
		{name: "error hidden at fatal", min: telemetry.LevelFatal, at: slog.LevelError},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			telemetry.NewLogger(&buf, tc.min).Log(t.Context(), tc.at, "m")
			if tc.wantLevel == "" {
				if buf.Len() != 0 {
					t.Fatalf("got %s, want nothing logged", buf.Bytes())
				}
				return
			}
			var rec struct{ Level string }
			if err := json.Unmarshal(buf.Bytes(), &rec); err != nil {
				t.Fatalf("log line is not JSON: %v\n%s", err, buf.Bytes())
			}
			if rec.Level != tc.wantLevel {
				t.Fatalf("level: got %q, want %q", rec.Level, tc.wantLevel)
			}
		})
	}
}

func TestParseLevel(t *testing.T) {
	tests := []struct {
		in      string
		want    slog.Level
		wantErr bool
	}{
		{in: "TRACE", want: telemetry.LevelTrace},
		{in: "trace", want: telemetry.LevelTrace},
		{in: "debug", want: slog.LevelDebug},
		{in: " Info ", want: slog.LevelInfo},
		{in: "WARN", want: slog.LevelWarn},
		{in: "error", want: slog.LevelError},
		{in: "FATAL", want: telemetry.LevelFatal},
		{in: "info+2", want: slog.LevelInfo + 2},
		{in: "", wantErr: true},
		{in: "verbose", wantErr: true},
		{in: "warning", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := telemetry.ParseLevel(tc.in)
			if (err != nil) != tc.wantErr {
				t.Fatalf("ParseLevel(%q): got err %v, want error %t", tc.in, err, tc.wantErr)
			}
			if !tc.wantErr && got != tc.want {
				t.Fatalf("ParseLevel(%q): got %v, want %v", tc.in, got, tc.want)
			}
		})
	}
}
