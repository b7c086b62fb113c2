package messages

import (
	"reflect"

	"github.com/vmihailenco/msgpack/v5"
)

// The wire types' slices of structs decode with decodeSliceExact: a
// Step's trace, its turns' tool calls and the like, on every result a
// client or worker reads.
func init() {
	for _, v := range []any{
		[]Turn(nil), []ToolCall(nil), []PlanStep(nil), []ToolSchema(nil),
		[]PromptMessage(nil), []ScriptEntry(nil), []ApprovalRule(nil),
	} {
		msgpack.Register(v, nil, decodeSliceExact)
	}
}

// decodeSliceExact decodes a msgpack array into the slice v as msgpack's
// own slice decoder does (nil for nil, an empty slice for an empty array
// into a nil slice, each element decoded over what v held at its index),
// making a slice of the array's length in one allocation where msgpack's
// decoder appends a new slice to v (two allocations, and a slice header
// boxed by reflect at each resize). It allocates the declared length at
// once, where msgpack's decoder grows toward it in bounded steps: that is
// safe because every decoder of these types runs after CheckBounds
// (Unmarshal), which refuses a length the data cannot hold.
func decodeSliceExact(d *msgpack.Decoder, v reflect.Value) error {
	n, err := d.DecodeArrayLen()
	if err != nil {
		return err
	}
	switch {
	case n == -1:
		v.SetZero()
		return nil
	case n == 0 && v.IsNil():
		v.Set(reflect.MakeSlice(v.Type(), 0, 0))
		return nil
	case v.Cap() >= n:
		v.SetLen(n)
	default:
		s := reflect.MakeSlice(v.Type(), n, n)
		if v.Cap() > 0 {
			reflect.Copy(s, v.Slice(0, v.Cap()))
		}
		v.Set(s)
	}
	for i := range n {
		if err := d.DecodeValue(v.Index(i)); err != nil {
			return err
		}
	}
	return nil
}
