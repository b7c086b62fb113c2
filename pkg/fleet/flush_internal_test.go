package fleet

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/ptcfleet/ptc/internal/fleettest"
	"github.com/ptcfleet/ptc/pkg/fleet/embedded"
)

// A flush the connection drops while it waits (the server restarting)
// is made again once the connection is back: nats.go answers it as if
// the connection were closed, and a worker starting then must not take
// that for a closed connection and exit. Flushes run back to back while
// the server restarts three times, so that restarts cut flushes off.
func TestFlushWaitsOutAReconnect(t *testing.T) {
	dir, port := t.TempDir(), fleettest.FreePort(t)
	srv, err := embedded.Start(embedded.Options{Dir: dir, Port: port})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { srv.Close() }()
	var reconnects atomic.Int32
	nc, err := nats.Connect(srv.ClientURL(), nats.MaxReconnects(-1), nats.ReconnectWait(20*time.Millisecond),
		nats.ReconnectJitter(0, 0), nats.ReconnectHandler(func(*nats.Conn) { reconnects.Add(1) }))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	stop := make(chan struct{})
	errs := make(chan error, 1)
	flushes := 0
	go func() {
		defer close(errs)
		for {
			select {
			case <-stop:
				return
			default:
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			err := flush(ctx, nc)
			cancel()
			if err != nil {
				errs <- err
				return
			}
			flushes++
		}
	}()
	for range 3 {
		time.Sleep(100 * time.Millisecond)
		srv.Close()
		time.Sleep(100 * time.Millisecond)
		if srv, err = embedded.Start(embedded.Options{Dir: dir, Port: port}); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for reconnects.Load() < 3 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond)
	close(stop)
	if err := <-errs; err != nil {
		t.Fatalf("a flush failed across a server restart: %v", err)
	}
	if reconnects.Load() < 3 || flushes == 0 {
		t.Fatalf("%d reconnects, %d flushes: want 3 restarts survived while flushing", reconnects.Load(), flushes)
	}
	// a closed connection still fails at once
	nc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	start := time.Now()
	if err := flush(ctx, nc); err == nil || time.Since(start) > time.Second {
		t.Fatalf("flush on a closed connection: %v after %v, want an error at once", err, time.Since(start))
	}
}
