package fleet

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/ptcfleet/ptc/pkg/messages"
)

// A run taking a mission from awaiting_approval reads its journal and its
// approval records while its claim writes the status, not after: the
// claim's write is held (claimWrite) until both reads have reached the
// server, which they do only if they went out before it. The resumed run
// replays its lookup from that journal (the lookup runs once), its gate
// finds the decision in the records read ahead, and the approved refund
// runs once.
func TestResumedRunReadsAheadOfItsClaim(t *testing.T) {
	nc := embeddedConn(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	client, err := NewClient(ctx, nc, ClientConfig{})
	if err != nil {
		t.Fatal(err)
	}
	svc, err := NewToolService(nc, ToolServiceConfig{Name: "shop"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Stop(context.Background()) })
	var lookups, refunds atomic.Int32
	if err := svc.Register("lookup", ToolSpec{Description: "an order"}, func(ctx context.Context, args map[string]any) (any, error) {
		lookups.Add(1)
		return map[string]any{"total": int64(300)}, nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := svc.Register("refund", ToolSpec{Description: "refund an order"}, func(ctx context.Context, args map[string]any) (any, error) {
		refunds.Add(1)
		return map[string]any{"refunded": args["amount"]}, nil
	}); err != nil {
		t.Fatal(err)
	}

	// the reads of the journal and of the approval records, as the
	// server passes them on
	var mu sync.Mutex
	seen := map[string]int{}
	spy, err := nc.Subscribe("$JS.API.DIRECT.GET.>", func(m *nats.Msg) {
		mu.Lock()
		seen[m.Subject]++
		mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = spy.Unsubscribe() })
	journalGets, approvalGets := "$JS.API.DIRECT.GET."+messages.StreamJournal, "$JS.API.DIRECT.GET.KV_"+messages.BucketApprovals
	count := func(subject string) int {
		mu.Lock()
		defer mu.Unlock()
		return seen[subject]
	}

	w, err := NewWorker(nc, WorkerConfig{
		ID: "ahead", Slots: 1, Priorities: []string{messages.PriorityNormal}, IdleWait: 100 * time.Millisecond,
		Runner: RunnerFunc(func(ctx context.Context, m *messages.Mission, env RunEnv) (*messages.Step, error) {
			ctx = WithTurn(ctx, 1)
			order, err := env.Tools.Call(ctx, "lookup", map[string]any{"order": "A-1"})
			if err != nil {
				return nil, err
			}
			res, err := env.Tools.Call(ctx, "refund", map[string]any{"order": "A-1", "amount": order.(map[string]any)["total"]})
			if ctx.Err() != nil {
				return nil, context.Cause(ctx)
			}
			if err != nil {
				return nil, err
			}
			return &messages.Step{Return: res}, nil
		}),
	})
	if err != nil {
		t.Fatal(err)
	}
	// armed once the mission waits: the resuming claim's write waits
	// until the server has passed on a journal read and a records read
	// made after the decision
	var armed atomic.Bool
	var journalBefore, approvalsBefore int
	ahead := make(chan bool, 1)
	w.claimWrite = func(k missionKey, attempt int) {
		if !armed.Swap(false) {
			return
		}
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			if count(journalGets) > journalBefore && count(approvalGets) > approvalsBefore {
				ahead <- true
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
		ahead <- false
	}
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Stop() })

	m := &messages.Mission{ID: messages.NewMissionID(), Kind: messages.KindAgent, Tools: []string{"lookup", "refund"},
		Agent:    &messages.AgentSpec{Prompt: "refund A-1", Tools: []string{"lookup", "refund"}},
		Approval: &messages.ApprovalPolicy{Rules: []messages.ApprovalRule{{Tool: "refund"}}}}
	if _, err := client.Submit(ctx, m); err != nil {
		t.Fatal(err)
	}
	for {
		st, err := client.Status(ctx, m.ID)
		if err == nil && st.State == messages.StateAwaitingApproval {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("the mission never waited for approval: %+v %v", st, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	journalBefore, approvalsBefore = count(journalGets), count(approvalGets)
	armed.Store(true)
	if _, err := client.Decide(ctx, m.ID, Decision{Approve: true, By: "ann"}); err != nil {
		t.Fatal(err)
	}
	select {
	case ok := <-ahead:
		if !ok {
			t.Fatalf("the resuming claim wrote the status before reading the journal and the records: %d journal reads, %d records reads since the suspension",
				count(journalGets)-journalBefore, count(approvalGets)-approvalsBefore)
		}
	case <-ctx.Done():
		t.Fatal("no claim took the decided mission")
	}
	step, err := client.Await(ctx, m.ID)
	if err != nil || !step.Ok() {
		t.Fatalf("resumed mission: %+v %v", step, err)
	}
	if got := step.Return.(map[string]any)["refunded"]; got != int64(300) {
		t.Errorf("the refund answered %v, want the looked-up total 300", step.Return)
	}
	if n, r := lookups.Load(), refunds.Load(); n != 1 || r != 1 {
		t.Errorf("lookup ran %d times and refund %d; want each once (the lookup replayed from the journal read ahead)", n, r)
	}
}

// The records a gate is given as read ahead of its run answer a call
// decided in them, but a call pending or missing in them is read again:
// the list was not made for the look, and the call may have been decided
// since. A read ahead that failed is listed again, as the gate's own.
func TestGateReadsAgainACallPendingInRecordsReadAhead(t *testing.T) {
	ctx, js, st := testStores(t)
	id := messages.NewMissionID()
	now := time.Now().UTC()
	record := func(call, state string) *messages.Approval {
		return &messages.Approval{Version: messages.ApprovalVersion, MissionID: id, Call: call, State: state, Tool: "refund",
			RequestedAt: now, Deadline: now.Add(time.Hour)}
	}
	// stored: the first call approved, the second approved since the
	// read ahead, which has it pending
	revs := map[string]uint64{}
	for _, a := range []*messages.Approval{record("1.d1.0", messages.ApprovalApproved), record("1.d2.0", messages.ApprovalPending)} {
		data, err := messages.Marshal(a)
		if err != nil {
			t.Fatal(err)
		}
		if revs[a.Call], err = st.Approvals.Create(ctx, messages.ApprovalKey(id, a.Call), data); err != nil {
			t.Fatal(err)
		}
	}
	ahead := []*messages.Approval{record("1.d1.0", messages.ApprovalApproved), record("1.d2.0", messages.ApprovalPending)}
	b := record("1.d2.0", messages.ApprovalApproved)
	data, err := messages.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Approvals.Update(ctx, messages.ApprovalKey(id, "1.d2.0"), data, revs["1.d2.0"]); err != nil {
		t.Fatal(err)
	}

	br := newReplyMux(js.Conn())
	gate := func(early func(context.Context) ([]*messages.Approval, map[string]uint64, error)) (*approvalGate, *int) {
		lists := new(int)
		return &approvalGate{kv: st.Approvals, missionID: id,
			list: func(ctx context.Context) ([]*messages.Approval, map[string]uint64, error) {
				*lists++
				return listApprovals(ctx, br, js, id)
			},
			readAhead: early}, lists
	}
	readAhead := func(context.Context) ([]*messages.Approval, map[string]uint64, error) { return ahead, revs, nil }

	g, lists := gate(readAhead)
	for _, call := range []string{"1.d1.0", "1.d2.0"} {
		a, _, err := g.record(ctx, messages.ApprovalKey(id, call), call, true)
		if err != nil || a.State != messages.ApprovalApproved {
			t.Fatalf("call %s: %+v %v; want it approved", call, a, err)
		}
	}
	if *lists != 0 {
		t.Errorf("the gate listed the records %d times; want the read ahead used", *lists)
	}
	if _, _, err := g.record(ctx, messages.ApprovalKey(id, "1.d3.0"), "1.d3.0", true); !errors.Is(err, ErrNotFound) {
		t.Errorf("a call without a record: %v; want ErrNotFound, read again", err)
	}

	g, lists = gate(func(context.Context) ([]*messages.Approval, map[string]uint64, error) {
		return nil, nil, errors.New("no answer")
	})
	if a, _, err := g.record(ctx, messages.ApprovalKey(id, "1.d2.0"), "1.d2.0", true); err != nil || a.State != messages.ApprovalApproved || *lists != 1 {
		t.Fatalf("after a failed read ahead: %+v %v, listed %d times; want the records listed once", a, err, *lists)
	}
}
