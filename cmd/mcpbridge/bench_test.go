package main

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"

	"github.com/ptcfleet/ptc/internal/fleettest"
	"github.com/ptcfleet/ptc/pkg/fleet"
)

// BenchmarkBridgeCall compares one call of an MCP tool (add, structured
// output) made directly with the Go SDK client and converted to plain data,
// against the same call made by a fleet Toolbox through the bridge (NATS
// request to the bridge's tool service, which makes the MCP call). Both
// talk to the same Streamable HTTP server on loopback.
func BenchmarkBridgeCall(b *testing.B) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv := newTestServer()
	hs := startBenchHTTP(b, srv)
	args := map[string]any{"a": int64(20), "b": int64(22)}

	b.Run("direct_mcp", func(b *testing.B) {
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).
			Connect(ctx, &mcp.StreamableClientTransport{Endpoint: hs}, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer cs.Close()
		for b.Loop() {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "add", Arguments: args})
			if err != nil {
				b.Fatal(err)
			}
			if _, err := convertResult(res); err != nil {
				b.Fatal(err)
			}
		}
	})

	b.Run("through_fleet", func(b *testing.B) {
		ns := fleettest.Start(b)
		log := zerolog.Nop()
		br, err := NewBridge(ns.Conn(), &Config{Servers: []ServerConfig{{Name: "bench", URL: hs, Tools: []ToolRule{{Name: "add"}}}}}, Options{Logger: &log})
		if err != nil {
			b.Fatal(err)
		}
		bctx, stop := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { defer close(done); _ = br.Run(bctx) }()
		defer func() { stop(); <-done }()
		box, err := fleet.NewToolbox(ns.Conn(), fleet.ToolboxConfig{Tools: []string{"add"}, MissRefresh: 20 * time.Millisecond})
		if err != nil {
			b.Fatal(err)
		}
		deadline := time.Now().Add(20 * time.Second)
		for {
			_, err := box.Call(ctx, "add", args)
			if err == nil {
				break
			}
			var te *fleet.ToolError
			if !errors.As(err, &te) || time.Now().After(deadline) {
				b.Fatalf("bridge not ready: %v", err)
			}
			time.Sleep(20 * time.Millisecond)
		}
		for b.Loop() {
			if _, err := box.Call(ctx, "add", args); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func startBenchHTTP(b *testing.B, srv *mcp.Server) string {
	b.Helper()
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	hs := httptest.NewServer(h)
	b.Cleanup(hs.Close)
	return hs.URL
}
