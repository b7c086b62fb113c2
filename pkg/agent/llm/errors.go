package llm

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Kind classifies an [*Error]. Its string form is the snake_case reason the
// agent puts into Step.Fail.Reason.
type Kind string

// The kinds of Error.
const (
	// KindNotFound: a model name is not in the registry (llm_not_found).
	KindNotFound Kind = "llm_not_found"
	// KindInvalid: a registry entry is not a usable model (invalid_llm).
	KindInvalid Kind = "invalid_llm"
	// KindRegistryRequired: a model was named but no registry was given
	// (llm_registry_required).
	KindRegistryRequired Kind = "llm_registry_required"
	// KindConfig: a model spec or configuration is malformed
	// (invalid_llm_config).
	KindConfig Kind = "invalid_llm_config"
	// KindRetriesExhausted: every retry attempt failed with an
	// infrastructure error (llm_error).
	KindRetriesExhausted Kind = "llm_error"
)

// Sentinels matching Errors by kind with errors.Is.
var (
	// ErrNotFound matches errors of KindNotFound.
	ErrNotFound = &Error{Kind: KindNotFound}
	// ErrInvalid matches errors of KindInvalid.
	ErrInvalid = &Error{Kind: KindInvalid}
	// ErrRegistryRequired matches errors of KindRegistryRequired.
	ErrRegistryRequired = &Error{Kind: KindRegistryRequired}
	// ErrConfig matches errors of KindConfig.
	ErrConfig = &Error{Kind: KindConfig}
	// ErrRetriesExhausted matches errors of KindRetriesExhausted.
	ErrRetriesExhausted = &Error{Kind: KindRetriesExhausted}
)

// Error is the error type of this package for registry, configuration and
// retry failures. Message is the human-readable text (for registry errors,
// a fixed message); Err is the cause, if any.
//
// errors.Is(err, ErrNotFound) and friends match on Kind.
type Error struct {
	Kind    Kind
	Name    string // the model name involved, if any
	Message string
	Err     error
}

// Reason returns the snake_case failure reason (the Kind as a string).
func (e *Error) Reason() string { return string(e.Kind) }

// Error returns "reason: message" (and the cause, when there is one).
func (e *Error) Error() string {
	s := string(e.Kind)
	if e.Message != "" {
		s += ": " + e.Message
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Is reports whether target is an *Error of the same Kind.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Kind == e.Kind && t.Name == "" && t.Message == "" && t.Err == nil
}

// ProviderError is a failure reported by a provider's API or by the
// transport to it. Provider clients return it for non-2xx answers, error
// events inside streams, malformed bodies and connection failures.
//
// It never contains the API key: clients scrub it from every message.
type ProviderError struct {
	// Provider names the provider ("openai", "anthropic", ...).
	Provider string
	// StatusCode is the HTTP status, 0 for transport errors and errors
	// inside a stream.
	StatusCode int
	// Type is the provider's error type ("rate_limit_error",
	// "invalid_request_error", ...) or one of this package's:
	// "connection_error", "timeout", "malformed_response".
	Type string
	// Code is the provider's error code, when it sends one (OpenAI).
	Code string
	// Message is the provider's error message.
	Message string
	// RequestID is the provider's request id, if it sent one.
	RequestID string
	// Retryable reports whether retrying the same request may succeed.
	Retryable bool
	// RetryAfter is the delay the provider asked for (Retry-After), 0 if
	// none.
	RetryAfter time.Duration
	// Err is the underlying transport or decoding error, if any (for
	// errors.Is/As); Error prints it only when Message is empty.
	Err error
}

// Error describes the failure: provider, status, type and message.
func (e *ProviderError) Error() string {
	var b strings.Builder
	if e.Provider != "" {
		b.WriteString(e.Provider)
		b.WriteString(": ")
	}
	if e.StatusCode != 0 {
		b.WriteString(strconv.Itoa(e.StatusCode))
		b.WriteString(" ")
	}
	if e.Type != "" {
		b.WriteString(e.Type)
	} else {
		b.WriteString("error")
	}
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	if e.Err != nil && e.Message == "" { // Message, when set, is the scrubbed form of Err
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	if e.RequestID != "" {
		b.WriteString(" (request id ")
		b.WriteString(e.RequestID)
		b.WriteString(")")
	}
	return b.String()
}

// Unwrap returns the underlying error.
func (e *ProviderError) Unwrap() error { return e.Err }

// retryableError marks an error as an infrastructure error of a class.
type retryableError struct {
	class ErrorClass
	err   error
}

func (e *retryableError) Error() string { return e.err.Error() }
func (e *retryableError) Unwrap() error { return e.err }

// MarkRetryable wraps err so that [Classify] reports it as an
// infrastructure error of the given class. Models built with [Func] use it
// for failures a retry may fix; unmarked errors of unknown type are treated
// as logic errors and not retried. It returns nil for a nil err.
func MarkRetryable(err error, class ErrorClass) error {
	if err == nil {
		return nil
	}
	return &retryableError{class: class, err: err}
}

// Secret holds a credential such as an API key. Every way of printing it
// (fmt verbs including %v, %+v, %#v, %s, %q, %x; String; GoString; JSON and
// text encodings) shows "[redacted]", or "" when empty; [Secret.Reveal]
// returns the value for the one place that sends it.
//
// One gap is fmt's own: when a struct is printed with %v and the Secret is
// in an unexported field, fmt cannot call its methods and prints the raw
// string. Keep Secrets in exported fields, or behind a pointer (fmt prints
// nested pointers as addresses), or give the enclosing type a String or
// Format method, as the provider clients do.
type Secret string

const redacted = "[redacted]"

// Reveal returns the secret's value.
func (s Secret) Reveal() string { return string(s) }

func (s Secret) shown() string {
	if s == "" {
		return ""
	}
	return redacted
}

// String returns "[redacted]" (or "" when empty).
func (s Secret) String() string { return s.shown() }

// GoString returns the %#v form, which hides the value too.
func (s Secret) GoString() string { return strconv.Quote(s.shown()) }

// Format hides the value under every verb.
func (s Secret) Format(f fmt.State, verb rune) {
	switch verb {
	case 'q':
		fmt.Fprint(f, strconv.Quote(s.shown()))
	case 'v':
		if f.Flag('#') {
			fmt.Fprint(f, s.GoString())
			return
		}
		fmt.Fprint(f, s.shown())
	default:
		fmt.Fprint(f, s.shown())
	}
}

// MarshalText encodes the redacted form.
func (s Secret) MarshalText() ([]byte, error) { return []byte(s.shown()), nil }

// MarshalJSON encodes the redacted form as a JSON string.
func (s Secret) MarshalJSON() ([]byte, error) { return []byte(strconv.Quote(s.shown())), nil }

// Scrub returns msg with every occurrence of the secret replaced by
// "[redacted]". Provider clients pass error texts through it.
func (s Secret) Scrub(msg string) string {
	if len(s) < 4 { // too short to be a key; replacing would mangle text
		return msg
	}
	return strings.ReplaceAll(msg, string(s), redacted)
}

var errNilModel = errors.New("nil model")
