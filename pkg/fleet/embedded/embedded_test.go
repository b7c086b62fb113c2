package embedded

import (
	"os"
	"testing"

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
