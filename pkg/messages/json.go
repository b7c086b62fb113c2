package messages

import (
	"bytes"
	"encoding/json"
	"fmt"
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
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var out any
	if err := dec.Decode(&out); err != nil {
		return nil, fmt.Errorf("decode %T from JSON: %w", v, err)
	}
	return JSONNumbers(out)
}

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
