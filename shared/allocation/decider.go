package allocation

import (
	"encoding/json"
	"fmt"

	"github.com/shardwise/shardwise/shared/cluster"
)

// Decision is a decider's answer, ordered from best to worst.
type Decision int

// The three answers: YES allows, NOT_PREFERRED allows only when nothing better exists (the target
// might start queueing), NO forbids.
const (
	Yes Decision = iota
	NotPreferred
	No
)

func (d Decision) String() string {
	switch d {
	case Yes:
		return "YES"
	case NotPreferred:
		return "NOT_PREFERRED"
	default:
		return "NO"
	}
}

// MarshalJSON writes the decision as OpenSearch spells decider decisions.
func (d Decision) MarshalJSON() ([]byte, error) { return json.Marshal(d.String()) }

// UnmarshalJSON reads YES, NOT_PREFERRED or NO.
func (d *Decision) UnmarshalJSON(b []byte) error {
	// The three names as MarshalJSON writes them need no decoder: a stored plan or ledger entry
	// holds eight verdicts a move, and decoding each as a JSON document of its own cost more than
	// the rest of the entry.
	switch string(b) {
	case `"YES"`:
		*d = Yes
		return nil
	case `"NOT_PREFERRED"`:
		*d = NotPreferred
		return nil
	case `"NO"`:
		*d = No
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	switch s {
	case "YES":
		*d = Yes
	case "NOT_PREFERRED":
		*d = NotPreferred
	case "NO":
		*d = No
	default:
		return fmt.Errorf("unknown decision %q", s)
	}
	return nil
}

// Verdict is one decider's answer with its evidence: the measured value, the limit it was held to and
// a sentence saying why. The CLI, events and logs all print these fields. The sentence is built only
// when asked (Why, or when the verdict is written as JSON): the planner weighs thousands of verdicts a
// cycle and prints a handful.
type Verdict struct {
	Decider  string   `json:"decider"`
	Decision Decision `json:"decision"`
	Value    float64  `json:"value,omitempty"`
	Limit    float64  `json:"limit,omitempty"`
	Reason   string   `json:"reason"`
	why      func() string
}

// Why returns the verdict's sentence, building it on first use.
func (vd *Verdict) Why() string {
	if vd.Reason == "" && vd.why != nil {
		vd.Reason = vd.why()
		vd.why = nil
	}
	return vd.Reason
}

// MarshalJSON writes the verdict with its sentence built.
func (vd Verdict) MarshalJSON() ([]byte, error) {
	type plain Verdict
	vd.Why()
	return json.Marshal(plain(vd))
}

// explained builds the sentence of every verdict, for verdicts kept in a plan.
func explained(vs []Verdict) []Verdict {
	for i := range vs {
		vs[i].Why()
	}
	return vs
}

// verdict is a decider's answer whose sentence is formatted only when asked.
func verdict(name string, d Decision, value, limit float64, format string, args ...any) Verdict {
	return Verdict{Decider: name, Decision: d, Value: value, Limit: limit, why: func() string { return fmt.Sprintf(format, args...) }}
}

// Decider judges whether a copy may be allocated to a node.
type Decider interface {
	Name() string
	CanAllocate(v *View, c *cluster.Copy, target *cluster.Node) Verdict
}

// RemainDecider is a decider that can also say a copy may not stay where it is.
type RemainDecider interface {
	CanRemain(v *View, c *cluster.Copy, node *cluster.Node) Verdict
}

// Deciders returns every decider in the order they are evaluated and reported.
func Deciders() []Decider {
	return []Decider{
		sameShard{},
		exclusion{},
		filter{},
		awareness{},
		shardsLimit{},
		disk{},
		heap{},
		writeLoad{},
		indexBalance{},
	}
}

func yes(name, reason string, args ...any) Verdict {
	return verdict(name, Yes, 0, 0, reason, args...)
}

// Worst folds verdicts into the overall decision: NO beats NOT_PREFERRED beats YES.
func Worst(vs []Verdict) Decision {
	d := Yes
	for _, v := range vs {
		if v.Decision > d {
			d = v.Decision
		}
	}
	return d
}

// Evaluate runs every decider for allocating c to target.
func Evaluate(v *View, c *cluster.Copy, target *cluster.Node) []Verdict {
	ds := v.deciders
	out := make([]Verdict, 0, len(ds))
	for _, d := range ds {
		out = append(out, d.CanAllocate(v, c, target))
	}
	return out
}

// EvaluateRemain runs every RemainDecider for c on its current node.
func EvaluateRemain(v *View, c *cluster.Copy, node *cluster.Node) []Verdict {
	var out []Verdict
	for _, d := range v.deciders {
		if rd, ok := d.(RemainDecider); ok {
			out = append(out, rd.CanRemain(v, c, node))
		}
	}
	return out
}
