package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shardwise/shardwise/shared/size"
)

// A configuration file's errors say where: the file, line and column, and the key's path, so an
// unknown key names its section and a duration without a unit names its key.
func TestLoadFileErrorsSayWhere(t *testing.T) {
	cases := []struct {
		name, doc, want string
	}{
		{"unknown key in a section", "{\n  \"safety\": {\n    \"dry_rnu\": false\n  }\n}",
			`config.json:3:5: safety.dry_rnu: unknown field "dry_rnu" in safety`},
		{"unknown top-level key", `{"tabel": "x"}`, `config.json:1:2: tabel: unknown field "tabel" at the top level`},
		{"duration without a unit", "{\"safety\": {\n  \"max_stats_age\": \"90\"}}",
			`config.json:2:20: safety.max_stats_age: duration "90" has no unit: write "90s"`},
		{"replicas duration without a unit", `{"replicas": {"scale_down_after": "30"}}`,
			`config.json:1:35: replicas.scale_down_after: duration "30" has no unit`},
		{"a size that is not one", `{"safety": {"max_bytes_per_cycle": "lots"}}`,
			`config.json:1:36: safety.max_bytes_per_cycle: size "lots": want a number of bytes`},
		{"wrong type", `{"replicas": {"enabled": "yes"}}`, `config.json:1:26: replicas.enabled: want true or false, got string`},
		{"cut short", "{\"safety\": {\n", `config.json:2:1: the document ends early`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "config.json")
			if err := os.WriteFile(path, []byte(tc.doc), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := LoadFile(path)
			if err == nil {
				t.Fatalf("got no error, want %s", tc.want)
			}
			if got := strings.TrimPrefix(err.Error(), "config "+filepath.Dir(path)+string(filepath.Separator)); !strings.HasPrefix(got, tc.want) {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
}

func TestSizesAndDurationsWithUnits(t *testing.T) {
	c, err := Parse(Default(), []byte(`{"safety": {"max_bytes_per_cycle": "20GiB", "max_stats_age": "2m"}, "replicas": {"scale_down_after": "45m"}}`))
	if err != nil {
		t.Fatal(err)
	}
	if c.Safety.MaxBytesPerCycle != size.Bytes(20<<30) || c.Safety.MaxStatsAge.Std().Minutes() != 2 || c.Replicas.ScaleDownAfter.Minutes() != 45 {
		t.Errorf("got max_bytes_per_cycle %d, max_stats_age %s, scale_down_after %s; want 20 GiB, 2m, 45m",
			c.Safety.MaxBytesPerCycle, c.Safety.MaxStatsAge, c.Replicas.ScaleDownAfter)
	}
	// A raw number of bytes still reads as before.
	c, err = Parse(Default(), []byte(`{"safety": {"max_bytes_per_cycle": 1073741824}}`))
	if err != nil || c.Safety.MaxBytesPerCycle != 1<<30 {
		t.Errorf("got %d, %v; want 1 GiB", c.Safety.MaxBytesPerCycle, err)
	}
}
