package lisp

import "slices"

// registerMaps registers the map builtins. Keys are flex on writes too: a
// write to :n on {"n" 1} updates "n".
func registerMaps(r *registry) {
	r.add("get-in", 2, 3, func(th *Thread, a []Value) Value {
		var dflt Value
		if len(a) == 3 {
			dflt = a[2]
		}
		cur := a[0]
		found := true
		th.Each(a[1], "get-in", 2, func(k Value) bool {
			th.tick()
			cur, found = lookup(cur, k)
			return found
		})
		if !found {
			return dflt
		}
		return cur
	}).doc("the value at a key path, or the default").ref(refMaps).pure()
	r.add("assoc", 3, -1, func(th *Thread, a []Value) Value {
		if len(a)%2 == 0 {
			th.ArityError("assoc", "3, 5, 7 ... args (a map and key/value pairs)", len(a))
		}
		m := a[0]
		for i := 1; i < len(a); i += 2 {
			m = assocOne(th, "assoc", m, a[i], a[i+1])
		}
		return m
	}).doc("a map with keys set to values (a vector: indexes)").ref(refMaps).pure().
		arity("3, 5, 7 ... args (a map and key/value pairs)")
	r.add("assoc-in", 3, 3, func(th *Thread, a []Value) Value {
		path := th.Seq(a[1], "assoc-in", 2)
		if len(path) == 0 {
			return assocOne(th, "assoc-in", a[0], nil, a[2])
		}
		v := a[2]
		return updatePath(th, "assoc-in", a[0], path, func(Value) Value { return v })
	}).doc("a nested map with the value at a key path set").ref(refMaps).pure()
	r.add("update", 3, -1, func(th *Thread, a []Value) Value {
		// a outlives these calls (it is only read), so extra needs no copy
		f, extra := a[2], a[3:]
		pos := th.pos
		if m, ok := a[0].(*Map); ok {
			if i := m.transientSlot(a[1]); i >= 0 {
				// a reduce's private accumulator (see Map.edit): one
				// lookup, then the value is replaced in place
				return m.setSlot(th, pos, i, callWith(th, f, m.vals[i], extra))
			}
		}
		old, _ := lookup(a[0], a[1])
		nv := callWith(th, f, old, extra)
		th.pos = pos
		return assocOne(th, "update", a[0], a[1], nv)
	}).doc("a map with the value at a key replaced by (f old args...)").ref(refMaps).hof(3)
	r.add("update-in", 3, -1, func(th *Thread, a []Value) Value {
		path := th.Seq(a[1], "update-in", 2)
		f, extra := a[2], a[3:]
		pos := th.pos
		if len(path) == 0 {
			old, _ := lookup(a[0], nil)
			nv := callWith(th, f, old, extra)
			th.pos = pos
			return assocOne(th, "update-in", a[0], nil, nv)
		}
		return updatePath(th, "update-in", a[0], path, func(old Value) Value {
			nv := callWith(th, f, old, extra)
			th.pos = pos
			return nv
		})
	}).doc("a nested map with the value at a key path replaced by (f old args...)").ref(refMaps).hof(3)
	r.add("dissoc", 1, -1, func(th *Thread, a []Value) Value {
		switch m := mapValue(a[0]).(type) {
		case nil:
			return nil
		case *Map:
			if m.ord {
				return ordRemove(th, m, a[1:])
			}
			for _, k := range a[1:] {
				th.tick()
				m = m.Dissoc(k)
			}
			return m
		}
		th.TypeError("dissoc", "a map", a[0], 1)
		return nil
	}).doc("a map without the keys").ref(refMaps).pure()
	r.add("merge", 0, -1, biMerge).
		doc("the maps merged left to right; later keys win").ref(refMaps).pure()
	// every map iterates in key order, so a sorted map is a map
	r.add("sorted-map", 0, -1, func(th *Thread, a []Value) Value {
		if len(a)%2 != 0 {
			th.ArityError("sorted-map", "an even number of args (key/value pairs)", len(a))
		}
		return pairsMap(th, a)
	}).doc("a map of the key-value arguments kept in key order").
		arity("an even number of args (key/value pairs)")
	r.add("sorted-map-by", 1, -1, func(th *Thread, a []Value) Value {
		if len(a)%2 != 1 {
			th.ArityError("sorted-map-by", "a comparator and key/value pairs", len(a))
		}
		m := newOrdering(th, "sorted-map-by", a[0], false)
		add := make([]mapEntry, 0, len(a)/2)
		for i := 1; i < len(a); i += 2 {
			add = append(add, mapEntry{a[i], a[i+1]})
		}
		return ordAdd(th, m, add)
	}).doc("a map of the key-value arguments kept in the order of the comparator, which also decides which keys are equal").
		arity("a comparator and key/value pairs")
	r.add("subseq", 3, 5, func(th *Thread, a []Value) Value { return subSeq(th, "subseq", a, false) }).
		doc("the entries (or items) of a map (or set) whose keys pass the tests, e.g. (subseq m >= 2 < 5)").
		arity("3 or 5")
	r.add("rsubseq", 3, 5, func(th *Thread, a []Value) Value { return subSeq(th, "rsubseq", a, true) }).
		doc("subseq in reverse order").arity("3 or 5")
	r.add("select-keys", 2, 2, func(th *Thread, a []Value) Value {
		ks := th.Seq(a[1], "select-keys", 2)
		switch a[0].(type) {
		case nil, *Map, hostMap, *Vector:
		default:
			th.TypeError("select-keys", "a map", a[0], 1)
		}
		var keys, vals []Value
		for _, k := range ks {
			th.tick()
			if sk, v, ok := lookupStored(a[0], k); ok {
				keys, vals = append(keys, sk), append(vals, v)
			}
		}
		return buildMap(th, keys, vals)
	}).doc("a map with only the given keys").ref(refMaps).pure()
	r.add("keys", 1, 1, func(th *Thread, a []Value) Value { return mapPart(th, "keys", a[0], 0) }).
		doc("the keys of a map, or nil when empty").ref(refMaps).pure()
	r.add("vals", 1, 1, func(th *Thread, a []Value) Value { return mapPart(th, "vals", a[0], 1) }).
		doc("the values of a map, or nil when empty").ref(refMaps).pure()
	r.add("entries", 1, 1, func(th *Thread, a []Value) Value {
		if a[0] == nil {
			return emptyVector
		}
		if _, ok := asMap(a[0]); !ok {
			th.TypeError("entries", "a map", a[0], 1)
		}
		return th.MakeVector(th.Seq(a[0], "entries", 1))
	}).doc("the [key value] entries of a map, in key order").pure()
	r.add("key", 1, 1, func(th *Thread, a []Value) Value { return entryPart(th, "key", a[0], 0) }).
		doc("the key of a map entry").pure()
	r.add("val", 1, 1, func(th *Thread, a []Value) Value { return entryPart(th, "val", a[0], 1) }).
		doc("the value of a map entry").pure()
	r.add("update-vals", 2, 2, func(th *Thread, a []Value) Value {
		if a[0] == nil {
			return emptyMap
		}
		if v, ok := a[0].(*Vector); ok {
			// a vector is associative by index: Clojure keeps it a vector
			items := v.Items()
			out := make([]Value, len(items))
			for i, x := range items {
				out[i] = th.Call1(a[1], x)
			}
			return th.MakeVector(out)
		}
		m, ok := asMap(a[0])
		if !ok {
			th.TypeError("update-vals", "a map", a[0], 1)
		}
		es := m.entries()
		keys := make([]Value, len(es))
		vals := make([]Value, len(es))
		for i, e := range es {
			keys[i], vals[i] = e.key, th.Call1(a[1], e.val)
		}
		return buildMap(th, keys, vals)
	}).doc("a map with f applied to every value").ref(refMaps).hof(2)
	r.add("fnil", 2, 4, func(th *Thread, a []Value) Value {
		f := a[0]
		if len(a) == 2 {
			d := a[1]
			b := &Builtin{Name: "fnil", MinArgs: 0, MaxArgs: -1, Fn: func(th *Thread, args []Value) Value {
				if len(args) == 0 || args[0] != nil {
					return th.call(f, args)
				}
				switch len(args) {
				case 1:
					return th.Call1(f, d)
				case 2:
					return th.Call2(f, d, args[1])
				}
				return th.Call(f, append([]Value{d}, args[1:]...)...)
			}}
			// the fixed-arity entries (opt_fastcall.go) make the same calls
			b.fn1 = func(th *Thread, x Value) Value {
				if x == nil {
					x = d
				}
				return th.Call1(f, x)
			}
			if fb, ok := f.(*Builtin); ok && fb.fn2 != nil {
				// (fnil + 0): what Call2 would do, without its type switch
				ff := fb.fn2
				b.fn2 = func(th *Thread, x, y Value) Value {
					if x == nil {
						x = d
					}
					th.tick()
					return ff(th, x, y)
				}
			} else {
				b.fn2 = func(th *Thread, x, y Value) Value {
					if x == nil {
						x = d
					}
					return th.Call2(f, x, y)
				}
			}
			return b
		}
		defaults := append([]Value(nil), a[1:]...)
		return &Builtin{Name: "fnil", MinArgs: 0, MaxArgs: -1, Fn: func(th *Thread, args []Value) Value {
			patched := false
			for i := 0; i < len(args) && i < len(defaults); i++ {
				if args[i] == nil {
					patched = true
					break
				}
			}
			if !patched {
				return th.call(f, args)
			}
			var buf [4]Value
			out := buf[:0]
			if len(args) > len(buf) {
				out = make([]Value, 0, len(args))
			}
			out = append(out, args...)
			for i := 0; i < len(out) && i < len(defaults); i++ {
				if out[i] == nil {
					out[i] = defaults[i]
				}
			}
			return th.Call(f, out...)
		}}
	}).doc("f with nil arguments replaced by defaults").ref(refLogic).hof(1).folds()
}

// lookup is get with a found flag: maps (flex), vectors and strings by
// index, sets by membership.
// lookupStored is lookup that also returns the key as the collection
// spells it: a map's stored key (flex lookup finds "id" for :id, and
// "id" is what a selection keeps, so host keys leave unchanged), else k.
func lookupStored(coll, k Value) (Value, Value, bool) {
	if h, ok := coll.(hostMap); ok {
		sk, found := srcKey(h.src(), k)
		if !found {
			return nil, nil, false
		}
		v, _ := h.get(sk)
		return sk, v, true
	}
	if m, ok := coll.(*Map); ok {
		sk, found := m.lookupKey(k)
		if !found {
			return nil, nil, false
		}
		v, _ := m.Get(sk)
		return sk, v, true
	}
	v, ok := lookup(coll, k)
	return k, v, ok
}

func lookup(coll, k Value) (Value, bool) {
	switch c := coll.(type) {
	case *Map:
		return c.Get(k)
	case hostMap:
		return c.get(k)
	case *Vector:
		if i, ok := k.(int64); ok && i >= 0 && i < int64(c.Len()) {
			return c.At(int(i)), true
		}
	case *Set:
		if c.Has(k) {
			return k, true
		}
	case string:
		if i, ok := k.(int64); ok && i >= 0 {
			n := int64(0)
			for _, r := range c {
				if n == i {
					return string(r), true
				}
				n++
			}
		}
	}
	return nil, false
}

func callWith(th *Thread, f, old Value, extra []Value) Value {
	switch len(extra) {
	case 0:
		return th.Call1(f, old)
	case 1:
		return th.Call2(f, old, extra[0])
	}
	return th.Call(f, append([]Value{old}, extra...)...)
}

// assocOne is (assoc m k v) on a map (flex key), a vector (index ≤ len) or
// nil (a new map).
func assocOne(th *Thread, name string, m, k, v Value) Value {
	th.tick()
	switch c := mapValue(m).(type) {
	case nil:
		th.allocSlots(3)
		return emptyMap.Assoc(k, v)
	case *Map:
		return assocCharged(th, c, k, v)
	case *Vector:
		i, ok := k.(int64)
		if !ok {
			th.TypeError(name, "an integer index for a vector", k, 2)
		}
		n := int64(c.Len())
		switch {
		case i == n:
			th.allocSlots(1)
			return c.Conj(v)
		case i < 0 || i > n:
			th.Raise(KindValue, "%s: index %d out of bounds for vector of %d items", name, i, n)
		}
		th.allocSlots(c.Len())
		out := make([]Value, c.Len())
		copy(out, c.Items())
		out[i] = v
		return &Vector{slots: out}
	}
	th.TypeError(name, "a map or vector", m, 1)
	return nil
}

// updatePath replaces the value at path (non-empty) with f(old), creating
// maps for missing or nil levels.
func updatePath(th *Thread, name string, m Value, path []Value, f func(Value) Value) Value {
	if len(path) > th.maxDepth {
		th.depthLimit(name)
	}
	k := path[0]
	old, _ := lookup(m, k)
	var nv Value
	if len(path) == 1 {
		nv = f(old)
	} else {
		nv = updatePath(th, name, old, path[1:], f)
	}
	return assocOne(th, name, m, k, nv)
}

func biMerge(th *Thread, a []Value) Value {
	if len(a) > 0 && a[0] != nil {
		if _, ok := mapValue(a[0]).(*Map); !ok {
			// Clojure's merge conjoins every argument onto the first:
			// (merge [1 2] [3 4]) is [1 2 [3 4]], (merge "ab") is "ab"
			acc := a[0]
			for _, x := range a[1:] {
				acc = biConj(th, []Value{acc, x})
			}
			return acc
		}
	}
	var acc *Map
	for i, x := range a {
		switch c := mapValue(x).(type) {
		case nil:
			continue
		case *Map:
			if acc == nil || acc.Len() == 0 && !acc.ord {
				acc = c
				continue
			}
			if c.Len() == 0 {
				continue
			}
			if acc.ord {
				acc = ordAdd(th, acc, c.entries())
				continue
			}
			c.Each(func(k, v Value) bool {
				th.tick()
				acc = assocCharged(th, acc, k, v)
				return true
			})
		default:
			if acc == nil {
				acc = emptyMap
			}
			acc = conjMap(th, "merge", acc, x, i+1)
		}
	}
	if acc == nil {
		return nil
	}
	return acc
}

// mapPart returns a map's keys (part 0) or values (part 1) in key order;
// nil for nil or an empty map (as Clojure).
func mapPart(th *Thread, name string, m Value, part int) Value {
	switch c := mapValue(m).(type) {
	case nil:
		return nil
	case *Map:
		if c.Len() == 0 {
			return nil
		}
		es := c.entries()
		th.allocSlots(len(es))
		out := make([]Value, len(es))
		for i, e := range es {
			if part == 0 {
				out[i] = e.key
			} else {
				out[i] = e.val
			}
		}
		return &Vector{slots: out}
	case *Vector:
		// a vector of [k v] entries (e.g. from sort-by over a map)
		out := make([]Value, 0, c.Len())
		for _, it := range c.Items() {
			out = append(out, entryPart(th, name, it, part))
		}
		th.allocSlots(len(out))
		if len(out) == 0 {
			return nil
		}
		return &Vector{slots: out}
	}
	th.TypeError(name, "a map", m, 1)
	return nil
}

// entryPart returns the key (0) or value (1) of a [k v] entry.
func entryPart(th *Thread, name string, e Value, part int) Value {
	if v, ok := e.(*Vector); ok && v.Len() == 2 {
		return v.At(part)
	}
	th.TypeError(name, "a map entry [key value]", e, 1)
	return nil
}

// subSeq is (subseq sc test key) and (subseq sc start-test start-key
// end-test end-key): the entries of a map (items of a set) whose key k
// passes each (test (compare k key) 0), in key order (reversed for
// rsubseq); nil when none.
func subSeq(th *Thread, name string, a []Value, reverse bool) Value {
	if len(a) == 4 {
		th.ArityError(name, "3 or 5", len(a))
	}
	var items []Value
	isMap := false
	var ord *ordering
	switch c := mapValue(a[0]).(type) {
	case *Map:
		isMap = true
		items = th.Seq(c, name, 1)
		ord, _ = c.ordOf()
	case *Set:
		items = c.Items()
		ord, _ = c.m.ordOf()
	case nil:
	default:
		th.TypeError(name, "a sorted map or set", a[0], 1)
	}
	pos := th.pos
	var cmp func(a, b Value) int
	if ord != nil {
		cmp = ord.compare(th) // the collection's own order, as Clojure
	}
	pass := func(k Value) bool {
		for i := 1; i+1 < len(a); i += 2 {
			var c int
			ok := true
			if cmp != nil {
				c = cmp(k, a[i+1])
			} else {
				c, ok = compareTick(th, k, a[i+1])
			}
			if !ok {
				th.pos = pos
				th.Raise(KindType, "%s: cannot compare %s with %s", name, preview(k), preview(a[i+1]))
			}
			if !Truthy(th.Call2(a[i], Int(int64(c)), Int(0))) {
				return false
			}
		}
		return true
	}
	var out []Value
	for _, it := range items {
		k := it
		if isMap {
			k = it.(*Vector).At(0)
		}
		if pass(k) {
			out = append(out, it)
		}
	}
	th.pos = pos
	if len(out) == 0 {
		return nil
	}
	if reverse {
		slices.Reverse(out)
	}
	th.allocSlots(len(out))
	return seqVec(out)
}

// pairsMap builds the map of the key/value pairs kv (an even count).
func pairsMap(th *Thread, kv []Value) *Map {
	b := newMapBuilder(len(kv) / 2)
	for i := 0; i < len(kv); i += 2 {
		th.tick()
		b.set(kv[i], kv[i+1])
	}
	th.allocSlots(3 * b.n)
	return b.build()
}
