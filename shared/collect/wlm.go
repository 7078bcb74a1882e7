package collect

import (
	"context"

	"github.com/shardwise/shardwise/shared/engine"
	"github.com/shardwise/shardwise/shared/sandbox"
)

var _ engine.WLMCluster = (*API)(nil)

// Version is the version number GET / reports.
func (a *API) Version(ctx context.Context) (string, error) {
	info, err := a.Client.Info(ctx)
	return info.Version, clusterErr(err)
}

// WLMProbe reports whether the cluster serves GET path.
func (a *API) WLMProbe(ctx context.Context, path string) (bool, error) {
	ok, err := a.Client.WLMProbe(ctx, path)
	return ok, clusterErr(err)
}

// WLMState reads the workload-management plugin's groups, rules (when sup.Rules) and wlm.* settings.
func (a *API) WLMState(ctx context.Context, sup sandbox.WLMSupport) (sandbox.WLMState, error) {
	var st sandbox.WLMState
	groups, err := a.Client.WLMGroups(ctx, string(sup.API))
	if err != nil {
		return st, clusterErr(err)
	}
	for _, g := range groups {
		st.Groups = append(st.Groups, sandbox.LiveGroup{ID: g.ID, Name: g.Name, ResiliencyMode: g.ResiliencyMode, ResourceLimits: g.ResourceLimits})
	}
	if sup.Rules {
		rules, err := a.Client.WLMRules(ctx)
		if err != nil {
			return st, clusterErr(err)
		}
		for _, r := range rules {
			lr := sandbox.LiveRule{ID: r.ID, RuleAttributes: sandbox.RuleAttributes{
				Description: r.Description, IndexPattern: r.IndexPattern, Group: r.WorkloadGroup}}
			if r.Principal != nil {
				lr.Username, lr.Role = r.Principal.Username, r.Principal.Role
			}
			st.Rules = append(st.Rules, lr)
		}
	}
	if st.Settings, err = a.Client.WLMSettings(ctx); err != nil {
		return st, clusterErr(err)
	}
	return st, nil
}

// WLMSend makes one workload-management call, once.
func (a *API) WLMSend(ctx context.Context, c sandbox.Call) error {
	_, err := a.Client.WLMSend(ctx, c.Method, c.Path, c.Body)
	return clusterErr(err)
}

// WLMStats reads GET _wlm/stats.
func (a *API) WLMStats(ctx context.Context) ([]sandbox.WLMGroupStats, error) {
	stats, err := a.Client.WLMStats(ctx)
	if err != nil {
		return nil, clusterErr(err)
	}
	out := make([]sandbox.WLMGroupStats, 0, len(stats))
	for _, g := range stats {
		out = append(out, sandbox.WLMGroupStats{Node: g.Node, Group: g.Group, Completions: g.Completions, Rejections: g.Rejections,
			Cancellations: g.Cancellations, CPU: g.CPU, Memory: g.Memory})
	}
	return out, nil
}
