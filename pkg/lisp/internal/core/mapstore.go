package core

import (
	"maps"
	"math/bits"
)

// A transient map beyond smallMapMax entries whose keys are all integers,
// strings or keywords keeps its entries in Go hash maps (a hashStore)
// instead of a hash trie: an insert is one Go map assignment, where the
// trie walks a path and allocates a leaf. The store is held by the
// transient's edit token while the transient is being built; when the
// transient ends (endTransient) the map keeps it in Map.cache, and the map
// is then read in place like a view: Get, lookupKey, count and the memory
// sizer read the store, and every other operation (iteration in key
// order, assoc, dissoc, printing, =, hashing) works on the map's
// interpreter form, a trie built from the store once on first need
// (Map.form). A key of another type (a float, a vector, nil, ...) moves a
// transient's entries into a trie first (spill), so a store never holds
// keys whose equality is not plain Go equality.
//
// Keys follow the flex rule as in the trie: strings and keywords are kept
// apart (a map may hold both "a" and :a), a lookup finds the exact key
// first and the other spelling second, and a write to an existing entry
// keeps that entry's key.

// storable reports whether key may be kept in a hashStore.
func storable(key Value) bool {
	switch key.(type) {
	case int64, string, *Keyword:
		return true
	}
	return false
}

// newHashStore returns a store holding the given entries (storable keys,
// none matching another by flex rules other than a string/keyword pair).
func newHashStore(keys, vals []Value) *hashStore {
	s := &hashStore{}
	for i, k := range keys {
		s.put(k, vals[i])
	}
	return s
}

// put adds an entry known to be absent (exactly).
func (s *hashStore) put(key, val Value) {
	switch k := key.(type) {
	case int64:
		if s.ints == nil {
			s.ints = make(map[int64]Value, 2*SmallMapMax)
		}
		s.ints[k] = val
	case string:
		if s.strs == nil {
			s.strs = make(map[string]Value, 2*SmallMapMax)
		}
		s.strs[k] = val
	case *Keyword:
		if s.kws == nil {
			s.kws = make(map[string]kwEnt, 2*SmallMapMax)
		}
		s.kws[k.Name] = kwEnt{k, val}
	}
}

// Get returns the stored key and value matching key (a storable key):
// exact first, then flex.
func (s *hashStore) Get(key Value) (Value, Value, bool) {
	switch k := key.(type) {
	case int64:
		v, ok := s.ints[k]
		return k, v, ok
	case string:
		if v, ok := s.strs[k]; ok {
			return k, v, true
		}
		if e, ok := s.kws[k]; ok {
			return e.k, e.v, true
		}
	case *Keyword:
		if e, ok := s.kws[k.Name]; ok {
			return e.k, e.v, true
		}
		if v, ok := s.strs[k.Name]; ok {
			return k.Name, v, true
		}
	}
	return nil, nil, false
}

// Set sets key (a storable key) to val, resolving the key as get does; it
// reports whether an entry was added. edit is the transient's token
// (its reduce's progress sizes the store, see fit).
func (s *hashStore) Set(key, val Value, edit *EditToken) bool {
	switch k := key.(type) {
	case int64:
		if s.ints == nil {
			s.ints = make(map[int64]Value, 2*SmallMapMax)
		}
		n := len(s.ints)
		s.ints[k] = val
		if len(s.ints) == n {
			return false
		}
		if c, ok := Fit(n+1, edit); ok {
			s.ints = resized(s.ints, c)
		}
		return true
	case string:
		if _, ok := s.strs[k]; ok {
			s.strs[k] = val
			return false
		}
		if e, ok := s.kws[k]; ok {
			s.kws[k] = kwEnt{e.k, val}
			return false
		}
	case *Keyword:
		if e, ok := s.kws[k.Name]; ok {
			s.kws[k.Name] = kwEnt{e.k, val}
			return false
		}
		if _, ok := s.strs[k.Name]; ok {
			s.strs[k.Name] = val
			return false
		}
	}
	s.put(key, val)
	switch key.(type) {
	case string:
		if c, ok := Fit(len(s.strs), edit); ok {
			s.strs = resized(s.strs, c)
		}
	case *Keyword:
		if c, ok := Fit(len(s.kws), edit); ok {
			s.kws = resized(s.kws, c)
		}
	}
	return true
}

// A Go map grows by doubling, rehashing its entries at every step; for a
// map built by a reduce over a vector of many items (an index by id) that
// rehashing costs about as much as the inserts. So when a map of the
// store reaches a checkpoint (1024 entries, then 4 times as many each
// time), fit estimates its final size from the reduce's progress (entries
// per item so far, times the items the reduce has) and the map is rebuilt
// once with room for that many: at most the items the reduce has, and at
// most 4 times its entries, which bounds the room a map whose keys stop
// being new (a count per category) leaves unused: an int-keyed map then
// takes at most about what its entries are charged (trieEntryBytes), a
// map of longer keys a little more, as a map just doubled by Go does.
const (
	fitFirst = 1 << 10 // the first checkpoint
	fitShift = 2       // log2 of the factor between checkpoints
)

// Fit reports the capacity a map of the store that has just reached n
// entries is to be rebuilt with, if it is to be: n is a checkpoint, a
// reduce over a known number of items feeds the transient and the
// estimate is at least twice n.
func Fit(n int, edit *EditToken) (int, bool) {
	if n < fitFirst || n&(n-1) != 0 || (bits.TrailingZeros(uint(n))-bits.TrailingZeros(fitFirst))%fitShift != 0 {
		return 0, false
	}
	if edit == nil || edit.Items <= 0 || edit.Done <= 0 || edit.Done > edit.Items {
		return 0, false
	}
	est := int(min(int64(n)*int64(edit.Items)/int64(edit.Done), int64(edit.Items), int64(n)<<fitShift))
	if est < 2*n {
		return 0, false
	}
	return est, true
}

// resized returns a copy of m with room for c entries.
func resized[K comparable, V any](m map[K]V, c int) map[K]V {
	r := make(map[K]V, c)
	for k, v := range m {
		r[k] = v
	}
	return r
}

// each calls fn for every entry, in no particular order, until fn returns
// false.
func (s *hashStore) each(fn func(k, v Value) bool) {
	for k, v := range s.ints {
		if !fn(k, v) {
			return
		}
	}
	for k, v := range s.strs {
		if !fn(k, v) {
			return
		}
	}
	for _, e := range s.kws {
		if !fn(e.k, e.v) {
			return
		}
	}
}

// clone returns a copy that may be changed without affecting s.
func (s *hashStore) clone() *hashStore {
	return &hashStore{ints: maps.Clone(s.ints), strs: maps.Clone(s.strs), kws: maps.Clone(s.kws)}
}

// trie builds a trie of the store's entries whose nodes belong to edit.
// Entries are added exactly: "a" and :a stay two entries.
func (s *hashStore) trie(edit *EditToken) *Hnode {
	root := &Hnode{edit: edit}
	s.each(func(k, v Value) bool {
		root, _ = root.setMut(edit, 0, HashValue(k), k, v, true)
		return true
	})
	return root
}

// Store returns the hashStore holding m's entries, or nil: a transient's
// (its edit token's), or a map's whose form has not been built.
func (m *Map) Store() *hashStore {
	if m.Edit != nil {
		return m.Edit.Store
	}
	if c := m.Cache.Load(); c != nil && c.Form == nil {
		return c.Store
	}
	return nil
}

// spill moves a transient's entries from its hashStore into a trie owned
// by its edit token.
func (m *Map) spill() {
	m.Root = m.Edit.Store.trie(m.Edit)
	m.Edit.Store = nil
}

// toStore moves a small transient's entries into a new hashStore when its
// keys and key allow it, and reports whether it did.
func (m *Map) toStore(key Value) bool {
	if !storable(key) {
		return false
	}
	for _, k := range m.Shape.Keys {
		if !storable(k) {
			return false
		}
	}
	m.Edit.Store = newHashStore(m.Shape.Keys, m.Vals[:m.N])
	m.Shape, m.Vals, m.OwnVals = nil, nil, false
	return true
}

// holdsCollections reports whether a key or value of m may be a
// collection or lazy seq. It is true for every map but one kept in a
// hashStore, whose entries it scans without building the form (a walk
// over the entries in key order needs it).
func (m *Map) holdsCollections() bool {
	s := m.Store()
	if s == nil || m.Shape != nil || m.Root != nil {
		return true
	}
	found := false
	s.each(func(_, v Value) bool {
		switch v.(type) {
		case *LazySeq, *Vector, *Map, *Set:
			found = true
		}
		return !found
	})
	return found
}
