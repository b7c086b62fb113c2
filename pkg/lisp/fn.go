package lisp

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// node is a compiled expression: it evaluates in a frame.
type node func(fr *frame) Value

// frame is the activation of a compiled function (or of the top level).
type frame struct {
	th    *Thread
	slots []Value
	caps  []Value
	self  *Closure
}

type recurMark struct{}

// recurSentinel is returned (not panicked) by a recur node; recur is only
// allowed in tail position, so it flows straight back to its loop or fn.
var recurSentinel Value = &recurMark{}

// binder stores a value into a pattern's slots.
type binder func(fr *frame, v Value)

type fnProto struct {
	// linearAcc: the first param is used only as the map argument of
	// assoc/update/dissoc in tail position (or returned), so reduce may
	// pass a transient map (see Map.edit).
	linearAcc bool
	name      string
	arities   []*arity
	// direct[n] is the arity taking exactly n args when its params are
	// plain symbols (callers then write args straight into its slots).
	direct     [3]*arity
	paramNames []string
	capRefs    []capRef
}

type arity struct {
	nfixed   int
	variadic bool
	nslots   int
	body     node
	params   []binder // nfixed binders, plus the rest binder when variadic
	simple   bool     // params are plain symbols in slots 0..n
}

func (p *fnProto) pick(n int) *arity {
	for _, a := range p.arities {
		if n == a.nfixed || (a.variadic && n >= a.nfixed) {
			return a
		}
	}
	return nil
}

func (p *fnProto) displayName() string {
	if p.name != "" {
		return p.name
	}
	return "fn"
}

func (p *fnProto) arityText() string {
	var parts []string
	for _, a := range p.arities {
		if a.variadic {
			parts = append(parts, fmt.Sprintf("%d or more", a.nfixed))
		} else {
			parts = append(parts, strconv.Itoa(a.nfixed))
		}
	}
	s := strings.Join(parts, " or ")
	if s == "1" {
		return "1 arg"
	}
	return s + " args"
}

func (a *arity) bindParams(fr *frame, args []Value) {
	if a.simple {
		slots := fr.slots[:a.nfixed]
		for i := range slots { // element stores beat typedslicecopy for a few args
			slots[i] = args[i]
		}
		if a.variadic {
			fr.slots[a.nfixed] = restVector(fr.th, args[a.nfixed:])
		}
		return
	}
	for i := 0; i < a.nfixed; i++ {
		a.params[i](fr, args[i])
	}
	if a.variadic {
		a.params[a.nfixed](fr, restVector(fr.th, args[a.nfixed:]))
	}
}

// bindRecur binds recur values: like bindParams, except that a variadic
// arity receives its rest parameter as one value (Clojure semantics).
func (a *arity) bindRecur(fr *frame, args []Value) {
	if !a.variadic {
		a.bindParams(fr, args)
		return
	}
	for i := 0; i < a.nfixed; i++ {
		if a.simple {
			fr.slots[i] = args[i]
		} else {
			a.params[i](fr, args[i])
		}
	}
	rest := args[a.nfixed]
	if a.simple {
		fr.slots[a.nfixed] = rest
	} else {
		a.params[a.nfixed](fr, rest)
	}
}

func restVector(th *Thread, rest []Value) Value {
	if len(rest) == 0 {
		return nil
	}
	th.allocSlots(len(rest))
	return &Vector{slots: slices.Clone(rest)}
}

type capRef struct {
	kind int
	idx  int
}
