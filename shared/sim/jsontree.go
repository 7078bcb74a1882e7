package sim

import (
	"encoding/json"
	"fmt"
	"io"
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

// lazyObject is an object built only when the writer or filter_path reaches it, so a 60,000-copy answer
// never holds every copy's statistics at once.
type lazyObject func() object

// MarshalJSON lets tests and callers use encoding/json on a tree.
func (o object) MarshalJSON() ([]byte, error) {
	return appendJSON(nil, o)
}

// appendJSON appends the JSON encoding of v. Values are those the handlers build: nil, bool, string,
// the integer kinds, float64, object, []any, []string, []object and json.RawMessage.
func appendJSON(b []byte, v any) ([]byte, error) {
	e := jsonEncoder{buf: b}
	e.value(v)
	return e.buf, e.err
}

// encodeJSON streams v to w through a small buffer, so a large answer is never held whole.
func encodeJSON(w io.Writer, v any) error {
	e := jsonEncoder{buf: make([]byte, 0, 2*flushBytes), w: w}
	e.value(v)
	e.flush()
	return e.err
}

// flushBytes is how much encoded output collects before it is written out.
const flushBytes = 64 << 10

type jsonEncoder struct {
	buf []byte
	w   io.Writer // nil: keep everything in buf
	err error
}

func (e *jsonEncoder) flush() {
	if e.w == nil || e.err != nil || len(e.buf) == 0 {
		return
	}
	_, e.err = e.w.Write(e.buf)
	e.buf = e.buf[:0]
}

func (e *jsonEncoder) value(v any) {
	if e.err != nil {
		return
	}
	if e.w != nil && len(e.buf) >= flushBytes {
		e.flush()
	}
	switch t := v.(type) {
	case nil:
		e.buf = append(e.buf, "null"...)
	case bool:
		e.buf = strconv.AppendBool(e.buf, t)
	case string:
		e.buf = appendString(e.buf, t)
	case int:
		e.buf = strconv.AppendInt(e.buf, int64(t), 10)
	case int64:
		e.buf = strconv.AppendInt(e.buf, t, 10)
	case uint64:
		e.buf = strconv.AppendUint(e.buf, t, 10)
	case float64:
		e.buf = appendFloat(e.buf, t)
	case object:
		e.buf = append(e.buf, '{')
		for i, f := range t {
			if i > 0 {
				e.buf = append(e.buf, ',')
			}
			e.buf = appendString(e.buf, f.Key)
			e.buf = append(e.buf, ':')
			e.value(f.Val)
		}
		e.buf = append(e.buf, '}')
	case []any:
		e.buf = append(e.buf, '[')
		for i, x := range t {
			if i > 0 {
				e.buf = append(e.buf, ',')
			}
			e.value(x)
		}
		e.buf = append(e.buf, ']')
	case []object:
		e.buf = append(e.buf, '[')
		for i, x := range t {
			if i > 0 {
				e.buf = append(e.buf, ',')
			}
			e.value(x)
		}
		e.buf = append(e.buf, ']')
	case []string:
		e.buf = append(e.buf, '[')
		for i, x := range t {
			if i > 0 {
				e.buf = append(e.buf, ',')
			}
			e.buf = appendString(e.buf, x)
		}
		e.buf = append(e.buf, ']')
	case json.RawMessage:
		e.buf = append(e.buf, t...)
	case lazyObject:
		e.value(t())
	default:
		e.err = fmt.Errorf("json tree: unsupported value of type %T", v)
	}
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
