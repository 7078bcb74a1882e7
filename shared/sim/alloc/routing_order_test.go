package alloc

import (
	"fmt"
	"strings"
	"testing"

	"github.com/shardwise/shardwise/shared/sim/model"
)

// The expected figures and orders were printed by Java 17 (String.hashCode, and the key set of a
// HashMap filled in creation order).
func TestJavaStringHash(t *testing.T) {
	tests := []struct {
		in   string
		want int32
	}{
		{"hello", 99162322},
		{"tenant-0", -1306694707},
		{"tenant-59", -1852830041},
		{"logs-2026.01.01", -1234826240},
		{"ünïcode-😀", 1630115430}, // a rune outside the BMP counts as two UTF-16 units
	}
	for _, tc := range tests {
		if got := javaStringHash(tc.in); got != tc.want {
			t.Errorf("javaStringHash(%q): got %d, want %d", tc.in, got, tc.want)
		}
	}
}

func TestRoutingOrder(t *testing.T) {
	tests := []struct {
		name string
		n    int
		want string
	}{
		{"12 indices in a table of 16", 12, "tenant-0,tenant-2,tenant-10,tenant-1,tenant-11,tenant-8,tenant-7,tenant-9,tenant-4,tenant-3,tenant-6,tenant-5"},
		{"60 indices in a table of 128", 60, "tenant-50,tenant-51,tenant-41,tenant-42,tenant-43,tenant-44,tenant-45,tenant-46,tenant-47,tenant-48,tenant-49," +
			"tenant-52,tenant-53,tenant-10,tenant-54,tenant-11,tenant-55,tenant-12,tenant-56,tenant-13,tenant-57,tenant-14,tenant-58,tenant-15," +
			"tenant-59,tenant-16,tenant-17,tenant-18,tenant-19,tenant-8,tenant-7,tenant-9,tenant-4,tenant-3,tenant-6,tenant-5,tenant-0,tenant-20," +
			"tenant-2,tenant-21,tenant-1,tenant-22,tenant-23,tenant-24,tenant-25,tenant-26,tenant-27,tenant-28,tenant-29,tenant-40,tenant-30," +
			"tenant-31,tenant-32,tenant-33,tenant-34,tenant-35,tenant-36,tenant-37,tenant-38,tenant-39"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := &Allocator{Sim: &model.Sim{}}
			for i := range tc.n {
				s.Indices = append(s.Indices, &model.Index{Name: fmt.Sprintf("tenant-%d", i)})
			}
			var names []string
			for _, ix := range s.routingOrder() {
				names = append(names, ix.Name)
			}
			if got := strings.Join(names, ","); got != tc.want {
				t.Errorf("routing order:\ngot  %s\nwant %s", got, tc.want)
			}
		})
	}
}
