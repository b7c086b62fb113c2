// Package compile turns the forms package syntax reads into closures that
// run on a core.Thread: it resolves every name once (locals, captures,
// builtins, tools, memory), compiles the special forms and destructuring,
// and applies the optimisation passes (pipeline fusion, walk loops, owned
// number boxes, transient accumulators, fixed-arity fast calls), one pass
// per opt_*.go file.
package compile
