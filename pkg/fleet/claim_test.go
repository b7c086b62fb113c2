package fleet_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ptcfleet/ptc/pkg/fleet"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// A mission id belongs to the submitter whose mission a worker claimed
// first: another submitter's mission with the same id is refused (its
// own result says why) and the first one's status and result stay as
// they are; the first submitter's mission with that id, submitted again,
// is the same mission.
func TestMissionIDBelongsToItsFirstSubmitter(t *testing.T) {
	_, nc := runJetStream(t)
	var runs atomic.Int32
	w := startWorker(t, nc, fleet.RunnerFunc(func(ctx context.Context, m *messages.Mission, env fleet.RunEnv) (*messages.Step, error) {
		runs.Add(1)
		return &messages.Step{Return: m.Context["who"]}, nil
	}))
	ctx := testCtx(t)
	a, b := submitterClient(t, nc, "alice"), submitterClient(t, nc, "bob")
	m := newMission()
	m.Context = map[string]any{"who": "alice"}
	st, err := a.Run(ctx, m)
	if err != nil || st.Return != "alice" {
		t.Fatalf("alice's mission: %v %+v", err, st)
	}
	// bob's copy is queued past the stream's duplicate window (no Msg-Id
	// here), as a mission submitted with that id later would be
	other := newMission()
	other.ID, other.Context, other.Version, other.CreatedAt = m.ID, map[string]any{"who": "bob"}, messages.MissionVersion, time.Now().UTC()
	data, err := messages.MarshalMission(other)
	if err != nil {
		t.Fatal(err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.Publish(ctx, messages.SubmitSubject("bob", messages.PriorityNormal, m.ID), data); err != nil {
		t.Fatal(err)
	}
	st, err = b.Await(ctx, m.ID)
	if err != nil {
		t.Fatal(err)
	}
	if st.Fail == nil || st.Fail.Reason != fleet.ReasonInvalid || !strings.Contains(st.Fail.Message, "belongs to another submitter") {
		t.Fatalf("bob's mission with alice's id: %+v, want it refused as invalid", st)
	}
	if runs.Load() != 1 {
		t.Fatalf("runs = %d, want 1 (bob's mission refused before it runs)", runs.Load())
	}
	if s, err := a.Status(ctx, m.ID); err != nil || s.State != messages.StateSucceeded || s.Submitter != "alice" {
		t.Fatalf("alice's status: %v %+v", err, s)
	}
	if r, err := a.Result(ctx, m.ID); err != nil || r.Return != "alice" {
		t.Fatalf("alice's result: %v %+v", err, r)
	}
	// bob's refusal is the id's last status now: a copy of alice's
	// mission queued later is still hers and done, not refused.
	again := *m
	again.Context = map[string]any{"who": "alice again"}
	if data, err = messages.MarshalMission(&again); err != nil {
		t.Fatal(err)
	}
	if _, err := js.Publish(ctx, messages.SubmitSubject("alice", messages.PriorityNormal, m.ID), data); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the copy settled", func() bool {
		info, err := js.Consumer(ctx, messages.StreamMissions, fleet.ConsumerName(messages.PriorityNormal))
		if err != nil {
			return false
		}
		ci, err := info.Info(ctx)
		return err == nil && ci.NumPending == 0 && ci.NumAckPending == 0
	})
	if got := w.Stats(); got.DeadLettered != 1 || got.Invalid != 1 || runs.Load() != 1 {
		t.Fatalf("stats %+v, runs %d: want bob's mission alone refused, alice's run once", got, runs.Load())
	}
	if r, err := a.Result(ctx, m.ID); err != nil || r.Return != "alice" {
		t.Fatalf("alice's result: %v %+v", err, r)
	}
}

// Every attempt's events are one numbered sequence: the first attempt's
// claim writes the mission's first status and numbers from 1 without
// reading, a later attempt numbers after the last event stored, and a
// watcher sees them all in order.
func TestEventsOfEveryAttemptAreOneSequence(t *testing.T) {
	_, nc := runJetStream(t)
	startWorker(t, nc, fleet.RunnerFunc(func(ctx context.Context, m *messages.Mission, env fleet.RunEnv) (*messages.Step, error) {
		env.Events.Emit(&messages.Event{Kind: messages.EventEmit, Turn: env.Attempt})
		if env.Attempt == 1 {
			return nil, fmt.Errorf("flaky: %w", fleet.ErrRetryable)
		}
		return &messages.Step{Return: "done"}, nil
	}), func(cfg *fleet.WorkerConfig) { cfg.EventDelay = time.Minute })
	c := newClient(t, nc)
	ctx := testCtx(t)
	m := newMission()
	if st, err := c.Run(ctx, m); err != nil || st.Return != "done" {
		t.Fatalf("mission: %v %+v", err, st)
	}
	var got []string
	err := c.Watch(ctx, m.ID, func(ev *messages.Event) error {
		got = append(got, fmt.Sprintf("%d:%s %d", ev.Attempt, ev.Kind, ev.Turn))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := "1:started 0|1:emit 1|2:started 0|2:emit 2|2:final 0"
	if g := strings.Join(got, "|"); g != want {
		t.Fatalf("events:\n%s\nwant\n%s", g, want)
	}
	// each attempt's events are one batch, published before its message
	// went back (the retry) or at its final event; the second numbers
	// after the first batch's last event
	s := messages.DefaultSubmitter
	if stored, want := storedEventSubjects(t, c, m.ID), map[string]uint64{
		messages.EventBatchSubject(s, m.ID, 1, 2): 1, messages.EventBatchSubject(s, m.ID, 3, 3): 1,
	}; !maps.Equal(stored, want) {
		t.Fatalf("stored %v, want %v", stored, want)
	}
}

// A mission that runs for several AckWaits stays with its worker: its
// heartbeats, the first AckWait/3 after its delivery, keep the message in
// progress, so it runs once and is never redelivered.
func TestLongMissionIsNotRedelivered(t *testing.T) {
	_, nc := runJetStream(t)
	var runs atomic.Int32
	startWorker(t, nc, fleet.RunnerFunc(func(ctx context.Context, m *messages.Mission, env fleet.RunEnv) (*messages.Step, error) {
		runs.Add(1)
		select {
		case <-time.After(3 * testStore.AckWait):
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
		return &messages.Step{Return: "done"}, nil
	}), func(cfg *fleet.WorkerConfig) { cfg.Slots = 2 })
	c := newClient(t, nc)
	st, err := c.Run(testCtx(t), newMission())
	if err != nil || st.Return != "done" || st.Attempts != 1 || runs.Load() != 1 {
		t.Fatalf("step %+v, err %v, runs %d: want one run, one attempt", st, err, runs.Load())
	}
}

// A mission id another submitter has just queued (within the stream's
// duplicate window) is refused at submit with ErrIDTaken: the queue keeps
// only the first copy, whose result the second submitter could never
// read, so Run must not wait for it. The first submitter's own
// resubmission stays a duplicate.
func TestSubmitOfAnIDAnotherSubmitterQueued(t *testing.T) {
	_, nc := runJetStream(t)
	ctx := testCtx(t)
	a, b := submitterClient(t, nc, "alice"), submitterClient(t, nc, "bob")
	m := newMission()
	if _, err := a.Submit(ctx, m); err != nil {
		t.Fatal(err)
	}
	again := *m
	if s, err := a.Submit(ctx, &again); err != nil || !s.Duplicate {
		t.Fatalf("alice's resubmission: %+v, %v; want a duplicate", s, err)
	}
	bobs := newMission()
	bobs.ID = m.ID
	runCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := b.Run(runCtx, bobs); !errors.Is(err, fleet.ErrIDTaken) || !strings.Contains(err.Error(), m.ID) {
		t.Fatalf("bob's run of alice's id: %v; want ErrIDTaken naming the id", err)
	}
	if _, err := b.Submit(ctx, bobs); !errors.Is(err, fleet.ErrIDTaken) {
		t.Fatalf("bob's submit of alice's id: %v; want ErrIDTaken", err)
	}
	// alice's mission is still hers and runs
	startWorker(t, nc, fleet.RunnerFunc(func(context.Context, *messages.Mission, fleet.RunEnv) (*messages.Step, error) {
		return &messages.Step{Return: "ok"}, nil
	}))
	if st, err := a.Await(ctx, m.ID); err != nil || st.Return != "ok" {
		t.Fatalf("alice's mission: %+v, %v", st, err)
	}
}

// A mission submitted again past the stream's duplicate window while it
// waits parked (for an approval or its quota), runs, is queued again for a
// retry or is done is reported a duplicate, and the copy the submission
// queued (the client reads the status while it publishes) is dropped by
// the worker that takes it: never run, the status left as it was. A parked
// mission is resumed only by its copy from PARKED, or, awaiting approval,
// by a decision's wake: a copy a submitter marks as one resumes no
// mission waiting for its quota.
func TestSubmissionOfATakenMissionIsDropped(t *testing.T) {
	_, nc := runJetStream(t)
	var runs atomic.Int64
	startWorker(t, nc, countingRunner(&runs, "ran"))
	c := newClient(t, nc)
	ctx := testCtx(t)
	states := []struct {
		state string
		seq   uint64 // the stream sequence the status names
	}{
		{messages.StateAwaitingApproval, 0},
		{messages.StateQuotaWait, 0},
		{messages.StateRunning, 1 << 40},
		{messages.StateQueued, 1 << 40},
		{messages.StateSucceeded, 1 << 40},
	}
	for _, s := range states {
		m := newMission()
		st := messages.Status{Version: messages.StatusVersion, MissionID: m.ID, Submitter: c.Submitter(), State: s.state,
			Attempt: 1, StreamSeq: s.seq, UpdatedAt: time.Now().UTC()}
		data, err := messages.Marshal(&st)
		if err != nil {
			t.Fatal(err)
		}
		key := messages.StatusKey(c.Submitter(), m.ID)
		rev, err := c.Stores().Status.Create(ctx, key, data)
		if err != nil {
			t.Fatal(err)
		}
		sub, err := c.Submit(ctx, m)
		if err != nil || !sub.Duplicate || sub.Sequence != s.seq {
			t.Fatalf("%s: submission %+v, %v; want a duplicate naming sequence %d", s.state, sub, err, s.seq)
		}
		subject := messages.SubmitSubject(c.Submitter(), messages.PriorityNormal, m.ID)
		eventually(t, 10*time.Second, s.state+": the copy leaves the queue", func() bool {
			info, err := c.Stores().Missions.Info(ctx, jetstream.WithSubjectFilter(subject+".>"))
			return err == nil && info.State.Msgs == 0
		})
		if s.state != messages.StateAwaitingApproval {
			// a submitter's copy marked as a decision's wake (a header
			// any publisher can set) resumes no mission but one awaiting
			// approval: one waiting for its quota is resumed from PARKED
			// alone
			data, err := messages.MarshalMission(m)
			if err != nil {
				t.Fatal(err)
			}
			forged := &nats.Msg{Subject: subject, Data: data, Header: nats.Header{}}
			forged.Header.Set(messages.HeaderMissionID, m.ID)
			forged.Header.Set(messages.HeaderWoken, "1.d0.0")
			js, _ := jetstream.New(nc)
			if _, err := js.PublishMsg(ctx, forged); err != nil {
				t.Fatal(err)
			}
			eventually(t, 10*time.Second, s.state+": the copy marked woken leaves the queue", func() bool {
				info, err := c.Stores().Missions.Info(ctx, jetstream.WithSubjectFilter(subject+".>"))
				return err == nil && info.State.Msgs == 0
			})
		}
		e, err := c.Stores().Status.Get(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		if e.Revision() != rev {
			t.Fatalf("%s: status at revision %d, want it left at %d", s.state, e.Revision(), rev)
		}
	}
	if runs.Load() != 0 {
		t.Fatalf("runs = %d, want 0", runs.Load())
	}
}

// Run of a mission that ran before, submitted again past the stream's
// duplicate window, returns the stored result: Run reads no status (a
// mission run with an id of its own costs no status read of the
// submitter's), the copy its submission queued is dropped unrun by the
// worker that takes it, and the result, which no message signals, is read
// at fleet.AwaitUnread.
func TestRunOfAMissionThatRanReturnsItsResult(t *testing.T) {
	srv, nc := runJetStream(t)
	store := testStore
	store.DuplicateWindow = 200 * time.Millisecond
	var runs atomic.Int64
	startWorker(t, nc, countingRunner(&runs, "ran"), func(c *fleet.WorkerConfig) { c.Store = store })
	cnc := dialTCP(t, srv.ClientURL())
	ctx := testCtx(t)
	c, err := fleet.NewClient(ctx, cnc, fleet.ClientConfig{Store: store})
	if err != nil {
		t.Fatal(err)
	}
	m := newMission()
	if st, err := c.Run(ctx, m); err != nil || st.Return != "ran" {
		t.Fatalf("first run: %+v, %v", st, err)
	}
	tap := startTap(t, srv.ClientURL())
	time.Sleep(2 * store.DuplicateWindow) // the submission is no duplicate to the stream
	start := time.Now()
	st, err := c.Run(ctx, m)
	took := time.Since(start)
	if err != nil || st.Return != "ran" {
		t.Fatalf("second run: %+v, %v", st, err)
	}
	if took < fleet.AwaitUnread || took > 5*time.Second {
		t.Fatalf("second run returned after %s, want the result read at %s", took, fleet.AwaitUnread)
	}
	subject := messages.SubmitSubject(c.Submitter(), messages.PriorityNormal, m.ID)
	eventually(t, 10*time.Second, "the copy leaves the queue", func() bool {
		info, err := c.Stores().Missions.Info(ctx, jetstream.WithSubjectFilter(subject+".>"))
		return err == nil && info.State.Msgs == 0
	})
	if runs.Load() != 1 {
		t.Fatalf("runs = %d, want 1", runs.Load())
	}
	// the worker's claim of the copy reads the status; the client read none
	if n := tap.perMission("status get", 1); n != 1 {
		t.Fatalf("%v status reads, want the worker's claim's alone", n)
	}
}
