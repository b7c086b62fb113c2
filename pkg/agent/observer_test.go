package agent

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/ptcfleet/ptc/pkg/agent/llm/llmtest"
	"github.com/ptcfleet/ptc/pkg/lisp"
	"github.com/ptcfleet/ptc/pkg/messages"
	"github.com/rs/zerolog"
)

type recorder struct {
	mu     sync.Mutex
	events []Event
}

func (r *recorder) Observe(_ context.Context, e Event) {
	r.mu.Lock()
	r.events = append(r.events, e)
	r.mu.Unlock()
}

func (r *recorder) kinds() string {
	var out []string
	for _, e := range r.events {
		s := string(e.Kind)
		if e.Depth > 1 {
			s = "  " + s
		}
		out = append(out, s)
	}
	return strings.Join(out, "\n")
}

func TestObserverEvents(t *testing.T) {
	child := mustNew(t, Spec{Name: "child", Prompt: "c"})
	tools := map[string]Tool{
		"ok":    Func(func(context.Context, map[string]any) (any, error) { return 1, nil }),
		"boom":  Func(func(context.Context, map[string]any) (any, error) { return nil, errors.New("boom") }),
		"child": child.AsTool(ToolOptions{}),
	}
	a := mustNew(t, Spec{Name: "parent", Prompt: "p", Tools: tools})
	rec := &recorder{}
	m := llmtest.NewT(t,
		llmtest.Code(`(do (tool/ok {}) (tool/child {}) (tool/boom {}))`).WithUsage(7, 3),
		llmtest.Code(`(return 1)`), // child
		llmtest.Code(`(return 2)`),
	)
	st, err := a.Run(bg, RunOptions{Model: m, Observer: rec})
	if err != nil {
		t.Fatal(err)
	}
	want := `run.start
turn.start
llm.start
llm.stop
program.start
tool.start
tool.stop
tool.start
  run.start
  turn.start
  llm.start
  llm.stop
  program.start
  program.stop
  turn.stop
  run.stop
tool.stop
tool.start
tool.exception
program.stop
turn.stop
turn.start
llm.start
llm.stop
program.start
program.stop
turn.stop
run.stop`
	if got := rec.kinds(); got != want {
		t.Fatalf("events:\n%s\n--- want:\n%s", got, want)
	}
	ev := rec.events
	if ev[3].Usage.InputTokens != 7 || ev[3].Turn != 1 || ev[3].Agent != "parent" {
		t.Fatalf("llm.stop %+v", ev[3])
	}
	if ev[18].Tool != "boom" || ev[18].Err == nil {
		t.Fatalf("tool.exception %+v", ev[18])
	}
	// The program that called the failing tool failed; the next succeeded.
	var le *lisp.Error
	if ev[19].Kind != EventProgramStop || !errors.As(ev[19].Err, &le) || ev[19].Duration <= 0 || ev[19].Turn != 1 {
		t.Fatalf("program.stop %+v", ev[19])
	}
	if ev[4].Kind != EventProgramStart || !strings.Contains(ev[4].Program, "boom") {
		t.Fatalf("program.start %+v", ev[4])
	}
	if ev[25].Kind != EventProgramStop || ev[25].Err != nil {
		t.Fatalf("second program.stop %+v", ev[25])
	}
	last := ev[len(ev)-1]
	if last.Step != st || last.Status != "ok" || last.Duration <= 0 {
		t.Fatalf("run.stop %+v", last)
	}
}

func TestObserverPanicIgnored(t *testing.T) {
	a := mustNew(t, Spec{Prompt: "x"})
	obs := ObserverFunc(func(context.Context, Event) { panic("observer bug") })
	st, err := a.Run(bg, RunOptions{Model: llmtest.NewT(t, llmtest.Code(`(return 1)`)), Observer: obs})
	if err != nil || st.Return != int64(1) {
		t.Fatalf("%v %v", st.Return, err)
	}
}

func TestObserverRunStopOnFailure(t *testing.T) {
	rec := &recorder{}
	st, err := mustNew(t, Spec{Prompt: "x"}).Run(bg, RunOptions{Model: llmtest.NewT(t, llmtest.Code(`(fail "no")`)), Observer: rec})
	if err == nil {
		t.Fatal("no error")
	}
	last := rec.events[len(rec.events)-1]
	if last.Kind != EventRunStop || last.Status != "error" || last.Step != st {
		t.Fatalf("%+v", last)
	}
}

func TestPrintTrace(t *testing.T) {
	child := mustNew(t, Spec{Name: "child", Prompt: "c"})
	a := mustNew(t, Spec{Prompt: "p", Tools: map[string]Tool{
		"list_emails": Func(func(_ context.Context, a map[string]any) (any, error) {
			return []any{map[string]any{"id": int64(1), "subject": "Urgent", "_body": "secret-body"}}, nil
		}),
		"child": child.AsTool(ToolOptions{}),
	}})
	m := llmtest.NewT(t,
		llmtest.Code("(let [emails (tool/list_emails {:user \"alice\"})]\n  (println \"got\" (count emails))\n  {:n (count emails) :c (tool/child {})})").WithUsage(150, 89),
		llmtest.Code(`(return 5)`),
		llmtest.Code(`(+ 1`),
		llmtest.Code(`(return {:count n})`),
	)
	st, err := a.Run(bg, RunOptions{Model: m})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := PrintTrace(&b, st, TraceOptions{Width: 30}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	lines := strings.Split(out, "\n")
	if lines[0] != "┌─ Turn 1 "+strings.Repeat("─", 20) || lines[1] != "│ Program:" || lines[2] != "│   (let [emails (tool/list_emails {:user \"alice\"})]" {
		t.Fatalf("header:\n%s", out)
	}
	contains(t, out,
		"│ Tools:\n│   → list_emails({\"user\" \"alice\"})\n│     ← [{\"_body\" <Firewalled> \"id\" 1 \"subject\" \"Urgent\"}]\n",
		"│   → child({})\n│     ← 5\n│     ┌─ Turn 1 ", // nested child box
		"│ Output:\n│   got 1\n",
		"│ Duration: ", "| Tokens: 150 in / 89 out\n└─────────────────────────────\n",
		"┌─ Turn 2 ", "│ Error: 1:1: unbalanced parentheses",
		"ok: {\"count\" 1} (3 turns, 4 requests, 2 tool calls, 150 in / 89 out tokens,")
	notContains(t, out, "secret-body")
	b.Reset()
	if err := PrintTrace(&b, st, TraceOptions{ShowFirewalled: true}); err != nil {
		t.Fatal(err)
	}
	contains(t, b.String(), "secret-body")
	b.Reset()
	if err := PrintChain(&b, []*messages.Step{st, st}, TraceOptions{}); err != nil {
		t.Fatal(err)
	}
	contains(t, b.String(), "═══ Step 1 of 2 ═══\n┌─ Turn 1", "═══ Step 2 of 2 ═══")
}

func TestLogObserver(t *testing.T) {
	var buf bytes.Buffer
	l := zerolog.New(&buf)
	tool := Func(func(context.Context, map[string]any) (any, error) { return nil, errors.New("down") })
	a := mustNew(t, Spec{Name: "logged", Prompt: "x", Tools: map[string]Tool{"t": tool}})
	_, err := a.Run(bg, RunOptions{Observer: LogObserver(l), Model: llmtest.NewT(t,
		llmtest.Code(`(tool/t {:secret "do-not-log-me"})`).WithUsage(5, 2), llmtest.Code(`(fail "x")`))})
	if err == nil {
		t.Fatal("no error")
	}
	out := buf.String()
	contains(t, out, `"event":"run.start"`, `"agent":"logged"`, `"event":"tool.exception"`, `"level":"warn"`, `"error":"down"`,
		`"input_tokens":5`, `"event":"run.stop"`, `"status":"error"`, `"reason":"failed"`)
	notContains(t, out, "do-not-log-me")
	if n := strings.Count(out, "\n"); n < 12 {
		t.Fatalf("%d log lines:\n%s", n, out)
	}
}
