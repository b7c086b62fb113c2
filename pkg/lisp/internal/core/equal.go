package core

import (
	"math"
)

// Equality, hashing and comparison of values. Maps, sets and host records
// compare by their entries, read through the keyed interface (mapeq.go,
// hosteq.go), since a map's lookup needs Equal for keys that are
// collections.

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
		return keyed(h).hashIn(st)
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
	case keyed:
		return x.hashIn(st)
	}
	return 0x31415
}

// keyed is implemented by the values that compare and hash by their
// entries, read through the layers above equality: maps and sets
// (mapeq.go) and host records (hosteq.go). A map's lookup needs Equal for
// keys that are collections, so equality reaches maps through the values'
// own methods.
type keyed interface {
	// equalTo reports whether the value equals b (under st's memo).
	equalTo(st *eqState, b Value) bool
	// hashIn hashes the value consistently with equalTo.
	hashIn(st *hashState) uint32
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
		return keyed(x).equalTo(st, b)
	}
	if y, ok := b.(HostMap); ok {
		return keyed(y).equalTo(st, a)
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
	case keyed:
		return x.equalTo(st, b)
	}
	return a == b
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
