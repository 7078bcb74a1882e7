package settings

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/shardwise/shardwise/shared/duration"
	"github.com/shardwise/shardwise/shared/sim/wire"
)

// SettingCheck validates a setting value; nil means any string.
type SettingCheck func(string) error

// OneOf accepts only the given values, with OpenSearch's message otherwise.
func OneOf(values ...string) SettingCheck {
	return func(v string) error {
		if slices.Contains(values, v) {
			return nil
		}
		return fmt.Errorf("illegal value [%s], must be one of %v", v, values)
	}
}

// IntAtLeast accepts an integer no smaller than least, with OpenSearch's messages otherwise.
func IntAtLeast(least int) SettingCheck {
	return func(v string) error {
		n, err := strconv.Atoi(v)
		if err != nil {
			return fmt.Errorf("failed to parse value [%s] as an integer", v)
		}
		if n < least {
			return fmt.Errorf("failed to parse value [%s], must be >= [%d]", v, least)
		}
		return nil
	}
}

func floatAtLeast(least float64) SettingCheck {
	return func(v string) error {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || math.IsNaN(f) {
			return fmt.Errorf("failed to parse value [%s] as a float", v)
		}
		if f < least {
			return fmt.Errorf("failed to parse value [%s], must be >= [%v]", v, least)
		}
		return nil
	}
}

// timeValueCheck accepts an OpenSearch time value ("1m", "30s", "0").
func timeValueCheck(v string) error {
	if d, err := duration.ParseTimeValue(v); err != nil || d < 0 {
		return fmt.Errorf("failed to parse setting with value [%s] as a time value: negative durations are not supported, or a unit is missing", v)
	}
	return nil
}

func boolCheck(v string) error {
	if v == "true" || v == "false" {
		return nil
	}
	return fmt.Errorf("failed to parse value [%s] as only [true] or [false] are allowed", v)
}

func byteSizeCheck(v string) error {
	_, err := ParseByteSize(v)
	return err
}

func watermarkCheck(v string) error {
	_, _, err := ParseWatermark(v)
	return err
}

// clusterSettingChecks are the dynamic cluster settings the simulator accepts. Those the model uses are
// read through Sim's getters; the rest are stored and reported like OpenSearch does.
var clusterSettingChecks = map[string]SettingCheck{
	"cluster.routing.allocation.enable":                              OneOf("all", "primaries", "new_primaries", "none"),
	"cluster.routing.rebalance.enable":                               OneOf("all", "primaries", "replicas", "none"),
	"cluster.routing.allocation.allow_rebalance":                     OneOf("always", "indices_primaries_active", "indices_all_active"),
	"cluster.routing.allocation.cluster_concurrent_rebalance":        IntAtLeast(-1),
	"cluster.routing.allocation.node_concurrent_recoveries":          IntAtLeast(0),
	"cluster.routing.allocation.node_concurrent_incoming_recoveries": IntAtLeast(0),
	"cluster.routing.allocation.node_concurrent_outgoing_recoveries": IntAtLeast(0),
	"cluster.routing.allocation.node_initial_primaries_recoveries":   IntAtLeast(0),
	"cluster.routing.allocation.disk.threshold_enabled":              boolCheck,
	"cluster.routing.allocation.disk.watermark.low":                  watermarkCheck,
	"cluster.routing.allocation.disk.watermark.high":                 watermarkCheck,
	"cluster.routing.allocation.disk.watermark.flood_stage":          watermarkCheck,
	"cluster.routing.allocation.balance.index":                       floatAtLeast(0),
	"cluster.routing.allocation.balance.shard":                       floatAtLeast(0),
	"cluster.routing.allocation.balance.threshold":                   floatAtLeast(0),
	"cluster.routing.allocation.total_shards_per_node":               IntAtLeast(-1),
	"cluster.routing.allocation.total_primary_shards_per_node":       IntAtLeast(-1),
	"cluster.routing.allocation.awareness.attributes":                nil,
	"cluster.max_shards_per_node":                                    IntAtLeast(1),
	"indices.recovery.max_bytes_per_sec":                             byteSizeCheck,
	"action.auto_create_index":                                       nil,
	"action.destructive_requires_name":                               boolCheck,
}

// ClusterFilterPrefix is where cluster-level allocation filters live.
const ClusterFilterPrefix = "cluster.routing.allocation."

// IsClusterFilterKey reports whether k is a cluster-level require, include or exclude filter on
// some attribute.
func IsClusterFilterKey(k string) bool {
	for _, kind := range []string{"require.", "include.", "exclude."} {
		if rest, ok := strings.CutPrefix(k, ClusterFilterPrefix+kind); ok && rest != "" {
			return true
		}
	}
	return false
}

// ValidateClusterSetting returns OpenSearch's error text for a setting it would refuse.
func ValidateClusterSetting(scope, key, value string) error {
	if IsClusterFilterKey(key) || isAwarenessForceKey(key) {
		return nil
	}
	check, ok := clusterSettingChecks[key]
	if !ok {
		return fmt.Errorf("%s setting [%s], not recognized", scope, key)
	}
	if check != nil {
		if err := check(value); err != nil {
			return fmt.Errorf("%s for setting [%s]", err.Error(), key)
		}
	}
	return nil
}

// FlattenSettings turns a settings body (nested objects, flat keys or both) into flat string values.
// JSON null becomes a nil entry: reset to default.
func FlattenSettings(prefix string, v any, out map[string]*string) error {
	if _, isMap := v.(map[string]any); !isMap && prefix == "" {
		return errors.New("a setting value needs a key")
	}
	switch t := v.(type) {
	case map[string]any:
		for k, sub := range t {
			if err := FlattenSettings(joinPath(prefix, k), sub, out); err != nil {
				return err
			}
		}
	case nil:
		out[prefix] = nil
	case string:
		out[prefix] = &t
	case json.Number:
		s := t.String()
		out[prefix] = &s
	case bool:
		s := strconv.FormatBool(t)
		out[prefix] = &s
	case []any:
		parts := make([]string, 0, len(t))
		for _, e := range t {
			switch ev := e.(type) {
			case string:
				parts = append(parts, ev)
			case json.Number:
				parts = append(parts, ev.String())
			default:
				return fmt.Errorf("setting [%s] has a list value that is not a list of strings", prefix)
			}
		}
		s := strings.Join(parts, ",")
		out[prefix] = &s
	default:
		return fmt.Errorf("setting [%s] has an unsupported value", prefix)
	}
	return nil
}

// RenderSettings gives flat settings as OpenSearch prints them: flat keys, or nested objects.
func RenderSettings(flat map[string]string, asFlat bool) wire.Object {
	keys := slices.Sorted(maps.Keys(flat))
	out := wire.Object{}
	if asFlat {
		for _, k := range keys {
			out = append(out, wire.Field{k, flat[k]})
		}
		return out
	}
	for _, k := range keys {
		out = nestSetting(out, strings.Split(k, "."), flat[k])
	}
	return out
}

// ListSettings are the list settings among the defaults. OpenSearch prints a list setting's default
// as a JSON array ([] when empty), not as the comma-separated string the simulator stores.
var ListSettings = []string{"cluster.routing.allocation.awareness.attributes"}

// AsList replaces the string value of setting key in o, rendered flat or nested, with its list.
func AsList(o wire.Object, key string, flat bool) {
	parts := []string{key}
	if !flat {
		parts = strings.Split(key, ".")
	}
	for len(parts) > 0 {
		i := slices.IndexFunc(o, func(f wire.Field) bool { return f.Key == parts[0] })
		if i < 0 {
			return
		}
		if len(parts) == 1 {
			if v, ok := o[i].Val.(string); ok {
				list := []string{}
				if v != "" {
					list = strings.Split(v, ",")
				}
				o[i].Val = list
			}
			return
		}
		sub, ok := o[i].Val.(wire.Object)
		if !ok {
			return
		}
		o, parts = sub, parts[1:]
	}
}

// nestSetting inserts value at the dotted path parts. A key that is both a value and a prefix of other
// keys keeps its remaining parts joined, so nothing is lost.
func nestSetting(o wire.Object, parts []string, value string) wire.Object {
	if len(parts) == 1 {
		return append(o, wire.Field{parts[0], value})
	}
	for i := range o {
		if o[i].Key == parts[0] {
			if sub, ok := o[i].Val.(wire.Object); ok {
				o[i].Val = nestSetting(sub, parts[1:], value)
				return o
			}
			return append(o, wire.Field{strings.Join(parts, "."), value})
		}
	}
	return append(o, wire.Field{parts[0], nestSetting(wire.Object{}, parts[1:], value)})
}

// byteUnits are OpenSearch's ByteSizeUnit suffixes.
var byteUnits = []struct {
	suffix string
	mult   float64
}{
	{"pb", 1 << 50}, {"tb", 1 << 40}, {"gb", 1 << 30}, {"mb", 1 << 20}, {"kb", 1 << 10},
	{"p", 1 << 50}, {"t", 1 << 40}, {"g", 1 << 30}, {"m", 1 << 20}, {"k", 1 << 10}, {"b", 1},
}

// ParseByteSize parses "40mb", "1.5gb", "512b" or a plain number of bytes.
func ParseByteSize(v string) (float64, error) {
	s := strings.ToLower(strings.TrimSpace(v))
	mult := 1.0
	for _, u := range byteUnits {
		if rest, ok := strings.CutSuffix(s, u.suffix); ok {
			s, mult = strings.TrimSpace(rest), u.mult
			break
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f < 0 || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, fmt.Errorf("failed to parse setting value [%s] as a size in bytes", v)
	}
	return f * mult, nil
}

// FormatBytes is ByteSizeValue.toString: the largest unit with one decimal, trailing ".0" dropped.
func FormatBytes(b float64) string {
	units := []struct {
		suffix string
		mult   float64
	}{{"pb", 1 << 50}, {"tb", 1 << 40}, {"gb", 1 << 30}, {"mb", 1 << 20}, {"kb", 1 << 10}}
	for _, u := range units {
		if b >= u.mult {
			return TrimZero(strconv.FormatFloat(b/u.mult, 'f', 1, 64)) + u.suffix
		}
	}
	return strconv.FormatFloat(math.Floor(b), 'f', 0, 64) + "b"
}

// TrimZero drops a trailing ".0", as OpenSearch prints whole time and size values ("1d", not
// "1.0d").
func TrimZero(s string) string { return strings.TrimSuffix(s, ".0") }

// ParseWatermark parses a disk watermark: "90%", "0.9" (used fraction) or "50gb" (free bytes left).
func ParseWatermark(v string) (usedFraction, freeBytes float64, err error) {
	s := strings.TrimSpace(v)
	if p, ok := strings.CutSuffix(s, "%"); ok {
		f, err := strconv.ParseFloat(p, 64)
		if err != nil || f < 0 || f > 100 {
			return 0, 0, fmt.Errorf("failed to parse watermark [%s]", v)
		}
		return f / 100, 0, nil
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		if f < 0 || f > 1 {
			return 0, 0, fmt.Errorf("failed to parse watermark [%s]", v)
		}
		return f, 0, nil
	}
	b, err := ParseByteSize(s)
	if err != nil {
		return 0, 0, fmt.Errorf("failed to parse watermark [%s]", v)
	}
	return -1, b, nil
}

// PercentString prints a fraction as OpenSearch prints watermark defaults, e.g. 0.9 → "90%".
func PercentString(f float64) string {
	return TrimZero(strconv.FormatFloat(f*100, 'f', 1, 64)) + "%"
}

// The scenario's cluster shape beyond nodes and indices: node attributes, forced awareness and the
// index settings an index spec sets at creation (allocation filters, total_shards_per_node,
// delayed_timeout_seconds, priority).

// awarenessForcePrefix and awarenessForceSuffix frame the cluster setting that holds an attribute's
// forced awareness values: cluster.routing.allocation.awareness.force.<attribute>.values.
const (
	AwarenessForcePrefix = "cluster.routing.allocation.awareness.force."
	AwarenessForceSuffix = ".values"
)

// isAwarenessForceKey reports whether k is a cluster.routing.allocation.awareness.force.*.values key.
func isAwarenessForceKey(k string) bool {
	rest, ok := strings.CutPrefix(k, AwarenessForcePrefix)
	if !ok {
		return false
	}
	attr, ok := strings.CutSuffix(rest, AwarenessForceSuffix)
	return ok && attr != ""
}

// joinPath is key under the dotted path, for flattening nested settings.
func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}
