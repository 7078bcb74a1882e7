package allocation

import "testing"

func TestDiskDecider(t *testing.T) {
	runDeciderCases(t, disk{}, []deciderCase{
		{name: "yes: room under the high watermark", shard: 0, from: "a", to: "c", want: Yes},
		{name: "no: over the high watermark ratio", mutate: func(f *fixture, _ *Config, _ map[string]bool) {
			f.node("c").DiskAvailableBytes = 15 << 30
		}, shard: 0, from: "a", to: "c", want: No},
		{name: "no: under the absolute free-bytes watermark", mutate: func(f *fixture, _ *Config, _ map[string]bool) {
			f.s.Settings.DiskHighWatermarkFreeBytes = 95 << 30
		}, shard: 0, from: "a", to: "c", want: No},
		{name: "yes: node reports no disk size", mutate: func(f *fixture, _ *Config, _ map[string]bool) {
			f.node("c").DiskTotalBytes = 0
		}, shard: 0, from: "a", to: "c", want: Yes},
	})
}
