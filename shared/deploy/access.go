package deploy

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/awslabs/goformation/v7/cloudformation"
)

// request is one kind of HTTP request a function sends to OpenSearch. The same value yields the
// function's IAM grant (method and path under the domain's ARN) and its fine-grained access
// control permission (the OpenSearch action the request runs), so the two cannot drift apart.
type request struct {
	method string
	// path is the request path without its leading slash, as IAM matches it under the domain
	// ARN: "*" stands for any characters (an index name, a metric list).
	path string
	// action is the security plugin's action name for the request.
	action string
	// index is true for an index permission (on the indices the path names), false for a
	// cluster permission.
	index bool
}

// The requests shardwise sends (shared/opensearch, called through shared/collect). The action
// names are OpenSearch 2.x's transport actions; GET _cluster/settings runs a cluster state
// request, so it needs cluster:monitor/state, not a settings action.
var (
	reqNodesStats      = request{http.MethodGet, "_nodes/stats/*", "cluster:monitor/nodes/stats", false}
	reqNodesInfo       = request{http.MethodGet, "_nodes", "cluster:monitor/nodes/info", false}
	reqShardStats      = request{http.MethodGet, "_stats", "indices:monitor/stats", true}
	reqClusterState    = request{http.MethodGet, "_cluster/state/*", "cluster:monitor/state", false}
	reqHealth          = request{http.MethodGet, "_cluster/health", "cluster:monitor/health", false}
	reqClusterSettings = request{http.MethodGet, "_cluster/settings", "cluster:monitor/state", false}
	reqIndexSettings   = request{http.MethodGet, "*/_settings", "indices:monitor/settings/get", true}
	reqPutSettings     = request{http.MethodPut, "*/_settings", "indices:admin/settings/update", true}
	reqReroute         = request{http.MethodPost, "_cluster/reroute", "cluster:admin/reroute", false}
	reqTasks           = request{http.MethodGet, "_tasks", "cluster:monitor/tasks/lists", false}
	reqCancelTask      = request{http.MethodPost, "_tasks/*/_cancel", "cluster:admin/tasks/cancel", false}
	reqRoot            = request{http.MethodGet, "", "cluster:monitor/main", false}
	reqNodesOS         = request{http.MethodGet, "_nodes/os", "cluster:monitor/nodes/info", false}
	reqPutClusterSet   = request{http.MethodPut, "_cluster/settings", "cluster:admin/settings/update", false}
)

// wlmRequests are the workload-management plugin's requests of the sandbox sync, for both names
// of its API (_wlm/query_group on 2.18 to 3.0, _wlm/workload_group from 3.1) and its rules (3.x):
// list, create, update and delete.
func wlmRequests() []request {
	var out []request
	for _, api := range []struct{ path, action string }{
		{"_wlm/query_group", "cluster:admin/opensearch/wlm/query_group/"},
		{"_wlm/workload_group", "cluster:admin/opensearch/wlm/workload_group/"},
		{"_rules/workload_group", "cluster:admin/opensearch/wlm/rule/"},
	} {
		out = append(out,
			request{http.MethodGet, api.path, api.action + "_get", false},
			request{http.MethodPut, api.path, api.action + "_create", false},
			request{http.MethodPut, api.path + "/*", api.action + "_update", false},
			request{http.MethodDelete, api.path + "/*", api.action + "_delete", false},
		)
	}
	return out
}

// readCluster is one sample: what collect's Read sends (node stats, shard stats, state, health,
// cluster settings, and node info when a node it has not seen appears).
var readCluster = []request{reqNodesStats, reqNodesInfo, reqShardStats, reqClusterState, reqHealth, reqClusterSettings}

// readTopology is the move function's fresh read before it acts: readCluster without the shard
// stats (collect's ReadTopology: the copies' sizes come from the planned snapshot).
var readTopology = []request{reqNodesStats, reqNodesInfo, reqClusterState, reqHealth, reqClusterSettings}

// DynamoDB actions on the state table, one per call of shared/state's DynamoAPI.
const (
	ddbGetItem        = "dynamodb:GetItem"
	ddbPutItem        = "dynamodb:PutItem"
	ddbDeleteItem     = "dynamodb:DeleteItem"
	ddbQuery          = "dynamodb:Query"
	ddbBatchGetItem   = "dynamodb:BatchGetItem"
	ddbBatchWriteItem = "dynamodb:BatchWriteItem"
)

// esAction is the IAM action Amazon OpenSearch Service checks for an HTTP method
// (es:ESHttpGet, es:ESHttpPut, ...).
func esAction(method string) string {
	return "es:ESHttp" + method[:1] + strings.ToLower(method[1:])
}

// openSearchStatements grants exactly the function's requests: one statement per HTTP method,
// listing the paths sent with it under each domain's ARN.
func openSearchStatements(reqs []request) []any {
	paths := map[string][]string{}
	for _, r := range reqs {
		if !slices.Contains(paths[r.method], r.path) {
			paths[r.method] = append(paths[r.method], r.path)
		}
	}
	var out []any
	for _, method := range sortedMethods(paths) {
		var resources []string
		for _, p := range paths[method] {
			resources = append(resources, domainResources(p)...)
		}
		out = append(out, map[string]any{"Effect": "Allow", "Action": []string{esAction(method)}, "Resource": resources})
	}
	return out
}

func sortedMethods(m map[string][]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// dynamoDBStatement grants exactly the function's DynamoDB actions, on the state table only.
func dynamoDBStatement(actions []string) any {
	return map[string]any{"Effect": "Allow", "Action": actions, "Resource": cloudformation.GetAtt(tableID, "Arn")}
}

// fgacRole is one function's role in OpenSearch's security plugin, as its REST API takes it.
type fgacRole struct {
	ClusterPermissions []string         `json:"cluster_permissions"`
	IndexPermissions   []fgacIndexPerms `json:"index_permissions"`
}

type fgacIndexPerms struct {
	IndexPatterns  []string `json:"index_patterns"`
	AllowedActions []string `json:"allowed_actions"`
}

// fgacRoleOf turns a function's requests into its security plugin role. shardwise reads and
// moves every index, hidden ones included, so index permissions are on "*".
func fgacRoleOf(reqs []request) fgacRole {
	role := fgacRole{ClusterPermissions: []string{}, IndexPermissions: []fgacIndexPerms{}}
	var index []string
	for _, r := range reqs {
		switch {
		case r.index && !slices.Contains(index, r.action):
			index = append(index, r.action)
		case !r.index && !slices.Contains(role.ClusterPermissions, r.action):
			role.ClusterPermissions = append(role.ClusterPermissions, r.action)
		}
	}
	slices.Sort(role.ClusterPermissions)
	slices.Sort(index)
	if len(index) > 0 {
		role.IndexPermissions = append(role.IndexPermissions, fgacIndexPerms{IndexPatterns: []string{"*"}, AllowedActions: index})
	}
	return role
}

// FGACRoles renders, for OpenSearch Dashboards' Dev Tools console, the fine-grained access control
// roles of the functions that call OpenSearch and their mappings to the functions' IAM roles
// (the stack's <Function>RoleArn outputs): one role per function, holding exactly the
// permissions of the requests it sends.
func FGACRoles() (string, error) {
	var b strings.Builder
	b.WriteString("# shardwise's OpenSearch roles for fine-grained access control, generated by `shardwise template --fgac-role`.\n")
	b.WriteString("# Paste into Dev Tools as the master user; replace each <...RoleArn> with the stack output of that name.\n")
	for _, fn := range functions() {
		if len(fn.openSearch) == 0 {
			continue
		}
		role, err := devToolsJSON(fgacRoleOf(fn.openSearch))
		if err != nil {
			return "", fmt.Errorf("fgac role %s: %w", fn.name, err)
		}
		mapping, err := devToolsJSON(map[string][]string{"backend_roles": {"<" + roleOutput(fn.name) + ">"}})
		if err != nil {
			return "", fmt.Errorf("fgac role mapping %s: %w", fn.name, err)
		}
		name := fgacRoleName(fn.name)
		fmt.Fprintf(&b, "\n# %s: %s\nPUT _plugins/_security/api/roles/%s\n%s\nPUT _plugins/_security/api/rolesmapping/%s\n%s",
			fn.name, fn.description, name, role, name, mapping)
	}
	return b.String(), nil
}

// fgacRoleName is the security plugin role of a function.
func fgacRoleName(function string) string { return "shardwise_" + function }

// roleOutput names the stack output holding a function's IAM role ARN.
func roleOutput(function string) string { return logicalID(function) + "RoleArn" }

// devToolsJSON indents v as the Dev Tools console shows it, "<" and ">" unescaped.
func devToolsJSON(v any) (string, error) {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return "", err
	}
	return b.String(), nil
}
