package signature

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"
)

// maxSchemaDepth bounds the nesting FromJSONSchema follows; deeper parts
// become :any with a note.
const maxSchemaDepth = 32

// FromJSONSchema turns a tool's JSON Schema (an MCP tool's inputSchema and
// outputSchema, as decoded from JSON: map[string]any) into a signature.
// input describes the argument object: its properties become the inputs,
// required ones plain, the others optional. output, when non-nil, becomes
// the output type; nil means :any.
//
// It never fails. What the signature DSL cannot say is degraded to :any (or
// :map for an object whose property names are not signature names) and
// reported in notes, one per degraded place, each starting with its path in
// the schema ("input.properties.filter: anyOf is not supported; typed
// :any"). When the input schema cannot be expressed as named inputs at all
// (it is not an object, or a property name is not a signature name), the
// signature has no inputs, sig.Inputs is nil, and untyped reports true: the
// caller should then pass arguments through unvalidated.
//
// The mapping: string → :string, integer → :int, number → :float, boolean
// → :bool, array → [items], object with properties → {…} (required fields
// plain, others optional), object without properties → :map, a "null"
// alternative (type ["string","null"], anyOf [X, {"type":"null"}]) → X?,
// enum and const of scalars → an enum ("a" | "b"; with objects or lists
// among them, the type of their values), anyOf/oneOf and a list of types →
// a union (oneOf's "exactly one" is read as anyOf's "at least one"; an
// alternative that takes anything makes the whole :any), minimum/maximum
// (exclusive ones on integers too), minLength/maxLength/pattern and
// minItems/maxItems → a refinement. Other keywords that only narrow a
// value (format, multipleOf, uniqueItems, …) and patterns RE2 cannot
// compile are not checked; the tool itself still validates. An input schema with additionalProperties
// true (or a schema) gives ExtraInputs; without it, an argument the
// schema does not list fails the call as unknown.
func FromJSONSchema(input, output any) (sig *Signature, untyped bool, notes []string) {
	c := &schemaConv{}
	sig = &Signature{Output: Prim(Any)}
	if output != nil {
		sig.Output = c.typ(output, "output", 0)
	}
	in, ok := input.(map[string]any)
	switch {
	case input == nil:
		// No input schema: a tool without arguments.
		sig.Inputs = []Param{}
	case !ok:
		c.note("input", "the schema is a %s, not an object schema; arguments are not checked", kindOf(input))
		untyped = true
	default:
		t := c.typ(in, "input", 0)
		switch m := t.(type) {
		case Map:
			sig.Inputs = make([]Param, 0, len(m.Fields))
			for _, f := range m.Fields {
				sig.Inputs = append(sig.Inputs, Param(f))
			}
			// Only an explicit additionalProperties lets a call pass
			// arguments the schema does not list: an absent one still
			// catches a misspelled argument.
			switch ap := in["additionalProperties"].(type) {
			case bool:
				sig.ExtraInputs = ap
			case map[string]any:
				sig.ExtraInputs = true
			}
		case Prim:
			if m == AnyMap {
				if props, ok := in["properties"].(map[string]any); ok && len(props) > 0 || in["properties"] != nil && !ok {
					untyped = true // the reason is already noted
				} else {
					sig.Inputs = []Param{} // {"type":"object"}: no declared inputs
				}
				break
			}
			c.note("input", "the arguments are %s, not an object; arguments are not checked", m)
			untyped = true
		default:
			c.note("input", "the arguments are %s, not an object; arguments are not checked", t)
			untyped = true
		}
	}
	if untyped {
		sig.Inputs = nil
	}
	return sig, untyped, c.notes
}

type schemaConv struct{ notes []string }

func (c *schemaConv) note(path, format string, args ...any) {
	c.notes = append(c.notes, path+": "+fmt.Sprintf(format, args...))
}

func kindOf(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case []any:
		return "list"
	case map[string]any:
		return "object"
	}
	return "number"
}

// typ converts one schema; path names it in notes.
func (c *schemaConv) typ(schema any, path string, depth int) Type {
	if depth > maxSchemaDepth {
		c.note(path, "nested deeper than %d levels; typed :any", maxSchemaDepth)
		return Prim(Any)
	}
	switch s := schema.(type) {
	case bool:
		// true accepts anything; false accepts nothing, which no signature
		// says: :any, the tool rejects.
		return Prim(Any)
	case map[string]any:
		return c.object(s, path, depth)
	default:
		c.note(path, "a schema must be an object, got a %s; typed :any", kindOf(schema))
		return Prim(Any)
	}
}

func (c *schemaConv) object(s map[string]any, path string, depth int) Type {
	if _, ok := s["$ref"]; ok {
		c.note(path, "$ref is not supported; typed :any")
		return Prim(Any)
	}
	for _, k := range []string{"anyOf", "oneOf"} {
		if alts, ok := s[k]; ok {
			return c.alternatives(k, alts, path, depth)
		}
	}
	if _, ok := s["allOf"]; ok {
		c.note(path, "allOf is not supported; typed :any")
		return Prim(Any)
	}
	if _, ok := s["not"]; ok {
		c.note(path, "not is not supported; typed :any")
		return Prim(Any)
	}
	if e, nullable, ok := c.enum(s, path); ok {
		if nullable {
			return Optional{Elem: e}
		}
		return e
	}
	var types []string
	switch t := s["type"].(type) {
	case nil:
		switch {
		case s["properties"] != nil:
			types = []string{"object"}
		case s["items"] != nil:
			types = []string{"array"}
		case s["const"] != nil:
			types = enumTypes([]any{s["const"]})
		case s["enum"] != nil:
			types = enumTypes(s["enum"])
		}
	case string:
		types = []string{t}
	case []any:
		for _, e := range t {
			name, ok := e.(string)
			if !ok {
				c.note(path+".type", "entries must be strings, got a %s; typed :any", kindOf(e))
				return Prim(Any)
			}
			types = append(types, name)
		}
	default:
		c.note(path+".type", "must be a string or a list of strings, got a %s; typed :any", kindOf(t))
		return Prim(Any)
	}
	nullable := false
	var rest []string
	for _, t := range types {
		if t == "null" {
			nullable = true
		} else if t != "" {
			rest = append(rest, t)
		}
	}
	var out Type
	switch len(rest) {
	case 0:
		out = Prim(Any)
		nullable = false
	case 1:
		out = c.single(rest[0], s, path, depth)
	default:
		if len(rest) == 2 && contains(rest, "integer") && contains(rest, "number") {
			out = Prim(Float)
			break
		}
		alts := make([]Type, 0, len(rest))
		for _, name := range rest {
			a := c.single(name, s, path, depth)
			if a == Any {
				return Prim(Any) // noted by single
			}
			alts = append(alts, a)
		}
		out, _ = newUnion(alts)
	}
	if nullable {
		return optional(out)
	}
	return out
}

func contains(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}

func optional(t Type) Type {
	if _, ok := t.(Optional); ok {
		return t
	}
	return Optional{Elem: t}
}

func valueType(v any) string {
	switch v.(type) {
	case string:
		return "string"
	case bool:
		return "boolean"
	case float64:
		return "number"
	case int, int64:
		return "integer"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return ""
}

// enumTypes returns the JSON types of an enum's values.
func enumTypes(enum any) []string {
	vals, ok := enum.([]any)
	if !ok {
		return nil
	}
	seen := map[string]bool{}
	var out []string
	for _, v := range vals {
		t := "null"
		if v != nil {
			t = valueType(v)
			if t == "number" {
				if f, ok := v.(float64); ok && f == float64(int64(f)) {
					t = "integer"
				}
			}
		}
		if !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	if seen["integer"] && seen["number"] {
		out = without(out, "integer")
	}
	return out
}

func without(list []string, s string) []string {
	out := list[:0:0]
	for _, e := range list {
		if e != s {
			out = append(out, e)
		}
	}
	return out
}

// alternatives handles anyOf/oneOf: [X] and [X, null] become X and X?;
// anything else :any.
func (c *schemaConv) alternatives(key string, alts any, path string, depth int) Type {
	list, ok := alts.([]any)
	if !ok {
		c.note(path+"."+key, "must be a list, got a %s; typed :any", kindOf(alts))
		return Prim(Any)
	}
	var kept []any
	nullable := false
	for _, a := range list {
		if m, ok := a.(map[string]any); ok && len(m) == 1 && m["type"] == "null" {
			nullable = true
			continue
		}
		kept = append(kept, a)
	}
	if len(kept) == 0 {
		c.note(path, "%s with no alternatives but null is not supported; typed :any", key)
		return Prim(Any)
	}
	types := make([]Type, len(kept))
	for i, a := range kept {
		types[i] = c.typ(a, fmt.Sprintf("%s.%s[%d]", path, key, i), depth+1)
		if types[i] == Any {
			return Prim(Any) // an alternative that takes anything: the union does too
		}
	}
	t, dup := newUnion(types)
	if dup != "" {
		c.note(path, "%s lists the value %s twice; typed :any", key, dup)
		return Prim(Any)
	}
	if nullable {
		return optional(t)
	}
	return t
}

// enum converts an enum or const keyword whose values are all scalars
// into an Enum (a null among them makes it nullable); ok is false when
// there is none or a value is a list or an object.
func (c *schemaConv) enum(s map[string]any, path string) (e Enum, nullable, ok bool) {
	var vals []any
	key := "enum"
	if cv, has := s["const"]; has {
		vals, key = []any{cv}, "const"
	} else if ev, has := s["enum"]; has {
		list, isList := ev.([]any)
		if !isList || len(list) == 0 {
			return Enum{}, false, false
		}
		vals = list
	} else {
		return Enum{}, false, false
	}
	integer := s["type"] == "integer"
	for _, v := range vals {
		lit, isLit := schemaLiteral(v, integer)
		switch {
		case v == nil:
			nullable = true
			continue
		case !isLit:
			return Enum{}, false, false
		}
		dup := false
		for _, w := range e.Values {
			if literalEqual(w, lit) && literalEqual(lit, w) {
				dup = true
			}
		}
		if dup {
			c.note(path+"."+key, "a value is listed twice; kept once")
			continue
		}
		e.Values = append(e.Values, lit)
	}
	if len(e.Values) == 0 {
		return Enum{}, false, false
	}
	if t, isList := s["type"].([]any); isList && contains(anyStrings(t), "null") {
		nullable = true
	}
	return e, nullable, true
}

// schemaLiteral returns a JSON value as an enum value: a string, a bool,
// an integer (int64) for an integral number (always when the schema's
// type is integer, else when it was decoded as an integer or is written
// without a fraction), or a float.
func schemaLiteral(v any, integer bool) (any, bool) {
	if x, ok := v.(float64); ok {
		if math.IsInf(x, 0) || math.IsNaN(x) {
			return nil, false
		}
		if n, ok := integral(x); ok && (integer || math.Abs(x) < maxExactInt) {
			return n, true
		}
		return x, true
	}
	return literalOf(v)
}

func anyStrings(list []any) []string {
	out := make([]string, 0, len(list))
	for _, e := range list {
		if s, ok := e.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// refine applies the schema's constraint keywords to t (an :int, :float,
// :string or list): minimum/maximum and exclusiveMinimum/exclusiveMaximum
// on integers (an exclusive bound becomes the next integer), minimum and
// maximum on numbers, minLength/maxLength/pattern on strings,
// minItems/maxItems on arrays. What cannot be kept is noted and left to
// the tool.
func (c *schemaConv) refine(t Type, s map[string]any, path string) Type {
	var spec RefineSpec
	num := func(key string) (float64, bool) {
		v, ok := s[key]
		if !ok {
			return 0, false
		}
		f, ok := schemaNumber(v)
		if !ok {
			c.note(path+"."+key, "must be a number, got a %s; not checked", kindOf(v))
		}
		return f, ok
	}
	set := func(dst **float64, f float64) { *dst = &f }
	lo, hi := "minimum", "maximum"
	switch refineKind(t) {
	case "length":
		lo, hi = "minLength", "maxLength"
		if v, ok := s["pattern"]; ok {
			if p, isStr := v.(string); isStr {
				spec.Pattern = &p
			} else {
				c.note(path+".pattern", "must be a string, got a %s; not checked", kindOf(v))
			}
		}
	case "count":
		lo, hi = "minItems", "maxItems"
	case "value":
		for _, k := range []string{"exclusiveMinimum", "exclusiveMaximum"} {
			f, ok := num(k)
			if !ok {
				continue
			}
			if t != Int {
				c.note(path+"."+k, "an exclusive bound on a number is not supported; not checked")
				continue
			}
			if k == "exclusiveMinimum" {
				set(&spec.Min, math.Floor(f)+1)
			} else {
				set(&spec.Max, math.Ceil(f)-1)
			}
		}
	default:
		return t
	}
	if f, ok := num(lo); ok {
		if t == Int {
			f = math.Ceil(f)
		}
		if spec.Min == nil || f > *spec.Min {
			set(&spec.Min, f)
		}
	}
	if f, ok := num(hi); ok {
		if t == Int {
			f = math.Floor(f)
		}
		if spec.Max == nil || f < *spec.Max {
			set(&spec.Max, f)
		}
	}
	if spec.Min == nil && spec.Max == nil && spec.Pattern == nil {
		return t
	}
	r, err := Refine(t, spec)
	if err != nil {
		c.note(path, "%s; not checked", err.Error())
		return t
	}
	return r
}

func schemaNumber(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, !math.IsInf(x, 0) && !math.IsNaN(x)
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	case json.Number:
		f, err := x.Float64()
		return f, err == nil && !math.IsInf(f, 0)
	}
	return 0, false
}

func (c *schemaConv) single(name string, s map[string]any, path string, depth int) Type {
	switch name {
	case "string":
		return c.refine(String, s, path)
	case "integer":
		return c.refine(Int, s, path)
	case "number":
		return c.refine(Float, s, path)
	case "boolean":
		return Prim(Bool)
	case "array":
		items, ok := s["items"]
		if !ok || items == nil {
			return c.refine(List{Elem: Prim(Any)}, s, path)
		}
		if _, isList := items.([]any); isList {
			c.note(path+".items", "tuple items are not supported; typed [:any]")
			return List{Elem: Prim(Any)}
		}
		return c.refine(List{Elem: c.typ(items, path+".items", depth+1)}, s, path)
	case "object":
		return c.properties(s, path, depth)
	default:
		c.note(path+".type", "unknown type %q; typed :any", name)
		return Prim(Any)
	}
}

func (c *schemaConv) properties(s map[string]any, path string, depth int) Type {
	raw, ok := s["properties"]
	if !ok || raw == nil {
		return Prim(AnyMap)
	}
	props, ok := raw.(map[string]any)
	if !ok {
		c.note(path+".properties", "must be an object, got a %s; typed :map", kindOf(raw))
		return Prim(AnyMap)
	}
	if len(props) == 0 {
		return Prim(AnyMap)
	}
	required := map[string]bool{}
	if r, ok := s["required"].([]any); ok {
		for _, e := range r {
			if name, ok := e.(string); ok {
				required[name] = true
			}
		}
	}
	names := make([]string, 0, len(props))
	for k := range props {
		names = append(names, k)
	}
	sort.Strings(names)
	var bad []string
	for _, k := range names {
		if !schemaName(k) {
			bad = append(bad, fmt.Sprintf("%q", k))
		}
	}
	if len(bad) > 0 {
		c.note(path+".properties", "the names %s are not signature names (letters, digits, '_'); typed :map", strings.Join(bad, ", "))
		return Prim(AnyMap)
	}
	m := Map{Fields: make([]Field, 0, len(names))}
	// Required properties first (in the schema's required order), then the
	// optional ones by name: JSON objects have no order, and a model reads
	// the required inputs first.
	seen := map[string]bool{}
	if r, ok := s["required"].([]any); ok {
		for _, e := range r {
			name, _ := e.(string)
			p, ok := props[name]
			if !ok || seen[name] {
				continue
			}
			seen[name] = true
			m.Fields = append(m.Fields, Field{Name: name, Type: c.typ(p, path+".properties."+name, depth+1)})
		}
	}
	for _, name := range names {
		if seen[name] {
			continue
		}
		t := c.typ(props[name], path+".properties."+name, depth+1)
		m.Fields = append(m.Fields, Field{Name: name, Type: optional(t)})
	}
	return m
}

// schemaName reports whether a property name is a signature name that means
// itself: an identifier without '-' (the parser reads '-' as '_').
func schemaName(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for i, r := range s {
		switch {
		case r == '_', r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z':
		case r >= '0' && r <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}
