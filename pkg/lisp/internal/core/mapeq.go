package core

// Equality and hashing of maps and sets, by their entries.

// equalTo is equality of a map and b: the same number of entries, each key
// found in b (as an equal key) with an equal value.
func (x *Map) equalTo(st *eqState, b Value) bool {
	y, ok := b.(*Map)
	if !ok {
		return false
	}
	if x == y || sameView(x, y) {
		return true
	}
	if x.Len() != y.Len() {
		return false
	}
	for _, e := range x.Entries() {
		k, ok := y.LookupKey(e.Key)
		if !ok || !st.equal(k, e.Key) {
			return false
		}
		v, _ := y.Get(k)
		if !st.equal(v, e.Val) {
			return false
		}
	}
	return true
}

// hashIn hashes a map's entries independent of their order.
func (x *Map) hashIn(st *hashState) uint32 {
	var h uint32
	for _, e := range x.Entries() {
		h += st.hash(e.Key)*31 ^ st.hash(e.Val)
	}
	return h ^ 0xabcdef
}

// equalTo is equality of a set and b: the same members.
func (x *Set) equalTo(st *eqState, b Value) bool {
	y, ok := b.(*Set)
	if !ok {
		return false
	}
	if x.Len() != y.Len() {
		return false
	}
	for _, e := range x.M.Entries() {
		if !y.Has(e.Key) {
			return false
		}
	}
	return true
}

// hashIn hashes a set's members independent of their order.
func (x *Set) hashIn(st *hashState) uint32 {
	var h uint32
	for _, e := range x.M.Entries() {
		h += st.hash(e.Key)
	}
	return h ^ 0xfedcba
}
