package fleet_test

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ptcfleet/ptc/pkg/fleet"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// DecidePending decides, in one call, the waiting calls a filter
// selects, the longest waiting first: each selected mission resumes and
// its call runs once (or fails with the denial); the calls it does not
// select (another submitter's, an argument over the bound, an argument
// the bound cannot judge, beyond Max) stay waiting.
func TestDecidePendingDecidesTheSelectedCalls(t *testing.T) {
	_, nc := runJetStream(t)
	shop := startShop(t, nc, true)
	startWorker(t, nc, refundRunner(nil))
	ctx := testCtx(t)
	alice, bob, approver := submitterClient(t, nc, "alice"), submitterClient(t, nc, "bob"), approverClient(t, nc)

	// refunds above 100 wait; "lots" cannot be compared with a number,
	// so it waits too (a rule errs on the side of asking)
	amounts := []any{int64(150), int64(900), int64(250), "lots", int64(500), int64(120)}
	owners := []*fleet.Client{alice, alice, alice, alice, alice, bob}
	var ids []string
	for i, amount := range amounts {
		m := newMission("lookup", "refund")
		m.Context = map[string]any{"amount": amount}
		submitAwaiting(ctx, t, owners[i], m)
		ids = append(ids, m.ID)
	}
	missions := func(out []fleet.DecideOutcome) []string {
		var s []string
		for _, o := range out {
			s = append(s, o.Call.MissionID)
		}
		return s
	}

	// alice's refunds of at most 300: not bob's, not "lots"; listed
	// first, as a person checks before deciding
	small := fleet.PendingFilter{Tool: "refund", Submitter: "alice", When: &messages.ApprovalCond{Arg: "amount", Op: "<=", Value: int64(300)}}
	listed, err := approver.SelectPending(ctx, small)
	if err != nil || len(listed) != 2 || listed[0].MissionID != ids[0] || listed[1].MissionID != ids[2] {
		t.Fatalf("selected %v, %v; want [%s %s]", listed, err, ids[0], ids[2])
	}
	// a listing of them: the first, and how many
	if first, n, err := approver.ListPending(ctx, small, 1); err != nil || n != 2 || len(first) != 1 || first[0].MissionID != ids[0] {
		t.Fatalf("listed %v of %d, %v; want [%s] of 2", first, n, err, ids[0])
	}
	out, err := approver.DecidePending(ctx, small, fleet.Decision{Approve: true, By: "ann"})
	if err != nil || !slices.Equal(missions(out), []string{ids[0], ids[2]}) {
		t.Fatalf("approved %v, %v; want [%s %s], the longest waiting first", missions(out), err, ids[0], ids[2])
	}
	for _, o := range out {
		if o.Err != nil || o.Decided == nil || o.Decided.State != messages.ApprovalApproved || o.Decided.DecidedBy != "ann" || o.Decided.Call != o.Call.Call {
			t.Fatalf("outcome %+v: want the call approved by ann", o)
		}
		step, err := alice.Await(ctx, o.Call.MissionID)
		if err != nil || !step.Ok() || step.Return.(map[string]any)["refunded"] != o.Call.Args["amount"] {
			t.Fatalf("approved mission %s: %+v %v", o.Call.MissionID, step, err)
		}
	}
	_, refunds, _ := shop.counts()
	if len(refunds) != 2 {
		t.Fatalf("refunds run: %v, want the 2 approved", refunds)
	}

	// the longest waiting of the rest, whatever its arguments
	out, err = approver.DecidePending(ctx, fleet.PendingFilter{Max: 1}, fleet.Decision{Reason: "too much", By: "ann"})
	if err != nil || !slices.Equal(missions(out), []string{ids[1]}) || out[0].Err != nil || out[0].Decided.State != messages.ApprovalDenied {
		t.Fatalf("denied %v (%+v), %v; want [%s] denied", missions(out), out, err, ids[1])
	}
	step, err := alice.Await(ctx, ids[1])
	if err != nil || step.Return.(map[string]any)["code"] != "denied" || !strings.Contains(step.Return.(map[string]any)["error"].(string), "too much") {
		t.Fatalf("denied mission: %+v %v", step, err)
	}

	// nothing selected: no decision
	if out, err := approver.DecidePending(ctx, fleet.PendingFilter{Tool: "lookup"}, fleet.Decision{Approve: true, By: "ann"}); err != nil || len(out) != 0 {
		t.Fatalf("a filter selecting no call decided %v, %v", missions(out), err)
	}
	// a submitter's client decides only what it lists: bob's own call
	out, err = bob.DecidePending(ctx, fleet.PendingFilter{}, fleet.Decision{Approve: true, By: "bob"})
	if err != nil || !slices.Equal(missions(out), []string{ids[5]}) || out[0].Err != nil {
		t.Fatalf("bob's batch: %v (%+v), %v; want his own call only", missions(out), out, err)
	}
	if _, err := bob.Await(ctx, ids[5]); err != nil {
		t.Fatal(err)
	}
	as, n, err := approver.PendingApprovals(ctx, 0)
	if err != nil || n != 2 || as[0].MissionID != ids[3] || as[1].MissionID != ids[4] {
		t.Fatalf("still waiting: %d, %v; want %s (lots) and %s (500)", n, err, ids[3], ids[4])
	}
	if _, refunds, _ := shop.counts(); len(refunds) != 3 {
		t.Fatalf("refunds run: %v, want the 3 approved", refunds)
	}
	// a mission cancelled while it waited keeps its record pending: a
	// batch leaves it out
	if err := alice.Cancel(ctx, ids[4], "not needed"); err != nil {
		t.Fatal(err)
	}
	waitState(t, alice, ids[4], messages.StateCancelled)
	out, err = approver.DecidePending(ctx, fleet.PendingFilter{}, fleet.Decision{Reason: "no", By: "ann"})
	if err != nil || !slices.Equal(missions(out), []string{ids[3]}) || out[0].Err != nil {
		t.Fatalf("after a cancel: %v (%+v), %v; want [%s] denied", missions(out), out, err, ids[3])
	}
	if as, err := alice.Approvals(ctx, ids[4]); err != nil || len(as) != 1 || as[0].State != messages.ApprovalPending {
		t.Fatalf("the cancelled mission's record: %+v %v; want it left pending", as, err)
	}
}

// DecidePending refuses, before it decides anything, a decision that
// names a call or edits arguments, and a filter it cannot apply; each
// error names what is wrong.
func TestDecidePendingRefusesBadInput(t *testing.T) {
	_, nc := runJetStream(t)
	shop := startShop(t, nc)
	startWorker(t, nc, refundRunner(nil))
	ctx := testCtx(t)
	c := approverClient(t, nc)
	id := submitAwaiting(ctx, t, c, refundMission(250)).MissionID
	for _, tc := range []struct {
		f    fleet.PendingFilter
		d    fleet.Decision
		want string
	}{
		{fleet.PendingFilter{}, fleet.Decision{Approve: true, Call: "1."}, "names no call"},
		{fleet.PendingFilter{}, fleet.Decision{Approve: true, Args: map[string]any{"amount": 1}}, "edits no arguments"},
		{fleet.PendingFilter{}, fleet.Decision{Reason: strings.Repeat("x", messages.MaxApprovalReason+1)}, "reason or decider is over"},
		{fleet.PendingFilter{Tool: "no such tool"}, fleet.Decision{}, `tool: "no such tool" is not a valid tool name`},
		{fleet.PendingFilter{Service: "a b"}, fleet.Decision{}, `service: "a b"`},
		{fleet.PendingFilter{Submitter: "a.b"}, fleet.Decision{}, `submitter: "a.b"`},
		{fleet.PendingFilter{Max: -1}, fleet.Decision{}, "max: -1 is negative"},
		{fleet.PendingFilter{When: &messages.ApprovalCond{Arg: "amount", Op: "~", Value: int64(1)}}, fleet.Decision{}, "when.op"},
		{fleet.PendingFilter{When: &messages.ApprovalCond{Arg: "amount", Op: ">", Value: true}}, fleet.Decision{}, "when.value"},
		{fleet.PendingFilter{Calls: []fleet.CallRef{{MissionID: "x", Call: "1.a.0"}}}, fleet.Decision{}, `calls[0]: "x" is not a mission id`},
		{fleet.PendingFilter{Calls: []fleet.CallRef{{MissionID: id}}}, fleet.Decision{}, `calls[0]: "" is not a call id`},
		{fleet.PendingFilter{Calls: []fleet.CallRef{{MissionID: id, Call: "1 a"}}}, fleet.Decision{}, `calls[0]: "1 a" is not a call id`},
		{fleet.PendingFilter{Calls: make([]fleet.CallRef, fleet.MaxList+1)}, fleet.Decision{}, "calls: 1001 named, at most 1000"},
	} {
		out, err := c.DecidePending(ctx, tc.f, tc.d)
		if !errors.Is(err, fleet.ErrInvalidSelection) || !strings.Contains(err.Error(), tc.want) || out != nil {
			t.Errorf("%+v %+v: %v (%d outcomes); want an error saying %q", tc.f, tc.d, err, len(out), tc.want)
		}
	}
	if as, err := c.Approvals(ctx, id); err != nil || as[0].State != messages.ApprovalPending {
		t.Fatalf("after refused batches: %+v %v; want the call still pending", as, err)
	}
	if _, refunds, _ := shop.counts(); len(refunds) != 0 {
		t.Fatalf("refunds run: %v", refunds)
	}
}

// A batch's calls are decided as they were listed: a call another
// decider decided after the listing gets an outcome wrapping
// ErrNoPendingCall, and the batch goes on; any other failure stops it,
// and the calls not reached get outcomes wrapping ErrNotReached, still
// pending. The calls of one mission are decided one after another.
func TestDecidePendingOutcomesOfCallsItCouldNotDecide(t *testing.T) {
	_, nc := runJetStream(t)
	startShop(t, nc)
	w := startWorker(t, nc, refundRunner(nil))
	ctx := testCtx(t)
	c := approverClient(t, nc)
	first := submitAwaiting(ctx, t, c, refundMission(250))
	second := submitAwaiting(ctx, t, c, refundMission(350))
	// no worker resumes them meanwhile
	if err := w.Stop(); err != nil {
		t.Fatal(err)
	}
	// the second mission has two more calls pending, of the same
	// suspension (as concurrent calls of a pmap leave them)
	var twins []string
	for i := range 2 {
		twin := *second
		twin.Call, twin.RequestedAt = second.Call[:strings.LastIndexByte(second.Call, '.')]+"."+strconv.Itoa(8+i), second.RequestedAt.Add(time.Duration(i+1)*time.Millisecond)
		data, err := messages.Marshal(&twin)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Stores().Approvals.Create(ctx, messages.ApprovalKey(twin.MissionID, twin.Call), data); err != nil {
			t.Fatal(err)
		}
		twins = append(twins, twin.Call)
	}

	// another decider denies the first call after the batch listed it
	other := approverClient(t, nc)
	fleet.OnDecidePendingListed(c, func() {
		if _, err := other.Decide(ctx, first.MissionID, fleet.Decision{Approve: false, Reason: "mine", By: "bob"}); err != nil {
			t.Error(err)
		}
	})
	out, err := c.DecidePending(ctx, fleet.PendingFilter{Max: 2}, fleet.Decision{Approve: true, By: "ann"})
	if err != nil || len(out) != 2 {
		t.Fatalf("%+v %v", out, err)
	}
	if !errors.Is(out[0].Err, fleet.ErrNoPendingCall) || out[0].Decided != nil || !strings.Contains(out[0].Err.Error(), "denied by bob") {
		t.Errorf("the call decided meanwhile: %+v; want ErrNoPendingCall naming bob's denial", out[0])
	}
	if out[1].Err != nil || out[1].Call.Call != second.Call || out[1].Decided.State != messages.ApprovalApproved {
		t.Errorf("the next call: %+v; want %s approved", out[1], second.Call)
	}

	// a batch whose first decision fails (here its context ends once the
	// calls are listed) decides nothing after it
	bctx, cancel := context.WithCancel(ctx)
	fleet.OnDecidePendingListed(c, cancel)
	out, err = c.DecidePending(bctx, fleet.PendingFilter{}, fleet.Decision{Approve: true, By: "ann"})
	if err != nil || len(out) != 2 || out[0].Call.Call != twins[0] || out[1].Call.Call != twins[1] {
		t.Fatalf("%+v %v; want the two calls left listed", out, err)
	}
	if !errors.Is(out[0].Err, context.Canceled) || out[0].Decided != nil {
		t.Errorf("a decision with its context ended: %+v", out[0])
	}
	if !errors.Is(out[1].Err, fleet.ErrNotReached) || !errors.Is(out[1].Err, context.Canceled) || out[1].Decided != nil {
		t.Errorf("the call after it: %+v; want ErrNotReached, naming the first failure", out[1])
	}
	as, err := c.Approvals(ctx, second.MissionID)
	if err != nil || len(as) != 3 || as[1].State != messages.ApprovalPending || as[2].State != messages.ApprovalPending {
		t.Fatalf("%+v %v; want both calls still pending", as, err)
	}
}

// A batch reads the approval bucket once: each mission with one call
// waiting is decided with the record and revision the listing read, so a
// decision reads the mission's status and makes Decide's writes, and
// reads none of its records again.
func TestDecidePendingReadsTheRecordsOnce(t *testing.T) {
	s, nc := runJetStream(t)
	startShop(t, nc)
	w := startWorker(t, nc, refundRunner(nil))
	ctx := testCtx(t)
	c := approverClient(t, nc)
	const n = 5
	var first string
	for i := range n + 1 {
		a := submitAwaiting(ctx, t, c, refundMission(250))
		if i == 0 {
			first = a.MissionID
		}
	}
	// the resumed runs' reads are not the batch's
	if err := w.Stop(); err != nil {
		t.Fatal(err)
	}
	// the decider's first decision asks whether it may publish wakes
	// into MISSIONS: asked before the count
	if _, err := c.Decide(ctx, first, fleet.Decision{Approve: true, By: "ann"}); err != nil {
		t.Fatal(err)
	}
	spy := spyAPI(t, connect(t, s))
	spy.watch(t, "no mission")
	out, err := c.DecidePending(ctx, fleet.PendingFilter{}, fleet.Decision{Approve: true, By: "ann"})
	if err != nil || len(out) != n {
		t.Fatalf("%d outcomes, %v", len(out), err)
	}
	for _, o := range out {
		if o.Err != nil {
			t.Fatal(o.Err)
		}
	}
	if got := spy.count(t, "$JS.API.DIRECT.GET.KV_"+messages.BucketApprovals); got != 1 {
		t.Errorf("the batch read the approval bucket %d times, want once", got)
	}
	if got := spy.count(t, "$JS.API.DIRECT.GET.KV_"+messages.BucketStatus); got != n {
		t.Errorf("the batch read %d statuses, want %d (one a mission)", got, n)
	}
}

// Calls selects the calls a person ticked in a listing: those named that
// still wait, and no other.
func TestDecidePendingNamedCalls(t *testing.T) {
	_, nc := runJetStream(t)
	startShop(t, nc)
	startWorker(t, nc, refundRunner(nil))
	ctx := testCtx(t)
	c := approverClient(t, nc)
	var as []*messages.Approval
	for range 3 {
		as = append(as, submitAwaiting(ctx, t, c, refundMission(250)))
	}
	named := []fleet.CallRef{{MissionID: as[2].MissionID, Call: as[2].Call}, {MissionID: as[0].MissionID, Call: as[0].Call},
		{MissionID: as[1].MissionID, Call: "1.0000.9"}}
	out, err := c.DecidePending(ctx, fleet.PendingFilter{Calls: named}, fleet.Decision{Approve: true, By: "ann"})
	if err != nil || len(out) != 2 || out[0].Call.MissionID != as[0].MissionID || out[1].Call.MissionID != as[2].MissionID || out[0].Err != nil || out[1].Err != nil {
		t.Fatalf("%+v %v; want the calls of missions 0 and 2 approved, the longest waiting first", out, err)
	}
	waitState(t, c, as[0].MissionID, messages.StateSucceeded)
	waitState(t, c, as[2].MissionID, messages.StateSucceeded)
	if st, err := c.Status(ctx, as[1].MissionID); err != nil || st.State != messages.StateAwaitingApproval {
		t.Fatalf("the mission not named: %+v %v", st, err)
	}
}
