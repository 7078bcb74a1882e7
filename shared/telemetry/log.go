// Package telemetry gives every shardwise function the same JSON logs and CloudWatch metrics.
// Both go to a writer (stdout in Lambda): Lambda ships each line to CloudWatch Logs, which filters
// the logs by level and extracts the metrics from their Embedded Metric Format documents.
package telemetry

import (
	"fmt"
	"io"
	"log/slog"
	"strings"
)

// Attribute keys every function sets on its logger, so one Logs Insights query spans them all.
const (
	AttrFunction   = "function"   // the Lambda function (or CLI command) name
	AttrCluster    = "cluster"    // the OpenSearch cluster the invocation works on
	AttrInvocation = "invocation" // the Lambda request ID, or the local runner's tick
)

// Lambda's application log levels are TRACE, DEBUG, INFO, WARN, ERROR and FATAL (Lambda developer
// guide, "Log-level filtering"). slog has the middle four; these are the outer two.
const (
	LevelTrace = slog.LevelDebug - 4
	LevelFatal = slog.LevelError + 4
)

// timeKey is the key Lambda's log-level filtering reads an RFC 3339 time from ("timestamp").
const timeKey = "timestamp"

// NewLogger returns a JSON logger writing records at or above level to w, each carrying attrs
// (key-value pairs as for slog.Logger.With, e.g. AttrFunction, "ingest").
//
// Records use the keys Lambda's log-level filtering reads: "level" with one of Lambda's six level
// names, and "timestamp" in RFC 3339.
func NewLogger(w io.Writer, level slog.Level, attrs ...any) *slog.Logger {
	h := slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level, ReplaceAttr: lambdaKeys})
	return slog.New(h).With(attrs...)
}

// lambdaKeys renames slog's built-in time key and names every level as Lambda does.
func lambdaKeys(groups []string, a slog.Attr) slog.Attr {
	if len(groups) > 0 {
		return a
	}
	switch a.Key {
	case slog.TimeKey:
		a.Key = timeKey
	case slog.LevelKey:
		if l, ok := a.Value.Any().(slog.Level); ok {
			a.Value = slog.StringValue(levelName(l))
		}
	}
	return a
}

// levelName maps any slog level to the Lambda level at or below it, so a level between two
// names (slog's "INFO+2") still filters as the nearer less severe one.
func levelName(l slog.Level) string {
	switch {
	case l < slog.LevelDebug:
		return "TRACE"
	case l < slog.LevelInfo:
		return "DEBUG"
	case l < slog.LevelWarn:
		return "INFO"
	case l < slog.LevelError:
		return "WARN"
	case l < LevelFatal:
		return "ERROR"
	}
	return "FATAL"
}

// ParseLevel reads a level name, case-insensitive: Lambda's six (as in AWS_LAMBDA_LOG_LEVEL) or
// slog's forms with an offset ("debug", "INFO+2").
func ParseLevel(s string) (slog.Level, error) {
	name := strings.ToUpper(strings.TrimSpace(s))
	switch name {
	case "TRACE":
		return LevelTrace, nil
	case "FATAL":
		return LevelFatal, nil
	}
	var l slog.Level
	if err := l.UnmarshalText([]byte(name)); err != nil {
		return 0, fmt.Errorf("log level %q: want one of TRACE, DEBUG, INFO, WARN, ERROR, FATAL: %w", s, err)
	}
	return l, nil
}
