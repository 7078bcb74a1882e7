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
}

func head(s string) string {
	if len(s) > 60 {
		return s[:60]
	}
	return s
}
