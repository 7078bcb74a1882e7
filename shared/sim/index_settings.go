package sim

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

// indexSettingUpdates flattens a settings body into index.* keys; nil values reset a setting.
func indexSettingUpdates(body map[string]any) (map[string]*string, error) {
	if inner, ok := body["settings"].(map[string]any); ok && len(body) == 1 {
		body = inner
	}
	raw := map[string]*string{}
	if err := flattenSettings("", numbersAsJSON(body), raw); err != nil {
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

// indexSettingError is a refused index setting, with the key it concerns.
type indexSettingError struct {
	key string
	msg string
}

func (e *indexSettingError) Error() string { return e.msg }

// checkIndexSettingUpdates returns OpenSearch's error for the first update (in key order) it would
// refuse: a final setting, an unknown one or a bad value.
func checkIndexSettingUpdates(updates map[string]*string) *indexSettingError {
	for _, k := range slices.Sorted(maps.Keys(updates)) {
		v := updates[k]
		if slices.Contains(finalIndexSettings, k) {
			return &indexSettingError{k, fmt.Sprintf("final index setting [%s], not updateable", k)}
		}
		check, known := indexSettingChecks[k]
		if !known && !isIndexFilterKey(k) {
			return &indexSettingError{k, fmt.Sprintf("unknown setting [%s] please check that any required plugins are installed, "+
				"or check the breaking changes documentation for removed settings", k)}
		}
		if v != nil && check != nil {
			if e := check(*v); e != nil {
				return &indexSettingError{k, fmt.Sprintf("%s for setting [%s]", e.Error(), k)}
			}
		}
	}
	return nil
}

// applyIndexSettings sets checked updates on indices. Replicas and allocation filters take effect
// at once, as OpenSearch's reroute after a settings change does: new replicas start initializing,
// copies on newly excluded nodes start relocating.
func (s *Sim) applyIndexSettings(indices []*index, updates map[string]*string) {
	for _, ix := range indices {
		for k, v := range updates {
			if k == "index.number_of_replicas" {
				want := 1 // OpenSearch's default when the setting is reset
				if v != nil {
					want, _ = strconv.Atoi(*v)
				}
				s.setReplicas(ix, want)
				continue
			}
			if v == nil {
				delete(ix.settings, k)
			} else {
				ix.settings[k] = *v
			}
		}
		ix.compileSettings()
		ix.settingsVersion++
	}
	s.changed()
	s.alloc.AllocateAndMove()
}

// validateSetIndexSettings checks a set_index_settings event's settings as PUT _settings would.
func validateSetIndexSettings(values map[string]any, path string) error {
	if len(values) == 0 {
		return fieldError(path, "required, e.g. {\"index.number_of_replicas\": 2}")
	}
	updates, err := indexSettingUpdates(values)
	if err != nil {
		return fieldError(path, "%v", err)
	}
	if e := checkIndexSettingUpdates(updates); e != nil {
		return fieldError(path+"."+e.key, "%s", e.msg)
	}
	return nil
}
