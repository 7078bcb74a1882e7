package sandbox

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// allocationSlack absorbs float error when allocations are summed: 0.1 + 0.2 + 0.7 is
// 1.0000000000000002 and must not count as over 100 %.
const allocationSlack = 1e-9

// FieldError is a missing or malformed field.
type FieldError struct {
	Field   string
	Problem string
}

func (e *FieldError) Error() string { return fmt.Sprintf("%s: %s", e.Field, e.Problem) }

// DuplicateNameError is a name used by more than one sandbox (tenet: names are unique).
type DuplicateNameError struct {
	Name  string
	Count int
}

func (e *DuplicateNameError) Error() string {
	return fmt.Sprintf("sandbox name %q is used %d times; names must be unique", e.Name, e.Count)
}

// DuplicateAttributesError names sandboxes with the same attribute set (tenet 6: mapping
// attributes are unique across sandboxes), which no request could tell apart.
type DuplicateAttributesError struct {
	Sandboxes  []string
	Attributes string
}

func (e *DuplicateAttributesError) Error() string {
	return fmt.Sprintf("sandboxes %s share the attributes %s; each sandbox's attributes must be unique",
		strings.Join(e.Sandboxes, ", "), e.Attributes)
}

// OverlapError names two sandboxes that set the same attributes with patterns a request can
// match in both at the same similarity score (for instance indices_name reports-* and
// reports-b*, both by wildcard): Resolve sends such a request to genPop, so neither sandbox
// governs it and nothing of it is enforced.
type OverlapError struct {
	Sandboxes [2]string
	// Overlaps are the attributes and the pattern of each sandbox that both match, e.g.
	// `indices_name "reports-*" and "reports-b*"`.
	Overlaps []string
}

func (e *OverlapError) Error() string {
	return fmt.Sprintf("sandboxes %s and %s overlap: %s match the same requests by wildcard at the same score, so such a "+
		"request ties and runs in genPop, governed by neither; make one pattern exact or the patterns disjoint",
		e.Sandboxes[0], e.Sandboxes[1], strings.Join(e.Overlaps, "; "))
}

// OverAllocationError is a resource whose sandbox allocations sum past 1.0 (tenet 7).
type OverAllocationError struct {
	Resource  Resource
	Total     float64
	Sandboxes []string
}

func (e *OverAllocationError) Error() string {
	return fmt.Sprintf("%s allocations of sandboxes %s sum to %.4g, over 1.0 (100 %%)",
		e.Resource, strings.Join(e.Sandboxes, ", "), e.Total)
}

// RangeError is a fraction outside (0, 1].
type RangeError struct {
	Field string
	Value float64
}

func (e *RangeError) Error() string {
	return fmt.Sprintf("%s = %g: must be greater than 0 and at most 1", e.Field, e.Value)
}

// EnforcementError is an enforcement mode other than monitor, soft or hard.
type EnforcementError struct {
	Field string
	Value Enforcement
}

func (e *EnforcementError) Error() string {
	return fmt.Sprintf("%s = %q: must be monitor, soft or hard", e.Field, e.Value)
}

// ThresholdOrderError is a resource whose rejection threshold is above its cancellation threshold:
// tasks would be canceled before new ones are refused.
type ThresholdOrderError struct {
	Resource     Resource
	Rejection    float64
	Cancellation float64
}

func (e *ThresholdOrderError) Error() string {
	return fmt.Sprintf("resources.%s.threshold: rejection %g is above cancellation %g; rejection must not exceed cancellation",
		e.Resource, e.Rejection, e.Cancellation)
}

// Validate checks the definitions against the tenets of the OpenSearch "[RFC] Search Query Sandboxing" and reports every violation, each a
// typed error (*FieldError, *DuplicateNameError, *DuplicateAttributesError, *OverlapError, *OverAllocationError,
// *RangeError, *EnforcementError, *ThresholdOrderError), joined with errors.Join.
func (d Definitions) Validate() error {
	var errs []error
	names := map[string]int{}
	var nameOrder []string
	byAttrs := map[string][]string{}
	var attrOrder []string
	for i, s := range d.Sandboxes {
		field := fmt.Sprintf("sandboxes[%d]", i)
		if strings.TrimSpace(s.Name) != "" {
			field = fmt.Sprintf("sandboxes[%s]", s.Name)
		}
		switch {
		case strings.TrimSpace(s.Name) == "":
			errs = append(errs, &FieldError{Field: field + ".name", Problem: "must not be empty"})
		case s.Name == GenPop:
			errs = append(errs, &FieldError{Field: field + ".name", Problem: "genPop is the system catch-all and cannot be defined"})
		}
		if names[s.Name] == 0 {
			nameOrder = append(nameOrder, s.Name)
		}
		names[s.Name]++

		key, attrErrs := attributeKey(field, s.Attributes)
		errs = append(errs, attrErrs...)
		if key != "" {
			if len(byAttrs[key]) == 0 {
				attrOrder = append(attrOrder, key)
			}
			byAttrs[key] = append(byAttrs[key], s.Name)
		}

		limited := false
		for _, r := range resources {
			if a, ok := s.Resources.allocation(r); ok {
				limited = true
				if !inRange(a) {
					errs = append(errs, &RangeError{Field: fmt.Sprintf("%s.resources.%s.allocation", field, r), Value: a})
				}
				if t, ok := s.Resources.threshold(r); ok && !inRange(t) {
					errs = append(errs, &RangeError{Field: fmt.Sprintf("%s.resources.%s.threshold", field, r), Value: t})
				}
			}
		}
		if !limited {
			errs = append(errs, &FieldError{Field: field + ".resources", Problem: "must limit at least one resource (jvm or cpu)"})
		}
		if !s.Enforcement.valid() {
			errs = append(errs, &EnforcementError{Field: field + ".enforcement", Value: s.Enforcement})
		}
	}
	for _, n := range nameOrder {
		if names[n] > 1 && n != "" {
			errs = append(errs, &DuplicateNameError{Name: n, Count: names[n]})
		}
	}
	for _, k := range attrOrder {
		if len(byAttrs[k]) > 1 {
			errs = append(errs, &DuplicateAttributesError{Sandboxes: byAttrs[k], Attributes: k})
		}
	}

	errs = append(errs, overlaps(d.Sandboxes)...)

	for _, r := range resources {
		var total float64
		var who []string
		for _, s := range d.Sandboxes {
			if a, ok := s.Resources.allocation(r); ok {
				total += a
				who = append(who, s.Name)
			}
		}
		if total > 1+allocationSlack {
			errs = append(errs, &OverAllocationError{Resource: r, Total: total, Sandboxes: who})
		}

		var l *ResourceLimit
		if r == JVM {
			l = d.Resources.JVM
		} else {
			l = d.Resources.CPU
		}
		if l == nil {
			continue
		}
		rej, can := float64(l.Threshold.Rejection), float64(l.Threshold.Cancellation)
		field := fmt.Sprintf("resources.%s", r)
		if !inRange(rej) {
			errs = append(errs, &RangeError{Field: field + ".threshold.rejection", Value: rej})
		}
		if !inRange(can) {
			errs = append(errs, &RangeError{Field: field + ".threshold.cancellation", Value: can})
		}
		if rej > can {
			errs = append(errs, &ThresholdOrderError{Resource: r, Rejection: rej, Cancellation: can})
		}
		if l.Enforcement != "" && !l.Enforcement.valid() {
			errs = append(errs, &EnforcementError{Field: field + ".enforcement", Value: l.Enforcement})
		}
	}
	return errors.Join(errs...)
}

// inRange reports 0 < v <= 1; NaN is out of range.
func inRange(v float64) bool { return v > 0 && v <= 1 }

// attributeKey returns a canonical form of the attribute set (each list trimmed, deduplicated and
// sorted, so "a,b" and "b, a" are the same set) and any malformed lists.
func attributeKey(field string, a Attributes) (string, []error) {
	var parts []string
	var errs []error
	for _, at := range a.list() {
		if at.raw == "" {
			continue
		}
		values, err := splitList(at.raw)
		if err != nil {
			errs = append(errs, &FieldError{Field: fmt.Sprintf("%s.attributes.%s", field, at.name), Problem: err.Error()})
			continue
		}
		slices.Sort(values)
		parts = append(parts, at.name+"="+strings.Join(slices.Compact(values), ","))
	}
	if len(parts) == 0 && len(errs) == 0 {
		errs = append(errs, &FieldError{Field: field + ".attributes", Problem: "must set at least one of user_name, indices_name, role, custom_id"})
	}
	return strings.Join(parts, " "), errs
}

// namedAttribute is one attribute with its JSON name.
type namedAttribute struct {
	name string
	raw  string
}

func (a Attributes) list() []namedAttribute {
	return []namedAttribute{
		{"user_name", a.UserName}, {"indices_name", a.IndicesName}, {"role", a.Role}, {"custom_id", a.CustomID},
	}
}

// splitList splits a comma-separated attribute list, refusing empty entries ("a,,b").
func splitList(raw string) ([]string, error) {
	values := strings.Split(raw, ",")
	for i, v := range values {
		values[i] = strings.TrimSpace(v)
		if values[i] == "" {
			return nil, fmt.Errorf("%q has an empty entry", raw)
		}
	}
	return values, nil
}

// overlaps finds the pairs of sandboxes a request can match at the same score: the same
// attributes set, and for each a pattern of one and a pattern of the other that can both match a
// value, both exact (then equal) or both wildcards. Pairs with the same attribute set are
// DuplicateAttributesError's, not reported again.
func overlaps(sandboxes []Sandbox) []error {
	type parsed struct {
		name  string
		key   string
		attrs map[string][]string
	}
	var all []parsed
	for _, s := range sandboxes {
		key, errs := attributeKey("", s.Attributes)
		if len(errs) > 0 {
			continue // malformed: reported on its own
		}
		p := parsed{name: s.Name, key: key, attrs: map[string][]string{}}
		for _, at := range s.Attributes.list() {
			if at.raw != "" {
				p.attrs[at.name], _ = splitList(at.raw)
			}
		}
		all = append(all, p)
	}
	var errs []error
	for i, a := range all {
		for _, b := range all[i+1:] {
			if a.key == b.key || len(a.attrs) != len(b.attrs) {
				continue
			}
			var found []string
			wildcard := false
			for name, pa := range a.attrs {
				pb, ok := b.attrs[name]
				if !ok {
					found = nil
					break
				}
				x, y, wild, ok := coMatch(pa, pb)
				if !ok {
					found = nil
					break
				}
				wildcard = wildcard || wild
				found = append(found, fmt.Sprintf("%s %q and %q", name, x, y))
			}
			if len(found) > 0 && wildcard {
				slices.Sort(found)
				errs = append(errs, &OverlapError{Sandboxes: [2]string{a.name, b.name}, Overlaps: found})
			}
		}
	}
	return errs
}

// coMatch finds a pattern in each list that can match one value with the same exactness: two
// equal exact values, or two wildcards with a common value. wild tells which.
func coMatch(pa, pb []string) (x, y string, wild, ok bool) {
	for _, p := range pa {
		for _, q := range pb {
			pw, qw := strings.Contains(p, "*"), strings.Contains(q, "*")
			switch {
			case !pw && !qw && p == q:
				return p, q, false, true
			case pw && qw && globsMeet(p, q):
				return p, q, true, true
			}
		}
	}
	return "", "", false, false
}

// globsMeet reports whether two '*' patterns can match a common string: their literal heads
// (before the first '*') agree as far as the shorter goes, and so do their tails (after the last
// '*'). For the prefix patterns sandboxes use ("reports-*", "reports-b*") that is exact; for
// patterns with inner literals it can report a meeting that needs a longer value, which still
// exists, since a '*' at each end absorbs the other's inner parts.
func globsMeet(p, q string) bool {
	ph, _, _ := strings.Cut(p, "*")
	qh, _, _ := strings.Cut(q, "*")
	pt, qt := p[strings.LastIndex(p, "*")+1:], q[strings.LastIndex(q, "*")+1:]
	return (strings.HasPrefix(ph, qh) || strings.HasPrefix(qh, ph)) && (strings.HasSuffix(pt, qt) || strings.HasSuffix(qt, pt))
}
