package builtins

import (
	"math"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/ptcfleet/ptc/pkg/lisp/internal/core"
)

// registerSeq registers the sequence builtins: searching, sorting,
// grouping, partitioning, building and walking collections.
func registerSeq(r *registry) {
	r.Add("find", 2, 2, biFind).
		doc("the [key value] entry of a key in a map, or nil").ref(RefSeq)
	r.Add("mapcat", 2, -1, biMapcat).
		doc("map, then concatenate the results").ref(RefSeq).hof(1)
	r.Add("map-indexed", 2, 2, biMapIndexed).
		doc("f applied to each index and item").ref(RefSeq).hof(1)
	r.Add("pluck", 2, 2, func(th *core.Thread, a []core.Value) core.Value {
		items := th.SeqItems(a[1], "pluck", 2)
		th.AllocSlots(items.Len())
		out := make([]core.Value, items.Len())
		for i := range out {
			th.Tick()
			out[i] = core.GetPath(items.At(i), a[0])
		}
		return seqVec(out)
	}).doc("the value at a key (or key path) of each item").ref(RefSeq).usage("(pluck k coll)")
	r.Add("sort", 1, 2, biSort).
		doc("the items in ascending order, or by a comparator").ref(RefSeq).hof(-1)
	r.Add("sort-by", 2, 3, biSortBy).
		doc("the items ordered by keyfn's result, optionally with a comparator").ref(RefSeq).hof(1)
	r.Add("reverse", 1, 1, func(th *core.Thread, a []core.Value) core.Value { return reverseOf(th, "reverse", a[0]) }).
		doc("the items in reverse order").ref(RefSeq).pure()
	r.Add("rseq", 1, 1, func(th *core.Thread, a []core.Value) core.Value {
		switch a[0].(type) {
		case nil, *core.Vector, *core.Set, *core.Map, core.HostMap: // every map and set is sorted
		default:
			th.TypeError("rseq", "a vector or a sorted collection", a[0], 1)
		}
		return seqOrNil(th, reverseOf(th, "rseq", a[0]))
	}).doc("the items of a vector or sorted collection in reverse order, or nil when empty")
	r.Add("distinct", 1, 1, func(th *core.Thread, a []core.Value) core.Value {
		switch a[0].(type) {
		case *core.Map, core.HostMap, *core.Set:
			// as Clojure, whose distinct reads its argument positionally
			th.RaiseHint(core.KindType, "its items are distinct already; take (vec (keys m)) or (vec s)",
				"distinct: expected a sequence, got %s (arg 1)", core.ErrorPreview(a[0]))
		}
		return distinctBy(th, "distinct", nil, a[0], 1)
	}).
		doc("the items without duplicates, first occurrence kept").ref(RefSeq).pure()
	r.Add("distinct-by", 2, 2, func(th *core.Thread, a []core.Value) core.Value { return distinctBy(th, "distinct-by", a[0], a[1], 2) }).
		doc("the items whose keyfn result was not seen before").hof(1)
	r.Add("distinct?", 1, -1, func(th *core.Thread, a []core.Value) core.Value {
		var seen ValueSet
		for _, v := range a {
			th.Tick()
			if !seen.Add(v) {
				return false
			}
		}
		return true
	}).doc("true when no two arguments are equal")
	r.Add("group-by", 2, 2, biGroupBy).
		doc("a map from keyfn's result to the vector of items that gave it").ref(RefSeq).hof(1)
	r.Add("frequencies", 1, 1, biFrequencies).
		doc("a map from each distinct item to its number of occurrences").ref(RefSeq).pure()
	r.Add("partition", 2, 4, func(th *core.Thread, a []core.Value) core.Value { return partitionImpl(th, "partition", a, false) }).
		doc("groups of n items (stepping by step), complete groups only unless a pad is given").ref(RefSeq).pure()
	r.Add("partition-all", 2, 3, func(th *core.Thread, a []core.Value) core.Value { return partitionImpl(th, "partition-all", a, true) }).
		doc("groups of n items (stepping by step); the last group may be short").ref(RefSeq).pure()
	r.Add("flatten", 1, 1, func(th *core.Thread, a []core.Value) core.Value {
		var out []core.Value
		switch a[0].(type) {
		case *core.Vector, *core.LazySeq:
			out = flattenInto(th, out, a[0], 0)
		}
		return seqVec(out)
	}).doc("the atoms of nested sequential collections, in order").ref(RefSeq).pure()
	r.Add("interleave", 0, -1, biInterleave).
		doc("the first item of each collection, then the second of each, ...").ref(RefSeq).pure()
	r.Add("interpose", 2, 2, func(th *core.Thread, a []core.Value) core.Value {
		if src, ok := a[1].(*core.LazySeq); ok {
			sep, i, sepNext := a[0], 0, false
			return core.NewLazySeq(func(th *core.Thread) (core.Value, bool) {
				v, ok := src.Nth(th, i)
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
			return core.EmptyVector
		}
		th.AllocSlots(2*len(items) - 1)
		out := make([]core.Value, 0, 2*len(items)-1)
		for i, it := range items {
			if i > 0 {
				out = append(out, a[0])
			}
			out = append(out, it)
		}
		return &core.Vector{Slots: out}
	}).doc("the items with sep between each two").ref(RefSeq).pure()
	r.Add("zip", 1, -1, biZip).
		doc("vectors of the items at the same index of each collection")
	r.Add("combinations", 2, 2, biCombinations).
		doc("every combination of n items of the collection, in order")
	r.Add("conj", 0, -1, biConj).
		doc("adds items to a collection (vectors at the end, sets and maps by key)").ref(RefSeq).pure()
	r.Add("cons", 2, 2, biCons).
		doc("x followed by the items").ref(RefSeq)
	r.Add("list*", 1, -1, biListStar).
		doc("the leading arguments followed by the items of the last; nil when there are none")
	r.Add("run!", 2, 2, func(th *core.Thread, a []core.Value) core.Value {
		th.Each(a[1], "run!", 2, func(v core.Value) bool {
			th.Call1(a[0], v)
			return true
		})
		return nil
	}).doc("calls f on each item for its effects (a tool call, println); nil")
	r.Add("concat", 0, -1, biConcat).
		doc("the items of the collections one after another").ref(RefSeq).pure()
	r.Add("into", 0, 2, biInto).
		doc("the items of from added (as conj does) to to").ref(RefSeq).pure()
	r.Add("vec", 1, 1, func(th *core.Thread, a []core.Value) core.Value {
		if v, ok := a[0].(*core.Vector); ok {
			return v
		}
		items := th.Seq(a[0], "vec", 1)
		if _, ok := a[0].(*core.LazySeq); ok {
			items = slices.Clip(items) // the lazy seq may still grow its cache
		}
		return th.MakeVector(items)
	}).doc("the items as a vector").ref(RefSeq).pure()
	r.Add("vector", 0, -1, func(th *core.Thread, a []core.Value) core.Value {
		return th.MakeVector(append([]core.Value(nil), a...))
	}).doc("a vector of the arguments").ref(RefSeq).pure()
	r.Add("walk", 3, 3, func(th *core.Thread, a []core.Value) core.Value {
		inner, outer := a[0], a[1]
		return walkForm(th, a[2], func(v core.Value) core.Value { return th.Call1(inner, v) }, func(v core.Value) core.Value { return th.Call1(outer, v) })
	}).doc("applies inner to each element of a form and outer to the result")
	r.Add("prewalk", 2, 2, func(th *core.Thread, a []core.Value) core.Value {
		return prewalk(th, func(v core.Value) core.Value { return th.Call1(a[0], v) }, a[1], 0)
	}).doc("transforms a nested form top down with f")
	r.Add("postwalk", 2, 2, func(th *core.Thread, a []core.Value) core.Value {
		return postwalk(th, func(v core.Value) core.Value { return th.Call1(a[0], v) }, a[1], 0)
	}).doc("transforms a nested form bottom up with f")
	r.Add("walk/keywordize-keys", 1, 1, func(th *core.Thread, a []core.Value) core.Value {
		return postwalk(th, func(v core.Value) core.Value {
			return rekeyMap(th, v, func(k core.Value) core.Value {
				if s, ok := k.(string); ok {
					return th.Keyword(s)
				}
				return k
			})
		}, a[0], 0)
	}).doc("the form with every string map key, at any depth, made a keyword")
	r.Add("walk/stringify-keys", 1, 1, func(th *core.Thread, a []core.Value) core.Value {
		return postwalk(th, func(v core.Value) core.Value {
			return rekeyMap(th, v, func(k core.Value) core.Value {
				if kw, ok := k.(*core.Keyword); ok {
					return keywordName(kw)
				}
				return k
			})
		}, a[0], 0)
	}).doc("the form with every keyword map key, at any depth, made its name")
	r.Add("walk/prewalk-replace", 2, 2, func(th *core.Thread, a []core.Value) core.Value {
		smap := walkSmap(th, "prewalk-replace", a[0])
		return prewalk(th, func(v core.Value) core.Value { return smapLookup(smap, v) }, a[1], 0)
	}).doc("the form with every subform that is a key of smap replaced by its value, top down")
	r.Add("walk/postwalk-replace", 2, 2, func(th *core.Thread, a []core.Value) core.Value {
		smap := walkSmap(th, "postwalk-replace", a[0])
		return postwalk(th, func(v core.Value) core.Value { return smapLookup(smap, v) }, a[1], 0)
	}).doc("the form with every subform that is a key of smap replaced by its value, bottom up")
	r.Add("tree-seq", 3, 3, biTreeSeq).
		doc("the nodes of a tree, depth first, as branch? and children decide")
	r.Add("doall", 1, 2, func(th *core.Thread, a []core.Value) core.Value {
		c := a[len(a)-1]
		if s, ok := c.(*core.LazySeq); ok {
			th.Seq(s, "doall", len(a))
		}
		return c
	}).doc("realises a lazy sequence (its first n items) and returns it")
	r.Add("dorun", 1, 2, func(th *core.Thread, a []core.Value) core.Value {
		if s, ok := a[len(a)-1].(*core.LazySeq); ok {
			th.Seq(s, "dorun", len(a))
		}
		return nil
	}).doc("realises a lazy sequence (its first n items) and returns nil")
	r.Add("reductions", 2, 3, biReductions).
		doc("the intermediate values of reduce")
}

// seqVec wraps items (already charged) as a vector.
func seqVec(items []core.Value) *core.Vector {
	if len(items) == 0 {
		return core.EmptyVector
	}
	return &core.Vector{Slots: items}
}

// KeyOf applies a key argument: a keyword, string or vector path reads a
// field (flex); anything else is called.
func KeyOf(th *core.Thread, key, item core.Value) core.Value {
	switch k := key.(type) {
	case *core.Keyword:
		th.Tick()
		return core.KwGet(item, k)
	case string, *core.Vector:
		th.Tick()
		return core.GetPath(item, key)
	}
	return th.Call1(key, item)
}

// ValueSet is a hash set of values with = semantics (1 and 1.0 are the
// same member), used for dedup and grouping. Strings and integral numbers
// (the common grouping keys) use Go maps directly; other values go by
// hashValue and Equal. The zero value is empty.
type ValueSet struct {
	strs map[string]int
	ints map[int64]int
	m    map[uint32][]int
	// Vals holds the members in insertion order.
	Vals []core.Value
}

// intKey returns the int64 that v equals when v is an integer or an
// integral float in int64 range.
func intKey(v core.Value) (int64, bool) {
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

// Index returns the position of v in vals, or -1.
func (s *ValueSet) Index(v core.Value, h uint32) int {
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
		if core.Equal(s.Vals[i], v) {
			return i
		}
	}
	return -1
}

// find returns the position of v, adding it when absent (added=true).
func (s *ValueSet) find(v core.Value) (int, bool) {
	if str, ok := v.(string); ok {
		return findKeyed(s, &s.strs, str, v)
	}
	if n, ok := intKey(v); ok {
		return findKeyed(s, &s.ints, n, v)
	}
	if s.m == nil {
		s.m = make(map[uint32][]int)
	}
	h := core.HashValue(v)
	if i := s.Index(v, h); i >= 0 {
		return i, false
	}
	s.Vals = append(s.Vals, v)
	s.m[h] = append(s.m[h], len(s.Vals)-1)
	return len(s.Vals) - 1, true
}

// findKeyed is valueSet.find for v keyed by k in the side map *m.
func findKeyed[K comparable](s *ValueSet, m *map[K]int, k K, v core.Value) (int, bool) {
	if i, ok := (*m)[k]; ok {
		return i, false
	}
	if *m == nil {
		*m = make(map[K]int)
	}
	(*m)[k] = len(s.Vals)
	s.Vals = append(s.Vals, v)
	return len(s.Vals) - 1, true
}

// Add adds v and reports whether it was new.
func (s *ValueSet) Add(v core.Value) bool {
	_, added := s.find(v)
	return added
}

// buildMap builds a map from distinct keys (by =) and their values. Keys
// that differ only as keyword vs string (:a and "a") stay separate entries.
func buildMap(th *core.Thread, keys, vals []core.Value) *core.Map {
	th.AllocMap(len(keys))
	if FlexClash(keys) {
		m := core.EmptyMap
		for i, k := range keys {
			m = m.AssocExact(k, vals[i])
		}
		return m
	}
	if len(keys) <= core.SmallMapMax {
		b := core.NewMapBuilder(len(keys))
		for i, k := range keys {
			b.Set(k, vals[i])
		}
		return b.Build()
	}
	m := core.EmptyMap.Transient()
	for i, k := range keys {
		m = m.Assoc(k, vals[i])
	}
	return EndTransient(m)
}

// EndTransient ends an in-place build started with m.transient() (the
// owner's transient maps, see Map.edit) so the map can be published.
func EndTransient(m *core.Map) *core.Map {
	m.FlushCounts()
	if m.Edit != nil && m.Edit.Store != nil {
		m.Cache.Store(&core.MapCache{Store: m.Edit.Store}) // read in place from now on
	}
	m.Edit, m.OwnVals = nil, false
	return m
}

// FlexClash reports whether keys holds a keyword and a string of the same
// name (which a flex map write would merge).
func FlexClash(keys []core.Value) bool {
	if len(keys) <= 16 {
		for i, k := range keys {
			for _, k2 := range keys[i+1:] {
				if core.FlexMatch(k, k2) {
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
		case *core.Keyword:
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

func biFind(th *core.Thread, a []core.Value) core.Value {
	// Clojure's (find map key) → [key val] entry.
	if m, ok := core.AsMap(a[0]); ok {
		switch a[1].(type) {
		case *core.Vector, *core.Set, *core.Map, core.HostMap, *core.LazySeq:
		default:
			k, found := m.LookupKey(a[1])
			if !found {
				return nil
			}
			v, _ := m.Get(a[1])
			return th.MakeVector([]core.Value{k, v})
		}
	}
	if a[0] == nil {
		return nil
	}
	if v, ok := a[0].(*core.Vector); ok {
		switch k := a[1].(type) {
		case *core.Vector, *core.Set, *core.Map, core.HostMap, *core.LazySeq:
		case int64:
			// Clojure's (find vector index) → [index item] entry
			if k < 0 || k >= int64(v.Len()) {
				return nil
			}
			return th.MakeVector([]core.Value{k, v.At(int(k))})
		default:
			return nil // a vector has only integer keys
		}
	}
	pred := a[0]
	var found core.Value
	th.Each(a[1], "find", 2, func(v core.Value) bool {
		if core.Truthy(th.Call1(pred, v)) {
			found = v
			return false
		}
		return true
	})
	return found
}

func biMapcat(th *core.Thread, a []core.Value) core.Value {
	pos := th.CallPos
	mapped := biMap(th, a)
	th.CallPos = pos
	if s, ok := mapped.(*core.LazySeq); ok {
		var cur []core.Value
		i, j := 0, 0
		return core.NewLazySeq(func(th *core.Thread) (core.Value, bool) {
			for j >= len(cur) {
				v, ok := s.Nth(th, i)
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
	return concatItems(th, "mapcat", mapped.(*core.Vector).Items(), false)
}

// concatItems concatenates the items of colls (nil counts as empty);
// args says whether colls are the builtin's own args (for arg numbers in
// type errors).
func concatItems(th *core.Thread, name string, colls []core.Value, args bool) core.Value {
	if len(colls) == 1 && args {
		return th.MakeVector(th.Seq(colls[0], name, 1))
	}
	// vectors are charged and sized up front: a concat too large to hold
	// stops before it is built, and the output is allocated once
	n := 0
	for _, c := range colls {
		if v, ok := c.(*core.Vector); ok {
			n += v.Len()
		}
	}
	th.AllocSlots(n)
	out := make([]core.Value, 0, n)
	for i, c := range colls {
		if v, ok := c.(*core.Vector); ok {
			out = append(out, v.Items()...)
			continue
		}
		argN := 0
		if args {
			argN = i + 1
		}
		items := th.Seq(c, name, argN)
		th.AllocSlots(len(items))
		out = append(out, items...)
	}
	return seqVec(out)
}

func biMapIndexed(th *core.Thread, a []core.Value) core.Value {
	f := a[0]
	if s, ok := a[1].(*core.LazySeq); ok {
		return lazyEach(s, func(th *core.Thread, i int, x core.Value) (core.Value, bool) {
			return th.Call2(f, core.Int(int64(i)), x), true
		})
	}
	items := th.Seq(a[1], "map-indexed", 2)
	th.AllocSlots(len(items))
	out := make([]core.Value, len(items))
	for i, it := range items {
		out[i] = th.Call2(f, core.Int(int64(i)), it)
	}
	return seqVec(out)
}

func biSort(th *core.Thread, a []core.Value) core.Value {
	var comp core.Value
	if len(a) == 2 {
		comp = a[0]
	}
	items := th.Seq(a[len(a)-1], "sort", len(a))
	th.AllocSlots(3 * len(items))
	ks := make([]keyed, len(items))
	for i, it := range items {
		ks[i] = keyed{it, it}
	}
	return sortKeyed(th, "sort", ks, comp)
}

// sortKeyed stably sorts ks by key with comp and returns the items.
func sortKeyed(th *core.Thread, name string, ks []keyed, comp core.Value) core.Value {
	cmp := core.Comparator(th, name, comp, 1)
	if !sortFastKeys(th, ks, comp) {
		slices.SortStableFunc(ks, func(x, y keyed) int { return cmp(x.k, y.k) })
	}
	out := make([]core.Value, len(ks))
	for i, e := range ks {
		out[i] = e.v
	}
	return seqVec(out)
}

type keyed struct{ k, v core.Value }

func biSortBy(th *core.Thread, a []core.Value) core.Value {
	keyFn := a[0]
	var comp core.Value
	if len(a) == 3 {
		comp = a[1]
	}
	items := th.SeqItems(a[len(a)-1], "sort-by", len(a))
	th.AllocSlots(3 * items.Len())
	core.Comparator(th, "sort-by", comp, 2) // check comp before key fns run
	pos := th.CallPos
	ks := make([]keyed, items.Len())
	for i := range ks {
		it := items.At(i)
		ks[i] = keyed{KeyOf(th, keyFn, it), it}
	}
	th.CallPos = pos // key fns move th.pos; errors point at this call
	return sortKeyed(th, "sort-by", ks, comp)
}

// naturalOrder reports whether comp sorts by compare's order, and whether
// descending: nil, :asc, :desc, compare, < <= > >=.
func naturalOrder(comp core.Value) (ok, desc bool) {
	switch c := comp.(type) {
	case nil:
		return true, false
	case *core.Keyword:
		switch c.Name {
		case "asc":
			return true, false
		case "desc":
			return true, true
		}
	case *core.Builtin:
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
func sortFastKeys(th *core.Thread, ks []keyed, comp core.Value) bool {
	ok, desc := naturalOrder(comp)
	if !ok || len(ks) < 2 {
		return false
	}
	if sortNumericKeys(th, ks, desc) {
		return true
	}
	if b, isB := comp.(*core.Builtin); isB && b.Name != "compare" {
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
		th.Tick()
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
func sortNumericKeys(th *core.Thread, ks []keyed, desc bool) bool {
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
		v     core.Value
	}
	fs := make([]fk, len(ks))
	for i, e := range ks {
		th.Tick()
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

func reverseOf(th *core.Thread, name string, coll core.Value) core.Value {
	items := th.Seq(coll, name, 1)
	th.AllocSlots(len(items))
	out := make([]core.Value, len(items))
	for i, it := range items {
		th.Tick()
		out[len(items)-1-i] = it
	}
	return seqVec(out)
}

func distinctBy(th *core.Thread, name string, key, coll core.Value, argN int) core.Value {
	if src, ok := coll.(*core.LazySeq); ok {
		var seen ValueSet
		return lazyEach(src, func(th *core.Thread, _ int, it core.Value) (core.Value, bool) {
			k := it
			if key != nil {
				k = KeyOf(th, key, it)
			}
			return it, seen.Add(k)
		})
	}
	items := th.SeqItems(coll, name, argN)
	d := DistinctSink{Out: make([]core.Value, 0, min(items.Len(), 64))}
	for i := range items.Len() {
		it := items.At(i)
		k := it
		if key != nil {
			k = KeyOf(th, key, it)
		} else {
			th.Tick()
		}
		d.Add(k, it)
	}
	return d.Result(th)
}

// DistinctSink collects the items whose keys were not seen before.
type DistinctSink struct {
	Seen ValueSet
	Out  []core.Value
}

// Add takes item it, whose distinctness key is k.
func (d *DistinctSink) Add(k, it core.Value) {
	if d.Seen.Add(k) {
		d.Out = append(d.Out, it)
	}
}

// Result is the vector of the distinct items, in their first order.
func (d *DistinctSink) Result(th *core.Thread) core.Value {
	th.AllocSlots(len(d.Out))
	return seqVec(d.Out)
}

func biGroupBy(th *core.Thread, a []core.Value) core.Value {
	items := th.SeqItems(a[1], "group-by", 2)
	g := GroupSink{Group: make([]int32, 0, items.Len())}
	for i := range items.Len() {
		g.Add(KeyOf(th, a[0], items.At(i)))
	}
	return g.Result(th, items)
}

// GroupSink groups items by key for group-by: it records each item's
// group as the items come, then lays the groups out in one slab, group
// after group, each in the order its items came (no vector grown by
// appending per group).
type GroupSink struct {
	seen  ValueSet
	Group []int32 // the group of each item added, in order
	sizes []int   // the number of items of each group
}

// Add records the next item's key.
func (g *GroupSink) Add(k core.Value) {
	i, added := g.seen.find(k)
	if added {
		g.sizes = append(g.sizes, 0)
	}
	g.sizes[i]++
	g.Group = append(g.Group, int32(i))
}

// Result returns the map from each key to the vector of its items: items
// are the items added, in order.
func (g *GroupSink) Result(th *core.Thread, items core.ItemsOf) core.Value {
	th.AllocSlots(items.Len())
	slab := make([]core.Value, items.Len())
	next := make([]int, len(g.sizes)) // where each group's next item goes
	vals := make([]core.Value, len(g.sizes))
	off := 0
	for i, n := range g.sizes {
		next[i] = off
		vals[i] = &core.Vector{Slots: slab[off : off+n : off+n]}
		off += n
	}
	for j := range items.Len() {
		i := g.Group[j]
		slab[next[i]] = items.At(j)
		next[i]++
	}
	return buildMap(th, g.seen.Vals, vals)
}

func biFrequencies(th *core.Thread, a []core.Value) core.Value {
	items := th.SeqItems(a[0], "frequencies", 1)
	var f FreqSink
	for i := range items.Len() {
		th.Tick()
		f.Add(items.At(i))
	}
	return f.Result(th)
}

// FreqSink counts items for frequencies.
type FreqSink struct {
	seen   ValueSet
	counts []int64
}

// Add counts one occurrence of it.
func (f *FreqSink) Add(it core.Value) {
	i, added := f.seen.find(it)
	if added {
		f.counts = append(f.counts, 0)
	}
	f.counts[i]++
}

// Result is the map of each item to its count.
func (f *FreqSink) Result(th *core.Thread) core.Value {
	vals := make([]core.Value, len(f.counts))
	for i, c := range f.counts {
		vals[i] = core.Int(c)
	}
	return buildMap(th, f.seen.Vals, vals)
}

// partitionImpl implements (partition n [step [pad]] coll) and
// (partition-all n [step] coll). Chunks share the input's backing array.
func partitionImpl(th *core.Thread, name string, a []core.Value, all bool) core.Value {
	n := th.Count(name, a[0], 1)
	step := n
	var pad []core.Value
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
			return core.EmptyVector
		}
		chunk := append(slices.Clone(items[:min(len(items), int(n))]), pad...)
		chunk = chunk[:min(len(chunk), int(n))]
		th.AllocSlots(len(chunk))
		return seqVec([]core.Value{&core.Vector{Slots: chunk}})
	}
	if n < 0 && !all {
		// as Clojure: no chunk has a negative count; with a pad, a
		// non-empty input gives one empty chunk
		if !hasPad || len(th.Seq(coll, name, len(a))) == 0 {
			return core.EmptyVector
		}
		return seqVec([]core.Value{core.EmptyVector})
	}
	if n <= 0 {
		th.Raise(core.KindValue, "%s: size must be positive, got %d", name, n)
	}
	if step <= 0 {
		th.Raise(core.KindValue, "%s: step must be positive, got %d", name, step)
	}
	n, step = min(n, math.MaxInt32), min(step, math.MaxInt32)
	if src, ok := coll.(*core.LazySeq); ok {
		return lazyPartition(src, int(n), int(step), pad, hasPad, all)
	}
	items := th.Seq(coll, name, len(a))
	var out []core.Value
	for i := 0; i < len(items); i += int(step) {
		th.Tick()
		end := i + int(n)
		if end > len(items) {
			if all {
				out = append(out, view(items, i, len(items)))
				continue
			}
			switch {
			case hasPad:
				chunk := append(slices.Clone(items[i:]), pad[:min(len(pad), end-len(items))]...)
				th.AllocSlots(len(chunk))
				out = append(out, &core.Vector{Slots: chunk})
			}
			break
		}
		out = append(out, view(items, i, end))
	}
	th.AllocSlots(2 * len(out))
	return seqVec(out)
}

// lazyPartition is partition/partition-all over a lazy seq: each chunk is
// realised when asked for, so (take 2 (partition 2 (range))) works.
func lazyPartition(src *core.LazySeq, n, step int, pad []core.Value, hasPad, all bool) *core.LazySeq {
	start := 0
	done := false
	return core.NewLazySeq(func(th *core.Thread) (core.Value, bool) {
		if done {
			return nil, false
		}
		chunk := make([]core.Value, 0, min(n, 1024))
		for j := 0; j < n; j++ {
			v, ok := src.Nth(th, start+j)
			if !ok {
				break
			}
			chunk = append(chunk, v)
		}
		start += step
		th.AllocSlots(len(chunk) + 1)
		switch {
		case len(chunk) == n:
			return &core.Vector{Slots: chunk}, true
		case len(chunk) == 0:
			done = true
			return nil, false
		case all:
			return &core.Vector{Slots: chunk}, true
		case hasPad:
			done = true
			chunk = append(chunk, pad[:min(len(pad), n-len(chunk))]...)
			return &core.Vector{Slots: chunk}, true
		}
		done = true
		return nil, false
	})
}

// flattenInto appends the leaves of nested vectors and lazy seqs.
func flattenInto(th *core.Thread, out []core.Value, v core.Value, depth int) []core.Value {
	if depth > th.MaxDepth {
		th.DepthLimit("flatten")
	}
	for _, it := range th.Seq(v, "flatten", 1) {
		th.Tick() // per node: shared subtrees can make huge trees cheaply
		switch it.(type) {
		case *core.Vector, *core.LazySeq:
			out = flattenInto(th, out, it, depth+1)
		default:
			th.AllocSlots(1) // charged as it grows, not at the end
			out = append(out, it)
		}
	}
	return out
}

// shortestSeqs returns the items of colls cut to the shortest one; lazy
// seqs are realised only that far when some coll is finite, so
// (interleave (range) [:a :b]) works. colls[0] is argument argN.
func shortestSeqs(th *core.Thread, name string, colls []core.Value, argN int) ([][]core.Value, int) {
	seqs := make([][]core.Value, len(colls))
	n := -1
	for i, c := range colls {
		if _, lazy := c.(*core.LazySeq); lazy {
			continue
		}
		seqs[i] = th.Seq(c, name, argN+i)
		if n < 0 || len(seqs[i]) < n {
			n = len(seqs[i])
		}
	}
	for i, c := range colls {
		s, lazy := c.(*core.LazySeq)
		if !lazy {
			continue
		}
		if n < 0 {
			seqs[i] = th.Seq(s, name, argN+i)
			n = len(seqs[i])
			continue
		}
		var items []core.Value
		for j := 0; j < n; j++ {
			v, ok := s.Nth(th, j)
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

func biInterleave(th *core.Thread, a []core.Value) core.Value {
	if len(a) == 0 {
		return core.EmptyVector
	}
	seqs, n := shortestSeqs(th, "interleave", a, 1)
	th.AllocSlots(n * len(a))
	out := make([]core.Value, 0, n*len(a))
	for i := 0; i < n; i++ {
		th.Tick()
		for _, s := range seqs {
			out = append(out, s[i])
		}
	}
	return seqVec(out)
}

func biZip(th *core.Thread, a []core.Value) core.Value {
	seqs, n := shortestSeqs(th, "zip", a, 1)
	th.AllocSlots(n * (len(a) + 1))
	out := make([]core.Value, n)
	for i := range out {
		th.Tick()
		row := make([]core.Value, len(a))
		for j, s := range seqs {
			row[j] = s[i]
		}
		out[i] = &core.Vector{Slots: row}
	}
	return seqVec(out)
}

func biCombinations(th *core.Thread, a []core.Value) core.Value {
	items := th.Seq(a[0], "combinations", 1)
	k := th.Int("combinations", a[1], 2)
	n := int64(len(items))
	if k < 0 || k > n {
		return core.EmptyVector
	}
	// C(n, k), capped so the budget check below cannot overflow.
	total := int64(1)
	for i := int64(0); i < k; i++ {
		total = total * (n - i) / (i + 1)
		if total > 1<<40 {
			th.MemLimit()
		}
	}
	th.AllocSlots(int(total * (k + 1)))
	out := make([]core.Value, 0, total)
	idx := make([]int, k)
	for i := range idx {
		idx[i] = i
	}
	for {
		th.Tick()
		row := make([]core.Value, k)
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
func conjMap(th *core.Thread, name string, m *core.Map, x core.Value, argN int) *core.Map {
	if m.Ord {
		return core.OrdAdd(th, m, core.OrdEntries(th, name, []core.Value{x}, argN))
	}
	switch e := core.MapValue(x).(type) {
	case nil:
		return m
	case *core.Vector:
		if e.Len() == 2 {
			return AssocCharged(th, m, e.At(0), e.At(1))
		}
	case *core.Map:
		if m.Len() == 0 {
			return e
		}
		e.Each(func(k, v core.Value) bool {
			th.Tick()
			m = AssocCharged(th, m, k, v)
			return true
		})
		return m
	}
	th.TypeError(name, "a [key value] entry or a map", x, argN)
	return nil
}

// mapFromEntries adds [k v] entries and maps (nil skipped) to a transient
// copy of to, later entries winning (flex keys, as conj).
func mapFromEntries(th *core.Thread, name string, to *core.Map, from []core.Value, argN int) *core.Map {
	if to.Ord {
		return core.OrdAdd(th, to, core.OrdEntries(th, name, from, argN))
	}
	m := to.Transient()
	defer EndTransient(m) // also on a type error: m may be to's twin
	for _, x := range from {
		th.Tick()
		n := m.Len()
		switch e := core.MapValue(x).(type) {
		case nil:
			continue
		case *core.Vector:
			if e.Len() == 2 {
				m = m.Assoc(e.At(0), e.At(1))
				if m.Len() > n {
					th.AllocEntries(m, 1)
				}
				continue
			}
		case *core.Map:
			e.Each(func(k, v core.Value) bool {
				m = m.Assoc(k, v)
				return true
			})
			th.AllocEntries(m, m.Len()-n)
			continue
		}
		th.TypeError(name, "a [key value] entry or a map", x, argN)
	}
	return EndTransient(m)
}

// AssocCharged is m.Assoc, charging the budget when the map grows: what
// assoc does to a map (and reduce's record step of an assoc).
func AssocCharged(th *core.Thread, m *core.Map, k, v core.Value) *core.Map {
	if m.Ord {
		return core.OrdAssoc(th, m, k, v)
	}
	n := m.Len()
	m = m.Assoc(k, v)
	if m.Len() > n {
		th.AllocEntries(m, 1)
	}
	return m
}

func biConj(th *core.Thread, a []core.Value) core.Value {
	if len(a) == 0 {
		return core.EmptyVector
	}
	xs := a[1:]
	switch c := core.MapValue(a[0]).(type) {
	case nil:
		return th.MakeVector(append([]core.Value(nil), xs...))
	case *core.Vector:
		th.AllocBytes(len(xs) * core.ConjSlotBytes)
		for _, x := range xs {
			c = c.Conj(x)
		}
		return c
	case *core.Set:
		return setAddAll(th, c, xs)
	case *core.Map:
		if c.Ord {
			return core.OrdAdd(th, c, core.OrdEntries(th, "conj", xs, 2))
		}
		for i, x := range xs {
			c = conjMap(th, "conj", c, x, i+2)
		}
		return c
	case *core.LazySeq:
		// a seq grows at the front, as in Clojure
		var v core.Value = c
		for _, x := range xs {
			v = consLazy(x, v.(*core.LazySeq))
		}
		return v
	}
	th.TypeError("conj", "a collection", a[0], 1)
	return nil
}

// consLazy returns a lazy seq of x followed by s.
func consLazy(x core.Value, s *core.LazySeq) *core.LazySeq {
	i := -1
	return core.NewLazySeq(func(th *core.Thread) (core.Value, bool) {
		if i < 0 {
			i = 0
			return x, true
		}
		v, ok := s.Nth(th, i)
		if ok {
			i++
		}
		return v, ok
	})
}

func biCons(th *core.Thread, a []core.Value) core.Value {
	if s, ok := a[1].(*core.LazySeq); ok {
		return consLazy(a[0], s)
	}
	items := th.Seq(a[1], "cons", 2)
	th.AllocSlots(len(items) + 1)
	out := make([]core.Value, len(items)+1)
	out[0] = a[0]
	copy(out[1:], items)
	return &core.Vector{Slots: out}
}

// biListStar is list*: as cons of each leading argument in turn onto the
// items of the last, a vector in place of Clojure's seq (lists are
// vectors), and nil, as Clojure, when there is no item at all; a lazy
// last argument gives a lazy sequence.
func biListStar(th *core.Thread, a []core.Value) core.Value {
	lead := a[:len(a)-1]
	if s, ok := a[len(a)-1].(*core.LazySeq); ok {
		// an unbounded tail stays lazy, as (cons x s) does; alone, it is
		// (seq s): nil when it has no item
		if len(lead) == 0 {
			return biSeq(th, a[len(a)-1:])
		}
		for i := len(lead) - 1; i >= 0; i-- {
			s = consLazy(lead[i], s)
		}
		return s
	}
	items := th.Seq(a[len(a)-1], "list*", len(a))
	if len(lead)+len(items) == 0 {
		return nil
	}
	th.AllocSlots(len(lead) + len(items))
	out := make([]core.Value, 0, len(lead)+len(items))
	return &core.Vector{Slots: append(append(out, lead...), items...)}
}

func biConcat(th *core.Thread, a []core.Value) core.Value {
	for _, c := range a {
		if _, ok := c.(*core.LazySeq); ok {
			colls := append([]core.Value(nil), a...)
			ci, i := 0, 0
			var cur []core.Value
			var curLazy *core.LazySeq
			started := false
			return core.NewLazySeq(func(th *core.Thread) (core.Value, bool) {
				for ci < len(colls) {
					if !started {
						started, i = true, 0
						curLazy, _ = colls[ci].(*core.LazySeq)
						if curLazy == nil {
							cur = th.Seq(colls[ci], "concat", ci+1)
						}
					}
					if curLazy != nil {
						if v, ok := curLazy.Nth(th, i); ok {
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
		if v, ok := a[0].(*core.Vector); ok {
			return v
		}
	}
	return concatItems(th, "concat", a, true)
}

func biInto(th *core.Thread, a []core.Value) core.Value {
	switch len(a) {
	case 0:
		return core.EmptyVector
	case 1:
		return a[0]
	}
	src := th.SeqItems(a[1], "into", 2)
	switch to := core.MapValue(a[0]).(type) {
	case nil, *core.Vector:
		var cur []core.Value
		if v, ok := to.(*core.Vector); ok {
			cur = v.Items()
		}
		if src.Len() == 0 {
			if to == nil {
				return core.EmptyVector
			}
			return to
		}
		th.AllocSlots(len(cur) + src.Len())
		out := make([]core.Value, len(cur), len(cur)+src.Len())
		copy(out, cur)
		for i := range src.Len() {
			out = append(out, src.At(i))
		}
		return &core.Vector{Slots: out}
	}
	if to, ok := a[0].(*core.Set); ok && to.Len() == 0 && !to.M.Ord {
		return setFromItems(th, src)
	}
	from := src.From(0)
	switch to := core.MapValue(a[0]).(type) {
	case *core.Set:
		return setAddAll(th, to, from)
	case *core.Map:
		if len(from) == 0 {
			return to
		}
		return mapFromEntries(th, "into", to, from, 2)
	case *core.LazySeq:
		return biConj(th, append([]core.Value{to}, from...))
	}
	th.TypeError("into", "a vector, set or map", a[0], 1)
	return nil
}

// walkForm is clojure.walk/walk: inner on each element of a collection
// (map entries as [k v]), then outer on the rebuilt collection.
func walkForm(th *core.Thread, form core.Value, inner, outer func(core.Value) core.Value) core.Value {
	switch c := core.MapValue(form).(type) {
	case *core.Vector:
		th.AllocSlots(c.Len())
		out := make([]core.Value, c.Len())
		for i, it := range c.Items() {
			out[i] = inner(it)
		}
		return outer(seqVec(out))
	case *core.LazySeq:
		items := th.Seq(c, "walk", 0)
		th.AllocSlots(len(items))
		out := make([]core.Value, len(items))
		for i, it := range items {
			out[i] = inner(it)
		}
		return outer(seqVec(out))
	case *core.Map:
		m := core.EmptyMap
		for _, e := range c.Entries() {
			m = conjMap(th, "walk", m, inner(&core.Vector{Slots: []core.Value{e.Key, e.Val}}), 0)
		}
		return outer(m)
	case *core.Set:
		s := core.EmptySet
		for _, it := range c.Items() {
			s = s.Conj(inner(it))
		}
		th.AllocSlots(3 * s.Len())
		return outer(s)
	}
	return outer(form)
}

func prewalk(th *core.Thread, f func(core.Value) core.Value, form core.Value, depth int) core.Value {
	if depth > th.MaxDepth {
		th.DepthLimit("prewalk")
	}
	return walkForm(th, f(form), func(v core.Value) core.Value { return prewalk(th, f, v, depth+1) }, func(v core.Value) core.Value { return v })
}

func postwalk(th *core.Thread, f func(core.Value) core.Value, form core.Value, depth int) core.Value {
	if depth > th.MaxDepth {
		th.DepthLimit("postwalk")
	}
	return walkForm(th, form, func(v core.Value) core.Value { return postwalk(th, f, v, depth+1) }, f)
}

// rekeyMap returns v with each key of a map replaced by key(k); any other
// value as it is (keywordize-keys and stringify-keys walk with it).
func rekeyMap(th *core.Thread, v core.Value, key func(core.Value) core.Value) core.Value {
	m, ok := core.AsMap(v)
	if !ok {
		return v
	}
	out := core.EmptyMap
	m.Each(func(k, val core.Value) bool {
		th.Tick()
		out = AssocCharged(th, out, key(k), val)
		return true
	})
	return out
}

// walkSmap is the replacement map of prewalk-replace and postwalk-replace.
func walkSmap(th *core.Thread, name string, v core.Value) *core.Map {
	if v == nil {
		return core.EmptyMap
	}
	m, ok := core.AsMap(v)
	if !ok {
		th.TypeError(name, "a map of replacements", v, 1)
	}
	return m
}

// smapLookup is v's replacement in smap, or v.
func smapLookup(smap *core.Map, v core.Value) core.Value {
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
func biTreeSeq(th *core.Thread, a []core.Value) core.Value {
	branch, children := a[0], a[1]
	pos := th.CallPos
	var out []core.Value
	type node struct {
		v    core.Value
		leaf bool
	}
	stack := []node{{v: a[2]}}
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		th.AllocSlots(1)
		out = append(out, n.v)
		if n.leaf || !core.Truthy(th.Call1(branch, n.v)) {
			continue
		}
		kv := th.Call1(children, n.v)
		th.CallPos = pos
		kids := th.Seq(kv, "tree-seq", 2)
		chars := areCharsOf(kids, n.v)
		for i := len(kids) - 1; i >= 0; i-- {
			if !chars && kids[i] == n.v {
				// the node is its own child: the tree never ends
				th.Raise(core.KindValue, "tree-seq: the children of %s include itself, so the tree never ends", core.ErrorPreview(n.v))
			}
			stack = append(stack, node{v: kids[i], leaf: chars})
		}
	}
	return seqVec(out)
}

// areCharsOf reports whether kids are the characters of the string s, as
// (seq s) gives them.
func areCharsOf(kids []core.Value, s core.Value) bool {
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

func biReductions(th *core.Thread, a []core.Value) core.Value {
	f := a[0]
	if src, ok := a[len(a)-1].(*core.LazySeq); ok {
		var acc core.Value
		i, started, stop := 0, false, false
		if len(a) == 3 {
			acc = a[1]
		}
		return core.NewLazySeq(func(th *core.Thread) (core.Value, bool) {
			if stop {
				return nil, false
			}
			if !started && len(a) == 3 {
				started = true
				return acc, true
			}
			v, ok := src.Nth(th, i)
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
			if r, ok := acc.(*core.Reduced); ok {
				stop = true
				return r.Val, true
			}
			return acc, true
		})
	}
	var acc core.Value
	started := false
	coll := a[len(a)-1]
	var out []core.Value
	if len(a) == 3 {
		acc, started = a[1], true
		out = append(out, acc)
	}
	th.Each(coll, "reductions", len(a), func(v core.Value) bool {
		if !started {
			acc, started = v, true
			out = append(out, acc)
			return true
		}
		acc = th.Call2(f, acc, v)
		if r, ok := acc.(*core.Reduced); ok {
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

func biMap(th *core.Thread, a []core.Value) core.Value {
	f := a[0]
	if len(a) == 2 {
		coll := a[1]
		if s, ok := coll.(*core.LazySeq); ok {
			return lazyEach(s, func(th *core.Thread, _ int, x core.Value) (core.Value, bool) { return th.Call1(f, x), true })
		}
		items := th.SeqItems(coll, "map", 2)
		th.AllocSlots(items.Len())
		out := make([]core.Value, items.Len())
		lc := th.NewLoopCaller(f, 1)
		for i := range out {
			out[i] = lc.Call1(items.At(i))
		}
		lc.End()
		if len(out) == 0 {
			return core.EmptyVector
		}
		return &core.Vector{Slots: out}
	}
	colls := a[1:]
	lazy := false
	for _, c := range colls {
		if _, ok := c.(*core.LazySeq); ok {
			lazy = true
		}
	}
	seqs := make([][]core.Value, len(colls))
	n := -1
	for i, c := range colls {
		if s, ok := c.(*core.LazySeq); ok && lazy {
			_ = s
			continue
		}
		seqs[i] = th.Seq(c, "map", i+2)
		if n < 0 || len(seqs[i]) < n {
			n = len(seqs[i])
		}
	}
	if lazy {
		idx := 0
		gen := func(th *core.Thread) (core.Value, bool) {
			args := make([]core.Value, len(colls))
			for j, c := range colls {
				if s, ok := c.(*core.LazySeq); ok {
					v, ok := s.Nth(th, idx)
					if !ok {
						return nil, false
					}
					args[j] = v
				} else {
					if idx >= len(seqs[j]) {
						return nil, false
					}
					args[j] = seqs[j][idx]
				}
			}
			idx++
			return th.Call(f, args...), true
		}
		if n >= 0 {
			out := make([]core.Value, 0, n)
			for {
				v, ok := gen(th)
				if !ok {
					break
				}
				th.AllocSlots(1)
				out = append(out, v)
			}
			return &core.Vector{Slots: out}
		}
		return core.NewLazySeq(gen)
	}
	th.AllocSlots(n)
	out := make([]core.Value, n)
	mark := th.Sp
	args := th.Alloca(len(colls))
	for i := 0; i < n; i++ {
		for j := range colls {
			args[j] = seqs[j][i]
		}
		out[i] = th.CallArgs(f, args)
	}
	th.Sp = mark
	return &core.Vector{Slots: out}
}

// lazyEach is the lazy seq of f's results over the items of s (x, at
// index i) that f keeps (ok): map, filter and the like on a lazy seq.
// f is called in order, once per item, as the result is realised, with
// the thread that realises it.
func lazyEach(s *core.LazySeq, f func(th *core.Thread, i int, x core.Value) (core.Value, bool)) *core.LazySeq {
	i := 0
	return core.NewLazySeq(func(th *core.Thread) (core.Value, bool) {
		for {
			x, ok := s.Nth(th, i)
			if !ok {
				return nil, false
			}
			i++
			if v, ok := f(th, i-1, x); ok {
				return v, true
			}
		}
	})
}

// setFromItems builds a set from items: deduplicated with a Go hash set,
// then built in place (transient map) unless a keyword and a string of the
// same name are both members (the flex map write would merge them).
func setFromItems(th *core.Thread, items core.ItemsOf) *core.Set {
	if items.Len() <= core.SmallMapMax {
		return setAddAll(th, core.EmptySet, items.From(0))
	}
	var seen ValueSet
	for i := range items.Len() {
		th.Tick()
		seen.Add(items.At(i))
	}
	return SetFromSeen(th, &seen)
}

// setAddAll adds items to s, charging the budget for new members.
func setAddAll(th *core.Thread, s *core.Set, items []core.Value) *core.Set {
	if s.M.Ord {
		return &core.Set{M: core.OrdAdd(th, s.M, core.SetEntries(items))}
	}
	for _, it := range items {
		th.Tick()
		n := s.Len()
		if s = s.Conj(it); s.Len() > n {
			th.AllocEntries(s.M, 1)
		}
	}
	return s
}

// sliceVec wraps items (possibly empty) as a vector without copying.
func sliceVec(items []core.Value) *core.Vector {
	if len(items) == 0 {
		return core.EmptyVector
	}
	return core.NewVector(items)
}

// SetFromSeen builds the set of seen's members (in order).
func SetFromSeen(th *core.Thread, seen *ValueSet) *core.Set {
	if len(seen.Vals) <= core.SmallMapMax || FlexClash(seen.Vals) {
		return setAddAll(th, core.EmptySet, seen.Vals)
	}
	th.AllocMap(len(seen.Vals))
	m := core.EmptyMap.Transient()
	for _, v := range seen.Vals {
		m = m.Assoc(v, v)
	}
	return &core.Set{M: EndTransient(m)}
}
