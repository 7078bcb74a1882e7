package opensearch

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Watermark is a disk watermark in OpenSearch's own two-threshold form (DiskThresholdSettings):
// a ratio watermark sets UsedRatio and leaves MinFreeBytes 0; an absolute one sets MinFreeBytes
// and leaves UsedRatio 1. A node is over the watermark when either threshold is crossed.
type Watermark struct {
	// UsedRatio is the share of the disk that may be used, 0..1 ("90%" and "0.9" are 0.9).
	UsedRatio float64
	// MinFreeBytes is the free space a node must keep ("10gb").
	MinFreeBytes int64
}

// Exceeded reports whether a node with this disk is over the watermark, as OpenSearch's
// DiskThresholdDecider judges it: used share above UsedRatio, or available bytes below
// MinFreeBytes. A node that reports no disk size is never over.
func (w Watermark) Exceeded(totalBytes, availableBytes int64) bool {
	if totalBytes <= 0 {
		return false
	}
	used := float64(totalBytes-availableBytes) / float64(totalBytes)
	return used > w.UsedRatio || availableBytes < w.MinFreeBytes
}

// ParseWatermark reads a watermark setting the way OpenSearch does: a percentage ("90%", "87.5%"),
// a ratio ("0.9"), or else a byte size ("10gb", "500mb", "1.5t").
func ParseWatermark(s string) (Watermark, error) {
	v := strings.TrimSpace(s)
	if pct, ok := strings.CutSuffix(v, "%"); ok {
		p, err := parseFinite(pct)
		if err != nil {
			return Watermark{}, fmt.Errorf("watermark %q: %w", s, err)
		}
		if p < 0 || p > 100 {
			return Watermark{}, fmt.Errorf("watermark %q: percentage must be in [0, 100]", s)
		}
		return Watermark{UsedRatio: p / 100}, nil
	}
	if r, err := parseFinite(v); err == nil {
		if r < 0 || r > 1 {
			return Watermark{}, fmt.Errorf("watermark %q: ratio must be in [0, 1]; a byte size needs a unit", s)
		}
		return Watermark{UsedRatio: r}, nil
	}
	n, err := parseByteSize(v)
	if err != nil {
		return Watermark{}, fmt.Errorf("watermark %q: %w", s, err)
	}
	if n < 0 {
		return Watermark{}, fmt.Errorf("watermark %q: must not be negative", s)
	}
	return Watermark{UsedRatio: 1, MinFreeBytes: n}, nil
}

func parseFinite(s string) (float64, error) {
	f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil {
		return 0, fmt.Errorf("not a number: %w", err)
	}
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, errors.New("not a finite number")
	}
	return f, nil
}

// byteUnits are OpenSearch's ByteSizeUnit suffixes (binary multiples), longest first so "kb" is
// not read as "b".
var byteUnits = []struct {
	suffix string
	bytes  int64
}{
	{"kb", 1 << 10}, {"mb", 1 << 20}, {"gb", 1 << 30}, {"tb", 1 << 40}, {"pb", 1 << 50},
	{"k", 1 << 10}, {"m", 1 << 20}, {"g", 1 << 30}, {"t", 1 << 40}, {"p", 1 << 50},
	{"b", 1},
}

// parseByteSize reads a byte size as OpenSearch's ByteSizeValue does: case-insensitive unit, a
// whole or fractional number before it, and "0" and "-1" without one.
func parseByteSize(s string) (int64, error) {
	v := strings.ToLower(strings.TrimSpace(s))
	switch v {
	case "0":
		return 0, nil
	case "-1":
		return -1, nil
	}
	for _, u := range byteUnits {
		num, ok := strings.CutSuffix(v, u.suffix)
		if !ok {
			continue
		}
		num = strings.TrimSpace(num)
		if n, err := strconv.ParseInt(num, 10, 64); err == nil {
			if n < 0 {
				return 0, errors.New("byte size must not be negative")
			}
			if n > math.MaxInt64/u.bytes {
				return 0, errors.New("byte size overflows int64")
			}
			return n * u.bytes, nil
		}
		f, err := parseFinite(num)
		if err != nil {
			return 0, fmt.Errorf("byte size: %w", err)
		}
		b := f * float64(u.bytes)
		if b < 0 {
			return 0, errors.New("byte size must not be negative")
		}
		if b >= math.MaxInt64 {
			return 0, errors.New("byte size overflows int64")
		}
		return int64(b), nil
	}
	return 0, errors.New("not a ratio, percentage or byte size (unit missing or unknown)")
}
