package signature

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// maxPreview bounds the length of a value preview in messages.
const maxPreview = 80

// describe names a value's kind and shows a short preview of it:
// `string "abc"`, `integer 42`, `nil`, `list [1 2 3]`.
func describe(v any) string {
	switch x := v.(type) {
	case nil:
		return "nil"
	case string:
		return "string " + preview(x)
	case bool:
		return "boolean " + preview(x)
	case float64, float32:
		return "float " + preview(x)
	case int64, int, int32, int16, int8, uint, uint64, uint32, uint16, uint8, uintptr:
		return "integer " + preview(x)
	case json.Number:
		return "number " + preview(x)
	case []any:
		return "list " + preview(x)
	case map[string]any:
		return "map " + preview(x)
	case ListView:
		return "list " + preview(x)
	case MapView:
		return "map " + preview(x)
	}
	switch k := reflect.TypeOf(v).Kind(); {
	case k == reflect.String:
		return "string " + preview(v)
	case k == reflect.Bool:
		return "boolean " + preview(v)
	case isIntKind(k):
		return "integer " + preview(v)
	case k == reflect.Float32 || k == reflect.Float64:
		return "float " + preview(v)
	case k == reflect.Slice || k == reflect.Array:
		return "list " + preview(v)
	case k == reflect.Map:
		return "map " + preview(v)
	}
	return fmt.Sprintf("%T", v)
}

// preview renders v in a compact Clojure-like form, cut to maxPreview
// characters with "..." when longer. It stops walking the value once the limit
// is reached, so previews of huge values are cheap.
func preview(v any) string {
	w := previewWriter{}
	w.value(v, 0)
	s := w.b.String()
	if utf8.RuneCountInString(s) <= maxPreview && !w.full {
		return s
	}
	r := []rune(s)
	if len(r) > maxPreview-3 {
		r = r[:maxPreview-3]
	}
	return string(r) + "..."
}

type previewWriter struct {
	b    strings.Builder
	full bool
}

func (w *previewWriter) write(s string) {
	if w.full {
		return
	}
	w.b.WriteString(s)
	if w.b.Len() > maxPreview*4 {
		w.full = true
	}
}

func (w *previewWriter) value(v any, depth int) {
	if w.full {
		return
	}
	if depth > 8 {
		w.write("...")
		return
	}
	switch x := v.(type) {
	case nil:
		w.write("nil")
	case string:
		if len(x) > maxPreview*2 {
			x = x[:maxPreview*2]
		}
		w.write(strconv.Quote(x))
	case bool:
		w.write(strconv.FormatBool(x))
	case float64:
		w.write(formatFloat(x))
	case float32:
		w.write(formatFloat(float64(x)))
	case json.Number:
		w.write(string(x))
	case []any:
		w.write("[")
		for i, e := range x {
			if i > 0 {
				w.write(" ")
			}
			w.value(e, depth+1)
			if w.full {
				return
			}
		}
		w.write("]")
	case map[string]any:
		w.mapView(plainMap(x), depth)
	case ListView:
		w.write("[")
		for i := range x.Len() {
			if i > 0 {
				w.write(" ")
			}
			w.value(x.At(i), depth+1)
			if w.full {
				return
			}
		}
		w.write("]")
	case MapView:
		w.mapView(x, depth)
	default:
		w.reflectValue(reflect.ValueOf(v), depth)
	}
}

// mapView writes m as {:k v, ...} in key order.
func (w *previewWriter) mapView(m MapView, depth int) {
	keys := m.Keys()
	slices.Sort(keys)
	w.write("{")
	for i, k := range keys {
		if i > 0 {
			w.write(", ")
		}
		w.write(":" + k + " ")
		e, _ := m.Lookup(k)
		w.value(e, depth+1)
		if w.full {
			return
		}
	}
	w.write("}")
}

func (w *previewWriter) reflectValue(rv reflect.Value, depth int) {
	switch k := rv.Kind(); {
	case k == reflect.String:
		w.value(rv.String(), depth)
	case k == reflect.Bool:
		w.value(rv.Bool(), depth)
	case k >= reflect.Int && k <= reflect.Int64:
		w.write(strconv.FormatInt(rv.Int(), 10))
	case k >= reflect.Uint && k <= reflect.Uintptr:
		w.write(strconv.FormatUint(rv.Uint(), 10))
	case k == reflect.Float32 || k == reflect.Float64:
		w.write(formatFloat(rv.Float()))
	case k == reflect.Slice || k == reflect.Array:
		w.write("[")
		for i := range rv.Len() {
			if i > 0 {
				w.write(" ")
			}
			w.value(rv.Index(i).Interface(), depth+1)
			if w.full {
				return
			}
		}
		w.write("]")
	case k == reflect.Map:
		type kv struct {
			k string
			v reflect.Value
		}
		var kvs []kv
		for it := rv.MapRange(); it.Next(); {
			kvs = append(kvs, kv{fmt.Sprint(it.Key().Interface()), it.Value()})
		}
		slices.SortFunc(kvs, func(a, b kv) int { return strings.Compare(a.k, b.k) })
		w.write("{")
		for i, e := range kvs {
			if i > 0 {
				w.write(", ")
			}
			w.write(":" + e.k + " ")
			w.value(e.v.Interface(), depth+1)
			if w.full {
				return
			}
		}
		w.write("}")
	default:
		w.write(fmt.Sprintf("%T", rv.Interface()))
	}
}

// formatFloat prints a float so it reads as a float: 10 prints "10.0".
func formatFloat(f float64) string {
	s := strconv.FormatFloat(f, 'g', -1, 64)
	if !strings.ContainsAny(s, ".eEnN") {
		s += ".0"
	}
	return s
}
