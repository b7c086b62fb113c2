package fleettest

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// TestStartServesJetStream: the server answers JetStream requests on a
// connection from Conn.
func TestStartServesJetStream(t *testing.T) {
	srv := Start(t)
	js, err := jetstream.New(srv.Conn())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := js.AccountInfo(ctx); err != nil {
		t.Fatalf("account info: %v", err)
	}
}

// TestForBindsConnectionsToTheSubtest: a connection opened through For
// closes when the subtest ends, while the server and the test's own
// connections stay up.
func TestForBindsConnectionsToTheSubtest(t *testing.T) {
	srv := Start(t)
	outer := srv.Conn()
	var inner *nats.Conn
	t.Run("sub", func(t *testing.T) {
		inner = srv.For(t).Conn()
		if !inner.IsConnected() {
			t.Fatal("subtest connection not connected")
		}
	})
	if !inner.IsClosed() {
		t.Error("subtest connection still open after the subtest")
	}
	if !outer.IsConnected() {
		t.Error("test connection closed with the subtest")
	}
}
