package opensearch

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// The workload-management plugin's endpoints: groups under _wlm/query_group (2.18 to 3.0) or
// _wlm/workload_group (3.1 and later), rules under _rules/workload_group (3.x), and its wlm.*
// cluster settings. opensearch-go v4 has no request types for them, so they go through wlmRequest.

// WLMGroup is a workload group (query group before 3.1) as GET _wlm/<api> lists it.
type WLMGroup struct {
	ID             string             `json:"_id"`
	Name           string             `json:"name"`
	ResiliencyMode string             `json:"resiliency_mode"`
	ResourceLimits map[string]float64 `json:"resource_limits"`
	UpdatedAt      int64              `json:"updated_at"`
}

// WLMRule is a rule of the workload_group feature type.
type WLMRule struct {
	ID            string        `json:"id"`
	Description   string        `json:"description"`
	IndexPattern  []string      `json:"index_pattern,omitempty"`
	Principal     *WLMPrincipal `json:"principal,omitempty"`
	WorkloadGroup string        `json:"workload_group"`
	UpdatedAt     string        `json:"updated_at"`
}

// WLMPrincipal holds a rule's security attributes (3.3 and later, with the Security plugin).
type WLMPrincipal struct {
	Username []string `json:"username,omitempty"`
	Role     []string `json:"role,omitempty"`
}

// wlmRequest is a request to one of the plugin's paths, or to _cluster/settings for its settings.
type wlmRequest struct {
	path   string
	params url.Values
	body   []byte
}

// GetRequest builds the request; the transport fills in scheme and host.
func (r wlmRequest) GetRequest(method string) (*http.Request, error) {
	// url.URL escapes the path: a group name is one segment whatever it holds.
	target := (&url.URL{Path: r.path, RawQuery: r.params.Encode()}).String()
	var req *http.Request
	var err error
	// opensearch.Do puts the caller's context on the request; the interface passes none here.
	if r.body != nil {
		req, err = http.NewRequestWithContext(context.Background(), method, target, bytes.NewReader(r.body))
	} else {
		req, err = http.NewRequestWithContext(context.Background(), method, target, nil)
	}
	if err != nil {
		return nil, fmt.Errorf("build %s %s: %w", method, r.path, err)
	}
	if r.body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return req, nil
}

// wlmPaths are the only paths WLMSend writes to.
var wlmPaths = []string{"/_wlm/query_group", "/_wlm/workload_group", "/_rules/workload_group", "/_cluster/settings"}

func checkWLMPath(path string) error {
	for _, p := range wlmPaths {
		if path == p {
			return nil
		}
		rest, ok := strings.CutPrefix(path, p+"/")
		if !ok || p == "/_cluster/settings" {
			continue
		}
		if rest == "" || rest == "_all" || strings.ContainsAny(rest, "/?#*,") {
			return fmt.Errorf("wlm: path %q: the name or id must be one plain segment", path)
		}
		return nil
	}
	return fmt.Errorf("wlm: path %q is not a workload-management path", path)
}

// WLMProbe reports whether the cluster serves GET path: true on 200, false on 404 or on
// OpenSearch's 400 "no handler found" for a path no plugin registered; any other answer is an error.
func (c *Client) WLMProbe(ctx context.Context, path string) (bool, error) {
	if err := checkWLMPath(path); err != nil {
		return false, err
	}
	_, err := c.call(ctx, "probe "+path, http.MethodGet, wlmRequest{path: path})
	if err == nil {
		return true, nil
	}
	if apiErr, ok := errors.AsType[*APIError](err); ok {
		if apiErr.Status == http.StatusNotFound ||
			(apiErr.Status == http.StatusBadRequest && strings.Contains(apiErr.Reason, "no handler found")) {
			return false, nil
		}
	}
	return false, err
}

// WLMGroups lists the groups of api ("query_group" or "workload_group").
func (c *Client) WLMGroups(ctx context.Context, api string) ([]WLMGroup, error) {
	path := "/_wlm/" + api
	if err := checkWLMPath(path); err != nil {
		return nil, err
	}
	body, err := c.call(ctx, "list "+api+"s", http.MethodGet, wlmRequest{path: path})
	if err != nil {
		return nil, err
	}
	var wire map[string]json.RawMessage
	if err := json.Unmarshal(body, &wire); err != nil {
		return nil, fmt.Errorf("list %ss: decode: %w", api, err)
	}
	raw, ok := wire[api+"s"]
	if !ok {
		return nil, fmt.Errorf("list %ss: the answer has no %q key", api, api+"s")
	}
	var groups []WLMGroup
	if err := json.Unmarshal(raw, &groups); err != nil {
		return nil, fmt.Errorf("list %ss: decode: %w", api, err)
	}
	return groups, nil
}

// maxRulePages bounds the pages WLMRules follows; a cluster repeating a search_after would
// otherwise loop.
const maxRulePages = 1000

// WLMRules lists every rule of the workload_group feature type, following search_after pages.
func (c *Client) WLMRules(ctx context.Context) ([]WLMRule, error) {
	var out []WLMRule
	var after string
	for range maxRulePages {
		req := wlmRequest{path: "/_rules/workload_group"}
		if after != "" {
			req.params = url.Values{"search_after": {after}}
		}
		body, err := c.call(ctx, "list rules", http.MethodGet, req)
		if err != nil {
			return nil, err
		}
		var wire struct {
			Rules       []WLMRule `json:"rules"`
			SearchAfter []string  `json:"search_after"`
		}
		if err := json.Unmarshal(body, &wire); err != nil {
			return nil, fmt.Errorf("list rules: decode: %w", err)
		}
		out = append(out, wire.Rules...)
		if len(wire.Rules) == 0 || len(wire.SearchAfter) == 0 || wire.SearchAfter[0] == after {
			return out, nil
		}
		after = wire.SearchAfter[0]
	}
	return nil, fmt.Errorf("list rules: more than %d pages", maxRulePages)
}

// WLMSettings reads the wlm.* cluster settings in effect: transient over persistent over defaults.
func (c *Client) WLMSettings(ctx context.Context) (map[string]string, error) {
	req := wlmRequest{path: "/_cluster/settings", params: url.Values{
		"include_defaults": {"true"}, "flat_settings": {"true"},
		"filter_path": {"persistent.wlm*,transient.wlm*,defaults.wlm*"},
	}}
	body, err := c.call(ctx, "wlm settings", http.MethodGet, req)
	if err != nil {
		return nil, err
	}
	s, err := decodeClusterSettings(body)
	if err != nil {
		return nil, fmt.Errorf("wlm settings: %w", err)
	}
	out := map[string]string{}
	for k, v := range s {
		if strings.HasPrefix(k, "wlm.") {
			out[k] = v
		}
	}
	return out, nil
}

// WLMSend makes one change: method on path with body encoded as JSON (nil for none). It is sent
// once, as every change is (see callOnce), and only to the plugin's paths and _cluster/settings.
// The answer's body is returned for the caller to read ids from.
func (c *Client) WLMSend(ctx context.Context, method, path string, body any) ([]byte, error) {
	if err := checkWLMPath(path); err != nil {
		return nil, err
	}
	req := wlmRequest{path: path}
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, fmt.Errorf("%s %s: encode: %w", method, path, err)
		}
		req.body = b
	}
	return c.callOnce(ctx, method+" "+path, method, req)
}

// WLMGroupStats is one group's figures on one node from GET _wlm/stats.
type WLMGroupStats struct {
	Node  string
	Group string // the group's id, or the plugin's default group's
	// Completions, Rejections and Cancellations are the group's totals on the node since it
	// started (total_* from 3.1, the bare names before).
	Completions   int64
	Rejections    int64
	Cancellations int64
	// CPU and Memory are the group's current_usage at the plugin's last run, fractions of the node.
	CPU    float64
	Memory float64
}

// WLMStats reads GET _wlm/stats: every node's groups, the default group included, sorted by node
// and group.
func (c *Client) WLMStats(ctx context.Context) ([]WLMGroupStats, error) {
	body, err := c.call(ctx, "wlm stats", http.MethodGet, wlmRequest{path: "/_wlm/stats"})
	if err != nil {
		return nil, err
	}
	return decodeWLMStats(body)
}

func decodeWLMStats(body []byte) ([]WLMGroupStats, error) {
	var wire map[string]json.RawMessage
	if err := json.Unmarshal(body, &wire); err != nil {
		return nil, fmt.Errorf("wlm stats: decode: %w", err)
	}
	type usage struct {
		CurrentUsage float64 `json:"current_usage"`
	}
	type group struct {
		TotalCompletions   *int64 `json:"total_completions"`
		Completions        *int64 `json:"completions"`
		TotalRejections    *int64 `json:"total_rejections"`
		Rejections         *int64 `json:"rejections"`
		TotalCancellations int64  `json:"total_cancellations"`
		CPU                usage  `json:"cpu"`
		Memory             usage  `json:"memory"`
	}
	first := func(a, b *int64) int64 {
		switch {
		case a != nil:
			return *a
		case b != nil:
			return *b
		}
		return 0
	}
	var out []WLMGroupStats
	for node, raw := range wire {
		if strings.HasPrefix(node, "_") || node == "cluster_name" {
			continue
		}
		var n map[string]map[string]group
		if err := json.Unmarshal(raw, &n); err != nil {
			return nil, fmt.Errorf("wlm stats: node %s: decode: %w", node, err)
		}
		for _, key := range []string{"workload_groups", "query_groups"} {
			for id, g := range n[key] {
				out = append(out, WLMGroupStats{Node: node, Group: id, Completions: first(g.TotalCompletions, g.Completions),
					Rejections: first(g.TotalRejections, g.Rejections), Cancellations: g.TotalCancellations, CPU: g.CPU.CurrentUsage, Memory: g.Memory.CurrentUsage})
			}
		}
	}
	slices.SortFunc(out, func(a, b WLMGroupStats) int {
		return cmp.Or(cmp.Compare(a.Node, b.Node), cmp.Compare(a.Group, b.Group))
	})
	return out, nil
}
