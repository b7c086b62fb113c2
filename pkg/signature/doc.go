// Package signature implements the signature DSL: the contract between an
// agent (or a tool) and its caller, naming the inputs it takes and the output
// it returns.
//
// # Syntax
//
//	(query :string, limit :int?) -> [{id :int, title :string}]
//	{count :int, _ids [:int]}          ; output only, same as () -> {...}
//
// Primitive types are :string :int :float :bool :keyword :any :map. [T] is a
// list of T. {name T, ...} is a map with typed fields; a field may also be
// written as a keyword ({:id :int :name :string}). A "?" after any type makes
// it optional (nil, or absent as a map field or input): :int?, [:int]?,
// {a :int}?. Literals joined by "|" are an enum ("low" | "medium" |
// "high"), types joined by "|" a union (:int | :string), and a refinement
// in parentheses narrows a number, a string's length and pattern or a
// list's length (:int(min 0, max 100), :string(max 80, pattern "^[a-z]"),
// [:int](min 1)). Names starting with "_" are firewalled: kept for programs and Go
// callers, hidden from models (see Public). Whitespace, newlines and commas
// separate tokens anywhere; commas are optional; ";" starts a comment that
// runs to the end of the line.
//
// The Type interface is sealed: a Type is a Prim, a List, a Map, an
// Optional wrapper, an Enum, a Union or a Refined. Optionality is a wrapper type rather than a flag so that
// any type, including a list or a map, can be optional, and so that the
// canonical form (String) prints exactly one "?" per optional type.
//
// # Contract
//
// Parse once, validate many times: Parse returns a *Signature that is
// immutable and safe for concurrent use; Validate, CoerceInputs and the
// schema and prompt renderers never modify it or the values they are given.
// Parse errors are *Error values of KindSyntax with the line, column, what was
// expected and a caret snippet. Validation reports every problem, each with its
// path, as a ValidationErrors list ("- results[0].customer.id: expected
// integer, got string \"abc\""), and returns a true nil when the value is
// valid. Values are plain Go data (nil, bool, int64, float64, string, []any,
// map[string]any); map keys are matched exactly (the lisp layer normalises
// "-" to "_" before validating).
//
// Validation modes (Mode) are enabled (default), warn_only, disabled and
// strict; see Mode for what each means here and what is left to the agent.
//
// The package imports nothing else of this module.
package signature
