package opensearch

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/opensearch-project/opensearch-go/v4/opensearchapi"
)

// RerouteCommand is one command of POST _cluster/reroute: exactly one of Move and Cancel.
type RerouteCommand struct {
	Move   *MoveCommand   `json:"move,omitempty"`
	Cancel *CancelCommand `json:"cancel,omitempty"`
}

// MoveCommand moves a started shard copy from one node to another (node IDs or names).
type MoveCommand struct {
	Index    string `json:"index"`
	Shard    int    `json:"shard"`
	FromNode string `json:"from_node"`
	ToNode   string `json:"to_node"`
}

// CancelCommand cancels a copy's recovery or relocation on Node; a primary needs AllowPrimary.
type CancelCommand struct {
	Index        string `json:"index"`
	Shard        int    `json:"shard"`
	Node         string `json:"node"`
	AllowPrimary bool   `json:"allow_primary,omitempty"`
}

// Move builds a move command.
func Move(index string, shard int, fromNode, toNode string) RerouteCommand {
	return RerouteCommand{Move: &MoveCommand{Index: index, Shard: shard, FromNode: fromNode, ToNode: toNode}}
}

// Cancel builds a cancel command.
func Cancel(index string, shard int, node string, allowPrimary bool) RerouteCommand {
	return RerouteCommand{Cancel: &CancelCommand{Index: index, Shard: shard, Node: node, AllowPrimary: allowPrimary}}
}

func (c RerouteCommand) validate() error {
	switch {
	case c.Move != nil && c.Cancel != nil:
		return errors.New("both move and cancel set")
	case c.Move != nil:
		m := c.Move
		if m.Index == "" || m.Shard < 0 || m.FromNode == "" || m.ToNode == "" {
			return fmt.Errorf("move %s[%d] %s→%s: index, shard, from_node and to_node are required", m.Index, m.Shard, m.FromNode, m.ToNode)
		}
		if m.FromNode == m.ToNode {
			return fmt.Errorf("move %s[%d]: from_node and to_node are both %s", m.Index, m.Shard, m.FromNode)
		}
	case c.Cancel != nil:
		k := c.Cancel
		if k.Index == "" || k.Shard < 0 || k.Node == "" {
			return fmt.Errorf("cancel %s[%d] on %s: index, shard and node are required", k.Index, k.Shard, k.Node)
		}
	default:
		return errors.New("neither move nor cancel set")
	}
	return nil
}

// RerouteOptions are the reroute flags. DryRun computes the result without applying it; Explain
// returns each command's decisions instead of failing on a NO.
type RerouteOptions struct {
	DryRun  bool
	Explain bool
}

// Decision is one allocation decider's verdict.
type Decision struct {
	Decider string `json:"decider"`
	// Decision is YES, NO, THROTTLE or ALWAYS.
	Decision    string `json:"decision"`
	Explanation string `json:"explanation"`
}

// RerouteExplanation is the verdict on one command, when Explain was set.
type RerouteExplanation struct {
	Command   string
	Index     string
	Shard     int
	FromNode  string
	ToNode    string
	Node      string
	Decisions []Decision
}

// RerouteResult is the reroute's answer; Explanations are filled when Explain was set.
type RerouteResult struct {
	Acknowledged bool
	Explanations []RerouteExplanation
}

var rerouteFilter = []string{"acknowledged", "explanations"}

// Reroute sends POST _cluster/reroute with cmds, asking for metric=none so the response carries
// no cluster state. With Explain, a command OpenSearch refuses comes back as NO decisions instead
// of an error. An unacknowledged reroute returns its result with an error wrapping
// ErrNotAcknowledged. A dry run is retried like any read; a real reroute is sent once, since
// an attempt that timed out may still have landed: after an error read the routing again before
// concluding nothing moved.
func (c *Client) Reroute(ctx context.Context, cmds []RerouteCommand, opts RerouteOptions) (RerouteResult, error) {
	if len(cmds) == 0 {
		return RerouteResult{}, errors.New("reroute: no commands")
	}
	for i, cmd := range cmds {
		if err := cmd.validate(); err != nil {
			return RerouteResult{}, fmt.Errorf("reroute: command %d: %w", i, err)
		}
	}
	payload, err := json.Marshal(struct {
		Commands []RerouteCommand `json:"commands"`
	}{cmds})
	if err != nil {
		return RerouteResult{}, fmt.Errorf("reroute: encode: %w", err)
	}
	req := opensearchapi.ClusterRerouteReq{
		Body: bytes.NewReader(payload),
		Params: opensearchapi.ClusterRerouteParams{
			DryRun:     new(opts.DryRun),
			Explain:    new(opts.Explain),
			Metric:     []string{"none"},
			FilterPath: rerouteFilter,
		},
	}
	send := c.callOnce
	if opts.DryRun {
		send = c.call
	}
	body, err := send(ctx, "reroute", http.MethodPost, req)
	if err != nil {
		return RerouteResult{}, err
	}
	res, err := decodeReroute(body)
	if err != nil {
		return RerouteResult{}, fmt.Errorf("reroute: %w", err)
	}
	if !res.Acknowledged {
		return res, fmt.Errorf("reroute: %w", ErrNotAcknowledged)
	}
	return res, nil
}

func decodeReroute(body []byte) (RerouteResult, error) {
	var wire struct {
		Acknowledged bool `json:"acknowledged"`
		Explanations []struct {
			Command    string `json:"command"`
			Parameters struct {
				Index    string `json:"index"`
				Shard    int    `json:"shard"`
				FromNode string `json:"from_node"`
				ToNode   string `json:"to_node"`
				Node     string `json:"node"`
			} `json:"parameters"`
			Decisions []Decision `json:"decisions"`
		} `json:"explanations"`
	}
	if err := json.Unmarshal(body, &wire); err != nil {
		return RerouteResult{}, fmt.Errorf("decode: %w", err)
	}
	out := RerouteResult{Acknowledged: wire.Acknowledged}
	for _, e := range wire.Explanations {
		out.Explanations = append(out.Explanations, RerouteExplanation{
			Command:   e.Command,
			Index:     e.Parameters.Index,
			Shard:     e.Parameters.Shard,
			FromNode:  e.Parameters.FromNode,
			ToNode:    e.Parameters.ToNode,
			Node:      e.Parameters.Node,
			Decisions: e.Decisions,
		})
	}
	return out, nil
}

// AllocationExplanation is GET _cluster/allocation/explain for one shard copy: why it may or may
// not stay where it is, move, or be assigned, with each node's deciders.
type AllocationExplanation struct {
	Index   string `json:"index"`
	Shard   int    `json:"shard"`
	Primary bool   `json:"primary"`
	// CurrentState is "started", "unassigned", "initializing" or "relocating".
	CurrentState string   `json:"current_state"`
	CurrentNode  *NodeRef `json:"current_node"`
	// Decisions are lower-case: yes, no, throttled, worse_balance, awaiting_info, ...
	CanRemainOnCurrentNode       string         `json:"can_remain_on_current_node"`
	CanRemainDecisions           []Decision     `json:"can_remain_decisions"`
	CanMoveToOtherNode           string         `json:"can_move_to_other_node"`
	MoveExplanation              string         `json:"move_explanation"`
	CanRebalanceCluster          string         `json:"can_rebalance_cluster"`
	CanRebalanceClusterDecisions []Decision     `json:"can_rebalance_cluster_decisions"`
	CanRebalanceToOtherNode      string         `json:"can_rebalance_to_other_node"`
	RebalanceExplanation         string         `json:"rebalance_explanation"`
	CanAllocate                  string         `json:"can_allocate"`
	AllocateExplanation          string         `json:"allocate_explanation"`
	UnassignedInfo               *UnassignedRef `json:"unassigned_info"`
	NodeDecisions                []NodeDecision `json:"node_allocation_decisions"`
}

// NodeRef names a node.
type NodeRef struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// UnassignedRef says why a copy is unassigned (e.g. NODE_LEFT).
type UnassignedRef struct {
	Reason string `json:"reason"`
}

// NodeDecision is one node's verdict for the copy, with the deciders behind it.
type NodeDecision struct {
	NodeID        string     `json:"node_id"`
	NodeName      string     `json:"node_name"`
	Decision      string     `json:"node_decision"`
	WeightRanking int        `json:"weight_ranking"`
	Deciders      []Decision `json:"deciders"`
}

var allocationExplainFilter = joinFilters(
	[]string{"index", "shard", "primary", "current_state", "current_node.id", "current_node.name",
		"can_remain_on_current_node", "can_remain_decisions", "can_move_to_other_node", "move_explanation",
		"can_rebalance_cluster", "can_rebalance_cluster_decisions", "can_rebalance_to_other_node",
		"rebalance_explanation", "can_allocate", "allocate_explanation", "unassigned_info.reason"},
	prefixed("node_allocation_decisions.", "node_id", "node_name", "node_decision", "weight_ranking", "deciders"),
)

// allocationExplainRequest is POST _cluster/allocation/explain with current_node, which
// opensearch-go v4's ClusterAllocationExplainBody cannot carry.
type allocationExplainRequest struct {
	Index       string `json:"index"`
	Shard       int    `json:"shard"`
	Primary     bool   `json:"primary"`
	CurrentNode string `json:"current_node,omitempty"`
	filterPath  []string
}

// GetRequest builds the request; the transport fills in scheme and host.
func (r allocationExplainRequest) GetRequest(method string) (*http.Request, error) {
	payload, err := json.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("encode allocation explain body: %w", err)
	}
	// opensearch.Do puts the caller's context on the request; the interface passes none here.
	req, err := http.NewRequestWithContext(context.Background(), method, "/_cluster/allocation/explain", bytes.NewReader(payload))
	if err != nil {
		return nil, fmt.Errorf("build allocation explain request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	if len(r.filterPath) > 0 {
		q := req.URL.Query()
		q.Set("filter_path", strings.Join(r.filterPath, ","))
		req.URL.RawQuery = q.Encode()
	}
	return req, nil
}

// AllocationExplain explains the copy of index[shard] (the primary, or a replica) on node; an
// empty node lets OpenSearch pick the copy (for a replica: any one).
func (c *Client) AllocationExplain(ctx context.Context, index string, shard int, primary bool, node string) (AllocationExplanation, error) {
	name := fmt.Sprintf("allocation explain %s[%d]", index, shard)
	if err := checkIndexName(index); err != nil {
		return AllocationExplanation{}, fmt.Errorf("%s: %w", name, err)
	}
	if shard < 0 {
		return AllocationExplanation{}, fmt.Errorf("%s: shard must not be negative", name)
	}
	req := allocationExplainRequest{Index: index, Shard: shard, Primary: primary, CurrentNode: node, filterPath: allocationExplainFilter}
	body, err := c.call(ctx, name, http.MethodPost, req)
	if err != nil {
		return AllocationExplanation{}, err
	}
	e, err := decodeAllocationExplain(body)
	if err != nil {
		return AllocationExplanation{}, fmt.Errorf("%s: %w", name, err)
	}
	return e, nil
}

func decodeAllocationExplain(body []byte) (AllocationExplanation, error) {
	var e AllocationExplanation
	if err := json.Unmarshal(body, &e); err != nil {
		return AllocationExplanation{}, fmt.Errorf("decode: %w", err)
	}
	return e, nil
}
