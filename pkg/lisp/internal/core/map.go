package core

import (
	"encoding/binary"
	"math/bits"
	"slices"
	"strings"
	"sync/atomic"
	"weak"
)

// SmallMapMax is the largest map a program builds as a sorted array map.
const SmallMapMax = 8

// WideMapMax is the largest map decoded or converted from host data that
// is kept as a shape and its values (a wide map) rather than a trie. Tool
// records have 10 to 40 fields; up to 64 the values slice that an assoc
// of an existing key copies (1 KiB) costs no more than the path a trie
// copies, and a new shape per assoc of a new key (a sorted insert into
// at most 64 keys and their index) stays cheap; beyond it a map grows
// and is written as a trie.
const WideMapMax = 64

// MapEntry is one key and its value.
type MapEntry struct {
	Key, Val Value
}

// Shape is the sorted key list of a map kept as a shape and its values.
// Maps built from host data with the same keys share one shape, so key
// scans hit hot memory, and a keyword caches the slot it found per shape.
// A shape of more than smallMapMax keys (a wide map's: its keys are
// strings and keywords only) also indexes its keys by name, built once
// when the shape is made, and remembers the last shape an assoc of a new
// key or a dissoc led to, so records that change the same way share one
// new shape. Everything but those memos is immutable once made; a memo
// is an atomic pointer (shapes are shared across goroutines: pmap) and
// holds the next shape weakly: the maps of that shape keep it alive, a
// shape does not (else a program that keeps changing a record's keys
// would build a chain of shapes the record holds, uncounted).
type Shape struct {
	Keys []Value
	// Strs and kws index a wide shape's string and keyword keys by name
	Strs, kws map[string]int32
	// added and removed are the memos of the last assoc of a new key and
	// the last dissoc (shapeStep)
	added, removed atomic.Pointer[shapeStep]
}

// shapeStep is a shape's memo: an assoc of key (dissoc: key nil, slot
// at) leads to shape to, key at slot at, while to is alive.
type shapeStep struct {
	key Value
	at  int
	to  weak.Pointer[Shape]
}

var emptyShape = &Shape{}

// Map is an immutable map. Up to smallMapMax entries it is a sorted array
// map: a shared key shape plus a value slice (linear scan lookup); a map
// decoded or converted from host data of up to wideMapMax entries with
// string keys is one too (a wide map: its shape indexes its keys); other
// maps are a hash array mapped trie. Iteration and printing follow the key
// key order (numbers, keywords, strings, others by printed
// form).
//
// Lookups are flex: a keyword key also finds the same-named string
// key and the other way round; an exact match wins. Writes (Assoc, Dissoc)
// resolve keys the same way, keeping the existing key's spelling.
type Map struct {
	Shape *Shape  // small or wide map keys; used when root == nil
	Vals  []Value // small or wide map values, parallel to shape.keys
	Root  *Hnode
	// Cache holds a trie's entries in key order, or a view's
	// interpreter form, made on first need
	Cache atomic.Pointer[MapCache]
	// Edit is set only on the accumulator of a reduce whose function uses
	// it linearly (compile-time check, see linearAcc): Assoc then updates
	// the trie in place. It is cleared before the map escapes the reduce.
	Edit *EditToken
	// Src, when set, makes m a view of a host map (view.go): n, shape,
	// vals and root are unset (Len is len(src)), Get and lookupKey read src
	// in place, and every other operation works on the map's interpreter
	// form (cache.form), built on first need.
	Src map[string]any
	// N is the number of entries (an int32 beside the flags keeps the
	// header at 72 bytes: every small map and every view has one)
	N int32
	// OwnVals: vals belongs to this transient and may be updated in place.
	OwnVals bool
	// host marks maps converted from host data: the host's memory, not
	// counted against the program's limit.
	host bool
	// Ord marks a map (or a set's map) ordered by a comparator
	// (sortedby.go): cache holds its entries in that order and the
	// comparator, stored once when the map is built.
	Ord bool
}

// MapCache is what a map computes once and keeps (Map.cache).
type MapCache struct {
	sorted []MapEntry // a trie's entries in key order
	Form   *Map       // a view's or a stored map's interpreter form
	Store  *hashStore // a stored map's entries, until its form is built (mapstore.go)
	ord    *Ordering  // a comparator-ordered map's comparator
	// chunks holds a comparator-ordered map's entries in its order
	// (sortedby.go); sorted is their concatenation, made on first need
	chunks [][]MapEntry
}

// Transient returns a private copy of m's header that Assoc may mutate.
func (m *Map) Transient() *Map {
	if s := m.Store(); s != nil && m.Edit == nil {
		return &Map{N: m.N, Edit: &EditToken{Store: s.clone()}}
	}
	m = m.Form()
	return &Map{Shape: m.Shape, Vals: m.Vals, Root: m.Root, N: m.N, Edit: &EditToken{}}
}

// EmptyMap is the empty map (shared, never changed).
var EmptyMap = &Map{Shape: emptyShape}

// Len returns the number of entries.
func (m *Map) Len() int {
	if m.Src != nil {
		return len(m.Src)
	}
	return int(m.N)
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

// sortEntries sorts entries in key order. Keys ordered by printed form
// (vectors, maps, ...) are printed once each, not once per comparison.
func sortEntries(es []MapEntry) {
	other := false
	for _, e := range es {
		if orderRank(e.Key) == 3 {
			other = true
			break
		}
	}
	if !other {
		slices.SortStableFunc(es, func(a, b MapEntry) int { return keyOrder(a.Key, b.Key) })
		return
	}
	type keyed struct {
		e       MapEntry
		printed string
	}
	ks := make([]keyed, len(es))
	for i, e := range es {
		ks[i].e = e
		if orderRank(e.Key) == 3 {
			ks[i].printed = orderText(e.Key)
		}
	}
	slices.SortStableFunc(ks, func(a, b keyed) int {
		ra, rb := orderRank(a.e.Key), orderRank(b.e.Key)
		if ra != 3 || rb != 3 {
			return keyOrder(a.e.Key, b.e.Key)
		}
		return strings.Compare(a.printed, b.printed)
	})
	for i := range ks {
		es[i] = ks[i].e
	}
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

// eachSmall calls fn for each entry of a small map, in key order, until fn
// returns false.
func (m *Map) eachSmall(fn func(k, v Value) bool) {
	for i, k := range m.Shape.Keys {
		if !fn(k, m.Vals[i]) {
			return
		}
	}
}

// FlexMatch reports whether a is the other spelling of b (:id vs "id").
func FlexMatch(a, b Value) bool {
	switch x := a.(type) {
	case *Keyword:
		s, ok := b.(string)
		return ok && s == x.Name
	case string:
		k, ok := b.(*Keyword)
		return ok && k.Name == x
	}
	return false
}

// findKey returns the index of key in keys: exact match first, then flex;
// -1 when absent.
func findKey(keys []Value, key Value) int {
	switch k := key.(type) {
	case *Keyword:
		flex := -1
		for i, ek := range keys {
			switch ek := ek.(type) {
			case *Keyword:
				if ek == k || ek.Name == k.Name {
					return i
				}
			case string:
				if flex < 0 && ek == k.Name {
					flex = i
				}
			}
		}
		return flex
	case string:
		flex := -1
		for i, ek := range keys {
			switch ek := ek.(type) {
			case string:
				// length and first byte first: most keys differ there, and
				// it saves the runtime's memequal call
				if len(ek) == len(k) && (len(k) == 0 || ek[0] == k[0]) && ek == k {
					return i
				}
			case *Keyword:
				if flex < 0 && ek.Name == k {
					flex = i
				}
			}
		}
		return flex
	}
	for i, ek := range keys {
		if Equal(ek, key) {
			return i
		}
	}
	return -1
}

// kwCache remembers where a keyword was found in a shape.
type kwCache struct {
	shape *Shape
	idx   int
}

// findSmall finds key in a small or wide map, using the keyword's shape
// cache.
func (m *Map) findSmall(key Value) int {
	if k, ok := key.(*Keyword); ok {
		if c := k.cache.Load(); c != nil && c.shape == m.Shape {
			return c.idx
		}
		i := m.Shape.find(key)
		k.cache.Store(&kwCache{m.Shape, i})
		return i
	}
	return m.Shape.find(key)
}

// find returns the slot of key in sh (exact match first, then flex), -1
// when absent: a scan of a small shape's keys, the index of a wide one.
func (sh *Shape) find(key Value) int {
	if sh.Strs == nil && sh.kws == nil {
		return findKey(sh.Keys, key)
	}
	var name string
	var str bool
	switch k := key.(type) {
	case string:
		name, str = k, true
	case *Keyword:
		name = k.Name
	default:
		return -1 // a wide shape's keys are strings and keywords only
	}
	exact, flex := sh.kws, sh.Strs
	if str {
		exact, flex = flex, exact
	}
	if i, ok := exact[name]; ok {
		return int(i)
	}
	if i, ok := flex[name]; ok {
		return int(i)
	}
	return -1
}

// wideKey reports whether key may be a key of a wide shape.
func wideKey(key Value) bool {
	switch key.(type) {
	case string, *Keyword:
		return true
	}
	return false
}

// newShape returns the shape of keys (in key order, no two equal; a wide
// shape's all strings and keywords), indexed when it is wide.
func newShape(keys []Value) *Shape {
	sh := &Shape{Keys: keys}
	if len(keys) <= SmallMapMax {
		return sh
	}
	for i, k := range keys {
		switch k := k.(type) {
		case string:
			if sh.Strs == nil {
				sh.Strs = make(map[string]int32, len(keys))
			}
			sh.Strs[k] = int32(i)
		case *Keyword:
			if sh.kws == nil {
				sh.kws = make(map[string]int32)
			}
			sh.kws[k.Name] = int32(i)
		}
	}
	return sh
}

// with returns the shape of sh's keys with key (absent from sh, a wide
// key) inserted in order, and the slot key takes; the last such step is
// remembered, so the records of one result given the same new key share
// the new shape.
func (sh *Shape) with(key Value) (*Shape, int) {
	if st := sh.added.Load(); st != nil && sameKey(st.key, key) {
		if to := st.to.Value(); to != nil {
			return to, st.at
		}
	}
	pos, _ := slices.BinarySearchFunc(sh.Keys, key, keyOrder)
	nk := make([]Value, len(sh.Keys)+1)
	copy(nk, sh.Keys[:pos])
	nk[pos] = key
	copy(nk[pos+1:], sh.Keys[pos:])
	to := newShape(nk)
	sh.added.Store(&shapeStep{key: key, at: pos, to: weak.Make(to)})
	return to, pos
}

// without returns the shape of sh's keys without the one at slot i,
// remembered as with remembers.
func (sh *Shape) without(i int) *Shape {
	if st := sh.removed.Load(); st != nil && st.at == i {
		if to := st.to.Value(); to != nil {
			return to
		}
	}
	nk := make([]Value, 0, len(sh.Keys)-1)
	nk = append(append(nk, sh.Keys[:i]...), sh.Keys[i+1:]...)
	to := newShape(nk)
	sh.removed.Store(&shapeStep{at: i, to: weak.Make(to)})
	return to
}

// sameKey reports whether a and b are the same key exactly (no flex): the
// same string, or keywords of one name.
func sameKey(a, b Value) bool {
	switch x := a.(type) {
	case string:
		y, ok := b.(string)
		return ok && x == y
	case *Keyword:
		y, ok := b.(*Keyword)
		return ok && (x == y || x.Name == y.Name)
	}
	return false
}

// Get returns the value for key (flex lookup).
func (m *Map) Get(key Value) (Value, bool) {
	if m.Src != nil {
		return m.viewGet(key)
	}
	_, v, ok := m.lookup(key)
	return v, ok
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

// Wide reports whether m is a wide map (a shape of more than smallMapMax
// keys and its values).
func (m *Map) Wide() bool { return m.Root == nil && m.N > SmallMapMax && m.Shape != nil }

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

// MapBuilder builds a map by mutation before it is published. A builder
// given a shapeCache builds host data (a decoder's or converter's: keys
// are strings), which it keeps as a shape and its values up to
// wideMapMax entries (a wide map) with the shape interned in the cache:
// it takes string keys as they come and, when built, puts them in order
// with the last of repeated keys winning (hostEntries).
type MapBuilder struct {
	es     []MapEntry
	root   *Hnode
	N      int
	shapes *ShapeCache
	// exact, when set, is the number of distinct keys the map will hold
	// (a Go map's, so known before the first set). edit owns the trie's
	// nodes while they are built, so that an insert updates them in place
	// instead of copying its path; it hands out leaves from one slab of
	// exact leaves, else one at a time (a slab sized from an estimate
	// could hold far more than the map, unaccounted for as long as the map
	// lives). Nobody else holds edit, so the map is immutable once built.
	exact int
	edit  *EditToken
}

// NewMapBuilder returns a builder for a map of about capHint entries.
func NewMapBuilder(capHint int) *MapBuilder {
	if capHint > SmallMapMax {
		capHint = SmallMapMax
	}
	return &MapBuilder{es: make([]MapEntry, 0, capHint)}
}

// NewExactMapBuilder returns a builder of a map of n distinct keys.
func NewExactMapBuilder(n int) *MapBuilder {
	b := NewMapBuilder(n)
	b.exact = n
	return b
}

// setSmall sets key while b is a small map: entry i (the caller's match
// for key, -1 for none) takes val, or the entry is appended while there is
// room. It reports false when b must grow into a trie first.
func (b *MapBuilder) setSmall(i int, key, val Value) bool {
	if i >= 0 {
		b.es[i].Val = val
		return true
	}
	if len(b.es) < SmallMapMax {
		b.es = append(b.es, MapEntry{key, val})
		b.N++
		return true
	}
	return false
}

// Set adds or replaces key (flex-resolved).
func (b *MapBuilder) Set(key, val Value) {
	if b.root == nil {
		if b.shapes != nil {
			if _, ok := key.(string); ok && len(b.es) < WideMapMax {
				b.es = append(b.es, MapEntry{key, val})
				b.N++
				return
			}
			// a key a wide map does not take: the entries so far as set
			// would have left them, and on as any builder
			b.es = hostEntries(b.es)
			b.N = len(b.es)
			b.shapes = nil
			b.Set(key, val)
			return
		}
		if b.setSmall(findEnt(b.es, key), key, val) {
			return
		}
		b.edit = &EditToken{chunk: 1}
		if b.exact > len(b.es) {
			b.edit.leaves = make([]leafAlloc, b.exact)
		}
		b.root = &Hnode{edit: b.edit, Slots: make([]hslot, 0, min(max(b.exact, len(b.es)+1), 32))}
		for _, e := range b.es {
			b.root, _ = b.root.setMut(b.edit, 0, HashValue(e.Key), e.Key, e.Val, true)
		}
		b.es = nil
	}
	var added bool
	b.root, added = b.root.setMut(b.edit, 0, HashValue(key), key, val, false)
	if added {
		b.N++
	}
}

// Build returns the map built so far.
func (b *MapBuilder) Build() *Map { return b.buildIn(nil) }

// buildIn is build, placing a small map in a (when not nil) instead of a
// new allocation: converters lay out many records in one slab.
func (b *MapBuilder) buildIn(a *smallMapAlloc) *Map {
	if b.root == nil {
		if len(b.es) == 0 {
			return EmptyMap
		}
		c := b.shapes
		if c != nil {
			if m := c.arrived(b.es, a); m != nil {
				return m
			}
			c.arrive(b.es)
			b.es = hostEntries(b.es)
			b.N = len(b.es)
		} else {
			slices.SortStableFunc(b.es, func(x, y MapEntry) int { return keyOrder(x.Key, y.Key) })
		}
		sh := c.Get(b.es)
		c.arrivedAs(sh)
		m, vals := c.place(len(b.es), a)
		for i, e := range b.es {
			vals[i] = e.Val
		}
		*m = Map{Shape: sh, Vals: vals, N: int32(len(b.es))}
		return m
	}
	return &Map{Root: b.root, N: int32(b.N)}
}

// hostEntries puts the entries of host data (string keys, repeated keys
// possible) in key order, the last of repeated keys winning, in place.
func hostEntries(es []MapEntry) []MapEntry {
	slices.SortStableFunc(es, func(x, y MapEntry) int { return keyOrder(x.Key, y.Key) })
	out := es[:0]
	for i, e := range es {
		if i+1 < len(es) && keyOrder(e.Key, es[i+1].Key) == 0 {
			continue // a later entry of the same key follows (stable sort)
		}
		out = append(out, e)
	}
	clear(es[len(out):])
	return out
}

// smallMapAlloc co-allocates a small map and its values.
type smallMapAlloc struct {
	m Map
	v [SmallMapMax]Value
}

// The slabs a shapeCache hands out grow by doubling from their first size
// to their last: a conversion of one map allocates little, one of many
// records lays them out together in few allocations.
const (
	slabFirst    = 4
	slabLastMaps = 256
	slabLastVals = 4096
)

// place returns a new map header and a values slice of length n: a small
// map's in a (when not nil; a new allocation from c.small otherwise), a
// wide map's from c.wide. One allocation for a small map's header and
// values keeps them adjacent.
func (c *ShapeCache) place(n int, a *smallMapAlloc) (*Map, []Value) {
	if n > SmallMapMax {
		return c.Wide(n)
	}
	if a == nil {
		a = c.small()
	}
	return &a.m, a.v[:n]
}

// arrived returns the map of es (a builder's entries of host data, in
// the order they arrived) when their keys arrived in the order of the
// last map c built by sorting (arrive, arrivedAs): its shape, each value
// put in its slot, the last of repeated keys winning; else nil. Records
// of one result mostly arrive with their keys in one order, and this
// skips the sort and the shape lookup.
func (c *ShapeCache) arrived(es []MapEntry, a *smallMapAlloc) *Map {
	if c == nil || c.arrShape == nil || len(es) != len(c.arrKeys) {
		return nil
	}
	for i, e := range es {
		if s, ok := e.Key.(string); !ok || s != c.arrKeys[i] {
			return nil
		}
	}
	sh := c.arrShape
	m, vals := c.place(len(sh.Keys), a)
	for i, e := range es {
		vals[c.arrPerm[i]] = e.Val
	}
	*m = Map{Shape: sh, Vals: vals, N: int32(len(sh.Keys))}
	return m
}

// arrive notes the keys of es in the order they arrived, before the
// builder sorts them (arrivedAs completes the note).
func (c *ShapeCache) arrive(es []MapEntry) {
	c.arrShape = nil
	c.arrKeys = c.arrKeys[:0]
	for _, e := range es {
		s, ok := e.Key.(string)
		if !ok {
			c.arrKeys = c.arrKeys[:0]
			return
		}
		c.arrKeys = append(c.arrKeys, s)
	}
}

// arrivedAs completes the note of arrive: the keys noted make shape sh,
// each at its slot.
func (c *ShapeCache) arrivedAs(sh *Shape) {
	if c == nil || len(c.arrKeys) == 0 {
		return
	}
	c.arrPerm = c.arrPerm[:0]
	for _, k := range c.arrKeys {
		i := sh.find(k)
		if i < 0 {
			c.arrKeys = c.arrKeys[:0]
			return
		}
		c.arrPerm = append(c.arrPerm, int32(i))
	}
	c.arrShape = sh
}

// small returns a new small map allocation: from c's slab (records of one
// conversion laid out together), or a new one when c is nil.
func (c *ShapeCache) small() *smallMapAlloc {
	if c == nil {
		return &smallMapAlloc{}
	}
	if len(c.smalls) == 0 {
		c.nSmalls = min(max(2*c.nSmalls, slabFirst), slabLastMaps)
		c.smalls = make([]smallMapAlloc, c.nSmalls)
	}
	a := &c.smalls[0]
	c.smalls = c.smalls[1:]
	return a
}

// Wide returns a new map header and a values slice of length n for a wide
// map: from c's slabs, or new allocations when c is nil.
func (c *ShapeCache) Wide(n int) (*Map, []Value) {
	if c == nil {
		return &Map{}, make([]Value, n)
	}
	if len(c.heads) == 0 {
		c.nHeads = min(max(2*c.nHeads, slabFirst), slabLastMaps)
		c.heads = make([]Map, c.nHeads)
	}
	if len(c.vals) < n {
		c.nVals = min(max(2*c.nVals, slabFirst*n), slabLastVals)
		c.vals = make([]Value, max(c.nVals, n))
	}
	m := &c.heads[0]
	c.heads = c.heads[1:]
	vals := c.vals[:n:n]
	c.vals = c.vals[n:]
	return m, vals
}

// ShapeCache interns shapes while converting host data, so records with
// the same keys share one shape. A nil cache interns nothing.
type ShapeCache struct {
	one    *Shape // the first shape (its keys in oneKey): most conversions have one
	oneKey string
	m      map[string]*Shape
	buf    []byte
	// recent holds the last shapes handed out (records nest: a record, its
	// user, the user's address), tried first by match
	recent [4]*Shape
	next   int
	// slabs of small maps, wide map headers and wide map values (small,
	// wide), and the size each was last made at
	smalls                 []smallMapAlloc
	heads                  []Map
	vals                   []Value
	nSmalls, nHeads, nVals int
	// made is the charge of the shapes made since madeBytes last took it
	// (shapeBytes): a decoder charges them with its values
	made int64
	// arrKeys are the keys of the last map built by sorting, in the
	// order they arrived; arrShape its shape and arrPerm the slot of
	// each key in it (nil: no note)
	arrKeys  []string
	arrPerm  []int32
	arrShape *Shape
}

// madeBytes returns the charge of the shapes c made since it was last
// called.
func (c *ShapeCache) madeBytes() int64 {
	if c == nil {
		return 0
	}
	n := c.made
	c.made = 0
	return n
}

// match returns a recent shape whose keys are exactly m's keys, or nil.
func (c *ShapeCache) match(m map[string]any) *Shape {
	if c == nil || len(m) == 0 || len(m) > WideMapMax {
		return nil
	}
next:
	for _, sh := range c.recent {
		if sh == nil || len(sh.Keys) != len(m) {
			continue
		}
		for _, k := range sh.Keys {
			if _, ok := m[k.(string)]; !ok {
				continue next
			}
		}
		return sh
	}
	return nil
}

// remember makes sh a recent shape.
func (c *ShapeCache) remember(sh *Shape) *Shape {
	for _, r := range c.recent {
		if r == sh {
			return sh
		}
	}
	c.recent[c.next] = sh
	c.next = (c.next + 1) % len(c.recent)
	return sh
}

// Get returns the shared shape of the keys of es, made on first use.
func (c *ShapeCache) Get(es []MapEntry) *Shape {
	if c == nil {
		keys := make([]Value, len(es))
		for i, e := range es {
			keys[i] = e.Key
		}
		return newShape(keys)
	}
	c.buf = c.buf[:0]
	for _, e := range es {
		s, ok := e.Key.(string)
		if !ok {
			c.made += shapeBytes(len(es))
			return (*ShapeCache)(nil).Get(es)
		}
		// each key prefixed by its length: keys may hold any byte
		c.buf = binary.AppendUvarint(c.buf, uint64(len(s)))
		c.buf = append(c.buf, s...)
	}
	if c.one != nil && c.oneKey == string(c.buf) {
		return c.remember(c.one)
	}
	if sh, ok := c.m[string(c.buf)]; ok {
		return c.remember(sh)
	}
	sh := (*ShapeCache)(nil).Get(es)
	c.made += shapeBytes(len(es))
	if c.one == nil {
		c.one, c.oneKey = sh, string(c.buf)
		return c.remember(sh)
	}
	if c.m == nil {
		c.m = map[string]*Shape{} // made for a second shape: most conversions have one
	}
	if len(c.m) < 4096 {
		c.m[string(c.buf)] = sh
	}
	return c.remember(sh)
}

// Hnode is a node of the hash trie. Nodes are never modified once
// reachable from a published Map (set and del copy the path).
type Hnode struct {
	bitmap uint32
	Slots  []hslot
	edit   *EditToken // owner while a transient reduce may mutate it in place
}

// EditToken identifies one transient session (see Map.edit). It also
// hands out the session's new leaves from chunks: one allocation per
// leafChunk inserts. Leaves are immutable once made, and every chunk was
// charged entry by entry as the map grew, so sharing a chunk changes only
// when the memory is freed, not how much the budget admits.
type EditToken struct {
	leaves []leafAlloc
	// Store holds the transient's entries while they are kept in Go hash
	// maps (mapstore.go); nil when they are in the map's shape or trie
	Store *hashStore
	// Items and done: when a reduce feeds the transient, the number of
	// items it has and the number it has fed so far (0: unknown), from
	// which the store sizes its maps (hashStore.fit)
	Items, Done int
	// wrote holds the keys and values written since writes was last
	// reset that may hold new memory (holdsNothing is false: the first
	// len(wrote); writes counts them all): what a call of the reducing
	// function may have added that the map holds (loopCaller.call,
	// Thread.creditGrown)
	wrote  [8]Value
	writes int
	// chunk is how many leaves newLeaf allocates at a time (0:
	// leafChunk)
	chunk int
}

// wrote1 logs the write of val at key (key nil: an existing entry).
func (t *EditToken) wrote1(key, val Value) {
	t.log(key)
	t.log(val)
}

func (t *EditToken) log(v Value) {
	if holdsNothing(v) {
		return
	}
	if t.writes < len(t.wrote) {
		t.wrote[t.writes] = v
	}
	t.writes++
}

// written returns the logged keys and values, or false when more were
// written than the log holds.
func (t *EditToken) written() ([]Value, bool) {
	if t.writes > len(t.wrote) {
		return nil, false
	}
	return t.wrote[:t.writes], true
}

// leafAlloc co-allocates a leaf and its single entry.
type leafAlloc struct {
	l hleaf
	e [1]MapEntry
}

const leafChunk = 32

func (t *EditToken) newLeaf(h uint32, key, val Value) hslot {
	if len(t.leaves) == 0 {
		n := t.chunk
		if n == 0 {
			n = leafChunk
		}
		t.leaves = make([]leafAlloc, n)
	}
	a := &t.leaves[0]
	t.leaves = t.leaves[1:]
	a.e[0] = MapEntry{key, val}
	a.l = hleaf{hash: h, Ents: a.e[:]}
	return hslot{Leaf: &a.l}
}

// setMut is set for a transient session: nodes owned by edit are updated
// in place, others are copied once and then owned.
// With exact set, key is known to be absent (no flex match is made).
func (n *Hnode) setMut(edit *EditToken, shift uint, h uint32, key, val Value, exact bool) (*Hnode, bool) {
	nn := n
	if n.edit != edit {
		nn = &Hnode{bitmap: n.bitmap, Slots: append(make([]hslot, 0, len(n.Slots)+1), n.Slots...), edit: edit}
	}
	bit := uint32(1) << ((h >> shift) & 31)
	idx := bits.OnesCount32(nn.bitmap & (bit - 1))
	if nn.bitmap&bit == 0 {
		nn.bitmap |= bit
		nn.Slots = slices.Insert(nn.Slots, idx, edit.newLeaf(h, key, val))
		return nn, true
	}
	s := &nn.Slots[idx]
	if s.Child != nil {
		child, added := s.Child.setMut(edit, shift+5, h, key, val, exact)
		s.Child = child
		return nn, added
	}
	if s.Leaf.hash == h {
		old := s.Leaf.Ents
		if i := findEntry(old, key); i >= 0 && !exact {
			ents := slices.Clone(old)
			ents[i].Val = val
			s.Leaf = &hleaf{hash: h, Ents: ents}
			return nn, false
		}
		s.Leaf = &hleaf{hash: h, Ents: append(slices.Clip(old), MapEntry{key, val})}
		return nn, true
	}
	*s = hslot{Child: mergeSlotsOwned(edit, shift+5, *s, edit.newLeaf(h, key, val))}
	return nn, true
}

// mergeSlotsOwned is mergeSlots for a transient session: the new nodes
// belong to edit, so the next insert below them updates them in place
// instead of copying them first.
func mergeSlotsOwned(edit *EditToken, shift uint, a, b hslot) *Hnode {
	ia, ib := (a.Leaf.hash>>shift)&31, (b.Leaf.hash>>shift)&31
	if ia == ib {
		n := &Hnode{bitmap: 1 << ia, Slots: make([]hslot, 1, 4), edit: edit}
		n.Slots[0] = hslot{Child: mergeSlotsOwned(edit, shift+5, a, b)}
		return n
	}
	if ia > ib {
		a, b = b, a
		ia, ib = ib, ia
	}
	n := &Hnode{bitmap: 1<<ia | 1<<ib, Slots: make([]hslot, 2, 4), edit: edit}
	n.Slots[0], n.Slots[1] = a, b
	return n
}

// hslot is either a child node or a leaf with all entries whose full hash
// is hash (true collisions and flex pairs such as :id and "id").
type hslot struct {
	Child *Hnode
	Leaf  *hleaf
}

// hleaf holds the entries of one full hash; it is never modified once
// published (updates make a new leaf).
type hleaf struct {
	hash uint32
	Ents []MapEntry
}

func newLeaf(h uint32, key, val Value) hslot {
	a := &leafAlloc{}
	a.e[0] = MapEntry{key, val}
	a.l = hleaf{hash: h, Ents: a.e[:]}
	return hslot{Leaf: &a.l}
}

// findEnt finds key among entries: exact first, then flex.
func findEnt(ents []MapEntry, key Value) int {
	switch key.(type) {
	case *Keyword, string:
		flex := -1
		for i := range ents {
			if ents[i].Key == key || Equal(ents[i].Key, key) {
				return i
			}
			if flex < 0 && FlexMatch(key, ents[i].Key) {
				flex = i
			}
		}
		return flex
	}
	for i := range ents {
		if Equal(ents[i].Key, key) {
			return i
		}
	}
	return -1
}

func findEntry(ents []MapEntry, key Value) int { return findEnt(ents, key) }

func (n *Hnode) find(h uint32, key Value) *MapEntry {
	shift := uint(0)
	for {
		bit := uint32(1) << ((h >> shift) & 31)
		if n.bitmap&bit == 0 {
			return nil
		}
		s := &n.Slots[bits.OnesCount32(n.bitmap&(bit-1))]
		if s.Child != nil {
			n = s.Child
			shift += 5
			continue
		}
		if s.Leaf.hash != h {
			return nil
		}
		if i := findEntry(s.Leaf.Ents, key); i >= 0 {
			return &s.Leaf.Ents[i]
		}
		return nil
	}
}

// withLeaf returns a copy of n with a new leaf for key in the empty slot
// bit, at position idx of its slots.
func (n *Hnode) withLeaf(bit uint32, idx int, h uint32, key, val Value) *Hnode {
	nn := &Hnode{bitmap: n.bitmap | bit, Slots: make([]hslot, len(n.Slots)+1)}
	copy(nn.Slots, n.Slots[:idx])
	nn.Slots[idx] = newLeaf(h, key, val)
	copy(nn.Slots[idx+1:], n.Slots[idx:])
	return nn
}

// Set returns the trie node with key set to val, and whether key was new.
func (n *Hnode) Set(shift uint, h uint32, key, val Value) (*Hnode, bool) {
	bit := uint32(1) << ((h >> shift) & 31)
	idx := bits.OnesCount32(n.bitmap & (bit - 1))
	if n.bitmap&bit == 0 {
		return n.withLeaf(bit, idx, h, key, val), true
	}
	nn := &Hnode{bitmap: n.bitmap, Slots: slices.Clone(n.Slots)}
	s := &nn.Slots[idx]
	if s.Child != nil {
		child, added := s.Child.Set(shift+5, h, key, val)
		s.Child = child
		return nn, added
	}
	if s.Leaf.hash == h {
		old := s.Leaf.Ents
		if i := findEntry(old, key); i >= 0 {
			ents := make([]MapEntry, len(old))
			copy(ents, old)
			ents[i].Val = val
			s.Leaf = &hleaf{hash: h, Ents: ents}
			return nn, false
		}
		ents := make([]MapEntry, len(old)+1)
		copy(ents, old)
		ents[len(old)] = MapEntry{key, val}
		s.Leaf = &hleaf{hash: h, Ents: ents}
		return nn, true
	}
	*s = hslot{Child: mergeSlots(shift+5, *s, newLeaf(h, key, val))}
	return nn, true
}

func mergeSlots(shift uint, a, b hslot) *Hnode {
	ia, ib := (a.Leaf.hash>>shift)&31, (b.Leaf.hash>>shift)&31
	if ia == ib {
		return &Hnode{bitmap: 1 << ia, Slots: []hslot{{Child: mergeSlots(shift+5, a, b)}}}
	}
	if ia > ib {
		a, b = b, a
		ia, ib = ib, ia
	}
	return &Hnode{bitmap: 1<<ia | 1<<ib, Slots: []hslot{a, b}}
}

func (n *Hnode) del(shift uint, h uint32, key Value) (*Hnode, bool) {
	bit := uint32(1) << ((h >> shift) & 31)
	if n.bitmap&bit == 0 {
		return n, false
	}
	idx := bits.OnesCount32(n.bitmap & (bit - 1))
	s := n.Slots[idx]
	if s.Child != nil {
		child, removed := s.Child.del(shift+5, h, key)
		if !removed {
			return n, false
		}
		nn := &Hnode{bitmap: n.bitmap, Slots: slices.Clone(n.Slots)}
		if child.bitmap == 0 {
			nn.bitmap &^= bit
			nn.Slots = slices.Delete(nn.Slots, idx, idx+1)
		} else {
			nn.Slots[idx].Child = child
		}
		return nn, true
	}
	if s.Leaf.hash != h {
		return n, false
	}
	i := findEntry(s.Leaf.Ents, key)
	if i < 0 {
		return n, false
	}
	nn := &Hnode{bitmap: n.bitmap, Slots: slices.Clone(n.Slots)}
	if len(s.Leaf.Ents) == 1 {
		nn.bitmap &^= bit
		nn.Slots = slices.Delete(nn.Slots, idx, idx+1)
	} else {
		nn.Slots[idx].Leaf = &hleaf{hash: h, Ents: slices.Delete(slices.Clone(s.Leaf.Ents), i, i+1)}
	}
	return nn, true
}

func (n *Hnode) each(fn func(MapEntry)) {
	for i := range n.Slots {
		s := &n.Slots[i]
		if s.Child != nil {
			s.Child.each(fn)
			continue
		}
		for _, e := range s.Leaf.Ents {
			fn(e)
		}
	}
}

// Set is an immutable set of values, iterated in key order.
type Set struct{ M *Map }

// EmptySet is the empty set (shared, never changed).
var EmptySet = &Set{M: EmptyMap}

// Len returns the number of members.
func (s *Set) Len() int { return int(s.M.N) }

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

// addExact inserts an entry without flex/equality replacement.
func (n *Hnode) addExact(shift uint, h uint32, key, val Value) *Hnode {
	bit := uint32(1) << ((h >> shift) & 31)
	idx := bits.OnesCount32(n.bitmap & (bit - 1))
	if n.bitmap&bit == 0 {
		return n.withLeaf(bit, idx, h, key, val)
	}
	nn := &Hnode{bitmap: n.bitmap, Slots: slices.Clone(n.Slots)}
	s := &nn.Slots[idx]
	if s.Child != nil {
		s.Child = s.Child.addExact(shift+5, h, key, val)
		return nn
	}
	if s.Leaf.hash == h {
		s.Leaf = &hleaf{hash: h, Ents: append(slices.Clip(slices.Clone(s.Leaf.Ents)), MapEntry{key, val})}
		return nn
	}
	*s = hslot{Child: mergeSlots(shift+5, *s, newLeaf(h, key, val))}
	return nn
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

// findExact returns the index of the entry whose key equals key exactly
// (no flex match), or -1.
func findExact(es []MapEntry, key Value) int {
	for i := range es {
		if Equal(es[i].Key, key) {
			return i
		}
	}
	return -1
}

// KwGet is (:kw v). A small map whose shape the keyword last saw (the
// common case in a scan over records) is read inline; see Map.findSmall.
func KwGet(v Value, kw *Keyword) Value {
	if h, ok := v.(HostMap); ok { // a host record: one Go map read
		x := ReadField(h.Src(), kw.Name, &kw.slot)
		switch x.(type) {
		case nil, bool, int64, float64, string:
			return x // nil: absent, or nil in the host's map
		}
		return viewValue(kw.Name, x)
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

// orderRank groups values for map/set key order.
func orderRank(v Value) int {
	switch v.(type) {
	case int64, float64:
		return 0
	case *Keyword:
		return 1
	case string:
		return 2
	}
	return 3
}

// keyOrder is the total order of map keys and set members: numbers by
// value, then keywords by name, then strings, then other values by printed
// form (orderText).
func keyOrder(a, b Value) int {
	ra, rb := orderRank(a), orderRank(b)
	if ra != rb {
		return ra - rb
	}
	switch ra {
	case 0:
		return NumCmp(a, b)
	case 1:
		return strings.Compare(a.(*Keyword).Name, b.(*Keyword).Name)
	case 2:
		return strings.Compare(a.(string), b.(string))
	}
	if Equal(a, b) {
		return 0
	}
	return strings.Compare(orderText(a), orderText(b))
}

// orderText is the printed form that orders a key of no other kind
// (vector, map, set...), cut after 64 KiB: a key that shares structure
// (a vector holding a map twice, nested) may print exponentially long,
// and its order must not cost more than a bounded print.
func orderText(v Value) string { return Sprint(v, PrintOptions{MaxLen: 64 << 10}) }
