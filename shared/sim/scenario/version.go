package scenario

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// The workload-management plugin, served when the scenario's cluster lists it in plugins:
//
//   - groups under _wlm/query_group (2.18 to 3.0) or _wlm/workload_group (3.1 and later): list,
//     get, create (PUT on the collection), update (PUT on the group: the fields given replace
//     theirs, resource limits one by one) and delete, with the plugin's checks (name 1-50
//     characters and unique, resiliency_mode enforced/soft/monitor, each limit in (0, 1], each
//     resource's limits over all groups at most 1);
//   - rules under _rules/workload_group (3.1 and later): list (search_after pages), get, create,
//     update (the fields given replace theirs) and delete; index_pattern holds exact names or
//     prefixes ending in '*', principal (username, role) is accepted from 3.3, workload_group
//     must name an existing group's id;
//   - the wlm.<api>.* cluster settings, validated with the plugin's bounds and reported as
//     defaults;
//   - _wlm/stats, _wlm/{node_id}/stats and _wlm/stats/{group_id}, with the enforcement itself
//     (wlm_enforce.go).
//
// Any other version, or a cluster without the plugin, answers "no handler found", as OpenSearch
// does for a path no plugin registered.

// PluginWorkloadManagement is the plugins entry that turns workload management on.
const PluginWorkloadManagement = "workload-management"

// knownPlugins are the plugins a scenario may list.
var knownPlugins = []string{PluginWorkloadManagement}

// ParseVersion reads major.minor[.patch][-qualifier].
func ParseVersion(v string) (major, minor int, err error) {
	num, _, _ := strings.Cut(v, "-")
	parts := strings.Split(num, ".")
	if len(parts) < 2 || len(parts) > 3 {
		return 0, 0, fmt.Errorf("%q: want major.minor.patch", v)
	}
	var n [3]int
	for i, p := range parts {
		if n[i], err = strconv.Atoi(p); err != nil || n[i] < 0 {
			return 0, 0, fmt.Errorf("%q: %q is not a number", v, p)
		}
	}
	return n[0], n[1], nil
}

// AtLeast reports whether version major.minor is wantMajor.wantMinor or later.
func AtLeast(major, minor, wantMajor, wantMinor int) bool {
	return major > wantMajor || (major == wantMajor && minor >= wantMinor)
}

// validateVersionAndPlugins checks the cluster's opensearch_version and plugins.
func (c ClusterSpec) validateVersionAndPlugins(path string) error {
	if c.OpenSearchVersion != "" {
		major, minor, err := ParseVersion(c.OpenSearchVersion)
		if err != nil {
			return fieldError(path+".opensearch_version", "%v", err)
		}
		if !AtLeast(major, minor, 2, 0) {
			return fieldError(path+".opensearch_version", "%q: the simulator answers as OpenSearch 2.0 or later", c.OpenSearchVersion)
		}
	}
	seen := map[string]bool{}
	for i, p := range c.Plugins {
		pp := fmt.Sprintf("%s.plugins[%d]", path, i)
		switch {
		case !slices.Contains(knownPlugins, p):
			return fieldError(pp, "%q: the simulator serves only %v", p, knownPlugins)
		case seen[p]:
			return fieldError(pp, "%q listed twice", p)
		}
		seen[p] = true
		if p == PluginWorkloadManagement {
			major, minor, _ := ParseVersion(cmp.Or(c.OpenSearchVersion, VersionNumber))
			if !AtLeast(major, minor, 2, 18) {
				return fieldError(pp, "workload-management needs OpenSearch 2.18 or later, the cluster is %s", cmp.Or(c.OpenSearchVersion, VersionNumber))
			}
		}
	}
	return nil
}

// VersionNumber is the OpenSearch release the simulator answers as unless the scenario names
// another (brief: 2.19.3).
const VersionNumber = "2.19.3"
