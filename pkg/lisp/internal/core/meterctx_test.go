package core

import (
	"context"
	"testing"
)

// WithNewMeter's context carries the meter it returns, made with it in
// one allocation; the meter charges as NewMeter's does, and the context
// answers its parent's keys.
func TestWithNewMeter(t *testing.T) {
	type key struct{}
	parent := context.WithValue(context.Background(), key{}, "v")
	ctx, m := WithNewMeter(parent, 10, "raise it")
	if MeterFrom(ctx) != m || m.Limit() != 10 {
		t.Fatalf("the context's meter %p, limit %d; want %p of 10", MeterFrom(ctx), m.Limit(), m)
	}
	if ctx.Value(key{}) != "v" {
		t.Errorf("the parent's value: %v", ctx.Value(key{}))
	}
	if err := m.Charge(8); err != nil {
		t.Fatal(err)
	}
	if err := m.Charge(8); err == nil {
		t.Error("a charge past the limit: no error")
	}
	if raceAllocSlack != 0 {
		return
	}
	var kept context.Context
	if n := testing.AllocsPerRun(100, func() { kept, _ = WithNewMeter(parent, 10, "") }); n > 1 {
		t.Errorf("WithNewMeter: %.0f allocations, want 1", n)
	}
	// what it stands for, a meter and a context made apart: two
	var apart context.Context
	if n := testing.AllocsPerRun(100, func() { apart = WithMeter(parent, NewMeter(10, "")) }); n != 2 {
		t.Errorf("WithMeter(NewMeter()): %.0f allocations, want 2", n)
	}
	_, _ = kept, apart
}
