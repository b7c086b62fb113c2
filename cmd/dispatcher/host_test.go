package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/ptcfleet/ptc/internal/fleettest"
	"github.com/ptcfleet/ptc/pkg/fleet"
)

// The viewer and the MCP endpoint, listening on a loopback address,
// answer only requests whose Host names a loopback host: a page whose name
// was pointed at 127.0.0.1 (DNS rebinding) gets 403 from both.
func TestForeignHostRefused(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	srv := fleettest.Start(t)
	client, err := fleet.NewClient(ctx, srv.Conn(), fleet.ClientConfig{})
	if err != nil {
		t.Fatal(err)
	}
	v, err := newViewer(client, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	viewer := httptest.NewServer(v.Handler())
	defer viewer.Close()
	sctx, stop := context.WithCancel(ctx)
	defer stop()
	bound := make(chan string, 1)
	go func() { _ = serveMCP(sctx, client, srv.Conn(), "127.0.0.1:0", zerolog.Nop(), bound) }()
	mcpURL := "http://" + <-bound + "/mcp"

	do := func(method, url, host string) (int, string) {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if host != "" {
			req.Host = host
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, host := range []string{"attacker.example", "attacker.example:8090", "10.0.0.1:8090"} {
		for _, c := range []struct{ method, url string }{
			{"GET", viewer.URL + "/"}, {"GET", viewer.URL + "/api/missions"}, {"POST", mcpURL},
		} {
			if code, body := do(c.method, c.url, host); code != http.StatusForbidden || !strings.Contains(body, "invalid Host") {
				t.Errorf("%s %s with Host %s: %d %q, want 403", c.method, c.url, host, code, body)
			}
		}
	}
	for _, host := range []string{"", "localhost:8090", "127.0.0.1", "[::1]:8090"} {
		if code, body := do("GET", viewer.URL+"/api/missions", host); code != http.StatusOK {
			t.Errorf("viewer with Host %q: %d %s", host, code, body)
		}
	}
}
