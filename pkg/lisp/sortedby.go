package lisp

import (
	"slices"
	"strings"
)

// A comparator-ordered collection ((sorted-map-by comp ...) and
// (sorted-set-by comp ...)) is an ordinary *Map (a set's map for a set)
// whose ord flag is set: its cache holds the entries in the comparator's
// order and the comparator. Lookups by = use the map's storage as any map
// does; iteration (Each, entries, and so seq, keys, vals, first, reduce,
// printing) follows the stored order. The order needs the comparator, a
// callable value that only a Thread can call, so it is kept only by the
// builtins that build and update such a collection (the constructors,
// assoc, conj, dissoc, disj, into, merge, empty); every other operation
// (Map.Assoc, update's in-place paths, the set algebra) returns an
// ordinary map or set. Like every map, an ordered one is immutable once
// built, so pmap's workers may share it.

// ordering is a comparator-ordered collection's comparator.
type ordering struct {
	cmp  Value  // the comparator, called through a Thread
	name string // sorted-map-by or sorted-set-by, named by its errors
	set  bool   // the collection is a set: members are exact keys
}

// ordOf returns m's ordering and its entries in that order; nil for an
// ordinary map.
func (m *Map) ordOf() (*ordering, []mapEntry) {
	if !m.ord {
		return nil, nil
	}
	c := m.cache.Load()
	if c == nil || c.ord == nil {
		return nil, nil
	}
	return c.ord, c.sorted
}

// compare returns o's comparator as a Go function calling it through th.
func (o *ordering) compare(th *Thread) func(a, b Value) int {
	return comparator(th, o.name, o.cmp, 1)
}

// named re-raises an error of a comparator call (a bad argument, a
// division by zero, ...) as an error of o's constructor; limits, fail and
// the errors that already name it pass unchanged. Deferred by the
// operations that call the comparator.
func (o *ordering) named() {
	p := recover()
	if p == nil {
		return
	}
	if e, ok := p.(*Error); ok && !strings.HasPrefix(e.Msg, o.name+":") {
		switch e.Kind {
		case KindType, KindArity, KindArithmetic, KindDestructure, KindNotCallable, KindValue, KindRegex:
			w := *e
			w.Msg = o.name + ": the comparator failed: " + e.Msg
			panic(&w)
		}
	}
	panic(p)
}

// ordMap returns a new ordered map with st's storage, o and es (st's
// entries in o's order).
func ordMap(st *Map, o *ordering, es []mapEntry) *Map {
	m := &Map{shape: st.shape, vals: st.vals, root: st.root, n: st.n, ord: true}
	if m.shape == nil && m.root == nil {
		m.shape = emptyShape
	}
	m.cache.Store(&mapCache{sorted: es, ord: o})
	return m
}

// newOrdering checks that comp is a function (Clojure's sorted
// collections take a Comparator) and returns the empty collection it
// orders.
func newOrdering(th *Thread, name string, comp Value, set bool) *Map {
	switch comp.(type) {
	case *Closure, *Builtin:
	default:
		th.TypeError(name, "a comparator function", comp, 1)
	}
	return ordMap(emptyMap, &ordering{cmp: comp, name: name, set: set}, nil)
}

// ordAdd returns the ordered map m with the entries add set, in order:
// a key the comparator calls equal to a key held is that key (a map's
// value is replaced, a set keeps its member). A key equal by = (for a map,
// by its flex lookup) to a key held that the comparator orders apart is
// also that key: a map or set holds a key once.
func ordAdd(th *Thread, m *Map, add []mapEntry) *Map {
	o, base := m.ordOf()
	if len(add) == 0 {
		return m
	}
	defer o.named()
	cmp := o.compare(th)
	pos := th.pos
	if len(add) > 1 {
		// sorted first, most inserts append; stable keeps the later of
		// two keys the comparator calls equal after the earlier
		add = slices.Clone(add)
		slices.SortStableFunc(add, func(x, y mapEntry) int { return cmp(x.key, y.key) })
	}
	es := make([]mapEntry, len(base), len(base)+len(add))
	copy(es, base)
	st := m
	for _, e := range add {
		th.tick()
		i, found := slices.BinarySearchFunc(es, e.key, func(x mapEntry, k Value) int { return cmp(x.key, k) })
		if found {
			if !o.set {
				es[i].val = e.val
				st = st.Assoc(es[i].key, e.val)
			}
			continue
		}
		if k, ok := st.lookupKey(e.key); ok && (!o.set || Equal(k, e.key)) {
			if !o.set {
				for j := range es {
					if Equal(es[j].key, k) {
						es[j].val = e.val
						break
					}
				}
				st = st.Assoc(k, e.val)
			}
			continue
		}
		es = slices.Insert(es, i, e)
		if o.set {
			st = st.assocExact(e.key, e.key)
		} else {
			st = st.Assoc(e.key, e.val)
		}
		th.allocEntries(st, 1)
	}
	th.pos = pos
	if st == m {
		return m
	}
	return ordMap(st, o, es)
}

// ordAssoc is (assoc m k v) on an ordered map.
func ordAssoc(th *Thread, m *Map, k, v Value) *Map {
	return ordAdd(th, m, []mapEntry{{k, v}})
}

// ordRemove returns the ordered map m without the keys the comparator
// calls equal to keys.
func ordRemove(th *Thread, m *Map, keys []Value) *Map {
	o, es := m.ordOf()
	defer o.named()
	cmp := o.compare(th)
	pos := th.pos
	st := m
	for _, k := range keys {
		th.tick()
		i, found := slices.BinarySearchFunc(es, k, func(x mapEntry, k Value) int { return cmp(x.key, k) })
		if !found {
			continue
		}
		st = st.Dissoc(es[i].key)
		es = slices.Delete(slices.Clone(es), i, i+1)
	}
	th.pos = pos
	if st == m {
		return m
	}
	return ordMap(st, o, es)
}

// ordEmpty returns the empty collection ordered as m.
func ordEmpty(m *Map) *Map {
	o, _ := m.ordOf()
	return ordMap(emptyMap, o, nil)
}

// ordEntries returns the entries conj adds to a map for xs (each a
// [k v] entry, a map or nil), with conj's type error naming argument
// firstArg+i for xs[i].
func ordEntries(th *Thread, name string, xs []Value, firstArg int) []mapEntry {
	var out []mapEntry
	for i, x := range xs {
		th.tick()
		switch e := mapValue(x).(type) {
		case nil:
			continue
		case *Vector:
			if e.Len() == 2 {
				out = append(out, mapEntry{e.At(0), e.At(1)})
				continue
			}
		case *Map:
			out = append(out, e.entries()...)
			continue
		}
		th.TypeError(name, "a [key value] entry or a map", x, firstArg+i)
	}
	return out
}

// setEntries returns items as the entries of a set's map.
func setEntries(items []Value) []mapEntry {
	out := make([]mapEntry, len(items))
	for i, it := range items {
		out[i] = mapEntry{it, it}
	}
	return out
}
