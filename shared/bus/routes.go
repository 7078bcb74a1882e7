package bus

import "strings"

// The functions shardwise events invoke.
const (
	FunctionDetect   = "detect"
	FunctionMove     = "move"
	FunctionReplicas = "replicas"
	FunctionSandbox  = "sandbox"
)

// routes is the one event-to-function table: which functions each shardwise event invokes, in the
// order the simulator runner passes on what they publish (it invokes detect and replicas at once,
// the others in turn). shared/deploy turns it into the stack's EventBridge rules.
var routes = []struct {
	detailType string
	functions  []string
}{
	{TypeStatsIngested, []string{FunctionDetect, FunctionReplicas, FunctionSandbox}},
	{TypeMovesPlanned, []string{FunctionMove}},
}

// Subscribers lists the functions an event of detailType invokes; none for events only people and
// other tools read (Shard Move Executed, Replicas Changed, Scale Up Needed, Sandbox Enforced).
func Subscribers(detailType string) []string {
	for _, r := range routes {
		if r.detailType == detailType {
			return append([]string(nil), r.functions...)
		}
	}
	return nil
}

// Subscriptions lists the detail types that invoke function, in the table's order.
func Subscriptions(function string) []string {
	var out []string
	for _, r := range routes {
		for _, f := range r.functions {
			if f == function {
				out = append(out, r.detailType)
			}
		}
	}
	return out
}

// RuleName is the name of the rule for detailType under a function's events: the detail type
// without spaces ("Stats Ingested" → "StatsIngested").
func RuleName(detailType string) string { return strings.ReplaceAll(detailType, " ", "") }
