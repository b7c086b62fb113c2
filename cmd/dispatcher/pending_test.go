package main

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/ptcfleet/ptc/pkg/messages"
)

// A listing that fails after NATS refused the user a read says so, and
// names what to do; one on a connection refused nothing is left as it
// is. (deploy/k8s's TestNATSSubmittersIsolated makes the refusal under
// the shipped permissions.)
func TestRefusedReadExplainsTheListingsFailure(t *testing.T) {
	opts := &server.Options{Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true,
		Users: []*server.User{{Username: "sub", Password: "pw",
			Permissions: &server.Permissions{Publish: &server.SubjectPermission{Deny: []string{"status.>"}}}}}}
	srv, err := server.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	go srv.Start()
	t.Cleanup(srv.Shutdown)
	if !srv.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats-server not ready")
	}
	nc, err := nats.Connect(srv.ClientURL(), nats.UserInfo("sub", "pw"), nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	failed := errors.New("fleet: pending approvals: context deadline exceeded")
	if got := refusedRead(nc, failed); got != failed {
		t.Errorf("nothing refused: %v, want the error as it is", got)
	}
	if got := refusedRead(nc, nil); got != nil {
		t.Errorf("no error: %v", got)
	}
	if err := nc.Publish("status.other", nil); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); !errors.Is(nc.LastError(), nats.ErrPermissionViolation); {
		if time.Now().After(deadline) {
			t.Fatalf("no refusal reported: %v", nc.LastError())
		}
		_ = nc.Flush()
		time.Sleep(5 * time.Millisecond)
	}
	got := refusedRead(nc, failed)
	if !errors.Is(got, failed) || !strings.Contains(got.Error(), `NATS refused this user a read`) ||
		!strings.Contains(got.Error(), "status.other") || !strings.Contains(got.Error(), "as the approver user") {
		t.Errorf("refused: %v", got)
	}
}

// watchPending prints the first listing whole, then each call that starts
// waiting and each that stops, and a listing that fails is reported and
// looked at again; it ends with its context.
func TestWatchPendingFollowsTheListings(t *testing.T) {
	at := time.Now()
	call := func(id, c, tool string) *messages.Approval {
		return &messages.Approval{MissionID: id, Call: c, Tool: tool, State: messages.ApprovalPending, RequestedAt: at, Args: map[string]any{"n": int64(1)}}
	}
	a, b, c := call("01KA", "1.aa.0", "refund"), call("01KB", "1.bb.0", "email"), call("01KC", "2.cc.0", "merge")
	listings := []func() ([]*messages.Approval, int, error){
		func() ([]*messages.Approval, int, error) { return []*messages.Approval{a, b}, 2, nil },
		func() ([]*messages.Approval, int, error) { return nil, 0, errors.New("nats: connection closed") },
		func() ([]*messages.Approval, int, error) { return []*messages.Approval{b, c}, 2, nil },
		func() ([]*messages.Approval, int, error) { return []*messages.Approval{b, c}, 2, nil },
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var n int
	var out strings.Builder
	err := watchPending(ctx, func(context.Context) ([]*messages.Approval, int, error) {
		l := listings[n]
		if n++; n == len(listings) {
			cancel()
		}
		return l()
	}, time.Millisecond, &out)
	if err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{
		"01KA 1.aa.0  refund {\"n\":1}  turn 0\n", "dispatcher approve|deny 01KB 1.bb.0\n",
		" listing failed, trying again: nats: connection closed\n",
		" waiting: 01KC 2.cc.0  merge {\"n\":1}\n  dispatcher approve|deny 01KC 2.cc.0\n",
		" no longer waiting: 01KA 1.aa.0 refund\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if strings.Count(got, "01KB") != 2 || strings.Count(got, "01KC") != 2 {
		t.Errorf("a call still waiting was printed again:\n%s", got)
	}
}

// The listing says how long each call has until its deadline, and for a
// call whose deadline passed, how long ago and that deciding it ends the
// wait; every call comes with the command that decides it.
func TestPrintPendingNamesEachCallsDeadline(t *testing.T) {
	now := time.Now()
	as := []*messages.Approval{
		{MissionID: "m1", Call: "2.a.0", Tool: "refund", Args: map[string]any{"amount": 120}, Turn: 2, Rule: "mission: every call",
			RequestedAt: now.Add(-time.Minute), Deadline: now.Add(time.Hour), Submitter: "ann"},
		{MissionID: "m2", Call: "3.b.0", Tool: "pay", Turn: 3, Rule: "mission: every call",
			RequestedAt: now.Add(-10 * time.Minute), Deadline: now.Add(-2 * time.Minute)},
	}
	var b strings.Builder
	printPending(&b, as, 3)
	out := b.String()
	for _, want := range []string{
		"m1 2.a.0  refund", "denied as approval_timeout in 1h0m0s", "submitter ann", "dispatcher approve|deny m1 2.a.0",
		"m2 3.b.0  pay", "deadline passed 2m0s ago (denied as approval_timeout once a worker takes the mission; still listed, decide it)",
		"dispatcher approve|deny m2 3.b.0", "2 of 3 waiting calls shown (-limit)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("listing lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "in 0s") {
		t.Errorf("a passed deadline shown as still to come:\n%s", out)
	}
}
