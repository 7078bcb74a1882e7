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
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := newCLI().execute(ctx)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "shardwise:", err)
		os.Exit(1)
	}
}

// cli is the command tree and the output settings its flags fill in.
type cli struct {
	root    *cobra.Command
	display *display
}

func newCLI() *cli {
	d := &display{getenv: os.Getenv}
	root := &cobra.Command{
		Use:           "shardwise",
		Short:         "Keep OpenSearch clusters free of write hotspots, explainably and safely",
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			return d.start(cmd.ErrOrStderr())
		},
	}
	d.register(root)
	root.AddCommand(newSimulate(), newSim(), newPlan(d), newExplain(d), newTemplate(), newBench(), newBenchDocs(), newSandbox(d))
	root.AddCommand(newVersion(), newConfigReference())
	return &cli{root: root, display: d}
}

// execute runs the command line, then writes the error log records the returned error does not
// already say; the caller prints the error itself, once.
func (c *cli) execute(ctx context.Context) error {
	err := c.root.ExecuteContext(ctx)
	c.display.logs.flush(err)
	return err
}
