package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ptcfleet/ptc/internal/cli"
	"github.com/ptcfleet/ptc/internal/fleettest"
	"github.com/ptcfleet/ptc/internal/syncbuf"
	"github.com/ptcfleet/ptc/pkg/fleet"
	"github.com/ptcfleet/ptc/pkg/fleet/embedded"
)

func TestRunNeedsConfigAndNATS(t *testing.T) {
	for _, c := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"PTC_NATS_URL": "nats://127.0.0.1:1"}, "no configuration: set -mcp-config or PTC_MCP_CONFIG"},
		{map[string]string{"PTC_MCP_CONFIG": "/nonexistent.yaml"}, "no NATS server"},
		{map[string]string{"PTC_MCP_CONFIG": "/nonexistent.yaml", "PTC_NATS_URL": "nats://127.0.0.1:1"}, "config: open /nonexistent.yaml"},
	} {
		var out bytes.Buffer
		err := run(context.Background(), nil, cli.MapEnv(c.env), &out, nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("env %v: %v, want %q", c.env, err, c.want)
		}
	}
}

// The binary's entry point, configured by environment only, serves a stdio
// server's tools until its context ends.
func TestRunServesConfiguredServers(t *testing.T) {
	srv := fleettest.Start(t)
	cfg := filepath.Join(t.TempDir(), "bridge.yaml")
	if err := os.WriteFile(cfg, []byte(`servers:
  - name: viaenv
    command: ["${TEST_BINARY}"]
    env: {`+serverEnv+`: stdio}
    tools: [{name: add}]
`), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"PTC_MCP_CONFIG": cfg, "PTC_NATS_URL": srv.ClientURL(), "PTC_HEALTH_ADDR": "127.0.0.1:0", "TEST_BINARY": os.Args[0]}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	var logs bytes.Buffer
	bound := make(chan string, 1)
	go func() { done <- run(ctx, nil, cli.MapEnv(env), &logs, bound) }()
	nc := srv.Conn()
	deadline := time.Now().Add(30 * time.Second)
	for {
		tools, _ := fleet.Discover(ctx, nc, 200*time.Millisecond)
		if len(tools) == 1 && tools[0].Name == "add" && tools[0].Service == "viaenv" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("tools not served: %v", tools)
		}
		time.Sleep(20 * time.Millisecond)
	}
	resp, err := http.Get("http://" + <-bound + "/status")
	if err != nil {
		t.Fatal(err)
	}
	var status []ServerState
	err = json.NewDecoder(resp.Body).Decode(&status)
	resp.Body.Close()
	if err != nil || len(status) != 1 || !status[0].Connected || strings.Join(status[0].Tools, ",") != "add" {
		t.Errorf("/status = %+v, %v", status, err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("run: %v", err)
	}
}

// A bridge started before its NATS server waits for it, as the worker
// does, and serves its tools once the server is up.
func TestRunWaitsForNATS(t *testing.T) {
	port := fleettest.FreePort(t)
	cfg := filepath.Join(t.TempDir(), "bridge.yaml")
	if err := os.WriteFile(cfg, []byte(`servers:
  - name: late
    command: ["${TEST_BINARY}"]
    env: {`+serverEnv+`: stdio}
    tools: [{name: add}]
`), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"PTC_MCP_CONFIG": cfg, "PTC_NATS_URL": fmt.Sprintf("nats://127.0.0.1:%d", port),
		"PTC_HEALTH_ADDR": "", "TEST_BINARY": os.Args[0]}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	logs := &syncbuf.Buffer{}
	go func() { done <- run(ctx, nil, cli.MapEnv(env), logs, nil) }()
	const waiting = `"message":"nats not reachable yet; retrying every second"`
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(logs.String(), waiting); {
		select {
		case err := <-done:
			t.Fatalf("the bridge exited before NATS started: %v\n%s", err, logs.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the bridge did not say it waits for NATS:\n%s", logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	ns, err := embedded.Start(embedded.Options{Dir: t.TempDir(), Port: port})
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Close()
	nc, err := ns.Conn()
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	for deadline := time.Now().Add(30 * time.Second); ; {
		tools, _ := fleet.Discover(ctx, nc, 200*time.Millisecond)
		if len(tools) == 1 && tools[0].Name == "add" && tools[0].Service == "late" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("tools not served once NATS started: %v\n%s", tools, logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("run: %v", err)
	}
	if !strings.Contains(logs.String(), `"message":"nats connected"`) {
		t.Errorf("the bridge did not log its connection:\n%s", logs.String())
	}
}

func FuzzParseConfig(f *testing.F) {
	f.Add("servers:\n  - name: a\n    url: http://x\n    headers: {A: \"${B}\"}\n")
	f.Add(`{"servers":[{"name":"b","command":["x"],"tools":[{"name":"t.x","as":"t"}]}]}`)
	f.Fuzz(func(t *testing.T, src string) {
		c, err := ParseConfig([]byte(src), func(string) string { return "v" })
		if err == nil && c.Validate() != nil {
			t.Fatal("ParseConfig accepted an invalid configuration")
		}
	})
}

func FuzzTextValue(f *testing.F) {
	f.Add(`{"a":[1,2.5,null]}`)
	f.Add("12 apples")
	f.Add(`"quoted"`)
	f.Fuzz(func(t *testing.T, text string) {
		v := textValue(text)
		if s, ok := v.(string); ok && s != text && !strings.HasPrefix(strings.TrimSpace(text), `"`) {
			t.Fatalf("text %q changed to the string %q", text, s)
		}
	})
}
