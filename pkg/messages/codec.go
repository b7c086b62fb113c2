package messages

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"reflect"
	"sync"

	"github.com/vmihailenco/msgpack/v5"
	"github.com/vmihailenco/msgpack/v5/msgpcode"
)

// marshalBuffers holds the buffers Marshal encodes into: what it returns is
// a copy of the exact size, one allocation however the buffer grew.
var marshalBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// maxPooledBuffer bounds the buffers Marshal keeps for reuse: one grown by
// a large message is left to the collector.
const maxPooledBuffer = 64 << 10

// Marshal encodes v as msgpack with sorted map keys and compact integers, so
// equal values give equal bytes (maps with string keys of any value type in
// this package's messages; other values as the encoder sorts them).
func Marshal(v any) ([]byte, error) {
	buf := marshalBuffers.Get().(*bytes.Buffer)
	buf.Reset()
	defer func() {
		if buf.Cap() <= maxPooledBuffer {
			marshalBuffers.Put(buf)
		}
	}()
	if err := MarshalTo(buf, v); err != nil {
		return nil, err
	}
	return bytes.Clone(buf.Bytes()), nil
}

// MarshalTo appends v's encoding, the bytes Marshal returns, to buf; on an
// error buf is left as it was. Several values encoded into one buffer cost
// no copy each (an event batch is its events' encodings after an array
// header).
func MarshalTo(buf *bytes.Buffer, v any) error {
	start := buf.Len()
	// the codec's own pool of encoders; Reset clears every setting
	enc := msgpack.GetEncoder()
	defer msgpack.PutEncoder(enc)
	enc.Reset(buf)
	enc.SetSortMapKeys(true)
	enc.UseCompactInts(true)
	err := marshalPlanned(enc, v)
	if errors.Is(err, errUnplanned) {
		buf.Truncate(start)
		err = enc.Encode(v)
	}
	if err != nil {
		buf.Truncate(start)
		return fmt.Errorf("messages: encode %T: %w", v, err)
	}
	return nil
}

// decodeState is a decoder and the reader it reads, reused by Unmarshal.
type decodeState struct {
	r   bytes.Reader
	dec *msgpack.Decoder
}

// decodeStates holds the decoders Unmarshal reuses.
var decodeStates = sync.Pool{New: func() any { return &decodeState{dec: msgpack.NewDecoder(nil)} }}

// Unmarshal decodes msgpack data into v, which must be a non-nil pointer.
// Dynamic values (fields of type any, map[string]any) come back as plain Go
// data: int64, float64, string, bool, nil, []any and map[string]any. Trailing
// bytes after the value are an error, and so are declared lengths that do
// not fit in the data (CheckBounds), so a tiny hostile message cannot make
// the decoder allocate gigabytes.
//
// Hostile input cannot crash the caller: msgpack/v5 panics on some malformed
// inputs (a repeated key whose first value was a map, for one), and Unmarshal
// turns such a panic into an error.
func Unmarshal(data []byte, v any) error { return unmarshal(data, v, false) }

// unmarshal is Unmarshal; strict refuses map keys that name no field of
// the target struct.
func unmarshal(data []byte, v any, strict bool) error {
	if a, ok := v.(*Approval); ok && a != nil && !strict && approvalZero(a) {
		// an approval record in the form Marshal writes is read without
		// the decoder (approvaldec.go); any other form by it
		if err := CheckBounds(data); err != nil {
			return err
		}
		if decodeApproval(data, a) {
			return nil
		}
	}
	return unmarshalCodec(data, v, strict)
}

// unmarshalCodec is unmarshal by the msgpack decoder.
func unmarshalCodec(data []byte, v any, strict bool) (err error) {
	ds := decodeStates.Get().(*decodeState)
	defer func() {
		if p := recover(); p != nil {
			// the decoder's state is unknown: it is not reused
			err = fmt.Errorf("messages: decode %T: malformed input: %v", v, p)
			return
		}
		ds.r.Reset(nil)
		ds.dec.Reset(nil)
		decodeStates.Put(ds)
	}()
	if err := CheckBounds(data); err != nil {
		return err
	}
	r, dec := &ds.r, ds.dec
	r.Reset(data)
	dec.Reset(r) // clears every setting
	dec.UseLooseInterfaceDecoding(true)
	dec.SetMapDecoder(DecodeMap)
	dec.DisallowUnknownFields(strict)
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("messages: decode %T: %w", v, err)
	}
	if r.Len() != 0 {
		return fmt.Errorf("messages: decode %T: %d trailing bytes", v, r.Len())
	}
	if err := normalizeValue(reflect.ValueOf(v), 0); err != nil {
		return fmt.Errorf("messages: decode %T: %w", v, err)
	}
	return nil
}

// DecodeMap decodes any msgpack map as map[string]any, the way Unmarshal
// reads maps: non-string keys are turned into their decimal or printed
// form, as JSON would require. It suits msgpack.Decoder.SetMapDecoder
// (of a decoder that interns no strings).
func DecodeMap(d *msgpack.Decoder) (any, error) {
	n, err := d.DecodeMapLen()
	if err != nil {
		return nil, err
	}
	if n == -1 {
		return nil, nil
	}
	m := make(map[string]any, min(n, 1024))
	for i := 0; i < n; i++ {
		ks, err := decodeMapKey(d)
		if err != nil {
			return nil, err
		}
		v, err := d.DecodeInterfaceLoose()
		if err != nil {
			return nil, err
		}
		m[ks] = v
	}
	return m, nil
}

// decodeMapKey decodes a map's key as DecodeMap keys it. A string (or
// binary) key, the usual one, is decoded as a string, as
// DecodeInterfaceLoose decodes it, without boxing it into an interface
// first: one allocation a key, not two.
func decodeMapKey(d *msgpack.Decoder) (string, error) {
	c, err := d.PeekCode()
	if err != nil {
		return "", err
	}
	if msgpcode.IsFixedString(c) {
		return d.DecodeString()
	}
	switch c {
	case msgpcode.Str8, msgpcode.Str16, msgpcode.Str32, msgpcode.Bin8, msgpcode.Bin16, msgpcode.Bin32:
		return d.DecodeString()
	}
	k, err := d.DecodeInterfaceLoose()
	if err != nil {
		return "", err
	}
	ks, ok := k.(string)
	if !ok {
		ks = fmt.Sprint(k)
	}
	return ks, nil
}

// maxDepth bounds the nesting Normalize accepts: the MaxNesting a message
// may have.
const maxDepth = MaxNesting

// maxWalkDepth bounds normalizeValue's walk over decoded structs, which
// counts pointer, struct and field levels as well as the message's own (a
// Step's child Steps), so it allows more than the message's MaxNesting.
const maxWalkDepth = 2 * MaxNesting

// Normalize turns v into plain Go data: integers become int64 (uint64 beyond
// the int64 range becomes float64), float32 becomes float64, []byte becomes
// string, slices become []any and maps with string keys become
// map[string]any. It returns an error for values with no plain form
// (channels, funcs, maps with non-string keys, ...). v itself is never
// changed: a []any or map[string]any holding something to convert is
// copied (copy on write), and what needs no conversion comes back as it
// is, so data shared between calls (a tool's cached result) may be
// normalized and encoded by several goroutines at once.
func Normalize(v any) (any, error) { return normalize(v, 0) }

// unchanged reports whether n, the normalized form of e, is e itself.
func unchanged(n, e any) bool {
	switch nv := n.(type) {
	case nil:
		return e == nil
	case map[string]any:
		ev, ok := e.(map[string]any)
		return ok && reflect.ValueOf(nv).Pointer() == reflect.ValueOf(ev).Pointer()
	case []any:
		ev, ok := e.([]any)
		return ok && len(nv) == len(ev) && (len(nv) == 0 || &nv[0] == &ev[0])
	}
	// bool, int64, float64 or string: comparable when the types match
	return reflect.TypeOf(n) == reflect.TypeOf(e) && n == e
}

func normalize(v any, depth int) (any, error) {
	// The plain values, the usual ones, here; every other kind in
	// normalizeOther. Each level of a nested value is a frame of this
	// function and of normalizeSlice or normalizeMap, kept small: a
	// deep value grows its goroutine's stack less.
	if depth > maxDepth {
		return nil, errTooDeep(maxDepth)
	}
	switch x := v.(type) {
	case nil, bool, int64, float64, string:
		return v, nil
	case []any:
		return normalizeSlice(x, v, depth)
	case map[string]any:
		return normalizeMap(x, depth)
	}
	return normalizeOther(v, depth)
}

// errTooDeep is the error of a value nested deeper than limit levels.
func errTooDeep(limit int) error {
	return fmt.Errorf("value nested deeper than %d levels", limit)
}

// errAt is err of the element at index i.
func errAt(i int, err error) error { return fmt.Errorf("[%d]: %w", i, err) }

// errIn is err of the value under key (or field) k.
func errIn(k string, err error) error { return fmt.Errorf("%s: %w", k, err) }

// normalizeSlice is normalize of x, which v holds.
func normalizeSlice(x []any, v any, depth int) (any, error) {
	var out []any
	for i, e := range x {
		n, err := normalize(e, depth+1)
		if err != nil {
			return nil, errAt(i, err)
		}
		if out == nil && !unchanged(n, e) {
			out = make([]any, len(x))
			copy(out, x[:i])
		}
		if out != nil {
			out[i] = n
		}
	}
	if out != nil {
		return out, nil
	}
	return v, nil // v, not x: boxing x again would copy its header
}

// normalizeMap is normalize of x.
func normalizeMap(x map[string]any, depth int) (any, error) {
	var out map[string]any
	for k, e := range x {
		n, err := normalize(e, depth+1)
		if err != nil {
			return nil, errIn(k, err)
		}
		if out == nil && !unchanged(n, e) {
			out = make(map[string]any, len(x))
			for k2, e2 := range x {
				out[k2] = e2
			}
		}
		if out != nil {
			out[k] = n
		}
	}
	if out != nil {
		return out, nil
	}
	return x, nil
}

// normalizeOther is normalize of a value that is not plain already.
func normalizeOther(v any, depth int) (any, error) {
	switch x := v.(type) {
	case int:
		return int64(x), nil
	case int8:
		return int64(x), nil
	case int16:
		return int64(x), nil
	case int32:
		return int64(x), nil
	case uint:
		return normUint(uint64(x)), nil
	case uint8:
		return int64(x), nil
	case uint16:
		return int64(x), nil
	case uint32:
		return int64(x), nil
	case uint64:
		return normUint(x), nil
	case float32:
		return float64(x), nil
	case []byte:
		return string(x), nil
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Slice, reflect.Array:
		out := make([]any, rv.Len())
		for i := range out {
			n, err := normalize(rv.Index(i).Interface(), depth+1)
			if err != nil {
				return nil, fmt.Errorf("[%d]: %w", i, err)
			}
			out[i] = n
		}
		return out, nil
	case reflect.Map:
		if rv.Type().Key().Kind() != reflect.String {
			return nil, fmt.Errorf("map key type %s is not string", rv.Type().Key())
		}
		out := make(map[string]any, rv.Len())
		it := rv.MapRange()
		for it.Next() {
			n, err := normalize(it.Value().Interface(), depth+1)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", it.Key().String(), err)
			}
			out[it.Key().String()] = n
		}
		return out, nil
	case reflect.String:
		return rv.String(), nil
	case reflect.Bool:
		return rv.Bool(), nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return rv.Int(), nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return normUint(rv.Uint()), nil
	case reflect.Float32, reflect.Float64:
		return rv.Float(), nil
	case reflect.Pointer, reflect.Interface:
		if rv.IsNil() {
			return nil, nil
		}
		return normalize(rv.Elem().Interface(), depth+1)
	}
	return nil, fmt.Errorf("value of type %T has no plain form", v)
}

func normUint(u uint64) any {
	if u <= math.MaxInt64 {
		return int64(u)
	}
	return float64(u)
}

// normalizeValue walks a decoded value and normalizes every dynamic value
// (fields of interface type and maps/slices of them) in place, by the
// walk plan of rv's type (walkPlanOf): values that hold nothing dynamic
// are not visited.
func normalizeValue(rv reflect.Value, depth int) error {
	return walkPlanOf(rv.Type()).walk(rv, depth)
}

// walkOp is what a walk does with a value of one type.
type walkOp uint8

const (
	walkStatic     walkOp = iota // holds nothing dynamic: nothing to do
	walkPointer                  // the value it points to
	walkInterface                // a dynamic value: normalized and set back
	walkStruct                   // the fields listed
	walkSlice                    // each element
	walkMapAny                   // a map[string]any: its values, in place
	walkMapIface                 // another map of interfaces: its values, set back
	walkMapPointer               // a map of pointers: what each points to, in place
	walkMapOther                 // a map of other values: each copied, walked, stored back
)

// walkNode is the walk plan of one type: what normalizeValue does with a
// value of it, and the plans of the values it walks into.
type walkNode struct {
	op     walkOp
	elem   *walkNode   // walkPointer, walkSlice, walkMapPointer, walkMapOther
	fields []walkField // walkStruct: the exported fields that hold dynamic values
}

// walkField is a struct field a walk visits.
type walkField struct {
	index int
	name  string
	node  *walkNode
}

// walkPlans caches the walk plan of each type normalizeValue met, built
// at its first use: what a walk needs to know of a type (which fields
// hold dynamic values, their names for errors) is read from reflect once
// instead of at every value.
var walkPlans sync.Map // reflect.Type → *walkNode

// walkPlanOf returns the walk plan of t.
func walkPlanOf(t reflect.Type) *walkNode {
	if n, ok := walkPlans.Load(t); ok {
		return n.(*walkNode)
	}
	n, _ := walkPlans.LoadOrStore(t, buildWalkPlan(t))
	return n.(*walkNode)
}

// buildWalkPlan makes the walk plan of t and of the types its values
// reach, linked (a type may reach itself: a Step its child Steps).
func buildWalkPlan(t reflect.Type) *walkNode {
	static, fields := walkPlan(t)
	nodes := map[reflect.Type]*walkNode{}
	var node func(t reflect.Type) *walkNode
	node = func(t reflect.Type) *walkNode {
		if n, ok := nodes[t]; ok {
			return n
		}
		n := &walkNode{}
		nodes[t] = n
		if static[t] {
			return n
		}
		switch t.Kind() {
		case reflect.Pointer:
			n.op, n.elem = walkPointer, node(t.Elem())
		case reflect.Interface:
			n.op = walkInterface
		case reflect.Struct:
			n.op = walkStruct
			for _, i := range fields[t] {
				f := t.Field(i)
				n.fields = append(n.fields, walkField{index: i, name: f.Name, node: node(f.Type)})
			}
		case reflect.Slice:
			n.op, n.elem = walkSlice, node(t.Elem())
		case reflect.Map:
			switch {
			case t == mapStringAnyType:
				n.op = walkMapAny
			case t.Elem().Kind() == reflect.Interface:
				n.op = walkMapIface
			case t.Elem().Kind() == reflect.Pointer:
				n.op, n.elem = walkMapPointer, node(t.Elem())
			default:
				n.op, n.elem = walkMapOther, node(t.Elem())
			}
		}
		return n
	}
	return node(t)
}

// walk normalizes the dynamic values rv holds, rv being of the type n
// was planned for. Pointers, structs and slices, the levels most values
// have, are walked here, in a small frame (a deep value grows its
// goroutine's stack less); dynamic values and maps in walkOther.
func (n *walkNode) walk(rv reflect.Value, depth int) error {
	if depth > maxWalkDepth {
		return errTooDeep(maxWalkDepth)
	}
	switch n.op {
	case walkPointer:
		if rv.IsNil() {
			return nil
		}
		return n.elem.walk(rv.Elem(), depth+1)
	case walkStruct:
		for i := range n.fields {
			f := &n.fields[i]
			if err := f.node.walk(rv.Field(f.index), depth+1); err != nil {
				return errIn(f.name, err)
			}
		}
	case walkSlice:
		for i := 0; i < rv.Len(); i++ {
			if err := n.elem.walk(rv.Index(i), depth+1); err != nil {
				return errAt(i, err)
			}
		}
	case walkStatic:
	default:
		return n.walkOther(rv, depth)
	}
	return nil
}

// walkOther is walk of a dynamic value or a map.
func (n *walkNode) walkOther(rv reflect.Value, depth int) error {
	switch n.op {
	case walkInterface:
		if rv.IsNil() || !rv.CanSet() {
			return nil
		}
		v, err := normalize(rv.Interface(), 0)
		if err != nil {
			return err
		}
		if v == nil {
			rv.SetZero()
		} else {
			rv.Set(reflect.ValueOf(v))
		}
	case walkMapAny:
		if rv.IsNil() {
			return nil
		}
		if !rv.CanInterface() {
			return walkMapValues(rv)
		}
		// the map of every dynamic field (a Step's memory, a tool call's
		// arguments): read and written in place, where reflect's iterator
		// copies out each key and value and SetMapIndex boxes each one
		// stored back
		m := rv.Interface().(map[string]any)
		for k, e := range m {
			v, err := normalize(e, 0)
			if err != nil {
				return errIn(k, err)
			}
			if !unchanged(v, e) {
				m[k] = v
			}
		}
	case walkMapIface:
		if rv.IsNil() {
			return nil
		}
		return walkMapValues(rv)
	case walkMapPointer:
		if rv.IsNil() {
			return nil
		}
		// what a pointer points to is walked where it is: nothing is
		// copied out of the map nor stored back
		var it reflect.MapIter
		it.Reset(rv)
		for it.Next() {
			if err := n.elem.walk(it.Value(), depth+1); err != nil {
				return fmt.Errorf("%v: %w", it.Key(), err)
			}
		}
	case walkMapOther:
		if rv.IsNil() {
			return nil
		}
		var it reflect.MapIter
		it.Reset(rv)
		for it.Next() {
			// Values of concrete struct type are not addressable in a map;
			// copy, normalize and store back.
			cp := reflect.New(rv.Type().Elem()).Elem()
			cp.Set(it.Value())
			if err := n.elem.walk(cp, depth+1); err != nil {
				return fmt.Errorf("%v: %w", it.Key(), err)
			}
			rv.SetMapIndex(it.Key(), cp)
		}
	}
	return nil
}

// walkMapValues normalizes the values of rv, a map of interfaces, and
// sets each back.
func walkMapValues(rv reflect.Value) error {
	var it reflect.MapIter
	it.Reset(rv)
	for it.Next() {
		v, err := normalize(it.Value().Interface(), 0)
		if err != nil {
			return fmt.Errorf("%v: %w", it.Key(), err)
		}
		if v == nil {
			rv.SetMapIndex(it.Key(), reflect.Zero(rv.Type().Elem()))
		} else {
			rv.SetMapIndex(it.Key(), reflect.ValueOf(v))
		}
	}
	return nil
}

// StepType is the value of the "type" key MarshalStep writes next to a
// Step's fields. UnmarshalStep requires it, so bytes that are some other
// message (a tool request published to a result subject, say) do not decode
// as a Step.
const StepType = "step"

// stepWire is a Step as it travels: the type marker, then the Step's fields.
type stepWire struct {
	Type string `msgpack:"type"`
	*Step
}

// MarshalStep encodes a Step with its type marker, setting its Version when
// zero.
func MarshalStep(s *Step) ([]byte, error) {
	buf := marshalBuffers.Get().(*bytes.Buffer)
	buf.Reset()
	defer func() {
		if buf.Cap() <= maxPooledBuffer {
			marshalBuffers.Put(buf)
		}
	}()
	if err := MarshalStepTo(buf, s); err != nil {
		return nil, err
	}
	return bytes.Clone(buf.Bytes()), nil
}

// MarshalStepTo appends the encoding MarshalStep returns to buf; on an
// error buf is left as it was.
func MarshalStepTo(buf *bytes.Buffer, s *Step) error {
	// the wire form, and the versioned copy of a Step without a version,
	// are pooled: the encoder keeps nothing of them
	w := wireSteps.Get().(*wireStep)
	w.wire = stepWire{Type: StepType, Step: s}
	if s.Version == 0 {
		w.step = *s
		w.step.Version = StepVersion
		w.wire.Step = &w.step
	}
	err := MarshalTo(buf, &w.wire)
	*w = wireStep{}
	wireSteps.Put(w)
	return err
}

// wireStep is a Step's wire form, with room for a versioned copy.
type wireStep struct {
	wire stepWire
	step Step
}

// wireSteps holds the wire forms MarshalStepTo encodes.
var wireSteps = sync.Pool{New: func() any { return new(wireStep) }}

// UnmarshalStep decodes and validates a Step written by MarshalStep. The
// "type" key must be StepType. Bytes without the key (Steps written before
// the marker existed) decode only when every key is a Step field, so a
// message of another type, which always has keys a Step lacks, is refused.
func UnmarshalStep(data []byte) (*Step, error) {
	// the Step and its wire form in one allocation
	h := &struct {
		w stepWire
		s Step
	}{}
	w := &h.w
	w.Step = &h.s
	if err := Unmarshal(data, w); err != nil {
		return nil, err
	}
	switch w.Type {
	case StepType:
	case "":
		if err := unmarshal(data, &stepWire{Step: &Step{}}, true); err != nil {
			return nil, fmt.Errorf("%w: not a step (no %q marker and %v)", ErrInvalid, StepType, err)
		}
	default:
		return nil, fmt.Errorf("%w: message type %q is not %q", ErrInvalid, w.Type, StepType)
	}
	if err := w.Step.Validate(); err != nil {
		return nil, err
	}
	return w.Step, nil
}

// RoundFloats rounds every float64 in plain data v to digits decimals (half
// away from zero), in place, and returns v; Inf and NaN are kept. digits <= 0
// leaves v as it is. Agents round returned floats to 2 decimals, so 0.1+0.2 is returned as 0.3.
func RoundFloats(v any, digits int) any {
	if digits <= 0 {
		return v
	}
	switch x := v.(type) {
	case float64:
		if math.IsInf(x, 0) || math.IsNaN(x) {
			return x
		}
		p := math.Pow(10, float64(digits))
		return math.Round(x*p) / p
	case []any:
		for i := range x {
			x[i] = RoundFloats(x[i], digits)
		}
	case map[string]any:
		for k := range x {
			x[k] = RoundFloats(x[k], digits)
		}
	}
	return v
}

// staticWireTypes returns the types reachable from roots through which
// normalizeValue reaches no dynamic value: it would walk their values and
// change nothing. Where normalizeValue goes, so does this: through
// pointers, exported struct fields (not into time's structs), slices other
// than []byte and the values of maps; an interface, or a map of
// interfaces, is dynamic; every other kind is a leaf.
func staticWireTypes(roots ...reflect.Type) map[reflect.Type]bool {
	static, _ := walkPlan(roots...)
	return static
}

// walkPlan returns staticWireTypes(roots) and, for each struct type of
// the others, the indexes of the fields normalizeValue walks: exported
// and not static.
func walkPlan(roots ...reflect.Type) (static map[reflect.Type]bool, fields map[reflect.Type][]int) {
	var all []reflect.Type
	seen := map[reflect.Type]bool{}
	children := func(t reflect.Type) []reflect.Type {
		switch t.Kind() {
		case reflect.Pointer:
			return []reflect.Type{t.Elem()}
		case reflect.Slice:
			if t.Elem().Kind() != reflect.Uint8 {
				return []reflect.Type{t.Elem()}
			}
		case reflect.Map:
			return []reflect.Type{t.Elem()}
		case reflect.Struct:
			if t.PkgPath() == "time" {
				return nil
			}
			var out []reflect.Type
			for i := range t.NumField() {
				if f := t.Field(i); f.IsExported() {
					out = append(out, f.Type)
				}
			}
			return out
		}
		return nil
	}
	var collect func(t reflect.Type)
	collect = func(t reflect.Type) {
		if seen[t] {
			return
		}
		seen[t] = true
		all = append(all, t)
		for _, c := range children(t) {
			collect(c)
		}
	}
	for _, t := range roots {
		collect(t)
	}
	dynamic := map[reflect.Type]bool{}
	for _, t := range all {
		if t.Kind() == reflect.Interface || (t.Kind() == reflect.Map && t.Elem().Kind() == reflect.Interface) {
			dynamic[t] = true
		}
	}
	// A type is dynamic when a child is: spread until nothing changes
	// (types may reach themselves, a Step its child Steps).
	for changed := true; changed; {
		changed = false
		for _, t := range all {
			if dynamic[t] {
				continue
			}
			for _, c := range children(t) {
				if dynamic[c] {
					dynamic[t], changed = true, true
					break
				}
			}
		}
	}
	static, fields = map[reflect.Type]bool{}, map[reflect.Type][]int{}
	for _, t := range all {
		switch {
		case !dynamic[t]:
			static[t] = true
		case t.Kind() == reflect.Struct && t.PkgPath() != "time":
			walk := []int{}
			for i := range t.NumField() {
				if f := t.Field(i); f.IsExported() && dynamic[f.Type] {
					walk = append(walk, i)
				}
			}
			fields[t] = walk
		}
	}
	return static, fields
}
