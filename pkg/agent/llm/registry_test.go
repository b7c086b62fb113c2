package llm_test

import (
	"context"
	"errors"
	"testing"

	"github.com/ptcfleet/ptc/pkg/agent/llm"
)

type ptrModel struct{}

func (*ptrModel) Complete(context.Context, llm.Request) (*llm.Response, error) {
	return &llm.Response{Content: "ptr"}, nil
}

func TestRegistryLookup(t *testing.T) {
	ok := llm.Func(func(context.Context, llm.Request) (*llm.Response, error) { return &llm.Response{Content: "ok"}, nil })
	var nilPtr *ptrModel
	reg := llm.Registry{"haiku": ok, "nil": nil, "nilfunc": llm.Func(nil), "nilptr": nilPtr, "ptr": &ptrModel{}}
	tests := []struct {
		name     string
		reg      llm.Registry
		key      string
		sentinel error
		reason   string
		message  string
	}{
		{"found", reg, "haiku", nil, "", ""},
		{"pointer model", reg, "ptr", nil, "", ""},
		{"missing", reg, "unknown", llm.ErrNotFound, "llm_not_found", "LLM :unknown not found in registry"},
		{"empty registry", llm.Registry{}, "sonnet", llm.ErrNotFound, "llm_not_found", "LLM :sonnet not found in registry"},
		{"nil value", reg, "nil", llm.ErrInvalid, "invalid_llm", "Registry value for :nil is not a function"},
		{"nil func", reg, "nilfunc", llm.ErrInvalid, "invalid_llm", "Registry value for :nilfunc is not a function"},
		{"nil pointer", reg, "nilptr", llm.ErrInvalid, "invalid_llm", "Registry value for :nilptr is not a function"},
		{"no registry", nil, "haiku", llm.ErrRegistryRequired, "llm_registry_required", "llm_registry required when using atom :haiku"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := tt.reg.Lookup(tt.key)
			if tt.sentinel == nil {
				if err != nil || m == nil {
					t.Fatalf("Lookup(%q) = %v, %v", tt.key, m, err)
				}
				if _, err := m.Complete(context.Background(), llm.Request{}); err != nil {
					t.Fatal(err)
				}
				return
			}
			if m != nil || !errors.Is(err, tt.sentinel) {
				t.Fatalf("Lookup(%q) = %v, %v; want %v", tt.key, m, err, tt.sentinel)
			}
			var le *llm.Error
			if !errors.As(err, &le) || le.Reason() != tt.reason || le.Message != tt.message || le.Name != tt.key {
				t.Fatalf("error = %#v, want reason %q message %q", le, tt.reason, tt.message)
			}
			for _, other := range []error{llm.ErrNotFound, llm.ErrInvalid, llm.ErrRegistryRequired} {
				if other != tt.sentinel && errors.Is(err, other) {
					t.Errorf("%v also matches %v", err, other)
				}
			}
		})
	}
}

func TestRegistryNames(t *testing.T) {
	reg := llm.Registry{"b": nil, "a": nil, "c": nil}
	if got := reg.Names(); len(got) != 3 || got[0] != "a" || got[2] != "c" {
		t.Errorf("Names = %v", got)
	}
}
