package agent

import (
	"context"
	"strings"
	"testing"

	"github.com/ptcfleet/ptc/pkg/agent/llm/llmtest"
)

// Enums, unions and refinements reach the model in the tool lines and the
// expected output, and validate tool arguments and the return with
// errors the model reads and fixes.
func TestRichSignaturesInTheLoop(t *testing.T) {
	tickets := FuncSig(`(status "open" | "closed", limit :int(min 1, max 50)) -> [{id :int, priority :int | :string}]`,
		func(_ context.Context, args map[string]any) (any, error) {
			return []any{map[string]any{"id": int64(1), "priority": "p1"}, map[string]any{"id": int64(2), "priority": int64(3)}}, nil
		})
	a := mustNew(t, Spec{Prompt: "Rate the open tickets.",
		Signature: `{level "low" | "medium" | "high", score :int(min 0, max 100)}`,
		Tools:     map[string]Tool{"tickets": tickets}})
	m := llmtest.NewT(t,
		llmtest.Code(`(tool/tickets {:status "pending" :limit 100})`).
			Expect(expectUser([]string{
				`- tickets(status "open" | "closed", limit :int(min 1, max 50)) -> [{id :int, priority :int | :string}]`,
				`Return a value of type {level "low" | "medium" | "high", score :int(min 0, max 100)}.`})),
		llmtest.Code(`(let [ts (tool/tickets {:status "open" :limit "2"})] (return {:level "urgent" :score (* 100 (count ts))}))`).
			Expect(llmtest.LastUserContains(`status: expected one of "open", "closed", got string "pending"`,
				"limit: expected integer between 1 and 50, got integer 100")),
		llmtest.Code(`(return {:level "high" :score 99})`).
			Expect(llmtest.LastUserContains(`level: expected one of "low", "medium", "high", got string "urgent"`,
				"score: expected integer between 0 and 100, got integer 200")),
	)
	st, err := a.Run(bg, RunOptions{Model: m})
	if err != nil {
		t.Fatal(err)
	}
	if r := st.Return.(map[string]any); r["level"] != "high" || r["score"] != int64(99) {
		t.Fatalf("return %v", st.Return)
	}
	// the string "2" was coerced for the refined :int, with a warning
	if w := st.Trace[1].Feedback; !strings.Contains(w, `tickets: limit: coerced string "2" to integer`) {
		t.Errorf("feedback %q", w)
	}
}

// A native tool's parameters carry the enum, the union and the bounds as
// JSON Schema (text mode).
func TestRichSignaturesNativeToolSchema(t *testing.T) {
	tickets := FuncSig(`(status "open" | "closed", limit :int(min 1, max 50)?, owner :int | :string) -> :any`,
		func(context.Context, map[string]any) (any, error) { return 1, nil })
	a := mustText(t, Spec{Prompt: "Count the open tickets.", Signature: "() -> {n :int}", Tools: map[string]Tool{"tickets": tickets}})
	_, err, m := run(t, a, RunOptions{}, llmtest.Text(`{"n": 1}`))
	if err != nil {
		t.Fatal(err)
	}
	req := m.Requests()[0]
	want := `{"properties":{"limit":{"maximum":50,"minimum":1,"type":["integer","null"]},"owner":{"anyOf":[{"type":"integer"},{"type":"string"}]},"status":{"enum":["open","closed"],"type":"string"}},"required":["status","owner"],"type":"object"}`
	if got := jsonText(req.Tools[0].InputSchema); got != want {
		t.Errorf("schema = %s\nwant     %s", got, want)
	}
	if !strings.Contains(req.Tools[0].Description, "Returns: :any") {
		t.Errorf("description %q", req.Tools[0].Description)
	}
}
