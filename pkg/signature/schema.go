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
//   - T? → schema(T) with "null" added to its type (nullable), and the field
//     left out of required.
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
		return s
	}
	return map[string]any{}
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
