package fleet

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"

	"github.com/ptcfleet/ptc/internal/fleettest"
)

// A lookup that does not find a tool tells NATS's answer (no service
// listens for $SRV.INFO, or services answer and none offers the tool)
// from no answer at all (a listener that never answers, as a request lost
// while a node restarts; a connection reconnecting): only the first says
// the tool is not offered.
func TestToolLookupTellsNoAnswerFromNone(t *testing.T) {
	registry := func(nc *nats.Conn) *toolRegistry {
		return &toolRegistry{nc: nc, ttl: time.Minute, minRefresh: time.Millisecond, wait: 50 * time.Millisecond, missWait: 200 * time.Millisecond}
	}
	ctx := context.Background()
	// heard looks name up in a new registry until NATS's answer is heard
	// in time: on a loaded machine under -race a service's info, or the
	// server's no-responders status, can come after the registry's short
	// waits, and a late answer is rightly told as none (errDiscoveryUnheard).
	// Any other outcome ends the wait at once.
	heard := func(t *testing.T, nc *nats.Conn, name string) (bool, error) {
		t.Helper()
		for deadline := time.Now().Add(20 * time.Second); ; {
			_, ok, err := registry(nc).lookupHeard(ctx, name)
			if !errors.Is(err, errDiscoveryUnheard) || time.Now().After(deadline) {
				return ok, err
			}
		}
	}
	definite := func(t *testing.T, nc *nats.Conn) {
		t.Helper()
		if ok, err := heard(t, nc, "ghost"); ok || err != nil {
			t.Fatalf("lookup = %v, %v; want not offered, heard", ok, err)
		}
	}
	unheard := func(t *testing.T, nc *nats.Conn) {
		t.Helper()
		r := registry(nc)
		for range 2 { // the second lookup is not answered from a miss
			if _, ok, err := r.lookupHeard(ctx, "ghost"); ok || err == nil {
				t.Fatalf("lookup = %v, %v; want no answer", ok, err)
			}
		}
	}
	t.Run("no services", func(t *testing.T) {
		definite(t, fleettest.Start(t).Conn())
	})
	t.Run("other services", func(t *testing.T) {
		s := fleettest.Start(t)
		svc, err := NewToolService(s.Conn(), ToolServiceConfig{Name: "shop"})
		if err != nil {
			t.Fatal(err)
		}
		if err := svc.Register("echo", ToolSpec{}, func(ctx context.Context, args map[string]any) (any, error) { return args, nil }); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = svc.Stop(context.Background()) })
		nc := s.Conn()
		definite(t, nc)
		if ok, err := heard(t, nc, "echo"); !ok || err != nil {
			t.Fatalf("lookup of an offered tool = %v, %v", ok, err)
		}
	})
	t.Run("silent listener", func(t *testing.T) {
		s := fleettest.Start(t)
		snc := s.Conn()
		if _, err := snc.Subscribe(micro.APIPrefix+"."+micro.InfoVerb.String(), func(*nats.Msg) {}); err != nil {
			t.Fatal(err)
		}
		if err := snc.Flush(); err != nil {
			t.Fatal(err)
		}
		nc := s.Conn()
		unheard(t, nc)
		if _, _, err := registry(nc).lookupHeard(ctx, "ghost"); !errors.Is(err, errDiscoveryUnheard) {
			t.Fatalf("lookup error %v, want %v", err, errDiscoveryUnheard)
		}
	})
	t.Run("reconnecting", func(t *testing.T) {
		s := fleettest.Start(t)
		nc, err := s.Server.Conn(nats.MaxReconnects(-1), nats.ReconnectWait(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		s.Close()
		unheard(t, nc)
	})
	t.Run("closed", func(t *testing.T) {
		nc := fleettest.Start(t).Conn()
		nc.Close()
		unheard(t, nc)
	})
}
