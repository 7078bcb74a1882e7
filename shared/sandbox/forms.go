package sandbox

import (
	"bytes"
	"fmt"
	"slices"

	"github.com/shardwise/shardwise/shared/jsonstrict"
)

// Warning is something a definitions document does that is accepted but that its author should
// know about: a repair made while reading it, or a sandbox shardwise cannot enforce from outside
// the cluster. Field says where, Message what and what to do.
type Warning struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

func (w Warning) String() string { return w.Field + ": " + w.Message }

// ParseDocument reads definitions in any of the forms the OpenSearch "[RFC] Search Query
// Sandboxing: User Experience" writes them, validates them and returns what it accepted with
// warnings:
//
//   - the wrapped form {"sandboxes": [...], "resources": {...}} (sandboxes plus the cluster
//     resource schema);
//   - the plain array of sandboxes [{...}, {...}] of the RFC's "Two Sandboxes defined for memory
//     and CPU" example, which gets OpenSearch's default node thresholds;
//   - either with trailing commas before a closing bracket, as that example has ("}, },"): they
//     are dropped, each with a warning naming its line, since what they wrap is unambiguous.
//
// Unknown fields and data after the document are refused, so a misspelled key never silently
// drops a limit. Every validation error is reported at once (see Validate). Warnings also name
// every sandbox that keys on an attribute the tasks API does not show (see Unobservable), every
// sandbox only the client-set X-Opaque-Id identifies (Forgeable), and every pair of sandboxes one
// request can match, with the one that governs it (Overlaps).
func ParseDocument(data []byte) (Definitions, []Warning, error) {
	cleaned, warns := dropTrailingCommas(data)
	var d Definitions
	var err error
	switch firstByte(cleaned) {
	case '[':
		err = jsonstrict.Decode(cleaned, &d.Sandboxes)
	default:
		err = jsonstrict.Decode(cleaned, &d)
	}
	if err != nil {
		return Definitions{}, nil, fmt.Errorf("parse sandbox definitions: %w", err)
	}
	if err := d.Validate(); err != nil {
		return Definitions{}, nil, fmt.Errorf("sandbox definitions: %w", err)
	}
	return d, slices.Concat(warns, Unobservable(d), Forgeable(d), Overlaps(d)), nil
}

// Parse is ParseDocument without the warnings.
func Parse(data []byte) (Definitions, error) {
	d, _, err := ParseDocument(data)
	return d, err
}

func firstByte(data []byte) byte {
	t := bytes.TrimLeft(data, " \t\r\n")
	if len(t) == 0 {
		return 0
	}
	return t[0]
}

// dropTrailingCommas removes each comma outside strings that is followed, after white space, by
// '}' or ']' and preceded by a value (not by '[', '{' or another comma, which stay errors).
func dropTrailingCommas(data []byte) ([]byte, []Warning) {
	out := make([]byte, 0, len(data))
	var warns []Warning
	inString, escaped := false, false
	line := 1
	var prev byte // last non-space byte outside strings written so far
	for i := 0; i < len(data); i++ {
		c := data[i]
		if c == '\n' {
			line++
		}
		if inString {
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
				prev = '"'
			}
			out = append(out, c)
			continue
		}
		switch c {
		case '"':
			inString = true
		case ',':
			j := i + 1
			for j < len(data) && (data[j] == ' ' || data[j] == '\t' || data[j] == '\r' || data[j] == '\n') {
				j++
			}
			if j < len(data) && (data[j] == '}' || data[j] == ']') && prev != 0 && prev != '[' && prev != '{' && prev != ',' {
				warns = append(warns, Warning{Field: fmt.Sprintf("line %d", line),
					Message: fmt.Sprintf("trailing comma before %q dropped (JSON allows none; the RFC's example has one)", data[j])})
				continue
			}
		}
		out = append(out, c)
		if c != ' ' && c != '\t' && c != '\r' && c != '\n' {
			prev = c
		}
	}
	if len(warns) == 0 {
		return data, nil
	}
	return out, warns
}

// Unobservable warns about each sandbox that keys on user_name or role. OpenSearch's tasks API
// shows a task's headers (X-Opaque-Id, matched against custom_id) and its description (the
// indices, matched against indices_name), but not the authenticated user or their roles, so
// shardwise cannot tell such a sandbox's requests apart from outside the cluster: to shardwise
// they resolve as if the attribute did not match (genPop, or another sandbox they fully match),
// and only OpenSearch's workload management, which sees the request on the node, can hold them
// to the sandbox's limits.
func Unobservable(d Definitions) []Warning {
	var out []Warning
	for _, s := range d.Sandboxes {
		for _, at := range s.Attributes.list() {
			if at.raw == "" || (at.name != "user_name" && at.name != "role") {
				continue
			}
			out = append(out, Warning{
				Field: fmt.Sprintf("sandboxes[%s].attributes.%s", s.Name, at.name),
				Message: fmt.Sprintf("the tasks API does not show a task's %s, so shardwise cannot match sandbox %s from outside the cluster "+
					"and counts its requests wherever their other attributes lead (genPop when nothing else matches); "+
					"OpenSearch workload management enforces it instead, from the workload group shardwise syncs for it (see docs/sandboxes.md)",
					at.name, s.Name),
			})
		}
	}
	return out
}
