package signature

import (
	"errors"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Sentinel errors; test for them with errors.Is.
var (
	// ErrSyntax is matched by every *Error of KindSyntax: the signature
	// source does not parse.
	ErrSyntax = errors.New("signature syntax error")
	// ErrUnsupportedType is matched by every *Error of KindUnsupported: a Go
	// type cannot be expressed as a signature type.
	ErrUnsupportedType = errors.New("unsupported go type")
	// ErrPlaceholder is matched by every *Error of KindPlaceholder: template
	// placeholders do not match the signature's inputs.
	ErrPlaceholder = errors.New("placeholder not in signature")
	// ErrUnknownMode is matched by every *Error of KindMode: a validation mode
	// name is not one of enabled, warn_only, disabled, strict.
	ErrUnknownMode = errors.New("unknown validation mode")
	// ErrInvalid is matched by every *ValidationError and by a ValidationErrors
	// list: a value does not match its type.
	ErrInvalid = errors.New("invalid value")
)

// Kind classifies an *Error.
type Kind uint8

// The kinds of *Error.
const (
	// KindSyntax is a parse error; Pos locates it.
	KindSyntax Kind = iota + 1
	// KindUnsupported is a Go type FromType cannot map; Path names it.
	KindUnsupported
	// KindPlaceholder is a template placeholder missing from the inputs.
	KindPlaceholder
	// KindMode is an unknown validation mode name.
	KindMode
)

// String returns the kind's name in snake_case, such as "syntax".
func (k Kind) String() string {
	switch k {
	case KindSyntax:
		return "syntax"
	case KindUnsupported:
		return "unsupported_type"
	case KindPlaceholder:
		return "placeholder"
	case KindMode:
		return "unknown_mode"
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

func (k Kind) sentinel() error {
	switch k {
	case KindSyntax:
		return ErrSyntax
	case KindUnsupported:
		return ErrUnsupportedType
	case KindPlaceholder:
		return ErrPlaceholder
	case KindMode:
		return ErrUnknownMode
	}
	return nil
}

// Pos is a position in signature source. Line and Col are 1-based; Col counts
// runes. The zero Pos means "no position".
type Pos struct {
	// Offset is the byte offset into the source.
	Offset int
	// Line is the 1-based line number.
	Line int
	// Col is the 1-based column, in runes.
	Col int
}

// IsValid reports whether p is a real position.
func (p Pos) IsValid() bool { return p.Line > 0 }

// String returns "line:col".
func (p Pos) String() string {
	return strconv.Itoa(p.Line) + ":" + strconv.Itoa(p.Col)
}

// Error is the error type of the package for everything except value
// validation (which uses ValidationError): parse errors, unsupported Go types,
// placeholder mismatches and unknown mode names. errors.Is(err, ErrSyntax) and
// friends match on Kind.
//
// A syntax error prints as "line:col: message" followed by the source line and
// a caret under the column:
//
//	1:11: expected type after field "id", got "}"
//	 | {id :int, x}
//	 |           ^
type Error struct {
	// Kind says what went wrong.
	Kind Kind
	// Pos locates a syntax error; zero otherwise.
	Pos Pos
	// Path names the Go type path of a KindUnsupported error
	// ("Args.Callback") or the place in the data of a FromData error
	// ("[2][1]", "signature" for the whole); empty otherwise.
	Path string
	// Msg is the lowercase message without position or path.
	Msg string
	// Snippet is the source line and a caret line for a syntax error, each
	// prefixed with " | "; empty otherwise.
	Snippet string
	// Err is the underlying cause, if any (returned by Unwrap).
	Err error
}

// Error formats the error: "line:col: msg" plus the snippet for a syntax
// error, "path: msg" for an unsupported Go type, msg otherwise.
func (e *Error) Error() string {
	var b strings.Builder
	switch {
	case e.Pos.IsValid():
		b.WriteString(e.Pos.String())
		b.WriteString(": ")
	case e.Path != "":
		b.WriteString(e.Path)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	if e.Snippet != "" {
		b.WriteByte('\n')
		b.WriteString(e.Snippet)
	}
	return b.String()
}

// Unwrap returns the underlying cause, if any.
func (e *Error) Unwrap() error { return e.Err }

// Is reports whether target is the sentinel of e's Kind.
func (e *Error) Is(target error) bool {
	s := e.Kind.sentinel()
	return s != nil && target == s
}

// syntaxError builds a KindSyntax error at byte offset off of src.
func syntaxError(src string, off int, msg string) *Error {
	if off > len(src) {
		off = len(src)
	}
	lineStart := strings.LastIndexByte(src[:off], '\n') + 1
	lineEnd := strings.IndexByte(src[off:], '\n')
	if lineEnd < 0 {
		lineEnd = len(src)
	} else {
		lineEnd += off
	}
	line := 1 + strings.Count(src[:lineStart], "\n")
	col := 1 + utf8.RuneCountInString(src[lineStart:off])
	text := strings.TrimSuffix(src[lineStart:lineEnd], "\r")
	// The caret line keeps tabs from the source so it lines up under them.
	var caret strings.Builder
	for _, r := range src[lineStart:off] {
		if r == '\t' {
			caret.WriteByte('\t')
		} else {
			caret.WriteByte(' ')
		}
	}
	caret.WriteByte('^')
	return &Error{
		Kind:    KindSyntax,
		Pos:     Pos{Offset: off, Line: line, Col: col},
		Msg:     msg,
		Snippet: " | " + text + "\n | " + caret.String(),
	}
}

// ValidationError is one problem found validating a value: Path locates the
// value inside the validated one ("results[0].customer.id"; empty for the value
// itself) and Msg says what is wrong ("expected integer, got string \"abc\"").
type ValidationError struct {
	// Path is the location of the bad value: field names joined by ".", list
	// indexes in brackets. Empty means the validated value itself.
	Path string
	// Msg is the lowercase description of the problem.
	Msg string
}

// Error returns "path: msg", or msg alone when Path is empty.
func (e *ValidationError) Error() string {
	if e.Path == "" {
		return e.Msg
	}
	return e.Path + ": " + e.Msg
}

// Is reports whether target is ErrInvalid.
func (e *ValidationError) Is(target error) bool { return target == ErrInvalid }

// ValidationErrors is every problem found in one validation, in a
// deterministic order (fields in declaration order, list elements by index,
// unexpected fields sorted). Functions of this package never return an empty
// list as an error: they return nil.
//
// errors.As finds the list itself or, through Unwrap, its first
// *ValidationError; errors.Is(err, ErrInvalid) holds.
type ValidationErrors []*ValidationError

// Error prints one "- path: msg" line per problem, joined by newlines.
func (l ValidationErrors) Error() string {
	var b strings.Builder
	for i, e := range l {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString("- ")
		b.WriteString(e.Error())
	}
	return b.String()
}

// Unwrap returns the problems as a []error, for errors.Is and errors.As.
func (l ValidationErrors) Unwrap() []error {
	errs := make([]error, len(l))
	for i, e := range l {
		errs[i] = e
	}
	return errs
}

// Err returns l as an error, or a true nil when l is empty.
func (l ValidationErrors) Err() error {
	if len(l) == 0 {
		return nil
	}
	return l
}
