package core

import (
	"encoding/json"
	"fmt"
)

// Host data enters the interpreter as views, not copies (docs/lisp.md,
// "Values"). FromGo makes a *Map over a map[string]any that reads the
// host's map in place (Map.src), and a *Vector over a []any or
// []map[string]any whose items are host records. A host record inside
// host data (an item of a host vector, a map nested in a host map) is a
// hostMap: the host's map itself as a Value, which costs no allocation.
// Lookups (keyword as function, get, get-in, count, contains?, find,
// destructuring) read it in place; every other operation takes it as the
// *Map view asMap makes of it, so a record behaves exactly as a view.
// A view converts only what a program reads, when it reads it: a value
// that already is an interpreter value (nil, bool, int64, float64, string)
// is returned as it is, other numbers are boxed, and a nested map or slice
// becomes a host record or a host vector in turn. Every operation other
// than a lookup (iteration, assoc, printing, equality, hashing) works on
// the map's interpreter form, built once on first need and kept in
// Map.cache.

// Get is Get on h.
func (h HostMap) Get(key Value) (Value, bool) { return srcGet(h.Src(), key) }

// hostValue converts one host value for a view: leaves that are
// interpreter values pass as they are, maps become host records, slices
// host vectors, anything else is converted as FromGo converts it.
func hostValue(x any) (Value, error) {
	switch v := x.(type) {
	case nil, bool, int64, float64, string:
		return x, nil
	case map[string]any:
		return recordOf(v), nil
	case []any:
		return sliceView(v)
	case []map[string]any:
		return sliceView(v)
	case int:
		return Int(int64(v)), nil
	case int32:
		return Int(int64(v)), nil
	case float32:
		return float64(v), nil
	}
	var cv Converter
	return cv.From(x)
}

// sliceView returns a host vector over xs: maps become host records
// (no allocation each, and no read of the record: its first touch is the
// program's own read of it), other items are converted by hostValue. A
// slice of records ([]map[string]any, or a []any of maps only) is viewed
// whole (recsView): the run allocates nothing per record until a consumer
// needs the vector's item slots.
func sliceView[T any](xs []T) (Value, error) {
	switch rs := any(xs).(type) {
	case []map[string]any:
		return HostVector(ItemsOf{Recs: rs}), nil
	case []any:
		if recs, ok := asRecords(rs); ok {
			return HostVector(ItemsOf{Recs: recs, anys: rs}), nil
		}
	}
	items := make([]Value, len(xs))
	for i, x := range xs {
		if m, ok := any(x).(map[string]any); ok {
			items[i] = recordOf(m)
			continue
		}
		v, err := hostValue(any(x))
		if err != nil {
			return nil, fmt.Errorf("[%d]: %w", i, err)
		}
		items[i] = v
	}
	return &Vector{Slots: items, FromHost: true}, nil
}

// viewName returns the host key a lookup key reads: host keys are strings,
// so a keyword finds the string of its name (the flex rule) and any other
// key finds nothing.
func viewName(key Value) (string, bool) {
	switch k := key.(type) {
	case *Keyword:
		return k.Name, true
	case string:
		return k, true
	}
	return "", false
}

// viewGet is Get on a view.
func (m *Map) viewGet(key Value) (Value, bool) { return srcGet(m.Src, key) }

// srcGet is Get on a host map.
func srcGet(src map[string]any, key Value) (Value, bool) {
	name, ok := viewName(key)
	if !ok {
		return nil, false
	}
	var hint *FieldHint
	if kw, ok := key.(*Keyword); ok {
		hint = &kw.slot
	}
	x, ok := LookupField(src, name, hint)
	if !ok {
		return nil, false
	}
	switch x.(type) {
	case nil, bool, int64, float64, string:
		return x, true
	}
	return viewValue(name, x), true
}

// viewKey is lookupKey on a view: the stored key is the host's string.
func (m *Map) viewKey(key Value) (Value, bool) { return SrcKey(m.Src, key) }

// SrcKey is lookupKey on a host map.
func SrcKey(src map[string]any, key Value) (Value, bool) {
	name, ok := viewName(key)
	if !ok {
		return nil, false
	}
	if _, ok := src[name]; !ok {
		return nil, false
	}
	return name, true
}

// viewValue converts the value of key name read from a view. A host value
// the interpreter cannot represent (a channel, a func, a bad json.Number)
// is found when a program reads it: the read raises a type error naming
// the key and the Go type, at the position of the form that read it.
// Outside a run (a Go caller reading a view) the panic value is a
// *HostDataError.
func viewValue(name string, x any) Value {
	v, err := hostValue(x)
	if err != nil {
		panic(&HostDataError{Key: name, Err: err})
	}
	return v
}

// fieldValue is viewValue: every record views its fields alike (equality
// and hashing read records through it, see fieldViewer).
func (HostMap) fieldValue(name string, x any) Value { return viewValue(name, x) }

// Form returns m's interpreter form: m itself, or for a view (or a map
// kept in a hashStore, mapstore.go) the map its entries convert to, built
// once and shared (a view may be read from several goroutines: pmap).
func (m *Map) Form() *Map {
	if m.Shape != nil || m.Root != nil {
		return m
	}
	return m.lazyForm()
}

// buildForm converts a view's entries into an interpreter map: a small
// map (keys in order by insertion, values beside the header) or a trie.
func (m *Map) buildForm() *Map {
	if len(m.Src) > SmallMapMax {
		b := NewExactMapBuilder(len(m.Src))
		for k, x := range m.Src {
			b.Set(k, viewValue(k, x))
		}
		return markHost(b.Build())
	}
	f := m.smallWith(nil, nil, false)
	f.host = true
	return f
}

// smallWith builds a small map of a view's entries, with key set to val
// when set is true (the caller checked that the result has at most
// smallMapMax entries). Keys are put in order by insertion.
func (m *Map) smallWith(key, val Value, set bool) *Map {
	a := &smallMapAlloc{}
	keys := make([]Value, 0, len(m.Src)+1)
	put := func(k, v Value) {
		i := len(keys)
		keys = append(keys, k)
		for ; i > 0 && keyOrder(keys[i-1], k) > 0; i-- {
			keys[i] = keys[i-1]
			a.v[i] = a.v[i-1]
		}
		keys[i], a.v[i] = k, v
	}
	name, isName := viewName(key)
	_, exists := m.Src[name]
	exists = exists && isName && set
	for k, x := range m.Src {
		if exists && k == name {
			put(k, val) // the stored spelling stays
			continue
		}
		put(k, viewValue(k, x))
	}
	if set && !exists {
		put(key, val)
	}
	n := len(keys)
	a.m = Map{Shape: &Shape{Keys: keys}, Vals: a.v[:n], N: int32(n)}
	return &a.m
}

// FromGo converts plain Go data (the JSON model: nil, bool, numbers,
// string, []any, map[string]any, json.Number, and slices/maps of those)
// into a Value. Map keys stay strings. Values that already are interpreter
// values pass through, and so does a WireResult's decoded value. Other
// types (structs) go through encoding/json.
//
// A map[string]any, []any or []map[string]any is not copied: the result
// is a view of it (see the top of this file) that converts what a program
// reads when it reads it, so a value inside such data that cannot be
// converted (a channel, a func) is reported when it is read, not here.
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
	case *WireResult:
		return v.Decoded, nil
	case *Keyword, *Vector, *Map, HostMap, *Set, *Closure, *Builtin, *Regex, *Var, *LazySeq:
		// already an interpreter value (a memory entry, a decoded tool
		// result's part): passed through as Converter.From passes it,
		// with no shape cache made for it
		return v, nil
	case nil, bool, string, json.Number, int, int64, int32, int16, int8,
		uint, uint64, uint32, uint16, uint8, float64, float32:
		// a scalar: no shapes to share and no strings to intern, so no
		// shape cache (1 KB) is made for it
		var cv Converter
		return cv.From(x)
	}
	cv := Converter{Shapes: &ShapeCache{}}
	cv.Intern = true
	return cv.From(x)
}

// AllValues reports whether every value of m is one FromGo gives back as
// it is (an interpreter value: nil, a bool, an int64, a float64, a
// string, a keyword, a collection, a closure), so that m can be read in
// place of its conversion.
func AllValues(m map[string]any) bool {
	for _, v := range m {
		switch v.(type) {
		case nil, bool, int64, float64, string, *Keyword, *Vector, *Map, HostMap, *Set, *Closure, *Builtin, *Regex, *Var, *LazySeq:
		default:
			return false
		}
	}
	return true
}

// lazyForm is form for a map without its own shape or trie: a view, a
// map kept in a hashStore, or a transient in a hashStore (which moves
// its entries into a trie in place and stays a transient).
func (m *Map) lazyForm() *Map {
	if m.Edit != nil {
		if m.Edit.Store != nil {
			m.spill()
		}
		return m
	}
	c := m.Cache.Load()
	if c != nil && c.Form != nil {
		return c.Form
	}
	var f *Map
	switch {
	case m.Src != nil:
		f = m.buildForm()
	case c != nil && c.Store != nil:
		f = &Map{Root: c.Store.trie(&EditToken{}), N: m.N}
	default:
		return m
	}
	if !m.Cache.CompareAndSwap(c, &MapCache{Form: f}) {
		return m.Cache.Load().Form
	}
	return f
}
