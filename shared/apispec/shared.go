package apispec

import (
	"sync"
	"testing"
)

var shared struct {
	once sync.Once
	spec *Spec
	err  error
}

// Shared returns the vendored specification (DefaultDir), loaded once per test binary, and
// fails t if it cannot be loaded. Loading parses some 150 YAML files, so tests that each
// validate a few responses share one copy.
func Shared(t testing.TB) *Spec {
	t.Helper()
	shared.once.Do(func() {
		shared.spec, shared.err = Load(DefaultDir())
	})
	if shared.err != nil {
		t.Fatalf("load OpenSearch API spec: %v", shared.err)
	}
	return shared.spec
}
