package signature

// JSONSchema returns a JSON Schema for t as plain data, ready for
// encoding/json (which sorts object keys, so the encoding is deterministic):
//
//   - :string and :keyword → {"type": "string"}; :int → "integer";
//     :float → "number"; :bool → "boolean"; :any → {}; :map → {"type": "object"};
//   - [T] → {"type": "array", "items": schema(T)};
//   - {a T, ...} → {"type": "object", "properties": {...}, "required": [...]}
//     where required lists the non-optional fields in declaration order
//     (a []string, omitted when empty);
//   - T? → schema(T) with "null" added to its type (nullable), to its enum
//     or to its anyOf, and the field left out of required;
//   - "a" | "b" → {"type": "string", "enum": ["a", "b"]} ("type" only when
//     the values share one); A | B → {"anyOf": [schema(A), schema(B)]};
//   - refinements → minimum/maximum (:int, :float), minLength/maxLength
//     and pattern (:string, :keyword), minItems/maxItems (lists).
//
// Firewalled fields are included; pass Public(t) for a schema a model sees.
// additionalProperties is not set, matching the lenient default mode.
func JSONSchema(t Type) map[string]any {
	switch t := t.(type) {
	case Prim:
		switch t {
		case String, Keyword:
			return map[string]any{"type": "string"}
		case Int:
			return map[string]any{"type": "integer"}
		case Float:
			return map[string]any{"type": "number"}
		case Bool:
			return map[string]any{"type": "boolean"}
		case AnyMap:
			return map[string]any{"type": "object"}
		}
		return map[string]any{}
	case List:
		return map[string]any{"type": "array", "items": JSONSchema(orAny(t.Elem))}
	case Map:
		return objectSchema(t)
	case Optional:
		s := JSONSchema(orAny(t.Elem))
		if typ, ok := s["type"].(string); ok {
			s["type"] = []any{typ, "null"}
		}
		if enum, ok := s["enum"].([]any); ok {
			s["enum"] = append(enum, nil)
		}
		if alts, ok := s["anyOf"].([]any); ok {
			s["anyOf"] = append(alts, map[string]any{"type": "null"})
		}
		return s
	case Enum:
		return enumSchema(t)
	case Union:
		alts := make([]any, len(t.Alts))
		for i, a := range t.Alts {
			alts[i] = JSONSchema(a)
		}
		return map[string]any{"anyOf": alts}
	case Refined:
		return refinedSchema(t)
	}
	return map[string]any{}
}

// enumSchema is {"enum": [...]}, with the values' "type" when they share
// one (integers and floats share "number").
func enumSchema(e Enum) map[string]any {
	vals := make([]any, len(e.Values))
	copy(vals, e.Values)
	s := map[string]any{"enum": vals}
	typ := ""
	for i, v := range e.Values {
		var vt string
		switch v.(type) {
		case string:
			vt = "string"
		case int64:
			vt = "integer"
		case float64:
			vt = "number"
		case bool:
			vt = "boolean"
		}
		switch {
		case i == 0:
			typ = vt
		case typ == vt:
		case typ == "integer" && vt == "number" || typ == "number" && vt == "integer":
			typ = "number"
		default:
			return s
		}
	}
	s["type"] = typ
	return s
}

// refinedSchema is the base's schema with the constraints as JSON
// Schema's keywords: minimum/maximum, minLength/maxLength/pattern or
// minItems/maxItems.
func refinedSchema(r Refined) map[string]any {
	s := JSONSchema(orAny(r.Base))
	lo, hi := "minimum", "maximum"
	switch refineKind(r.Base) {
	case "length":
		lo, hi = "minLength", "maxLength"
	case "count":
		lo, hi = "minItems", "maxItems"
	}
	bound := func(f float64) any {
		if r.Base == Float {
			return f
		}
		return int64(f)
	}
	if r.Min != nil {
		s[lo] = bound(*r.Min)
	}
	if r.Max != nil {
		s[hi] = bound(*r.Max)
	}
	if r.Pattern != nil {
		s["pattern"] = r.Pattern.String()
	}
	return s
}

func objectSchema(m Map) map[string]any {
	props := make(map[string]any, len(m.Fields))
	var required []string
	for _, f := range m.Fields {
		props[f.Name] = JSONSchema(orAny(f.Type))
		if fieldRequired(f.Type) {
			required = append(required, f.Name)
		}
	}
	s := map[string]any{"type": "object", "properties": props}
	if len(required) > 0 {
		s["required"] = required
	}
	return s
}

// JSONSchema returns the JSON Schema of the output type (see the JSONSchema
// function), firewalled fields included.
func (s *Signature) JSONSchema() map[string]any { return JSONSchema(orAny(s.Output)) }

// InputSchema returns the JSON Schema of a tool's parameters object: an
// object with one property per input and "required" listing the non-optional
// inputs. A signature without inputs gives {"type": "object", "properties": {}}.
// Firewalled inputs are kept, since the caller has to supply them.
func (s *Signature) InputSchema() map[string]any { return objectSchema(s.inputsMap()) }
