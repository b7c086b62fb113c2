package main

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"

	"github.com/ptcfleet/ptc/internal/fleettest"
	"github.com/ptcfleet/ptc/internal/fleettest/agentworker"
	"github.com/ptcfleet/ptc/pkg/agent/llm/llmtest"
	"github.com/ptcfleet/ptc/pkg/fleet"
	"github.com/ptcfleet/ptc/pkg/fleet/embedded"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// testFleet is an embedded NATS server with JetStream, one worker running
// agent missions with a scripted model, and a client.
type testFleet struct {
	srv    *embedded.Server
	nc     *nats.Conn
	client *fleet.Client
	model  *llmtest.Model
}

func testContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func startFleet(t *testing.T, replies ...llmtest.Reply) *testFleet {
	t.Helper()
	srv := fleettest.Start(t)
	conn := srv.Conn
	ctx := testContext(t)
	model := llmtest.NewT(t, replies...)
	agentworker.Start(ctx, t, conn(), model, func(c *fleet.WorkerConfig) {
		c.ToolTimeout, c.ToolMissRefresh = 10*time.Second, 50*time.Millisecond
	})
	client, err := fleet.NewClient(ctx, conn(), fleet.ClientConfig{})
	if err != nil {
		t.Fatal(err)
	}
	return &testFleet{srv: srv.Server, nc: conn(), client: client, model: model}
}

// startBridge runs a bridge for cfg until the test ends.
func (f *testFleet) startBridge(t *testing.T, cfg *Config) *Bridge {
	t.Helper()
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	b, err := NewBridge(f.nc, cfg, Options{Logger: &log, MinBackoff: 20 * time.Millisecond, MaxBackoff: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = b.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return b
}

// waitTools waits until discovery finds every named tool and returns what
// it found.
func (f *testFleet) waitTools(t *testing.T, names ...string) map[string]fleet.ToolInfo {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		list, err := fleet.Discover(testContext(t), f.nc, 200*time.Millisecond)
		if err != nil && !errors.Is(err, nats.ErrNoResponders) {
			t.Fatal(err)
		}
		found := map[string]fleet.ToolInfo{}
		for _, ti := range list {
			found[ti.Name] = ti
		}
		missing := 0
		for _, n := range names {
			if _, ok := found[n]; !ok {
				missing++
			}
		}
		if missing == 0 {
			return found
		}
		if time.Now().After(deadline) {
			t.Fatalf("tools %v not discovered; found %v", names, found)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (f *testFleet) run(t *testing.T, sig string, tools ...string) *messages.Step {
	t.Helper()
	m := &messages.Mission{Kind: messages.KindAgent, Tools: tools, Agent: &messages.AgentSpec{
		Prompt: "use the MCP tools", Signature: sig, Tools: tools,
	}}
	step, err := f.client.Run(testContext(t), m)
	if err != nil {
		t.Fatal(err)
	}
	return step
}

func (f *testFleet) toolbox(t *testing.T, tools ...string) *fleet.Toolbox {
	t.Helper()
	box, err := fleet.NewToolbox(f.nc, fleet.ToolboxConfig{Tools: tools, Timeout: 10 * time.Second, MissRefresh: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return box
}

func stdioConfig(name string, rules ...ToolRule) *Config {
	return &Config{Servers: []ServerConfig{{
		Name: name, Command: []string{os.Args[0]}, Env: map[string]string{serverEnv: "stdio"}, Tools: rules,
	}}}
}

// httpServer serves newTestServer over Streamable HTTP. restart replaces
// the handler with a fresh one, as a restarted server process would be:
// sessions of the old one are unknown to it.
type httpServer struct {
	*httptest.Server
	handler atomic.Pointer[http.Handler]
}

func startHTTPServer(t *testing.T) *httpServer {
	t.Helper()
	hs := &httpServer{}
	hs.restart()
	hs.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		(*hs.handler.Load()).ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	return hs
}

func (hs *httpServer) restart() {
	srv := newTestServer()
	var h http.Handler = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	hs.handler.Store(&h)
}

// missionReplies is the scripted model's one program: it calls three MCP
// tools from PTC-Lisp and shrinks their results.
var missionReplies = []llmtest.Reply{llmtest.Code(`
(let [s (tool/add {:a 2 :b 40})
      g (tool/greet {})
      o (tool/orders {})]
  (return {:sum (:sum s)
           :greeting g
           :total (reduce + (map :total (:orders o)))
           :big (:big o)}))`)}

func checkMission(t *testing.T, step *messages.Step) {
	t.Helper()
	if !step.Ok() {
		t.Fatalf("mission failed: %v\ntrace: %+v", step.Fail, step.Trace)
	}
	ret, _ := step.Return.(map[string]any)
	want := map[string]any{"sum": int64(42), "greeting": "hello, world", "total": 33.75, "big": int64(9007199254740993)}
	for k, v := range want {
		if ret[k] != v {
			t.Errorf("return[%s] = %#v, want %#v (return %v)", k, ret[k], v, ret)
		}
	}
}

func TestMissionCallsStdioMCPServer(t *testing.T) {
	f := startFleet(t, missionReplies...)
	f.startBridge(t, stdioConfig("mcptest"))
	found := f.waitTools(t, "add", "greet", "orders")
	add := found["add"]
	if add.Service != "mcptest" || add.Subject != "tool.mcptest.add" || add.Description != "adds two integers" {
		t.Errorf("add = %+v", add)
	}
	if add.Signature != "(a :int, b :int) -> {sum :int}" {
		t.Errorf("add signature = %q", add.Signature)
	}
	if _, ok := found["bad.name"]; ok {
		t.Error("a tool with an invalid fleet name was served")
	}
	checkMission(t, f.run(t, "{sum :int, greeting :string, total :float, big :int}", "add", "greet", "orders"))
}

func TestMissionCallsHTTPMCPServer(t *testing.T) {
	hs := startHTTPServer(t)
	f := startFleet(t, missionReplies...)
	f.startBridge(t, &Config{Servers: []ServerConfig{{Name: "mcphttp", URL: hs.URL}}})
	f.waitTools(t, "add", "greet", "orders")
	checkMission(t, f.run(t, "{sum :int, greeting :string, total :float, big :int}", "add", "greet", "orders"))
}

// An isError result reaches the model as the tool's error text; the model
// reads it and finishes.
func TestMCPToolErrorReachesTheModel(t *testing.T) {
	f := startFleet(t,
		llmtest.Code(`(tool/lookup {:id 42})`),
		llmtest.Code(`(return {:ok false})`))
	f.startBridge(t, stdioConfig("mcptest"))
	f.waitTools(t, "lookup")
	step := f.run(t, "{ok :bool}", "lookup")
	if !step.Ok() {
		t.Fatalf("mission failed: %v", step.Fail)
	}
	if len(step.Trace) < 1 {
		t.Fatal("no trace")
	}
	first := step.Trace[0]
	if !strings.Contains(first.Feedback, "no customer with id 42; known ids are 1 to 10") {
		t.Errorf("feedback to the model = %q, want the tool's error text", first.Feedback)
	}
}

func TestMCPSchemasDegrade(t *testing.T) {
	f := startFleet(t)
	b := f.startBridge(t, stdioConfig("mcptest"))
	found := f.waitTools(t, "odd_union", "odd_names")
	notes := strings.Join(b.Status()[0].Notes, "\n")
	for _, want := range []string{
		"tool odd_union: input.properties.ref: $ref is not supported; typed :any",
		`tool odd_names: input.properties: the names "file-path" are not signature names`,
		"tool bad.name: skipped: not a valid fleet tool name",
	} {
		if !strings.Contains(notes, want) {
			t.Errorf("status notes lack %q:\n%s", want, notes)
		}
	}
	// anyOf of two types is a union; $ref degrades to :any.
	if got := found["odd_union"].Signature; got != "(id :int | :string, n :int, ref :any?) -> :any" {
		t.Errorf("odd_union signature = %q", got)
	}
	if got := found["odd_names"].Signature; got != "" {
		t.Errorf("odd_names signature = %q, want none (arguments passed as they are)", got)
	}
	box := f.toolbox(t, "odd_union", "odd_names")
	ctx := testContext(t)
	got, err := box.Call(ctx, "odd_names", map[string]any{"file-path": "/tmp/x"})
	if err != nil {
		t.Fatal(err)
	}
	if m, _ := got.(map[string]any); m["file-path"] != "/tmp/x" {
		t.Errorf("odd_names echoed %#v", got)
	}
	got, err = box.Call(ctx, "odd_union", map[string]any{"id": "abc", "n": int64(3)})
	if err != nil {
		t.Fatal(err)
	}
	if m, _ := got.(map[string]any); m["id"] != "abc" || m["n"] != int64(3) {
		t.Errorf("odd_union echoed %#v", got)
	}
}

// An MCP result larger than one NATS message reaches the caller whole: the
// bridge's tool service sends it out of band, through its results bucket
// (docs/wire.md), like any large tool result.
func TestMCPHugeResults(t *testing.T) {
	f := startFleet(t)
	f.startBridge(t, stdioConfig("mcptest"))
	f.waitTools(t, "blob")
	box := f.toolbox(t, "blob")
	ctx := testContext(t)
	limit := int(f.nc.MaxPayload())
	got, err := box.Call(ctx, "blob", map[string]any{"bytes": int64(limit / 2)})
	if err != nil {
		t.Fatal(err)
	}
	if s, _ := got.(string); len(s) != limit/2 || strings.Trim(s, "a") != "" {
		t.Fatalf("half-limit result: %d bytes", len(s))
	}
	got, err = box.Call(ctx, "blob", map[string]any{"bytes": int64(2 * limit)})
	if s, _ := got.(string); err != nil || len(s) != 2*limit || strings.Trim(s, "a") != "" {
		t.Fatalf("result of twice the limit: %d bytes, %v", len(s), err)
	}
	// The server and the bridge are still fine.
	if _, err := box.Call(ctx, "blob", map[string]any{"bytes": int64(10)}); err != nil {
		t.Fatalf("after a huge result: %v", err)
	}
}

// A stdio server that dies is restarted; its tools answer "unavailable"
// until it is back.
func TestCrashingStdioServerIsRestarted(t *testing.T) {
	f := startFleet(t)
	b := f.startBridge(t, stdioConfig("mcptest"))
	f.waitTools(t, "pid", "crash")
	box := f.toolbox(t, "pid", "crash")
	ctx := testContext(t)
	first, err := box.Call(ctx, "pid", nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = box.Call(ctx, "crash", nil)
	var te *fleet.ToolError
	if !errors.As(err, &te) || te.Code != messages.ToolErrUnavailable {
		t.Fatalf("call that kills the server: %v", err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		got, err := box.Call(ctx, "pid", nil)
		if err == nil {
			if got.(map[string]any)["pid"] == first.(map[string]any)["pid"] {
				t.Fatalf("pid unchanged after the crash: %v", got)
			}
			break
		}
		if !errors.As(err, &te) || te.Code != messages.ToolErrUnavailable {
			t.Fatalf("while restarting: %v, want unavailable", err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("server not back: %v (status %+v)", err, b.Status())
		}
		time.Sleep(10 * time.Millisecond)
	}
	st := b.Status()
	if len(st) != 1 || !st[0].Connected || st[0].Restarts < 1 {
		t.Errorf("status = %+v", st)
	}
}

// A server whose command cannot start is retried with backoff and reported
// in Status; nothing is served for it.
func TestUnstartableServerIsRetried(t *testing.T) {
	f := startFleet(t)
	b := f.startBridge(t, &Config{Servers: []ServerConfig{{Name: "missing", Command: []string{"/nonexistent/mcp-server"}}}})
	deadline := time.Now().Add(10 * time.Second)
	for {
		st := b.Status()
		if st[0].LastError != "" {
			if st[0].Connected || len(st[0].Tools) != 0 {
				t.Fatalf("status = %+v", st[0])
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no error reported for an unstartable server")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestHTTPServerRestartIsFollowed(t *testing.T) {
	hs := startHTTPServer(t)
	f := startFleet(t)
	f.startBridge(t, &Config{Servers: []ServerConfig{{Name: "mcphttp", URL: hs.URL}}})
	f.waitTools(t, "add")
	box := f.toolbox(t, "add")
	ctx := testContext(t)
	if _, err := box.Call(ctx, "add", map[string]any{"a": int64(1), "b": int64(2)}); err != nil {
		t.Fatal(err)
	}
	hs.restart()
	deadline := time.Now().Add(30 * time.Second)
	for {
		got, err := box.Call(ctx, "add", map[string]any{"a": int64(1), "b": int64(2)})
		if err == nil {
			if got.(map[string]any)["sum"] != int64(3) {
				t.Fatalf("after restart: %v", got)
			}
			return
		}
		var te *fleet.ToolError
		if !errors.As(err, &te) || te.Code != messages.ToolErrUnavailable {
			t.Fatalf("while reconnecting: %v, want unavailable", err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("not reconnected: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestToolListChangesAreFollowed(t *testing.T) {
	for _, transport := range []string{"stdio", "http"} {
		t.Run(transport, func(t *testing.T) {
			f := startFleet(t)
			cfg := stdioConfig("mcptest")
			if transport == "http" {
				cfg = &Config{Servers: []ServerConfig{{Name: "mcptest", URL: startHTTPServer(t).URL}}}
			}
			f.startBridge(t, cfg)
			f.waitTools(t, "grow")
			box := f.toolbox(t, "grow", "late")
			ctx := testContext(t)
			if _, err := box.Call(ctx, "grow", nil); err != nil {
				t.Fatal(err)
			}
			f.waitTools(t, "late", "grow", "add")
			got, err := box.Call(ctx, "late", nil)
			if err != nil || got != "late" {
				t.Fatalf("late tool: %#v, %v", got, err)
			}
		})
	}
}

func TestAllowListAndRenames(t *testing.T) {
	f := startFleet(t)
	f.startBridge(t, stdioConfig("mcptest", ToolRule{Name: "bad.name", As: "renamed"}, ToolRule{Name: "add", As: "plus"}, ToolRule{Name: "greet"}))
	found := f.waitTools(t, "renamed", "plus", "greet")
	for _, n := range []string{"add", "orders", "crash", "bad.name"} {
		if _, ok := found[n]; ok {
			t.Errorf("%s served although not allowed", n)
		}
	}
	if found["plus"].Subject != "tool.mcptest.plus" {
		t.Errorf("plus = %+v", found["plus"])
	}
	box := f.toolbox(t, "renamed", "plus")
	ctx := testContext(t)
	if got, err := box.Call(ctx, "renamed", nil); err != nil || got != "renamed ok" {
		t.Errorf("renamed: %#v, %v", got, err)
	}
	if got, err := box.Call(ctx, "plus", map[string]any{"a": int64(1), "b": int64(1)}); err != nil || got.(map[string]any)["sum"] != int64(2) {
		t.Errorf("plus: %#v, %v", got, err)
	}
}

// An HTTP server that goes away: calls answer "unavailable" at once (no
// timeout), and the bridge keeps retrying and reporting why.
func TestDeadHTTPServerIsUnavailable(t *testing.T) {
	hs := startHTTPServer(t)
	f := startFleet(t)
	b := f.startBridge(t, &Config{Servers: []ServerConfig{{Name: "mcphttp", URL: hs.URL}}})
	f.waitTools(t, "add")
	box := f.toolbox(t, "add")
	ctx := testContext(t)
	if _, err := box.Call(ctx, "add", map[string]any{"a": int64(1), "b": int64(2)}); err != nil {
		t.Fatal(err)
	}
	hs.CloseClientConnections()
	hs.Close()
	for range 3 {
		_, err := box.Call(ctx, "add", map[string]any{"a": int64(1), "b": int64(2)})
		var te *fleet.ToolError
		if !errors.As(err, &te) || te.Code != messages.ToolErrUnavailable {
			t.Fatalf("call to a dead server: %v, want unavailable", err)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		st := b.Status()[0]
		if !st.Connected && st.LastError != "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("status = %+v", st)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
