package plugins

import "github.com/shardwise/shardwise/shared/sim/model"

// Plugins is the work inside one cluster's nodes that is not its indices' own: the tenants'
// searches and the workload-management plugin.
type Plugins struct {
	*model.Sim
	// WLM is the workload-management plugin's groups, rules and runtime (wlm.go).
	WLM *WlmState

	tenants        []*Tenant
	nextTenantTask int64
}

var _ model.Plugins = (*Plugins)(nil)

// New returns the plugins of s; s.Attach hands them to the cluster.
func New(s *model.Sim) *Plugins { return &Plugins{Sim: s} }
