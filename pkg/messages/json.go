package messages

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sync"
)

// FromJSON converts any JSON-encodable Go value (a struct with json tags, a
// typed slice, ...) to plain Go data through encoding/json: nil, bool,
// int64, float64, string, []any and map[string]any. Numbers keep their kind:
// an integer that fits is an int64, anything else a float64. Plain scalars
// are returned as they are.
func FromJSON(v any) (any, error) {
	switch v.(type) {
	case nil, bool, int64, float64, string:
		return v, nil
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode %T as JSON: %w", v, err)
	}
	var out any
	if err := DecodeJSONValue(raw, &out, JSONUseNumber); err != nil {
		return nil, fmt.Errorf("decode %T from JSON: %w", v, err)
	}
	return JSONNumbers(out)
}

// JSONDecodeOption is a json.Decoder setting for DecodeJSONValue.
type JSONDecodeOption uint8

const (
	// JSONUseNumber decodes numbers into an interface as json.Number
	// (json.Decoder.UseNumber).
	JSONUseNumber JSONDecodeOption = 1 << iota
	// JSONDisallowUnknownFields refuses an object key that the
	// destination struct has no field for
	// (json.Decoder.DisallowUnknownFields).
	JSONDisallowUnknownFields
)

// DecodeJSONValue decodes the JSON value data starts with into v as a new
// json.Decoder reading data, with the options given, decodes it: the same
// value and the same error. The decoder (and the buffer it reads into) is
// a kept one, so a small value costs no decoder of its own: one goes back
// for reuse only when its decode succeeded and read all of data (no more
// than keptJSONBytes), so nothing of one value is left for the next.
func DecodeJSONValue(data []byte, v any, opts JSONDecodeOption) error {
	pool := &jsonDecoders[opts&(JSONUseNumber|JSONDisallowUnknownFields)]
	d, _ := pool.Get().(*keptJSONDecoder)
	if d == nil {
		d = &keptJSONDecoder{}
		d.dec = json.NewDecoder(&d.r)
		if opts&JSONUseNumber != 0 {
			d.dec.UseNumber()
		}
		if opts&JSONDisallowUnknownFields != 0 {
			d.dec.DisallowUnknownFields()
		}
	}
	d.r.Reset(data)
	start := d.dec.InputOffset()
	err := d.dec.Decode(v)
	d.r.Reset(nil)
	if err == nil && len(data) <= keptJSONBytes && d.dec.InputOffset()-start == int64(len(data)) {
		pool.Put(d)
	}
	return err
}

// keptJSONBytes bounds the values whose decoder is kept for reuse: the
// decoder's buffer grows to the value's size.
const keptJSONBytes = 64 << 10

// keptJSONDecoder is a json.Decoder and the reader it reads, kept for
// reuse (DecodeJSONValue).
type keptJSONDecoder struct {
	r   bytes.Reader
	dec *json.Decoder
}

// jsonDecoders holds kept decoders by their options: a cache of memory,
// not state (a kept decoder has read all it was given, without error).
var jsonDecoders [4]sync.Pool

// JSONNumbers replaces every json.Number in v (a value decoded with
// json.Decoder.UseNumber), in place through maps and slices, by an int64
// when it is an integer that fits, else a float64, and returns v. A number
// out of float64 range is an error naming its path ("items[2].price").
func JSONNumbers(v any) (any, error) { return jsonNumbers(v, "") }

func jsonNumbers(v any, path string) (any, error) {
	switch x := v.(type) {
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i, nil
		}
		f, err := x.Float64()
		if err != nil {
			if path == "" {
				return nil, fmt.Errorf("number %s is out of range", x)
			}
			return nil, fmt.Errorf("%s: number %s is out of range", path, x)
		}
		return f, nil
	case []any:
		for i, e := range x {
			n, err := jsonNumbers(e, fmt.Sprintf("%s[%d]", path, i))
			if err != nil {
				return nil, err
			}
			x[i] = n
		}
	case map[string]any:
		for k, e := range x {
			p := k
			if path != "" {
				p = path + "." + k
			}
			n, err := jsonNumbers(e, p)
			if err != nil {
				return nil, err
			}
			x[k] = n
		}
	}
	return v, nil
}
