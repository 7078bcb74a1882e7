package buildinfo

import (
	"runtime/debug"
	"testing"
)

func TestResolve(t *testing.T) {
	vcs := func(rev, modified string) *debug.BuildInfo {
		return &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: rev}, {Key: "vcs.modified", Value: modified}}}
	}
	tests := []struct {
		name, version, commit string
		bi                    *debug.BuildInfo
		want                  Info
	}{
		{name: "linker values win", version: "v1.2.3", commit: "abc1234", bi: vcs("ffff", "false"),
			want: Info{"v1.2.3", "abc1234", "go1.x"}},
		{name: "go install of a tagged module", bi: &debug.BuildInfo{Main: debug.Module{Version: "v0.1.0"}},
			want: Info{"v0.1.0", "unknown", "go1.x"}},
		{name: "build in a checkout: the revision", bi: vcs("0123abc", "false"),
			want: Info{"dev", "0123abc", "go1.x"}},
		{name: "build in a checkout with changes", bi: vcs("0123abc", "true"),
			want: Info{"dev", "0123abc-dirty", "go1.x"}},
		{name: "no build information", want: Info{"dev", "unknown", "go1.x"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := resolve(tc.version, tc.commit, tc.bi, "go1.x"); got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}
