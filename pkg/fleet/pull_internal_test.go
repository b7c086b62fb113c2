package fleet

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/ptcfleet/ptc/pkg/messages"
)

// pullTestWorker starts a worker of slots slots on nc, with runner r, edit
// applied to it before Start; Stop runs on cleanup.
func pullTestWorker(t *testing.T, nc *nats.Conn, slots int, r Runner, edit func(*Worker)) *Worker {
	t.Helper()
	w, err := NewWorker(nc, WorkerConfig{
		Slots: slots, Priorities: []string{messages.PriorityNormal},
		Store:    StoreConfig{AckWait: 5 * time.Second, MaxDeliver: 5},
		IdleWait: 100 * time.Millisecond, NakDelay: 20 * time.Millisecond, DrainGrace: 5 * time.Second,
		Runner: r,
	})
	if err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(w)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Stop() })
	return w
}

func pullTestMission() *messages.Mission {
	return &messages.Mission{ID: messages.NewMissionID(), Kind: messages.KindAgent, Agent: &messages.AgentSpec{Prompt: "do it"}}
}

// A worker's pulls go out on the one subscription it keeps for its life:
// running missions adds no subscription to the server's subject index,
// where a Fetch subscribes and unsubscribes an inbox per pull.
func TestWorkerPullsSubscribeNothingPerMission(t *testing.T) {
	srv := startServer(t, server.Options{})
	dial := func() *nats.Conn {
		nc, err := nats.Connect(srv.ClientURL())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		return nc
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var runs atomic.Int64
	pullTestWorker(t, dial(), 2, RunnerFunc(func(context.Context, *messages.Mission, RunEnv) (*messages.Step, error) {
		runs.Add(1)
		return &messages.Step{Return: "ok"}, nil
	}), nil)
	c, err := NewClient(ctx, dial(), ClientConfig{Store: StoreConfig{AckWait: 5 * time.Second, MaxDeliver: 5}})
	if err != nil {
		t.Fatal(err)
	}
	inserts := func() uint64 {
		sz, err := srv.Subsz(nil)
		if err != nil {
			t.Fatal(err)
		}
		return sz.NumInserts
	}
	run := func() {
		if _, err := c.Run(ctx, pullTestMission()); err != nil {
			t.Fatal(err)
		}
	}
	run() // the client's and the worker's subscriptions made
	time.Sleep(200 * time.Millisecond)
	const n = 20
	before := inserts()
	for range n {
		run()
	}
	per := float64(inserts()-before) / n
	t.Logf("%.2f subscriptions inserted in the server's index per mission", per)
	// the one a mission makes is the client's, on its result
	if per > 1 {
		t.Errorf("%.2f subscriptions inserted per mission, want 1 (the client's) and none from the worker's pulls", per)
	}
	if runs.Load() != n+1 {
		t.Errorf("%d runs, want %d", runs.Load(), n+1)
	}
}

// A pull whose request is lost ends at the client after its expiry and
// gives its slot back, and a mission delivered to a pull that had ended
// (its request delayed past that) is still run, once: here every pull
// request of the worker (one slot) is held until the first has long
// ended, then the first is sent and the others are lost. Without the
// client's timer the first poll would hold the one slot for ever.
func TestLostAndLatePullsRunTheMissionOnce(t *testing.T) {
	nc := embeddedConn(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := NewClient(ctx, nc, ClientConfig{Store: StoreConfig{AckWait: 5 * time.Second, MaxDeliver: 5}})
	if err != nil {
		t.Fatal(err)
	}
	var runs atomic.Int64
	type held struct{ subject, reply string }
	var (
		mu       sync.Mutex
		holding  = true
		first    *held
		lost     int
		released = make(chan struct{})
	)
	w := pullTestWorker(t, nc, 1, RunnerFunc(func(context.Context, *messages.Mission, RunEnv) (*messages.Step, error) {
		runs.Add(1)
		return &messages.Step{Return: "ok"}, nil
	}), func(w *Worker) {
		w.pulls.publish = func(subject, reply string, req []byte) error {
			mu.Lock()
			defer mu.Unlock()
			if !holding {
				return nc.PublishRequest(subject, reply, req)
			}
			if first == nil {
				first = &held{subject, reply}
				go func() {
					// the first pull (the mission's bell's long poll)
					// ends unanswered after IdleWait and pullMargin
					time.Sleep(2 * (100*time.Millisecond + pullMargin))
					mu.Lock()
					defer mu.Unlock()
					// a no-wait pull for the mission, sent late
					_ = nc.PublishRequest(first.subject, first.reply, []byte(`{"batch":1,"no_wait":true}`))
					holding = false
					close(released)
				}()
				return nil
			}
			lost++
			return nil
		}
	})
	sub, err := c.Submit(ctx, pullTestMission())
	if err != nil {
		t.Fatal(err)
	}
	<-released
	if step, err := c.Await(ctx, sub.ID); err != nil || step.Return != "ok" {
		t.Fatalf("mission: %+v, %v", step, err)
	}
	time.Sleep(300 * time.Millisecond)
	mu.Lock()
	t.Logf("%d pull requests lost", lost)
	mu.Unlock()
	if runs.Load() != 1 {
		t.Errorf("%d runs, want 1", runs.Load())
	}
	// the late delivery went to the pull then open on the lane (a lost
	// one) or, with none open, to the loop as a stray
	t.Logf("%d missions run from ended pulls", w.stats.straysRun.Load())
	// every slot is back: the worker runs the next mission
	st2, err := c.Run(ctx, pullTestMission())
	if err != nil || st2 == nil {
		t.Fatalf("next mission: %+v, %v", st2, err)
	}
	for deadline := time.Now().Add(5 * time.Second); len(w.slots) != 0 || w.reserved.Load() != 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d slots held, %d by polls, with no mission running", len(w.slots), w.reserved.Load())
		}
	}
}

// The answers to the pulls reach their pull: a status by the pull's reply
// subject, a delivered message (which keeps the subject it was stored on)
// by the consumer its acknowledgement subject names, the reader's own at
// once; the others, and those beyond what a pull's channel holds, are
// strays.
func TestPullsDeliverRoutes(t *testing.T) {
	var strays []*nats.Msg
	p := &pulls{prefix: "_INBOX.p", open: map[uint64]*pull{}, byConsumer: map[string]*pull{},
		stray: func(m *nats.Msg) { strays = append(strays, m) }}
	a := &pull{token: 10, consumer: "MISSIONS.c1", ch: make(chan *nats.Msg, 2)}
	b := &pull{token: 11, consumer: "MISSIONS.c2", ch: make(chan *nats.Msg, 2)}
	for _, pl := range []*pull{a, b} {
		p.open[pl.token], p.byConsumer[pl.consumer] = pl, pl
	}
	status := func(subject, code string) *nats.Msg {
		return &nats.Msg{Subject: subject, Header: nats.Header{"Status": []string{code}}}
	}
	delivery := func(reply string) *nats.Msg {
		return &nats.Msg{Subject: "ptc.missions.x", Reply: reply, Data: []byte("m")}
	}
	toA := delivery("$JS.ACK.MISSIONS.c1.1.2.3.4.5")
	toB := delivery("$JS.ACK._.H.MISSIONS.c2.1.2.3.4.5.t")
	endB := status("_INBOX.p.b", "404")
	toNone := delivery("$JS.ACK.MISSIONS.c3.1.2.3.4.5")
	lateStatus := status("_INBOX.p.c", "408")
	overA := delivery("$JS.ACK.MISSIONS.c1.1.3.4.4.5")
	for _, m := range []*nats.Msg{toA, toB, endB, toNone, lateStatus, status("_INBOX.pa", "404"), overA, overA} {
		if p.take(m, nil) {
			t.Errorf("%+v taken as the reader's own", m)
		}
	}
	for _, c := range []struct {
		pl   *pull
		want []*nats.Msg
	}{{a, []*nats.Msg{toA, overA}}, {b, []*nats.Msg{toB, endB}}} {
		for _, want := range c.want {
			select {
			case got := <-c.pl.ch:
				if got != want {
					t.Errorf("pull %d got %+v, want %+v", c.pl.token, got, want)
				}
			default:
				t.Errorf("pull %d got nothing, want %+v", c.pl.token, want)
			}
		}
	}
	if !p.take(toB, b) || len(b.ch) != 0 {
		t.Error("a delivery for the reader's own pull was not taken")
	}
	if len(strays) != 4 || strays[0] != toNone || strays[1] != lateStatus || strays[3] != overA {
		t.Errorf("strays %+v", strays)
	}
	p.forget(a)
	p.take(toA, nil)
	if len(strays) != 5 || len(a.ch) != 0 {
		t.Error("a delivery reached a pull that ended")
	}
}

// A mission delivered to a pull that had ended goes to the loop, which
// hands it back to its consumer at once when no slot is free and runs it
// on a free slot: here the test pulls the mission itself, with the
// worker's one slot held by another mission, then again once it is free.
func TestStrayMissionsGoBackOrRun(t *testing.T) {
	nc := embeddedConn(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := NewClient(ctx, nc, ClientConfig{Store: StoreConfig{AckWait: 5 * time.Second, MaxDeliver: 5}})
	if err != nil {
		t.Fatal(err)
	}
	blocker, stray := pullTestMission(), pullTestMission()
	release := make(chan struct{})
	var mu sync.Mutex
	runs := map[string]int{}
	w := pullTestWorker(t, nc, 1, RunnerFunc(func(_ context.Context, m *messages.Mission, _ RunEnv) (*messages.Step, error) {
		mu.Lock()
		runs[m.ID]++
		mu.Unlock()
		if m.ID == blocker.ID {
			<-release
		}
		return &messages.Step{Return: "ok"}, nil
	}), nil)
	if _, err := c.Submit(ctx, blocker); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); w.Running() != 1; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the blocking mission did not start")
		}
	}
	if _, err := c.Submit(ctx, stray); err != nil {
		t.Fatal(err)
	}
	lane := w.lanes[laneIndex(0, messages.SubmitLane(c.Submitter()))]
	inbox := nc.NewInbox()
	sub, err := nc.SubscribeSync(inbox)
	if err != nil {
		t.Fatal(err)
	}
	pullStray := func() *nats.Msg {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
			if err := nc.PublishRequest(lane.next, inbox, []byte(`{"batch":1,"no_wait":true}`)); err != nil {
				t.Fatal(err)
			}
			msg, err := sub.NextMsg(2 * time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if status, _, _ := pullStatus(msg); !status {
				return msg
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Fatal("the mission was not delivered")
		return nil
	}
	w.strays <- pullStray()
	for deadline := time.Now().Add(5 * time.Second); w.stats.straysBack.Load() != 1; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the stray mission was not handed back with no slot free")
		}
	}
	msg := pullStray() // handed back at once: delivered again
	close(release)
	// As the slot frees, the stray's bell opens a poll on it, which finds
	// nothing (the test holds the stray) and gives the slot back after
	// IdleWait. The stray goes to the loop once that poll has ended: sent
	// before, it would find no slot free, be handed back and reach the
	// open poll instead.
	for deadline := time.Now().Add(10 * time.Second); w.reserved.Load() == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no poll opened once the blocking mission ended")
		}
	}
	for deadline := time.Now().Add(10 * time.Second); w.reserved.Load() != 0 || len(w.slots) != 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the slot was not freed")
		}
	}
	w.strays <- msg
	if step, err := c.Await(ctx, stray.ID); err != nil || step.Return != "ok" {
		t.Fatalf("stray mission: %+v, %v", step, err)
	}
	if n := w.stats.straysRun.Load(); n != 1 {
		t.Errorf("%d stray missions run, want 1", n)
	}
	mu.Lock()
	defer mu.Unlock()
	if runs[stray.ID] != 1 || runs[blocker.ID] != 1 {
		t.Errorf("runs %v, want one of each", runs)
	}
}

// A worker with more free slots than its pulls' subscription holds
// answers asks a backlog for at most maxPullBatch missions a pull: a pull
// for them all would let nats.go drop the answers beyond what the
// channel holds, and those missions would wait for AckWait and run on a
// second delivery. Every mission of the backlog runs once, on its first
// delivery, unless the worker handed it back itself: on a slow machine a
// pull can end before its answers come, and a stray the loop has no room
// for goes back to the consumer at once (counted in straysBack).
func TestBacklogPullsFitTheAnswers(t *testing.T) {
	nc := embeddedConn(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	store := StoreConfig{AckWait: 30 * time.Second, MaxDeliver: 5, MaxAckPending: 4 * pullAnswers}
	c, err := NewClient(ctx, nc, ClientConfig{Store: store})
	if err != nil {
		t.Fatal(err)
	}
	n := pullAnswers + pullAnswers/2
	ids := make([]string, n)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for i := range ids {
		m := pullTestMission()
		ids[i] = m.ID
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if _, err := c.Submit(ctx, m); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	var runs atomic.Int64
	var mu sync.Mutex
	most := 0
	w, err := NewWorker(nc, WorkerConfig{
		Slots: 2 * n, Priorities: []string{messages.PriorityNormal}, Store: store,
		IdleWait: 100 * time.Millisecond, NakDelay: 20 * time.Millisecond, DrainGrace: 5 * time.Second,
		Runner: RunnerFunc(func(context.Context, *messages.Mission, RunEnv) (*messages.Step, error) {
			runs.Add(1)
			return &messages.Step{Return: "ok"}, nil
		}),
	})
	if err != nil {
		t.Fatal(err)
	}
	w.pulls.publish = func(subject, reply string, req []byte) error {
		var r struct{ Batch int }
		if err := json.Unmarshal(req, &r); err != nil {
			t.Errorf("pull request %s: %v", req, err)
		}
		mu.Lock()
		most = max(most, r.Batch)
		mu.Unlock()
		return nc.PublishRequest(subject, reply, req)
	}
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Stop() })
	again := 0
	for _, id := range ids {
		step, err := c.Await(ctx, id)
		if err != nil || step.Return != "ok" {
			t.Fatalf("mission %s: %+v, %v", id, step, err)
		}
		if step.Attempts != 1 {
			again++
		}
	}
	if back := w.stats.straysBack.Load(); int64(again) > back {
		t.Errorf("%d missions ran on a later delivery and the worker handed back %d: an answer to a pull was dropped", again, back)
	} else if again > 0 {
		t.Logf("%d missions ran on a later delivery, all handed back as strays", again)
	}
	if got := runs.Load(); got != int64(n) {
		t.Errorf("%d runs of %d missions", got, n)
	}
	mu.Lock()
	defer mu.Unlock()
	if most > maxPullBatch {
		t.Errorf("a pull asked for %d missions, more than %d", most, maxPullBatch)
	}
}
