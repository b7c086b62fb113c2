package fleet

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ptcfleet/ptc/pkg/messages"
)

// quotaOfOne is submitter "a" with a running quota of 1 on an embedded
// server, and a worker of two slots, not started (a test sets its hooks
// first), whose run of a mission marked hold waits until release is
// closed.
type quotaOfOne struct {
	nc      *nats.Conn
	client  *Client
	w       *Worker
	release chan struct{}
}

func newQuotaOfOne(ctx context.Context, t *testing.T, store StoreConfig) *quotaOfOne {
	t.Helper()
	q := &quotaOfOne{nc: embeddedConn(t), release: make(chan struct{})}
	js, err := jetstream.New(q.nc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := EnsureStores(ctx, js, store); err != nil {
		t.Fatal(err)
	}
	if err := SetQuota(ctx, js, QuotaLimit{Scope: QuotaSubmitterScope("a"), MaxRunning: 1}); err != nil {
		t.Fatal(err)
	}
	if q.client, err = NewClient(ctx, q.nc, ClientConfig{Store: store, Submitter: "a"}); err != nil {
		t.Fatal(err)
	}
	q.w, err = NewWorker(q.nc, WorkerConfig{
		ID: "w", Slots: 2, Priorities: []string{messages.PriorityNormal}, Store: store,
		IdleWait: 100 * time.Millisecond, NakDelay: 20 * time.Millisecond,
		Runner: RunnerFunc(func(ctx context.Context, m *messages.Mission, env RunEnv) (*messages.Step, error) {
			if m.Context["hold"] == true {
				<-q.release
			}
			return &messages.Step{Return: "ok"}, nil
		}),
	})
	if err != nil {
		t.Fatal(err)
	}
	return q
}

// hold starts the worker and a mission that holds the quota until
// release is closed, and returns that mission once it runs.
func (q *quotaOfOne) hold(ctx context.Context, t *testing.T) *messages.Mission {
	t.Helper()
	if err := q.w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = q.w.Stop() })
	holder := &messages.Mission{ID: messages.NewMissionID(), Kind: messages.KindAgent, Agent: &messages.AgentSpec{Prompt: "hold"},
		Context: map[string]any{"hold": true}}
	if _, err := q.client.Submit(ctx, holder); err != nil {
		t.Fatal(err)
	}
	for {
		if st, err := q.client.Status(ctx, holder.ID); err == nil && st.State == messages.StateRunning {
			return holder
		}
		select {
		case <-ctx.Done():
			t.Fatal("the mission holding the quota did not start")
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// A mission over its submitter's running quota is queued again as soon as
// it is parked and a lease is given back. When that copy reaches the
// worker that parked it while the worker still settles the message it
// parked, the copy waits for it and then takes the mission: waiting for
// the quota uses up no delivery, and the mission finishes on its first
// attempt.
func TestQuotaWakeWhileParkingUsesNoDelivery(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	q := newQuotaOfOne(ctx, t, StoreConfig{AckWait: time.Second, MaxDeliver: 3})
	w, client := q.w, q.client
	// delivered counts the messages the worker's consumers delivered.
	delivered := func() uint64 {
		var n uint64
		for _, p := range w.cfg.Priorities {
			for _, c := range append([]jetstream.Consumer{w.st.Consumers[p]}, w.st.Lanes[p]...) {
				if info, err := c.Info(ctx); err == nil {
					n += info.Delivered.Consumer
				}
			}
		}
		return n
	}
	var parked atomic.Int32
	w.quotaParked = func(k missionKey) {
		if parked.Add(1) != 1 {
			return
		}
		// the mission holding the quota ends: the lease it gives back
		// queues the parked mission again at once, and the worker, its
		// slot free, takes the copy (its third delivery) while it still
		// settles the parked message
		close(q.release)
		for deadline := time.Now().Add(10 * time.Second); delivered() < 3 && time.Now().Before(deadline); {
			time.Sleep(5 * time.Millisecond)
		}
		time.Sleep(100 * time.Millisecond)
	}
	holder := q.hold(ctx, t)
	m := &messages.Mission{ID: messages.NewMissionID(), Kind: messages.KindAgent, Agent: &messages.AgentSpec{Prompt: "wait"}}
	step, err := client.Run(ctx, m)
	if err != nil || !step.Ok() {
		t.Fatalf("the mission that waited: %+v, %v", step, err)
	}
	if parked.Load() != 1 {
		t.Fatalf("the mission was parked %d times, want once", parked.Load())
	}
	if step.Attempts != 1 {
		t.Errorf("the mission that waited for its quota finished on attempt %d, want 1", step.Attempts)
	}
	if step, err := client.Await(ctx, holder.ID); err != nil || step.Attempts != 1 {
		t.Errorf("the mission that held the quota: %+v, %v", step, err)
	}
}

// A lease given back after a mission was refused its quota (and put on
// the waiting list) but before it was parked finds no parked message to
// wake, and takes the mission off the list: the worker parking it sees
// that and wakes it at once (Msg-Id "<id>/quota/<seq>"), rather than
// leave it to its schedule (whose wake a worker would move from PARKED).
func TestQuotaLeaseGivenBackBeforeTheParkWakesTheMission(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	q := newQuotaOfOne(ctx, t, StoreConfig{})
	w, client := q.w, q.client
	var parking atomic.Int32
	w.quotaParking = func(k missionKey) {
		if parking.Add(1) != 1 {
			return
		}
		// the mission holding the quota ends, and its lease is given
		// back, before this one is parked
		close(q.release)
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			if listed, err := w.quotas.waiting(ctx, k.sub, k.id); err == nil && !listed {
				return
			}
		}
		t.Error("the lease given back did not take the mission off the waiting list")
	}
	q.hold(ctx, t)
	m := &messages.Mission{ID: messages.NewMissionID(), Kind: messages.KindAgent, Agent: &messages.AgentSpec{Prompt: "wait"}}
	woken, err := q.nc.SubscribeSync(messages.WokenSubject("a", messages.PriorityNormal, m.ID))
	if err != nil {
		t.Fatal(err)
	}
	step, err := client.Run(ctx, m)
	if err != nil || !step.Ok() {
		t.Fatalf("the mission that waited: %+v, %v", step, err)
	}
	first, err := woken.NextMsg(time.Second)
	if err != nil || !strings.HasPrefix(first.Header.Get(jetstream.MsgIDHeader), m.ID+"/quota/") {
		t.Fatalf("the mission was first woken by %v (%v), want the wake of the lease given back", first, err)
	}
}
