package allocation

import (
	"strings"
	"testing"
)

func TestConfigValidate(t *testing.T) {
	cases := []struct {
		name  string
		edit  func(c *Config)
		field string // "" when valid
	}{
		{"defaults are valid", func(*Config) {}, ""},
		{"queue latency threshold zero", func(c *Config) { c.QueueLatencyThreshold = 0 }, "allocation.queue_latency_threshold"},
		{"hot utilization over 1", func(c *Config) { c.HotUtilization = 1.2 }, "allocation.hot_utilization"},
		{"no sustained samples", func(c *Config) { c.SustainedSamples = 0 }, "allocation.sustained_samples"},
		{"allocation utilization zero", func(c *Config) { c.AllocationUtilization = 0 }, "allocation.allocation_utilization"},
		{"negative minimum shard load", func(c *Config) { c.MinShardWriteLoad = -1 }, "allocation.min_shard_write_load"},
		{"heap limit over 1", func(c *Config) { c.HeapLimit = 2 }, "allocation.heap_limit"},
		{"index balance factor under 1", func(c *Config) { c.IndexBalanceFactor = 0.5 }, "allocation.index_balance_factor"},
		{"drain within zero", func(c *Config) { c.DrainWithin = 0 }, "allocation.drain_within"},
		{"negative colocation pace", func(c *Config) { c.ColocationEvery = -1 }, "allocation.colocation_every"},
		{"negative relief cooling-off", func(c *Config) { c.ReliefCoolingOff = -1 }, "allocation.relief_cooling_off"},
		{"relief cooling-off over a day", func(c *Config) { c.ReliefCoolingOff = maxPeriod + 1 }, "allocation.relief_cooling_off"},
		{"no relief cooling-off", func(c *Config) { c.ReliefCoolingOff = 0 }, ""},
		{"trend window off", func(c *Config) { c.TrendWindow = 0 }, ""},
		{"trend window under a minute", func(c *Config) { c.TrendWindow = minTrendWindow - 1 }, "allocation.trend_window"},
		{"trend window over an hour", func(c *Config) { c.TrendWindow = maxTrendWindow + 1 }, "allocation.trend_window"},
		{"negative trend window", func(c *Config) { c.TrendWindow = -1 }, "allocation.trend_window"},
		{"spreading ahead off", func(c *Config) { c.SpreadAheadMean = 0 }, ""},
		{"negative spread-ahead mean", func(c *Config) { c.SpreadAheadMean = -0.1 }, "allocation.spread_ahead_mean"},
		{"spread-ahead mean at saturation", func(c *Config) { c.SpreadAheadMean = 1 }, "allocation.spread_ahead_mean"},
		{"builtin weights both zero", func(c *Config) { c.BuiltinBalancer.Shard, c.BuiltinBalancer.Index = 0, 0 }, "allocation.builtin_balancer"},
		{"builtin threshold zero", func(c *Config) { c.BuiltinBalancer.Threshold = 0 }, "allocation.builtin_balancer.threshold"},
		{"builtin off: its weights are not checked", func(c *Config) {
			c.BuiltinBalancer = BuiltinBalancer{}
		}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultConfig()
			tc.edit(&c)
			err := c.Validate()
			if tc.field == "" {
				if err != nil {
					t.Fatalf("got %v want no error", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.field+":") {
				t.Fatalf("got %v want an error naming %s", err, tc.field)
			}
		})
	}
}
