package cluster

import (
	"slices"
	"testing"
)

func TestSimpleMatch(t *testing.T) {
	cases := []struct {
		pattern, value string
		want           bool
	}{
		{"node-1", "node-1", true},
		{"node-1", "node-10", false},
		{"node-*", "node-10", true},
		{"*-1", "node-1", true},
		{"*", "", true},
		{"n*e-*0", "node-10", true},
		{"n*e-*0", "node-11", false},
		{"*a*b*", "xaxbx", true},
		{"*a*b*", "xbxax", false},
		// Only '*' is special: OpenSearch has no '?' or character classes here.
		{"node-?", "node-1", false},
		{"node-[12]", "node-1", false},
		{"node-[12]", "node-[12]", true},
	}
	for _, tc := range cases {
		if got := SimpleMatch(tc.pattern, tc.value); got != tc.want {
			t.Errorf("SimpleMatch(%q, %q): got %v want %v", tc.pattern, tc.value, got, tc.want)
		}
	}
}

func TestFilterValues(t *testing.T) {
	n := &Node{ID: "id-1", Name: "node-1", Host: "host-1", IP: "10.0.0.1", Attributes: map[string]string{"zone": "a"}}
	cases := []struct {
		attr string
		want []string
	}{
		{"_name", []string{"node-1"}},
		{"_id", []string{"id-1"}},
		{"_ip", []string{"10.0.0.1"}},
		{"_publish_ip", []string{"10.0.0.1"}},
		{"_host_ip", []string{"10.0.0.1"}},
		{"_host", []string{"host-1", "10.0.0.1"}},
		{"zone", []string{"a"}},
		{"rack", nil},
	}
	for _, tc := range cases {
		if got := n.FilterValues(tc.attr); !slices.Equal(got, tc.want) {
			t.Errorf("FilterValues(%q): got %q want %q", tc.attr, got, tc.want)
		}
	}
	if got := FilterPatterns(" a, ,b* ,"); !slices.Equal(got, []string{"a", "b*"}) {
		t.Errorf("FilterPatterns: got %q", got)
	}
	if !FilterMatch([]string{"x", "10.0.*"}, n.FilterValues("_host")) || FilterMatch([]string{"rack-*"}, n.FilterValues("rack")) {
		t.Error("FilterMatch: want a match on _host's IP and none on a missing attribute")
	}
}
