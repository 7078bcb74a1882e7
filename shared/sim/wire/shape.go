package wire

import (
	"bytes"
	"fmt"
	"strconv"
	"sync"
)

// A large answer repeats one object shape tens of thousands of times: every copy of
// _stats?level=shards has the same keys, only its figures differ. Built as Objects, each copy
// costs a few dozen fields and boxed numbers, and filter_path matches each of its keys again. A
// Shape is that object once, with Slots where the values go; a Shaped is one object of it. The
// encoder works out once per answer (per filter position) which bytes the shape comes to and
// where its values fall, then writes each object as those bytes with its values in between.

// Slot marks where a Shape's i-th value goes. A slot may appear more than once.
type Slot int

// Scalar is one value of a Shaped, kept unboxed: a string, an integer, a float, a bool or null.
type Scalar struct {
	s    string
	n    int64
	f    float64
	kind scalarKind
}

type scalarKind uint8

const (
	scalarNull scalarKind = iota
	scalarString
	scalarInt
	scalarFloat
	scalarBool
)

// Str is a string Scalar.
func Str(s string) Scalar { return Scalar{s: s, kind: scalarString} }

// Int is an integer Scalar.
func Int(n int64) Scalar { return Scalar{n: n, kind: scalarInt} }

// Float is a number Scalar, written as encoding/json writes a float64.
func Float(f float64) Scalar { return Scalar{f: f, kind: scalarFloat} }

// Bool is a boolean Scalar.
func Bool(b bool) Scalar {
	v := Scalar{kind: scalarBool}
	if b {
		v.n = 1
	}
	return v
}

// Null is the null Scalar, a Scalar's zero value.
func Null() Scalar { return Scalar{} }

func (v Scalar) append(b []byte) []byte {
	switch v.kind {
	case scalarString:
		return appendString(b, v.s)
	case scalarInt:
		return strconv.AppendInt(b, v.n, 10)
	case scalarFloat:
		return appendFloat(b, v.f)
	case scalarBool:
		return strconv.AppendBool(b, v.n != 0)
	}
	return append(b, "null"...)
}

// Tree is the value a Scalar stands for in a tree, as the handlers would have built it.
func (v Scalar) Tree() any {
	switch v.kind {
	case scalarString:
		return v.s
	case scalarInt:
		return v.n
	case scalarFloat:
		return v.f
	case scalarBool:
		return v.n != 0
	}
	return nil
}

// Shape is an object whose values at its Slots vary from one Shaped to the next. Everything else
// in it is fixed, and it holds no LazyObject or Shaped.
type Shape struct {
	tmpl  Object
	slots int

	fullOnce sync.Once
	full     *shapeProgram
}

// NewShape returns the shape of tmpl, whose objects have slots values; tmpl's Slots are below
// slots, and need not use every one.
func NewShape(slots int, tmpl Object) *Shape {
	if m := maxSlot(tmpl); m >= slots {
		panic(fmt.Sprintf("wire.NewShape: slot %d of %d", m, slots))
	}
	return &Shape{tmpl: tmpl, slots: slots}
}

func maxSlot(v any) int {
	m := -1
	switch t := v.(type) {
	case Slot:
		m = int(t)
	case Object:
		for _, f := range t {
			m = max(m, maxSlot(f.Val))
		}
	case []any:
		for _, x := range t {
			m = max(m, maxSlot(x))
		}
	case []Object:
		for _, x := range t {
			m = max(m, maxSlot(x))
		}
	}
	return m
}

// Shaped is one object of a shape. Fill sets its values when it is written (every slot; one left
// unset is null), so it reads what it describes then, as a LazyObject does.
type Shaped struct {
	Shape *Shape
	Fill  func(vals []Scalar)
}

// Object is the plain tree the Shaped stands for.
func (v Shaped) Object() Object {
	vals := make([]Scalar, v.Shape.slots)
	v.Fill(vals)
	return substitute(v.Shape.tmpl, vals).(Object)
}

func substitute(v any, vals []Scalar) any {
	switch t := v.(type) {
	case Slot:
		return vals[t].Tree()
	case Object:
		out := make(Object, len(t))
		for i, f := range t {
			out[i] = Field{f.Key, substitute(f.Val, vals)}
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, x := range t {
			out[i] = substitute(x, vals)
		}
		return out
	case []Object:
		out := make([]Object, len(t))
		for i, x := range t {
			out[i] = substitute(x, vals).(Object)
		}
		return out
	}
	return v
}

// slotMark stands for a slot's value in a program's bytes while it is compiled. No JSON the
// encoder writes holds a NUL byte: strings escape it.
const slotMark = 0

// shapeProgram is what a shape comes to under one filter position: literal bytes with slot values
// in between. empty means nothing of it is selected.
type shapeProgram struct {
	lits  [][]byte // len(slots)+1 literals
	slots []int
	empty bool
}

// compileShape writes tmpl with the encoder e (full, or include from set) and cuts the bytes at
// the slots' marks.
func compileShape(sh *Shape, m *fpMemo, set int32, full bool) *shapeProgram {
	e := jsonEncoder{compiling: true}
	if full {
		e.value(sh.tmpl)
	} else if !e.include(m, sh.tmpl, set) {
		return &shapeProgram{empty: true}
	}
	p := &shapeProgram{}
	rest := e.buf
	for _, slot := range e.slotOrder {
		i := bytes.IndexByte(rest, slotMark)
		p.lits = append(p.lits, rest[:i])
		p.slots = append(p.slots, slot)
		rest = rest[i+1:]
	}
	p.lits = append(p.lits, rest)
	return p
}

// fullProgram is the shape written whole.
func (sh *Shape) fullProgram() *shapeProgram {
	sh.fullOnce.Do(func() { sh.full = compileShape(sh, nil, 0, true) })
	return sh.full
}

// program is the shape under filter position set, compiled once per answer.
func (m *fpMemo) program(sh *Shape, set int32) *shapeProgram {
	k := shapeKey{sh, set}
	if p, ok := m.programs[k]; ok {
		return p
	}
	if m.programs == nil {
		m.programs = map[shapeKey]*shapeProgram{}
	}
	p := compileShape(sh, m, set, false)
	m.programs[k] = p
	return p
}

type shapeKey struct {
	sh  *Shape
	set int32
}

// writeShaped writes v as p lays it out.
func (e *jsonEncoder) writeShaped(v Shaped, p *shapeProgram) {
	if cap(e.vals) < v.Shape.slots {
		e.vals = make([]Scalar, v.Shape.slots)
	}
	vals := e.vals[:v.Shape.slots]
	clear(vals)
	v.Fill(vals)
	for i, slot := range p.slots {
		e.buf = append(e.buf, p.lits[i]...)
		e.buf = vals[slot].append(e.buf)
	}
	e.buf = append(e.buf, p.lits[len(p.slots)]...)
}
