// Package sandbox holds the resource-limit groups ("sandboxes") of the OpenSearch query sandboxing
// RFC (opensearch-project/OpenSearch#11061 and its user-experience follow-up): their definitions
// and validation by the tenets of the OpenSearch "[RFC] Search Query Sandboxing", the mapping of a request to one sandbox, what each
// enforcement mode implies for a node's measured usage, and the equivalent workload-management
// plugin bodies. It is pure: no I/O.
package sandbox

import (
	"encoding/json"
	"fmt"
)

// GenPop is the sandboxing RFC's system-defined catch-all sandbox: requests that match no sandbox, or several
// with the same score, run in it, with whatever share of each resource the sandboxes leave.
const GenPop = "genPop"

// Enforcement is how a sandbox's limits are contained.
type Enforcement string

// The RFC's enforcement modes.
const (
	// Monitor only reports usage against the limits.
	Monitor Enforcement = "monitor"
	// Soft lets a sandbox exceed its allocation while the node is not under duress.
	Soft Enforcement = "soft"
	// Hard holds a sandbox to its allocation whether or not the node is under duress.
	Hard Enforcement = "hard"
)

func (e Enforcement) valid() bool { return e == Monitor || e == Soft || e == Hard }

// Resource is a node resource a sandbox can be limited on.
type Resource string

// The RFC's resources.
const (
	JVM Resource = "jvm"
	CPU Resource = "cpu"
)

// resources lists every Resource in report order.
var resources = []Resource{JVM, CPU}

// Defaults for a resource the definitions give no cluster thresholds for, from OpenSearch's
// WorkloadManagementSettings (DEFAULT_NODE_LEVEL_{MEMORY,CPU}_{REJECTION,CANCELLATION}_THRESHOLD),
// the native enforcer of the same groups.
const (
	defaultRejection    = 0.8
	defaultCancellation = 0.9
)

// Fraction is a share of a node's resource, 0..1. It decodes from a JSON number or, as in the
// RFC's examples ("allocation": "0.5"), from a string holding one.
type Fraction float64

// UnmarshalJSON accepts 0.5 and "0.5"; the string must hold a JSON number, so "NaN" and "Inf"
// are refused. null leaves the value unchanged, as encoding/json expects.
func (f *Fraction) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	num := b
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		num = []byte(s)
	}
	var v float64
	if err := json.Unmarshal(num, &v); err != nil {
		return fmt.Errorf("fraction %s: want a number 0..1, bare or in a string", b)
	}
	*f = Fraction(v)
	return nil
}

// Definitions is one document: the sandboxes and the cluster-level schema of each resource.
type Definitions struct {
	Sandboxes []Sandbox `json:"sandboxes"`
	// Resources is the sandboxing RFC's cluster resource schema; a resource left out gets OpenSearch's
	// defaults (rejection 0.8, cancellation 0.9) and no enforcement override.
	Resources ClusterResources `json:"resources,omitzero"`
}

// Sandbox is one resource-limit group.
type Sandbox struct {
	Name        string      `json:"name"`
	Attributes  Attributes  `json:"attributes"`
	Resources   Allocations `json:"resources"`
	Enforcement Enforcement `json:"enforcement"`
}

// Attributes a request must match, each a comma-separated list of values where '*' matches any
// run of characters. An empty attribute is not part of the sandbox's mapping.
type Attributes struct {
	UserName    string `json:"user_name,omitempty"`
	IndicesName string `json:"indices_name,omitempty"`
	Role        string `json:"role,omitempty"`
	CustomID    string `json:"custom_id,omitempty"`
}

// Allocations holds the sandbox's allocation of each resource it is limited on.
type Allocations struct {
	JVM *Allocation `json:"jvm,omitempty"`
	CPU *Allocation `json:"cpu,omitempty"`
}

// Allocation is the share of a node's resource a sandbox may use.
type Allocation struct {
	Allocation Fraction `json:"allocation"`
	// Threshold is the RFC's per-sandbox "threshold": when set, the sandbox's limits are
	// allocation × Threshold for both rejection and cancellation, in place of allocation × the
	// node's rejection and cancellation thresholds. Absent, the limits stay proportional to the
	// node's thresholds.
	Threshold *Fraction `json:"threshold,omitempty"`
}

// ClusterResources is the cluster-level schema of each resource.
type ClusterResources struct {
	JVM *ResourceLimit `json:"jvm,omitempty"`
	CPU *ResourceLimit `json:"cpu,omitempty"`
}

// ResourceLimit holds a resource's node-level thresholds and, optionally, an enforcement mode
// that replaces every sandbox's own for this resource.
type ResourceLimit struct {
	Threshold   Thresholds  `json:"threshold"`
	Enforcement Enforcement `json:"enforcement,omitempty"`
}

// Thresholds are node-level usage fractions: above Rejection new tasks of overflowing sandboxes
// are rejected, above Cancellation their running tasks are canceled.
type Thresholds struct {
	Rejection    Fraction `json:"rejection"`
	Cancellation Fraction `json:"cancellation"`
}

// threshold returns the sandbox's own threshold for r, if it sets one.
func (r Allocations) threshold(res Resource) (float64, bool) {
	a := r.JVM
	if res == CPU {
		a = r.CPU
	}
	if a == nil || a.Threshold == nil {
		return 0, false
	}
	return float64(*a.Threshold), true
}

// allocation returns the sandbox's allocation of r and whether it is limited on r.
func (r Allocations) allocation(res Resource) (float64, bool) {
	a := r.JVM
	if res == CPU {
		a = r.CPU
	}
	if a == nil {
		return 0, false
	}
	return float64(a.Allocation), true
}

// limit returns the cluster schema of r, with OpenSearch's default thresholds when absent.
func (c ClusterResources) limit(res Resource) ResourceLimit {
	l := c.JVM
	if res == CPU {
		l = c.CPU
	}
	if l == nil {
		return ResourceLimit{Threshold: Thresholds{Rejection: defaultRejection, Cancellation: defaultCancellation}}
	}
	return *l
}
