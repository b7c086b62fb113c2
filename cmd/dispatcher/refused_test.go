package main

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
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
