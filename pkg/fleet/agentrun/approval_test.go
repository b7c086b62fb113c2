package agentrun_test

import (
	"context"
	"fmt"
	"maps"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ptcfleet/ptc/internal/fleettest"
	"github.com/ptcfleet/ptc/pkg/agent/llm"
	"github.com/ptcfleet/ptc/pkg/fleet"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// approvalModel writes a program whose second call needs approval, then
// returns what both calls answered; answered counts its replies per turn.
type approvalModel struct {
	mu       sync.Mutex
	answered map[int]int
}

var approvalPrograms = []string{
	"```clojure\n(def a (tool/add {:n 1}))\n(def big (tool/add {:n 500}))\na\n```",
	"```clojure\n(return {:a a :big big})\n```",
}

func (m *approvalModel) Complete(ctx context.Context, req llm.Request) (*llm.Response, error) {
	if req.Turn < 1 || req.Turn > len(approvalPrograms) {
		return nil, fmt.Errorf("no reply for turn %d", req.Turn)
	}
	m.mu.Lock()
	m.answered[req.Turn]++
	m.mu.Unlock()
	return &llm.Response{Content: approvalPrograms[req.Turn-1]}, nil
}

// A program reaching a call that needs approval suspends its mission; the
// approved (edited) call runs once on resumption, the model is not asked
// again for the program that made it, and the trace records the decision.
func TestProgramSuspendsAtApprovalAndResumes(t *testing.T) {
	srv := fleettest.Start(t)
	nc := srv.Conn()
	tools := startAddTools(t, nc, true)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	client, err := fleet.NewClient(ctx, nc, fleet.ClientConfig{Store: fleet.StoreConfig{AckWait: 5 * time.Second, MaxDeliver: 4}})
	if err != nil {
		t.Fatal(err)
	}
	model := &approvalModel{answered: map[int]int{}}
	w := startDurableWorker(t, srv, model, nil)
	m := durableMission()
	m.Approval = &messages.ApprovalPolicy{Rules: []messages.ApprovalRule{{Tool: "add",
		When: &messages.ApprovalCond{Arg: "n", Op: ">", Value: int64(100)}}}}
	if _, err := client.Submit(ctx, m, fleet.SubmitOptions{}); err != nil {
		t.Fatal(err)
	}
	var as []*messages.Approval
	for len(as) == 0 {
		if ctx.Err() != nil {
			t.Fatal("the mission never waited for approval")
		}
		time.Sleep(20 * time.Millisecond)
		if st, err := client.Status(ctx, m.ID); err == nil && st.State == messages.StateAwaitingApproval {
			as, _ = client.Approvals(ctx, m.ID)
		}
	}
	a := as[0]
	if a.Turn != 1 || !strings.Contains(a.Program, "(tool/add {:n 500})") || a.Args["n"] != int64(500) {
		t.Fatalf("approval = %+v", a)
	}
	// the call's form: line 2, column 10 of the turn's program
	if a.Position != "2:10" {
		t.Errorf("approval position %q, want 2:10 in\n%s", a.Position, a.Program)
	}
	// the status says the mission waits before its run has returned its
	// slot (the run still publishes its events and acks): once it has,
	// the waiting mission holds none
	for deadline := time.Now().Add(5 * time.Second); w.Running() != 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the waiting mission holds a slot")
		}
	}
	if _, err := client.Decide(ctx, m.ID, fleet.Decision{Approve: true, By: "alice", Reason: "ok, but less",
		Args: map[string]any{"n": 600}}); err != nil {
		t.Fatal(err)
	}
	step, err := client.Await(ctx, m.ID)
	if err != nil || !step.Ok() {
		t.Fatalf("step %+v, %v", step, err)
	}
	if want := map[string]any{"a": int64(2), "big": int64(601)}; !reflect.DeepEqual(step.Return, want) {
		t.Fatalf("return = %v, want %v", step.Return, want)
	}
	if got := model.counts(); !reflect.DeepEqual(got, map[int]int{1: 1, 2: 1}) {
		t.Errorf("model answers per turn = %v, want one each (turn 1 replayed on resumption)", got)
	}
	if got := tools.executions(); !reflect.DeepEqual(got, map[int64]int{1: 1, 600: 1}) {
		t.Errorf("tool executions = %v, want n=1 once (replayed) and the approved n=600 once", got)
	}
	var approved *messages.ToolCall
	for i, c := range step.Trace[0].ToolCalls {
		if c.Approval != nil {
			approved = &step.Trace[0].ToolCalls[i]
		}
	}
	if approved == nil || approved.Args["n"] != int64(500) || approved.Approval.DecidedBy != "alice" ||
		approved.Approval.Reason != "ok, but less" || approved.Approval.EditedArgs["n"] != int64(600) {
		t.Fatalf("trace tool calls = %+v", step.Trace[0].ToolCalls)
	}
}

func (m *approvalModel) counts() map[int]int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return maps.Clone(m.answered)
}

// A compiled mission whose pmap branches make calls that need approval:
// each such call waits for its own decision (the mission suspends once
// per undecided call), every call runs once, and the branches' results
// come back in order. Each record shows the call's place in the program
// (its position counted in the program without its surrounding space, as
// it is compiled).
func TestCompiledPmapCallsWaitForApproval(t *testing.T) {
	srv := fleettest.Start(t)
	nc := srv.Conn()
	tools := startAddTools(t, nc, true)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	client, err := fleet.NewClient(ctx, nc, fleet.ClientConfig{Store: fleet.StoreConfig{AckWait: 5 * time.Second, MaxDeliver: 4}})
	if err != nil {
		t.Fatal(err)
	}
	startDurableWorker(t, srv, &approvalModel{answered: map[int]int{}}, nil)
	m := &messages.Mission{ID: messages.NewMissionID(), Kind: messages.KindCompiled, Tools: []string{"add"},
		Compiled: &messages.CompiledSpec{Program: "\n  (fn [_]\n  (pmap #(tool/add {:n %}) [1 500 600]))"},
		Approval: &messages.ApprovalPolicy{Rules: []messages.ApprovalRule{{Tool: "add",
			When: &messages.ApprovalCond{Arg: "n", Op: ">=", Value: int64(500)}}}}}
	if _, err := client.Submit(ctx, m, fleet.SubmitOptions{}); err != nil {
		t.Fatal(err)
	}
	decided := map[string]bool{}
	for len(decided) < 2 {
		if ctx.Err() != nil {
			st, _ := client.Status(context.Background(), m.ID)
			res, _ := client.Result(context.Background(), m.ID)
			t.Fatalf("decided %v; the mission stopped asking: %+v %+v", decided, st, res)
		}
		time.Sleep(20 * time.Millisecond)
		st, err := client.Status(ctx, m.ID)
		if err != nil || st.State != messages.StateAwaitingApproval {
			continue
		}
		as, err := client.Approvals(ctx, m.ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range as {
			if a.State == messages.ApprovalPending {
				if _, err := client.Decide(ctx, m.ID, fleet.Decision{Approve: true, Call: a.Call, By: "t"}); err != nil {
					t.Fatal(err)
				}
				decided[fmt.Sprint(a.Args["n"])] = true
				if a.Position != "2:9" || !strings.HasPrefix(a.Program, "(fn [_]") { // the #( form
					t.Errorf("call %v at %q of %q, want 2:9 of the trimmed program", a.Args, a.Position, a.Program)
				}
			}
		}
	}
	step, err := client.Await(ctx, m.ID)
	if err != nil || !step.Ok() {
		t.Fatalf("step %+v, %v", step, err)
	}
	if !decided["500"] || !decided["600"] {
		t.Fatalf("decided %v, want the calls with n 500 and 600", decided)
	}
	if got := tools.executions(); !reflect.DeepEqual(got, map[int64]int{1: 1, 500: 1, 600: 1}) {
		t.Errorf("tool executions = %v, want each once", got)
	}
	if got := fmt.Sprint(step.Return); !strings.Contains(got, "[2 501 601]") {
		t.Errorf("return = %s", got)
	}
}

// programsModel answers turn n with programs[n-1].
type programsModel struct{ programs []string }

func (m programsModel) Complete(ctx context.Context, req llm.Request) (*llm.Response, error) {
	if req.Turn < 1 || req.Turn > len(m.programs) {
		return nil, fmt.Errorf("no reply for turn %d", req.Turn)
	}
	return &llm.Response{Content: m.programs[req.Turn-1]}, nil
}

// A program that reaches two calls needing approval one after the other
// suspends at each; its last run replays the first call's result from
// the journal (the gate is not asked again for it) and runs the second,
// and the trace still records both decisions.
func TestSequentialApprovalsAreBothInTheTrace(t *testing.T) {
	srv := fleettest.Start(t)
	nc := srv.Conn()
	tools := startAddTools(t, nc, true)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	client, err := fleet.NewClient(ctx, nc, fleet.ClientConfig{Store: fleet.StoreConfig{AckWait: 5 * time.Second, MaxDeliver: 4}})
	if err != nil {
		t.Fatal(err)
	}
	startDurableWorker(t, srv, programsModel{[]string{
		"```clojure\n(def a (tool/add {:n 500}))\n(def b (tool/add {:n 600}))\n(return {:a a :b b})\n```",
	}}, nil)
	m := durableMission()
	m.Approval = &messages.ApprovalPolicy{Rules: []messages.ApprovalRule{{Tool: "add"}}}
	if _, err := client.Submit(ctx, m, fleet.SubmitOptions{}); err != nil {
		t.Fatal(err)
	}
	by := map[int64]string{500: "ann", 600: "bob"}
	for decided := 0; decided < 2; {
		if ctx.Err() != nil {
			t.Fatalf("%d calls decided; the mission stopped asking", decided)
		}
		time.Sleep(20 * time.Millisecond)
		st, err := client.Status(ctx, m.ID)
		if err != nil || st.State != messages.StateAwaitingApproval {
			continue
		}
		as, err := client.Approvals(ctx, m.ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range as {
			if a.State != messages.ApprovalPending {
				continue
			}
			n, _ := a.Args["n"].(int64)
			if _, err := client.Decide(ctx, m.ID, fleet.Decision{Approve: true, By: by[n]}); err != nil {
				t.Fatal(err)
			}
			decided++
		}
	}
	step, err := client.Await(ctx, m.ID)
	if err != nil || !step.Ok() {
		t.Fatalf("step %+v, %v", step, err)
	}
	if want := map[string]any{"a": int64(501), "b": int64(601)}; !reflect.DeepEqual(step.Return, want) {
		t.Fatalf("return = %v, want %v", step.Return, want)
	}
	if got := tools.executions(); !reflect.DeepEqual(got, map[int64]int{500: 1, 600: 1}) {
		t.Errorf("tool executions = %v, want each once", got)
	}
	got := map[int64]string{}
	for _, c := range step.Trace[0].ToolCalls {
		n, _ := c.Args["n"].(int64)
		if c.Approval == nil {
			t.Errorf("the call with n %d has no approval in the trace", n)
			continue
		}
		got[n] = c.Approval.DecidedBy
	}
	if !reflect.DeepEqual(got, by) {
		t.Errorf("approvals in the trace by n: %v, want %v", got, by)
	}
}
