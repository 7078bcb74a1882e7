package jsonstrict

import (
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/shardwise/shardwise/shared/duration"
	"github.com/shardwise/shardwise/shared/size"
)

// Error is a problem in a document, where it is: the line and column (from 1, in characters) of
// the value or key at fault, and the field path to it, such as nodes[2].disk_bytes.
type Error struct {
	Line, Column int
	// Path is the field path; empty for the document itself (a syntax error, trailing data).
	Path string
	Err  error
}

func (e *Error) Error() string {
	if e.Path == "" {
		return fmt.Sprintf("%d:%d: %v", e.Line, e.Column, e.Err)
	}
	return fmt.Sprintf("%d:%d: %s: %v", e.Line, e.Column, e.Path, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// InFile prefixes err with file when it is an *Error, giving the file:line:column: form editors
// and terminals link to; any other error is wrapped as "file: err".
func InFile(file string, err error) error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		return fmt.Errorf("%s:%w", file, e)
	}
	return fmt.Errorf("%s: %w", file, err)
}

// ErrUnknownField is wrapped by the error of a key its object has no field for.
var ErrUnknownField = errors.New("unknown field")

// Shaper is a type with its own UnmarshalJSON whose document is still an object of known keys:
// JSONShape returns a value of a struct type with a field per key it reads, which Check walks
// instead, so errors inside it still get their path and position.
type Shaper interface {
	JSONShape() any
}

// Options select the checks Check makes beyond what encoding/json refuses.
type Options struct {
	// ExactKeys refuses a key that matches its field only case-insensitively (encoding/json
	// accepts "DRY_RUN" for dry_run) and a key repeated in one object (encoding/json lets the
	// last win).
	ExactKeys bool
}

// Check walks data against the type t it will be decoded into and returns the first problem as an
// *Error: a syntax error, anything after the document, an unknown key (naming the object it is
// in), a value of the wrong type, or a value a field's own UnmarshalJSON refuses. nil when
// encoding/json, with unknown fields disallowed, would decode data into t.
func Check(data []byte, t reflect.Type, opts Options) error {
	_, err := walk(data, t, opts)
	return err
}

// walk checks data against t and returns the unit values to rewrite as numbers.
func walk(data []byte, t reflect.Type, opts Options) ([]edit, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	var raw json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		return nil, syntaxError(data, err)
	}
	end := int(dec.InputOffset())
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		off := skipSpace(data, end)
		return nil, at(data, off, "", errors.New("trailing data after the JSON document"))
	}
	w := walker{data: data, opts: opts, edits: &[]edit{}}
	if err := w.value(raw, skipSpace(data, 0), t, ""); err != nil {
		return nil, err
	}
	return *w.edits, nil
}

// Normalize is Check that also rewrites, in a copy of data, each value written with a unit in a
// field tagged `unit:"bytes"` ("8GiB", "500mb") or `unit:"seconds"` ("5m", "90s") as the plain
// number the field holds, so a document can write units where its format takes numbers. A number
// is left as it is. Errors are positioned in data as given.
func Normalize(data []byte, t reflect.Type, opts Options) ([]byte, error) {
	edits, err := walk(data, t, opts)
	if err != nil {
		return nil, err
	}
	out := slices.Clone(data)
	for i := len(edits) - 1; i >= 0; i-- {
		e := edits[i]
		out = slices.Concat(out[:e.start], []byte(e.repl), out[e.end:])
	}
	return out, nil
}

// Units a field may be tagged with: what unitValue accepts in a string.
const (
	unitBytes   = "bytes"
	unitSeconds = "seconds"
)

// unitValue reads s, a value written with a unit, as the number of the field's unit.
func unitValue(unit, s string) (string, error) {
	switch unit {
	case unitBytes:
		n, err := size.Parse(s)
		if err != nil {
			return "", err
		}
		return strconv.FormatInt(int64(n), 10), nil
	case unitSeconds:
		d, err := duration.Parse(s)
		if err != nil {
			return "", err
		}
		return strconv.FormatFloat(d.Seconds(), 'f', -1, 64), nil
	}
	return "", fmt.Errorf("unknown unit %q in the field's tag", unit)
}

// syntaxError positions a decoder's error: a syntax error at its offset, a document cut short at
// its end.
func syntaxError(data []byte, err error) error {
	var se *json.SyntaxError
	switch {
	case errors.As(err, &se):
		return at(data, int(se.Offset)-1, "", errors.New(strings.TrimPrefix(se.Error(), "json: ")))
	case errors.Is(err, io.ErrUnexpectedEOF):
		return at(data, len(data), "", errors.New("the document ends early: a brace, bracket or string is not closed"))
	case errors.Is(err, io.EOF):
		return at(data, 0, "", errors.New("empty document"))
	}
	return err
}

type walker struct {
	data []byte
	opts Options
	// edits collects the unit values Normalize rewrites as numbers.
	edits *[]edit
}

// edit replaces data[start:end] with repl.
type edit struct {
	start, end int
	repl       string
}

var (
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
	shaper          = reflect.TypeFor[Shaper]()
)

// value checks raw, which starts at offset start of the document, against t.
func (w walker) value(raw []byte, start int, t reflect.Type, path string) error {
	if t == nil {
		return nil
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	first := byte(0)
	if len(raw) > 0 {
		first = raw[0]
	}
	// An object is walked as the type's shape; anything else is for its UnmarshalJSON to judge.
	if first == '{' && (reflect.PointerTo(t).Implements(shaper) || t.Implements(shaper)) {
		shape := reflect.New(t).Interface().(Shaper).JSONShape()
		return w.value(raw, start, reflect.TypeOf(shape), path)
	}
	custom := reflect.PointerTo(t).Implements(jsonUnmarshaler) || reflect.PointerTo(t).Implements(textUnmarshaler)
	switch {
	case custom || t.Kind() == reflect.Interface:
	case t.Kind() == reflect.Struct && first == '{':
		return w.object(raw, start, path, func(key string) (reflect.Type, string, error) {
			f, exact := fieldFor(t, key)
			switch {
			case f == nil:
				return nil, "", fmt.Errorf("%w %q %s", ErrUnknownField, key, section(path))
			case !exact && w.opts.ExactKeys:
				return nil, "", fmt.Errorf("keys are case-sensitive: write %q", jsonName(*f))
			}
			return f.Type, f.Tag.Get("unit"), nil
		})
	case t.Kind() == reflect.Map && first == '{':
		return w.object(raw, start, path, func(string) (reflect.Type, string, error) { return t.Elem(), "", nil })
	case (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) && t.Elem().Kind() != reflect.Uint8 && first == '[':
		return w.array(raw, start, t.Elem(), path)
	}
	if err := json.Unmarshal(raw, reflect.New(t).Interface()); err != nil {
		return at(w.data, start, path, describe(err))
	}
	return nil
}

// section names the object at path for an unknown key's error.
func section(path string) string {
	if path == "" {
		return "at the top level"
	}
	return "in " + path
}

// describe turns encoding/json's type error into what the value should have been.
func describe(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Errorf("want %s, got %s", kindName(te.Type), te.Value)
	}
	return err
}

func kindName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "a whole number"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a non-negative whole number"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Struct, reflect.Map:
		return "an object"
	}
	return t.String()
}

// object checks each member of the object raw, finding each value's type and unit with field.
func (w walker) object(raw []byte, start int, path string, field func(key string) (reflect.Type, string, error)) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.Token(); err != nil { // {
		return at(w.data, start, path, err)
	}
	seen := map[string]bool{}
	for dec.More() {
		keyAt := start + skipPunct(raw, int(dec.InputOffset()))
		tok, err := dec.Token()
		if err != nil {
			return at(w.data, keyAt, path, err)
		}
		key, _ := tok.(string)
		at1 := joinPath(path, key)
		if w.opts.ExactKeys && seen[key] {
			return at(w.data, keyAt, at1, errors.New("the key appears twice in one object"))
		}
		seen[key] = true
		ft, unit, ferr := field(key)
		if ferr != nil {
			return at(w.data, keyAt, at1, ferr)
		}
		valueAt := start + skipPunct(raw, int(dec.InputOffset()))
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return at(w.data, valueAt, at1, err)
		}
		var s string
		if unit != "" && json.Unmarshal(v, &s) == nil {
			n, err := unitValue(unit, s)
			if err != nil {
				return at(w.data, valueAt, at1, err)
			}
			*w.edits = append(*w.edits, edit{start: valueAt, end: valueAt + len(v), repl: n})
			continue
		}
		if err := w.value(v, valueAt, ft, at1); err != nil {
			return err
		}
	}
	return nil
}

func (w walker) array(raw []byte, start int, et reflect.Type, path string) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.Token(); err != nil { // [
		return at(w.data, start, path, err)
	}
	for i := 0; dec.More(); i++ {
		valueAt := start + skipPunct(raw, int(dec.InputOffset()))
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return at(w.data, valueAt, path, err)
		}
		if err := w.value(v, valueAt, et, fmt.Sprintf("%s[%d]", path, i)); err != nil {
			return err
		}
	}
	return nil
}

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// skipSpace returns the offset of the first non-space byte of data at or after off.
func skipSpace(data []byte, off int) int {
	for off < len(data) && strings.IndexByte(" \t\r\n", data[off]) >= 0 {
		off++
	}
	return off
}

// skipPunct is skipSpace also past the separators a decoder leaves before a key or value.
func skipPunct(data []byte, off int) int {
	for off < len(data) && strings.IndexByte(" \t\r\n,:", data[off]) >= 0 {
		off++
	}
	return off
}

// at is an *Error at byte offset off of data.
func at(data []byte, off int, path string, err error) *Error {
	off = min(max(off, 0), len(data))
	before := data[:off]
	line := bytes.Count(before, []byte{'\n'}) + 1
	col := utf8.RuneCount(before[bytes.LastIndexByte(before, '\n')+1:]) + 1
	return &Error{Line: line, Column: col, Path: path, Err: err}
}

// fieldFor finds the field of struct t that key names, exactly or (as encoding/json would)
// case-insensitively. A field of t itself wins over one of an embedded struct, as in
// encoding/json.
func fieldFor(t reflect.Type, key string) (*reflect.StructField, bool) {
	var fold *reflect.StructField
	var embedded []reflect.Type
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Anonymous && f.Tag.Get("json") == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				embedded = append(embedded, ft)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		name := jsonName(f)
		if name == "-" {
			continue
		}
		if name == key {
			return &f, true
		}
		if fold == nil && strings.EqualFold(name, key) {
			fold = &f
		}
	}
	for _, et := range embedded {
		g, exact := fieldFor(et, key)
		if exact {
			return g, true
		}
		if fold == nil && g != nil {
			fold = g
		}
	}
	return fold, false
}

func jsonName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	if name == "" {
		return f.Name
	}
	return name
}
