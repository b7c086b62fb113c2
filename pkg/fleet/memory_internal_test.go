package fleet

import (
	"context"
	"testing"

	"github.com/rs/zerolog"

	"github.com/ptcfleet/ptc/pkg/messages"
)

// A reservation names the worker's cap in what it tells a program that
// outgrew it, written once with the budget rather than for every mission.
func TestMemoryBudgetReserve(t *testing.T) {
	ctx := context.Background()
	m := &messages.Mission{ID: messages.NewMissionID()}
	b := newMemoryBudget(64 << 20)
	r, err := b.reserve(ctx, m)
	if err != nil {
		t.Fatal(err)
	}
	r.release()
	if want := "the mission's program_memory, which this worker's memory budget caps at 67108864; raise limits.program_memory"; r.raise != want {
		t.Fatalf("raise %q, want %q", r.raise, want)
	}
	if r, _ := newMemoryBudget(0).reserve(ctx, m); r.raise != "the mission's program_memory; raise limits.program_memory" {
		t.Fatalf("with no budget: raise %q", r.raise)
	}
	if n := testing.AllocsPerRun(100, func() {
		r, err := b.reserve(ctx, m)
		if err != nil {
			t.Fatal(err)
		}
		r.release()
	}); n != 0 {
		t.Fatalf("%.0f allocations per reservation, want 0 (it gives itself back)", n)
	}
}

// A mission's admission and its release allocate nothing: the run keeps
// what it reserved, not a function to give it back.
func TestAdmitAllocations(t *testing.T) {
	ctx := context.Background()
	m := &messages.Mission{ID: messages.NewMissionID()}
	w := &Worker{memory: newMemoryBudget(64 << 20)}
	log := zerolog.Nop()
	var env RunEnv
	r, err := w.admit(ctx, m, &env, &log)
	if err != nil || env.Memory != r.limit || r.held != r.limit {
		t.Fatalf("admit: %+v, %v; env.Memory %d", r, err, env.Memory)
	}
	w.releaseMemory(r.limit, r.held)
	// all of it given back: the whole budget can be reserved at once
	if !w.memory.sem.TryAcquire(64 << 20) {
		t.Fatal("the reservation was not given back")
	}
	w.memory.sem.Release(64 << 20)
	if n := testing.AllocsPerRun(100, func() {
		r, err := w.admit(ctx, m, &env, &log)
		if err != nil {
			t.Fatal(err)
		}
		w.releaseMemory(r.limit, r.held)
	}); n != 0 {
		t.Fatalf("%.0f allocations to admit a mission and release it, want 0", n)
	}
}
