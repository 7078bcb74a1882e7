package config

import (
	"strings"
	"testing"
)

// TestParseKeysExact: a key must spell its field exactly and appear once; otherwise the error names
// the key, and the safety it would have switched off stays on.
func TestParseKeysExact(t *testing.T) {
	for _, tc := range []struct {
		name, doc, want string
	}{
		{name: "upper case", doc: `{"safety": {"DRY_RUN": false}}`, want: `safety.DRY_RUN: keys are case-sensitive: write "dry_run"`},
		{name: "duplicate key", doc: `{"safety": {"dry_run": true, "dry_run": false}}`, want: "safety.dry_run: the key appears twice"},
		{name: "duplicate top-level key", doc: `{"table": "a", "table": "b"}`, want: "table: the key appears twice"},
		{name: "exact keys pass", doc: `{"safety": {"dry_run": false}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse(Default(), []byte(tc.doc))
			if tc.want == "" {
				if err != nil {
					t.Fatalf("got %v, want it accepted", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v (dry_run %v), want an error saying %q", err, c.Safety.DryRun, tc.want)
			}
		})
	}
}
