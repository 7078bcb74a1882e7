package opensearch

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// flattenSettings turns a settings object into dotted keys and string values, whether OpenSearch
// sent it nested ({"index":{"number_of_shards":"1"}}, the cluster state's form) or flat
// ({"index.number_of_shards":"1"}, flat_settings=true). A list of scalars becomes one
// comma-separated value, the form OpenSearch itself accepts for list settings. An absent or null
// document is an empty map.
func flattenSettings(raw json.RawMessage) (map[string]string, error) {
	out := make(map[string]string)
	if len(bytes.TrimSpace(raw)) == 0 {
		return out, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber() // keep "10737418240" exact instead of a float64
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("decode settings: %w", err)
	}
	switch d := doc.(type) {
	case nil:
		return out, nil
	case map[string]any:
		flattenInto(out, "", d)
		return out, nil
	default:
		return nil, fmt.Errorf("decode settings: want an object, got %T", doc)
	}
}

func flattenInto(out map[string]string, key string, v any) {
	switch t := v.(type) {
	case map[string]any:
		for k, child := range t {
			if key != "" {
				k = key + "." + k
			}
			flattenInto(out, k, child)
		}
	case []any:
		if scalars, ok := joinScalars(t); ok {
			out[key] = scalars
			return
		}
		for i, child := range t {
			flattenInto(out, key+"."+strconv.Itoa(i), child)
		}
	case nil:
		// A null setting is an unset one.
	default:
		if s, ok := scalarString(t); ok {
			out[key] = s
		}
	}
}

func joinScalars(list []any) (string, bool) {
	parts := make([]string, 0, len(list))
	for _, v := range list {
		s, ok := scalarString(v)
		if !ok {
			return "", false
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, ","), true
}

func scalarString(v any) (string, bool) {
	switch t := v.(type) {
	case string:
		return t, true
	case json.Number:
		return t.String(), true
	case bool:
		return strconv.FormatBool(t), true
	}
	return "", false
}

// splitList reads a list setting: "zone,rack", " zone , rack" and "" alike.
func splitList(s string) []string {
	var out []string
	for part := range strings.SplitSeq(s, ",") {
		if part = strings.TrimSpace(part); part != "" {
			out = append(out, part)
		}
	}
	return out
}
