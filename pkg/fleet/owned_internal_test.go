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

// progressMsg is a mission message whose only use here is InProgress.
type progressMsg struct {
	jetstream.Msg
	inProgress atomic.Int32
}

func (m *progressMsg) InProgress() error { m.inProgress.Add(1); return nil }

// unreachableStatus is the status bucket, unreachable while down is set.
type unreachableStatus struct {
	jetstream.KeyValue
	down atomic.Bool
}

func (kv *unreachableStatus) Get(ctx context.Context, key string) (jetstream.KeyValueEntry, error) {
	if kv.down.Load() {
		return nil, errors.New("status bucket unreachable")
	}
	return kv.KeyValue.Get(ctx, key)
}

func (kv *unreachableStatus) Update(ctx context.Context, key string, value []byte, rev uint64) (uint64, error) {
	if kv.down.Load() {
		return 0, errors.New("status bucket unreachable")
	}
	return kv.KeyValue.Update(ctx, key, value, rev)
}

// A run's requests leave at no cost while its beats confirm the mission
// its own. Once no beat has for two periods (NATS out of reach), a request
// waits until the status confirms it (beating at once), leaves when it
// does, and is refused with ErrFenced, the run cancelled, when another
// worker has taken the mission meanwhile.
func TestOwnedConfirmsAMissionWhoseBeatsLapsed(t *testing.T) {
	ctx, _, _, st := embeddedStores(t)
	kv := &unreachableStatus{KeyValue: st.Status}
	st.Status, st.nc = kv, nil // every status write through kv
	w := &Worker{cfg: WorkerConfig{ID: "w1"}, st: st, ackWait: 300 * time.Millisecond}
	s := messages.Status{MissionID: messages.NewMissionID(), Submitter: "s", State: messages.StateRunning, Worker: "w1", Attempt: 1}
	rev, err := casStatus(ctx, st, s, 0)
	if err != nil {
		t.Fatal(err)
	}
	k := missionKey{sub: "s", id: s.MissionID}
	var entry atomic.Pointer[statusEntry]
	// as a claim makes it: with the drop signal taken before its write
	entry.Store(&statusEntry{st: s, rev: rev, drops: w.drops.signal()})
	runCtx, cancelRun := context.WithCancelCause(ctx)
	defer cancelRun(nil)
	msg := &progressMsg{}
	b := w.heartbeat(msg, k, &entry, nil, cancelRun, time.Hour) // no timer beat within the test
	defer b.stop()

	// fresh: no beat
	if err := b.owned(runCtx); err != nil || msg.inProgress.Load() != 0 {
		t.Fatalf("owned = %v with %d beats, want nil and none", err, msg.inProgress.Load())
	}
	// lapsed, the status readable and ours: one beat, then the request leaves
	b.start = b.start.Add(-time.Second)
	if err := b.owned(runCtx); err != nil || msg.inProgress.Load() != 1 {
		t.Fatalf("owned = %v with %d beats, want nil after one", err, msg.inProgress.Load())
	}
	if err := b.owned(runCtx); err != nil || msg.inProgress.Load() != 1 {
		t.Fatalf("owned = %v with %d beats, want nil and no more beat", err, msg.inProgress.Load())
	}
	// lapsed with the status out of reach: the request waits
	b.start = b.start.Add(-time.Second)
	kv.down.Store(true)
	short, c := context.WithTimeout(runCtx, 400*time.Millisecond)
	err = b.owned(short)
	c()
	if !errors.Is(err, context.DeadlineExceeded) || msg.inProgress.Load() < 2 {
		t.Fatalf("owned = %v after %d beats, want a wait beating again until the deadline", err, msg.inProgress.Load())
	}
	// back in reach: another worker took the mission meanwhile
	kv.down.Store(false)
	taken := entry.Load().st
	taken.Worker, taken.Attempt = "w2", 2
	if _, err := casStatus(ctx, st, taken, entry.Load().rev); err != nil {
		t.Fatal(err)
	}
	if err := b.owned(runCtx); !errors.Is(err, ErrFenced) {
		t.Fatalf("owned = %v, want ErrFenced", err)
	}
	if cause := context.Cause(runCtx); !errors.Is(cause, ErrFenced) {
		t.Fatalf("the run's cause %v, want ErrFenced", cause)
	}
	if err := b.owned(runCtx); !errors.Is(err, ErrFenced) {
		t.Fatalf("owned again = %v, want ErrFenced", err)
	}
}
