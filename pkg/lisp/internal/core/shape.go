package core

import (
	"slices"
	"strings"
	"weak"
)

// Small and wide maps: a shared key shape plus a value slice. Finding a
// key in a shape (exact first, then flex), growing and shrinking shapes,
// and the key order in which maps and sets iterate and print.

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
		return findStrKey(keys, k)
	}
	for i, ek := range keys {
		if Equal(ek, key) {
			return i
		}
	}
	return -1
}

// findStrKey is findKey of string key k: the string keys first (length
// and first byte first: most keys differ there, and it saves the
// runtime's memequal call), then a keyword of that name.
func findStrKey(keys []Value, k string) int {
	for i, ek := range keys {
		if ek, ok := ek.(string); ok && len(ek) == len(k) && (len(k) == 0 || ek[0] == k[0]) && ek == k {
			return i
		}
	}
	for i, ek := range keys {
		if ek, ok := ek.(*Keyword); ok && ek.Name == k {
			return i
		}
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

// findStr is find of string key name, which it does not box.
func (sh *Shape) findStr(name string) int {
	if sh.Strs == nil && sh.kws == nil {
		return findStrKey(sh.Keys, name)
	}
	if i, ok := sh.Strs[name]; ok {
		return int(i)
	}
	if i, ok := sh.kws[name]; ok {
		return int(i)
	}
	return -1
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

// eachSmall calls fn for each entry of a small map, in key order, until fn
// returns false.
func (m *Map) eachSmall(fn func(k, v Value) bool) {
	for i, k := range m.Shape.Keys {
		if !fn(k, m.Vals[i]) {
			return
		}
	}
}

// Wide reports whether m is a wide map (a shape of more than smallMapMax
// keys and its values).
func (m *Map) Wide() bool { return m.Root == nil && m.N > SmallMapMax && m.Shape != nil }

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
