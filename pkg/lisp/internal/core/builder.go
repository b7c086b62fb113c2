package core

import (
	"encoding/binary"
	"slices"
)

// Building maps: MapBuilder (entries in any order to a small, wide or trie
// map) and ShapeCache, which shares the key shapes of records built the
// same way (the decoders', the converter's).

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
		if s, ok := e.Key.(string); !ok || s != c.arrKeys[i].(string) {
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
	if cap(c.arrKeys) < len(es) {
		// made at the map's width, not grown key by key
		c.arrKeys = make([]Value, 0, len(es))
	}
	c.arrKeys = c.arrKeys[:0]
	for _, e := range es {
		if _, ok := e.Key.(string); !ok {
			c.arrKeys = c.arrKeys[:0]
			return
		}
		c.arrKeys = append(c.arrKeys, e.Key)
	}
}

// arrivedAs completes the note of arrive: the keys noted make shape sh,
// each at its slot.
func (c *ShapeCache) arrivedAs(sh *Shape) {
	if c == nil || len(c.arrKeys) == 0 {
		return
	}
	if cap(c.arrPerm) < len(c.arrKeys) {
		c.arrPerm = make([]int32, 0, len(c.arrKeys))
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
		if c.nSmalls == 0 && c.maxSmalls > 0 {
			// a decode of a map or two (a record) takes a slab of its size
			c.nSmalls = min(c.maxSmalls, slabFirst)
		} else {
			c.nSmalls = min(max(2*c.nSmalls, slabFirst), slabLastMaps)
		}
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
	size := 0
	for _, e := range es {
		s, ok := e.Key.(string)
		if !ok {
			c.made += shapeBytes(len(es))
			return (*ShapeCache)(nil).Get(es)
		}
		size += binary.MaxVarintLen64 + len(s)
	}
	// the first shape is compared key by key: no key of it is made
	if c.one == nil {
		sh := (*ShapeCache)(nil).Get(es)
		c.made += shapeBytes(len(es))
		c.one = sh
		return c.remember(sh)
	}
	if sameKeys(c.one.Keys, es) {
		return c.remember(c.one)
	}
	if cap(c.buf) < size {
		c.buf = make([]byte, 0, size) // at once, not grown key by key
	}
	c.buf = c.buf[:0]
	for _, e := range es {
		s := e.Key.(string)
		// each key prefixed by its length: keys may hold any byte
		c.buf = binary.AppendUvarint(c.buf, uint64(len(s)))
		c.buf = append(c.buf, s...)
	}
	if sh, ok := c.m[string(c.buf)]; ok {
		return c.remember(sh)
	}
	sh := (*ShapeCache)(nil).Get(es)
	c.made += shapeBytes(len(es))
	if c.m == nil {
		c.m = map[string]*Shape{} // made for a second shape: most conversions have one
	}
	if len(c.m) < 4096 {
		c.m[string(c.buf)] = sh
	}
	return c.remember(sh)
}

// sameKeys reports whether keys, a shape's, are the string keys of es in
// their order.
func sameKeys(keys []Value, es []MapEntry) bool {
	if len(keys) != len(es) {
		return false
	}
	for i, e := range es {
		k, ok := keys[i].(string)
		if !ok || k != e.Key.(string) {
			return false
		}
	}
	return true
}

// reset empties c for another conversion, keeping the capacity of its
// buffers (its key buffer and its note of the keys' arrival order,
// cleared) and nothing a converted value refers to: no shape and no
// slab.
func (c *ShapeCache) reset() {
	buf, arrKeys, arrPerm := c.buf[:0], c.arrKeys[:0], c.arrPerm[:0]
	clear(c.arrKeys[:cap(c.arrKeys)])
	if cap(buf) > maxKeptScratch {
		buf = nil
	}
	if cap(arrKeys) > maxKeptScratch/16 {
		arrKeys, arrPerm = nil, nil
	}
	*c = ShapeCache{buf: buf, arrKeys: arrKeys, arrPerm: arrPerm}
}
