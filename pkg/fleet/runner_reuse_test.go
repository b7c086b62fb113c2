package fleet_test

import (
	"bytes"
	"context"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ptcfleet/ptc/pkg/fleet"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// goroutineID is the id of the calling goroutine, from its stack's header
// ("goroutine 42 [running]:").
func goroutineID() string {
	buf := make([]byte, 64)
	buf = buf[:runtime.Stack(buf, false)]
	id, _, _ := bytes.Cut(bytes.TrimPrefix(buf, []byte("goroutine ")), []byte(" "))
	return string(id)
}

// runnerGoroutines counts the goroutines waiting in or running a worker's
// mission runner.
func runnerGoroutines() int {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	return strings.Count(string(buf), "fleet.(*Worker).runner(")
}

// Missions one after another run on one goroutine, which keeps the stack
// the first grew; the goroutines left waiting end after about a second,
// or when the worker stops.
func TestMissionsInTurnRunOnOneGoroutine(t *testing.T) {
	_, nc := runJetStream(t)
	var mu sync.Mutex
	ids := map[string]int{}
	w := startWorker(t, nc, fleet.RunnerFunc(func(ctx context.Context, m *messages.Mission, env fleet.RunEnv) (*messages.Step, error) {
		mu.Lock()
		ids[goroutineID()]++
		mu.Unlock()
		return &messages.Step{Return: true}, nil
	}))
	c := newClient(t, nc)
	ctx := testCtx(t)
	for range 5 {
		if st, err := c.Run(ctx, newMission()); err != nil || st.Fail != nil {
			t.Fatalf("mission: %v %+v", err, st)
		}
		// the result reaches the client before the worker is done with
		// the mission (its final status, its ack)
		eventually(t, 5*time.Second, "the runner waits for the next mission", func() bool { return fleet.IdleRunners(w) == 1 })
	}
	mu.Lock()
	if len(ids) != 1 {
		t.Errorf("5 missions in turn ran on %d goroutines (%v), want 1", len(ids), ids)
	}
	mu.Unlock()
	eventually(t, 10*time.Second, "the idle runner ends", func() bool { return runnerGoroutines() == 0 })

	// a burst leaves at most 4 runners waiting, and Stop ends them
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := c.Run(ctx, newMission()); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	// a run whose end waited gave its slot back while its goroutine
	// stored the end, so a fifth may still be storing one: it ends as it
	// finds the slots' number of runners waiting
	eventually(t, 5*time.Second, "at most 4 runners after the burst", func() bool { return runnerGoroutines() <= 4 })
	if err := w.Stop(); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "no runner after Stop", func() bool { return runnerGoroutines() == 0 })
}

// Missions that finish together while the next fetch is out leave up to
// the worker's slots of runners waiting, so the missions that fetch
// brings run on the goroutines (and the stacks) of the last ones; beyond
// four, they wait only as long as a fetch takes.
func TestABurstOfSlotsMissionsKeepsItsRunners(t *testing.T) {
	const slots = 8
	for _, tc := range []struct {
		name  string
		grace time.Duration
	}{{"pinned", 10 * time.Second}, {"default", 0}} {
		t.Run(tc.name, func(t *testing.T) {
			_, nc := runJetStream(t)
			var mu sync.Mutex
			ids := map[string]int{}
			started := make(chan struct{}, 2*slots)
			release := make(chan struct{})
			edit := []func(*fleet.WorkerConfig){func(c *fleet.WorkerConfig) { c.Slots = slots }}
			if tc.grace > 0 {
				// every runner waits out the second burst's arrival,
				// however loaded the machine (a kept runner waits 1 s)
				edit = append(edit, fleet.RunnerGrace(tc.grace), fleet.RunnerIdle(tc.grace))
			}
			w := startWorker(t, nc, fleet.RunnerFunc(func(ctx context.Context, m *messages.Mission, env fleet.RunEnv) (*messages.Step, error) {
				mu.Lock()
				ids[goroutineID()]++
				mu.Unlock()
				started <- struct{}{}
				select {
				case <-release:
				case <-ctx.Done():
				}
				return &messages.Step{Return: true}, nil
			}), edit...)
			c := newClient(t, nc)
			ctx := testCtx(t)
			burst := func() {
				var wg sync.WaitGroup
				for range slots {
					wg.Go(func() {
						if st, err := c.Run(ctx, newMission()); err != nil || st.Fail != nil {
							t.Errorf("mission: %v %+v", err, st)
						}
					})
				}
				for range slots {
					select {
					case <-started:
					case <-ctx.Done():
						t.Fatal("the burst's missions did not all start")
					}
				}
				for range slots {
					release <- struct{}{}
				}
				wg.Wait()
			}
			burst()
			if tc.grace == 0 {
				// beyond four, the runners leave once a fetch would have come
				eventually(t, 500*time.Millisecond, "four runners left waiting", func() bool { return fleet.IdleRunners(w) <= 4 })
				return
			}
			eventually(t, 5*time.Second, "every runner waits for the next mission", func() bool { return fleet.IdleRunners(w) == slots })
			burst()
			mu.Lock()
			defer mu.Unlock()
			// The first burst's runs may end while the worker believes a
			// mission waits on their lane (its notice heard after the
			// fetch that took it): their ends wait (finishGate), their slots given
			// back while their goroutines store them, and the long poll
			// the loop opens on that lane meanwhile goes to a goroutine
			// of its own, which runs the mission it brings. One lane,
			// one such poll: the second burst reuses the rest.
			if len(ids) < slots || len(ids) > slots+1 {
				t.Errorf("two bursts of %d missions ran on %d goroutines, want %d (%d with a poll opened while the first burst's ends waited)", slots, len(ids), slots, slots+1)
			}
		})
	}
}

// A tool service's calls one after another run on one goroutine, which
// keeps the stack the first grew, when each comes while the last one's
// goroutine waits; that goroutine ends soon after the last call, or when
// the service stops.
func TestToolCallsInTurnRunOnOneGoroutine(t *testing.T) {
	_, nc := runJetStream(t)
	callers := func() int {
		buf := make([]byte, 1<<20)
		return strings.Count(string(buf[:runtime.Stack(buf, true)]), "fleet.(*ToolService).caller(")
	}
	for _, grace := range []time.Duration{10 * time.Second, 0} {
		svc, err := fleet.NewToolService(nc, fleet.ToolServiceConfig{Name: "turns"})
		if err != nil {
			t.Fatal(err)
		}
		if grace > 0 {
			fleet.CallerGrace(svc, grace)
		}
		var mu sync.Mutex
		ids := map[string]int{}
		if err := svc.Register("who", fleet.ToolSpec{Signature: "() -> :int"}, func(context.Context, map[string]any) (any, error) {
			mu.Lock()
			ids[goroutineID()]++
			mu.Unlock()
			return 1, nil
		}); err != nil {
			t.Fatal(err)
		}
		body, err := messages.Marshal(&messages.ToolRequest{Version: 1, CallID: "1", Tool: "who", Args: map[string]any{}})
		if err != nil {
			t.Fatal(err)
		}
		call := func() {
			t.Helper()
			msg, err := nc.Request("tool.turns.who", body, 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			var resp messages.ToolResponse
			if err := messages.Unmarshal(msg.Data, &resp); err != nil || resp.Error != nil {
				t.Fatalf("call: %v %+v", err, resp.Error)
			}
		}
		if grace == 0 {
			// by default a caller waits only as long as a busy service's
			// next call takes to come
			call()
			eventually(t, 500*time.Millisecond, "the idle caller ends", func() bool { return callers() == 0 })
			if err := svc.Stop(context.Background()); err != nil {
				t.Fatal(err)
			}
			continue
		}
		for range 5 {
			call()
			// the reply goes out before the call's slot is free
			eventually(t, 5*time.Second, "the caller waits for the next call", func() bool { return fleet.IdleCallers(svc) == 1 })
		}
		mu.Lock()
		if len(ids) != 1 {
			t.Errorf("5 calls in turn ran on %d goroutines (%v), want 1", len(ids), ids)
		}
		mu.Unlock()
		if err := svc.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
		eventually(t, 10*time.Second, "no caller after Stop", func() bool { return callers() == 0 })
	}
}

// A mission that an idle worker's long poll brings runs on the goroutine
// that polled for it, a runner kept from the missions before: missions
// one at a time start no goroutine of the worker's and are handed from
// no goroutine to another once they arrive.
func TestIdleMissionsRunOnTheGoroutineThatPolled(t *testing.T) {
	_, nc := runJetStream(t)
	var mu sync.Mutex
	ids := map[string]int{}
	w := startWorker(t, nc, fleet.RunnerFunc(func(ctx context.Context, m *messages.Mission, env fleet.RunEnv) (*messages.Step, error) {
		mu.Lock()
		ids[goroutineID()]++
		mu.Unlock()
		return &messages.Step{Return: true}, nil
	}))
	c := newClient(t, nc)
	ctx := testCtx(t)
	run := func() {
		t.Helper()
		if st, err := c.Run(ctx, newMission()); err != nil || st.Fail != nil {
			t.Fatalf("mission: %v %+v", err, st)
		}
		// the result reaches the client before the worker is done with
		// the mission (its final status, its ack)
		eventually(t, 5*time.Second, "the runner waits for the next job", func() bool { return fleet.IdleRunners(w) == 1 })
	}
	run()
	started := fleet.RunnersStarted(w)
	const missions = 20
	for range missions {
		run()
	}
	if n := fleet.RunnersStarted(w) - started; n != 0 {
		t.Errorf("%d missions one at a time started %d goroutines to poll for or run them, want 0", missions, n)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(ids) != 1 {
		t.Errorf("%d missions ran on %d goroutines (%v), want 1", missions+1, len(ids), ids)
	}
	if s := w.Stats(); s.Runs != missions+1 || s.Succeeded != missions+1 {
		t.Errorf("stats %+v, want %d runs, all succeeded", s, missions+1)
	}
}
