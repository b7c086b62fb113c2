package llm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"slices"
	"syscall"
	"time"
)

// ErrorClass names a class of infrastructure error that a retry may fix.
// The names are the ones llm_retry's retryable_errors list uses.
type ErrorClass string

// The retryable error classes.
const (
	ClassRateLimit  ErrorClass = "rate_limit"   // HTTP 429, rate_limit_error
	ClassOverloaded ErrorClass = "overloaded"   // HTTP 529, overloaded_error
	ClassServer     ErrorClass = "server_error" // other HTTP 5xx, api_error
	ClassTimeout    ErrorClass = "timeout"      // HTTP 408, transport timeouts
	ClassConnection ErrorClass = "connection"   // refused, reset, dropped connections
	ClassConflict   ErrorClass = "conflict"     // HTTP 409 (lock contention)
)

// AllClasses lists every ErrorClass.
var AllClasses = []ErrorClass{ClassRateLimit, ClassOverloaded, ClassServer, ClassTimeout, ClassConnection, ClassConflict}

// Classify reports whether err is an infrastructure error and of which
// class. Logic errors, context cancellation and unknown errors report false.
//
// A *ProviderError is retryable exactly when its Retryable field is set;
// its class comes from the status code (429, 529, 408, 409, 5xx) or, inside
// streams, from the provider's error type. Errors wrapped by MarkRetryable
// report their class. Network timeouts and connection failures from the
// standard library are recognised too.
func Classify(err error) (ErrorClass, bool) {
	if err == nil || errors.Is(err, context.Canceled) {
		return "", false
	}
	var re *retryableError
	if errors.As(err, &re) {
		return re.class, true
	}
	var pe *ProviderError
	if errors.As(err, &pe) {
		if !pe.Retryable {
			return "", false
		}
		return providerClass(pe), true
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return ClassTimeout, true
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return ClassTimeout, true
	}
	var oe *net.OpError
	if errors.As(err, &oe) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, io.ErrUnexpectedEOF) {
		return ClassConnection, true
	}
	return "", false
}

func providerClass(pe *ProviderError) ErrorClass {
	switch {
	case pe.StatusCode == 429:
		return ClassRateLimit
	case pe.StatusCode == 529:
		return ClassOverloaded
	case pe.StatusCode == 408:
		return ClassTimeout
	case pe.StatusCode == 409:
		return ClassConflict
	case pe.StatusCode >= 500:
		return ClassServer
	}
	switch pe.Type {
	case "rate_limit_error", "rate_limit_exceeded":
		return ClassRateLimit
	case "overloaded_error":
		return ClassOverloaded
	case "timeout", "timeout_error":
		return ClassTimeout
	case "connection_error":
		return ClassConnection
	}
	return ClassServer
}

// Backoff is the shape of the delays between attempts.
type Backoff string

// The backoff shapes of llm_retry.
const (
	BackoffExponential Backoff = "exponential" // BaseDelay * 2^(n-1)
	BackoffLinear      Backoff = "linear"      // BaseDelay * n
	BackoffConstant    Backoff = "constant"    // BaseDelay
)

// Defaults of RetryPolicy.
const (
	DefaultMaxAttempts   = 3
	DefaultBaseDelay     = time.Second
	DefaultMaxDelay      = 30 * time.Second
	DefaultMaxRetryAfter = time.Minute
)

// RetryInfo describes a retry about to happen, for RetryPolicy.OnRetry.
type RetryInfo struct {
	Attempt int           // the attempt that failed, from 1
	Err     error         // its error
	Class   ErrorClass    // its class
	Delay   time.Duration // the wait before the next attempt
}

// RetryPolicy is a mission's llm_retry: how often and how patiently
// to retry a model call that failed with an infrastructure error. The zero
// value is the seed default: 3 attempts, exponential backoff from 1 s capped
// at 30 s, every error class retryable.
//
// A RetryPolicy is a value; share it freely. Its funcs must be safe for
// concurrent use.
type RetryPolicy struct {
	// MaxAttempts is the total number of attempts, the first included
	// (0 means DefaultMaxAttempts; 1 disables retries).
	MaxAttempts int
	// Backoff is the delay shape ("" means exponential).
	Backoff Backoff
	// BaseDelay is the first delay (0 means DefaultBaseDelay).
	BaseDelay time.Duration
	// MaxDelay caps a computed delay (0 means DefaultMaxDelay).
	MaxDelay time.Duration
	// Retryable restricts retries to these classes (empty means all).
	Retryable []ErrorClass
	// MaxRetryAfter is the longest Retry-After the policy honours (0 means
	// DefaultMaxRetryAfter); a provider asking for a longer wait ends the
	// retries.
	MaxRetryAfter time.Duration
	// Sleep waits d or until ctx ends (nil means a timer; tests inject an
	// instant sleep). It returns ctx's error when ctx ended first.
	Sleep func(ctx context.Context, d time.Duration) error
	// Jitter spreads a computed delay (nil means: subtract up to 25% at
	// random). Retry-After delays are not jittered.
	Jitter func(d time.Duration) time.Duration
	// OnRetry, if set, is called before each wait (for logs and metrics).
	OnRetry func(ctx context.Context, info RetryInfo)
}

// Validate reports a malformed policy: a negative count or duration, an
// unknown backoff or an unknown error class. The error is an *Error of
// KindConfig naming the field.
func (p RetryPolicy) Validate() error {
	bad := func(field, msg string) error {
		return &Error{Kind: KindConfig, Message: "llm_retry." + field + ": " + msg}
	}
	switch {
	case p.MaxAttempts < 0:
		return bad("max_attempts", fmt.Sprintf("must be at least 1, got %d", p.MaxAttempts))
	case p.BaseDelay < 0:
		return bad("base_delay", fmt.Sprintf("must not be negative, got %s", p.BaseDelay))
	case p.MaxDelay < 0:
		return bad("max_delay", fmt.Sprintf("must not be negative, got %s", p.MaxDelay))
	case p.MaxRetryAfter < 0:
		return bad("max_retry_after", fmt.Sprintf("must not be negative, got %s", p.MaxRetryAfter))
	}
	if _, err := ParseBackoff(string(p.Backoff)); err != nil {
		return bad("backoff", err.Error())
	}
	for _, c := range p.Retryable {
		if !slices.Contains(AllClasses, c) {
			return bad("retryable_errors", fmt.Sprintf("unknown error class %q (want one of rate_limit, overloaded, server_error, timeout, connection, conflict)", c))
		}
	}
	return nil
}

// ParseBackoff parses a backoff name; "" means exponential.
func ParseBackoff(s string) (Backoff, error) {
	switch Backoff(s) {
	case "", BackoffExponential:
		return BackoffExponential, nil
	case BackoffLinear, BackoffConstant:
		return Backoff(s), nil
	}
	return "", fmt.Errorf("unknown backoff %q (want exponential, linear or constant)", s)
}

func (p RetryPolicy) maxAttempts() int {
	if p.MaxAttempts == 0 {
		return DefaultMaxAttempts
	}
	return p.MaxAttempts
}

// Delay returns the computed delay after failed attempt n (from 1), before
// jitter: the backoff shape over BaseDelay, capped at MaxDelay.
func (p RetryPolicy) Delay(n int) time.Duration {
	base, maxD := p.BaseDelay, p.MaxDelay
	if base == 0 {
		base = DefaultBaseDelay
	}
	if maxD == 0 {
		maxD = DefaultMaxDelay
	}
	if n < 1 {
		n = 1
	}
	var d time.Duration
	switch p.Backoff {
	case BackoffLinear:
		if int64(n) > int64(maxD/base) {
			return maxD
		}
		d = base * time.Duration(n)
	case BackoffConstant:
		d = base
	default:
		if n > 62 || base > maxD>>(n-1) {
			return maxD
		}
		d = base << (n - 1)
	}
	return min(d, maxD)
}

func (p RetryPolicy) retryable(c ErrorClass) bool {
	return len(p.Retryable) == 0 || slices.Contains(p.Retryable, c)
}

func defaultJitter(d time.Duration) time.Duration {
	if d <= 0 {
		return d
	}
	return d - time.Duration(rand.Int64N(int64(d)/4+1))
}

// SleepContext waits d or until ctx ends, returning ctx's error in the
// latter case. It is the default RetryPolicy.Sleep.
func SleepContext(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Do calls fn until it succeeds, fails with an error the policy does not
// retry, or the attempts run out. fn receives the attempt number (from 1).
//
//   - A logic error (see Classify) or an excluded class is returned as is.
//   - When the attempts run out, or the next attempt would start after ctx's
//     deadline, or the provider asks to wait longer than MaxRetryAfter, Do
//     returns an *Error of KindRetriesExhausted wrapping the last error (so
//     errors.As still finds the *ProviderError).
//   - When ctx ends during a wait, Do returns an error matching both ctx's
//     error and the last error.
//
// An invalid policy fails at once with its Validate error.
func (p RetryPolicy) Do(ctx context.Context, fn func(ctx context.Context, attempt int) error) error {
	if err := p.Validate(); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return p.After(ctx, 1, fn(ctx, 1), fn)
}

// After goes on as Do does once attempt has ended with err: it returns
// what Do would return there, or waits and calls fn for the next
// attempts. A caller that made the first attempt itself (without
// waiting on it, AsyncModel) hands its outcome to After; the policy must
// be valid (Validate).
func (p RetryPolicy) After(ctx context.Context, attempt int, err error, fn func(ctx context.Context, attempt int) error) error {
	sleep := p.Sleep
	if sleep == nil {
		sleep = SleepContext
	}
	jitter := p.Jitter
	if jitter == nil {
		jitter = defaultJitter
	}
	maxRA := p.MaxRetryAfter
	if maxRA == 0 {
		maxRA = DefaultMaxRetryAfter
	}
	n := p.maxAttempts()
	for {
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			// The caller's context ended: not an infrastructure failure.
			return err
		}
		class, ok := Classify(err)
		if !ok || !p.retryable(class) {
			return err
		}
		if attempt >= n {
			return exhausted(attempt, "", err)
		}
		delay := jitter(p.Delay(attempt))
		var pe *ProviderError
		if errors.As(err, &pe) && pe.RetryAfter > 0 {
			if pe.RetryAfter > maxRA {
				return exhausted(attempt, fmt.Sprintf("the provider asked to retry after %s, more than the %s limit", pe.RetryAfter, maxRA), err)
			}
			delay = pe.RetryAfter
		}
		if dl, ok := ctx.Deadline(); ok && !time.Now().Add(delay).Before(dl) {
			return exhausted(attempt, "the next attempt would start after the deadline", err)
		}
		if p.OnRetry != nil {
			p.OnRetry(ctx, RetryInfo{Attempt: attempt, Err: err, Class: class, Delay: delay})
		}
		if serr := sleep(ctx, delay); serr != nil {
			return fmt.Errorf("llm: waiting to retry: %w (last error: %w)", serr, err)
		}
		attempt++
		if err = ctx.Err(); err != nil {
			return err
		}
		err = fn(ctx, attempt)
	}
}

func exhausted(attempts int, why string, last error) error {
	msg := fmt.Sprintf("gave up after %d attempt", attempts)
	if attempts != 1 {
		msg += "s"
	}
	if why != "" {
		msg += ": " + why
	}
	return &Error{Kind: KindRetriesExhausted, Message: msg, Err: last}
}

// RetryModel is a Model that retries its inner model under a policy. It
// implements Streamer: when the inner model streams, opening the stream is
// retried (errors after the first event are not); otherwise the stream is
// made from the completed response. Safe for concurrent use.
type RetryModel struct {
	Model  Model
	Policy RetryPolicy
}

// WithRetry wraps m in policy. An invalid policy makes every call fail with
// the policy's Validate error; check it up front with Validate.
func WithRetry(m Model, policy RetryPolicy) *RetryModel {
	return &RetryModel{Model: m, Policy: policy}
}

// Complete calls the inner model under the retry policy.
func (r *RetryModel) Complete(ctx context.Context, req Request) (*Response, error) {
	var resp *Response
	err := r.Policy.Do(ctx, func(ctx context.Context, _ int) error {
		var err error
		resp, err = r.Model.Complete(ctx, req)
		return err
	})
	if err != nil {
		return nil, err
	}
	return resp, nil
}

// Stream opens a stream from the inner model under the retry policy.
func (r *RetryModel) Stream(ctx context.Context, req Request) (*Stream, error) {
	s, ok := r.Model.(Streamer)
	if !ok {
		resp, err := r.Complete(ctx, req)
		if err != nil {
			return nil, err
		}
		return StreamOf(ResponseEvents(resp)...), nil
	}
	var st *Stream
	err := r.Policy.Do(ctx, func(ctx context.Context, _ int) error {
		var err error
		st, err = s.Stream(ctx, req)
		return err
	})
	if err != nil {
		return nil, err
	}
	return st, nil
}

// ResponseEvents returns the events a stream of resp would carry: a
// MessageStart, the text as one TextDelta, each tool call as a start and
// an end carrying the input, and a MessageDelta with the stop reason and output
// usage. Collecting them reproduces resp (without Raw and RequestID).
func ResponseEvents(resp *Response) []Event {
	evs := []Event{MessageStart{ID: resp.ID, Model: resp.Model, Usage: Usage{
		InputTokens: resp.Usage.InputTokens, CacheReadTokens: resp.Usage.CacheReadTokens,
		CacheWriteTokens: resp.Usage.CacheWriteTokens}}}
	for _, b := range resp.Provider {
		evs = append(evs, ProviderBlockEnd{Block: b})
	}
	if resp.Content != "" {
		evs = append(evs, TextDelta{Text: resp.Content})
	}
	for i, c := range resp.ToolCalls {
		input := c.Input
		if input == nil {
			input = map[string]any{}
		}
		evs = append(evs, ToolUseStart{Index: i, ID: c.ID, Name: c.Name},
			ToolUseEnd{Index: i, ToolUse: ToolUse{ID: c.ID, Name: c.Name, Input: input}})
	}
	return append(evs, MessageDelta{StopReason: resp.StopReason, Usage: Usage{OutputTokens: resp.Usage.OutputTokens, CostUSD: resp.Usage.CostUSD}})
}
