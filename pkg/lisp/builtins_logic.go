package lisp

import (
	"math"
	"unicode/utf8"
)

// registerLogic registers the type and number predicates, boolean,
// identity, type and compare. (not, = and the comparisons are core.)
func registerLogic(r *registry) {
	r.add("boolean", 1, 1, func(th *Thread, a []Value) Value { return Truthy(a[0]) }).
		doc("true for truthy values, false for nil and false").pure()
	r.add("identity", 1, 1, func(th *Thread, a []Value) Value { return a[0] }).
		doc("its argument").ref(refLogic).pure()
	r.add("nil?", 1, 1, func(th *Thread, a []Value) Value { return a[0] == nil }).
		doc("true for nil").ref(refPred).pure()
	r.add("some?", 1, 1, func(th *Thread, a []Value) Value { return a[0] != nil }).
		doc("true for anything but nil").ref(refPred).pure()
	r.add("number?", 1, 1, func(th *Thread, a []Value) Value {
		switch a[0].(type) {
		case int64, float64:
			return true
		}
		return false
	}).doc("true for integers and floats").ref(refPred).pure()
	r.add("string?", 1, 1, func(th *Thread, a []Value) Value { _, ok := a[0].(string); return ok }).
		doc("true for strings").ref(refPred).pure()
	r.add("map?", 1, 1, func(th *Thread, a []Value) Value {
		switch a[0].(type) {
		case *Map, hostMap:
			return true
		}
		return false
	}).
		doc("true for maps").ref(refPred).pure()
	r.add("vector?", 1, 1, func(th *Thread, a []Value) Value { _, ok := a[0].(*Vector); return ok }).
		doc("true for vectors").ref(refPred).pure()
	r.add("boolean?", 1, 1, func(th *Thread, a []Value) Value { _, ok := a[0].(bool); return ok }).
		doc("true for true and false").ref(refPred).pure()
	r.add("keyword?", 1, 1, func(th *Thread, a []Value) Value { _, ok := a[0].(*Keyword); return ok }).
		doc("true for keywords").ref(refPred).pure()
	r.add("char?", 1, 1, func(th *Thread, a []Value) Value {
		s, ok := a[0].(string)
		return ok && s != "" && utf8.RuneCountInString(s) == 1
	}).doc("true for one-character strings")
	r.add("coll?", 1, 1, func(th *Thread, a []Value) Value {
		switch a[0].(type) {
		case *Vector, *Map, hostMap, *Set, *LazySeq:
			return true
		}
		return false
	}).doc("true for vectors, maps, sets and sequences").ref(refPred).pure()
	sequential := func(th *Thread, a []Value) Value {
		switch a[0].(type) {
		case *Vector, *LazySeq:
			return true
		}
		return false
	}
	r.add("sequential?", 1, 1, sequential).
		doc("true for vectors and sequences")
	r.add("seq?", 1, 1, sequential).
		doc("true for vectors and sequences")
	r.add("list?", 1, 1, sequential).
		doc("true for vectors and sequences")
	r.add("nat-int?", 1, 1, func(th *Thread, a []Value) Value { n, ok := a[0].(int64); return ok && n >= 0 }).
		doc("true for integers >= 0")
	r.add("pos-int?", 1, 1, func(th *Thread, a []Value) Value { n, ok := a[0].(int64); return ok && n > 0 }).
		doc("true for integers > 0")
	r.add("neg-int?", 1, 1, func(th *Thread, a []Value) Value { n, ok := a[0].(int64); return ok && n < 0 }).
		doc("true for integers < 0")
	r.add("any?", 1, 1, func(th *Thread, a []Value) Value { return true }).
		doc("true for any argument")
	r.add("integer?", 1, 1, func(th *Thread, a []Value) Value { _, ok := a[0].(int64); return ok }).
		doc("true for integers")
	r.add("double?", 1, 1, func(th *Thread, a []Value) Value { _, ok := a[0].(float64); return ok }).
		doc("true for floats")
	r.add("NaN?", 1, 1, func(th *Thread, a []Value) Value {
		_, f, _ := th.Num("NaN?", a[0], 1)
		return math.IsNaN(f)
	}).doc("true for NaN")
	r.add("infinite?", 1, 1, func(th *Thread, a []Value) Value {
		_, f, _ := th.Num("infinite?", a[0], 1)
		return math.IsInf(f, 0)
	}).doc("true for positive or negative infinity")
	r.alias("Double/isNaN", "NaN?")
	r.alias("Double/isInfinite", "infinite?")
	r.add("type", 1, 1, func(th *Thread, a []Value) Value { return th.Keyword(typeKeyword(a[0])) }).
		doc("a keyword naming the value's type")
	r.add("zero?", 1, 1, func(th *Thread, a []Value) Value { return signTest(a[0], func(c int) bool { return c == 0 }) }).
		doc("true for zero").ref(refPred).pure().owns(1)
	r.add("pos?", 1, 1, func(th *Thread, a []Value) Value { return signTest(a[0], func(c int) bool { return c > 0 }) }).
		doc("true for numbers above zero").ref(refPred).pure().owns(1)
	r.add("neg?", 1, 1, func(th *Thread, a []Value) Value { return signTest(a[0], func(c int) bool { return c < 0 }) }).
		doc("true for numbers below zero").ref(refPred).pure().owns(1)
	r.add("even?", 1, 1, func(th *Thread, a []Value) Value { return parity(th, "even?", a[0]) == 0 }).
		doc("true for even integers").ref(refPred).pure().owns(1)
	r.add("odd?", 1, 1, func(th *Thread, a []Value) Value { return parity(th, "odd?", a[0]) != 0 }).
		doc("true for odd integers").ref(refPred).pure().owns(1)
	r.add("compare", 2, 2, func(th *Thread, a []Value) Value {
		c, ok := Compare(a[0], a[1])
		if !ok {
			th.Raise(KindType, "compare: cannot compare %s with %s", preview(a[0]), preview(a[1]))
		}
		return Int(int64(c))
	}).doc("-1, 0 or 1 as x sorts before, with or after y").ref(refLogic).pure()
	r.add("associative?", 1, 1, func(th *Thread, a []Value) Value {
		switch a[0].(type) {
		case *Map, hostMap, *Vector:
			return true
		}
		return false
	}).doc("true for maps and vectors (assoc works on them)").pure()
	r.add("seqable?", 1, 1, func(th *Thread, a []Value) Value {
		switch a[0].(type) {
		case nil, string, *Vector, *Map, hostMap, *Set, *LazySeq:
			return true
		}
		return false
	}).doc("true for nil, strings and collections (seq works on them)").pure()
	r.add("indexed?", 1, 1, func(th *Thread, a []Value) Value { _, ok := a[0].(*Vector); return ok }).
		doc("true for vectors (nth is constant time)").pure()
	r.add("counted?", 1, 1, func(th *Thread, a []Value) Value {
		switch a[0].(type) {
		case *Map, hostMap, *Vector, *Set:
			return true
		}
		return false
	}).doc("true for vectors, maps and sets (count is constant time)").pure()
	r.add("reversible?", 1, 1, func(th *Thread, a []Value) Value { _, ok := a[0].(*Vector); return ok }).
		doc("true for vectors (rseq works on them)").pure()
	r.add("sorted?", 1, 1, func(th *Thread, a []Value) Value {
		switch a[0].(type) {
		case *Map, hostMap, *Set:
			return true
		}
		return false
	}).doc("true for maps and sets: every map and set is kept in key order").pure()
	r.add("rational?", 1, 1, func(th *Thread, a []Value) Value { _, ok := a[0].(int64); return ok }).
		doc("true for integers (there are no ratios)").pure()
	r.add("map-entry?", 1, 1, func(th *Thread, a []Value) Value { v, ok := a[0].(*Vector); return ok && v.Len() == 2 }).
		doc("true for a map entry: a [key value] vector").pure()
}

// typeKeyword names v's type for (type v).
func typeKeyword(v Value) string {
	switch v.(type) {
	case nil:
		return "nil"
	case bool:
		return "boolean"
	case int64, float64:
		return "number"
	case string:
		return "string"
	case *Keyword:
		return "keyword"
	case *Vector, *LazySeq:
		return "vector"
	case *Map, hostMap:
		return "map"
	case *Set:
		return "set"
	case *Regex:
		return "regex"
	case *Closure, *Builtin:
		return "function"
	case *Var:
		return "var"
	case *Reduced:
		return "reduced"
	}
	return "unknown"
}

// signTest compares a number with zero; non-numbers and NaN give false.
func signTest(v Value, ok func(int) bool) bool {
	switch x := v.(type) {
	case int64:
		switch {
		case x < 0:
			return ok(-1)
		case x > 0:
			return ok(1)
		}
		return ok(0)
	case float64:
		switch {
		case x < 0:
			return ok(-1)
		case x > 0:
			return ok(1)
		case x == 0:
			return ok(0)
		}
	}
	return false
}

// parity returns n mod 2 for an integer; anything else (floats included,
// as in Clojure) is a type error.
func parity(th *Thread, fn string, v Value) int64 {
	return th.Int(fn, v, 1) & 1
}
