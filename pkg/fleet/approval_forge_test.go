package fleet_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ptcfleet/ptc/pkg/fleet"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// parkedBody returns mission id's parked message: its body is the one a
// decision's wake carries.
func parkedBody(ctx context.Context, t *testing.T, c *fleet.Client, id string) *jetstream.RawStreamMsg {
	t.Helper()
	raw, err := c.Stores().Parked.GetLastMsgForSubject(ctx, messages.ParkSubject(id))
	if err != nil {
		t.Fatalf("parked message of %s: %v", id, err)
	}
	return raw
}

// sha256Hex is the digest a status awaiting approval names its body by.
func sha256Hex(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// statusEntry returns mission id's status as stored and its revision.
func statusEntry(ctx context.Context, t *testing.T, c *fleet.Client, id string) (messages.Status, uint64) {
	t.Helper()
	e, err := c.Stores().Status.Get(ctx, messages.StatusKey(c.Submitter(), id))
	if err != nil {
		t.Fatal(err)
	}
	var st messages.Status
	if err := messages.Unmarshal(e.Value(), &st); err != nil {
		t.Fatal(err)
	}
	return st, e.Revision()
}

// forgeWake publishes body as mission id's submitter may, on its own
// submit subject, marked as the decision's wake of call (a header any
// publisher can set), and waits until a worker took it from the queue.
func forgeWake(ctx context.Context, t *testing.T, nc *nats.Conn, c *fleet.Client, id, call string, body []byte) {
	t.Helper()
	subject := messages.SubmitSubject(c.Submitter(), messages.PriorityNormal, id)
	msg := &nats.Msg{Subject: subject, Data: body, Header: nats.Header{}}
	msg.Header.Set(messages.HeaderMissionID, id)
	msg.Header.Set(messages.HeaderContentType, messages.ContentTypeMsgpack)
	msg.Header.Set(messages.HeaderWoken, call)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.PublishMsg(ctx, msg); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the forged wake leaves the queue", func() bool {
		info, err := c.Stores().Missions.Info(ctx, jetstream.WithSubjectFilter(subject+".>"))
		return err == nil && info.State.Msgs == 0
	})
}

// A submitter may publish on its own submit subject with any header, the
// decision's wake mark (Ptc-Woken) included. Its mission awaiting
// approval is not resumed by such a message with another body (here the
// mission without its own approval rules, which would let the refund of
// 50 through: only the mission's rule holds it): the message is dropped,
// the status left as it was, and the real decision resumes the mission
// once, with the call run once. The same message with the suspended
// mission's own body resumes it early, and the run only suspends again
// at the same call: it is still pending.
func TestForgedWakeDoesNotResumeAMissionWithAnotherBody(t *testing.T) {
	_, nc := runJetStream(t)
	shop := startShop(t, nc)
	c := newClient(t, nc)
	var runs atomic.Int64
	refund := refundRunner(nil)
	startWorker(t, nc, fleet.RunnerFunc(func(ctx context.Context, m *messages.Mission, env fleet.RunEnv) (*messages.Step, error) {
		runs.Add(1)
		return refund(ctx, m, env)
	}))
	ctx := testCtx(t)
	m := refundMission(50)
	m.Approval = &messages.ApprovalPolicy{Rules: []messages.ApprovalRule{{Tool: "refund"}}}
	a := submitAwaiting(ctx, t, c, m)
	if a.Rule != "mission: every call" {
		t.Fatalf("approval %+v: want the mission's rule to hold the refund", a)
	}
	ran := func() int { return int(runs.Load()) }
	parked := parkedBody(ctx, t, c, m.ID)
	st, rev := statusEntry(ctx, t, c, m.ID)
	if st.MissionDigest != sha256Hex(parked.Data) {
		t.Fatalf("status digest %q, want the parked body's %q", st.MissionDigest, sha256Hex(parked.Data))
	}

	changed := *m
	changed.Approval = nil
	body, err := messages.MarshalMission(&changed)
	if err != nil {
		t.Fatal(err)
	}
	forgeWake(ctx, t, nc, c, m.ID, a.Call, body)
	if cur, curRev := statusEntry(ctx, t, c, m.ID); curRev != rev || cur.State != messages.StateAwaitingApproval {
		t.Fatalf("after a forged wake with another body: status %s at revision %d, want awaiting_approval left at %d", cur.State, curRev, rev)
	}
	if _, refunds, _ := shop.counts(); len(refunds) != 0 || ran() != 1 {
		t.Fatalf("after a forged wake with another body: refunds %v, runs %d; want none and 1", refunds, ran())
	}

	// the suspended mission's own body: resumed early, suspended again
	forgeWake(ctx, t, nc, c, m.ID, a.Call, parked.Data)
	eventually(t, 10*time.Second, "the second suspension", func() bool {
		cur, _ := statusEntry(ctx, t, c, m.ID)
		return cur.State == messages.StateAwaitingApproval && cur.Suspensions == 2
	})
	if _, refunds, _ := shop.counts(); len(refunds) != 0 || ran() != 2 {
		t.Fatalf("after a forged wake with the mission's body: refunds %v, runs %d; want none and 2", refunds, ran())
	}
	as, err := c.Approvals(ctx, m.ID)
	if err != nil || len(as) != 1 || as[0].Call != a.Call || as[0].State != messages.ApprovalPending {
		t.Fatalf("approvals %v, %v: want call %s still pending", as, err, a.Call)
	}

	if _, err := c.Decide(ctx, m.ID, fleet.Decision{Approve: true, By: "ann"}); err != nil {
		t.Fatal(err)
	}
	step, err := c.Await(ctx, m.ID)
	if err != nil || !step.Ok() || fmt.Sprint(step.Return) != fmt.Sprint(map[string]any{"refunded": int64(50)}) {
		t.Fatalf("step %+v, %v", step, err)
	}
	if _, refunds, _ := shop.counts(); len(refunds) != 1 || ran() != 3 {
		t.Fatalf("refunds %v, runs %d; want one refund, 3 runs", refunds, ran())
	}
}

// A mission suspended, resumed and suspended again names the same body
// in its status each time: the one its parked message holds, which a
// decision's wake carries, into MISSIONS or (a client that may not
// publish there) through PARKED, and each wake resumes it.
func TestMissionSuspendedTwiceResumesFromEachWake(t *testing.T) {
	_, nc := runJetStream(t)
	shop := startShop(t, nc)
	c := newClient(t, nc)
	var runs atomic.Int64
	startWorker(t, nc, fleet.RunnerFunc(func(ctx context.Context, m *messages.Mission, env fleet.RunEnv) (*messages.Step, error) {
		runs.Add(1)
		ctx = fleet.WithTurn(ctx, 1)
		var got []any
		for _, amount := range []int64{200, 300} {
			res, err := env.Tools.Call(ctx, "refund", map[string]any{"order": "A-1", "amount": amount})
			if err != nil {
				return nil, err
			}
			got = append(got, res)
		}
		return &messages.Step{Return: got}, nil
	}))
	ctx := testCtx(t)
	m := refundMission(0)
	a := submitAwaiting(ctx, t, c, m)
	first := parkedBody(ctx, t, c, m.ID)
	if st, _ := statusEntry(ctx, t, c, m.ID); st.MissionDigest != sha256Hex(first.Data) {
		t.Fatalf("first suspension: status digest %q, want the parked body's %q", st.MissionDigest, sha256Hex(first.Data))
	}
	if _, err := c.Decide(ctx, m.ID, fleet.Decision{Call: a.Call, Approve: true, By: "ann"}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the second suspension", func() bool {
		st, _ := statusEntry(ctx, t, c, m.ID)
		return st.State == messages.StateAwaitingApproval && st.Suspensions == 2
	})
	second := parkedBody(ctx, t, c, m.ID)
	if st, _ := statusEntry(ctx, t, c, m.ID); string(second.Data) != string(first.Data) || st.MissionDigest != sha256Hex(first.Data) {
		t.Fatalf("second suspension: parked body changed (%d bytes, was %d) or status digest %q, want %q",
			len(second.Data), len(first.Data), st.MissionDigest, sha256Hex(first.Data))
	}
	as, err := c.Approvals(ctx, m.ID)
	if err != nil || len(as) != 2 {
		t.Fatalf("approvals %v, %v", as, err)
	}
	fleet.WakesThroughParked(c)
	wakes, err := nc.SubscribeSync(messages.WakeSubject(c.Submitter(), messages.PriorityNormal, m.ID))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Decide(ctx, m.ID, fleet.Decision{Approve: true, By: "ann"}); err != nil {
		t.Fatal(err)
	}
	step, err := c.Await(ctx, m.ID)
	if err != nil || !step.Ok() {
		t.Fatalf("step %+v, %v", step, err)
	}
	if _, err := wakes.NextMsg(time.Second); err != nil {
		t.Fatalf("the second decision's wake was not published in PARKED: %v", err)
	}
	if _, refunds, _ := shop.counts(); len(refunds) != 2 || runs.Load() != 3 {
		t.Fatalf("refunds %v, runs %d; want two refunds, 3 runs", refunds, runs.Load())
	}
}

// A status awaiting approval written by a worker of a release before the
// digest (none in it) is resumed by its decision's wake as before.
func TestAwaitingStatusWithoutDigestResumesFromItsWake(t *testing.T) {
	_, nc := runJetStream(t)
	shop := startShop(t, nc)
	c := newClient(t, nc)
	startWorker(t, nc, refundRunner(nil))
	ctx := testCtx(t)
	m := refundMission(500)
	a := submitAwaiting(ctx, t, c, m)
	st, rev := statusEntry(ctx, t, c, m.ID)
	st.MissionDigest = ""
	data, err := messages.Marshal(&st)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Stores().Status.Update(ctx, messages.StatusKey(c.Submitter(), m.ID), data, rev); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Decide(ctx, m.ID, fleet.Decision{Call: a.Call, Approve: true, By: "ann"}); err != nil {
		t.Fatal(err)
	}
	step, err := c.Await(ctx, m.ID)
	if err != nil || !step.Ok() {
		t.Fatalf("step %+v, %v", step, err)
	}
	if _, refunds, _ := shop.counts(); len(refunds) != 1 {
		t.Fatalf("refunds %v; want one", refunds)
	}
}

// A submitter's message stored under the Msg-Id a decision's wake would
// take if it could be known before the decision would have MISSIONS
// drop the wake as its duplicate, and the mission wait for its deadline.
// The wake's Msg-Id holds the decision's time: the message forged under
// the id of the call alone (here with another body, which the worker
// drops) holds nothing back, and the decision resumes the mission at
// once.
func TestForgedWakeMsgIDDoesNotHoldBackTheDecision(t *testing.T) {
	_, nc := runJetStream(t)
	shop := startShop(t, nc)
	c := newClient(t, nc)
	startWorker(t, nc, refundRunner(nil))
	ctx := testCtx(t)
	m := refundMission(500)
	a := submitAwaiting(ctx, t, c, m)
	changed := *m
	changed.Context = map[string]any{"amount": int64(7)}
	body, err := messages.MarshalMission(&changed)
	if err != nil {
		t.Fatal(err)
	}
	subject := messages.SubmitSubject(c.Submitter(), messages.PriorityNormal, m.ID)
	msg := &nats.Msg{Subject: subject, Data: body, Header: nats.Header{}}
	msg.Header.Set(messages.HeaderMissionID, m.ID)
	msg.Header.Set(messages.HeaderWoken, a.Call)
	msg.Header.Set(jetstream.MsgIDHeader, m.ID+"/resume/"+a.Call)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if ack, err := js.PublishMsg(ctx, msg); err != nil || ack.Duplicate {
		t.Fatalf("the forged message: %+v, %v", ack, err)
	}
	eventually(t, 10*time.Second, "the forged wake leaves the queue", func() bool {
		info, err := c.Stores().Missions.Info(ctx, jetstream.WithSubjectFilter(subject+".>"))
		return err == nil && info.State.Msgs == 0
	})
	if _, err := c.Decide(ctx, m.ID, fleet.Decision{Approve: true, By: "ann"}); err != nil {
		t.Fatal(err)
	}
	actx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	step, err := c.Await(actx, m.ID)
	if err != nil || fmt.Sprint(step.Return) != fmt.Sprint(map[string]any{"refunded": int64(500)}) {
		t.Fatalf("step %+v, %v: want the decision to resume the mission as suspended", step, err)
	}
	if _, refunds, _ := shop.counts(); len(refunds) != 1 {
		t.Fatalf("refunds %v; want one", refunds)
	}
}
