package fleet

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/ptcfleet/ptc/pkg/messages"
)

// A wake whose move keeps failing (MISSIONS full for long) is tried again
// after 1 s, then twice as long each time, at most every 30 s.
func TestWakeRetryBacksOff(t *testing.T) {
	for _, c := range []struct {
		delivery uint64
		want     time.Duration
	}{{0, time.Second}, {1, time.Second}, {2, 2 * time.Second}, {3, 4 * time.Second}, {5, 16 * time.Second}, {6, 30 * time.Second}, {1000, 30 * time.Second}} {
		if got := wakeRetryAfter(c.delivery); got != c.want {
			t.Errorf("wakeRetryAfter(%d) = %v, want %v", c.delivery, got, c.want)
		}
	}
}

// Only a wake subject is moved, onto the woken subject of the same
// submitter, priority and mission.
func TestMovedWakeSubject(t *testing.T) {
	id := messages.NewMissionID()
	m, ok := movedWake(messages.WakeSubject("ann", messages.PriorityLow, id), 9, []byte("{}"), nats.Header{jetstream.MsgTTLHeader: {"1h"}, "Nats-Scheduler": {"x"}})
	if !ok || m.Subject != messages.WokenSubject("ann", messages.PriorityLow, id) || m.Header.Get("Nats-Scheduler") != "" || m.Header.Get(jetstream.MsgTTLHeader) != "" {
		t.Fatalf("moved %+v, %v", m, ok)
	}
	for _, bad := range []string{messages.ParkSubject(id), "mission.wake.ann.low", "mission.wake.ann.urgent." + id, messages.WokenSubject("ann", "", id)} {
		if _, ok := movedWake(bad, 1, nil, nil); ok {
			t.Errorf("movedWake(%q) moved it", bad)
		}
	}
}

// A mover stopped while wakes wait for a free move starts none of them:
// stop returns once the moves under way ended, and a wake handed over
// after it is left to its redelivery.
func TestWakeMoverStopsWithWakesWaiting(t *testing.T) {
	_, nc, _, st := embeddedStoresWith(t, StoreConfig{})
	m := &wakeMover{nc: nc, parked: st.Parked, log: zerolog.Nop()}
	if err := m.start(st.Wakes); err != nil {
		t.Fatal(err)
	}
	// every move slot taken, as by moves under way
	for range wakeMovers {
		m.sem <- struct{}{}
	}
	handed := make(chan struct{})
	go func() {
		defer close(handed)
		m.take(nil) // waits for a slot
	}()
	stopped := make(chan struct{})
	go func() { m.stop(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(5 * time.Second):
		t.Fatal("stop did not return")
	}
	// a slot freed after stop: the waiting wake is not moved
	<-m.sem
	select {
	case <-handed:
	case <-time.After(5 * time.Second):
		t.Fatal("the waiting take did not return after stop")
	}
	m.take(nil)
	if len(m.sem) != wakeMovers-1 {
		t.Fatalf("%d move slots held after stop, want %d", len(m.sem), wakeMovers-1)
	}
}

// ackLost is a wake whose acknowledgement never reaches the server, as
// when its worker dies after removing it from PARKED.
type ackLost struct{ jetstream.Msg }

func (ackLost) DoubleAck(context.Context) error { return errors.New("the worker died") }

// A moved wake is removed from PARKED before it is acknowledged: one
// whose worker died between the two is neither left in PARKED nor
// handed to another worker once its AckWait runs out.
func TestWakeRemovedBeforeItsAckIsNotHandedOutAgain(t *testing.T) {
	const ackWait = 500 * time.Millisecond
	ctx, nc, js, st := embeddedStoresWith(t, StoreConfig{AckWait: ackWait})
	id := messages.NewMissionID()
	wake := messages.WakeSubject("bo", messages.PriorityNormal, id)
	if _, err := js.Publish(ctx, wake, []byte("{}")); err != nil {
		t.Fatal(err)
	}
	batch, err := st.Wakes.Fetch(1, jetstream.FetchMaxWait(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	var msg jetstream.Msg
	for m := range batch.Messages() {
		msg = m
	}
	if msg == nil {
		t.Fatalf("no wake handed out: %v", batch.Error())
	}
	m := &wakeMover{nc: nc, parked: st.Parked, log: zerolog.Nop()}
	m.move(ctx, ackLost{msg})
	if _, err := st.Missions.GetLastMsgForSubject(ctx, messages.SubmitSubject("bo", messages.PriorityNormal, id)+".>"); err != nil {
		t.Fatalf("the wake is not in MISSIONS: %v", err)
	}
	if _, err := st.Parked.GetLastMsgForSubject(ctx, wake); !errors.Is(err, jetstream.ErrMsgNotFound) {
		t.Fatalf("the moved wake is still in PARKED: %v", err)
	}
	// past its AckWait, nothing is handed out again
	again, err := st.Wakes.Fetch(1, jetstream.FetchMaxWait(4*ackWait))
	if err != nil {
		t.Fatal(err)
	}
	for m := range again.Messages() {
		t.Fatalf("handed out again: %s", m.Subject())
	}
}
