package builtins

import (
	"math"
	"unicode/utf8"

	"github.com/ptcfleet/ptc/pkg/lisp/internal/core"
)

// registerLogic registers the type and number predicates, boolean,
// identity, type and compare. (not, = and the comparisons are core.)
func registerLogic(r *registry) {
	r.Add("boolean", 1, 1, func(th *core.Thread, a []core.Value) core.Value { return core.Truthy(a[0]) }).
		doc("true for truthy values, false for nil and false").pure()
	r.Add("identity", 1, 1, func(th *core.Thread, a []core.Value) core.Value { return a[0] }).
		doc("its argument").ref(refLogic).pure()
	r.Add("nil?", 1, 1, func(th *core.Thread, a []core.Value) core.Value { return a[0] == nil }).
		doc("true for nil").ref(refPred).pure()
	r.Add("some?", 1, 1, func(th *core.Thread, a []core.Value) core.Value { return a[0] != nil }).
		doc("true for anything but nil").ref(refPred).pure()
	r.Add("number?", 1, 1, func(th *core.Thread, a []core.Value) core.Value {
		switch a[0].(type) {
		case int64, float64:
			return true
		}
		return false
	}).doc("true for integers and floats").ref(refPred).pure()
	r.Add("string?", 1, 1, func(th *core.Thread, a []core.Value) core.Value { _, ok := a[0].(string); return ok }).
		doc("true for strings").ref(refPred).pure()
	r.Add("map?", 1, 1, func(th *core.Thread, a []core.Value) core.Value {
		switch a[0].(type) {
		case *core.Map, core.HostMap:
			return true
		}
		return false
	}).
		doc("true for maps").ref(refPred).pure()
	r.Add("vector?", 1, 1, func(th *core.Thread, a []core.Value) core.Value { _, ok := a[0].(*core.Vector); return ok }).
		doc("true for vectors").ref(refPred).pure()
	r.Add("boolean?", 1, 1, func(th *core.Thread, a []core.Value) core.Value { _, ok := a[0].(bool); return ok }).
		doc("true for true and false").ref(refPred).pure()
	r.Add("keyword?", 1, 1, func(th *core.Thread, a []core.Value) core.Value { _, ok := a[0].(*core.Keyword); return ok }).
		doc("true for keywords").ref(refPred).pure()
	// Keywords are the only identifiers (there are no symbol values), so
	// the ident predicates are the keyword ones.
	kwPred := func(qualified, simple bool) core.BuiltinFunc {
		return func(th *core.Thread, a []core.Value) core.Value {
			k, ok := a[0].(*core.Keyword)
			if !ok {
				return false
			}
			ns := keywordNamespace(k) != ""
			return ns && qualified || !ns && simple
		}
	}
	r.Add("ident?", 1, 1, kwPred(true, true)).doc("true for keywords (there are no symbol values)").pure()
	r.Add("simple-keyword?", 1, 1, kwPred(false, true)).doc("true for a keyword without a namespace").pure()
	r.Add("qualified-keyword?", 1, 1, kwPred(true, false)).doc("true for a keyword with a namespace").pure()
	r.Add("simple-ident?", 1, 1, kwPred(false, true)).doc("true for a keyword without a namespace").pure()
	r.Add("qualified-ident?", 1, 1, kwPred(true, false)).doc("true for a keyword with a namespace").pure()
	r.Add("char?", 1, 1, func(th *core.Thread, a []core.Value) core.Value {
		s, ok := a[0].(string)
		return ok && s != "" && utf8.RuneCountInString(s) == 1
	}).doc("true for one-character strings")
	r.Add("coll?", 1, 1, func(th *core.Thread, a []core.Value) core.Value {
		switch a[0].(type) {
		case *core.Vector, *core.Map, core.HostMap, *core.Set, *core.LazySeq:
			return true
		}
		return false
	}).doc("true for vectors, maps, sets and sequences").ref(refPred).pure()
	sequential := func(th *core.Thread, a []core.Value) core.Value {
		switch a[0].(type) {
		case *core.Vector, *core.LazySeq:
			return true
		}
		return false
	}
	r.Add("sequential?", 1, 1, sequential).
		doc("true for vectors and sequences")
	r.Add("seq?", 1, 1, sequential).
		doc("true for vectors and sequences")
	r.Add("list?", 1, 1, sequential).
		doc("true for vectors and sequences")
	r.Add("nat-int?", 1, 1, func(th *core.Thread, a []core.Value) core.Value { n, ok := a[0].(int64); return ok && n >= 0 }).
		doc("true for integers >= 0")
	r.Add("pos-int?", 1, 1, func(th *core.Thread, a []core.Value) core.Value { n, ok := a[0].(int64); return ok && n > 0 }).
		doc("true for integers > 0")
	r.Add("neg-int?", 1, 1, func(th *core.Thread, a []core.Value) core.Value { n, ok := a[0].(int64); return ok && n < 0 }).
		doc("true for integers < 0")
	r.Add("any?", 1, 1, func(th *core.Thread, a []core.Value) core.Value { return true }).
		doc("true for any argument")
	r.Add("integer?", 1, 1, func(th *core.Thread, a []core.Value) core.Value { _, ok := a[0].(int64); return ok }).
		doc("true for integers")
	r.Add("double?", 1, 1, func(th *core.Thread, a []core.Value) core.Value { _, ok := a[0].(float64); return ok }).
		doc("true for floats")
	r.Add("NaN?", 1, 1, func(th *core.Thread, a []core.Value) core.Value {
		_, f, _ := th.Num("NaN?", a[0], 1)
		return math.IsNaN(f)
	}).doc("true for NaN")
	r.Add("infinite?", 1, 1, func(th *core.Thread, a []core.Value) core.Value {
		_, f, _ := th.Num("infinite?", a[0], 1)
		return math.IsInf(f, 0)
	}).doc("true for positive or negative infinity")
	r.alias("Double/isNaN", "NaN?")
	r.alias("Double/isInfinite", "infinite?")
	r.Add("type", 1, 1, func(th *core.Thread, a []core.Value) core.Value { return th.Keyword(typeKeyword(a[0])) }).
		doc("a keyword naming the value's type")
	r.Add("zero?", 1, 1, func(th *core.Thread, a []core.Value) core.Value {
		return signTest(a[0], func(c int) bool { return c == 0 })
	}).
		doc("true for zero").ref(refPred).pure().owns(1)
	r.Add("pos?", 1, 1, func(th *core.Thread, a []core.Value) core.Value {
		return signTest(a[0], func(c int) bool { return c > 0 })
	}).
		doc("true for numbers above zero").ref(refPred).pure().owns(1)
	r.Add("neg?", 1, 1, func(th *core.Thread, a []core.Value) core.Value {
		return signTest(a[0], func(c int) bool { return c < 0 })
	}).
		doc("true for numbers below zero").ref(refPred).pure().owns(1)
	r.Add("even?", 1, 1, func(th *core.Thread, a []core.Value) core.Value { return parity(th, "even?", a[0]) == 0 }).
		doc("true for even integers").ref(refPred).pure().owns(1)
	r.Add("odd?", 1, 1, func(th *core.Thread, a []core.Value) core.Value { return parity(th, "odd?", a[0]) != 0 }).
		doc("true for odd integers").ref(refPred).pure().owns(1)
	r.Add("compare", 2, 2, func(th *core.Thread, a []core.Value) core.Value {
		c, ok := core.Compare(a[0], a[1])
		if !ok {
			th.Raise(core.KindType, "compare: cannot compare %s with %s", core.ErrorPreview(a[0]), core.ErrorPreview(a[1]))
		}
		return core.Int(int64(c))
	}).doc("-1, 0 or 1 as x sorts before, with or after y").ref(refLogic).pure()
	r.Add("associative?", 1, 1, func(th *core.Thread, a []core.Value) core.Value {
		switch a[0].(type) {
		case *core.Map, core.HostMap, *core.Vector:
			return true
		}
		return false
	}).doc("true for maps and vectors (assoc works on them)").pure()
	r.Add("seqable?", 1, 1, func(th *core.Thread, a []core.Value) core.Value {
		switch a[0].(type) {
		case nil, string, *core.Vector, *core.Map, core.HostMap, *core.Set, *core.LazySeq:
			return true
		}
		return false
	}).doc("true for nil, strings and collections (seq works on them)").pure()
	r.Add("indexed?", 1, 1, func(th *core.Thread, a []core.Value) core.Value { _, ok := a[0].(*core.Vector); return ok }).
		doc("true for vectors (nth is constant time)").pure()
	r.Add("counted?", 1, 1, func(th *core.Thread, a []core.Value) core.Value {
		switch a[0].(type) {
		case *core.Map, core.HostMap, *core.Vector, *core.Set:
			return true
		}
		return false
	}).doc("true for vectors, maps and sets (count is constant time)").pure()
	r.Add("reversible?", 1, 1, func(th *core.Thread, a []core.Value) core.Value { _, ok := a[0].(*core.Vector); return ok }).
		doc("true for vectors (rseq works on them)").pure()
	r.Add("sorted?", 1, 1, func(th *core.Thread, a []core.Value) core.Value {
		switch a[0].(type) {
		case *core.Map, core.HostMap, *core.Set:
			return true
		}
		return false
	}).doc("true for maps and sets: every map and set is kept in key order").pure()
	r.Add("rational?", 1, 1, func(th *core.Thread, a []core.Value) core.Value { _, ok := a[0].(int64); return ok }).
		doc("true for integers (there are no ratios)").pure()
	r.Add("map-entry?", 1, 1, func(th *core.Thread, a []core.Value) core.Value {
		v, ok := a[0].(*core.Vector)
		return ok && v.Len() == 2
	}).
		doc("true for a map entry: a [key value] vector").pure()
}

// typeKeyword names v's type for (type v).
func typeKeyword(v core.Value) string {
	switch v.(type) {
	case nil:
		return "nil"
	case bool:
		return "boolean"
	case int64, float64:
		return "number"
	case string:
		return "string"
	case *core.Keyword:
		return "keyword"
	case *core.Vector, *core.LazySeq:
		return "vector"
	case *core.Map, core.HostMap:
		return "map"
	case *core.Set:
		return "set"
	case *core.Regex:
		return "regex"
	case *core.Closure, *core.Builtin:
		return "function"
	case *core.Var:
		return "var"
	case *core.Reduced:
		return "reduced"
	}
	return "unknown"
}

// signTest compares a number with zero; non-numbers and NaN give false.
func signTest(v core.Value, ok func(int) bool) bool {
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
func parity(th *core.Thread, fn string, v core.Value) int64 {
	return th.Int(fn, v, 1) & 1
}
