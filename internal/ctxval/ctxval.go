// Package ctxval holds a context that carries one value in the same
// allocation as the context itself.
//
// context.WithValue makes a node of its own and boxes a value that is not
// a pointer in a second allocation; a context made per call on a hot path
// (a tool call's position, a mission's meter) pays both. Ctx is the node
// and the value together, and its Value answers the key with a pointer to
// the value, which does not allocate.
package ctxval

import "context"

// Ctx is a context carrying V under the key type K: Value answers any key
// of type K with &V and asks the embedded parent for any other key. K is
// meant to be an unexported struct{} type used only as this key, as
// context keys are. Make one with a composite literal:
//
//	c := &ctxval.Ctx[meterKey, Meter]{Context: ctx, V: Meter{...}}
//	return c, &c.V
type Ctx[K comparable, V any] struct {
	context.Context
	V V
}

// Value returns &c.V for a key of type K and the parent's value for any
// other key.
func (c *Ctx[K, V]) Value(key any) any {
	if _, ok := key.(K); ok {
		return &c.V
	}
	return c.Context.Value(key)
}
