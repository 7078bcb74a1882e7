package main

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/shardwise/shardwise/shared/config"
	"github.com/shardwise/shardwise/shared/engine"
	"github.com/shardwise/shardwise/shared/sandbox"
)

// newSandboxSync is `shardwise sandbox sync`: the sandbox function's workload-management sync,
// run once against a cluster. Dry-run unless --dry-run=false.
func newSandboxSync(d *display) *cobra.Command {
	var src definitionsSource
	var conn connFlags
	var asJSON, dryRun bool
	cmd := &cobra.Command{
		Use:   "sync --url URL -f FILE [--dry-run=false]",
		Short: "Sync sandboxes to OpenSearch workload management: report the drift, then create, update and delete groups and rules (dry-run by default)",
		Long: `Sync brings the cluster's workload-management groups (shardwise-<sandbox>), their rules and
the wlm.* mode and node thresholds to the definitions. It detects the plugin first: _wlm/query_group
on OpenSearch 2.18 to 3.0, _wlm/workload_group from 3.1, _rules/workload_group where served. It
prints the drift (group, field, want, have) before any change, and the calls it makes or, in a
dry run, would make. Groups and rules it does not own are left alone. The circuit breaker is
checked on fresh health before any change.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			raw, _, err := src.read()
			if err != nil {
				return err
			}
			defs, _, err := sandbox.ParseDocument(raw)
			if err != nil {
				return err
			}
			api, err := conn.api(cmd.Context())
			if err != nil {
				return err
			}
			res, err := engine.SyncWLM(cmd.Context(), api, api, defs, engine.WLMOptions{DryRun: dryRun, Safety: config.Default().Safety})
			res.Cluster = conn.url
			if perr := printSync(cmd.OutOrStdout(), res, asJSON); perr != nil {
				return perr
			}
			return err
		},
	}
	src.register(cmd)
	conn.register(cmd, d)
	cmd.Flags().BoolVar(&dryRun, "dry-run", true, "report the drift and the calls that would be made, and make none")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	return cmd
}

func printSync(out io.Writer, res engine.WLMSyncResult, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	fmt.Fprintf(out, "Workload management: %s\n", res.Support.Reason)
	for _, l := range res.Lines() {
		if _, err := fmt.Fprintln(out, l); err != nil {
			return err
		}
	}
	return nil
}
