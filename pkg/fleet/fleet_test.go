package fleet_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
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

func TestMissionWithToolCallsOverNATS(t *testing.T) {
	_, nc := runJetStream(t)
	tools := startTools(t, nc)
	c := newClient(t, nc)
	runner := fleet.RunnerFunc(func(ctx context.Context, m *messages.Mission, env fleet.RunEnv) (*messages.Step, error) {
		env.Events.Emit(&messages.Event{Kind: messages.EventProgram, Turn: 1, Program: "(tool/search {:query \"x\"})",
			Data: map[string]any{"_key": "sk-123"}})
		var results []any
		for _, q := range []string{"a", "b"} {
			r, err := env.Tools.Call(ctx, "search", map[string]any{"query": q})
			if err != nil {
				return nil, err
			}
			results = append(results, r)
		}
		n, err := env.Tools.Call(ctx, "count", map[string]any{"folder": "inbox"})
		if err != nil {
			return nil, err
		}
		sigs := map[string]any{}
		for _, tl := range env.Tools.List(ctx) {
			sigs[tl.Name()] = tl.Signature()
		}
		return &messages.Step{Return: map[string]any{"search": results, "count": n, "sigs": sigs}}, nil
	})
	startWorker(t, nc, runner)

	m := newMission("search", "count")
	step, err := c.Run(testCtx(t), m)
	if err != nil {
		t.Fatal(err)
	}
	if !step.Ok() {
		t.Fatalf("step failed: %v", step.Fail)
	}
	ret := step.Return.(map[string]any)
	first := ret["search"].([]any)[0].([]any)[0].(map[string]any)
	if first["subject"] != "re: a" || first["id"] != int64(1) || first["_token"] != "hidden" {
		t.Errorf("search result = %#v", first)
	}
	if cnt := ret["count"].(map[string]any); cnt["count"] != int64(42) || cnt["folder"] != "inbox" {
		t.Errorf("count result = %#v", cnt)
	}
	sigs := ret["sigs"].(map[string]any)
	if sigs["search"] != "(query :string) -> [{id :int, subject :string}]" || !strings.Contains(sigs["count"].(string), "folder") {
		t.Errorf("discovered signatures = %#v", sigs)
	}
	if tools.Calls("search") != 2 || tools.Calls("count") != 1 {
		t.Errorf("tool calls = %v", tools.calls)
	}
	// The step is stored on the result subject, once.
	stored, err := c.Result(testCtx(t), m.ID)
	if err != nil || !stored.Ok() {
		t.Fatalf("stored result = %v, %v", stored, err)
	}
	if n := resultsStored(t, c, m.ID); n != 1 {
		t.Errorf("results stored = %d, want 1", n)
	}
	waitState(t, c, m.ID, messages.StateSucceeded)

	// Progress events, in order, with firewalled values masked.
	var kinds []string
	var program *messages.Event
	var toolResult *messages.Event
	err = c.Watch(testCtx(t), m.ID, func(ev *messages.Event) error {
		kinds = append(kinds, ev.Kind)
		switch ev.Kind {
		case messages.EventProgram:
			program = ev
		case messages.EventToolResult:
			if toolResult == nil {
				toolResult = ev
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := "started program tool_call tool_result tool_call tool_result tool_call tool_result final"
	if got := strings.Join(kinds, " "); got != want {
		t.Errorf("events = %s\nwant     %s", got, want)
	}
	if program == nil || program.Data["_key"] != messages.FirewallMask {
		t.Errorf("program event not masked: %+v", program)
	}
	if toolResult == nil || toolResult.Result.([]any)[0].(map[string]any)["_token"] != messages.FirewallMask {
		t.Errorf("tool result event not masked: %+v", toolResult)
	}
}

func TestDuplicateSubmissionRunsOnce(t *testing.T) {
	_, nc := runJetStream(t)
	c := newClient(t, nc)
	var runs atomic.Int64
	startWorker(t, nc, fleet.RunnerFunc(func(ctx context.Context, m *messages.Mission, env fleet.RunEnv) (*messages.Step, error) {
		runs.Add(1)
		time.Sleep(50 * time.Millisecond)
		return &messages.Step{Return: "done"}, nil
	}))
	m := newMission()
	var wg sync.WaitGroup
	var fresh atomic.Int64
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cp := *m
			sub, err := c.Submit(testCtx(t), &cp)
			if err != nil {
				t.Error(err)
				return
			}
			if !sub.Duplicate {
				fresh.Add(1)
			}
		}()
	}
	wg.Wait()
	if fresh.Load() != 1 {
		t.Errorf("non-duplicate submissions = %d, want 1", fresh.Load())
	}
	step, err := c.Await(testCtx(t), m.ID)
	if err != nil || step.Return != "done" {
		t.Fatalf("Await = %v, %v", step, err)
	}
	// After the result, a resubmission is caught by the status fence.
	sub, err := c.Submit(testCtx(t), m)
	if err != nil || !sub.Duplicate {
		t.Fatalf("resubmit = %+v, %v; want duplicate", sub, err)
	}
	time.Sleep(300 * time.Millisecond) // give a wrongly queued copy time to run
	if runs.Load() != 1 {
		t.Errorf("runs = %d, want 1", runs.Load())
	}
	if n := resultsStored(t, c, m.ID); n != 1 {
		t.Errorf("results stored = %d, want 1", n)
	}
}

func TestUndecodableMessageIsTerminated(t *testing.T) {
	_, nc := runJetStream(t)
	c := newClient(t, nc)
	var runs atomic.Int64
	w := startWorker(t, nc, countingRunner(&runs, int64(1)))
	js, _ := jetstream.New(nc)
	ctx := testCtx(t)
	// Garbage with a mission id header: callers of that id get a failure.
	badID := messages.NewMissionID()
	msg := &nats.Msg{Subject: messages.SubmitSubject(messages.DefaultSubmitter, "", badID), Data: []byte("\xc1not msgpack"), Header: nats.Header{}}
	msg.Header.Set(messages.HeaderMissionID, badID)
	if _, err := js.PublishMsg(ctx, msg); err != nil {
		t.Fatal(err)
	}
	// A billion-element array claim, and a valid encoding of an invalid mission.
	if _, err := js.Publish(ctx, messages.SubmitSubject(messages.DefaultSubmitter, "", messages.NewMissionID()), []byte{0x81, 0xa1, 'v', 0xdd, 0x55, 0x25, 0xa8, 0x70}); err != nil {
		t.Fatal(err)
	}
	invalid, _ := messages.Marshal(&messages.Mission{ID: "nope", Kind: messages.KindAgent})
	if _, err := js.Publish(ctx, messages.SubmitSubject(messages.DefaultSubmitter, "", messages.NewMissionID()), invalid); err != nil {
		t.Fatal(err)
	}
	step, err := c.Await(ctx, badID)
	if err != nil {
		t.Fatal(err)
	}
	if step.Ok() || step.Fail.Reason != fleet.ReasonInvalid {
		t.Fatalf("step = %+v, want %s failure", step, fleet.ReasonInvalid)
	}
	// The worker keeps running.
	good, err := c.Run(ctx, newMission())
	if err != nil || !good.Ok() {
		t.Fatalf("good mission after poison = %v, %v", good, err)
	}
	eventually(t, 5*time.Second, "3 dead letters", func() bool {
		info, err := c.Stores().Dead.Info(ctx)
		return err == nil && info.State.Msgs == 3
	})
	eventually(t, 5*time.Second, "work queue empty", func() bool {
		info, err := c.Stores().Missions.Info(ctx)
		return err == nil && info.State.Msgs == 0
	})
	if runs.Load() != 1 {
		t.Errorf("runs = %d, want 1", runs.Load())
	}
	eventually(t, 5*time.Second, "stats", func() bool {
		st := w.Stats()
		return st.DeadLettered == 3 && st.Invalid == 3 && st.Succeeded == 1 && st.Runs == 1
	})
}

func TestToolErrorsReachTheRunner(t *testing.T) {
	_, nc := runJetStream(t)
	tools := startTools(t, nc)
	c := newClient(t, nc)
	var errs sync.Map
	startWorker(t, nc, fleet.RunnerFunc(func(ctx context.Context, m *messages.Mission, env fleet.RunEnv) (*messages.Step, error) {
		for _, name := range m.Tools {
			_, err := env.Tools.Call(ctx, name, map[string]any{})
			errs.Store(name, err)
		}
		return &messages.Step{Return: "continued"}, nil
	}), func(cfg *fleet.WorkerConfig) { cfg.ToolTimeout = 200 * time.Millisecond })

	step, err := c.Run(testCtx(t), newMission("ghost", "slow", "boom", "count"))
	if err != nil || step.Return != "continued" {
		t.Fatalf("Run = %v, %v", step, err)
	}
	tests := []struct {
		tool     string
		sentinel error
		code     string
		text     string
	}{
		{"ghost", fleet.ErrToolUnavailable, messages.ToolErrUnavailable, "tool ghost: unavailable: no tool service is running for it; try again later or do without it"},
		{"slow", fleet.ErrToolTimeout, messages.ToolErrTimeout, "tool slow: timeout: no answer within 200ms"},
		{"boom", nil, messages.ToolErrPanic, "tool boom: panic: the tool crashed: kaboom"},
		{"count", nil, messages.ToolErrFailed, "tool count: tool_error: folder is required"},
	}
	for _, tt := range tests {
		v, _ := errs.Load(tt.tool)
		err, _ := v.(error)
		var te *fleet.ToolError
		if !errors.As(err, &te) || te.Code != tt.code || err.Error() != tt.text {
			t.Errorf("%s: err = %v, want code %s text %q", tt.tool, err, tt.code, tt.text)
		}
		if tt.sentinel != nil && !errors.Is(err, tt.sentinel) {
			t.Errorf("%s: errors.Is(%v, %v) = false", tt.tool, err, tt.sentinel)
		}
	}
	if tools.Calls("slow") != 1 || tools.Calls("boom") != 1 {
		t.Errorf("calls = %v", tools.calls)
	}
}

func TestToolServiceGoesDown(t *testing.T) {
	_, nc := runJetStream(t)
	tools := startTools(t, nc)
	c := newClient(t, nc)
	stopped := make(chan struct{})
	startWorker(t, nc, fleet.RunnerFunc(func(ctx context.Context, m *messages.Mission, env fleet.RunEnv) (*messages.Step, error) {
		first, err := env.Tools.Call(ctx, "search", map[string]any{"query": "q"})
		if err != nil {
			return nil, err
		}
		<-stopped
		_, err = env.Tools.Call(ctx, "search", map[string]any{"query": "q"})
		return &messages.Step{Return: map[string]any{"first": first, "second": err.Error(), "unavailable": errors.Is(err, fleet.ErrToolUnavailable)}}, nil
	}))
	m := newMission("search")
	if _, err := c.Submit(testCtx(t), m); err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, "first call", func() bool { return tools.Calls("search") == 1 })
	if err := tools.svc.Stop(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	close(stopped)
	step, err := c.Await(testCtx(t), m.ID)
	if err != nil {
		t.Fatal(err)
	}
	ret := step.Return.(map[string]any)
	if ret["unavailable"] != true || !strings.Contains(ret["second"].(string), "no responders") {
		t.Fatalf("second call after the service stopped: %#v", ret)
	}
}

func TestForbiddenToolIsRefusedBeforeAnyRequest(t *testing.T) {
	_, nc := runJetStream(t)
	tools := startTools(t, nc)
	c := newClient(t, nc)
	startWorker(t, nc, fleet.RunnerFunc(func(ctx context.Context, m *messages.Mission, env fleet.RunEnv) (*messages.Step, error) {
		_, callErr := env.Tools.Call(ctx, "secret", nil)
		_, getErr := env.Tools.Get(ctx, "secret")
		names := []any{}
		for _, tl := range env.Tools.List(ctx) {
			names = append(names, tl.Name())
		}
		return &messages.Step{Return: map[string]any{
			"call": callErr.Error(), "forbidden": errors.Is(callErr, fleet.ErrToolForbidden) && errors.Is(getErr, fleet.ErrToolForbidden),
			"names": names, "requests": env.Tools.Calls(),
		}}, nil
	}))
	step, err := c.Run(testCtx(t), newMission("search"))
	if err != nil {
		t.Fatal(err)
	}
	ret := step.Return.(map[string]any)
	if ret["forbidden"] != true || !strings.HasPrefix(ret["call"].(string), "tool secret: forbidden:") {
		t.Errorf("forbidden call: %#v", ret)
	}
	if fmt.Sprint(ret["names"]) != "[search]" || ret["requests"] != int64(0) {
		t.Errorf("toolbox: %#v", ret)
	}
	if tools.Calls("secret") != 0 {
		t.Errorf("secret tool was called %d times", tools.Calls("secret"))
	}
}

// A cancel request the server gives to a member of the cancel queue group
// that is dead (its host lost power: the server keeps it until it misses
// its pings) is never answered; Client.Cancel sends it again within
// CancelWait, and a live worker carries it out.
func TestCancelOutlivesADeadQueueMember(t *testing.T) {
	srv, nc := runJetStream(t)
	ctx := testCtx(t)
	c, err := fleet.NewClient(ctx, nc, fleet.ClientConfig{Store: testStore, CancelWait: 8 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	m := submitNew(ctx, t, c)
	dead := connect(t, srv)
	swallowed := make(chan string, 8)
	deadSub, err := dead.QueueSubscribe(messages.CancelWildcard, messages.CancelQueue, func(msg *nats.Msg) { swallowed <- msg.Subject })
	if err != nil {
		t.Fatal(err)
	}
	if err := dead.Flush(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- c.Cancel(ctx, m.ID, "its worker died") }()
	select {
	case subj := <-swallowed:
		if want := messages.CancelSubject(c.Submitter(), m.ID); subj != want {
			t.Fatalf("the dead member got %q, want %q", subj, want)
		}
	case err := <-done:
		t.Fatalf("cancel returned %v before the only member got the request", err)
	case <-ctx.Done():
		t.Fatal("the dead member got no request")
	}
	// a live worker joins the group; then the server drops the dead member
	high := startWorker(t, nc, countingRunner(new(atomic.Int64), nil), func(cfg *fleet.WorkerConfig) { cfg.Priorities = []string{messages.PriorityHigh} })
	if err := deadSub.Unsubscribe(); err != nil {
		t.Fatal(err)
	}
	if err := dead.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("cancel after a dead member got it: %v", err)
	}
	if st, err := c.Status(ctx, m.ID); err != nil || st.State != messages.StateCancelled || st.Worker != high.ID() {
		t.Fatalf("status after the cancel = %+v, %v; want cancelled by worker %s", st, err, high.ID())
	}
}

// TestCancelQueuedMission: the fleet, not the client, carries out the
// cancel of a queued mission: with no worker running the cancel fails
// saying so and the mission stays queued; a worker carries it out (here
// one serving only the high priority, so the mission stays in the queue)
// and stores the cancelled result; a worker fetching the mission later
// skips it.
func TestCancelQueuedMission(t *testing.T) {
	_, nc := runJetStream(t)
	c := newClient(t, nc)
	ctx := testCtx(t)
	m := submitNew(ctx, t, c)
	if err := c.Cancel(ctx, m.ID, "changed my mind"); !errors.Is(err, fleet.ErrNoWorker) {
		t.Fatalf("cancel with no worker running = %v, want ErrNoWorker", err)
	}
	if st, err := c.Status(ctx, m.ID); err != nil || st.State != messages.StateQueued || st.Submitter != c.Submitter() || st.Summary == nil {
		t.Fatalf("status of the queued mission = %+v, %v", st, err)
	}
	if _, err := c.Result(ctx, m.ID); !errors.Is(err, fleet.ErrNotFound) {
		t.Fatalf("the client stored a result: %v", err)
	}
	var runs atomic.Int64
	high := startWorker(t, nc, countingRunner(&runs, nil), func(cfg *fleet.WorkerConfig) { cfg.Priorities = []string{messages.PriorityHigh} })
	cancelAndAwait(ctx, t, c, m.ID, "changed my mind")
	if st, err := c.Status(ctx, m.ID); err != nil || st.State != messages.StateCancelled || st.Worker != high.ID() {
		t.Fatalf("status after the cancel = %+v, %v; want cancelled by worker %s", st, err, high.ID())
	}
	// A worker that fetches it later skips it.
	startWorker(t, nc, countingRunner(&runs, nil))
	eventually(t, 5*time.Second, "queue drained", func() bool {
		info, err := c.Stores().Missions.Info(ctx)
		return err == nil && info.State.Msgs == 0
	})
	if runs.Load() != 0 {
		t.Errorf("cancelled mission ran %d times", runs.Load())
	}
	st, _ := c.Status(ctx, m.ID)
	if st.State != messages.StateCancelled {
		t.Errorf("state = %s", st.State)
	}
	if err := c.Cancel(ctx, m.ID, "again"); err != nil {
		t.Errorf("cancel of a finished mission = %v", err)
	}
	if err := c.Cancel(ctx, messages.NewMissionID(), ""); !errors.Is(err, fleet.ErrNotFound) {
		t.Errorf("cancel of an unknown mission = %v, want ErrNotFound", err)
	}
}

// cancelAndAwait cancels mission id with reason and fails t unless its
// result is a cancellation carrying that reason.
func cancelAndAwait(ctx context.Context, t *testing.T, c *fleet.Client, id, reason string) {
	t.Helper()
	if err := c.Cancel(ctx, id, reason); err != nil {
		t.Fatal(err)
	}
	step, err := c.Await(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if step.Fail == nil || step.Fail.Reason != fleet.ReasonCancelled || step.Fail.Message != reason {
		t.Fatalf("step = %+v", step.Fail)
	}
}

// submitNew submits a new mission (newMission) and returns it.
func submitNew(ctx context.Context, t *testing.T, c *fleet.Client) *messages.Mission {
	t.Helper()
	m := newMission()
	if _, err := c.Submit(ctx, m); err != nil {
		t.Fatal(err)
	}
	return m
}

// holdUntilDone is a runner that signals started when a run begins, holds
// the run until its context ends, stores the context's cause in cause and
// returns step, or the context's error when step is nil.
func holdUntilDone(started chan<- struct{}, cause *atomic.Value, step *messages.Step) fleet.RunnerFunc {
	return func(ctx context.Context, m *messages.Mission, env fleet.RunEnv) (*messages.Step, error) {
		started <- struct{}{}
		<-ctx.Done()
		cause.Store(context.Cause(ctx))
		if step == nil {
			return nil, ctx.Err()
		}
		return step, nil
	}
}

func TestCancelRunningMission(t *testing.T) {
	_, nc := runJetStream(t)
	c := newClient(t, nc)
	started := make(chan struct{})
	w := startWorker(t, nc, fleet.RunnerFunc(func(ctx context.Context, m *messages.Mission, env fleet.RunEnv) (*messages.Step, error) {
		close(started)
		<-ctx.Done()
		return nil, context.Cause(ctx)
	}))
	ctx := testCtx(t)
	m := submitNew(ctx, t, c)
	<-started
	cancelAndAwait(ctx, t, c, m.ID, "user pressed stop")
	if st := waitState(t, c, m.ID, messages.StateCancelled); !st.CancelRequested {
		t.Errorf("status = %+v", st)
	}
	eventually(t, 5*time.Second, "cancelled count", func() bool { return w.Stats().Cancelled == 1 })
}

func TestMaxDeliverExhaustionDeadLetters(t *testing.T) {
	_, nc := runJetStream(t)
	c := newClient(t, nc)
	var runs atomic.Int64
	w := startWorker(t, nc, fleet.RunnerFunc(func(ctx context.Context, m *messages.Mission, env fleet.RunEnv) (*messages.Step, error) {
		runs.Add(1)
		return nil, fmt.Errorf("model overloaded: %w", fleet.ErrRetryable)
	}))
	ctx := testCtx(t)
	m := newMission()
	step, err := c.Run(ctx, m)
	if err != nil {
		t.Fatal(err)
	}
	if step.Fail == nil || step.Fail.Reason != fleet.ReasonMaxDeliveries || !strings.Contains(step.Fail.Message, "model overloaded") {
		t.Fatalf("step = %+v", step.Fail)
	}
	if runs.Load() != int64(testStore.MaxDeliver) {
		t.Errorf("runs = %d, want %d", runs.Load(), testStore.MaxDeliver)
	}
	dead, err := c.Stores().Dead.GetLastMsgForSubject(ctx, messages.DeadSubject(m.ID))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := messages.UnmarshalMission(dead.Data); err != nil || got.ID != m.ID {
		t.Errorf("dead letter = %v, %v", got, err)
	}
	waitState(t, c, m.ID, messages.StateDead)
	// The dead-letter Step is visible before the worker frees the slot.
	eventually(t, 5*time.Second, "worker stats after dead-lettering", func() bool {
		st := w.Stats()
		return st.Runs == 3 && st.Retried == 2 && st.DeadLettered == 1 && st.Invalid == 0 && st.Running == 0
	})
}

// A mission whose last delivery is never acked (its worker died) is
// dead-lettered from the server's max-deliveries advisory.
func TestMaxDeliveriesAdvisoryDeadLetters(t *testing.T) {
	_, nc := runJetStream(t)
	ctx := testCtx(t)
	store := fleet.StoreConfig{AckWait: 300 * time.Millisecond, MaxDeliver: 1}
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
	var runs atomic.Int64
	startWorker(t, nc, countingRunner(&runs, nil), func(cfg *fleet.WorkerConfig) { cfg.Store = store })
	step, err := c.Await(ctx, m.ID)
	if err != nil {
		t.Fatal(err)
	}
	if step.Fail == nil || step.Fail.Reason != fleet.ReasonMaxDeliveries {
		t.Fatalf("step = %+v", step)
	}
	eventually(t, 5*time.Second, "exhausted message removed", func() bool {
		info, err := c.Stores().Missions.Info(ctx)
		return err == nil && info.State.Msgs == 0
	})
	if runs.Load() != 0 {
		t.Errorf("runs = %d", runs.Load())
	}
}

// A mission whose last delivery is lost while its failure cannot be
// stored (RESULTS does not take the write) stays in MISSIONS until the
// failure is stored: the worker that took the max-deliveries advisory
// tries again, and the caller gets the dead-lettered failure once RESULTS
// is back, never a mission with no result, no message and a status that
// is not final.
func TestMaxDeliveriesAdvisoryKeepsTheMissionUntilItsFailureIsStored(t *testing.T) {
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
	var runs atomic.Int64
	startWorker(t, nc, countingRunner(&runs, nil), func(cfg *fleet.WorkerConfig) { cfg.Store = store })
	// RESULTS refuses every write (none fits its largest message) until
	// its configuration is set back, after the advisory's dead letter
	js, _ := jetstream.New(nc)
	info, err := c.Stores().Results.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	refusing := info.Config
	refusing.MaxMsgSize = 1
	if _, err := js.UpdateStream(ctx, refusing); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "dead letter", func() bool {
		_, err := c.Stores().Dead.GetLastMsgForSubject(ctx, messages.DeadSubject(m.ID))
		return err == nil
	})
	time.Sleep(300 * time.Millisecond) // the failure's first tries fail
	if minfo, err := c.Stores().Missions.Info(ctx); err != nil || minfo.State.Msgs != 1 {
		t.Fatalf("MISSIONS holds %v messages (%v) while the failure is not stored; want the mission's one", minfo.State.Msgs, err)
	}
	if _, err := js.UpdateStream(ctx, info.Config); err != nil {
		t.Fatal(err)
	}
	actx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	step, err := c.Await(actx, m.ID)
	if err != nil {
		t.Fatalf("await: %v", err)
	}
	if step.Fail == nil || step.Fail.Reason != fleet.ReasonMaxDeliveries {
		t.Fatalf("step = %+v", step)
	}
	waitState(t, c, m.ID, messages.StateDead)
	eventually(t, 10*time.Second, "exhausted message removed", func() bool {
		info, err := c.Stores().Missions.Info(ctx)
		return err == nil && info.State.Msgs == 0
	})
	if runs.Load() != 0 {
		t.Errorf("runs = %d", runs.Load())
	}
}

func TestDrainFinishesInFlightMissions(t *testing.T) {
	_, nc := runJetStream(t)
	c := newClient(t, nc)
	started := make(chan struct{}, 1)
	w := startWorker(t, nc, fleet.RunnerFunc(func(ctx context.Context, m *messages.Mission, env fleet.RunEnv) (*messages.Step, error) {
		started <- struct{}{}
		time.Sleep(300 * time.Millisecond)
		return &messages.Step{Return: "finished"}, nil
	}))
	if !w.Ready() {
		t.Fatal("worker not ready after Start")
	}
	ctx := testCtx(t)
	m := submitNew(ctx, t, c)
	<-started
	stopDone := make(chan struct{})
	go func() { _ = w.Stop(); close(stopDone) }()
	eventually(t, 10*time.Second, "readiness to turn false", func() bool { return !w.Ready() })
	<-stopDone
	if err := w.Stop(); err != nil { // idempotent
		t.Fatal(err)
	}
	step, err := c.Result(ctx, m.ID)
	if err != nil || step.Return != "finished" {
		t.Fatalf("result after drain = %v, %v", step, err)
	}
	if err := w.Start(ctx); !errors.Is(err, fleet.ErrWorkerStopped) {
		t.Errorf("Start after Stop = %v", err)
	}
}

func TestDrainHandsBackMissionsPastGrace(t *testing.T) {
	_, nc := runJetStream(t)
	c := newClient(t, nc)
	started := make(chan struct{}, 1)
	var cause atomic.Value
	w := startWorker(t, nc, holdUntilDone(started, &cause, nil), func(cfg *fleet.WorkerConfig) { cfg.DrainGrace = 100 * time.Millisecond })
	ctx := testCtx(t)
	m := submitNew(ctx, t, c)
	<-started
	if err := w.Stop(); err != nil {
		t.Fatal(err)
	}
	if err, _ := cause.Load().(error); !errors.Is(err, fleet.ErrWorkerShutdown) {
		t.Fatalf("run cancelled with cause %v, want ErrWorkerShutdown", err)
	}
	if st := w.Stats(); st.HandedBack != 1 || st.Running != 0 {
		t.Errorf("stats = %+v", st)
	}
	if _, err := c.Result(ctx, m.ID); !errors.Is(err, fleet.ErrNotFound) {
		t.Fatalf("a handed-back mission has a result: %v", err)
	}
	st, _ := c.Status(ctx, m.ID)
	if st.State != messages.StateQueued {
		t.Fatalf("state after hand back = %s", st.State)
	}
	startWorker(t, nc, fleet.RunnerFunc(func(ctx context.Context, m *messages.Mission, env fleet.RunEnv) (*messages.Step, error) {
		return &messages.Step{Return: env.Attempt}, nil
	}))
	step, err := c.Await(ctx, m.ID)
	if err != nil || step.Return != int64(2) {
		t.Fatalf("after hand back: %v, %v (want attempt 2)", step, err)
	}
}

// A worker whose status was taken over (it was presumed dead) stops its run
// and publishes nothing.
func TestZombieWorkerIsFenced(t *testing.T) {
	_, nc := runJetStream(t)
	c := newClient(t, nc)
	started := make(chan struct{}, 1)
	var cause atomic.Value
	w := startWorker(t, nc, holdUntilDone(started, &cause, &messages.Step{Return: "zombie result"}))
	ctx := testCtx(t)
	m := submitNew(ctx, t, c)
	<-started
	// Another worker takes over the status (retrying if a heartbeat of the
	// zombie wins the race for the revision).
	eventually(t, 5*time.Second, "status taken over", func() bool {
		e, err := c.Stores().Status.Get(ctx, messages.StatusKey(messages.DefaultSubmitter, m.ID))
		if err != nil {
			t.Fatal(err)
		}
		var st messages.Status
		if err := messages.Unmarshal(e.Value(), &st); err != nil {
			t.Fatal(err)
		}
		st.Worker, st.Attempt = "other", st.Attempt+1
		data, _ := messages.Marshal(&st)
		_, err = c.Stores().Status.Update(ctx, messages.StatusKey(messages.DefaultSubmitter, m.ID), data, e.Revision())
		return err == nil
	})
	eventually(t, 5*time.Second, "zombie run to stop", func() bool { return w.Running() == 0 })
	if err, _ := cause.Load().(error); !errors.Is(err, fleet.ErrFenced) {
		t.Fatalf("cause = %v, want ErrFenced", err)
	}
	if _, err := c.Result(ctx, m.ID); !errors.Is(err, fleet.ErrNotFound) {
		t.Fatalf("zombie published a result: %v", err)
	}
	got, _ := c.Status(ctx, m.ID)
	if got.Worker != "other" {
		t.Fatalf("zombie overwrote the status: %+v", got)
	}
}

const (
	subprocessEnv      = "PTC_FLEET_TEST_WORKER_URL"
	subprocessSlotsEnv = "PTC_FLEET_TEST_WORKER_SLOTS"
)

// runSubprocessWorker is the body of the re-executed test binary: a worker
// of subprocessSlotsEnv slots (default 1) that announces each mission it
// starts and never finishes one.
func runSubprocessWorker(url string) int {
	nc, err := nats.Connect(url)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	slots, _ := strconv.Atoi(os.Getenv(subprocessSlotsEnv))
	w, err := fleet.NewWorker(nc, fleet.WorkerConfig{
		ID: "victim", Slots: max(slots, 1), Priorities: []string{messages.PriorityNormal}, Store: testStore,
		IdleWait: 200 * time.Millisecond,
		Runner: fleet.RunnerFunc(func(ctx context.Context, m *messages.Mission, env fleet.RunEnv) (*messages.Step, error) {
			fmt.Printf("running %s\n", m.ID)
			<-ctx.Done()
			return nil, ctx.Err()
		}),
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	if err := w.Start(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	select {} // until killed
}

// startSubprocessWorker re-executes the test binary as runSubprocessWorker
// with slots slots against url, killed when the test ends, and returns it
// with its stdout, where it announces the missions it starts.
func startSubprocessWorker(t *testing.T, url string, slots int) (*exec.Cmd, *bufio.Reader) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), subprocessEnv+"="+url, subprocessSlotsEnv+"="+strconv.Itoa(slots))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd, bufio.NewReader(out)
}

func TestKilledWorkerMissionIsRedelivered(t *testing.T) {
	srv, nc := runJetStream(t)
	c := newClient(t, nc)
	ctx := testCtx(t)
	m := submitNew(ctx, t, c)
	cmd, out := startSubprocessWorker(t, srv.ClientURL(), 1)
	line, err := out.ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "running "+m.ID {
		t.Fatalf("subprocess said %q, %v", line, err)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	var runs atomic.Int64
	startWorker(t, nc, fleet.RunnerFunc(func(ctx context.Context, m *messages.Mission, env fleet.RunEnv) (*messages.Step, error) {
		runs.Add(1)
		return &messages.Step{Return: map[string]any{"attempt": env.Attempt, "worker": env.WorkerID}}, nil
	}))
	step, err := c.Await(ctx, m.ID)
	if err != nil {
		t.Fatal(err)
	}
	ret := step.Return.(map[string]any)
	if ret["attempt"] != int64(2) {
		t.Errorf("completed on attempt %v, want 2", ret["attempt"])
	}
	time.Sleep(200 * time.Millisecond)
	if n := resultsStored(t, c, m.ID); n != 1 || runs.Load() != 1 {
		t.Errorf("results stored = %d, runs = %d; want 1 and 1", n, runs.Load())
	}
}

// A mission naming a tool no service offers, close to one that is
// offered, fails invalid_mission before the runner runs, naming the tool
// it probably means; CheckTools tells a submitter the same.
func TestMisspelledToolFailsBeforeTheRun(t *testing.T) {
	_, nc := runJetStream(t)
	startTools(t, nc)
	c := newClient(t, nc)
	var ran atomic.Bool
	startWorker(t, nc, fleet.RunnerFunc(func(ctx context.Context, m *messages.Mission, env fleet.RunEnv) (*messages.Step, error) {
		ran.Store(true)
		return &messages.Step{Return: "ran"}, nil
	}))
	err := fleet.CheckTools(testCtx(t), nc, []string{"search", "serch"}, time.Second)
	var me *fleet.MisspelledToolsError
	if !errors.As(err, &me) || err.Error() != "tools: serch is offered by no tool service (did you mean search?)" {
		t.Errorf("CheckTools = %v", err)
	}
	if err := fleet.CheckTools(testCtx(t), nc, []string{"search", "zzz_unrelated"}, time.Second); err != nil {
		t.Errorf("an unrelated missing tool (its service may be starting) is no typo: %v", err)
	}
	step, err := c.Run(testCtx(t), newMission("serch"))
	if err != nil {
		t.Fatal(err)
	}
	if step.Fail == nil || step.Fail.Reason != fleet.ReasonInvalid || step.Fail.Message != "tools: serch is offered by no tool service (did you mean search?)" {
		t.Errorf("step = %+v", step.Fail)
	}
	if ran.Load() {
		t.Error("the runner ran a mission with a misspelled tool")
	}
}
