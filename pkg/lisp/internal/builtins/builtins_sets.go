package builtins

import (
	"github.com/ptcfleet/ptc/pkg/lisp/internal/core"
)

// registerSets registers the set builtins and clojure.set's functions (also
// as set/). The set operations accept any collection for a set (a vector
// is converted); nil is empty.
func registerSets(r *registry) {
	r.Add("set", 1, 1, func(th *core.Thread, a []core.Value) core.Value { return toSet(th, "set", a[0], 1) }).
		doc("a set of the items").ref(RefSets).pure()
	r.Add("sorted-set", 0, -1, func(th *core.Thread, a []core.Value) core.Value { return setAddAll(th, core.EmptySet, a) }).
		doc("a set of the arguments kept in order")
	r.Add("sorted-set-by", 1, -1, func(th *core.Thread, a []core.Value) core.Value {
		m := core.NewOrdering(th, "sorted-set-by", a[0], true)
		return &core.Set{M: core.OrdAdd(th, m, core.SetEntries(a[1:]))}
	}).doc("a set of the arguments kept in the order of the comparator, which also decides which items are equal")
	r.alias("hash-set", "sorted-set").doc("a set of the arguments (every set is kept in key order)")
	r.Add("set?", 1, 1, func(th *core.Thread, a []core.Value) core.Value { _, ok := a[0].(*core.Set); return ok }).
		doc("true for sets").pure()
	r.Add("union", 0, -1, func(th *core.Thread, a []core.Value) core.Value {
		if len(a) == 0 {
			return core.EmptySet
		}
		if allNil(a) {
			return nil // as Clojure: nothing was conjoined onto nil
		}
		// add the smaller sets into the biggest one
		sets := make([]*core.Set, len(a))
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
	}).doc("the set of items in any of the sets").ref(RefSets).pure()
	r.Add("intersection", 1, -1, func(th *core.Thread, a []core.Value) core.Value {
		sets := make([]*core.Set, len(a))
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
		var keep []core.Value
		for _, it := range sets[small].Items() {
			th.Tick()
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
		return setAddAll(th, core.EmptySet, keep)
	}).doc("the set of items in every set").ref(RefSets).pure()
	r.Add("difference", 1, -1, func(th *core.Thread, a []core.Value) core.Value {
		if a[0] == nil {
			return nil // as Clojure: nothing is removed from nil
		}
		acc := toSet(th, "difference", a[0], 1)
		for i, x := range a[1:] {
			s := toSet(th, "difference", x, i+2)
			if acc.Len() <= s.Len() {
				for _, it := range acc.Items() {
					th.Tick()
					if s.Has(it) {
						acc = acc.Disj(it)
					}
				}
				continue
			}
			for _, it := range s.Items() {
				th.Tick()
				acc = acc.Disj(it)
			}
		}
		return acc
	}).doc("the items of the first set that are in none of the others").ref(RefSets).pure()
	r.Add("subset?", 2, 2, func(th *core.Thread, a []core.Value) core.Value {
		return isSubset(th, toSet(th, "subset?", a[0], 1), toSet(th, "subset?", a[1], 2))
	}).doc("true when every item of the first set is in the second").ref(RefSets).pure()
	r.Add("superset?", 2, 2, func(th *core.Thread, a []core.Value) core.Value {
		return isSubset(th, toSet(th, "superset?", a[1], 2), toSet(th, "superset?", a[0], 1))
	}).doc("true when every item of the second set is in the first").ref(RefSets).pure()
	r.Add("set/select", 2, 2, func(th *core.Thread, a []core.Value) core.Value {
		s := toSet(th, "select", a[1], 2)
		for _, it := range s.Items() {
			if !core.Truthy(th.Call1(a[0], it)) {
				s = s.Disj(it)
			}
		}
		return s
	}).doc("the items of a set for which pred is truthy").ref(RefSets)
	r.Add("set/project", 2, 2, func(th *core.Thread, a []core.Value) core.Value {
		ks := th.Seq(a[1], "project", 2)
		var out []core.Value
		for _, it := range th.Seq(a[0], "project", 1) {
			var keys, vals []core.Value
			for _, k := range ks {
				if sk, v, ok := lookupStored(it, k); ok {
					keys, vals = append(keys, sk), append(vals, v)
				}
			}
			out = append(out, buildMap(th, keys, vals))
		}
		return setAddAll(th, core.EmptySet, out)
	}).doc("the maps of a set with only the given keys")
	r.Add("set/rename-keys", 2, 2, func(th *core.Thread, a []core.Value) core.Value {
		m, ok := core.AsMap(a[0])
		if a[0] == nil {
			return nil
		}
		if !ok {
			th.TypeError("rename-keys", "a map", a[0], 1)
		}
		km, ok := core.AsMap(a[1])
		if !ok {
			th.TypeError("rename-keys", "a map of old key to new key", a[1], 2)
		}
		return renameKeys(th, m, km)
	}).doc("a map with keys renamed by a map of old to new").ref(RefSets)
	r.Add("set/rename", 2, 2, func(th *core.Thread, a []core.Value) core.Value {
		km, ok := core.AsMap(a[1])
		if !ok {
			th.TypeError("rename", "a map of old key to new key", a[1], 2)
		}
		var out []core.Value
		for i, it := range th.Seq(a[0], "rename", 1) {
			th.Tick()
			m, ok := core.AsMap(it)
			if !ok {
				th.Raise(core.KindType, "rename: expected a collection of maps, got %s (item %d)", core.ErrorPreview(it), i+1)
			}
			out = append(out, renameKeys(th, m, km))
		}
		return setAddAll(th, core.EmptySet, out)
	}).doc("a set of the maps with keys renamed by a map of old to new").ref(RefSets)
	r.Add("set/map-invert", 1, 1, func(th *core.Thread, a []core.Value) core.Value {
		if a[0] == nil {
			return core.EmptyMap
		}
		m, ok := core.AsMap(a[0])
		if !ok {
			th.TypeError("map-invert", "a map", a[0], 1)
		}
		out := core.EmptyMap
		m.Each(func(k, v core.Value) bool {
			out = AssocCharged(th, out, v, k)
			return true
		})
		return out
	}).doc("a map from values to keys").ref(RefSets)
	r.Add("set/index", 2, 2, func(th *core.Thread, a []core.Value) core.Value {
		ks := th.Seq(a[1], "index", 2)
		var seen ValueSet
		var groups [][]core.Value
		for _, it := range th.Seq(a[0], "index", 1) {
			th.Tick()
			var keys, vals []core.Value
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
		vals := make([]core.Value, len(groups))
		for i, g := range groups {
			vals[i] = setAddAll(th, core.EmptySet, g)
		}
		return buildMap(th, seen.Vals, vals)
	}).doc("a map from each key-subset to the set of maps that have it")
	r.Add("set/join", 2, 3, biSetJoin).
		doc("the natural join of two sets of maps (or joined on a key map)")
}

// toSet converts a set argument: a set as is, nil as empty, any other
// collection by its items.
func toSet(th *core.Thread, name string, v core.Value, argN int) *core.Set {
	switch c := v.(type) {
	case *core.Set:
		return c
	case nil:
		return core.EmptySet
	case *core.Vector:
		return setFromItems(th, c.ItemsOf())
	case *core.Map, core.HostMap, *core.LazySeq, string:
		return setFromItems(th, core.ItemsOf{Items: th.Seq(c, name, argN)})
	}
	th.TypeError(name, "a set", v, argN)
	return nil
}

func isSubset(th *core.Thread, a, b *core.Set) bool {
	if a.Len() > b.Len() {
		return false
	}
	for _, it := range a.Items() {
		th.Tick()
		if !b.Has(it) {
			return false
		}
	}
	return true
}

// renameKeys is clojure.set/rename-keys: every old key present in m is
// replaced by its new name (all removals first, as Clojure 1.11).
func renameKeys(th *core.Thread, m, km *core.Map) *core.Map {
	out := m
	km.Each(func(old, _ core.Value) bool {
		out = out.Dissoc(old)
		return true
	})
	km.Each(func(old, nk core.Value) bool {
		if v, ok := m.Get(old); ok {
			out = AssocCharged(th, out, nk, v)
		}
		return true
	})
	return out
}

// biSetJoin is clojure.set/join: the natural join of two relations (colls
// of maps) on their shared keys, or on an explicit key map {a-key b-key}.
func biSetJoin(th *core.Thread, a []core.Value) core.Value {
	xr := th.Seq(a[0], "join", 1)
	yr := th.Seq(a[1], "join", 2)
	var pairs [][2]core.Value // key in x, key in y
	if len(a) == 3 {
		km, ok := core.AsMap(a[2])
		if !ok {
			th.TypeError("join", "a map of key to key", a[2], 3)
		}
		km.Each(func(k, v core.Value) bool {
			pairs = append(pairs, [2]core.Value{k, v})
			return true
		})
	} else {
		if len(xr) == 0 || len(yr) == 0 {
			return core.EmptySet
		}
		x0, ok1 := core.AsMap(xr[0])
		y0, ok2 := core.AsMap(yr[0])
		if !ok1 || !ok2 {
			th.TypeError("join", "collections of maps", a[0], 1)
		}
		x0.Each(func(k, _ core.Value) bool {
			if _, ok := y0.Get(k); ok {
				pairs = append(pairs, [2]core.Value{k, k})
			}
			return true
		})
	}
	// index y by its join values
	var seen ValueSet
	var groups [][]*core.Map
	keyOfRow := func(row core.Value, side int) core.Value {
		vals := make([]core.Value, len(pairs))
		for i, p := range pairs {
			vals[i], _ = lookup(row, p[side])
		}
		return &core.Vector{Slots: vals}
	}
	for _, row := range yr {
		m, ok := core.AsMap(row)
		if !ok {
			th.TypeError("join", "collections of maps", row, 2)
		}
		i, added := seen.find(keyOfRow(m, 1))
		if added {
			groups = append(groups, nil)
		}
		groups[i] = append(groups[i], m)
	}
	out := core.EmptySet
	for _, row := range xr {
		m, ok := core.AsMap(row)
		if !ok {
			th.TypeError("join", "collections of maps", row, 1)
		}
		k := keyOfRow(m, 0)
		i := seen.Index(k, core.HashValue(k))
		if i < 0 {
			continue
		}
		for _, ym := range groups[i] {
			merged := m
			ym.Each(func(k, v core.Value) bool {
				merged = AssocCharged(th, merged, k, v)
				return true
			})
			out = setAddAll(th, out, []core.Value{merged})
		}
	}
	return out
}

// allNil reports whether every value of a is nil.
func allNil(a []core.Value) bool {
	for _, x := range a {
		if x != nil {
			return false
		}
	}
	return true
}
