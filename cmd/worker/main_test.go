package main

import (
	"context"
	"fmt"
	"github.com/ptcfleet/ptc/internal/cli"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/ptcfleet/ptc/internal/fleettest"
	"github.com/ptcfleet/ptc/internal/syncbuf"
	"github.com/ptcfleet/ptc/internal/webtest"
	"github.com/ptcfleet/ptc/pkg/fleet"
	"github.com/ptcfleet/ptc/pkg/fleet/embedded"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// TestWorkerConfiguredByEnvironment runs the worker binary's run function
// with its whole configuration in environment variables (as in Kubernetes):
// an external NATS, a model named by PTC_MODEL_DEFAULT served by an
// OpenAI-compatible server, the example tools; then checks readiness, runs a
// mission and drains on cancel.
func TestWorkerConfiguredByEnvironment(t *testing.T) {
	ns := fleettest.Start(t)
	llmSrv, calls := webtest.ScriptedChat(t, "```clojure\n"+`(return {:n (count (tool/list_customers {:region "north"}))})`+"\n```")
	vars := map[string]string{
		"PTC_NATS_URL":      ns.ClientURL(),
		"PTC_SLOTS":         "2",
		"PTC_HEALTH_ADDR":   "127.0.0.1:0",
		"PTC_EXAMPLE_TOOLS": "true",
		"PTC_DRAIN_GRACE":   "2s",
		"PTC_MODEL_DEFAULT": "openai:test-model@" + llmSrv.URL + "/v1",
		"PTC_MAX_TURNS":     "7",
		"PTC_LLM_OPTS":      "temperature",
	}
	var environ []string
	for k, v := range vars {
		environ = append(environ, k+"="+v)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ready := make(chan string, 1)
	done := make(chan error, 1)
	var logs syncbuf.Buffer
	go func() { done <- run(ctx, nil, cli.MapEnv(vars), environ, &logs, ready) }()
	var addr string
	select {
	case addr = <-ready:
	case err := <-done:
		t.Fatalf("worker exited: %v\n%s", err, logs.String())
	case <-time.After(30 * time.Second):
		t.Fatal("worker did not start")
	}
	if code := httpStatus(t, "http://"+addr+"/readyz"); code != http.StatusOK {
		t.Fatalf("readyz = %d", code)
	}

	client, err := fleet.NewClient(ctx, ns.Conn(), fleet.ClientConfig{})
	if err != nil {
		t.Fatal(err)
	}
	mctx, mcancel := context.WithTimeout(ctx, 30*time.Second)
	defer mcancel()
	step, err := client.Run(mctx, &messages.Mission{
		ID: messages.NewMissionID(), Kind: messages.KindAgent,
		Agent: &messages.AgentSpec{Prompt: "How many customers in the north?", Signature: "{n :int}", Tools: []string{"list_customers"}},
		Tools: []string{"list_customers"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if step.Fail != nil || step.Return.(map[string]any)["n"] != int64(499) {
		t.Fatalf("step: return=%v fail=%+v", step.Return, step.Fail)
	}
	if step.Usage.InputTokens != 100 || calls.Load() != 1 {
		t.Errorf("usage = %+v, model calls = %d", step.Usage, calls.Load())
	}
	// The ceilings from the environment refuse missions over them.
	for _, spec := range []*messages.AgentSpec{
		{Prompt: "p", Limits: messages.Limits{MaxTurns: 8}},
		{Prompt: "p", LLMOpts: map[string]any{"max_tokens": int64(10)}},
	} {
		step, err := client.Run(mctx, &messages.Mission{ID: messages.NewMissionID(), Kind: messages.KindAgent, Agent: spec})
		if err != nil || step.Fail == nil || step.Fail.Reason != fleet.ReasonOverLimit {
			t.Errorf("mission over the ceilings: %+v, %v", step, err)
		}
	}
	if calls.Load() != 1 {
		t.Errorf("refused missions called the model")
	}

	// /metrics on the health address counts the mission, its model call
	// and its tool call (the final count lands just after the result).
	wantMetrics := []string{
		`ptc_missions_finished_total{reason="",state="succeeded"} 1`,
		`ptc_llm_requests_total{model="default"} 1`,
		`ptc_llm_tokens_total{kind="input",model="default"} 100`,
		`ptc_tool_calls_total{code="ok",tool="list_customers"} 1`,
		`ptc_tool_requests_total{code="ok",service="shop",tool="list_customers"} 1`,
		`ptc_worker_slots 2`,
		`go_goroutines `,
	}
	var body string
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		body = webtest.Get(t, "http://"+addr+"/metrics")
		if strings.Contains(body, wantMetrics[0]) {
			break
		}
	}
	for _, want := range wantMetrics {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("drain: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("worker did not drain")
	}
	for _, want := range []string{`"message":"config"`, `"message":"worker started"`, `"message":"draining"`, `"message":"stopped"`} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("logs lack %s", want)
		}
	}
}

func TestWorkerConfigErrors(t *testing.T) {
	cases := []struct {
		env  map[string]string
		args []string
		want string
	}{
		{map[string]string{"PTC_SLOTS": "0"}, nil, "slots must be at least 1"},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, nil, "only http/protobuf"},
		{map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"}, nil, "only otlp"},
		{map[string]string{"PTC_SLOTS": "many"}, nil, `PTC_SLOTS="many"`},
		{map[string]string{"PTC_NATS_USER": "u"}, nil, "go together"},
		{map[string]string{"PTC_LOG_LEVEL": "loud"}, nil, "log level"},
		{map[string]string{"PTC_MODEL_X": "nosuch:model"}, nil, "PTC_MODEL_X"},
		{nil, []string{"extra"}, "unexpected arguments"},
		{nil, []string{"-replicas", "9"}, "replicas must be 1 to 5"},
		{nil, []string{"setup"}, "setup needs a NATS URL"},
		{nil, []string{"setup", "extra"}, "unexpected arguments"},
		{map[string]string{"PTC_MAX_ACK_PENDING": "0"}, []string{"setup"}, "max-ack-pending must be at least 1, got 0"},
		{map[string]string{"PTC_TOOL_PINS": "lookup"}, nil, `tool-pins: "lookup" is not tool=service`},
		{map[string]string{"PTC_APPROVAL_RULES": `[{"tool":"refund","when":{"arg":"amount","op":"~","value":1}}]`}, nil, `approval-rules[0].when.op: "~" is not one of > >= < <= = !=`},
		{map[string]string{"PTC_APPROVAL_RULES": `[{"tool":"refund","if":{}}]`}, nil, `approval-rules: json: unknown field "if"`},
		{map[string]string{"PTC_TOOL_PINS": "lookup=a.b"}, nil, `tool pin "lookup"="a.b"`},
		{map[string]string{"PTC_MAX_TURNS": "-1"}, nil, "ceilings must be ≥ 0"},
		{map[string]string{"PTC_STALLED_AFTER": "500ms"}, nil, "stalled-after must be at least 1s, got 500ms"},
		{map[string]string{"PTC_NATS_USER": "worker", "PTC_NATS_PASSWORD": "change-me-worker"}, nil, "placeholder"},
	}
	for _, c := range cases {
		var environ []string
		for k, v := range c.env {
			environ = append(environ, k+"="+v)
		}
		err := run(context.Background(), c.args, cli.MapEnv(c.env), environ, io.Discard, nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v %v: err = %v, want %q", c.env, c.args, err, c.want)
		}
	}
}

func httpStatus(t *testing.T, url string) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// startWorker runs the worker with vars until the test ends; it returns once
// the worker is ready, with its logs.
func startWorker(t *testing.T, vars map[string]string) *syncbuf.Buffer {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	done := make(chan error, 1)
	logs := &syncbuf.Buffer{}
	go func() { done <- run(ctx, nil, cli.MapEnv(vars), nil, logs, ready) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Error("worker did not stop")
		}
	})
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("worker exited: %v\n%s", err, logs.String())
	case <-time.After(30 * time.Second):
		t.Fatalf("worker did not start:\n%s", logs.String())
	}
	return logs
}

// Without a URL the worker prints its embedded server's URL as a plain line
// and logs "worker started" once, with one key for its id.
func TestWorkerEmbeddedServerURL(t *testing.T) {
	logs := startWorker(t, map[string]string{"PTC_HEALTH_ADDR": "", "PTC_ID": "w-embedded"})
	out := logs.String()
	if !strings.Contains(out, "\nworker: embedded NATS server at nats://127.0.0.1:") || !strings.Contains(out, "(give tools and dispatchers PTC_NATS_URL=nats://") {
		t.Errorf("no plain line with the embedded server's URL:\n%s", out)
	}
	if n := strings.Count(out, `"message":"worker started"`); n != 1 {
		t.Errorf(`"worker started" logged %d times:\n%s`, n, out)
	}
	if strings.Contains(out, "worker_id") || !strings.Contains(out, `"worker":"w-embedded"`) {
		t.Errorf("worker id not logged under the one key \"worker\":\n%s", out)
	}
}

// A worker started before its NATS server waits for it instead of exiting.
func TestWorkerWaitsForNATS(t *testing.T) {
	port := fleettest.FreePort(t)
	dir := t.TempDir()
	started := make(chan *embedded.Server, 1)
	// registered first, so the server closes after the worker stopped
	t.Cleanup(func() {
		if ns := <-started; ns != nil {
			ns.Close()
		}
	})
	go func() {
		time.Sleep(1500 * time.Millisecond)
		ns, err := embedded.Start(embedded.Options{Dir: dir, Port: port})
		if err != nil {
			t.Error(err)
		}
		started <- ns
	}()
	logs := startWorker(t, map[string]string{"PTC_HEALTH_ADDR": "", "PTC_NATS_URL": fmt.Sprintf("nats://127.0.0.1:%d", port)})
	for _, want := range []string{`"message":"nats not reachable yet; retrying every second"`, `"message":"nats connected"`, `"message":"worker started"`} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("logs lack %s:\n%s", want, logs.String())
		}
	}
}

// Several workers on one machine start with their default flags: the
// default health address is taken (by the test when it is free, so that
// this path is always exercised), each worker listens on a free port
// instead, serves its probes there and says so.
func TestSeveralWorkersWithDefaultFlags(t *testing.T) {
	var c config
	def := flagSet(&c, io.Discard).Lookup("health-addr").DefValue
	if ln, err := net.Listen("tcp", def); err == nil {
		defer ln.Close()
	}
	ns := fleettest.Start(t)
	for i := range 2 {
		ctx, cancel := context.WithCancel(context.Background())
		ready := make(chan string, 1)
		done := make(chan error, 1)
		logs := &syncbuf.Buffer{}
		vars := map[string]string{"PTC_NATS_URL": ns.ClientURL(), "PTC_ID": fmt.Sprintf("w%d", i)}
		go func() { done <- run(ctx, nil, cli.MapEnv(vars), nil, logs, ready) }()
		t.Cleanup(func() {
			cancel()
			select {
			case <-done:
			case <-time.After(30 * time.Second):
				t.Error("worker did not stop")
			}
		})
		var addr string
		select {
		case addr = <-ready:
		case err := <-done:
			t.Fatalf("worker %d with default flags exited: %v\n%s", i, err, logs.String())
		case <-time.After(30 * time.Second):
			t.Fatalf("worker %d did not start:\n%s", i, logs.String())
		}
		if addr == "" || strings.HasSuffix(addr, def) {
			t.Errorf("worker %d health address %q, want a free port", i, addr)
		}
		if code := httpStatus(t, "http://"+addr+"/healthz"); code != http.StatusOK {
			t.Errorf("worker %d healthz = %d", i, code)
		}
		if !strings.Contains(logs.String(), "default health address in use") {
			t.Errorf("worker %d does not say it moved off the busy default:\n%s", i, logs.String())
		}
	}
}

// An address the user chose that is busy stops the worker at once with an
// error naming the flag; an empty PTC_HEALTH_ADDR turns the endpoint off.
func TestWorkerHealthAddr(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	ns := fleettest.Start(t)
	err = run(context.Background(), nil, cli.MapEnv(map[string]string{"PTC_NATS_URL": ns.ClientURL(), "PTC_HEALTH_ADDR": busy.Addr().String()}), nil, io.Discard, nil)
	if err == nil || !strings.Contains(err.Error(), "-health-addr "+busy.Addr().String()) || !strings.Contains(err.Error(), "PTC_HEALTH_ADDR") {
		t.Errorf("busy chosen address: err = %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, nil, cli.MapEnv(map[string]string{"PTC_NATS_URL": ns.ClientURL(), "PTC_HEALTH_ADDR": ""}), nil, io.Discard, ready)
	}()
	select {
	case addr := <-ready:
		if addr != "" {
			t.Errorf("PTC_HEALTH_ADDR=\"\": endpoint listens on %q, want off", addr)
		}
	case err := <-done:
		t.Fatal(err)
	case <-time.After(30 * time.Second):
		t.Fatal("worker did not start")
	}
	cancel()
	if err := <-done; err != nil {
		t.Error(err)
	}
}

// PTC_FALLBACK_MODEL_NAME names the model of missions that name none; its
// former name PTC_DEFAULT_MODEL is still read, with a warning; the new
// name wins when both are set.
func TestFallbackModelNameFormerVariable(t *testing.T) {
	ns := fleettest.Start(t)
	logs := startWorker(t, map[string]string{"PTC_HEALTH_ADDR": "", "PTC_NATS_URL": ns.ClientURL(), "PTC_DEFAULT_MODEL": "fast"})
	if !strings.Contains(logs.String(), `"fallback_model_name":"fast"`) || !strings.Contains(logs.String(), "PTC_DEFAULT_MODEL is read as PTC_FALLBACK_MODEL_NAME") {
		t.Errorf("former variable not read with a warning:\n%s", logs.String())
	}
	logs = startWorker(t, map[string]string{"PTC_HEALTH_ADDR": "", "PTC_NATS_URL": ns.ClientURL(), "PTC_DEFAULT_MODEL": "fast", "PTC_FALLBACK_MODEL_NAME": "smart"})
	if !strings.Contains(logs.String(), `"fallback_model_name":"smart"`) || strings.Contains(logs.String(), "is read as") {
		t.Errorf("new variable does not win:\n%s", logs.String())
	}
}

// `worker setup` gives the mission consumers the MaxAckPending of
// PTC_MAX_ACK_PENDING, lowering a higher one too.
func TestSetupMaxAckPending(t *testing.T) {
	ns := fleettest.Start(t)
	js, err := jetstream.New(ns.Conn())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, n := range []int{5000, 2000} {
		vars := map[string]string{"PTC_NATS_URL": ns.ClientURL(), "PTC_MAX_ACK_PENDING": fmt.Sprint(n)}
		if err := run(ctx, []string{"setup"}, cli.MapEnv(vars), nil, io.Discard, nil); err != nil {
			t.Fatal(err)
		}
		for _, p := range messages.Priorities() {
			c, err := js.Consumer(ctx, messages.StreamMissions, fleet.ConsumerName(p))
			if err != nil {
				t.Fatal(err)
			}
			if got := c.CachedInfo().Config.MaxAckPending; got != n {
				t.Errorf("%s: MaxAckPending = %d, want %d", p, got, n)
			}
		}
	}
}
