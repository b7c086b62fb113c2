package builtins

import (
	"unicode/utf8"

	"github.com/ptcfleet/ptc/pkg/lisp/internal/core"
)

// registerAgg registers the aggregation builtins (sum, avg, the -by and
// -key extremes) and the predicates over collections (some, every?,
// contains?).
func registerAgg(r *registry) {
	r.Add("sum", 1, 1, func(th *core.Thread, a []core.Value) core.Value {
		s, _ := sumOf(th, "sum", nil, a[0], 1)
		return s
	}).doc("sum of the numbers of a collection (0 when empty)").ref(refAgg).usage("(sum coll)").pure()
	r.Add("avg", 1, 1, func(th *core.Thread, a []core.Value) core.Value {
		s, n := sumOf(th, "avg", nil, a[0], 1)
		return avgOf(s, n)
	}).doc("mean of the numbers of a collection, or nil when empty").ref(refAgg).usage("(avg coll)").pure()
	r.Add("sum-by", 2, 2, func(th *core.Thread, a []core.Value) core.Value {
		s, _ := sumOf(th, "sum-by", a[0], a[1], 2)
		return s
	}).doc("sum of f of each item").ref(refAgg).usage("(sum-by f coll)").hof(1)
	r.Add("avg-by", 2, 2, func(th *core.Thread, a []core.Value) core.Value {
		s, n := sumOf(th, "avg-by", a[0], a[1], 2)
		return avgOf(s, n)
	}).doc("mean of f of each item, or nil when empty").ref(refAgg).usage("(avg-by f coll)").hof(1)
	r.Add("min-by", 2, -1, func(th *core.Thread, a []core.Value) core.Value { return extremeBy(th, "min-by", a, -1) }).
		doc("the item with the smallest f").ref(refAgg).usage("(min-by f coll)").hof(1)
	r.Add("max-by", 2, -1, func(th *core.Thread, a []core.Value) core.Value { return extremeBy(th, "max-by", a, 1) }).
		doc("the item with the largest f").ref(refAgg).usage("(max-by f coll)").hof(1)
	r.Add("max-key", 2, -1, func(th *core.Thread, a []core.Value) core.Value { return extremeKey(th, "max-key", a, 1) }).
		doc("the argument with the largest (k x)").ref(refAgg)
	r.Add("min-key", 2, -1, func(th *core.Thread, a []core.Value) core.Value { return extremeKey(th, "min-key", a, -1) }).
		doc("the argument with the smallest (k x)").ref(refAgg)
	r.Add("some", 2, 2, func(th *core.Thread, a []core.Value) core.Value {
		pred := a[0]
		var found core.Value
		th.Each(a[1], "some", 2, func(v core.Value) bool {
			if r := th.Call1(pred, v); core.Truthy(r) {
				found = r
				return false
			}
			return true
		})
		return found
	}).doc("the first truthy (pred x), or nil").ref(RefSeq).hof(1)
	r.Add("every?", 2, 2, func(th *core.Thread, a []core.Value) core.Value { return allMatch(th, "every?", a[0], a[1], true) }).
		doc("true when pred holds for every item").ref(RefSeq).hof(1)
	r.Add("not-any?", 2, 2, func(th *core.Thread, a []core.Value) core.Value { return allMatch(th, "not-any?", a[0], a[1], false) }).
		doc("true when pred holds for no item").ref(RefSeq).hof(1)
	r.Add("contains?", 2, 2, biContains).
		doc("true when a map or set has the key, or a vector the value").ref(refMaps).pure()
}

// sumOf adds the numbers of coll (through key when non-nil), skipping nil.
// Integers stay integers (overflow is an error); a float makes the sum a
// float. It returns the sum and how many numbers were added.
func sumOf(th *core.Thread, name string, key, coll core.Value, argN int) (core.Value, int) {
	var isum int64
	var fsum float64
	isFloat := false
	n := 0
	pos := th.CallPos // key fns move th.pos; errors point at this call
	items := th.SeqItems(coll, name, argN)
	for i := range items.Len() {
		it := items.At(i)
		v := it
		if key != nil {
			v = KeyOf(th, key, it)
		} else {
			th.Tick()
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
					th.Overflow()
				}
				isum = s
			}
		case float64:
			if !isFloat {
				isFloat, fsum = true, float64(isum)
			}
			fsum += x
		default:
			th.CallPos = pos
			if key != nil {
				th.Raise(core.KindType, "%s: expected number, got %s (the key's value for item %d)", name, core.ErrorPreview(v), n+1)
			}
			th.Raise(core.KindType, "%s: expected number, got %s (item %d)", name, core.ErrorPreview(v), n+1)
		}
		n++
	}
	if isFloat {
		return fsum, n
	}
	return core.Int(isum), n
}

// avgOf is sum/n as a float, nil when n is 0.
func avgOf(sum core.Value, n int) core.Value {
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
func extremeBy(th *core.Thread, name string, a []core.Value, dir int) core.Value {
	key := a[0]
	var items []core.Value
	if len(a) == 2 {
		switch a[1].(type) {
		case *core.Map, core.HostMap:
			items = []core.Value{a[1]} // (apply max-by k [m]) passes one record
		default:
			items = th.Seq(a[1], name, 2)
		}
	} else {
		items = a[1:]
	}
	var best, bestKey core.Value
	found := false
	pos := th.CallPos
	for _, it := range items {
		k := KeyOf(th, key, it)
		if k == nil || core.IsNaN(k) {
			continue
		}
		if !found {
			best, bestKey, found = it, k, true
			continue
		}
		c, ok := core.CompareTick(th, k, bestKey)
		if !ok {
			th.CallPos = pos
			th.Raise(core.KindType, "%s: cannot compare %s with %s", name, core.ErrorPreview(k), core.ErrorPreview(bestKey))
		}
		if c*dir > 0 {
			best, bestKey = it, k
		}
	}
	return best
}

// extremeKey implements max-key/min-key as Clojure 1.11: (f x) must be a
// number; on a tie the last item wins.
func extremeKey(th *core.Thread, name string, a []core.Value, dir int) core.Value {
	f := a[0]
	best := a[1]
	if len(a) == 2 {
		return best
	}
	pos := th.CallPos
	bestKey := th.Call1(f, best)
	th.CallPos = pos
	num(th, name, bestKey, 2)
	for i := 2; i < len(a); i++ {
		k := th.Call1(f, a[i])
		th.CallPos = pos
		num(th, name, k, i+1)
		if c := core.NumCmp(k, bestKey); c*dir >= 0 && !core.IsNaN(k) {
			best, bestKey = a[i], k
		}
	}
	return best
}

// allMatch is every? (want=true) and not-any? (want=false).
func allMatch(th *core.Thread, name string, pred, coll core.Value, want bool) core.Value {
	res := true
	th.Each(coll, name, 2, func(v core.Value) bool {
		if core.Truthy(th.Call1(pred, v)) != want {
			res = false
			return false
		}
		return true
	})
	return res
}

func biContains(th *core.Thread, a []core.Value) core.Value {
	switch c := a[0].(type) {
	case nil:
		return false
	case *core.Map:
		_, ok := c.Get(a[1])
		return ok
	case core.HostMap:
		_, ok := c.Get(a[1])
		return ok
	case *core.Set:
		return c.Has(a[1])
	case *core.Vector:
		// unlike Clojure, a vector tests value membership, not the index
		for _, it := range c.Items() {
			th.Tick()
			if core.Equal(it, a[1]) {
				return true
			}
		}
		return false
	case *core.LazySeq:
		found := false
		th.Each(c, "contains?", 1, func(v core.Value) bool {
			found = core.Equal(v, a[1])
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
