package main

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/shardwise/shardwise/shared/allocation"
	"github.com/shardwise/shardwise/shared/cluster"
	"github.com/shardwise/shardwise/shared/engine"
	"github.com/shardwise/shardwise/shared/replicas"
	"github.com/shardwise/shardwise/shared/size"
)

func newPlan(d *display) *cobra.Command {
	var f liveFlags
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "plan --url URL",
		Short: "Dry-run against a real cluster: hotspots with evidence, planned moves and replica changes with reasons",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out := cmd.OutOrStdout()
			progress := cmd.ErrOrStderr()
			e, det, err := f.engine(cmd.Context(), progress)
			if err != nil {
				return err
			}
			rep, err := e.Replicas(cmd.Context(), liveCluster, "")
			if err != nil {
				return err
			}
			if asJSON {
				snap, err := latestSnapshot(cmd.Context(), e.Store)
				if err != nil {
					return err
				}
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				return enc.Encode(struct {
					Plan     allocation.Plan     `json:"plan"`
					Replicas []replicas.Decision `json:"replicas"`
					// Replica node-hours per hour now and after the planned changes, beside the
					// search latency they buy.
					ReplicaNodeHours      int        `json:"replica_node_hours_per_hour"`
					ReplicaNodeHoursAfter int        `json:"replica_node_hours_per_hour_after"`
					SearchLatencyMs       *float64   `json:"search_latency_ms"`
					Copies                []copyLoad `json:"copies"`
				}{det.Plan, rep.Decisions, rep.ReplicaCopies, rep.ReplicaCopiesAfter, latency(rep), copyLoads(snap)})
			}
			// One write, after every log record: the tables never interleave with stderr.
			var b bytes.Buffer
			width := d.width(out)
			printPlan(&b, det.Plan, width)
			printReplicas(&b, rep.Decisions, width)
			printReplicaCost(&b, rep)
			_, err = out.Write(b.Bytes())
			return err
		},
	}
	f.register(cmd, d)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the plan as JSON")
	return cmd
}

// copyLoad is one copy as the plan read it: where it is and the WRITE and search threads it kept
// busy (load_known false when the sample could not measure them).
type copyLoad struct {
	cluster.Copy
	NodeName string `json:"node_name,omitempty"`
}

func copyLoads(snap *cluster.Snapshot) []copyLoad {
	out := make([]copyLoad, 0, len(snap.Copies))
	for _, c := range snap.Copies {
		cl := copyLoad{Copy: c}
		if n := snap.NodeByID(c.Node); n != nil {
			cl.NodeName = n.Name
		}
		out = append(out, cl)
	}
	return out
}

// hotState says whether a node is hot, rising (not hot yet, and relieved before its queue forms),
// or skewed (spread ahead of the peak).
func hotState(h allocation.Hotspot) string {
	if !h.Hot && h.Rising != nil {
		return fmt.Sprintf("rising (saturates in ~%s)", (time.Duration(h.Rising.SaturatesInSeconds) * time.Second).Round(time.Second))
	}
	if !h.Hot && h.Skew != nil {
		return fmt.Sprintf("skewed (%.0f%% against the cluster's %.0f%%)", h.Skew.Utilization*100, h.Skew.ClusterUtilization*100)
	}
	return yesNo(h.Hot)
}

// printPlan writes the hotspots and the planned moves, fitting width (0: no limit).
func printPlan(w io.Writer, p allocation.Plan, width int) {
	fmt.Fprintf(w, "\nWRITE hotspots (snapshot %s)\n", p.SnapshotAt.Format("2006-01-02 15:04:05Z07:00"))
	if len(p.Hotspots) == 0 {
		fmt.Fprintln(w, "  none: no node meets both the queue-latency and utilization criteria")
	} else {
		t := newTable("node", "queue latency (est.)", "utilization", "queued tasks", "rejected tasks", "streak", "hot", "outcome")
		for _, h := range p.Hotspots {
			t.add(h.NodeName, fmt.Sprintf("%.1f s (limit %.1f s)", h.QueueLatencySeconds, h.LatencyLimit),
				fmt.Sprintf("%.0f %% (limit %.0f %%)", h.Utilization*100, h.UtilizationLimit*100), h.Queue, h.Rejected,
				fmt.Sprintf("%d/%d samples", h.Streak, h.StreakLimit), hotState(h), cmp.Or(h.Outcome, "-"))
		}
		t.render(w, width)
	}
	fmt.Fprintln(w, "\nPlanned moves")
	if len(p.Moves) == 0 {
		fmt.Fprintln(w, "  none")
	} else {
		t := newTable("shard", "from", "to", "phase", "size", "write load", "reason~")
		for _, m := range p.Moves {
			kind := "replica"
			if m.Primary {
				kind = "primary"
			}
			t.add(fmt.Sprintf("%s[%d] %s", m.Index, m.Shard, kind), m.FromName, m.ToName, string(m.Phase),
				size.Format(m.SizeBytes), threads(m.WriteLoad), m.Reason)
		}
		t.render(w, width)
	}
	for _, n := range p.Notes {
		fmt.Fprintf(w, "  note (%s): %s\n", n.Kind, n.Reason)
	}
	if p.ScaleUp != nil {
		fmt.Fprintf(w, "  SCALE UP NEEDED: %s\n", p.ScaleUp.Reason)
	}
}

// threads writes a load in busy threads (thread-seconds per second), the unit of every load.
func threads(v float64) string { return fmt.Sprintf("%.2f threads", v) }

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// latency is the replica cycle's mean search latency, nil when it was not measured.
func latency(r engine.ReplicasResult) *float64 {
	if !r.LatencyKnown {
		return nil
	}
	return &r.SearchLatencyMs
}

// printReplicaCost puts what the replicas cost, in replica node-hours per hour, beside the search
// latency they buy.
func printReplicaCost(w io.Writer, r engine.ReplicasResult) {
	lat := "not measured"
	if r.LatencyKnown {
		lat = fmt.Sprintf("%.0f ms mean (OpenSearch reports no percentile)", r.SearchLatencyMs)
	}
	fmt.Fprintf(w, "  replica_node_hours: %d per hour now, %d after these changes; search latency %s\n", r.ReplicaCopies, r.ReplicaCopiesAfter, lat)
}

// printReplicas writes each index's replica decision with the numbers of its formula.
func printReplicas(w io.Writer, ds []replicas.Decision, width int) {
	fmt.Fprintln(w, "\nReplicas: desired copies = min(ceil(L × N / (S × X)), N), where L is the index's share of the")
	fmt.Fprintln(w, "search load, N the nodes that may hold its copies and S its primaries")
	if len(ds) == 0 {
		fmt.Fprintln(w, "  no indices")
		return
	}
	t := newTable("index", "L", "N", "S", "replicas", "desired", "decision", "cooldown~", "reason~")
	for _, d := range ds {
		cooldown := "-"
		if !d.PendingSince.IsZero() {
			cooldown = fmt.Sprintf("lower since %s, down at %s", d.PendingSince.Format("15:04:05"), d.ScaleDownAt.Format("15:04:05"))
		}
		t.add(d.Index, fmt.Sprintf("%.1f %%", d.L*100), d.N, d.S, d.From, d.Desired, d.Kind, cooldown, strings.TrimSpace(d.Reason))
	}
	t.render(w, width)
}
