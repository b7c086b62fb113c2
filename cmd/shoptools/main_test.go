package main

import (
	"context"
	"github.com/ptcfleet/ptc/internal/cli"
	"io"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ptcfleet/ptc/pkg/fleet"
	"github.com/ptcfleet/ptc/pkg/fleet/embedded"
)

func TestServesDiscoverableTools(t *testing.T) {
	ns, err := embedded.Start(embedded.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Close()
	env := map[string]string{"PTC_NATS_URL": ns.ClientURL(), "PTC_HEALTH_ADDR": "", "PTC_CUSTOMERS": "10"}
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() { done <- run(ctx, nil, cli.MapEnv(env), io.Discard, ready) }()
	select {
	case <-ready:
	case err := <-done:
		t.Fatal(err)
	}
	nc, err := ns.Conn()
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	infos, err := fleet.Discover(ctx, nc, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, ti := range infos {
		names = append(names, ti.Name)
		if ti.Name == "list_customers" && !strings.Contains(ti.Signature, "region :string?") {
			t.Errorf("list_customers signature = %q", ti.Signature)
		}
	}
	slices.Sort(names)
	if strings.Join(names, ",") != "get_customer,list_customers,list_orders,search_emails" {
		t.Errorf("discovered tools = %v", names)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("stop: %v", err)
	}
}

func TestConfigErrors(t *testing.T) {
	for env, want := range map[string]string{"": "no NATS server", "PTC_CUSTOMERS=0": "customers must be at least 1"} {
		vars := map[string]string{"PTC_NATS_URL": "nats://127.0.0.1:1"}
		if env == "" {
			vars = map[string]string{}
		} else {
			k, v, _ := strings.Cut(env, "=")
			vars[k] = v
		}
		err := run(context.Background(), nil, cli.MapEnv(vars), io.Discard, nil)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: err = %v, want %q", env, err, want)
		}
	}
}

// A busy -health-addr stops the service at start with an error naming the
// flag, before it connects or serves any tool.
func TestBusyHealthAddr(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	ns, err := embedded.Start(embedded.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = run(ctx, []string{"-health-addr", busy.Addr().String()}, cli.MapEnv(map[string]string{"PTC_NATS_URL": ns.ClientURL()}), io.Discard, nil)
	if err == nil || !strings.Contains(err.Error(), "-health-addr "+busy.Addr().String()) || !strings.Contains(err.Error(), "address already in use") {
		t.Fatalf("err = %v, want the busy address named", err)
	}
	nc, err := ns.Conn()
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if infos, _ := fleet.Discover(ctx, nc, 300*time.Millisecond); len(infos) != 0 {
		t.Errorf("tools served after the start failed: %v", infos)
	}
}
