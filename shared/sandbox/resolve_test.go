package sandbox

import (
	"strings"
	"testing"
)

func TestResolve(t *testing.T) {
	defs := Definitions{Sandboxes: []Sandbox{
		sb("analysts", "ba-*", 0.3, Soft),
		{Name: "operations", Attributes: Attributes{Role: "tellers", IndicesName: "transactions-*"}, Resources: Allocations{JVM: alloc(0.2)}, Enforcement: Hard},
		{Name: "tellers", Attributes: Attributes{Role: "tellers"}, Resources: Allocations{CPU: alloc(0.1)}, Enforcement: Soft},
		{Name: "alice", Attributes: Attributes{UserName: "alice"}, Resources: Allocations{CPU: alloc(0.1)}, Enforcement: Soft},
		{Name: "b-users", Attributes: Attributes{UserName: "b*"}, Resources: Allocations{CPU: alloc(0.1)}, Enforcement: Soft},
		{Name: "batch", Attributes: Attributes{CustomID: "nightly-*, adhoc"}, Resources: Allocations{CPU: alloc(0.1)}, Enforcement: Monitor},
		{Name: "iam", Attributes: Attributes{Role: "arn:aws:iam::1:role/*"}, Resources: Allocations{CPU: alloc(0.1)}, Enforcement: Monitor},
	}}
	if err := defs.Validate(); err != nil {
		t.Fatalf("test definitions invalid: %v", err)
	}
	tests := []struct {
		name      string
		req       Request
		sandbox   string
		score     int
		reasonHas string
	}{
		{"no match goes to genPop", Request{UserName: "zed", Roles: []string{"dev"}}, GenPop, 0, "no sandbox"},
		{"empty request goes to genPop", Request{}, GenPop, 0, "no sandbox"},
		{"wildcard role", Request{UserName: "zed", Roles: []string{"dev", "ba-east"}}, "analysts", 10, `role by wildcard "ba-east" ~ "ba-*"`},
		{"more attributes win", Request{Roles: []string{"tellers"}, Indices: []string{"transactions-1"}}, "operations", 21, "indices_name by wildcard"},
		{"every index must match", Request{Roles: []string{"tellers"}, Indices: []string{"transactions-1", "logs"}}, "tellers", 11, "role exactly"},
		{"no indices, no index match", Request{Roles: []string{"tellers"}}, "tellers", 11, ""},
		{"exact beats wildcard at equal count", Request{UserName: "alice", Roles: []string{"ba-1"}}, "alice", 11, `user_name exactly "alice"`},
		{"equal scores tie to genPop", Request{UserName: "bob", Roles: []string{"ba-1"}}, GenPop, 0, "analysts, b-users tie at score 10"},
		{"exact entry in a list", Request{CustomID: "adhoc"}, "batch", 11, ""},
		{"wildcard entry in a list", Request{CustomID: "nightly-7"}, "batch", 10, ""},
		{"wildcard spans '/'", Request{Roles: []string{"arn:aws:iam::1:role/search"}}, "iam", 10, ""},
		{"matching is case-sensitive", Request{UserName: "Alice"}, GenPop, 0, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, score, reason := defs.Resolve(tc.req)
			if got != tc.sandbox || score != tc.score {
				t.Errorf("Resolve() got %s/%d, want %s/%d (%s)", got, score, tc.sandbox, tc.score, reason)
			}
			if !strings.Contains(reason, tc.reasonHas) {
				t.Errorf("reason %q does not contain %q", reason, tc.reasonHas)
			}
		})
	}
}

func TestGlobMatch(t *testing.T) {
	tests := []struct {
		name, pattern, s string
		want             bool
	}{
		{"literal", "logs", "logs", true},
		{"literal mismatch", "logs", "logs-1", false},
		{"prefix", "logs-*", "logs-1", true},
		{"prefix empty rest", "logs-*", "logs-", true},
		{"suffix", "*-prod", "a-prod", true},
		{"middle", "a*b*c", "axxbyyc", true},
		{"middle order matters", "a*b*c", "acb", false},
		{"prefix and suffix must not overlap", "ab*ba", "aba", false},
		{"star alone", "*", "", true},
		{"brackets are literal", "r[1]*", "r[1]x", true},
		{"question mark is literal", "a?", "ab", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := globMatch(tc.pattern, tc.s); got != tc.want {
				t.Errorf("globMatch(%q, %q) got %v, want %v", tc.pattern, tc.s, got, tc.want)
			}
		})
	}
}
