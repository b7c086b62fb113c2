package fleet

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/ptcfleet/ptc/pkg/messages"
)

// Each tick of the sweep's schedule is taken by one worker, acknowledged
// and removed from PARKED; a fresh one starts a sweep, and one older
// than a period (ticks piled up while no worker ran) is dropped without
// one.
func TestSweepTickFreshSweepsStaleDropped(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	nc := embeddedConn(t)
	w, err := NewWorker(nc, WorkerConfig{ID: "w", Slots: 1, Priorities: []string{messages.PriorityNormal},
		StalledAfter: time.Hour, // the schedule's own ticks come after the test
		Runner: RunnerFunc(func(context.Context, *messages.Mission, RunEnv) (*messages.Step, error) {
			return &messages.Step{Return: "ok"}, nil
		})})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Stop() })
	// the worker's mover, replaced by one whose sweeps are counted and
	// whose period is short
	w.wakes.stop()
	var sweeps atomic.Int64
	s := w.newStalledSweep()
	s.after, s.swept = 500*time.Millisecond, func() { sweeps.Add(1) }
	m := &wakeMover{nc: w.nc, replies: w.replies, parked: w.st.Parked, log: w.log, sweep: s}
	tick := func() uint64 {
		t.Helper()
		ack, err := w.js.Publish(ctx, messages.SweepTickSubject, nil)
		if err != nil {
			t.Fatal(err)
		}
		return ack.Sequence
	}
	removed := func(seq uint64) bool {
		_, err := w.st.Parked.GetMsg(ctx, seq)
		return errors.Is(err, jetstream.ErrMsgNotFound)
	}
	stale := tick()
	time.Sleep(time.Second) // older than the period when the mover starts
	if err := m.start(w.st.Wakes); err != nil {
		t.Fatal(err)
	}
	// (a tick the stopped mover's last pull took comes again after the
	// consumer's AckWait)
	waitFor(t, "the stale tick removed", func() bool { return removed(stale) })
	m.stop()
	if n := sweeps.Load(); n != 0 {
		t.Fatalf("%d sweeps for a tick older than a period", n)
	}
	// a period long enough that a loaded machine's delivery keeps the
	// next tick fresh
	s.after = time.Minute
	m = &wakeMover{nc: w.nc, replies: w.replies, parked: w.st.Parked, log: w.log, sweep: s}
	if err := m.start(w.st.Wakes); err != nil {
		t.Fatal(err)
	}
	defer m.stop()
	fresh := tick()
	waitFor(t, "the fresh tick removed", func() bool { return removed(fresh) })
	waitFor(t, "a sweep", func() bool { return sweeps.Load() == 1 })
}
