package lisp

import (
	"math"
	"unicode/utf8"
)

// registerAccess registers the positional access builtins: first, rest,
// nth, take, drop and their relatives.
func registerAccess(r *registry) {
	r.add("first", 1, 1, func(th *Thread, a []Value) Value { v, _ := nthOf(th, "first", a[0], 0, 1); return v }).
		doc("the first item, or nil").ref(refSeq).pure()
	r.add("second", 1, 1, func(th *Thread, a []Value) Value { v, _ := nthOf(th, "second", a[0], 1, 1); return v }).
		doc("the second item, or nil").ref(refSeq).pure()
	r.add("last", 1, 1, biLast).
		doc("the last item, or nil").ref(refSeq).pure()
	r.add("nth", 2, 3, biNth).
		doc("the item at an index; out of range is an error unless a default is given").ref(refSeq).pure()
	r.add("rest", 1, 1, func(th *Thread, a []Value) Value { return dropN(th, "rest", a[0], 1, 1) }).
		doc("the items after the first (empty when none)").ref(refSeq).pure()
	r.add("next", 1, 1, func(th *Thread, a []Value) Value { return seqOrNil(th, dropN(th, "next", a[0], 1, 1)) }).
		doc("the items after the first, or nil when none").ref(refSeq).pure()
	r.add("butlast", 1, 1, func(th *Thread, a []Value) Value { return seqOrNil(th, dropLast(th, "butlast", a[0], 1, 1)) }).
		doc("all items but the last, or nil when none").ref(refSeq).pure()
	r.add("ffirst", 1, 1, func(th *Thread, a []Value) Value {
		v, _ := nthOf(th, "ffirst", a[0], 0, 1)
		v, _ = nthOf(th, "ffirst", v, 0, 1)
		return v
	}).doc("(first (first coll))")
	r.add("fnext", 1, 1, func(th *Thread, a []Value) Value { v, _ := nthOf(th, "fnext", a[0], 1, 1); return v }).
		doc("(first (next coll))")
	r.add("nfirst", 1, 1, func(th *Thread, a []Value) Value {
		v, _ := nthOf(th, "nfirst", a[0], 0, 1)
		return seqOrNil(th, dropN(th, "nfirst", v, 1, 1))
	}).doc("(next (first coll))")
	r.add("nnext", 1, 1, func(th *Thread, a []Value) Value { return seqOrNil(th, dropN(th, "nnext", a[0], 2, 1)) }).
		doc("(next (next coll))")
	r.add("take", 2, 2, biTake).
		doc("the first n items").ref(refSeq).pure()
	r.add("drop", 2, 2, func(th *Thread, a []Value) Value {
		return dropN(th, "drop", a[1], takeCount(th, "drop", a[0], 1), 2)
	}).doc("the items after the first n").ref(refSeq).pure()
	r.add("nthrest", 2, 2, func(th *Thread, a []Value) Value {
		return dropN(th, "nthrest", a[0], takeCount(th, "nthrest", a[1], 2), 1)
	}).doc("the items after the first n (the collection itself for n <= 0)")
	r.add("nthnext", 2, 2, func(th *Thread, a []Value) Value {
		return seqOrNil(th, dropN(th, "nthnext", a[0], takeCount(th, "nthnext", a[1], 2), 1))
	}).doc("the items after the first n, or nil when none")
	r.add("take-last", 2, 2, biTakeLast).
		doc("the last n items, or nil when none").ref(refSeq).pure()
	r.add("drop-last", 1, 2, func(th *Thread, a []Value) Value {
		if len(a) == 1 {
			return dropLast(th, "drop-last", a[0], 1, 1)
		}
		return dropLast(th, "drop-last", a[1], takeCount(th, "drop-last", a[0], 1), 2)
	}).doc("all items but the last n (1)").ref(refSeq).pure()
	r.add("take-while", 2, 2, biTakeWhile).
		doc("the leading items for which pred is truthy").ref(refSeq).hof(1)
	r.add("drop-while", 2, 2, biDropWhile).
		doc("the items from the first for which pred is falsy").ref(refSeq).hof(1)
	r.add("take-nth", 2, 2, biTakeNth).
		doc("every nth item, starting with the first")
	r.add("empty?", 1, 1, func(th *Thread, a []Value) Value { return isEmpty(th, "empty?", a[0]) }).
		doc("true for nil and empty collections and strings").ref(refSeq).pure()
	r.add("not-empty", 1, 1, func(th *Thread, a []Value) Value {
		if isEmpty(th, "not-empty", a[0]) {
			return nil
		}
		return a[0]
	}).doc("the collection, or nil when it is empty").ref(refSeq).pure()
	r.add("seq", 1, 1, biSeq).
		doc("the items as a sequence, or nil when empty; a map gives its entries").ref(refSeq).pure()
}

// mapItemsHint is the hint for indexed access on a map.
const mapItemsHint = "nth does not index maps; use get, or (nth (entries m) i)"

// rejectMap raises the type error for indexed access on a map.
func rejectMap(th *Thread, name string, m Value, argN int) {
	th.RaiseHint(KindType, mapItemsHint, "%s: expected a vector, set, string or sequence, got %s (arg %d)", name, preview(m), argN)
}

// nthOf returns item i of coll (ok=false when out of range): vectors,
// sets (in order), strings (chars), lazy seqs (realised up to i), maps
// (their [key value] entries in key order), nil. nth of a map is a type
// error with a hint, as in Clojure.
func nthOf(th *Thread, name string, coll Value, i int, argN int) (Value, bool) {
	if i < 0 {
		switch coll.(type) {
		case nil, *Vector, *Set, string, *LazySeq:
			return nil, false
		}
	}
	switch c := mapValue(coll).(type) {
	case nil:
		return nil, false
	case *Vector:
		if i < c.Len() {
			return c.At(i), true
		}
		return nil, false
	case *Set:
		if es := c.m.entries(); i < len(es) {
			return es[i].key, true
		}
		return nil, false
	case string:
		if i < len(c) && c[i] < utf8.RuneSelf {
			ascii := true
			for j := 0; j < i; j++ {
				if c[j] >= utf8.RuneSelf {
					ascii = false
					break
				}
			}
			if ascii {
				return c[i : i+1], true
			}
		}
		n := 0
		for _, r := range c {
			if n == i {
				return string(r), true
			}
			n++
		}
		return nil, false
	case *LazySeq:
		return c.nth(th, i)
	case *Map:
		if name == "nth" {
			rejectMap(th, name, c, argN)
		}
		if es := c.entries(); i < len(es) {
			th.allocSlots(3)
			return &Vector{slots: []Value{es[i].key, es[i].val}}, true
		}
		return nil, false
	}
	th.TypeError(name, "a collection", coll, argN)
	return nil, false
}

func biLast(th *Thread, a []Value) Value {
	switch c := mapValue(a[0]).(type) {
	case nil:
		return nil
	case *Vector:
		if n := c.Len(); n > 0 {
			return c.At(n - 1)
		}
		return nil
	case *Set:
		if es := c.m.entries(); len(es) > 0 {
			return es[len(es)-1].key
		}
		return nil
	case string:
		if c == "" {
			return nil
		}
		r, _ := utf8.DecodeLastRuneInString(c)
		return string(r)
	case *LazySeq:
		items := th.Seq(c, "last", 1)
		if len(items) == 0 {
			return nil
		}
		return items[len(items)-1]
	case *Map:
		if es := c.entries(); len(es) > 0 {
			th.allocSlots(3)
			return &Vector{slots: []Value{es[len(es)-1].key, es[len(es)-1].val}}
		}
		return nil
	}
	th.TypeError("last", "a collection", a[0], 1)
	return nil
}

func biNth(th *Thread, a []Value) Value {
	var i int64
	switch x := a[1].(type) {
	case int64:
		i = x
	case float64:
		if x != x || math.IsInf(x, 0) {
			th.TypeError("nth", "integer", a[1], 2)
		}
		i = int64(x)
	default:
		th.TypeError("nth", "integer", a[1], 2)
	}
	var dflt Value
	if len(a) == 3 {
		dflt = a[2]
	}
	if i < 0 || i > math.MaxInt32 {
		nthOf(th, "nth", a[0], -1, 1) // type check only
		return dflt
	}
	if v, ok := nthOf(th, "nth", a[0], int(i), 1); ok {
		return v
	}
	return dflt
}

// takeCount reads a take/drop count: an integer, or a float rounded up
// (Clojure counts down by 1 while the count is positive); negative → 0.
func takeCount(th *Thread, name string, v Value, argN int) int {
	switch x := v.(type) {
	case int64:
		if x < 0 {
			return 0
		}
		if x > math.MaxInt32 {
			return math.MaxInt32
		}
		return int(x)
	case float64:
		if x != x {
			th.TypeError(name, "number", v, argN)
		}
		if x <= 0 {
			return 0
		}
		if x > math.MaxInt32 {
			return math.MaxInt32
		}
		return int(math.Ceil(x))
	}
	th.TypeError(name, "number", v, argN)
	return 0
}

// view returns items[i:j] as a vector sharing the backing array (no
// copy, nothing charged).
func view(items []Value, i, j int) *Vector {
	if i >= j {
		return emptyVector
	}
	return &Vector{slots: items[i:j:j]}
}

// viewOf is view over a vector's items; a view of host data is host data
// (it shares the host's backing array).
func viewOf(v *Vector, i, j int) *Vector {
	w := v.sub(i, j)
	if v.host && w != emptyVector {
		w.host = true
	}
	return w
}

// lazyFrom returns a lazy seq of s's items from index start on.
func lazyFrom(s *LazySeq, start int) *LazySeq {
	i := start
	return NewLazySeq(func(th *Thread) (Value, bool) {
		v, ok := s.nth(th, i)
		if ok {
			i++
		}
		return v, ok
	})
}

// dropN drops the first n items: vectors are sliced (O(1)), lazy seqs give
// a lazy seq, nil gives [].
func dropN(th *Thread, name string, coll Value, n int, argN int) Value {
	switch c := coll.(type) {
	case *Vector:
		if n == 0 {
			return c
		}
		return viewOf(c, min(n, c.Len()), c.Len())
	case *LazySeq:
		if n == 0 {
			return c
		}
		return lazyFrom(c, n)
	}
	items := th.Seq(coll, name, argN)
	if n >= len(items) {
		return emptyVector
	}
	return &Vector{slots: items[n:len(items):len(items)]}
}

// seqOrNil turns an empty result into nil (next, nnext ...).
func seqOrNil(th *Thread, v Value) Value {
	switch c := v.(type) {
	case *Vector:
		if c.Len() == 0 {
			return nil
		}
	case *LazySeq:
		if _, ok := c.nth(th, 0); !ok {
			return nil
		}
	}
	return v
}

// dropLast drops the last n items ([] when nothing is left: sequence
// results are vectors).
func dropLast(th *Thread, name string, coll Value, n int, argN int) Value {
	if c, ok := coll.(*Vector); ok {
		if n == 0 {
			return c
		}
		return viewOf(c, 0, c.Len()-min(n, c.Len()))
	}
	items := th.Seq(coll, name, argN)
	if n >= len(items) {
		return emptyVector
	}
	return &Vector{slots: items[: len(items)-n : len(items)-n]}
}

func biTake(th *Thread, a []Value) Value {
	n := takeCount(th, "take", a[0], 1)
	switch c := a[1].(type) {
	case *Vector:
		if n >= c.Len() {
			return c
		}
		return viewOf(c, 0, n)
	case *LazySeq:
		if n == 0 {
			return emptyVector
		}
		var out []Value
		th.Each(c, "take", 2, func(v Value) bool {
			out = append(out, v)
			return len(out) < n
		})
		return th.MakeVector(out)
	}
	items := th.Seq(a[1], "take", 2)
	if n >= len(items) {
		return th.MakeVector(items)
	}
	return &Vector{slots: items[:n:n]}
}

func biTakeLast(th *Thread, a []Value) Value {
	n := takeCount(th, "take-last", a[0], 1)
	if c, ok := a[1].(*Vector); ok {
		if n == 0 || c.Len() == 0 {
			return nil
		}
		if n >= c.Len() {
			return c
		}
		return viewOf(c, c.Len()-n, c.Len())
	}
	items := th.Seq(a[1], "take-last", 2)
	if n == 0 || len(items) == 0 {
		return nil
	}
	if n >= len(items) {
		return th.MakeVector(items)
	}
	return &Vector{slots: items[len(items)-n : len(items) : len(items)]}
}

func biTakeWhile(th *Thread, a []Value) Value {
	pred := a[0]
	if c, ok := a[1].(*Vector); ok {
		i := 0
		for i < c.Len() && Truthy(th.Call1(pred, c.At(i))) {
			i++
		}
		if i == c.Len() {
			return c
		}
		return viewOf(c, 0, i)
	}
	var out []Value
	th.Each(a[1], "take-while", 2, func(v Value) bool {
		if !Truthy(th.Call1(pred, v)) {
			return false
		}
		out = append(out, v)
		return true
	})
	return th.MakeVector(out)
}

func biDropWhile(th *Thread, a []Value) Value {
	pred := a[0]
	if s, ok := a[1].(*LazySeq); ok {
		i := 0
		for {
			v, ok := s.nth(th, i)
			if !ok || !Truthy(th.Call1(pred, v)) {
				break
			}
			i++
		}
		return lazyFrom(s, i)
	}
	items := th.Seq(a[1], "drop-while", 2)
	i := 0
	for i < len(items) && Truthy(th.Call1(pred, items[i])) {
		i++
	}
	if c, ok := a[1].(*Vector); ok && i == 0 {
		return c
	}
	return view(items, i, len(items))
}

func biTakeNth(th *Thread, a []Value) Value {
	n := th.Count("take-nth", a[0], 1)
	if n <= 0 {
		th.Raise(KindValue, "take-nth: step must be positive, got %d", n)
	}
	if s, ok := a[1].(*LazySeq); ok {
		i := 0
		return NewLazySeq(func(th *Thread) (Value, bool) {
			v, ok := s.nth(th, i)
			if ok {
				i += int(n)
			}
			return v, ok
		})
	}
	items := th.Seq(a[1], "take-nth", 2)
	out := make([]Value, 0, (len(items)+int(n)-1)/int(n))
	for i := 0; i < len(items); i += int(n) {
		out = append(out, items[i])
	}
	return th.MakeVector(out)
}

// isEmpty reports whether coll has no items (nil is empty; a non-collection
// is a type error).
func isEmpty(th *Thread, name string, coll Value) bool {
	switch c := coll.(type) {
	case nil:
		return true
	case *Vector:
		return c.Len() == 0
	case *Map:
		return c.Len() == 0
	case hostMap:
		return len(c.src()) == 0
	case *Set:
		return c.Len() == 0
	case string:
		return c == ""
	case *LazySeq:
		_, ok := c.nth(th, 0)
		return !ok
	}
	th.TypeError(name, "a collection", coll, 1)
	return false
}

func biSeq(th *Thread, a []Value) Value {
	switch c := a[0].(type) {
	case *Vector:
		if c.Len() == 0 {
			return nil
		}
		return c
	case *LazySeq:
		if _, ok := c.nth(th, 0); !ok {
			return nil
		}
		return c
	}
	items := th.Seq(a[0], "seq", 1)
	if len(items) == 0 {
		return nil
	}
	return th.MakeVector(items)
}
