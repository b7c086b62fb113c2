package lisp

import "unicode/utf8"

// registerAgg registers the aggregation builtins (sum, avg, the -by and
// -key extremes) and the predicates over collections (some, every?,
// contains?).
func registerAgg(r *registry) {
	r.add("sum", 1, 1, func(th *Thread, a []Value) Value {
		s, _ := sumOf(th, "sum", nil, a[0], 1)
		return s
	}).doc("sum of the numbers of a collection (0 when empty)").ref(refAgg).usage("(sum coll)").pure()
	r.add("avg", 1, 1, func(th *Thread, a []Value) Value {
		s, n := sumOf(th, "avg", nil, a[0], 1)
		return avgOf(s, n)
	}).doc("mean of the numbers of a collection, or nil when empty").ref(refAgg).usage("(avg coll)").pure()
	r.add("sum-by", 2, 2, func(th *Thread, a []Value) Value {
		s, _ := sumOf(th, "sum-by", a[0], a[1], 2)
		return s
	}).doc("sum of f of each item").ref(refAgg).usage("(sum-by f coll)").hof(1)
	r.add("avg-by", 2, 2, func(th *Thread, a []Value) Value {
		s, n := sumOf(th, "avg-by", a[0], a[1], 2)
		return avgOf(s, n)
	}).doc("mean of f of each item, or nil when empty").ref(refAgg).usage("(avg-by f coll)").hof(1)
	r.add("min-by", 2, -1, func(th *Thread, a []Value) Value { return extremeBy(th, "min-by", a, -1) }).
		doc("the item with the smallest f").ref(refAgg).usage("(min-by f coll)").hof(1)
	r.add("max-by", 2, -1, func(th *Thread, a []Value) Value { return extremeBy(th, "max-by", a, 1) }).
		doc("the item with the largest f").ref(refAgg).usage("(max-by f coll)").hof(1)
	r.add("max-key", 2, -1, func(th *Thread, a []Value) Value { return extremeKey(th, "max-key", a, 1) }).
		doc("the argument with the largest (k x)").ref(refAgg)
	r.add("min-key", 2, -1, func(th *Thread, a []Value) Value { return extremeKey(th, "min-key", a, -1) }).
		doc("the argument with the smallest (k x)").ref(refAgg)
	r.add("some", 2, 2, func(th *Thread, a []Value) Value {
		pred := a[0]
		var found Value
		th.Each(a[1], "some", 2, func(v Value) bool {
			if r := th.Call1(pred, v); Truthy(r) {
				found = r
				return false
			}
			return true
		})
		return found
	}).doc("the first truthy (pred x), or nil").ref(refSeq).hof(1)
	r.add("every?", 2, 2, func(th *Thread, a []Value) Value { return allMatch(th, "every?", a[0], a[1], true) }).
		doc("true when pred holds for every item").ref(refSeq).hof(1)
	r.add("not-any?", 2, 2, func(th *Thread, a []Value) Value { return allMatch(th, "not-any?", a[0], a[1], false) }).
		doc("true when pred holds for no item").ref(refSeq).hof(1)
	r.add("contains?", 2, 2, biContains).
		doc("true when a map or set has the key, or a vector the value").ref(refMaps).pure()
}

// sumOf adds the numbers of coll (through key when non-nil), skipping nil.
// Integers stay integers (overflow is an error); a float makes the sum a
// float. It returns the sum and how many numbers were added.
func sumOf(th *Thread, name string, key, coll Value, argN int) (Value, int) {
	var isum int64
	var fsum float64
	isFloat := false
	n := 0
	pos := th.pos // key fns move th.pos; errors point at this call
	items := th.seqItems(coll, name, argN)
	for i := range items.len() {
		it := items.at(i)
		v := it
		if key != nil {
			v = keyOf(th, key, it)
		} else {
			th.tick()
		}
		switch x := v.(type) {
		case nil:
			continue
		case int64:
			if isFloat {
				fsum += float64(x)
			} else {
				s := isum + x
				if (s > isum) != (x > 0) {
					th.overflow()
				}
				isum = s
			}
		case float64:
			if !isFloat {
				isFloat, fsum = true, float64(isum)
			}
			fsum += x
		default:
			th.pos = pos
			if key != nil {
				th.Raise(KindType, "%s: expected number, got %s (the key's value for item %d)", name, preview(v), n+1)
			}
			th.Raise(KindType, "%s: expected number, got %s (item %d)", name, preview(v), n+1)
		}
		n++
	}
	if isFloat {
		return fsum, n
	}
	return Int(isum), n
}

// avgOf is sum/n as a float, nil when n is 0.
func avgOf(sum Value, n int) Value {
	if n == 0 {
		return nil
	}
	switch s := sum.(type) {
	case int64:
		return float64(s) / float64(n)
	case float64:
		return s / float64(n)
	}
	return nil
}

// extremeBy implements (min-by key coll) and (max-by key x y ...): the
// item whose key is smallest/largest (first wins on a tie), skipping nil
// keys; nil when there is none. Keys compare like compare.
func extremeBy(th *Thread, name string, a []Value, dir int) Value {
	key := a[0]
	var items []Value
	if len(a) == 2 {
		switch a[1].(type) {
		case *Map, hostMap:
			items = []Value{a[1]} // (apply max-by k [m]) passes one record
		default:
			items = th.Seq(a[1], name, 2)
		}
	} else {
		items = a[1:]
	}
	var best, bestKey Value
	found := false
	pos := th.pos
	for _, it := range items {
		k := keyOf(th, key, it)
		if k == nil || isNaN(k) {
			continue
		}
		if !found {
			best, bestKey, found = it, k, true
			continue
		}
		c, ok := compareTick(th, k, bestKey)
		if !ok {
			th.pos = pos
			th.Raise(KindType, "%s: cannot compare %s with %s", name, preview(k), preview(bestKey))
		}
		if c*dir > 0 {
			best, bestKey = it, k
		}
	}
	return best
}

// extremeKey implements max-key/min-key as Clojure 1.11: (f x) must be a
// number; on a tie the last item wins.
func extremeKey(th *Thread, name string, a []Value, dir int) Value {
	f := a[0]
	best := a[1]
	if len(a) == 2 {
		return best
	}
	pos := th.pos
	bestKey := th.Call1(f, best)
	th.pos = pos
	num(th, name, bestKey, 2)
	for i := 2; i < len(a); i++ {
		k := th.Call1(f, a[i])
		th.pos = pos
		num(th, name, k, i+1)
		if c := numCmp(k, bestKey); c*dir >= 0 && !isNaN(k) {
			best, bestKey = a[i], k
		}
	}
	return best
}

// allMatch is every? (want=true) and not-any? (want=false).
func allMatch(th *Thread, name string, pred, coll Value, want bool) Value {
	res := true
	th.Each(coll, name, 2, func(v Value) bool {
		if Truthy(th.Call1(pred, v)) != want {
			res = false
			return false
		}
		return true
	})
	return res
}

func biContains(th *Thread, a []Value) Value {
	switch c := a[0].(type) {
	case nil:
		return false
	case *Map:
		_, ok := c.Get(a[1])
		return ok
	case hostMap:
		_, ok := c.get(a[1])
		return ok
	case *Set:
		return c.Has(a[1])
	case *Vector:
		// unlike Clojure, a vector tests value membership, not the index
		for _, it := range c.Items() {
			th.tick()
			if Equal(it, a[1]) {
				return true
			}
		}
		return false
	case *LazySeq:
		found := false
		th.Each(c, "contains?", 1, func(v Value) bool {
			found = Equal(v, a[1])
			return !found
		})
		return found
	case string:
		// Clojure: an index within the string (a float truncates)
		var i int64
		switch x := a[1].(type) {
		case int64:
			i = x
		case float64:
			if x != x || x <= -1 || x >= 1<<62 {
				return false
			}
			i = int64(x)
		default:
			return false
		}
		return i >= 0 && i < int64(utf8.RuneCountInString(c))
	}
	th.TypeError("contains?", "a collection", a[0], 1)
	return nil
}
