package lisp

// registerSets registers the set builtins and clojure.set's functions (also
// as set/). The set operations accept any collection for a set (a vector
// is converted); nil is empty.
func registerSets(r *registry) {
	r.add("set", 1, 1, func(th *Thread, a []Value) Value { return toSet(th, "set", a[0], 1) }).
		doc("a set of the items").ref(refSets).pure()
	r.add("sorted-set", 0, -1, func(th *Thread, a []Value) Value { return setAddAll(th, emptySet, a) }).
		doc("a set of the arguments kept in order")
	r.add("sorted-set-by", 1, -1, func(th *Thread, a []Value) Value {
		m := newOrdering(th, "sorted-set-by", a[0], true)
		return &Set{m: ordAdd(th, m, setEntries(a[1:]))}
	}).doc("a set of the arguments kept in the order of the comparator, which also decides which items are equal")
	r.alias("hash-set", "sorted-set").doc("a set of the arguments (every set is kept in key order)")
	r.add("set?", 1, 1, func(th *Thread, a []Value) Value { _, ok := a[0].(*Set); return ok }).
		doc("true for sets").pure()
	r.add("union", 0, -1, func(th *Thread, a []Value) Value {
		if len(a) == 0 {
			return emptySet
		}
		if allNil(a) {
			return nil // as Clojure: nothing was conjoined onto nil
		}
		// add the smaller sets into the biggest one
		sets := make([]*Set, len(a))
		big := 0
		for i, x := range a {
			sets[i] = toSet(th, "union", x, i+1)
			if sets[i].Len() > sets[big].Len() {
				big = i
			}
		}
		acc := sets[big]
		for i, s := range sets {
			if i != big {
				acc = setAddAll(th, acc, s.Items())
			}
		}
		return acc
	}).doc("the set of items in any of the sets").ref(refSets).pure()
	r.add("intersection", 1, -1, func(th *Thread, a []Value) Value {
		sets := make([]*Set, len(a))
		small := 0
		for i, x := range a {
			sets[i] = toSet(th, "intersection", x, i+1)
			if sets[i].Len() < sets[small].Len() {
				small = i
			}
		}
		if a[small] == nil {
			// Clojure walks the smallest set (the first of the smallest):
			// nil stays nil
			return nil
		}
		var keep []Value
		for _, it := range sets[small].Items() {
			th.tick()
			in := true
			for i, s := range sets {
				if i != small && !s.Has(it) {
					in = false
					break
				}
			}
			if in {
				keep = append(keep, it)
			}
		}
		if len(keep) == sets[small].Len() {
			return sets[small]
		}
		return setAddAll(th, emptySet, keep)
	}).doc("the set of items in every set").ref(refSets).pure()
	r.add("difference", 1, -1, func(th *Thread, a []Value) Value {
		if a[0] == nil {
			return nil // as Clojure: nothing is removed from nil
		}
		acc := toSet(th, "difference", a[0], 1)
		for i, x := range a[1:] {
			s := toSet(th, "difference", x, i+2)
			if acc.Len() <= s.Len() {
				for _, it := range acc.Items() {
					th.tick()
					if s.Has(it) {
						acc = acc.Disj(it)
					}
				}
				continue
			}
			for _, it := range s.Items() {
				th.tick()
				acc = acc.Disj(it)
			}
		}
		return acc
	}).doc("the items of the first set that are in none of the others").ref(refSets).pure()
	r.add("subset?", 2, 2, func(th *Thread, a []Value) Value {
		return isSubset(th, toSet(th, "subset?", a[0], 1), toSet(th, "subset?", a[1], 2))
	}).doc("true when every item of the first set is in the second").ref(refSets).pure()
	r.add("superset?", 2, 2, func(th *Thread, a []Value) Value {
		return isSubset(th, toSet(th, "superset?", a[1], 2), toSet(th, "superset?", a[0], 1))
	}).doc("true when every item of the second set is in the first").ref(refSets).pure()
	r.add("set/select", 2, 2, func(th *Thread, a []Value) Value {
		s := toSet(th, "select", a[1], 2)
		for _, it := range s.Items() {
			if !Truthy(th.Call1(a[0], it)) {
				s = s.Disj(it)
			}
		}
		return s
	}).doc("the items of a set for which pred is truthy").ref(refSets)
	r.add("set/project", 2, 2, func(th *Thread, a []Value) Value {
		ks := th.Seq(a[1], "project", 2)
		var out []Value
		for _, it := range th.Seq(a[0], "project", 1) {
			var keys, vals []Value
			for _, k := range ks {
				if sk, v, ok := lookupStored(it, k); ok {
					keys, vals = append(keys, sk), append(vals, v)
				}
			}
			out = append(out, buildMap(th, keys, vals))
		}
		return setAddAll(th, emptySet, out)
	}).doc("the maps of a set with only the given keys")
	r.add("set/rename-keys", 2, 2, func(th *Thread, a []Value) Value {
		m, ok := asMap(a[0])
		if a[0] == nil {
			return nil
		}
		if !ok {
			th.TypeError("rename-keys", "a map", a[0], 1)
		}
		km, ok := asMap(a[1])
		if !ok {
			th.TypeError("rename-keys", "a map of old key to new key", a[1], 2)
		}
		return renameKeys(th, m, km)
	}).doc("a map with keys renamed by a map of old to new").ref(refSets)
	r.add("set/rename", 2, 2, func(th *Thread, a []Value) Value {
		km, ok := asMap(a[1])
		if !ok {
			th.TypeError("rename", "a map of old key to new key", a[1], 2)
		}
		var out []Value
		for i, it := range th.Seq(a[0], "rename", 1) {
			th.tick()
			m, ok := asMap(it)
			if !ok {
				th.Raise(KindType, "rename: expected a collection of maps, got %s (item %d)", preview(it), i+1)
			}
			out = append(out, renameKeys(th, m, km))
		}
		return setAddAll(th, emptySet, out)
	}).doc("a set of the maps with keys renamed by a map of old to new").ref(refSets)
	r.add("set/map-invert", 1, 1, func(th *Thread, a []Value) Value {
		if a[0] == nil {
			return emptyMap
		}
		m, ok := asMap(a[0])
		if !ok {
			th.TypeError("map-invert", "a map", a[0], 1)
		}
		out := emptyMap
		m.Each(func(k, v Value) bool {
			out = assocCharged(th, out, v, k)
			return true
		})
		return out
	}).doc("a map from values to keys").ref(refSets)
	r.add("set/index", 2, 2, func(th *Thread, a []Value) Value {
		ks := th.Seq(a[1], "index", 2)
		var seen valueSet
		var groups [][]Value
		for _, it := range th.Seq(a[0], "index", 1) {
			th.tick()
			var keys, vals []Value
			for _, k := range ks {
				if sk, v, ok := lookupStored(it, k); ok {
					keys, vals = append(keys, sk), append(vals, v)
				}
			}
			i, added := seen.find(buildMap(th, keys, vals))
			if added {
				groups = append(groups, nil)
			}
			groups[i] = append(groups[i], it)
		}
		vals := make([]Value, len(groups))
		for i, g := range groups {
			vals[i] = setAddAll(th, emptySet, g)
		}
		return buildMap(th, seen.vals, vals)
	}).doc("a map from each key-subset to the set of maps that have it")
	r.add("set/join", 2, 3, biSetJoin).
		doc("the natural join of two sets of maps (or joined on a key map)")
}

// toSet converts a set argument: a set as is, nil as empty, any other
// collection by its items.
func toSet(th *Thread, name string, v Value, argN int) *Set {
	switch c := v.(type) {
	case *Set:
		return c
	case nil:
		return emptySet
	case *Vector:
		return setFromItems(th, c.itemsOf())
	case *Map, hostMap, *LazySeq, string:
		return setFromItems(th, itemsOf{items: th.Seq(c, name, argN)})
	}
	th.TypeError(name, "a set", v, argN)
	return nil
}

// setFromItems builds a set from items: deduplicated with a Go hash set,
// then built in place (transient map) unless a keyword and a string of the
// same name are both members (the flex map write would merge them).
func setFromItems(th *Thread, items itemsOf) *Set {
	if items.len() <= smallMapMax {
		return setAddAll(th, emptySet, items.from(0))
	}
	var seen valueSet
	for i := range items.len() {
		th.tick()
		seen.add(items.at(i))
	}
	return setFromSeen(th, &seen)
}

// setFromSeen builds the set of seen's members (in order).
func setFromSeen(th *Thread, seen *valueSet) *Set {
	if len(seen.vals) <= smallMapMax || flexClash(seen.vals) {
		return setAddAll(th, emptySet, seen.vals)
	}
	th.allocMap(len(seen.vals))
	m := emptyMap.transient()
	for _, v := range seen.vals {
		m = m.Assoc(v, v)
	}
	return &Set{m: endTransient(m)}
}

// setAddAll adds items to s, charging the budget for new members.
func setAddAll(th *Thread, s *Set, items []Value) *Set {
	if s.m.ord {
		return &Set{m: ordAdd(th, s.m, setEntries(items))}
	}
	for _, it := range items {
		th.tick()
		n := s.Len()
		if s = s.Conj(it); s.Len() > n {
			th.allocEntries(s.m, 1)
		}
	}
	return s
}

func isSubset(th *Thread, a, b *Set) bool {
	if a.Len() > b.Len() {
		return false
	}
	for _, it := range a.Items() {
		th.tick()
		if !b.Has(it) {
			return false
		}
	}
	return true
}

// renameKeys is clojure.set/rename-keys: every old key present in m is
// replaced by its new name (all removals first, as Clojure 1.11).
func renameKeys(th *Thread, m, km *Map) *Map {
	out := m
	km.Each(func(old, _ Value) bool {
		out = out.Dissoc(old)
		return true
	})
	km.Each(func(old, nk Value) bool {
		if v, ok := m.Get(old); ok {
			out = assocCharged(th, out, nk, v)
		}
		return true
	})
	return out
}

// biSetJoin is clojure.set/join: the natural join of two relations (colls
// of maps) on their shared keys, or on an explicit key map {a-key b-key}.
func biSetJoin(th *Thread, a []Value) Value {
	xr := th.Seq(a[0], "join", 1)
	yr := th.Seq(a[1], "join", 2)
	var pairs [][2]Value // key in x, key in y
	if len(a) == 3 {
		km, ok := asMap(a[2])
		if !ok {
			th.TypeError("join", "a map of key to key", a[2], 3)
		}
		km.Each(func(k, v Value) bool {
			pairs = append(pairs, [2]Value{k, v})
			return true
		})
	} else {
		if len(xr) == 0 || len(yr) == 0 {
			return emptySet
		}
		x0, ok1 := asMap(xr[0])
		y0, ok2 := asMap(yr[0])
		if !ok1 || !ok2 {
			th.TypeError("join", "collections of maps", a[0], 1)
		}
		x0.Each(func(k, _ Value) bool {
			if _, ok := y0.Get(k); ok {
				pairs = append(pairs, [2]Value{k, k})
			}
			return true
		})
	}
	// index y by its join values
	var seen valueSet
	var groups [][]*Map
	keyOfRow := func(row Value, side int) Value {
		vals := make([]Value, len(pairs))
		for i, p := range pairs {
			vals[i], _ = lookup(row, p[side])
		}
		return &Vector{slots: vals}
	}
	for _, row := range yr {
		m, ok := asMap(row)
		if !ok {
			th.TypeError("join", "collections of maps", row, 2)
		}
		i, added := seen.find(keyOfRow(m, 1))
		if added {
			groups = append(groups, nil)
		}
		groups[i] = append(groups[i], m)
	}
	out := emptySet
	for _, row := range xr {
		m, ok := asMap(row)
		if !ok {
			th.TypeError("join", "collections of maps", row, 1)
		}
		k := keyOfRow(m, 0)
		i := seen.index(k, hashValue(k))
		if i < 0 {
			continue
		}
		for _, ym := range groups[i] {
			merged := m
			ym.Each(func(k, v Value) bool {
				merged = assocCharged(th, merged, k, v)
				return true
			})
			out = setAddAll(th, out, []Value{merged})
		}
	}
	return out
}

// allNil reports whether every value of a is nil.
func allNil(a []Value) bool {
	for _, x := range a {
		if x != nil {
			return false
		}
	}
	return true
}
