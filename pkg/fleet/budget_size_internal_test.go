package fleet

import (
	"runtime"
	"testing"

	"github.com/rs/zerolog"
)

// A mission's budget shares the mission's logger rather than holding a
// copy of it, which was bigger than the rest of the budget and held
// while the mission waited: 48 bytes a mission against 160.
func TestMissionBudgetIsSmall(t *testing.T) {
	b := &Budgets{}
	log := zerolog.Nop()
	const n = 1000
	keep := make([]*MissionBudget, n)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for i := range keep {
		keep[i] = b.forMission("alice", nil, &log)
	}
	runtime.ReadMemStats(&after)
	if per := (after.TotalAlloc - before.TotalAlloc) / n; per > 64 {
		t.Errorf("a mission's budget takes %d bytes; want at most 64", per)
	}
	if keep[n-1].logger() != &log || (&MissionBudget{}).logger() == nil {
		t.Error("a mission's budget does not log through the mission's logger, or one without a logger has none")
	}
}
