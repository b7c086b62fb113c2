package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/ptcfleet/ptc/internal/fleettest"
	"github.com/ptcfleet/ptc/internal/webtest"
	"github.com/ptcfleet/ptc/pkg/fleet"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// runRepl runs "dispatcher repl" on an embedded fleet with the example
// tools, stdin as given.
func runRepl(t *testing.T, stdin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return runReplWithin(t, time.Minute, stdin, args...)
}

// runReplWithin is runRepl with a bound of its own on the whole session.
func runReplWithin(t *testing.T, d time.Duration, stdin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	e := testEnv(nil)
	e.stdin = strings.NewReader(stdin)
	var out, errOut bytes.Buffer
	err := run(ctx, append([]string{"repl"}, args...), e, &out, &errOut)
	if err != nil {
		code = exitCode(err)
		errOut.WriteString("dispatcher: " + err.Error() + "\n")
	}
	return out.String(), errOut.String(), code
}

func mustContain(t *testing.T, what, got string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(got, w) {
			t.Errorf("%s lacks %q:\n%s", what, w, got)
		}
	}
}

func TestREPLExprCallsTheFleetTools(t *testing.T) {
	out, errOut, code := runRepl(t, "", "-e", `(count (tool/list_orders {:status "paid"}))`)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	if strings.TrimSpace(out) != "Result: 4971" { // every paid order of the example shop
		t.Errorf("stdout = %q, want the count of paid orders as the model sees it", out)
	}

	// the tool's signature validates the arguments before the call
	_, errOut, code = runRepl(t, "", "-e", `(tool/get_customer {:id "seven"})`)
	if code != exitProgramFailed {
		t.Fatalf("exit %d, want %d\n%s", code, exitProgramFailed, errOut)
	}
	mustContain(t, "stderr", errOut, "Error: ", "id", "(tool/get_customer", "^")
}

func TestREPLMissionAllowListSignatureAndContext(t *testing.T) {
	mission := "../../examples/missions/top-customers.yaml"
	// the mission's context is ctx/
	out, errOut, code := runRepl(t, "", "-mission", mission, "-e", `[ctx/region ctx/limit]`)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	mustContain(t, "stdout", out, `Result: ["north" 3]`)

	// a tool the mission does not allow is not callable
	_, errOut, code = runRepl(t, "", "-mission", mission, "-e", `(tool/search_emails {})`)
	if code != exitProgramFailed {
		t.Fatalf("exit %d, want %d\n%s", code, exitProgramFailed, errOut)
	}
	mustContain(t, "stderr", errOut, "search_emails")

	// a return is checked against the mission's signature
	_, errOut, code = runRepl(t, "", "-mission", mission, "-e", `(return {:top [] :orders_scanned "many"})`)
	if code != exitProgramFailed {
		t.Fatalf("exit %d, want %d\n%s", code, exitProgramFailed, errOut)
	}
	mustContain(t, "stderr", errOut, "Return type validation failed", "orders_scanned", "Expected: {top [")

	// -context replaces the mission's context
	dir := t.TempDir()
	cf := filepath.Join(dir, "ctx.json")
	if err := os.WriteFile(cf, []byte(`{"region": "south", "limit": 2}`), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut, code = runRepl(t, "", "-mission", mission, "-context", cf, "-e", `[ctx/region ctx/limit]`)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	mustContain(t, "stdout", out, `Result: ["south" 2]`)

	if err := os.WriteFile(cf, []byte(`[1, 2]`), 0o600); err != nil {
		t.Fatal(err)
	}
	_, errOut, code = runRepl(t, "", "-context", cf, "-e", `1`)
	if code != 1 {
		t.Fatalf("exit %d, want 1\n%s", code, errOut)
	}
	mustContain(t, "stderr", errOut, "ctx.json: the context must be a JSON object")
}

func TestREPLScriptFromStdin(t *testing.T) {
	script := `; defs persist, *1 *2 *3 hold the last values, entries span lines
(def paid (tool/list_orders {:status "paid"}))
(count paid)
(+ *1
   1)
[*1 *2]
:check [:int]
:check :string
`
	out, errOut, code := runRepl(t, script)
	if code != exitProgramFailed {
		t.Fatalf("exit %d, want %d (the last :check fails)\nstdout:\n%s\nstderr:\n%s", code, exitProgramFailed, out, errOut)
	}
	mustContain(t, "stdout", out, "Result: #'paid", "Memory: paid", "Result: 4971", "Result: 4972", "Result: [4972 4971]", "matches [:int]")
	mustContain(t, "stderr", errOut, "does not match :string", "program failed (entry ending on line 8)")

	// the script stops at the first failing program
	out, errOut, code = runRepl(t, "(+ 1 1)\n(nth [] \"x\")\n(+ 2 2)\n")
	if code != exitProgramFailed {
		t.Fatalf("exit %d, want %d", code, exitProgramFailed)
	}
	mustContain(t, "stdout", out, "Result: 2")
	if strings.Contains(out, "Result: 4") {
		t.Errorf("the script went on after a failure:\n%s", out)
	}
	mustContain(t, "stderr", errOut, "Error: ", "^", "entry ending on line 2")

	// an unclosed entry at the end is reported by the reader, with its position
	_, errOut, code = runRepl(t, "(+ 1\n")
	if code != exitProgramFailed {
		t.Fatalf("exit %d, want %d", code, exitProgramFailed)
	}
	mustContain(t, "stderr", errOut, "Error: ")

	// :quit ends a script early, successfully
	out, _, code = runRepl(t, "(+ 1 1)\n:quit\n(nth [] \"x\")\n")
	if code != 0 || !strings.Contains(out, "Result: 2") {
		t.Errorf("exit %d, stdout %q", code, out)
	}
}

func TestREPLShowsWhatTheModelSees(t *testing.T) {
	// the preview is firewalled and truncated as in the model's feedback;
	// :full shows the whole value
	script := "(first (tool/list_customers {:region \"north\"}))\n{:return (vec (range 100))}\n:full\n"
	out, errOut, code := runRepl(t, script)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	mustContain(t, "stdout", out, `"_phone" <Firewalled>`, "more items omitted", "[0 1 2 3 4 5 6 7 8 9 10 11 12")
	last := out[strings.LastIndex(strings.TrimSpace(out), "\n")+1:]
	mustContain(t, ":full", last, "97 98 99]")

	first, _, _ := runRepl(t, "(first (tool/list_customers {:region \"north\"}))\n:full\n")
	if !strings.Contains(first, "+1-555-") {
		t.Errorf(":full does not show the firewalled field to the person at the REPL:\n%s", first)
	}
	if strings.Count(first, "+1-555-") != 1 {
		t.Errorf("the preview leaked a firewalled value:\n%s", first)
	}
}

func TestREPLMetaCommands(t *testing.T) {
	out, errOut, code := runRepl(t, ":tools\n:ref\n:prompt\n:mem\n:help\n", "-mission", "../../examples/missions/top-customers.yaml")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	mustContain(t, "stdout", out,
		"tool/list_customers (region :string?, tier :string?) -> [{id :int",
		"tool/list_orders (customer_id :int?",
		"## PTC-Lisp", // the language reference
		"\nMemory rule: A map a program ends with (without return) is merged into memory key by key", // in one line
		"=== user ===",              // the first user message
		"customers in region north", // the mission prompt, rendered
		"ctx/: limit, region",
		":check TYPE")
	if strings.Contains(out, "tool/search_emails") {
		t.Errorf(":tools lists a tool the mission does not allow:\n%s", out)
	}
	_, errOut, code = runRepl(t, ":nope\n")
	if code != exitProgramFailed {
		t.Fatalf("exit %d", code)
	}
	mustContain(t, "stderr", errOut, "unknown meta command :nope")
}

func TestIncomplete(t *testing.T) {
	for src, want := range map[string]bool{
		"(+ 1 2)":             false,
		"(+ 1\n":              true,
		`(str "(")`:           false,
		`(str "a\"(")`:        false,
		`(str "abc`:           true,
		`[\( \[]`:             false,
		"(+ 1 ; (\n 2)":       false,
		"{:a [1 2]":           true,
		"(+ 1))":              false,
		"#{1 2":               true,
		":check {count :int}": false,
		"; only a comment (":  false,
	} {
		if got := incomplete(src); got != want {
			t.Errorf("incomplete(%q) = %v, want %v", src, got, want)
		}
	}
}

func TestREPLNeedsAFleetItCanReach(t *testing.T) {
	_, errOut, code := runRepl(t, "", "-nats-url", "nats://127.0.0.1:1", "-e", "1")
	if code != 1 {
		t.Fatalf("exit %d, want 1\n%s", code, errOut)
	}
	mustContain(t, "stderr", errOut, "connect to nats")
}

// The mission's limits apply to REPL programs: here its tool-call cap.
func TestREPLMissionLimits(t *testing.T) {
	dir := t.TempDir()
	mf := filepath.Join(dir, "m.yaml")
	if err := os.WriteFile(mf, []byte("agent:\n  prompt: look\n  tools: [list_customers]\nlimits: {max_tool_calls: 1}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := runRepl(t, "", "-mission", mf, "-e", `(count (tool/list_customers {:region "north"}))`)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	mustContain(t, "stdout", out, "Result: ")
	_, errOut, code = runRepl(t, "", "-mission", mf, "-e", `(+ (count (tool/list_customers {})) (count (tool/list_customers {})))`)
	if code != exitProgramFailed {
		t.Fatalf("exit %d, want %d\n%s", code, exitProgramFailed, errOut)
	}
	mustContain(t, "stderr", errOut, "tool call limit")
}

// With -nats-url the REPL calls the tool services of that server, found by
// discovery, and starts none of its own.
func TestREPLOnAGivenFleet(t *testing.T) {
	srv := fleettest.Start(t)
	nc := srv.Conn()
	stop, err := serveExampleTools(nc, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	out, errOut, code := runRepl(t, ":tools\n(count (tool/list_orders {:status \"paid\"}))\n", "-nats-url", srv.ClientURL())
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	mustContain(t, "stdout", out, "tool/search_emails", "tool/list_orders", "Result: 4971")

	// a server without tool services: no tools, and a call says so
	bare := fleettest.Start(t)
	out, errOut, code = runRepl(t, ":tools\n", "-nats-url", bare.ClientURL())
	if code != 0 || !strings.Contains(out, "no tools") {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

// -tool-timeout bounds each remote tool call of the REPL's programs: a
// call to a service slower than the bound fails with a timeout that names
// it; a bound over fleet.MaxToolTimeout is refused before anything runs.
func TestREPLToolTimeout(t *testing.T) {
	srv := fleettest.Start(t)
	svc, err := fleet.NewToolService(srv.Conn(), fleet.ToolServiceConfig{Name: "slow"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Stop(context.Background()) })
	if err := svc.Register("nap", fleet.ToolSpec{Signature: "(ms :int) -> :int"}, func(ctx context.Context, args map[string]any) (any, error) {
		ms, _ := args["ms"].(int64)
		select {
		case <-time.After(time.Duration(ms) * time.Millisecond):
		case <-ctx.Done():
			// past the call's deadline the service answers "no answer
			// within", as the caller says when it stops waiting first
			return nil, ctx.Err()
		}
		return ms, nil
	}); err != nil {
		t.Fatal(err)
	}
	_, errOut, code := runRepl(t, "", "-nats-url", srv.ClientURL(), "-tool-timeout", "200ms", "-e", `(tool/nap {:ms 3000})`)
	if code != exitProgramFailed {
		t.Fatalf("exit %d, want %d\n%s", code, exitProgramFailed, errOut)
	}
	mustContain(t, "stderr", errOut, "no answer within 200ms")
	out, errOut, code := runRepl(t, "", "-nats-url", srv.ClientURL(), "-tool-timeout", "20s", "-e", `(tool/nap {:ms 50})`)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	mustContain(t, "stdout", out, "Result: 50")
	_, errOut, code = runRepl(t, "", "-tool-timeout", "3m", "-e", "1")
	if code == 0 {
		t.Fatalf("-tool-timeout 3m was accepted")
	}
	mustContain(t, "stderr", errOut, "tool-timeout 3m0s")
}

// With -nats-url the REPL keeps a tool service's result of 50,000 (and,
// without the race detector, 200,000) email records of 12 fields with def
// and filters it in the next line: the result travels out of band and is
// streamed into the session; the tool is called once per size.
func TestREPLKeepsLargeToolResults(t *testing.T) {
	sizes := []int{50_000}
	if !fleettest.Race {
		sizes = append(sizes, 200_000)
	}
	srv := fleettest.Start(t)
	var calls atomic.Int32
	svc, err := fleet.NewToolService(srv.Conn(), fleet.ToolServiceConfig{Name: "mail"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Stop(context.Background()) })
	if err := svc.Register("search_mail", fleet.ToolSpec{Signature: "(n :int) -> [:map]"}, func(_ context.Context, args map[string]any) (any, error) {
		calls.Add(1)
		n, _ := args["n"].(int64)
		return fleettest.MailRecords(int(n)), nil
	}); err != nil {
		t.Fatal(err)
	}
	// 200,000 records are charged about 78 MB, over the default
	// program_memory: the mission asks for the shipped ceiling
	mf := filepath.Join(t.TempDir(), "mail.yaml")
	if err := os.WriteFile(mf, []byte("agent:\n  prompt: keep the mail\n  tools: [search_mail]\nlimits: {program_memory: 268435456, program_timeout: 4m}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for i, n := range sizes {
		script := fmt.Sprintf("(def mail (tool/search_mail {:n %d}))\n(count mail)\n(count (filter (fn [m] (and (:unread m) (> (:size m) 1500))) mail))\n", n)
		// making and sending 50,000 records takes the service longer than
		// the default call bound under the race detector on a busy machine
		out, errOut, code := runReplWithin(t, 8*time.Minute, script, "-nats-url", srv.ClientURL(), "-mission", mf, "-tool-timeout", "2m")
		if code != 0 {
			t.Fatalf("%d records: exit %d\n%s", n, code, errOut)
		}
		mustContain(t, "stdout", out, fmt.Sprintf("Result: %d", n), fmt.Sprintf("Result: %d", fleettest.BigUnread(fleettest.MailRecords(n))))
		if c := calls.Load(); c != int32(i+1) {
			t.Fatalf("%d records: the tool was called %d times in all, want %d", n, c, i+1)
		}
	}
	// out of band: the service wrote each result to its bucket (which its
	// TTL empties; a REPL session is no mission whose end purges it)
	js, err := jetstream.New(srv.Conn())
	if err != nil {
		t.Fatal(err)
	}
	obs, err := js.ObjectStore(context.Background(), messages.ToolResultBucket("mail"))
	if err != nil {
		t.Fatal(err)
	}
	if objs, err := obs.List(context.Background()); err != nil || len(objs) != len(sizes) {
		t.Fatalf("objects in the service's bucket: %d, %v; want %d", len(objs), err, len(sizes))
	}
}

// A mission's sub-agent tool calls the model configured in the environment
// (PTC_MODEL_<NAME>, as for dispatcher local): here a fake OpenAI server
// whose answer is the sub-agent's program, run on the sub-agent's own
// tools on the fleet. Without a configured model the call fails naming it.
func TestREPLSubAgentToolsCallTheConfiguredModel(t *testing.T) {
	var prompts []string
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Model    string `json:"model"`
			Messages []struct {
				Role    string `json:"role"`
				Content string `json:"content"`
			} `json:"messages"`
		}
		if r.URL.Path != "/v1/chat/completions" || json.NewDecoder(r.Body).Decode(&req) != nil || req.Model != "mini-1" {
			http.Error(w, `{"error":{"message":"bad request","type":"invalid_request_error"}}`, http.StatusBadRequest)
			return
		}
		mu.Lock()
		prompts = append(prompts, req.Messages[len(req.Messages)-1].Content)
		mu.Unlock()
		program := "```clojure\n(return {:paid (count (tool/list_orders {:customer_id ctx/customer :status \"paid\"}))})\n```"
		webtest.ChatCompletion(w, "chatcmpl-1", "mini-1", program, 100, 20)
	}))
	t.Cleanup(srv.Close)

	mission := filepath.Join(t.TempDir(), "sub.yaml")
	if err := os.WriteFile(mission, []byte(`
agent:
  prompt: "look at customers"
  tools: [get_customer, counter]
  sub_agents:
    counter:
      prompt: "count the paid orders of customer {{customer}}"
      signature: "(customer :int) -> {paid :int}"
      tools: [list_orders]
`), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	e := testEnv(map[string]string{"PTC_MODEL_DEFAULT": "openai:mini-1@" + srv.URL + "/v1"})
	e.stdin = strings.NewReader("")
	var out, errOut bytes.Buffer
	if err := run(ctx, []string{"repl", "-mission", mission, "-e", `(tool/counter {:customer 7})`}, e, &out, &errOut); err != nil {
		t.Fatalf("repl: %v\n%s", err, errOut.String())
	}
	want := fmt.Sprintf("Result: {\"paid\" %d}", paidOrdersOf(t, 7))
	mustContain(t, "stdout", out.String(), want)
	if len(prompts) != 1 || !strings.Contains(prompts[0], "count the paid orders of customer 7") {
		t.Errorf("the model was asked %q", prompts)
	}

	// no model configured: the sub-agent tool fails and says which model it needs
	_, errText, code := runRepl(t, "", "-mission", mission, "-e", `(tool/counter {:customer 7})`)
	if code != exitProgramFailed {
		t.Fatalf("exit %d, want %d\n%s", code, exitProgramFailed, errText)
	}
	mustContain(t, "stderr", errText, `no model "default" is configured (set PTC_MODEL_DEFAULT=provider:model): the sub-agent tools counter fail`, "sub-agent counter failed")
}

// paidOrdersOf counts customer id's paid orders through the REPL itself.
func paidOrdersOf(t *testing.T, id int) int {
	t.Helper()
	out, errOut, code := runRepl(t, "", "-e", fmt.Sprintf(`(count (tool/list_orders {:customer_id %d :status "paid"}))`, id))
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	var n int
	if _, err := fmt.Sscanf(strings.TrimSpace(out), "Result: %d", &n); err != nil || n == 0 {
		t.Fatalf("paid orders of %d: %q (%v)", id, out, err)
	}
	return n
}

// With -compression, :history shows the messages a compressed run would
// send next: the first entries whole while the prompt stays under the
// cache prefix (here the first: a long comment takes the second past it),
// then a record of each later entry (tool calls, prints, result; no program) and
// memory's names with their types and sizes; without it, :history says compression is off.
func TestREPLCompressedHistory(t *testing.T) {
	first := "(def paid (tool/list_orders {:status \"paid\"})) (count paid)"
	second := "(def n (tool/list_orders {:status \"refunded\"})) (println \"refunded:\" (count n)) (count n) ; " + strings.Repeat("the refunded orders, ", 150) + "kept"
	script := first + "\n" + second + "\n(def k (count paid)) k\n:history\n"
	out, errOut, code := runRepl(t, script, "-compression")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	_, history, _ := strings.Cut(out, "=== user ===\n")
	mustContain(t, ":history", history,
		"## Mission\n(programs typed at the REPL)\n",
		"=== assistant ===\n"+first+"\n=== user ===\nResult: 4971\nMemory: paid\nEarlier turns:\n2 (tool/list_orders {:status \"refunded\"})\nOutput:\nrefunded: ",
		"\n3 => 4971\n",
		"\nMemory: k (integer), n [1683 maps], paid [4971 maps]\n")
	if strings.Contains(history, "(def n (tool/list_orders") || strings.Contains(history, "the refunded orders") || strings.Contains(history, "(def k (count") {
		t.Errorf("the second entry's program is repeated:\n%s", history)
	}
	out, errOut, code = runRepl(t, "(+ 1 2)\n:history\n")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	mustContain(t, ":history without -compression", out, "compression is off")
}

// A program's emits and the plan steps it marks done are printed as they
// happen, before the result.
func TestREPLPrintsEmitsAndPlan(t *testing.T) {
	file := filepath.Join(t.TempDir(), "plan.yaml")
	if err := os.WriteFile(file, []byte("agent:\n  prompt: Count.\n  plan: [Count the paid orders, Report]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := runRepl(t, "", "-mission", file, "-e",
		`(let [n (count (tool/list_orders {:status "paid"}))] (emit {:paid n}) (step-done "1" (str n " paid")) n)`)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	want := "emit {\"paid\":4971}\nplan: step 1 done, 1/2 steps done\n    [x] 1. Count the paid orders — 4971 paid\n    [ ] 2. Report\nResult: 4971"
	if strings.TrimSpace(out) != want {
		t.Errorf("stdout:\n%s\nwant:\n%s", out, want)
	}
}
