// Package duration holds Duration, a time.Duration that configuration files write as "30s" or
// "1h30m" (or a number of seconds) instead of nanoseconds.
package duration

import (
	"encoding/json"
	"fmt"
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
		v, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf("duration %q: %w", s, err)
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
