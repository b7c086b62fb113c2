package core

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/ptcfleet/ptc/pkg/messages"
)

// DecodeWireResultFrom decodes a large result read as a stream from r,
// size bytes of one value in the content type named (DecodeMsgpackFrom,
// DecodeJSONFrom), charging the Meter ctx carries as DecodeWireResult
// does, but for the values only: the encoded bytes are never held. A
// result that takes the meter past its limit stops there, before it is
// read whole, with the meter's *Error (memory_limit) naming the limit and
// how to raise it. The result keeps ref, the object it was read from,
// instead of its bytes: encoded as msgpack or JSON (a trace, an event) it
// is messages.RefValue(ref), so what records it does not grow with the
// data.
func DecodeWireResultFrom(ctx context.Context, contentType string, r io.Reader, size int64, ref *messages.ObjectRef) (*WireResult, error) {
	if err := messages.CheckContentType(contentType); err != nil {
		return nil, err
	}
	if ref == nil {
		return nil, fmt.Errorf("lisp: decode a streamed result: no reference to keep")
	}
	c := &charger{m: MeterFrom(ctx)}
	w := &WireResult{ref: ref}
	var err error
	if messages.IsJSON(contentType) {
		w.ContentType = messages.ContentTypeJSON
		w.Decoded, err = decodeJSONFrom(r, size, c)
	} else {
		w.Decoded, err = decodeMsgpackFrom(r, size, c)
	}
	if err != nil {
		c.undo()
		return nil, err
	}
	w.size, w.meter = c.total, c.m
	return w, nil
}

// Ref returns the object a large result was streamed from, or nil.
func (w *WireResult) Ref() *messages.ObjectRef { return w.ref }

// NewWireResult decodes data, one value in the content type named
// (messages.ContentTypeJSON, or msgpack when empty or
// messages.ContentTypeMsgpack), with DecodeJSON or DecodeMsgpack. data
// must not be modified afterwards. Nothing is charged: a run that gets the
// result from a tool charges its Size to the run's Meter then.
func NewWireResult(contentType string, data []byte) (*WireResult, error) {
	return newWireResult(&charger{}, contentType, data)
}

// DecodeWireResult is NewWireResult charging the Meter ctx carries (see
// MeterFrom; a run hands its meter to its tools in their context) as the
// result enters: its bytes first, then the values as they are built. A
// result that takes the meter past its limit stops decoding there and
// fails with the meter's *Error (KindMemory: memory_limit), which a run
// reports as its own memory_limit; what it charged is released. Tools
// that decode their results (remote tools, typed Go tools) use it.
func DecodeWireResult(ctx context.Context, contentType string, data []byte) (*WireResult, error) {
	// the result and its charger are one allocation
	wc := &chargedResult{c: charger{m: MeterFrom(ctx)}}
	return wc.w.decode(&wc.c, contentType, data)
}

// chargedResult is a WireResult with the charger its decode counts in.
type chargedResult struct {
	w WireResult
	c charger
}

func newWireResult(c *charger, contentType string, data []byte) (*WireResult, error) {
	return new(WireResult).decode(c, contentType, data)
}

// decode decodes data into w, counting what it builds in c; it returns w,
// or nil and the error.
func (w *WireResult) decode(c *charger, contentType string, data []byte) (*WireResult, error) {
	if err := messages.CheckContentType(contentType); err != nil {
		return nil, err
	}
	json := messages.IsJSON(contentType)
	var v Value
	err := c.Add(int64(len(data)))
	if err == nil {
		if json {
			v, err = decodeJSONValue(data, c)
		} else {
			v, err = decodeMsgpack(data, c)
		}
	}
	if err != nil {
		c.undo()
		return nil, err
	}
	*w = WireResult{data: data, Decoded: v, size: c.total, meter: c.m}
	if json {
		w.ContentType = messages.ContentTypeJSON
	}
	return w, nil
}

// Size returns what the result holds in bytes, as a Meter charges it: its
// encoding plus its decoded values.
func (w *WireResult) Size() int64 { return w.size }

// Value returns the decoded result (host data).
func (w *WireResult) Value() Value { return w.Decoded }

// Bytes returns the result's encoding and its content type ("" for
// msgpack).
func (w *WireResult) Bytes() (contentType string, data []byte) { return w.ContentType, w.data }

// Plain returns the result as plain Go data (ToGo of Value: what
// messages.Unmarshal or messages.DecodeJSON give for the same bytes),
// converted on the first call.
func (w *WireResult) Plain() any {
	return w.form.goOf(w.Decoded)
}

// View returns the result for signature validation, read in place:
// vectors and maps as signature.ListView and signature.MapView over the
// interpreter values, scalars as they are (nil, bool, int64, float64,
// string). Nothing is converted.
func (w *WireResult) View() any { return validationView(w.Decoded) }

func validationView(v Value) any {
	switch x := v.(type) {
	case *Vector:
		return wireListView{x}
	case *Map:
		return wireMapView{x}
	case HostMap:
		return wireMapView{x.view()}
	}
	return v
}

// wireListView is a decoded vector as a signature.ListView.
type wireListView struct{ v *Vector }

func (l wireListView) Len() int       { return l.v.Len() }
func (l wireListView) At(i int) any   { return validationView(l.v.At(i)) }
func (l wireListView) String() string { return PrStr(l.v) }

// wireMapView is a decoded map (string keys) as a signature.MapView.
type wireMapView struct{ m *Map }

func (m wireMapView) Len() int { return m.m.Len() }

// Lookup finds key exactly: a decoded map's keys are all strings, which
// a string finds only as itself.
func (m wireMapView) Lookup(key string) (any, bool) {
	v, ok := m.m.GetStr(key)
	if !ok {
		return nil, false
	}
	return validationView(v), true
}

func (m wireMapView) Keys() []string {
	keys := make([]string, 0, m.m.Len())
	m.m.Each(func(k, _ Value) bool {
		if s, ok := k.(string); ok {
			keys = append(keys, s)
		} else {
			keys = append(keys, PrStr(k))
		}
		return true
	})
	return keys
}

func (m wireMapView) String() string { return PrStr(m.m) }

// Firewalled reports whether the result holds a firewalled map key (one
// starting with "_", signature.IsFirewalled) at any depth: only then do
// masking and secret collection need its Go data.
func (w *WireResult) Firewalled() bool {
	return w.form.firewalledIn(w.Decoded)
}

// MaskFirewalled implements messages.Masker: the result itself when it
// holds no firewalled key, else its Go data masked.
func (w *WireResult) MaskFirewalled() any {
	if w.ref != nil || !w.Firewalled() { // a reference holds no key
		return w
	}
	return messages.MaskFirewalled(w.Plain())
}

// MarshalMsgpack writes a streamed result as its reference
// (messages.RefValue), a msgpack result's bytes as they are, and a JSON
// one's value as messages.Marshal writes its Go data (map keys sorted,
// integers compact), straight from the interpreter values.
func (w *WireResult) MarshalMsgpack() ([]byte, error) {
	if w.ref != nil {
		return messages.Marshal(messages.RefValue(w.ref))
	}
	if w.ContentType == "" {
		return w.data, nil
	}
	var buf bytes.Buffer
	enc := msgpack.NewEncoder(&buf)
	enc.UseCompactInts(true)
	if err := encodeWire(enc, w.Decoded); err != nil {
		return nil, fmt.Errorf("lisp: encode tool result: %w", err)
	}
	return buf.Bytes(), nil
}

// encodeWire writes a decoded value (nil, bool, int64, float64, string,
// vectors, maps with string keys) as msgpack.
func encodeWire(enc *msgpack.Encoder, v Value) error {
	switch x := v.(type) {
	case nil:
		return enc.EncodeNil()
	case bool:
		return enc.EncodeBool(x)
	case int64:
		return enc.EncodeInt(x)
	case float64:
		return enc.EncodeFloat64(x)
	case string:
		return enc.EncodeString(x)
	case *Vector:
		if err := enc.EncodeArrayLen(x.Len()); err != nil {
			return err
		}
		for _, e := range x.Items() {
			if err := encodeWire(enc, e); err != nil {
				return err
			}
		}
		return nil
	case *Map:
		keys := make([]string, 0, x.Len())
		x.Each(func(k, _ Value) bool {
			keys = append(keys, k.(string))
			return true
		})
		slices.Sort(keys)
		if err := enc.EncodeMapLen(len(keys)); err != nil {
			return err
		}
		for _, k := range keys {
			e, _ := x.Get(k)
			if err := enc.EncodeString(k); err != nil {
				return err
			}
			if err := encodeWire(enc, e); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("unexpected %T in a decoded value", v)
}

// MarshalJSON writes the result's Go data.
func (w *WireResult) MarshalJSON() ([]byte, error) {
	if w.ref != nil {
		return json.Marshal(messages.RefValue(w.ref))
	}
	return json.Marshal(w.Plain())
}

// String describes the result for logs.
func (w *WireResult) String() string {
	format := "msgpack"
	if w.ContentType != "" {
		format = "JSON"
	}
	if w.ref != nil {
		return fmt.Sprintf("tool result (%s of %s)", w.ref, format)
	}
	return fmt.Sprintf("tool result (%d bytes of %s)", len(w.data), format)
}
