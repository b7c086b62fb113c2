package fleettest

import (
	"context"
	"fmt"
	"net"
	"slices"
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

// TestHeldJSAcknowledgesOnlyOnceReleased: publishes wait for Release (a
// synchronous one gives up with its context), then both kinds are
// acknowledged naming the stream, and every publish is counted.
func TestHeldJSAcknowledgesOnlyOnceReleased(t *testing.T) {
	h := NewHeldJS("JOURNAL")
	short, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := h.PublishMsg(short, nats.NewMsg("a")); err != context.DeadlineExceeded {
		t.Fatalf("held publish = %v, want the context's deadline", err)
	}
	f, err := h.PublishMsgAsync(nats.NewMsg("b"))
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-f.Ok():
		t.Fatal("async publish acknowledged before Release")
	case <-time.After(20 * time.Millisecond):
	}
	if h.Released() {
		t.Fatal("Released before Release")
	}
	h.Release()
	if ack := <-f.Ok(); ack.Stream != "JOURNAL" || f.Msg().Subject != "b" {
		t.Errorf("async ack = %+v for %q", ack, f.Msg().Subject)
	}
	ack, err := h.PublishMsg(context.Background(), nats.NewMsg("c"))
	if err != nil || ack.Stream != "JOURNAL" {
		t.Errorf("publish after Release = %+v, %v", ack, err)
	}
	if !h.Released() || h.Writes() != 3 {
		t.Errorf("released %v, writes %d; want true, 3", h.Released(), h.Writes())
	}
}

// TestFreePort: the port returned can be listened on, and lies below the
// kernel's ephemeral range, where no outgoing connection takes it.
func TestFreePort(t *testing.T) {
	low, _ := ephemeralPorts()
	seen := map[int]bool{}
	for range 20 {
		port := FreePort(t)
		if port < minFixedPort || port >= low {
			t.Errorf("port %d: want one in [%d, %d)", port, minFixedPort, low)
		}
		seen[port] = true
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			t.Fatalf("port %d: %v", port, err)
		}
		l.Close()
	}
	if len(seen) < 10 {
		t.Errorf("20 ports drawn, %d distinct: want them spread", len(seen))
	}
}

// The resume latencies are reported by their ranks, whatever order they
// came in.
func TestReportResumeLatencies(t *testing.T) {
	var lat, burst []time.Duration
	for i := range 10 {
		lat = append(lat, time.Duration(10-i)*time.Millisecond)
		burst = append(burst, time.Duration(100+10*i)*time.Millisecond)
	}
	r := testing.Benchmark(func(b *testing.B) {
		ReportResumeLatencies(b, slices.Clone(lat), slices.Clone(burst))
	})
	want := map[string]float64{"p50-ms": 6, "p90-ms": 10, "burst-p50-ms": 150, "burst-max-ms": 190}
	for name, v := range want {
		if r.Extra[name] != v {
			t.Errorf("%s = %v, want %v (all: %v)", name, r.Extra[name], v, r.Extra)
		}
	}
}
