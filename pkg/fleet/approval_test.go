package fleet_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/ptcfleet/ptc/pkg/fleet"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// shopTools is a tool service "shop" with lookup (no approval) and refund,
// whose owner asks for approval of refunds above 100.
type shopTools struct {
	mu      sync.Mutex
	lookups int
	refunds []map[string]any
	keys    []string
	at      map[string]time.Time // when a mission's refund reached the service
}

func (s *shopTools) arrived(id string) (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.at[id]
	return t, ok
}

func (s *shopTools) counts() (lookups int, refunds []map[string]any, keys []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lookups, append([]map[string]any(nil), s.refunds...), append([]string(nil), s.keys...)
}

func startShop(t testing.TB, nc *nats.Conn, dedup ...bool) *shopTools {
	t.Helper()
	cfg := fleet.ToolServiceConfig{Name: "shop"}
	if len(dedup) > 0 && dedup[0] {
		cfg.Dedup = &fleet.DedupConfig{TTL: time.Hour}
	}
	svc, err := fleet.NewToolService(nc, cfg)
	if err != nil {
		t.Fatal(err)
	}
	s := &shopTools{at: map[string]time.Time{}}
	if err := svc.Register("lookup", fleet.ToolSpec{Description: "an order"}, func(ctx context.Context, args map[string]any) (any, error) {
		s.mu.Lock()
		s.lookups++
		s.mu.Unlock()
		return map[string]any{"order": args["order"], "total": int64(300)}, nil
	}); err != nil {
		t.Fatal(err)
	}
	spec := fleet.ToolSpec{Description: "refund an order",
		Approval: &fleet.ToolApproval{When: &messages.ApprovalCond{Arg: "amount", Op: ">", Value: int64(100)}}}
	if err := svc.Register("refund", spec, func(ctx context.Context, args map[string]any) (any, error) {
		ci, _ := fleet.CallInfoFrom(ctx)
		s.mu.Lock()
		s.refunds = append(s.refunds, args)
		s.keys = append(s.keys, ci.IdempotencyKey)
		s.at[ci.MissionID] = time.Now()
		s.mu.Unlock()
		return map[string]any{"refunded": args["amount"]}, nil
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Stop(context.Background()) })
	return s
}

// refundRunner behaves as a program: it looks the order up, then refunds
// the context's amount, and returns what the refund answered (or its
// error's code and text).
func refundRunner(runs *sync.Map) fleet.RunnerFunc {
	return func(ctx context.Context, m *messages.Mission, env fleet.RunEnv) (*messages.Step, error) {
		if runs != nil {
			n, _ := runs.LoadOrStore(m.ID, new(int))
			*n.(*int)++
		}
		ctx = fleet.WithTurn(ctx, 1)
		if _, err := env.Tools.Call(ctx, "lookup", map[string]any{"order": "A-1"}); err != nil {
			return nil, err
		}
		res, err := env.Tools.Call(ctx, "refund", map[string]any{"order": "A-1", "amount": m.Context["amount"], "_card": "4242"})
		if ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		var te *fleet.ToolError
		if errors.As(err, &te) {
			return &messages.Step{Return: map[string]any{"code": te.Code, "error": te.Message}}, nil
		}
		if err != nil {
			return nil, err
		}
		return &messages.Step{Return: res}, nil
	}
}

func refundMission(amount int64) *messages.Mission {
	m := newMission("lookup", "refund")
	m.Context = map[string]any{"amount": amount}
	return m
}

// submitAwaiting submits m and returns its call's approval record once
// the mission awaits a decision.
func submitAwaiting(ctx context.Context, t testing.TB, c *fleet.Client, m *messages.Mission) *messages.Approval {
	t.Helper()
	if _, err := c.Submit(ctx, m); err != nil {
		t.Fatal(err)
	}
	return waitAwaiting(t, c, m.ID)
}

func waitAwaiting(t testing.TB, c *fleet.Client, id string) *messages.Approval {
	t.Helper()
	waitState(t, c, id, messages.StateAwaitingApproval)
	as, err := c.Approvals(testCtx(t), id)
	if err != nil || len(as) != 1 {
		t.Fatalf("approvals: %v, %v", as, err)
	}
	return as[0]
}

func TestApprovalSuspendsAndResumesWithEditedArgs(t *testing.T) {
	_, nc := runJetStream(t)
	shop := startShop(t, nc)
	c := newClient(t, nc)
	runs := &sync.Map{}
	// events wait for nothing but the hand-overs: the suspension publishes
	// approval_requested before the mission leaves the worker
	w := startWorker(t, nc, refundRunner(runs), func(cfg *fleet.WorkerConfig) { cfg.EventDelay = time.Minute })
	ctx := testCtx(t)

	m := refundMission(250)
	a := submitAwaiting(ctx, t, c, m)
	if a.State != messages.ApprovalPending || a.Tool != "refund" || a.Service != "shop" || a.Turn != 1 {
		t.Fatalf("approval = %+v", a)
	}
	if a.Args["_card"] != messages.FirewallMask || a.Args["amount"] != int64(250) {
		t.Fatalf("approval args = %v, want the amount and the card masked", a.Args)
	}
	if !strings.Contains(a.Rule, "service shop: amount > 100") {
		t.Fatalf("rule = %q", a.Rule)
	}
	// waiting holds nothing on the worker
	eventually(t, 10*time.Second, "slot released", func() bool { return w.Running() == 0 })
	if st := w.Stats(); st.Suspended != 1 {
		t.Fatalf("suspended = %d", st.Suspended)
	}
	if _, refunds, _ := shop.counts(); len(refunds) != 0 {
		t.Fatalf("refund ran before approval: %v", refunds)
	}
	evs, err := c.Events(ctx, m.ID)
	if err != nil {
		t.Fatal(err)
	}
	var req *messages.Event
	for _, e := range evs {
		if e.Kind == messages.EventApprovalRequested {
			req = e
		}
	}
	if req == nil || req.Tool != "refund" || req.CallID != a.Call || req.Args["_card"] != messages.FirewallMask {
		t.Fatalf("approval_requested event = %+v", req)
	}

	got, err := c.Decide(ctx, m.ID, fleet.Decision{Approve: true, By: "alice", Reason: "checked",
		Args: map[string]any{"order": "A-1", "amount": 200, "_card": messages.FirewallMask}})
	if err != nil {
		t.Fatal(err)
	}
	if got.State != messages.ApprovalApproved || got.DecidedBy != "alice" {
		t.Fatalf("decided = %+v", got)
	}
	step, err := c.Await(ctx, m.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !step.Ok() || step.Return.(map[string]any)["refunded"] != int64(200) {
		t.Fatalf("step = %+v %v", step.Return, step.Fail)
	}
	lookups, refunds, keys := shop.counts()
	if lookups != 1 {
		t.Fatalf("lookup ran %d times; the resumed run must replay it from the journal", lookups)
	}
	if len(refunds) != 1 || refunds[0]["amount"] != int64(200) || refunds[0]["_card"] != "4242" {
		t.Fatalf("refunds = %v, want one with the edited amount and the program's card", refunds)
	}
	if want := m.ID + "/approval/" + a.Call; keys[0] != want {
		t.Fatalf("idempotency key %q, want %q", keys[0], want)
	}
	if _, err := c.Decide(ctx, m.ID, fleet.Decision{Approve: true}); !errors.Is(err, fleet.ErrNoPendingCall) {
		t.Fatalf("second decision: %v", err)
	}
	n, _ := runs.Load(m.ID)
	if *n.(*int) != 2 {
		t.Fatalf("runs = %d, want 2 (suspended, resumed)", *n.(*int))
	}
	// the suspended run's batch, the decision's event and the resumed
	// run's batch number the events one after another, none twice
	eventsInOrder(ctx, t, c, m.ID, "approval_requested approval_decided started", true)
	// the resumed run read the journal with a consumer it deleted
	eventually(t, 5*time.Second, "journal consumer deleted", func() bool {
		info, err := c.Stores().Journal.Info(ctx)
		return err == nil && info.State.Consumers == 0
	})
	// the parked message and its schedule are gone
	eventually(t, 5*time.Second, "parked message removed", func() bool {
		info, err := c.Stores().Parked.Info(ctx, jetstream.WithSubjectFilter("mission.park*."+m.ID))
		return err == nil && len(info.State.Subjects) == 0
	})
}

func TestApprovalBelowTheRuleRunsAtOnce(t *testing.T) {
	_, nc := runJetStream(t)
	shop := startShop(t, nc)
	c := newClient(t, nc)
	startWorker(t, nc, refundRunner(nil))
	step, err := c.Run(testCtx(t), refundMission(50))
	if err != nil || !step.Ok() {
		t.Fatalf("step %+v, %v", step, err)
	}
	if _, refunds, _ := shop.counts(); len(refunds) != 1 {
		t.Fatalf("refunds = %v", refunds)
	}
}

func TestApprovalDeniedIsAToolError(t *testing.T) {
	_, nc := runJetStream(t)
	shop := startShop(t, nc)
	c := newClient(t, nc)
	startWorker(t, nc, refundRunner(nil))
	ctx := testCtx(t)
	m := refundMission(500)
	submitAwaiting(ctx, t, c, m)
	if _, err := c.Decide(ctx, m.ID, fleet.Decision{By: "bob", Reason: "too large"}); err != nil {
		t.Fatal(err)
	}
	step, err := c.Await(ctx, m.ID)
	if err != nil {
		t.Fatal(err)
	}
	ret := step.Return.(map[string]any)
	if ret["code"] != messages.ToolErrDenied || ret["error"] != "denied by bob: too large" {
		t.Fatalf("return = %v", ret)
	}
	if _, refunds, _ := shop.counts(); len(refunds) != 0 {
		t.Fatalf("a denied call ran: %v", refunds)
	}
}

func TestApprovalDeadlineDenies(t *testing.T) {
	_, nc := runJetStream(t)
	shop := startShop(t, nc)
	c := newClient(t, nc)
	startWorker(t, nc, refundRunner(nil))
	ctx := testCtx(t)
	m := refundMission(500)
	m.Approval = &messages.ApprovalPolicy{Timeout: time.Second}
	submitAwaiting(ctx, t, c, m)
	step, err := c.Await(ctx, m.ID)
	if err != nil {
		t.Fatal(err)
	}
	ret := step.Return.(map[string]any)
	if ret["code"] != messages.ToolErrDenied || !strings.Contains(ret["error"].(string), messages.ReasonApprovalTimeout) {
		t.Fatalf("return = %v", ret)
	}
	if _, refunds, _ := shop.counts(); len(refunds) != 0 {
		t.Fatalf("a timed-out call ran: %v", refunds)
	}
	as, _ := c.Approvals(ctx, m.ID)
	if len(as) != 1 || as[0].Reason != messages.ReasonApprovalTimeout || as[0].DecidedBy != "fleet" {
		t.Fatalf("approvals = %+v", as)
	}
}

// A decider that dies between recording its decision and queueing the
// mission (here: the record is approved in the bucket and nothing else
// happens) leaves the mission to its deadline: the schedule queues it
// then, and the resumed run finds the approval and runs the call once,
// not denied for the timeout.
func TestApprovalDecidedButNotQueuedResumesAtTheDeadline(t *testing.T) {
	_, nc := runJetStream(t)
	shop := startShop(t, nc, true)
	c := newClient(t, nc)
	w := startWorker(t, nc, refundRunner(nil))
	ctx := testCtx(t)
	m := refundMission(500)
	// long enough that the decision is recorded before the deadline also
	// on a loaded machine (a suspension can take a second or more there)
	m.Approval = &messages.ApprovalPolicy{Timeout: 5 * time.Second}
	a := submitAwaiting(ctx, t, c, m)
	approveParkedWithoutWake(ctx, t, c, w, 1, m.ID, a)
	decided := time.Now()
	if !decided.Before(a.Deadline) {
		t.Fatalf("the decision was recorded at %s, after the deadline %s", decided, a.Deadline)
	}
	step, err := c.Await(ctx, m.ID)
	if err != nil || !step.Ok() {
		t.Fatalf("step %+v, %v", step, err)
	}
	if ret, _ := step.Return.(map[string]any); ret["refunded"] != int64(500) {
		t.Fatalf("return = %v, want the refund run", step.Return)
	}
	at, ok := shop.arrived(m.ID)
	if _, refunds, _ := shop.counts(); !ok || len(refunds) != 1 {
		t.Fatalf("refunds run: %v", refunds)
	}
	if at.Before(a.Deadline) {
		t.Errorf("the call ran at %s, before the deadline %s: something else queued the mission", at, a.Deadline)
	}
	t.Logf("resumed by the deadline's schedule %s after the decision", at.Sub(decided).Round(time.Millisecond))
}

// approveParkedWithoutWake records a's call of mission id as approved
// the way a decider whose wake was lost leaves it (approveWithoutWake),
// once w, the mission's worker, has counted suspended missions of its
// own: it looked for a decision after parking each, so no worker finds
// this one on its own.
func approveParkedWithoutWake(ctx context.Context, t *testing.T, c *fleet.Client, w *fleet.Worker, suspended int64, id string, a *messages.Approval) {
	t.Helper()
	eventually(t, 30*time.Second, "the worker settled its suspensions", func() bool { return w.Stats().Suspended >= suspended })
	approveWithoutWake(ctx, t, c, id, a)
}

// approveWithoutWake records a's call of mission id as approved the way a
// decider whose wake was lost leaves it: in the approval record only.
func approveWithoutWake(ctx context.Context, t *testing.T, c *fleet.Client, id string, a *messages.Approval) {
	t.Helper()
	kv := c.Stores().Approvals
	key := messages.ApprovalKey(id, a.Call)
	e, err := kv.Get(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	a.State, a.DecidedBy, a.DecidedAt = messages.ApprovalApproved, "lost-decider", time.Now().UTC()
	data, err := messages.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Update(ctx, key, data, e.Revision()); err != nil {
		t.Fatal(err)
	}
}

// A decision whose wake was lost leaves its mission waiting until the
// deadline; deciding again (the command run again after its error, with
// the call the listing names or none) queues it at once: the call runs
// once, with the recorded decision.
func TestApprovalDecidingAgainQueuesAMissionWhoseWakeWasLost(t *testing.T) {
	for _, named := range []bool{false, true} {
		t.Run(map[bool]string{false: "no call named", true: "the call named"}[named], func(t *testing.T) {
			decidingAgainQueuesAMissionWhoseWakeWasLost(t, named)
		})
	}
}

func decidingAgainQueuesAMissionWhoseWakeWasLost(t *testing.T, named bool) {
	_, nc := runJetStream(t)
	shop := startShop(t, nc, true)
	c := newClient(t, nc)
	w := startWorker(t, nc, refundRunner(nil))
	ctx := testCtx(t)
	m := refundMission(500)
	a := submitAwaiting(ctx, t, c, m) // the deadline: the worker's 24 h
	approveParkedWithoutWake(ctx, t, c, w, 1, m.ID, a)
	again := fleet.Decision{Approve: true, By: "again"}
	if named {
		again.Call = a.Call
	}
	_, err := c.Decide(ctx, m.ID, again)
	if !errors.Is(err, fleet.ErrNoPendingCall) || !errors.Is(err, fleet.ErrQueuedAgain) {
		t.Fatalf("deciding again: %v", err)
	}
	actx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	step, err := c.Await(actx, m.ID)
	if err != nil || !step.Ok() {
		t.Fatalf("step %+v, %v", step, err)
	}
	if _, refunds, _ := shop.counts(); len(refunds) != 1 {
		t.Fatalf("refunds run: %v", refunds)
	}
	as, err := c.Approvals(ctx, m.ID)
	if err != nil || len(as) != 1 || as[0].DecidedBy != "lost-decider" {
		t.Fatalf("approvals: %+v %v", as, err)
	}
	// a finished mission is not queued again
	if _, err := c.Decide(ctx, m.ID, again); !errors.Is(err, fleet.ErrNoPendingCall) || errors.Is(err, fleet.ErrQueuedAgain) {
		t.Fatalf("deciding a finished mission: %v", err)
	}
}

// A decision recorded while its mission's worker parks the mission finds
// no parked message to queue, and leaves the wake to that worker: once
// parked, it reads the decision and queues the mission itself, straight
// into MISSIONS (Ptc-Woken, Msg-Id "<id>/wake/..."), none through PARKED.
// The mission resumes and its call runs once.
func TestApprovalDecidedWhileParkingIsQueuedByItsWorker(t *testing.T) {
	srv, nc := runJetStream(t)
	shop := startShop(t, nc, true)
	c := newClient(t, nc)
	ctx := testCtx(t)
	w, err := fleet.NewWorker(connect(t, srv), fleet.WorkerConfig{ID: "parker", Runner: refundRunner(nil), Slots: 2,
		Priorities: []string{messages.PriorityNormal}, Store: testStore, IdleWait: 200 * time.Millisecond, ToolTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	fleet.OnApprovalParked(w, func(id string) {
		as, err := c.Approvals(ctx, id)
		if err != nil || len(as) != 1 {
			t.Errorf("approvals of the parked mission: %v %v", as, err)
			return
		}
		approveWithoutWake(ctx, t, c, id, as[0])
	})
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Stop() })
	m := refundMission(500)
	woken, err := nc.SubscribeSync(messages.WokenSubject(c.Submitter(), messages.PriorityNormal, m.ID))
	if err != nil {
		t.Fatal(err)
	}
	parked, err := nc.SubscribeSync(messages.WakeSubject(c.Submitter(), messages.PriorityNormal, m.ID))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Submit(ctx, m); err != nil {
		t.Fatal(err)
	}
	if step, err := c.Await(ctx, m.ID); err != nil || !step.Ok() {
		t.Fatalf("step %+v, %v", step, err)
	}
	raw, err := woken.NextMsg(time.Second)
	if err != nil || !strings.HasPrefix(raw.Header.Get(jetstream.MsgIDHeader), m.ID+"/wake/") || raw.Header.Get(messages.HeaderWoken) == "" {
		t.Fatalf("the worker's wake into MISSIONS: %v %v", raw, err)
	}
	if raw, err := parked.NextMsg(100 * time.Millisecond); err == nil {
		t.Errorf("a wake through PARKED too: %v", raw.Header)
	}
	if _, refunds, _ := shop.counts(); len(refunds) != 1 {
		t.Fatalf("refunds run: %v", refunds)
	}
}

func TestApprovalRulesOfMissionAndWorker(t *testing.T) {
	_, nc := runJetStream(t)
	startShop(t, nc)
	c := newClient(t, nc)
	startWorker(t, nc, refundRunner(nil), func(cfg *fleet.WorkerConfig) {
		cfg.ApprovalRules = []messages.ApprovalRule{{Service: "shop", When: &messages.ApprovalCond{Arg: "order", Op: "=", Value: "B-7"}}}
	})
	ctx := testCtx(t)

	// the mission's rule: every lookup
	m := refundMission(5)
	m.Approval = &messages.ApprovalPolicy{Rules: []messages.ApprovalRule{{Tool: "lookup"}}}
	if _, err := c.Submit(ctx, m); err != nil {
		t.Fatal(err)
	}
	if a := waitAwaiting(t, c, m.ID); a.Tool != "lookup" || a.Rule != "mission: every call" {
		t.Fatalf("approval = %+v", a)
	}
	// Cancel of a waiting mission ends it at once.
	if err := c.Cancel(ctx, m.ID, "no longer needed"); err != nil {
		t.Fatal(err)
	}
	step, err := c.Await(ctx, m.ID)
	if err != nil || step.Fail == nil || step.Fail.Reason != fleet.ReasonCancelled {
		t.Fatalf("step %+v, %v", step, err)
	}
	if err := (&messages.ApprovalRule{}).Validate("r"); err == nil {
		t.Fatal("a rule naming neither tool nor service validated")
	}
	bad := refundMission(5)
	bad.Approval = &messages.ApprovalPolicy{Rules: []messages.ApprovalRule{{Tool: "refund", When: &messages.ApprovalCond{Arg: "amount", Op: "~", Value: 1}}}}
	if _, err := c.Submit(ctx, bad); err == nil || !strings.Contains(err.Error(), "mission.approval.rules[0].when.op") {
		t.Fatalf("submit of a bad rule: %v", err)
	}
}

// A status changed under the run (here rewritten as it is, as a cancel
// flag or an operator would) is still set to awaiting_approval when the
// run suspends, so the decision's wake is not dropped as a duplicate.
func TestApprovalSuspendsWhenTheStatusChangedUnderTheRun(t *testing.T) {
	_, nc := runJetStream(t)
	startShop(t, nc)
	c := newClient(t, nc)
	inner := refundRunner(nil)
	startWorker(t, nc, fleet.RunnerFunc(func(ctx context.Context, m *messages.Mission, env fleet.RunEnv) (*messages.Step, error) {
		if st, err := c.Status(ctx, m.ID); err == nil && env.Attempt == 1 {
			key := messages.StatusKey(st.Submitter, m.ID)
			if e, err := c.Stores().Status.Get(ctx, key); err == nil {
				if _, err := c.Stores().Status.Put(ctx, key, e.Value()); err != nil {
					return nil, err
				}
			}
		}
		return inner(ctx, m, env)
	}))
	ctx := testCtx(t)
	m := refundMission(500)
	submitAwaiting(ctx, t, c, m)
	if _, err := c.Decide(ctx, m.ID, fleet.Decision{Approve: true, By: strings.Repeat("x", messages.MaxApprovalReason+1)}); err == nil {
		t.Fatal("a decider's name over the bound accepted")
	}
	if _, err := c.Decide(ctx, m.ID, fleet.Decision{Approve: true, By: "erin"}); err != nil {
		t.Fatal(err)
	}
	if step, err := c.Await(ctx, m.ID); err != nil || !step.Ok() {
		t.Fatalf("step %+v, %v", step, err)
	}
}

// A call's record names the mission's submitter, so a decision needs no
// read of the status; a record without it (written before records named
// it) is decided with the submitter read from the status, and the
// mission resumes as usual.
func TestApprovalRecordWithoutSubmitterIsDecided(t *testing.T) {
	_, nc := runJetStream(t)
	shop := startShop(t, nc)
	c := newClient(t, nc)
	startWorker(t, nc, refundRunner(nil))
	ctx := testCtx(t)

	m := refundMission(250)
	a := submitAwaiting(ctx, t, c, m)
	st, err := c.Status(ctx, m.ID)
	if err != nil {
		t.Fatal(err)
	}
	if a.Submitter == "" || a.Submitter != st.Submitter {
		t.Fatalf("record's submitter %q, the status's %q", a.Submitter, st.Submitter)
	}
	key := messages.ApprovalKey(m.ID, a.Call)
	e, err := c.Stores().Approvals.Get(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	a.Submitter = ""
	data, err := messages.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Stores().Approvals.Update(ctx, key, data, e.Revision()); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Decide(ctx, m.ID, fleet.Decision{Approve: true, By: "alice"}); err != nil {
		t.Fatal(err)
	}
	step, err := c.Await(ctx, m.ID)
	if err != nil || !step.Ok() || step.Return.(map[string]any)["refunded"] != int64(250) {
		t.Fatalf("step = %+v, %v", step, err)
	}
	if _, refunds, _ := shop.counts(); len(refunds) != 1 {
		t.Fatalf("refunds = %v, want one", refunds)
	}
	eventsInOrder(ctx, t, c, m.ID, "approval_requested approval_decided started", false)
}

// Two calls of one suspension decided one after the other: the first
// decision numbers its event after the number the parked message gives,
// with no read of EVENTS; the second, finding the first decided since
// the park, numbers its own after the last one stored, so no number is
// given twice.
func TestApprovalDecisionsOfOneSuspensionNumberTheirEventsOnce(t *testing.T) {
	s, nc := runJetStream(t)
	startShop(t, nc, true)
	c := newClient(t, nc)
	w := startWorker(t, nc, refundRunner(nil))
	ctx := testCtx(t)
	m := refundMission(500)
	a := submitAwaiting(ctx, t, c, m)
	// no worker takes the woken mission until both are decided
	if err := w.Stop(); err != nil {
		t.Fatal(err)
	}
	// a second call of the same suspension, pending too
	b := *a
	b.Call, b.Args = a.Call[:strings.LastIndexByte(a.Call, '.')]+".9", map[string]any{"order": "B-2"}
	data, err := messages.Marshal(&b)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Stores().Approvals.Create(ctx, messages.ApprovalKey(m.ID, b.Call), data); err != nil {
		t.Fatal(err)
	}
	// the suspension's events are published on core NATS before its
	// status is written, and EVENTS may store them after the status
	// reads awaiting_approval: count them once approval_requested, the
	// suspension's last, is stored
	eventually(t, 5*time.Second, "the suspension's events stored", func() bool {
		evs, err := c.Events(ctx, m.ID)
		return err == nil && len(evs) > 0 && evs[len(evs)-1].Kind == messages.EventApprovalRequested
	})
	before := storedEventCount(t, c, m.ID)
	spy := spyAPI(t, connect(t, s))
	spy.watch(t, m.ID)
	if _, err := c.Decide(ctx, m.ID, fleet.Decision{Call: a.Call, Approve: true, By: "ann"}); err != nil {
		t.Fatal(err)
	}
	if n := spy.count(t, "$JS.API.DIRECT.GET."+messages.StreamEvents) + spy.count(t, "$JS.API.STREAM.MSG.GET."+messages.StreamEvents); n != 0 {
		t.Errorf("the first decision read EVENTS %d times, want none (the parked message numbers its event)", n)
	}
	eventually(t, 5*time.Second, "the first decision's event stored", func() bool { return storedEventCount(t, c, m.ID) == before+1 })
	if _, err := c.Decide(ctx, m.ID, fleet.Decision{Call: b.Call, Approve: false, By: "bob"}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, "the second decision's event stored", func() bool { return storedEventCount(t, c, m.ID) == before+2 })
	startWorker(t, nc, refundRunner(nil))
	step, err := c.Await(ctx, m.ID)
	if err != nil || !step.Ok() {
		t.Fatalf("step %+v, %v", step, err)
	}
	// every number once, from 1, none missing
	eventsInOrder(ctx, t, c, m.ID, "approval_requested approval_decided approval_decided started", true)
}

// eventsInOrder reads mission id's events and fails t unless their kinds
// hold seq, one after another; with final, unless the last is the final
// event and every stored event was read (each number once, none missing).
func eventsInOrder(ctx context.Context, t *testing.T, c *fleet.Client, id, seq string, final bool) []*messages.Event {
	t.Helper()
	evs, err := c.Events(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, e := range evs {
		kinds = append(kinds, e.Kind)
	}
	k := strings.Join(kinds, " ")
	if !strings.Contains(k, seq) || (final && !strings.HasSuffix(k, "final")) {
		t.Fatalf("events %s, want %s in order", k, seq)
	}
	if final {
		if got := storedEventCount(t, c, id); got != len(evs) {
			t.Fatalf("%d events stored, %d read", got, len(evs))
		}
	}
	return evs
}

// A mission an earlier release parked, its message on mission.parked.<id>
// and an empty schedule on mission.park.<id> copying it, is woken by a
// decision as one parked with its schedule carrying it.
func TestApprovalDecisionWakesAMissionParkedByAnEarlierRelease(t *testing.T) {
	_, nc := runJetStream(t)
	shop := startShop(t, nc, true)
	c := newClient(t, nc)
	startWorker(t, nc, refundRunner(nil))
	ctx := testCtx(t)
	m := refundMission(500)
	a := submitAwaiting(ctx, t, c, m)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := c.Stores().Parked.GetLastMsgForSubject(ctx, messages.ParkSubject(m.ID))
	if err != nil {
		t.Fatal(err)
	}
	old := &nats.Msg{Subject: messages.ParkedSubject(m.ID), Data: raw.Data, Header: nats.Header{}}
	for _, h := range []string{messages.HeaderMissionID, messages.HeaderContentType} {
		old.Header.Set(h, raw.Header.Get(h))
	}
	old.Header.Set(jetstream.MsgRollup, jetstream.MsgRollupSubject)
	old.Header.Set(jetstream.MsgTTLHeader, "1h")
	if _, err := js.PublishMsg(ctx, old); err != nil {
		t.Fatal(err)
	}
	sched := &nats.Msg{Subject: messages.ParkSubject(m.ID), Header: nats.Header{}}
	sched.Header.Set(messages.HeaderMissionID, m.ID)
	for _, h := range []string{"Nats-Schedule", "Nats-Schedule-Target", "Nats-Schedule-TTL"} {
		sched.Header.Set(h, raw.Header.Get(h))
	}
	sched.Header.Set("Nats-Schedule-Source", messages.ParkedSubject(m.ID))
	if _, err := js.PublishMsg(ctx, sched); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Decide(ctx, m.ID, fleet.Decision{Call: a.Call, Approve: true, By: "ann"}); err != nil {
		t.Fatal(err)
	}
	actx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	step, err := c.Await(actx, m.ID)
	if err != nil || !step.Ok() {
		t.Fatalf("step %+v, %v", step, err)
	}
	if _, refunds, _ := shop.counts(); len(refunds) != 1 {
		t.Fatalf("refunds run: %v", refunds)
	}
}

// logHook calls on, on the goroutine that logs, for each log line that
// holds match: a test acts at the moment a worker logs something.
type logHook struct {
	match string
	on    func()
}

func (h logHook) Write(p []byte) (int, error) {
	if strings.Contains(string(p), h.match) {
		h.on()
	}
	return len(p), nil
}

// A run that suspends for an approval while the status store refuses
// writes leaves its message unacknowledged: as long as the status says
// running, a decision's wake (or the deadline's) is dropped as a
// duplicate submission, so an acknowledged message would leave the
// mission with no run for ever. The message comes back, the redelivered
// run suspends again at the same call, and once approved the mission
// resumes and its call runs once.
func TestApprovalSuspendedWhileTheStatusStoreRefusesWrites(t *testing.T) {
	_, nc := runJetStream(t)
	shop := startShop(t, nc, true)
	c := newClient(t, nc)
	ctx := testCtx(t)
	// the status bucket's stream refuses every write while its largest
	// message is one byte
	maxMsgSize, stored := streamMaxMsgSize(ctx, t, nc, "KV_"+c.Stores().Status.Bucket())
	var refused atomic.Int32
	log := zerolog.New(logHook{match: "status not set to awaiting_approval", on: func() {
		// the suspension's status writes failed: the store takes
		// writes again before the worker goes on
		if refused.Add(1) == 1 {
			maxMsgSize(stored)
		}
	}}).Level(zerolog.WarnLevel)
	inner := refundRunner(nil)
	var first atomic.Bool
	startWorker(t, nc, fleet.RunnerFunc(func(ctx context.Context, m *messages.Mission, env fleet.RunEnv) (*messages.Step, error) {
		if first.CompareAndSwap(false, true) {
			maxMsgSize(1) // the first run's suspension cannot write the status
		}
		return inner(ctx, m, env)
	}), func(c *fleet.WorkerConfig) { c.Logger = &log })
	m := refundMission(500)
	if _, err := c.Submit(ctx, m); err != nil {
		t.Fatal(err)
	}
	a := waitAwaiting(t, c, m.ID)
	if refused.Load() == 0 {
		t.Fatal("the suspension's status write was not refused")
	}
	st, err := c.Status(ctx, m.ID)
	if err != nil || st.Attempt != 2 || st.Suspensions != 1 {
		t.Fatalf("status %+v, %v; want the mission suspended once, by its second delivery", st, err)
	}
	if _, err := c.Decide(ctx, m.ID, fleet.Decision{Approve: true, Call: a.Call, By: "erin"}); err != nil {
		t.Fatal(err)
	}
	actx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	step, err := c.Await(actx, m.ID)
	if err != nil || !step.Ok() {
		t.Fatalf("step %+v, %v", step, err)
	}
	if _, refunds, keys := shop.counts(); len(refunds) != 1 || keys[0] != m.ID+"/approval/"+a.Call {
		t.Fatalf("refunds %v with keys %v, want one with the approval's key", refunds, keys)
	}
}

// A call that needs approval while the approval store refuses every write
// for longer than the worker's ToolUnavailableWait ends its run as a
// retryable failure, and the program never sees the store's error: told
// "try again later", a model spends a turn on each try and a mission its
// turns (max_turns_exceeded with its call never made). The mission comes
// back, its next run asks the store again, suspends at the call, and once
// approved the call runs once with the program's arguments.
func TestApprovalStoreOutageEndsTheRunNotTheCall(t *testing.T) {
	_, nc := runJetStream(t)
	shop := startShop(t, nc, true)
	c := newClient(t, nc)
	ctx := testCtx(t)
	// the approvals bucket's stream refuses every write while its
	// largest message is one byte
	maxMsgSize, stored := streamMaxMsgSize(ctx, t, nc, "KV_"+c.Stores().Approvals.Bucket())
	var handedBack atomic.Int32
	log := zerolog.New(logHook{match: "retryable failure; handing back", on: func() {
		// the run ended on the store's silence: the store takes writes
		// again before the mission comes back
		if handedBack.Add(1) == 1 {
			maxMsgSize(stored)
		}
	}}).Level(zerolog.WarnLevel)
	inner := refundRunner(nil)
	var first atomic.Bool
	var results sync.Map // what each attempt's program got from the refund
	startWorker(t, nc, fleet.RunnerFunc(func(ctx context.Context, m *messages.Mission, env fleet.RunEnv) (*messages.Step, error) {
		if first.CompareAndSwap(false, true) {
			maxMsgSize(1)
		}
		step, err := inner(ctx, m, env)
		if step != nil {
			results.Store(env.Attempt, step.Return)
		}
		return step, err
	}), func(c *fleet.WorkerConfig) {
		c.Logger = &log
		c.ToolUnavailableWait = 300 * time.Millisecond
	})
	m := refundMission(500)
	if _, err := c.Submit(ctx, m); err != nil {
		t.Fatal(err)
	}
	a := waitAwaiting(t, c, m.ID)
	if handedBack.Load() == 0 {
		t.Fatal("the run was not handed back")
	}
	results.Range(func(attempt, ret any) bool {
		t.Errorf("attempt %v's program got %v from the refund before the decision", attempt, ret)
		return true
	})
	if st, err := c.Status(ctx, m.ID); err != nil || st.Attempt != 2 {
		t.Fatalf("status %+v, %v; want the mission suspended by its second delivery", st, err)
	}
	if _, err := c.Decide(ctx, m.ID, fleet.Decision{Approve: true, Call: a.Call, By: "erin"}); err != nil {
		t.Fatal(err)
	}
	actx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	step, err := c.Await(actx, m.ID)
	if err != nil || !step.Ok() {
		t.Fatalf("step %+v, %v", step, err)
	}
	if got, _ := step.Return.(map[string]any); got["refunded"] != int64(500) {
		t.Fatalf("return %v, want the refund's answer", step.Return)
	}
	if _, refunds, keys := shop.counts(); len(refunds) != 1 || keys[0] != m.ID+"/approval/"+a.Call {
		t.Fatalf("refunds %v with keys %v, want one with the approval's key", refunds, keys)
	}
}

// streamMaxMsgSize returns a function that sets the largest message the
// stream name takes (1 byte: it refuses every write), and the size it
// had: set back, the stream takes writes again.
func streamMaxMsgSize(ctx context.Context, t *testing.T, nc *nats.Conn, name string) (set func(int32), stored int32) {
	t.Helper()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	stream, err := js.Stream(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	cfg := stream.CachedInfo().Config
	return func(n int32) {
		c := cfg
		c.MaxMsgSize = n
		if _, err := js.UpdateStream(context.Background(), c); err != nil {
			t.Error(err)
		}
	}, cfg.MaxMsgSize
}
