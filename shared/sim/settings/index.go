package settings

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// Index settings changes, by PUT {index}/_settings or a set_index_settings event: one check and one
// apply for both.

// IndexSettingUpdates flattens a settings body into index.* keys; nil values reset a setting.
func IndexSettingUpdates(body map[string]any) (map[string]*string, error) {
	if inner, ok := body["settings"].(map[string]any); ok && len(body) == 1 {
		body = inner
	}
	raw := map[string]*string{}
	if err := FlattenSettings("", numbersAsJSON(body), raw); err != nil {
		return nil, err
	}
	updates := make(map[string]*string, len(raw))
	for k, v := range raw {
		if !strings.HasPrefix(k, "index.") {
			k = "index." + k
		}
		updates[k] = v
	}
	return updates, nil
}

// numbersAsJSON turns the float64 numbers of a tree decoded without UseNumber (a scenario's
// settings) into json.Number, the form flattenSettings reads.
func numbersAsJSON(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, sub := range t {
			out[k] = numbersAsJSON(sub)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, sub := range t {
			out[i] = numbersAsJSON(sub)
		}
		return out
	case float64:
		return json.Number(strconv.FormatFloat(t, 'f', -1, 64))
	case int:
		return json.Number(strconv.Itoa(t))
	}
	return v
}

// IndexSettingError is a refused index setting, with the key it concerns.
type IndexSettingError struct {
	Key string
	Msg string
}

func (e *IndexSettingError) Error() string { return e.Msg }

// CheckIndexSettingUpdates returns OpenSearch's error for the first update (in key order) it would
// refuse: a final setting, an unknown one or a bad value.
func CheckIndexSettingUpdates(updates map[string]*string) *IndexSettingError {
	for _, k := range slices.Sorted(maps.Keys(updates)) {
		v := updates[k]
		if slices.Contains(finalIndexSettings, k) {
			return &IndexSettingError{k, fmt.Sprintf("final index setting [%s], not updateable", k)}
		}
		check, known := indexSettingChecks[k]
		if !known && !isIndexFilterKey(k) {
			return &IndexSettingError{k, fmt.Sprintf("unknown setting [%s] please check that any required plugins are installed, "+
				"or check the breaking changes documentation for removed settings", k)}
		}
		if v != nil && check != nil {
			if e := check(*v); e != nil {
				return &IndexSettingError{k, fmt.Sprintf("%s for setting [%s]", e.Error(), k)}
			}
		}
	}
	return nil
}

// indexSettingChecks are the dynamic index settings PUT {index}/_settings accepts.
var indexSettingChecks = map[string]SettingCheck{
	"index.number_of_replicas":                               IntAtLeast(0),
	"index.routing.allocation.total_shards_per_node":         IntAtLeast(-1),
	"index.routing.allocation.total_primary_shards_per_node": IntAtLeast(-1),
	"index.routing.allocation.enable":                        OneOf("all", "primaries", "new_primaries", "none"),
	"index.routing.rebalance.enable":                         OneOf("all", "primaries", "replicas", "none"),
	"index.unassigned.node_left.delayed_timeout":             timeValueCheck,
	"index.refresh_interval":                                 nil,
	"index.auto_expand_replicas":                             nil,
	"index.blocks.read_only":                                 boolCheck,
	"index.blocks.read_only_allow_delete":                    boolCheck,
	"index.blocks.write":                                     boolCheck,
	"index.blocks.read":                                      boolCheck,
	"index.blocks.metadata":                                  boolCheck,
	"index.max_result_window":                                IntAtLeast(1),
	"index.priority":                                         IntAtLeast(0),
}

// finalIndexSettings may not change after creation.
var finalIndexSettings = []string{"index.number_of_shards", "index.uuid", "index.creation_date", "index.version.created", "index.provided_name"}

func isIndexFilterKey(k string) bool {
	for _, kind := range []string{"require.", "include.", "exclude."} {
		if rest, ok := strings.CutPrefix(k, "index.routing.allocation."+kind); ok && rest != "" {
			return true
		}
	}
	return false
}
