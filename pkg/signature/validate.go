package signature

import (
	"encoding/json"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// Validate checks value v against type t and returns nil or a ValidationErrors
// listing every problem with its path. Values are plain Go data: nil, bool,
// integers, floats, string, []any, map[string]any; other slices, arrays and
// maps with string keys are accepted through reflection, as are named types
// over those kinds and json.Number.
//
// The rules: :int takes any Go integer kind (not an integral float); :float
// takes floats and integers; :keyword and :string take strings; :map takes
// any map; :any takes anything, nil included. A nil value matches only an
// Optional type or :any. A map field of Optional type may be nil or absent;
// other fields are required. Extra map fields are allowed unless mode is
// Strict. In mode Disabled, Validate returns nil without looking; in the other
// modes it reports problems and the caller decides, by mode.Fatal(), whether
// they are fatal.
//
// Validate does not modify v and is safe for concurrent use.
func Validate(t Type, v any, mode Mode) error {
	if mode == Disabled {
		return nil
	}
	c := checker{strict: mode == Strict}
	c.check(orAny(t), v)
	return c.errs.Err()
}

// ValidateOutput validates a result against the signature's output type, as
// Validate does. Output validation never coerces.
func (s *Signature) ValidateOutput(v any, mode Mode) error {
	return Validate(s.Output, v, mode)
}

// ValidateInputs validates an args map against the signature's inputs without
// coercing: a missing required input is "name: required input missing".
// Extra args are allowed unless mode is Strict. See CoerceInputs for the
// forgiving variant used for tool calls.
func (s *Signature) ValidateInputs(args map[string]any, mode Mode) error {
	if mode == Disabled {
		return nil
	}
	c := checker{strict: mode == Strict, inputs: true}
	c.checkFields(s.inputsMap(), plainMap(args))
	return c.errs.Err()
}

// seg is one step of a path: a field name or a list index.
type seg struct {
	name  string
	index int // used when name == "" && isIndex
	isIdx bool
}

// checker walks a value; the path is kept as segments and only turned into a
// string when a problem is recorded, so a valid value costs no allocation.
// The path's first segments are held in the checker itself, which stays on
// its caller's stack (a slice of a local array, grown through the
// *checker, would be moved to the heap: 1 KB a call).
type checker struct {
	strict bool
	inputs bool // validating an args map: top-level keys are inputs
	depth  int  // the path's length
	near   [16]seg
	far    []seg // the path's segments past len(near)
	errs   ValidationErrors
}

// push adds s to the end of the path.
func (c *checker) push(s seg) {
	if c.depth < len(c.near) {
		c.near[c.depth] = s
	} else {
		c.far = append(c.far[:c.depth-len(c.near)], s)
	}
	c.depth++
}

// pop removes the path's last segment.
func (c *checker) pop() { c.depth-- }

// path returns the path's segments (a copy once it is deeper than near).
func (c *checker) path() []seg {
	if c.depth <= len(c.near) {
		return c.near[:c.depth]
	}
	return append(c.near[:len(c.near):len(c.near)], c.far[:c.depth-len(c.near)]...)
}

func (c *checker) pathString() string { return pathString(c.path()) }

// pathString writes path as messages name it: a.b[2].c.
func pathString(path []seg) string {
	var b strings.Builder
	for i, s := range path {
		if s.isIdx {
			b.WriteByte('[')
			b.WriteString(strconv.Itoa(s.index))
			b.WriteByte(']')
			continue
		}
		if i > 0 {
			b.WriteByte('.')
		}
		b.WriteString(s.name)
	}
	return b.String()
}

func (c *checker) fail(msg string) {
	c.errs = append(c.errs, &ValidationError{Path: c.pathString(), Msg: msg})
}

func (c *checker) mismatch(t Type, v any) {
	c.fail("expected " + typeWord(t) + ", got " + describe(v, firewalledPath(c.path())))
}

// firewalledPath reports whether a path goes through a firewalled field:
// a message about the value there names its path and kind, never the
// value itself.
func firewalledPath(path []seg) bool {
	for _, s := range path {
		if !s.isIdx && IsFirewalled(s.name) {
			return true
		}
	}
	return false
}

// typeWord names a type in messages: "integer", "list", ...
func typeWord(t Type) string {
	switch t := t.(type) {
	case Prim:
		switch t {
		case String:
			return "string"
		case Int:
			return "integer"
		case Float:
			return "float"
		case Bool:
			return "boolean"
		case Keyword:
			return "keyword"
		case Any:
			return "any value"
		case AnyMap:
			return "map"
		}
	case List:
		return "list"
	case Map:
		return "map"
	case Optional:
		return typeWord(orAny(t.Elem))
	case Enum, Union, Refined:
		return richWord(t)
	}
	return "any value"
}

func (c *checker) check(t Type, v any) {
	switch t := t.(type) {
	case Optional:
		if v == nil {
			return
		}
		c.check(orAny(t.Elem), v)
	case Prim:
		if !primOK(t, v) {
			c.mismatch(t, v)
		}
	case Enum:
		if !enumHas(t, v) {
			c.mismatch(t, v)
		}
	case Union:
		c.checkUnion(t, v)
	case Refined:
		if base, ok := t.Base.(Prim); ok {
			if !primOK(base, v) || !refinedOK(t, v) {
				c.mismatch(t, v)
			}
			return
		}
		n := len(c.errs)
		c.check(orAny(t.Base), v)
		if len(c.errs) == n && !refinedOK(t, v) {
			c.mismatch(t, v)
		}
	case List:
		elem := orAny(t.Elem)
		switch xs := v.(type) {
		case []any:
			for i, x := range xs {
				c.push(seg{index: i, isIdx: true})
				c.check(elem, x)
				c.pop()
			}
			return
		case ListView:
			for i := range xs.Len() {
				c.push(seg{index: i, isIdx: true})
				c.check(elem, xs.At(i))
				c.pop()
			}
			return
		case nil:
			c.mismatch(t, v)
			return
		}
		rv := reflect.ValueOf(v)
		if k := rv.Kind(); k != reflect.Slice && k != reflect.Array {
			c.mismatch(t, v)
			return
		}
		for i := range rv.Len() {
			c.push(seg{index: i, isIdx: true})
			c.check(elem, rv.Index(i).Interface())
			c.pop()
		}
	case Map:
		switch m := v.(type) {
		case map[string]any:
			c.checkFields(t, plainMap(m))
			return
		case MapView:
			c.checkFields(t, m)
			return
		case nil:
			c.mismatch(t, v)
			return
		}
		rv := reflect.ValueOf(v)
		if rv.Kind() != reflect.Map || !stringish(rv.Type().Key()) {
			c.mismatch(t, v)
			return
		}
		c.checkReflectFields(t, rv)
	}
}

// stringish reports whether a map key type can hold field names.
func stringish(k reflect.Type) bool {
	return k.Kind() == reflect.String || k.Kind() == reflect.Interface && k.NumMethod() == 0
}

func (c *checker) missingMsg() string {
	if c.inputs && c.depth == 1 {
		return "required input missing"
	}
	return "required field missing"
}

func (c *checker) checkFields(t Map, m MapView) {
	present := 0
	for _, f := range t.Fields {
		c.push(seg{name: f.Name})
		x, ok := m.Lookup(f.Name)
		switch {
		case ok:
			present++
			c.check(orAny(f.Type), x)
		case fieldRequired(f.Type):
			c.fail(c.missingMsg())
		}
		c.pop()
	}
	// Every key of m that is a declared field was counted, so m has extra keys
	// exactly when it has more keys than that.
	if c.strict && m.Len() > present {
		var extra []string
		for _, k := range m.Keys() {
			if _, ok := t.Field(k); !ok {
				extra = append(extra, k)
			}
		}
		c.unexpected(extra)
	}
}

func (c *checker) unexpected(names []string) {
	slices.Sort(names)
	for _, k := range names {
		c.push(seg{name: k})
		c.fail("unexpected field")
		c.pop()
	}
}

func (c *checker) checkReflectFields(t Map, rv reflect.Value) {
	kt := rv.Type().Key()
	for _, f := range t.Fields {
		c.push(seg{name: f.Name})
		x := rv.MapIndex(reflect.ValueOf(f.Name).Convert(kt))
		switch {
		case x.IsValid():
			c.check(orAny(f.Type), x.Interface())
		case fieldRequired(f.Type):
			c.fail(c.missingMsg())
		}
		c.pop()
	}
	if !c.strict {
		return
	}
	var extra []string
	for it := rv.MapRange(); it.Next(); {
		k := it.Key()
		if k.Kind() == reflect.Interface {
			k = k.Elem() // invalid for a nil key
		}
		var name string
		switch {
		case !k.IsValid():
			name = "nil"
		case k.Kind() == reflect.String:
			name = k.String()
			if _, ok := t.Field(name); ok {
				continue
			}
		default:
			name = preview(k.Interface())
		}
		extra = append(extra, name)
	}
	c.unexpected(extra)
}

// primOK reports whether v is a value of primitive type p.
func primOK(p Prim, v any) bool {
	switch p {
	case Any:
		return true
	case String, Keyword:
		if _, ok := v.(string); ok {
			return true
		}
	case Int:
		switch x := v.(type) {
		case int64, int, int32, int16, int8, uint, uint64, uint32, uint16, uint8, uintptr:
			return true
		case json.Number:
			_, err := x.Int64()
			return err == nil
		case float64, float32, string, bool, nil, []any, map[string]any:
			return false
		}
	case Float:
		switch x := v.(type) {
		case float64, float32, int64, int, int32, int16, int8, uint, uint64, uint32, uint16, uint8, uintptr:
			return true
		case json.Number:
			f, err := x.Float64()
			return err == nil && !math.IsInf(f, 0)
		case string, bool, nil, []any, map[string]any:
			return false
		}
	case Bool:
		if _, ok := v.(bool); ok {
			return true
		}
	case AnyMap:
		switch v.(type) {
		case map[string]any, MapView:
			return true
		}
		return v != nil && reflect.TypeOf(v).Kind() == reflect.Map
	}
	if v == nil {
		return false
	}
	// Named types over basic kinds (type Status string, type ID int64).
	switch k := reflect.TypeOf(v).Kind(); p {
	case String, Keyword:
		return k == reflect.String
	case Int:
		return isIntKind(k)
	case Float:
		return isIntKind(k) || k == reflect.Float32 || k == reflect.Float64
	case Bool:
		return k == reflect.Bool
	}
	return false
}

func isIntKind(k reflect.Kind) bool {
	return k >= reflect.Int && k <= reflect.Uintptr
}

// checkUnion records nothing when an alternative of u accepts v. Else,
// when exactly one alternative is a list or map type and v is a list or
// map of that kind, it records that alternative's problems (the value
// was most likely meant to be one); otherwise one mismatch naming every
// alternative.
func (c *checker) checkUnion(u Union, v any) {
	n := len(c.errs)
	var shapedErrs ValidationErrors
	count := 0
	for _, a := range u.Alts {
		c.check(a, v)
		if len(c.errs) == n {
			return
		}
		if sameShape(a, v) {
			count++
			shapedErrs = append(shapedErrs[:0:0], c.errs[n:]...)
		}
		c.errs = c.errs[:n]
	}
	if count == 1 {
		c.errs = append(c.errs, shapedErrs...)
		return
	}
	c.mismatch(u, v)
}

// sameShape reports whether t is a list or map type and v a list or map
// of that kind.
func sameShape(t Type, v any) bool {
	kind, _ := kindWord(v)
	switch t := t.(type) {
	case List:
		return kind == "list"
	case Map:
		return kind == "map"
	case Refined:
		return sameShape(t.Base, v)
	}
	return false
}
