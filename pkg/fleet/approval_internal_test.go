package fleet

import (
	"context"
	"errors"
	"maps"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ptcfleet/ptc/pkg/messages"
)

// lostReplyKV writes every Create and then reports a timeout, as a store
// whose reply was lost on the way back does.
type lostReplyKV struct{ jetstream.KeyValue }

func (kv lostReplyKV) Create(ctx context.Context, key string, value []byte, opts ...jetstream.KVCreateOpt) (uint64, error) {
	if _, err := kv.KeyValue.Create(ctx, key, value, opts...); err != nil {
		return 0, err
	}
	return 0, nats.ErrTimeout
}

// A pending approval the store wrote but whose reply was lost suspends
// the run on it, so it is not left pending with no mission waiting for it;
// a store that wrote nothing still makes the call unavailable.
func TestApprovalRecordWrittenWithItsReplyLost(t *testing.T) {
	ctx, _, st := testStores(t)
	gate := func(kv jetstream.KeyValue, suspended *[]*messages.Approval) *approvalGate {
		return &approvalGate{kv: kv, missionID: messages.NewMissionID(), priority: messages.PriorityNormal, timeout: time.Hour,
			mission: []messages.ApprovalRule{{Tool: "refund"}},
			suspend: func(a *messages.Approval) { *suspended = append(*suspended, a) },
			emit:    func(*messages.Event) {}, now: time.Now, next: map[string]int{}}
	}
	args := map[string]any{"amount": int64(500)}

	var suspended []*messages.Approval
	g := gate(lostReplyKV{st.Approvals}, &suspended)
	_, _, err := g.check(ctx, ToolInfo{Service: "shop"}, "refund", args, args)
	var se *suspendedError
	if !errors.As(err, &se) || len(suspended) != 1 {
		t.Fatalf("check = %v (suspended %d); want the run suspended on the written record", err, len(suspended))
	}
	stored, _, err := getApproval(ctx, st.nc, nil, st.Approvals, messages.ApprovalKey(g.missionID, suspended[0].Call))
	if err != nil || stored.State != messages.ApprovalPending || !stored.RequestedAt.Equal(suspended[0].RequestedAt) {
		t.Fatalf("stored record = %+v, %v", stored, err)
	}

	// a store that refuses the write leaves no record and no suspension
	var none []*messages.Approval
	g = gate(refusingKV{st.Approvals}, &none)
	_, _, err = g.check(ctx, ToolInfo{Service: "shop"}, "refund", args, args)
	var te *ToolError
	if !errors.As(err, &te) || te.Code != messages.ToolErrUnavailable || len(none) != 0 {
		t.Fatalf("check = %v (suspended %d); want the call unavailable", err, len(none))
	}
}

// refusingKV writes nothing and reports a timeout.
type refusingKV struct{ jetstream.KeyValue }

func (refusingKV) Create(context.Context, string, []byte, ...jetstream.KVCreateOpt) (uint64, error) {
	return 0, nats.ErrTimeout
}

// listApprovals reads a mission's records with their revisions, and no
// other mission's; a deleted record is left out; a mission with more
// records than one batch direct get answers (the server's 1,024) gets
// them all.
func TestListApprovalsReadsEveryRecordWithItsRevision(t *testing.T) {
	ctx, js, st := testStores(t)
	put := func(id string, n int) map[string]uint64 {
		revs := map[string]uint64{}
		for i := range n {
			call := "1.d" + strconv.Itoa(i) + ".0"
			a := &messages.Approval{Version: messages.ApprovalVersion, MissionID: id, Call: call,
				State: messages.ApprovalPending, Tool: "refund", Args: map[string]any{}, Turn: 1, Priority: messages.PriorityNormal,
				RequestedAt: time.Unix(int64(1000+i), 0).UTC(), Deadline: time.Unix(int64(5000+i), 0).UTC()}
			data, err := messages.Marshal(a)
			if err != nil {
				t.Fatal(err)
			}
			rev, err := st.Approvals.Create(ctx, messages.ApprovalKey(id, call), data)
			if err != nil {
				t.Fatal(err)
			}
			revs[call] = rev
		}
		return revs
	}
	id, other, many := messages.NewMissionID(), messages.NewMissionID(), messages.NewMissionID()
	want := put(id, 3)
	put(other, 2)
	if err := st.Approvals.Delete(ctx, messages.ApprovalKey(id, "1.d1.0")); err != nil {
		t.Fatal(err)
	}
	delete(want, "1.d1.0")
	br := newReplyMux(js.Conn())
	as, revs, err := listApprovals(ctx, br, js, id)
	if err != nil {
		t.Fatal(err)
	}
	if len(as) != 2 || as[0].Call != "1.d0.0" || as[1].Call != "1.d2.0" || !maps.Equal(revs, want) {
		t.Fatalf("listApprovals = %d records %v, revisions %v; want 1.d0.0 and 1.d2.0 with %v", len(as), as, revs, want)
	}

	wantMany := put(many, 1030)
	if _, err := lastPerSubject(ctx, br, "KV_"+messages.BucketApprovals, "$KV."+messages.BucketApprovals+"."+many+".>"); !errors.Is(err, errBatchIncomplete) {
		t.Fatalf("one batch direct get of 1030 records: %v, want errBatchIncomplete", err)
	}
	as, revs, err = listApprovals(ctx, br, js, many)
	if err != nil {
		t.Fatal(err)
	}
	if len(as) != 1030 || !maps.Equal(revs, wantMany) {
		t.Fatalf("listApprovals of 1030 records = %d records, %d revisions", len(as), len(revs))
	}
	for i, a := range as {
		if a.MissionID != many || !a.RequestedAt.Equal(time.Unix(int64(1000+i), 0)) {
			t.Fatalf("record %d = %+v, want mission %s requested at %d", i, a, many, 1000+i)
		}
	}
}

// A wake gives the number of its mission's last event only for the
// suspension it ends: a copy of an earlier suspension's wake, or a
// message without the headers, has the worker read the number.
func TestWokenEventNumberOnlyForItsSuspension(t *testing.T) {
	hdr := nats.Header{}
	hdr.Set(messages.HeaderWokenEvent, "7")
	hdr.Set(messages.HeaderWokenSuspension, "2")
	if n, ok := wokenEventNumber(hdr, 2); !ok || n != 7 {
		t.Errorf("the wake of suspension 2 at suspension 2: %d, %v; want 7, true", n, ok)
	}
	if _, ok := wokenEventNumber(hdr, 3); ok {
		t.Error("the wake of suspension 2 gave a number at suspension 3")
	}
	if _, ok := wokenEventNumber(nats.Header{}, 0); ok {
		t.Error("a message without the headers gave a number")
	}
	hdr.Set(messages.HeaderWokenEvent, "x")
	if _, ok := wokenEventNumber(hdr, 2); ok {
		t.Error("an unreadable number was taken")
	}
}

// The batch direct gets of a connection, made at once, each get their
// own answers on one subscription: it is made at the first get and kept,
// not one subscribed and unsubscribed per get.
func TestBatchDirectGetsShareOneSubscription(t *testing.T) {
	ctx, js, st := testStores(t)
	nc := js.Conn()
	ids := make([]string, 20)
	for i := range ids {
		ids[i] = messages.NewMissionID()
		for j := range i%3 + 1 {
			call := "1.d" + strconv.Itoa(j) + ".0"
			data, err := messages.Marshal(&messages.Approval{Version: messages.ApprovalVersion, MissionID: ids[i], Call: call,
				State: messages.ApprovalPending, Tool: "refund", Args: map[string]any{}, Turn: 1, Priority: messages.PriorityNormal})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := st.Approvals.Create(ctx, messages.ApprovalKey(ids[i], call), data); err != nil {
				t.Fatal(err)
			}
		}
	}
	before := nc.NumSubscriptions()
	br := newReplyMux(nc)
	errs := make(chan error, 5*len(ids))
	for range 5 {
		for i, id := range ids {
			go func() {
				as, _, err := listApprovals(ctx, br, js, id)
				if err == nil && len(as) != i%3+1 {
					err = errors.New("mission " + id + ": " + strconv.Itoa(len(as)) + " records, want " + strconv.Itoa(i%3+1))
				}
				for _, a := range as {
					if err == nil && a.MissionID != id {
						err = errors.New("mission " + id + " got a record of " + a.MissionID)
					}
				}
				errs <- err
			}()
		}
	}
	for range 5 * len(ids) {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	if n := nc.NumSubscriptions() - before; n != 1 {
		t.Errorf("%d batch direct gets left %d subscriptions, want the one they share", 5*len(ids), n)
	}
}

// A run's approval gate holds no table of call occurrences until a call
// needs approval: most runs never make one, and each held it while it
// waited on its model.
func TestApprovalGateHoldsNoCallTableUntilACall(t *testing.T) {
	w := &Worker{st: &Stores{}}
	em := &emitter{sub: "alice"}
	m := &messages.Mission{ID: messages.NewMissionID()}
	g := w.approvalGate(m, em, func(*messages.Approval) {})
	if g.next != nil {
		t.Fatal("a new gate holds a table of call occurrences")
	}
	if a, b := g.callID(1, "d"), g.callID(1, "d"); a != "1.d.0" || b != "1.d.1" {
		t.Fatalf("call ids %q, %q; want 1.d.0, 1.d.1", a, b)
	}
}

// A mission's run starts with no approval gate: its Toolbox makes the
// gate, with the mission's rules, at its first tool call, so a mission
// waiting on its model before it calls a tool holds none. The gate it
// makes suspends the run, as the one made before the run did.
func TestMissionMakesItsApprovalGateAtItsFirstToolCall(t *testing.T) {
	nc := embeddedConn(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client, err := NewClient(ctx, nc, ClientConfig{})
	if err != nil {
		t.Fatal(err)
	}
	type seen struct {
		before, after *approvalGate
		again         *approvalGate
		suspended     error
	}
	seenc := make(chan seen, 1)
	w, err := NewWorker(nc, WorkerConfig{
		ID: "gate", Slots: 1, Priorities: []string{messages.PriorityNormal},
		IdleWait: 100 * time.Millisecond,
		Runner: RunnerFunc(func(ctx context.Context, m *messages.Mission, env RunEnv) (*messages.Step, error) {
			var s seen
			s.before = env.Tools.gate.Load()
			s.after = env.Tools.approvals()
			s.again = env.Tools.approvals()
			if s.after != nil {
				s.after.suspend(&messages.Approval{MissionID: m.ID})
			}
			s.suspended = context.Cause(ctx)
			seenc <- s
			return &messages.Step{Return: "done"}, nil
		}),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Stop() })
	rules := []messages.ApprovalRule{{Tool: "refund"}}
	m := &messages.Mission{ID: messages.NewMissionID(), Kind: messages.KindAgent, Tools: []string{"refund"},
		Agent: &messages.AgentSpec{Prompt: "do it", Tools: []string{"refund"}}, Approval: &messages.ApprovalPolicy{Rules: rules}}
	if _, err := client.Submit(ctx, m); err != nil {
		t.Fatal(err)
	}
	var s seen
	select {
	case s = <-seenc:
	case <-ctx.Done():
		t.Fatal("the mission did not run")
	}
	if s.before != nil {
		t.Error("the run starts with an approval gate; want it made at the first tool call")
	}
	if s.after == nil || s.after.missionID != m.ID || len(s.after.mission) != 1 || s.after.mission[0].Tool != "refund" {
		t.Fatalf("the gate made at the first call: %+v; want the mission's, with its rule", s.after)
	}
	if s.again != s.after {
		t.Error("a second call made a second gate")
	}
	if !errors.Is(s.suspended, ErrSuspended) {
		t.Errorf("the gate's suspend left the run's cause %v; want it suspended", s.suspended)
	}
}

// flakyKV fails the first fails Creates with a timeout, writing nothing.
type flakyKV struct {
	jetstream.KeyValue
	fails *int
}

func (kv flakyKV) Create(ctx context.Context, key string, value []byte, opts ...jetstream.KVCreateOpt) (uint64, error) {
	if *kv.fails > 0 {
		*kv.fails--
		return 0, nats.ErrTimeout
	}
	return kv.KeyValue.Create(ctx, key, value, opts...)
}

// silentKV takes Creates and never answers them: each waits until its
// context ends, writing nothing.
type silentKV struct{ jetstream.KeyValue }

func (kv silentKV) Create(ctx context.Context, key string, value []byte, opts ...jetstream.KVCreateOpt) (uint64, error) {
	<-ctx.Done()
	return 0, ctx.Err()
}

// A store that takes a request and never answers it counts toward the
// gate's wait like one that fails: each request is bounded on its own,
// so the run is ended (unavailable) well within the run's context, which
// the program's time limit sets, rather than the call failing to the
// program once that context ends.
func TestApprovalGateBoundsEachRequest(t *testing.T) {
	_, _, st := testStores(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var ended []error
	g := &approvalGate{kv: silentKV{st.Approvals}, missionID: messages.NewMissionID(), priority: messages.PriorityNormal, timeout: time.Hour,
		mission: []messages.ApprovalRule{{Tool: "refund"}},
		suspend: func(*messages.Approval) { t.Error("suspended on a record never written") },
		emit:    func(*messages.Event) {}, now: time.Now, next: map[string]int{},
		wait: 200 * time.Millisecond, unavailable: func(err error) { ended = append(ended, err) }}
	args := map[string]any{"amount": int64(500)}
	_, _, err := g.check(ctx, ToolInfo{Service: "shop"}, "refund", args, args)
	if err == nil || len(ended) != 1 || ctx.Err() != nil {
		t.Fatalf("check = %v (ended %v, the run's context %v); want the run ended once, before its context ends", err, ended, ctx.Err())
	}
}

// A call whose approval store does not answer asks it again for the
// gate's wait: a store back within it records the call and the run
// suspends on it, the program never told; a store still silent at the
// end of it ends the run (unavailable, once) instead of failing the call
// to the program on every try.
func TestApprovalGateWaitsForTheStore(t *testing.T) {
	ctx, _, st := testStores(t)
	args := map[string]any{"amount": int64(500)}
	gate := func(kv jetstream.KeyValue, wait time.Duration, suspended *[]*messages.Approval, ended *[]error) *approvalGate {
		return &approvalGate{kv: kv, missionID: messages.NewMissionID(), priority: messages.PriorityNormal, timeout: time.Hour,
			mission: []messages.ApprovalRule{{Tool: "refund"}},
			suspend: func(a *messages.Approval) { *suspended = append(*suspended, a) },
			emit:    func(*messages.Event) {}, now: time.Now, next: map[string]int{},
			wait: wait, unavailable: func(err error) { *ended = append(*ended, err) }}
	}

	fails := 3
	var suspended []*messages.Approval
	var ended []error
	g := gate(flakyKV{st.Approvals, &fails}, 10*time.Second, &suspended, &ended)
	_, _, err := g.check(ctx, ToolInfo{Service: "shop"}, "refund", args, args)
	var se *suspendedError
	if !errors.As(err, &se) || len(suspended) != 1 || len(ended) != 0 || fails != 0 {
		t.Fatalf("check = %v (suspended %d, ended %v, %d failures left); want the run suspended once the store answered", err, len(suspended), ended, fails)
	}
	if _, _, err := getApproval(ctx, st.nc, nil, st.Approvals, messages.ApprovalKey(g.missionID, suspended[0].Call)); err != nil {
		t.Fatalf("record not stored: %v", err)
	}

	suspended, ended = nil, nil
	g = gate(refusingKV{st.Approvals}, 200*time.Millisecond, &suspended, &ended)
	start := time.Now()
	_, _, err = g.check(ctx, ToolInfo{Service: "shop"}, "refund", args, args)
	took := time.Since(start)
	if err == nil || len(suspended) != 0 || len(ended) != 1 || !errors.Is(ended[0], nats.ErrTimeout) {
		t.Fatalf("check = %v (suspended %d, ended %v); want the run ended once, with the store's error", err, len(suspended), ended)
	}
	if took < 200*time.Millisecond {
		t.Fatalf("the run ended after %v, before the gate's wait of 200ms", took)
	}
}
