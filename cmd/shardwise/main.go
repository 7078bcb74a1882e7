// Command shardwise is the operator CLI: simulate runs every function against the built-in
// simulator on a virtual clock, sim serve serves the simulator to other clients, plan and explain
// show what shardwise would do on a real cluster (dry-run, always), and template renders the SAM
// template.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"

	"github.com/spf13/cobra"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "shardwise:", err)
		os.Exit(1)
	}
}

func run() error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	return newRoot().ExecuteContext(ctx)
}

func newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:           "shardwise",
		Short:         "Keep OpenSearch clusters free of write hotspots, explainably and safely",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newSimulate(), newSim(), newPlan(), newExplain(), newTemplate(), newBench(), newSandbox())
	root.AddCommand(newVersion(), newConfigReference())
	return root
}
