package fleet_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ptcfleet/ptc/pkg/fleet"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// quotaRunner runs each mission for hold, counting per submitter (the
// mission's context "sub") the missions running at once, the most ever
// seen, and the runs of each mission.
type quotaRunner struct {
	hold    time.Duration
	mu      sync.Mutex
	running map[string]int
	most    map[string]int
	runs    map[string]int
	// firstB is when the first mission of submitter "b" started, lastA
	// when the last of "a" ended.
	firstB, lastA time.Time
}

func newQuotaRunner(hold time.Duration) *quotaRunner {
	return &quotaRunner{hold: hold, running: map[string]int{}, most: map[string]int{}, runs: map[string]int{}}
}

func (r *quotaRunner) Run(ctx context.Context, m *messages.Mission, env fleet.RunEnv) (*messages.Step, error) {
	sub, _ := m.Context["sub"].(string)
	r.mu.Lock()
	r.running[sub]++
	r.most[sub] = max(r.most[sub], r.running[sub])
	r.runs[m.ID]++
	if sub == "b" && r.firstB.IsZero() {
		r.firstB = time.Now()
	}
	r.mu.Unlock()
	select {
	case <-time.After(r.hold):
	case <-ctx.Done():
	}
	r.mu.Lock()
	r.running[sub]--
	if sub == "a" {
		r.lastA = time.Now()
	}
	r.mu.Unlock()
	return &messages.Step{Return: "ok"}, nil
}

func setQuota(t testing.TB, nc *nats.Conn, q fleet.QuotaLimit) {
	t.Helper()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fleet.EnsureStores(testCtx(t), js, testStore); err != nil {
		t.Fatal(err)
	}
	if err := fleet.SetQuota(testCtx(t), js, q); err != nil {
		t.Fatal(err)
	}
}

// submitN submits n missions of submitter sub (its context names it) and
// returns them.
func submitN(t testing.TB, c *fleet.Client, sub string, n int) []*messages.Mission {
	t.Helper()
	var ms []*messages.Mission
	for range n {
		m := newMission()
		m.Context = map[string]any{"sub": sub}
		if _, err := c.Submit(testCtx(t), m); err != nil {
			t.Fatal(err)
		}
		ms = append(ms, m)
	}
	return ms
}

// Two workers of 4 slots each, submitter a with a running quota of 2
// queues 20 slow missions: at no instant do more than 2 of a's run (as
// the runner counts them), each runs exactly once and finishes; the
// missions over the quota wait parked (quota_wait, with an event saying
// so) and never use up a delivery; b, with no quota, submits after a and
// its missions run meanwhile, before a's backlog is through.
func TestQuotaRunningHoldsAcrossWorkers(t *testing.T) {
	srv, nc := runJetStream(t)
	setQuota(t, nc, fleet.QuotaLimit{Scope: fleet.QuotaSubmitterScope("a"), MaxRunning: 2})
	r := newQuotaRunner(300 * time.Millisecond)
	for range 2 {
		startWorker(t, connect(t, srv), r)
	}
	a, b := submitterClient(t, nc, "a"), submitterClient(t, nc, "b")
	ctx := testCtx(t)
	as := submitN(t, a, "a", 20)
	bs := submitN(t, b, "b", 4)
	for _, m := range bs {
		if st, err := b.Await(ctx, m.ID); err != nil || !st.Ok() {
			t.Fatalf("b's mission: %+v, %v", st, err)
		}
	}
	waited := 0
	for _, m := range as {
		st, err := a.Await(ctx, m.ID)
		if err != nil || !st.Ok() {
			t.Fatalf("a's mission: %+v, %v", st, err)
		}
		if st.Attempts != 1 {
			t.Errorf("mission %s finished on attempt %d: waiting for the quota used up deliveries", m.ID, st.Attempts)
		}
		s := waitState(t, a, m.ID, messages.StateSucceeded)
		waited += s.QuotaWaits
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.most["a"] != 2 {
		t.Errorf("a ran up to %d missions at once, want 2 (its quota)", r.most["a"])
	}
	if r.most["b"] < 2 {
		t.Errorf("b, with no quota, ran at most %d at once", r.most["b"])
	}
	for _, m := range append(as, bs...) {
		if n := r.runs[m.ID]; n != 1 {
			t.Errorf("mission %s ran %d times", m.ID, n)
		}
		if n := resultsStoredOf(t, a, m.Context["sub"].(string), m.ID); n != 1 {
			t.Errorf("mission %s has %d results", m.ID, n)
		}
	}
	if waited == 0 {
		t.Error("no mission of a waited for its quota")
	}
	if !r.firstB.Before(r.lastA) {
		t.Errorf("b's first mission started at %v, after a's backlog ended (%v)", r.firstB, r.lastA)
	}
}

// resultsStoredOf counts the results stored for mission id of submitter
// sub.
func resultsStoredOf(t *testing.T, c *fleet.Client, sub, id string) uint64 {
	t.Helper()
	info, err := c.Stores().Results.Info(testCtx(t), jetstream.WithSubjectFilter(messages.ResultSubject(sub, id)))
	if err != nil {
		t.Fatal(err)
	}
	return info.State.Subjects[messages.ResultSubject(sub, id)]
}

// A mission over its submitter's running quota says so: its status is
// quota_wait, and an event names the quota and the count, while the
// missions holding the quota run.
func TestQuotaWaitIsShownInStatusAndEvents(t *testing.T) {
	_, nc := runJetStream(t)
	// set before the worker reads the quotas (it reads them again every
	// 2 s)
	setQuota(t, nc, fleet.QuotaLimit{Scope: fleet.QuotaDefault, MaxRunning: 1})
	release := make(chan struct{})
	var started atomic.Int32
	startWorker(t, nc, fleet.RunnerFunc(func(ctx context.Context, m *messages.Mission, env fleet.RunEnv) (*messages.Step, error) {
		started.Add(1)
		<-release
		return &messages.Step{Return: "ok"}, nil
	}), func(cfg *fleet.WorkerConfig) {
		// the quota_wait event is published before the parked message
		// is acked, not when a timer fires
		cfg.EventDelay = time.Minute
	})
	c := submitterClient(t, nc, "a")
	ctx := testCtx(t)
	ms := submitN(t, c, "a", 2)
	eventually(t, 10*time.Second, "one mission waiting for the quota", func() bool {
		n := 0
		for _, m := range ms {
			if st, err := c.Status(ctx, m.ID); err == nil && st.State == messages.StateQuotaWait {
				n++
			}
		}
		return n == 1
	})
	if n := started.Load(); n != 1 {
		t.Fatalf("%d missions started under a quota of 1", n)
	}
	var waiting *messages.Mission
	for _, m := range ms {
		if st, _ := c.Status(ctx, m.ID); st.State == messages.StateQuotaWait {
			waiting = m
		}
	}
	var ev *messages.Event
	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	_ = c.Watch(wctx, waiting.ID, func(e *messages.Event) error {
		if e.Kind == messages.EventQuotaWait {
			ev = e
			cancel()
		}
		return nil
	})
	cancel()
	if ev == nil {
		t.Fatal("no quota_wait event")
	}
	if ev.Data["quota"] != "the default quota" || ev.Data["max_running"] != int64(1) || ev.Data["running"] != int64(1) || ev.Data["submitter"] != "a" {
		t.Errorf("quota_wait event data %v", ev.Data)
	}
	close(release)
	for _, m := range ms {
		if st, err := c.Await(ctx, m.ID); err != nil || !st.Ok() {
			t.Fatalf("%+v, %v", st, err)
		}
		// the final event is published after the result: every event
		// stored is read, none lost to a numbering over another
		eventually(t, 5*time.Second, "every stored event read", func() bool {
			evs, err := c.Events(ctx, m.ID)
			return err == nil && len(evs) > 0 && evs[len(evs)-1].Kind == messages.EventFinal && storedEventCount(t, c, m.ID) == len(evs)
		})
	}
	// the leases are given back
	js, _ := jetstream.New(nc)
	kv, err := js.KeyValue(ctx, messages.BucketQuotaLeases)
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, "the leases given back", func() bool {
		e, err := kv.Get(ctx, "a")
		var ls fleet.QuotaLeases
		return err == nil && json.Unmarshal(e.Value(), &ls) == nil && len(ls.Leases) == 0 && len(ls.Waiting) == 0
	})
}

// A worker SIGKILLed while its 2 missions hold submitter a's whole
// running quota of 2 gives no lease back; those missions are cancelled
// meanwhile, so no later run takes their leases over. The leases expire
// (two AckWaits unrenewed) and a's other missions then run, 2 at most at
// once, each exactly once.
func TestQuotaLeaseOfAKilledWorkerExpires(t *testing.T) {
	srv, nc := runJetStream(t)
	setQuota(t, nc, fleet.QuotaLimit{Scope: fleet.QuotaSubmitterScope("a"), MaxRunning: 2})
	c := submitterClient(t, nc, "a")
	ctx := testCtx(t)
	held := submitN(t, c, "a", 2)
	cmd, lines := startSubprocessWorker(t, srv.ClientURL(), 2)
	for range 2 {
		if line, err := lines.ReadString('\n'); err != nil || !strings.HasPrefix(line, "running ") {
			t.Fatalf("subprocess said %q, %v", line, err)
		}
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	js, _ := jetstream.New(nc)
	kv, err := js.KeyValue(ctx, messages.BucketQuotaLeases)
	if err != nil {
		t.Fatal(err)
	}
	e, err := kv.Get(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	var ls fleet.QuotaLeases
	if err := json.Unmarshal(e.Value(), &ls); err != nil || len(ls.Leases) != 2 {
		t.Fatalf("leases of the killed worker: %s (%v), want 2", e.Value(), err)
	}
	// a worker of another priority carries the cancels out
	startWorker(t, nc, newQuotaRunner(0), func(cfg *fleet.WorkerConfig) { cfg.Priorities = []string{messages.PriorityHigh} })
	for _, m := range held {
		if err := c.Cancel(ctx, m.ID, "its worker died"); err != nil {
			t.Fatal(err)
		}
	}
	rest := submitN(t, c, "a", 6)
	r := newQuotaRunner(50 * time.Millisecond)
	startWorker(t, nc, r)
	for _, m := range held {
		if st, err := c.Await(ctx, m.ID); err != nil || st.Fail == nil || st.Fail.Reason != fleet.ReasonCancelled {
			t.Fatalf("cancelled mission: %+v, %v", st, err)
		}
	}
	for _, m := range rest {
		if st, err := c.Await(ctx, m.ID); err != nil || !st.Ok() {
			t.Fatalf("mission after the kill: %+v, %v", st, err)
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.most["a"] > 2 {
		t.Errorf("a ran %d missions at once, over its quota of 2", r.most["a"])
	}
	for _, m := range rest {
		if r.runs[m.ID] != 1 {
			t.Errorf("mission %s ran %d times", m.ID, r.runs[m.ID])
		}
	}
	for _, m := range held {
		if r.runs[m.ID] != 0 {
			t.Errorf("cancelled mission %s ran", m.ID)
		}
	}
}

// Client.Submit refuses a mission over its submitter's max_queued with an
// error naming the quota, its bound and the count; another submitter,
// with no quota, is not held to it.
func TestQuotaQueuedRefusesTheSubmit(t *testing.T) {
	_, nc := runJetStream(t)
	setQuota(t, nc, fleet.QuotaLimit{Scope: fleet.QuotaSubmitterScope("a"), MaxQueued: 3})
	a, b := submitterClient(t, nc, "a"), submitterClient(t, nc, "b")
	submitN(t, a, "a", 3) // no worker: they stay queued
	_, err := a.Submit(testCtx(t), newMission())
	var qe *fleet.QuotaExceededError
	if !errors.Is(err, fleet.ErrQuotaExceeded) || !errors.As(err, &qe) || qe.MaxQueued != 3 || qe.Queued != 3 ||
		!strings.Contains(err.Error(), "submitter a's quota: max_queued 3: 3 missions of the submitter are queued or running") {
		t.Fatalf("submit over the quota: %v", err)
	}
	submitN(t, b, "b", 5)
}

// A mission whose result is stored no longer counts against its
// submitter's max_queued, though its message is still in MISSIONS: the
// worker's acknowledgement, which removes it, comes after the result has
// reached the client. With one such mission queued under a quota of 1,
// the next submit is taken; a third, with the second waiting, is refused
// with a count of 1.
func TestQuotaQueuedCountsNoFinishedMission(t *testing.T) {
	_, nc := runJetStream(t)
	setQuota(t, nc, fleet.QuotaLimit{Scope: fleet.QuotaSubmitterScope("a"), MaxQueued: 1})
	a := submitterClient(t, nc, "a")
	ctx := testCtx(t)
	done := submitN(t, a, "a", 1)[0] // no worker: it stays queued
	js, _ := jetstream.New(nc)
	step, err := messages.Marshal(&messages.Step{Return: "ok"})
	if err != nil {
		t.Fatal(err)
	}
	// the result a worker stores before it acknowledges the message
	if _, err := js.Publish(ctx, messages.ResultSubject("a", done.ID), step); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Submit(ctx, newMission()); err != nil {
		t.Fatalf("a submit after the queued mission's result is stored: %v", err)
	}
	_, err = a.Submit(ctx, newMission())
	var qe *fleet.QuotaExceededError
	if !errors.As(err, &qe) || qe.Queued != 1 {
		t.Fatalf("a submit with one mission waiting under max_queued 1: %v, want refused with 1 queued", err)
	}
}

// Missions run one after another, each submitted once the one before
// returned its result, are never refused by a max_queued of 1, on the
// client or on the worker: the one before has finished.
func TestQuotaQueuedOfOneRunsMissionsInSequence(t *testing.T) {
	s, nc := runJetStream(t)
	setQuota(t, nc, fleet.QuotaLimit{Scope: fleet.QuotaSubmitterScope("a"), MaxQueued: 1})
	var runs atomic.Int64
	startWorker(t, connect(t, s), countingRunner(&runs, "ok"), func(cfg *fleet.WorkerConfig) { cfg.Slots = 1 })
	a := submitterClient(t, nc, "a")
	ctx := testCtx(t)
	const n = 100
	for i := range n {
		step, err := a.Run(ctx, newMission())
		if err != nil {
			t.Fatalf("mission %d: %v", i, err)
		}
		if !step.Ok() {
			t.Fatalf("mission %d: %+v", i, step.Fail)
		}
	}
	if runs.Load() != n {
		t.Errorf("%d runs for %d missions", runs.Load(), n)
	}
}

// A submitter that publishes on its subject directly, past Client.Submit's
// check, is held to its max_queued by the workers: of 10 missions
// published at once under a quota of 3, taken one at a time by one
// worker, 3 run; the others end quota_exceeded, naming the quota, without
// running. A refused mission has left MISSIONS before the worker counts
// the next one's (its acknowledgement confirmed): the server removes an
// acknowledged message on a goroutine of its own, and a count taken
// meanwhile would refuse a mission within the quota.
func TestQuotaQueuedHoldsARawPublisher(t *testing.T) {
	_, nc := runJetStream(t)
	setQuota(t, nc, fleet.QuotaLimit{Scope: fleet.QuotaSubmitterScope("a"), MaxQueued: 3})
	js, _ := jetstream.New(nc)
	ctx := testCtx(t)
	var ms []*messages.Mission
	for range 10 {
		m := newMission()
		m.Version, m.CreatedAt = messages.MissionVersion, time.Now().UTC()
		data, err := messages.MarshalMission(m)
		if err != nil {
			t.Fatal(err)
		}
		msg := &nats.Msg{Subject: messages.SubmitSubject("a", messages.PriorityNormal, m.ID), Data: data, Header: nats.Header{}}
		msg.Header.Set(messages.HeaderMissionID, m.ID)
		if _, err := js.PublishMsg(ctx, msg, jetstream.WithMsgID(m.ID)); err != nil {
			t.Fatal(err)
		}
		ms = append(ms, m)
	}
	var runs atomic.Int64
	startWorker(t, nc, countingRunner(&runs, "ok"), func(cfg *fleet.WorkerConfig) { cfg.Slots = 1 })
	a := submitterClient(t, nc, "a")
	ran, refused := 0, 0
	for _, m := range ms {
		st, err := a.Await(ctx, m.ID)
		switch {
		case err != nil:
			t.Fatal(err)
		case st.Ok():
			ran++
		case st.Fail.Reason == fleet.ReasonQuotaExceeded:
			refused++
			if !strings.Contains(st.Fail.Message, "submitter a's quota: max_queued 3:") {
				t.Errorf("refusal names no quota: %q", st.Fail.Message)
			}
		default:
			t.Errorf("mission %s: %+v", m.ID, st.Fail)
		}
	}
	t.Logf("ran %d, refused %d", ran, refused)
	if ran != 3 || refused != 7 || int64(ran) != runs.Load() {
		t.Errorf("ran %d (runner: %d), refused %d; want 3 run and the rest refused", ran, runs.Load(), refused)
	}
}

// Two submitters in different lanes, weights 3 and 1, both flooded: the
// workers' round robin gives the heavier lane about 3 missions for each of
// the lighter one's.
func TestQuotaWeightsShareTheLanes(t *testing.T) {
	_, nc := runJetStream(t)
	heavy, light := "", ""
	for i := 0; heavy == "" || light == ""; i++ {
		name := fmt.Sprintf("s%d", i)
		switch {
		case heavy == "":
			heavy = name
		case messages.SubmitLane(name) != messages.SubmitLane(heavy):
			light = name
		}
	}
	setQuota(t, nc, fleet.QuotaLimit{Scope: fleet.QuotaSubmitterScope(heavy), Weight: 3})
	setQuota(t, nc, fleet.QuotaLimit{Scope: fleet.QuotaSubmitterScope(light), Weight: 1})
	submitN(t, submitterClient(t, nc, heavy), heavy, 60)
	submitN(t, submitterClient(t, nc, light), light, 60)
	// the lanes are found by the workers' sweep one after the other: the
	// first found runs alone meanwhile, so the count starts after it
	const skip, counted = 16, 48
	var mu sync.Mutex
	var order []string
	startWorker(t, nc, fleet.RunnerFunc(func(ctx context.Context, m *messages.Mission, env fleet.RunEnv) (*messages.Step, error) {
		mu.Lock()
		order = append(order, m.Context["sub"].(string))
		mu.Unlock()
		time.Sleep(5 * time.Millisecond)
		return &messages.Step{Return: "ok"}, nil
	}), func(cfg *fleet.WorkerConfig) { cfg.Slots = 2 })
	eventually(t, 20*time.Second, fmt.Sprintf("%d missions started", skip+counted), func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(order) >= skip+counted
	})
	mu.Lock()
	n := map[string]int{}
	for _, s := range order[skip : skip+counted] {
		n[s]++
	}
	mu.Unlock()
	ratio := float64(n[heavy]) / float64(max(n[light], 1))
	t.Logf("of %d started: %s (weight 3) %d, %s (weight 1) %d: %.2f", counted, heavy, n[heavy], light, n[light], ratio)
	if ratio < 2 || ratio > 4.5 {
		t.Errorf("started %d of the weight-3 submitter's and %d of the weight-1's (%.2f:1), want about 3:1", n[heavy], n[light], ratio)
	}
}

// heldQuota is a fleet of one worker where submitter "a" has a running
// quota of 1: first, a mission of a's, runs held until release is
// closed; next, a's second, waits for the quota. runs counts the runs of
// each mission, most the most that ran at once.
type heldQuota struct {
	nc          *nats.Conn
	c           *fleet.Client
	first, next *messages.Mission
	release     chan struct{}

	running, most atomic.Int64
	mu            sync.Mutex
	runs          map[string]int
}

func holdQuota(t *testing.T) *heldQuota {
	t.Helper()
	_, nc := runJetStream(t)
	setQuota(t, nc, fleet.QuotaLimit{Scope: fleet.QuotaSubmitterScope("a"), MaxRunning: 1})
	h := &heldQuota{nc: nc, release: make(chan struct{}), runs: map[string]int{}}
	startWorker(t, nc, fleet.RunnerFunc(func(ctx context.Context, m *messages.Mission, env fleet.RunEnv) (*messages.Step, error) {
		n := h.running.Add(1)
		defer h.running.Add(-1)
		for {
			if old := h.most.Load(); n <= old || h.most.CompareAndSwap(old, n) {
				break
			}
		}
		h.mu.Lock()
		h.runs[m.ID]++
		h.mu.Unlock()
		if m.Context["hold"] == true {
			<-h.release
		}
		return &messages.Step{Return: "ok"}, nil
	}))
	h.c = submitterClient(t, nc, "a")
	h.first = newMission()
	h.first.Context = map[string]any{"hold": true}
	if _, err := h.c.Submit(testCtx(t), h.first); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the first mission running", func() bool {
		h.mu.Lock()
		defer h.mu.Unlock()
		return h.runs[h.first.ID] == 1
	})
	h.next = submitN(t, h.c, "a", 1)[0]
	waitState(t, h.c, h.next.ID, messages.StateQuotaWait)
	return h
}

// A lease given back wakes the first mission waiting for the quota at
// once: the mission is queued again by the worker that gave the lease
// back (its wake carries the Msg-Id "<id>/quota/<seq>" and the
// Ptc-Wake-Moved mark with its parked message's sequence), not by its
// schedule, and runs. The wake goes into MISSIONS directly: none waits
// in PARKED for a worker to move it.
func TestQuotaLeaseGivenBackWakesTheNextMission(t *testing.T) {
	h := holdQuota(t)
	ctx := testCtx(t)
	woken, err := h.nc.SubscribeSync(messages.WokenSubject("a", messages.PriorityNormal, h.next.ID))
	if err != nil {
		t.Fatal(err)
	}
	parked, err := h.nc.SubscribeSync(messages.WakeSubject("a", messages.PriorityNormal, h.next.ID))
	if err != nil {
		t.Fatal(err)
	}
	close(h.release)
	if st, err := h.c.Await(ctx, h.next.ID); err != nil || !st.Ok() {
		t.Fatalf("%+v, %v", st, err)
	}
	raw, err := woken.NextMsg(time.Second)
	if err != nil {
		t.Fatalf("no wake of the waiting mission: %v", err)
	}
	if id := raw.Header.Get(jetstream.MsgIDHeader); !strings.HasPrefix(id, h.next.ID+"/quota/") || raw.Header.Get(messages.HeaderWakeMoved) != strings.TrimPrefix(id, h.next.ID+"/quota/") {
		t.Errorf("the waiting mission was woken by %q (headers %v), not by the lease given back", id, raw.Header)
	}
	if m, err := parked.NextMsg(100 * time.Millisecond); err == nil {
		t.Errorf("a wake through PARKED too: %v", m.Header)
	}
}

// BenchmarkQuotaHandoff runs missions of one submitter whose running
// quota is 1, twenty submitted at once: each after the first waits parked
// for the quota and is woken by the lease the one before gives back. It
// reports the time from the submissions to the last result per mission
// (ms/mission): the time one mission runs plus the time the lease it
// gives back takes to wake the mission waiting after it.
func BenchmarkQuotaHandoff(b *testing.B) {
	_, nc := runJetStream(b)
	setQuota(b, nc, fleet.QuotaLimit{Scope: fleet.QuotaSubmitterScope("q"), MaxRunning: 1})
	startWorker(b, nc, fleet.RunnerFunc(func(context.Context, *messages.Mission, fleet.RunEnv) (*messages.Step, error) {
		return &messages.Step{Return: "ok"}, nil
	}))
	c := submitterClient(b, nc, "q")
	ctx := testCtx(b)
	const n = 20
	var took time.Duration
	batches := 0
	for b.Loop() {
		start := time.Now()
		for _, m := range submitN(b, c, "q", n) {
			if st, err := c.Await(ctx, m.ID); err != nil || !st.Ok() {
				b.Fatalf("%+v, %v", st, err)
			}
		}
		took += time.Since(start)
		batches++
	}
	b.ReportMetric(float64(took.Microseconds())/1e3/float64(batches*n), "ms/mission")
}

// A submitter may publish on its own submit subject with any header,
// Ptc-Wake-Moved included. A copy of its mission waiting for its running
// quota so marked, taken as a wake, does not run it past the quota: its
// lease is refused and it waits again; it runs once, after the lease is
// given back, never next to the mission holding it.
func TestForgedMovedWakeDoesNotSkipTheQuota(t *testing.T) {
	h := holdQuota(t)
	ctx := testCtx(t)
	body, err := messages.MarshalMission(h.next)
	if err != nil {
		t.Fatal(err)
	}
	forged := &nats.Msg{Subject: messages.SubmitSubject("a", messages.PriorityNormal, h.next.ID), Data: body, Header: nats.Header{}}
	forged.Header.Set(messages.HeaderMissionID, h.next.ID)
	forged.Header.Set(messages.HeaderWakeMoved, "1")
	js, err := jetstream.New(h.nc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.PublishMsg(ctx, forged); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the forged copy taken from MISSIONS and the mission waiting again", func() bool {
		_, qerr := h.c.Stores().Missions.GetLastMsgForSubject(ctx, messages.QueuedFilters("a", h.next.ID)[0])
		s, err := h.c.Status(ctx, h.next.ID)
		return errors.Is(qerr, jetstream.ErrMsgNotFound) && err == nil && s.State == messages.StateQuotaWait
	})
	close(h.release)
	if st, err := h.c.Await(ctx, h.next.ID); err != nil || !st.Ok() {
		t.Fatalf("%+v, %v", st, err)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.most.Load() != 1 || h.runs[h.next.ID] != 1 || h.runs[h.first.ID] != 1 {
		t.Fatalf("at most %d ran at once; runs %v: want 1 at a time, each once", h.most.Load(), h.runs)
	}
}
