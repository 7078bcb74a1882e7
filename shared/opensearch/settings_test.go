package opensearch

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestFlattenSettings(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    map[string]string
		wantErr bool
	}{
		{"nested", `{"index":{"number_of_shards":"2","routing":{"allocation":{"include":{"zone":"a"}}}}}`,
			map[string]string{"index.number_of_shards": "2", "index.routing.allocation.include.zone": "a"}, false},
		{"flat", `{"index.number_of_shards":"2","index.routing.allocation.include.zone":"a"}`,
			map[string]string{"index.number_of_shards": "2", "index.routing.allocation.include.zone": "a"}, false},
		{"mixed", `{"index":{"routing.allocation":{"include.zone":"a"}}}`,
			map[string]string{"index.routing.allocation.include.zone": "a"}, false},
		{"list of scalars", `{"a":["x","y"]}`, map[string]string{"a": "x,y"}, false},
		{"empty list", `{"a":[]}`, map[string]string{"a": ""}, false},
		{"list of objects", `{"a":[{"b":"1"},{"b":"2"}]}`, map[string]string{"a.0.b": "1", "a.1.b": "2"}, false},
		{"numbers and booleans", `{"a":10737418240,"b":true}`, map[string]string{"a": "10737418240", "b": "true"}, false},
		{"null is unset", `{"a":null,"b":"1"}`, map[string]string{"b": "1"}, false},
		{"absent", ``, map[string]string{}, false},
		{"null document", `null`, map[string]string{}, false},
		{"not an object", `["a"]`, nil, true},
		{"broken JSON", `{"a":`, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := flattenSettings(json.RawMessage(tt.in))
			if (err != nil) != tt.wantErr {
				t.Fatalf("got error %v, want error: %t", err, tt.wantErr)
			}
			if !tt.wantErr {
				checkEqual(t, got, tt.want)
			}
		})
	}
}

func TestClusterSettingsPrecedence(t *testing.T) {
	tests := []struct {
		name string
		body string
		want string
	}{
		{"defaults only", `{"defaults":{"k":"d"}}`, "d"},
		{"persistent over defaults", `{"defaults":{"k":"d"},"persistent":{"k":"p"}}`, "p"},
		{"transient over persistent", `{"defaults":{"k":"d"},"persistent":{"k":"p"},"transient":{"k":"t"}}`, "t"},
		{"nested persistent over flat defaults", `{"defaults":{"a.k":"d"},"persistent":{"a":{"k":"p"}}}`, "p"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := decodeClusterSettings([]byte(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			key := "k"
			if _, ok := s[key]; !ok {
				key = "a.k"
			}
			if got := s[key]; got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestClusterSettingsHelpers(t *testing.T) {
	tests := []struct {
		name          string
		settings      ClusterSettings
		wantWatermark Watermark
		wantAwareness []string
		wantForced    map[string][]string
		wantFilters   AllocationFilters
		wantEnable    string
	}{
		{
			name:          "empty: OpenSearch defaults",
			settings:      ClusterSettings{},
			wantWatermark: Watermark{UsedRatio: 0.9},
			wantForced:    map[string][]string{},
			wantEnable:    "all",
		},
		{
			name: "everything set",
			settings: ClusterSettings{
				"cluster.routing.allocation.disk.watermark.high":         "0.85",
				"cluster.routing.allocation.awareness.attributes":        " zone , rack ",
				"cluster.routing.allocation.awareness.force.zone.values": "a,b",
				"cluster.routing.allocation.include._ip":                 "10.0.0.*",
				"cluster.routing.allocation.exclude._name":               "node-9,node-8",
				"cluster.routing.allocation.require.zone":                "a",
				"cluster.routing.allocation.exclude._host":               "",
				"cluster.routing.allocation.enable":                      "NONE",
				"cluster.routing.allocation.include_relocations":         "true",
			},
			wantWatermark: Watermark{UsedRatio: 0.85},
			wantAwareness: []string{"zone", "rack"},
			wantForced:    map[string][]string{"zone": {"a", "b"}},
			wantFilters: AllocationFilters{
				Include: map[string]string{"_ip": "10.0.0.*"},
				Exclude: map[string]string{"_name": "node-9,node-8"},
				Require: map[string]string{"zone": "a"},
			},
			wantEnable: "none",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, err := tt.settings.DiskHighWatermark()
			if err != nil {
				t.Fatal(err)
			}
			checkEqual(t, w, tt.wantWatermark)
			checkEqual(t, tt.settings.AwarenessAttributes(), tt.wantAwareness)
			checkEqual(t, tt.settings.ForcedAwareness(), tt.wantForced)
			checkEqual(t, tt.settings.Filters(), tt.wantFilters)
			checkEqual(t, tt.settings.AllocationEnable(), tt.wantEnable)
		})
	}
}

func TestRecoveryBytesPerSecond(t *testing.T) {
	tests := []struct {
		name    string
		value   string // "" leaves the setting out
		want    int64
		wantErr bool
	}{
		{"absent: the caller's default", "", 0, false},
		{"OpenSearch's default as include_defaults reports it", "40mb", 40 << 20, false},
		{"a raised limit", "250mb", 250 << 20, false},
		{"bytes", "1048576", 1 << 20, false},
		{"0 is no limit", "0", UnlimitedRecoveryBytesPerSecond, false},
		{"not a size", "fast", 0, true},
		{"negative", "-1mb", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := ClusterSettings{}
			if tt.value != "" {
				s["indices.recovery.max_bytes_per_sec"] = tt.value
			}
			got, err := s.RecoveryBytesPerSecond()
			if (err != nil) != tt.wantErr {
				t.Fatalf("error: got %v, want error %v", err, tt.wantErr)
			}
			if err != nil && !strings.Contains(err.Error(), "indices.recovery.max_bytes_per_sec") {
				t.Errorf("error %q does not name the setting", err)
			}
			if got != tt.want {
				t.Errorf("got %d, want %d", got, tt.want)
			}
		})
	}
}

func TestClusterSettingsHelperErrors(t *testing.T) {
	s := ClusterSettings{
		"cluster.routing.allocation.disk.watermark.high":    "lots",
		"cluster.routing.allocation.disk.threshold_enabled": "maybe",
	}
	if _, err := s.DiskHighWatermark(); err == nil {
		t.Error("DiskHighWatermark: got nil error for \"lots\"")
	}
	if _, err := s.DiskThresholdEnabled(); err == nil {
		t.Error("DiskThresholdEnabled: got nil error for \"maybe\"")
	}
}

func TestDecodeErrors(t *testing.T) {
	tests := []struct {
		name   string
		decode func([]byte) error
		body   string
	}{
		{"shard stats: shard key not a number", func(b []byte) error { _, err := decodeShardStats(b); return err },
			`{"indices":{"a":{"shards":{"x":[{}]}}}}`},
		{"shard stats: negative shard", func(b []byte) error { _, err := decodeShardStats(b); return err },
			`{"indices":{"a":{"shards":{"-1":[{}]}}}}`},
		{"cluster state: bad number_of_replicas", func(b []byte) error { _, err := decodeClusterState(b); return err },
			`{"metadata":{"indices":{"a":{"settings":{"index":{"number_of_replicas":"two"}}}}}}`},
		{"cluster state: unknown replication type", func(b []byte) error { _, err := decodeClusterState(b); return err },
			`{"metadata":{"indices":{"a":{"settings":{"index":{"replication":{"type":"LOGICAL"}}}}}}}`},
		{"cluster state: routing shard key", func(b []byte) error { _, err := decodeClusterState(b); return err },
			`{"routing_table":{"indices":{"a":{"shards":{"zero":[]}}}}}`},
		{"index settings: two indices", func(b []byte) error { _, err := decodeIndexSettings(b); return err },
			`{"a":{"settings":{}},"b":{"settings":{}}}`},
		{"nodes stats: wrong type", func(b []byte) error { _, err := decodeNodesStats(b); return err },
			`{"nodes":{"n":{"thread_pool":{"write":{"queue":"many"}}}}}`},
		{"not JSON", func(b []byte) error { _, err := decodeHealth(b); return err }, `<html>`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.decode([]byte(tt.body)); err == nil {
				t.Error("got nil error, want one")
			}
		})
	}
}
