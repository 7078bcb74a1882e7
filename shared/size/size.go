// Package size holds Bytes, a byte count that scenario and configuration files may write as a
// number of bytes or as "8GiB", "500mb" or "1.5 tb", and Format, which writes one for people.
package size

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Bytes is a byte count with a readable JSON form. It reads a JSON number (bytes, as before units
// were accepted, so existing files keep working) or a string of a number and a unit; it writes a
// number, so what it writes any reader of the format takes.
type Bytes int64

// units are the accepted suffixes, lower-cased. As OpenSearch's ByteSizeValue reads them, "kb",
// "mb", "gb", "tb" and "pb" are binary (1kb = 1024 bytes); "kib" and the rest say the same
// explicitly.
var units = []struct {
	suffix string
	shift  uint
}{
	// Longest suffixes first: "kib" before "b".
	{"kib", 10}, {"mib", 20}, {"gib", 30}, {"tib", 40}, {"pib", 50},
	{"kb", 10}, {"mb", 20}, {"gb", 30}, {"tb", 40}, {"pb", 50},
	{"k", 10}, {"m", 20}, {"g", 30}, {"t", 40}, {"p", 50},
	{"b", 0},
}

// ErrSyntax is wrapped by every Parse error.
var ErrSyntax = errors.New("want a number of bytes or a number and a unit (b, kb, mb, gb, tb, pb, or kib, mib, gib, tib, pib; binary: 1kb = 1024 bytes)")

// Parse reads "8GiB", "500mb", "1.5 tb", "4096b" or a bare "4096" (bytes). Units are
// case-insensitive and binary. Negative sizes and sizes past int64 are errors.
func Parse(s string) (Bytes, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	num, shift := t, uint(0)
	for _, u := range units {
		if n, ok := strings.CutSuffix(t, u.suffix); ok {
			num, shift = strings.TrimSpace(n), u.shift
			break
		}
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("size %q: %w", s, ErrSyntax)
	}
	if v < 0 {
		return 0, fmt.Errorf("size %q: negative", s)
	}
	b := v * float64(uint64(1)<<shift)
	if b >= math.MaxInt64 {
		return 0, fmt.Errorf("size %q: more than %d bytes", s, int64(math.MaxInt64))
	}
	return Bytes(b), nil
}

// UnmarshalJSON reads a number of bytes or a string Parse takes.
func (b *Bytes) UnmarshalJSON(data []byte) error {
	var s string
	if err := json.Unmarshal(data, &s); err == nil {
		v, err := Parse(s)
		if err != nil {
			return err
		}
		*b = v
		return nil
	}
	var n json.Number
	if err := json.Unmarshal(data, &n); err != nil {
		return fmt.Errorf("size %s: %w", data, ErrSyntax)
	}
	v, err := Parse(n.String())
	if err != nil {
		return err
	}
	*b = v
	return nil
}

// String formats as Format does.
func (b Bytes) String() string { return Format(int64(b)) }

// Format writes n bytes with a binary unit and at most one decimal: "512 B", "1.5 KiB", "8 GiB".
func Format(n int64) string {
	if n < 1024 && n > -1024 {
		return fmt.Sprintf("%d B", n)
	}
	v := float64(n)
	for _, u := range []string{"KiB", "MiB", "GiB", "TiB", "PiB"} {
		v /= 1024
		if math.Abs(v) < 1024 || u == "PiB" {
			return strconv.FormatFloat(math.Round(v*10)/10, 'f', -1, 64) + " " + u
		}
	}
	return "" // unreachable: the loop returns at PiB
}
