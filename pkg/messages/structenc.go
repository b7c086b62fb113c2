package messages

import (
	"encoding"
	"errors"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/vmihailenco/msgpack/v5"
)

// Marshal writes the structs of this package's messages itself, field by
// field, and leaves every other value to the msgpack encoder. The bytes are
// those the encoder writes for the same struct (a map of the fields in
// declaration order, embedded structs inlined, omitempty fields left out
// when empty; TestStructEncoderWritesTheCodecsBytes), without its cost:
// the encoder tests each omitempty field for emptiness by boxing its value
// in an interface, an allocation per field per message.

// wireField is one field of a planned struct as the encoder sees it.
type wireField struct {
	name      string
	index     []int // the path through inlined embedded structs
	omitEmpty bool
	// zeroer is whether the field's type has an IsZero method, which
	// decides its emptiness; known when the plan is made, so that an
	// encode asks reflect (a walk of the type's method table) only for a
	// field of interface type, whose value's type it learns then.
	zeroer zeroerKind
	// scalar is whether the field is a string, bool or number with no
	// encoding of its own, which encodeScalar writes without asking the
	// encoder for the type's encoder (a lookup in a sync.Map per field)
	scalar bool
}

// zeroerKind tells whether a field's type has an IsZero method.
type zeroerKind uint8

const (
	zeroerDynamic zeroerKind = iota // an interface: the value's type decides
	zeroerYes
	zeroerNo
)

// zeroerOf is the zeroerKind of a field of type t.
func zeroerOf(t reflect.Type) zeroerKind {
	switch {
	case t.Kind() == reflect.Interface:
		return zeroerDynamic
	case t.Implements(zeroerType):
		return zeroerYes
	}
	return zeroerNo
}

// wirePlan lists a struct's fields in the order the encoder writes them.
type wirePlan struct{ fields []wireField }

// wirePlans holds the plan of every struct type of the messages; built
// once, then only read.
var wirePlans = planWireTypes(wireRoots...)

// wireRoots are the struct types of the messages.
var wireRoots = []reflect.Type{
	reflect.TypeFor[ApprovalPolicy](), reflect.TypeFor[ApprovalRule](),
	reflect.TypeFor[ApprovalCond](), reflect.TypeFor[Approval](), reflect.TypeFor[Cancel](),
	reflect.TypeFor[Event](), reflect.TypeFor[Limits](), reflect.TypeFor[PromptLimit](),
	reflect.TypeFor[Mission](), reflect.TypeFor[ScriptEntry](), reflect.TypeFor[AgentSpec](),
	reflect.TypeFor[PlanStep](), reflect.TypeFor[RetryPolicy](), reflect.TypeFor[SpawnSpec](),
	reflect.TypeFor[ToolSchema](), reflect.TypeFor[CompiledSpec](), reflect.TypeFor[ObjectRef](),
	reflect.TypeFor[MissionRecord](), reflect.TypeFor[Status](), reflect.TypeFor[MissionSummary](),
	reflect.TypeFor[Step](), reflect.TypeFor[Replayed](), reflect.TypeFor[Fail](),
	reflect.TypeFor[Usage](), reflect.TypeFor[Turn](), reflect.TypeFor[PromptMessage](),
	reflect.TypeFor[ToolCall](), reflect.TypeFor[ToolRequest](), reflect.TypeFor[ToolResponse](),
	reflect.TypeFor[ToolError](), reflect.TypeFor[stepWire](),
}

var (
	mapStringAnyType = reflect.TypeFor[map[string]any]()
	anySliceType     = reflect.TypeFor[[]any]()
	// codecSorted are the maps the encoder writes in key order itself
	// (SetSortMapKeys); encodeSortedMap writes the others.
	codecSorted = map[reflect.Type]bool{
		reflect.TypeFor[map[string]string](): true,
		reflect.TypeFor[map[string]bool]():   true,
	}
	stringSliceType  = reflect.TypeFor[[]string]()
	zeroerType       = reflect.TypeFor[interface{ IsZero() bool }]()
	foreignEncodings = []reflect.Type{
		reflect.TypeFor[msgpack.CustomEncoder](), reflect.TypeFor[msgpack.Marshaler](),
		reflect.TypeFor[encoding.BinaryMarshaler](), reflect.TypeFor[encoding.TextMarshaler](),
		// the encoder inlines an embedded struct only when it decodes as
		// a plain struct too
		reflect.TypeFor[msgpack.CustomDecoder](), reflect.TypeFor[msgpack.Unmarshaler](),
		reflect.TypeFor[encoding.BinaryUnmarshaler](), reflect.TypeFor[encoding.TextUnmarshaler](),
	}
)

// errUnplanned stops the planned encoding of a value it cannot write
// exactly as the encoder would; Marshal then leaves the whole value to the
// encoder.
var errUnplanned = errors.New("messages: value outside the planned encoding")

// planWireTypes plans each root and every struct type of this package its
// fields reach. A type the plan cannot reproduce exactly (tag options other
// than omitempty, a custom encoding, an embedded field whose names clash)
// gets no plan, and neither does a struct holding an omitempty field of
// such a type; the encoder writes those.
func planWireTypes(roots ...reflect.Type) map[reflect.Type]*wirePlan {
	plans := map[reflect.Type]*wirePlan{}
	visiting := map[reflect.Type]bool{}
	var plan func(t reflect.Type) *wirePlan
	var visit func(t reflect.Type)
	visit = func(t reflect.Type) {
		for {
			switch t.Kind() {
			case reflect.Pointer, reflect.Slice, reflect.Array:
				t = t.Elem()
				continue
			case reflect.Map:
				visit(t.Key())
				t = t.Elem()
				continue
			case reflect.Struct:
				plan(t)
			}
			return
		}
	}
	plan = func(t reflect.Type) *wirePlan {
		if p, ok := plans[t]; ok || visiting[t] {
			return p
		}
		if t.Kind() != reflect.Struct || t.PkgPath() != reflect.TypeFor[Mission]().PkgPath() {
			return nil
		}
		visiting[t] = true
		p := planStruct(t, plan, visit)
		plans[t] = p
		return p
	}
	for _, t := range roots {
		plan(t)
	}
	for t, p := range plans {
		if p == nil {
			delete(plans, t)
		}
	}
	return plans
}

// planStruct lists the fields of struct type t as the encoder would; plan
// gives an embedded or nested struct's plan, visit plans the struct types a
// field reaches.
func planStruct(t reflect.Type, plan func(reflect.Type) *wirePlan, visit func(reflect.Type)) *wirePlan {
	for _, enc := range foreignEncodings {
		if t.Implements(enc) || reflect.PointerTo(t).Implements(enc) {
			return nil
		}
	}
	p := &wirePlan{}
	names := map[string]bool{}
	for i := range t.NumField() {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("msgpack"), ",")
		if name == "-" {
			continue
		}
		if f.Name == "_msgpack" || (opts != "" && opts != "omitempty") {
			return nil
		}
		if f.PkgPath != "" && !f.Anonymous {
			continue
		}
		if f.Anonymous {
			et := f.Type
			if et.Kind() == reflect.Pointer {
				et = et.Elem()
			}
			inner := plan(et)
			if f.PkgPath != "" || name != "" || opts != "" || inner == nil {
				return nil
			}
			for _, in := range inner.fields {
				if names[in.name] {
					return nil // the encoder would not inline it
				}
			}
			for _, in := range inner.fields {
				names[in.name] = true
				p.fields = append(p.fields, wireField{name: in.name, index: append([]int{i}, in.index...), omitEmpty: in.omitEmpty, zeroer: in.zeroer, scalar: in.scalar})
			}
			continue
		}
		if name == "" {
			name = f.Name
		}
		if names[name] {
			return nil
		}
		names[name] = true
		visit(f.Type)
		if opts == "omitempty" && f.Type.Kind() == reflect.Struct && !f.Type.Implements(zeroerType) && plan(f.Type) == nil {
			return nil // its emptiness is the encoder's to judge
		}
		p.fields = append(p.fields, wireField{name: name, index: []int{i}, omitEmpty: opts == "omitempty", zeroer: zeroerOf(f.Type), scalar: isScalar(f.Type)})
	}
	return p
}

// marshalPlanned writes v with the plans, or returns errUnplanned when v's
// type has none.
func marshalPlanned(enc *msgpack.Encoder, v any) error {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() || wirePlans[rv.Type().Elem()] == nil {
		return errUnplanned
	}
	return encodePlanned(enc, rv)
}

// encodePlanned writes v: a planned struct (or a pointer to one, or a slice
// of either) field by field, also inside an interface; a time, a
// map[string]any and a []string, which the encoder copies into an
// interface to write, with the encoder's own methods for them; anything
// else through the encoder.
func encodePlanned(enc *msgpack.Encoder, v reflect.Value) error {
	switch v.Type() {
	case timeType:
		if v.CanAddr() {
			return enc.EncodeTime(*v.Addr().Interface().(*time.Time))
		}
	case mapStringAnyType:
		if v.IsNil() {
			return enc.EncodeNil()
		}
		return encodePlainMap(enc, v.Interface().(map[string]any))
	case anySliceType:
		if v.CanAddr() {
			return encodePlainSlice(enc, *v.Addr().Interface().(*[]any))
		}
	case stringSliceType:
		if v.CanAddr() {
			return encodeStrings(enc, *v.Addr().Interface().(*[]string))
		}
	}
	switch v.Kind() {
	case reflect.Interface:
		if v.IsNil() {
			return enc.EncodeNil()
		}
		return encodePlanned(enc, v.Elem())
	case reflect.Pointer:
		if p := wirePlans[v.Type().Elem()]; p != nil {
			if v.IsNil() {
				return enc.EncodeNil()
			}
			return encodeStruct(enc, v.Elem(), p)
		}
	case reflect.Struct:
		if p := wirePlans[v.Type()]; p != nil {
			return encodeStruct(enc, v, p)
		}
	case reflect.Map:
		if v.Type().Key().Kind() == reflect.String && !codecSorted[v.Type()] {
			return encodeSortedMap(enc, v)
		}
	case reflect.Slice:
		et := v.Type().Elem()
		if et.Kind() == reflect.Pointer {
			et = et.Elem()
		}
		if wirePlans[et] != nil {
			if v.IsNil() {
				return enc.EncodeNil()
			}
			if err := enc.EncodeArrayLen(v.Len()); err != nil {
				return err
			}
			for i := range v.Len() {
				if err := encodePlanned(enc, v.Index(i)); err != nil {
					return err
				}
			}
			return nil
		}
	}
	return enc.EncodeValue(v)
}

// encodeSortedMap writes a map with string keys in the order of its keys,
// as the encoder writes map[string]any, string and bool (it leaves the
// order of other maps, such as an agent's sub-agents, to Go's map
// iteration), so equal values give equal bytes.
func encodeSortedMap(enc *msgpack.Encoder, v reflect.Value) error {
	if v.IsNil() {
		return enc.EncodeNil()
	}
	keys := v.MapKeys()
	slices.SortFunc(keys, func(a, b reflect.Value) int { return strings.Compare(a.String(), b.String()) })
	if err := enc.EncodeMapLen(len(keys)); err != nil {
		return err
	}
	for _, k := range keys {
		if err := enc.EncodeString(k.String()); err != nil {
			return err
		}
		if err := encodePlanned(enc, v.MapIndex(k)); err != nil {
			return err
		}
	}
	return nil
}

// Plain data (the arguments, results, contexts and returns the messages
// carry: maps of string keys, slices and scalars) is written with the
// bytes the encoder writes for it, without the encoder's detours: it
// collects a map's keys in a new slice to sort them and writes a slice's
// elements, and every map or slice inside them, through reflect.

// plainKeys is how many keys of a map encodePlainMap sorts on its stack.
const plainKeys = 16

// encodePlainMap writes m as the encoder writes a map[string]any with
// its keys sorted (SetSortMapKeys).
func encodePlainMap(enc *msgpack.Encoder, m map[string]any) error {
	if m == nil {
		return enc.EncodeNil()
	}
	if err := enc.EncodeMapLen(len(m)); err != nil {
		return err
	}
	var stack [plainKeys]string
	keys := stack[:0]
	if len(m) > plainKeys {
		keys = make([]string, 0, len(m))
	}
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if err := enc.EncodeString(k); err != nil {
			return err
		}
		if err := encodePlain(enc, m[k]); err != nil {
			return err
		}
	}
	return nil
}

// encodePlainSlice writes s as the encoder writes a []any.
func encodePlainSlice(enc *msgpack.Encoder, s []any) error {
	if s == nil {
		return enc.EncodeNil()
	}
	if err := enc.EncodeArrayLen(len(s)); err != nil {
		return err
	}
	for _, e := range s {
		if err := encodePlain(enc, e); err != nil {
			return err
		}
	}
	return nil
}

// encodePlain writes v as the encoder does: a map[string]any or []any
// by the two functions above, anything else by the encoder (a scalar
// with its method for the type, with the encoder's settings).
func encodePlain(enc *msgpack.Encoder, v any) error {
	switch x := v.(type) {
	case map[string]any:
		return encodePlainMap(enc, x)
	case []any:
		return encodePlainSlice(enc, x)
	}
	return enc.Encode(v)
}

// encodeStrings writes ss as the encoder writes a []string.
func encodeStrings(enc *msgpack.Encoder, ss []string) error {
	if ss == nil {
		return enc.EncodeNil()
	}
	if err := enc.EncodeArrayLen(len(ss)); err != nil {
		return err
	}
	for _, s := range ss {
		if err := enc.EncodeString(s); err != nil {
			return err
		}
	}
	return nil
}

// encodeStruct writes struct v as a map of the fields p keeps.
func encodeStruct(enc *msgpack.Encoder, v reflect.Value, p *wirePlan) error {
	// which fields are written, judged once: the map's length comes first
	var buf [64]bool
	kept := buf[:0]
	if len(p.fields) > len(buf) {
		kept = make([]bool, 0, len(p.fields))
	}
	n := 0
	for i := range p.fields {
		keep, err := p.fields[i].keep(v)
		if err != nil {
			return err
		}
		kept = append(kept, keep)
		if keep {
			n++
		}
	}
	if err := enc.EncodeMapLen(n); err != nil {
		return err
	}
	for i := range p.fields {
		f := &p.fields[i]
		if !kept[i] {
			continue
		}
		if err := enc.EncodeString(f.name); err != nil {
			return err
		}
		fv := fieldOf(v, f.index)
		var err error
		if f.scalar {
			err = encodeScalar(enc, fv)
		} else {
			err = encodePlanned(enc, fv)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// isScalar reports whether values of t are a string, bool or number the
// encoder writes by their kind alone: t and *t have no encoding of their
// own.
func isScalar(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.String, reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
	default:
		return false
	}
	for _, enc := range foreignEncodings {
		if t.Implements(enc) || reflect.PointerTo(t).Implements(enc) {
			return false
		}
	}
	return true
}

// encodeScalar writes v, of a type isScalar accepts, with the encoder's
// method its encoder for v's kind calls (with UseCompactInts, which
// MarshalTo sets, every integer kind is written compact).
func encodeScalar(enc *msgpack.Encoder, v reflect.Value) error {
	switch v.Kind() {
	case reflect.String:
		return enc.EncodeString(v.String())
	case reflect.Bool:
		return enc.EncodeBool(v.Bool())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return enc.EncodeInt(v.Int())
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return enc.EncodeUint(v.Uint())
	case reflect.Float32:
		return enc.EncodeFloat32(float32(v.Float()))
	case reflect.Float64:
		return enc.EncodeFloat64(v.Float())
	}
	return enc.EncodeValue(v)
}

// keep reports whether the encoder writes f of struct v: not when a nil
// embedded pointer holds it, nor when it is omitempty and empty.
func (f *wireField) keep(v reflect.Value) (bool, error) {
	fv := fieldOf(v, f.index)
	if !fv.IsValid() {
		return false, nil
	}
	if !f.omitEmpty {
		return true, nil
	}
	empty, err := isEmptyValue(fv, f.zeroer)
	return !empty, err
}

// fieldOf follows index from struct v; the zero Value when a nil embedded
// pointer is on the way.
func fieldOf(v reflect.Value, index []int) reflect.Value {
	for i, x := range index {
		if i > 0 && v.Kind() == reflect.Pointer {
			if v.IsNil() {
				return reflect.Value{}
			}
			v = v.Elem()
		}
		v = v.Field(x)
	}
	return v
}

// isEmptyValue is the encoder's test of an omitempty field, which calls
// IsZero where the value has it, without boxing a value that has not.
func isEmptyValue(v reflect.Value, z zeroerKind) (bool, error) {
	kind := v.Kind()
	for kind == reflect.Interface {
		if v.IsNil() {
			return true, nil
		}
		v = v.Elem()
		kind = v.Kind()
		z = zeroerDynamic
	}
	if z == zeroerYes || (z == zeroerDynamic && v.Type().Implements(zeroerType)) {
		switch {
		case nilable(kind) && v.IsNil():
			return true, nil
		case v.CanAddr():
			// the method set of *T holds T's: no copy of the value
			return v.Addr().Interface().(interface{ IsZero() bool }).IsZero(), nil
		}
		return v.Interface().(interface{ IsZero() bool }).IsZero(), nil
	}
	switch kind {
	case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
		return v.Len() == 0, nil
	case reflect.Struct:
		p := wirePlans[v.Type()]
		if p == nil {
			return false, errUnplanned
		}
		for i := range p.fields {
			keep, err := p.fields[i].keep(v)
			if keep || err != nil {
				return false, err
			}
		}
		return true, nil
	case reflect.Bool:
		return !v.Bool(), nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return v.Int() == 0, nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return v.Uint() == 0, nil
	case reflect.Float32, reflect.Float64:
		return v.Float() == 0, nil
	case reflect.Pointer:
		return v.IsNil(), nil
	}
	return false, nil
}

func nilable(kind reflect.Kind) bool {
	switch kind {
	case reflect.Chan, reflect.Func, reflect.Interface, reflect.Map, reflect.Pointer, reflect.Slice:
		return true
	}
	return false
}
