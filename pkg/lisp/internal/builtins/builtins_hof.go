package builtins

import (
	"sync"

	"github.com/ptcfleet/ptc/pkg/lisp/internal/core"
)

// registerHOF registers the function builders (partial, comp, ...), the
// higher-order collection builtins that are not core, and a few more
// collection and type functions. Functions built here are *Builtin values
// that capture copies of their arguments.
func registerHOF(r *registry) {
	r.Add("partial", 1, -1, func(th *core.Thread, a []core.Value) core.Value {
		f := a[0]
		bound := append([]core.Value(nil), a[1:]...)
		return &core.Builtin{Name: "partial", MinArgs: 0, MaxArgs: -1, Fn: func(th *core.Thread, args []core.Value) core.Value {
			mark := th.Sp
			all := th.Alloca(len(bound) + len(args))
			copy(all, bound)
			copy(all[len(bound):], args)
			v := th.CallArgs(f, all)
			th.Sp = mark
			return v
		}}
	}).doc("f with leading arguments fixed").ref(refLogic).folds()
	r.Add("comp", 0, -1, func(th *core.Thread, a []core.Value) core.Value {
		fns := append([]core.Value(nil), a...)
		return &core.Builtin{Name: "comp", MinArgs: 0, MaxArgs: -1, Fn: func(th *core.Thread, args []core.Value) core.Value {
			if len(fns) == 0 {
				if len(args) != 1 {
					th.ArityError("comp", "1 arg", len(args))
				}
				return args[0]
			}
			v := th.Call(fns[len(fns)-1], args...)
			for i := len(fns) - 2; i >= 0; i-- {
				v = th.Call1(fns[i], v)
			}
			return v
		}}
	}).doc("the composition of the functions, right to left").ref(refLogic).folds()
	r.Add("complement", 1, 1, func(th *core.Thread, a []core.Value) core.Value {
		f := a[0]
		return &core.Builtin{Name: "complement", MinArgs: 0, MaxArgs: -1, Fn: func(th *core.Thread, args []core.Value) core.Value {
			return !core.Truthy(th.Call(f, args...))
		}}
	}).doc("a function returning the opposite truth of f").ref(refLogic).hof(1).folds()
	r.Add("comparator", 1, 1, func(th *core.Thread, a []core.Value) core.Value {
		pred := a[0]
		return &core.Builtin{Name: "comparator", MinArgs: 2, MaxArgs: 2, Fn: func(th *core.Thread, args []core.Value) core.Value {
			switch {
			case core.Truthy(th.Call2(pred, args[0], args[1])):
				return int64(-1)
			case core.Truthy(th.Call2(pred, args[1], args[0])):
				return int64(1)
			}
			return int64(0)
		}}
	}).doc("a 3-way comparator (-1, 0, 1) from a predicate meaning \"before\"").hof(1).folds()
	r.Add("constantly", 1, 1, func(th *core.Thread, a []core.Value) core.Value {
		x := a[0]
		return &core.Builtin{Name: "constantly", MinArgs: 0, MaxArgs: -1, Fn: func(*core.Thread, []core.Value) core.Value { return x }}
	}).doc("a function always returning x").ref(refLogic).folds()
	r.Add("some-fn", 1, -1, func(th *core.Thread, a []core.Value) core.Value {
		preds := append([]core.Value(nil), a...)
		return &core.Builtin{Name: "some-fn", MinArgs: 0, MaxArgs: -1, Fn: func(th *core.Thread, args []core.Value) core.Value {
			var last core.Value
			for _, x := range args {
				for _, p := range preds {
					if last = th.Call1(p, x); core.Truthy(last) {
						return last
					}
				}
			}
			return last // the last falsy result, as Clojure's or
		}}
	}).doc("a function returning the first truthy result of the predicates").folds()
	r.Add("every-pred", 1, -1, func(th *core.Thread, a []core.Value) core.Value {
		preds := append([]core.Value(nil), a...)
		return &core.Builtin{Name: "every-pred", MinArgs: 0, MaxArgs: -1, Fn: func(th *core.Thread, args []core.Value) core.Value {
			for _, x := range args {
				for _, p := range preds {
					if !core.Truthy(th.Call1(p, x)) {
						return false
					}
				}
			}
			return true
		}}
	}).doc("a function true when every predicate holds for every argument").folds()
	r.Add("keep", 2, 2, func(th *core.Thread, a []core.Value) core.Value {
		f := a[0]
		return keepEach(th, "keep", a[1], func(th *core.Thread, _ int, x core.Value) core.Value { return th.Call1(f, x) })
	}).doc("the non-nil results of f on each item").ref(RefSeq).hof(1)
	r.Add("keep-indexed", 2, 2, func(th *core.Thread, a []core.Value) core.Value {
		f := a[0]
		return keepEach(th, "keep-indexed", a[1], func(th *core.Thread, i int, x core.Value) core.Value { return th.Call2(f, core.Int(int64(i)), x) })
	}).doc("the non-nil results of f on each index and item").hof(1)
	r.Add("zipmap", 2, 2, func(th *core.Thread, a []core.Value) core.Value {
		// either side may be infinite: walk both in step
		keys, vals := seqCursor(th, a[0], "zipmap", 1), seqCursor(th, a[1], "zipmap", 2)
		b := core.NewMapBuilder(0)
		for i := 0; ; i++ {
			k, ok := keys(i)
			if !ok {
				break
			}
			v, ok := vals(i)
			if !ok {
				break
			}
			th.Tick()
			th.AllocSlots(2)
			b.Set(k, v)
		}
		return b.Build()
	}).doc("a map from the keys to the values, pairwise").ref(refMaps).pure()
	r.Add("not-every?", 2, 2, func(th *core.Thread, a []core.Value) core.Value {
		all := true
		th.Each(a[1], "not-every?", 2, func(x core.Value) bool {
			all = core.Truthy(th.Call1(a[0], x))
			return all
		})
		return !all
	}).doc("true when pred fails for some item")
	r.Add("subvec", 2, 3, func(th *core.Thread, a []core.Value) core.Value {
		v, ok := a[0].(*core.Vector)
		if !ok {
			th.TypeError("subvec", "vector", a[0], 1)
		}
		start := th.Index("subvec", a[1], 2)
		end := int64(v.Len())
		if len(a) == 3 {
			end = th.Index("subvec", a[2], 3)
		}
		if start < 0 || end > int64(v.Len()) || start > end {
			th.Raise(core.KindValue, "subvec: indexes %d..%d out of bounds for vector of %d items", start, end, v.Len())
		}
		if start == end {
			return core.EmptyVector
		}
		return core.NewVector(v.Items()[start:end:end])
	}).doc("the items of a vector from start (to end)")
	r.Add("split-at", 2, 2, func(th *core.Thread, a []core.Value) core.Value {
		return splitHead(th, "split-at", a[1], max(0, th.Count("split-at", a[0], 1)), nil)
	}).doc("[(take n coll) (drop n coll)]")
	r.Add("split-with", 2, 2, func(th *core.Thread, a []core.Value) core.Value {
		return splitHead(th, "split-with", a[1], -1, func(x core.Value) bool { return core.Truthy(th.Call1(a[0], x)) })
	}).doc("[(take-while pred coll) (drop-while pred coll)]")
	r.Add("partition-by", 2, 2, func(th *core.Thread, a []core.Value) core.Value {
		if s, ok := a[1].(*core.LazySeq); ok {
			f, i := a[0], 0
			return core.NewLazySeq(func(th *core.Thread) (core.Value, bool) {
				x, ok := s.Nth(th, i)
				if !ok {
					return nil, false
				}
				k := th.Call1(f, x)
				part := []core.Value{x}
				for i++; ; i++ {
					y, ok := s.Nth(th, i)
					if !ok || !core.Equal(th.Call1(f, y), k) {
						break
					}
					th.AllocSlots(1)
					part = append(part, y)
				}
				return core.NewVector(part), true
			})
		}
		items := th.Seq(a[1], "partition-by", 2)
		var out []core.Value
		start := 0
		var prev core.Value
		for i, x := range items {
			k := th.Call1(a[0], x)
			if i > 0 && !core.Equal(k, prev) {
				out = append(out, core.NewVector(items[start:i:i]))
				start = i
			}
			prev = k
		}
		if start < len(items) {
			out = append(out, core.NewVector(items[start:len(items):len(items)]))
		}
		return th.MakeVector(out)
	}).doc("groups of consecutive items with the same f result").ref(RefSeq).hof(1)
	r.Add("dedupe", 1, 1, func(th *core.Thread, a []core.Value) core.Value {
		if s, ok := a[0].(*core.LazySeq); ok {
			return lazyEach(s, func(th *core.Thread, i int, x core.Value) (core.Value, bool) {
				if i == 0 {
					return x, true
				}
				prev, _ := s.Nth(th, i-1)
				return x, !core.Equal(x, prev)
			})
		}
		items := th.Seq(a[0], "dedupe", 1)
		out := make([]core.Value, 0, len(items))
		for i, x := range items {
			th.Tick()
			if i == 0 || !core.Equal(x, items[i-1]) {
				out = append(out, x)
			}
		}
		return th.MakeVector(out)
	}).doc("the items without consecutive duplicates")
	r.Add("merge-with", 1, -1, func(th *core.Thread, a []core.Value) core.Value {
		f := a[0]
		if len(a) > 1 && a[1] != nil {
			if _, ok := core.AsMap(a[1]); !ok {
				return mergeWithInto(th, f, a[1], a[2:])
			}
		}
		var acc *core.Map
		for i, mv := range a[1:] {
			if mv == nil {
				continue
			}
			m, ok := core.AsMap(mv)
			if !ok {
				th.TypeError("merge-with", "map", mv, i+2)
			}
			if acc == nil {
				acc = m
				continue
			}
			for _, e := range m.Entries() {
				if old, found := acc.Get(e.Key); found {
					acc = acc.Assoc(e.Key, th.Call2(f, old, e.Val))
				} else {
					th.Tick()
					acc = acc.Assoc(e.Key, e.Val)
				}
			}
		}
		if acc == nil {
			return nil
		}
		return acc
	}).doc("the maps merged; values of a repeated key combined with f").ref(refMaps)
	r.Add("update-keys", 2, 2, func(th *core.Thread, a []core.Value) core.Value {
		if a[0] == nil {
			return core.EmptyMap
		}
		if v, ok := a[0].(*core.Vector); ok {
			// a vector is associative by index: its keys are the indexes
			items := v.Items()
			th.AllocSlots(2 * len(items))
			b := core.NewMapBuilder(len(items))
			for i, x := range items {
				b.Set(th.Call1(a[1], core.Int(int64(i))), x)
			}
			return b.Build()
		}
		m, ok := core.AsMap(a[0])
		if !ok {
			th.TypeError("update-keys", "map", a[0], 1)
		}
		es := m.Entries()
		th.AllocSlots(2 * len(es))
		b := core.NewMapBuilder(len(es))
		for _, e := range es {
			b.Set(th.Call1(a[1], e.Key), e.Val)
		}
		return b.Build()
	}).doc("a map with f applied to every key").ref(refMaps).hof(2)
	r.Add("reduce-kv", 3, 3, func(th *core.Thread, a []core.Value) core.Value {
		f, acc := a[0], a[1]
		call := func(k, v core.Value) bool {
			mark := th.Sp
			args := th.Alloca(3)
			args[0], args[1], args[2] = acc, k, v
			acc = th.CallArgs(f, args)
			th.Sp = mark
			if r, ok := acc.(*core.Reduced); ok {
				acc = r.Val
				return false
			}
			return true
		}
		switch c := core.MapValue(a[2]).(type) {
		case nil:
		case *core.Map:
			c.Each(call)
		case *core.Vector:
			for i, v := range c.Items() {
				if !call(core.Int(int64(i)), v) {
					break
				}
			}
		default:
			th.TypeError("reduce-kv", "a map or vector", a[2], 3)
		}
		return acc
	}).doc("folds a map with f of the accumulator, each key and value").ref(RefSeq)
	r.Add("hash-map", 0, -1, func(th *core.Thread, a []core.Value) core.Value {
		if len(a)%2 != 0 {
			th.Raise(core.KindArity, "hash-map expects an even number of args, got %d", len(a))
		}
		th.AllocSlots(len(a))
		b := core.NewMapBuilder(len(a) / 2)
		for i := 0; i < len(a); i += 2 {
			th.Tick()
			b.Set(a[i], a[i+1])
		}
		return b.Build()
	}).doc("a map of the key-value arguments").ref(refMaps).pure()
	r.alias("array-map", "hash-map")
	r.Add("list", 0, -1, func(th *core.Thread, a []core.Value) core.Value {
		return th.MakeVector(append([]core.Value(nil), a...))
	}).doc("a sequence of the arguments").pure()
	r.Add("empty", 1, 1, func(th *core.Thread, a []core.Value) core.Value {
		switch a[0].(type) {
		case *core.Vector, *core.LazySeq:
			return core.EmptyVector
		case *core.Map, core.HostMap:
			if m, ok := a[0].(*core.Map); ok && m.Ord {
				return core.OrdEmpty(m)
			}
			return core.EmptyMap
		case *core.Set:
			if s := a[0].(*core.Set); s.M.Ord {
				return &core.Set{M: core.OrdEmpty(s.M)}
			}
			return core.EmptySet
		}
		return nil
	}).doc("an empty collection of the same kind (a sorted-map-by or sorted-set-by keeps its comparator)")
	r.Add("peek", 1, 1, func(th *core.Thread, a []core.Value) core.Value {
		switch c := a[0].(type) {
		case nil:
			return nil
		case *core.Vector:
			if c.Len() == 0 {
				return nil
			}
			return c.At(c.Len() - 1)
		}
		th.TypeError("peek", "vector", a[0], 1)
		return nil
	}).doc("the last item of a vector")
	r.Add("pop", 1, 1, func(th *core.Thread, a []core.Value) core.Value {
		switch c := a[0].(type) {
		case nil:
			return nil
		case *core.Vector:
			n := c.Len()
			if n == 0 {
				th.Raise(core.KindValue, "pop: can't pop an empty vector")
			}
			if n == 1 {
				return core.EmptyVector
			}
			return core.NewVector(c.Items()[: n-1 : n-1])
		}
		th.TypeError("pop", "vector", a[0], 1)
		return nil
	}).doc("a vector without its last item")
	r.Add("disj", 1, -1, func(th *core.Thread, a []core.Value) core.Value {
		switch s := a[0].(type) {
		case nil:
			return nil
		case *core.Set:
			if s.M.Ord {
				return &core.Set{M: core.OrdRemove(th, s.M, a[1:])}
			}
			for _, x := range a[1:] {
				th.Tick()
				s = s.Disj(x)
			}
			return s
		}
		th.TypeError("disj", "set", a[0], 1)
		return nil
	}).doc("a set without the items").ref(RefSets)
	r.Add("int?", 1, 1, func(th *core.Thread, a []core.Value) core.Value { _, ok := a[0].(int64); return ok }).
		doc("true for integers").pure()
	r.Add("float?", 1, 1, func(th *core.Thread, a []core.Value) core.Value { _, ok := a[0].(float64); return ok }).
		doc("true for floats").pure()
	r.Add("decimal?", 1, 1, func(th *core.Thread, a []core.Value) core.Value { return false }).
		doc("false: there are no BigDecimals (floats are float?)").pure()
	r.Add("ratio?", 1, 1, func(th *core.Thread, a []core.Value) core.Value { return false }).
		doc("false: there are no ratios (an inexact division gives a float)").pure()
	r.Add("true?", 1, 1, func(th *core.Thread, a []core.Value) core.Value { return a[0] == true }).
		doc("true for true only").pure()
	r.Add("false?", 1, 1, func(th *core.Thread, a []core.Value) core.Value { return a[0] == false }).
		doc("true for false only").pure()
	r.Add("fn?", 1, 1, func(th *core.Thread, a []core.Value) core.Value {
		return isFn(a[0])
	}).doc("true for functions")
	r.Add("trampoline", 1, -1, func(th *core.Thread, a []core.Value) core.Value {
		v := th.Call(a[0], a[1:]...)
		for isFn(v) {
			th.Tick()
			v = th.Call(v)
		}
		return v
	}).doc("calls f with the arguments, then each function it returns with none, until it returns a value that is not a function (mutual recursion without growing the stack)")
	r.Add("memoize", 1, 1, func(th *core.Thread, a []core.Value) core.Value {
		m := &memo{f: a[0]}
		return &core.Builtin{Name: "memoize", MinArgs: 0, MaxArgs: -1, Fn: m.call}
	}).doc("a function that calls f once for each distinct list of arguments (by =) and answers again from what it kept")
	r.Add("ifn?", 1, 1, func(th *core.Thread, a []core.Value) core.Value {
		switch a[0].(type) {
		case *core.Closure, *core.Builtin, *core.Keyword, *core.Map, core.HostMap, *core.Set, *core.Vector:
			return true
		}
		return false
	}).doc("true for anything callable: functions, keywords, maps, sets, vectors")
}

// splitHead is [head rest] of coll: head its first items, at most limit
// of them (limit < 0: no limit) and, with keep, only while keep accepts
// them; a lazy coll is realised only as far as the head and rest stays
// lazy.
func splitHead(th *core.Thread, name string, coll core.Value, limit int64, keep func(x core.Value) bool) core.Value {
	var head []core.Value
	var rest core.Value = core.EmptyVector
	more := func(i int) bool { return limit < 0 || int64(i) < limit }
	if s, ok := coll.(*core.LazySeq); ok {
		for i := 0; more(i); i++ {
			x, ok := s.Nth(th, i)
			if !ok || (keep != nil && !keep(x)) {
				break
			}
			head = append(head, x)
		}
		rest = dropLazy(s, len(head))
	} else {
		items := th.Seq(coll, name, 2)
		k := 0
		for k < len(items) && more(k) && (keep == nil || keep(items[k])) {
			k++
		}
		head = items[:k:k]
		if k < len(items) {
			rest = core.NewVector(items[k:len(items):len(items)])
		}
	}
	return th.MakeVector([]core.Value{sliceVec(head), rest})
}

// dropLazy returns the lazy seq s without its first n items.
func dropLazy(s *core.LazySeq, n int) *core.LazySeq {
	i := n
	return core.NewLazySeq(func(th *core.Thread) (core.Value, bool) {
		v, ok := s.Nth(th, i)
		if ok {
			i++
		}
		return v, ok
	})
}

// seqCursor returns item i of coll (ok=false past the end), realising a
// lazy seq only as far as asked.
func seqCursor(th *core.Thread, coll core.Value, fn string, argN int) func(i int) (core.Value, bool) {
	if s, ok := coll.(*core.LazySeq); ok {
		return func(i int) (core.Value, bool) { return s.Nth(th, i) }
	}
	items := th.Seq(coll, fn, argN)
	return func(i int) (core.Value, bool) {
		if i < len(items) {
			return items[i], true
		}
		return nil, false
	}
}

// keepEach is keep / keep-indexed: the non-nil results of fn(index, item),
// lazily when coll is a lazy seq (it may be infinite), else as a vector.
// fn gets the thread that realises the item (a lazy seq may be realised by
// another run's thread than the one that built it).
func keepEach(th *core.Thread, name string, coll core.Value, fn func(th *core.Thread, i int, x core.Value) core.Value) core.Value {
	if s, ok := coll.(*core.LazySeq); ok {
		return lazyEach(s, func(th *core.Thread, i int, x core.Value) (core.Value, bool) {
			v := fn(th, i, x)
			return v, v != nil
		})
	}
	var out []core.Value
	items := th.SeqItems(coll, name, 2)
	for i := range items.Len() {
		if v := fn(th, i, items.At(i)); v != nil {
			out = append(out, v)
		}
	}
	return th.MakeVector(out)
}

// mergeWithInto is merge-with whose first collection is not a map, as
// Clojure: alone it is the result as is ((merge-with + "ab") is "ab");
// a vector takes the maps' entries by index, combining a present index
// with f ((merge-with + [1 2] {1 10}) is [1 12]).
func mergeWithInto(th *core.Thread, f, acc core.Value, maps []core.Value) core.Value {
	for i, mv := range maps {
		if mv == nil {
			continue
		}
		m, ok := core.AsMap(mv)
		if !ok {
			th.TypeError("merge-with", "map", mv, i+3)
		}
		v, ok := acc.(*core.Vector)
		if !ok {
			th.TypeError("merge-with", "map", acc, 2)
		}
		for _, e := range m.Entries() {
			th.Tick()
			if k, ok := e.Key.(int64); ok && k >= 0 && k < int64(v.Len()) {
				acc = assocOne(th, "merge-with", acc, k, th.Call2(f, v.At(int(k)), e.Val))
			} else {
				acc = assocOne(th, "merge-with", acc, e.Key, e.Val)
			}
			v = acc.(*core.Vector)
		}
	}
	return acc
}

// isFn reports whether v is a function (fn?): a closure or a builtin, not
// a keyword, map or set that can be called.
func isFn(v core.Value) bool {
	switch v.(type) {
	case *core.Closure, *core.Builtin:
		return true
	}
	return false
}

// memo is a memoized function's cache: the argument lists f was called
// with (keys, as vectors) and what it returned for each (vals, by the
// key's position). Branches of pmap may share it.
type memo struct {
	f    core.Value
	mu   sync.Mutex
	keys ValueSet
	vals []core.Value
}

// call answers args from the cache, or calls f and keeps its result. f
// runs outside the lock: two branches asking for the same new arguments
// at once may both call it, and the first result kept is the one
// returned to both afterwards (Clojure's memoize calls f as freely).
func (m *memo) call(th *core.Thread, args []core.Value) core.Value {
	key := &core.Vector{Slots: append([]core.Value(nil), args...)}
	h := core.HashValue(key)
	m.mu.Lock()
	i := m.keys.Index(key, h)
	var v core.Value
	if i >= 0 {
		v = m.vals[i]
	}
	m.mu.Unlock()
	if i >= 0 {
		th.Tick()
		return v
	}
	v = th.Call(m.f, args...)
	m.mu.Lock()
	defer m.mu.Unlock()
	if i, added := m.keys.find(key); !added {
		return m.vals[i]
	}
	th.AllocSlots(len(args) + 2)
	m.vals = append(m.vals, v)
	return v
}
