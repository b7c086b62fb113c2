package signature

import (
	"fmt"
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
// enum and const → the type of their values. Keywords that only narrow a
// value (format, minimum, pattern, enum's set, …) are not checked; the
// tool itself still validates. An input schema with additionalProperties
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
		} else {
			c.note(path+".type", "a value of several types (%s) is not supported; typed :any", strings.Join(rest, ", "))
			return Prim(Any)
		}
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
	if len(kept) != 1 {
		c.note(path, "%s with %d alternatives is not supported; typed :any", key, len(kept))
		return Prim(Any)
	}
	t := c.typ(kept[0], fmt.Sprintf("%s.%s[0]", path, key), depth+1)
	if nullable {
		return optional(t)
	}
	return t
}

func (c *schemaConv) single(name string, s map[string]any, path string, depth int) Type {
	switch name {
	case "string":
		return Prim(String)
	case "integer":
		return Prim(Int)
	case "number":
		return Prim(Float)
	case "boolean":
		return Prim(Bool)
	case "array":
		items, ok := s["items"]
		if !ok || items == nil {
			return List{Elem: Prim(Any)}
		}
		if _, isList := items.([]any); isList {
			c.note(path+".items", "tuple items are not supported; typed [:any]")
			return List{Elem: Prim(Any)}
		}
		return List{Elem: c.typ(items, path+".items", depth+1)}
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
