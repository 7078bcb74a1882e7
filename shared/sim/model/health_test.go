package model

import "testing"

// TestWorseHealth: the worse of two colours, red over yellow over green; a colour it does not
// know ranks with green, and of two alike the first is kept.
func TestWorseHealth(t *testing.T) {
	for _, tt := range []struct{ a, b, want string }{
		{"green", "green", "green"},
		{"green", "yellow", "yellow"},
		{"yellow", "green", "yellow"},
		{"yellow", "red", "red"},
		{"red", "yellow", "red"},
		{"green", "red", "red"},
		{"red", "red", "red"},
		{"green", "blue", "green"},
		{"blue", "green", "blue"},
		{"blue", "yellow", "yellow"},
		{"yellow", "RED", "yellow"},
		{"", "yellow", "yellow"},
	} {
		if got := WorseHealth(tt.a, tt.b); got != tt.want {
			t.Errorf("WorseHealth(%q, %q) = %q, want %q", tt.a, tt.b, got, tt.want)
		}
	}
}
