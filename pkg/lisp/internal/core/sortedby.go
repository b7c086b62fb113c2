package core

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

// OrdOf returns m's ordering and its entries in that order, in chunks;
// nil for an ordinary map.
func (m *Map) OrdOf() (*Ordering, [][]MapEntry) {
	if !m.Ord {
		return nil, nil
	}
	c := m.Cache.Load()
	if c == nil || c.ord == nil {
		return nil, nil
	}
	return c.ord, c.chunks
}

// Compare returns o's comparator as a Go function calling it through th.
func (o *Ordering) Compare(th *Thread) func(a, b Value) int {
	return Comparator(th, o.name, o.cmp, 1)
}

// ordEdit is the order of an ordered map being updated: a copy of its
// chunk list, each chunk copied on its first change.
type ordEdit struct {
	cmp    func(a, b Value) int
	chunks [][]MapEntry
	owned  []bool // chunks[i] is this edit's own copy
}

func newOrdEdit(cmp func(a, b Value) int, chunks [][]MapEntry) *ordEdit {
	return &ordEdit{cmp: cmp, chunks: slices.Clone(chunks), owned: make([]bool, len(chunks))}
}

// find returns the chunk and the index in it of the entry whose key the
// comparator calls equal to k (found), or of where k goes.
func (e *ordEdit) find(k Value) (ci, i int, found bool) {
	if len(e.chunks) == 0 {
		return 0, 0, false
	}
	ci, _ = slices.BinarySearchFunc(e.chunks, k, func(ch []MapEntry, k Value) int {
		if e.cmp(ch[len(ch)-1].Key, k) < 0 {
			return -1
		}
		return 1
	})
	if ci == len(e.chunks) {
		ci--
		return ci, len(e.chunks[ci]), false
	}
	i, found = slices.BinarySearchFunc(e.chunks[ci], k, func(x MapEntry, k Value) int { return e.cmp(x.Key, k) })
	return ci, i, found
}

// own returns chunk ci, copied first unless the edit made it.
func (e *ordEdit) own(ci int) []MapEntry {
	if !e.owned[ci] {
		e.chunks[ci] = slices.Clone(e.chunks[ci])
		e.owned[ci] = true
	}
	return e.chunks[ci]
}

// insert puts x at index i of chunk ci, splitting a chunk grown past
// twice ordChunk.
func (e *ordEdit) insert(ci, i int, x MapEntry) {
	if len(e.chunks) == 0 {
		e.chunks, e.owned = [][]MapEntry{{x}}, []bool{true}
		return
	}
	ch := slices.Insert(e.own(ci), i, x)
	e.chunks[ci] = ch
	if len(ch) > 2*ordChunk {
		e.chunks[ci] = ch[:ordChunk:ordChunk]
		e.chunks = slices.Insert(e.chunks, ci+1, slices.Clone(ch[ordChunk:]))
		e.owned = slices.Insert(e.owned, ci+1, true)
	}
}

// remove deletes index i of chunk ci (and the chunk when it empties).
func (e *ordEdit) remove(ci, i int) {
	ch := slices.Delete(e.own(ci), i, i+1)
	e.chunks[ci] = ch
	if len(ch) == 0 {
		e.chunks = slices.Delete(e.chunks, ci, ci+1)
		e.owned = slices.Delete(e.owned, ci, ci+1)
	}
}

// setVal replaces the value of the entry whose key is k (as =).
func (e *ordEdit) setVal(k, v Value) {
	for ci, ch := range e.chunks {
		for i := range ch {
			if Equal(ch[i].Key, k) {
				e.own(ci)[i].Val = v
				return
			}
		}
	}
}

// named re-raises an error of a comparator call (a bad argument, a
// division by zero, ...) as an error of o's constructor; limits, fail and
// the errors that already name it pass unchanged. Deferred by the
// operations that call the comparator.
func (o *Ordering) named() {
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

// ordMap returns a new ordered map with st's storage, o and chunks
// (st's entries in o's order).
func ordMap(st *Map, o *Ordering, chunks [][]MapEntry) *Map {
	m := &Map{Shape: st.Shape, Vals: st.Vals, Root: st.Root, N: st.N, Ord: true}
	if m.Shape == nil && m.Root == nil {
		m.Shape = emptyShape
	}
	m.Cache.Store(&MapCache{ord: o, chunks: chunks})
	return m
}

// NewOrdering checks that comp is a function (Clojure's sorted
// collections take a Comparator) and returns the empty collection it
// orders.
func NewOrdering(th *Thread, name string, comp Value, set bool) *Map {
	switch comp.(type) {
	case *Closure, *Builtin:
	default:
		th.TypeError(name, "a comparator function", comp, 1)
	}
	return ordMap(EmptyMap, &Ordering{cmp: comp, name: name, set: set}, nil)
}

// OrdAdd returns the ordered map m with the entries add set, in order:
// a key the comparator calls equal to a key held is that key (a map's
// value is replaced, a set keeps its member). A key equal by = (for a map,
// by its flex lookup) to a key held that the comparator orders apart is
// also that key: a map or set holds a key once.
func OrdAdd(th *Thread, m *Map, add []MapEntry) *Map {
	o, chunks := m.OrdOf()
	if len(add) == 0 {
		return m
	}
	defer o.named()
	cmp := o.Compare(th)
	pos := th.CallPos
	if len(add) > 1 {
		// sorted first, most inserts append; stable keeps the later of
		// two keys the comparator calls equal after the earlier
		add = slices.Clone(add)
		slices.SortStableFunc(add, func(x, y MapEntry) int { return cmp(x.Key, y.Key) })
	}
	ed := newOrdEdit(cmp, chunks)
	st := m
	for _, e := range add {
		th.Tick()
		ci, i, found := ed.find(e.Key)
		if found {
			if !o.set {
				ed.own(ci)[i].Val = e.Val
				st = st.Assoc(ed.chunks[ci][i].Key, e.Val)
			}
			continue
		}
		if k, ok := st.LookupKey(e.Key); ok && (!o.set || Equal(k, e.Key)) {
			if !o.set {
				ed.setVal(k, e.Val)
				st = st.Assoc(k, e.Val)
			}
			continue
		}
		ed.insert(ci, i, e)
		if o.set {
			st = st.AssocExact(e.Key, e.Key)
		} else {
			st = st.Assoc(e.Key, e.Val)
		}
		th.AllocEntries(st, 1)
	}
	th.CallPos = pos
	if st == m {
		return m
	}
	return ordMap(st, o, ed.chunks)
}

// OrdAssoc is (assoc m k v) on an ordered map.
func OrdAssoc(th *Thread, m *Map, k, v Value) *Map {
	return OrdAdd(th, m, []MapEntry{{k, v}})
}

// OrdRemove returns the ordered map m without the keys the comparator
// calls equal to keys.
func OrdRemove(th *Thread, m *Map, keys []Value) *Map {
	o, chunks := m.OrdOf()
	defer o.named()
	ed := newOrdEdit(o.Compare(th), chunks)
	pos := th.CallPos
	st := m
	for _, k := range keys {
		th.Tick()
		ci, i, found := ed.find(k)
		if !found {
			continue
		}
		st = st.Dissoc(ed.chunks[ci][i].Key)
		ed.remove(ci, i)
	}
	th.CallPos = pos
	if st == m {
		return m
	}
	return ordMap(st, o, ed.chunks)
}

// OrdEmpty returns the empty collection ordered as m.
func OrdEmpty(m *Map) *Map {
	o, _ := m.OrdOf()
	return ordMap(EmptyMap, o, nil)
}

// OrdEntries returns the entries conj adds to a map for xs (each a
// [k v] entry, a map or nil), with conj's type error naming argument
// firstArg+i for xs[i].
func OrdEntries(th *Thread, name string, xs []Value, firstArg int) []MapEntry {
	var out []MapEntry
	for i, x := range xs {
		th.Tick()
		switch e := MapValue(x).(type) {
		case nil:
			continue
		case *Vector:
			if e.Len() == 2 {
				out = append(out, MapEntry{e.At(0), e.At(1)})
				continue
			}
		case *Map:
			out = append(out, e.Entries()...)
			continue
		}
		th.TypeError(name, "a [key value] entry or a map", x, firstArg+i)
	}
	return out
}

// SetEntries returns items as the entries of a set's map.
func SetEntries(items []Value) []MapEntry {
	out := make([]MapEntry, len(items))
	for i, it := range items {
		out[i] = MapEntry{it, it}
	}
	return out
}

// Comparator returns the 3-way comparison for sort/sort-by: nil or :asc
// is compare, :desc its reverse, < > <= >= on numbers compare directly,
// and any other fn is called: a boolean result means "a before b" (as
// Clojure's fn comparators), a number is the 3-way result.
func Comparator(th *Thread, name string, comp Value, argN int) func(a, b Value) int {
	pos := th.CallPos
	natural := func(x, y Value) int {
		th.Tick()
		c, ok := CompareTick(th, x, y)
		if !ok {
			th.CallPos = pos
			th.RaiseHint(KindType, "sort values of one kind: numbers, strings, keywords or vectors",
				"%s: cannot compare %s with %s", name, ErrorPreview(x), ErrorPreview(y))
		}
		return c
	}
	switch c := comp.(type) {
	case nil:
		return natural
	case *Keyword:
		switch c.Name {
		case "asc":
			return natural
		case "desc":
			return func(x, y Value) int { return natural(y, x) }
		}
		th.Raise(KindValue, "%s: unknown order :%s; use :asc, :desc or a comparator fn", name, c.Name)
	case *Builtin:
		sign := 0
		switch c.Name {
		case "<", "<=":
			sign = 1
		case ">", ">=":
			sign = -1
		case "compare":
			return natural
		}
		if sign != 0 {
			return func(x, y Value) int {
				switch x.(type) {
				case int64, float64:
					switch y.(type) {
					case int64, float64:
						if !IsNaN(x) && !IsNaN(y) {
							th.Tick()
							return sign * NumCmp(x, y)
						}
					}
				}
				if isNum(x) && isNum(y) {
					return callComparator(th, name, c, x, y, pos) // NaN
				}
				bad := x
				if isNum(x) {
					bad = y
				}
				th.CallPos = pos
				th.RaiseHint(KindType, "< > <= >= compare numbers only; for strings, dates or mixed keys use :asc, :desc or compare, e.g. (sort-by :date :desc xs)",
					"%s: expected number, got %s (as the %s comparator)", c.Name, ErrorPreview(bad), name)
				return 0
			}
		}
	}
	return func(x, y Value) int { return callComparator(th, name, comp, x, y, pos) }
}

// CompareTick is Compare, ticking per vector item so comparing huge
// (possibly shared-structure) vectors honours the limits; identical
// vectors compare equal at once.
func CompareTick(th *Thread, a, b Value) (int, bool) {
	x, ok1 := a.(*Vector)
	y, ok2 := b.(*Vector)
	if !ok1 || !ok2 {
		return Compare(a, b)
	}
	if x == y {
		return 0, true
	}
	if x.Len() != y.Len() {
		if x.Len() < y.Len() {
			return -1, true
		}
		return 1, true
	}
	for i := range x.Items() {
		th.Tick()
		if c, ok := CompareTick(th, x.At(i), y.At(i)); !ok || c != 0 {
			return c, ok
		}
	}
	return 0, true
}

func isNum(v Value) bool {
	switch v.(type) {
	case int64, float64:
		return true
	}
	return false
}

// callComparator calls a user comparator like Clojure's AFunction.compare.
func callComparator(th *Thread, name string, f, x, y Value, pos Pos) int {
	switch r := th.Call2(f, x, y).(type) {
	case bool, nil:
		if Truthy(r) {
			return -1
		}
		if Truthy(th.Call2(f, y, x)) {
			return 1
		}
		return 0
	case int64:
		switch {
		case r < 0:
			return -1
		case r > 0:
			return 1
		}
		return 0
	case float64:
		return int(r) // Clojure truncates with intValue
	default:
		th.CallPos = pos
		th.Raise(KindType, "%s: comparator must return a boolean or a number, got %s", name, ErrorPreview(r))
	}
	return 0
}
