package wire

import (
	"bytes"
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

// Field is one key of an object. It names a plain struct, not a type of its own, so the packages
// that build answers write {"key", value} as the JSON reads; vet's check for unkeyed fields of
// another package's struct types holds for named types only.
type Field = struct {
	Key string
	Val any
}

// Object is a JSON object with ordered keys.
type Object []Field

// LazyObject is an object built only when the writer or filter_path reaches it, so a 60,000-copy answer
// never holds every copy's statistics at once.
type LazyObject func() Object

// MarshalJSON lets tests and callers use encoding/json on a tree.
func (o Object) MarshalJSON() ([]byte, error) {
	return AppendJSON(nil, o)
}

// AppendJSON appends the JSON encoding of v. Values are those the handlers build: nil, bool, string,
// the integer kinds, float64, object, []any, []string, []object and json.RawMessage.
func AppendJSON(b []byte, v any) ([]byte, error) {
	e := jsonEncoder{buf: b}
	e.value(v)
	return e.buf, e.err
}

// encodeFiltered streams what fp keeps of v (all of it when fp is nil) to w through a small
// buffer, so a large answer is never held whole. It writes what appendJSON(nil, fp.apply(v)) would
// without building the filtered tree: filtering a 30,000-copy _stats answer to a dozen fields per
// copy cost more in that tree than in writing it.
func encodeFiltered(w io.Writer, v any, fp *FilterPath) error {
	e := jsonEncoder{buf: make([]byte, 0, 2*flushBytes), w: w}
	switch {
	case fp == nil:
		e.value(v)
	case len(fp.include) == 0:
		e.value(excludeTree(v, startStates(fp.exclude)))
	default:
		if len(fp.exclude) > 0 {
			v = excludeTree(v, startStates(fp.exclude))
		}
		memo := takeMemo(fp)
		if !e.include(memo, v, memo.start) {
			e.value(Object{})
		}
		putMemo(fp, memo)
	}
	e.kept = e.pos()
	e.flush()
	return e.err
}

// flushBytes is how much encoded output collects before it is written out.
const flushBytes = 64 << 10

type jsonEncoder struct {
	buf []byte
	w   io.Writer // nil: keep everything in buf
	err error
	// flushed counts the bytes already written to w; pos and kept are offsets in the whole output.
	flushed int
	// kept is where the output written by include is final: bytes past it may still be taken back.
	// value, writing a selected value whole, may flush past it, because what include wrote before
	// such a value is then final too.
	kept int
	// compiling writes a Shape's template: each Slot as a slotMark byte, in slotOrder.
	compiling bool
	slotOrder []int
	vals      []Scalar // writeShaped's values, reused
}

func (e *jsonEncoder) pos() int { return e.flushed + len(e.buf) }

// flush writes out the buffer when it is full enough, keeping what include may still take back.
func (e *jsonEncoder) flush() {
	if e.w == nil || e.err != nil || len(e.buf) == 0 {
		return
	}
	_, e.err = e.w.Write(e.buf)
	e.flushed += len(e.buf)
	e.buf = e.buf[:0]
}

// flushKept writes out what include has made final, when enough of it has collected.
func (e *jsonEncoder) flushKept() {
	n := e.kept - e.flushed
	if e.w == nil || e.err != nil || n < flushBytes {
		return
	}
	_, e.err = e.w.Write(e.buf[:n])
	e.flushed += n
	e.buf = e.buf[:copy(e.buf, e.buf[n:])]
}

// takeBack drops the output from offset p on; include never takes back what it made final.
func (e *jsonEncoder) takeBack(p int) {
	if e.compiling {
		e.slotOrder = e.slotOrder[:len(e.slotOrder)-bytes.Count(e.buf[p-e.flushed:], []byte{slotMark})]
	}
	e.buf = e.buf[:p-e.flushed]
}

// include writes what the pattern positions of set select of v, as includeTree selects it, and
// reports whether it wrote anything. It writes keys and brackets ahead and takes them back when
// nothing under them is selected; everything up to a selected value is final once it is written.
func (e *jsonEncoder) include(m *fpMemo, v any, set int32) bool {
	switch t := v.(type) {
	case LazyObject:
		v = t()
	case Shaped:
		p := m.program(t.Shape, set)
		if p.empty {
			return false
		}
		e.writeShaped(t, p)
		e.kept = e.pos()
		e.flushKept()
		return true
	}
	switch t := v.(type) {
	case Object:
		start := e.pos()
		e.buf = append(e.buf, '{')
		n := 0
		for _, f := range t {
			next, full := m.step(set, f.Key)
			if !full && next < 0 {
				continue
			}
			mark := e.pos()
			if n > 0 {
				e.buf = append(e.buf, ',')
			}
			e.buf = appendString(e.buf, f.Key)
			e.buf = append(e.buf, ':')
			if full {
				e.value(f.Val)
				e.kept = e.pos()
				n++
				continue
			}
			if e.include(m, f.Val, next) {
				n++
			} else {
				e.takeBack(mark)
			}
		}
		return e.close(start, n, '}')
	case []any:
		return includeArray(e, m, t, set)
	case []Object:
		return includeArray(e, m, t, set)
	}
	// A scalar reached with pattern left over is not selected.
	return false
}

// includeArray writes the elements of an array that have anything selected, as include does.
func includeArray[T any](e *jsonEncoder, m *fpMemo, elems []T, set int32) bool {
	start := e.pos()
	e.buf = append(e.buf, '[')
	n := 0
	for _, x := range elems {
		n = e.includeElem(m, x, set, n)
	}
	return e.close(start, n, ']')
}

// includeElem writes the n+1-th selected element of an array, if x has anything selected, and
// returns how many are written.
func (e *jsonEncoder) includeElem(m *fpMemo, x any, set int32, n int) int {
	mark := e.pos()
	if n > 0 {
		e.buf = append(e.buf, ',')
	}
	if e.include(m, x, set) {
		return n + 1
	}
	e.takeBack(mark)
	return n
}

// close ends an object or array of n selected members begun at start, or takes it back when n is 0.
func (e *jsonEncoder) close(start, n int, bracket byte) bool {
	if n == 0 {
		e.takeBack(start)
		return false
	}
	e.buf = append(e.buf, bracket)
	e.kept = e.pos()
	e.flushKept()
	return true
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
	case Object:
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
		appendArray(e, t, e.value)
	case []Object:
		appendArray(e, t, func(o Object) { e.value(o) })
	case []string:
		appendArray(e, t, func(s string) { e.buf = appendString(e.buf, s) })
	case json.RawMessage:
		e.buf = append(e.buf, t...)
	case LazyObject:
		e.value(t())
	case Shaped:
		e.writeShaped(t, t.Shape.fullProgram())
	case Slot:
		if !e.compiling {
			e.err = fmt.Errorf("json tree: a slot outside a shape")
			return
		}
		e.buf = append(e.buf, slotMark)
		e.slotOrder = append(e.slotOrder, int(t))
	default:
		e.err = fmt.Errorf("json tree: unsupported value of type %T", v)
	}
}

// appendArray writes xs as a JSON array, each element by each.
func appendArray[T any](e *jsonEncoder, xs []T, each func(T)) {
	e.buf = append(e.buf, '[')
	for i, x := range xs {
		if i > 0 {
			e.buf = append(e.buf, ',')
		}
		each(x)
	}
	e.buf = append(e.buf, ']')
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
