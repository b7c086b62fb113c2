package fleet

import (
	"context"
	"testing"

	"github.com/ptcfleet/ptc/pkg/messages"
)

// A reservation names the worker's cap in what it tells a program that
// outgrew it, written once with the budget rather than for every mission.
func TestMemoryBudgetReserve(t *testing.T) {
	ctx := context.Background()
	m := &messages.Mission{ID: messages.NewMissionID()}
	b := newMemoryBudget(64 << 20)
	r, release, err := b.reserve(ctx, m)
	if err != nil {
		t.Fatal(err)
	}
	release()
	if want := "the mission's program_memory, which this worker's memory budget caps at 67108864; raise limits.program_memory"; r.raise != want {
		t.Fatalf("raise %q, want %q", r.raise, want)
	}
	if r, _, _ := newMemoryBudget(0).reserve(ctx, m); r.raise != "the mission's program_memory; raise limits.program_memory" {
		t.Fatalf("with no budget: raise %q", r.raise)
	}
	if n := testing.AllocsPerRun(100, func() {
		_, release, err := b.reserve(ctx, m)
		if err != nil {
			t.Fatal(err)
		}
		release()
	}); n > 1 {
		t.Fatalf("%.0f allocations per reservation, want at most 1 (the release)", n)
	}
}
