package sandbox

import (
	"fmt"
	"strings"
)

// Request is what the coordinating node knows about a search request when it picks a sandbox.
type Request struct {
	UserName string
	// Indices are the index names the request targets, after alias and pattern expansion.
	Indices []string
	// Roles are the security roles the user holds.
	Roles    []string
	CustomID string
}

// attributeWeight makes the number of matched attributes dominate the score; the count of exact
// matches (at most 4, one per attribute) only breaks ties between equally many matches.
const attributeWeight = 10

// Resolve maps a request to one sandbox, as tenets 3 to 5 of the OpenSearch "[RFC] Search Query Sandboxing" ask.
//
// A sandbox governs a request only when every attribute it sets matches the request:
// user_name and custom_id match the request's value, role matches any role the user holds, and
// indices_name matches only when every targeted index does (so a sandbox for "transactions-*"
// does not capture a request that also reads other indices). An attribute matches exactly when a
// value without '*' equals the request's (for indices_name: every index is named exactly);
// otherwise it matches by wildcard.
//
// The similarity score is 10 × (attributes matched) + (attributes matched exactly): a sandbox
// matching more attributes always wins, and among sandboxes matching as many, the one matching
// more of them exactly wins. The highest score wins; no match, or a tie for the highest score,
// goes to genPop with score 0.
func (d Definitions) Resolve(req Request) (sandbox string, score int, reason string) {
	var best []string
	var bestWhy string
	for _, s := range d.Sandboxes {
		sc, why, ok := s.score(req)
		if !ok {
			continue
		}
		switch {
		case sc > score:
			best, score, bestWhy = []string{s.Name}, sc, why
		case sc == score:
			best = append(best, s.Name)
		}
	}
	switch len(best) {
	case 0:
		return GenPop, 0, "no sandbox matches every one of its attributes; the request runs in genPop"
	case 1:
		return best[0], score, fmt.Sprintf("sandbox %s matches with score %d (%s)", best[0], score, bestWhy)
	default:
		return GenPop, 0, fmt.Sprintf("sandboxes %s tie at score %d; a tie runs in genPop", strings.Join(best, ", "), score)
	}
}

// score returns the sandbox's similarity score for the request, what matched, and whether every
// attribute the sandbox sets matched.
func (s Sandbox) score(req Request) (int, string, bool) {
	user := nonEmpty(req.UserName)
	custom := nonEmpty(req.CustomID)
	var matched, exact int
	var details []string
	for _, at := range s.Attributes.list() {
		if at.raw == "" {
			continue
		}
		patterns, err := splitList(at.raw)
		if err != nil {
			return 0, "", false // malformed: Validate reports it; it cannot match
		}
		var ok, ex bool
		var detail string
		switch at.name {
		case "user_name":
			ok, ex, detail = matchAny(patterns, user)
		case "custom_id":
			ok, ex, detail = matchAny(patterns, custom)
		case "role":
			ok, ex, detail = matchAny(patterns, req.Roles)
		case "indices_name":
			ok, ex, detail = matchEvery(patterns, req.Indices)
		}
		if !ok {
			return 0, "", false
		}
		matched++
		how := "by wildcard"
		if ex {
			exact++
			how = "exactly"
		}
		details = append(details, fmt.Sprintf("%s %s %s", at.name, how, detail))
	}
	if matched == 0 {
		return 0, "", false
	}
	return attributeWeight*matched + exact, strings.Join(details, "; "), true
}

func nonEmpty(v string) []string {
	if v == "" {
		return nil
	}
	return []string{v}
}

// matchAny reports whether any value matches any pattern, and whether one matches exactly.
func matchAny(patterns, values []string) (ok, exact bool, detail string) {
	for _, v := range values {
		for _, p := range patterns {
			if !globMatch(p, v) {
				continue
			}
			if !strings.Contains(p, "*") {
				return true, true, fmt.Sprintf("%q", v)
			}
			if !ok {
				ok, detail = true, fmt.Sprintf("%q ~ %q", v, p)
			}
		}
	}
	return ok, false, detail
}

// matchEvery reports whether every value matches some pattern, and whether all match exactly.
func matchEvery(patterns, values []string) (ok, exact bool, detail string) {
	if len(values) == 0 {
		return false, false, ""
	}
	exact = true
	for _, v := range values {
		hit, ex, _ := matchAny(patterns, []string{v})
		if !hit {
			return false, false, ""
		}
		exact = exact && ex
	}
	return true, exact, fmt.Sprintf("%q ~ %q", strings.Join(values, ","), strings.Join(patterns, ","))
}

// globMatch matches s against a pattern in which '*' stands for any run of characters, '/'
// included, and no other character is special: OpenSearch's Regex.simpleMatch, which its
// index and role patterns use. path.Match would stop '*' at '/' (found in backend role ARNs) and
// treat '[', '?' and '\' as syntax.
func globMatch(pattern, s string) bool {
	parts := strings.Split(pattern, "*")
	if len(parts) == 1 {
		return pattern == s
	}
	if !strings.HasPrefix(s, parts[0]) {
		return false
	}
	s = s[len(parts[0]):]
	for _, p := range parts[1 : len(parts)-1] {
		i := strings.Index(s, p)
		if i < 0 {
			return false
		}
		s = s[i+len(p):]
	}
	return strings.HasSuffix(s, parts[len(parts)-1])
}
