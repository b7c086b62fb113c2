package compile

import (
	"github.com/ptcfleet/ptc/pkg/lisp/internal/core"
	"github.com/ptcfleet/ptc/pkg/lisp/internal/syntax"
)

// streamArg returns the index of the collection argument that the builtin
// name, called with n arguments, reads once, in order, keeping none of its
// items (they may be dropped as they are read), or -1.
func streamArg(name string, n int) int {
	switch name {
	case "count":
		if n == 1 {
			return 0
		}
	case "reduce":
		if n == 2 || n == 3 {
			return n - 1
		}
	case "some", "every?", "not-any?", "not-every?", "map", "filter", "remove":
		if n == 2 {
			return 1
		}
	}
	return -1
}

// streamSource reports whether f makes a new, finite lazy sequence that
// nothing else can reach: a call of range with an end, or of map, filter
// or remove (one function, one collection) over such a call. Written as
// the argument streamArg names, its sequence is streamed: nobody else
// holds it, so the items read need not be kept. An endless range is not
// streamed: consumed whole it never ends, and charging it ends it on the
// memory limit at once rather than at the time limit.
func (c *Compiler) streamSource(f *syntax.Form) bool {
	if f.Kind != syntax.FList || len(f.Items) == 0 {
		return false
	}
	head := f.Items[0]
	if head.Kind != syntax.FSym || (head.Ns != "" && head.Ns != "clojure.core" && head.Ns != "core") {
		return false
	}
	if head.Ns == "" && !c.isBuiltin(head) {
		return false
	}
	b, ok := c.Builtins[head.Name]
	if !ok {
		return false
	}
	switch n := len(f.Items) - 1; b.Name {
	case "range":
		return n >= 1 && n <= 3
	case "map", "filter", "remove":
		return n == 2 && c.streamSource(f.Items[2])
	}
	return false
}

// streamNode marks the lazy sequence that n (a streamSource form) makes
// as a stream; other values (a short range is a vector) pass as they are.
func streamNode(n core.Node) core.Node {
	return func(fr *core.Frame) core.Value {
		v := n(fr)
		if s, ok := v.(*core.LazySeq); ok {
			s.Stream = true
		}
		return v
	}
}
