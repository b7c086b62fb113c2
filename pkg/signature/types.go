package signature

import "strings"

// Type is a signature type: one of Prim, List, Map, Optional, Enum, Union
// or Refined. The set is sealed (an unexported method keeps other packages
// from adding types), so a type switch over those seven is exhaustive.
//
// Types are immutable values once built; they are safe to share between
// goroutines. String returns the canonical source form, which parses back to an
// equal type.
type Type interface {
	// String returns the canonical signature syntax of the type, such as
	// "[{id :int, name :string?}]".
	String() string
	isType()
}

// Prim is a primitive type: :string, :int, :float, :bool, :keyword, :any or
// :map. The zero value is not a valid Prim.
type Prim uint8

// The primitive types.
const (
	// String is :string, a Go string.
	String Prim = iota + 1
	// Int is :int, any Go integer kind (int64 is what the system produces).
	Int
	// Float is :float, a Go float32/float64; integers are accepted too.
	Float
	// Bool is :bool, a Go bool.
	Bool
	// Keyword is :keyword; keywords cross the host boundary as strings, so a
	// string is accepted.
	Keyword
	// Any is :any: every value, nil included.
	Any
	// AnyMap is :map, a map with any keys and values (its fields are not checked).
	AnyMap
)

var primNames = [...]string{
	String:  ":string",
	Int:     ":int",
	Float:   ":float",
	Bool:    ":bool",
	Keyword: ":keyword",
	Any:     ":any",
	AnyMap:  ":map",
}

// primByName maps a keyword name without the colon to its Prim.
func primByName(name string) (Prim, bool) {
	switch name {
	case "string":
		return String, true
	case "int":
		return Int, true
	case "float":
		return Float, true
	case "bool":
		return Bool, true
	case "keyword":
		return Keyword, true
	case "any":
		return Any, true
	case "map":
		return AnyMap, true
	}
	return 0, false
}

// String returns the keyword form of the primitive, such as ":int".
func (p Prim) String() string {
	if int(p) < len(primNames) && p != 0 {
		return primNames[p]
	}
	return ":invalid"
}

func (Prim) isType() {}

// List is a list type [Elem]: a Go []any (or any slice or array) whose
// elements all have type Elem.
type List struct {
	// Elem is the element type; nil reads as :any.
	Elem Type
}

// String returns the canonical form "[elem]".
func (l List) String() string { return typeString(l) }

// typeString is the canonical form of a composite type.
func typeString(t Type) string {
	var b strings.Builder
	writeType(&b, t)
	return b.String()
}

func (List) isType() {}

// Field is one named field of a Map type.
type Field struct {
	// Name is the key of the field in a map value. Names that start with "_"
	// are firewalled (see IsFirewalled).
	Name string
	// Type is the field's type; an Optional type makes the field optional (nil
	// or absent). nil reads as :any.
	Type Type
}

// Map is a map type with typed fields, written {id :int, name :string}. A value
// is a Go map[string]any (or any map with string keys). Fields keep their
// declaration order, which is the order of String, JSON Schema properties and
// validation errors.
type Map struct {
	// Fields are the declared fields in source order; names are unique.
	Fields []Field
}

// Field returns the field named name and whether there is one.
func (m Map) Field(name string) (Field, bool) {
	for _, f := range m.Fields {
		if f.Name == name {
			return f, true
		}
	}
	return Field{}, false
}

// String returns the canonical form "{a :int, b [:string]}".
func (m Map) String() string { return typeString(m) }

func (Map) isType() {}

// Optional marks a type as optional, written with a "?" suffix (:int?, [:int]?,
// {a :int}?). An optional value may be nil; an optional map field may also be
// absent. Elem is never itself Optional in a parsed type.
type Optional struct {
	// Elem is the type of a present, non-nil value; nil reads as :any.
	Elem Type
}

// String returns the canonical form, Elem followed by "?".
func (o Optional) String() string { return typeString(o) }

func (Optional) isType() {}

// fieldRequired reports whether a map field of type t must be present:
// every field but an Optional one (a :any field takes nil, but must be
// there).
func fieldRequired(t Type) bool {
	_, opt := t.(Optional)
	return !opt
}

// IsOptional reports whether t accepts nil: an Optional type, or :any.
// (Only an Optional map field may be absent.)
func IsOptional(t Type) bool {
	switch t := t.(type) {
	case Optional:
		return true
	case Prim:
		return t == Any
	case nil:
		return true
	}
	return false
}

// unwrapOptional returns the element of an Optional type, or t itself.
func unwrapOptional(t Type) Type {
	if o, ok := t.(Optional); ok {
		return orAny(o.Elem)
	}
	return orAny(t)
}

func orAny(t Type) Type {
	if t == nil {
		return Any
	}
	return t
}

// writeType writes the canonical form of t.
func writeType(b *strings.Builder, t Type) {
	switch t := t.(type) {
	case nil:
		b.WriteString(":any")
	case Prim:
		b.WriteString(t.String())
	case List:
		b.WriteByte('[')
		writeType(b, t.Elem)
		b.WriteByte(']')
	case Map:
		writeFields(b, '{', '}', t.Fields)
	case Optional:
		writeType(b, t.Elem)
		if _, ok := t.Elem.(Optional); !ok {
			b.WriteByte('?')
		}
	case Enum, Union, Refined:
		writeRich(b, t)
	}
}

// Param is one named input of a Signature.
type Param struct {
	// Name is the input's name: the key in the args map and the ctx/ name in a
	// program.
	Name string
	// Type is the input's type; Optional makes the input optional.
	Type Type
}

// Signature is a parsed contract: named inputs and an output type. Build one
// with Parse (or derive one with FromFunc); a Signature is read-only after
// that and safe for concurrent use.
//
// The zero value has no inputs and a nil Output, which reads as :any.
type Signature struct {
	// Inputs are the named parameters in source order; empty for an
	// output-only signature ("{count :int}" or "() -> {count :int}").
	Inputs []Param
	// ExtraInputs says a tool call may pass arguments the inputs do not
	// declare (written "..." last in the inputs: "(query :string, ...)").
	// Without it, a tool call passing an undeclared argument fails with
	// "unknown argument" and the closest input (CoerceInputs).
	ExtraInputs bool
	// Output is the type of the result.
	Output Type
}

// Input returns the input named name and whether there is one.
func (s *Signature) Input(name string) (Param, bool) {
	for _, p := range s.Inputs {
		if p.Name == name {
			return p, true
		}
	}
	return Param{}, false
}

// String returns the canonical form, always with an input list:
// "(query :string, limit :int?) -> [{id :int}]" or "() -> {count :int}".
// Parsing it gives back a signature that prints the same.
func (s *Signature) String() string {
	var b strings.Builder
	if s.ExtraInputs {
		writeFields(&b, '(', ',', s.Inputs)
		if len(s.Inputs) > 0 {
			b.WriteByte(' ')
		} else {
			b.Reset()
			b.WriteByte('(')
		}
		b.WriteString("...)")
	} else {
		writeFields(&b, '(', ')', s.Inputs)
	}
	b.WriteString(" -> ")
	writeType(&b, s.Output)
	return b.String()
}

// InputsString returns the canonical form of the input list alone, such as
// "(query :string, limit :int?)".
func (s *Signature) InputsString() string {
	var b strings.Builder
	writeFields(&b, '(', ')', s.Inputs)
	return b.String()
}

// writeFields writes "name type" pairs joined by ", " between open and
// end: a map type's fields or a signature's inputs.
func writeFields[F Field | Param](b *strings.Builder, open, end byte, fs []F) {
	b.WriteByte(open)
	for i, f := range fs {
		if i > 0 {
			b.WriteString(", ")
		}
		f := Field(f)
		b.WriteString(f.Name)
		b.WriteByte(' ')
		writeType(b, f.Type)
	}
	b.WriteByte(end)
}

// inputsMap returns the inputs as a Map type, for validation and schemas.
func (s *Signature) inputsMap() Map {
	fs := make([]Field, len(s.Inputs))
	for i, p := range s.Inputs {
		fs[i] = Field(p)
	}
	return Map{Fields: fs}
}
