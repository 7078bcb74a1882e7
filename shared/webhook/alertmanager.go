package webhook

import (
	"encoding/json"
	"fmt"
	"slices"
)

// alertmanagerVersion is the payload version Alertmanager's webhook receiver has sent since 0.x
// (Alertmanager docs, "webhook_config").
const alertmanagerVersion = "4"

// Alertmanager is what an Alertmanager notification asks for.
type Alertmanager struct {
	// Firing is false when every alert in it is resolved: nothing to do.
	Firing bool
	// Clusters are the labelCluster values of the firing alerts, sorted, without repeats.
	Clusters []string
	// Nodes are the labelNode values of the firing alerts, sorted, without repeats.
	Nodes []string
}

// parseAlertmanager decodes an Alertmanager webhook notification (payload version 4). Unknown
// fields are allowed: Alertmanager adds them in minor releases.
func parseAlertmanager(body []byte) (Alertmanager, error) {
	var wire struct {
		Version      string            `json:"version"`
		Status       string            `json:"status"`
		CommonLabels map[string]string `json:"commonLabels"`
		Alerts       []struct {
			Status string            `json:"status"`
			Labels map[string]string `json:"labels"`
		} `json:"alerts"`
	}
	if err := json.Unmarshal(body, &wire); err != nil {
		return Alertmanager{}, fmt.Errorf("%w: alertmanager notification: %w", errMalformed, err)
	}
	if wire.Version != alertmanagerVersion {
		return Alertmanager{}, fmt.Errorf("%w: alertmanager payload version %q, want %q", errMalformed, wire.Version, alertmanagerVersion)
	}
	if wire.Status != "firing" && wire.Status != "resolved" {
		return Alertmanager{}, fmt.Errorf("%w: alertmanager status %q, want firing or resolved", errMalformed, wire.Status)
	}
	var out Alertmanager
	for _, a := range wire.Alerts {
		if a.Status != "firing" {
			continue
		}
		out.Firing = true
		// Every alert carries the group's common labels too; they are the fallback for an alert
		// whose own labels were rewritten without them.
		if c := labelOr(a.Labels, wire.CommonLabels, labelCluster); c != "" {
			out.Clusters = append(out.Clusters, c)
		}
		if n := labelOr(a.Labels, wire.CommonLabels, labelNode); n != "" {
			out.Nodes = append(out.Nodes, n)
		}
	}
	slices.Sort(out.Clusters)
	out.Clusters = slices.Compact(out.Clusters)
	slices.Sort(out.Nodes)
	out.Nodes = slices.Compact(out.Nodes)
	return out, nil
}

func labelOr(labels, common map[string]string, name string) string {
	if v := labels[name]; v != "" {
		return v
	}
	return common[name]
}
