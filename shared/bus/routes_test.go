package bus

import (
	"slices"
	"testing"
)

func TestRoutes(t *testing.T) {
	cases := []struct {
		detailType string
		want       []string
	}{
		{TypeStatsIngested, []string{FunctionDetect, FunctionReplicas, FunctionSandbox}},
		{TypeMovesPlanned, []string{FunctionMove}},
		{TypeScaleUpNeeded, nil},
		{TypeShardMoveExecuted, nil},
		{"Something Else", nil},
	}
	for _, tc := range cases {
		if got := Subscribers(tc.detailType); !slices.Equal(got, tc.want) {
			t.Errorf("Subscribers(%q): got %q want %q", tc.detailType, got, tc.want)
		}
	}
	for fn, want := range map[string][]string{
		FunctionDetect: {TypeStatsIngested}, FunctionMove: {TypeMovesPlanned},
		FunctionReplicas: {TypeStatsIngested}, FunctionSandbox: {TypeStatsIngested}, "ingest": nil,
	} {
		if got := Subscriptions(fn); !slices.Equal(got, want) {
			t.Errorf("Subscriptions(%q): got %q want %q", fn, got, want)
		}
	}
	// A caller may not change the table through what it was given.
	Subscribers(TypeStatsIngested)[0] = "changed"
	if Subscribers(TypeStatsIngested)[0] != FunctionDetect {
		t.Error("Subscribers returned the table itself")
	}
	if got := RuleName(TypeStatsIngested); got != "StatsIngested" {
		t.Errorf("RuleName: got %q", got)
	}
}
