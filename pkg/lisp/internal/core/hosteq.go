package core

// Equality and hashing of host records, read in place as their views
// would read them.

// equalTo is equality of a host record and b, read in place (equalHost).
func (h HostMap) equalTo(st *eqState, b Value) bool { return st.equalHost(h.Src(), b) }

// hashIn hashes a host record in place (hashHost).
func (h HostMap) hashIn(st *hashState) uint32 { return st.hashHost(h.Src()) }

// equalHost reports whether host map src equals b (= is symmetric): b is
// a map with the same number of entries, each key of src stored in b as
// the same string (a keyword key is not equal to a string key) and each
// value equal.
func (st *eqState) equalHost(src map[string]any, b Value) bool {
	var y *Map
	switch m := b.(type) {
	case HostMap:
		return st.equalSrcs(src, m.Src())
	case *Map:
		y = m
	default:
		return false
	}
	if len(src) != y.Len() {
		return false
	}
	if y.Src != nil && mapIdentity(y.Src) == mapIdentity(src) {
		return true
	}
	for k, x := range src {
		sk, ok := y.LookupKey(k)
		if s, isStr := sk.(string); !ok || !isStr || s != k {
			return false
		}
		yv, _ := y.Get(sk)
		if !st.equalHostEntry(k, x, yv) {
			return false
		}
	}
	return true
}

// equalHostEntry reports whether the host map entry k: x equals yv, a
// nested record read in place.
func (st *eqState) equalHostEntry(k string, x any, yv Value) bool {
	if m, ok := x.(map[string]any); ok {
		return st.equalHost(m, yv)
	}
	return st.equal(viewValue(k, x), yv)
}

// equalSrcs is equalHost of two host maps, both read in place (as the
// view of ys would read it, without making one).
func (st *eqState) equalSrcs(src, ys map[string]any) bool {
	if len(src) != len(ys) {
		return false
	}
	if mapIdentity(ys) == mapIdentity(src) {
		return true
	}
	for k, x := range src {
		y, ok := ys[k]
		if !ok {
			return false
		}
		if !st.equalHostEntry(k, x, viewValue(k, y)) {
			return false
		}
	}
	return true
}

// hashHost hashes a host map as its interpreter form hashes (the sum of
// its entries' hashes does not depend on their order), reading it in
// place.
func (st *hashState) hashHost(src map[string]any) uint32 {
	var h uint32
	for k, x := range src {
		if m, ok := x.(map[string]any); ok { // a nested record, read in place
			h += hashString(k)*31 ^ st.hashHost(m)
			continue
		}
		h += hashString(k)*31 ^ st.hash(viewValue(k, x))
	}
	return h ^ 0xabcdef
}
