package sandbox

// WorkloadGroup is the body of PUT _wlm/query_group (OpenSearch 2.17+, workload-management
// plugin; schema QueryGroupCreate in the API spec's schemas/wlm._common.yaml). From 3.1 the same
// body goes to _wlm/workload_group.
type WorkloadGroup struct {
	Name string `json:"name"`
	// ResiliencyMode is one of the spec's ResiliencyMode values: enforced, monitor, soft.
	ResiliencyMode string         `json:"resiliency_mode"`
	ResourceLimits ResourceLimits `json:"resource_limits"`
}

// ResourceLimits are a group's shares of a node's resources; the spec requires at least one.
type ResourceLimits struct {
	CPU    *float64 `json:"cpu,omitempty"`
	Memory *float64 `json:"memory,omitempty"`
}

// resiliencyModes maps the sandboxing RFC's modes onto the plugin's: only hard is renamed, to enforced.
var resiliencyModes = map[Enforcement]string{Monitor: "monitor", Soft: "soft", Hard: "enforced"}

// ToWLM maps each sandbox onto a workload-management group: jvm becomes memory (the plugin
// tracks JVM heap under that name), cpu stays cpu, and the mode maps as resiliencyModes says.
// Three things do not carry over, so the plugin enforces only part of the definitions:
// the attributes (a 2.x group is chosen by the request's queryGroupId header, not by matching),
// a cluster-level per-resource enforcement override (the plugin's mode is per group), and the
// node thresholds (cluster settings under wlm.query_group.node.* or, from 3.1,
// wlm.workload_group.node.*). defs must have passed Validate.
func ToWLM(defs Definitions) []WorkloadGroup {
	out := make([]WorkloadGroup, 0, len(defs.Sandboxes))
	for _, s := range defs.Sandboxes {
		g := WorkloadGroup{Name: s.Name, ResiliencyMode: resiliencyModes[s.Enforcement]}
		if a, ok := s.Resources.allocation(JVM); ok {
			g.ResourceLimits.Memory = &a
		}
		if a, ok := s.Resources.allocation(CPU); ok {
			g.ResourceLimits.CPU = &a
		}
		out = append(out, g)
	}
	return out
}
