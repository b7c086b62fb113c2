// Package builtins is the builtin table: every builtin function of
// PTC-Lisp, one entry each, with the metadata that everything else derives
// from (the language reference of the agent's prompt, the docs table, the
// "not available" hints, the optimiser's purity and argument facts) and
// the fixed-arity fast entries that the compiler calls directly. It builds
// on package core only.
package builtins
