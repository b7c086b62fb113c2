package fleet

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ptcfleet/ptc/pkg/messages"
)

type countingHolder struct{ fired atomic.Int32 }

func (h *countingHolder) timerFired() { h.fired.Add(1) }

// A flushTimer released while pending serves the next holder, whose
// timerFired it calls, never the one before's; one released after it
// fired is not served again, as its firing may yet run.
func TestFlushTimerKeptOnlyWhenReleasedPending(t *testing.T) {
	if raceOn {
		t.Skip("the race detector's pools drop some of their puts")
	}
	var first, second, third countingHolder
	ft := startFlushTimer(&first, time.Hour)
	ft.release()
	ft2 := startFlushTimer(&second, time.Millisecond)
	if ft2 != ft {
		t.Fatal("a flushTimer released pending is not kept")
	}
	deadline := time.Now().Add(5 * time.Second)
	for second.fired.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if second.fired.Load() != 1 || first.fired.Load() != 0 {
		t.Fatalf("fired: the second holder %d times, the first %d", second.fired.Load(), first.fired.Load())
	}
	ft2.release() // fired: not kept
	ft3 := startFlushTimer(&third, time.Hour)
	defer ft3.release()
	if ft3 == ft2 {
		t.Fatal("a flushTimer released after it fired is kept")
	}
	time.Sleep(10 * time.Millisecond)
	if n := second.fired.Load() + third.fired.Load(); n != 1 {
		t.Fatalf("%d firings, want the one", n)
	}
}

// A mission's journal takes its linger timer from those of journals
// before it, and gives it back when the mission settles: a journal that
// records an answer and settles allocates 4 times, where a timer and its
// func made for each journal made 6.
func TestJournalLingerTimerKept(t *testing.T) {
	if raceOn {
		t.Skip("the race detector's pools drop some of their puts")
	}
	id := messages.NewMissionID()
	ctx := context.Background()
	data := []byte("answer")
	n := testing.AllocsPerRun(200, func() {
		j := NewJournal(nil, id)
		if err := j.Record(ctx, "t/1", data); err != nil {
			t.Fatal(err)
		}
		j.settle()
	})
	if n > 4 {
		t.Errorf("a journal's record and settle allocate %.0f times, want at most 4", n)
	}
}

// A mission's events take their delay's timer from those of missions
// before: an emitter that sends its events in one batch allocates 2
// times, where a timer and its func made for each batch made 4. The
// count includes the embedded server's routing of the batch, which
// keeps no cache of routed subjects (pkg/fleet/embedded) and so
// allocates once for it: 3 in all.
func TestEmitterDelayTimerKept(t *testing.T) {
	if raceOn {
		t.Skip("the race detector's pools drop some of their puts")
	}
	nc := embeddedConn(t)
	id := messages.NewMissionID()
	ev := &messages.Event{Kind: messages.EventToolCall, Turn: 1, Tool: "lookup", CallID: "c1"}
	n := testing.AllocsPerRun(200, func() {
		em := &emitter{nc: nc, sub: messages.DefaultSubmitter, missionID: id, worker: "w1", attempt: 1, delay: time.Hour}
		em.Emit(ev)
		em.Flush()
	})
	if n > 3 {
		t.Errorf("an emitter's batch allocates %.0f times, want at most 3 (2, and the server's routing of it)", n)
	}
}
