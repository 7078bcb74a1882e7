package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/shardwise/shardwise/shared/bench"
	"github.com/shardwise/shardwise/shared/config"
	"github.com/shardwise/shardwise/shared/jsonstrict"
)

func newBench() *cobra.Command {
	var (
		dir, out, balancers string
		quick               bool
	)
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Run every scenario with every balancer and report how they compare",
		Long: `Runs every scenario in --scenarios with every balancer (shardwise and the baselines), acting,
not dry-run, on the simulator's virtual clock, and writes into --out: results.md (a Markdown
table), results.json (every result and per-tick series), report.html (one self-contained file with
charts, no network needed) and hot-nodes.png. Progress goes to stderr, the table to stdout.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			bs, err := bench.ParseBalancers(balancers)
			if err != nil {
				return err
			}
			res, err := bench.Run(cmd.Context(), bench.Options{
				Dir: dir, Quick: quick, Balancers: bs, Config: config.Default(),
				Progress: bench.NewProgress(cmd.ErrOrStderr()),
			})
			if err != nil {
				return err
			}
			files, err := bench.Write(out, res)
			if err != nil {
				return err
			}
			fmt.Fprint(cmd.OutOrStdout(), bench.Markdown(res))
			for _, f := range files {
				fmt.Fprintln(cmd.ErrOrStderr(), "wrote", f)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&dir, "scenarios", "scenarios", "directory of scenario files (*.json)")
	cmd.Flags().StringVar(&out, "out", "build/bench", "directory to write the results and the report into")
	cmd.Flags().BoolVar(&quick, "quick", false, `small scenarios only: skip those named "production" or with more than 12 nodes`)
	cmd.Flags().StringVar(&balancers, "balancers", "", "comma-separated balancers to run (default: all)")
	return cmd
}

// newBenchDocs renders the documentation from a bench's results.json (bench.WriteDocs).
// `make bench` runs it.
func newBenchDocs() *cobra.Command {
	var results, docs string
	cmd := &cobra.Command{
		Use:    "bench-docs --results FILE --docs DIR",
		Short:  "Regenerate docs/results.md and docs/bench from a bench's results.json",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			data, err := os.ReadFile(results)
			if err != nil {
				return fmt.Errorf("bench results: %w", err)
			}
			var res bench.Results
			if err := jsonstrict.Decode(data, &res); err != nil {
				return fmt.Errorf("bench results: %w", jsonstrict.InFile(results, err))
			}
			files, err := bench.WriteDocs(docs, res)
			if err != nil {
				return err
			}
			for _, f := range files {
				fmt.Fprintln(cmd.ErrOrStderr(), "wrote", f)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&results, "results", "build/bench/results.json", "a bench's results.json")
	cmd.Flags().StringVar(&docs, "docs", "docs", "the documentation directory")
	return cmd
}
