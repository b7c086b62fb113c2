package fleet

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/ptcfleet/ptc/pkg/messages"
)

// countedAck is a delivered message whose acknowledgements are counted.
type countedAck struct {
	jetstream.Msg // only Ack and Subject are called
	acks          *atomic.Int32
}

func (m countedAck) Ack() error      { m.acks.Add(1); return nil }
func (m countedAck) Subject() string { return "mission.submit.s.normal.id" }

// Held acknowledgements go out together: none when held, all of them at
// a flush, at once when maxHeldAcks are held, and by themselves once
// their delay is over.
func TestHeldAcksGoOutTogether(t *testing.T) {
	var acks atomic.Int32
	msg := countedAck{acks: &acks}
	h := &heldAcks{delay: time.Hour}
	for range 3 {
		h.add(msg)
	}
	if n, held := acks.Load(), h.held(); n != 0 || held != 3 {
		t.Fatalf("after 3 held: %d acknowledged, %d held; want 0 and 3", n, held)
	}
	h.flush()
	if n, held := acks.Load(), h.held(); n != 3 || held != 0 {
		t.Fatalf("after a flush: %d acknowledged, %d held; want 3 and 0", n, held)
	}
	for range maxHeldAcks - 1 {
		h.add(msg)
	}
	if n := acks.Load(); n != 3 {
		t.Fatalf("%d held: %d acknowledged, want 3", maxHeldAcks-1, n)
	}
	h.add(msg)
	if n, held := acks.Load(), h.held(); n != 3+maxHeldAcks || held != 0 {
		t.Fatalf("%d held: %d acknowledged, %d held; want %d and 0", maxHeldAcks, n, held, 3+maxHeldAcks)
	}

	var timed atomic.Int32
	short := &heldAcks{delay: 5 * time.Millisecond}
	short.add(countedAck{acks: &timed})
	short.add(countedAck{acks: &timed})
	deadline := time.Now().Add(5 * time.Second)
	for timed.Load() != 2 || short.held() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("after their delay: %d acknowledged, %d held; want 2 and 0", timed.Load(), short.held())
		}
		time.Sleep(time.Millisecond)
	}
}

// A worker holds a finished mission's acknowledgement after its result
// and final status, and Stop sends the acknowledgements it holds: the
// message leaves MISSIONS.
func TestWorkerStopSendsHeldAcks(t *testing.T) {
	nc := embeddedConn(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	store := StoreConfig{}
	client, err := NewClient(ctx, nc, ClientConfig{Store: store})
	if err != nil {
		t.Fatal(err)
	}
	w, err := NewWorker(nc, WorkerConfig{
		ID: "held", Slots: 1, Priorities: []string{messages.PriorityNormal}, Store: store,
		IdleWait: 100 * time.Millisecond,
		Runner: RunnerFunc(func(ctx context.Context, m *messages.Mission, env RunEnv) (*messages.Step, error) {
			return &messages.Step{Return: "done"}, nil
		}),
	})
	if err != nil {
		t.Fatal(err)
	}
	w.acks.delay = time.Hour
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Stop() })
	m := &messages.Mission{ID: messages.NewMissionID(), Kind: messages.KindAgent, Agent: &messages.AgentSpec{Prompt: "do it"}}
	if _, err := client.Run(ctx, m); err != nil {
		t.Fatal(err)
	}
	queued := func() uint64 {
		s, err := w.js.Stream(ctx, messages.StreamMissions)
		if err != nil {
			t.Fatal(err)
		}
		info, err := s.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return info.State.Msgs
	}
	deadline := time.Now().Add(5 * time.Second)
	for w.acks.held() != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("%d acknowledgements held, want 1", w.acks.held())
		}
		time.Sleep(time.Millisecond)
	}
	st, err := client.Status(ctx, m.ID)
	if err != nil || st.State != messages.StateSucceeded {
		t.Fatalf("status %+v, %v; want %s before the acknowledgement", st, err, messages.StateSucceeded)
	}
	if n := queued(); n != 1 {
		t.Fatalf("MISSIONS holds %d messages while the acknowledgement is held, want 1", n)
	}
	if err := w.Stop(); err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(5 * time.Second)
	for queued() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("MISSIONS holds %d messages after Stop, want 0", queued())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// The acknowledgement of a finished mission whose submitter's missions
// are counted against a max_queued quota is not held: the message leaves
// MISSIONS at once, so the next count does not include it.
func TestAckOfAQueuedQuotaMissionNotHeld(t *testing.T) {
	nc := embeddedConn(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	store := StoreConfig{}
	client, err := NewClient(ctx, nc, ClientConfig{Store: store, Submitter: "counted"})
	if err != nil {
		t.Fatal(err)
	}
	if err := SetQuota(ctx, client.js, QuotaLimit{Scope: QuotaSubmitterScope("counted"), MaxQueued: 10}); err != nil {
		t.Fatal(err)
	}
	w, err := NewWorker(nc, WorkerConfig{
		ID: "held", Slots: 1, Priorities: []string{messages.PriorityNormal}, Store: store,
		IdleWait: 100 * time.Millisecond,
		Runner: RunnerFunc(func(ctx context.Context, m *messages.Mission, env RunEnv) (*messages.Step, error) {
			return &messages.Step{Return: "done"}, nil
		}),
	})
	if err != nil {
		t.Fatal(err)
	}
	w.acks.delay = time.Hour
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Stop() })
	m := &messages.Mission{ID: messages.NewMissionID(), Kind: messages.KindAgent, Agent: &messages.AgentSpec{Prompt: "do it"}}
	if _, err := client.Run(ctx, m); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, n, err := queuedSubjects(ctx, w.st.Missions, "counted")
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("MISSIONS holds %d of the submitter's missions after its result, %d acknowledgements held; want none", n, w.acks.held())
		}
		time.Sleep(5 * time.Millisecond)
	}
	if n := w.acks.held(); n != 0 {
		t.Fatalf("%d acknowledgements held, want none", n)
	}
}

// blockedAck is a delivered message whose acknowledgement waits for
// release, after telling started.
type blockedAck struct {
	jetstream.Msg
	started, release chan struct{}
}

func (m blockedAck) Ack() error      { close(m.started); <-m.release; return nil }
func (m blockedAck) Subject() string { return "mission.submit.s.normal.id" }

// A flush returns only once the acknowledgements held before it are sent,
// those another flush took included: Stop's flush does not return while
// the timer's is still sending.
func TestHeldAcksFlushWaitsForOneSending(t *testing.T) {
	h := &heldAcks{delay: time.Hour}
	first := blockedAck{started: make(chan struct{}), release: make(chan struct{})}
	h.add(first)
	go h.flush()
	<-first.started
	var acks atomic.Int32
	h.add(countedAck{acks: &acks})
	done := make(chan struct{})
	go func() { h.flush(); close(done) }()
	select {
	case <-done:
		t.Fatal("a flush returned while an acknowledgement held before it was still being sent")
	case <-time.After(50 * time.Millisecond):
	}
	close(first.release)
	<-done
	if n := acks.Load(); n != 1 {
		t.Fatalf("%d acknowledged by the second flush, want 1", n)
	}
}
