package engine

import (
	"reflect"
	"testing"
	"time"

	"github.com/shardwise/shardwise/shared/replicas"
)

// TestSameMemory: sameMemory gives what sameJSON gives for the replica controller's memory, in
// every way two memories can differ or look different and encode alike. The memory's fields are
// counted so that a new field fails this test until sameMemoryEntry compares it.
func TestSameMemory(t *testing.T) {
	if n := reflect.TypeFor[replicas.Memory]().NumField(); n != 8 {
		t.Fatalf("replicas.Memory has %d fields; sameMemoryEntry compares 8", n)
	}
	if n := reflect.TypeFor[replicas.Seen]().NumField(); n != 2 {
		t.Fatalf("replicas.Seen has %d fields; sameMemoryEntry compares 2", n)
	}
	at := time.Date(2026, 12, 3, 11, 0, 0, 5, time.UTC)
	plus1 := time.FixedZone("plus1", 3600)
	utcNamed := time.FixedZone("UTC0", 0)
	base := func() replicas.Memory {
		return replicas.Memory{Index: "logs", FirstSeenReplicas: 1, LowerSince: at, WindowMax: 2,
			Recent: []replicas.Seen{{At: at, Target: 2}, {At: at.Add(time.Minute), Target: 1}}, OverSince: at, LastChange: at, LastReason: "r"}
	}
	with := func(f func(*replicas.Memory)) map[string]replicas.Memory {
		m := base()
		f(&m)
		return map[string]replicas.Memory{"logs": m}
	}
	same := map[string]replicas.Memory{"logs": base()}
	now := time.Now() // with a monotonic reading
	for _, tt := range []struct {
		name string
		a, b map[string]replicas.Memory
		want bool
	}{
		{"equal", same, with(func(*replicas.Memory) {}), true},
		{"nil and empty", nil, map[string]replicas.Memory{}, false},
		{"both nil", nil, nil, true},
		{"an entry more", same, map[string]replicas.Memory{"logs": base(), "x": {}}, false},
		{"another key", same, map[string]replicas.Memory{"x": base()}, false},
		{"index", same, with(func(m *replicas.Memory) { m.Index = "x" }), false},
		{"first seen", same, with(func(m *replicas.Memory) { m.FirstSeenReplicas = 2 }), false},
		{"window max", same, with(func(m *replicas.Memory) { m.WindowMax = 0 }), false},
		{"reason", same, with(func(m *replicas.Memory) { m.LastReason = "" }), false},
		{"lower since", same, with(func(m *replicas.Memory) { m.LowerSince = at.Add(1) }), false},
		{"over since zero", same, with(func(m *replicas.Memory) { m.OverSince = time.Time{} }), false},
		{"last change", same, with(func(m *replicas.Memory) { m.LastChange = at.Add(time.Second) }), false},
		{"same instant, another offset", same, with(func(m *replicas.Memory) { m.LastChange = at.In(plus1) }), false},
		{"same instant, offset 0 by another name", same, with(func(m *replicas.Memory) { m.LastChange = at.In(utcNamed) }), true},
		{"a monotonic reading and none", with(func(m *replicas.Memory) { m.LastChange = now }), with(func(m *replicas.Memory) { m.LastChange = now.Round(0) }), true},
		{"recent target", same, with(func(m *replicas.Memory) { m.Recent = []replicas.Seen{{At: at, Target: 3}, m.Recent[1]} }), false},
		{"recent time", same, with(func(m *replicas.Memory) { m.Recent = []replicas.Seen{{At: at.In(plus1), Target: 2}, m.Recent[1]} }), false},
		{"recent shorter", same, with(func(m *replicas.Memory) { m.Recent = m.Recent[:1] }), false},
		{"recent nil and empty", with(func(m *replicas.Memory) { m.Recent = nil }), with(func(m *replicas.Memory) { m.Recent = []replicas.Seen{} }), true},
		{"recent zero time elsewhere", with(func(m *replicas.Memory) { m.Recent = []replicas.Seen{{}} }), with(func(m *replicas.Memory) { m.Recent = []replicas.Seen{{At: time.Time{}.In(utcNamed)}} }), true},
		{"zero times in another zone", with(func(m *replicas.Memory) { m.LowerSince, m.OverSince = time.Time{}, time.Time{} }),
			with(func(m *replicas.Memory) { m.LowerSince, m.OverSince = time.Time{}.In(plus1), time.Time{}.In(utcNamed) }), true},
		{"keys not UTF-8 that encode alike", map[string]replicas.Memory{"a\xff": {}}, map[string]replicas.Memory{"a\xfe": {}}, true},
		{"reasons not UTF-8 that encode alike", with(func(m *replicas.Memory) { m.LastReason = "\xff" }), with(func(m *replicas.Memory) { m.LastReason = "\xfe" }), true},
		{"a year encoding refuses", with(func(m *replicas.Memory) { m.LastChange = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC) }),
			with(func(m *replicas.Memory) { m.LastChange = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC) }), false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := sameJSON(tt.a, tt.b); got != tt.want {
				t.Fatalf("sameJSON = %v, want %v (the case is wrong)", got, tt.want)
			}
			if got := sameMemory(tt.a, tt.b); got != tt.want {
				t.Errorf("sameMemory = %v, want %v", got, tt.want)
			}
			if got := sameMemory(tt.b, tt.a); got != tt.want {
				t.Errorf("sameMemory swapped = %v, want %v", got, tt.want)
			}
		})
	}
}
