package core

import (
	"slices"
)

// Reading and writing maps and sets: lookup (flex), entries in key order,
// assoc and dissoc (persistent and transient), and the key lookups the
// builtins share (GetKey, KwGet, GetPath). A map here may be a view of a
// host map (view.go), a small or wide map (shape.go), a trie (trie.go) or a
// stored map (mapstore.go).

// Transient returns a private copy of m's header that Assoc may mutate.
func (m *Map) Transient() *Map {
	if s := m.Store(); s != nil && m.Edit == nil {
		return &Map{N: m.N, Edit: &EditToken{Store: s.clone()}}
	}
	m = m.Form()
	return &Map{Shape: m.Shape, Vals: m.Vals, Root: m.Root, N: m.N, Edit: &EditToken{}}
}

// Entries returns the entries in key order; callers must not modify it.
func (m *Map) Entries() []MapEntry {
	m = m.Form()
	if c := m.Cache.Load(); c != nil {
		if c.sorted == nil && c.chunks != nil {
			return m.flatOrder(c)
		}
		return c.sorted
	}
	es := make([]MapEntry, 0, m.N)
	if m.Root == nil {
		for i, k := range m.Shape.Keys {
			es = append(es, MapEntry{k, m.Vals[i]})
		}
	} else {
		m.Root.each(func(e MapEntry) { es = append(es, e) })
		sortEntries(es)
	}
	m.Cache.Store(&MapCache{sorted: es})
	return es
}

// Each calls fn for each entry in key order until fn returns false.
func (m *Map) Each(fn func(k, v Value) bool) {
	m = m.Form()
	if m.Root == nil && !m.Ord {
		m.eachSmall(fn)
		return
	}
	for _, e := range m.Entries() {
		if !fn(e.Key, e.Val) {
			return
		}
	}
}

// Get returns the value for key (flex lookup).
func (m *Map) Get(key Value) (Value, bool) {
	if m.Src != nil {
		return m.viewGet(key)
	}
	_, v, ok := m.lookup(key)
	return v, ok
}

// GetStr is Get of string key key: a small or wide map is searched
// without boxing key, any other map as Get searches it.
func (m *Map) GetStr(key string) (Value, bool) {
	if m.Src == nil && m.Root == nil && m.Shape != nil {
		if i := m.Shape.findStr(key); i >= 0 {
			return m.Vals[i], true
		}
		return nil, false
	}
	return m.Get(key)
}

// LookupKey returns the stored key matching key (flex), if any.
func (m *Map) LookupKey(key Value) (Value, bool) {
	if m.Src != nil {
		return m.viewKey(key)
	}
	k, _, ok := m.lookup(key)
	return k, ok
}

// lookup finds the entry matching key (flex) in a map that is not a view:
// its stored key and its value.
func (m *Map) lookup(key Value) (k, v Value, ok bool) {
	if m.Root == nil {
		if m.Shape == nil {
			return m.storeLookup(key)
		}
		if i := m.findSmall(key); i >= 0 {
			return m.Shape.Keys[i], m.Vals[i], true
		}
		return nil, nil, false
	}
	if e := m.Root.find(HashValue(key), key); e != nil {
		return e.Key, e.Val, true
	}
	return nil, nil, false
}

// insertSmall returns a small map with a new key inserted in order.
func (m *Map) insertSmall(key, val Value) *Map {
	keys := m.Shape.Keys
	pos, _ := slices.BinarySearchFunc(keys, key, keyOrder)
	nk := make([]Value, m.N+1)
	copy(nk, keys[:pos])
	nk[pos] = key
	copy(nk[pos+1:], keys[pos:])
	a := &smallMapAlloc{}
	copy(a.v[:], m.Vals[:pos])
	copy(a.v[pos+1:], m.Vals[pos:])
	a.v[pos] = val
	a.m = Map{Shape: &Shape{Keys: nk}, Vals: a.v[:m.N+1], N: m.N + 1}
	return &a.m
}

// insertWide returns a wide map with a new key (a wide key) inserted in
// order: the shape's step to the next shape (remembered, see shape.with)
// and a copy of the values.
func (m *Map) insertWide(key, val Value) *Map {
	sh, pos := m.Shape.with(key)
	vals := make([]Value, m.N+1)
	copy(vals, m.Vals[:pos])
	vals[pos] = val
	copy(vals[pos+1:], m.Vals[pos:])
	return &Map{Shape: sh, Vals: vals, N: m.N + 1}
}

// toTrie converts a small map's entries into a trie root.
func (m *Map) toTrie() *Hnode {
	root := &Hnode{}
	for i, k := range m.Shape.Keys {
		root = root.addExact(0, HashValue(k), k, m.Vals[i])
	}
	return root
}

// Assoc returns m with key set to val. An existing entry matched by flex
// lookup keeps its key spelling.
func (m *Map) Assoc(key, val Value) *Map {
	if m.Edit != nil {
		m.Edit.wrote1(key, val)
		return m.assocTransient(key, val)
	}
	if m.Src != nil && len(m.Src) < SmallMapMax && m.Cache.Load() == nil {
		// a view written before anything needed its form: one build
		return m.smallWith(key, val, true)
	}
	m = m.Form()
	if m.Root == nil {
		if i := m.findSmall(key); i >= 0 {
			if m.N > SmallMapMax {
				vals := slices.Clone(m.Vals)
				vals[i] = val
				return &Map{Shape: m.Shape, Vals: vals, N: m.N}
			}
			a := &smallMapAlloc{}
			copy(a.v[:], m.Vals)
			a.v[i] = val
			a.m = Map{Shape: m.Shape, Vals: a.v[:m.N], N: m.N}
			return &a.m
		}
		if m.N < SmallMapMax {
			return m.insertSmall(key, val)
		}
		if m.N > SmallMapMax && m.N < WideMapMax && wideKey(key) {
			return m.insertWide(key, val)
		}
		root, _ := m.toTrie().Set(0, HashValue(key), key, val)
		return &Map{Root: root, N: m.N + 1}
	}
	root, added := m.Root.Set(0, HashValue(key), key, val)
	n := m.N
	if added {
		n++
	}
	return &Map{Root: root, N: n}
}

func (m *Map) assocTransient(key, val Value) *Map {
	if s := m.Edit.Store; s != nil {
		if storable(key) {
			if s.Set(key, val, m.Edit) {
				m.N++
			}
			return m
		}
		m.spill()
	}
	if m.Cache.Load() != nil { // a plain load is cheaper than a store
		m.Cache.Store(nil)
	}
	if m.Root == nil {
		i := m.findSmall(key)
		switch {
		case i >= 0 && m.OwnVals:
			m.Vals[i] = val
			return m
		case i < 0 && m.N >= SmallMapMax:
			if m.toStore(key) {
				m.Edit.Store.put(key, val)
				m.N++
				return m
			}
			m.Root, m.Shape, m.Vals = m.toTrie(), nil, nil
		default:
			edit := m.Edit
			m.Edit = nil
			r := m.Assoc(key, val) // fresh vals
			r.Edit, r.OwnVals = edit, true
			return r
		}
	}
	root, added := m.Root.setMut(m.Edit, 0, HashValue(key), key, val, false)
	m.Root = root
	if added {
		m.N++
	}
	return m
}

// Dissoc returns m without key (flex).
func (m *Map) Dissoc(key Value) *Map {
	if m.Src != nil {
		if _, ok := m.viewKey(key); !ok {
			return m
		}
	}
	m = m.Form()
	if m.Root == nil {
		i := m.findSmall(key)
		if i < 0 {
			return m
		}
		if m.N == 1 {
			return EmptyMap
		}
		if m.N > SmallMapMax+1 {
			vals := make([]Value, 0, m.N-1)
			vals = append(append(vals, m.Vals[:i]...), m.Vals[i+1:]...)
			return &Map{Shape: m.Shape.without(i), Vals: vals, N: m.N - 1}
		}
		nk := make([]Value, 0, m.N-1)
		nk = append(append(nk, m.Shape.Keys[:i]...), m.Shape.Keys[i+1:]...)
		a := &smallMapAlloc{}
		copy(a.v[:], m.Vals[:i])
		copy(a.v[i:], m.Vals[i+1:])
		a.m = Map{Shape: &Shape{Keys: nk}, Vals: a.v[:m.N-1], N: m.N - 1}
		return &a.m
	}
	root, removed := m.Root.del(0, HashValue(key), key)
	if !removed {
		return m
	}
	if m.N-1 <= SmallMapMax/2 {
		b := NewMapBuilder(int(m.N))
		root.each(func(e MapEntry) { b.Set(e.Key, e.Val) })
		return b.Build()
	}
	return &Map{Root: root, N: m.N - 1}
}

// Has reports membership (equality as =, not flex).
func (s *Set) Has(v Value) bool {
	k, ok := s.M.LookupKey(v)
	return ok && Equal(k, v)
}

// Conj returns s with v added.
func (s *Set) Conj(v Value) *Set {
	if s.Has(v) {
		return s
	}
	return &Set{M: s.M.AssocExact(v, v)}
}

// Disj returns s without v.
func (s *Set) Disj(v Value) *Set {
	if !s.Has(v) {
		return s
	}
	return &Set{M: s.M.Dissoc(v)}
}

// Items returns the members in order.
func (s *Set) Items() []Value {
	es := s.M.Entries()
	out := make([]Value, len(es))
	for i, e := range es {
		out[i] = e.Key
	}
	return out
}

// AssocExact adds a key known to be absent (no flex matching applied on
// the existing key set is wanted for sets: "a" and :a are distinct members).
func (m *Map) AssocExact(key, val Value) *Map {
	m = m.Form()
	if m.Root == nil && m.N < SmallMapMax {
		return m.insertSmall(key, val)
	}
	if m.Wide() && m.N < WideMapMax && wideKey(key) && m.Shape.find(key) < 0 {
		return m.insertWide(key, val)
	}
	var root *Hnode
	if m.Root == nil {
		root = m.toTrie()
	} else {
		root = m.Root
	}
	root = root.addExact(0, HashValue(key), key, val)
	return &Map{Root: root, N: m.N + 1}
}

// TransientSlot returns the index of key in a transient small map whose
// values it owns (so vals[i] may be replaced in place), or -1.
func (m *Map) TransientSlot(key Value) int {
	if m.Edit == nil || m.Root != nil || !m.OwnVals {
		return -1
	}
	return m.findSmall(key)
}

// SetExactLast sets key with literal semantics: exact key match (not
// flex), a duplicate key keeps the last value.
func (b *MapBuilder) SetExactLast(key, val Value) {
	if b.root == nil && b.setSmall(findExact(b.es, key), key, val) {
		return
	}
	m := b.Build()
	if k, ok := m.LookupKey(key); ok && Equal(k, key) {
		m = m.Assoc(key, val)
	} else {
		m = m.AssocExact(key, val)
	}
	b.es, b.root, b.N = nil, m.Root, int(m.N)
	if m.Root == nil {
		b.es = append([]MapEntry(nil), m.Entries()...)
	}
}

// KwGet is (:kw v). A small map whose shape the keyword last saw (the
// common case in a scan over records) is read inline; see Map.findSmall.
func KwGet(v Value, kw *Keyword) Value {
	if h, ok := v.(HostMap); ok { // a host record: one Go map read
		return RecordField(h.Src(), kw)
	}
	if m, ok := v.(*Map); ok && m.Root == nil {
		if m.Src != nil { // a host view: one Go map read
			x := ReadField(m.Src, kw.Name, &kw.slot)
			switch x.(type) {
			case nil, bool, int64, float64, string:
				return x // nil: absent, or nil in the host's map
			}
			return viewValue(kw.Name, x)
		}
		if c := kw.cache.Load(); c != nil && c.shape == m.Shape {
			if c.idx < 0 {
				return nil
			}
			return m.Vals[c.idx]
		}
	}
	return GetKey(v, kw, nil)
}

// recordValue is RecordField's value for the field kw read as x: x as it
// is when a scalar (nil: absent, or nil in the host's map), else
// converted (a view; an unconvertible value panics with a HostDataError
// naming the field). RecordField (field_plain.go, field_swiss.go) is the
// read and this, small enough to inline where it is called.
func recordValue(kw *Keyword, x any) Value {
	switch x.(type) {
	case int64, string, float64, bool, nil:
		return x
	}
	return viewValue(kw.Name, x)
}

// FieldOf returns (kw m)'s raw Go value for the host record m, unconverted
// (nil: absent or nil): an inlined read for code that serves one Go type
// itself (an int64 field of a walk's sum) and otherwise reads the field
// again with RecordField.
func FieldOf(m map[string]any, kw *Keyword) any { return ReadField(m, kw.Name, &kw.slot) }

// callWith calls f with old followed by extra.
// setSlot stores nv as value i of a transient small map (update's in-place
// path), with the step and position of the assoc it replaces.
func (m *Map) SetSlot(th *Thread, pos Pos, i int, nv Value) *Map {
	th.CallPos = pos
	th.Tick() // as assocOne
	if m.Cache.Load() != nil {
		m.Cache.Store(nil)
	}
	if m.Edit != nil {
		m.Edit.wrote1(nil, nv)
	}
	m.Vals[i] = nv
	return m
}

// GetPath reads a field (keyword, string or vector path) with flex keys.
func GetPath(m Value, field Value) Value {
	if p, ok := field.(*Vector); ok {
		cur := m
		for _, k := range p.Items() {
			cur = GetKey(cur, k, nil)
			if cur == nil {
				return nil
			}
		}
		return cur
	}
	return GetKey(m, field, nil)
}

// storeLookup is Get and lookupKey on a map kept in a hashStore: the
// stored key and value.
func (m *Map) storeLookup(key Value) (Value, Value, bool) {
	if s := m.Store(); s != nil && storable(key) {
		return s.Get(key)
	}
	f := m.Form()
	if f.Root == nil && f.Shape == nil {
		return nil, nil, false // (no such map: every map has a form)
	}
	if f.Root == nil {
		if i := f.findSmall(key); i >= 0 {
			return f.Shape.Keys[i], f.Vals[i], true
		}
		return nil, nil, false
	}
	if e := f.Root.find(HashValue(key), key); e != nil {
		return e.Key, e.Val, true
	}
	return nil, nil, false
}

// flatOrder returns the entries of c (m's cache, an ordered map's) in one
// slice, made on first need and kept in m's cache.
func (m *Map) flatOrder(c *MapCache) []MapEntry {
	es := make([]MapEntry, 0, m.N)
	for _, ch := range c.chunks {
		es = append(es, ch...)
	}
	m.Cache.CompareAndSwap(c, &MapCache{sorted: es, ord: c.ord, chunks: c.chunks})
	return es
}

// GetKey implements (get m k default) on any value: maps (flex), vectors
// by index, nil and other values give the default.
func GetKey(m Value, k Value, dflt Value) Value {
	switch c := m.(type) {
	case *Map:
		if v, ok := c.Get(k); ok {
			return v
		}
	case HostMap:
		if v, ok := c.Get(k); ok {
			return v
		}
	case *Vector:
		if i, ok := k.(int64); ok && i >= 0 && i < int64(c.Len()) {
			return c.At(int(i))
		}
	case *Set:
		if c.Has(k) {
			return k
		}
	}
	return dflt
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
