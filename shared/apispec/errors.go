package apispec

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	validatorerrors "github.com/pb33f/libopenapi-validator/errors"
)

// Violation is one way a response breaks the specification.
type Violation struct {
	// Pointer is the JSON pointer (RFC 6901) of the offending value in the body: "" for the
	// whole body, "/nodes/abc/name" for a nested one.
	Pointer string
	// Reason says what is wrong, e.g. "got string, want integer".
	Reason string
	// SchemaLocation is the JSON Schema keyword that failed, e.g.
	// "/properties/number_of_nodes/type"; empty when the failure is not a schema one (an
	// undeclared status or media type, a body that is not JSON).
	SchemaLocation string
}

// ValidationError lists every violation found in one response.
type ValidationError struct {
	Operation  Operation
	Path       string // concrete request path
	Status     int
	Violations []Violation
}

func (e *ValidationError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s (%s) status %d: %d violation(s) of the OpenSearch API spec",
		e.Operation.Method, e.Path, e.Operation.ID, e.Status, len(e.Violations))
	for _, v := range e.Violations {
		pointer := v.Pointer
		if pointer == "" {
			pointer = "(body)"
		}
		fmt.Fprintf(&b, "\n  %s: %s", pointer, v.Reason)
		if v.SchemaLocation != "" {
			fmt.Fprintf(&b, " [schema %s]", v.SchemaLocation)
		}
	}
	return b.String()
}

func newValidationError(op Operation, path string, status int, found []*validatorerrors.ValidationError) *ValidationError {
	var violations []Violation
	for _, f := range found {
		if len(f.SchemaValidationErrors) == 0 {
			violations = append(violations, Violation{Reason: f.Message + ": " + f.Reason})
			continue
		}
		for _, sf := range f.SchemaValidationErrors {
			violations = append(violations, Violation{
				Pointer:        jsonPointer(sf.InstancePath),
				Reason:         sf.Reason,
				SchemaLocation: sf.KeywordLocation,
			})
		}
	}
	// Sorted by pointer so the same body always yields the same message.
	slices.SortStableFunc(violations, func(a, b Violation) int { return cmp.Compare(a.Pointer, b.Pointer) })
	return &ValidationError{Operation: op, Path: path, Status: status, Violations: violations}
}

func jsonPointer(segments []string) string {
	var b strings.Builder
	for _, s := range segments {
		b.WriteByte('/')
		b.WriteString(escapePointer(s))
	}
	return b.String()
}
