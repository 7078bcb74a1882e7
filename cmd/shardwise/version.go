package main

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/shardwise/shardwise/shared/buildinfo"
)

func newVersion() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print shardwise's version, the commit it was built from and the Go version that built it",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			bi := buildinfo.Get()
			if asJSON {
				return json.NewEncoder(cmd.OutOrStdout()).Encode(bi)
			}
			_, err := fmt.Fprintf(cmd.OutOrStdout(), "shardwise %s\ncommit %s\n%s\n", bi.Version, bi.Commit, bi.GoVersion)
			return err
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the build information as JSON")
	return cmd
}
