package core

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Function values: a closure's arities, how its arguments bind to its
// parameters, and recur.

// RecurMark is the type of RecurSentinel.
type RecurMark struct{}

// RecurSentinel is returned (not panicked) by a recur node; recur is only
// allowed in tail position, so it flows straight back to its loop or fn.
var RecurSentinel Value = &RecurMark{}

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

// Name returns the closure's name (empty for anonymous fns).
func (c *Closure) Name() string { return c.Proto.Name }
