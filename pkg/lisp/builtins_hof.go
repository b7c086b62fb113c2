package lisp

// registerHOF registers the function builders (partial, comp, ...), the
// higher-order collection builtins that are not core, and a few more
// collection and type functions. Functions built here are *Builtin values
// that capture copies of their arguments.
func registerHOF(r *registry) {
	r.add("partial", 1, -1, func(th *Thread, a []Value) Value {
		f := a[0]
		bound := append([]Value(nil), a[1:]...)
		return &Builtin{Name: "partial", MinArgs: 0, MaxArgs: -1, Fn: func(th *Thread, args []Value) Value {
			mark := th.sp
			all := th.alloca(len(bound) + len(args))
			copy(all, bound)
			copy(all[len(bound):], args)
			v := th.call(f, all)
			th.sp = mark
			return v
		}}
	}).doc("f with leading arguments fixed").ref(refLogic).folds()
	r.add("comp", 0, -1, func(th *Thread, a []Value) Value {
		fns := append([]Value(nil), a...)
		return &Builtin{Name: "comp", MinArgs: 0, MaxArgs: -1, Fn: func(th *Thread, args []Value) Value {
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
	r.add("complement", 1, 1, func(th *Thread, a []Value) Value {
		f := a[0]
		return &Builtin{Name: "complement", MinArgs: 0, MaxArgs: -1, Fn: func(th *Thread, args []Value) Value {
			return !Truthy(th.Call(f, args...))
		}}
	}).doc("a function returning the opposite truth of f").ref(refLogic).hof(1).folds()
	r.add("comparator", 1, 1, func(th *Thread, a []Value) Value {
		pred := a[0]
		return &Builtin{Name: "comparator", MinArgs: 2, MaxArgs: 2, Fn: func(th *Thread, args []Value) Value {
			switch {
			case Truthy(th.Call2(pred, args[0], args[1])):
				return int64(-1)
			case Truthy(th.Call2(pred, args[1], args[0])):
				return int64(1)
			}
			return int64(0)
		}}
	}).doc("a 3-way comparator (-1, 0, 1) from a predicate meaning \"before\"").hof(1).folds()
	r.add("constantly", 1, 1, func(th *Thread, a []Value) Value {
		x := a[0]
		return &Builtin{Name: "constantly", MinArgs: 0, MaxArgs: -1, Fn: func(*Thread, []Value) Value { return x }}
	}).doc("a function always returning x").ref(refLogic).folds()
	r.add("some-fn", 1, -1, func(th *Thread, a []Value) Value {
		preds := append([]Value(nil), a...)
		return &Builtin{Name: "some-fn", MinArgs: 0, MaxArgs: -1, Fn: func(th *Thread, args []Value) Value {
			var last Value
			for _, x := range args {
				for _, p := range preds {
					if last = th.Call1(p, x); Truthy(last) {
						return last
					}
				}
			}
			return last // the last falsy result, as Clojure's or
		}}
	}).doc("a function returning the first truthy result of the predicates").folds()
	r.add("every-pred", 1, -1, func(th *Thread, a []Value) Value {
		preds := append([]Value(nil), a...)
		return &Builtin{Name: "every-pred", MinArgs: 0, MaxArgs: -1, Fn: func(th *Thread, args []Value) Value {
			for _, x := range args {
				for _, p := range preds {
					if !Truthy(th.Call1(p, x)) {
						return false
					}
				}
			}
			return true
		}}
	}).doc("a function true when every predicate holds for every argument").folds()
	r.add("keep", 2, 2, func(th *Thread, a []Value) Value {
		f := a[0]
		return keepEach(th, "keep", a[1], func(th *Thread, _ int, x Value) Value { return th.Call1(f, x) })
	}).doc("the non-nil results of f on each item").ref(refSeq).hof(1)
	r.add("keep-indexed", 2, 2, func(th *Thread, a []Value) Value {
		f := a[0]
		return keepEach(th, "keep-indexed", a[1], func(th *Thread, i int, x Value) Value { return th.Call2(f, Int(int64(i)), x) })
	}).doc("the non-nil results of f on each index and item").hof(1)
	r.add("zipmap", 2, 2, func(th *Thread, a []Value) Value {
		// either side may be infinite: walk both in step
		keys, vals := seqCursor(th, a[0], "zipmap", 1), seqCursor(th, a[1], "zipmap", 2)
		b := newMapBuilder(0)
		for i := 0; ; i++ {
			k, ok := keys(i)
			if !ok {
				break
			}
			v, ok := vals(i)
			if !ok {
				break
			}
			th.tick()
			th.allocSlots(2)
			b.set(k, v)
		}
		return b.build()
	}).doc("a map from the keys to the values, pairwise").ref(refMaps).pure()
	r.add("not-every?", 2, 2, func(th *Thread, a []Value) Value {
		all := true
		th.Each(a[1], "not-every?", 2, func(x Value) bool {
			all = Truthy(th.Call1(a[0], x))
			return all
		})
		return !all
	}).doc("true when pred fails for some item")
	r.add("subvec", 2, 3, func(th *Thread, a []Value) Value {
		v, ok := a[0].(*Vector)
		if !ok {
			th.TypeError("subvec", "vector", a[0], 1)
		}
		start := th.Index("subvec", a[1], 2)
		end := int64(v.Len())
		if len(a) == 3 {
			end = th.Index("subvec", a[2], 3)
		}
		if start < 0 || end > int64(v.Len()) || start > end {
			th.Raise(KindValue, "subvec: indexes %d..%d out of bounds for vector of %d items", start, end, v.Len())
		}
		if start == end {
			return emptyVector
		}
		return NewVector(v.Items()[start:end:end])
	}).doc("the items of a vector from start (to end)")
	r.add("split-at", 2, 2, func(th *Thread, a []Value) Value {
		return splitHead(th, "split-at", a[1], max(0, th.Count("split-at", a[0], 1)), nil)
	}).doc("[(take n coll) (drop n coll)]")
	r.add("split-with", 2, 2, func(th *Thread, a []Value) Value {
		return splitHead(th, "split-with", a[1], -1, func(x Value) bool { return Truthy(th.Call1(a[0], x)) })
	}).doc("[(take-while pred coll) (drop-while pred coll)]")
	r.add("partition-by", 2, 2, func(th *Thread, a []Value) Value {
		if s, ok := a[1].(*LazySeq); ok {
			f, i := a[0], 0
			return NewLazySeq(func(th *Thread) (Value, bool) {
				x, ok := s.nth(th, i)
				if !ok {
					return nil, false
				}
				k := th.Call1(f, x)
				part := []Value{x}
				for i++; ; i++ {
					y, ok := s.nth(th, i)
					if !ok || !Equal(th.Call1(f, y), k) {
						break
					}
					th.allocSlots(1)
					part = append(part, y)
				}
				return NewVector(part), true
			})
		}
		items := th.Seq(a[1], "partition-by", 2)
		var out []Value
		start := 0
		var prev Value
		for i, x := range items {
			k := th.Call1(a[0], x)
			if i > 0 && !Equal(k, prev) {
				out = append(out, NewVector(items[start:i:i]))
				start = i
			}
			prev = k
		}
		if start < len(items) {
			out = append(out, NewVector(items[start:len(items):len(items)]))
		}
		return th.MakeVector(out)
	}).doc("groups of consecutive items with the same f result").ref(refSeq).hof(1)
	r.add("dedupe", 1, 1, func(th *Thread, a []Value) Value {
		if s, ok := a[0].(*LazySeq); ok {
			return lazyEach(s, func(th *Thread, i int, x Value) (Value, bool) {
				if i == 0 {
					return x, true
				}
				prev, _ := s.nth(th, i-1)
				return x, !Equal(x, prev)
			})
		}
		items := th.Seq(a[0], "dedupe", 1)
		out := make([]Value, 0, len(items))
		for i, x := range items {
			th.tick()
			if i == 0 || !Equal(x, items[i-1]) {
				out = append(out, x)
			}
		}
		return th.MakeVector(out)
	}).doc("the items without consecutive duplicates")
	r.add("merge-with", 1, -1, func(th *Thread, a []Value) Value {
		f := a[0]
		if len(a) > 1 && a[1] != nil {
			if _, ok := asMap(a[1]); !ok {
				return mergeWithInto(th, f, a[1], a[2:])
			}
		}
		var acc *Map
		for i, mv := range a[1:] {
			if mv == nil {
				continue
			}
			m, ok := asMap(mv)
			if !ok {
				th.TypeError("merge-with", "map", mv, i+2)
			}
			if acc == nil {
				acc = m
				continue
			}
			for _, e := range m.entries() {
				if old, found := acc.Get(e.key); found {
					acc = acc.Assoc(e.key, th.Call2(f, old, e.val))
				} else {
					th.tick()
					acc = acc.Assoc(e.key, e.val)
				}
			}
		}
		if acc == nil {
			return nil
		}
		return acc
	}).doc("the maps merged; values of a repeated key combined with f").ref(refMaps)
	r.add("update-keys", 2, 2, func(th *Thread, a []Value) Value {
		if a[0] == nil {
			return emptyMap
		}
		if v, ok := a[0].(*Vector); ok {
			// a vector is associative by index: its keys are the indexes
			items := v.Items()
			th.allocSlots(2 * len(items))
			b := newMapBuilder(len(items))
			for i, x := range items {
				b.set(th.Call1(a[1], Int(int64(i))), x)
			}
			return b.build()
		}
		m, ok := asMap(a[0])
		if !ok {
			th.TypeError("update-keys", "map", a[0], 1)
		}
		es := m.entries()
		th.allocSlots(2 * len(es))
		b := newMapBuilder(len(es))
		for _, e := range es {
			b.set(th.Call1(a[1], e.key), e.val)
		}
		return b.build()
	}).doc("a map with f applied to every key").ref(refMaps).hof(2)
	r.add("reduce-kv", 3, 3, func(th *Thread, a []Value) Value {
		f, acc := a[0], a[1]
		call := func(k, v Value) bool {
			mark := th.sp
			args := th.alloca(3)
			args[0], args[1], args[2] = acc, k, v
			acc = th.call(f, args)
			th.sp = mark
			if r, ok := acc.(*Reduced); ok {
				acc = r.Val
				return false
			}
			return true
		}
		switch c := mapValue(a[2]).(type) {
		case nil:
		case *Map:
			c.Each(call)
		case *Vector:
			for i, v := range c.Items() {
				if !call(Int(int64(i)), v) {
					break
				}
			}
		default:
			th.TypeError("reduce-kv", "a map or vector", a[2], 3)
		}
		return acc
	}).doc("folds a map with f of the accumulator, each key and value").ref(refSeq)
	r.add("hash-map", 0, -1, func(th *Thread, a []Value) Value {
		if len(a)%2 != 0 {
			th.Raise(KindArity, "hash-map expects an even number of args, got %d", len(a))
		}
		th.allocSlots(len(a))
		b := newMapBuilder(len(a) / 2)
		for i := 0; i < len(a); i += 2 {
			th.tick()
			b.set(a[i], a[i+1])
		}
		return b.build()
	}).doc("a map of the key-value arguments").ref(refMaps).pure()
	r.alias("array-map", "hash-map")
	r.add("list", 0, -1, func(th *Thread, a []Value) Value {
		return th.MakeVector(append([]Value(nil), a...))
	}).doc("a sequence of the arguments").pure()
	r.add("empty", 1, 1, func(th *Thread, a []Value) Value {
		switch a[0].(type) {
		case *Vector, *LazySeq:
			return emptyVector
		case *Map, hostMap:
			if m, ok := a[0].(*Map); ok && m.ord {
				return ordEmpty(m)
			}
			return emptyMap
		case *Set:
			if s := a[0].(*Set); s.m.ord {
				return &Set{m: ordEmpty(s.m)}
			}
			return emptySet
		}
		return nil
	}).doc("an empty collection of the same kind (a sorted-map-by or sorted-set-by keeps its comparator)")
	r.add("peek", 1, 1, func(th *Thread, a []Value) Value {
		switch c := a[0].(type) {
		case nil:
			return nil
		case *Vector:
			if c.Len() == 0 {
				return nil
			}
			return c.At(c.Len() - 1)
		}
		th.TypeError("peek", "vector", a[0], 1)
		return nil
	}).doc("the last item of a vector")
	r.add("pop", 1, 1, func(th *Thread, a []Value) Value {
		switch c := a[0].(type) {
		case nil:
			return nil
		case *Vector:
			n := c.Len()
			if n == 0 {
				th.Raise(KindValue, "pop: can't pop an empty vector")
			}
			if n == 1 {
				return emptyVector
			}
			return NewVector(c.Items()[: n-1 : n-1])
		}
		th.TypeError("pop", "vector", a[0], 1)
		return nil
	}).doc("a vector without its last item")
	r.add("disj", 1, -1, func(th *Thread, a []Value) Value {
		switch s := a[0].(type) {
		case nil:
			return nil
		case *Set:
			if s.m.ord {
				return &Set{m: ordRemove(th, s.m, a[1:])}
			}
			for _, x := range a[1:] {
				th.tick()
				s = s.Disj(x)
			}
			return s
		}
		th.TypeError("disj", "set", a[0], 1)
		return nil
	}).doc("a set without the items").ref(refSets)
	r.add("int?", 1, 1, func(th *Thread, a []Value) Value { _, ok := a[0].(int64); return ok }).
		doc("true for integers").pure()
	r.add("float?", 1, 1, func(th *Thread, a []Value) Value { _, ok := a[0].(float64); return ok }).
		doc("true for floats").pure()
	r.add("decimal?", 1, 1, func(th *Thread, a []Value) Value { return false }).
		doc("false: there are no BigDecimals (floats are float?)").pure()
	r.add("ratio?", 1, 1, func(th *Thread, a []Value) Value { return false }).
		doc("false: there are no ratios (an inexact division gives a float)").pure()
	r.add("true?", 1, 1, func(th *Thread, a []Value) Value { return a[0] == true }).
		doc("true for true only").pure()
	r.add("false?", 1, 1, func(th *Thread, a []Value) Value { return a[0] == false }).
		doc("true for false only").pure()
	r.add("fn?", 1, 1, func(th *Thread, a []Value) Value {
		switch a[0].(type) {
		case *Closure, *Builtin:
			return true
		}
		return false
	}).doc("true for functions")
	r.add("ifn?", 1, 1, func(th *Thread, a []Value) Value {
		switch a[0].(type) {
		case *Closure, *Builtin, *Keyword, *Map, hostMap, *Set, *Vector:
			return true
		}
		return false
	}).doc("true for anything callable: functions, keywords, maps, sets, vectors")
}

// sliceVec wraps items (possibly empty) as a vector without copying.
func sliceVec(items []Value) *Vector {
	if len(items) == 0 {
		return emptyVector
	}
	return NewVector(items)
}

// splitHead is [head rest] of coll: head its first items, at most limit
// of them (limit < 0: no limit) and, with keep, only while keep accepts
// them; a lazy coll is realised only as far as the head and rest stays
// lazy.
func splitHead(th *Thread, name string, coll Value, limit int64, keep func(x Value) bool) Value {
	var head []Value
	var rest Value = emptyVector
	more := func(i int) bool { return limit < 0 || int64(i) < limit }
	if s, ok := coll.(*LazySeq); ok {
		for i := 0; more(i); i++ {
			x, ok := s.nth(th, i)
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
			rest = NewVector(items[k:len(items):len(items)])
		}
	}
	return th.MakeVector([]Value{sliceVec(head), rest})
}

// dropLazy returns the lazy seq s without its first n items.
func dropLazy(s *LazySeq, n int) *LazySeq {
	i := n
	return NewLazySeq(func(th *Thread) (Value, bool) {
		v, ok := s.nth(th, i)
		if ok {
			i++
		}
		return v, ok
	})
}

// seqCursor returns item i of coll (ok=false past the end), realising a
// lazy seq only as far as asked.
func seqCursor(th *Thread, coll Value, fn string, argN int) func(i int) (Value, bool) {
	if s, ok := coll.(*LazySeq); ok {
		return func(i int) (Value, bool) { return s.nth(th, i) }
	}
	items := th.Seq(coll, fn, argN)
	return func(i int) (Value, bool) {
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
func keepEach(th *Thread, name string, coll Value, fn func(th *Thread, i int, x Value) Value) Value {
	if s, ok := coll.(*LazySeq); ok {
		return lazyEach(s, func(th *Thread, i int, x Value) (Value, bool) {
			v := fn(th, i, x)
			return v, v != nil
		})
	}
	var out []Value
	items := th.seqItems(coll, name, 2)
	for i := range items.len() {
		if v := fn(th, i, items.at(i)); v != nil {
			out = append(out, v)
		}
	}
	return th.MakeVector(out)
}

// mergeWithInto is merge-with whose first collection is not a map, as
// Clojure: alone it is the result as is ((merge-with + "ab") is "ab");
// a vector takes the maps' entries by index, combining a present index
// with f ((merge-with + [1 2] {1 10}) is [1 12]).
func mergeWithInto(th *Thread, f, acc Value, maps []Value) Value {
	for i, mv := range maps {
		if mv == nil {
			continue
		}
		m, ok := asMap(mv)
		if !ok {
			th.TypeError("merge-with", "map", mv, i+3)
		}
		v, ok := acc.(*Vector)
		if !ok {
			th.TypeError("merge-with", "map", acc, 2)
		}
		for _, e := range m.entries() {
			th.tick()
			if k, ok := e.key.(int64); ok && k >= 0 && k < int64(v.Len()) {
				acc = assocOne(th, "merge-with", acc, k, th.Call2(f, v.At(int(k)), e.val))
			} else {
				acc = assocOne(th, "merge-with", acc, e.key, e.val)
			}
			v = acc.(*Vector)
		}
	}
	return acc
}
