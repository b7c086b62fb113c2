package llm_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ptcfleet/ptc/pkg/agent/llm"
)

// recorder is an instant Sleep that records the delays asked for.
type recorder struct {
	mu     sync.Mutex
	delays []time.Duration
}

func (r *recorder) sleep(ctx context.Context, d time.Duration) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.delays = append(r.delays, d)
	return ctx.Err()
}

func noJitter(d time.Duration) time.Duration { return d }

func TestDelayShapes(t *testing.T) {
	s := time.Second
	tests := []struct {
		name string
		p    llm.RetryPolicy
		want []time.Duration // for attempts 1..len
	}{
		{"default exponential", llm.RetryPolicy{}, []time.Duration{s, 2 * s, 4 * s, 8 * s, 16 * s, 30 * s, 30 * s}},
		{"exponential base 100ms cap 1s", llm.RetryPolicy{Backoff: llm.BackoffExponential, BaseDelay: 100 * time.Millisecond, MaxDelay: s},
			[]time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond, s}},
		{"linear", llm.RetryPolicy{Backoff: llm.BackoffLinear, BaseDelay: 500 * time.Millisecond, MaxDelay: 2 * s},
			[]time.Duration{500 * time.Millisecond, s, 1500 * time.Millisecond, 2 * s, 2 * s}},
		{"constant", llm.RetryPolicy{Backoff: llm.BackoffConstant, BaseDelay: 250 * time.Millisecond},
			[]time.Duration{250 * time.Millisecond, 250 * time.Millisecond, 250 * time.Millisecond}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for i, want := range tt.want {
				if got := tt.p.Delay(i + 1); got != want {
					t.Errorf("Delay(%d) = %s, want %s", i+1, got, want)
				}
			}
		})
	}
	// Huge attempt numbers saturate instead of overflowing.
	for _, b := range []llm.Backoff{llm.BackoffExponential, llm.BackoffLinear} {
		p := llm.RetryPolicy{Backoff: b, BaseDelay: time.Hour, MaxDelay: 2 * time.Hour}
		if got := p.Delay(1 << 30); got != 2*time.Hour {
			t.Errorf("%s Delay(huge) = %s", b, got)
		}
	}
}

func TestDefaultJitterStaysInRange(t *testing.T) {
	rec := &recorder{}
	p := llm.RetryPolicy{MaxAttempts: 30, Backoff: llm.BackoffConstant, BaseDelay: time.Second, Sleep: rec.sleep}
	_ = p.Do(context.Background(), func(context.Context, int) error { return rate429() })
	if len(rec.delays) != 29 {
		t.Fatalf("delays = %d", len(rec.delays))
	}
	for _, d := range rec.delays {
		if d < 750*time.Millisecond || d > time.Second {
			t.Errorf("jittered delay %s outside [750ms, 1s]", d)
		}
	}
}

func rate429() error {
	return &llm.ProviderError{Provider: "p", StatusCode: 429, Type: "rate_limit_error", Message: "slow down", Retryable: true}
}

func TestClassify(t *testing.T) {
	pe := func(status int, typ string, retry bool) error {
		return &llm.ProviderError{StatusCode: status, Type: typ, Retryable: retry}
	}
	tests := []struct {
		name  string
		err   error
		class llm.ErrorClass
		ok    bool
	}{
		{"nil", nil, "", false},
		{"plain error is logic", errors.New("bad program"), "", false},
		{"canceled", context.Canceled, "", false},
		{"deadline", context.DeadlineExceeded, llm.ClassTimeout, true},
		{"429", pe(429, "rate_limit_error", true), llm.ClassRateLimit, true},
		{"529", pe(529, "overloaded_error", true), llm.ClassOverloaded, true},
		{"500", pe(500, "api_error", true), llm.ClassServer, true},
		{"503", pe(503, "", true), llm.ClassServer, true},
		{"408", pe(408, "", true), llm.ClassTimeout, true},
		{"409", pe(409, "", true), llm.ClassConflict, true},
		{"400 not retryable", pe(400, "invalid_request_error", false), "", false},
		{"stream overloaded", pe(0, "overloaded_error", true), llm.ClassOverloaded, true},
		{"stream rate limit", pe(0, "rate_limit_error", true), llm.ClassRateLimit, true},
		{"transport timeout", pe(0, "timeout", true), llm.ClassTimeout, true},
		{"transport connection", pe(0, "connection_error", true), llm.ClassConnection, true},
		{"wrapped provider", fmt.Errorf("turn 2: %w", pe(429, "", true)), llm.ClassRateLimit, true},
		{"marked", llm.MarkRetryable(errors.New("flaky"), llm.ClassServer), llm.ClassServer, true},
		{"net timeout", &net.OpError{Op: "dial", Err: os.ErrDeadlineExceeded}, llm.ClassTimeout, true},
		{"conn refused", &net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}, llm.ClassConnection, true},
		{"reset", fmt.Errorf("read: %w", syscall.ECONNRESET), llm.ClassConnection, true},
		{"unexpected eof", io.ErrUnexpectedEOF, llm.ClassConnection, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, ok := llm.Classify(tt.err)
			if c != tt.class || ok != tt.ok {
				t.Errorf("Classify = %q, %v; want %q, %v", c, ok, tt.class, tt.ok)
			}
		})
	}
	if llm.MarkRetryable(nil, llm.ClassServer) != nil {
		t.Error("MarkRetryable(nil) must be nil")
	}
}

func TestDo(t *testing.T) {
	logic := errors.New("logic")
	bad400 := &llm.ProviderError{StatusCode: 400, Type: "invalid_request_error", Message: "max_tokens: too big"}
	srv500 := &llm.ProviderError{StatusCode: 500, Type: "api_error", Retryable: true}
	tests := []struct {
		name      string
		policy    llm.RetryPolicy
		errs      []error // per attempt; nil = success
		wantCalls int
		wantErr   error
		exhausted bool
		delays    []time.Duration
	}{
		{"success first", llm.RetryPolicy{}, []error{nil}, 1, nil, false, nil},
		{"429 then success", llm.RetryPolicy{}, []error{rate429(), nil}, 2, nil, false, []time.Duration{time.Second}},
		{"logic error not retried", llm.RetryPolicy{}, []error{logic}, 1, logic, false, nil},
		{"400 not retried", llm.RetryPolicy{}, []error{bad400}, 1, bad400, false, nil},
		{"exhausted after 3", llm.RetryPolicy{}, []error{srv500, srv500, srv500}, 3, srv500, true, []time.Duration{time.Second, 2 * time.Second}},
		{"max attempts 1", llm.RetryPolicy{MaxAttempts: 1}, []error{srv500}, 1, srv500, true, nil},
		{"linear 5", llm.RetryPolicy{MaxAttempts: 5, Backoff: llm.BackoffLinear, BaseDelay: 10 * time.Millisecond},
			[]error{srv500, srv500, srv500, srv500, nil}, 5, nil, false,
			[]time.Duration{10 * time.Millisecond, 20 * time.Millisecond, 30 * time.Millisecond, 40 * time.Millisecond}},
		{"class filter excludes server", llm.RetryPolicy{Retryable: []llm.ErrorClass{llm.ClassRateLimit, llm.ClassTimeout}},
			[]error{srv500}, 1, srv500, false, nil},
		{"class filter includes rate limit", llm.RetryPolicy{Retryable: []llm.ErrorClass{llm.ClassRateLimit}},
			[]error{rate429(), nil}, 2, nil, false, []time.Duration{time.Second}},
		{"retry-after honoured", llm.RetryPolicy{}, []error{&llm.ProviderError{StatusCode: 429, Retryable: true, RetryAfter: 7 * time.Second}, nil},
			2, nil, false, []time.Duration{7 * time.Second}},
		{"retry-after beyond limit", llm.RetryPolicy{MaxRetryAfter: 5 * time.Second},
			[]error{&llm.ProviderError{StatusCode: 429, Retryable: true, RetryAfter: 10 * time.Second}}, 1, nil, true, nil},
	}
	// After, handed the first attempt's outcome by a caller that made it
	// itself, goes on as Do does
	for _, tt := range tests {
		for _, after := range []bool{false, true} {
			name := tt.name
			if after {
				name += " (After)"
			}
			t.Run(name, func(t *testing.T) {
				rec := &recorder{}
				p := tt.policy
				p.Sleep, p.Jitter = rec.sleep, noJitter
				var infos []llm.RetryInfo
				p.OnRetry = func(_ context.Context, info llm.RetryInfo) { infos = append(infos, info) }
				calls := 0
				fn := func(_ context.Context, attempt int) error {
					calls++
					if attempt != calls {
						t.Errorf("attempt %d on call %d", attempt, calls)
					}
					return tt.errs[calls-1]
				}
				var err error
				if after {
					err = p.After(context.Background(), 1, fn(context.Background(), 1), fn)
				} else {
					err = p.Do(context.Background(), fn)
				}
				if calls != tt.wantCalls {
					t.Errorf("calls = %d, want %d", calls, tt.wantCalls)
				}
				if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
					t.Errorf("err = %v, want %v", err, tt.wantErr)
				}
				if tt.wantErr == nil && !tt.exhausted && err != nil {
					t.Errorf("err = %v", err)
				}
				if got := errors.Is(err, llm.ErrRetriesExhausted); got != tt.exhausted {
					t.Errorf("exhausted = %v (%v), want %v", got, err, tt.exhausted)
				}
				if tt.exhausted {
					var pe *llm.ProviderError
					if !errors.As(err, &pe) {
						t.Errorf("exhausted error must wrap the provider error: %v", err)
					}
				}
				if fmt.Sprint(rec.delays) != fmt.Sprint(tt.delays) && !(len(rec.delays) == 0 && len(tt.delays) == 0) {
					t.Errorf("delays = %v, want %v", rec.delays, tt.delays)
				}
				if len(infos) != len(rec.delays) {
					t.Errorf("OnRetry called %d times for %d waits", len(infos), len(rec.delays))
				}
			})
		}
	}
}

func TestDoNeverRetriesPastDeadline(t *testing.T) {
	rec := &recorder{}
	p := llm.RetryPolicy{BaseDelay: time.Hour, MaxDelay: time.Hour, Sleep: rec.sleep, Jitter: noJitter}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	calls := 0
	err := p.Do(ctx, func(context.Context, int) error { calls++; return rate429() })
	if calls != 1 || len(rec.delays) != 0 {
		t.Fatalf("calls %d delays %v: a retry after 1h must not start before a 1m deadline", calls, rec.delays)
	}
	if !errors.Is(err, llm.ErrRetriesExhausted) || !strings.Contains(err.Error(), "after the deadline") {
		t.Errorf("err = %v", err)
	}
}

func TestDoStopsWhenContextEnds(t *testing.T) {
	t.Run("during sleep", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		p := llm.RetryPolicy{Sleep: func(ctx context.Context, d time.Duration) error { cancel(); return ctx.Err() }}
		err := p.Do(ctx, func(context.Context, int) error { return rate429() })
		if !errors.Is(err, context.Canceled) {
			t.Errorf("err = %v, want canceled", err)
		}
		var pe *llm.ProviderError
		if !errors.As(err, &pe) || pe.StatusCode != 429 {
			t.Errorf("err should keep the last error: %v", err)
		}
	})
	t.Run("during call", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		calls := 0
		err := llm.RetryPolicy{}.Do(ctx, func(ctx context.Context, _ int) error {
			calls++
			cancel()
			return fmt.Errorf("post: %w", ctx.Err())
		})
		if calls != 1 || !errors.Is(err, context.Canceled) {
			t.Errorf("calls %d err %v", calls, err)
		}
	})
	t.Run("real sleep is cancellable", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer cancel()
		if err := llm.SleepContext(ctx, time.Hour); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("SleepContext = %v", err)
		}
		if err := llm.SleepContext(context.Background(), time.Microsecond); err != nil {
			t.Errorf("SleepContext = %v", err)
		}
	})
}

func TestPolicyValidate(t *testing.T) {
	tests := []struct {
		p    llm.RetryPolicy
		want string
	}{
		{llm.RetryPolicy{}, ""},
		{llm.RetryPolicy{MaxAttempts: 5, Backoff: "linear", BaseDelay: time.Millisecond, Retryable: []llm.ErrorClass{"timeout"}}, ""},
		{llm.RetryPolicy{MaxAttempts: -1}, "llm_retry.max_attempts: must be at least 1, got -1"},
		{llm.RetryPolicy{Backoff: "fibonacci"}, `llm_retry.backoff: unknown backoff "fibonacci"`},
		{llm.RetryPolicy{BaseDelay: -time.Second}, "llm_retry.base_delay: must not be negative"},
		{llm.RetryPolicy{MaxDelay: -time.Second}, "llm_retry.max_delay: must not be negative"},
		{llm.RetryPolicy{MaxRetryAfter: -time.Second}, "llm_retry.max_retry_after: must not be negative"},
		{llm.RetryPolicy{Retryable: []llm.ErrorClass{"network"}}, `llm_retry.retryable_errors: unknown error class "network"`},
	}
	for _, tt := range tests {
		err := tt.p.Validate()
		if tt.want == "" {
			if err != nil {
				t.Errorf("%+v: %v", tt.p, err)
			}
			continue
		}
		if !errors.Is(err, llm.ErrConfig) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Validate() = %v, want %q", err, tt.want)
		}
		// An invalid policy fails Do without calling fn.
		if derr := tt.p.Do(context.Background(), func(context.Context, int) error { t.Error("fn called"); return nil }); !errors.Is(derr, llm.ErrConfig) {
			t.Errorf("Do = %v", derr)
		}
	}
}

// flaky fails with errs in turn, then answers.
type flaky struct {
	errs  []error
	calls int
}

func (f *flaky) Complete(context.Context, llm.Request) (*llm.Response, error) {
	f.calls++
	if f.calls <= len(f.errs) {
		return nil, f.errs[f.calls-1]
	}
	return &llm.Response{Content: "fine", StopReason: llm.StopEndTurn, Usage: llm.Usage{InputTokens: 3, OutputTokens: 1},
		ToolCalls: []llm.ToolUse{{ID: "c1", Name: "t", Input: map[string]any{"n": int64(1)}}}}, nil
}

type flakyStreamer struct{ flaky }

func (f *flakyStreamer) Stream(ctx context.Context, req llm.Request) (*llm.Stream, error) {
	resp, err := f.Complete(ctx, req)
	if err != nil {
		return nil, err
	}
	return llm.StreamOf(llm.ResponseEvents(resp)...), nil
}

func TestRetryModel(t *testing.T) {
	rec := &recorder{}
	policy := llm.RetryPolicy{Sleep: rec.sleep, Jitter: noJitter}
	ctx := context.Background()

	inner := &flaky{errs: []error{rate429(), rate429()}}
	resp, err := llm.WithRetry(inner, policy).Complete(ctx, llm.Request{})
	if err != nil || resp.Content != "fine" || inner.calls != 3 {
		t.Fatalf("Complete = %+v, %v after %d calls", resp, err, inner.calls)
	}

	// A non-streaming inner model still streams through the retry wrapper.
	inner = &flaky{errs: []error{rate429()}}
	st, err := llm.WithRetry(inner, policy).Stream(ctx, llm.Request{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := llm.Collect(st)
	if err != nil || got.Content != "fine" || got.Usage.InputTokens != 3 || got.Usage.OutputTokens != 1 || got.ToolCalls[0].Input["n"] != int64(1) || inner.calls != 2 {
		t.Fatalf("Collect = %+v, %v", got, err)
	}

	fs := &flakyStreamer{flaky{errs: []error{rate429()}}}
	got, err = llm.Complete(ctx, llm.WithRetry(fs, policy), llm.Request{}, true)
	if err != nil || got.Content != "fine" || fs.calls != 2 {
		t.Fatalf("streamed = %+v, %v", got, err)
	}

	fs = &flakyStreamer{flaky{errs: []error{rate429(), rate429(), rate429()}}}
	if _, err := llm.WithRetry(fs, policy).Stream(ctx, llm.Request{}); !errors.Is(err, llm.ErrRetriesExhausted) {
		t.Fatalf("err = %v", err)
	}
	bad := llm.WithRetry(&flaky{}, llm.RetryPolicy{Backoff: "x"})
	if _, err := bad.Complete(ctx, llm.Request{}); !errors.Is(err, llm.ErrConfig) {
		t.Fatalf("invalid policy: %v", err)
	}
}
