package core

import (
	"bufio"
	"fmt"
	"io"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/ptcfleet/ptc/pkg/messages"
)

// DecodeMsgpackFrom is DecodeMsgpack reading one msgpack value of size
// bytes from r as a stream: the value is built as its bytes arrive, and
// the encoded bytes are never held whole (a large tool result read from
// an object store). It gives what DecodeMsgpack gives for the same bytes,
// under bounds checked as it reads, since nothing can be scanned first:
// r must hold exactly size bytes; a declared array or map length must fit
// in the bytes still to come; containers nest at most
// messages.MaxNesting levels; the value holds at most
// messages.MaxValuesFor(size) values; map keys are scalars (a container
// key is an error, where DecodeMsgpack prints it).
func DecodeMsgpackFrom(r io.Reader, size int64) (Value, error) {
	return decodeMsgpackFrom(r, size, &charger{})
}

// decodeMsgpackFrom is DecodeMsgpackFrom counting what it builds in c.
func decodeMsgpackFrom(r io.Reader, size int64, c *charger) (v Value, err error) {
	defer func() {
		if p := recover(); p != nil {
			v, err = nil, fmt.Errorf("lisp: decode msgpack: malformed input: %v", p)
		}
	}()
	cr := &CountingReader{R: io.LimitReader(r, size+1)}
	br := bufio.NewReaderSize(cr, 64<<10)
	sb := &streamBounds{size: size, maxValues: messages.MaxValuesFor(size)}
	sb.consumed = func() int64 { return cr.N - int64(br.Buffered()) }
	w := wireDecoder{d: msgpack.NewDecoder(br), cv: Converter{Shapes: &ShapeCache{}}, ch: c, stream: sb}
	w.d.UseLooseInterfaceDecoding(true)
	w.d.SetMapDecoder(messages.DecodeMap)
	w.cv.Intern = true
	v, err = w.value()
	if err == nil {
		err = c.flush()
	}
	if err != nil {
		return nil, decodeFailed("msgpack", err)
	}
	if err := atEnd(br, sb); err != nil {
		return nil, fmt.Errorf("lisp: decode msgpack: %w", err)
	}
	return v, nil
}

// DecodeJSONFrom is DecodeJSON reading one JSON value of size bytes from r
// as a stream (see DecodeMsgpackFrom): r must hold exactly size bytes,
// and the value at most messages.MaxValuesFor(size) values; the other
// bounds and rules are DecodeJSON's, without its messages.MaxJSONBytes.
func DecodeJSONFrom(r io.Reader, size int64) (Value, error) {
	return decodeJSONFrom(r, size, &charger{})
}

// decodeJSONFrom is DecodeJSONFrom counting what it builds in c.
func decodeJSONFrom(r io.Reader, size int64, c *charger) (Value, error) {
	cr := &CountingReader{R: io.LimitReader(r, size+1)}
	j := newJSONDecoder(cr, size, c)
	v, err := j.value(0)
	if err == nil {
		err = c.flush()
	}
	if err != nil {
		return nil, decodeFailed("json", err)
	}
	if _, err := j.d.ReadToken(); err != io.EOF {
		if err == nil || cr.N <= size {
			return nil, fmt.Errorf("lisp: decode json: trailing data after the value at byte %d", j.d.InputOffset())
		}
		return nil, fmt.Errorf("lisp: decode json: %w", err)
	}
	if cr.N != size {
		return nil, fmt.Errorf("lisp: decode json: the stream holds %d bytes, not the %d announced", cr.N, size)
	}
	return v, nil
}

// atEnd checks that a msgpack stream ended with its value, after exactly
// its announced size (reading to the end also lets the source check what
// it read, e.g. an object store its digest).
func atEnd(br *bufio.Reader, sb *streamBounds) error {
	if _, err := br.ReadByte(); err == nil {
		return fmt.Errorf("trailing bytes after the value at byte %d", sb.consumed()-1)
	} else if err != io.EOF {
		return err
	}
	if n := sb.consumed(); n != sb.size {
		return fmt.Errorf("the stream holds %d bytes, not the %d announced", n, sb.size)
	}
	return nil
}

// CountingReader counts the bytes read through it.
type CountingReader struct {
	R io.Reader
	N int64
}

// Read reads from the underlying reader and counts the bytes.
func (c *CountingReader) Read(p []byte) (int, error) {
	n, err := c.R.Read(p)
	c.N += int64(n)
	return n, err
}
