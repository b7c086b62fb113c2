package core

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Node is a compiled expression: it evaluates in a frame.
type Node func(fr *Frame) Value

// Frame is the activation of a compiled function (or of the top level).
type Frame struct {
	Th    *Thread
	Slots []Value
	Caps  []Value
	Self  *Closure
}

// RecurMark is the type of RecurSentinel.
type RecurMark struct{}

// RecurSentinel is returned (not panicked) by a recur node; recur is only
// allowed in tail position, so it flows straight back to its loop or fn.
var RecurSentinel Value = &RecurMark{}

// Binder stores a value into a pattern's slots.
type Binder func(fr *Frame, v Value)

// FnProto is a compiled fn form: its arities, name and captures, shared
// by every closure made from it.
type FnProto struct {
	// LinearAcc: the first param is used only as the map argument of
	// assoc/update/dissoc in tail position (or returned), so reduce may
	// pass a transient map (see Map.edit).
	LinearAcc bool
	Name      string
	Arities   []*Arity
	// direct[n] is the arity taking exactly n args when its params are
	// plain symbols (callers then write args straight into its slots).
	Direct     [3]*Arity
	ParamNames []string
	CapRefs    []CapRef
}

// Arity is one arity of a function: its parameters, their binders and
// its compiled body.
type Arity struct {
	Nfixed   int
	Variadic bool
	Nslots   int
	Body     Node
	Params   []Binder // nfixed binders, plus the rest binder when variadic
	Simple   bool     // params are plain symbols in slots 0..n
}

func (p *FnProto) pick(n int) *Arity {
	for _, a := range p.Arities {
		if n == a.Nfixed || (a.Variadic && n >= a.Nfixed) {
			return a
		}
	}
	return nil
}

func (p *FnProto) displayName() string {
	if p.Name != "" {
		return p.Name
	}
	return "fn"
}

// ArityText lists the arities for an arity error ("1 or 2 args").
func (p *FnProto) ArityText() string {
	var parts []string
	for _, a := range p.Arities {
		if a.Variadic {
			parts = append(parts, fmt.Sprintf("%d or more", a.Nfixed))
		} else {
			parts = append(parts, strconv.Itoa(a.Nfixed))
		}
	}
	s := strings.Join(parts, " or ")
	if s == "1" {
		return "1 arg"
	}
	return s + " args"
}

func (a *Arity) bindParams(fr *Frame, args []Value) {
	if a.Simple {
		slots := fr.Slots[:a.Nfixed]
		for i := range slots { // element stores beat typedslicecopy for a few args
			slots[i] = args[i]
		}
		if a.Variadic {
			fr.Slots[a.Nfixed] = restVector(fr.Th, args[a.Nfixed:])
		}
		return
	}
	for i := 0; i < a.Nfixed; i++ {
		a.Params[i](fr, args[i])
	}
	if a.Variadic {
		a.Params[a.Nfixed](fr, restVector(fr.Th, args[a.Nfixed:]))
	}
}

// bindRecur binds recur values: like bindParams, except that a variadic
// arity receives its rest parameter as one value (Clojure semantics).
func (a *Arity) bindRecur(fr *Frame, args []Value) {
	if !a.Variadic {
		a.bindParams(fr, args)
		return
	}
	for i := 0; i < a.Nfixed; i++ {
		if a.Simple {
			fr.Slots[i] = args[i]
		} else {
			a.Params[i](fr, args[i])
		}
	}
	rest := args[a.Nfixed]
	if a.Simple {
		fr.Slots[a.Nfixed] = rest
	} else {
		a.Params[a.Nfixed](fr, rest)
	}
}

func restVector(th *Thread, rest []Value) Value {
	if len(rest) == 0 {
		return nil
	}
	th.AllocSlots(len(rest))
	return &Vector{Slots: slices.Clone(rest)}
}

// CapRef says where a closure's capture comes from when the closure is
// made: a local slot, a capture of the enclosing function, or itself.
type CapRef struct {
	Kind int
	Idx  int
}
