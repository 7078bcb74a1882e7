package replicas

import (
	"errors"
	"testing"
	"time"
)

func intp(v int) *int { return &v }

func TestDefaultConfigIsValid(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatalf("DefaultConfig().Validate() = %v, want nil", err)
	}
}

func TestValidateNamesTheBadField(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*Config)
		fields []string
	}{
		{"X zero", func(c *Config) { c.X = 0 }, []string{"x"}},
		{"X above one", func(c *Config) { c.X = 1.5 }, []string{"x"}},
		{"negative scale-down wait", func(c *Config) { c.ScaleDownAfter = -time.Second }, []string{"scale_down_after"}},
		{"negative default min", func(c *Config) { c.DefaultMin = -1 }, []string{"default_min"}},
		{"no changes per cycle", func(c *Config) { c.MaxIndicesPerCycle = 0 }, []string{"max_indices_per_cycle"}},
		{"negative idle load", func(c *Config) { c.MinTotalSearchLoad = -0.1 }, []string{"min_total_search_load"}},
		{"empty pattern", func(c *Config) { c.Overrides = []Override{{Pattern: ""}} }, []string{"overrides[0].pattern"}},
		{"bad glob", func(c *Config) { c.Overrides = []Override{{Pattern: "logs-["}} }, []string{"overrides[0].pattern"}},
		{"min above max", func(c *Config) {
			c.Overrides = []Override{{Pattern: "a"}, {Pattern: "b*", Min: intp(3), Max: intp(2)}}
		}, []string{"overrides[1].min"}},
		{"negative override bounds", func(c *Config) {
			c.Overrides = []Override{{Pattern: "a", Min: intp(-1), Max: intp(-1)}}
		}, []string{"overrides[0].min", "overrides[0].max"}},
		{"exclude with bounds", func(c *Config) {
			c.Overrides = []Override{{Pattern: "a", Exclude: true, Max: intp(2)}}
		}, []string{"overrides[0].exclude"}},
		{"scale-down wait over a week", func(c *Config) { c.ScaleDownAfter = 8 * 24 * time.Hour }, []string{"scale_down_after"}},
		{"node-left delay over a week", func(c *Config) { c.NodeLeftDelay = 1<<63 - 1 }, []string{"node_left_delay"}},
		{"default min past any cluster", func(c *Config) { c.DefaultMin = 1000 }, []string{"default_min"}},
		{"changes per cycle past any cluster", func(c *Config) { c.MaxIndicesPerCycle = 2e9 }, []string{"max_indices_per_cycle"}},
		{"every error reported", func(c *Config) { c.X, c.MaxIndicesPerCycle = 0, 0 }, []string{"x", "max_indices_per_cycle"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			tc.mutate(&cfg)
			err := cfg.Validate()
			if err == nil {
				t.Fatalf("Validate() = nil, want errors for %v", tc.fields)
			}
			var got []string
			for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
				var fe *FieldError
				if !errors.As(e, &fe) {
					t.Fatalf("error %v is %T, want *FieldError", e, e)
				}
				got = append(got, fe.Field)
			}
			if len(got) != len(tc.fields) {
				t.Fatalf("fields got %v, want %v", got, tc.fields)
			}
			for i := range got {
				if got[i] != tc.fields[i] {
					t.Errorf("field %d got %q, want %q", i, got[i], tc.fields[i])
				}
			}
		})
	}
}

func TestOverrideFirstMatchWins(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Overrides = []Override{{Pattern: "logs-*", Max: intp(2)}, {Pattern: "*", Exclude: true}}
	tests := []struct {
		name    string
		index   string
		pattern string
		found   bool
	}{
		{"specific pattern first", "logs-2024", "logs-*", true},
		{"catch-all second", "metrics", "*", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o, ok := cfg.override(tc.index)
			if ok != tc.found || o.Pattern != tc.pattern {
				t.Errorf("override(%q) got %q,%v want %q,%v", tc.index, o.Pattern, ok, tc.pattern, tc.found)
			}
		})
	}
}
