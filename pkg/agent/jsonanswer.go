package agent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/ptcfleet/ptc/pkg/messages"
)

// errNoJSON is returned by extractJSON when a reply holds no JSON value.
var errNoJSON = errors.New("no JSON value found in the answer")

// maxJSONStarts bounds how many candidate '{' / '[' positions extractJSON
// tries in prose, so a reply full of braces cannot make it quadratic.
const maxJSONStarts = 64

// extractJSON finds the JSON answer in a model's reply and decodes it as
// plain data (numbers exactly: integers that fit become int64, the rest
// float64). It tries, in order:
//
//  1. fenced code blocks (```json ... ``` or ``` ... ```), in order;
//  2. the whole reply (which admits top-level primitives such as 42, true
//     or "text" when primitives is true);
//  3. the first object or array embedded in prose: each '{' or '[' in turn
//     (up to 64) is decoded as one JSON value, trailing text ignored.
//
// A top-level primitive is accepted only in steps 1 and 2 and only when
// primitives is true. The error names why nothing was found (the decoder's
// error for the best candidate).
func extractJSON(reply string, primitives bool) (any, error) {
	var firstErr error
	note := func(err error) {
		if firstErr == nil {
			firstErr = err
		}
	}
	for _, block := range fencedBlocks(reply) {
		v, err := decodeJSON(block, true)
		if err == nil && (primitives || isComposite(v)) {
			return v, nil
		}
		if err != nil {
			note(err)
		}
	}
	whole := strings.TrimSpace(reply)
	if v, err := decodeJSON(whole, true); err == nil && (primitives || isComposite(v)) {
		return v, nil
	} else if err != nil && whole != "" && (whole[0] == '{' || whole[0] == '[') {
		note(err)
	}
	tries := 0
	for i := 0; i < len(reply) && tries < maxJSONStarts; i++ {
		c := reply[i]
		if c != '{' && c != '[' {
			continue
		}
		tries++
		v, err := decodeJSON(reply[i:], false)
		if err == nil {
			return v, nil
		}
		note(err)
	}
	if firstErr != nil {
		return nil, fmt.Errorf("%w: %v", errNoJSON, firstErr)
	}
	return nil, errNoJSON
}

func isComposite(v any) bool {
	switch v.(type) {
	case map[string]any, []any:
		return true
	}
	return false
}

// decodeJSON decodes one JSON value from s with exact numbers. With whole
// set, only whitespace may follow the value.
func decodeJSON(s string, whole bool) (any, error) {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if whole {
		if _, err := dec.Token(); err != io.EOF {
			return nil, fmt.Errorf("invalid JSON: unexpected data after the value at offset %d", dec.InputOffset())
		}
	}
	return messages.JSONNumbers(v)
}

// fencedBlocks returns the contents of the ``` fenced blocks of s, in
// order; an unterminated last fence runs to the end.
func fencedBlocks(s string) []string {
	var out []string
	for {
		i := strings.Index(s, "```")
		if i < 0 {
			return out
		}
		s = s[i+3:]
		// the info string (json, JSON, javascript...) runs to the newline
		nl := strings.IndexByte(s, '\n')
		end := strings.Index(s, "```")
		if nl < 0 || (end >= 0 && end < nl) {
			// ```{...}``` on one line
			if end < 0 {
				return append(out, s)
			}
			out = append(out, s[:end])
			s = s[end+3:]
			continue
		}
		info := strings.TrimSpace(s[:nl])
		body := s[nl+1:]
		if info != "" && strings.ContainsAny(info[:1], "{[\"") {
			body = s // no info string: the JSON starts on the fence line
		}
		end = strings.Index(body, "```")
		if end < 0 {
			return append(out, body)
		}
		out = append(out, body[:end])
		s = body[end+3:]
	}
}

// jsonBytes encodes v as compact JSON without HTML escaping (tool results
// for the model).
func jsonBytes(v any) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		b, _ := json.Marshal(fmt.Sprint(v))
		return b
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}
