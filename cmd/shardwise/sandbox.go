package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/shardwise/shardwise/shared/config"
	"github.com/shardwise/shardwise/shared/sandbox"
)

func newSandbox(d *display) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "sandbox",
		Short: "Check sandbox definitions offline, or a cluster's usage against them",
	}
	cmd.AddCommand(newSandboxValidate(), newSandboxStatus(d), newSandboxSync(d), newSandboxReport(d))
	return cmd
}

// definitionsSource is where a command reads sandbox definitions: -f FILE (a definitions
// document in any form sandbox.ParseDocument takes), else the sandbox.definitions of --config.
type definitionsSource struct {
	file, configFile string
}

func (d *definitionsSource) register(cmd *cobra.Command) {
	cmd.Flags().StringVarP(&d.file, "file", "f", "", "sandbox definitions: a JSON array of sandboxes, or {\"sandboxes\": [...], \"resources\": {...}}")
	cmd.Flags().StringVar(&d.configFile, "config", "", "shardwise configuration JSON whose sandbox.definitions to use when -f is not given")
}

// read returns the raw definitions and where they came from.
func (d *definitionsSource) read() ([]byte, string, error) {
	switch {
	case d.file != "":
		b, err := os.ReadFile(d.file)
		if err != nil {
			return nil, "", err
		}
		return b, d.file, nil
	case d.configFile != "":
		b, err := os.ReadFile(d.configFile)
		if err != nil {
			return nil, "", err
		}
		// Only the sandbox part: the rest of the configuration is validated where it is used.
		var c struct {
			Sandbox config.SandboxConfig `json:"sandbox"`
		}
		if err := json.Unmarshal(b, &c); err != nil {
			return nil, "", fmt.Errorf("%s: %w", d.configFile, err)
		}
		if len(c.Sandbox.Definitions) == 0 {
			return nil, "", fmt.Errorf("%s: no sandbox.definitions", d.configFile)
		}
		return c.Sandbox.Definitions, d.configFile + " (sandbox.definitions)", nil
	}
	return nil, "", errors.New("no definitions: give -f FILE or --config FILE")
}

// violations lists every error joined inside err, innermost joins flattened.
func violations(err error) []string {
	var joined interface{ Unwrap() []error }
	if errors.As(err, &joined) {
		var out []string
		for _, e := range joined.Unwrap() {
			out = append(out, violations(e)...)
		}
		return out
	}
	return []string{err.Error()}
}

func newSandboxValidate() *cobra.Command {
	var src definitionsSource
	cmd := &cobra.Command{
		Use:   "validate -f FILE",
		Short: "Validate sandbox definitions offline: exit 0, or print every violation and exit non-zero",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			raw, from, err := src.read()
			if err != nil {
				return err
			}
			defs, warns, err := sandbox.ParseDocument(raw)
			out := cmd.OutOrStdout()
			if err != nil {
				vs := violations(err)
				for _, v := range vs {
					fmt.Fprintf(out, "violation: %s\n", v)
				}
				return fmt.Errorf("%s: %d violation(s); nothing accepted", from, len(vs))
			}
			for _, w := range warns {
				fmt.Fprintf(out, "warning: %s\n", w)
			}
			fmt.Fprintf(out, "%s: %d sandboxes valid\n", from, len(defs.Sandboxes))
			return nil
		},
	}
	src.register(cmd)
	return cmd
}

// sandboxStatus is what status prints with --json.
type sandboxStatus struct {
	Warnings []sandbox.Warning `json:"warnings,omitempty"`
	Nodes    map[string]string `json:"nodes"`
	Tasks    int               `json:"tasks"`
	sandbox.Assessment
}

func newSandboxStatus(d *display) *cobra.Command {
	var src definitionsSource
	var conn connFlags
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "status --url URL [-f FILE]",
		Short: "Usage per sandbox per node against its limit, and what each mode would do (never cancels)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			raw, _, err := src.read()
			if err != nil {
				return err
			}
			defs, warns, err := sandbox.ParseDocument(raw)
			if err != nil {
				return err
			}
			api, err := conn.api(cmd.Context())
			if err != nil {
				return err
			}
			tasks, err := api.SearchTasks(cmd.Context())
			if err != nil {
				return err
			}
			loads, err := api.NodeLoads(cmd.Context())
			if err != nil {
				return err
			}
			st := sandboxStatus{Warnings: warns, Nodes: map[string]string{}, Tasks: len(tasks), Assessment: sandbox.Assess(tasks, loads, defs)}
			for _, n := range loads {
				st.Nodes[n.Node] = n.Name
			}
			out := cmd.OutOrStdout()
			if asJSON {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				return enc.Encode(st)
			}
			var b bytes.Buffer
			printStatus(&b, st, d.width(out))
			_, err = out.Write(b.Bytes())
			return err
		},
	}
	src.register(cmd)
	conn.register(cmd, d)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	return cmd
}

// printStatus writes each sandbox's usage per node and the cancellations each mode would make,
// fitting width (0: no limit). Usage and limits are shares of the node's resource, in percent.
func printStatus(out io.Writer, st sandboxStatus, width int) {
	for _, w := range st.Warnings {
		fmt.Fprintf(out, "warning: %s\n", w)
	}
	name := func(id string) string {
		if n := st.Nodes[id]; n != "" {
			return n
		}
		return id
	}
	fmt.Fprintf(out, "%d search tasks; per sandbox: %s\n\n", st.Tasks, formatCounts(st.Assigned))
	t := newTable("node", "sandbox", "resource", "mode", "usage", "limit", "node usage", "would", "reason~")
	for _, f := range st.Report.Findings {
		t.add(name(f.Node), f.Sandbox, string(f.Resource), string(f.Mode), percent(f.Usage),
			percent(f.CancelAbove), percent(f.NodeUsage), string(f.Action), f.Reason)
	}
	t.render(out, width)
	fmt.Fprintln(out, "\nWould cancel (newest first; status never cancels, the sandbox function does unless dry-run):")
	if len(st.Cancellations) == 0 {
		fmt.Fprintln(out, "  nothing")
	} else {
		c := newTable("task", "opaque id", "sandbox", "node", "usage", "freed", "after", "limit", "reason~")
		for _, x := range st.Cancellations {
			c.add(x.Task, x.OpaqueID, x.Sandbox, name(x.Node), percent(x.Usage), percent(x.Freed),
				percent(x.After), percent(x.Limit), x.Reason)
		}
		c.render(out, width)
	}
	for _, s := range st.Shortfalls {
		fmt.Fprintf(out, "still over: %s\n", s.Reason)
	}
	if len(st.Unweighed) > 0 {
		fmt.Fprintf(out, "tasks on nodes that reported no load (not counted): %s\n", strings.Join(st.Unweighed, ", "))
	}
}

// percent writes a share (0..1) of a node's resource as a percentage.
func percent(share float64) string { return fmt.Sprintf("%.1f %%", share*100) }

func formatCounts(m map[string]int) string {
	if len(m) == 0 {
		return "none"
	}
	keys := slices.Sorted(maps.Keys(m))
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}
