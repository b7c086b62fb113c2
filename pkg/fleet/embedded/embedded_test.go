package embedded

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

func TestStartJetStreamAndClose(t *testing.T) {
	s, err := Start(Options{})
	if err != nil {
		t.Fatal(err)
	}
	dir := s.Dir()
	for name, connect := range map[string]func() (*nats.Conn, error){
		"in-process": func() (*nats.Conn, error) { return s.Conn() },
		"tcp":        func() (*nats.Conn, error) { return nats.Connect(s.ClientURL()) },
	} {
		nc, err := connect()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		resp, err := nc.Request("$JS.API.INFO", nil, nats.DefaultTimeout)
		if err != nil || len(resp.Data) == 0 {
			t.Fatalf("%s: JetStream info: %v", name, err)
		}
		nc.Close()
	}
	s.Close()
	s.Close() // idempotent
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("store dir %s not removed: %v", dir, err)
	}
}

func TestKeepsGivenDir(t *testing.T) {
	dir := t.TempDir()
	s, err := Start(Options{Dir: dir, NoListen: true})
	if err != nil {
		t.Fatal(err)
	}
	if s.ClientURL() != "" {
		t.Errorf("ClientURL() = %q with NoListen", s.ClientURL())
	}
	s.Close()
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("given dir removed: %v", err)
	}
}

func TestConnectStartsEmbeddedWithoutURL(t *testing.T) {
	nc, srv, closeAll, err := Connect("", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if srv == nil || srv.ClientURL() == "" || !nc.IsConnected() {
		t.Fatalf("server %v, connected %v", srv, nc.IsConnected())
	}
	// Another client joins through the URL.
	nc2, _, close2, err := Connect(srv.ClientURL(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !nc2.IsConnected() {
		t.Fatal("second client not connected")
	}
	close2()
	dir := srv.Dir()
	closeAll()
	if !nc.IsClosed() {
		t.Error("connection not closed")
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("store dir left behind: %v", err)
	}
	if _, _, _, err := Connect("nats://127.0.0.1:1", Options{}, nats.MaxReconnects(0)); err == nil {
		t.Error("Connect to a closed port succeeded")
	}
}

func ExampleConnect() {
	// With no URL configured, run an embedded server in a temp dir.
	nc, _, closeAll, err := Connect("", Options{NoListen: true})
	if err != nil {
		panic(err)
	}
	defer closeAll()
	fmt.Println(nc.IsConnected())
	// Output: true
}

// An in-process connection's writes set no deadline: on a pipe each one
// is a timer allocated. The allocations of a publish and its flush round
// trip, with the default and with a write deadline asked for, differ by
// those timers (the server's own writes are the same in both).
func TestInProcessWritesSetNoDeadline(t *testing.T) {
	s, err := Start(Options{NoListen: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	allocs := func(opts ...nats.Option) float64 {
		nc, err := s.Conn(opts...)
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		payload := []byte("x")
		return testing.AllocsPerRun(500, func() {
			if err := nc.Publish("nowhere", payload); err != nil {
				t.Fatal(err)
			}
			if err := nc.Flush(); err != nil {
				t.Fatal(err)
			}
		})
	}
	without, with := allocs(), allocs(nats.FlusherTimeout(time.Minute))
	t.Logf("allocations of a publish and flush: %.1f without a write deadline, %.1f with one", without, with)
	if without > with-1 {
		t.Errorf("%.1f allocations a flush round trip by default, %.1f with a write deadline: the default sets one", without, with)
	}
}

// The server keeps no shared cache of routed subjects: a mission's
// subjects name it, so the cache would hold subjects routed once. A
// publish to each of many subjects still reaches their subscriber.
func TestServerCachesNoRoutedSubjects(t *testing.T) {
	s, err := Start(Options{NoListen: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	nc, err := s.Conn()
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	const subjects = 2000
	got := make(chan *nats.Msg, subjects)
	if _, err := nc.ChanSubscribe("mission.result.*.*", got); err != nil {
		t.Fatal(err)
	}
	for i := range subjects {
		if err := nc.Publish(fmt.Sprintf("mission.result.s.%d", i), []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	for i := range subjects {
		select {
		case m := <-got:
			if want := fmt.Sprintf("mission.result.s.%d", i); m.Subject != want {
				t.Fatalf("message %d on %s, want %s", i, m.Subject, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%d of %d messages delivered", i, subjects)
		}
	}
	sz, err := s.ns.Subsz(nil)
	if err != nil {
		t.Fatal(err)
	}
	if sz.NumCache != 0 {
		t.Errorf("the server caches %d routed subjects after %d distinct ones, want none", sz.NumCache, subjects)
	}
}
