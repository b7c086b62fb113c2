package lisp

import (
	"math/bits"
	"slices"
	"sync/atomic"
)

// smallMapMax is the largest map kept as a sorted array map.
const smallMapMax = 8

type mapEntry struct {
	key, val Value
}

// Map is an immutable map. Up to smallMapMax entries it is a sorted array
// (linear scan lookup); larger maps are a hash array mapped trie. Iteration
// and printing follow the key order of ptc-lisp.md §5 (numbers, keywords,
// strings, others by printed form).
//
// Lookups are flex (§3.6): a keyword key also finds the same-named string
// key and the other way round; an exact match wins. Writes (Assoc, Dissoc)
// resolve keys the same way, keeping the existing key's spelling.
type Map struct {
	small  []mapEntry // sorted; used when root == nil
	root   *hnode
	n      int
	sorted atomic.Pointer[[]mapEntry] // cached sorted entries of a trie map
}

var emptyMap = &Map{}

// Len returns the number of entries.
func (m *Map) Len() int { return m.n }

// Entries returns the entries in key order; callers must not modify it.
func (m *Map) entries() []mapEntry {
	if m.root == nil {
		return m.small
	}
	if p := m.sorted.Load(); p != nil {
		return *p
	}
	es := make([]mapEntry, 0, m.n)
	m.root.each(func(e mapEntry) { es = append(es, e) })
	slices.SortStableFunc(es, func(a, b mapEntry) int { return keyOrder(a.key, b.key) })
	m.sorted.Store(&es)
	return es
}

// Each calls fn for each entry in key order until fn returns false.
func (m *Map) Each(fn func(k, v Value) bool) {
	for _, e := range m.entries() {
		if !fn(e.key, e.val) {
			return
		}
	}
}

// flexMatch reports whether a is the other spelling of b (:id vs "id").
func flexMatch(a, b Value) bool {
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

// findSmall returns the index of key in es: exact match first, then flex;
// -1 when absent.
func findSmall(es []mapEntry, key Value) int {
	switch k := key.(type) {
	case *Keyword:
		flex := -1
		for i := range es {
			switch ek := es[i].key.(type) {
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
		for i := range es {
			switch ek := es[i].key.(type) {
			case string:
				if ek == k {
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
	for i := range es {
		if Equal(es[i].key, key) {
			return i
		}
	}
	return -1
}

// Get returns the value for key (flex lookup).
func (m *Map) Get(key Value) (Value, bool) {
	if m.root == nil {
		if i := findSmall(m.small, key); i >= 0 {
			return m.small[i].val, true
		}
		return nil, false
	}
	if e := m.root.find(hashValue(key), key); e != nil {
		return e.val, true
	}
	return nil, false
}

// lookupKey returns the stored key matching key (flex), if any.
func (m *Map) lookupKey(key Value) (Value, bool) {
	if m.root == nil {
		if i := findSmall(m.small, key); i >= 0 {
			return m.small[i].key, true
		}
		return nil, false
	}
	if e := m.root.find(hashValue(key), key); e != nil {
		return e.key, true
	}
	return nil, false
}

// Assoc returns m with key set to val. An existing entry matched by flex
// lookup keeps its key spelling.
func (m *Map) Assoc(key, val Value) *Map {
	if m.root == nil {
		if i := findSmall(m.small, key); i >= 0 {
			es := make([]mapEntry, len(m.small))
			copy(es, m.small)
			es[i].val = val
			return &Map{small: es, n: m.n}
		}
		if m.n < smallMapMax {
			pos, _ := slices.BinarySearchFunc(m.small, key, func(e mapEntry, k Value) int { return keyOrder(e.key, k) })
			es := make([]mapEntry, m.n+1)
			copy(es, m.small[:pos])
			es[pos] = mapEntry{key, val}
			copy(es[pos+1:], m.small[pos:])
			return &Map{small: es, n: m.n + 1}
		}
		root := &hnode{}
		for _, e := range m.small {
			root, _ = root.set(0, hashValue(e.key), e.key, e.val)
		}
		root, _ = root.set(0, hashValue(key), key, val)
		return &Map{root: root, n: m.n + 1}
	}
	root, added := m.root.set(0, hashValue(key), key, val)
	n := m.n
	if added {
		n++
	}
	return &Map{root: root, n: n}
}

// Dissoc returns m without key (flex).
func (m *Map) Dissoc(key Value) *Map {
	if m.root == nil {
		i := findSmall(m.small, key)
		if i < 0 {
			return m
		}
		es := make([]mapEntry, 0, m.n-1)
		es = append(es, m.small[:i]...)
		es = append(es, m.small[i+1:]...)
		return &Map{small: es, n: m.n - 1}
	}
	root, removed := m.root.del(0, hashValue(key), key)
	if !removed {
		return m
	}
	if m.n-1 <= smallMapMax/2 {
		b := newMapBuilder(m.n)
		root.each(func(e mapEntry) { b.setRaw(e.key, e.val) })
		return b.build()
	}
	return &Map{root: root, n: m.n - 1}
}

// mapBuilder builds a map by mutation before it is published.
type mapBuilder struct {
	es   []mapEntry
	root *hnode
	n    int
}

func newMapBuilder(capHint int) *mapBuilder {
	if capHint > smallMapMax {
		capHint = smallMapMax
	}
	return &mapBuilder{es: make([]mapEntry, 0, capHint)}
}

// set adds or replaces key (flex-resolved).
func (b *mapBuilder) set(key, val Value) {
	if b.root == nil {
		if i := findSmall(b.es, key); i >= 0 {
			b.es[i].val = val
			return
		}
		if len(b.es) < smallMapMax {
			b.es = append(b.es, mapEntry{key, val})
			b.n++
			return
		}
		b.root = &hnode{}
		for _, e := range b.es {
			b.root, _ = b.root.set(0, hashValue(e.key), e.key, e.val)
		}
		b.es = nil
	}
	var added bool
	b.root, added = b.root.set(0, hashValue(key), key, val)
	if added {
		b.n++
	}
}

// setRaw is set for keys known to be distinct.
func (b *mapBuilder) setRaw(key, val Value) { b.set(key, val) }

func (b *mapBuilder) build() *Map {
	if b.root == nil {
		if len(b.es) == 0 {
			return emptyMap
		}
		slices.SortStableFunc(b.es, func(x, y mapEntry) int { return keyOrder(x.key, y.key) })
		return &Map{small: b.es, n: len(b.es)}
	}
	return &Map{root: b.root, n: b.n}
}

// hnode is a node of the hash trie. Nodes are never modified once
// reachable from a published Map (set and del copy the path).
type hnode struct {
	bitmap uint32
	slots  []hslot
}

// hslot is either a child node or a leaf with all entries whose full hash
// is hash (true collisions and flex pairs such as :id and "id").
type hslot struct {
	hash  uint32
	ents  []mapEntry
	child *hnode
}

func findEntry(ents []mapEntry, key Value) int {
	return findSmall(ents, key)
}

func (n *hnode) find(h uint32, key Value) *mapEntry {
	shift := uint(0)
	for {
		bit := uint32(1) << ((h >> shift) & 31)
		if n.bitmap&bit == 0 {
			return nil
		}
		s := &n.slots[bits.OnesCount32(n.bitmap&(bit-1))]
		if s.child != nil {
			n = s.child
			shift += 5
			continue
		}
		if s.hash != h {
			return nil
		}
		if i := findEntry(s.ents, key); i >= 0 {
			return &s.ents[i]
		}
		return nil
	}
}

func (n *hnode) set(shift uint, h uint32, key, val Value) (*hnode, bool) {
	bit := uint32(1) << ((h >> shift) & 31)
	idx := bits.OnesCount32(n.bitmap & (bit - 1))
	nn := &hnode{bitmap: n.bitmap}
	if n.bitmap&bit == 0 {
		nn.bitmap |= bit
		nn.slots = make([]hslot, len(n.slots)+1)
		copy(nn.slots, n.slots[:idx])
		nn.slots[idx] = hslot{hash: h, ents: []mapEntry{{key, val}}}
		copy(nn.slots[idx+1:], n.slots[idx:])
		return nn, true
	}
	nn.slots = make([]hslot, len(n.slots))
	copy(nn.slots, n.slots)
	s := &nn.slots[idx]
	if s.child != nil {
		child, added := s.child.set(shift+5, h, key, val)
		s.child = child
		return nn, added
	}
	if s.hash == h {
		if i := findEntry(s.ents, key); i >= 0 {
			ents := make([]mapEntry, len(s.ents))
			copy(ents, s.ents)
			ents[i].val = val
			s.ents = ents
			return nn, false
		}
		ents := make([]mapEntry, len(s.ents)+1)
		copy(ents, s.ents)
		ents[len(s.ents)] = mapEntry{key, val}
		s.ents = ents
		return nn, true
	}
	*s = hslot{child: mergeSlots(shift+5, *s, hslot{hash: h, ents: []mapEntry{{key, val}}})}
	return nn, true
}

func mergeSlots(shift uint, a, b hslot) *hnode {
	ia, ib := (a.hash>>shift)&31, (b.hash>>shift)&31
	if ia == ib {
		return &hnode{bitmap: 1 << ia, slots: []hslot{{child: mergeSlots(shift+5, a, b)}}}
	}
	if ia > ib {
		a, b = b, a
		ia, ib = ib, ia
	}
	return &hnode{bitmap: 1<<ia | 1<<ib, slots: []hslot{a, b}}
}

func (n *hnode) del(shift uint, h uint32, key Value) (*hnode, bool) {
	bit := uint32(1) << ((h >> shift) & 31)
	if n.bitmap&bit == 0 {
		return n, false
	}
	idx := bits.OnesCount32(n.bitmap & (bit - 1))
	s := n.slots[idx]
	if s.child != nil {
		child, removed := s.child.del(shift+5, h, key)
		if !removed {
			return n, false
		}
		nn := &hnode{bitmap: n.bitmap, slots: slices.Clone(n.slots)}
		if child.bitmap == 0 {
			nn.bitmap &^= bit
			nn.slots = slices.Delete(nn.slots, idx, idx+1)
		} else {
			nn.slots[idx].child = child
		}
		return nn, true
	}
	if s.hash != h {
		return n, false
	}
	i := findEntry(s.ents, key)
	if i < 0 {
		return n, false
	}
	nn := &hnode{bitmap: n.bitmap, slots: slices.Clone(n.slots)}
	if len(s.ents) == 1 {
		nn.bitmap &^= bit
		nn.slots = slices.Delete(nn.slots, idx, idx+1)
	} else {
		nn.slots[idx].ents = slices.Delete(slices.Clone(s.ents), i, i+1)
	}
	return nn, true
}

func (n *hnode) each(fn func(mapEntry)) {
	for i := range n.slots {
		s := &n.slots[i]
		if s.child != nil {
			s.child.each(fn)
			continue
		}
		for _, e := range s.ents {
			fn(e)
		}
	}
}

// Set is an immutable set of values, iterated in §5 key order.
type Set struct{ m *Map }

var emptySet = &Set{m: emptyMap}

// Len returns the number of members.
func (s *Set) Len() int { return s.m.n }

// Has reports membership (equality as =, not flex).
func (s *Set) Has(v Value) bool {
	k, ok := s.m.lookupKey(v)
	return ok && Equal(k, v)
}

// Conj returns s with v added.
func (s *Set) Conj(v Value) *Set {
	if s.Has(v) {
		return s
	}
	return &Set{m: s.m.assocExact(v, v)}
}

// Disj returns s without v.
func (s *Set) Disj(v Value) *Set {
	if !s.Has(v) {
		return s
	}
	return &Set{m: s.m.Dissoc(v)}
}

// Items returns the members in order.
func (s *Set) Items() []Value {
	es := s.m.entries()
	out := make([]Value, len(es))
	for i, e := range es {
		out[i] = e.key
	}
	return out
}

// assocExact adds a key known to be absent (no flex matching applied on
// the existing key set is wanted for sets: "a" and :a are distinct members).
func (m *Map) assocExact(key, val Value) *Map {
	if m.root == nil && m.n < smallMapMax {
		pos, _ := slices.BinarySearchFunc(m.small, key, func(e mapEntry, k Value) int { return keyOrder(e.key, k) })
		es := make([]mapEntry, m.n+1)
		copy(es, m.small[:pos])
		es[pos] = mapEntry{key, val}
		copy(es[pos+1:], m.small[pos:])
		return &Map{small: es, n: m.n + 1}
	}
	var root *hnode
	if m.root == nil {
		root = &hnode{}
		for _, e := range m.small {
			root = root.addExact(0, hashValue(e.key), e.key, e.val)
		}
	} else {
		root = m.root
	}
	root = root.addExact(0, hashValue(key), key, val)
	return &Map{root: root, n: m.n + 1}
}

// addExact inserts an entry without flex/equality replacement.
func (n *hnode) addExact(shift uint, h uint32, key, val Value) *hnode {
	bit := uint32(1) << ((h >> shift) & 31)
	idx := bits.OnesCount32(n.bitmap & (bit - 1))
	nn := &hnode{bitmap: n.bitmap}
	if n.bitmap&bit == 0 {
		nn.bitmap |= bit
		nn.slots = make([]hslot, len(n.slots)+1)
		copy(nn.slots, n.slots[:idx])
		nn.slots[idx] = hslot{hash: h, ents: []mapEntry{{key, val}}}
		copy(nn.slots[idx+1:], n.slots[idx:])
		return nn
	}
	nn.slots = slices.Clone(n.slots)
	s := &nn.slots[idx]
	if s.child != nil {
		s.child = s.child.addExact(shift+5, h, key, val)
		return nn
	}
	if s.hash == h {
		s.ents = append(slices.Clip(slices.Clone(s.ents)), mapEntry{key, val})
		return nn
	}
	*s = hslot{child: mergeSlots(shift+5, *s, hslot{hash: h, ents: []mapEntry{{key, val}}})}
	return nn
}

// setBuilder builds a set by mutation before it is published.
type setBuilder struct{ s *Set }

func newSetBuilder() *setBuilder { return &setBuilder{s: emptySet} }

func (b *setBuilder) add(v Value) { b.s = b.s.Conj(v) }

func (b *setBuilder) build() *Set { return b.s }
