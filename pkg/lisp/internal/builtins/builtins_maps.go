package builtins

import (
	"slices"

	"github.com/ptcfleet/ptc/pkg/lisp/internal/core"
)

// registerMaps registers the map builtins. Keys are flex on writes too: a
// write to :n on {"n" 1} updates "n".
func registerMaps(r *registry) {
	r.Add("get-in", 2, 3, func(th *core.Thread, a []core.Value) core.Value {
		var dflt core.Value
		if len(a) == 3 {
			dflt = a[2]
		}
		cur := a[0]
		found := true
		th.Each(a[1], "get-in", 2, func(k core.Value) bool {
			th.Tick()
			cur, found = lookup(cur, k)
			return found
		})
		if !found {
			return dflt
		}
		return cur
	}).doc("the value at a key path, or the default").ref(refMaps).pure()
	r.Add("assoc", 3, -1, func(th *core.Thread, a []core.Value) core.Value {
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
	r.Add("assoc-in", 3, 3, func(th *core.Thread, a []core.Value) core.Value {
		path := th.Seq(a[1], "assoc-in", 2)
		if len(path) == 0 {
			return assocOne(th, "assoc-in", a[0], nil, a[2])
		}
		v := a[2]
		return updatePath(th, "assoc-in", a[0], path, func(core.Value) core.Value { return v })
	}).doc("a nested map with the value at a key path set").ref(refMaps).pure()
	r.Add("update", 3, -1, func(th *core.Thread, a []core.Value) core.Value {
		// a outlives these calls (it is only read), so extra needs no copy
		f, extra := a[2], a[3:]
		pos := th.CallPos
		if m, ok := a[0].(*core.Map); ok {
			if i := m.TransientSlot(a[1]); i >= 0 {
				// a reduce's private accumulator (see Map.edit): one
				// lookup, then the value is replaced in place
				return m.SetSlot(th, pos, i, callWith(th, f, m.Vals[i], extra))
			}
		}
		old, _ := lookup(a[0], a[1])
		nv := callWith(th, f, old, extra)
		th.CallPos = pos
		return assocOne(th, "update", a[0], a[1], nv)
	}).doc("a map with the value at a key replaced by (f old args...)").ref(refMaps).hof(3)
	r.Add("update-in", 3, -1, func(th *core.Thread, a []core.Value) core.Value {
		path := th.Seq(a[1], "update-in", 2)
		f, extra := a[2], a[3:]
		pos := th.CallPos
		if len(path) == 0 {
			old, _ := lookup(a[0], nil)
			nv := callWith(th, f, old, extra)
			th.CallPos = pos
			return assocOne(th, "update-in", a[0], nil, nv)
		}
		return updatePath(th, "update-in", a[0], path, func(old core.Value) core.Value {
			nv := callWith(th, f, old, extra)
			th.CallPos = pos
			return nv
		})
	}).doc("a nested map with the value at a key path replaced by (f old args...)").ref(refMaps).hof(3)
	r.Add("dissoc", 1, -1, func(th *core.Thread, a []core.Value) core.Value {
		switch m := core.MapValue(a[0]).(type) {
		case nil:
			return nil
		case *core.Map:
			if m.Ord {
				return core.OrdRemove(th, m, a[1:])
			}
			for _, k := range a[1:] {
				th.Tick()
				m = m.Dissoc(k)
			}
			return m
		}
		th.TypeError("dissoc", "a map", a[0], 1)
		return nil
	}).doc("a map without the keys").ref(refMaps).pure()
	r.Add("merge", 0, -1, biMerge).
		doc("the maps merged left to right; later keys win").ref(refMaps).pure()
	// every map iterates in key order, so a sorted map is a map
	r.Add("sorted-map", 0, -1, func(th *core.Thread, a []core.Value) core.Value {
		if len(a)%2 != 0 {
			th.ArityError("sorted-map", "an even number of args (key/value pairs)", len(a))
		}
		return pairsMap(th, a)
	}).doc("a map of the key-value arguments kept in key order").
		arity("an even number of args (key/value pairs)")
	r.Add("sorted-map-by", 1, -1, func(th *core.Thread, a []core.Value) core.Value {
		if len(a)%2 != 1 {
			th.ArityError("sorted-map-by", "a comparator and key/value pairs", len(a))
		}
		m := core.NewOrdering(th, "sorted-map-by", a[0], false)
		add := make([]core.MapEntry, 0, len(a)/2)
		for i := 1; i < len(a); i += 2 {
			add = append(add, core.MapEntry{Key: a[i], Val: a[i+1]})
		}
		return core.OrdAdd(th, m, add)
	}).doc("a map of the key-value arguments kept in the order of the comparator, which also decides which keys are equal").
		arity("a comparator and key/value pairs")
	r.Add("subseq", 3, 5, func(th *core.Thread, a []core.Value) core.Value { return subSeq(th, "subseq", a, false) }).
		doc("the entries (or items) of a map (or set) whose keys pass the tests, e.g. (subseq m >= 2 < 5)").
		arity("3 or 5")
	r.Add("rsubseq", 3, 5, func(th *core.Thread, a []core.Value) core.Value { return subSeq(th, "rsubseq", a, true) }).
		doc("subseq in reverse order").arity("3 or 5")
	r.Add("select-keys", 2, 2, func(th *core.Thread, a []core.Value) core.Value {
		ks := th.Seq(a[1], "select-keys", 2)
		switch a[0].(type) {
		case nil, *core.Map, core.HostMap, *core.Vector:
		default:
			th.TypeError("select-keys", "a map", a[0], 1)
		}
		var keys, vals []core.Value
		for _, k := range ks {
			th.Tick()
			if sk, v, ok := lookupStored(a[0], k); ok {
				keys, vals = append(keys, sk), append(vals, v)
			}
		}
		return buildMap(th, keys, vals)
	}).doc("a map with only the given keys").ref(refMaps).pure()
	r.Add("keys", 1, 1, func(th *core.Thread, a []core.Value) core.Value { return mapPart(th, "keys", a[0], 0) }).
		doc("the keys of a map, or nil when empty").ref(refMaps).pure()
	r.Add("vals", 1, 1, func(th *core.Thread, a []core.Value) core.Value { return mapPart(th, "vals", a[0], 1) }).
		doc("the values of a map, or nil when empty").ref(refMaps).pure()
	r.Add("entries", 1, 1, func(th *core.Thread, a []core.Value) core.Value {
		if a[0] == nil {
			return core.EmptyVector
		}
		if _, ok := core.AsMap(a[0]); !ok {
			th.TypeError("entries", "a map", a[0], 1)
		}
		return th.MakeVector(th.Seq(a[0], "entries", 1))
	}).doc("the [key value] entries of a map, in key order").pure()
	r.Add("key", 1, 1, func(th *core.Thread, a []core.Value) core.Value { return entryPart(th, "key", a[0], 0) }).
		doc("the key of a map entry").pure()
	r.Add("val", 1, 1, func(th *core.Thread, a []core.Value) core.Value { return entryPart(th, "val", a[0], 1) }).
		doc("the value of a map entry").pure()
	r.Add("update-vals", 2, 2, func(th *core.Thread, a []core.Value) core.Value {
		if a[0] == nil {
			return core.EmptyMap
		}
		if v, ok := a[0].(*core.Vector); ok {
			// a vector is associative by index: Clojure keeps it a vector
			items := v.Items()
			out := make([]core.Value, len(items))
			for i, x := range items {
				out[i] = th.Call1(a[1], x)
			}
			return th.MakeVector(out)
		}
		m, ok := core.AsMap(a[0])
		if !ok {
			th.TypeError("update-vals", "a map", a[0], 1)
		}
		es := m.Entries()
		keys := make([]core.Value, len(es))
		vals := make([]core.Value, len(es))
		for i, e := range es {
			keys[i], vals[i] = e.Key, th.Call1(a[1], e.Val)
		}
		return buildMap(th, keys, vals)
	}).doc("a map with f applied to every value").ref(refMaps).hof(2)
	r.Add("fnil", 2, 4, func(th *core.Thread, a []core.Value) core.Value {
		f := a[0]
		if len(a) == 2 {
			d := a[1]
			b := &core.Builtin{Name: "fnil", MinArgs: 0, MaxArgs: -1, Fn: func(th *core.Thread, args []core.Value) core.Value {
				if len(args) == 0 || args[0] != nil {
					return th.CallArgs(f, args)
				}
				switch len(args) {
				case 1:
					return th.Call1(f, d)
				case 2:
					return th.Call2(f, d, args[1])
				}
				return th.Call(f, append([]core.Value{d}, args[1:]...)...)
			}}
			// the fixed-arity entries (opt_fastcall.go) make the same calls
			b.Fn1 = func(th *core.Thread, x core.Value) core.Value {
				if x == nil {
					x = d
				}
				return th.Call1(f, x)
			}
			if fb, ok := f.(*core.Builtin); ok && fb.Fn2 != nil {
				// (fnil + 0): what Call2 would do, without its type switch
				ff := fb.Fn2
				b.Fn2 = func(th *core.Thread, x, y core.Value) core.Value {
					if x == nil {
						x = d
					}
					th.Tick()
					return ff(th, x, y)
				}
			} else {
				b.Fn2 = func(th *core.Thread, x, y core.Value) core.Value {
					if x == nil {
						x = d
					}
					return th.Call2(f, x, y)
				}
			}
			return b
		}
		defaults := append([]core.Value(nil), a[1:]...)
		return &core.Builtin{Name: "fnil", MinArgs: 0, MaxArgs: -1, Fn: func(th *core.Thread, args []core.Value) core.Value {
			patched := false
			for i := 0; i < len(args) && i < len(defaults); i++ {
				if args[i] == nil {
					patched = true
					break
				}
			}
			if !patched {
				return th.CallArgs(f, args)
			}
			var buf [4]core.Value
			out := buf[:0]
			if len(args) > len(buf) {
				out = make([]core.Value, 0, len(args))
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
func lookupStored(coll, k core.Value) (core.Value, core.Value, bool) {
	if h, ok := coll.(core.HostMap); ok {
		sk, found := core.SrcKey(h.Src(), k)
		if !found {
			return nil, nil, false
		}
		v, _ := h.Get(sk)
		return sk, v, true
	}
	if m, ok := coll.(*core.Map); ok {
		sk, found := m.LookupKey(k)
		if !found {
			return nil, nil, false
		}
		v, _ := m.Get(sk)
		return sk, v, true
	}
	v, ok := lookup(coll, k)
	return k, v, ok
}

func lookup(coll, k core.Value) (core.Value, bool) {
	switch c := coll.(type) {
	case *core.Map:
		return c.Get(k)
	case core.HostMap:
		return c.Get(k)
	case *core.Vector:
		if i, ok := k.(int64); ok && i >= 0 && i < int64(c.Len()) {
			return c.At(int(i)), true
		}
	case *core.Set:
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

func callWith(th *core.Thread, f, old core.Value, extra []core.Value) core.Value {
	switch len(extra) {
	case 0:
		return th.Call1(f, old)
	case 1:
		return th.Call2(f, old, extra[0])
	}
	return th.Call(f, append([]core.Value{old}, extra...)...)
}

// assocOne is (assoc m k v) on a map (flex key), a vector (index ≤ len) or
// nil (a new map).
func assocOne(th *core.Thread, name string, m, k, v core.Value) core.Value {
	th.Tick()
	if h, ok := m.(core.HostMap); ok {
		if w, ok := th.AssocRecord(h, k, v); ok {
			return w // a wide record's field replaced: its count is the same
		}
	}
	switch c := core.MapValue(m).(type) {
	case nil:
		th.AllocSlots(3)
		return core.EmptyMap.Assoc(k, v)
	case *core.Map:
		return AssocCharged(th, c, k, v)
	case *core.Vector:
		i, ok := k.(int64)
		if !ok {
			th.TypeError(name, "an integer index for a vector", k, 2)
		}
		n := int64(c.Len())
		switch {
		case i == n:
			th.AllocSlots(1)
			return c.Conj(v)
		case i < 0 || i > n:
			th.Raise(core.KindValue, "%s: index %d out of bounds for vector of %d items", name, i, n)
		}
		th.AllocSlots(c.Len())
		out := make([]core.Value, c.Len())
		copy(out, c.Items())
		out[i] = v
		return &core.Vector{Slots: out}
	}
	th.TypeError(name, "a map or vector", m, 1)
	return nil
}

// updatePath replaces the value at path (non-empty) with f(old), creating
// maps for missing or nil levels.
func updatePath(th *core.Thread, name string, m core.Value, path []core.Value, f func(core.Value) core.Value) core.Value {
	if len(path) > th.MaxDepth {
		th.DepthLimit(name)
	}
	k := path[0]
	old, _ := lookup(m, k)
	var nv core.Value
	if len(path) == 1 {
		nv = f(old)
	} else {
		nv = updatePath(th, name, old, path[1:], f)
	}
	return assocOne(th, name, m, k, nv)
}

func biMerge(th *core.Thread, a []core.Value) core.Value {
	if len(a) > 0 && a[0] != nil {
		if _, ok := core.MapValue(a[0]).(*core.Map); !ok {
			// Clojure's merge conjoins every argument onto the first:
			// (merge [1 2] [3 4]) is [1 2 [3 4]], (merge "ab") is "ab"
			acc := a[0]
			for _, x := range a[1:] {
				acc = biConj(th, []core.Value{acc, x})
			}
			return acc
		}
	}
	var acc *core.Map
	for i, x := range a {
		switch c := core.MapValue(x).(type) {
		case nil:
			continue
		case *core.Map:
			if acc == nil || acc.Len() == 0 && !acc.Ord {
				acc = c
				continue
			}
			if c.Len() == 0 {
				continue
			}
			if acc.Ord {
				acc = core.OrdAdd(th, acc, c.Entries())
				continue
			}
			c.Each(func(k, v core.Value) bool {
				th.Tick()
				acc = AssocCharged(th, acc, k, v)
				return true
			})
		default:
			if acc == nil {
				acc = core.EmptyMap
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
func mapPart(th *core.Thread, name string, m core.Value, part int) core.Value {
	switch c := core.MapValue(m).(type) {
	case nil:
		return nil
	case *core.Map:
		if c.Len() == 0 {
			return nil
		}
		es := c.Entries()
		th.AllocSlots(len(es))
		out := make([]core.Value, len(es))
		for i, e := range es {
			if part == 0 {
				out[i] = e.Key
			} else {
				out[i] = e.Val
			}
		}
		return &core.Vector{Slots: out}
	case *core.Vector:
		// a vector of [k v] entries (e.g. from sort-by over a map)
		out := make([]core.Value, 0, c.Len())
		for _, it := range c.Items() {
			out = append(out, entryPart(th, name, it, part))
		}
		th.AllocSlots(len(out))
		if len(out) == 0 {
			return nil
		}
		return &core.Vector{Slots: out}
	}
	th.TypeError(name, "a map", m, 1)
	return nil
}

// entryPart returns the key (0) or value (1) of a [k v] entry.
func entryPart(th *core.Thread, name string, e core.Value, part int) core.Value {
	if v, ok := e.(*core.Vector); ok && v.Len() == 2 {
		return v.At(part)
	}
	th.TypeError(name, "a map entry [key value]", e, 1)
	return nil
}

// subSeq is (subseq sc test key) and (subseq sc start-test start-key
// end-test end-key): the entries of a map (items of a set) whose key k
// passes each (test (compare k key) 0), in key order (reversed for
// rsubseq); nil when none.
func subSeq(th *core.Thread, name string, a []core.Value, reverse bool) core.Value {
	if len(a) == 4 {
		th.ArityError(name, "3 or 5", len(a))
	}
	var items []core.Value
	isMap := false
	var ord *core.Ordering
	switch c := core.MapValue(a[0]).(type) {
	case *core.Map:
		isMap = true
		items = th.Seq(c, name, 1)
		ord, _ = c.OrdOf()
	case *core.Set:
		items = c.Items()
		ord, _ = c.M.OrdOf()
	case nil:
	default:
		th.TypeError(name, "a sorted map or set", a[0], 1)
	}
	pos := th.CallPos
	var cmp func(a, b core.Value) int
	if ord != nil {
		cmp = ord.Compare(th) // the collection's own order, as Clojure
	}
	pass := func(k core.Value) bool {
		for i := 1; i+1 < len(a); i += 2 {
			var c int
			ok := true
			if cmp != nil {
				c = cmp(k, a[i+1])
			} else {
				c, ok = core.CompareTick(th, k, a[i+1])
			}
			if !ok {
				th.CallPos = pos
				th.Raise(core.KindType, "%s: cannot compare %s with %s", name, core.ErrorPreview(k), core.ErrorPreview(a[i+1]))
			}
			if !core.Truthy(th.Call2(a[i], core.Int(int64(c)), core.Int(0))) {
				return false
			}
		}
		return true
	}
	var out []core.Value
	for _, it := range items {
		k := it
		if isMap {
			k = it.(*core.Vector).At(0)
		}
		if pass(k) {
			out = append(out, it)
		}
	}
	th.CallPos = pos
	if len(out) == 0 {
		return nil
	}
	if reverse {
		slices.Reverse(out)
	}
	th.AllocSlots(len(out))
	return seqVec(out)
}

// pairsMap builds the map of the key/value pairs kv (an even count).
func pairsMap(th *core.Thread, kv []core.Value) *core.Map {
	b := core.NewMapBuilder(len(kv) / 2)
	for i := 0; i < len(kv); i += 2 {
		th.Tick()
		b.Set(kv[i], kv[i+1])
	}
	th.AllocSlots(3 * b.N)
	return b.Build()
}
