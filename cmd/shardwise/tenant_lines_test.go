package main

import (
	"slices"
	"testing"

	"github.com/shardwise/shardwise/shared/sim"
)

// Every tenant gets a line with its cancellations beside its latency; a tenant none of whose
// searches completed says so instead of showing a p99 of 0 ms.
func TestTenantLines(t *testing.T) {
	r := sim.Result{
		TasksCancelledByTenant:    map[string]int{"flood": 1200, "storefront": 0},
		SearchesCancelledByTenant: map[string]int{"flood": 450, "storefront": 0},
		SearchesRejectedByTenant:  map[string]int{"flood": 30},
		TenantP99SearchLatencyMs:  map[string]float64{"storefront": 51.1},
	}
	want := []string{
		"tenant flood: search p99 no completions, searches cancelled 450 (tasks 1200), rejected 30",
		"tenant storefront: search p99 51 ms, searches cancelled 0 (tasks 0)",
	}
	if got := tenantLines(r); !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}
