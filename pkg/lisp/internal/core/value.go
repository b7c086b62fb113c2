package core

import (
	"regexp"
	"sync/atomic"
)

// Value is a PTC-Lisp value. The set of dynamic types is closed:
//
//	nil          Go nil (the only nil; a typed nil pointer never enters a value)
//	bool
//	int64
//	float64
//	string       also the reader's characters (\a is the 1-char string "a")
//	*Keyword     :name
//	*Vector      [1 2 3] (also lists: there is no list type)
//	*Map         {:a 1}
//	*Set         #{1 2}
//	*Closure     a compiled (fn ...)
//	*Builtin     a Go function
//	*Regex       #"..."
//	*LazySeq     (range), (iterate f x), (cycle v), (repeat x), (repeatedly f)
//	*Var         the result of def, prints as #'name
//	*Reduced     the wrapper made by (reduced x)
//
// Values are immutable once built and safe to share between goroutines.
type Value = any

// Keyword is an interned keyword. Keywords read from one program are
// interned per run, so they usually compare by pointer; equality falls back
// to the name, so keywords from different runs (e.g. stored in memory) are
// still equal. A keyword hashes like its name string, which lets flex lookup
// (:id against a host key "id") probe once.
type Keyword struct {
	Name  string
	hash  uint32
	cache atomic.Pointer[kwCache] // last shape lookup (a hint, any goroutine)
	slot  FieldHint               // last host record slot (a hint, see readField)
}

// NewKeyword returns a keyword that is not interned in any run.
func NewKeyword(name string) *Keyword { return &Keyword{Name: name, hash: hashString(name)} }

// Vector is an immutable vector backed by a Go slice. Appending to the
// newest version of a vector reuses spare capacity (the tail claim is an
// atomic counter shared by all vectors on the same backing array), so conj
// in a loop is amortized O(1) while older versions stay unchanged.
type Vector struct {
	Slots []Value       // the items, unless src is set
	Claim *atomic.Int64 // number of slots of the backing array in use; nil: none spare
	// src, when set, holds host records viewed as the items: their item
	// slots are made only on first need (see recsView), so a host vector
	// costs no allocation per record until a consumer needs the slots.
	src *recsView
	// Host marks vectors converted from host data (and views of them):
	// the host's memory, not counted against the program's limit.
	Host bool
}

// NewVector wraps items (which the caller must not modify afterwards).
func NewVector(items []Value) *Vector { return &Vector{Slots: items} }

// Len returns the number of items.
func (v *Vector) Len() int {
	if v.src != nil {
		return v.src.src.Len()
	}
	return len(v.Slots)
}

// Items returns the backing items; callers must not modify them. A host
// vector of records makes its item slots here on the first call.
func (v *Vector) Items() []Value {
	if v.src != nil {
		return v.src.items()
	}
	return v.Slots
}

// At returns item i (no bounds check beyond Go's).
func (v *Vector) At(i int) Value {
	if v.src != nil {
		return v.src.src.At(i)
	}
	return v.Slots[i]
}

// Sub returns v's items i to j as a vector sharing v's backing array or
// host slice (no copy, nothing charged; not marked host data: see viewOf).
func (v *Vector) Sub(i, j int) *Vector {
	if i >= j {
		return EmptyVector
	}
	items := v.ItemsOf()
	if items.hosted() {
		return &Vector{src: &recsView{src: items.slice(i, j)}}
	}
	return &Vector{Slots: items.Items[i:j:j]}
}

// OwnedRest returns a new vector of v's items from the second on, for a
// loop to own and advance in place (dropFirst). Over host records it views
// the host's slice.
func (v *Vector) OwnedRest() *Vector {
	items := v.ItemsOf()
	if items.hosted() {
		return &Vector{src: &recsView{src: items.slice(1, items.Len())}}
	}
	n := len(items.Items)
	return &Vector{Slots: items.Items[1:n:n]}
}

// DropFirst removes v's first item in place: only for a vector a loop
// owns (no other reference sees it change). A host vector of records
// keeps viewing the host's slice, one record on.
func (v *Vector) DropFirst() {
	if h := v.src; h != nil {
		if p := h.slots.Load(); p != nil {
			v.Slots, v.src = (*p)[1:len(*p):len(*p)], nil
			return
		}
		h.src = h.src.slice(1, h.src.Len())
		return
	}
	v.Slots = v.Slots[1:len(v.Slots):len(v.Slots)]
}

// Conj returns v with x appended.
func (v *Vector) Conj(x Value) *Vector {
	cur := v.Items()
	n := len(cur)
	if v.Claim != nil && n < cap(cur) && v.Claim.CompareAndSwap(int64(n), int64(n+1)) {
		items := cur[:n+1]
		items[n] = x
		return &Vector{Slots: items, Claim: v.Claim}
	}
	c := n * 2
	if c < 4 {
		c = 4
	}
	items := make([]Value, n+1, c)
	copy(items, cur)
	items[n] = x
	claim := new(atomic.Int64)
	claim.Store(int64(n + 1))
	return &Vector{Slots: items, Claim: claim}
}

// EmptyVector is shared; it is never modified.
var EmptyVector = &Vector{}

// Closure is a compiled function value with its captured variables.
type Closure struct {
	Proto *FnProto
	Caps  []Value
}

// Name returns the closure's name (empty for anonymous fns).
func (c *Closure) Name() string { return c.Proto.Name }

// BuiltinFunc is the Go signature of a builtin. args must not be retained
// or modified (it lives on the run's value stack). Errors are raised with
// the Thread's error helpers (they panic and are recovered at the run's edge).
type BuiltinFunc func(th *Thread, args []Value) Value

// Builtin is a named Go function value.
type Builtin struct {
	Name string
	// MinArgs and MaxArgs bound the argument count; MaxArgs < 0 means variadic.
	MinArgs, MaxArgs int
	Fn               BuiltinFunc
	// ArityText overrides the arity message ("2 or 3"); empty: derived.
	ArityText string
	// fn1/fn2, when set, take one or two arguments directly (opt_fastcall.go).
	Fn1 func(th *Thread, x Value) Value
	Fn2 func(th *Thread, x, y Value) Value
}

// Regex is a compiled RE2 regular expression.
type Regex struct {
	Source   string
	Compiled *regexp.Regexp
}

// Var is the result of (def name v); it prints as #'name.
type Var struct{ Name string }

// Reduced wraps a value to stop reduce early.
type Reduced struct{ Val Value }

// Truthy reports whether v counts as true: everything but nil and false.
func Truthy(v Value) bool {
	switch x := v.(type) {
	case nil:
		return false
	case bool:
		return x
	}
	return true
}

// TypeName returns the name used in error messages for v's type.
func TypeName(v Value) string {
	switch v.(type) {
	case nil:
		return "nil"
	case bool:
		return "boolean"
	case int64:
		return "integer"
	case float64:
		return "float"
	case string:
		return "string"
	case *Keyword:
		return "keyword"
	case *Vector:
		return "vector"
	case *Map, HostMap:
		return "map"
	case *Set:
		return "set"
	case *Closure, *Builtin:
		return "function"
	case *Regex:
		return "regex"
	case *LazySeq:
		return "lazy sequence"
	case *Var:
		return "var"
	case *Reduced:
		return "reduced"
	}
	return "unknown"
}

// small-int cache: boxing these into an interface does not allocate.
const smallIntMax = 1024

var smallInts = func() [smallIntMax + 129]Value {
	var a [smallIntMax + 129]Value
	for i := range a {
		a[i] = int64(i - 128)
	}
	return a
}()

// Int boxes n, without allocating for small values.
func Int(n int64) Value {
	if n >= -128 && n <= smallIntMax {
		return smallInts[n+128]
	}
	return n
}
