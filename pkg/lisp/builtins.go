package lisp

import (
	"math"
	"sync"
)

// registry collects builtins while the table is built (once).
type registry map[string]*Builtin

// add registers fn under name with its arity bounds (max < 0: variadic).
func (r registry) add(name string, min, max int, fn BuiltinFunc) *Builtin {
	if _, dup := r[name]; dup {
		panic("lisp: duplicate builtin " + name)
	}
	b := &Builtin{Name: name, MinArgs: min, MaxArgs: max, Fn: fn}
	r[name] = b
	return b
}

// alias registers an existing builtin under another name.
func (r registry) alias(alias, name string) {
	b, ok := r[name]
	if !ok {
		panic("lisp: alias of unknown builtin " + name)
	}
	if _, dup := r[alias]; dup {
		panic("lisp: duplicate builtin " + alias)
	}
	r[alias] = b
}

// builtinGroups are the registration functions, one per builtins_<group>.go
// file. The order does not matter; names must be unique.
var builtinGroups = []func(registry){
	registerCore,    // builtins_core.go: arithmetic, =, count, get, map, filter, reduce, apply, return, fail, println, str, memory/
	registerLazy,    // builtins_lazy.go: range, iterate, cycle, repeat, repeatedly
	registerAccess,  // builtins_access.go: §4.1
	registerSeq,     // builtins_seq.go: §4.2
	registerAgg,     // builtins_agg.go: §4.3
	registerMaps,    // builtins_maps.go: §4.4
	registerSets,    // builtins_sets.go: §4.5
	registerMath,    // builtins_math.go: §4.6, Math/
	registerLogic,   // builtins_logic.go: §4.7
	registerStrings, // builtins_strings.go: §4.8, format
	registerRegex,   // builtins_regex.go: §4.9, parse-long ...
	registerHOF,     // builtins_hof.go: §4.10
	registerInterop, // builtins_interop.go: §4.11
}

// builtinTable returns the immutable builtin table, built on first use.
var builtinTable = sync.OnceValue(func() map[string]*Builtin {
	r := registry{}
	for _, g := range builtinGroups {
		g(r)
	}
	attachFast(r)
	return r
})

// hostConstants are symbols that name constant values.
var hostConstants = map[string]Value{
	"Double/POSITIVE_INFINITY": math.Inf(1), "Double/NEGATIVE_INFINITY": math.Inf(-1), "Double/NaN": math.NaN(),
	"POSITIVE_INFINITY": math.Inf(1), "NEGATIVE_INFINITY": math.Inf(-1), "NaN": math.NaN(),
	"Math/PI": math.Pi, "Math/E": math.E,
	"Long/MAX_VALUE": int64(math.MaxInt64), "Long/MIN_VALUE": int64(math.MinInt64),
	"Integer/MAX_VALUE": int64(math.MaxInt32), "Integer/MIN_VALUE": int64(math.MinInt32),
}
