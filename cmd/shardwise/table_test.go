package main

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/shardwise/shardwise/shared/cluster"
)

func TestTableFitsWidth(t *testing.T) {
	reason := strings.Repeat("node-0 is hot: queue latency 4.2 s at or over the 3 s limit; ", 6)
	cases := []struct {
		name  string
		width int
		// wantMax is the widest line allowed; 0: the reason on one line.
		wantMax int
	}{
		{"a terminal of 80 columns", 80, 80},
		{"the default width", defaultWidth, defaultWidth},
		{"--wide", 0, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tb := newTable("shard", "from", "to", "write load", "reason~")
			tb.add("logs[3] primary", "node-0", "node-1", threads(3.25), reason)
			var b bytes.Buffer
			tb.render(&b, tc.width)
			lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
			widest := 0
			for _, l := range lines {
				widest = max(widest, utf8.RuneCountInString(l))
			}
			if tc.wantMax == 0 {
				if len(lines) != 2 || !strings.Contains(b.String(), strings.TrimSpace(reason)) {
					t.Errorf("--wide: got %d lines, want the header and one line holding the whole reason:\n%s", len(lines), b.String())
				}
				return
			}
			if widest > tc.wantMax {
				t.Errorf("got a line of %d columns, want at most %d:\n%s", widest, tc.wantMax, b.String())
			}
			// Every word of the reason is still there, wrapped.
			var got []string
			for _, l := range lines[1:] {
				got = append(got, strings.Fields(l[strings.Index(lines[0], "REASON"):])...)
			}
			if strings.Join(got, " ") != strings.TrimSpace(reason) {
				t.Errorf("the wrapped reason reads %q, want %q", strings.Join(got, " "), strings.TrimSpace(reason))
			}
			if !strings.Contains(lines[1], "3.25 threads") {
				t.Errorf("the write load lost its unit: %q", lines[1])
			}
		})
	}
}

func TestOutputWidth(t *testing.T) {
	cases := []struct {
		name, columns string
		want          int
	}{
		{"not a terminal, no COLUMNS", "", defaultWidth},
		{"COLUMNS", "132", 132},
		{"COLUMNS not a number", "wide", defaultWidth},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			getenv := func(k string) string {
				if k == "COLUMNS" {
					return tc.columns
				}
				return ""
			}
			if got := outputWidth(&bytes.Buffer{}, getenv); got != tc.want {
				t.Errorf("got %d, want %d", got, tc.want)
			}
		})
	}
}

func TestWrap(t *testing.T) {
	cases := []struct {
		name  string
		s     string
		width int
		want  []string
	}{
		{"fits", "a b c", 10, []string{"a b c"}},
		{"at spaces", "one two three four", 9, []string{"one two", "three", "four"}},
		{"a word longer than the width is cut", "abcdefghij kl", 4, []string{"abcd", "efgh", "ij", "kl"}},
		{"empty", "", 5, []string{""}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := wrap(tc.s, tc.width); fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// An error the command returns is printed once, by main: the error record that logged it on the
// way is dropped, and every other record is kept.
func TestLogSinkPrintsEachErrorOnce(t *testing.T) {
	failed := errors.New("dial tcp 127.0.0.1:1: connection refused")
	cases := []struct {
		name     string
		level    string
		log      func(*slog.Logger)
		returned error
		want     []string
		wantNot  []string
	}{
		{"the returned error's record is dropped", "warn",
			func(l *slog.Logger) { l.Error("ingest failed", "cluster", "live", "error", failed) },
			fmt.Errorf("ingest live: %w", failed), nil, []string{"ingest failed"}},
		{"an error not returned is printed", "warn",
			func(l *slog.Logger) { l.Error("allocation filter cleanup failed", "error", errors.New("403")) },
			fmt.Errorf("ingest live: %w", failed), []string{"allocation filter cleanup failed"}, nil},
		{"warnings at the warn level", "warn",
			func(l *slog.Logger) { l.Warn("scale up needed", "nodes", 2); l.Info("sampled") },
			nil, []string{"level=WARN msg=\"scale up needed\" nodes=2"}, []string{"sampled", "time="}},
		{"off prints nothing", "off",
			func(l *slog.Logger) { l.Error("ingest failed", "error", errors.New("other")) },
			nil, nil, []string{"ingest failed"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var stderr bytes.Buffer
			d := &display{logLevel: tc.level}
			if err := d.start(&stderr); err != nil {
				t.Fatal(err)
			}
			tc.log(d.logger())
			d.logs.flush(tc.returned)
			for _, w := range tc.want {
				if !strings.Contains(stderr.String(), w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr.String())
				}
			}
			for _, w := range tc.wantNot {
				if strings.Contains(stderr.String(), w) {
					t.Errorf("stderr has %q:\n%s", w, stderr.String())
				}
			}
		})
	}
}

func TestShardExists(t *testing.T) {
	snap := &cluster.Snapshot{Copies: []cluster.Copy{{Index: "logs", Shard: 0}, {Index: "logs", Shard: 1, Primary: true}}}
	cases := []struct {
		name, index string
		shard       int
		want        string
	}{
		{"no such index", "nosuchindex", 0, "index nosuchindex not found"},
		{"no such shard", "logs", 5, "index logs has shards 0 to 1: shard 5 not found"},
		{"there", "logs", 1, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := shardExists(snap, tc.index, tc.shard)
			if got := fmt.Sprint(err); (tc.want == "" && err != nil) || (tc.want != "" && got != tc.want) {
				t.Errorf("got %v, want %q", err, tc.want)
			}
		})
	}
}
