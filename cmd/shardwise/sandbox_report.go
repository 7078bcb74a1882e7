package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/spf13/cobra"

	"github.com/shardwise/shardwise/shared/config"
	"github.com/shardwise/shardwise/shared/engine"
	"github.com/shardwise/shardwise/shared/sandbox"
	"github.com/shardwise/shardwise/shared/state"
)

// openStateTable opens the deployment's state table, the one the functions write: DynamoDB
// through the AWS config chain (AWS_ENDPOINT_URL_DYNAMODB reaches DynamoDB Local or moto). Tests
// replace it with a memory store.
var openStateTable = func(ctx context.Context, table, region string) (state.Store, error) {
	var opts []func(*awsconfig.LoadOptions) error
	if region != "" {
		opts = append(opts, awsconfig.WithRegion(region))
	}
	cfg, err := awsconfig.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("aws config: %w", err)
	}
	return state.NewDynamo(dynamodb.NewFromConfig(cfg, state.WithDynamoRetry), table, time.Now), nil
}

// reportNow is the report's clock; tests set it.
var reportNow = time.Now

func newSandboxReport(d *display) *cobra.Command {
	var table, region, cluster, since string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "report --cluster NAME [--since 1h] [--table TABLE]",
		Short: "Usage per sandbox over time, its cancellations and who would be cancelled, from the sandbox function's history",
		Long: `Reads the history the sandbox function keeps in the state table (one record per invocation, kept
for sandbox.history_retention) and prints, for the window: each sandbox's usage per node and in
total against its limit, with a series over the window; its cancellations by outcome and the
shares of the nodes' resources they freed; and the plan of the function's last pass: who would be
cancelled now. It reads only the table; it never reaches the cluster.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			window, err := sandbox.ParseSince(since)
			if err != nil {
				return err
			}
			probe := config.Default()
			probe.Clusters = []config.Cluster{{Name: cluster, URLs: []string{"http://unused"}, Auth: "none"}}
			probe.Table = table
			if err := probe.Validate(); err != nil {
				return fmt.Errorf("--cluster %q / --table %q: %w", cluster, table, err)
			}
			store, err := openStateTable(cmd.Context(), table, region)
			if err != nil {
				return err
			}
			to := reportNow()
			from := to.Add(-window)
			recs, err := engine.SandboxHistory(cmd.Context(), store, cluster, from, to)
			if err != nil {
				return err
			}
			sum := sandbox.Summarize(cluster, recs, from, to)
			out := cmd.OutOrStdout()
			if asJSON {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				return enc.Encode(sum)
			}
			var b bytes.Buffer
			printReport(&b, sum, table, d.width(out))
			_, err = out.Write(b.Bytes())
			return err
		},
	}
	cmd.Flags().StringVar(&cluster, "cluster", "", "the cluster's name in the configuration, as the functions key its records")
	cmd.Flags().StringVar(&table, "table", config.Default().Table, "the state table the functions write (the configuration's table)")
	cmd.Flags().StringVar(&region, "region", "", "the table's region (default from the AWS config chain)")
	cmd.Flags().StringVar(&since, "since", "1h", "the window: a duration such as 30m, 1h or 2d, at most 7d")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	_ = cmd.MarkFlagRequired("cluster")
	return cmd
}

// sparkBlocks draw a series, lowest to highest.
var sparkBlocks = []rune("▁▂▃▄▅▆▇█")

// spark draws series against top (the larger of the limit and the peak): a block per bucket, a
// space where no record fell.
func spark(series []*float64, top float64) string {
	var b strings.Builder
	for _, v := range series {
		switch {
		case v == nil:
			b.WriteRune('·')
		case top <= 0:
			b.WriteRune(sparkBlocks[0])
		default:
			i := int(*v / top * float64(len(sparkBlocks)-1))
			b.WriteRune(sparkBlocks[min(max(i, 0), len(sparkBlocks)-1)])
		}
	}
	return b.String()
}

// printReport writes the summary as tables fitting width (0: no limit).
func printReport(out io.Writer, s sandbox.Summary, table string, width int) {
	mode := "cancelling"
	if s.DryRun {
		mode = "dry-run"
	}
	fmt.Fprintf(out, "cluster %s, %s to %s (%s): %d invocations of the sandbox function, %d passes", s.Cluster,
		s.From.UTC().Format(time.RFC3339), s.To.UTC().Format(time.RFC3339), s.To.Sub(s.From), s.Invocations, s.Passes)
	if s.Invocations > 0 {
		fmt.Fprintf(out, ", %s", mode)
	}
	fmt.Fprintln(out)
	if s.Invocations == 0 {
		fmt.Fprintf(out, "no sandbox records in table %s for cluster %s in the window: the sandbox function has not run, defines no sandboxes, or its records expired (sandbox.history_retention)\n", table, s.Cluster)
		return
	}
	fmt.Fprintf(out, "\nUsage (share of each node's resource; total: the mean over the nodes), over time in %d buckets of %s, scaled to the larger of limit and peak:\n",
		sandbox.ReportBuckets, time.Duration(s.BucketSeconds*float64(time.Second)).Round(time.Second))
	u := newTable("sandbox", "resource", "node", "mode", "mean", "peak", "limit", "over", "over time")
	for _, r := range s.Usage {
		u.add(r.Sandbox, string(r.Resource), r.Node, string(r.Mode), percent(r.Mean), percent(r.Peak), percent(r.Limit),
			fmt.Sprintf("%.0f %%", r.OverShare*100), spark(r.Series, max(r.Limit, r.Peak)))
	}
	u.render(out, width)
	if s.DroppedRows > 0 {
		fmt.Fprintf(out, "%d usage rows of the idlest nodes and sandboxes were not recorded (at most %d a record)\n", s.DroppedRows, sandbox.MaxRecordRows)
	}

	fmt.Fprintln(out, "\nCancellations (freed: the shares of a node's resource the requests held, summed; 1.00 is one whole node's):")
	if len(s.Cancellations) == 0 {
		fmt.Fprintln(out, "  none")
	} else {
		c := newTable("sandbox", "executed", "freed", "dry-run", "skipped", "gone", "failed", "would have freed~")
		for _, x := range s.Cancellations {
			c.add(x.Sandbox, x.Count[engine.CancelExecuted], freedText(x.Freed[engine.CancelExecuted]), x.Count[engine.CancelDryRun],
				x.Count[engine.CancelSkipped], x.Count[engine.CancelGone], x.Count[engine.CancelFailed], wouldFree(x.Freed))
		}
		c.render(out, width)
	}

	fmt.Fprintf(out, "\nWould cancel now: the plan of the function's last pass (at %s), %d requests", s.PlanAt.UTC().Format(time.RFC3339), s.PlanTotal)
	if s.PlanTotal > len(s.Plan) {
		fmt.Fprintf(out, ", the %d largest listed", len(s.Plan))
	}
	fmt.Fprintln(out, ":")
	if len(s.Plan) == 0 {
		fmt.Fprintln(out, "  nothing")
		return
	}
	p := newTable("task", "opaque id", "sandbox", "node", "kind", "freed", "outcome", "reason~")
	for _, x := range s.Plan {
		p.add(x.Task, x.OpaqueID, x.Sandbox, x.Node, x.Kind, percent(x.Freed), x.Outcome, x.Reason)
	}
	p.render(out, width)
}

// freedText writes per-resource sums of node shares: "cpu 0.75", three quarters of a node's CPU.
func freedText(m map[sandbox.Resource]float64) string {
	if len(m) == 0 {
		return "-"
	}
	var parts []string
	for _, r := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s %.2f", r, m[r]))
	}
	return strings.Join(parts, ", ")
}

// wouldFree sums what the cancellations that were not executed would have freed.
func wouldFree(byOutcome map[string]map[sandbox.Resource]float64) string {
	sum := map[sandbox.Resource]float64{}
	for o, m := range byOutcome {
		if o == engine.CancelExecuted {
			continue
		}
		for r, v := range m {
			sum[r] += v
		}
	}
	return freedText(sum)
}
