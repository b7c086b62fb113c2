package fleet

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ptcfleet/ptc/pkg/fleet/embedded"
)

// embeddedConn starts an embedded JetStream server in t.TempDir() and
// returns an in-process connection to it; both are closed by t.Cleanup.
func embeddedConn(t testing.TB) *nats.Conn {
	t.Helper()
	srv, err := embedded.Start(embedded.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	nc, err := srv.Conn()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// embeddedStores starts an embedded JetStream server (embeddedConn) and
// sets the default store layout up on it. It returns a context that ends
// after 30 s or with the test, the connection, its JetStream handle and
// the stores.
func embeddedStores(t testing.TB) (context.Context, *nats.Conn, jetstream.JetStream, *Stores) {
	t.Helper()
	nc := embeddedConn(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	st, err := EnsureStores(ctx, js, StoreConfig{})
	if err != nil {
		t.Fatal(err)
	}
	return ctx, nc, js, st
}
