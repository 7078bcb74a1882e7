package collect

import (
	"errors"
	"testing"

	"github.com/shardwise/shardwise/shared/engine"
	"github.com/shardwise/shardwise/shared/opensearch"
)

// The engine sees only its own error contract; the client's error stays in the chain.
func TestClusterErr(t *testing.T) {
	cases := []struct {
		name          string
		err           error
		forbidden     bool
		notFound      bool
		keepsAPIError bool
	}{
		{"nil stays nil", nil, false, false, false},
		{"403 is forbidden", &opensearch.APIError{Status: 403, Type: "security_exception"}, true, false, true},
		{"401 is forbidden", &opensearch.APIError{Status: 401}, true, false, true},
		{"404 is not found", &opensearch.APIError{Status: 404, Type: "index_not_found_exception"}, false, true, true},
		{"a task not found inside a 200 is not found", &opensearch.APIError{Status: 200, Type: "resource_not_found_exception"}, false, true, true},
		{"503 is neither", &opensearch.APIError{Status: 503}, false, false, true},
		{"another error passes through", errors.New("dial tcp: refused"), false, false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := clusterErr(tc.err)
			if (got == nil) != (tc.err == nil) {
				t.Fatalf("got %v for %v", got, tc.err)
			}
			if errors.Is(got, engine.ErrForbidden) != tc.forbidden || errors.Is(got, engine.ErrNotFound) != tc.notFound {
				t.Errorf("%v: forbidden %v not found %v, want %v %v", got, errors.Is(got, engine.ErrForbidden), errors.Is(got, engine.ErrNotFound), tc.forbidden, tc.notFound)
			}
			var apiErr *opensearch.APIError
			if errors.As(got, &apiErr) != tc.keepsAPIError {
				t.Errorf("%v: client error in the chain %v, want %v", got, !tc.keepsAPIError, tc.keepsAPIError)
			}
		})
	}
}
