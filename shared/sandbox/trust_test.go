package sandbox

import (
	"strings"
	"testing"
)

func TestForgeable(t *testing.T) {
	tests := []struct {
		name  string
		attrs Attributes
		want  bool
	}{
		{"custom_id alone is forgeable", Attributes{CustomID: "storefront-web"}, true},
		{"custom_id with indices is bounded by index permissions", Attributes{CustomID: "storefront-web", IndicesName: "shop"}, false},
		{"a principal is not forgeable", Attributes{CustomID: "x", UserName: "alice"}, false},
		{"indices alone", Attributes{IndicesName: "logs-*"}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := Forgeable(Definitions{Sandboxes: []Sandbox{{Name: "s", Attributes: tc.attrs}}})
			if got := len(w) == 1 && strings.Contains(w[0].Message, "forgeable: custom_id matches the X-Opaque-Id header"); got != tc.want {
				t.Errorf("got %v, want forgeable %v", w, tc.want)
			}
		})
	}
}

func TestOverlapWarnings(t *testing.T) {
	sb := func(name string, a Attributes) Sandbox { return Sandbox{Name: name, Attributes: a} }
	tests := []struct {
		name string
		a, b Attributes
		want string // "" for no warning
	}{
		{"an exact index beside a wildcard: the exact one governs", Attributes{IndicesName: "reports-*"}, Attributes{IndicesName: "reports-b1"},
			`a request with indices_name "reports-b1" matches sandboxes b (score 11) and a (score 10): b governs it`},
		{"more attributes govern", Attributes{CustomID: "web"}, Attributes{CustomID: "web", IndicesName: "shop"},
			`a request with indices_name "shop", custom_id "web" matches sandboxes b (score 22) and a (score 11): b governs it`},
		{"different attributes at one score tie into genPop", Attributes{IndicesName: "logs"}, Attributes{CustomID: "storefront-web"},
			`a request with indices_name "logs", custom_id "storefront-web" matches sandboxes a and b at the same score 11, so it runs in genPop`},
		{"an exact id outranks an index wildcard", Attributes{IndicesName: "logs-*"}, Attributes{CustomID: "storefront-web"},
			`a request with indices_name "logs-…", custom_id "storefront-web" matches sandboxes b (score 11) and a (score 10): b governs it`},
		{"disjoint prefixes do not overlap", Attributes{IndicesName: "logs-*"}, Attributes{IndicesName: "shop-*"}, ""},
		{"same attributes at one score are Validate's to refuse", Attributes{IndicesName: "reports-*"}, Attributes{IndicesName: "reports-b*"}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := Overlaps(Definitions{Sandboxes: []Sandbox{sb("a", tc.a), sb("b", tc.b)}})
			switch {
			case tc.want == "" && len(w) != 0:
				t.Errorf("got %v, want no warning", w)
			case tc.want != "" && (len(w) != 1 || !strings.Contains(w[0].Message, tc.want)):
				t.Errorf("got %v, want one containing %q", w, tc.want)
			}
		})
	}
}
