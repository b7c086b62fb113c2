package core

import (
	"math"
	"reflect"
)

// Equality, hashing and comparison of values. A map's lookup needs Equal
// for keys that are collections, so the map files sit above this one:
// equality reads maps through the interface mapReader, which *Map
// implements, and the fields of host records through fieldViewer, which
// HostMap implements (view.go).

// HashValue hashes v consistently with Equal: integral floats hash like
// ints, a keyword like its name (so flex pairs share a trie slot), vectors
// and lazy seqs by items, maps and sets independent of order.
func HashValue(v Value) uint32 {
	var st hashState
	return st.hash(v)
}

// hashState memoizes composite hashes once a hash has done a lot of work,
// so values that share structure (a DAG built by doubling) hash in time
// proportional to their distinct nodes, not their expanded size.
type hashState struct {
	work int
	memo map[Value]uint32
}

func (st *hashState) hash(v Value) uint32 {
	if h, ok := v.(HostMap); ok {
		return st.hashHost(h, h.Src())
	}
	switch v.(type) {
	case *Vector, *Map, *Set, *LazySeq:
		st.work++
		if st.work > 4096 {
			if st.memo == nil {
				st.memo = map[Value]uint32{}
			}
			if h, ok := st.memo[v]; ok {
				return h
			}
			h := st.hashComposite(v)
			st.memo[v] = h
			return h
		}
		return st.hashComposite(v)
	}
	return st.hashComposite(v)
}

func (st *hashState) hashComposite(v Value) uint32 {
	switch x := v.(type) {
	case nil:
		return 0x9e3779b9
	case bool:
		if x {
			return 0x12345
		}
		return 0x54321
	case int64:
		return hashInt(x)
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 9.2e18 {
			return hashInt(int64(x))
		}
		return hashInt(int64(math.Float64bits(x)))
	case string:
		return hashString(x)
	case *Keyword:
		return x.hash
	case *Vector:
		h := uint32(0x811c9dc5)
		for _, it := range x.Items() {
			h = (h ^ st.hash(it)) * 16777619
		}
		return h
	case *Var:
		return hashString(x.Name) ^ 0x77
	case *Regex:
		return hashString(x.Source) ^ 0x99
	case *LazySeq:
		h := uint32(0x811c9dc5)
		items, _ := x.Snapshot()
		for _, it := range items {
			h = (h ^ st.hash(it)) * 16777619
		}
		return h
	case *Map:
		var h uint32
		for _, e := range entriesOf(x) {
			h += st.hash(e.Key)*31 ^ st.hash(e.Val)
		}
		return h ^ 0xabcdef
	case *Set:
		var h uint32
		for _, e := range entriesOf(x.M) {
			h += st.hash(e.Key)
		}
		return h ^ 0xfedcba
	}
	return 0x31415
}

// mapReader is a map as equality and hashing read it (map.go).
type mapReader interface {
	sortedMap
	Len() int
	LookupKey(key Value) (Value, bool)
	Get(key Value) (Value, bool)
}

// fieldViewer converts a field of a host record to the value the record's
// view reads for it (view.go), so that equality and hashing read records
// in place.
type fieldViewer interface {
	fieldValue(name string, x any) Value
}

// hashHost hashes a host map as its interpreter form hashes (the sum of
// its entries' hashes does not depend on their order), reading it in
// place.
func (st *hashState) hashHost(fv fieldViewer, src map[string]any) uint32 {
	var h uint32
	for k, x := range src {
		if m, ok := x.(map[string]any); ok { // a nested record, read in place
			h += hashString(k)*31 ^ st.hashHost(fv, m)
			continue
		}
		h += hashString(k)*31 ^ st.hash(fv.fieldValue(k, x))
	}
	return h ^ 0xabcdef
}

// Equal reports PTC-Lisp equality (=): structural, numbers by value across
// int and float, NaN unequal to itself, keywords unequal to strings.
func Equal(a, b Value) bool {
	var st eqState
	return st.equal(a, b)
}

// eqState memoizes composite pairs found equal once a comparison has done
// a lot of work (see hashState).
type eqState struct {
	work int
	memo map[[2]Value]struct{}
}

func (st *eqState) equal(a, b Value) bool {
	// a host record compares as its view would, read in place
	if x, ok := a.(HostMap); ok {
		return st.equalHost(x, x.Src(), b)
	}
	if y, ok := b.(HostMap); ok {
		return st.equalHost(y, y.Src(), a)
	}
	switch a.(type) {
	case *Vector, *Map, *Set, *LazySeq:
		st.work++
		if st.work > 4096 {
			if st.memo == nil {
				st.memo = map[[2]Value]struct{}{}
			}
			k := [2]Value{a, b}
			if _, ok := st.memo[k]; ok {
				return true
			}
			if st.equalComposite(a, b) {
				st.memo[k] = struct{}{}
				return true
			}
			return false
		}
	}
	return st.equalComposite(a, b)
}

func (st *eqState) equalComposite(a, b Value) bool {
	switch x := a.(type) {
	case nil:
		return b == nil
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	case int64:
		switch y := b.(type) {
		case int64:
			return x == y
		case float64:
			return float64(x) == y
		}
		return false
	case float64:
		switch y := b.(type) {
		case int64:
			return x == float64(y)
		case float64:
			return x == y
		}
		return false
	case string:
		y, ok := b.(string)
		return ok && x == y
	case *Keyword:
		y, ok := b.(*Keyword)
		return ok && (x == y || x.Name == y.Name)
	case *Vector:
		switch y := b.(type) {
		case *Vector:
			if x == y {
				return true
			}
			if x.Len() != y.Len() {
				return false
			}
			for i := range x.Items() {
				if !st.equal(x.At(i), y.At(i)) {
					return false
				}
			}
			return true
		case *LazySeq:
			items, done := y.Snapshot()
			return done && st.equal(x, &Vector{Slots: items})
		}
		return false
	case *LazySeq:
		switch y := b.(type) {
		case *Vector:
			return st.equal(y, x)
		case *LazySeq:
			xi, xd := x.Snapshot()
			yi, yd := y.Snapshot()
			return x == y || (xd && yd && st.equal(&Vector{Slots: xi}, &Vector{Slots: yi}))
		}
		return false
	case *Var:
		y, ok := b.(*Var)
		return ok && x.Name == y.Name
	case *Regex:
		return a == b
	case *Reduced:
		y, ok := b.(*Reduced)
		return ok && st.equal(x.Val, y.Val)
	case *Map:
		y, ok := b.(*Map)
		if !ok {
			return false
		}
		if x == y || sameView(x, y) {
			return true
		}
		return st.equalMaps(x, y)
	case *Set:
		y, ok := b.(*Set)
		if !ok {
			return false
		}
		return st.equalSets(x.M, y.M)
	}
	return a == b
}

// equalMaps reports whether x and y have the same number of entries, each
// key of x found in y (as an equal key) with an equal value.
func (st *eqState) equalMaps(x, y mapReader) bool {
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

// equalSets reports whether the sets of maps x and y have the same
// members.
func (st *eqState) equalSets(x, y mapReader) bool {
	if x.Len() != y.Len() {
		return false
	}
	for _, e := range x.Entries() {
		k, ok := y.LookupKey(e.Key)
		if !ok || !st.equal(k, e.Key) {
			return false
		}
	}
	return true
}

// equalHost reports whether host map src (a field of record fv, or fv's
// own) equals b (= is symmetric): b is a map with the same number of
// entries, each key of src stored in b as the same string (a keyword key
// is not equal to a string key) and each value equal.
func (st *eqState) equalHost(fv fieldViewer, src map[string]any, b Value) bool {
	var y *Map
	switch m := b.(type) {
	case HostMap:
		return st.equalSrcs(fv, src, m.Src())
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
	var yr mapReader = y
	for k, x := range src {
		sk, ok := yr.LookupKey(k)
		if s, str := sk.(string); !ok || !str || s != k {
			return false
		}
		yv, _ := yr.Get(sk)
		if !st.equalHostEntry(fv, k, x, yv) {
			return false
		}
	}
	return true
}

// equalHostEntry reports whether the host map entry k: x equals yv, a
// nested record read in place.
func (st *eqState) equalHostEntry(fv fieldViewer, k string, x any, yv Value) bool {
	if m, ok := x.(map[string]any); ok {
		return st.equalHost(fv, m, yv)
	}
	return st.equal(fv.fieldValue(k, x), yv)
}

// equalSrcs is equalHost of two host maps, both read in place (as the
// view of ys would read it, without making one).
func (st *eqState) equalSrcs(fv fieldViewer, src, ys map[string]any) bool {
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
		if !st.equalHostEntry(fv, k, x, fv.fieldValue(k, y)) {
			return false
		}
	}
	return true
}

// NumCmp compares two numbers (int64 or float64); NaN sorts first.
func NumCmp(a, b Value) int {
	if x, ok := a.(int64); ok {
		if y, ok := b.(int64); ok {
			switch {
			case x < y:
				return -1
			case x > y:
				return 1
			}
			return 0
		}
	}
	x, y := toFloat(a), toFloat(b)
	switch {
	case x < y:
		return -1
	case x > y:
		return 1
	case x == y:
		return 0
	case math.IsNaN(x) && !math.IsNaN(y):
		return -1
	case !math.IsNaN(x) && math.IsNaN(y):
		return 1
	}
	return 0
}

func toFloat(v Value) float64 {
	switch x := v.(type) {
	case int64:
		return float64(x)
	case float64:
		return x
	}
	return math.NaN()
}

// javaCompareStrings compares like Java's String.compareTo: the difference
// of the first differing UTF-16 units, else of the lengths.
func javaCompareStrings(a, b string) int {
	ua, ub := utf16Units(a), utf16Units(b)
	n := min(len(ua), len(ub))
	for i := 0; i < n; i++ {
		if ua[i] != ub[i] {
			return int(ua[i]) - int(ub[i])
		}
	}
	return len(ua) - len(ub)
}

func utf16Units(s string) []uint16 {
	out := make([]uint16, 0, len(s))
	for _, r := range s {
		if r >= 0x10000 {
			r -= 0x10000
			out = append(out, uint16(0xd800+(r>>10)), uint16(0xdc00+(r&0x3ff)))
			continue
		}
		out = append(out, uint16(r))
	}
	return out
}

// Compare implements (compare a b): numbers by value, strings like Java,
// keywords by name, nil lowest, booleans false < true, vectors by length
// then element-wise. ok is false when the kinds cannot be compared.
func Compare(a, b Value) (int, bool) {
	if a == nil {
		if b == nil {
			return 0, true
		}
		return -1, true
	}
	if b == nil {
		return 1, true
	}
	switch x := a.(type) {
	case int64, float64:
		switch b.(type) {
		case int64, float64:
			if IsNaN(a) || IsNaN(b) {
				return 0, true // Java's Numbers.compare: NaN is neither less nor greater
			}
			return NumCmp(a, b), true
		}
	case string:
		if y, ok := b.(string); ok {
			return javaCompareStrings(x, y), true
		}
	case *Keyword:
		if y, ok := b.(*Keyword); ok {
			return javaCompareStrings(x.Name, y.Name), true
		}
	case bool:
		if y, ok := b.(bool); ok {
			switch {
			case x == y:
				return 0, true
			case !x:
				return -1, true
			}
			return 1, true
		}
	case *Vector:
		if y, ok := b.(*Vector); ok {
			if x.Len() != y.Len() {
				if x.Len() < y.Len() {
					return -1, true
				}
				return 1, true
			}
			for i := range x.Items() {
				c, ok := Compare(x.At(i), y.At(i))
				if !ok {
					return 0, false
				}
				if c != 0 {
					return c, true
				}
			}
			return 0, true
		}
	}
	return 0, false
}

// IsNaN reports whether v is a float NaN.
func IsNaN(v Value) bool {
	f, ok := v.(float64)
	return ok && f != f
}

// sameView reports whether x and y view the same host map.
func sameView(x, y *Map) bool {
	return x.Src != nil && y.Src != nil && mapIdentity(x.Src) == mapIdentity(y.Src)
}

// mapIdentity returns the address that identifies m (two map values are
// the same map when they have the same one). reflect documents the
// pointer of a map value; it is only compared, never dereferenced.
func mapIdentity(m map[string]any) uintptr { return reflect.ValueOf(m).Pointer() }
