package core

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/ptcfleet/ptc/pkg/messages"
	"github.com/vmihailenco/msgpack/v5"
	"github.com/vmihailenco/msgpack/v5/msgpcode"
)

// The wire decoders' shared parts (key tables, bounds of a streamed value,
// entry buffers) and the msgpack decoder (DecodeMsgpack). JSON is
// wirejson.go, streamed decoding wirestream.go, results wireresult.go.

// entryBuffers holds a map builder's entries for each level of maps
// being decoded, reused from one map to the next: a built map keeps none
// of them, and a result of many records would otherwise leave a
// builder's worth of garbage per record.
type entryBuffers [][]MapEntry

// take returns an empty entry buffer for a map at depth, with room for n
// entries (up to wideMapMax; a larger map is a trie).
func (e *entryBuffers) take(depth, n int) []MapEntry {
	for len(*e) <= depth {
		*e = append(*e, nil)
	}
	es := (*e)[depth]
	if want := min(n, WideMapMax); cap(es) < want {
		es = make([]MapEntry, 0, want)
		(*e)[depth] = es
	}
	return es[:0]
}

// give returns the buffer of depth once its map is built, cleared so that
// it holds no value; es, the builder's entries, is kept instead when the
// builder grew them into a larger buffer.
func (e *entryBuffers) give(depth int, es []MapEntry) {
	if cap(es) > cap((*e)[depth]) {
		(*e)[depth] = es
	}
	clear((*e)[depth][:cap((*e)[depth])])
}

// decodeFailed wraps a decoder's error: a memory limit reached while
// decoding is the run's own error (memory_limit, naming the limit), any
// other a decode error of the format named.
func decodeFailed(format string, err error) error {
	var le *Error
	if errors.As(err, &le) && le.Kind == KindMemory {
		return le
	}
	return fmt.Errorf("lisp: decode %s: %w", format, err)
}

const maxInt = int64(^uint(0) >> 1)

// keyTable interns the map keys of one decoded value (of a msgpack
// reader's decodes, which it keeps: msgpackReader): records repeat their
// keys, and a key seen before costs no allocation.
type keyTable map[string]Value

// Get returns key p as a boxed string, the same box for the same key
// (up to internMax keys of at most internMaxLen bytes).
func (t *keyTable) Get(p []byte) Value {
	if len(p) > internMaxLen {
		return string(p)
	}
	if v, ok := (*t)[string(p)]; ok {
		return v
	}
	var v Value = string(p)
	if *t == nil {
		*t = keyTable{}
	}
	if len(*t) < internMax {
		(*t)[string(p)] = v
	}
	return v
}

// streamBounds are the bounds a msgpack stream is checked against as it
// is decoded (CheckBounds' bounds, for input that cannot be scanned
// first). Its methods do nothing on a nil *streamBounds.
type streamBounds struct {
	size      int64        // the stream's announced size
	consumed  func() int64 // bytes decoded so far
	maxValues int64
	values    int64
	depth     int
}

var errStreamKey = errors.New("a map key is an array or a map; keys of a streamed value must be scalars")

// value counts one value starting with code c.
func (b *streamBounds) value(c byte) error {
	if b == nil {
		return nil
	}
	b.values++
	if b.values > b.maxValues {
		return fmt.Errorf("more than %d values in %d bytes (at byte %d)", b.maxValues, b.size, b.consumed())
	}
	return nil
}

// open enters a container announcing n values, which must fit in the
// bytes still to come (each value takes one at least).
func (b *streamBounds) open(n int) error {
	if b == nil {
		return nil
	}
	if left := b.size - b.consumed(); int64(n) > left {
		return fmt.Errorf("a container announces %d values with %d bytes left (at byte %d)", n, left, b.consumed())
	}
	b.depth++
	if b.depth > messages.MaxNesting {
		return fmt.Errorf("nested deeper than %d levels (at byte %d)", messages.MaxNesting, b.consumed())
	}
	return nil
}

// left returns the bytes still to come, or -1 on a nil *streamBounds.
func (b *streamBounds) left() int64 {
	if b == nil {
		return -1
	}
	return b.size - b.consumed()
}

// close leaves a container.
func (b *streamBounds) close() {
	if b != nil {
		b.depth--
	}
}

// key checks the next map key: a scalar (the msgpack decoder reads a
// container key recursively, without bounds).
func (b *streamBounds) key(d *msgpack.Decoder) error {
	if b == nil {
		return nil
	}
	c, err := d.PeekCode()
	if err != nil {
		return err
	}
	if msgpcode.IsFixedMap(c) || c == msgpcode.Map16 || c == msgpcode.Map32 ||
		msgpcode.IsFixedArray(c) || c == msgpcode.Array16 || c == msgpcode.Array32 {
		return fmt.Errorf("%w (at byte %d)", errStreamKey, b.consumed())
	}
	return b.value(c)
}

// DecodeMsgpack decodes one msgpack value (a tool reply from NATS) straight
// into interpreter values, in one pass: no intermediate map[string]any.
// The result is host data (see IsHostData) equal to what FromGo gives for
// messages.Unmarshal of the same bytes: the same bounds (CheckBounds runs
// first: declared lengths, nesting, value count), the same scalars (every
// integer an int64 unless it needs a float64, binary as a string), map
// keys as strings (other keys by their printed form, the last of repeated
// keys wins), trailing bytes and malformed input are errors, never panics.
func DecodeMsgpack(data []byte) (v Value, err error) {
	return decodeMsgpack(data, &charger{})
}

// msgpackReader is a msgpack decoder and the reader it reads, kept for
// the next decodeMsgpack once a decode is over, with the map keys the
// decodes it served interned: a tool's results repeat their keys from one
// call to the next, and a key's box is a string, never written, that any
// decode may share.
type msgpackReader struct {
	r    bytes.Reader
	d    *msgpack.Decoder
	keys keyTable
	// the scratch space of a decode, which no decoded value refers to:
	// its shape cache's buffers (reset: none of its shapes or slabs is
	// kept), its map builders' entry buffers (emptied after each map)
	// and its short-string buffer
	shapes  ShapeCache
	entries entryBuffers
	buf     []byte
}

// maxKeptScratch bounds the bytes of a msgpackReader's scratch buffers and
// the entries of its entry buffers kept between decodes.
const maxKeptScratch = 4 << 10

// keepScratch keeps w's scratch space for the reader's next decode, the
// buffers no larger than maxKeptScratch, and the shape cache emptied of
// everything a decoded value refers to.
func (mr *msgpackReader) keepScratch(w *wireDecoder) {
	mr.shapes.reset()
	mr.buf = nil
	if cap(w.buf) <= maxKeptScratch {
		mr.buf = w.buf
	}
	mr.entries = nil
	n := 0
	for _, es := range w.entries {
		n += cap(es)
	}
	if n <= maxKeptScratch/32 {
		mr.entries = w.entries
	}
}

// maxKeptKeys bounds the keys a msgpackReader keeps between decodes: a
// decode that leaves it more (results of many distinct keys) leaves it
// none, so a pooled reader holds at most a few KB of keys.
const maxKeptKeys = 256

// keep keeps keys, the table of a decode over, for the reader's next
// decode: none when it holds more than maxKeptKeys.
func (mr *msgpackReader) keep(keys keyTable) {
	if len(keys) > maxKeptKeys {
		keys = nil
	}
	mr.keys = keys
}

// msgpackReaders holds the msgpackReaders of finished decodes: a cache of
// memory, not state (each decode resets what it takes).
var msgpackReaders = sync.Pool{New: func() any { return &msgpackReader{d: msgpack.NewDecoder(nil)} }}

// decodeMsgpack is DecodeMsgpack counting what it builds in c.
func decodeMsgpack(data []byte, c *charger) (v Value, err error) {
	mr := msgpackReaders.Get().(*msgpackReader)
	w := wireDecoder{keys: mr.keys}
	defer func() {
		if p := recover(); p != nil {
			// the decoder's state is unknown: it is not reused
			v, err = nil, fmt.Errorf("lisp: decode msgpack: malformed input: %v", p)
			return
		}
		mr.r.Reset(nil)
		mr.d.Reset(nil)
		mr.keep(w.keys)
		mr.keepScratch(&w)
		msgpackReaders.Put(mr)
	}()
	maps, err := messages.CheckBoundsMaps(data)
	if err != nil {
		return nil, err
	}
	r := &mr.r
	r.Reset(data)
	mr.d.Reset(r) // clears every setting
	mr.shapes.maxSmalls = maps
	w = wireDecoder{d: mr.d, cv: Converter{Shapes: &mr.shapes}, ch: c, keys: w.keys, entries: mr.entries, buf: mr.buf}
	w.d.UseLooseInterfaceDecoding(true)
	w.d.SetMapDecoder(messages.DecodeMap) // maps inside map keys, as messages.Unmarshal reads them
	w.cv.Intern = true
	v, err = w.value()
	if err == nil {
		err = c.flush()
	}
	if err != nil {
		return nil, decodeFailed("msgpack", err)
	}
	if r.Len() != 0 {
		return nil, fmt.Errorf("lisp: decode msgpack: %d trailing bytes", r.Len())
	}
	return v, nil
}

// wireDecoder builds interpreter values from a msgpack stream, boxing and
// sharing key shapes as FromGo does.
type wireDecoder struct {
	d  *msgpack.Decoder
	cv Converter
	ch *charger
	// stream bounds a decoder reading a stream, which CheckBounds cannot
	// scan first (nil: the input was checked).
	stream  *streamBounds
	entries entryBuffers
	depth   int // of the maps being decoded
	// keys interns map keys; buf holds a short string while it is looked
	// up, so that a key or string seen before costs no allocation
	keys keyTable
	buf  []byte
}

// isStr reports whether c starts a msgpack string.
func isStr(c byte) bool {
	return msgpcode.IsFixedString(c) || c == msgpcode.Str8 || c == msgpcode.Str16 || c == msgpcode.Str32
}

// strBytes reads the msgpack string at hand (isStr of its code) and
// returns its bytes when it is short (at most internMaxLen, in a buffer
// valid until the next read); else it returns it as a string.
func (w *wireDecoder) strBytes() ([]byte, string, error) {
	n, err := w.d.DecodeBytesLen()
	if err != nil {
		return nil, "", err
	}
	if n > internMaxLen {
		if left := w.stream.left(); left >= 0 && int64(n) > left {
			return nil, "", fmt.Errorf("a string announces %d bytes with %d left", n, left)
		}
		var sb strings.Builder
		sb.Grow(min(n, 1<<20))
		for n > 0 {
			p := w.scratch(min(n, 32<<10))
			if err := w.d.ReadFull(p); err != nil {
				return nil, "", err
			}
			sb.Write(p)
			n -= len(p)
		}
		return nil, sb.String(), nil
	}
	p := w.scratch(n)
	if err := w.d.ReadFull(p); err != nil {
		return nil, "", err
	}
	return p, "", nil
}

// scratch returns w.buf resized to n bytes.
func (w *wireDecoder) scratch(n int) []byte {
	if w.buf == nil || cap(w.buf) < n {
		w.buf = make([]byte, max(n, 256))
	}
	return w.buf[:n]
}

func (w *wireDecoder) value() (Value, error) {
	c, err := w.d.PeekCode()
	if err != nil {
		return nil, err
	}
	if err := w.stream.value(c); err != nil {
		return nil, err
	}
	switch {
	case msgpcode.IsFixedMap(c) || c == msgpcode.Map16 || c == msgpcode.Map32:
		return w.mapValue()
	case msgpcode.IsFixedArray(c) || c == msgpcode.Array16 || c == msgpcode.Array32:
		n, err := w.d.DecodeArrayLen()
		if err != nil || n < 0 {
			return nil, err
		}
		if err := w.ch.Add(vectorCharge(n)); err != nil {
			return nil, err
		}
		if err := w.stream.open(n); err != nil {
			return nil, err
		}
		defer w.stream.close()
		items := make([]Value, n)
		for i := range items {
			// records are laid out together in the shape cache's slabs
			items[i], err = w.value()
			if err != nil {
				return nil, fmt.Errorf("[%d]: %w", i, err)
			}
		}
		return &Vector{Slots: items, FromHost: true}, nil
	}
	if isStr(c) {
		p, long, err := w.strBytes()
		if err != nil {
			return nil, err
		}
		if p == nil {
			v := Value(long)
			return v, w.ch.Add(scalarCharge(v))
		}
		// a repeated short string shares one box, charged once
		v, fresh := w.cv.internBytes(p)
		if !fresh {
			return v, nil
		}
		return v, w.ch.Add(scalarCharge(v))
	}
	x, err := w.d.DecodeInterfaceLoose()
	if err != nil {
		return nil, err
	}
	nx, err := messages.Normalize(x)
	if err != nil {
		return nil, err
	}
	if s, ok := nx.(string); ok {
		// a repeated short string shares one box, charged once
		v, fresh := w.cv.internString(s)
		if !fresh {
			return v, nil
		}
		return v, w.ch.Add(scalarCharge(v))
	}
	v, err := w.cv.From(nx)
	if err != nil {
		return nil, err
	}
	return v, w.ch.Add(scalarCharge(v))
}

// mapValue decodes a map.
func (w *wireDecoder) mapValue() (Value, error) {
	n, err := w.d.DecodeMapLen()
	if err != nil || n < 0 {
		return nil, err
	}
	if err := w.ch.Add(mapCharge(n)); err != nil {
		return nil, err
	}
	if err := w.stream.open(2 * n); err != nil {
		return nil, err
	}
	defer w.stream.close()
	depth := w.depth
	w.depth++
	b := MapBuilder{es: w.entries.take(depth, n), shapes: w.cv.Shapes}
	defer func() {
		w.depth--
		w.entries.give(depth, b.es)
	}()
	for range n {
		if err := w.stream.key(w.d); err != nil {
			return nil, err
		}
		k, err := w.key()
		if err != nil {
			return nil, err
		}
		v, err := w.value()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", k, err)
		}
		b.Set(k, v)
	}
	m := markHost(b.Build())
	return m, w.ch.Add(w.cv.Shapes.madeBytes())
}

// key decodes a map key as a string: a string key interned, any other
// scalar printed.
func (w *wireDecoder) key() (Value, error) {
	c, err := w.d.PeekCode()
	if err != nil {
		return nil, err
	}
	if isStr(c) {
		p, long, err := w.strBytes()
		if err != nil || p == nil {
			return long, err
		}
		return w.keys.Get(p), nil
	}
	k, err := w.d.DecodeInterfaceLoose()
	if err != nil {
		return nil, err
	}
	if ks, ok := k.(string); ok {
		return ks, nil
	}
	return fmt.Sprint(k), nil
}
