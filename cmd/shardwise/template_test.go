package main

import (
	"strings"
	"testing"

	"github.com/shardwise/shardwise/shared/deploy"
)

func TestTemplateCommand(t *testing.T) {
	want, err := deploy.YAML(deploy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	named, err := deploy.YAML(deploy.Options{BusName: "shardwise"})
	if err != nil {
		t.Fatal(err)
	}
	wantRoles, err := deploy.FGACRoles()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"template", []string{"template"}, string(want)},
		{"fine-grained access control roles", []string{"template", "--fgac-role"}, wantRoles},
		{"bus name", []string{"template", "--bus-name", "shardwise"}, string(named)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, _, err := execute(t, tc.args...)
			if err != nil {
				t.Fatal(err)
			}
			if out != tc.want {
				t.Errorf("got %d bytes starting %q, want %d bytes starting %q", len(out), head(out), len(tc.want), head(tc.want))
			}
		})
	}
	if out, _, _ := execute(t, "template", "--fgac-role"); !strings.Contains(out, "PUT _plugins/_security/api/roles/shardwise_move") {
		t.Errorf("--fgac-role: no role for move in\n%s", out)
	}
	if string(named) == string(want) || !strings.Contains(string(named), "Default: shardwise\n") {
		t.Errorf("--bus-name shardwise: the template does not default EventBusName to shardwise")
	}

	// A name EventBridge would refuse is refused here, before anything is printed, naming the flag.
	for _, bad := range []string{"shard wise", "shard/wise", "default", strings.Repeat("b", 257)} {
		t.Run("bus name "+head(bad), func(t *testing.T) {
			out, _, err := execute(t, "template", "--bus-name", bad)
			if err == nil || !strings.Contains(err.Error(), "--bus-name") || !strings.Contains(err.Error(), "BusName") {
				t.Errorf("--bus-name %q: got error %v, want one naming --bus-name", bad, err)
			}
			if out != "" {
				t.Errorf("--bus-name %q: printed %d bytes, want nothing", bad, len(out))
			}
		})
	}
}

func head(s string) string {
	if len(s) > 60 {
		return s[:60]
	}
	return s
}
