package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"

	"github.com/ptcfleet/ptc/internal/fleettest"
	"github.com/ptcfleet/ptc/internal/syncbuf"
	"github.com/ptcfleet/ptc/pkg/fleet"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// approvalFleet is a server with a "payments" service whose refund waits
// for approval, a worker whose runner refunds the context's amount (its
// trace records the call), and a client.
type approvalFleet struct {
	env    env
	nc     *nats.Conn
	client *fleet.Client
	worker *fleet.Worker
	// submitted counts the missions submit waited for
	submitted int64
	mu        sync.Mutex
	ran       []map[string]any
}

// refundProgram is the program the approval fleet's runner says it makes
// its call from, at 2:3.
const refundProgram = "(def r\n  (tool/refund {:order \"A-1\" :amount ctx/amount}))\nr"

func startApprovalFleet(t *testing.T, ctx context.Context) *approvalFleet {
	t.Helper()
	srv := fleettest.Start(t)
	nc := srv.Conn()
	f := &approvalFleet{env: testEnv(map[string]string{"PTC_NATS_URL": srv.ClientURL(), "USER": "tester"}), nc: nc}
	svc, err := fleet.NewToolService(nc, fleet.ToolServiceConfig{Name: "payments"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Stop(context.Background()) })
	if err := svc.Register("refund", fleet.ToolSpec{Approval: &fleet.ToolApproval{}}, func(ctx context.Context, args map[string]any) (any, error) {
		f.mu.Lock()
		f.ran = append(f.ran, args)
		f.mu.Unlock()
		return map[string]any{"refunded": args["amount"]}, nil
	}); err != nil {
		t.Fatal(err)
	}
	w, err := fleet.NewWorker(nc, fleet.WorkerConfig{Priorities: []string{messages.PriorityNormal}, IdleWait: 100 * time.Millisecond,
		Runner: fleet.RunnerFunc(func(ctx context.Context, m *messages.Mission, env fleet.RunEnv) (*messages.Step, error) {
			args := map[string]any{"order": "A-1", "amount": m.Context["amount"]}
			start := time.Now()
			site := fleet.CallSite{Program: refundProgram, Position: "2:3"}
			res, err := env.Tools.Call(fleet.WithCallSite(fleet.WithTurn(ctx, 1), site), "refund", args)
			if ctx.Err() != nil {
				return nil, context.Cause(ctx)
			}
			call := messages.ToolCall{Name: "refund", Args: args, Result: res, StartedAt: start, Duration: time.Since(start)}
			if err != nil {
				call.Error = err.Error()
			}
			return &messages.Step{Return: map[string]any{"error": call.Error}, Trace: []messages.Turn{{Number: 1, ToolCalls: []messages.ToolCall{call}}}}, nil
		})})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Stop() })
	f.worker = w
	if f.client, err = fleet.NewClient(ctx, nc, fleet.ClientConfig{}); err != nil {
		t.Fatal(err)
	}
	return f
}

// serveViewer serves the viewer on the fleet's client, deciding as
// viewer:tester.
func (f *approvalFleet) serveViewer(t *testing.T) *httptest.Server {
	t.Helper()
	v, err := newViewer(f.client, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	v.by = "viewer:tester"
	srv := httptest.NewServer(v.Handler())
	t.Cleanup(srv.Close)
	return srv
}

func (f *approvalFleet) submit(t *testing.T, ctx context.Context, amount int64) string {
	t.Helper()
	m := &messages.Mission{ID: messages.NewMissionID(), Kind: messages.KindAgent, Agent: &messages.AgentSpec{Prompt: "refund"},
		Tools: []string{"refund"}, Context: map[string]any{"amount": amount}}
	if _, err := f.client.Submit(ctx, m); err != nil {
		t.Fatal(err)
	}
	// waiting, and settled by its worker (fleet.WorkerStats.Suspended):
	// a decision recorded from then on is found only by its wake or the
	// deadline's
	f.submitted++
	for {
		if st, err := f.client.Status(ctx, m.ID); err == nil && st.State == messages.StateAwaitingApproval && f.worker.Stats().Suspended >= f.submitted {
			return m.ID
		}
		if ctx.Err() != nil {
			t.Fatal("the mission never waited for approval")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// refunds returns the arguments of each refund run so far.
func (f *approvalFleet) refunds() []map[string]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.ran)
}

func (f *approvalFleet) run(t *testing.T, ctx context.Context, args ...string) (string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	err := run(ctx, args, f.env, &out, &errOut)
	return out.String() + errOut.String(), err
}

// dispatcher approvals lists a waiting call; approve -args runs it with
// the edited arguments; trace and status show the decision.
func TestDispatcherApproveWithEditedArgs(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	f := startApprovalFleet(t, ctx)
	id := f.submit(t, ctx, 900)

	out, err := f.run(t, ctx, "status", id)
	if err != nil || !strings.Contains(out, "awaiting_approval") {
		t.Fatalf("status: %s %v", out, err)
	}
	out, err = f.run(t, ctx, "approvals", id, "-json")
	if err != nil {
		t.Fatalf("approvals: %s %v", out, err)
	}
	var items []approvalItem
	if err := json.Unmarshal([]byte(out), &items); err != nil || len(items) != 1 || items[0].State != "pending" || items[0].Tool != "refund" {
		t.Fatalf("approvals -json: %s (%v)", out, err)
	}
	if items[0].Position != "2:3" || items[0].Program != refundProgram {
		t.Fatalf("approvals -json: the call's place %q in %q", items[0].Position, items[0].Program)
	}
	out, err = f.run(t, ctx, "approvals", id)
	if want := "  at 2:3 of the program\n      (tool/refund {:order \"A-1\" :amount ctx/amount}))\n      ^\n"; err != nil || !strings.Contains(out, want) {
		t.Fatalf("approvals: the call's place is not shown as\n%s\nin\n%s %v", want, out, err)
	}
	if _, err := f.run(t, ctx, "approve", id, "-args", "[1]"); err == nil {
		t.Fatal("-args that is no object accepted")
	}
	out, err = f.run(t, ctx, "approve", id, items[0].Call[:6], "-args", `{"order":"A-1","amount":750}`, "-reason", "partial refund")
	if err != nil || !strings.Contains(out, "approved by tester") {
		t.Fatalf("approve: %s %v", out, err)
	}
	step, err := f.client.Await(ctx, id)
	if err != nil || !step.Ok() {
		t.Fatalf("step %+v, %v", step, err)
	}
	ran := f.refunds()
	if len(ran) != 1 || ran[0]["amount"] != int64(750) {
		t.Fatalf("refunds run: %v", ran)
	}
	out, err = f.run(t, ctx, "trace", id)
	if err != nil || !strings.Contains(out, "approval approved by tester at ") || !strings.Contains(out, `partial refund; arguments changed to {"amount":750,"order":"A-1"}`) {
		t.Fatalf("trace:\n%s %v", out, err)
	}
	out, err = f.run(t, ctx, "approvals", id)
	if err != nil || !strings.Contains(out, "approved by tester") {
		t.Fatalf("approvals: %s %v", out, err)
	}
	if out, err := f.run(t, ctx, "deny", id); !errors.Is(err, fleet.ErrNoPendingCall) {
		t.Fatalf("deny of a decided mission: %s %v", out, err)
	}
}

// dispatcher deny: the program gets a tool error naming the denial.
func TestDispatcherDeny(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	f := startApprovalFleet(t, ctx)
	id := f.submit(t, ctx, 900)
	out, err := f.run(t, ctx, "deny", id, "-reason", "not this customer", "-by", "dana")
	if err != nil || !strings.Contains(out, "denied by dana") {
		t.Fatalf("deny: %s %v", out, err)
	}
	step, err := f.client.Await(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if got := step.Return.(map[string]any)["error"]; got != "tool refund: denied: denied by dana: not this customer" {
		t.Fatalf("the program's tool error: %v", got)
	}
	ran := f.refunds()
	if len(ran) != 0 {
		t.Fatalf("a denied refund ran: %v", ran)
	}
}

// An approving agent in an MCP client lists a mission's waiting call and
// approves it with edited arguments, integers kept exact.
func TestMCPApproveCall(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	f := startApprovalFleet(t, ctx)
	cs, _ := serveMCPHTTP(ctx, t, f.nc)
	id := f.submit(t, ctx, 900)
	// an approving agent finds the waiting call without knowing the
	// mission: every submitter's calls that wait are listed
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "pending_approvals", Arguments: map[string]any{}})
	if err != nil || res.IsError {
		t.Fatalf("pending_approvals: %v %+v", err, res)
	}
	pending := res.StructuredContent.(map[string]any)
	waiting := pending["approvals"].([]any)
	if pending["waiting"] != float64(1) || len(waiting) != 1 || waiting[0].(map[string]any)["mission_id"] != id || waiting[0].(map[string]any)["tool"] != "refund" {
		t.Fatalf("pending_approvals = %v", pending)
	}
	call := waiting[0].(map[string]any)["call"].(string)
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "list_approvals", Arguments: map[string]any{"mission_id": id}})
	if err != nil || res.IsError {
		t.Fatalf("list_approvals: %v %+v", err, res)
	}
	as := res.StructuredContent.(map[string]any)["approvals"].([]any)
	if len(as) != 1 || as[0].(map[string]any)["state"] != "pending" || as[0].(map[string]any)["call"] != call {
		t.Fatalf("approvals = %v", as)
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "approve_call", Arguments: map[string]any{"mission_id": id, "call": call,
		"args": map[string]any{"order": "A-1", "amount": 9007199254740993}, "by": "agent-7"}})
	if err != nil || res.IsError {
		t.Fatalf("approve_call: %v %+v", err, res)
	}
	if _, err := f.client.Await(ctx, id); err != nil {
		t.Fatal(err)
	}
	ran := f.refunds()
	if len(ran) != 1 || ran[0]["amount"] != int64(9007199254740993) {
		t.Fatalf("refunds run: %v", ran)
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "deny_call", Arguments: map[string]any{"mission_id": id}})
	if err != nil || !res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "no such call waits for approval") {
		t.Fatalf("deny_call of a decided mission: %v %+v", err, res)
	}
}

// An approving agent decides at once the waiting calls a filter selects:
// dry_run lists them, approve_pending approves them (each mission
// resumes, its call runs once), deny_pending denies the rest; a filter
// the fleet cannot apply is a tool error naming it.
func TestMCPDecidesPendingCallsAtOnce(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	f := startApprovalFleet(t, ctx)
	cs, _ := serveMCPHTTP(ctx, t, f.nc)
	small, mid, big := f.submit(t, ctx, 50), f.submit(t, ctx, 200), f.submit(t, ctx, 900)
	call := func(name string, args map[string]any) map[string]any {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil || res.IsError {
			t.Fatalf("%s: %v %+v", name, err, res)
		}
		return res.StructuredContent.(map[string]any)
	}
	missions := func(items any) []string {
		var ids []string
		for _, it := range items.([]any) {
			ids = append(ids, it.(map[string]any)["mission_id"].(string))
		}
		return ids
	}
	upTo200 := map[string]any{"arg": "amount", "op": "<=", "value": 200}
	// pending_approvals lists what a selection selects, bounded, with
	// its count
	out := call("pending_approvals", map[string]any{"when": upTo200, "limit": 1})
	if got := missions(out["approvals"]); strings.Join(got, " ") != small || out["waiting"] != 2.0 {
		t.Fatalf("pending_approvals of the small refunds, one listed: %v; want [%s] of 2", out, small)
	}
	if out := call("pending_approvals", map[string]any{"submitter": "nobody"}); out["waiting"] != 0.0 {
		t.Fatalf("pending_approvals of a submitter with no call: %v", out)
	}
	out = call("approve_pending", map[string]any{"when": upTo200, "dry_run": true})
	if got := missions(out["selected"]); strings.Join(got, " ") != small+" "+mid || len(out["decided"].([]any)) != 0 {
		t.Fatalf("dry run: %v; want [%s %s] selected, none decided", out, small, mid)
	}
	out = call("approve_pending", map[string]any{"tool": "refund", "when": upTo200, "by": "agent-7"})
	if got := missions(out["decided"]); strings.Join(got, " ") != small+" "+mid || out["not_decided"] != nil {
		t.Fatalf("approve_pending: %v; want [%s %s] decided", out, small, mid)
	}
	for _, it := range out["decided"].([]any) {
		if a := it.(map[string]any); a["state"] != messages.ApprovalApproved || a["decided_by"] != "agent-7" {
			t.Fatalf("decided %v", a)
		}
	}
	out = call("deny_pending", map[string]any{"reason": "over budget"})
	if got := missions(out["decided"]); len(got) != 1 || got[0] != big {
		t.Fatalf("deny_pending: %v; want [%s]", out, big)
	}
	for _, id := range []string{small, mid, big} {
		if _, err := f.client.Await(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	ran := len(f.refunds())
	if ran != 2 {
		t.Fatalf("%d refunds ran, want the 2 approved", ran)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "deny_pending", Arguments: map[string]any{"when": map[string]any{"arg": "amount", "op": "~", "value": 1}}})
	if err != nil || !res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "when.op") {
		t.Fatalf("a condition with no such operator: %v %+v", err, res)
	}
}

// dispatcher approvals without a mission lists the calls that wait for a
// decision across the fleet, every submitter's, the longest waiting
// first, each with the command that decides it; the printed command
// decides it, and the listing then leaves it out.
func TestDispatcherListsPendingApprovals(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	f := startApprovalFleet(t, ctx)
	if out, err := f.run(t, ctx, "approvals"); err != nil || !strings.Contains(out, "no tool call waits for a decision") {
		t.Fatalf("approvals with none waiting: %s %v", out, err)
	}
	first := f.submit(t, ctx, 900)
	other, err := fleet.NewClient(ctx, f.nc, fleet.ClientConfig{Submitter: "other"})
	if err != nil {
		t.Fatal(err)
	}
	f.client, other = other, f.client
	second := f.submit(t, ctx, 50)
	f.client = other

	out, err := f.run(t, ctx, "approvals", "-json")
	if err != nil {
		t.Fatalf("approvals -json: %s %v", out, err)
	}
	var got pendingOut
	if err := json.Unmarshal([]byte(out), &got); err != nil || got.Waiting != 2 || len(got.Approvals) != 2 ||
		got.Approvals[0].MissionID != first || got.Approvals[1].MissionID != second || got.Approvals[0].State != "pending" {
		t.Fatalf("approvals -json: %s (%v), want %s then %s waiting", out, err, first, second)
	}
	out, err = f.run(t, ctx, "approvals")
	if err != nil {
		t.Fatalf("approvals: %s %v", out, err)
	}
	for _, want := range []string{first + " " + got.Approvals[0].Call + "  refund {\"amount\":900,\"order\":\"A-1\"}", "submitter other",
		"dispatcher approve|deny " + second + " " + got.Approvals[1].Call} {
		if !strings.Contains(out, want) {
			t.Errorf("approvals lacks %q:\n%s", want, out)
		}
	}
	if i, j := strings.Index(out, first), strings.Index(out, second); i < 0 || j < i {
		t.Errorf("approvals: want %s, the longest waiting, first:\n%s", first, out)
	}
	out, err = f.run(t, ctx, "approvals", "-limit", "1")
	if err != nil || strings.Contains(out, second) || !strings.Contains(out, "1 of 2 waiting calls shown") {
		t.Errorf("approvals -limit 1: %s %v", out, err)
	}
	// the printed command decides the call
	var line string
	for l := range strings.Lines(out) {
		if _, cmd, ok := strings.Cut(l, "dispatcher approve|deny "); ok {
			line = strings.TrimSpace(cmd)
		}
	}
	if out, err := f.run(t, ctx, append([]string{"approve"}, strings.Fields(line)...)...); err != nil {
		t.Fatalf("approve %s: %s %v", line, out, err)
	}
	if _, err := f.client.Await(ctx, first); err != nil {
		t.Fatal(err)
	}
	if out, err = f.run(t, ctx, "approvals", "-json"); err != nil {
		t.Fatalf("approvals -json: %s %v", out, err)
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil || got.Waiting != 1 || len(got.Approvals) != 1 || got.Approvals[0].MissionID != second {
		t.Fatalf("approvals -json after the approval: %s (%v), want %s alone", out, err, second)
	}
}

// stallMission writes the decision of mission id's waiting call as a
// decider that stopped before its wake would: the record approved by
// "gone" two minutes ago, the mission never queued. It returns the call.
func stallMission(t *testing.T, ctx context.Context, f *approvalFleet, id string) string {
	t.Helper()
	as, err := f.client.Approvals(ctx, id)
	if err != nil || len(as) != 1 {
		t.Fatalf("approvals: %v %v", as, err)
	}
	kv := f.client.Stores().Approvals
	key := messages.ApprovalKey(id, as[0].Call)
	e, err := kv.Get(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	a := as[0]
	a.State, a.DecidedBy, a.DecidedAt = messages.ApprovalApproved, "gone", time.Now().Add(-2*time.Minute).UTC()
	data, err := messages.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Update(ctx, key, data, e.Revision()); err != nil {
		t.Fatal(err)
	}
	return a.Call
}

// dispatcher approvals lists, after the calls that wait, a mission whose
// call was decided over a minute ago and whose wake was lost (the record
// decided, the mission never queued), with the command that queues it
// again; that command resumes it with the recorded decision and exits 0,
// and the listing then leaves it out. MCP's pending_approvals returns it
// as stalled, and approve_call with no call queues it again.
func TestDispatcherListsStalledDecisions(t *testing.T) {
	for _, via := range []string{"cli", "mcp"} {
		t.Run(via, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			f := startApprovalFleet(t, ctx)
			id := f.submit(t, ctx, 900)
			call := stallMission(t, ctx, f, id)
			if out, err := f.run(t, ctx, "approvals", "-stalled-after", "5m"); err != nil || strings.Contains(out, id) {
				t.Fatalf("approvals -stalled-after 5m, decided 2m ago: %s %v, want it not listed", out, err)
			}
			switch via {
			case "cli":
				out, err := f.run(t, ctx, "approvals", "-json")
				var got pendingOut
				if err != nil || json.Unmarshal([]byte(out), &got) != nil || got.Waiting != 0 || len(got.Stalled) != 1 ||
					got.Stalled[0].MissionID != id || got.Stalled[0].State != messages.ApprovalApproved || got.Stalled[0].DecidedBy != "gone" {
					t.Fatalf("approvals -json: %s %v, want %s stalled", out, err, id)
				}
				out, err = f.run(t, ctx, "approvals")
				if err != nil || !strings.Contains(out, id+" "+call+"  refund approved by gone 2m") || !strings.Contains(out, "its wake lost") {
					t.Fatalf("approvals: %s %v", out, err)
				}
				_, cmd, ok := strings.Cut(out, "(the decision stands): dispatcher ")
				if !ok {
					t.Fatalf("approvals prints no command:\n%s", out)
				}
				if out, err := f.run(t, ctx, strings.Fields(cmd)...); err != nil || !strings.Contains(out, "queued it again") {
					t.Fatalf("%s: %s %v", strings.TrimSpace(cmd), out, err)
				}
			case "mcp":
				cs, _ := serveMCPHTTP(ctx, t, f.nc)
				// the fleet's -stalled-after, given: decided 2m ago is not
				// stalled for a fleet that waits 5m
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "pending_approvals", Arguments: map[string]any{"stalled_after_seconds": 300}})
				if err != nil || res.IsError {
					t.Fatalf("pending_approvals stalled_after_seconds 300: %v %+v", err, res)
				}
				if stalled, _ := res.StructuredContent.(map[string]any)["stalled"].([]any); len(stalled) != 0 {
					t.Fatalf("pending_approvals stalled_after_seconds 300, decided 2m ago: stalled %v, want none", stalled)
				}
				if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "pending_approvals", Arguments: map[string]any{"stalled_after_seconds": -5}}); err == nil && !res.IsError {
					t.Fatalf("pending_approvals stalled_after_seconds -5: %+v, want an error", res)
				}
				res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "pending_approvals", Arguments: map[string]any{}})
				if err != nil || res.IsError {
					t.Fatalf("pending_approvals: %v %+v", err, res)
				}
				stalled, _ := res.StructuredContent.(map[string]any)["stalled"].([]any)
				if len(stalled) != 1 || stalled[0].(map[string]any)["mission_id"] != id || stalled[0].(map[string]any)["call"] != call {
					t.Fatalf("pending_approvals: stalled %v, want %s", stalled, id)
				}
				res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "approve_call", Arguments: map[string]any{"mission_id": id}})
				if err != nil || res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "queued it again") {
					t.Fatalf("approve_call of the stalled mission: %v %+v", err, res)
				}
				as := res.StructuredContent.(map[string]any)["approvals"].([]any)
				if len(as) != 1 || as[0].(map[string]any)["decided_by"] != "gone" {
					t.Fatalf("approve_call of the stalled mission: approvals %v, want the recorded decision", as)
				}
			}
			if step, err := f.client.Await(ctx, id); err != nil || !step.Ok() {
				t.Fatalf("the stalled mission queued again: %+v %v", step, err)
			}
			ran := len(f.refunds())
			if ran != 1 {
				t.Fatalf("refunds run: %d, want 1", ran)
			}
			if out, err := f.run(t, ctx, "approvals", "-stalled-after", "1s"); err != nil || strings.Contains(out, id) {
				t.Fatalf("approvals after it finished: %s %v", out, err)
			}
		})
	}
}

// dispatcher approvals -watch prints what waits, then each call as it
// starts waiting, with the command that decides it, and as it stops,
// until interrupted.
func TestDispatcherWatchesPendingApprovals(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	f := startApprovalFleet(t, ctx)
	first := f.submit(t, ctx, 900)
	wctx, stop := context.WithCancel(ctx)
	var out syncbuf.Buffer
	done := make(chan error, 1)
	go func() { done <- run(wctx, []string{"approvals", "-watch", "-every", "50ms"}, f.env, &out, &out) }()
	// a second watch follows only the small refunds
	var small syncbuf.Buffer
	smallDone := make(chan error, 1)
	go func() {
		smallDone <- run(wctx, []string{"approvals", "-watch", "-every", "50ms", "-when", `{"arg":"amount","op":"<=","value":100}`}, f.env, &small, &small)
	}()
	awaitIn := func(out *syncbuf.Buffer, what string) {
		t.Helper()
		for !strings.Contains(out.String(), what) {
			if ctx.Err() != nil {
				t.Fatalf("the watch never printed %q:\n%s", what, out.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	await := func(what string) { t.Helper(); awaitIn(&out, what) }
	await("dispatcher approve|deny " + first)
	second := f.submit(t, ctx, 50)
	await("waiting: " + second)
	await("dispatcher approve|deny " + second)
	awaitIn(&small, "dispatcher approve|deny "+second)
	if _, err := f.client.Decide(ctx, first, fleet.Decision{Approve: true, By: "ann"}); err != nil {
		t.Fatal(err)
	}
	await("no longer waiting: " + first)
	stop()
	if err := <-done; err != nil {
		t.Fatalf("approvals -watch: %v\n%s", err, out.String())
	}
	if err := <-smallDone; err != nil || strings.Contains(small.String(), first) {
		t.Fatalf("approvals -watch -when: %v; want the big refund never listed:\n%s", err, small.String())
	}
	if strings.Contains(out.String(), "no longer waiting: "+second) {
		t.Errorf("the watch says %s stopped waiting:\n%s", second, out.String())
	}
	if o, err := f.run(t, ctx, "approvals", first, "-watch"); err == nil || !strings.Contains(err.Error(), "give no mission id") {
		t.Errorf("approvals ID -watch: %s %v", o, err)
	}
}

// The viewer's Approve button, driven in headless Chromium: the page lists
// the waiting call with its arguments, approves it with edited arguments
// and a reason, and then shows the decision on the call in the trace.
func TestViewerApproveInBrowser(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	f := startApprovalFleet(t, ctx)
	id := f.submit(t, ctx, 900)
	srv := f.serveViewer(t)

	// A decision is a JSON body: a form post from another page is refused.
	resp, err := http.Post(srv.URL+"/api/missions/"+id+"/decide", "application/x-www-form-urlencoded", strings.NewReader("approve=true"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnsupportedMediaType {
		t.Fatalf("form post: %d", resp.StatusCode)
	}

	bctx := openBrowser(t, ctx, chromedp.WindowSize(1400, 1100))
	step := browserSteps(t, bctx)
	step("open the mission", chromedp.Navigate(srv.URL+"/missions/"+id))
	step("the waiting call shows", chromedp.WaitVisible(`#trace .approval.pending button.approve`))
	pending, err := chromedp.Run(bctx, chromedp.Text(`#trace .approvals`))
	if err != nil || !strings.Contains(pending, `refund {"amount":900,"order":"A-1"}`) || !strings.Contains(pending, "Deny") {
		t.Fatalf("approvals on the page: %q %v", pending, err)
	}
	mark, err := chromedp.Run(bctx, chromedp.Text(`#trace .approval.pending pre.program mark.call`))
	if err != nil || mark != `(tool/refund {:order "A-1" :amount ctx/amount}))` || !strings.Contains(pending, "at 2:3") {
		t.Fatalf("the call's place in the program: marked %q, page %q, %v", mark, pending, err)
	}
	if _, err := chromedp.Run(bctx, chromedp.Evaluate[bool](`(() => { const a = document.querySelector("#trace .approval.pending textarea.args"); a.value = '{"amount":300,"order":"A-1"}'; return true })()`)); err != nil {
		t.Fatal(err)
	}
	step("type a reason", chromedp.SendKeys(`#trace .approval.pending input.reason`, "partial refund"))
	step("approve", chromedp.Click(`#trace .approval.pending button.approve`))
	wctx, wcancel := context.WithTimeout(bctx, 20*time.Second)
	defer wcancel()
	if _, err := chromedp.Run(wctx, chromedp.WaitVisible(`#trace .approval-note`)); err != nil {
		page, _ := chromedp.Run(bctx, chromedp.Text(`#trace`))
		t.Fatalf("the decision does not show on the call: %v\n%s", err, page)
	}
	text, err := chromedp.Run(bctx, chromedp.Text(`#trace`))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"approval: approved by viewer:tester", "partial refund", `arguments changed to {"amount":300,"order":"A-1"}`} {
		if !strings.Contains(text, want) {
			t.Errorf("the page lacks %q:\n%s", want, text)
		}
	}
	ran := f.refunds()
	if len(ran) != 1 || ran[0]["amount"] != int64(300) {
		t.Fatalf("refunds run: %v", ran)
	}
}

// The viewer lists the calls waiting across the fleet, each with a box
// to tick: Approve selected decides the ticked ones at once (each mission
// resumes, its call runs once), Deny selected the rest; the API takes
// only a JSON body naming calls it can check.
func TestViewerDecidesTickedCallsInBrowser(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	f := startApprovalFleet(t, ctx)
	small, mid, big := f.submit(t, ctx, 50), f.submit(t, ctx, 200), f.submit(t, ctx, 900)
	srv := f.serveViewer(t)

	for _, c := range []struct {
		ctype, body string
		status      int
		want        string
	}{
		{"application/x-www-form-urlencoded", "approve=true", http.StatusUnsupportedMediaType, "JSON body"},
		{"application/json", `{"approve":true,"calls":[]}`, http.StatusBadRequest, "no call named"},
		{"application/json", `{"approve":true,"calls":[{"mission_id":"x","call":"1.a.0"}]}`, http.StatusBadRequest, `calls[0]: "x" is not a mission id`},
		{"application/json", `{"approve":true,"calls":[{"mission_id":"` + small + `","call":"1.a.0"}],"by":"mallory"}`, http.StatusBadRequest, `unknown field "by"`},
	} {
		resp, err := http.Post(srv.URL+"/api/approvals/decide", c.ctype, strings.NewReader(c.body))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.status || !strings.Contains(string(b), c.want) {
			t.Errorf("%s %s: %d %s; want %d saying %q", c.ctype, c.body, resp.StatusCode, b, c.status, c.want)
		}
	}

	bctx := openBrowser(t, ctx, chromedp.WindowSize(1400, 1100))
	step := browserSteps(t, bctx)
	step("open the viewer", chromedp.Navigate(srv.URL+"/"))
	step("the waiting calls show", chromedp.WaitVisible(`#waiting input.tick[data-mission="`+big+`"]`))
	listed, err := chromedp.Run(bctx, chromedp.Text(`#waiting`))
	if err != nil || !strings.Contains(listed, "3 tool calls wait for a decision") || !strings.Contains(listed, `refund {"amount":900,"order":"A-1"}`) {
		t.Fatalf("the waiting calls on the page: %q %v", listed, err)
	}
	step("tick the small refund", chromedp.Click(`#waiting input.tick[data-mission="`+small+`"]`))
	step("tick the big refund", chromedp.Click(`#waiting input.tick[data-mission="`+big+`"]`))
	step("type a reason", chromedp.SendKeys(`#waiting input.reason`, "checked by hand"))
	step("approve the ticked", chromedp.Click(`#waiting button.approve-ticked`))
	wctx, wcancel := context.WithTimeout(bctx, 20*time.Second)
	defer wcancel()
	waitingSays(t, wctx, bctx, "approved 2 of 2 ticked", "the answer does not show")
	for _, id := range []string{small, big} {
		if step, err := f.client.Await(ctx, id); err != nil || !step.Ok() || step.Return.(map[string]any)["error"] != "" {
			t.Fatalf("approved mission %s: %+v %v", id, step, err)
		}
	}
	as, err := f.client.Approvals(ctx, small)
	if err != nil || as[0].DecidedBy != "viewer:tester" || as[0].Reason != "checked by hand" {
		t.Fatalf("the audit of a ticked call: %+v %v", as, err)
	}
	if st, err := f.client.Status(ctx, mid); err != nil || st.State != messages.StateAwaitingApproval {
		t.Fatalf("the call not ticked: %+v %v", st, err)
	}
	if _, err := chromedp.Run(wctx, chromedp.Poll[bool](`document.querySelectorAll("#waiting input.tick").length === 1`)); err != nil {
		t.Fatalf("one call left on the page: %v", err)
	}
	step("tick every call shown", chromedp.Click(`#waiting input.tick-all`))
	step("deny the ticked", chromedp.Click(`#waiting button.deny-ticked`))
	if step, err := f.client.Await(ctx, mid); err != nil || !strings.Contains(step.Return.(map[string]any)["error"].(string), "denied by viewer:tester") {
		t.Fatalf("denied mission: %+v %v", step, err)
	}
	ran := f.refunds()
	if len(ran) != 2 {
		t.Fatalf("refunds run: %v, want the 2 approved", ran)
	}
}

// The viewer's filter of the waiting calls, driven in headless Chromium:
// a condition on the amount lists the two small refunds of four; Approve
// all 2 matching refuses while the filter was edited after its count,
// then approves those two, and the others still wait. The API refuses a
// filter it cannot apply, a filter without the count the page saw, and
// a filter given with named calls; a count bounds what the filter
// decides (the longest waiting call of those it selects, denied).
func TestViewerDecidesFilteredCallsInBrowser(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	f := startApprovalFleet(t, ctx)
	// the big refund waits longest: a filter that lost its condition
	// would take it first
	big := f.submit(t, ctx, 900)
	small, more, mid := f.submit(t, ctx, 50), f.submit(t, ctx, 300), f.submit(t, ctx, 200)
	srv := f.serveViewer(t)

	get := func(query string) (int, string) {
		t.Helper()
		resp, err := http.Get(srv.URL + "/api/approvals?" + query)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, c := range []struct {
		query  string
		status int
		want   string
	}{
		{"when=" + url.QueryEscape(`{"arg":"amount","op":"<=","value":250}`), http.StatusOK, `"waiting":2`},
		{"tool=refund&submitter=nobody", http.StatusOK, `"waiting":0`},
		{"when=" + url.QueryEscape(`{"arg":"amount","op":"~","value":1}`), http.StatusBadRequest, "op"},
		{"when=" + url.QueryEscape(`{"arg":"amount","opp":"<"}`), http.StatusBadRequest, `when: not a JSON condition`},
		{"tool=" + url.QueryEscape("re fund"), http.StatusBadRequest, `tool: "re fund" is not a valid tool name`},
	} {
		if status, body := get(c.query); status != c.status || !strings.Contains(body, c.want) {
			t.Errorf("GET /api/approvals?%s: %d %s; want %d with %q", c.query, status, body, c.status, c.want)
		}
	}
	for _, c := range []struct {
		body string
		want string
	}{
		{`{"approve":true,"filter":{"tool":"refund"}}`, "filter.max"},
		{`{"approve":true,"filter":{"tool":"refund","max":0}}`, "filter.max"},
		{`{"approve":true,"filter":{"tool":"refund","max":1},"calls":[{"mission_id":"` + small + `","call":"1.a.0"}]}`, "calls and filter both given"},
		{`{"approve":true,"filter":{"tool":"refund","max":1,"who":"x"}}`, `unknown field "who"`},
		{`{"approve":true,"filter":{"when":{"arg":"amount","op":"~","value":1},"max":1}}`, "op"},
	} {
		resp, err := http.Post(srv.URL+"/api/approvals/decide", "application/json", strings.NewReader(c.body))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), c.want) {
			t.Errorf("POST %s: %d %s; want 400 saying %q", c.body, resp.StatusCode, b, c.want)
		}
	}
	for _, id := range []string{small, mid, more, big} {
		if st, err := f.client.Status(ctx, id); err != nil || st.State != messages.StateAwaitingApproval {
			t.Fatalf("after the refused requests, mission %s: %+v %v", id, st, err)
		}
	}

	bctx := openBrowser(t, ctx, chromedp.WindowSize(1400, 1100))
	step := browserSteps(t, bctx)
	step("open the viewer", chromedp.Navigate(srv.URL+"/"))
	step("the waiting calls show", chromedp.WaitVisible(`#waiting input.tick[data-mission="`+big+`"]`))
	if n, err := chromedp.Run(bctx, chromedp.Evaluate[int](`document.querySelectorAll("#waiting button.approve-matching").length`)); err != nil || n != 0 {
		t.Fatalf("Approve all offered without a filter: %d %v", n, err)
	}
	step("filter on the amount", chromedp.SendKeys(`#waiting input.wf-when`, `{"arg":"amount","op":"<=","value":250}`+kb.Enter))
	wctx, wcancel := context.WithTimeout(bctx, 20*time.Second)
	defer wcancel()
	if _, err := chromedp.Run(wctx, chromedp.Poll[bool](`document.querySelectorAll("#waiting input.tick").length === 2 && !!document.querySelector("#waiting button.approve-matching")`)); err != nil {
		page, _ := chromedp.Run(bctx, chromedp.Text(`#waiting`))
		t.Fatalf("the filtered list does not show: %v\n%s", err, page)
	}
	listed, err := chromedp.Run(bctx, chromedp.Text(`#waiting`))
	if err != nil || !strings.Contains(listed, "2 waiting tool calls match the filter") || strings.Contains(listed, big) || strings.Contains(listed, more) {
		t.Fatalf("the filtered list: %q %v", listed, err)
	}
	// a filter typed after the count and not applied yet decides nothing
	step("edit the filter without applying it", chromedp.SendKeys(`#waiting input.wf-tool`, "lookup"))
	if _, err := chromedp.Run(bctx, chromedp.Evaluate[bool](`(() => { document.querySelector("#waiting button.approve-matching").click(); return true })()`)); err != nil {
		t.Fatalf("approve all matching: %v", err)
	}
	waitingSays(t, wctx, bctx, "the filter was edited after its 2 calls were counted", "an edited filter's count was used")
	for _, id := range []string{small, mid} {
		if st, err := f.client.Status(ctx, id); err != nil || st.State != messages.StateAwaitingApproval {
			t.Fatalf("mission %s decided with a filter edited after its count: %+v %v", id, st, err)
		}
	}
	if _, err := chromedp.Run(bctx, chromedp.Evaluate[bool](`(() => { const i = document.querySelector("#waiting input.wf-tool"); i.value = ""; i.dispatchEvent(new Event("change")); return true })()`)); err != nil {
		t.Fatalf("put the filter back: %v", err)
	}
	if _, err := chromedp.Run(wctx, chromedp.Poll[bool](`document.activeElement === document.body && document.querySelector("#waiting input.wf-tool").value === "" && document.querySelectorAll("#waiting input.tick").length === 2`)); err != nil {
		t.Fatalf("the filter put back: %v", err)
	}
	step("type a reason", chromedp.SendKeys(`#waiting input.reason`, "small refunds"))
	step("approve all matching", chromedp.Click(`#waiting button.approve-matching`))
	waitingSays(t, wctx, bctx, "approved 2 of 2 matching", "the answer does not show")
	for _, id := range []string{small, mid} {
		if step, err := f.client.Await(ctx, id); err != nil || !step.Ok() || step.Return.(map[string]any)["error"] != "" {
			t.Fatalf("approved mission %s: %+v %v", id, step, err)
		}
		as, err := f.client.Approvals(ctx, id)
		if err != nil || as[0].DecidedBy != "viewer:tester" || as[0].Reason != "small refunds" {
			t.Fatalf("the audit of a filtered call: %+v %v", as, err)
		}
	}
	// a count bounds what the filter decides, the longest waiting first
	// (the big refund), whatever else matches
	resp, err := http.Post(srv.URL+"/api/approvals/decide", "application/json", strings.NewReader(`{"approve":false,"reason":"r","filter":{"tool":"refund","max":1}}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var out decidedOut
	if err := json.Unmarshal(b, &out); resp.StatusCode != http.StatusOK || err != nil || len(out.Decided) != 1 || out.Decided[0].MissionID != big {
		t.Fatalf("deny one with the filter: %d %s %v; want %s denied", resp.StatusCode, b, err, big)
	}
	if step, err := f.client.Await(ctx, big); err != nil || !strings.Contains(step.Return.(map[string]any)["error"].(string), "denied by viewer:tester") {
		t.Fatalf("denied mission: %+v %v", step, err)
	}
	if st, err := f.client.Status(ctx, more); err != nil || st.State != messages.StateAwaitingApproval {
		t.Fatalf("the call neither the filter nor the count took: %+v %v", st, err)
	}
	if ran := f.refunds(); len(ran) != 2 {
		t.Fatalf("refunds run: %v, want the 2 approved", ran)
	}
}

// waitingSays waits, within wctx, for the viewer's list of waiting calls
// to show want, or fails the test with what, the error and the list.
func waitingSays(t *testing.T, wctx, bctx context.Context, want, what string) {
	t.Helper()
	if _, err := chromedp.Run(wctx, chromedp.Poll[bool](`document.querySelector("#waiting").textContent.includes(`+strconv.Quote(want)+`)`)); err != nil {
		page, _ := chromedp.Run(bctx, chromedp.Text(`#waiting`))
		t.Fatalf("%s: %v\n%s", what, err, page)
	}
}

// The viewer offers Queue again (stalled_call in a mission's JSON) by
// the threshold it was started with (dispatcher ui -stalled-after, the
// fleet's): a decision two minutes old is stalled at the default minute,
// not at five; under a second is refused.
func TestViewerStalledThresholdFollowsItsFlag(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	f := startApprovalFleet(t, ctx)
	id := f.submit(t, ctx, 900)
	call := stallMission(t, ctx, f, id)
	stalledCall := func(after time.Duration) any {
		t.Helper()
		v, err := newViewer(f.client, zerolog.Nop())
		if err != nil {
			t.Fatal(err)
		}
		v.stalledAfter = after
		srv := httptest.NewServer(v.Handler())
		defer srv.Close()
		resp, err := http.Get(srv.URL + "/api/missions/" + id)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var got map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
			t.Fatal(err)
		}
		return got["stalled_call"]
	}
	if got := stalledCall(0); got != call {
		t.Fatalf("the default viewer: stalled_call %v, want %s", got, call)
	}
	if got := stalledCall(5 * time.Minute); got != nil {
		t.Fatalf("a viewer of -stalled-after 5m: stalled_call %v, want none", got)
	}
	if out, err := f.run(t, ctx, "ui", "-stalled-after", "500ms"); err == nil || !strings.Contains(err.Error(), "want at least 1s") {
		t.Fatalf("ui -stalled-after 500ms: %s %v, want refused", out, err)
	}
}

// The viewer's Queue again button, driven in headless Chromium: a mission
// whose decision's wake was lost (decided two minutes ago, still waiting)
// shows the button on its decided call; clicking it resumes the mission
// with the recorded decision, its call run once.
func TestViewerQueuesAStalledMissionAgainInBrowser(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	f := startApprovalFleet(t, ctx)
	id := f.submit(t, ctx, 900)
	fresh := f.submit(t, ctx, 800)
	stallMission(t, ctx, f, id)
	srv := f.serveViewer(t)
	bctx := openBrowser(t, ctx, chromedp.WindowSize(1400, 1100))
	step := browserSteps(t, bctx)
	// a call still pending gets Approve and Deny, not Queue again
	step("open the waiting mission", chromedp.Navigate(srv.URL+"/missions/"+fresh))
	step("its call shows", chromedp.WaitVisible(`#trace .approval.pending button.approve`))
	if n, err := chromedp.Run(bctx, chromedp.Evaluate[int](`document.querySelectorAll("#trace button.requeue").length`)); err != nil || n != 0 {
		t.Fatalf("a waiting call shows Queue again: %d %v", n, err)
	}
	step("open the stalled mission", chromedp.Navigate(srv.URL+"/missions/"+id))
	step("its Queue again shows", chromedp.WaitVisible(`#trace .approval.stalled button.requeue`))
	text, err := chromedp.Run(bctx, chromedp.Text(`#trace .approvals`))
	if err != nil || !strings.Contains(text, "approved by gone") || !strings.Contains(text, "its wake was lost") {
		t.Fatalf("the stalled call on the page: %q %v", text, err)
	}
	step("queue it again", chromedp.Click(`#trace .approval.stalled button.requeue`))
	if step, err := f.client.Await(ctx, id); err != nil || !step.Ok() {
		page, _ := chromedp.Run(bctx, chromedp.Text(`#trace`))
		t.Fatalf("the stalled mission queued again: %+v %v\n%s", step, err, page)
	}
	ran := f.refunds()
	if len(ran) != 1 || ran[0]["amount"] != int64(900) {
		t.Fatalf("refunds run: %v", ran)
	}
}

// The example mission examples/missions/approve-lookup.yaml run by
// dispatcher local: its lookup waits for approval, the progress says how
// to decide, and once approved the program's first turn returns the card.
func TestLocalExampleWaitsForApproval(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	srv := fleettest.Start(t)
	client, err := fleet.NewClient(ctx, srv.Conn(), fleet.ClientConfig{})
	if err != nil {
		t.Fatal(err)
	}
	var out, errOut syncbuf.Buffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"local", "-workers", "1", "-nats-url", srv.ClientURL(), "-example-tools",
			"../../examples/missions/approve-lookup.yaml"}, testEnv(nil), &out, &errOut)
	}()
	var id string
	for id == "" {
		ms, err := client.List(ctx, fleet.ListOptions{States: []string{messages.StateAwaitingApproval}})
		if err == nil && len(ms) == 1 {
			id = ms[0].MissionID
		}
		if ctx.Err() != nil {
			t.Fatalf("the example never waited for approval:\n%s\n%s", out.String(), errOut.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := client.Decide(ctx, id, fleet.Decision{Approve: true, By: "test"}); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("local: %v\n%s\n%s", err, out.String(), errOut.String())
	}
	got := out.String()
	for _, want := range []string{"waiting for approval of get_customer {\"id\":7}", "dispatcher approve|deny " + id, `"denied": false`, "turns 1",
		// the call's place in the turn's program
		"    at 1:9 of the program\n      (let [c (tool/get_customer {:id ctx/id})]\n              ^\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
}

// dispatcher local on its embedded server prints a decide command that
// runs as printed from another terminal: it names the server's URL, and
// the approval it gives resumes the mission. Run on a server the user
// named, the command names no URL (TestLocalExampleWaitsForApproval).
func TestLocalPrintsADecideCommandThatRunsAsPrinted(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var out, errOut syncbuf.Buffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"local", "-workers", "1", "../../examples/missions/approve-lookup.yaml"}, testEnv(nil), &out, &errOut)
	}()
	var line string
	for line == "" {
		for l := range strings.Lines(out.String()) {
			if _, cmd, ok := strings.Cut(l, ": dispatcher approve|deny "); ok {
				line = strings.TrimSpace(cmd)
			}
		}
		select {
		case err := <-done:
			t.Fatalf("local ended before the call waited for approval: %v\n%s\n%s", err, out.String(), errOut.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	args := strings.Fields(line)
	if len(args) != 4 || args[0] != "-nats-url" || !strings.HasPrefix(args[1], "nats://") {
		t.Fatalf("printed decide command %q, want -nats-url URL MISSION CALL", line)
	}
	var decided, decideErr syncbuf.Buffer
	if err := run(ctx, append([]string{"approve", "-by", "ann"}, args...), testEnv(nil), &decided, &decideErr); err != nil {
		t.Fatalf("dispatcher approve %s: %v\n%s", line, err, decideErr.String())
	}
	if !strings.Contains(decided.String(), "approved by ann") {
		t.Errorf("approve printed %q", decided.String())
	}
	if err := <-done; err != nil {
		t.Fatalf("local: %v\n%s\n%s", err, out.String(), errOut.String())
	}
	if got := out.String(); !strings.Contains(got, `"denied": false`) || !strings.Contains(got, "get_customer approved by ann") {
		t.Errorf("the mission did not resume with the approval:\n%s", got)
	}
}

// approve -pending and deny -pending decide at once the waiting calls
// their flags select (-dry-run lists them first), each mission resuming;
// flags that select without -pending, and -pending with what decides one
// call, are refused with an error naming them.
func TestDispatcherDecidesPendingCallsAtOnce(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	f := startApprovalFleet(t, ctx)
	small, mid, big := f.submit(t, ctx, 50), f.submit(t, ctx, 200), f.submit(t, ctx, 900)
	upTo200 := `{"arg":"amount","op":"<=","value":200}`

	out, err := f.run(t, ctx, "approve", "-pending", "-when", upTo200, "-dry-run")
	if err != nil || !strings.Contains(out, small) || !strings.Contains(out, mid) || strings.Contains(out, big) ||
		!strings.Contains(out, "2 calls would be approved (-dry-run: none decided)") {
		t.Fatalf("dry run: %s %v", out, err)
	}
	out, err = f.run(t, ctx, "approve", "-pending", "-when", upTo200, "-dry-run", "-json")
	var dry decidedOut
	if err != nil || json.Unmarshal([]byte(out), &dry) != nil || len(dry.Selected) != 2 || dry.Selected[0].MissionID != small || len(dry.Decided) != 0 {
		t.Fatalf("dry run as JSON: %s %v", out, err)
	}
	if as, n, err := f.client.PendingApprovals(ctx, 0); err != nil || n != 3 {
		t.Fatalf("after the dry run %d wait (%v), %v; want all 3", n, as, err)
	}
	// approvals lists what the same flags select, with the count
	out, err = f.run(t, ctx, "approvals", "-when", upTo200, "-json")
	var listed pendingOut
	if err != nil || json.Unmarshal([]byte(out), &listed) != nil || listed.Waiting != 2 || len(listed.Approvals) != 2 || listed.Approvals[0].MissionID != small {
		t.Fatalf("approvals -when: %s %v; want the 2 small refunds", out, err)
	}
	if out, err = f.run(t, ctx, "approvals", "-tool", "refund", "-submitter", "nobody"); err != nil || strings.TrimSpace(out) != "no waiting call is selected" {
		t.Fatalf("approvals of a submitter with no call: %s %v", out, err)
	}
	out, err = f.run(t, ctx, "approve", "-pending", "-tool", "refund", "-when", upTo200, "-by", "dana")
	if err != nil || strings.Count(out, "approved by dana; the mission resumes") != 2 || !strings.Contains(out, "approved 2 of 2 calls selected") ||
		strings.Index(out, small) > strings.Index(out, mid) {
		t.Fatalf("approve -pending: %s %v; want the two small refunds approved, the longest waiting first", out, err)
	}
	for _, id := range []string{small, mid} {
		if step, err := f.client.Await(ctx, id); err != nil || !step.Ok() || step.Return.(map[string]any)["error"] != "" {
			t.Fatalf("approved mission %s: %+v %v", id, step, err)
		}
	}
	out, err = f.run(t, ctx, "deny", "-pending", "-service", "payments", "-reason", "over budget", "-json")
	var denied decidedOut
	if err != nil || json.Unmarshal([]byte(out), &denied) != nil || len(denied.Decided) != 1 || denied.Decided[0].MissionID != big ||
		denied.Decided[0].State != messages.ApprovalDenied || len(denied.NotDecided) != 0 {
		t.Fatalf("deny -pending -json: %s %v", out, err)
	}
	if step, err := f.client.Await(ctx, big); err != nil || !strings.Contains(step.Return.(map[string]any)["error"].(string), "over budget") {
		t.Fatalf("denied mission: %+v %v", step, err)
	}
	ran := len(f.refunds())
	if ran != 2 {
		t.Fatalf("%d refunds ran, want the 2 approved", ran)
	}
	out, err = f.run(t, ctx, "approve", "-pending")
	if err != nil || !strings.Contains(out, "no waiting call is selected: none decided") {
		t.Fatalf("nothing waiting: %s %v", out, err)
	}

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"approve", "-tool", "refund"}, "-tool only go with -pending"},
		{[]string{"approvals", big, "-tool", "refund", "-when", upTo200}, "-tool, -when select among the calls waiting across the fleet: give no mission id"},
		{[]string{"approvals", "-when", "amount<5"}, "-when: not a JSON condition"},
		{[]string{"approvals", "-submitter", "no body"}, `submitter: "no body" is not a valid submitter name`},
		{[]string{"deny", big, "-max", "3"}, "-max only go with -pending"},
		{[]string{"approve", big, "-json"}, "-json only go with -pending"},
		{[]string{"approve", "-pending", big}, "-pending decides the calls its flags select: give no mission id"},
		{[]string{"approve", "-pending", "-args", `{"amount":1}`}, "-args edits one call's arguments"},
		{[]string{"approve", "-pending", "-when", "amount<5"}, "-when: not a JSON condition"},
		{[]string{"approve", "-pending", "-when", `{"arg":"amount","op":"~","value":1}`}, "when.op"},
		{[]string{"approve", "-pending", "-when", `{"arg":"amount","op":"<","value":1,"unit":"EUR"}`}, `unknown field "unit"`},
		{[]string{"deny", "-pending", "-max", "-2"}, "max: -2 is negative"},
		{[]string{"deny", "-pending", "-tool", "no such"}, `tool: "no such" is not a valid tool name`},
	} {
		if out, err := f.run(t, ctx, c.args...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %s %v; want an error saying %q", c.args, out, err, c.want)
		}
	}
}

// decidedItems sorts a batch's outcomes: decided; not decided, with why;
// decided with its mission not queued, in both decided and not_queued.
func TestDecidedItemsSortsOutcomes(t *testing.T) {
	call := func(id string) *messages.Approval {
		return &messages.Approval{MissionID: id, Call: "1.a.0", Tool: "refund", State: messages.ApprovalPending}
	}
	decided := func(id string) *messages.Approval {
		a := call(id)
		a.State, a.DecidedBy = messages.ApprovalApproved, "ann"
		return a
	}
	out := decidedItems([]fleet.DecideOutcome{
		{Call: call("m1"), Decided: decided("m1")},
		{Call: call("m2"), Err: fleet.ErrNoPendingCall},
		{Call: call("m3"), Decided: decided("m3"), Err: errors.New("wake: no responders")},
	})
	if len(out.Decided) != 2 || out.Decided[0].MissionID != "m1" || out.Decided[1].MissionID != "m3" || out.Decided[1].State != messages.ApprovalApproved {
		t.Errorf("decided %+v", out.Decided)
	}
	if len(out.NotDecided) != 1 || out.NotDecided[0].MissionID != "m2" || !strings.Contains(out.NotDecided[0].Error, "no such call waits") {
		t.Errorf("not decided %+v", out.NotDecided)
	}
	if len(out.NotQueued) != 1 || out.NotQueued[0].MissionID != "m3" || out.NotQueued[0].Error != "wake: no responders" {
		t.Errorf("not queued %+v", out.NotQueued)
	}
	if got := decidedItems(nil); got.Decided == nil || len(got.Decided) != 0 {
		t.Errorf("no outcome: %+v; want decided an empty list (JSON [])", got)
	}
}
