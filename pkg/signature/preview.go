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
// `string "abc"`, `integer 42`, `nil`, `list [1 2 3]`. A firewalled value
// (hidden true: it sits under a "_" field) is named by its kind only:
// `string <Firewalled>`.
func describe(v any, hidden bool) string {
	kind, ok := kindWord(v)
	switch {
	case !ok || v == nil:
		return kind
	case hidden:
		return kind + " " + FirewalledText
	}
	return kind + " " + preview(v)
}

// kindWord names the kind of v for messages ("string", "integer", "list",
// "nil", ...); ok is false when v is of no kind a signature knows, and
// kind is then its Go type.
func kindWord(v any) (kind string, ok bool) {
	switch v.(type) {
	case nil:
		return "nil", true
	case string:
		return "string", true
	case bool:
		return "boolean", true
	case float64, float32:
		return "float", true
	case int64, int, int32, int16, int8, uint, uint64, uint32, uint16, uint8, uintptr:
		return "integer", true
	case json.Number:
		return "number", true
	case []any, ListView:
		return "list", true
	case map[string]any, MapView:
		return "map", true
	}
	switch k := reflect.TypeOf(v).Kind(); {
	case k == reflect.String:
		return "string", true
	case k == reflect.Bool:
		return "boolean", true
	case isIntKind(k):
		return "integer", true
	case k == reflect.Float32 || k == reflect.Float64:
		return "float", true
	case k == reflect.Slice || k == reflect.Array:
		return "list", true
	case k == reflect.Map:
		return "map", true
	}
	return fmt.Sprintf("%T", v), false
}

// preview renders v in a compact Clojure-like form, cut to maxPreview
// characters with "..." when longer. It stops walking the value once the limit
// is reached, so previews of huge values are cheap. Cuts fall on character
// boundaries and are always marked with "...", and the preview is valid
// UTF-8 whatever v holds; the values of "_" fields show as <Firewalled>.
func preview(v any) string {
	w := previewWriter{}
	w.value(v, 0)
	s := strings.ToValidUTF8(w.b.String(), "\uFFFD")
	if utf8.RuneCountInString(s) <= maxPreview && !w.full {
		return s
	}
	r := []rune(s)
	if len(r) > maxPreview-3 {
		r = r[:maxPreview-3]
	}
	return string(r) + "..."
}

// cutString returns the longest prefix of s of at most n bytes that ends
// on a character boundary.
func cutString(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
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
			// an open quote: the preview ends in "...", so the reader
			// (and the firewall's scrubber) sees the cut
			q := strconv.Quote(cutString(x, maxPreview*2))
			w.write(q[:len(q)-1])
			w.full = true
			return
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
		if IsFirewalled(k) {
			w.write(FirewalledText)
			continue
		}
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
			if IsFirewalled(e.k) {
				w.write(FirewalledText)
				continue
			}
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
