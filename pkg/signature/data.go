package signature

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// FromData builds a signature from its data form, a Malli schema written
// as plain data (decoded YAML or JSON: strings, numbers, booleans, []any,
// map[string]any), as a mission file carries it:
//
//	[":=>", [":catn", ["text", ":string"]], [":map", ["status", [":enum", "low", "medium", "high"]]]]
//
// is (text :string) -> {status "low" | "medium" | "high"}. Keywords are
// strings starting with ":". The forms:
//
//   - ":string", ":int", ":float" (or ":double"), ":bool" (or ":boolean"),
//     ":keyword", ":any", ":map" → the primitive;
//   - [":int", {"min": 0, "max": 100}], [":string", {"min": 1, "max": 80}]
//     → a refinement (a property map may follow any primitive that takes
//     one; keys with or without ":");
//   - [":re", "^[A-Z]+$"] → :string(pattern "^[A-Z]+$");
//   - [":enum", "low", "high"] → "low" | "high" (a keyword value ":low"
//     is the string "low", as keywords cross the host boundary);
//   - [":or", A, B] → A | B; [":maybe", T] → T?;
//   - [":and", T, [":>", 0], [":<", 100], [":re", "x"], ...] → T refined by
//     each: [:>= n] and [:<= n] are min and max, [:> n] and [:< n] on :int
//     are min n+1 and max n-1 (exclusive bounds on :float are an error);
//   - [":vector", T], [":sequential", T], [":set", T] → [T], with an
//     optional property map before T: [":vector", {"min": 1}, T];
//   - [":map", ["id", ":int"], ["email", {"optional": true}, ":string"]]
//     → {id :int, email :string?}; [":map-of", K, V] → :map;
//   - [":=>", [":catn", ["name", T], ...], R] → (name T, ...) -> R; a
//     schema that is not [":=>" ...] is the output alone.
//
// Inputs need names, so Malli's positional [":cat", T, ...] is accepted
// only empty ([":=>", [":cat"], R] has no inputs). An error is an *Error
// of KindSyntax whose Path is the place in the data ("[2][1][1]") and
// whose message names the problem; FromData does not panic on any input
// and nests at most 100 levels, like Parse.
func FromData(v any) (*Signature, error) {
	d := &dataConv{}
	if l, ok := v.([]any); ok && len(l) > 0 && isKeyword(l[0], "=>") {
		if len(l) != 3 {
			return nil, d.errf("", "[:=> inputs output] takes 2 schemas, got %d", len(l)-1)
		}
		ins, err := d.inputs(l[1], "[1]")
		if err != nil {
			return nil, err
		}
		out, err := d.typ(l[2], "[2]", 0)
		if err != nil {
			return nil, err
		}
		return &Signature{Inputs: ins, Output: out}, nil
	}
	out, err := d.typ(v, "", 0)
	if err != nil {
		return nil, err
	}
	return &Signature{Output: out}, nil
}

type dataConv struct{}

func (d *dataConv) errf(path, format string, args ...any) *Error {
	if path == "" {
		path = "signature"
	}
	return &Error{Kind: KindSyntax, Path: path, Msg: fmt.Sprintf(format, args...)}
}

// keyword returns the name of a keyword (":int" → "int").
func keyword(v any) (string, bool) {
	s, ok := v.(string)
	if !ok || len(s) < 2 || s[0] != ':' {
		return "", false
	}
	return s[1:], true
}

func isKeyword(v any, name string) bool {
	k, ok := keyword(v)
	return ok && k == name
}

// dataWord names a data value in messages.
func dataWord(v any) string {
	switch x := v.(type) {
	case string:
		return strconv.Quote(x)
	case []any:
		return "a list"
	case map[string]any:
		return "a map"
	case nil:
		return "null"
	}
	return fmt.Sprint(v)
}

func (d *dataConv) inputs(v any, path string) ([]Param, error) {
	l, ok := v.([]any)
	if !ok || len(l) == 0 {
		return nil, d.errf(path, "expected the inputs as [:catn [name schema] ...], got %s", dataWord(v))
	}
	head, _ := keyword(l[0])
	switch head {
	case "cat":
		if len(l) > 1 {
			return nil, d.errf(path, "inputs need names: write [:catn [\"name\" schema] ...] instead of [:cat schema ...]")
		}
		return []Param{}, nil
	case "catn":
	default:
		return nil, d.errf(path, "expected the inputs as [:catn [name schema] ...], got %s", dataWord(l[0]))
	}
	params := make([]Param, 0, len(l)-1)
	for i, e := range l[1:] {
		p := fmt.Sprintf("%s[%d]", path, i+1)
		name, t, err := d.entry(e, p, 0)
		if err != nil {
			return nil, err
		}
		for _, q := range params {
			if q.Name == name {
				return nil, d.errf(p, "duplicate input %q", name)
			}
		}
		params = append(params, Param{Name: name, Type: t})
	}
	return params, nil
}

// entry converts a [name schema] or [name {props} schema] entry of a
// :map or :catn.
func (d *dataConv) entry(v any, path string, depth int) (string, Type, error) {
	l, ok := v.([]any)
	if !ok || len(l) < 2 || len(l) > 3 {
		return "", nil, d.errf(path, "expected an entry [name schema] or [name {:optional true} schema], got %s", dataWord(v))
	}
	raw, ok := l[0].(string)
	name := strings.TrimPrefix(raw, ":")
	name = strings.ReplaceAll(name, "-", "_")
	if !ok || !IsName(name) {
		return "", nil, d.errf(path+"[0]", "%s is not a name (a letter or _ then letters, digits, _ or -)", dataWord(l[0]))
	}
	optional := false
	if len(l) == 3 {
		props, err := d.props(l[1], path+"[1]", "optional")
		if err != nil {
			return "", nil, err
		}
		if o, has := props["optional"]; has {
			b, isBool := o.(bool)
			if !isBool {
				return "", nil, d.errf(path+"[1]", "optional must be true or false, got %s", dataWord(o))
			}
			optional = b
		}
	}
	t, err := d.typ(l[len(l)-1], fmt.Sprintf("%s[%d]", path, len(l)-1), depth)
	if err != nil {
		return "", nil, err
	}
	if optional {
		t = optional1(t)
	}
	return name, t, nil
}

func optional1(t Type) Type {
	if _, ok := t.(Optional); ok {
		return t
	}
	return Optional{Elem: t}
}

// props reads a property map, keys with or without ":", allowing only
// the names given.
func (d *dataConv) props(v any, path string, allowed ...string) (map[string]any, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, d.errf(path, "expected a property map, got %s", dataWord(v))
	}
	out := make(map[string]any, len(m))
	for k, x := range m {
		name := strings.TrimPrefix(k, ":")
		known := false
		for _, a := range allowed {
			known = known || a == name
		}
		switch {
		case known:
		case len(allowed) == 0:
			return nil, d.errf(path, "unknown property %q (a :map takes none; validation_mode strict rejects undeclared fields)", k)
		default:
			return nil, d.errf(path, "unknown property %q (want %s)", k, strings.Join(allowed, ", "))
		}
		out[name] = x
	}
	return out, nil
}

// dataPrim maps a Malli type keyword to its primitive.
func dataPrim(name string) (Prim, bool) {
	switch name {
	case "double":
		return Float, true
	case "boolean":
		return Bool, true
	}
	return primByName(name)
}

func (d *dataConv) typ(v any, path string, depth int) (Type, error) {
	if depth > maxDepth {
		return nil, d.errf(path, "nesting too deep (more than %d levels)", maxDepth)
	}
	switch x := v.(type) {
	case string:
		name, ok := keyword(x)
		if !ok {
			return nil, d.errf(path, "expected a schema, got the string %s (types are keywords, as \":int\")", strconv.Quote(x))
		}
		if p, ok := dataPrim(name); ok {
			return p, nil
		}
		return nil, d.errf(path, "unknown schema %s", strconv.Quote(x))
	case []any:
		return d.form(x, path, depth)
	}
	return nil, d.errf(path, "expected a schema (a keyword such as \":int\" or a list such as [\":enum\", ...]), got %s", dataWord(v))
}

func (d *dataConv) form(l []any, path string, depth int) (Type, error) {
	if len(l) == 0 {
		return nil, d.errf(path, "empty schema []")
	}
	head, ok := keyword(l[0])
	if !ok {
		return nil, d.errf(path+"[0]", "expected a schema keyword, got %s", dataWord(l[0]))
	}
	at := func(i int) string { return fmt.Sprintf("%s[%d]", path, i) }
	args := l[1:]
	switch head {
	case "enum":
		if len(args) > 0 {
			if _, isMap := args[0].(map[string]any); isMap {
				args = args[1:]
			}
		}
		if len(args) == 0 {
			return nil, d.errf(path, "[:enum] needs at least one value")
		}
		var alts []Type
		for i, a := range args {
			lit, ok := dataLiteral(a)
			if !ok {
				return nil, d.errf(at(len(l)-len(args)+i), "an enum value is a string, number or boolean, got %s", dataWord(a))
			}
			alts = append(alts, Enum{Values: []any{lit}})
		}
		t, dup := newUnion(alts)
		if dup != "" {
			return nil, d.errf(path, "value %s listed twice", dup)
		}
		return t, nil
	case "or", "orn":
		if len(args) < 2 {
			return nil, d.errf(path, "[:%s] needs at least two schemas", head)
		}
		alts := make([]Type, len(args))
		for i, a := range args {
			if head == "orn" { // [:orn [:name schema] ...]
				e, ok := a.([]any)
				if !ok || len(e) != 2 {
					return nil, d.errf(at(i+1), "expected [name schema], got %s", dataWord(a))
				}
				a = e[1]
			}
			t, err := d.typ(a, at(i+1), depth+1)
			if err != nil {
				return nil, err
			}
			alts[i] = t
		}
		t, dup := newUnion(alts)
		if dup != "" {
			return nil, d.errf(path, "value %s listed twice", dup)
		}
		return t, nil
	case "maybe":
		if len(args) != 1 {
			return nil, d.errf(path, "[:maybe schema] takes one schema, got %d", len(args))
		}
		t, err := d.typ(args[0], at(1), depth+1)
		if err != nil {
			return nil, err
		}
		return optional1(t), nil
	case "re":
		if len(args) != 1 {
			return nil, d.errf(path, "[:re pattern] takes one pattern, got %d values", len(args))
		}
		src, ok := args[0].(string)
		if !ok {
			return nil, d.errf(at(1), "a pattern is a string, got %s", dataWord(args[0]))
		}
		r, err := Refine(String, RefineSpec{Pattern: &src})
		if err != nil {
			return nil, d.errf(at(1), "%s", err.Error())
		}
		return r, nil
	case "and":
		return d.and(l, path, depth)
	case "vector", "sequential", "set":
		var spec RefineSpec
		if len(args) == 2 {
			var err error
			if spec, err = d.bounds(args[0], at(1)); err != nil {
				return nil, err
			}
			args = args[1:]
		}
		if len(args) != 1 {
			return nil, d.errf(path, "[:%s schema] takes one schema (after an optional property map)", head)
		}
		elem, err := d.typ(args[0], at(len(l)-1), depth+1)
		if err != nil {
			return nil, err
		}
		return d.refine(List{Elem: elem}, spec, path)
	case "map":
		if len(args) > 0 {
			if _, isMap := args[0].(map[string]any); isMap {
				if _, err := d.props(args[0], at(1)); err != nil {
					return nil, err
				}
				args = args[1:]
			}
		}
		m := Map{Fields: make([]Field, 0, len(args))}
		for i, e := range args {
			p := at(len(l) - len(args) + i)
			name, t, err := d.entry(e, p, depth+1)
			if err != nil {
				return nil, err
			}
			if _, dup := m.Field(name); dup {
				return nil, d.errf(p, "duplicate field %q", name)
			}
			m.Fields = append(m.Fields, Field{Name: name, Type: t})
		}
		return m, nil
	case "map-of":
		if len(args) != 2 {
			return nil, d.errf(path, "[:map-of key value] takes two schemas, got %d", len(args))
		}
		for i, a := range args {
			if _, err := d.typ(a, at(i+1), depth+1); err != nil {
				return nil, err
			}
		}
		return AnyMap, nil
	case "=>":
		return nil, d.errf(path, "[:=> ...] is a function schema and stands only at the top")
	}
	p, ok := dataPrim(head)
	if !ok {
		return nil, d.errf(path+"[0]", "unknown schema %s", strconv.Quote(l[0].(string)))
	}
	switch len(args) {
	case 0:
		return p, nil
	case 1:
		spec, err := d.bounds(args[0], at(1))
		if err != nil {
			return nil, err
		}
		return d.refine(p, spec, path)
	}
	return nil, d.errf(path, "[%s {properties}] takes one property map, got %d values", l[0], len(args))
}

// bounds reads a {min, max} property map.
func (d *dataConv) bounds(v any, path string) (RefineSpec, error) {
	props, err := d.props(v, path, "min", "max")
	if err != nil {
		return RefineSpec{}, err
	}
	var spec RefineSpec
	for name, x := range props {
		f, ok := dataNumber(x)
		if !ok {
			return RefineSpec{}, d.errf(path, "%s must be a number, got %s", name, dataWord(x))
		}
		if name == "min" {
			spec.Min = &f
		} else {
			spec.Max = &f
		}
	}
	return spec, nil
}

// refine applies spec to t, when it says anything.
func (d *dataConv) refine(t Type, spec RefineSpec, path string) (Type, error) {
	if spec.Min == nil && spec.Max == nil && spec.Pattern == nil {
		return t, nil
	}
	r, err := Refine(t, spec)
	if err != nil {
		return nil, d.errf(path, "%s", err.Error())
	}
	return r, nil
}

// and converts [:and T c ...]: T, refined by comparators and patterns.
func (d *dataConv) and(l []any, path string, depth int) (Type, error) {
	if len(l) < 2 {
		return nil, d.errf(path, "[:and schema ...] needs a schema")
	}
	base, err := d.typ(l[1], path+"[1]", depth+1)
	if err != nil {
		return nil, err
	}
	var spec RefineSpec
	if r, ok := base.(Refined); ok {
		base, spec.Min, spec.Max = r.Base, r.Min, r.Max
		if r.Pattern != nil {
			src := r.Pattern.String()
			spec.Pattern = &src
		}
	}
	for i, c := range l[2:] {
		p := fmt.Sprintf("%s[%d]", path, i+2)
		e, ok := c.([]any)
		if !ok || len(e) != 2 {
			return nil, d.errf(p, "expected [:> n], [:>= n], [:< n], [:<= n] or [:re pattern], got %s", dataWord(c))
		}
		op, _ := keyword(e[0])
		if op == "re" {
			src, ok := e[1].(string)
			if !ok {
				return nil, d.errf(p+"[1]", "a pattern is a string, got %s", dataWord(e[1]))
			}
			spec.Pattern = &src
			continue
		}
		f, ok := dataNumber(e[1])
		if !ok {
			return nil, d.errf(p+"[1]", "expected a number, got %s", dataWord(e[1]))
		}
		exclusive := op == ">" || op == "<"
		if exclusive && base != Int {
			return nil, d.errf(p, "[:%s n] is an exclusive bound, which only :int takes (write [:%s= n])", op, op)
		}
		switch op {
		case ">", ">=":
			if exclusive {
				f = math.Floor(f) + 1
			}
			if spec.Min == nil || f > *spec.Min {
				spec.Min = &f
			}
		case "<", "<=":
			if exclusive {
				f = math.Ceil(f) - 1
			}
			if spec.Max == nil || f < *spec.Max {
				spec.Max = &f
			}
		default:
			return nil, d.errf(p, "expected [:> n], [:>= n], [:< n], [:<= n] or [:re pattern], got %s", dataWord(e[0]))
		}
	}
	return d.refine(base, spec, path)
}

// dataLiteral returns an enum value of the data form: a string (a
// keyword ":low" is "low"), an integer, a finite float or a boolean.
func dataLiteral(v any) (any, bool) {
	if s, ok := v.(string); ok {
		if k, isKw := keyword(s); isKw {
			return k, true
		}
		return s, true
	}
	switch v.(type) {
	case float64, float32:
		f, ok := dataNumber(v)
		return f, ok
	}
	return literalOf(v)
}

func dataNumber(v any) (float64, bool) {
	lit, ok := literalOf(v)
	if !ok {
		return 0, false
	}
	switch x := lit.(type) {
	case int64:
		return float64(x), true
	case float64:
		return x, !math.IsInf(x, 0) && !math.IsNaN(x)
	}
	return 0, false
}
