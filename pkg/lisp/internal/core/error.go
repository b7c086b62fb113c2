package core

import (
	"fmt"
	"strconv"
	"strings"
)

// Positions in a program's source and the interpreter's errors: the
// bottom of the package, which every other file may use.

// Pos is a position in a program's source: 1-based line and column
// (columns count runes), and the 0-based byte offset. The zero Pos means
// "no position".
type Pos struct {
	Line, Col, Offset int
}

// IsValid reports whether p is a real position.
func (p Pos) IsValid() bool { return p.Line > 0 }

// String returns "line:col".
func (p Pos) String() string {
	var buf [48]byte
	b := strconv.AppendInt(buf[:0], int64(p.Line), 10)
	b = append(b, ':')
	b = strconv.AppendInt(b, int64(p.Col), 10)
	return string(b)
}

// Kind classifies an Error. Kind.Reason gives the snake_case reason used in
// messages.Fail.Reason.
type Kind int

// Error kinds.
const (
	KindInternal    Kind = iota // a recovered Go panic: a bug in the interpreter
	KindParse                   // reader errors
	KindAnalysis                // static errors: recur position, bad special form shape
	KindUnbound                 // undefined symbol
	KindUnknownTool             // tool name not available
	KindToolArgs                // positional tool arguments
	KindType                    // wrong argument type
	KindArity                   // wrong argument count
	KindArithmetic              // division by zero, integer overflow
	KindDestructure             // pattern does not fit the value
	KindNotCallable             // calling a non-function
	KindRedefine                // def of a builtin name
	KindLoopLimit               // optional loop limit exceeded
	KindDepthLimit              // call depth exceeded
	KindStepLimit               // evaluation step budget exceeded
	KindTimeout                 // wall-clock limit exceeded
	KindMemory                  // memory limit (what a program holds) or memory size limit exceeded
	KindTool                    // a tool returned an error or panicked
	KindValidation              // the return value does not match the signature
	KindFail                    // the program called (fail ...)
	KindCanceled                // the caller's context was canceled
	KindRegex                   // bad regex pattern
	KindValue                   // a bad argument value (index, format string, ...)
)

var kindReasons = [...]string{
	KindInternal:    "internal_error",
	KindParse:       "parse_error",
	KindAnalysis:    "analysis_error",
	KindUnbound:     "unbound_symbol",
	KindUnknownTool: "unknown_tool",
	KindToolArgs:    "tool_args_error",
	KindType:        "type_error",
	KindArity:       "arity_error",
	KindArithmetic:  "arithmetic_error",
	KindDestructure: "destructure_error",
	KindNotCallable: "not_callable",
	KindRedefine:    "redefine_error",
	KindLoopLimit:   "loop_limit",
	KindDepthLimit:  "depth_limit",
	KindStepLimit:   "step_limit",
	KindTimeout:     "timeout",
	KindMemory:      "memory_limit",
	KindTool:        "tool_error",
	KindValidation:  "validation_error",
	KindFail:        "failed",
	KindCanceled:    "canceled",
	KindRegex:       "regex_error",
	KindValue:       "value_error",
}

// Reason returns the snake_case reason for the kind ("type_error", ...).
func (k Kind) Reason() string {
	if int(k) >= 0 && int(k) < len(kindReasons) {
		return kindReasons[k]
	}
	return "error"
}

// String is the kind's reason (Reason).
func (k Kind) String() string { return k.Reason() }

// Error is the one error type of package lisp. Msg is lowercase text that
// names PTC-Lisp functions, not Go internals. Error() gives "line:col: msg";
// Detail() adds the caret snippet and hint meant for the model.
type Error struct {
	Pos  Pos
	Kind Kind
	Msg  string
	// Hint is an optional suggestion ("did you mean filter").
	Hint string
	// Op names the operation (a tool name for tool errors), if any.
	Op string
	// Fail is the program's (fail v) value as plain Go data (KindFail only).
	Fail any
	// Err is the underlying error (a tool's error, ctx.Err(), ...).
	Err error
	// Src is the program text, used to render the snippet.
	Src string
}

// Sentinels for errors.Is: an *Error matches a sentinel of the same Kind.
var (
	ErrParse       = &Error{Kind: KindParse, Msg: "parse error"}
	ErrUnbound     = &Error{Kind: KindUnbound, Msg: "undefined symbol"}
	ErrType        = &Error{Kind: KindType, Msg: "type error"}
	ErrArity       = &Error{Kind: KindArity, Msg: "arity error"}
	ErrTimeout     = &Error{Kind: KindTimeout, Msg: "timeout"}
	ErrMemoryLimit = &Error{Kind: KindMemory, Msg: "memory limit exceeded"}
	ErrStepLimit   = &Error{Kind: KindStepLimit, Msg: "step limit exceeded"}
	ErrDepthLimit  = &Error{Kind: KindDepthLimit, Msg: "depth limit exceeded"}
	ErrLoopLimit   = &Error{Kind: KindLoopLimit, Msg: "loop limit exceeded"}
	ErrTool        = &Error{Kind: KindTool, Msg: "tool failed"}
	ErrValidation  = &Error{Kind: KindValidation, Msg: "return type validation failed"}
	ErrFail        = &Error{Kind: KindFail, Msg: "program failed"}
	ErrInternal    = &Error{Kind: KindInternal, Msg: "internal error"}
)

// Error returns "line:col: msg" (or just msg without a position).
func (e *Error) Error() string {
	if e.Pos.IsValid() {
		return e.Pos.String() + ": " + e.Msg
	}
	return e.Msg
}

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

// Is reports whether target is a sentinel (or Error) of the same Kind.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Kind == e.Kind
}

// Reason returns the snake_case reason for messages.Fail: the kind's
// reason, or the program's own reason for (fail {:reason ...}).
func (e *Error) Reason() string {
	if e.Kind == KindFail {
		if m, ok := e.Fail.(map[string]any); ok {
			if r, ok := m["reason"].(string); ok && r != "" {
				return r
			}
		}
	}
	return e.Kind.Reason()
}

// Detail renders the error for the model: "line:col: msg", then the
// offending source line with a caret under the column, then "hint: ...".
func (e *Error) Detail() string {
	var b strings.Builder
	b.WriteString(e.Error())
	if e.Src != "" {
		b.WriteString(Snippet(e.Src, e.Pos))
	}
	if e.Hint != "" {
		b.WriteString("\nhint: ")
		b.WriteString(e.Hint)
	}
	return b.String()
}

// Snippet renders the source line of pos with a caret under its column,
// as "\n  line\n  ^" (tabs kept so the caret lines up); empty when pos is
// not valid, not in src, or on a line over 200 characters.
func Snippet(src string, pos Pos) string {
	if !pos.IsValid() {
		return ""
	}
	lines := strings.Split(src, "\n")
	if pos.Line-1 >= len(lines) {
		return ""
	}
	rs := []rune(strings.TrimRight(lines[pos.Line-1], "\r"))
	if len(rs) > 200 {
		return ""
	}
	var b strings.Builder
	b.WriteString("\n  ")
	b.WriteString(string(rs))
	b.WriteString("\n  ")
	for i := 0; i < pos.Col-1 && i < len(rs); i++ {
		if rs[i] == '\t' {
			b.WriteByte('\t')
		} else {
			b.WriteByte(' ')
		}
	}
	b.WriteByte('^')
	return b.String()
}

// Errorf builds an *Error.
func Errorf(kind Kind, pos Pos, format string, args ...any) *Error {
	return &Error{Kind: kind, Pos: pos, Msg: fmt.Sprintf(format, args...)}
}

// HostDataError is a value in host data that the interpreter cannot
// represent, found when a program read it (see FromGo).
type HostDataError struct {
	Key string // the map key the value was read under
	Err error  // what the conversion reported, naming the Go type
}

// Error names the path and the Go type the host data holds there.
func (e *HostDataError) Error() string {
	return fmt.Sprintf("host data: value of %q: %v", e.Key, e.Err)
}

// Unwrap returns the conversion error.
func (e *HostDataError) Unwrap() error { return e.Err }
