package engine

import (
	"time"
	"unicode/utf8"

	"github.com/shardwise/shardwise/shared/replicas"
)

// sameMemory is sameJSON(a, b) for the replica controller's memory, compared field by field
// rather than by encoding both (an entry per index: 4,100 at production size, every cycle). Where
// the comparison could differ from the encodings' (a string that is not UTF-8, which encoding
// replaces; a time outside the years encoding takes), it asks sameJSON.
func sameMemory(a, b map[string]replicas.Memory) bool {
	if (a == nil) != (b == nil) || len(a) != len(b) {
		return false
	}
	for k := range b {
		if !utf8.ValidString(k) {
			return sameJSON(a, b)
		}
	}
	for k, x := range a {
		if !utf8.ValidString(k) {
			return sameJSON(a, b)
		}
		y, ok := b[k]
		if !ok {
			return false
		}
		same, sure := sameMemoryEntry(x, y)
		if !sure {
			return sameJSON(a, b)
		}
		if !same {
			return false
		}
	}
	return true
}

// sameMemoryEntry reports whether x and y encode alike; sure is false where only encoding can say.
func sameMemoryEntry(x, y replicas.Memory) (same, sure bool) {
	for _, s := range [...]string{x.Index, y.Index, x.LastReason, y.LastReason} {
		if !utf8.ValidString(s) {
			return false, false
		}
	}
	for _, t := range [...]time.Time{x.LowerSince, y.LowerSince, x.OverSince, y.OverSince, x.LastChange, y.LastChange} {
		if !encodableTime(t) {
			return false, false
		}
	}
	for _, r := range [2][]replicas.Seen{x.Recent, y.Recent} {
		for _, s := range r {
			if !encodableTime(s.At) {
				return false, false
			}
		}
	}
	if x.Index != y.Index || x.FirstSeenReplicas != y.FirstSeenReplicas || x.WindowMax != y.WindowMax ||
		x.LastReason != y.LastReason || len(x.Recent) != len(y.Recent) ||
		!sameOmitzeroTime(x.LowerSince, y.LowerSince) || !sameOmitzeroTime(x.OverSince, y.OverSince) ||
		!sameOmitzeroTime(x.LastChange, y.LastChange) {
		return false, true
	}
	for i := range x.Recent {
		if x.Recent[i].Target != y.Recent[i].Target || !sameTime(x.Recent[i].At, y.Recent[i].At) {
			return false, true
		}
	}
	return true, true
}

// encodableTime reports whether t encodes as JSON: encoding/json refuses years outside 0–9999.
func encodableTime(t time.Time) bool {
	y := t.Year()
	return y >= 0 && y <= 9999
}

// sameTime reports whether a and b encode alike (RFC 3339 with nanoseconds): the same instant at
// the same offset from UTC, whatever the zone's name.
func sameTime(a, b time.Time) bool {
	_, oa := a.Zone()
	_, ob := b.Zone()
	return a.Equal(b) && oa == ob
}

// sameOmitzeroTime is sameTime for a field left out when zero.
func sameOmitzeroTime(a, b time.Time) bool {
	if a.IsZero() || b.IsZero() {
		return a.IsZero() == b.IsZero()
	}
	return sameTime(a, b)
}
