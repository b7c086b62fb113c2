package fleet

import (
	"bytes"
	"encoding"
	"encoding/json"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/vmihailenco/msgpack/v5"
)

// A typed tool (RegisterTyped) goes through encoding/json both ways: its
// arguments are encoded as JSON and decoded into its In, its result
// encoded as JSON and decoded into plain data (messages.FromJSON). The
// common cases take shorter paths to the same outcome:
//
//   - arguments of scalars (no float) are written as json.Marshal writes
//     them, byte for byte, into a pooled buffer (appendArgsJSON);
//   - a result that is a struct of string, bool and integer fields (or a
//     pointer to or a slice of one) is read into plain data field by field
//     by a plan made when the tool is registered (plainPlan): the values
//     FromJSON would return, without the JSON between; the tool service
//     has the plan write the result's msgpack itself (plainPlan.encode),
//     the bytes messages.MarshalTo writes for those values, without them.
//
// Anything else takes the JSON path as before.

// argsBuffers holds the buffers appendArgsJSON writes into.
var argsBuffers = sync.Pool{New: func() any { return new([]byte) }}

// maxPooledArgs bounds the buffers argsBuffers keeps.
const maxPooledArgs = 4 << 10

// appendArgsJSON appends to b what json.Marshal(args) returns, when every
// value of args is nil, a bool, an int64 or a string of valid UTF-8, and
// reports whether it did; b is returned unchanged otherwise.
func appendArgsJSON(b []byte, args map[string]any) ([]byte, bool) {
	if args == nil {
		return append(b, "null"...), true
	}
	var kept [8]string
	keys := kept[:0]
	for k, v := range args {
		switch x := v.(type) {
		case nil, bool, int64:
		case string:
			if !utf8.ValidString(x) {
				return b, false
			}
		default:
			return b, false
		}
		if !utf8.ValidString(k) {
			return b, false
		}
		keys = append(keys, k)
	}
	slices.Sort(keys)
	start := len(b)
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, k)
		b = append(b, ':')
		switch x := args[k].(type) {
		case nil:
			b = append(b, "null"...)
		case bool:
			b = strconv.AppendBool(b, x)
		case int64:
			b = strconv.AppendInt(b, x, 10)
		case string:
			b = appendJSONString(b, x)
		default: // changed under us: not ours to write
			return b[:start], false
		}
	}
	return append(b, '}'), true
}

// appendJSONString appends s, valid UTF-8, quoted as encoding/json quotes
// it (HTML-safe: <, > and & escaped, as are U+2028 and U+2029).
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// plainPlan reads a typed tool's result into the plain data
// messages.FromJSON returns for it, for the types it was made for.
type plainPlan struct {
	ptr    bool // the result is a pointer to the struct
	slice  bool // the result is a slice of the struct
	fields []plainField
	sorted []plainField // fields by name, the order msgpack writes a map's keys in
}

// plainField is one field of the struct that encoding/json writes.
type plainField struct {
	index     int
	name      string
	omitEmpty bool
	kind      reflect.Kind
}

var (
	jsonMarshalerType = reflect.TypeFor[json.Marshaler]()
	textMarshalerType = reflect.TypeFor[encoding.TextMarshaler]()
)

// newPlainPlan returns the plan for results of type t, or nil when t is
// not one it reads: a struct (or a pointer to or a slice of one) whose
// fields encoding/json writes are strings, bools and integers of at most
// 32 bits or int64, none with a MarshalJSON or MarshalText method, named
// by a plain tag (letters, digits, '_' and '-') or their own name, with
// no option but omitempty, none embedded, no two with the same name.
func newPlainPlan(t reflect.Type) *plainPlan {
	p := &plainPlan{}
	switch t.Kind() {
	case reflect.Pointer:
		p.ptr, t = true, t.Elem()
	case reflect.Slice:
		p.slice, t = true, t.Elem()
	}
	if t.Kind() != reflect.Struct || marshals(t) {
		return nil
	}
	seen := map[string]bool{}
	for i := range t.NumField() {
		sf := t.Field(i)
		if sf.Anonymous {
			return nil
		}
		if !sf.IsExported() {
			continue
		}
		tag := sf.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := cutComma(tag)
		if opts != "" && opts != "omitempty" {
			return nil
		}
		if name == "" {
			name = sf.Name
		} else if !plainTagName(name) {
			return nil
		}
		switch sf.Type.Kind() {
		case reflect.String, reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint8, reflect.Uint16, reflect.Uint32:
		default:
			return nil
		}
		if marshals(sf.Type) || seen[name] {
			return nil
		}
		seen[name] = true
		p.fields = append(p.fields, plainField{index: i, name: name, omitEmpty: opts != "", kind: sf.Type.Kind()})
	}
	p.sorted = slices.SortedFunc(slices.Values(p.fields), func(a, b plainField) int { return strings.Compare(a.name, b.name) })
	return p
}

// marshals reports whether values of t encode themselves in JSON.
func marshals(t reflect.Type) bool {
	pt := reflect.PointerTo(t)
	return pt.Implements(jsonMarshalerType) || pt.Implements(textMarshalerType)
}

func cutComma(tag string) (name, opts string, found bool) {
	for i := 0; i < len(tag); i++ {
		if tag[i] == ',' {
			return tag[:i], tag[i+1:], true
		}
	}
	return tag, "", false
}

// plainTagName reports whether a json tag's name is made of letters,
// digits, '_' and '-' only: one encoding/json uses as it is.
func plainTagName(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// plain returns what messages.FromJSON returns for v, a value of the
// plan's type, and true; or false when v holds a string that is not valid
// UTF-8 (which encoding/json would change).
func (p *plainPlan) plain(v reflect.Value) (any, bool) {
	switch {
	case p.ptr:
		if v.IsNil() {
			return nil, true
		}
		return p.record(v.Elem())
	case p.slice:
		if v.IsNil() {
			return nil, true
		}
		out := make([]any, v.Len())
		for i := range out {
			r, ok := p.record(v.Index(i))
			if !ok {
				return nil, false
			}
			out[i] = r
		}
		return out, true
	}
	return p.record(v)
}

// record returns the map encoding/json and FromJSON make of struct v.
func (p *plainPlan) record(v reflect.Value) (any, bool) {
	m := make(map[string]any, len(p.fields))
	for _, f := range p.fields {
		fv := v.Field(f.index)
		var x any
		switch f.kind {
		case reflect.String:
			s := fv.String()
			if !utf8.ValidString(s) {
				return nil, false
			}
			if f.omitEmpty && s == "" {
				continue
			}
			x = s
		case reflect.Bool:
			if f.omitEmpty && !fv.Bool() {
				continue
			}
			x = fv.Bool()
		case reflect.Uint8, reflect.Uint16, reflect.Uint32:
			if f.omitEmpty && fv.Uint() == 0 {
				continue
			}
			x = int64(fv.Uint())
		default:
			if f.omitEmpty && fv.Int() == 0 {
				continue
			}
			x = fv.Int()
		}
		m[f.name] = x
	}
	return m, true
}

// encode appends to buf what messages.MarshalTo appends for the plain data
// plain returns for v, and reports whether it did: false, buf as it was,
// when v holds a string that is not valid UTF-8 (plain's false). It writes
// with the msgpack encoder's own methods, as MarshalTo's encoder writes a
// map[string]any: keys sorted, integers in their shortest form.
func (p *plainPlan) encode(buf *bytes.Buffer, v reflect.Value) (bool, error) {
	start := buf.Len()
	enc := msgpack.GetEncoder()
	defer msgpack.PutEncoder(enc)
	enc.Reset(buf)
	enc.UseCompactInts(true)
	ok, err := p.encodeValue(enc, v)
	if !ok || err != nil {
		buf.Truncate(start)
	}
	return ok, err
}

func (p *plainPlan) encodeValue(enc *msgpack.Encoder, v reflect.Value) (bool, error) {
	switch {
	case p.ptr:
		if v.IsNil() {
			return true, enc.EncodeNil()
		}
		return p.encodeRecord(enc, v.Elem())
	case p.slice:
		if v.IsNil() {
			return true, enc.EncodeNil()
		}
		if err := enc.EncodeArrayLen(v.Len()); err != nil {
			return true, err
		}
		for i := range v.Len() {
			if ok, err := p.encodeRecord(enc, v.Index(i)); !ok || err != nil {
				return ok, err
			}
		}
		return true, nil
	}
	return p.encodeRecord(enc, v)
}

// encodeRecord writes struct v as the map record returns for it.
func (p *plainPlan) encodeRecord(enc *msgpack.Encoder, v reflect.Value) (bool, error) {
	n := 0
	for _, f := range p.sorted {
		fv := v.Field(f.index)
		switch f.kind {
		case reflect.String:
			s := fv.String()
			if !utf8.ValidString(s) {
				return false, nil
			}
			if f.omitEmpty && s == "" {
				continue
			}
		case reflect.Bool:
			if f.omitEmpty && !fv.Bool() {
				continue
			}
		case reflect.Uint8, reflect.Uint16, reflect.Uint32:
			if f.omitEmpty && fv.Uint() == 0 {
				continue
			}
		default:
			if f.omitEmpty && fv.Int() == 0 {
				continue
			}
		}
		n++
	}
	if err := enc.EncodeMapLen(n); err != nil {
		return true, err
	}
	for _, f := range p.sorted {
		fv := v.Field(f.index)
		var err error
		switch f.kind {
		case reflect.String:
			if f.omitEmpty && fv.Len() == 0 {
				continue
			}
			if err = enc.EncodeString(f.name); err == nil {
				err = enc.EncodeString(fv.String())
			}
		case reflect.Bool:
			if f.omitEmpty && !fv.Bool() {
				continue
			}
			if err = enc.EncodeString(f.name); err == nil {
				err = enc.EncodeBool(fv.Bool())
			}
		case reflect.Uint8, reflect.Uint16, reflect.Uint32:
			if f.omitEmpty && fv.Uint() == 0 {
				continue
			}
			if err = enc.EncodeString(f.name); err == nil {
				err = enc.EncodeInt(int64(fv.Uint()))
			}
		default:
			if f.omitEmpty && fv.Int() == 0 {
				continue
			}
			if err = enc.EncodeString(f.name); err == nil {
				err = enc.EncodeInt(fv.Int())
			}
		}
		if err != nil {
			return true, err
		}
	}
	return true, nil
}
