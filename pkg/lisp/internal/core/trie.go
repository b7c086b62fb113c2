package core

import (
	"math/bits"
	"slices"
)

// The hash array mapped trie that holds maps beyond a small map's size,
// and the edit token that lets a reduce's own accumulator be updated in
// place.

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

func newLeaf(h uint32, key, val Value) hslot {
	a := &leafAlloc{}
	a.e[0] = MapEntry{key, val}
	a.l = hleaf{hash: h, Ents: a.e[:]}
	return hslot{Leaf: &a.l}
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

// holdsNothing reports whether v can hold nothing the sizer measures (a
// number, a short string, ...): such a value is never new memory.
func holdsNothing(v Value) bool {
	switch x := v.(type) {
	case nil, bool, int64, float64, *Keyword:
		return true
	case string:
		return len(x) <= slotString
	}
	return false
}
