// Package buildinfo says which build of shardwise is running: its version, the commit it was built
// from and the Go version that built it, for `shardwise version` and the functions' start-up log.
//
// `make build` and `make sam-build` set Version and Commit with the linker:
//
//	-ldflags "-X github.com/shardwise/shardwise/shared/buildinfo.Version=v0.1.0 -X github.com/shardwise/shardwise/shared/buildinfo.Commit=abc1234"
//
// A build without them (`go install …@v0.1.0`, `go build`, a plain `sam build`) falls back to what
// the Go toolchain records in the binary: the module version of a `go install`, and the VCS
// revision of a build inside a git checkout.
package buildinfo

import (
	"runtime"
	"runtime/debug"
)

// Set by -ldflags -X; empty in a build without them.
var (
	Version string
	Commit  string
)

// Info is one build's identity.
type Info struct {
	Version   string `json:"version"`
	Commit    string `json:"commit"`
	GoVersion string `json:"go_version"`
}

// Get returns this binary's build information.
func Get() Info {
	bi, _ := debug.ReadBuildInfo()
	return resolve(Version, Commit, bi, runtime.Version())
}

// resolve prefers the linker's values, then the toolchain's record, then "unknown" for the commit
// and "dev" for the version.
func resolve(version, commit string, bi *debug.BuildInfo, goVersion string) Info {
	if bi != nil {
		if version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			version = bi.Main.Version
		}
		if commit == "" {
			var rev string
			var modified bool
			for _, s := range bi.Settings {
				switch s.Key {
				case "vcs.revision":
					rev = s.Value
				case "vcs.modified":
					modified = s.Value == "true"
				}
			}
			if rev != "" {
				commit = rev
				if modified {
					commit += "-dirty"
				}
			}
		}
	}
	if version == "" {
		version = "dev"
	}
	if commit == "" {
		commit = "unknown"
	}
	return Info{Version: version, Commit: commit, GoVersion: goVersion}
}
