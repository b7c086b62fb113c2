package core

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/ptcfleet/ptc/pkg/messages"
)

// DecodeJSON decodes one JSON value (a tool reply from HTTP, MCP or a JSON
// tool service) straight into interpreter values, in one pass: no
// intermediate map[string]any. The result is host data (see IsHostData)
// equal to what FromGo gives for messages.DecodeJSON of the same bytes:
// numbers keep their kind (an integer that fits is an int64, any other
// number a float64, a number beyond float64 range is an error), invalid
// UTF-8 in strings becomes U+FFFD, the last of repeated keys wins. The
// bounds are those of a message: at most messages.MaxJSONBytes bytes,
// messages.MaxValuesFor(len(data)) values (every scalar, array, object and key counts
// one, a repeated key included) and messages.MaxNesting levels of
// non-empty arrays and objects. Anything but exactly one value
// (whitespace aside) is an error. Tokens are read by jsontext's Decoder
// (github.com/go-json-experiment/json), which validates the syntax.
func DecodeJSON(data []byte) (Value, error) {
	return decodeJSONValue(data, &charger{})
}

// decodeJSONValue is DecodeJSON counting what it builds in c.
func decodeJSONValue(data []byte, c *charger) (Value, error) {
	if len(data) > messages.MaxJSONBytes {
		return nil, fmt.Errorf("lisp: decode json: %d bytes is larger than %d", len(data), messages.MaxJSONBytes)
	}
	j := newJSONDecoder(bytes.NewBuffer(data), int64(len(data)), c)
	v, err := j.value(0)
	if err == nil {
		err = c.flush()
	}
	if err != nil {
		return nil, decodeFailed("json", err)
	}
	if _, err := j.d.ReadToken(); err != io.EOF {
		return nil, fmt.Errorf("lisp: decode json: trailing data after the value at byte %d", j.d.InputOffset())
	}
	return v, nil
}

// jsonDecoder builds interpreter values from a jsontext token stream,
// boxing and sharing key shapes as FromGo does.
type jsonDecoder struct {
	d      *jsontext.Decoder
	cv     Converter
	ch     *charger
	values int
	// maxValues bounds values (messages.MaxValuesFor the input's size).
	maxValues int
	// keys interns object keys (bounded like the converter's strings):
	// records repeat theirs.
	keys keyTable
	// entries and items are scratch space per nesting level, reused
	// from one object or array to the next.
	entries entryBuffers
	items   [][]Value
}

// count counts one value against maxValues.
func (j *jsonDecoder) count() error {
	j.values++
	if j.values > j.maxValues {
		return fmt.Errorf("more than %d values", j.maxValues)
	}
	return nil
}

// value decodes the next value.
func (j *jsonDecoder) value(depth int) (Value, error) {
	if err := j.count(); err != nil {
		return nil, err
	}
	switch j.d.PeekKind() {
	case '{':
		return j.object(depth)
	case '[':
		return j.array(depth)
	}
	raw, err := j.d.ReadValue()
	if err != nil {
		return nil, err
	}
	switch raw[0] {
	case 'n':
		return nil, nil
	case 't':
		return true, nil
	case 'f':
		return false, nil
	case '"':
		// a repeated short string shares one box, charged once
		v, fresh := j.str(raw)
		if !fresh {
			return v, nil
		}
		return v, j.ch.Add(scalarCharge(v))
	}
	v, err := j.number(raw)
	if err != nil {
		return nil, err
	}
	return v, j.ch.Add(scalarCharge(v))
}

// open reads the opening delimiter of a container and reports whether
// the container holds anything; a non-empty one must fit in
// messages.MaxNesting (empty ones do not nest, as in CheckBounds).
func (j *jsonDecoder) open(depth int, end jsontext.Kind) (bool, error) {
	if _, err := j.d.ReadToken(); err != nil {
		return false, err
	}
	if j.d.PeekKind() == end {
		_, err := j.d.ReadToken()
		return false, err
	}
	if depth+1 > messages.MaxNesting {
		return false, fmt.Errorf("nested deeper than %d levels at byte %d", messages.MaxNesting, j.d.InputOffset())
	}
	return true, nil
}

func (j *jsonDecoder) object(depth int) (Value, error) {
	full, err := j.open(depth, '}')
	if err != nil || !full {
		return EmptyMap, err
	}
	b := MapBuilder{es: j.entries.take(depth, SmallMapMax), shapes: j.cv.Shapes}
	defer func() { j.entries.give(depth, b.es) }()
	for j.d.PeekKind() != '}' {
		if err := j.count(); err != nil {
			return nil, err
		}
		raw, err := j.d.ReadValue()
		if err != nil {
			return nil, err
		}
		k := j.key(raw)
		v, err := j.value(depth + 1)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", k, err)
		}
		b.Set(k, v)
	}
	if _, err := j.d.ReadToken(); err != nil {
		return nil, err
	}
	if err := j.ch.Add(mapCharge(b.N)); err != nil {
		return nil, err
	}
	m := markHost(b.Build())
	return m, j.ch.Add(j.cv.Shapes.madeBytes())
}

func (j *jsonDecoder) array(depth int) (Value, error) {
	full, err := j.open(depth, ']')
	if err != nil {
		return nil, err
	}
	if !full {
		return &Vector{Slots: []Value{}, FromHost: true}, nil
	}
	for len(j.items) <= depth {
		j.items = append(j.items, nil)
	}
	for j.d.PeekKind() != ']' {
		// records are laid out together in the shape cache's slabs
		v, err := j.value(depth + 1)
		if err != nil {
			return nil, fmt.Errorf("[%d]: %w", len(j.items[depth]), err)
		}
		j.items[depth] = append(j.items[depth], v)
	}
	if _, err := j.d.ReadToken(); err != nil {
		return nil, err
	}
	if err := j.ch.Add(vectorCharge(len(j.items[depth]))); err != nil {
		return nil, err
	}
	items := make([]Value, len(j.items[depth]))
	copy(items, j.items[depth])
	clear(j.items[depth])
	j.items[depth] = j.items[depth][:0]
	return &Vector{Slots: items, FromHost: true}, nil
}

// unquoted returns the contents of the JSON string raw: the bytes between
// the quotes when they hold no escape and are valid UTF-8 (the common
// case: no copy), else the decoded text, invalid UTF-8 as U+FFFD.
func unquoted(raw []byte) []byte {
	inner := raw[1 : len(raw)-1]
	if bytes.IndexByte(inner, '\\') < 0 && utf8.Valid(inner) {
		return inner
	}
	// raw is a string the decoder accepted: the only error left is
	// invalid UTF-8, which AppendUnquote has replaced.
	out, _ := jsontext.AppendUnquote(nil, raw)
	return out
}

// str returns the JSON string raw as a boxed string, and whether its box
// is new (not an interned one).
func (j *jsonDecoder) str(raw []byte) (Value, bool) {
	s := unquoted(raw)
	if len(s) <= internMaxLen {
		if v, ok := j.cv.lookupBytes(s); ok {
			return v, false
		}
	}
	return j.cv.internString(string(s))
}

// key returns the object key raw as a boxed string, interned.
func (j *jsonDecoder) key(raw []byte) Value { return j.keys.Get(unquoted(raw)) }

var errNumberRange = errors.New("out of range")

// number converts a JSON number by messages.JSONNumbers' rule: an integer
// that fits is an int64, anything else a float64, and a number beyond
// float64 range an error.
func (j *jsonDecoder) number(raw []byte) (Value, error) {
	if len(raw) <= 18 && !bytes.ContainsAny(raw, ".eE") {
		// at most 18 digits: fits an int64 without overflow checks
		neg := raw[0] == '-'
		digits := raw
		if neg {
			digits = raw[1:]
		}
		var n int64
		for _, c := range digits {
			n = n*10 + int64(c-'0')
		}
		if neg {
			n = -n
		}
		return j.cv.BoxInt(n), nil
	}
	s := string(raw)
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return j.cv.BoxInt(n), nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return nil, fmt.Errorf("number %s is %w", s, errNumberRange)
	}
	return j.cv.BoxFloat(f), nil
}

// newJSONDecoder decodes one JSON value of size bytes from r into
// interpreter values, counting what it builds in c: at most
// messages.MaxValuesFor(size) values, duplicate names and invalid UTF-8
// accepted as DecodeJSON documents.
func newJSONDecoder(r io.Reader, size int64, c *charger) *jsonDecoder {
	j := &jsonDecoder{
		d:         jsontext.NewDecoder(r, jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true)),
		cv:        Converter{Shapes: &ShapeCache{}},
		ch:        c,
		maxValues: int(min(messages.MaxValuesFor(size), int64(maxInt))),
	}
	j.cv.Intern = true
	return j
}
