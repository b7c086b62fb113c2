package agentrun_test

import (
	"context"
	"fmt"
	"maps"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ptcfleet/ptc/internal/fleettest"
	"github.com/ptcfleet/ptc/pkg/agent/llm"
	"github.com/ptcfleet/ptc/pkg/fleet"
	"github.com/ptcfleet/ptc/pkg/fleet/agentrun"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// threeTurns answers turn 1 and 2 with programs calling tool/add and turn
// 3 with the return; block, when set, holds the first turn-3 request
// until its ctx ends (the worker "dies" there). answered counts the
// replies given per turn.
type threeTurns struct {
	block    atomic.Bool
	blocked  chan struct{}
	once     sync.Once
	mu       sync.Mutex
	answered map[int]int
}

var turnPrograms = []string{
	"```clojure\n(def a (tool/add {:n 1}))\n(def t0 (tool/add {:n 100}))\na\n```",
	"```clojure\n(def b (tool/add {:n (+ a 10)}))\nb\n```",
	"```clojure\n(return {:a a :b b :sum (+ a b t0)})\n```",
}

func (m *threeTurns) Complete(ctx context.Context, req llm.Request) (*llm.Response, error) {
	if req.Turn == 3 && m.block.Load() {
		m.block.Store(false)
		m.once.Do(func() { close(m.blocked) })
		<-ctx.Done()
		return nil, ctx.Err()
	}
	if req.Turn < 1 || req.Turn > len(turnPrograms) {
		return nil, fmt.Errorf("no reply for turn %d", req.Turn)
	}
	m.mu.Lock()
	m.answered[req.Turn]++
	m.mu.Unlock()
	return &llm.Response{Content: turnPrograms[req.Turn-1], Usage: llm.Usage{InputTokens: 100, OutputTokens: 10, CostUSD: 0.25}}, nil
}

func (m *threeTurns) counts() map[int]int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return maps.Clone(m.answered)
}

// addTools serves tool add (n → n+1) counting executions per n.
type addTools struct {
	mu    sync.Mutex
	runs  map[int64]int
	infos []fleet.CallInfo
}

func startAddTools(t *testing.T, nc *nats.Conn, dedup bool) *addTools {
	t.Helper()
	a := &addTools{runs: map[int64]int{}}
	cfg := fleet.ToolServiceConfig{Name: "acct"}
	if dedup {
		cfg.Dedup = &fleet.DedupConfig{TTL: time.Hour}
	}
	svc, err := fleet.NewToolService(nc, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Stop(context.Background()) })
	err = svc.Register("add", fleet.ToolSpec{Signature: "(n :int) -> :int", Description: "n+1"},
		func(ctx context.Context, args map[string]any) (any, error) {
			n, _ := args["n"].(int64)
			ci, _ := fleet.CallInfoFrom(ctx)
			a.mu.Lock()
			a.runs[n]++
			a.infos = append(a.infos, ci)
			a.mu.Unlock()
			return n + 1, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func (a *addTools) executions() map[int64]int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return maps.Clone(a.runs)
}

func durableMission() *messages.Mission {
	return &messages.Mission{
		ID:    messages.NewMissionID(),
		Kind:  messages.KindAgent,
		Agent: &messages.AgentSpec{Prompt: "add things", Tools: []string{"add"}, Limits: messages.Limits{MaxTurns: 5}},
		Tools: []string{"add"},
	}
}

func startDurableWorker(t *testing.T, srv *fleettest.Server, model llm.Model, edit func(*fleet.WorkerConfig)) *fleet.Worker {
	t.Helper()
	nc := srv.Conn()
	cfg := fleet.WorkerConfig{
		Runner: agentrun.New(agentrun.Config{Models: llm.Registry{"default": model}}),
		Slots:  2, Store: fleet.StoreConfig{AckWait: 5 * time.Second, MaxDeliver: 4},
		Priorities: []string{messages.PriorityNormal}, IdleWait: 100 * time.Millisecond,
		ToolTimeout: 2 * time.Second, DrainGrace: 10 * time.Millisecond, HandBackWait: 5 * time.Second,
	}
	if edit != nil {
		edit(&cfg)
	}
	w, err := fleet.NewWorker(nc, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Stop() })
	return w
}

// resumeInTurn3 submits durableMission to a worker (its config edited by
// first) whose threeTurns model holds turn 3, stops that worker there (it
// hands the mission back), and returns the Step a second worker finishes
// the mission with.
func resumeInTurn3(ctx context.Context, t *testing.T, srv *fleettest.Server, first func(*fleet.WorkerConfig)) (*fleet.Client, *threeTurns, *messages.Mission, *messages.Step) {
	t.Helper()
	client, err := fleet.NewClient(ctx, srv.Conn(), fleet.ClientConfig{Store: fleet.StoreConfig{AckWait: 5 * time.Second, MaxDeliver: 4}})
	if err != nil {
		t.Fatal(err)
	}
	model := &threeTurns{blocked: make(chan struct{}), answered: map[int]int{}}
	model.block.Store(true)
	a := startDurableWorker(t, srv, model, first)
	m := durableMission()
	if _, err := client.Submit(ctx, m, fleet.SubmitOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-model.blocked:
	case <-ctx.Done():
		t.Fatal("the first worker never reached turn 3")
	}
	_ = a.Stop() // hands the mission back mid-turn 3
	startDurableWorker(t, srv, model, nil)
	step, err := client.Await(ctx, m.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !step.Ok() {
		t.Fatalf("step failed: %+v", step.Fail)
	}
	return client, model, m, step
}

// A mission whose worker stops in turn 3 is finished by another worker
// from its journal: turns 1 and 2 are not asked again, their tool calls
// not executed again; the Step counts both attempts' usage and says what
// replay saved; tool events carry their turn; and the replayed Step equals
// the Step of the same mission run without interruption.
func TestRedeliveredMissionReplaysItsJournal(t *testing.T) {
	srv := fleettest.Start(t)
	nc := srv.Conn()
	tools := startAddTools(t, nc, false)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	client, model, m, step := resumeInTurn3(ctx, t, srv, nil)
	want := map[string]any{"a": int64(2), "b": int64(13), "sum": int64(116)}
	if !reflect.DeepEqual(step.Return, want) {
		t.Errorf("return = %#v, want %#v", step.Return, want)
	}
	if got := model.counts(); !reflect.DeepEqual(got, map[int]int{1: 1, 2: 1, 3: 1}) {
		t.Errorf("model answers per turn = %v, want one each", got)
	}
	if got := tools.executions(); !reflect.DeepEqual(got, map[int64]int{1: 1, 100: 1, 12: 1}) {
		t.Errorf("tool executions by argument = %v, want one each", got)
	}
	if step.Attempts != 2 {
		t.Errorf("attempts = %d, want 2", step.Attempts)
	}
	if step.Replayed == nil || *step.Replayed != (messages.Replayed{ModelCalls: 2, ToolCalls: 3}) {
		t.Errorf("replayed = %+v, want 2 model calls and 3 tool calls", step.Replayed)
	}
	if step.Usage.Requests != 3 || step.Usage.InputTokens != 300 || step.Usage.ToolCalls != 3 || step.Usage.CostUSD != 0.75 {
		t.Errorf("usage = %+v, want the 3 requests, 3 tool calls and the estimated cost of both attempts", step.Usage)
	}
	// The status is made final just after the result is stored.
	st, err := client.Status(ctx, m.ID)
	for wait := time.Now(); err == nil && st.State == messages.StateRunning && time.Since(wait) < 5*time.Second; {
		time.Sleep(10 * time.Millisecond)
		st, err = client.Status(ctx, m.ID)
	}
	if err != nil || st.State != messages.StateSucceeded || st.Replayed == nil || st.Replayed.ModelCalls != 2 || st.Attempt != 2 {
		t.Errorf("status = %+v, %v", st, err)
	}
	// Every tool event names its turn.
	turns := map[int]int{}
	wctx, wcancel := context.WithTimeout(ctx, 5*time.Second)
	defer wcancel()
	err = client.Watch(wctx, m.ID, func(ev *messages.Event) error {
		if ev.Kind == messages.EventToolCall {
			turns[ev.Turn]++
		}
		return nil
	})
	if err != nil {
		t.Errorf("watch: %v", err)
	}
	if turns[0] != 0 || turns[1] < 2 || turns[2] < 1 {
		t.Errorf("tool_call events by turn = %v, want turns 1 and 2 only", turns)
	}

	// The resumed mission replays from its record with no model or tool.
	if r, _ := replayStored(t, client, m.ID, agentrun.ReplayOptions{}); len(r.Divergences) > 0 || r.Served != 3 {
		t.Errorf("replay: served %d, divergences %v", r.Served, r.Divergences)
	}

	// Differential: the same mission uninterrupted yields the same Step.
	plain := &threeTurns{blocked: make(chan struct{}), answered: map[int]int{}}
	ref := startDurableWorker(t, srv, plain, func(c *fleet.WorkerConfig) { c.NoJournal = true })
	_ = ref
	m2 := durableMission()
	step2, err := client.Run(ctx, m2)
	if err != nil {
		t.Fatal(err)
	}
	compareSteps(t, step, step2)
}

// compareSteps checks that a replayed Step equals an uninterrupted one in
// everything but timings and the attempt bookkeeping.
func compareSteps(t *testing.T, got, want *messages.Step) {
	t.Helper()
	if !reflect.DeepEqual(got.Return, want.Return) || !reflect.DeepEqual(got.Memory, want.Memory) {
		t.Errorf("return/memory differ:\n%#v %#v\n%#v %#v", got.Return, got.Memory, want.Return, want.Memory)
	}
	gu, wu := got.Usage, want.Usage
	gu.Duration, wu.Duration = 0, 0
	if gu != wu {
		t.Errorf("usage differs: %+v vs %+v", gu, wu)
	}
	if len(got.Trace) != len(want.Trace) {
		t.Fatalf("trace lengths %d vs %d", len(got.Trace), len(want.Trace))
	}
	for i := range got.Trace {
		g, w := got.Trace[i], want.Trace[i]
		if g.Program != w.Program || !reflect.DeepEqual(g.Result, w.Result) || g.Feedback != w.Feedback || g.Error != w.Error ||
			len(g.ToolCalls) != len(w.ToolCalls) {
			t.Errorf("turn %d differs:\n%+v\n%+v", i+1, g, w)
			continue
		}
		for k := range g.ToolCalls {
			if !reflect.DeepEqual(g.ToolCalls[k].Args, w.ToolCalls[k].Args) || !reflect.DeepEqual(g.ToolCalls[k].Result, w.ToolCalls[k].Result) {
				t.Errorf("turn %d call %d differs: %+v vs %+v", i+1, k, g.ToolCalls[k], w.ToolCalls[k])
			}
		}
	}
}

// A mission whose result is stored is acked and never run again, even when
// its status still says running (the final status write and the ack were
// lost).
func TestFinishedMissionIsNotRunAgain(t *testing.T) {
	srv := fleettest.Start(t)
	nc := srv.Conn()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var runs atomic.Int64
	w, err := fleet.NewWorker(nc, fleet.WorkerConfig{
		Runner: fleet.RunnerFunc(func(context.Context, *messages.Mission, fleet.RunEnv) (*messages.Step, error) {
			runs.Add(1)
			return &messages.Step{Return: "again"}, nil
		}),
		Priorities: []string{messages.PriorityNormal}, IdleWait: 100 * time.Millisecond,
		Store: fleet.StoreConfig{AckWait: 5 * time.Second},
	})
	if err != nil {
		t.Fatal(err)
	}
	js, _ := jetstream.New(nc)
	st, err := fleet.EnsureStores(ctx, js, fleet.StoreConfig{AckWait: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	m := durableMission()
	// The earlier run: result stored, status still running, message not acked.
	data, _ := messages.MarshalStep(&messages.Step{Return: "first"})
	if _, err := js.Publish(ctx, messages.ResultSubject(messages.DefaultSubmitter, m.ID), data); err != nil {
		t.Fatal(err)
	}
	stData, _ := messages.Marshal(&messages.Status{Version: messages.StatusVersion, MissionID: m.ID, Submitter: messages.DefaultSubmitter,
		State: messages.StateRunning, Attempt: 1, Worker: "dead"})
	if _, err := st.Status.Create(ctx, messages.StatusKey(messages.DefaultSubmitter, m.ID), stData); err != nil {
		t.Fatal(err)
	}
	body, _ := messages.Marshal(m)
	msg := &nats.Msg{Subject: messages.SubmitSubject(messages.DefaultSubmitter, messages.PriorityNormal, m.ID), Data: body, Header: nats.Header{}}
	msg.Header.Set(messages.HeaderMissionID, m.ID)
	if _, err := js.PublishMsg(ctx, msg); err != nil {
		t.Fatal(err)
	}
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Stop() })
	client, err := fleet.NewClient(ctx, nc, fleet.ClientConfig{})
	if err != nil {
		t.Fatal(err)
	}
	for {
		s, err := client.Status(ctx, m.ID)
		if err == nil && s.State == messages.StateSucceeded {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("status never became final: %+v %v", s, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if runs.Load() != 0 {
		t.Errorf("the runner ran %d times", runs.Load())
	}
	step, err := client.Await(ctx, m.ID)
	if err != nil || step.Return != "first" {
		t.Errorf("result = %+v, %v", step, err)
	}
	// the server removes an acknowledged message from MISSIONS on a
	// goroutine of its own, after the final status the loop above saw
	info, err := js.Stream(ctx, messages.StreamMissions)
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		i, err := info.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if i.State.Msgs == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the mission message was not acked: %d left", i.State.Msgs)
		}
	}
}

// A reply an earlier attempt paid for and the resumed run did not use (a
// tool call that timed out in the first attempt answers in the second, so
// the next request differs) is counted in the Step's usage and, apart, in
// Replayed.Unused; the Step replays from its record with no divergence.
func TestUnusedReplyOfAnEarlierAttemptIsCountedApart(t *testing.T) {
	srv := fleettest.Start(t)
	nc := srv.Conn()
	var slow atomic.Bool
	slow.Store(true)
	svc, err := fleet.NewToolService(nc, fleet.ToolServiceConfig{Name: "acct"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Stop(context.Background()) })
	err = svc.Register("add", fleet.ToolSpec{Signature: "(n :int) -> :int", Description: "n+1"},
		func(ctx context.Context, args map[string]any) (any, error) {
			if slow.CompareAndSwap(true, false) {
				time.Sleep(time.Second) // past the first worker's tool timeout
			}
			n, _ := args["n"].(int64)
			return n + 1, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	client, model, m, step := resumeInTurn3(ctx, t, srv, func(c *fleet.WorkerConfig) { c.ToolTimeout = 200 * time.Millisecond })
	// Turn 1's reply was replayed; turn 2 was asked again, its request now
	// holding the tool's result rather than the timeout.
	if got := model.counts(); !reflect.DeepEqual(got, map[int]int{1: 1, 2: 2, 3: 1}) {
		t.Errorf("model answers per turn = %v, want turn 2 twice", got)
	}
	unused := messages.Usage{InputTokens: 100, OutputTokens: 10, TotalTokens: 110, CostUSD: 0.25, Requests: 1}
	if step.Replayed == nil || step.Replayed.ModelCalls != 1 || step.Replayed.Unused == nil || *step.Replayed.Unused != unused {
		t.Errorf("replayed = %+v, want 1 model call and the unused reply's usage %+v", step.Replayed, unused)
	}
	if step.Usage.Requests != 4 || step.Usage.InputTokens != 400 {
		t.Errorf("usage = %+v, want the 4 replies paid for", step.Usage)
	}
	if u := step.TraceUsage(); u.Requests != 3 || u.InputTokens != 300 {
		t.Errorf("trace usage = %+v, want the 3 replies of the trace", u)
	}
	if r, _ := replayStored(t, client, m.ID, agentrun.ReplayOptions{}); len(r.Divergences) > 0 {
		t.Errorf("replay: divergences %v", r.Divergences)
	}
}
