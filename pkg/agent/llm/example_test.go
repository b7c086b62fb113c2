package llm_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ptcfleet/ptc/pkg/agent/llm"
)

// A closure becomes a Model with llm.Func; WithRetry retries its
// infrastructure errors (here a 429 with Retry-After) but not logic errors.
func ExampleWithRetry() {
	calls := 0
	flaky := llm.Func(func(ctx context.Context, req llm.Request) (*llm.Response, error) {
		calls++
		if calls == 1 {
			return nil, &llm.ProviderError{Provider: "demo", StatusCode: 429, Type: "rate_limit_error",
				Message: "slow down", Retryable: true, RetryAfter: 2 * time.Second}
		}
		return &llm.Response{Content: "(return 42)"}, nil
	})
	policy := llm.RetryPolicy{
		MaxAttempts: 3,
		Backoff:     llm.BackoffExponential,
		Sleep: func(ctx context.Context, d time.Duration) error { // instant, for the example
			fmt.Println("waiting", d)
			return nil
		},
	}
	resp, err := llm.WithRetry(flaky, policy).Complete(context.Background(), llm.Request{
		System: "You write PTC-Lisp.", Messages: []llm.Message{llm.UserText("Answer 42")}})
	fmt.Println(resp.Content, err, "after", calls, "calls")
	// Output:
	// waiting 2s
	// (return 42) <nil> after 2 calls
}

// Registry lookups fail with the specification's reasons and messages.
func ExampleRegistry_Lookup() {
	reg := llm.Registry{"haiku": llm.Func(func(context.Context, llm.Request) (*llm.Response, error) {
		return &llm.Response{Content: "hi"}, nil
	})}
	_, err := reg.Lookup("sonnet")
	var le *llm.Error
	if errors.As(err, &le) {
		fmt.Println(le.Reason(), "|", le.Message)
	}
	_, err = llm.Registry(nil).Lookup("haiku")
	fmt.Println(errors.Is(err, llm.ErrRegistryRequired), err)
	// Output:
	// llm_not_found | LLM :sonnet not found in registry
	// true llm_registry_required: llm_registry required when using atom :haiku
}
