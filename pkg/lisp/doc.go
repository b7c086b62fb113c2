// Package lisp implements PTC-Lisp, the sandboxed Clojure subset that
// models write to call tools and shrink data (docs/lisp-builtins.md lists
// the forms and builtins; docs/lisp.md covers design and benchmarks).
//
// # Entry points
//
//	step, err := lisp.Run(ctx, src, lisp.Options{Context: inputs, Tools: tools, Signature: "{count :int}"})
//	res, err := lisp.Exec(ctx, src, opts) // the richer Result, for the agent loop
//
// Run returns a *messages.Step: Return (plain Go data: nil, bool, int64,
// float64, string, []any, map[string]any; keywords become names; map keys
// follow the boundary rule below), Memory, Prints and one Trace turn with the
// program and its tool calls. err != nil exactly when step.Fail is set;
// step.Fail.Reason is snake_case ("parse_error", "unbound_symbol",
// "type_error", "arity_error", "timeout", "memory_limit", "loop_limit",
// "depth_limit", "step_limit", "tool_error", "validation_error", ..., or the
// program's own :reason for (fail {...})), and step.Fail.Message is the text
// for the model: "line:col: message", a caret snippet and a "hint:" line.
//
// Exec returns a *Result that is never nil, also on failure (Prints and
// ToolCalls of a failed run are kept for feedback):
//   - Signal: SignalValue (last top-level value), SignalReturn ((return v) or
//     (call "return" v), even from inside fns, loops and HOFs) or SignalFail
//     ((fail v) or any error; Err is set, and is also the returned error).
//   - Value: the interpreter value, for previews (see Preview); with
//     Options.MemoryContract and a map result it is the :return entry, if any.
//   - Memory: memory after the run (the initial memory on failure: a failed
//     run commits nothing); Written: names written.
//   - Prints, ToolCalls (messages.ToolCall records), Steps, Duration.
//
// Errors are *Error{Pos, Kind, Msg, Hint, Op, Fail, Err}; errors.Is matches
// the sentinels by Kind (ErrTimeout, ErrMemoryLimit, ErrDepthLimit, ...).
// A run ended by ctx cancellation wraps ctx.Err() (errors.Is(err,
// context.Canceled) works). Error.Detail renders the model-facing text.
//
// # Tools
//
// A Tool is anything with Call(ctx, args map[string]any) (any, error):
// ToolFunc adapts a func; Tools maps names to tools. Programs call tools as
// (tool/name {...}), (tool/name :k v ...) or (call "name" {...}); argument
// keys arrive by the boundary rule, results are converted with FromGo
// (JSON model). A tool error or panic becomes a tool_error. Unknown literal
// tool names are rejected before anything runs. (call "return" v) and
// (call "fail" v) end the run.
//
// # The host boundary
//
// Map keys cross the boundary (ToGo: Step.Return, Step.Memory, tool
// arguments, fail values, signature validation) by one rule: a keyword key
// written by a program is spelled with '_' for '-' (:row-count → "row_count",
// so it satisfies a signature's row_count); a string key is data and never
// changes ("2024-01-31", "SKU-1"); host map keys enter as strings (FromGo),
// so a key that came in from the host goes back out exactly as it came,
// through every builtin, memory, tool arguments and return. Other keys
// (numbers, vectors) go out as their str form. When two keys of one map give
// the same host key, the exactly spelled one (a string, or a keyword without
// '-') wins.
//
// Host data is not copied on the way in: FromGo makes a map[string]any a
// *Map that reads the host's map in place (a view), and a []any or
// []map[string]any a vector whose records are the host's maps themselves,
// read in place with no allocation per record. A record or view converts
// a value when a program reads it and builds its interpreter form when a
// program iterates or changes it; a record leaves a run (Result.Value,
// memory) as its view, and code walking values takes maps through AsMap.
// ToGo gives a copy, so what the host receives it may change without
// changing its own data (docs/lisp.md, "Values"). Memory (Step.Memory)
// never copies host data (ShareToGo): a view comes back as the host's own
// map or slice, other host data (a decoded tool result) as a *Kept, the
// interpreter value that encodes as its Go form. The host's data must not
// change while a run reads it. A keyword reads a host record's field with
// a Go map read; built with the tag ptc_swissmaps, which reads the Go
// runtime's private map layout, it reads a record of up to eight fields
// through an inline cache of the slot its name last sat in (field.go), and
// a scan over host records prefetches the records ahead of it
// (prefetch.go).
//
// # Pipeline and performance
//
// reader.go (source → forms with positions) → compile.go/special.go/
// destructure.go (every symbol resolved once: locals to frame slots,
// builtins to direct pointers, special forms to closures; static checks for
// unbound symbols with hints, recur position, arity of known builtins,
// unknown tools) → evaluation of closures over a per-run Thread (value
// stack, pooled frames; closures capture by value). Values are a closed set
// (see Value); maps are sorted array maps up to 8 entries and a HAMT above,
// with flex keyword/string lookup in one probe; vectors append in amortized
// O(1) while staying immutable.
//
// # Sandbox
//
// Every run has a wall-clock timeout (Options.Timeout, also ctx), an
// evaluation step budget (Options.MaxSteps, default StepBudget of the
// timeout), a limit on the memory the program holds
// (Options.MaxMemory: what it builds and keeps, not what it allocates and
// drops; host data does not count, see IsHostData, except what the run
// holds from its tools, charged to a Meter as it enters), a call depth limit (no
// Go stack overflow), an optional loop limit and a memory size limit after
// the run. For every limit option 0 means the default and a negative value
// unlimited. Limits are checked
// cooperatively on calls, loop iterations, HOF steps and lazy-seq
// realisation. There is no I/O, environment or reflection access from
// programs; regexes are RE2 with a 256-byte pattern cap and a 32 KB input
// cap. Any Go panic inside evaluation is recovered as an internal_error
// with the program position.
//
// # Concurrency
//
// Exec and Run are safe for concurrent use; runs share only immutable
// tables (the builtin table is built once). Values are immutable and may be
// shared between runs (e.g. closures kept in memory). pmap/pcalls branches
// run in goroutines on child threads with a memory snapshot.
package lisp

//go:generate go test -run TestBuiltinDocsCurrent -update-docs .
