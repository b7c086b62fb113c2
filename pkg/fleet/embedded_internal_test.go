package fleet

import (
	"cmp"
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
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
	return embeddedStoresWith(t, StoreConfig{})
}

// embeddedStoresWith is embeddedStores with the layout of cfg.
func embeddedStoresWith(t testing.TB, cfg StoreConfig) (context.Context, *nats.Conn, jetstream.JetStream, *Stores) {
	t.Helper()
	nc := embeddedConn(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	st, err := EnsureStores(ctx, js, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return ctx, nc, js, st
}

// startServer starts a nats-server with JetStream from opts (listening
// on a free port of 127.0.0.1, storing in tb.TempDir(), without logs or
// signal handlers unless opts says otherwise), shut down by tb.Cleanup,
// and returns it once it accepts connections: for a test that needs what
// the embedded server does not set (users, a cluster) or a TCP client.
func startServer(tb testing.TB, opts server.Options) *server.Server {
	tb.Helper()
	opts.JetStream, opts.NoLog, opts.NoSigs = true, true, true
	opts.Host = cmp.Or(opts.Host, "127.0.0.1")
	if opts.Port == 0 {
		opts.Port = server.RANDOM_PORT
	}
	if opts.StoreDir == "" {
		opts.StoreDir = tb.TempDir()
	}
	s, err := server.NewServer(&opts)
	if err != nil {
		tb.Fatal(err)
	}
	go s.Start()
	tb.Cleanup(s.Shutdown)
	if !s.ReadyForConnections(10 * time.Second) {
		tb.Fatalf("nats-server %s not ready", opts.ServerName)
	}
	return s
}
