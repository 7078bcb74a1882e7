// Package duration holds Duration, a time.Duration that configuration files write as "30s" or
// "1h30m" (or a number of seconds) instead of nanoseconds.
package duration

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Duration is a time.Duration with a readable JSON form.
type Duration time.Duration

// Std returns the time.Duration.
func (d Duration) Std() time.Duration { return time.Duration(d) }

// String formats like time.Duration.
func (d Duration) String() string { return time.Duration(d).String() }

// MarshalJSON writes "30s".
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// UnmarshalJSON reads "30s" or a number of seconds.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		v, err := Parse(s)
		if err != nil {
			return err
		}
		*d = Duration(v)
		return nil
	}
	var n float64
	if err := json.Unmarshal(b, &n); err != nil {
		return fmt.Errorf("duration: want a string like \"30s\" or a number of seconds, got %s", b)
	}
	*d = Duration(time.Duration(n * float64(time.Second)))
	return nil
}

// Parse reads a duration as time.ParseDuration does ("30s", "1h30m", "500ms"), with an error that
// says how to write one: a bare number in a string, "90", is refused with the fix, as its unit is
// a guess.
func Parse(s string) (time.Duration, error) {
	v, err := time.ParseDuration(s)
	if err == nil {
		return v, nil
	}
	if _, nerr := strconv.ParseFloat(strings.TrimSpace(s), 64); nerr == nil {
		return 0, fmt.Errorf("duration %q has no unit: write %q, or the number %s without quotes for seconds", s, s+"s", s)
	}
	return 0, fmt.Errorf("duration %q: want a number and a unit (ms, s, m, h), such as \"30s\" or \"1h30m\"", s)
}

// ParseTimeValue reads an OpenSearch time value ("1m", "30s", "500ms", "2h", "1d", "100micros",
// "10nanos"), as TimeValue.parseTimeValue does for settings such as
// index.unassigned.node_left.delayed_timeout. "0" and "-1" need no unit.
func ParseTimeValue(s string) (time.Duration, error) {
	switch s {
	case "0":
		return 0, nil
	case "-1":
		return -1, nil
	}
	units := []struct {
		suffix string
		unit   time.Duration
	}{
		// Longest suffixes first: "ms" before "s", "nanos" and "micros" before "s".
		{"nanos", time.Nanosecond}, {"micros", time.Microsecond}, {"ms", time.Millisecond},
		{"s", time.Second}, {"m", time.Minute}, {"h", time.Hour}, {"d", 24 * time.Hour},
	}
	for _, u := range units {
		num, ok := strings.CutSuffix(s, u.suffix)
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
		if err != nil || v < 0 {
			return 0, fmt.Errorf("time value %q: want a non-negative number and a unit (nanos, micros, ms, s, m, h, d)", s)
		}
		return time.Duration(v * float64(u.unit)), nil
	}
	return 0, fmt.Errorf("time value %q: no unit (nanos, micros, ms, s, m, h, d)", s)
}
