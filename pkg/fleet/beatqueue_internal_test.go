package fleet

import (
	"context"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// heldStatus is the status bucket with every write held until release
// closes, counting the writes in flight.
type heldStatus struct {
	jetstream.KeyValue
	release  chan struct{}
	inFlight atomic.Int32
	peak     atomic.Int32
}

func (kv *heldStatus) Update(ctx context.Context, key string, value []byte, rev uint64) (uint64, error) {
	n := kv.inFlight.Add(1)
	defer kv.inFlight.Add(-1)
	for p := kv.peak.Load(); n > p && !kv.peak.CompareAndSwap(p, n); p = kv.peak.Load() {
	}
	select {
	case <-kv.release:
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	return kv.KeyValue.Update(ctx, key, value, rev)
}

// Missions whose heartbeats come due together are beaten at most
// maxBeatsInFlight at once, each beat's goroutine ending with it, rather
// than each on a goroutine of its own waiting for the server's answer; and
// every one of them is beaten. Each message's progress goes out as its
// beat comes due, however long the requests wait their turn.
func TestBeatsDueTogetherHoldFewGoroutines(t *testing.T) {
	ctx, _, _, st := embeddedStores(t)
	kv := &heldStatus{KeyValue: st.Status, release: make(chan struct{})}
	st.Status, st.nc = kv, nil // every status write through kv
	w := &Worker{cfg: WorkerConfig{ID: "w1"}, st: st, ackWait: 30 * time.Second}
	const n = 4 * maxBeatsInFlight
	msgs := make([]*progressMsg, n)
	all := make([]*beats, n)
	revs := make([]uint64, n) // each status's revision before the beats
	for i := range n {
		s := messages.Status{MissionID: messages.NewMissionID(), Submitter: "s", State: messages.StateRunning, Worker: "w1", Attempt: 1}
		rev, err := casStatus(ctx, st, s, 0)
		if err != nil {
			t.Fatal(err)
		}
		entry := new(atomic.Pointer[statusEntry])
		entry.Store(&statusEntry{st: s, rev: rev})
		revs[i] = rev
		msgs[i] = &progressMsg{}
		_, cancelRun := context.WithCancelCause(ctx)
		defer cancelRun(nil)
		all[i] = w.heartbeat(msgs[i], missionKey{sub: "s", id: s.MissionID}, entry, nil, cancelRun, time.Hour)
	}
	base := runtime.NumGoroutine()
	for _, b := range all {
		b.t.reset(0) // every beat due at once
	}
	deadline := time.Now().Add(10 * time.Second)
	for kv.inFlight.Load() < maxBeatsInFlight && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond) // any beat beyond the bound would be in flight by now
	if peak := kv.peak.Load(); peak != maxBeatsInFlight {
		t.Errorf("%d beats in flight at most, want %d", peak, maxBeatsInFlight)
	}
	if g := runtime.NumGoroutine() - base; g > maxBeatsInFlight+4 {
		t.Errorf("%d more goroutines while %d beats are due, want at most %d", g, n, maxBeatsInFlight+4)
	}
	// every message's AckWait was extended as its beat came due, also of
	// those whose requests wait their turn
	for i, m := range msgs {
		if m.inProgress.Load() != 1 {
			t.Fatalf("mission %d sent %d progress messages while the beats wait, want 1", i, m.inProgress.Load())
		}
	}
	close(kv.release)
	for i, b := range all {
		for b.entry.Load().rev == revs[i] && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		if b.entry.Load().rev == revs[i] {
			t.Fatalf("mission %d not beaten: its status was not written", i)
		}
	}
	for _, b := range all {
		b.stop()
	}
	for w.beatq.runningNow() > 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if r := w.beatq.runningNow(); r != 0 {
		t.Errorf("%d goroutines still beating with no beat due", r)
	}
}

// runningNow is how many goroutines beat.
func (q *beatQueue) runningNow() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.running
}
