package sse

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// MaxLine is the longest line a Reader accepts (a single data line of a
// large tool-call delta fits easily).
const MaxLine = 4 << 20

// Event is one server-sent event.
type Event struct {
	// Type is the "event:" field ("" when absent, which SSE calls "message").
	Type string
	// Data holds the "data:" lines joined with "\n".
	Data []byte
}

// Reader reads events from an event stream. Not safe for concurrent use.
type Reader struct {
	sc   *bufio.Scanner
	line int
}

// NewReader returns a Reader over r.
func NewReader(r io.Reader) *Reader {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4<<10), MaxLine)
	return &Reader{sc: sc}
}

// Next returns the next event, io.EOF at the end of the stream, or an
// error naming the line that could not be read. An event cut off by the end
// of the stream (no blank line after it) is still returned.
func (r *Reader) Next() (Event, error) {
	var ev Event
	var data bytes.Buffer
	seen := false
	for r.sc.Scan() {
		r.line++
		line := r.sc.Bytes()
		line = bytes.TrimSuffix(line, []byte("\r"))
		if len(line) == 0 {
			if seen {
				ev.Data = data.Bytes()
				return ev, nil
			}
			continue
		}
		if line[0] == ':' {
			continue
		}
		field, value, found := bytes.Cut(line, []byte(":"))
		if found {
			value = bytes.TrimPrefix(value, []byte(" "))
		}
		switch string(field) {
		case "event":
			ev.Type = string(value)
			seen = true
		case "data":
			if data.Len() > 0 || (seen && ev.Data != nil) {
				data.WriteByte('\n')
			}
			data.Write(value)
			ev.Data = []byte{} // mark that a data field was seen
			seen = true
		default:
			// id, retry and unknown fields are ignored.
		}
	}
	if err := r.sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return Event{}, fmt.Errorf("sse: line %d: longer than %d bytes", r.line+1, MaxLine)
		}
		return Event{}, fmt.Errorf("sse: line %d: %w", r.line+1, err)
	}
	if seen {
		ev.Data = data.Bytes()
		return ev, nil
	}
	return Event{}, io.EOF
}
