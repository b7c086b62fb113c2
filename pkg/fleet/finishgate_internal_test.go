package fleet

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ptcfleet/ptc/pkg/messages"
)

// An end is stored at once where no mission waits for a slot; while one
// waits, the end gives back what it no longer needs (free) and waits
// until the backlog clears, its bound passes or the worker stops; one
// whose free keeps too much, or one past endsWaitingMax, does not wait.
func TestFinishGateWaitsOnlyForABacklog(t *testing.T) {
	stop := make(chan struct{})
	g := newFinishGate(6 * time.Minute) // waits up to endWaitMax
	freed := 0
	free := func() bool { freed++; return true }
	waited := func(f func() bool) time.Duration {
		at := time.Now()
		g.wait(stop, f)
		return time.Since(at)
	}
	if d := waited(free); freed != 0 || d > 100*time.Millisecond {
		t.Fatalf("with no backlog: freed %d times, waited %s; want at once, nothing freed", freed, d)
	}
	g.setBacklog(true)
	done := make(chan struct{})
	go func() {
		g.wait(stop, free)
		close(done)
	}()
	waitFor(t, "the end waiting", func() bool { return g.waitingNow() == 1 })
	select {
	case <-done:
		t.Fatal("the end was let through while the backlog lasts")
	case <-time.After(50 * time.Millisecond):
	}
	g.setBacklog(false)
	<-done
	if freed != 1 || g.waitingNow() != 0 {
		t.Fatalf("freed %d times, %d still waiting; want 1 and 0", freed, g.waitingNow())
	}
	g.setBacklog(true)
	if d := waited(func() bool { return false }); d > 100*time.Millisecond {
		t.Fatalf("an end that keeps too much waited %s", d)
	}
	if d := waited(free); d < endWaitMax/2 || d > 10*endWaitMax {
		t.Fatalf("with the backlog lasting, the end waited %s; want its bound, %s", d, endWaitMax)
	}
	// the bound follows a short AckWait
	short := newFinishGate(600 * time.Millisecond)
	short.setBacklog(true)
	at := time.Now()
	short.wait(stop, free)
	if d := time.Since(at); d > endWaitMax/2 {
		t.Fatalf("with an AckWait of 600ms the end waited %s; want about 100ms", d)
	}
	g.waiting = endsWaitingMax
	if d := waited(free); d > 100*time.Millisecond {
		t.Fatalf("past endsWaitingMax the end waited %s", d)
	}
	g.waiting = 0
	close(stop)
	if d := waited(free); d > 100*time.Millisecond {
		t.Fatalf("with the worker stopping the end waited %s", d)
	}
}

func TestEndKeeps(t *testing.T) {
	const limit = 64 << 20
	for _, c := range []struct{ limit, got, want int64 }{
		{limit, 0, endHeldFloor},
		{limit, 1000, endHeldFloor + 32000},
		{limit, 4 << 20, limit}, // 128 MiB > limit
		{limit, 1 << 20, 32<<20 + endHeldFloor},
		{32 << 10, 0, 32 << 10}, // a reservation under the floor is kept
	} {
		if got := endKeeps(c.limit, c.got); got != c.want {
			t.Errorf("endKeeps(%d, %d) = %d, want %d", c.limit, c.got, got, c.want)
		}
	}
}

// A worker of one slot whose run has ended while another mission waits
// for that slot gives the slot back, and the memory its end no longer
// needs, before it stores its end: the waiting mission starts (on a
// budget that holds one mission's reservation only) while the first
// one's end is held. So it does where both are a submitter's whose
// running quota is one: the ended run gives its lease back too.
func TestRunEndWaitsForAMissionWaitingForASlot(t *testing.T) {
	t.Run("budget", func(t *testing.T) { testRunEndWaits(t, false) })
	t.Run("quota", func(t *testing.T) { testRunEndWaits(t, true) })
}

func testRunEndWaits(t *testing.T, quota bool) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	nc := embeddedConn(t)
	ccfg := ClientConfig{}
	if quota {
		js, err := jetstream.New(nc)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := EnsureStores(ctx, js, StoreConfig{}); err != nil {
			t.Fatal(err)
		}
		if err := SetQuota(ctx, js, QuotaLimit{Scope: QuotaSubmitterScope("a"), MaxRunning: 1}); err != nil {
			t.Fatal(err)
		}
		ccfg.Submitter = "a"
	}
	release := make(chan struct{})
	secondRan := make(chan struct{})
	var mu sync.Mutex
	started := map[string]time.Time{}
	const programMemory = 16 << 20
	w, err := NewWorker(nc, WorkerConfig{ID: "w", Slots: 1, Priorities: []string{messages.PriorityNormal},
		MemoryBudget: programMemory + programMemory/2,
		Runner: RunnerFunc(func(_ context.Context, m *messages.Mission, _ RunEnv) (*messages.Step, error) {
			mu.Lock()
			started[m.ID] = time.Now()
			mu.Unlock()
			if m.Context["first"] == true {
				<-release
			} else {
				close(secondRan)
			}
			return &messages.Step{Return: "ok"}, nil
		})})
	if err != nil {
		t.Fatal(err)
	}
	newMission := func(first bool) *messages.Mission {
		return &messages.Mission{ID: messages.NewMissionID(), Kind: messages.KindAgent,
			Agent: &messages.AgentSpec{Prompt: "do it"}, Context: map[string]any{"first": first},
			Limits: messages.Limits{ProgramMemory: programMemory}}
	}
	first, second := newMission(true), newMission(false)
	var firstWaited atomic.Bool
	w.endWaiting = func(k missionKey) {
		if k.id != first.ID {
			return
		}
		firstWaited.Store(true)
		// the first mission's end is held until the second one runs:
		// with the slot or the memory kept, it never would
		select {
		case <-secondRan:
		case <-time.After(5 * time.Second): // milliseconds when it starts at once; a quota lease kept expires later
			t.Error("the second mission did not start while the first one's end waited")
		}
	}
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Stop() })
	client, err := NewClient(ctx, nc, ccfg)
	if err != nil {
		t.Fatal(err)
	}
	var storedMu sync.Mutex
	stored := map[string]time.Time{}
	sub, err := nc.Subscribe(messages.SubjectStoredPrefix+">", func(msg *nats.Msg) {
		storedMu.Lock()
		defer storedMu.Unlock()
		id := msg.Subject[strings.LastIndexByte(msg.Subject, '.')+1:]
		if _, ok := stored[id]; !ok {
			stored[id] = time.Now()
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	if _, err := client.Submit(ctx, first); err != nil {
		t.Fatal(err)
	}
	ran := func(id string) bool { mu.Lock(); defer mu.Unlock(); _, ok := started[id]; return ok }
	waitFor(t, "the first mission running", func() bool { return ran(first.ID) })
	if _, err := client.Submit(ctx, second); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the worker knowing the second mission waits", func() bool {
		w.finishes.mu.Lock()
		defer w.finishes.mu.Unlock()
		return w.finishes.backlog
	})
	close(release)
	for _, id := range []string{first.ID, second.ID} {
		if step, err := client.Await(ctx, id); err != nil || !step.Ok() {
			t.Fatalf("mission %s: %+v %v", id, step, err)
		}
	}
	if !firstWaited.Load() {
		t.Fatal("the first mission's end did not wait with the second one queued")
	}
	waitFor(t, "the first mission's result heard stored", func() bool {
		storedMu.Lock()
		defer storedMu.Unlock()
		_, ok := stored[first.ID]
		return ok
	})
	mu.Lock()
	secondStarted := started[second.ID]
	mu.Unlock()
	storedMu.Lock()
	firstStored := stored[first.ID]
	storedMu.Unlock()
	if !secondStarted.Before(firstStored) {
		t.Fatalf("the second mission started %s after the first one's result was stored", secondStarted.Sub(firstStored))
	}
}
