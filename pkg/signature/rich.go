package signature

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Enum is a type whose values are listed, written as literals joined by
// "|": "low" | "medium" | "high", or 1 | 2 | 3. A value matches when it
// equals one of them: a string equals a string, an integer an integer,
// a float a float or an integer of the same value (as :float takes
// integers), a boolean a boolean. Keywords cross the host boundary as
// strings, so a program's :low matches "low".
type Enum struct {
	// Values are the allowed values, in source order, each a string,
	// int64, float64 (finite) or bool; no two are equal.
	Values []any
}

// String returns the canonical form, such as `"low" | "medium" | "high"`.
func (e Enum) String() string { return typeString(e) }

func (Enum) isType() {}

// Union is a type whose values are those of any of its alternatives,
// written joined by "|": :int | :string, {id :int} | :string. A "?" after
// any alternative makes the whole union optional (nil is one of its
// values): :int | :string? is an optional integer or string.
type Union struct {
	// Alts are the alternatives in source order: at least two, none of
	// them Optional or a Union, and at most one an Enum (the literals of a
	// union are gathered into one Enum, at the place of the first).
	Alts []Type
}

// String returns the canonical form, such as ":int | :string".
func (u Union) String() string { return typeString(u) }

func (Union) isType() {}

// Refined narrows a base type with constraints written in parentheses
// after it: :int(min 0, max 100), :float(min 0.5), :string(min 1, max 80,
// pattern "^[A-Z]"), [:int](min 1). The names are those of Malli's
// properties ([:int {:min 0 :max 100}]).
//
// On :int and :float, Min and Max bound the value (inclusive); on :string
// and :keyword they bound its length in characters, and Pattern must match
// somewhere in it (RE2 syntax, unanchored, as JSON Schema's pattern); on a
// list they bound its number of elements.
type Refined struct {
	// Base is :int, :float, :string, :keyword or a List.
	Base Type
	// Min and Max are the inclusive bounds, nil when absent. On :int they
	// are integers; lengths and counts are non-negative integers.
	// Integer bounds lie strictly within ±2^53, so that they are exact.
	Min, Max *float64
	// Pattern is a regular expression a string must match; nil when
	// absent. Only on :string and :keyword.
	Pattern *regexp.Regexp
}

// String returns the canonical form, such as ":int(min 0, max 100)".
func (r Refined) String() string { return typeString(r) }

func (Refined) isType() {}

// maxPattern bounds the source of a pattern refinement.
const maxPattern = 1000

// maxExactInt is the magnitude integer bounds stay under, so that a bound
// is exact as a float64 and every comparison with an integer is exact.
const maxExactInt = 1 << 53

// refineKind says what a refinement's bounds measure on base: "value",
// "length" (strings and keywords) or "count" (lists); "" when base takes
// no refinement.
func refineKind(base Type) string {
	switch b := base.(type) {
	case Prim:
		switch b {
		case Int, Float:
			return "value"
		case String, Keyword:
			return "length"
		}
	case List:
		return "count"
	}
	return ""
}

// writeLiteral writes an enum value in signature syntax.
func writeLiteral(b *strings.Builder, v any) {
	switch x := v.(type) {
	case string:
		b.WriteString(strconv.Quote(x))
	case int64:
		b.WriteString(strconv.FormatInt(x, 10))
	case float64:
		b.WriteString(formatFloat(x))
	case bool:
		b.WriteString(strconv.FormatBool(x))
	default:
		b.WriteString("nil")
	}
}

// writeRich writes the canonical form of an Enum, Union or Refined.
func writeRich(b *strings.Builder, t Type) {
	switch t := t.(type) {
	case Enum:
		for i, v := range t.Values {
			if i > 0 {
				b.WriteString(" | ")
			}
			writeLiteral(b, v)
		}
	case Union:
		for i, a := range t.Alts {
			if i > 0 {
				b.WriteString(" | ")
			}
			writeType(b, a)
		}
	case Refined:
		writeType(b, t.Base)
		b.WriteByte('(')
		sep := ""
		bound := func(name string, f *float64) {
			if f == nil {
				return
			}
			b.WriteString(sep + name + " ")
			sep = ", "
			if t.Base == Float {
				b.WriteString(strconv.FormatFloat(*f, 'g', -1, 64))
			} else {
				b.WriteString(strconv.FormatInt(int64(*f), 10))
			}
		}
		bound("min", t.Min)
		bound("max", t.Max)
		if t.Pattern != nil {
			b.WriteString(sep + "pattern " + strconv.Quote(t.Pattern.String()))
		}
		b.WriteByte(')')
	}
}

// richWord names an Enum, Union or Refined in messages.
func richWord(t Type) string {
	switch t := t.(type) {
	case Enum:
		var b strings.Builder
		if len(t.Values) == 1 {
			writeLiteral(&b, t.Values[0])
			return b.String()
		}
		b.WriteString("one of ")
		for i, v := range t.Values {
			if i > 0 {
				b.WriteString(", ")
			}
			writeLiteral(&b, v)
		}
		return b.String()
	case Union:
		words := make([]string, len(t.Alts))
		for i, a := range t.Alts {
			words[i] = typeWord(a)
		}
		return strings.Join(words[:len(words)-1], ", ") + " or " + words[len(words)-1]
	case Refined:
		return refinedWord(t)
	}
	return "any value"
}

func refinedWord(r Refined) string {
	word := typeWord(r.Base)
	num := func(f float64) string {
		if r.Base == Float {
			return strconv.FormatFloat(f, 'g', -1, 64)
		}
		return strconv.FormatInt(int64(f), 10)
	}
	var parts []string
	switch kind := refineKind(r.Base); {
	case r.Min == nil && r.Max == nil:
	case kind == "value":
		switch {
		case r.Min != nil && r.Max != nil:
			parts = append(parts, "between "+num(*r.Min)+" and "+num(*r.Max))
		case r.Min != nil:
			parts = append(parts, "at least "+num(*r.Min))
		default:
			parts = append(parts, "at most "+num(*r.Max))
		}
	default:
		unit := "characters"
		if kind == "count" {
			unit = "elements"
		}
		one := func(f float64) string {
			if f == 1 {
				return num(f) + " " + strings.TrimSuffix(unit, "s")
			}
			return num(f) + " " + unit
		}
		switch {
		case r.Min != nil && r.Max != nil:
			parts = append(parts, "of "+num(*r.Min)+" to "+num(*r.Max)+" "+unit)
		case r.Min != nil:
			parts = append(parts, "of at least "+one(*r.Min))
		default:
			parts = append(parts, "of at most "+one(*r.Max))
		}
	}
	if r.Pattern != nil {
		parts = append(parts, "matching "+strconv.Quote(r.Pattern.String()))
	}
	if len(parts) == 0 {
		return word
	}
	return word + " " + strings.Join(parts, " and ")
}

// literalOf returns a scalar value in the form enum values take: a
// string, int64, float64 or bool; ok is false for anything else (uint64
// values beyond int64 come back as float64).
func literalOf(v any) (any, bool) {
	switch x := v.(type) {
	case string, int64, float64, bool:
		return x, true
	case int:
		return int64(x), true
	case float32:
		return float64(x), true
	case json.Number:
		if n, err := x.Int64(); err == nil {
			return n, true
		}
		if f, err := x.Float64(); err == nil && !math.IsInf(f, 0) {
			return f, true
		}
		return nil, false
	case nil:
		return nil, false
	}
	rv := reflect.ValueOf(v)
	switch k := rv.Kind(); {
	case k == reflect.String:
		return rv.String(), true
	case k == reflect.Bool:
		return rv.Bool(), true
	case k >= reflect.Int && k <= reflect.Int64:
		return rv.Int(), true
	case k >= reflect.Uint && k <= reflect.Uintptr:
		if u := rv.Uint(); u <= math.MaxInt64 {
			return int64(u), true
		}
		return float64(rv.Uint()), true
	case k == reflect.Float32 || k == reflect.Float64:
		return rv.Float(), true
	}
	return nil, false
}

// enumHas reports whether v is one of e's values.
func enumHas(e Enum, v any) bool {
	lit, ok := literalOf(v)
	if !ok {
		return false
	}
	for _, want := range e.Values {
		if literalEqual(want, lit) {
			return true
		}
	}
	return false
}

// literalEqual reports whether value v equals enum value want: same kind,
// or an integer v of the same value as a float want.
func literalEqual(want, v any) bool {
	switch w := want.(type) {
	case string:
		s, ok := v.(string)
		return ok && s == w
	case bool:
		b, ok := v.(bool)
		return ok && b == w
	case int64:
		i, ok := v.(int64)
		return ok && i == w
	case float64:
		switch x := v.(type) {
		case float64:
			return x == w
		case int64:
			return cmpIntFloat(x, w) == 0
		}
	}
	return false
}

// cmpIntFloat compares an integer with a float exactly: -1, 0 or 1.
func cmpIntFloat(i int64, f float64) int {
	switch {
	case f >= 0x1p63:
		return -1
	case f < -0x1p63:
		return 1
	}
	fl := math.Floor(f)
	n := int64(fl)
	switch {
	case i < n:
		return -1
	case i > n:
		return 1
	case fl == f:
		return 0
	}
	return -1
}

// cmpNumber compares a numeric value with a bound: -1, 0 or 1; ok is
// false when v is not a number.
func cmpNumber(v any, bound float64) (int, bool) {
	lit, ok := literalOf(v)
	if !ok {
		return 0, false
	}
	switch x := lit.(type) {
	case int64:
		return cmpIntFloat(x, bound), true
	case float64:
		switch {
		case x < bound:
			return -1, true
		case x > bound:
			return 1, true
		}
		return 0, true
	}
	return 0, false
}

// refinedOK reports whether v, already a value of r's base type, meets
// r's constraints.
func refinedOK(r Refined, v any) bool {
	var n float64
	switch refineKind(r.Base) {
	case "value":
		if r.Min != nil {
			if c, ok := cmpNumber(v, *r.Min); !ok || c < 0 {
				return false
			}
		}
		if r.Max != nil {
			if c, ok := cmpNumber(v, *r.Max); !ok || c > 0 {
				return false
			}
		}
		return true
	case "length":
		lit, _ := literalOf(v)
		s, _ := lit.(string)
		if r.Pattern != nil && !r.Pattern.MatchString(s) {
			return false
		}
		if r.Min == nil && r.Max == nil {
			return true
		}
		n = float64(utf8.RuneCountInString(s))
	case "count":
		l, ok := listLen(v)
		if !ok {
			return false
		}
		n = float64(l)
	default:
		return true
	}
	return (r.Min == nil || n >= *r.Min) && (r.Max == nil || n <= *r.Max)
}

// listLen returns the number of elements of a list value.
func listLen(v any) (int, bool) {
	switch xs := v.(type) {
	case []any:
		return len(xs), true
	case ListView:
		return xs.Len(), true
	case nil:
		return 0, false
	}
	rv := reflect.ValueOf(v)
	if k := rv.Kind(); k == reflect.Slice || k == reflect.Array {
		return rv.Len(), true
	}
	return 0, false
}

// enumPrims lists the primitive types of an enum's values, each once,
// for coercion: a string "2" is coerced towards 2 when the enum holds
// integers.
func enumPrims(e Enum) []Prim {
	var out []Prim
	add := func(p Prim) {
		for _, q := range out {
			if q == p {
				return
			}
		}
		out = append(out, p)
	}
	for _, v := range e.Values {
		switch v.(type) {
		case int64:
			add(Int)
		case float64:
			add(Float)
		case bool:
			add(Bool)
		}
	}
	return out
}

// newUnion builds the type of alternatives alts as the parser and FromData
// do: alternatives that are unions are flattened, an Optional alternative
// makes the whole union optional, literal alternatives (Enums) are
// gathered into one Enum at the place of the first, and a single
// remaining alternative is returned as itself. dup is the first enum
// value listed twice, written as a literal ("" when none is).
func newUnion(alts []Type) (t Type, dup string) {
	optional := false
	var flat []Type
	var enum *Enum
	enumAt := -1
	var add func(a Type)
	add = func(a Type) {
		switch x := a.(type) {
		case Optional:
			optional = true
			add(orAny(x.Elem))
		case Union:
			for _, y := range x.Alts {
				add(y)
			}
		case Enum:
			if enum == nil {
				enum = &Enum{}
				enumAt = len(flat)
				flat = append(flat, nil)
			}
			for _, v := range x.Values {
				for _, w := range enum.Values {
					if literalEqual(w, v) && literalEqual(v, w) && dup == "" {
						var b strings.Builder
						writeLiteral(&b, v)
						dup = b.String()
					}
				}
				enum.Values = append(enum.Values, v)
			}
		default:
			flat = append(flat, orAny(a))
		}
	}
	for _, a := range alts {
		add(a)
	}
	if enum != nil {
		flat[enumAt] = *enum
	}
	if len(flat) == 1 {
		t = flat[0]
	} else {
		t = Union{Alts: flat}
	}
	if optional {
		t = Optional{Elem: t}
	}
	return t, dup
}

// RefineSpec is the constraints of a refinement as written: bounds and a
// pattern's source (see Refined).
type RefineSpec struct {
	Min, Max *float64
	Pattern  *string
}

// Refine checks spec against base and returns the refined type: base
// takes refinements (:int, :float, :string, :keyword or a list); bounds of
// :int, lengths and counts are integers, lengths and counts not negative,
// integers within ±2^53; min is not above max; a pattern is only on
// strings and keywords, at most 1,000 bytes, and compiles (RE2 syntax).
// The error says which rule is broken.
func Refine(base Type, spec RefineSpec) (Refined, error) {
	kind := refineKind(base)
	if kind == "" {
		return Refined{}, fmt.Errorf("%s takes no refinements (only :int, :float, :string, :keyword and lists do)", typeString(orAny(base)))
	}
	if spec.Min == nil && spec.Max == nil && spec.Pattern == nil {
		return Refined{}, fmt.Errorf("a refinement of %s needs min, max or pattern", typeString(base))
	}
	r := Refined{Base: base}
	for _, b := range []struct {
		name string
		f    *float64
		dst  **float64
	}{{"min", spec.Min, &r.Min}, {"max", spec.Max, &r.Max}} {
		if b.f == nil {
			continue
		}
		f := *b.f
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return Refined{}, fmt.Errorf("%s of %s must be a finite number", b.name, typeString(base))
		}
		if base == Int || kind != "value" {
			if f != math.Trunc(f) {
				return Refined{}, fmt.Errorf("%s of %s must be an integer, got %s", b.name, typeString(base), strconv.FormatFloat(f, 'g', -1, 64))
			}
			if math.Abs(f) >= maxExactInt {
				return Refined{}, fmt.Errorf("%s of %s must lie within ±2^53", b.name, typeString(base))
			}
		}
		if kind != "value" && f < 0 {
			return Refined{}, fmt.Errorf("%s of %s is a %s and cannot be negative", b.name, typeString(base), kind)
		}
		*b.dst = &f
	}
	if r.Min != nil && r.Max != nil && *r.Min > *r.Max {
		return Refined{}, fmt.Errorf("min %s of %s is greater than max %s", strconv.FormatFloat(*r.Min, 'g', -1, 64), typeString(base), strconv.FormatFloat(*r.Max, 'g', -1, 64))
	}
	if spec.Pattern != nil {
		if kind != "length" {
			return Refined{}, fmt.Errorf("pattern applies to :string and :keyword, not %s", typeString(base))
		}
		if len(*spec.Pattern) > maxPattern {
			return Refined{}, fmt.Errorf("pattern longer than %d bytes", maxPattern)
		}
		re, err := regexp.Compile(*spec.Pattern)
		if err != nil {
			return Refined{}, fmt.Errorf("invalid pattern: %w", err)
		}
		r.Pattern = re
	}
	return r, nil
}

func toFloat(n any) float64 {
	switch x := n.(type) {
	case int64:
		return float64(x)
	case float64:
		return x
	}
	return 0
}
