package lisp

import (
	"math"
	"slices"
	"strings"
	"unicode/utf8"
)

// registerSeq registers the sequence builtins: searching, sorting,
// grouping, partitioning, building and walking collections.
func registerSeq(r *registry) {
	r.add("find", 2, 2, biFind).
		doc("the [key value] entry of a key in a map, or nil").ref(refSeq)
	r.add("mapcat", 2, -1, biMapcat).
		doc("map, then concatenate the results").ref(refSeq).hof(1)
	r.add("map-indexed", 2, 2, biMapIndexed).
		doc("f applied to each index and item").ref(refSeq).hof(1)
	r.add("pluck", 2, 2, func(th *Thread, a []Value) Value {
		items := th.seqItems(a[1], "pluck", 2)
		th.allocSlots(items.len())
		out := make([]Value, items.len())
		for i := range out {
			th.tick()
			out[i] = getPath(items.at(i), a[0])
		}
		return seqVec(out)
	}).doc("the value at a key (or key path) of each item").ref(refSeq).usage("(pluck k coll)")
	r.add("sort", 1, 2, biSort).
		doc("the items in ascending order, or by a comparator").ref(refSeq).hof(-1)
	r.add("sort-by", 2, 3, biSortBy).
		doc("the items ordered by keyfn's result, optionally with a comparator").ref(refSeq).hof(1)
	r.add("reverse", 1, 1, func(th *Thread, a []Value) Value { return reverseOf(th, "reverse", a[0]) }).
		doc("the items in reverse order").ref(refSeq).pure()
	r.add("rseq", 1, 1, func(th *Thread, a []Value) Value {
		switch a[0].(type) {
		case nil, *Vector, *Set, *Map, hostMap: // every map and set is sorted
		default:
			th.TypeError("rseq", "a vector or a sorted collection", a[0], 1)
		}
		return seqOrNil(th, reverseOf(th, "rseq", a[0]))
	}).doc("the items of a vector or sorted collection in reverse order, or nil when empty")
	r.add("distinct", 1, 1, func(th *Thread, a []Value) Value {
		switch a[0].(type) {
		case *Map, hostMap, *Set:
			// as Clojure, whose distinct reads its argument positionally
			th.RaiseHint(KindType, "its items are distinct already; take (vec (keys m)) or (vec s)",
				"distinct: expected a sequence, got %s (arg 1)", preview(a[0]))
		}
		return distinctBy(th, "distinct", nil, a[0], 1)
	}).
		doc("the items without duplicates, first occurrence kept").ref(refSeq).pure()
	r.add("distinct-by", 2, 2, func(th *Thread, a []Value) Value { return distinctBy(th, "distinct-by", a[0], a[1], 2) }).
		doc("the items whose keyfn result was not seen before").hof(1)
	r.add("distinct?", 1, -1, func(th *Thread, a []Value) Value {
		var seen valueSet
		for _, v := range a {
			th.tick()
			if !seen.add(v) {
				return false
			}
		}
		return true
	}).doc("true when no two arguments are equal")
	r.add("group-by", 2, 2, biGroupBy).
		doc("a map from keyfn's result to the vector of items that gave it").ref(refSeq).hof(1)
	r.add("frequencies", 1, 1, biFrequencies).
		doc("a map from each distinct item to its number of occurrences").ref(refSeq).pure()
	r.add("partition", 2, 4, func(th *Thread, a []Value) Value { return partitionImpl(th, "partition", a, false) }).
		doc("groups of n items (stepping by step), complete groups only unless a pad is given").ref(refSeq).pure()
	r.add("partition-all", 2, 3, func(th *Thread, a []Value) Value { return partitionImpl(th, "partition-all", a, true) }).
		doc("groups of n items (stepping by step); the last group may be short").ref(refSeq).pure()
	r.add("flatten", 1, 1, func(th *Thread, a []Value) Value {
		var out []Value
		switch a[0].(type) {
		case *Vector, *LazySeq:
			out = flattenInto(th, out, a[0], 0)
		}
		return seqVec(out)
	}).doc("the atoms of nested sequential collections, in order").ref(refSeq).pure()
	r.add("interleave", 0, -1, biInterleave).
		doc("the first item of each collection, then the second of each, ...").ref(refSeq).pure()
	r.add("interpose", 2, 2, func(th *Thread, a []Value) Value {
		if src, ok := a[1].(*LazySeq); ok {
			sep, i, sepNext := a[0], 0, false
			return NewLazySeq(func(th *Thread) (Value, bool) {
				v, ok := src.nth(th, i)
				if !ok {
					return nil, false
				}
				if sepNext {
					sepNext = false
					return sep, true
				}
				i, sepNext = i+1, true
				return v, true
			})
		}
		items := th.Seq(a[1], "interpose", 2)
		if len(items) == 0 {
			return emptyVector
		}
		th.allocSlots(2*len(items) - 1)
		out := make([]Value, 0, 2*len(items)-1)
		for i, it := range items {
			if i > 0 {
				out = append(out, a[0])
			}
			out = append(out, it)
		}
		return &Vector{slots: out}
	}).doc("the items with sep between each two").ref(refSeq).pure()
	r.add("zip", 1, -1, biZip).
		doc("vectors of the items at the same index of each collection")
	r.add("combinations", 2, 2, biCombinations).
		doc("every combination of n items of the collection, in order")
	r.add("conj", 0, -1, biConj).
		doc("adds items to a collection (vectors at the end, sets and maps by key)").ref(refSeq).pure()
	r.add("cons", 2, 2, biCons).
		doc("x followed by the items").ref(refSeq)
	r.add("concat", 0, -1, biConcat).
		doc("the items of the collections one after another").ref(refSeq).pure()
	r.add("into", 0, 2, biInto).
		doc("the items of from added (as conj does) to to").ref(refSeq).pure()
	r.add("vec", 1, 1, func(th *Thread, a []Value) Value {
		if v, ok := a[0].(*Vector); ok {
			return v
		}
		items := th.Seq(a[0], "vec", 1)
		if _, ok := a[0].(*LazySeq); ok {
			items = slices.Clip(items) // the lazy seq may still grow its cache
		}
		return th.MakeVector(items)
	}).doc("the items as a vector").ref(refSeq).pure()
	r.add("vector", 0, -1, func(th *Thread, a []Value) Value {
		return th.MakeVector(append([]Value(nil), a...))
	}).doc("a vector of the arguments").ref(refSeq).pure()
	r.add("walk", 3, 3, func(th *Thread, a []Value) Value {
		inner, outer := a[0], a[1]
		return walkForm(th, a[2], func(v Value) Value { return th.Call1(inner, v) }, func(v Value) Value { return th.Call1(outer, v) })
	}).doc("applies inner to each element of a form and outer to the result")
	r.add("prewalk", 2, 2, func(th *Thread, a []Value) Value {
		return prewalk(th, func(v Value) Value { return th.Call1(a[0], v) }, a[1], 0)
	}).doc("transforms a nested form top down with f")
	r.add("postwalk", 2, 2, func(th *Thread, a []Value) Value {
		return postwalk(th, func(v Value) Value { return th.Call1(a[0], v) }, a[1], 0)
	}).doc("transforms a nested form bottom up with f")
	r.add("walk/keywordize-keys", 1, 1, func(th *Thread, a []Value) Value {
		return postwalk(th, func(v Value) Value {
			return rekeyMap(th, v, func(k Value) Value {
				if s, ok := k.(string); ok {
					return th.Keyword(s)
				}
				return k
			})
		}, a[0], 0)
	}).doc("the form with every string map key, at any depth, made a keyword")
	r.add("walk/stringify-keys", 1, 1, func(th *Thread, a []Value) Value {
		return postwalk(th, func(v Value) Value {
			return rekeyMap(th, v, func(k Value) Value {
				if kw, ok := k.(*Keyword); ok {
					return keywordName(kw)
				}
				return k
			})
		}, a[0], 0)
	}).doc("the form with every keyword map key, at any depth, made its name")
	r.add("walk/prewalk-replace", 2, 2, func(th *Thread, a []Value) Value {
		smap := walkSmap(th, "prewalk-replace", a[0])
		return prewalk(th, func(v Value) Value { return smapLookup(smap, v) }, a[1], 0)
	}).doc("the form with every subform that is a key of smap replaced by its value, top down")
	r.add("walk/postwalk-replace", 2, 2, func(th *Thread, a []Value) Value {
		smap := walkSmap(th, "postwalk-replace", a[0])
		return postwalk(th, func(v Value) Value { return smapLookup(smap, v) }, a[1], 0)
	}).doc("the form with every subform that is a key of smap replaced by its value, bottom up")
	r.add("tree-seq", 3, 3, biTreeSeq).
		doc("the nodes of a tree, depth first, as branch? and children decide")
	r.add("doall", 1, 2, func(th *Thread, a []Value) Value {
		c := a[len(a)-1]
		if s, ok := c.(*LazySeq); ok {
			th.Seq(s, "doall", len(a))
		}
		return c
	}).doc("realises a lazy sequence (its first n items) and returns it")
	r.add("dorun", 1, 2, func(th *Thread, a []Value) Value {
		if s, ok := a[len(a)-1].(*LazySeq); ok {
			th.Seq(s, "dorun", len(a))
		}
		return nil
	}).doc("realises a lazy sequence (its first n items) and returns nil")
	r.add("reductions", 2, 3, biReductions).
		doc("the intermediate values of reduce")
}

// seqVec wraps items (already charged) as a vector.
func seqVec(items []Value) *Vector {
	if len(items) == 0 {
		return emptyVector
	}
	return &Vector{slots: items}
}

// keyOf applies a key argument: a keyword, string or vector path reads a
// field (flex); anything else is called.
func keyOf(th *Thread, key, item Value) Value {
	switch k := key.(type) {
	case *Keyword:
		th.tick()
		return kwGet(item, k)
	case string, *Vector:
		th.tick()
		return getPath(item, key)
	}
	return th.Call1(key, item)
}

// valueSet is a hash set of values with = semantics (1 and 1.0 are the
// same member), used for dedup and grouping. Strings and integral numbers
// (the common grouping keys) use Go maps directly; other values go by
// hashValue and Equal. The zero value is empty.
type valueSet struct {
	strs map[string]int
	ints map[int64]int
	m    map[uint32][]int
	// vals holds the members in insertion order.
	vals []Value
}

// intKey returns the int64 that v equals when v is an integer or an
// integral float in int64 range.
func intKey(v Value) (int64, bool) {
	switch x := v.(type) {
	case int64:
		return x, true
	case float64:
		if x == math.Trunc(x) && x >= -(1<<63) && x < 1<<63 {
			return int64(x), true
		}
	}
	return 0, false
}

// index returns the position of v in vals, or -1.
func (s *valueSet) index(v Value, h uint32) int {
	if str, ok := v.(string); ok {
		if i, ok := s.strs[str]; ok {
			return i
		}
		return -1
	}
	if n, ok := intKey(v); ok {
		if i, ok := s.ints[n]; ok {
			return i
		}
		return -1
	}
	for _, i := range s.m[h] {
		if Equal(s.vals[i], v) {
			return i
		}
	}
	return -1
}

// find returns the position of v, adding it when absent (added=true).
func (s *valueSet) find(v Value) (int, bool) {
	if str, ok := v.(string); ok {
		return findKeyed(s, &s.strs, str, v)
	}
	if n, ok := intKey(v); ok {
		return findKeyed(s, &s.ints, n, v)
	}
	if s.m == nil {
		s.m = make(map[uint32][]int)
	}
	h := hashValue(v)
	if i := s.index(v, h); i >= 0 {
		return i, false
	}
	s.vals = append(s.vals, v)
	s.m[h] = append(s.m[h], len(s.vals)-1)
	return len(s.vals) - 1, true
}

// findKeyed is valueSet.find for v keyed by k in the side map *m.
func findKeyed[K comparable](s *valueSet, m *map[K]int, k K, v Value) (int, bool) {
	if i, ok := (*m)[k]; ok {
		return i, false
	}
	if *m == nil {
		*m = make(map[K]int)
	}
	(*m)[k] = len(s.vals)
	s.vals = append(s.vals, v)
	return len(s.vals) - 1, true
}

// add adds v and reports whether it was new.
func (s *valueSet) add(v Value) bool {
	_, added := s.find(v)
	return added
}

// buildMap builds a map from distinct keys (by =) and their values. Keys
// that differ only as keyword vs string (:a and "a") stay separate entries.
func buildMap(th *Thread, keys, vals []Value) *Map {
	th.allocMap(len(keys))
	if flexClash(keys) {
		m := emptyMap
		for i, k := range keys {
			m = m.assocExact(k, vals[i])
		}
		return m
	}
	if len(keys) <= smallMapMax {
		b := newMapBuilder(len(keys))
		for i, k := range keys {
			b.set(k, vals[i])
		}
		return b.build()
	}
	m := emptyMap.transient()
	for i, k := range keys {
		m = m.Assoc(k, vals[i])
	}
	return endTransient(m)
}

// endTransient ends an in-place build started with m.transient() (the
// owner's transient maps, see Map.edit) so the map can be published.
func endTransient(m *Map) *Map {
	if m.edit != nil && m.edit.store != nil {
		m.cache.Store(&mapCache{store: m.edit.store}) // read in place from now on
	}
	m.edit, m.ownVals = nil, false
	return m
}

// flexClash reports whether keys holds a keyword and a string of the same
// name (which a flex map write would merge).
func flexClash(keys []Value) bool {
	if len(keys) <= 16 {
		for i, k := range keys {
			for _, k2 := range keys[i+1:] {
				if flexMatch(k, k2) {
					return true
				}
			}
		}
		return false
	}
	names := make(map[string]int)
	for _, k := range keys {
		var name string
		var bit int
		switch x := k.(type) {
		case *Keyword:
			name, bit = x.Name, 1
		case string:
			name, bit = x, 2
		default:
			continue
		}
		if names[name] |= bit; names[name] == 3 {
			return true
		}
	}
	return false
}

func biFind(th *Thread, a []Value) Value {
	// Clojure's (find map key) → [key val] entry.
	if m, ok := asMap(a[0]); ok {
		switch a[1].(type) {
		case *Vector, *Set, *Map, hostMap, *LazySeq:
		default:
			k, found := m.lookupKey(a[1])
			if !found {
				return nil
			}
			v, _ := m.Get(a[1])
			return th.MakeVector([]Value{k, v})
		}
	}
	if a[0] == nil {
		return nil
	}
	if v, ok := a[0].(*Vector); ok {
		switch k := a[1].(type) {
		case *Vector, *Set, *Map, hostMap, *LazySeq:
		case int64:
			// Clojure's (find vector index) → [index item] entry
			if k < 0 || k >= int64(v.Len()) {
				return nil
			}
			return th.MakeVector([]Value{k, v.At(int(k))})
		default:
			return nil // a vector has only integer keys
		}
	}
	pred := a[0]
	var found Value
	th.Each(a[1], "find", 2, func(v Value) bool {
		if Truthy(th.Call1(pred, v)) {
			found = v
			return false
		}
		return true
	})
	return found
}

func biMapcat(th *Thread, a []Value) Value {
	pos := th.pos
	mapped := biMap(th, a)
	th.pos = pos
	if s, ok := mapped.(*LazySeq); ok {
		var cur []Value
		i, j := 0, 0
		return NewLazySeq(func(th *Thread) (Value, bool) {
			for j >= len(cur) {
				v, ok := s.nth(th, i)
				if !ok {
					return nil, false
				}
				i++
				cur, j = th.Seq(v, "mapcat", 1), 0
			}
			j++
			return cur[j-1], true
		})
	}
	return concatItems(th, "mapcat", mapped.(*Vector).Items(), false)
}

// concatItems concatenates the items of colls (nil counts as empty);
// args says whether colls are the builtin's own args (for arg numbers in
// type errors).
func concatItems(th *Thread, name string, colls []Value, args bool) Value {
	if len(colls) == 1 && args {
		return th.MakeVector(th.Seq(colls[0], name, 1))
	}
	// vectors are charged and sized up front: a concat too large to hold
	// stops before it is built, and the output is allocated once
	n := 0
	for _, c := range colls {
		if v, ok := c.(*Vector); ok {
			n += v.Len()
		}
	}
	th.allocSlots(n)
	out := make([]Value, 0, n)
	for i, c := range colls {
		if v, ok := c.(*Vector); ok {
			out = append(out, v.Items()...)
			continue
		}
		argN := 0
		if args {
			argN = i + 1
		}
		items := th.Seq(c, name, argN)
		th.allocSlots(len(items))
		out = append(out, items...)
	}
	return seqVec(out)
}

func biMapIndexed(th *Thread, a []Value) Value {
	f := a[0]
	if s, ok := a[1].(*LazySeq); ok {
		return lazyEach(s, func(th *Thread, i int, x Value) (Value, bool) { return th.Call2(f, Int(int64(i)), x), true })
	}
	items := th.Seq(a[1], "map-indexed", 2)
	th.allocSlots(len(items))
	out := make([]Value, len(items))
	for i, it := range items {
		out[i] = th.Call2(f, Int(int64(i)), it)
	}
	return seqVec(out)
}

func biSort(th *Thread, a []Value) Value {
	var comp Value
	if len(a) == 2 {
		comp = a[0]
	}
	items := th.Seq(a[len(a)-1], "sort", len(a))
	th.allocSlots(3 * len(items))
	ks := make([]keyed, len(items))
	for i, it := range items {
		ks[i] = keyed{it, it}
	}
	return sortKeyed(th, "sort", ks, comp)
}

// sortKeyed stably sorts ks by key with comp and returns the items.
func sortKeyed(th *Thread, name string, ks []keyed, comp Value) Value {
	cmp := comparator(th, name, comp, 1)
	if !sortFastKeys(th, ks, comp) {
		slices.SortStableFunc(ks, func(x, y keyed) int { return cmp(x.k, y.k) })
	}
	out := make([]Value, len(ks))
	for i, e := range ks {
		out[i] = e.v
	}
	return seqVec(out)
}

type keyed struct{ k, v Value }

func biSortBy(th *Thread, a []Value) Value {
	keyFn := a[0]
	var comp Value
	if len(a) == 3 {
		comp = a[1]
	}
	items := th.seqItems(a[len(a)-1], "sort-by", len(a))
	th.allocSlots(3 * items.len())
	comparator(th, "sort-by", comp, 2) // check comp before key fns run
	pos := th.pos
	ks := make([]keyed, items.len())
	for i := range ks {
		it := items.at(i)
		ks[i] = keyed{keyOf(th, keyFn, it), it}
	}
	th.pos = pos // key fns move th.pos; errors point at this call
	return sortKeyed(th, "sort-by", ks, comp)
}

// naturalOrder reports whether comp sorts by compare's order, and whether
// descending: nil, :asc, :desc, compare, < <= > >=.
func naturalOrder(comp Value) (ok, desc bool) {
	switch c := comp.(type) {
	case nil:
		return true, false
	case *Keyword:
		switch c.Name {
		case "asc":
			return true, false
		case "desc":
			return true, true
		}
	case *Builtin:
		switch c.Name {
		case "<", "<=", "compare":
			return true, false
		case ">", ">=":
			return true, true
		}
	}
	return false, false
}

// sortFastKeys sorts ks without calling comp when every key is a number,
// or (for a comparator other than < > <= >=) every key a string, and comp
// is a natural order; it reports whether it did.
func sortFastKeys(th *Thread, ks []keyed, comp Value) bool {
	ok, desc := naturalOrder(comp)
	if !ok || len(ks) < 2 {
		return false
	}
	if sortNumericKeys(th, ks, desc) {
		return true
	}
	if b, isB := comp.(*Builtin); isB && b.Name != "compare" {
		return false // < and > reject strings: let them raise
	}
	for _, e := range ks {
		s, ok := e.k.(string)
		if !ok {
			return false
		}
		// UTF-8 byte order is UTF-16 (Java) order without 4-byte chars
		for i := 0; i < len(s); i++ {
			if s[i] >= 0xF0 {
				return false
			}
		}
		th.tick()
	}
	cmpf := func(x, y keyed) int { return strings.Compare(x.k.(string), y.k.(string)) }
	if desc {
		slices.SortStableFunc(ks, func(x, y keyed) int { return cmpf(y, x) })
	} else {
		slices.SortStableFunc(ks, cmpf)
	}
	return true
}

// sortNumericKeys sorts ks by number when every key is a non-NaN number;
// it reports whether it did.
func sortNumericKeys(th *Thread, ks []keyed, desc bool) bool {
	for _, e := range ks {
		switch x := e.k.(type) {
		case int64:
		case float64:
			if x != x {
				return false
			}
		default:
			return false
		}
	}
	type fk struct {
		f     float64
		i     int64
		isInt bool
		v     Value
	}
	fs := make([]fk, len(ks))
	for i, e := range ks {
		th.tick()
		switch x := e.k.(type) {
		case int64:
			fs[i] = fk{float64(x), x, true, e.v}
		case float64:
			fs[i] = fk{x, 0, false, e.v}
		}
	}
	cmpf := func(x, y fk) int {
		switch {
		case x.f < y.f:
			return -1
		case x.f > y.f:
			return 1
		case !x.isInt || !y.isInt:
			return 0
		case x.i < y.i:
			return -1
		case x.i > y.i:
			return 1
		}
		return 0
	}
	if desc {
		slices.SortStableFunc(fs, func(x, y fk) int { return cmpf(y, x) })
	} else {
		slices.SortStableFunc(fs, cmpf)
	}
	for i := range fs {
		ks[i].v = fs[i].v
	}
	return true
}

func reverseOf(th *Thread, name string, coll Value) Value {
	items := th.Seq(coll, name, 1)
	th.allocSlots(len(items))
	out := make([]Value, len(items))
	for i, it := range items {
		th.tick()
		out[len(items)-1-i] = it
	}
	return seqVec(out)
}

func distinctBy(th *Thread, name string, key, coll Value, argN int) Value {
	if src, ok := coll.(*LazySeq); ok {
		var seen valueSet
		return lazyEach(src, func(th *Thread, _ int, it Value) (Value, bool) {
			k := it
			if key != nil {
				k = keyOf(th, key, it)
			}
			return it, seen.add(k)
		})
	}
	items := th.seqItems(coll, name, argN)
	d := distinctSink{out: make([]Value, 0, min(items.len(), 64))}
	for i := range items.len() {
		it := items.at(i)
		k := it
		if key != nil {
			k = keyOf(th, key, it)
		} else {
			th.tick()
		}
		d.add(k, it)
	}
	return d.result(th)
}

// distinctSink collects the items whose keys were not seen before.
type distinctSink struct {
	seen valueSet
	out  []Value
}

func (d *distinctSink) add(k, it Value) {
	if d.seen.add(k) {
		d.out = append(d.out, it)
	}
}

func (d *distinctSink) result(th *Thread) Value {
	th.allocSlots(len(d.out))
	return seqVec(d.out)
}

func biGroupBy(th *Thread, a []Value) Value {
	items := th.seqItems(a[1], "group-by", 2)
	g := groupSink{group: make([]int32, 0, items.len())}
	for i := range items.len() {
		g.add(keyOf(th, a[0], items.at(i)))
	}
	return g.result(th, items)
}

// groupSink groups items by key for group-by: it records each item's
// group as the items come, then lays the groups out in one slab, group
// after group, each in the order its items came (no vector grown by
// appending per group).
type groupSink struct {
	seen  valueSet
	group []int32 // the group of each item added, in order
	sizes []int   // the number of items of each group
}

// add records the next item's key.
func (g *groupSink) add(k Value) {
	i, added := g.seen.find(k)
	if added {
		g.sizes = append(g.sizes, 0)
	}
	g.sizes[i]++
	g.group = append(g.group, int32(i))
}

// result returns the map from each key to the vector of its items: items
// are the items added, in order.
func (g *groupSink) result(th *Thread, items itemsOf) Value {
	th.allocSlots(items.len())
	slab := make([]Value, items.len())
	next := make([]int, len(g.sizes)) // where each group's next item goes
	vals := make([]Value, len(g.sizes))
	off := 0
	for i, n := range g.sizes {
		next[i] = off
		vals[i] = &Vector{slots: slab[off : off+n : off+n]}
		off += n
	}
	for j := range items.len() {
		i := g.group[j]
		slab[next[i]] = items.at(j)
		next[i]++
	}
	return buildMap(th, g.seen.vals, vals)
}

func biFrequencies(th *Thread, a []Value) Value {
	items := th.seqItems(a[0], "frequencies", 1)
	var f freqSink
	for i := range items.len() {
		th.tick()
		f.add(items.at(i))
	}
	return f.result(th)
}

// freqSink counts items for frequencies.
type freqSink struct {
	seen   valueSet
	counts []int64
}

func (f *freqSink) add(it Value) {
	i, added := f.seen.find(it)
	if added {
		f.counts = append(f.counts, 0)
	}
	f.counts[i]++
}

func (f *freqSink) result(th *Thread) Value {
	vals := make([]Value, len(f.counts))
	for i, c := range f.counts {
		vals[i] = Int(c)
	}
	return buildMap(th, f.seen.vals, vals)
}

// partitionImpl implements (partition n [step [pad]] coll) and
// (partition-all n [step] coll). Chunks share the input's backing array.
func partitionImpl(th *Thread, name string, a []Value, all bool) Value {
	n := th.Count(name, a[0], 1)
	step := n
	var pad []Value
	hasPad := false
	coll := a[len(a)-1]
	if len(a) >= 3 {
		step = th.Count(name, a[1], 2)
	}
	if len(a) == 4 {
		pad = th.Seq(a[2], name, 3)
		hasPad = true
	}
	if x, ok := a[0].(float64); ok && !all && x != math.Trunc(x) && n > 0 {
		// Clojure keeps a chunk of (take n ...) only when its count equals
		// n, never for a fractional n: no chunk, or one padded chunk
		items := th.Seq(coll, name, len(a))
		if !hasPad || len(items) == 0 {
			return emptyVector
		}
		chunk := append(slices.Clone(items[:min(len(items), int(n))]), pad...)
		chunk = chunk[:min(len(chunk), int(n))]
		th.allocSlots(len(chunk))
		return seqVec([]Value{&Vector{slots: chunk}})
	}
	if n < 0 && !all {
		// as Clojure: no chunk has a negative count; with a pad, a
		// non-empty input gives one empty chunk
		if !hasPad || len(th.Seq(coll, name, len(a))) == 0 {
			return emptyVector
		}
		return seqVec([]Value{emptyVector})
	}
	if n <= 0 {
		th.Raise(KindValue, "%s: size must be positive, got %d", name, n)
	}
	if step <= 0 {
		th.Raise(KindValue, "%s: step must be positive, got %d", name, step)
	}
	n, step = min(n, math.MaxInt32), min(step, math.MaxInt32)
	if src, ok := coll.(*LazySeq); ok {
		return lazyPartition(src, int(n), int(step), pad, hasPad, all)
	}
	items := th.Seq(coll, name, len(a))
	var out []Value
	for i := 0; i < len(items); i += int(step) {
		th.tick()
		end := i + int(n)
		if end > len(items) {
			if all {
				out = append(out, view(items, i, len(items)))
				continue
			}
			switch {
			case hasPad:
				chunk := append(slices.Clone(items[i:]), pad[:min(len(pad), end-len(items))]...)
				th.allocSlots(len(chunk))
				out = append(out, &Vector{slots: chunk})
			}
			break
		}
		out = append(out, view(items, i, end))
	}
	th.allocSlots(2 * len(out))
	return seqVec(out)
}

// lazyPartition is partition/partition-all over a lazy seq: each chunk is
// realised when asked for, so (take 2 (partition 2 (range))) works.
func lazyPartition(src *LazySeq, n, step int, pad []Value, hasPad, all bool) *LazySeq {
	start := 0
	done := false
	return NewLazySeq(func(th *Thread) (Value, bool) {
		if done {
			return nil, false
		}
		chunk := make([]Value, 0, min(n, 1024))
		for j := 0; j < n; j++ {
			v, ok := src.nth(th, start+j)
			if !ok {
				break
			}
			chunk = append(chunk, v)
		}
		start += step
		th.allocSlots(len(chunk) + 1)
		switch {
		case len(chunk) == n:
			return &Vector{slots: chunk}, true
		case len(chunk) == 0:
			done = true
			return nil, false
		case all:
			return &Vector{slots: chunk}, true
		case hasPad:
			done = true
			chunk = append(chunk, pad[:min(len(pad), n-len(chunk))]...)
			return &Vector{slots: chunk}, true
		}
		done = true
		return nil, false
	})
}

// flattenInto appends the leaves of nested vectors and lazy seqs.
func flattenInto(th *Thread, out []Value, v Value, depth int) []Value {
	if depth > th.maxDepth {
		th.depthLimit("flatten")
	}
	for _, it := range th.Seq(v, "flatten", 1) {
		th.tick() // per node: shared subtrees can make huge trees cheaply
		switch it.(type) {
		case *Vector, *LazySeq:
			out = flattenInto(th, out, it, depth+1)
		default:
			th.allocSlots(1) // charged as it grows, not at the end
			out = append(out, it)
		}
	}
	return out
}

// shortestSeqs returns the items of colls cut to the shortest one; lazy
// seqs are realised only that far when some coll is finite, so
// (interleave (range) [:a :b]) works. colls[0] is argument argN.
func shortestSeqs(th *Thread, name string, colls []Value, argN int) ([][]Value, int) {
	seqs := make([][]Value, len(colls))
	n := -1
	for i, c := range colls {
		if _, lazy := c.(*LazySeq); lazy {
			continue
		}
		seqs[i] = th.Seq(c, name, argN+i)
		if n < 0 || len(seqs[i]) < n {
			n = len(seqs[i])
		}
	}
	for i, c := range colls {
		s, lazy := c.(*LazySeq)
		if !lazy {
			continue
		}
		if n < 0 {
			seqs[i] = th.Seq(s, name, argN+i)
			n = len(seqs[i])
			continue
		}
		var items []Value
		for j := 0; j < n; j++ {
			v, ok := s.nth(th, j)
			if !ok {
				break
			}
			items = append(items, v)
		}
		seqs[i] = items
		n = min(n, len(items))
	}
	return seqs, max(n, 0)
}

func biInterleave(th *Thread, a []Value) Value {
	if len(a) == 0 {
		return emptyVector
	}
	seqs, n := shortestSeqs(th, "interleave", a, 1)
	th.allocSlots(n * len(a))
	out := make([]Value, 0, n*len(a))
	for i := 0; i < n; i++ {
		th.tick()
		for _, s := range seqs {
			out = append(out, s[i])
		}
	}
	return seqVec(out)
}

func biZip(th *Thread, a []Value) Value {
	seqs, n := shortestSeqs(th, "zip", a, 1)
	th.allocSlots(n * (len(a) + 1))
	out := make([]Value, n)
	for i := range out {
		th.tick()
		row := make([]Value, len(a))
		for j, s := range seqs {
			row[j] = s[i]
		}
		out[i] = &Vector{slots: row}
	}
	return seqVec(out)
}

func biCombinations(th *Thread, a []Value) Value {
	items := th.Seq(a[0], "combinations", 1)
	k := th.Int("combinations", a[1], 2)
	n := int64(len(items))
	if k < 0 || k > n {
		return emptyVector
	}
	// C(n, k), capped so the budget check below cannot overflow.
	total := int64(1)
	for i := int64(0); i < k; i++ {
		total = total * (n - i) / (i + 1)
		if total > 1<<40 {
			th.memLimit()
		}
	}
	th.allocSlots(int(total * (k + 1)))
	out := make([]Value, 0, total)
	idx := make([]int, k)
	for i := range idx {
		idx[i] = i
	}
	for {
		th.tick()
		row := make([]Value, k)
		for i, j := range idx {
			row[i] = items[j]
		}
		out = append(out, seqVec(row))
		// advance the rightmost index that can move
		i := int(k) - 1
		for i >= 0 && idx[i] == int(n)-int(k)+i {
			i--
		}
		if i < 0 {
			break
		}
		idx[i]++
		for j := i + 1; j < int(k); j++ {
			idx[j] = idx[j-1] + 1
		}
	}
	return seqVec(out)
}

// conjMap adds x to m: a [k v] entry, a map (merged) or nil.
func conjMap(th *Thread, name string, m *Map, x Value, argN int) *Map {
	if m.ord {
		return ordAdd(th, m, ordEntries(th, name, []Value{x}, argN))
	}
	switch e := mapValue(x).(type) {
	case nil:
		return m
	case *Vector:
		if e.Len() == 2 {
			return assocCharged(th, m, e.At(0), e.At(1))
		}
	case *Map:
		if m.Len() == 0 {
			return e
		}
		e.Each(func(k, v Value) bool {
			th.tick()
			m = assocCharged(th, m, k, v)
			return true
		})
		return m
	}
	th.TypeError(name, "a [key value] entry or a map", x, argN)
	return nil
}

// mapFromEntries adds [k v] entries and maps (nil skipped) to a transient
// copy of to, later entries winning (flex keys, as conj).
func mapFromEntries(th *Thread, name string, to *Map, from []Value, argN int) *Map {
	if to.ord {
		return ordAdd(th, to, ordEntries(th, name, from, argN))
	}
	m := to.transient()
	defer endTransient(m) // also on a type error: m may be to's twin
	for _, x := range from {
		th.tick()
		n := m.Len()
		switch e := mapValue(x).(type) {
		case nil:
			continue
		case *Vector:
			if e.Len() == 2 {
				m = m.Assoc(e.At(0), e.At(1))
				if m.Len() > n {
					th.allocEntries(m, 1)
				}
				continue
			}
		case *Map:
			e.Each(func(k, v Value) bool {
				m = m.Assoc(k, v)
				return true
			})
			th.allocEntries(m, m.Len()-n)
			continue
		}
		th.TypeError(name, "a [key value] entry or a map", x, argN)
	}
	return endTransient(m)
}

// assocCharged is m.Assoc, charging the budget when the map grows.
func assocCharged(th *Thread, m *Map, k, v Value) *Map {
	if m.ord {
		return ordAssoc(th, m, k, v)
	}
	n := m.Len()
	m = m.Assoc(k, v)
	if m.Len() > n {
		th.allocEntries(m, 1)
	}
	return m
}

func biConj(th *Thread, a []Value) Value {
	if len(a) == 0 {
		return emptyVector
	}
	xs := a[1:]
	switch c := mapValue(a[0]).(type) {
	case nil:
		return th.MakeVector(append([]Value(nil), xs...))
	case *Vector:
		th.AllocBytes(len(xs) * conjSlotBytes)
		for _, x := range xs {
			c = c.Conj(x)
		}
		return c
	case *Set:
		return setAddAll(th, c, xs)
	case *Map:
		if c.ord {
			return ordAdd(th, c, ordEntries(th, "conj", xs, 2))
		}
		for i, x := range xs {
			c = conjMap(th, "conj", c, x, i+2)
		}
		return c
	case *LazySeq:
		// a seq grows at the front, as in Clojure
		var v Value = c
		for _, x := range xs {
			v = consLazy(x, v.(*LazySeq))
		}
		return v
	}
	th.TypeError("conj", "a collection", a[0], 1)
	return nil
}

// consLazy returns a lazy seq of x followed by s.
func consLazy(x Value, s *LazySeq) *LazySeq {
	i := -1
	return NewLazySeq(func(th *Thread) (Value, bool) {
		if i < 0 {
			i = 0
			return x, true
		}
		v, ok := s.nth(th, i)
		if ok {
			i++
		}
		return v, ok
	})
}

func biCons(th *Thread, a []Value) Value {
	if s, ok := a[1].(*LazySeq); ok {
		return consLazy(a[0], s)
	}
	items := th.Seq(a[1], "cons", 2)
	th.allocSlots(len(items) + 1)
	out := make([]Value, len(items)+1)
	out[0] = a[0]
	copy(out[1:], items)
	return &Vector{slots: out}
}

func biConcat(th *Thread, a []Value) Value {
	for _, c := range a {
		if _, ok := c.(*LazySeq); ok {
			colls := append([]Value(nil), a...)
			ci, i := 0, 0
			var cur []Value
			var curLazy *LazySeq
			started := false
			return NewLazySeq(func(th *Thread) (Value, bool) {
				for ci < len(colls) {
					if !started {
						started, i = true, 0
						curLazy, _ = colls[ci].(*LazySeq)
						if curLazy == nil {
							cur = th.Seq(colls[ci], "concat", ci+1)
						}
					}
					if curLazy != nil {
						if v, ok := curLazy.nth(th, i); ok {
							i++
							return v, true
						}
					} else if i < len(cur) {
						i++
						return cur[i-1], true
					}
					ci, started = ci+1, false
				}
				return nil, false
			})
		}
	}
	if len(a) == 1 {
		if v, ok := a[0].(*Vector); ok {
			return v
		}
	}
	return concatItems(th, "concat", a, true)
}

func biInto(th *Thread, a []Value) Value {
	switch len(a) {
	case 0:
		return emptyVector
	case 1:
		return a[0]
	}
	src := th.seqItems(a[1], "into", 2)
	switch to := mapValue(a[0]).(type) {
	case nil, *Vector:
		var cur []Value
		if v, ok := to.(*Vector); ok {
			cur = v.Items()
		}
		if src.len() == 0 {
			if to == nil {
				return emptyVector
			}
			return to
		}
		th.allocSlots(len(cur) + src.len())
		out := make([]Value, len(cur), len(cur)+src.len())
		copy(out, cur)
		for i := range src.len() {
			out = append(out, src.at(i))
		}
		return &Vector{slots: out}
	}
	if to, ok := a[0].(*Set); ok && to.Len() == 0 && !to.m.ord {
		return setFromItems(th, src)
	}
	from := src.from(0)
	switch to := mapValue(a[0]).(type) {
	case *Set:
		return setAddAll(th, to, from)
	case *Map:
		if len(from) == 0 {
			return to
		}
		return mapFromEntries(th, "into", to, from, 2)
	case *LazySeq:
		return biConj(th, append([]Value{to}, from...))
	}
	th.TypeError("into", "a vector, set or map", a[0], 1)
	return nil
}

// walkForm is clojure.walk/walk: inner on each element of a collection
// (map entries as [k v]), then outer on the rebuilt collection.
func walkForm(th *Thread, form Value, inner, outer func(Value) Value) Value {
	switch c := mapValue(form).(type) {
	case *Vector:
		th.allocSlots(c.Len())
		out := make([]Value, c.Len())
		for i, it := range c.Items() {
			out[i] = inner(it)
		}
		return outer(seqVec(out))
	case *LazySeq:
		items := th.Seq(c, "walk", 0)
		th.allocSlots(len(items))
		out := make([]Value, len(items))
		for i, it := range items {
			out[i] = inner(it)
		}
		return outer(seqVec(out))
	case *Map:
		m := emptyMap
		for _, e := range c.entries() {
			m = conjMap(th, "walk", m, inner(&Vector{slots: []Value{e.key, e.val}}), 0)
		}
		return outer(m)
	case *Set:
		s := emptySet
		for _, it := range c.Items() {
			s = s.Conj(inner(it))
		}
		th.allocSlots(3 * s.Len())
		return outer(s)
	}
	return outer(form)
}

func prewalk(th *Thread, f func(Value) Value, form Value, depth int) Value {
	if depth > th.maxDepth {
		th.depthLimit("prewalk")
	}
	return walkForm(th, f(form), func(v Value) Value { return prewalk(th, f, v, depth+1) }, func(v Value) Value { return v })
}

func postwalk(th *Thread, f func(Value) Value, form Value, depth int) Value {
	if depth > th.maxDepth {
		th.depthLimit("postwalk")
	}
	return walkForm(th, form, func(v Value) Value { return postwalk(th, f, v, depth+1) }, f)
}

// rekeyMap returns v with each key of a map replaced by key(k); any other
// value as it is (keywordize-keys and stringify-keys walk with it).
func rekeyMap(th *Thread, v Value, key func(Value) Value) Value {
	m, ok := asMap(v)
	if !ok {
		return v
	}
	out := emptyMap
	m.Each(func(k, val Value) bool {
		th.tick()
		out = assocCharged(th, out, key(k), val)
		return true
	})
	return out
}

// walkSmap is the replacement map of prewalk-replace and postwalk-replace.
func walkSmap(th *Thread, name string, v Value) *Map {
	if v == nil {
		return emptyMap
	}
	m, ok := asMap(v)
	if !ok {
		th.TypeError(name, "a map of replacements", v, 1)
	}
	return m
}

// smapLookup is v's replacement in smap, or v.
func smapLookup(smap *Map, v Value) Value {
	if r, found := smap.Get(v); found {
		return r
	}
	return v
}

// biTreeSeq is (tree-seq branch? children root): the nodes in depth-first
// pre-order, iteratively (no Go recursion on deep trees). A node that is
// its own child is an error; any other endless tree ends with the memory
// limit, as every node is kept. A character is a
// one-character string here, so the children of a string that are its
// characters are leaves, as Clojure's characters are: (tree-seq string?
// seq "ab") is ["ab" "a" "b"], where branch? on "a" would otherwise see a
// string whose only child is itself, forever.
func biTreeSeq(th *Thread, a []Value) Value {
	branch, children := a[0], a[1]
	pos := th.pos
	var out []Value
	type node struct {
		v    Value
		leaf bool
	}
	stack := []node{{v: a[2]}}
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		th.allocSlots(1)
		out = append(out, n.v)
		if n.leaf || !Truthy(th.Call1(branch, n.v)) {
			continue
		}
		kv := th.Call1(children, n.v)
		th.pos = pos
		kids := th.Seq(kv, "tree-seq", 2)
		chars := areCharsOf(kids, n.v)
		for i := len(kids) - 1; i >= 0; i-- {
			if !chars && kids[i] == n.v {
				// the node is its own child: the tree never ends
				th.Raise(KindValue, "tree-seq: the children of %s include itself, so the tree never ends", preview(n.v))
			}
			stack = append(stack, node{v: kids[i], leaf: chars})
		}
	}
	return seqVec(out)
}

// areCharsOf reports whether kids are the characters of the string s, as
// (seq s) gives them.
func areCharsOf(kids []Value, s Value) bool {
	str, ok := s.(string)
	if !ok || len(kids) != utf8.RuneCountInString(str) {
		return false
	}
	i := 0
	for _, r := range str {
		if k, ok := kids[i].(string); !ok || k != string(r) {
			return false
		}
		i++
	}
	return true
}

func biReductions(th *Thread, a []Value) Value {
	f := a[0]
	if src, ok := a[len(a)-1].(*LazySeq); ok {
		var acc Value
		i, started, stop := 0, false, false
		if len(a) == 3 {
			acc = a[1]
		}
		return NewLazySeq(func(th *Thread) (Value, bool) {
			if stop {
				return nil, false
			}
			if !started && len(a) == 3 {
				started = true
				return acc, true
			}
			v, ok := src.nth(th, i)
			if !ok {
				if !started { // (reductions f <empty>) is [(f)]
					stop = true
					return th.Call(f), true
				}
				return nil, false
			}
			i++
			if !started {
				started, acc = true, v
				return acc, true
			}
			acc = th.Call2(f, acc, v)
			if r, ok := acc.(*Reduced); ok {
				stop = true
				return r.Val, true
			}
			return acc, true
		})
	}
	var acc Value
	started := false
	coll := a[len(a)-1]
	var out []Value
	if len(a) == 3 {
		acc, started = a[1], true
		out = append(out, acc)
	}
	th.Each(coll, "reductions", len(a), func(v Value) bool {
		if !started {
			acc, started = v, true
			out = append(out, acc)
			return true
		}
		acc = th.Call2(f, acc, v)
		if r, ok := acc.(*Reduced); ok {
			out = append(out, r.Val)
			return false
		}
		out = append(out, acc)
		return true
	})
	if !started {
		// (reductions f []) is [(f)]
		out = append(out, th.Call(f))
	}
	return th.MakeVector(out)
}
