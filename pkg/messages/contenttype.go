package messages

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"mime"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/vmihailenco/msgpack/v5"
)

// Content types of message bodies. A message without a HeaderContentType
// header is msgpack. Missions, cancels, tool requests and tool responses
// may travel as JSON instead (docs/wire.md says where and why not
// elsewhere); the JSON form has the same field names as the msgpack form,
// times as RFC 3339 strings and durations as integer nanoseconds.
const (
	// HeaderContentType names the body's encoding.
	HeaderContentType = "Content-Type"
	// ContentTypeMsgpack is the default encoding.
	ContentTypeMsgpack = "application/msgpack"
	// ContentTypeJSON is the JSON encoding.
	ContentTypeJSON = "application/json"
)

// MaxJSONBytes bounds a JSON body before it is parsed: 64 MiB, the largest
// payload a NATS server can be configured to carry (servers carry 1 MiB by
// default, and streams less; those limits apply first).
const MaxJSONBytes = 64 << 20

// IsJSON reports whether a Content-Type header value names JSON
// (parameters such as charset are ignored). An empty value is msgpack.
func IsJSON(contentType string) bool {
	if contentType == "" {
		return false
	}
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && mt == ContentTypeJSON
}

// CheckContentType returns an error naming the value when it is neither
// empty, msgpack nor JSON.
func CheckContentType(contentType string) error {
	if contentType == "" {
		return nil
	}
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil || (mt != ContentTypeJSON && mt != ContentTypeMsgpack) {
		return invalidf("content type %q is not %s or %s", contentType, ContentTypeMsgpack, ContentTypeJSON)
	}
	return nil
}

// MarshalAs encodes v in the content type named (msgpack when empty).
func MarshalAs(contentType string, v any) ([]byte, error) {
	if err := CheckContentType(contentType); err != nil {
		return nil, err
	}
	if IsJSON(contentType) {
		return EncodeJSON(v)
	}
	return Marshal(v)
}

// UnmarshalAs decodes data in the content type named (msgpack when empty)
// into v, with Unmarshal's guarantees either way.
func UnmarshalAs(contentType string, data []byte, v any) error {
	if err := CheckContentType(contentType); err != nil {
		return err
	}
	if IsJSON(contentType) {
		return DecodeJSON(data, v)
	}
	return Unmarshal(data, v)
}

// EncodeJSON encodes a wire value as JSON with its msgpack field names:
// it is encoded as msgpack, decoded as plain data (times stay time.Time)
// and written by encoding/json (times as RFC 3339 in UTC with nanoseconds,
// durations as integer nanoseconds, map keys sorted, NaN and infinities as
// JSONFloat renders them).
func EncodeJSON(v any) ([]byte, error) {
	raw, err := Marshal(v)
	if err != nil {
		return nil, err
	}
	dec := msgpack.NewDecoder(bytes.NewReader(raw))
	dec.UseLooseInterfaceDecoding(true)
	dec.SetMapDecoder(DecodeMap)
	plain, err := dec.DecodeInterfaceLoose()
	if err != nil {
		return nil, fmt.Errorf("messages: encode %T as JSON: %w", v, err)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // "->" in signatures stays readable
	if err := enc.Encode(utcTimes(plain, 0)); err != nil {
		return nil, fmt.Errorf("messages: encode %T as JSON: %w", v, err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// DecodeJSON decodes the JSON form of a wire value into v (a non-nil
// pointer): numbers keep their kind (JSONNumbers), strings become times
// where v's field is a time.Time, and the result goes through Unmarshal, so
// a JSON body decodes exactly as the same value sent as msgpack would.
// Bodies larger than MaxJSONBytes are refused before parsing.
func DecodeJSON(data []byte, v any) error {
	if len(data) > MaxJSONBytes {
		return fmt.Errorf("messages: decode %T: JSON body of %d bytes is larger than %d", v, len(data), MaxJSONBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var plain any
	if err := dec.Decode(&plain); err != nil {
		return fmt.Errorf("messages: decode %T: JSON: %w", v, err)
	}
	if dec.More() {
		return fmt.Errorf("messages: decode %T: JSON: trailing data after the value", v)
	}
	plain, err := JSONNumbers(plain)
	if err != nil {
		return fmt.Errorf("messages: decode %T: %w", v, err)
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return fmt.Errorf("messages: decode: target %T is not a non-nil pointer", v)
	}
	plain, err = jsonTimes(plain, rv.Type().Elem(), "", 0)
	if err != nil {
		return fmt.Errorf("messages: decode %T: %w", v, err)
	}
	raw, err := Marshal(plain)
	if err != nil {
		return err
	}
	return Unmarshal(raw, v)
}

// utcTimes returns v with every time.Time in UTC, so that JSON shows "Z"
// times whatever the local zone, and every NaN or infinite float as
// JSONFloat renders it; it changes v's containers in place.
func utcTimes(v any, depth int) any {
	if depth > maxDepth {
		return v
	}
	switch x := v.(type) {
	case time.Time:
		return x.UTC()
	case float64:
		return JSONFloat(x)
	case float32:
		return JSONFloat(float64(x))
	case []any:
		for i := range x {
			x[i] = utcTimes(x[i], depth+1)
		}
	case map[string]any:
		for k := range x {
			x[k] = utcTimes(x[k], depth+1)
		}
	}
	return v
}

// JSONFloat is how every JSON writer of the fleet renders a float: as it
// is when finite, else as the string "NaN", "Infinity" or "-Infinity"
// (the rendering of Protocol Buffers' JSON mapping). JSON has no such
// numbers and encoding/json refuses them, while msgpack, the form results
// and events are stored in, carries them; so a program that returns
// (/ 0.0 0.0) succeeds, and every reader shows what it returned.
func JSONFloat(f float64) any {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	return f
}

// JSONFloats returns plain data v with every NaN or infinite float
// rendered by JSONFloat, for a JSON writer that gets plain data rather
// than a wire value (EncodeJSON does this itself). v is not modified:
// containers holding no such float are returned as they are, the others
// copied.
func JSONFloats(v any) any {
	out, _ := jsonFloats(v, 0)
	return out
}

func jsonFloats(v any, depth int) (any, bool) {
	if depth > maxDepth {
		return v, false
	}
	switch x := v.(type) {
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return JSONFloat(x), true
		}
	case float32:
		if f := float64(x); math.IsNaN(f) || math.IsInf(f, 0) {
			return JSONFloat(f), true
		}
	case []any:
		var cp []any
		for i, e := range x {
			if r, changed := jsonFloats(e, depth+1); changed {
				if cp == nil {
					cp = slices.Clone(x)
				}
				cp[i] = r
			}
		}
		if cp != nil {
			return cp, true
		}
	case map[string]any:
		var cp map[string]any
		for k, e := range x {
			if r, changed := jsonFloats(e, depth+1); changed {
				if cp == nil {
					cp = maps.Clone(x)
				}
				cp[k] = r
			}
		}
		if cp != nil {
			return cp, true
		}
	}
	return v, false
}

var timeType = reflect.TypeFor[time.Time]()

// jsonTimes walks plain JSON data along the Go type t and parses the
// strings that land in time.Time fields (RFC 3339), so that the msgpack
// decoder sees times. Everything else is returned as it is.
func jsonTimes(v any, t reflect.Type, path string, depth int) (any, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("value nested deeper than %d levels", maxDepth)
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t == timeType:
		s, ok := v.(string)
		if !ok {
			if v == nil {
				return nil, nil
			}
			return nil, fmt.Errorf("%s: expected an RFC 3339 time string, got %T", pathOr(path), v)
		}
		tm, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return nil, fmt.Errorf("%s: %q is not an RFC 3339 time", pathOr(path), s)
		}
		return tm, nil
	case t.Kind() == reflect.Struct:
		m, ok := v.(map[string]any)
		if !ok {
			return v, nil // the msgpack decoder reports the mismatch
		}
		fields := wireFields(t)
		for k, e := range m {
			ft, ok := fields[k]
			if !ok {
				continue
			}
			n, err := jsonTimes(e, ft, joinPath(path, k), depth+1)
			if err != nil {
				return nil, err
			}
			m[k] = n
		}
		return m, nil
	case t.Kind() == reflect.Slice || t.Kind() == reflect.Array:
		l, ok := v.([]any)
		if !ok {
			return v, nil
		}
		for i, e := range l {
			n, err := jsonTimes(e, t.Elem(), fmt.Sprintf("%s[%d]", path, i), depth+1)
			if err != nil {
				return nil, err
			}
			l[i] = n
		}
		return l, nil
	case t.Kind() == reflect.Map && t.Elem().Kind() != reflect.Interface:
		m, ok := v.(map[string]any)
		if !ok {
			return v, nil
		}
		for k, e := range m {
			n, err := jsonTimes(e, t.Elem(), joinPath(path, k), depth+1)
			if err != nil {
				return nil, err
			}
			m[k] = n
		}
		return m, nil
	}
	return v, nil
}

// wireFields maps the msgpack names of t's fields (embedded structs
// flattened) to their types.
func wireFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		if f.Anonymous && f.Tag.Get("msgpack") == "" {
			et := f.Type
			for et.Kind() == reflect.Pointer {
				et = et.Elem()
			}
			if et.Kind() == reflect.Struct {
				for k, v := range wireFields(et) {
					out[k] = v
				}
				continue
			}
		}
		name, _, _ := strings.Cut(f.Tag.Get("msgpack"), ",")
		if name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = f.Type
	}
	return out
}

func joinPath(path, k string) string {
	if path == "" {
		return k
	}
	return path + "." + k
}

func pathOr(path string) string {
	if path == "" {
		return "value"
	}
	return path
}
