package signature

import (
	"context"
	"encoding"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"time"
)

var (
	timeType          = reflect.TypeFor[time.Time]()
	numberType        = reflect.TypeFor[json.Number]()
	rawMessageType    = reflect.TypeFor[json.RawMessage]()
	textMarshalerType = reflect.TypeFor[encoding.TextMarshaler]()
	contextType       = reflect.TypeFor[context.Context]()
	errorType         = reflect.TypeFor[error]()
)

// FromType derives a signature type from a Go type, following encoding/json:
//
//   - bool → :bool; integer kinds → :int; float kinds → :float; string → :string;
//   - time.Time and other encoding.TextMarshaler types → :string;
//     json.Number → :float; json.RawMessage → :any;
//   - []byte → :string (JSON encodes it as base64); other slices and arrays → [T];
//   - maps with string (or integer, or TextMarshaler) keys → :map, since their
//     keys are data, not declared fields (the value type must still be
//     supported);
//   - the empty interface (any) → :any;
//   - a pointer *T → T? (optional);
//   - a struct → a typed map: exported fields named by their json tag (or the
//     Go name), `json:"-"` skipped, pointer, `omitempty` or `omitzero` fields
//     optional, `json:",string"` scalars → :string, embedded structs without a
//     json name flattened into the parent (a shallower field wins over a
//     deeper one of the same name).
//
// Channels, funcs, complex numbers, unsafe pointers, interfaces other than
// any, recursive types and field names that signature syntax cannot write
// are errors of KindUnsupported naming the Go path:
// "Args.Callback: func type not supported".
func FromType(t reflect.Type) (Type, error) {
	if t == nil {
		return nil, &Error{Kind: KindUnsupported, Msg: "nil type not supported"}
	}
	d := deriver{active: map[reflect.Type]bool{}}
	return d.typ(t, rootPath(t))
}

// For is FromType for the type argument: For[[]Order]().
func For[T any]() (Type, error) { return FromType(reflect.TypeFor[T]()) }

// FromFunc derives a signature from a function value's type. The function may take a context.Context
// first, then at most one args parameter, a struct (or pointer to struct)
// whose fields become the inputs as FromType maps them. It may return a
// result, an error, or (result, error). The output is FromType(result), or
// :any when there is no result.
func FromFunc(fn any) (*Signature, error) {
	ft := reflect.TypeOf(fn)
	if ft == nil || ft.Kind() != reflect.Func {
		return nil, &Error{Kind: KindUnsupported, Msg: "FromFunc needs a func, got " + typeName(ft)}
	}
	ins := make([]reflect.Type, 0, ft.NumIn())
	for i := range ft.NumIn() {
		if i == 0 && ft.In(0) == contextType {
			continue
		}
		ins = append(ins, ft.In(i))
	}
	if len(ins) > 1 || ft.IsVariadic() {
		return nil, &Error{Kind: KindUnsupported, Path: ft.String(), Msg: "want at most one args parameter after the context"}
	}
	outs := make([]reflect.Type, 0, ft.NumOut())
	for i := range ft.NumOut() {
		outs = append(outs, ft.Out(i))
	}
	if n := len(outs); n > 0 && outs[n-1] == errorType {
		outs = outs[:n-1]
	}
	if len(outs) > 1 {
		return nil, &Error{Kind: KindUnsupported, Path: ft.String(), Msg: "want one result, optionally followed by an error"}
	}
	var args, result reflect.Type
	if len(ins) == 1 {
		args = ins[0]
	}
	if len(outs) == 1 {
		result = outs[0]
	}
	return fromTypes(args, result)
}

// ForFunc derives the signature of a typed tool from its args struct and
// result type: the inputs are the fields of Args (a struct or pointer to
// struct; struct{} for none) and the output is FromType(Result).
func ForFunc[Args, Result any]() (*Signature, error) {
	return fromTypes(reflect.TypeFor[Args](), reflect.TypeFor[Result]())
}

func fromTypes(args, result reflect.Type) (*Signature, error) {
	sig := &Signature{Output: Any}
	if args != nil {
		st := args
		if st.Kind() == reflect.Pointer {
			st = st.Elem()
		}
		if st.Kind() != reflect.Struct {
			return nil, &Error{Kind: KindUnsupported, Path: rootPath(args), Msg: "args must be a struct, got " + args.Kind().String()}
		}
		d := deriver{active: map[reflect.Type]bool{}}
		t, err := d.typ(st, rootPath(st))
		if err != nil {
			return nil, err
		}
		if m, ok := t.(Map); ok {
			for _, f := range m.Fields {
				sig.Inputs = append(sig.Inputs, Param(f))
			}
		}
	}
	if result != nil {
		out, err := FromType(result)
		if err != nil {
			return nil, err
		}
		sig.Output = out
	}
	return sig, nil
}

func rootPath(t reflect.Type) string {
	if t.Name() != "" {
		return t.Name()
	}
	return t.String()
}

func typeName(t reflect.Type) string {
	if t == nil {
		return "nil"
	}
	return t.String()
}

type deriver struct {
	active map[reflect.Type]bool // structs being derived, to catch recursion
}

func unsupported(path, msg string) error {
	return &Error{Kind: KindUnsupported, Path: path, Msg: msg}
}

func (d *deriver) typ(t reflect.Type, path string) (Type, error) {
	switch t {
	case timeType:
		return String, nil
	case numberType:
		return Float, nil // a JSON number; :float accepts integers too
	case rawMessageType:
		return Any, nil // raw JSON of any shape
	}
	if t.Kind() != reflect.Pointer && t.Kind() != reflect.Interface &&
		(t.Implements(textMarshalerType) || reflect.PointerTo(t).Implements(textMarshalerType)) {
		return String, nil
	}
	switch k := t.Kind(); {
	case k == reflect.Bool:
		return Bool, nil
	case isIntKind(k):
		return Int, nil
	case k == reflect.Float32 || k == reflect.Float64:
		return Float, nil
	case k == reflect.String:
		return String, nil
	case k == reflect.Slice && t.Elem().Kind() == reflect.Uint8:
		return String, nil
	case k == reflect.Slice || k == reflect.Array:
		elem, err := d.typ(t.Elem(), path+"[]")
		if err != nil {
			return nil, err
		}
		return List{Elem: elem}, nil
	case k == reflect.Map:
		kt := t.Key()
		if kt.Kind() != reflect.String && !isIntKind(kt.Kind()) && !kt.Implements(textMarshalerType) {
			return nil, unsupported(path, "map key type "+kt.String()+" not supported")
		}
		if _, err := d.typ(t.Elem(), path+"[]"); err != nil {
			return nil, err
		}
		return AnyMap, nil
	case k == reflect.Pointer:
		elem, err := d.typ(t.Elem(), path)
		if err != nil {
			return nil, err
		}
		if _, ok := elem.(Optional); ok {
			return elem, nil
		}
		return Optional{Elem: elem}, nil
	case k == reflect.Interface:
		if t.NumMethod() == 0 {
			return Any, nil
		}
		return nil, unsupported(path, "interface type "+t.String()+" not supported")
	case k == reflect.Struct:
		return d.structType(t, path)
	case k == reflect.Func:
		return nil, unsupported(path, "func type not supported")
	case k == reflect.Chan:
		return nil, unsupported(path, "chan type not supported")
	case k == reflect.Complex64 || k == reflect.Complex128:
		return nil, unsupported(path, "complex type not supported")
	}
	return nil, unsupported(path, t.Kind().String()+" type not supported")
}

// structField is a field collected from a struct and its embedded structs.
type structField struct {
	Field
	depth int
}

func (d *deriver) structType(t reflect.Type, path string) (Type, error) {
	if d.active[t] {
		return nil, unsupported(path, "recursive type "+t.String()+" not supported")
	}
	d.active[t] = true
	defer delete(d.active, t)
	var fields []structField
	if err := d.collect(t, path, 0, false, &fields); err != nil {
		return nil, err
	}
	// encoding/json's rule: of the fields sharing a name, the shallowest wins,
	// and when several are equally shallow all of them are dropped.
	type best struct{ depth, count int }
	dominant := map[string]best{}
	for _, f := range fields {
		b, ok := dominant[f.Name]
		switch {
		case !ok || f.depth < b.depth:
			dominant[f.Name] = best{f.depth, 1}
		case f.depth == b.depth:
			dominant[f.Name] = best{b.depth, b.count + 1}
		}
	}
	m := Map{Fields: make([]Field, 0, len(fields))}
	for _, f := range fields {
		if b := dominant[f.Name]; b.depth == f.depth && b.count == 1 {
			m.Fields = append(m.Fields, f.Field)
		}
	}
	return m, nil
}

// collect appends the fields of struct t to out in encoding/json's order,
// flattening embedded structs; depth is the embedding depth.
func (d *deriver) collect(t reflect.Type, path string, depth int, optional bool, out *[]structField) error {
	for i := range t.NumField() {
		sf := t.Field(i)
		tag := sf.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		ft := sf.Type
		fpath := path + "." + sf.Name
		if sf.Anonymous && name == "" {
			et := ft
			if et.Kind() == reflect.Pointer {
				et = et.Elem()
			}
			if et.Kind() == reflect.Struct && et != timeType && !et.Implements(textMarshalerType) && !reflect.PointerTo(et).Implements(textMarshalerType) {
				if d.active[et] {
					return unsupported(fpath, "recursive type "+et.String()+" not supported")
				}
				d.active[et] = true
				err := d.collect(et, fpath, depth+1, optional || ft.Kind() == reflect.Pointer, out)
				delete(d.active, et)
				if err != nil {
					return err
				}
				continue
			}
		}
		if !sf.IsExported() {
			continue
		}
		if name == "" {
			name = sf.Name
		}
		if !IsName(name) {
			return unsupported(fpath, "field name "+strconv.Quote(name)+" cannot be written in a signature")
		}
		typ, err := d.typ(ft, fpath)
		if err != nil {
			return err
		}
		if hasOpt(opts, "string") && isScalar(ft) {
			typ = String
			if ft.Kind() == reflect.Pointer {
				typ = Optional{Elem: String}
			}
		}
		if optional || hasOpt(opts, "omitempty") || hasOpt(opts, "omitzero") {
			if _, ok := typ.(Optional); !ok {
				typ = Optional{Elem: typ}
			}
		}
		*out = append(*out, structField{Field: Field{Name: name, Type: typ}, depth: depth})
	}
	return nil
}

func hasOpt(opts, want string) bool {
	for opts != "" {
		var o string
		o, opts, _ = strings.Cut(opts, ",")
		if o == want {
			return true
		}
	}
	return false
}

func isScalar(t reflect.Type) bool {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	k := t.Kind()
	return k == reflect.Bool || k == reflect.String || isIntKind(k) || k == reflect.Float32 || k == reflect.Float64
}
