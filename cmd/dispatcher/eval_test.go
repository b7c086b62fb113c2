package main

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ptcfleet/ptc/examples/shop"
	"github.com/ptcfleet/ptc/internal/fleettest"
	"github.com/ptcfleet/ptc/internal/webtest"
	"github.com/ptcfleet/ptc/pkg/agent/llm"
	"github.com/ptcfleet/ptc/pkg/fleet"
	"github.com/ptcfleet/ptc/pkg/fleet/agentrun"
	"github.com/ptcfleet/ptc/pkg/messages"
)

var update = flag.Bool("update", false, "rewrite examples/evals/recorded from a fresh run")

const exampleSuite = "../../examples/evals/shop.yaml"

// exampleExport is the recorded sub-agent mission of the example suite.
const exampleExport = "../../examples/evals/recorded/customer-summaries.ptcmission"

// recordCustomerSummaries runs the example suite's sub-agent mission on
// the shop tools with a model answering the top-level agent and its
// sub-agent by prompt, and returns its export.
func recordCustomerSummaries(t *testing.T) *missionExport {
	t.Helper()
	srv := fleettest.Start(t)
	svc, err := fleet.NewToolService(srv.Conn(), fleet.ToolServiceConfig{Name: shop.ServiceName})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Stop(context.Background()) })
	if err := shop.Default().Register(svc); err != nil {
		t.Fatal(err)
	}
	model := llm.Func(func(_ context.Context, req llm.Request) (*llm.Response, error) {
		prog := "(return {:summaries (mapv #(tool/summarize_customer {:id %}) [7 8])})"
		if strings.HasPrefix(req.Prompt, "Summarise customer ") {
			prog = "(let [c (tool/get_customer {:id ctx/id})]\n  (return {:name (:name c) :orders (count (tool/list_orders {:customer_id ctx/id :status \"paid\"}))}))"
		}
		return &llm.Response{Content: "```clojure\n" + prog + "\n```", Usage: llm.Usage{InputTokens: 900, OutputTokens: 40}}, nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	w, err := fleet.NewWorker(srv.Conn(), fleet.WorkerConfig{Runner: agentrun.New(agentrun.Config{Models: llm.Registry{"default": model}}), Slots: 2})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Stop() })
	client, err := fleet.NewClient(ctx, srv.Conn(), fleet.ClientConfig{})
	if err != nil {
		t.Fatal(err)
	}
	m := &messages.Mission{ID: messages.NewMissionID(), Kind: messages.KindAgent, Tools: []string{"get_customer", "list_orders"},
		Agent: &messages.AgentSpec{
			Prompt: "Summarise customers 7 and 8: each one's name and number of paid orders.", Signature: "{summaries [{name :string, orders :int}]}",
			Tools: []string{"summarize_customer"}, Limits: messages.Limits{MaxTurns: 3},
			SubAgents: map[string]*messages.AgentSpec{"summarize_customer": {
				Prompt: "Summarise customer {{id}}: name and number of paid orders.", Signature: "(id :int) -> {name :string, orders :int}",
				Description: "a customer's name and paid order count", Tools: []string{"get_customer", "list_orders"},
			}},
		}}
	if _, err := client.Run(ctx, m); err != nil {
		t.Fatal(err)
	}
	x, err := fetchExport(ctx, client, m.ID)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

// The example suite's recorded sub-agent mission is what a fresh run
// records (same programs, tool calls and return); -update rewrites it.
func TestEvalExampleExportIsCurrent(t *testing.T) {
	x := recordCustomerSummaries(t)
	if *update {
		if err := writeExport(exampleExport, x); err != nil {
			t.Fatal(err)
		}
	}
	have, err := readExport(exampleExport)
	if err != nil {
		t.Fatalf("%v (go test ./cmd/dispatcher -run TestEvalExampleExportIsCurrent -update writes it)", err)
	}
	if d := agentrun.CompareSteps(have.Step, x.Step); len(d) > 0 {
		t.Fatalf("%s is stale (-update rewrites it): %v", exampleExport, d)
	}
}

// The example suite runs on its scripts (as CI runs it): every task
// passes, the table has one row, the JSON report and the JUnit XML hold
// every run.
func TestEvalExampleSuite(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	junit := filepath.Join(t.TempDir(), "eval.xml")
	var out, errOut bytes.Buffer
	if err := run(ctx, []string{"eval", "-junit", junit, exampleSuite}, testEnv(nil), &out, &errOut); err != nil {
		t.Fatalf("eval: %v\n%s\n%s", err, out.String(), errOut.String())
	}
	for _, want := range []string{"model", "success", "scripted", "ptc_lisp", "100%", "11 of 11 runs passed"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
	var js evalReport
	out.Reset()
	if err := run(ctx, []string{"eval", "-json", exampleSuite}, testEnv(nil), &out, &errOut); err != nil {
		t.Fatalf("eval -json: %v", err)
	}
	if err := json.Unmarshal(out.Bytes(), &js); err != nil {
		t.Fatalf("eval -json: %v\n%s", err, out.String())
	}
	if len(js.Runs) != 11 || len(js.Summary) != 1 || js.Summary[0].Passed != 11 || js.Summary[0].SuccessRate != 1 {
		t.Errorf("json report: %+v", js.Summary)
	}
	turns := map[string]int{}
	for _, r := range js.Runs {
		turns[r.Task] = r.Turns
	}
	if turns["keep-and-compute"] != 2 || turns["missing-customer"] != 2 || turns["urgent-refund-emails"] != 2 {
		t.Errorf("turns by task: %v", turns)
	}
	var x junitSuites
	b, err := os.ReadFile(junit)
	if err != nil {
		t.Fatal(err)
	}
	if err := xml.Unmarshal(b, &x); err != nil {
		t.Fatal(err)
	}
	if len(x.Suites) != 1 || x.Suites[0].Tests != 11 || x.Suites[0].Failures != 0 || x.Suites[0].Name != "scripted/ptc_lisp" {
		t.Errorf("junit: %+v", x.Suites)
	}
}

// A suite run against fake OpenAI-wire and Anthropic-wire models, twice
// each, in PTC-Lisp and text mode: per model and mode the success rate,
// turns and tokens; a wrong answer fails its check (exit status 1, the
// failure named in the report and as a JUnit failure).
func TestEvalAgainstModels(t *testing.T) {
	dir := t.TempDir()
	suite := filepath.Join(dir, "suite.yaml")
	if err := os.WriteFile(suite, []byte(`
models: [mini, claude]
modes: [ptc_lisp, text]
runs: 2
concurrency: 3
tasks:
  - name: paid
    mission:
      agent:
        prompt: How many paid orders are there?
        signature: "{paid :int}"
        tools: [list_orders]
    expect:
      return: {paid: 4971}
      max_turns: 2
      max_tokens: 1000
      max_latency: 1m
`), 0o600); err != nil {
		t.Fatal(err)
	}
	ptc := "```clojure\n(return {:paid (count (tool/list_orders {:status \"paid\"}))})\n```"
	// Each fake answers PTC-Lisp requests with the program, and text-mode
	// ones (told apart by the tools offered) with a JSON answer: right from
	// the OpenAI one, wrong from the Anthropic one.
	oai := webtest.ScriptedChatFunc(t, func(body map[string]any) string {
		if _, text := body["tools"]; text {
			return `{"paid": 4971}`
		}
		return ptc
	})
	ant := webtest.ScriptedMessagesFunc(t, func(body map[string]any) string {
		if _, text := body["tools"]; text {
			return `{"paid": 12}`
		}
		return ptc
	})
	e := testEnv(map[string]string{
		"PTC_MODEL_MINI": "openai:mini-1@" + oai.URL + "/v1", "OPENAI_API_KEY": "k",
		"PTC_MODEL_CLAUDE": "anthropic:claude-test@" + ant.URL, "ANTHROPIC_API_KEY": "k",
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	junit := filepath.Join(dir, "eval.xml")
	var out, errOut bytes.Buffer
	err := run(ctx, []string{"eval", "-json", "-junit", junit, suite}, e, &out, &errOut)
	if err == nil || exitCode(err) != 1 || !strings.Contains(err.Error(), "2 of 8") {
		t.Fatalf("eval: %v\n%s", err, errOut.String())
	}
	var js evalReport
	if err := json.Unmarshal(out.Bytes(), &js); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	rates := map[string]float64{}
	for _, s := range js.Summary {
		rates[s.Model+"/"+s.Mode] = s.SuccessRate
		if s.Runs != 2 || s.MeanTurns != 1 || s.InputTokens != 200 || s.OutputTokens != 14 {
			t.Errorf("%s/%s: %+v", s.Model, s.Mode, s)
		}
	}
	want := map[string]float64{"mini/ptc_lisp": 1, "mini/text": 1, "claude/ptc_lisp": 1, "claude/text": 0}
	for k, v := range want {
		if rates[k] != v {
			t.Errorf("success rates %v, want %v", rates, want)
			break
		}
	}
	for _, r := range js.Runs {
		if r.Model == "claude" && r.Mode == "text" && (len(r.Failures) != 1 || !strings.Contains(r.Failures[0], `return: want {"paid":4971}, got {"paid":12}`)) {
			t.Errorf("failures of a wrong answer: %v", r.Failures)
		}
	}
	b, err := os.ReadFile(junit)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `<testsuite name="claude/text" tests="2" failures="2"`) {
		t.Errorf("junit:\n%s", b)
	}
}

// Bad suites are refused naming the task and the field.
func TestEvalSuiteErrors(t *testing.T) {
	dir := t.TempDir()
	cases := map[string]string{
		"tasks:\n  - name: a\n    mision: x.yaml\n": "field mision not found",
		"tasks:\n  - name: a\n":                     "tasks[0] (a): exactly one of mission, recorded and export",
		"tasks:\n  - name: a\n    recorded: nope\n": `recorded: "nope" is not a mission id`,
		"tasks:\n  - name: a\n    mission: {agent: {prompt: p}}\n    expect: {max_latency: soon}\n": "tasks[0] (a): expect: max_latency",
		"modes: [prose]\ntasks:\n  - name: a\n    mission: {agent: {prompt: p}}\n":                  `modes: "prose" is not`,
		"tasks:\n  - name: a\n    mission: {agent: {promt: p}}\n":                                   "tasks[0] (a): mission (line 3)",
	}
	for body, want := range cases {
		p := filepath.Join(dir, "s.yaml")
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := readSuite(p)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("suite %q: error %v, want %q", body, err, want)
		}
	}
}
