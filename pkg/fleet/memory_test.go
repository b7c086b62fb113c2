package fleet_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ptcfleet/ptc/pkg/fleet"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// TestMemoryBudgetAdmission: a worker runs at once only the missions
// whose program_memory fits its memory budget; the others wait (not
// fail) until running ones finish, and each run is told what it
// reserved. Two missions of 64 MiB under a 100 MiB budget run one after
// the other although the worker has four slots; a mission asking for
// more than the budget, or for no limit, reserves the whole budget.
func TestMemoryBudgetAdmission(t *testing.T) {
	_, nc := runJetStream(t)
	var running, most atomic.Int64
	var mu sync.Mutex
	reserved := map[string]int64{}
	runner := fleet.RunnerFunc(func(ctx context.Context, m *messages.Mission, env fleet.RunEnv) (*messages.Step, error) {
		n := running.Add(1)
		defer running.Add(-1)
		for {
			if old := most.Load(); n <= old || most.CompareAndSwap(old, n) {
				break
			}
		}
		mu.Lock()
		reserved[m.ID] = env.Memory
		mu.Unlock()
		time.Sleep(800 * time.Millisecond)
		return &messages.Step{Return: "ok"}, nil
	})
	const budget = 100 << 20
	startWorker(t, nc, runner, func(c *fleet.WorkerConfig) { c.MemoryBudget = budget })
	c := newClient(t, nc)
	ctx := testCtx(t)

	missions := []*messages.Mission{newMission(), newMission(), newMission(), newMission()}
	missions[2].Limits.ProgramMemory = 1 << 30  // over the budget: all of it
	missions[3].Agent.Limits.ProgramMemory = -1 // no limit: all of it
	var wg sync.WaitGroup
	for _, m := range missions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			step, err := c.Run(ctx, m)
			if err != nil || step.Fail != nil {
				t.Errorf("mission %s: %+v, %v", m.ID, step, err)
			}
		}()
	}
	wg.Wait()
	if n := most.Load(); n != 1 {
		t.Errorf("%d missions ran at once; the budget holds one", n)
	}
	want := []int64{messages.DefaultProgramMemory, messages.DefaultProgramMemory, budget, budget}
	for i, m := range missions {
		if got := reserved[m.ID]; got != want[i] {
			t.Errorf("mission %d reserved %d, want %d", i, got, want[i])
		}
	}

	// small missions share it: three of 32 MiB run at once
	most.Store(0)
	for range 3 {
		m := newMission()
		m.Limits.ProgramMemory = 32 << 20
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := c.Run(ctx, m); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if n := most.Load(); n != 3 {
		t.Errorf("%d missions of 32 MiB ran at once under a 100 MiB budget, want 3", n)
	}
}
