package sandbox

import (
	"fmt"
	"slices"
	"strings"
)

// What each attribute can be trusted for, from outside the cluster and on it:
//
//   - custom_id is the request's X-Opaque-Id header, which the client sets: any tenant can send
//     another's. It identifies a tenant only where a gateway in front of the cluster sets it from
//     the authenticated caller and drops the client's own.
//   - indices_name is what the request reads. A tenant can only search indices its roles allow,
//     so it cannot pass its work off as another tenant's index unless it may read that index too.
//   - user_name and role are the authenticated principal. The tasks API does not show them, so
//     only the workload-management plugin, which sees the user on the node (principal rules, 3.3
//     and later with the Security plugin), can attribute by them.
//
// PlanCancellations charges a sandbox's overflow to the indices its requests read, so a forged
// id cannot get the requests of another tenant cut before the forger's own when they read
// different indices; requests on the same indices cannot be told apart by anything shardwise sees.

// Forgeable warns about each sandbox that only custom_id identifies: any client can put its
// requests in it, or take its own out of another sandbox, by the header it sends.
func Forgeable(d Definitions) []Warning {
	var out []Warning
	for _, s := range d.Sandboxes {
		a := s.Attributes
		if a.CustomID == "" || a.IndicesName != "" || a.UserName != "" || a.Role != "" {
			continue
		}
		out = append(out, Warning{
			Field: fmt.Sprintf("sandboxes[%s].attributes.custom_id", s.Name),
			Message: fmt.Sprintf("forgeable: custom_id matches the X-Opaque-Id header, which the client sets, so any tenant can send %q and have its "+
				"requests counted in sandbox %s, or send another id to leave it. Add indices_name (bounded by index permissions), or key on "+
				"user_name or role with workload management, which sees the authenticated user; trust custom_id alone only behind a gateway "+
				"that sets X-Opaque-Id itself", a.CustomID, s.Name),
		})
	}
	return out
}

// Overlaps warns about each pair of sandboxes a request can match both of, other than the pairs
// Validate refuses (the same attributes matching at the same score), and says which one governs
// such a request: the one matching more attributes, then more of them exactly; a tie sends it to
// genPop. A tie across different attributes (custom_id in one, indices_name in the other) lets a
// request leave the sandbox its indices put it in by sending the other's X-Opaque-Id.
func Overlaps(d Definitions) []Warning {
	type parsed struct {
		name  string
		attrs map[string][]string
	}
	var all []parsed
	for _, s := range d.Sandboxes {
		p := parsed{name: s.Name, attrs: map[string][]string{}}
		for _, at := range s.Attributes.list() {
			if at.raw == "" {
				continue
			}
			vals, err := splitList(at.raw)
			if err != nil {
				p = parsed{}
				break
			}
			p.attrs[at.name] = vals
		}
		if p.name != "" && len(p.attrs) > 0 {
			all = append(all, p)
		}
	}
	var out []Warning
	for i, a := range all {
		for _, b := range all[i+1:] {
			var example []string
			scoreA, scoreB := attributeWeight*len(a.attrs), attributeWeight*len(b.attrs)
			sameNames := len(a.attrs) == len(b.attrs)
			both := true
			for _, name := range []string{"user_name", "indices_name", "role", "custom_id"} {
				pa, inA := a.attrs[name]
				pb, inB := b.attrs[name]
				switch {
				case inA && inB:
					v, exA, exB, ok := commonValue(pa, pb)
					if !ok {
						both = false
					}
					example = append(example, fmt.Sprintf("%s %q", name, v))
					scoreA += exactness(exA)
					scoreB += exactness(exB)
				case inA:
					sameNames = false
					example = append(example, fmt.Sprintf("%s %q", name, sampleValue(pa[0])))
					scoreA += exactness(!strings.Contains(pa[0], "*"))
				case inB:
					sameNames = false
					example = append(example, fmt.Sprintf("%s %q", name, sampleValue(pb[0])))
					scoreB += exactness(!strings.Contains(pb[0], "*"))
				}
				if !both {
					break
				}
			}
			if !both || (sameNames && scoreA == scoreB) {
				continue // disjoint, or an OverlapError (or DuplicateAttributesError) of Validate's
			}
			req := strings.Join(example, ", ")
			msg := fmt.Sprintf("a request with %s matches sandboxes %s and %s at the same score %d, so it runs in genPop, governed by neither",
				req, a.name, b.name, scoreA)
			if scoreA != scoreB {
				win, lose, ws, ls := a.name, b.name, scoreA, scoreB
				if scoreB > scoreA {
					win, lose, ws, ls = b.name, a.name, scoreB, scoreA
				}
				msg = fmt.Sprintf("a request with %s matches sandboxes %s (score %d) and %s (score %d): %s governs it",
					req, win, ws, lose, ls, win)
			}
			out = append(out, Warning{Field: fmt.Sprintf("sandboxes[%s] and sandboxes[%s]", a.name, b.name), Message: "overlap: " + msg})
		}
	}
	return out
}

func exactness(exact bool) int {
	if exact {
		return 1
	}
	return 0
}

// commonValue finds a value a pattern of each list matches, and whether each matches it exactly:
// equal exact values first, then an exact value the other's wildcard matches, then two wildcards
// that meet (the value shown is a wildcard's head followed by '…').
func commonValue(pa, pb []string) (v string, exactA, exactB, ok bool) {
	wild := func(p string) bool { return strings.Contains(p, "*") }
	for _, p := range pa {
		if !wild(p) && slices.Contains(pb, p) {
			return p, true, true, true
		}
	}
	for _, p := range pa {
		for _, q := range pb {
			switch {
			case !wild(p) && wild(q) && globMatch(q, p):
				return p, true, false, true
			case wild(p) && !wild(q) && globMatch(p, q):
				return q, false, true, true
			}
		}
	}
	for _, p := range pa {
		for _, q := range pb {
			if wild(p) && wild(q) && globsMeet(p, q) {
				head, _, _ := strings.Cut(p, "*")
				if h, _, _ := strings.Cut(q, "*"); len(h) > len(head) {
					head = h
				}
				return head + "…", false, false, true
			}
		}
	}
	return "", false, false, false
}

// sampleValue is a value pattern p matches, for a warning: p itself when exact, else its head
// followed by '…'.
func sampleValue(p string) string {
	if head, _, wild := strings.Cut(p, "*"); wild {
		return head + "…"
	}
	return p
}
