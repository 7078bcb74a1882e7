package opensearch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
)

// ErrNotAcknowledged is returned when the cluster manager did not acknowledge a change in time.
// The change may still be applied: read the state again before retrying it.
var ErrNotAcknowledged = errors.New("not acknowledged by the cluster manager")

// ErrResponseTooLarge is returned for a response body over Config.MaxResponseBytes: reading it
// whole could exhaust a Lambda's memory. The largest answer, _stats at level=shards, grows with
// the shard copies; raise MaxResponseBytes (and the function's memory) for a larger cluster.
var ErrResponseTooLarge = errors.New("response over the size cap (Config.MaxResponseBytes)")

// APIError is a non-2xx response from OpenSearch or from the AWS front end before it, or a
// failure OpenSearch listed inside a 200 answer (Status 200; see CancelTask).
type APIError struct {
	// Status is the HTTP status code.
	Status int
	// Type is OpenSearch's error type, e.g. "security_exception"; empty for AWS and non-JSON bodies.
	Type string
	// Reason is OpenSearch's reason, or AWS's Message.
	Reason string
	// Body is the response body, cut to 4 KiB.
	Body string
}

// Error describes the status and, when known, the type and reason; otherwise the body.
func (e *APIError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "opensearch returned %d %s", e.Status, http.StatusText(e.Status))
	switch {
	case e.Type != "" && e.Reason != "":
		fmt.Fprintf(&b, ": %s: %s", e.Type, e.Reason)
	case e.Reason != "":
		fmt.Fprintf(&b, ": %s", e.Reason)
	case e.Type != "":
		fmt.Fprintf(&b, ": %s", e.Type)
	case strings.TrimSpace(e.Body) != "":
		fmt.Fprintf(&b, ": %s", strings.TrimSpace(e.Body))
	}
	return b.String()
}

// errorCause is OpenSearch's ErrorCause (spec: _common.yaml#/components/schemas/ErrorCause).
type errorCause struct {
	Type      string       `json:"type"`
	Reason    string       `json:"reason"`
	NodeID    string       `json:"node_id"`
	RootCause []errorCause `json:"root_cause"`
	CausedBy  *errorCause  `json:"caused_by"`
}

// maxCauses bounds how deep caused_by chains are followed: they nest as deep as the JSON does,
// and a hostile body must not build a huge string.
const maxCauses = 8

// innermostType is the type of the deepest caused_by, the most specific one.
func (c errorCause) innermostType() string {
	t := c.Type
	next := c.CausedBy
	for i := 0; next != nil && i < maxCauses; i++ {
		if next.Type != "" {
			t = next.Type
		}
		next = next.CausedBy
	}
	return t
}

// describe is the reason followed by its chain of causes, for failures listed inside a 200 body.
func (c errorCause) describe() string {
	var b strings.Builder
	b.WriteString(c.Reason)
	next := c.CausedBy
	for i := 0; next != nil && i < maxCauses; i++ {
		fmt.Fprintf(&b, "; caused by %s: %s", next.Type, next.Reason)
		next = next.CausedBy
	}
	return b.String()
}

// parseAPIError reads OpenSearch's {"error":{...},"status":N} or {"error":"...","status":N}, and
// AWS's {"Message":"..."} (or {"message":"..."}); any other body is kept as text.
func parseAPIError(status int, body []byte) *APIError {
	e := &APIError{Status: status, Body: truncate(body, maxErrorBody)}
	var doc struct {
		Error json.RawMessage `json:"error"`
		// encoding/json matches keys case-insensitively, so this takes AWS's "Message" and
		// API Gateway's "message" alike.
		Message string `json:"message"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return e
	}
	var cause errorCause
	var text string
	switch {
	case json.Unmarshal(doc.Error, &cause) == nil && (cause.Type != "" || cause.Reason != ""):
		e.Type, e.Reason = cause.Type, cause.Reason
		if e.Reason == "" && len(cause.RootCause) > 0 {
			e.Reason = cause.RootCause[0].Reason
		}
	case json.Unmarshal(doc.Error, &text) == nil && text != "":
		e.Reason = text
	default:
		e.Reason = doc.Message
	}
	return e
}

// truncate returns at most n bytes of b as valid UTF-8.
func truncate(b []byte, n int) string {
	if len(b) > n {
		b = b[:n]
	}
	return strings.ToValidUTF8(string(b), "")
}

// IsForbidden reports whether err is a 401 or 403: credentials missing, wrong, or without the
// permission the call needs. Retrying does not help.
func IsForbidden(err error) bool {
	var apiErr *APIError
	return errors.As(err, &apiErr) && (apiErr.Status == http.StatusUnauthorized || apiErr.Status == http.StatusForbidden)
}

// IsNotFound reports whether err says the index, shard or task does not exist: a 404, or a
// resource_not_found_exception listed inside a 200 body (a task cancellation on a node).
func IsNotFound(err error) bool {
	var apiErr *APIError
	return errors.As(err, &apiErr) && (apiErr.Status == http.StatusNotFound || apiErr.Type == "resource_not_found_exception")
}

// IsRetryable reports whether err is transient, so the same call may succeed later: a 429, 502,
// 503 or 504 that outlasted the client's own retries, a timeout, or a dropped connection. A
// caller's cancellation is not retryable.
func IsRetryable(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) {
		return false
	}
	var apiErr *APIError
	if errors.As(err, &apiErr) {
		return slices.Contains(retryOnStatus, apiErr.Status)
	}
	var netErr net.Error
	if errors.As(err, &netErr) && netErr.Timeout() {
		return true
	}
	return errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF)
}
