package builtins

import (
	"math"
	"strings"
	"sync/atomic"
	"unicode/utf8"

	"github.com/ptcfleet/ptc/pkg/lisp/internal/core"
)

func registerCore(r *registry) {
	r.Add("+", 0, -1, biAdd).
		doc("sum of the numbers; (+) is 0").ref(RefMath).pure().owns(2)
	r.Add("-", 1, -1, biSub).
		doc("negation of one number, or the first minus the rest").ref(RefMath).pure().owns(1)
	r.Add("*", 0, -1, biMul).
		doc("product of the numbers; (*) is 1").ref(RefMath).pure().owns(2)
	r.Add("/", 1, -1, biDiv).
		doc("the first divided by the rest (integers divide exactly or give a float)").ref(RefMath).pure()
	r.Add("inc", 1, 1, func(th *core.Thread, a []core.Value) core.Value { return addNum(th, "inc", a[0], int64(1), 1) }).
		doc("x plus one").ref(RefMath).pure().owns(1)
	r.Add("dec", 1, 1, func(th *core.Thread, a []core.Value) core.Value { return addNum(th, "dec", a[0], int64(-1), 1) }).
		doc("x minus one").ref(RefMath).pure().owns(1)
	// Clojure's primed arithmetic promotes to a big integer; numbers here
	// are 64-bit, so the primed names are the plain ones, with the same
	// integer overflow error.
	r.alias("+'", "+").doc("+ (integers are 64-bit: overflow is an error)")
	r.alias("-'", "-").doc("- (integers are 64-bit: overflow is an error)")
	r.alias("*'", "*").doc("* (integers are 64-bit: overflow is an error)")
	r.alias("inc'", "inc").doc("inc (integers are 64-bit: overflow is an error)")
	r.alias("dec'", "dec").doc("dec (integers are 64-bit: overflow is an error)")
	r.Add("=", 1, -1, biEqual).
		doc("true when all arguments are equal (numbers by value across int and float)").ref(refLogic).pure().owns(1)
	r.Add("not=", 1, -1, func(th *core.Thread, a []core.Value) core.Value { return !biEqual(th, a).(bool) }).
		doc("true when some arguments differ").ref(refLogic).pure().owns(1)
	r.Add("==", 1, -1, func(th *core.Thread, a []core.Value) core.Value {
		for i := range a {
			num(th, "==", a[i], i+1)
		}
		for i := 1; i < len(a); i++ {
			if core.NumCmp(a[0], a[i]) != 0 || core.IsNaN(a[0]) || core.IsNaN(a[i]) {
				return false
			}
		}
		return true
	}).doc("true when all numbers are numerically equal").pure().owns(1)
	r.Add("<", 1, -1, cmpBuiltin("<", func(c int) bool { return c < 0 })).
		doc("true when the numbers increase").ref(refLogic).pure().owns(1)
	r.Add(">", 1, -1, cmpBuiltin(">", func(c int) bool { return c > 0 })).
		doc("true when the numbers decrease").ref(refLogic).pure().owns(1)
	r.Add("<=", 1, -1, cmpBuiltin("<=", func(c int) bool { return c <= 0 })).
		doc("true when the numbers never decrease").ref(refLogic).pure().owns(1)
	r.Add(">=", 1, -1, cmpBuiltin(">=", func(c int) bool { return c >= 0 })).
		doc("true when the numbers never increase").ref(refLogic).pure().owns(1)
	r.Add("not", 1, 1, func(th *core.Thread, a []core.Value) core.Value { return !core.Truthy(a[0]) }).
		doc("true for nil and false, else false").ref(refLogic).pure()
	r.Add("count", 1, 1, biCount).
		doc("number of items of a collection or characters of a string; 0 for nil").ref(RefSeq).pure()
	r.Add("get", 2, 3, func(th *core.Thread, a []core.Value) core.Value {
		var d core.Value
		if len(a) == 3 {
			d = a[2]
		}
		if s, ok := a[0].(string); ok {
			i, ok := a[1].(int64)
			if f, isF := a[1].(float64); isF && f > -1 && f < 1<<62 {
				i, ok = int64(f), true // Clojure truncates a float index into a string
			}
			if ok && i >= 0 {
				rs := []rune(s)
				if i < int64(len(rs)) {
					return string(rs[i])
				}
			}
			return d
		}
		return core.GetKey(a[0], a[1], d)
	}).doc("the value at a key or index, or the default (nil)").ref(refMaps).pure()
	r.Add("map", 2, -1, biMap).
		doc("applies f to each item (to items in step for several collections); a vector").ref(RefSeq).hof(1)
	r.alias("mapv", "map").
		ref(RefSeq)
	r.Add("filter", 2, 2, func(th *core.Thread, a []core.Value) core.Value { return filterImpl(th, "filter", a[0], a[1], true) }).
		doc("the items for which pred is truthy, as a vector").ref(RefSeq).hof(1)
	r.alias("filterv", "filter").
		ref(RefSeq)
	r.Add("remove", 2, 2, func(th *core.Thread, a []core.Value) core.Value { return filterImpl(th, "remove", a[0], a[1], false) }).
		doc("the items for which pred is falsy, as a vector").ref(RefSeq).hof(1)
	r.Add("reduce", 2, 3, biReduce).
		doc("folds the collection with f, from init or the first item; stops at reduced").ref(RefSeq).hof(1)
	r.Add("reduced", 1, 1, func(th *core.Thread, a []core.Value) core.Value { return &core.Reduced{Val: a[0]} }).
		doc("wraps a value so that reduce stops with it").ref(RefSeq)
	r.Add("reduced?", 1, 1, func(th *core.Thread, a []core.Value) core.Value { _, ok := a[0].(*core.Reduced); return ok }).
		doc("true for a value wrapped by reduced")
	r.Add("ensure-reduced", 1, 1, func(th *core.Thread, a []core.Value) core.Value {
		if r, ok := a[0].(*core.Reduced); ok {
			return r
		}
		return &core.Reduced{Val: a[0]}
	}).doc("x if it is reduced, else (reduced x)")
	r.Add("unreduced", 1, 1, func(th *core.Thread, a []core.Value) core.Value {
		if r, ok := a[0].(*core.Reduced); ok {
			return r.Val
		}
		return a[0]
	}).doc("the value wrapped by reduced, or x itself")
	r.Add("apply", 2, -1, biApply).
		doc("calls f with the leading arguments followed by the items of the last").ref(RefSeq)
	r.Add("return", 0, 1, func(th *core.Thread, a []core.Value) core.Value {
		var v core.Value
		if len(a) == 1 {
			v = a[0]
		}
		panic(&core.ReturnSignal{Ret: true, Val: v, Pos: th.CallPos})
	}).doc("ends the program with the value (the mission's answer)")
	r.Add("fail", 0, 1, func(th *core.Thread, a []core.Value) core.Value {
		var v core.Value
		if len(a) == 1 {
			v = a[0]
		}
		panic(&core.ReturnSignal{Val: v, Pos: th.CallPos})
	}).doc("ends the program with an error value or message")
	r.Add("println", 0, -1, func(th *core.Thread, a []core.Value) core.Value {
		th.Println(printArgs(a, true, th.Host.Scrub))
		return nil
	}).doc("prints the arguments (as str does) and a newline to the program's output").ref(RefStrings)
	r.Add("print", 0, -1, func(th *core.Thread, a []core.Value) core.Value {
		th.Println(printArgs(a, true, th.Host.Scrub))
		return nil
	}).doc("prints the arguments (as str does) to the program's output")
	r.Add("prn", 0, -1, func(th *core.Thread, a []core.Value) core.Value {
		th.Println(printArgs(a, false, th.Host.Scrub))
		return nil
	}).doc("prints the arguments readably (as pr-str does) and a newline")
	r.Add("str", 0, -1, func(th *core.Thread, a []core.Value) core.Value {
		if len(a) == 1 {
			if s, ok := a[0].(string); ok {
				return s
			}
		}
		var b strings.Builder
		for _, v := range a {
			b.WriteString(th.StrOf(v))
			if th.MaxMem > 0 && int64(b.Len()) > th.MaxMem {
				th.MemLimit()
			}
		}
		return th.MakeString(b.String())
	}).doc("concatenates the printed arguments; nil prints as nothing").ref(RefStrings).pure()
	r.Add("pr-str", 0, -1, func(th *core.Thread, a []core.Value) core.Value {
		parts := make([]string, len(a))
		for i, v := range a {
			parts[i] = th.PrOf(v)
		}
		return th.MakeString(strings.Join(parts, " "))
	}).doc("the readable printed form of the arguments, space-separated").ref(RefStrings)
	r.Add("print-str", 0, -1, func(th *core.Thread, a []core.Value) core.Value {
		return th.MakeString(printStr(th, a, true))
	}).doc("the line println prints for the arguments, as a string without the newline")
	r.Add("println-str", 0, -1, func(th *core.Thread, a []core.Value) core.Value {
		return th.MakeString(printStr(th, a, true) + "\n")
	}).doc("the line println prints for the arguments, as a string with the newline")
	r.Add("prn-str", 0, -1, func(th *core.Thread, a []core.Value) core.Value {
		return th.MakeString(printStr(th, a, false) + "\n")
	}).doc("the readable printed form of the arguments (as pr-str) and a newline")
	r.Add("memory/put", 2, 2, func(th *core.Thread, a []core.Value) core.Value {
		th.SetMem(memName(th, "memory/put", a[0]), a[1])
		return a[1]
	}).doc("stores a value in memory under a name; returns the value")
	r.Add("memory/get", 1, 2, func(th *core.Thread, a []core.Value) core.Value {
		if v, ok := th.Mem[memName(th, "memory/get", a[0])]; ok {
			return v
		}
		if len(a) == 2 {
			return a[1]
		}
		return nil
	}).doc("the memory value of a name, or the default")
	r.Add("juxt", 1, -1, func(th *core.Thread, a []core.Value) core.Value {
		fns := append([]core.Value(nil), a...)
		return &core.Builtin{Name: "juxt", MinArgs: 0, MaxArgs: -1, Fn: func(th *core.Thread, args []core.Value) core.Value {
			out := make([]core.Value, len(fns))
			for i, f := range fns {
				out[i] = th.Call(f, args...)
			}
			return th.MakeVector(out)
		}}
	}).doc("a function returning the vector of each function applied to its arguments").ref(RefSeq).folds()
	r.Add("all-of", 0, -1, predCombinator("all-of", true, true)).
		doc("a predicate true when every given predicate holds").ref(refLogic).usage("(all-of pred ...)")
	r.Add("any-of", 0, -1, predCombinator("any-of", false, false)).
		doc("a predicate true when some given predicate holds").ref(refLogic).usage("(any-of pred ...)")
	r.Add("none-of", 0, -1, predCombinator("none-of", false, true)).
		doc("a predicate true when no given predicate holds").ref(refLogic).usage("(none-of pred ...)")
	r.Add("pmap", 2, -1, biPmap).
		doc("map run in parallel (over one or more collections, as map); results in input order").ref(RefSeq)
	r.Add("pcalls", 0, -1, biPcalls).
		doc("calls the functions in parallel; the vector of their results").ref(RefSeq)
}

// predCombinator builds all-of (stopOn=false result), any-of, none-of.
func predCombinator(name string, all, empty bool) core.BuiltinFunc {
	return func(th *core.Thread, a []core.Value) core.Value {
		preds := append([]core.Value(nil), a...)
		return &core.Builtin{Name: name, MinArgs: 1, MaxArgs: 1, Fn: func(th *core.Thread, args []core.Value) core.Value {
			if len(preds) == 0 {
				return empty
			}
			for _, p := range preds {
				t := core.Truthy(th.Call1(p, args[0]))
				switch name {
				case "all-of":
					if !t {
						return false
					}
				case "any-of":
					if t {
						return true
					}
				case "none-of":
					if t {
						return false
					}
				}
			}
			return name != "any-of"
		}}
	}
}

func memName(th *core.Thread, fn string, k core.Value) string {
	switch x := k.(type) {
	case *core.Keyword:
		return x.Name
	case string:
		return x
	}
	th.TypeError(fn, "a keyword or string name", k, 1)
	return ""
}

// realiseArgs realises lazy seq arguments (for =).
func realiseArgs(th *core.Thread, a []core.Value) {
	for _, v := range a {
		if s, ok := v.(*core.LazySeq); ok {
			th.Seq(s, "=", 0)
		}
	}
}

// printArgs renders println (raw) or prn arguments as one line; scrub
// (Options.Scrub, may be nil) rewrites every string before it is printed.
func printArgs(a []core.Value, raw bool, scrub func(string, bool) string) string {
	parts := make([]string, len(a))
	for i, v := range a {
		if raw {
			if s, ok := printText(v); ok {
				if scrub != nil && v != nil {
					s = scrub(s, false)
				}
				parts[i] = s
				continue
			}
		}
		parts[i] = core.Sprint(v, core.PrintOptions{MaxLen: 4000, Scrub: scrub})
	}
	return strings.Join(parts, " ")
}

// printStr is the line println (raw) or prn would print for a, as a
// value (print-str, println-str, prn-str): not cut and not scrubbed,
// as pr-str, and bounded by the program's memory.
func printStr(th *core.Thread, a []core.Value, raw bool) string {
	parts := make([]string, len(a))
	for i, v := range a {
		if raw {
			if s, ok := printText(v); ok {
				parts[i] = s
				continue
			}
		}
		parts[i] = th.PrOf(v)
	}
	return strings.Join(parts, " ")
}

// printText is the text println prints for v without pr-str: a string as
// it is, a vector of one-character strings joined (the language
// reference's rule for (take n s)), nil as "nil".
func printText(v core.Value) (string, bool) {
	switch x := v.(type) {
	case nil:
		return "nil", true
	case string:
		return x, true
	case *core.Vector:
		if x.Len() > 0 && allChars(x.Items()) {
			var b strings.Builder
			for _, it := range x.Items() {
				b.WriteString(it.(string))
			}
			return b.String(), true
		}
	}
	return "", false
}

func allChars(items []core.Value) bool {
	for _, it := range items {
		s, ok := it.(string)
		if !ok || len([]rune(s)) != 1 {
			return false
		}
	}
	return true
}

// num checks that v is a number, raising a type error otherwise.
func num(th *core.Thread, fn string, v core.Value, argN int) core.Value {
	switch v.(type) {
	case int64, float64:
		return v
	}
	th.TypeError(fn, "number", v, argN)
	return nil
}

func addNum(th *core.Thread, fn string, a, b core.Value, argN int) core.Value {
	switch x := a.(type) {
	case int64:
		switch y := b.(type) {
		case int64:
			s := x + y
			if (s > x) != (y > 0) {
				th.Overflow()
			}
			return th.BoxInt(s)
		case float64:
			return th.BoxFloat(float64(x) + y)
		}
	case float64:
		switch y := b.(type) {
		case float64:
			return th.BoxFloat(x + y)
		case int64:
			return th.BoxFloat(x + float64(y))
		}
	}
	_, xf, _ := th.Num(fn, a, argN)
	_, yf, _ := th.Num(fn, b, argN+1)
	return th.BoxFloat(xf + yf)
}

func biAdd(th *core.Thread, a []core.Value) core.Value {
	switch len(a) {
	case 0:
		return core.Int(0)
	case 1:
		return num(th, "+", a[0], 1)
	}
	acc := addNum(th, "+", a[0], a[1], 1)
	for i := 2; i < len(a); i++ {
		acc = addNum(th, "+", acc, a[i], i)
	}
	return acc
}

func subNum(th *core.Thread, a, b core.Value, argN int) core.Value {
	if x, ok := a.(int64); ok {
		if y, ok := b.(int64); ok {
			s := x - y
			if (s < x) != (y > 0) {
				th.Overflow()
			}
			return th.BoxInt(s)
		}
	}
	_, xf, _ := th.Num("-", a, argN)
	_, yf, _ := th.Num("-", b, argN+1)
	return xf - yf
}

func biSub(th *core.Thread, a []core.Value) core.Value {
	if len(a) == 1 {
		// Negation, not 0 - x: (- 0.0) is -0.0 as in Clojure.
		x := num(th, "-", a[0], 1)
		if f, ok := x.(float64); ok {
			return -f
		}
		return subNum(th, core.Int(0), x, 1)
	}
	acc := subNum(th, a[0], a[1], 1)
	for i := 2; i < len(a); i++ {
		acc = subNum(th, acc, a[i], i)
	}
	return acc
}

func mulNum(th *core.Thread, a, b core.Value, argN int) core.Value {
	if x, ok := a.(int64); ok {
		if y, ok := b.(int64); ok {
			if x == 0 || y == 0 {
				return core.Int(0)
			}
			p := x * y
			if p/y != x || (x == -1 && y == math.MinInt64) || (y == -1 && x == math.MinInt64) {
				th.Overflow()
			}
			return core.Int(p)
		}
	}
	_, xf, _ := th.Num("*", a, argN)
	_, yf, _ := th.Num("*", b, argN+1)
	return xf * yf
}

func biMul(th *core.Thread, a []core.Value) core.Value {
	switch len(a) {
	case 0:
		return core.Int(1)
	case 1:
		return num(th, "*", a[0], 1)
	}
	acc := mulNum(th, a[0], a[1], 1)
	for i := 2; i < len(a); i++ {
		acc = mulNum(th, acc, a[i], i)
	}
	return acc
}

func divNum(th *core.Thread, a, b core.Value, argN int) core.Value {
	if x, ok := a.(int64); ok {
		if y, ok := b.(int64); ok {
			if y == 0 {
				th.Raise(core.KindArithmetic, "division by zero")
			}
			if x%y == 0 {
				if x == math.MinInt64 && y == -1 {
					th.Overflow()
				}
				return core.Int(x / y)
			}
			return float64(x) / float64(y)
		}
	}
	_, xf, _ := th.Num("/", a, argN)
	_, yf, _ := th.Num("/", b, argN+1)
	return xf / yf
}

func biDiv(th *core.Thread, a []core.Value) core.Value {
	if len(a) == 1 {
		return divNum(th, core.Int(1), num(th, "/", a[0], 1), 1)
	}
	acc := divNum(th, a[0], a[1], 1)
	for i := 2; i < len(a); i++ {
		acc = divNum(th, acc, a[i], i)
	}
	return acc
}

// biEqual is =: true when every argument equals the first.
func biEqual(th *core.Thread, a []core.Value) core.Value {
	realiseArgs(th, a)
	for i := 1; i < len(a); i++ {
		if !core.Equal(a[0], a[i]) {
			return false
		}
	}
	return true
}

func cmpBuiltin(name string, ok func(int) bool) core.BuiltinFunc {
	return func(th *core.Thread, a []core.Value) core.Value {
		for i := range a {
			num(th, name, a[i], i+1)
		}
		for i := 0; i+1 < len(a); i++ {
			if core.IsNaN(a[i]) || core.IsNaN(a[i+1]) || !ok(core.NumCmp(a[i], a[i+1])) {
				return false
			}
		}
		return true
	}
}

func biCount(th *core.Thread, a []core.Value) core.Value {
	switch x := a[0].(type) {
	case nil:
		return core.Int(0)
	case *core.Vector:
		return core.Int(int64(x.Len()))
	case *core.Map:
		return core.Int(int64(x.Len()))
	case core.HostMap:
		return core.Int(int64(len(x.Src())))
	case *core.Set:
		return core.Int(int64(x.Len()))
	case string:
		return core.Int(int64(utf8.RuneCountInString(x)))
	case *core.LazySeq:
		if x.Stream {
			n := int64(0)
			th.Each(x, "count", 1, func(core.Value) bool { n++; return true })
			return th.BoxInt(n)
		}
		return core.Int(int64(len(th.Seq(x, "count", 1))))
	}
	th.TypeError("count", "a collection", a[0], 1)
	return nil
}

func filterImpl(th *core.Thread, name string, pred, coll core.Value, keep bool) core.Value {
	if s, ok := coll.(*core.LazySeq); ok {
		return lazyEach(s, func(th *core.Thread, _ int, x core.Value) (core.Value, bool) {
			return x, core.Truthy(th.Call1(pred, x)) == keep
		})
	}
	items := th.SeqItems(coll, name, 2)
	// one allocation of the input's size beats append growth (the spare
	// capacity is reused by conj on the result)
	out := make([]core.Value, 0, items.Len())
	lc := th.NewLoopCaller(pred, 1)
	for i := range items.Len() {
		v := items.At(i)
		if core.Truthy(lc.Call1(v)) == keep {
			out = append(out, v)
		}
	}
	lc.End()
	th.AllocSlots(len(out))
	if len(out) == 0 {
		return core.EmptyVector
	}
	claim := new(atomic.Int64)
	claim.Store(int64(len(out)))
	return &core.Vector{Slots: out, Claim: claim}
}

// TransientAcc gives a reduce whose function uses its map accumulator
// linearly (fnProto.linearAcc) a private transient copy of it, updated in
// place (Map.edit); ok tells the caller to end it on the result.
func TransientAcc(f, acc core.Value, started bool) (core.Value, bool) {
	if clo, ok := f.(*core.Closure); ok && clo.Proto.LinearAcc && started {
		if m, ok := acc.(*core.Map); ok && !m.Ord {
			return m.Transient(), true
		}
	}
	return acc, false
}

// Feeding returns the edit token of a reduce's transient accumulator
// acc, told that the reduce has n items (it sizes the map's store, see
// hashStore.fit), or nil when acc is not transient.
func Feeding(acc core.Value, transient bool, n int) *core.EditToken {
	m, ok := acc.(*core.Map)
	if !transient || !ok || m.Edit == nil {
		return nil
	}
	m.Edit.Items = n
	return m.Edit
}

// EndTransientResult ends the transient a reduce returns (the accumulator
// must not stay mutable once it leaves reduce).
func EndTransientResult(v core.Value) {
	if m, ok := v.(*core.Map); ok {
		EndTransient(m)
	}
}

func biReduce(th *core.Thread, a []core.Value) core.Value {
	f := a[0]
	var acc core.Value
	var coll core.Value
	started := false
	if len(a) == 3 {
		acc, coll, started = a[1], a[2], true
	} else {
		coll = a[1]
	}
	if b, ok := f.(*core.Builtin); ok && b.Name == "+" {
		if v, ok := sumFast(th, acc, started, coll); ok {
			return v
		}
	}
	acc, transient := TransientAcc(f, acc, started)
	if transient {
		defer func() { EndTransientResult(acc) }()
	}
	if v, ok := coll.(*core.Vector); ok && (started || v.Len() > 0) {
		// the common case without the per-item callback of Each
		items, first := v.ItemsOf(), 0
		if !started {
			acc, first = items.At(0), 1
		}
		lc := th.NewLoopCaller(f, 2)
		tok := Feeding(acc, transient, items.Len()-first)
		// over host records, a reducing function that can do its work
		// without its call (FnProto.RecordStep) does it on the transient
		var step func(*core.Thread, *core.Map, []map[string]any, int) (core.Value, bool)
		if clo, ok := f.(*core.Closure); ok && transient && items.Recs != nil {
			step = clo.Proto.RecordStep
		}
		for i := first; i < items.Len(); i++ {
			if tok != nil {
				tok.Done = i - first + 1
			}
			if step != nil {
				if m, ok := acc.(*core.Map); ok {
					if v, ok := lc.Step(step, m, items.Recs, i); ok {
						acc = v
						continue
					}
				}
			}
			acc = lc.Call2(acc, items.At(i))
			if r, ok := acc.(*core.Reduced); ok {
				acc = r.Val // (the deferred transient cleanup reads acc)
				break
			}
		}
		lc.End()
		return acc
	}
	done := false
	th.Each(coll, "reduce", len(a), func(v core.Value) bool {
		if !started {
			acc, started = v, true
			return true
		}
		acc = th.Call2(f, acc, v)
		if r, ok := acc.(*core.Reduced); ok {
			acc = r.Val
			done = true
			return false
		}
		return true
	})
	_ = done
	if !started {
		// no init and no items: Clojure's (f), so (reduce + nil) is 0
		return ReduceEmpty(th, f)
	}
	return acc
}

// ReduceEmpty is reduce of no items without an init value: (f). When f
// takes no zero arguments, its arity error says what to write instead.
func ReduceEmpty(th *core.Thread, f core.Value) core.Value {
	defer func() {
		if r := recover(); r != nil {
			if e, ok := r.(*core.Error); ok && e.Kind == core.KindArity && e.Hint == "" {
				e.Hint = "reduce of no items without an init value calls (f) with no arguments; give it an init value: (reduce f init coll)"
			}
			panic(r)
		}
	}()
	return th.Call(f)
}

// sumFast sums a vector of numbers without boxing intermediate results;
// ok is false when it cannot (non-vector, non-number, overflow): the
// caller then takes the general path, which reports errors precisely.
func sumFast(th *core.Thread, init core.Value, hasInit bool, coll core.Value) (core.Value, bool) {
	v, ok := coll.(*core.Vector)
	if !ok {
		return nil, false
	}
	items := v.Items()
	if !hasInit {
		if len(items) == 0 {
			return core.Int(0), true
		}
		init, items = items[0], items[1:]
	}
	var is int64
	var fs float64
	isFloat := false
	switch x := init.(type) {
	case int64:
		is = x
	case float64:
		fs, isFloat = x, true
	default:
		return nil, false
	}
	for _, it := range items {
		switch x := it.(type) {
		case int64:
			if isFloat {
				fs += float64(x)
				continue
			}
			s := is + x
			if (s > is) != (x > 0) {
				return nil, false
			}
			is = s
		case float64:
			if !isFloat {
				fs, isFloat = float64(is), true
			}
			fs += x
		default:
			return nil, false
		}
	}
	th.Steps += int64(len(items))
	th.Tick()
	if isFloat {
		return fs, true
	}
	return core.Int(is), true
}

func biApply(th *core.Thread, a []core.Value) core.Value {
	f := a[0]
	last := a[len(a)-1]
	switch last.(type) {
	case nil, string, *core.Vector, *core.Set, *core.Map, core.HostMap, *core.LazySeq:
	default:
		th.TypeError("apply", "a collection or nil as the last argument", last, len(a))
	}
	items := th.Seq(last, "apply", len(a))
	mid := a[1 : len(a)-1]
	args := make([]core.Value, 0, len(mid)+len(items))
	args = append(append(args, mid...), items...)
	return th.Call(f, args...)
}

// biPmap is (pmap f coll & colls): f over the items of the collections
// taken together, as map, up to the shortest one, each call a branch.
func biPmap(th *core.Thread, a []core.Value) core.Value {
	f := a[0]
	if len(a) == 2 {
		items := th.Seq(a[1], "pmap", 2)
		out := th.RunBranches("pmap", len(items), func(child *core.Thread, i int) core.Value {
			return child.Call1(f, items[i])
		})
		return th.MakeVector(out)
	}
	colls, n := shortestSeqs(th, "pmap", a[1:], 2)
	out := th.RunBranches("pmap", n, func(child *core.Thread, i int) core.Value {
		args := make([]core.Value, len(colls))
		for j := range colls {
			args[j] = colls[j][i]
		}
		return child.Call(f, args...)
	})
	return th.MakeVector(out)
}

func biPcalls(th *core.Thread, a []core.Value) core.Value {
	fns := append([]core.Value(nil), a...)
	out := th.RunBranches("pcalls", len(fns), func(child *core.Thread, i int) core.Value {
		return child.Call(fns[i])
	})
	return th.MakeVector(out)
}
