package fleet_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ptcfleet/ptc/pkg/fleet"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// approverClient is a client on nc reading every submitter's missions,
// as an approver's.
func approverClient(t *testing.T, nc *nats.Conn) *fleet.Client {
	t.Helper()
	c, err := fleet.NewClient(testCtx(t), nc, fleet.ClientConfig{Store: testStore, Submitter: "approver", AllSubmitters: true})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// PendingApprovals lists the calls that wait for a decision, the longest
// waiting first: a decided call and a call of a mission cancelled while
// it waited (whose record stays pending) are not listed; limit bounds the
// list and the total counts them all; a client reading every submitter
// lists every submitter's, one submitter's client its own.
func TestPendingApprovalsListsTheCallsThatWait(t *testing.T) {
	_, nc := runJetStream(t)
	startShop(t, nc)
	startWorker(t, nc, refundRunner(nil))
	ctx := testCtx(t)
	alice, bob, approver := submitterClient(t, nc, "alice"), submitterClient(t, nc, "bob"), approverClient(t, nc)
	if as, n, err := approver.PendingApprovals(ctx, 0); err != nil || n != 0 || len(as) != 0 {
		t.Fatalf("no mission yet: %v, %d, %v", as, n, err)
	}
	var ids []string
	for _, c := range []*fleet.Client{alice, bob, alice, bob} {
		m := refundMission(250)
		submitAwaiting(ctx, t, c, m)
		ids = append(ids, m.ID)
	}
	a1, b1, a2, b2 := ids[0], ids[1], ids[2], ids[3]
	if _, err := approver.Decide(ctx, a2, fleet.Decision{Approve: true, By: "ann"}); err != nil {
		t.Fatal(err)
	}
	if step, err := alice.Await(ctx, a2); err != nil || !step.Ok() {
		t.Fatalf("the approved mission: %+v %v", step, err)
	}
	if err := bob.Cancel(ctx, b2, "not needed"); err != nil {
		t.Fatal(err)
	}
	waitState(t, bob, b2, messages.StateCancelled)
	if as, err := bob.Approvals(ctx, b2); err != nil || len(as) != 1 || as[0].State != messages.ApprovalPending {
		t.Fatalf("the cancelled mission's record: %+v %v, want one pending (what the list leaves out)", as, err)
	}

	missions := func(as []*messages.Approval) []string {
		var out []string
		for _, a := range as {
			if a.State != messages.ApprovalPending || a.Tool != "refund" || a.Args["_card"] != messages.FirewallMask {
				t.Errorf("listed record %+v: want a pending refund with its card masked", a)
			}
			out = append(out, a.MissionID)
		}
		return out
	}
	as, n, err := approver.PendingApprovals(ctx, 0)
	if err != nil || n != 2 || !slices.Equal(missions(as), []string{a1, b1}) {
		t.Fatalf("every submitter's: %v of %d, %v; want [%s %s] of 2", missions(as), n, err, a1, b1)
	}
	if !as[0].RequestedAt.Before(as[1].RequestedAt) {
		t.Errorf("requested at %v and %v: want the longest waiting first", as[0].RequestedAt, as[1].RequestedAt)
	}
	if as, n, err := approver.PendingApprovals(ctx, 1); err != nil || n != 2 || !slices.Equal(missions(as), []string{a1}) {
		t.Errorf("limit 1: %v of %d, %v; want [%s] of 2", missions(as), n, err, a1)
	}
	if as, n, err := alice.PendingApprovals(ctx, 0); err != nil || n != 1 || !slices.Equal(missions(as), []string{a1}) {
		t.Errorf("alice's: %v of %d, %v; want [%s]", missions(as), n, err, a1)
	}
	if as, n, err := bob.PendingApprovals(ctx, 0); err != nil || n != 1 || !slices.Equal(missions(as), []string{b1}) {
		t.Errorf("bob's: %v of %d, %v; want [%s]", missions(as), n, err, b1)
	}
	// the listed call is decided with what the list gives
	if _, err := approver.Decide(ctx, as[0].MissionID, fleet.Decision{Call: as[0].Call, Approve: false, Reason: "no", By: "ann"}); err != nil {
		t.Fatal(err)
	}
	if as, n, err := approver.PendingApprovals(ctx, 0); err != nil || n != 1 || !slices.Equal(missions(as), []string{b1}) {
		t.Errorf("after a1's denial: %v of %d, %v; want [%s]", missions(as), n, err, b1)
	}
}

// A bucket with more keys than one batch direct get answers (1,024) is
// read key by key in batches: of 1,200 missions, 1,100 with a pending
// call (60 of them cancelled) and 100 with a decided one, the 1,040 that
// wait are listed in the order they were asked for.
func TestPendingApprovalsOverMoreKeysThanOneBatch(t *testing.T) {
	_, nc := runJetStream(t)
	c, err := fleet.NewClient(testCtx(t), nc, fleet.ClientConfig{Store: testStore, Submitter: "ops", AllSubmitters: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t)
	st := c.Stores()
	at := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	var want []string
	put := func(i int, approval, state string) {
		id := putCall(ctx, t, st, i, approval, state, at.Add(time.Duration(i)*time.Second))
		if approval == messages.ApprovalPending && state == messages.StateAwaitingApproval {
			want = append(want, id)
		}
	}
	// written in an order other than their requests' (the listing sorts)
	for i := 1199; i >= 0; i-- {
		switch {
		case i%20 == 0:
			put(i, messages.ApprovalPending, messages.StateCancelled)
		case i%12 == 1:
			put(i, messages.ApprovalApproved, messages.StateSucceeded)
		default:
			put(i, messages.ApprovalPending, messages.StateAwaitingApproval)
		}
	}
	slices.Reverse(want)
	as, n, err := c.PendingApprovals(ctx, fleet.MaxList)
	if err != nil {
		t.Fatal(err)
	}
	if n != len(want) || len(as) != fleet.MaxList {
		t.Fatalf("listed %d of %d, want %d of %d", len(as), n, fleet.MaxList, len(want))
	}
	for i, a := range as {
		if a.MissionID != want[i] {
			t.Fatalf("listed #%d: %s (requested %v), want %s", i, a.MissionID, a.RequestedAt, want[i])
		}
	}
}

// Where no replica answers direct gets (here: the bucket's stream allows
// none), the records are listed from the stream's info and each read from
// the stream's leader.
func TestPendingApprovalsWhenNoReplicaAnswersDirectGets(t *testing.T) {
	_, nc := runJetStream(t)
	ctx := testCtx(t)
	c, err := fleet.NewClient(ctx, nc, fleet.ClientConfig{Store: testStore, Submitter: "ops", AllSubmitters: true})
	if err != nil {
		t.Fatal(err)
	}
	st := c.Stores()
	var waiting []string
	for i, state := range []string{messages.StateAwaitingApproval, messages.StateCancelled, messages.StateAwaitingApproval} {
		id := putCall(ctx, t, st, i, messages.ApprovalPending, state, time.Now().Add(time.Duration(i)*time.Second))
		if state == messages.StateAwaitingApproval {
			waiting = append(waiting, id)
		}
	}
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	s, err := js.Stream(ctx, "KV_"+messages.BucketApprovals)
	if err != nil {
		t.Fatal(err)
	}
	cfg := s.CachedInfo().Config
	cfg.AllowDirect = false
	if _, err := js.UpdateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	as, n, err := c.PendingApprovals(ctx, 0)
	if err != nil || n != 2 || len(as) != 2 || as[0].MissionID != waiting[0] || as[1].MissionID != waiting[1] {
		t.Fatalf("listed %+v of %d, %v; want %v", as, n, err, waiting)
	}
	// a batch decision lists them the same way and decides both
	out, err := c.DecidePending(ctx, fleet.PendingFilter{}, fleet.Decision{Approve: true, By: "ann"})
	if err != nil || len(out) != 2 || out[0].Call.MissionID != waiting[0] || out[1].Call.MissionID != waiting[1] {
		t.Fatalf("decided %+v, %v; want %v", out, err, waiting)
	}
	for _, o := range out {
		if o.Err != nil || o.Decided.State != messages.ApprovalApproved {
			t.Fatalf("outcome %+v", o)
		}
	}
}

// BenchmarkPendingApprovals lists the calls waiting across a fleet where
// n missions wait for a decision (their records and statuses written
// directly), 1,000 of them at a time (fleet.MaxList): an op is one
// listing, the approval bucket's batch direct gets and the n status reads.
func BenchmarkPendingApprovals(b *testing.B) {
	for _, n := range []int{100, 1000, 10000} {
		b.Run(fmt.Sprintf("waiting=%d", n), func(b *testing.B) {
			_, nc := runJetStream(b)
			ctx := testCtx(b)
			c, err := fleet.NewClient(ctx, nc, fleet.ClientConfig{Store: testStore, Submitter: "ops", AllSubmitters: true})
			if err != nil {
				b.Fatal(err)
			}
			st := c.Stores()
			at := time.Now()
			for i := range n {
				putCall(ctx, b, st, i, messages.ApprovalPending, messages.StateAwaitingApproval, at)
			}
			for b.Loop() {
				if _, got, err := c.PendingApprovals(ctx, fleet.MaxList); err != nil || got != n {
					b.Fatalf("listed %d waiting, %v; want %d", got, err, n)
				}
			}
		})
	}
}

// putCall writes what a worker leaves for a mission whose call i needed
// approval: the call's record in approvalState, asked for at requested,
// and the mission's status in state. It returns the mission's id.
func putCall(ctx context.Context, tb testing.TB, st *fleet.Stores, i int, approvalState, state string, requested time.Time) string {
	tb.Helper()
	id := messages.NewMissionID()
	a := &messages.Approval{Version: messages.ApprovalVersion, MissionID: id, Call: fmt.Sprintf("1.%024x.0", i), State: approvalState,
		Tool: "refund", Args: map[string]any{"order": fmt.Sprintf("A-%d", i), "amount": int64(250)}, Submitter: "s", RequestedAt: requested}
	data, err := messages.Marshal(a)
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := st.Approvals.Put(ctx, messages.ApprovalKey(id, a.Call), data); err != nil {
		tb.Fatal(err)
	}
	sdata, err := messages.Marshal(&messages.Status{MissionID: id, Submitter: "s", State: state, UpdatedAt: requested})
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := st.Status.Put(ctx, messages.StatusKey("s", id), sdata); err != nil {
		tb.Fatal(err)
	}
	return id
}

// StalledApprovals lists a mission whose call was decided and whose wake
// was lost (the record decided, the mission never queued): not a mission
// whose call still waits, one decided and finished, one decided too
// recently, one whose wake waits in the queue with no worker to take it,
// nor another submitter's to a client of one submitter. Deciding the
// stalled mission again queues it, and it is listed no more.
func TestStalledApprovalsListAMissionWhoseWakeWasLost(t *testing.T) {
	srv, nc := runJetStream(t)
	shop := startShop(t, nc, true)
	w := startWorker(t, connect(t, srv), refundRunner(nil))
	ctx := testCtx(t)
	alice, bob, approver := submitterClient(t, nc, "alice"), submitterClient(t, nc, "bob"), approverClient(t, nc)
	lost, waiting, done := refundMission(150), refundMission(200), refundMission(300)
	lostCall := submitAwaiting(ctx, t, alice, lost)
	submitAwaiting(ctx, t, alice, waiting)
	submitAwaiting(ctx, t, alice, done)
	approveParkedWithoutWake(ctx, t, alice, w, 3, lost.ID, lostCall)
	if _, err := approver.Decide(ctx, done.ID, fleet.Decision{Approve: true, By: "ann"}); err != nil {
		t.Fatal(err)
	}
	if step, err := alice.Await(ctx, done.ID); err != nil || !step.Ok() {
		t.Fatalf("the approved mission: %+v %v", step, err)
	}
	// with no worker, a decision's wake waits in the queue
	if err := w.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := approver.Decide(ctx, waiting.ID, fleet.Decision{Approve: true, By: "ann"}); err != nil {
		t.Fatal(err)
	}
	stalled := func(c *fleet.Client, after time.Duration) []string {
		t.Helper()
		as, err := c.StalledApprovals(ctx, after)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, a := range as {
			out = append(out, a.MissionID+" "+a.Call+" "+a.State+" "+a.DecidedBy)
		}
		return out
	}
	want := []string{lost.ID + " " + lostCall.Call + " " + messages.ApprovalApproved + " lost-decider"}
	for _, c := range []*fleet.Client{approver, alice} {
		if got := stalled(c, 0); !slices.Equal(got, want) {
			t.Fatalf("stalled: %q, want %q", got, want)
		}
	}
	if got := stalled(bob, 0); len(got) != 0 {
		t.Fatalf("another submitter's client lists %q", got)
	}
	if got := stalled(approver, time.Hour); len(got) != 0 {
		t.Fatalf("decided under an hour ago, listed as stalled after an hour: %q", got)
	}
	// a wake of it waiting in PARKED (a deadline's; one MISSIONS
	// refused) is moved by a worker: not lost
	parked := approver.Stores().Parked
	js, _ := jetstream.New(nc)
	wake, err := js.Publish(ctx, messages.WakeSubject("alice", messages.PriorityNormal, lost.ID), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := stalled(approver, 0); len(got) != 0 {
		t.Fatalf("a mission with a wake in PARKED listed as stalled: %q", got)
	}
	// one stored before the mission's park message is left from an
	// earlier wait (moved, and its mover stopped before removing it):
	// the mission parked again after it (stored again here), and is lost
	park, err := parked.GetLastMsgForSubject(ctx, messages.ParkSubject(lost.ID))
	if err != nil {
		t.Fatal(err)
	}
	again := &nats.Msg{Subject: park.Subject, Data: park.Data, Header: nats.Header{}}
	for name, v := range park.Header {
		switch name {
		case jetstream.StreamHeader, jetstream.SequenceHeader, jetstream.SubjectHeader, jetstream.TimeStampHeaer:
		default:
			again.Header[name] = v
		}
	}
	if _, err := js.PublishMsg(ctx, again); err != nil {
		t.Fatal(err)
	}
	if got := stalled(approver, 0); !slices.Equal(got, want) {
		t.Fatalf("with a wake in PARKED older than its park message: stalled %q, want %q", got, want)
	}
	if err := parked.DeleteMsg(ctx, wake.Sequence); err != nil {
		t.Fatal(err)
	}
	// deciding it again queues it: it finishes, its call run once
	startWorker(t, connect(t, srv), refundRunner(nil))
	if step, err := alice.Await(ctx, waiting.ID); err != nil || !step.Ok() {
		t.Fatalf("the mission decided while no worker ran: %+v %v", step, err)
	}
	if _, err := approver.Decide(ctx, lost.ID, fleet.Decision{Approve: true, By: "again"}); err == nil {
		t.Fatal("deciding a decided call again: no error")
	}
	if step, err := alice.Await(ctx, lost.ID); err != nil || !step.Ok() {
		t.Fatalf("the stalled mission queued again: %+v %v", step, err)
	}
	if _, refunds, _ := shop.counts(); len(refunds) != 3 {
		t.Fatalf("refunds run: %v, want the three approved", refunds)
	}
	if got := stalled(approver, 0); len(got) != 0 {
		t.Fatalf("stalled after it finished: %q", got)
	}
}

// StalledDecision picks a mission's most recent decision, when the
// mission awaits approval with no call pending and that decision is old
// enough; nothing otherwise.
func TestStalledDecision(t *testing.T) {
	now := time.Now()
	decided := func(call string, ago time.Duration) *messages.Approval {
		return &messages.Approval{Call: call, State: messages.ApprovalApproved, DecidedAt: now.Add(-ago)}
	}
	pending := &messages.Approval{Call: "p", State: messages.ApprovalPending}
	for _, c := range []struct {
		name  string
		state string
		as    []*messages.Approval
		want  string
	}{
		{"the latest of two decisions", messages.StateAwaitingApproval, []*messages.Approval{decided("a", 5*time.Minute), decided("b", 2*time.Minute)}, "b"},
		{"the latest decision too recent", messages.StateAwaitingApproval, []*messages.Approval{decided("a", 5*time.Minute), decided("b", 10*time.Second)}, ""},
		{"a call pending", messages.StateAwaitingApproval, []*messages.Approval{decided("a", 5*time.Minute), pending}, ""},
		{"not waiting", messages.StateRunning, []*messages.Approval{decided("a", 5*time.Minute)}, ""},
		{"no decision", messages.StateAwaitingApproval, nil, ""},
	} {
		got := ""
		if a := fleet.StalledDecision(c.state, c.as, time.Minute, now); a != nil {
			got = a.Call
		}
		if got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}
