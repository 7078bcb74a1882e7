package rest_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/shardwise/shardwise/shared/sim/simtest"
)

// TestStateShowsSettingsChanges: the cluster state renders each index's settings once and keeps
// the rendering (renderedSettings); a settings change shows in the next read, flat and nested.
func TestStateShowsSettingsChanges(t *testing.T) {
	s := simtest.MustSim(t, simtest.RerouteScenario)
	simtest.StepN(s, 2)
	settingsOf := func(flat bool) map[string]any {
		t.Helper()
		target := "/_cluster/state/metadata?filter_path=metadata.indices.x.settings"
		if flat {
			target += "&flat_settings=true"
		}
		code, body := simtest.Call(t, s, "GET", target, "")
		var d map[string]any
		if err := json.Unmarshal([]byte(body), &d); code != 200 || err != nil {
			t.Fatalf("GET %s: %d %v %s", target, code, err, body)
		}
		m, _ := simtest.Dig(d, "metadata", "indices", "x", "settings").(map[string]any)
		return m
	}
	for _, step := range []struct {
		body                string
		nestedKeys, flatKey []any
		want                string
	}{
		{`{"index":{"number_of_replicas":0}}`, []any{"index", "number_of_replicas"}, []any{"index.number_of_replicas"}, "0"},
		{`{"index":{"routing":{"allocation":{"exclude":{"_name":"a"}}}}}`, []any{"index", "routing", "allocation", "exclude", "_name"}, []any{"index.routing.allocation.exclude._name"}, "a"},
		{`{"index":{"number_of_replicas":1}}`, []any{"index", "number_of_replicas"}, []any{"index.number_of_replicas"}, "1"},
	} {
		// Both renderings are read (and kept) before the change.
		settingsOf(false)
		settingsOf(true)
		if code, body := simtest.Call(t, s, "PUT", "/x/_settings", step.body); code != 200 {
			t.Fatalf("PUT %s: %d %s", step.body, code, body)
		}
		if got := simtest.Dig(settingsOf(false), step.nestedKeys...); got != step.want {
			t.Errorf("after %s: nested %v = %v, want %q", step.body, step.nestedKeys, got, step.want)
		}
		if got := simtest.Dig(settingsOf(true), step.flatKey...); got != step.want {
			t.Errorf("after %s: flat %v = %v, want %q", step.body, step.flatKey, got, step.want)
		}
	}
}

// TestReplicationTypeSetting: the cluster state carries each index's index.replication.type as
// OpenSearch 2.x writes it at creation, SEGMENT for a scenario index with replication_type segment
// and DOCUMENT otherwise, so a collector sees which indices index on their primaries only.
func TestReplicationTypeSetting(t *testing.T) {
	for _, tt := range []struct {
		name, field, want string
	}{
		{"segment", `"replication_type": "segment", `, "SEGMENT"},
		{"document, named", `"replication_type": "document", `, "DOCUMENT"},
		{"document, the default", ``, "DOCUMENT"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := simtest.MustSim(t, strings.Replace(simtest.Minimal, `"primaries": 2,`, tt.field+`"primaries": 2,`, 1))
			target := "/_cluster/state/metadata?filter_path=metadata.indices.*.settings.index.replication.type"
			code, body := simtest.Call(t, s, "GET", target, "")
			var d map[string]any
			if err := json.Unmarshal([]byte(body), &d); code != 200 || err != nil {
				t.Fatalf("GET %s: %d %v %s", target, code, err, body)
			}
			if got := simtest.Dig(d, "metadata", "indices", "x", "settings", "index", "replication", "type"); got != tt.want {
				t.Errorf("x index.replication.type: got %v, want %s (%s)", got, tt.want, body)
			}
		})
	}
}
