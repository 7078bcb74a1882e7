package sim

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"unicode/utf8"
)

// Responses are built as JSON trees — object (ordered keys), []any, and scalars — so that filter_path
// can be applied once, generically, and keys come out in the order OpenSearch writes them.
// The writer below exists because encoding/json re-validates the output of every nested Marshaler,
// which multiplies the cost of a 60,000-copy _stats?level=shards answer by its depth.

// field is one key of an object.
type field struct {
	Key string
	Val any
}

// object is a JSON object with ordered keys.
type object []field

// get returns the value under key.
func (o object) get(key string) (any, bool) {
	for _, f := range o {
		if f.Key == key {
			return f.Val, true
		}
	}
	return nil, false
}

// MarshalJSON lets tests and callers use encoding/json on a tree.
func (o object) MarshalJSON() ([]byte, error) {
	return appendJSON(nil, o)
}

// appendJSON appends the JSON encoding of v. Values are those the handlers build: nil, bool, string,
// the integer kinds, float64, object, []any, []string, []object and json.RawMessage.
func appendJSON(b []byte, v any) ([]byte, error) {
	var err error
	switch t := v.(type) {
	case nil:
		b = append(b, "null"...)
	case bool:
		b = strconv.AppendBool(b, t)
	case string:
		b = appendString(b, t)
	case int:
		b = strconv.AppendInt(b, int64(t), 10)
	case int64:
		b = strconv.AppendInt(b, t, 10)
	case uint64:
		b = strconv.AppendUint(b, t, 10)
	case float64:
		b = appendFloat(b, t)
	case object:
		b = append(b, '{')
		for i, f := range t {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, f.Key)
			b = append(b, ':')
			if b, err = appendJSON(b, f.Val); err != nil {
				return nil, err
			}
		}
		b = append(b, '}')
	case []any:
		b = append(b, '[')
		for i, e := range t {
			if i > 0 {
				b = append(b, ',')
			}
			if b, err = appendJSON(b, e); err != nil {
				return nil, err
			}
		}
		b = append(b, ']')
	case []object:
		b = append(b, '[')
		for i, e := range t {
			if i > 0 {
				b = append(b, ',')
			}
			if b, err = appendJSON(b, e); err != nil {
				return nil, err
			}
		}
		b = append(b, ']')
	case []string:
		b = append(b, '[')
		for i, e := range t {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, e)
		}
		b = append(b, ']')
	case json.RawMessage:
		b = append(b, t...)
	default:
		return nil, fmt.Errorf("json tree: unsupported value of type %T", v)
	}
	return b, nil
}

// appendFloat formats as encoding/json does ('f' in [1e-6, 1e21), 'e' outside, "e-9" not "e-09").
// NaN and Inf cannot be JSON; the model never produces them, and 0 is written if it ever did.
func appendFloat(b []byte, f float64) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return append(b, '0')
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		n := len(b)
		if n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

const hexDigits = "0123456789abcdef"

// appendString writes a JSON string, escaping what RFC 8259 requires and invalid UTF-8 as U+FFFD.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// fromJSON converts a value decoded by encoding/json (map[string]any, []any, json.Number, ...) into
// a tree with sorted keys, so filter_path and the writer can handle request echoes.
func fromJSON(v any) any {
	switch t := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sortStrings(keys)
		o := make(object, 0, len(t))
		for _, k := range keys {
			o = append(o, field{k, fromJSON(t[k])})
		}
		return o
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = fromJSON(e)
		}
		return out
	case json.Number:
		return json.RawMessage(t.String())
	case float64:
		return t
	}
	return v
}
