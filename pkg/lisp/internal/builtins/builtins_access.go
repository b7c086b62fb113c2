package builtins

import (
	"math"
	"strings"
	"unicode/utf8"

	"github.com/ptcfleet/ptc/pkg/lisp/internal/core"
)

// registerAccess registers the positional access builtins: first, rest,
// nth, take, drop and their relatives.
func registerAccess(r *registry) {
	r.Add("first", 1, 1, func(th *core.Thread, a []core.Value) core.Value { v, _ := nthOf(th, "first", a[0], 0, 1); return v }).
		doc("the first item, or nil").ref(RefSeq).pure()
	r.Add("second", 1, 1, func(th *core.Thread, a []core.Value) core.Value { v, _ := nthOf(th, "second", a[0], 1, 1); return v }).
		doc("the second item, or nil").ref(RefSeq).pure()
	r.Add("last", 1, 1, biLast).
		doc("the last item, or nil").ref(RefSeq).pure()
	r.Add("nth", 2, 3, biNth).
		doc("the item at an index; out of range is an error unless a default is given").ref(RefSeq).pure()
	r.Add("rest", 1, 1, func(th *core.Thread, a []core.Value) core.Value { return dropN(th, "rest", a[0], 1, 1) }).
		doc("the items after the first (empty when none)").ref(RefSeq).pure()
	r.Add("next", 1, 1, func(th *core.Thread, a []core.Value) core.Value { return seqOrNil(th, dropN(th, "next", a[0], 1, 1)) }).
		doc("the items after the first, or nil when none").ref(RefSeq).pure()
	r.Add("butlast", 1, 1, func(th *core.Thread, a []core.Value) core.Value {
		return seqOrNil(th, dropLast(th, "butlast", a[0], 1, 1))
	}).
		doc("all items but the last, or nil when none").ref(RefSeq).pure()
	r.Add("ffirst", 1, 1, func(th *core.Thread, a []core.Value) core.Value {
		v, _ := nthOf(th, "ffirst", a[0], 0, 1)
		v, _ = nthOf(th, "ffirst", v, 0, 1)
		return v
	}).doc("(first (first coll))")
	r.Add("fnext", 1, 1, func(th *core.Thread, a []core.Value) core.Value { v, _ := nthOf(th, "fnext", a[0], 1, 1); return v }).
		doc("(first (next coll))")
	r.Add("nfirst", 1, 1, func(th *core.Thread, a []core.Value) core.Value {
		v, _ := nthOf(th, "nfirst", a[0], 0, 1)
		return seqOrNil(th, dropN(th, "nfirst", v, 1, 1))
	}).doc("(next (first coll))")
	r.Add("nnext", 1, 1, func(th *core.Thread, a []core.Value) core.Value { return seqOrNil(th, dropN(th, "nnext", a[0], 2, 1)) }).
		doc("(next (next coll))")
	r.Add("take", 2, 2, biTake).
		doc("the first n items").ref(RefSeq).pure()
	r.Add("drop", 2, 2, func(th *core.Thread, a []core.Value) core.Value {
		return dropN(th, "drop", a[1], takeCount(th, "drop", a[0], 1), 2)
	}).doc("the items after the first n").ref(RefSeq).pure()
	r.Add("nthrest", 2, 2, func(th *core.Thread, a []core.Value) core.Value {
		n := takeCount(th, "nthrest", a[1], 2)
		if n == 0 || a[0] == nil {
			// as Clojure: nothing dropped is the collection itself, and
			// nil stays nil
			return a[0]
		}
		return dropN(th, "nthrest", a[0], n, 1)
	}).doc("the items after the first n (the collection itself for n <= 0)")
	r.Add("nthnext", 2, 2, func(th *core.Thread, a []core.Value) core.Value {
		return seqOrNil(th, dropN(th, "nthnext", a[0], takeCount(th, "nthnext", a[1], 2), 1))
	}).doc("the items after the first n, or nil when none")
	r.Add("take-last", 2, 2, biTakeLast).
		doc("the last n items, or nil when none").ref(RefSeq).pure()
	r.Add("drop-last", 1, 2, func(th *core.Thread, a []core.Value) core.Value {
		if len(a) == 1 {
			return dropLast(th, "drop-last", a[0], 1, 1)
		}
		return dropLast(th, "drop-last", a[1], takeCount(th, "drop-last", a[0], 1), 2)
	}).doc("all items but the last n (1)").ref(RefSeq).pure()
	r.Add("take-while", 2, 2, biTakeWhile).
		doc("the leading items for which pred is truthy").ref(RefSeq).hof(1)
	r.Add("drop-while", 2, 2, biDropWhile).
		doc("the items from the first for which pred is falsy").ref(RefSeq).hof(1)
	r.Add("take-nth", 2, 2, biTakeNth).
		doc("every nth item, starting with the first")
	r.Add("empty?", 1, 1, func(th *core.Thread, a []core.Value) core.Value { return isEmpty(th, "empty?", a[0]) }).
		doc("true for nil and empty collections and strings").ref(RefSeq).pure()
	r.Add("not-empty", 1, 1, func(th *core.Thread, a []core.Value) core.Value {
		if isEmpty(th, "not-empty", a[0]) {
			return nil
		}
		return a[0]
	}).doc("the collection, or nil when it is empty").ref(RefSeq).pure()
	r.Add("seq", 1, 1, biSeq).
		doc("the items as a sequence, or nil when empty; a map gives its entries").ref(RefSeq).pure()
}

// mapItemsHint is the hint for indexed access on a map.
const mapItemsHint = "nth does not index maps; use get, or (nth (entries m) i)"

// rejectMap raises the type error for indexed access on a map.
func rejectMap(th *core.Thread, name string, m core.Value, argN int) {
	th.RaiseHint(core.KindType, mapItemsHint, "%s: expected a vector, set, string or sequence, got %s (arg %d)", name, core.ErrorPreview(m), argN)
}

// nthOf returns item i of coll (ok=false when out of range): vectors,
// sets (in order), strings (chars), lazy seqs (realised up to i), maps
// (their [key value] entries in key order), nil. nth of a map is a type
// error with a hint, as in Clojure.
func nthOf(th *core.Thread, name string, coll core.Value, i int, argN int) (core.Value, bool) {
	if i < 0 {
		switch coll.(type) {
		case nil, *core.Vector, *core.Set, string, *core.LazySeq:
			return nil, false
		}
	}
	switch c := core.MapValue(coll).(type) {
	case nil:
		return nil, false
	case *core.Vector:
		if i < c.Len() {
			return c.At(i), true
		}
		return nil, false
	case *core.Set:
		if es := c.M.Entries(); i < len(es) {
			return es[i].Key, true
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
	case *core.LazySeq:
		return c.Nth(th, i)
	case *core.Map:
		if name == "nth" {
			rejectMap(th, name, c, argN)
		}
		if es := c.Entries(); i < len(es) {
			th.AllocSlots(3)
			return &core.Vector{Slots: []core.Value{es[i].Key, es[i].Val}}, true
		}
		return nil, false
	}
	th.TypeError(name, "a collection", coll, argN)
	return nil, false
}

func biLast(th *core.Thread, a []core.Value) core.Value {
	switch c := core.MapValue(a[0]).(type) {
	case nil:
		return nil
	case *core.Vector:
		if n := c.Len(); n > 0 {
			return c.At(n - 1)
		}
		return nil
	case *core.Set:
		if es := c.M.Entries(); len(es) > 0 {
			return es[len(es)-1].Key
		}
		return nil
	case string:
		if c == "" {
			return nil
		}
		r, _ := utf8.DecodeLastRuneInString(c)
		return string(r)
	case *core.LazySeq:
		items := th.Seq(c, "last", 1)
		if len(items) == 0 {
			return nil
		}
		return items[len(items)-1]
	case *core.Map:
		if es := c.Entries(); len(es) > 0 {
			th.AllocSlots(3)
			return &core.Vector{Slots: []core.Value{es[len(es)-1].Key, es[len(es)-1].Val}}
		}
		return nil
	}
	th.TypeError("last", "a collection", a[0], 1)
	return nil
}

func biNth(th *core.Thread, a []core.Value) core.Value {
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
	var dflt core.Value
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
func takeCount(th *core.Thread, name string, v core.Value, argN int) int {
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
func view(items []core.Value, i, j int) *core.Vector {
	if i >= j {
		return core.EmptyVector
	}
	return &core.Vector{Slots: items[i:j:j]}
}

// viewOf is view over a vector's items; a view of host data is host data
// (it shares the host's backing array).
func viewOf(v *core.Vector, i, j int) *core.Vector {
	w := v.Sub(i, j)
	if v.FromHost && w != core.EmptyVector {
		w.FromHost = true
	}
	return w
}

// lazyFrom returns a lazy seq of s's items from index start on.
func lazyFrom(s *core.LazySeq, start int) *core.LazySeq {
	i := start
	return core.NewLazySeq(func(th *core.Thread) (core.Value, bool) {
		v, ok := s.Nth(th, i)
		if ok {
			i++
		}
		return v, ok
	})
}

// dropN drops the first n items: vectors are sliced (O(1)), lazy seqs give
// a lazy seq, nil gives [].
func dropN(th *core.Thread, name string, coll core.Value, n int, argN int) core.Value {
	switch c := coll.(type) {
	case *core.Vector:
		if n == 0 {
			return c
		}
		return viewOf(c, min(n, c.Len()), c.Len())
	case *core.LazySeq:
		if n == 0 {
			return c
		}
		return lazyFrom(c, n)
	}
	items := th.Seq(coll, name, argN)
	if n >= len(items) {
		return core.EmptyVector
	}
	return &core.Vector{Slots: items[n:len(items):len(items)]}
}

// seqOrNil turns an empty result into nil (next, nnext ...).
func seqOrNil(th *core.Thread, v core.Value) core.Value {
	switch c := v.(type) {
	case *core.Vector:
		if c.Len() == 0 {
			return nil
		}
	case *core.LazySeq:
		if _, ok := c.Nth(th, 0); !ok {
			return nil
		}
	}
	return v
}

// dropLast drops the last n items ([] when nothing is left: sequence
// results are vectors).
func dropLast(th *core.Thread, name string, coll core.Value, n int, argN int) core.Value {
	if c, ok := coll.(*core.Vector); ok {
		if n == 0 {
			return c
		}
		return viewOf(c, 0, c.Len()-min(n, c.Len()))
	}
	items := th.Seq(coll, name, argN)
	if n >= len(items) {
		return core.EmptyVector
	}
	return &core.Vector{Slots: items[: len(items)-n : len(items)-n]}
}

func biTake(th *core.Thread, a []core.Value) core.Value {
	n := takeCount(th, "take", a[0], 1)
	switch c := a[1].(type) {
	case *core.Vector:
		if n >= c.Len() {
			return c
		}
		return viewOf(c, 0, n)
	case *core.LazySeq:
		if n == 0 {
			return core.EmptyVector
		}
		var out []core.Value
		th.Each(c, "take", 2, func(v core.Value) bool {
			out = append(out, v)
			return len(out) < n
		})
		return th.MakeVector(out)
	}
	items := th.Seq(a[1], "take", 2)
	if n >= len(items) {
		return th.MakeVector(items)
	}
	return &core.Vector{Slots: items[:n:n]}
}

func biTakeLast(th *core.Thread, a []core.Value) core.Value {
	n := takeCount(th, "take-last", a[0], 1)
	if c, ok := a[1].(*core.Vector); ok {
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
	return &core.Vector{Slots: items[len(items)-n : len(items) : len(items)]}
}

func biTakeWhile(th *core.Thread, a []core.Value) core.Value {
	pred := a[0]
	if c, ok := a[1].(*core.Vector); ok {
		i := 0
		for i < c.Len() && core.Truthy(th.Call1(pred, c.At(i))) {
			i++
		}
		if i == c.Len() {
			return c
		}
		return viewOf(c, 0, i)
	}
	var out []core.Value
	th.Each(a[1], "take-while", 2, func(v core.Value) bool {
		if !core.Truthy(th.Call1(pred, v)) {
			return false
		}
		out = append(out, v)
		return true
	})
	return th.MakeVector(out)
}

func biDropWhile(th *core.Thread, a []core.Value) core.Value {
	pred := a[0]
	if s, ok := a[1].(*core.LazySeq); ok {
		i := 0
		for {
			v, ok := s.Nth(th, i)
			if !ok || !core.Truthy(th.Call1(pred, v)) {
				break
			}
			i++
		}
		return lazyFrom(s, i)
	}
	items := th.Seq(a[1], "drop-while", 2)
	i := 0
	for i < len(items) && core.Truthy(th.Call1(pred, items[i])) {
		i++
	}
	if c, ok := a[1].(*core.Vector); ok && i == 0 {
		return c
	}
	return view(items, i, len(items))
}

func biTakeNth(th *core.Thread, a []core.Value) core.Value {
	n := th.Count("take-nth", a[0], 1)
	if n <= 0 {
		th.Raise(core.KindValue, "take-nth: step must be positive, got %d", n)
	}
	if s, ok := a[1].(*core.LazySeq); ok {
		i := 0
		return core.NewLazySeq(func(th *core.Thread) (core.Value, bool) {
			v, ok := s.Nth(th, i)
			if ok {
				i += int(n)
			}
			return v, ok
		})
	}
	items := th.Seq(a[1], "take-nth", 2)
	out := make([]core.Value, 0, (len(items)+int(n)-1)/int(n))
	for i := 0; i < len(items); i += int(n) {
		out = append(out, items[i])
	}
	return th.MakeVector(out)
}

// isEmpty reports whether coll has no items (nil is empty; a non-collection
// is a type error).
func isEmpty(th *core.Thread, name string, coll core.Value) bool {
	switch c := coll.(type) {
	case nil:
		return true
	case *core.Vector:
		return c.Len() == 0
	case *core.Map:
		return c.Len() == 0
	case core.HostMap:
		return len(c.Src()) == 0
	case *core.Set:
		return c.Len() == 0
	case string:
		return c == ""
	case *core.LazySeq:
		_, ok := c.Nth(th, 0)
		return !ok
	}
	th.TypeError(name, "a collection", coll, 1)
	return false
}

func biSeq(th *core.Thread, a []core.Value) core.Value {
	switch c := a[0].(type) {
	case *core.Vector:
		if c.Len() == 0 {
			return nil
		}
		return c
	case *core.LazySeq:
		if _, ok := c.Nth(th, 0); !ok {
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

// keywordName is a keyword's name without its namespace (name of :a/b is "b").
func keywordName(k *core.Keyword) string {
	_, name := splitKeyword(k)
	return name
}

// keywordNamespace is a keyword's namespace (of :a/b "a"), "" when it has
// none.
func keywordNamespace(k *core.Keyword) string {
	ns, _ := splitKeyword(k)
	return ns
}

// splitKeyword splits a keyword's name at its last slash into namespace
// and name; a slash first or last splits nothing (:/ and :a/ have no
// namespace).
func splitKeyword(k *core.Keyword) (ns, name string) {
	if i := strings.LastIndexByte(k.Name, '/'); i > 0 && i < len(k.Name)-1 {
		return k.Name[:i], k.Name[i+1:]
	}
	return "", k.Name
}
