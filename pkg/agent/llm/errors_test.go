package llm_test

import (
	"errors"
	"io"
	"testing"

	"github.com/ptcfleet/ptc/pkg/agent/llm"
)

func TestProviderErrorText(t *testing.T) {
	tests := []struct {
		err  *llm.ProviderError
		want string
	}{
		{&llm.ProviderError{Provider: "openai", StatusCode: 429, Type: "requests", Message: "slow down", RequestID: "req_1"}, "openai: 429 requests: slow down (request id req_1)"},
		{&llm.ProviderError{Provider: "anthropic", Type: "overloaded_error", Message: "Overloaded"}, "anthropic: overloaded_error: Overloaded"},
		{&llm.ProviderError{StatusCode: 500}, "500 error"},
		{&llm.ProviderError{Provider: "p", Type: "connection_error", Err: io.ErrUnexpectedEOF}, "p: connection_error: unexpected EOF"},
		{&llm.ProviderError{Provider: "p", Type: "connection_error", Message: "dial tcp: [redacted]", Err: errors.New("dial tcp: sk-live-key")}, "p: connection_error: dial tcp: [redacted]"},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
	}
	pe := &llm.ProviderError{Err: io.ErrUnexpectedEOF}
	if !errors.Is(pe, io.ErrUnexpectedEOF) {
		t.Error("ProviderError must unwrap to Err")
	}
}

func TestErrorKinds(t *testing.T) {
	cause := errors.New("cause")
	e := &llm.Error{Kind: llm.KindRetriesExhausted, Message: "gave up after 3 attempts", Err: cause}
	if e.Error() != "llm_error: gave up after 3 attempts: cause" || e.Reason() != "llm_error" || !errors.Is(e, cause) || !errors.Is(e, llm.ErrRetriesExhausted) || errors.Is(e, llm.ErrConfig) {
		t.Errorf("error = %v", e)
	}
	// A non-sentinel target with the same kind does not match.
	if errors.Is(e, &llm.Error{Kind: llm.KindRetriesExhausted, Message: "other"}) {
		t.Error("Is must match bare sentinels only")
	}
}
