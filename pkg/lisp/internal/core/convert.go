package core

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
)

// FromGo converts plain Go data (the JSON model: nil, bool, numbers,
// string, []any, map[string]any, json.Number, and slices/maps of those)
// into a Value. Map keys stay strings. Values that already are interpreter
// values pass through, and so does a WireResult's decoded value. Other
// types (structs) go through encoding/json.
//
// A map[string]any, []any or []map[string]any is not copied: the result
// is a view of it (view.go) that converts what a program reads when it
// reads it, so a value inside such data that cannot be converted (a
// channel, a func) is reported when it is read, not here.
func FromGo(x any) (Value, error) {
	switch v := x.(type) {
	case map[string]any:
		return newMapView(v), nil
	case []any:
		return sliceView(v)
	case []map[string]any:
		return sliceView(v)
	case *Kept:
		return v.v, nil
	}
	cv := Converter{Shapes: &ShapeCache{}}
	cv.Intern = true
	return cv.From(x)
}

// Converter converts host data, sharing key shapes between records. The
// slabs of fromSlice lay out records contiguously, so a scan over
// converted records streams through memory, and its boxer shares the box
// of repeated short strings.
type Converter struct {
	Shapes *ShapeCache
	boxer
}

// From converts Go data x into a value, sharing shapes and keywords
// across the values it converts.
func (cv *Converter) From(x any) (Value, error) {
	switch v := x.(type) {
	case nil:
		return nil, nil
	case bool:
		return v, nil
	case int:
		return cv.BoxInt(int64(v)), nil
	case int64:
		return cv.BoxInt(v), nil
	case int32:
		return cv.BoxInt(int64(v)), nil
	case int16:
		return cv.BoxInt(int64(v)), nil
	case int8:
		return cv.BoxInt(int64(v)), nil
	case uint:
		if uint64(v) > math.MaxInt64 {
			return float64(v), nil
		}
		return cv.BoxInt(int64(v)), nil
	case uint64:
		if v > math.MaxInt64 {
			return float64(v), nil
		}
		return cv.BoxInt(int64(v)), nil
	case uint32:
		return cv.BoxInt(int64(v)), nil
	case uint16:
		return cv.BoxInt(int64(v)), nil
	case uint8:
		return cv.BoxInt(int64(v)), nil
	case float64:
		return cv.BoxFloat(v), nil
	case float32:
		return float64(v), nil
	case json.Number:
		s := string(v)
		if !strings.ContainsAny(s, ".eE") {
			if n, err := strconv.ParseInt(s, 10, 64); err == nil {
				return cv.BoxInt(n), nil
			}
		}
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, fmt.Errorf("bad number %q: %w", s, err)
		}
		return cv.BoxFloat(f), nil
	case string:
		return cv.boxString(v), nil
	case []any:
		return fromSlice(cv, v)
	case map[string]any:
		return cv.fromMap(v, nil)
	case []map[string]any:
		return fromSlice(cv, v)
	case []string:
		items := make([]Value, len(v))
		for i, it := range v {
			items[i] = it
		}
		return &Vector{Slots: items, Host: true}, nil
	case *Keyword, *Vector, *Map, HostMap, *Set, *Closure, *Builtin, *Regex, *Var, *LazySeq:
		return v, nil
	case *WireResult:
		return v.Decoded, nil
	case *Kept:
		return v.v, nil
	}
	rv := reflect.ValueOf(x)
	switch rv.Kind() {
	case reflect.Slice, reflect.Array:
		items := make([]Value, rv.Len())
		for i := range items {
			c, err := cv.From(rv.Index(i).Interface())
			if err != nil {
				return nil, fmt.Errorf("[%d]: %w", i, err)
			}
			items[i] = c
		}
		return &Vector{Slots: items, Host: true}, nil
	case reflect.Map:
		if rv.Type().Key().Kind() == reflect.String {
			b := NewMapBuilder(rv.Len())
			b.shapes = cv.Shapes
			it := rv.MapRange()
			for it.Next() {
				c, err := cv.From(it.Value().Interface())
				if err != nil {
					return nil, fmt.Errorf("%s: %w", it.Key().String(), err)
				}
				b.Set(it.Key().String(), c)
			}
			return markHost(b.Build()), nil
		}
	case reflect.Pointer:
		if rv.IsNil() {
			return nil, nil
		}
	}
	data, err := json.Marshal(x)
	if err != nil {
		return nil, fmt.Errorf("unsupported host value of type %T: %w", x, err)
	}
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.UseNumber()
	var generic any
	if err := dec.Decode(&generic); err != nil {
		return nil, fmt.Errorf("unsupported host value of type %T: %w", x, err)
	}
	return cv.From(generic)
}

// fromMap converts a host map, placing a small one in a when a is not nil.
func (cv *Converter) fromMap(m map[string]any, a *smallMapAlloc) (Value, error) {
	if sh := cv.Shapes.match(m); sh != nil {
		// the keys of a shape seen before: values in its order, no
		// builder and no sort
		n := len(sh.Keys)
		var h *Map
		var vals []Value
		if n > SmallMapMax {
			h, vals = cv.Shapes.Wide(n)
		} else {
			if a == nil {
				a = cv.Shapes.small()
			}
			h, vals = &a.m, a.v[:n]
		}
		for i, k := range sh.Keys {
			ks := k.(string)
			c, err := cv.From(m[ks])
			if err != nil {
				return nil, fmt.Errorf("%s: %w", ks, err)
			}
			vals[i] = c
		}
		*h = Map{Shape: sh, Vals: vals, N: int32(n), host: true}
		return h, nil
	}
	b := NewExactMapBuilder(len(m))
	b.shapes = cv.Shapes
	for k, it := range m {
		c, err := cv.From(it)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", k, err)
		}
		b.Set(k, c)
	}
	return markHost(b.buildIn(a)), nil
}

// markHost marks a converted map as host data.
func markHost(m *Map) *Map {
	if m != EmptyMap {
		m.host = true
	}
	return m
}

// fromSlice converts a host slice. Its small maps (records) are laid out
// in one slab, in order: a scan over them reads memory sequentially, which
// the CPU prefetches, instead of chasing one allocation per record. The
// slab lives as long as any record in it.
func fromSlice[T any](cv *Converter, xs []T) (Value, error) {
	items := make([]Value, len(xs))
	small := 0
	for _, x := range xs {
		if m, ok := any(x).(map[string]any); ok && len(m) > 0 && len(m) <= SmallMapMax {
			small++
		}
	}
	var slab []smallMapAlloc
	if small > 1 {
		slab = make([]smallMapAlloc, small)
	}
	for i, x := range xs {
		var c Value
		var err error
		if m, ok := any(x).(map[string]any); ok && len(slab) > 0 && len(m) > 0 && len(m) <= SmallMapMax {
			c, err = cv.fromMap(m, &slab[0])
			slab = slab[1:]
		} else {
			c, err = cv.From(any(x))
		}
		if err != nil {
			return nil, fmt.Errorf("[%d]: %w", i, err)
		}
		items[i] = c
	}
	return &Vector{Slots: items, Host: true}, nil
}

// ToGo converts a Value to plain Go data: keywords become their names,
// vectors, sets and realised lazy seqs become []any, maps become
// map[string]any. Map keys follow the boundary rule: a keyword key is
// spelled with '_' for '-' (:row-count → "row_count"); a string key is data
// and goes out exactly as it is; any other key (a number, a vector, ...)
// becomes its str form. When two keys of one map give the same host key, a
// key spelled exactly (a string, or a keyword without '-') wins over a
// respelled one; between two respelled keys the first in key order wins.
// Functions and regexes become their printed form ("#fn[x]", "#\"p\""),
// vars "#'name": the result is always plain data (use Result.Memory to keep
// closures between runs).
func ToGo(v Value) any { return toGo(v, false) }

// ShareToGo is ToGo that hands host data back without copying it, at
// whatever depth it sits: a host map, a host record or a host vector of
// records read in place (a view of the caller's Go data) comes back as the
// caller's own map or slice; other host data (a tool result decoded from
// its wire bytes, Go data FromGo had to convert) comes back as a *Kept
// holding the interpreter value, which encodes and converts as its Go
// form. A program cannot change either (its changes make new values), so
// converting data a program kept unchanged costs nothing whatever its
// size. Values a program made are converted as ToGo converts them. A run's
// memory (Result.Step, the agent's Step.Memory) uses it; a return value,
// which a caller may change in place (rounding floats), uses ToGo.
func ShareToGo(v Value) any { return toGo(v, true) }

func toGo(v Value, share bool) any {
	switch x := v.(type) {
	case nil, bool, int64, float64, string:
		return x
	case *Keyword:
		return x.Name
	case *Vector:
		if share && x.src != nil {
			return x.src.src.hostSlice()
		}
		if share && x.Host {
			return &Kept{v: x}
		}
		out := make([]any, x.Len())
		for i, it := range x.Items() {
			out[i] = toGo(it, share)
		}
		return out
	case *LazySeq:
		items, _ := x.Snapshot()
		out := make([]any, len(items))
		for i, it := range items {
			out[i] = toGo(it, share)
		}
		return out
	case *Set:
		items := x.Items()
		out := make([]any, len(items))
		for i, it := range items {
			out[i] = toGo(it, share)
		}
		return out
	case HostMap:
		if share {
			return x.Src()
		}
		return viewToGo(x.Src())
	case *Map:
		if x.Src != nil {
			if share {
				return x.Src
			}
			return viewToGo(x.Src)
		}
		if share && x.host {
			return &Kept{v: x}
		}
		return mapToGo(x, share)
	case *Var:
		return "#'" + x.Name
	case *Reduced:
		return toGo(x.Val, share)
	case *Closure, *Builtin, *Regex:
		return PrStr(x)
	}
	return v
}

// mapToGo converts a map (not a view) entry by entry, its keys by the
// boundary rule.
func mapToGo(x *Map, share bool) map[string]any {
	out := make(map[string]any, x.Len())
	var respelled []MapEntry
	for _, e := range x.Entries() {
		k, exact := hostKey(e.Key)
		if !exact {
			respelled = append(respelled, e)
			continue
		}
		out[k] = toGo(e.Val, share)
	}
	for _, e := range respelled {
		k, _ := hostKey(e.Key)
		if _, taken := out[k]; !taken {
			out[k] = toGo(e.Val, share)
		}
	}
	return out
}

// hostKey renders a map key for the host (the boundary rule, see ToGo):
// a string as is, a keyword's name with '-' replaced by '_', any other key
// by its str form. exact reports whether the key is spelled as it is in
// the program (a string or a keyword without '-').
func hostKey(k Value) (name string, exact bool) {
	switch x := k.(type) {
	case string:
		return x, true
	case *Keyword:
		if strings.IndexByte(x.Name, '-') < 0 {
			return x.Name, true
		}
		return strings.ReplaceAll(x.Name, "-", "_"), false
	}
	return Str(k), false
}
