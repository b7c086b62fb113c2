package core

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
)

// Converting host Go data to values (FromGo and views are view.go;
// values back to Go data is togo.go).

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
		return &Vector{Slots: items, FromHost: true}, nil
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
		return &Vector{Slots: items, FromHost: true}, nil
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
	return &Vector{Slots: items, FromHost: true}, nil
}
