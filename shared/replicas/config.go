package replicas

import (
	"errors"
	"fmt"
	"math"
	"path"
	"time"
)

// Config tunes the replica decider. Build it from DefaultConfig and check it with Validate before
// handing it to Decide: Decide trusts its config.
type Config struct {
	// X is the share of one copy's search capacity the formula plans to use; below 1 it adds copies
	// before the existing ones saturate.
	X float64 `json:"x"`
	// ScaleDownAfter is how long a lower target must hold, on every cycle, before replicas go down.
	ScaleDownAfter time.Duration `json:"scale_down_after"`
	// DefaultMin is the floor on number_of_replicas for an index without an override; the index's
	// replicas when first seen raise it further.
	DefaultMin int `json:"default_min"`
	// MaxIndicesPerCycle bounds the settings changes applied in one cycle.
	MaxIndicesPerCycle int `json:"max_indices_per_cycle"`
	// UseSearchReplicas targets index.number_of_search_replicas instead of index.number_of_replicas.
	UseSearchReplicas bool `json:"use_search_replicas"`
	// Overrides adjust min and max, or exclude indices, by name pattern. The first match wins.
	Overrides []Override `json:"overrides"`
	// MinTotalSearchLoad is the cluster-wide search load, in busy search threads, below which the
	// cluster counts as idle: shares of near-zero load are noise, so every index holds.
	MinTotalSearchLoad float64 `json:"min_total_search_load"`
	// NeedUtilization is the search utilization (busy over all threads) of the pools holding an
	// index's copies at which more copies start to lower latency: below it the formula's target is
	// not reached, and an index whose own load would keep its floor's pools below it returns to
	// its floor.
	NeedUtilization float64 `json:"need_utilization"`
	// NodeLeftDelay stands in for index.unassigned.node_left.delayed_timeout when the index's own
	// value is not known: how long a count above the nodes' maximum waits before it is capped.
	NodeLeftDelay time.Duration `json:"node_left_delay"`
}

// Override changes the bounds of the indices whose names match Pattern.
type Override struct {
	// Pattern is a glob in path.Match syntax (index names cannot contain '/').
	Pattern string `json:"pattern"`
	// Min replaces the default minimum (the first-seen replicas, at least DefaultMin).
	Min *int `json:"min,omitempty"`
	// Max lowers the topology maximum (N-1 replicas, or N search replicas).
	Max *int `json:"max,omitempty"`
	// Exclude leaves matching indices alone.
	Exclude bool `json:"exclude,omitempty"`
}

// Defaults, each with its source.
const (
	// defaultX: the hotspot threshold of Elastic's "Elasticsearch replicas for load balancing in Serverless" blog, "X = 0.5 by default".
	defaultX = 0.5
	// defaultScaleDownAfter: that blog waits for "about 30 minutes" of steady low demand.
	defaultScaleDownAfter = 30 * time.Minute
	// defaultMin: OpenSearch's own index.number_of_replicas default, and "at least 1",
	// so a copy survives the loss of a node.
	defaultMin = 1
	// defaultMaxIndicesPerCycle: shardwise design brief; Sway also caps a cycle at 5 actions.
	defaultMaxIndicesPerCycle = 5
	// defaultMinTotalSearchLoad: shardwise design brief; 0.05 busy threads is 50 ms of search per
	// second across the whole cluster, too little for shares to mean anything.
	defaultMinTotalSearchLoad = 0.05
	// defaultNeedUtilization: the same article's X read as a utilization, "we do not wait until a
	// replica is fully saturated; we add capacity when it is at half" (nous augmentons la capacité
	// lorsqu'elle en est à la moitié).
	defaultNeedUtilization = 0.5
	// defaultNodeLeftDelay: OpenSearch's index.unassigned.node_left.delayed_timeout default, 1m.
	defaultNodeLeftDelay = time.Minute
)

// DefaultConfig returns the documented defaults.
func DefaultConfig() Config {
	return Config{
		X:                  defaultX,
		ScaleDownAfter:     defaultScaleDownAfter,
		DefaultMin:         defaultMin,
		MaxIndicesPerCycle: defaultMaxIndicesPerCycle,
		MinTotalSearchLoad: defaultMinTotalSearchLoad,
		NeedUtilization:    defaultNeedUtilization,
		NodeLeftDelay:      defaultNodeLeftDelay,
	}
}

// Upper bounds: past them a value parses but cannot be meant.
const (
	// maxDelay bounds the waits: a week of steady low demand is past any daily cycle.
	maxDelay = 7 * 24 * time.Hour
	// maxReplicas: far above any node count an index's copies could spread over.
	maxReplicas = 100
	// maxIndicesPerCycle bounds the settings updates of one cycle.
	maxIndicesPerCycle = 10_000
)

// FieldError reports one invalid configuration field, named by its JSON key.
type FieldError struct {
	Field  string
	Value  any
	Reason string
}

func (e *FieldError) Error() string {
	return fmt.Sprintf("replicas.%s: %v %s", e.Field, e.Value, e.Reason)
}

// Validate reports every invalid field, each as a *FieldError naming it, joined with errors.Join.
func (c Config) Validate() error {
	var errs []error
	bad := func(field string, value any, reason string) {
		errs = append(errs, &FieldError{Field: field, Value: value, Reason: reason})
	}
	if !(c.X > 0 && c.X <= 1) {
		bad("x", c.X, "must be in (0, 1]")
	}
	if c.ScaleDownAfter < 0 || c.ScaleDownAfter > maxDelay {
		bad("scale_down_after", c.ScaleDownAfter, fmt.Sprintf("must be between 0 and %v", maxDelay))
	}
	if c.DefaultMin < 0 || c.DefaultMin > maxReplicas {
		bad("default_min", c.DefaultMin, fmt.Sprintf("must be between 0 and %d", maxReplicas))
	}
	if c.MaxIndicesPerCycle < 1 || c.MaxIndicesPerCycle > maxIndicesPerCycle {
		bad("max_indices_per_cycle", c.MaxIndicesPerCycle, fmt.Sprintf("must be between 1 and %d", maxIndicesPerCycle))
	}
	if !(c.MinTotalSearchLoad >= 0) || math.IsInf(c.MinTotalSearchLoad, 0) {
		bad("min_total_search_load", c.MinTotalSearchLoad, "must be a finite number >= 0")
	}
	if !(c.NeedUtilization >= 0 && c.NeedUtilization < 1) {
		bad("need_utilization", c.NeedUtilization, "must be in [0, 1)")
	}
	if c.NodeLeftDelay < 0 || c.NodeLeftDelay > maxDelay {
		bad("node_left_delay", c.NodeLeftDelay, fmt.Sprintf("must be between 0 and %v", maxDelay))
	}
	for i, o := range c.Overrides {
		field := fmt.Sprintf("overrides[%d]", i)
		if o.Pattern == "" {
			bad(field+".pattern", o.Pattern, "must not be empty")
		} else if _, err := path.Match(o.Pattern, ""); err != nil {
			bad(field+".pattern", o.Pattern, err.Error())
		}
		if o.Min != nil && *o.Min < 0 {
			bad(field+".min", *o.Min, "must not be negative")
		}
		if o.Max != nil && *o.Max < 0 {
			bad(field+".max", *o.Max, "must not be negative")
		}
		if o.Min != nil && o.Max != nil && *o.Min > *o.Max {
			bad(field+".min", *o.Min, fmt.Sprintf("must not exceed max (%d)", *o.Max))
		}
		if o.Exclude && (o.Min != nil || o.Max != nil) {
			bad(field+".exclude", o.Exclude, "an excluded pattern cannot also set min or max")
		}
	}
	return errors.Join(errs...)
}

// override returns the first override whose pattern matches name.
func (c Config) override(name string) (Override, bool) {
	for _, o := range c.Overrides {
		// Patterns were checked by Validate; a bad one simply does not match.
		if ok, err := path.Match(o.Pattern, name); err == nil && ok {
			return o, true
		}
	}
	return Override{}, false
}
