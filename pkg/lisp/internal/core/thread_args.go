package core

import (
	"fmt"
	"math"
	"unicode/utf8"
)

// What builtins share on a Thread: reading numeric arguments, printing
// within the budget, and realising a value's lazy sequences deeply.

// StrOf is Str with lazy seqs realised, within the budget.
func (th *Thread) StrOf(v Value) string {
	switch x := v.(type) {
	case string:
		return x
	case nil:
		return ""
	case int64, float64, bool, *Keyword:
		return Str(x)
	case *Regex:
		return x.Source
	}
	return th.printCapped(v, true)
}

// PrOf is pr-str of v within the memory the run may still hold.
func (th *Thread) PrOf(v Value) string { return th.printCapped(v, false) }

// RealiseDeep realises lazy seqs reachable from v through vectors and map
// values (so printing and host conversion see all items; infinite ones
// run into the limits). It also bounds the expanded size of v: a value
// whose tree (counting shared substructure once per path) exceeds the
// memory limit in slots is a memory_limit error, so host conversion
// and printing of a doubled DAG cannot blow up the process.
func (th *Thread) RealiseDeep(v Value) {
	n := 0
	th.walkValue(v, &n)
}

func (th *Thread) walkValue(v Value, n *int) {
	limit := 1 << 30
	if th.MaxMem > 0 {
		limit = int(th.MaxMem / SlotBytes)
	}
	visit := func(k int) {
		*n += k
		th.Tick()
		if *n > limit {
			panic(&Error{Kind: KindMemory, Pos: th.CallPos, Msg: fmt.Sprintf("memory limit exceeded: value too large (more than %d items)", limit),
				Hint: "return or print a smaller value, e.g. (take 10 xs) or a count"})
		}
	}
	switch x := v.(type) {
	case *Vector:
		if x.FromHost {
			return // plain host data: no lazy seqs, its size is the host's
		}
	case *Map:
		if x.host {
			return
		}
	case HostMap:
		return
	}
	switch x := v.(type) {
	case *LazySeq:
		items := th.Seq(x, "print", 0)
		visit(len(items))
		for _, it := range items {
			th.walkValue(it, n)
		}
	case *Vector:
		visit(x.Len())
		for _, it := range x.Items() {
			switch it.(type) {
			case *LazySeq, *Vector, *Map, *Set:
				th.walkValue(it, n)
			}
		}
	case *Set:
		visit(x.Len())
		for _, e := range x.M.Entries() {
			switch e.Key.(type) {
			case *LazySeq, *Vector, *Map, *Set:
				th.walkValue(e.Key, n)
			}
		}
	case *Map:
		visit(x.Len())
		if !x.holdsCollections() {
			return
		}
		x.Each(func(k, val Value) bool {
			switch k.(type) {
			case *LazySeq, *Vector, *Map, *Set:
				th.walkValue(k, n)
			}
			switch val.(type) {
			case *LazySeq, *Vector, *Map, *Set:
				th.walkValue(val, n)
			}
			return true
		})
	}
}

// printCapped prints v (str or pr-str) within the remaining allocation
// budget: a huge (or exponentially shared) value is a memory_limit error.
func (th *Thread) printCapped(v Value, raw bool) string {
	th.RealiseDeep(v)
	limit := int64(1 << 30)
	if th.MaxMem > 0 {
		limit = th.MaxMem - th.Alloc
	}
	out := Sprint(v, PrintOptions{Raw: raw, MaxLen: int(limit)})
	if int64(len(out)) > limit {
		th.MemLimit()
	}
	return out
}

// Num returns v as int64 or float64 (isFloat tells which), raising
// "fn: expected number, got ... (arg n)" otherwise.
func (th *Thread) Num(fn string, v Value, argN int) (i int64, f float64, isFloat bool) {
	switch x := v.(type) {
	case int64:
		return x, float64(x), false
	case float64:
		return 0, x, true
	}
	th.TypeError(fn, "number", v, argN)
	return 0, 0, false
}

// Int returns v as int64, raising a type error for non-integers.
func (th *Thread) Int(fn string, v Value, argN int) int64 {
	if x, ok := v.(int64); ok {
		return x
	}
	th.TypeError(fn, "integer", v, argN)
	return 0
}

// Index returns an integer argument that Clojure reads as an int or long
// (an index, a count, a limit): an integer, or a float truncated toward
// zero as Clojure does ((subs "hello" 1.5) is "ello"). NaN, an infinity or
// a float beyond int64 is a type error (Clojure reads NaN as 0).
func (th *Thread) Index(fn string, v Value, argN int) int64 {
	switch x := v.(type) {
	case int64:
		return x
	case float64:
		if x == x && x > -(1<<63) && x < 1<<63 {
			return int64(x)
		}
	}
	th.TypeError(fn, "integer", v, argN)
	return 0
}

// Count returns a count argument that Clojure reads as take does (a
// count of split-at, take-nth, partition): an integer, or a float rounded
// up, as counting it down past zero does ((split-at 1.5 [1 2 3]) is
// [[1 2] [3]]). NaN or an infinity is a type error.
func (th *Thread) Count(fn string, v Value, argN int) int64 {
	if x, ok := v.(float64); ok && x == x && x > -(1<<63) && x < 1<<63 {
		return int64(math.Ceil(x))
	}
	return th.Index(fn, v, argN)
}

// Overflow ends the run with an integer overflow error.
func (th *Thread) Overflow() {
	th.Raise(KindArithmetic, "integer overflow")
}

// Println appends a println line (capped at 2000 chars + "...").
func (th *Thread) Println(line string) {
	if utf8.RuneCountInString(line) > 2000 {
		line = string([]rune(line)[:2000]) + "..."
	}
	th.AllocBytes(len(line))
	th.Prints = append(th.Prints, line)
	th.keep()
}
