package core

import (
	"fmt"
	"reflect"
	"sync/atomic"
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

// HostMap is a host record read in place: a pointer to the variable that
// holds the host's map (an item of the host's []map[string]any, or a
// variable of its own for a map nested in host data). One pointer is
// stored in a Value without an allocation, and compares (==) and hashes
// in a Go map by identity, as a *Map does (a Go map value would panic in
// both). A record read twice from the same host slot is the same Value.
type HostMap struct{ p *map[string]any }

// recordOf returns m as a Value: a hostMap, or the empty map for a nil
// map (which, unlike an empty one, it can tell without reading m). The
// record's variable is allocated here; a record of a host vector is
// recordAt of its slot instead, which allocates nothing.
func recordOf(m map[string]any) Value {
	if m == nil {
		return EmptyMap
	}
	return HostMap{&m}
}

// recordAt returns the host record held at *p (the empty map for nil).
func recordAt(p *map[string]any) Value {
	if *p == nil {
		return EmptyMap
	}
	return HostMap{p}
}

// Src returns the host's map.
func (h HostMap) Src() map[string]any { return *h.p }

// view returns the *Map view of h (an empty map is the empty map).
func (h HostMap) view() *Map { return newMapView(h.Src()) }

// Get is Get on h.
func (h HostMap) Get(key Value) (Value, bool) { return srcGet(h.Src(), key) }

// AsMap returns v as a *Map when it is a map: a *Map as it is, a host
// record as its view (a new header). It is the one way a value that must
// be a map is taken as one.
func AsMap(v Value) (*Map, bool) {
	switch x := v.(type) {
	case *Map:
		return x, true
	case HostMap:
		return x.view(), true
	}
	return nil, false
}

// MapValue returns v with a host record replaced by its *Map view, for
// code that dispatches on a value's type.
func MapValue(v Value) Value {
	if h, ok := v.(HostMap); ok {
		return h.view()
	}
	return v
}

// newMapView returns a view of src (an empty map is the empty map).
func newMapView(src map[string]any) *Map {
	if len(src) == 0 {
		return EmptyMap
	}
	return &Map{Src: src, host: true}
}

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
	return &Vector{Slots: items, Host: true}, nil
}

// recsView is the source of a host vector of records: the host's slice
// itself, and the vector's item slots (recordOf of each record), made at
// most once, on first need. Values are shared between goroutines (pmap),
// so the slots are published with a compare-and-swap: racing first readers
// may each build them, one wins, and all return the winner's.
type recsView struct {
	src   ItemsOf // the host's records
	slots atomic.Pointer[[]Value]
}

// asRecords returns xs as a []map[string]any when every item is a
// map[string]any (a []any of records, as encoding/json gives): one slice of
// map references, so that each record is then read in place through its
// slot (recordAt) like the records of a []map[string]any.
func asRecords(xs []any) ([]map[string]any, bool) {
	for _, x := range xs {
		if _, ok := x.(map[string]any); !ok {
			return nil, false
		}
	}
	recs := make([]map[string]any, len(xs))
	for i, x := range xs {
		recs[i] = x.(map[string]any)
	}
	return recs, true
}

// HostVector returns the host vector viewing the host records recs.
func HostVector(recs ItemsOf) *Vector {
	if recs.Len() == 0 {
		return &Vector{Host: true}
	}
	hv := &hostVector{rv: recsView{src: recs}}
	hv.v = Vector{src: &hv.rv, Host: true}
	return &hv.v
}

// hostVector is a host vector and its source, made in one allocation.
type hostVector struct {
	v  Vector
	rv recsView
}

// items returns the item slots, making them on the first call.
func (h *recsView) items() []Value {
	if p := h.slots.Load(); p != nil {
		return *p
	}
	items := h.src.From(0)
	if h.slots.CompareAndSwap(nil, &items) {
		return items
	}
	return *h.slots.Load()
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

// HostDataError is a value in host data that the interpreter cannot
// represent, found when a program read it (see FromGo).
type HostDataError struct {
	Key string // the map key the value was read under
	Err error  // what the conversion reported, naming the Go type
}

// Error names the path and the Go type the host data holds there.
func (e *HostDataError) Error() string {
	return fmt.Sprintf("host data: value of %q: %v", e.Key, e.Err)
}

// Unwrap returns the conversion error.
func (e *HostDataError) Unwrap() error { return e.Err }

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

// sameView reports whether x and y view the same host map.
func sameView(x, y *Map) bool {
	return x.Src != nil && y.Src != nil && mapIdentity(x.Src) == mapIdentity(y.Src)
}

// mapIdentity returns the address that identifies m (two map values are
// the same map when they have the same one). reflect documents the
// pointer of a map value; it is only compared, never dereferenced.
func mapIdentity(m map[string]any) uintptr { return reflect.ValueOf(m).Pointer() }

// hostSlice returns the host's own slice the items view: a []any as the
// host gave it, or a []map[string]any.
func (s ItemsOf) hostSlice() any {
	if s.anys != nil {
		return s.anys
	}
	return s.Recs
}

// viewToGo is ToGo of a view: a copy of the host's map with the values
// converted as FromGo and ToGo convert them (plain data is copied as it
// is, without conversion). It is a copy, not the host's map, because what
// ToGo gives is the caller's to change: rounding a return value's floats,
// adding a fail value's reason, a tool normalising its arguments all
// write in place, and host data must come back as it came. A value the
// interpreter cannot represent goes back as it came.
func viewToGo(src map[string]any) any { return copyHost(src) }

// copyHost copies plain host data, converting what is not plain.
func copyHost(x any) any {
	switch v := x.(type) {
	case nil, bool, int64, float64, string:
		return x
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = copyHost(e)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = copyHost(e)
		}
		return out
	}
	hv, err := hostValue(x)
	if err != nil {
		return x
	}
	return ToGo(hv)
}

// ItemsOf is a vector's items as a loop reads them one by one: its item
// slots, or the host records of a host vector whose slots are not made
// (each read as recordOf, allocating nothing).
type ItemsOf struct {
	Items []Value
	Recs  []map[string]any // host records, when set
	// anys is the host's own slice when it is a []any (recs holds the same
	// maps): what ShareToGo hands back
	anys []any
}

// hosted reports whether the items are host records read in place.
func (s ItemsOf) hosted() bool { return s.Recs != nil }

// slice returns items i to j (host records stay read in place).
func (s ItemsOf) slice(i, j int) ItemsOf {
	switch {
	case s.anys != nil:
		return ItemsOf{Recs: s.Recs[i:j:j], anys: s.anys[i:j:j]}
	case s.Recs != nil:
		return ItemsOf{Recs: s.Recs[i:j:j]}
	}
	return ItemsOf{Items: s.Items[i:j:j]}
}

// ItemsOf returns v's items to be read one by one, without making a host
// vector's item slots.
func (v *Vector) ItemsOf() ItemsOf {
	if h := v.src; h != nil {
		if p := h.slots.Load(); p != nil {
			return ItemsOf{Items: *p}
		}
		return h.src
	}
	return ItemsOf{Items: v.Slots}
}

// SeqItems is Seq for a loop that reads the items one by one: a vector's
// items as itemsOf (a host vector's records read in place), anything else
// as Seq gives it.
func (th *Thread) SeqItems(coll Value, fn string, argN int) ItemsOf {
	if v, ok := coll.(*Vector); ok {
		return v.ItemsOf()
	}
	return ItemsOf{Items: th.Seq(coll, fn, argN)}
}

// Len returns the number of items.
func (s ItemsOf) Len() int {
	switch {
	case s.Recs != nil:
		return len(s.Recs)
	}
	return len(s.Items)
}

// At returns item i (a host record's read asks for the one a scan reads
// next: see prefetch).
func (s ItemsOf) At(i int) Value {
	if s.Recs != nil {
		s.prefetch(i)
		return recordAt(&s.Recs[i])
	}
	return s.Items[i]
}

// From returns the items from i on as a slice (made for host records).
func (s ItemsOf) From(i int) []Value {
	if !s.hosted() {
		return s.Items[i:]
	}
	out := make([]Value, s.Len()-i)
	for j := range out {
		out[j] = s.At(i + j)
	}
	return out
}

// AssocRecord is Assoc of key to val on the host record h when h has more
// than SmallMapMax and at most WideMapMax fields and key names one of them
// (a keyword or string, flex): the same map as the one Assoc on h's view
// returns, built as a wide map whose shape (keys in order, shared by the
// records of one key set) is interned in th's cache and whose values take
// one slot of th's slab each, instead of a trie of the view's entries
// built for one write. The stored spelling of the key stays. ok is false,
// and nothing is built, for any other record or key: the caller then
// takes the general way.
func (th *Thread) AssocRecord(h HostMap, key, val Value) (m *Map, ok bool) {
	src := h.Src()
	if len(src) <= SmallMapMax || len(src) > WideMapMax {
		return nil, false
	}
	name, isName := viewName(key)
	if !isName {
		return nil, false
	}
	if _, exists := src[name]; !exists {
		return nil, false
	}
	if th.shapes == nil {
		th.shapes = &ShapeCache{}
	}
	c := th.shapes
	sh := c.match(src)
	if sh == nil {
		es := make([]MapEntry, 0, len(src))
		for k := range src {
			es = append(es, MapEntry{Key: k})
		}
		es = hostEntries(es)
		sh = c.Get(es)
	}
	m, vals := c.Wide(len(sh.Keys))
	for i, k := range sh.Keys {
		s := k.(string)
		if s == name {
			vals[i] = val
			continue
		}
		vals[i] = viewValue(s, src[s])
	}
	*m = Map{Shape: sh, Vals: vals, N: int32(len(sh.Keys))}
	return m, true
}
