package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"

	"github.com/spf13/cobra"
)

// display holds the root's output flags: how wide tables may be and which log records reach
// stderr.
type display struct {
	wide     bool
	logLevel string
	getenv   func(string) string
	logs     *logSink
}

func (d *display) register(root *cobra.Command) {
	root.PersistentFlags().BoolVar(&d.wide, "wide", false, "print tables at their full width instead of fitting the terminal (wrapping reasons)")
	root.PersistentFlags().StringVar(&d.logLevel, "log-level", "warn", "log records printed to stderr: "+strings.Join(logLevelNames(), " | "))
}

// start readies the log sink at the chosen level; the root runs it before every command.
func (d *display) start(stderr io.Writer) error {
	level, err := parseLogLevel(d.logLevel)
	if err != nil {
		return err
	}
	d.logs = &logSink{out: stderr, level: level}
	return nil
}

// width is the width to fit tables written to w to; 0 (no limit) with --wide.
func (d *display) width(w io.Writer) int {
	if d.wide {
		return 0
	}
	return outputWidth(w, d.getenv)
}

// logger is the commands' logger: records go to stderr through the sink, never to stdout.
func (d *display) logger() *slog.Logger {
	if d.logs == nil {
		return slog.New(slog.DiscardHandler)
	}
	return slog.New(&sinkHandler{sink: d.logs})
}

// levelOff is above every record's level: --log-level off prints none.
const levelOff = slog.Level(100)

var logLevels = []struct {
	name  string
	level slog.Level
}{
	{"debug", slog.LevelDebug}, {"info", slog.LevelInfo}, {"warn", slog.LevelWarn}, {"error", slog.LevelError}, {"off", levelOff},
}

func logLevelNames() []string {
	out := make([]string, 0, len(logLevels))
	for _, l := range logLevels {
		out = append(out, l.name)
	}
	return out
}

func parseLogLevel(s string) (slog.Level, error) {
	for _, l := range logLevels {
		if strings.EqualFold(s, l.name) {
			return l.level, nil
		}
	}
	return 0, fmt.Errorf("--log-level %q: want one of %s", s, strings.Join(logLevelNames(), ", "))
}

// logSink writes the commands' log records to stderr as text. Records below error level are
// written as they come. Error records are held until the command ends: an error the command also
// returns is printed once, by main, and the record that logged it on the way is dropped.
type logSink struct {
	mu    sync.Mutex
	out   io.Writer
	level slog.Level
	held  []slog.Record
}

func (s *logSink) write(r slog.Record) {
	h := slog.NewTextHandler(s.out, &slog.HandlerOptions{Level: slog.LevelDebug, ReplaceAttr: dropTime})
	_ = h.Handle(context.Background(), r)
}

// dropTime leaves the time out: the records of one command are seconds apart at most.
func dropTime(groups []string, a slog.Attr) slog.Attr {
	if len(groups) == 0 && a.Key == slog.TimeKey {
		return slog.Attr{}
	}
	return a
}

// flush writes the held error records, leaving out those whose error the command returned.
func (s *logSink) flush(returned error) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.held {
		if !repeats(r, returned) {
			s.write(r)
		}
	}
	s.held = nil
}

// repeats reports whether record r logged an error that returned carries: main prints it anyway.
func repeats(r slog.Record, returned error) bool {
	if returned == nil {
		return false
	}
	found := false
	r.Attrs(func(a slog.Attr) bool {
		if err, ok := a.Value.Any().(error); ok {
			found = errors.Is(returned, err) || strings.Contains(returned.Error(), err.Error())
		}
		return !found
	})
	return found
}

// sinkHandler is the slog.Handler over a logSink, carrying the attributes and groups of With.
type sinkHandler struct {
	sink   *logSink
	attrs  []slog.Attr
	groups []string
}

func (h *sinkHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= h.sink.level }

func (h *sinkHandler) Handle(_ context.Context, r slog.Record) error {
	r = r.Clone()
	for _, a := range h.attrs {
		r.AddAttrs(a)
	}
	if len(h.groups) > 0 {
		// Grouped records are flattened into their group's prefix: the CLI's records are few.
		var attrs []any
		r.Attrs(func(a slog.Attr) bool {
			attrs = append(attrs, slog.Attr{Key: strings.Join(h.groups, ".") + "." + a.Key, Value: a.Value})
			return true
		})
		flat := slog.NewRecord(r.Time, r.Level, r.Message, r.PC)
		flat.Add(attrs...)
		r = flat
	}
	h.sink.mu.Lock()
	defer h.sink.mu.Unlock()
	if r.Level >= slog.LevelError {
		h.sink.held = append(h.sink.held, r)
		return nil
	}
	h.sink.write(r)
	return nil
}

func (h *sinkHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &sinkHandler{sink: h.sink, attrs: append(slices.Clip(h.attrs), attrs...), groups: h.groups}
}

func (h *sinkHandler) WithGroup(name string) slog.Handler {
	return &sinkHandler{sink: h.sink, attrs: h.attrs, groups: append(slices.Clip(h.groups), name)}
}
