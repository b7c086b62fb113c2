package lisp

// The names below are the interpreter's stages' own, given here so that a
// host needs only this package.

import (
	"context"
	"io"

	"github.com/ptcfleet/ptc/pkg/lisp/internal/builtins"
	"github.com/ptcfleet/ptc/pkg/lisp/internal/compile"
	"github.com/ptcfleet/ptc/pkg/lisp/internal/core"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// AsMap returns v as a *Map when it is a map: a *Map as it is, a host
// record as its view (a new header). It is the one way a value that must
// be a map is taken as one.
func AsMap(v core.Value) (*core.Map, bool) { return core.AsMap(v) }

// Builtin is a named Go function value.
type Builtin = core.Builtin

// BuiltinFunc is the Go signature of a builtin. args must not be retained
// or modified (it lives on the run's value stack). Errors are raised with
// the Thread's error helpers (they panic and are recovered at the run's edge).
type BuiltinFunc = core.BuiltinFunc

// CallPos returns the position, in the source of the program that made
// it, of the tool call whose Tool.Call received ctx: the (tool/name ...)
// form, or the form that called a tool passed as a value. ok is false
// when ctx comes from no tool call of a program.
func CallPos(ctx context.Context) (pos core.Pos, ok bool) { return core.CallPos(ctx) }

// Closure is a compiled function value with its captured variables.
type Closure = core.Closure

// Compare implements (compare a b): numbers by value, strings like Java,
// keywords by name, nil lowest, booleans false < true, vectors by length
// then element-wise. ok is false when the kinds cannot be compared.
func Compare(a, b core.Value) (int, bool) { return core.Compare(a, b) }

// DecodeJSON decodes one JSON value (a tool reply from HTTP, MCP or a JSON
// tool service) straight into interpreter values, in one pass: no
// intermediate map[string]any. The result is host data (see IsHostData)
// equal to what FromGo gives for messages.DecodeJSON of the same bytes:
// numbers keep their kind (an integer that fits is an int64, any other
// number a float64, a number beyond float64 range is an error), invalid
// UTF-8 in strings becomes U+FFFD, the last of repeated keys wins. The
// bounds are those of a message: at most messages.MaxJSONBytes bytes,
// messages.MaxValuesFor(len(data)) values (every scalar, array, object and key counts
// one, a repeated key included) and messages.MaxNesting levels of
// non-empty arrays and objects. Anything but exactly one value
// (whitespace aside) is an error. Tokens are read by jsontext's Decoder
// (github.com/go-json-experiment/json), which validates the syntax.
func DecodeJSON(data []byte) (core.Value, error) { return core.DecodeJSON(data) }

// DecodeJSONFrom is DecodeJSON reading one JSON value of size bytes from r
// as a stream (see DecodeMsgpackFrom): r must hold exactly size bytes,
// and the value at most messages.MaxValuesFor(size) values; the other
// bounds and rules are DecodeJSON's, without its messages.MaxJSONBytes.
func DecodeJSONFrom(r io.Reader, size int64) (core.Value, error) { return core.DecodeJSONFrom(r, size) }

// DecodeMsgpack decodes one msgpack value (a tool reply from NATS) straight
// into interpreter values, in one pass: no intermediate map[string]any.
// The result is host data (see IsHostData) equal to what FromGo gives for
// messages.Unmarshal of the same bytes: the same bounds (CheckBounds runs
// first: declared lengths, nesting, value count), the same scalars (every
// integer an int64 unless it needs a float64, binary as a string), map
// keys as strings (other keys by their printed form, the last of repeated
// keys wins), trailing bytes and malformed input are errors, never panics.
func DecodeMsgpack(data []byte) (v core.Value, err error) { return core.DecodeMsgpack(data) }

// DecodeMsgpackFrom is DecodeMsgpack reading one msgpack value of size
// bytes from r as a stream: the value is built as its bytes arrive, and
// the encoded bytes are never held whole (a large tool result read from
// an object store). It gives what DecodeMsgpack gives for the same bytes,
// under bounds checked as it reads, since nothing can be scanned first:
// r must hold exactly size bytes; a declared array or map length must fit
// in the bytes still to come; containers nest at most
// messages.MaxNesting levels; the value holds at most
// messages.MaxValuesFor(size) values; map keys are scalars (a container
// key is an error, where DecodeMsgpack prints it).
func DecodeMsgpackFrom(r io.Reader, size int64) (core.Value, error) {
	return core.DecodeMsgpackFrom(r, size)
}

// DecodeWireResult is NewWireResult charging the Meter ctx carries (see
// MeterFrom; a run hands its meter to its tools in their context) as the
// result enters: its bytes first, then the values as they are built. A
// result that takes the meter past its limit stops decoding there and
// fails with the meter's *Error (KindMemory: memory_limit), which a run
// reports as its own memory_limit; what it charged is released. Tools
// that decode their results (remote tools, typed Go tools) use it.
func DecodeWireResult(ctx context.Context, contentType string, data []byte) (*core.WireResult, error) {
	return core.DecodeWireResult(ctx, contentType, data)
}

// DecodeWireResultFrom decodes a large result read as a stream from r,
// size bytes of one value in the content type named (DecodeMsgpackFrom,
// DecodeJSONFrom), charging the Meter ctx carries as DecodeWireResult
// does, but for the values only: the encoded bytes are never held. A
// result that takes the meter past its limit stops there, before it is
// read whole, with the meter's *Error (memory_limit) naming the limit and
// how to raise it. The result keeps ref, the object it was read from,
// instead of its bytes: encoded as msgpack or JSON (a trace, an event) it
// is messages.RefValue(ref), so what records it does not grow with the
// data.
func DecodeWireResultFrom(ctx context.Context, contentType string, r io.Reader, size int64, ref *messages.ObjectRef) (*core.WireResult, error) {
	return core.DecodeWireResultFrom(ctx, contentType, r, size, ref)
}

// Equal reports PTC-Lisp equality (=): structural, numbers by value across
// int and float, NaN unequal to itself, keywords unequal to strings.
func Equal(a, b core.Value) bool { return core.Equal(a, b) }

// Sentinels for errors.Is: an *Error matches a sentinel of the same Kind.
var (
	ErrArity       = core.ErrArity
	ErrDepthLimit  = core.ErrDepthLimit
	ErrFail        = core.ErrFail
	ErrInternal    = core.ErrInternal
	ErrLoopLimit   = core.ErrLoopLimit
	ErrMemoryLimit = core.ErrMemoryLimit
	ErrParse       = core.ErrParse
	ErrStepLimit   = core.ErrStepLimit
	ErrTimeout     = core.ErrTimeout
	ErrTool        = core.ErrTool
	ErrType        = core.ErrType
	ErrUnbound     = core.ErrUnbound
	ErrValidation  = core.ErrValidation
)

// Error is the one error type of package lisp. Msg is lowercase text that
// names PTC-Lisp functions, not Go internals. Error() gives "line:col: msg";
// Detail() adds the caret snippet and hint meant for the model.
type Error = core.Error

// FirewalledText is what printers show in place of a firewalled value.
const FirewalledText = core.FirewalledText

// FromGo converts plain Go data (the JSON model: nil, bool, numbers,
// string, []any, map[string]any, json.Number, and slices/maps of those)
// into a Value. Map keys stay strings. Values that already are interpreter
// values pass through, and so does a WireResult's decoded value. Other
// types (structs) go through encoding/json.
//
// A map[string]any, []any or []map[string]any is not copied: the result
// is a view of it (view.go) that converts what a program reads when it
// reads it, so a value inside such data that cannot be converted (a
// channel, a func) is reported when it is read, not here.
func FromGo(x any) (core.Value, error) { return core.FromGo(x) }

// HostDataError is a value in host data that the interpreter cannot
// represent, found when a program read it (see FromGo).
type HostDataError = core.HostDataError

// HostFunc is a builtin whose work the host does (Options.Host): the
// agent running the program asks its model (llm-query), streams a value
// to the mission's submitter (emit) or marks a step of its plan
// (step-done). It receives the run's context and the call's arguments as
// plain Go data (ToGo), and returns plain Go data (FromGo) or an error,
// which fails the call as a tool error naming the builtin. It may be
// called from several goroutines at once (pmap).
type HostFunc = core.HostFunc

// HostFuncs maps host builtin names (HostBuiltins) to their functions.
type HostFuncs = core.HostFuncs

// Int boxes n, without allocating for small values.
func Int(n int64) core.Value { return core.Int(n) }

// IsHostData reports whether v is a collection converted from host data
// (FromGo: Options.Context, Options.Memory given as Go data, tool
// results) or a view of one. Such values are the host's memory: they do
// not count against a run's memory limit, and keeping them in memory keeps
// a reference, not a copy.
func IsHostData(v core.Value) bool { return core.IsHostData(v) }

// Kept is host data a run kept unchanged (a tool result decoded from its
// wire bytes, or Go data FromGo had to convert) as ShareToGo hands it out
// in Step.Memory: the interpreter value itself, not a copy. It stands for
// its Go form (what ToGo gives) everywhere that form goes: encoded as
// msgpack (EncodeMsgpack) or JSON (MarshalJSON) it writes exactly the
// bytes its Go form would; masked (messages.MaskFirewalled) it is its Go
// form masked; given back to a run (Options.Memory, Options.Context, a
// tool's result, FromGo) it is the same interpreter value again, so a
// value kept across turns is never converted. Go returns the Go form,
// built on the first call.
type Kept = core.Kept

// Keyword is an interned keyword. Keywords read from one program are
// interned per run, so they usually compare by pointer; equality falls back
// to the name, so keywords from different runs (e.g. stored in memory) are
// still equal. A keyword hashes like its name string, which lets flex lookup
// (:id against a host key "id") probe once.
type Keyword = core.Keyword

// Kind classifies an Error. Kind.Reason gives the snake_case reason used in
// messages.Fail.Reason.
type Kind = core.Kind

// static errors: recur position, bad special form shape
const KindAnalysis = core.KindAnalysis

// division by zero, integer overflow
const KindArithmetic = core.KindArithmetic

// wrong argument count
const KindArity = core.KindArity

// the caller's context was canceled
const KindCanceled = core.KindCanceled

// call depth exceeded
const KindDepthLimit = core.KindDepthLimit

// pattern does not fit the value
const KindDestructure = core.KindDestructure

// the program called (fail ...)
const KindFail = core.KindFail

// a recovered Go panic: a bug in the interpreter
const KindInternal = core.KindInternal

// optional loop limit exceeded
const KindLoopLimit = core.KindLoopLimit

// memory limit (what a program holds) or memory size limit exceeded
const KindMemory = core.KindMemory

// calling a non-function
const KindNotCallable = core.KindNotCallable

// reader errors
const KindParse = core.KindParse

// def of a builtin name
const KindRedefine = core.KindRedefine

// bad regex pattern
const KindRegex = core.KindRegex

// evaluation step budget exceeded
const KindStepLimit = core.KindStepLimit

// wall-clock limit exceeded
const KindTimeout = core.KindTimeout

// a tool returned an error or panicked
const KindTool = core.KindTool

// positional tool arguments
const KindToolArgs = core.KindToolArgs

// wrong argument type
const KindType = core.KindType

// undefined symbol
const KindUnbound = core.KindUnbound

// tool name not available
const KindUnknownTool = core.KindUnknownTool

// the return value does not match the signature
const KindValidation = core.KindValidation

// a bad argument value (index, format string, ...)
const KindValue = core.KindValue

// LazySeq is a possibly infinite sequence realised on demand. gen returns
// the next item, or ok=false at the end. Realised items are cached, so a
// LazySeq is a value: every reader sees the same items. Concurrent
// realisation (pmap branches sharing a seq) is serialised by a mutex.
//
// A pure sequence (range, (repeat x), cycle: its items are computed
// without calling back into the program) has fill instead of gen and is
// realised lazyChunk items at a time, so realising it costs a few
// nanoseconds an item and a lock per chunk, not per item.
type LazySeq = core.LazySeq

// Map is an immutable map. Up to smallMapMax entries it is a sorted array
// map: a shared key shape plus a value slice (linear scan lookup); a map
// decoded or converted from host data of up to wideMapMax entries with
// string keys is one too (a wide map: its shape indexes its keys); other
// maps are a hash array mapped trie. Iteration and printing follow the key
// key order (numbers, keywords, strings, others by printed
// form).
//
// Lookups are flex: a keyword key also finds the same-named string
// key and the other way round; an exact match wins. Writes (Assoc, Dissoc)
// resolve keys the same way, keeping the existing key's spelling.
type Map = core.Map

// Regex bounds: a pattern of at most MaxRegexPattern bytes, an input scanned
// up to MaxRegexInput bytes (RE2, so no backtracking).
const (
	MaxRegexInput   = core.MaxRegexInput
	MaxRegexPattern = core.MaxRegexPattern
)

// Meter charges the memory a mission holds from its tools against the
// mission's budget: every tool result decoded from its wire bytes (the
// bytes the result is kept as, plus the interpreter values decoded from
// them, charged as they are built) and the record of every tool call (its
// name, arguments and timing, kept in the run's ToolCalls and a mission's
// trace). What is charged stays charged for the meter's life: the trace
// holds it until the mission's result is published.
//
// One Meter serves a whole mission: every run of its agents (turns,
// sub-agents, pmap branches) charges the same one, so a mission's limit
// bounds what all of them hold together. A run takes its meter from
// Options.Meter, else from its context (WithMeter), else makes its own,
// limited to the run's MaxMemory; it hands the meter on to its tools in
// their context, so a tool that decodes its result with DecodeWireResult
// (or a decoder that calls Charge as it reads) is charged as the result
// enters, and a result over the limit fails before it is decoded whole.
//
// The charge of a decoded value follows the interpreter's accounting
// (docs/lisp.md, "Memory"): 16 B per collection slot plus a vector's
// 48 B header, 48 B per entry of a map of up to eight entries and 128 B
// per entry of a larger one, 16 B plus the bytes of a string, 8 B per
// number. A run also adds what it charges to the memory its program holds
// (Options.MaxMemory): within one run the program and the results it gets
// share one budget; what earlier runs of the mission hold stays on the
// meter only, so that a sub-agent with a smaller program_memory of its own
// is not charged for its parent's results.
//
// A Meter is safe for concurrent use. A nil *Meter charges nothing and
// never fails.
type Meter = core.Meter

// MeterFrom returns the meter ctx carries, or nil.
func MeterFrom(ctx context.Context) *core.Meter { return core.MeterFrom(ctx) }

// NewKeyword returns a keyword that is not interned in any run.
func NewKeyword(name string) *core.Keyword { return core.NewKeyword(name) }

// NewLazySeq returns a lazy sequence produced by gen.
func NewLazySeq(gen func(th *core.Thread) (core.Value, bool)) *core.LazySeq {
	return core.NewLazySeq(gen)
}

// NewMeter returns a meter that fails a charge taking what is held past
// limit bytes (limit ≤ 0: no limit, the meter only counts). raise tells
// the reader of the error how to allow more (e.g. "raise
// limits.program_memory"); it ends the error's message.
func NewMeter(limit int64, raise string) *core.Meter { return core.NewMeter(limit, raise) }

// NewVector wraps items (which the caller must not modify afterwards).
func NewVector(items []core.Value) *core.Vector { return core.NewVector(items) }

// NewWireResult decodes data, one value in the content type named
// (messages.ContentTypeJSON, or msgpack when empty or
// messages.ContentTypeMsgpack), with DecodeJSON or DecodeMsgpack. data
// must not be modified afterwards. Nothing is charged: a run that gets the
// result from a tool charges its Size to the run's Meter then.
func NewWireResult(contentType string, data []byte) (*core.WireResult, error) {
	return core.NewWireResult(contentType, data)
}

// Pos is a position in a program's source: 1-based line and column
// (columns count runes), and the 0-based byte offset. The zero Pos means
// "no position".
type Pos = core.Pos

// PrStr prints v readably (pr-str), firewall on.
func PrStr(v core.Value) string { return core.PrStr(v) }

// Preview prints v for a model: firewalled, collections cut to MaxItems
// (nested ones end in "..."), strings cut to MaxString runes plus "...".
// When the top-level collection is cut, omitted is the number of items
// left out and the text ends with " ... (N more items omitted)".
func Preview(v core.Value, opts core.PreviewOptions) (text string, omitted int) {
	return core.Preview(v, opts)
}

// PreviewOptions limits a model-facing preview. Zero fields take the seed
// defaults: 5 items per list, 1000 chars per string.
type PreviewOptions = core.PreviewOptions

// PrintOptions controls a printer. The zero value prints like pr-str with
// the firewall on and no limits.
type PrintOptions = core.PrintOptions

// Reduced wraps a value to stop reduce early.
type Reduced = core.Reduced

// Regex is a compiled RE2 regular expression.
type Regex = core.Regex

// RegexInput returns s cut to the scanned-input cap (32 KB).
func RegexInput(s string) string { return core.RegexInput(s) }

// Set is an immutable set of values, iterated in key order.
type Set = core.Set

// ShareToGo is ToGo that hands host data back without copying it, at
// whatever depth it sits: a host map, a host record or a host vector of
// records read in place (a view of the caller's Go data) comes back as the
// caller's own map or slice; other host data (a tool result decoded from
// its wire bytes, Go data FromGo had to convert) comes back as a *Kept
// holding the interpreter value, which encodes and converts as its Go
// form. A program cannot change either (its changes make new values), so
// converting data a program kept unchanged costs nothing whatever its
// size. Values a program made are converted as ToGo converts them. A run's
// memory (Result.Step, the agent's Step.Memory) uses it; a return value,
// which a caller may change in place (rounding floats), uses ToGo.
func ShareToGo(v core.Value) any { return core.ShareToGo(v) }

// Snippet renders the source line of pos with a caret under its column,
// as "\n  line\n  ^" (tabs kept so the caret lines up); empty when pos is
// not valid, not in src, or on a line over 200 characters.
func Snippet(src string, pos core.Pos) string { return core.Snippet(src, pos) }

// Sprint prints v with opts.
func Sprint(v core.Value, opts core.PrintOptions) string { return core.Sprint(v, opts) }

// Str prints v as str does: strings raw, nil as "".
func Str(v core.Value) string { return core.Str(v) }

// Thread is the per-run evaluation state: limits, counters, the value
// stack, memory and host hooks. A Thread is used by one goroutine; pmap
// branches get child threads. Builtins receive the Thread and use its
// methods to call functions, charge the budgets and raise errors.
type Thread = core.Thread

// ToGo converts a Value to plain Go data: keywords become their names,
// vectors, sets and realised lazy seqs become []any, maps become
// map[string]any. Map keys follow the boundary rule: a keyword key is
// spelled with '_' for '-' (:row-count → "row_count"); a string key is data
// and goes out exactly as it is; any other key (a number, a vector, ...)
// becomes its str form. When two keys of one map give the same host key, a
// key spelled exactly (a string, or a keyword without '-') wins over a
// respelled one; between two respelled keys the first in key order wins.
// Functions and regexes become their printed form ("#fn[x]", "#\"p\""),
// vars "#'name": the result is always plain data (use Result.Memory to keep
// closures between runs).
func ToGo(v core.Value) any { return core.ToGo(v) }

// Tool is a host capability callable from a program: a local Go func, an
// LLM tool, a sub-agent or a remote (NATS) tool. Call receives the run's
// context and the named arguments as plain Go data (keys by the boundary
// rule of ToGo: keyword keys with '_' for '-', string keys as written), and
// returns plain Go data (see FromGo), a *WireResult (a result decoded
// from its wire bytes; the run's ToolCall record keeps it as it is) or an
// error. Call may be invoked from several goroutines at once (pmap), and
// must not modify args: a host map a program passes on is handed over as
// it is, not copied.
type Tool = core.Tool

// ToolFunc adapts a function to Tool.
type ToolFunc = core.ToolFunc

// Tools maps tool names to tools. A nil Tools has no tools.
type Tools = core.Tools

// Truthy reports whether v counts as true: everything but nil and false.
func Truthy(v core.Value) bool { return core.Truthy(v) }

// TypeName returns the name used in error messages for v's type.
func TypeName(v core.Value) string { return core.TypeName(v) }

// Value is a PTC-Lisp value. The set of dynamic types is closed:
//
//	nil          Go nil (the only nil; a typed nil pointer never enters a value)
//	bool
//	int64
//	float64
//	string       also the reader's characters (\a is the 1-char string "a")
//	*Keyword     :name
//	*Vector      [1 2 3] (also lists: there is no list type)
//	*Map         {:a 1}
//	*Set         #{1 2}
//	*Closure     a compiled (fn ...)
//	*Builtin     a Go function
//	*Regex       #"..."
//	*LazySeq     (range), (iterate f x), (cycle v), (repeat x), (repeatedly f)
//	*Var         the result of def, prints as #'name
//	*Reduced     the wrapper made by (reduced x)
//
// Values are immutable once built and safe to share between goroutines.
type Value = core.Value

// Var is the result of (def name v); it prints as #'name.
type Var = core.Var

// Vector is an immutable vector backed by a Go slice. Appending to the
// newest version of a vector reuses spare capacity (the tail claim is an
// atomic counter shared by all vectors on the same backing array), so conj
// in a loop is amortized O(1) while older versions stay unchanged.
type Vector = core.Vector

// WireResult is a tool result kept as the bytes it arrived in (msgpack
// from NATS; JSON from HTTP, MCP, a JSON tool service or a typed Go
// tool), decoded once, in one pass, into interpreter values by
// NewWireResult. A Tool returns it to hand a run its result with no Go
// data in between: the run (and FromGo) uses Value; a trace, journal or
// event that records the result keeps it as it is, and encoding it as
// msgpack writes the msgpack bytes unchanged. Go data is made only for a
// consumer that asks for it (Plain: JSON rendering, a text-mode model,
// masking a result that holds a firewalled key), once; signature
// validation reads the values in place (View).
type WireResult = core.WireResult

// WithMeter returns ctx carrying m: the runs and tools given the context
// charge m (see Meter).
func WithMeter(ctx context.Context, m *core.Meter) context.Context { return core.WithMeter(ctx, m) }

// WithNewMeter is WithMeter(ctx, NewMeter(limit, raise)), returning the
// meter too, with the context and the meter made in one allocation.
func WithNewMeter(ctx context.Context, limit int64, raise string) (context.Context, *core.Meter) {
	return core.WithNewMeter(ctx, limit, raise)
}

// BuiltinInfo describes one builtin for references and documentation.
type BuiltinInfo = builtins.BuiltinInfo

// Builtins describes every builtin, by group and then by name.
func Builtins() []builtins.BuiltinInfo { return builtins.Builtins() }

// HostBuiltins describes the host builtins, by name, with their usage
// forms: what an agent shows its model for the ones it enables.
func HostBuiltins() map[string]builtins.BuiltinInfo { return builtins.HostBuiltins() }

// Reference returns the language reference's lines: the special forms and
// the builtins that the builtin table lists for the model, in table order.
// The result is freshly allocated.
func Reference() []builtins.ReferenceLine { return builtins.Reference() }

// ReferenceLine is one line of the language reference: a title and the
// names it lists.
type ReferenceLine = builtins.ReferenceLine

// Extensions returns the reference lines restricted to the names Clojure
// 1.11 does not have and that a Clojure programmer needs to learn: the
// special forms, as the fullest usage their doc begins with, and the builtins with
// a usage form ("(sum-by f coll)"), in reference order. A builtin without
// one is another spelling of what Clojure has (parse-int is parse-long,
// floor is Math/floor). The result is freshly allocated.
func Extensions() []builtins.ReferenceLine { return compile.Extensions() }

// InClojure reports whether Clojure 1.11 has name as the reference spells
// it: a clojure.core name, a clojure.string or clojure.set name under str/
// or set/ (or bare, as PTC-Lisp also accepts it), a clojure.walk name under
// walk/, a special form, or a
// static of java.lang.Math (Math/sqrt).
func InClojure(name string) bool { return compile.InClojure(name) }
