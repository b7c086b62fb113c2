package fleet_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ptcfleet/ptc/pkg/fleet"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// refuseResults makes RESULTS refuse every write (none fits its largest
// message) and returns what sets it back.
func refuseResults(t *testing.T, nc *nats.Conn, c *fleet.Client) (restore func()) {
	t.Helper()
	ctx := testCtx(t)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	info, err := c.Stores().Results.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	refusing := info.Config
	refusing.MaxMsgSize = 1
	if _, err := js.UpdateStream(ctx, refusing); err != nil {
		t.Fatal(err)
	}
	return func() {
		t.Helper()
		if _, err := js.UpdateStream(ctx, info.Config); err != nil {
			t.Fatal(err)
		}
	}
}

// deadCopies counts the messages DEAD holds for mission id.
func deadCopies(t *testing.T, c *fleet.Client, id string) uint64 {
	t.Helper()
	subj := messages.DeadSubject(id)
	info, err := c.Stores().Dead.Info(testCtx(t), jetstream.WithSubjectFilter(subj))
	if err != nil {
		t.Fatal(err)
	}
	return info.State.Subjects[subj]
}

// assertKept checks, once a mission was dead-lettered while RESULTS
// refuses its failure, that the mission is not lost: its message is still
// in MISSIONS and it has no result and no final status, for a while.
func assertKept(t *testing.T, c *fleet.Client, id string) {
	t.Helper()
	ctx := testCtx(t)
	eventually(t, 10*time.Second, "dead letter", func() bool { return deadCopies(t, c, id) > 0 })
	for range 5 {
		time.Sleep(100 * time.Millisecond)
		if info, err := c.Stores().Missions.Info(ctx); err != nil || info.State.Msgs != 1 {
			t.Fatalf("MISSIONS holds %v messages (%v) while the failure is not stored; want the mission's one", info.State.Msgs, err)
		}
	}
	if st, err := c.Status(ctx, id); err == nil && messages.TerminalState(st.State) {
		t.Fatalf("status %+v is final with no result stored", st)
	} else if err != nil && !errors.Is(err, fleet.ErrNotFound) {
		t.Fatal(err)
	}
	if _, err := c.Result(ctx, id); !errors.Is(err, fleet.ErrNotFound) {
		t.Fatalf("result: %v, want none while RESULTS refuses it", err)
	}
}

// assertSettled checks that, RESULTS back, mission id gets its failure
// Step with reason and a message holding msg, a final status, one result,
// one dead letter and no message left in MISSIONS.
func assertSettled(t *testing.T, c *fleet.Client, id, reason, msg string) {
	t.Helper()
	ctx := testCtx(t)
	actx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	step, err := c.Await(actx, id)
	if err != nil {
		t.Fatalf("await: %v", err)
	}
	if step.Fail == nil || step.Fail.Reason != reason || !strings.Contains(step.Fail.Message, msg) {
		t.Fatalf("step = %+v, want a %s failure saying %q", step.Fail, reason, msg)
	}
	waitState(t, c, id, messages.StateDead)
	eventually(t, 10*time.Second, "the mission's message removed", func() bool {
		info, err := c.Stores().Missions.Info(ctx)
		return err == nil && info.State.Msgs == 0
	})
	subj := messages.ResultSubject(c.Submitter(), id)
	if info, err := c.Stores().Results.Info(ctx, jetstream.WithSubjectFilter(subj)); err != nil || info.State.Subjects[subj] != 1 {
		t.Errorf("results stored = %v (%v), want 1", info.State.Subjects[subj], err)
	}
	if n := deadCopies(t, c, id); n != 1 {
		t.Errorf("dead letters = %d, want 1", n)
	}
}

// The last attempt of a retryable failure whose failure Step RESULTS does
// not take leaves the message in MISSIONS: the server gives up on it and
// its max-deliveries advisory stores the failure, with the attempt's
// cause, once RESULTS is back.
func TestLastRetryKeepsTheMissionUntilItsFailureIsStored(t *testing.T) {
	_, nc := runJetStream(t)
	store := fleet.StoreConfig{AckWait: time.Second, MaxDeliver: 2}
	c, err := fleet.NewClient(testCtx(t), nc, fleet.ClientConfig{Store: store})
	if err != nil {
		t.Fatal(err)
	}
	restore := refuseResults(t, nc, c)
	var runs atomic.Int64
	startWorker(t, nc, fleet.RunnerFunc(func(ctx context.Context, m *messages.Mission, env fleet.RunEnv) (*messages.Step, error) {
		runs.Add(1)
		return nil, fmt.Errorf("model overloaded: %w", fleet.ErrRetryable)
	}), func(cfg *fleet.WorkerConfig) { cfg.Store = store })
	m := submitNew(testCtx(t), t, c)
	assertKept(t, c, m.ID)
	restore()
	assertSettled(t, c, m.ID, fleet.ReasonMaxDeliveries, "gave up after 2 attempts: model overloaded")
	if runs.Load() != 2 {
		t.Errorf("runs = %d, want 2", runs.Load())
	}
}

// A message that does not validate, whose failure RESULTS does not take,
// stays in MISSIONS until its invalid_mission failure is stored.
func TestInvalidMissionKeptUntilItsFailureIsStored(t *testing.T) {
	_, nc := runJetStream(t)
	store := fleet.StoreConfig{AckWait: time.Second, MaxDeliver: 2}
	c, err := fleet.NewClient(testCtx(t), nc, fleet.ClientConfig{Store: store})
	if err != nil {
		t.Fatal(err)
	}
	restore := refuseResults(t, nc, c)
	var runs atomic.Int64
	startWorker(t, nc, countingRunner(&runs, nil), func(cfg *fleet.WorkerConfig) { cfg.Store = store })
	// a valid encoding of a mission submitted on another mission's subject
	id := messages.NewMissionID()
	invalid, _ := messages.Marshal(&messages.Mission{ID: "nope", Kind: messages.KindAgent})
	js, _ := jetstream.New(nc)
	if _, err := js.Publish(testCtx(t), messages.SubmitSubject(c.Submitter(), messages.PriorityNormal, id), invalid); err != nil {
		t.Fatal(err)
	}
	assertKept(t, c, id)
	restore()
	assertSettled(t, c, id, fleet.ReasonInvalid, `mission.id: "nope" is not a ULID`)
	if runs.Load() != 0 {
		t.Errorf("runs = %d, want 0", runs.Load())
	}
}

// A mission refused because its id belongs to another submitter's
// mission, whose failure RESULTS does not take, stays in MISSIONS until
// its failure is stored.
func TestRefusedMissionKeptUntilItsFailureIsStored(t *testing.T) {
	_, nc := runJetStream(t)
	var runs atomic.Int64
	startWorker(t, nc, countingRunner(&runs, "done"))
	ctx := testCtx(t)
	a, b := submitterClient(t, nc, "alice"), submitterClient(t, nc, "bob")
	m := newMission()
	if st, err := a.Run(ctx, m); err != nil || st.Return != "done" {
		t.Fatalf("alice's mission: %v %+v", err, st)
	}
	restore := refuseResults(t, nc, b)
	// bob's copy is queued past the stream's duplicate window (no Msg-Id
	// here)
	other := *m
	other.Version, other.CreatedAt = messages.MissionVersion, time.Now().UTC()
	data, err := messages.MarshalMission(&other)
	if err != nil {
		t.Fatal(err)
	}
	js, _ := jetstream.New(nc)
	if _, err := js.Publish(ctx, messages.SubmitSubject("bob", messages.PriorityNormal, m.ID), data); err != nil {
		t.Fatal(err)
	}
	assertKept(t, b, m.ID)
	restore()
	assertSettled(t, b, m.ID, fleet.ReasonInvalid, "belongs to another submitter")
	if runs.Load() != 1 {
		t.Errorf("runs = %d, want 1 (bob's mission refused before it runs)", runs.Load())
	}
	if r, err := a.Result(ctx, m.ID); err != nil || r.Return != "done" {
		t.Fatalf("alice's result: %v %+v", err, r)
	}
}

// An exhausted mission whose worker stopped before its failure was stored
// (RESULTS refused it) is settled by the next worker that starts: the
// consumer delivers its message no more and its advisory is not sent
// again.
func TestExhaustedMissionSettledByTheNextWorker(t *testing.T) {
	_, nc := runJetStream(t)
	ctx := testCtx(t)
	store := fleet.StoreConfig{AckWait: 1500 * time.Millisecond, MaxDeliver: 1}
	c, err := fleet.NewClient(ctx, nc, fleet.ClientConfig{Store: store})
	if err != nil {
		t.Fatal(err)
	}
	m := submitNew(ctx, t, c)
	// Play a worker that takes the mission and dies.
	msgs, err := c.Stores().Lanes[messages.PriorityNormal][messages.SubmitLane(c.Submitter())].Fetch(1, jetstream.FetchMaxWait(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	for range msgs.Messages() {
	}
	restore := refuseResults(t, nc, c)
	var runs atomic.Int64
	w := startWorker(t, nc, countingRunner(&runs, nil), func(cfg *fleet.WorkerConfig) { cfg.Store = store })
	assertKept(t, c, m.ID)
	if err := w.Stop(); err != nil {
		t.Fatal(err)
	}
	restore()
	// nothing else settles it
	time.Sleep(500 * time.Millisecond)
	if _, err := c.Result(ctx, m.ID); !errors.Is(err, fleet.ErrNotFound) {
		t.Fatalf("result with no worker running: %v", err)
	}
	startWorker(t, nc, countingRunner(&runs, nil), func(cfg *fleet.WorkerConfig) { cfg.Store = store })
	assertSettled(t, c, m.ID, fleet.ReasonMaxDeliveries, "no worker finished it in 1 deliveries")
	if runs.Load() != 0 {
		t.Errorf("runs = %d", runs.Load())
	}
}

// An exhausted mission whose worker stopped before its failure was stored
// is settled by a worker that runs on, which started before the consumer
// gave up on it: the oldest message of MISSIONS, checked once it stayed
// the oldest for a while.
func TestExhaustedMissionSettledByARunningWorker(t *testing.T) {
	_, nc := runJetStream(t)
	ctx := testCtx(t)
	store := fleet.StoreConfig{AckWait: 1500 * time.Millisecond, MaxDeliver: 1}
	c, err := fleet.NewClient(ctx, nc, fleet.ClientConfig{Store: store})
	if err != nil {
		t.Fatal(err)
	}
	m := submitNew(ctx, t, c)
	// Play a worker that takes the mission and dies.
	msgs, err := c.Stores().Lanes[messages.PriorityNormal][messages.SubmitLane(c.Submitter())].Fetch(1, jetstream.FetchMaxWait(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	for range msgs.Messages() {
	}
	restore := refuseResults(t, nc, c)
	var runs atomic.Int64
	edit := func(cfg *fleet.WorkerConfig) { cfg.Store = store; fleet.GivenUpAfter(500 * time.Millisecond)(cfg) }
	ws := []*fleet.Worker{startWorker(t, nc, countingRunner(&runs, nil), edit), startWorker(t, nc, countingRunner(&runs, nil), edit)}
	assertKept(t, c, m.ID)
	// the worker that took the advisory stops
	took := -1
	for i, w := range ws {
		if w.Stats().DeadLettered > 0 {
			took = i
		}
	}
	if took < 0 {
		t.Fatal("no worker dead-lettered the mission")
	}
	if err := ws[took].Stop(); err != nil {
		t.Fatal(err)
	}
	restore()
	assertSettled(t, c, m.ID, fleet.ReasonMaxDeliveries, "no worker finished it in 1 deliveries")
	if n := ws[1-took].Stats().DeadLettered; n != 0 {
		t.Errorf("the worker running on counted %d dead letters, want 0 (the mission's was copied once)", n)
	}
	if runs.Load() != 0 {
		t.Errorf("runs = %d", runs.Load())
	}
}

// A worker settles an exhausted message one way at a time: the checks of
// the oldest message, which find it again while its failure is not
// stored, do not start more tries alongside the advisory's.
func TestExhaustedMissionSettledOnceAtATime(t *testing.T) {
	_, nc := runJetStream(t)
	ctx := testCtx(t)
	store := fleet.StoreConfig{AckWait: 500 * time.Millisecond, MaxDeliver: 1}
	c, err := fleet.NewClient(ctx, nc, fleet.ClientConfig{Store: store})
	if err != nil {
		t.Fatal(err)
	}
	m := submitNew(ctx, t, c)
	msgs, err := c.Stores().Lanes[messages.PriorityNormal][messages.SubmitLane(c.Submitter())].Fetch(1, jetstream.FetchMaxWait(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	for range msgs.Messages() {
	}
	restore := refuseResults(t, nc, c)
	// every try publishes on the result subject, which core subscribers
	// hear whether or not RESULTS takes it
	var tries atomic.Int64
	sub, err := nc.Subscribe(messages.ResultSubject(c.Submitter(), m.ID), func(*nats.Msg) { tries.Add(1) })
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	var runs atomic.Int64
	startWorker(t, nc, countingRunner(&runs, nil), func(cfg *fleet.WorkerConfig) {
		cfg.Store = store
		fleet.GivenUpAfter(10 * time.Millisecond)(cfg)
	})
	eventually(t, 10*time.Second, "dead letter", func() bool { return deadCopies(t, c, m.ID) > 0 })
	time.Sleep(4 * time.Second)
	// one settle tries at 0, 0.1, 0.3, 0.7, 1.5 and 3.1 s; one more each
	// second would add about as many again
	if n := tries.Load(); n > 8 {
		t.Errorf("%d tries to store the failure in 4 s, want one settle's (at most 8)", n)
	}
	restore()
	assertSettled(t, c, m.ID, fleet.ReasonMaxDeliveries, "no worker finished it in 1 deliveries")
}
