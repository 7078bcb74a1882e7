package sandbox

import "fmt"

// WLMGroupStats is one group's figures on one node as GET _wlm/stats reports them.
type WLMGroupStats struct {
	Node          string  `json:"node"`
	Group         string  `json:"group"`
	Completions   int64   `json:"completions"`
	Rejections    int64   `json:"rejections"`
	Cancellations int64   `json:"cancellations"`
	CPU           float64 `json:"cpu"`
	Memory        float64 `json:"memory"`
}

// WLMSandboxStats is what the plugin reports of one sandbox's group: its counters summed over
// the nodes and its highest usage on one node against its limit there.
type WLMSandboxStats struct {
	Sandbox       string      `json:"sandbox"`
	Group         string      `json:"group"`
	Mode          Enforcement `json:"mode"`
	Nodes         int         `json:"nodes"`
	Completions   int64       `json:"completions"`
	Rejections    int64       `json:"rejections"`
	Cancellations int64       `json:"cancellations"`
	// MaxUsage and Limit are by resource: the highest current_usage on a node, and the
	// allocation × the node's cancellation threshold.
	MaxUsage map[Resource]float64 `json:"max_usage"`
	Limit    map[Resource]float64 `json:"limit"`
	// Over lists the resources over their limit on some node at the plugin's last run.
	Over   []Resource `json:"over,omitempty"`
	Reason string     `json:"reason"`
}

// WLMVerification is the plugin's enforcement of the synced sandboxes as its stats show it.
type WLMVerification struct {
	Sandboxes []WLMSandboxStats `json:"sandboxes"`
	// Missing names sandboxes whose group the stats do not list on any node: not enforced.
	Missing []string `json:"missing,omitempty"`
	Reason  string   `json:"reason"`
}

// VerifyWLM reads the plugin's stats against the definitions: each sandbox's group (found by
// GroupName in have) with its counters and its usage against its limit. A group the stats do not
// list is missing, so the plugin does not enforce that sandbox. A group over its limit at the
// plugin's last run is reported, not an error: the plugin cancels within its next second.
func VerifyWLM(defs Definitions, have WLMState, stats []WLMGroupStats) WLMVerification {
	ids := map[string]string{}
	for _, g := range have.Groups {
		ids[g.Name] = g.ID
	}
	var v WLMVerification
	over := 0
	for _, s := range defs.Sandboxes {
		name := GroupName(s.Name)
		st := WLMSandboxStats{Sandbox: s.Name, Group: name, Mode: s.Enforcement, MaxUsage: map[Resource]float64{}, Limit: map[Resource]float64{}}
		id := ids[name]
		for _, r := range resources {
			if a, ok := s.Resources.allocation(r); ok {
				st.Limit[r] = a * float64(defs.Resources.limit(r).Threshold.Cancellation)
			}
		}
		for _, g := range stats {
			if id == "" || g.Group != id {
				continue
			}
			st.Nodes++
			st.Completions += g.Completions
			st.Rejections += g.Rejections
			st.Cancellations += g.Cancellations
			st.MaxUsage[CPU] = max(st.MaxUsage[CPU], g.CPU)
			st.MaxUsage[JVM] = max(st.MaxUsage[JVM], g.Memory)
		}
		if st.Nodes == 0 {
			v.Missing = append(v.Missing, s.Name)
			st.Reason = fmt.Sprintf("group %s is in no node's _wlm/stats: the plugin does not enforce sandbox %s", name, s.Name)
			v.Sandboxes = append(v.Sandboxes, st)
			continue
		}
		for _, r := range resources {
			if l, ok := st.Limit[r]; ok && st.MaxUsage[r] > l+allocationSlack {
				st.Over = append(st.Over, r)
			}
		}
		if len(st.Over) > 0 {
			over++
		}
		st.Reason = fmt.Sprintf("group %s (%s) on %d nodes: %d completed, %d rejected, %d cancelled by the plugin; highest usage cpu %.3f, memory %.3f",
			name, s.Enforcement, st.Nodes, st.Completions, st.Rejections, st.Cancellations, st.MaxUsage[CPU], st.MaxUsage[JVM])
		for _, r := range st.Over {
			st.Reason += fmt.Sprintf("; %s over its limit %.3f at the plugin's last run", r, st.Limit[r])
		}
		v.Sandboxes = append(v.Sandboxes, st)
	}
	switch {
	case len(v.Missing) > 0:
		v.Reason = fmt.Sprintf("the plugin's stats lack the groups of %d sandboxes (first %s): they are not enforced", len(v.Missing), v.Missing[0])
	case over > 0:
		v.Reason = fmt.Sprintf("the plugin enforces every sandbox; %d over a limit at its last run", over)
	default:
		v.Reason = "the plugin enforces every sandbox, each within its limits at its last run"
	}
	return v
}
