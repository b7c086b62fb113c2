package main

import (
	"bytes"
	"context"
	"encoding/json"
	"github.com/ptcfleet/ptc/internal/cli"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ptcfleet/ptc/internal/fleettest"
	"github.com/ptcfleet/ptc/pkg/fleet"
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
