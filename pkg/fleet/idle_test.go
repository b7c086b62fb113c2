package fleet_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/ptcfleet/ptc/pkg/fleet"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// An idle worker serving several priorities starts a mission of any
// priority as soon as it is submitted: it keeps a long poll outstanding on
// every priority instead of waiting on one at a time. IdleWait is set above
// the missions' deadline, so a worker that waited on the wrong
// priority would miss it. With one slot the polls rotate, and every mission
// still runs.
func TestIdleWorkerPicksUpEveryPriorityAtOnce(t *testing.T) {
	for _, slots := range []int{4, 1} {
		t.Run(fmt.Sprintf("slots=%d", slots), func(t *testing.T) {
			_, nc := runJetStream(t)
			c := newClient(t, nc)
			idle := 5 * time.Second
			if slots == 1 {
				idle = 300 * time.Millisecond // rotation needs the polls to end
			}
			w := startWorker(t, nc, fleet.RunnerFunc(func(ctx context.Context, m *messages.Mission, env fleet.RunEnv) (*messages.Step, error) {
				return &messages.Step{Return: m.Priority}, nil
			}), func(cfg *fleet.WorkerConfig) {
				cfg.Slots, cfg.Priorities, cfg.IdleWait = slots, messages.Priorities(), idle
			})
			for round := range 2 {
				for _, p := range []string{messages.PriorityLow, messages.PriorityNormal, messages.PriorityHigh} {
					ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
					m := newMission()
					m.Priority = p
					step, err := c.Run(ctx, m)
					cancel()
					if err != nil {
						t.Fatalf("round %d, priority %s: %v", round, p, err)
					}
					if step.Return != p {
						t.Errorf("return = %v, want %s", step.Return, p)
					}
				}
			}
			// Slots held by the outstanding polls do not count as running.
			eventually(t, 5*time.Second, "Running() = 0 on an idle worker", func() bool { return w.Running() == 0 })
		})
	}
}
