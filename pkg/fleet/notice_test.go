package fleet_test

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ptcfleet/ptc/pkg/fleet"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// MISSIONS republishes the headers of each mission it stores, submitted
// or woken, on its queued subject (with its lane), after storing it: the
// mission is readable when its notice arrives, and the notice carries no
// body. A layout set up before it did is updated in place, its queued
// missions kept.
func TestMissionsStreamAnnouncesStoredMissions(t *testing.T) {
	_, nc := runJetStream(t)
	js, _ := jetstream.New(nc)
	ctx := testCtx(t)
	st, err := fleet.EnsureStores(ctx, js, testStore)
	if err != nil {
		t.Fatal(err)
	}
	// a layout without the republish, a mission queued in it
	cfg := st.Missions.CachedInfo().Config
	if r := cfg.RePublish; r == nil || r.Source != messages.LanedWildcard || r.Destination != messages.QueuedTransform() || !r.HeadersOnly {
		t.Fatalf("MISSIONS republishes %+v, want the headers of %s on %s", r, messages.LanedWildcard, messages.QueuedTransform())
	}
	cfg.RePublish = nil
	if _, err := js.UpdateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	c := newClient(t, nc)
	old := newMission()
	if _, err := c.Submit(ctx, old); err != nil {
		t.Fatal(err)
	}
	st, err = fleet.EnsureStores(ctx, js, testStore)
	if err != nil {
		t.Fatal(err)
	}
	fleet.MoveWakes(t, nc, st)
	if r := mustStream(t, js, messages.StreamMissions).RePublish; r == nil || r.Destination != messages.QueuedTransform() {
		t.Fatalf("MISSIONS republishes %+v after the setup", r)
	}
	if s, err := c.Status(ctx, old.ID); err != nil || s.State != messages.StateQueued {
		t.Fatalf("the mission queued before the update: %+v, %v", s, err)
	}

	notices := make(chan *nats.Msg, 8)
	sub, err := nc.ChanSubscribe(messages.QueuedWildcard, notices)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	lane := messages.SubmitLane(c.Submitter())
	expect := func(what, id, priority string) {
		t.Helper()
		select {
		case msg := <-notices:
			if want := messages.QueuedSubject(c.Submitter(), priority, id, lane); msg.Subject != want {
				t.Fatalf("%s: notice on %s, want %s", what, msg.Subject, want)
			}
			if len(msg.Data) != 0 || msg.Header.Get(jetstream.MsgIDHeader) == "" {
				t.Fatalf("%s: notice with a body of %d bytes, headers %v", what, len(msg.Data), msg.Header)
			}
			if size, err := strconv.Atoi(msg.Header.Get("Nats-Msg-Size")); err != nil || size == 0 {
				t.Fatalf("%s: notice without the mission's size: %v", what, msg.Header)
			}
			// stored before announced
			if _, err := st.Missions.GetLastMsgForSubject(ctx, messages.SubmitSubject(c.Submitter(), priority, id)+"."+strconv.Itoa(lane)); err != nil {
				t.Fatalf("%s: announced, not readable: %v", what, err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: no notice", what)
		}
	}
	m := newMission()
	m.Priority = messages.PriorityHigh
	if _, err := c.Submit(ctx, m); err != nil {
		t.Fatal(err)
	}
	expect("submitted", m.ID, messages.PriorityHigh)
	// a mission queued again from PARKED, which a worker moves
	woken := newMission()
	data, err := messages.Marshal(woken)
	if err != nil {
		t.Fatal(err)
	}
	wake := &nats.Msg{Subject: messages.WakeSubject(c.Submitter(), messages.PriorityNormal, woken.ID), Data: data, Header: nats.Header{}}
	wake.Header.Set(messages.HeaderMissionID, woken.ID)
	wake.Header.Set(jetstream.MsgIDHeader, woken.ID+"/wake")
	if _, err := js.PublishMsg(ctx, wake); err != nil {
		t.Fatal(err)
	}
	expect("woken", woken.ID, messages.PriorityNormal)
}

// Where MISSIONS does not republish what it stores (a layout set up
// before it did, which a worker verifying the layout does not change),
// workers hear submits as published and start each mission at once, not
// at the next sweep of the lanes.
func TestWorkerWithoutNoticesHearsSubmits(t *testing.T) {
	srv, nc := runJetStream(t)
	js, _ := jetstream.New(nc)
	ctx := testCtx(t)
	st, err := fleet.EnsureStores(ctx, js, testStore)
	if err != nil {
		t.Fatal(err)
	}
	cfg := st.Missions.CachedInfo().Config
	cfg.RePublish = nil
	if _, err := js.UpdateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	startWorker(t, dialTCP(t, srv.ClientURL()), fleet.RunnerFunc(func(ctx context.Context, m *messages.Mission, env fleet.RunEnv) (*messages.Step, error) {
		return &messages.Step{Return: m.ID}, nil
	}), func(cfg *fleet.WorkerConfig) {
		cfg.Store.VerifyOnly = true
		cfg.IdleWait = 5 * time.Second
	}, fleet.SweepEvery(time.Hour)) // no sweep after the first finds a mission
	if r := mustStream(t, js, messages.StreamMissions).RePublish; r != nil {
		t.Fatalf("a worker verifying the layout changed it: %+v", r)
	}
	c := newClient(t, dialTCP(t, srv.ClientURL()))
	time.Sleep(1500 * time.Millisecond) // past the worker's first sweep
	for i := range 5 {
		m := newMission()
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		st, err := c.Run(rctx, m)
		cancel()
		if err != nil || st.Return != m.ID {
			t.Fatalf("mission %d: %v %+v (a mission whose submit the worker did not hear waits for a sweep it does not make)", i, err, st)
		}
	}
}

// A mission no bell announces — a retry handed back with NakDelay,
// redelivered by the consumer — is fetched by the full sweep, also while
// the worker runs an older mission of its own that keeps a message in
// MISSIONS for longer than a check.
func TestRedeliveryFoundWhileALongMissionRuns(t *testing.T) {
	_, nc := runJetStream(t)
	release := make(chan struct{})
	var mu sync.Mutex
	attempts := map[string]int{}
	startWorker(t, nc, fleet.RunnerFunc(func(ctx context.Context, m *messages.Mission, env fleet.RunEnv) (*messages.Step, error) {
		mu.Lock()
		attempts[m.ID]++
		mu.Unlock()
		if m.Context["long"] == true {
			select {
			case <-release:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		if m.Context["retry"] == true && env.Attempt == 1 {
			return nil, fleet.ErrRetryable
		}
		return &messages.Step{Return: "ok"}, nil
	}), func(cfg *fleet.WorkerConfig) {
		cfg.Slots = 2
		cfg.NakDelay = 300 * time.Millisecond
	})
	defer close(release)
	c := newClient(t, nc)
	ctx := testCtx(t)
	long := newMission()
	long.Context = map[string]any{"long": true}
	if _, err := c.Submit(ctx, long); err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, "the long mission running", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return attempts[long.ID] == 1
	})
	time.Sleep(1500 * time.Millisecond) // its message older than a check
	retry := newMission()
	retry.Context = map[string]any{"retry": true}
	start := time.Now()
	st, err := c.Run(ctx, retry)
	if err != nil || st.Return != "ok" || st.Attempts != 2 {
		t.Fatalf("retried mission: %v %+v", err, st)
	}
	// NakDelay, then the sweep at the second check after the hand-back at
	// the latest
	if d := time.Since(start); d > 4*time.Second {
		t.Errorf("the redelivery ran %v after the submit", d)
	}
	if s, err := c.Status(ctx, long.ID); err != nil || s.State != messages.StateRunning {
		t.Fatalf("the long mission: %+v, %v", s, err)
	}
}

// Missions handed back together come back together: redeliveries, which
// no bell announces, are fetched as fast as the worker takes them once
// the full sweep finds the first, not one per check (a burst of results
// that could not be stored at once took minutes to settle).
func TestRedeliveriesOfABurstAreFetchedTogether(t *testing.T) {
	_, nc := runJetStream(t)
	const n = 40
	var retried atomic.Int64
	startWorker(t, nc, fleet.RunnerFunc(func(ctx context.Context, m *messages.Mission, env fleet.RunEnv) (*messages.Step, error) {
		if env.Attempt == 1 {
			retried.Add(1)
			return nil, fleet.ErrRetryable
		}
		return &messages.Step{Return: "ok"}, nil
	}), func(cfg *fleet.WorkerConfig) { cfg.Slots = 2 * n })
	c := newClient(t, nc)
	// the 80 attempts of a loaded machine's race build may take longer
	// than testCtx's 30 s
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ids := make([]string, n)
	for i := range ids {
		m := newMission()
		ids[i] = m.ID
		if _, err := c.Submit(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, 10*time.Second, "every mission's first attempt handed back", func() bool { return retried.Load() == n })
	start := time.Now()
	for _, id := range ids {
		st, err := c.Await(ctx, id)
		if err != nil || st.Return != "ok" || st.Attempts != 2 {
			t.Fatalf("mission %s: %v %+v", id, err, st)
		}
	}
	// the first check after the hand-backs finds them (a second or two
	// idle); one a check took n seconds
	if d := time.Since(start); d > n*time.Second/2 {
		t.Errorf("%d redeliveries settled in %v", n, d)
	}
	t.Logf("%d redeliveries settled in %v", n, time.Since(start).Round(time.Millisecond))
}
