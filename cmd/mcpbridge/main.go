// Command mcpbridge serves the tools of MCP (Model Context Protocol) servers
// as fleet tools: it connects to each configured server, over stdio (it
// starts the command) or Streamable HTTP, lists its tools and serves each as
// a micro endpoint tool.<service>.<tool> with a signature derived from the
// tool's JSON Schemas, so workers discover and call them like any other
// tool service. Servers that exit or fail are reconnected with backoff;
// their tools answer "unavailable" meanwhile; tool list changes are
// followed. See docs/mcp.md.
//
//	mcpbridge -config bridge.yaml -nats-url nats://localhost:4222
//
// Every flag has an environment twin (-config → PTC_MCP_CONFIG).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/ptcfleet/ptc/internal/cli"
)

func main() {
	cli.Main("mcpbridge", func(ctx context.Context) error { return run(ctx, os.Args[1:], os.LookupEnv, os.Stderr, nil) }, nil)
}

// run runs the bridge until ctx ends; bound, when not nil, receives the
// address of the health and status endpoints once they listen.
func run(ctx context.Context, args []string, lookup cli.Lookup, logOut io.Writer, bound chan<- string) error {
	fs := flag.NewFlagSet("mcpbridge", flag.ContinueOnError)
	fs.SetOutput(logOut)
	var (
		natsOpts   cli.NATSOptions
		logOpts    cli.LogOptions
		configPath string
		healthAddr string
	)
	natsOpts.Register(fs)
	logOpts.Register(fs)
	fs.StringVar(&configPath, "mcp-config", "", "the bridge's configuration file (YAML or JSON): the MCP servers to serve")
	fs.StringVar(&healthAddr, "health-addr", ":8083", "address of the /healthz, /readyz and /status endpoints (empty: off; the default, when busy, gives way to a free port)")
	cli.Usage(fs, "mcpbridge -mcp-config FILE [flags]")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := cli.ApplyEnv(fs, lookup); err != nil {
		return err
	}
	if err := natsOpts.Validate(); err != nil {
		return err
	}
	if configPath == "" {
		return errors.New("no configuration: set -mcp-config or PTC_MCP_CONFIG")
	}
	if natsOpts.URL == "" {
		return errors.New("no NATS server: set -nats-url or PTC_NATS_URL")
	}
	cfg, err := LoadConfig(configPath, lookup.Getenv)
	if err != nil {
		return err
	}
	log, err := logOpts.Logger(logOut, "mcpbridge")
	if err != nil {
		return err
	}
	// The endpoint's address is taken before anything starts: a busy
	// address the user chose stops the bridge here.
	hl, err := cli.ListenFlag(fs, "health-addr")
	if err != nil {
		return err
	}
	defer hl.Close()
	hl.WarnBusy(&log, "health")
	// started before NATS (a pod next to its server), the bridge waits
	// for it as the worker does
	nc, err := natsOpts.Dial(ctx, natsOpts.URL, "ptc-mcpbridge", log)
	if err != nil {
		return err
	}
	defer nc.Close()
	b, err := NewBridge(nc, cfg, Options{Logger: &log})
	if err != nil {
		return err
	}
	if ln := hl.Listener; ln != nil {
		health := cli.Health{Ready: func() error {
			if !nc.IsConnected() {
				return errors.New("nats disconnected")
			}
			return nil
		}}
		mux := http.NewServeMux()
		mux.Handle("/", health.Handler())
		// /status: each MCP server's connection, tools, last error and
		// schema notes, as JSON.
		mux.HandleFunc("/status", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(b.Status())
		})
		if bound != nil {
			bound <- ln.Addr().String()
		}
		hs := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
		go func() { _ = hs.Serve(ln) }()
		defer hs.Close()
	}
	return b.Run(ctx)
}
