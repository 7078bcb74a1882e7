package main

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/olekukonko/tablewriter"
	"github.com/spf13/cobra"

	"github.com/shardwise/shardwise/shared/allocation"
)

func newExplain() *cobra.Command {
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
			hot := map[string]bool{}
			for _, h := range det.Plan.Hotspots {
				hot[h.Node] = h.Hot
			}
			ex, err := allocation.Explain(snap, e.Config.Allocation, hot, args[0], shard, primary)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				return enc.Encode(ex)
			}
			t := tablewriter.NewWriter(out)
			t.Header("node", "decision", "decider", "answer", "reason")
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
					_ = t.Append(label, dec, v.Decider, v.Decision.String(), v.Reason)
				}
			}
			return t.Render()
		},
	}
	f.register(cmd)
	cmd.Flags().BoolVar(&primary, "primary", false, "explain the primary copy (default: a replica)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	return cmd
}
