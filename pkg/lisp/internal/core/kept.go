package core

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/ptcfleet/ptc/pkg/messages"
)

// Kept values (see Kept): their Go and JSON/msgpack forms.

// Value returns the interpreter value.
func (k *Kept) Value() Value { return k.v }

// Go returns the value as plain Go data (ToGo), converted on the first
// call and shared by every caller: read it, do not change it (the value
// and its encodings stay what the run kept).
func (k *Kept) Go() any {
	return k.form.goOf(k.v)
}

// String prints the value as a program would (pr-str).
func (k *Kept) String() string { return PrStr(k.v) }

// MaskFirewalled implements messages.Masker: the value itself when it
// holds no firewalled key, else its Go form masked.
func (k *Kept) MaskFirewalled() any {
	if !k.form.firewalledIn(k.v) {
		return k
	}
	return messages.MaskFirewalled(k.Go())
}

// EncodeMsgpack implements msgpack.CustomEncoder: it writes the bytes
// enc.Encode(k.Go()) writes, straight from the interpreter values (map
// keys sorted, as every ordering of a Go map's keys may be, and as
// messages.Marshal orders them).
func (k *Kept) EncodeMsgpack(enc *msgpack.Encoder) error { return encodeKept(enc, k.v) }

func encodeKept(enc *msgpack.Encoder, v Value) error {
	switch x := v.(type) {
	case nil, bool, int64, float64, string:
		return enc.Encode(x)
	case *Keyword:
		return enc.EncodeString(x.Name)
	case *Vector:
		if x.src != nil {
			return enc.Encode(x.src.src.hostSlice())
		}
		items := x.Items()
		if err := enc.EncodeArrayLen(len(items)); err != nil {
			return err
		}
		for _, e := range items {
			if err := encodeKept(enc, e); err != nil {
				return err
			}
		}
		return nil
	case *Map:
		if x.Src != nil {
			return enc.Encode(x.Src)
		}
		es, ok := stringEntries(x)
		if !ok {
			return enc.Encode(mapToGo(x, true))
		}
		if err := enc.EncodeMapLen(len(es)); err != nil {
			return err
		}
		for _, e := range es {
			if err := enc.EncodeString(e.Key.(string)); err != nil {
				return err
			}
			if err := encodeKept(enc, e.Val); err != nil {
				return err
			}
		}
		return nil
	}
	// sets, seqs, views of host records, functions: their Go form (which
	// is not a Kept: only a host vector or map is)
	return enc.Encode(ShareToGo(v))
}

// stringEntries returns a map's entries sorted by key as Go sorts
// strings, when every key is a string (a map of host data); ok is false
// for a map with any other key, whose Go form respells its keys (ToGo).
func stringEntries(m *Map) (es []MapEntry, ok bool) {
	es = make([]MapEntry, 0, m.Len())
	ok = true
	m.Each(func(k, v Value) bool {
		if _, ok = k.(string); !ok {
			return false
		}
		es = append(es, MapEntry{k, v})
		return true
	})
	if !ok {
		return nil, false
	}
	cmp := func(a, b MapEntry) int {
		as, bs := a.Key.(string), b.Key.(string)
		switch {
		case as < bs:
			return -1
		case as > bs:
			return 1
		}
		return 0
	}
	if !slices.IsSortedFunc(es, cmp) {
		slices.SortFunc(es, cmp)
	}
	return es, true
}

// MarshalJSON implements json.Marshaler: the bytes json.Marshal(k.Go())
// writes (map keys sorted), without HTML escaping, which the encoder
// calling it applies as it is set to.
func (k *Kept) MarshalJSON() ([]byte, error) {
	w := &keptJSON{}
	w.leaf = json.NewEncoder(&w.scratch)
	w.leaf.SetEscapeHTML(false)
	if err := w.value(k.v); err != nil {
		return nil, fmt.Errorf("lisp: encode kept value as JSON: %w", err)
	}
	return w.out.Bytes(), nil
}

// keptJSON writes a kept value as JSON; leaf encodes scalars and Go data
// with encoding/json into scratch, so they are spelled exactly as
// json.Marshal spells them.
type keptJSON struct {
	out, scratch bytes.Buffer
	leaf         *json.Encoder
}

func (w *keptJSON) goValue(x any) error {
	w.scratch.Reset()
	if err := w.leaf.Encode(x); err != nil {
		return err
	}
	b := w.scratch.Bytes()
	w.out.Write(b[:len(b)-1]) // Encode ends the value with a newline
	return nil
}

func (w *keptJSON) value(v Value) error {
	switch x := v.(type) {
	case nil:
		w.out.WriteString("null")
		return nil
	case bool:
		w.out.WriteString(strconv.FormatBool(x))
		return nil
	case int64:
		w.out.Write(strconv.AppendInt(w.out.AvailableBuffer(), x, 10))
		return nil
	case float64, string:
		return w.goValue(x)
	case *Keyword:
		return w.goValue(x.Name)
	case *Vector:
		if x.src != nil {
			return w.goValue(x.src.src.hostSlice())
		}
		w.out.WriteByte('[')
		for i, e := range x.Items() {
			if i > 0 {
				w.out.WriteByte(',')
			}
			if err := w.value(e); err != nil {
				return err
			}
		}
		w.out.WriteByte(']')
		return nil
	case *Map:
		if x.Src != nil {
			return w.goValue(x.Src)
		}
		es, ok := stringEntries(x)
		if !ok {
			return w.goValue(mapToGo(x, true))
		}
		w.out.WriteByte('{')
		for i, e := range es {
			if i > 0 {
				w.out.WriteByte(',')
			}
			if err := w.goValue(e.Key); err != nil {
				return err
			}
			w.out.WriteByte(':')
			if err := w.value(e.Val); err != nil {
				return err
			}
		}
		w.out.WriteByte('}')
		return nil
	}
	return w.goValue(ShareToGo(v))
}
