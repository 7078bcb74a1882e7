package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/shardwise/shardwise/shared/allocation"
	"github.com/shardwise/shardwise/shared/cluster"
)

func newExplain(d *display) *cobra.Command {
	var f liveFlags
	var primary, asJSON bool
	cmd := &cobra.Command{
		Use:   "explain INDEX SHARD --url URL",
		Short: "Every decider's answer for every node, for one shard copy",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			shard, err := strconv.Atoi(args[1])
			if err != nil || shard < 0 {
				return fmt.Errorf("shard %q: want a shard number", args[1])
			}
			e, det, err := f.engine(cmd.Context(), cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			snap, err := latestSnapshot(cmd.Context(), e.Store)
			if err != nil {
				return err
			}
			if err := shardExists(snap, args[0], shard); err != nil {
				return err
			}
			// Judged as the planner judges: a hot or rising node is no target, and a hot node's
			// copies weigh their demand (allocation.PlannedView).
			ex, err := allocation.Explain(snap, e.Config.Allocation.WithSampleInterval(e.Config.RefreshPeriod.Std()), det.Plan.Hotspots, args[0], shard, primary)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				return enc.Encode(ex)
			}
			t := newTable("node", "decision", "decider", "answer", "reason~")
			for _, n := range ex {
				name := n.NodeName
				if n.Current {
					name += " (current: may it remain?)"
				}
				for i, v := range n.Verdicts {
					label, dec := "", ""
					if i == 0 {
						label, dec = name, n.Decision.String()
					}
					t.add(label, dec, v.Decider, v.Decision.String(), v.Reason)
				}
			}
			// One write, after every log record: the table never interleaves with stderr.
			var b bytes.Buffer
			t.render(&b, d.width(out))
			_, err = out.Write(b.Bytes())
			return err
		},
	}
	f.register(cmd, d)
	cmd.Flags().BoolVar(&primary, "primary", false, "explain the primary copy (default: a replica)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	return cmd
}

// shardExists says when the snapshot has no such index, or the index no such shard: explain would
// otherwise answer that no copy is assigned, as if the index were there and unassigned.
func shardExists(snap *cluster.Snapshot, index string, shard int) error {
	shards := -1
	for _, c := range snap.Copies {
		if c.Index == index {
			shards = max(shards, c.Shard)
		}
	}
	switch {
	case shards < 0:
		return fmt.Errorf("index %s not found", index)
	case shard > shards:
		return fmt.Errorf("index %s has shards 0 to %d: shard %d not found", index, shards, shard)
	}
	return nil
}
