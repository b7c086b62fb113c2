package fleet_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/ptcfleet/ptc/pkg/fleet"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// An idle worker whose stream holds nothing looks at every lane of every
// priority at least once per fleet.FullSweepBackstop, whatever its check
// for unannounced missions says: no missed notification can leave a
// mission queued for longer than that while it has free slots.
func TestIdleWorkerSweepsEveryLaneAtTheBackstop(t *testing.T) {
	srv, nc := runJetStream(t)
	startWorker(t, nc, fleet.RunnerFunc(func(context.Context, *messages.Mission, fleet.RunEnv) (*messages.Step, error) {
		return &messages.Step{Return: "ok"}, nil
	}), func(cfg *fleet.WorkerConfig) { cfg.Priorities = messages.Priorities() })
	// the sweep of a worker that starts is over well before this
	time.Sleep(2 * time.Second)
	tnc := dialTCP(t, srv.ClientURL())
	var mu sync.Mutex
	pulled := map[string]int{}
	const prefix = "$JS.API.CONSUMER.MSG.NEXT.MISSIONS."
	sub, err := tnc.Subscribe(prefix+">", func(m *nats.Msg) {
		mu.Lock()
		pulled[strings.TrimPrefix(m.Subject, prefix)]++
		mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	if err := tnc.Flush(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(fleet.FullSweepBackstop + 3*time.Second)
	mu.Lock()
	defer mu.Unlock()
	for _, p := range messages.Priorities() {
		names := []string{"workers-" + p}
		for l := range messages.MissionLanes {
			names = append(names, fmt.Sprintf("workers-%s-%d", p, l))
		}
		for _, name := range names {
			if pulled[name] == 0 {
				t.Errorf("consumer %s not looked at in %v (pulls: %v)", name, fleet.FullSweepBackstop+3*time.Second, pulled)
			}
		}
	}
}

// Missions submitted in bursts from many goroutines, across many
// submitters (every lane) and every priority, to workers whose missions
// block until released in waves, all start: while a mission is queued and
// a slot is free, some mission starts within a few seconds (the stall
// bound), and every mission runs once.
func TestBurstsOfMissionsAllStart(t *testing.T) {
	for _, workers := range []int{1, 2} {
		t.Run(fmt.Sprintf("workers=%d", workers), func(t *testing.T) {
			testBurstsAllStart(t, workers)
		})
	}
}

func testBurstsAllStart(t *testing.T, workers int) {
	const (
		slots      = 48
		submitters = 40
		bursts     = 3
		perBurst   = 400
		senders    = 8
		stall      = 5 * time.Second
	)
	total := bursts * perBurst
	srv, _ := runJetStream(t)
	var (
		mu      sync.Mutex
		started = map[string]int{}
		running int
		last    = time.Now()
	)
	release := make(chan chan struct{}, total)
	runner := fleet.RunnerFunc(func(ctx context.Context, m *messages.Mission, _ fleet.RunEnv) (*messages.Step, error) {
		gate := make(chan struct{})
		mu.Lock()
		started[m.ID]++
		running++
		last = time.Now()
		mu.Unlock()
		release <- gate
		select {
		case <-gate:
		case <-ctx.Done():
		}
		mu.Lock()
		running--
		mu.Unlock()
		return &messages.Step{Return: "ok"}, nil
	})
	for range workers {
		startWorker(t, dialTCP(t, srv.ClientURL()), runner, func(cfg *fleet.WorkerConfig) {
			cfg.Slots, cfg.Priorities = slots, messages.Priorities()
			// a run whose heartbeats a loaded machine delays past the
			// tests' AckWait of 1 s is taken over by the other worker and
			// starts twice, as designed; takeovers are not what this test
			// is about
			cfg.Store.AckWait = 10 * time.Second
		})
	}
	// the releaser frees the slots in waves: it lets the started missions
	// run a few milliseconds to a few hundred, at random
	done := make(chan struct{})
	defer close(done)
	go func() {
		for {
			select {
			case gate := <-release:
				d := time.Duration(rand.IntN(300)) * time.Millisecond
				time.AfterFunc(d, func() { close(gate) })
			case <-done:
				return
			}
		}
	}()
	clients := make([]*fleet.Client, submitters)
	for i := range clients {
		clients[i] = submitterClient(t, dialTCP(t, srv.ClientURL()), fmt.Sprintf("sub%02d", i))
	}
	lanes := map[int]bool{}
	for i := range submitters {
		lanes[messages.SubmitLane(fmt.Sprintf("sub%02d", i))] = true
	}
	if len(lanes) != messages.MissionLanes {
		t.Fatalf("the submitters cover lanes %v, want all %d", lanes, messages.MissionLanes)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var submitted atomic.Int64
	for b := range bursts {
		var wg sync.WaitGroup
		for s := range senders {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for k := s; k < perBurst; k += senders {
					m := newMission()
					m.Priority = messages.Priorities()[k%len(messages.Priorities())]
					if _, err := clients[(b*perBurst+k)%submitters].Submit(ctx, m); err != nil {
						t.Errorf("submit: %v", err)
						return
					}
					submitted.Add(1)
				}
			}()
		}
		wg.Wait()
		if t.Failed() {
			return
		}
		// the next burst comes while this one's missions still run and queue
		time.Sleep(time.Duration(rand.IntN(500)) * time.Millisecond)
	}
	for {
		mu.Lock()
		n, r, idle := len(started), running, time.Since(last)
		mu.Unlock()
		if n == total {
			break
		}
		if r < workers*slots && idle > stall {
			t.Fatalf("%d of %d missions started, %d running on %d slots, none started for %v", n, total, r, workers*slots, idle)
		}
		time.Sleep(50 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	for id, k := range started {
		if k != 1 {
			t.Errorf("mission %s started %d times", id, k)
		}
	}
}
