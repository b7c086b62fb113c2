package agent

import (
	"context"
	"fmt"
	"testing"

	"github.com/ptcfleet/ptc/pkg/agent/llm"
	"github.com/ptcfleet/ptc/pkg/agent/llm/llmtest"
	"github.com/ptcfleet/ptc/pkg/messages"
)

// The data-heavy mission of the token measurement: 1,000 orders behind a
// tool; the answer is the number and total of the pending ones.

const heavyRecords = 1000

func heavyOrders() []any {
	regions := []string{"north", "south", "east", "west"}
	statuses := []string{"pending", "shipped", "delivered", "cancelled"}
	out := make([]any, heavyRecords)
	for i := range out {
		out[i] = map[string]any{
			"id":       int64(i + 1),
			"customer": fmt.Sprintf("customer-%04d", i%317),
			"total":    float64((i*37)%500) + 0.5,
			"status":   statuses[i%len(statuses)],
			"region":   regions[(i/3)%len(regions)],
		}
	}
	return out
}

func heavyWant() (int64, float64) {
	var n int64
	var sum float64
	for _, o := range heavyOrders() {
		m := o.(map[string]any)
		if m["status"] == "pending" {
			n++
			sum += m["total"].(float64)
		}
	}
	return n, sum
}

func heavyTool() Tool {
	return FuncSig("() -> [{id :int, customer :string, total :float, status :string, region :string}]",
		func(context.Context, map[string]any) (any, error) { return heavyOrders(), nil }).
		WithDescription("List all orders")
}

const heavyPrompt = "How many orders are pending, and what is their total value?"
const heavySig = "{pending :int, total :float}"

// promptBytes is what a request sends to a model: system prompt, tool
// specs and every message (llmtest.Transcript). Tokens are estimated as
// bytes/4, the usual rule of thumb for English text and JSON.
func promptBytes(reqs []llm.Request) int {
	n := 0
	for _, r := range reqs {
		n += len(llmtest.Transcript(r))
	}
	return n
}

// runHeavyText runs the mission in text mode with native tool calling:
// the model calls list_orders, gets all 1,000 records back as the tool
// result, and answers with JSON.
func runHeavyText(tb testing.TB) (*messages.Step, []llm.Request) {
	n, sum := heavyWant()
	a := mustText(tb, Spec{Prompt: heavyPrompt, Signature: heavySig, Tools: map[string]Tool{"list_orders": heavyTool()}})
	m := llmtest.New(llmtest.ToolCall("list_orders", map[string]any{}),
		llmtest.Text(fmt.Sprintf(`{"pending": %d, "total": %g}`, n, sum)))
	st, err := a.Run(bg, RunOptions{Model: m})
	if err != nil {
		tb.Fatal(err)
	}
	return st, m.Requests()
}

// runHeavyLisp runs the same mission in PTC-Lisp mode: one exploratory
// turn (the feedback shows a truncated preview), then the program that
// filters, sums and returns.
func runHeavyLisp(tb testing.TB) (*messages.Step, []llm.Request) {
	a := mustNew(tb, Spec{Prompt: heavyPrompt, Signature: heavySig, Tools: map[string]Tool{"list_orders": heavyTool()}})
	m := llmtest.New(
		llmtest.Code(`(def orders (tool/list_orders {}))
(take 2 orders)`),
		llmtest.Code(`(let [p (filter #(= (:status %) "pending") orders)]
  (return {:pending (count p) :total (reduce + (map :total p))}))`))
	st, err := a.Run(bg, RunOptions{Model: m})
	if err != nil {
		tb.Fatal(err)
	}
	return st, m.Requests()
}

// TestPromptTokensTextVsLisp measures the prompt size of the same
// data-heavy mission in text tool-calling mode and in PTC-Lisp mode (the
// figures are in docs/textmode.md; run with -v to see them).
func TestPromptTokensTextVsLisp(t *testing.T) {
	n, _ := heavyWant()
	tst, treqs := runHeavyText(t)
	lst, lreqs := runHeavyLisp(t)
	for _, st := range []*messages.Step{tst, lst} {
		if st.Return.(map[string]any)["pending"] != n {
			t.Fatalf("%s mode answered %v, want %d pending", st.Mode, st.Return, n)
		}
	}
	tb, lb := promptBytes(treqs), promptBytes(lreqs)
	t.Logf("text mode:     %d requests, %d prompt bytes, ~%d tokens (last request %d bytes)", len(treqs), tb, tb/4, len(llmtest.Transcript(treqs[len(treqs)-1])))
	t.Logf("PTC-Lisp mode: %d requests, %d prompt bytes, ~%d tokens (last request %d bytes)", len(lreqs), lb, lb/4, len(llmtest.Transcript(lreqs[len(lreqs)-1])))
	t.Logf("ratio text/lisp: %.1fx", float64(tb)/float64(lb))
	// The tool result (every record) travels to the model in text mode;
	// PTC-Lisp keeps it in the sandbox and shows a preview.
	if tb < 3*lb {
		t.Fatalf("text mode prompt %d bytes is not well above PTC-Lisp's %d", tb, lb)
	}
	// and the records really are in the text-mode prompt
	if last := llmtest.Transcript(treqs[1]); len(last) < heavyRecords*60 {
		t.Fatalf("text-mode second request only %d bytes", len(last))
	}
}

// BenchmarkHeavyMission reports the prompt tokens estimated as bytes/4 (the
// tokenizer lives in internal/ctxbench, off the agent's path) of the
// data-heavy mission per mode, and the loop's own cost with a zero-latency
// scripted model.
func BenchmarkHeavyMission(b *testing.B) {
	for _, mode := range []struct {
		name string
		run  func(testing.TB) (*messages.Step, []llm.Request)
	}{{"text", runHeavyText}, {"lisp", runHeavyLisp}} {
		b.Run(mode.name, func(b *testing.B) {
			b.ReportAllocs()
			var reqs []llm.Request
			for b.Loop() {
				_, reqs = mode.run(b)
			}
			b.ReportMetric(float64(promptBytes(reqs))/4, "prompt-tokens-est")
		})
	}
}

// BenchmarkMustacheRender renders the batch prompt over 100 records.
func BenchmarkMustacheRender(b *testing.B) {
	tm, err := parseMustache("Emails:\n{{#emails}}\n- ID {{id}}: \"{{subject}}\" from {{from}}\n{{/emails}}\n")
	if err != nil {
		b.Fatal(err)
	}
	emails := make([]any, 100)
	for i := range emails {
		emails[i] = map[string]any{"id": int64(i), "subject": "Subject line", "from": "someone@example.com"}
	}
	data := map[string]any{"emails": emails}
	b.ReportAllocs()
	for b.Loop() {
		_ = tm.render(data)
	}
}

// BenchmarkExtractJSON extracts a fenced JSON answer from prose.
func BenchmarkExtractJSON(b *testing.B) {
	reply := "Here is the classification:\n```json\n[" +
		`{"id": 1, "urgency": "high", "reason": "outage"}, {"id": 2, "urgency": "low", "reason": "social"}` +
		"]\n```\nLet me know if you need more."
	b.ReportAllocs()
	for b.Loop() {
		if _, err := extractJSON(reply, false); err != nil {
			b.Fatal(err)
		}
	}
}
